/*
 * shim_win_am.c - the active messages of RMA windows (see shim_win.h).
 *
 * A request is a header, nseg target byte ranges (offset from the target's base, length)
 * and the data, at most AM_MAX bytes in all: larger operations go as several requests,
 * cut at multiples of 16 bytes of the packed stream so that no accumulate element is
 * split (a pair type's at whole pairs: pair_unit). The target's window has one posted
 * receive of AM_MAX bytes on tag TAG_AM; it runs each request as it completes and re-posts
 * itself. A reply goes to the origin's receive on the request's reply tag (never TAG_AM): a
 * status, then any data.
 */
#include "config.h"

#include "mps_util.h"
#include "pgc_status.h"
#include "shim_comm.h"
#include "shim_win.h"

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_AM 0
#define AM_DATA (32 * 1024)
#define AM_SEGS 256

struct am_hdr {
    uint32_t kind;
    int32_t reply_tag; /* 0: no reply */
    int32_t op;
    int32_t elem_dt;
    uint32_t nseg;
    int32_t arg;
    uint64_t bytes; /* data bytes after the ranges */
};

struct am_seg {
    uint64_t off, len;
};

struct am_reply {
    int32_t status; /* MPI_SUCCESS or the MPI error class of a failure at the target */
    int32_t pad;
};

#define AM_MAX (sizeof(struct am_hdr) + AM_SEGS * sizeof(struct am_seg) + 2 * AM_DATA)

/* An origin's request in flight: the send and the receive of its reply. */
struct am_op {
    struct pg_req send, recv;
    int refs; /* the two requests not yet done (atomic) */
    struct shim_win *w;
    int target;
    int *counter;
    /* where the reply's data goes: stream offset skip of count elements of type at buf */
    void *result;
    size_t rcount, skip;
    struct shim_dtype *rtype;
    struct am_reply *reply; /* followed by the reply's data */
    size_t msg_len;
    unsigned char msg[]; /* header, ranges, data */
};

/* A target's reply in flight. */
struct am_out {
    struct pg_req req;
    struct am_reply r;
    unsigned char data[];
};

/* ---- the target ---- */

static void out_done(struct pg_req *req)
{
    free(container_of(req, struct am_out, req));
}

/* Sends a reply of status and len bytes (out's data, already filled) to origin. */
static void reply_send(struct shim_win *w, int origin, int tag, struct am_out *out, int status,
                       size_t len)
{
    out->r.status = status;
    out->r.pad = 0;
    pg_req_init(&out->req, PG_REQ_SEND);
    out->req.on_complete = out_done;
    if (pg_isend(w->g, &out->r, sizeof(out->r) + len, origin, tag, false, &out->req) != PGC_OK) {
        /* The origin is gone or the group broken: its wait reports the timeout. */
        free(out);
    }
}

static void reply_status(struct shim_win *w, int origin, int tag, int status)
{
    struct am_out *out;

    if (tag == 0) {
        return;
    }
    out = malloc(sizeof(*out));
    if (out) {
        reply_send(w, origin, tag, out, status, 0);
    }
}

/* Whether every range lies inside my window: its bytes, or for a dynamic window (where an
 * offset is an address) the regions attached now. */
static bool segs_fit(struct shim_win *w, const struct am_seg *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (w->flavor == MPI_WIN_FLAVOR_DYNAMIC) {
            if (!shim_win_dyn_fits(w, s[i].off, s[i].len)) {
                return false;
            }
        } else if (s[i].off > (uint64_t)w->my_size ||
                   s[i].len > (uint64_t)w->my_size - s[i].off) {
            return false;
        }
    }
    return true;
}

/* The reduction of apply on elements that are not aligned for their type (a window element
 * at an odd displacement, or a 16-byte one in the request after its 8-byte aligned ranges):
 * through aligned copies, since the kernels load them as their C type. */
static void apply_staged(const struct pg_op_spec *spec, const unsigned char *in,
                         unsigned char *inout, size_t len)
{
    union {
        unsigned char b[1024];
        long double align;
    } a, b;
    size_t step = sizeof(a.b) / spec->elem_size * spec->elem_size;

    for (size_t done = 0; done < len; done += step) {
        size_t n = len - done < step ? len - done : step;

        memcpy(a.b, in + done, n);
        memcpy(b.b, inout + done, n);
        pg_op_apply(spec, a.b, b.b, n / spec->elem_size);
        memcpy(inout + done, b.b, n);
    }
}

/* inout = in op inout for len bytes of elements elem_dt. */
static void apply(int op, int elem_dt, const void *in, void *inout, size_t len)
{
    struct pg_op_spec spec;
    size_t align;

    if (op == SHIM_AM_REPLACE) {
        memcpy(inout, in, len);
        return;
    }
    if (op == SHIM_AM_NO_OP) {
        return;
    }
    spec = (struct pg_op_spec){.dt = (enum pg_dtype)elem_dt,
                               .op = (enum pg_op)op,
                               .elem_size = pg_dtype_size((enum pg_dtype)elem_dt),
                               .commutative = true};
    align = spec.elem_size < 16 ? spec.elem_size : 16;
    if ((uintptr_t)in % align != 0 || (uintptr_t)inout % align != 0) {
        apply_staged(&spec, in, inout, len);
        return;
    }
    pg_op_apply(&spec, in, inout, len / spec.elem_size);
}

/* Copies the request's ranges of my window into buf (gather) or buf into them. */
static void move_segs(uintptr_t base, const struct am_seg *s, uint32_t n, unsigned char *buf,
                      bool gather)
{
    for (uint32_t i = 0; i < n; i++) {
        unsigned char *t = (unsigned char *)(base + (uintptr_t)s[i].off);

        if (gather) {
            memcpy(buf, t, s[i].len);
        } else {
            memcpy(t, buf, s[i].len);
        }
        buf += s[i].len;
    }
}

/* MAXLOC and MINLOC on the pair types: the ranges hold whole pairs (the origin cuts requests
 * at pairs, pair_unit) but a pair may span two of them (MPI_SHORT_INT: the short, then the
 * int after its padding), so the ranges are gathered into the packed stream, reduced with
 * the request's data (packed too) and scattered back. old gets what they held. false when no
 * memory. */
static bool run_pairs(uintptr_t base, const struct am_hdr *h, const struct am_seg *s,
                      const unsigned char *data, size_t total, unsigned char *old)
{
    enum pg_dtype dt = (enum pg_dtype)h->elem_dt;
    unsigned char *cur = malloc(total ? total : 1);

    if (!cur) {
        return false;
    }
    move_segs(base, s, h->nseg, cur, true);
    if (old) {
        memcpy(old, cur, total);
    }
    (void)pg_reduce_loc_packed(data, cur, total / pg_pair_packed_size(dt), dt, (enum pg_op)h->op);
    move_segs(base, s, h->nseg, cur, false);
    free(cur);
    return true;
}

static bool pair_loc(int kind, int op)
{
    return (kind == SHIM_AM_ACC || kind == SHIM_AM_GACC) &&
           (op == PG_OP_MAXLOC || op == PG_OP_MINLOC);
}

/* Put, accumulate, get, get_accumulate and compare_and_swap at the target: returns the
 * reply (its data filled) or NULL when no memory. */
static struct am_out *run_data(struct shim_win *w, const struct am_hdr *h, const struct am_seg *s,
                               const unsigned char *data)
{
    bool fetch = h->kind == SHIM_AM_GET || h->kind == SHIM_AM_GACC || h->kind == SHIM_AM_CAS;
    size_t total = 0, pos = 0;
    struct am_out *out;
    uintptr_t base = (uintptr_t)w->base; /* MPI_BOTTOM for a dynamic window */

    for (uint32_t i = 0; i < h->nseg; i++) {
        total += s[i].len;
    }
    out = malloc(sizeof(*out) + (fetch ? total : 0));
    if (!out) {
        return NULL;
    }
    if (pair_loc((int)h->kind, h->op)) {
        if (!run_pairs(base, h, s, data, total, fetch ? out->data : NULL)) {
            free(out);
            return NULL;
        }
        return out;
    }
    for (uint32_t i = 0; i < h->nseg; i++, pos += s[i - 1].len) {
        unsigned char *t = (unsigned char *)(base + (uintptr_t)s[i].off);

        if (fetch) {
            memcpy(out->data + pos, t, s[i].len);
        }
        if (h->kind == SHIM_AM_PUT) {
            memcpy(t, data + pos, s[i].len);
        } else if (h->kind == SHIM_AM_ACC || h->kind == SHIM_AM_GACC) {
            apply(h->op, h->elem_dt, data + pos, t, s[i].len);
        } else if (h->kind == SHIM_AM_CAS && memcmp(t, data, s[i].len) == 0) {
            memcpy(t, data + s[i].len, s[i].len);
        }
    }
    return out;
}

static void serve_data(struct shim_win *w, int origin, const struct am_hdr *h)
{
    const struct am_seg *s = (const struct am_seg *)(h + 1);
    const unsigned char *data = (const unsigned char *)(s + h->nseg);
    bool fetch = h->kind == SHIM_AM_GET || h->kind == SHIM_AM_GACC || h->kind == SHIM_AM_CAS;
    struct am_out *out;
    size_t total = 0;

    if (h->nseg > AM_SEGS || !segs_fit(w, s, h->nseg)) {
        reply_status(w, origin, h->reply_tag, MPI_ERR_RMA_RANGE);
        return;
    }
    out = run_data(w, h, s, data);
    if (!out) {
        reply_status(w, origin, h->reply_tag, MPI_ERR_NO_MEM);
        return;
    }
    for (uint32_t i = 0; fetch && i < h->nseg; i++) {
        total += s[i].len;
    }
    reply_send(w, origin, h->reply_tag, out, MPI_SUCCESS, total);
}

static bool lock_grantable(const struct shim_win *w, int type)
{
    if (w->excl_holder >= 0) {
        return false;
    }
    return type == MPI_LOCK_SHARED || w->shared_holders == 0;
}

static void lock_take(struct shim_win *w, int origin, int type, int tag)
{
    if (type == MPI_LOCK_EXCLUSIVE) {
        w->excl_holder = origin;
    } else {
        w->shared_holders++;
    }
    reply_status(w, origin, tag, MPI_SUCCESS);
}

/* A lock request (arg: its type, and SHIM_LOCK_AHEAD): granted now when compatible and
 * nobody waits before it (first come, first served, so a writer is not starved by a stream
 * of readers) or it may go ahead of the waiting, else queued. */
static void serve_lock(struct shim_win *w, int origin, int arg, int tag)
{
    struct shim_win_waiter *q;
    int type = SHIM_LOCK_TYPE(arg);
    bool ahead = (arg & SHIM_LOCK_AHEAD) != 0;

    if ((w->nwaiters == 0 || ahead) && lock_grantable(w, type)) {
        lock_take(w, origin, type, tag);
        return;
    }
    if (w->nwaiters == w->cap_waiters) {
        int cap = w->cap_waiters ? 2 * w->cap_waiters : 8;

        q = realloc(w->waiters, sizeof(*q) * (size_t)cap);
        if (!q) {
            reply_status(w, origin, tag, MPI_ERR_NO_MEM);
            return;
        }
        w->waiters = q;
        w->cap_waiters = cap;
    }
    w->waiters[w->nwaiters++] = (struct shim_win_waiter){origin, tag, type, ahead};
}

/* Grants the queue's requests in order while they fit, then any that may go ahead of the
 * first one that does not. */
static void grant_waiters(struct shim_win *w)
{
    bool in_order = true;
    int kept = 0;

    for (int i = 0; i < w->nwaiters; i++) {
        struct shim_win_waiter q = w->waiters[i];

        if ((in_order || q.ahead) && lock_grantable(w, q.type)) {
            lock_take(w, q.origin, q.type, q.reply_tag);
            continue;
        }
        in_order = false;
        w->waiters[kept++] = q;
    }
    w->nwaiters = kept;
}

static void serve_unlock(struct shim_win *w, int origin, int tag)
{
    int st = MPI_SUCCESS;

    if (w->excl_holder == origin) {
        w->excl_holder = -1;
    } else if (w->shared_holders > 0) {
        w->shared_holders--;
    } else {
        st = MPI_ERR_RMA_SYNC;
    }
    reply_status(w, origin, tag, st);
    grant_waiters(w);
}

static void serve(struct shim_win *w, int origin, const struct am_hdr *h)
{
    switch (h->kind) {
    case SHIM_AM_LOCK:
        serve_lock(w, origin, h->arg, h->reply_tag);
        break;
    case SHIM_AM_UNLOCK:
        serve_unlock(w, origin, h->reply_tag);
        break;
    case SHIM_AM_POST:
        __atomic_fetch_add(&w->posts_seen[origin], 1, __ATOMIC_RELEASE);
        break;
    case SHIM_AM_COMPLETE:
        __atomic_fetch_add(&w->completes_seen, 1, __ATOMIC_RELEASE);
        break;
    default:
        serve_data(w, origin, h);
        break;
    }
}

/* Windows whose posted receive holds a request to serve (through ready_link). Touched
 * only in progress, under the world lock when threads are on. */
static struct mps_list ready_wins = {&ready_wins, &ready_wins};

/* The posted receive completed. It runs inside a fabric drain, where a send that waits for
 * ring space would re-enter the drain: so it only queues the window, and serve_ready (the
 * progress hook) serves the request and re-posts the receive. */
static void am_arrived(struct pg_req *req)
{
    struct shim_win *w = req->cb_arg;

    if (!req->cancelled && !w->am_queued) {
        w->am_queued = true;
        mps_list_push_back(&ready_wins, &w->ready_link);
    }
}

/* Serves every queued request; a re-post that matches a queued message at once queues
 * the window again, and the loop takes it. Not re-entered (a send's own waits progress
 * the fabric only, but a nested call would find the list in use). Returns the requests
 * from other ranks it served: each restarts the timeout of the wait that progresses here
 * (pg.h, struct pg_wait_clock), so a target that serves a stream of them in a barrier
 * does not give up on its live origin. */
static int serve_ready(void)
{
    static int depth;
    int served = 0;

    if (depth > 0 || mps_list_empty(&ready_wins)) {
        return 0;
    }
    depth++;
    while (!mps_list_empty(&ready_wins)) {
        struct shim_win *w = container_of(ready_wins.next, struct shim_win, ready_link);
        struct pg_req *req = &w->am_req;

        mps_list_remove(&w->ready_link);
        w->am_queued = false;
        if (__atomic_load_n(&w->am_closing, __ATOMIC_ACQUIRE)) {
            continue; /* a request after all were answered: a program's error, dropped */
        }
        if (req->status == PGC_OK && req->len >= sizeof(struct am_hdr)) {
            serve(w, req->source, (const struct am_hdr *)w->am_buf);
            served += req->source != w->rank;
        }
        pg_irecv(w->g, w->am_buf, AM_MAX, PG_ANY_SOURCE, TAG_AM, req);
    }
    depth--;
    return served;
}

int shim_win_am_start(struct shim_win *w)
{
    w->am_buf = malloc(AM_MAX);
    if (!w->am_buf) {
        return PGC_ERR_NOMEM;
    }
    pg_progress_hook(serve_ready);
    mps_list_init(&w->ready_link);
    pg_req_init(&w->am_req, PG_REQ_RECV);
    w->am_req.on_complete = am_arrived;
    w->am_req.cb_arg = w;
    return pg_irecv(w->g, w->am_buf, AM_MAX, PG_ANY_SOURCE, TAG_AM, &w->am_req);
}

void shim_win_am_stop(struct shim_win *w)
{
    if (!w->am_buf) {
        return;
    }
    /* Once closing, the hook no longer serves nor re-posts; a round of progress (under the
     * world lock, after any other thread's) takes the window off the list if a request
     * completed the receive meanwhile. */
    __atomic_store_n(&w->am_closing, true, __ATOMIC_RELEASE);
    if (!pg_req_is_done(&w->am_req)) {
        pg_cancel_recv(&w->am_req);
    }
    pg_progress();
    free(w->am_buf);
    w->am_buf = NULL;
}

/* ---- the origin ---- */

static void op_unref(struct am_op *o)
{
    if (__atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        if (o->rtype) {
            shim_dtype_release(o->rtype);
        }
        free(o);
    }
}

static void op_sent(struct pg_req *req)
{
    op_unref(container_of(req, struct am_op, send));
}

static void op_replied(struct pg_req *req)
{
    struct am_op *o = container_of(req, struct am_op, recv);
    struct shim_win *w = o->w;
    int st = req->cancelled          ? MPI_ERR_OTHER
             : req->status == PGC_OK ? o->reply->status
                                     : shim_errclass(req->status);

    if (st == MPI_SUCCESS && o->result && req->len > sizeof(struct am_reply)) {
        shim_dtype_unpack_partial(o->reply + 1, o->rcount, o->rtype, o->skip, o->result,
                                  req->len - sizeof(struct am_reply));
    }
    if (st != MPI_SUCCESS) {
        int64_t none = 0, err = (int64_t)o->target << 32 | (uint32_t)st;

        __atomic_compare_exchange_n(&w->remote_err, &none, err, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    }
    if (o->counter) {
        __atomic_sub_fetch(o->counter, 1, __ATOMIC_ACQ_REL);
    }
    __atomic_sub_fetch(&w->pending, 1, __ATOMIC_ACQ_REL);
    op_unref(o);
}

static int next_tag(struct shim_win *w)
{
    uint32_t t = __atomic_add_fetch(&w->next_tag, 1, __ATOMIC_RELAXED);

    return (int)(t % (uint32_t)PG_TAG_UB) + 1;
}

/* A request of msg_len bytes (header at o->msg, to fill) with room for reply_data bytes
 * of reply data. */
static struct am_op *op_new(struct shim_win *w, size_t msg_len, size_t reply_data)
{
    size_t reply_off = (sizeof(struct am_op) + msg_len + 15) & ~(size_t)15;
    struct am_op *o = malloc(reply_off + sizeof(struct am_reply) + reply_data);

    if (!o) {
        return NULL;
    }
    memset(o, 0, sizeof(*o));
    o->w = w;
    o->msg_len = msg_len;
    o->reply = (struct am_reply *)((unsigned char *)o + reply_off);
    memset(o->msg, 0, sizeof(struct am_hdr));
    return o;
}

/* Posts the reply's receive and sends the request; frees o on an error. */
static int op_send(struct shim_win *w, struct am_op *o, int target, size_t reply_cap)
{
    struct am_hdr *h = (struct am_hdr *)o->msg;
    int rc;

    h->reply_tag = next_tag(w);
    o->target = target;
    o->refs = 2;
    pg_req_init(&o->recv, PG_REQ_RECV);
    o->recv.on_complete = op_replied;
    pg_req_init(&o->send, PG_REQ_SEND);
    o->send.on_complete = op_sent;
    __atomic_add_fetch(&w->pending, 1, __ATOMIC_ACQ_REL);
    if (o->counter) {
        __atomic_add_fetch(o->counter, 1, __ATOMIC_ACQ_REL);
    }
    rc = pg_irecv(w->g, o->reply, sizeof(struct am_reply) + reply_cap, target, h->reply_tag,
                  &o->recv);
    if (rc != PGC_OK) {
        __atomic_sub_fetch(&w->pending, 1, __ATOMIC_ACQ_REL);
        if (o->counter) {
            __atomic_sub_fetch(o->counter, 1, __ATOMIC_ACQ_REL);
        }
        if (o->rtype) {
            shim_dtype_release(o->rtype);
        }
        free(o);
        return rc;
    }
    rc = pg_isend(w->g, o->msg, o->msg_len, target, TAG_AM, false, &o->send);
    if (rc != PGC_OK) {
        /* The reply cannot come: end its receive (its callback counts it done). */
        pg_cancel_recv(&o->recv);
        op_unref(o);
    }
    return rc;
}

/* Walks the target ranges of count elements of t at disp: the next piece of at most max
 * bytes. */
struct seg_walk {
    MPI_Aint disp;
    struct shim_dtype_iter it;
};

static void walk_init(struct seg_walk *s, MPI_Aint disp, const struct shim_dtype *t, size_t count)
{
    s->disp = disp;
    shim_dtype_iter_init(&s->it, t, count);
}

static bool walk_next(struct seg_walk *s, size_t max, struct am_seg *out)
{
    MPI_Aint off;
    size_t len;

    if (!shim_dtype_iter_next(&s->it, max, &off, &len)) {
        return false;
    }
    out->off = (uint64_t)(s->disp + off);
    out->len = len;
    return true;
}

/* Where a request may end: after whole elements of unit packed bytes (pair_unit). */
struct seg_mark {
    struct seg_walk walk;
    uint32_t nseg;
    uint64_t last_len;
    size_t bytes;
};

static void mark(struct seg_mark *m, const struct seg_walk *s, const struct am_seg *segs,
                 uint32_t nseg, size_t bytes)
{
    *m = (struct seg_mark){
        .walk = *s, .nseg = nseg, .last_len = nseg ? segs[nseg - 1].len : 0, .bytes = bytes};
}

/* Fills the ranges of the next request: at most AM_DATA bytes (cut at a multiple of unit)
 * and AM_SEGS ranges, adjacent pieces merged. When the ranges run out inside an element of
 * unit bytes (a pair split by its padding), the request ends before that element. Returns
 * the bytes. */
static size_t fill_segs(struct seg_walk *s, struct am_seg *segs, uint32_t *nseg, size_t unit)
{
    size_t cap = AM_DATA / unit * unit, bytes = 0;
    struct am_seg piece;
    struct seg_mark whole;

    *nseg = 0;
    mark(&whole, s, segs, 0, 0);
    while (bytes < cap) {
        struct seg_walk save = *s;

        if (!walk_next(s, cap - bytes, &piece)) {
            break;
        }
        if (*nseg > 0 && segs[*nseg - 1].off + segs[*nseg - 1].len == piece.off) {
            segs[*nseg - 1].len += piece.len;
        } else if (*nseg == AM_SEGS) {
            *s = save;
            break;
        } else {
            segs[(*nseg)++] = piece;
        }
        bytes += piece.len;
        if (unit > 1 && bytes % unit == 0) {
            mark(&whole, s, segs, *nseg, bytes);
        }
    }
    if (bytes % unit != 0) {
        *s = whole.walk;
        *nseg = whole.nseg;
        if (whole.nseg > 0) {
            segs[whole.nseg - 1].len = whole.last_len;
        }
        bytes = whole.bytes;
    }
    return bytes;
}

/* The packed bytes of the elements a request must not split: a pair type's pair (6, 8, 12
 * or 20 bytes, which the 16-byte cuts of AM_DATA would split), so that each request's
 * accumulate is atomic per pair and MAXLOC/MINLOC find whole pairs; 1 for every other type
 * (its pieces end at elements, and AM_DATA is a multiple of every other element size). */
static size_t pair_unit(const struct shim_rma *op)
{
    size_t ps = pg_pair_packed_size(op->ttype->base);

    return ps ? ps : 1;
}

static bool kind_fetches(enum shim_am_kind k)
{
    return k == SHIM_AM_GET || k == SHIM_AM_GACC || k == SHIM_AM_CAS;
}

/* One request of op: the ranges in segs, bytes of data from stream offset skip. */
static int issue_one(struct shim_win *w, const struct shim_rma *op, const struct am_seg *segs,
                     uint32_t nseg, size_t skip, size_t bytes)
{
    bool sends = op->kind != SHIM_AM_GET;
    size_t data = sends ? (op->kind == SHIM_AM_CAS ? 2 * bytes : bytes) : 0;
    size_t msg_len = sizeof(struct am_hdr) + nseg * sizeof(struct am_seg) + data;
    size_t reply = kind_fetches(op->kind) ? bytes : 0;
    struct am_op *o = op_new(w, msg_len, reply);
    struct am_hdr *h;
    unsigned char *d;

    if (!o) {
        return PGC_ERR_NOMEM;
    }
    h = (struct am_hdr *)o->msg;
    *h = (struct am_hdr){
        .kind = op->kind, .op = op->op, .elem_dt = op->elem_dt, .nseg = nseg, .bytes = data};
    memcpy(h + 1, segs, nseg * sizeof(struct am_seg));
    d = o->msg + sizeof(*h) + nseg * sizeof(struct am_seg);
    if (op->kind == SHIM_AM_CAS) {
        memcpy(d, op->compare, bytes);
        memcpy(d + bytes, op->origin, bytes);
    } else if (sends) {
        shim_dtype_pack_partial(op->origin, op->ocount, op->otype, skip, d, bytes);
    }
    if (reply) {
        o->result = op->result;
        o->rcount = op->rcount;
        o->rtype = op->rtype;
        o->skip = skip;
        shim_dtype_retain(o->rtype);
    }
    o->counter = op->counter;
    return op_send(w, o, op->target, reply);
}

int shim_win_issue(struct shim_win *w, const struct shim_rma *op)
{
    struct seg_walk s;
    struct am_seg *segs = malloc(AM_SEGS * sizeof(*segs));
    size_t skip = 0, bytes;
    uint32_t nseg;
    int rc = segs ? PGC_OK : PGC_ERR_NOMEM;

    walk_init(&s, op->disp, op->ttype, op->tcount);
    while (rc == PGC_OK && (bytes = fill_segs(&s, segs, &nseg, pair_unit(op))) > 0) {
        rc = issue_one(w, op, segs, nseg, skip, bytes);
        skip += bytes;
    }
    free(segs);
    return rc;
}

int shim_win_control(struct shim_win *w, enum shim_am_kind kind, int target, int arg, bool reply)
{
    struct am_op *o = op_new(w, sizeof(struct am_hdr), 0);
    struct am_hdr *h;
    int rc;

    if (!o) {
        return PGC_ERR_NOMEM;
    }
    h = (struct am_hdr *)o->msg;
    *h = (struct am_hdr){.kind = kind, .arg = arg};
    if (reply) {
        return op_send(w, o, target, 0);
    }
    /* No reply (post, complete notices): the send alone holds o. */
    o->refs = 1;
    pg_req_init(&o->send, PG_REQ_SEND);
    o->send.on_complete = op_sent;
    rc = pg_isend(w->g, o->msg, o->msg_len, target, TAG_AM, false, &o->send);
    if (rc != PGC_OK) {
        free(o);
    }
    return rc;
}

/* ---- waiting ---- */

/* One step of a wait: progress, and after a while give the core away (ranks may
 * outnumber cores); the timeout as pg_wait's. */
int shim_win_wait_step(struct pg_wait_clock *clock, int *spins)
{
    int rc = pg_progress();

    if (rc != PGC_OK) {
        return rc;
    }
    if (++*spins > 256) {
        double now = mps_now();

        if (pg_wait_clock_expired(clock, now, pg_timeout())) {
            return PGC_ERR_TIMEOUT;
        }
        if (now - clock->start > 0.01) {
            struct timespec ts = {0, 50000};

            nanosleep(&ts, NULL);
        } else {
            sched_yield();
        }
    }
    return PGC_OK;
}

int shim_win_wait_count(struct shim_win *w, const char *fn, int *counter, int want,
                        const char *what)
{
    struct pg_wait_clock clock;
    int spins = 0, rc = PGC_OK;

    pg_wait_clock_start(&clock, mps_now());
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) < want && rc == PGC_OK) {
        rc = shim_win_wait_step(&clock, &spins);
    }
    if (rc == PGC_ERR_TIMEOUT) {
        return shim_error(w->comm, fn, MPI_ERR_OTHER,
                          "%s did not come within %.0f s (a peer may have died, or does not "
                          "make the matching call)",
                          what, pg_timeout());
    }
    if (rc != PGC_OK) {
        return shim_error_pg(w->comm, fn, rc);
    }
    return MPI_SUCCESS;
}

static int settle(struct shim_win *w, const char *fn, int *counter);

/* A target's refusal, raised on the window with its cause. */
static int remote_error(struct shim_win *w, const char *fn, int target, int errclass)
{
    const char *cause = "it failed there";

    if (errclass == MPI_ERR_RMA_RANGE) {
        cause = w->flavor == MPI_WIN_FLAVOR_DYNAMIC
                    ? "its target range is not in a region attached there (MPI_Win_attach)"
                    : "its target range lies outside the window there";
    } else if (errclass == MPI_ERR_NO_MEM) {
        cause = "the target had no memory for it";
    }
    return shim_error(w->comm, fn, errclass,
                      "target rank %d refused an operation of this epoch: %s (error class %d)",
                      target, cause, errclass);
}

int shim_win_drain(struct shim_win *w, const char *fn)
{
    return shim_win_drain_counter(w, fn, &w->pending);
}

int shim_win_drain_counter(struct shim_win *w, const char *fn, int *counter)
{
    int rc = settle(w, fn, counter);

    return rc == MPI_SUCCESS ? shim_win_refusal(w, fn) : rc;
}

int shim_win_settle(struct shim_win *w, const char *fn)
{
    return settle(w, fn, &w->pending);
}

int shim_win_settle_counter(struct shim_win *w, const char *fn, int *counter)
{
    return settle(w, fn, counter);
}

int shim_win_refusal(struct shim_win *w, const char *fn)
{
    int64_t err;

    /* A plain load first: the exchange is a locked instruction on every unlock and flush. */
    if (__atomic_load_n(&w->remote_err, __ATOMIC_ACQUIRE) == 0) {
        return MPI_SUCCESS;
    }
    err = __atomic_exchange_n(&w->remote_err, 0, __ATOMIC_ACQ_REL);

    return err != 0 ? remote_error(w, fn, (int)(err >> 32), (int)(uint32_t)err) : MPI_SUCCESS;
}

static int settle(struct shim_win *w, const char *fn, int *counter)
{
    struct pg_wait_clock clock;
    int spins = 0, rc = PGC_OK;

    if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) <= 0) {
        return MPI_SUCCESS; /* nothing in flight (always, on the direct path) */
    }
    pg_wait_clock_start(&clock, mps_now());
    while (__atomic_load_n(counter, __ATOMIC_ACQUIRE) > 0 && rc == PGC_OK) {
        rc = shim_win_wait_step(&clock, &spins);
    }
    if (rc == PGC_ERR_TIMEOUT) {
        return shim_error(w->comm, fn, MPI_ERR_OTHER,
                          "%d one-sided operations were not answered by their targets within "
                          "%.0f s (a target may have died)",
                          __atomic_load_n(counter, __ATOMIC_ACQUIRE), pg_timeout());
    }
    if (rc != PGC_OK) {
        return shim_error_pg(w->comm, fn, rc);
    }
    return MPI_SUCCESS;
}

void shim_win_walk(const struct shim_rma *op,
                   void (*fn)(void *arg, uint64_t off, uint64_t len, size_t skip), void *arg)
{
    struct seg_walk s;
    struct am_seg piece;
    size_t skip = 0;

    walk_init(&s, op->disp, op->ttype, op->tcount);
    while (walk_next(&s, SIZE_MAX, &piece)) {
        fn(arg, piece.off, piece.len, skip);
        skip += piece.len;
    }
}
