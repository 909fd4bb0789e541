/*
 * Reduce_scatter(_block): pairwise exchange, then a local reduction in rank order.
 * Each rank sends segment j of its input to rank j (an alltoallv in windows, as in
 * pg_coll_alltoall_pairwise.c) and receives every rank's copy of its own segment into
 * scratch slot i (i: the sender); it then folds the slots from the right,
 * x0 op (x1 op (... op x(n-1))), so the result keeps MPI's rank order and non-commutative
 * ops are correct.
 * Cost: (n-1) alpha + (n-1)/n m beta + (n-1)/n m gamma (m: the bytes of the whole input
 * vector, equal segments), and m/n * n bytes of scratch per rank.
 */
#include "config.h"

#include "pg_coll2.h"

#define PG_RS_WINDOW 8

void pg_reduce_scatter_pairwise(struct pg_sched *s, const void *in, void *out, const size_t *counts)
{
    int n = s->g->size, r = s->g->rank;
    size_t es = s->op.elem_size, mine = counts[r] * es, off = 0;
    size_t *offs = pg_sched_alloc(s, sizeof(size_t) * (size_t)n);
    char *slots = pg_sched_alloc(s, mine * (size_t)n);
    const char *i8 = in;

    pg_sched_algo(s, "pairwise exchange");
    if (!offs || !slots) {
        return;
    }
    for (int i = 0; i < n; i++) {
        offs[i] = off;
        off += counts[i] * es;
    }
    pg_sched_copy(s, slots + (size_t)r * mine, i8 + offs[r], mine);
    for (int k0 = 1; k0 < n; k0 += PG_RS_WINDOW) {
        for (int k = k0; k < k0 + PG_RS_WINDOW && k < n; k++) {
            int src = (r - k + n) % n, dst = (r + k) % n;
            pg_sched_recv(s, slots + (size_t)src * mine, mine, src);
            pg_sched_send(s, i8 + offs[dst], counts[dst] * es, dst);
        }
        pg_sched_fence(s);
    }
    /* acc = x_i op acc, from rank n-2 down to 0; the accumulator is slot n-1. */
    for (int i = n - 2; i >= 0; i--) {
        pg_sched_reduce(s, slots + (size_t)i * mine, slots + (size_t)(n - 1) * mine, counts[r]);
    }
    pg_sched_copy(s, out, slots + (size_t)(n - 1) * mine, mine);
}
