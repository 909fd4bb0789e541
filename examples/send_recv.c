/*
 * send_recv.c - blocking point-to-point, the C port of the first snippet of PyTorch's
 * "Writing Distributed Applications" tutorial:
 *
 *     tensor = torch.zeros(1)
 *     if rank == 0:
 *         tensor += 1
 *         dist.send(tensor=tensor, dst=1)
 *     else:
 *         dist.recv(tensor=tensor, src=0)
 *     print('Rank ', rank, ' has data ', tensor[0])
 *
 * Run with 2 ranks: mpiexec -n 2 ./send_recv
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank;
    float tensor = 0.0f;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0) {
        tensor += 1;
        MPI_Send(&tensor, 1, MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
    } else if (rank == 1) {
        MPI_Recv(&tensor, 1, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    printf("Rank  %d  has data  tensor(%.1f)\n", rank, tensor);
    MPI_Finalize();
    return 0;
}
