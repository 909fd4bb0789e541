/*
 * boot_store_server.c - the TCP store server: one thread, one poll() loop over the
 * listening socket, a wake-up pipe and every client connection.
 *
 * Each connection sends one request at a time and waits for its answer. A get or wait
 * whose keys do not exist yet is parked on its connection: the server answers it when a
 * later change creates the keys, or with PGC_ERR_TIMEOUT when its deadline passes, so that
 * waiting clients cost nothing while they wait. Sockets are non-blocking; answers that do
 * not fit in the socket buffer wait in the connection's output buffer for POLLOUT.
 *
 * Hardening (issue 40): a connection is served only after it presented the job's token
 * (compared in constant time); before that its frames may not exceed AUTH_FRAME_MAX, so an
 * outsider can make the server hold almost nothing. Every cap (one frame, bytes buffered
 * across connections, keys, bytes stored) is answered with an error naming the variable
 * that sets it, and the connection stays usable: a frame over a cap is read and dropped,
 * never buffered. A connection whose answer is not read (its output is backed up) is not
 * read further until it drains, and a parked one must send nothing. accept4 failing for
 * want of descriptors (EMFILE, ENFILE) closes a spare descriptor, accepts and closes the
 * newcomer, so the listening socket stops being readable instead of spinning poll().
 *
 * A rank's death (issue 40, the store as the last resort where no pid can be watched): the
 * connection that registered a rank (stored boot/reg/<rank>, boot_store_reg.c) belongs to
 * that rank. If it closes before the rank said it finished (boot/done/<rank>), the rank died
 * or gave up: every get or wait that is parked, and every later one, for keys that do not
 * exist fails at once with PGC_ERR_PEER_DEAD naming it, instead of waiting out its timeout
 * for a process that is gone. Requests for keys that exist are answered as before.
 */
#include "config.h"

#include "boot_store_impl.h"
#include "mps_config.h"
#include "mps_log.h"
#include "mps_proc.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Largest frame of a connection that has not presented the token yet. */
#define AUTH_FRAME_MAX 4096u
/* Answers up to this size are never refused for MPISHIM_STORE_BUFFER_MAX: errors and
 * small values must get through however full the buffers are. */
#define SMALL_ANSWER 4096u
/* Reads are made in chunks of this size, so that a frame over a cap is dropped as it
 * arrives instead of being buffered whole first. */
#define READ_CHUNK 65536u

struct conn {
    int fd;
    bool dead;
    bool authed;             /* presented the token (or the server has none) */
    bool closing;            /* close once the output is sent (a refused token) */
    bool admitted;           /* the frame at in.pos passed admit() (checked once, not per chunk) */
    uint64_t drop;           /* bytes of a frame over a cap still to read and throw away */
    size_t mem;              /* in.cap + out.cap as last counted in the server's buffered */
    struct boot_buf in, out; /* in.pos: start of the next frame; out.pos: bytes sent */
    bool parked;             /* a get or wait waits for its keys */
    uint32_t op;
    double deadline;
    char **keys;
    int nkeys;
    int rank; /* the rank whose registration this connection stored, or -1 */
};

struct boot_store_server {
    pthread_t thread;
    bool threaded;
    int listen_fd, wake[2], port;
    int spare_fd;        /* /dev/null, given up to accept and shed a connection on EMFILE */
    double accept_again; /* no spare descriptor: accept nothing before this time */
    atomic_bool stop;    /* set by boot_store_server_stop, read by the server thread */
    char *token;         /* NULL: none required */
    size_t token_len;
    size_t frame_max, buffer_max, keys_max, data_max;
    atomic_size_t buffered; /* in.cap + out.cap of every connection */
    struct boot_map map;
    struct conn **conns;
    int nconns, cap;
    struct pollfd *pfds;
    struct boot_buf reply; /* scratch for building one answer */
    char *dead_msg;        /* why the first rank that left is gone, or NULL */
};

/* Answers. */

/* Counts the change of c's buffer capacity since the last call into s->buffered, and
 * releases a large buffer once it is empty (a 64 MiB answer must not stay allocated). */
static void account(struct boot_store_server *s, struct conn *c)
{
    if (c->out.len == 0 && c->out.cap > READ_CHUNK) {
        boot_buf_free(&c->out);
    }
    if (c->in.len == 0 && c->in.cap > 2 * READ_CHUNK) {
        boot_buf_free(&c->in);
    }
    size_t now = c->in.cap + c->out.cap;
    atomic_fetch_add(&s->buffered, now);
    atomic_fetch_sub(&s->buffered, c->mem);
    c->mem = now;
}

static bool backed_up(const struct conn *c)
{
    return c->out.pos < c->out.len;
}

static void send_out(struct conn *c)
{
    if (c->fd < 0) { /* a detached server's connection: answers go nowhere */
        c->out.len = c->out.pos = 0;
        return;
    }
    while (!c->dead && c->out.pos < c->out.len) {
        ssize_t n = send(c->fd, c->out.p + c->out.pos, c->out.len - c->out.pos, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            return;
        }
        if (n <= 0) {
            c->dead = true;
            return;
        }
        c->out.pos += (size_t)n;
    }
    c->out.len = c->out.pos = 0;
}

/* Starts an answer in s->reply; fields follow; finish_reply frames and queues it. */
static void begin_reply(struct boot_store_server *s, int status, uint32_t nfields)
{
    s->reply.len = 0;
    boot_buf_put_u32(&s->reply, (uint32_t)status);
    boot_buf_put_u32(&s->reply, nfields);
}

static void reply_status(struct boot_store_server *s, struct conn *c, int status, const char *msg);

static void finish_reply(struct boot_store_server *s, struct conn *c)
{
    if (s->reply.len > SMALL_ANSWER && atomic_load(&s->buffered) + s->reply.len > s->buffer_max) {
        char msg[160];
        snprintf(msg, sizeof(msg),
                 "an answer of %zu bytes would take the server's buffers above "
                 "MPISHIM_STORE_BUFFER_MAX (%zu bytes); retry later",
                 s->reply.len, s->buffer_max);
        reply_status(s, c, PGC_ERR_NOMEM, msg);
        return;
    }
    if (boot_buf_put_u32(&c->out, (uint32_t)s->reply.len) != PGC_OK ||
        boot_buf_put(&c->out, s->reply.p, s->reply.len) != PGC_OK) {
        c->dead = true;
        return;
    }
    send_out(c);
    account(s, c);
}

static void reply_status(struct boot_store_server *s, struct conn *c, int status, const char *msg)
{
    begin_reply(s, status, msg ? 1 : 0);
    if (msg) {
        boot_buf_put_field(&s->reply, msg, strlen(msg));
    }
    finish_reply(s, c);
}

static void reply_bytes(struct boot_store_server *s, struct conn *c, const void *p, size_t len)
{
    begin_reply(s, PGC_OK, 1);
    boot_buf_put_field(&s->reply, p, len);
    finish_reply(s, c);
}

static void reply_u64(struct boot_store_server *s, struct conn *c, uint64_t v)
{
    begin_reply(s, PGC_OK, 1);
    boot_buf_put_u32(&s->reply, 8);
    boot_buf_put_u64(&s->reply, v);
    finish_reply(s, c);
}

/* Parked requests. */

static void unpark(struct conn *c)
{
    for (int i = 0; i < c->nkeys; i++) {
        free(c->keys[i]);
    }
    free(c->keys);
    c->keys = NULL;
    c->nkeys = 0;
    c->parked = false;
}

static bool all_exist(struct boot_store_server *s, char *const *keys, int n)
{
    for (int i = 0; i < n; i++) {
        if (!boot_map_find(&s->map, keys[i])) {
            return false;
        }
    }
    return true;
}

/* Answers the request of c if its keys exist now; returns whether it did. */
static bool try_answer(struct boot_store_server *s, struct conn *c, uint32_t op, char **keys, int n)
{
    if (!all_exist(s, keys, n)) {
        return false;
    }
    if (op == BOOT_OP_GET) {
        struct boot_map_entry *e = boot_map_find(&s->map, keys[0]);
        reply_bytes(s, c, e->val, e->len);
    } else {
        reply_status(s, c, PGC_OK, NULL);
    }
    return true;
}

static void process_input(struct boot_store_server *s, struct conn *c);

static void wake_parked(struct boot_store_server *s)
{
    for (int i = 0; i < s->nconns; i++) {
        struct conn *c = s->conns[i];
        if (c->parked && try_answer(s, c, c->op, c->keys, c->nkeys)) {
            unpark(c);
            process_input(s, c);
        }
    }
}

static void expire_parked(struct boot_store_server *s, double now)
{
    char msg[BOOT_STORE_KEY_MAX + 128];

    for (int i = 0; i < s->nconns; i++) {
        struct conn *c = s->conns[i];
        if (c->parked && now >= c->deadline) {
            snprintf(msg, sizeof(msg), "key %s%s does not exist after the timeout", c->keys[0],
                     c->nkeys > 1 ? " (or another of those waited for)" : "");
            reply_status(s, c, PGC_ERR_TIMEOUT, msg);
            unpark(c);
            process_input(s, c);
        }
    }
}

/* Requests. */

struct request {
    uint32_t op, nfields;
    uint64_t timeout_ms;
    char **keys; /* every field as a NUL-terminated copy (keys or values) */
    size_t *lens;
};

static void free_request(struct request *r)
{
    for (uint32_t i = 0; r->keys && i < r->nfields; i++) {
        free(r->keys[i]);
    }
    free(r->keys);
    free(r->lens);
}

static int parse_request(struct boot_buf *b, struct request *r)
{
    memset(r, 0, sizeof(*r));
    if (boot_buf_get_u32(b, &r->op) || boot_buf_get_u64(b, &r->timeout_ms) ||
        boot_buf_get_u32(b, &r->nfields) || r->nfields > (b->len - b->pos) / 4) {
        return -1;
    }
    r->keys = calloc(r->nfields + 1, sizeof(*r->keys));
    r->lens = calloc(r->nfields + 1, sizeof(*r->lens));
    if (!r->keys || !r->lens) {
        return -1;
    }
    for (uint32_t i = 0; i < r->nfields; i++) {
        const char *p;
        if (boot_buf_get_field(b, &p, &r->lens[i]) || !(r->keys[i] = boot_memdup0(p, r->lens[i]))) {
            return -1;
        }
    }
    return 0;
}

/* The minimum number of fields of each op (wait and check take any number of keys). */
static bool enough_fields(const struct request *r)
{
    static const uint32_t min[] = {[BOOT_OP_SET] = 2, [BOOT_OP_GET] = 1,      [BOOT_OP_ADD] = 2,
                                   [BOOT_OP_CAS] = 3, [BOOT_OP_WAIT] = 0,     [BOOT_OP_CHECK] = 0,
                                   [BOOT_OP_DEL] = 1, [BOOT_OP_NUM_KEYS] = 0, [BOOT_OP_AUTH] = 1};
    return r->op >= BOOT_OP_SET && r->op <= BOOT_OP_AUTH && r->nfields >= min[r->op];
}

static int64_t field_i64(const struct request *r, int i)
{
    struct boot_buf b = {.p = r->keys[i], .len = r->lens[i]};
    uint64_t v = 0;

    boot_buf_get_u64(&b, &v);
    return (int64_t)v;
}

static void park(struct conn *c, struct request *r)
{
    c->parked = true;
    c->op = r->op;
    c->deadline = mps_now() + (double)r->timeout_ms / 1000.0;
    c->keys = r->keys;
    c->nkeys = (int)r->nfields;
    r->keys = NULL; /* now owned by the connection */
}

static void do_blocking(struct boot_store_server *s, struct conn *c, struct request *r)
{
    if (try_answer(s, c, r->op, r->keys, (int)r->nfields)) {
        return;
    }
    if (s->dead_msg) {
        reply_status(s, c, PGC_ERR_PEER_DEAD, s->dead_msg);
        return;
    }
    if (r->timeout_ms == 0) {
        reply_status(s, c, PGC_ERR_TIMEOUT, "key does not exist");
        return;
    }
    park(c, r);
}

/* Whether storing len bytes under key stays within MPISHIM_STORE_KEYS_MAX and
 * MPISHIM_STORE_DATA_MAX; if not, answers the error and returns false. */
static bool fits(struct boot_store_server *s, struct conn *c, const char *key, size_t len)
{
    struct boot_map_entry *e = boot_map_find(&s->map, key);
    size_t old = e ? e->len : 0, klen = e ? 0 : strlen(key);
    char msg[200];

    if (!e && s->map.count >= s->keys_max) {
        snprintf(msg, sizeof(msg),
                 "the store holds %zu keys, the most MPISHIM_STORE_KEYS_MAX allows; key not added",
                 s->map.count);
    } else if (s->map.bytes - old + klen + len > s->data_max) {
        snprintf(msg, sizeof(msg),
                 "storing %zu bytes would take the store above MPISHIM_STORE_DATA_MAX (%zu bytes, "
                 "%zu used)",
                 klen + len, s->data_max, s->map.bytes);
    } else {
        return true;
    }
    reply_status(s, c, PGC_ERR_NOMEM, msg);
    return false;
}

static bool token_ok(const struct boot_store_server *s, const char *t, size_t n)
{
    /* Constant time in the token's content: every byte of ours is compared whatever
     * matched before, so the time taken says nothing about how much of a guess was right. */
    unsigned char diff = n != s->token_len;

    for (size_t i = 0; i < s->token_len; i++) {
        diff |= (unsigned char)s->token[i] ^ (unsigned char)(i < n ? t[i] : 0);
    }
    return diff == 0;
}

/* The first request of a connection. A server without a token accepts any. */
static void do_auth(struct boot_store_server *s, struct conn *c, const struct request *r)
{
    if (r->op == BOOT_OP_AUTH && (!s->token || token_ok(s, r->keys[0], r->lens[0]))) {
        c->authed = true;
        reply_status(s, c, PGC_OK, NULL);
        return;
    }
    reply_status(s, c, PGC_ERR_BOOT,
                 r->op == BOOT_OP_AUTH
                     ? "wrong store token: this process's MPISHIM_STORE_TOKEN is not the job's"
                     : "this store requires the job's token (MPISHIM_STORE_TOKEN) first");
    c->closing = true;
}

/* A connection that stored boot/reg/<rank> (its value now: the compare_set won) is that
 * rank's. */
static void note_registration(struct conn *c, const char *key, bool stored)
{
    int rank, end = 0;

    if (stored && sscanf(key, "boot/reg/%d%n", &rank, &end) == 1 && key[end] == '\0' &&
        rank >= 0) {
        c->rank = rank;
    }
}

static void do_request(struct boot_store_server *s, struct conn *c, struct request *r)
{
    int64_t v = 0;
    const char *cur;
    size_t clen;
    bool yes;
    int rc;

    switch (r->op) {
    case BOOT_OP_AUTH:
        reply_status(s, c, PGC_OK, NULL); /* again, or to a server without a token */
        return;
    case BOOT_OP_SET:
        if (!fits(s, c, r->keys[0], r->lens[1])) {
            return;
        }
        rc = boot_map_set(&s->map, r->keys[0], r->keys[1], r->lens[1]);
        reply_status(s, c, rc, rc ? mps_last_error() : NULL);
        note_registration(c, r->keys[0], rc == PGC_OK);
        break;
    case BOOT_OP_GET:
    case BOOT_OP_WAIT:
        do_blocking(s, c, r);
        return;
    case BOOT_OP_ADD:
        if (!fits(s, c, r->keys[0], 20)) { /* the longest decimal int64 */
            return;
        }
        rc = boot_map_add(&s->map, r->keys[0], field_i64(r, 1), &v);
        rc ? reply_status(s, c, rc, mps_last_error()) : reply_u64(s, c, (uint64_t)v);
        break;
    case BOOT_OP_CAS:
        if (!fits(s, c, r->keys[0], r->lens[2])) {
            return;
        }
        rc = boot_map_compare_set(&s->map, r->keys[0], r->keys[1], r->lens[1], r->keys[2],
                                  r->lens[2], &cur, &clen);
        rc ? reply_status(s, c, rc, mps_last_error()) : reply_bytes(s, c, cur, clen);
        note_registration(c, r->keys[0],
                          rc == PGC_OK && clen == r->lens[2] && !memcmp(cur, r->keys[2], clen));
        break;
    case BOOT_OP_CHECK:
        yes = all_exist(s, r->keys, (int)r->nfields);
        reply_bytes(s, c, &yes, 1);
        return;
    case BOOT_OP_DEL:
        yes = boot_map_del(&s->map, r->keys[0]);
        reply_bytes(s, c, &yes, 1);
        return;
    case BOOT_OP_NUM_KEYS:
        reply_u64(s, c, s->map.count);
        return;
    }
    wake_parked(s); /* set, add and compare_set may have created keys */
}

/* Throws away what arrived of a frame over a cap. */
static void drop_input(struct conn *c)
{
    size_t n = c->in.len - c->in.pos;

    if (n > c->drop) {
        n = (size_t)c->drop;
    }
    c->in.pos += n;
    c->drop -= n;
}

/* Checks a frame's announced length before any of it is buffered: over a cap, the
 * client gets an error now and the frame is dropped as it arrives (an unauthenticated
 * client is closed instead, so that it cannot make the server read without bound). */
static bool admit(struct boot_store_server *s, struct conn *c, uint32_t len)
{
    char msg[200];
    size_t limit = c->authed ? s->frame_max : AUTH_FRAME_MAX;

    if (len <= limit && (len <= READ_CHUNK || atomic_load(&s->buffered) + len <= s->buffer_max)) {
        return true;
    }
    if (!c->authed) {
        reply_status(s, c, PGC_ERR_BOOT,
                     "this store requires the job's token (MPISHIM_STORE_TOKEN) first");
        c->closing = true;
        return false;
    }
    if (len > limit) {
        snprintf(msg, sizeof(msg),
                 "a request of %u bytes is above MPISHIM_STORE_FRAME_MAX (%zu bytes)", len, limit);
    } else {
        snprintf(msg, sizeof(msg),
                 "a request of %u bytes would take the server's buffers above "
                 "MPISHIM_STORE_BUFFER_MAX (%zu bytes); retry later",
                 len, s->buffer_max);
    }
    reply_status(s, c, PGC_ERR_NOMEM, msg);
    c->in.pos += 4;
    c->drop = len;
    drop_input(c);
    return false;
}

/* Whether the server reads c's input now: not while it waits for an answer to be read,
 * for a parked request, or to be closed. */
static bool readable(const struct conn *c)
{
    return !c->dead && !c->closing && !c->parked && !backed_up(c);
}

/* Handles every complete frame in c->in, stopping at a parked request (the client waits
 * for its answer and sends nothing else) and at an answer the client does not read. */
static void process_input(struct boot_store_server *s, struct conn *c)
{
    if (c->drop) {
        drop_input(c);
    }
    while (readable(c) && !c->drop && c->in.len - c->in.pos >= 4) {
        struct boot_buf frame = c->in;
        struct request r;
        uint32_t len;

        boot_buf_get_u32(&frame, &len);
        if (!c->admitted && !admit(s, c, len)) {
            continue;
        }
        c->admitted = true;
        if (frame.len - frame.pos < len) {
            break;
        }
        frame.len = frame.pos + len;
        c->in.pos = frame.len;
        c->admitted = false;
        if (parse_request(&frame, &r) || !enough_fields(&r)) {
            reply_status(s, c, PGC_ERR_INVALID_ARG, "malformed request");
            c->closing = c->closing || !c->authed;
        } else if (!c->authed) {
            do_auth(s, c, &r);
        } else {
            do_request(s, c, &r);
        }
        free_request(&r);
    }
    if (c->in.pos == c->in.len) {
        c->in.pos = c->in.len = 0;
    }
    if (c->closing && !backed_up(c)) {
        c->dead = true;
    }
    account(s, c);
}

static void read_input(struct boot_store_server *s, struct conn *c)
{
    if (c->parked) {
        /* The client waits for its answer; anything it sends now breaks the protocol
         * (or is a hang-up, which recv tells). */
        char x;
        ssize_t n = recv(c->fd, &x, 1, MSG_PEEK);
        c->dead = !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
        return;
    }
    while (readable(c)) {
        if (c->in.pos > 0) { /* keep the buffer from growing with consumed frames */
            memmove(c->in.p, c->in.p + c->in.pos, c->in.len - c->in.pos);
            c->in.len -= c->in.pos;
            c->in.pos = 0;
        }
        if (boot_buf_reserve(&c->in, READ_CHUNK) != PGC_OK) {
            c->dead = true;
            return;
        }
        ssize_t n = recv(c->fd, c->in.p + c->in.len, READ_CHUNK, 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            break;
        }
        if (n <= 0) {
            c->dead = true;
            return;
        }
        c->in.len += (size_t)n;
        process_input(s, c);
    }
    account(s, c);
}

/* Connections. */

static void free_conn(struct boot_store_server *s, struct conn *c)
{
    atomic_fetch_sub(&s->buffered, c->mem);
    unpark(c);
    if (c->fd >= 0) {
        close(c->fd);
    }
    boot_buf_free(&c->in);
    boot_buf_free(&c->out);
    free(c);
}

/* Out of descriptors: the pending connection would keep the listening socket readable
 * and poll() spinning. Give up the spare descriptor to accept it, close it at once (its
 * client sees the connection closed), and take the spare back. Without a spare, stop
 * accepting for a while instead. Returns whether a connection was shed. */
static bool shed_one(struct boot_store_server *s)
{
    static atomic_bool warned;
    int fd;

    if (!atomic_exchange(&warned, true)) {
        MPS_WARN("boot_store server: out of file descriptors (%s); refusing new connections "
                 "until some close",
                 strerror(errno));
    }
    if (s->spare_fd < 0) {
        s->accept_again = mps_now() + 0.1;
        return false;
    }
    close(s->spare_fd);
    fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        close(fd);
    }
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return fd >= 0;
}

static void accept_conns(struct boot_store_server *s)
{
    int one = 1;

    for (;;) {
        int fd = accept4(s->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0 && (errno == EMFILE || errno == ENFILE) && shed_one(s)) {
            continue;
        }
        if (fd < 0) {
            return; /* EAGAIN, or a client that gave up: either way nothing to do now */
        }
        if (s->nconns == s->cap) {
            int cap = s->cap ? 2 * s->cap : 16;
            struct conn **cs = realloc(s->conns, (size_t)cap * sizeof(*cs));
            struct pollfd *pf = realloc(s->pfds, (size_t)(cap + 2) * sizeof(*pf));
            s->conns = cs ? cs : s->conns;
            s->pfds = pf ? pf : s->pfds;
            if (!cs || !pf) {
                close(fd);
                return;
            }
            s->cap = cap;
        }
        struct conn *c = calloc(1, sizeof(*c));
        if (!c) {
            close(fd);
            return;
        }
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        c->fd = fd;
        c->rank = -1;
        c->authed = s->token == NULL;
        s->conns[s->nconns++] = c;
    }
}

/* Whether host names this node (the registration's host: MPISHIM_NODE_NAME or the host
 * name, boot_store_reg.c). */
static bool same_host(const char *host)
{
    const char *n = mps_config_str(MPS_CFG_NODE_NAME);
    char mine[256] = "";

    if (n && *n) {
        return !strcmp(n, host);
    }
    return gethostname(mine, sizeof(mine) - 1) == 0 && !strcmp(mine, host);
}

/* A rank of this node that died inside its start-up, before it unlinked its segments
 * (a rank that finished MPI_Init has), leaves them in /dev/shm with no launcher to remove
 * them. Its connection closes as it exits, a moment before it is a zombie: wait up to
 * 0.2 s for that, so that a live process's segments are never touched. */
static void remove_segments(int pid)
{
    for (int i = 0; i < 100 && pid > 0; i++) {
        if (mps_process_gone(pid)) {
            mps_shm_remove_of(pid);
            return;
        }
        usleep(2000);
    }
}

/* c, the connection of a rank, closed: unless the rank finished (boot/done/<rank>), it is
 * gone, and every parked request for keys that do not exist fails now with its name. */
static void rank_left(struct boot_store_server *s, struct conn *c)
{
    char key[64], msg[BOOT_STORE_KEY_MAX + 256];
    struct boot_map_entry *e;
    int pid = 0, n = 0;

    snprintf(key, sizeof(key), "boot/done/%d", c->rank);
    if (s->dead_msg || boot_map_find(&s->map, key)) {
        return;
    }
    /* The registration's value is "<size> <pid> <host> <nonce>". */
    snprintf(key, sizeof(key), "boot/reg/%d", c->rank);
    e = boot_map_find(&s->map, key);
    char host[256] = "?";
    if (e && e->val) {
        char val[320];
        snprintf(val, sizeof(val), "%.*s", (int)MPS_MIN(e->len, sizeof(val) - 1), (char *)e->val);
        n = sscanf(val, "%*d %d %255s", &pid, host);
    }
    snprintf(msg, sizeof(msg),
             "rank %d (pid %d on host %s) has died: its connection to the store closed before it "
             "finished (seen by the store server)",
             c->rank, n >= 1 ? pid : 0, host);
    s->dead_msg = strdup(msg);
    if (!s->dead_msg) {
        return;
    }
    MPS_DEBUG("boot_store server: %s", msg);
    /* For ranks that are not waiting in the store but in a transfer with the dead one
     * (boot_peers_alive reads it); past the caps, which must not hide a death. */
    boot_map_set(&s->map, "boot/dead", msg, strlen(msg));
    if (n >= 2 && same_host(host)) {
        remove_segments(pid);
    }
    for (int i = 0; i < s->nconns; i++) {
        struct conn *p = s->conns[i];
        if (p->parked && !p->dead && !all_exist(s, p->keys, p->nkeys)) {
            reply_status(s, p, PGC_ERR_PEER_DEAD, s->dead_msg);
            unpark(p);
            process_input(s, p);
        }
    }
}

static void reap_dead(struct boot_store_server *s)
{
    for (int i = 0; i < s->nconns; i++) {
        if (s->conns[i]->dead && s->conns[i]->rank >= 0) {
            rank_left(s, s->conns[i]);
        }
    }
    for (int i = 0; i < s->nconns;) {
        if (s->conns[i]->dead) {
            free_conn(s, s->conns[i]);
            s->conns[i] = s->conns[--s->nconns];
        } else {
            i++;
        }
    }
}

/* The poll timeout: until the earliest parked deadline, or forever (the wake-up pipe
 * interrupts it for stop). */
static int poll_timeout_ms(struct boot_store_server *s, double now)
{
    double first = -1;

    for (int i = 0; i < s->nconns; i++) {
        struct conn *c = s->conns[i];
        if (c->parked && (first < 0 || c->deadline < first)) {
            first = c->deadline;
        }
    }
    if (s->accept_again > now && (first < 0 || s->accept_again < first)) {
        first = s->accept_again;
    }
    if (first < 0) {
        return -1;
    }
    return first <= now ? 0 : (int)((first - now) * 1000.0) + 1;
}

static void *server_main(void *arg)
{
    struct boot_store_server *s = arg;

    while (!atomic_load(&s->stop)) {
        int n = s->nconns;
        s->pfds[0] = (struct pollfd){.fd = s->wake[0], .events = POLLIN};
        bool accepting = s->accept_again <= mps_now();
        s->pfds[1] = (struct pollfd){.fd = accepting ? s->listen_fd : -1, .events = POLLIN};
        for (int i = 0; i < n; i++) {
            struct conn *c = s->conns[i];
            /* A backed-up connection is only written to until its client reads. */
            s->pfds[i + 2] =
                (struct pollfd){.fd = c->fd, .events = backed_up(c) ? POLLOUT : POLLIN};
        }
        if (poll(s->pfds, (nfds_t)n + 2, poll_timeout_ms(s, mps_now())) < 0 && errno != EINTR) {
            MPS_WARN("boot_store server: poll failed: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            short ev = s->pfds[i + 2].revents;
            struct conn *c = s->conns[i];
            if (ev & POLLOUT) {
                send_out(c);
                process_input(s, c); /* what it sent while its answer waited */
            }
            if (ev & (POLLIN | POLLHUP | POLLERR)) {
                if (backed_up(c) || c->closing) {
                    c->dead = c->dead || (ev & (POLLHUP | POLLERR)) != 0;
                } else {
                    read_input(s, c);
                }
            }
        }
        if (accepting && (s->pfds[1].revents & POLLIN)) {
            accept_conns(s);
        }
        expire_parked(s, mps_now());
        reap_dead(s);
    }
    return NULL;
}

/* Start and stop. */

/* A listening socket on the first of host's addresses (family: AF_UNSPEC, or one) that
 * binds; the descriptor, or -1 with *err the errno (a getaddrinfo failure: *gai). The
 * wildcard IPv6 address also takes IPv4 connections (v6only off), whatever
 * net.ipv6.bindv6only says. */
static int listen_first(const char *host, int family, const char *port, int *err, int *gai)
{
    struct addrinfo hints = {
        .ai_family = family, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL, *ai;
    int fd = -1, one = 1, off = 0;

    if ((*gai = getaddrinfo(host, port, &hints, &res)) != 0) {
        return -1;
    }
    for (ai = res; ai && fd < 0; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            *err = errno;
            continue;
        }
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (ai->ai_family == AF_INET6 && !host) {
            setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
        }
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 1024) != 0) {
            *err = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    return fd;
}

/* Listens on host:port, or on every address of both families where host is empty: IPv6's
 * wildcard, else IPv4's (a host without IPv6). */
static int bind_any(const char *host, int port, int *fd_out)
{
    char portstr[16];
    int fd, err = 0, gai = 0;

    snprintf(portstr, sizeof(portstr), "%d", port);
    if (!host || !*host) {
        host = NULL;
        fd = listen_first(NULL, AF_INET6, portstr, &err, &gai);
        fd = fd >= 0 ? fd : listen_first(NULL, AF_INET, portstr, &err, &gai);
    } else {
        fd = listen_first(host, AF_UNSPEC, portstr, &err, &gai);
    }
    if (fd < 0 && gai != 0) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_server_start: cannot resolve %s: %s",
                         host ? host : "*",
                         gai == EAI_SYSTEM ? strerror(errno) : gai_strerror(gai));
    }
    if (fd < 0) {
        return mps_error(err == EADDRINUSE ? PGC_ERR_BOOT : PGC_ERR_IO,
                         "boot_store_server_start: cannot listen on %s:%d: %s", host ? host : "*",
                         port, strerror(err));
    }
    *fd_out = fd;
    return PGC_OK;
}

static int local_port(int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0) {
        return -1;
    }
    if (ss.ss_family == AF_INET6) {
        return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void free_server(struct boot_store_server *s)
{
    for (int i = 0; i < s->nconns; i++) {
        free_conn(s, s->conns[i]);
    }
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
    }
    if (s->spare_fd >= 0) {
        close(s->spare_fd);
    }
    if (s->wake[0] >= 0) {
        close(s->wake[0]);
        close(s->wake[1]);
    }
    boot_map_destroy(&s->map);
    boot_buf_free(&s->reply);
    free(s->token);
    free(s->dead_msg);
    free(s->conns);
    free(s->pfds);
    free(s);
}

/* A cap from the configuration table; 0 or less means "none". */
static size_t cap_of(enum mps_config_id id)
{
    long v = mps_config_int(id);

    return v > 0 ? (size_t)v : SIZE_MAX / 2;
}

/* The server without its socket and thread: the token, the caps and the map. */
static int server_new(const char *token, struct boot_store_server **out)
{
    struct boot_store_server *s = calloc(1, sizeof(*s));

    *out = NULL;
    if (!s) {
        return mps_error(PGC_ERR_NOMEM, "boot_store_server_start: out of memory");
    }
    s->listen_fd = s->spare_fd = s->wake[0] = s->wake[1] = -1;
    if (!token) {
        token = mps_config_str(MPS_CFG_STORE_TOKEN);
    }
    s->frame_max = cap_of(MPS_CFG_STORE_FRAME_MAX);
    if (s->frame_max > BOOT_STORE_FRAME_MAX) {
        s->frame_max = BOOT_STORE_FRAME_MAX; /* what a client accepts as an answer */
    }
    s->buffer_max = cap_of(MPS_CFG_STORE_BUFFER_MAX);
    s->keys_max = cap_of(MPS_CFG_STORE_KEYS_MAX);
    s->data_max = cap_of(MPS_CFG_STORE_DATA_MAX);
    s->pfds = calloc(2, sizeof(*s->pfds));
    if (token && *token) {
        s->token = strdup(token);
        s->token_len = strlen(token);
    }
    if (!s->pfds || (token && *token && !s->token) || boot_map_init(&s->map) != PGC_OK) {
        free_server(s);
        return mps_error(PGC_ERR_NOMEM, "boot_store_server_start: out of memory");
    }
    *out = s;
    return PGC_OK;
}

int boot_store_server_start_token(const char *host, int port, const char *token,
                                  struct boot_store_server **out)
{
    struct boot_store_server *s = NULL;
    int rc;

    *out = NULL;
    if (port < 0 || port > 65535) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_server_start: invalid port %d", port);
    }
    if ((rc = server_new(token, &s)) != PGC_OK) {
        return rc;
    }
    if ((rc = bind_any(host, port, &s->listen_fd)) != PGC_OK) {
        goto fail;
    }
    s->port = local_port(s->listen_fd);
    s->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0 ||
        pthread_create(&s->thread, NULL, server_main, s) != 0) {
        rc = mps_error(PGC_ERR_INTERNAL, "boot_store_server_start: cannot start the thread");
        goto fail;
    }
    s->threaded = true;
    MPS_DEBUG("boot_store server listening on %s:%d%s", host && *host ? host : "*", s->port,
              s->token ? "" : " (no token: any client that reaches it is served)");
    *out = s;
    return PGC_OK;
fail:
    free_server(s);
    return rc;
}

int boot_store_server_start(const char *host, int port, struct boot_store_server **out)
{
    return boot_store_server_start_token(host, port, NULL, out);
}

int boot_store_server_detached(const char *token, struct boot_store_server **out)
{
    return server_new(token, out);
}

int boot_store_server_feed(struct boot_store_server *s, const void *data, size_t len)
{
    struct conn *c = calloc(1, sizeof(*c));
    struct conn **cs = realloc(s->conns, sizeof(*cs) * (size_t)(s->nconns + 1));

    if (cs) {
        s->conns = cs;
    }
    if (!c || !cs || boot_buf_put(&c->in, data, len) != PGC_OK) {
        free(c ? c->in.p : NULL);
        free(c);
        return -1;
    }
    c->fd = -1;
    c->authed = s->token == NULL;
    s->conns[s->nconns++] = c;
    process_input(s, c);
    expire_parked(s, mps_now() + 1e9); /* a parked request is answered too */
    for (int i = 0; i < s->nconns; i++) {
        s->conns[i]->dead = true;
    }
    reap_dead(s);
    return PGC_OK;
}

int boot_store_server_port(const struct boot_store_server *s)
{
    return s ? s->port : -1;
}

size_t boot_store_server_buffered(const struct boot_store_server *s)
{
    return s ? atomic_load(&((struct boot_store_server *)s)->buffered) : 0;
}

void boot_store_server_stop(struct boot_store_server *s)
{
    if (!s) {
        return;
    }
    if (s->threaded) {
        atomic_store(&s->stop, true);
        if (write(s->wake[1], "x", 1) < 0) {
            MPS_WARN("boot_store_server_stop: cannot wake the server thread: %s", strerror(errno));
        }
        pthread_join(s->thread, NULL);
    }
    free_server(s);
}
