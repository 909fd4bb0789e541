/*
 * shim_win.c - RMA windows: creation (MPI_Win_create, MPI_Win_allocate,
 * MPI_Win_create_dynamic) and MPI_Win_free, the window handle table, and the window's own
 * calls (group, name, error handlers, predefined attributes; user attributes are in
 * shim_attr.c, attach and detach in shim_win_dyn.c). The protocol is in shim_win_am.c,
 * synchronisation in shim_win_sync.c, the data-moving calls in shim_win_ops.c.
 */
#include "config.h"

#include "mps_util.h"
#include "pgc_status.h"
#include "shim_comm.h"
#include "shim_group.h"
#include "shim_win.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct shim_table wins = {.obj = MPISHIM_OBJ_WIN};

struct shim_win *shim_win_get(MPI_Win h)
{
    return h == MPI_WIN_NULL ? NULL : shim_table_get(&wins, h);
}

int shim_win_enter(const char *fn, MPI_Win win, struct shim_win **w)
{
    int rc = shim_check_init(fn);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *w = shim_win_get(win);
    if (!*w) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_WIN, "invalid window 0x%x", (unsigned)win);
    }
    return MPI_SUCCESS;
}

static void win_destroy(struct shim_win *w)
{
    if (!w) {
        return;
    }
    shim_win_am_stop(w);
    shim_win_cma_free(w);
    shim_win_net_free(w);
    if (w->comm != MPI_COMM_NULL) {
        PMPI_Comm_free(&w->comm);
    }
    if (w->owns_base) {
        free(w->base);
    }
    shim_win_shm_unmap(w);
    shim_win_dyn_free(w);
    pthread_mutex_destroy(&w->regions_lock);
    free(w->sizes);
    free(w->disp_units);
    free(w->locked);
    free(w->started);
    free(w->posts_seen);
    free(w->waiters);
    free(w);
}

/* Every member's (size, disp_unit), allgathered. */
static int exchange_shapes(struct shim_win *w)
{
    int64_t mine[2] = {(int64_t)w->my_size, w->my_disp_unit};
    int64_t *all = malloc(sizeof(mine) * (size_t)w->size);
    int rc;

    if (!all) {
        return PGC_ERR_NOMEM;
    }
    rc = pg_allgather(w->g, mine, all, sizeof(mine));
    for (int r = 0; rc == PGC_OK && r < w->size; r++) {
        w->sizes[r] = (MPI_Aint)all[2 * r];
        w->disp_units[r] = (int)all[2 * r + 1];
    }
    free(all);
    return rc;
}

static int win_alloc_arrays(struct shim_win *w)
{
    size_t n = (size_t)w->size;

    w->sizes = calloc(n, sizeof(*w->sizes));
    w->disp_units = calloc(n, sizeof(*w->disp_units));
    w->locked = calloc(n, sizeof(*w->locked));
    w->started = calloc(n, sizeof(*w->started));
    w->posts_seen = calloc(n, sizeof(*w->posts_seen));
    return w->sizes && w->disp_units && w->locked && w->started && w->posts_seen ? PGC_OK
                                                                                 : PGC_ERR_NOMEM;
}

/* The window's private communicator: a duplicate of comm's group, without comm's
 * attributes (MPI_Comm_dup would run the user's copy callbacks, and MPI_Comm_free their
 * delete callbacks at MPI_Win_free, on a communicator the user never sees). */
static int win_comm(const char *fn, struct shim_comm *c, MPI_Comm comm, MPI_Comm *out)
{
    struct pg_group *g;
    int rc = pg_group_dup(c->g, &g);

    if (rc != PGC_OK) {
        return shim_error_pg(comm, fn, rc);
    }
    return shim_comm_wrap(fn, c, comm, g, out);
}

/* The memory of an MPI_Win_allocate window that the direct path did not map: this
 * process's own, 64-byte aligned (any element type, and no false sharing with other data). */
static int private_memory(struct shim_win *w, const char *fn, MPI_Comm comm)
{
    void *mem = NULL;

    if (w->my_size > 0 && posix_memalign(&mem, 64, (size_t)w->my_size) != 0) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a window of %ld bytes",
                          (long)w->my_size);
    }
    w->base = mem;
    w->owns_base = true;
    return MPI_SUCCESS;
}

/* The memory of the flavors the library allocates: a mapping every member shares (shared
 * windows, and allocated ones the direct path takes), else private memory. */
static int win_memory(const char *fn, MPI_Comm comm, struct shim_win *w)
{
    int rc = shim_win_shm_setup(w, fn, comm);

    if (rc == MPI_SUCCESS && w->flavor == MPI_WIN_FLAVOR_ALLOCATE && !w->shm) {
        rc = private_memory(w, fn, comm);
    }
    return rc;
}

/* The collective part of every creation: the duplicate communicator, the posted receive
 * of requests, the shapes and the memory the library allocates. On an error the window is
 * destroyed and *out left alone. */
static int win_setup(const char *fn, struct shim_comm *c, MPI_Comm comm, struct shim_win *w,
                     MPI_Win *out)
{
    struct shim_comm *dc;
    int rc = win_comm(fn, c, comm, &w->comm);

    if (rc != MPI_SUCCESS) {
        goto fail;
    }
    /* A window's errors are fatal until MPI_Win_set_errhandler says otherwise (MPI-3.1
     * 8.3.2), whatever its communicator's handler. */
    PMPI_Comm_set_errhandler(w->comm, MPI_ERRORS_ARE_FATAL);
    shim_comm_get(w->comm, &dc);
    w->g = dc->g;
    w->rank = c->g->rank;
    w->size = c->g->size;
    w->excl_holder = -1;
    w->post_count = -1;
    w->fence_spins = -1;
    rc = win_alloc_arrays(w);
    if (rc == PGC_OK) {
        rc = shim_win_am_start(w);
    }
    if (rc == PGC_OK) {
        rc = exchange_shapes(w);
    }
    if (rc == PGC_OK) {
        rc = shim_win_cma_setup(w);
    }
    if (rc != PGC_OK) {
        rc = shim_error_pg(comm, fn, rc);
        goto fail;
    }
    if ((w->flavor == MPI_WIN_FLAVOR_SHARED || w->flavor == MPI_WIN_FLAVOR_ALLOCATE) &&
        (rc = win_memory(fn, comm, w)) != MPI_SUCCESS) {
        goto fail;
    }
    /* Puts and gets through FI_RMA where a window's memory is not mapped by every member
     * (which members are is agreed: the flavor, and the direct path's vote). */
    if ((w->flavor == MPI_WIN_FLAVOR_CREATE || (w->flavor == MPI_WIN_FLAVOR_ALLOCATE && !w->shm)) &&
        (rc = shim_win_net_setup(w)) != PGC_OK) {
        rc = shim_error_pg(comm, fn, rc);
        goto fail;
    }
    w->handle = shim_table_add(&wins, w);
    if (!w->handle) {
        rc = shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a window handle");
        goto fail;
    }
    /* A user window error handler is called with the window, found from its communicator. */
    dc->win = w->handle;
    *out = w->handle;
    return MPI_SUCCESS;
fail:
    win_destroy(w);
    return rc;
}

/* The argument checks of every creation call. */
static int create_check(const char *fn, MPI_Comm comm, MPI_Aint size, int disp_unit, MPI_Win *win,
                        struct shim_comm **c)
{
    int rc = shim_comm_enter(fn, comm, c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!win) {
        return shim_error(comm, fn, MPI_ERR_ARG, "the window pointer is NULL");
    }
    *win = MPI_WIN_NULL;
    if ((*c)->inter) {
        return shim_error(comm, fn, MPI_ERR_COMM,
                          "a window needs an intracommunicator (MPI-3.1 11.2), not an "
                          "intercommunicator");
    }
    if (size < 0) {
        return shim_error(comm, fn, MPI_ERR_SIZE, "window size %ld < 0", (long)size);
    }
    if (disp_unit <= 0) {
        return shim_error(comm, fn, MPI_ERR_DISP, "displacement unit %d <= 0", disp_unit);
    }
    return MPI_SUCCESS;
}

static struct shim_win *win_new(int flavor, void *base, MPI_Aint size, int disp_unit)
{
    struct shim_win *w = calloc(1, sizeof(*w));

    if (w) {
        w->flavor = flavor;
        w->base = base;
        w->my_size = size;
        w->my_disp_unit = disp_unit;
        w->comm = MPI_COMM_NULL;
        pthread_mutex_init(&w->regions_lock, NULL);
    }
    return w;
}

#pragma weak MPI_Win_create = PMPI_Win_create
int PMPI_Win_create(void *base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                    MPI_Win *win)
{
    struct shim_comm *c;
    struct shim_win *w;
    int rc = create_check(SHIM_FN, comm, size, disp_unit, win, &c);

    (void)info;
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!base && size > 0) {
        return shim_error(comm, SHIM_FN, MPI_ERR_BUFFER, "base is NULL for a window of %ld bytes",
                          (long)size);
    }
    w = win_new(MPI_WIN_FLAVOR_CREATE, base, size, disp_unit);
    if (!w) {
        return shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a window");
    }
    return win_setup(SHIM_FN, c, comm, w, win);
}

/* A window of no memory yet: base MPI_BOTTOM and unit 1, so that a displacement is an
 * address; MPI_Win_attach exposes memory (shim_win_dyn.c). */
#pragma weak MPI_Win_create_dynamic = PMPI_Win_create_dynamic
int PMPI_Win_create_dynamic(MPI_Info info, MPI_Comm comm, MPI_Win *win)
{
    struct shim_comm *c;
    struct shim_win *w;
    int rc = create_check(SHIM_FN, comm, 0, 1, win, &c);

    (void)info;
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    w = win_new(MPI_WIN_FLAVOR_DYNAMIC, MPI_BOTTOM, 0, 1);
    if (!w) {
        return shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a window");
    }
    return win_setup(SHIM_FN, c, comm, w, win);
}

/* MPI_Win_allocate (one mapping of the node's when the direct path takes it, else memory
 * of this process) and MPI_Win_allocate_shared (one mapping of the node's,
 * shim_win_shm.c). The memory comes in win_setup, once the members' sizes are known. */
int shim_win_create_flavor(const char *fn, int flavor, MPI_Aint size, int disp_unit, MPI_Info info,
                           MPI_Comm comm, void *baseptr, MPI_Win *win)
{
    struct shim_comm *c;
    struct shim_win *w;
    int rc = create_check(fn, comm, size, disp_unit, win, &c);

    (void)info;
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!baseptr) {
        return shim_error(comm, fn, MPI_ERR_ARG, "baseptr is NULL");
    }
    w = win_new(flavor, NULL, size, disp_unit);
    if (!w) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a window");
    }
    rc = win_setup(fn, c, comm, w, win);
    if (rc == MPI_SUCCESS) {
        *(void **)baseptr = w->base;
    }
    return rc;
}

#pragma weak MPI_Win_allocate = PMPI_Win_allocate
int PMPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void *baseptr,
                      MPI_Win *win)
{
    return shim_win_create_flavor(SHIM_FN, MPI_WIN_FLAVOR_ALLOCATE, size, disp_unit, info, comm,
                                  baseptr, win);
}

#pragma weak MPI_Win_free = PMPI_Win_free
int PMPI_Win_free(MPI_Win *win)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win ? *win : MPI_WIN_NULL, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (w->lock_all || w->start_epoch || w->post_count >= 0) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                          "an epoch is still open (MPI_Win_%s was not closed)",
                          w->lock_all      ? "lock_all"
                          : w->start_epoch ? "start"
                                           : "post");
    }
    for (int r = 0; r < w->size; r++) {
        if (w->locked[r]) {
            return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_SYNC,
                              "the lock on rank %d is still held (call MPI_Win_unlock first)", r);
        }
    }
    /* Every request of mine answered, then everyone's: no request is in flight once the
     * barrier returns, and the receive of requests can go. */
    rc = shim_win_drain(w, SHIM_FN);
    if (rc == MPI_SUCCESS) {
        rc = pg_barrier(w->g);
        rc = rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(w->comm, SHIM_FN, rc);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* The attributes go first, while the window is still whole: a delete callback gets
     * its handle (MPI-3.1 6.7.3). One that fails does not keep the window alive. */
    rc = shim_attr_win_delete_all(w);
    if (rc != MPI_SUCCESS) {
        rc = shim_error(w->comm, SHIM_FN, rc, "an attribute delete callback failed (code %d)",
                        rc);
    }
    shim_table_remove(&wins, w->handle);
    win_destroy(w);
    *win = MPI_WIN_NULL;
    return rc;
}

#pragma weak MPI_Win_get_group = PMPI_Win_get_group
int PMPI_Win_get_group(MPI_Win win, MPI_Group *group)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return PMPI_Comm_group(w->comm, group);
}

#pragma weak MPI_Win_set_name = PMPI_Win_set_name
int PMPI_Win_set_name(MPI_Win win, const char *win_name)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!win_name) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_ARG, "the name is NULL");
    }
    snprintf(w->name, sizeof(w->name), "%s", win_name);
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_get_name = PMPI_Win_get_name
int PMPI_Win_get_name(MPI_Win win, char *win_name, int *resultlen)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!win_name || !resultlen) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_ARG, "the name or length pointer is NULL");
    }
    strcpy(win_name, w->name);
    *resultlen = (int)strlen(w->name);
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_set_errhandler = PMPI_Win_set_errhandler
int PMPI_Win_set_errhandler(MPI_Win win, MPI_Errhandler errhandler)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* The window's errors are raised on its private communicator, so that is where its
     * handler lives; shim_errhandler_invoke calls a window handler with the window. */
    if (shim_errhandler_check(errhandler) != MPI_SUCCESS ||
        shim_errhandler_kind(errhandler) == SHIM_ERRH_COMM) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_ARG,
                          "0x%x is not a window error handler (MPI_Win_create_errhandler or a "
                          "predefined one)",
                          (unsigned)errhandler);
    }
    shim_comm_set_errh(w->comm, errhandler);
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_get_errhandler = PMPI_Win_get_errhandler
int PMPI_Win_get_errhandler(MPI_Win win, MPI_Errhandler *errhandler)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return PMPI_Comm_get_errhandler(w->comm, errhandler);
}

#pragma weak MPI_Win_call_errhandler = PMPI_Win_call_errhandler
int PMPI_Win_call_errhandler(MPI_Win win, int errorcode)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return PMPI_Comm_call_errhandler(w->comm, errorcode);
}

/* The predefined attributes: pointers into the window, valid while it lives. */
static int predefined_attr(struct shim_win *w, int keyval, void *attribute_val, int *flag)
{
    static int flavors[5] = {0, MPI_WIN_FLAVOR_CREATE, MPI_WIN_FLAVOR_ALLOCATE,
                             MPI_WIN_FLAVOR_DYNAMIC, MPI_WIN_FLAVOR_SHARED};
    static int model = MPI_WIN_UNIFIED;

    *flag = 1;
    switch (keyval) {
    case MPI_WIN_BASE:
        *(void **)attribute_val = w->base;
        break;
    case MPI_WIN_SIZE:
        *(MPI_Aint **)attribute_val = &w->my_size;
        break;
    case MPI_WIN_DISP_UNIT:
        *(int **)attribute_val = &w->my_disp_unit;
        break;
    case MPI_WIN_CREATE_FLAVOR:
        *(int **)attribute_val = &flavors[w->flavor];
        break;
    case MPI_WIN_MODEL:
        *(int **)attribute_val = &model;
        break;
    default:
        *flag = 0;
        return MPI_ERR_KEYVAL;
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_get_attr = PMPI_Win_get_attr
int PMPI_Win_get_attr(MPI_Win win, int win_keyval, void *attribute_val, int *flag)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!attribute_val || !flag) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_ARG, "attribute_val or flag is NULL");
    }
    if (predefined_attr(w, win_keyval, attribute_val, flag) != MPI_SUCCESS) {
        return shim_attr_win_get(w, win_keyval, attribute_val, flag, SHIM_FN);
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_set_info = PMPI_Win_set_info
int PMPI_Win_set_info(MPI_Win win, MPI_Info info)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Hints only: every one (no_locks, accumulate_ordering, same_op...) may be ignored,
     * and the active-message protocol gains nothing from them. */
    if (info != MPI_INFO_NULL && !shim_info_valid(info)) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_INFO, "invalid info 0x%x", (unsigned)info);
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Win_get_info = PMPI_Win_get_info
int PMPI_Win_get_info(MPI_Win win, MPI_Info *info_used)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!info_used) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_ARG, "info_used is NULL");
    }
    /* What the window does: locks are served, and accumulates are applied in arrival
     * order whatever the ops (active messages), or each by its origin at once with CPU
     * atomics per element (direct). mpishim_rma_path says which (doc/mpi-semantics.md). */
    rc = PMPI_Info_create(info_used);
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Info_set(*info_used, "no_locks", "false");
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Info_set(*info_used, "accumulate_ordering", "rar,raw,war,waw");
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Info_set(*info_used, "accumulate_ops", "same_op_no_op");
    }
    if (rc == MPI_SUCCESS) {
        rc =
            PMPI_Info_set(*info_used, "mpishim_rma_path", w->direct ? "direct" : "active_messages");
    }
    /* Put and get to members on this node by CMA instead (shim_win_cma.c). */
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Info_set(*info_used, "mpishim_rma_cma", shim_win_cma_on(w) ? "true" : "false");
    }
    /* Whether some puts and gets of this window go as libfabric FI_RMA (shim_win_net.c). */
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Info_set(*info_used, "mpishim_fi_rma", w->net ? "true" : "false");
    }
    return rc;
}
