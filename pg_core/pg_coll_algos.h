/*
 * pg_coll_algos.h - the collective algorithms, one per file, each a schedule builder.
 * Each file opens with the algorithm's name and its cost in the alpha-beta model
 * (alpha: per-message latency, beta: per-byte time, gamma: per-byte reduction time;
 * n ranks, m bytes). The entry points in pg_coll.c choose one by size and group size,
 * overridable by MPISHIM_COLL_<NAME>.
 */
#ifndef PG_COLL_ALGOS_H
#define PG_COLL_ALGOS_H

#include "pg_sched.h"

void pg_barrier_dissemination(struct pg_sched *s);
void pg_bcast_binomial(struct pg_sched *s, void *buf, size_t bytes, int root);
/* acc holds my contribution on entry; on return (root only) the result. acc must be
 * scratch or the output buffer: the algorithm reduces into it. */
void pg_reduce_binomial(struct pg_sched *s, void *acc, size_t count, int root);
/* The non-power-of-two fold the allreduce algorithms share (Thakur, Rabenseifner, Gropp):
 * with p the largest power of two <= n and rem = n - p, each even rank r < 2 * rem hands
 * its data to r + 1 (which combines, lower operand first) and waits for the result, so
 * that p ranks remain. */
struct pg_fold {
    int p, rem;
    int vr; /* my rank among the p that remain, or -1: folded out, all my steps scheduled */
};

/* Schedules my side of the fold-in and says where I stand. */
static inline struct pg_fold pg_fold_in(struct pg_sched *s, void *acc, void *tmp, size_t count)
{
    int n = s->g->size, r = s->g->rank;
    size_t bytes = count * s->op.elem_size;
    struct pg_fold f = {.p = 1};

    while (f.p * 2 <= n) {
        f.p *= 2;
    }
    f.rem = n - f.p;
    if (r < 2 * f.rem && r % 2 == 0) {
        pg_sched_send(s, acc, bytes, r + 1);
        pg_sched_recv(s, acc, bytes, r + 1);
        f.vr = -1;
        return f;
    }
    if (r < 2 * f.rem) {
        pg_sched_recv(s, tmp, bytes, r - 1);
        pg_sched_reduce(s, tmp, acc, count);
    }
    f.vr = r < 2 * f.rem ? r / 2 : r - f.rem;
    return f;
}

/* The real rank of the rank numbered vr among the p that remain. */
static inline int pg_fold_real_rank(const struct pg_fold *f, int vr)
{
    return vr < f->rem ? vr * 2 + 1 : vr + f->rem;
}

/* Schedules the result's way back to my folded-out partner, if I have one. */
static inline void pg_fold_out(struct pg_sched *s, void *acc, size_t count,
                               const struct pg_fold *f)
{
    if (s->g->rank < 2 * f->rem) {
        pg_sched_send(s, acc, count * s->op.elem_size, s->g->rank - 1);
    }
}

void pg_allreduce_recursive_doubling(struct pg_sched *s, void *acc, size_t count);
void pg_allreduce_ring(struct pg_sched *s, void *acc, size_t count);
void pg_allreduce_rabenseifner(struct pg_sched *s, void *acc, size_t count);
void pg_bcast_scatter_allgather(struct pg_sched *s, void *buf, size_t bytes, int root);
/* out holds my block at rank * block on entry; every block on return. */
void pg_allgather_bruck(struct pg_sched *s, void *out, size_t block);
/* Block i (counts[i] bytes at displs[i] bytes into buf) comes from rank i; mine is at own
 * (which may be its place in buf) and is copied into place alongside the first step. */
void pg_allgatherv_ring(struct pg_sched *s, const void *own, void *buf, const size_t *counts,
                        const size_t *displs);

#endif
