/*
 * pg_flight.c - the flight recorder's rings, its dump, and the recorded forms of the
 * calls of pg.h that both faces use (pg_flight.h says what is recorded and why).
 *
 * The dump writes with write(2) from a stack buffer and formats numbers itself, so that
 * the SIGUSR1 handler may run it (async-signal-safe): the rings are read as they are, and
 * an entry being written at that instant reads as id 0 and is skipped.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_log.h"
#include "pg_flight.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Groups whose rings a dump walks; a group beyond these records but is not dumped. */
#define FL_REGISTRY 256

static struct pg_flight *registry[FL_REGISTRY];
static char fl_path[512];               /* MPISHIM_FLIGHT_RECORDER_FILE, read at init */
static uint64_t fl_tick0, fl_ns0;       /* a tick and the monotonic time together (at init) */
static uint64_t fl_dumped = UINT64_MAX; /* operations recorded at the last dump */
static bool fl_on;                      /* MPISHIM_FLIGHT_RECORDER > 0 at init */

/* ---- the rings ---- */

struct pg_flight *pg_flight_new(const struct pg_group *g)
{
    long n = mps_config_int(MPS_CFG_FLIGHT_RECORDER);
    struct pg_flight *f;

    if (n <= 0 || n > (1L << 20)) {
        return NULL;
    }
    f = calloc(1, sizeof(*f) + sizeof(f->rec[0]) * (size_t)n);
    if (!f) {
        MPS_WARN("no memory for a flight recorder of %ld operations: group not recorded", n);
        return NULL;
    }
    f->n = (uint32_t)n;
    f->ctx = g->ctx;
    f->rank = g->rank;
    f->size = g->size;
    f->reg = -1;
    for (int i = 0; i < FL_REGISTRY && f->reg < 0; i++) {
        struct pg_flight *none = NULL;

        if (__atomic_compare_exchange_n(&registry[i], &none, f, false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_RELAXED)) {
            f->reg = i;
        }
    }
    return f;
}

void pg_flight_free(struct pg_flight *f)
{
    if (!f) {
        return;
    }
    if (f->reg >= 0) {
        __atomic_store_n(&registry[f->reg], NULL, __ATOMIC_RELEASE);
    }
    free(f);
}

/* ---- the dump ---- */

struct out {
    int fd;
    size_t n;
    char buf[1024];
};

static void out_flush(struct out *o)
{
    size_t done = 0;

    while (done < o->n) {
        ssize_t w = write(o->fd, o->buf + done, o->n - done);

        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            break;
        }
        done += (size_t)w;
    }
    o->n = 0;
}

static void out_str(struct out *o, const char *s)
{
    for (; *s; s++) {
        if (o->n == sizeof(o->buf)) {
            out_flush(o);
        }
        o->buf[o->n++] = *s;
    }
}

static void out_u64(struct out *o, uint64_t v)
{
    char d[24];
    int i = (int)sizeof(d) - 1;

    d[i] = '\0';
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    out_str(o, d + i);
}

static void out_int(struct out *o, int64_t v)
{
    if (v < 0) {
        out_str(o, "-");
        v = -v;
    }
    out_u64(o, (uint64_t)v);
}

/* Microseconds as seconds with 6 decimals. */
static void out_secs(struct out *o, uint64_t us)
{
    char frac[8];

    out_u64(o, us / 1000000);
    for (int i = 5; i >= 0; i--) {
        frac[i] = (char)('0' + us % 10);
        us /= 10;
    }
    frac[6] = '\0';
    out_str(o, ".");
    out_str(o, frac);
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Ticks per microsecond, from the ticks and the time elapsed since init. */
static double ticks_per_us(uint64_t tick_now, uint64_t ns_now)
{
#if defined(__x86_64__) || defined(__i386__)
    if (ns_now > fl_ns0 + 1000000 && tick_now > fl_tick0) {
        return (double)(tick_now - fl_tick0) * 1000.0 / (double)(ns_now - fl_ns0);
    }
    return 1000.0; /* under a millisecond since init: any rate reads as 0 s */
#else
    return 1000.0; /* ticks are nanoseconds */
#endif
}

/* The collectives' names are the signatures' (pg_coll_sig.c). */
static const char *kind_name(int kind)
{
    if (kind == PG_FL_SEND || kind == PG_FL_RECV) {
        return kind == PG_FL_SEND ? "send" : "recv";
    }
    return pg_coll_kind_name((unsigned)kind);
}

static const char *state_name(int state)
{
    return state == PG_FL_DONE ? "done" : state == PG_FL_FAILED ? "FAILED" : "POSTED";
}

/* One line: "op 12: bcast coll seq 7, 8 B, root 0, POSTED, posted 2.000113 s ago". */
static void dump_rec(struct out *o, const struct pg_flight_rec *r, uint64_t tick_now, double tpu)
{
    bool coll = r->kind < PG_COLL_KINDS;

    out_str(o, "[mpishim flight] rank ");
    out_int(o, pg_w.rank);
    out_str(o, "   op ");
    out_u64(o, r->id);
    out_str(o, ": ");
    out_str(o, kind_name(r->kind));
    out_str(o, coll ? " coll seq " : " p2p seq ");
    out_u64(o, r->seq);
    out_str(o, ", ");
    out_u64(o, r->bytes);
    out_str(o, " B");
    if (!coll || r->peer >= 0) {
        out_str(o, r->kind == PG_FL_SEND ? ", to " : r->kind == PG_FL_RECV ? ", from " : ", root ");
        if (r->peer == PG_ANY_SOURCE) {
            out_str(o, "any");
        } else {
            out_int(o, r->peer);
        }
    }
    out_str(o, ", ");
    out_str(o, state_name(r->state));
    if (r->state == PG_FL_FAILED) {
        out_str(o, " (status ");
        out_int(o, r->status);
        out_str(o, ")");
    }
    out_str(o, ", posted ");
    out_secs(o, (uint64_t)((double)(tick_now - r->t_post) / tpu));
    out_str(o, " s ago\n");
}

static void dump_ring(struct out *o, const struct pg_flight *f, uint64_t tick_now, double tpu)
{
    uint64_t last = f->next_id, first = last > f->n ? last - f->n + 1 : 1;

    out_str(o, "[mpishim flight] rank ");
    out_int(o, pg_w.rank);
    out_str(o, " group ctx ");
    out_u64(o, f->ctx);
    out_str(o, " (rank ");
    out_int(o, f->rank);
    out_str(o, " of ");
    out_int(o, f->size);
    out_str(o, "): operations ");
    out_u64(o, first);
    out_str(o, " to ");
    out_u64(o, last);
    out_str(o, ", oldest first\n");
    /* The entry of operation id sits at (id - 1) % n. */
    for (uint64_t id = first; id <= last && last > 0; id++) {
        const struct pg_flight_rec *r = &f->rec[(id - 1) % f->n];

        if (r->id == id) {
            dump_rec(o, r, tick_now, tpu);
        }
    }
}

static uint64_t recorded_total(void)
{
    uint64_t total = 0;

    for (int i = 0; i < FL_REGISTRY; i++) {
        const struct pg_flight *f = __atomic_load_n(&registry[i], __ATOMIC_ACQUIRE);

        total += f ? f->next_id : 0;
    }
    return total;
}

static void dump(const char *why, bool always)
{
    uint64_t total = recorded_total(), tick_now = pg_flight_ticks(), ns = now_ns();
    double tpu = ticks_per_us(tick_now, ns);
    struct out o = {.fd = STDERR_FILENO};

    if (!always && total == fl_dumped) {
        return; /* nothing new since the last dump (a timeout, then the fatal error) */
    }
    fl_dumped = total;
    if (fl_path[0]) {
        o.fd = open(fl_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        o.fd = o.fd < 0 ? STDERR_FILENO : o.fd;
    }
    out_str(&o, "[mpishim flight] rank ");
    out_int(&o, pg_w.rank);
    out_str(&o, " (pid ");
    out_int(&o, getpid());
    out_str(&o, "): flight recorder dump on ");
    out_str(&o, why);
    out_str(&o, "\n");
    for (int i = 0; i < FL_REGISTRY; i++) {
        const struct pg_flight *f = __atomic_load_n(&registry[i], __ATOMIC_ACQUIRE);

        if (f && f->next_id > 0) {
            dump_ring(&o, f, tick_now, tpu);
        }
    }
    out_str(&o, "[mpishim flight] rank ");
    out_int(&o, pg_w.rank);
    out_str(&o, ": end of dump\n");
    out_flush(&o);
    if (o.fd != STDERR_FILENO) {
        close(o.fd);
    }
}

void pg_flight_dump_all(const char *why)
{
    if (fl_on) {
        dump(why, false);
    }
}

static void on_sigusr1(int sig)
{
    int saved = errno;

    dump("SIGUSR1", true);
    errno = saved;
}

void pg_flight_init(void)
{
    static bool installed;
    struct sigaction old, sa;

    fl_tick0 = pg_flight_ticks();
    fl_ns0 = now_ns();
    snprintf(fl_path, sizeof(fl_path), "%s", mps_config_str(MPS_CFG_FLIGHT_RECORDER_FILE));
    fl_on = mps_config_int(MPS_CFG_FLIGHT_RECORDER) > 0;
    if (installed || mps_config_int(MPS_CFG_FLIGHT_RECORDER) <= 0 ||
        sigaction(SIGUSR1, NULL, &old) != 0 || old.sa_handler != SIG_DFL) {
        return;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_sigusr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    installed = sigaction(SIGUSR1, &sa, NULL) == 0;
}

/* ---- the recorded calls ---- */

int pg_flight_attach_slow(struct pg_flight_op op, struct pg_req *req, int rc)
{
    if (rc != PGC_OK) {
        return pg_flight_end(op, rc);
    }
    /* Under the lock, so that progress in another thread does not complete the request
     * between the look and the hand-over. */
    PG_LOCK();
    if (pg_req_is_done(req)) {
        pg_flight_end(op, req->status);
    } else {
        req->fl_id = op.id;
        req->fl_rec = op.rec;
    }
    PG_UNLOCK();
    return rc;
}
