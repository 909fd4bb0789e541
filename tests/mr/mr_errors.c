/* Bad arguments under MPI_ERRORS_RETURN: each call returns the right error class, leaves
 * nothing half-done, and the communicator keeps working afterwards. */
#include "mrtest.h"

#include <string.h>

static int rank, size;

static void argument_errors(void)
{
    int v = 1, buf[4];
    MPI_Datatype uncommitted;
    MPI_Request req = (MPI_Request)0x7777;

    EXPECT_CLASS(MPI_Send(&v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Send(&v, 1, MPI_INT, -5, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Send(&v, 1, MPI_INT, 0, -3, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT_CLASS(MPI_Recv(buf, 1, MPI_INT, 0, 1 << 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                 MPI_ERR_TAG);
    EXPECT_CLASS(MPI_Send(&v, 1, (MPI_Datatype)0x1234, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &uncommitted));
    EXPECT_CLASS(MPI_Send(buf, 1, uncommitted, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    MPI_Type_free(&uncommitted);
    EXPECT_CLASS(MPI_Bcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Allreduce(&v, buf, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    {
        double d = 1.0, e;
        EXPECT_CLASS(MPI_Allreduce(&d, &e, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
    }
    EXPECT_CLASS(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
}

static void invalid_comm(void)
{
    int r;
    /* The error is raised on MPI_COMM_WORLD's handler (MPI_ERRORS_RETURN here). */
    EXPECT_CLASS(MPI_Comm_rank((MPI_Comm)0x44001234, &r), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
}

/* A message longer than the receive buffer: MPI_ERR_TRUNCATE, and the next message on the
 * same pair arrives intact. Both the eager and the rendezvous sizes. */
static void truncation(int n)
{
    int *big = malloc(sizeof(int) * (size_t)n), *small = malloc(sizeof(int) * (size_t)n);
    MPI_Status st;

    if (size < 2 || rank > 1) {
        free(big);
        free(small);
        return;
    }
    for (int i = 0; i < n; i++) {
        big[i] = i * 3 + 1;
    }
    if (rank == 0) {
        CHECK_MPI(MPI_Send(big, n, MPI_INT, 1, 9, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(big, n, MPI_INT, 1, 9, MPI_COMM_WORLD));
    } else {
        int got;
        EXPECT_CLASS(MPI_Recv(small, n / 2, MPI_INT, 0, 9, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
        CHECK_MPI(MPI_Recv(small, n, MPI_INT, 0, 9, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_INT, &got);
        CHECK(got == n, "count %d after a truncated receive", got);
        for (int i = 0; i < n; i++) {
            CHECK(small[i] == i * 3 + 1, "elem %d = %d after a truncated receive", i, small[i]);
        }
    }
    free(big);
    free(small);
}

static void error_strings(void)
{
    char s[MPI_MAX_ERROR_STRING];
    int len, cls;
    CHECK_MPI(MPI_Error_string(MPI_ERR_TRUNCATE, s, &len));
    CHECK(len > 0 && strstr(s, "trunc"), "string '%s'", s);
    CHECK_MPI(MPI_Error_class(MPI_ERR_RANK, &cls));
    CHECK(cls == MPI_ERR_RANK, "class %d", cls);
}

int main(int argc, char **argv)
{
    int sum = 0, one = 1;

    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    argument_errors();
    invalid_comm();
    truncation(10);
    truncation(100000);
    error_strings();
    /* Nothing was left half-done: a collective on the same communicator still works. */
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size, "allreduce after errors gave %d", sum);
    return mrt_finish("mr_errors");
}
