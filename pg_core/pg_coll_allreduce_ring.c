/*
 * Allreduce: ring (reduce-scatter then allgather around a ring; Patarasuk & Yuan 2009).
 * The vector is cut into n chunks; in n-1 steps each rank sends one chunk to rank + 1 and
 * combines the chunk from rank - 1, after which rank r holds the reduced chunk r + 1; n-1
 * more steps circulate the reduced chunks.
 * Cost: 2(n-1) alpha + 2 (n-1)/n m beta + (n-1)/n m gamma. Bandwidth-optimal; for large
 * messages and commutative ops only (each chunk is combined in ring order). Out of place
 * the send buffer is read where it is, never copied into the result first.
 */
#include "config.h"

#include "mps_stats.h"
#include "pg_coll_algos.h"

static size_t chunk_start(size_t count, int n, int i)
{
    size_t base = count / (size_t)n, extra = count % (size_t)n;
    return (size_t)i * base + ((size_t)i < extra ? (size_t)i : extra);
}

void pg_allreduce_ring(struct pg_sched *s, const void *in, void *acc, size_t count)
{
    int n = s->g->size, r = s->g->rank;
    int right = (r + 1) % n, left = (r - 1 + n) % n;
    size_t es = s->op.elem_size;
    size_t maxc = count / (size_t)n + 1;
    const char *mine = in;
    char *a = acc;
    bool place = mine == a; /* in place: received chunks wait in tmp */
    char *tmp = place ? pg_sched_alloc(s, maxc * es) : NULL;

    pg_sched_algo(s, "the ring");
    mps_stats_algo(MPS_ALGO_ALLREDUCE_RING);
    if (n == 1) {
        pg_sched_copy(s, a, mine, count * es); /* no step writes acc */
    }
    for (int step = 0; step < n - 1; step++) {
        int sc = (r - step + n) % n, rc = (r - step - 1 + n) % n;
        size_t s0 = chunk_start(count, n, sc), s1 = chunk_start(count, n, sc + 1);
        size_t r0 = chunk_start(count, n, rc), r1 = chunk_start(count, n, rc + 1);
        /* The chunk sent first is this rank's own; each later one was summed the step before.
         * Each chunk received meets this rank's own part of it, still in `in`: out of place
         * it lands in acc and the op adds in there (a = mine op received). */
        pg_sched_send(s, (step == 0 ? mine : a) + s0 * es, (s1 - s0) * es, right);
        pg_sched_recv(s, place ? tmp : a + r0 * es, (r1 - r0) * es, left);
        pg_sched_reduce(s, place ? tmp : mine + r0 * es, a + r0 * es, r1 - r0);
    }
    for (int step = 0; step < n - 1; step++) {
        int sc = (r + 1 - step + n) % n, rc = (r - step + n) % n;
        size_t s0 = chunk_start(count, n, sc), s1 = chunk_start(count, n, sc + 1);
        size_t r0 = chunk_start(count, n, rc), r1 = chunk_start(count, n, rc + 1);
        pg_sched_send(s, a + s0 * es, (s1 - s0) * es, right);
        pg_sched_recv(s, a + r0 * es, (r1 - r0) * es, left);
        pg_sched_fence(s);
    }
}
