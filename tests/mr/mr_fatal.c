/*
 * mr_fatal.c - faults that must end the job with a message, never a hang. The mode
 * (argv[1]) picks one; tests/scripts/test_faults.sh runs each and checks the exit status
 * and the message.
 *   preinit      MPI_Send before MPI_Init
 *   postfinalize MPI_Barrier after MPI_Finalize
 *   badrank      MPI_Send to a rank outside MPI_COMM_WORLD under the default handler
 *   truncate     a truncated receive under the default handler
 *   killed       rank 1 dies by SIGKILL while rank 0 waits for it in MPI_Recv
 *   killedcoll   rank 1 dies by SIGKILL while the others wait for it in a large MPI_Allreduce
 *   killedcancel rank 1 dies by SIGKILL; rank 0 cancels a rendezvous send to it and waits
 *   hang         rank 1 never sends; rank 0's MPI_Recv gives up after MPISHIM_TIMEOUT
 *   collhang     rank 1 never enters MPI_Barrier; rank 0's gives up after MPISHIM_TIMEOUT
 *   finalhang    rank 0 never enters MPI_Finalize; rank 1's gives up after MPISHIM_TIMEOUT
 *   collmismatch the ranks pass MPI_Allreduce different counts
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rank, size, v = 1, buf[2] = {1, 2}, out[2];

    if (strcmp(mode, "preinit") == 0) {
        MPI_Send(&v, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (strcmp(mode, "badrank") == 0) {
        MPI_Send(&v, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    } else if (strcmp(mode, "truncate") == 0 && size > 1) {
        if (rank == 0) {
            MPI_Send(buf, 2, MPI_INT, 1, 0, MPI_COMM_WORLD);
        } else if (rank == 1) {
            MPI_Recv(buf, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    } else if (strcmp(mode, "killed") == 0 && size > 1) {
        if (rank == 1) {
            raise(SIGKILL);
        }
        MPI_Recv(buf, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (strcmp(mode, "killedcoll") == 0 && size > 1) {
        static int big[1 << 16], sum[1 << 16];
        if (rank == 1) {
            raise(SIGKILL);
        }
        MPI_Allreduce(big, sum, 1 << 16, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    } else if (strcmp(mode, "killedcancel") == 0 && size > 1) {
        static int big[1 << 18]; /* 1 MiB: a rendezvous, whose wait needs the receiver's answer */
        MPI_Request r;
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1) {
            raise(SIGKILL);
        }
        MPI_Isend(big, 1 << 18, MPI_INT, 1, 0, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
    } else if (strcmp(mode, "hang") == 0 && size > 1) {
        if (rank == 0) {
            MPI_Recv(buf, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            sleep(30); /* rank 0's error ends the job first (MPI_Finalize would time out too) */
        }
    } else if (strcmp(mode, "collhang") == 0 && size > 1) {
        if (rank == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            sleep(30); /* rank 0's error ends the job first */
        }
    } else if (strcmp(mode, "finalhang") == 0 && size > 1) {
        if (rank == 0) {
            sleep(30); /* rank 1's error in MPI_Finalize ends the job first */
        }
    } else if (strcmp(mode, "collmismatch") == 0) {
        MPI_Allreduce(buf, out, rank == 0 ? 2 : 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    if (strcmp(mode, "postfinalize") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
    }
    return 0;
}
