/* abi_large_count.c - MPI-4.0 large-count calls from a program built against MPICH:
 * MPI_Send_c/MPI_Recv_c (with MPI_Get_count_c), MPI_Bcast_c, MPI_Allreduce_c, the count
 * arrays of MPI_Allgatherv_c and MPI_Alltoallv_c, and counts beyond INT_MAX, which mpishim
 * refuses with MPI_ERR_COUNT (under MPI_ERRORS_RETURN). At most 16 ranks.
 * Prints "large_count ok" on rank 0 when every check passed on every rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 100000

static int failures;

static void check(int cond, int rank, const char *what)
{
    if (!cond) {
        printf("rank %d: FAIL %s\n", rank, what);
        failures++;
    }
}

int main(int argc, char **argv)
{
    int rank, n;
    MPI_Count count = N, got = -1;
    double *a = malloc(N * sizeof(double)), *sum = malloc(N * sizeof(double));
    MPI_Status st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);

    /* Rank 0 sends i + 0.5 to the last rank. */
    for (int i = 0; i < N; i++) {
        a[i] = rank == 0 ? i + 0.5 : -1.0;
    }
    if (rank == 0) {
        check(MPI_Send_c(a, count, MPI_DOUBLE, n - 1, 3, MPI_COMM_WORLD) == MPI_SUCCESS, rank,
              "MPI_Send_c");
    } else if (rank == n - 1) {
        check(MPI_Recv_c(a, count, MPI_DOUBLE, 0, 3, MPI_COMM_WORLD, &st) == MPI_SUCCESS, rank,
              "MPI_Recv_c");
        MPI_Get_count_c(&st, MPI_DOUBLE, &got);
        check(got == N, rank, "MPI_Get_count_c gives the count sent");
        int ok = 1;
        for (int i = 0; i < N; i++) {
            ok &= a[i] == i + 0.5;
        }
        check(ok, rank, "MPI_Recv_c received i + 0.5 at every i");
    }

    /* Every rank contributes (rank + 1) * i: the sum is i * n(n+1)/2. */
    for (int i = 0; i < N; i++) {
        a[i] = (double)(rank + 1) * i;
    }
    check(MPI_Allreduce_c(a, sum, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
          rank, "MPI_Allreduce_c");
    int ok = 1;
    for (int i = 0; i < N; i++) {
        ok &= sum[i] == (double)i * n * (n + 1) / 2;
    }
    check(ok, rank, "MPI_Allreduce_c sums to i * n(n+1)/2");

    long long root_value = rank == 0 ? 0x123456789LL : 0;
    MPI_Bcast_c(&root_value, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    check(root_value == 0x123456789LL, rank, "MPI_Bcast_c brings the root's value");

    /* Count arrays: rank r contributes r + 1 values 10 * r + k; displacements leave a gap
     * of one element after each block (which keeps its -1). */
    MPI_Count counts[16], out_counts[16];
    MPI_Aint displs[16], out_displs[16];
    int gathered[160], mine[16], total_len = 0, ok_v = 1;
    for (int r = 0; r < n && r < 16; r++) {
        counts[r] = r + 1;
        displs[r] = total_len;
        total_len += r + 2;
    }
    for (int k = 0; k <= rank; k++) {
        mine[k] = 10 * rank + k;
    }
    for (int i = 0; i < total_len; i++) {
        gathered[i] = -1;
    }
    check(MPI_Allgatherv_c(mine, rank + 1, MPI_INT, gathered, counts, displs, MPI_INT,
                           MPI_COMM_WORLD) == MPI_SUCCESS,
          rank, "MPI_Allgatherv_c");
    for (int r = 0; r < n; r++) {
        for (int k = 0; k <= r; k++) {
            ok_v &= gathered[displs[r] + k] == 10 * r + k;
        }
        ok_v &= gathered[displs[r] + r + 1] == -1;
    }
    check(ok_v, rank, "MPI_Allgatherv_c places each block at its displacement");

    /* Alltoallv_c: rank r sends j + 1 copies of 100 * r + j to rank j. */
    int sendv[136], recvv[256], pos = 0;
    for (int j = 0; j < n; j++) {
        out_counts[j] = j + 1;
        out_displs[j] = pos;
        for (int k = 0; k <= j; k++) {
            sendv[pos++] = 100 * rank + j;
        }
        counts[j] = rank + 1;
        displs[j] = (MPI_Aint)j * (rank + 1);
    }
    check(MPI_Alltoallv_c(sendv, out_counts, out_displs, MPI_INT, recvv, counts, displs, MPI_INT,
                          MPI_COMM_WORLD) == MPI_SUCCESS,
          rank, "MPI_Alltoallv_c");
    ok_v = 1;
    for (int j = 0; j < n; j++) {
        for (int k = 0; k <= rank; k++) {
            ok_v &= recvv[j * (rank + 1) + k] == 100 * j + rank;
        }
    }
    check(ok_v, rank, "MPI_Alltoallv_c brings rank + 1 copies of 100 * j + rank from each j");

    /* A count that does not fit in an int is refused before anything is sent. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int cls = -1, rc = MPI_Send_c(a, (MPI_Count)1 << 33, MPI_DOUBLE, rank, 0, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    check(cls == MPI_ERR_COUNT, rank, "a count of 2^33 is MPI_ERR_COUNT");
    counts[0] = (MPI_Count)1 << 40;
    rc = MPI_Allgatherv_c(mine, 1, MPI_INT, gathered, counts, displs, MPI_INT, MPI_COMM_WORLD);
    MPI_Error_class(rc, &cls);
    check(cls == MPI_ERR_COUNT, rank, "a recvcounts[0] of 2^40 is MPI_ERR_COUNT");

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) {
        printf("large_count ok\n");
    }
    free(a);
    free(sum);
    MPI_Finalize();
    return total != 0;
}
