/*
 * pg_p2p.c - point-to-point: envelopes, matching on (context, source, tag), the eager
 * and rendezvous protocols, self-sends, probes.
 *
 * Eager: a message of at most MPISHIM_EAGER_MAX bytes travels inside one active message
 * (header + payload); the receiver copies it into the posted buffer, or keeps a copy in
 * the unexpected queue until a receive matches (or, right after a message completed a
 * posted receive, leaves it in the intra-node ring for the next receive: see
 * pg_am_handler). Rendezvous: a larger message sends only
 * its header (RTS) as an active message and its data as a tagged transfer with a tag
 * unique to the sender; the receiver posts the tagged receive into the user buffer once
 * the RTS matches, so the provider moves the data once (CMA for shm).
 * Order: active messages from one peer arrive in send order (FI_ORDER_SAS), and matching
 * happens in arrival order, so MPI's non-overtaking rule holds for both protocols.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_copy.h"
#include "mps_log.h"
#include "pg_device.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pg_req_init(struct pg_req *req, enum pg_req_kind kind)
{
    /* freq is left alone: it is the provider's until a rendezvous sets it up, and clearing
     * its 80 bytes on every small message costs more than the message's own bookkeeping. */
    mps_zero(req, offsetof(struct pg_req, freq));
    req->kind = kind;
    req->source = PG_ANY_SOURCE;
    req->tag = PG_ANY_TAG;
    mps_list_init(&req->link);
}

/* Re-initialises a request for a new operation, keeping the completion callback its
 * owner set (a schedule step sets it before issuing). */
static void req_reset(struct pg_req *req, enum pg_req_kind kind)
{
    pg_req_cb cb = req->on_complete;
    void *arg = req->cb_arg;

    pg_req_init(req, kind);
    req->on_complete = cb;
    req->cb_arg = arg;
}

void pg_req_complete(struct pg_req *req, int status)
{
    pg_req_cb cb = req->on_complete;

    req->status = status;
    pg_flight_req_end(req, status);
    /* Pairs with pg_req_is_done. From here a waiter outside the lock may free req (a pgc
     * work, an MPI request), so nothing below reads it; a request with a callback belongs
     * to code that runs under the lock (a schedule step, a device op), where req stays
     * valid for the callback. */
    __atomic_store_n(&req->done, 1, __ATOMIC_RELEASE);
    if (cb) {
        cb(req);
    }
}

static bool envelope_matches(const struct pg_req *r, uint64_t ctx, int src, int tag)
{
    return r->ctx == ctx && (r->match_src == PG_ANY_SOURCE || r->match_src == src) &&
           (r->match_tag == PG_ANY_TAG || r->match_tag == tag);
}

/* ---- the unexpected queues (pg_internal.h: one per sending world rank) ---- */

static void unexp_push(struct pg_msg *m)
{
    m->stamp = ++pg_w.unexp_stamp;
    pg_w.unexp_count++;
    pg_w.unexp_max = MPS_MAX(pg_w.unexp_max, pg_w.unexp_count);
    mps_list_push_back(&pg_w.unexpected[m->src_world], &m->link);
}

static void unexp_remove(struct pg_msg *m)
{
    mps_list_remove(&m->link);
    pg_w.unexp_count--;
}

static struct pg_msg *first_match(const struct mps_list *q, const struct pg_req *key)
{
    struct mps_list *pos;

    mps_list_for_each(pos, q)
    {
        struct pg_msg *m = container_of(pos, struct pg_msg, link);
        if (envelope_matches(key, m->ctx, m->src, m->tag)) {
            return m;
        }
    }
    return NULL;
}

/* The oldest unexpected message that key (a receive or probe on g) matches, or NULL. */
static struct pg_msg *unexp_find(const struct pg_group *g, const struct pg_req *key)
{
    struct pg_msg *best = NULL;

    if (key->match_src != PG_ANY_SOURCE) {
        return (unsigned)key->match_src < (unsigned)g->size
                   ? first_match(&pg_w.unexpected[g->ranks[key->match_src]], key)
                   : NULL;
    }
    for (int r = 0; r < g->size && pg_w.unexp_count; r++) {
        struct pg_msg *m = first_match(&pg_w.unexpected[g->ranks[r]], key);
        if (m && (!best || m->stamp < best->stamp)) {
            best = m;
        }
    }
    return best;
}

static struct pg_req *find_posted(uint64_t ctx, int src, int tag)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.posted)
    {
        struct pg_req *r = container_of(pos, struct pg_req, link);
        if (envelope_matches(r, ctx, src, tag)) {
            mps_list_remove(&r->link);
            return r;
        }
    }
    return NULL;
}

/* ---- collectives that do not match (pg_coll_sig.c) ----
 * A collective message carries its sequence number and signature in its tag. One that
 * finds no receive with its tag but one of the same sequence number from the same rank
 * (or a receive that finds such a message waiting) means the two ranks called different
 * collectives: the receive fails at once, naming both, instead of waiting out the timeout.
 * Only unmatched collective messages pay for the look. */

/* ---- collective aborts ----
 * The rank that finds a clash tells every member of the group (an abort notice: an eager
 * message of its collective's sequence number with the signature PG_COLL_ABORT), and
 * every rank fails its receives of that collective, posted or to come, naming both sides.
 * Without it, only the ranks that read the other collective's messages would fail; the
 * rest would wait for them until the timeout. A notice is sent from progress once the
 * handlers are done (as acknowledgements are), or at once outside them. A rank that records
 * an abort also takes the messages of that collective that wait here, or arrive later, into
 * scratch and drops them (discard): a rendezvous sender's transfer then ends instead of
 * waiting for a receive that will never be posted. Waits that post no receive (shared
 * memory, a schedule between steps) read the abort records themselves, and the roll call
 * (pg_coll_roll.c) finds the mismatches that no message shows. */

static inline uint32_t tag_seq(int tag)
{
    return (uint32_t)tag >> PG_COLL_SIG_BITS;
}

/* Fails every posted receive of collective seq on ctx. */
static void fail_posted_at(uint64_t ctx, uint32_t seq, const struct pg_abort_note *n)
{
    struct mps_list *pos, *tmp;

    mps_list_for_each_safe(pos, tmp, &pg_w.posted)
    {
        struct pg_req *r = container_of(pos, struct pg_req, link);
        if (r->ctx == ctx && tag_seq(r->match_tag) == seq) {
            mps_list_remove(&r->link);
            pg_req_complete(r, pg_coll_aborted(n));
        }
    }
}

int pg_p2p_flush_deferred(void);
static struct pg_ack *ack_alloc(void);
static void p2p_stuck(const char *what, int peer_world);
static void deliver(struct pg_req *r, const struct pg_msg *m, const void *eager_data);
static void msg_free_locked(struct pg_msg *m);
static void unexp_remove(struct pg_msg *m);

/* A receive that takes a message of an aborted collective into scratch of its own and frees
 * itself when done: the data goes nowhere, but its sender's transfer ends. */
struct discard {
    struct pg_req r; /* ends with the fabric request, so the buffer follows it */
    unsigned char data[];
};

static void discard_done(struct pg_req *r)
{
    free(container_of(r, struct discard, r));
}

/* Whether it found the memory. The whole message is taken rather than truncated to no
 * bytes: a receive of 0 bytes would leave a rendezvous of tcp;ofi_rxm waiting for good (it
 * issues no read, so it never sends the read's completion that ends the send). */
static bool discard(const struct pg_msg *m, const void *eager_data)
{
    struct discard *d = malloc(sizeof(*d) + m->len);

    if (!d) {
        MPS_ERR("no memory to take a %zu-byte message from rank %d into scratch (an aborted "
                "collective's, or a withdrawn send's): its sender waits for it", m->len, m->src);
        return false;
    }
    pg_req_init(&d->r, PG_REQ_RECV);
    d->r.on_complete = discard_done;
    d->r.buf = d->data;
    d->r.cap = m->len;
    deliver(&d->r, m, eager_data);
    return true;
}

/* Drops the queued messages of collective seq on ctx (after its abort). */
static void discard_queued(uint64_t ctx, uint32_t seq)
{
    struct mps_list *pos, *tmp;

    for (int w = 0; w < pg_w.size && pg_w.unexp_count; w++) {
        mps_list_for_each_safe(pos, tmp, &pg_w.unexpected[w])
        {
            struct pg_msg *m = container_of(pos, struct pg_msg, link);
            if (m->ctx == ctx && tag_seq(m->tag) == seq && !m->self_send) {
                unexp_remove(m);
                discard(m, m->data);
                msg_free_locked(m);
            }
        }
    }
}

/* Records the abort of collective seq on ctx here (false if it already was): its posted
 * receives fail and its queued messages go. */
static bool abort_here(uint64_t ctx, uint32_t seq, const struct pg_abort_note *n)
{
    if (!pg_coll_abort_note(ctx, seq, n)) {
        return false;
    }
    fail_posted_at(ctx, seq, n);
    discard_queued(ctx, seq);
    return true;
}

void pg_coll_abort_local(uint64_t ctx, uint32_t seq, const struct pg_abort_note *n)
{
    abort_here(ctx, seq, n);
}

/* Queues a control message (an abort notice, a roll call's question) on ctx to world rank
 * peer: sig says which, n is its payload. */
static void queue_control(int peer, uint64_t ctx, int src, uint32_t seq, uint32_t sig,
                          const struct pg_abort_note *n)
{
    struct pg_ack *a = ack_alloc();

    if (!a) {
        p2p_stuck("a collective's abort notice or roll call, for rank", peer);
        return;
    }
    *a = (struct pg_ack){.peer_world = peer, .abort = true, .ctx = ctx, .src = src,
                         .tag = (int)(seq << PG_COLL_SIG_BITS | sig), .note = *n};
    mps_list_push_back(&pg_w.acks, &a->link);
}

/* Queues the notice of the abort of collective seq on ctx to every other member of g. */
static void notify_all(struct pg_group *g, uint64_t ctx, uint32_t seq,
                       const struct pg_abort_note *n)
{
    for (int p = 0; g && p < g->size; p++) {
        if (p != g->rank) {
            queue_control(g->ranks[p], ctx, g->rank, seq, PG_COLL_ABORT, n);
        }
    }
}

/* Records the abort here and queues a notice to every other member of g. */
static void coll_abort(struct pg_group *g, uint64_t ctx, int tag, const struct pg_abort_note *n,
                       bool in_handler)
{
    if (!abort_here(ctx, tag_seq(tag), n)) {
        return;
    }
    notify_all(g, ctx, tag_seq(tag), n);
    if (!in_handler) {
        pg_p2p_flush_deferred();
    }
}

static void fail_clash(struct pg_req *r, int src, int tag, bool in_handler)
{
    const uint32_t mask = (1u << PG_COLL_SIG_BITS) - 1;
    struct pg_group *g = r->g;
    uint64_t ctx = r->ctx;
    struct pg_abort_note n = {(uint32_t)tag & mask, (uint32_t)r->match_tag & mask,
                              g ? g->rank : -1, src};

    r->source = src;
    r->tag = tag;
    pg_req_complete(r, pg_coll_mismatch(src, n.theirs, n.mine));
    coll_abort(g, ctx, tag, &n, in_handler);
}

static inline uint32_t tag_sig(int tag)
{
    return (uint32_t)tag & ((1u << PG_COLL_SIG_BITS) - 1);
}

/* An abort notice, a roll call's question or a device roll call's question or answer (the
 * signatures above every collective's). */
static inline bool is_control(const struct pg_wire *w)
{
    return (w->ctx & 1) && tag_sig(w->tag) >= PG_COLL_CONTROL_MIN;
}

/* An abort notice arrived: a rank that gets one meant for it alone (the answer to its roll
 * call) tells the rest of its group. */
static void take_abort(uint64_t ctx, int tag, const struct pg_abort_note *n)
{
    if (abort_here(ctx, tag_seq(tag), n) && tag_sig(tag) == PG_COLL_ABORT_ONE) {
        notify_all(pg_roll_group(ctx), ctx, tag_seq(tag), n);
    }
}

/* A roll call's question from group rank src (world rank src_world): in collective seq with
 * signature q->mine, which one is this rank in (pg_coll_roll.c)? An answer only where the
 * two differ, or the collective was aborted. */
static void take_roll(uint64_t ctx, int tag, int src, int src_world,
                      const struct pg_abort_note *q)
{
    uint32_t seq = tag_seq(tag), mine;
    const struct pg_abort_note *known = pg_coll_abort_of(ctx, seq);
    struct pg_abort_note n;
    int rank = 0;

    if (known) {
        n = *known;
        discard_queued(ctx, seq); /* a rendezvous from src may have come since */
        queue_control(src_world, ctx, 0, seq, PG_COLL_ABORT_ONE, &n);
        return;
    }
    if (pg_roll_freed(ctx)) {
        /* This rank left the collective and freed the group: what waits here for it will never
         * be received (a rendezvous from a rank that ran its later steps). */
        discard_queued(ctx, seq);
    }
    if (!pg_roll_entered(ctx, seq, &mine, &rank) || mine == (q->mine & (PG_COLL_POISON - 1))) {
        return;
    }
    n = (struct pg_abort_note){q->mine & (PG_COLL_POISON - 1), mine, rank, src};
    if (pg_roll_group(ctx)) {
        coll_abort(pg_roll_group(ctx), ctx, tag, &n, true);
    } else if (abort_here(ctx, seq, &n)) {
        /* This rank freed the group: the asker tells the others. */
        queue_control(src_world, ctx, rank, seq, PG_COLL_ABORT_ONE, &n);
    }
}

/* A device roll call's question from world rank src_world: answered with how many of the
 * group's device collectives this rank has started, its low 32 bits (a group this rank does
 * not have, not yet or no longer, answers nothing: the asker then says it did not answer). */
static void take_device_ask(uint64_t ctx, int src_world)
{
    struct pg_group *g = pg_roll_group(ctx);

    if (g) {
        struct pg_abort_note n = {0, (uint32_t)pg_dev_started(g), g->rank, -1};
        queue_control(src_world, ctx, g->rank, 0, PG_COLL_DEV_COUNT, &n);
    }
}

static void take_control(const struct pg_wire *w, const void *payload)
{
    struct pg_abort_note n;

    if (w->len < sizeof(n)) {
        MPS_ERR("short collective control message (%" PRIu64 " bytes) dropped", w->len);
        return;
    }
    memcpy(&n, payload, sizeof(n));
    switch (tag_sig(w->tag)) {
    case PG_COLL_ROLL:
        take_roll(w->ctx, w->tag, w->src, (int)w->src_world, &n);
        break;
    case PG_COLL_DEV_ASK:
        take_device_ask(w->ctx, (int)w->src_world);
        break;
    case PG_COLL_DEV_COUNT:
        if (pg_roll_group(w->ctx)) {
            pg_dev_heard(pg_roll_group(w->ctx), w->src, n.mine);
        }
        break;
    default:
        take_abort(w->ctx, w->tag, &n);
    }
}

void pg_roll_ask(struct pg_group *g, uint32_t seq, uint32_t sig, const int *world, int n)
{
    struct pg_abort_note q = {0, sig, g->rank, g->rank};

    if (!pg_w.fab) {
        return;
    }
    for (int i = 0; i < n; i++) {
        if (world[i] != pg_w.rank) {
            queue_control(world[i], pg_ctx_coll(g), g->rank, seq, PG_COLL_ROLL, &q);
        }
    }
    pg_p2p_flush_deferred();
}

void pg_roll_ask_device(struct pg_group *g)
{
    struct pg_abort_note q = {0, 0, g->rank, -1};

    for (int p = 0; pg_w.fab && p < g->size; p++) {
        if (p != g->rank) {
            queue_control(g->ranks[p], pg_ctx_coll(g), g->rank, 0, PG_COLL_DEV_ASK, &q);
        }
    }
    pg_p2p_flush_deferred();
}

/* A collective message that no receive took, of a collective aborted here: dropped at once
 * (see discard). */
static bool arrived_aborted(const struct pg_wire *w, const void *payload)
{
    struct pg_msg m;

    if (!(w->ctx & 1) || !pg_coll_abort_of(w->ctx, tag_seq(w->tag))) {
        return false;
    }
    m = (struct pg_msg){.ctx = w->ctx, .src = w->src, .tag = w->tag,
                        .src_world = (int)w->src_world, .len = w->len, .kind = w->kind,
                        .rndv_tag = w->rndv_tag, .sync_id = w->sync_id};
    discard(&m, payload);
    return true;
}

/* A message (ctx, src, tag) found no posted receive: fails the one it clashes with, or
 * returns it where the two differ only in the poison bit (pg.h): then the message is its
 * match, and a poisoned one marks this rank's collective too. */
static struct pg_req *posted_clash(uint64_t ctx, int src, int tag)
{
    struct mps_list *pos;

    if (!(ctx & 1)) {
        return NULL;
    }
    mps_list_for_each(pos, &pg_w.posted)
    {
        struct pg_req *r = container_of(pos, struct pg_req, link);
        if (r->ctx == ctx && r->match_src == src && pg_coll_tags_clash(r->match_tag, tag)) {
            mps_list_remove(&r->link);
            if (pg_coll_tags_poisoned(r->match_tag, tag)) {
                if (tag & (int)PG_COLL_POISON) {
                    pg_coll_poison_note(ctx, tag, src);
                }
                return r;
            }
            fail_clash(r, src, tag, true);
            return NULL;
        }
    }
    return NULL;
}

/* A queued message m clashes with the collective receive req: fails it, or delivers m
 * where only the poison bit differs (see posted_clash). */
static void take_clash(struct pg_req *req, struct pg_msg *m)
{
    if (!pg_coll_tags_poisoned(req->match_tag, m->tag)) {
        fail_clash(req, m->src, m->tag, false);
        return;
    }
    if (m->tag & (int)PG_COLL_POISON) {
        pg_coll_poison_note(m->ctx, m->tag, m->src);
    }
    unexp_remove(m);
    deliver(req, m, m->data);
    msg_free_locked(m);
}

/* A collective receive found no message: whether one of the same sequence number from its
 * source waits with another signature (then req has failed). */
static bool unexpected_clash(const struct pg_group *g, struct pg_req *req)
{
    struct mps_list *pos;
    const struct pg_abort_note *n;

    if (!(req->ctx & 1) || (unsigned)req->match_src >= (unsigned)g->size) {
        return false;
    }
    n = pg_coll_abort_of(req->ctx, tag_seq(req->match_tag));
    if (n) {
        pg_req_complete(req, pg_coll_aborted(n));
        return true;
    }
    mps_list_for_each(pos, &pg_w.unexpected[g->ranks[req->match_src]])
    {
        struct pg_msg *m = container_of(pos, struct pg_msg, link);
        if (m->ctx == req->ctx && m->src == req->match_src &&
            pg_coll_tags_clash(req->match_tag, m->tag)) {
            take_clash(req, m);
            return true;
        }
    }
    return false;
}

/* ---- no silent drops ----
 * A malloc that fails on a protocol path must not lose what it was for: a lost
 * acknowledgement leaves its synchronous sender waiting for good, and a lost unexpected
 * message leaves its receive waiting, or worse, matching a later message. So:
 *  - acknowledgements (and abort notices) that find no memory come from a static reserve of
 *    ACK_RESERVE records, which return to it once sent (at the end of the progress round
 *    that queued them, so the reserve only has to cover one round's worth);
 *  - an unexpected message that finds no memory keeps its envelope in a static table of
 *    LOST_MAX records, in its place in the queue, so that order and matching hold: a
 *    rendezvous envelope (no payload) loses nothing and completes as usual; an eager one
 *    loses its payload, and the receive that matches it fails with PGC_ERR_NOMEM naming the
 *    source, the tag and the size; a synchronous sender is told at once (an acknowledgement
 *    carrying the error) and fails too;
 *  - with a reserve empty as well, the rank records why (pg_p2p_health) and every wait on it
 *    fails within WAIT_LIVENESS rather than wait for the timeout.
 * Only the failure paths touch any of this: a malloc that succeeds costs what it did. */
#define ACK_RESERVE 64
#define LOST_MAX 64
#define PG_MSG_RESERVED (-2) /* pool_class of a record of the lost table */

static struct {
    struct pg_ack acks[ACK_RESERVE];
    struct pg_ack *ack_free[ACK_RESERVE];
    int nack_free;
    struct pg_msg lost[LOST_MAX];
    struct pg_msg *lost_free[LOST_MAX];
    int nlost_free;
    char why[200]; /* set once a reserve ran dry: what was lost */
} spare;

/* Records that this rank lost something with no reserve left (the first cause is kept). */
static void p2p_stuck(const char *what, int peer_world)
{
    if (!spare.why[0]) {
        snprintf(spare.why, sizeof(spare.why), "out of memory with its reserve used up, this "
                 "rank lost %s of rank %d: it cannot keep its part of the protocol",
                 what, peer_world);
    }
    MPS_ERR("no memory (reserve used up too): %s of rank %d is lost", what, peer_world);
}

int pg_p2p_health(void)
{
    return spare.why[0] ? mps_error(PGC_ERR_NOMEM, "%s", spare.why) : PGC_OK;
}

/* A record to queue on pg_w.acks: malloc's, or one of the reserve, or NULL. */
static struct pg_ack *ack_alloc(void)
{
    struct pg_ack *a = mps_test_fails(MPS_FAIL_ACK) ? NULL : malloc(sizeof(*a));

    if (!a && spare.nack_free > 0) {
        a = spare.ack_free[--spare.nack_free];
    }
    return a;
}

static void ack_release(struct pg_ack *a)
{
    if (a >= spare.acks && a < spare.acks + ACK_RESERVE) {
        spare.ack_free[spare.nack_free++] = a;
    } else {
        free(a);
    }
}

/* Queues an acknowledgement of a synchronous send: status PGC_OK, or the error its sender
 * fails with (this rank lost the message). */
static void queue_ack(int peer_world, uint64_t sync_id, int status)
{
    struct pg_ack *a = ack_alloc();

    if (!a) {
        p2p_stuck("the acknowledgement of a synchronous send", peer_world);
        return;
    }
    *a = (struct pg_ack){.peer_world = peer_world, .sync_id = sync_id, .status = status};
    mps_list_push_back(&pg_w.acks, &a->link);
}

/* Completes a receive with the envelope of what arrived (len may exceed the buffer). */
static void recv_set_envelope(struct pg_req *r, int src, int tag, size_t len)
{
    r->source = src;
    r->tag = tag;
    r->len = len < r->cap ? len : r->cap;
}

static void rndv_recv_fabric_done(struct fab_req *freq, int status, size_t len)
{
    struct pg_req *r = container_of(freq, struct pg_req, freq);
    pg_req_complete(r, status == PGC_OK && r->status == PGC_ERR_TRUNCATE ? r->status : status);
}

/* A message matched a receive: deliver eager data, or schedule the rendezvous receive. */
static void deliver(struct pg_req *r, const struct pg_msg *m, const void *eager_data)
{
    int status = m->len > r->cap ? PGC_ERR_TRUNCATE : PGC_OK;

    recv_set_envelope(r, m->src, m->tag, m->len);
    if (m->sync_id) {
        queue_ack(m->src_world, m->sync_id, PGC_OK);
    }
    if (m->self_send) {
        mps_copy(r->buf, m->self_send->buf, r->len);
        pg_req_complete(m->self_send, PGC_OK);
        pg_req_complete(r, status);
    } else if (m->kind == PG_WIRE_EAGER) {
        /* Inline for a few bytes: a call into mps_copy and on into libc cost more than the
         * copy of a small message (8 B: 31 instructions against 8). */
        mps_copy_small(r->buf, eager_data, r->len);
        pg_req_complete(r, status);
    } else if (mps_unlikely(m->kind == PG_WIRE_LOST)) {
        pg_req_complete(r, mps_error(PGC_ERR_NOMEM, "no memory to keep a %zu-byte message "
                                     "from rank %d (tag %d) that arrived before its receive: "
                                     "the message is lost", m->len, m->src, m->tag));
    } else {
        /* The data transfer is posted from progress, outside the fabric's dispatch. */
        r->status = status;
        r->peer_world = m->src_world;
        r->freq.complete = rndv_recv_fabric_done;
        r->rndv_tag = m->rndv_tag;
        mps_list_push_back(&pg_w.rndv_todo, &r->link);
    }
}

/* ---- withdrawing a send (MPI_Cancel) ----
 * MPI-3.1 3.8.4: a wait on a send marked for cancellation returns whatever the receiver
 * does; then either the message was withdrawn (no receive ever gets it) or the send
 * completed as usual. The sender asks the receiver (a PG_WIRE_CANCEL naming the message)
 * and the receiver decides alone, under its lock, against its unexpected queue: a message
 * still there goes, one that is not there has matched (the cancel travels behind the
 * message on the same ordered channel, so it never overtakes it) and stays matched.
 *  - A rendezvous (RTS): the receiver takes the data into scratch (discard), which ends the
 *    sender's transfer, and always answers (an ACK carrying PG_ACK_WITHDRAWN or
 *    PG_ACK_KEPT): the end of the transfer alone does not tell the sender which. The send
 *    completes once both the answer and its transfer's end are here (withdraw_wait), or at
 *    a failed transfer, whose receiver may be dead and never answer.
 *  - A synchronous eager message, which waits for its acknowledgement anyway: the receiver
 *    answers only where it withdrew the message (an ACK with PG_ACK_WITHDRAWN); otherwise
 *    the acknowledgement of its receive, sent at the match, completes the send.
 *  - A message to this same process waits in its own queue: taken out at once.
 * A standard eager message is done once the fabric has it and has no name the receiver
 * could find it by: its send completes as usual (MPI allows it). */
enum pg_withdraw_via { PG_WD_VIA_NONE, PG_WD_VIA_SYNC, PG_WD_VIA_RNDV, PG_WD_VIA_SELF };
#define PG_WD_ANSWER 1u /* the receiver's answer (the send waits in pg_w.sync_sends) */
#define PG_WD_DATA 2u   /* the end of the rendezvous transfer */

/* One event a withdrawal of s waited for (bit) happened, with status for the transfer's
 * end: s completes with the last one, or at once when the transfer failed. */
static void withdraw_end(struct pg_req *s, unsigned bit, int status)
{
    unsigned left = s->withdraw_wait & ~bit;

    if (status != PGC_OK) {
        s->status = status;
        left = 0; /* a receiver that failed the transfer may never answer */
    }
    if ((s->withdraw_wait & PG_WD_ANSWER) && !(left & PG_WD_ANSWER)) {
        mps_list_remove(&s->link); /* no answer is looked for any more */
    }
    s->withdraw_wait = (uint8_t)left;
    if (!left) {
        pg_req_complete(s, s->status);
    }
}

/* An acknowledgement of a synchronous send, or the answer to a withdrawal (pg_cancel_send);
 * both name the send by its cookie, looked up among those waiting for one (never read
 * through: the send may be gone). */
static void handle_ack(const struct pg_wire *w)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.sync_sends)
    {
        struct pg_req *s = container_of(pos, struct pg_req, link);
        if (s->rndv_tag != w->sync_id) {
            continue;
        }
        s->cancelled = w->tag == PG_ACK_WITHDRAWN;
        if (s->withdraw_wait) {
            withdraw_end(s, PG_WD_ANSWER, PGC_OK); /* a rendezvous: its transfer too */
            return;
        }
        mps_list_remove(&s->link);
        /* An ack's tag is its status: negative when the receiver lost the message. */
        pg_req_complete(s, w->tag >= 0 ? PGC_OK
                                       : mps_error(w->tag, "rank %u had no memory to keep "
                                                   "this synchronous message, which "
                                                   "arrived before its receive: it is "
                                                   "lost", w->src_world));
        return;
    }
    MPS_WARN("acknowledgement for an unknown synchronous send from rank %u", w->src_world);
}

/* The queued message that a cancel from world rank src_world names, or NULL. */
static struct pg_msg *withdrawn_msg(const struct pg_wire *w)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.unexpected[w->src_world])
    {
        struct pg_msg *m = container_of(pos, struct pg_msg, link);
        if (w->rndv_tag ? m->kind == PG_WIRE_RTS && m->rndv_tag == w->rndv_tag
                        : m->kind == PG_WIRE_EAGER && m->sync_id == w->sync_id) {
            return m;
        }
    }
    return NULL;
}

/* A sender withdraws a message (see above). A rendezvous whose data finds no scratch stays
 * queued and is kept. */
static void take_cancel(const struct pg_wire *w)
{
    struct pg_msg *m = withdrawn_msg(w);
    bool gone = m && (m->kind != PG_WIRE_RTS || discard(m, NULL));

    if (gone) {
        unexp_remove(m);
        msg_free_locked(m);
    }
    if (gone || w->rndv_tag) {
        queue_ack((int)w->src_world, w->sync_id, gone ? PG_ACK_WITHDRAWN : PG_ACK_KEPT);
    }
}

/* An acknowledgement or a cancel: the messages that carry no data. */
static __attribute__((noinline)) void take_notice(const struct pg_wire *w)
{
    if (w->kind == PG_WIRE_ACK) {
        handle_ack(w);
    } else {
        take_cancel(w);
    }
}

/* Unexpected eager messages come and go at the message rate (a sender running ahead of its
 * receiver). Up to MSG_POOL_MIN bytes glibc's small-block caches serve them well (a pool
 * measured slower there); larger blocks miss those caches, and from 32 KiB each malloc and
 * free moved the heap's top (2-rank reduce of 32 KiB: 25-35 -> 6-9 us with a pool), so
 * blocks of PG_MSG_CLASSES power-of-two classes (1 KiB .. 64 KiB, twice the default eager
 * limit) are kept on free lists, MSG_POOL_MAX or MSG_POOL_BYTES worth of each at most. */
#define MSG_POOL_MAX 256
#define MSG_POOL_BYTES (4u << 20)
#define MSG_POOL_MIN 512

/* Payload capacity of class c. Powers of two keep the waste under half a block: coarser
 * classes measured slower (a flood of 512 B messages in 4 KiB blocks spreads over eight
 * times the cache). */
static size_t msg_class_bytes(int c)
{
    return (size_t)1024 << c;
}

static struct pg_msg *msg_alloc(size_t eager)
{
    int c = 0;
    struct pg_msg *m;

    while (c < PG_MSG_CLASSES && eager > msg_class_bytes(c)) {
        c++;
    }
    c = eager > MSG_POOL_MIN && c < PG_MSG_CLASSES ? c : -1;
    if (c >= 0 && pg_w.msg_pool[c]) {
        m = pg_w.msg_pool[c];
        pg_w.msg_pool[c] = *(struct pg_msg **)m;
        pg_w.msg_pool_n[c]--;
    } else {
        m = malloc(sizeof(*m) + (c >= 0 ? msg_class_bytes(c) : eager));
    }
    if (m) {
        memset(m, 0, sizeof(*m));
        m->pool_class = c;
        m->data = (unsigned char *)(m + 1);
    }
    return m;
}

static void msg_free_locked(struct pg_msg *m)
{
    int c = m->pool_class;

    if (c >= 0 && pg_w.msg_pool_n[c] < MSG_POOL_MAX &&
        (size_t)pg_w.msg_pool_n[c] * msg_class_bytes(c) < MSG_POOL_BYTES) {
        *(struct pg_msg **)m = pg_w.msg_pool[c];
        pg_w.msg_pool[c] = m;
        pg_w.msg_pool_n[c]++;
    } else if (mps_unlikely(c == PG_MSG_RESERVED)) {
        spare.lost_free[spare.nlost_free++] = m;
    } else {
        free(m);
    }
}

void pg_msg_free(struct pg_msg *m)
{
    PG_LOCK();
    msg_free_locked(m);
    PG_UNLOCK();
}

/* An arrived envelope that found no memory: kept in a record of the lost table, without
 * its payload (see "No silent drops"); NULL when the table is full too. */
static __attribute__((noinline, cold)) struct pg_msg *queue_lost(const struct pg_wire *w)
{
    bool eager = w->kind == PG_WIRE_EAGER;
    struct pg_msg *m;

    if (spare.nlost_free == 0) {
        p2p_stuck(eager ? "an eager message" : "the envelope of a rendezvous message",
                  (int)w->src_world);
        return NULL;
    }
    m = spare.lost_free[--spare.nlost_free];
    *m = (struct pg_msg){.ctx = w->ctx, .src = w->src, .tag = w->tag,
                         .src_world = (int)w->src_world, .len = w->len,
                         .kind = eager ? PG_WIRE_LOST : w->kind, .rndv_tag = w->rndv_tag,
                         .sync_id = eager ? 0 : w->sync_id, .pool_class = PG_MSG_RESERVED};
    if (eager) {
        MPS_ERR("no memory for a message of %" PRIu64 " bytes from rank %u that arrived "
                "before its receive: its receive will fail", w->len, w->src_world);
        if (w->sync_id) {
            queue_ack((int)w->src_world, w->sync_id, PGC_ERR_NOMEM);
        }
    }
    unexp_push(m);
    return m;
}

/* Queues a copy of an arrived envelope (and eager payload); returns it. Out of memory, it
 * keeps the envelope alone (queue_lost), or returns NULL when even that is impossible. */
static struct pg_msg *queue_unexpected(const struct pg_wire *w, const void *payload)
{
    size_t eager = w->kind == PG_WIRE_EAGER ? w->len : 0;
    /* The test knob fails point-to-point messages only: collectives keep working. */
    struct pg_msg *m = mps_test_fails(MPS_FAIL_UNEXPECTED) && !pg_ctx_is_coll(w->ctx)
                           ? NULL
                           : msg_alloc(eager);

    if (mps_unlikely(!m)) {
        return queue_lost(w);
    }
    m->ctx = w->ctx;
    m->src = w->src;
    m->tag = w->tag;
    m->src_world = (int)w->src_world;
    m->len = w->len;
    m->kind = w->kind;
    m->rndv_tag = w->rndv_tag;
    m->sync_id = w->sync_id;
    mps_copy(m->data, payload, eager);
    unexp_push(m);
    return m;
}

_Static_assert(PG_WIRE_RNDV_BIT == FAB_TAG_RNDV, "pg_wire_parse checks an RTS's tag");

/* The wire header of an envelope (has_ext left to the caller). */
static inline struct pg_wire_hdr wire_hdr(uint64_t ctx, int src, int tag, size_t len, int kind)
{
    return (struct pg_wire_hdr){.ctx = (uint32_t)ctx, .src = src, .tag = tag,
                                .len = (uint16_t)len, .kind = (uint8_t)kind};
}

/* Sends an envelope (and, for eager messages, the payload) to a peer in its wire form. */
static int wire_send(int dst_world, const struct pg_wire *w, const void *payload, size_t plen)
{
    struct {
        struct pg_wire_hdr h;
        struct pg_wire_ext x;
    } out = {.h = wire_hdr(w->ctx, w->src, w->tag, w->len, (int)w->kind)};
    bool ext = w->kind != PG_WIRE_EAGER || w->sync_id || w->len > UINT16_MAX;

    if (ext) {
        out.h.has_ext = 1;
        out.x = (struct pg_wire_ext){w->len, w->rndv_tag, w->sync_id};
    }
    return fab_am_send(pg_w.fab, dst_world, &out, ext ? sizeof(out) : sizeof(out.h), payload,
                       plen);
}

/* An unmatched message is left with the fabric when it may keep it (see fab_am_fn): the
 * receive the caller posts next is likely its match, and takes it without a second copy. */
enum fab_am_result pg_am_handler(void *arg, int peer, const void *buf, size_t len,
                                 bool may_defer)
{
    struct pg_wire w;
    const char *why;
    const void *payload = pg_wire_parse(buf, len, peer, &w, &why);
    struct pg_req *r;

    if (mps_unlikely(!payload)) {
        MPS_ERR("a message of %zu bytes from rank %d %s: dropped", len, peer, why);
        return FAB_AM_TAKEN;
    }
    if (mps_unlikely(w.kind > PG_WIRE_RTS)) {
        take_notice(&w);
        return FAB_AM_TAKEN;
    }
    r = find_posted(w.ctx, w.src, w.tag);
    if (!r && is_control(&w)) {
        take_control(&w, payload);
        return FAB_AM_TAKEN;
    }
    if (!r) {
        r = posted_clash(w.ctx, w.src, w.tag);
    }
    if (!r && mps_unlikely(arrived_aborted(&w, payload))) {
        return FAB_AM_TAKEN;
    }
    if (r) {
        /* Only the fields deliver reads: a designated initializer zeroes the other 50 bytes
         * too, with `rep stos` (slow to start on AMD), on every matched message. */
        struct pg_msg m;
        m.ctx = w.ctx;
        m.src = w.src;
        m.tag = w.tag;
        m.src_world = (int)w.src_world;
        m.len = w.len;
        m.kind = w.kind;
        m.rndv_tag = w.rndv_tag;
        m.sync_id = w.sync_id;
        m.self_send = NULL;
        deliver(r, &m, payload);
        return FAB_AM_MATCHED;
    }
    if (may_defer) {
        return FAB_AM_DEFER;
    }
    queue_unexpected(&w, payload);
    return FAB_AM_TAKEN;
}

/* A send to this same process: no fabric; the envelope waits in the unexpected queue.
 * Small standard sends are buffered so that send-before-receive to self does not block. */
static int self_send(uint64_t ctx, struct pg_group *g, const void *buf, size_t len, int tag,
                     bool sync, struct pg_req *req)
{
    bool buffered = !sync && len <= pg_w.eager_max;
    struct pg_msg m = {.ctx = ctx, .src = g->rank, .tag = tag, .src_world = pg_w.rank,
                       .len = len, .kind = PG_WIRE_EAGER};
    struct pg_req *r = find_posted(ctx, g->rank, tag);
    /* Unbuffered, the envelope alone waits (as an RTS) and the receive copies from buf. */
    struct pg_wire w = {.ctx = ctx, .src = g->rank, .tag = tag,
                        .kind = buffered ? PG_WIRE_EAGER : PG_WIRE_RTS,
                        .src_world = (uint32_t)pg_w.rank, .len = len};

    req->buf = (void *)buf;
    if (r) {
        deliver(r, &m, buf);
        pg_req_complete(req, PGC_OK);
        return PGC_OK;
    }
    struct pg_msg *q = queue_unexpected(&w, buf);
    /* Here the sender is at hand: it fails instead of its receive (a lost record). */
    if (q && q->kind == PG_WIRE_LOST) {
        unexp_remove(q);
        msg_free_locked(q);
        q = NULL;
    }
    if (!q) {
        return mps_error(PGC_ERR_NOMEM, "send to self: no memory to queue %zu bytes", len);
    }
    if (buffered) {
        pg_req_complete(req, PGC_OK);
    } else {
        q->self_send = req;
        req->withdraw_via = PG_WD_VIA_SELF;
    }
    return PGC_OK;
}

/* A send whose data the fabric takes from the caller's buffer (a rendezvous, a zero-copy
 * eager message) completes when the fabric is done with it. */
static void fabric_send_done(struct fab_req *freq, int status, size_t len)
{
    struct pg_req *s = container_of(freq, struct pg_req, freq);

    if (mps_unlikely(s->withdraw_wait)) {
        withdraw_end(s, PG_WD_DATA, status);
        return;
    }
    pg_req_complete(s, status);
}

/* Whether len bytes from buf to world rank dst go as one eager message: within our eager
 * size (rooted collectives have their own, see PG_SEND_ROOTED) and within what the fabric
 * sends to that peer as one message without a slower protocol, which for a buffer in the
 * shared heap is smaller, and smaller for point-to-point than for collectives
 * (fab_eager_fits). */
static inline bool eager_fits(const void *buf, size_t len, int dst_world, uint64_t ctx,
                              unsigned flags)
{
    return len <= pg_eager_max(flags, buf) &&
           fab_eager_fits(pg_w.fab, dst_world, buf, len, pg_ctx_is_coll(ctx));
}

static int remote_send(uint64_t ctx, struct pg_group *g, const void *buf, size_t len,
                       int dst_world, int tag, unsigned flags, struct pg_req *req)
{
    struct pg_wire w = {.ctx = ctx, .src = g->rank, .tag = tag, .src_world = (uint32_t)pg_w.rank,
                        .len = len};
    bool sync = flags & PG_SEND_SYNC;
    int rc;

    req->peer_world = dst_world;
    if (eager_fits(buf, len, dst_world, ctx, flags)) {
        w.kind = PG_WIRE_EAGER;
        /* The cookie of a synchronous send, which its acknowledgement names: a number of
         * the rendezvous tags' sequence, so never one of theirs (no FAB_TAG_RNDV) and never
         * that of a send given up before (its late acknowledgement finds nothing), as the
         * request's address would be where a later send reuses its memory. */
        req->rndv_tag = sync ? ++pg_w.rndv_seq : 0;
        w.sync_id = req->rndv_tag;
        req->withdraw_via = sync ? PG_WD_VIA_SYNC : PG_WD_VIA_NONE;
        rc = wire_send(dst_world, &w, buf, len);
        if (rc == PGC_OK && sync) {
            mps_list_push_back(&pg_w.sync_sends, &req->link);
        } else if (rc == PGC_OK) {
            pg_req_complete(req, PGC_OK);
        }
        return rc;
    }
    w.kind = PG_WIRE_RTS;
    w.rndv_tag = FAB_TAG_RNDV | ((uint64_t)(uint32_t)pg_w.rank << 32) | ++pg_w.rndv_seq;
    req->rndv_tag = w.rndv_tag;
    req->withdraw_via = PG_WD_VIA_RNDV;
    req->freq.complete = fabric_send_done;
    /* The envelope goes first: libfabric's shm without CMA refuses further sends to a peer
     * while a large one waits for its receive, so data first could starve the RTS. */
    rc = wire_send(dst_world, &w, NULL, 0);
    if (rc == PGC_OK) {
        rc = fab_tsend(pg_w.fab, dst_world, buf, len, w.rndv_tag, &req->freq);
    }
    return rc;
}

/* An eager message the fabric sends from buf itself (fab_am_send_zc) instead of a copy: at
 * 16 KiB over tcp that copy lies between a message's arrival and the reply. The request
 * completes as a rendezvous send's does. */
static int send_eager_zcopy(struct pg_wire_hdr h, const void *buf, size_t len, int dst_world,
                            struct pg_req *req)
{
    req_reset(req, PG_REQ_SEND);
    req->len = len;
    req->freq.complete = fabric_send_done;
    return fab_am_send_zc(pg_w.fab, dst_world, &h, sizeof(h), buf, len, &req->freq);
}

/* Whether a standard-mode send of len bytes to group rank dst goes as one eager message
 * to another process: such a send completes as soon as the fabric has its message. */
static inline bool eager_now(struct pg_group *g, uint64_t ctx, const void *buf, size_t len,
                             int dst, unsigned flags)
{
    return !(flags & PG_SEND_SYNC) && dst >= 0 && dst < g->size && g->ranks[dst] != pg_w.rank &&
           eager_fits(buf, len, g->ranks[dst], ctx, flags);
}

/* Whether the fabric sends an eager message of len bytes to dst_world from the caller's
 * buffer (send_eager_zcopy) rather than from a copy. */
static inline bool eager_zcopy(size_t len, int dst_world)
{
    return mps_unlikely(len >= pg_w.net_zcopy_min) && len <= UINT16_MAX &&
           fab_am_zcopy(pg_w.fab, dst_world);
}

/* An eager message copied out of buf at once; its header is built here in its wire form:
 * the common small message skips wire_send. */
static inline int eager_copy(uint64_t ctx, struct pg_group *g, const void *buf, size_t len,
                             int dst_world, int tag)
{
    struct pg_wire_hdr h = wire_hdr(ctx, g->rank, tag, len, PG_WIRE_EAGER);

    return mps_likely(len <= UINT16_MAX)
               ? fab_am_send(pg_w.fab, dst_world, &h, sizeof(h), buf, len)
               : wire_send(dst_world,
                           &(struct pg_wire){.ctx = ctx, .src = g->rank, .tag = tag,
                                             .kind = PG_WIRE_EAGER, .len = len},
                           buf, len);
}

/* A standard-mode eager send to another process completes as soon as its message is
 * handed to the fabric, so its request needs only its outcome, not a full reset. */
static int send_eager_now(uint64_t ctx, struct pg_group *g, const void *buf, size_t len,
                          int dst_world, int tag, struct pg_req *req)
{
    if (eager_zcopy(len, dst_world)) {
        return send_eager_zcopy(wire_hdr(ctx, g->rank, tag, len, PG_WIRE_EAGER), buf, len,
                                dst_world, req);
    }
    int rc = eager_copy(ctx, g, buf, len, dst_world, tag);

    req->kind = PG_REQ_SEND;
    req->len = len;
    req->cancelled = false;
    req->source = PG_ANY_SOURCE;
    req->tag = PG_ANY_TAG;
    req->done = 0;
    req->fl_rec = NULL; /* not recorded (pg_flight.h), whatever the request held */
    if (rc == PGC_OK) {
        pg_req_complete(req, PGC_OK);
    }
    return rc;
}

int pg_send_now(struct pg_group *g, const void *buf, size_t len, int dst, int tag)
{
    uint64_t ctx = pg_ctx_p2p(g);
    int rc = PG_NOT_NOW;

    PG_LOCK();
    /* A recorded send keeps its request: the recorder's entry ends with it (pg_flight.h). */
    if (mps_likely(!g->flight && eager_now(g, ctx, buf, len, dst, 0) &&
                   !eager_zcopy(len, g->ranks[dst]))) {
        rc = eager_copy(ctx, g, buf, len, g->ranks[dst], pg_coll_send_tag(ctx, tag));
    }
    PG_UNLOCK();
    return rc;
}

int pg_isend_ctx(struct pg_group *g, uint64_t ctx, const void *buf, size_t len, int dst, int tag,
                 unsigned flags, struct pg_req *req)
{
    int dst_world;

    tag = pg_coll_send_tag(ctx, tag);

    if (mps_likely(eager_now(g, ctx, buf, len, dst, flags))) {
        return send_eager_now(ctx, g, buf, len, g->ranks[dst], tag, req);
    }
    req_reset(req, PG_REQ_SEND);
    req->len = len;
    /* Off the eager fast path: what a wait that times out names (pg_await.c). */
    req->ctx = ctx;
    req->match_src = dst;
    req->match_tag = tag;
    req->g = g;
    if (dst == PG_PROC_NULL) {
        pg_req_complete(req, PGC_OK);
        return PGC_OK;
    }
    if (dst < 0 || dst >= g->size) {
        return mps_error(PGC_ERR_INVALID_RANK, "destination rank %d outside a group of %d", dst,
                         g->size);
    }
    dst_world = g->ranks[dst];
    if (dst_world == pg_w.rank) {
        return self_send(ctx, g, buf, len, tag, flags & PG_SEND_SYNC, req);
    }
    return remote_send(ctx, g, buf, len, dst_world, tag, flags, req);
}

int pg_irecv_ctx(struct pg_group *g, uint64_t ctx, void *buf, size_t cap, int src, int tag,
                 struct pg_req *req)
{
    struct pg_msg *m;

    req_reset(req, PG_REQ_RECV);
    req->buf = buf;
    req->cap = cap;
    req->ctx = ctx;
    req->match_src = src;
    req->match_tag = tag;
    req->g = g;
    if (src == PG_PROC_NULL) {
        req->source = PG_PROC_NULL;
        req->tag = PG_ANY_TAG;
        pg_req_complete(req, PGC_OK);
        return PGC_OK;
    }
    if (src != PG_ANY_SOURCE && (src < 0 || src >= g->size)) {
        return mps_error(PGC_ERR_INVALID_RANK, "source rank %d outside a group of %d", src,
                         g->size);
    }
    m = unexp_find(g, req);
    if (m) {
        unexp_remove(m);
        deliver(req, m, m->data);
        msg_free_locked(m);
        return PGC_OK;
    }
    if (!unexpected_clash(g, req)) {
        mps_list_push_back(&pg_w.posted, &req->link);
    }
    return PGC_OK;
}

static int check_tag(int tag, bool recv)
{
    if ((tag < 0 && !(recv && tag == PG_ANY_TAG)) || tag > PG_TAG_UB) {
        return mps_error(PGC_ERR_INVALID_TAG, "tag %d outside 0..%d", tag, PG_TAG_UB);
    }
    return PGC_OK;
}

int pg_isend_impl(struct pg_group *g, const void *buf, size_t len, int dst, int tag, bool sync,
                  struct pg_req *req)
{
    int rc = check_tag(tag, false);

    if (rc == PGC_OK) {
        PG_LOCK();
        rc = pg_isend_ctx(g, pg_ctx_p2p(g), buf, len, dst, tag, sync ? PG_SEND_SYNC : 0, req);
        PG_UNLOCK();
    }
    return rc;
}

int pg_irecv_impl(struct pg_group *g, void *buf, size_t cap, int src, int tag, struct pg_req *req)
{
    int rc = check_tag(tag, true);

    if (rc == PGC_OK) {
        PG_LOCK();
        rc = pg_irecv_ctx(g, pg_ctx_p2p(g), buf, cap, src, tag, req);
        PG_UNLOCK();
    }
    return rc;
}

/* How often a blocking receive looks at its sender's ring before it posts the receive and
 * progresses everything: one line read per look, so microseconds in all, long enough for a
 * ping-pong's reply and short enough that other peers' transfers and this rank's queued
 * work wait little. */
#define DIRECT_POLLS 4096

enum direct { DIRECT_NONE, DIRECT_TAKEN, DIRECT_OTHER };

/* Takes the next message from world rank peer when it is a standard eager message that
 * fits and that the receive req (its ctx, match_src, match_tag set) matches; anything else
 * is left to progress. */
static enum direct direct_take(int peer, struct pg_req *req)
{
    const struct pg_wire_hdr *h;
    size_t len;
    int got = fab_am_peek(pg_w.fab, peer, (const void **)&h, &len);

    if (got <= 0) {
        return got == 0 ? DIRECT_NONE : DIRECT_OTHER;
    }
    if (h->kind != PG_WIRE_EAGER || h->has_ext || len != sizeof(*h) + h->len ||
        h->len > req->cap || !envelope_matches(req, h->ctx, h->src, h->tag)) {
        return DIRECT_OTHER;
    }
    mps_copy_small(req->buf, h + 1, h->len);
    recv_set_envelope(req, h->src, h->tag, h->len);
    fab_am_consume(pg_w.fab, peer);
    pg_req_complete(req, PGC_OK);
    return DIRECT_TAKEN;
}

/* The next message from src is the oldest this receive may match when no receive is
 * posted (none could take it first) and none from src waits in its unexpected queue (an
 * older one might match). Then the receive needs no place in the queues and no progress: it waits
 * on the sender's ring alone, and takes the message from there. req gets the fields that
 * pg_irecv_ctx would set up, but is never queued. */
bool pg_recv_direct_impl(struct pg_group *g, void *buf, size_t cap, int src, int tag,
                         struct pg_req *req)
{
    enum direct d = DIRECT_OTHER;
    int peer;

    PG_LOCK();
    if ((unsigned)src < (unsigned)g->size && pg_w.fab && (peer = g->ranks[src]) != pg_w.rank &&
        mps_list_empty(&pg_w.posted) && mps_list_empty(&pg_w.unexpected[peer])) {
        /* A thread that spins here holds the lock; more ranks than cores want the core. */
        int polls = pg_w.mt || pg_w.oversubscribed ? 1 : DIRECT_POLLS;

        req->kind = PG_REQ_RECV;
        req->cancelled = false;
        req->buf = buf;
        req->cap = cap;
        req->ctx = pg_ctx_p2p(g);
        req->match_src = src;
        req->match_tag = tag;
        do {
            d = direct_take(peer, req);
        } while (d == DIRECT_NONE && --polls > 0);
    }
    PG_UNLOCK();
    return d == DIRECT_TAKEN;
}

int pg_iprobe(struct pg_group *g, int src, int tag, bool take, bool *found,
              struct pg_req *probe_req, struct pg_msg **msg)
{
    struct pg_req key = {.ctx = pg_ctx_p2p(g), .match_src = src, .match_tag = tag};
    struct pg_msg *m;
    int rc;

    *found = false;
    PG_LOCK();
    rc = pg_progress_locked();
    m = unexp_find(g, &key);
    if (m) {
        *found = true;
        probe_req->source = m->src;
        probe_req->tag = m->tag;
        probe_req->len = m->len;
        if (take) {
            unexp_remove(m);
            *msg = m;
        }
    }
    PG_UNLOCK();
    return rc < 0 ? rc : PGC_OK;
}

int pg_mrecv(struct pg_msg *m, void *buf, size_t cap, struct pg_req *req)
{
    req_reset(req, PG_REQ_RECV);
    req->buf = buf;
    req->cap = cap;
    PG_LOCK();
    deliver(req, m, m->data);
    msg_free_locked(m);
    PG_UNLOCK();
    return PGC_OK;
}

bool pg_recv_posted(const struct pg_req *req)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.posted)
    {
        if (pos == &req->link) {
            return true;
        }
    }
    return false;
}

bool pg_unpost_recv(struct pg_req *req)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.posted)
    {
        if (pos == &req->link) {
            mps_list_remove(&req->link);
            return true;
        }
    }
    return false;
}

int pg_cancel_recv(struct pg_req *req)
{
    PG_LOCK();
    if (!pg_req_is_done(req) && pg_unpost_recv(req)) {
        req->cancelled = true;
        pg_req_complete(req, PGC_OK);
    }
    PG_UNLOCK();
    return PGC_OK;
}

/* A send to this same process, still queued unmatched here (its message names it), is
 * taken out and completes withdrawn. */
static void withdraw_self(struct pg_req *req)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &pg_w.unexpected[pg_w.rank])
    {
        struct pg_msg *m = container_of(pos, struct pg_msg, link);
        if (m->self_send == req) {
            unexp_remove(m);
            msg_free_locked(m);
            req->cancelled = true;
            pg_req_complete(req, PGC_OK);
            return;
        }
    }
}

/* Asks the receiver of req to withdraw its message (see "withdrawing a send"). A
 * rendezvous waits for the answer from before the request goes out: the fabric's progress
 * inside wire_send may end its transfer already. */
static int withdraw_remote(struct pg_req *req)
{
    bool rndv = req->withdraw_via == PG_WD_VIA_RNDV;
    struct pg_wire w = {.kind = PG_WIRE_CANCEL, .ctx = req->ctx, .src = req->g->rank,
                        .tag = req->match_tag, .src_world = (uint32_t)pg_w.rank,
                        .rndv_tag = rndv ? req->rndv_tag : 0,
                        .sync_id = req->rndv_tag};
    int rc;

    if (rndv) {
        req->withdraw_wait = PG_WD_ANSWER | PG_WD_DATA;
        mps_list_push_back(&pg_w.sync_sends, &req->link);
    }
    rc = wire_send(req->peer_world, &w, NULL, 0);
    if (rc != PGC_OK && rndv) {
        withdraw_end(req, PG_WD_ANSWER, PGC_OK); /* as if kept */
    }
    return rc;
}

int pg_cancel_send(struct pg_req *req)
{
    int rc = PGC_OK;

    PG_LOCK();
    if (!pg_req_is_done(req) && req->kind == PG_REQ_SEND && !req->withdraw_wait) {
        if (req->withdraw_via == PG_WD_VIA_SELF) {
            withdraw_self(req);
        } else if (req->withdraw_via != PG_WD_VIA_NONE) {
            rc = withdraw_remote(req);
        }
    }
    PG_UNLOCK();
    return rc;
}

/* Posts matched rendezvous receives and sends queued acks (see pg_am_handler). */
int pg_p2p_flush_deferred(void)
{
    struct mps_list *pos, *tmp;
    int rc = PGC_OK;

    mps_list_for_each_safe(pos, tmp, &pg_w.rndv_todo)
    {
        struct pg_req *r = container_of(pos, struct pg_req, link);
        mps_list_remove(&r->link);
        rc = fab_trecv(pg_w.fab, r->peer_world, r->buf, r->cap, r->rndv_tag, &r->freq);
        if (rc != PGC_OK) {
            pg_req_complete(r, rc);
        }
    }
    mps_list_for_each_safe(pos, tmp, &pg_w.acks)
    {
        struct pg_ack *a = container_of(pos, struct pg_ack, link);
        struct pg_wire w = {.kind = PG_WIRE_ACK, .tag = a->status,
                            .src_world = (uint32_t)pg_w.rank, .sync_id = a->sync_id};
        mps_list_remove(&a->link);
        if (a->abort) {
            w = (struct pg_wire){.kind = PG_WIRE_EAGER, .ctx = a->ctx, .src = a->src,
                                 .tag = a->tag, .src_world = (uint32_t)pg_w.rank,
                                 .len = sizeof(a->note)};
        }
        rc = wire_send(a->peer_world, &w, a->abort ? &a->note : NULL,
                       a->abort ? sizeof(a->note) : 0);
        ack_release(a);
    }
    return rc;
}

int pg_p2p_init(void)
{
    pg_w.unexpected = malloc(sizeof(*pg_w.unexpected) * (size_t)pg_w.size);
    if (!pg_w.unexpected) {
        return mps_error(PGC_ERR_NOMEM, "no memory for %d unexpected-message queues", pg_w.size);
    }
    for (int r = 0; r < pg_w.size; r++) {
        mps_list_init(&pg_w.unexpected[r]);
    }
    pg_w.unexp_count = 0;
    spare.nack_free = ACK_RESERVE;
    for (int i = 0; i < ACK_RESERVE; i++) {
        spare.ack_free[i] = &spare.acks[i];
    }
    spare.nlost_free = LOST_MAX;
    for (int i = 0; i < LOST_MAX; i++) {
        spare.lost_free[i] = &spare.lost[i];
    }
    spare.why[0] = '\0';
    return mps_test_fail_init();
}

void pg_p2p_fini(void)
{
    struct mps_list *pos, *tmp;

    for (int r = 0; pg_w.unexpected && r < pg_w.size; r++) {
        mps_list_for_each_safe(pos, tmp, &pg_w.unexpected[r])
        {
            mps_list_remove(pos);
            msg_free_locked(container_of(pos, struct pg_msg, link));
        }
    }
    free(pg_w.unexpected);
    pg_w.unexpected = NULL;
    pg_w.unexp_count = 0;
    for (int c = 0; c < PG_MSG_CLASSES; c++) {
        while (pg_w.msg_pool[c]) {
            struct pg_msg *m = pg_w.msg_pool[c];
            pg_w.msg_pool[c] = *(struct pg_msg **)m;
            free(m);
        }
        pg_w.msg_pool_n[c] = 0;
    }
}
