/*
 * bench_coll.c - latency of the blocking collectives over MPI_COMM_WORLD, in plain MPI.
 *
 *   mpiexec -n N ./bench_coll OP [options]
 *   OP: allreduce bcast reduce allgather alltoall reduce_scatter barrier
 *
 * Each rank times a loop of the collective (no barrier between calls, as OSU does) and the
 * row shows the average time per call of the SLOWEST rank, in us (OSU prints the mean over
 * ranks by default; the maximum is what a bulk-synchronous program waits for).
 * What "size" means (bytes; the OSU conventions):
 *   allreduce, reduce, bcast   the whole vector (MPI_FLOAT for the reductions, MPI_SUM)
 *   allgather                  each rank's contribution (the result is size * N)
 *   alltoall                   the block sent to each rank (each rank sends size * N)
 *   reduce_scatter             the whole vector reduced (MPI_Reduce_scatter_block, MPI_FLOAT,
 *                              each rank keeps size / N); sizes below 4 * N are skipped
 *   barrier                    one row, size 0
 * Reductions use MPI_FLOAT, so their sizes start at 4 B. Roots are rank 0.
 * Options are bench_util.h's. Output: "size value" per size.
 *
 * BENCH_FACE=pgc (mpishim only) runs the same operation through the process-group face on
 * the world's group instead, blocking (async_op 0) as torch's default: pgc_all_reduce,
 * pgc_broadcast, pgc_reduce, pgc_all_gather_into_tensor, pgc_all_to_all_single,
 * pgc_reduce_scatter_tensor, pgc_barrier. The reductions are in place there (the MPI rows
 * reduce sbuf into rbuf), which is how torch calls them. bench/compare's pgc column.
 *
 * BENCH_IN_PLACE=1 runs the MPI face's allreduce and reduce in place on sbuf (MPI_IN_PLACE;
 * reduce: at the root), as pgc's are: what bench/compare's pgc/MPI column divides by for
 * those two. Like OSU's, the out-of-place loop never writes its send buffer, so a peer's
 * cached copy of it stays valid from call to call, which an in-place loop (whose buffer is
 * written by every call) cannot have: out of place reads up to 2-3x faster from 32 KiB at 2
 * ranks here, a difference that a program writing its data before each call does not see
 * (doc/performance.md, session 43).
 */
#include "bench_util.h"

#ifdef MPISHIM
#include <pgc.h>
#endif

/* Where the compiler allows it, the newer collectives are weak references: a library that lacks
 * one still links, and the program reports the missing function instead of failing to
 * build (useful while a library is being written). */
#if defined(__GNUC__)
#pragma weak MPI_Allgather
#pragma weak MPI_Alltoall
#pragma weak MPI_Reduce_scatter_block
#endif

enum op { OP_ALLREDUCE, OP_BCAST, OP_REDUCE, OP_ALLGATHER, OP_ALLTOALL, OP_REDSCAT, OP_BARRIER };

static const struct {
    const char *name;
    size_t min; /* smallest meaningful size, before the check against N */
} op_info[] = {
    [OP_ALLREDUCE] = {"allreduce", 4}, [OP_BCAST] = {"bcast", 1},
    [OP_REDUCE] = {"reduce", 4},       [OP_ALLGATHER] = {"allgather", 1},
    [OP_ALLTOALL] = {"alltoall", 1},   [OP_REDSCAT] = {"reduce_scatter", 4},
    [OP_BARRIER] = {"barrier", 0},
};

struct coll {
    enum op op;
    void *pgc_world; /* the world's pgc group with BENCH_FACE=pgc, else NULL */
    bool in_place;   /* BENCH_IN_PLACE=1: the MPI face's allreduce and reduce in place */
    int rank;
    int nranks;
    size_t size;
    char *sbuf;
    char *rbuf;
};

/* Address of the library's function for op, NULL where the library lacks it. */
static void *op_function(enum op op)
{
    void *volatile f[] = {
        [OP_ALLREDUCE] = (void *)&MPI_Allreduce, [OP_BCAST] = (void *)&MPI_Bcast,
        [OP_REDUCE] = (void *)&MPI_Reduce,       [OP_ALLGATHER] = (void *)&MPI_Allgather,
        [OP_ALLTOALL] = (void *)&MPI_Alltoall,   [OP_REDSCAT] = (void *)&MPI_Reduce_scatter_block,
        [OP_BARRIER] = (void *)&MPI_Barrier,
    };
    return f[op];
}

#ifdef MPISHIM
/* The pgc twin of call(): the same bytes, through pgc's blocking collectives. */
static void call_pgc(struct coll *c)
{
    size_t nf = c->size / sizeof(float), per = nf / (size_t)c->nranks;
    pgc_group *g = c->pgc_world;
    pgc_tensor f = pgc_host_tensor(c->sbuf, nf, PGC_FLOAT32);
    pgc_tensor b = pgc_host_tensor(c->sbuf, c->size, PGC_UINT8);
    pgc_tensor all = pgc_host_tensor(c->rbuf, c->size * (size_t)c->nranks, PGC_UINT8);
    pgc_tensor part = pgc_host_tensor(c->rbuf, per, PGC_FLOAT32);
    int rc = PGC_OK;

    switch (c->op) {
    case OP_ALLREDUCE:
        rc = pgc_all_reduce(&f, PGC_SUM, g, 0, NULL);
        break;
    case OP_BCAST:
        rc = pgc_broadcast(&b, 0, g, 0, NULL);
        break;
    case OP_REDUCE:
        rc = pgc_reduce(&f, 0, PGC_SUM, g, 0, NULL);
        break;
    case OP_ALLGATHER:
        rc = pgc_all_gather_into_tensor(&all, &b, g, 0, NULL);
        break;
    case OP_ALLTOALL:
        b.numel = c->size * (size_t)c->nranks;
        rc = pgc_all_to_all_single(&all, &b, NULL, NULL, g, 0, NULL);
        break;
    case OP_REDSCAT:
        f.numel = per * (size_t)c->nranks;
        rc = pgc_reduce_scatter_tensor(&part, &f, PGC_SUM, g, 0, NULL);
        break;
    case OP_BARRIER:
        rc = pgc_barrier(g, 0, NULL);
        break;
    }
    if (rc != PGC_OK) {
        fprintf(stderr, "bench_coll: %s\n", pgc_last_error());
        bench_die("a pgc collective failed");
    }
}
#endif

static void call(struct coll *c)
{
#ifdef MPISHIM
    if (c->pgc_world) {
        call_pgc(c);
        return;
    }
#endif
    int n = (int)c->size;
    int nf = (int)(c->size / sizeof(float));
    MPI_Comm w = MPI_COMM_WORLD;
    switch (c->op) {
    case OP_ALLREDUCE:
        MPI_Allreduce(c->in_place ? MPI_IN_PLACE : c->sbuf, c->in_place ? c->sbuf : c->rbuf, nf,
                      MPI_FLOAT, MPI_SUM, w);
        break;
    case OP_BCAST:
        MPI_Bcast(c->sbuf, n, MPI_CHAR, 0, w);
        break;
    case OP_REDUCE:
        if (c->in_place && c->rank == 0) {
            MPI_Reduce(MPI_IN_PLACE, c->sbuf, nf, MPI_FLOAT, MPI_SUM, 0, w);
        } else {
            MPI_Reduce(c->sbuf, c->rbuf, nf, MPI_FLOAT, MPI_SUM, 0, w);
        }
        break;
    case OP_ALLGATHER:
        MPI_Allgather(c->sbuf, n, MPI_CHAR, c->rbuf, n, MPI_CHAR, w);
        break;
    case OP_ALLTOALL:
        MPI_Alltoall(c->sbuf, n, MPI_CHAR, c->rbuf, n, MPI_CHAR, w);
        break;
    case OP_REDSCAT:
        MPI_Reduce_scatter_block(c->sbuf, c->rbuf, nf / c->nranks, MPI_FLOAT, MPI_SUM, w);
        break;
    case OP_BARRIER:
        MPI_Barrier(w);
        break;
    }
}

/* Runs n calls of the current size and returns this rank's elapsed seconds. */
static double run_calls(void *ctx, long n)
{
    struct coll *c = ctx;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < n; i++) {
        call(c);
    }
    return MPI_Wtime() - t0;
}

/* Measures one size and prints the slowest rank's mean time per call in us. */
static void measure(struct coll *c, const struct bench_opts *o, size_t size)
{
    double mine, worst = 0;
    c->size = size;
    long iters = bench_calibrate(o, MPI_COMM_WORLD, bench_iters(o, size), run_calls, c);
    mine = run_calls(c, iters) / (double)iters;
    MPI_Reduce(&mine, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (c->rank == 0) {
        printf("%zu %.3f\n", size, worst * 1e6);
        fflush(stdout);
    }
}

/* Bytes each buffer needs for the largest size. */
static size_t buffer_bytes(const struct coll *c, size_t max)
{
    if (c->op == OP_ALLGATHER || c->op == OP_ALLTOALL) {
        return max * (size_t)c->nranks;
    }
    return max;
}

static int parse_op(const char *name, enum op *op)
{
    for (size_t i = 0; i < sizeof op_info / sizeof op_info[0]; i++) {
        if (strcmp(name, op_info[i].name) == 0) {
            *op = (enum op)i;
            return 0;
        }
    }
    return -1;
}

int main(int argc, char **argv)
{
    struct coll c = {0};
    struct bench_opts o;
    size_t max = 0, min;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &c.nranks);
    if (argc < 2 || parse_op(argv[1], &c.op) != 0) {
        bench_die("usage: bench_coll allreduce|bcast|reduce|allgather|alltoall|"
                  "reduce_scatter|barrier [options]");
    }
    if (op_function(c.op) == NULL) {
        if (c.rank == 0) {
            printf("# unsupported: this library has no MPI function for %s\n", argv[1]);
        }
        MPI_Finalize();
        return 3;
    }
    if (getenv("BENCH_FACE") && strcmp(getenv("BENCH_FACE"), "pgc") == 0) {
#ifdef MPISHIM
        /* After MPI_Init, pgc's world is MPI's. */
        if (pgc_init_process_group(NULL) != PGC_OK) {
            bench_die("BENCH_FACE=pgc: pgc_init_process_group failed");
        }
        c.pgc_world = pgc_group_world();
#else
        bench_die("BENCH_FACE=pgc needs mpishim's process-group face");
#endif
    }
    c.in_place = getenv("BENCH_IN_PLACE") && strcmp(getenv("BENCH_IN_PLACE"), "1") == 0;
    min = op_info[c.op].min;
    if (c.op == OP_REDSCAT && min < 4 * (size_t)c.nranks) {
        min = 4 * (size_t)c.nranks;
    }
    bench_parse(argc, argv, 2, min == 0 ? 1 : min, 1000, &o);
    if (c.op == OP_BARRIER) {
        o.nsizes = 1;
        o.sizes[0] = 0;
    }
    for (int i = 0; i < o.nsizes; i++) {
        max = o.sizes[i] > max ? o.sizes[i] : max;
    }
    c.sbuf = bench_alloc_floats(buffer_bytes(&c, max), 1.0f);
    c.rbuf = bench_alloc_floats(buffer_bytes(&c, max), 0.0f);
    bench_print_library(c.rank);
    if (c.rank == 0) {
        printf("# %s%s%s, %d ranks, unit us (slowest rank's mean)\n", c.pgc_world ? "pgc " : "",
               argv[1], c.in_place && !c.pgc_world ? " in place" : "", c.nranks);
    }
    for (int i = 0; i < o.nsizes; i++) {
        if (o.sizes[i] >= min) {
            measure(&c, &o, o.sizes[i]);
        }
    }
    bench_print_memory(MPI_COMM_WORLD);
    free(c.sbuf);
    free(c.rbuf);
#ifdef MPISHIM
    if (c.pgc_world) {
        pgc_destroy_process_group();
    }
#endif
    MPI_Finalize();
    return 0;
}
