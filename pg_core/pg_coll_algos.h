/*
 * pg_coll_algos.h - the collective algorithms, one per file, each a schedule builder.
 * Each file opens with the algorithm's name and its cost in the alpha-beta model
 * (alpha: per-message latency, beta: per-byte time, gamma: per-byte reduction time;
 * n ranks, m bytes). The entry points in pg_coll.c choose one by size and group size,
 * overridable by MPISHIM_COLL_<NAME>.
 */
#ifndef PG_COLL_ALGOS_H
#define PG_COLL_ALGOS_H

#include "pg_coll_steps.h"
#include "pg_sched.h"

void pg_barrier_dissemination(struct pg_sched *s);
void pg_bcast_binomial(struct pg_sched *s, void *buf, size_t bytes, int root);
/* in: my contribution (const; may be acc); acc: where this rank sums its children's partial
 * results (scratch or the output buffer; NULL at a rank with no children, which sends in
 * as it is); on return (root only) the result. */
void pg_reduce_binomial(struct pg_sched *s, const void *in, void *acc, size_t count, int root);
/* Schedules my side of the fold-in (pg_coll_steps.h) and says where I stand: f.vr < 0
 * means folded out, all my steps scheduled. */
static inline struct pg_fold pg_fold_in(struct pg_sched *s, void *acc, void *tmp, size_t count)
{
    int r = s->g->rank;
    size_t bytes = count * s->op.elem_size;
    struct pg_fold f = pg_fold_plan(s->g->size, r);

    if (f.vr < 0) {
        pg_sched_send(s, acc, bytes, r + 1);
        pg_sched_recv(s, acc, bytes, r + 1);
    } else if (pg_fold_takes(&f, r)) {
        pg_sched_recv(s, tmp, bytes, r - 1);
        pg_sched_reduce(s, tmp, acc, count);
    }
    return f;
}

/* Schedules the result's way back to my folded-out partner, if I have one. */
static inline void pg_fold_out(struct pg_sched *s, void *acc, size_t count,
                               const struct pg_fold *f)
{
    if (pg_fold_takes(f, s->g->rank)) {
        pg_sched_send(s, acc, count * s->op.elem_size, s->g->rank - 1);
    }
}

void pg_allreduce_recursive_doubling(struct pg_sched *s, void *acc, size_t count);
/* in: my contribution, which may be acc (in place); acc: the result, on every rank. */
void pg_allreduce_ring(struct pg_sched *s, const void *in, void *acc, size_t count);
/* in: my contribution, which may be acc (in place); acc: the result, on every rank. */
void pg_allreduce_rabenseifner(struct pg_sched *s, const void *in, void *acc, size_t count);
void pg_bcast_scatter_allgather(struct pg_sched *s, void *buf, size_t bytes, int root);
/* out holds my block at rank * block on entry; every block on return. */
void pg_allgather_bruck(struct pg_sched *s, void *out, size_t block);
/* Block i (counts[i] bytes at displs[i] bytes into buf) comes from rank i; mine is at own
 * (which may be its place in buf) and is copied into place alongside the first step. */
void pg_allgatherv_ring(struct pg_sched *s, const void *own, void *buf, const size_t *counts,
                        const size_t *displs);

#endif
