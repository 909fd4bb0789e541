/* The key-value map of the TCP store server and of the file store's replayed log. */
#include "config.h"

#include "boot_store_impl.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAP_INITIAL_BUCKETS 64

void *boot_memdup0(const void *p, size_t len)
{
    char *d = malloc(len + 1);

    if (d) {
        if (len) {
            memcpy(d, p, len);
        }
        d[len] = '\0';
    }
    return d;
}

/* FNV-1a: short keys, no adversary, and it is four lines. */
static size_t hash_key(const char *key)
{
    uint64_t h = 1469598103934665603ull;

    for (const unsigned char *c = (const unsigned char *)key; *c; c++) {
        h = (h ^ *c) * 1099511628211ull;
    }
    return (size_t)h;
}

int boot_map_init(struct boot_map *m)
{
    m->count = m->bytes = 0;
    m->nbuckets = MAP_INITIAL_BUCKETS;
    m->buckets = calloc(m->nbuckets, sizeof(*m->buckets));
    return m->buckets ? PGC_OK : mps_error(PGC_ERR_NOMEM, "boot_map_init: out of memory");
}

void boot_map_destroy(struct boot_map *m)
{
    for (size_t i = 0; m->buckets && i < m->nbuckets; i++) {
        struct boot_map_entry *e = m->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            free(e->key);
            free(e->val);
            free(e);
        }
    }
    free(m->buckets);
    m->buckets = NULL;
    m->nbuckets = m->count = m->bytes = 0;
}

struct boot_map_entry *boot_map_find(const struct boot_map *m, const char *key)
{
    struct boot_map_entry *e = m->buckets[hash_key(key) % m->nbuckets];

    while (e && strcmp(e->key, key) != 0) {
        e = e->next;
    }
    return e;
}

/* Doubles the bucket array once the chains grow longer than one entry on average; a
 * failed allocation only leaves the chains longer. */
static void maybe_grow(struct boot_map *m)
{
    size_t n = m->nbuckets * 2;
    struct boot_map_entry **b;

    if (m->count < m->nbuckets || !(b = calloc(n, sizeof(*b)))) {
        return;
    }
    for (size_t i = 0; i < m->nbuckets; i++) {
        struct boot_map_entry *e = m->buckets[i], *next;
        for (; e; e = next) {
            next = e->next;
            e->next = b[hash_key(e->key) % n];
            b[hash_key(e->key) % n] = e;
        }
    }
    free(m->buckets);
    m->buckets = b;
    m->nbuckets = n;
}

int boot_map_set(struct boot_map *m, const char *key, const void *val, size_t len)
{
    struct boot_map_entry *e = boot_map_find(m, key);
    char *v = boot_memdup0(val, len);

    if (!v) {
        return mps_error(PGC_ERR_NOMEM, "boot_store: no memory for a value of %zu bytes", len);
    }
    if (e) {
        free(e->val);
        m->bytes = m->bytes - e->len + len;
        e->val = v;
        e->len = len;
        return PGC_OK;
    }
    e = calloc(1, sizeof(*e));
    if (!e || !(e->key = strdup(key))) {
        free(e);
        free(v);
        return mps_error(PGC_ERR_NOMEM, "boot_store: no memory for key %s", key);
    }
    e->val = v;
    e->len = len;
    e->next = m->buckets[hash_key(key) % m->nbuckets];
    m->buckets[hash_key(key) % m->nbuckets] = e;
    m->count++;
    m->bytes += strlen(key) + len;
    maybe_grow(m);
    return PGC_OK;
}

bool boot_map_del(struct boot_map *m, const char *key)
{
    struct boot_map_entry **pe = &m->buckets[hash_key(key) % m->nbuckets];

    for (; *pe; pe = &(*pe)->next) {
        struct boot_map_entry *e = *pe;
        if (strcmp(e->key, key) == 0) {
            *pe = e->next;
            m->bytes -= strlen(e->key) + e->len;
            free(e->key);
            free(e->val);
            free(e);
            m->count--;
            return true;
        }
    }
    return false;
}

int boot_map_add(struct boot_map *m, const char *key, int64_t delta, int64_t *result)
{
    struct boot_map_entry *e = boot_map_find(m, key);
    int64_t v = 0;
    char text[32];

    if (e) {
        char *end;
        errno = 0;
        v = strtoll(e->val, &end, 10);
        if (errno || end == e->val || *end != '\0') {
            return mps_error(PGC_ERR_INVALID_ARG,
                             "boot_store_add: value of key %s is not an integer", key);
        }
    }
    if (__builtin_add_overflow(v, delta, &v)) {
        /* A 64-bit counter does not wrap silently (a fuzzed frame found the overflow). */
        return mps_error(PGC_ERR_INVALID_ARG,
                         "boot_store_add: adding %" PRId64 " to key %s overflows a 64-bit "
                         "integer; the value stays", delta, key);
    }
    snprintf(text, sizeof(text), "%" PRId64, v);
    *result = v;
    return boot_map_set(m, key, text, strlen(text));
}

int boot_map_compare_set(struct boot_map *m, const char *key, const void *expected, size_t elen,
                         const void *desired, size_t dlen, const char **cur, size_t *clen)
{
    struct boot_map_entry *e = boot_map_find(m, key);
    int rc;

    if (!e && elen != 0) {
        *cur = "";
        *clen = 0;
        return PGC_OK;
    }
    if (!e || (e->len == elen && (elen == 0 || memcmp(e->val, expected, elen) == 0))) {
        rc = boot_map_set(m, key, desired, dlen);
        if (rc != PGC_OK) {
            return rc;
        }
        e = boot_map_find(m, key);
    }
    *cur = e->val;
    *clen = e->len;
    return PGC_OK;
}
