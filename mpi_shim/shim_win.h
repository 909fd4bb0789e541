/*
 * shim_win.h - MPI one-sided communication (RMA windows), internal.
 *
 * A window is a private duplicate of its communicator (so its messages never match the
 * user's, and its error handler is its own) plus every member's window size and
 * displacement unit, allgathered at creation. Every operation is an active message on that
 * duplicate: the origin sends a request (header, target byte ranges, data) to the target,
 * whose posted receive runs the request inside pg_core's progress - in whatever MPI call
 * the target happens to be waiting - and answers with a reply (an acknowledgement, or the
 * data of a get). The target applies requests one at a time in arrival order, which makes
 * every accumulate atomic per element and ordered between one origin and one target.
 *
 * Completion: the origin counts requests whose reply has not arrived (pending). A
 * synchronisation call (fence, unlock, flush, complete) progresses until pending is zero,
 * so every operation it closes has taken effect at its target.
 *
 * The same-node direct path (shim_win_direct.c): when every member of an MPI_Win_allocate
 * or MPI_Win_allocate_shared window runs on this node (and MPISHIM_RMA_DIRECT is 1 on all),
 * the window's memory is one memfd that every member maps, with a control line per member
 * (lock word, accumulate spinlock) in front of the parts. Put and get are copies, locks are
 * CPU atomics on the target's lock word, accumulates are CPU atomics per element (or the
 * target's spinlock), all done by the origin inside its call: nothing needs the target's
 * progress, and every origin of the window takes that path (w->direct is agreed at
 * creation), so active-message and direct accumulates never meet on one window. PSCW keeps
 * its post and complete notices as messages; a fence is a barrier on counters in the
 * segment, between two memory fences (shim_win_fence.c).
 *
 * Threads: the target side runs in progress callbacks under pg_core's world lock; the
 * origin side touches only the window's atomic counters and its own epoch state.
 */
#ifndef SHIM_WIN_H
#define SHIM_WIN_H

#include "mps_util.h"
#include "pg.h"
#include "shim.h"
#include "shim_datatype.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct shim_attr;

/* A memory region attached to a dynamic window (MPI_Win_attach): absolute addresses. */
struct shim_win_region {
    uintptr_t base;
    size_t len;
};

/* The regions attached to a dynamic window. Origins on this node read them out of this
 * process with process_vm_readv (shim_win_cma.c), without a lock: gen is odd while attach
 * or detach changes them, and grows by two with each change, so a reader that finds it even
 * and unchanged around its copy of the list copied a list that was whole. */
struct shim_win_regions {
    uint64_t gen;
    struct shim_win_region *list;
    int n, cap;
};

struct shim_win_cma;

/* Rounds of the fence barrier (shim_win_fence.c): windows of up to 2^8 members. */
#define SHIM_WIN_ROUNDS 8

/* The control lines of one member of a mapped window, in the shared segment (zeroed by
 * the memfd). lock: SHIM_WIN_WRITER while an exclusive lock is held, waiting exclusive
 * lockers times SHIM_WIN_WAITER, plus the shared holders (shim_win_direct.c). acc_lock:
 * the spinlock of the accumulates that CPU atomics cannot do on this member's memory.
 * arrive: the fence barrier's counter of each round, written by this member only, on a line
 * of its own (the lock line is written by every origin that locks this member). */
struct shim_win_ctl {
    uint64_t lock;
    uint32_t acc_lock;
    uint32_t pad[13];
    uint64_t arrive[SHIM_WIN_ROUNDS];
};

/* A lock request that the target could not grant yet; ahead: SHIM_LOCK_AHEAD. */
struct shim_win_waiter {
    int origin, reply_tag, type;
    bool ahead;
};

struct shim_win {
    MPI_Win handle;
    MPI_Comm comm; /* the private duplicate (its error handler is the window's) */
    struct pg_group *g;
    int rank, size;
    int flavor; /* MPI_WIN_FLAVOR_* */
    void *base;
    MPI_Aint my_size;
    int my_disp_unit;
    bool owns_base;  /* MPI_Win_allocate: base is freed with the window */
    MPI_Aint *sizes; /* [size] every member's window size in bytes */
    int *disp_units; /* [size] */
    char name[MPI_MAX_OBJECT_NAME];
    struct shim_attr *attrs; /* user attributes (shim_attr.c) */
    /* MPI_Win_create_dynamic: base is MPI_BOTTOM, a displacement is an address, and the
     * target accepts only ranges inside these regions. They change in the user's thread
     * (attach, detach) while progress reads them, in any thread: regions_lock. */
    struct shim_win_regions regions;
    pthread_mutex_t regions_lock;
    /* MPI_Win_allocate_shared: every member's memory, one mapping of one memfd, rank r's
     * part at offsets[r] (contiguous in rank order, as MPI's default asks). */
    unsigned char *shm;
    size_t shm_len;
    MPI_Aint *offsets;
    /* The same-node direct path: the segment holds every member's part of an
     * MPI_Win_allocate window too, and ctl[r] is member r's control line. */
    bool direct;
    struct shim_win_ctl *ctl;
    /* FI_RMA between nodes (shim_win_net.c): every member's registered memory, or NULL
     * when no put or get of this window can go that way. */
    struct shim_win_net *net;
    uint64_t fence_seq; /* fences this member passed (shim_win_fence.c) */
    int fence_spins;    /* progress calls a fence waiter makes before yielding; -1: not yet */
    /* Put and get straight into and out of targets on this node (shim_win_cma.c), on windows
     * of MPI_Win_create and _create_dynamic; NULL where no target is reachable so. */
    struct shim_win_cma *cma;

    /* Origin side. */
    int pending;       /* requests whose reply has not arrived (atomic) */
    /* The first error a target reported: its rank << 32 | the MPI class, 0 if none
     * (atomic: one exchange takes both). */
    int64_t remote_err;
    uint32_t next_tag; /* reply tags (atomic) */
    bool fence_epoch;  /* a fence opened an access epoch */
    int lock_all;      /* MPI_Win_lock_all is held */
    int *locked;       /* [size] lock type held on each target, 0 if none (written atomic) */
    int *started;      /* [size] targets of the PSCW access epoch (MPI_Win_start) */
    bool start_epoch;
    int *posts_seen; /* [size] MPI_Win_post notices from each target (atomic) */

    /* Target side (progress callbacks only). */
    struct pg_req am_req; /* the posted receive of requests */
    unsigned char *am_buf;
    bool am_queued;  /* on the list of windows with a request to serve */
    bool am_closing; /* MPI_Win_free: serve and re-post no more */
    struct mps_list ready_link;
    int excl_holder; /* origin holding the exclusive lock, or -1 */
    int shared_holders;
    struct shim_win_waiter *waiters;
    int nwaiters, cap_waiters;
    int completes_seen; /* MPI_Win_complete notices from origins (atomic) */
    int post_count;     /* origins of the exposure epoch (MPI_Win_post), -1 if none */
};

/* The window of handle h, or NULL. */
struct shim_win *shim_win_get(MPI_Win h);

/* The opening of a window call: MPI running and win valid (error raised on
 * MPI_COMM_WORLD otherwise). */
int shim_win_enter(const char *fn, MPI_Win win, struct shim_win **w);

/* Whether an access epoch to target is open: fence, lock, lock_all or start. */
static inline bool shim_win_can_access(const struct shim_win *w, int target)
{
    return w->fence_epoch || w->lock_all || w->locked[target] ||
           (w->start_epoch && w->started[target]);
}

/* Active messages (shim_win_am.c). */

/* Posts the window's receive of requests; shim_win_am_stop cancels it. */
int shim_win_am_start(struct shim_win *w);
void shim_win_am_stop(struct shim_win *w);

/* The kinds of request. */
enum shim_am_kind {
    SHIM_AM_PUT = 1,
    SHIM_AM_GET,
    SHIM_AM_ACC,
    SHIM_AM_GACC, /* get_accumulate, fetch_and_op */
    SHIM_AM_CAS,
    SHIM_AM_LOCK,
    SHIM_AM_UNLOCK,
    SHIM_AM_POST,     /* target -> origin: the exposure epoch is open */
    SHIM_AM_COMPLETE, /* origin -> target: the access epoch is over */
};

/* A shared lock request (its arg: the lock type | SHIM_LOCK_AHEAD) from an origin that holds
 * other locks of the window, or asks for several at once (MPI_Win_lock_all), is granted
 * whenever no exclusive lock is held, ahead of waiting exclusive lockers. Writers waiting
 * keep every other shared request out (so a stream of readers does not starve them), but
 * one queued behind a writer while holding another target's lock could close a cycle that
 * the program does not have: two lock_alls, each holding the target whose writer the other
 * waits behind (two MPI_Win_lock_all beside two MPI_Win_lock(exclusive) did so at 8 ranks;
 * tests/mr/mr_rma_locks.c). */
#define SHIM_LOCK_AHEAD (1 << 16)
#define SHIM_LOCK_TYPE(arg) ((arg) & (SHIM_LOCK_AHEAD - 1))

/* The op of an accumulate as it travels: a pg_op, or one of these. */
#define SHIM_AM_REPLACE (-1)
#define SHIM_AM_NO_OP (-2)

/* One data-moving operation as the origin describes it. origin: the data sent (put,
 * accumulate, the values of get_accumulate, compare then origin value of a
 * compare_and_swap as compare_buf/origin_buf), result: where returned data goes. */
struct shim_rma {
    enum shim_am_kind kind;
    int target;
    MPI_Aint disp; /* bytes from the target's base */
    const void *origin;
    size_t ocount;
    struct shim_dtype *otype;
    void *result;
    size_t rcount;
    struct shim_dtype *rtype;
    size_t tcount;
    struct shim_dtype *ttype;
    int op;              /* pg_op or SHIM_AM_REPLACE / SHIM_AM_NO_OP */
    int elem_dt;         /* pg_dtype of the accumulate elements */
    const void *compare; /* compare_and_swap */
    int *counter;        /* optional: decremented when every reply arrived */
};

/* Whether op is a plain put or get, which may be a copy in the origin's own call (shared
 * memory, CMA). A get_accumulate with MPI_NO_OP travels as a get but must not be one: the
 * target applies accumulates one element at a time, and a copy beside that may read half of
 * one (MPI_SHORT_INT's short of one MPI_REPLACE and int of the next). */
static inline bool shim_rma_is_copy(const struct shim_rma *op)
{
    return op->kind == SHIM_AM_PUT || (op->kind == SHIM_AM_GET && op->op != SHIM_AM_NO_OP);
}

/* Sends op as requests of at most the active-message size; every reply decrements
 * w->pending. PGC_OK or a pg status (nothing sent on an error of the first request). */
int shim_win_issue(struct shim_win *w, const struct shim_rma *op);
/* Sends a control request (lock, unlock, post, complete) to target; reply: whether the
 * target answers (pending counts it then). */
int shim_win_control(struct shim_win *w, enum shim_am_kind kind, int target, int arg, bool reply);

/* Progresses until w->pending is zero, then reports a target's error: MPI_SUCCESS, or an
 * error raised on the window naming fn. */
int shim_win_drain(struct shim_win *w, const char *fn);
/* The same for the operations that count in *counter (a request-based operation's). */
int shim_win_drain_counter(struct shim_win *w, const char *fn, int *counter);
/* shim_win_drain in two halves, for the calls that must finish their synchronisation even
 * when a target refused an operation (fence's barrier, unlock's release, complete's
 * notices; otherwise the peers would wait for them until the timeout): settle waits and
 * reports only a failure to wait; refusal then raises a target's refusal, if any. */
int shim_win_settle(struct shim_win *w, const char *fn);
/* settle for the operations that count in *counter. */
int shim_win_settle_counter(struct shim_win *w, const char *fn, int *counter);
int shim_win_refusal(struct shim_win *w, const char *fn);
/* One step of a wait whose clock was started (pg_wait_clock_start): progress, and after a
 * while give the core away; PGC_ERR_TIMEOUT once pg_timeout() has passed without a request
 * served (pg.h's rule for every wait). */
int shim_win_wait_step(struct pg_wait_clock *clock, int *spins);
/* Progresses until *counter >= want (PSCW notices). */
int shim_win_wait_count(struct shim_win *w, const char *fn, int *counter, int want,
                        const char *what);

/* Creates a window of memory the library allocates (MPI_WIN_FLAVOR_ALLOCATE or _SHARED);
 * *baseptr gets this rank's part. */
int shim_win_create_flavor(const char *fn, int flavor, MPI_Aint size, int disp_unit, MPI_Info info,
                           MPI_Comm comm, void *baseptr, MPI_Win *win);

/* Dynamic windows (shim_win_dyn.c): whether [addr, addr + len) lies in the regions
 * attached to w (one, or several that touch); frees the regions. */
bool shim_win_dyn_fits(struct shim_win *w, uint64_t addr, uint64_t len);
/* The same check on a list of n regions (a copy of a target's, shim_win_cma.c). */
bool shim_win_regions_fit(const struct shim_win_region *list, int n, uint64_t addr, uint64_t len);
void shim_win_dyn_free(struct shim_win *w);

/* Put and get by CMA (shim_win_cma.c). setup, at creation (collective, after the shapes):
 * every member's address of what an origin reads or writes (the window's base, or a dynamic
 * window's struct shim_win_regions) is allgathered, and w->cma set where some member is
 * reachable; PGC_OK or a pg status. free undoes it. */
int shim_win_cma_setup(struct shim_win *w);
void shim_win_cma_free(struct shim_win *w);
/* Whether put and get go by CMA to some member (MPI_Win_get_info's mpishim_rma_cma). */
bool shim_win_cma_on(const struct shim_win *w);
/* Does op (a put, or a get that is no get_accumulate's) by CMA when its target is reachable
 * so and the target's memory takes it: true with *rc the outcome (MPI_SUCCESS or an error
 * raised on the window naming fn), the operation complete at the origin and visible at the
 * target (shim_win_cma.c says why). false: nothing was done, and the caller sends op as
 * active messages (another node, CMA refused, a range the target must check itself). */
bool shim_win_cma_op(struct shim_win *w, const char *fn, const struct shim_rma *op, int *rc);

/* User attributes of windows (shim_attr.c): the value of a user keyval, and the deletion
 * of all of them (MPI_Win_free) with their delete callbacks, newest first. */
int shim_attr_win_get(struct shim_win *w, int keyval, void *val, int *flag, const char *fn);
int shim_attr_win_delete_all(struct shim_win *w);

/* Windows of MPI_Win_allocate and _allocate_shared (shim_win_shm.c), collectively: maps
 * the node's memory of w when the flavor needs it (shared) or the direct path can take it
 * (allocate: every member on this node, MPISHIM_RMA_DIRECT=1 on all, the mapping made on
 * all; w->direct and w->shm say which), and sets w->base. A shared window that cannot be
 * mapped is an error raised on comm on every rank; an allocate window that is not mapped
 * is no error (w->shm NULL: the caller allocates private memory). shim_win_shm_unmap
 * undoes it. */
int shim_win_shm_setup(struct shim_win *w, const char *fn, MPI_Comm comm);
void shim_win_shm_unmap(struct shim_win *w);
/* Put and get on a mapped window: a copy through the mapping, done at return. */
void shim_win_shm_copy(struct shim_win *w, const struct shim_rma *op);

/* FI_RMA between nodes (shim_win_net.c). shim_win_net_setup, collective, on windows whose
 * memory is in place and not mapped by every member (MPI_Win_create, MPI_Win_allocate
 * without the direct path): registers this member's memory and allgathers every member's
 * keys; w->net stays NULL when no member can be reached that way. PGC_OK or a pg status.
 * shim_win_net_op: whether op went (or failed, *rc a pg status) as fi_write/fi_read; false
 * when it must take active messages. shim_win_net_free: the registration and keys go. */
int shim_win_net_setup(struct shim_win *w);
bool shim_win_net_op(struct shim_win *w, const struct shim_rma *op, int *rc);
void shim_win_net_free(struct shim_win *w);

/* The fence barrier in the mapped segment (shim_win_fence.c): whether w can take it (a
 * mapping, and few enough members for SHIM_WIN_ROUNDS), and the barrier itself, with a full
 * memory fence on each side. MPI_SUCCESS or an error raised on the window naming fn. */
bool shim_win_fence_mapped(const struct shim_win *w);
int shim_win_fence_barrier(struct shim_win *w, const char *fn);

/* The direct path (shim_win_direct.c), on windows with w->direct. */
#define SHIM_WIN_WRITER (1ull << 63)
#define SHIM_WIN_WAITER (1ull << 32)

/* Whether this process holds a lock that MPI_Win_lock took on some target of w. */
bool shim_win_holds_lock(const struct shim_win *w);
/* Takes the lock of type (MPI_LOCK_SHARED or _EXCLUSIVE) on target's lock word, waiting
 * (with progress) while it is held in a conflicting way. A shared lock of lock_all's
 * (several), or one asked for while this process holds another (SHIM_LOCK_AHEAD's cases),
 * does not wait for waiting writers. An error names fn and target. */
int shim_win_direct_lock(struct shim_win *w, const char *fn, int target, int type, bool several);
/* Releases it (a release operation: the next holder sees this process's stores). */
void shim_win_direct_unlock(struct shim_win *w, int target, int type);
/* Does op (any kind that moves data) in the caller: done at return. MPI_SUCCESS or an
 * error raised on the window naming fn. */
int shim_win_direct_op(struct shim_win *w, const char *fn, const struct shim_rma *op);
/* The target ranges of op as shim_win_issue cuts them: calls fn(arg, off, len, skip) for
 * each piece (skip: its offset in the packed stream). */
void shim_win_walk(const struct shim_rma *op,
                   void (*fn)(void *arg, uint64_t off, uint64_t len, size_t skip), void *arg);

#endif
