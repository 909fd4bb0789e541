/*
 * pg_coll_steps.h - the peers and the order of the collective algorithms that run in two
 * forms: recorded as a schedule's steps (pg_coll_<kind>_<algo>.c, for the non-blocking calls
 * and the large blocking ones) and run at once from the caller's stack (pg_coll_direct.c,
 * small blocking calls, where building a schedule would cost more than the messages). Both
 * forms must send the same messages in the same order, since one rank may run one while
 * its peers run the other (pg_coll.c): so which peer a rank talks to at each step is
 * computed here, once, and each form only says what a step does (post a message, or record
 * it). The functions are inline and hold no state: the direct forms cost what they did.
 */
#ifndef PG_COLL_STEPS_H
#define PG_COLL_STEPS_H

#include <stdbool.h>

/* ---- binomial tree (broadcast, reduce) ----
 * Ranks are numbered from the tree's root: vr = (rank - base + n) % n. The parent of
 * vr != 0 is vr - top and its children are vr + m for each power of two m < top with
 * vr + m < n, where top (pg_tree_top) is the lowest set bit of vr, or for the root the
 * least power of two >= n. A broadcast walks the tree down (parent first, then the
 * children, the largest subtree first); a reduce walks it up (the children, the smallest
 * subtree first, then the parent). */
static inline int pg_tree_top(int vr, int n)
{
    /* Bit arithmetic, not a loop over the bits: the direct forms at 1 rank measured 9
     * instructions a call more with the loop (bench/icount bcast 8: 274 -> 283). */
    if (vr != 0) {
        return vr & -vr;
    }
    return n > 1 ? 2 << (31 - __builtin_clz((unsigned)(n - 1))) : 1;
}

/* The group rank of tree rank vr. */
static inline int pg_tree_rank(int vr, int base, int n)
{
    return (vr + base) % n;
}

/* A reduce's tree is rooted at its root for a commutative op; a non-commutative one is
 * rooted at 0 (so that each partial result covers a contiguous range of ranks, in order)
 * and its result then goes from rank 0 to the root. */
static inline int pg_reduce_tree_base(bool commutative, int root)
{
    return commutative ? root : 0;
}

/* ---- dissemination (barrier) ----
 * Round k (k = 1, 2, 4, ... < n): send to rank + k, receive from rank - k. */
static inline int pg_dissem_to(int rank, int k, int n)
{
    return (rank + k) % n;
}

static inline int pg_dissem_from(int rank, int k, int n)
{
    return (rank - k + n) % n;
}

/* ---- the non-power-of-two fold of the allreduce algorithms (recursive doubling,
 * Rabenseifner; Thakur, Rabenseifner, Gropp 2005) ----
 * With p the largest power of two <= n and rem = n - p, each even rank r < 2 * rem hands
 * its data to r + 1 (which combines, lower operand first) and waits for the result, so that
 * p ranks remain; they run the algorithm among themselves, numbered vr. */
struct pg_fold {
    int p, rem;
    int vr; /* my rank among the p that remain, or -1: folded out (partner r + 1) */
};

static inline struct pg_fold pg_fold_plan(int n, int r)
{
    struct pg_fold f = {.p = 1};

    while (f.p * 2 <= n) {
        f.p *= 2;
    }
    f.rem = n - f.p;
    if (r < 2 * f.rem && r % 2 == 0) {
        f.vr = -1;
    } else {
        f.vr = r < 2 * f.rem ? r / 2 : r - f.rem;
    }
    return f;
}

/* Whether rank r, one of those that remain, takes over a folded-out partner's data (then
 * its partner is r - 1, which gets the result back at the end). */
static inline bool pg_fold_takes(const struct pg_fold *f, int r)
{
    return r < 2 * f->rem;
}

/* The real rank of the rank numbered vr among the p that remain. */
static inline int pg_fold_real_rank(const struct pg_fold *f, int vr)
{
    return vr < f->rem ? vr * 2 + 1 : vr + f->rem;
}

#endif
