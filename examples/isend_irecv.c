/*
 * isend_irecv.c - non-blocking point-to-point, the C port of the tutorial's second snippet:
 *
 *     if rank == 0:
 *         tensor += 1
 *         req = dist.isend(tensor=tensor, dst=1)
 *         print('Rank 0 started sending')
 *     else:
 *         req = dist.irecv(tensor=tensor, src=0)
 *         print('Rank 1 started receiving')
 *     req.wait()
 *     print('Rank ', rank, ' has data ', tensor[0])
 *
 * Run with 2 ranks: mpiexec -n 2 ./isend_irecv
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank;
    float tensor = 0.0f;
    MPI_Request req = MPI_REQUEST_NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        tensor += 1;
        MPI_Isend(&tensor, 1, MPI_FLOAT, 1, 0, MPI_COMM_WORLD, &req);
        printf("Rank 0 started sending\n");
    } else if (rank == 1) {
        MPI_Irecv(&tensor, 1, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, &req);
        printf("Rank 1 started receiving\n");
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    printf("Rank  %d  has data  tensor(%.1f)\n", rank, tensor);
    MPI_Finalize();
    return 0;
}
