/*
 * first_mpi.c - a first MPI program: rank 0 sends a number to rank 1, and every rank adds
 * its rank + 1 into a sum that all ranks receive (1 + 2 + ... + size). README.md shows this
 * file below this comment (tests/scripts/test_first_programs.sh checks).
 *
 *   mpicc -o first_mpi first_mpi.c && mpiexec -n 4 ./first_mpi
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, value = 0, sum = 0, mine;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0 && size > 1) {
        value = 42;
        MPI_Send(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("rank 1 received %d from rank 0\n", value);
    }
    mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d: sum %d (expected %d)\n", rank, size, sum, size * (size + 1) / 2);
    MPI_Finalize();
    return sum == size * (size + 1) / 2 ? 0 : 1;
}
