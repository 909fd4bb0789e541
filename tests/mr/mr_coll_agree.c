/*
 * mr_coll_agree.c - blocking collectives whose ranks describe the same type signature with
 * different datatypes: contiguous on some ranks, a strided vector on others. MPI allows it
 * (only the signatures must match), and every rank must take the same path: a rank that
 * chose shared memory or the direct path from its own layout while another ran a schedule
 * would never meet it (the bug this test was written for: such a bcast hung until
 * MPISHIM_TIMEOUT). Each collective runs at sizes on both sides of the shared-memory and
 * direct limits; tests/mr.list runs it with MPISHIM_COLL_SHM=0 as well.
 */
#include "mrtest.h"

#include <stdint.h>

/* Element counts: within one shared-memory slot, past the direct limit (2 KiB of ints), and
 * large enough for the scheduled algorithms that split the vector. */
static const int sizes[] = {1, 4, 500, 700, 5000, 70000};
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

static int rank, nranks;

/* Whether this rank uses the strided layout in a case: it alternates with the rank and the
 * case, so every rank count mixes both, and root and non-roots both try each. */
static int strided(int which)
{
    return (rank + which) % 2 == 1;
}

/* The value element i of rank r's contribution holds in case c. */
static int32_t value(int c, int r, int i)
{
    return (int32_t)((c * 131 + r * 17 + i * 7) % 1000 - 400);
}

/* A layout for n ints: contiguous, or every other int of a buffer twice as long, whose
 * gaps must be left alone. */
struct layout {
    int32_t *buf;
    int n, count;
    MPI_Datatype type;
    int strided;
};

static void layout_make(struct layout *l, int n, int is_strided)
{
    l->n = n;
    l->strided = is_strided;
    l->buf = malloc(sizeof(int32_t) * (size_t)n * 2);
    CHECK(l->buf != NULL, "no memory for %d ints", n);
    for (int i = 0; i < 2 * n; i++) {
        l->buf[i] = -77777;
    }
    if (is_strided) {
        CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_INT32_T, &l->type));
        CHECK_MPI(MPI_Type_commit(&l->type));
        l->count = 1;
    } else {
        l->type = MPI_INT32_T;
        l->count = n;
    }
}

static int32_t *layout_at(struct layout *l, int i)
{
    return &l->buf[l->strided ? 2 * i : i];
}

/* Checks element i against want, and that the gaps of a strided layout are untouched. */
static void layout_check(struct layout *l, const char *what, int n_expected,
                         int32_t (*want)(int c, int i), int c)
{
    for (int i = 0; i < n_expected; i++) {
        CHECK(*layout_at(l, i) == want(c, i), "%s n=%d: element %d is %d, expected %d", what,
              l->n, i, *layout_at(l, i), want(c, i));
        if (l->strided) {
            CHECK(l->buf[2 * i + 1] == -77777, "%s n=%d: gap %d overwritten", what, l->n, i);
        }
    }
}

static void layout_free(struct layout *l)
{
    if (l->strided) {
        MPI_Type_free(&l->type);
    }
    free(l->buf);
}

/* n ints of stride 2 with an extent of 2n ints, so that blocks of it follow each other in
 * the strided layout (a plain vector's extent ends at its last int). */
static MPI_Datatype strided_block(int n)
{
    MPI_Datatype v, r;

    CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_INT32_T, &v));
    CHECK_MPI(MPI_Type_create_resized(v, 0, (MPI_Aint)(2 * (size_t)n * sizeof(int32_t)), &r));
    CHECK_MPI(MPI_Type_commit(&r));
    MPI_Type_free(&v);
    return r;
}

static int bcast_root;
static int32_t want_bcast(int c, int i)
{
    return value(c, bcast_root, i);
}

static void check_bcast(int c, int n, int root)
{
    struct layout l;

    layout_make(&l, n, strided(c + root));
    if (rank == root) {
        for (int i = 0; i < n; i++) {
            *layout_at(&l, i) = value(c, root, i);
        }
    }
    CHECK_MPI(MPI_Bcast(l.buf, l.count, l.type, root, MPI_COMM_WORLD));
    bcast_root = root;
    layout_check(&l, "bcast", n, want_bcast, c);
    layout_free(&l);
}

static int32_t want_sum(int c, int i)
{
    int32_t s = 0;

    for (int r = 0; r < nranks; r++) {
        s += value(c, r, i);
    }
    return s;
}

/* Allreduce (root < 0) or reduce; in_place reads the input from the output buffer. */
static void check_reduction(int c, int n, int root, int in_place)
{
    struct layout in, out;
    int gets = root < 0 || rank == root;

    /* One datatype describes both buffers of a reduction: in place, the output may differ
     * from the input's layout, which the other ranks use. */
    layout_make(&in, n, strided(c));
    layout_make(&out, n, in_place ? strided(c + 1) : strided(c));
    for (int i = 0; i < n; i++) {
        *layout_at(&in, i) = value(c, rank, i);
        *layout_at(&out, i) = value(c, rank, i);
    }
    /* Send and receive types may differ on one rank too: same signature. */
    if (in_place && gets) {
        if (root < 0) {
            CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out.buf, out.count, out.type, MPI_SUM,
                                    MPI_COMM_WORLD));
        } else {
            CHECK_MPI(MPI_Reduce(MPI_IN_PLACE, out.buf, out.count, out.type, MPI_SUM, root,
                                 MPI_COMM_WORLD));
        }
    } else if (root < 0) {
        /* An allreduce's send and receive types must describe the same signature; here
         * both use the input's type so only the ranks differ. */
        struct layout o2;
        layout_make(&o2, n, strided(c));
        CHECK_MPI(MPI_Allreduce(in.buf, o2.buf, in.count, in.type, MPI_SUM, MPI_COMM_WORLD));
        layout_check(&o2, "allreduce", n, want_sum, c);
        layout_free(&o2);
        layout_free(&in);
        layout_free(&out);
        return;
    } else {
        CHECK_MPI(MPI_Reduce(in.buf, rank == root ? out.buf : NULL, in.count, in.type, MPI_SUM,
                             root, MPI_COMM_WORLD));
    }
    if (gets) {
        layout_check(&out, root < 0 ? "allreduce in place" : "reduce", n, want_sum, c);
    }
    layout_free(&in);
    layout_free(&out);
}

/* Allgather: block r of the result is rank r's n ints. */
static int32_t want_gathered(int c, int i)
{
    int per = c >> 8;
    return value(c & 255, i / per, i % per);
}

static void check_allgather(int c, int n)
{
    struct layout in, out;

    layout_make(&in, n, strided(c));
    layout_make(&out, n * nranks, strided(c + 1));
    for (int i = 0; i < n; i++) {
        *layout_at(&in, i) = value(c, rank, i);
    }
    if (out.strided) {
        /* One block of the result is n elements of a vector type of stride 2: n of them in
         * a row make the strided layout of n * nranks ints. */
        MPI_Datatype one = strided_block(n);
        CHECK_MPI(MPI_Allgather(in.buf, in.count, in.type, out.buf, 1, one, MPI_COMM_WORLD));
        MPI_Type_free(&one);
    } else {
        CHECK_MPI(MPI_Allgather(in.buf, in.count, in.type, out.buf, n, MPI_INT32_T,
                                MPI_COMM_WORLD));
    }
    layout_check(&out, "allgather", n * nranks, want_gathered, c | n << 8);
    layout_free(&in);
    layout_free(&out);
}

/* Alltoall: block r of my result is the block rank r addressed to me. */
static int32_t want_alltoall(int c, int i)
{
    int per = c >> 16, me = (c >> 8) & 255;
    return value(c & 255, i / per, me * per + i % per);
}

static void check_alltoall(int c, int n)
{
    struct layout in, out;
    MPI_Datatype one = strided_block(n);

    layout_make(&in, n * nranks, strided(c));
    layout_make(&out, n * nranks, strided(c + 1));
    for (int i = 0; i < n * nranks; i++) {
        *layout_at(&in, i) = value(c, rank, i);
    }
    /* A strided layout's block is n elements of stride 2: one `one` each. */
    CHECK_MPI(MPI_Alltoall(in.buf, in.strided ? 1 : n, in.strided ? one : MPI_INT32_T, out.buf,
                           out.strided ? 1 : n, out.strided ? one : MPI_INT32_T,
                           MPI_COMM_WORLD));
    MPI_Type_free(&one);
    layout_check(&out, "alltoall", n * nranks, want_alltoall, c | rank << 8 | n << 16);
    layout_free(&in);
    layout_free(&out);
}

/* Reduce_scatter_block: my n ints are the sum of everyone's block for me. */
static int32_t want_scattered(int c, int i)
{
    int per = c >> 16, me = (c >> 8) & 255;
    int32_t s = 0;

    for (int r = 0; r < nranks; r++) {
        s += value(c & 255, r, me * per + i);
    }
    return s;
}

static void check_reduce_scatter_block(int c, int n)
{
    struct layout in, out;

    layout_make(&in, n * nranks, strided(c));
    layout_make(&out, n, strided(c));
    for (int i = 0; i < n * nranks; i++) {
        *layout_at(&in, i) = value(c, rank, i);
    }
    /* recvcount elements of one type describe both sides: n ints, strided or not. */
    if (in.strided) {
        MPI_Datatype one = strided_block(n);
        CHECK_MPI(MPI_Reduce_scatter_block(in.buf, out.buf, 1, one, MPI_SUM, MPI_COMM_WORLD));
        MPI_Type_free(&one);
    } else {
        CHECK_MPI(MPI_Reduce_scatter_block(in.buf, out.buf, n, MPI_INT32_T, MPI_SUM,
                                           MPI_COMM_WORLD));
    }
    layout_check(&out, "reduce_scatter_block", n, want_scattered, c | rank << 8 | n << 16);
    layout_free(&in);
    layout_free(&out);
}

int main(int argc, char **argv)
{
    int c = 0;

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    rank = mrt_rank;
    for (int s = 0; s < NSIZES; s++) {
        int n = sizes[s];
        for (int root = 0; root < nranks; root++, c++) {
            check_bcast(c % 200, n, root);
            check_reduction(c % 200, n, root, 0);
            check_reduction(c % 200, n, root, 1);
        }
        check_reduction(c % 200, n, -1, 0);
        check_reduction(c % 200, n, -1, 1);
        c++;
        if (n <= 5000) {
            check_allgather(c % 200, n);
            check_alltoall(c % 200, n);
            check_reduce_scatter_block(c % 200, n);
        }
        c++;
    }
    return mrt_finish("mr_coll_agree");
}
