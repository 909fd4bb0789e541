/*
 * Reduce: binomial tree.
 * Round k: ranks with bit k set send their partial result to rank - 2^k and drop out; the
 * others receive and combine. Cost: ceil(log2 n) (alpha + m beta + m gamma).
 * Operand order: the tree is built on ranks relative to 0, so the partial result of a rank
 * always covers a contiguous range of ranks below the one it receives, and
 * "mine op received" keeps MPI's rank order for non-commutative ops; the result then goes
 * from rank 0 to the root. Commutative ops rotate the tree to the root instead.
 */
#include "config.h"

#include "pg_coll_algos.h"

void pg_reduce_binomial(struct pg_sched *s, void *acc, size_t count, int root)
{
    int n = s->g->size, r = s->g->rank;
    bool comm = s->op.commutative;
    int base = pg_reduce_tree_base(comm, root);
    int vr = (r - base + n) % n, top = pg_tree_top(vr, n); /* the tree: pg_coll_steps.h */
    size_t bytes = count * s->op.elem_size;
    void *tmp = pg_sched_alloc(s, bytes);

    pg_sched_algo(s, "the binomial tree");
    for (int m = 1; m < top; m <<= 1) {
        if (vr + m < n) {
            pg_sched_recv(s, tmp, bytes, pg_tree_rank(vr + m, base, n));
            if (comm) {
                pg_sched_reduce(s, tmp, acc, count); /* acc = received op acc */
            } else {
                pg_sched_reduce(s, acc, tmp, count); /* tmp = acc op received */
                pg_sched_copy(s, acc, tmp, bytes);
            }
        }
    }
    if (vr != 0) {
        pg_sched_send(s, acc, bytes, pg_tree_rank(vr - top, base, n));
    }
    if (!comm && root != 0) {
        pg_sched_fence(s);
        if (r == 0) {
            pg_sched_send(s, acc, bytes, root);
        } else if (r == root) {
            pg_sched_recv(s, acc, bytes, 0);
        }
    }
}
