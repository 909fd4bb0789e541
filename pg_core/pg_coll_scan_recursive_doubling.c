/*
 * Scan and exscan: recursive doubling (as in MPICH), any n.
 * In round k each rank exchanges with partner r ^ 2^k (when it exists) the "partial"
 * reduction of the block of 2^k ranks it heads; a rank adds what comes from a lower partner
 * to its result and to its partial, and what comes from a higher partner to its partial
 * only. The lower-ranked operand always goes first, so non-commutative ops work. Exscan
 * starts from an empty result (the first lower contribution is copied, not combined), so
 * rank 0's output is never written.
 * Cost: ceil(log2 n) (alpha + m beta + 2 m gamma).
 */
#include "config.h"

#include "pg_coll2.h"

void pg_scan_recursive_doubling(struct pg_sched *s, const void *in, void *out, size_t count,
                                bool exclusive)
{
    int n = s->g->size, r = s->g->rank;
    size_t bytes = count * s->op.elem_size;
    char *partial = pg_sched_alloc(s, bytes), *tmp = pg_sched_alloc(s, bytes);
    bool have = !exclusive;

    pg_sched_algo(s, "recursive doubling");
    if (!partial || !tmp) {
        return;
    }
    /* partial first: with in == out the result below overwrites the input. */
    pg_sched_copy(s, partial, in, bytes);
    if (!exclusive) {
        pg_sched_copy(s, out, in, bytes);
    }
    for (int mask = 1; mask < n; mask <<= 1) {
        int peer = r ^ mask;
        if (peer >= n) {
            continue;
        }
        pg_sched_send(s, partial, bytes, peer);
        pg_sched_recv(s, tmp, bytes, peer);
        if (peer < r) {
            if (have) {
                pg_sched_reduce(s, tmp, out, count); /* out = lower op out */
            } else {
                pg_sched_copy(s, out, tmp, bytes);
                have = true;
            }
            pg_sched_reduce(s, tmp, partial, count); /* partial = lower op partial */
        } else {
            pg_sched_reduce(s, partial, tmp, count); /* tmp = partial op higher */
            pg_sched_copy(s, partial, tmp, bytes);
        }
    }
}
