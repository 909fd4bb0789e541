/*
 * rpc_rref_linear.c - a model that lives on another worker, trained through an RRef (the
 * RRef part of PyTorch's "Getting Started with Distributed RPC Framework", without
 * autograd: the gradients are written out).
 *
 * worker0 (the trainer) creates a linear model y = w . x + b on worker1 with pgc_remote;
 * the weights never leave worker1 during training. Each step the trainer sends a batch to
 * the model's owner (rref.rpc_sync().forward(x)), computes the mean-squared-error loss and
 * its gradient itself, and sends the gradient back for an SGD step that the owner applies
 * to the object in place (rref.rpc_sync().sgd_step(grad, lr)). At the end it pulls the
 * weights with to_here and prints them, with the loss of each epoch. With one process the
 * model lives on worker0 itself.
 *
 *   mpiexec -n 2 examples/rpc_rref_linear [--epochs E]
 *
 * tests/scripts/test_rpc_examples.sh recomputes the same training in Python and compares.
 */
#include "rpc_example.h"

#define N 32    /* samples */
#define BATCH 8 /* samples per step */
#define LR 0.1

/* The model object: one float64 tensor of EX_DIM weights and the bias. */
static int linear_init(pgc_rpc_call *c)
{
    double w[EX_DIM + 1] = {0};
    pgc_tensor t = {w, EX_DIM + 1, PGC_FLOAT64, PGC_DEVICE_HOST};

    return pgc_rpc_value_add_tensor(&c->ret, &t);
}

/* self: the model; args: a BATCH x EX_DIM tensor; returns BATCH predictions. */
static int linear_forward(pgc_rpc_call *c)
{
    const double *w = c->self->tensors[0].data, *x;
    double p[BATCH];
    size_t n;
    pgc_tensor t;

    if (c->args->ntensors != 1 || c->args->tensors[0].numel % EX_DIM ||
        c->args->tensors[0].numel / EX_DIM > BATCH) {
        return pgc_rpc_call_fail(c, "forward wants one tensor of at most %d x %d", BATCH, EX_DIM);
    }
    x = c->args->tensors[0].data;
    n = c->args->tensors[0].numel / EX_DIM;
    for (size_t i = 0; i < n; i++) {
        p[i] = w[EX_DIM];
        for (int j = 0; j < EX_DIM; j++) {
            p[i] += w[j] * x[i * EX_DIM + j];
        }
    }
    t = (pgc_tensor){p, n, PGC_FLOAT64, PGC_DEVICE_HOST};
    return pgc_rpc_value_add_tensor(&c->ret, &t);
}

/* self: the model; args: the gradient (EX_DIM + 1) and the learning rate (bytes). */
static int linear_sgd_step(pgc_rpc_call *c)
{
    double *w = c->self->tensors[0].data, lr;
    const double *g;

    if (c->args->ntensors != 1 || c->args->tensors[0].numel != EX_DIM + 1 ||
        c->args->nbytes != sizeof(lr)) {
        return pgc_rpc_call_fail(c, "sgd_step wants a gradient of %d and a learning rate",
                                 EX_DIM + 1);
    }
    g = c->args->tensors[0].data;
    memcpy(&lr, c->args->bytes, sizeof(lr));
    for (int j = 0; j <= EX_DIM; j++) {
        w[j] -= lr * g[j];
    }
    return PGC_OK;
}

/* One step on samples [s, s + BATCH): returns the batch's loss. */
static double train_step(pgc_rref *model, int s)
{
    double x[BATCH * EX_DIM], y[BATCH], g[EX_DIM + 1] = {0}, loss = 0, lr = LR;
    pgc_tensor tx = {x, BATCH * EX_DIM, PGC_FLOAT64, PGC_DEVICE_HOST};
    pgc_tensor tg = {g, EX_DIM + 1, PGC_FLOAT64, PGC_DEVICE_HOST};
    pgc_rpc_value args = {NULL, 0, &tx, 1, NULL, 0}, out;
    const double *p;

    for (int i = 0; i < BATCH; i++) {
        rx_sample(s + i, &x[i * EX_DIM], &y[i]);
    }
    rx_check(pgc_rref_rpc_sync(model, "forward", &args, 0, &out), "forward");
    p = out.tensors[0].data;
    for (int i = 0; i < BATCH; i++) {
        double e = p[i] - y[i];
        loss += e * e / BATCH;
        for (int j = 0; j < EX_DIM; j++) {
            g[j] += 2 * e * x[i * EX_DIM + j] / BATCH;
        }
        g[EX_DIM] += 2 * e / BATCH;
    }
    pgc_rpc_value_free(&out);
    args = (pgc_rpc_value){&lr, sizeof(lr), &tg, 1, NULL, 0};
    rx_check(pgc_rref_rpc_sync(model, "sgd_step", &args, 0, NULL), "sgd_step");
    return loss;
}

static void train(int epochs, int size)
{
    const char *owner = rx_name(size > 1 ? 1 : 0);
    pgc_rpc_value w;
    pgc_rref *model;

    rx_check(pgc_remote(owner, "linear_init", NULL, 0, &model), "pgc_remote");
    printf("model created on %s (owner %s, is_owner %d)\n", owner, pgc_rref_owner_name(model),
           pgc_rref_is_owner(model));
    for (int e = 0; e < epochs; e++) {
        double loss = 0;
        for (int s = 0; s < N; s += BATCH) {
            loss += train_step(model, s) / (N / BATCH);
        }
        printf("epoch %d loss %.12g\n", e, loss);
    }
    rx_check(pgc_rref_to_here(model, 0, &w), "to_here");
    printf("weights");
    for (int j = 0; j <= EX_DIM; j++) {
        printf(" %.12g", ((double *)w.tensors[0].data)[j]);
    }
    printf("\n");
    pgc_rpc_value_free(&w);
    pgc_rref_free(model);
}

int main(int argc, char **argv)
{
    int epochs = 20, size, rank;

    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--epochs") == 0) {
            epochs = atoi(argv[++i]);
        }
    }
    pgc_rpc_register("linear_init", linear_init, NULL);
    pgc_rpc_register("forward", linear_forward, NULL);
    pgc_rpc_register("sgd_step", linear_sgd_step, NULL);
    rank = rx_init(&size);
    if (rank == 0) {
        train(epochs, size);
    }
    /* Graceful: the other workers serve until the trainer is done and its RRef is gone. */
    rx_check(pgc_rpc_shutdown(1), "pgc_rpc_shutdown");
    return 0;
}
