/*
 * Allreduce: Rabenseifner's algorithm (reduce-scatter by recursive halving, then allgather
 * by recursive doubling; Thakur, Rabenseifner, Gropp 2005), any n.
 * As in recursive doubling, the first 2*rem ranks fold pairwise so that p = 2^k remain.
 * Cost: 2 log2 p alpha + 2 (p-1)/p m beta + (p-1)/p m gamma (+ one full exchange each way
 * when n is not a power of two). Commutative ops only (halves are combined out of rank
 * order); for large messages, where it moves half the bytes recursive doubling does.
 * Out of place it reads the send buffer where the in-place form reads its accumulator, and
 * never copies it into the result first (halving_doubling).
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

/* The fold-in (pg_coll_steps.h) with my contribution in `in`, which may be acc (in place).
 * A rank that takes over its partner's data receives it into a buffer other than the one its
 * own data is in, and the sum goes there (the op commutes), so nothing is copied first.
 * Returns where my data stands after it: in, acc or tmp. */
static const char *fold_in(struct pg_sched *s, const char *in, char *acc, char *tmp, size_t count,
                           struct pg_fold *f)
{
    int r = s->g->rank;
    size_t bytes = count * s->op.elem_size;
    char *land = in == acc ? tmp : acc;

    *f = pg_fold_plan(s->g->size, r);
    if (f->vr < 0) {
        pg_sched_send(s, in, bytes, r + 1);
        pg_sched_recv(s, acc, bytes, r + 1);
        return acc;
    }
    if (!pg_fold_takes(f, r)) {
        return in;
    }
    pg_sched_recv(s, land, bytes, r - 1);
    pg_sched_reduce(s, in, land, count);
    return land;
}

/* The exchanges among the p remaining ranks; vr is my rank among them. My data starts at
 * src (the send buffer, acc or tmp) and ends, summed over my blocks, in acc. A halving step
 * whose data is not in acc yet receives the peer's half straight into acc and sums its own
 * there (acc = cur op peer's: the op commutes), so the caller's data is never copied into
 * acc first (out of place at 2 ranks that copy cost as much as the rest); later steps
 * receive into tmp and sum into acc. */
static void halving_doubling(struct pg_sched *s, const char *src, char *acc, char *tmp,
                             size_t count, const struct pg_fold *f)
{
    int p = f->p, vr = f->vr;
    size_t es = s->op.elem_size;
    int lo = 0, hi = p; /* the block range [lo, hi) I am responsible for */
    const char *cur = src;
    int mask;

    for (mask = p / 2; mask >= 1; mask /= 2) {
        int peer = vr ^ mask, mid = lo + (hi - lo) / 2;
        int keep_lo = vr < peer ? lo : mid, keep_hi = vr < peer ? mid : hi;
        int give_lo = vr < peer ? mid : lo, give_hi = vr < peer ? hi : mid;
        size_t g0 = block_start(count, p, give_lo), g1 = block_start(count, p, give_hi);
        size_t k0 = block_start(count, p, keep_lo), k1 = block_start(count, p, keep_hi);
        char *land = cur != acc ? acc : tmp;
        pg_sched_send(s, cur + g0 * es, (g1 - g0) * es, pg_fold_real_rank(f, peer));
        pg_sched_recv(s, land + k0 * es, (k1 - k0) * es, pg_fold_real_rank(f, peer));
        pg_sched_reduce(s, (land == acc ? cur : tmp) + k0 * es, acc + k0 * es, k1 - k0);
        cur = acc;
        lo = keep_lo;
        hi = keep_hi;
    }
    pg_sched_copy(s, acc, cur, count * es); /* a group of one: no step wrote acc */
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

void pg_allreduce_rabenseifner(struct pg_sched *s, const void *in, void *acc, size_t count)
{
    char *tmp = pg_sched_alloc(s, count * s->op.elem_size);
    struct pg_fold f;
    const char *src = fold_in(s, in, acc, tmp, count, &f);

    pg_sched_algo(s, "Rabenseifner");
    mps_stats_algo(MPS_ALGO_ALLREDUCE_RABENSEIFNER);
    if (f.vr < 0) {
        return;
    }
    halving_doubling(s, src, acc, tmp, count, &f);
    pg_fold_out(s, acc, count, &f);
}
