/*
 * pg_group.c - groups: creation with an agreed context id, split, dup, rank translation.
 *
 * Context ids: every process keeps the lowest id none of its groups uses (next_ctx). A new
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
 * holds and the second allreduce is skipped.
 */
#include "config.h"
#include "pg_device.h"

#include "pg_coll_hier.h"
#include "pg_internal.h"
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
        pg_w.next_ctx = ctx + 1; /* ids are not reused, so a failed round only skips one */
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
 * A non-blocking dup (MPI_Comm_idup): the agreement's allreduce runs as a schedule the
 * progress engine drives, and its completion claims the agreed ids (idup_agreed). Without
 * MPI_THREAD_MULTIPLE a claim holds only if no other creation claimed ids between this
 * proposal and its claim, so at most one dup is in flight in a process: every other
 * creation, blocking or not, first waits for it (idup_drain). That wait is inside a call
 * that creates a communicator, a collective the dup's members reach too, so it cannot
 * leave a legal program waiting for a message its peer sends only after the idup call
 * returned (MPICH's comm_idup test: the case that deadlocked when idup was a blocking dup).
 */
struct pg_idup {
    struct ids mine, all;
    struct pg_op_spec op;
    struct pg_group *parent;
    uint64_t ctx;
    int chan;
    int rc;
};

static struct pg_req *idup_pending; /* the dup in flight in this process, or NULL */

static void idup_agreed(struct pg_req *req)
{
    struct pg_idup *d = req->cb_arg;

    idup_pending = NULL;
    d->rc = req->status;
    if (d->rc == PGC_OK && d->all.ctx >= PG_CTX_LIMIT) {
        d->rc = mps_error(PGC_ERR_NOMEM, "no context id left for a new group (%llu made)",
                          (unsigned long long)d->all.ctx);
    }
    if (d->rc == PGC_OK) {
        d->ctx = d->all.ctx;
        d->chan = pg_shm_pick((uint32_t)d->all.busy);
        if (!ids_claim(d->ctx, d->chan)) { /* cannot happen while only one is in flight */
            d->chan = -1;
            d->rc = mps_error(PGC_ERR_INTERNAL, "context %llu of a non-blocking dup was taken",
                              (unsigned long long)d->ctx);
        }
    }
}

static int idup_drain(void)
{
    return idup_pending ? pg_wait(idup_pending, -1) : PGC_OK;
}

int pg_group_idup_start(struct pg_group *parent, struct pg_req *req, struct pg_idup **out)
{
    struct pg_idup *d = calloc(1, sizeof(*d));
    int rc = d ? idup_drain() : mps_error(PGC_ERR_NOMEM, "no memory for a non-blocking dup");

    if (rc == PGC_OK) {
        rc = pg_hier_prepare(parent); /* as in pg_agree_ids, before the proposal is read */
    }
    if (rc != PGC_OK) {
        free(d);
        return rc;
    }
    d->op = (struct pg_op_spec){.dt = PG_BYTE, .elem_size = sizeof(struct ids),
                                .user_fn = ids_combine, .commutative = true};
    d->parent = parent;
    d->chan = -1;
    PG_LOCK();
    d->mine = (struct ids){pg_w.next_ctx, pg_shm_busy()};
    PG_UNLOCK();
    req->on_complete = idup_agreed;
    req->cb_arg = d;
    idup_pending = req;
    rc = pg_iallreduce_impl(parent, &d->mine, &d->all, 1, &d->op, req);
    if (rc != PGC_OK) {
        idup_pending = NULL;
        free(d);
        return rc;
    }
    *out = d;
    return PGC_OK;
}

int pg_group_idup_end(struct pg_idup *d, struct pg_group **out)
{
    int rc = d->rc;

    *out = NULL;
    if (rc == PGC_OK) {
        rc = pg_group_new(d->ctx, d->chan, d->parent->rank, d->parent->size,
                          d->parent->ranks, out);
    }
    pg_ids_release(d->chan);
    free(d);
    return rc;
}

int pg_agree_ids(struct pg_group *over, uint64_t *ctx, int *chan)
{
    struct pg_op_spec op = {.dt = PG_BYTE, .elem_size = sizeof(struct ids),
                            .user_fn = ids_combine, .commutative = true};
    bool held = false;
    int rc = idup_drain();

    if (rc == PGC_OK) {
        rc = pg_hier_prepare(over);
    }

    /* A hierarchical allreduce creates over's sub-groups at its first call: done here,
     * before the proposal is read, they cannot take the ids being agreed. */
    if (rc != PGC_OK) {
        *chan = -1;
        return rc;
    }
    /* Each failed round raises every member's next_ctx past the contested id, and a
     * creation that lost a claim to another yields before trying again. */
    while ((rc = agree_round(over, &op, ctx, chan, &held)) == PGC_OK && !held) {
        MPS_DEBUG("group creation: context %" PRIu64 " or channel %d went to a concurrent "
                  "creation; trying again", *ctx, *chan);
        sched_yield();
    }
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
