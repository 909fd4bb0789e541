/*
 * mr_rma_fence.c - the order MPI_Win_fence promises, over many epochs, on a window of each
 * kind: MPI_Win_allocate (the direct path on one node, with the fence's barrier in the
 * window's segment), MPI_Win_allocate_shared (the same segment) and MPI_Win_create
 * (active messages and pg_barrier).
 *
 * Every epoch e, every rank
 *   - puts K values, one element at a time and last to first, into its row of every
 *     target's half e % 2 (itself included);
 *   - adds e + rank to every target's counter e % 2 (MPI_Accumulate, MPI_SUM; two counters,
 *     so that the one a rank reads after a fence is not the one the next epoch adds to);
 *   - gets the whole other half of one target, (rank + e) % size: what the previous epoch
 *     put there, and the value its owner stored there itself, with a plain store, before
 *     the fence that opened the previous epoch.
 * After the fence that closes epoch e each rank checks its half e % 2, its counter and what
 * it got, against values computed here from (epoch, origin, target, slot). A fence that
 * let a rank through before another's puts landed, or let a get overtake the puts of the
 * epoch before or a put of the next epoch overtake a get, gives a wrong value. Every 16th
 * epoch closes with MPI_MODE_NOSUCCEED, passes a fence with MPI_MODE_NOPRECEDE |
 * MPI_MODE_NOSUCCEED (which need not synchronise) and opens the next with
 * MPI_MODE_NOPRECEDE; the first fence has MPI_MODE_NOPRECEDE too.
 *
 * With --mismatch (run with a short MPISHIM_TIMEOUT): rank 1 skips a fence that every
 * other rank calls; their fence must fail (MPI_ERRORS_RETURN) with a message that names
 * MPI_Win_fence and, on a window with the barrier in its segment, the rank it waited for,
 * computed here from the dissemination rounds. Rank 1 meanwhile waits in MPI_Ibarrier,
 * polled with MPI_Test (no wait that could time out).
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stdint.h>

#define EPOCHS 200
#define K 4

static int rank, size;

/* What origin puts into slot j of its row in target's window in epoch e. */
static int64_t put_value(int e, int origin, int target, int j)
{
    return (int64_t)e * 1000003 + (int64_t)origin * 10007 + (int64_t)target * 101 + j + 1;
}

/* What rank stores itself into its own slot of the half that epoch e reads. */
static int64_t own_value(int e, int r)
{
    return -((int64_t)e * 7919 + r + 1);
}

/* A half: size rows of K put slots, then the owner's slot. The two counters follow the
 * halves. */
static size_t half_len(void)
{
    return (size_t)size * K + 1;
}

static int64_t *half_of(int64_t *base, int h)
{
    return base + (size_t)h * half_len();
}

/* Half 0 as epoch 1 reads it, and the owner's slot of half 1 as epoch 2 reads it. */
static void init_window(int64_t *base)
{
    int64_t *h0 = half_of(base, 0), *h1 = half_of(base, 1);

    for (int o = 0; o < size; o++) {
        for (int j = 0; j < K; j++) {
            h0[o * K + j] = put_value(0, o, rank, j);
            h1[o * K + j] = -1;
        }
    }
    h0[size * K] = own_value(1, rank);
    h1[size * K] = own_value(2, rank);
    base[2 * half_len()] = 0;
    base[2 * half_len() + 1] = 0;
}

static void epoch_ops(int64_t *got, int e, MPI_Win win)
{
    int h = e % 2, g = (rank + e) % size;
    int64_t add = e + rank;

    for (int t = 0; t < size; t++) {
        for (int j = K - 1; j >= 0; j--) {
            int64_t v = put_value(e, rank, t, j);
            MPI_Aint disp = (MPI_Aint)((size_t)h * half_len() + (size_t)rank * K + (size_t)j);

            CHECK_MPI(MPI_Put(&v, 1, MPI_INT64_T, t, disp, 1, MPI_INT64_T, win));
        }
        CHECK_MPI(MPI_Accumulate(&add, 1, MPI_INT64_T, t, (MPI_Aint)(2 * half_len() + h), 1,
                                 MPI_INT64_T, MPI_SUM, win));
    }
    CHECK_MPI(MPI_Get(got, (int)half_len(), MPI_INT64_T, g, (MPI_Aint)((1 - h) * half_len()),
                      (int)half_len(), MPI_INT64_T, win));
}

/* After the fence that closed epoch e: my half e % 2, my counter, and what I got. */
static void epoch_check(int64_t *base, const int64_t *got, int e, const char *kind)
{
    const int64_t *mine = half_of(base, e % 2);
    int g = (rank + e) % size;
    int64_t count = 0, held = base[2 * half_len() + e % 2];

    /* The sum of (epoch + rank) over the ranks and the epochs 1..e of e's parity. */
    for (int p = e; p >= 1; p -= 2) {
        count += (int64_t)size * p + (int64_t)size * (size - 1) / 2;
    }

    for (int o = 0; o < size; o++) {
        for (int j = 0; j < K; j++) {
            CHECK(mine[o * K + j] == put_value(e, o, rank, j),
                  "%s epoch %d: slot %d of origin %d holds %lld, expected %lld", kind, e, j, o,
                  (long long)mine[o * K + j], (long long)put_value(e, o, rank, j));
            CHECK(got[o * K + j] == put_value(e - 1, o, g, j),
                  "%s epoch %d: got slot %d of origin %d from rank %d: %lld, expected %lld", kind,
                  e, j, o, g, (long long)got[o * K + j], (long long)put_value(e - 1, o, g, j));
        }
    }
    CHECK(got[size * K] == own_value(e, g), "%s epoch %d: rank %d's own slot %lld, expected %lld",
          kind, e, g, (long long)got[size * K], (long long)own_value(e, g));
    CHECK(held == count, "%s epoch %d: counter %d holds %lld, expected %lld", kind, e, e % 2,
          (long long)held, (long long)count);
}

/* Between epochs e and e + 1: the fence(s), and my own store into the owner's slot of the
 * half that epoch e read and epoch e + 2 reads again, made in epoch e + 1 (which puts into
 * the other slots of that half and reads the other half) and read by a get after the fence
 * that opens epoch e + 2. */
static void between(int64_t *base, int64_t *got, int e, MPI_Win win, const char *kind)
{
    bool quiet = e % 16 == 0 && e < EPOCHS;

    CHECK_MPI(MPI_Win_fence(quiet || e == EPOCHS ? MPI_MODE_NOSUCCEED : 0, win));
    epoch_check(base, got, e, kind);
    half_of(base, (e + 1) % 2)[size * K] = own_value(e + 2, rank);
    if (quiet) {
        CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED, win));
        CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    }
}

static void run_epochs(int64_t *base, MPI_Win win, const char *kind)
{
    int64_t *got = malloc(half_len() * sizeof(*got));

    CHECK(got != NULL, "no memory");
    init_window(base);
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    for (int e = 1; e <= EPOCHS; e++) {
        epoch_ops(got, e, win);
        between(base, got, e, win, kind);
    }
    free(got);
}

static MPI_Aint window_bytes(void)
{
    return (MPI_Aint)((2 * half_len() + 2) * sizeof(int64_t));
}

static void test_epochs(void)
{
    int64_t *base, *mem;
    MPI_Win win;
    MPI_Comm node;
    int nsize;

    CHECK_MPI(MPI_Win_allocate(window_bytes(), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &base, &win));
    run_epochs(base, win, "allocate");
    CHECK_MPI(MPI_Win_free(&win));

    mem = malloc((size_t)window_bytes());
    CHECK(mem != NULL, "no memory");
    CHECK_MPI(
        MPI_Win_create(mem, window_bytes(), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    run_epochs(mem, win, "create");
    CHECK_MPI(MPI_Win_free(&win));
    free(mem);

    /* A shared window needs one node: the world when it is one, else nothing to run. */
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_Comm_size(node, &nsize);
    CHECK_MPI(MPI_Comm_free(&node));
    if (nsize == size) {
        CHECK_MPI(MPI_Win_allocate_shared(window_bytes(), sizeof(int64_t), MPI_INFO_NULL,
                                          MPI_COMM_WORLD, &base, &win));
        run_epochs(base, win, "allocate_shared");
        CHECK_MPI(MPI_Win_free(&win));
    } else if (rank == 0) {
        printf("mr_rma_fence: MPI_Win_allocate_shared skipped: the ranks span nodes\n");
    }
}

/* The rank that rank r waits for when rank `missing` never arrives: dissemination rounds
 * k = 0, 1, ...: r announces round k, then waits for r - 2^k's round-k announcement. */
static int awaited(int r, int missing)
{
    bool reached[64][8] = {{false}}; /* [rank][round]: announced */
    int stuck[64], rounds = 0, changed = 1;

    while ((1 << rounds) < size) {
        rounds++;
    }
    for (int i = 0; i < size; i++) {
        stuck[i] = -1;
    }
    /* Ranks advance while their partner announced; repeat until nothing moves. */
    while (changed) {
        changed = 0;
        for (int i = 0; i < size; i++) {
            int k = 0;

            if (i == missing) {
                continue;
            }
            while (k < rounds) {
                int from = (i - (1 << k) + size) % size;

                if (!reached[i][k]) {
                    reached[i][k] = true;
                    changed = 1;
                }
                if (!reached[from][k]) {
                    stuck[i] = from;
                    break;
                }
                k++;
            }
        }
    }
    return stuck[r];
}

static bool window_direct(MPI_Win win)
{
    MPI_Info info;
    char value[64] = "";
    int flag = 0;

    CHECK_MPI(MPI_Win_get_info(win, &info));
    CHECK_MPI(MPI_Info_get(info, "mpishim_rma_path", sizeof(value) - 1, value, &flag));
    CHECK_MPI(MPI_Info_free(&info));
    return flag && strcmp(value, "direct") == 0;
}

static void test_mismatch(void)
{
    int64_t *base;
    MPI_Win win;
    MPI_Request req;
    int done = 0, rc;

    CHECK(size >= 2 && size <= 64, "--mismatch needs 2 to 64 ranks");
    CHECK_MPI(MPI_Win_allocate(window_bytes(), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                               &base, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank != 1) {
        char msg[MPI_MAX_ERROR_STRING], want[64];
        int cls, len;

        rc = MPI_Win_fence(0, win);

        CHECK(rc != MPI_SUCCESS, "a fence that rank 1 skipped returned MPI_SUCCESS");
        MPI_Error_class(rc, &cls);
        MPI_Error_string(rc, msg, &len);
        CHECK(cls == MPI_ERR_OTHER, "class %d, expected MPI_ERR_OTHER (%s)", cls, msg);
        CHECK(strstr(msg, "MPI_Win_fence") != NULL, "the message does not name the call: %s", msg);
        if (window_direct(win)) {
            snprintf(want, sizeof(want), "no word from rank %d ", awaited(rank, 1));
            CHECK(strstr(msg, want) != NULL, "the message lacks '%s': %s", want, msg);
        }
    }
    CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    do {
        rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    } while (rc == MPI_SUCCESS && !done);
    CHECK_MPI(rc);
    CHECK_MPI(MPI_Win_free(&win));
}

int main(int argc, char **argv)
{
    bool mismatch = false;

    mrt_init(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        mismatch = mismatch || strcmp(argv[i], "--mismatch") == 0;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (mismatch) {
        test_mismatch();
    } else {
        test_epochs();
    }
    return mrt_finish("mr_rma_fence");
}
