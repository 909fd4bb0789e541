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
 */
#include "config.h"
#include "pg_device.h"

#include "pg_internal.h"
#include "mps_log.h"
#include "pgc_status.h"

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
    *out = g;
    rc = pg_shm_attach(g, chan);
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
    pg_dev_group_free(g);
    pg_shm_detach(g);
    PG_UNLOCK();
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

int pg_agree_ids(struct pg_group *over, uint64_t *ctx, int *chan)
{
    struct pg_op_spec op = {.dt = PG_BYTE, .elem_size = sizeof(struct ids),
                            .user_fn = ids_combine, .commutative = true};
    struct ids mine = {pg_w.next_ctx, pg_shm_busy()}, all;
    int rc = pg_allreduce(over, &mine, &all, 1, &op);

    if (rc == PGC_OK && all.ctx >= PG_CTX_LIMIT) {
        rc = mps_error(PGC_ERR_NOMEM, "no context id left for a new group (%llu made)",
                       (unsigned long long)all.ctx);
    }
    if (rc == PGC_OK) {
        pg_w.next_ctx = all.ctx + 1;
        *ctx = all.ctx;
        *chan = pg_shm_pick((uint32_t)all.busy);
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
        return mps_error(PGC_ERR_NOMEM, "no memory for a group of %d", n);
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
    free(world);
    return rc;
}

int pg_group_dup(struct pg_group *parent, struct pg_group **out)
{
    uint64_t ctx;
    int chan;
    int rc = pg_agree_ids(parent, &ctx, &chan);

    if (rc != PGC_OK) {
        return rc;
    }
    return pg_group_new(ctx, chan, parent->rank, parent->size, parent->ranks, out);
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
    free(all);
    free(world);
    return rc;
}
