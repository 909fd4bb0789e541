/*
 * shim_coll.c - MPI barrier, broadcast, reduce and allreduce (blocking and non-blocking)
 * on pg_core's schedules. A blocking collective is its non-blocking form and a wait.
 */
#include "config.h"

#include "shim_coll.h"
#include "shim_inter.h"
#include "shim_device.h"
#include "pg_coll2.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int shim_coll_check(const char *fn, MPI_Comm comm, int count, MPI_Datatype dt,
                    struct shim_comm **c, struct shim_dtype **t)
{
    int rc = shim_comm_enter(fn, comm, c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (count < 0) {
        return shim_error(comm, fn, MPI_ERR_COUNT, "count %d is negative", count);
    }
    if (t && shim_dtype_check_comm(dt, t) != MPI_SUCCESS) {
        return shim_error(comm, fn, MPI_ERR_TYPE, "%s", mps_last_error());
    }
    return MPI_SUCCESS;
}

int shim_coll_check_root(const char *fn, MPI_Comm comm, struct shim_comm *c, int root)
{
    if (root < 0 || root >= c->g->size) {
        return shim_error(comm, fn, MPI_ERR_ROOT, "root %d is not in the communicator (size %d)",
                          root, c->g->size);
    }
    return MPI_SUCCESS;
}

int shim_coll_req(const char *fn, MPI_Comm comm, struct shim_req **r)
{
    *r = shim_req_new(SHIM_REQ_COLL, comm);
    return *r ? MPI_SUCCESS : shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a request");
}

int shim_coll_started(const char *fn, int rc, struct shim_req *r, MPI_Request *request)
{
    if (rc != PGC_OK) {
        MPI_Comm comm = r->comm;
        shim_req_free(r);
        return shim_error_pg(comm, fn, rc);
    }
    *request = r->handle;
    return MPI_SUCCESS;
}

int shim_coll_wait(const char *fn, int rc, MPI_Request *request)
{
    struct shim_req *r;

    shim_outer_fn = NULL;
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    r = shim_req_get(*request);
    rc = pg_wait(&r->pr, -1);
    if (!pg_req_is_done(&r->pr)) {
        return shim_error(r->comm, fn, shim_errclass(rc), "%s", mps_last_error());
    }
    rc = r->pr.status != PGC_OK ? shim_error_pg(r->comm, fn, r->pr.status) : MPI_SUCCESS;
    shim_req_complete(r, request, MPI_STATUS_IGNORE);
    return rc;
}

int shim_coll_in(struct shim_req *r, const void *buf, int count, struct shim_dtype *t,
                 const void **ptr)
{
    struct shim_msgbuf mb;
    int rc = shim_msgbuf_send(buf, count, t, &mb);

    r->tmp2 = mb.tmp;
    *ptr = mb.ptr;
    return rc == MPI_SUCCESS ? rc : shim_error(r->comm, "MPI collective", rc, "no memory to pack");
}

int shim_coll_out(struct shim_req *r, void *buf, int count, struct shim_dtype *t, void **ptr)
{
    struct shim_msgbuf mb;
    int rc = shim_msgbuf_recv(buf, count, t, &mb);

    if (rc != MPI_SUCCESS) {
        return shim_error(r->comm, "MPI collective", rc, "no memory for the result");
    }
    shim_req_attach_recv(r, &mb, buf, count, t);
    *ptr = mb.ptr;
    return MPI_SUCCESS;
}

static int ibarrier_impl(MPI_Comm comm, MPI_Request *request, const char *fn)
{
    struct shim_comm *c;
    struct shim_req *r;
    int rc = shim_coll_check(fn, comm, 0, MPI_DATATYPE_NULL, &c, NULL);

    if (rc == MPI_SUCCESS) {
        rc = shim_coll_req(fn, comm, &r);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return shim_coll_started(fn, pg_ibarrier(c->g, &r->pr), r, request);
}

#pragma weak MPI_Ibarrier = PMPI_Ibarrier
int PMPI_Ibarrier(MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_barrier(SHIM_FN, comm, request);
    }
    return ibarrier_impl(comm, request, SHIM_FN);
}

/*
 * The blocking collectives. Each checks its arguments, brings this rank's buffers to the
 * contiguous form the group runs on (packing a derived type into a temporary) and calls
 * pg_core's blocking form, which alone chooses the path from what every rank agrees on.
 * Nothing here may depend on a rank-local property to pick a path: a root sending 4 x
 * MPI_INT and a receiver taking one strided vector of 4 ints must meet.
 */

/* A rank whose buffer is unusable still takes part in the collective, with zeroed scratch
 * of the buffer's size in m and a poisoned signature (pg.h), so that the ranks reading its
 * data fail at once with MPI_ERR_BUFFER instead of waiting for it until the timeout. It
 * returns its own error rc at the end (shim_blk_end_slow). Where pg_core cannot carry the
 * poison (pg_coll_poison_ok) or without memory for the scratch, it returns rc at once. */
static int stand_in(struct shim_blk *b, struct shim_msgbuf *m, int count,
                    const struct shim_dtype *t, int rc)
{
    size_t bytes = (size_t)count * t->size;

    if (!pg_coll_poison_ok(b->c->g) || !(m->tmp = calloc(bytes ? bytes : 1, 1))) {
        return rc;
    }
    m->ptr = m->tmp;
    if (!b->c->g->poison_next) {
        pg_coll_stand_in(b->c->g, rc);
    }
    return MPI_SUCCESS;
}

/* A buffer of count elements of t that is NULL can hold nothing; MPI_IN_PLACE reaches here
 * only where MPI does not allow it. Either way this rank stands in (above). */
static int check_buf(struct shim_blk *b, struct shim_msgbuf *m, const void *buf, int count,
                     const struct shim_dtype *t, const char *what)
{
    int rc = MPI_SUCCESS;

    if (buf == MPI_IN_PLACE) {
        rc = shim_error(b->comm, b->fn, MPI_ERR_BUFFER, "%s may not be MPI_IN_PLACE", what);
    } else if (!buf && count > 0 && t->size > 0) {
        rc = shim_error(b->comm, b->fn, MPI_ERR_BUFFER, "%s is NULL with count %d", what,
                        count);
    }
    return rc == MPI_SUCCESS ? rc : stand_in(b, m, count, t, rc);
}

/* Inlined into the blocking reductions, whose few-byte calls are the ones that count. */
static inline __attribute__((always_inline)) int blk_begin(struct shim_blk *b, const char *fn,
                                                           MPI_Comm comm, int count,
                                                           MPI_Datatype dt)
{
    /* Only what shim_blk_end reads and a side left unset must hold: a memset of the whole
     * struct costs a measurable share of an 8-byte allreduce. */
    b->fn = fn;
    b->comm = comm;
    b->in = (struct shim_msgbuf){0};
    b->out = (struct shim_msgbuf){0};
    /* Valid arguments pass the cheap lookups; anything else takes the full check, which
     * raises the precise error. */
    if (shim_initialized() && count >= 0 && shim_comm_get(comm, &b->c) == MPI_SUCCESS &&
        dt != MPI_LB && dt != MPI_UB && shim_dtype_lookup(dt, &b->t) == MPI_SUCCESS &&
        b->t->committed) {
        return MPI_SUCCESS;
    }
    int rc = shim_coll_check(fn, comm, count, dt, &b->c, &b->t);

    if (rc != MPI_SUCCESS) {
        b->c = NULL; /* no group: shim_blk_end has nothing to claim */
    }
    return rc;
}

int shim_blk_begin(struct shim_blk *b, const char *fn, MPI_Comm comm, int count,
                   MPI_Datatype dt)
{
    return blk_begin(b, fn, comm, count, dt);
}

/* The input side: the packed form of count elements at buf. */
int shim_blk_in_pack(struct shim_blk *b, const void *buf, int count, struct shim_dtype *t,
                     const char *what)
{
    int rc = check_buf(b, &b->in, buf, count, t, what);

    if (rc == MPI_SUCCESS && !b->in.tmp &&
        shim_msgbuf_send(buf, count, t, &b->in) != MPI_SUCCESS) {
        rc = shim_error(b->comm, b->fn, MPI_ERR_NO_MEM, "no memory to pack %s", what);
    }
    return rc;
}

/* The output side: where the result lands, unpacked into buf at the end. */
int shim_blk_out_pack(struct shim_blk *b, void *buf, int count, struct shim_dtype *t,
                      const char *what)
{
    int rc = check_buf(b, &b->out, buf, count, t, what);

    if (rc == MPI_SUCCESS && !b->out.tmp &&
        shim_msgbuf_recv(buf, count, t, &b->out) != MPI_SUCCESS) {
        rc = shim_error(b->comm, b->fn, MPI_ERR_NO_MEM, "no memory for %s", what);
    }
    b->ubuf = buf;
    b->ucount = count;
    b->ut = t;
    return rc;
}

/* Ends a blocking collective whose pg_core call returned pgrc: unpacks the result, frees
 * the temporaries and raises a failure through the communicator's handler. */
int shim_blk_end_slow(struct shim_blk *b, int pgrc)
{
    /* A poisoned collective of this group fails here, and its record goes (pg.h). */
    if (b->c && pg_coll_poison_pending()) {
        int prc = pg_coll_poison_claim(b->c->g);
        pgrc = pgrc == PGC_OK ? prc : pgrc;
    }
    bool stood_in = b->c && b->c->g->poison_next;

    if (pgrc == PGC_OK && b->out.tmp && !stood_in) {
        shim_dtype_unpack(b->out.tmp, (size_t)b->ucount, b->ut, b->ubuf);
    }
    free(b->in.tmp);
    free(b->out.tmp);
    if (stood_in) {
        return pg_coll_stand_in_end(b->c->g);
    }
    return pgrc == PGC_OK ? MPI_SUCCESS : shim_error_pg(b->comm, b->fn, pgrc);
}

/* Reduce and allreduce (root < 0): the checks, the op and both buffers. MPI_IN_PLACE is
 * the input in recvbuf, where the result goes. */
static inline __attribute__((always_inline)) int
blk_reduction(struct shim_blk *b, const char *fn, const void *sendbuf,
                              void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root,
                              MPI_Comm comm)
{
    size_t scale;
    bool gets_result;
    int rc = blk_begin(b, fn, comm, count, dt);

    if (rc == MPI_SUCCESS && root >= 0) {
        rc = shim_coll_check_root(fn, comm, b->c, root);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = shim_op_spec(op, dt, b->t, &b->spec, &scale, &b->call);
    if (rc != MPI_SUCCESS) {
        return shim_error(comm, fn, rc, "%s", mps_last_error());
    }
    b->n = (size_t)count * scale;
    gets_result = root < 0 || b->c->g->rank == root;
    if (sendbuf == MPI_IN_PLACE && !gets_result) {
        return shim_error(comm, fn, MPI_ERR_BUFFER, "MPI_IN_PLACE is the root's alone");
    }
    rc = shim_blk_in(b, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, count, b->t,
                     sendbuf == MPI_IN_PLACE ? "the receive buffer" : "the send buffer");
    if (rc == MPI_SUCCESS && gets_result) {
        rc = shim_blk_out(b, recvbuf, count, b->t, "the receive buffer");
    }
    return rc;
}

#pragma weak MPI_Barrier = PMPI_Barrier
int PMPI_Barrier(MPI_Comm comm)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_barrier(SHIM_FN, comm, NULL);
    }
    struct shim_comm *c;
    int rc = shim_coll_check(SHIM_FN, comm, 0, MPI_DATATYPE_NULL, &c, NULL);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = pg_barrier(c->g);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, SHIM_FN, rc);
}

static int ibcast_impl(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                       MPI_Request *request, const char *fn)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct shim_req *r;
    void *ptr;
    int rc = shim_coll_check(fn, comm, count, dt, &c, &t);

    if (rc == MPI_SUCCESS) {
        rc = shim_coll_check_root(fn, comm, c, root);
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_coll_req(fn, comm, &r);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* The root sends its packed data; the others unpack what arrives. */
    if (c->g->rank == root) {
        rc = shim_coll_in(r, buf, count, t, (const void **)&ptr);
    } else {
        rc = shim_coll_out(r, buf, count, t, &ptr);
    }
    if (rc != MPI_SUCCESS) {
        shim_req_free(r);
        return rc;
    }
    return shim_coll_started(fn, pg_ibcast(c->g, ptr, (size_t)count * t->size, root, &r->pr),
                             r, request);
}

#pragma weak MPI_Ibcast = PMPI_Ibcast
int PMPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                       MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_bcast(SHIM_FN, buf, count, dt, root, comm, request);
    }
    int rc;
    if (shim_dev_try_bcast(SHIM_FN, buf, count, dt, root, comm, request, &rc)) {
        return rc;
    }
    return ibcast_impl(buf, count, dt, root, comm, request, SHIM_FN);
}

#pragma weak MPI_Bcast = PMPI_Bcast
int PMPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_bcast(SHIM_FN, buf, count, dt, root, comm, NULL);
    }
    struct shim_blk b;
    int rc;

    if (shim_dev_try_bcast(SHIM_FN, buf, count, dt, root, comm, NULL, &rc)) {
        return rc;
    }
    rc = shim_blk_begin(&b, SHIM_FN, comm, count, dt);
    if (rc == MPI_SUCCESS) {
        rc = shim_coll_check_root(SHIM_FN, comm, b.c, root);
    }
    /* The root sends its packed data; the others unpack what arrives. */
    if (rc == MPI_SUCCESS && b.c->g->rank == root) {
        rc = shim_blk_in(&b, buf, count, b.t, "the buffer");
        b.out.ptr = b.in.ptr;
    } else if (rc == MPI_SUCCESS) {
        rc = shim_blk_out(&b, buf, count, b.t, "the buffer");
    }
    if (rc != MPI_SUCCESS) {
        shim_blk_end(&b, PGC_OK);
        return rc;
    }
    return shim_blk_end(&b, pg_bcast(b.c->g, b.out.ptr, (size_t)count * b.t->size, root));
}

/* Checks, op and buffers shared by reduce and allreduce; root < 0 means allreduce. */
static int reduce_prepare(const char *fn, const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype dt, MPI_Op op, int root, bool all, MPI_Comm comm,
                          struct shim_comm **c, struct shim_req **r, struct pg_op_spec *spec,
                          size_t *n, const void **in, void **out)
{
    struct shim_dtype *t;
    size_t scale;
    int rc = shim_coll_check(fn, comm, count, dt, c, &t);
    bool gets_result;

    if (rc == MPI_SUCCESS && !all) {
        rc = shim_coll_check_root(fn, comm, *c, root);
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_coll_req(fn, comm, r);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = shim_op_spec(op, dt, t, spec, &scale, &(*r)->opcall);
    if (rc != MPI_SUCCESS) {
        shim_req_free(*r);
        return shim_error(comm, fn, rc, "%s", mps_last_error());
    }
    *n = (size_t)count * scale;
    gets_result = all || (*c)->g->rank == root;
    /* MPI_IN_PLACE: the input is in recvbuf (only where the result goes). */
    rc = shim_coll_in(*r, sendbuf == MPI_IN_PLACE && gets_result ? recvbuf : sendbuf, count, t,
                      in);
    *out = NULL;
    if (rc == MPI_SUCCESS && gets_result) {
        rc = shim_coll_out(*r, recvbuf, count, t, out);
    }
    if (rc != MPI_SUCCESS) {
        shim_req_free(*r);
    }
    return rc;
}

static int ireduce_impl(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                        int root, MPI_Comm comm, MPI_Request *request, const char *fn)
{
    struct shim_comm *c;
    struct shim_req *r;
    struct pg_op_spec spec;
    const void *in;
    void *out;
    size_t n;
    int rc = reduce_prepare(fn, sendbuf, recvbuf, count, dt, op, root, false, comm, &c,
                            &r, &spec, &n, &in, &out);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return shim_coll_started(fn, pg_ireduce(c->g, in, out, n, &spec, root, &r->pr), r,
                             request);
}

#pragma weak MPI_Ireduce = PMPI_Ireduce
int PMPI_Ireduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                        int root, MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_reduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, root, comm, request);
    }
    int rc;
    if (shim_dev_try_reduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, root, comm, request, &rc)) {
        return rc;
    }
    return ireduce_impl(sendbuf, recvbuf, count, dt, op, root, comm, request, SHIM_FN);
}

#pragma weak MPI_Reduce = PMPI_Reduce
int PMPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                int root, MPI_Comm comm)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_reduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, root, comm, NULL);
    }
    struct shim_blk b;
    int rc;

    if (shim_dev_try_reduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, root, comm, NULL, &rc)) {
        return rc;
    }
    rc = blk_reduction(&b, SHIM_FN, sendbuf, recvbuf, count, dt, op, root, comm);
    if (rc != MPI_SUCCESS) {
        shim_blk_end(&b, PGC_OK);
        return rc;
    }
    return shim_blk_end(&b, pg_reduce(b.c->g, b.in.ptr, b.out.ptr, b.n, &b.spec, root));
}

static int iallreduce_impl(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                           MPI_Comm comm, MPI_Request *request, const char *fn)
{
    struct shim_comm *c;
    struct shim_req *r;
    struct pg_op_spec spec;
    const void *in;
    void *out;
    size_t n;
    int rc = reduce_prepare(fn, sendbuf, recvbuf, count, dt, op, 0, true, comm, &c, &r, &spec,
                            &n, &in, &out);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return shim_coll_started(fn, pg_iallreduce(c->g, in, out, n, &spec, &r->pr), r, request);
}

#pragma weak MPI_Iallreduce = PMPI_Iallreduce
int PMPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                           MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_allreduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, request);
    }
    int rc;
    if (shim_dev_try_allreduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, request, &rc)) {
        return rc;
    }
    return iallreduce_impl(sendbuf, recvbuf, count, dt, op, comm, request, SHIM_FN);
}

#pragma weak MPI_Allreduce = PMPI_Allreduce
int PMPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                   MPI_Comm comm)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_allreduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, NULL);
    }
    struct shim_blk b;
    int rc;

    if (shim_dev_try_allreduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, NULL, &rc)) {
        return rc;
    }
    rc = blk_reduction(&b, SHIM_FN, sendbuf, recvbuf, count, dt, op, -1, comm);
    if (rc != MPI_SUCCESS) {
        shim_blk_end(&b, PGC_OK);
        return rc;
    }
    return shim_blk_end(&b, pg_allreduce(b.c->g, b.in.ptr, b.out.ptr, b.n, &b.spec));
}

/* Every rank's recvcount elements of the reduction of n of them: the input is n times
 * recvcount elements (MPI_IN_PLACE: in recvbuf), the output recvcount. */
int shim_reduce_scatter_block_blk(const char *fn, const void *sendbuf, void *recvbuf,
                                  int recvcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    struct shim_blk b;
    size_t scale;
    int rc = shim_blk_begin(&b, fn, comm, recvcount, dt);
    int n = rc == MPI_SUCCESS ? b.c->g->size : 0;

    if (rc == MPI_SUCCESS) {
        rc = shim_op_spec(op, dt, b.t, &b.spec, &scale, &b.call);
        rc = rc == MPI_SUCCESS ? rc : shim_error(comm, fn, rc, "%s", mps_last_error());
    }
    if (rc == MPI_SUCCESS && (size_t)recvcount * (size_t)n > INT_MAX) {
        rc = shim_error(comm, fn, MPI_ERR_COUNT, "%d ranks x %d elements exceed an int", n,
                        recvcount);
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_blk_in(&b, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvcount * n, b.t,
                         "the send buffer");
    }
    /* In place, my share of the result goes to the start of recvbuf. */
    if (rc == MPI_SUCCESS) {
        rc = shim_blk_out(&b, recvbuf, recvcount, b.t, "the receive buffer");
    }
    if (rc != MPI_SUCCESS) {
        shim_blk_end(&b, PGC_OK);
        return rc;
    }
    return shim_blk_end(&b, pg_reduce_scatter_block(b.c->g, b.in.ptr, b.out.ptr,
                                                     (size_t)recvcount * scale, &b.spec));
}
