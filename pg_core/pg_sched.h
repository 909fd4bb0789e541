/*
 * pg_sched.h - collective schedules: a collective is a list of steps (send, receive,
 * local reduce, copy, fence) built once and then run by the progress engine, so the same
 * code serves the blocking call (start + wait) and the non-blocking one (start, and
 * progress while the caller computes and tests).
 *
 * Run rule: consecutive communication steps are issued together; a local step (reduce,
 * copy, fence) first waits until every communication issued before it has completed.
 * So a "round" is written as its sends and receives followed by the local work on what
 * arrived. Messages use the group's collective context and a tag that is the collective's
 * sequence number, the same on every member, so concurrent non-blocking collectives on
 * one group never take each other's messages.
 *
 * Builders record the first error (no memory) in the schedule and pg_sched_start returns
 * it, so algorithm code adds steps without checking each call.
 */
#ifndef PG_SCHED_H
#define PG_SCHED_H

#include "pg.h"

enum pg_step_kind {
    PG_STEP_SEND,
    PG_STEP_RECV,
    PG_STEP_REDUCE,
    PG_STEP_COPY,
    PG_STEP_FENCE,
    PG_STEP_POLL
};

/* A poll step's function: sets *done when its work is finished (rc its result); until then
 * the schedule stops at it and calls it again at each progress. */
typedef int (*pg_step_poll_fn)(void *arg, bool *done);

struct pg_awaited; /* pg_internal.h */

/* A poll step's account of what it waits for (a->who and a->how; a->what is filled in):
 * false when it cannot name anyone. */
typedef bool (*pg_step_desc_fn)(void *arg, struct pg_awaited *a);

#define PG_SCHED_INLINE 1024 /* bytes of scratch kept inside a schedule */

struct pg_sched;

struct pg_scratch {
    void *p;
    size_t n;
};

struct pg_step {
    enum pg_step_kind kind;
    int peer;          /* group rank (send/recv) */
    void *dst;         /* recv buffer, reduce inout, copy destination */
    const void *src;   /* send buffer, reduce input, copy source */
    size_t n;          /* bytes (send/recv/copy) or elements (reduce) */
    pg_step_poll_fn poll; /* a poll step's function; dst is its argument */
    pg_step_desc_fn desc; /* a poll step's account for a timeout message, or NULL */
    struct pg_sched *s;
    struct pg_req req;
};

struct pg_sched {
    struct pg_req *req; /* the caller's request */
    struct pg_group *g;
    uint64_t ctx;
    int tag;
    uint32_t sig; /* the collective's signature (pg_sched_sig), in its tag */
    int status;
    unsigned send_flags; /* pg_isend_ctx's flags for every send (pg_sched_rooted) */
    const char *algo;    /* the algorithm's name for a timeout message (pg_sched_algo) */
    struct pg_op_spec op;
    struct pg_step *steps;
    int n, cap, next, inflight;
    struct pg_scratch *scratch; /* heap scratch blocks, given back to a pool at the end */
    int nscratch;
    struct mps_list link;
    size_t page_offset; /* large scratch starts at this offset within a page */
    /* Small scratch comes from here, so a small collective allocates nothing once warm. */
    size_t inline_used;
    _Alignas(16) unsigned char inline_scratch[PG_SCHED_INLINE];
};

/* A schedule on g that will complete req (initialised here). op may be NULL. */
struct pg_sched *pg_sched_new(struct pg_group *g, const struct pg_op_spec *op,
                              struct pg_req *req);
/* Names the collective s runs (its signature: pg_internal.h); op may be NULL, root < 0
 * for none. Every entry point calls it, so that ranks calling different collectives fail
 * instead of matching each other's messages. */
void pg_sched_sig(struct pg_sched *s, enum pg_coll_kind kind, const struct pg_op_spec *op,
                  int root);
/* Names the algorithm s runs, for the message of a wait that times out ("step 3 of 7 of
 * recursive doubling"). The first name stays: an algorithm built of others keeps its own. */
static inline void pg_sched_algo(struct pg_sched *s, const char *name)
{
    if (!s->algo) {
        s->algo = name;
    }
}
/* Marks s as a rooted collective's schedule (PG_SEND_ROOTED on its sends). */
void pg_sched_rooted(struct pg_sched *s);
void pg_sched_send(struct pg_sched *s, const void *buf, size_t bytes, int peer);
void pg_sched_recv(struct pg_sched *s, void *buf, size_t bytes, int peer);
/* inout = in op inout, count elements, with the schedule's op. */
void pg_sched_reduce(struct pg_sched *s, const void *in, void *inout, size_t count);
void pg_sched_copy(struct pg_sched *s, void *dst, const void *src, size_t bytes);
void pg_sched_fence(struct pg_sched *s);
/* A step that runs fn(arg) at each progress until it reports done, after the communication
 * before it. A schedule of poll steps only sends no message on its group (pg_coll_shm.c's
 * and the node-aware non-blocking forms) but takes the group's sequence number all the same,
 * as its blocking twin does: the roll call (pg_coll_roll.c) counts every collective. */
void pg_sched_poll(struct pg_sched *s, pg_step_poll_fn fn, void *arg);
/* Gives the poll step just added its account of what it waits for (called with its arg,
 * only when a wait for the schedule times out). */
void pg_sched_poll_desc(struct pg_sched *s, pg_step_desc_fn desc);
/* What the schedule completing req (not done) waits for: false if req has no schedule. */
bool pg_sched_awaited(const struct pg_req *req, struct pg_awaited *a);
/* Large scratch allocated after this call sits at the same offset within a page as
 * user_buf (single-copy reads between buffers at different offsets are much slower). */
void pg_sched_align_like(struct pg_sched *s, const void *user_buf);
/* Scratch memory owned by the schedule, freed when it completes. */
void *pg_sched_alloc(struct pg_sched *s, size_t bytes);
/* Starts it (the world lock held). On error nothing stays posted and req is untouched. */
int pg_sched_start(struct pg_sched *s);
/* pg_sched_start under the world lock: what collective entry points call. Called from a
 * poll step (which holds the lock already), it starts s without taking the lock again, so
 * that a poll step may start the next stage of a chain of collectives (pg_coll_hier.c). */
int pg_sched_launch(struct pg_sched *s);
/* Blocking helper: start, then wait with the world timeout (lock held). */
int pg_sched_run(struct pg_sched *s);
/* Frees a schedule that was never started. */
void pg_sched_discard(struct pg_sched *s);

#endif
