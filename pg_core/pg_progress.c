/*
 * pg_progress.c - the one progress function and the waits built on it.
 *
 * Progress polls the fabric's completion queues, does the work the active-message handler
 * deferred, and advances collective schedules. A wait spins on progress for
 * MPISHIM_SPIN_COUNT polls and then yields the CPU between polls: when ranks outnumber
 * cores, a spinning rank would otherwise starve the peer it waits for.
 */
#include "config.h"

#include "pg_internal.h"
#include "pg_device.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <sched.h>

/* One round of progress; returns the number of fabric events handled, or an error. */
static int progress_events(void)
{
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

/* One step of a wait: poll, and after spin_count polls give the CPU away. The lock is
 * dropped around the yield so that other threads can progress (and complete our request). */
static void wait_poll(int *spins)
{
    /* A poll that handled something may have completed what the caller waits for: look
     * before giving the core away (with more ranks than cores, that is a context switch). */
    if (progress_events() <= 0 && ++*spins >= pg_w.spin_count) {
        PG_UNLOCK();
        sched_yield();
        PG_LOCK();
    } else if (pg_w.mt) {
        PG_UNLOCK();
        PG_LOCK();
    }
}

static int wait_timed_out(struct pg_req *req, double timeout)
{
    if (req->kind == PG_REQ_COLL) {
        pg_sched_detach(req);
    }
    pg_dev_detach(req);
    if (req->kind == PG_REQ_RECV && pg_unpost_recv(req)) {
        return mps_error(PGC_ERR_TIMEOUT,
                         "no message from source %d with tag %d arrived within %.0f s", req->match_src,
                         req->match_tag, timeout);
    }
    return mps_error(PGC_ERR_TIMEOUT, "%s did not complete within %.0f s (a peer may have died)",
                     req->kind == PG_REQ_SEND ? "a send" : req->kind == PG_REQ_RECV ? "a receive"
                                                                                     : "a collective",
                     timeout);
}

int pg_wait_until_locked(bool (*ready)(void *arg), void *arg, double timeout)
{
    double deadline = 0;
    int spins = 0;

    if (timeout < 0) {
        timeout = pg_w.timeout;
    }
    for (unsigned iter = 0; !ready(arg); iter++) {
        wait_poll(&spins);
        /* Reading the clock costs ~20 ns: check it every 256 polls only, and not on the
         * first (most waits end within a few polls). The timeout counts from there. */
        if ((iter & 255) == 255) {
            double now = mps_now();
            if (deadline == 0) {
                deadline = now + timeout;
            } else if (now > deadline && !ready(arg)) {
                return PGC_ERR_TIMEOUT;
            }
        }
    }
    return PGC_OK;
}

static bool req_done(void *req)
{
    return pg_req_is_done((struct pg_req *)req);
}

int pg_wait_locked(struct pg_req *req, double timeout)
{
    if (timeout < 0) {
        timeout = pg_w.timeout;
    }
    if (pg_wait_until_locked(req_done, req, timeout) != PGC_OK) {
        return wait_timed_out(req, timeout);
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

int pg_wait_any(struct pg_req **reqs, int n, int *index, double timeout)
{
    struct any_done a = {reqs, n, -1};
    int rc;

    if (timeout < 0) {
        timeout = pg_w.timeout;
    }
    PG_LOCK();
    rc = pg_wait_until_locked(first_done, &a, timeout);
    PG_UNLOCK();
    *index = a.index;
    if (rc != PGC_OK) {
        rc = mps_error(rc, "none of %d requests completed within %.0f s", n, timeout);
    }
    return rc;
}
