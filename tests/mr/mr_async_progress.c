/*
 * mr_async_progress.c - passive-target RMA to ranks that compute without calling MPI
 * (MPISHIM_ASYNC_PROGRESS=1, pg_core/pg_async.c).
 *
 * Run over tcp;ofi_rxm with MPISHIM_SHM_RING=0, MPISHIM_RMA_DIRECT=0 and MPISHIM_RMA_CMA=0
 * (tests/mr.list), so that every operation needs its target's progress, as between nodes:
 * the lock and the accumulate are active messages the target's progress applies, and a put
 * or get is an fi_write/fi_read that the target's tcp provider serves only when polled (or
 * an active message with MPISHIM_WIN_FI_RMA=0).
 *
 * Default mode: for windows of MPI_Win_allocate and MPI_Win_create, and for lock/unlock and
 * lock_all/flush/unlock_all epochs, every rank above 0 creates the window and then computes
 * without calling MPI until rank 0 says, through a file outside MPI created after its epoch
 * closed, that the epoch completed. Rank 0 puts, gets and accumulates on each of them. A
 * target that does not see the file within GIVE_UP seconds fails: the origin never
 * completed, because the target's progress did not happen (run it without the variable to
 * see that). Then the targets check what was put and accumulated, rank 0 what it got, each
 * against values computed from the ranks.
 *
 * --expect-stall (2 ranks, without the variable): the converse. Rank 0 says through a file
 * that it starts a lock/put/get/accumulate/unlock epoch on rank 1, and through another that
 * the epoch closed. Rank 1 computes STALL_LOOK seconds after the first: the second must not
 * exist then, since the lock is an active message that only rank 1's progress answers (MPI
 * has no non-blocking test of an epoch, and MPI_Rget completes before it returns on the
 * active-message path). Then rank 1 enters MPI_Barrier, which serves the epoch, and the
 * values are checked. A slow rank 0 can only make the check weaker, never fail it.
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define N 64           /* elements in each of the put, get and accumulate regions */
#define GIVE_UP 20.0   /* s a target computes waiting for the origin's word */
#define STALL_LOOK 0.3 /* s the target computes while the epoch must not close */

enum kind { ALLOCATE, CREATE };
enum sync { LOCK, LOCK_ALL };

static int rank, nprocs;
static char marker[256]; /* rank 0's file name prefix, broadcast */

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* What target t's window holds at element i before any epoch. */
static long initial(int t, int i)
{
    return (long)t * 100000 + i * 7 + 3;
}

/* What rank 0 puts at element i of target t in variant v, and what it accumulates. */
static long put_value(int v, int t, int i)
{
    return -(long)(v * 10000 + t * 1000 + i);
}

static long acc_value(int v, int t, int i)
{
    return (long)(v + 1) * 1000003 + t * 31 + i;
}

static void marker_name(int v, char *out, size_t len)
{
    snprintf(out, len, "%s.%d", marker, v);
}

/* Computes without calling MPI until the file exists; false after GIVE_UP seconds. */
static bool compute_until(const char *path)
{
    volatile double x = 0;
    double start = now();
    struct stat st;

    for (;;) {
        for (int i = 0; i < 100000; i++) {
            x += (double)i * 1e-9;
        }
        if (stat(path, &st) == 0) {
            return true;
        }
        if (now() - start > GIVE_UP) {
            return false;
        }
    }
}

static void make_marker(const char *path)
{
    FILE *f = fopen(path, "w");

    CHECK(f != NULL, "cannot create %s", path);
    fclose(f);
}

static MPI_Win make_window(enum kind k, long **base)
{
    MPI_Aint bytes = (MPI_Aint)(3 * N * sizeof(long));
    MPI_Win win;

    if (k == ALLOCATE) {
        CHECK_MPI(MPI_Win_allocate(bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, base, &win));
    } else {
        *base = malloc((size_t)bytes);
        CHECK(*base != NULL, "no memory");
        for (int i = 0; i < 3 * N; i++) {
            (*base)[i] = initial(rank, i);
        }
        CHECK_MPI(MPI_Win_create(*base, bytes, sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    }
    return win;
}

/* Rank 0's operations on target t: put to [0, N), get [N, 2N), accumulate to [2N, 3N). */
static void origin_ops(MPI_Win win, int v, int t, long *got)
{
    long put[N], acc[N];

    for (int i = 0; i < N; i++) {
        put[i] = put_value(v, t, i);
        acc[i] = acc_value(v, t, i);
    }
    CHECK_MPI(MPI_Put(put, N, MPI_LONG, t, 0, N, MPI_LONG, win));
    CHECK_MPI(MPI_Get(got, N, MPI_LONG, t, N, N, MPI_LONG, win));
    CHECK_MPI(MPI_Accumulate(acc, N, MPI_LONG, t, 2 * N, N, MPI_LONG, MPI_SUM, win));
}

static void origin_epochs(MPI_Win win, int v, enum sync s, long (*got)[N])
{
    if (s == LOCK) {
        for (int t = 1; t < nprocs; t++) {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            origin_ops(win, v, t, got[t]);
            CHECK_MPI(MPI_Win_unlock(t, win));
        }
        return;
    }
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int t = 1; t < nprocs; t++) {
        origin_ops(win, v, t, got[t]);
    }
    for (int t = 1; t < nprocs; t++) {
        CHECK_MPI(MPI_Win_flush(t, win));
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
}

static void check_target(const long *base, int v)
{
    for (int i = 0; i < N; i++) {
        CHECK(base[i] == put_value(v, rank, i), "variant %d: put element %d is %ld, not %ld", v, i,
              base[i], put_value(v, rank, i));
        CHECK(base[N + i] == initial(rank, N + i), "variant %d: element %d changed to %ld", v,
              N + i, base[N + i]);
        long want = initial(rank, 2 * N + i) + acc_value(v, rank, i);
        CHECK(base[2 * N + i] == want, "variant %d: accumulated element %d is %ld, not %ld", v, i,
              base[2 * N + i], want);
    }
}

static void variant(int v, enum kind k, enum sync s)
{
    static long got[64][N];
    char path[300];
    long *base;
    MPI_Win win = make_window(k, &base);

    marker_name(v, path, sizeof(path));
    if (k == ALLOCATE) {
        /* Its own memory, filled before anyone may access it (the barrier orders it). */
        for (int i = 0; i < 3 * N; i++) {
            base[i] = initial(rank, i);
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        origin_epochs(win, v, s, got);
        make_marker(path);
    } else {
        CHECK(compute_until(path),
              "variant %d (%s, %s): rank 0 never completed its passive-target epoch on this "
              "rank within %.0f s while it computed: the target's progress did not happen "
              "(is MPISHIM_ASYNC_PROGRESS=1 set?)",
              v, k == ALLOCATE ? "MPI_Win_allocate" : "MPI_Win_create",
              s == LOCK ? "lock/unlock" : "lock_all/flush", GIVE_UP);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        for (int t = 1; t < nprocs; t++) {
            for (int i = 0; i < N; i++) {
                CHECK(got[t][i] == initial(t, N + i),
                      "variant %d: got element %d of rank %d "
                      "is %ld, not %ld",
                      v, i, t, got[t][i], initial(t, N + i));
            }
        }
        unlink(path);
    } else {
        check_target(base, v);
    }
    CHECK_MPI(MPI_Win_free(&win));
    if (k == CREATE) {
        free(base);
    }
}

/* Computes without calling MPI for STALL_LOOK seconds. */
static void compute_for(double seconds)
{
    volatile double x = 0;

    for (double start = now(); now() - start < seconds;) {
        for (int i = 0; i < 100000; i++) {
            x += (double)i * 1e-9;
        }
    }
}

static void expect_stall(void)
{
    const int v = 4;
    char started[300], closed[300];
    long got[2][N];
    long *base;
    MPI_Win win = make_window(ALLOCATE, &base);
    struct stat st;

    marker_name(v, started, sizeof(started));
    snprintf(closed, sizeof(closed), "%s.closed", started);
    for (int i = 0; i < 3 * N; i++) {
        base[i] = initial(rank, i);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        make_marker(started);
        origin_epochs(win, v, LOCK, got); /* the one target, rank 1 */
        make_marker(closed);
    } else {
        CHECK(compute_until(started), "rank 0 never started its epoch");
        compute_for(STALL_LOOK);
        CHECK(stat(closed, &st) != 0,
              "rank 0's epoch on this rank closed while it computed outside "
              "MPI: something progressed it (is MPISHIM_ASYNC_PROGRESS set?)");
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* rank 1's progress: the epoch closes */
    if (rank == 0) {
        for (int i = 0; i < N; i++) {
            CHECK(got[1][i] == initial(1, N + i), "got element %d is %ld, not %ld", i, got[1][i],
                  initial(1, N + i));
        }
        unlink(started);
        unlink(closed);
    } else {
        check_target(base, v);
    }
    CHECK_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    bool stall = argc > 1 && strcmp(argv[argc - 1], "--expect-stall") == 0;

    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs < 2 || nprocs > 64) {
        if (rank == 0) {
            printf("SKIP: mr_async_progress needs 2 to 64 ranks, not %d\n", nprocs);
        }
        MPI_Finalize();
        return 0;
    }
    if (rank == 0) {
        const char *dir = getenv("TMPDIR");
        snprintf(marker, sizeof(marker), "%s/mr_async_progress.%ld", dir && *dir ? dir : "/tmp",
                 (long)getpid());
    }
    CHECK_MPI(MPI_Bcast(marker, sizeof(marker), MPI_CHAR, 0, MPI_COMM_WORLD));
    if (stall && nprocs == 2) {
        expect_stall();
    } else {
        variant(0, ALLOCATE, LOCK);
        variant(1, ALLOCATE, LOCK_ALL);
        variant(2, CREATE, LOCK);
        variant(3, CREATE, LOCK_ALL);
    }
    return mrt_finish("mr_async_progress");
}
