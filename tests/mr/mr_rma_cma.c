/*
 * mr_rma_cma.c - put and get on windows of user memory (MPI_Win_create) and on dynamic
 * windows (MPI_Win_create_dynamic + attach), which go to targets on this node by CMA
 * (process_vm_writev/readv, mpi_shim/shim_win_cma.c) and otherwise, or with
 * MPISHIM_RMA_CMA=0, as active messages.
 *
 * Each window kind runs three epochs, one per synchronisation (fence; lock per target;
 * lock_all with a flush). Every rank puts a row of K int64 into every rank's window, half
 * through a vector type on both sides and half from a contiguous buffer into a vector at
 * the target, and a large block (BIG int64) into its right neighbour's; then it gets its
 * row back through a vector at the target and a vector of another shape locally, and the
 * large block into a vector of BIG/4 blocks (more pieces than one system call takes). Under
 * lock_all it also reads each row back in the same epoch after MPI_Win_flush. Every value
 * is val(epoch, origin, target, slot), computed here on both sides; each epoch writes new
 * ones, so a missed or stale copy shows.
 *
 * MPI_Win_get_info's mpishim_rma_cma must say whether CMA is in use, computed here: not
 * with one rank, a forced libfabric provider, MPISHIM_SHM_RING=0 or MPISHIM_RMA_CMA=0, nor
 * where this process cannot read itself with process_vm_readv; else on (ranks of one node).
 * A dynamic window's region detached after a put reached it by CMA refuses the next put
 * (MPI_ERR_RMA_RANGE at unlock): the origin's copy of the target's regions is refreshed.
 *
 * --serve (with MPISHIM_TIMEOUT=2): a wait that serves requests restarts its timeout. Rank 0
 * waits in MPI_Barrier while the other ranks accumulate into its window for 2.5 timeouts,
 * flushing each one: the barrier must succeed and every accumulate count. The others start
 * 0.1 s late, so the barrier has turned to napping between polls (after 10 ms), and leave
 * 0.1 ms between two accumulates; once it serves it must poll on: the MPI_T counter
 * wait_naps_serving must not grow (it grew when the nap was decided before the look that saw
 * the requests; MPICH's rma/rma_contig then took 164 s instead of 34). Then rank 0 waits
 * in a barrier the others never call, after they sent a few accumulates and stopped: it must
 * time out (MPI_ERRORS_RETURN) with a message that says so.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* process_vm_readv */
#endif
#include "mrtest.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define K 48          /* int64 slots of each origin's row */
#define BIG (1 << 16) /* int64 of the large block: 512 KiB */

static int rank, size;

static int64_t val(int e, int o, int t, int i)
{
    return ((int64_t)(e + 1) << 40) + (int64_t)o * 1000003 + (int64_t)t * 1009 + i + 1;
}

/* A window and where each target's rows and large block are, as target displacements. */
struct win {
    MPI_Win w;
    bool dyn;
    int64_t *rows, *big;        /* my memory */
    MPI_Aint *rows_at, *big_at; /* [size] dynamic: their addresses; create: element offsets */
};

static MPI_Aint row_disp(const struct win *x, int t, int o, int i)
{
    MPI_Aint slot = (MPI_Aint)o * K + i;

    return x->dyn ? x->rows_at[t] + slot * (MPI_Aint)sizeof(int64_t) : slot;
}

static MPI_Aint big_disp(const struct win *x, int t)
{
    return x->dyn ? x->big_at[t] : (MPI_Aint)size * K;
}

static void win_open(struct win *x, bool dyn)
{
    size_t n = (size_t)size * K + BIG;
    MPI_Aint mine[2];

    x->dyn = dyn;
    x->rows = calloc(n, sizeof(int64_t));
    x->big = dyn ? calloc(BIG, sizeof(int64_t)) : x->rows + (size_t)size * K;
    x->rows_at = calloc((size_t)size, sizeof(MPI_Aint));
    x->big_at = calloc((size_t)size, sizeof(MPI_Aint));
    CHECK(x->rows && x->big && x->rows_at && x->big_at, "no memory");
    if (!dyn) {
        CHECK_MPI(MPI_Win_create(x->rows, (MPI_Aint)(n * sizeof(int64_t)), sizeof(int64_t),
                                 MPI_INFO_NULL, MPI_COMM_WORLD, &x->w));
        return;
    }
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &x->w));
    CHECK_MPI(MPI_Win_attach(x->w, x->rows, (MPI_Aint)((size_t)size * K * sizeof(int64_t))));
    CHECK_MPI(MPI_Win_attach(x->w, x->big, BIG * (MPI_Aint)sizeof(int64_t)));
    CHECK_MPI(MPI_Get_address(x->rows, &mine[0]));
    CHECK_MPI(MPI_Get_address(x->big, &mine[1]));
    for (int r = 0; r < size; r++) {
        MPI_Aint both[2];

        if (r == rank) {
            both[0] = mine[0];
            both[1] = mine[1];
        }
        CHECK_MPI(MPI_Bcast(both, 2, MPI_AINT, r, MPI_COMM_WORLD));
        x->rows_at[r] = both[0];
        x->big_at[r] = both[1];
    }
}

static void win_close(struct win *x)
{
    CHECK_MPI(MPI_Win_free(&x->w));
    if (x->dyn) {
        free(x->big);
    }
    free(x->rows);
    free(x->rows_at);
    free(x->big_at);
}

/* Whether this process may read memory by CMA at all (the kernel's answer, asked here
 * independently of the library). */
static bool cma_works_here(void)
{
    int64_t word = 0x5eed, copy = 0;
    struct iovec l = {&copy, sizeof(copy)}, r = {&word, sizeof(word)};

    return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == sizeof(word) && copy == word;
}

static bool env_is(const char *name, const char *value)
{
    const char *e = getenv(name);

    return e && (value ? strcmp(e, value) == 0 : *e != '\0');
}

static void check_path(const struct win *x)
{
    MPI_Info info;
    char v[64];
    int flag;
    bool want = size > 1 && !env_is("MPISHIM_FABRIC_PROVIDER", NULL) &&
                !env_is("MPISHIM_SHM_RING", "0") && !env_is("MPISHIM_RMA_CMA", "0") &&
                cma_works_here();

    CHECK_MPI(MPI_Win_get_info(x->w, &info));
    CHECK_MPI(MPI_Info_get(info, "mpishim_rma_cma", (int)sizeof(v) - 1, v, &flag));
    CHECK(flag, "the window's info has no mpishim_rma_cma");
    CHECK(strcmp(v, want ? "true" : "false") == 0, "mpishim_rma_cma=%s, expected %s", v,
          want ? "true" : "false");
    CHECK_MPI(MPI_Info_free(&info));
    if (rank == 0) {
        printf("mr_rma_cma: %s window: put and get by %s\n", x->dyn ? "dynamic" : "create",
               want ? "CMA" : "active messages");
    }
}

/* The derived types: every other int64 (n of them), and n blocks of 4 int64 with a gap of
 * one after each (the large block's local side). */
static MPI_Datatype every_other(int n)
{
    MPI_Datatype t;

    CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_INT64_T, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}

static MPI_Datatype fours(int n)
{
    MPI_Datatype t;

    CHECK_MPI(MPI_Type_vector(n, 4, 5, MPI_INT64_T, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}

/* My puts of epoch e to target t: the even slots of my row from every other element of
 * src, the odd slots from a contiguous buffer; the large block to my right neighbour. */
static void put_to(const struct win *x, int e, int t, int64_t *src, int64_t *odd, int64_t *big)
{
    MPI_Datatype half = every_other(K / 2);

    for (int i = 0; i < K; i++) {
        src[i] = val(e, rank, t, i);
    }
    for (int j = 0; j < K / 2; j++) {
        odd[j] = val(e, rank, t, 2 * j + 1);
    }
    CHECK_MPI(MPI_Put(src, 1, half, t, row_disp(x, t, rank, 0), 1, half, x->w));
    CHECK_MPI(MPI_Put(odd, K / 2, MPI_INT64_T, t, row_disp(x, t, rank, 1), 1, half, x->w));
    if (t == (rank + 1) % size) {
        for (int i = 0; i < BIG; i++) {
            big[i] = val(e, rank, t, K + i);
        }
        CHECK_MPI(MPI_Put(big, BIG, MPI_INT64_T, t, big_disp(x, t), BIG, MPI_INT64_T, x->w));
    }
    MPI_Type_free(&half);
}

/* What the puts of epoch e left in my window. */
static void check_mine(const struct win *x, int e)
{
    int left = (rank + size - 1) % size;

    for (int o = 0; o < size; o++) {
        for (int i = 0; i < K; i++) {
            int64_t got = x->rows[(size_t)o * K + i], want = val(e, o, rank, i);

            CHECK(got == want, "epoch %d: slot %d of origin %d's row holds %lld, expected %lld", e,
                  i, o, (long long)got, (long long)want);
        }
    }
    for (int i = 0; i < BIG; i++) {
        CHECK(x->big[i] == val(e, left, rank, K + i),
              "epoch %d: element %d of the large block holds %lld, expected %lld (from rank %d)", e,
              i, (long long)x->big[i], (long long)val(e, left, rank, K + i), left);
    }
}

/* Gets of epoch e from target t, checked once complete (done by the caller): the odd slots
 * of my row into a contiguous buffer, the whole row into every other element of a buffer
 * of 2K, the large block (from my right neighbour) into blocks of 4 with gaps. */
static void get_from(const struct win *x, int t, int64_t *odd, int64_t *row2, int64_t *big5)
{
    MPI_Datatype half = every_other(K / 2), whole = every_other(K), gaps = fours(BIG / 4);

    CHECK_MPI(MPI_Get(odd, K / 2, MPI_INT64_T, t, row_disp(x, t, rank, 1), 1, half, x->w));
    CHECK_MPI(MPI_Get(row2, 1, whole, t, row_disp(x, t, rank, 0), K, MPI_INT64_T, x->w));
    if (t == (rank + 1) % size) {
        CHECK_MPI(MPI_Get(big5, 1, gaps, t, big_disp(x, t), BIG, MPI_INT64_T, x->w));
    }
    MPI_Type_free(&half);
    MPI_Type_free(&whole);
    MPI_Type_free(&gaps);
}

static void check_got(int e, int t, const int64_t *odd, const int64_t *row2, const int64_t *big5)
{
    for (int j = 0; j < K / 2; j++) {
        CHECK(odd[j] == val(e, rank, t, 2 * j + 1), "epoch %d: got %lld from rank %d's slot %d", e,
              (long long)odd[j], t, 2 * j + 1);
    }
    for (int i = 0; i < K; i++) {
        CHECK(row2[2 * i] == val(e, rank, t, i) && row2[2 * i + 1] == -1,
              "epoch %d: got %lld (gap %lld) from rank %d's slot %d", e, (long long)row2[2 * i],
              (long long)row2[2 * i + 1], t, i);
    }
    for (int i = 0; t == (rank + 1) % size && i < BIG; i++) {
        int64_t got = big5[i / 4 * 5 + i % 4];

        CHECK(got == val(e, rank, t, K + i),
              "epoch %d: element %d of rank %d's large block: "
              "got %lld, expected %lld",
              e, i, t, (long long)got, (long long)val(e, rank, t, K + i));
    }
    for (int b = 0; t == (rank + 1) % size && b < BIG / 4; b++) {
        CHECK(big5[b * 5 + 4] == -1, "a get wrote into the gap after block %d", b);
    }
}

struct bufs {
    int64_t *src, *odd, *big, *godd, *row2, *big5;
};

static void bufs_reset(struct bufs *b)
{
    memset(b->godd, 0xff, sizeof(int64_t) * K / 2); /* -1 everywhere */
    memset(b->row2, 0xff, sizeof(int64_t) * 2 * K);
    memset(b->big5, 0xff, sizeof(int64_t) * (BIG / 4) * 5);
}

/* Epoch e under fences: all puts, fence, check, all gets, fence, check. */
static void epoch_fence(const struct win *x, int e, struct bufs *b)
{
    CHECK_MPI(MPI_Win_fence(0, x->w));
    for (int t = 0; t < size; t++) {
        put_to(x, e, t, b->src + (size_t)t * K, b->odd + (size_t)t * K, b->big);
    }
    CHECK_MPI(MPI_Win_fence(0, x->w));
    check_mine(x, e);
    for (int t = 0; t < size; t++) {
        bufs_reset(b);
        get_from(x, t, b->godd, b->row2, b->big5);
        CHECK_MPI(MPI_Win_fence(0, x->w));
        check_got(e, t, b->godd, b->row2, b->big5);
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, x->w));
}

/* Epoch e under a lock per target: exclusive for the puts, shared for the gets. */
static void epoch_lock(const struct win *x, int e, struct bufs *b)
{
    for (int i = 0; i < size; i++) {
        int t = (rank + i) % size;

        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, x->w));
        put_to(x, e, t, b->src + (size_t)t * K, b->odd + (size_t)t * K, b->big);
        CHECK_MPI(MPI_Win_unlock(t, x->w));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* My own loads of my window after the others' unlocks and a barrier. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, x->w));
    check_mine(x, e);
    CHECK_MPI(MPI_Win_unlock(rank, x->w));
    for (int i = 0; i < size; i++) {
        int t = (rank + size - i) % size;

        bufs_reset(b);
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, x->w));
        get_from(x, t, b->godd, b->row2, b->big5);
        CHECK_MPI(MPI_Win_unlock(t, x->w));
        check_got(e, t, b->godd, b->row2, b->big5);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Epoch e under lock_all: each put flushed and read back in the same epoch, then the gets. */
static void epoch_lock_all(const struct win *x, int e, struct bufs *b)
{
    CHECK_MPI(MPI_Win_lock_all(0, x->w));
    for (int t = 0; t < size; t++) {
        put_to(x, e, t, b->src + (size_t)t * K, b->odd + (size_t)t * K, b->big);
        CHECK_MPI(MPI_Win_flush(t, x->w));
        bufs_reset(b);
        get_from(x, t, b->godd, b->row2, b->big5);
        CHECK_MPI(MPI_Win_flush_local(t, x->w));
        check_got(e, t, b->godd, b->row2, b->big5);
    }
    CHECK_MPI(MPI_Win_unlock_all(x->w));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    check_mine(x, e);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* A dynamic window's region that its target detached after a put reached it refuses the
 * next put: rank 0 is the target, rank 1 the origin. */
static void test_detached(void)
{
    int64_t region[4] = {0, 0, 0, 0}, v = 7;
    MPI_Aint at = 0;
    MPI_Win w;
    int rc;

    if (size < 2) {
        return;
    }
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &w));
    CHECK_MPI(MPI_Win_set_errhandler(w, MPI_ERRORS_RETURN));
    if (rank == 0) {
        CHECK_MPI(MPI_Win_attach(w, region, sizeof(region)));
        CHECK_MPI(MPI_Get_address(region, &at));
    }
    CHECK_MPI(MPI_Bcast(&at, 1, MPI_AINT, 0, MPI_COMM_WORLD));
    if (rank == 1) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT64_T, 0, at + 8, 1, MPI_INT64_T, w));
        CHECK_MPI(MPI_Win_unlock(0, w));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(region[1] == 7, "the put into the attached region left %lld", (long long)region[1]);
        CHECK_MPI(MPI_Win_detach(w, region));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 1) {
        v = 8;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, w));
        rc = MPI_Put(&v, 1, MPI_INT64_T, 0, at + 16, 1, MPI_INT64_T, w);
        if (rc == MPI_SUCCESS) {
            rc = MPI_Win_unlock(0, w);
        } else {
            CHECK_MPI(MPI_Win_unlock(0, w));
        }
        {
            int cls;

            MPI_Error_class(rc, &cls);
            CHECK(cls == MPI_ERR_RMA_RANGE,
                  "a put into a detached region gave class %d, "
                  "expected MPI_ERR_RMA_RANGE",
                  cls);
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(region[2] == 0, "a put into a detached region was applied (%lld)",
              (long long)region[2]);
    }
    CHECK_MPI(MPI_Win_free(&w));
}

static void test_windows(void)
{
    struct bufs b = {
        .src = malloc(sizeof(int64_t) * K * (size_t)size),
        .odd = malloc(sizeof(int64_t) * K * (size_t)size),
        .big = malloc(sizeof(int64_t) * BIG),
        .godd = malloc(sizeof(int64_t) * K / 2),
        .row2 = malloc(sizeof(int64_t) * 2 * K),
        .big5 = malloc(sizeof(int64_t) * (BIG / 4) * 5),
    };

    CHECK(b.src && b.odd && b.big && b.godd && b.row2 && b.big5, "no memory");
    for (int dyn = 0; dyn < 2; dyn++) {
        struct win x;

        win_open(&x, dyn);
        check_path(&x);
        epoch_fence(&x, 3 * dyn, &b);
        epoch_lock(&x, 3 * dyn + 1, &b);
        epoch_lock_all(&x, 3 * dyn + 2, &b);
        win_close(&x);
    }
    test_detached();
    free(b.src);
    free(b.odd);
    free(b.big);
    free(b.godd);
    free(b.row2);
    free(b.big5);
}

/* MPI_T's wait_naps_serving, read as a tool would: counted from the first read (a handle
 * reads what its counter gained since it was allocated). */
static unsigned long long naps_serving(void)
{
    static struct mrt_counter c;
    int provided;

    if (!c.ready) {
        CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    }
    return mrt_counter_read(&c, "wait_naps_serving");
}

/* --serve: see the top. Returns after both cases. */
static void test_serve(void)
{
    const char *e = getenv("MPISHIM_TIMEOUT");
    double timeout = e ? atof(e) : 0.0;
    int64_t *counts = calloc((size_t)size, sizeof(int64_t)), one = 1, n = 0;
    unsigned long long naps;
    MPI_Comm dup;
    MPI_Win w;

    CHECK(size >= 2 && timeout > 0 && timeout <= 10,
          "--serve needs 2+ ranks and "
          "MPISHIM_TIMEOUT of at most 10 s (got %s)",
          e ? e : "none");
    CHECK(counts, "no memory");
    CHECK_MPI(MPI_Win_create(counts, sizeof(int64_t) * size, sizeof(int64_t), MPI_INFO_NULL,
                             MPI_COMM_WORLD, &w));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* A stream of 2.5 timeouts while rank 0 waits in the barrier, from 0.1 s on. */
    naps = naps_serving();
    if (rank != 0) {
        struct timespec late = {0, 100 * 1000 * 1000};
        double until;

        nanosleep(&late, NULL);
        until = MPI_Wtime() + 2.5 * timeout;

        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
        while (MPI_Wtime() < until) {
            CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, rank, 1, MPI_INT64_T, MPI_SUM, w));
            CHECK_MPI(MPI_Win_flush(0, w));
            n++;
            /* 0.1 ms of work between two, outside MPI: rank 0's wait then has idle polls,
             * which are naps if it naps while serving. */
            for (double t = MPI_Wtime(); MPI_Wtime() - t < 1e-4;) {
            }
        }
        CHECK_MPI(MPI_Win_unlock(0, w));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    naps = naps_serving() - naps;
    CHECK(naps == 0, "rank %d's waits napped %llu times while they served requests", rank, naps);
    if (rank != 0) {
        CHECK_MPI(MPI_Send(&n, 1, MPI_INT64_T, 0, 0, MPI_COMM_WORLD));
    } else {
        for (int r = 1; r < size; r++) {
            CHECK_MPI(MPI_Recv(&n, 1, MPI_INT64_T, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(n > 0 && counts[r] == n, "rank %d accumulated %lld times, the window holds %lld",
                  r, (long long)n, (long long)counts[r]);
        }
        printf("mr_rma_cma --serve: rank 0's barrier served accumulates for %.1f s "
               "(MPISHIM_TIMEOUT=%g) and returned\n",
               2.5 * timeout, timeout);
    }
    /* The counts are read before the next accumulates start (rank 0's receives serve them). */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* The others send a few, stop, and never call the barrier that rank 0 waits in. */
    if (rank != 0) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, w));
        for (int i = 0; i < 10; i++) {
            CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT64_T, 0, rank, 1, MPI_INT64_T, MPI_SUM, w));
            CHECK_MPI(MPI_Win_flush(0, w));
        }
        CHECK_MPI(MPI_Win_unlock(0, w));
    } else {
        char msg[MPI_MAX_ERROR_STRING];
        int rc = MPI_Barrier(dup), len = 0;

        CHECK(rc != MPI_SUCCESS, "a barrier that no other rank called returned MPI_SUCCESS");
        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "timed out") != NULL, "the barrier's error does not say it timed out: %s",
              msg);
        printf("mr_rma_cma --serve: the barrier the others skipped failed: %s\n", msg);
    }
    {
        MPI_Request req;
        int done = 0, rc;

        CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req));
        do {
            rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        } while (rc == MPI_SUCCESS && !done);
        CHECK_MPI(rc);
    }
    CHECK_MPI(MPI_Win_free(&w));
    free(counts);
}

int main(int argc, char **argv)
{
    bool serve = false;

    mrt_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        serve = serve || strcmp(argv[i], "--serve") == 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (serve) {
        test_serve();
    } else {
        test_windows();
    }
    return mrt_finish("mr_rma_cma");
}
