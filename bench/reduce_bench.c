/*
 * reduce_bench.c - throughput of the local reduction kernels (pg_reduce_local) next to
 * memcpy, on buffers of 1 MiB (override with the first argument, in KiB).
 *
 * "GB/s" is the size of one buffer divided by the time of one call, the rate at which a
 * collective can fold incoming data. "traffic" counts every byte the call moves: a
 * reduction reads in and inout and writes inout (3x), memcpy reads and writes (2x).
 * A benchmark, not a test: it prints a table and never fails on a timing.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pg_dtype.h"
#include "pgc_status.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Repeats the call until 0.2 s have passed and reports the best of 5 such rounds, which is
 * the least disturbed by other processes on a shared machine. */
#define TIME_BEST(secs_per_call, CALL)                                                             \
    do {                                                                                           \
        double best_ = 1e30;                                                                       \
        for (int round_ = 0; round_ < 5; round_++) {                                               \
            long iters_ = 0;                                                                       \
            double t0_ = now_s(), t1_;                                                             \
            do {                                                                                   \
                CALL;                                                                              \
                iters_++;                                                                          \
                t1_ = now_s();                                                                     \
            } while (t1_ - t0_ < 0.2);                                                             \
            if ((t1_ - t0_) / (double)iters_ < best_) {                                            \
                best_ = (t1_ - t0_) / (double)iters_;                                              \
            }                                                                                      \
        }                                                                                          \
        (secs_per_call) = best_;                                                                   \
    } while (0)

static void print_row(const char *what, size_t bytes, double secs, int passes)
{
    printf("%-18s %10.2f %10.2f %10.2f\n", what, secs * 1e6, (double)bytes / secs / 1e9,
           (double)passes * (double)bytes / secs / 1e9);
}

int main(int argc, char **argv)
{
    static const enum pg_dtype types[] = {PG_FLOAT, PG_DOUBLE, PG_INT32, PG_FLOAT16, PG_BFLOAT16};
    size_t bytes = (argc > 1 ? strtoul(argv[1], NULL, 10) : 1024) * 1024;
    unsigned char *in = aligned_alloc(64, bytes);
    unsigned char *io = aligned_alloc(64, bytes);
    double secs;
    char label[32];

    if (in == NULL || io == NULL || bytes == 0) {
        fprintf(stderr, "reduce_bench: cannot allocate two buffers of %zu bytes\n", bytes);
        return 1;
    }
    /* Zero bytes are a valid value of every type, and keep float sums free of overflow. */
    memset(in, 0, bytes);
    memset(io, 0, bytes);
    printf("buffers of %zu KiB\n%-18s %10s %10s %10s\n", bytes / 1024, "kernel", "us/call", "GB/s",
           "traffic");
    TIME_BEST(secs, memcpy(io, in, bytes));
    print_row("memcpy", bytes, secs, 2);
    for (size_t t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        size_t count = bytes / pg_dtype_size(types[t]);
        int rc = pg_reduce_local(in, io, count, types[t], PG_OP_SUM);
        if (rc != PGC_OK) {
            fprintf(stderr, "reduce_bench: sum on %s failed: %s\n", pg_dtype_name(types[t]),
                    pgc_strerror(rc));
            return 1;
        }
        TIME_BEST(secs, pg_reduce_local(in, io, count, types[t], PG_OP_SUM));
        snprintf(label, sizeof(label), "sum %s", pg_dtype_name(types[t]));
        print_row(label, bytes, secs, 3);
    }
    free(in);
    free(io);
    return 0;
}
