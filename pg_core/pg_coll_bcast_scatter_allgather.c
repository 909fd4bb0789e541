/*
 * Broadcast: scatter then allgather (van de Geijn; Thakur, Rabenseifner, Gropp 2005).
 * The root's buffer is cut into n chunks, scattered down a binomial tree (each subtree gets
 * its contiguous range), then a ring allgather completes every rank's copy.
 * Cost: (log2 n + n - 1) alpha + 2 (n-1)/n m beta: for large messages, against
 * log2 n (alpha + m beta) for the binomial tree.
 */
#include "config.h"

#include "mps_stats.h"
#include "pg_coll_algos.h"

static size_t chunk_off(size_t bytes, int n, int i)
{
    size_t chunk = (bytes + (size_t)n - 1) / (size_t)n;
    size_t off = (size_t)i * chunk;
    return off < bytes ? off : bytes;
}

/* Binomial scatter of chunk ranges, relative to the root. */
static void scatter_chunks(struct pg_sched *s, char *buf, size_t bytes, int root)
{
    int n = s->g->size, vr = (s->g->rank - root + n) % n;
    int mask = 1;

    while (mask < n) {
        if (vr & mask) {
            int end = vr + mask < n ? vr + mask : n;
            size_t a = chunk_off(bytes, n, vr), b = chunk_off(bytes, n, end);
            pg_sched_recv(s, buf + a, b - a, (vr - mask + root) % n);
            pg_sched_fence(s);
            break;
        }
        mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vr + mask < n) {
            int end = vr + 2 * mask < n ? vr + 2 * mask : n;
            size_t a = chunk_off(bytes, n, vr + mask), b = chunk_off(bytes, n, end);
            pg_sched_send(s, buf + a, b - a, (vr + mask + root) % n);
        }
    }
    pg_sched_fence(s);
}

void pg_bcast_scatter_allgather(struct pg_sched *s, void *buf, size_t bytes, int root)
{
    int n = s->g->size;
    size_t *cd = pg_sched_alloc(s, sizeof(size_t) * 2 * (size_t)n);

    pg_sched_algo(s, "scatter + allgather");
    mps_stats_algo(MPS_ALGO_BCAST_SCATTER_ALLGATHER);
    if (!cd) {
        return;
    }
    scatter_chunks(s, buf, bytes, root);
    /* Real rank r holds chunk (r - root) mod n. */
    for (int r = 0; r < n; r++) {
        int c = (r - root + n) % n;
        cd[n + r] = chunk_off(bytes, n, c);
        cd[r] = chunk_off(bytes, n, c + 1) - cd[n + r];
    }
    pg_allgatherv_ring(s, (char *)buf + cd[n + s->g->rank], buf, cd, cd + n);
}
