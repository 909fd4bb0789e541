/*
 * shim_device.c - CUDA-aware MPI: MPIX_Query_cuda_support, the device dispatch of
 * MPI_(I)Allreduce, (I)Reduce, (I)Bcast, (I)Allgather, (I)Alltoall, (I)Gather, (I)Scatter
 * and (I)Reduce_scatter_block onto pg_core's device backend (see shim_device.h for how the
 * entry points call it, pg_device.h for the paths), and the refusal of device memory by
 * the calls without a device path (shim_dev_host_only).
 */
#include "config.h"

#include "mps_log.h"
#include "pg_device.h"
#include "pgc_status.h"
#include "shim_coll.h"
#include "shim_datatype.h"
#include "shim_device.h"

#pragma weak MPIX_Query_cuda_support = PMPIX_Query_cuda_support
int PMPIX_Query_cuda_support(void)
{
    /* Built with CUDA and a device usable now (without a driver the probe finds none). */
    return HAVE_CUDA && pg_dev_present();
}

int shim_dev_host_only(const char *fn, MPI_Comm comm, const void *buf, const char *what)
{
    enum pg_mem m = pg_dev_present() && buf && buf != MPI_IN_PLACE ? pg_dev_classify(buf)
                                                                    : PG_MEM_HOST;

    if (m == PG_MEM_DEVICE) {
        return shim_error(comm, fn, MPI_ERR_BUFFER,
                          "%s is CUDA device memory, which this call does not take (device "
                          "buffers: MPI_Allreduce, MPI_Reduce, MPI_Bcast, MPI_Allgather, "
                          "MPI_Alltoall, MPI_Gather, MPI_Scatter, MPI_Reduce_scatter_block "
                          "and point-to-point; see doc/gpu.md)",
                          what);
    }
    if (m == PG_MEM_INVALID) {
        return shim_error(comm, fn, MPI_ERR_BUFFER,
                          "%s %p is neither host memory nor a live CUDA allocation", what, buf);
    }
    return MPI_SUCCESS;
}

/* The first byte and the packed size of count elements of dt at buf, for classification;
 * false when dt is not a valid committed type (the host path will raise that). */
static bool buf_span(const void *buf, long long count, MPI_Datatype dt, const void **p, size_t *n)
{
    struct shim_dtype *t;

    *p = NULL;
    *n = 0;
    if (buf == MPI_IN_PLACE || count <= 0) {
        return true;
    }
    if (shim_dtype_check_comm(dt, &t) != MPI_SUCCESS) {
        return false;
    }
    *p = (const char *)buf + t->true_lb;
    *n = (size_t)count * t->size;
    return true;
}

/* 0: host path; 1: device path; < 0: a buffer is invalid (cause recorded). */
static int route(const void *a, long long acount, MPI_Datatype adt, const void *b, long long bcount,
                 MPI_Datatype bdt)
{
    const void *pa, *pb;
    size_t na, nb;

    if (!buf_span(a, acount, adt, &pa, &na) || !buf_span(b, bcount, bdt, &pb, &nb)) {
        return 0;
    }
    return pg_dev_route(pa, na, pb, nb);
}

/* What a device call needs: the communicator, its request, and the reduction. */
struct dev_call {
    struct shim_comm *c;
    struct shim_dtype *t;
    struct shim_req *r;
    struct pg_op_spec spec;
    size_t scale;
};

/* The checks of the host path, plus the device path's own: a contiguous type. root < 0:
 * no root; op MPI_OP_NULL: no reduction. On success k->r is a fresh request. */
static int prelude(const char *fn, MPI_Comm comm, int route_rc, int count, MPI_Datatype dt,
                   MPI_Op op, int root, struct dev_call *k)
{
    int rc = route_rc < 0 ? shim_error(comm, fn, MPI_ERR_BUFFER, "%s", mps_last_error())
                          : shim_coll_check(fn, comm, count, dt, &k->c, &k->t);

    if (rc == MPI_SUCCESS && root >= 0) {
        rc = shim_coll_check_root(fn, comm, k->c, root);
    }
    if (rc == MPI_SUCCESS && !k->t->contig) {
        rc = shim_error(comm, fn, MPI_ERR_TYPE,
                        "non-contiguous datatypes on device buffers "
                        "are not supported: use a contiguous type");
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_coll_req(fn, comm, &k->r);
    }
    if (rc == MPI_SUCCESS && op != MPI_OP_NULL) {
        rc = shim_op_spec(op, dt, k->t, &k->spec, &k->scale, &k->r->opcall);
        if (rc != MPI_SUCCESS) {
            shim_req_free(k->r);
            rc = shim_error(comm, fn, rc, "%s", mps_last_error());
        }
    }
    return rc;
}

/* Hands out the request (non-blocking) or waits for it (blocking, with the device wait,
 * which also drives host progress). prc is the start's status. */
static int finish(const char *fn, MPI_Comm comm, int prc, struct shim_req *r, MPI_Request *request)
{
    MPI_Request h;
    int rc = shim_coll_started(fn, prc, r, request ? request : &h);

    if (rc != MPI_SUCCESS || request) {
        return rc;
    }
    prc = pg_dev_wait(&r->pr, -1);
    if (!pg_req_is_done(&r->pr)) {
        return shim_error(comm, fn, shim_errclass(prc), "%s", mps_last_error());
    }
    rc = r->pr.status != PGC_OK ? shim_error_pg(comm, fn, r->pr.status) : MPI_SUCCESS;
    shim_req_complete(r, &h, MPI_STATUS_IGNORE);
    return rc;
}

bool shim_dev_try_allreduce_slow(const char *fn, const void *sendbuf, void *recvbuf, int count,
                                 MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                                 int *rc)
{
    struct dev_call k;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    int route_rc;

    if (!pg_dev_present() || (route_rc = route(sendbuf, count, dt, recvbuf, count, dt)) == 0) {
        return false;
    }
    *rc = prelude(fn, comm, route_rc, count, dt, op, -1, &k);
    if (*rc == MPI_SUCCESS) {
        *rc = finish(
            fn, comm,
            pg_dev_iallreduce(k.c->g, in, recvbuf, (size_t)count * k.scale, &k.spec, &k.r->pr), k.r,
            request);
    }
    return true;
}

bool shim_dev_try_reduce_slow(const char *fn, const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                              MPI_Request *request, int *rc)
{
    struct shim_comm *c;
    struct dev_call k;
    const void *in = sendbuf;
    bool at_root;
    int route_rc;

    if (!pg_dev_present() || shim_comm_get(comm, &c) != MPI_SUCCESS) {
        return false;
    }
    /* recvbuf is significant at the root only (elsewhere it may be anything). */
    at_root = c->g->rank == root;
    if (at_root && sendbuf == MPI_IN_PLACE) {
        in = recvbuf;
    }
    route_rc = route(sendbuf, count, dt, at_root ? recvbuf : NULL, count, dt);
    if (route_rc == 0) {
        return false;
    }
    *rc = prelude(fn, comm, route_rc, count, dt, op, root, &k);
    if (*rc == MPI_SUCCESS) {
        *rc = finish(fn, comm,
                     pg_dev_ireduce(k.c->g, in, at_root ? recvbuf : NULL, (size_t)count * k.scale,
                                    &k.spec, root, &k.r->pr),
                     k.r, request);
    }
    return true;
}

bool shim_dev_try_bcast_slow(const char *fn, void *buf, int count, MPI_Datatype dt, int root,
                             MPI_Comm comm, MPI_Request *request, int *rc)
{
    struct dev_call k;
    int route_rc;

    if (!pg_dev_present() || (route_rc = route(buf, count, dt, NULL, 0, dt)) == 0) {
        return false;
    }
    *rc = prelude(fn, comm, route_rc, count, dt, MPI_OP_NULL, root, &k);
    if (*rc == MPI_SUCCESS) {
        *rc =
            finish(fn, comm, pg_dev_ibcast(k.c->g, buf, (size_t)count * k.t->size, root, &k.r->pr),
                   k.r, request);
    }
    return true;
}

/* The side of a block collective not used as its reference (allgather's and alltoall's
 * send side, for instance) must describe as many bytes as one block, contiguously. */
static int check_other_side(const char *fn, MPI_Comm comm, const void *buf, int count,
                            MPI_Datatype dt, size_t block)
{
    struct shim_dtype *t;

    if (buf == MPI_IN_PLACE) {
        return MPI_SUCCESS;
    }
    if (count < 0 || shim_dtype_check_comm(dt, &t) != MPI_SUCCESS) {
        return shim_error(comm, fn, MPI_ERR_TYPE, "invalid count or datatype");
    }
    if (!t->contig || (size_t)count * t->size != block) {
        return shim_error(comm, fn, MPI_ERR_TYPE,
                          "device buffers need contiguous types of %zu bytes per rank on both "
                          "sides (got %zu)",
                          block, (size_t)count * t->size);
    }
    return MPI_SUCCESS;
}

bool shim_dev_try_allgather(const char *fn, const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, int *rc)
{
    struct shim_comm *c;
    struct dev_call k;
    const void *in = sendbuf;
    size_t block;
    int route_rc;

    if (!pg_dev_present() || shim_comm_get(comm, &c) != MPI_SUCCESS || recvcount < 0) {
        return false;
    }
    route_rc =
        route(sendbuf, sendcount, sendtype, recvbuf, (long long)recvcount * c->g->size, recvtype);
    if (route_rc == 0) {
        return false;
    }
    *rc = prelude(fn, comm, route_rc, recvcount, recvtype, MPI_OP_NULL, -1, &k);
    if (*rc != MPI_SUCCESS) {
        return true;
    }
    block = (size_t)recvcount * k.t->size;
    *rc = check_other_side(fn, comm, sendbuf, sendcount, sendtype, block);
    if (*rc != MPI_SUCCESS) {
        shim_req_free(k.r);
        return true;
    }
    if (sendbuf == MPI_IN_PLACE) {
        in = (const char *)recvbuf + (size_t)c->g->rank * block;
    }
    *rc = finish(fn, comm, pg_dev_iallgather(k.c->g, in, recvbuf, block, &k.r->pr), k.r, request);
    return true;
}

/* Alltoall, gather and scatter: n blocks on one side (the "wide" one: both for alltoall,
 * the root's receive side for gather, its send side for scatter), one block on the other.
 * The reference count and type are those of a side significant at this rank. */
enum blk_kind { BLK_ALLTOALL, BLK_GATHER, BLK_SCATTER };

struct blk_call {
    enum blk_kind kind;
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    int root; /* -1: alltoall */
};

/* Whether this rank's send side is the reference (else its receive side). */
static bool send_is_ref(const struct blk_call *b, bool at_root)
{
    return (b->kind == BLK_GATHER && !at_root) || (b->kind == BLK_SCATTER && at_root);
}

/* The buffers and byte counts that this rank's part of b touches, for classification. */
static int blk_route(const struct blk_call *b, int n, bool at_root)
{
    long long wide_s = b->kind == BLK_SCATTER ? (at_root ? n : 0) : 1;
    long long wide_r = b->kind == BLK_GATHER ? (at_root ? n : 0) : 1;

    if (b->kind == BLK_ALLTOALL) {
        wide_s = wide_r = n;
    }
    return route(b->sendbuf, wide_s * b->sendcount, b->sendtype, b->recvbuf,
                 wide_r * b->recvcount, b->recvtype);
}

static int blk_start(const struct blk_call *b, struct dev_call *k, size_t block, int me)
{
    const char *in = b->sendbuf;
    char *out = b->recvbuf;

    if (b->kind == BLK_ALLTOALL) {
        return pg_dev_ialltoall(k->c->g, in, out, block, &k->r->pr);
    }
    if (b->kind == BLK_GATHER) {
        if (me == b->root && b->sendbuf == MPI_IN_PLACE) {
            in = out + (size_t)me * block;
        }
        return pg_dev_igather(k->c->g, in, me == b->root ? out : NULL, block, b->root,
                              &k->r->pr);
    }
    if (me == b->root && b->recvbuf == MPI_IN_PLACE) {
        out = (char *)in + (size_t)me * block;
    }
    return pg_dev_iscatter(k->c->g, me == b->root ? in : NULL, out, block, b->root, &k->r->pr);
}

/* One side of a block collective as the caller gave it. */
struct blk_side {
    const void *buf;
    int count;
    MPI_Datatype type;
};

static bool try_blocks(const char *fn, const struct blk_call *b, MPI_Comm comm,
                       MPI_Request *request, int *rc)
{
    struct blk_side send = {b->sendbuf, b->sendcount, b->sendtype};
    struct blk_side recv = {b->recvbuf, b->recvcount, b->recvtype}, ref, other;
    struct shim_comm *c;
    struct dev_call k;
    bool at_root;
    size_t block;
    int route_rc;

    /* Not a device call, or arguments whose error the host path raises. */
    if (!pg_dev_present() || shim_comm_get(comm, &c) != MPI_SUCCESS ||
        (b->kind != BLK_ALLTOALL && (b->root < 0 || b->root >= c->g->size))) {
        return false;
    }
    at_root = c->g->rank == b->root;
    ref = send_is_ref(b, at_root) ? send : recv;
    other = send_is_ref(b, at_root) ? recv : send;
    if (ref.count < 0 || (route_rc = blk_route(b, c->g->size, at_root)) == 0) {
        return false;
    }
    *rc = prelude(fn, comm, route_rc, ref.count, ref.type, MPI_OP_NULL, b->root, &k);
    if (*rc != MPI_SUCCESS) {
        return true;
    }
    block = (size_t)ref.count * k.t->size;
    if (b->kind == BLK_ALLTOALL && b->sendbuf == MPI_IN_PLACE) {
        *rc = shim_error(comm, fn, MPI_ERR_BUFFER,
                         "MPI_IN_PLACE is not supported on device buffers: pass a send buffer");
    } else if (b->kind == BLK_ALLTOALL || at_root) {
        *rc = check_other_side(fn, comm, other.buf, other.count, other.type, block);
    }
    if (*rc != MPI_SUCCESS) {
        shim_req_free(k.r);
        return true;
    }
    *rc = finish(fn, comm, blk_start(b, &k, block, c->g->rank), k.r, request);
    return true;
}

bool shim_dev_try_alltoall(const char *fn, const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, int *rc)
{
    struct blk_call b = {BLK_ALLTOALL, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                         recvtype, -1};

    return try_blocks(fn, &b, comm, request, rc);
}

bool shim_dev_try_gather(const char *fn, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request,
                         int *rc)
{
    struct blk_call b = {BLK_GATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                         recvtype, root};

    return try_blocks(fn, &b, comm, request, rc);
}

bool shim_dev_try_scatter(const char *fn, const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request,
                          int *rc)
{
    struct blk_call b = {BLK_SCATTER, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                         recvtype, root};

    return try_blocks(fn, &b, comm, request, rc);
}

bool shim_dev_try_reduce_scatter_block(const char *fn, const void *sendbuf, void *recvbuf,
                                       int recvcount, MPI_Datatype dt, MPI_Op op,
                                       MPI_Comm comm, MPI_Request *request, int *rc)
{
    struct shim_comm *c;
    struct dev_call k;
    int route_rc;

    if (!pg_dev_present() || shim_comm_get(comm, &c) != MPI_SUCCESS || recvcount < 0 ||
        (route_rc = route(sendbuf, (long long)recvcount * c->g->size, dt, recvbuf, recvcount,
                          dt)) == 0) {
        return false;
    }
    *rc = prelude(fn, comm, route_rc, recvcount, dt, op, -1, &k);
    if (*rc == MPI_SUCCESS && sendbuf == MPI_IN_PLACE) {
        shim_req_free(k.r);
        *rc = shim_error(comm, fn, MPI_ERR_BUFFER,
                         "MPI_IN_PLACE is not supported on device buffers: pass a send buffer");
    }
    if (*rc == MPI_SUCCESS) {
        *rc = finish(fn, comm,
                     pg_dev_ireduce_scatter_block(k.c->g, sendbuf, recvbuf,
                                                  (size_t)recvcount * k.scale, &k.spec,
                                                  &k.r->pr),
                     k.r, request);
    }
    return true;
}
