/* pg_sched.c - building and running collective schedules (see pg_sched.h). */
#include "config.h"

#include "pg_sched.h"
#include "pg_internal.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Finished schedules are kept (with their step arrays) for reuse: a collective then
 * costs no malloc on the fast path. Guarded by the world lock like everything here. */
#define SCHED_CACHE 16
static struct pg_sched *cache[SCHED_CACHE];
static int ncached;
/* Schedules are built outside the world lock, so the cache has a lock of its own. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
/* How deep this thread is in poll steps, which run under the world lock: a schedule that a
 * poll step starts (a stage of a node-aware collective, pg_coll_hier.c) starts without
 * taking the lock again (it is not recursive). */
static __thread int polling;

static struct pg_sched *cache_pop(void)
{
    struct pg_sched *s = NULL;

    if (pg_w.mt) {
        pthread_mutex_lock(&cache_lock);
    }
    if (ncached > 0) {
        s = cache[--ncached];
    }
    if (pg_w.mt) {
        pthread_mutex_unlock(&cache_lock);
    }
    return s;
}

static bool cache_push(struct pg_sched *s)
{
    bool kept = false;

    if (pg_w.mt) {
        pthread_mutex_lock(&cache_lock);
    }
    if (ncached < SCHED_CACHE) {
        cache[ncached++] = s;
        kept = true;
    }
    if (pg_w.mt) {
        pthread_mutex_unlock(&cache_lock);
    }
    return kept;
}

static struct pg_sched *sched_get(void)
{
    struct pg_sched *s = cache_pop();

    if (!s) {
        return calloc(1, sizeof(struct pg_sched));
    }
    s->req = NULL;
    s->status = PGC_OK;
    s->n = s->next = s->inflight = 0;
    s->nscratch = 0;
    s->inline_used = 0;
    s->page_offset = 0;
    s->send_flags = 0;
    s->sig = 0;
    s->algo = NULL;
    memset(&s->op, 0, sizeof(s->op));
    return s;
}

struct pg_sched *pg_sched_new(struct pg_group *g, const struct pg_op_spec *op,
                              struct pg_req *req)
{
    struct pg_sched *s = sched_get();

    if (!s) {
        mps_error(PGC_ERR_NOMEM, "no memory for a collective schedule");
        return NULL;
    }
    s->g = g;
    s->req = req;
    s->ctx = pg_ctx_coll(g);
    if (op) {
        s->op = *op;
    }
    mps_list_init(&s->link);
    return s;
}

void pg_sched_sig(struct pg_sched *s, enum pg_coll_kind kind, const struct pg_op_spec *op,
                  int root)
{
    s->sig = pg_coll_sig(kind, op, root);
}

void pg_sched_rooted(struct pg_sched *s)
{
    s->send_flags |= PG_SEND_ROOTED;
}

static struct pg_step *add_step(struct pg_sched *s, enum pg_step_kind kind)
{
    struct pg_step *st;

    if (s->status != PGC_OK) {
        return NULL;
    }
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        struct pg_step *steps = realloc(s->steps, sizeof(*steps) * (size_t)cap);
        if (!steps) {
            s->status = mps_error(PGC_ERR_NOMEM, "no memory for %d schedule steps", cap);
            return NULL;
        }
        s->steps = steps;
        s->cap = cap;
    }
    st = &s->steps[s->n++];
    memset(st, 0, sizeof(*st));
    st->kind = kind;
    return st;
}

static void add(struct pg_sched *s, enum pg_step_kind kind, int peer, void *dst, const void *src,
                size_t n)
{
    struct pg_step *st = add_step(s, kind);

    if (st) {
        st->peer = peer;
        st->dst = dst;
        st->src = src;
        st->n = n;
    }
}

void pg_sched_send(struct pg_sched *s, const void *buf, size_t bytes, int peer)
{
    add(s, PG_STEP_SEND, peer, NULL, buf, bytes);
}

void pg_sched_recv(struct pg_sched *s, void *buf, size_t bytes, int peer)
{
    add(s, PG_STEP_RECV, peer, buf, NULL, bytes);
}

void pg_sched_reduce(struct pg_sched *s, const void *in, void *inout, size_t count)
{
    add(s, PG_STEP_REDUCE, -1, inout, in, count);
}

void pg_sched_copy(struct pg_sched *s, void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes) {
        add(s, PG_STEP_COPY, -1, dst, src, bytes);
    }
}

void pg_sched_poll(struct pg_sched *s, pg_step_poll_fn fn, void *arg)
{
    struct pg_step *st = add_step(s, PG_STEP_POLL);

    if (st) {
        st->poll = fn;
        st->dst = arg;
    }
}

void pg_sched_poll_desc(struct pg_sched *s, pg_step_desc_fn desc)
{
    if (s->status == PGC_OK && s->n > 0 && s->steps[s->n - 1].kind == PG_STEP_POLL) {
        s->steps[s->n - 1].desc = desc;
    }
}

void pg_sched_fence(struct pg_sched *s)
{
    add(s, PG_STEP_FENCE, -1, NULL, NULL, 0);
}

/* Large scratch blocks are kept for the next collective: a fresh malloc of a megabyte is
 * an mmap whose pages fault in (and are zeroed) on first touch, which costs as much as
 * moving the data. A few blocks, bounded in total, reused smallest-fit. */
#define POOL_SLOTS 8
#define POOL_MAX_BYTES (256u << 20)
static struct pg_scratch pool[POOL_SLOTS];
static size_t pool_bytes;

static void *pool_take(size_t bytes)
{
    int best = -1;
    void *p = NULL;

    if (pg_w.mt) {
        pthread_mutex_lock(&cache_lock);
    }
    for (int i = 0; i < POOL_SLOTS; i++) {
        if (pool[i].p && pool[i].n >= bytes && pool[i].n / 4 <= bytes &&
            (best < 0 || pool[i].n < pool[best].n)) {
            best = i;
        }
    }
    if (best >= 0) {
        p = pool[best].p;
        pool_bytes -= pool[best].n;
        pool[best].p = NULL;
    }
    if (pg_w.mt) {
        pthread_mutex_unlock(&cache_lock);
    }
    return p;
}

/* The slot a block of n bytes goes to: a free one, else the smallest block if it is
 * smaller than n (a program that moves to larger messages must not keep reallocating while
 * the pool holds its old small blocks); -1 to free it instead. */
static int pool_slot(size_t n)
{
    int smallest = 0;

    for (int i = 0; i < POOL_SLOTS; i++) {
        if (!pool[i].p) {
            return i;
        }
        if (pool[i].n < pool[smallest].n) {
            smallest = i;
        }
    }
    return pool[smallest].n < n ? smallest : -1;
}

static void pool_give(void *p, size_t n)
{
    void *evicted = NULL;
    int slot;

    if (pg_w.mt) {
        pthread_mutex_lock(&cache_lock);
    }
    slot = pool_slot(n);
    if (slot >= 0 && pool[slot].p) {
        evicted = pool[slot].p;
        pool_bytes -= pool[slot].n;
        pool[slot].p = NULL;
    }
    if (slot >= 0 && pool_bytes + n <= POOL_MAX_BYTES) {
        pool[slot] = (struct pg_scratch){p, n};
        pool_bytes += n;
        p = NULL;
    }
    if (pg_w.mt) {
        pthread_mutex_unlock(&cache_lock);
    }
    free(evicted);
    free(p);
}

/* Large scratch shares its offset within a page with the collective's user buffer: the
 * peers' data usually comes from buffers like it, and the kernel's process_vm_readv copies
 * several times slower when source and destination sit at different page offsets
 * (measured here: 1 MiB in 132 us aligned, 644 us at offsets 0 and 16). */
#define SCRATCH_PAGE 4096u
#define SCRATCH_ALIGNED_MIN (64u << 10)

void pg_sched_align_like(struct pg_sched *s, const void *user_buf)
{
    s->page_offset = (size_t)((uintptr_t)user_buf % SCRATCH_PAGE) & ~(size_t)15;
}

void *pg_sched_alloc(struct pg_sched *s, size_t bytes)
{
    size_t aligned = (bytes + 15) & ~(size_t)15;
    bool page = aligned >= SCRATCH_ALIGNED_MIN;
    size_t n = page ? aligned + SCRATCH_PAGE : aligned;
    struct pg_scratch *list;
    void *p;

    if (s->status != PGC_OK) {
        return NULL;
    }
    if (aligned <= PG_SCHED_INLINE - s->inline_used) {
        p = s->inline_scratch + s->inline_used;
        s->inline_used += aligned;
        return p;
    }
    list = realloc(s->scratch, sizeof(*list) * (size_t)(s->nscratch + 1));
    if (list) {
        s->scratch = list;
    }
    p = pool_take(n);
    if (!p && page && posix_memalign(&p, SCRATCH_PAGE, n) != 0) {
        p = NULL;
    } else if (!p && !page) {
        p = malloc(n);
    }
    if (!list || !p) {
        free(p);
        s->status = mps_error(PGC_ERR_NOMEM, "no memory for %zu bytes of collective scratch",
                              bytes);
        return NULL;
    }
    s->scratch[s->nscratch++] = (struct pg_scratch){p, n};
    /* Pool blocks of large scratch are page-aligned (posix_memalign above). */
    return page ? (char *)p + s->page_offset : p;
}

void pg_sched_discard(struct pg_sched *s)
{
    for (int i = 0; i < s->nscratch; i++) {
        pool_give(s->scratch[i].p, s->scratch[i].n);
    }
    if (cache_push(s)) {
        return; /* kept with its steps and scratch-list arrays */
    }
    free(s->scratch);
    free(s->steps);
    free(s);
}

static void step_done(struct pg_req *r)
{
    struct pg_step *st = container_of(r, struct pg_step, req);

    st->s->inflight--;
    if (r->status != PGC_OK && st->s->status == PGC_OK) {
        st->s->status = r->status;
    }
}

static int issue_comm(struct pg_sched *s, struct pg_step *st)
{
    int rc;

    st->s = s;
    st->req.on_complete = step_done;
    s->inflight++;
    if (st->kind == PG_STEP_SEND) {
        rc = pg_isend_ctx(s->g, s->ctx, st->src, st->n, st->peer, s->tag, s->send_flags,
                          &st->req);
    } else {
        rc = pg_irecv_ctx(s->g, s->ctx, st->dst, st->n, st->peer, s->tag, &st->req);
    }
    if (rc != PGC_OK) {
        s->inflight--;
    }
    return rc;
}

static int run_local(struct pg_sched *s, struct pg_step *st)
{
    if (st->kind == PG_STEP_REDUCE) {
        return pg_op_apply(&s->op, st->src, st->dst, st->n);
    }
    if (st->kind == PG_STEP_COPY) {
        memmove(st->dst, st->src, st->n);
    }
    return PGC_OK;
}

/* Issues and runs steps until one must wait; true when the schedule is finished. */
static bool advance(struct pg_sched *s)
{
    while (s->next < s->n && s->status == PGC_OK) {
        struct pg_step *st = &s->steps[s->next];
        int rc;
        if (st->kind == PG_STEP_SEND || st->kind == PG_STEP_RECV) {
            /* A receive can complete inside issue_comm (with an error, e.g. truncation,
             * recorded by step_done): keep that error, do not overwrite it with OK. */
            rc = issue_comm(s, st);
        } else if (s->inflight > 0) {
            return false;
        } else if (st->kind == PG_STEP_POLL) {
            bool done;
            polling++;
            rc = st->poll(st->dst, &done);
            polling--;
            if (!done) {
                return false;
            }
        } else {
            rc = run_local(s, st);
        }
        if (rc != PGC_OK) {
            s->status = rc;
        }
        s->next++;
    }
    /* On an error, still wait for what was issued: its buffers belong to the schedule. */
    return s->inflight == 0;
}

static void finish(struct pg_sched *s)
{
    struct pg_req *req = s->req;
    int status = s->status;

    mps_list_remove(&s->link);
    pg_sched_discard(s);
    if (req) {
        pg_req_complete(req, status);
    }
}

bool pg_sched_sending(const struct pg_req *req)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.scheds)
    {
        const struct pg_sched *s = container_of(pos, struct pg_sched, link);
        for (int i = 0; s->req == req && i < s->next; i++) {
            const struct pg_step *st = &s->steps[i];
            /* A receive still posted can be failed; a matched one is being written into. */
            bool moving = st->kind == PG_STEP_SEND ||
                          (st->kind == PG_STEP_RECV && !pg_recv_posted(&st->req));
            if (moving && !pg_req_is_done(&st->req)) {
                return true;
            }
        }
    }
    return false;
}

void pg_sched_detach(struct pg_req *req)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.scheds)
    {
        struct pg_sched *s = container_of(pos, struct pg_sched, link);
        if (s->req == req) {
            s->req = NULL;
        }
    }
}

int pg_sched_start(struct pg_sched *s)
{
    pg_req_cb cb = s->req->on_complete;
    void *arg = s->req->cb_arg;

    if (s->status != PGC_OK) {
        int rc = s->status;
        pg_sched_discard(s);
        return rc;
    }
    pg_req_init(s->req, PG_REQ_COLL);
    s->req->on_complete = cb;
    s->req->cb_arg = arg;
    /* Every schedule takes its sequence number, one of poll steps only too (a shared-memory
     * or node-aware collective, which sends no message on g): the roll call
     * (pg_coll_roll.c) counts the group's collectives whatever their path. */
    s->tag = pg_coll_tag(s->g, s->sig);
    mps_list_push_back(&pg_w.scheds, &s->link);
    if (advance(s)) {
        finish(s);
    }
    return PGC_OK;
}

int pg_sched_launch(struct pg_sched *s)
{
    int rc;

    if (polling > 0) {
        return pg_sched_start(s); /* the world lock is held: a poll step starts s */
    }
    PG_LOCK();
    rc = pg_sched_start(s);
    PG_UNLOCK();
    return rc;
}

int pg_sched_run(struct pg_sched *s)
{
    struct pg_req *req = s->req;
    int rc = pg_sched_start(s);

    return rc == PGC_OK ? pg_wait_locked(req, -1) : rc;
}

int pg_sched_progress(void)
{
    struct mps_list *pos, *tmp;

    mps_list_for_each_safe(pos, tmp, &pg_w.scheds)
    {
        struct pg_sched *s = container_of(pos, struct pg_sched, link);
        if (advance(s)) {
            finish(s);
        }
    }
    return PGC_OK;
}

/* ---- what a schedule waits for (only when a wait for it timed out) ---- */

static struct pg_sched *sched_of(const struct pg_req *req)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.scheds)
    {
        struct pg_sched *s = container_of(pos, struct pg_sched, link);
        if (s->req == req) {
            return s;
        }
    }
    return NULL;
}

/* Whether step st was issued and has not completed: a transfer the schedule waits for. */
static bool pending(const struct pg_sched *s, const struct pg_step *st)
{
    return st - s->steps < s->next && (st->kind == PG_STEP_SEND || st->kind == PG_STEP_RECV) &&
           !pg_req_is_done(&st->req);
}

/* The peers of the pending transfers, in increasing order without repeats, into ranks
 * (g->size entries); how many. */
static int pending_peers(const struct pg_sched *s, int *ranks)
{
    int n = 0;

    for (int p = 0; p < s->g->size; p++) {
        for (int i = 0; i < s->next; i++) {
            if (s->steps[i].peer == p && pending(s, &s->steps[i])) {
                ranks[n++] = p;
                break;
            }
        }
    }
    return n;
}

/* "step 5 of 7 of recursive doubling: a receive of 8 B from rank 2 (and 1 more transfer)" */
static void describe_step(const struct pg_sched *s, const struct pg_step *st, int npending,
                          struct pg_awaited *a)
{
    bool recv = st->kind == PG_STEP_RECV;
    int off = snprintf(a->how, sizeof(a->how), "step %d of %d of %s: a %s of %zu B %s rank %d",
                       (int)(st - s->steps) + 1, s->n, s->algo ? s->algo : "its schedule",
                       recv ? "receive" : "send", st->n, recv ? "from" : "to", st->peer);

    if (npending > 1 && off > 0 && (size_t)off < sizeof(a->how)) {
        snprintf(a->how + off, sizeof(a->how) - (size_t)off, " (and %d more transfer%s)",
                 npending - 1, npending > 2 ? "s" : "");
    }
}

bool pg_sched_awaited(const struct pg_req *req, struct pg_awaited *a)
{
    struct pg_sched *s = sched_of(req);
    const struct pg_step *first = NULL;
    int npending = 0, nranks;
    int *ranks;

    if (!s) {
        return false;
    }
    snprintf(a->what, sizeof(a->what), "%s", pg_coll_kind_name(s->sig >> 8 & 15u));
    a->nranks = 0; /* a poll step's account may be prose */
    a->g = s->g;
    a->seq = (uint32_t)s->tag >> PG_COLL_SIG_BITS;
    for (int i = 0; i < s->next; i++) {
        if (pending(s, &s->steps[i])) {
            first = first ? first : &s->steps[i];
            npending++;
        }
    }
    if (!first) {
        /* Nothing in flight: a poll step holds the schedule (pg_coll_shm.c's forms). */
        const struct pg_step *st = s->next < s->n ? &s->steps[s->next] : NULL;
        return st && st->kind == PG_STEP_POLL && st->desc && st->desc(st->dst, a);
    }
    ranks = malloc(sizeof(*ranks) * (size_t)s->g->size);
    if (!ranks) {
        return false;
    }
    nranks = pending_peers(s, ranks);
    pg_awaited_ranks(a, s->g->ctx, ranks, nranks);
    free(ranks);
    describe_step(s, first, npending, a);
    return true;
}
