/*
 * boot_store_file.c - the file store: one file on a (shared) file system, holding an
 * append-only log of records, each u32 type, u32 key length, u32 value length, key, value
 * (big-endian). A record sets a key, deletes one, or counts a handle opened or closed.
 *
 * Every call locks the file (open-file-description locks, so that two handles in one
 * process exclude each other too), reads the records appended since its last call into a
 * private map, and appends its own. Blocking get and wait poll with growing sleeps (1 ms
 * up to 50 ms) until the timeout. The last handle to close removes the file, so that the
 * next job does not read this one's keys; a job that crashed leaves the file behind, and
 * the caller must then remove it.
 */
#include "config.h"

#include "boot_store_impl.h"
#include "mps_config.h"
#include "mps_log.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { REC_SET = 1, REC_DEL = 2, REC_REF = 3 };
#define REC_HDR 12

struct file_store {
    struct boot_store base;
    int fd;
    char *path;
    struct boot_map map;
    off_t off;    /* log bytes already applied to map */
    int64_t refs; /* open handles, from the REF records */
    struct boot_buf io;
};

static struct file_store *to_file(struct boot_store *s)
{
    return container_of(s, struct file_store, base);
}

/* Takes the lock by trying and sleeping (50 us doubling up to 5 ms) rather than with
 * F_OFD_SETLKW: a holder that hangs then costs a timeout instead of a hang, and valgrind
 * (which does not know that F_OFD_SETLKW blocks) can run the tests. */
static int lock_file(struct file_store *fs, short type, const char *op)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
    double deadline = mps_now() + fs->base.timeout;
    struct timespec ts = {0, 50 * 1000};
#ifdef F_OFD_SETLK
    int cmd = F_OFD_SETLK;
#else
    int cmd = F_SETLK; /* per-process locks: one handle per process only */
#endif

    while (fcntl(fs->fd, cmd, &fl) != 0) {
        if (errno != EINTR && errno != EAGAIN && errno != EACCES) {
            return mps_error(PGC_ERR_IO, "boot_store_%s: cannot lock %s: %s", op, fs->path,
                             strerror(errno));
        }
        if (mps_now() >= deadline) {
            return mps_error(PGC_ERR_TIMEOUT, "boot_store_%s: %s stayed locked for %g s", op,
                             fs->path, fs->base.timeout);
        }
        nanosleep(&ts, NULL);
        ts.tv_nsec = MPS_MIN(ts.tv_nsec * 2, 5 * 1000 * 1000L);
    }
    return PGC_OK;
}

static void unlock_file(struct file_store *fs)
{
    struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET};
#ifdef F_OFD_SETLK
    fcntl(fs->fd, F_OFD_SETLK, &fl);
#else
    fcntl(fs->fd, F_SETLK, &fl);
#endif
}

static int apply_record(struct file_store *fs, uint32_t type, const char *key, const char *val,
                        size_t vlen)
{
    struct boot_buf b = {.p = (char *)val, .len = vlen};
    uint64_t delta = 0;

    switch (type) {
    case REC_SET:
        return boot_map_set(&fs->map, key, val, vlen);
    case REC_DEL:
        boot_map_del(&fs->map, key);
        return PGC_OK;
    case REC_REF:
        boot_buf_get_u64(&b, &delta);
        fs->refs += (int64_t)delta;
        return PGC_OK;
    }
    return mps_error(PGC_ERR_IO, "boot_store: %s holds a record of unknown type %u", fs->path,
                     type);
}

/* Applies the complete records in fs->io; returns the bytes consumed, or -1. */
static ssize_t apply_records(struct file_store *fs)
{
    struct boot_buf *b = &fs->io;

    b->pos = 0;
    while (b->len - b->pos >= REC_HDR) {
        size_t start = b->pos;
        uint32_t type, klen, vlen;
        boot_buf_get_u32(b, &type);
        boot_buf_get_u32(b, &klen);
        boot_buf_get_u32(b, &vlen);
        if (b->len - b->pos < (size_t)klen + vlen) {
            b->pos = start; /* a record still being written by a crashed writer */
            break;
        }
        char *key = boot_memdup0(b->p + b->pos, klen);
        int rc = key ? apply_record(fs, type, key, b->p + b->pos + klen, vlen) : PGC_ERR_NOMEM;
        free(key);
        if (rc != PGC_OK) {
            return -1;
        }
        b->pos += (size_t)klen + vlen;
    }
    return (ssize_t)b->pos;
}

/* Reads and applies what other handles appended since the last call; needs the lock. */
static int refresh(struct file_store *fs, const char *op)
{
    struct stat st;
    size_t want, got = 0;

    if (fstat(fs->fd, &st) != 0) {
        return mps_error(PGC_ERR_IO, "boot_store_%s: %s: %s", op, fs->path, strerror(errno));
    }
    if (st.st_size <= fs->off) {
        return PGC_OK;
    }
    want = (size_t)(st.st_size - fs->off);
    fs->io.len = 0;
    if (boot_buf_reserve(&fs->io, want) != PGC_OK) {
        return PGC_ERR_NOMEM;
    }
    while (got < want) {
        ssize_t n = pread(fs->fd, fs->io.p + got, want - got, fs->off + (off_t)got);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return mps_error(PGC_ERR_IO, "boot_store_%s: cannot read %s: %s", op, fs->path,
                             n < 0 ? strerror(errno) : "file shrank");
        }
        got += (size_t)n;
    }
    fs->io.len = got;
    ssize_t used = apply_records(fs);
    if (used < 0) {
        return PGC_ERR_IO;
    }
    fs->off += used;
    return PGC_OK;
}

/* Appends one record at the end of the log and applies it; needs the write lock and a
 * refresh just before, so that the end of the log is fs->off. */
static int append(struct file_store *fs, const char *op, uint32_t type, const char *key,
                  const void *val, size_t vlen)
{
    size_t klen = strlen(key), off = 0;
    struct boot_buf *b = &fs->io;

    b->len = 0;
    if (boot_buf_put_u32(b, type) || boot_buf_put_u32(b, (uint32_t)klen) ||
        boot_buf_put_u32(b, (uint32_t)vlen) || boot_buf_put(b, key, klen) ||
        boot_buf_put(b, val, vlen)) {
        return PGC_ERR_NOMEM;
    }
    while (off < b->len) {
        ssize_t n = pwrite(fs->fd, b->p + off, b->len - off, fs->off + (off_t)off);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return mps_error(PGC_ERR_IO, "boot_store_%s: cannot write %s: %s", op, fs->path,
                             strerror(errno));
        }
        off += (size_t)n;
    }
    return refresh(fs, op);
}

static int append_ref(struct file_store *fs, const char *op, int64_t delta)
{
    struct boot_buf b = {0};
    int rc = boot_buf_put_u64(&b, (uint64_t)delta);

    rc = rc ? rc : append(fs, op, REC_REF, "", b.p, b.len);
    boot_buf_free(&b);
    return rc;
}

/* Locks (F_RDLCK or F_WRLCK) and brings the map up to date; end() unlocks. */
static int begin(struct file_store *fs, short type, const char *op)
{
    int rc = lock_file(fs, type, op);

    if (rc == PGC_OK && (rc = refresh(fs, op)) != PGC_OK) {
        unlock_file(fs);
    }
    return rc;
}

static int end(struct file_store *fs, int rc)
{
    unlock_file(fs);
    return rc;
}

static void pause_backoff(long *ns, double deadline)
{
    double left = deadline - mps_now();
    struct timespec ts;

    if (left * 1e9 < (double)*ns) {
        *ns = left > 0 ? (long)(left * 1e9) : 0;
    }
    ts.tv_sec = 0;
    ts.tv_nsec = *ns;
    nanosleep(&ts, NULL);
    *ns = MPS_MIN(*ns * 2, 50 * 1000 * 1000L);
}

static int file_set(struct boot_store *s, const char *key, const void *val, size_t len)
{
    struct file_store *fs = to_file(s);
    int rc = begin(fs, F_WRLCK, "set");

    return rc ? rc : end(fs, append(fs, "set", REC_SET, key, val, len));
}

static bool keys_exist(struct file_store *fs, const char *const *keys, int n)
{
    for (int i = 0; i < n; i++) {
        if (!boot_map_find(&fs->map, keys[i])) {
            return false;
        }
    }
    return true;
}

/* Polls until every key exists; on success the caller holds the read lock. */
static int poll_keys(struct file_store *fs, const char *op, const char *const *keys, int n,
                     double timeout)
{
    double deadline = mps_now() + timeout;
    long ns = 1000 * 1000;
    int rc;

    for (;;) {
        if ((rc = begin(fs, F_RDLCK, op)) != PGC_OK) {
            return rc;
        }
        if (keys_exist(fs, keys, n)) {
            return PGC_OK;
        }
        unlock_file(fs);
        if (mps_now() >= deadline) {
            return mps_error(PGC_ERR_TIMEOUT, "boot_store_%s: key %s%s not set after %g s (%s)", op,
                             n ? keys[0] : "", n > 1 ? " (or another waited for)" : "", timeout,
                             fs->path);
        }
        pause_backoff(&ns, deadline);
    }
}

static int file_get(struct boot_store *s, const char *key, double timeout, void **val, size_t *len)
{
    struct file_store *fs = to_file(s);
    int rc = poll_keys(fs, "get", &key, 1, timeout);

    if (rc != PGC_OK) {
        return rc;
    }
    struct boot_map_entry *e = boot_map_find(&fs->map, key);
    *val = boot_memdup0(e->val, e->len);
    *len = e->len;
    return end(fs, *val ? PGC_OK : mps_error(PGC_ERR_NOMEM, "boot_store_get: out of memory"));
}

static int file_wait(struct boot_store *s, const char *const *keys, int n, double timeout)
{
    struct file_store *fs = to_file(s);
    int rc = poll_keys(fs, "wait", keys, n, timeout);

    return rc ? rc : end(fs, PGC_OK);
}

static int file_add(struct boot_store *s, const char *key, int64_t delta, int64_t *result)
{
    struct file_store *fs = to_file(s);
    int rc = begin(fs, F_WRLCK, "add");

    if (rc != PGC_OK) {
        return rc;
    }
    /* Computed in the private map, then logged: replaying the record sets the same text. */
    rc = boot_map_add(&fs->map, key, delta, result);
    if (rc == PGC_OK) {
        struct boot_map_entry *e = boot_map_find(&fs->map, key);
        rc = append(fs, "add", REC_SET, key, e->val, e->len);
    }
    return end(fs, rc);
}

static int file_compare_set(struct boot_store *s, const char *key, const void *expected,
                            size_t elen, const void *desired, size_t dlen, void **cur, size_t *clen)
{
    struct file_store *fs = to_file(s);
    int rc = begin(fs, F_WRLCK, "compare_set");

    if (rc != PGC_OK) {
        return rc;
    }
    struct boot_map_entry *e = boot_map_find(&fs->map, key);
    bool match =
        e ? e->len == elen && (elen == 0 || memcmp(e->val, expected, elen) == 0) : elen == 0;
    if (match) {
        rc = append(fs, "compare_set", REC_SET, key, desired, dlen);
        e = boot_map_find(&fs->map, key);
    }
    if (rc == PGC_OK) {
        *clen = e ? e->len : 0;
        *cur = boot_memdup0(e ? e->val : "", *clen);
        rc = *cur ? PGC_OK : mps_error(PGC_ERR_NOMEM, "boot_store_compare_set: out of memory");
    }
    return end(fs, rc);
}

static int file_check(struct boot_store *s, const char *const *keys, int n, bool *all_exist)
{
    struct file_store *fs = to_file(s);
    int rc = begin(fs, F_RDLCK, "check");

    if (rc == PGC_OK) {
        *all_exist = keys_exist(fs, keys, n);
        end(fs, rc);
    }
    return rc;
}

static int file_del(struct boot_store *s, const char *key, bool *deleted)
{
    struct file_store *fs = to_file(s);
    int rc = begin(fs, F_WRLCK, "delete");

    if (rc != PGC_OK) {
        return rc;
    }
    *deleted = boot_map_find(&fs->map, key) != NULL;
    if (*deleted) {
        rc = append(fs, "delete", REC_DEL, key, NULL, 0);
    }
    return end(fs, rc);
}

static int file_num_keys(struct boot_store *s, int64_t *n)
{
    struct file_store *fs = to_file(s);
    int rc = begin(fs, F_RDLCK, "num_keys");

    if (rc == PGC_OK) {
        *n = (int64_t)fs->map.count;
        end(fs, rc);
    }
    return rc;
}

static void free_file_store(struct file_store *fs)
{
    if (fs->fd >= 0) {
        close(fs->fd);
    }
    boot_map_destroy(&fs->map);
    boot_buf_free(&fs->io);
    free(fs->path);
    free(fs);
}

/* The last handle removes the file while it holds the lock, so that no handle that counted
 * itself in can still be using it. */
static void file_close(struct boot_store *s)
{
    struct file_store *fs = to_file(s);

    if (begin(fs, F_WRLCK, "close") == PGC_OK) {
        if (append_ref(fs, "close", -1) == PGC_OK && fs->refs <= 0) {
            unlink(fs->path);
        }
        end(fs, PGC_OK);
    }
    free_file_store(fs);
}

static const struct boot_store_ops file_ops = {
    .name = "file",
    .set = file_set,
    .get = file_get,
    .add = file_add,
    .compare_set = file_compare_set,
    .wait = file_wait,
    .check = file_check,
    .del = file_del,
    .num_keys = file_num_keys,
    .close = file_close,
};

int boot_store_file_open(const char *path, double timeout, struct boot_store **out)
{
    struct file_store *fs = NULL;
    int rc;

    if (!out || !path || !*path) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_store_file_open: empty path");
    }
    *out = NULL;
    if (!(fs = calloc(1, sizeof(*fs)))) {
        return mps_error(PGC_ERR_NOMEM, "boot_store_file_open: out of memory");
    }
    fs->fd = -1;
    if (!(fs->path = strdup(path))) {
        rc = mps_error(PGC_ERR_NOMEM, "boot_store_file_open: out of memory");
        goto fail;
    }
    fs->base.ops = &file_ops;
    fs->base.timeout = timeout > 0 ? timeout : mps_config_double(MPS_CFG_TIMEOUT);
    fs->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fs->fd < 0) {
        rc = mps_error(PGC_ERR_IO, "boot_store_file_open: cannot open %s: %s", path,
                       strerror(errno));
        goto fail;
    }
    if ((rc = boot_map_init(&fs->map)) || (rc = begin(fs, F_WRLCK, "file_open"))) {
        goto fail;
    }
    if ((rc = end(fs, append_ref(fs, "file_open", 1))) != PGC_OK) {
        goto fail;
    }
    *out = &fs->base;
    return PGC_OK;
fail:
    free_file_store(fs);
    return rc;
}
