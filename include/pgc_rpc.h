/*
 * pgc_rpc.h - remote procedure calls, remote references and futures in plain C: the
 * torch.distributed.rpc model (init_rpc, rpc_sync, rpc_async, remote, RRef, Future) for C
 * programs. doc/torch-distributed.md maps every torch call to the one here.
 *
 * Workers: every process of the RPC group calls pgc_rpc_init with a unique name; the names
 * are exchanged there, so a call names its destination by worker name
 * (pgc_rpc_get_worker_info gives name <-> rank). The RPC agent owns a process group of its
 * own (a duplicate of the world, with its own matching context), so its messages never
 * match the program's own pgc_ or MPI traffic: a process may use both at once.
 *
 * Functions: a function is called by name. Every worker that may serve it registers it
 * with pgc_rpc_register (before or after pgc_rpc_init); a call of a name the callee does not
 * know fails the caller's future with a message naming the worker and the function.
 *
 * Values: arguments and results are a pgc_rpc_value: bytes, host tensors and RRefs.
 *
 * Threads: each worker runs one agent thread that receives every message (requests go to a
 * pool of server threads that run the functions; replies complete the callers' futures
 * there) and num_server_threads server threads. Every call below may be made from any
 * thread, including from inside a function that serves an RPC (nested RPCs).
 *
 * Status: calls return PGC_OK or a negative PGC_ERR_* code; the message
 * (pgc_last_error()) names the call, the worker and the cause. A call that fails started
 * nothing: no future or RRef is returned (the pointer is set to NULL).
 */
#ifndef PGC_RPC_H
#define PGC_RPC_H

#include "pgc.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

typedef struct pgc_future pgc_future;
typedef struct pgc_rref pgc_rref;

/* ---------------------------------------------------------------------------------------
 * Values: what a function receives and returns.
 *
 * A value given to a call (args) is read during the call only: the call returns once
 * every byte has been sent (or copied), so the caller may reuse or free it at once. A value
 * that the library hands out (a result, a function's arguments) owns its memory: bytes,
 * the tensors array and each tensor's data are separate malloc() blocks, and rrefs holds
 * references; pgc_rpc_value_free releases all of it. A function fills its result the same
 * way (malloc'd fields, or the helpers below) and the library frees it after sending.
 * Tensors are host tensors (PGC_DEVICE_HOST).
 */
typedef struct {
    void *bytes;
    size_t nbytes;
    pgc_tensor *tensors;
    int ntensors;
    pgc_rref **rrefs;
    int nrrefs;
} pgc_rpc_value;

/* Copies n bytes into v->bytes (replacing what was there). */
int pgc_rpc_value_set_bytes(pgc_rpc_value *v, const void *data, size_t n);
/* Appends a copy of the tensor t (its data is copied). */
int pgc_rpc_value_add_tensor(pgc_rpc_value *v, const pgc_tensor *t);
/* Appends a new reference to r (r itself stays the caller's). */
int pgc_rpc_value_add_rref(pgc_rpc_value *v, pgc_rref *r);
/* Frees what v owns and zeroes it; a zeroed value is valid and empty. */
void pgc_rpc_value_free(pgc_rpc_value *v);

/* ---------------------------------------------------------------------------------------
 * Functions.
 */

/* What a function sees. args: its arguments (owned by the library until the function's
 * result is sent). self: for a call on an RRef (pgc_rref_rpc_*), the referenced object at
 * its owner, which the function may read and modify in place; NULL otherwise. ret: the
 * result to fill (zeroed on entry). async_result: set it to a future (pgc_future_new, or
 * one from pgc_rpc_async) to answer later: the reply is sent when that future completes,
 * with its value or error (torch's @rpc.functions.async_execution); the library takes the
 * reference passed in. */
typedef struct pgc_rpc_call {
    const pgc_rpc_value *args;
    pgc_rpc_value *self;
    pgc_rpc_value ret;
    pgc_future *async_result;
    const char *fn_name;
    const char *caller_name;
    int caller;
    void *user; /* the pointer given to pgc_rpc_register */
} pgc_rpc_call;

/* Returns PGC_OK, or an error (then the caller's future fails with the text given to
 * pgc_rpc_call_fail, or the status name). Runs on a server thread of the callee. */
typedef int (*pgc_rpc_fn)(pgc_rpc_call *call);

/* Registers fn under name (at most 63 bytes) on this worker; a second registration of a
 * name replaces the first. user is passed to every call. */
int pgc_rpc_register(const char *name, pgc_rpc_fn fn, void *user);
/* In a function: records why it failed (sent to the caller) and returns
 * PGC_ERR_INVALID_ARG, for `return pgc_rpc_call_fail(call, "n=%d", n);`. */
int pgc_rpc_call_fail(pgc_rpc_call *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------------------------------
 * Workers.
 */

typedef struct {
    const char *init_method; /* as pgc_init_opts.init_method (NULL: auto) */
    double timeout;          /* default timeout of a call and of rendezvous; <= 0: 60 s */
    int num_server_threads;  /* <= 0: 2 */
} pgc_rpc_opts;

#define PGC_RPC_OPTS_DEFAULT                                                                       \
    {                                                                                              \
        NULL, 0.0, 0                                                                               \
    }

#define PGC_RPC_NAME_MAX 64

typedef struct {
    char name[PGC_RPC_NAME_MAX];
    int rank;
} pgc_rpc_worker_info;

/*
 * Joins the RPC group as worker name (unique, 1-63 bytes), rank rank of world_size (rank <
 * 0 or world_size <= 0: from the environment or launcher, as pgc_init_process_group).
 * Collective over every worker. If a process group (pgc_init_process_group or MPI_Init)
 * exists, its world is used and the init method ignored; then call pgc_rpc_shutdown before
 * destroying it. PGC_ERR_INVALID_ARG when two workers chose the same name (on every worker).
 */
int pgc_rpc_init(const char *name, int rank, int world_size, const pgc_rpc_opts *opts);
/*
 * Leaves the RPC group. graceful != 0 (torch's default): collective; waits until no worker
 * has outstanding calls or undelivered messages, releases this worker's remaining RRef
 * handles (torch does the same), and waits until every owner has freed every object, then
 * stops the threads and, if pgc_rpc_init started the world, closes it. graceful == 0:
 * local; fails this worker's pending futures (PGC_ERR_CANCELLED) and stops at once; a world
 * that pgc_rpc_init started stays up (closing it needs every peer) for a later pgc_rpc_init
 * or until the process exits. RRef handles stay valid to free afterwards.
 */
int pgc_rpc_shutdown(int graceful);

int pgc_rpc_get_worker_info(const char *name, pgc_rpc_worker_info *info);
int pgc_rpc_get_worker_info_by_rank(int rank, pgc_rpc_worker_info *info);
/* This worker's info; PGC_ERR_NOT_INITIALIZED outside init/shutdown. */
int pgc_rpc_get_self(pgc_rpc_worker_info *info);

/* ---------------------------------------------------------------------------------------
 * Calls. to: a worker name. timeout: seconds (<= 0: the default of pgc_rpc_init); a call
 * that has no answer by then fails with PGC_ERR_TIMEOUT. A callee that dies fails it with
 * PGC_ERR_PEER_DEAD (same node: at once; other nodes: at the timeout).
 */

/* Blocks until the answer; *result (zeroed first) receives the value, owned by the caller. */
int pgc_rpc_sync(const char *to, const char *fn, const pgc_rpc_value *args, double timeout,
                 pgc_rpc_value *result);
/* Returns once the request is sent; *fut completes with the answer. */
int pgc_rpc_async(const char *to, const char *fn, const pgc_rpc_value *args, double timeout,
                  pgc_future **fut);

/* ---------------------------------------------------------------------------------------
 * Futures (torch.futures.Future). A future is referenced by its creator until
 * pgc_future_free; the library keeps its own reference while it may complete it.
 */

/* A future for the program to complete (async execution, or its own hand-off). */
pgc_future *pgc_future_new(void);
/* Completes f with *v (moved: v is zeroed) or with an error. PGC_ERR_INVALID_ARG if f is
 * already complete. */
int pgc_future_set_value(pgc_future *f, pgc_rpc_value *v);
int pgc_future_set_error(pgc_future *f, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Waits up to timeout seconds (< 0: without a limit; 0: just looks). Returns the future's
 * status once complete (PGC_OK or its error), PGC_ERR_TIMEOUT if still pending. */
int pgc_future_wait(pgc_future *f, double timeout);
/* 1 when complete. */
int pgc_future_done(pgc_future *f);
/* PGC_ERR_PENDING while pending, then PGC_OK or the error. */
int pgc_future_status(pgc_future *f);
/* The value of a future completed without error, owned by the future; else NULL. */
const pgc_rpc_value *pgc_future_value(pgc_future *f);
/* Moves the value out (the future keeps an empty one). */
int pgc_future_take_value(pgc_future *f, pgc_rpc_value *out);
/* The error text of a failed future ("" otherwise), valid while f lives. */
const char *pgc_future_error(pgc_future *f);
/* Runs cb(f, arg) once f completes: at once in this thread if it has, else in the thread
 * that completes it (an agent or server thread: cb must not block on RPCs). Callbacks run
 * in the order they were added. */
int pgc_future_then(pgc_future *f, void (*cb)(pgc_future *f, void *arg), void *arg);
/* A new future that completes when all n futures have (torch.futures.collect_all): with
 * an empty value if all succeeded, else with the first failure's status and text. */
int pgc_future_collect_all(pgc_future *const *futs, int n, pgc_future **out);
/* Another reference to f (each needs a pgc_future_free). */
pgc_future *pgc_future_retain(pgc_future *f);
void pgc_future_free(pgc_future *f);

/* ---------------------------------------------------------------------------------------
 * Remote references (torch's RRef and its protocol). pgc_remote runs fn on worker to and
 * leaves its result there, owned by that worker; the handle is a user reference. Every
 * handle (on users and on the owner) counts: the owner frees the object exactly when the
 * last handle anywhere is freed. Passing an RRef in a value's rrefs (a fork) keeps the
 * object alive until the receiver's handle is known to the owner (confirmation, as in
 * torch's user-to-user sharing).
 */
int pgc_remote(const char *to, const char *fn, const pgc_rpc_value *args, double timeout,
               pgc_rref **out);
/* Copies the referenced value here (from the owner, or locally on it). */
int pgc_rref_to_here(pgc_rref *r, double timeout, pgc_rpc_value *out);
int pgc_rref_owner(pgc_rref *r);
const char *pgc_rref_owner_name(pgc_rref *r);
int pgc_rref_is_owner(pgc_rref *r);
/* On the owner: the object itself, valid while r lives (NULL elsewhere, or when the
 * creating call failed; waits up to the default timeout for it to be created). */
pgc_rpc_value *pgc_rref_local_value(pgc_rref *r);
/* Calls fn at the owner with call->self = the object (rref.rpc_sync().fn()). Calls on one
 * object may run concurrently on the owner's server threads: fn synchronizes if it must. */
int pgc_rref_rpc_sync(pgc_rref *r, const char *fn, const pgc_rpc_value *args, double timeout,
                      pgc_rpc_value *result);
int pgc_rref_rpc_async(pgc_rref *r, const char *fn, const pgc_rpc_value *args, double timeout,
                       pgc_future **fut);
/* Another local reference to the same handle; each needs a pgc_rref_free. */
pgc_rref *pgc_rref_retain(pgc_rref *r);
void pgc_rref_free(pgc_rref *r);

/* Counters of this worker (torch's _get_debug_info): objects it owns, forks it knows of as
 * their owner, live handles it holds for other owners, calls awaiting an answer. The
 * lifetime counts add up since the process started and can be read at any time, also before
 * pgc_rpc_init and after pgc_rpc_shutdown (the four live counts are 0 then): objects this
 * worker made as their owner, those it freed because their last reference anywhere was
 * gone, and those pgc_rpc_shutdown freed while references to them were still live (after a
 * graceful shutdown of every worker, created == deleted and dropped == 0). */
typedef struct {
    int num_owner_rrefs;
    int num_forks;
    int num_user_rrefs;
    int num_pending_futures;
    long num_owner_rrefs_created;
    long num_owner_rrefs_deleted;
    long num_owner_rrefs_dropped;
} pgc_rpc_debug_info;
int pgc_rpc_get_debug_info(pgc_rpc_debug_info *info);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
