/*
 * pgc_rpc_internal.h - private to pg_core/pgc_rpc*.c: the RPC agent's state, its wire
 * format, futures and RRef handles.
 *
 * Files: pgc_rpc.c (init, shutdown, the agent and server threads, calls),
 * pgc_rpc_wire.c (values on the wire), pgc_rpc_future.c (futures and value helpers),
 * pgc_rpc_rref.c (remote references and their reference-counting protocol).
 *
 * Locking: rpc.mu guards every table here (pending calls, the server queue, owned objects,
 * handles, dead workers). It is never held across a pg_ call (which takes the progress
 * lock) nor while a future's callbacks run, so the two locks never nest.
 */
#ifndef PGC_RPC_INTERNAL_H
#define PGC_RPC_INTERNAL_H

#include "pg.h"
#include "pgc_rpc.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* Message kinds. Every message is one header message (tag RPC_TAG_HDR) followed, from the
 * same sender, by one message per large tensor (tag hdr.data_tag). */
enum rpc_kind {
    RPC_CALL = 1,     /* run fn, reply to id */
    RPC_REPLY,        /* the answer to id: status, error text or value */
    RPC_REMOTE,       /* run fn, keep the result as object rref_id with fork fork_id */
    RPC_RREF_CALL,    /* run fn on object rref_id, reply to id */
    RPC_TO_HERE,      /* reply to id with a copy of object rref_id */
    RPC_FORK_REQ,     /* to the owner: fork fork_id of rref_id exists, made by parent */
    RPC_CHILD_ACCEPT, /* to a parent: the owner knows the child of your fork parent_fork */
    RPC_DELETE,       /* to the owner: fork fork_id of rref_id is gone */
    RPC_KIND_END
};

#define RPC_MAGIC 0x52504331u
#define RPC_TAG_HDR 1
#define RPC_TAG_DATA0 2 /* data tags count up from here, wrapping below PG_TAG_UB */

struct rpc_hdr {
    uint32_t magic;
    uint16_t kind;
    uint16_t name_len; /* fn name (calls) or error text (replies), no NUL */
    uint64_t id;
    uint64_t rref_id;
    uint64_t fork_id;
    uint64_t parent_fork;
    int32_t status;
    int32_t parent;
    uint64_t nbytes;
    uint32_t ntensors;
    uint32_t nrrefs;
    uint32_t data_tag;
    uint32_t pad;
};

struct rpc_tdesc {
    uint32_t dtype;
    uint32_t separate; /* sent as its own message (zero-copy) instead of inline */
    uint64_t numel;
};

/* How a fork travels (torch's three sharing cases). */
enum rpc_fork_how { FORK_FROM_OWNER, FORK_TO_OWNER, FORK_USER_TO_USER };

struct rpc_rdesc {
    uint64_t rref_id;
    uint64_t fork_id;     /* the receiver's new fork */
    uint64_t parent_fork; /* the sender's fork (user to user) */
    int32_t owner;
    int32_t how;
};

/* ---- futures (pgc_rpc_future.c) ---- */
struct rpc_cb {
    struct rpc_cb *next;
    void (*fn)(pgc_future *f, void *arg);
    void *arg;
};

struct pgc_future {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int state; /* PGC_ERR_PENDING, then the status (read atomically) */
    int refs;
    pgc_rpc_value value;
    char *error;
    struct rpc_cb *cbs, *cbs_tail;
};

/* Completes f with status and text (a copy), or with the value (moved) when status is 0. */
int rpc_future_complete(pgc_future *f, int status, const char *text, pgc_rpc_value *v);
pgc_future *rpc_future_ref(pgc_future *f);

/* ---- RRef handles and owned objects (pgc_rpc_rref.c) ---- */
struct pgc_rref {
    struct mps_list link; /* rpc.handles while live */
    uint64_t rref_id, fork_id;
    int owner;
    int refs;             /* local references (pgc_rref_retain/free) */
    int pending_children; /* forks sent user to user, not yet confirmed by the owner */
    bool released;        /* its fork was given back (or shutdown dropped it) */
    bool linked;
    pgc_future *created;  /* the creating pgc_remote's answer (NULL: not the creator) */
};

enum rpc_early { EARLY_NONE, EARLY_BY_FORK, EARLY_BY_SELF };

struct rpc_owned {
    struct mps_list link;
    uint64_t rref_id;
    uint64_t *forks;
    int nforks, cap;
    int busy;              /* queued calls that use it */
    int early;             /* enum rpc_early: made before its REMOTE request arrived */
    pgc_future *created;   /* completes with the object (value kept in owned.value) */
    pgc_rpc_value value;
};

/* ---- the agent ---- */
struct rpc_pending {
    struct mps_list link;
    uint64_t id;
    int dst;
    double deadline;
    pgc_future *f;
    char fn[PGC_RPC_NAME_MAX];
};

/* A received request, queued for a server thread (or a reply to send later). */
struct rpc_job {
    struct rpc_job *next;
    struct rpc_hdr hdr;
    int src;
    char fn[PGC_RPC_NAME_MAX];
    pgc_rpc_value args;
    struct rpc_owned *obj; /* RREF_CALL, TO_HERE, REMOTE */
    pgc_future *later;     /* async execution: reply when it completes */
};

struct rpc_fn_entry {
    struct rpc_fn_entry *next;
    char name[PGC_RPC_NAME_MAX];
    pgc_rpc_fn fn;
    void *user;
};

struct rpc_state {
    bool up, owns_world;
    int stop; /* atomic: threads end */
    struct pg_group *g;
    int rank, size;
    char (*names)[PGC_RPC_NAME_MAX];
    double timeout;
    pthread_t agent;
    pthread_t *servers;
    int nservers;
    pthread_mutex_t mu;
    pthread_cond_t qcv;
    struct rpc_job *qhead, *qtail;
    int running_jobs;
    struct mps_list pending; /* struct rpc_pending */
    struct mps_list owned;   /* struct rpc_owned */
    struct mps_list handles; /* struct pgc_rref, live */
    int nhandles_zombie;     /* freed by the program, waiting for children's confirmation */
    bool *dead;
    uint64_t next_id;  /* atomic */
    uint32_t next_tag; /* atomic */
    uint64_t sent, received; /* atomic: messages, for shutdown's quiescence test */
    struct rpc_bell *bell;   /* the agent's doorbell (pgc_rpc_bell.c), NULL: none */
    struct rpc_bell **bells; /* every worker's, mapped; NULL: not reachable (another node) */
    /* The receiver's role: whoever holds it takes messages off the fabric and dispatches
     * them, in arrival order. The agent, an idle server thread or a caller waiting for its
     * answer (no thread hop for the reply). Taken with trylock only. */
    pthread_mutex_t rx_mu;
    int qsleepers; /* server threads asleep on qcv (rpc.mu) */
    int queued;    /* requests in the queue: written under rpc.mu, read atomically */
    int waiters;   /* atomic: threads in pgc_future_wait */
    int rx_wanted; /* atomic: threads polling (or trying to) other than the agent */
};

extern struct rpc_state rpc;

/* pgc_rpc.c */
/* "worker 'name' (rank r)" for messages. */
const char *rpc_worker_desc(int rank, char *buf, size_t len);
/* A fresh id for calls, rrefs and forks: unique in the RPC group. */
uint64_t rpc_new_id(void);
/* Sends a header (its tensor/rref counts filled here) with v (may be NULL) to dst. */
int rpc_send(int dst, struct rpc_hdr *h, const char *name, size_t name_len, const pgc_rpc_value *v);
/* Registers a call to dst awaiting a reply to id: completes f. */
int rpc_pending_add(uint64_t id, int dst, const char *fn, double timeout, pgc_future *f);
void rpc_pending_drop(uint64_t id);
double rpc_timeout_of(double timeout);
int rpc_check_up(const char *call);
int rpc_dst_of(const char *call, const char *to, int *dst);
/* Starts a request shaped like h (kind, rref and fork ids) to dst: *out gets its future. */
int rpc_call(const char *call, int dst, const struct rpc_hdr *h, const char *fn,
             const pgc_rpc_value *args, double timeout, pgc_future **out);
/* Waits for f without a limit of its own (the call's timeout fails it), moves its value to
 * result (may be NULL) and frees f. */
int rpc_wait_take(pgc_future *f, pgc_rpc_value *result);

/* pgc_rpc_wire.c */
/* Packs h, name and v into one buffer plus the list of separate tensors: small (small_len
 * bytes) when the message fits, else one it allocates (*buf != small: free it). */
int rpc_wire_pack(struct rpc_hdr *h, const char *name, size_t name_len, const pgc_rpc_value *v,
                  const struct rpc_rdesc *rd, void *small, size_t small_len, void **buf,
                  size_t *len);
/* Receives the header message msg (len bytes from src) and its separate tensors. */
int rpc_wire_unpack(int src, void *buf, size_t len, struct rpc_hdr *h, char *name, size_t name_cap,
                    pgc_rpc_value *v);
int rpc_value_copy(const pgc_rpc_value *in, pgc_rpc_value *out);

/* pgc_rpc_rref.c */
/* Makes the fork that carries r to dst (before it is sent). */
int rpc_rref_fork_out(pgc_rref *r, int dst, struct rpc_rdesc *d);
/* Undoes rpc_rref_fork_out after a send that failed. */
void rpc_rref_fork_undo(pgc_rref *r, const struct rpc_rdesc *d);
/* The handle a received fork becomes (agent thread): registers it as the protocol says. */
pgc_rref *rpc_rref_fork_in(int src, const struct rpc_rdesc *d);
/* The agent's handlers of the RRef control messages. */
void rpc_rref_on_fork_req(int src, const struct rpc_hdr *h);
void rpc_rref_on_child_accept(const struct rpc_hdr *h);
void rpc_rref_on_delete(const struct rpc_hdr *h);
/* REMOTE arrived: the object, with its creator's fork, exists from now on. */
struct rpc_owned *rpc_owned_create(const struct rpc_hdr *h);
/* The object of rref_id with one more busy reference, or NULL. */
struct rpc_owned *rpc_owned_get(uint64_t rref_id);
void rpc_owned_put(struct rpc_owned *o);
/* Shutdown: gives back every handle's fork; the counts for quiescence. */
void rpc_rref_release_all(void);
int rpc_rref_busy_count(void);
/* pgc_rpc_bell.c: the agent's doorbell, a futex in shared memory that senders on this node
 * ring. rpc_bell_arm announces a sleep and returns the word to sleep on; the agent then
 * probes once more and either disarms (a message came) or sleeps. */
enum rpc_bell_state {
    BELL_AWAKE,  /* the agent polls: a ring does nothing */
    BELL_PARKED, /* another thread of the worker polls: only it wakes the agent when it stops */
    BELL_ASLEEP  /* nobody polls: every ring wakes the agent */
};
int rpc_bell_open(void);
void rpc_bell_close(void);
/* After a message to dst was handed to the transport. Never blocks. */
void rpc_bell_ring(int dst);
/* A thread that polled as the receiver stopped: a parked agent takes over. */
void rpc_bell_ring_self(void);
uint32_t rpc_bell_arm(uint32_t how);
void rpc_bell_disarm(void);
/* Sleeps until a ring (unless one came since rpc_bell_arm) or for at most seconds. */
void rpc_bell_sleep(uint32_t word, double seconds);
/* pgc_rpc.c: a thread that waits for f receives while it waits (when no other thread does),
 * for at most limit seconds or the default bound, whichever is less (limit <= 0: the
 * default). Whether f completed; false at once while RPC is down. Between
 * rpc_waiter_enter (true: counted) and rpc_waiter_leave the thread counts as waiting for a
 * future: a receiver that stops then wakes the agent, which completes it. */
bool rpc_waiter_enter(void);
void rpc_waiter_leave(void);
bool rpc_receive_while_pending(pgc_future *f, double limit);
/* Objects made, deleted by the protocol and dropped by shutdown since the process started. */
void rpc_rref_lifetime_counts(long *made, long *deleted, long *dropped);
/* After the threads stopped: frees what is left. */
void rpc_rref_fini(void);

#endif
