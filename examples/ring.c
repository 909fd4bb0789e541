/*
 * ring.c - the classic MPI ring: rank 0 sends a token around the ring for a number of
 * laps, each rank decrementing it when it passes rank 0, until it reaches zero.
 * An unmodified MPI program: builds with any MPI's mpicc.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, next, prev, message, tag = 201;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;

    if (rank == 0) {
        message = 10;
        printf("Process 0 sending %d to %d, tag %d (%d processes in ring)\n", message, next, tag,
               size);
        MPI_Send(&message, 1, MPI_INT, next, tag, MPI_COMM_WORLD);
        printf("Process 0 sent to %d\n", next);
    }
    /* Pass the message around; rank 0 decrements it each lap. */
    while (1) {
        MPI_Recv(&message, 1, MPI_INT, prev, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rank == 0) {
            --message;
            printf("Process 0 decremented value: %d\n", message);
        }
        MPI_Send(&message, 1, MPI_INT, next, tag, MPI_COMM_WORLD);
        if (message == 0) {
            printf("Process %d exiting\n", rank);
            break;
        }
    }
    /* The last message sent by rank 0 must be received before finishing. */
    if (rank == 0) {
        MPI_Recv(&message, 1, MPI_INT, prev, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
