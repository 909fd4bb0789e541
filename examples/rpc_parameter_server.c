/*
 * rpc_parameter_server.c - a parameter server with several trainers updating it
 * asynchronously, HogWild style (PyTorch's "Implementing a Parameter Server Using
 * Distributed RPC Framework", with a linear model and written-out gradients).
 *
 * worker0 is the parameter server: it holds the weights and serves get_params and
 * push_grad (an SGD step applied as soon as a gradient arrives, whatever the weights the
 * trainer read). Every other worker is a trainer (with one process, worker0 is both): each
 * loops over its own shard of the data, reads the current weights, computes the
 * mean-squared-error gradient of a mini-batch and pushes it, without waiting for the
 * others. Updates interleave differently on every run; the data are exactly linear, so the
 * weights still converge to the teacher's, which the server prints with the number of
 * updates it applied.
 *
 *   mpiexec -n 3 examples/rpc_parameter_server [--steps S]
 *
 * tests/scripts/test_rpc_examples.sh checks the weights against the teacher (computed in
 * Python) and the update count against trainers x steps.
 */
#include "rpc_example.h"

#include <pthread.h>

#define SHARD 64 /* samples per trainer */
#define BATCH 8
#define LR 0.3

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double w[EX_DIM + 1];
    long updates;
    int done;
} ps = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, {0}, 0, 0};

static int get_params(pgc_rpc_call *c)
{
    double w[EX_DIM + 1];
    pgc_tensor t = {w, EX_DIM + 1, PGC_FLOAT64, PGC_DEVICE_HOST};

    pthread_mutex_lock(&ps.mu);
    memcpy(w, ps.w, sizeof(w));
    pthread_mutex_unlock(&ps.mu);
    return pgc_rpc_value_add_tensor(&c->ret, &t);
}

static int push_grad(pgc_rpc_call *c)
{
    const double *g;

    if (c->args->ntensors != 1 || c->args->tensors[0].numel != EX_DIM + 1) {
        return pgc_rpc_call_fail(c, "push_grad wants a gradient of %d", EX_DIM + 1);
    }
    g = c->args->tensors[0].data;
    pthread_mutex_lock(&ps.mu);
    for (int j = 0; j <= EX_DIM; j++) {
        ps.w[j] -= LR * g[j];
    }
    ps.updates++;
    pthread_mutex_unlock(&ps.mu);
    return PGC_OK;
}

static int trainer_done(pgc_rpc_call *c)
{
    (void)c;
    pthread_mutex_lock(&ps.mu);
    ps.done++;
    pthread_cond_broadcast(&ps.cv);
    pthread_mutex_unlock(&ps.mu);
    return PGC_OK;
}

static void trainer(int t, int steps)
{
    for (int s = 0; s < steps; s++) {
        double x[EX_DIM], y, g[EX_DIM + 1] = {0};
        pgc_tensor tg = {g, EX_DIM + 1, PGC_FLOAT64, PGC_DEVICE_HOST};
        pgc_rpc_value args = {NULL, 0, &tg, 1, NULL, 0}, cur;
        const double *w;
        rx_check(pgc_rpc_sync(rx_name(0), "get_params", NULL, 0, &cur), "get_params");
        w = cur.tensors[0].data;
        for (int i = 0; i < BATCH; i++) {
            int k = t * SHARD + (s * BATCH + i) % SHARD;
            double e;
            rx_sample(k, x, &y);
            e = w[EX_DIM] - y;
            for (int j = 0; j < EX_DIM; j++) {
                e += w[j] * x[j];
            }
            for (int j = 0; j < EX_DIM; j++) {
                g[j] += 2 * e * x[j] / BATCH;
            }
            g[EX_DIM] += 2 * e / BATCH;
        }
        pgc_rpc_value_free(&cur);
        rx_check(pgc_rpc_sync(rx_name(0), "push_grad", &args, 0, NULL), "push_grad");
    }
    rx_check(pgc_rpc_sync(rx_name(0), "trainer_done", NULL, 0, NULL), "trainer_done");
}

int main(int argc, char **argv)
{
    int steps = 800, size, rank, trainers;

    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--steps") == 0) {
            steps = atoi(argv[++i]);
        }
    }
    pgc_rpc_register("get_params", get_params, NULL);
    pgc_rpc_register("push_grad", push_grad, NULL);
    pgc_rpc_register("trainer_done", trainer_done, NULL);
    rank = rx_init(&size);
    trainers = size > 1 ? size - 1 : 1;
    if (rank > 0 || size == 1) {
        trainer(size > 1 ? rank - 1 : 0, steps);
    }
    if (rank == 0) {
        pthread_mutex_lock(&ps.mu);
        while (ps.done < trainers) {
            pthread_cond_wait(&ps.cv, &ps.mu);
        }
        printf("parameter server: %d trainers, %ld updates\nweights", trainers, ps.updates);
        for (int j = 0; j <= EX_DIM; j++) {
            printf(" %.9f", ps.w[j]);
        }
        printf("\n");
        pthread_mutex_unlock(&ps.mu);
    }
    rx_check(pgc_rpc_shutdown(1), "pgc_rpc_shutdown");
    return 0;
}
