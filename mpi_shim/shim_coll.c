/*
 * shim_coll.c - MPI barrier, broadcast, reduce and allreduce (blocking and non-blocking)
 * on pg_core's schedules. A blocking collective is its non-blocking form and a wait.
 */
#include "config.h"

#include "shim_coll.h"
#include "shim_device.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdlib.h>

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
    return ibarrier_impl(comm, request, SHIM_FN);
}

/* Whether a blocking collective of count elements of dt takes the direct path (no request,
 * no schedule): a valid, contiguous and small buffer. Invalid arguments go the usual way,
 * which raises the precise error. */
static bool direct_args(MPI_Comm comm, int count, MPI_Datatype dt, struct shim_comm **c,
                        struct shim_dtype **t)
{
    return shim_initialized() && shim_comm_get(comm, c) == MPI_SUCCESS && count >= 0 &&
           shim_dtype_lookup(dt, t) == MPI_SUCCESS && (*t)->committed && (*t)->contig;
}

static bool direct_ok(MPI_Comm comm, int count, MPI_Datatype dt, struct shim_comm **c,
                      struct shim_dtype **t)
{
    return direct_args(comm, count, dt, c, t) && (size_t)count * (*t)->size <= PG_DIRECT_MAX;
}

static bool allreduce_direct(const char *fn, const void *sendbuf, void *recvbuf, int count,
                             MPI_Datatype dt, MPI_Op op, MPI_Comm comm, int *rc)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct pg_op_spec spec;
    struct shim_op_call call;
    size_t scale;

    if (!direct_ok(comm, count, dt, &c, &t) || sendbuf == recvbuf || recvbuf == MPI_IN_PLACE ||
        (count && (!recvbuf || !sendbuf)) ||
        shim_op_spec(op, dt, t, &spec, &scale, &call) != MPI_SUCCESS) {
        return false;
    }
    *rc = pg_allreduce_direct(c->g, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf,
                              (size_t)count * scale, &spec);
    *rc = *rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, *rc);
    return true;
}

bool shim_reduce_scatter_block_direct(const char *fn, const void *sendbuf, void *recvbuf,
                                      int recvcount, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                      int *rc)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct pg_op_spec spec;
    struct shim_op_call call;
    size_t scale;

    if (!direct_args(comm, recvcount, dt, &c, &t) ||
        (size_t)recvcount * t->size * (size_t)c->g->size > PG_DIRECT_MAX ||
        sendbuf == recvbuf || recvbuf == MPI_IN_PLACE || (recvcount && (!recvbuf || !sendbuf)) ||
        shim_op_spec(op, dt, t, &spec, &scale, &call) != MPI_SUCCESS) {
        return false;
    }
    *rc = pg_reduce_scatter_block_direct(c->g, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf,
                                         recvbuf, (size_t)recvcount * scale, &spec);
    *rc = *rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, *rc);
    return true;
}

static bool reduce_direct(const char *fn, const void *sendbuf, void *recvbuf, int count,
                          MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, int *rc)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct pg_op_spec spec;
    struct shim_op_call call;
    size_t scale;
    bool am_root;

    if (!direct_ok(comm, count, dt, &c, &t) || root < 0 || root >= c->g->size) {
        return false;
    }
    am_root = c->g->rank == root;
    /* MPI_IN_PLACE is the root's alone; the others' receive buffer is not used. */
    if ((sendbuf == MPI_IN_PLACE && !am_root) || (am_root && sendbuf == recvbuf) ||
        (am_root && recvbuf == MPI_IN_PLACE) || (count && (!sendbuf || (am_root && !recvbuf))) ||
        shim_op_spec(op, dt, t, &spec, &scale, &call) != MPI_SUCCESS) {
        return false;
    }
    *rc = pg_reduce_direct(c->g, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf,
                           (size_t)count * scale, &spec, root);
    *rc = *rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, *rc);
    return true;
}

static bool bcast_direct(const char *fn, void *buf, int count, MPI_Datatype dt, int root,
                         MPI_Comm comm, int *rc)
{
    struct shim_comm *c;
    struct shim_dtype *t;

    if (!direct_args(comm, count, dt, &c, &t) ||
        !pg_bcast_direct_ok(c->g, buf, (size_t)count * t->size) || root < 0 ||
        root >= c->g->size || buf == MPI_IN_PLACE || (count && !buf)) {
        return false;
    }
    *rc = pg_bcast_direct(c->g, buf, (size_t)count * t->size, root);
    *rc = *rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, *rc);
    return true;
}

#pragma weak MPI_Barrier = PMPI_Barrier
int PMPI_Barrier(MPI_Comm comm)
{
    struct shim_comm *c;
    int rc = shim_coll_check(SHIM_FN, comm, 0, MPI_DATATYPE_NULL, &c, NULL);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = pg_barrier_direct(c->g);
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
    int rc;
    if (shim_dev_try_bcast(SHIM_FN, buf, count, dt, root, comm, request, &rc)) {
        return rc;
    }
    return ibcast_impl(buf, count, dt, root, comm, request, SHIM_FN);
}

#pragma weak MPI_Bcast = PMPI_Bcast
int PMPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    MPI_Request req;
    int rc;
    if (shim_dev_try_bcast(SHIM_FN, buf, count, dt, root, comm, NULL, &rc)) {
        return rc;
    }
    if (bcast_direct(SHIM_FN, buf, count, dt, root, comm, &rc)) {
        return rc;
    }
    return shim_coll_wait(SHIM_FN, ibcast_impl(buf, count, dt, root, comm, &req, SHIM_FN), &req);
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
    MPI_Request req;
    int rc;
    if (shim_dev_try_reduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, root, comm, NULL, &rc)) {
        return rc;
    }
    if (reduce_direct(SHIM_FN, sendbuf, recvbuf, count, dt, op, root, comm, &rc)) {
        return rc;
    }

    return shim_coll_wait(SHIM_FN, ireduce_impl(sendbuf, recvbuf, count, dt, op, root, comm, &req, SHIM_FN),
                          &req);
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
    MPI_Request req;
    int rc;
    if (shim_dev_try_allreduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, NULL, &rc)) {
        return rc;
    }
    if (allreduce_direct(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, &rc)) {
        return rc;
    }
    return shim_coll_wait(SHIM_FN, iallreduce_impl(sendbuf, recvbuf, count, dt, op, comm, &req, SHIM_FN),
                          &req);
}
