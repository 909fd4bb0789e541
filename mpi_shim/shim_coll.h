/*
 * shim_coll.h - helpers shared by the MPI collective files: argument checks, the
 * collective request, and waiting for it in the blocking forms.
 */
#ifndef SHIM_COLL_H
#define SHIM_COLL_H

#include "shim_req.h"

/* The checks every communication call starts with: MPI initialized, comm valid, count >= 0,
 * and (when t is not NULL) dt a committed datatype, whose object goes to *t. */
int shim_coll_check(const char *fn, MPI_Comm comm, int count, MPI_Datatype dt,
                    struct shim_comm **c, struct shim_dtype **t);
int shim_coll_check_root(const char *fn, MPI_Comm comm, struct shim_comm *c, int root);
/* A collective request, or raises MPI_ERR_NO_MEM. */
int shim_coll_req(const char *fn, MPI_Comm comm, struct shim_req **r);
/* After starting the pg collective with status rc: on success hands out the handle, on
 * failure frees r and raises the error. */
int shim_coll_started(const char *fn, int rc, struct shim_req *r, MPI_Request *request);
/* The blocking forms: waits for the request, raising errors as fn. */
int shim_coll_wait(const char *fn, int rc, MPI_Request *request);
/* The blocking MPI_Reduce_scatter_block of a few bytes on pg_core's direct path; false
 * (nothing done) when the call does not qualify, and the general path runs. */
bool shim_reduce_scatter_block_direct(const char *fn, const void *sendbuf, void *recvbuf,
                                      int recvcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                      int *rc);
/* Packs input (send side) into r->tmp2 if needed; output into r->tmp with unpack at
 * completion. */
int shim_coll_in(struct shim_req *r, const void *buf, int count, struct shim_dtype *t,
                 const void **ptr);
int shim_coll_out(struct shim_req *r, void *buf, int count, struct shim_dtype *t, void **ptr);

#endif
