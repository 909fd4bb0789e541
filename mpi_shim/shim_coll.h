/*
 * shim_coll.h - helpers shared by the MPI collective files: argument checks, the
 * collective request, and waiting for it in the blocking forms.
 */
#ifndef SHIM_COLL_H
#define SHIM_COLL_H

#include "shim_req.h"
#include "pgc_status.h"

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
/*
 * A rank's side of a blocking collective (shim_coll.c): its buffers in the contiguous form
 * the group runs on, derived types packed into temporaries. pg_core's blocking forms then
 * choose the path from what every rank agrees on; nothing in the MPI layer picks one.
 *   shim_blk_begin  checks the communicator, count and type dt (MPI errors raised as fn);
 *   shim_blk_in     the packed input of count elements at buf (MPI_ERR_BUFFER if NULL,
 *                   after the rank stood in for it: stand_in in shim_coll.c);
 *   shim_blk_out    where the output lands, unpacked into buf by shim_blk_end;
 *   shim_blk_end    takes pg_core's status, unpacks, frees, raises a failure.
 */
struct shim_blk {
    const char *fn;
    MPI_Comm comm;
    struct shim_comm *c;
    struct shim_dtype *t;
    struct pg_op_spec spec;
    struct shim_op_call call; /* a user op's function and type, for the call's duration */
    size_t n;                 /* elements of spec (reductions) */
    struct shim_msgbuf in, out;
    void *ubuf; /* where out's temporary is unpacked, with ucount elements of ut */
    int ucount;
    struct shim_dtype *ut;
};

int shim_blk_begin(struct shim_blk *b, const char *fn, MPI_Comm comm, int count,
                   MPI_Datatype dt);
int shim_blk_in_pack(struct shim_blk *b, const void *buf, int count, struct shim_dtype *t,
                     const char *what);
int shim_blk_out_pack(struct shim_blk *b, void *buf, int count, struct shim_dtype *t,
                      const char *what);
int shim_blk_end_slow(struct shim_blk *b, int pgrc);

/* Whether buf serves as it is: a contiguous type, and a real buffer (or nothing to hold).
 * The common case of a small collective takes these inline paths: a few instructions
 * instead of calls, on the path of an 8-byte allreduce. */
static inline bool shim_blk_as_is(const void *buf, int count, const struct shim_dtype *t)
{
    return t->contig && buf != MPI_IN_PLACE && (buf || count == 0 || t->size == 0);
}

static inline int shim_blk_in(struct shim_blk *b, const void *buf, int count,
                              struct shim_dtype *t, const char *what)
{
    if (shim_blk_as_is(buf, count, t)) {
        b->in.ptr = (void *)buf;
        return MPI_SUCCESS;
    }
    return shim_blk_in_pack(b, buf, count, t, what);
}

static inline int shim_blk_out(struct shim_blk *b, void *buf, int count, struct shim_dtype *t,
                               const char *what)
{
    if (shim_blk_as_is(buf, count, t)) {
        b->out.ptr = buf;
        return MPI_SUCCESS;
    }
    return shim_blk_out_pack(b, buf, count, t, what);
}

static inline int shim_blk_end(struct shim_blk *b, int pgrc)
{
    if (pgrc == PGC_OK && !b->in.tmp && !b->out.tmp && !pg_coll_poison_pending()) {
        return MPI_SUCCESS;
    }
    return shim_blk_end_slow(b, pgrc);
}
/* MPI_Reduce_scatter_block, blocking (after the device dispatch). */
int shim_reduce_scatter_block_blk(const char *fn, const void *sendbuf, void *recvbuf,
                                  int recvcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm);

/* Packs input (send side) into r->tmp2 if needed; output into r->tmp with unpack at
 * completion. */
int shim_coll_in(struct shim_req *r, const void *buf, int count, struct shim_dtype *t,
                 const void **ptr);
int shim_coll_out(struct shim_req *r, void *buf, int count, struct shim_dtype *t, void **ptr);

#endif
