/*
 * shim_win_direct.c - the same-node direct path of RMA windows (see shim_win.h): every
 * member maps the window's memory (shim_win_shm.c), so the origin does each operation itself,
 * inside its own call, and the target takes no part.
 *
 * Locks: one 64-bit word per member in the segment's control lines. An exclusive locker first
 * announces itself (+SHIM_WIN_WAITER), then swaps the waiter for SHIM_WIN_WRITER once no
 * reader and no writer holds the lock; a shared locker adds one reader while no writer holds
 * or waits. Waiting writers keep new readers out, so a stream of lock_all callers cannot
 * starve MPI_Win_lock(exclusive), as the active-message queue promises too; but not a reader
 * that holds another lock of the window, or takes lock_all's (SHIM_LOCK_AHEAD). A waiter
 * progresses (so a holder waiting in a message to it is served) and gives up after
 * MPISHIM_TIMEOUT with an error naming the target.
 *
 * Accumulates (and get_accumulate, fetch_and_op, compare_and_swap) are atomic per element
 * against every other origin because the way an element is updated depends only on its
 * element type and its address, never on the op or the origin: an element of 1, 2, 4 or 8
 * bytes at an address aligned to its size is updated with one CPU atomic (a fetch-add for
 * MPI_SUM on integers, an exchange for MPI_REPLACE, a load for MPI_NO_OP, a compare-exchange
 * for compare_and_swap, and a compare-exchange loop around the reduction kernel for every
 * other op, so MPI_MAX on a double and MPI_SUM on an int meet the same kind of instruction);
 * any other element (long double, double complex, the pair types, a misaligned address, a
 * derived type of mixed basic types, which MPI forbids in accumulates anyway) is updated
 * under its target's spinlock, which every origin of such an element takes. The two never
 * touch one element. MAXLOC and MINLOC on the pair types reduce the pairs' packed form
 * (pair_acc). Operations are applied in the order one origin issues them, and they
 * are complete (visible to others after a memory fence) when the call returns.
 */
#include "config.h"

#include "mps_util.h"
#include "pgc_status.h"
#include "shim_comm.h"
#include "shim_win.h"

#include <sched.h>
#include <string.h>

#define LOCK_READERS 0xffffffffull
#define LOCK_WAITERS (0x7fffffffull << 32)

/* Bytes of origin and result data staged per step of an accumulate. */
#define CHUNK 4096


/* ---- passive-target locks ---- */

/* keep_out: the bits that keep a shared locker out (SHIM_WIN_WRITER, and LOCK_WAITERS unless
 * it may go ahead of waiting writers). */
static inline bool try_lock(uint64_t *word, bool excl, uint64_t keep_out)
{
    uint64_t v = __atomic_load_n(word, __ATOMIC_RELAXED);

    if (excl) {
        return !(v & (SHIM_WIN_WRITER | LOCK_READERS)) &&
               __atomic_compare_exchange_n(word, &v, v - SHIM_WIN_WAITER + SHIM_WIN_WRITER, false,
                                           __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
    }
    return !(v & keep_out) &&
           __atomic_compare_exchange_n(word, &v, v + 1, false, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* The wait of a lock not granted at once: out of the fast path, which only tries. */
static __attribute__((noinline, cold)) int lock_wait(struct shim_win *w, const char *fn, int target,
                                                     bool excl, bool several)
{
    uint64_t *word = &w->ctl[target].lock;
    bool ahead = !excl && (several || shim_win_holds_lock(w));
    uint64_t keep_out = SHIM_WIN_WRITER | (ahead ? 0 : LOCK_WAITERS);
    int spins = 0, rc = PGC_OK;
    struct pg_wait_clock clock;

    pg_wait_clock_start(&clock, mps_now());
    while (rc == PGC_OK && !try_lock(word, excl, keep_out)) {
        rc = shim_win_wait_step(&clock, &spins);
    }
    if (rc == PGC_OK) {
        return MPI_SUCCESS;
    }
    if (excl) {
        __atomic_fetch_sub(word, SHIM_WIN_WAITER, __ATOMIC_RELAXED);
    }
    if (rc == PGC_ERR_TIMEOUT) {
        return shim_error(w->comm, fn, MPI_ERR_OTHER,
                          "the %s lock on rank %d was not granted within %.0f s (another "
                          "process holds it and has not unlocked: it may have died)",
                          excl ? "exclusive" : "shared", target, pg_timeout());
    }
    return shim_error_pg(w->comm, fn, rc);
}

int shim_win_direct_lock(struct shim_win *w, const char *fn, int target, int type, bool several)
{
    uint64_t *word = &w->ctl[target].lock;
    bool excl = type == MPI_LOCK_EXCLUSIVE;

    if (excl) {
        __atomic_fetch_add(word, SHIM_WIN_WAITER, __ATOMIC_RELAXED);
    }
    if (try_lock(word, excl, several ? SHIM_WIN_WRITER : SHIM_WIN_WRITER | LOCK_WAITERS)) {
        return MPI_SUCCESS;
    }
    return lock_wait(w, fn, target, excl, several);
}

void shim_win_direct_unlock(struct shim_win *w, int target, int type)
{
    uint64_t *word = &w->ctl[target].lock;

    /* Release: the next holder sees every store of this epoch. */
    __atomic_fetch_sub(word, type == MPI_LOCK_EXCLUSIVE ? SHIM_WIN_WRITER : 1, __ATOMIC_RELEASE);
}

/* ---- the spinlock of accumulates that atomics cannot do ---- */

/* Held for one accumulate's copies and reductions, never across an MPI call: spins, then yields
 * (ranks may outnumber cores, and a holder may be descheduled). A holder that died leaves
 * it held: PGC_ERR_TIMEOUT after pg_timeout(). */
static int spin_lock(uint32_t *l)
{
    double start = 0.0;
    unsigned spins = 0;

    while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE) != 0) {
        while (__atomic_load_n(l, __ATOMIC_RELAXED) != 0) {
            if (++spins < 128) {
                mps_cpu_relax();
                continue;
            }
            sched_yield();
            if (spins % 1024 == 0) {
                if (start == 0.0) {
                    start = mps_now();
                } else if (mps_now() - start > pg_timeout()) {
                    return PGC_ERR_TIMEOUT;
                }
            }
        }
    }
    return PGC_OK;
}

static void spin_unlock(uint32_t *l)
{
    __atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* ---- one element with CPU atomics ---- */

/* An element of 1, 2, 4 or 8 bytes; b aliases the others' bytes in memory order. */
union elem {
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    unsigned char b[8];
};

static void elem_load(void *p, size_t n, union elem *out)
{
    switch (n) {
    case 1:
        out->u8 = __atomic_load_n((uint8_t *)p, __ATOMIC_ACQUIRE);
        break;
    case 2:
        out->u16 = __atomic_load_n((uint16_t *)p, __ATOMIC_ACQUIRE);
        break;
    case 4:
        out->u32 = __atomic_load_n((uint32_t *)p, __ATOMIC_ACQUIRE);
        break;
    default:
        out->u64 = __atomic_load_n((uint64_t *)p, __ATOMIC_ACQUIRE);
        break;
    }
}

/* Compare-exchange: *expect gets the value found (unchanged on success). */
static bool elem_cas(void *p, size_t n, union elem *expect, const union elem *want)
{
    switch (n) {
    case 1:
        return __atomic_compare_exchange_n((uint8_t *)p, &expect->u8, want->u8, false,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    case 2:
        return __atomic_compare_exchange_n((uint16_t *)p, &expect->u16, want->u16, false,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    case 4:
        return __atomic_compare_exchange_n((uint32_t *)p, &expect->u32, want->u32, false,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    default:
        return __atomic_compare_exchange_n((uint64_t *)p, &expect->u64, want->u64, false,
                                           __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
}

static void elem_exchange(void *p, size_t n, const union elem *v, union elem *old)
{
    switch (n) {
    case 1:
        old->u8 = __atomic_exchange_n((uint8_t *)p, v->u8, __ATOMIC_ACQ_REL);
        break;
    case 2:
        old->u16 = __atomic_exchange_n((uint16_t *)p, v->u16, __ATOMIC_ACQ_REL);
        break;
    case 4:
        old->u32 = __atomic_exchange_n((uint32_t *)p, v->u32, __ATOMIC_ACQ_REL);
        break;
    default:
        old->u64 = __atomic_exchange_n((uint64_t *)p, v->u64, __ATOMIC_ACQ_REL);
        break;
    }
}

/* Integers add the same in two's complement whatever their sign. */
static void elem_add(void *p, size_t n, const union elem *v, union elem *old)
{
    switch (n) {
    case 1:
        old->u8 = __atomic_fetch_add((uint8_t *)p, v->u8, __ATOMIC_ACQ_REL);
        break;
    case 2:
        old->u16 = __atomic_fetch_add((uint16_t *)p, v->u16, __ATOMIC_ACQ_REL);
        break;
    case 4:
        old->u32 = __atomic_fetch_add((uint32_t *)p, v->u32, __ATOMIC_ACQ_REL);
        break;
    default:
        old->u64 = __atomic_fetch_add((uint64_t *)p, v->u64, __ATOMIC_ACQ_REL);
        break;
    }
}

static bool is_integer(enum pg_dtype dt)
{
    return dt >= PG_INT8 && dt <= PG_UINT64;
}

/* The bytes an element of base takes when CPU atomics update it: 1, 2, 4 or 8, or 0 for
 * the types that go under the spinlock (the pair types' packed and stored forms differ). */
static size_t atomic_size(enum pg_dtype base)
{
    size_t n;

    if (base == PG_DTYPE_NONE || (base >= PG_FLOAT_INT && base <= PG_LONG_DOUBLE_INT)) {
        return 0;
    }
    n = pg_dtype_size(base);
    return n == 1 || n == 2 || n == 4 || n == 8 ? n : 0;
}

/* One element at t (n bytes, aligned): in is the origin's value (NULL for MPI_NO_OP), old
 * gets the value before. */
static void atomic_elem(const struct shim_rma *op, size_t n, void *t, const unsigned char *in,
                        unsigned char *old)
{
    union elem v = {.u64 = 0}, o = {.u64 = 0}, nv;

    if (in) {
        memcpy(v.b, in, n);
    }
    if (op->kind == SHIM_AM_CAS) {
        memcpy(o.b, op->compare, n);
        elem_cas(t, n, &o, &v);
    } else if (op->op == SHIM_AM_NO_OP) {
        elem_load(t, n, &o);
    } else if (op->op == SHIM_AM_REPLACE) {
        elem_exchange(t, n, &v, &o);
    } else if (op->op == PG_OP_SUM && is_integer((enum pg_dtype)op->elem_dt)) {
        elem_add(t, n, &v, &o);
    } else {
        elem_load(t, n, &o);
        do {
            nv = o;
            pg_reduce_local(v.b, nv.b, 1, (enum pg_dtype)op->elem_dt, (enum pg_op)op->op);
        } while (!elem_cas(t, n, &o, &nv));
    }
    if (old) {
        memcpy(old, o.b, n);
    }
}

/* ---- accumulates ---- */

struct acc_arg {
    const struct shim_rma *op;
    unsigned char *target; /* the target's part */
    uint32_t *lock;        /* the target's spinlock */
    size_t n;              /* atomic_size of the target's element type */
    bool sends, fetches;
    bool held; /* the spinlock is held for the whole operation (direct_acc) */
    int rc; /* PGC_OK, or the spinlock's timeout: the rest is skipped */
    /* Staging of the origin's packed data and of the values before, aligned for any type. */
    union {
        unsigned char b[CHUNK];
        long double align;
    } in, old;
};

/* len bytes at t under the spinlock: in (packed origin data) combined into them, old gets
 * what they held. Copies through aligned staging, since t may be misaligned. */
static void locked_piece(struct acc_arg *a, unsigned char *t, size_t len)
{
    const struct shim_rma *op = a->op;
    unsigned char *was = a->old.b;

    memcpy(was, t, len);
    if (op->kind == SHIM_AM_CAS) {
        if (memcmp(was, op->compare, len) == 0) {
            memcpy(t, op->origin, len);
        }
    } else if (op->op == SHIM_AM_REPLACE) {
        memcpy(t, a->in.b, len);
    } else if (op->op != SHIM_AM_NO_OP) {
        size_t esize = pg_dtype_size((enum pg_dtype)op->elem_dt);
        /* The reduction writes into its second argument: the staged origin data, which is
         * not needed afterwards (in op old == old op in: every predefined op commutes). */
        pg_reduce_local(was, a->in.b, len / esize, (enum pg_dtype)op->elem_dt, (enum pg_op)op->op);
        memcpy(t, a->in.b, len);
    }
}

/* One step of at most CHUNK bytes of a piece: target bytes t, stream offset skip. */
static void acc_step(struct acc_arg *a, unsigned char *t, size_t len, size_t skip, bool atomics)
{
    const struct shim_rma *op = a->op;
    const unsigned char *in = NULL;
    unsigned char *old = a->fetches ? a->old.b : NULL;

    if (a->sends && op->kind != SHIM_AM_CAS) {
        shim_dtype_pack_partial(op->origin, op->ocount, op->otype, skip, a->in.b, len);
        in = a->in.b;
    } else if (op->kind == SHIM_AM_CAS) {
        in = op->origin;
    }
    if (atomics) {
        for (size_t e = 0; e < len; e += a->n) {
            atomic_elem(op, a->n, t + e, in ? in + e : NULL, old ? old + e : NULL);
        }
    } else if (a->held) {
        locked_piece(a, t, len);
    } else {
        a->rc = spin_lock(a->lock);
        if (a->rc != PGC_OK) {
            return;
        }
        locked_piece(a, t, len);
        spin_unlock(a->lock);
    }
    if (a->fetches) {
        shim_dtype_unpack_partial(a->old.b, op->rcount, op->rtype, skip, op->result, len);
    }
}

/* A piece of the target's ranges: atomics when its elements are aligned (all are then, the
 * piece holding whole elements), else the spinlock. */
static void acc_piece(void *arg, uint64_t off, uint64_t len, size_t skip)
{
    struct acc_arg *a = arg;
    unsigned char *t = a->target + off;
    bool atomics = a->n > 0 && (uintptr_t)t % a->n == 0;

    for (size_t done = 0; done < len && a->rc == PGC_OK; done += CHUNK) {
        size_t step = len - done < CHUNK ? (size_t)(len - done) : CHUNK;

        acc_step(a, t + done, step, skip + done, atomics);
    }
}

/* MAXLOC and MINLOC, on the pair types only (shim_win_ops.c): a pair's stored form has
 * padding (MPI_DOUBLE_INT: 12 bytes of data in a 16-byte struct) and the walk cuts an
 * MPI_SHORT_INT into two pieces (the short, the int after its padding), so the pieces hold
 * no whole pairs to reduce. These go through the packed stream instead, CHUNK bytes of whole
 * pairs at a time: the target's pairs packed out (and unpacked into the result when
 * fetching), reduced with the origin's by pg_reduce_loc_packed, unpacked back. The caller
 * holds the spinlock for the whole operation, as for every type without CPU atomics. */
static bool pair_loc(const struct shim_rma *op)
{
    return op->kind != SHIM_AM_CAS && (op->op == PG_OP_MAXLOC || op->op == PG_OP_MINLOC);
}

static void pair_acc(struct acc_arg *a, unsigned char *part)
{
    const struct shim_rma *op = a->op;
    enum pg_dtype dt = (enum pg_dtype)op->elem_dt;
    size_t ps = pg_pair_packed_size(dt), step = CHUNK / ps * ps;
    size_t total = op->tcount * op->ttype->size;
    unsigned char *t = part + op->disp;

    for (size_t skip = 0; skip < total; skip += step) {
        size_t len = total - skip < step ? total - skip : step;

        shim_dtype_pack_partial(t, op->tcount, op->ttype, skip, a->old.b, len);
        if (a->fetches) {
            shim_dtype_unpack_partial(a->old.b, op->rcount, op->rtype, skip, op->result, len);
        }
        shim_dtype_pack_partial(op->origin, op->ocount, op->otype, skip, a->in.b, len);
        (void)pg_reduce_loc_packed(a->old.b, a->in.b, len / ps, dt, (enum pg_op)op->op);
        shim_dtype_unpack_partial(a->in.b, op->tcount, op->ttype, skip, t, len);
    }
}

/* Fetch_and_op and compare_and_swap of one element from and to contiguous buffers: no
 * staging. */
static bool acc_single(const struct shim_rma *op, unsigned char *t, size_t n)
{
    if (op->tcount != 1 || op->ttype->size != n || !op->ttype->contig || n == 0 ||
        (uintptr_t)t % n != 0 || (op->otype && !op->otype->contig) ||
        (op->rtype && !op->rtype->contig)) {
        return false;
    }
    atomic_elem(op, n, t, op->kind == SHIM_AM_CAS || op->op != SHIM_AM_NO_OP ? op->origin : NULL,
                op->result);
    return true;
}

static int direct_acc(struct shim_win *w, const char *fn, const struct shim_rma *op)
{
    struct acc_arg *a;
    unsigned char *t = w->shm + w->offsets[op->target];
    size_t n = atomic_size(op->ttype->base);
    int rc;

    if (acc_single(op, t + op->disp, n)) {
        return MPI_SUCCESS;
    }
    a = malloc(sizeof(*a));
    if (!a) {
        return shim_error(w->comm, fn, MPI_ERR_NO_MEM, "no memory");
    }
    a->op = op;
    a->target = t;
    a->lock = &w->ctl[op->target].acc_lock;
    a->n = n;
    a->sends = op->kind == SHIM_AM_CAS || op->op != SHIM_AM_NO_OP;
    a->fetches = op->kind != SHIM_AM_ACC;
    /* A type without CPU atomics is done under the lock from its first byte to its last: an
     * element of MPI_SHORT_INT is two pieces (the short, then the int after its padding),
     * and a lock per piece let a concurrent MPI_NO_OP read one half old and one half new
     * (MPICH's rma/atomic_get_short_int). */
    a->held = n == 0;
    a->rc = a->held ? spin_lock(a->lock) : PGC_OK;
    if (a->rc == PGC_OK && pair_loc(op)) {
        pair_acc(a, t);
    } else if (a->rc == PGC_OK) {
        shim_win_walk(op, acc_piece, a);
    }
    if (a->held && a->rc != PGC_ERR_TIMEOUT) {
        spin_unlock(a->lock);
    }
    rc = a->rc;
    free(a);
    if (rc == PGC_ERR_TIMEOUT) {
        return shim_error(w->comm, fn, MPI_ERR_OTHER,
                          "the accumulate lock of rank %d was not free within %.0f s (a process "
                          "holding it may have died)",
                          op->target, pg_timeout());
    }
    return MPI_SUCCESS;
}

int shim_win_direct_op(struct shim_win *w, const char *fn, const struct shim_rma *op)
{
    if (op->kind == SHIM_AM_PUT || op->kind == SHIM_AM_GET) {
        shim_win_shm_copy(w, op);
        return MPI_SUCCESS;
    }
    return direct_acc(w, fn, op);
}
