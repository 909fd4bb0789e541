/*
 * shim_win_shm.c - MPI_Win_allocate_shared and MPI_Win_shared_query: the window memory of
 * every member is one memfd that the lowest rank creates and the others map through
 * /proc/<pid>/fd (as fabric/fab_heap.c maps a peer's heap), so each rank reaches any
 * member's part with plain loads and stores. The parts are contiguous in rank order (MPI's
 * default; the alloc_shared_noncontig hint changes nothing). Put and get on such a window
 * are a copy through the mapping; accumulates and the atomics keep the active messages, so
 * their atomicity and order do not depend on which path an origin took.
 */
#include "config.h"

#include "pgc_status.h"
#include "shim_comm.h"
#include "shim_win.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* FNV-1a of the node's name: members on other nodes cannot share memory. */
static uint64_t node_hash(void)
{
    uint64_t h = 1469598103934665603ull;

    for (const char *p = pg_node_name(); p && *p; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    return h;
}

/* What rank 0 tells the others: where to find the file, and whether it exists. */
struct shm_where {
    int64_t pid, fd, ok;
};

static int shm_create(struct shim_win *w, struct shm_where *where)
{
    int fd = memfd_create("mpishim-win", MFD_CLOEXEC);

    if (fd < 0 || ftruncate(fd, (off_t)w->shm_len) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    w->shm = mmap(NULL, w->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (w->shm == MAP_FAILED) {
        w->shm = NULL;
        close(fd);
        return -1;
    }
    *where = (struct shm_where){getpid(), fd, 1};
    return fd;
}

static int shm_attach(struct shim_win *w, const struct shm_where *where)
{
    char path[64];
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/fd/%ld", (long)where->pid, (long)where->fd);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    w->shm = mmap(NULL, w->shm_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (w->shm == MAP_FAILED) {
        w->shm = NULL;
        return -1;
    }
    return 0;
}

/* Whether every member runs on this node (agreed by all). */
static int same_node(struct shim_win *w, bool *all)
{
    uint64_t mine = node_hash(), *every = malloc(sizeof(mine) * (size_t)w->size);
    int rc;

    if (!every) {
        return PGC_ERR_NOMEM;
    }
    rc = pg_allgather(w->g, &mine, every, sizeof(mine));
    *all = true;
    for (int r = 0; r < w->size; r++) {
        *all = *all && every[r] == every[0];
    }
    free(every);
    return rc;
}

/* Maps the memory: rank 0 creates, broadcasts where it is, the others map it, and all
 * agree whether everyone succeeded before rank 0 closes its descriptor. */
static int shm_map_all(struct shim_win *w, bool *ok)
{
    struct shm_where where = {0, -1, 0};
    int fd = -1, mine, all = 0, rc;
    struct pg_op_spec land = {.dt = PG_INT32, .op = PG_OP_MIN, .elem_size = 4, .commutative = true};

    if (w->rank == 0) {
        fd = shm_create(w, &where);
    }
    rc = pg_bcast(w->g, &where, sizeof(where), 0);
    if (rc == PGC_OK && w->rank != 0 && where.ok) {
        shm_attach(w, &where);
    }
    mine = w->shm != NULL;
    if (rc == PGC_OK) {
        rc = pg_allreduce(w->g, &mine, &all, 1, &land);
    }
    if (fd >= 0) {
        close(fd);
    }
    *ok = rc == PGC_OK && all;
    return rc;
}

int shim_win_shm_setup(struct shim_win *w, const char *fn, MPI_Comm comm)
{
    bool local = false, mapped = false;
    int rc;

    w->offsets = calloc((size_t)w->size, sizeof(*w->offsets));
    if (!w->offsets) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory");
    }
    for (int r = 0; r < w->size; r++) {
        w->offsets[r] = (MPI_Aint)w->shm_len;
        w->shm_len += (size_t)w->sizes[r];
    }
    /* A window of 0 bytes in all still gets a page, so that every base is a valid pointer. */
    w->shm_len = w->shm_len ? w->shm_len : 1;
    rc = same_node(w, &local);
    if (rc == PGC_OK && !local) {
        return shim_error(comm, fn, MPI_ERR_RMA_SHARED,
                          "the communicator spans several nodes: shared memory needs one "
                          "(MPI_Comm_split_type with MPI_COMM_TYPE_SHARED gives a node's)");
    }
    if (rc == PGC_OK) {
        rc = shm_map_all(w, &mapped);
    }
    if (rc != PGC_OK) {
        return shim_error_pg(comm, fn, rc);
    }
    if (!mapped) {
        return shim_error(comm, fn, MPI_ERR_RMA_SHARED,
                          "the shared window memory (%zu bytes, a memfd of rank 0) could not be "
                          "created or mapped on every rank",
                          w->shm_len);
    }
    w->base = w->shm + w->offsets[w->rank];
    return MPI_SUCCESS;
}

void shim_win_shm_unmap(struct shim_win *w)
{
    if (w->shm) {
        munmap(w->shm, w->shm_len);
        w->shm = NULL;
    }
    free(w->offsets);
    w->offsets = NULL;
}

struct copy_arg {
    struct shim_win *w;
    const struct shim_rma *op;
    unsigned char *target;
};

static void copy_piece(void *arg, uint64_t off, uint64_t len, size_t skip)
{
    struct copy_arg *a = arg;
    const struct shim_rma *op = a->op;

    if (op->kind == SHIM_AM_PUT) {
        shim_dtype_pack_partial(op->origin, op->ocount, op->otype, skip, a->target + off, len);
    } else {
        shim_dtype_unpack_partial(a->target + off, op->rcount, op->rtype, skip, op->result, len);
    }
}

void shim_win_shm_copy(struct shim_win *w, const struct shim_rma *op)
{
    struct copy_arg a = {w, op, w->shm + w->offsets[op->target]};

    shim_win_walk(op, copy_piece, &a);
}

#pragma weak MPI_Win_allocate_shared = PMPI_Win_allocate_shared
int PMPI_Win_allocate_shared(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                             void *baseptr, MPI_Win *win)
{
    return shim_win_create_flavor(SHIM_FN, MPI_WIN_FLAVOR_SHARED, size, disp_unit, info, comm,
                                  baseptr, win);
}

#pragma weak MPI_Win_shared_query = PMPI_Win_shared_query
int PMPI_Win_shared_query(MPI_Win win, int rank, MPI_Aint *size, int *disp_unit, void *baseptr)
{
    struct shim_win *w;
    int rc = shim_win_enter(SHIM_FN, win, &w);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (w->flavor != MPI_WIN_FLAVOR_SHARED) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RMA_FLAVOR,
                          "the window was not made by MPI_Win_allocate_shared");
    }
    if (!size || !disp_unit || !baseptr) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_ARG, "an output pointer is NULL");
    }
    if (rank == MPI_PROC_NULL) {
        /* The lowest rank with memory (MPI-3.1 11.2.3), or rank 0's empty part. */
        for (rank = 0; rank < w->size - 1 && w->sizes[rank] == 0; rank++) {
        }
    }
    if (rank < 0 || rank >= w->size) {
        return shim_error(w->comm, SHIM_FN, MPI_ERR_RANK, "rank %d is not in the window (size %d)",
                          rank, w->size);
    }
    *size = w->sizes[rank];
    *disp_unit = w->disp_units[rank];
    *(void **)baseptr = w->shm + w->offsets[rank];
    return MPI_SUCCESS;
}
