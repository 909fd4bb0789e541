/*
 * shim_win_shm.c - window memory that every member maps: MPI_Win_allocate_shared (always)
 * and MPI_Win_allocate (when the direct path takes it, shim_win_direct.c), and
 * MPI_Win_shared_query. The memory of every member is one memfd that the lowest rank
 * creates and the others map through /proc/<pid>/fd (as fabric/fab_heap.c maps a peer's
 * heap), so each rank reaches any member's part with plain loads and stores. The segment
 * opens with one control line per member (lock word, accumulate spinlock); the parts follow
 * in rank order, contiguous for a shared window (MPI's default; the alloc_shared_noncontig
 * hint changes nothing) and each on a 64-byte boundary for an allocated one. Put and get on
 * a mapped window are a copy through the mapping. With MPISHIM_RMA_DIRECT=0 a shared window
 * keeps active messages for its locks, accumulates and atomics, so their atomicity and
 * order do not depend on which path an origin took.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_log.h"
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

/* What each member says about itself: its node, and whether it allows the direct path. */
struct shm_vote {
    uint64_t node, direct;
};

/* Whether every member runs on this node, and whether every one has MPISHIM_RMA_DIRECT=1
 * (agreed by all: a rank with another setting makes the window take active messages,
 * rather than mixing the two paths on one window). */
static int vote(struct shim_win *w, bool *local, bool *direct)
{
    struct shm_vote mine = {node_hash(), mps_config_int(MPS_CFG_RMA_DIRECT) != 0};
    struct shm_vote *every = malloc(sizeof(mine) * (size_t)w->size);
    int rc;

    if (!every) {
        return PGC_ERR_NOMEM;
    }
    rc = pg_allgather(w->g, &mine, every, sizeof(mine));
    *local = *direct = rc == PGC_OK;
    for (int r = 0; rc == PGC_OK && r < w->size; r++) {
        *local = *local && every[r].node == every[0].node;
        *direct = *direct && every[r].direct;
    }
    free(every);
    return rc;
}

/* The segment: the control lines, then the parts (see the top of the file). */
static void layout(struct shim_win *w)
{
    size_t at = (size_t)w->size * sizeof(struct shim_win_ctl);

    for (int r = 0; r < w->size; r++) {
        if (w->flavor == MPI_WIN_FLAVOR_ALLOCATE) {
            at = (at + 63) & ~(size_t)63;
        }
        w->offsets[r] = (MPI_Aint)at;
        at += (size_t)w->sizes[r];
    }
    w->shm_len = at;
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

/* An MPI_Win_allocate window that the direct path cannot take: no mapping (the caller
 * allocates private memory, and the window uses active messages). */
static int not_mapped(struct shim_win *w, const char *why)
{
    MPS_DEBUG("window of %d ranks: active messages (%s)", w->size, why);
    shim_win_shm_unmap(w);
    return MPI_SUCCESS;
}

int shim_win_shm_setup(struct shim_win *w, const char *fn, MPI_Comm comm)
{
    bool shared = w->flavor == MPI_WIN_FLAVOR_SHARED, local = false, direct = false;
    bool mapped = false;
    int rc;

    w->offsets = calloc((size_t)w->size, sizeof(*w->offsets));
    if (!w->offsets) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory");
    }
    rc = vote(w, &local, &direct);
    if (rc != PGC_OK) {
        return shim_error_pg(comm, fn, rc);
    }
    if (shared && !local) {
        return shim_error(comm, fn, MPI_ERR_RMA_SHARED,
                          "the communicator spans several nodes: shared memory needs one "
                          "(MPI_Comm_split_type with MPI_COMM_TYPE_SHARED gives a node's)");
    }
    if (!shared && !(local && direct)) {
        return not_mapped(w, local ? "MPISHIM_RMA_DIRECT=0" : "its members span nodes");
    }
    layout(w);
    rc = shm_map_all(w, &mapped);
    if (rc != PGC_OK) {
        return shim_error_pg(comm, fn, rc);
    }
    if (!mapped && shared) {
        return shim_error(comm, fn, MPI_ERR_RMA_SHARED,
                          "the shared window memory (%zu bytes, a memfd of rank 0) could not be "
                          "created or mapped on every rank",
                          w->shm_len);
    }
    if (!mapped) {
        return not_mapped(w, "the shared segment could not be mapped on every rank");
    }
    w->ctl = (struct shim_win_ctl *)w->shm;
    w->direct = direct;
    w->base = w->shm + w->offsets[w->rank];
    MPS_DEBUG("window of %d ranks: %s", w->size,
              direct ? "direct (one mapping)" : "shared mapping, active messages");
    return MPI_SUCCESS;
}

void shim_win_shm_unmap(struct shim_win *w)
{
    if (w->shm) {
        munmap(w->shm, w->shm_len);
        w->shm = NULL;
    }
    w->ctl = NULL;
    w->direct = false;
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
    const struct shim_dtype *local = op->kind == SHIM_AM_PUT ? op->otype : op->rtype;

    /* Contiguous on both sides (the common case): one memcpy, without the walk. */
    if (op->ttype->contig && local->contig) {
        size_t len = op->tcount * op->ttype->size;

        if (len == 0) {
            return; /* the buffers may be NULL then */
        }
        if (op->kind == SHIM_AM_PUT) {
            memcpy(a.target + op->disp, op->origin, len);
        } else {
            memcpy(op->result, a.target + op->disp, len);
        }
        return;
    }
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
