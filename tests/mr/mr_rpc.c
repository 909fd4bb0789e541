/*
 * mr_rpc.c - torch.distributed.rpc in C (pgc_rpc.h) at 1 to 4 workers: every worker calls
 * every worker, itself included.
 *
 * Phases (pgc_barrier between them; the process group also shows that a process may be in
 * a process group and the RPC group at once, and that RPC traffic never matches its own):
 *  1. worker info by name and rank;
 *  2. rpc_sync of echo (bytes, a small and a 1 MiB tensor) and add (values computed here);
 *     rpc_async of 16 calls, collect_all and then callbacks; a nested call (the callee
 *     calls the next worker); async execution on the callee (it answers with the future of
 *     a call it makes); a callee's error text, an unknown function, a timeout, each naming
 *     the worker and the function (the call that times out blocks until its caller
 *     releases it: no timing decides the outcome);
 *  3. RRefs: pgc_remote on the next worker, to_here, owner, owner_name, is_owner, calls on
 *     the object at its owner (a counter incremented in place), local_value on the owner;
 *     forks user to user (to the worker after), user to owner and owner to user, the
 *     receiver keeping its reference after the creator dropped its own; reference
 *     counting: every owner has freed every object once all handles are gone;
 *  4. callers racing for the receiver's role: 4 threads each make 100 echo calls of their
 *     own values, half of them async with a then callback (which may run in another
 *     caller's thread, the one that received the answer), to the next worker, while that
 *     worker does the same; then, after 30 ms idle (every thread of every worker has gone
 *     to sleep on its doorbell or queue), one call more each way;
 *  5. graceful shutdown while a remote RRef handle is still held: afterwards every worker,
 *     as owner, has freed every object it made (4 each: two counters from the worker
 *     before, its own, and the one still held by the worker before at shutdown) because its
 *     last reference went away, and shutdown had none left to drop.
 * Exits non-zero on the first mismatch.
 */
#include <pgc.h>
#include <pgc_rpc.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank, size;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d rank %d: %s: ", __FILE__, __LINE__, rank, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (last error: %s)\n", pgc_last_error());                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
#define CHECK_OK(call)                                                                             \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK(rc_ == PGC_OK, "%s returned %s", #call, pgc_status_name(rc_));                       \
    } while (0)

static const char *wname(int r)
{
    static __thread char buf[4][16];
    static __thread int k;
    char *b = buf[k++ & 3];

    snprintf(b, 16, "w%d", (r % size + size) % size);
    return b;
}

/* ---- functions served ---- */

static int fn_echo(pgc_rpc_call *c)
{
    int rc = pgc_rpc_value_set_bytes(&c->ret, c->args->bytes, c->args->nbytes);

    for (int i = 0; rc == PGC_OK && i < c->args->ntensors; i++) {
        rc = pgc_rpc_value_add_tensor(&c->ret, &c->args->tensors[i]);
    }
    return rc;
}

/* bytes: two int64 -> their sum; tensor 0 + tensor 1 (float64) -> tensor. */
static int fn_add(pgc_rpc_call *c)
{
    const pgc_rpc_value *a = c->args;
    int64_t s[2], sum;

    if (a->nbytes != sizeof(s)) {
        return pgc_rpc_call_fail(c, "add wants 16 bytes, got %zu", a->nbytes);
    }
    memcpy(s, a->bytes, sizeof(s));
    sum = s[0] + s[1];
    pgc_rpc_value_set_bytes(&c->ret, &sum, sizeof(sum));
    if (a->ntensors == 2 && a->tensors[0].numel == a->tensors[1].numel) {
        pgc_tensor t = a->tensors[0];
        double *x = t.data;
        const double *y = a->tensors[1].data;
        for (size_t i = 0; i < t.numel; i++) {
            x[i] += y[i];
        }
        pgc_rpc_value_add_tensor(&c->ret, &t);
    }
    return PGC_OK;
}

static int fn_fail(pgc_rpc_call *c)
{
    return pgc_rpc_call_fail(c, "bad input %d", 42);
}

/* block(t) waits until the same caller has called release(t') with t' >= t: a call that can
 * only end when its caller says so, to test timeouts without any timing. The tokens make
 * it indifferent to the order in which the server threads pick the two up. */
static pthread_mutex_t block_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cv = PTHREAD_COND_INITIALIZER;
static int released[8];

static int token_of(pgc_rpc_call *c)
{
    int t = 0;

    if (c->args->nbytes == sizeof(t)) {
        memcpy(&t, c->args->bytes, sizeof(t));
    }
    return t;
}

static int fn_block(pgc_rpc_call *c)
{
    int t = token_of(c);

    pthread_mutex_lock(&block_mu);
    while (released[c->caller] < t) {
        pthread_cond_wait(&block_cv, &block_mu);
    }
    pthread_mutex_unlock(&block_mu);
    return PGC_OK;
}

static int fn_release(pgc_rpc_call *c)
{
    int t = token_of(c);

    pthread_mutex_lock(&block_mu);
    released[c->caller] = t > released[c->caller] ? t : released[c->caller];
    pthread_cond_broadcast(&block_cv);
    pthread_mutex_unlock(&block_mu);
    return PGC_OK;
}

/* The callee calls add on the worker after it and returns that answer. */
static int fn_nested(pgc_rpc_call *c)
{
    pgc_rpc_value r;
    int rc = pgc_rpc_sync(wname(rank + 1), "add", c->args, 0, &r);

    c->ret = r;
    return rc;
}

/* Async execution: answers with the future of add on the worker after it. */
static int fn_async_add(pgc_rpc_call *c)
{
    return pgc_rpc_async(wname(rank + 1), "add", c->args, 0, &c->async_result);
}

/* Async execution completed by another thread later. */
static void *complete_later(void *arg)
{
    pgc_future *f = arg;
    pgc_rpc_value v = {0};
    int64_t x = 777;

    usleep(20000);
    pgc_rpc_value_set_bytes(&v, &x, sizeof(x));
    pgc_future_set_value(f, &v);
    pgc_future_free(f);
    return NULL;
}

static int fn_deferred(pgc_rpc_call *c)
{
    pthread_t t;
    pgc_future *f = pgc_future_new();

    /* The library takes the reference in async_result; the thread gets its own. */
    c->async_result = pgc_future_retain(f);
    if (pthread_create(&t, NULL, complete_later, f) != 0) {
        pgc_future_free(f);
        return pgc_rpc_call_fail(c, "no thread");
    }
    pthread_detach(t);
    return PGC_OK;
}

/* An object: one int64 counter in bytes. */
static int fn_make_counter(pgc_rpc_call *c)
{
    return pgc_rpc_value_set_bytes(&c->ret, c->args->bytes, c->args->nbytes);
}

static int fn_incr(pgc_rpc_call *c)
{
    int64_t v, d;

    if (!c->self || c->self->nbytes != 8) {
        return pgc_rpc_call_fail(c, "incr needs a counter object");
    }
    memcpy(&v, c->self->bytes, 8);
    memcpy(&d, c->args->bytes, 8);
    v += d;
    memcpy(c->self->bytes, &v, 8);
    return pgc_rpc_value_set_bytes(&c->ret, &v, 8);
}

/* Reads the counter behind the RRef it receives (to_here, or local_value on its owner). */
static int fn_read_rref(pgc_rpc_call *c)
{
    pgc_rpc_value v;
    pgc_rref *r = c->args->rrefs[0];
    int rc;

    if (pgc_rref_is_owner(r)) {
        pgc_rpc_value *lv = pgc_rref_local_value(r);
        return lv ? pgc_rpc_value_set_bytes(&c->ret, lv->bytes, lv->nbytes) : PGC_ERR_NOT_FOUND;
    }
    rc = pgc_rref_to_here(r, 0, &v);
    c->ret = v;
    return rc;
}

/* Keeps the RRef it receives (one slot per caller) until drop. */
static pgc_rref *kept[8];
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;

static int fn_keep(pgc_rpc_call *c)
{
    pthread_mutex_lock(&kept_mu);
    kept[c->caller] = pgc_rref_retain(c->args->rrefs[0]);
    pthread_mutex_unlock(&kept_mu);
    return PGC_OK;
}

static int fn_read_kept(pgc_rpc_call *c)
{
    pgc_rpc_value v;
    int rc;

    pthread_mutex_lock(&kept_mu);
    rc = pgc_rref_to_here(kept[c->caller], 0, &v);
    pthread_mutex_unlock(&kept_mu);
    c->ret = v;
    return rc;
}

static int fn_drop(pgc_rpc_call *c)
{
    pthread_mutex_lock(&kept_mu);
    pgc_rref_free(kept[c->caller]);
    kept[c->caller] = NULL;
    pthread_mutex_unlock(&kept_mu);
    return PGC_OK;
}

/* ---- checks ---- */

static int64_t bytes_i64(const pgc_rpc_value *v)
{
    int64_t x = -1;

    if (v->nbytes == 8) {
        memcpy(&x, v->bytes, 8);
    }
    return x;
}

static void check_info(void)
{
    pgc_rpc_worker_info info;

    for (int r = 0; r < size; r++) {
        CHECK_OK(pgc_rpc_get_worker_info(wname(r), &info));
        CHECK(info.rank == r && strcmp(info.name, wname(r)) == 0, "info of %s", wname(r));
        CHECK_OK(pgc_rpc_get_worker_info_by_rank(r, &info));
        CHECK(strcmp(info.name, wname(r)) == 0, "name of rank %d is %s", r, info.name);
    }
    CHECK_OK(pgc_rpc_get_self(&info));
    CHECK(info.rank == rank, "self is rank %d", info.rank);
    CHECK(pgc_rpc_get_worker_info("nobody", &info) == PGC_ERR_INVALID_RANK, "unknown name");
}

static void check_echo(int dst)
{
    enum { BIG = 131072 }; /* 1 MiB of float64: sent as its own message */
    double *big = malloc(BIG * sizeof(double));
    int32_t small[5] = {1, -2, 3, -4, 5 + dst};
    char text[64];
    pgc_tensor ts[2] = {pgc_host_tensor(small, 5, PGC_INT32), pgc_host_tensor(big, BIG, PGC_FLOAT64)};
    pgc_rpc_value args = {text, 0, ts, 2, NULL, 0}, r;

    for (int i = 0; i < BIG; i++) {
        big[i] = rank * 1e6 + dst * 1e3 + i * 0.5;
    }
    args.nbytes = (size_t)snprintf(text, sizeof(text), "hello from %d to %d", rank, dst);
    CHECK_OK(pgc_rpc_sync(wname(dst), "echo", &args, 0, &r));
    CHECK(r.nbytes == args.nbytes && memcmp(r.bytes, text, r.nbytes) == 0, "echo bytes");
    CHECK(r.ntensors == 2 && r.tensors[0].dtype == PGC_INT32 && r.tensors[0].numel == 5 &&
              r.tensors[1].dtype == PGC_FLOAT64 && r.tensors[1].numel == BIG,
          "echo tensors");
    CHECK(memcmp(r.tensors[0].data, small, sizeof(small)) == 0, "small tensor");
    for (int i = 0; i < BIG; i++) {
        CHECK(((double *)r.tensors[1].data)[i] == rank * 1e6 + dst * 1e3 + i * 0.5, "big[%d]", i);
    }
    pgc_rpc_value_free(&r);
    free(big);
}

static void add_args(int64_t a, int64_t b, double *x, double *y, int n, pgc_tensor *ts,
                     int64_t *s, pgc_rpc_value *args)
{
    s[0] = a;
    s[1] = b;
    for (int i = 0; i < n; i++) {
        x[i] = a + i;
        y[i] = b * 0.25 * i;
    }
    ts[0] = pgc_host_tensor(x, (size_t)n, PGC_FLOAT64);
    ts[1] = pgc_host_tensor(y, (size_t)n, PGC_FLOAT64);
    memset(args, 0, sizeof(*args));
    args->bytes = s;
    args->nbytes = 2 * sizeof(int64_t);
    args->tensors = ts;
    args->ntensors = 2;
}

static void check_add_result(const pgc_rpc_value *r, int64_t a, int64_t b, int n)
{
    CHECK(bytes_i64(r) == a + b, "sum %lld != %lld", (long long)bytes_i64(r), (long long)(a + b));
    CHECK(r->ntensors == 1 && r->tensors[0].numel == (size_t)n, "add tensor");
    for (int i = 0; i < n; i++) {
        CHECK(((double *)r->tensors[0].data)[i] == a + i + b * 0.25 * i, "add[%d]", i);
    }
}

static int then_count;

static void on_done(pgc_future *f, void *arg)
{
    (void)arg;
    if (pgc_future_status(f) == PGC_OK) {
        __atomic_add_fetch(&then_count, 1, __ATOMIC_RELAXED);
    }
}

static void check_calls(int dst)
{
    enum { N = 16, LEN = 7 };
    double x[N][LEN], y[N][LEN];
    pgc_tensor ts[N][2];
    int64_t s[N][2];
    pgc_rpc_value args, r;
    pgc_future *fs[N], *all;

    add_args(rank, dst, x[0], y[0], LEN, ts[0], s[0], &args);
    CHECK_OK(pgc_rpc_sync(wname(dst), "add", &args, 0, &r));
    check_add_result(&r, rank, dst, LEN);
    pgc_rpc_value_free(&r);

    then_count = 0;
    for (int k = 0; k < N; k++) {
        add_args(k, 100 * dst, x[k], y[k], LEN, ts[k], s[k], &args);
        CHECK_OK(pgc_rpc_async(wname(dst), "add", &args, 0, &fs[k]));
        CHECK_OK(pgc_future_then(fs[k], on_done, NULL));
    }
    CHECK_OK(pgc_future_collect_all(fs, N, &all));
    CHECK_OK(pgc_future_wait(all, 30));
    for (int k = 0; k < N; k++) {
        CHECK(pgc_future_done(fs[k]), "future %d done after collect_all", k);
        check_add_result(pgc_future_value(fs[k]), k, 100 * dst, LEN);
        pgc_future_free(fs[k]);
    }
    CHECK(__atomic_load_n(&then_count, __ATOMIC_RELAXED) == N, "%d callbacks ran", then_count);
    pgc_future_free(all);

    /* Nested (callee calls dst + 1) and async execution (callee answers with that call's
     * future): the same sum either way. */
    add_args(5, dst, x[0], y[0], LEN, ts[0], s[0], &args);
    CHECK_OK(pgc_rpc_sync(wname(dst), "nested", &args, 0, &r));
    check_add_result(&r, 5, dst, LEN);
    pgc_rpc_value_free(&r);
    CHECK_OK(pgc_rpc_sync(wname(dst), "async_add", &args, 0, &r));
    check_add_result(&r, 5, dst, LEN);
    pgc_rpc_value_free(&r);
    CHECK_OK(pgc_rpc_sync(wname(dst), "deferred", NULL, 0, &r));
    CHECK(bytes_i64(&r) == 777, "deferred answer %lld", (long long)bytes_i64(&r));
    pgc_rpc_value_free(&r);
}

static void check_errors(int dst)
{
    static int token; /* grows across callees, so each sees its tokens grow */
    pgc_rpc_value tok = {&token, sizeof(token), NULL, 0, NULL, 0};
    char want[64];
    pgc_rpc_value r;
    pgc_future *f;
    int rc;

    snprintf(want, sizeof(want), "worker '%s'", wname(dst));
    rc = pgc_rpc_sync(wname(dst), "fail", NULL, 0, &r);
    CHECK(rc != PGC_OK && strstr(pgc_last_error(), "bad input 42") &&
              strstr(pgc_last_error(), want) && strstr(pgc_last_error(), "'fail'"),
          "callee error: %s", pgc_status_name(rc));
    rc = pgc_rpc_sync(wname(dst), "no_such_fn", NULL, 0, &r);
    CHECK(rc == PGC_ERR_NOT_FOUND && strstr(pgc_last_error(), want) &&
              strstr(pgc_last_error(), "'no_such_fn'"),
          "unknown function: %s", pgc_status_name(rc));
    CHECK(pgc_rpc_sync("nobody", "echo", NULL, 0, &r) == PGC_ERR_INVALID_RANK, "unknown worker");
    /* A call that outlives its timeout fails with the worker and the function named. */
    token++;
    CHECK_OK(pgc_rpc_async(wname(dst), "block", &tok, 0.1, &f));
    rc = pgc_future_wait(f, -1);
    CHECK(rc == PGC_ERR_TIMEOUT && strstr(pgc_future_error(f), want) &&
              strstr(pgc_future_error(f), "'block'"),
          "timeout: %s: %s", pgc_status_name(rc), pgc_future_error(f));
    pgc_future_free(f);
    CHECK_OK(pgc_rpc_sync(wname(dst), "release", &tok, 0, NULL));
    /* Waiting shorter than the call takes leaves it pending. */
    token++;
    CHECK_OK(pgc_rpc_async(wname(dst), "block", &tok, 0, &f));
    CHECK(pgc_future_wait(f, 0.01) == PGC_ERR_TIMEOUT && !pgc_future_done(f), "still pending");
    CHECK_OK(pgc_rpc_sync(wname(dst), "release", &tok, 0, NULL));
    CHECK_OK(pgc_future_wait(f, -1));
    pgc_future_free(f);
}

static void check_rrefs(void)
{
    int next = (rank + 1) % size, after = (rank + 2) % size;
    int64_t start = 1000 * rank, d = 5, v;
    pgc_rpc_value args = {&start, 8, NULL, 0, NULL, 0}, r;
    pgc_rref *rr, *mine;
    pgc_future *f;

    /* On the next worker, a counter; incremented there through the RRef. */
    CHECK_OK(pgc_remote(wname(next), "make_counter", &args, 0, &rr));
    CHECK(pgc_rref_owner(rr) == next && strcmp(pgc_rref_owner_name(rr), wname(next)) == 0,
          "owner");
    CHECK(pgc_rref_is_owner(rr) == (next == rank), "is_owner");
    CHECK_OK(pgc_rref_to_here(rr, 0, &r));
    CHECK(bytes_i64(&r) == start, "to_here %lld", (long long)bytes_i64(&r));
    pgc_rpc_value_free(&r);
    args.bytes = &d;
    for (int k = 1; k <= 3; k++) {
        CHECK_OK(pgc_rref_rpc_sync(rr, "incr", &args, 0, &r));
        CHECK(bytes_i64(&r) == start + k * d, "incr %d", k);
        pgc_rpc_value_free(&r);
    }
    v = start + 3 * d;
    /* Forks: to the worker after (user to user, or to the owner when size is 2, or to
     * itself at size 1) which keeps it after we drop ours. */
    args = (pgc_rpc_value){NULL, 0, NULL, 0, &rr, 1};
    CHECK_OK(pgc_rpc_sync(wname(after), "read_rref", &args, 0, &r));
    CHECK(bytes_i64(&r) == v, "read through a fork: %lld", (long long)bytes_i64(&r));
    pgc_rpc_value_free(&r);
    CHECK_OK(pgc_rpc_sync(wname(after), "keep", &args, 0, NULL));
    pgc_rref_free(rr);
    CHECK_OK(pgc_rpc_sync(wname(after), "read_kept", NULL, 0, &r));
    CHECK(bytes_i64(&r) == v, "the object outlives its creator's handle: %lld",
          (long long)bytes_i64(&r));
    pgc_rpc_value_free(&r);
    CHECK_OK(pgc_rpc_sync(wname(after), "drop", NULL, 0, NULL));

    /* Handed over and dropped at once: our handle is gone before the receiver's fork has
     * reached the owner, whose object must wait for that fork (the pending child). */
    start += 1;
    args = (pgc_rpc_value){&start, 8, NULL, 0, NULL, 0};
    CHECK_OK(pgc_remote(wname(next), "make_counter", &args, 0, &rr));
    args = (pgc_rpc_value){NULL, 0, NULL, 0, &rr, 1};
    CHECK_OK(pgc_rpc_async(wname(after), "read_rref", &args, 0, &f));
    pgc_rref_free(rr);
    CHECK_OK(pgc_future_wait(f, -1));
    CHECK(bytes_i64(pgc_future_value(f)) == start, "read after the creator dropped it: %lld",
          (long long)bytes_i64(pgc_future_value(f)));
    pgc_future_free(f);
    start -= 1;

    /* Owner to user: an object here, its RRef passed to the next worker, local_value here. */
    args = (pgc_rpc_value){&start, 8, NULL, 0, NULL, 0};
    CHECK_OK(pgc_remote(wname(rank), "make_counter", &args, 0, &mine));
    CHECK(pgc_rref_is_owner(mine), "own object");
    CHECK(pgc_rref_local_value(mine) && bytes_i64(pgc_rref_local_value(mine)) == start,
          "local_value");
    args = (pgc_rpc_value){NULL, 0, NULL, 0, &mine, 1};
    CHECK_OK(pgc_rpc_sync(wname(next), "read_rref", &args, 0, &r));
    CHECK(bytes_i64(&r) == start, "owner to user: %lld", (long long)bytes_i64(&r));
    pgc_rpc_value_free(&r);
    pgc_rref_free(mine);
}

/* Every object has been freed by its owner, every handle given back (the deletes travel
 * asynchronously: wait for them, up to 20 s). */
/* ---- callers racing for the receiver's role ---- */

enum { RACE_THREADS = 4, RACE_CALLS = 100 };
static int race_callbacks; /* atomic: then callbacks run */
/* What each call sent: global, since a then callback may still run after its future's
 * wait returned (the completing thread runs it after publishing the state). */
static int64_t race_sent[RACE_THREADS][RACE_CALLS];

static void on_race_done(pgc_future *f, void *arg)
{
    const pgc_rpc_value *v = pgc_future_value(f);
    int64_t want = *(int64_t *)arg;

    CHECK(v && v->nbytes == 8 && bytes_i64(v) == want, "async echo of %lld",
          (long long)want);
    __atomic_add_fetch(&race_callbacks, 1, __ATOMIC_RELAXED);
}

static void *race_caller(void *arg)
{
    int t = (int)(intptr_t)arg;
    int64_t *sent = race_sent[t];

    for (int i = 0; i < RACE_CALLS; i++) {
        pgc_rpc_value args = {&sent[i], 8, NULL, 0, NULL, 0}, r;
        pgc_future *f;
        sent[i] = (int64_t)rank << 40 | (int64_t)t << 20 | i;
        if (i % 2) {
            CHECK_OK(pgc_rpc_async(wname(rank + 1), "echo", &args, 0, &f));
            CHECK_OK(pgc_future_then(f, on_race_done, &sent[i]));
            CHECK_OK(pgc_future_wait(f, -1));
            pgc_future_free(f);
            continue;
        }
        CHECK_OK(pgc_rpc_sync(wname(rank + 1), "echo", &args, 0, &r));
        CHECK(r.nbytes == 8 && bytes_i64(&r) == sent[i], "echo of %lld in thread %d",
              (long long)sent[i], t);
        pgc_rpc_value_free(&r);
    }
    return NULL;
}

static void check_racing_callers(void)
{
    struct timespec idle = {0, 30 * 1000000L};
    pthread_t th[RACE_THREADS];
    int64_t x = rank + 1000;
    pgc_rpc_value args = {&x, 8, NULL, 0, NULL, 0}, r;

    for (int t = 0; t < RACE_THREADS; t++) {
        CHECK(pthread_create(&th[t], NULL, race_caller, (void *)(intptr_t)t) == 0, "thread");
    }
    for (int t = 0; t < RACE_THREADS; t++) {
        pthread_join(th[t], NULL);
    }
    /* The last callbacks may still be running: wait for them, bounded (a lost one fails). */
    for (int i = 0; i < 10000 && __atomic_load_n(&race_callbacks, __ATOMIC_RELAXED) <
                                     RACE_THREADS * RACE_CALLS / 2; i++) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
    }
    CHECK(__atomic_load_n(&race_callbacks, __ATOMIC_RELAXED) == RACE_THREADS * RACE_CALLS / 2,
          "%d then callbacks ran", race_callbacks);
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    nanosleep(&idle, NULL);
    CHECK_OK(pgc_rpc_sync(wname(rank + 1), "echo", &args, 0, &r));
    CHECK(r.nbytes == 8 && bytes_i64(&r) == x, "echo after idle");
    pgc_rpc_value_free(&r);
}

static void check_all_freed(void)
{
    pgc_rpc_debug_info info;

    for (int i = 0; i < 2000; i++) {
        CHECK_OK(pgc_rpc_get_debug_info(&info));
        if (info.num_owner_rrefs == 0 && info.num_user_rrefs == 0) {
            break;
        }
        usleep(10000);
    }
    CHECK(info.num_owner_rrefs == 0 && info.num_forks == 0 && info.num_user_rrefs == 0,
          "left: %d owned objects, %d forks, %d user handles", info.num_owner_rrefs,
          info.num_forks, info.num_user_rrefs);
}

/* The lifetime counts: made, deleted because unreferenced, dropped by shutdown. */
static void check_owner_counts(long made, long deleted, long dropped)
{
    pgc_rpc_debug_info info;

    CHECK_OK(pgc_rpc_get_debug_info(&info));
    CHECK(info.num_owner_rrefs_created == made && info.num_owner_rrefs_deleted == deleted &&
              info.num_owner_rrefs_dropped == dropped,
          "owned objects made %ld (want %ld), deleted %ld (want %ld), dropped %ld (want %ld)",
          info.num_owner_rrefs_created, made, info.num_owner_rrefs_deleted, deleted,
          info.num_owner_rrefs_dropped, dropped);
}

int main(int argc, char **argv)
{
    pgc_rpc_opts opts = PGC_RPC_OPTS_DEFAULT;
    char me[16];
    int64_t x = 3;
    pgc_rpc_value args = {&x, 8, NULL, 0, NULL, 0};
    pgc_rref *held;

    /* VAR=value arguments (tests/rpc.list) set the environment before the start. */
    for (int i = 1; i < argc; i++) {
        if (strchr(argv[i], '=')) {
            putenv(argv[i]);
        }
    }
    CHECK_OK(pgc_init_process_group(NULL));
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    snprintf(me, sizeof(me), "w%d", rank);
    pgc_rpc_register("echo", fn_echo, NULL);
    pgc_rpc_register("add", fn_add, NULL);
    pgc_rpc_register("fail", fn_fail, NULL);
    pgc_rpc_register("block", fn_block, NULL);
    pgc_rpc_register("release", fn_release, NULL);
    pgc_rpc_register("nested", fn_nested, NULL);
    pgc_rpc_register("async_add", fn_async_add, NULL);
    pgc_rpc_register("deferred", fn_deferred, NULL);
    pgc_rpc_register("make_counter", fn_make_counter, NULL);
    pgc_rpc_register("incr", fn_incr, NULL);
    pgc_rpc_register("read_rref", fn_read_rref, NULL);
    pgc_rpc_register("keep", fn_keep, NULL);
    pgc_rpc_register("read_kept", fn_read_kept, NULL);
    pgc_rpc_register("drop", fn_drop, NULL);
    opts.num_server_threads = 3;
    opts.timeout = 30;
    CHECK_OK(pgc_rpc_init(me, rank, size, &opts));
    CHECK(pgc_rpc_init(me, rank, size, &opts) == PGC_ERR_ALREADY_INITIALIZED, "second init");
    check_info();
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    for (int d = 0; d < size; d++) {
        check_echo((rank + d) % size);
        check_calls((rank + d) % size);
        check_errors((rank + d) % size);
    }
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    check_rrefs();
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    check_all_freed();
    check_owner_counts(3, 3, 0);
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    check_racing_callers();
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    /* Shut down with a live remote reference: graceful shutdown releases it and waits. */
    CHECK_OK(pgc_remote(wname(rank + 1), "make_counter", &args, 0, &held));
    CHECK_OK(pgc_rpc_shutdown(1));
    /* The owner freed the held object through the protocol (the user's handle was given
     * back and its delete arrived), not by dropping what was left at the end. */
    check_owner_counts(4, 4, 0);
    pgc_rref_free(held);
    check_owner_counts(4, 4, 0);
    CHECK(pgc_rpc_sync(wname(0), "echo", NULL, 0, NULL) == PGC_ERR_NOT_INITIALIZED, "after");
    CHECK_OK(pgc_destroy_process_group());
    printf("mr_rpc: rank %d of %d ok\n", rank, size);
    return 0;
}
