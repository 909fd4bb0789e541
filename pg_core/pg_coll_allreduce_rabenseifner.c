/*
 * Allreduce: Rabenseifner's algorithm (reduce-scatter by recursive halving, then allgather
 * by recursive doubling; Thakur, Rabenseifner, Gropp 2005), any n.
 * As in recursive doubling, the first 2*rem ranks fold pairwise so that p = 2^k remain.
 * Cost: 2 log2 p alpha + 2 (p-1)/p m beta + (p-1)/p m gamma (+ one full exchange each way
 * when n is not a power of two). Commutative ops only (halves are combined out of rank
 * order); for large messages, where it moves half the bytes recursive doubling does.
 */
#include "config.h"

#include "mps_stats.h"
#include "pg_coll_algos.h"

/* Element offset of block i of p over count elements (the first count % p blocks are one
 * element longer). */
static size_t block_start(size_t count, int p, int i)
{
    size_t base = count / (size_t)p, extra = count % (size_t)p;
    return (size_t)i * base + ((size_t)i < extra ? (size_t)i : extra);
}

/* The exchanges among the p remaining ranks; vr is my rank among them. */
static void halving_doubling(struct pg_sched *s, char *acc, char *tmp, size_t count,
                             const struct pg_fold *f)
{
    int p = f->p, vr = f->vr;
    size_t es = s->op.elem_size;
    int lo = 0, hi = p; /* the block range [lo, hi) I am responsible for */
    int mask;

    for (mask = p / 2; mask >= 1; mask /= 2) {
        int peer = vr ^ mask, mid = lo + (hi - lo) / 2;
        int keep_lo = vr < peer ? lo : mid, keep_hi = vr < peer ? mid : hi;
        int give_lo = vr < peer ? mid : lo, give_hi = vr < peer ? hi : mid;
        size_t g0 = block_start(count, p, give_lo), g1 = block_start(count, p, give_hi);
        size_t k0 = block_start(count, p, keep_lo), k1 = block_start(count, p, keep_hi);
        pg_sched_send(s, acc + g0 * es, (g1 - g0) * es, pg_fold_real_rank(f, peer));
        pg_sched_recv(s, tmp + k0 * es, (k1 - k0) * es, pg_fold_real_rank(f, peer));
        pg_sched_reduce(s, tmp + k0 * es, acc + k0 * es, k1 - k0);
        lo = keep_lo;
        hi = keep_hi;
    }
    for (mask = 1; mask < p; mask *= 2) {
        int peer = vr ^ mask, span = hi - lo;
        int plo = vr < peer ? hi : lo - span, phi = plo + span;
        size_t m0 = block_start(count, p, lo), m1 = block_start(count, p, hi);
        size_t p0 = block_start(count, p, plo), p1 = block_start(count, p, phi);
        pg_sched_send(s, acc + m0 * es, (m1 - m0) * es, pg_fold_real_rank(f, peer));
        pg_sched_recv(s, acc + p0 * es, (p1 - p0) * es, pg_fold_real_rank(f, peer));
        pg_sched_fence(s);
        lo = plo < lo ? plo : lo;
        hi = phi > hi ? phi : hi;
    }
}

void pg_allreduce_rabenseifner(struct pg_sched *s, void *acc, size_t count)
{
    char *tmp = pg_sched_alloc(s, count * s->op.elem_size);
    struct pg_fold f = pg_fold_in(s, acc, tmp, count);

    pg_sched_algo(s, "Rabenseifner");
    mps_stats_algo(MPS_ALGO_ALLREDUCE_RABENSEIFNER);
    if (f.vr < 0) {
        return;
    }
    halving_doubling(s, acc, tmp, count, &f);
    pg_fold_out(s, acc, count, &f);
}
