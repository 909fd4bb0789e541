/*
 * bench_p2p.c - point-to-point latency and bandwidth between ranks 0 and 1, measured the way
 * the OSU micro-benchmarks measure them, in plain MPI.
 *
 *   mpiexec -n 2 ./bench_p2p latency [options]   one-way latency in us (ping-pong / 2),
 *                                                 MPI_Send/MPI_Recv, 0 B to 4 MiB
 *   mpiexec -n 2 ./bench_p2p bw [options]        unidirectional bandwidth in MB/s (1e6 B/s):
 *                                                 rank 0 keeps a window of 64 MPI_Isend in
 *                                                 flight, rank 1 the 64 matching MPI_Irecv,
 *                                                 then a 4-byte acknowledgement (as osu_bw)
 *   mpiexec -n 2 ./bench_p2p bibw [options]      bidirectional bandwidth in MB/s: both ranks
 *                                                 post 64 MPI_Irecv and 64 MPI_Isend per
 *                                                 window; bytes in both directions count
 *                                                 (as osu_bibw)
 *   mpiexec -n 2 ./bench_p2p memcpy [options]    rank 0 alone: memcpy of the bw window (64
 *                                                 copies of sbuf into rbuf) in MB/s, the
 *                                                 single-core reference that bw is held to
 * Options are bench_util.h's. Ranks beyond the second only take part in the agreement on
 * iteration counts. Output: "size value" per size.
 */
#include "bench_util.h"

#define WINDOW 64

enum mode { MODE_LATENCY, MODE_BW, MODE_BIBW, MODE_MEMCPY };

struct p2p {
    enum mode mode;
    int rank;
    size_t size;
    char *sbuf;
    char *rbuf;
    MPI_Request reqs[2 * WINDOW];
};

/* One ping-pong round trip between ranks 0 and 1. */
static void pingpong(struct p2p *p, size_t size)
{
    int n = (int)size;
    if (p->rank == 0) {
        MPI_Send(p->sbuf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(p->rbuf, n, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (p->rank == 1) {
        MPI_Recv(p->rbuf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(p->sbuf, n, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
    }
}

/* One window of the unidirectional test: 64 sends from 0 to 1, then an acknowledgement. */
static void window_uni(struct p2p *p, size_t size)
{
    int n = (int)size;
    if (p->rank == 0) {
        for (int w = 0; w < WINDOW; w++) {
            MPI_Isend(p->sbuf, n, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &p->reqs[w]);
        }
        MPI_Waitall(WINDOW, p->reqs, MPI_STATUSES_IGNORE);
        MPI_Recv(p->rbuf, 4, MPI_CHAR, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (p->rank == 1) {
        for (int w = 0; w < WINDOW; w++) {
            MPI_Irecv(p->rbuf, n, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &p->reqs[w]);
        }
        MPI_Waitall(WINDOW, p->reqs, MPI_STATUSES_IGNORE);
        MPI_Send(p->sbuf, 4, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
    }
}

/* One window of the bidirectional test: both ranks receive 64 and send 64. */
static void window_bi(struct p2p *p, size_t size)
{
    int n = (int)size;
    int peer = 1 - p->rank;
    if (p->rank > 1) {
        return;
    }
    for (int w = 0; w < WINDOW; w++) {
        MPI_Irecv(p->rbuf, n, MPI_CHAR, peer, 4, MPI_COMM_WORLD, &p->reqs[w]);
    }
    for (int w = 0; w < WINDOW; w++) {
        MPI_Isend(p->sbuf, n, MPI_CHAR, peer, 4, MPI_COMM_WORLD, &p->reqs[WINDOW + w]);
    }
    MPI_Waitall(2 * WINDOW, p->reqs, MPI_STATUSES_IGNORE);
}

/* One window's worth of bytes copied by rank 0 from the same buffers bw sends from and
 * receives into: what one core moves without a second process. */
static void window_memcpy(struct p2p *p, size_t size)
{
    if (p->rank != 0) {
        return;
    }
    for (int w = 0; w < WINDOW; w++) {
        memcpy(p->rbuf, p->sbuf, size);
        /* The compiler must not drop a copy whose destination is never read. */
        __asm__ volatile("" : : "r"(p->rbuf) : "memory");
    }
}

static void step(struct p2p *p, size_t size)
{
    if (p->mode == MODE_LATENCY) {
        pingpong(p, size);
    } else if (p->mode == MODE_BW) {
        window_uni(p, size);
    } else if (p->mode == MODE_BIBW) {
        window_bi(p, size);
    } else {
        window_memcpy(p, size);
    }
}

/* Runs n steps of the current size and returns the elapsed seconds as rank 0 saw them (0
 * elsewhere). */
static double run_steps(void *ctx, long n)
{
    struct p2p *p = ctx;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
        step(p, p->size);
    }
    return p->rank == 0 ? MPI_Wtime() - t0 : 0.0;
}

/* The seconds of the first size run before any is measured. A job's first moments share the
 * CPUs with its launcher (srun's step daemons, hydra's proxies) and with ranks still setting
 * up, and a waiting rank that sees the CPUs busy sleeps instead of polling: between two
 * emulated nodes on 2 cores the first size measured read 8.7-23 us where the same size later
 * in the run read 5.4 (any library; MPICH's first row too, less often). OSU skips a count of
 * iterations per size for the same reason; a count is over in milliseconds here. */
#define JOB_WARM_S 0.3

/* Runs the first size for JOB_WARM_S by rank 0's clock (it tells the others when to stop),
 * unless -f fixes the counts. */
static void warm_job(struct p2p *p, const struct bench_opts *o)
{
    long chunk;
    int go = 1;
    double t0 = MPI_Wtime();

    if (o->fixed_iters > 0 || o->nsizes == 0) {
        return;
    }
    p->size = o->sizes[0];
    chunk = p->size >= 65536 ? 1 : 100;
    while (go) {
        run_steps(p, chunk);
        go = MPI_Wtime() - t0 < JOB_WARM_S;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
}

/* Measures one size and prints its row: latency in us, bandwidth in MB/s. */
static void measure(struct p2p *p, const struct bench_opts *o, size_t size)
{
    p->size = size;
    long iters = bench_calibrate(o, MPI_COMM_WORLD, bench_iters(o, size), run_steps, p);
    double t = run_steps(p, iters);
    if (p->rank != 0) {
        return;
    }
    if (p->mode == MODE_LATENCY) {
        printf("%zu %.3f\n", size, t * 1e6 / (2.0 * (double)iters));
    } else {
        double bytes = (double)size * WINDOW * (double)iters * (p->mode == MODE_BIBW ? 2 : 1);
        printf("%zu %.2f\n", size, bytes / t / 1e6);
    }
    fflush(stdout);
}

int main(int argc, char **argv)
{
    struct p2p p = {0};
    struct bench_opts o;
    int nranks;
    size_t max = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &p.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (argc < 2 || nranks < 2) {
        bench_die("usage: mpiexec -n 2 bench_p2p latency|bw|bibw|memcpy [options]");
    }
    if (strcmp(argv[1], "latency") == 0) {
        p.mode = MODE_LATENCY;
        bench_parse(argc, argv, 2, 0, 10000, &o);
    } else if (strcmp(argv[1], "bw") == 0 || strcmp(argv[1], "bibw") == 0 ||
               strcmp(argv[1], "memcpy") == 0) {
        p.mode = strcmp(argv[1], "bw") == 0     ? MODE_BW
                 : strcmp(argv[1], "bibw") == 0 ? MODE_BIBW
                                                : MODE_MEMCPY;
        bench_parse(argc, argv, 2, 1, 100, &o);
    } else {
        bench_die("mode must be latency, bw, bibw or memcpy");
    }
    for (int i = 0; i < o.nsizes; i++) {
        max = o.sizes[i] > max ? o.sizes[i] : max;
    }
    p.sbuf = bench_alloc(max < 4 ? 4 : max, 'a');
    p.rbuf = bench_alloc(max < 4 ? 4 : max, 'b');
    bench_print_library(p.rank);
    if (p.rank == 0) {
        printf("# %s, %d ranks, unit %s\n", argv[1], nranks,
               p.mode == MODE_LATENCY ? "us" : "MB/s");
    }
    warm_job(&p, &o);
    for (int i = 0; i < o.nsizes; i++) {
        measure(&p, &o, o.sizes[i]);
    }
    bench_print_memory(MPI_COMM_WORLD);
    free(p.sbuf);
    free(p.rbuf);
    MPI_Finalize();
    return 0;
}
