/*
 * bench_rma.c - one-sided (RMA) latency between ranks 0 and 1, in plain MPI, measured the
 * way OSU's one-sided latency benchmarks measure it (osu_put_latency, osu_get_latency,
 * osu_fop_latency); written here from their description, not from their code.
 *
 *   mpiexec -n 2 ./bench_rma put_lock [options]   MPI_Win_lock(shared, 1) + MPI_Put +
 *                                                  MPI_Win_unlock(1) per iteration, in us
 *   mpiexec -n 2 ./bench_rma get_lock [options]   the same with MPI_Get
 *   mpiexec -n 2 ./bench_rma put_fence [options]  rank 0: MPI_Put + MPI_Win_fence, rank 1:
 *                                                  MPI_Win_fence, per iteration, in us
 *   mpiexec -n 2 ./bench_rma get_fence [options]  the same with MPI_Get
 *   mpiexec -n 2 ./bench_rma fop [options]        MPI_Fetch_and_op (MPI_SUM of one int64)
 *                                                  + MPI_Win_flush(1), under lock_all, in us
 *   mpiexec -n 2 ./bench_rma put_bw [options]     MPI_Win_lock(shared, 1) + 32 MPI_Put of
 *                                                  the size to the same place +
 *                                                  MPI_Win_unlock(1) per iteration (as
 *                                                  osu_put_bw -s lock), in MB/s
 *   mpiexec -n 2 ./bench_rma get_bw [options]     the same with MPI_Get, in MB/s
 * The window is MPI_Win_allocate'd on both ranks. Under lock/unlock and fop, rank 1 makes
 * no RMA call while rank 0 measures: it waits in MPI_Barrier, whose progress serves the
 * requests (as OSU's target does). Options are bench_util.h's; without -s/-m/-n the sizes
 * are 8 B, 1 KiB and 64 KiB (fop: 8 B, its one size). Output: "size value" per size.
 * A benchmark, not a test: it never fails on a timing.
 */
#include "bench_util.h"

#include <stdint.h>

enum mode {
    MODE_PUT_LOCK,
    MODE_GET_LOCK,
    MODE_PUT_FENCE,
    MODE_GET_FENCE,
    MODE_FOP,
    MODE_PUT_BW,
    MODE_GET_BW
};

static const char *const mode_names[] = {"put_lock", "get_lock", "put_fence", "get_fence",
                                         "fop",      "put_bw",   "get_bw"};

/* Transfers per epoch of the bandwidth modes (OSU's window size). */
#define BW_WINDOW 32

struct rma {
    enum mode mode;
    int rank;
    size_t size;
    char *buf;
    char *winbuf;
    MPI_Win win;
};

static void xfer(struct rma *r, int get)
{
    int n = (int)r->size;

    if (get) {
        MPI_Get(r->buf, n, MPI_CHAR, 1, 0, n, MPI_CHAR, r->win);
    } else {
        MPI_Put(r->buf, n, MPI_CHAR, 1, 0, n, MPI_CHAR, r->win);
    }
}

/* n iterations on rank 0 (rank 1 only takes part in the fences). Not inlined, so that
 * callgrind can count it alone (bench/icount -c steps). */
__attribute__((noinline)) static void steps(struct rma *r, long n)
{
    int get = r->mode == MODE_GET_LOCK || r->mode == MODE_GET_FENCE || r->mode == MODE_GET_BW;
    int per = r->mode == MODE_PUT_BW || r->mode == MODE_GET_BW ? BW_WINDOW : 1;
    int64_t one = 1, old;

    for (long i = 0; i < n; i++) {
        if (r->mode == MODE_PUT_FENCE || r->mode == MODE_GET_FENCE) {
            if (r->rank == 0) {
                xfer(r, get);
            }
            MPI_Win_fence(0, r->win);
        } else if (r->rank != 0) {
            return; /* passive target: served from the barrier that follows */
        } else if (r->mode == MODE_FOP) {
            MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 1, 0, MPI_SUM, r->win);
            MPI_Win_flush(1, r->win);
        } else {
            MPI_Win_lock(MPI_LOCK_SHARED, 1, 0, r->win);
            for (int k = 0; k < per; k++) {
                xfer(r, get);
            }
            MPI_Win_unlock(1, r->win);
        }
    }
}

/* Runs n iterations and returns the seconds rank 0 measured (0 elsewhere). The closing
 * barrier is outside the timing: it is where a passive target serves the requests. */
static double run_steps(void *ctx, long n)
{
    struct rma *r = ctx;
    double t0, t = 0.0;

    MPI_Barrier(MPI_COMM_WORLD);
    if (r->mode == MODE_FOP) {
        MPI_Win_lock_all(0, r->win);
    }
    t0 = MPI_Wtime();
    steps(r, n);
    if (r->rank == 0) {
        t = MPI_Wtime() - t0;
    }
    if (r->mode == MODE_FOP) {
        MPI_Win_unlock_all(r->win);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return t;
}

static void measure(struct rma *r, const struct bench_opts *o, size_t size)
{
    long iters;
    double t;

    r->size = size;
    iters = bench_calibrate(o, MPI_COMM_WORLD, bench_iters(o, size), run_steps, r);
    t = run_steps(r, iters);
    if (r->rank == 0 && (r->mode == MODE_PUT_BW || r->mode == MODE_GET_BW)) {
        printf("%zu %.3f\n", size, (double)size * BW_WINDOW * (double)iters / t / 1e6);
        fflush(stdout);
    } else if (r->rank == 0) {
        printf("%zu %.3f\n", size, t * 1e6 / (double)iters);
        fflush(stdout);
    }
}

static int parse_mode(const char *s, enum mode *m)
{
    for (int i = 0; i <= MODE_GET_BW; i++) {
        if (strcmp(s, mode_names[i]) == 0) {
            *m = (enum mode)i;
            return 1;
        }
    }
    return 0;
}

/* Whether the options choose the sizes (-s, -m or -n). */
static int sizes_given(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "-s") == 0 || strcmp(argv[i], "-m") == 0 ||
            strcmp(argv[i], "-n") == 0) {
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct rma r = {0};
    struct bench_opts o;
    int nranks, fence;
    size_t max = 8;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 2 || nranks < 2 || !parse_mode(argv[1], &r.mode)) {
        bench_die("usage: mpiexec -n 2 bench_rma put_lock|get_lock|put_fence|get_fence|fop|"
                  "put_bw|get_bw [options]");
    }
    bench_parse(argc, argv, 2, 8, 10000, &o);
    if (!sizes_given(argc, argv) || r.mode == MODE_FOP) {
        static const size_t def[] = {8, 1024, 65536};

        o.nsizes = r.mode == MODE_FOP ? 1 : 3;
        memcpy(o.sizes, def, sizeof(def));
    }
    for (int i = 0; i < o.nsizes; i++) {
        max = o.sizes[i] > max ? o.sizes[i] : max;
    }
    r.buf = bench_alloc(max, 'a');
    if (MPI_Win_allocate((MPI_Aint)max, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &r.winbuf, &r.win) !=
        MPI_SUCCESS) {
        bench_die("MPI_Win_allocate failed");
    }
    memset(r.winbuf, 0, max);
    bench_print_library(r.rank);
    if (r.rank == 0) {
        printf("# %s, %d ranks, unit %s\n", argv[1], nranks,
               r.mode == MODE_PUT_BW || r.mode == MODE_GET_BW ? "MB/s" : "us");
    }
    /* The fence modes run inside one fence epoch; the others open none (a lock after a
     * fence that opened an epoch is erroneous for some libraries). */
    fence = r.mode == MODE_PUT_FENCE || r.mode == MODE_GET_FENCE;
    if (fence) {
        MPI_Win_fence(0, r.win);
    }
    for (int i = 0; i < o.nsizes; i++) {
        measure(&r, &o, o.sizes[i]);
    }
    if (fence) {
        MPI_Win_fence(MPI_MODE_NOSUCCEED, r.win);
    }
    bench_print_memory(MPI_COMM_WORLD);
    MPI_Win_free(&r.win);
    free(r.buf);
    MPI_Finalize();
    return 0;
}
