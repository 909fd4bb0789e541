/*
 * gpu_coll.c - collectives and point-to-point on CUDA device buffers, checked against
 * values computed here on the host (a formula of rank and index, exact in float).
 *
 * MPI level (the shim's device dispatch): MPI_Allreduce (in place, user op -> staged,
 * freed pointer -> MPI_ERR_BUFFER), MPI_Iallreduce, MPI_Bcast and MPI_Reduce from every
 * root, MPI_Allgather (in place too), MPI_Alltoall, MPI_Gather and MPI_Scatter from every
 * root, MPI_Reduce_scatter_block, MPI_ERR_BUFFER from MPI_Alltoallv, MPI_Reduce_local,
 * MPI_Neighbor_allgather, MPI_Bsend and MPI_Sendrecv_replace (no device path) and from an
 * in-place device MPI_Alltoall. pg_core
 * level (pg_device.h): reduce_scatter_block,
 * alltoall, gather, scatter, AVG, and device send/receive with PG_ANY_SOURCE (and through
 * MPI_Irecv/MPI_Send with the status checked). With
 * MPISHIM_DEVICE_COLL=staging also mixed host/device buffers across ranks.
 *
 * With --timeout-nccl (1 rank), --timeout-nccl-peer (2 ranks on NCCL) and --timeout-staged
 * (2 ranks, staging), MPISHIM_TIMEOUT=2: the messages of a device collective that times out
 * (see check_nccl_timeout).
 *
 * Without a GPU it prints "SKIP: needs an NVIDIA GPU (cudaGetDeviceCount found none)" and
 * exits 77 before MPI_Init. Run it through tests/gpu/run_gpu.sh.
 */
#include "config.h"

#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../mr/mrtest.h"
#include "pg_coll2.h"
#include "pg_device.h"
#include "pgc_status.h"

static int me, np;

#define CUDA_OK(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        CHECK(e_ == cudaSuccess, "%s", cudaGetErrorString(e_));                                    \
    } while (0)

static void *dmalloc(size_t bytes)
{
    void *p = NULL;

    CUDA_OK(cudaMalloc(&p, bytes ? bytes : 1));
    return p;
}

/* The value rank r contributes at index i (exact in float for our sizes). */
static float val(int r, size_t i)
{
    return (float)((r + 1) * 1000 + (int)(i % 997));
}

static float *host_vals(int r, size_t n)
{
    float *h = malloc(n * sizeof(float) + 1);

    for (size_t i = 0; i < n; i++) {
        h[i] = val(r, i);
    }
    return h;
}

static float *to_dev(const float *h, size_t n)
{
    float *d = dmalloc(n * sizeof(float));

    CUDA_OK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    return d;
}

static float *from_dev(const float *d, size_t n)
{
    float *h = malloc(n * sizeof(float) + 1);

    CUDA_OK(cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost));
    return h;
}

static float sum_at(size_t i)
{
    float s = 0;

    for (int r = 0; r < np; r++) {
        s += val(r, i);
    }
    return s;
}

static void check_classification(void)
{
    void *d = dmalloc(64), *m = NULL, *pinned = NULL, *h = malloc(64);

    CUDA_OK(cudaMallocManaged(&m, 64, cudaMemAttachGlobal));
    CUDA_OK(cudaHostAlloc(&pinned, 64, cudaHostAllocDefault));
    CHECK(MPIX_Query_cuda_support() == 1, "MPIX_Query_cuda_support with a GPU");
    CHECK(pg_dev_classify(d) == PG_MEM_DEVICE, "cudaMalloc: %d", pg_dev_classify(d));
    CHECK(pg_dev_classify(m) == PG_MEM_MANAGED, "managed: %d", pg_dev_classify(m));
    CHECK(pg_dev_classify(pinned) == PG_MEM_HOST_PINNED, "pinned: %d", pg_dev_classify(pinned));
    CHECK(pg_dev_classify(h) == PG_MEM_HOST, "malloc: %d", pg_dev_classify(h));
    CUDA_OK(cudaFree(d));
    CHECK(pg_dev_classify(d) == PG_MEM_INVALID, "freed device pointer: %d", pg_dev_classify(d));
    CHECK(cudaGetLastError() == cudaSuccess, "classification left a sticky CUDA error");
    cudaFree(m);
    cudaFreeHost(pinned);
    free(h);
}

static void check_allreduce(size_t n, bool in_place)
{
    float *h = host_vals(me, n), *d = to_dev(h, n), *o = in_place ? d : dmalloc(n * 4), *r;

    CHECK_MPI(
        MPI_Allreduce(in_place ? MPI_IN_PLACE : d, o, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    r = from_dev(o, n);
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i] == sum_at(i), "allreduce n=%zu i=%zu: %g != %g", n, i, r[i], sum_at(i));
    }
    if (!in_place) {
        cudaFree(o);
    }
    cudaFree(d);
    free(h);
    free(r);
}

static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    for (int i = 0; i < *len; i++) {
        ((int *)inout)[i] += ((int *)in)[i];
    }
    (void)dt;
}

/* A user op cannot run in NCCL: it is staged, with the same result. */
static void check_user_op(void)
{
    enum { N = 1000 };
    int h[N], *d = dmalloc(sizeof(h)), r[N];
    MPI_Op op;

    for (int i = 0; i < N; i++) {
        h[i] = me * 100000 + i;
    }
    CUDA_OK(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
    CHECK_MPI(MPI_Op_create(my_sum, 1, &op));
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, d, N, MPI_INT, op, MPI_COMM_WORLD));
    CUDA_OK(cudaMemcpy(r, d, sizeof(r), cudaMemcpyDeviceToHost));
    for (int i = 0; i < N; i++) {
        int want = 100000 * (np * (np - 1) / 2) + np * i;
        CHECK(r[i] == want, "user op i=%d: %d != %d", i, r[i], want);
    }
    MPI_Op_free(&op);
    cudaFree(d);
}

static void check_iallreduce(void)
{
    size_t n = 4099;
    float *h = host_vals(me, n), *d = to_dev(h, n), *r;
    MPI_Request req;

    CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, d, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    r = from_dev(d, n);
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i] == sum_at(i), "iallreduce i=%zu: %g != %g", i, r[i], sum_at(i));
    }
    cudaFree(d);
    free(h);
    free(r);
}

static void check_bcast_and_reduce(size_t n)
{
    for (int root = 0; root < np; root++) {
        float *h = host_vals(me, n), *d = to_dev(h, n), *o = dmalloc(n * 4), *r;
        CHECK_MPI(MPI_Bcast(d, (int)n, MPI_FLOAT, root, MPI_COMM_WORLD));
        r = from_dev(d, n);
        for (size_t i = 0; i < n; i++) {
            CHECK(r[i] == val(root, i), "bcast root %d i=%zu: %g", root, i, r[i]);
        }
        free(r);
        CUDA_OK(cudaMemcpy(d, h, n * 4, cudaMemcpyHostToDevice));
        CHECK_MPI(MPI_Reduce(d, o, (int)n, MPI_FLOAT, MPI_SUM, root, MPI_COMM_WORLD));
        if (me == root) {
            r = from_dev(o, n);
            for (size_t i = 0; i < n; i++) {
                CHECK(r[i] == sum_at(i), "reduce root %d i=%zu: %g", root, i, r[i]);
            }
            free(r);
        }
        cudaFree(d);
        cudaFree(o);
        free(h);
    }
}

static void check_allgather(size_t n, bool in_place)
{
    float *h = host_vals(me, n), *all = dmalloc(n * 4 * (size_t)np), *d = to_dev(h, n), *r;

    if (in_place) {
        CUDA_OK(cudaMemcpy(all + (size_t)me * n, h, n * 4, cudaMemcpyHostToDevice));
    }
    CHECK_MPI(MPI_Allgather(in_place ? MPI_IN_PLACE : d, (int)n, MPI_FLOAT, all, (int)n, MPI_FLOAT,
                            MPI_COMM_WORLD));
    r = from_dev(all, n * (size_t)np);
    for (int q = 0; q < np; q++) {
        for (size_t i = 0; i < n; i++) {
            CHECK(r[(size_t)q * n + i] == val(q, i), "allgather block %d i=%zu", q, i);
        }
    }
    cudaFree(all);
    cudaFree(d);
    free(h);
    free(r);
}

static void check_pg_level(void)
{
    struct pg_group *g = pg_world_group();
    struct pg_op_spec sum = {.dt = PG_FLOAT, .op = PG_OP_SUM, .elem_size = 4, .commutative = true};
    struct pg_op_spec avg = sum;
    size_t n = 513, all = n * (size_t)np;
    float *h = host_vals(me, all), *in = to_dev(h, all), *out = dmalloc(all * 4), *r;

    /* reduce_scatter_block: rank me gets the sum of segment me. */
    CHECK(pg_dev_reduce_scatter_block(g, in, out, n, &sum) == PGC_OK, "reduce_scatter");
    r = from_dev(out, n);
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i] == sum_at((size_t)me * n + i), "reduce_scatter i=%zu: %g", i, r[i]);
    }
    free(r);
    /* alltoall: block j of rank q goes to rank j as block q. */
    CHECK(pg_dev_alltoall(g, in, out, n * 4) == PGC_OK, "alltoall");
    r = from_dev(out, all);
    for (int q = 0; q < np; q++) {
        for (size_t i = 0; i < n; i++) {
            CHECK(r[(size_t)q * n + i] == val(q, (size_t)me * n + i), "alltoall q=%d i=%zu", q, i);
        }
    }
    free(r);
    for (int root = 0; root < np; root++) {
        CHECK(pg_dev_gather(g, in, out, n * 4, root) == PGC_OK, "gather");
        if (me == root) {
            r = from_dev(out, all);
            for (int q = 0; q < np; q++) {
                CHECK(r[(size_t)q * n] == val(q, 0) && r[(size_t)q * n + n - 1] == val(q, n - 1),
                      "gather root %d block %d", root, q);
            }
            free(r);
        }
        CHECK(pg_dev_scatter(g, in, out, n * 4, root) == PGC_OK, "scatter");
        r = from_dev(out, n);
        CHECK(r[0] == val(root, (size_t)me * n) && r[n - 1] == val(root, (size_t)me * n + n - 1),
              "scatter root %d", root);
        free(r);
    }
    /* AVG is finished on the device path (the caller cannot divide device memory). */
    avg.op = PG_OP_AVG;
    CHECK(pg_dev_allreduce(g, in, out, n, &avg) == PGC_OK, "avg");
    r = from_dev(out, n);
    for (size_t i = 0; i < n; i++) {
        float want = sum_at(i) / (float)np; /* NCCL may pre-multiply by 1/n: 1 ulp-ish */
        CHECK(r[i] >= want * (1 - 1e-6f) && r[i] <= want * (1 + 1e-6f), "avg i=%zu: %g != %g", i,
              r[i], want);
    }
    free(r);
    cudaFree(in);
    cudaFree(out);
    free(h);
}

/* Device send/receive in a ring, received with PG_ANY_SOURCE: matching as on the host. */
static void check_p2p(void)
{
    struct pg_group *g = pg_world_group();
    size_t n = 70000;
    float *h = host_vals(me, n), *s = to_dev(h, n), *d = dmalloc(n * 4), *r;
    struct pg_req sr = {0}, rr = {0};
    int left = (me + np - 1) % np;

    CHECK(pg_dev_irecv(g, d, n * 4, PG_ANY_SOURCE, 42, &rr) == PGC_OK, "irecv");
    CHECK(pg_dev_isend(g, s, n * 4, (me + 1) % np, 42, false, &sr) == PGC_OK, "isend");
    CHECK(pg_dev_wait(&sr, -1) == PGC_OK && pg_dev_wait(&rr, -1) == PGC_OK, "p2p wait");
    CHECK(rr.source == left && rr.tag == 42 && rr.len == n * 4, "envelope %d %d %zu", rr.source,
          rr.tag, rr.len);
    r = from_dev(d, n);
    CHECK(r[0] == val(left, 0) && r[n - 1] == val(left, n - 1), "p2p data");
    cudaFree(s);
    cudaFree(d);
    free(h);
    free(r);
}

/* The same ring through MPI: MPI_Irecv(MPI_ANY_SOURCE) and MPI_Send on device buffers, the
 * status (source, tag, count) as for host buffers. */
static void check_mpi_p2p(void)
{
    int n = 5003, left = (me + np - 1) % np, count = -1;
    float *h = host_vals(me, (size_t)n), *s = to_dev(h, (size_t)n), *d = dmalloc((size_t)n * 4), *r;
    MPI_Request rq;
    MPI_Status st;

    CHECK_MPI(MPI_Irecv(d, n, MPI_FLOAT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &rq));
    CHECK_MPI(MPI_Send(s, n, MPI_FLOAT, (me + 1) % np, 7, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&rq, &st));
    MPI_Get_count(&st, MPI_FLOAT, &count);
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7 && count == n, "MPI status %d %d %d",
          st.MPI_SOURCE, st.MPI_TAG, count);
    r = from_dev(d, (size_t)n);
    for (int i = 0; i < n; i++) {
        CHECK(r[i] == val(left, (size_t)i), "MPI p2p i=%d: %g", i, r[i]);
    }
    cudaFree(s);
    cudaFree(d);
    free(h);
    free(r);
}

/* MPI_Alltoall, MPI_Gather, MPI_Scatter (every root, in place at the root too) and
 * MPI_Reduce_scatter_block on device buffers, through the device dispatch. */
static void check_mpi_blocks(void)
{
    int n = 301;
    size_t all = (size_t)n * (size_t)np;
    float *h = host_vals(me, all), *in = to_dev(h, all), *out = dmalloc(all * 4), *r;

    CHECK_MPI(MPI_Alltoall(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD));
    r = from_dev(out, all);
    for (int q = 0; q < np; q++) {
        CHECK(r[(size_t)q * n + 5] == val(q, (size_t)me * n + 5), "MPI_Alltoall block %d", q);
    }
    free(r);
    for (int root = 0; root < np; root++) {
        bool at_root = me == root;
        /* In place at the root: its block is already in out. */
        CUDA_OK(cudaMemcpy(out + (size_t)me * n, in, (size_t)n * 4, cudaMemcpyDeviceToDevice));
        CHECK_MPI(MPI_Gather(at_root && root % 2 ? MPI_IN_PLACE : in, n, MPI_FLOAT, out, n,
                             MPI_FLOAT, root, MPI_COMM_WORLD));
        if (at_root) {
            r = from_dev(out, all);
            for (int q = 0; q < np; q++) {
                CHECK(r[(size_t)q * n + n - 1] == val(q, (size_t)n - 1), "MPI_Gather root %d "
                      "block %d", root, q);
            }
            free(r);
        }
        CHECK_MPI(MPI_Scatter(in, n, MPI_FLOAT, at_root && root % 2 ? MPI_IN_PLACE : out, n,
                              MPI_FLOAT, root, MPI_COMM_WORLD));
        r = from_dev(at_root && root % 2 ? in + (size_t)me * n : out, (size_t)n);
        CHECK(r[7] == val(root, (size_t)me * n + 7), "MPI_Scatter root %d: %g", root, r[7]);
        free(r);
    }
    CHECK_MPI(MPI_Reduce_scatter_block(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    r = from_dev(out, (size_t)n);
    for (int i = 0; i < n; i++) {
        CHECK(r[i] == sum_at((size_t)me * n + i), "MPI_Reduce_scatter_block i=%d: %g", i, r[i]);
    }
    free(r);
    cudaFree(in);
    cudaFree(out);
    free(h);
}

/* Neighbour collectives have no device path either (a periodic ring of every rank). */
static void check_refused_neighbor(float *d, float *e)
{
    MPI_Comm ring;
    int dims[1] = {np}, periods[1] = {1}, rc, cls = 0;

    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring));
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    rc = MPI_Neighbor_allgather(d, 64, MPI_FLOAT, e, 64, MPI_FLOAT, ring);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Neighbor_allgather on device buffers: class %d", cls);
    MPI_Comm_free(&ring);
}

/* A collective without a device path refuses device buffers with MPI_ERR_BUFFER (its CPU
 * code would otherwise read device memory), as does MPI_IN_PLACE where the device path
 * lacks it. */
static void check_refused(void)
{
    float *d = dmalloc((size_t)np * 64 * 4), *e = dmalloc((size_t)np * 64 * 4);
    int *counts = malloc(sizeof(int) * (size_t)np * 2), *displs = counts + np, rc, cls = 0;

    for (int q = 0; q < np; q++) {
        counts[q] = 64;
        displs[q] = 64 * q;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Alltoallv(d, counts, displs, MPI_FLOAT, e, counts, displs, MPI_FLOAT,
                       MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Alltoallv on device buffers: error class %d", cls);
    rc = MPI_Alltoall(MPI_IN_PLACE, 64, MPI_FLOAT, d, 64, MPI_FLOAT, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "in-place MPI_Alltoall on a device buffer: class %d", cls);
    rc = MPI_Reduce_local(d, e, 64, MPI_FLOAT, MPI_SUM);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Reduce_local on device buffers: class %d", cls);
    /* Point-to-point calls that pack on the CPU: self as the peer, so nothing is sent. */
    rc = MPI_Bsend(d, 64, MPI_FLOAT, me, 5, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Bsend of a device buffer: class %d", cls);
    rc = MPI_Sendrecv_replace(d, 64, MPI_FLOAT, me, 6, me, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "MPI_Sendrecv_replace of a device buffer: class %d", cls);
    check_refused_neighbor(d, e);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    cudaFree(d);
    cudaFree(e);
    free(counts);
}

/* A freed or a foreign pointer on every rank: MPI_ERR_BUFFER from classification, not a
 * crash. */
static void check_freed_pointer(void)
{
    float *d = dmalloc(1024);
    void *gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int rc, cls = 0;

    cudaFree(d);
    CHECK(gone != MAP_FAILED && munmap(gone, 4096) == 0, "mmap/munmap of a scratch page");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Allreduce(MPI_IN_PLACE, d, 256, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "a freed device pointer: error class %d", cls);
    /* A foreign pointer: an address no allocation holds, neither CUDA's nor the host's. */
    rc = MPI_Allreduce(MPI_IN_PLACE, gone, 256, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_BUFFER, "an unmapped pointer: error class %d", cls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* MPI_Error_string of rc, for checking what a message names. */
static const char *err_text(int rc)
{
    static char s[MPI_MAX_ERROR_STRING];
    int len = 0;

    s[0] = '\0';
    MPI_Error_string(rc, s, &len);
    return s;
}

static void CUDART_CB hold_gpu(void *arg)
{
    sleep(*(unsigned *)arg);
}

/* --timeout-nccl, 1 rank, MPISHIM_TIMEOUT=2: a NCCL allreduce queued behind 4 s of other
 * work on the legacy default stream (which our blocking stream waits for) times out with a
 * message naming the call and the group's device collective number; the group's NCCL
 * communicator is aborted, so the next device collective fails at once, and host
 * collectives go on. */
static void check_nccl_timeout(void)
{
    static unsigned secs = 4;
    float *h = host_vals(me, 64), *d = to_dev(h, 64);
    const char *s;
    int rc, x = me + 1;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    /* The group's NCCL communicator is made here, not under the held-up call. */
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    CUDA_OK(cudaLaunchHostFunc(0, hold_gpu, &secs));
    rc = MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    s = err_text(rc);
    CHECK(rc != MPI_SUCCESS && strstr(s, "NCCL allreduce: timed out after 2 s") &&
              strstr(s, "device collective 2, 256 B") && strstr(s, "this rank's GPU"),
          "a NCCL allreduce held up on the GPU: %s", s);
    CUDA_OK(cudaDeviceSynchronize());
    rc = MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    s = err_text(rc);
    CHECK(rc != MPI_SUCCESS && strstr(s, "aborted after a timeout"),
          "the device collective after a NCCL timeout: %s", s);
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &x, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(x == np * (np + 1) / 2, "a host allreduce after a NCCL timeout: %d", x);
    cudaFree(d);
    free(h);
}

/* --timeout-staged, 2 ranks, MPISHIM_DEVICE_COLL=staging, MPISHIM_TIMEOUT=2: rank 1 never
 * joins a staged device allreduce, and rank 0's error names it (the host collective's
 * account of whom it waits for). The call runs on a communicator of its own, which rank 0's
 * given-up collective leaves behind. */
static void check_staged_timeout(void)
{
    float *h = host_vals(me, 64), *d = to_dev(h, 64);
    MPI_Comm c = MPI_COMM_NULL;
    const char *s;
    int rc;

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    if (me == 0) {
        rc = MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_FLOAT, MPI_SUM, c);
        s = err_text(rc);
        CHECK(rc != MPI_SUCCESS && strstr(s, "timed out after 2 s waiting for rank 1"),
              "a staged allreduce rank 1 never joins: %s", s);
    } else {
        sleep(3); /* past rank 0's timeout */
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    cudaFree(d);
    free(h);
}

/* One NCCL allreduce of 64 floats on c that rank 1 does not join, rank 0's message checked
 * for what it must say of rank 1 (after the first allreduce on c, which makes c's NCCL
 * communicator with both ranks); rank 1 meanwhile runs `absent`. */
static void nccl_peer_absent(MPI_Comm c, void (*absent)(void), const char *says)
{
    float *h = host_vals(me, 64), *d = to_dev(h, 64);
    const char *s;
    int rc;

    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_FLOAT, MPI_SUM, c));
    if (me == 0) {
        rc = MPI_Allreduce(MPI_IN_PLACE, d, 64, MPI_FLOAT, MPI_SUM, c);
        s = err_text(rc);
        CHECK(rc != MPI_SUCCESS &&
                  strstr(s, "NCCL allreduce: timed out after 2 s waiting for rank 1 (") &&
                  strstr(s, "device collective 2, 256 B") && strstr(s, says),
              "a NCCL allreduce rank 1 does not join: %s (expected \"%s\")", s, says);
    } else {
        absent();
    }
    cudaFree(d);
    free(h);
}

/* Rank 1 in a host barrier that no timeout ends (polled), where its progress answers. */
static void in_host_barrier(void)
{
    mrt_polled_barrier();
}

/* Rank 1 busy outside the library past rank 0's timeout, then in the barrier. */
static void outside_library(void)
{
    sleep(3);
    mrt_polled_barrier();
}

/* --timeout-nccl-peer, 2 ranks on the NCCL path (MPISHIM_DEVICE_COLL=nccl: NCCL between two
 * processes, on one GPU with NCCL_HOSTID set per rank, run_gpu.sh), MPISHIM_TIMEOUT=2: rank
 * 1 skips a NCCL allreduce, and rank 0's timeout names it. NCCL cannot say who is missing;
 * the device roll call asks. First rank 1 waits in a host barrier (it answers: it had
 * started only the group's first device collective), then, on a communicator of its own
 * (the first one's NCCL communicator is aborted), it sleeps (it does not answer). */
static void check_nccl_peer_timeout(void)
{
    MPI_Comm c = MPI_COMM_NULL;

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    nccl_peer_absent(c, in_host_barrier, "rank 1 had started only 1 of the group's device");
    if (me == 0) {
        mrt_polled_barrier();
    }
    MPI_Comm_free(&c);
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    nccl_peer_absent(c, outside_library, "rank 1 did not answer when asked");
    if (me == 0) {
        mrt_polled_barrier();
    }
    MPI_Comm_free(&c);
}

/* Staging only: rank 0 passes host buffers, the others device buffers. */
static void check_mixed(void)
{
    size_t n = 3001;
    float *h = host_vals(me, n), *d = me == 0 ? h : to_dev(h, n), *r;

    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, d, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD));
    r = me == 0 ? h : from_dev(d, n);
    for (size_t i = 0; i < n; i++) {
        CHECK(r[i] == sum_at(i), "mixed i=%zu: %g", i, r[i]);
    }
    if (me != 0) {
        cudaFree(d);
        free(r);
    }
    free(h);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    const char *mode;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("SKIP: needs an NVIDIA GPU (cudaGetDeviceCount found none)\n");
        return 77;
    }
    if (argc > 1 && !strcmp(argv[1], "--probe")) {
        return 0;
    }
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    CUDA_OK(cudaSetDevice(me % ndev));
    if (argc > 1 && !strcmp(argv[1], "--timeout-nccl")) {
        check_nccl_timeout();
        return mrt_finish("gpu_coll --timeout-nccl");
    }
    if (argc > 1 && !strcmp(argv[1], "--timeout-nccl-peer")) {
        check_nccl_peer_timeout();
        return mrt_finish("gpu_coll --timeout-nccl-peer");
    }
    if (argc > 1 && !strcmp(argv[1], "--timeout-staged")) {
        check_staged_timeout();
        return mrt_finish("gpu_coll --timeout-staged");
    }
    mode = getenv("MPISHIM_DEVICE_COLL");
    check_classification();
    check_allreduce(7, false);
    check_allreduce((1 << 16) + 3, true);
    check_user_op();
    check_iallreduce();
    check_bcast_and_reduce(1029);
    check_allgather(257, false);
    check_allgather(257, true);
    check_pg_level();
    check_p2p();
    check_mpi_p2p();
    check_mpi_blocks();
    check_refused();
    check_freed_pointer();
    if (mode && !strcmp(mode, "staging")) {
        check_mixed();
    }
    return mrt_finish("gpu_coll");
}
