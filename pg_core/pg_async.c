/*
 * pg_async.c - the progress thread of MPISHIM_ASYNC_PROGRESS=1.
 *
 * Progress otherwise happens only inside the program's calls: a rank that computes for
 * minutes serves no passive-target request (an origin's lock, accumulate, or a put or get
 * over tcp;ofi_rxm, whose target's provider moves bytes only when the target polls), and
 * every origin stalls until it calls MPI again. With the variable set, pg_init switches the
 * world lock on (as MPI_THREAD_MULTIPLE does) and starts one thread that runs a round of
 * progress whenever it can take the lock without waiting:
 *
 * - It never blocks a caller: it takes the lock with a trylock, and when a thread of the
 *   program holds it, that thread is inside the library and progresses itself.
 * - It holds the lock for one round only (pg_progress_locked: the fabric, deferred work, the
 *   schedules, the device, the progress hook that serves windows), and sleeps without it.
 * - Where the fabric has a wait fd (fab_can_sleep: one socket provider for every peer) it
 *   sleeps in the kernel on it, so a request's arrival wakes it; the provider is armed
 *   (fi_trywait) under the lock, the poll runs without it. Elsewhere (shared-memory rings,
 *   whose writers signal nothing) it naps ASYNC_NAP_NS between rounds.
 * - It is not a wait: it fires no timeout and no liveness verdict (a dead peer is named by
 *   the program's own waits), and an error of a round is left to the requests it failed.
 *
 * pg_async_stop runs before the fabric closes (world_close); the thread sees the flag
 * within one sleep (at most ASYNC_SLEEP_MS) and is joined. MPI_Abort and fatal errors end the
 * process with _exit, which ends the thread with it: nothing there waits for it.
 */
#include "config.h"

#include "fab.h"
#include "mps_log.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

/* The nap between two rounds where there is no fd to sleep on. It bounds how late a
 * request to a computing rank is served: 200 us is a few round trips of tcp between nodes
 * (the case this thread exists for), while 5000 wake-ups a second, each a trylock and one
 * round of polling (a microsecond or two), cost well under 1 % of a core. A shorter nap buys
 * latency the origin's own network round trip hides anyway; a longer one stalls each
 * passive-target operation of a busy target by that much. */
#define ASYNC_NAP_NS 200000
/* Longest sleep on the fabric's fd: bounds how late the thread sees the stop flag and what
 * no socket announces (a device operation), as a net sleeper's wait does
 * (WAIT_NET_SLEEP_MS in pg_progress.c). */
#define ASYNC_SLEEP_MS 1

static pthread_t thread;
static bool running;  /* a thread was started and not joined (touched by the caller only) */
static int stop_flag; /* atomic */

static void nap(void)
{
    static const struct timespec t = {0, ASYNC_NAP_NS};

    nanosleep(&t, NULL);
}

/* One round under the lock, if the lock is free. Returns 1 when the fd may be slept on, 0
 * when the provider has work pending (round again), -1 when the lock was busy or there is no
 * fd (nap). *fd goes -1 for good when arming failed (logged by the fabric). */
static int round_locked(int *fd)
{
    int armed = -1;

    if (pthread_mutex_trylock(&pg_w.lock) != 0) {
        return -1;
    }
    (void)pg_progress_locked(); /* its errors are the requests' (see the top) */
    if (*fd >= 0) {
        armed = fab_sleep_arm(pg_w.fab);
        if (armed < 0) {
            *fd = -1;
        }
    }
    pthread_mutex_unlock(&pg_w.lock);
    return armed;
}

static void *progress_main(void *arg)
{
    const char *prov = "";
    int fd = -1;

    (void)arg;
    pthread_mutex_lock(&pg_w.lock);
    if (fab_can_sleep(pg_w.fab)) {
        fd = fab_sleep_fd(pg_w.fab, &prov);
    }
    pthread_mutex_unlock(&pg_w.lock);
    while (!__atomic_load_n(&stop_flag, __ATOMIC_ACQUIRE)) {
        int armed = round_locked(&fd);

        if (armed == 0) {
            sched_yield(); /* the provider holds work: another round, after any peer of ours */
        } else if (armed < 0 || fab_sleep_poll(fd, prov, ASYNC_SLEEP_MS) < 0) {
            nap();
        }
    }
    return NULL;
}

int pg_async_start(void)
{
    sigset_t all, old;
    int err;

    /* The thread takes no signal: a program's handler (SIGALRM, SIGINT) runs on its own
     * threads, as it did without this one. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    __atomic_store_n(&stop_flag, 0, __ATOMIC_RELEASE);
    err = pthread_create(&thread, NULL, progress_main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        return mps_error(PGC_ERR_INTERNAL,
                         "MPISHIM_ASYNC_PROGRESS=1: rank %d cannot start "
                         "its progress thread: %s",
                         pg_w.rank, strerror(err));
    }
    running = true;
    MPS_INFO("a progress thread serves this rank's peers while it computes "
             "(MPISHIM_ASYNC_PROGRESS=1)");
    return PGC_OK;
}

void pg_async_stop(void)
{
    if (!running) {
        return;
    }
    __atomic_store_n(&stop_flag, 1, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    running = false;
}
