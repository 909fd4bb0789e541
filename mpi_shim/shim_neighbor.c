/*
 * shim_neighbor.c - the neighbourhood collectives (MPI-3.1 section 7.6) on Cartesian, graph
 * and distributed-graph communicators: allgather(v) and alltoall(v,w), blocking and not.
 *
 * Each call becomes one pg_ineighbor round: receive block i from in-neighbour i and send
 * block j to out-neighbour j. Blocks of non-contiguous types are packed into (or received
 * into and later unpacked from) one temporary area owned by the request; contiguous blocks
 * go straight from and to the user's buffers. Neighbours that are MPI_PROC_NULL keep their
 * block slot but move nothing.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_group_sub.h"
#include "pgc_status.h"
#include "shim_coll.h"
#include "shim_device.h"
#include "shim_topo.h"

#include <stdlib.h>
#include <string.h>

/* How one side (send or receive) lays its blocks out in the user's buffer. */
struct nbr_side {
    char *buf;
    int count;                 /* every block's count, when counts is NULL */
    const int *counts;         /* per block (v and w forms) */
    const int *displs;         /* per block, in extents of the type (v forms) */
    const MPI_Aint *bdispls;   /* per block, in bytes (w form) */
    MPI_Datatype type;         /* every block's type, when types is NULL */
    const MPI_Datatype *types; /* per block (w form) */
    bool same;                 /* every block is buf itself (allgather's send side) */
};

/* One block resolved: where, how many, which type; off is its place in the temporary
 * area when the type is not contiguous (else SIZE_MAX). */
struct nbr_block {
    char *ptr;
    size_t count;
    struct shim_dtype *t;
    size_t off;
};

/* What the request keeps to unpack at completion; one allocation (r->tmp2), then the
 * blocks to unpack, then the packed bytes. */
struct nbr_ctx {
    int nunpack;
    struct nbr_block *unpack;
    unsigned char *area;
};

static int resolve_side(const char *fn, MPI_Comm comm, const struct nbr_side *s, int n,
                        struct nbr_block *b)
{
    for (int i = 0; i < n; i++) {
        MPI_Datatype dt = s->types ? s->types[i] : s->type;
        int count = s->counts ? s->counts[i] : s->count;
        if (count < 0) {
            return shim_error(comm, fn, MPI_ERR_COUNT, "count %d of block %d is negative", count,
                              i);
        }
        if (shim_dtype_check_comm(dt, &b[i].t) != MPI_SUCCESS) {
            return shim_error(comm, fn, MPI_ERR_TYPE, "block %d: %s", i, mps_last_error());
        }
        b[i].count = (size_t)count;
        if (s->same) {
            b[i].ptr = s->buf;
        } else if (s->bdispls) {
            b[i].ptr = s->buf + s->bdispls[i];
        } else if (s->displs) {
            b[i].ptr = s->buf + (MPI_Aint)s->displs[i] * b[i].t->extent;
        } else {
            b[i].ptr = s->buf + (MPI_Aint)i * count * b[i].t->extent;
        }
    }
    return MPI_SUCCESS;
}

/* Places the non-contiguous blocks of a side in the temporary area from *total on. */
static int place_packed(struct nbr_block *b, int n, size_t *total)
{
    int k = 0;

    for (int i = 0; i < n; i++) {
        b[i].off = SIZE_MAX;
        if (!b[i].t->contig && b[i].count > 0) {
            b[i].off = *total;
            *total += (b[i].count * b[i].t->size + 15) & ~(size_t)15;
            k++;
        }
    }
    return k;
}

static int nbr_finish(struct shim_req *r)
{
    struct nbr_ctx *x = r->tmp2;

    for (int i = 0; i < x->nunpack; i++) {
        struct nbr_block *b = &x->unpack[i];
        shim_dtype_unpack(x->area + b->off, b->count, b->t, b->ptr);
        shim_dtype_release(b->t);
    }
    x->nunpack = 0;
    return MPI_SUCCESS;
}

/* The temporary area and the list of blocks to unpack (NULL when nothing needs one). */
static struct nbr_ctx *make_ctx(struct nbr_block *sb, int nout, struct nbr_block *rb, int nin,
                                bool *nomem)
{
    size_t total = 0;
    int np = place_packed(sb, nout, &total);
    int nu = place_packed(rb, nin, &total);
    size_t head = sizeof(struct nbr_ctx) + sizeof(struct nbr_block) * (size_t)nu;
    struct nbr_ctx *x;

    *nomem = false;
    if (np + nu == 0) {
        return NULL;
    }
    head = (head + 15) & ~(size_t)15;
    x = malloc(head + total);
    if (!x) {
        *nomem = true;
        return NULL;
    }
    x->unpack = (struct nbr_block *)(x + 1);
    x->area = (unsigned char *)x + head;
    x->nunpack = 0;
    for (int i = 0; i < nout; i++) {
        if (sb[i].off != SIZE_MAX) {
            shim_dtype_pack(sb[i].ptr, sb[i].count, sb[i].t, x->area + sb[i].off);
        }
    }
    for (int i = 0; i < nin; i++) {
        if (rb[i].off != SIZE_MAX) {
            shim_dtype_retain(rb[i].t);
            x->unpack[x->nunpack++] = rb[i];
        }
    }
    return x;
}

static void to_xfers(const struct nbr_block *b, const int *peers, int n, const struct nbr_ctx *x,
                     struct pg_nbr_xfer *out)
{
    for (int i = 0; i < n; i++) {
        out[i].peer = peers[i];
        out[i].bytes = b[i].count * b[i].t->size;
        out[i].buf = b[i].off != SIZE_MAX ? (void *)(x->area + b[i].off) : (void *)b[i].ptr;
    }
}

/*
 * On a grid, the -1 and +1 neighbours of a periodic dimension of 1 or 2 ranks are one
 * process, and its two messages pair with my two slots in posting order. MPI-4.0 (and
 * MPICH) says my -1 slot gets what that neighbour sent in its +1 direction, so each
 * dimension's sends are posted +1 first, against receives posted -1 first. Where the two
 * neighbours differ the order changes nothing.
 */
static void cart_send_order(struct pg_nbr_xfer *x, int n)
{
    for (int i = 0; i + 1 < n; i += 2) {
        struct pg_nbr_xfer t = x[i];
        x[i] = x[i + 1];
        x[i + 1] = t;
    }
}

/* Builds the transfers, starts the round and hands out the request. */
static int nbr_post(const char *fn, MPI_Comm comm, struct shim_comm *c, const int *in, int nin,
                    struct nbr_block *rb, const int *out, int nout, struct nbr_block *sb,
                    MPI_Request *request)
{
    struct pg_nbr_xfer *xf = malloc(sizeof(*xf) * (size_t)(nin + nout + 1));
    struct shim_req *r = NULL;
    struct nbr_ctx *x;
    bool nomem;
    int rc;

    x = make_ctx(sb, nout, rb, nin, &nomem);
    if (!xf || nomem) {
        free(xf);
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a neighbourhood exchange");
    }
    rc = shim_coll_req(fn, comm, &r);
    if (rc != MPI_SUCCESS) {
        free(xf);
        free(x);
        return rc;
    }
    r->tmp2 = x; /* not tmp: a truncated collective unpacks tmp with utype */
    r->finish = x && x->nunpack ? nbr_finish : NULL;
    to_xfers(sb, out, nout, x, xf);
    to_xfers(rb, in, nin, x, xf + nout);
    if (c->topo->kind == MPI_CART) {
        cart_send_order(xf, nout);
    }
    rc = pg_ineighbor(c->g, xf, nout, xf + nout, nin, &r->pr);
    free(xf);
    for (int i = 0; rc != PGC_OK && x && i < x->nunpack; i++) {
        shim_dtype_release(x->unpack[i].t);
    }
    return shim_coll_started(fn, rc, r, request);
}

/* A slot whose neighbour is MPI_PROC_NULL moves nothing: never pack or unpack it. */
static void skip_proc_null(struct nbr_block *b, const int *peers, int n)
{
    for (int i = 0; i < n; i++) {
        if (peers[i] == MPI_PROC_NULL) {
            b[i].count = 0;
        }
    }
}

/* No device path here: device memory is refused before the CPU packs or unpacks it. A
 * side is one kind of memory; its first block with data stands for it. */
static int blocks_host_only(const char *fn, MPI_Comm comm, const struct nbr_block *b, int n,
                            const char *what)
{
    for (int i = 0; i < n; i++) {
        if (b[i].count) {
            return shim_dev_host_only(fn, comm, b[i].ptr, what);
        }
    }
    return MPI_SUCCESS;
}

static int nbr_start(const char *fn, MPI_Comm comm, const struct nbr_side *send,
                     const struct nbr_side *recv, MPI_Request *request)
{
    struct shim_comm *c;
    struct nbr_block *sb = NULL, *rb = NULL;
    int *in = NULL, *out = NULL;
    int nin = 0, nout = 0;
    int rc = shim_coll_check(fn, comm, 0, MPI_DATATYPE_NULL, &c, NULL);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = shim_topo_neighbors(c, &nin, &in, &nout, &out);
    if (rc != MPI_SUCCESS) {
        return shim_error(comm, fn, rc, "%s",
                          rc == MPI_ERR_TOPOLOGY ? "the communicator has no topology"
                                                 : "no memory for the neighbour lists");
    }
    sb = malloc(sizeof(*sb) * (size_t)(nout + 1));
    rb = malloc(sizeof(*rb) * (size_t)(nin + 1));
    if (!sb || !rb) {
        rc = shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for %d blocks", nin + nout);
        goto out;
    }
    rc = resolve_side(fn, comm, send, nout, sb);
    if (rc == MPI_SUCCESS) {
        rc = resolve_side(fn, comm, recv, nin, rb);
    }
    if (rc == MPI_SUCCESS) {
        rc = blocks_host_only(fn, comm, sb, nout, "sendbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = blocks_host_only(fn, comm, rb, nin, "recvbuf");
    }
    if (rc == MPI_SUCCESS) {
        skip_proc_null(sb, out, nout);
        skip_proc_null(rb, in, nin);
        rc = nbr_post(fn, comm, c, in, nin, rb, out, nout, sb, request);
    }
out:
    free(sb);
    free(rb);
    free(in);
    free(out);
    return rc;
}

#pragma weak MPI_Ineighbor_allgather = PMPI_Ineighbor_allgather
int PMPI_Ineighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    struct nbr_side s = {
        .buf = (char *)sendbuf, .count = sendcount, .type = sendtype, .same = true};
    struct nbr_side r = {.buf = recvbuf, .count = recvcount, .type = recvtype};

    return nbr_start(SHIM_FN, comm, &s, &r, request);
}

#pragma weak MPI_Ineighbor_allgatherv = PMPI_Ineighbor_allgatherv
int PMPI_Ineighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    struct nbr_side s = {
        .buf = (char *)sendbuf, .count = sendcount, .type = sendtype, .same = true};
    struct nbr_side r = {.buf = recvbuf, .counts = recvcounts, .displs = displs, .type = recvtype};

    return nbr_start(SHIM_FN, comm, &s, &r, request);
}

#pragma weak MPI_Ineighbor_alltoall = PMPI_Ineighbor_alltoall
int PMPI_Ineighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            MPI_Request *request)
{
    struct nbr_side s = {.buf = (char *)sendbuf, .count = sendcount, .type = sendtype};
    struct nbr_side r = {.buf = recvbuf, .count = recvcount, .type = recvtype};

    return nbr_start(SHIM_FN, comm, &s, &r, request);
}

#pragma weak MPI_Ineighbor_alltoallv = PMPI_Ineighbor_alltoallv
int PMPI_Ineighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    struct nbr_side s = {
        .buf = (char *)sendbuf, .counts = sendcounts, .displs = sdispls, .type = sendtype};
    struct nbr_side r = {.buf = recvbuf, .counts = recvcounts, .displs = rdispls, .type = recvtype};

    return nbr_start(SHIM_FN, comm, &s, &r, request);
}

#pragma weak MPI_Ineighbor_alltoallw = PMPI_Ineighbor_alltoallw
int PMPI_Ineighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                             const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                             const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                             MPI_Comm comm, MPI_Request *request)
{
    struct nbr_side s = {
        .buf = (char *)sendbuf, .counts = sendcounts, .bdispls = sdispls, .types = sendtypes};
    struct nbr_side r = {
        .buf = recvbuf, .counts = recvcounts, .bdispls = rdispls, .types = recvtypes};

    return nbr_start(SHIM_FN, comm, &s, &r, request);
}

#pragma weak MPI_Neighbor_allgather = PMPI_Neighbor_allgather
int PMPI_Neighbor_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          PMPI_Ineighbor_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                   recvtype, comm, &req),
                          &req);
}

#pragma weak MPI_Neighbor_allgatherv = PMPI_Neighbor_allgatherv
int PMPI_Neighbor_allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          PMPI_Ineighbor_allgatherv(sendbuf, sendcount, sendtype, recvbuf,
                                                    recvcounts, displs, recvtype, comm, &req),
                          &req);
}

#pragma weak MPI_Neighbor_alltoall = PMPI_Neighbor_alltoall
int PMPI_Neighbor_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          PMPI_Ineighbor_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                                                  recvtype, comm, &req),
                          &req);
}

#pragma weak MPI_Neighbor_alltoallv = PMPI_Neighbor_alltoallv
int PMPI_Neighbor_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          PMPI_Ineighbor_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                                   recvcounts, rdispls, recvtype, comm, &req),
                          &req);
}

#pragma weak MPI_Neighbor_alltoallw = PMPI_Neighbor_alltoallw
int PMPI_Neighbor_alltoallw(const void *sendbuf, const int sendcounts[], const MPI_Aint sdispls[],
                            const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                            const MPI_Aint rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          PMPI_Ineighbor_alltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                                   recvcounts, rdispls, recvtypes, comm, &req),
                          &req);
}
