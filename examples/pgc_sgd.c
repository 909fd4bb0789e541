/*
 * pgc_sgd.c - distributed synchronous SGD (the last part of PyTorch's "Writing Distributed
 * Applications"), in plain C: a two-layer MLP (ReLU hidden layer, softmax cross-entropy)
 * trained on a synthetic, deterministic data set (points labelled by a fixed random linear
 * "teacher") that is partitioned across the ranks; after each backward pass the gradients
 * are averaged over the ranks, so every rank takes the same step.
 *
 * The partition is strided like DistributedSampler: step s uses the global batch of samples
 * [s B, (s + 1) B) and rank r of n takes its r-th slice of B / n samples. The average of the
 * ranks' mean gradients is then the mean gradient of the global batch, whatever n is, so
 * training on 1, 2 or 4 ranks gives the same weights up to floating-point rounding
 * (tests/scripts/test_pgc_sgd.sh checks this on the printed checksum).
 *
 * Averaging: by default average_gradients(), the tutorial's loop (one all_reduce SUM per
 * parameter, then a division by the world size). With --reducer, a DDP-style bucketed
 * reducer (pgc_reducer_*): backward marks each gradient ready as soon as it is computed,
 * the last layer first, and full buckets start their all_reduce while the earlier layer's
 * gradients are still being computed.
 *
 *   mpiexec -n 4 examples/pgc_sgd [--epochs E] [--hidden H] [--reducer]
 *                                  [--bucket-cap BYTES] [--quiet] [--time]
 *
 * Prints, as the original: "Rank r, epoch e: loss", then on rank 0 the weights checksum
 * ("weights checksum: SUM WEIGHTED") and with --time the seconds per epoch.
 */
#include "pgc_example.h"

#include <time.h>

#define DIM 8     /* input features */
#define CLASSES 4 /* output classes */
#define SAMPLES 2048
#define BATCH 64 /* global batch; divisible by 1, 2, 4, 8, 16, 32, 64 */

struct model {
    int hidden;
    float *w1, *b1, *w2, *b2; /* [hidden][DIM], [hidden], [CLASSES][hidden], [CLASSES] */
    float *g_w1, *g_b1, *g_w2, *g_b2;
};

struct opts {
    int epochs, hidden, reducer, quiet, time;
    size_t bucket_cap;
};

/* A deterministic value in [-1, 1) from two integers (a hash, not a generator with state,
 * so that every rank computes any sample independently). */
static float det_uniform(uint32_t a, uint32_t b)
{
    uint32_t h = a * 0x9E3779B1u ^ (b + 0x7F4A7C15u) * 0x85EBCA77u;
    h ^= h >> 15;
    h *= 0x2C1B3C6Du;
    h ^= h >> 12;
    h *= 0x297A2D39u;
    h ^= h >> 15;
    return (float)((double)h / 2147483648.0 - 1.0);
}

static void sample(int i, float *x, int *y)
{
    float best = -1e30f;

    for (int d = 0; d < DIM; d++) {
        x[d] = det_uniform((uint32_t)i, (uint32_t)d);
    }
    for (int c = 0; c < CLASSES; c++) {
        float z = 0;
        for (int d = 0; d < DIM; d++) {
            z += det_uniform(1000003u + (uint32_t)c, (uint32_t)d) * x[d];
        }
        if (z > best) {
            best = z;
            *y = c;
        }
    }
}

static float *alloc_floats(size_t n)
{
    float *p = calloc(n, sizeof(float));
    if (!p) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

static void model_init(struct model *m, int hidden)
{
    size_t h = (size_t)hidden;

    m->hidden = hidden;
    m->w1 = alloc_floats(h * DIM);
    m->b1 = alloc_floats(h);
    m->w2 = alloc_floats(CLASSES * h);
    m->b2 = alloc_floats(CLASSES);
    m->g_w1 = alloc_floats(h * DIM);
    m->g_b1 = alloc_floats(h);
    m->g_w2 = alloc_floats(CLASSES * h);
    m->g_b2 = alloc_floats(CLASSES);
    for (size_t k = 0; k < h * DIM; k++) {
        m->w1[k] = det_uniform(7u, (uint32_t)k) / sqrtf((float)DIM);
    }
    for (size_t k = 0; k < CLASSES * h; k++) {
        m->w2[k] = det_uniform(11u, (uint32_t)k) / sqrtf((float)hidden);
    }
}

static void model_free(struct model *m)
{
    float *all[] = {m->w1, m->b1, m->w2, m->b2, m->g_w1, m->g_b1, m->g_w2, m->g_b2};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        free(all[i]);
    }
}

/* The four parameters and their gradients, in registration (forward) order. */
static void params(struct model *m, pgc_tensor *p, pgc_tensor *g)
{
    size_t h = (size_t)m->hidden;
    float *pv[4] = {m->w1, m->b1, m->w2, m->b2}, *gv[4] = {m->g_w1, m->g_b1, m->g_w2, m->g_b2};
    size_t n[4] = {h * DIM, h, CLASSES * h, CLASSES};

    for (int i = 0; i < 4; i++) {
        p[i] = pgc_host_tensor(pv[i], n[i], PGC_FLOAT32);
        g[i] = pgc_host_tensor(gv[i], n[i], PGC_FLOAT32);
    }
}

/* Forward of one sample: hidden activations h, softmax probabilities p; returns the loss. */
static float forward(const struct model *m, const float *x, int y, float *h, float *p)
{
    float zmax = -1e30f, sum = 0;

    for (int j = 0; j < m->hidden; j++) {
        float a = m->b1[j];
        for (int d = 0; d < DIM; d++) {
            a += m->w1[j * DIM + d] * x[d];
        }
        h[j] = a > 0 ? a : 0;
    }
    for (int c = 0; c < CLASSES; c++) {
        float z = m->b2[c];
        for (int j = 0; j < m->hidden; j++) {
            z += m->w2[c * m->hidden + j] * h[j];
        }
        p[c] = z;
        zmax = z > zmax ? z : zmax;
    }
    for (int c = 0; c < CLASSES; c++) {
        p[c] = expf(p[c] - zmax);
        sum += p[c];
    }
    for (int c = 0; c < CLASSES; c++) {
        p[c] /= sum;
    }
    return -logf(p[y] > 1e-30f ? p[y] : 1e-30f);
}

/* Per-sample state of a local batch, kept for the backward pass. */
struct batch {
    int n;
    float *x, *h, *dz;
};

/* Backward of the local batch, last layer first; ready(i) is called as soon as gradient i
 * (0: w1, 1: b1, 2: w2, 3: b2) is complete. */
static void backward(struct model *m, const struct batch *b, void (*ready)(int, void *), void *arg)
{
    int H = m->hidden;

    memset(m->g_w2, 0, sizeof(float) * CLASSES * (size_t)H);
    memset(m->g_b2, 0, sizeof(float) * CLASSES);
    for (int s = 0; s < b->n; s++) {
        const float *dz = &b->dz[s * CLASSES], *h = &b->h[s * H];
        for (int c = 0; c < CLASSES; c++) {
            m->g_b2[c] += dz[c];
            for (int j = 0; j < H; j++) {
                m->g_w2[c * H + j] += dz[c] * h[j];
            }
        }
    }
    ready(3, arg);
    ready(2, arg);
    memset(m->g_w1, 0, sizeof(float) * DIM * (size_t)H);
    memset(m->g_b1, 0, sizeof(float) * (size_t)H);
    for (int s = 0; s < b->n; s++) {
        const float *dz = &b->dz[s * CLASSES], *h = &b->h[s * H], *x = &b->x[s * DIM];
        for (int j = 0; j < H; j++) {
            float dh = 0;
            if (h[j] <= 0) {
                continue;
            }
            for (int c = 0; c < CLASSES; c++) {
                dh += m->w2[c * H + j] * dz[c];
            }
            m->g_b1[j] += dh;
            for (int d = 0; d < DIM; d++) {
                m->g_w1[j * DIM + d] += dh * x[d];
            }
        }
    }
    ready(1, arg);
    ready(0, arg);
}

/* Forward over rank's slice of global batch step; fills b; returns the mean local loss. */
static float forward_batch(const struct model *m, struct batch *b, int step, int rank, int size)
{
    int local = BATCH / size, y = 0;
    float loss = 0, p[CLASSES];

    b->n = local;
    for (int s = 0; s < local; s++) {
        int i = step * BATCH + rank * local + s;
        float *x = &b->x[s * DIM];
        sample(i, x, &y);
        loss += forward(m, x, y, &b->h[s * m->hidden], p);
        /* The gradient of the mean loss over the local batch; averaging it over ranks with
         * equal batches gives the mean over the global batch. */
        for (int c = 0; c < CLASSES; c++) {
            b->dz[s * CLASSES + c] = (p[c] - (c == y ? 1.0f : 0.0f)) / (float)local;
        }
    }
    return loss / (float)local;
}

/* Gradient averaging, the tutorial's way: one all_reduce per parameter. */
static void average_gradients(struct model *m)
{
    pgc_tensor p[4], g[4];
    float size = (float)pgc_get_world_size();

    params(m, p, g);
    for (int i = 0; i < 4; i++) {
        ex_check(pgc_all_reduce(&g[i], PGC_SUM, NULL, 0, NULL), "pgc_all_reduce");
        for (size_t k = 0; k < g[i].numel; k++) {
            ((float *)g[i].data)[k] /= size;
        }
    }
}

static void no_ready(int i, void *arg)
{
    (void)i;
    (void)arg;
}

static void reducer_ready(int i, void *arg)
{
    ex_check(pgc_reducer_mark_ready(arg, i), "pgc_reducer_mark_ready");
}

static void sgd_step(struct model *m, float lr)
{
    pgc_tensor p[4], g[4];

    params(m, p, g);
    for (int i = 0; i < 4; i++) {
        float *w = p[i].data, *dw = g[i].data;
        for (size_t k = 0; k < p[i].numel; k++) {
            w[k] -= lr * dw[k];
        }
    }
}

static void parse(int argc, char **argv, struct opts *o)
{
    *o = (struct opts){.epochs = 10, .hidden = 32};
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(argv[i], "--epochs")) {
            o->epochs = atoi(v), i++;
        } else if (!strcmp(argv[i], "--hidden")) {
            o->hidden = atoi(v), i++;
        } else if (!strcmp(argv[i], "--bucket-cap")) {
            o->bucket_cap = (size_t)atol(v), i++;
        } else if (!strcmp(argv[i], "--reducer")) {
            o->reducer = 1;
        } else if (!strcmp(argv[i], "--quiet")) {
            o->quiet = 1;
        } else if (!strcmp(argv[i], "--time")) {
            o->time = 1;
        } else {
            fprintf(stderr, "usage: pgc_sgd [--epochs E] [--hidden H] [--reducer] "
                            "[--bucket-cap BYTES] [--quiet] [--time]\n");
            exit(2);
        }
    }
    if (o->epochs < 1 || o->hidden < 1) {
        fprintf(stderr, "pgc_sgd: --epochs and --hidden must be positive\n");
        exit(2);
    }
}

/* The checksum the test compares: the sum of all weights and a position-weighted sum. */
static void print_checksum(struct model *m)
{
    pgc_tensor p[4], g[4];
    double sum = 0, weighted = 0;

    params(m, p, g);
    for (int i = 0; i < 4; i++) {
        for (size_t k = 0; k < p[i].numel; k++) {
            double w = ((float *)p[i].data)[k];
            sum += w;
            weighted += w * (double)(1 + (k + 7 * (size_t)i) % 13);
        }
    }
    printf("weights checksum: %.9f %.9f\n", sum, weighted);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void train(struct model *m, const struct opts *o, pgc_reducer *red, int rank, int size)
{
    int H = m->hidden, steps = SAMPLES / BATCH;
    struct batch b = {0, alloc_floats((size_t)BATCH * DIM), alloc_floats((size_t)BATCH * H),
                      alloc_floats((size_t)BATCH * CLASSES)};

    for (int epoch = 0; epoch < o->epochs; epoch++) {
        double t0 = now();
        float epoch_loss = 0;
        for (int step = 0; step < steps; step++) {
            epoch_loss += forward_batch(m, &b, step, rank, size);
            if (red) {
                backward(m, &b, reducer_ready, red);
                ex_check(pgc_reducer_finish(red), "pgc_reducer_finish");
            } else {
                backward(m, &b, no_ready, NULL);
                average_gradients(m);
            }
            sgd_step(m, 0.5f);
        }
        if (!o->quiet) {
            printf("Rank %d, epoch %d: %.6f\n", rank, epoch, epoch_loss / (float)steps);
        }
        if (o->time && rank == 0) {
            printf("epoch %d took %.6f s\n", epoch, now() - t0);
        }
    }
    free(b.x);
    free(b.h);
    free(b.dz);
}

int main(int argc, char **argv)
{
    struct opts o;
    struct model m;
    pgc_tensor p[4], g[4];
    pgc_reducer *red = NULL;
    int rank, size;

    parse(argc, argv, &o);
    ex_init();
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    if (BATCH % size) {
        fprintf(stderr, "pgc_sgd: the world size must divide the batch of %d\n", BATCH);
        return 1;
    }
    model_init(&m, o.hidden);
    params(&m, p, g);
    /* As DDP does: every rank starts from rank 0's weights. */
    for (int i = 0; i < 4; i++) {
        ex_check(pgc_broadcast(&p[i], 0, NULL, 0, NULL), "pgc_broadcast");
    }
    if (o.reducer) {
        ex_check(pgc_reducer_create(NULL, g, 4, o.bucket_cap, &red), "pgc_reducer_create");
        if (rank == 0 && !o.quiet) {
            printf("reducer: %d bucket(s)\n", pgc_reducer_num_buckets(red));
        }
    }
    train(&m, &o, red, rank, size);
    if (rank == 0) {
        print_checksum(&m);
    }
    pgc_reducer_free(red);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    model_free(&m);
    return 0;
}
