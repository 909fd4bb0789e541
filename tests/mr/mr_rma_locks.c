/*
 * mr_rma_locks.c - passive-target locks that a legal program holds several of at once never
 * deadlock, and still exclude each other (MPI-3.1 11.5.3).
 *
 * Found in the TSan build's mr_rma at 8 ranks (issue 37, "legal MPI that hangs"): every rank
 * locks its right neighbour exclusively, puts, unlocks, then calls MPI_Win_lock_all. Lock
 * requests were served first come, first served, so a waiting writer kept later shared
 * requests out; lock_all (all its requests at once) held the lock of one target while its
 * request waited behind a writer at another, and two lock_alls beside two writers closed a
 * cycle: every rank waited until the timeout. The same with a rank that holds one shared
 * lock and asks for a second. A shared request from a rank that holds another lock of the
 * window, or from lock_all, now goes ahead of waiting writers (SHIM_LOCK_AHEAD).
 *
 * Each window holds a pair of ints. A writer (exclusive lock) puts the pair's halves in two
 * operations with a flush between, so a reader that the lock did not keep out could see two
 * different halves; every reader (shared locks) checks both halves are equal. Three phases,
 * ROUNDS rounds each:
 *   1. every rank: lock(exclusive, right), put the pair, unlock; lock_all, get every pair,
 *      unlock_all (the pattern that hung);
 *   2. even ranks write (exclusive, a target that moves each round); odd ranks take two
 *      shared locks, on two targets in orders that differ between ranks, and read both;
 *   3. phase 1 again, closing the lock_all epoch with MPI_Win_flush_all first.
 * Then every rank's pair must be the one its last writer wrote: the value is computed here
 * from (writer, round). Windows of each kind: MPI_Win_allocate (direct on one node; active
 * messages with MPISHIM_RMA_DIRECT=0 or across nodes) and MPI_Win_create (active messages).
 * A deadlock ends as an error after MPISHIM_TIMEOUT (the list gives 20 s).
 */
#include "mrtest.h"

#include <stdbool.h>

#define ROUNDS 300

static int rank, size;

static int value_of(int writer, int round)
{
    return writer * 100000 + round + 1;
}

/* Puts v into both halves of target's pair, in two operations (exclusive lock held). */
static void put_pair(MPI_Win win, int target, const int *v)
{
    CHECK_MPI(MPI_Put(v, 1, MPI_INT, target, 0, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(target, win));
    CHECK_MPI(MPI_Put(v, 1, MPI_INT, target, 1, 1, MPI_INT, win));
}

/* Reads target's pair (a lock held on it) and checks its halves agree. */
static void read_pair(MPI_Win win, int target, const char *phase)
{
    int got[2] = {-1, -2};

    CHECK_MPI(MPI_Get(got, 2, MPI_INT, target, 0, 2, MPI_INT, win));
    CHECK_MPI(MPI_Win_flush(target, win));
    CHECK(got[0] == got[1], "%s: rank %d's pair read {%d, %d}: a writer was not kept out",
          phase, target, got[0], got[1]);
}

static void write_then_lock_all(MPI_Win win, int round, bool flush_all)
{
    int right = (rank + 1) % size, v = value_of(rank, round);

    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    put_pair(win, right, &v);
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int t = 0; t < size; t++) {
        read_pair(win, (rank + t) % size, "lock_all");
    }
    if (flush_all) {
        CHECK_MPI(MPI_Win_flush_all(win));
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
}

/* Phase 2: even ranks write to (rank / 2 + round) % size; odd ranks hold two shared locks. */
static void writers_and_double_readers(MPI_Win win, int round)
{
    if (rank % 2 == 0) {
        int t = (rank / 2 + round) % size, v = value_of(rank, round);

        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
        put_pair(win, t, &v);
        CHECK_MPI(MPI_Win_unlock(t, win));
    } else {
        int a = (rank + round) % size, b = (a + size / 2) % size;

        if (b == a) {
            b = (a + 1) % size;
        }
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, a, 0, win));
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, b, 0, win));
        read_pair(win, a, "two shared locks");
        read_pair(win, b, "two shared locks");
        CHECK_MPI(MPI_Win_unlock(b, win));
        CHECK_MPI(MPI_Win_unlock(a, win));
    }
}

/* After the last phase (phase 1's pattern): the left neighbour's last round. */
static void check_final(const int *pair)
{
    int left = (rank + size - 1) % size, want = value_of(left, ROUNDS - 1);

    CHECK(pair[0] == want && pair[1] == want, "rank %d's pair is {%d, %d}, expected %d twice",
          rank, pair[0], pair[1], want);
}

static void run(MPI_Win win, int *pair, const char *kind)
{
    pair[0] = pair[1] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; r < ROUNDS; r++) {
        write_then_lock_all(win, r, false);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; size > 1 && r < ROUNDS; r++) {
        writers_and_double_readers(win, r);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int r = 0; r < ROUNDS; r++) {
        write_then_lock_all(win, r, true);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    /* The window's memory is read by its owner: an epoch on itself orders it (MPI-3.1 11.7). */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    check_final(pair);
    CHECK_MPI(MPI_Win_unlock(rank, win));
    if (rank == 0) {
        printf("mr_rma_locks: %s window passed\n", kind);
    }
}

int main(int argc, char **argv)
{
    int *base, mem[2];
    MPI_Win win;

    mrt_init(&argc, &argv);
    rank = mrt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_MPI(MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win));
    run(win, base, "MPI_Win_allocate");
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(
        MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    run(win, mem, "MPI_Win_create");
    CHECK_MPI(MPI_Win_free(&win));
    return mrt_finish("mr_rma_locks");
}
