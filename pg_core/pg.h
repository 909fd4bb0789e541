/*
 * pg.h - the process-group core (internal): the world, groups, point-to-point matching,
 * requests, progress, and collective schedules. Both public APIs (MPI in mpi_shim, pgc_ in
 * pg_core/pgc_api.c) are thin translations onto these calls.
 *
 * Locking: when the world was started with thread support (pg_init's mt flag) every
 * entry point below takes the one world lock; internal functions (pg_*_locked) assume it is
 * held. Without it the calls are single-threaded and take no lock.
 *
 * Buffers: a send buffer may be reused once its request completes; a receive buffer holds
 * the data once its request completes. A call that returns an error never completes its
 * request later, and leaves nothing posted.
 */
#ifndef PG_H
#define PG_H

#include "mps_util.h"
#include "pg_dtype.h"
#include "fab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PG_ANY_SOURCE (-2)
#define PG_ANY_TAG (-1)
#define PG_PROC_NULL (-1)
#define PG_TAG_UB ((1 << 30) - 1)

struct pg_group;
struct pg_req;

/* How many of a group's last collectives a rank remembers the signature of (a power of
 * two): a roll call (pg_coll_roll.c) can compare ranks this many collectives apart. */
#define PG_COLL_KEEP 8
struct pg_sched;

typedef void (*pg_req_cb)(struct pg_req *req);

enum pg_req_kind { PG_REQ_SEND, PG_REQ_RECV, PG_REQ_COLL, PG_REQ_NULL };

/* A request: embedded by the caller and set up before its first use, with pg_req_init or,
 * for pg_isend/pg_irecv, just pg_req_no_callback; an operation keeps on_complete/cb_arg
 * that the caller set (a schedule step, an MPI request object). */
struct pg_req {
    enum pg_req_kind kind;
    int done; /* set once by pg_req_complete; read it through pg_req_is_done */
    int status;     /* PGC_OK or the error that ended it */
    int source;     /* receives: the sender's group rank */
    int tag;        /* receives: the matched tag */
    size_t len;     /* receives: bytes that arrived (sends: bytes sent) */
    bool cancelled;
    /* A send that pg_cancel_send may withdraw: how it went (enum pg_withdraw_via, 0 for
     * none), and which PG_WD_* events a withdrawal under way still waits for. */
    uint8_t withdraw_via, withdraw_wait;
    pg_req_cb on_complete; /* optional: called once when done is set */
    void *cb_arg;
    /* matching state of a posted receive, and the rendezvous transfer of both sides */
    uint64_t ctx;
    int match_src, match_tag;
    void *buf;
    size_t cap;
    int peer_world;         /* world rank of the other side (rendezvous) */
    uint64_t rndv_tag;      /* rendezvous: the fabric tag of the data; a synchronous eager
                             * send: the cookie its acknowledgement names (pg_p2p.c) */
    struct mps_list link;   /* posted-receive queue, or pending-send list */
    struct pg_group *g;     /* receives: the group (for a collective's abort) */
    struct pg_flight_rec *fl_rec; /* its flight-recorder entry while pending (pg_flight.h) */
    uint64_t fl_id;
    struct fab_req freq;    /* the fabric transfer of a rendezvous; stays last (pg_req_init
                             * clears only what comes before it) */
};

/* Whether req completed. A thread that does not hold the progress lock (an MPI call
 * waiting for a request that another thread's progress completes) may call it: the
 * acquire pairs with pg_req_complete's release, so once it returns true the request's
 * status and the received data are visible to the caller. */
static inline bool pg_req_is_done(const struct pg_req *req)
{
    return __atomic_load_n(&req->done, __ATOMIC_ACQUIRE) != 0;
}

/* The whole setup a request needs before pg_isend/pg_irecv (which initialise the rest):
 * cheaper than zeroing the whole struct on a small message's path. */
static inline void pg_req_no_callback(struct pg_req *req)
{
    req->on_complete = NULL;
    req->cb_arg = NULL;
    req->fl_rec = NULL;
}

/* A received message that no posted receive took yet (or held by a matched probe). */
struct pg_msg {
    struct mps_list link;
    uint64_t stamp;        /* arrival order among all unexpected messages */
    uint64_t ctx;
    int src, tag;          /* src: group rank of the sender */
    int src_world;
    size_t len;
    uint32_t kind;         /* eager or rendezvous */
    uint64_t rndv_tag;     /* rendezvous: the fabric tag of the data */
    uint64_t sync_id;      /* synchronous send: the sender's cookie to ack, 0 if none */
    struct pg_req *self_send; /* a message from this process to itself: the send request */
    unsigned char *data;   /* eager payload (owned) */
    int pool_class;        /* the free list its block returns to, or -1 (malloc'd to size) */
};

/* A group: a set of world ranks in group-rank order, with its own matching contexts. */
struct pg_group {
    uint64_t ctx;        /* point-to-point context; collectives use ctx | 1 */
    int rank, size;      /* my rank (-1 if not a member) and the size */
    int *ranks;          /* group rank -> world rank */
    uint32_t coll_seq;   /* tag of the next collective, the same on every member */
    int refs;
    void *user;          /* the upper layer's object (an MPI communicator) */
    struct pg_group_dev *dev; /* device (NCCL) state, created lazily */
    int *local_of;       /* world rank -> group rank, or NULL (computed lazily) */
    struct pg_shm *shm;  /* flat shared-memory collectives (pg_coll_shm.c), or NULL */
    struct pg_flight *flight; /* the last operations (pg_flight.h), or NULL when off */
    struct pg_hier *hier; /* node layout and sub-groups (pg_coll_hier.c), computed lazily */
    int poison_next; /* nonzero (the caller's error): the next collective stands in for a
                      * bad buffer (pg_coll_stand_in) */
    /* The roll call (pg_coll_roll.c): the signatures of this rank's last PG_COLL_KEEP
     * collectives on the group, by sequence number, stored as each one starts
     * (pg_coll_tag); the group a node-aware sub-group serves (NULL for others); and the
     * next group in this process's list of live groups. */
    uint16_t coll_sigs[PG_COLL_KEEP];
    struct pg_group *parent;
    struct pg_group *roll_next;
};

/*
 * Poisoned collectives (pg_coll_sig.c). A rank whose buffer for a blocking collective is
 * unusable (NULL with a count) still takes part, so that nobody waits for it until the
 * timeout: the MPI layer gives pg_core zeroed scratch of the right size and calls
 * pg_coll_stand_in (pg_coll_poison_ok first), which marks the collective's signature with
 * PG_COLL_POISON - in its messages' tags and its shared-memory slot. A rank that receives
 * a poisoned message takes it as its match (the data is a stand-in's), poisons its own
 * sends of the same collective in turn, and pg_coll_poison_claim fails its call with
 * PGC_ERR_BUFFER naming the rank it came from; a rank that reads a poisoned slot fails at
 * once. So every rank whose result depends on the bad rank's data fails, whatever the
 * algorithm's shape, and the ranks whose part never touched it (a broadcast's root)
 * succeed. One record per process: the last poisoned collective this rank took part in.
 */
struct pg_abort_note {
    uint32_t theirs, mine; /* the two signatures (pg_coll_sig.c) */
    int32_t found_by, other; /* the group rank that found it, and the one it found */
};
struct pg_poison {
    bool on;      /* a poisoned collective is recorded (atomic: read without the lock) */
    uint64_t ctx; /* its group's collective context */
    uint32_t seq; /* its sequence number (the tag's high bits) */
    int src;      /* the group rank its poison came from (this rank's own when the source) */
};
extern struct pg_poison pg_poison;

/* Whether g's next blocking collective can carry poison: always, except on a node-aware
 * group while a non-blocking collective of this rank on it still has steps to start (the
 * blocking one then runs as a chain of non-blocking steps, which stop at an error; the
 * blocking steps run on poisoned: pg_coll_hier.h). */
bool pg_coll_poison_ok(struct pg_group *g);
/* This rank's next blocking collective on g stands in for a bad buffer (err: the caller's
 * error, nonzero), until pg_coll_stand_in_end, which returns err. */
void pg_coll_stand_in(struct pg_group *g, int err);
int pg_coll_stand_in_end(struct pg_group *g);
/* After a blocking collective on g: PGC_ERR_BUFFER (with its message) when it was poisoned
 * by another rank, else PGC_OK; the record goes either way. A blocking collective takes
 * one sequence number at most, the last one (a poison recorded in a non-blocking
 * collective is for its own wait, and with MPI the ranks of one collective are all
 * blocking or all non-blocking). */
int pg_coll_poison_claim(struct pg_group *g);
static inline bool pg_coll_poison_pending(void)
{
    return __atomic_load_n(&pg_poison.on, __ATOMIC_RELAXED);
}

/* What a reduction does: a built-in op on an element type, or a user function. */
typedef void (*pg_user_op_fn)(const void *in, void *inout, size_t count, void *ctx);
/* The kinds of collective, for their signatures (pg_coll_sig.c). */
enum pg_coll_kind {
    PG_COLL_OTHER,
    PG_COLL_BARRIER,
    PG_COLL_BCAST,
    PG_COLL_REDUCE,
    PG_COLL_ALLREDUCE,
    PG_COLL_ALLGATHER,
    PG_COLL_ALLTOALL,
    PG_COLL_GATHER,
    PG_COLL_GATHERV,
    PG_COLL_SCATTER,
    PG_COLL_SCATTERV,
    PG_COLL_REDUCE_SCATTER,
    PG_COLL_REDUCE_SCATTER_BLOCK,
    PG_COLL_SCAN,
    PG_COLL_EXSCAN,
    PG_COLL_NEIGHBOR,
    PG_COLL_KINDS /* 16 at most: a signature has 4 bits for the kind */
};

struct pg_op_spec {
    enum pg_dtype dt;      /* element type (PG_BYTE with a user op: opaque elements) */
    enum pg_op op;
    size_t elem_size;      /* bytes of one element */
    pg_user_op_fn user_fn; /* non-NULL: a user op (then op is ignored) */
    void *user_ctx;
    bool commutative;
};

/* World */
int pg_init(const char *init_method, int rank, int size, double timeout, bool mt);
int pg_finalize(void);
bool pg_is_initialized(void);
int pg_world_rank(void);
int pg_world_size(void);
int pg_local_rank(void);
int pg_local_size(void);
const char *pg_node_name(void);
const char *pg_boot_method(void);
struct pg_group *pg_world_group(void);
struct pg_group *pg_self_group(void);
void pg_abort(int code, const char *msg);
double pg_timeout(void);
/* Messages in the unexpected queues now, and the most there were at once (MPI_T). */
void pg_unexpected_counts(uint64_t *now, uint64_t *most);
struct boot_store *pg_store(void);

/* Groups */
int pg_group_create(struct pg_group *parent, const int *parent_ranks, int n,
                    struct pg_group **out);
int pg_group_split(struct pg_group *parent, int color, int key, struct pg_group **out);
int pg_group_dup(struct pg_group *parent, struct pg_group **out);
/* A non-blocking dup of n <= PG_IDUP_MAX groups at once (an intercommunicator's three
 * parts): collective over like[0], whose members must include every other like[i]'s.
 * pg_group_idup_start starts the agreement of n context ids, completing req (it keeps the
 * on_complete/cb_arg the caller set), and holds a reference to each like[i] meanwhile.
 * Once req is done: if it succeeded, pg_group_idup_end makes out[i] (PG_IDUP_MAX entries)
 * with like[i]'s members and ranks (or returns an error, out all NULL) and frees d; if it
 * failed, or a wait gave it up, d holds nothing and free(d) is enough. A start that fails leaves nothing. Any number may be in flight, on any
 * parents, beside blocking creations, completing in any order (pg_group.c says why none
 * waits for another). The copy of like[0] gets a shared-memory channel when one is free on
 * every member and no blocking creation there is agreeing its own at that moment. */
#define PG_IDUP_MAX 3
struct pg_idup;
int pg_group_idup_start(struct pg_group *const *like, int n, struct pg_req *req,
                        struct pg_idup **d);
int pg_group_idup_end(struct pg_idup *d, struct pg_group **out);
void pg_group_retain(struct pg_group *g);
void pg_group_release(struct pg_group *g);
/* Group rank of a world rank, or -1. */
int pg_group_rank_of(struct pg_group *g, int world_rank);
/* The process id of group rank r when this process may read and write its memory with
 * process_vm_readv/writev (same node, CMA allowed: the fabric decides, fab_cma_pid), else 0. */
int pg_cma_pid(const struct pg_group *g, int r);

/* Point-to-point on a group (ranks are group ranks; PG_PROC_NULL completes at once). */
int pg_isend_impl(struct pg_group *g, const void *buf, size_t len, int dst, int tag, bool sync,
                  struct pg_req *req);
int pg_irecv_impl(struct pg_group *g, void *buf, size_t cap, int src, int tag, struct pg_req *req);
/* A standard-mode send's fast path, tried before a request is made: PGC_OK when the
 * message went out whole as one eager message copied from buf (a small one to another
 * process, the send then complete: nothing refers to buf or needs waiting for), PG_NOT_NOW
 * when the send needs a request (pg_isend: a large, self, recorded or invalid one), or the
 * error that sending it met. The tag must be valid (0..PG_TAG_UB). */
#define PG_NOT_NOW 1
int pg_send_now(struct pg_group *g, const void *buf, size_t len, int dst, int tag);
/* A blocking receive's fast path, tried before pg_irecv: true when the message from src
 * (not a wildcard) was taken into buf and req completed with its status; false when the
 * caller must post the receive with pg_irecv (req as before for it: nothing was queued).
 * Looks at the sender's ring a bounded number of times (4096, once with threads or more
 * ranks than cores). */
bool pg_recv_direct_impl(struct pg_group *g, void *buf, size_t cap, int src, int tag,
                         struct pg_req *req);
/* Probe: *found set when a matching message is queued; its source, tag and length go
 * into *probe_req (source, tag, len). With take, the message is removed and returned in
 * *msg for pg_mrecv (matched probe). */
int pg_iprobe(struct pg_group *g, int src, int tag, bool take, bool *found,
              struct pg_req *probe_req, struct pg_msg **msg);
int pg_mrecv(struct pg_msg *msg, void *buf, size_t cap, struct pg_req *req);
/* Frees a message taken by pg_iprobe that will not be received. */
void pg_msg_free(struct pg_msg *msg);
/* Cancels a posted receive that has not matched; sets req->cancelled and completes it. */
int pg_cancel_recv(struct pg_req *req);
/* Asks to withdraw a send of pg_isend that has not completed (MPI_Cancel). A message that
 * no receive has matched yet is taken back: the request completes with req->cancelled set
 * and the receiver never sees it. One already matched is kept and its send completes as
 * usual, cancelled not set. Either way the request completes without a receive being
 * posted: once the receiver answered (and, for a rendezvous, once its data transfer ended,
 * which the receiver ends by taking the data into scratch), or at once for a message to
 * this same process. A standard-mode eager send (done when handed to the fabric) and a
 * device send are never withdrawn. PGC_OK, or the error of sending the request (the send
 * then goes on as if never cancelled). */
int pg_cancel_send(struct pg_req *req);

/* Zeroes a request for kind; and completes one (runs on_complete). */
void pg_req_init(struct pg_req *req, enum pg_req_kind kind);
void pg_req_complete(struct pg_req *req, int status);

/*
 * One-sided transfers through libfabric (pg_rma.c, over fabric/fab_rma.h) for the windows of
 * mpi_shim. Ranks are group ranks. pg_rma_reachable: whether a put or get to rank can go as
 * fi_write/fi_read (a peer on the network endpoint, which took FI_RMA). pg_rma_reg registers
 * memory for peers to reach (PGC_ERR_UNSUPPORTED where this process has no FI_RMA or len is
 * 0); pg_rma_dereg undoes it once nothing can reach it. pg_rma_put/pg_rma_get complete req
 * (req->complete, from progress, under the world lock) once the data is in the target's
 * memory or in buf; an error return never completes it.
 */
struct fab_mr;
struct fab_rma_key;
bool pg_rma_reachable(struct pg_group *g, int rank);
size_t pg_rma_max(void);
int pg_rma_reg(void *base, size_t len, struct fab_mr **mr, struct fab_rma_key *key);
void pg_rma_dereg(struct fab_mr *mr);
int pg_rma_put(struct pg_group *g, int rank, const void *buf, size_t len,
               const struct fab_rma_key *key, uint64_t off, struct fab_req *req);
int pg_rma_get(struct pg_group *g, int rank, void *buf, size_t len, const struct fab_rma_key *key,
               uint64_t off, struct fab_req *req);

/* Progress and completion. */
int pg_progress(void);
/* fn runs at the end of every round of progress (after the fabric and the collective
 * schedules, under the world lock), where it may send: unlike a receive's completion
 * callback, which may run inside a fabric drain that a send waiting for ring space would
 * re-enter. One per process (mpi_shim's RMA windows apply their requests there); it returns
 * the number of requests from other ranks it served (>= 0; they restart the timeout of the
 * wait that made this progress, see struct pg_wait_clock) or an error that progress
 * returns. NULL removes it. */
void pg_progress_hook(int (*fn)(void));
/*
 * The timeout rule of every wait (pg_wait_until_locked, and mpi_shim's window waits): a
 * wait fails after MPISHIM_TIMEOUT seconds in which its progress served no request for
 * another rank (the progress hook's count), counted from its start or from the last round
 * that served one. A rank in MPI_Barrier or MPI_Win_fence that applies a stream of one-sided
 * requests is working for a live origin: it must not give up on the barrier while that
 * origin still sends (OSU's bandwidth programs on windows of active messages send for
 * minutes before they reach the barrier). A wait whose peers are dead, or send nothing,
 * still fails after the timeout; a dead process of this node fails it sooner (the liveness
 * checks do not depend on this clock).
 */
struct pg_wait_clock {
    double start;    /* when the wait started, or last served a request */
    uint64_t served; /* the served count then */
};
void pg_wait_clock_start(struct pg_wait_clock *c, double now);
/* Whether timeout seconds passed without a request served, at now; restarts the clock when
 * one was served since the last look. */
bool pg_wait_clock_expired(struct pg_wait_clock *c, double now, double timeout);
bool pg_test(struct pg_req *req);
/* Waits until req completes or timeout seconds (< 0: MPISHIM_TIMEOUT) pass. */
int pg_wait(struct pg_req *req, double timeout);
/* Waits until at least one of reqs (NULL entries skipped) completes; *index gets it. */
int pg_wait_any(struct pg_req **reqs, int n, int *index, double timeout);

/* Collectives: each starts a schedule completing *req (kind PG_REQ_COLL). Counts are in
 * elements of op->elem_size (reductions) or bytes. in == out is in place. */
int pg_ibarrier_impl(struct pg_group *g, struct pg_req *req);
int pg_ibcast_impl(struct pg_group *g, void *buf, size_t bytes, int root, struct pg_req *req);
int pg_ireduce_impl(struct pg_group *g, const void *in, void *out, size_t count,
                    const struct pg_op_spec *op, int root, struct pg_req *req);
int pg_iallreduce_impl(struct pg_group *g, const void *in, void *out, size_t count,
                       const struct pg_op_spec *op, struct pg_req *req);
/* Every rank contributes bytes at in; out receives size * bytes in rank order.
 * in == out + rank * bytes is in place. */
int pg_iallgather_impl(struct pg_group *g, const void *in, void *out, size_t bytes,
                       struct pg_req *req);
/* counts/displs in bytes, one per rank; copied, so the caller may free them at return. */
int pg_iallgatherv(struct pg_group *g, const void *in, size_t inbytes, void *out,
                   const size_t *counts, const size_t *displs, struct pg_req *req);
/* Blocking forms (pg_coll.c chooses their path from what every rank agrees on: the group,
 * the bytes, the op, the root). They never match the non-blocking forms, as in MPI. */
int pg_allgather_impl(struct pg_group *g, const void *in, void *out, size_t bytes);
int pg_barrier_impl(struct pg_group *g);
int pg_bcast_impl(struct pg_group *g, void *buf, size_t bytes, int root);
int pg_reduce_impl(struct pg_group *g, const void *in, void *out, size_t count,
                   const struct pg_op_spec *op, int root);
int pg_allreduce_impl(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op);

/* Blocking small collectives without a schedule (pg_coll_direct.c): the same algorithms
 * and results as the schedule forms, for at most PG_DIRECT_MAX bytes. */
#define PG_DIRECT_MAX 2048
int pg_allreduce_direct(struct pg_group *g, const void *in, void *out, size_t count,
                        const struct pg_op_spec *op);
int pg_bcast_direct(struct pg_group *g, void *buf, size_t bytes, int root);
/* Whether pg_bcast_direct serves a broadcast of bytes on g as the schedule would: at most
 * PG_DIRECT_MAX bytes, or, where the schedule would choose the binomial tree too, up to a
 * rooted collective's eager size from buf (any size on 2 ranks). */
bool pg_bcast_direct_ok(const struct pg_group *g, const void *buf, size_t bytes);
/* Whether pg_ibcast runs the binomial tree for bytes on g (else scatter + allgather). */
bool pg_bcast_binomial_chosen(const struct pg_group *g, size_t bytes);
int pg_reduce_direct(struct pg_group *g, const void *in, void *out, size_t count,
                     const struct pg_op_spec *op, int root);
int pg_barrier_direct(struct pg_group *g);
/* in: size * count elements (at most PG_DIRECT_MAX bytes in all); out: my count of them.
 * A recursive-doubling allreduce and my block of it: for a few bytes, log2(size) rounds
 * beat the size - 1 of the pairwise schedule. */
int pg_reduce_scatter_block_direct(struct pg_group *g, const void *in, void *out, size_t count,
                                   const struct pg_op_spec *op);
/* Equal blocks of at most 8 * PG_DIRECT_MAX bytes in all, on at most PG_DIRECT_RANKS ranks;
 * in may be out + rank * block (in place). */
#define PG_DIRECT_RANKS 16
int pg_allgather_direct(struct pg_group *g, const void *in, void *out, size_t block);
int pg_alltoall_direct(struct pg_group *g, const void *in, void *out, size_t block);

/* in op inout -> inout for a built-in or user op. */
int pg_op_apply(const struct pg_op_spec *op, const void *in, void *inout, size_t count);

/* Each call above named _impl is called through its recording form pg_<name> (pg_isend,
 * pg_allreduce, ...): pg_flight.h. */
#include "pg_flight.h"

#endif
