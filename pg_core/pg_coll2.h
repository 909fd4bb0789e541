/*
 * pg_coll2.h - the remaining collectives on process groups: gather(v), scatter(v),
 * alltoall(v), reduce_scatter(_block), scan and exscan (entry points in pg_coll2.c), and the
 * schedule builders behind them (one algorithm per file, pg_coll_<name>_<algorithm>.c).
 *
 * Contract, as for the collectives of pg.h: each call starts a schedule that completes *req
 * (kind PG_REQ_COLL); counts and displacements are in bytes, except the reductions whose
 * counts are in elements of op->elem_size. Count and displacement arrays are copied, so the
 * caller may free them when the call returns; data buffers must stay valid until *req
 * completes. A call that returns an error starts nothing and never completes *req.
 * Arrays and buffers that the MPI standard calls "significant only at the root" may be NULL
 * elsewhere. Thread rules: as pg.h (the world lock is taken around the start).
 */
#ifndef PG_COLL2_H
#define PG_COLL2_H

#include "pg_sched.h"

/* Gather: the root receives bytes from each rank into out, block i at out + i * bytes.
 * At the root in == out + root * bytes is in place. Elsewhere out is unused. */
int pg_igather(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
               struct pg_req *req);
/* Gatherv: the root receives counts[i] bytes from rank i at out + displs[i]; the others
 * send inbytes from in. At the root inbytes must not exceed counts[root]
 * (PGC_ERR_TRUNCATE), and in == out + displs[root] is in place. */
int pg_igatherv(struct pg_group *g, const void *in, size_t inbytes, void *out, const size_t *counts,
                const size_t *displs, int root, struct pg_req *req);
/* Scatter: block i of the root's in (bytes at in + i * bytes) goes to rank i's out.
 * At the root out == in + root * bytes is in place. */
int pg_iscatter(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
                struct pg_req *req);
/* Scatterv: counts[i] bytes at in + displs[i] go to rank i, which receives at most
 * outbytes into out. At the root out == in + displs[root] is in place. */
int pg_iscatterv(struct pg_group *g, const void *in, const size_t *counts, const size_t *displs,
                 void *out, size_t outbytes, int root, struct pg_req *req);
/* Alltoall: block j of in (bytes at in + j * bytes) goes to rank j, which stores it as block
 * i of its out. in and out must not overlap (the MPI layer copies for MPI_IN_PLACE). */
int pg_ialltoall(struct pg_group *g, const void *in, void *out, size_t bytes, struct pg_req *req);
/* Alltoallv: scounts[j] bytes at in + sdispls[j] go to rank j; rcounts[i] bytes from rank
 * i land at out + rdispls[i]. My own block must satisfy scounts[me] <= rcounts[me]. */
int pg_ialltoallv(struct pg_group *g, const void *in, const size_t *scounts, const size_t *sdispls,
                  void *out, const size_t *rcounts, const size_t *rdispls, struct pg_req *req);
/* Reduce_scatter: in holds sum(counts) elements on every rank; rank i gets in out the
 * reduction (in rank order) of the i-th segment of counts[i] elements. in == out is allowed. */
int pg_ireduce_scatter(struct pg_group *g, const void *in, void *out, const size_t *counts,
                       const struct pg_op_spec *op, struct pg_req *req);
int pg_ireduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                             const struct pg_op_spec *op, struct pg_req *req);
/* Blocking forms (pg_coll.c's selection, like pg_allreduce): in and out of pg_alltoall
 * must not overlap; count is each rank's share, in elements of op->elem_size. */
int pg_alltoall_impl(struct pg_group *g, const void *in, void *out, size_t bytes);
int pg_reduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                            const struct pg_op_spec *op);
/* Scan: out on rank r = in_0 op ... op in_r. Exscan: out on rank r > 0 = in_0 op ... op
 * in_(r-1); rank 0's out is never written (it may be NULL). in == out is allowed. */
int pg_iscan(struct pg_group *g, const void *in, void *out, size_t count,
             const struct pg_op_spec *op, struct pg_req *req);
int pg_iexscan(struct pg_group *g, const void *in, void *out, size_t count,
               const struct pg_op_spec *op, struct pg_req *req);

/* ---- Schedule builders (one per file). ---- */

/* in: my block (bytes); at the root, out receives n blocks in rank order. */
void pg_gather_binomial(struct pg_sched *s, const void *in, void *out, size_t bytes, int root);
/* counts/displs (bytes) are significant at the root only and must outlive the schedule. */
void pg_gatherv_linear(struct pg_sched *s, const void *in, size_t inbytes, void *out,
                       const size_t *counts, const size_t *displs, int root);
void pg_scatter_binomial(struct pg_sched *s, const void *in, void *out, size_t bytes, int root);
void pg_scatterv_linear(struct pg_sched *s, const void *in, const size_t *counts,
                        const size_t *displs, void *out, size_t outbytes, int root);
/* Layout arrays must outlive the schedule (keep them in pg_sched_alloc memory). */
void pg_alltoallv_pairwise(struct pg_sched *s, const void *in, const size_t *scounts,
                           const size_t *sdispls, void *out, const size_t *rcounts,
                           const size_t *rdispls);
/* counts in elements, one per rank; counts must outlive the schedule. */
void pg_reduce_scatter_pairwise(struct pg_sched *s, const void *in, void *out,
                                const size_t *counts);
/* exclusive: exscan (rank 0's out untouched). */
void pg_scan_recursive_doubling(struct pg_sched *s, const void *in, void *out, size_t count,
                                bool exclusive);

#endif
