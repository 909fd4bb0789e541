/*
 * boot_pmix.c - the PMIx method (srun --mpi=pmix, Open MPI's mpirun): rank from PMIx_Init,
 * size from PMIX_JOB_SIZE, allgather as Put + Commit + Fence(collect data) + Get, barrier
 * as a Fence without data. pmix_status_t is converted here and goes no further.
 *
 * PMIx_Init is run in a watchdog thread: libpmix 4.2 returns PMIX_ERR_UNREACH at once when
 * the server's port is closed, but it blocks forever when something accepts the
 * connection and never answers (measured: no return after 30 s with PMIX_SERVER_URI41
 * pointing at such a listener). After the timeout boot_init fails with
 * PGC_ERR_UNREACHABLE and abandons the thread, which frees its state if it ever returns.
 */
#include "config.h"

#include "boot_impl.h"
#include "mps_log.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <errno.h>
#include <pmix.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pmix_state {
    pmix_proc_t me, all; /* this process, and the wildcard of its namespace */
};

static int from_pmix(pmix_status_t rc, const char *call)
{
    int st;

    switch (rc) {
    case PMIX_ERR_TIMEOUT:
        st = PGC_ERR_TIMEOUT;
        break;
    case PMIX_ERR_UNREACH:
    case PMIX_ERR_LOST_CONNECTION:
        st = PGC_ERR_UNREACHABLE;
        break;
    case PMIX_ERR_NOMEM:
        st = PGC_ERR_NOMEM;
        break;
    case PMIX_ERR_NOT_FOUND:
        st = PGC_ERR_NOT_FOUND;
        break;
    case PMIX_ERR_PROC_ABORTED:
    case PMIX_ERR_PROC_ABORTING:
        st = PGC_ERR_PEER_DEAD;
        break;
    default:
        st = PGC_ERR_BOOT;
    }
    return mps_error(st, "%s failed: %s (PMIx status %d)", call, PMIx_Error_string(rc), (int)rc);
}

/* PMIx_Init under a watchdog. */

struct init_job {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done, abandoned;
    pmix_status_t rc;
    pmix_proc_t proc;
};

static void *init_thread(void *arg)
{
    struct init_job *j = arg;
    pmix_proc_t proc;
    pmix_status_t rc = PMIx_Init(&proc, NULL, 0);
    bool abandoned;

    pthread_mutex_lock(&j->mu);
    j->rc = rc;
    j->proc = proc;
    j->done = true;
    abandoned = j->abandoned;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    if (abandoned) {
        free(j);
    }
    return NULL;
}

static struct init_job *new_job(void)
{
    struct init_job *j = calloc(1, sizeof(*j));
    pthread_condattr_t ca;

    if (j) {
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_mutex_init(&j->mu, NULL);
        pthread_cond_init(&j->cv, &ca);
        pthread_condattr_destroy(&ca);
    }
    return j;
}

/* Returns the PMIx status; *hung tells that PMIx_Init did not return in time. */
static pmix_status_t init_with_watchdog(double timeout, pmix_proc_t *me, bool *hung)
{
    struct init_job *j = new_job();
    struct timespec until;
    pthread_t t;
    pmix_status_t rc;

    *hung = false;
    if (!j || pthread_create(&t, NULL, init_thread, j) != 0) {
        free(j);
        return PMIX_ERR_NOMEM;
    }
    pthread_detach(t);
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)timeout;
    until.tv_nsec += (long)((timeout - (double)(time_t)timeout) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&j->mu);
    while (!j->done && pthread_cond_timedwait(&j->cv, &j->mu, &until) != ETIMEDOUT) {
    }
    rc = j->done ? j->rc : PMIX_ERR_TIMEOUT;
    *me = j->proc;
    j->abandoned = !j->done;
    *hung = j->abandoned;
    pthread_mutex_unlock(&j->mu);
    if (!j->abandoned) {
        free(j);
    }
    return rc;
}

/* "PMIX_NAMESPACE=x PMIX_RANK=0 PMIX_SERVER_URI41=..." for the error message. */
static void seen_vars(char *buf, size_t n)
{
    static const char *vars[] = {"PMIX_NAMESPACE",   "PMIX_RANK",        "PMIX_SERVER_URI41",
                                 "PMIX_SERVER_URI4", "PMIX_SERVER_URI3", "PMIX_SERVER_URI21",
                                 "PMIX_SERVER_URI2", "PMIX_SERVER_URI",  "PMIX_SERVER_TMPDIR"};
    size_t used = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]) && used + 1 < n; i++) {
        const char *v = getenv(vars[i]);
        if (v) {
            int w = snprintf(buf + used, n - used, "%s%s=%.80s", used ? " " : "", vars[i], v);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (!buf[0]) {
        snprintf(buf, n, "none");
    }
}

/* The collectives. */

static struct pmix_state *state(struct boot *b)
{
    return b->priv;
}

/* info[0]: PMIX_TIMEOUT (whole seconds, at least 1); info[1]: PMIX_COLLECT_DATA when collect. */
static int fence(struct boot *b, bool collect)
{
    pmix_info_t info[2];
    int secs = (int)b->timeout + 1;
    bool yes = true;
    pmix_status_t rc;

    PMIX_INFO_LOAD(&info[0], PMIX_TIMEOUT, &secs, PMIX_INT);
    PMIX_INFO_LOAD(&info[1], PMIX_COLLECT_DATA, &yes, PMIX_BOOL);
    rc = PMIx_Fence(&state(b)->all, 1, info, collect ? 2 : 1);
    PMIX_INFO_DESTRUCT(&info[0]);
    PMIX_INFO_DESTRUCT(&info[1]);
    return rc == PMIX_SUCCESS ? PGC_OK : from_pmix(rc, "boot_allgather: PMIx_Fence");
}

static int get_rank(struct boot *b, const char *key, int r, size_t len, void *out)
{
    pmix_proc_t p = state(b)->me;
    pmix_value_t *v = NULL;
    pmix_status_t prc;
    int rc = PGC_OK;

    p.rank = (pmix_rank_t)r;
    prc = PMIx_Get(&p, key, NULL, 0, &v);
    if (prc != PMIX_SUCCESS) {
        return from_pmix(prc, "boot_allgather: PMIx_Get");
    }
    if (v->type != PMIX_BYTE_OBJECT || v->data.bo.size != len) {
        rc = mps_error(PGC_ERR_MISMATCH,
                       "boot_allgather: rank %d contributed %zu bytes (type %d), rank %d %zu", r,
                       v->type == PMIX_BYTE_OBJECT ? v->data.bo.size : 0, (int)v->type,
                       b->info.rank, len);
    } else if (len) {
        memcpy(out, v->data.bo.bytes, len);
    }
    PMIX_VALUE_RELEASE(v);
    return rc;
}

static int pmix_allgather(struct boot *b, const void *in, size_t len, void *out)
{
    char key[PMIX_MAX_KEYLEN];
    pmix_value_t v = {.type = PMIX_BYTE_OBJECT};
    pmix_status_t prc;
    int rc;

    snprintf(key, sizeof(key), "mps.ag.%llu", (unsigned long long)b->seq++);
    v.data.bo.bytes = (char *)in;
    v.data.bo.size = len;
    if ((prc = PMIx_Put(PMIX_GLOBAL, key, &v)) != PMIX_SUCCESS) {
        return from_pmix(prc, "boot_allgather: PMIx_Put");
    }
    if ((prc = PMIx_Commit()) != PMIX_SUCCESS) {
        return from_pmix(prc, "boot_allgather: PMIx_Commit");
    }
    if ((rc = fence(b, true)) != PGC_OK) {
        return rc;
    }
    for (int r = 0; r < b->info.size; r++) {
        if (r == b->info.rank) {
            memmove((char *)out + (size_t)r * len, in, len);
        } else if ((rc = get_rank(b, key, r, len, (char *)out + (size_t)r * len)) != PGC_OK) {
            return rc;
        }
    }
    return PGC_OK;
}

static int pmix_barrier(struct boot *b)
{
    return fence(b, false);
}

static void pmix_abort(struct boot *b, int code, const char *msg)
{
    pmix_status_t rc = PMIx_Abort(code, msg ? msg : "", NULL, 0);

    if (rc != PMIX_SUCCESS) {
        from_pmix(rc, "boot_abort: PMIx_Abort");
        MPS_ERR("%s", mps_last_error());
    }
}

/* How long boot_abort_launcher waits for a PMIx server to take a new connection. A server
 * that launched us answers at once; one that never does must not hold the exit up. */
#define ABORT_INIT_TIMEOUT 5.0

void boot_abort_launcher(int code, const char *msg)
{
    pmix_proc_t me;
    pmix_status_t rc;
    bool hung;

    /* Set by every PMIx server in its clients' environment (srun --mpi=pmix, prterun). */
    if (!getenv("PMIX_NAMESPACE")) {
        boot_pmi1_abort_launcher(code);
        return;
    }
    rc = init_with_watchdog(ABORT_INIT_TIMEOUT, &me, &hung);
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_Abort(code, msg ? msg : "", NULL, 0);
    }
    if (rc != PMIX_SUCCESS) {
        from_pmix(rc, "boot_abort_launcher: PMIx_Init/PMIx_Abort");
        MPS_ERR("%s: the launcher may not end the other ranks", mps_last_error());
    }
}

static void pmix_fini(struct boot *b, bool barrier_ok)
{
    pmix_status_t rc = PMIx_Finalize(NULL, 0);

    if (rc != PMIX_SUCCESS) {
        from_pmix(rc, "boot_fini: PMIx_Finalize");
        MPS_WARN("%s", mps_last_error());
    }
    free(b->priv);
    b->priv = NULL;
}

/* Process-termination events (issue 40: a dead rank of another node has no pid to watch).
 * The handler runs on PMIx's progress thread and only records the first rank reported;
 * boot_peers_alive reads it from a waiting thread. Static: a handler gets no user pointer,
 * and a process has one PMIx client. */
static _Atomic int dead_rank = -1;
static _Atomic int dead_status;

static void on_termination(size_t id, pmix_status_t status, const pmix_proc_t *source,
                           pmix_info_t info[], size_t ninfo, pmix_info_t *results, size_t nresults,
                           pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    int rank = source ? (int)source->rank : -1, none = -1;

    (void)id;
    (void)results;
    (void)nresults;
    /* The server is the source of a termination event; the rank is the affected process. */
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) &&
            info[i].value.type == PMIX_PROC && info[i].value.data.proc) {
            rank = (int)info[i].value.data.proc->rank;
        }
    }
    if (rank >= 0 && rank != (int)PMIX_RANK_WILDCARD) {
        dead_status = status;
        atomic_compare_exchange_strong(&dead_rank, &none, rank);
    }
    if (cbfunc) {
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
    }
}

/* Registers on_termination; a server that offers no events leaves only the fabric's and
 * the launcher's own detection, which is not an error. */
static void watch_terminations(void)
{
    /* Not PMIX_PROC_TERMINATED: a rank that finalized and exited is no error to a peer
     * still waiting on a group without it. */
    pmix_status_t codes[] = {PMIX_ERR_PROC_ABORTED, PMIX_ERR_PROC_TERM_WO_SYNC,
                             PMIX_ERR_PROC_ABORTING};
    pmix_status_t rc =
        PMIx_Register_event_handler(codes, sizeof(codes) / sizeof(codes[0]), NULL, 0,
                                    on_termination, NULL, NULL);

    if (rc < 0) {
        MPS_DEBUG("boot_init: PMIx_Register_event_handler: %s (no termination events)",
                  PMIx_Error_string(rc));
    }
}

static int pmix_peers_alive(struct boot *b)
{
    int r = atomic_load(&dead_rank);

    (void)b;
    if (r < 0) {
        return PGC_OK;
    }
    return mps_error(PGC_ERR_PEER_DEAD, "rank %d has died (the PMIx server reported %s)", r,
                     PMIx_Error_string(atomic_load(&dead_status)));
}

static const struct boot_method pmix_method = {
    .allgather = pmix_allgather,
    .barrier = pmix_barrier,
    .abort = pmix_abort,
    .fini = pmix_fini,
    .peers_alive = pmix_peers_alive,
};

/* Start. */

static int job_size(const pmix_proc_t *all, int *size)
{
    pmix_value_t *v = NULL;
    pmix_status_t rc = PMIx_Get(all, PMIX_JOB_SIZE, NULL, 0, &v);

    if (rc != PMIX_SUCCESS) {
        return from_pmix(rc, "boot_init: PMIx_Get(PMIX_JOB_SIZE)");
    }
    switch (v->type) {
    case PMIX_UINT32:
        *size = (int)v->data.uint32;
        break;
    case PMIX_INT:
        *size = v->data.integer;
        break;
    case PMIX_UINT16:
        *size = v->data.uint16;
        break;
    default:
        *size = -1;
    }
    PMIX_VALUE_RELEASE(v);
    if (*size <= 0) {
        return mps_error(PGC_ERR_BOOT, "boot_init: PMIX_JOB_SIZE has no usable value");
    }
    return PGC_OK;
}

int boot_pmix_start(struct boot *b)
{
    struct pmix_state *st = calloc(1, sizeof(*st));
    char vars[768];
    pmix_status_t prc;
    bool hung;
    int rc;

    b->info.method = "pmix";
    if (!st) {
        return mps_error(PGC_ERR_NOMEM, "boot_init: out of memory");
    }
    prc = init_with_watchdog(b->timeout, &st->me, &hung);
    if (prc != PMIX_SUCCESS) {
        seen_vars(vars, sizeof(vars));
        free(st);
        if (hung) {
            return mps_error(PGC_ERR_UNREACHABLE,
                             "boot_init: PMIx server unreachable: PMIx_Init did not return "
                             "within %g s (variables seen: %s)",
                             b->timeout, vars);
        }
        return mps_error(PGC_ERR_UNREACHABLE,
                         "boot_init: PMIx server unreachable: PMIx_Init returned %s "
                         "(variables seen: %s)",
                         PMIx_Error_string(prc), vars);
    }
    st->all = st->me;
    st->all.rank = PMIX_RANK_WILDCARD;
    if ((rc = job_size(&st->all, &b->info.size)) != PGC_OK) {
        PMIx_Finalize(NULL, 0);
        free(st);
        return rc;
    }
    b->info.rank = (int)st->me.rank;
    /* From here on every message, those of a failing MPI_Init included, names this rank. */
    mps_log_set_rank(b->info.rank);
    b->priv = st;
    b->m = &pmix_method;
    atomic_store(&dead_rank, -1); /* an earlier start's news is not this one's */
    watch_terminations();
    return PGC_OK;
}
