/*
 * boot_pmi1.c - the PMI-1 method: MPICH's hydra (mpiexec.mpich) and other servers of the
 * "simple" PMI-1 wire protocol. hydra's proxy hands each process a connected socket in
 * PMI_FD and its rank and the job's size in PMI_RANK and PMI_SIZE; started with -pmi-port it
 * gives a host:port in PMI_PORT and an id in PMI_ID instead, which the process presents
 * (cmd=initack) to learn its rank and size.
 *
 * Start: cmd=init pmi_version=1 pmi_subversion=1, cmd=get_maxes (the key and value length
 * limits), cmd=get_my_kvsname. Allgather round k: each rank puts "<bytes>.<base64url>" under
 * the keys "mps<k>-<rank>-<chunk>", as many chunks as the server's value limit needs, then
 * one barrier (barrier_in/barrier_out: hydra's proxies forward the puts at the barrier),
 * then gets every other rank's chunks. Every read and write has the deadline of its call
 * (the bootstrap's timeout): a server that died or never answers is an error that names
 * the command, never a hang. Abort is cmd=abort, after which hydra ends every process of
 * the job; fini is cmd=finalize.
 *
 * No store: pgc's default store is served by rank 0, as under PMIx. No peers_alive: PMI-1
 * tells a process nothing of its peers' deaths. hydra itself kills the whole job when one
 * process's connection closes without cmd=finalize (an exit, a crash); an exit() before
 * finalize sends cmd=abort first (exit_unfinalized), so that the job fails instead of
 * ending with status 0.
 */
#include "config.h"

#include "boot_impl.h"
#include "boot_pmi1.h"
#include "boot_store_impl.h"
#include "mps_log.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_MAX_ 256       /* the kvs name and other short values we keep */
#define LINE_SLACK 512      /* a line's characters beside its value and kvs name */
#define VAL_CAP 65536       /* a server's vallen_max beyond this is not believed */
#define KEY_LEN 64          /* our keys: "mps<round>-<rank>-<chunk>" */
#define ABORT_WAIT 2.0      /* seconds abort waits for the server to take its line */

struct pmi1 {
    int fd;
    bool own_fd;     /* we connected it (PMI_PORT) rather than inherited it (PMI_FD) */
    const char *call; /* the boot_* call under way, for messages */
    char via[96];    /* "PMI_FD=5" or "PMI_PORT=host:port" */
    char kvs[NAME_MAX_];
    size_t chunk;     /* value characters per key */
    char *req;        /* one request line */
    size_t req_cap;
    char *buf;        /* lines received; buf[used..have) not consumed yet */
    size_t cap, have, used;
};

/* Whether this process has finalized its PMI-1 connection (boot_pmi1_abort_launcher must
 * then leave PMI_FD alone: the number may belong to another file by now). */
static bool fd_closed;
/* The bootstrap while it is up (start to fini), for exit_unfinalized. */
static struct boot *live;
static bool exit_hooked;

/* Base64url, no padding. */

static const char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t boot_pmi1_encoded_len(size_t len)
{
    return len / 3 * 4 + (len % 3 ? len % 3 + 1 : 0);
}

void boot_pmi1_encode(const void *in, size_t len, char *out)
{
    const unsigned char *p = in;
    size_t o = 0;

    for (size_t i = 0; i < len; i += 3) {
        size_t left = len - i;
        unsigned long v = (unsigned long)p[i] << 16;

        if (left > 1) {
            v |= (unsigned long)p[i + 1] << 8;
        }
        if (left > 2) {
            v |= p[i + 2];
        }
        out[o++] = alphabet[v >> 18 & 63];
        out[o++] = alphabet[v >> 12 & 63];
        if (left > 1) {
            out[o++] = alphabet[v >> 6 & 63];
        }
        if (left > 2) {
            out[o++] = alphabet[v & 63];
        }
    }
    out[o] = '\0';
}

static int sextet(char c)
{
    const char *at = c ? strchr(alphabet, c) : NULL;

    return at ? (int)(at - alphabet) : -1;
}

long boot_pmi1_decode(const char *in, size_t n, void *out, size_t cap)
{
    unsigned char *p = out;
    size_t bytes = n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0), o = 0;

    if (n % 4 == 1 || bytes > cap) {
        return -1;
    }
    for (size_t i = 0; i < n; i += 4) {
        size_t k = MPS_MIN(4, n - i);
        unsigned long v = 0;

        for (size_t j = 0; j < 4; j++) {
            int x = j < k ? sextet(in[i + j]) : 0;
            if (x < 0) {
                return -1;
            }
            v = v << 6 | (unsigned long)x;
        }
        p[o++] = (unsigned char)(v >> 16);
        if (k > 2) {
            p[o++] = (unsigned char)(v >> 8);
        }
        if (k > 3) {
            p[o++] = (unsigned char)v;
        }
    }
    return (long)o;
}

bool boot_pmi1_value(const char *line, const char *key, char *out, size_t n)
{
    size_t klen = strlen(key);
    const char *p = line + strspn(line, " \n");

    while (*p) {
        if (!strncmp(p, key, klen) && p[klen] == '=') {
            const char *v = p + klen + 1;
            size_t vlen = strcspn(v, " \n");
            if (vlen >= n) {
                return false;
            }
            memcpy(out, v, vlen);
            out[vlen] = '\0';
            return true;
        }
        p += strcspn(p, " \n");
        p += strspn(p, " \n");
    }
    return false;
}

/* Messages. */

/* Records "CALL: PMI-1 WHAT to the server on PMI_FD=5: WHY" and returns st. */
static int fail(const struct pmi1 *p, int st, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(const struct pmi1 *p, int st, const char *what, const char *fmt, ...)
{
    char why[320];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return mps_error(st, "%s: PMI-1 %s to the server on %s: %s", p->call, what, p->via, why);
}

/* The wire. */

/* Waits until fd is ready for events, or fails at the deadline. */
static int wait_fd(const struct pmi1 *p, short events, double deadline, const char *what)
{
    if (boot_wait_fd(p->fd, events, deadline) == 0) {
        return PGC_OK;
    }
    if (errno == ETIMEDOUT) {
        return fail(p, PGC_ERR_TIMEOUT, what, "no %s within the timeout (MPISHIM_TIMEOUT)",
                    events == POLLIN ? "answer" : "room to write");
    }
    return fail(p, PGC_ERR_IO, what, "poll: %s", strerror(errno));
}

static int send_line(struct pmi1 *p, const char *line, double deadline, const char *what)
{
    size_t len = strlen(line), done = 0;

    while (done < len) {
        ssize_t w = send(p->fd, line + done, len - done, MSG_NOSIGNAL);
        int rc;

        if (w < 0 && errno == ENOTSOCK) {
            w = write(p->fd, line + done, len - done);
        }
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if ((rc = wait_fd(p, POLLOUT, deadline, what)) != PGC_OK) {
                return rc;
            }
            continue;
        }
        return fail(p, PGC_ERR_UNREACHABLE, what, "write: %s (the server has gone)",
                    w < 0 ? strerror(errno) : "nothing written");
    }
    return PGC_OK;
}

/* Returns the next line received, without its newline, valid until the next read. */
static int read_line(struct pmi1 *p, double deadline, const char *what, char **line)
{
    for (;;) {
        char *start = p->buf + p->used, *nl = memchr(start, '\n', p->have - p->used);
        ssize_t r;
        int rc;

        if (nl) {
            *nl = '\0';
            *line = start;
            p->used = (size_t)(nl + 1 - p->buf);
            return PGC_OK;
        }
        memmove(p->buf, start, p->have - p->used);
        p->have -= p->used;
        p->used = 0;
        if (p->have + 1 >= p->cap) {
            return fail(p, PGC_ERR_BOOT, what, "an answer longer than %zu bytes", p->cap);
        }
        if ((rc = wait_fd(p, POLLIN, deadline, what)) != PGC_OK) {
            return rc;
        }
        r = read(p->fd, p->buf + p->have, p->cap - 1 - p->have);
        if (r == 0) {
            return fail(p, PGC_ERR_UNREACHABLE, what, "the server closed the connection");
        }
        if (r < 0 && errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
            return fail(p, PGC_ERR_UNREACHABLE, what, "read: %s", strerror(errno));
        }
        p->have += r > 0 ? (size_t)r : 0;
    }
}

/* Sends p->req and reads the answer, which must be "cmd=<want> ..." with rc=0 if it has an
 * rc. what names the command in messages ("cmd=get key=mps3-1-0"). */
static int call(struct pmi1 *p, const char *want, double deadline, const char *what, char **ans)
{
    char cmd[64], rc_s[16], msg[128];
    int rc = send_line(p, p->req, deadline, what);

    if (rc == PGC_OK) {
        rc = read_line(p, deadline, what, ans);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (!boot_pmi1_value(*ans, "cmd", cmd, sizeof(cmd)) || strcmp(cmd, want) != 0) {
        return fail(p, PGC_ERR_BOOT, what, "expected cmd=%s, got '%.160s'", want, *ans);
    }
    if (boot_pmi1_value(*ans, "rc", rc_s, sizeof(rc_s)) && strcmp(rc_s, "0") != 0) {
        if (!boot_pmi1_value(*ans, "msg", msg, sizeof(msg))) {
            snprintf(msg, sizeof(msg), "(no message)");
        }
        return fail(p, PGC_ERR_BOOT, what, "rc=%s %s", rc_s, msg);
    }
    return PGC_OK;
}

/* Formats p->req (which is large enough for any of our requests). */
static void request(struct pmi1 *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void request(struct pmi1 *p, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(p->req, p->req_cap, fmt, ap);
    va_end(ap);
}

/* The collectives. */

static struct pmi1 *state(struct boot *b)
{
    return b->priv;
}

static int barrier(struct pmi1 *p, double deadline)
{
    char *ans;

    request(p, "cmd=barrier_in\n");
    return call(p, "barrier_out", deadline, "cmd=barrier_in", &ans);
}

static void chunk_key(char *key, uint64_t seq, int rank, size_t i)
{
    snprintf(key, KEY_LEN, "mps%" PRIu64 "-%d-%zu", seq, rank, i);
}

/* Puts the n characters of s under as many keys as the value limit needs. */
static int put_all(struct boot *b, uint64_t seq, const char *s, size_t n, double deadline)
{
    struct pmi1 *p = state(b);
    char key[KEY_LEN], what[KEY_LEN + 16], *ans;
    int rc = PGC_OK;

    for (size_t i = 0; rc == PGC_OK && i * p->chunk < n; i++) {
        size_t part = MPS_MIN(p->chunk, n - i * p->chunk);
        chunk_key(key, seq, b->info.rank, i);
        snprintf(what, sizeof(what), "cmd=put key=%s", key);
        request(p, "cmd=put kvsname=%s key=%s value=%.*s\n", p->kvs, key, (int)part,
                 s + i * p->chunk);
        rc = call(p, "put_result", deadline, what, &ans);
    }
    return rc;
}

/* Appends the value of rank r's chunk i of round seq to s (of room for cap characters). */
static int get_chunk(struct boot *b, uint64_t seq, int r, size_t i, char *s, size_t *n,
                     size_t cap, double deadline)
{
    struct pmi1 *p = state(b);
    char key[KEY_LEN], what[KEY_LEN + 16], *ans;
    int rc;

    chunk_key(key, seq, r, i);
    snprintf(what, sizeof(what), "cmd=get key=%s", key);
    request(p, "cmd=get kvsname=%s key=%s\n", p->kvs, key);
    if ((rc = call(p, "get_result", deadline, what, &ans)) != PGC_OK) {
        return rc;
    }
    if (!boot_pmi1_value(ans, "value", s + *n, cap - *n + 1)) {
        return fail(p, PGC_ERR_MISMATCH, what, "rank %d's value is missing or longer than "
                    "its byte count says (%.120s)", r, ans);
    }
    *n += strlen(s + *n);
    return PGC_OK;
}

/* Reads rank r's "<bytes>.<base64url>" of round seq into out, which must be len bytes. */
static int get_rank(struct boot *b, uint64_t seq, int r, size_t len, void *out, double deadline)
{
    struct pmi1 *p = state(b);
    size_t cap = 24 + boot_pmi1_encoded_len(len), n = 0, head = 0;
    char *s = malloc(MPS_MAX(cap, p->chunk) + 1), *dot = NULL;
    int rc = s ? PGC_OK : mps_error(PGC_ERR_NOMEM, "%s: no memory for a value", p->call);

    if (rc == PGC_OK) {
        rc = get_chunk(b, seq, r, 0, s, &n, MPS_MAX(cap, p->chunk), deadline);
    }
    if (rc == PGC_OK && (!(dot = strchr(s, '.')) || strtoull(s, NULL, 10) != len)) {
        rc = mps_error(PGC_ERR_MISMATCH, "%s: rank %d contributed %.20s bytes, rank %d %zu",
                       p->call, r, s, b->info.rank, len);
    }
    if (rc == PGC_OK) {
        head = (size_t)(dot + 1 - s);
        cap = head + boot_pmi1_encoded_len(len);
        for (size_t i = 1; rc == PGC_OK && n < cap; i++) {
            rc = get_chunk(b, seq, r, i, s, &n, cap, deadline);
        }
    }
    if (rc == PGC_OK && boot_pmi1_decode(s + head, n - head, out, len) != (long)len) {
        rc = mps_error(PGC_ERR_BOOT, "%s: rank %d's value of round %" PRIu64 " is not what "
                       "we encode (%zu characters)", p->call, r, seq, n);
    }
    free(s);
    return rc;
}

static int pmi1_allgather(struct boot *b, const void *in, size_t len, void *out)
{
    struct pmi1 *p = state(b);
    double deadline = mps_now() + b->timeout;
    uint64_t seq = b->seq++;
    size_t enc = boot_pmi1_encoded_len(len);
    char *s = malloc(enc + 24);
    int rc, head;

    p->call = "boot_allgather";
    if (!s) {
        return mps_error(PGC_ERR_NOMEM, "boot_allgather: no memory for %zu bytes", enc + 24);
    }
    head = snprintf(s, 24, "%zu.", len);
    boot_pmi1_encode(in, len, s + head);
    rc = put_all(b, seq, s, (size_t)head + enc, deadline);
    if (rc == PGC_OK) {
        rc = barrier(p, deadline);
    }
    for (int r = 0; rc == PGC_OK && r < b->info.size; r++) {
        char *dst = (char *)out + (size_t)r * len;
        if (r == b->info.rank) {
            memmove(dst, in, len);
        } else {
            rc = get_rank(b, seq, r, len, dst, deadline);
        }
    }
    free(s);
    return rc;
}

static int pmi1_barrier(struct boot *b)
{
    state(b)->call = "boot_barrier";
    return barrier(state(b), mps_now() + b->timeout);
}

static void pmi1_abort(struct boot *b, int code, const char *msg)
{
    struct pmi1 *p = state(b);

    MPS_ERR("boot_abort (pmi1, code %d): %s", code, msg ? msg : "");
    p->call = "boot_abort";
    request(p, "cmd=abort exitcode=%d\n", code);
    if (send_line(p, p->req, mps_now() + ABORT_WAIT, "cmd=abort") != PGC_OK) {
        MPS_ERR("%s", mps_last_error());
    }
}

static void release(struct pmi1 *p)
{
    if (p->own_fd && p->fd >= 0) {
        close(p->fd);
    }
    free(p->req);
    free(p->buf);
    free(p);
}

/*
 * An exit() between MPI_Init and MPI_Finalize (or pgc_destroy_process_group). hydra kills
 * the other ranks the moment this process's PMI connection closes without cmd=finalize,
 * before they can report anything, and mpiexec.mpich then exits 0 (measured with MPICH
 * 4.0.2): a job that lost a rank would look like a success. Our own mpiexec fails such a
 * job naming the rank; here the rank names itself and asks hydra to fail the job.
 */
/* Waits (up to ABORT_WAIT) until hydra's proxy has read what this process wrote to fd, a
 * pipe: once the job is aborted the proxy stops forwarding, and the line that says why
 * was lost in about one run of four. Not a pipe (a file, a terminal): returns at once. */
static void let_drain(int fd)
{
    double until = mps_now() + ABORT_WAIT;
    int unread = 0;

    while (ioctl(fd, FIONREAD, &unread) == 0 && unread > 0 && mps_now() < until) {
        usleep(5000);
    }
}

static void exit_unfinalized(void)
{
    struct boot *b = live;

    if (!b || b->info.size < 2) {
        return;
    }
    fprintf(stderr, "[mpishim] rank %d exited without calling MPI_Finalize (or "
            "pgc_destroy_process_group) while other ranks may still run; asking hydra to end "
            "the job with code 1\n", b->info.rank);
    fflush(stderr);
    let_drain(STDERR_FILENO);
    state(b)->call = "exit";
    request(state(b), "cmd=abort exitcode=1\n");
    send_line(state(b), state(b)->req, mps_now() + ABORT_WAIT, "cmd=abort");
}

static void pmi1_fini(struct boot *b, bool barrier_ok)
{
    struct pmi1 *p = state(b);
    char *ans;

    live = NULL;

    /* After a failed barrier the process is on its way out with an error: its exit
     * without cmd=finalize is what tells hydra to end the rest of the job. */
    if (barrier_ok) {
        p->call = "boot_fini";
        request(p, "cmd=finalize\n");
        if (call(p, "finalize_ack", mps_now() + b->timeout, "cmd=finalize", &ans) != PGC_OK) {
            MPS_WARN("%s", mps_last_error());
        }
        close(p->fd);
        p->fd = -1;
        fd_closed = true;
    }
    release(p);
    b->priv = NULL;
}

static const struct boot_method pmi1_method = {
    .allgather = pmi1_allgather,
    .barrier = pmi1_barrier,
    .abort = pmi1_abort,
    .fini = pmi1_fini,
};

/* Start. */

static int read_env_int(const char *name, int min, int *out)
{
    const char *s = getenv(name);
    char *end;
    long v;

    errno = 0;
    v = s && *s ? strtol(s, &end, 10) : -1;
    if (!s || !*s || errno || *end || v < min || v > INT_MAX) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init: %s=%.32s is not an integer >= %d "
                         "(pmi1: PMI_FD, PMI_RANK and PMI_SIZE come from the launcher)",
                         name, s ? s : "(unset)", min);
    }
    *out = (int)v;
    return PGC_OK;
}

/* Connects to PMI_PORT's "host:port" before the deadline. */
static int connect_port(struct pmi1 *p, const char *hostport, double deadline)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    const char *colon = strrchr(hostport, ':');
    char host[256];
    int rc = PGC_OK, gai;

    if (!colon || colon == hostport || (size_t)(colon - hostport) >= sizeof(host)) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init: PMI_PORT=%.64s is not host:port",
                         hostport);
    }
    snprintf(host, sizeof(host), "%.*s", (int)(colon - hostport), hostport);
    if ((gai = getaddrinfo(host, colon + 1, &hints, &ai)) != 0) {
        return mps_error(PGC_ERR_UNREACHABLE, "boot_init: PMI_PORT=%.64s: %s", hostport,
                         gai_strerror(gai));
    }
    p->fd = boot_connect_fd(ai, deadline);
    p->own_fd = p->fd >= 0;
    if (p->fd < 0) {
        rc = fail(p, errno == ETIMEDOUT ? PGC_ERR_TIMEOUT : PGC_ERR_UNREACHABLE, "connect", "%s",
                  strerror(errno));
    }
    freeaddrinfo(ai);
    return rc;
}

/* Takes PMI_FD, or connects to PMI_PORT; the descriptor is made non-blocking (every read
 * and write then has a deadline) and close-on-exec (a child the program starts must not
 * keep the connection open after this process exits). */
static int open_fd(struct pmi1 *p, double deadline)
{
    const char *port = getenv("PMI_PORT");
    int rc, fl;

    if (getenv("PMI_FD")) {
        snprintf(p->via, sizeof(p->via), "PMI_FD=%.32s", getenv("PMI_FD"));
        if ((rc = read_env_int("PMI_FD", 0, &p->fd)) != PGC_OK) {
            return rc;
        }
        if ((fl = fcntl(p->fd, F_GETFL)) < 0 || fcntl(p->fd, F_SETFL, fl | O_NONBLOCK) < 0) {
            return mps_error(PGC_ERR_INVALID_ARG, "boot_init: PMI_FD=%d is not an open file "
                             "descriptor: %s", p->fd, strerror(errno));
        }
        fcntl(p->fd, F_SETFD, FD_CLOEXEC);
        return PGC_OK;
    }
    if (port && *port) {
        snprintf(p->via, sizeof(p->via), "PMI_PORT=%.80s", port);
        return connect_port(p, port, deadline);
    }
    return mps_error(PGC_ERR_BOOT, "boot_init: pmi1 needs PMI_FD or PMI_PORT, which MPICH's "
                     "mpiexec (hydra) sets");
}

/* PMI_PORT's handshake: "cmd=initack pmiid=<PMI_ID>" answered by cmd=initack and
 * "cmd=set size=N", "cmd=set rank=R", "cmd=set debug=D". */
static int initack(struct boot *b, struct pmi1 *p, int id, double deadline)
{
    char *line, v[32];
    int rc, sets = 0;

    request(p, "cmd=initack pmiid=%d\n", id);
    rc = call(p, "initack", deadline, "cmd=initack", &line);
    while (rc == PGC_OK && sets < 3 && 
           (rc = read_line(p, deadline, "cmd=initack", &line)) == PGC_OK) {
        sets++;
        if (boot_pmi1_value(line, "size", v, sizeof(v))) {
            b->info.size = atoi(v);
        } else if (boot_pmi1_value(line, "rank", v, sizeof(v))) {
            b->info.rank = atoi(v);
        }
    }
    return rc;
}

/* Sizes the request and answer buffers for values of val_max characters. The chunk keeps
 * one character of the limit for the NUL that PMI servers written in C count. */
static int grow(struct pmi1 *p, size_t val_max)
{
    size_t cap = val_max + LINE_SLACK + NAME_MAX_;
    char *req = realloc(p->req, cap), *buf;

    if (req) {
        p->req = req;
        p->req_cap = cap;
    }
    buf = req ? realloc(p->buf, cap) : NULL;
    if (!buf) {
        return mps_error(PGC_ERR_NOMEM, "%s: no memory for PMI-1 lines of %zu bytes", p->call,
                         cap);
    }
    p->buf = buf;
    p->cap = cap;
    p->chunk = val_max - 1;
    return PGC_OK;
}

/* cmd=init, then cmd=get_maxes (sizes the buffers), then cmd=get_my_kvsname. */
static int handshake(struct pmi1 *p, double deadline)
{
    char *ans, v[32];
    size_t val_max = 1024, key_max = 64;
    int rc;

    request(p, "cmd=init pmi_version=1 pmi_subversion=1\n");
    rc = call(p, "response_to_init", deadline, "cmd=init", &ans);
    if (rc == PGC_OK) {
        request(p, "cmd=get_maxes\n");
        rc = call(p, "maxes", deadline, "cmd=get_maxes", &ans);
    }
    if (rc == PGC_OK && boot_pmi1_value(ans, "vallen_max", v, sizeof(v))) {
        val_max = MPS_MIN(strtoul(v, NULL, 10), VAL_CAP);
    }
    if (rc == PGC_OK && boot_pmi1_value(ans, "keylen_max", v, sizeof(v))) {
        key_max = strtoul(v, NULL, 10);
    }
    if (rc == PGC_OK && (val_max < 32 || key_max < 32)) {
        rc = fail(p, PGC_ERR_UNSUPPORTED, "cmd=get_maxes", "limits too small for us (keys %zu, "
                  "values %zu characters)", key_max, val_max);
    }
    if (rc == PGC_OK) {
        rc = grow(p, val_max);
    }
    if (rc == PGC_OK) {
        request(p, "cmd=get_my_kvsname\n");
        rc = call(p, "my_kvsname", deadline, "cmd=get_my_kvsname", &ans);
    }
    if (rc == PGC_OK && !boot_pmi1_value(ans, "kvsname", p->kvs, sizeof(p->kvs))) {
        rc = fail(p, PGC_ERR_BOOT, "cmd=get_my_kvsname", "no kvsname in '%.120s'", ans);
    }
    return rc;
}

int boot_pmi1_start(struct boot *b)
{
    struct pmi1 *p = calloc(1, sizeof(*p));
    double deadline = mps_now() + b->timeout;
    int rc, id;

    b->info.method = "pmi1";
    if (!p) {
        return mps_error(PGC_ERR_NOMEM, "boot_init: out of memory");
    }
    p->fd = -1;
    p->call = "boot_init";
    rc = grow(p, 1024);
    if (rc == PGC_OK) {
        rc = open_fd(p, deadline);
    }
    b->info.rank = b->info.size = -1;
    if (rc == PGC_OK && p->own_fd && getenv("PMI_ID")) {
        rc = read_env_int("PMI_ID", 0, &id);
        if (rc == PGC_OK) {
            rc = initack(b, p, id, deadline);
        }
    }
    if (rc == PGC_OK && b->info.rank < 0) {
        rc = read_env_int("PMI_RANK", 0, &b->info.rank);
    }
    if (rc == PGC_OK && b->info.size < 0) {
        rc = read_env_int("PMI_SIZE", 1, &b->info.size);
    }
    if (rc == PGC_OK && b->info.rank >= b->info.size) {
        rc = mps_error(PGC_ERR_INVALID_RANK, "boot_init: PMI-1 rank %d is not below the job's "
                       "size %d", b->info.rank, b->info.size);
    }
    if (rc == PGC_OK) {
        /* From here on every message, those of a failing MPI_Init included, names this rank. */
        mps_log_set_rank(b->info.rank);
        rc = handshake(p, deadline);
    }
    if (rc != PGC_OK) {
        release(p);
        return rc;
    }
    b->priv = p;
    b->m = &pmi1_method;
    live = b;
    if (!exit_hooked) {
        exit_hooked = atexit(exit_unfinalized) == 0;
    }
    return PGC_OK;
}

void boot_pmi1_abort_launcher(int code)
{
    const char *s = getenv("PMI_FD");
    char line[64];
    struct stat st;
    char *end;
    long fd;

    /* Only the connection hydra gave us, never a descriptor reused since our finalize. */
    if (!s || !*s || fd_closed) {
        return;
    }
    fd = strtol(s, &end, 10);
    if (*end || fd < 0 || fd > INT_MAX || fstat((int)fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        return;
    }
    snprintf(line, sizeof(line), "cmd=abort exitcode=%d\n", code);
    if (send((int)fd, line, strlen(line), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
        MPS_ERR("boot_abort_launcher: cmd=abort on PMI_FD=%ld: %s: the launcher may not end "
                "the other ranks", fd, strerror(errno));
    }
}
