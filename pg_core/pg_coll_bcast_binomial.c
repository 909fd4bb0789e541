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
    int mask = 1;

    pg_sched_algo(s, "the binomial tree");
    mps_stats_algo(MPS_ALGO_BCAST_BINOMIAL);
    /* Find my parent: the lowest set bit of my relative rank. */
    while (mask < n) {
        if (vr & mask) {
            pg_sched_recv(s, buf, bytes, (vr - mask + root) % n);
            pg_sched_fence(s);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask < n) {
            pg_sched_send(s, buf, bytes, (vr + mask + root) % n);
        }
    }
}
