/*
 * boot_store_tcp.c - the TCP store client: one socket, one request and one answer at a time.
 *
 * Blocking gets and waits are parked by the server (boot_store_server.c), which answers
 * with PGC_ERR_TIMEOUT at the deadline; the client only guards against a server that
 * stopped answering, by waiting a grace period longer. A lost connection (or an answer that
 * never came) leaves the handle broken: every later call fails with PGC_ERR_UNREACHABLE.
 */
#include "config.h"

#include "boot_store_impl.h"
#include "mps_config.h"
#include "mps_log.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How much longer than the server's deadline a client waits for the answer. */
#define GRACE_S 5.0

struct tcp_store {
    struct boot_store base;
    int fd;
    char where[300]; /* "host:port" for messages */
    struct boot_buf req, resp;
};

static struct tcp_store *to_tcp(struct boot_store *s)
{
    return container_of(s, struct tcp_store, base);
}

static void broken(struct tcp_store *ts)
{
    if (ts->fd >= 0) {
        close(ts->fd);
        ts->fd = -1;
    }
}

int boot_wait_fd(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - mps_now();
        struct pollfd p = {.fd = fd, .events = events};
        int n;

        if (left <= 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        n = poll(&p, 1, (int)MPS_MIN(left * 1e3 + 1, (double)INT_MAX));
        if (n > 0) {
            return 0;
        }
        if (n < 0 && errno != EINTR) {
            return -1;
        }
    }
}

static int send_all(struct tcp_store *ts, const char *op)
{
    size_t off = 0;

    while (off < ts->req.len) {
        ssize_t n = send(ts->fd, ts->req.p + off, ts->req.len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            int err = errno;
            broken(ts);
            return mps_error(PGC_ERR_UNREACHABLE, "boot_store_%s: connection to %s lost: %s", op,
                             ts->where, strerror(err));
        }
        off += (size_t)n;
    }
    return PGC_OK;
}

static int recv_exact(struct tcp_store *ts, const char *op, char *p, size_t len, double deadline)
{
    size_t off = 0;

    while (off < len) {
        if (boot_wait_fd(ts->fd, POLLIN, deadline) != 0) {
            broken(ts); /* a late answer would desynchronize the stream */
            return mps_error(PGC_ERR_TIMEOUT, "boot_store_%s: no answer from the server at %s", op,
                             ts->where);
        }
        ssize_t n = recv(ts->fd, p + off, len - off, 0);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            int err = n == 0 ? 0 : errno;
            broken(ts);
            return mps_error(PGC_ERR_UNREACHABLE, "boot_store_%s: connection to %s lost: %s", op,
                             ts->where, err ? strerror(err) : "closed by the server");
        }
        off += (size_t)n;
    }
    return PGC_OK;
}

static void begin_request(struct tcp_store *ts, uint32_t op, double timeout, uint32_t nfields)
{
    ts->req.len = 0;
    boot_buf_put_u32(&ts->req, 0); /* the frame length, patched by call() */
    boot_buf_put_u32(&ts->req, op);
    boot_buf_put_u64(&ts->req, timeout > 0 ? (uint64_t)(timeout * 1000.0) : 0);
    boot_buf_put_u32(&ts->req, nfields);
}

/* Sends the request in ts->req and receives the answer into ts->resp, positioned at its
 * first field. An error answer is recorded with the server's message. */
static int call(struct tcp_store *ts, const char *op, double wait)
{
    uint32_t n, status, nf;
    const char *msg = "";
    size_t mlen = 0;
    int rc;

    if (ts->fd < 0) {
        return mps_error(PGC_ERR_UNREACHABLE, "boot_store_%s: the connection to %s was lost", op,
                         ts->where);
    }
    n = (uint32_t)(ts->req.len - 4);
    ts->req.len = 0;
    boot_buf_put_u32(&ts->req, n); /* cannot fail: the buffer already holds it */
    ts->req.len = n + 4;
    double deadline = mps_now() + wait;
    char hdr[4];
    if ((rc = send_all(ts, op)) || (rc = recv_exact(ts, op, hdr, 4, deadline))) {
        return rc;
    }
    struct boot_buf h = {.p = hdr, .len = 4};
    boot_buf_get_u32(&h, &n);
    ts->resp.len = ts->resp.pos = 0;
    if (n < 8 || n > BOOT_STORE_FRAME_MAX || (rc = boot_buf_reserve(&ts->resp, n)) ||
        (rc = recv_exact(ts, op, ts->resp.p, n, deadline))) {
        broken(ts);
        return rc ? rc
                  : mps_error(PGC_ERR_UNREACHABLE, "boot_store_%s: bad answer from %s", op,
                              ts->where);
    }
    ts->resp.len = n;
    boot_buf_get_u32(&ts->resp, &status);
    boot_buf_get_u32(&ts->resp, &nf);
    if ((int32_t)status != PGC_OK) {
        if (nf > 0) {
            boot_buf_get_field(&ts->resp, &msg, &mlen);
        }
        return mps_error((int32_t)status, "boot_store_%s: %.*s (server %s)", op, (int)mlen, msg,
                         ts->where);
    }
    return PGC_OK;
}

/* Reads one field of the answer as a malloc'd NUL-terminated copy. */
static int answer_bytes(struct tcp_store *ts, const char *op, void **val, size_t *len)
{
    const char *p;

    if (boot_buf_get_field(&ts->resp, &p, len)) {
        broken(ts);
        return mps_error(PGC_ERR_UNREACHABLE, "boot_store_%s: short answer from %s", op, ts->where);
    }
    *val = boot_memdup0(p, *len);
    return *val ? PGC_OK : mps_error(PGC_ERR_NOMEM, "boot_store_%s: out of memory", op);
}

static int answer_u64(struct tcp_store *ts, const char *op, uint64_t *v)
{
    uint32_t n;

    if (boot_buf_get_u32(&ts->resp, &n) || n != 8 || boot_buf_get_u64(&ts->resp, v)) {
        broken(ts);
        return mps_error(PGC_ERR_UNREACHABLE, "boot_store_%s: short answer from %s", op, ts->where);
    }
    return PGC_OK;
}

static int answer_bool(struct tcp_store *ts, const char *op, bool *v)
{
    void *p;
    size_t n;
    int rc = answer_bytes(ts, op, &p, &n);

    if (rc == PGC_OK) {
        *v = n == 1 && *(char *)p != 0;
        free(p);
    }
    return rc;
}

/* The operations. */

static int tcp_set(struct boot_store *s, const char *key, const void *val, size_t len)
{
    struct tcp_store *ts = to_tcp(s);

    begin_request(ts, BOOT_OP_SET, 0, 2);
    boot_buf_put_field(&ts->req, key, strlen(key));
    if (boot_buf_put_field(&ts->req, val, len) != PGC_OK) {
        return PGC_ERR_NOMEM;
    }
    return call(ts, "set", s->timeout);
}

static int tcp_get(struct boot_store *s, const char *key, double timeout, void **val, size_t *len)
{
    struct tcp_store *ts = to_tcp(s);
    int rc;

    begin_request(ts, BOOT_OP_GET, timeout, 1);
    boot_buf_put_field(&ts->req, key, strlen(key));
    rc = call(ts, "get", timeout + GRACE_S);
    if (rc == PGC_ERR_TIMEOUT) {
        return mps_error(rc, "boot_store_get: key %s not set after %g s (server %s)", key, timeout,
                         ts->where);
    }
    return rc ? rc : answer_bytes(ts, "get", val, len);
}

static int tcp_add(struct boot_store *s, const char *key, int64_t delta, int64_t *result)
{
    struct tcp_store *ts = to_tcp(s);
    uint64_t v;
    int rc;

    begin_request(ts, BOOT_OP_ADD, 0, 2);
    boot_buf_put_field(&ts->req, key, strlen(key));
    boot_buf_put_u32(&ts->req, 8);
    boot_buf_put_u64(&ts->req, (uint64_t)delta);
    if ((rc = call(ts, "add", s->timeout)) || (rc = answer_u64(ts, "add", &v))) {
        return rc;
    }
    *result = (int64_t)v;
    return PGC_OK;
}

static int tcp_compare_set(struct boot_store *s, const char *key, const void *expected, size_t elen,
                           const void *desired, size_t dlen, void **cur, size_t *clen)
{
    struct tcp_store *ts = to_tcp(s);
    int rc;

    begin_request(ts, BOOT_OP_CAS, 0, 3);
    boot_buf_put_field(&ts->req, key, strlen(key));
    boot_buf_put_field(&ts->req, expected, elen);
    boot_buf_put_field(&ts->req, desired, dlen);
    rc = call(ts, "compare_set", s->timeout);
    return rc ? rc : answer_bytes(ts, "compare_set", cur, clen);
}

static void put_keys(struct tcp_store *ts, const char *const *keys, int n)
{
    for (int i = 0; i < n; i++) {
        boot_buf_put_field(&ts->req, keys[i], strlen(keys[i]));
    }
}

static int tcp_wait(struct boot_store *s, const char *const *keys, int n, double timeout)
{
    struct tcp_store *ts = to_tcp(s);
    int rc;

    begin_request(ts, BOOT_OP_WAIT, timeout, (uint32_t)n);
    put_keys(ts, keys, n);
    rc = call(ts, "wait", timeout + GRACE_S);
    if (rc == PGC_ERR_TIMEOUT) {
        return mps_error(rc, "boot_store_wait: %d key(s) from %s not all set after %g s", n,
                         n ? keys[0] : "", timeout);
    }
    return rc;
}

static int tcp_check(struct boot_store *s, const char *const *keys, int n, bool *all_exist)
{
    struct tcp_store *ts = to_tcp(s);
    int rc;

    begin_request(ts, BOOT_OP_CHECK, 0, (uint32_t)n);
    put_keys(ts, keys, n);
    rc = call(ts, "check", s->timeout);
    return rc ? rc : answer_bool(ts, "check", all_exist);
}

static int tcp_del(struct boot_store *s, const char *key, bool *deleted)
{
    struct tcp_store *ts = to_tcp(s);
    int rc;

    begin_request(ts, BOOT_OP_DEL, 0, 1);
    boot_buf_put_field(&ts->req, key, strlen(key));
    rc = call(ts, "delete", s->timeout);
    return rc ? rc : answer_bool(ts, "delete", deleted);
}

static int tcp_num_keys(struct boot_store *s, int64_t *n)
{
    struct tcp_store *ts = to_tcp(s);
    uint64_t v;
    int rc;

    begin_request(ts, BOOT_OP_NUM_KEYS, 0, 0);
    if ((rc = call(ts, "num_keys", s->timeout)) || (rc = answer_u64(ts, "num_keys", &v))) {
        return rc;
    }
    *n = (int64_t)v;
    return PGC_OK;
}

static void tcp_close(struct boot_store *s)
{
    struct tcp_store *ts = to_tcp(s);

    broken(ts);
    boot_buf_free(&ts->req);
    boot_buf_free(&ts->resp);
    free(ts);
}

static const struct boot_store_ops tcp_ops = {
    .name = "tcp",
    .set = tcp_set,
    .get = tcp_get,
    .add = tcp_add,
    .compare_set = tcp_compare_set,
    .wait = tcp_wait,
    .check = tcp_check,
    .del = tcp_del,
    .num_keys = tcp_num_keys,
    .close = tcp_close,
};

/* Connecting. */

int boot_connect_fd(const struct addrinfo *ai, double deadline)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int err = 0;
    socklen_t el = sizeof(err);

    if (fd < 0) {
        return -1;
    }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS || boot_wait_fd(fd, POLLOUT, deadline) != 0) {
            goto fail;
        }
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err != 0) {
            errno = err ? err : errno;
            goto fail;
        }
    }
    return fd;
fail:
    err = errno;
    close(fd);
    errno = err;
    return -1;
}

/* One connect to ai, bounded by deadline; the connected fd or -1 (errno). */
static int connect_one(const struct addrinfo *ai, double deadline)
{
    int fd = boot_connect_fd(ai, deadline), one = 1;

    if (fd >= 0) {
        /* Back to blocking: the client waits with poll() and sends whole requests. */
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return fd;
}

/* The longest connect to one host while others are listed: a firewall that drops the
 * connect answers nothing, and the next host may be the one that serves. */
#define HOST_TRY_S 5.0

/* One round over the addresses of host:port, each connect bounded by deadline; PGC_OK with
 * the descriptor, else *err the last errno. */
static int try_host(const char *host, const char *port, double deadline, int *fd_out, int *err)
{
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int g = getaddrinfo(host, port, &hints, &res);

    for (struct addrinfo *ai = g == 0 ? res : NULL; ai; ai = ai->ai_next) {
        int fd = connect_one(ai, deadline);
        if (fd >= 0) {
            freeaddrinfo(res);
            *fd_out = fd;
            return PGC_OK;
        }
        *err = errno;
    }
    if (g != 0) {
        *err = g == EAI_SYSTEM ? errno : EHOSTUNREACH; /* name not resolvable (yet) */
    } else {
        freeaddrinfo(res);
    }
    return PGC_ERR_UNREACHABLE;
}

/* Tries every address of host:port until one connects or the deadline passes, sleeping a
 * little between rounds (the server may not listen yet). hosts may list several, comma
 * separated (the default store's candidates for rank 0, pgc_store.c): each round tries
 * them in order, each for at most HOST_TRY_S. */
static int connect_retry(const char *hosts, int port, double deadline, int *fd_out, int *err)
{
    char portstr[16];
    struct timespec pause = {0, 50 * 1000 * 1000};
    bool several = strchr(hosts, ',') != NULL;

    snprintf(portstr, sizeof(portstr), "%d", port);
    *err = 0;
    do {
        for (const char *h = hosts; *h;) {
            char host[256];
            size_t len = strcspn(h, ",");
            double until = several ? MPS_MIN(deadline, mps_now() + HOST_TRY_S) : deadline;
            snprintf(host, sizeof(host), "%.*s", (int)MPS_MIN(len, sizeof(host) - 1), h);
            h += len + (h[len] == ',');
            if (try_host(host, portstr, until, fd_out, err) == PGC_OK) {
                return PGC_OK;
            }
        }
        nanosleep(&pause, NULL);
    } while (mps_now() < deadline);
    return PGC_ERR_UNREACHABLE;
}

/* The first request of the connection: the token ("" when this process has none, which
 * a server without a token accepts and one with a token refuses). */
static int present_token(struct tcp_store *ts, const char *token)
{
    int rc;

    begin_request(ts, BOOT_OP_AUTH, 0, 1);
    boot_buf_put_field(&ts->req, token, strlen(token));
    rc = call(ts, "tcp_connect", ts->base.timeout);
    if (rc == PGC_ERR_BOOT) {
        rc = mps_error(rc, "boot_store_tcp_connect: the store at %s refused this process: %s",
                       ts->where,
                       *token ? "its MPISHIM_STORE_TOKEN is not the job's token"
                              : "the store requires a token and "
                                "MPISHIM_STORE_TOKEN is not set");
    }
    return rc;
}

int boot_store_tcp_connect_token(const char *host, int port, const char *token, double timeout,
                                 struct boot_store **out)
{
    struct tcp_store *ts;
    int err = 0, fd = -1, rc;

    if (!out) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_tcp_connect: NULL output");
    }
    *out = NULL;
    if (!host || !*host || port <= 0 || port > 65535) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_tcp_connect: invalid address %s:%d",
                         host ? host : "(null)", port);
    }
    if (timeout <= 0) {
        timeout = mps_config_double(MPS_CFG_TIMEOUT);
    }
    if (!token) {
        token = mps_config_str(MPS_CFG_STORE_TOKEN);
    }
    if (connect_retry(host, port, mps_now() + timeout, &fd, &err) != PGC_OK) {
        return mps_error(PGC_ERR_UNREACHABLE,
                         "boot_store_tcp_connect: no store server answered at %s:%d within %g s "
                         "(last error: %s)",
                         host, port, timeout, err ? strerror(err) : "none");
    }
    ts = calloc(1, sizeof(*ts));
    if (!ts) {
        close(fd);
        return mps_error(PGC_ERR_NOMEM, "boot_store_tcp_connect: out of memory");
    }
    ts->base.ops = &tcp_ops;
    ts->base.timeout = timeout;
    ts->fd = fd;
    snprintf(ts->where, sizeof(ts->where), "%s:%d", host, port);
    if ((rc = present_token(ts, token ? token : "")) != PGC_OK) {
        tcp_close(&ts->base);
        return rc;
    }
    *out = &ts->base;
    return PGC_OK;
}

int boot_store_tcp_connect(const char *host, int port, double timeout, struct boot_store **out)
{
    return boot_store_tcp_connect_token(host, port, NULL, timeout, out);
}

int boot_store_token_new(char *buf)
{
    unsigned char raw[BOOT_STORE_TOKEN_LEN / 2];
    size_t got = 0;

    while (got < sizeof(raw)) {
        ssize_t n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return mps_error(PGC_ERR_INTERNAL, "boot_store_token_new: getrandom: %s",
                             strerror(errno));
        }
        got += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(raw); i++) {
        snprintf(buf + 2 * i, 3, "%02x", raw[i]);
    }
    return PGC_OK;
}
