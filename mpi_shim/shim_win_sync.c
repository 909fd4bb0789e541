/*
 * shim_win_sync.c - RMA synchronisation: fence, lock/unlock (and _all), flush, sync, and
 * post-start-complete-wait (see shim_win.h for how completion works).
 *
 * Every call that closes operations waits until their replies arrived (shim_win_drain), so
 * they took effect at their targets. Locks are requests served by the target's lock queue
 * (shim_win_am.c); MPI_Win_lock returns once the lock is granted. MPI_Win_post and
 * MPI_Win_complete are notices without reply, counted by the peer.
 *
 * On a window of the direct path (shim_win_direct.c) every operation is done when its call
 * returns, so closing an epoch is a memory fence: locks are the target's lock word, a flush
 * a fence, a fence a barrier in the window's segment between two fences
 * (shim_win_fence.c). PSCW keeps its notices (messages): a
 * complete sends its notices after a fence, and a wait returns after one.
 */
#include "config.h"

#include "pgc_status.h"
#include "shim_group.h"
#include "shim_win.h"

#include <stdlib.h>

/* The barrier of a fence. A fence that neither ends nor starts an epoch (MPI_MODE_NOPRECEDE
 * with MPI_MODE_NOSUCCEED, which MPI asks all members to pass alike) orders no RMA call and
 * needs none (MPI-3.1 11.5.1: such a fence need not be a barrier), except on a shared window,
 * whose members may use fences to order their plain loads and stores to each other's parts
 * (Open MPI's and MPICH's shared windows keep the barrier there too). Every other fence is
 * one, NOPRECEDE alone too: the direct path's operations take effect when issued, so a put
 * after the fence must wait for the target's own stores before it. A mapped window takes the
 * barrier in its segment (shim_win_fence.c), any other pg_barrier between two full memory
 * fences (pg_barrier's own ordering is that of its messages). */
static int fence_barrier(struct shim_win *w, int assert)
{
    bool nothing = (assert &MPI_MODE_NOPRECEDE) && (assert &MPI_MODE_NOSUCCEED);
    int rc;

    if (nothing && w->flavor != MPI_WIN_FLAVOR_SHARED) {
        return MPI_SUCCESS;
    }
    if (shim_win_fence_mapped(w)) {
        return shim_win_fence_barrier(w, "MPI_Win_fence");
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    rc = pg_barrier(w->g);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(w->comm, "MPI_Win_fence", rc);
}

#pragma weak MPI_Win_fence = PMPI_Win_fence
int PMPI_Win_fence(int assert, MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (w->lock_all || w->start_epoch || w->post_count >= 0) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "a lock_all, start or post epoch is open on this window");
    }
    /* My operations answered, then everyone's (the barrier): each rank's window holds
     * what the epoch wrote to it. Waiting in the barrier serves the others' requests. */
    rc = shim_win_settle(w, SHIM_FN);
    if (rc == MPI_SUCCESS) {
        rc = fence_barrier(w, assert);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    w->fence_epoch = !(assert &MPI_MODE_NOSUCCEED);
    return shim_win_refusal(w, SHIM_FN);
}

/* MPI_PROC_NULL, which the synchronisation calls of one target take (MPI_Win_lock, _unlock,
 * _flush, _flush_local) as a no-op, so that a program passes the same rank to them as to
 * the operations between them (MPI-3.1 11.3 makes it a valid target of those, which then do
 * nothing; it says nothing of the locks, and MPICH accepts it there too: rma/rmanull). The
 * caller returns MPI_SUCCESS, having opened or closed no epoch. */
static bool no_target(int rank)
{
    return rank == MPI_PROC_NULL;
}

static int check_target(struct shim_win *w, const char *fn, int rank)
{
    if (rank < 0 || rank >= w->size) {
        return shim_error(w->comm, fn, MPI_ERR_RANK, "rank %d is not in the window (size %d)", rank,
                          w->size);
    }
    return MPI_SUCCESS;
}

/* The direct path's lock_many: takes or releases the lock words (of type) of target only,
 * or of all (in rank order; see SHIM_LOCK_AHEAD). On a failure the locks taken are given
 * back. */
static int direct_many(struct shim_win *w, const char *fn, bool take, int type, int only)
{
    int lo = only < 0 ? 0 : only, hi = only < 0 ? w->size : only + 1;
    int rc = MPI_SUCCESS, r;

    for (r = lo; r < hi; r++) {
        if (!take) {
            shim_win_direct_unlock(w, r, type);
        } else if ((rc = shim_win_direct_lock(w, fn, r, type, true)) != MPI_SUCCESS) {
            break;
        }
    }
    while (rc != MPI_SUCCESS && --r >= lo) {
        shim_win_direct_unlock(w, r, type);
    }
    return rc;
}

/* Other threads may lock and unlock other targets meanwhile: their entries are read atomic.
 * A scan of every target, so it runs only where a lock is not granted at once (direct) or
 * costs a message anyway (active messages), not on a lock's fast path. */
bool shim_win_holds_lock(const struct shim_win *w)
{
    for (int r = 0; r < w->size; r++) {
        if (__atomic_load_n(&w->locked[r], __ATOMIC_RELAXED) > 0) {
            return true;
        }
    }
    return false;
}

/* Sends lock or unlock requests (kind, of lock type) to target only, or to all (only < 0),
 * and waits for the answers; on the direct path, takes or releases the lock words instead.
 * A shared lock goes ahead of waiting writers where this process takes several or holds
 * another (SHIM_LOCK_AHEAD). */
static int lock_many(struct shim_win *w, const char *fn, enum shim_am_kind kind, int type, int only)
{
    int rc = PGC_OK;
    bool ahead;

    if (w->direct && only >= 0 && kind == SHIM_AM_UNLOCK) {
        shim_win_direct_unlock(w, only, type);
        return MPI_SUCCESS;
    }
    if (w->direct && only >= 0) {
        return shim_win_direct_lock(w, fn, only, type, false);
    }
    if (w->direct) {
        return direct_many(w, fn, kind == SHIM_AM_LOCK, type, only);
    }
    ahead = kind == SHIM_AM_LOCK && type == MPI_LOCK_SHARED && (only < 0 || shim_win_holds_lock(w));
    for (int r = 0; r < w->size && rc == PGC_OK; r++) {
        if (only < 0 || r == only) {
            rc = shim_win_control(w, kind, r, ahead ? type | SHIM_LOCK_AHEAD : type, true);
        }
    }
    if (rc != PGC_OK) {
        shim_win_drain(w, fn);
        return shim_error_pg(w->comm, fn, rc);
    }
    return shim_win_drain(w, fn);
}

#pragma weak MPI_Win_lock = PMPI_Win_lock
int PMPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (lock_type != MPI_LOCK_EXCLUSIVE && lock_type != MPI_LOCK_SHARED) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_LOCKTYPE,
                          "lock type %d is neither MPI_LOCK_EXCLUSIVE nor MPI_LOCK_SHARED",
                          lock_type);
    }
    if (no_target(rank) || (rc = check_target(w, SHIM_FN, rank)) != MPI_SUCCESS) {
        return rc;
    }
    if (w->locked[rank] || w->lock_all || w->start_epoch) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "an epoch to rank %d is already open (%s)", rank,
                          w->locked[rank] ? "a lock"
                          : w->lock_all   ? "lock_all"
                                          : "start");
    }
    /* A fence without MPI_MODE_NOSUCCEED opened an epoch only if operations follow: a lock
     * after it ends it (as MPICH allows; programs rarely pass the assert). */
    w->fence_epoch = false;
    /* MPI_MODE_NOCHECK: the caller promises no conflicting lock, so none is taken. */
    if (!(assert &MPI_MODE_NOCHECK)) {
        rc = lock_many(w, SHIM_FN, SHIM_AM_LOCK, lock_type, rank);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    __atomic_store_n(&w->locked[rank], assert &MPI_MODE_NOCHECK ? -lock_type : lock_type,
                     __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

/* The memory order at the end of a passive-target epoch, before its locks are released.
 * On the direct path with a lock taken, releasing the lock word is itself a release
 * operation (shim_win_direct_unlock): the next holder's acquire sees every load and store of
 * this epoch, and memcpy orders its own non-temporal stores (an sfence after them), so a
 * full fence would add only its cost (tens of cycles in a call of about a hundred ns). With
 * MPI_MODE_NOCHECK no lock word is released, and on the active-message path a shared
 * window's puts and gets are copies through the mapping: a full fence then. */
static void epoch_end_fence(const struct shim_win *w, bool lock_taken)
{
    if (!(w->direct && lock_taken)) {
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    }
}

#pragma weak MPI_Win_unlock = PMPI_Win_unlock
int PMPI_Win_unlock(int rank, MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);
    int type;

    if (rc != MPI_SUCCESS || no_target(rank) ||
        (rc = check_target(w, SHIM_FN, rank)) != MPI_SUCCESS) {
        return rc;
    }
    if (!w->locked[rank]) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "rank %d is not locked by this process", rank);
    }
    type = w->locked[rank]; /* < 0: MPI_MODE_NOCHECK, no lock was taken */
    __atomic_store_n(&w->locked[rank], 0, __ATOMIC_RELAXED);
    rc = w->direct ? MPI_SUCCESS : shim_win_settle(w, SHIM_FN); /* direct: nothing in flight */
    epoch_end_fence(w, type > 0);
    if (rc == MPI_SUCCESS && type > 0) {
        rc = lock_many(w, SHIM_FN, SHIM_AM_UNLOCK, type, rank);
    }
    return rc == MPI_SUCCESS ? shim_win_refusal(w, SHIM_FN) : rc;
}

#pragma weak MPI_Win_lock_all = PMPI_Win_lock_all
int PMPI_Win_lock_all(int assert, MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    for (int r = 0; r < w->size; r++) {
        if (w->locked[r]) {
            return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                              "rank %d is locked already (MPI_Win_lock)", r);
        }
    }
    if (w->lock_all || w->start_epoch) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC, "an access epoch is open already");
    }
    w->fence_epoch = false; /* as in MPI_Win_lock */
    if (!(assert &MPI_MODE_NOCHECK)) {
        rc = lock_many(w, SHIM_FN, SHIM_AM_LOCK, MPI_LOCK_SHARED, -1);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    w->lock_all = assert &MPI_MODE_NOCHECK ? 2 : 1;
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_unlock_all = PMPI_Win_unlock_all
int PMPI_Win_unlock_all(MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);
    bool taken;

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!w->lock_all) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "MPI_Win_lock_all was not called on this window");
    }
    taken = w->lock_all == 1;
    w->lock_all = 0;
    rc = shim_win_settle(w, SHIM_FN);
    epoch_end_fence(w, taken);
    if (rc == MPI_SUCCESS && taken) {
        rc = lock_many(w, SHIM_FN, SHIM_AM_UNLOCK, MPI_LOCK_SHARED, -1);
    }
    return rc == MPI_SUCCESS ? shim_win_refusal(w, SHIM_FN) : rc;
}

/* Flushes wait for every operation of mine, a stronger guarantee than one target's. all:
 * MPI_Win_flush_all and _flush_local_all (rank is ignored). */
static int flush(const char *fn, MPI_Win win, int rank, bool all)
{
    struct shim_win *w;
    int rc = shim_win_enter(fn, win, &w);

    if (rc != MPI_SUCCESS || (!all && no_target(rank))) {
        return rc;
    }
    if (!all && (rc = check_target(w, fn, rank)) != MPI_SUCCESS) {
        return rc;
    }
    if (!w->lock_all && !all && !w->locked[rank]) {
        return shim_error(w->comm, fn, MPI_ERR_RMA_SYNC,
                          "no passive-target epoch (lock) is open to rank %d", rank);
    }
    if (w->direct) {
        /* Every operation is done already: only the order of the stores remains. */
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        return MPI_SUCCESS;
    }
    return shim_win_drain(w, fn);
}

#pragma weak MPI_Win_flush = PMPI_Win_flush
int PMPI_Win_flush(int rank, MPI_Win win)
{
    return flush(SHIM_FN, win, rank, false);
}

#pragma weak MPI_Win_flush_local = PMPI_Win_flush_local
int PMPI_Win_flush_local(int rank, MPI_Win win)
{
    return flush(SHIM_FN, win, rank, false);
}

#pragma weak MPI_Win_flush_all = PMPI_Win_flush_all
int PMPI_Win_flush_all(MPI_Win win)
{
    return flush(SHIM_FN, win, 0, true);
}

#pragma weak MPI_Win_flush_local_all = PMPI_Win_flush_local_all
int PMPI_Win_flush_local_all(MPI_Win win)
{
    return flush(SHIM_FN, win, 0, true);
}

#pragma weak MPI_Win_sync = PMPI_Win_sync
int PMPI_Win_sync(MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Requests that arrived are applied, so a rank that polls its window with
     * MPI_Win_sync sees them; then a full barrier for its own loads and stores. */
    rc = pg_progress();
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(w->comm, SHIM_FN, rc);
}

/* ---- post-start-complete-wait ---- */

/* flags[r] = 1 for each window rank r of group; *n = how many. */
static int group_marks(struct shim_win *w, const char *fn, MPI_Group group, int *flags, int *n)
{
    struct shim_group *sg;

    if (shim_group_get(group, &sg) != MPI_SUCCESS) {
        return shim_error(w->comm, fn, MPI_ERR_GROUP, "invalid group 0x%x", (unsigned)group);
    }
    *n = 0;
    for (int i = 0; i < sg->size; i++) {
        int r = pg_group_rank_of(w->g, sg->ranks[i]);

        if (r < 0) {
            return shim_error(w->comm, fn, MPI_ERR_GROUP,
                              "member %d of the group is not in the window", i);
        }
        flags[r] = 1;
        (*n)++;
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_post = PMPI_Win_post
int PMPI_Win_post(MPI_Group group, int assert, MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w), n, *who;

    (void)assert;
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (w->post_count >= 0) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "an exposure epoch is open already (MPI_Win_post without wait)");
    }
    who = calloc((size_t)w->size, sizeof(*who));
    if (!who) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory");
    }
    rc = group_marks(w, SHIM_FN, group, who, &n);
    for (int r = 0; rc == MPI_SUCCESS && r < w->size; r++) {
        int prc = who[r] ? shim_win_control(w, SHIM_AM_POST, r, 0, false) : PGC_OK;

        if (prc != PGC_OK) {
            rc = shim_error_pg(w->comm, SHIM_FN, prc);
        }
    }
    free(who);
    if (rc == MPI_SUCCESS) {
        w->post_count = n;
    }
    return rc;
}

#pragma weak MPI_Win_start = PMPI_Win_start
int PMPI_Win_start(MPI_Group group, int assert, MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w), n;

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (w->start_epoch || w->lock_all) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC, "an access epoch is open already");
    }
    w->fence_epoch = false; /* as in MPI_Win_lock */
    for (int r = 0; r < w->size; r++) {
        w->started[r] = 0;
    }
    rc = group_marks(w, SHIM_FN, group, w->started, &n);
    /* Each target's post notice, taken (MPI_MODE_NOCHECK: the caller knows they posted,
     * but the notice still comes and is taken, so the next epoch counts right). */
    (void)assert;
    for (int r = 0; rc == MPI_SUCCESS && r < w->size; r++) {
        if (w->started[r]) {
            rc = shim_win_wait_count(w, SHIM_FN, &w->posts_seen[r], 1, "the target's MPI_Win_post");
            __atomic_fetch_sub(&w->posts_seen[r], rc == MPI_SUCCESS ? 1 : 0, __ATOMIC_ACQ_REL);
        }
    }
    w->start_epoch = rc == MPI_SUCCESS;
    return rc;
}

#pragma weak MPI_Win_complete = PMPI_Win_complete
int PMPI_Win_complete(MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!w->start_epoch) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "no access epoch was started (MPI_Win_start)");
    }
    w->start_epoch = false;
    rc = shim_win_settle(w, SHIM_FN);
    /* The direct path's stores reach the targets before the notices say they did. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (int r = 0; rc == MPI_SUCCESS && r < w->size; r++) {
        int prc = w->started[r] ? shim_win_control(w, SHIM_AM_COMPLETE, r, 0, false) : PGC_OK;

        if (prc != PGC_OK) {
            rc = shim_error_pg(w->comm, SHIM_FN, prc);
        }
    }
    return rc == MPI_SUCCESS ? shim_win_refusal(w, SHIM_FN) : rc;
}

#pragma weak MPI_Win_wait = PMPI_Win_wait
int PMPI_Win_wait(MPI_Win win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (w->post_count < 0) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "no exposure epoch was posted (MPI_Win_post)");
    }
    rc = shim_win_wait_count(w, SHIM_FN, &w->completes_seen, w->post_count,
                             "an origin's MPI_Win_complete");
    if (rc == MPI_SUCCESS) {
        __atomic_fetch_sub(&w->completes_seen, w->post_count, __ATOMIC_ACQ_REL);
        __atomic_thread_fence(__ATOMIC_SEQ_CST); /* then the origins' direct stores */
        w->post_count = -1;
    }
    return rc;
}

#pragma weak MPI_Win_test = PMPI_Win_test
int PMPI_Win_test(MPI_Win win, int *flag)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!flag) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_ARG, "flag is NULL");
    }
    if (w->post_count < 0) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "no exposure epoch was posted (MPI_Win_post)");
    }
    rc = pg_progress();
    if (rc != PGC_OK) {
        return shim_error_pg(w->comm, SHIM_FN, rc);
    }
    *flag = __atomic_load_n(&w->completes_seen, __ATOMIC_ACQUIRE) >= w->post_count;
    if (*flag) {
        __atomic_fetch_sub(&w->completes_seen, w->post_count, __ATOMIC_ACQ_REL);
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        w->post_count = -1;
    }
    return MPI_SUCCESS;
}
