/*
 * pgc_work.c - work handles: the state of one pgc operation from start to finish.
 *
 * A work wraps one or more pg requests. It is finished when every request completed and,
 * if they all succeeded, its finish function ran (float16 conversion back, AVG division,
 * a copy out): so a work never reports completion while its output is still incomplete.
 * Errors from the layer below are turned into messages naming the call and the group here,
 * once, and kept in the work (pgc_work_error) as well as recorded for the thread.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_log.h"
#include "pg_internal.h"
#include "pgc_internal.h"
#include "pgc_status.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pgc_work_init(struct pgc_work *w, const char *call, struct pg_group *g)
{
    memset(w, 0, sizeof(*w));
    w->reqs = &w->req;
    w->nreqs = 1;
    w->call = call;
    w->g = g;
    w->status = PGC_ERR_PENDING;
    w->source = -1;
    if (g) {
        pg_group_retain(g);
    }
}

struct pgc_work *pgc_work_new(const char *call, struct pg_group *g)
{
    struct pgc_work *w = malloc(sizeof(*w));

    if (!w) {
        mps_error(PGC_ERR_NOMEM, "%s: no memory for a work handle", call);
        return NULL;
    }
    pgc_work_init(w, call, g);
    w->heap = true;
    return w;
}

/* Releases what the work owns except the work itself. */
static void work_release(struct pgc_work *w)
{
    free(w->tmp);
    w->tmp = NULL;
    if (w->reqs != &w->req) {
        /* A batch's requests are done (work_complete) or given up for good: none is left
         * to wait for or look at (pgc_work_free would take the unused w->req for a send
         * still in flight and leak the work). */
        free(w->reqs);
        w->reqs = &w->req;
        w->nreqs = 0;
    }
    if (w->g) {
        pg_group_release(w->g);
        w->g = NULL;
    }
}

void pgc_work_discard(struct pgc_work *w)
{
    work_release(w);
    if (w->heap) {
        free(w);
    }
}

/* The message of a failed request, naming the call and the group. fresh: the wait that
 * gave the request up just recorded the cause (which ranks a timed-out collective awaited). */
static void describe_failure(struct pgc_work *w, int status, bool fresh)
{
    char cd[160];
    const char *cause = pgc_strerror(status);

    pgc_call_desc(w->call, w->g, cd, sizeof(cd));
    if (status == PGC_ERR_MISMATCH && fresh && *mps_last_error()) {
        cause = mps_last_error(); /* the collective's abort: the two calls named */
    } else if (status == PGC_ERR_MISMATCH) {
        cause = "a peer sent more data than this rank's tensor holds: the ranks passed "
                "tensors of different sizes";
    } else if (status == PGC_ERR_TIMEOUT) {
        cause = fresh && *mps_last_error() ? mps_last_error()
                                           : "did not complete within the timeout: a peer may "
                                             "have died or not called it";
    } else if (status == PGC_ERR_PEER_DEAD) {
        cause = mps_last_error(); /* which rank, from the wait that found it */
    }
    snprintf(w->err, sizeof(w->err), "%s: %s", cd, cause);
}

/* The status of the requests once all are done: the first error, truncation reported as a
 * size mismatch between ranks, and a p2p receive's length checked. */
static int reqs_status(struct pgc_work *w)
{
    for (int i = 0; i < w->nreqs; i++) {
        int st = w->reqs[i].status;
        if (st == PGC_ERR_TRUNCATE) {
            return PGC_ERR_MISMATCH;
        }
        if (st != PGC_OK) {
            return st;
        }
    }
    if (w->check_len && !w->req.cancelled && w->req.len != w->expect_len) {
        return PGC_ERR_MISMATCH;
    }
    return PGC_OK;
}

/* All requests are done: compute the final status, run finish, release. */
static void work_complete(struct pgc_work *w)
{
    int st = reqs_status(w);

    if (w->nreqs == 1 && w->req.kind == PG_REQ_RECV) {
        w->source = w->req.source;
    }
    if (st == PGC_OK && w->finish) {
        st = w->finish(w);
        if (st != PGC_OK) {
            snprintf(w->err, sizeof(w->err), "%s", mps_last_error());
        }
    } else if (st == PGC_ERR_MISMATCH && w->check_len && w->req.status == PGC_OK) {
        char cd[160];
        pgc_call_desc(w->call, w->g, cd, sizeof(cd));
        snprintf(w->err, sizeof(w->err),
                 "%s: received %zu bytes from rank %d but the tensor holds %zu: the ranks "
                 "passed tensors of different sizes",
                 cd, w->req.len, w->req.source, w->expect_len);
    } else if (st != PGC_OK) {
        describe_failure(w, st, false);
    }
    w->status = st;
    work_release(w);
}

/* Whether every request of the work is done (a pg_wait_until_locked condition). */
static bool reqs_ready(void *arg)
{
    const struct pgc_work *w = arg;

    for (int i = 0; i < w->nreqs; i++) {
        if (!pg_req_is_done(&w->reqs[i])) {
            return false;
        }
    }
    return true;
}

static bool reqs_done(const struct pgc_work *w)
{
    return reqs_ready((void *)w);
}

/* What the work waits for, for the roll call (pg_coll_roll.c): its first request not done. */
static bool work_who(void *arg, struct pg_awaited *a, bool *may_fail)
{
    struct pgc_work *w = arg;

    for (int i = 0; i < w->nreqs; i++) {
        if (!pg_req_is_done(&w->reqs[i])) {
            return pg_req_who(&w->reqs[i], a, may_fail);
        }
    }
    return false;
}

bool pgc_work_poll(struct pgc_work *w)
{
    if (w->status != PGC_ERR_PENDING) {
        return true;
    }
    if (!reqs_done(w)) {
        pg_progress();
        if (!reqs_done(w)) {
            return false;
        }
    }
    work_complete(w);
    return true;
}

/* Whether a wait gave its request up (a timeout, a dead peer): pg_wait then detached a
 * collective and unposted a receive, so nothing writes into the request afterwards. */
static bool gave_up(int rc)
{
    return rc == PGC_ERR_TIMEOUT || rc == PGC_ERR_PEER_DEAD;
}

/* Waits like pg_wait for every request, and fails the work on the first given up. For
 * blocking calls on stack works. */
static int work_wait_final(struct pgc_work *w, double timeout)
{
    for (int i = 0; i < w->nreqs; i++) {
        int rc = pg_wait(&w->reqs[i], timeout);
        /* A wait that ends with its request not done gave it up: a timeout, a dead peer, or
         * the collective's abort (a mismatch found by the roll call, pg_coll_roll.c). */
        if (rc != PGC_OK && !pg_req_is_done(&w->reqs[i])) {
            describe_failure(w, rc, true);
            w->status = rc;
            return rc;
        }
    }
    work_complete(w);
    return w->status;
}

int pgc_work_launch(struct pgc_work *w, int async_op, pgc_work **out)
{
    int rc;

    if (async_op) {
        *out = (pgc_work *)w;
        return PGC_OK;
    }
    if (out) {
        *out = NULL;
    }
    rc = work_wait_final(w, -1);
    if (rc != PGC_OK) {
        mps_error(rc, "%s", w->err);
    }
    if (gave_up(rc) || !reqs_done(w)) {
        /* Release everything except what a send still in the transport may touch. */
        if (w->req.kind == PG_REQ_SEND && !pg_req_is_done(&w->req)) {
            return rc;
        }
        work_release(w);
        if (w->heap) {
            free(w);
        }
        return rc;
    }
    pgc_work_discard(w);
    return rc;
}

int pgc_work_is_completed(pgc_work *work)
{
    return work && pgc_work_poll((struct pgc_work *)work);
}

/* pgc_work_wait's timeout: the work stays pending; says what it still waits for. */
static int still_running(struct pgc_work *w, double timeout)
{
    char cd[160], awaits[sizeof(struct pg_awaited) + 32] = "";
    struct pg_awaited a;
    int i = 0;

    pgc_call_desc(w->call, w->g, cd, sizeof(cd));
    PG_LOCK();
    while (i < w->nreqs && pg_req_is_done(&w->reqs[i])) {
        i++;
    }
    if (i < w->nreqs && pg_req_awaited(&w->reqs[i], &a)) {
        snprintf(awaits, sizeof(awaits), ": %s: waiting for %s (%s)", a.what, a.who, a.how);
    }
    PG_UNLOCK();
    return mps_error(PGC_ERR_TIMEOUT,
                     "pgc_work_wait: %s still running after %g s (the work stays pending)%s", cd,
                     timeout, awaits);
}

int pgc_work_wait(pgc_work *work, double timeout)
{
    struct pgc_work *w = (struct pgc_work *)work;
    int rc = PGC_OK;

    if (!w) {
        return mps_error(PGC_ERR_REQUEST, "pgc_work_wait: NULL work handle");
    }
    /* The one wait of the library (pg_progress.c): its spinning, yielding and sleeping, and
     * its look for a dead peer of the node. */
    if (w->status == PGC_ERR_PENDING) {
        PG_LOCK();
        rc = pg_wait_coll_locked(reqs_ready, w, timeout > 0 ? timeout : -1, work_who);
        PG_UNLOCK();
    }
    if (rc == PGC_ERR_TIMEOUT) {
        return still_running(w, timeout > 0 ? timeout : pg_timeout());
    }
    if (rc != PGC_OK) {
        /* A dead peer or the collective's abort: the work fails, its requests given up. */
        work_wait_final(w, -1);
    }
    pgc_work_poll(w);
    if (w->status != PGC_OK) {
        mps_error(w->status, "%s", w->err);
    }
    return w->status;
}

int pgc_work_status(pgc_work *work)
{
    struct pgc_work *w = (struct pgc_work *)work;

    if (!w) {
        return mps_error(PGC_ERR_REQUEST, "pgc_work_status: NULL work handle");
    }
    pgc_work_poll(w);
    return w->status;
}

const char *pgc_work_error(pgc_work *work)
{
    struct pgc_work *w = (struct pgc_work *)work;

    return w && w->status != PGC_ERR_PENDING ? w->err : "";
}

int pgc_work_source(pgc_work *work)
{
    struct pgc_work *w = (struct pgc_work *)work;

    return w && w->status != PGC_ERR_PENDING ? w->source : -1;
}

void pgc_work_free(pgc_work *work)
{
    struct pgc_work *w = (struct pgc_work *)work;

    if (!w) {
        return;
    }
    if (w->status == PGC_ERR_PENDING) {
        work_wait_final(w, -1);
    }
    if (!reqs_done(w)) { /* given up: a timeout, a dead peer, an abort */
        for (int i = 0; i < w->nreqs; i++) {
            if (w->reqs[i].kind == PG_REQ_SEND && !pg_req_is_done(&w->reqs[i])) {
                MPS_WARN("pgc_work_free: %s still sending after it failed; its handle is "
                         "leaked so that the transport cannot write into freed memory",
                         w->call);
                return;
            }
        }
    }
    pgc_work_discard(w);
}
