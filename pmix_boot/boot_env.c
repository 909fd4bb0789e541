/*
 * boot_env.c - the store methods: env:// and tcp:// (a TCP store served by rank 0, or by
 * the launcher when MPISHIM_BOOT_STORE_EXTERNAL=1) and file:// (a file store), with the
 * allgather and barrier they share.
 *
 * Allgather round k: every rank sets "boot/ag/<k>/<rank>" and then gets every other rank's
 * key, blocking until it exists. A rank that finished round k knows that every rank
 * finished round k-1 (each set its round-k key after it), so it deletes its own key of
 * round k-1 and the store stays small. The barrier is an allgather of one byte.
 */
#include "config.h"

#include "boot_impl.h"
#include "boot_store.h"
#include "mps_config.h"
#include "mps_log.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <string.h>

#define KEY_LEN 64

static void ag_key(char *key, uint64_t seq, int rank)
{
    snprintf(key, KEY_LEN, "boot/ag/%" PRIu64 "/%d", seq, rank);
}

/* Gets rank r's contribution of round seq into out, waiting until deadline. */
static int get_one(struct boot *b, uint64_t seq, int r, size_t len, void *out, double deadline)
{
    char key[KEY_LEN];
    void *val = NULL;
    size_t vlen = 0;
    double left = deadline - mps_now();
    int rc;

    ag_key(key, seq, r);
    boot_store_set_timeout(b->store, left > 0.001 ? left : 0.001);
    rc = boot_store_get(b->store, key, &val, &vlen);
    if (rc == PGC_ERR_TIMEOUT) {
        return mps_error(rc, "boot_allgather: timed out after %g s waiting for rank %d (of %d)",
                         b->timeout, r, b->info.size);
    }
    if (rc == PGC_OK && vlen != len) {
        rc = mps_error(PGC_ERR_MISMATCH,
                       "boot_allgather: rank %d contributed %zu bytes, rank %d %zu bytes", r, vlen,
                       b->info.rank, len);
    } else if (rc == PGC_OK && len) {
        memcpy(out, val, len);
    }
    free(val);
    return rc;
}

static int store_allgather(struct boot *b, const void *in, size_t len, void *out)
{
    uint64_t seq = b->seq++;
    double deadline = mps_now() + b->timeout;
    char key[KEY_LEN];
    int rc;

    ag_key(key, seq, b->info.rank);
    if ((rc = boot_store_set(b->store, key, in, len)) != PGC_OK) {
        goto out;
    }
    for (int r = 0; r < b->info.size; r++) {
        if (r == b->info.rank) {
            memmove((char *)out + (size_t)r * len, in, len);
        } else if ((rc = get_one(b, seq, r, len, (char *)out + (size_t)r * len, deadline))) {
            goto out;
        }
    }
    if (seq > 0) {
        ag_key(key, seq - 1, b->info.rank);
        rc = boot_store_delete(b->store, key, NULL);
    }
out:
    boot_store_set_timeout(b->store, b->timeout);
    return rc;
}

static int store_barrier(struct boot *b)
{
    char in = 1, *out = malloc((size_t)b->info.size);
    int rc = out ? store_allgather(b, &in, 1, out)
                 : mps_error(PGC_ERR_NOMEM, "boot_barrier: out of memory");

    free(out);
    return rc;
}

static void store_abort(struct boot *b, int code, const char *msg)
{
    /* Under mpiexec (which serves the store) the launcher ends the other ranks when this
     * one exits; only a hand launch has nobody to do it. */
    bool launcher = mps_config_int(MPS_CFG_BOOT_STORE_EXTERNAL) != 0;

    MPS_ERR("boot_abort (%s, code %d): %s%s", b->info.method, code, msg ? msg : "",
            launcher ? "" : "; no launcher to ask to end the other ranks");
}

/* After the final barrier a rank may still be reading that round's keys, so the ranks that
 * are done say so, and rank 0 waits for all of them before it stops the server. */
static void store_fini(struct boot *b, bool barrier_ok)
{
    char key[KEY_LEN];
    int rc = PGC_OK;

    if (barrier_ok && !b->server) {
        snprintf(key, sizeof(key), "boot/done/%d", b->info.rank);
        rc = boot_store_set(b->store, key, "", 0);
    } else if (barrier_ok) {
        for (int r = 1; r < b->info.size && rc == PGC_OK; r++) {
            snprintf(key, sizeof(key), "boot/done/%d", r);
            const char *k = key;
            rc = boot_store_wait(b->store, &k, 1, b->timeout);
        }
    }
    if (rc != PGC_OK) {
        MPS_WARN("boot_fini: %s", mps_last_error());
    }
    boot_store_close(b->store);
    b->store = NULL;
    boot_store_server_stop(b->server);
    b->server = NULL;
}

/* Who serves the job's store: the launcher (mpiexec: MPISHIM_BOOT_STORE_EXTERNAL=1), this
 * rank, or rank 0. */
static const char *store_owner(const struct boot *b)
{
    if (mps_config_int(MPS_CFG_BOOT_STORE_EXTERNAL) != 0) {
        return "the launcher's";
    }
    return b->server ? "this rank's" : "rank 0's";
}

/* Seconds a store may leave checks unanswered before its silence counts as its death. */
#define STORE_SILENCE_VERDICT 10.0

/* Whether an unanswered check (rc) is not a verdict yet: a server on a machine that is busy
 * enough (CI's sanitizer passes, 2 cores) can take more than a check's 2 s to answer, and
 * its silence alone must not fail a healthy job. A closed or refused connection (its
 * process gone) is a verdict at once; a node cut off stays silent and is given up after
 * STORE_SILENCE_VERDICT, or by the wait's own timeout. */
static bool store_silence_forgiven(struct boot *b, int rc)
{
    double now = mps_now();

    if (rc != PGC_ERR_TIMEOUT) {
        b->store_silent_since = 0;
        return false;
    }
    if (b->store_silent_since == 0) {
        b->store_silent_since = now;
    }
    return now - b->store_silent_since < STORE_SILENCE_VERDICT;
}

/* The store server records a rank that left unfinished under boot/dead
 * (boot_store_server.c). A short timeout: an unreachable store must not hold the wait that
 * asks for long. */
static int store_peers_alive(struct boot *b)
{
    const char *k = "boot/dead";
    bool dead = false;
    void *msg = NULL;
    size_t len = 0;
    int rc;

    boot_store_set_timeout(b->store, 2.0);
    rc = boot_store_check(b->store, &k, 1, &dead);
    if (store_silence_forgiven(b, rc)) {
        rc = PGC_OK;
    } else if (rc == PGC_OK && dead && boot_store_get(b->store, k, &msg, &len) == PGC_OK) {
        rc = mps_error(PGC_ERR_PEER_DEAD, "%.*s", (int)len, (char *)msg);
    } else if (rc != PGC_OK) {
        rc = mps_error(PGC_ERR_PEER_DEAD, "the job's store (%s) cannot be reached, so %s: %s",
                       store_owner(b), b->server ? "this rank cannot serve it"
                       : "the process that serves it has died or its node is cut off",
                       mps_last_error());
    }
    free(msg);
    boot_store_set_timeout(b->store, b->timeout);
    return rc;
}

static const struct boot_method store_method = {
    .allgather = store_allgather,
    .barrier = store_barrier,
    .abort = store_abort,
    .fini = store_fini,
    .peers_alive = store_peers_alive,
};

/* Rank and size: the opts value when >= 0, else the environment variable. */
static int read_int(const char *method, const char *var, int given, int min, int *out)
{
    const char *s = getenv(var);
    char *end;
    long v;

    if (given >= 0) {
        *out = given;
        return PGC_OK;
    }
    if (!s || !*s) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init %s: %s is not set", method, var);
    }
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > 1 << 30) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init %s: %s='%s' is not an integer >= %d",
                         method, var, s, min);
    }
    *out = (int)v;
    return PGC_OK;
}

static int rank_and_size(struct boot *b, const char *method, const struct boot_opts *o)
{
    int rc = read_int(method, "RANK", o->rank, 0, &b->info.rank);

    if (rc || (rc = read_int(method, "WORLD_SIZE", o->size, 1, &b->info.size))) {
        return rc;
    }
    if (b->info.rank >= b->info.size) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init %s: rank %d is not below size %d", method,
                         b->info.rank, b->info.size);
    }
    return PGC_OK;
}

/* Rank 0's store listens on MPISHIM_STORE_BIND, by default the address the other ranks
 * are given (MASTER_ADDR or the tcp:// host), never every address unless asked ("*"). */
static int serve_store(struct boot *b, const char *host, int port)
{
    const char *bind = mps_config_str(MPS_CFG_STORE_BIND);

    if (!bind || !*bind) {
        bind = host;
    } else if (!strcmp(bind, "*")) {
        bind = NULL;
    }
    if (!mps_config_is_set(MPS_CFG_STORE_TOKEN)) {
        MPS_DEBUG("boot_init %s://: MPISHIM_STORE_TOKEN is not set, so the store on %s:%d serves "
                  "any client that reaches that address",
                  b->info.method, bind ? bind : "*", port);
    }
    return boot_store_server_start(bind, port, &b->server);
}

/* Rank 0 serves the store unless the launcher does; every rank is a client and registers
 * (boot_store_reg.c) before the first allgather. */
static int tcp_rendezvous(struct boot *b, const char *host, int port)
{
    bool external = mps_config_int(MPS_CFG_BOOT_STORE_EXTERNAL) != 0;
    int rc;

    if (b->info.rank == 0 && !external && (rc = serve_store(b, host, port)) != PGC_OK) {
        return rc;
    }
    rc = boot_store_tcp_connect(host, port, b->timeout, &b->store);
    if (rc == PGC_OK) {
        rc = boot_store_register(b->store, b->info.rank, b->info.size, b->timeout);
        boot_store_set_timeout(b->store, b->timeout);
    }
    if (rc != PGC_OK) {
        boot_store_close(b->store);
        b->store = NULL;
        if (b->server) {
            /* The other ranks may still be reading the error that ended this init (a rank
             * started twice names both processes to every rank): serve them a moment longer
             * instead of resetting their connections. Only a failed start waits. */
            struct timespec grace = {2, 0};
            nanosleep(&grace, NULL);
        }
        boot_store_server_stop(b->server);
        b->server = NULL;
        return rc;
    }
    b->m = &store_method;
    return PGC_OK;
}

int boot_env_start(struct boot *b, const struct boot_opts *o)
{
    const char *host = getenv("MASTER_ADDR");
    int port = 0, rc;

    b->info.method = "env";
    if ((rc = rank_and_size(b, "env://", o)) != PGC_OK) {
        return rc;
    }
    if (!host || !*host) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init env://: MASTER_ADDR is not set");
    }
    if ((rc = read_int("env://", "MASTER_PORT", -1, 1, &port)) != PGC_OK) {
        return rc;
    }
    if (port > 65535) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init env://: MASTER_PORT=%d is not a port",
                         port);
    }
    return tcp_rendezvous(b, host, port);
}

/* addr is "host:port" or "[v6-address]:port". */
int boot_tcp_start(struct boot *b, const char *addr, const struct boot_opts *o)
{
    char host[256];
    const char *colon = strrchr(addr, ':');
    char *end;
    long port;
    size_t hl;
    int rc;

    b->info.method = "tcp";
    if ((rc = rank_and_size(b, "tcp://", o)) != PGC_OK) {
        return rc;
    }
    port = colon ? strtol(colon + 1, &end, 10) : 0;
    hl = colon ? (size_t)(colon - addr) : 0;
    if (addr[0] == '[' && hl >= 2 && addr[hl - 1] == ']') {
        addr++;
        hl -= 2;
    }
    if (!colon || hl == 0 || hl >= sizeof(host) || *end || port <= 0 || port > 65535) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init: tcp://%s is not tcp://host:port", addr);
    }
    memcpy(host, addr, hl);
    host[hl] = '\0';
    return tcp_rendezvous(b, host, (int)port);
}

int boot_file_start(struct boot *b, const char *path, const struct boot_opts *o)
{
    int rc;

    b->info.method = "file";
    if ((rc = rank_and_size(b, "file://", o)) != PGC_OK) {
        return rc;
    }
    if (!*path) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init: file:// needs a path (file:///path)");
    }
    if ((rc = boot_store_file_open(path, b->timeout, &b->store)) != PGC_OK) {
        return rc;
    }
    b->m = &store_method;
    return PGC_OK;
}
