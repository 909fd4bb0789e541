/*
 * fab_heap.c - the shared heap; see fab_heap.h for why.
 *
 * The heap is one memfd of `size` bytes (sparse: min(RAM, 64 GiB) by default), mapped
 * MAP_SHARED | MAP_NORESERVE once. Its bookkeeping lives outside it, in memory of its
 * own (never malloc, which may be us): a page map from a block's first page to its page
 * count, and the free spans as an address-ordered list of nodes from a pool. Pages above
 * `top` have never been handed out, so they read as zero; a free span remembers whether
 * its pages may have been written (dirty), so that calloc skips the memset on clean ones.
 * One mutex guards it all: blocks are 64 KiB or more, and a page fault per 4 KiB of a
 * new block costs far more than the lock.
 */
#include "config.h"

#include "fab_heap.h"
#include "mps_config.h"
#include "mps_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PAGE 4096u
#define SIZE_CAP ((size_t)64 << 30)
/* Freed bytes kept resident before freed blocks go back to the kernel. */
#define TRIM_BYTES ((size_t)64 << 20)
/* Span nodes: 32 bytes each, 128 Ki of them (never more free spans than blocks + 1). */
#define POOL_BYTES ((size_t)4 << 20)

struct span {
    struct span *next;
    size_t off, len;
    bool dirty;
};

size_t fab_heap_min = SIZE_MAX;

static struct {
    pthread_mutex_t lock;
    char *base;        /* NULL until started; published last */
    size_t size;       /* bytes reserved */
    size_t top;        /* bytes ever handed out: above, pages are untouched */
    size_t dirty_free; /* bytes of dirty free spans */
    int fd;            /* the memfd; -1 in a forked child, whose copy is private */
    uint64_t ino;
    uint32_t *pages;   /* page index of a block's first page -> the block's pages */
    struct span *free; /* free spans below top, by offset */
    struct span *spare;
    struct span *pool;
    size_t pool_used;
    bool started;
} H = {.lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1};

/* ---- bookkeeping (H.lock held) ---- */

static struct span *node_get(void)
{
    struct span *n = H.spare;

    if (n) {
        H.spare = n->next;
    } else if (H.pool_used < POOL_BYTES / sizeof(struct span)) {
        n = &H.pool[H.pool_used++];
    }
    return n;
}

static void node_put(struct span *n)
{
    n->next = H.spare;
    H.spare = n;
}

/* Gives pages back to the kernel; they read as zero afterwards. */
static void release(size_t off, size_t len)
{
    if (H.fd >= 0) {
        fallocate(H.fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
    } else {
        madvise(H.base + off, len, MADV_DONTNEED);
    }
}

/* Carves len bytes out of the first free span that holds them, or off the top. Returns
 * the offset (SIZE_MAX when full) and whether the pages may hold old data. */
static size_t take(size_t len, bool *dirty)
{
    struct span **pp = &H.free;
    size_t off;

    for (; *pp; pp = &(*pp)->next) {
        struct span *s = *pp;
        if (s->len < len) {
            continue;
        }
        off = s->off;
        *dirty = s->dirty;
        H.dirty_free -= s->dirty ? len : 0;
        s->off += len;
        s->len -= len;
        if (s->len == 0) {
            *pp = s->next;
            node_put(s);
        }
        return off;
    }
    if (H.size - H.top < len) {
        return SIZE_MAX;
    }
    off = H.top;
    H.top += len;
    *dirty = false;
    return off;
}

/* Merges s with the span after it when they touch. */
static void merge_next(struct span *s)
{
    struct span *n = s->next;

    if (!n || s->off + s->len != n->off) {
        return;
    }
    if (s->dirty != n->dirty) { /* the merged span is dirty: count the clean part */
        H.dirty_free += s->dirty ? n->len : s->len;
        s->dirty = true;
    }
    s->len += n->len;
    s->next = n->next;
    node_put(n);
}

/* Returns [off, off + len) to the free list, merged with its neighbours; past TRIM_BYTES
 * of dirty free bytes the merged span goes back to the kernel. Without a node for it the
 * block is released and its address range lost, which a pool sized for 128 Ki spans
 * makes a theoretical case. */
static void give(size_t off, size_t len)
{
    struct span **pp = &H.free, *prev = NULL, *s;

    while (*pp && (*pp)->off < off) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    s = node_get();
    if (!s) {
        release(off, len);
        return;
    }
    *s = (struct span){*pp, off, len, true};
    *pp = s;
    H.dirty_free += len;
    merge_next(s);
    if (prev) {
        merge_next(prev);
        s = prev->off + prev->len > off ? prev : s;
    }
    if (H.dirty_free > TRIM_BYTES) {
        release(s->off, s->len);
        H.dirty_free -= s->len;
        s->dirty = false;
    }
}

/* ---- the allocator ---- */

bool fab_heap_owns(const void *p)
{
    char *base = __atomic_load_n(&H.base, __ATOMIC_ACQUIRE);

    return base && (uintptr_t)p - (uintptr_t)base < H.size;
}

void *fab_heap_alloc(size_t n, bool zero)
{
    size_t len, off;
    bool dirty = false;

    if (n < fab_heap_min || n > SIZE_MAX - PAGE) {
        return NULL;
    }
    len = (n + PAGE - 1) & ~(size_t)(PAGE - 1);
    pthread_mutex_lock(&H.lock);
    off = len / PAGE <= UINT32_MAX ? take(len, &dirty) : SIZE_MAX;
    if (off != SIZE_MAX) {
        H.pages[off / PAGE] = (uint32_t)(len / PAGE);
    }
    pthread_mutex_unlock(&H.lock);
    if (off == SIZE_MAX) {
        return NULL;
    }
    if (zero && dirty) {
        memset(H.base + off, 0, len);
    }
    return H.base + off;
}

size_t fab_heap_usable(const void *p)
{
    return (size_t)H.pages[((const char *)p - H.base) / PAGE] * PAGE;
}

/* Stops the process, as glibc does for a pointer it never handed out: going on would hand
 * the same pages out twice. */
static void bad_free(const void *p)
{
    fprintf(stderr, "mpishim: free(%p): not a block of the shared heap (freed twice, or not "
                    "the start of a block)\n", p);
    abort();
}

void fab_heap_free(void *p)
{
    size_t off = (size_t)((char *)p - H.base);
    size_t pages;

    pthread_mutex_lock(&H.lock);
    pages = off % PAGE == 0 ? H.pages[off / PAGE] : 0;
    if (pages) {
        give(off, pages * PAGE);
        H.pages[off / PAGE] = 0;
    }
    pthread_mutex_unlock(&H.lock);
    if (!pages) {
        bad_free(p);
    }
}

/* ---- fork ---- */

static void fork_prepare(void)
{
    pthread_mutex_lock(&H.lock);
}

static void fork_parent(void)
{
    pthread_mutex_unlock(&H.lock);
}

/* Copies the blocks in use below top (what lies between the free spans) to copy: the free
 * spans are not read, which would fault in pages of the file for nothing. */
static void copy_used(char *copy)
{
    size_t at = 0;

    for (const struct span *s = H.free; s; s = s->next) {
        memcpy(copy + at, H.base + at, s->off - at);
        at = s->off + s->len;
    }
    memcpy(copy + at, H.base + at, H.top - at);
}

/* The child must not share its parent's blocks: every block in use is copied into private
 * memory moved over the same addresses, the rest of the range is dropped, and the heap
 * serves no new requests (the child frees the old blocks into a private heap). A child
 * that cannot get the memory stops: sharing would corrupt the parent. */
static void fork_child(void)
{
    size_t n = H.top;
    void *copy = n ? mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                   : NULL;

    fab_heap_min = SIZE_MAX;
    if (copy == MAP_FAILED ||
        (n && (copy_used(copy),
               mremap(copy, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, H.base) == MAP_FAILED)) ||
        (H.size > n && mmap(H.base + n, H.size - n, PROT_NONE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1,
                            0) == MAP_FAILED)) {
        static const char msg[] = "mpishim: fork: no memory for the child's copy of the "
                                  "shared heap (MPISHIM_HEAP=0 avoids it)\n";
        ssize_t w = write(2, msg, sizeof(msg) - 1);
        (void)w;
        _exit(127);
    }
    close(H.fd);
    H.fd = -1;
    H.size = n; /* what lies above is no longer mapped */
    pthread_mutex_unlock(&H.lock);
}

/* ---- starting ---- */

static size_t reserve_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    size_t ram = pages > 0 && psize > 0 ? (size_t)pages * (size_t)psize : SIZE_CAP;
    size_t want = (size_t)mps_config_int(MPS_CFG_HEAP_SIZE);

    want = want ? want : ram < SIZE_CAP ? ram : SIZE_CAP;
    return want & ~(size_t)(PAGE - 1);
}

/* Creates the memfd, its mapping and the bookkeeping; returns the base, or NULL with
 * errno set. */
static char *create(size_t size, int *fdp, uint64_t *ino)
{
    int fd = memfd_create("mpishim-heap", MFD_CLOEXEC), err;
    struct stat st;
    char *base = MAP_FAILED;
    size_t map_bytes = size / PAGE * sizeof(uint32_t);

    if (fd >= 0 && ftruncate(fd, (off_t)size) == 0 && fstat(fd, &st) == 0) {
        base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
        H.pages = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        H.pool = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        *ino = (uint64_t)st.st_ino;
    }
    if (fd >= 0 && base != MAP_FAILED && H.pages != MAP_FAILED && H.pool != MAP_FAILED) {
        *fdp = fd;
        return base;
    }
    err = errno;
    if (base != MAP_FAILED) {
        munmap(base, size);
    }
    if (fd >= 0) {
        close(fd);
    }
    errno = err;
    return NULL;
}

/* Logs what fab_heap_start did, outside the lock (logging may allocate). */
static void log_start(bool tried, bool foreign, size_t size, int err)
{
    if (foreign) {
        MPS_INFO("shared heap off: another allocator serves malloc in this process "
                 "(preloaded, or a sanitizer's)");
    }
    if (!tried) {
        return;
    }
    if (H.fd >= 0) {
        MPS_INFO("shared heap: blocks of %zu B and more from a %zu B memfd", fab_heap_min,
                 H.size);
    } else {
        MPS_INFO("shared heap off: no %zu B memfd mapping: %s", size, strerror(err));
    }
}

void fab_heap_start(struct fab_heap_info *info)
{
    bool tried = false, wanted, foreign;
    size_t size = 0;
    int err = 0;

    memset(info, 0, sizeof(*info));
    pthread_mutex_lock(&H.lock);
    wanted = !H.started && mps_config_int(MPS_CFG_HEAP) != 0;
    foreign = wanted && !fab_malloc_is_process_malloc();
    if (wanted && !foreign) {
        char *base;
        size = reserve_bytes();
        base = size ? create(size, &H.fd, &H.ino) : NULL;
        tried = true;
        err = errno;
        if (base) {
            long min = mps_config_int(MPS_CFG_HEAP_MIN);
            H.size = size;
            pthread_atfork(fork_prepare, fork_parent, fork_child);
            __atomic_store_n(&H.base, base, __ATOMIC_RELEASE);
            fab_heap_min = min > 0 ? (size_t)min : PAGE;
        }
    }
    H.started = true;
    if (H.base && H.fd >= 0) {
        *info = (struct fab_heap_info){(uint64_t)(uintptr_t)H.base, H.size, H.ino, H.fd, 0};
    }
    pthread_mutex_unlock(&H.lock);
    log_start(tried, foreign, size, err);
}

/* ---- a peer's heap ---- */

char *fab_heap_map(uint32_t pid, const struct fab_heap_info *info)
{
    char path[64];
    struct stat st;
    char *base = MAP_FAILED;
    const char *why = NULL;
    int fd;

    snprintf(path, sizeof(path), "/proc/%" PRIu32 "/fd/%" PRId32, pid, info->fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        why = strerror(errno);
    } else if ((uint64_t)st.st_ino != info->ino || (uint64_t)st.st_size != info->size) {
        why = "not the file it announced";
    } else {
        base = mmap(NULL, info->size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd,
                    0);
    }
    if (base == MAP_FAILED) {
        MPS_INFO("cannot map process %" PRIu32 "'s shared heap (%s): its messages go through "
                 "CMA", pid, why ? why : strerror(errno));
        base = NULL;
    }
    if (fd >= 0) {
        close(fd);
    }
    return base;
}

void fab_heap_unmap(char *base, const struct fab_heap_info *info)
{
    if (base) {
        munmap(base, info->size);
    }
}
