/*
 * mr_pgc_mix.c - ranks that choose differently between a blocking pgc collective and its
 * async form (torch's async_op is each rank's own choice) must still meet: pgc's blocking
 * calls run pg's blocking forms (one round in shared memory, the direct algorithms) and
 * the async ones run pg's non-blocking forms, which take the same protocol for the same
 * arguments. For each of all_reduce, broadcast, reduce, all_gather_into_tensor,
 * all_to_all_single, reduce_scatter_tensor and barrier, at sizes across the shared-memory, direct and scheduled
 * ranges, every pattern of choices runs (rank r is async in round k when bit r of k is
 * set), several async calls in flight before the waits, and blocking calls between them.
 * Then MPI: non-blocking collectives left in flight while blocking ones run on the same
 * communicator (the shared-memory path must finish them in order).
 * Every result is checked against values computed here from ranks and indices.
 *
 * Run with 2 ranks or more; with MPISHIM_COLL_SHM=0 too (the message paths).
 */
#include <mpi.h>
#include <pgc.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me, nw;
static long nchecks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        nchecks++;                                                                                 \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d rank %d: %s: ", __FILE__, __LINE__, me, #cond);            \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (last error: %s)\n", pgc_last_error());                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_OK(call)                                                                             \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK(rc_ == PGC_OK, "%s returned %s", #call, pgc_status_name(rc_));                       \
    } while (0)

/* Element i of rank r's input in round k: small integers, exact in float32 sums. */
static int32_t val(int r, size_t i, int k)
{
    return (int32_t)((r + 1) * 3 + (int)(i % 97) + k);
}

enum kind { ALL_REDUCE, BROADCAST, REDUCE, ALL_GATHER, ALL_TO_ALL, RED_SCAT, BARRIER, NKINDS };
static const char *const kname[] = {"all_reduce", "broadcast",      "reduce", "all_gather",
                                    "all_to_all", "reduce_scatter", "barrier"};

/* One collective of kind on n int32 per rank (per block for all_gather and all_to_all). */
struct call {
    enum kind kind;
    size_t n;
    int k, root;
    int32_t *in, *out;
    pgc_work *work;
};

static void fill(struct call *c)
{
    size_t total = c->kind == ALL_TO_ALL || c->kind == RED_SCAT ? c->n * (size_t)nw : c->n;

    for (size_t i = 0; i < total; i++) {
        /* all_to_all: block j goes to rank j, so mark it with the destination too */
        c->in[i] = val(me, i, c->k) + (c->kind == ALL_TO_ALL ? (int32_t)(i / c->n) * 1000 : 0);
    }
}

static int start(struct call *c, int async_op)
{
    pgc_work **w = async_op ? &c->work : NULL;
    pgc_tensor in = pgc_host_tensor(c->in, c->n, PGC_INT32);
    pgc_tensor out = pgc_host_tensor(c->out, c->n * (size_t)nw, PGC_INT32);

    c->work = NULL;
    switch (c->kind) {
    case ALL_REDUCE:
        return pgc_all_reduce(&in, PGC_SUM, NULL, async_op, w);
    case BROADCAST:
        return pgc_broadcast(&in, c->root, NULL, async_op, w);
    case REDUCE:
        return pgc_reduce(&in, c->root, PGC_SUM, NULL, async_op, w);
    case ALL_GATHER:
        return pgc_all_gather_into_tensor(&out, &in, NULL, async_op, w);
    case ALL_TO_ALL:
        in.numel = c->n * (size_t)nw;
        return pgc_all_to_all_single(&out, &in, NULL, NULL, NULL, async_op, w);
    case RED_SCAT:
        in.numel = c->n * (size_t)nw;
        out.numel = c->n;
        return pgc_reduce_scatter_tensor(&out, &in, PGC_SUM, NULL, async_op, w);
    default:
        return pgc_barrier(NULL, async_op, w);
    }
}

static void check(const struct call *c)
{
    const char *what = kname[c->kind];

    for (size_t i = 0; i < c->n; i++) {
        int64_t sum = 0;
        for (int r = 0; r < nw; r++) {
            sum += val(r, i, c->k);
        }
        if (c->kind == ALL_REDUCE || (c->kind == REDUCE && me == c->root)) {
            CHECK(c->in[i] == sum, "%s n=%zu round %d: [%zu] = %d, want %lld", what, c->n, c->k, i,
                  c->in[i], (long long)sum);
        } else if (c->kind == BROADCAST || c->kind == REDUCE) {
            int32_t want = val(c->kind == BROADCAST ? c->root : me, i, c->k);
            CHECK(c->in[i] == want, "%s n=%zu round %d: [%zu] = %d, want %d", what, c->n, c->k, i,
                  c->in[i], want);
        }
        if (c->kind == RED_SCAT) {
            int64_t mine = 0;
            for (int r = 0; r < nw; r++) {
                mine += val(r, (size_t)me * c->n + i, c->k);
            }
            CHECK(c->out[i] == mine, "%s n=%zu round %d: [%zu] = %d, want %lld", what, c->n,
                  c->k, i, c->out[i], (long long)mine);
        }
        for (int r = 0; r < nw && (c->kind == ALL_GATHER || c->kind == ALL_TO_ALL); r++) {
            int32_t want = val(r, i + (c->kind == ALL_TO_ALL ? (size_t)me * c->n : 0), c->k) +
                           (c->kind == ALL_TO_ALL ? me * 1000 : 0);
            int32_t got = c->out[(size_t)r * c->n + i];
            CHECK(got == want, "%s n=%zu round %d: from rank %d [%zu] = %d, want %d", what, c->n,
                  c->k, r, i, got, want);
        }
    }
}

/* Round k of kind at n elements: three calls, each rank async or blocking by the bits of k;
 * the async ones are waited for only after all three started. */
static void round_of(enum kind kind, size_t n, int k, int32_t *bufs)
{
    struct call c[3];

    for (int j = 0; j < 3; j++) {
        size_t per = n * (size_t)nw;
        c[j] = (struct call){kind, n, k * 3 + j, (k + j) % nw, bufs + 2 * per * (size_t)j,
                             bufs + 2 * per * (size_t)j + per, NULL};
        fill(&c[j]);
        int async_op = (k >> (me % 4)) & 1 ? j != 1 : j == 1;
        CHECK_OK(start(&c[j], async_op));
    }
    for (int j = 0; j < 3; j++) {
        if (c[j].work) {
            CHECK_OK(pgc_work_wait(c[j].work, -1));
            pgc_work_free(c[j].work);
        }
        check(&c[j]);
    }
}

static void pgc_part(void)
{
    static const size_t sizes[] = {1, 2, 12, 100, 512, 700, 4096, 40000};
    /* Three calls, each an input and an output of up to 40000 elements per rank. Sized for
     * 5 ranks before, the buffers of 6 or more ran past its end: silent at 6 ranks, wrong
     * data at 8 (the calls then shared memory with other blocks of the heap). */
    size_t max = 40000 * (size_t)nw * 2 * 3;
    int32_t *bufs = malloc(sizeof(int32_t) * max);

    CHECK(bufs, "no memory");
    for (int kind = 0; kind < NKINDS; kind++) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            size_t n = kind == ALL_TO_ALL || kind == ALL_GATHER || kind == RED_SCAT
                           ? sizes[s] / (size_t)nw + 1
                           : sizes[s];
            for (int k = 0; k < 16; k++) {
                round_of((enum kind)kind, n, k, bufs);
            }
            if (kind == BARRIER) {
                break;
            }
        }
    }
    free(bufs);
}

/* MPI: a non-blocking allreduce, bcast and barrier left in flight while blocking ones run. */
static void mpi_part(void)
{
    for (int k = 0; k < 200; k++) {
        int a = me + k, b = -1, c = k * 7, d = 0, sum = 0, want = 0;
        MPI_Request r[3];
        for (int i = 0; i < nw; i++) {
            want += i + k;
        }
        b = me == k % nw ? k * 11 : -1;
        MPI_Iallreduce(&a, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
        MPI_Ibcast(&b, 1, MPI_INT, k % nw, MPI_COMM_WORLD, &r[1]);
        MPI_Allreduce(&c, &d, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        MPI_Ibarrier(MPI_COMM_WORLD, &r[2]);
        MPI_Bcast(&c, 1, MPI_INT, (k + 1) % nw, MPI_COMM_WORLD);
        MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
        CHECK(sum == want, "MPI_Iallreduce round %d: %d, want %d", k, sum, want);
        CHECK(b == k * 11, "MPI_Ibcast round %d: %d, want %d", k, b, k * 11);
        CHECK(d == k * 7 && c == k * 7, "MPI_Allreduce/Bcast round %d: %d %d", k, d, c);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    CHECK_OK(pgc_init_process_group(NULL));
    me = pgc_get_rank();
    nw = pgc_get_world_size();
    pgc_part();
    mpi_part();
    CHECK_OK(pgc_destroy_process_group());
    MPI_Finalize();
    if (me == 0) {
        printf("mr_pgc_mix: %d ranks, %ld checks passed\n", nw, nchecks);
    }
    return 0;
}
