/*
 * shim_win_cma.c - put and get on windows of user memory (MPI_Win_create) and on dynamic
 * windows whose target runs on this node: the origin copies straight into or out of the
 * target's memory with process_vm_writev/process_vm_readv (cross-memory attach, CMA) in its
 * own call, instead of active messages that the target's progress applies (shim_win_am.c:
 * two copies, a message per 32 KiB, and the target's attention; 100-150 MB/s for MiB
 * transfers on a loaded machine, doc/rma.md).
 *
 * Who takes it: the fabric decides whether CMA works to a peer (pg_cma_pid, fab_cma_pid:
 * same node, the shared-memory rings, the kernel's probe passed), and MPISHIM_RMA_CMA=0 turns
 * it off on this rank. What: put and get only. Accumulates stay active messages, applied by
 * the target one at a time, which is what makes them atomic per element against each other;
 * so does a get_accumulate with MPI_NO_OP (it must not see half of a concurrent accumulate).
 * A put or get that touches the bytes of an accumulate of the same epoch is erroneous
 * (MPI-3.1 11.7.1), so the two paths never need to be ordered against each other.
 *
 * Completion and visibility. The copy is done when the system call returns: the origin's
 * buffer may be reused, a get's data is in place, the operation is complete at the origin,
 * and flush, unlock, fence and complete have nothing to wait for. At the target, the kernel
 * stored the bytes, from the origin's thread and before the call returned, into the very
 * physical pages the target loads from (no copy or cache of them exists on the way). Every
 * load of the target that the program may make after this epoch is ordered after something
 * the origin does after that return: the unlock request the target serves (passive target:
 * the target, or a later locker, reads after its own lock or a message), the barrier of a
 * fence, PSCW's complete notice, the user's message after a flush. Each travels through the
 * rings' release stores or the fabric's system calls: a release on the origin's side after
 * the kernel's stores (a thread that moved to another CPU in between did so through a full
 * barrier), matched by the target's acquire before its loads. So the target's loads see the
 * data, as they see a store the origin made through a shared mapping.
 *
 * Refusals. EPERM or ENOSYS (a seccomp filter, another user, ptrace rules changed since the
 * fabric's probe) turn CMA off for the window: the operation and every later one go as active
 * messages, logged once at debug level. EFAULT (no such memory mapped at the target: a
 * dynamic window's region detached, a device buffer) or any other failure sends just this
 * operation as active messages, whose target checks and reports it. ESRCH: the target
 * process is gone, an error that names it.
 *
 * Datatypes: both sides are walked with the datatype engine into pairs of pieces of equal
 * length (the two sides' piece boundaries differ), adjacent pairs merged, moved CMA_IOV pairs
 * per system call.
 *
 * Dynamic windows: only the target knows what it attached. The origin reads the target's
 * struct shim_win_regions (its address allgathered at creation) with process_vm_readv and
 * keeps a copy per target, valid while the target's generation count is unchanged: one read
 * of the header per operation, and of the list again after an attach or detach. A range the
 * list does not hold goes as active messages, refused by the target with MPI_ERR_RMA_RANGE.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"
#include "shim_comm.h"
#include "shim_win.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define CMA_IOV 64  /* pairs of pieces per system call */
#define DYN_TRIES 8 /* reads of a target's list that may meet a change before AM takes over */
#define CMA_AM (-1) /* move()'s answer: leave the operation to active messages */

/* A target's region list as this origin last read it (dynamic windows). */
struct dyn_copy {
    uint64_t gen; /* odd: nothing read yet */
    struct shim_win_region *list;
    int n, cap;
};

struct shim_win_cma {
    int *pids;                /* [size] the member's pid, 0: not reachable by CMA */
    uint64_t *at;             /* [size] its base, or its struct shim_win_regions (dynamic) */
    struct dyn_copy *dyn;     /* [size] dynamic windows only */
    pthread_mutex_t dyn_lock; /* dyn, for origins in several threads */
    int off;                  /* CMA was refused: every operation takes AM (atomic) */
};

static void cma_destroy(struct shim_win_cma *c, int size)
{
    if (!c) {
        return;
    }
    for (int r = 0; c->dyn && r < size; r++) {
        free(c->dyn[r].list);
    }
    free(c->dyn);
    free(c->pids);
    free(c->at);
    free(c);
}

int shim_win_cma_setup(struct shim_win *w)
{
    bool dyn = w->flavor == MPI_WIN_FLAVOR_DYNAMIC, reach = false;
    uint64_t mine = dyn ? (uint64_t)(uintptr_t)&w->regions : (uint64_t)(uintptr_t)w->base;
    size_t n = (size_t)w->size;
    struct shim_win_cma *c;
    int rc = PGC_ERR_NOMEM;

    if (w->flavor != MPI_WIN_FLAVOR_CREATE && !dyn) {
        return PGC_OK;
    }
    c = calloc(1, sizeof(*c));
    if (!c || !(c->at = calloc(n, sizeof(*c->at))) || !(c->pids = calloc(n, sizeof(int))) ||
        (dyn && !(c->dyn = calloc(n, sizeof(*c->dyn))))) {
        goto fail;
    }
    /* Collective whatever this rank's MPISHIM_RMA_CMA says: the others may use it. */
    rc = pg_allgather(w->g, &mine, c->at, sizeof(mine));
    if (rc != PGC_OK) {
        goto fail;
    }
    for (int r = 0; r < w->size && mps_config_int(MPS_CFG_RMA_CMA) != 0; r++) {
        c->pids[r] = pg_cma_pid(w->g, r);
        reach = reach || c->pids[r] != 0;
        if (dyn) {
            c->dyn[r].gen = 1;
        }
    }
    if (!reach) {
        cma_destroy(c, w->size);
        return PGC_OK;
    }
    pthread_mutex_init(&c->dyn_lock, NULL);
    w->cma = c;
    return PGC_OK;
fail:
    cma_destroy(c, w->size);
    return rc;
}

void shim_win_cma_free(struct shim_win *w)
{
    if (w->cma) {
        pthread_mutex_destroy(&w->cma->dyn_lock);
        cma_destroy(w->cma, w->size);
        w->cma = NULL;
    }
}

bool shim_win_cma_on(const struct shim_win *w)
{
    return w->cma && !__atomic_load_n(&w->cma->off, __ATOMIC_RELAXED);
}

/* Reads len bytes at addr in process pid into buf: whether all came. */
static bool peek(int pid, uint64_t addr, void *buf, size_t len)
{
    struct iovec l = {buf, len}, r = {(void *)(uintptr_t)addr, len};

    return process_vm_readv(pid, &l, 1, &r, 1, 0) == (ssize_t)len;
}

/* Refreshes d from the target's list whose header is at addr: whether d now holds a whole
 * list of the generation the header showed. */
static bool dyn_refresh(struct dyn_copy *d, int pid, uint64_t addr)
{
    struct shim_win_regions h;
    uint64_t again;

    for (int i = 0; i < DYN_TRIES; i++) {
        if (!peek(pid, addr, &h, sizeof(h))) {
            return false;
        }
        if (h.gen == d->gen) {
            return true; /* unchanged since the copy was made */
        }
        if (h.gen % 2 != 0 || h.n < 0) {
            continue; /* an attach or detach is under way there */
        }
        if (h.n > d->cap) {
            struct shim_win_region *l = realloc(d->list, sizeof(*l) * (size_t)h.n);

            if (!l) {
                return false;
            }
            d->list = l;
            d->cap = h.n;
        }
        if (h.n > 0 && !peek(pid, (uintptr_t)h.list, d->list, sizeof(*d->list) * (size_t)h.n)) {
            continue; /* freed by a change (realloc) meanwhile */
        }
        if (peek(pid, addr, &again, sizeof(again)) && again == h.gen) {
            d->gen = h.gen;
            d->n = h.n;
            return true;
        }
    }
    d->gen = 1;
    return false;
}

/* Whether the target's bytes of op lie in the regions attached there now: its whole span,
 * from the first byte of the type map to the last (a range with holes in several regions is
 * left to AM, whose target checks each piece). */
static bool dyn_fits(struct shim_win_cma *c, const struct shim_rma *op)
{
    const struct shim_dtype *t = op->ttype;
    uint64_t lo = (uint64_t)(op->disp + t->true_lb);
    uint64_t len = (uint64_t)((MPI_Aint)(op->tcount - 1) * t->extent + t->true_extent);
    struct dyn_copy *d = &c->dyn[op->target];
    bool fits;

    pthread_mutex_lock(&c->dyn_lock);
    fits = dyn_refresh(d, c->pids[op->target], c->at[op->target]) &&
           shim_win_regions_fit(d->list, d->n, lo, len);
    pthread_mutex_unlock(&c->dyn_lock);
    return fits;
}

/* Both sides of op as they are walked: the local buffer (the origin's data of a put, the
 * result of a get) and the target's bytes, each at its base address. */
struct walk {
    struct shim_dtype_iter lit, rit;
    uintptr_t lbase, rbase;
    uintptr_t rat; /* the rest of the target's current piece */
    size_t rleft;
};

/* The next pair: the target's current piece, or as much of it as the local side's next
 * piece holds. */
static bool next_pair(struct walk *k, struct iovec *l, struct iovec *r)
{
    MPI_Aint off;
    size_t len;

    if (k->rleft == 0) {
        if (!shim_dtype_iter_next(&k->rit, SIZE_MAX, &off, &len)) {
            return false;
        }
        k->rat = k->rbase + (uintptr_t)off;
        k->rleft = len;
    }
    if (!shim_dtype_iter_next(&k->lit, k->rleft, &off, &len)) {
        return false;
    }
    *l = (struct iovec){(void *)(k->lbase + (uintptr_t)off), len};
    *r = (struct iovec){(void *)k->rat, len};
    k->rat += len;
    k->rleft -= len;
    return true;
}

static bool follows(const struct iovec *a, const struct iovec *b)
{
    return (const char *)a->iov_base + a->iov_len == (const char *)b->iov_base;
}

/* Up to CMA_IOV pairs into l and r, each pair merged with the one before where both sides
 * continue it. Returns the pairs. */
static int fill(struct walk *k, struct iovec *l, struct iovec *r)
{
    struct iovec a, b;
    int n = 0;

    while (n < CMA_IOV && next_pair(k, &a, &b)) {
        if (n > 0 && follows(&l[n - 1], &a) && follows(&r[n - 1], &b)) {
            l[n - 1].iov_len += a.iov_len;
            r[n - 1].iov_len += a.iov_len;
        } else {
            l[n] = a;
            r[n] = b;
            n++;
        }
    }
    return n;
}

/* Moves n pairs (put: local to remote): 0 or the errno of the failure. A short count (the
 * kernel stopped at a page it could not reach) resumes after what moved; none is EFAULT. */
static int move_pairs(int pid, struct iovec *l, struct iovec *r, int n, bool put)
{
    int i = 0;

    while (i < n) {
        unsigned long cnt = (unsigned long)(n - i);
        ssize_t got = put ? process_vm_writev(pid, l + i, cnt, r + i, cnt, 0)
                          : process_vm_readv(pid, l + i, cnt, r + i, cnt, 0);
        size_t done = (size_t)got;

        if (got <= 0) {
            return got == 0 ? EFAULT : errno;
        }
        while (i < n && done >= l[i].iov_len) {
            done -= l[i].iov_len;
            i++;
        }
        if (i < n) {
            l[i] = (struct iovec){(char *)l[i].iov_base + done, l[i].iov_len - done};
            r[i] = (struct iovec){(char *)r[i].iov_base + done, r[i].iov_len - done};
        }
    }
    return 0;
}

/* What a failed system call means for op: an error raised on the window, or CMA_AM. */
static int refused(struct shim_win *w, const char *fn, const struct shim_rma *op, int err, bool put)
{
    const char *call = put ? "process_vm_writev" : "process_vm_readv";

    if (err == ESRCH) {
        return shim_error(w->comm, fn, MPI_ERR_OTHER,
                          "target rank %d (pid %d, on this node) is gone: %s found no such "
                          "process",
                          op->target, w->cma->pids[op->target], call);
    }
    if ((err == EPERM || err == ENOSYS) &&
        !__atomic_exchange_n(&w->cma->off, 1, __ATOMIC_RELAXED)) {
        MPS_DEBUG("%s: %s to rank %d refused (%s): this window's put and get go as active "
                  "messages from now on",
                  fn, call, op->target, strerror(err));
    } else if (err != EPERM && err != ENOSYS) {
        MPS_DEBUG("%s: %s to rank %d failed (%s): this operation goes as active messages", fn, call,
                  op->target, strerror(err));
    }
    return CMA_AM;
}

/* Moves op's bytes between the local buffer and the target's memory at rbase: MPI_SUCCESS,
 * an error raised on the window, or CMA_AM. */
static int move(struct shim_win *w, const char *fn, const struct shim_rma *op, uintptr_t rbase)
{
    bool put = op->kind == SHIM_AM_PUT;
    struct iovec l[CMA_IOV], r[CMA_IOV];
    struct walk k = {.lbase = (uintptr_t)(put ? op->origin : op->result),
                     .rbase = rbase + (uintptr_t)op->disp};
    int n, err = 0;

    shim_dtype_iter_init(&k.lit, put ? op->otype : op->rtype, put ? op->ocount : op->rcount);
    shim_dtype_iter_init(&k.rit, op->ttype, op->tcount);
    while (err == 0 && (n = fill(&k, l, r)) > 0) {
        err = move_pairs(w->cma->pids[op->target], l, r, n, put);
    }
    return err == 0 ? MPI_SUCCESS : refused(w, fn, op, err, put);
}

bool shim_win_cma_op(struct shim_win *w, const char *fn, const struct shim_rma *op, int *rc)
{
    struct shim_win_cma *c = w->cma;
    bool dyn = w->flavor == MPI_WIN_FLAVOR_DYNAMIC;

    if (!shim_rma_is_copy(op) ||
        c->pids[op->target] == 0 || __atomic_load_n(&c->off, __ATOMIC_RELAXED)) {
        return false;
    }
    if (op->tcount == 0 || op->ttype->size == 0) {
        *rc = MPI_SUCCESS; /* nothing moves (the active-message path sends nothing either) */
        return true;
    }
    if (dyn && !dyn_fits(c, op)) {
        return false;
    }
    *rc = move(w, fn, op, dyn ? 0 : (uintptr_t)c->at[op->target]);
    return *rc != CMA_AM;
}
