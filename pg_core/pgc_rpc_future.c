/*
 * pgc_rpc_future.c - futures (torch.futures.Future) and the helpers that fill a
 * pgc_rpc_value.
 *
 * A future is a mutex, a condition variable and a list of callbacks. Its state is also
 * read without the mutex (pgc_future_done, the short spin of a wait), so it is written
 * with release and read with acquire: whoever sees it complete sees its value.
 */
#include "config.h"

#include "mps_log.h"
#include "pgc_internal.h"
#include "pgc_rpc_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- values ---- */

int pgc_rpc_value_set_bytes(pgc_rpc_value *v, const void *data, size_t n)
{
    void *copy = malloc(n ? n : 1);

    if (!v || (n && !data)) {
        free(copy);
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_rpc_value_set_bytes: NULL value or data");
    }
    if (!copy) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc_value_set_bytes: %zu bytes", n);
    }
    if (n) {
        memcpy(copy, data, n);
    }
    free(v->bytes);
    v->bytes = copy;
    v->nbytes = n;
    return PGC_OK;
}

int pgc_rpc_value_add_tensor(pgc_rpc_value *v, const pgc_tensor *t)
{
    size_t es = t ? pgc_dtype_size(t->dtype) : 0;
    pgc_tensor *arr;
    void *data;

    if (!v || !t || es == 0 || t->device != PGC_DEVICE_HOST || (t->numel && !t->data)) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_rpc_value_add_tensor: a host tensor with a "
                                              "valid dtype and data is needed");
    }
    arr = realloc(v->tensors, sizeof(*arr) * (size_t)(v->ntensors + 1));
    if (!arr) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc_value_add_tensor");
    }
    v->tensors = arr;
    data = malloc(t->numel > 0 ? t->numel * es : 1);
    if (!data) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc_value_add_tensor: %zu bytes", t->numel * es);
    }
    if (t->numel) {
        memcpy(data, t->data, t->numel * es);
    }
    arr[v->ntensors++] = pgc_host_tensor(data, t->numel, t->dtype);
    return PGC_OK;
}

int pgc_rpc_value_add_rref(pgc_rpc_value *v, pgc_rref *r)
{
    pgc_rref **arr;

    if (!v || !r) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_rpc_value_add_rref: NULL value or rref");
    }
    arr = realloc(v->rrefs, sizeof(*arr) * (size_t)(v->nrrefs + 1));
    if (!arr) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc_value_add_rref");
    }
    v->rrefs = arr;
    arr[v->nrrefs++] = pgc_rref_retain(r);
    return PGC_OK;
}

void pgc_rpc_value_free(pgc_rpc_value *v)
{
    if (!v) {
        return;
    }
    free(v->bytes);
    for (int i = 0; i < v->ntensors; i++) {
        free(v->tensors[i].data);
    }
    free(v->tensors);
    for (int i = 0; i < v->nrrefs; i++) {
        pgc_rref_free(v->rrefs[i]);
    }
    free(v->rrefs);
    memset(v, 0, sizeof(*v));
}

/* ---- futures ---- */

pgc_future *pgc_future_new(void)
{
    pgc_future *f = calloc(1, sizeof(*f));
    pthread_condattr_t ca;

    if (!f) {
        mps_error(PGC_ERR_NOMEM, "pgc_future_new");
        return NULL;
    }
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    f->state = PGC_ERR_PENDING;
    f->refs = 1;
    return f;
}

pgc_future *rpc_future_ref(pgc_future *f)
{
    __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
    return f;
}

pgc_future *pgc_future_retain(pgc_future *f)
{
    return f ? rpc_future_ref(f) : NULL;
}

void pgc_future_free(pgc_future *f)
{
    struct rpc_cb *cb;

    if (!f || __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) != 0) {
        return;
    }
    while ((cb = f->cbs)) {
        f->cbs = cb->next;
        free(cb);
    }
    pgc_rpc_value_free(&f->value);
    free(f->error);
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static int state_of(pgc_future *f)
{
    return __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
}

int rpc_future_complete(pgc_future *f, int status, const char *text, pgc_rpc_value *v)
{
    struct rpc_cb *cbs;

    pthread_mutex_lock(&f->mu);
    if (state_of(f) != PGC_ERR_PENDING) {
        pthread_mutex_unlock(&f->mu);
        if (v) {
            pgc_rpc_value_free(v);
        }
        return PGC_ERR_INVALID_ARG;
    }
    if (status == PGC_OK && v) {
        f->value = *v;
        memset(v, 0, sizeof(*v));
    } else if (status != PGC_OK) {
        f->error = strdup(text && *text ? text : pgc_strerror(status));
        if (v) {
            pgc_rpc_value_free(v);
        }
    }
    cbs = f->cbs;
    f->cbs = f->cbs_tail = NULL;
    __atomic_store_n(&f->state, status, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&f->cv);
    /* The callbacks may free their own reference: keep one until they have run. */
    __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&f->mu);
    while (cbs) {
        struct rpc_cb *next = cbs->next;
        cbs->fn(f, cbs->arg);
        free(cbs);
        cbs = next;
    }
    pgc_future_free(f);
    return PGC_OK;
}

int pgc_future_set_value(pgc_future *f, pgc_rpc_value *v)
{
    pgc_rpc_value empty = {0};

    if (!f) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_future_set_value: NULL future");
    }
    if (rpc_future_complete(f, PGC_OK, NULL, v ? v : &empty) != PGC_OK) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_future_set_value: already complete");
    }
    return PGC_OK;
}

int pgc_future_set_error(pgc_future *f, int status, const char *fmt, ...)
{
    char text[512];
    va_list ap;

    if (!f || status >= 0) {
        return mps_error(PGC_ERR_INVALID_ARG,
                         "pgc_future_set_error: needs a future and a negative status");
    }
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt ? fmt : "", ap);
    va_end(ap);
    if (rpc_future_complete(f, status, text, NULL) != PGC_OK) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_future_set_error: already complete");
    }
    return PGC_OK;
}

/* A bounded spin first: an RPC answered within microseconds should not pay a futex sleep
 * and wake-up. While RPC is up the waiter also receives (rpc_receive_while_pending), so
 * that the answer completes the future in this thread with no other thread woken; else, or
 * while another thread receives, it watches the state. The spin does not yield: on a loaded
 * machine a thread that yields in a loop runs only when the scheduler gives it a slice
 * (milliseconds), while one that sleeps on the condition variable runs as soon as it is
 * woken. */
#define WAIT_SPIN 10e-6 /* s, without RPC */

static void spin_briefly(pgc_future *f, double timeout)
{
    double end = mps_now() + WAIT_SPIN;

    if (rpc_receive_while_pending(f, timeout)) {
        return;
    }
    while (state_of(f) == PGC_ERR_PENDING && mps_now() < end) {
        mps_cpu_relax();
    }
}

int pgc_future_wait(pgc_future *f, double timeout)
{
    struct timespec until;
    bool counted;
    int rc = 0;

    if (!f) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_future_wait: NULL future");
    }
    /* The deadline counts from here: the spin is part of the wait. */
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (timeout > 0) {
        until.tv_sec += (time_t)timeout;
        until.tv_nsec += (long)((timeout - (double)(time_t)timeout) * 1e9);
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
    }
    counted = timeout != 0 && rpc_waiter_enter();
    if (timeout != 0) {
        spin_briefly(f, timeout);
    }
    pthread_mutex_lock(&f->mu);
    while (state_of(f) == PGC_ERR_PENDING && rc != ETIMEDOUT && timeout != 0) {
        rc = timeout < 0 ? pthread_cond_wait(&f->cv, &f->mu)
                         : pthread_cond_timedwait(&f->cv, &f->mu, &until);
    }
    pthread_mutex_unlock(&f->mu);
    if (counted) {
        rpc_waiter_leave();
    }
    if (state_of(f) == PGC_ERR_PENDING) {
        return mps_error(PGC_ERR_TIMEOUT, "pgc_future_wait: not complete within %g s", timeout);
    }
    if (state_of(f) != PGC_OK) {
        return mps_error(state_of(f), "%s", f->error);
    }
    return PGC_OK;
}

int pgc_future_done(pgc_future *f)
{
    return f && state_of(f) != PGC_ERR_PENDING;
}

int pgc_future_status(pgc_future *f)
{
    return f ? state_of(f) : PGC_ERR_INVALID_ARG;
}

const pgc_rpc_value *pgc_future_value(pgc_future *f)
{
    return f && state_of(f) == PGC_OK ? &f->value : NULL;
}

int pgc_future_take_value(pgc_future *f, pgc_rpc_value *out)
{
    if (!f || !out) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_future_take_value: NULL argument");
    }
    memset(out, 0, sizeof(*out));
    if (state_of(f) != PGC_OK) {
        return mps_error(state_of(f) == PGC_ERR_PENDING ? PGC_ERR_PENDING : state_of(f),
                         "pgc_future_take_value: %s",
                         state_of(f) == PGC_ERR_PENDING ? "the future is pending" : f->error);
    }
    pthread_mutex_lock(&f->mu);
    *out = f->value;
    memset(&f->value, 0, sizeof(f->value));
    pthread_mutex_unlock(&f->mu);
    return PGC_OK;
}

const char *pgc_future_error(pgc_future *f)
{
    return f && state_of(f) != PGC_ERR_PENDING && f->error ? f->error : "";
}

int pgc_future_then(pgc_future *f, void (*fn)(pgc_future *f, void *arg), void *arg)
{
    struct rpc_cb *cb;

    if (!f || !fn) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_future_then: NULL future or callback");
    }
    cb = calloc(1, sizeof(*cb));
    if (!cb) {
        return mps_error(PGC_ERR_NOMEM, "pgc_future_then");
    }
    cb->fn = fn;
    cb->arg = arg;
    pthread_mutex_lock(&f->mu);
    if (state_of(f) == PGC_ERR_PENDING) {
        if (f->cbs_tail) {
            f->cbs_tail->next = cb;
        } else {
            f->cbs = cb;
        }
        f->cbs_tail = cb;
        cb = NULL;
    }
    pthread_mutex_unlock(&f->mu);
    if (cb) {
        fn(f, arg);
        free(cb);
    }
    return PGC_OK;
}

/* collect_all: a counter of the futures still pending and the first failure. */
struct collect {
    pgc_future *out;
    int left; /* atomic */
    pthread_mutex_t mu;
    int status;
    char *error;
};

/* Drops one count; the last completes the output future. */
static void collect_drop(struct collect *c)
{
    pgc_rpc_value empty = {0};

    if (__atomic_sub_fetch(&c->left, 1, __ATOMIC_ACQ_REL) != 0) {
        return;
    }
    rpc_future_complete(c->out, c->status, c->error, &empty);
    pgc_future_free(c->out);
    free(c->error);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

static void collect_one(pgc_future *f, void *arg)
{
    struct collect *c = arg;

    pthread_mutex_lock(&c->mu);
    if (state_of(f) != PGC_OK && c->status == PGC_OK) {
        c->status = state_of(f);
        c->error = strdup(pgc_future_error(f));
    }
    pthread_mutex_unlock(&c->mu);
    collect_drop(c);
}

int pgc_future_collect_all(pgc_future *const *futs, int n, pgc_future **out)
{
    struct collect *c;

    if (!out || n < 0 || (n > 0 && !futs)) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_future_collect_all: bad arguments");
    }
    *out = NULL;
    for (int i = 0; i < n; i++) {
        if (!futs[i]) {
            return mps_error(PGC_ERR_INVALID_ARG, "pgc_future_collect_all: future %d is NULL", i);
        }
    }
    c = calloc(1, sizeof(*c));
    *out = pgc_future_new();
    if (!c || !*out) {
        free(c);
        pgc_future_free(*out);
        *out = NULL;
        return mps_error(PGC_ERR_NOMEM, "pgc_future_collect_all");
    }
    c->out = rpc_future_ref(*out);
    /* One count more than futures, dropped below: none may finish before all are hooked. */
    c->left = n + 1;
    pthread_mutex_init(&c->mu, NULL);
    for (int i = 0; i < n; i++) {
        pgc_future_then(futs[i], collect_one, c);
    }
    collect_drop(c);
    return PGC_OK;
}
