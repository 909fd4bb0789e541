/* Bad arguments to gather(v), scatter(v), allgather(v), alltoall(v,w),
 * reduce_scatter(_block), scan and exscan under MPI_ERRORS_RETURN: each call returns the
 * right error class on every rank (so that no rank starts a collective the others skip),
 * and the communicator keeps working afterwards. */
#include "mrtest.h"

#include <string.h>

static int rank, size;

static int sb[64], rb[64], counts[16], displs[16];
static MPI_Datatype types[16];

static void reset(void)
{
    for (int i = 0; i < 16; i++) {
        counts[i] = 1;
        displs[i] = i;
        types[i] = MPI_INT;
    }
}

static void counts_and_roots(void)
{
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request req;

    reset();
    EXPECT_CLASS(MPI_Gather(sb, -1, MPI_INT, rb, 1, MPI_INT, 0, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Gather(sb, 1, MPI_INT, rb, 1, MPI_INT, size, w), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Igather(sb, 1, MPI_INT, rb, 1, MPI_INT, -1, w, &req), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Scatter(sb, 1, MPI_INT, rb, 1, MPI_INT, size + 2, w), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Iscatterv(sb, counts, displs, MPI_INT, rb, 1, MPI_INT, -3, w, &req),
                 MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Gatherv(sb, 1, MPI_INT, rb, counts, displs, MPI_INT, size, w), MPI_ERR_ROOT);
    /* A negative entry in the root's count array; the others pass a negative count. */
    counts[size - 1] = -2;
    EXPECT_CLASS(MPI_Gatherv(sb, rank == 0 ? 1 : -1, MPI_INT, rb, counts, displs, MPI_INT, 0, w),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Scatterv(sb, counts, displs, MPI_INT, rb, rank == 0 ? 1 : -1, MPI_INT, 0, w),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Allgatherv(sb, 1, MPI_INT, rb, counts, displs, MPI_INT, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Alltoallv(sb, counts, displs, MPI_INT, rb, displs, displs, MPI_INT, w),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Ialltoallv(sb, displs, displs, MPI_INT, rb, counts, displs, MPI_INT, w, &req),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Alltoallw(sb, counts, displs, types, rb, displs, displs, types, w),
                 MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Reduce_scatter(sb, rb, counts, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    reset();
    EXPECT_CLASS(MPI_Allgather(sb, 1, MPI_INT, rb, -4, MPI_INT, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Alltoall(sb, -1, MPI_INT, rb, 1, MPI_INT, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Ireduce_scatter_block(sb, rb, -1, MPI_INT, MPI_SUM, w, &req), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Scan(sb, rb, -1, MPI_INT, MPI_SUM, w), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Iexscan(sb, rb, -7, MPI_INT, MPI_SUM, w, &req), MPI_ERR_COUNT);
}

static void bad_types_and_ops(void)
{
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Datatype uncommitted;
    MPI_Request req;
    double d[4];

    reset();
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &uncommitted));
    EXPECT_CLASS(MPI_Allgather(sb, 1, MPI_DATATYPE_NULL, rb, 1, MPI_INT, w), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Iallgather(sb, 1, MPI_INT, rb, 1, uncommitted, w, &req), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Gather(sb, 1, uncommitted, rb, 1, MPI_INT, 0, w), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Scatter(sb, 1, MPI_INT, rb, 1, MPI_DATATYPE_NULL, 0, w), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Alltoall(sb, 1, MPI_INT, rb, 1, (MPI_Datatype)0x1234, w), MPI_ERR_TYPE);
    types[size - 1] = uncommitted;
    EXPECT_CLASS(MPI_Alltoallw(sb, counts, displs, types, rb, counts, displs, types, w),
                 MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Scan(sb, rb, 1, uncommitted, MPI_SUM, w), MPI_ERR_TYPE);
    MPI_Type_free(&uncommitted);
    reset();
    EXPECT_CLASS(MPI_Scan(sb, rb, 1, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Iscan(sb, rb, 1, MPI_INT, (MPI_Op)0x7777, w, &req), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Exscan(d, d + 1, 1, MPI_DOUBLE, MPI_BXOR, w), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Reduce_scatter_block(d, d + 1, 1, MPI_DOUBLE, MPI_BAND, w), MPI_ERR_OP);
    EXPECT_CLASS(MPI_Reduce_scatter(sb, rb, counts, MPI_INT, MPI_OP_NULL, w), MPI_ERR_OP);
}

/* MPI_IN_PLACE where the standard does not allow it. For the rooted forms every rank misuses
 * it in its own way, so that every rank fails. */
static void in_place_misuse(void)
{
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Request req;

    reset();
    EXPECT_CLASS(MPI_Gather(rank == 0 ? sb : MPI_IN_PLACE, 1, MPI_INT,
                            rank == 0 ? MPI_IN_PLACE : rb, 1, MPI_INT, 0, w),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Igatherv(rank == 0 ? sb : MPI_IN_PLACE, 1, MPI_INT,
                              rank == 0 ? MPI_IN_PLACE : rb, counts, displs, MPI_INT, 0, w, &req),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Scatter(rank == 0 ? MPI_IN_PLACE : sb, 1, MPI_INT,
                             rank == 0 ? rb : MPI_IN_PLACE, 1, MPI_INT, 0, w),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Scatterv(rank == 0 ? MPI_IN_PLACE : sb, counts, displs, MPI_INT,
                              rank == 0 ? rb : MPI_IN_PLACE, 1, MPI_INT, 0, w),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Allgather(sb, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Allgatherv(sb, 1, MPI_INT, MPI_IN_PLACE, counts, displs, MPI_INT, w),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Ialltoall(sb, 1, MPI_INT, MPI_IN_PLACE, 1, MPI_INT, w, &req), MPI_ERR_BUFFER);
    EXPECT_CLASS(
        MPI_Alltoallv(sb, counts, displs, MPI_INT, MPI_IN_PLACE, counts, displs, MPI_INT, w),
        MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Alltoallw(sb, counts, displs, types, MPI_IN_PLACE, counts, displs, types, w),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Reduce_scatter_block(sb, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, w),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Reduce_scatter(sb, MPI_IN_PLACE, counts, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Scan(sb, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, w), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Iexscan(MPI_IN_PLACE, MPI_IN_PLACE, 1, MPI_INT, MPI_SUM, w, &req),
                 MPI_ERR_BUFFER);
}

/* More data than a receive block holds: the receiving side reports truncation (the standard
 * allows MPI_ERR_TRUNCATE or MPI_ERR_OTHER); the senders complete normally. */
static void truncation(void)
{
    MPI_Comm w = MPI_COMM_WORLD;
    int c;

    /* Every rank sends itself two ints into a one-int block. */
    MPI_Error_class(MPI_Alltoall(sb, 2, MPI_INT, rb, 1, MPI_INT, w), &c);
    CHECK(c == MPI_ERR_TRUNCATE || c == MPI_ERR_OTHER, "alltoall self truncation: class %d", c);
    if (size > 1) {
        /* Rank 1 sends two ints to a root expecting one from everybody. */
        MPI_Error_class(MPI_Gather(sb, rank == 1 ? 2 : 1, MPI_INT, rb, 1, MPI_INT, 0, w), &c);
        if (rank == 0) {
            CHECK(c == MPI_ERR_TRUNCATE || c == MPI_ERR_OTHER, "gather truncation: class %d", c);
        } else {
            CHECK(c == MPI_SUCCESS, "gather sender got class %d", c);
        }
    }
}

/* After all that, the collectives still work. */
static void healthy(void)
{
    int one = rank * 10 + 1, all[16], a2a[16], back[16];

    CHECK_MPI(MPI_Allgather(&one, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) {
        CHECK(all[i] == i * 10 + 1, "allgather after errors: %d from %d", all[i], i);
        a2a[i] = rank * 100 + i;
    }
    CHECK_MPI(MPI_Alltoall(a2a, 1, MPI_INT, back, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) {
        CHECK(back[i] == i * 100 + rank, "alltoall after errors: %d from %d", back[i], i);
    }
    CHECK_MPI(MPI_Scan(&one, all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(all[0] == 5 * rank * (rank + 1) + rank + 1, "scan after errors: %d", all[0]);
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 16, "this test supports at most 16 ranks, not %d", size);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    counts_and_roots();
    bad_types_and_ops();
    in_place_misuse();
    truncation();
    healthy();
    return mrt_finish("mr_coll2_errors");
}
