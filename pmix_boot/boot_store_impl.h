/*
 * boot_store_impl.h - private to pmix_boot/: the store vtable, the key-value map that the
 * TCP server and the file store both keep, and the byte buffer of the TCP wire format.
 *
 * The public boot_store_* calls (boot_store.c) check their arguments, resolve the default
 * timeout and dispatch through ops; an implementation embeds struct boot_store first and
 * gets back to itself with container_of.
 */
#ifndef BOOT_STORE_IMPL_H
#define BOOT_STORE_IMPL_H

#include "boot_store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct addrinfo;

/* Deadline-bounded sockets, shared by the TCP store's client and the PMI-1 method
 * (boot_pmi1.c); deadline is an mps_now() time. boot_wait_fd: 0 once fd is ready for
 * events, else -1 with errno (ETIMEDOUT at the deadline). boot_connect_fd: a non-blocking,
 * close-on-exec socket connected to ai, or -1 with errno. */
int boot_wait_fd(int fd, short events, double deadline);
int boot_connect_fd(const struct addrinfo *ai, double deadline);

struct boot_store_ops {
    const char *name; /* "tcp" or "file", for messages */
    int (*set)(struct boot_store *s, const char *key, const void *val, size_t len);
    int (*get)(struct boot_store *s, const char *key, double timeout, void **val, size_t *len);
    int (*add)(struct boot_store *s, const char *key, int64_t delta, int64_t *result);
    int (*compare_set)(struct boot_store *s, const char *key, const void *expected, size_t elen,
                       const void *desired, size_t dlen, void **cur, size_t *clen);
    int (*wait)(struct boot_store *s, const char *const *keys, int n, double timeout);
    int (*check)(struct boot_store *s, const char *const *keys, int n, bool *all_exist);
    int (*del)(struct boot_store *s, const char *key, bool *deleted);
    int (*num_keys)(struct boot_store *s, int64_t *n);
    void (*close)(struct boot_store *s);
};

struct boot_store {
    const struct boot_store_ops *ops;
    double timeout; /* default of blocking calls, seconds */
};

/* Longest key accepted, and largest value or frame, so that garbage cannot make a server or
 * a reader allocate without bound. */
#define BOOT_STORE_KEY_MAX 4096
#define BOOT_STORE_FRAME_MAX (256u << 20)

/* A chained hash map from NUL-terminated keys to byte values. Values are stored with one
 * extra NUL byte past len, so that callers may treat them as strings. Not thread-safe. */
struct boot_map_entry {
    struct boot_map_entry *next;
    char *key;
    char *val;
    size_t len;
};

struct boot_map {
    struct boot_map_entry **buckets;
    size_t nbuckets, count;
    size_t bytes; /* keys and values stored, for the server's MPISHIM_STORE_DATA_MAX */
};

int boot_map_init(struct boot_map *m);
void boot_map_destroy(struct boot_map *m);
struct boot_map_entry *boot_map_find(const struct boot_map *m, const char *key);
/* Copies key and value; replaces an existing value. */
int boot_map_set(struct boot_map *m, const char *key, const void *val, size_t len);
bool boot_map_del(struct boot_map *m, const char *key);
/* The semantics of boot_store_add and boot_store_compare_set, shared by both stores: the
 * integer is kept as decimal text; *cur points into the map (copy it before the next
 * change). An absent key with a non-empty expected value is left absent: *cur is "". */
int boot_map_add(struct boot_map *m, const char *key, int64_t delta, int64_t *result);
int boot_map_compare_set(struct boot_map *m, const char *key, const void *expected, size_t elen,
                         const void *desired, size_t dlen, const char **cur, size_t *clen);
/* A malloc'd copy of len bytes plus a terminating NUL. */
void *boot_memdup0(const void *p, size_t len);

/* A growable byte buffer with big-endian integer packing (the TCP wire format). */
struct boot_buf {
    char *p;
    size_t len, cap, pos; /* pos: read cursor */
};

int boot_buf_reserve(struct boot_buf *b, size_t extra);
int boot_buf_put(struct boot_buf *b, const void *p, size_t len);
int boot_buf_put_u32(struct boot_buf *b, uint32_t v);
int boot_buf_put_u64(struct boot_buf *b, uint64_t v);
/* A field: u32 length then the bytes. */
int boot_buf_put_field(struct boot_buf *b, const void *p, size_t len);
/* Readers return -1 when the buffer holds too few bytes (a malformed frame). */
int boot_buf_get_u32(struct boot_buf *b, uint32_t *v);
int boot_buf_get_u64(struct boot_buf *b, uint64_t *v);
/* *p points into the buffer; valid until the buffer changes. */
int boot_buf_get_field(struct boot_buf *b, const char **p, size_t *len);
void boot_buf_free(struct boot_buf *b);

/* The wire protocol. Every frame is a u32 length then that many bytes. A request is
 * u32 op, u64 timeout in ms (blocking ops), u32 field count, fields; a response is
 * u32 status (a pgc_status_t, two's complement), u32 field count, fields. */
enum boot_store_op {
    BOOT_OP_SET = 1,
    BOOT_OP_GET,
    BOOT_OP_ADD,
    BOOT_OP_CAS,
    BOOT_OP_WAIT,
    BOOT_OP_CHECK,
    BOOT_OP_DEL,
    BOOT_OP_NUM_KEYS,
    BOOT_OP_AUTH, /* one field, the job's token: the first request of every connection */
};

/* For the fuzz target and the unit tests: a server without socket or thread, and one
 * connection that sends it bytes. feed() runs the frame parser and the requests on them
 * exactly as the server thread would, drops the answers and closes the connection (the
 * map keeps what the requests stored). Not thread-safe; free with boot_store_server_stop. */
int boot_store_server_detached(const char *token, struct boot_store_server **out);
int boot_store_server_feed(struct boot_store_server *s, const void *data, size_t len);

/* boot_store_register as process pid (the unit tests register several "processes" from
 * the threads of one). */
int boot_store_register_pid(struct boot_store *s, int rank, int size, int pid, double timeout);

#endif
