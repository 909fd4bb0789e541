/*
 * pg_flight.h - the flight recorder: for each process group, a ring of its last
 * MPISHIM_FLIGHT_RECORDER operations (collectives and point-to-point calls): kind, bytes,
 * peer or root, sequence number, state (posted, done, failed) and times. It is dumped on a
 * timeout, on a fatal error and on SIGUSR1, so that a hang can be read after the fact: the
 * operation a rank is stuck in is the one still posted, and the sequence numbers of the
 * ranks' collectives say which rank fell behind (doc/failures.md). torch's NCCL flight
 * recorder is the model.
 *
 * Recording is a few stores into the ring and a read of the CPU's cycle counter, with no
 * lock: collectives of one group never run concurrently, but point-to-point calls on one
 * group from several threads (MPI_THREAD_MULTIPLE) may then overwrite each other's entry
 * or skip a sequence number. The ring index stays in range whatever the interleaving, so
 * the cost of that is a less exact record, never a fault.
 *
 * The recorded calls are the pg_<name> forms at the end of this file, inline so that a
 * group without a recorder pays a load and a test: each records the call, then runs its
 * _impl (pg_coll.c, pg_p2p.c). A blocking collective ends its entry when it returns; a
 * nonblocking call leaves its entry on its request, and pg_req_complete ends it. Calls made
 * inside a recorded blocking collective (its scheduled form runs the nonblocking one) are
 * not recorded again.
 */
#ifndef PG_FLIGHT_H
#define PG_FLIGHT_H

#include "mps_util.h"
#include "pg.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* Kinds beyond enum pg_coll_kind's collectives. */
enum { PG_FL_SEND = PG_COLL_KINDS, PG_FL_RECV, PG_FL_KINDS };

enum pg_fl_state { PG_FL_POSTED = 1, PG_FL_DONE, PG_FL_FAILED };

struct pg_flight_rec {
    uint64_t id;     /* 1 + the operations of the group before it */
    uint64_t seq;    /* the group's collective number (the same on every rank) or p2p number */
    uint64_t bytes;  /* the caller's byte count (a receive: its capacity until it completes) */
    uint64_t t_post; /* pg_flight_ticks() when posted */
    int32_t peer;    /* destination, source or root (group rank), -1 for none */
    int32_t status;  /* once ended */
    uint8_t kind;
    uint8_t state;
};

struct pg_flight {
    uint32_t n, pos;  /* records in the ring, and the next one to write */
    uint64_t next_id; /* operations recorded so far */
    uint64_t coll_seq, p2p_seq;
    int nest; /* >0 inside a recorded blocking collective: its inner calls are not recorded */
    int reg;  /* slot in the registry of rings the dump walks, -1 if none was free */
    uint64_t ctx;
    int rank, size;
    struct pg_flight_rec rec[];
};

/* What a recording call returns: its entry, and the id that says the entry is still its
 * own (the ring may have wrapped over it since). rec NULL: not recorded. */
struct pg_flight_op {
    struct pg_flight_rec *rec;
    uint64_t id;
};

/* A cheap clock for the records: the CPU's cycle counter where there is one (one
 * instruction; pg_flight.c converts it to seconds at dump time), else the monotonic clock
 * in nanoseconds. */
static inline uint64_t pg_flight_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* Records an operation posted on g: kind, bytes, peer (or root, -1 for none). */
static inline struct pg_flight_op pg_flight_post(struct pg_group *g, int kind, uint64_t bytes,
                                                 int peer)
{
    struct pg_flight *f = g->flight;
    struct pg_flight_rec *r;

    if (!f || (f->nest > 0 && kind < PG_COLL_KINDS)) {
        return (struct pg_flight_op){NULL, 0};
    }
    /* The id goes last: until then the entry holds the id of the operation it held before,
     * which a dump (pg_flight.c) does not take for this one. */
    r = &f->rec[f->pos];
    f->pos = f->pos + 1 == f->n ? 0 : f->pos + 1;
    r->seq = kind < PG_COLL_KINDS ? f->coll_seq++ : f->p2p_seq++;
    r->bytes = bytes;
    r->t_post = pg_flight_ticks();
    r->peer = peer;
    r->kind = (uint8_t)kind;
    r->state = PG_FL_POSTED;
    r->id = ++f->next_id;
    return (struct pg_flight_op){r, r->id};
}

/* Marks a recorded operation ended with status rc; returns rc. */
static inline int pg_flight_end(struct pg_flight_op op, int rc)
{
    if (op.rec && op.rec->id == op.id) {
        op.rec->status = rc;
        op.rec->state = rc == 0 ? PG_FL_DONE : PG_FL_FAILED;
    }
    return rc;
}

/* pg_req_complete's hook: a recorded nonblocking operation ended. */
static inline void pg_flight_req_end(struct pg_req *req, int status)
{
    struct pg_flight_rec *r = req->fl_rec;

    if (mps_unlikely(r != NULL)) {
        if (r->kind == PG_FL_RECV && r->id == req->fl_id) {
            r->bytes = req->len; /* what arrived, from whom (a wildcard's sender) */
            r->peer = req->source;
        }
        pg_flight_end((struct pg_flight_op){r, req->fl_id}, status);
        req->fl_rec = NULL;
    }
}

/* The ring of a new group (NULL when the recorder is off or memory is short); freed by
 * pg_flight_free when the group goes. */
struct pg_flight *pg_flight_new(const struct pg_group *g);
void pg_flight_free(struct pg_flight *f);
/* Writes every group's ring (stderr or MPISHIM_FLIGHT_RECORDER_FILE), why naming the
 * occasion ("timeout", "fatal error"); skipped when nothing was recorded since the last
 * dump. Async-signal-safe. */
void pg_flight_dump_all(const char *why);
/* Installs the SIGUSR1 dump when the recorder is on and SIGUSR1 has its default action
 * (a program's own handler stays). pg_init calls it. */
void pg_flight_init(void);

/* Hands a nonblocking call's entry to its request (ended by pg_req_complete), or ends it
 * now when the call failed (rc) or already completed; returns rc. */
int pg_flight_attach_slow(struct pg_flight_op op, struct pg_req *req, int rc);

static inline int pg_flight_attach(struct pg_flight_op op, struct pg_req *req, int rc)
{
    /* Done is final: an eager send that completed at once needs no lock. */
    if (rc == 0 && pg_req_is_done(req)) {
        return pg_flight_end(op, req->status);
    }
    return pg_flight_attach_slow(op, req, rc);
}

/* ---- the recorded calls (pg.h and pg_coll2.h document them as their _impl) ---- */

/* A blocking collective's wrapper: with the recorder off, a tail call (the 8-byte fast
 * paths then pay one load and a branch, not a frame around the call). */
#define PG_FLIGHT_BLOCKING(g, kind, bytes, root, call)                                             \
    do {                                                                                           \
        struct pg_flight_op fop_;                                                                  \
        if (mps_likely(!(g)->flight)) {                                                            \
            return call;                                                                           \
        }                                                                                          \
        fop_ = pg_flight_enter(g, kind, bytes, root);                                              \
        return pg_flight_leave(g, fop_, call);                                                     \
    } while (0)

/* The same for a non-blocking call: its entry rides on req. */
#define PG_FLIGHT_NONBLOCKING(g, kind, bytes, peer, req, call)                                     \
    do {                                                                                           \
        struct pg_flight_op fop_;                                                                  \
        if (mps_likely(!(g)->flight)) {                                                            \
            return call;                                                                           \
        }                                                                                          \
        fop_ = pg_flight_post(g, kind, bytes, peer);                                               \
        return fop_.rec ? pg_flight_attach(fop_, req, call) : call;                                \
    } while (0)

int pg_alltoall_impl(struct pg_group *g, const void *in, void *out, size_t bytes);

/* A blocking collective: its inner calls are not recorded again. */
static inline struct pg_flight_op pg_flight_enter(struct pg_group *g, int kind, uint64_t bytes,
                                                  int root)
{
    struct pg_flight_op op = pg_flight_post(g, kind, bytes, root);

    if (op.rec) {
        g->flight->nest++;
    }
    return op;
}

static inline int pg_flight_leave(struct pg_group *g, struct pg_flight_op op, int rc)
{
    if (op.rec) {
        g->flight->nest--;
    }
    return pg_flight_end(op, rc);
}

static inline int pg_isend(struct pg_group *g, const void *buf, size_t len, int dst, int tag,
                           bool sync, struct pg_req *req)
{
    struct pg_flight_op op = pg_flight_post(g, PG_FL_SEND, len, dst);

    if (mps_likely(!op.rec)) {
        return pg_isend_impl(g, buf, len, dst, tag, sync, req);
    }
    req->fl_rec = NULL; /* the fast send path keeps the request's other fields */
    return pg_flight_attach(op, req, pg_isend_impl(g, buf, len, dst, tag, sync, req));
}

static inline int pg_irecv(struct pg_group *g, void *buf, size_t cap, int src, int tag,
                           struct pg_req *req)
{
    PG_FLIGHT_NONBLOCKING(g, PG_FL_RECV, cap, src, req, pg_irecv_impl(g, buf, cap, src, tag, req));
}

static inline bool pg_recv_direct(struct pg_group *g, void *buf, size_t cap, int src, int tag,
                                  struct pg_req *req)
{
    if (!pg_recv_direct_impl(g, buf, cap, src, tag, req)) {
        return false;
    }
    pg_flight_end(pg_flight_post(g, PG_FL_RECV, req->len, src), req->status);
    return true;
}

static inline int pg_ibarrier(struct pg_group *g, struct pg_req *req)
{
    PG_FLIGHT_NONBLOCKING(g, PG_COLL_BARRIER, 0, -1, req, pg_ibarrier_impl(g, req));
}

static inline int pg_ibcast(struct pg_group *g, void *buf, size_t bytes, int root,
                            struct pg_req *req)
{
    PG_FLIGHT_NONBLOCKING(g, PG_COLL_BCAST, bytes, root, req,
                          pg_ibcast_impl(g, buf, bytes, root, req));
}

static inline int pg_ireduce(struct pg_group *g, const void *in, void *out, size_t count,
                             const struct pg_op_spec *op, int root, struct pg_req *req)
{
    PG_FLIGHT_NONBLOCKING(g, PG_COLL_REDUCE, count * op->elem_size, root, req,
                          pg_ireduce_impl(g, in, out, count, op, root, req));
}

static inline int pg_iallreduce(struct pg_group *g, const void *in, void *out, size_t count,
                                const struct pg_op_spec *op, struct pg_req *req)
{
    PG_FLIGHT_NONBLOCKING(g, PG_COLL_ALLREDUCE, count * op->elem_size, -1, req,
                          pg_iallreduce_impl(g, in, out, count, op, req));
}

static inline int pg_iallgather(struct pg_group *g, const void *in, void *out, size_t bytes,
                                struct pg_req *req)
{
    PG_FLIGHT_NONBLOCKING(g, PG_COLL_ALLGATHER, bytes, -1, req,
                          pg_iallgather_impl(g, in, out, bytes, req));
}

static inline int pg_barrier(struct pg_group *g)
{
    PG_FLIGHT_BLOCKING(g, PG_COLL_BARRIER, 0, -1, pg_barrier_impl(g));
}

static inline int pg_bcast(struct pg_group *g, void *buf, size_t bytes, int root)
{
    PG_FLIGHT_BLOCKING(g, PG_COLL_BCAST, bytes, root, pg_bcast_impl(g, buf, bytes, root));
}

static inline int pg_reduce(struct pg_group *g, const void *in, void *out, size_t count,
                            const struct pg_op_spec *op, int root)
{
    PG_FLIGHT_BLOCKING(g, PG_COLL_REDUCE, count * op->elem_size, root,
                       pg_reduce_impl(g, in, out, count, op, root));
}

static inline int pg_allreduce(struct pg_group *g, const void *in, void *out, size_t count,
                               const struct pg_op_spec *op)
{
    PG_FLIGHT_BLOCKING(g, PG_COLL_ALLREDUCE, count * op->elem_size, -1,
                       pg_allreduce_impl(g, in, out, count, op));
}

static inline int pg_allgather(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    PG_FLIGHT_BLOCKING(g, PG_COLL_ALLGATHER, bytes, -1, pg_allgather_impl(g, in, out, bytes));
}

static inline int pg_alltoall(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    PG_FLIGHT_BLOCKING(g, PG_COLL_ALLTOALL, bytes, -1, pg_alltoall_impl(g, in, out, bytes));
}

#endif
