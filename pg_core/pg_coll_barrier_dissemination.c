/*
 * Barrier: dissemination (Hensgen, Finkel, Manber 1988).
 * Round k: send an empty message to rank + 2^k and receive one from rank - 2^k.
 * Cost: ceil(log2 n) alpha, for any n (no power-of-two restriction).
 */
#include "config.h"

#include "mps_stats.h"
#include "pg_coll_algos.h"

void pg_barrier_dissemination(struct pg_sched *s)
{
    int n = s->g->size, r = s->g->rank;

    pg_sched_algo(s, "dissemination");
    mps_stats_algo(MPS_ALGO_BARRIER_DISSEMINATION);
    for (int k = 1; k < n; k <<= 1) {
        pg_sched_send(s, NULL, 0, pg_dissem_to(r, k, n));
        pg_sched_recv(s, NULL, 0, pg_dissem_from(r, k, n));
        pg_sched_fence(s);
    }
}
