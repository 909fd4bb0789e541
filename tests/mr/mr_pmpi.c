/*
 * mr_pmpi.c - the profiling interface: with a profiling library linked in front of
 * libmpishim or preloaded, every MPI_ call below goes through it (its counters say so)
 * and the results are still right. The counters are found with dlsym, so the same
 * program checks both the linked and the preloaded case.
 */
#include "mrtest.h"

#include <dlfcn.h>

int main(int argc, char **argv)
{
    long *counts;
    int rank, size, v, sum;
    MPI_Request req;

    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    counts = dlsym(RTLD_DEFAULT, "prof_counts");
    CHECK(counts != NULL, "no profiling library interposed (prof_counts not found)");
    for (int i = 0; i < 3; i++) {
        v = rank * 10 + i;
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, rank, i, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(&sum, 1, MPI_INT, rank, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(sum == v, "self message %d", sum);
    }
    CHECK_MPI(MPI_Isend(&v, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, &req));
    CHECK_MPI(MPI_Recv(&sum, 1, MPI_INT, rank, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    v = rank + 1;
    CHECK_MPI(MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size + 1) / 2, "allreduce %d", sum);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(counts[0] == 3 && counts[1] == 1 && counts[3] == 1,
          "counted send %ld isend %ld barrier %ld, expected 3 1 1", counts[0], counts[1],
          counts[3]);
    /* One allreduce by us; the library's own allreduces (group creation) call PMPI_. */
    CHECK(counts[2] == 1, "counted allreduce %ld, expected 1", counts[2]);
    return mrt_finish("mr_pmpi");
}
