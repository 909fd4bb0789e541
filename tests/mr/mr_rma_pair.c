/*
 * mr_rma_pair.c - accumulates of a pair type whose element has padding (MPI_SHORT_INT: a
 * short, 2 bytes of padding, an int) are atomic per element on the direct path (MPI-3.1
 * 11.7.1), found by MPICH's rma/atomic_get_short_int: one rank replaces the element with
 * {v, v} again and again while another reads it with MPI_Fetch_and_op(MPI_NO_OP); every
 * value read must be one that was written, both halves from the same write.
 */
#include "mrtest.h"

struct short_int {
    short a;
    int b;
};

#define ROUNDS 400
#define OPS 100

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
    return mrt_finish("mr_rma_pair");
}
