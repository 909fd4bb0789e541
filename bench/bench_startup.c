/*
 * bench_startup.c - the smallest MPI program, for the cost of starting a job: MPI_Init then
 * MPI_Finalize. bench/compare times the whole launch with the wall clock (launcher start to
 * the last process's exit).
 *
 *   mpiexec -n N ./bench_startup        Init and Finalize only, prints nothing
 *   mpiexec -n N ./bench_startup mem    also prints, from rank 0, the peak resident memory
 *                                       (VmHWM) over the ranks after MPI_Init and a barrier:
 *                                       "# vmhwm_kib max=M mean=A"
 *   mpiexec -n N ./bench_startup cost   also prints, from rank 0, what MPI_Init itself cost
 *                                       each process, max and mean over the ranks:
 *                                       "# init_ms max=M mean=A", "# init_cpu_ms ..." (user
 *                                       plus system time) and "# init_minflt ..." (page faults)
 * The memory figure is a separate mode because its reductions make a library open
 * connections, which would count in the startup time. The cost mode leaves the launcher and
 * the loading of the program out: it measures the library's own start-up in every process,
 * which the launch's wall clock mixes with the launcher's and, on a loaded machine, with
 * waiting for a core. Its CPU time and page faults hardly depend on the load.
 */
#include "bench_util.h"

#include <sys/resource.h>
#include <time.h>

struct init_cost {
    double wall_ms, cpu_ms, minflt;
};

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* CPU time (user + system) in ms and minor page faults of this process so far. */
static void usage(double *cpu_ms, double *minflt)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    *cpu_ms = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
              (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-3;
    *minflt = (double)ru.ru_minflt;
}

static void print_cost(const char *name, double mine, MPI_Comm comm)
{
    double max = 0, sum = 0;
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    MPI_Reduce(&mine, &max, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    if (rank == 0) {
        printf("# %s max=%.1f mean=%.1f\n", name, max, sum / n);
    }
}

int main(int argc, char **argv)
{
    int cost = argc > 1 && strcmp(argv[1], "cost") == 0;
    struct init_cost before, after;
    usage(&before.cpu_ms, &before.minflt);
    before.wall_ms = now_ms();
    MPI_Init(&argc, &argv);
    after.wall_ms = now_ms();
    usage(&after.cpu_ms, &after.minflt);
    if (argc > 1 && strcmp(argv[1], "mem") == 0) {
        MPI_Barrier(MPI_COMM_WORLD);
        bench_print_memory(MPI_COMM_WORLD);
    }
    if (cost) {
        print_cost("init_ms", after.wall_ms - before.wall_ms, MPI_COMM_WORLD);
        print_cost("init_cpu_ms", after.cpu_ms - before.cpu_ms, MPI_COMM_WORLD);
        print_cost("init_minflt", after.minflt - before.minflt, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
