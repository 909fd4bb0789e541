/*
 * mr_rma_dyn.c - dynamic windows (MPI_Win_create_dynamic, MPI_Win_attach, MPI_Win_detach),
 * user window keyvals and attributes, and window error handlers (MPI-3.1 11.2.4, 6.7, 8.3).
 *
 * Every rank attaches regions and publishes their addresses (MPI_Get_address, allgathered);
 * peers put, get and accumulate into them by address, across two regions that touch, and
 * fetch_and_op on one counter from all ranks at once. An access to a detached region, to
 * memory never attached, or past a region's end is refused by its target with
 * MPI_ERR_RMA_RANGE through the origin's window error handler, and the target goes on
 * serving. Keyval callbacks are counted. Every expected value is computed here from the
 * ranks and counts.
 */
#include "mrtest.h"

#include <stdint.h>

#define N_FOP 100 /* fetch_and_ops per rank on one counter */

static int rank, size;

/* Region A: one int per rank (rank r's put lands in slot r). Regions B1 and B2: the two
 * halves of one array, attached separately, so a put may span both. Region C: a long that
 * every rank accumulates into. */
#define B_HALF 8

static void test_put_get_accumulate(void)
{
    int *a = malloc(sizeof(int) * (size_t)size), *got = malloc(sizeof(int) * (size_t)size);
    int b[2 * B_HALF], span[4];
    long c = 0;
    MPI_Aint mine[3], *all = malloc(sizeof(MPI_Aint) * 3 * (size_t)size);
    int right = (rank + 1) % size, left = (rank + size - 1) % size, *flavor, flag;
    MPI_Aint *wsize;
    void *wbase;
    MPI_Win win;

    CHECK(a && got && all, "no memory");
    for (int i = 0; i < size; i++) {
        a[i] = -1;
    }
    for (int i = 0; i < 2 * B_HALF; i++) {
        b[i] = -2;
    }
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_DYNAMIC, "flavor %d", *flavor);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &wbase, &flag));
    CHECK(flag && wbase == MPI_BOTTOM, "MPI_WIN_BASE %p, expected MPI_BOTTOM", wbase);
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &wsize, &flag));
    CHECK(flag && *wsize == 0, "MPI_WIN_SIZE %ld", (long)*wsize);
    CHECK_MPI(MPI_Win_attach(win, a, sizeof(int) * (MPI_Aint)size));
    CHECK_MPI(MPI_Win_attach(win, b, sizeof(int) * B_HALF));
    CHECK_MPI(MPI_Win_attach(win, b + B_HALF, sizeof(int) * B_HALF));
    CHECK_MPI(MPI_Win_attach(win, &c, sizeof(c)));
    CHECK_MPI(MPI_Get_address(a, &mine[0]));
    CHECK_MPI(MPI_Get_address(b, &mine[1]));
    CHECK_MPI(MPI_Get_address(&c, &mine[2]));
    CHECK_MPI(MPI_Allgather(mine, 3, MPI_AINT, all, 3, MPI_AINT, MPI_COMM_WORLD));

    CHECK_MPI(MPI_Win_fence(0, win));
    for (int t = 0; t < size; t++) {
        int v = 1000 * (rank + 1) + t;
        long one = rank + 1;

        CHECK_MPI(
            MPI_Put(&v, 1, MPI_INT, t, all[3 * t] + rank * (MPI_Aint)sizeof(int), 1, MPI_INT, win));
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_LONG, t, all[3 * t + 2], 1, MPI_LONG, MPI_SUM, win));
    }
    /* Four ints over the border of right's two halves of b. */
    for (int i = 0; i < 4; i++) {
        span[i] = 50 * rank + i;
    }
    CHECK_MPI(MPI_Put(span, 4, MPI_INT, right,
                      all[3 * right + 1] + (B_HALF - 2) * (MPI_Aint)sizeof(int), 4, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < size; i++) {
        CHECK(a[i] == 1000 * (i + 1) + rank, "a[%d] = %d, expected %d", i, a[i],
              1000 * (i + 1) + rank);
    }
    CHECK(c == (long)size * (size + 1) / 2, "accumulated %ld, expected %ld", c,
          (long)size * (size + 1) / 2);
    for (int i = 0; i < 2 * B_HALF; i++) {
        int want = i >= B_HALF - 2 && i < B_HALF + 2 ? 50 * left + i - (B_HALF - 2) : -2;

        CHECK(b[i] == want, "b[%d] = %d, expected %d (put by rank %d)", i, b[i], want, left);
    }
    /* Back from the right neighbour, under a lock this time. */
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CHECK_MPI(MPI_Get(got, size, MPI_INT, right, all[3 * right], size, MPI_INT, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    for (int i = 0; i < size; i++) {
        CHECK(got[i] == 1000 * (i + 1) + right, "got[%d] = %d from rank %d, expected %d", i, got[i],
              right, 1000 * (i + 1) + right);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_detach(win, a));
    CHECK_MPI(MPI_Win_detach(win, b));
    CHECK_MPI(MPI_Win_detach(win, b + B_HALF));
    CHECK_MPI(MPI_Win_detach(win, &c));
    CHECK_MPI(MPI_Win_free(&win));
    free(a);
    free(got);
    free(all);
}

/* N_FOP fetch_and_op(+1) from every rank on rank 0's counter: the fetched values are
 * exactly 0 .. N_FOP * size - 1, each once, and the counter ends at N_FOP * size. */
static void test_concurrent_fetch_and_op(void)
{
    long counter = 0, fetched[N_FOP], *every = NULL;
    MPI_Aint addr;
    MPI_Win win;
    int n = N_FOP * size;

    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    if (rank == 0) {
        CHECK_MPI(MPI_Win_attach(win, &counter, sizeof(counter)));
    }
    CHECK_MPI(MPI_Get_address(&counter, &addr));
    CHECK_MPI(MPI_Bcast(&addr, 1, MPI_AINT, 0, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i < N_FOP; i++) {
        long one = 1;

        CHECK_MPI(MPI_Fetch_and_op(&one, &fetched[i], MPI_LONG, 0, addr, MPI_SUM, win));
        CHECK_MPI(MPI_Win_flush(0, win));
    }
    CHECK_MPI(MPI_Win_unlock_all(win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        every = malloc(sizeof(long) * (size_t)n);
        CHECK(every != NULL, "no memory");
        CHECK(counter == n, "counter %ld, expected %d", counter, n);
    }
    CHECK_MPI(MPI_Gather(fetched, N_FOP, MPI_LONG, every, N_FOP, MPI_LONG, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        char *seen = calloc((size_t)n, 1);

        CHECK(seen != NULL, "no memory");
        for (int i = 0; i < n; i++) {
            CHECK(every[i] >= 0 && every[i] < n && !seen[every[i]],
                  "fetched value %ld (index %d) is out of range or came twice", every[i], i);
            seen[every[i]] = 1;
        }
        free(seen);
        free(every);
        CHECK_MPI(MPI_Win_detach(win, &counter));
    }
    CHECK_MPI(MPI_Win_free(&win));
}

/* The window error handler's record of its last call. */
static int handler_calls, handler_code;
static MPI_Win handler_win;

static void win_handler(MPI_Win *win, int *code, ...)
{
    handler_calls++;
    handler_win = *win;
    handler_code = *code;
}

static void comm_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
}

/* The call fails with class cls, through the window's handler, given win and the code. */
#define EXPECT_HANDLED(call, cls)                                                                  \
    do {                                                                                           \
        int before_ = handler_calls, r_ = (call), c_ = -1;                                         \
        MPI_Error_class(r_, &c_);                                                                  \
        CHECK(c_ == (cls), "%s gave class %d, expected %d (%s)", #call, c_, (cls), #cls);          \
        CHECK(handler_calls == before_ + 1, "%s called the window handler %d times", #call,        \
              handler_calls - before_);                                                            \
        CHECK(handler_win == win, "the handler got window 0x%x, expected 0x%x",                    \
              (unsigned)handler_win, (unsigned)win);                                               \
        CHECK(handler_code == r_, "the handler got code %d, the call returned %d", handler_code,   \
              r_);                                                                                 \
    } while (0)

/* An operation its target refuses (MPI_ERR_RMA_RANGE), and the call that closes it: another
 * rank's refusal comes with the closing call; this rank's own window (the target on one
 * rank) completes operations at once, so there the operation's own call is refused
 * (doc/mpi-semantics.md). */
#define EXPECT_REFUSED(op, close)                                                                  \
    do {                                                                                           \
        if (right == rank) {                                                                       \
            EXPECT_HANDLED(op, MPI_ERR_RMA_RANGE);                                                 \
            CHECK_MPI(close);                                                                      \
        } else {                                                                                   \
            CHECK_MPI(op);                                                                         \
            EXPECT_HANDLED(close, MPI_ERR_RMA_RANGE);                                              \
        }                                                                                          \
    } while (0)

/* Detached, never attached and past the end: refused at the target, which goes on. */
static void test_errors(void)
{
    int region[4] = {0}, other[4], v = 7, *buf = NULL;
    MPI_Aint addrs[2], *all = malloc(sizeof(MPI_Aint) * 2 * (size_t)size);
    MPI_Errhandler weh, ceh, got;
    MPI_Win win, plain;
    int right = (rank + 1) % size, left = (rank + size - 1) % size, rc;

    CHECK(all != NULL, "no memory");
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_get_errhandler(win, &got));
    CHECK(got == MPI_ERRORS_ARE_FATAL, "a dynamic window's default handler is 0x%x", (unsigned)got);
    CHECK_MPI(MPI_Win_create_errhandler(win_handler, &weh));
    CHECK_MPI(MPI_Comm_create_errhandler(comm_handler, &ceh));
    CHECK_MPI(MPI_Win_set_errhandler(win, weh));
    CHECK_MPI(MPI_Win_get_errhandler(win, &got));
    CHECK(got == weh, "MPI_Win_get_errhandler gave 0x%x, expected 0x%x", (unsigned)got,
          (unsigned)weh);
    CHECK_MPI(MPI_Errhandler_free(&got));
    /* A handler is for one kind of object. */
    EXPECT_CLASS(MPI_Comm_set_errhandler(MPI_COMM_WORLD, weh), MPI_ERR_ARG);
    EXPECT_HANDLED(MPI_Win_set_errhandler(win, ceh), MPI_ERR_ARG);
    rc = MPI_Win_call_errhandler(win, MPI_ERR_OTHER);
    CHECK(rc == MPI_SUCCESS && handler_win == win && handler_code == MPI_ERR_OTHER,
          "MPI_Win_call_errhandler: returned %d, handler got window 0x%x code %d", rc,
          (unsigned)handler_win, handler_code);

    /* Attach and detach misuse (MPI-3.1 11.2.4): local errors on the window. */
    CHECK_MPI(MPI_Win_attach(win, region, sizeof(region)));
    EXPECT_HANDLED(MPI_Win_attach(win, region + 2, sizeof(int)), MPI_ERR_RMA_ATTACH);
    EXPECT_HANDLED(MPI_Win_attach(win, region, sizeof(int)), MPI_ERR_RMA_ATTACH);
    EXPECT_HANDLED(MPI_Win_attach(win, other, -1), MPI_ERR_SIZE);
    EXPECT_HANDLED(MPI_Win_detach(win, other), MPI_ERR_RMA_RANGE);
    EXPECT_HANDLED(MPI_Win_detach(win, region + 1), MPI_ERR_RMA_RANGE);
    CHECK_MPI(
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &buf, &plain));
    CHECK_MPI(MPI_Win_set_errhandler(plain, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Win_attach(plain, other, sizeof(other)), MPI_ERR_RMA_FLAVOR);
    EXPECT_CLASS(MPI_Win_detach(plain, buf), MPI_ERR_RMA_FLAVOR);
    CHECK_MPI(MPI_Win_free(&plain));
    /* An origin-side error goes through the window's handler too. */
    CHECK_MPI(MPI_Win_fence(0, win));
    EXPECT_HANDLED(MPI_Put(&v, 1, MPI_INT, size, 0, 1, MPI_INT, win), MPI_ERR_RANK);
    CHECK_MPI(MPI_Win_fence(0, win));

    CHECK_MPI(MPI_Get_address(region, &addrs[0]));
    CHECK_MPI(MPI_Get_address(other, &addrs[1]));
    CHECK_MPI(MPI_Allgather(addrs, 2, MPI_AINT, all, 2, MPI_AINT, MPI_COMM_WORLD));
    /* Never attached; one int past the end: refused under a lock and under a fence. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    EXPECT_REFUSED(MPI_Put(&v, 1, MPI_INT, right, all[2 * right + 1], 1, MPI_INT, win),
                   MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    EXPECT_REFUSED(MPI_Get(other, 5, MPI_INT, right, all[2 * right], 5, MPI_INT, win),
                   MPI_Win_fence(0, win));
    /* The unlock released the lock despite the refusal: it can be taken again. */
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    CHECK_MPI(MPI_Put(&v, 1, MPI_INT, right, all[2 * right] + 3 * (MPI_Aint)sizeof(int), 1, MPI_INT,
                      win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK(region[3] == 7, "region[3] = %d after the put of rank %d, expected 7", region[3], left);

    /* Detached: the same address is refused now, and the target still serves others. */
    CHECK_MPI(MPI_Win_detach(win, region));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    EXPECT_REFUSED(
        MPI_Accumulate(&v, 1, MPI_INT, right, all[2 * right], 1, MPI_INT, MPI_SUM, win),
        MPI_Win_unlock(right, win));
    CHECK(region[0] == 0, "region[0] = %d: an accumulate to a detached region took effect",
          region[0]);
    CHECK_MPI(MPI_Win_attach(win, other, sizeof(other)));
    other[0] = 0;
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Accumulate(&v, 1, MPI_INT, right, all[2 * right + 1], 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(other[0] == 7, "other[0] = %d after rank %d's accumulate, expected 7", other[0], left);
    CHECK_MPI(MPI_Win_detach(win, other));

    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free left the handle");
    CHECK_MPI(MPI_Errhandler_free(&weh));
    CHECK_MPI(MPI_Errhandler_free(&ceh));
    free(all);
}

/* The keyval callbacks' record. */
static int copies, deletes, last_deleted_val;
static MPI_Win last_deleted_win;

static int count_copy(MPI_Win win, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)win;
    (void)keyval;
    (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Win win, int keyval, void *val, void *extra)
{
    CHECK(extra == &copies, "delete callback of keyval 0x%x got extra_state %p", (unsigned)keyval,
          extra);
    deletes++;
    last_deleted_val = *(int *)val;
    last_deleted_win = win;
    return MPI_SUCCESS;
}

/* The communicator keyval callbacks' record. */
static int comm_copies, comm_deletes;

static int count_comm_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    comm_copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_comm_delete(MPI_Comm comm, int keyval, void *val, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)val;
    (void)extra;
    comm_deletes++;
    return MPI_SUCCESS;
}

/* A window made from a communicator with attributes neither copies nor deletes them: the
 * window's own communicator is not the user's to see (it once was an MPI_Comm_dup). */
static void test_comm_attributes_untouched(void)
{
    int kv, v = 5, *buf;
    MPI_Comm dup;
    MPI_Win win;

    CHECK_MPI(MPI_Comm_create_keyval(count_comm_copy, count_comm_delete, &kv, NULL));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_set_attr(dup, kv, &v));
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, dup, &buf, &win));
    CHECK_MPI(MPI_Win_free(&win));
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, dup, &win));
    CHECK_MPI(MPI_Win_free(&win));
    CHECK(comm_copies == 0 && comm_deletes == 0,
          "creating and freeing windows ran %d copy and %d delete callbacks of the "
          "communicator's attribute",
          comm_copies, comm_deletes);
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK(comm_deletes == 1, "MPI_Comm_free ran %d delete callbacks", comm_deletes);
    CHECK_MPI(MPI_Comm_free_keyval(&kv));
}

/* Set, overwrite (deletes the old value), delete, set again and free the window (deletes
 * it); a window is never duplicated, so the copy callback never runs. A keyval freed while
 * an attribute uses it still calls its delete callback at MPI_Win_free. */
static void test_keyvals(void)
{
    int x = 11, y = 22, z = 33, w2v = 44, flag = -1, kv = MPI_KEYVAL_INVALID, kv2, ckv;
    int *val = NULL, *buf;
    MPI_Win win, win2;

    CHECK_MPI(MPI_Win_create_keyval(count_copy, count_delete, &kv, &copies));
    CHECK(kv != MPI_KEYVAL_INVALID, "MPI_Win_create_keyval gave no keyval");
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, count_delete, &kv2, &copies));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ckv, NULL));
    CHECK_MPI(
        MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &buf, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    CHECK_MPI(MPI_Win_get_attr(win, kv, &val, &flag));
    CHECK(flag == 0, "an unset attribute has flag %d", flag);
    CHECK_MPI(MPI_Win_set_attr(win, kv, &x));
    CHECK_MPI(MPI_Win_get_attr(win, kv, &val, &flag));
    CHECK(flag == 1 && val == &x, "get_attr: flag %d, value %p, expected %p", flag, (void *)val,
          (void *)&x);
    CHECK(deletes == 0, "%d deletes after one set", deletes);
    CHECK_MPI(MPI_Win_set_attr(win, kv, &y));
    CHECK(deletes == 1 && last_deleted_val == 11 && last_deleted_win == win,
          "overwrite: %d deletes, last of value %d on window 0x%x", deletes, last_deleted_val,
          (unsigned)last_deleted_win);
    CHECK_MPI(MPI_Win_delete_attr(win, kv));
    CHECK(deletes == 2 && last_deleted_val == 22, "delete_attr: %d deletes, last of value %d",
          deletes, last_deleted_val);
    CHECK_MPI(MPI_Win_get_attr(win, kv, &val, &flag));
    CHECK(flag == 0, "a deleted attribute has flag %d", flag);
    EXPECT_CLASS(MPI_Win_delete_attr(win, kv), MPI_ERR_KEYVAL);
    /* A communicator keyval, a predefined one, and a bad handle are not window keyvals. */
    EXPECT_CLASS(MPI_Win_set_attr(win, ckv, &x), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Win_set_attr(win, MPI_WIN_BASE, &x), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Comm_set_attr(MPI_COMM_WORLD, kv, &x), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Win_get_attr(win, 0x7fff, &val, &flag), MPI_ERR_KEYVAL);
    /* The predefined attributes still answer. */
    {
        int *unit;

        CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
        CHECK(flag && *unit == (int)sizeof(int), "MPI_WIN_DISP_UNIT %d", *unit);
    }

    CHECK_MPI(MPI_Win_set_attr(win, kv, &z));
    CHECK_MPI(MPI_Win_set_attr(win, kv2, &w2v));
    CHECK_MPI(MPI_Win_free_keyval(&kv2));
    CHECK(kv2 == MPI_KEYVAL_INVALID, "MPI_Win_free_keyval left the keyval");
    {
        MPI_Win freed = win;

        /* Both attributes deleted at free, newest first: kv2's (44), then kv's (33). */
        CHECK_MPI(MPI_Win_free(&win));
        CHECK(deletes == 4 && last_deleted_val == 33 && last_deleted_win == freed,
              "MPI_Win_free: %d deletes, last of value %d on window 0x%x (expected 4, 33, 0x%x)",
              deletes, last_deleted_val, (unsigned)last_deleted_win, (unsigned)freed);
    }
    /* The same keyval on a dynamic window, its value still read back. */
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win2));
    CHECK_MPI(MPI_Win_set_attr(win2, kv, &x));
    CHECK_MPI(MPI_Win_get_attr(win2, kv, &val, &flag));
    CHECK(flag == 1 && *val == 11, "dynamic window attribute: flag %d value %d", flag,
          flag ? *val : -1);
    CHECK_MPI(MPI_Win_free(&win2));
    CHECK(deletes == 5 && last_deleted_val == 11, "%d deletes after the dynamic window", deletes);
    CHECK_MPI(MPI_Win_free_keyval(&kv));
    CHECK_MPI(MPI_Comm_free_keyval(&ckv));
    CHECK(copies == 0, "a window keyval's copy callback ran %d times", copies);
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = mrt_rank;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    test_put_get_accumulate();
    test_concurrent_fetch_and_op();
    test_errors();
    test_keyvals();
    test_comm_attributes_untouched();
    return mrt_finish("mr_rma_dyn");
}
