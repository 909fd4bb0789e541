/*
 * pgc_store.c - the public Store (torch's TCPStore, FileStore, PrefixStore) over the
 * bootstrap's key-value store, and the default store of the process group.
 *
 * A handle is either a connection (struct boot_store, with a lock because one socket or
 * one file descriptor cannot carry two requests at once, and optionally the server this
 * process runs) or a prefix view that rewrites keys and forwards to its base. Handles are
 * reference counted so that a prefix view keeps its base alive.
 */
#include "config.h"

#include "boot.h"
#include "boot_store.h"
#include "mps_config.h"
#include "mps_ifaddr.h"
#include "mps_log.h"
#include "pg_internal.h"
#include "pgc_internal.h"
#include "pgc_status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pgc_store {
    struct boot_store *bs;            /* a connection, or NULL for a prefix view */
    struct boot_store_server *server; /* the server this handle runs, if any */
    struct pgc_store *base;           /* a prefix view's base */
    char *prefix;                     /* "prefix/" */
    pthread_mutex_t lock;
    int refs;
    int port;
    bool borrowed_bs;   /* bs belongs to the bootstrap: never close it */
    bool library_owned; /* the default store: pgc_store_free ignores it */
};

static struct pgc_store *default_store;
static int default_store_status = PGC_ERR_NOT_INITIALIZED;
static char default_store_msg[256];

static struct pgc_store *store_alloc(void)
{
    struct pgc_store *s = calloc(1, sizeof(*s));

    if (!s) {
        mps_error(PGC_ERR_NOMEM, "no memory for a store handle");
        return NULL;
    }
    pthread_mutex_init(&s->lock, NULL);
    s->refs = 1;
    s->port = -1;
    return s;
}

static void store_release(struct pgc_store *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) > 0) {
        return;
    }
    if (s->bs && !s->borrowed_bs) {
        boot_store_close(s->bs);
    }
    if (s->server) {
        boot_store_server_stop(s->server);
    }
    store_release(s->base);
    free(s->prefix);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

/* ---- creation ---- */

/* A TCP store handle: with bind_host non-NULL (or "" for every address) this process
 * serves the store there; connects to host (the server's own client uses loopback when it
 * bound every address). token NULL: MPISHIM_STORE_TOKEN. */
static int tcp_open(const char *call, const char *host, const char *bind_host, int port,
                    const char *token, double timeout, pgc_store **out)
{
    struct pgc_store *s = store_alloc();
    int rc = PGC_OK;

    if (!s) {
        return PGC_ERR_NOMEM;
    }
    s->port = port;
    if (bind_host) {
        rc = boot_store_server_start_token(bind_host, port, token, &s->server);
        if (rc == PGC_OK) {
            s->port = boot_store_server_port(s->server);
        }
    }
    if (rc == PGC_OK) {
        const char *peer =
            bind_host && (!*bind_host || !strcmp(bind_host, "0.0.0.0")) ? "127.0.0.1" : host;
        rc = boot_store_tcp_connect_token(peer, s->port, token, timeout, &s->bs);
    }
    if (rc != PGC_OK) {
        rc = pgc_wrap(rc, "%s(%s:%d%s)", call, host && *host ? host : "*", port,
                      bind_host ? ", server" : "");
        store_release(s);
        return rc;
    }
    *out = s;
    return PGC_OK;
}

int pgc_store_tcp_create(const char *host, int port, int is_server, double timeout, pgc_store **out)
{
    const char *call = "pgc_store_tcp_create";

    if (!out || port < 0 || port > 65535 || (!is_server && (!host || !*host))) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: host \"%s\", port %d%s", call,
                         host ? host : "(null)", port, out ? "" : ", NULL output");
    }
    *out = NULL;
    return tcp_open(call, host, is_server ? (host ? host : "") : NULL, port, NULL, timeout, out);
}

int pgc_store_file_create(const char *path, pgc_store **out)
{
    struct pgc_store *s;
    int rc;

    if (!out || !path || !*path) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_store_file_create: %s",
                         out ? "empty path" : "NULL output");
    }
    *out = NULL;
    s = store_alloc();
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    rc = boot_store_file_open(path, 0, &s->bs);
    if (rc != PGC_OK) {
        rc = pgc_wrap(rc, "pgc_store_file_create(%s)", path);
        store_release(s);
        return rc;
    }
    *out = s;
    return PGC_OK;
}

int pgc_store_prefix_create(pgc_store *base, const char *prefix, pgc_store **out)
{
    struct pgc_store *s;
    size_t n;

    if (!out || !base || !prefix || !*prefix) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_store_prefix_create: %s",
                         !out    ? "NULL output"
                         : !base ? "NULL base store"
                                 : "empty prefix");
    }
    *out = NULL;
    s = store_alloc();
    n = prefix ? strlen(prefix) : 0;
    if (s) {
        s->prefix = malloc(n + 2);
    }
    if (!s || !s->prefix) {
        store_release(s);
        return mps_error(PGC_ERR_NOMEM, "pgc_store_prefix_create: no memory");
    }
    memcpy(s->prefix, prefix, n);
    memcpy(s->prefix + n, "/", 2);
    __atomic_add_fetch(&base->refs, 1, __ATOMIC_ACQ_REL);
    s->base = base;
    s->port = base->port;
    *out = s;
    return PGC_OK;
}

void pgc_store_free(pgc_store *store)
{
    if (store && !store->library_owned) {
        store_release(store);
    }
}

int pgc_store_port(pgc_store *store)
{
    return store ? store->port : -1;
}

/* ---- key rewriting and dispatch ---- */

/* The connection under a (possibly nested) prefix view, and the full prefix of the view. */
static struct pgc_store *resolve(struct pgc_store *s, char *prefix, size_t len)
{
    size_t off = 0;

    prefix[0] = '\0';
    /* Nested views: the outermost prefix is the innermost part of the key. */
    while (s->base) {
        size_t n = strlen(s->prefix);
        if (off + n + 1 > len) {
            return NULL;
        }
        memmove(prefix + n, prefix, off + 1);
        memcpy(prefix, s->prefix, n);
        off += n;
        s = s->base;
    }
    return s;
}

struct op_ctx {
    struct pgc_store *conn;
    char prefix[512];
};

static int op_begin(const char *call, pgc_store *s, struct op_ctx *c)
{
    if (!s) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: NULL store", call);
    }
    c->conn = resolve(s, c->prefix, sizeof(c->prefix));
    if (!c->conn) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: store prefixes longer than %zu bytes", call,
                         sizeof(c->prefix) - 1);
    }
    pthread_mutex_lock(&c->conn->lock);
    return PGC_OK;
}

static void op_end(struct op_ctx *c)
{
    pthread_mutex_unlock(&c->conn->lock);
}

/* The full key, malloc'd (NULL on no memory). */
static char *full_key(const struct op_ctx *c, const char *key)
{
    size_t a = strlen(c->prefix), b = key ? strlen(key) : 0;
    char *k = malloc(a + b + 1);

    if (k) {
        memcpy(k, c->prefix, a);
        memcpy(k + a, key ? key : "", b + 1);
    }
    return k;
}

/* Runs one single-key operation: prefix, lock, call, and a message naming the call. */
#define STORE_OP(call, store, key, expr)                                                           \
    do {                                                                                           \
        struct op_ctx c_;                                                                          \
        char *k;                                                                                   \
        int rc_ = op_begin(call, store, &c_);                                                      \
        if (rc_ != PGC_OK) {                                                                       \
            return rc_;                                                                            \
        }                                                                                          \
        k = full_key(&c_, key && *key ? key : "");                                                 \
        if (!k) {                                                                                  \
            rc_ = mps_error(PGC_ERR_NOMEM, "%s: no memory", call);                                 \
        } else if (!key || !*key) {                                                                \
            rc_ = mps_error(PGC_ERR_INVALID_ARG, "%s: empty key", call);                           \
        } else {                                                                                   \
            struct boot_store *bs_ = c_.conn->bs;                                                  \
            (void)bs_;                                                                             \
            rc_ = (expr);                                                                          \
            if (rc_ != PGC_OK) {                                                                   \
                rc_ = pgc_wrap(rc_, "%s(\"%s\")", call, key);                                      \
            }                                                                                      \
        }                                                                                          \
        free(k);                                                                                   \
        op_end(&c_);                                                                               \
        return rc_;                                                                                \
    } while (0)

int pgc_store_set(pgc_store *store, const char *key, const void *value, size_t len)
{
    STORE_OP("pgc_store_set", store, key, boot_store_set(bs_, k, value, len));
}

int pgc_store_get(pgc_store *store, const char *key, void **value, size_t *len)
{
    if (!value || !len) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_store_get: NULL output");
    }
    STORE_OP("pgc_store_get", store, key, boot_store_get(bs_, k, value, len));
}

int pgc_store_add(pgc_store *store, const char *key, int64_t delta, int64_t *result)
{
    STORE_OP("pgc_store_add", store, key, boot_store_add(bs_, k, delta, result));
}

static int cas(struct boot_store *bs, const char *k, const void *e, size_t el, const void *d,
               size_t dl, void **cur, size_t *clen)
{
    void *v = NULL;
    size_t vl = 0;
    int rc = boot_store_compare_set(bs, k, e, el, d, dl, &v, &vl);

    if (rc == PGC_OK && cur) {
        *cur = v;
        v = NULL;
    }
    if (rc == PGC_OK && clen) {
        *clen = vl;
    }
    free(v);
    return rc;
}

int pgc_store_compare_set(pgc_store *store, const char *key, const void *expected,
                          size_t expected_len, const void *desired, size_t desired_len,
                          void **current, size_t *current_len)
{
    if (current) {
        *current = NULL;
    }
    STORE_OP("pgc_store_compare_set", store, key,
             cas(bs_, k, expected, expected_len, desired, desired_len, current, current_len));
}

static int del(struct boot_store *bs, const char *k, int *deleted)
{
    bool d = false;
    int rc = boot_store_delete(bs, k, &d);

    if (rc == PGC_OK && deleted) {
        *deleted = d;
    }
    return rc;
}

int pgc_store_delete_key(pgc_store *store, const char *key, int *deleted)
{
    STORE_OP("pgc_store_delete_key", store, key, del(bs_, k, deleted));
}

/* The n keys with the prefix, malloc'd (one block). */
static char **full_keys(const struct op_ctx *c, const char *const *keys, int n)
{
    size_t total = 0, a = strlen(c->prefix);
    char **out;
    char *p;

    for (int i = 0; i < n; i++) {
        total += a + (keys[i] ? strlen(keys[i]) : 0) + 1;
    }
    out = malloc(sizeof(char *) * (size_t)(n + 1) + total);
    if (!out) {
        return NULL;
    }
    p = (char *)(out + n + 1);
    for (int i = 0; i < n; i++) {
        out[i] = p;
        p += sprintf(p, "%s%s", c->prefix, keys[i] ? keys[i] : "") + 1;
    }
    return out;
}

static int multi_key(const char *call, pgc_store *store, const char *const *keys, int n,
                     double timeout, int *all_exist)
{
    struct op_ctx c;
    char **k;
    bool exist = false;
    int rc;

    if (n < 0 || (n > 0 && !keys)) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: %d keys", call, n);
    }
    for (int i = 0; i < n; i++) {
        if (!keys[i] || !*keys[i]) {
            return mps_error(PGC_ERR_INVALID_ARG, "%s: key %d is empty", call, i);
        }
    }
    rc = op_begin(call, store, &c);
    if (rc != PGC_OK) {
        return rc;
    }
    k = full_keys(&c, keys, n);
    if (!k) {
        rc = mps_error(PGC_ERR_NOMEM, "%s: no memory for %d keys", call, n);
    } else if (all_exist) {
        rc = boot_store_check(c.conn->bs, (const char *const *)k, n, &exist);
        *all_exist = exist;
    } else {
        rc = boot_store_wait(c.conn->bs, (const char *const *)k, n, timeout);
    }
    if (rc != PGC_OK && k) {
        rc = pgc_wrap(rc, "%s(%d keys%s%s)", call, n, n ? ", first " : "", n ? keys[0] : "");
    }
    free(k);
    op_end(&c);
    return rc;
}

int pgc_store_wait(pgc_store *store, const char *const *keys, int n, double timeout)
{
    return multi_key("pgc_store_wait", store, keys, n, timeout, NULL);
}

int pgc_store_check(pgc_store *store, const char *const *keys, int n, int *all_exist)
{
    if (!all_exist) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_store_check: NULL output");
    }
    *all_exist = 0;
    return multi_key("pgc_store_check", store, keys, n, 0, all_exist);
}

int pgc_store_num_keys(pgc_store *store, int64_t *n)
{
    struct op_ctx c;
    int rc;

    if (!n) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_store_num_keys: NULL output");
    }
    rc = op_begin("pgc_store_num_keys", store, &c);
    if (rc != PGC_OK) {
        return rc;
    }
    rc = boot_store_num_keys(c.conn->bs, n);
    if (rc != PGC_OK) {
        rc = pgc_wrap(rc, "pgc_store_num_keys");
    }
    op_end(&c);
    return rc;
}

int pgc_store_set_timeout(pgc_store *store, double timeout)
{
    struct op_ctx c;
    int rc;

    if (timeout <= 0) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_store_set_timeout: %.3f s", timeout);
    }
    rc = op_begin("pgc_store_set_timeout", store, &c);
    if (rc == PGC_OK) {
        /* A prefix view shares its connection, and so its timeout. */
        boot_store_set_timeout(c.conn->bs, timeout);
        op_end(&c);
    }
    return rc;
}

/* ---- the default store ---- */

pgc_store *pgc_default_store(void)
{
    if (!pgc_is_initialized()) {
        mps_error(PGC_ERR_NOT_INITIALIZED, "pgc_default_store: the process group is not "
                                           "initialized");
        return NULL;
    }
    if (!default_store) {
        mps_error(default_store_status, "pgc_default_store: %s", default_store_msg);
    }
    return default_store;
}

/* The store's announcement: rank 0's port, node name and addresses (IPv4, then IPv6). */
struct store_announce {
    int port; /* -1: rank 0 could not start a server */
    char token[BOOT_STORE_TOKEN_LEN + 1]; /* sent over the process group, never the network */
    char node[BOOT_NODE_MAX];
    bool bound_one; /* MPISHIM_STORE_BIND named one address: addr[0], for everyone */
    int naddr;
    struct mps_inaddr addr[MPS_IFADDR_MAX];
};

/* The addresses of rank 0 that this rank connects to, comma separated, tried in turn
 * (boot_store_tcp.c): loopback on rank 0's node; else rank 0's interfaces in the order
 * mps_ifaddr_order gives (not the host name: on many clusters node names do not resolve,
 * Slurm reaching nodes by NodeAddr, and a name that resolves may name another interface
 * than the one the peers reach; and the first address on a subnet of ours may be rank 0's
 * private network that nobody routes). */
static int pick_store_addr(const struct store_announce *a, char *host, size_t len)
{
    int order[MPS_IFADDR_MAX] = {0}; /* bound_one: addr[0] alone */
    int m = a->bound_one ? 1 : mps_ifaddr_order(a->addr, a->naddr, order);
    size_t used = 0;

    snprintf(host, len, "127.0.0.1");
    if (!a->bound_one && strncmp(a->node, pg_node_name(), BOOT_NODE_MAX) == 0) {
        return PGC_OK;
    }
    if (m <= 0) {
        return mps_error(PGC_ERR_BOOT,
                         "pgc_default_store: rank 0 (node %s) announced no address (no "
                         "interface up and running but loopback there); set "
                         "MPISHIM_STORE_BIND to an address of rank 0 that the nodes reach",
                         a->node);
    }
    for (int k = 0; k < m && used + MPS_INADDR_STRLEN + 1 < len; k++) {
        char one[MPS_INADDR_STRLEN];
        used += (size_t)snprintf(host + used, len - used, "%s%s", k ? "," : "",
                                 mps_inaddr_str(&a->addr[order[k]], one, sizeof(one)));
    }
    return PGC_OK;
}

/* Where rank 0's default store listens: loopback when every rank shares its node, else
 * every address (the others pick the one they reach; the token keeps out whoever lacks
 * it). MPISHIM_STORE_BIND overrides ("*": every address). */
static const char *default_bind(bool one_node)
{
    const char *b = mps_config_str(MPS_CFG_STORE_BIND);

    if (b && *b) {
        return strcmp(b, "*") ? b : "";
    }
    return one_node ? "127.0.0.1" : "";
}

/* Rank 0 serves a store with a fresh token and broadcasts its port, token, node and
 * addresses over the process group (not the network store, so that only the group's
 * ranks learn the token); the others connect to the address they reach (collective). */
static int serve_default_store(struct pgc_store **out)
{
    struct pg_group *w = pg_world_group();
    struct store_announce a;
    char host[MPS_IFADDR_MAX * (MPS_INADDR_STRLEN + 1)];
    int rc = PGC_OK;

    memset(&a, 0, sizeof(a));
    a.port = -1;
    if (w->rank == 0) {
        const char *bind = default_bind(pg_local_size() == w->size);
        rc = boot_store_token_new(a.token);
        if (rc == PGC_OK) {
            rc = tcp_open("pgc_default_store", *bind ? bind : "127.0.0.1", bind, 0, a.token,
                          pg_timeout(), out);
        }
        if (rc == PGC_OK) {
            a.port = (*out)->port;
            snprintf(a.node, sizeof(a.node), "%s", pg_node_name());
            a.bound_one =
                *bind && strcmp(bind, "127.0.0.1") != 0 && mps_inaddr_parse(bind, &a.addr[0]);
            a.naddr = a.bound_one ? 1 : mps_ifaddr_mine("", a.addr, MPS_IFADDR_MAX);
            a.naddr = MPS_MAX(a.naddr, 0);
        }
    }
    if (w->size > 1) {
        int brc = pg_bcast(w, &a, sizeof(a), 0);
        if (brc != PGC_OK) {
            return brc;
        }
    }
    if (w->rank != 0) {
        if (a.port < 0) {
            return mps_error(PGC_ERR_BOOT, "rank 0 could not start a store server");
        }
        a.token[BOOT_STORE_TOKEN_LEN] = '\0';
        a.node[BOOT_NODE_MAX - 1] = '\0';
        a.naddr = a.naddr < 0 || a.naddr > MPS_IFADDR_MAX ? 0 : a.naddr;
        rc = pick_store_addr(&a, host, sizeof(host));
        if (rc != PGC_OK) {
            return rc;
        }
        MPS_DEBUG("default store: rank 0 (node %s) serves on port %d; connecting to %s", a.node,
                  a.port, host);
        rc = tcp_open("pgc_default_store", host, NULL, a.port, a.token, pg_timeout(), out);
    }
    return rc;
}

int pgc_store_default_open(void)
{
    struct boot_store *bs = pg_store();
    struct pgc_store *s = NULL;
    int rc = PGC_OK;

    if (bs) {
        s = store_alloc();
        if (!s) {
            rc = PGC_ERR_NOMEM;
        } else {
            s->bs = bs;
            s->borrowed_bs = true;
        }
    } else {
        rc = serve_default_store(&s);
    }
    default_store_status = rc;
    if (rc != PGC_OK) {
        snprintf(default_store_msg, sizeof(default_store_msg), "the process group has no store: %s",
                 mps_last_error());
        MPS_INFO("%s", default_store_msg);
        return rc;
    }
    s->library_owned = true;
    default_store = s;
    return PGC_OK;
}

void pgc_store_default_close(void)
{
    struct pgc_store *s = default_store;
    bool served = pg_is_initialized() && pg_store() == NULL && pg_world_size() > 1;

    default_store = NULL;
    default_store_status = PGC_ERR_NOT_INITIALIZED;
    snprintf(default_store_msg, sizeof(default_store_msg), "the process group is gone");
    if (s) {
        s->library_owned = false;
    }
    /* Rank 0's server must outlive every client: clients close, all meet, then it stops.
     * Every rank meets, even one whose store failed, so that nobody waits in vain. */
    if (s && !s->server) {
        store_release(s);
        s = NULL;
    }
    if (served) {
        pg_barrier(pg_world_group());
    }
    store_release(s);
}
