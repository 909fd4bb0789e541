/* abi_pingpong.c - a latency ping-pong in the manner of OSU's osu_latency, built with
 * MPICH's mpicc by tests/scripts/test_mpich_abi.sh and run on mpishim's libmpi.so.12.
 * Rank 0 sends a message of each size to rank 1, which sends it back; every byte that comes
 * back is checked against the pattern of that size and iteration. Prints a latency table
 * (not checked: no timing assertions) and "pingpong ok" when every byte matched. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_BYTES (1 << 20)
#define ITERS 50

static unsigned char pattern(int size, int iter, int i)
{
    return (unsigned char)(size * 7 + iter * 13 + i);
}

int main(int argc, char **argv)
{
    int rank, nranks, bad = 0;
    unsigned char *buf = malloc(MAX_BYTES);

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks != 2 || buf == NULL) {
        fprintf(stderr, "abi_pingpong: needs exactly 2 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 0) {
        printf("# bytes  latency (us)\n");
    }
    for (int size = 1; size <= MAX_BYTES; size *= 4) {
        double t0 = MPI_Wtime();
        for (int it = 0; it < ITERS; it++) {
            if (rank == 0) {
                for (int i = 0; i < size; i++) {
                    buf[i] = pattern(size, it, i);
                }
                MPI_Send(buf, size, MPI_BYTE, 1, it, MPI_COMM_WORLD);
                memset(buf, 0, size);
                MPI_Recv(buf, size, MPI_BYTE, 1, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Status st;
                int got = -1;
                MPI_Recv(buf, size, MPI_BYTE, 0, it, MPI_COMM_WORLD, &st);
                MPI_Get_count(&st, MPI_BYTE, &got);
                bad += got != size || st.MPI_SOURCE != 0 || st.MPI_TAG != it;
                MPI_Send(buf, size, MPI_BYTE, 0, it, MPI_COMM_WORLD);
            }
            for (int i = 0; i < size; i++) {
                bad += buf[i] != pattern(size, it, i);
            }
        }
        if (rank == 0) {
            printf("%8d  %10.2f\n", size, (MPI_Wtime() - t0) * 1e6 / (2.0 * ITERS));
        }
    }
    int total = 0;
    MPI_Allreduce(&bad, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(total == 0 ? "pingpong ok\n" : "pingpong FAILED: %d mismatches\n", total);
    }
    free(buf);
    MPI_Finalize();
    return total != 0;
}
