/*
 * mr_rma_pair.c - accumulates of a pair type whose element has padding (MPI_SHORT_INT: a
 * short, 2 bytes of padding, an int) are atomic per element on the direct path (MPI-3.1
 * 11.7.1), found by MPICH's rma/atomic_get_short_int: one rank replaces the element with
 * {v, v} again and again while another reads it with MPI_Fetch_and_op(MPI_NO_OP); every
 * value read must be one that was written, both halves from the same write. And an
 * accumulate that moves no data succeeds whatever its types (MPICH's rma/badrma): 0 MPI_INTs
 * into 0 MPI_DOUBLEs have the same, empty, type signature.
 *
 * MPI_MAXLOC and MPI_MINLOC accumulates on all six pair types (MPICH's rma/acc_pairtype,
 * MPI-3.1 11.3.4), on windows of every path (MPI_Win_allocate and _allocate_shared: direct
 * on one node, active messages with MPISHIM_RMA_DIRECT=0; MPI_Win_create: active messages),
 * with vector target types (a pair's pieces and padding are skipped) and contiguous ones of
 * thousands of pairs (several active messages, whose cuts must fall between pairs): every
 * rank accumulates into every rank at once, then one origin per target runs
 * MPI_Get_accumulate and MPI_Fetch_and_op on them. Every expected pair is computed here from
 * (rank, round, slot).
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stddef.h>

struct short_int {
    short a;
    int b;
};

#define ROUNDS 400
#define OPS 100

/* Zero elements of different types on the two sides: MPI_SUCCESS; 8 bytes of MPI_INT into
 * 8 bytes of MPI_DOUBLE: still MPI_ERR_TYPE. */
static void zero_accumulates_of_different_types(void)
{
    double buf[2] = {0, 0}, res[2];
    int ints[2] = {1, 2};
    MPI_Datatype empty;
    MPI_Win win;
    int target = mrt_rank == 0 ? 0 : mrt_rank - 1;

    CHECK_MPI(MPI_Type_contiguous(0, MPI_INT, &empty));
    CHECK_MPI(MPI_Type_commit(&empty));
    CHECK_MPI(MPI_Win_create(buf, sizeof(buf), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                             &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Accumulate(ints, 0, MPI_INT, target, 0, 0, MPI_DOUBLE, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(ints, 1, empty, target, 0, 0, MPI_DOUBLE, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(NULL, 0, MPI_DOUBLE, target, 0, 1, empty, MPI_PROD, win));
    CHECK_MPI(MPI_Get_accumulate(ints, 0, MPI_INT, res, 0, MPI_INT, target, 0, 0, MPI_DOUBLE,
                                 MPI_SUM, win));
    EXPECT_CLASS(MPI_Accumulate(ints, 2, MPI_INT, target, 0, 1, MPI_DOUBLE, MPI_SUM, win),
                 MPI_ERR_TYPE);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(buf[0] == 0 && buf[1] == 0, "the window changed: {%g, %g}", buf[0], buf[1]);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Type_free(&empty));
}

/* ---- MAXLOC and MINLOC on the pair types ---- */

struct p_float {
    float v;
    int i;
};
struct p_double {
    double v;
    int i;
};
struct p_long {
    long v;
    int i;
};
struct p_2int {
    int v;
    int i;
};
struct p_short {
    short v;
    int i;
};
struct p_ldouble {
    long double v;
    int i;
};

enum vkind { V_FLOAT, V_DOUBLE, V_LONG, V_INT, V_SHORT, V_LDOUBLE };

struct pair_kind {
    MPI_Datatype dt;
    const char *name;
    size_t size, int_off;
    enum vkind vk;
};

#define PAIR_KIND(S, DT, VK)                                                                       \
    {                                                                                              \
        DT, #DT, sizeof(struct S), offsetof(struct S, i), VK                                       \
    }

static const struct pair_kind kinds[] = {
    PAIR_KIND(p_float, MPI_FLOAT_INT, V_FLOAT),
    PAIR_KIND(p_double, MPI_DOUBLE_INT, V_DOUBLE),
    PAIR_KIND(p_long, MPI_LONG_INT, V_LONG),
    PAIR_KIND(p_2int, MPI_2INT, V_INT),
    PAIR_KIND(p_short, MPI_SHORT_INT, V_SHORT),
    PAIR_KIND(p_ldouble, MPI_LONG_DOUBLE_INT, V_LDOUBLE),
};

/* A pair as the test computes it: small integers, exact in every value type. */
struct pv {
    long v;
    int i;
};

#define NPAIRS 6000 /* per window: 36 KiB of packed MPI_SHORT_INT, several active messages */
#define ROUNDS_LOC 2
#define INIT_MAX (-1000) /* below every value accumulated with MAXLOC */
#define INIT_MIN 1000    /* above every value accumulated with MINLOC */

static void pair_set(const struct pair_kind *k, void *buf, size_t n, struct pv p)
{
    unsigned char *e = (unsigned char *)buf + n * k->size;

    switch (k->vk) {
    case V_FLOAT:
        ((struct p_float *)e)->v = (float)p.v;
        break;
    case V_DOUBLE:
        ((struct p_double *)e)->v = (double)p.v;
        break;
    case V_LONG:
        ((struct p_long *)e)->v = p.v;
        break;
    case V_INT:
        ((struct p_2int *)e)->v = (int)p.v;
        break;
    case V_SHORT:
        ((struct p_short *)e)->v = (short)p.v;
        break;
    case V_LDOUBLE:
        ((struct p_ldouble *)e)->v = (long double)p.v;
        break;
    }
    memcpy(e + k->int_off, &p.i, sizeof(int));
}

static struct pv pair_get(const struct pair_kind *k, const void *buf, size_t n)
{
    const unsigned char *e = (const unsigned char *)buf + n * k->size;
    struct pv p = {0, 0};

    switch (k->vk) {
    case V_FLOAT:
        p.v = (long)((const struct p_float *)e)->v;
        break;
    case V_DOUBLE:
        p.v = (long)((const struct p_double *)e)->v;
        break;
    case V_LONG:
        p.v = ((const struct p_long *)e)->v;
        break;
    case V_INT:
        p.v = ((const struct p_2int *)e)->v;
        break;
    case V_SHORT:
        p.v = ((const struct p_short *)e)->v;
        break;
    case V_LDOUBLE:
        p.v = (long)((const struct p_ldouble *)e)->v;
        break;
    }
    memcpy(&p.i, e + k->int_off, sizeof(int));
    return p;
}

/* MPI-3.1 5.9.4: the larger (MAXLOC) or smaller (MINLOC) value; on equal values the smaller
 * index. */
static struct pv loc(struct pv a, struct pv b, bool max)
{
    if (a.v != b.v) {
        return (max ? a.v > b.v : a.v < b.v) ? a : b;
    }
    return a.i < b.i ? a : b;
}

/* What rank r accumulates in round k into slot s (even slots MAXLOC, odd MINLOC): values
 * in -5..5, so ranks and rounds often tie and the index decides. */
static struct pv contribution(int r, int k, int s)
{
    return (struct pv){(long)((s * 7 + r * 13 + k * 5) % 11) - 5, 1000 * r + 100 * k + s % 7};
}

/* What the origin of the second phase sends with MINLOC to every slot. */
static struct pv second(int s)
{
    return (struct pv){(long)(s % 13) - 6, -1 - s % 3};
}

/* Slot s of every window after the first phase (every rank, every round). */
static struct pv after_first(int size, int s)
{
    bool max = s % 2 == 0;
    struct pv p = {max ? INIT_MAX : INIT_MIN, 0};

    for (int r = 0; r < size; r++) {
        for (int k = 0; k < ROUNDS_LOC; k++) {
            p = loc(p, contribution(r, k, s), max);
        }
    }
    return p;
}

/* The fetch_and_ops of the second phase: MAXLOC of {2000, 7} into slot 5 (replaces it) and
 * MINLOC of {its value, -100} into slot 6 (the smaller index wins the tie). */
#define FOP_MAX_SLOT 5
#define FOP_TIE_SLOT 6

static void check_pairs(const struct pair_kind *k, const char *win, const void *buf, size_t n,
                        struct pv (*want)(int size, int s), int size, const char *what)
{
    for (size_t s = 0; s < n; s++) {
        struct pv got = pair_get(k, buf, s), w = want(size, (int)s);

        CHECK(got.v == w.v && got.i == w.i,
              "%s on %s, %s: slot %zu holds {%ld, %d}, expected {%ld, %d}", k->name, win, what, s,
              got.v, got.i, w.v, w.i);
    }
}

static struct pv after_second(int size, int s)
{
    struct pv p = loc(after_first(size, s), second(s), false);

    if (s == FOP_MAX_SLOT) {
        return (struct pv){2000, 7};
    }
    if (s == FOP_TIE_SLOT) {
        p.i = -100;
    }
    return p;
}

/* First phase: every rank accumulates ROUNDS_LOC times into every rank, MAXLOC into the even
 * slots and MINLOC into the odd ones, through a vector type (every other pair). */
static void loc_first_phase(const struct pair_kind *k, MPI_Win win, int size, int rank)
{
    void *half = malloc(NPAIRS / 2 * k->size);
    MPI_Datatype every_other;

    CHECK_MPI(MPI_Type_vector(NPAIRS / 2, 1, 2, k->dt, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int round = 0; round < ROUNDS_LOC; round++) {
        for (int odd = 0; odd < 2; odd++) {
            for (int j = 0; j < NPAIRS / 2; j++) {
                pair_set(k, half, (size_t)j, contribution(rank, round, 2 * j + odd));
            }
            for (int t = 0; t < size; t++) {
                int target = (rank + t) % size;

                CHECK_MPI(MPI_Accumulate(half, NPAIRS / 2, k->dt, target, odd, 1, every_other,
                                         odd ? MPI_MINLOC : MPI_MAXLOC, win));
            }
            /* The origin buffer is reused next: complete what was issued from it. */
            CHECK_MPI(MPI_Win_fence(0, win));
        }
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK_MPI(MPI_Type_free(&every_other));
    free(half);
}

/* Second phase: rank r alone on rank r + 1's window, under an exclusive lock:
 * MPI_Get_accumulate(MINLOC) of all pairs (contiguous), whose result must be the first
 * phase's, then two MPI_Fetch_and_ops. */
static void loc_second_phase(const struct pair_kind *k, const char *wname, MPI_Win win, int size,
                             int rank)
{
    void *in = malloc(NPAIRS * k->size), *old = malloc(NPAIRS * k->size);
    union {
        unsigned char b[64];
        long double align;
    } one, got;
    int target = (rank + 1) % size;
    struct pv b6;

    for (int s = 0; s < NPAIRS; s++) {
        pair_set(k, in, (size_t)s, second(s));
    }
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win));
    CHECK_MPI(MPI_Get_accumulate(in, NPAIRS, k->dt, old, NPAIRS, k->dt, target, 0, NPAIRS, k->dt,
                                 MPI_MINLOC, win));
    CHECK_MPI(MPI_Win_flush(target, win));
    check_pairs(k, wname, old, NPAIRS, after_first, size, "MPI_Get_accumulate's result");
    pair_set(k, one.b, 0, (struct pv){2000, 7});
    CHECK_MPI(MPI_Fetch_and_op(one.b, got.b, k->dt, target, FOP_MAX_SLOT, MPI_MAXLOC, win));
    CHECK_MPI(MPI_Win_flush(target, win));
    {
        struct pv f = pair_get(k, got.b, 0),
                  w = loc(after_first(size, FOP_MAX_SLOT), second(FOP_MAX_SLOT), false);

        CHECK(f.v == w.v && f.i == w.i,
              "%s on %s: MPI_Fetch_and_op fetched {%ld, %d}, expected {%ld, %d}", k->name, wname,
              f.v, f.i, w.v, w.i);
    }
    b6 = loc(after_first(size, FOP_TIE_SLOT), second(FOP_TIE_SLOT), false);
    pair_set(k, one.b, 0, (struct pv){b6.v, -100});
    CHECK_MPI(MPI_Fetch_and_op(one.b, got.b, k->dt, target, FOP_TIE_SLOT, MPI_MINLOC, win));
    CHECK_MPI(MPI_Win_unlock(target, win));
    free(in);
    free(old);
}

/* Both phases on one window of kind k; mine is this rank's part. */
static void loc_on_window(const struct pair_kind *k, const char *wname, MPI_Win win, void *mine,
                          int size, int rank)
{
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    for (int s = 0; s < NPAIRS; s++) {
        pair_set(k, mine, (size_t)s, (struct pv){s % 2 ? INIT_MIN : INIT_MAX, 0});
    }
    CHECK_MPI(MPI_Win_unlock(rank, win));
    loc_first_phase(k, win, size, rank);
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_pairs(k, wname, mine, NPAIRS, after_first, size, "after every rank's accumulates");
    CHECK_MPI(MPI_Win_unlock(rank, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    loc_second_phase(k, wname, win, size, rank);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_pairs(k, wname, mine, NPAIRS, after_second, size, "after the second phase");
    CHECK_MPI(MPI_Win_unlock(rank, win));
}

static void loc_accumulates_of_pairs(int size, int rank)
{
    MPI_Comm node;
    int nsize;

    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_Comm_size(node, &nsize);
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        const struct pair_kind *k = &kinds[i];
        MPI_Aint bytes = (MPI_Aint)(NPAIRS * k->size);
        void *mine;
        MPI_Win win;

        CHECK_MPI(
            MPI_Win_allocate(bytes, (int)k->size, MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win));
        loc_on_window(k, "MPI_Win_allocate", win, mine, size, rank);
        CHECK_MPI(MPI_Win_free(&win));
        CHECK_MPI(MPI_Alloc_mem(bytes, MPI_INFO_NULL, &mine));
        CHECK_MPI(MPI_Win_create(mine, bytes, (int)k->size, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        loc_on_window(k, "MPI_Win_create", win, mine, size, rank);
        CHECK_MPI(MPI_Win_free(&win));
        CHECK_MPI(MPI_Free_mem(mine));
        if (nsize == size) {
            CHECK_MPI(MPI_Win_allocate_shared(bytes, (int)k->size, MPI_INFO_NULL, MPI_COMM_WORLD,
                                              &mine, &win));
            loc_on_window(k, "MPI_Win_allocate_shared", win, mine, size, rank);
            CHECK_MPI(MPI_Win_free(&win));
        }
    }
    CHECK_MPI(MPI_Comm_free(&node));
}

int main(int argc, char **argv)
{
    struct short_int *base, v, got[OPS];
    MPI_Win win;
    int size, writer, reader, torn = 0;

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    writer = size - 1;
    reader = size > 2 ? 1 : 0;
    CHECK_MPI(MPI_Win_allocate(sizeof(*base), sizeof(*base), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win));
    base->a = 0;
    base->b = 0;
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int r = 0; r < ROUNDS && size > 1; r++) {
        for (int i = 0; i < OPS; i++) {
            int x = 70000 + r * OPS + i; /* b outgrows a short: a holds its low 16 bits */
            if (mrt_rank == writer) {
                v.a = (short)x;
                v.b = x;
                CHECK_MPI(MPI_Accumulate(&v, 1, MPI_SHORT_INT, 0, 0, 1, MPI_SHORT_INT,
                                         MPI_REPLACE, win));
            }
            if (mrt_rank == reader)
                CHECK_MPI(MPI_Fetch_and_op(&v, &got[i], MPI_SHORT_INT, 0, 0, MPI_NO_OP, win));
        }
        /* A fetched value is the origin's only once the epoch completes (MPI-3.1 11.5.4):
         * before the fence, got[] may still hold what the last round put there. */
        CHECK_MPI(MPI_Win_fence(0, win));
        for (int i = 0; i < OPS && mrt_rank == reader; i++)
            torn += got[i].a != (short)got[i].b;
    }
    CHECK(torn == 0, "%d of %d reads saw halves of different writes", torn, ROUNDS * OPS);
    if (mrt_rank == 0 && size > 1) {
        int last = 70000 + ROUNDS * OPS - 1;
        CHECK(base->b == last && base->a == (short)last, "final {%d, %d}, expected {%d, %d}",
              base->a, base->b, (short)last, last);
    }
    CHECK_MPI(MPI_Win_free(&win));
    zero_accumulates_of_different_types();
    loc_accumulates_of_pairs(size, mrt_rank);
    return mrt_finish("mr_rma_pair");
}
