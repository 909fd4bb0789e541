/*
 * fab_heap.h - the shared heap (private to fabric/): large allocations that the other
 * ranks of the node can map, so that a large message is one memcpy instead of a kernel
 * copy.
 *
 * Why: the single copy between processes that Open MPI and MPICH use here (CMA,
 * process_vm_readv) moves ~8 GB/s per core, a quarter of memcpy; XPMEM, which maps a
 * peer's memory instead, is a kernel module these machines do not have. So the memory
 * is made mappable from the start: once the intra-node path is up, malloc, calloc,
 * realloc and the aligned allocators (fab_malloc.c) serve requests of MPISHIM_HEAP_MIN
 * bytes (64 KiB) or more from one memfd that this process maps, and a peer maps the same
 * file (through /proc/<pid>/fd) the first time a message names an address in it. A
 * peer then copies such a buffer with memcpy; everything else still goes through CMA.
 *
 * Blocks are whole pages, first fit in address order, and freed neighbours merge. Freed
 * pages stay resident (a buffer freed and allocated again each iteration must not fault
 * every page in again, as glibc's own threshold logic also ensures) until more than
 * TRIM_BYTES of them are, past which freed blocks are punched out of the file. A forked
 * child gets a private copy of every block (fab_heap.c), so parent and child never share
 * what was malloc'd. MPISHIM_HEAP=0 turns the heap off.
 */
#ifndef FAB_HEAP_H
#define FAB_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a peer needs to map this process's heap: the memfd's descriptor number in this
 * process, its inode (checked after opening, against a recycled descriptor number), the
 * address it is mapped at here and its size. size 0: no heap. */
struct fab_heap_info {
    uint64_t base, size, ino;
    int32_t fd;
    uint32_t pad;
};

/* Starts serving large allocations from the shared heap, unless MPISHIM_HEAP=0, the heap
 * cannot be created, or this library's malloc is not the one the process calls (it was
 * loaded with dlopen, or another allocator comes first). Idempotent. Fills *info (size 0
 * when there is no heap). */
void fab_heap_start(struct fab_heap_info *info);

/* Maps a peer's heap (pid's, described by info) into this process: its base here, or
 * NULL (with a log line) when it cannot be mapped. */
char *fab_heap_map(uint32_t pid, const struct fab_heap_info *info);
void fab_heap_unmap(char *base, const struct fab_heap_info *info);

/* Whether p points into this process's heap. */
bool fab_heap_owns(const void *p);

/* The allocator behind fab_malloc.c. fab_heap_alloc returns NULL when it does not serve
 * the request (too small, no heap, full): the caller then asks glibc. */
void *fab_heap_alloc(size_t n, bool zero);
void fab_heap_free(void *p);
size_t fab_heap_usable(const void *p);
/* The smallest request served: SIZE_MAX while no heap serves (one compare on malloc's
 * fast path). */
extern size_t fab_heap_min;
/* Whether calls to malloc in this process reach fab_malloc.c's own allocator: false when
 * another allocator comes first (preloaded: fab_malloc.c then forwards every call to it)
 * or in a build with AddressSanitizer or ThreadSanitizer (fab_malloc.c defines no malloc).
 * The heap stays off then. */
bool fab_malloc_is_process_malloc(void);

#endif
