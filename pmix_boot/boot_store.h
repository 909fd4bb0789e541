/*
 * boot_store.h - the key-value store of the rendezvous (torch's c10d::Store in C).
 *
 * Two kinds: a TCP store (one server, any number of clients, each client one socket) and
 * a file store (one file on a shared file system, locked with fcntl). Values are byte
 * strings. Blocking calls (get, wait) give up after their timeout with PGC_ERR_TIMEOUT.
 * A store handle is used by one thread at a time; open one handle per thread.
 */
#ifndef BOOT_STORE_H
#define BOOT_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct boot_store;
struct boot_store_server;

/* Starts a TCP store server on host:port in a thread of this process ("" or NULL binds
 * every address; port 0 picks a free one). Every connection must first present token
 * (NULL: MPISHIM_STORE_TOKEN; NULL or "" there: none, any client is served); a client
 * without it reads and writes nothing. The caps MPISHIM_STORE_*_MAX are read here. */
int boot_store_server_start(const char *host, int port, struct boot_store_server **out);
int boot_store_server_start_token(const char *host, int port, const char *token,
                                  struct boot_store_server **out);
int boot_store_server_port(const struct boot_store_server *s);
/* Bytes the server holds in its connections' buffers now (read by tests). */
size_t boot_store_server_buffered(const struct boot_store_server *s);
void boot_store_server_stop(struct boot_store_server *s);

/* Connects to a TCP store, retrying until timeout (the server may start later), and
 * presents token (NULL: MPISHIM_STORE_TOKEN). A refused token is PGC_ERR_BOOT. */
int boot_store_tcp_connect(const char *host, int port, double timeout, struct boot_store **out);
int boot_store_tcp_connect_token(const char *host, int port, const char *token, double timeout,
                                 struct boot_store **out);
/* A token of BOOT_STORE_TOKEN_LEN hex digits from getrandom, into buf (at least
 * BOOT_STORE_TOKEN_LEN + 1 bytes). */
#define BOOT_STORE_TOKEN_LEN 32
int boot_store_token_new(char *buf);

/* The rendezvous registration of env:// and tcp:// (boot_store_reg.c): rank registers its
 * host, pid and WORLD_SIZE under "boot/reg/<rank>" and waits until every rank did. A rank
 * registered twice, or a WORLD_SIZE other than rank 0's, is an error naming both processes,
 * returned here and recorded in the store so that the other side fails with it too. */
int boot_store_register(struct boot_store *s, int rank, int size, double timeout);
/* Whether rank registered and whether it finalized ("boot/done/<rank>", set by the
 * bootstrap's fini after its final barrier). For mpiexec. */
int boot_store_rank_state(struct boot_store *s, int rank, bool *registered, bool *finalized);
/* Opens (creating if needed) a file store. */
int boot_store_file_open(const char *path, double timeout, struct boot_store **out);
void boot_store_close(struct boot_store *s);
/* The default timeout of blocking calls on this handle. */
void boot_store_set_timeout(struct boot_store *s, double timeout);

int boot_store_set(struct boot_store *s, const char *key, const void *val, size_t len);
/* Blocks until key exists; *val is malloc'd (caller frees), NUL-terminated past *len. */
int boot_store_get(struct boot_store *s, const char *key, void **val, size_t *len);
/* Adds delta to the integer value of key (0 if absent); *result gets the new value. */
int boot_store_add(struct boot_store *s, const char *key, int64_t delta, int64_t *result);
/* Sets key to desired if its value equals expected (absent counts as equal to an empty
 * expected); *cur gets the value after the call (malloc'd). */
int boot_store_compare_set(struct boot_store *s, const char *key, const void *expected,
                           size_t elen, const void *desired, size_t dlen, void **cur,
                           size_t *clen);
/* Blocks until every key exists, or PGC_ERR_TIMEOUT after timeout seconds (<=0: default). */
int boot_store_wait(struct boot_store *s, const char *const *keys, int n, double timeout);
/* *all_exist tells whether every key exists now; does not block. */
int boot_store_check(struct boot_store *s, const char *const *keys, int n, bool *all_exist);
/* *deleted tells whether the key existed. */
int boot_store_delete(struct boot_store *s, const char *key, bool *deleted);
int boot_store_num_keys(struct boot_store *s, int64_t *n);

#endif
