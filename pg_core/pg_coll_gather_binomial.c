/*
 * Gather: binomial tree rooted at root (the mirror of the binomial broadcast).
 * With ranks numbered relative to the root, a rank collects the blocks of its subtree (the
 * ranks vr .. vr + lowbit(vr) - 1) in relative order, then sends them to its parent in one
 * message; the root finally rotates the relative order back into rank order.
 * Cost: ceil(log2 n) alpha + (n-1)/n m beta (m: the bytes the root gathers). With n <= 2 the
 * tree has one level, so it is the linear gather.
 */
#include "config.h"

#include "pg_coll2.h"
#include "pg_coll_steps.h"
#include "pgc_status.h"

void pg_gather_binomial(struct pg_sched *s, const void *in, void *out, size_t bytes, int root)
{
    int n = s->g->size, vr = (s->g->rank - root + n) % n;
    int span = pg_tree_top(vr, n); /* the size of the block I head */
    int sub = span < n - vr ? span : n - vr;
    char *acc;

    pg_sched_algo(s, "the binomial tree");
    if (sub == 1 && vr != 0) {
        pg_sched_send(s, in, bytes, (vr - span + root) % n);
        return;
    }
    /* The root of rank 0 collects straight into the output: no rotation is needed. */
    acc = vr == 0 && root == 0 ? out : pg_sched_alloc(s, (size_t)sub * bytes);
    /* Only a failed allocation stops here: out may be NULL when bytes is 0, and the
     * children's (empty) messages must still be received. */
    if (s->status != PGC_OK) {
        return;
    }
    pg_sched_copy(s, acc, in, bytes);
    for (int mask = 1; mask < span && vr + mask < n; mask <<= 1) {
        int child = vr + mask, csub = mask < n - child ? mask : n - child;
        pg_sched_recv(s, acc + (size_t)mask * bytes, (size_t)csub * bytes, (child + root) % n);
    }
    pg_sched_fence(s);
    if (vr != 0) {
        pg_sched_send(s, acc, (size_t)sub * bytes, (vr - span + root) % n);
    } else if (root != 0) {
        /* Relative block j is rank (j + root) % n. */
        pg_sched_copy(s, (char *)out + (size_t)root * bytes, acc, (size_t)(n - root) * bytes);
        pg_sched_copy(s, out, acc + (size_t)(n - root) * bytes, (size_t)root * bytes);
    }
}
