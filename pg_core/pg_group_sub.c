/*
 * pg_group_sub.c - creating a group by a collective over its members only (what
 * MPI_Comm_create_group needs).
 *
 * pg_group_create agrees a context id with one allreduce over the whole parent (see
 * pg_group.c). Here only the members take part, so they first need a group of their own to
 * run that allreduce on. Its id cannot be agreed (that is the problem being solved), so each
 * member derives it from what all members know alike: the parent's id, the tag and the
 * member list, hashed into the ids from PG_CTX_LIMIT (2^30) up to 2^31. Real ids are
 * counters that pg_agree_ids keeps below PG_CTX_LIMIT; ids are shifted left by one on the
 * wire, whose context field has 32 bits. Two temporary ids collide with a chance of 2^-30,
 * and matter only if their creations overlap on some rank.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_coll_hier.h"
#include "pg_group_sub.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <stdlib.h>

#define SUB_CTX_BIT PG_CTX_LIMIT

static uint64_t fnv_mix(uint64_t h, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

uint64_t pg_group_temp_ctx(const struct pg_group *parent, int tag, const int *world, int n)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    h = fnv_mix(h, parent->ctx);
    h = fnv_mix(h, (uint64_t)(uint32_t)tag);
    for (int i = 0; i < n; i++) {
        h = fnv_mix(h, (uint64_t)(uint32_t)world[i]);
    }
    return SUB_CTX_BIT | (h & (SUB_CTX_BIT - 1));
}

/* World ranks of the members and my position; checks the list. */
static int member_list(struct pg_group *parent, const int *parent_ranks, int n, int *world, int *me)
{
    *me = -1;
    for (int i = 0; i < n; i++) {
        int r = parent_ranks[i];
        if (r < 0 || r >= parent->size) {
            return mps_error(PGC_ERR_INVALID_RANK,
                             "pg_group_create_sub: rank %d outside the parent group of %d", r,
                             parent->size);
        }
        for (int j = 0; j < i; j++) {
            if (parent_ranks[j] == r) {
                return mps_error(PGC_ERR_INVALID_ARG,
                                 "pg_group_create_sub: rank %d is listed twice", r);
            }
        }
        world[i] = parent->ranks[r];
        if (r == parent->rank) {
            *me = i;
        }
    }
    if (*me < 0) {
        return mps_error(PGC_ERR_INVALID_ARG,
                         "pg_group_create_sub: the caller (rank %d) is not in the list of %d",
                         parent->rank, n);
    }
    return PGC_OK;
}

int pg_group_create_sub(struct pg_group *parent, const int *parent_ranks, int n, int tag,
                        struct pg_group **out)
{
    struct pg_group *tmp = NULL;
    int *world = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    uint64_t ctx = 0;
    int me, chan = -1, rc;

    *out = NULL;
    if (!world) {
        return mps_error(PGC_ERR_NOMEM, "pg_group_create_sub: no memory for %d ranks", n);
    }
    rc = member_list(parent, parent_ranks, n, world, &me);
    if (rc == PGC_OK) {
        rc = pg_group_new(pg_group_temp_ctx(parent, tag, world, n), -1, me, n, world, &tmp);
    }
    if (rc == PGC_OK) {
        rc = pg_agree_ids(tmp, &ctx, &chan);
    }
    if (rc == PGC_OK) {
        rc = pg_group_new(ctx, chan, me, n, world, out);
        pg_ids_release(chan);
    }
    pg_group_release(tmp);
    free(world);
    return pg_hier_created(rc, out);
}

int pg_group_remote_view(struct pg_group *uni, int local_rank, const int *remote_world,
                         int nremote, struct pg_group **out)
{
    uint64_t ctx = 0;
    int chan = -1;
    int rc = pg_agree_ids(uni, &ctx, &chan);

    *out = NULL;
    /* The channel agreed alongside the id is not used: the view runs no collective. */
    pg_ids_release(chan);
    if (rc == PGC_OK) {
        rc = pg_group_new(ctx, -1, local_rank, nremote, remote_world, out);
    }
    return rc;
}
