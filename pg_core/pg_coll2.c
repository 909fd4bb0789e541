/*
 * pg_coll2.c - entry points of gather(v), scatter(v), alltoall(v), reduce_scatter(_block),
 * scan and exscan: argument checks, a private copy of every layout array (the schedule
 * outlives the call), the algorithm, and the start under the world lock.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_coll2.h"
#include "pg_coll_hier.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <string.h>


/* Copies k arrays of n size_t into schedule scratch, back to back; NULL on no memory (the
 * error is recorded in the schedule). */
static size_t *keep_arrays(struct pg_sched *s, int n, const size_t *a, const size_t *b,
                           const size_t *c, const size_t *d)
{
    const size_t *src[4] = {a, b, c, d};
    size_t *dst = pg_sched_alloc(s, sizeof(size_t) * 4 * (size_t)n);

    for (int k = 0; dst && k < 4; k++) {
        if (src[k]) {
            memcpy(dst + (size_t)k * (size_t)n, src[k], sizeof(size_t) * (size_t)n);
        }
    }
    return dst;
}

int pg_igather(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
               struct pg_req *req)
{
    struct pg_sched *s;
    int rc = pg_check_root(g, root);

    if (rc != PGC_OK) {
        return rc;
    }
    s = pg_sched_new(g, NULL, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_GATHER, NULL, root);
    pg_sched_rooted(s);
    pg_gather_binomial(s, in, out, bytes, root);
    return pg_sched_launch(s);
}

int pg_igatherv(struct pg_group *g, const void *in, size_t inbytes, void *out, const size_t *counts,
                const size_t *displs, int root, struct pg_req *req)
{
    struct pg_sched *s;
    size_t *cd = NULL;
    int rc = pg_check_root(g, root);

    if (rc == PGC_OK && g->rank == root && inbytes > counts[root]) {
        rc = mps_error(PGC_ERR_TRUNCATE,
                       "gatherv: the root sends %zu bytes to itself but "
                       "receives %zu",
                       inbytes, counts[root]);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    s = pg_sched_new(g, NULL, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_GATHERV, NULL, root);
    pg_sched_rooted(s);
    if (g->rank == root) {
        cd = keep_arrays(s, g->size, counts, displs, NULL, NULL);
    }
    if (g->rank != root || cd) {
        pg_gatherv_linear(s, in, inbytes, out, cd, cd ? cd + g->size : NULL, root);
    }
    return pg_sched_launch(s);
}

int pg_iscatter(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
                struct pg_req *req)
{
    struct pg_sched *s;
    int rc = pg_check_root(g, root);

    if (rc != PGC_OK) {
        return rc;
    }
    s = pg_sched_new(g, NULL, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_SCATTER, NULL, root);
    pg_sched_rooted(s);
    pg_scatter_binomial(s, in, out, bytes, root);
    return pg_sched_launch(s);
}

int pg_iscatterv(struct pg_group *g, const void *in, const size_t *counts, const size_t *displs,
                 void *out, size_t outbytes, int root, struct pg_req *req)
{
    struct pg_sched *s;
    size_t *cd = NULL;
    int rc = pg_check_root(g, root);

    if (rc == PGC_OK && g->rank == root && counts[root] > outbytes &&
        out != (const char *)in + displs[root]) {
        rc = mps_error(PGC_ERR_TRUNCATE,
                       "scatterv: the root sends %zu bytes to itself but "
                       "receives %zu",
                       counts[root], outbytes);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    s = pg_sched_new(g, NULL, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_SCATTERV, NULL, root);
    pg_sched_rooted(s);
    if (g->rank == root) {
        cd = keep_arrays(s, g->size, counts, displs, NULL, NULL);
    }
    if (g->rank != root || cd) {
        pg_scatterv_linear(s, in, cd, cd ? cd + g->size : NULL, out, outbytes, root);
    }
    return pg_sched_launch(s);
}

int pg_ialltoallv(struct pg_group *g, const void *in, const size_t *scounts, const size_t *sdispls,
                  void *out, const size_t *rcounts, const size_t *rdispls, struct pg_req *req)
{
    struct pg_sched *s;
    size_t *cd;
    int n = g->size;

    if (scounts[g->rank] > rcounts[g->rank]) {
        return mps_error(PGC_ERR_TRUNCATE,
                         "alltoallv: rank %d sends %zu bytes to itself but "
                         "receives %zu",
                         g->rank, scounts[g->rank], rcounts[g->rank]);
    }
    s = pg_sched_new(g, NULL, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    /* alltoall's signature: the MPI layer runs an alltoallv of equal blocks as an alltoall
     * on the ranks that see them equal, and both send the same messages. */
    pg_sched_sig(s, PG_COLL_ALLTOALL, NULL, -1);
    cd = keep_arrays(s, n, scounts, sdispls, rcounts, rdispls);
    if (cd) {
        pg_alltoallv_pairwise(s, in, cd, cd + n, out, cd + 2 * n, cd + 3 * n);
    }
    return pg_sched_launch(s);
}

/* Fills the count and displacement arrays of n equal blocks of bytes each. */
static void equal_blocks(size_t *cd, int n, size_t bytes)
{
    for (int i = 0; i < n; i++) {
        cd[i] = bytes;
        cd[n + i] = (size_t)i * bytes;
    }
}

int pg_ialltoall(struct pg_group *g, const void *in, void *out, size_t bytes, struct pg_req *req)
{
    struct pg_sched *s = pg_sched_new(g, NULL, req);
    size_t *cd;

    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_ALLTOALL, NULL, -1);
    /* Both sides share one layout. */
    cd = pg_sched_alloc(s, sizeof(size_t) * 2 * (size_t)g->size);
    if (cd) {
        equal_blocks(cd, g->size, bytes);
        pg_alltoallv_pairwise(s, in, cd, cd + g->size, out, cd, cd + g->size);
    }
    return pg_sched_launch(s);
}

int pg_ireduce_scatter(struct pg_group *g, const void *in, void *out, const size_t *counts,
                       const struct pg_op_spec *op, struct pg_req *req)
{
    struct pg_sched *s;
    size_t *cd;
    int rc = pg_check_op(op);

    if (rc != PGC_OK) {
        return rc;
    }
    s = pg_sched_new(g, op, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_REDUCE_SCATTER, op, -1);
    pg_sched_align_like(s, in);
    cd = pg_sched_alloc(s, sizeof(size_t) * (size_t)g->size);
    if (cd) {
        memcpy(cd, counts, sizeof(size_t) * (size_t)g->size);
        pg_reduce_scatter_pairwise(s, in, out, cd);
    }
    return pg_sched_launch(s);
}

int pg_ireduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                             const struct pg_op_spec *op, struct pg_req *req)
{
    struct pg_sched *s;
    size_t *cd;
    int rc = pg_check_op(op);

    if (rc != PGC_OK) {
        return rc;
    }
    /* Across nodes with several ranks on a node: pg_coll_hier_reduce_scatter.c (the blocking
     * form's large sizes run it too, so that pgc's async form meets them). */
    if (op->commutative && pg_hier_on(g)) {
        return pg_ireduce_scatter_block_hier(g, in, out, count, op, req);
    }
    s = pg_sched_new(g, op, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_REDUCE_SCATTER_BLOCK, op, -1);
    pg_sched_align_like(s, in);
    cd = pg_sched_alloc(s, sizeof(size_t) * (size_t)g->size);
    if (cd) {
        for (int i = 0; i < g->size; i++) {
            cd[i] = count;
        }
        pg_reduce_scatter_pairwise(s, in, out, cd);
    }
    return pg_sched_launch(s);
}

static int scan_start(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op, bool exclusive, struct pg_req *req)
{
    struct pg_sched *s;
    int rc = pg_check_op(op);

    if (rc != PGC_OK) {
        return rc;
    }
    s = pg_sched_new(g, op, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, exclusive ? PG_COLL_EXSCAN : PG_COLL_SCAN, op, -1);
    pg_sched_align_like(s, in);
    pg_scan_recursive_doubling(s, in, out, count, exclusive);
    return pg_sched_launch(s);
}

int pg_iscan(struct pg_group *g, const void *in, void *out, size_t count,
             const struct pg_op_spec *op, struct pg_req *req)
{
    return scan_start(g, in, out, count, op, false, req);
}

int pg_iexscan(struct pg_group *g, const void *in, void *out, size_t count,
               const struct pg_op_spec *op, struct pg_req *req)
{
    return scan_start(g, in, out, count, op, true, req);
}
