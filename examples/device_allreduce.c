/*
 * device_allreduce.c - CUDA-aware MPI: MPI_Allreduce straight on cudaMalloc'd memory, no
 * hand-written staging. mpishim sends device buffers through NCCL (one GPU per rank) or
 * stages them through pinned host memory (several ranks on one GPU, user ops); the result
 * is in the device buffer when MPI_Allreduce returns.
 *
 *   mpicc -I/usr/local/cuda/include -o device_allreduce device_allreduce.c \
 *         -L/usr/local/cuda/lib64 -lcudart
 *   mpiexec -n 2 ./device_allreduce
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1048576

int main(int argc, char **argv)
{
    int rank, size, ndev = 0, bad = 0;
    float *dev, *host = malloc(N * sizeof(float));

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!MPIX_Query_cuda_support() || cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) {
            printf("no usable CUDA device here: nothing to show (MPIX_Query_cuda_support = %d)\n",
                   MPIX_Query_cuda_support());
        }
        MPI_Finalize();
        return 0;
    }
    cudaSetDevice(rank % ndev); /* one device per rank where there are enough */
    for (int i = 0; i < N; i++) {
        host[i] = (float)(rank + i % 100);
    }
    cudaMalloc((void **)&dev, N * sizeof(float));
    cudaMemcpy(dev, host, N * sizeof(float), cudaMemcpyHostToDevice);

    /* The buffer is ready (cudaMemcpy synchronized), as MPI requires of input data. */
    MPI_Allreduce(MPI_IN_PLACE, dev, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);

    cudaMemcpy(host, dev, N * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < N; i++) {
        float want = (float)(size * (size - 1) / 2 + size * (i % 100));
        bad += host[i] != want;
    }
    printf("rank %d: allreduce of %d floats on the device: %s\n", rank, N,
           bad ? "WRONG" : "correct");
    cudaFree(dev);
    free(host);
    MPI_Finalize();
    return bad != 0;
}
