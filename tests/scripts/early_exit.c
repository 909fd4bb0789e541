/*
 * early_exit.c - for test_mpiexec_cleanup.sh: every rank prints "pid <rank> <pid>" after
 * MPI_Init. Mode "exit0": rank 1 then exits with code 0 without MPI_Finalize while the
 * others wait in a barrier it never joins; mode "abort": rank 1 calls MPI_Abort (code 7)
 * there instead (test_hydra.sh); mode "ok": every rank finalizes.
 */
#include "config.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ok";
    int rank = -1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("pid %d %d\n", rank, (int)getpid());
    fflush(stdout);
    /* Every rank has created its segments and mapped its peers' before anyone leaves. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (!strcmp(mode, "exit0") && rank == 1) {
        exit(0);
    }
    if (!strcmp(mode, "abort") && rank == 1) {
        MPI_Abort(MPI_COMM_WORLD, 7);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
