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
 * is gone, or a rank reached over tcp;ofi_rxm (whose endpoint then refuses a connection,
 * fab_probe.c; the provider itself reports nothing): then it fails at once with the dead
 * rank's number, whatever MPISHIM_TIMEOUT says, instead of waiting the timeout out. No
 * launcher needs to be there to kill the survivors (torch-style env:// starts have none).
 * Every WAIT_REMOTE_LIVENESS it also asks the bootstrap about ranks of other nodes, which
 * have no pid to look at (boot_peers_alive: PMIx termination events, the TCP store's record
 * of a rank whose connection closed).
 *
 * A rank whose every peer is reached through one socket provider (tcp;ofi_rxm between nodes,
 * one rank per node) waits differently: after MPISHIM_NET_SPIN_US of polling it sleeps in
 * the kernel on the provider's wait fd (pg_w.net_sleep, fab_sleep), at once when the
 * machine has more runnable tasks than CPUs (cpu_to_spare). On a busy machine that
 * is the difference between microseconds and milliseconds a message: a poller that yields
 * stays runnable and gets the CPU back only when the scheduler's round comes to it, while a
 * sleeper is woken by the packet's arrival, and Linux lets a task that slept preempt a busy
 * one at once.
 */
#include "config.h"

#include "boot.h"
#include "pg_internal.h"
#include "pg_device.h"
#include "mps_log.h"
#include "mps_proc.h"
#include "mps_stats.h"
#include "pgc_status.h"

#include <sched.h>
#include <time.h>

#define WAIT_SLEEP_AFTER 0.01 /* s of waiting before polls sleep instead of yielding */
#define WAIT_REMOTE_LIVENESS 1.0 /* s between asking the bootstrap about other nodes' ranks */
#define WAIT_SLEEP_NS 50000   /* how long such a poll sleeps */
#define WAIT_LIVENESS 0.1     /* s between two looks at the local peers' processes */
#define FAILED_VERDICT_WAIT 0.5 /* s a request the fabric failed waits for the probes' answers */
/* Longest sleep on the fabric's wait fd: bounds how late a wait sees what no socket
 * announces (a device operation, a timeout, a dead peer). */
#define WAIT_NET_SLEEP_MS 1
#define WAIT_LOAD_LOOK 0.1 /* s between two looks at the machine's runnable tasks */
/* The roll call of a collective's wait (pg_coll_roll.c): its first questions after
 * PG_ROLL_AFTER s of waiting, again every ROLL_EVERY while it waits; and while this process
 * knows of an aborted collective, a look every ROLL_ABORT_LOOK at whether it is the one
 * waited for. A legal program's ranks are all in the collective, so the questions get no
 * answer and only cost a small message per rank waited for and ROLL_EVERY. */
#define ROLL_EVERY 0.5
#define ROLL_ABORT_LOOK 0.01

/* Where a wait stands between its polls. */
struct wait_state {
    unsigned iter;     /* polls so far; the clock is read when its low 8 bits are all set */
    int spins;         /* idle polls so far */
    bool sleepy;       /* idle for long: polls sleep instead of yielding */
    bool active;       /* a poll handled something since the last look at the clock */
    bool serving;      /* its last look found requests of other ranks served */
    double idle_since; /* net sleep: time of the first idle poll, 0 before it */
};

static int (*progress_hook)(void);
/* Requests from other ranks the hook served, ever (struct pg_wait_clock). Written under the
 * world lock, read by waits of any thread. */
static uint64_t hook_served;

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
        int served = hook();

        if (served > 0) {
            __atomic_add_fetch(&hook_served, (uint64_t)served, __ATOMIC_RELAXED);
            events += served;
        }
        rc = served < 0 ? served : rc;
    }
    return rc < 0 ? rc : events;
}

void pg_wait_clock_start(struct pg_wait_clock *c, double now)
{
    c->start = now;
    c->served = __atomic_load_n(&hook_served, __ATOMIC_RELAXED);
}

bool pg_wait_clock_expired(struct pg_wait_clock *c, double now, double timeout)
{
    uint64_t served = __atomic_load_n(&hook_served, __ATOMIC_RELAXED);

    if (served != c->served) {
        c->served = served;
        c->start = now;
    }
    return now - c->start > timeout;
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

/* Whether the machine has a CPU to spare for a poller: at most one task more runnable than
 * it has CPUs (the ranks themselves count), looked at every WAIT_LOAD_LOOK. Polling then
 * catches a fast answer without a wake-up; on a busy machine it only holds a CPU that the
 * peer, woken by our message, may be queued for (over tcp at load 14 on 2 CPUs: 8 B one way
 * 391 us with 100 us of polling, 122 us with none, 2.6 ms with 1 ms). */
static bool cpu_to_spare(double now)
{
    static double next_look;
    static bool spare = true;

    if (now >= next_look) {
        int running = mps_runnable_tasks();
        next_look = now + WAIT_LOAD_LOOK;
        spare = running < 0 || running <= pg_w.net_cpus + 1;
    }
    return spare;
}

/* An idle poll of a net_sleep world: poll on for MPISHIM_NET_SPIN_US while the machine has
 * a CPU to spare (yielding after MPISHIM_SPIN_COUNT polls, as elsewhere), then sleep on the
 * fabric's wait fd. Only one thread calls in (choose_net_sleep), so no lock is held or
 * dropped here. */
static void net_idle(struct wait_state *w)
{
    double now = mps_now();
    int rc;

    if (w->idle_since == 0) {
        w->idle_since = now;
    }
    if (now - w->idle_since < pg_w.net_spin && cpu_to_spare(now)) {
        if (w->spins >= pg_w.net_spin_count) {
            sched_yield();
        }
        return;
    }
    rc = fab_sleep(pg_w.fab, WAIT_NET_SLEEP_MS);
    if (rc < 0) {
        /* Logged by fab_sleep; the waits poll from now on. */
        pg_w.net_sleep = false;
        pg_w.spin_count = pg_w.net_spin_count;
    }
    if (rc == 1) {
        w->iter |= 255; /* up to WAIT_NET_SLEEP_MS passed: look at the clock next */
    }
}

/* One step of a wait: poll, and after spin_count polls give the CPU away (for a while when
 * the wait has been idle for long and the machine has a CPU to spare). The lock is dropped
 * around the yield so that other threads can progress (and complete our request). */
static void wait_poll(struct wait_state *w)
{
    int events = progress_events();

    /* A net sleeper spins for MPISHIM_NET_SPIN_US after the last poll that handled
     * something, not after the first idle one: a transfer's socket reads come in bursts,
     * and a sleep (a syscall and a wake-up) between every two bursts of one transfer made
     * 1 MiB take 1.5x as long as polling did. */
    if (events > 0) {
        w->idle_since = 0;
        w->active = true;
        w->sleepy = false; /* at once, not at the next look: 256 naps away */
    }
    /* A poll that handled something may have completed what the caller waits for: look
     * before giving the core away (with more ranks than cores, that is a context switch). */
    if (events <= 0 && ++w->spins >= pg_w.spin_count) {
        if (pg_w.net_sleep) {
            net_idle(w);
            return;
        }
        /* A nap spares a CPU nobody else wants; where the ranks outnumber the CPUs, the
         * yield gives it to whoever is runnable, without the wake-up a nap costs when the
         * message comes: at 2 x 12 ranks on 2 CPUs every waiter of a chain napping made
         * mr_coll take up to 28 s, 3.8-4.1 s with yields. */
        bool nap = w->sleepy && cpu_to_spare(mps_now());

        if (nap && w->serving) {
            /* Under the world lock; MPI_T reads it with an atomic load at any time. */
            uint64_t *naps = &mps_stats.wait_naps_serving;

            __atomic_store_n(naps, __atomic_load_n(naps, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
        }
        PG_UNLOCK();
        if (nap) {
            fab_nap(pg_w.fab, WAIT_SLEEP_NS);
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
 * it, a receive leaves the posted queue, a synchronous send the list of those waiting for
 * their acknowledgement (pg_w.sync_sends; a late one then finds nothing: the request's
 * memory may be a dead stack frame or freed by then). Whether it was a posted receive. */
static bool give_up(struct pg_req *req)
{
    if (req->kind == PG_REQ_COLL) {
        pg_sched_detach(req);
    }
    if (req->kind == PG_REQ_SEND) {
        mps_list_remove(&req->link); /* linked only while it waits for an answer */
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
        pg_awaited_keep(&a);
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

/* PGC_ERR_PEER_DEAD, with the rank named, when a process of this node is gone, when a rank
 * reached over tcp;ofi_rxm no longer listens (fab_remote_alive), or when the bootstrap
 * learned that a rank elsewhere is (PMIx events, the TCP store's record): that costs a
 * round trip to the store, so it is asked once per WAIT_REMOTE_LIVENESS only. The caller
 * holds the progress lock, which serializes next_remote. */
static int peer_alive(void)
{
    static double next_remote;
    int pid, dead = pg_w.fab ? fab_dead_peer(pg_w.fab, &pid) : -1;
    /* A rank that lost a message or an acknowledgement (no memory, no reserve) fails its
     * waits here rather than at the timeout. */
    int rc = pg_p2p_health();

    if (rc == PGC_OK && pg_w.fab) {
        rc = fab_health(pg_w.fab);
    }
    if (rc == PGC_OK && dead < 0 && pg_w.fab) {
        rc = fab_remote_alive(pg_w.fab); /* another node's rank whose endpoint refuses */
    }
    if (rc != PGC_OK) {
        return rc;
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

/* When a collective's wait next asks (PG_ROLL_AFTER, ROLL_EVERY) or looks at the aborts. */
struct roll_state {
    double next_ask, next_look;
};

/* The roll call's part of a collective's wait, at now (the wait started at start): the
 * error of its collective's abort where it may end on one, else PGC_OK. */
static int roll_look(pg_wait_who_fn who, void *arg, struct roll_state *r, double start,
                     double now)
{
    bool ask = now - start >= PG_ROLL_AFTER && now >= r->next_ask;
    bool may_fail = false;
    struct pg_awaited a;
    int rc;

    if (!ask && (now < r->next_look || __atomic_load_n(&pg_aborts.n, __ATOMIC_RELAXED) == 0)) {
        return PGC_OK;
    }
    r->next_look = now + ROLL_ABORT_LOOK;
    if (ask) {
        r->next_ask = now + ROLL_EVERY;
    }
    if (!who(arg, &a, &may_fail)) {
        return PGC_OK;
    }
    rc = pg_roll_look(&a, ask);
    return may_fail ? rc : PGC_OK;
}

int pg_wait_until_locked(bool (*ready)(void *arg), void *arg, double timeout)
{
    return pg_wait_coll_locked(ready, arg, timeout, NULL);
}

int pg_wait_coll_locked(bool (*ready)(void *arg), void *arg, double timeout,
                        pg_wait_who_fn who)
{
    struct wait_state w = {0};
    struct pg_wait_clock clock = {0, 0};
    struct roll_state roll = {0, 0};
    double next_look = 0, started = 0, idle_from = 0;
    int rc = PGC_OK;

    if (timeout < 0) {
        timeout = pg_w.timeout;
    }
    for (; !ready(arg) && rc == PGC_OK; w.iter++) {
        wait_poll(&w);
        /* Reading the clock costs ~20 ns: check it every 256 polls only, and not on the
         * first (most waits end within a few polls), and after each sleep on the fabric's fd
         * (up to WAIT_NET_SLEEP_MS each: net_idle sets the bits). The timeout counts from
         * there, and again from each look that finds a request served (pg.h). */
        if ((w.iter & 255) == 255) {
            double now = mps_now();
            uint64_t served = clock.served;

            if (clock.start == 0) {
                pg_wait_clock_start(&clock, now);
                next_look = now;
                started = now;
            } else if (pg_wait_clock_expired(&clock, now, timeout) && !ready(arg)) {
                rc = PGC_ERR_TIMEOUT;
                pg_flight_dump_all("a timeout");
            } else if (now >= next_look + WAIT_LIVENESS) {
                next_look = now;
                /* What the poll completed is not failed by a death found after it (a peer
                 * that finalized and exited once its last message was sent). */
                rc = ready(arg) ? PGC_OK : peer_alive();
            }
            if (rc == PGC_OK && who && !ready(arg)) {
                rc = roll_look(who, arg, &roll, started, now);
            }
            /* After the look, which restarted the clock if a request was served since the
             * last one: a wait that serves requests (a target in MPI_Barrier under a stream
             * of lock, accumulate, unlock) polls on without napping. Decided before the look,
             * from the clock of the look before, a napping wait (256 naps between looks,
             * well over WAIT_SLEEP_AFTER) never saw a start that recent and napped for good,
             * adding a nap of 50-100 us to every request it served (MPICH's rma/rma_contig:
             * 164 s against Open MPI's 54). */
            w.serving = clock.served != served;
            /* Idle, not merely long: a wait whose polls keep handling messages (a reduce's
             * root, taking its children's parts in turn over 2 x 8 ranks on 2 CPUs) yields
             * on between them. Napping there put a nap and a wake-up behind every message
             * of the chain: mr_coll at 2 x 8 took 6-23 s in 3 of 12 runs, 3.1-3.9 else. */
            if (w.active || idle_from == 0) {
                w.active = false;
                idle_from = now;
            }
            w.sleepy = now - MPS_MAX(clock.start, idle_from) > WAIT_SLEEP_AFTER;
        }
    }
    return rc;
}

static bool req_done(void *req)
{
    return pg_req_is_done((struct pg_req *)req);
}

/* A receive whose rendezvous transfer runs, a send (a rendezvous, waiting for its
 * receiver) and a schedule with either under way (pg_sched_sending) are in the fabric, which
 * must find the request alive and still reads or writes the caller's buffer: their waits
 * last until the transfer ends (the receiver of an aborted collective takes it into
 * scratch, pg_p2p.c). */
bool pg_req_who(void *arg, struct pg_awaited *a, bool *may_fail)
{
    const struct pg_req *req = arg;

    if (req->kind == PG_REQ_RECV && !pg_recv_posted(req)) {
        return false;
    }
    *may_fail = req->kind != PG_REQ_SEND && !(req->kind == PG_REQ_COLL && pg_sched_sending(req));
    if (pg_req_awaited(req, a)) {
        return true;
    }
    /* A point-to-point receive inside a node-aware collective's step (the reduce's handover
     * to its root, on the node's group): it asks about the parent's collective alone. */
    if (req->kind != PG_REQ_RECV || !req->g || !req->g->parent || req->match_src < 0) {
        return false;
    }
    pg_awaited_ranks(a, req->g->ctx, &req->match_src, 1);
    a->g = req->g;
    a->seq = PG_ROLL_NO_SEQ;
    return true;
}

/* A request that the fabric ended with an error carries only the code (the fabric's
 * message, if any, was recorded on whichever thread ran its completion). A process of this
 * node that died is the likeliest cause: name it; else name the sender of a rendezvous. */
static int failed_cause(const struct pg_req *req)
{
    /* Cancelled by the caller (MPI_Cancel), not by the fabric. */
    bool own = req->status == PGC_ERR_CANCELLED && req->cancelled;
    int rc = peer_alive();

    /* A provider may end a dead peer's transfer (tcp;ofi_rxm: cancelled) before a probe of
     * its endpoint answered: let the probes answer first, briefly. */
    if (rc == PGC_OK && !own && req->status != PGC_ERR_TRUNCATE && pg_w.fab) {
        rc = fab_remote_verdict(pg_w.fab, FAILED_VERDICT_WAIT);
    }
    if (rc != PGC_OK || req->status == PGC_ERR_TRUNCATE || own) {
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
    rc = pg_wait_coll_locked(req_done, req, timeout, pg_req_who);
    if (rc == PGC_ERR_TIMEOUT) {
        return wait_timed_out(req, timeout);
    }
    if (rc != PGC_OK) {
        /* A dead peer (peer_alive recorded which), or the collective's abort: given up like
         * a timed-out request. */
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
    int asked; /* the request the roll call asked about last (any_who), or -1 */
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

/* The roll call of a wait for any of reqs (a pg_wait_who_fn): each look asks about the next
 * request in turn that pg_req_who knows, so a mismatched collective among them is found
 * whichever place it has in the array. */
static bool any_who(void *arg, struct pg_awaited *aw, bool *may_fail)
{
    struct any_done *a = arg;

    for (int k = 1; k <= a->n; k++) {
        int i = (a->asked + k) % a->n;
        if (a->reqs[i] && pg_req_who(a->reqs[i], aw, may_fail)) {
            a->asked = i;
            return true;
        }
    }
    return false;
}

/* Whether the wait ended on the abort of the collective the roll call asked about last (not
 * on a dead peer, which leaves every request as it is). */
static bool asked_aborted(struct any_done *a)
{
    struct pg_awaited aw;
    bool may_fail = false;

    return a->asked >= 0 && pg_req_who(a->reqs[a->asked], &aw, &may_fail) && may_fail &&
           pg_roll_look(&aw, false) != PGC_OK;
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
    struct any_done a = {reqs, n, -1, -1};
    int rc;

    if (timeout < 0) {
        timeout = pg_w.timeout;
    }
    PG_LOCK();
    rc = pg_wait_coll_locked(first_done, &a, timeout, any_who);
    if (rc == PGC_ERR_TIMEOUT) {
        rc = none_done(reqs, n, timeout);
    } else if (rc != PGC_OK && asked_aborted(&a)) {
        give_up(reqs[a.asked]); /* as pg_wait_locked gives up its request */
    }
    PG_UNLOCK();
    *index = a.index;
    return rc; /* a dead peer: the wait recorded which */
}
