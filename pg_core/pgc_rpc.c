/*
 * pgc_rpc.c - the RPC agent (torch.distributed.rpc in C): workers, calls by name, and the
 * threads that serve them.
 *
 * Each worker runs one agent thread and a pool of server threads. The agent is the only
 * receiver of the RPC group's header tag: it takes every message in arrival order (the
 * transport keeps one sender's messages in order, which the RRef protocol relies on),
 * completes callers' futures with replies, handles the RRef control messages itself, and
 * queues requests for the server threads, which run functions and send the replies. A
 * reply that a function defers (async execution) is sent by a server thread too: the
 * agent never sends a value, so it can never wait for itself.
 *
 * Receiving is a role rather than a thread (rpc.rx_mu): besides the agent, a caller that
 * waits for its answer and a server thread that just finished a request poll the fabric
 * for a bounded time, so that on a quiet exchange the answer completes the caller's future
 * in the caller's own thread and a request is run by the server thread that received it:
 * no thread is woken on the way. Whoever receives dispatches in arrival order. The agent
 * parks while another thread receives and is woken when that thread stops; idle, it sleeps
 * on a doorbell that senders on this node ring (pgc_rpc_bell.c). It also fails calls past
 * their deadline and, every WATCH_DEAD seconds, asks the fabric whether a process of this
 * node died: calls waiting for it fail at once.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_internal.h"
#include "pgc_internal.h"
#include "pgc_rpc_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_TIMEOUT 60.0
#define DEFAULT_SERVERS 2
#define WATCH_TIMEOUTS 0.01 /* s between two looks at the pending calls' deadlines */
#define WATCH_DEAD 0.1      /* s between two looks at the local processes */
/* The bounded polls (s). Each is short next to a scheduler slice: a thread that polls on a
 * loaded machine runs only in the slices it is given, while a sleeping one is woken at once
 * by a ring. AGENT_SPIN: the agent's poll after a message before it sleeps. SERVE_SPIN: a
 * server thread's after a request (the next one of a caller in a loop comes within
 * microseconds). CALL_SPIN: a caller's while it waits for its answer (a 1 MiB echo takes
 * about 0.5 ms). */
#define AGENT_SPIN 100e-6
#define SERVE_SPIN 200e-6
/* A server thread polls longer, up to this, when the last two requests it ran came closer
 * than this: 1.5 times their gap. Without it a loaded machine locks into the slow path: a
 * round trip that took longer than SERVE_SPIN (a wake-up delayed by the load) makes the
 * next request arrive after the poll ended, which takes the wake-ups again. */
#define SERVE_SPIN_MAX 2e-3
#define CALL_SPIN 1e-3
/* s the agent parks while another thread receives (that thread wakes it when it stops for
 * want of messages, not when its own answer came: the bound covers that case). */
#define PARK_TIME 500e-6
/* s a thread tries for the receiver's role before it leaves the receiving to its holder. */
#define ROLE_TRY 10e-6
/* Messages up to this size are packed and received on the stack. */
#define SMALL_MSG 512

struct rpc_state rpc = {.mu = PTHREAD_MUTEX_INITIALIZER, .rx_mu = PTHREAD_MUTEX_INITIALIZER};
/* A server thread between two requests: a request it receives is left for it to run rather
 * than handed to a sleeping one. */
static __thread bool idle_server;
static pthread_mutex_t fn_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rpc_fn_entry *fns;

/* A call's frame on the callee: the public part and the error text it may record. */
struct rpc_exec {
    pgc_rpc_call call;
    char err[400];
};

/* ---- small helpers ---- */

const char *rpc_worker_desc(int rank, char *buf, size_t len)
{
    if (rpc.names && rank >= 0 && rank < rpc.size) {
        snprintf(buf, len, "worker '%s' (rank %d)", rpc.names[rank], rank);
    } else {
        snprintf(buf, len, "worker of rank %d", rank);
    }
    return buf;
}

uint64_t rpc_new_id(void)
{
    /* The rank in the top bits makes ids unique across workers without a round trip. */
    uint64_t n = __atomic_add_fetch(&rpc.next_id, 1, __ATOMIC_RELAXED);

    return (uint64_t)rpc.rank << 44 | n;
}

double rpc_timeout_of(double timeout)
{
    return timeout > 0 ? timeout : rpc.timeout;
}

int rpc_check_up(const char *call)
{
    if (!__atomic_load_n(&rpc.up, __ATOMIC_ACQUIRE)) {
        return mps_error(PGC_ERR_NOT_INITIALIZED, "%s: RPC is not initialized (call pgc_rpc_init)",
                         call);
    }
    return PGC_OK;
}

static int rank_of_name(const char *name)
{
    for (int i = 0; name && rpc.names && i < rpc.size; i++) {
        if (strcmp(rpc.names[i], name) == 0) {
            return i;
        }
    }
    return -1;
}

static bool is_dead(int rank)
{
    bool d;

    pthread_mutex_lock(&rpc.mu);
    d = rpc.dead && rpc.dead[rank];
    pthread_mutex_unlock(&rpc.mu);
    return d;
}

int rpc_dst_of(const char *call, const char *to, int *dst)
{
    char wd[96];
    int rc = rpc_check_up(call);

    if (rc != PGC_OK) {
        return rc;
    }
    *dst = rank_of_name(to);
    if (*dst < 0) {
        return mps_error(PGC_ERR_INVALID_RANK, "%s on worker '%s' (rank %d): no worker is named '%s'",
                         call, rpc.names[rpc.rank], rpc.rank, to ? to : "(null)");
    }
    if (is_dead(*dst)) {
        return mps_error(PGC_ERR_PEER_DEAD, "%s: %s has died", call,
                         rpc_worker_desc(*dst, wd, sizeof(wd)));
    }
    return PGC_OK;
}

static int check_fn_name(const char *call, const char *fn)
{
    if (!fn || !*fn || strlen(fn) >= PGC_RPC_NAME_MAX) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s on worker '%s': function name must be 1-%d bytes",
                         call, rpc.names ? rpc.names[rpc.rank] : "?", PGC_RPC_NAME_MAX - 1);
    }
    return PGC_OK;
}

static int check_value(const char *call, const pgc_rpc_value *v)
{
    if (!v) {
        return PGC_OK;
    }
    if ((v->nbytes && !v->bytes) || v->ntensors < 0 || (v->ntensors && !v->tensors) ||
        v->nrrefs < 0 || (v->nrrefs && !v->rrefs)) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: arguments with counts but NULL arrays", call);
    }
    for (int i = 0; i < v->ntensors; i++) {
        const pgc_tensor *t = &v->tensors[i];
        if (pgc_dtype_size(t->dtype) == 0 || t->device != PGC_DEVICE_HOST ||
            (t->numel && !t->data)) {
            return mps_error(PGC_ERR_INVALID_ARG, "%s: tensor %d is not a host tensor with a "
                                                  "valid dtype and data", call, i);
        }
    }
    for (int i = 0; i < v->nrrefs; i++) {
        if (!v->rrefs[i] || v->rrefs[i]->released) {
            return mps_error(PGC_ERR_INVALID_ARG, "%s: rref %d is NULL or released", call, i);
        }
    }
    return PGC_OK;
}

/* ---- registry ---- */

int pgc_rpc_register(const char *name, pgc_rpc_fn fn, void *user)
{
    struct rpc_fn_entry *e;

    if (!name || !*name || strlen(name) >= PGC_RPC_NAME_MAX || !fn) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_rpc_register: needs a function and a name of "
                                              "1-%d bytes", PGC_RPC_NAME_MAX - 1);
    }
    pthread_mutex_lock(&fn_mu);
    for (e = fns; e && strcmp(e->name, name) != 0; e = e->next) {
    }
    if (!e && (e = calloc(1, sizeof(*e)))) {
        snprintf(e->name, sizeof(e->name), "%s", name);
        e->next = fns;
        fns = e;
    }
    if (e) {
        e->fn = fn;
        e->user = user;
    }
    pthread_mutex_unlock(&fn_mu);
    return e ? PGC_OK : mps_error(PGC_ERR_NOMEM, "pgc_rpc_register");
}

static bool find_fn(const char *name, pgc_rpc_fn *fn, void **user)
{
    struct rpc_fn_entry *e;

    pthread_mutex_lock(&fn_mu);
    for (e = fns; e && strcmp(e->name, name) != 0; e = e->next) {
    }
    if (e) {
        *fn = e->fn;
        *user = e->user;
    }
    pthread_mutex_unlock(&fn_mu);
    return e != NULL;
}

int pgc_rpc_call_fail(pgc_rpc_call *call, const char *fmt, ...)
{
    struct rpc_exec *ex = container_of(call, struct rpc_exec, call);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(ex->err, sizeof(ex->err), fmt, ap);
    va_end(ap);
    return PGC_ERR_INVALID_ARG;
}

/* ---- sending ---- */

static uint32_t new_data_tag(void)
{
    uint32_t n = __atomic_add_fetch(&rpc.next_tag, 1, __ATOMIC_RELAXED);

    return RPC_TAG_DATA0 + n % (uint32_t)(PG_TAG_UB - RPC_TAG_DATA0);
}

static int send_all(int dst, const void *buf, size_t len, const struct rpc_hdr *h,
                    const pgc_rpc_value *v)
{
    struct pg_req reqs[1 + 8];
    struct pg_req *rq = reqs;
    int n = 0, rc;

    if (v && v->ntensors > 8 && !(rq = malloc(sizeof(*rq) * (size_t)(1 + v->ntensors)))) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc: send requests");
    }
    pg_req_no_callback(&rq[0]);
    rc = pg_isend(rpc.g, buf, len, dst, RPC_TAG_HDR, false, &rq[n++]);
    for (int i = 0; v && rc == PGC_OK && i < v->ntensors; i++) {
        const pgc_tensor *t = &v->tensors[i];
        size_t bytes = t->numel * pgc_dtype_size(t->dtype);
        if (bytes >= 8192) {
            pg_req_no_callback(&rq[n]);
            rc = pg_isend(rpc.g, t->data, bytes, dst, (int)h->data_tag, false, &rq[n++]);
        }
    }
    /* Before the waits: a large tensor's send completes only once the receiver has taken
     * the header, which a sleeping receiver does only when rung. */
    if (rc == PGC_OK) {
        rpc_bell_ring(dst);
    }
    for (int i = 0; i < n; i++) {
        int w = pg_wait(&rq[i], rpc.timeout);
        rc = rc == PGC_OK ? w : rc;
    }
    if (rq != reqs) {
        free(rq);
    }
    return rc;
}

int rpc_send(int dst, struct rpc_hdr *h, const char *name, size_t name_len, const pgc_rpc_value *v)
{
    struct rpc_rdesc *rd = NULL;
    int made = 0, rc = PGC_OK;
    size_t len;
    void *buf = NULL;
    uint64_t small[SMALL_MSG / 8];

    if (v && v->nrrefs && !(rd = calloc((size_t)v->nrrefs, sizeof(*rd)))) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc: rref descriptors");
    }
    for (; v && made < v->nrrefs && rc == PGC_OK; made++) {
        rc = rpc_rref_fork_out(v->rrefs[made], dst, &rd[made]);
    }
    h->data_tag = new_data_tag();
    if (rc == PGC_OK) {
        rc = rpc_wire_pack(h, name, name_len, v, rd, small, sizeof(small), &buf, &len);
    }
    if (rc == PGC_OK) {
        __atomic_add_fetch(&rpc.sent, 1, __ATOMIC_RELAXED);
        rc = send_all(dst, buf, len, h, v);
    }
    if (rc != PGC_OK) {
        /* Undo the forks: the receiver never learns of them. (A failure after the header left
         * can not be told apart; the receiver then holds a fork the owner may not know.) */
        for (int i = 0; i < made - (rc == PGC_OK ? 0 : 1) && v; i++) {
            rpc_rref_fork_undo(v->rrefs[i], &rd[i]);
        }
    }
    if (buf != small) {
        free(buf);
    }
    free(rd);
    return rc;
}

/* ---- pending calls ---- */

int rpc_pending_add(uint64_t id, int dst, const char *fn, double timeout, pgc_future *f)
{
    struct rpc_pending *p = calloc(1, sizeof(*p));

    if (!p) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc: a pending call");
    }
    p->id = id;
    p->dst = dst;
    p->deadline = mps_now() + rpc_timeout_of(timeout);
    p->f = rpc_future_ref(f);
    snprintf(p->fn, sizeof(p->fn), "%s", fn ? fn : "");
    pthread_mutex_lock(&rpc.mu);
    mps_list_push_back(&rpc.pending, &p->link);
    pthread_mutex_unlock(&rpc.mu);
    return PGC_OK;
}

static struct rpc_pending *pending_take(uint64_t id)
{
    struct mps_list *pos;
    struct rpc_pending *found = NULL;

    pthread_mutex_lock(&rpc.mu);
    mps_list_for_each(pos, &rpc.pending)
    {
        struct rpc_pending *p = container_of(pos, struct rpc_pending, link);
        if (p->id == id) {
            mps_list_remove(&p->link);
            found = p;
            break;
        }
    }
    pthread_mutex_unlock(&rpc.mu);
    return found;
}

static void pending_finish(struct rpc_pending *p, int status, const char *text, pgc_rpc_value *v)
{
    rpc_future_complete(p->f, status, text, v);
    pgc_future_free(p->f);
    free(p);
}

void rpc_pending_drop(uint64_t id)
{
    struct rpc_pending *p = pending_take(id);

    if (p) {
        pgc_future_free(p->f);
        free(p);
    }
}

/* Takes out every pending call that match() selects, then fails them (outside the lock:
 * their callbacks may call back into us). */
static void pending_fail_where(bool (*match)(struct rpc_pending *p, void *arg), void *arg,
                               int status, const char *why)
{
    struct mps_list out, *pos, *tmp;
    char wd[96], text[512];

    mps_list_init(&out);
    pthread_mutex_lock(&rpc.mu);
    mps_list_for_each_safe(pos, tmp, &rpc.pending)
    {
        struct rpc_pending *p = container_of(pos, struct rpc_pending, link);
        if (match(p, arg)) {
            mps_list_remove(&p->link);
            mps_list_push_back(&out, &p->link);
        }
    }
    pthread_mutex_unlock(&rpc.mu);
    mps_list_for_each_safe(pos, tmp, &out)
    {
        struct rpc_pending *p = container_of(pos, struct rpc_pending, link);
        snprintf(text, sizeof(text), "pgc_rpc: call of '%s' on %s: %s", p->fn,
                 rpc_worker_desc(p->dst, wd, sizeof(wd)), why);
        pending_finish(p, status, text, NULL);
    }
}

static bool past_deadline(struct rpc_pending *p, void *now)
{
    return *(double *)now > p->deadline;
}

static bool to_rank(struct rpc_pending *p, void *rank)
{
    return p->dst == *(int *)rank;
}

static bool any_call(struct rpc_pending *p, void *arg)
{
    (void)p;
    (void)arg;
    return true;
}

/* ---- calls ---- */

/* Starts a request of kind to dst and returns its future. */
static int call_start(const char *call, int dst, const struct rpc_hdr *tmpl, const char *fn,
                      const pgc_rpc_value *args, double timeout, pgc_future **out)
{
    struct rpc_hdr h = *tmpl;
    pgc_future *f = pgc_future_new();
    char wd[96];
    int rc = f ? PGC_OK : PGC_ERR_NOMEM;

    *out = NULL;
    h.id = rpc_new_id();
    if (rc == PGC_OK) {
        rc = rpc_pending_add(h.id, dst, fn ? fn : "to_here",
                             timeout, f);
    }
    if (rc == PGC_OK) {
        rc = rpc_send(dst, &h, fn ? fn : "", fn ? strlen(fn) : 0, args);
        if (rc != PGC_OK) {
            rpc_pending_drop(h.id);
            rc = pgc_wrap(rc, "%s of '%s' to %s", call, fn ? fn : "to_here",
                          rpc_worker_desc(dst, wd, sizeof(wd)));
        }
    }
    if (rc != PGC_OK) {
        pgc_future_free(f);
        return rc;
    }
    *out = f;
    return PGC_OK;
}

int rpc_call(const char *call, int dst, const struct rpc_hdr *h, const char *fn,
             const pgc_rpc_value *args, double timeout, pgc_future **out)
{
    int rc = check_value(call, args);

    if (rc == PGC_OK && fn) {
        rc = check_fn_name(call, fn);
    }
    return rc == PGC_OK ? call_start(call, dst, h, fn, args, timeout, out) : rc;
}

int pgc_rpc_async(const char *to, const char *fn, const pgc_rpc_value *args, double timeout,
                  pgc_future **fut)
{
    struct rpc_hdr h = {.kind = RPC_CALL};
    int dst, rc;

    if (!fut) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_rpc_async: NULL future pointer");
    }
    *fut = NULL;
    rc = rpc_dst_of("pgc_rpc_async", to, &dst);
    if (rc == PGC_OK && !fn) {
        rc = check_fn_name("pgc_rpc_async", fn);
    }
    return rc == PGC_OK ? rpc_call("pgc_rpc_async", dst, &h, fn, args, timeout, fut) : rc;
}

int rpc_wait_take(pgc_future *f, pgc_rpc_value *result)
{
    int rc = pgc_future_wait(f, -1);

    if (rc == PGC_OK && result) {
        rc = pgc_future_take_value(f, result);
    }
    pgc_future_free(f);
    return rc;
}

int pgc_rpc_sync(const char *to, const char *fn, const pgc_rpc_value *args, double timeout,
                 pgc_rpc_value *result)
{
    pgc_future *f;
    int rc;

    if (result) {
        memset(result, 0, sizeof(*result));
    }
    rc = pgc_rpc_async(to, fn, args, timeout, &f);
    if (rc != PGC_OK) {
        return pgc_wrap(rc, "pgc_rpc_sync");
    }
    return rpc_wait_take(f, result);
}

/* ---- the callee: server threads ---- */

static bool poll_until(bool (*done)(void *arg), void *arg, double spin, bool caller);

static void queue_job(struct rpc_job *j)
{
    pthread_mutex_lock(&rpc.mu);
    j->next = NULL;
    if (rpc.qtail) {
        rpc.qtail->next = j;
    } else {
        rpc.qhead = j;
    }
    rpc.qtail = j;
    __atomic_add_fetch(&rpc.queued, 1, __ATOMIC_RELEASE);
    /* An idle server thread that received it runs it itself: waking another costs more. */
    if (!idle_server && rpc.qsleepers > 0) {
        pthread_cond_signal(&rpc.qcv);
    }
    pthread_mutex_unlock(&rpc.mu);
}

static void job_free(struct rpc_job *j)
{
    pgc_rpc_value_free(&j->args);
    if (j->later) {
        pgc_future_free(j->later);
    }
    free(j);
}

static void send_reply(struct rpc_job *j, int status, const char *text, pgc_rpc_value *v)
{
    struct rpc_hdr h = {.kind = RPC_REPLY, .id = j->hdr.id, .status = status};
    size_t tl = text ? strlen(text) : 0;
    char wd[96];
    int rc;

    rc = rpc_send(j->src, &h, text ? text : "", tl, status == PGC_OK ? v : NULL);
    if (rc != PGC_OK) {
        mps_log(MPS_LOG_WARN, "pgc_rpc: the answer to %s for '%s' was not sent: %s",
                rpc_worker_desc(j->src, wd, sizeof(wd)), j->fn, mps_last_error());
    }
}

/* The end of a request: a REMOTE keeps the value as its object, the others send it. */
static void job_finish(struct rpc_job *j, int status, const char *text, pgc_rpc_value *v)
{
    if (j->hdr.kind == RPC_REMOTE && j->obj) {
        if (status == PGC_OK && v) {
            j->obj->value = *v;
            memset(v, 0, sizeof(*v));
        }
        rpc_future_complete(j->obj->created, status, text, NULL);
        send_reply(j, status, text, NULL);
    } else {
        send_reply(j, status, text, v);
    }
    if (v) {
        pgc_rpc_value_free(v);
    }
    if (j->obj) {
        rpc_owned_put(j->obj);
    }
    job_free(j);
}

/* An async result completed: its reply is sent by a server thread, never the thread that
 * completed it (the agent, for a chained RPC). */
static void on_later(pgc_future *f, void *arg)
{
    (void)f;
    queue_job(arg);
}

static void finish_later(struct rpc_job *j)
{
    pgc_rpc_value v = {0};
    int st = pgc_future_status(j->later);
    char text[512];

    if (st == PGC_OK) {
        pgc_future_take_value(j->later, &v);
        job_finish(j, PGC_OK, NULL, &v);
        return;
    }
    snprintf(text, sizeof(text), "worker '%s' (rank %d): function '%s' failed: %s",
             rpc.names[rpc.rank], rpc.rank, j->fn, pgc_future_error(j->later));
    job_finish(j, st, text, NULL);
}

/* The object a call on an RRef uses, once created. */
static int object_ready(struct rpc_job *j, char *text, size_t len)
{
    int st;

    if (!j->obj) {
        snprintf(text, len, "worker '%s' (rank %d) owns no object of that RRef (freed?)",
                 rpc.names[rpc.rank], rpc.rank);
        return PGC_ERR_NOT_FOUND;
    }
    st = pgc_future_wait(j->obj->created, rpc.timeout);
    if (st != PGC_OK) {
        snprintf(text, len, "worker '%s' (rank %d): the object was not created: %s",
                 rpc.names[rpc.rank], rpc.rank, pgc_future_error(j->obj->created));
    }
    return st;
}

static void run_to_here(struct rpc_job *j)
{
    pgc_rpc_value copy;
    char text[512];
    int st = object_ready(j, text, sizeof(text));

    if (st == PGC_OK && (st = rpc_value_copy(&j->obj->value, &copy)) != PGC_OK) {
        snprintf(text, sizeof(text), "worker '%s': copying the object: %s", rpc.names[rpc.rank],
                 pgc_strerror(st));
    }
    job_finish(j, st, text, st == PGC_OK ? &copy : NULL);
}

static void run_fn(struct rpc_job *j)
{
    struct rpc_exec ex;
    char text[600];
    pgc_rpc_fn fn;
    int st = PGC_OK;

    memset(&ex, 0, sizeof(ex));
    if (!find_fn(j->fn, &fn, &ex.call.user)) {
        snprintf(text, sizeof(text), "worker '%s' (rank %d) has no function '%s' (register it "
                 "there with pgc_rpc_register)", rpc.names[rpc.rank], rpc.rank, j->fn);
        job_finish(j, PGC_ERR_NOT_FOUND, text, NULL);
        return;
    }
    if (j->hdr.kind == RPC_RREF_CALL && (st = object_ready(j, text, sizeof(text))) != PGC_OK) {
        job_finish(j, st, text, NULL);
        return;
    }
    ex.call.args = &j->args;
    ex.call.self = j->hdr.kind == RPC_RREF_CALL ? &j->obj->value : NULL;
    ex.call.fn_name = j->fn;
    ex.call.caller = j->src;
    ex.call.caller_name = rpc.names[j->src];
    st = fn(&ex.call);
    if (st != PGC_OK) {
        snprintf(text, sizeof(text), "worker '%s' (rank %d): function '%s' failed: %s",
                 rpc.names[rpc.rank], rpc.rank, j->fn, ex.err[0] ? ex.err : pgc_strerror(st));
        pgc_rpc_value_free(&ex.call.ret);
        if (ex.call.async_result) {
            pgc_future_free(ex.call.async_result);
        }
        job_finish(j, st < 0 ? st : PGC_ERR_INTERNAL, text, NULL);
    } else if (ex.call.async_result) {
        pgc_rpc_value_free(&ex.call.ret);
        j->later = ex.call.async_result;
        pgc_future_then(j->later, on_later, j);
    } else {
        job_finish(j, PGC_OK, NULL, &ex.call.ret);
    }
}

static void run_job(struct rpc_job *j)
{
    if (j->later) {
        finish_later(j);
    } else if (j->hdr.kind == RPC_TO_HERE) {
        run_to_here(j);
    } else {
        run_fn(j);
    }
}

/* The next request, counted as running, or NULL. Wakes another server thread for the one
 * after it, which the idle thread that received both would otherwise leave waiting. */
static struct rpc_job *job_take(void)
{
    struct rpc_job *j;

    pthread_mutex_lock(&rpc.mu);
    j = rpc.qhead;
    if (j) {
        rpc.qhead = j->next;
        if (!rpc.qhead) {
            rpc.qtail = NULL;
        }
        __atomic_sub_fetch(&rpc.queued, 1, __ATOMIC_RELAXED);
        rpc.running_jobs++;
        if (rpc.qhead && rpc.qsleepers > 0) {
            pthread_cond_signal(&rpc.qcv);
        }
    }
    pthread_mutex_unlock(&rpc.mu);
    return j;
}

static void job_done(void)
{
    pthread_mutex_lock(&rpc.mu);
    rpc.running_jobs--;
    pthread_mutex_unlock(&rpc.mu);
}

/* Sleeps until a request is queued or the threads stop. */
static void job_sleep(void)
{
    pthread_mutex_lock(&rpc.mu);
    while (!rpc.qhead && !__atomic_load_n(&rpc.stop, __ATOMIC_ACQUIRE)) {
        rpc.qsleepers++;
        pthread_cond_wait(&rpc.qcv, &rpc.mu);
        rpc.qsleepers--;
    }
    pthread_mutex_unlock(&rpc.mu);
}

static bool job_queued(void *arg)
{
    (void)arg;
    return __atomic_load_n(&rpc.queued, __ATOMIC_ACQUIRE) > 0;
}

/* How long a server thread polls after a request that came gap seconds after the one
 * before. */
static double serve_spin(double gap)
{
    return gap < SERVE_SPIN_MAX && 1.5 * gap > SERVE_SPIN ? 1.5 * gap : SERVE_SPIN;
}

static void *server_main(void *arg)
{
    bool after_job = false;
    double last_job = 0, gap = 1;

    (void)arg;
    for (;;) {
        struct rpc_job *j = job_take();
        if (j) {
            double now = mps_now();
            gap = now - last_job;
            last_job = now;
            run_job(j);
            job_done();
            after_job = true;
            continue;
        }
        if (__atomic_load_n(&rpc.stop, __ATOMIC_ACQUIRE)) {
            break;
        }
        if (after_job) {
            /* The caller's next request is likely on its way: receive it here. */
            after_job = false;
            idle_server = true;
            poll_until(job_queued, NULL, serve_spin(gap), false);
            idle_server = false;
            continue;
        }
        job_sleep();
    }
    return NULL;
}

/* ---- the agent ---- */

static void on_reply(const struct rpc_hdr *h, const char *text, pgc_rpc_value *v)
{
    struct rpc_pending *p = pending_take(h->id);

    if (!p) {
        /* Its caller gave up (timeout, dead peer) before the answer came. */
        pgc_rpc_value_free(v);
        return;
    }
    pending_finish(p, h->status, text, v);
}

static void on_request(int src, const struct rpc_hdr *h, const char *name, pgc_rpc_value *v)
{
    struct rpc_job *j = calloc(1, sizeof(*j));

    if (!j) {
        pgc_rpc_value_free(v);
        return;
    }
    j->hdr = *h;
    j->src = src;
    snprintf(j->fn, sizeof(j->fn), "%s", name);
    j->args = *v;
    memset(v, 0, sizeof(*v));
    if (h->kind == RPC_REMOTE) {
        /* The object exists from now on, with its creator's fork: a delete the creator sends
         * next is handled after this, whatever the server threads do meanwhile. */
        j->obj = rpc_owned_create(h);
    } else if (h->kind != RPC_CALL) {
        j->obj = rpc_owned_get(h->rref_id);
    }
    queue_job(j);
}

static void dispatch(int src, void *buf, size_t len)
{
    struct rpc_hdr h;
    char name[1024];
    pgc_rpc_value v;

    if (rpc_wire_unpack(src, buf, len, &h, name, sizeof(name), &v) != PGC_OK) {
        mps_log(MPS_LOG_WARN, "%s", mps_last_error());
        return;
    }
    switch (h.kind) {
    case RPC_REPLY:
        on_reply(&h, name, &v);
        break;
    case RPC_CALL:
    case RPC_REMOTE:
    case RPC_RREF_CALL:
    case RPC_TO_HERE:
        on_request(src, &h, name, &v);
        break;
    case RPC_FORK_REQ:
        rpc_rref_on_fork_req(src, &h);
        break;
    case RPC_CHILD_ACCEPT:
        rpc_rref_on_child_accept(&h);
        break;
    case RPC_DELETE:
        rpc_rref_on_delete(&h);
        break;
    default:
        break;
    }
    pgc_rpc_value_free(&v);
}

/* Takes one header message if one waits; true if it did. */
static bool receive_one(void)
{
    struct pg_req probe, req;
    struct pg_msg *msg = NULL;
    bool found = false;
    uint64_t small[SMALL_MSG / 8];
    void *buf;
    int rc;

    rc = pg_iprobe(rpc.g, PG_ANY_SOURCE, RPC_TAG_HDR, true, &found, &probe, &msg);
    if (rc != PGC_OK || !found) {
        return false;
    }
    buf = probe.len <= sizeof(small) ? small : malloc(probe.len);
    if (!buf) {
        pg_msg_free(msg);
        return true;
    }
    pg_req_no_callback(&req);
    rc = pg_mrecv(msg, buf, probe.len, &req);
    if (rc == PGC_OK) {
        rc = pg_wait(&req, rpc.timeout);
    }
    __atomic_add_fetch(&rpc.received, 1, __ATOMIC_RELAXED);
    if (rc == PGC_OK) {
        dispatch(probe.source, buf, probe.len);
    }
    if (buf != small) {
        free(buf);
    }
    return true;
}

static bool rx_try(void)
{
    return pthread_mutex_trylock(&rpc.rx_mu) == 0;
}

static void rx_release(void)
{
    pthread_mutex_unlock(&rpc.rx_mu);
}


/* Polls as the receiver until done(arg) or for spin seconds, if it gets the role within
 * ROLE_TRY: a thread that does not leaves the receiving to the holder (more threads polling
 * on a few cores slow each other down). On giving the role back it wakes the agent, which
 * parked meanwhile, when it stops for want of messages or when other callers wait (they
 * may sleep on their futures); a caller whose own answer came does not, since it is likely
 * to receive again at once (a caller in a loop): the park's bound covers the rest. Whether
 * done(arg) held. */
/* Whether a poll goes on after elapsed seconds and tries: for spin seconds once it has the
 * role; before, for ROLE_TRY and at least 1000 tries (a thread preempted during those 10 us
 * has not really tried). */
static bool poll_more(bool have, double elapsed, int tries, double spin)
{
    return have ? elapsed < spin : elapsed < ROLE_TRY || tries < 1000;
}

static bool poll_until(bool (*done)(void *arg), void *arg, double spin, bool caller)
{
    double start = mps_now(), now = start;
    bool have = false, ok;

    /* The agent yields the role while this is above 0 (it would otherwise take it back
     * between any two of our tries, as it releases it only for an instant). */
    __atomic_add_fetch(&rpc.rx_wanted, 1, __ATOMIC_SEQ_CST);
    for (int tries = 0; !(ok = done(arg)) && !__atomic_load_n(&rpc.stop, __ATOMIC_ACQUIRE) &&
                        poll_more(have, now - start, tries, spin);
         tries++) {
        if (have || (have = rx_try())) {
            receive_one();
        } else {
            mps_cpu_relax();
        }
        now = mps_now();
    }
    __atomic_sub_fetch(&rpc.rx_wanted, 1, __ATOMIC_SEQ_CST);
    if (have) {
        rx_release();
        if (!ok || __atomic_load_n(&rpc.waiters, __ATOMIC_ACQUIRE) > (caller ? 1 : 0)) {
            rpc_bell_ring_self();
        }
    }
    return ok;
}

static bool future_done(void *f)
{
    return pgc_future_done(f);
}

bool rpc_waiter_enter(void)
{
    if (!__atomic_load_n(&rpc.up, __ATOMIC_ACQUIRE)) {
        return false;
    }
    __atomic_add_fetch(&rpc.waiters, 1, __ATOMIC_ACQ_REL);
    return true;
}

void rpc_waiter_leave(void)
{
    __atomic_sub_fetch(&rpc.waiters, 1, __ATOMIC_ACQ_REL);
}

bool rpc_receive_while_pending(pgc_future *f, double limit)
{
    if (!__atomic_load_n(&rpc.up, __ATOMIC_ACQUIRE)) {
        return false;
    }
    return poll_until(future_done, f, limit > 0 && limit < CALL_SPIN ? limit : CALL_SPIN, true);
}

static void watch_dead(void)
{
    int pid = 0, dead;
    char why[160];
    bool fresh;

    PG_LOCK();
    dead = pg_w.fab ? fab_dead_peer(pg_w.fab, &pid) : -1;
    PG_UNLOCK();
    if (dead < 0 || dead >= rpc.size) {
        return;
    }
    pthread_mutex_lock(&rpc.mu);
    fresh = !rpc.dead[dead];
    rpc.dead[dead] = true;
    pthread_mutex_unlock(&rpc.mu);
    if (fresh) {
        snprintf(why, sizeof(why), "the worker died (pid %d) before it answered", pid);
        pending_fail_where(to_rank, &dead, PGC_ERR_PEER_DEAD, why);
    }
}

/* How long the agent may sleep: until a ring, or for the bound that finds messages from
 * peers that can not ring (another node) soon enough: 50 us while calls are recent, 500 us
 * once idle. With every peer ringing, only the deadlines bound it. */
static double nap_time(double idle)
{
    for (int r = 0; r < rpc.size; r++) {
        if (!rpc.bells[r]) {
            return idle < 0.1 ? 50e-6 : 500e-6;
        }
    }
    return WATCH_TIMEOUTS;
}

/* Sleeps on the doorbell unless a message came; true if one did (and was received). */
static bool sleep_on_bell(double idle)
{
    uint32_t word = rpc_bell_arm(BELL_ASLEEP);
    bool got = false;

    /* The last probe after arming: a message sent before it is found here, one after it
     * rings (pgc_rpc_bell.c). The role is busy: its holder receives, the agent parks. */
    if (!rx_try()) {
        rpc_bell_disarm();
        return false;
    }
    got = receive_one();
    rx_release();
    if (got) {
        rpc_bell_disarm();
        return true;
    }
    rpc_bell_sleep(word, nap_time(idle));
    return false;
}

/* Another thread receives or wants to: sleeps until it stops (it rings) or for PARK_TIME,
 * without being rung by senders, which that thread serves. */
static void park(void)
{
    uint32_t word = rpc_bell_arm(BELL_PARKED);

    if (__atomic_load_n(&rpc.rx_wanted, __ATOMIC_SEQ_CST) == 0 && rx_try()) {
        /* Free already: the agent polls at once. */
        rx_release();
        rpc_bell_disarm();
        return;
    }
    rpc_bell_sleep(word, PARK_TIME);
}

static void housekeeping(double now, double *next_deadlines, double *next_dead)
{
    if (now >= *next_deadlines) {
        char why[96];
        *next_deadlines = now + WATCH_TIMEOUTS;
        snprintf(why, sizeof(why), "no answer within its timeout");
        pending_fail_where(past_deadline, &now, PGC_ERR_TIMEOUT, why);
    }
    if (now >= *next_dead) {
        *next_dead = now + WATCH_DEAD;
        watch_dead();
    }
}

static void *agent_main(void *arg)
{
    double last_msg = mps_now(), next_deadlines = 0, next_dead = 0;

    (void)arg;
    while (!__atomic_load_n(&rpc.stop, __ATOMIC_ACQUIRE)) {
        bool busy = __atomic_load_n(&rpc.rx_wanted, __ATOMIC_ACQUIRE) > 0 || !rx_try();
        bool got = false;
        double now;
        if (!busy) {
            got = receive_one();
            rx_release();
        }
        now = mps_now();
        if (got) {
            last_msg = now;
            continue;
        }
        housekeeping(now, &next_deadlines, &next_dead);
        if (busy) {
            park();
        } else if (now - last_msg > AGENT_SPIN && sleep_on_bell(now - last_msg)) {
            last_msg = mps_now();
        } else {
            mps_cpu_relax();
        }
    }
    return NULL;
}

/* ---- init and shutdown ---- */

static int start_world(const pgc_rpc_opts *o, int rank, int size)
{
    const char *method = o->init_method;
    int rc;

    if (pg_is_initialized()) {
        /* Someone else's world, or ours left up by a shutdown that was not graceful (which
         * keeps rpc.owns_world). */
        if (!pg_w.mt) {
            return mps_error(PGC_ERR_UNSUPPORTED, "pgc_rpc_init: the world was started without "
                             "threads (MPI_Init_thread with MPI_THREAD_MULTIPLE is needed)");
        }
        return PGC_OK;
    }
    if (method && strcmp(method, "auto") == 0) {
        method = NULL;
    }
    size = size > 0 ? size : -1;
    rank = size > 0 && rank >= 0 ? rank : -1;
    rc = pg_init(method, rank, size, rpc.timeout, true);
    if (rc != PGC_OK) {
        return pgc_wrap(rc, "pgc_rpc_init (init_method %s)", method ? method : "auto");
    }
    rpc.owns_world = true;
    return PGC_OK;
}

static int exchange_names(const char *name)
{
    char mine[PGC_RPC_NAME_MAX] = {0};
    int rc;

    rpc.names = calloc((size_t)rpc.size, PGC_RPC_NAME_MAX);
    rpc.dead = calloc((size_t)rpc.size, sizeof(bool));
    if (!rpc.names || !rpc.dead) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc_init: the table of %d workers", rpc.size);
    }
    snprintf(mine, sizeof(mine), "%s", name);
    rc = pg_allgather(rpc.g, mine, rpc.names, PGC_RPC_NAME_MAX);
    if (rc != PGC_OK) {
        return pgc_wrap(rc, "pgc_rpc_init: exchanging worker names");
    }
    for (int i = 0; i < rpc.size; i++) {
        rpc.names[i][PGC_RPC_NAME_MAX - 1] = '\0';
        for (int k = 0; k < i; k++) {
            if (strcmp(rpc.names[i], rpc.names[k]) == 0) {
                return mps_error(PGC_ERR_INVALID_ARG, "pgc_rpc_init: ranks %d and %d both chose "
                                 "the worker name '%s' (names must be unique)", k, i, rpc.names[i]);
            }
        }
    }
    return PGC_OK;
}

static int start_threads(int nservers)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_cond_init(&rpc.qcv, &ca);
    pthread_condattr_destroy(&ca);
    rpc.servers = calloc((size_t)nservers, sizeof(pthread_t));
    if (!rpc.servers) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc_init: threads");
    }
    __atomic_store_n(&rpc.stop, 0, __ATOMIC_RELEASE);
    if (pthread_create(&rpc.agent, NULL, agent_main, NULL) != 0) {
        return mps_error(PGC_ERR_INTERNAL, "pgc_rpc_init: no agent thread");
    }
    for (; rpc.nservers < nservers; rpc.nservers++) {
        if (pthread_create(&rpc.servers[rpc.nservers], NULL, server_main, NULL) != 0) {
            return mps_error(PGC_ERR_INTERNAL, "pgc_rpc_init: server thread %d", rpc.nservers);
        }
    }
    return PGC_OK;
}

static void stop_threads(bool agent_started)
{
    pthread_mutex_lock(&rpc.mu);
    __atomic_store_n(&rpc.stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&rpc.qcv);
    pthread_mutex_unlock(&rpc.mu);
    rpc_bell_ring_self();
    if (agent_started) {
        pthread_join(rpc.agent, NULL);
    }
    for (int i = 0; i < rpc.nservers; i++) {
        pthread_join(rpc.servers[i], NULL);
    }
    rpc.nservers = 0;
    free(rpc.servers);
    rpc.servers = NULL;
}

/* Frees what the threads left: queued requests, pending calls (failed). */
static void teardown(void)
{
    struct rpc_job *j;

    pending_fail_where(any_call, NULL, PGC_ERR_CANCELLED, "RPC was shut down first");
    while ((j = rpc.qhead)) {
        rpc.qhead = j->next;
        if (j->obj) {
            rpc_owned_put(j->obj);
        }
        job_free(j);
    }
    rpc.qtail = NULL;
    rpc_rref_fini();
    rpc_bell_close();
    if (rpc.g) {
        pg_group_release(rpc.g);
        rpc.g = NULL;
    }
    free(rpc.names);
    free(rpc.dead);
    rpc.names = NULL;
    rpc.dead = NULL;
}

int pgc_rpc_init(const char *name, int rank, int world_size, const pgc_rpc_opts *opts)
{
    pgc_rpc_opts defaults = PGC_RPC_OPTS_DEFAULT;
    bool threads = false;
    int rc;

    if (rpc.up) {
        return mps_error(PGC_ERR_ALREADY_INITIALIZED, "pgc_rpc_init: RPC is already initialized");
    }
    if (!name || !*name || strlen(name) >= PGC_RPC_NAME_MAX) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_rpc_init: the worker name must be 1-%d bytes",
                         PGC_RPC_NAME_MAX - 1);
    }
    opts = opts ? opts : &defaults;
    rpc.timeout = opts->timeout > 0 ? opts->timeout : DEFAULT_TIMEOUT;
    mps_list_init(&rpc.pending);
    mps_list_init(&rpc.owned);
    mps_list_init(&rpc.handles);
    rc = start_world(opts, rank, world_size);
    if (rc == PGC_OK && (rc = pg_group_dup(pg_world_group(), &rpc.g)) != PGC_OK) {
        rc = pgc_wrap(rc, "pgc_rpc_init: the RPC group");
    }
    if (rc == PGC_OK) {
        rpc.rank = rpc.g->rank;
        rpc.size = rpc.g->size;
        rc = exchange_names(name);
    }
    if (rc == PGC_OK) {
        rc = rpc_bell_open();
    }
    if (rc == PGC_OK) {
        /* Up before the threads start: a peer that finished its init first may already have
         * sent a request, whose function may call back into RPC. */
        threads = true;
        __atomic_store_n(&rpc.up, true, __ATOMIC_RELEASE);
        rc = start_threads(opts->num_server_threads > 0 ? opts->num_server_threads
                                                        : DEFAULT_SERVERS);
    }
    if (rc != PGC_OK) {
        if (threads) {
            stop_threads(rpc.servers != NULL);
            __atomic_store_n(&rpc.up, false, __ATOMIC_RELEASE);
        }
        teardown();
        if (rpc.owns_world) {
            pg_finalize();
            rpc.owns_world = false;
        }
        return rc;
    }
    mps_clear_error();
    return PGC_OK;
}

static int pending_count(void)
{
    struct mps_list *pos;
    int n = 0;

    pthread_mutex_lock(&rpc.mu);
    mps_list_for_each(pos, &rpc.pending)
    {
        n++;
    }
    pthread_mutex_unlock(&rpc.mu);
    return n;
}

/* Work this worker still has: pending calls, requests queued or running, objects, handles
 * waiting for confirmations. */
static int64_t local_busy(void)
{
    int64_t n = pending_count() + rpc_rref_busy_count();

    pthread_mutex_lock(&rpc.mu);
    n += rpc.running_jobs + (rpc.qhead != NULL);
    pthread_mutex_unlock(&rpc.mu);
    return n;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {0, ms * 1000000L};

    nanosleep(&ts, NULL);
}

/* Quiescence across the group: every message sent has been received, and no worker has
 * work left, twice in a row with the same message count (nothing moved in between). */
static int wait_quiet(void)
{
    struct pg_op_spec sum = {.dt = PG_INT64, .op = PG_OP_SUM, .elem_size = 8, .commutative = true};
    double deadline = mps_now() + rpc.timeout;
    int64_t prev = -1;

    for (;;) {
        int64_t loc[3], glob[3];
        int rc;
        loc[0] = (int64_t)__atomic_load_n(&rpc.sent, __ATOMIC_RELAXED);
        loc[1] = (int64_t)__atomic_load_n(&rpc.received, __ATOMIC_RELAXED);
        loc[2] = local_busy();
        rc = pg_allreduce(rpc.g, loc, glob, 3, &sum);
        if (rc != PGC_OK) {
            return pgc_wrap(rc, "pgc_rpc_shutdown: waiting for the other workers");
        }
        if (glob[0] == glob[1] && glob[2] == 0) {
            if (glob[0] == prev) {
                return PGC_OK;
            }
            prev = glob[0];
        } else {
            prev = -1;
        }
        if (mps_now() > deadline) {
            return mps_error(PGC_ERR_TIMEOUT, "pgc_rpc_shutdown: after %.0f s, %lld calls or "
                             "references were still live in the group", rpc.timeout,
                             (long long)glob[2]);
        }
        sleep_ms(2);
    }
}

static int graceful_wait(void)
{
    double deadline = mps_now() + rpc.timeout;

    /* Our own calls first: their answers may carry RRefs that must be released below. */
    while (pending_count() > 0 && mps_now() < deadline) {
        sleep_ms(1);
    }
    rpc_rref_release_all();
    return wait_quiet();
}

int pgc_rpc_shutdown(int graceful)
{
    int rc = rpc_check_up("pgc_rpc_shutdown"), fin;

    if (rc != PGC_OK) {
        return rc;
    }
    if (graceful) {
        rc = graceful_wait();
    } else {
        rpc_rref_release_all();
    }
    stop_threads(true);
    __atomic_store_n(&rpc.up, false, __ATOMIC_RELEASE);
    teardown();
    /* Closing the world is collective (a barrier), and a worker that shuts down at once may
     * do so because a peer is gone, which a transport without a view of dead peers (tcp)
     * would wait for without end: then the world stays up for a later pgc_rpc_init, and
     * process exit closes it. */
    if (graceful && rpc.owns_world) {
        fin = pg_finalize();
        rc = rc == PGC_OK ? fin : rc;
        rpc.owns_world = false;
    }
    return rc;
}

/* ---- information ---- */

int pgc_rpc_get_worker_info_by_rank(int rank, pgc_rpc_worker_info *info)
{
    int rc = rpc_check_up("pgc_rpc_get_worker_info_by_rank");

    if (rc == PGC_OK && (rank < 0 || rank >= rpc.size || !info)) {
        rc = mps_error(PGC_ERR_INVALID_RANK, "pgc_rpc_get_worker_info_by_rank: rank %d outside "
                       "0..%d (or NULL info)", rank, rpc.size - 1);
    }
    if (rc == PGC_OK) {
        snprintf(info->name, sizeof(info->name), "%s", rpc.names[rank]);
        info->rank = rank;
    }
    return rc;
}

int pgc_rpc_get_worker_info(const char *name, pgc_rpc_worker_info *info)
{
    int rc = rpc_check_up("pgc_rpc_get_worker_info"), rank;

    if (rc != PGC_OK) {
        return rc;
    }
    rank = rank_of_name(name);
    if (rank < 0) {
        return mps_error(PGC_ERR_INVALID_RANK, "pgc_rpc_get_worker_info: no worker is named '%s'",
                         name ? name : "(null)");
    }
    return pgc_rpc_get_worker_info_by_rank(rank, info);
}

int pgc_rpc_get_self(pgc_rpc_worker_info *info)
{
    int rc = rpc_check_up("pgc_rpc_get_self");

    return rc == PGC_OK ? pgc_rpc_get_worker_info_by_rank(rpc.rank, info) : rc;
}

int pgc_rpc_get_debug_info(pgc_rpc_debug_info *info)
{
    struct mps_list *pos;

    if (!info) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_rpc_get_debug_info: NULL info");
    }
    memset(info, 0, sizeof(*info));
    rpc_rref_lifetime_counts(&info->num_owner_rrefs_created, &info->num_owner_rrefs_deleted,
                             &info->num_owner_rrefs_dropped);
    /* Outside init/shutdown only the lifetime counts mean something (the lists are gone). */
    if (!__atomic_load_n(&rpc.up, __ATOMIC_ACQUIRE)) {
        return PGC_OK;
    }
    info->num_pending_futures = pending_count();
    pthread_mutex_lock(&rpc.mu);
    mps_list_for_each(pos, &rpc.owned)
    {
        info->num_owner_rrefs++;
        info->num_forks += container_of(pos, struct rpc_owned, link)->nforks;
    }
    mps_list_for_each(pos, &rpc.handles)
    {
        info->num_user_rrefs += container_of(pos, struct pgc_rref, link)->owner != rpc.rank;
    }
    pthread_mutex_unlock(&rpc.mu);
    return PGC_OK;
}
