/*
 * pg_internal.h - state shared by the pg_core files: the world singleton (the wire
 * header is pg_wire.h's), the lock, and the functions the files call in each other.
 */
#ifndef PG_INTERNAL_H
#define PG_INTERNAL_H

#include "fab_heap.h"
#include "pg.h"
#include "pg_flight.h"
#include "pg_wire.h"
#include "pgc_status.h"

#include <pthread.h>

struct boot;

/* A deferred action: work the AM handler found but may not do itself (it must not send or
 * post from inside the fabric's completion dispatch). */
/* A message progress sends once the handlers are done: a synchronous send's
 * acknowledgement, or (abort) a collective abort notice on ctx with tag. */
struct pg_ack {
    struct mps_list link;
    int peer_world;
    uint64_t sync_id;
    int status; /* an ack: PGC_OK, or why the receiver lost the message (it fails the send) */
    bool abort;
    uint64_t ctx;
    int src, tag;
    struct pg_abort_note note;
};

#define PG_MSG_CLASSES 7

struct pg_world {
    bool initialized;
    bool mt;
    pthread_mutex_t lock;
    struct boot *boot;
    struct fab *fab; /* NULL for a world of one */
    int rank, size;
    int spin_count;
    /* Waits sleep on the fabric's wait fd (MPISHIM_NET_SLEEP, pg_progress.c): every peer is
     * reached through one socket provider and one thread calls in. spin_count is then 1, so
     * that every idle poll reaches the sleep decision, and net_spin_count holds the polls
     * before a yield. */
    bool net_sleep;
    int net_spin_count;
    double net_spin;     /* MPISHIM_NET_SPIN_US in seconds */
    int net_cpus;        /* CPUs online: above one more runnable task, waits do not poll */
    bool oversubscribed; /* more ranks than usable cores on some node (agreed at init) */
    double timeout;
    size_t eager_max;
    size_t rooted_eager_max; /* MPISHIM_ROOTED_EAGER_MAX, at most eager_max */
    size_t net_zcopy_min; /* MPISHIM_NET_ZCOPY_MIN, SIZE_MAX when 0 (never) */
    uint32_t rndv_seq;
    uint64_t next_ctx;    /* the lowest even context id not used by a group of mine */
    uint64_t next_nb_ctx; /* the same among the odd ids, which non-blocking creations take */
    struct pg_group *world, *self;
    struct mps_list posted;     /* posted receives (struct pg_req via link) */
    /* Unexpected messages (struct pg_msg via link), a queue per sending world rank in
     * arrival order, which is all the order MPI asks for: a receive from a named rank
     * searches that rank's queue alone, however far other senders ran ahead (a reduce's
     * root, 4 ranks on 2 cores: 8 B 2.0 -> 0.9 us, when one queue held them all); a
     * receive from any source takes the oldest match over its group's queues by arrival
     * stamp. */
    struct mps_list *unexpected; /* [size] */
    uint64_t unexp_stamp;        /* the last arrival stamp given */
    size_t unexp_count;          /* messages in all the queues */
    size_t unexp_max;            /* the most there were at once (an MPI_T variable) */
    struct pg_msg *msg_pool[PG_MSG_CLASSES]; /* free unexpected-message blocks (pg_p2p.c) */
    int msg_pool_n[PG_MSG_CLASSES];
    struct mps_list rndv_todo;  /* matched rendezvous receives to post (pg_req via link) */
    struct mps_list acks;       /* struct pg_ack to send */
    struct mps_list scheds;     /* active collective schedules */
    struct mps_list sync_sends; /* synchronous eager sends waiting for their ack */
};

extern struct pg_world pg_w;

#define PG_LOCK()                                                                                  \
    do {                                                                                           \
        if (pg_w.mt) {                                                                             \
            pthread_mutex_lock(&pg_w.lock);                                                        \
        }                                                                                          \
    } while (0)
#define PG_UNLOCK()                                                                                \
    do {                                                                                           \
        if (pg_w.mt) {                                                                             \
            pthread_mutex_unlock(&pg_w.lock);                                                      \
        }                                                                                          \
    } while (0)

/* The progress thread of MPISHIM_ASYNC_PROGRESS=1 (pg_async.c): started by pg_init once the
 * world is up, with pg_w.mt on; stopped and joined by world_close before the fabric closes
 * (a no-op when none runs). */
int pg_async_start(void);
void pg_async_stop(void);

/* Group context ids stay below this; pg_group_sub.c's temporary ids lie between it and
 * twice it, so that the wire's 32-bit ctx holds both contexts of every group
 * (pg_wire_hdr). */
#define PG_CTX_LIMIT (UINT64_C(1) << 30)

/* ---- collective signatures (pg_coll_sig.c) ---- */
/* A collective message's tag: the group's sequence number in the high PG_COLL_SEQ_BITS,
 * the signature in the low PG_COLL_SIG_BITS (together PG_TAG_UB's 30 bits). */
#define PG_COLL_SIG_BITS 13
#define PG_COLL_SEQ_BITS 17
/* The signature bit of a poisoned collective (pg.h, pg_coll_stand_in). */
#define PG_COLL_POISON (1u << 12)
/* The signature of a collective abort notice (pg_p2p.c): no collective has it (a neighbour
 * collective has no op). */
#define PG_COLL_ABORT (PG_COLL_POISON | 0xfffu)
/* The roll call's control messages (pg_coll_roll.c), outside every collective's signature
 * too (no neighbour collective has an op): a question "which collective of this group are
 * you in", and an abort notice sent to the one rank that asked, which passes it on to the
 * rest of its group. */
#define PG_COLL_ROLL (PG_COLL_POISON | 0xffeu)
#define PG_COLL_ABORT_ONE (PG_COLL_POISON | 0xffdu)
/* The device roll call (pg_device.c): a NCCL collective cannot say which rank has not joined
 * it, so its wait, once it lasts, asks every other member "how many of this group's device
 * collectives have you started"; the answer carries the count (its note's `mine`). */
#define PG_COLL_DEV_ASK (PG_COLL_POISON | 0xffcu)
#define PG_COLL_DEV_COUNT (PG_COLL_POISON | 0xffbu)
/* The lowest control signature: every tag of a collective context from here up is one. */
#define PG_COLL_CONTROL_MIN PG_COLL_DEV_COUNT
/* The signature of a collective: op may be NULL, root < 0 for none. */
uint32_t pg_coll_sig(enum pg_coll_kind kind, const struct pg_op_spec *op, int root);
/* pg_coll_sig, poisoned when this rank stands in for a bad buffer (pg_coll_stand_in). */
static inline uint32_t pg_coll_sig_of(const struct pg_group *g, enum pg_coll_kind kind,
                                      const struct pg_op_spec *op, int root)
{
    return pg_coll_sig(kind, op, root) | (g->poison_next ? PG_COLL_POISON : 0);
}
/* A collective kind's name for messages ("allreduce"), "?" for none. */
const char *pg_coll_kind_name(unsigned kind);
/* Records, with both sides named, that group rank `rank` sent theirs where this rank runs
 * mine; returns PGC_ERR_MISMATCH (PGC_ERR_BUFFER where only the poison bit differs). */
int pg_coll_mismatch(int rank, uint32_t theirs, uint32_t mine);
/* The error of a collective aborted by another rank's notice (pg_p2p.c). */
int pg_coll_aborted(const struct pg_abort_note *n);
/* Records the abort of collective seq on ctx (note says why); false if it already was. */
bool pg_coll_abort_note(uint64_t ctx, uint32_t seq, const struct pg_abort_note *n);
/* The group of context ctx is gone: the records of its collectives go too (with the
 * world lock). Not when one comes: context ids are never reused (pg_group.c), and an abort
 * notice may arrive before this rank has created the group it is for. */
void pg_coll_poison_forget(uint64_t ctx);
/* The collectives aborted lately (pg_p2p.c), a few: a late notice of an older one must
 * not push out the record of the current one. ctx 0 marks a free entry. */
#define PG_ABORTS 8
struct pg_abort_rec {
    uint64_t ctx;
    uint32_t seq;
    struct pg_abort_note note;
};
struct pg_aborts {
    unsigned n; /* records ever made (atomic: read without the lock); entry n % PG_ABORTS next */
    struct pg_abort_rec rec[PG_ABORTS];
};
extern struct pg_aborts pg_aborts;
const struct pg_abort_note *pg_coll_abort_find(uint64_t ctx, uint32_t seq);
/* Whether collective seq on ctx was aborted (and then its note). */
static inline const struct pg_abort_note *pg_coll_abort_of(uint64_t ctx, uint32_t seq)
{
    if (mps_likely(__atomic_load_n(&pg_aborts.n, __ATOMIC_RELAXED) == 0)) {
        return NULL;
    }
    return pg_coll_abort_find(ctx, seq);
}

/* Takes the group's next collective sequence number: the tag of its messages. Every
 * collective takes one as it starts, whatever its path (messages, shared memory, the
 * node-aware steps), and records its signature for the roll call (pg_coll_roll.c): the
 * entry record, a store. */
static inline int pg_coll_tag(struct pg_group *g, uint32_t sig)
{
    uint32_t seq = g->coll_seq++ & ((1u << PG_COLL_SEQ_BITS) - 1);

    g->coll_sigs[seq & (PG_COLL_KEEP - 1)] = (uint16_t)sig; /* its poison bit off when read */
    return (int)(seq << PG_COLL_SIG_BITS | (sig & ((1u << PG_COLL_SIG_BITS) - 1)));
}

/* Whether two tags of one collective differ only in the poison bit: the message is
 * delivered (its data is a stand-in's) and the collective fails at its end. */
static inline bool pg_coll_tags_poisoned(int a, int b)
{
    return (unsigned)(a ^ b) == PG_COLL_POISON;
}

/* A message of a poisoned collective arrived from group rank src (pg_coll_sig.c). */
void pg_coll_poison_note(uint64_t ctx, int tag, int src);

/* A collective send's tag: poisoned once the collective is (so the poison travels on to
 * the ranks that read this rank's data), or where this rank stands in (pg_coll_stand_in
 * records its next collective's sequence number). */
static inline int pg_coll_send_tag(uint64_t ctx, int tag)
{
    if (mps_unlikely(__atomic_load_n(&pg_poison.on, __ATOMIC_RELAXED)) &&
        ctx == pg_poison.ctx && (uint32_t)tag >> PG_COLL_SIG_BITS == pg_poison.seq) {
        return tag | (int)PG_COLL_POISON;
    }
    return tag;
}

/* Whether two collective tags are the same collective (sequence number) with different
 * signatures. */
static inline bool pg_coll_tags_clash(int a, int b)
{
    return a != b && a >> PG_COLL_SIG_BITS == b >> PG_COLL_SIG_BITS;
}

static inline uint64_t pg_ctx_p2p(const struct pg_group *g)
{
    return g->ctx << 1;
}

static inline uint64_t pg_ctx_coll(const struct pg_group *g)
{
    return (g->ctx << 1) | 1;
}

static inline bool pg_ctx_is_coll(uint64_t ctx)
{
    return ctx & 1;
}

/* pg_p2p.c */
enum fab_am_result pg_am_handler(void *arg, int peer, const void *buf, size_t len,
                                 bool may_defer);
/* pg_isend_ctx's flags. PG_SEND_ROOTED marks the sends of a rooted collective (bcast,
 * reduce, gather, scatter), whose senders run ahead of their receivers: every message then
 * arrives unexpected and costs a second copy when eager. From a buffer in the shared heap,
 * where the rendezvous is one memcpy by the receiver, such sends are therefore eager only
 * up to MPISHIM_ROOTED_EAGER_MAX (pg_w.rooted_eager_max, 16 KiB; with a core per rank
 * fab_eager_fits's smaller limit for collectives applies first). bench/ab, 10-12 rounds,
 * 2026-11-23, 4 ranks on 2 cores: eager against rendezvous at 32 KiB from the heap, bcast
 * 1.25x and reduce 1.58x the time; at 16 KiB rendezvous 2x. From other buffers the
 * rendezvous is process_vm_readv, and eager up to MPISHIM_EAGER_MAX wins (against 34d0fd7,
 * which stopped at 16 KiB): at 24-32 KiB bcast 0.60-0.77 (2 ranks) and 0.62-0.71 (4 ranks)
 * of the time, reduce 0.59-0.62 (2 ranks). */
#define PG_SEND_SYNC 1u
#define PG_SEND_ROOTED 2u

/* The largest message sent eagerly from buf with these pg_isend_ctx flags, to a peer whose
 * fabric path takes it whole (fab_eager_fits may refuse smaller ones). */
static inline size_t pg_eager_max(unsigned flags, const void *buf)
{
    return (flags & PG_SEND_ROOTED) && fab_heap_owns(buf) ? pg_w.rooted_eager_max
                                                          : pg_w.eager_max;
}

int pg_isend_ctx(struct pg_group *g, uint64_t ctx, const void *buf, size_t len, int dst, int tag,
                 unsigned flags, struct pg_req *req);
int pg_irecv_ctx(struct pg_group *g, uint64_t ctx, void *buf, size_t cap, int src, int tag,
                 struct pg_req *req);
int pg_p2p_flush_deferred(void);
/* The unexpected queues of a world of pg_w.size ranks, and their end (with every message
 * still in them and the message pools). */
int pg_p2p_init(void);
void pg_p2p_fini(void);
/* PGC_OK, or PGC_ERR_NOMEM (with its message) once this rank had to lose an acknowledgement
 * or a message with no reserve left to keep it (see "No silent drops" in pg_p2p.c): every
 * wait then fails rather than wait for what will not come. */
int pg_p2p_health(void);
/* Removes a posted, unmatched receive (used on timeouts and cancel). */
bool pg_unpost_recv(struct pg_req *req);

/* pg_progress.c */
int pg_progress_locked(void);
int pg_wait_locked(struct pg_req *req, double timeout);
/* Progresses as a wait does until ready(arg) holds: PGC_OK, or PGC_ERR_TIMEOUT with no
 * message after timeout seconds (< 0: MPISHIM_TIMEOUT), the caller knowing what it awaited. */
int pg_wait_until_locked(bool (*ready)(void *arg), void *arg, double timeout);
struct pg_awaited;
/* What a collective's wait waits for (pg_coll_roll.c), asked of the wait's own arg (that of
 * its ready function: nothing to build on the fast path): fills a (false: nothing known) and
 * says in *may_fail whether the wait may end early on an abort (not while a rendezvous
 * transfer of its request is in the fabric, which must find the request alive: such a wait
 * only asks, and lasts until the transfer ends). */
typedef bool (*pg_wait_who_fn)(void *arg, struct pg_awaited *a, bool *may_fail);
/* pg_wait_until_locked for a collective: a wait that lasts holds a roll call among the ranks
 * it waits for (pg_coll_roll.c), and ends with the error of the collective's abort or
 * mismatch once one is known here. */
int pg_wait_coll_locked(bool (*ready)(void *arg), void *arg, double timeout, pg_wait_who_fn who);
/* A pg_wait_who_fn for a request (arg): what pg_req_awaited says of it, where it may end
 * early. */
bool pg_req_who(void *arg, struct pg_awaited *a, bool *may_fail);

/* pg_await.c: what a wait that timed out waited for, worked out only then (the waits
 * themselves record nothing for it). */
#define PG_AWAITED_SHOWN 4
struct pg_awaited {
    char what[32]; /* the collective: "allreduce" */
    char who[128]; /* "rank 2", "ranks 1, 2 and 5" (ranks of the collective's group) */
    char how[384]; /* "step 5 of 7 of recursive doubling: a receive of 8 B from rank 2" */
    /* Where who lists ranks (pg_awaited_ranks): the context id of their group, how many it
     * names (0: who is prose), and the first of them, those that who shows. A node-aware
     * collective reads them to name the ranks of its own group (pg_coll_hier.c). */
    uint64_t ctx;
    int nranks;
    int ranks[PG_AWAITED_SHOWN + 1];
    /* The collective waited for, for the roll call (pg_coll_roll.c): its group (whose ranks
     * `ranks` are) and sequence number; g NULL where unknown. */
    struct pg_group *g;
    uint32_t seq; /* PG_ROLL_NO_SEQ: a message outside g's collectives (pg_req_who) */
    /* seq is g's device collective number (a NCCL call, pg_device.c): the roll call asks
     * every other member how many it has started (pg_dev_roll_ask) instead. */
    bool device;
};
#define PG_ROLL_NO_SEQ UINT32_MAX
/* Writes ranks[0..n), group ranks in increasing order without repeats, as "rank 3",
 * "ranks 1, 2 and 5" or, past PG_AWAITED_SHOWN + 1, "ranks 0, 1, 2, 3 and 12 more" (so only
 * the first PG_AWAITED_SHOWN + 1 are read). */
void pg_ranks_str(const int *ranks, int n, char *buf, size_t len);
/* a->who = ranks[0..n) of the group whose context id is ctx (as pg_ranks_str), and the
 * ranks kept in a as numbers. */
void pg_awaited_ranks(struct pg_awaited *a, uint64_t ctx, const int *ranks, int n);
/* The account of the last wait of this thread that timed out, kept by the wait that wrote
 * its message (pg_awaited_keep), so that a blocking node-aware collective whose step timed
 * out can name the ranks of its own group: pg_awaited_kept gives it (and forgets it) if it
 * names ranks of sub. Both only on a timeout's path. */
void pg_awaited_keep(const struct pg_awaited *a);
bool pg_awaited_kept(const struct pg_group *sub, struct pg_awaited *a);
/* What req, not completed, waits for: a collective's schedule, or one message of a
 * collective run without one (pg_coll_direct.c); false when req is neither. */
bool pg_req_awaited(const struct pg_req *req, struct pg_awaited *a);
/* pg_coll_direct.c: the algorithm its collective of kind (enum pg_coll_kind) runs. */
const char *pg_direct_algo(unsigned kind);

/* pg_coll_roll.c: the roll call. A wait of a collective that lasts asks the ranks it waits
 * for which collective of the group they are in (pg_roll_ask, a control message per rank);
 * a rank that entered that sequence number with another signature, or aborted it, answers
 * with an abort notice (pg_p2p.c), and every member fails at once. */
/* Seconds a collective's wait lasts before its first look (questions, aborts, the device
 * roll call's clock): a legal program's collectives mostly end sooner. */
#define PG_ROLL_AFTER 0.2
/* Adds g to this process's live groups (pg_group_new), and takes it out (pg_group_release),
 * keeping its last signatures a while: a rank that freed a group still answers for it. */
void pg_roll_add(struct pg_group *g);
void pg_roll_remove(struct pg_group *g);
/* The live group of collective context ctx, or NULL. */
struct pg_group *pg_roll_group(uint64_t ctx);
/* Whether this rank freed the group of collective context ctx lately. */
bool pg_roll_freed(uint64_t ctx);
/* Whether this rank entered collective seq of the group of collective context ctx (live or
 * lately freed), and then its signature there and its rank in that group. */
bool pg_roll_entered(uint64_t ctx, uint32_t seq, uint32_t *sig, int *rank);
/* The wait's look (pg_wait_coll_locked): the error of an abort of the collective a waits for
 * (or of the node-aware collective it is a step of), else PGC_OK; with ask, sends the
 * questions. */
int pg_roll_look(const struct pg_awaited *a, bool ask);
/* pg_p2p.c: sends the question about collective seq (signature sig) of g to the world
 * ranks world[0..n) (members of g). */
void pg_roll_ask(struct pg_group *g, uint32_t seq, uint32_t sig, const int *world, int n);
/* pg_p2p.c: asks every other member of g how many of g's device collectives it has started
 * (PG_COLL_DEV_ASK; the answers reach pg_dev_heard). */
void pg_roll_ask_device(struct pg_group *g);
/* Records here the abort of collective seq on ctx (n says why), as a notice would: its
 * posted receives fail and its messages are taken and dropped. */
void pg_coll_abort_local(uint64_t ctx, uint32_t seq, const struct pg_abort_note *n);
/* Whether the receive req is still posted (not matched). */
bool pg_recv_posted(const struct pg_req *req);

/* pg_sched.c */
int pg_sched_progress(void);
/* A collective whose waiter gave up: it runs on but completes no request. */
void pg_sched_detach(struct pg_req *req);
/* Whether the schedule completing req has a send started and not done, or a receive
 * matched and not done: the fabric still reads or writes its buffer (often the caller's),
 * so a roll call's abort must not end the collective before it (pg_req_who). */
bool pg_sched_sending(const struct pg_req *req);

/* pg_coll.c: whether MPISHIM_COLL_ALLREDUCE forces g's allreduce off recursive doubling;
 * if so it runs it (lock held; *rc the result). pg_allreduce_direct asks it. */
bool pg_allreduce_forced(struct pg_group *g, const void *in, void *out, size_t count,
                         const struct pg_op_spec *op, int *rc);
/* pg_coll.c: argument checks shared by every collective entry point */
int pg_check_root(const struct pg_group *g, int root);
/* The error for an op not defined on its type (out of line: pg_check_op's cold half). */
int pg_op_invalid(const struct pg_op_spec *op);
/* Inline: every reduction's fast path checks its op. */
static inline int pg_check_op(const struct pg_op_spec *op)
{
    return op->user_fn || pg_op_valid(op->op, op->dt) ? PGC_OK : pg_op_invalid(op);
}

/* pg_group.c */
/* chan: the group's shared-memory channel (pg_coll_shm.c), -1 for none. */
int pg_group_new(uint64_t ctx, int chan, int rank, int size, const int *world_ranks,
                 struct pg_group **out);
/* Collective over `over`: the context id of a group being created (the largest next_ctx)
 * and its shared-memory channel (the lowest that no participant holds, or -1), both
 * claimed in this process until pg_ids_release(chan), which the caller makes once it has
 * made the group (pg_group_new) or decided not to. */
int pg_agree_ids(struct pg_group *over, uint64_t *ctx, int *chan);
void pg_ids_release(int chan);

/* pg_coll_shm.c: flat shared-memory collectives of at most PG_SHM_MAX bytes on groups whose
 * members share this node; each such group holds one of PG_SHM_CHANNELS channels. */
#define PG_SHM_CHANNELS 16
#define PG_SHM_MAX PG_DIRECT_MAX
/* Channels this process holds (bit c), channel 0 (the world's) always. */
uint32_t pg_shm_busy(void);
/* The lowest channel free in busy (the participants' masks or'ed), or -1. */
int pg_shm_pick(uint32_t busy);
/* Reserves chan (> 0) for a group being created: false if a group of this process holds it
 * or another creation reserved it. pg_shm_unclaim ends the reservation (after attaching).
 * World lock held for both, and for pg_shm_busy. */
bool pg_shm_claim(int chan);
void pg_shm_unclaim(int chan);
/* Gives g channel chan (agreed by every member; -1: none) if all its members share this
 * node's rings; pg_shm_detach gives it back when g is freed. */
int pg_shm_attach(struct pg_group *g, int chan);
void pg_shm_detach(struct pg_group *g);
/* Forgets every channel (a new world). */
void pg_shm_reset(void);
/* Whether a collective of bytes on g takes the flat path (measured choices: see there). */
enum pg_shm_coll { PG_SHM_ALLREDUCE, PG_SHM_BCAST, PG_SHM_BARRIER };
bool pg_shm_usable(const struct pg_group *g, enum pg_shm_coll coll, size_t bytes);
/* The collectives, with the lock held; the caller checked the arguments. */
int pg_allreduce_shm(struct pg_group *g, const void *in, void *out, size_t count,
                     const struct pg_op_spec *op);
int pg_bcast_shm(struct pg_group *g, void *buf, size_t bytes, int root);
int pg_barrier_shm(struct pg_group *g);
/* The non-blocking form: the schedule's only step runs coll on the flat path (in: the
 * allreduce's input; out: its output, or the bcast's buffer; count: the allreduce's elements
 * with the schedule's op, or the bcast's bytes). Every rank may run either form. */
struct pg_sched;
void pg_shm_sched(struct pg_sched *s, enum pg_shm_coll coll, const void *in, void *out,
                  size_t count, int root);

#endif
