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

/* One round's combine of a child's partial result with mine, at cur (in, until a first child's
 * has been combined, or acc); returns where mine is now (acc). A commutative op receives
 * the first child's straight into acc and adds in there, so in is never copied first. */
static const void *combine(struct pg_sched *s, const void *cur, void *acc, void **tmp, size_t count,
                           int child)
{
    size_t bytes = count * s->op.elem_size;
    bool comm = s->op.commutative;

    if (comm && cur != acc) {
        pg_sched_recv(s, acc, bytes, child);
        pg_sched_reduce(s, cur, acc, count); /* acc = mine op received */
        return acc;
    }
    *tmp = *tmp ? *tmp : pg_sched_alloc(s, bytes);
    pg_sched_recv(s, *tmp, bytes, child);
    if (comm) {
        pg_sched_reduce(s, *tmp, acc, count); /* acc = received op acc */
    } else {
        pg_sched_reduce(s, cur, *tmp, count); /* tmp = mine op received */
        pg_sched_copy(s, acc, *tmp, bytes);
    }
    return acc;
}

void pg_reduce_binomial(struct pg_sched *s, const void *in, void *acc, size_t count, int root)
{
    int n = s->g->size, r = s->g->rank;
    bool comm = s->op.commutative;
    int base = pg_reduce_tree_base(comm, root);
    int vr = (r - base + n) % n, top = pg_tree_top(vr, n); /* the tree: pg_coll_steps.h */
    size_t bytes = count * s->op.elem_size;
    const void *cur = in; /* my partial result */
    void *tmp = NULL;

    pg_sched_algo(s, "the binomial tree");
    for (int m = 1; m < top; m <<= 1) {
        if (vr + m < n) {
            cur = combine(s, cur, acc, &tmp, count, pg_tree_rank(vr + m, base, n));
        }
    }
    if (vr != 0) {
        pg_sched_send(s, cur, bytes, pg_tree_rank(vr - top, base, n));
    } else {
        pg_sched_copy(s, acc, cur, bytes); /* a group of one: nothing came */
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
