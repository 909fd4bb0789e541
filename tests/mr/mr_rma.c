/*
 * mr_rma.c - one-sided communication (MPI-3.1 chapter 11) on windows of every rank:
 * put/get/accumulate under fence, derived datatypes on both sides, transfers larger than
 * one active message, concurrent accumulates from all ranks to one element, exclusive-lock
 * contention around a read-modify-write, fetch_and_op, compare_and_swap, get_accumulate,
 * request-based operations, post-start-complete-wait, window attributes, names and the
 * errors of bad ranks, displacements and epochs. Every expected value is computed here from
 * the ranks and counts, never read from the library.
 *
 * The same program covers both paths of the library: on one node the windows of
 * MPI_Win_allocate and _allocate_shared take the direct path (the origin reads and writes
 * the mapped memory with CPU atomics and lock words), with MPISHIM_RMA_DIRECT=0 or across
 * nodes they take active messages, and MPI_Win_create always does. test_paths checks which
 * path each window reports against what the ranks' placement says it must be; the
 * concurrency tests (every rank at once on one location, per element type and alignment;
 * shared against exclusive locks) must give the same exact results on both.
 *
 * With --threads: MPI_THREAD_MULTIPLE, and a second thread that polls MPI_Iprobe on another
 * communicator all along, so requests are also applied by that thread's progress while the
 * main thread issues its own.
 */
#include "mrtest.h"

#include <complex.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define N_ACC 200       /* accumulates per rank to one element */
#define N_LOCK 50       /* locked read-modify-writes per rank */
#define BIG (70 * 1024) /* doubles: several active messages */

static int rank, size;
/* Whether windows of the allocated flavors must take the direct path: every rank on this
 * node and MPISHIM_RMA_DIRECT not 0 (set in main). */
static bool direct_expected;

/* Each rank puts rank + 1 into its slot of every window; gets its right neighbour's. */
static void test_fence_put_get(void)
{
    int *base, got[64];
    MPI_Win win;

    CHECK_MPI(MPI_Win_allocate(size * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL,
                               MPI_COMM_WORLD, &base, &win));
    for (int i = 0; i < size; i++) {
        base[i] = -1;
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < size; t++) {
        int v = rank + 1;

        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, t, rank, 1, MPI_INT, win));
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < size; i++) {
        CHECK(base[i] == i + 1, "slot %d holds %d, expected %d", i, base[i], i + 1);
    }
    CHECK_MPI(MPI_Get(got, size, MPI_INT, (rank + 1) % size, 0, size, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    for (int i = 0; i < size; i++) {
        CHECK(got[i] == i + 1, "got[%d] = %d from rank %d, expected %d", i, got[i],
              (rank + 1) % size, i + 1);
    }
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free left the handle");
}

/* N_ACC sums of rank + 1 from every rank into element 0 of rank 0, and N_ACC MPI_MAX of
 * rank into element 1 of every rank. */
static void test_concurrent_accumulate(void)
{
    long *base;
    MPI_Win win;
    long expect_sum = (long)N_ACC * size * (size + 1) / 2;

    CHECK_MPI(MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win));
    base[0] = 0;
    base[1] = -5;
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < N_ACC; i++) {
        long v = rank + 1, m = rank;

        CHECK_MPI(MPI_Accumulate(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, MPI_SUM, win));
        CHECK_MPI(MPI_Accumulate(&m, 1, MPI_LONG, (rank + i) % size, 1, 1, MPI_LONG, MPI_MAX, win));
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank == 0) {
        CHECK(base[0] == expect_sum, "sum %ld, expected %ld", base[0], expect_sum);
    }
    /* Rank r sends MPI_MAX of r to ranks (r + i) % size, i < N_ACC: to every rank. */
    CHECK(base[1] == size - 1, "max %ld, expected %d", base[1], size - 1);
    CHECK_MPI(MPI_Win_free(&win));
}

/* A vector target type (every other int) from a contiguous origin, and back into an
 * origin vector; then BIG doubles, more than one active message carries. */
static void test_datatypes_and_size(void)
{
    int *base, src[8], back[16];
    double *big, *dst;
    MPI_Datatype every_other;
    MPI_Win win, wbig;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;

    CHECK_MPI(MPI_Type_vector(8, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    CHECK_MPI(MPI_Win_allocate(16 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win));
    for (int i = 0; i < 16; i++) {
        base[i] = -7;
        back[i] = -9;
    }
    for (int i = 0; i < 8; i++) {
        src[i] = 100 * rank + i;
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(src, 8, MPI_INT, right, 0, 1, every_other, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 16; i++) {
        int want = i % 2 ? -7 : 100 * left + i / 2;

        CHECK(base[i] == want, "vector put: base[%d] = %d, expected %d", i, base[i], want);
    }
    /* The right neighbour's window holds my values at its even ints: read them into my
     * even ints (vector on both sides), and its first 8 ints into contiguous ones. */
    CHECK_MPI(MPI_Get(back, 1, every_other, right, 0, 1, every_other, win));
    CHECK_MPI(MPI_Get(src, 8, MPI_INT, right, 0, 8, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 16; i++) {
        int want = i % 2 ? -9 : 100 * rank + i / 2;

        CHECK(back[i] == want, "vector get: back[%d] = %d, expected %d", i, back[i], want);
    }
    for (int i = 0; i < 8; i++) {
        int want = i % 2 ? -7 : 100 * rank + i / 2;

        CHECK(src[i] == want, "contiguous get: src[%d] = %d, expected %d", i, src[i], want);
    }
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Type_free(&every_other));

    dst = malloc(BIG * sizeof(double));
    CHECK(dst != NULL, "no memory");
    CHECK_MPI(MPI_Win_allocate(BIG * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &big, &wbig));
    for (int i = 0; i < BIG; i++) {
        big[i] = rank * 1e6 + i;
    }
    CHECK_MPI(MPI_Win_fence(0, wbig));
    CHECK_MPI(MPI_Get(dst, BIG, MPI_DOUBLE, right, 0, BIG, MPI_DOUBLE, wbig));
    CHECK_MPI(MPI_Win_fence(0, wbig));
    for (int i = 0; i < BIG; i++) {
        CHECK(dst[i] == right * 1e6 + i, "big get: [%d] = %g", i, dst[i]);
        dst[i] = -(double)i - rank;
    }
    CHECK_MPI(MPI_Win_fence(0, wbig));
    CHECK_MPI(MPI_Put(dst, BIG, MPI_DOUBLE, right, 0, BIG, MPI_DOUBLE, wbig));
    CHECK_MPI(MPI_Win_fence(0, wbig));
    for (int i = 0; i < BIG; i++) {
        CHECK(big[i] == -(double)i - left, "big put: [%d] = %g", i, big[i]);
    }
    CHECK_MPI(MPI_Win_free(&wbig));
    free(dst);
}

/* N_LOCK unprotected read-modify-writes (get, +1, put) per rank on rank 0's counter, each
 * under an exclusive lock: any overlap of two loses an increment. */
static void test_lock_contention(void)
{
    long *base;
    MPI_Win win;

    CHECK_MPI(
        MPI_Win_allocate(sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    *base = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < N_LOCK; i++) {
        long v = -1;

        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_MPI(MPI_Get(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        /* Give the others the core inside the epoch: a lock that does not exclude them
         * then loses increments even when ranks outnumber cores. */
        sched_yield();
        v++;
        CHECK_MPI(MPI_Put(&v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(*base == (long)N_LOCK * size, "counter %ld, expected %ld", *base,
              (long)N_LOCK * size);
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Win_free(&win));
}

/* An operation on the caller's own window has completed when the call returns (a
 * documented promise beyond MPI's, doc/mpi-semantics.md): the results are there before the
 * closing fence, and the origin and result buffers may be freed at once, as mpi4py's tests
 * do. The window of rank r holds 10 * r + {0, 1, 2, 3}. */
static void test_self_target_completes_at_once(void)
{
    int *win_mem, *res, *org, *cmp;
    MPI_Win win;

    CHECK_MPI(MPI_Alloc_mem(4 * sizeof(int), MPI_INFO_NULL, &win_mem));
    for (int i = 0; i < 4; i++) {
        win_mem[i] = 10 * rank + i;
    }
    CHECK_MPI(MPI_Win_create(win_mem, 4 * sizeof(int), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_fence(0, win));
    res = malloc(4 * sizeof(int));
    org = malloc(sizeof(int));
    cmp = malloc(sizeof(int));
    CHECK(res && org && cmp, "no memory");
    res[0] = res[1] = res[2] = res[3] = -7;
    *org = 5;
    *cmp = 10 * rank + 1;
    CHECK_MPI(MPI_Fetch_and_op(org, &res[0], MPI_INT, rank, 0, MPI_SUM, win));
    CHECK(res[0] == 10 * rank, "fetch_and_op on myself: %d before the fence, expected %d", res[0],
          10 * rank);
    CHECK_MPI(MPI_Compare_and_swap(org, cmp, &res[1], MPI_INT, rank, sizeof(int), win));
    CHECK(res[1] == 10 * rank + 1, "compare_and_swap on myself: %d before the fence, expected %d",
          res[1], 10 * rank + 1);
    CHECK_MPI(MPI_Get_accumulate(org, 1, MPI_INT, &res[2], 1, MPI_INT, rank, 2 * sizeof(int), 1,
                                 MPI_INT, MPI_MAX, win));
    CHECK(res[2] == 10 * rank + 2, "get_accumulate on myself: %d before the fence, expected %d",
          res[2], 10 * rank + 2);
    CHECK_MPI(MPI_Get(&res[3], 1, MPI_INT, rank, 3 * sizeof(int), 1, MPI_INT, win));
    CHECK(res[3] == 10 * rank + 3, "get from myself: %d before the fence, expected %d", res[3],
          10 * rank + 3);
    /* Freed inside the epoch: nothing may write to them any more (ASan would see it). */
    free(res);
    free(org);
    free(cmp);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(win_mem[0] == 10 * rank + 5, "fetch_and_op left %d, expected %d", win_mem[0],
          10 * rank + 5);
    CHECK(win_mem[1] == 5, "compare_and_swap left %d, expected 5", win_mem[1]);
    CHECK(win_mem[2] == (10 * rank + 2 > 5 ? 10 * rank + 2 : 5), "get_accumulate MAX left %d",
          win_mem[2]);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Free_mem(win_mem));
}

/* fetch_and_op hands out tickets 0..size*K-1 exactly once; compare_and_swap lets exactly
 * one rank claim a slot; get_accumulate returns the value before its op; Rput/Rget
 * complete through MPI_Wait. */
static void test_atomics_and_requests(void)
{
    enum { K = 10 };
    int *base, tickets[K], *all, winners = 0, mine = 0, old = 0;
    MPI_Win win;
    MPI_Request req;

    CHECK_MPI(
        MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    base[0] = 0;
    base[1] = -1;
    base[2] = 0;
    base[3] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < K; i++) {
        int one = 1;

        CHECK_MPI(MPI_Fetch_and_op(&one, &tickets[i], MPI_INT, 0, 0, MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
    }
    {
        int me = rank;

        CHECK_MPI(MPI_Compare_and_swap(&me, &(int){-1}, &old, MPI_INT, 0, 1, win));
        CHECK_MPI(MPI_Win_flush_all(win));
        mine = old == -1;
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    all = malloc(sizeof(int) * (size_t)size * K);
    CHECK(all != NULL, "no memory");
    CHECK_MPI(MPI_Allgather(tickets, K, MPI_INT, all, K, MPI_INT, MPI_COMM_WORLD));
    for (int t = 0; t < size * K; t++) {
        int seen = 0;

        for (int j = 0; j < size * K; j++) {
            seen += all[j] == t;
        }
        CHECK(seen == 1, "ticket %d handed out %d times", t, seen);
    }
    free(all);
    CHECK_MPI(MPI_Allreduce(&mine, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(winners == 1, "%d ranks won the compare_and_swap", winners);
    if (rank == 0) {
        CHECK(base[0] == size * K, "ticket counter %d", base[0]);
        CHECK(base[1] >= 0 && base[1] < size, "CAS slot holds %d", base[1]);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

    /* Rank r adds r + 1 to rank 0's element 2 by get_accumulate, one at a time (the lock):
     * the values returned are partial sums, and distinct. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
    {
        int add = rank + 1, before = -1;

        CHECK_MPI(MPI_Rget_accumulate(&add, 1, MPI_INT, &before, 1, MPI_INT, 0, 2, 1, MPI_INT,
                                      MPI_SUM, win, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(before >= 0 && before <= size * (size + 1) / 2 - add, "before %d", before);
    }
    CHECK_MPI(MPI_Win_unlock(0, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, (rank + 1) % size, 0, win));
    {
        int v = 1000 + rank, back = -1;

        CHECK_MPI(MPI_Rput(&v, 1, MPI_INT, (rank + 1) % size, 3, 1, MPI_INT, win, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Rget(&back, 1, MPI_INT, (rank + 1) % size, 3, 1, MPI_INT, win, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        CHECK(back == v, "Rget read %d after Rput of %d", back, v);
        CHECK_MPI(MPI_Win_unlock((rank + 1) % size, win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(base[2] == size * (size + 1) / 2, "get_accumulate sum %d", base[2]);
    }
    CHECK(base[3] == 1000 + (rank + size - 1) % size, "Rput left %d", base[3]);
    CHECK_MPI(MPI_Win_free(&win));
}

/* Post-start-complete-wait on a ring: each rank exposes its window to its left neighbour
 * and accesses its right one's. */
static void test_pscw(void)
{
    int *base, right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Group world, to_right, from_left;
    MPI_Win win;

    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_incl(world, 1, &right, &to_right));
    CHECK_MPI(MPI_Group_incl(world, 1, &left, &from_left));
    CHECK_MPI(
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    for (int round = 0; round < 3; round++) {
        int v = 10 * rank + round, flag = 0;

        *base = -1;
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Win_post(from_left, 0, win));
        CHECK_MPI(MPI_Win_start(to_right, 0, win));
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_complete(win));
        if (round == 1) {
            while (!flag) {
                CHECK_MPI(MPI_Win_test(win, &flag));
            }
        } else {
            CHECK_MPI(MPI_Win_wait(win));
        }
        CHECK(*base == 10 * left + round, "round %d: %d, expected %d", round, *base,
              10 * left + round);
    }
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Group_free(&to_right));
    CHECK_MPI(MPI_Group_free(&from_left));
    CHECK_MPI(MPI_Group_free(&world));
}

/* MPI_Win_allocate_shared on the node's ranks: rank r owns r + 1 ints, contiguous after
 * the lower ranks' parts; each writes its part with stores, and reads every other part
 * through MPI_Win_shared_query's pointers and through rank 0's base; then MPI_Put and
 * MPI_Get (the mapped copy) and MPI_Accumulate (the window's path) on the same memory. */
static void test_shared(void)
{
    MPI_Comm node;
    MPI_Win win;
    int nrank, nsize, *mine, *first, disp_unit, *flavor, flag = 0;
    MPI_Aint qsize, before = 0;

    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    CHECK_MPI(MPI_Win_allocate_shared((nrank + 2) * (MPI_Aint)sizeof(int), sizeof(int),
                                      MPI_INFO_NULL, node, &mine, &win));
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED, "flavor %d", *flavor);
    for (int i = 0; i < nrank + 2; i++) {
        mine[i] = 1000 * nrank + i;
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_shared_query(win, 0, &qsize, &disp_unit, &first));
    CHECK(qsize == 2 * sizeof(int) && disp_unit == (int)sizeof(int), "rank 0: %ld bytes, unit %d",
          (long)qsize, disp_unit);
    for (int r = 0; r < nsize; r++) {
        int *part;

        CHECK_MPI(MPI_Win_shared_query(win, r, &qsize, &disp_unit, &part));
        CHECK(qsize == (MPI_Aint)((r + 2) * sizeof(int)), "rank %d: %ld bytes", r, (long)qsize);
        CHECK(part == first + before / (MPI_Aint)sizeof(int),
              "rank %d's part at %p, not contiguous after rank 0's %p + %ld", r, (void *)part,
              (void *)first, (long)before);
        for (int i = 0; i < r + 2; i++) {
            CHECK(part[i] == 1000 * r + i, "rank %d's int %d reads %d", r, i, part[i]);
        }
        before += qsize;
    }
    /* Everyone has read before anyone writes: a put through the mapping lands at once. */
    CHECK_MPI(MPI_Win_fence(0, win));
    /* Everyone puts its rank into int 0 of its right neighbour and adds 1 to rank 0's int 1
     * (no location gets both: that would be a conflict); then reads int 0 of its own part
     * back with MPI_Get. */
    {
        int right = (nrank + 1) % nsize, left = (nrank + nsize - 1) % nsize, one = 1, got = -1;

        CHECK_MPI(MPI_Put(&nrank, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK_MPI(MPI_Get(&got, 1, MPI_INT, nrank, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_fence(0, win));
        CHECK(mine[0] == left && got == left, "int 0 holds %d, got %d, expected %d", mine[0], got,
              left);
        if (nrank == 0) {
            CHECK(mine[1] == 1 + nsize, "rank 0's int 1 holds %d after %d additions", mine[1],
                  nsize);
        }
    }
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_free(&node));
}

/* MPI_Win_create on the caller's memory; attributes, group, name, info. */
static void test_create_and_attributes(void)
{
    int mem[4] = {0, 0, 0, 0}, flag = 0, *flavor, *unit, *model, cmp, len;
    MPI_Aint *wsize;
    void *wbase;
    MPI_Group wg, world;
    MPI_Win win;
    MPI_Info info;
    char name[MPI_MAX_OBJECT_NAME], value[64];

    CHECK_MPI(MPI_Win_create(mem, sizeof(mem), 4, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &wbase, &flag));
    CHECK(flag && wbase == mem, "MPI_WIN_BASE %p, expected %p", wbase, (void *)mem);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && *wsize == (MPI_Aint)sizeof(mem), "MPI_WIN_SIZE %ld", (long)*wsize);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
    CHECK(flag && *unit == 4, "MPI_WIN_DISP_UNIT %d", *unit);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "flavor %d", *flavor);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && (*model == MPI_WIN_UNIFIED || *model == MPI_WIN_SEPARATE), "model %d", *model);
    CHECK_MPI(MPI_Win_get_group(win, &wg));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_MPI(MPI_Group_compare(wg, world, &cmp));
    CHECK(cmp == MPI_IDENT, "window group compares %d", cmp);
    CHECK_MPI(MPI_Group_free(&wg));
    CHECK_MPI(MPI_Group_free(&world));
    CHECK_MPI(MPI_Win_set_name(win, "halo"));
    CHECK_MPI(MPI_Win_get_name(win, name, &len));
    CHECK(len == 4 && strcmp(name, "halo") == 0, "name '%s'", name);
    CHECK_MPI(MPI_Win_get_info(win, &info));
    CHECK_MPI(MPI_Info_get(info, "no_locks", sizeof(value) - 1, value, &flag));
    CHECK(flag && strcmp(value, "false") == 0, "no_locks '%s'", flag ? value : "(unset)");
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Win_set_info(win, MPI_INFO_NULL));

    /* A fence without MPI_MODE_NOSUCCEED, then locks (legal: no operation followed it). */
    CHECK_MPI(MPI_Win_fence(0, win));
    /* Passive target while the target waits in a barrier: rank 0 writes every window. */
    if (rank == 0) {
        for (int t = 0; t < size; t++) {
            int v = 77 + t;

            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win));
            CHECK_MPI(MPI_Put(&v, 1, MPI_INT, t, 2, 1, MPI_INT, win));
            CHECK_MPI(MPI_Win_unlock(t, win));
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win));
    CHECK(mem[2] == 77 + rank, "passive put left %d", mem[2]);
    CHECK_MPI(MPI_Win_unlock(rank, win));
    CHECK_MPI(MPI_Win_free(&win));
}

/* Bad ranks, displacements past the window, operations outside an epoch and misuse of
 * the synchronisation calls return their error under MPI_ERRORS_RETURN. */
static void test_errors(void)
{
    int *base, v = 1;
    MPI_Win win;
    MPI_Errhandler eh;

    CHECK_MPI(
        MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    CHECK_MPI(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "a window's default handler is 0x%x", (unsigned)eh);
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
    EXPECT_CLASS(MPI_Win_unlock(0, win), MPI_ERR_RMA_SYNC);
    EXPECT_CLASS(MPI_Win_complete(win), MPI_ERR_RMA_SYNC);
    EXPECT_CLASS(MPI_Win_wait(win), MPI_ERR_RMA_SYNC);
    CHECK_MPI(MPI_Win_fence(0, win));
    EXPECT_CLASS(MPI_Put(&v, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Put(&v, 1, MPI_INT, 0, 4, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT_CLASS(MPI_Get(&v, 2, MPI_INT, 0, 3, 2, MPI_INT, win), MPI_ERR_RMA_RANGE);
    /* The direct path's short cut for fetch_and_op leaves these to the checks too. */
    {
        int r = 0;

        EXPECT_CLASS(MPI_Fetch_and_op(&v, &r, MPI_BYTE, 0, 0, MPI_SUM, win), MPI_ERR_OP);
        EXPECT_CLASS(MPI_Fetch_and_op(&v, &r, MPI_INT, 0, 4, MPI_SUM, win), MPI_ERR_RMA_RANGE);
        EXPECT_CLASS(MPI_Fetch_and_op(&v, &r, MPI_INT, size, 0, MPI_SUM, win), MPI_ERR_RANK);
    }
    /* compare_and_swap takes integer, logical and byte types only (MPI-3.1 11.3.4). */
    {
        double d = 1, dc = 1, dr = 0;
        struct {
            short a;
            int b;
        } p = {1, 1}, pc = {1, 1}, pr = {0, 0};

        EXPECT_CLASS(MPI_Compare_and_swap(&d, &dc, &dr, MPI_DOUBLE, 0, 0, win), MPI_ERR_TYPE);
        EXPECT_CLASS(MPI_Compare_and_swap(&d, &dc, &dr, MPI_FLOAT, 0, 0, win), MPI_ERR_TYPE);
        EXPECT_CLASS(MPI_Compare_and_swap(&p, &pc, &pr, MPI_SHORT_INT, 0, 0, win), MPI_ERR_TYPE);
        EXPECT_CLASS(MPI_Compare_and_swap(&p, &pc, &pr, MPI_2INT, 0, 0, win), MPI_ERR_TYPE);
        CHECK(dr == 0 && pr.a == 0 && pr.b == 0, "a refused compare_and_swap wrote its result");
    }
    /* Far past the end (the direct path's one-memcpy case must not wrap around). */
    EXPECT_CLASS(MPI_Get(&v, 1, MPI_INT, 0, (MPI_Aint)1 << 40, 1, MPI_INT, win), MPI_ERR_RMA_RANGE);
    EXPECT_CLASS(MPI_Put(&v, 1, MPI_INT, 0, -1, 1, MPI_INT, win), MPI_ERR_DISP);
    EXPECT_CLASS(MPI_Put(&v, 1, MPI_INT, 0, 0, 2, MPI_INT, win), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Accumulate(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_OP_NULL, win), MPI_ERR_OP);
    /* MPI_SUM is not defined on MPI_BYTE: an error for one byte, nothing to do for none (as
     * in MPICH; mpi4py probes MPI_Get_accumulate so). */
    EXPECT_CLASS(MPI_Accumulate(&v, 1, MPI_BYTE, 0, 0, 1, MPI_BYTE, MPI_SUM, win), MPI_ERR_OP);
    CHECK_MPI(MPI_Accumulate(&v, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, MPI_SUM, win));
    CHECK_MPI(
        MPI_Get_accumulate(&v, 0, MPI_BYTE, &v, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, MPI_SUM, win));
    EXPECT_CLASS(
        MPI_Get_accumulate(&v, 0, MPI_BYTE, &v, 0, MPI_BYTE, 0, 0, 0, MPI_BYTE, MPI_OP_NULL, win),
        MPI_ERR_OP);
    EXPECT_CLASS(MPI_Win_lock(7, 0, 0, win), MPI_ERR_LOCKTYPE);
    {
        MPI_Aint qs;
        int du;
        void *qb;

        EXPECT_CLASS(MPI_Win_shared_query(win, 0, &qs, &du, &qb), MPI_ERR_RMA_FLAVOR);
    }
    CHECK_MPI(MPI_Put(&v, 0, MPI_INT, MPI_PROC_NULL, 0, 0, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    EXPECT_CLASS(MPI_Win_flush(0, win), MPI_ERR_RMA_SYNC);
    EXPECT_CLASS(MPI_Win_fence(0, MPI_WIN_NULL), MPI_ERR_WIN);
    CHECK_MPI(MPI_Win_free(&win));
}

/* MPI_PROC_NULL as the target of the synchronisation calls of one target (MPICH's
 * rma/rmanull): MPI_Win_lock, _unlock, _flush and _flush_local do nothing and succeed, open
 * and close no epoch, and leave a real epoch open around them alone; a rank that is neither
 * in the window nor MPI_PROC_NULL stays MPI_ERR_RANK, also for the flushes. On a window of
 * each path (allocate: direct on one node; create: active messages). */
static void test_proc_null_sync(void)
{
    int *base, mem[2] = {0, 0}, v = 40 + rank, got = -1, res = -1;
    int right = (rank + 1) % size;
    MPI_Win wins[2];

    CHECK_MPI(MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &wins[0]));
    base[0] = base[1] = 0;
    CHECK_MPI(
        MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &wins[1]));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int k = 0; k < 2; k++) {
        MPI_Win win = wins[k];

        CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
        /* Alone: no epoch is opened, so a put to a real rank is still outside one. */
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, MPI_PROC_NULL, 0, win));
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, MPI_PROC_NULL, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Fetch_and_op(&v, &res, MPI_INT, MPI_PROC_NULL, 0, MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(MPI_PROC_NULL, win));
        CHECK_MPI(MPI_Win_flush_local(MPI_PROC_NULL, win));
        EXPECT_CLASS(MPI_Put(&v, 1, MPI_INT, right, 0, 1, MPI_INT, win), MPI_ERR_RMA_SYNC);
        CHECK_MPI(MPI_Win_unlock(MPI_PROC_NULL, win));
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, MPI_PROC_NULL, MPI_MODE_NOCHECK, win));
        CHECK_MPI(MPI_Win_unlock(MPI_PROC_NULL, win));
        EXPECT_CLASS(MPI_Win_lock(7, MPI_PROC_NULL, 0, win), MPI_ERR_LOCKTYPE);
        EXPECT_CLASS(MPI_Win_lock(MPI_LOCK_SHARED, -5, 0, win), MPI_ERR_RANK);
        EXPECT_CLASS(MPI_Win_unlock(size, win), MPI_ERR_RANK);
        EXPECT_CLASS(MPI_Win_flush(-5, win), MPI_ERR_RANK);
        EXPECT_CLASS(MPI_Win_flush_local(size, win), MPI_ERR_RANK);
        /* Inside a real epoch to the right neighbour: it stays open across them. */
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, MPI_PROC_NULL, 0, win));
        CHECK_MPI(MPI_Win_unlock(MPI_PROC_NULL, win));
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, right, 1, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush(MPI_PROC_NULL, win));
        CHECK_MPI(MPI_Win_flush(right, win));
        CHECK_MPI(MPI_Get(&got, 1, MPI_INT, right, 1, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_unlock(right, win));
        CHECK(got == v, "window %d: read back %d from rank %d, expected %d", k, got, right, v);
        EXPECT_CLASS(MPI_Win_unlock(right, win), MPI_ERR_RMA_SYNC);
        CHECK_MPI(MPI_Win_lock_all(0, win));
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, MPI_PROC_NULL, 0, win));
        CHECK_MPI(MPI_Win_unlock(MPI_PROC_NULL, win));
        CHECK_MPI(MPI_Win_unlock_all(win));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    {
        int left = (rank + size - 1) % size;

        CHECK(base[1] == 40 + left && mem[1] == 40 + left,
              "rank %d's windows hold %d and %d, expected %d from rank %d", rank, base[1], mem[1],
              40 + left, left);
    }
    CHECK_MPI(MPI_Win_free(&wins[0]));
    CHECK_MPI(MPI_Win_free(&wins[1]));
}

/* The path a window reports (MPI_Win_get_info's mpishim_rma_path). */
static bool reports_direct(MPI_Win win)
{
    MPI_Info info;
    char value[64];
    int flag = 0;

    CHECK_MPI(MPI_Win_get_info(win, &info));
    CHECK_MPI(MPI_Info_get(info, "mpishim_rma_path", sizeof(value) - 1, value, &flag));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK(flag && (strcmp(value, "direct") == 0 || strcmp(value, "active_messages") == 0),
          "mpishim_rma_path '%s'", flag ? value : "(unset)");
    return strcmp(value, "direct") == 0;
}

/* MPI_Win_allocate and _allocate_shared take the direct path exactly when direct_expected;
 * MPI_Win_create (the caller's memory) never does. */
static void test_paths(void)
{
    int *base, mem[2], *shbase;
    MPI_Win win;
    MPI_Comm node;

    CHECK_MPI(
        MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    CHECK(reports_direct(win) == direct_expected, "MPI_Win_allocate: direct %d, expected %d",
          !direct_expected, direct_expected);
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK(!reports_direct(win), "MPI_Win_create reports the direct path");
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    CHECK_MPI(
        MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, node, &shbase, &win));
    {
        const char *e = getenv("MPISHIM_RMA_DIRECT");
        bool knob = !e || !*e || strcmp(e, "0") != 0;

        CHECK(reports_direct(win) == knob, "MPI_Win_allocate_shared: direct %d, expected %d", !knob,
              knob);
    }
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Comm_free(&node));
}

/* Byte offsets in rank 0's window of test_concurrent_types (disp_unit 1). */
enum {
    AT_U8 = 0,          /* MPI_UINT8_T SUM 1: wraps modulo 256 */
    AT_SHORT = 8,       /* MPI_SHORT SUM rank + 1 */
    AT_INT_MAX = 16,    /* MPI_INT MAX */
    AT_LL = 24,         /* MPI_LONG_LONG SUM rank + 1 */
    AT_FLOAT = 32,      /* MPI_FLOAT SUM 0.5 */
    AT_DOUBLE = 40,     /* MPI_DOUBLE SUM rank + 1 (no CPU instruction: compare-exchange loop) */
    AT_DMIN = 48,       /* MPI_DOUBLE MIN */
    AT_LDBL = 64,       /* MPI_LONG_DOUBLE SUM rank + 1 (16 bytes: the spinlock) */
    AT_CPLX = 80,       /* MPI_C_DOUBLE_COMPLEX SUM 1 + 2i (16 bytes: the spinlock) */
    AT_MISALIGNED = 97, /* MPI_INT SUM rank + 1 at an odd address (the spinlock) */
    AT_BOR = 104,       /* MPI_UNSIGNED BOR 1 << rank */
    AT_PROD = 112,      /* MPI_INT PROD -1 */
    AT_FOP_DOUBLE = 128,
    AT_FOP_LDBL = 144,
    AT_FOP_SHORT = 160,
    AT_CAS_I8 = 170,
    AT_CAS_U16 = 172,
    AT_CAS_LL = 176,
    AT_CAS_MISALIGNED = 185,
    AT_VEC = 192, /* 4 ints, every other one: get_accumulate with a vector type */
    WIN_BYTES = 256
};

#define N_TYPES 40 /* rounds of accumulates per rank */
#define K_FOP 12   /* fetch_and_ops per rank and type */

static void accumulate_round(MPI_Win win, int i)
{
    uint8_t one8 = 1;
    short s = (short)(rank + 1);
    int mx = rank * N_TYPES + i, r1 = rank + 1, m1 = -1;
    long long ll = rank + 1;
    float half = 0.5f;
    double d = rank + 1, dmin = -(double)(rank * N_TYPES + i);
    long double ld = rank + 1;
    double complex c = 1.0 + 2.0 * I;
    unsigned bit = 1u << (rank % 32);

    CHECK_MPI(MPI_Accumulate(&one8, 1, MPI_UINT8_T, 0, AT_U8, 1, MPI_UINT8_T, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&s, 1, MPI_SHORT, 0, AT_SHORT, 1, MPI_SHORT, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&mx, 1, MPI_INT, 0, AT_INT_MAX, 1, MPI_INT, MPI_MAX, win));
    CHECK_MPI(MPI_Accumulate(&ll, 1, MPI_LONG_LONG, 0, AT_LL, 1, MPI_LONG_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&half, 1, MPI_FLOAT, 0, AT_FLOAT, 1, MPI_FLOAT, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&d, 1, MPI_DOUBLE, 0, AT_DOUBLE, 1, MPI_DOUBLE, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&dmin, 1, MPI_DOUBLE, 0, AT_DMIN, 1, MPI_DOUBLE, MPI_MIN, win));
    CHECK_MPI(
        MPI_Accumulate(&ld, 1, MPI_LONG_DOUBLE, 0, AT_LDBL, 1, MPI_LONG_DOUBLE, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&c, 1, MPI_C_DOUBLE_COMPLEX, 0, AT_CPLX, 1, MPI_C_DOUBLE_COMPLEX,
                             MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&r1, 1, MPI_INT, 0, AT_MISALIGNED, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&bit, 1, MPI_UNSIGNED, 0, AT_BOR, 1, MPI_UNSIGNED, MPI_BOR, win));
    CHECK_MPI(MPI_Accumulate(&m1, 1, MPI_INT, 0, AT_PROD, 1, MPI_INT, MPI_PROD, win));
}

/* Rank 0's window after every rank's N_TYPES rounds. */
static void check_accumulated(const unsigned char *w)
{
    long n = (long)N_TYPES * size, tri = (long)N_TYPES * size * (size + 1) / 2;
    uint8_t u8;
    short s;
    int mx, mis, prod;
    long long ll;
    float f;
    double d, dmin;
    long double ld;
    double complex c;
    unsigned bor, want_bor = 0;

    memcpy(&u8, w + AT_U8, sizeof(u8));
    memcpy(&s, w + AT_SHORT, sizeof(s));
    memcpy(&mx, w + AT_INT_MAX, sizeof(mx));
    memcpy(&ll, w + AT_LL, sizeof(ll));
    memcpy(&f, w + AT_FLOAT, sizeof(f));
    memcpy(&d, w + AT_DOUBLE, sizeof(d));
    memcpy(&dmin, w + AT_DMIN, sizeof(dmin));
    memcpy(&ld, w + AT_LDBL, sizeof(ld));
    memcpy(&c, w + AT_CPLX, sizeof(c));
    memcpy(&mis, w + AT_MISALIGNED, sizeof(mis));
    memcpy(&bor, w + AT_BOR, sizeof(bor));
    memcpy(&prod, w + AT_PROD, sizeof(prod));
    for (int r = 0; r < size; r++) {
        want_bor |= 1u << (r % 32);
    }
    CHECK(u8 == (uint8_t)(n % 256), "uint8 sum %u, expected %ld", u8, n % 256);
    CHECK(s == tri, "short sum %d, expected %ld", s, tri);
    CHECK(mx == (size - 1) * N_TYPES + N_TYPES - 1, "int max %d", mx);
    CHECK(ll == tri, "long long sum %lld, expected %ld", ll, tri);
    CHECK(f == 0.5f * (float)n, "float sum %g, expected %g", f, 0.5 * (double)n);
    CHECK(d == (double)tri, "double sum %g, expected %ld", d, tri);
    CHECK(dmin == -(double)((size - 1) * N_TYPES + N_TYPES - 1), "double min %g", dmin);
    CHECK(ld == (long double)tri, "long double sum %Lg, expected %ld", ld, tri);
    CHECK(creal(c) == (double)n && cimag(c) == 2.0 * (double)n, "complex sum %g%+gi, expected %ld",
          creal(c), cimag(c), n);
    CHECK(mis == tri, "misaligned int sum %d, expected %ld", mis, tri);
    CHECK(bor == want_bor, "bor 0x%x, expected 0x%x", bor, want_bor);
    CHECK(prod == (n % 2 ? -1 : 1), "prod %d after %ld products by -1", prod, n);
}

/* K_FOP fetch_and_ops of +1 per rank on a double, a long double and a short: the values
 * returned are the tickets 0 .. size * K_FOP - 1, each handed out once. */
static void check_tickets(const double *mine, const char *what)
{
    double *all = malloc(sizeof(double) * (size_t)size * K_FOP);
    int *seen = calloc((size_t)size * K_FOP, sizeof(int));

    CHECK(all && seen, "no memory");
    CHECK_MPI(MPI_Allgather(mine, K_FOP, MPI_DOUBLE, all, K_FOP, MPI_DOUBLE, MPI_COMM_WORLD));
    for (int j = 0; j < size * K_FOP; j++) {
        long t = (long)all[j];

        CHECK(all[j] == (double)t && t >= 0 && t < size * K_FOP, "%s ticket %g", what, all[j]);
        seen[t]++;
    }
    for (int t = 0; t < size * K_FOP; t++) {
        CHECK(seen[t] == 1, "%s ticket %d handed out %d times", what, t, seen[t]);
    }
    free(all);
    free(seen);
}

static void fetch_tickets(MPI_Win win)
{
    double dt[K_FOP], lt[K_FOP], st[K_FOP];

    for (int i = 0; i < K_FOP; i++) {
        double one = 1.0, old = -1;
        long double lone = 1.0L, lold = -1;
        short sone = 1, sold = -1;

        CHECK_MPI(MPI_Fetch_and_op(&one, &old, MPI_DOUBLE, 0, AT_FOP_DOUBLE, MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&lone, &lold, MPI_LONG_DOUBLE, 0, AT_FOP_LDBL, MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&sone, &sold, MPI_SHORT, 0, AT_FOP_SHORT, MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        dt[i] = old;
        lt[i] = (double)lold;
        st[i] = sold;
    }
    check_tickets(dt, "double");
    check_tickets(lt, "long double");
    check_tickets(st, "short");
}

/* Every rank tries to claim four slots (0 -> rank + 1) with compare_and_swap, one of them
 * at an odd address: exactly one rank wins each, and the slot holds its number. */
static void claim_slots(MPI_Win win, const unsigned char *w0)
{
    int8_t c8 = (int8_t)(rank + 1), z8 = 0, o8 = -1;
    uint16_t c16 = (uint16_t)(rank + 1), z16 = 0, o16 = 9;
    long long cll = rank + 1, zll = 0, oll = -1;
    int ci = rank + 1, zi = 0, oi = -1, won[4], total[4];

    CHECK_MPI(MPI_Compare_and_swap(&c8, &z8, &o8, MPI_INT8_T, 0, AT_CAS_I8, win));
    CHECK_MPI(MPI_Compare_and_swap(&c16, &z16, &o16, MPI_UINT16_T, 0, AT_CAS_U16, win));
    CHECK_MPI(MPI_Compare_and_swap(&cll, &zll, &oll, MPI_LONG_LONG, 0, AT_CAS_LL, win));
    CHECK_MPI(MPI_Compare_and_swap(&ci, &zi, &oi, MPI_INT, 0, AT_CAS_MISALIGNED, win));
    CHECK_MPI(MPI_Win_flush(0, win));
    won[0] = o8 == 0;
    won[1] = o16 == 0;
    won[2] = oll == 0;
    won[3] = oi == 0;
    CHECK(o8 >= 0 && o8 <= size && oll >= 0 && oll <= size && oi >= 0 && oi <= size && o16 <= size,
          "compare_and_swap returned %d %u %lld %d", o8, o16, oll, oi);
    CHECK_MPI(MPI_Allreduce(won, total, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    for (int k = 0; k < 4; k++) {
        CHECK(total[k] == 1, "slot %d: %d ranks won its compare_and_swap", k, total[k]);
    }
    if (rank == 0) {
        int8_t v8;
        uint16_t v16;
        long long vll;
        int vi;

        memcpy(&v8, w0 + AT_CAS_I8, 1);
        memcpy(&v16, w0 + AT_CAS_U16, 2);
        memcpy(&vll, w0 + AT_CAS_LL, 8);
        memcpy(&vi, w0 + AT_CAS_MISALIGNED, 4);
        CHECK(v8 >= 1 && v8 <= size && v16 >= 1 && v16 <= size && vll >= 1 && vll <= size &&
                  vi >= 1 && vi <= size,
              "claimed slots hold %d %u %lld %d", v8, v16, vll, vi);
    }
}

/* K_FOP get_accumulates of rank + 1 into 4 ints of rank 0 laid out every other one (a
 * vector type at the target, contiguous at the origin and the result): the values before
 * grow with each of a rank's calls, and the sums end exact. */
static void vector_get_accumulate(MPI_Win win)
{
    MPI_Datatype every_other;
    int add[4], before[4], last = -1;

    CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    for (int j = 0; j < 4; j++) {
        add[j] = rank + 1;
    }
    for (int i = 0; i < K_FOP; i++) {
        CHECK_MPI(MPI_Get_accumulate(add, 4, MPI_INT, before, 4, MPI_INT, 0, AT_VEC, 1, every_other,
                                     MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        CHECK(before[0] > last && before[0] <= K_FOP * size * (size + 1) / 2 - (rank + 1),
              "get_accumulate %d returned %d after %d", i, before[0], last);
        last = before[0];
    }
    CHECK_MPI(MPI_Type_free(&every_other));
}

/* Every rank at once on one location of rank 0, for each element type the direct path
 * treats apart (fetch-add, exchange and compare-exchange loops on aligned 1-8 byte
 * elements; the spinlock for 16-byte ones and misaligned ones): accumulates, fetch_and_op,
 * compare_and_swap and get_accumulate with a vector type, all under MPI_Win_lock_all. The
 * results are exact on both paths. */
static void test_concurrent_types(void)
{
    unsigned char *w0;
    MPI_Win win;
    long tri = (long)K_FOP * size * (size + 1) / 2;

    CHECK_MPI(MPI_Win_allocate(WIN_BYTES, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &w0, &win));
    memset(w0, 0, WIN_BYTES);
    {
        int one = 1;
        double big = 1e300;

        memcpy(w0 + AT_PROD, &one, sizeof(one));
        memcpy(w0 + AT_DMIN, &big, sizeof(big));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < N_TYPES; i++) {
        accumulate_round(win, i);
    }
    fetch_tickets(win);
    claim_slots(win, w0);
    vector_get_accumulate(win);
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        check_accumulated(w0);
        for (int j = 0; j < 8; j++) {
            int v;

            memcpy(&v, w0 + AT_VEC + 4 * j, sizeof(v));
            CHECK(v == (j % 2 ? 0 : tri), "vector int %d holds %d, expected %ld", j, v,
                  j % 2 ? 0 : tri);
        }
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    /* MPI_NO_OP reads, with a vector type at the origin's result. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
    {
        int got[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
        MPI_Datatype every_other;

        CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
        CHECK_MPI(MPI_Type_commit(&every_other));
        CHECK_MPI(MPI_Get_accumulate(NULL, 0, MPI_INT, got, 1, every_other, 0, AT_VEC, 1,
                                     every_other, MPI_NO_OP, win));
        CHECK_MPI(MPI_Type_free(&every_other));
        CHECK_MPI(MPI_Win_unlock(0, win));
        for (int j = 0; j < 8; j++) {
            CHECK(got[j] == (j % 2 ? -1 : tri), "no_op read [%d] = %d", j, got[j]);
        }
    }
    CHECK_MPI(MPI_Win_free(&win));
}

#define N_RW 30 /* writes and reads per rank */

/* Readers and writers on rank 0's two ints: a writer (exclusive lock) reads the first, and
 * stores it + 1 into both with two puts and a flush between; a reader (shared lock, or
 * lock_all) gets both and must find them equal. Every write lost or torn shows. */
static void test_shared_and_exclusive(void)
{
    long *base;
    MPI_Win win;

    CHECK_MPI(MPI_Win_allocate(2 * sizeof(long), sizeof(long), MPI_INFO_NULL, MPI_COMM_WORLD, &base,
                               &win));
    base[0] = base[1] = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int i = 0; i < 2 * N_RW; i++) {
        long v[2] = {-1, -2};

        if ((i + rank) % 2 == 0) {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
            CHECK_MPI(MPI_Get(v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
            CHECK_MPI(MPI_Win_flush(0, win));
            v[0]++;
            CHECK_MPI(MPI_Put(v, 1, MPI_LONG, 0, 0, 1, MPI_LONG, win));
            CHECK_MPI(MPI_Win_flush(0, win));
            sched_yield(); /* as in test_lock_contention */
            CHECK_MPI(MPI_Put(v, 1, MPI_LONG, 0, 1, 1, MPI_LONG, win));
            CHECK_MPI(MPI_Win_unlock(0, win));
            continue;
        }
        if (i % 4 < 2) {
            CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        } else {
            CHECK_MPI(MPI_Win_lock_all(0, win));
        }
        CHECK_MPI(MPI_Get(v, 2, MPI_LONG, 0, 0, 2, MPI_LONG, win));
        if (i % 4 < 2) {
            CHECK_MPI(MPI_Win_unlock(0, win));
        } else {
            CHECK_MPI(MPI_Win_unlock_all(win));
        }
        CHECK(v[0] == v[1] && v[0] >= 0 && v[0] <= (long)N_RW * size,
              "a reader saw %ld and %ld: a writer's two puts were not exclusive", v[0], v[1]);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK(base[0] == (long)N_RW * size && base[1] == base[0], "counters %ld %ld, expected %ld",
              base[0], base[1], (long)N_RW * size);
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Win_free(&win));
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* On the direct path a passive-target put needs nothing from its target: rank 1 waits for
 * rank 0's put by loading its own window memory, without any MPI call (which active
 * messages would need to apply it). The bound only keeps a broken library from hanging the
 * suite. */
static void test_target_outside_mpi(void)
{
    int *base;
    MPI_Win win;

    if (!direct_expected || size < 2) {
        return;
    }
    CHECK_MPI(
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    *base = 0;
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        int v = 4242;

        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win));
        CHECK_MPI(MPI_Put(&v, 1, MPI_INT, 1, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_unlock(1, win));
    } else if (rank == 1) {
        double start = now();

        while (__atomic_load_n(base, __ATOMIC_ACQUIRE) != 4242) {
            CHECK(now() - start < 30, "rank 0's put did not arrive while rank 1 stayed out of MPI");
            sched_yield();
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_free(&win));
}

static int poller_stop;

/* Progress from a second thread: probes a communicator nobody sends on. */
static void *poller(void *arg)
{
    MPI_Comm comm = *(MPI_Comm *)arg;

    while (!__atomic_load_n(&poller_stop, __ATOMIC_ACQUIRE)) {
        int flag = 0;

        /* Not CHECK: its counter belongs to the main thread. */
        if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, MPI_STATUS_IGNORE) !=
                MPI_SUCCESS ||
            flag) {
            fprintf(stderr, "FAIL rank %d: the poller's MPI_Iprobe failed or found %d\n", mrt_rank,
                    flag);
            exit(1);
        }
        sched_yield();
    }
    return NULL;
}

static bool has_arg(int argc, char **argv, const char *a)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], a) == 0) {
            return true;
        }
    }
    return false;
}

int main(int argc, char **argv)
{
    bool threads = has_arg(argc, argv, "--threads");
    MPI_Comm quiet = MPI_COMM_NULL;
    pthread_t tid;

    if (threads) {
        int provided = 0;

        for (int i = 1; i < argc; i++) {
            if (strchr(argv[i], '=')) {
                putenv(argv[i]); /* NAME=VALUE, as mrt_init does */
            }
        }
        CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
        CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
        MPI_Comm_rank(MPI_COMM_WORLD, &mrt_rank);
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &quiet));
        CHECK(pthread_create(&tid, NULL, poller, &quiet) == 0, "pthread_create");
    } else {
        mrt_init(&argc, &argv);
    }
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = mrt_rank;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    {
        const char *e = getenv("MPISHIM_RMA_DIRECT");
        MPI_Comm node;
        int nsize;

        CHECK_MPI(
            MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
        MPI_Comm_size(node, &nsize);
        CHECK_MPI(MPI_Comm_free(&node));
        direct_expected = nsize == size && (!e || !*e || strcmp(e, "0") != 0);
    }
    test_paths();
    test_fence_put_get();
    test_concurrent_accumulate();
    test_datatypes_and_size();
    test_lock_contention();
    test_concurrent_types();
    test_shared_and_exclusive();
    test_target_outside_mpi();
    test_atomics_and_requests();
    test_self_target_completes_at_once();
    test_pscw();
    test_shared();
    test_create_and_attributes();
    test_errors();
    test_proc_null_sync();
    if (threads) {
        __atomic_store_n(&poller_stop, 1, __ATOMIC_RELEASE);
        pthread_join(tid, NULL);
        CHECK_MPI(MPI_Comm_free(&quiet));
    }
    return mrt_finish("mr_rma");
}
