/* The public boot_store_* calls: argument checks, default timeouts, dispatch to the TCP
 * or file implementation; and the byte buffer of the TCP wire format. */
#include "config.h"

#include "boot_store_impl.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdlib.h>
#include <string.h>

static int check_key(const char *call, const char *key)
{
    if (!key || !*key) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: empty key", call);
    }
    if (strlen(key) > BOOT_STORE_KEY_MAX) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: key longer than %d bytes", call,
                         BOOT_STORE_KEY_MAX);
    }
    return PGC_OK;
}

static int check_keys(const char *call, const char *const *keys, int n)
{
    if (n < 0 || (n > 0 && !keys)) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: %d keys", call, n);
    }
    for (int i = 0; i < n; i++) {
        int rc = check_key(call, keys[i]);
        if (rc != PGC_OK) {
            return rc;
        }
    }
    return PGC_OK;
}

#define CHECK_STORE(call, s)                                                                       \
    do {                                                                                           \
        if (!(s)) {                                                                                \
            return mps_error(PGC_ERR_INVALID_ARG, "%s: NULL store", call);                         \
        }                                                                                          \
    } while (0)

void boot_store_close(struct boot_store *s)
{
    if (s) {
        s->ops->close(s);
    }
}

void boot_store_set_timeout(struct boot_store *s, double timeout)
{
    if (s && timeout > 0) {
        s->timeout = timeout;
    }
}

int boot_store_set(struct boot_store *s, const char *key, const void *val, size_t len)
{
    CHECK_STORE("boot_store_set", s);
    if (len && !val) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_set: NULL value of %zu bytes", len);
    }
    int rc = check_key("boot_store_set", key);
    return rc ? rc : s->ops->set(s, key, val, len);
}

int boot_store_get(struct boot_store *s, const char *key, void **val, size_t *len)
{
    CHECK_STORE("boot_store_get", s);
    if (!val || !len) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_get: NULL output");
    }
    *val = NULL;
    *len = 0;
    int rc = check_key("boot_store_get", key);
    return rc ? rc : s->ops->get(s, key, s->timeout, val, len);
}

int boot_store_add(struct boot_store *s, const char *key, int64_t delta, int64_t *result)
{
    int64_t dummy;

    CHECK_STORE("boot_store_add", s);
    int rc = check_key("boot_store_add", key);
    return rc ? rc : s->ops->add(s, key, delta, result ? result : &dummy);
}

int boot_store_compare_set(struct boot_store *s, const char *key, const void *expected, size_t elen,
                           const void *desired, size_t dlen, void **cur, size_t *clen)
{
    CHECK_STORE("boot_store_compare_set", s);
    if (!cur || !clen || (elen && !expected) || (dlen && !desired)) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_compare_set: NULL argument");
    }
    *cur = NULL;
    *clen = 0;
    int rc = check_key("boot_store_compare_set", key);
    return rc ? rc : s->ops->compare_set(s, key, expected, elen, desired, dlen, cur, clen);
}

int boot_store_wait(struct boot_store *s, const char *const *keys, int n, double timeout)
{
    CHECK_STORE("boot_store_wait", s);
    int rc = check_keys("boot_store_wait", keys, n);
    return rc ? rc : s->ops->wait(s, keys, n, timeout > 0 ? timeout : s->timeout);
}

int boot_store_check(struct boot_store *s, const char *const *keys, int n, bool *all_exist)
{
    CHECK_STORE("boot_store_check", s);
    if (!all_exist) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_check: NULL output");
    }
    int rc = check_keys("boot_store_check", keys, n);
    return rc ? rc : s->ops->check(s, keys, n, all_exist);
}

int boot_store_delete(struct boot_store *s, const char *key, bool *deleted)
{
    bool dummy;

    CHECK_STORE("boot_store_delete", s);
    int rc = check_key("boot_store_delete", key);
    return rc ? rc : s->ops->del(s, key, deleted ? deleted : &dummy);
}

int boot_store_num_keys(struct boot_store *s, int64_t *n)
{
    CHECK_STORE("boot_store_num_keys", s);
    if (!n) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_num_keys: NULL output");
    }
    return s->ops->num_keys(s, n);
}

/* The byte buffer. */

int boot_buf_reserve(struct boot_buf *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 256;
    char *p;

    if (b->len + extra <= b->cap) {
        return PGC_OK;
    }
    while (cap < b->len + extra) {
        cap *= 2;
    }
    p = realloc(b->p, cap);
    if (!p) {
        return mps_error(PGC_ERR_NOMEM, "boot_store: no memory for a buffer of %zu bytes", cap);
    }
    b->p = p;
    b->cap = cap;
    return PGC_OK;
}

int boot_buf_put(struct boot_buf *b, const void *p, size_t len)
{
    int rc = boot_buf_reserve(b, len);

    if (rc == PGC_OK && len) {
        memcpy(b->p + b->len, p, len);
        b->len += len;
    }
    return rc;
}

int boot_buf_put_u32(struct boot_buf *b, uint32_t v)
{
    unsigned char x[4] = {v >> 24, v >> 16, v >> 8, v};
    return boot_buf_put(b, x, 4);
}

int boot_buf_put_u64(struct boot_buf *b, uint64_t v)
{
    int rc = boot_buf_put_u32(b, (uint32_t)(v >> 32));
    return rc ? rc : boot_buf_put_u32(b, (uint32_t)v);
}

int boot_buf_put_field(struct boot_buf *b, const void *p, size_t len)
{
    int rc = boot_buf_put_u32(b, (uint32_t)len);
    return rc ? rc : boot_buf_put(b, p, len);
}

int boot_buf_get_u32(struct boot_buf *b, uint32_t *v)
{
    const unsigned char *x = (const unsigned char *)b->p + b->pos;

    if (b->len - b->pos < 4) {
        return -1;
    }
    *v = ((uint32_t)x[0] << 24) | ((uint32_t)x[1] << 16) | ((uint32_t)x[2] << 8) | x[3];
    b->pos += 4;
    return 0;
}

int boot_buf_get_u64(struct boot_buf *b, uint64_t *v)
{
    uint32_t hi, lo;

    if (boot_buf_get_u32(b, &hi) || boot_buf_get_u32(b, &lo)) {
        return -1;
    }
    *v = ((uint64_t)hi << 32) | lo;
    return 0;
}

int boot_buf_get_field(struct boot_buf *b, const char **p, size_t *len)
{
    uint32_t n;

    if (boot_buf_get_u32(b, &n) || b->len - b->pos < n) {
        return -1;
    }
    *p = b->p + b->pos;
    *len = n;
    b->pos += n;
    return 0;
}

void boot_buf_free(struct boot_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}
