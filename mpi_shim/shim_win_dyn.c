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
 * (MPI-3.1 11.2.4); the lock keeps the list itself sound even then.
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

/* The region holding addr (its first byte at or before addr, addr before its end), or
 * NULL. Called with regions_lock held. */
static const struct shim_win_region *region_at(const struct shim_win *w, uint64_t addr)
{
    for (int i = 0; i < w->nregions; i++) {
        const struct shim_win_region *r = &w->regions[i];

        if (addr >= r->base && addr - r->base < r->len) {
            return r;
        }
    }
    return NULL;
}

bool shim_win_dyn_fits(struct shim_win *w, uint64_t addr, uint64_t len)
{
    bool fits = true;

    if (len == 0) {
        return true;
    }
    if (addr + len < addr) {
        return false;
    }
    pthread_mutex_lock(&w->regions_lock);
    /* Walk from region to touching region until the range's end is covered. */
    while (fits && len > 0) {
        const struct shim_win_region *r = region_at(w, addr);
        uint64_t in_r = r ? r->base + r->len - addr : 0;

        fits = r != NULL;
        in_r = in_r < len ? in_r : len;
        addr += in_r;
        len -= in_r;
    }
    pthread_mutex_unlock(&w->regions_lock);
    return fits;
}

void shim_win_dyn_free(struct shim_win *w)
{
    free(w->regions);
    w->regions = NULL;
    w->nregions = 0;
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
    for (int i = 0; i < w->nregions && rc == MPI_SUCCESS; i++) {
        if (overlaps(base, len, w->regions[i].base, w->regions[i].len)) {
            *clash = w->regions[i];
            rc = MPI_ERR_RMA_ATTACH;
        }
    }
    if (rc == MPI_SUCCESS && w->nregions == w->cap_regions) {
        int cap = w->cap_regions ? 2 * w->cap_regions : 8;
        struct shim_win_region *r = realloc(w->regions, sizeof(*r) * (size_t)cap);

        if (r) {
            w->regions = r;
            w->cap_regions = cap;
        } else {
            rc = MPI_ERR_NO_MEM;
        }
    }
    if (rc == MPI_SUCCESS) {
        w->regions[w->nregions++] = (struct shim_win_region){base, len};
    }
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
    for (int i = 0; i < w->nregions && !found; i++) {
        if (w->regions[i].base == (uintptr_t)base) {
            w->regions[i] = w->regions[--w->nregions];
            found = 1;
        }
    }
    pthread_mutex_unlock(&w->regions_lock);
    if (!found) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_RANGE,
                          "no region attached to this window starts at %p (detach takes the "
                          "base that MPI_Win_attach was given)",
                          base);
    }
    return MPI_SUCCESS;
}
