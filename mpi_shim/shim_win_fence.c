/*
 * shim_win_fence.c - the barrier of MPI_Win_fence on a window whose memory every member
 * maps (shim_win_shm.c): a dissemination barrier on counters in the window's own segment.
 *
 * Algorithm: dissemination (Hensgen, Finkel and Manber), ceil(log2 n) rounds. In round k
 * member r announces that it arrived by storing the fence's number into its own counter k,
 * then waits until member (r - 2^k) mod n has stored at least that number into its counter
 * k. After the last round every member has heard, through a chain of such rounds, from
 * every other one. Cost: ceil(log2 n)·α, α one cache-line transfer between two cores (no
 * message, no matching, no request): at 2 ranks one line each way, at the same time.
 *
 * Counters instead of flags: a counter holds the number of the last fence its owner
 * reached in that round and only grows (64 bits do not wrap), so nothing is reset and no
 * sense is reversed, and a member that already went on to the next fence (it may: it heard
 * from everyone) stores a larger number, which still satisfies a waiter of this one (>=).
 * Only its owner writes a counter, and the counters of one member share one cache line of
 * its control block, apart from its lock word (other origins write that).
 *
 * Memory order: the stores of an epoch (the origin's puts through the mapping, which
 * memcpy may make non-temporal, and the target's own stores) must be visible to every
 * member once it leaves the fence, and no load or store of the next epoch may move above
 * it. A full fence before the first announcement and after the last wait gives both; the
 * announcements are releases and the waits acquires, so the chain of rounds carries the
 * order from every member to every other.
 *
 * A waiter polls its counter for a short while, then progresses the library (a peer may be
 * blocked in a send to this rank before it reaches the fence, which MPI allows) and gives
 * the core away, as every wait of the window does (shim_win_wait_step); after
 * MPISHIM_TIMEOUT it fails with an error naming the member it waited for.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_util.h"
#include "pgc_status.h"
#include "shim_comm.h"
#include "shim_win.h"

#include <stddef.h>

/* The counters on a cache line of their own, apart from the lock word. */
_Static_assert(offsetof(struct shim_win_ctl, arrive) == 64 && sizeof(struct shim_win_ctl) == 128,
               "shim_win_ctl: the arrival counters must fill the second of two cache lines");

/* Polls of a counter between two progress calls: about a cache-line transfer's worth of
 * waiting when the peer is running. */
#define SPIN_POLLS 64

bool shim_win_fence_mapped(const struct shim_win *w)
{
    return w->ctl && w->size <= (1 << SHIM_WIN_ROUNDS);
}

/* Progress calls before a waiter first gives its core away: pg_core's own waits'
 * (MPISHIM_SPIN_COUNT), or none when the window's members outnumber the usable cores (the
 * peer waited for may need this very core). Decided once per window, by this rank alone:
 * it changes how long this rank spins, never what the barrier does. */
static int spin_limit(struct shim_win *w)
{
    if (w->fence_spins < 0) {
        int cores = mps_usable_cores();

        w->fence_spins = cores > 0 && w->size > cores ? 0 : (int)mps_config_int(MPS_CFG_SPIN_COUNT);
    }
    return w->fence_spins;
}

/* Waits until *counter >= want: PGC_OK, or the status of the failed wait. Polls, progresses
 * (a peer may be blocked in a send to this rank before it reaches the fence), and after
 * spin_limit progress calls goes on with the window's waits (shim_win_wait_step: yield,
 * later sleep, time out). */
static int wait_counter(struct shim_win *w, const uint64_t *counter, uint64_t want)
{
    struct pg_wait_clock clock = {0.0, 0};
    int spins = 0, progressed = 0, limit = spin_limit(w), rc = PGC_OK;

    while (rc == PGC_OK) {
        for (int i = 0; i < SPIN_POLLS; i++) {
            if (__atomic_load_n(counter, __ATOMIC_ACQUIRE) >= want) {
                return PGC_OK;
            }
            mps_cpu_relax();
        }
        if (progressed < limit) {
            progressed++;
            rc = pg_progress();
            continue;
        }
        if (clock.start == 0.0) {
            pg_wait_clock_start(&clock, mps_now());
        }
        rc = shim_win_wait_step(&clock, &spins);
    }
    return rc;
}

int shim_win_fence_barrier(struct shim_win *w, const char *fn)
{
    uint64_t seq = ++w->fence_seq;
    uint64_t *mine = w->ctl[w->rank].arrive;
    int rc = PGC_OK, k, dist, from = w->rank;

    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    for (k = 0, dist = 1; dist < w->size; k++, dist <<= 1) {
        from = (w->rank - dist + w->size) % w->size;
        __atomic_store_n(&mine[k], seq, __ATOMIC_RELEASE);
        rc = wait_counter(w, &w->ctl[from].arrive[k], seq);
        if (rc != PGC_OK) {
            break;
        }
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (rc == PGC_ERR_TIMEOUT) {
        return shim_error(w->comm, fn, MPI_ERR_OTHER,
                          "fence %llu of the window: no word from rank %d within %.0f s "
                          "(round %d of the barrier: that rank, or one it waits for, has not "
                          "called this fence; it may have died, or calls MPI_Win_fence fewer "
                          "times than the others)",
                          (unsigned long long)seq, from, pg_timeout(), k);
    }
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(w->comm, fn, rc);
}
