/*
 * shim_req.h - MPI requests: a pg_req plus what MPI needs around it (the communicator for
 * errors, a temporary packed buffer to unpack or free at completion, persistence).
 *
 * Requests come from a pool (no malloc per message once warm) and their memory never
 * moves, because pg_core and the fabric hold pointers into them while they are in flight.
 */
#ifndef SHIM_REQ_H
#define SHIM_REQ_H

#include "shim.h"
#include "shim_datatype.h"
#include "pg.h"
#include "shim_comm.h"

enum shim_req_kind { SHIM_REQ_SEND, SHIM_REQ_RECV, SHIM_REQ_COLL, SHIM_REQ_GREQ };

struct shim_req;
/* Runs once when the pg request completes (unpack, free temporaries); may set an error. */
typedef int (*shim_req_finish_fn)(struct shim_req *r);

/* A persistent request's arguments, replayed by MPI_Start. */
struct shim_persist {
    const void *buf;
    int count;
    MPI_Datatype dt;
    int peer, tag;
    bool sync;
    bool buffered; /* MPI_Bsend_init: each start copies the message out (shim_bsend.c) */
    struct shim_dtype *type; /* dt, retained until the request is freed */
};

struct shim_req {
    struct pg_req pr;
    enum shim_req_kind kind;
    MPI_Comm comm;
    int handle;
    bool persistent, active, finished;
    shim_req_finish_fn finish;
    void *tmp;                  /* owned temporary (packed data), freed at completion */
    void *tmp2;                 /* a second one (collectives with two packed buffers) */
    void *ubuf;                 /* receive: the user's buffer to unpack into */
    size_t ucount;
    struct shim_dtype *utype;   /* retained while pending */
    struct shim_persist p;
    int error;                  /* the MPI error class it completed with */
    struct shim_op_call opcall; /* a user op's function and type, for the collective's life */
    struct shim_greq *greq;     /* a generalized request's callbacks (shim_greq.c), or NULL */
};

/* Generalized requests (shim_greq.c). shim_greq_query fills st through the user's query
 * callback at completion and returns its error class; shim_greq_release calls the free
 * callback (when the request is freed); shim_greq_cancel calls the cancel callback. */
struct shim_greq;
int shim_greq_query(struct shim_req *r, MPI_Status *st);
void shim_greq_release(struct shim_req *r);
void shim_greq_cancel(struct shim_req *r);
/* MPI_Request_free of a generalized request the user has not completed yet: it is freed
 * (free callback included) by MPI_Grequest_complete instead. Returns true in that case. */
bool shim_greq_orphan(struct shim_req *r);

/* A request from the pool, zeroed, with a handle. NULL when out of memory. */
struct shim_req *shim_req_new(enum shim_req_kind kind, MPI_Comm comm);
/* The same for pg_isend/pg_irecv, which set up the pg part themselves: only its callback
 * is cleared, the rest of the 200 bytes not (a small message's path). */
struct shim_req *shim_req_new_p2p(enum shim_req_kind kind, MPI_Comm comm);
/* A collective's request that is complete already, in *request (a blocking operation behind
 * a non-blocking name): MPI_SUCCESS, or MPI_ERR_NO_MEM raised on comm by fn. */
int shim_req_done(MPI_Comm comm, const char *fn, MPI_Request *request);
/* The handle of every standard-mode send that completed as it started (pg_send_now: a
 * small message, copied out at once): one shared request, complete, that waits and tests
 * find done and freeing leaves alone, so such a send costs no pooled request (MPICH's
 * lightweight requests do the same). */
#define SHIM_REQ_SENT ((MPI_Request)MPISHIM_HANDLE_MAKE(MPISHIM_KIND_BUILTIN, MPISHIM_OBJ_REQUEST, 1))
/* The request of a handle, or NULL (MPI_REQUEST_NULL or invalid). */
struct shim_req *shim_req_get(MPI_Request h);
/* Back to the pool (frees temporaries, releases the type). */
void shim_req_free(struct shim_req *r);
/* A request whose operation is still under way after its wait gave up (a timeout, a dead
 * peer): the transport may still read its buffers and complete it, so nothing of it is
 * freed or reused; its handle stops naming it. */
void shim_req_abandon(struct shim_req *r);
/* MPI_Start of an MPI_Bsend_init request (shim_bsend.c): copies the message out against
 * the attached buffer, as MPI_Bsend does, and leaves r active and already complete. */
int shim_bsend_start(struct shim_req *r);

/* Packed-buffer helpers shared by point-to-point and collectives. */
struct shim_msgbuf {
    void *ptr;     /* where the packed bytes are (the user's buffer when contiguous) */
    size_t bytes;  /* count * size */
    void *tmp;     /* a temporary to free, or NULL */
};
/* Send side: packs non-contiguous data into a temporary. MPI_SUCCESS or MPI_ERR_NO_MEM. */
int shim_msgbuf_send(const void *buf, int count, const struct shim_dtype *t,
                     struct shim_msgbuf *mb);
/* Receive side: a temporary when the type is not contiguous. */
int shim_msgbuf_recv(void *buf, int count, const struct shim_dtype *t, struct shim_msgbuf *mb);
/* Hands a receive msgbuf to r: at completion the received bytes are unpacked into buf. */
void shim_req_attach_recv(struct shim_req *r, struct shim_msgbuf *mb, void *buf, int count,
                          struct shim_dtype *t);

/* Fill an MPI_Status (ignored when st is MPI_STATUS_IGNORE) from a pg request, or as an
 * empty one. Neither writes MPI_ERROR (see shim_status_set). */
void shim_status_set(MPI_Status *st, const struct pg_req *pr, int error);
void shim_status_empty(MPI_Status *st);

/* Completes r (the request of *h), whose pg part is done: runs finish, fills the status,
 * and frees it (or makes a persistent one inactive); *h becomes MPI_REQUEST_NULL for freed
 * ones. Returns the MPI error class of the operation. */
int shim_req_complete(struct shim_req *r, MPI_Request *h, MPI_Status *st);

/* MPI_Wait that raises errors in the name of fn (a blocking call built on its I-form). */
int shim_wait_named(MPI_Request *request, MPI_Status *status, const char *fn);

/* The error class of a finished pg request (MPI_SUCCESS if it succeeded), its cause raised
 * on comm in the name of fn. */
int shim_raise_pg_req(MPI_Comm comm, const char *fn, const struct pg_req *pr);
int shim_req_raise(struct shim_req *r, const char *fn);

#endif
