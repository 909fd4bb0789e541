/*
 * rpc_batch_inference.c - batched inference with asynchronous execution on the callee
 * (PyTorch's "Implementing Batch RPC Processing Using Asynchronous Executions").
 *
 * worker0 serves a linear model y = W x (OUT x EX_DIM). Its function "infer" does not
 * answer at once: it adds the request to the current batch and returns a future
 * (pgc_rpc_call.async_result, torch's @rpc.functions.async_execution). When the batch is
 * full, the call that filled it runs the whole batch as one matrix product and completes
 * every request's future, which sends each answer. The server threads are never blocked
 * meanwhile. Every other worker is a client (with one process, worker0 is its own client):
 * each round it sends PER_ROUND single-sample requests with rpc_async and waits for all of
 * them (collect_all); one round of all clients is exactly one batch.
 *
 *   mpiexec -n 3 examples/rpc_batch_inference [--rounds R]
 *
 * Each client prints the sum of its answers, the server the batches it ran;
 * tests/scripts/test_rpc_examples.sh recomputes them in Python.
 */
#include "rpc_example.h"

#include <pthread.h>

#define OUT 3
#define PER_ROUND 4

static double W(int o, int j)
{
    return (o + 1) * 0.5 - j * 0.25;
}

static struct {
    pthread_mutex_t mu;
    int batch_size; /* clients x PER_ROUND */
    int n;
    double x[64][EX_DIM];
    pgc_future *f[64];
    int batches, largest;
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Runs a full batch (taken out of srv under its lock) and answers every request. */
static void run_batch(int n, double (*x)[EX_DIM], pgc_future **f)
{
    for (int i = 0; i < n; i++) {
        double y[OUT];
        pgc_tensor t = {y, OUT, PGC_FLOAT64, PGC_DEVICE_HOST};
        pgc_rpc_value v = {0};
        for (int o = 0; o < OUT; o++) {
            y[o] = 0;
            for (int j = 0; j < EX_DIM; j++) {
                y[o] += W(o, j) * x[i][j];
            }
        }
        pgc_rpc_value_add_tensor(&v, &t);
        pgc_future_set_value(f[i], &v);
        pgc_future_free(f[i]);
    }
}

/* Every worker but worker0 is a client (worker0 alone is its own). */
static int num_clients(void)
{
    pgc_rpc_worker_info w;
    int n = 0;

    while (pgc_rpc_get_worker_info_by_rank(n, &w) == PGC_OK) {
        n++;
    }
    return n > 1 ? n - 1 : 1;
}

static int infer(pgc_rpc_call *c)
{
    double x[64][EX_DIM];
    pgc_future *f[64], *mine = pgc_future_new();
    int n = 0;

    if (c->args->ntensors != 1 || c->args->tensors[0].numel != EX_DIM) {
        pgc_future_free(mine);
        return pgc_rpc_call_fail(c, "infer wants one sample of %d features", EX_DIM);
    }
    c->async_result = pgc_future_retain(mine);
    pthread_mutex_lock(&srv.mu);
    /* Set here, not by main after pgc_rpc_init: a client's request may come first. */
    if (srv.batch_size == 0) {
        srv.batch_size = num_clients() * PER_ROUND;
    }
    memcpy(srv.x[srv.n], c->args->tensors[0].data, sizeof(srv.x[0]));
    srv.f[srv.n++] = mine;
    if (srv.n == srv.batch_size) {
        n = srv.n;
        memcpy(x, srv.x, sizeof(x[0]) * (size_t)n);
        memcpy(f, srv.f, sizeof(f[0]) * (size_t)n);
        srv.n = 0;
        srv.batches++;
        srv.largest = n > srv.largest ? n : srv.largest;
    }
    pthread_mutex_unlock(&srv.mu);
    if (n) {
        run_batch(n, x, f);
    }
    return PGC_OK;
}

static void client(int c, int rounds)
{
    double sum = 0;

    for (int r = 0; r < rounds; r++) {
        pgc_future *fs[PER_ROUND], *all;
        for (int k = 0; k < PER_ROUND; k++) {
            double x[EX_DIM], y;
            pgc_tensor t = {x, EX_DIM, PGC_FLOAT64, PGC_DEVICE_HOST};
            pgc_rpc_value args = {NULL, 0, &t, 1, NULL, 0};
            rx_sample((c * rounds + r) * PER_ROUND + k, x, &y);
            rx_check(pgc_rpc_async(rx_name(0), "infer", &args, 0, &fs[k]), "infer");
        }
        rx_check(pgc_future_collect_all(fs, PER_ROUND, &all), "collect_all");
        rx_check(pgc_future_wait(all, -1), "a batch");
        for (int k = 0; k < PER_ROUND; k++) {
            const pgc_rpc_value *v = pgc_future_value(fs[k]);
            for (int o = 0; o < OUT; o++) {
                sum += ((const double *)v->tensors[0].data)[o] * (o + 1);
            }
            pgc_future_free(fs[k]);
        }
        pgc_future_free(all);
    }
    printf("client %d: %d answers, weighted sum %.9f\n", c, rounds * PER_ROUND, sum);
}

static int stats(pgc_rpc_call *c)
{
    int s[2];

    pthread_mutex_lock(&srv.mu);
    s[0] = srv.batches;
    s[1] = srv.largest;
    pthread_mutex_unlock(&srv.mu);
    return pgc_rpc_value_set_bytes(&c->ret, s, sizeof(s));
}

int main(int argc, char **argv)
{
    int rounds = 10, size, rank, clients;
    pgc_rpc_value v;

    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0) {
            rounds = atoi(argv[++i]);
        }
    }
    pgc_rpc_register("infer", infer, NULL);
    pgc_rpc_register("stats", stats, NULL);
    rank = rx_init(&size);
    clients = size > 1 ? size - 1 : 1;
    if (clients * PER_ROUND > 64) {
        fprintf(stderr, "at most %d clients\n", 64 / PER_ROUND);
        return 1;
    }
    if (rank > 0 || size == 1) {
        client(size > 1 ? rank - 1 : 0, rounds);
        if (rank == clients) {
            int s[2];
            rx_check(pgc_rpc_sync(rx_name(0), "stats", NULL, 0, &v), "stats");
            memcpy(s, v.bytes, sizeof(s));
            printf("server: %d batches so far, largest %d\n", s[0], s[1]);
            pgc_rpc_value_free(&v);
        }
    }
    rx_check(pgc_rpc_shutdown(1), "pgc_rpc_shutdown");
    if (rank == 0) {
        pthread_mutex_lock(&srv.mu);
        printf("server: %d batches of %d requests\n", srv.batches, srv.largest);
        pthread_mutex_unlock(&srv.mu);
    }
    return 0;
}
