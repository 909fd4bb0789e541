/*
 * reducer_bench.c - gradient averaging the naive way (one blocking all_reduce per
 * parameter, then a division) against the DDP-style bucketed reducer (pgc_reducer_*), on a
 * model-like set of parameter tensors, optionally with compute between gradients so the
 * reducer's buckets overlap it. Prints seconds per step for both; the weights they produce
 * are equal (tests/scripts/test_pgc_sgd.sh checks that on the SGD example).
 *
 *   mpiexec -n 2 bench/reducer_bench [--params P] [--numel N] [--steps S] [--work US]
 *                                    [--bucket-cap BYTES]
 */
#include <pgc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Stands for the backward pass computing one parameter's gradient. */
static void compute(float *g, size_t n, double us, int step)
{
    double until = now() + us * 1e-6;
    for (size_t i = 0; i < n; i++) {
        g[i] = (float)((i + (size_t)step) % 7);
    }
    while (now() < until) {
    }
}

int main(int argc, char **argv)
{
    int params = 200, steps = 20;
    size_t numel = 1000;
    double work_us = 0;
    size_t cap = 0; /* 0: the default, 25 MiB as DDP */
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--params")) params = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--numel")) numel = (size_t)atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--work")) work_us = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--bucket-cap")) cap = (size_t)atol(argv[i + 1]);
    }
    if (pgc_init_process_group(NULL) != PGC_OK) {
        fprintf(stderr, "reducer_bench: init failed: %s\n", pgc_last_error());
        return 1;
    }
    float *mem = calloc((size_t)params * numel, sizeof(float));
    pgc_tensor *grads = calloc((size_t)params, sizeof(*grads));
    for (int p = 0; p < params; p++) {
        grads[p] = pgc_host_tensor(mem + (size_t)p * numel, numel, PGC_FLOAT32);
    }
    pgc_reducer *red;
    if (pgc_reducer_create(NULL, grads, params, cap, &red) != PGC_OK) {
        fprintf(stderr, "reducer_bench: %s\n", pgc_last_error());
        return 1;
    }
    double t_naive = 0, t_red = 0;
    for (int s = 0; s < steps; s++) {
        double t0 = now();
        for (int p = params - 1; p >= 0; p--) { /* backward: last layer first */
            compute(grads[p].data, numel, work_us, s);
            pgc_all_reduce(&grads[p], PGC_AVG, NULL, 0, NULL);
        }
        double t1 = now();
        for (int p = params - 1; p >= 0; p--) {
            compute(grads[p].data, numel, work_us, s);
            pgc_reducer_mark_ready(red, p);
        }
        pgc_reducer_finish(red);
        double t2 = now();
        if (s > 0) { /* the first step warms up */
            t_naive += t1 - t0;
            t_red += t2 - t1;
        }
    }
    if (pgc_get_rank() == 0) {
        printf("ranks %d, %d params x %zu floats, %.0f us compute per param, %d buckets\n",
               pgc_get_world_size(), params, numel, work_us, pgc_reducer_num_buckets(red));
        printf("naive per-parameter all_reduce: %.3f ms/step\n", t_naive / (steps - 1) * 1e3);
        printf("bucketed reducer:               %.3f ms/step\n", t_red / (steps - 1) * 1e3);
    }
    pgc_reducer_free(red);
    free(grads);
    free(mem);
    pgc_destroy_process_group();
    return 0;
}
