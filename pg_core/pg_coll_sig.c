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
 * Layout: kind in bits 8-11, op in bits 4-7 (PG_OP_* or SIG_OP_USER / SIG_OP_NONE), and
 * root + 1 modulo 16 in bits 0-3 (0: no root). Roots 16 apart look alike: a signature
 * catches the mismatches programs make, it is not a proof. The sequence number keeps the
 * other 18 bits of a tag: a rank would have to run 262,144 collectives ahead of another
 * (only roots of broadcasts and leaves of reductions can run ahead at all) for two of them
 * to share a tag.
 */
#include "config.h"

#include "pg_internal.h"
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

    describe(theirs, a, sizeof(a));
    describe(mine, b, sizeof(b));
    return mps_error(PGC_ERR_MISMATCH, "rank %d called %s where this rank called %s (the ranks "
                     "of a group must call the same collectives in the same order)", rank, a,
                     b);
}
