/*
 * shim_win_dyn.c - dynamic windows (MPI-3.1 11.2.4): MPI_Win_attach, MPI_Win_detach and
 * the target's check of a range against the attached regions. MPI_Win_create_dynamic is
 * in shim_win.c with the other creation calls.
 *
 * A dynamic window's base is MPI_BOTTOM and its displacement unit 1, so a target
 * displacement is the address MPI_Get_address gave at the target; the active-message
 * protocol carries it unchanged. The origin cannot know what the target has attached, so
 * only the target checks: a range outside every attached region is refused with
 * MPI_ERR_RMA_RANGE, which the origin's next synchronisation call raises on the window.
 *
 * Attach and detach are local and run in the user's thread, while the target's check runs
 * in progress, in whatever thread makes it: the region list is under w->regions_lock. A
 * program that detaches memory while an access to it may still be in flight is erroneous
 * (MPI-3.1 11.2.4); the lock keeps the list itself sound even then. Origins on this node
 * read the list from outside without the lock (shim_win_cma.c): every change is bracketed by
 * the generation count's odd and even values (struct shim_win_regions).
 */
#include "config.h"

#include "shim_comm.h"
#include "shim_win.h"

#include <stdlib.h>

/* Whether [a, a + alen) and [b, b + blen) share a byte, or start at the same address
 * (so that detach, which names a region by its base, is never ambiguous). */
static bool overlaps(uintptr_t a, size_t alen, uintptr_t b, size_t blen)
{
    return a == b || (a < b + blen && b < a + alen);
}

/* The region of list holding addr (its first byte at or before addr, addr before its end),
 * or NULL. */
static const struct shim_win_region *region_at(const struct shim_win_region *list, int n,
                                               uint64_t addr)
{
    for (int i = 0; i < n; i++) {
        const struct shim_win_region *r = &list[i];

        if (addr >= r->base && addr - r->base < r->len) {
            return r;
        }
    }
    return NULL;
}

bool shim_win_regions_fit(const struct shim_win_region *list, int n, uint64_t addr, uint64_t len)
{
    bool fits = true;

    if (len == 0) {
        return true;
    }
    if (addr + len < addr) {
        return false;
    }
    /* Walk from region to touching region until the range's end is covered. */
    while (fits && len > 0) {
        const struct shim_win_region *r = region_at(list, n, addr);
        uint64_t in_r = r ? r->base + r->len - addr : 0;

        fits = r != NULL;
        in_r = in_r < len ? in_r : len;
        addr += in_r;
        len -= in_r;
    }
    return fits;
}

bool shim_win_dyn_fits(struct shim_win *w, uint64_t addr, uint64_t len)
{
    bool fits;

    pthread_mutex_lock(&w->regions_lock);
    fits = shim_win_regions_fit(w->regions.list, w->regions.n, addr, len);
    pthread_mutex_unlock(&w->regions_lock);
    return fits;
}

void shim_win_dyn_free(struct shim_win *w)
{
    free(w->regions.list);
    w->regions.list = NULL;
    w->regions.n = 0;
}

/* The two halves of a change to the list, under regions_lock: the count odd, then even
 * again (struct shim_win_regions). A release each, so that a reader who copies the list and
 * then finds the count unchanged and even copied no half-made change. */
static void regions_change_begin(struct shim_win *w)
{
    __atomic_store_n(&w->regions.gen, w->regions.gen + 1, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
}

static void regions_change_end(struct shim_win *w)
{
    __atomic_store_n(&w->regions.gen, w->regions.gen + 1, __ATOMIC_RELEASE);
}

/* The opening of attach and detach: a valid dynamic window. */
static int dyn_enter(const char *fn, MPI_Win win, struct shim_win **w)
{
    int rc = shim_win_enter(fn, win, w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if ((*w)->flavor != MPI_WIN_FLAVOR_DYNAMIC) {
        return shim_error((*w)->comm, fn, MPI_ERR_RMA_FLAVOR,
                          "the window was not made by MPI_Win_create_dynamic");
    }
    return MPI_SUCCESS;
}

/* Adds [base, base + len) to the list, or returns the class of the refusal with *clash the
 * region it overlaps. */
static int region_add(struct shim_win *w, uintptr_t base, size_t len, struct shim_win_region *clash)
{
    int rc = MPI_SUCCESS;

    pthread_mutex_lock(&w->regions_lock);
    for (int i = 0; i < w->regions.n && rc == MPI_SUCCESS; i++) {
        if (overlaps(base, len, w->regions.list[i].base, w->regions.list[i].len)) {
            *clash = w->regions.list[i];
            rc = MPI_ERR_RMA_ATTACH;
        }
    }
    regions_change_begin(w);
    if (rc == MPI_SUCCESS && w->regions.n == w->regions.cap) {
        int cap = w->regions.cap ? 2 * w->regions.cap : 8;
        struct shim_win_region *r = realloc(w->regions.list, sizeof(*r) * (size_t)cap);

        if (r) {
            w->regions.list = r;
            w->regions.cap = cap;
        } else {
            rc = MPI_ERR_NO_MEM;
        }
    }
    if (rc == MPI_SUCCESS) {
        w->regions.list[w->regions.n++] = (struct shim_win_region){base, len};
    }
    regions_change_end(w);
    pthread_mutex_unlock(&w->regions_lock);
    return rc;
}

#pragma weak MPI_Win_attach = PMPI_Win_attach
int PMPI_Win_attach(MPI_Win win, void *base, MPI_Aint size)
{
    struct shim_win *w;
    struct shim_win_region clash = {0, 0};
    int rc = dyn_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (size < 0) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_SIZE, "region size %ld < 0", (long)size);
    }
    if (!base && size > 0) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_BUFFER,
                          "base is NULL for a region of %ld bytes",
                          (long)size);
    }
    if ((uintptr_t)base + (size_t)size < (uintptr_t)base) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_SIZE,
                          "the region at %p of %ld bytes wraps around the address space", base,
                          (long)size);
    }
    rc = region_add(w, (uintptr_t)base, (size_t)size, &clash);
    if (rc == MPI_ERR_RMA_ATTACH) {
        return shim_error(w->comm, SHIM_FN, rc,
                          "the region at %p of %ld bytes overlaps the region at %p of %zu bytes "
                          "attached before (MPI-3.1 11.2.4: attached regions must not overlap)",
                          base, (long)size, (void *)clash.base, clash.len);
    }
    if (rc != MPI_SUCCESS) {
        return shim_error(w->comm, SHIM_FN, rc, "no memory to attach a region");
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_detach = PMPI_Win_detach
int PMPI_Win_detach(MPI_Win win, const void *base)
{
    struct shim_win *w;
    int rc = dyn_enter(SHIM_FN, win, &w), found = 0;

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pthread_mutex_lock(&w->regions_lock);
    regions_change_begin(w);
    for (int i = 0; i < w->regions.n && !found; i++) {
        if (w->regions.list[i].base == (uintptr_t)base) {
            w->regions.list[i] = w->regions.list[--w->regions.n];
            found = 1;
        }
    }
    regions_change_end(w);
    pthread_mutex_unlock(&w->regions_lock);
    if (!found) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_RANGE,
                          "no region attached to this window starts at %p (detach takes the "
                          "base that MPI_Win_attach was given)",
                          base);
    }
    return MPI_SUCCESS;
}
