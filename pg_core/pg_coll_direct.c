/*
 * Blocking small collectives without a schedule: recursive-doubling allreduce, binomial
 * broadcast and reduce, dissemination barrier and the all-pairs allgather and alltoall, run
 * straight from the caller with requests on the stack. Same algorithms, messages and costs
 * as the schedule versions (pg_coll_<kind>_<algo>.c, and pg_coll.c's iallgather_pairs),
 * minus building and running a schedule, which for a few bytes costs more than the
 * messages themselves. Which peer each step talks to is computed once, for both forms, in
 * pg_coll_steps.h; what stays here is only how a step runs (post, wait, combine).
 * They take the group's next collective tag like a schedule does, so they mix freely with
 * non-blocking collectives in flight on the same group. Allreduce, broadcast and barrier of
 * a group within one node go through shared memory instead (pg_coll_shm.c), which sends no
 * message but takes the group's sequence number all the same (pg_coll_roll.c).
 */
#include "config.h"

#include "pg_internal.h"
#include "pg_coll_steps.h"
#include "mps_log.h"
#include "mps_stats.h"
#include "pgc_status.h"

#include <string.h>

const char *pg_direct_algo(unsigned kind)
{
    switch (kind) {
    case PG_COLL_ALLREDUCE:
        return "direct recursive doubling";
    case PG_COLL_BCAST:
    case PG_COLL_REDUCE:
        return "direct binomial tree";
    case PG_COLL_BARRIER:
        return "direct dissemination";
    default:
        return "direct all pairs";
    }
}

/* One exchange with a peer: send my buffer, receive theirs, wait for both. */
static int exchange(struct pg_group *g, uint64_t ctx, int tag, const void *out, size_t obytes,
                    void *in, size_t ibytes, int send_to, int recv_from)
{
    struct pg_req sr, rr;
    int rc = PGC_OK;

    pg_req_no_callback(&sr);
    pg_req_no_callback(&rr);
    if (recv_from >= 0) {
        rc = pg_irecv_ctx(g, ctx, in, ibytes, recv_from, tag, &rr);
    }
    if (rc == PGC_OK && send_to >= 0) {
        rc = pg_isend_ctx(g, ctx, out, obytes, send_to, tag, 0, &sr);
        if (rc == PGC_OK && !pg_req_is_done(&sr)) {
            rc = pg_wait_locked(&sr, -1);
        }
    }
    if (rc == PGC_OK && recv_from >= 0 && !pg_req_is_done(&rr)) {
        rc = pg_wait_locked(&rr, -1);
    } else if (rc != PGC_OK && recv_from >= 0 && !pg_req_is_done(&rr)) {
        pg_unpost_recv(&rr);
    }
    /* A mismatch has its message already (pg_coll_mismatch names both collectives). */
    if (rc == PGC_OK && recv_from >= 0 && rr.status == PGC_ERR_MISMATCH) {
        rc = rr.status;
    } else if (rc == PGC_OK && recv_from >= 0 && rr.status != PGC_OK) {
        rc = mps_error(rr.status, "collective message from rank %d: %s (do all ranks call the "
                       "same collectives with the same counts?)", recv_from,
                       pgc_strerror(rr.status));
    }
    return rc;
}

/* acc = lower op higher, whichever side received is: keeps rank order for any op. */
static int combine(const struct pg_op_spec *op, void *acc, void *tmp, size_t count,
                   bool from_higher)
{
    int rc;

    if (!from_higher) {
        return pg_op_apply(op, tmp, acc, count);
    }
    rc = pg_op_apply(op, acc, tmp, count);
    memcpy(acc, tmp, count * op->elem_size);
    return rc;
}

/* Recursive doubling with the fold of pg_coll_steps.h: the messages of
 * pg_coll_allreduce_recursive_doubling.c, exchanged at once. */
static int allreduce_rd(struct pg_group *g, uint64_t ctx, int tag, void *acc, void *tmp,
                        size_t count, const struct pg_op_spec *op)
{
    int r = g->rank;
    struct pg_fold f = pg_fold_plan(g->size, r);
    size_t bytes = count * op->elem_size;
    int rc = PGC_OK;

    if (f.vr < 0) {
        rc = exchange(g, ctx, tag, acc, bytes, NULL, 0, r + 1, -1);
        return rc == PGC_OK ? exchange(g, ctx, tag, NULL, 0, acc, bytes, -1, r + 1) : rc;
    }
    if (pg_fold_takes(&f, r)) {
        rc = exchange(g, ctx, tag, NULL, 0, tmp, bytes, -1, r - 1);
        rc = rc == PGC_OK ? combine(op, acc, tmp, count, false) : rc;
    }
    for (int mask = 1; mask < f.p && rc == PGC_OK; mask <<= 1) {
        int peer = pg_fold_real_rank(&f, f.vr ^ mask);
        rc = exchange(g, ctx, tag, acc, bytes, tmp, bytes, peer, peer);
        rc = rc == PGC_OK ? combine(op, acc, tmp, count, peer > r) : rc;
    }
    if (rc == PGC_OK && pg_fold_takes(&f, r)) {
        rc = exchange(g, ctx, tag, acc, bytes, NULL, 0, r - 1, -1);
    }
    return rc;
}

int pg_allreduce_direct(struct pg_group *g, const void *in, void *out, size_t count,
                        const struct pg_op_spec *op)
{
    unsigned char tmp[PG_DIRECT_MAX];
    int rc = pg_check_op(op);

    if (rc != PGC_OK || count * op->elem_size > PG_DIRECT_MAX) {
        return rc != PGC_OK ? rc
                            : mps_error(PGC_ERR_INVALID_COUNT, "%zu bytes exceed the direct path",
                                        count * op->elem_size);
    }
    PG_LOCK();
    if (pg_shm_usable(g, PG_SHM_ALLREDUCE, count * op->elem_size)) {
        mps_stats_algo(MPS_ALGO_ALLREDUCE_SHM);
        rc = pg_allreduce_shm(g, in, out, count, op);
    } else if (!pg_allreduce_forced(g, in, out, count, op, &rc)) {
        mps_stats_algo(MPS_ALGO_ALLREDUCE_DIRECT);
        if (in != out) {
            memcpy(out, in, count * op->elem_size);
        }
        rc = allreduce_rd(g, pg_ctx_coll(g), pg_coll_tag(g, pg_coll_sig(PG_COLL_ALLREDUCE, op, -1)),
                          out, tmp, count, op);
    }
    PG_UNLOCK();
    return rc;
}

int pg_reduce_scatter_block_direct(struct pg_group *g, const void *in, void *out, size_t count,
                                   const struct pg_op_spec *op)
{
    unsigned char all[PG_DIRECT_MAX];
    size_t block = count * op->elem_size;
    /* The allreduce's own selection (node-aware across nodes, else the direct one): pgc's
     * async form of this call runs pg_iallreduce, which a peer's blocking call must meet. */
    int rc = pg_allreduce_impl(g, in, all, count * (size_t)g->size, op);

    if (rc == PGC_OK) {
        memcpy(out, all + (size_t)g->rank * block, block);
    }
    return rc;
}

bool pg_bcast_direct_ok(const struct pg_group *g, const void *buf, size_t bytes)
{
    /* Past the eager size on more than 2 ranks the schedule measured faster (4 ranks on 2
     * cores, 64 KiB: 50 against 34 us). */
    return bytes <= PG_DIRECT_MAX ||
           ((bytes <= pg_eager_max(PG_SEND_ROOTED, buf) || g->size == 2) &&
            pg_bcast_binomial_chosen(g, bytes));
}

/* The binomial tree of pg_coll_steps.h: the messages of pg_coll_bcast_binomial.c. */
static int bcast_binomial(struct pg_group *g, void *buf, size_t bytes, int root)
{
    struct pg_req sends[32]; /* a binomial tree node has at most log2(INT_MAX) children */
    int n = g->size, vr = (g->rank - root + n) % n, top = pg_tree_top(vr, n), nsend = 0;
    int tag = pg_coll_tag(g, pg_coll_sig(PG_COLL_BCAST, NULL, root)), rc = PGC_OK;
    uint64_t ctx = pg_ctx_coll(g);

    if (vr != 0) {
        rc = exchange(g, ctx, tag, NULL, 0, buf, bytes, -1, pg_tree_rank(vr - top, root, n));
    }
    /* Every child's send in flight at once: a large (rendezvous) send completes only when
     * its child has the data, and the children copy in parallel. */
    for (int m = top >> 1; m > 0 && rc == PGC_OK; m >>= 1) {
        if (vr + m < n) {
            pg_req_no_callback(&sends[nsend]);
            rc = pg_isend_ctx(g, ctx, buf, bytes, pg_tree_rank(vr + m, root, n), tag,
                              PG_SEND_ROOTED, &sends[nsend++]);
        }
    }
    /* Every posted send is waited for, even after an error: its request is on this stack. */
    for (int i = 0; i < nsend; i++) {
        int st = pg_req_is_done(&sends[i]) ? sends[i].status : pg_wait_locked(&sends[i], -1);
        rc = rc == PGC_OK ? st : rc;
    }
    return rc;
}

int pg_bcast_direct(struct pg_group *g, void *buf, size_t bytes, int root)
{
    int rc = pg_check_root(g, root);

    if (rc != PGC_OK) {
        return rc;
    }
    PG_LOCK();
    rc = pg_shm_usable(g, PG_SHM_BCAST, bytes) ? pg_bcast_shm(g, buf, bytes, root)
                                               : bcast_binomial(g, buf, bytes, root);
    PG_UNLOCK();
    return rc;
}

static int barrier_dissemination(struct pg_group *g)
{
    int n = g->size, r = g->rank, rc = PGC_OK;
    int tag = pg_coll_tag(g, pg_coll_sig(PG_COLL_BARRIER, NULL, -1));

    for (int k = 1; k < n && rc == PGC_OK; k <<= 1) {
        rc = exchange(g, pg_ctx_coll(g), tag, NULL, 0, NULL, 0, pg_dissem_to(r, k, n),
                      pg_dissem_from(r, k, n));
    }
    return rc;
}

int pg_barrier_direct(struct pg_group *g)
{
    int rc;

    PG_LOCK();
    rc = pg_shm_usable(g, PG_SHM_BARRIER, 0) ? pg_barrier_shm(g) : barrier_dissemination(g);
    PG_UNLOCK();
    return rc;
}

/* Posts a receive from and a send to every other rank at once and waits for all: the
 * direct allgather and alltoall for small blocks on small groups (every message eager).
 * Peer p gets the block at in + p * send_stride and its block lands at out + p * block. */
static int all_pairs(struct pg_group *g, const char *in, size_t send_stride, char *out,
                     size_t block, enum pg_coll_kind kind)
{
    struct pg_req reqs[2 * PG_DIRECT_RANKS];
    uint64_t ctx = pg_ctx_coll(g);
    int n = g->size, r = g->rank, nreq = 0, tag, rc = PGC_OK;

    tag = pg_coll_tag(g, pg_coll_sig(kind, NULL, -1));
    for (int p = 0; p < n && rc == PGC_OK; p++) {
        if (p != r) {
            reqs[nreq].on_complete = NULL;
            rc = pg_irecv_ctx(g, ctx, out + (size_t)p * block, block, p, tag, &reqs[nreq++]);
        }
    }
    for (int p = 0; p < n && rc == PGC_OK; p++) {
        if (p != r) {
            reqs[nreq].on_complete = NULL;
            rc = pg_isend_ctx(g, ctx, in + (size_t)p * send_stride, block, p, tag, 0,
                              &reqs[nreq++]);
        }
    }
    for (int i = 0; i < nreq && rc == PGC_OK; i++) {
        rc = pg_req_is_done(&reqs[i]) ? reqs[i].status : pg_wait_locked(&reqs[i], -1);
    }
    for (int i = 0; i < nreq && rc != PGC_OK; i++) {
        if (reqs[i].kind == PG_REQ_RECV && !pg_req_is_done(&reqs[i])) {
            pg_unpost_recv(&reqs[i]);
        }
    }
    return rc;
}

static int check_direct_size(struct pg_group *g, size_t block)
{
    if (g->size > PG_DIRECT_RANKS || block * (size_t)g->size > PG_DIRECT_MAX * 8) {
        return mps_error(PGC_ERR_INVALID_COUNT, "%d ranks x %zu bytes exceed the direct path",
                         g->size, block);
    }
    return PGC_OK;
}

int pg_allgather_direct(struct pg_group *g, const void *in, void *out, size_t block)
{
    char *mine = (char *)out + (size_t)g->rank * block;
    int rc = check_direct_size(g, block);

    if (rc != PGC_OK) {
        return rc;
    }
    if (in != mine && block) { /* count 0 may come with NULL buffers */
        memcpy(mine, in, block);
    }
    PG_LOCK();
    /* Every peer gets the same block: a send stride of 0 over my own block. */
    rc = all_pairs(g, mine, 0, out, block, PG_COLL_ALLGATHER);
    PG_UNLOCK();
    return rc;
}

int pg_alltoall_direct(struct pg_group *g, const void *in, void *out, size_t block)
{
    size_t me = (size_t)g->rank * block;
    int rc = check_direct_size(g, block);

    if (rc != PGC_OK) {
        return rc;
    }
    if (block) { /* count 0 may come with NULL buffers */
        memcpy((char *)out + me, (const char *)in + me, block);
    }
    PG_LOCK();
    rc = all_pairs(g, in, block, out, block, PG_COLL_ALLTOALL);
    PG_UNLOCK();
    return rc;
}

/* The binomial tree of pg_coll_steps.h walked up: the messages of pg_coll_reduce_binomial.c
 * (which explains the operand order). */
static int reduce_binomial(struct pg_group *g, uint64_t ctx, int tag, void *acc, void *tmp,
                           size_t count, const struct pg_op_spec *op, int root)
{
    int n = g->size, r = g->rank, base = pg_reduce_tree_base(op->commutative, root);
    int vr = (r - base + n) % n, top = pg_tree_top(vr, n);
    size_t bytes = count * op->elem_size;
    int rc = PGC_OK;

    for (int m = 1; m < top && rc == PGC_OK; m <<= 1) {
        if (vr + m < n) {
            rc = exchange(g, ctx, tag, NULL, 0, tmp, bytes, -1, pg_tree_rank(vr + m, base, n));
            rc = rc == PGC_OK ? combine(op, acc, tmp, count, !op->commutative) : rc;
        }
    }
    if (rc == PGC_OK && vr != 0) {
        rc = exchange(g, ctx, tag, acc, bytes, NULL, 0, pg_tree_rank(vr - top, base, n), -1);
    }
    if (rc == PGC_OK && !op->commutative && root != 0 && (r == 0 || r == root)) {
        rc = r == 0 ? exchange(g, ctx, tag, acc, bytes, NULL, 0, root, -1)
                    : exchange(g, ctx, tag, NULL, 0, acc, bytes, -1, 0);
    }
    return rc;
}

int pg_reduce_direct(struct pg_group *g, const void *in, void *out, size_t count,
                     const struct pg_op_spec *op, int root)
{
    unsigned char tmp[PG_DIRECT_MAX], mine[PG_DIRECT_MAX];
    size_t bytes = count * op->elem_size;
    void *acc = g->rank == root ? out : mine;
    int rc = pg_check_op(op);

    if (rc == PGC_OK) {
        rc = pg_check_root(g, root);
    }
    if (rc == PGC_OK && bytes > PG_DIRECT_MAX) {
        rc = mps_error(PGC_ERR_INVALID_COUNT, "%zu bytes exceed the direct path", bytes);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (in != acc) {
        memcpy(acc, in, bytes);
    }
    PG_LOCK();
    rc = reduce_binomial(g, pg_ctx_coll(g), pg_coll_tag(g, pg_coll_sig(PG_COLL_REDUCE, op, root)),
                         acc, tmp, count, op, root);
    PG_UNLOCK();
    return rc;
}
