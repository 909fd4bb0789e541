/*
 * pg_coll_sig.c - collective signatures: what every rank of a legal program agrees on about
 * a collective (its kind, its op, its root), packed into PG_COLL_SIG_BITS bits.
 *
 * They travel at no cost: in the low bits of every collective message's tag, beside the
 * group's sequence number, and in the word of every shared-memory slot that already held
 * the byte count. Two ranks that called different collectives at the same point of a
 * group's sequence then never match each other's messages; the first rank that sees the
 * other's message or slot fails its call with a message naming both sides (pg_p2p.c,
 * pg_coll_shm.c) instead of reducing a broadcast's bytes into a sum.
 *
 * Layout: the poison bit in bit 12 (pg.h: a rank standing in for a bad buffer), kind in
 * bits 8-11, op in bits 4-7 (PG_OP_* or SIG_OP_USER / SIG_OP_NONE), and root + 1 modulo 16
 * in bits 0-3 (0: no root). Roots 16 apart look alike: a signature catches the mismatches
 * programs make, it is not a proof. The sequence number keeps the other 17 bits of a tag:
 * a rank would have to run 131,072 collectives ahead of another (only roots of broadcasts
 * and leaves of reductions can run ahead at all) for two of them to share a tag.
 */
#include "config.h"

#include "pg_internal.h"
#include "pg_coll_hier.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdio.h>

#define SIG_OP_USER 15u
#define SIG_OP_NONE 14u

_Static_assert(PG_COLL_KINDS <= 16, "a signature holds 4 bits of kind");
_Static_assert(PG_OP_COUNT <= 14, "a signature holds 4 bits of op");

static const char *const kind_names[PG_COLL_KINDS] = {
    [PG_COLL_OTHER] = "a collective",
    [PG_COLL_BARRIER] = "barrier",
    [PG_COLL_BCAST] = "bcast",
    [PG_COLL_REDUCE] = "reduce",
    [PG_COLL_ALLREDUCE] = "allreduce",
    [PG_COLL_ALLGATHER] = "allgather",
    [PG_COLL_ALLTOALL] = "alltoall",
    [PG_COLL_GATHER] = "gather",
    [PG_COLL_GATHERV] = "gatherv",
    [PG_COLL_SCATTER] = "scatter",
    [PG_COLL_SCATTERV] = "scatterv",
    [PG_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [PG_COLL_REDUCE_SCATTER_BLOCK] = "reduce_scatter_block",
    [PG_COLL_SCAN] = "scan",
    [PG_COLL_EXSCAN] = "exscan",
    [PG_COLL_NEIGHBOR] = "a neighbour collective",
};

uint32_t pg_coll_sig(enum pg_coll_kind kind, const struct pg_op_spec *op, int root)
{
    uint32_t o = !op ? SIG_OP_NONE : op->user_fn ? SIG_OP_USER : (uint32_t)op->op & 15u;

    return ((uint32_t)kind & 15u) << 8 | o << 4 | ((uint32_t)(root + 1) & 15u);
}

const char *pg_coll_kind_name(unsigned kind)
{
    return kind < PG_COLL_KINDS && kind_names[kind] ? kind_names[kind] : "?";
}

/* "allreduce(op=max)", "bcast(root=3)" or "barrier". */
static void describe(uint32_t sig, char *buf, size_t len)
{
    unsigned kind = sig >> 8 & 15u, op = sig >> 4 & 15u, root = sig & 15u;
    const char *name = pg_coll_kind_name(kind);
    int n = snprintf(buf, len, "%s", name);

    if (op != SIG_OP_NONE && n >= 0 && (size_t)n < len) {
        n += snprintf(buf + n, len - (size_t)n, "(op=%s%s", op == SIG_OP_USER ? "user" :
                      op < PG_OP_COUNT ? pg_op_name((enum pg_op)op) : "?",
                      root ? "," : ")");
    }
    if (root && n >= 0 && (size_t)n < len) {
        snprintf(buf + n, len - (size_t)n, "%sroot=%u (mod 16))", op != SIG_OP_NONE ? " " : "(",
                 root - 1);
    }
}

int pg_coll_mismatch(int rank, uint32_t theirs, uint32_t mine)
{
    char a[64], b[64];

    if ((theirs ^ mine) == PG_COLL_POISON) {
        describe(mine, b, sizeof(b));
        return (theirs & PG_COLL_POISON)
                   ? mps_error(PGC_ERR_BUFFER, "rank %d gave up on this %s: its buffer was "
                               "invalid, or ranks called different collectives (its own "
                               "error names the cause)", rank, b)
                   : mps_error(PGC_ERR_BUFFER, "this rank stands in for an invalid buffer");
    }
    describe(theirs, a, sizeof(a));
    describe(mine, b, sizeof(b));
    return mps_error(PGC_ERR_MISMATCH, "rank %d called %s where this rank called %s (the ranks "
                     "of a group must call the same collectives in the same order)", rank, a,
                     b);
}

/* ---- poisoned collectives (pg.h) ---- */

struct pg_poison pg_poison;

static void poison_set(uint64_t ctx, uint32_t seq, int src)
{
    pg_poison.ctx = ctx;
    pg_poison.seq = seq;
    pg_poison.src = src;
    __atomic_store_n(&pg_poison.on, true, __ATOMIC_RELAXED);
}

/* ---- aborted collectives (pg_p2p.c) ---- */

struct pg_aborts pg_aborts;

const struct pg_abort_note *pg_coll_abort_find(uint64_t ctx, uint32_t seq)
{
    for (int i = 0; i < PG_ABORTS; i++) {
        if (pg_aborts.rec[i].ctx == ctx && pg_aborts.rec[i].seq == seq) {
            return &pg_aborts.rec[i].note;
        }
    }
    return NULL;
}

bool pg_coll_abort_note(uint64_t ctx, uint32_t seq, const struct pg_abort_note *n)
{
    struct pg_abort_rec *r = &pg_aborts.rec[pg_aborts.n % PG_ABORTS];

    if (pg_coll_abort_of(ctx, seq)) {
        return false;
    }
    *r = (struct pg_abort_rec){ctx, seq, *n};
    /* Past UINT_MAX records, stay nonzero (the inline check reads 0 as none). */
    __atomic_store_n(&pg_aborts.n, pg_aborts.n + 1 ? pg_aborts.n + 1 : PG_ABORTS,
                     __ATOMIC_RELAXED);
    return true;
}

int pg_coll_aborted(const struct pg_abort_note *n)
{
    char a[64], b[64];

    describe(n->theirs, a, sizeof(a));
    describe(n->mine, b, sizeof(b));
    return mps_error(PGC_ERR_MISMATCH, "rank %d found that rank %d called %s where it called "
                     "%s (the ranks of a group must call the same collectives in the same "
                     "order)", n->found_by, n->other, a, b);
}

void pg_coll_stand_in(struct pg_group *g, int err)
{
    PG_LOCK();
    g->poison_next = err;
    poison_set(pg_ctx_coll(g), g->coll_seq & ((1u << PG_COLL_SEQ_BITS) - 1), g->rank);
    PG_UNLOCK();
}

int pg_coll_stand_in_end(struct pg_group *g)
{
    int err = g->poison_next;

    g->poison_next = 0;
    return err;
}

void pg_coll_poison_note(uint64_t ctx, int tag, int src)
{
    uint32_t seq = (uint32_t)tag >> PG_COLL_SIG_BITS;

    if (!pg_poison.on || pg_poison.ctx != ctx || pg_poison.seq != seq) {
        poison_set(ctx, seq, src);
    }
}

void pg_coll_poison_forget(uint64_t ctx)
{
    if (pg_poison.ctx == ctx) {
        __atomic_store_n(&pg_poison.on, false, __ATOMIC_RELAXED);
    }
    for (int i = 0; i < PG_ABORTS; i++) {
        if (pg_aborts.rec[i].ctx == ctx) {
            pg_aborts.rec[i].ctx = 0;
        }
    }
}

bool pg_coll_poison_ok(struct pg_group *g)
{
    return !pg_hier_on(g) || pg_hier_idle(g);
}

int pg_coll_poison_claim(struct pg_group *g)
{
    const uint32_t mask = (1u << PG_COLL_SEQ_BITS) - 1;
    int rc = PGC_OK;

    PG_LOCK();
    if (pg_poison.on && pg_poison.ctx == pg_ctx_coll(g)) {
        bool mine = pg_poison.seq == ((g->coll_seq - 1) & mask);

        if (mine && pg_poison.src != g->rank) {
            rc = mps_error(PGC_ERR_BUFFER, "the data from rank %d stands in for a rank's "
                           "failed part: one passed an invalid buffer, or ranks called "
                           "different collectives (its own error names the cause)",
                           pg_poison.src);
        }
        __atomic_store_n(&pg_poison.on, false, __ATOMIC_RELAXED);
    }
    PG_UNLOCK();
    return rc;
}
