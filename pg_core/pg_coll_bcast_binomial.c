/*
 * Broadcast: binomial tree rooted at root.
 * A rank receives from its parent once, then sends to its children, largest subtree first.
 * Cost: ceil(log2 n) (alpha + m beta).
 */
#include "config.h"

#include "mps_stats.h"
#include "pg_coll_algos.h"

void pg_bcast_binomial(struct pg_sched *s, void *buf, size_t bytes, int root)
{
    int n = s->g->size, vr = (s->g->rank - root + n) % n;
    int top = pg_tree_top(vr, n); /* the tree: pg_coll_steps.h */

    pg_sched_algo(s, "the binomial tree");
    mps_stats_algo(MPS_ALGO_BCAST_BINOMIAL);
    if (vr != 0) {
        pg_sched_recv(s, buf, bytes, pg_tree_rank(vr - top, root, n));
        pg_sched_fence(s);
    }
    for (int m = top >> 1; m > 0; m >>= 1) {
        if (vr + m < n) {
            pg_sched_send(s, buf, bytes, pg_tree_rank(vr + m, root, n));
        }
    }
}
