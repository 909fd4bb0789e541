/*
 * test_heap.c - the shared heap (fabric/fab_heap.c) behind malloc (fabric/fab_malloc.c).
 *
 * This program links the replacement malloc, so its own malloc calls are the ones under
 * test: which requests the heap serves, reuse and merging of freed blocks, zeroed calloc
 * memory on reused pages, realloc, the aligned allocators, pages going back to the kernel,
 * a forked child's private copy, and a second mapping of the heap as a peer makes it.
 */
#include "config.h"

#include "fab_heap.h"

#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define MIB ((size_t)1 << 20)
#define PAGE 4096u

static struct fab_heap_info g_info;

static int start_heap(void **state)
{
    (void)state;
    setenv("MPISHIM_HEAP", "1", 1);
    setenv("MPISHIM_HEAP_SIZE", "1073741824", 1);
    fab_heap_start(&g_info);
    return g_info.size == 0; /* a setup failure fails every test */
}

/* Pages of [p, p + n) that are resident. */
static size_t resident_pages(void *p, size_t n)
{
    static unsigned char vec[8 * MIB / PAGE];
    size_t count = 0;

    assert_true(n <= 8 * MIB);
    assert_int_equal(mincore(p, n, vec), 0);
    for (size_t i = 0; i < n / PAGE; i++) {
        count += vec[i] & 1;
    }
    return count;
}

static void test_which_requests(void **state)
{
    (void)state;
    char *small = malloc(100), *edge = malloc(fab_heap_min - 1), *big = malloc(MIB + 1);

    assert_int_equal(g_info.size, 1u << 30);
    assert_int_equal(fab_heap_min, 65536);
    assert_false(fab_heap_owns(small));
    assert_false(fab_heap_owns(edge));
    assert_true(fab_heap_owns(big));
    assert_int_equal((uintptr_t)big % PAGE, 0);
    /* Whole pages: MiB + 1 byte takes MiB + one page. */
    assert_int_equal(malloc_usable_size(big), MIB + PAGE);
    assert_true(malloc_usable_size(small) >= 100);
    memset(big, 7, MIB + 1);
    free(small);
    free(edge);
    free(big);
}

/* Blocks of 16 MiB: larger than any span earlier tests leave free, so they come off the
 * top, one after the other. */
static void test_reuse_and_merge(void **state)
{
    (void)state;
    char *a = malloc(16 * MIB), *b = malloc(16 * MIB), *c = malloc(16 * MIB);

    assert_ptr_equal(b, a + 16 * MIB);
    assert_ptr_equal(c, b + 16 * MIB);
    free(a);
    free(b);
    /* a and b merged into one span of 32 MiB, which first fit hands out again from a. */
    char *ab = malloc(32 * MIB);
    assert_ptr_equal(ab, a);
    free(c);
    free(ab);
}

/* Runs second, on the dirty pages test_which_requests freed (well under the 64 MiB kept
 * resident, so they are not punched out and zero by that). */
static void test_calloc_zeroes_reused_pages(void **state)
{
    (void)state;
    unsigned char *p = malloc(MIB), *q;

    memset(p, 0xff, MIB);
    /* Keeps the compiler from dropping a store to memory freed next. */
    __asm__ volatile("" : : "r"(p) : "memory");
    free(p);
    q = calloc(MIB / 8, 8);
    assert_ptr_equal(q, p); /* the same, dirty, pages */
    for (size_t i = 0; i < MIB; i++) {
        if (q[i] != 0) {
            fail_msg("calloc byte %zu is %u", i, q[i]);
        }
    }
    free(q);
    assert_null(calloc(SIZE_MAX / 2, 4)); /* overflow */
}

static void test_realloc_moves(void **state)
{
    (void)state;
    unsigned char *p = malloc(MIB), *q;

    for (size_t i = 0; i < MIB; i++) {
        p[i] = (unsigned char)(i * 31u);
    }
    assert_ptr_equal(realloc(p, MIB / 2 + 1), p); /* shrinking keeps the block */
    q = realloc(p, 3 * MIB);
    assert_true(fab_heap_owns(q));
    for (size_t i = 0; i < MIB / 2 + 1; i++) {
        if (q[i] != (unsigned char)(i * 31u)) {
            fail_msg("realloc lost byte %zu", i);
        }
    }
    assert_null(realloc(q, 0));
    q = reallocarray(NULL, MIB, 2);
    assert_true(fab_heap_owns(q));
    free(q);
}

static void test_aligned(void **state)
{
    (void)state;
    void *p = NULL, *q = NULL;

    assert_int_equal(posix_memalign(&p, PAGE, MIB), 0);
    assert_true(fab_heap_owns(p));
    /* Beyond a page the alignment comes from glibc. */
    assert_int_equal(posix_memalign(&q, 2 * MIB, MIB), 0);
    assert_false(fab_heap_owns(q));
    assert_int_equal((uintptr_t)q % (2 * MIB), 0);
    assert_int_equal(posix_memalign(&q, 3, MIB), EINVAL);
    free(p);
    p = aligned_alloc(64, MIB);
    assert_true(fab_heap_owns(p));
    free(p);
}

/* Freed blocks stay resident up to 64 MiB of them; past that they go back to the kernel.
 * Runs third: only the first two tests' 1 MiB is free (and resident) before it. */
static void test_trim(void **state)
{
    (void)state;
    enum { N = 20 };
    char *blk[N];

    for (int i = 0; i < N; i++) {
        blk[i] = malloc(8 * MIB);
        memset(blk[i], 1, 8 * MIB);
    }
    free(blk[0]);
    assert_int_equal(resident_pages(blk[0], 8 * MIB), 8 * MIB / PAGE);
    for (int i = 2; i < N; i += 2) {
        free(blk[i]); /* no two freed blocks touch: 10 spans, 80 MiB */
    }
    /* The ninth freed block crossed 64 MiB and went back; so did the tenth. */
    assert_int_equal(resident_pages(blk[N - 2], 8 * MIB), 0);
    assert_int_equal(resident_pages(blk[2], 8 * MIB), 8 * MIB / PAGE);
    for (int i = 1; i < N; i += 2) {
        free(blk[i]);
    }
}

/* A forked child sees its parent's blocks (around a freed one, which the copy skips) and
 * writes into one; the parent's copy must not change. */
static void test_fork_private(void **state)
{
    (void)state;
    char *p = malloc(MIB), *gap = malloc(MIB), *r = malloc(MIB);
    int status = 0;
    pid_t pid;

    memset(p, 'P', MIB);
    memset(r, 'R', MIB);
    free(gap);
    pid = fork();
    if (pid == 0) {
        char *q = malloc(2 * MIB); /* the child's heap serves nothing new */
        int ok = p[0] == 'P' && p[MIB - 1] == 'P' && r[0] == 'R' && r[MIB - 1] == 'R' && q &&
                 !fab_heap_owns(q);
        memset(p, 'C', MIB);
        free(p);
        free(q);
        _exit(ok ? 0 : 1);
    }
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(p[0], 'P');
    assert_int_equal(p[MIB - 1], 'P');
    free(p);
    free(r);
}

/* A pointer freed twice stops the process with a message, as glibc does. The block comes
 * from the parent: a forked child's heap serves no new blocks, but frees its old ones. */
static void test_double_free_aborts(void **state)
{
    (void)state;
    char *volatile p = malloc(MIB);
    int status = 0;
    pid_t pid = fork();

    if (pid == 0) {
        free(p);
        free(p);
        _exit(0);
    }
    free(p);
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

/* What a peer maps (the same file, through /proc) shows the owner's bytes and takes
 * writes; a file other than the announced one is refused. */
static void test_peer_mapping(void **state)
{
    (void)state;
    char *p = malloc(MIB), *peer;
    struct fab_heap_info wrong = g_info;
    size_t off = (size_t)(p - (char *)(uintptr_t)g_info.base);

    memset(p, 'x', MIB);
    peer = fab_heap_map((uint32_t)getpid(), &g_info);
    assert_non_null(peer);
    assert_ptr_not_equal(peer, (char *)(uintptr_t)g_info.base);
    assert_int_equal(peer[off + 5], 'x');
    peer[off + 6] = 'y';
    assert_int_equal(p[6], 'y');
    fab_heap_unmap(peer, &g_info);
    wrong.ino++;
    assert_null(fab_heap_map((uint32_t)getpid(), &wrong));
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which_requests), cmocka_unit_test(test_calloc_zeroes_reused_pages),
        cmocka_unit_test(test_trim), cmocka_unit_test(test_reuse_and_merge),
        cmocka_unit_test(test_realloc_moves),
        cmocka_unit_test(test_aligned),
        cmocka_unit_test(test_fork_private), cmocka_unit_test(test_double_free_aborts),
        cmocka_unit_test(test_peer_mapping),
    };
    if (!fab_malloc_is_process_malloc()) {
        /* fab_malloc.c forwards to that allocator and the heap stays off (test_alloc_preload
         * covers that case). */
        printf("SKIP: another allocator comes first in this process (LD_PRELOAD or a "
               "sanitizer): the shared heap is off\n");
        return 77;
    }
    return cmocka_run_group_tests(tests, start_heap, NULL);
}
