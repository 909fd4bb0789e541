/*
 * dev_bench.c - bus bandwidth of allreduce, broadcast and allgather on CUDA device buffers:
 * mpishim (MPI_Allreduce/MPI_Bcast/MPI_Allgather with device pointers) beside raw NCCL on
 * a communicator of the same ranks, for the same sizes.
 *
 * Definitions as in nccl-tests (doc/PERFORMANCE.md there): for a message of S bytes and
 * time t, algbw = S / t; busbw = algbw * 2(n-1)/n for allreduce, * (n-1)/n for allgather
 * (S is the gathered size), * 1 for broadcast. Times are averages over iterations after a
 * warm-up, the maximum over ranks. At 1 rank busbw is 0 for allreduce and allgather (no
 * data crosses a link); algbw is printed too. Where NCCL refuses the ranks (several on one
 * GPU) only mpishim's columns are printed: its staging fallback.
 *
 *   mpiexec -n 1 bench/dev_bench [max_bytes]
 *
 * Without a GPU it prints a line saying so and exits 0 (a benchmark never fails a build).
 */
#include "config.h"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum coll { ALLREDUCE, BCAST, ALLGATHER };
static const char *const coll_name[] = {"allreduce", "broadcast", "allgather"};

static int me, np;
static ncclComm_t nccl;
static bool have_nccl; /* false: NCCL refused these ranks (one GPU each); mpishim alone */
static cudaStream_t stream;

/* S bytes of payload per call (allgather: the gathered size). */
static void run_mpi(enum coll c, float *buf, float *out, size_t bytes)
{
    int n = (int)(bytes / sizeof(float));

    if (c == ALLREDUCE) {
        MPI_Allreduce(buf, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    } else if (c == BCAST) {
        MPI_Bcast(buf, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    } else {
        MPI_Allgather(buf, n / np, MPI_FLOAT, out, n / np, MPI_FLOAT, MPI_COMM_WORLD);
    }
}

static void run_nccl(enum coll c, float *buf, float *out, size_t bytes)
{
    size_t n = bytes / sizeof(float);

    if (c == ALLREDUCE) {
        ncclAllReduce(buf, out, n, ncclFloat32, ncclSum, nccl, stream);
    } else if (c == BCAST) {
        ncclBroadcast(buf, buf, n, ncclFloat32, 0, nccl, stream);
    } else {
        ncclAllGather(buf, out, n / (size_t)np, ncclFloat32, nccl, stream);
    }
    cudaStreamSynchronize(stream); /* the same semantics as the blocking MPI call */
}

static double time_it(bool use_nccl, enum coll c, float *buf, float *out, size_t bytes, int iters)
{
    double t0, t, tmax;

    for (int i = 0; i < 3; i++) {
        use_nccl ? run_nccl(c, buf, out, bytes) : run_mpi(c, buf, out, bytes);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int i = 0; i < iters; i++) {
        use_nccl ? run_nccl(c, buf, out, bytes) : run_mpi(c, buf, out, bytes);
    }
    t = (MPI_Wtime() - t0) / iters;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

static double bus_factor(enum coll c)
{
    if (c == ALLREDUCE) {
        return 2.0 * (np - 1) / np;
    }
    return c == ALLGATHER ? (double)(np - 1) / np : 1.0;
}

static void bench(enum coll c, float *buf, float *out, size_t max_bytes)
{
    if (me == 0) {
        printf("\n# %s on %d rank(s), device buffers (GB/s)\n", coll_name[c], np);
        printf("# %12s %10s %10s %10s %10s %10s %10s\n", "bytes", "us_mpishim", "algbw", "busbw",
               "us_nccl", "algbw", "busbw");
    }
    for (size_t bytes = 1024 * (size_t)np; bytes <= max_bytes; bytes *= 4) {
        int iters = bytes < (1 << 20) ? 200 : 20;
        double tm = time_it(false, c, buf, out, bytes, iters);
        double am = bytes / tm / 1e9;
        if (me == 0) {
            printf("  %12zu %10.1f %10.2f %10.2f", bytes, tm * 1e6, am, am * bus_factor(c));
        }
        if (have_nccl) {
            double tn = time_it(true, c, buf, out, bytes, iters), an = bytes / tn / 1e9;
            if (me == 0) {
                printf(" %10.1f %10.2f %10.2f", tn * 1e6, an, an * bus_factor(c));
            }
        }
        if (me == 0) {
            printf("\n");
        }
    }
}

int main(int argc, char **argv)
{
    int ndev = 0;
    size_t max_bytes = argc > 1 ? strtoull(argv[1], NULL, 0) : ((size_t)64 << 20);
    ncclUniqueId id;
    float *buf, *out;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("dev_bench: SKIP: needs an NVIDIA GPU (cudaGetDeviceCount found none)\n");
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    cudaSetDevice(me % ndev);
    if (me == 0) {
        ncclGetUniqueId(&id);
    }
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
    have_nccl = ncclCommInitRank(&nccl, np, id, me) == ncclSuccess;
    if (!have_nccl && me == 0) {
        printf("dev_bench: raw NCCL refused these %d ranks (it needs one GPU each): mpishim "
               "alone, through its staging fallback\n",
               np);
    }
    cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
    cudaMalloc((void **)&buf, max_bytes);
    cudaMalloc((void **)&out, max_bytes);
    cudaMemset(buf, 0, max_bytes);
    for (int c = ALLREDUCE; c <= ALLGATHER; c++) {
        bench((enum coll)c, buf, out, max_bytes);
    }
    cudaFree(buf);
    cudaFree(out);
    if (have_nccl) {
        ncclCommDestroy(nccl);
    }
    MPI_Finalize();
    return 0;
}
