/*
 * pg_coll_shm.c - flat shared-memory collectives: allreduce, broadcast and barrier of at
 * most PG_SHM_MAX bytes on a group whose members all share this node.
 *
 * Cost (n ranks, m bytes, one round): every rank writes its m bytes once, into a slot of
 * its own shared segment, and reads the slots it needs straight from the others' segments.
 *   allreduce: α + (n-1)·m·β + (n-1)·m·γ  (every rank reads and reduces all n slots)
 *   bcast:     α + m·β                    (the root writes, the others read)
 *   barrier:   α                          (a stamp per rank)
 * with α one cache-line transfer and no message, matching or request at all. Recursive
 * doubling and dissemination need log2 n rounds instead, each a message through the rings;
 * where ranks outnumber cores every round the peer has not reached yet costs a context
 * switch (~2 us here, 2-3 per call at 4 ranks on 2 cores), and one round needs about one.
 *
 * Layout (FAB_COLL_BYTES per rank, fab_coll_area): PG_SHM_CHANNELS channels, one per
 * group that uses this path; channel 0 is the world's, the others are agreed when a group
 * is created (pg_group.c: the lowest channel that no creator holds). A channel has a `done`
 * line and SHM_SLOTS slots, used in turn by the collective's sequence number. A slot opens
 * with its stamp, (the group's context id << 32) | sequence number, stored last (release):
 * a reader that sees the stamp it expects sees the bytes before it. Then comes the writer's
 * signature word: its collective's signature (pg_coll_sig.c) and byte count, which every
 * reader compares with its own, so that ranks calling different collectives fail instead of
 * reading each other's data. 48 bytes of data share the stamp's line, so an allreduce of
 * up to 48 bytes reads one line per peer.
 *
 * Non-blocking forms (pg_iallreduce, pg_ibcast, pg_ibarrier) take the same path as the
 * blocking ones, so that a rank may start a collective that its peers call blocking
 * (torch's async_op is a rank-local choice): a schedule with one poll step (pg_shm_sched)
 * takes its sequence number when it starts, in program order, and runs the same
 * post/read/finish steps as the blocking form, each only once this rank finished every
 * earlier collective of the group. A blocking collective first waits until the
 * non-blocking ones before it finished. So every rank still writes, reads and finishes its
 * collectives in sequence order, which is what the reuse rule below relies on.
 *
 * Reuse: a rank writes its slot for sequence s only when every reader is done with
 * s - SHM_SLOTS, the last use of that slot: each rank stores the stamp of each collective
 * it finishes in `done`. When the previous collective had everyone write (allreduce, barrier), their
 * arrival already proves it and no line is read; a root broadcasting again reads the
 * others' `done`. A channel of a freed group is reused once every member is done with its
 * last collective (a member may still be reading our slot after we freed the group).
 */
#include "config.h"

#include "pg_internal.h"
#include "pg_sched.h"
#include "fab.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Slots per channel, used in turn: a root broadcasts this many times ahead of the slowest
 * reader before it waits. */
#define SHM_SLOTS 8

struct shm_slot {
    _Alignas(64) uint64_t stamp; /* the data's collective; stored last */
    uint64_t sig;                /* slot_sig(): the collective's signature and bytes */
    unsigned char data[PG_SHM_MAX];
};

struct shm_chan {
    _Alignas(64) uint64_t done; /* stamp of the last collective this rank finished */
    int32_t cpu;                /* where this rank ran when it last wrote its slot (only
                                 * where pg_w.oversubscribed: shm_ready's only use) */
    struct shm_slot slot[SHM_SLOTS];
};

/* Polls of the peers' lines between two progress calls of a wait, with a core per rank;
 * with more ranks than cores, how long a wait polls before it yields (see shm_ready). */
#define SHM_SPIN 256
#define SHM_SPIN_S 5e-6

_Static_assert(sizeof(struct shm_chan) * PG_SHM_CHANNELS <= FAB_COLL_BYTES,
               "the channels must fit the area fabric/ reserves");

struct pg_shm {
    uint64_t seq;  /* the last collective's sequence number */
    uint64_t fin;  /* the last one this rank finished (< seq while non-blocking ones run) */
    uint64_t safe; /* every member is done with every collective up to this one */
    uint64_t ctx;
    int chan;
    struct shm_chan *at[]; /* group rank -> its channel (mine included) */
};

/* Channels this process holds, and the groups freed while a member may still read their
 * last collective from our slots. */
struct shm_drain {
    struct pg_shm *s; /* the freed group's state */
    int n;
    uint64_t last;    /* stamp of its last collective */
};
/* Under the world lock. */
static struct {
    uint32_t held;    /* channels of live groups, or draining after their group was freed */
    uint32_t claimed; /* channels of groups being created (pg_agree_ids), not attached yet */
    struct shm_drain drain[PG_SHM_CHANNELS];
} shm;

static uint64_t stamp_of(const struct pg_shm *s, uint64_t seq)
{
    return s->ctx << 32 | (uint32_t)seq;
}

static uint64_t load(const uint64_t *p)
{
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void publish(uint64_t *p, uint64_t v)
{
    __atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Whether a member whose `done` reads have is finished with the collective stamped want:
 * the same group at a later or equal sequence number, or a group created after it (the
 * member freed the old one). */
static bool reached(uint64_t have, uint64_t want)
{
    if (have >> 32 != want >> 32) {
        return have >> 32 > want >> 32;
    }
    return (int32_t)((uint32_t)have - (uint32_t)want) >= 0;
}

/* ---- channels ---- */

static bool drained(const struct shm_drain *d)
{
    for (int i = 0; i < d->n; i++) {
        if (!reached(load(&d->s->at[i]->done), d->last)) {
            return false;
        }
    }
    return true;
}

uint32_t pg_shm_busy(void)
{
    for (int c = 1; c < PG_SHM_CHANNELS; c++) {
        struct shm_drain *d = &shm.drain[c];
        if (d->s && drained(d)) {
            free(d->s);
            d->s = NULL;
            shm.held &= ~(1u << c);
        }
    }
    return shm.held | shm.claimed | 1u; /* channel 0 is the world's */
}

bool pg_shm_claim(int chan)
{
    uint32_t bit = chan > 0 ? 1u << chan : 0;

    if ((shm.held | shm.claimed) & bit) {
        return false;
    }
    shm.claimed |= bit;
    return true;
}

void pg_shm_unclaim(int chan)
{
    if (chan > 0) {
        shm.claimed &= ~(1u << chan);
    }
}

int pg_shm_pick(uint32_t busy)
{
    for (int c = 1; c < PG_SHM_CHANNELS; c++) {
        if (!(busy & (1u << c))) {
            return c;
        }
    }
    return -1;
}

/* Whether g can have a channel: every member on this node's rings (reaching through the
 * rings is mutual, so every member finds the same), a size and id the layout takes. */
static bool shm_applies(const struct pg_group *g, int chan)
{
    if (chan < 0 || !pg_w.fab || g->size < 2 || g->size > PG_DIRECT_RANKS ||
        g->ctx >= PG_CTX_LIMIT || !mps_config_int(MPS_CFG_COLL_SHM)) {
        return false;
    }
    for (int i = 0; i < g->size; i++) {
        if (!fab_coll_area(pg_w.fab, g->ranks[i])) {
            return false;
        }
    }
    return true;
}

int pg_shm_attach(struct pg_group *g, int chan)
{
    struct pg_shm *s;

    if (!shm_applies(g, chan)) {
        return PGC_OK;
    }
    /* Failing here fails the group's creation: its other members take this path. */
    s = calloc(1, sizeof(*s) + sizeof(s->at[0]) * (size_t)g->size);
    if (!s) {
        return mps_error(PGC_ERR_NOMEM, "no memory for a group of %d", g->size);
    }
    for (int i = 0; i < g->size; i++) {
        s->at[i] = (struct shm_chan *)fab_coll_area(pg_w.fab, g->ranks[i]) + chan;
    }
    s->ctx = g->ctx;
    s->chan = chan;
    g->shm = s;
    shm.held |= 1u << chan;
    MPS_INFO("group %" PRIu64 " of %d ranks: small collectives through shared memory "
             "(channel %d)", g->ctx, g->size, chan);
    return PGC_OK;
}

void pg_shm_detach(struct pg_group *g)
{
    struct pg_shm *s = g->shm;
    struct shm_drain *d;

    g->shm = NULL;
    if (!s || s->chan == 0 || !pg_w.fab || s->safe >= s->seq) {
        /* the world's channel is never reused; without the fabric, nothing is; and when
         * every member is known to be done, the channel is free at once */
        if (s && s->chan != 0) {
            shm.held &= ~(1u << s->chan);
        }
        free(s);
        return;
    }
    d = &shm.drain[s->chan];
    d->s = s;
    d->n = g->size;
    d->last = stamp_of(s, s->seq);
}

void pg_shm_reset(void)
{
    for (int c = 0; c < PG_SHM_CHANNELS; c++) {
        free(shm.drain[c].s);
    }
    memset(&shm, 0, sizeof(shm));
}

/* Broadcasts where ranks outnumber cores stay messages: a root runs ahead of its readers
 * by a ring's worth of messages but only SHM_SLOTS slots here, and each time it catches up
 * costs context switches (4 ranks on 2 cores, 8 B: 1.1 us flat, 0.37 us messages). With a
 * core per rank, past 1 KiB the messages were as fast (2 ranks, 2 KiB: 0.33 against
 * 0.26 us; 1 KiB 0.17 against 0.24). */
bool pg_shm_usable(const struct pg_group *g, enum pg_shm_coll coll, size_t bytes)
{
    if (!g->shm || bytes > PG_SHM_MAX) {
        return false;
    }
    return coll != PG_SHM_BCAST || (!pg_w.oversubscribed && bytes <= 1024);
}

/* ---- waiting ---- */

/* What a wait polls for: the stamp want in field off of the channels of members
 * [next, end) other than skip, or, with done_lines, their `done` reaching want. */
struct shm_wait {
    struct pg_shm *s;
    size_t off;
    uint64_t want;
    int next, end, skip;
    bool done_lines;
    struct pg_group *g; /* a blocking collective's group (the roll call's), or NULL */
};

/* Whether member w->next is there (or is the one skipped). */
static bool is_there(const struct shm_wait *w)
{
    const uint64_t *p = (const uint64_t *)((const char *)w->s->at[w->next] + w->off);

    return w->next == w->skip ||
           (w->done_lines ? reached(load(p), w->want) : load(p) == w->want);
}

static bool all_there(struct shm_wait *w)
{
    while (w->next < w->end && is_there(w)) {
        w->next++;
    }
    return w->next == w->end;
}

/* Whether a rank still awaited last ran on this CPU. */
static bool awaited_here(const struct shm_wait *w, int cpu)
{
    struct shm_wait rest = *w;

    for (; rest.next < rest.end; rest.next++) {
        if (!is_there(&rest) && __atomic_load_n(&w->s->at[rest.next]->cpu,
                                                     __ATOMIC_RELAXED) == cpu) {
            return true;
        }
    }
    return false;
}

/* Whether everyone is there, polled a while: nothing here needs progress (which polls every
 * ring). With a core per rank, SHM_SPIN polls. With more ranks than cores, polls only while
 * the rank awaited last ran on another CPU, and at most SHM_SPIN_S: it is running there,
 * and giving the core away would cost a context switch (~2.5 us here). A rank awaited on
 * this CPU cannot arrive before this one yields. 4 ranks on 2 cores, barrier: 1.8 context
 * switches per call and core when yielding at once, 1.1 so; 4.6 -> 2.9-4 us per call. */
static bool shm_ready(void *arg)
{
    struct shm_wait *w = arg;
    bool oversubscribed = pg_w.oversubscribed;
    int cpu = oversubscribed ? sched_getcpu() : -1;
    double until = 0;

    for (int i = 0; !all_there(w); i++) {
        if (oversubscribed ? awaited_here(w, cpu) : i >= SHM_SPIN) {
            return false;
        }
        if (oversubscribed && (i & 15) == 15) {
            double now = mps_now();
            until = until == 0 ? now + SHM_SPIN_S : until;
            if (now > until) {
                return false;
            }
        }
        mps_cpu_relax();
    }
    return true;
}

/* For a timeout's message (pg_await.c): the members w still waits for, and why. */
static void shm_awaited(const struct shm_wait *w, struct pg_awaited *a)
{
    struct shm_wait at = *w;
    int missing[PG_DIRECT_RANKS], n = 0;

    for (; at.next < at.end; at.next++) {
        if (!is_there(&at)) {
            missing[n++] = at.next;
        }
    }
    pg_awaited_ranks(a, w->s->ctx, missing, n);
    snprintf(a->how, sizeof(a->how), "one round through shared memory: %s",
             w->done_lines ? "not done with the last collective that used this rank's slot"
             : n > 1       ? "their slots are not written"
                           : "its slot is not written");
}

/* The roll call's account of a blocking collective's wait (pg_coll_roll.c): it took the
 * group's last sequence number as it started. It may end on an abort: nothing of it is in the
 * fabric. */
static bool shm_who(void *arg, struct pg_awaited *a, bool *may_fail)
{
    struct shm_wait *w = arg;

    if (!w->g) {
        return false;
    }
    shm_awaited(w, a);
    a->g = w->g;
    a->device = false;
    a->seq = (w->g->coll_seq - 1) & ((1u << PG_COLL_SEQ_BITS) - 1);
    *may_fail = true;
    return true;
}

static int shm_wait(struct shm_wait *w, const char *what)
{
    struct pg_awaited a;
    int rc;

    /* Mostly everyone is there already (a broadcast's root runs ahead of its readers): one
     * look here spares the wait's set-up and its calls through pointers. */
    if (all_there(w)) {
        return PGC_OK;
    }
    rc = pg_wait_coll_locked(shm_ready, w, -1, shm_who);

    if (rc == PGC_ERR_TIMEOUT) {
        shm_awaited(w, &a);
        snprintf(a.what, sizeof(a.what), "%s", what);
        pg_awaited_keep(&a);
        rc = mps_error(rc,
                       "%s: timed out after %g s waiting for %s (%s; a peer may have died, "
                       "or the ranks do not call the same collectives)",
                       what, pg_w.timeout, a.who, a.how);
    }
    return rc;
}

/* Waits until members [first, end), but me, have stamped their slot for seq. */
static int wait_slots(struct pg_group *g, uint64_t seq, int first, int end, const char *what)
{
    struct pg_shm *s = g->shm;
    struct shm_wait w = {.s = s, .off = offsetof(struct shm_chan, slot[seq % SHM_SLOTS].stamp),
                         .want = stamp_of(s, seq), .next = first, .end = end, .skip = g->rank,
                         .g = g};

    return shm_wait(&w, what);
}

/* The wait before writing my slot for seq: every reader is done with seq - SHM_SLOTS. */
static struct shm_wait reuse_wait(struct pg_group *g, uint64_t seq)
{
    return (struct shm_wait){.s = g->shm, .off = offsetof(struct shm_chan, done),
                             .want = stamp_of(g->shm, seq - SHM_SLOTS), .end = g->size,
                             .skip = g->rank, .done_lines = true};
}

static bool reuse_known(const struct pg_shm *s, uint64_t seq)
{
    return seq <= SHM_SLOTS || s->safe >= seq - SHM_SLOTS;
}

/* Once every reader is done with seq - SHM_SLOTS: how far they all are, read off their
 * `done` lines, which is mostly well past that (a reader close behind a root that runs
 * ahead), so that the next writes read no line until the readers may have fallen behind
 * again. Recording only seq - SHM_SLOTS had a root broadcasting in a loop read a reader's
 * line at every call, a cache-line transfer each time that the reader's next `done` store
 * took back. A member's line may hold a later group's stamp (it freed this one): done with
 * everything of this group, of which none runs past seq - 1 (mine is not written yet). */
static void note_readers(struct pg_group *g, uint64_t seq)
{
    struct pg_shm *s = g->shm;
    uint64_t low = seq - 1;

    for (int r = 0; r < g->size; r++) {
        uint64_t have = load(&s->at[r]->done);
        uint32_t behind = (uint32_t)seq - (uint32_t)have;

        if (r != g->rank && have >> 32 == s->ctx && behind >= 1 && seq - behind < low) {
            low = seq - behind;
        }
    }
    s->safe = MPS_MAX(low, seq - SHM_SLOTS);
}

static int wait_reuse(struct pg_group *g, uint64_t seq, const char *what)
{
    struct shm_wait w;
    int rc;

    if (reuse_known(g->shm, seq)) {
        return PGC_OK;
    }
    w = reuse_wait(g, seq);
    w.g = g;
    rc = shm_wait(&w, what);
    if (rc == PGC_OK) {
        note_readers(g, seq);
    }
    return rc;
}

/* A slot's signature word: the collective's signature above its byte count. */
static uint64_t slot_sig(uint32_t sig, size_t bytes)
{
    return (uint64_t)sig << 48 | (uint64_t)bytes;
}

/* Writes my slot for seq (its readers are done with its last use). Inline: a call of its
 * own measured 50 instructions of an 8-byte allreduce's few hundred. */
static inline __attribute__((always_inline)) void write_slot(struct pg_group *g, uint64_t seq, const void *buf, size_t bytes,
                       uint64_t sig)
{
    struct pg_shm *s = g->shm;
    struct shm_slot *mine = &s->at[g->rank]->slot[seq % SHM_SLOTS];

    /* Only its waiters with more ranks than cores read it (shm_ready), and that is the same
     * on every rank of the node: sched_getcpu was 30 instructions of a 2-rank bcast's 540. */
    if (pg_w.oversubscribed) {
        s->at[g->rank]->cpu = sched_getcpu();
    }
    if (bytes) {
        memcpy(mine->data, buf, bytes);
    }
    mine->sig = sig;
    publish(&mine->stamp, stamp_of(s, seq));
}

/* Takes the next sequence number and writes my slot for it (after its readers are done). */
static int post(struct pg_group *g, const void *buf, size_t bytes, uint64_t sig,
                const char *what)
{
    uint64_t seq = ++g->shm->seq;
    int rc = wait_reuse(g, seq, what);

    if (rc == PGC_OK) {
        write_slot(g, seq, buf, bytes, sig);
    }
    return rc;
}

static __attribute__((noinline, cold)) int sig_differs(uint64_t theirs, uint64_t sig, int rank,
                                                       const char *what);

/* Whether rank's slot holds the collective I run (sig, from slot_sig). The common case, one
 * compare, inline; the message apart. */
static inline int check_sig(const struct shm_slot *slot, uint64_t sig, int rank,
                            const char *what)
{
    uint64_t theirs = slot->sig;

    return theirs == sig ? PGC_OK : sig_differs(theirs, sig, rank, what);
}

/* The error of a slot whose signature word differs from mine: another collective, or the
 * same with another byte count. */
static int sig_differs(uint64_t theirs, uint64_t sig, int rank, const char *what)
{
    if (theirs >> 48 != sig >> 48) {
        return pg_coll_mismatch(rank, (uint32_t)(theirs >> 48), (uint32_t)(sig >> 48));
    }
    return mps_error(PGC_ERR_MISMATCH, "%s: rank %d gave %zu bytes, this rank %zu (do all "
                     "ranks call the same collectives with the same counts?)", what, rank,
                     (size_t)(theirs & ((1ull << 48) - 1)), (size_t)(sig & ((1ull << 48) - 1)));
}

/* Every member's slot of collective seq against mine. */
static int check_all(struct pg_group *g, uint64_t seq, uint64_t sig, const char *what)
{
    struct pg_shm *s = g->shm;
    int slot = (int)(seq % SHM_SLOTS), rc = PGC_OK;

    for (int r = 0; r < g->size && rc == PGC_OK; r++) {
        rc = check_sig(&s->at[r]->slot[slot], sig, r, what);
    }
    return rc;
}

/* This rank is done with collective seq. With saw_all, everyone's slot was in: each
 * member finished the collective before it, so my next write is safe up to there. */
static void finish(struct pg_group *g, uint64_t seq, bool saw_all)
{
    struct pg_shm *s = g->shm;

    if (saw_all) {
        s->safe = seq - 1;
    }
    s->fin = seq;
    publish(&s->at[g->rank]->done, stamp_of(s, seq));
}

static bool caught_up(void *arg)
{
    const struct pg_shm *s = arg;

    return s->fin == s->seq;
}

/* Before a blocking collective: the non-blocking ones started before it have finished
 * here (their schedules run in the progress this wait makes). */
static int catch_up(struct pg_group *g, const char *what)
{
    int rc = caught_up(g->shm) ? PGC_OK : pg_wait_until_locked(caught_up, g->shm, -1);

    if (rc == PGC_ERR_TIMEOUT) {
        rc = mps_error(rc, "%s: the non-blocking collectives started before it did not "
                       "finish within %.0f s", what, pg_w.timeout);
    }
    return rc;
}

/* A blocking collective that failed after taking its sequence number still counts as
 * finished here, so that the next one does not wait for it (catch_up). Only after catch_up
 * succeeded: until then fin marks the non-blocking ones before it, which still run. */
static int failed(struct pg_group *g, int rc)
{
    if (rc != PGC_OK) {
        g->shm->fin = g->shm->seq;
    }
    return rc;
}

/* ---- the collectives (called with the lock held) ---- */

/* A blocking collective's start: it takes g's next sequence number, as one sent as messages
 * does, so that the roll call (pg_coll_roll.c) finds it at the same place on every rank
 * whatever path it takes; its messages would carry it, it sends none. */
static inline void shm_enter(struct pg_group *g, uint64_t sig)
{
    pg_coll_tag(g, (uint32_t)(sig >> 48));
}

/* out = slot 0 op slot 1 op ... op slot n-1, the same on every rank whatever the op. */
static int reduce_slots(struct pg_group *g, uint64_t seq, void *out, size_t count,
                        const struct pg_op_spec *op, uint64_t sig)
{
    struct pg_shm *s = g->shm;
    int slot = (int)(seq % SHM_SLOTS), n = g->size;
    size_t bytes = count * op->elem_size;
    int rc = check_all(g, seq, sig, "allreduce");

    if (rc == PGC_OK && bytes) { /* count 0 may come with NULL buffers */
        memcpy(out, s->at[n - 1]->slot[slot].data, bytes);
    }
    for (int r = n - 2; r >= 0 && rc == PGC_OK; r--) {
        rc = pg_op_apply(op, s->at[r]->slot[slot].data, out, count);
    }
    return rc;
}

/* Reads root's slot of collective seq into buf (a bcast). */
static int read_root(struct pg_group *g, uint64_t seq, void *buf, size_t bytes, int root,
                     uint64_t sig)
{
    const struct shm_slot *slot = &g->shm->at[root]->slot[seq % SHM_SLOTS];
    int rc = check_sig(slot, sig, root, "bcast");

    if (rc == PGC_OK && bytes) {
        memcpy(buf, slot->data, bytes);
    }
    return rc;
}

int pg_allreduce_shm(struct pg_group *g, const void *in, void *out, size_t count,
                     const struct pg_op_spec *op)
{
    uint64_t sig = slot_sig(pg_coll_sig_of(g, PG_COLL_ALLREDUCE, op, -1), count * op->elem_size);
    int rc;

    shm_enter(g, sig);
    rc = catch_up(g, "allreduce");
    if (rc != PGC_OK) {
        return rc;
    }
    rc = post(g, in, count * op->elem_size, sig, "allreduce");
    if (rc == PGC_OK) {
        rc = wait_slots(g, g->shm->seq, 0, g->size, "allreduce");
    }
    if (rc == PGC_OK) {
        rc = reduce_slots(g, g->shm->seq, out, count, op, sig);
        finish(g, g->shm->seq, true);
    }
    return failed(g, rc);
}

int pg_bcast_shm(struct pg_group *g, void *buf, size_t bytes, int root)
{
    struct pg_shm *s = g->shm;
    uint64_t sig = slot_sig(pg_coll_sig_of(g, PG_COLL_BCAST, NULL, root), bytes);
    int rc;

    shm_enter(g, sig);
    rc = catch_up(g, "bcast");
    if (rc != PGC_OK) {
        return rc;
    }
    if (g->rank == root) {
        rc = post(g, buf, bytes, sig, "bcast");
        if (rc == PGC_OK) {
            finish(g, s->seq, false);
        }
        return failed(g, rc);
    }
    rc = wait_slots(g, ++s->seq, root, root + 1, "bcast");
    if (rc == PGC_OK) {
        rc = read_root(g, s->seq, buf, bytes, root, sig);
        finish(g, s->seq, false);
    }
    return failed(g, rc);
}

int pg_barrier_shm(struct pg_group *g)
{
    uint64_t sig = slot_sig(pg_coll_sig_of(g, PG_COLL_BARRIER, NULL, -1), 0);
    int rc;

    shm_enter(g, sig);
    rc = catch_up(g, "barrier");
    if (rc != PGC_OK) {
        return rc;
    }
    rc = post(g, NULL, 0, sig, "barrier");
    if (rc == PGC_OK) {
        rc = wait_slots(g, g->shm->seq, 0, g->size, "barrier");
    }
    if (rc == PGC_OK) {
        rc = check_all(g, g->shm->seq, sig, "barrier");
        finish(g, g->shm->seq, true);
    }
    return failed(g, rc);
}

/* ---- the non-blocking forms: one poll step of a schedule ---- */

/* What a schedule's poll step runs: one collective, in the phases of the blocking form. */
struct shm_op {
    struct pg_group *g;
    enum pg_shm_coll coll;
    const void *in;
    void *out;
    size_t count, bytes;
    struct pg_op_spec op;
    int root;
    uint64_t seq, sig;
    bool posted;
    struct shm_wait arrive; /* who has written the slot (kept between polls) */
};

static bool writes(const struct shm_op *o)
{
    return o->coll != PG_SHM_BCAST || o->g->rank == o->root;
}

/* Writes my slot once its readers are done with its last use; false while they are not. */
static bool try_post(struct shm_op *o)
{
    struct pg_shm *s = o->g->shm;
    struct shm_wait w = reuse_wait(o->g, o->seq);

    if (!reuse_known(s, o->seq)) {
        if (!all_there(&w)) {
            return false;
        }
        note_readers(o->g, o->seq);
    }
    write_slot(o->g, o->seq, o->in, o->bytes, o->sig);
    return true;
}

/* The collective's work once every slot it reads is in. */
static int complete_op(struct shm_op *o)
{
    switch (o->coll) {
    case PG_SHM_ALLREDUCE:
        return reduce_slots(o->g, o->seq, o->out, o->count, &o->op, o->sig);
    case PG_SHM_BCAST:
        return o->g->rank == o->root ? PGC_OK
                                     : read_root(o->g, o->seq, o->out, o->bytes, o->root, o->sig);
    default:
        return check_all(o->g, o->seq, o->sig, "barrier");
    }
}

/* A poll of the step: *done once the collective finished here (rc its result). */
static int shm_op_poll(void *arg, bool *done)
{
    struct shm_op *o = arg;
    struct pg_shm *s = o->g->shm;
    int rc;

    *done = false;
    if (o->seq == 0) { /* the schedule starts: its place in the group's order */
        o->seq = ++s->seq;
        o->arrive = (struct shm_wait){
            .s = s, .off = offsetof(struct shm_chan, slot[o->seq % SHM_SLOTS].stamp),
            .want = stamp_of(s, o->seq), .next = o->coll == PG_SHM_BCAST ? o->root : 0,
            .end = o->coll == PG_SHM_BCAST ? o->root + 1 : o->g->size, .skip = o->g->rank};
    }
    if (s->fin != o->seq - 1 || (!o->posted && writes(o) && !(o->posted = try_post(o)))) {
        return PGC_OK; /* an earlier collective runs, or my slot's readers are behind */
    }
    if (!all_there(&o->arrive)) {
        return PGC_OK;
    }
    rc = complete_op(o);
    finish(o->g, o->seq, o->coll != PG_SHM_BCAST);
    *done = true;
    return rc;
}

/* A poll step's account of what it waits for (pg_sched_poll_desc). */
static bool shm_op_desc(void *arg, struct pg_awaited *a)
{
    struct shm_op *o = arg;
    struct shm_wait reuse = reuse_wait(o->g, o->seq);

    if (o->seq == 0 || o->g->shm->fin != o->seq - 1) {
        snprintf(a->who, sizeof(a->who), "the group's earlier non-blocking collectives");
        snprintf(a->how, sizeof(a->how), "one round through shared memory, in order");
        a->nranks = 0;
        return true;
    }
    shm_awaited(o->posted || !writes(o) ? &o->arrive : &reuse, a);
    return true;
}

void pg_shm_sched(struct pg_sched *sc, enum pg_shm_coll coll, const void *in, void *out,
                  size_t count, int root)
{
    struct shm_op *o = pg_sched_alloc(sc, sizeof(*o));
    size_t bytes = coll == PG_SHM_ALLREDUCE ? count * sc->op.elem_size : count;
    const struct pg_op_spec *op = coll == PG_SHM_ALLREDUCE ? &sc->op : NULL;
    enum pg_coll_kind kind = coll == PG_SHM_ALLREDUCE ? PG_COLL_ALLREDUCE
                             : coll == PG_SHM_BCAST   ? PG_COLL_BCAST
                                                      : PG_COLL_BARRIER;

    if (!o) {
        return; /* the schedule holds the error */
    }
    *o = (struct shm_op){.g = sc->g, .coll = coll, .in = coll == PG_SHM_BCAST ? out : in,
                         .out = out, .count = count, .bytes = bytes, .root = root,
                         .sig = slot_sig(pg_coll_sig(kind, op, root), bytes)};
    if (op) {
        o->op = *op;
    }
    pg_sched_poll(sc, shm_op_poll, o);
    pg_sched_poll_desc(sc, shm_op_desc);
    pg_sched_algo(sc, "shared memory");
}
