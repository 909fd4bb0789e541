/*
 * pg_coll.c - the collective entry points: argument checks, algorithm choice, and the
 * blocking forms (a schedule started and waited for).
 */
#include "config.h"

#include "pg_coll2.h"
#include "pg_coll_algos.h"
#include "pg_coll_hier.h"
#include "pg_internal.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdlib.h>
#include <string.h>

int pg_op_apply(const struct pg_op_spec *op, const void *in, void *inout, size_t count)
{
    if (op->user_fn) {
        op->user_fn(in, inout, count, op->user_ctx);
        return PGC_OK;
    }
    return pg_reduce_local(in, inout, count, op->dt, op->op == PG_OP_AVG ? PG_OP_SUM : op->op);
}

int pg_check_root(const struct pg_group *g, int root)
{
    if (root < 0 || root >= g->size) {
        return mps_error(PGC_ERR_INVALID_ROOT, "root %d outside a group of %d", root, g->size);
    }
    return PGC_OK;
}

int pg_op_invalid(const struct pg_op_spec *op)
{
    return mps_error(PGC_ERR_INVALID_OP, "reduction %s is not defined on %s", pg_op_name(op->op),
                     pg_dtype_name(op->dt));
}

/* The algorithm named by a MPISHIM_COLL_* variable, or "auto". */
static bool algo_is(enum mps_config_id id, const char *name)
{
    return strcmp(mps_config_str(id), name) == 0;
}

/* Whether a MPISHIM_COLL_* variable leaves the choice to us (cheap when it is not set). */
static bool algo_auto(enum mps_config_id id)
{
    return mps_config_default(id) || algo_is(id, "auto");
}

int pg_ibarrier_impl(struct pg_group *g, struct pg_req *req)
{
    struct pg_sched *s;

    if (pg_hier_on(g)) {
        return pg_ibarrier_hier(g, req);
    }
    s = pg_sched_new(g, NULL, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_BARRIER, NULL, -1);
    if (pg_shm_usable(g, PG_SHM_BARRIER, 0)) {
        pg_shm_sched(s, PG_SHM_BARRIER, NULL, NULL, 0, -1);
    } else {
        pg_barrier_dissemination(s);
    }
    return pg_sched_launch(s);
}

int pg_ibcast_impl(struct pg_group *g, void *buf, size_t bytes, int root, struct pg_req *req)
{
    struct pg_sched *s;
    int rc = pg_check_root(g, root);

    if (rc != PGC_OK) {
        return rc;
    }
    if (pg_hier_on(g)) {
        return pg_ibcast_hier(g, buf, bytes, root, req);
    }
    s = pg_sched_new(g, NULL, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_BCAST, NULL, root);
    pg_sched_rooted(s);
    if (pg_shm_usable(g, PG_SHM_BCAST, bytes)) {
        pg_shm_sched(s, PG_SHM_BCAST, NULL, buf, bytes, root);
    } else if (pg_bcast_binomial_chosen(g, bytes)) {
        pg_bcast_binomial(s, buf, bytes, root);
    } else {
        pg_bcast_scatter_allgather(s, buf, bytes, root);
    }
    return pg_sched_launch(s);
}

/* The binomial tree sends the whole buffer log2 n times down a path; scatter+allgather
 * moves it about twice, which wins for large buffers on many ranks (measured: at 4 ranks
 * on 2 cores the tree is faster up to 2 MiB, bench/results). */
bool pg_bcast_binomial_chosen(const struct pg_group *g, size_t bytes)
{
    return !algo_is(MPS_CFG_COLL_BCAST, "scatter_allgather") &&
           !(algo_is(MPS_CFG_COLL_BCAST, "auto") && g->size >= 8 && bytes >= 524288 &&
             bytes >= (size_t)g->size);
}

int pg_ireduce_impl(struct pg_group *g, const void *in, void *out, size_t count,
                    const struct pg_op_spec *op, int root, struct pg_req *req)
{
    size_t bytes = count * op->elem_size;
    struct pg_sched *s;
    void *acc;
    bool leaf;
    int rc = pg_check_root(g, root);

    if (rc == PGC_OK) {
        rc = pg_check_op(op);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (op->commutative && pg_hier_on(g)) {
        return pg_ireduce_hier(g, in, out, count, op, root, req);
    }
    s = pg_sched_new(g, op, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_REDUCE, op, root);
    pg_sched_rooted(s);
    pg_sched_align_like(s, in);
    /* The root reduces into its output, inner ranks into scratch (their input is const);
     * leaves of the tree (odd positions) only send, straight from their input. */
    leaf = g->rank != root &&
           (g->rank - (op->commutative ? root : 0) + g->size) % g->size % 2 == 1;
    acc = g->rank == root ? out : leaf ? NULL : pg_sched_alloc(s, bytes);
    pg_reduce_binomial(s, in, acc, count, root);
    return pg_sched_launch(s);
}

/* Allreduce: recursive doubling for small vectors and non-commutative ops (fewest
 * rounds), Rabenseifner for large ones (half the bytes), the ring for large vectors on
 * large groups (bandwidth-optimal, but 2(n-1) rounds). Thresholds measured on 2-8 ranks of
 * one node (bench/); MPISHIM_COLL_ALLREDUCE overrides. The blocking form's direct path runs
 * recursive doubling too, so it asks the same question (allreduce_split). */
enum allreduce_algo { AR_RD, AR_RING, AR_RABENSEIFNER };

static enum allreduce_algo allreduce_split(const struct pg_group *g, size_t count,
                                           const struct pg_op_spec *op)
{
    bool split_ok = op->commutative && count >= (size_t)g->size;

    if (!split_ok || algo_auto(MPS_CFG_COLL_ALLREDUCE) ||
        algo_is(MPS_CFG_COLL_ALLREDUCE, "recursive_doubling")) {
        return AR_RD;
    }
    return algo_is(MPS_CFG_COLL_ALLREDUCE, "ring") ? AR_RING : AR_RABENSEIFNER;
}

/* The allreduce of in (my contribution; may be acc) into acc. */
static void build_allreduce(struct pg_sched *s, const void *in, void *acc, size_t count)
{
    struct pg_group *g = s->g;
    size_t bytes = count * s->op.elem_size;
    bool split_ok = s->op.commutative && count >= (size_t)g->size;
    bool forced = !algo_auto(MPS_CFG_COLL_ALLREDUCE);
    enum allreduce_algo a = allreduce_split(g, count, &s->op);

    if (forced || !split_ok || bytes < 4096 || g->size == 1) {
        a = forced ? a : AR_RD;
    } else {
        a = g->size > 8 && bytes >= (1u << 20) ? AR_RING : AR_RABENSEIFNER;
    }
    /* Rabenseifner and the ring read in themselves: no copy into acc first. */
    if (a == AR_RABENSEIFNER) {
        pg_allreduce_rabenseifner(s, in, acc, count);
    } else if (a == AR_RING) {
        pg_allreduce_ring(s, in, acc, count);
    } else {
        pg_sched_copy(s, acc, in, bytes);
        pg_allreduce_recursive_doubling(s, acc, count);
    }
}

int pg_iallreduce_impl(struct pg_group *g, const void *in, void *out, size_t count,
                       const struct pg_op_spec *op, struct pg_req *req)
{
    struct pg_sched *s;
    int rc = pg_check_op(op);

    if (rc != PGC_OK) {
        return rc;
    }
    if (op->commutative && pg_hier_on(g)) {
        return pg_iallreduce_hier(g, in, out, count, op, req);
    }
    s = pg_sched_new(g, op, req);
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_ALLREDUCE, op, -1);
    if (pg_shm_usable(g, PG_SHM_ALLREDUCE, count * op->elem_size)) {
        pg_shm_sched(s, PG_SHM_ALLREDUCE, in, out, count, -1);
        return pg_sched_launch(s);
    }
    pg_sched_align_like(s, out);
    build_allreduce(s, in, out, count);
    return pg_sched_launch(s);
}

/* The forced algorithm's schedule, run here (lock held): out of line, so that the direct
 * path's question costs no request on its stack. */
__attribute__((noinline, cold)) static bool allreduce_forced_run(struct pg_group *g, const void *in,
                                                                 void *out, size_t count,
                                                                 const struct pg_op_spec *op,
                                                                 int *rc)
{
    struct pg_req req = {0};
    struct pg_sched *s = pg_sched_new(g, op, &req);

    if (!s) {
        *rc = PGC_ERR_NOMEM;
        return true;
    }
    pg_sched_sig(s, PG_COLL_ALLREDUCE, op, -1);
    pg_sched_align_like(s, out);
    build_allreduce(s, in, out, count);
    *rc = pg_sched_run(s);
    return true;
}

/* The direct path's question (lock held): whether MPISHIM_COLL_ALLREDUCE forces an
 * algorithm other than recursive doubling on g, and if so, that algorithm's schedule run here
 * (*rc its result), which the non-blocking form would run too. */
bool pg_allreduce_forced(struct pg_group *g, const void *in, void *out, size_t count,
                         const struct pg_op_spec *op, int *rc)
{
    if (g->size == 1 || allreduce_split(g, count, op) == AR_RD) {
        return false;
    }
    return allreduce_forced_run(g, in, out, count, op, rc);
}

/* Bruck's log-round allgather applies to equal blocks laid out in rank order; the ring
 * takes over for large totals, where its n-1 rounds cost less than Bruck's extra copies. */
static bool use_bruck(struct pg_group *g, const size_t *counts, const size_t *displs)
{
    size_t total = counts[0] * (size_t)g->size;

    for (int i = 0; i < g->size; i++) {
        if (counts[i] != counts[0] || displs[i] != (size_t)i * counts[0]) {
            return false;
        }
    }
    if (algo_is(MPS_CFG_COLL_ALLGATHER, "bruck") ||
        algo_is(MPS_CFG_COLL_ALLGATHER, "recursive_doubling")) {
        return true;
    }
    return algo_is(MPS_CFG_COLL_ALLGATHER, "auto") && total <= 65536 && g->size > 2;
}

int pg_iallgatherv(struct pg_group *g, const void *in, size_t inbytes, void *out,
                   const size_t *counts, const size_t *displs, struct pg_req *req)
{
    struct pg_sched *s = pg_sched_new(g, NULL, req);
    size_t *cd;

    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_ALLGATHER, NULL, -1);
    /* The schedule outlives the call: keep its own copy of the layout. */
    cd = pg_sched_alloc(s, sizeof(size_t) * 2 * (size_t)g->size);
    if (cd) {
        memcpy(cd, counts, sizeof(size_t) * (size_t)g->size);
        memcpy(cd + g->size, displs, sizeof(size_t) * (size_t)g->size);
        if (use_bruck(g, counts, displs)) {
            pg_sched_copy(s, (char *)out + displs[g->rank], in, inbytes);
            pg_sched_fence(s);
            pg_allgather_bruck(s, out, counts[0]);
        } else {
            pg_allgatherv_ring(s, in, out, cd, cd + g->size);
        }
    }
    return pg_sched_launch(s);
}

/* Equal blocks to and from every peer: one message each way per pair at once for a few
 * bytes on a small group, else the scheduled algorithms. */
static bool all_pairs_chosen(const struct pg_group *g, size_t block)
{
    return g->size <= PG_DIRECT_RANKS && block * (size_t)g->size <= 8 * PG_DIRECT_MAX;
}

/* The direct all-pairs allgather's messages as a schedule: what pg_allgather runs for the
 * same arguments, so that a rank may start it while its peers call the blocking form. */
static int iallgather_pairs(struct pg_group *g, const void *in, void *out, size_t bytes,
                            struct pg_req *req)
{
    struct pg_sched *s = pg_sched_new(g, NULL, req);

    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_ALLGATHER, NULL, -1);
    pg_sched_algo(s, "all pairs");
    for (int p = 0; p < g->size; p++) {
        if (p != g->rank) {
            pg_sched_recv(s, (char *)out + (size_t)p * bytes, bytes, p);
        }
    }
    for (int p = 0; p < g->size; p++) {
        if (p != g->rank) {
            pg_sched_send(s, in, bytes, p);
        }
    }
    pg_sched_copy(s, (char *)out + (size_t)g->rank * bytes, in, bytes);
    return pg_sched_launch(s);
}

int pg_iallgather_impl(struct pg_group *g, const void *in, void *out, size_t bytes,
                       struct pg_req *req)
{
    size_t *cd;
    int rc;

    if (pg_hier_on(g)) {
        return pg_iallgather_hier(g, in, out, bytes, req);
    }
    if (all_pairs_chosen(g, bytes)) {
        return iallgather_pairs(g, in, out, bytes, req);
    }
    cd = malloc(sizeof(size_t) * 2 * (size_t)g->size);
    if (!cd) {
        return mps_error(PGC_ERR_NOMEM, "no memory for an allgather over %d ranks", g->size);
    }
    for (int i = 0; i < g->size; i++) {
        cd[i] = bytes;
        cd[g->size + i] = (size_t)i * bytes;
    }
    rc = pg_iallgatherv(g, in, bytes, out, cd, cd + g->size, req);
    free(cd);
    return rc;
}

/*
 * The blocking forms, and the one place that chooses a blocking collective's path: one
 * round in shared memory (pg_coll_shm.c), the direct algorithms run from the caller's stack
 * (pg_coll_direct.c), or a schedule started and waited for. The choice reads only what
 * every rank of a legal program agrees on: the group, the bytes of the type signature, the
 * op and the root. A rank's buffers (contiguous or packed, in a heap or not, in place or
 * not) change how it copies, never which protocol the group runs: two ranks choosing
 * differently would never meet. The direct and scheduled forms of one algorithm send the
 * same messages with the same tags, so where both exist they may differ between ranks.
 * The non-blocking forms (pg_i*) take the same protocol for the same arguments: the
 * shared-memory ones as a schedule's poll step (pg_shm_sched), the direct ones as the
 * schedule of the same messages. MPI does not need that (its blocking collectives never
 * match non-blocking ones), but pgc does: torch's async_op is each rank's own choice, and
 * pgc's blocking calls run these forms.
 *
 * Before all of these, blocking and non-blocking (pg_i*_impl above): a group that spans
 * nodes with several ranks on a node runs node-aware (pg_coll_hier_<kind>.c): within each
 * node, among one leader per node, within each node again. The layout comes from the node
 * names every rank has alike (never from buffers), and reductions go that way only with a
 * commutative op, since each node reduces its own ranks first. The two forms run the same
 * steps; a blocking call made while a non-blocking one of this rank still has steps to
 * start runs the non-blocking form and waits (pg_hier_idle), so that the steps of both
 * start in call order on every rank.
 */
#define PG_BLOCKING(call)                                                                          \
    do {                                                                                           \
        struct pg_req req = {0};                                                                   \
        int rc_ = (call);                                                                          \
        return rc_ == PGC_OK ? pg_wait(&req, -1) : rc_;                                            \
    } while (0)

/* The scheduled paths stay out of line: the blocking forms' fast paths are then a check and
 * a tail call, with no request on their stack. */
#define PG_SLOW __attribute__((noinline, cold))

PG_SLOW static int barrier_sched(struct pg_group *g)
{
    PG_BLOCKING(pg_ibarrier(g, &req));
}

PG_SLOW static int bcast_sched(struct pg_group *g, void *buf, size_t bytes, int root)
{
    PG_BLOCKING(pg_ibcast(g, buf, bytes, root, &req));
}

PG_SLOW static int reduce_sched(struct pg_group *g, const void *in, void *out, size_t count,
                                const struct pg_op_spec *op, int root)
{
    PG_BLOCKING(pg_ireduce(g, in, out, count, op, root, &req));
}

PG_SLOW static int allreduce_sched(struct pg_group *g, const void *in, void *out, size_t count,
                                   const struct pg_op_spec *op)
{
    PG_BLOCKING(pg_iallreduce(g, in, out, count, op, &req));
}

PG_SLOW static int reduce_scatter_block_sched(struct pg_group *g, const void *in, void *out,
                                              size_t count, const struct pg_op_spec *op)
{
    PG_BLOCKING(pg_ireduce_scatter_block(g, in, out, count, op, &req));
}

PG_SLOW static int allgather_sched(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    PG_BLOCKING(pg_iallgather(g, in, out, bytes, &req));
}

PG_SLOW static int alltoall_sched(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    PG_BLOCKING(pg_ialltoall(g, in, out, bytes, &req));
}

int pg_barrier_impl(struct pg_group *g)
{
    if (pg_hier_on(g)) {
        return pg_hier_idle(g) ? pg_barrier_hier(g) : barrier_sched(g);
    }
    return pg_barrier_direct(g);
}

int pg_bcast_impl(struct pg_group *g, void *buf, size_t bytes, int root)
{
    if (pg_hier_on(g) && pg_check_root(g, root) == PGC_OK) {
        return pg_hier_idle(g) ? pg_bcast_hier(g, buf, bytes, root)
                               : bcast_sched(g, buf, bytes, root);
    }
    /* pg_bcast_direct_ok reads buf only to pick between the direct and the scheduled
     * binomial tree, which send the same messages. */
    if (pg_check_root(g, root) == PGC_OK && pg_bcast_direct_ok(g, buf, bytes)) {
        return pg_bcast_direct(g, buf, bytes, root);
    }
    return bcast_sched(g, buf, bytes, root);
}

int pg_reduce_impl(struct pg_group *g, const void *in, void *out, size_t count,
                   const struct pg_op_spec *op, int root)
{
    if (op->commutative && pg_hier_on(g) && pg_check_root(g, root) == PGC_OK &&
        pg_check_op(op) == PGC_OK) {
        return pg_hier_idle(g) ? pg_reduce_hier(g, in, out, count, op, root)
                               : reduce_sched(g, in, out, count, op, root);
    }
    if (count * op->elem_size <= PG_DIRECT_MAX) {
        return pg_reduce_direct(g, in, out, count, op, root);
    }
    return reduce_sched(g, in, out, count, op, root);
}

int pg_allreduce_impl(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op)
{
    if (op->commutative && pg_hier_on(g) && pg_check_op(op) == PGC_OK) {
        return pg_hier_idle(g) ? pg_allreduce_hier(g, in, out, count, op)
                               : allreduce_sched(g, in, out, count, op);
    }
    if (count * op->elem_size <= PG_DIRECT_MAX) {
        return pg_allreduce_direct(g, in, out, count, op);
    }
    return allreduce_sched(g, in, out, count, op);
}

/* Past the direct path: node-aware across nodes, else the pairwise schedule. Out of line,
 * so that the small calls' path stays a check and a tail call. */
PG_SLOW static int reduce_scatter_block_large(struct pg_group *g, const void *in, void *out,
                                              size_t count, const struct pg_op_spec *op)
{
    if (op->commutative && pg_hier_on(g) && pg_check_op(op) == PGC_OK) {
        return pg_hier_idle(g) ? pg_reduce_scatter_block_hier(g, in, out, count, op)
                               : reduce_scatter_block_sched(g, in, out, count, op);
    }
    return reduce_scatter_block_sched(g, in, out, count, op);
}

int pg_reduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                            const struct pg_op_spec *op)
{
    /* Up to PG_DIRECT_MAX in all: an allreduce, node-aware where it is. */
    if (count * op->elem_size * (size_t)g->size <= PG_DIRECT_MAX) {
        return pg_reduce_scatter_block_direct(g, in, out, count, op);
    }
    return reduce_scatter_block_large(g, in, out, count, op);
}

int pg_allgather_impl(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    if (pg_hier_on(g)) {
        return pg_hier_idle(g) ? pg_allgather_hier(g, in, out, bytes)
                               : allgather_sched(g, in, out, bytes);
    }
    if (all_pairs_chosen(g, bytes)) {
        return pg_allgather_direct(g, in, out, bytes);
    }
    return allgather_sched(g, in, out, bytes);
}

int pg_alltoall_impl(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    if (all_pairs_chosen(g, bytes)) {
        return pg_alltoall_direct(g, in, out, bytes);
    }
    return alltoall_sched(g, in, out, bytes);
}
