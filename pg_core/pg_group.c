/*
 * pg_group.c - groups: creation with an agreed context id, split, dup, rank translation.
 *
 * Context ids: every process keeps the lowest even id none of its groups uses (next_ctx;
 * the odd ids are the non-blocking creations', further down). A new
 * group's id is the maximum of next_ctx over the processes that take part in creating it
 * (one allreduce), so it is unused by every one of them; groups with disjoint members may
 * share an id, which is harmless because no process sees both. MPICH agrees on ids the
 * same way, with a bit mask instead of a counter. The same allreduce agrees the group's
 * channel for collectives in shared memory (pg_coll_shm.c): the lowest that none of the
 * creators holds (pg_agree_ids).
 *
 * Under MPI_THREAD_MULTIPLE two threads may create groups from different parents at once,
 * and both agreements can come out with the same id or channel (each proposed the same
 * next_ctx). So each process then claims what was agreed, under the world lock, failing
 * if a concurrent creation claimed it first, and a second allreduce tells whether every
 * member's claim held; if not, the winners give the channel back and all try again with
 * higher ids. One thread cannot race itself: without MPI_THREAD_MULTIPLE the claim always
 * holds and the second allreduce is skipped: non-blocking creations, the one thing that
 * runs beside it, take other ids and then no channel (further down).
 */
#include "config.h"
#include "pg_device.h"

#include "pg_coll_hier.h"
#include "pg_group_sub.h"
#include "pg_internal.h"
#include "pg_sched.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <inttypes.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

int pg_group_new(uint64_t ctx, int chan, int rank, int size, const int *world_ranks,
                 struct pg_group **out)
{
    struct pg_group *g = calloc(1, sizeof(*g));
    int *ranks = malloc(sizeof(int) * (size_t)(size > 0 ? size : 1));
    int rc;

    if (!g || !ranks) {
        free(g);
        free(ranks);
        return mps_error(PGC_ERR_NOMEM, "no memory for a group of %d", size);
    }
    memcpy(ranks, world_ranks, sizeof(int) * (size_t)size);
    g->ctx = ctx;
    g->rank = rank;
    g->size = size;
    g->ranks = ranks;
    g->refs = 1;
    g->flight = pg_flight_new(g);
    *out = g;
    PG_LOCK(); /* the channel tables and the roll call's list are the world's */
    pg_roll_add(g);
    rc = pg_shm_attach(g, chan);
    PG_UNLOCK();
    if (rc != PGC_OK) {
        pg_group_release(g);
        *out = NULL;
    }
    return rc;
}

/* References come and go in any thread (a pgc work made in one and freed in another), with
 * or without the world lock: the count is atomic. */
void pg_group_retain(struct pg_group *g)
{
    __atomic_add_fetch(&g->refs, 1, __ATOMIC_RELAXED);
}

void pg_group_release(struct pg_group *g)
{
    if (!g || __atomic_sub_fetch(&g->refs, 1, __ATOMIC_ACQ_REL) != 0) {
        return;
    }
    /* Giving back the group's shared-memory channel and device state changes the world's
     * tables: under the lock (recursive, so a caller may already hold it). */
    PG_LOCK();
    pg_roll_remove(g);
    pg_coll_poison_forget(pg_ctx_coll(g));
    pg_dev_group_free(g);
    pg_shm_detach(g);
    pg_hier_free(g);
    PG_UNLOCK();
    pg_flight_free(g->flight);
    free(g->ranks);
    free(g->local_of);
    free(g);
}

int pg_group_rank_of(struct pg_group *g, int world_rank)
{
    for (int i = 0; i < g->size; i++) {
        if (g->ranks[i] == world_rank) {
            return i;
        }
    }
    return -1;
}

int pg_cma_pid(const struct pg_group *g, int r)
{
    if (!pg_w.fab || r < 0 || r >= g->size) {
        return 0;
    }
    return fab_cma_pid(pg_w.fab, g->ranks[r]);
}

/* The agreement's element: the largest next_ctx, and the channels anyone holds. */
struct ids {
    uint64_t ctx;
    uint64_t busy;
};

static void ids_combine(const void *in, void *inout, size_t count, void *unused)
{
    const struct ids *a = in;
    struct ids *b = inout;

    (void)unused;
    for (size_t i = 0; i < count; i++) {
        b[i].ctx = a[i].ctx > b[i].ctx ? a[i].ctx : b[i].ctx;
        b[i].busy |= a[i].busy;
    }
}

/* Claims ctx and chan in this process unless another creation got there first. */
static bool ids_claim(uint64_t ctx, int chan)
{
    bool ok;

    PG_LOCK();
    ok = ctx >= pg_w.next_ctx && pg_shm_claim(chan);
    if (ok) {
        pg_w.next_ctx = ctx + 2; /* even ids only (see below); never reused, so a failed
                                  * round only skips one */
    }
    PG_UNLOCK();
    return ok;
}

void pg_ids_release(int chan)
{
    PG_LOCK();
    pg_shm_unclaim(chan);
    PG_UNLOCK();
}

/* One round: agree on the largest proposal and the lowest free channel, and claim them;
 * *held says whether every member's claim held. */
static int agree_round(struct pg_group *over, const struct pg_op_spec *op, uint64_t *ctx,
                       int *chan, bool *held)
{
    struct ids mine, all, fails;
    bool ok;
    int rc;

    PG_LOCK();
    mine = (struct ids){pg_w.next_ctx, pg_shm_busy()};
    PG_UNLOCK();
    rc = pg_allreduce(over, &mine, &all, 1, op);
    if (rc == PGC_OK && all.ctx >= PG_CTX_LIMIT) {
        return mps_error(PGC_ERR_NOMEM, "no context id left for a new group (%llu made)",
                         (unsigned long long)all.ctx);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    *ctx = all.ctx;
    *chan = pg_shm_pick((uint32_t)all.busy);
    ok = ids_claim(*ctx, *chan);
    *held = ok;
    if (pg_w.mt) { /* busy: or'ed, so any member's failed claim shows */
        mine = (struct ids){0, ok ? 0 : 1};
        rc = pg_allreduce(over, &mine, &fails, 1, op);
        *held = rc == PGC_OK && fails.busy == 0;
    }
    if (ok && !*held) {
        pg_ids_release(*chan);
    }
    return rc;
}

/*
 * Non-blocking creation (MPI_Comm_idup). Several may be in flight in a process at once, on
 * different parents, started in different orders on different ranks and completing in any
 * order, while blocking creations run too; none may wait for another, because a legal
 * program may make one's completion the condition for another's start on some rank (rank
 * a waits for dup A before it starts dup B; rank b starts B and then A). So:
 *
 * - Separate spaces. Blocking creations take even ids (next_ctx), non-blocking ones odd
 *   ids (next_nb_ctx). A blocking creation claims without a second round (pg_agree_ids),
 *   which stays correct because nothing a non-blocking one claims during its allreduce
 *   can be what it agreed: not its id, and no channel either, as a non-blocking creation
 *   does not claim one while a blocking one of its process agrees (blocking_agreeing).
 *   It then goes without (the new group runs small collectives through the rings), as
 *   it does when any member's claim of the channel failed: a channel is never retried
 *   for, so it cannot make anyone wait.
 * - Its own group. The rounds run on a group of the parent's members whose id is derived
 *   from the parent's id and this creation's sequence number on it (pg_group_temp_ctx),
 *   so a round started later from the progress engine never takes a sequence number of
 *   the parent that a user's collective on it takes on another rank.
 * - Claim and check. Round 0 agrees the largest next_nb_ctx (max); each member claims the
 *   block [v, v + 2n) unless a claim since its proposal overlaps it (nb_claim says why
 *   nothing else can; ids are never reused), with the lowest channel free on all. Round
 *   k+1 carries, beside a new proposal, whether any member's claim of round k failed (or).
 *   None failed: the block is the group's. Else the next block is the new proposals'
 *   maximum plus an offset hashed from (the group's id, the round): two creations over
 *   common members that keep meeting on the same value (each claimed first on a different
 *   member) are pulled apart, since their offsets differ, and blocks that do not overlap
 *   never fail each other; a retry fails again only by chance (1 in 32 or so a round).
 * - No waiting. A round waits only for the members of its own group, who all started the
 *   creation (the MPI contract), and each member's progress engine runs it whatever else
 *   that member waits in; so every round completes, and a creation ends at the first
 *   round whose claims all held. Two rounds without contention.
 */
/* What the caller holds (pg.h): the result, and the groups to copy once it succeeded. */
struct pg_idup {
    struct pg_group *like[PG_IDUP_MAX]; /* references, handed over at success only */
    int n;
    uint64_t ctx; /* the first id of the agreed block */
    int chan;     /* like[0]'s copy's channel, claimed until made, or -1 */
    int rc;
};

/* The agreement's state: scratch of the parent's schedule, so that a wait that gives the
 * request up (a timeout) leaves the schedule nothing freed to run on. */
struct idup_run {
    struct pg_idup *d;    /* the caller's; written only while the request is attached */
    struct pg_sched *s;   /* the parent's schedule */
    struct pg_group *like[PG_IDUP_MAX]; /* references until handed to d */
    int n;                /* how many groups (ids); the agreement runs over like[0] */
    struct pg_group *tmp; /* the agreement's own group, made at its first poll */
    struct ids mine, all; /* busy: channels, and the NB_*_FAILED of the round before */
    struct pg_op_spec op;
    struct pg_req sub;    /* the round in flight on tmp */
    uint64_t ctx;         /* the block this rank claimed last round, 0 for none */
    uint64_t since;       /* nb_claims.count when this round's proposal was read */
    int chan;             /* the channel it claimed with it, -1 for none */
    int round;
};

/* A round's element carries, above the channel bits of busy, whether some member's claim
 * of the round before failed: its ids (the round is tried again) or only its channel (the
 * group goes without one). */
#define NB_ID_FAILED (UINT64_C(1) << 63)
#define NB_CHAN_FAILED (UINT64_C(1) << 62)

/* How many blocking creations of this process are between reading their proposal and
 * claiming it (world lock): their claims are not checked by a second round, so no
 * non-blocking one may take a channel meanwhile (ids cannot clash: they are odd). */
static int blocking_agreeing;

/* The last NB_KEEP blocks of odd ids claimed in this process (world lock). A round's block
 * v is at or above the proposal this process made for it (the largest was agreed), and
 * every id claimed before that proposal is below it; so the block is free here unless a
 * claim since the proposal overlaps it. Only an overlap fails a claim, not a higher block
 * claimed meanwhile: two creations that each claim above the other's last block would
 * otherwise leapfrog round after round. */
#define NB_KEEP 64
static struct {
    uint64_t count; /* claims ever made */
    uint64_t first[NB_KEEP], end[NB_KEEP];
} nb_claims;

static bool nb_overlaps(uint64_t since, uint64_t v, uint64_t end)
{
    if (nb_claims.count - since > NB_KEEP) {
        return true; /* forgotten: assume the worst, the round is tried again */
    }
    for (uint64_t i = since; i < nb_claims.count; i++) {
        uint64_t k = i % NB_KEEP;
        if (v < nb_claims.end[k] && nb_claims.first[k] < end) {
            return true;
        }
    }
    return false;
}

/* Claims the n odd ids from v in this process unless a claim since the round's proposal
 * overlaps them, and with them *chan (>= 0) if it is free and no blocking creation is
 * agreeing (else *chan = -1). Returns the NB_*_FAILED bits of what failed. */
static uint64_t nb_claim(uint64_t v, int n, uint64_t since, int *chan)
{
    uint64_t end = v + 2 * (uint64_t)n, fails = 0;

    PG_LOCK();
    if (!nb_overlaps(since, v, end)) {
        uint64_t k = nb_claims.count++ % NB_KEEP;
        nb_claims.first[k] = v;
        nb_claims.end[k] = end;
        pg_w.next_nb_ctx = end > pg_w.next_nb_ctx ? end : pg_w.next_nb_ctx;
    } else {
        fails = NB_ID_FAILED;
    }
    if (*chan >= 0 && (fails || blocking_agreeing > 0 || !pg_shm_claim(*chan))) {
        fails |= NB_CHAN_FAILED;
        *chan = -1;
    }
    PG_UNLOCK();
    return fails;
}

/* Starts the next round: my proposal, my channels, and what of my last claim failed. */
static int idup_round_start(struct idup_run *u, uint64_t fails)
{
    PG_LOCK();
    u->mine = (struct ids){pg_w.next_nb_ctx, pg_shm_busy() | fails};
    u->since = nb_claims.count;
    PG_UNLOCK();
    pg_req_no_callback(&u->sub);
    return pg_iallreduce_impl(u->tmp, &u->mine, &u->all, 1, &u->op, &u->sub);
}

/* The offset of round k's block (even, so ids stay odd): 0 in round 0, else 0-62 from a
 * hash every member computes alike. */
static uint64_t idup_offset(const struct idup_run *u)
{
    uint64_t h = (u->tmp->ctx ^ (uint64_t)u->round * UINT64_C(0xbf58476d1ce4e5b9)) *
                 UINT64_C(0x9e3779b97f4a7c15);

    return u->round == 0 ? 0 : 2 * (h >> 59);
}

/* A round ended: done if the last ids all held (with the channel if every member got it),
 * else claim the next block. */
static int idup_round_end(struct idup_run *u, bool *done)
{
    uint64_t v = u->all.ctx + idup_offset(u), fails;

    if (u->round > 0 && !(u->all.busy & NB_ID_FAILED)) {
        if (u->all.busy & NB_CHAN_FAILED) {
            pg_ids_release(u->chan);
            u->chan = -1;
        }
        *done = true;
        return PGC_OK;
    }
    pg_ids_release(u->chan); /* this round's channel, if any, goes back */
    if (v + 2 * (uint64_t)u->n > PG_CTX_LIMIT) {
        u->chan = -1;
        return mps_error(PGC_ERR_NOMEM, "no context id left for a new group (%llu made)",
                         (unsigned long long)v);
    }
    u->chan = pg_shm_pick((uint32_t)u->all.busy);
    fails = nb_claim(v, u->n, u->since, &u->chan);
    u->ctx = fails & NB_ID_FAILED ? 0 : v;
    if (fails & NB_ID_FAILED) {
        MPS_DEBUG("non-blocking creation: context %" PRIu64 " went to a concurrent one; "
                  "round %d tries again", v, u->round + 1);
    }
    u->round++;
    return idup_round_start(u, fails);
}

/* The agreement's own group (see above), and its first round. */
static int idup_begin(struct idup_run *u)
{
    struct pg_group *p = u->like[0];
    uint32_t seq = (uint32_t)u->s->tag >> PG_COLL_SIG_BITS;
    int rc = pg_group_new(pg_group_temp_ctx(p, PG_IDUP_TAG - (int)seq, p->ranks, p->size), -1,
                          p->rank, p->size, p->ranks, &u->tmp);

    return rc == PGC_OK ? idup_round_start(u, 0) : rc;
}

/* The end, either way: the result and the references go to the caller's d if its request
 * is still attached; else (or on an error) the references are given back here. */
static void idup_settle(struct idup_run *u, int rc)
{
    bool attached = u->s->req != NULL;

    if (attached) {
        u->d->rc = rc;
        u->d->ctx = u->ctx;
    }
    if (attached && rc == PGC_OK) {
        u->d->chan = u->chan;
    } else {
        pg_ids_release(u->chan);
    }
    for (int i = 0; i < u->n; i++) {
        if (attached && rc == PGC_OK) {
            u->d->like[i] = u->like[i];
        } else {
            pg_group_release(u->like[i]);
        }
    }
    if (attached && rc == PGC_OK) {
        u->d->n = u->n;
    }
    pg_group_release(u->tmp);
}

/* The parent's schedule's one step: runs the rounds (world lock held). */
static int idup_poll(void *arg, bool *done)
{
    struct idup_run *u = arg;
    int rc = PGC_OK;

    *done = false;
    if (!u->tmp) {
        rc = idup_begin(u);
    } else if (pg_req_is_done(&u->sub)) {
        rc = u->sub.status;
        if (rc == PGC_OK) {
            rc = idup_round_end(u, done);
        }
    }
    if (rc != PGC_OK) {
        *done = true;
    }
    if (*done) {
        idup_settle(u, rc);
    }
    return rc;
}

/* What a timed-out wait for the dup waits for: the round in flight (the parent's ranks). */
static bool idup_desc(void *arg, struct pg_awaited *a)
{
    struct idup_run *u = arg;

    return u->tmp && !pg_req_is_done(&u->sub) && pg_sched_awaited(&u->sub, a);
}

int pg_group_idup_start(struct pg_group *const *like, int n, struct pg_req *req,
                        struct pg_idup **out)
{
    struct pg_idup *d = n > 0 && n <= PG_IDUP_MAX ? calloc(1, sizeof(*d)) : NULL;
    struct pg_op_spec op = {.dt = PG_BYTE, .elem_size = sizeof(struct ids),
                            .user_fn = ids_combine, .commutative = false};
    struct pg_sched *s = d ? pg_sched_new(like[0], &op, req) : NULL;
    struct idup_run *u = s ? pg_sched_alloc(s, sizeof(*u)) : NULL;
    int rc;

    *out = NULL;
    if (!u) {
        if (s) {
            pg_sched_discard(s);
        }
        free(d);
        return mps_error(PGC_ERR_NOMEM, "no memory for a non-blocking dup of %d groups", n);
    }
    /* Not commutative: a node-aware allreduce would make tmp's sub-groups, blocking. */
    *u = (struct idup_run){.d = d, .s = s, .n = n, .op = op, .chan = -1};
    d->chan = -1;
    for (int i = 0; i < n; i++) {
        u->like[i] = like[i];
        pg_group_retain(like[i]);
    }
    pg_sched_sig(s, PG_COLL_ALLREDUCE, &op, -1);
    pg_sched_algo(s, "context id agreement");
    pg_sched_poll(s, idup_poll, u);
    pg_sched_poll_desc(s, idup_desc);
    rc = pg_sched_launch(s); /* fails only before it ran: the references are still u's */
    if (rc != PGC_OK) {
        for (int i = 0; i < n; i++) {
            pg_group_release(like[i]);
        }
        free(d);
        return rc;
    }
    *out = d;
    return PGC_OK;
}

int pg_group_idup_end(struct pg_idup *d, struct pg_group **out)
{
    int rc = d->rc;

    for (int i = 0; i < PG_IDUP_MAX; i++) {
        out[i] = NULL;
    }
    for (int i = 0; rc == PGC_OK && i < d->n; i++) {
        struct pg_group *p = d->like[i];
        rc = pg_group_new(d->ctx + 2 * (uint64_t)i, i == 0 ? d->chan : -1, p->rank, p->size,
                          p->ranks, &out[i]);
    }
    if (d->n > 0) {
        pg_ids_release(d->chan); /* attached by now, or never to be */
    }
    for (int i = 0; i < d->n; i++) {
        if (rc != PGC_OK) {
            pg_group_release(out[i]);
            out[i] = NULL;
        }
        pg_group_release(d->like[i]);
    }
    free(d);
    return rc;
}

int pg_agree_ids(struct pg_group *over, uint64_t *ctx, int *chan)
{
    struct pg_op_spec op = {.dt = PG_BYTE, .elem_size = sizeof(struct ids),
                            .user_fn = ids_combine, .commutative = true};
    bool held = false;
    int rc = pg_hier_prepare(over);

    /* A hierarchical allreduce creates over's sub-groups at its first call: done here,
     * before the proposal is read, they cannot take the ids being agreed. */
    if (rc != PGC_OK) {
        *chan = -1;
        return rc;
    }
    /* Each failed round raises every member's next_ctx past the contested id, and a
     * creation that lost a claim to another yields before trying again. */
    PG_LOCK();
    blocking_agreeing++;
    PG_UNLOCK();
    while ((rc = agree_round(over, &op, ctx, chan, &held)) == PGC_OK && !held) {
        MPS_DEBUG("group creation: context %" PRIu64 " or channel %d went to a concurrent "
                  "creation; trying again", *ctx, *chan);
        sched_yield();
    }
    PG_LOCK();
    blocking_agreeing--;
    PG_UNLOCK();
    if (rc != PGC_OK) {
        *chan = -1; /* nothing claimed: the caller's pg_ids_release does nothing */
    }
    return rc;
}

int pg_group_create(struct pg_group *parent, const int *parent_ranks, int n,
                    struct pg_group **out)
{
    int *world = NULL;
    int me = -1;
    uint64_t ctx;
    int chan, rc;

    *out = NULL;
    rc = pg_agree_ids(parent, &ctx, &chan);
    if (rc != PGC_OK) {
        return rc;
    }
    world = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    if (!world) {
        rc = mps_error(PGC_ERR_NOMEM, "no memory for a group of %d", n);
        goto fail;
    }
    for (int i = 0; i < n; i++) {
        if (parent_ranks[i] < 0 || parent_ranks[i] >= parent->size) {
            rc = mps_error(PGC_ERR_INVALID_RANK, "rank %d outside the parent group of %d",
                           parent_ranks[i], parent->size);
            goto fail;
        }
        world[i] = parent->ranks[parent_ranks[i]];
        if (parent_ranks[i] == parent->rank) {
            me = i;
        }
    }
    if (me >= 0) {
        rc = pg_group_new(ctx, chan, me, n, world, out);
    }
fail:
    pg_ids_release(chan);
    free(world);
    return pg_hier_created(rc, out);
}

int pg_group_dup(struct pg_group *parent, struct pg_group **out)
{
    uint64_t ctx;
    int chan;
    int rc = pg_agree_ids(parent, &ctx, &chan);

    if (rc == PGC_OK) {
        rc = pg_group_new(ctx, chan, parent->rank, parent->size, parent->ranks, out);
    }
    pg_ids_release(chan);
    return pg_hier_created(rc, out);
}

struct split_entry {
    int color, key, rank;
};

static int split_cmp(const void *a, const void *b)
{
    const struct split_entry *x = a, *y = b;

    if (x->color != y->color) {
        return x->color < y->color ? -1 : 1;
    }
    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Members of my color, ordered by (key, parent rank): their world ranks and my position. */
static int split_members(struct pg_group *parent, struct split_entry *all, int color, int **world,
                         int *n, int *me)
{
    int k = 0;

    qsort(all, (size_t)parent->size, sizeof(*all), split_cmp);
    *world = malloc(sizeof(int) * (size_t)parent->size);
    if (!*world) {
        return mps_error(PGC_ERR_NOMEM, "no memory to split a group of %d", parent->size);
    }
    for (int i = 0; i < parent->size; i++) {
        if (all[i].color == color) {
            if (all[i].rank == parent->rank) {
                *me = k;
            }
            (*world)[k++] = parent->ranks[all[i].rank];
        }
    }
    *n = k;
    return PGC_OK;
}

int pg_group_split(struct pg_group *parent, int color, int key, struct pg_group **out)
{
    struct split_entry mine = {color, key, parent->rank};
    struct split_entry *all = malloc(sizeof(*all) * (size_t)parent->size);
    int *world = NULL;
    int n = 0, me = -1, chan = -1;
    uint64_t ctx;
    int rc;

    *out = NULL;
    if (!all) {
        return mps_error(PGC_ERR_NOMEM, "no memory to split a group of %d", parent->size);
    }
    rc = pg_agree_ids(parent, &ctx, &chan);
    if (rc == PGC_OK) {
        rc = pg_allgather(parent, &mine, all, sizeof(mine));
    }
    /* A negative color (MPI_UNDEFINED) takes part but joins no group. */
    if (rc == PGC_OK && color >= 0) {
        rc = split_members(parent, all, color, &world, &n, &me);
    }
    if (rc == PGC_OK && color >= 0) {
        rc = pg_group_new(ctx, chan, me, n, world, out);
    }
    pg_ids_release(chan);
    free(all);
    free(world);
    return pg_hier_created(rc, out);
}
