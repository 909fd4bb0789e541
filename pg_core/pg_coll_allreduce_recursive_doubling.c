/*
 * Allreduce: recursive doubling (Thakur, Rabenseifner, Gropp 2005), any n.
 * With p the largest power of two <= n and rem = n - p, the first 2*rem ranks pair up
 * (even sends to odd, which combines) so p ranks remain; they exchange full vectors with
 * partner rank ^ 2^k for log2 p rounds; then the odd ranks send the result back.
 * Cost: (log2 p + 2[rem>0]) (alpha + m beta + m gamma). Best for small messages.
 * Operand order: the lower-ranked operand always goes first, so non-commutative ops work.
 */
#include "config.h"

#include "mps_stats.h"
#include "pg_coll_algos.h"

/* acc = lower op higher, where "received" is the higher side when from_higher. */
static void combine(struct pg_sched *s, void *acc, void *tmp, size_t count, bool from_higher)
{
    if (from_higher) {
        pg_sched_reduce(s, acc, tmp, count);
        pg_sched_copy(s, acc, tmp, count * s->op.elem_size);
    } else {
        pg_sched_reduce(s, tmp, acc, count);
    }
}

void pg_allreduce_recursive_doubling(struct pg_sched *s, void *acc, size_t count)
{
    size_t bytes = count * s->op.elem_size;
    void *tmp = pg_sched_alloc(s, bytes);
    struct pg_fold f = pg_fold_in(s, acc, tmp, count);

    pg_sched_algo(s, "recursive doubling");
    mps_stats_algo(MPS_ALGO_ALLREDUCE_RECURSIVE_DOUBLING);
    if (f.vr < 0) {
        return;
    }
    for (int mask = 1; mask < f.p; mask <<= 1) {
        int partner = pg_fold_real_rank(&f, f.vr ^ mask);
        pg_sched_send(s, acc, bytes, partner);
        pg_sched_recv(s, tmp, bytes, partner);
        combine(s, acc, tmp, count, partner > s->g->rank);
    }
    pg_fold_out(s, acc, count, &f);
}
