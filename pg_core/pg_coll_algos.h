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
