/*
 * Allgather(v): ring. In n-1 steps each rank forwards to rank + 1 the block it received
 * in the step before (its own first). Cost: (n-1) alpha + (n-1)/n m beta (m: total bytes).
 */
#include "config.h"

#include "mps_stats.h"
#include "pg_coll_algos.h"

void pg_allgatherv_ring(struct pg_sched *s, const void *own, void *buf, const size_t *counts,
                        const size_t *displs)
{
    int n = s->g->size, r = s->g->rank;
    int right = (r + 1) % n, left = (r - 1 + n) % n;
    char *b = buf;

    pg_sched_algo(s, "the ring");
    mps_stats_algo(MPS_ALGO_ALLGATHER_RING);
    for (int step = 0; step < n - 1; step++) {
        int sb = (r - step + n) % n, rb = (r - step - 1 + n) % n;
        pg_sched_send(s, step == 0 ? own : b + displs[sb], counts[sb], right);
        pg_sched_recv(s, b + displs[rb], counts[rb], left);
        if (step == 0) {
            /* My block into place while the first transfers run. */
            pg_sched_copy(s, b + displs[r], own, counts[r]);
        }
        pg_sched_fence(s);
    }
    if (n == 1) {
        pg_sched_copy(s, b + displs[r], own, counts[r]);
    }
}
