/*
 * pgc_device_allreduce.c - torch.distributed's all_reduce on a CUDA tensor, in C:
 * a pgc_tensor with device PGC_DEVICE_CUDA whose data is cudaMalloc'd memory.
 *
 *   mpicc -I/usr/local/cuda/include -o pgc_device_allreduce pgc_device_allreduce.c \
 *         -L/usr/local/cuda/lib64 -lcudart
 *   mpiexec -n 2 ./pgc_device_allreduce
 *
 * pgc_all_reduce takes the CUDA tensor through the device backend (NCCL, or staging through
 * pinned host memory where NCCL refuses the group, e.g. two ranks on one GPU) and each rank
 * checks the sum against the value it computes itself. Without a usable CUDA device it
 * says so and exits 0 (the CUDA tensor path would answer PGC_ERR_UNSUPPORTED).
 */
#include <cuda_runtime.h>
#include <pgc.h>
#include <stdio.h>
#include <stdlib.h>

#define N 4096

int main(void)
{
    pgc_init_opts opts = PGC_INIT_OPTS_DEFAULT;
    float *dev, host[N];
    int rank, size, ndev = 0, rc, bad = 0;
    pgc_tensor t;

    opts.backend = "nccl";
    if (pgc_init_process_group(&opts) != PGC_OK) {
        fprintf(stderr, "init failed: %s\n", pgc_last_error());
        return 1;
    }
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        if (rank == 0) {
            printf("no usable CUDA device here: nothing to show\n");
        }
        pgc_destroy_process_group();
        return 0;
    }
    cudaSetDevice(pgc_get_local_rank() % ndev);
    for (int i = 0; i < N; i++) {
        host[i] = (float)(rank + i);
    }
    cudaMalloc((void **)&dev, sizeof(host));
    cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice);
    t = (pgc_tensor){dev, N, PGC_FLOAT32, PGC_DEVICE_CUDA};

    rc = pgc_all_reduce(&t, PGC_SUM, NULL, 0, NULL);
    if (rc != PGC_OK) {
        printf("rank %d: pgc_all_reduce on a CUDA tensor: %s\n", rank, pgc_last_error());
    } else {
        cudaMemcpy(host, dev, sizeof(host), cudaMemcpyDeviceToHost);
        for (int i = 0; i < N; i++) {
            bad += host[i] != (float)(size * (size - 1) / 2 + size * i);
        }
        printf("rank %d: all_reduce of a CUDA tensor: %s\n", rank, bad ? "WRONG" : "correct");
    }
    cudaFree(dev);
    pgc_destroy_process_group();
    return rc != PGC_OK || bad;
}
