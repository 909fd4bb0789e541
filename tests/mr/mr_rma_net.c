/*
 * mr_rma_net.c - MPI_Put and MPI_Get through libfabric FI_RMA (mpi_shim/shim_win_net.c).
 *
 * Run over a network provider (tests/mr.list: MPISHIM_FABRIC_PROVIDER=tcp;ofi_rxm, so every
 * peer counts as remote). Windows of MPI_Win_create and MPI_Win_allocate; every size from
 * 1 B to 4 MiB; each rank puts a block into its own slot of every other rank's window and
 * gets it back, under fence, lock/unlock, lock_all with MPI_Rput/MPI_Rget, and
 * post-start-complete-wait. Every byte is checked against a value computed from (round,
 * origin, target, offset), by the target after the epoch for puts and by the origin for gets.
 *
 * --fi-rma: the transfers must have gone as fi_write/fi_read: MPI_T's fabric_rma_ops grew by
 * exactly the number of puts and gets to other ranks, fabric_rma_bytes by their bytes, and
 * the windows report mpishim_fi_rma=true. --am (with MPISHIM_WIN_FI_RMA=0): neither counter
 * moved and the windows report false, with the same data checks.
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stdint.h>

#define MAXS ((size_t)4 << 20)

static const size_t sizes[] = {1, 7, 64, 4093, 65536 + 3, (size_t)1 << 20, MAXS};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

enum mode { FENCE, LOCK, REQ, PSCW, NMODES };
static const char *const mode_names[] = {"fence", "lock", "rput/rget", "pscw"};

static int rank, nprocs;
static unsigned char *src, *dst;
static unsigned long long want_ops, want_bytes;

static unsigned char value(int round, int origin, int target, size_t i)
{
    return (unsigned char)(i * 131u + (i >> 9) * 7u + (unsigned)origin * 17u +
                           (unsigned)target * 29u + (unsigned)round * 53u + 1u);
}

static void fill(unsigned char *buf, int round, int origin, int target, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        buf[i] = value(round, origin, target, i);
    }
}

/* One check per block (not per byte: the sanitizer builds pay for every counted check). */
static void expect(const unsigned char *buf, int round, int origin, int target, size_t n,
                   const char *what)
{
    size_t i = 0;

    while (i < n && buf[i] == value(round, origin, target, i)) {
        i++;
    }
    CHECK(i == n, "%s round %d: byte %zu of %zu from origin %d at target %d is %u, not %u", what,
          round, i, n, origin, target, i < n ? buf[i] : 0, value(round, origin, target, i));
}

/* A counter of MPI_T, read as a tool would: through one handle per counter, kept open (a
 * counter's handle counts from 0 when it is allocated). */
static unsigned long long counter(int which)
{
    static const char *const names[2] = {"fabric_rma_ops", "fabric_rma_bytes"};
    static MPI_T_pvar_session session;
    static MPI_T_pvar_handle h[2];
    static bool ready;
    unsigned long long v = 0;
    int index, count;

    if (!ready) {
        CHECK_MPI(MPI_T_pvar_session_create(&session));
        for (int i = 0; i < 2; i++) {
            CHECK(MPI_T_pvar_get_index(names[i], MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS,
                  "no MPI_T counter %s", names[i]);
            CHECK_MPI(MPI_T_pvar_handle_alloc(session, index, NULL, &h[i], &count));
        }
        ready = true;
    }
    CHECK_MPI(MPI_T_pvar_read(session, h[which], &v));
    return v;
}

static bool reports_fi_rma(MPI_Win win)
{
    MPI_Info info;
    char value_s[16] = "";
    int flag = 0;

    CHECK_MPI(MPI_Win_get_info(win, &info));
    CHECK_MPI(MPI_Info_get(info, "mpishim_fi_rma", sizeof(value_s) - 1, value_s, &flag));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK(flag, "the window does not report mpishim_fi_rma");
    return strcmp(value_s, "true") == 0;
}

/* Opens the access (and exposure) epoch of mode to every rank. */
static void open_epoch(enum mode m, MPI_Win win, MPI_Group group)
{
    if (m == FENCE) {
        CHECK_MPI(MPI_Win_fence(0, win));
    } else if (m == REQ) {
        CHECK_MPI(MPI_Win_lock_all(0, win));
    } else if (m == PSCW) {
        CHECK_MPI(MPI_Win_post(group, 0, win));
        CHECK_MPI(MPI_Win_start(group, 0, win));
    }
}

static void close_epoch(enum mode m, MPI_Win win)
{
    if (m == FENCE) {
        CHECK_MPI(MPI_Win_fence(0, win));
    } else if (m == REQ) {
        CHECK_MPI(MPI_Win_unlock_all(win));
    } else if (m == PSCW) {
        CHECK_MPI(MPI_Win_complete(win));
        CHECK_MPI(MPI_Win_wait(win));
    }
}

/* Every rank writes src (its block for t) into slot rank of every other rank t. */
static void put_all(enum mode m, MPI_Win win, MPI_Group group, int round, size_t n)
{
    open_epoch(m, win, group);
    for (int t = 0; t < nprocs; t++) {
        unsigned char *block = src + (size_t)t * MAXS;
        MPI_Request req;

        if (t == rank) {
            continue;
        }
        fill(block, round, rank, t, n);
        if (m == LOCK) {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
        }
        if (m == REQ) {
            CHECK_MPI(MPI_Rput(block, (int)n, MPI_BYTE, t, (MPI_Aint)((size_t)rank * MAXS), (int)n,
                               MPI_BYTE, win, &req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_Put(block, (int)n, MPI_BYTE, t, (MPI_Aint)((size_t)rank * MAXS), (int)n,
                              MPI_BYTE, win));
        }
        if (m == LOCK) {
            CHECK_MPI(MPI_Win_unlock(t, win));
        }
        want_ops++;
        want_bytes += n;
    }
    close_epoch(m, win);
}

/* Every rank reads its slot of every other rank back and checks it. */
static void get_all(enum mode m, MPI_Win win, MPI_Group group, int round, size_t n)
{
    open_epoch(m, win, group);
    for (int t = 0; t < nprocs; t++) {
        unsigned char *block = src + (size_t)t * MAXS;
        MPI_Request req;

        if (t == rank) {
            continue;
        }
        memset(block, 0, n);
        if (m == LOCK) {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win));
        }
        if (m == REQ) {
            CHECK_MPI(MPI_Rget(block, (int)n, MPI_BYTE, t, (MPI_Aint)((size_t)rank * MAXS), (int)n,
                               MPI_BYTE, win, &req));
            CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
            expect(block, round, rank, t, n, "MPI_Rget (after MPI_Wait)");
        } else {
            CHECK_MPI(MPI_Get(block, (int)n, MPI_BYTE, t, (MPI_Aint)((size_t)rank * MAXS), (int)n,
                              MPI_BYTE, win));
        }
        if (m == LOCK) {
            CHECK_MPI(MPI_Win_flush(t, win));
            expect(block, round, rank, t, n, "MPI_Get (after MPI_Win_flush)");
            CHECK_MPI(MPI_Win_unlock(t, win));
        }
        want_ops++;
        want_bytes += n;
    }
    close_epoch(m, win);
    for (int t = 0; t < nprocs; t++) {
        if (t != rank) {
            expect(src + (size_t)t * MAXS, round, rank, t, n, "MPI_Get");
        }
    }
}

static void one_window(MPI_Win win, unsigned char *mem, bool fi_rma, int *round)
{
    MPI_Group group, others;

    CHECK(reports_fi_rma(win) == fi_rma, "mpishim_fi_rma is %s, expected %s",
          fi_rma ? "false" : "true", fi_rma ? "true" : "false");
    CHECK_MPI(MPI_Win_get_group(win, &group));
    CHECK_MPI(MPI_Group_excl(group, 1, &rank, &others));
    for (size_t k = 0; k < NSIZES; k++) {
        enum mode m = (enum mode)(k % NMODES);
        size_t n = sizes[k];

        (*round)++;
        put_all(m, win, others, *round, n);
        /* The target's check: after the epoch (and a barrier for the passive modes, whose
         * epochs end at the origins only) every slot holds what its origin put. */
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
        for (int o = 0; o < nprocs; o++) {
            if (o != rank) {
                expect(mem + (size_t)o * MAXS, *round, o, rank, n, mode_names[m]);
            }
        }
        CHECK_MPI(MPI_Win_unlock(rank, win));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        get_all((enum mode)((k + 1) % NMODES), win, others, *round, n);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Group_free(&others));
    CHECK_MPI(MPI_Group_free(&group));
}

int main(int argc, char **argv)
{
    bool fi_rma = false, am = false;
    unsigned long long ops0, bytes0, ops, bytes;
    unsigned char *mem;
    MPI_Win win;
    int provided, round = 0;

    mrt_init(&argc, &argv);
    rank = mrt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int i = 1; i < argc; i++) {
        fi_rma = fi_rma || strcmp(argv[i], "--fi-rma") == 0;
        am = am || strcmp(argv[i], "--am") == 0;
    }
    CHECK(fi_rma != am, "give --fi-rma or --am");
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    src = malloc(MAXS * (size_t)nprocs);
    dst = malloc(MAXS * (size_t)nprocs);
    CHECK(src && dst, "no memory for %d blocks of 4 MiB", nprocs);
    ops0 = counter(0);
    bytes0 = counter(1);

    CHECK_MPI(MPI_Win_create(dst, (MPI_Aint)(MAXS * (size_t)nprocs), 1, MPI_INFO_NULL,
                             MPI_COMM_WORLD, &win));
    one_window(win, dst, fi_rma, &round);
    CHECK_MPI(MPI_Win_free(&win));

    CHECK_MPI(MPI_Win_allocate((MPI_Aint)(MAXS * (size_t)nprocs), 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &mem, &win));
    one_window(win, mem, fi_rma, &round);
    CHECK_MPI(MPI_Win_free(&win));

    ops = counter(0) - ops0;
    bytes = counter(1) - bytes0;
    if (fi_rma) {
        CHECK(ops == want_ops && bytes == want_bytes,
              "fabric_rma_ops grew by %llu (expected %llu), fabric_rma_bytes by %llu (expected "
              "%llu): not every put and get went as FI_RMA",
              ops, want_ops, bytes, want_bytes);
    } else {
        CHECK(ops == 0 && bytes == 0,
              "with MPISHIM_WIN_FI_RMA=0, %llu transfers (%llu B) still went as FI_RMA", ops,
              bytes);
    }
    free(src);
    free(dst);
    CHECK_MPI(MPI_T_finalize());
    return mrt_finish("mr_rma_net");
}
