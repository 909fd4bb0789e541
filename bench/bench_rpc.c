/*
 * bench_rpc.c - pgc_rpc_sync echo round trips (8 B, 1 KiB, 1 MiB), the counterpart of
 * bench/rpc_torch.py (torch.distributed.rpc.rpc_sync of the same echo).
 *
 * worker0 calls "echo" on worker1 (on itself with one process) ITERS times per size after
 * a warm-up and prints one line per size: "size median_us mean_us". 8 B and 1 KiB travel
 * as bytes; 1 MiB as a uint8 tensor (its own message, sent from the caller's memory), as
 * torch sends a tensor. Both sides answer with a copy of what arrived.
 *
 *   mpiexec -n 2 bench/bench_rpc [ITERS]
 *
 * bench/rpc_compare.sh runs it interleaved with the torch script. A benchmark, not a test:
 * it never fails on a timing.
 */
#include <pgc_rpc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int echo(pgc_rpc_call *c)
{
    int rc = c->args->nbytes ? pgc_rpc_value_set_bytes(&c->ret, c->args->bytes, c->args->nbytes)
                             : PGC_OK;

    for (int i = 0; rc == PGC_OK && i < c->args->ntensors; i++) {
        rc = pgc_rpc_value_add_tensor(&c->ret, &c->args->tensors[i]);
    }
    return rc;
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static void run(const char *to, size_t size, int iters)
{
    unsigned char *buf = calloc(size, 1);
    double *t = calloc((size_t)iters, sizeof(double)), sum = 0;
    pgc_tensor tensor = {buf, size, PGC_UINT8, PGC_DEVICE_HOST};
    pgc_rpc_value args = {0}, r;

    if (size >= 1 << 20) {
        args.tensors = &tensor;
        args.ntensors = 1;
    } else {
        args.bytes = buf;
        args.nbytes = size;
    }
    for (int i = -iters / 10 - 2; i < iters; i++) {
        double t0 = now_us();
        if (pgc_rpc_sync(to, "echo", &args, 0, &r) != PGC_OK) {
            fprintf(stderr, "bench_rpc: %s\n", pgc_last_error());
            exit(1);
        }
        if (i >= 0) {
            t[i] = now_us() - t0;
            sum += t[i];
        }
        pgc_rpc_value_free(&r);
    }
    qsort(t, (size_t)iters, sizeof(double), cmp);
    printf("%zu %.1f %.1f\n", size, t[iters / 2], sum / iters);
    fflush(stdout);
    free(t);
    free(buf);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 1000;
    const char *r = getenv("RANK") ? getenv("RANK") : "0";
    pgc_rpc_worker_info me, peer;
    char name[32];

    snprintf(name, sizeof(name), "worker%s", r);
    pgc_rpc_register("echo", echo, NULL);
    if (pgc_rpc_init(name, -1, -1, NULL) != PGC_OK) {
        fprintf(stderr, "bench_rpc: %s\n", pgc_last_error());
        return 1;
    }
    pgc_rpc_get_self(&me);
    if (me.rank == 0) {
        if (pgc_rpc_get_worker_info_by_rank(1, &peer) != PGC_OK) {
            pgc_rpc_get_self(&peer);
        }
        printf("# pgc_rpc_sync echo worker0 -> %s, %d iterations\n# size median_us mean_us\n",
               peer.name, iters);
        run(peer.name, 8, iters);
        run(peer.name, 1024, iters);
        run(peer.name, 1 << 20, iters / 10 > 10 ? iters / 10 : 10);
    }
    pgc_rpc_shutdown(1);
    return 0;
}
