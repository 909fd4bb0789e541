/*
 * Allgather: Bruck's algorithm (Bruck et al. 1997), any n, equal blocks.
 * Blocks are gathered into scratch in the order r, r+1, ..., r+n-1; in round k each rank
 * sends its first min(2^k, n-2^k) blocks to rank - 2^k and receives as many from rank + 2^k;
 * a final local rotation puts them in rank order.
 * Cost: ceil(log2 n) alpha + (n-1)/n m beta (m: total bytes): for small messages.
 * Recursive doubling has the same cost when n is a power of two; Bruck also covers the rest.
 */
#include "config.h"

#include "mps_stats.h"
#include "pg_coll_algos.h"

void pg_allgather_bruck(struct pg_sched *s, void *out, size_t block)
{
    int n = s->g->size, r = s->g->rank;
    char *o = out;
    char *tmp = pg_sched_alloc(s, block * (size_t)n);

    pg_sched_algo(s, "Bruck's allgather");
    mps_stats_algo(MPS_ALGO_ALLGATHER_BRUCK);
    if (!tmp) {
        return;
    }
    pg_sched_copy(s, tmp, o + (size_t)r * block, block);
    for (int pof = 1; pof < n; pof *= 2) {
        int cnt = pof < n - pof ? pof : n - pof;
        pg_sched_send(s, tmp, (size_t)cnt * block, (r - pof + n) % n);
        pg_sched_recv(s, tmp + (size_t)pof * block, (size_t)cnt * block, (r + pof) % n);
        pg_sched_fence(s);
    }
    for (int i = 1; i < n; i++) {
        pg_sched_copy(s, o + (size_t)((r + i) % n) * block, tmp + (size_t)i * block, block);
    }
}
