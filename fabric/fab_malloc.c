/*
 * fab_malloc.c - malloc and its family, replaced as glibc's manual allows ("Replacing
 * malloc"): requests of fab_heap_min bytes or more come from the shared heap
 * (fab_heap.h), everything else and everything before the heap starts from glibc's
 * allocator (its __libc_ entry points). free and realloc tell the two apart by address.
 *
 * Another allocator may come first in the process: jemalloc or tcmalloc preloaded (common
 * under PyTorch), or a sanitizer's. The process's calls then reach it, but this library's
 * own calls still reach the functions here (-Bsymbolic-functions and LTO bind them
 * locally), and a block that crosses the library's boundary (a Store value the caller
 * frees, a list libfabric allocated) must go back to the allocator that made it: glibc's
 * free on a jemalloc block crashes. So the first call looks the process's malloc up; when
 * it is not this one, every function here forwards to that allocator's, and the shared
 * heap stays off. The lookup (dlsym) may allocate: what it asks for meanwhile comes from a
 * small static arena whose blocks are never freed.
 *
 * Nothing here calls malloc and then memset, which the compiler may fold into a call of
 * calloc, itself.
 */
#include "config.h"

#include "fab_heap.h"
#include "mps_util.h"

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096u

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t m);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);
extern void __libc_free(void *p);

#define EXPORT __attribute__((visibility("default")))

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__) /* gcc */
#define FAB_SANITIZER_MALLOC 1
#elif defined(__has_feature) /* clang */
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define FAB_SANITIZER_MALLOC 1
#endif
#endif

#if defined(FAB_SANITIZER_MALLOC)
/* AddressSanitizer's and ThreadSanitizer's allocators must serve the whole process, and a
 * program that defines malloc beside them crashes before main: built with either, the
 * library leaves malloc alone (and the shared heap off). */
bool fab_malloc_is_process_malloc(void)
{
    return false;
}
#else

/* ---- whose allocator serves this library's calls ---- */

enum { MODE_UNKNOWN, MODE_RESOLVING, MODE_OURS, MODE_FORWARD };
static int mode;

/* The process's allocator in MODE_FORWARD. */
static struct {
    void *(*malloc)(size_t);
    void (*free)(void *);
    void *(*calloc)(size_t, size_t);
    void *(*realloc)(void *, size_t);
    int (*posix_memalign)(void **, size_t, size_t);
    void *(*aligned_alloc)(size_t, size_t);
    void *(*memalign)(size_t, size_t);
    void *(*valloc)(size_t);
    void *(*pvalloc)(size_t);
    size_t (*malloc_usable_size)(void *);
} next;

/* The definition of name that the process's calls reach; where that is this file's (the
 * other allocator lacks one), the next one, as the process would have had without us. */
static void *lookup(const char *name, void *ours)
{
    void *f = dlsym(RTLD_DEFAULT, name);

    return f && f != ours ? f : dlsym(RTLD_NEXT, name);
}

static void forward_to_process_allocator(void *process_malloc)
{
    next.malloc = (void *(*)(size_t))process_malloc;
    next.free = (void (*)(void *))lookup("free", (void *)&free);
    next.calloc = (void *(*)(size_t, size_t))lookup("calloc", (void *)&calloc);
    next.realloc = (void *(*)(void *, size_t))lookup("realloc", (void *)&realloc);
    next.posix_memalign =
        (int (*)(void **, size_t, size_t))lookup("posix_memalign", (void *)&posix_memalign);
    next.aligned_alloc =
        (void *(*)(size_t, size_t))lookup("aligned_alloc", (void *)&aligned_alloc);
    next.memalign = (void *(*)(size_t, size_t))lookup("memalign", (void *)&memalign);
    next.valloc = (void *(*)(size_t))lookup("valloc", (void *)&valloc);
    next.pvalloc = (void *(*)(size_t))lookup("pvalloc", (void *)&pvalloc);
    next.malloc_usable_size =
        (size_t(*)(void *))lookup("malloc_usable_size", (void *)&malloc_usable_size);
}

static void resolve(void)
{
    int expect = MODE_UNKNOWN;
    void *m;

    /* One resolver; a call it makes itself (or another thread's, meanwhile) sees
     * MODE_RESOLVING and is served from the arena. */
    if (!__atomic_compare_exchange_n(&mode, &expect, MODE_RESOLVING, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        return;
    }
    m = dlsym(RTLD_DEFAULT, "malloc");
    if (!m || m == (void *)&malloc) {
        __atomic_store_n(&mode, MODE_OURS, __ATOMIC_RELEASE);
        return;
    }
    forward_to_process_allocator(m);
    __atomic_store_n(&mode, MODE_FORWARD, __ATOMIC_RELEASE);
}

static inline int current_mode(void)
{
    int m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);

    if (mps_unlikely(m == MODE_UNKNOWN)) {
        resolve();
        m = __atomic_load_n(&mode, __ATOMIC_ACQUIRE);
    }
    return m;
}

bool fab_malloc_is_process_malloc(void)
{
    return current_mode() == MODE_OURS;
}

/* ---- the arena that serves the calls made while resolving ---- */

#define BOOT_BYTES 16384u
#define BOOT_HDR 16u /* the block's size, stored just before it */
static _Alignas(PAGE) char boot[BOOT_BYTES];
static size_t boot_used;

/* n bytes aligned to align (at most a page), zeroed (static memory never reused); NULL
 * once the arena is full. */
static void *boot_alloc(size_t n, size_t align)
{
    size_t used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start;

    align = align < BOOT_HDR ? BOOT_HDR : align;
    do {
        start = (used + BOOT_HDR + align - 1) & ~(align - 1);
        if (align > PAGE || n > BOOT_BYTES || start > BOOT_BYTES - n) {
            errno = ENOMEM;
            return NULL;
        }
    } while (!__atomic_compare_exchange_n(&boot_used, &used, start + n, true, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    memcpy(boot + start - BOOT_HDR, &n, sizeof(n));
    return boot + start;
}

static inline bool in_boot(const void *p)
{
    return (uintptr_t)p - (uintptr_t)boot < BOOT_BYTES;
}

static size_t boot_size(const void *p)
{
    size_t n;

    memcpy(&n, (const char *)p - BOOT_HDR, sizeof(n));
    return n;
}

/* ---- the replacements ---- */

EXPORT void *malloc(size_t n)
{
    int m = current_mode();
    void *p;

    if (mps_unlikely(m != MODE_OURS)) {
        return m == MODE_FORWARD ? next.malloc(n) : boot_alloc(n, BOOT_HDR);
    }
    p = n >= fab_heap_min ? fab_heap_alloc(n, false) : NULL;
    return p ? p : __libc_malloc(n);
}

EXPORT void free(void *p)
{
    if (!p) {
        return; /* free(NULL), which MPI request and message paths do at the message rate */
    }
    if (mps_unlikely(in_boot(p))) {
        return; /* the arena's blocks are never reused */
    }
    if (fab_heap_owns(p)) {
        fab_heap_free(p);
    } else if (current_mode() == MODE_FORWARD) {
        next.free(p);
    } else {
        __libc_free(p);
    }
}

EXPORT void *calloc(size_t n, size_t m)
{
    int md = current_mode();
    size_t bytes;
    void *p;

    if (__builtin_mul_overflow(n, m, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    if (mps_unlikely(md != MODE_OURS)) {
        return md == MODE_FORWARD ? next.calloc(n, m) : boot_alloc(bytes, BOOT_HDR);
    }
    p = bytes >= fab_heap_min ? fab_heap_alloc(bytes, true) : NULL;
    return p ? p : __libc_calloc(n, m);
}

/* A block moves to one of n bytes that malloc serves, keeping what fits of its have. */
static void *move_block(void *p, size_t have, size_t n)
{
    void *q = malloc(n);

    if (q) {
        memcpy(q, p, MPS_MIN(have, n));
        free(p);
    }
    return q;
}

/* A heap block grows by moving (its neighbours are other blocks); glibc's blocks stay
 * glibc's, where growing can be a mremap. */
EXPORT void *realloc(void *p, size_t n)
{
    if (!p) {
        return malloc(n);
    }
    if (in_boot(p)) {
        return move_block(p, boot_size(p), n);
    }
    if (!fab_heap_owns(p)) {
        return current_mode() == MODE_FORWARD ? next.realloc(p, n) : __libc_realloc(p, n);
    }
    if (n == 0) {
        fab_heap_free(p);
        return NULL;
    }
    size_t have = fab_heap_usable(p);

    return n <= have ? p : move_block(p, have, n);
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
    size_t bytes;

    if (__builtin_mul_overflow(n, m, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    return realloc(p, bytes);
}

/* Heap blocks are page-aligned: they serve alignments up to a page. */
static void *aligned(size_t align, size_t n)
{
    void *p = n >= fab_heap_min && align <= PAGE ? fab_heap_alloc(n, false) : NULL;

    return p ? p : __libc_memalign(align, n);
}

/* The aligned allocators outside MODE_FORWARD: ours, or the arena while resolving. */
static void *aligned_here(int md, size_t align, size_t n)
{
    return md == MODE_OURS ? aligned(align, n) : boot_alloc(n, align);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    int md = current_mode();
    void *p;

    if (md == MODE_FORWARD) {
        return next.posix_memalign(out, align, n);
    }
    if (align < sizeof(void *) || (align & (align - 1)) != 0) {
        return EINVAL;
    }
    p = aligned_here(md, align, n);
    if (!p) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    int md = current_mode();

    return md == MODE_FORWARD ? next.aligned_alloc(align, n) : aligned_here(md, align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
    int md = current_mode();

    return md == MODE_FORWARD ? next.memalign(align, n) : aligned_here(md, align, n);
}

EXPORT void *valloc(size_t n)
{
    int md = current_mode();

    return md == MODE_FORWARD ? next.valloc(n) : aligned_here(md, PAGE, n);
}

EXPORT void *pvalloc(size_t n)
{
    int md = current_mode();
    size_t up = n > SIZE_MAX - PAGE ? SIZE_MAX : (n + PAGE - 1) & ~(size_t)(PAGE - 1);

    return md == MODE_FORWARD ? next.pvalloc(n) : aligned_here(md, PAGE, up);
}

/* glibc's own malloc_usable_size, for glibc's blocks: RTLD_NEXT may find a preloaded
 * allocator's (when this file is part of the program, which comes before it). */
static size_t glibc_usable_size(void *p)
{
    static size_t (*cached)(void *); /* threads may race to fill it: with the same value */
    size_t (*glibc)(void *) = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);

    if (!glibc) {
        void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
        glibc = libc ? (size_t(*)(void *))dlsym(libc, "malloc_usable_size") : NULL;
        __atomic_store_n(&cached, glibc, __ATOMIC_RELEASE);
    }
    return p && glibc ? glibc(p) : 0;
}

EXPORT size_t malloc_usable_size(void *p)
{
    if (in_boot(p)) {
        return boot_size(p);
    }
    if (fab_heap_owns(p)) {
        return fab_heap_usable(p);
    }
    return current_mode() == MODE_FORWARD ? next.malloc_usable_size(p) : glibc_usable_size(p);
}
#endif /* !FAB_SANITIZER_MALLOC */
