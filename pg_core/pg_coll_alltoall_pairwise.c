/*
 * Alltoall(v): pairwise exchange. In round k (1 <= k < n) rank r sends its block for r + k
 * and receives the block of r - k; rounds are issued in windows of PG_A2A_WINDOW, all
 * sends and receives of a window at once, with a fence between windows so that no more
 * than a window of rendezvous transfers per rank are in flight on large groups. Every pair
 * talks in the same window on both sides, so windows cannot deadlock.
 * Cost: (n-1) alpha + (n-1)/n m beta (m: the bytes a rank sends), with the latency of up to
 * PG_A2A_WINDOW rounds overlapped.
 */
#include "config.h"

#include "pg_coll2.h"

#define PG_A2A_WINDOW 8

void pg_alltoallv_pairwise(struct pg_sched *s, const void *in, const size_t *scounts,
                           const size_t *sdispls, void *out, const size_t *rcounts,
                           const size_t *rdispls)
{
    int n = s->g->size, r = s->g->rank;
    const char *i8 = in;
    char *o8 = out;

    pg_sched_algo(s, "pairwise exchange");
    for (int k0 = 1; k0 < n; k0 += PG_A2A_WINDOW) {
        for (int k = k0; k < k0 + PG_A2A_WINDOW && k < n; k++) {
            int src = (r - k + n) % n, dst = (r + k) % n;
            pg_sched_recv(s, o8 + rdispls[src], rcounts[src], src);
            pg_sched_send(s, i8 + sdispls[dst], scounts[dst], dst);
        }
        if (k0 == 1) {
            /* My own block while the first window's transfers run. */
            pg_sched_copy(s, o8 + rdispls[r], i8 + sdispls[r], scounts[r]);
        }
        pg_sched_fence(s);
    }
    if (n == 1) {
        pg_sched_copy(s, o8 + rdispls[r], i8 + sdispls[r], scounts[r]);
    }
}
