/*
 * bench_startup.c - the smallest MPI program, for the cost of starting a job: MPI_Init then
 * MPI_Finalize. bench/compare times the whole launch with the wall clock (launcher start to
 * the last process's exit).
 *
 *   mpiexec -n N ./bench_startup        Init and Finalize only, prints nothing
 *   mpiexec -n N ./bench_startup mem    also prints, from rank 0, the peak resident memory
 *                                       (VmHWM) over the ranks after MPI_Init and a barrier:
 *                                       "# vmhwm_kib max=M mean=A"
 * The memory figure is a separate mode because its reductions make a library open
 * connections, which would count in the startup time.
 */
#include "bench_util.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc > 1 && strcmp(argv[1], "mem") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        bench_print_memory(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
