/*
 * mr_rma_pair.c - accumulates of a pair type whose element has padding (MPI_SHORT_INT: a
 * short, 2 bytes of padding, an int) are atomic per element on the direct path (MPI-3.1
 * 11.7.1), found by MPICH's rma/atomic_get_short_int: one rank replaces the element with
 * {v, v} again and again while another reads it with MPI_Fetch_and_op(MPI_NO_OP); every
 * value read must be one that was written, both halves from the same write. And an
 * accumulate that moves no data succeeds whatever its types (MPICH's rma/badrma): 0 MPI_INTs
 * into 0 MPI_DOUBLEs have the same, empty, type signature.
 */
#include "mrtest.h"

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

int main(int argc, char **argv)
{
    struct short_int *base, v, got;
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
            if (mrt_rank == reader) {
                CHECK_MPI(MPI_Fetch_and_op(&v, &got, MPI_SHORT_INT, 0, 0, MPI_NO_OP, win));
                torn += got.a != (short)got.b;
            }
        }
        CHECK_MPI(MPI_Win_fence(0, win));
    }
    CHECK(torn == 0, "%d of %d reads saw halves of different writes", torn, ROUNDS * OPS);
    if (mrt_rank == 0 && size > 1) {
        int last = 70000 + ROUNDS * OPS - 1;
        CHECK(base->b == last && base->a == (short)last, "final {%d, %d}, expected {%d, %d}",
              base->a, base->b, (short)last, last);
    }
    CHECK_MPI(MPI_Win_free(&win));
    zero_accumulates_of_different_types();
    return mrt_finish("mr_rma_pair");
}
