/*
 * pgc_reducer.c - a gradient reducer in the spirit of DDP's Reducer (see pgc.h).
 *
 * Gradients are assigned to buckets in reverse registration order (backward produces the
 * last layer first), a bucket holding gradients of one dtype and at most bucket_cap bytes
 * (one larger gradient gets a bucket of its own). Each bucket owns a flat buffer; marking a
 * gradient ready copies it in, and when a bucket's last gradient is marked its all_reduce
 * (AVG) starts asynchronously. Buckets start strictly in bucket order on every rank, as in
 * DDP: collectives on a group must be issued in the same order everywhere, whatever order
 * the gradients become ready in. finish waits, and copies the averages back.
 */
#include "config.h"

#include "mps_log.h"
#include "pgc_internal.h"
#include "pgc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PGC_REDUCER_DEFAULT_CAP (25u << 20)

struct bucket {
    void *flat;
    size_t numel;
    pgc_dtype dtype;
    int pending; /* gradients not yet marked in this step */
    int nparams;
    pgc_work *work; /* the all_reduce in flight, or NULL */
    bool launched;
};

struct pgc_reducer {
    pgc_group *group;
    struct pg_group *g;
    pgc_tensor *grads;
    int n;
    int *bucket_of; /* gradient -> bucket */
    size_t *offset; /* gradient -> element offset in its bucket */
    char *ready;    /* gradient marked in this step */
    struct bucket *b;
    int nb;
    int next_launch; /* the first bucket not started yet */
};

static int check_grads(struct pg_group *g, const pgc_tensor *grads, int n)
{
    char what[40];

    if (!grads || n < 1) {
        return pgc_fail(PGC_ERR_INVALID_ARG, "pgc_reducer_create", g, "%d gradients", n);
    }
    for (int i = 0; i < n; i++) {
        int rc;
        snprintf(what, sizeof(what), "gradient %d", i);
        rc = pgc_check_tensor("pgc_reducer_create", g, &grads[i], what);
        if (rc != PGC_OK) {
            return rc;
        }
        if (grads[i].dtype != PGC_FLOAT32 && grads[i].dtype != PGC_FLOAT64 &&
            grads[i].dtype != PGC_FLOAT16 && grads[i].dtype != PGC_BFLOAT16) {
            return pgc_fail(PGC_ERR_INVALID_DTYPE, "pgc_reducer_create", g,
                            "%s is %s; gradients are floating point", what,
                            pgc_dtype_name(grads[i].dtype));
        }
    }
    return PGC_OK;
}

/* Assigns gradients to buckets, last gradient first; counts the buckets. */
static void assign_buckets(struct pgc_reducer *r, size_t cap)
{
    size_t bytes = 0;
    int cur = -1;

    for (int i = r->n - 1; i >= 0; i--) {
        const pgc_tensor *t = &r->grads[i];
        size_t sz = t->numel * pgc_dtype_size(t->dtype);
        bool fits = cur >= 0 && r->b[cur].dtype == t->dtype && bytes + sz <= cap;
        if (!fits) {
            cur++;
            r->b[cur].dtype = t->dtype;
            bytes = 0;
        }
        r->bucket_of[i] = cur;
        r->offset[i] = r->b[cur].numel;
        r->b[cur].numel += t->numel;
        r->b[cur].nparams++;
        bytes += sz;
    }
    r->nb = cur + 1;
}

static int alloc_state(struct pgc_reducer *r, const pgc_tensor *grads, int n)
{
    r->n = n;
    r->grads = malloc(sizeof(pgc_tensor) * (size_t)n);
    r->bucket_of = malloc(sizeof(int) * (size_t)n);
    r->offset = malloc(sizeof(size_t) * (size_t)n);
    r->ready = calloc((size_t)n, 1);
    r->b = calloc((size_t)n, sizeof(struct bucket));
    if (!r->grads || !r->bucket_of || !r->offset || !r->ready || !r->b) {
        return mps_error(PGC_ERR_NOMEM, "pgc_reducer_create: no memory for %d gradients", n);
    }
    memcpy(r->grads, grads, sizeof(pgc_tensor) * (size_t)n);
    return PGC_OK;
}

static void reset_step(struct pgc_reducer *r)
{
    memset(r->ready, 0, (size_t)r->n);
    for (int k = 0; k < r->nb; k++) {
        r->b[k].pending = r->b[k].nparams;
        r->b[k].launched = false;
    }
    r->next_launch = 0;
}

int pgc_reducer_create(pgc_group *group, const pgc_tensor *grads, int n, size_t bucket_cap_bytes,
                       pgc_reducer **out)
{
    struct pgc_reducer *r;
    struct pg_group *g;
    int rc;

    if (!out) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_reducer_create: NULL output");
    }
    *out = NULL;
    rc = pgc_resolve_group("pgc_reducer_create", group, &g);
    if (rc == PGC_OK) {
        rc = check_grads(g, grads, n);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    r = calloc(1, sizeof(*r));
    if (!r) {
        return mps_error(PGC_ERR_NOMEM, "pgc_reducer_create: no memory");
    }
    rc = alloc_state(r, grads, n);
    if (rc == PGC_OK) {
        assign_buckets(r, bucket_cap_bytes ? bucket_cap_bytes : PGC_REDUCER_DEFAULT_CAP);
        for (int k = 0; k < r->nb && rc == PGC_OK; k++) {
            r->b[k].flat = malloc(r->b[k].numel * pgc_dtype_size(r->b[k].dtype) + 1);
            if (!r->b[k].flat) {
                rc = mps_error(PGC_ERR_NOMEM, "pgc_reducer_create: no memory for bucket %d", k);
            }
        }
    }
    if (rc != PGC_OK) {
        r->g = NULL;
        pgc_reducer_free(r);
        return rc;
    }
    pg_group_retain(g);
    r->g = g;
    r->group = pgc_of(g);
    reset_step(r);
    *out = r;
    return PGC_OK;
}

int pgc_reducer_num_buckets(pgc_reducer *r)
{
    return r ? r->nb : mps_error(PGC_ERR_INVALID_ARG, "pgc_reducer_num_buckets: NULL reducer");
}

/* Starts every bucket that is complete, in bucket order; polls those in flight, so that a
 * caller busy computing still makes their communication progress. */
static int launch_ready(struct pgc_reducer *r)
{
    while (r->next_launch < r->nb && r->b[r->next_launch].pending == 0) {
        struct bucket *b = &r->b[r->next_launch];
        pgc_tensor t = pgc_host_tensor(b->flat, b->numel, b->dtype);
        int rc = pgc_all_reduce(&t, PGC_AVG, r->group, 1, &b->work);
        if (rc != PGC_OK) {
            return rc;
        }
        b->launched = true;
        r->next_launch++;
    }
    for (int k = 0; k < r->next_launch; k++) {
        if (r->b[k].work) {
            pgc_work_is_completed(r->b[k].work);
        }
    }
    return PGC_OK;
}

static void copy_in(struct pgc_reducer *r, int i)
{
    struct bucket *b = &r->b[r->bucket_of[i]];
    size_t esz = pgc_dtype_size(b->dtype);

    memcpy((char *)b->flat + r->offset[i] * esz, r->grads[i].data, r->grads[i].numel * esz);
    r->ready[i] = 1;
    b->pending--;
}

int pgc_reducer_mark_ready(pgc_reducer *r, int index)
{
    if (!r) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_reducer_mark_ready: NULL reducer");
    }
    if (index < 0 || index >= r->n) {
        return pgc_fail(PGC_ERR_INVALID_ARG, "pgc_reducer_mark_ready", r->g,
                        "gradient %d outside 0..%d", index, r->n - 1);
    }
    if (r->ready[index]) {
        return pgc_fail(PGC_ERR_INVALID_ARG, "pgc_reducer_mark_ready", r->g,
                        "gradient %d was already marked ready in this step", index);
    }
    copy_in(r, index);
    return launch_ready(r);
}

/* Waits for every started bucket; copies the averages back. Returns the first error. */
static int wait_all(struct pgc_reducer *r)
{
    int rc = PGC_OK;

    for (int k = 0; k < r->nb; k++) {
        struct bucket *b = &r->b[k];
        int st;
        if (!b->work) {
            continue;
        }
        st = pgc_work_wait(b->work, 0);
        pgc_work_free(b->work);
        b->work = NULL;
        if (st != PGC_OK && rc == PGC_OK) {
            rc = st;
        }
    }
    return rc;
}

int pgc_reducer_finish(pgc_reducer *r)
{
    int rc = PGC_OK;

    if (!r) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_reducer_finish: NULL reducer");
    }
    for (int i = r->n - 1; i >= 0; i--) {
        if (!r->ready[i]) {
            copy_in(r, i);
        }
    }
    rc = launch_ready(r);
    if (rc == PGC_OK) {
        rc = wait_all(r);
    } else {
        wait_all(r);
    }
    for (int i = 0; i < r->n && rc == PGC_OK; i++) {
        struct bucket *b = &r->b[r->bucket_of[i]];
        size_t esz = pgc_dtype_size(b->dtype);
        memcpy(r->grads[i].data, (char *)b->flat + r->offset[i] * esz, r->grads[i].numel * esz);
    }
    reset_step(r);
    return rc;
}

void pgc_reducer_free(pgc_reducer *r)
{
    if (!r) {
        return;
    }
    if (r->b) {
        wait_all(r);
        for (int k = 0; k < r->nb; k++) {
            free(r->b[k].flat);
        }
    }
    free(r->b);
    free(r->grads);
    free(r->bucket_of);
    free(r->offset);
    free(r->ready);
    if (r->g) {
        pg_group_release(r->g);
    }
    free(r);
}
