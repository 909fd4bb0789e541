/* A short job for many ranks and every launcher: bootstrap, a ring exchange, an allreduce,
 * a broadcast from the last rank, each checked. */
#include "mrtest.h"

int main(int argc, char **argv)
{
    int rank, size, left, got = -1, sum = 0, root_val;
    char node[MPI_MAX_PROCESSOR_NAME];
    int len;

    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = (rank - 1 + size) % size;
    CHECK_MPI(MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 1, &got, 1, MPI_INT, left, 1,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK(got == left, "ring got %d from %d", got, left);
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size - 1) / 2, "sum %d", sum);
    root_val = rank == size - 1 ? 4242 : 0;
    CHECK_MPI(MPI_Bcast(&root_val, 1, MPI_INT, size - 1, MPI_COMM_WORLD));
    CHECK(root_val == 4242, "bcast %d", root_val);
    CHECK_MPI(MPI_Get_processor_name(node, &len));
    CHECK(len > 0, "empty processor name");
    return mrt_finish("mr_smoke");
}
