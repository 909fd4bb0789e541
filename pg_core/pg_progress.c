/*
 * pg_progress.c - the one progress function and the waits built on it.
 *
 * Progress polls the fabric's completion queues, does the work the active-message handler
 * deferred, advances collective schedules and runs the progress hook (RMA windows). A wait
 * spins on progress for MPISHIM_SPIN_COUNT polls and then yields the CPU between polls:
 * when ranks outnumber cores, a spinning rank would otherwise starve the peer it waits for.
 *
 * A wait that lasts longer turns into one a dead peer may explain. From WAIT_SLEEP_AFTER on
 * it sleeps between polls instead of yielding (a rank waiting for a slow peer no longer
 * burns a core), and every WAIT_LIVENESS it asks the fabric whether a process of this node
 * is gone: then it fails at once with the dead rank's number, whatever MPISHIM_TIMEOUT
 * says, instead of waiting the timeout out. No launcher needs to be there to kill the
 * survivors (torch-style env:// starts have none). Every WAIT_REMOTE_LIVENESS it also asks
 * the bootstrap about ranks of other nodes, which have no pid to look at (boot_peers_alive:
 * PMIx termination events, the TCP store's record of a rank whose connection closed).
 */
#include "config.h"

#include "boot.h"
#include "pg_internal.h"
#include "pg_device.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <sched.h>
#include <time.h>

#define WAIT_SLEEP_AFTER 0.01 /* s of waiting before polls sleep instead of yielding */
#define WAIT_REMOTE_LIVENESS 1.0 /* s between asking the bootstrap about other nodes' ranks */
#define WAIT_SLEEP_NS 50000   /* how long such a poll sleeps */
#define WAIT_LIVENESS 0.1     /* s between two looks at the local peers' processes */

static int (*progress_hook)(void);

void pg_progress_hook(int (*fn)(void))
{
    __atomic_store_n(&progress_hook, fn, __ATOMIC_RELEASE);
}

/* One round of progress; returns the number of fabric events handled, or an error. */
static int progress_events(void)
{
    int (*hook)(void) = __atomic_load_n(&progress_hook, __ATOMIC_ACQUIRE);
    int rc = PGC_OK, events = 0;

    if (pg_w.fab) {
        rc = events = fab_progress(pg_w.fab);
        if (rc >= 0 && (!mps_list_empty(&pg_w.rndv_todo) || !mps_list_empty(&pg_w.acks))) {
            rc = pg_p2p_flush_deferred();
        }
    }
    if (rc >= 0 && !mps_list_empty(&pg_w.scheds)) {
        rc = pg_sched_progress();
    }
    if (rc >= 0) {
        rc = pg_dev_progress();
    }
    if (rc >= 0 && hook) {
        rc = hook();
    }
    return rc < 0 ? rc : events;
}

int pg_progress_locked(void)
{
    int rc = progress_events();

    return rc < 0 ? rc : PGC_OK;
}

int pg_progress(void)
{
    int rc;

    PG_LOCK();
    rc = pg_progress_locked();
    PG_UNLOCK();
    return rc;
}

bool pg_test(struct pg_req *req)
{
    if (!pg_req_is_done(req)) {
        pg_progress();
    }
    return pg_req_is_done(req);
}

/* One step of a wait: poll, and after spin_count polls give the CPU away (for a while when
 * the wait is long). The lock is dropped around the yield so that other threads can
 * progress (and complete our request). */
static void wait_poll(int *spins, bool sleepy)
{
    static const struct timespec nap = {0, WAIT_SLEEP_NS};

    /* A poll that handled something may have completed what the caller waits for: look
     * before giving the core away (with more ranks than cores, that is a context switch). */
    if (progress_events() <= 0 && ++*spins >= pg_w.spin_count) {
        PG_UNLOCK();
        if (sleepy) {
            nanosleep(&nap, NULL);
        } else {
            sched_yield();
        }
        PG_LOCK();
    } else if (pg_w.mt) {
        PG_UNLOCK();
        PG_LOCK();
    }
}

/* Gives up a request its wait no longer waits for: a schedule or a device operation forgets
 * it, a receive leaves the posted queue. Whether it was a posted receive. */
static bool give_up(struct pg_req *req)
{
    if (req->kind == PG_REQ_COLL) {
        pg_sched_detach(req);
    }
    pg_dev_detach(req);
    return req->kind == PG_REQ_RECV && pg_unpost_recv(req);
}

/* The message of a request given up after timeout seconds. A collective's names the ranks
 * it was still waiting for, read off its state before it is given up (pg_await.c). */
static int wait_timed_out(struct pg_req *req, double timeout)
{
    struct pg_awaited a;

    if (pg_req_awaited(req, &a)) {
        give_up(req);
        return mps_error(PGC_ERR_TIMEOUT, "%s: timed out after %g s waiting for %s (%s)", a.what,
                         timeout, a.who, a.how);
    }
    if (give_up(req)) {
        return mps_error(PGC_ERR_TIMEOUT,
                         "no message from source %d with tag %d arrived within %.0f s", req->match_src,
                         req->match_tag, timeout);
    }
    return mps_error(PGC_ERR_TIMEOUT, "%s did not complete within %.0f s (a peer may have died)",
                     req->kind == PG_REQ_SEND ? "a send" : req->kind == PG_REQ_RECV ? "a receive"
                                                                                     : "a collective",
                     timeout);
}

/* PGC_ERR_PEER_DEAD, with the rank named, when a process of this node is gone, or when the
 * bootstrap learned that a rank elsewhere is (PMIx events, the TCP store's record): that
 * costs a round trip to the store, so it is asked once per WAIT_REMOTE_LIVENESS only. The
 * caller holds the progress lock, which serializes next_remote. */
static int peer_alive(void)
{
    static double next_remote;
    int pid, dead = pg_w.fab ? fab_dead_peer(pg_w.fab, &pid) : -1;
    /* A rank that lost a message or an acknowledgement (no memory, no reserve) fails its
     * waits here rather than at the timeout. */
    int lost = pg_p2p_health();

    if (lost == PGC_OK && pg_w.fab) {
        lost = fab_health(pg_w.fab);
    }
    if (lost != PGC_OK) {
        return lost;
    }
    if (dead < 0 && pg_w.boot && pg_w.initialized && mps_now() >= next_remote) {
        next_remote = mps_now() + WAIT_REMOTE_LIVENESS;
        return boot_peers_alive(pg_w.boot);
    }
    if (dead < 0) {
        return PGC_OK;
    }
    return mps_error(PGC_ERR_PEER_DEAD, "rank %d (pid %d, on this node) has died; this rank "
                     "was waiting for it or for a peer that needs it", dead, pid);
}

int pg_wait_until_locked(bool (*ready)(void *arg), void *arg, double timeout)
{
    double start = 0, next_look = 0;
    bool sleepy = false;
    int spins = 0, rc = PGC_OK;

    if (timeout < 0) {
        timeout = pg_w.timeout;
    }
    for (unsigned iter = 0; !ready(arg) && rc == PGC_OK; iter++) {
        wait_poll(&spins, sleepy);
        /* Reading the clock costs ~20 ns: check it every 256 polls only, and not on the
         * first (most waits end within a few polls). The timeout counts from there. */
        if ((iter & 255) == 255) {
            double now = mps_now();
            sleepy = start != 0 && now - start > WAIT_SLEEP_AFTER;
            if (start == 0) {
                start = next_look = now;
            } else if (now - start > timeout && !ready(arg)) {
                rc = PGC_ERR_TIMEOUT;
                pg_flight_dump_all("a timeout");
            } else if (now >= next_look + WAIT_LIVENESS) {
                next_look = now;
                rc = peer_alive();
            }
        }
    }
    return rc;
}

static bool req_done(void *req)
{
    return pg_req_is_done((struct pg_req *)req);
}

/* A request that the fabric ended with an error carries only the code (the fabric's
 * message, if any, was recorded on whichever thread ran its completion). A process of this
 * node that died is the likeliest cause: name it; else name the sender of a rendezvous. */
static int failed_cause(const struct pg_req *req)
{
    int rc = peer_alive();

    if (rc != PGC_OK || req->status == PGC_ERR_TRUNCATE || req->status == PGC_ERR_CANCELLED) {
        return rc != PGC_OK ? rc : req->status;
    }
    /* Only a rendezvous receive knows its peer (peer_world) at this level. */
    if (req->kind != PG_REQ_RECV || req->rndv_tag == 0) {
        return req->status;
    }
    return mps_error(req->status, "the transfer from rank %d failed: %s%s", req->peer_world,
                     pgc_strerror(req->status),
                     req->status == PGC_ERR_PEER_DEAD ? "" : " (did it die?)");
}

int pg_wait_locked(struct pg_req *req, double timeout)
{
    int rc;

    if (timeout < 0) {
        timeout = pg_w.timeout;
    }
    rc = pg_wait_until_locked(req_done, req, timeout);
    if (rc == PGC_ERR_TIMEOUT) {
        return wait_timed_out(req, timeout);
    }
    if (rc != PGC_OK) {
        /* A dead peer (peer_alive recorded which): given up like a timed-out request. */
        give_up(req);
        return rc;
    }
    if (req->status != PGC_OK) {
        /* Done, and its waiter's: the status may still be corrected (a fabric error whose
         * real cause is a dead peer). */
        req->status = failed_cause(req);
    }
    return req->status;
}

int pg_wait(struct pg_req *req, double timeout)
{
    int rc;

    PG_LOCK();
    rc = pg_wait_locked(req, timeout);
    PG_UNLOCK();
    return rc;
}

struct any_done {
    struct pg_req **reqs;
    int n, index;
};

static bool first_done(void *arg)
{
    struct any_done *a = arg;

    for (a->index = 0; a->index < a->n; a->index++) {
        if (a->reqs[a->index] && pg_req_is_done(a->reqs[a->index])) {
            return true;
        }
    }
    a->index = -1;
    return false;
}

/* pg_wait_any's timeout: names what the first collective among reqs waits for. */
static int none_done(struct pg_req **reqs, int n, double timeout)
{
    struct pg_awaited a;

    for (int i = 0; i < n; i++) {
        if (reqs[i] && pg_req_awaited(reqs[i], &a)) {
            return mps_error(PGC_ERR_TIMEOUT,
                             "none of %d requests completed within %g s; "
                             "request %d, %s, is waiting for %s (%s)",
                             n, timeout, i, a.what, a.who, a.how);
        }
    }
    return mps_error(PGC_ERR_TIMEOUT, "none of %d requests completed within %.0f s", n, timeout);
}

int pg_wait_any(struct pg_req **reqs, int n, int *index, double timeout)
{
    struct any_done a = {reqs, n, -1};
    int rc;

    if (timeout < 0) {
        timeout = pg_w.timeout;
    }
    PG_LOCK();
    rc = pg_wait_until_locked(first_done, &a, timeout);
    if (rc == PGC_ERR_TIMEOUT) {
        rc = none_done(reqs, n, timeout);
    }
    PG_UNLOCK();
    *index = a.index;
    return rc; /* a dead peer: the wait recorded which */
}
