/*
 * pg_coll_roll.c - the roll call: how ranks that called different collectives find out when
 * none of them ever reads the other's messages or slot.
 *
 * Signatures (pg_coll_sig.c) catch a mismatch where a rank reads the other collective's
 * message or shared-memory slot. Some mismatches never get that far: collectives that take
 * different transports (a shared-memory allreduce against a broadcast sent as messages),
 * different trees (a reduce to root 0 against one to root 1: the messages go to ranks that
 * expect none), or node-aware collectives of different kinds, whose steps on the sub-groups
 * fall out of step. Each rank then waits for a message or a slot that never comes.
 *
 * So a wait of a collective that lasts (PG_ROLL_AFTER) asks the ranks it still
 * waits for "which collective of this group are you in": a control message on the group's
 * collective context, with the sequence number and signature of the one it waits in
 * (PG_COLL_ROLL, pg_p2p.c). The peer answers from its progress engine, out of what every
 * group keeps anyway: its sequence number, and the signatures of its last PG_COLL_KEEP
 * collectives, stored as each one starts (pg_coll_tag: the one store on the fast path).
 *  - Not there yet, or in the same collective: nothing is wrong (a legal program that is
 *    merely slow), and no answer is sent; the waiter asks again every ROLL_EVERY.
 *  - There, or past it, with another signature: the peer has found a mismatch, and does what
 *    a rank that reads a clashing message does: it records the abort and tells every member
 *    (abort notices), so every rank fails at once, naming both ranks and both calls.
 *  - It aborted that collective already: it tells the waiter (PG_COLL_ABORT_ONE), which
 *    passes the notice on to its group. The same where the peer has freed the group since:
 *    its last signatures stay here a while (RETIRED groups), so a broadcast root that
 *    returned and freed its communicator still answers for it.
 * The waits look at the abort records of their collective (pg_roll_look) besides their own
 * receives, so waits that post no receive (shared memory, a schedule between steps) fail at
 * once too. A node-aware collective's step asks about its parent's collective as well (the
 * sub-groups' sequences fall out of step when the parent's ranks run different
 * collectives), and fails on the parent's abort.
 *
 * A NCCL collective's wait (pg_device.c) cannot tell whom it waits for: NCCL's kernels just
 * wait. Its roll call asks every other member instead how many of the group's device
 * collectives it has started (PG_COLL_DEV_ASK, answered by every rank that runs progress);
 * a timeout's message then names the ranks that had not started it, or did not answer.
 *
 * Nothing here runs in a wait that ends within PG_ROLL_AFTER, and the only cost on the fast
 * path is the signature store at a collective's start.
 */
#include "config.h"

#include "pg_device.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <string.h>

#define SEQ_MASK ((1u << PG_COLL_SEQ_BITS) - 1)
/* Freed groups whose last signatures this rank keeps for the roll call. */
#define RETIRED 8

struct retired {
    uint64_t ctx;  /* the group's collective context; 0: a free entry */
    uint32_t next; /* its coll_seq when freed */
    int rank;      /* this rank's in it */
    uint16_t sigs[PG_COLL_KEEP];
};

/* Under the world lock. */
static struct pg_group *live;
static struct retired retired[RETIRED];
static unsigned nretired;

void pg_roll_add(struct pg_group *g)
{
    g->roll_next = live;
    live = g;
}

void pg_roll_remove(struct pg_group *g)
{
    struct pg_group **p = &live;
    struct retired *r = &retired[nretired++ % RETIRED];

    while (*p && *p != g) {
        p = &(*p)->roll_next;
    }
    if (*p) {
        *p = g->roll_next;
    }
    *r = (struct retired){pg_ctx_coll(g), g->coll_seq, g->rank, {0}};
    memcpy(r->sigs, g->coll_sigs, sizeof(r->sigs));
}

struct pg_group *pg_roll_group(uint64_t ctx)
{
    struct pg_group *g = live;

    while (g && pg_ctx_coll(g) != ctx) {
        g = g->roll_next;
    }
    return g;
}

bool pg_roll_freed(uint64_t ctx)
{
    for (int i = 0; i < RETIRED; i++) {
        if (retired[i].ctx == ctx) {
            return !pg_roll_group(ctx);
        }
    }
    return false;
}

bool pg_roll_entered(uint64_t ctx, uint32_t seq, uint32_t *sig, int *rank)
{
    struct pg_group *g = pg_roll_group(ctx);
    const uint16_t *sigs = g ? g->coll_sigs : NULL;
    uint32_t next = g ? g->coll_seq : 0;

    for (int i = 0; !g && i < RETIRED; i++) {
        if (retired[i].ctx == ctx) {
            sigs = retired[i].sigs;
            next = retired[i].next;
            *rank = retired[i].rank;
        }
    }
    if (g) {
        *rank = g->rank;
    }
    /* How far seq lies behind the last collective entered here: past PG_COLL_KEEP (or not
     * entered yet, which wraps to far behind) its signature is not known. */
    if (!sigs || next == 0 || ((next - 1 - seq) & SEQ_MASK) >= PG_COLL_KEEP) {
        return false;
    }
    *sig = sigs[seq & (PG_COLL_KEEP - 1)] & (PG_COLL_POISON - 1); /* stored as taken */
    return true;
}

/* Asks the world ranks world[0..n) about collective seq of g, if this rank still knows its
 * own signature there (it may have started PG_COLL_KEEP non-blocking ones since). */
static void ask(struct pg_group *g, uint32_t seq, const int *world, int n)
{
    uint32_t sig;
    int rank;

    if (n > 0 && pg_roll_entered(pg_ctx_coll(g), seq, &sig, &rank)) {
        pg_roll_ask(g, seq, sig, world, n);
    }
}

int pg_roll_look(const struct pg_awaited *a, bool want_ask)
{
    struct pg_group *g = a->g, *up = g ? g->parent : NULL;
    /* A node-aware step runs inside its parent's last collective. */
    uint32_t up_seq = up ? (up->coll_seq - 1) & SEQ_MASK : 0;
    bool own = a->seq != PG_ROLL_NO_SEQ;
    const struct pg_abort_note *n;
    struct pg_abort_note note;
    int world[PG_AWAITED_SHOWN + 1], nw = 0;

    if (!g) {
        return PGC_OK;
    }
    if (a->device) {
        /* A NCCL collective: nothing here can abort it, its account names the ranks. */
        if (want_ask) {
            pg_dev_roll_ask(g, a->seq);
        }
        return PGC_OK;
    }
    /* Asked even where the answer is known here: a wait that cannot end early (a rendezvous
     * send) needs its receiver to hear of the abort and take the transfer. */
    for (int i = 0; want_ask && a->ctx == g->ctx && i < a->nranks && i < PG_AWAITED_SHOWN + 1;
         i++) {
        if (a->ranks[i] >= 0 && a->ranks[i] < g->size && a->ranks[i] != g->rank) {
            world[nw++] = g->ranks[a->ranks[i]];
        }
    }
    if (own) {
        ask(g, a->seq, world, nw);
    }
    if (up && up->coll_seq) {
        ask(up, up_seq, world, nw);
    }
    n = own ? pg_coll_abort_of(pg_ctx_coll(g), a->seq) : NULL;
    if (n || !up || !up->coll_seq || !(n = pg_coll_abort_of(pg_ctx_coll(up), up_seq))) {
        return n ? pg_coll_aborted(n) : PGC_OK;
    }
    /* The parent's collective was aborted: so is this step, here, so that its messages that
     * come (a peer's rendezvous, which would wait for a receive never posted) are taken. */
    note = *n;
    if (own) {
        pg_coll_abort_local(pg_ctx_coll(g), a->seq, &note);
    }
    return pg_coll_aborted(&note);
}
