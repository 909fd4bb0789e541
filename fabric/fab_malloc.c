/*
 * fab_malloc.c - malloc and its family, replaced as glibc's manual allows ("Replacing
 * malloc"): requests of fab_heap_min bytes or more come from the shared heap
 * (fab_heap.h), everything else and everything before the heap starts from glibc's
 * allocator (its __libc_ entry points). free and realloc tell the two apart by address.
 * Nothing here calls malloc and then memset, which the compiler may fold into a call of
 * calloc, itself.
 */
#include "config.h"

#include "fab_heap.h"

#include <dlfcn.h>
#include <errno.h>
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

EXPORT void *malloc(size_t n)
{
    void *p = n >= fab_heap_min ? fab_heap_alloc(n, false) : NULL;

    return p ? p : __libc_malloc(n);
}

EXPORT void free(void *p)
{
    if (fab_heap_owns(p)) {
        fab_heap_free(p);
    } else {
        __libc_free(p);
    }
}

EXPORT void *calloc(size_t n, size_t m)
{
    size_t bytes;
    void *p;

    if (__builtin_mul_overflow(n, m, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    p = bytes >= fab_heap_min ? fab_heap_alloc(bytes, true) : NULL;
    return p ? p : __libc_calloc(n, m);
}

/* A heap block grows by moving (its neighbours are other blocks); glibc's blocks stay
 * glibc's, where growing can be a mremap. */
EXPORT void *realloc(void *p, size_t n)
{
    size_t have;
    void *q;

    if (!p) {
        return malloc(n);
    }
    if (!fab_heap_owns(p)) {
        return __libc_realloc(p, n);
    }
    if (n == 0) {
        fab_heap_free(p);
        return NULL;
    }
    have = fab_heap_usable(p);
    if (n <= have) {
        return p;
    }
    q = malloc(n);
    if (q) {
        memcpy(q, p, have);
        fab_heap_free(p);
    }
    return q;
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

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
    void *p;

    if (align < sizeof(void *) || (align & (align - 1)) != 0) {
        return EINVAL;
    }
    p = aligned(align, n);
    if (!p) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
    return aligned(align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
    return aligned(align, n);
}

EXPORT void *valloc(size_t n)
{
    return aligned(PAGE, n);
}

EXPORT void *pvalloc(size_t n)
{
    return aligned(PAGE, n > SIZE_MAX - PAGE ? SIZE_MAX : (n + PAGE - 1) & ~(size_t)(PAGE - 1));
}

EXPORT size_t malloc_usable_size(void *p)
{
    static size_t (*glibc)(void *);

    if (fab_heap_owns(p)) {
        return fab_heap_usable(p);
    }
    if (!glibc) {
        glibc = (size_t(*)(void *))dlsym(RTLD_NEXT, "malloc_usable_size");
    }
    return p && glibc ? glibc(p) : 0;
}
