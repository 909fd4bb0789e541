/*
 * bench_util.h - what the benchmark programs share: the message sizes, the iteration counts,
 * the buffers and the peak-memory line.
 *
 * The programs are written against plain MPI (no mpishim header, no config.h) so that the
 * same source builds with mpishim's mpicc, Open MPI's mpicc.openmpi and MPICH's mpicc.mpich;
 * bench/compare builds and runs them side by side.
 *
 * Common options (after the mode argument of each program):
 *   -m MAX      largest message size in bytes (default 4 MiB)
 *   -n MIN      smallest message size in bytes (default: the program's own)
 *   -s LIST     exact sizes, comma-separated (overrides -m and -n)
 *   -t SECONDS  time budget per size after warm-up (default 0.2): the iteration count
 *               shrinks so that one size takes about this long, which bounds a run when
 *               one library is pathologically slow
 *   -i ITERS    iterations for small messages (default: the program's own); larger
 *               messages get fewer (see bench_iters)
 *   -f ITERS    exactly ITERS timed iterations at every size, with no warm-up and no time
 *               budget: fi_pingpong's way, so that a run can repeat its workload call for
 *               call (overrides -t and -i)
 * Output: comment lines start with '#'; every other line is "size value".
 * A benchmark, not a test: it never fails on a timing.
 */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_MAX_SIZES 64

struct bench_opts {
    size_t sizes[BENCH_MAX_SIZES];
    int nsizes;
    double budget_s;
    long iters_small;
    long fixed_iters; /* -f: > 0 replaces calibration and warm-up */
};

/* Prints the cause on rank 0's stderr (or any rank's, if rank is unknown) and aborts the job:
 * a benchmark that cannot run must not print figures. */
static inline void bench_die(const char *what)
{
    fprintf(stderr, "bench: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

/* Fills o->sizes with the powers of two from min to max (min 0 adds a 0-byte size first),
 * or with the list given by -s. Unknown options abort. argv[first] is the first option. */
static inline void bench_parse(int argc, char **argv, int first, size_t min, long iters_small,
                               struct bench_opts *o)
{
    size_t max = (size_t)4 << 20;
    const char *list = NULL;
    o->budget_s = 0.2;
    o->iters_small = iters_small;
    o->fixed_iters = 0;
    o->nsizes = 0;
    for (int i = first; i < argc; i++) {
        if (i + 1 >= argc) {
            bench_die("option without a value");
        }
        if (strcmp(argv[i], "-m") == 0) {
            max = strtoul(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "-n") == 0) {
            min = strtoul(argv[++i], NULL, 0);
        } else if (strcmp(argv[i], "-s") == 0) {
            list = argv[++i];
        } else if (strcmp(argv[i], "-t") == 0) {
            o->budget_s = atof(argv[++i]);
        } else if (strcmp(argv[i], "-i") == 0) {
            o->iters_small = atol(argv[++i]);
        } else if (strcmp(argv[i], "-f") == 0) {
            o->fixed_iters = atol(argv[++i]);
            if (o->fixed_iters <= 0) {
                bench_die("-f needs a positive iteration count");
            }
        } else {
            bench_die("unknown option (known: -m MAX -n MIN -s LIST -t SECONDS -i ITERS "
                      "-f ITERS)");
        }
    }
    if (list != NULL) {
        char *end;
        while (*list != '\0' && o->nsizes < BENCH_MAX_SIZES) {
            size_t s = strtoul(list, &end, 0);
            if (end == list) {
                bench_die("bad size list (want numbers separated by commas)");
            }
            o->sizes[o->nsizes++] = s;
            list = (*end == ',') ? end + 1 : end;
        }
        return;
    }
    if (min == 0) {
        o->sizes[o->nsizes++] = 0;
        min = 1;
    }
    for (size_t s = min; s <= max && o->nsizes < BENCH_MAX_SIZES; s *= 2) {
        o->sizes[o->nsizes++] = s;
    }
}

/* The iteration count for one size before the time budget applies: iters_small up to 8 KiB,
 * then halved for every doubling of the size (as OSU's large-message counts do), never below
 * 10. */
static inline long bench_iters(const struct bench_opts *o, size_t size)
{
    long n = o->iters_small;
    for (size_t s = 8192; s < size && n > 10; s *= 2) {
        n /= 2;
    }
    return n < 10 ? 10 : n;
}

/* Shrinks iters so that iters * secs_per_op stays within the budget, using the slowest rank's
 * warm-up figure so that every rank agrees on the count (collective over comm). */
static inline long bench_fit(const struct bench_opts *o, MPI_Comm comm, long iters,
                             double secs_per_op)
{
    double worst;
    MPI_Allreduce(&secs_per_op, &worst, 1, MPI_DOUBLE, MPI_MAX, comm);
    if (worst > 0 && (double)iters * worst > o->budget_s) {
        iters = (long)(o->budget_s / worst);
    }
    return iters < 2 ? 2 : iters;
}

/* Warms up and returns the iteration count to time: a first pair of calls estimates the cost,
 * the warm-up (a tenth of iters, at least 2) is fitted to the budget the same way, and its
 * per-call time fits iters. run(ctx, n) performs n calls and returns the seconds this rank
 * measured. Collective over comm. With -f, no call is made and the fixed count is returned. */
static inline long bench_calibrate(const struct bench_opts *o, MPI_Comm comm, long iters,
                                   double (*run)(void *ctx, long n), void *ctx)
{
    if (o->fixed_iters > 0) {
        return o->fixed_iters;
    }
    long warm = iters / 10 < 2 ? 2 : iters / 10;
    double t = run(ctx, 2);
    warm = bench_fit(o, comm, warm, t / 2.0);
    t = run(ctx, warm);
    return bench_fit(o, comm, iters, t / (double)warm);
}

/* Page-aligned buffer of n bytes (at least 1), touched so that first-use page faults do not
 * land in the timed loop. */
static inline char *bench_alloc(size_t n, int fill)
{
    void *p = NULL;
    if (posix_memalign(&p, 4096, n > 0 ? n : 1) != 0) {
        bench_die("out of memory");
    }
    memset(p, fill, n > 0 ? n : 1);
    return p;
}

/* Page-aligned buffer of n bytes holding floats equal to v: reductions must not run on
 * denormal numbers, which are many times slower on x86 than normal ones. */
static inline char *bench_alloc_floats(size_t n, float v)
{
    char *p = bench_alloc(n, 0);
    for (size_t i = 0; i + sizeof(float) <= n; i += sizeof(float)) {
        memcpy(p + i, &v, sizeof v);
    }
    return p;
}

/* This process's peak resident set (VmHWM) in KiB, or -1 where /proc is absent. */
static inline long bench_vmhwm_kib(void)
{
    char line[256];
    long kib = -1;
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = atol(line + 6);
            break;
        }
    }
    fclose(f);
    return kib;
}

/* Collective: rank 0 prints "# vmhwm_kib max=M mean=A" over the ranks of comm. */
static inline void bench_print_memory(MPI_Comm comm)
{
    long mine = bench_vmhwm_kib(), max = 0, sum = 0;
    int rank, n;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &n);
    MPI_Reduce(&mine, &max, 1, MPI_LONG, MPI_MAX, 0, comm);
    MPI_Reduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, 0, comm);
    if (rank == 0) {
        printf("# vmhwm_kib max=%ld mean=%ld\n", max, sum / n);
    }
}

/* Rank 0 prints the library's own version string as a comment (first line only). */
static inline void bench_print_library(int rank)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    if (rank == 0) {
        v[strcspn(v, "\n")] = '\0';
        printf("# library: %s\n", v);
    }
}

#endif
