/*
 * mr_coll_mismatch.c - ranks that call different collectives, or the same one with
 * different ops or roots, at the same point: every rank whose result depends on another's
 * must fail with an error instead of returning success with the other collective's bytes
 * (before collective signatures, a rank in MPI_Allreduce facing a rank in MPI_Bcast returned
 * MPI_SUCCESS holding a wrong sum), and no rank may wait for the timeout. Ranks that read
 * nothing from the others may still succeed, and the test lets them: a broadcast's root, a
 * reduce's leaves (they send and return). Each case runs on a fresh communicator, since the
 * mismatched one is out of step afterwards. tests/mr.list runs it with shared memory on and
 * off, at 2 to 8 ranks, and node-aware (MRT_NODE_AWARE=1 with MPISHIM_NODE_SPLIT).
 *
 * The cases where no rank ever reads the other collective's bytes are those the roll call
 * (pg_coll_roll.c) catches; before it, each waited for MPISHIM_TIMEOUT:
 *  - different transports: a broadcast sent as messages (where ranks outnumber cores)
 *    against a shared-memory allreduce;
 *  - different trees: a reduce to root 0 against a reduce to root 1;
 *  - a rendezvous broadcast (256 KiB, above every eager size) to ranks that abort;
 *  - node-aware collectives of different kinds, whose steps on the sub-groups fall out of
 *    step.
 * Each case must end well within MPISHIM_TIMEOUT (60 s in the suite; a case takes a second
 * at most, and we allow 20 s), or some rank waited for the timeout. A failing rank's
 * message must name both calls (the two kinds, ops or roots), which a timeout's does not.
 * Node-aware, a rank may learn of the clash through a later step's poison and fail with
 * MPI_ERR_BUFFER saying the data stands in for a rank's failed part, or name the steps'
 * collectives on the sub-groups: there only the class is checked.
 *
 * Last, a legal program that is merely slow: one rank enters two collectives 2 s late, while
 * the others' waits hold their roll calls; everyone must succeed with the right result.
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int rank, nranks;

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};

    nanosleep(&ts, NULL);
}
static double case_start;
static bool node_aware; /* MRT_NODE_AWARE=1 */

/* A case ended long before the timeout: nobody waited for it. */
static void in_time(const char *what)
{
    double took = MPI_Wtime() - case_start;

    CHECK(took < 20.0, "%s took %.1f s: some rank waited for the timeout", what, took);
}

static MPI_Comm fresh(void)
{
    MPI_Comm c;

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    case_start = MPI_Wtime();
    return c;
}

/* rc is the error of a mismatch: MPI_ERR_OTHER with a message naming both calls (a and b,
 * e.g. "bcast" and "allreduce"), or node-aware a poisoned step's MPI_ERR_BUFFER. */
static void expect_failed(int rc, const char *what, const char *a, const char *b)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int cls, len = 0;

    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, msg, &len);
    if (node_aware && cls == MPI_ERR_BUFFER) {
        CHECK(strstr(msg, "stands in for a rank's failed part") ||
              strstr(msg, "or ranks called different collectives"),
              "%s: MPI_ERR_BUFFER without the poisoned step's message: %s", what, msg);
        return;
    }
    CHECK(cls == MPI_ERR_OTHER, "%s: class %d, expected MPI_ERR_OTHER (%d): %s", what, cls,
          MPI_ERR_OTHER, msg);
    CHECK(node_aware || (strstr(msg, a) && strstr(msg, b)),
          "%s: the message does not name both %s and %s: %s", what, a, b, msg);
}

/* A rank that reads nothing from the others may succeed; if it fails, it names the clash. */
static void may_fail(int rc, const char *what, const char *a, const char *b)
{
    if (rc != MPI_SUCCESS) {
        expect_failed(rc, what, a, b);
    }
}

/* Rank 0 broadcasts, the others allreduce, count ints. Above every eager size (BIG) the
 * root's sends are rendezvous transfers to ranks that abort their allreduce; their wait
 * must not outlast the abort. */
enum { BIG = 64 * 1024 }; /* ints: 256 KiB */

static void bcast_against_allreduce(int count)
{
    int *buf = malloc(sizeof(int) * (size_t)count), *out = malloc(sizeof(int) * (size_t)count);
    MPI_Comm c = fresh();
    int rc;

    CHECK(buf && out, "no memory for %d ints", 2 * count);
    for (int i = 0; i < count; i++) {
        buf[i] = rank + i;
    }
    if (rank == 0) {
        /* The root reads nothing; node-aware, it may run a step with the others. */
        rc = MPI_Bcast(buf, count, MPI_INT, 0, c);
        may_fail(rc, "the bcast root", "bcast", "allreduce");
    } else {
        rc = MPI_Allreduce(buf, out, count, MPI_INT, MPI_SUM, c);
        expect_failed(rc, "allreduce facing a bcast", "bcast", "allreduce");
    }
    in_time(count < BIG ? "bcast against allreduce" : "a 256 KiB bcast against an allreduce");
    MPI_Comm_free(&c);
    free(buf);
    free(out);
}

/* Rank 0 reduces to root 0, the others to root 1: both roots need data that never comes
 * (rank 0 sends its part to nobody, and its tree's children send theirs elsewhere). The
 * other ranks are leaves or inner nodes of one tree or the other and may succeed.
 * Node-aware, the steps within the nodes and among the leaders are the same for both roots
 * (rank 0 leads the roots' node): rank 0 gets everyone's data and may succeed, with the
 * right sum; rank 1 waits for the hand-over from its node's leader, which never comes. */
static void different_roots(int count)
{
    MPI_Comm c = fresh();
    int buf[600], out[600], rc;

    for (int i = 0; i < count; i++) {
        buf[i] = rank + i;
    }
    rc = MPI_Reduce(buf, out, count, MPI_INT, MPI_SUM, rank == 0 ? 0 : 1, c);
    if (rank == 1 || (rank == 0 && !node_aware)) {
        expect_failed(rc, "a reduce's root facing another root", "root=0", "root=1");
    } else {
        may_fail(rc, "a reduce's leaf facing another root", "root=0", "root=1");
    }
    for (int i = 0; rank == 0 && rc == MPI_SUCCESS && i < count; i++) {
        int want = nranks * (nranks - 1) / 2 + nranks * i;
        CHECK(out[i] == want, "reduce to root 0 succeeded with %d at %d, expected %d", out[i],
              i, want);
    }
    in_time("reduce to different roots");
    MPI_Comm_free(&c);
}

/* different_roots with non-blocking reduces completed by MPI_Waitany (whose wait held no roll
 * call before: the roots waited for the timeout), the request second in an array with a
 * null one, so that the wait cannot be a plain MPI_Wait. The roots must fail naming both;
 * the other ranks may succeed (leaves). Node-aware runs skip it: the non-blocking forms are
 * flat, and rank 0's tree there may still complete. */
static void different_roots_waitany(int count)
{
    MPI_Comm c = fresh();
    MPI_Request reqs[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int buf[600], out[600], index = -1, rc;

    for (int i = 0; i < count; i++) {
        buf[i] = rank + i;
    }
    CHECK_MPI(MPI_Ireduce(buf, out, count, MPI_INT, MPI_SUM, rank == 0 ? 0 : 1, c, &reqs[1]));
    rc = MPI_Waitany(2, reqs, &index, MPI_STATUS_IGNORE);
    if (rank <= 1) {
        expect_failed(rc, "MPI_Waitany on a reduce's root facing another root", "root=0",
                      "root=1");
    } else {
        may_fail(rc, "MPI_Waitany on a reduce's leaf facing another root", "root=0", "root=1");
    }
    in_time("non-blocking reduce to different roots, MPI_Waitany");
    if (reqs[1] != MPI_REQUEST_NULL && rc != MPI_SUCCESS) {
        MPI_Request_free(&reqs[1]);
    }
    MPI_Comm_free(&c);
}

/* A legal program that is merely slow: the last rank enters an allreduce (shared memory
 * where it is on) and a reduce of 4 KiB (messages) 2 s late. The others' waits ask it which
 * collective it is in, and must go on waiting and give the right results. */
static void one_rank_late(void)
{
    enum { N = 1024 };
    static int in[N], out[N];
    MPI_Comm c = fresh();
    int one = 1, sum = 0;

    for (int i = 0; i < N; i++) {
        in[i] = rank + i;
    }
    if (rank == nranks - 1) {
        sleep_s(2.0);
    }
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == nranks, "late allreduce: sum %d, expected %d", sum, nranks);
    if (rank == nranks - 1) {
        sleep_s(2.0);
    }
    CHECK_MPI(MPI_Reduce(in, out, N, MPI_INT, MPI_SUM, 0, c));
    for (int i = 0; rank == 0 && i < N; i++) {
        /* sum over r of (r + i) */
        int want = nranks * (nranks - 1) / 2 + nranks * i;
        CHECK(out[i] == want, "late reduce: element %d is %d, expected %d", i, out[i], want);
    }
    MPI_Comm_free(&c);
}

/* Rank 0 reduces with MPI_MAX, the others with MPI_SUM: everyone reads someone's. */
static void different_ops(int count)
{
    MPI_Comm c = fresh();
    int buf[600], out[600];

    for (int i = 0; i < count; i++) {
        buf[i] = rank + i;
    }
    expect_failed(MPI_Allreduce(buf, out, count, MPI_INT, rank == 0 ? MPI_MAX : MPI_SUM, c),
                  "allreduce with another op", "op=max", "op=sum");
    in_time("allreduce with different ops");
    MPI_Comm_free(&c);
}

/* Rank 0 in a barrier, the others in an allreduce of one int. */
static void barrier_against_allreduce(void)
{
    MPI_Comm c = fresh();
    int one = 1, out;

    if (rank == 0) {
        expect_failed(MPI_Barrier(c), "barrier facing an allreduce", "barrier", "allreduce");
    } else {
        expect_failed(MPI_Allreduce(&one, &out, 1, MPI_INT, MPI_SUM, c),
                      "allreduce facing a barrier", "barrier", "allreduce");
    }
    in_time("barrier against allreduce");
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    rank = mrt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    CHECK(nranks >= 2, "needs 2 ranks or more, got %d", nranks);
    const char *na = getenv("MRT_NODE_AWARE");

    node_aware = na && strcmp(na, "1") == 0;
    /* Up to 64 ints a broadcast goes through shared memory like the allreduce where ranks
     * have a core each, and as messages where they outnumber the cores. */
    for (int count = 1; count <= 64; count *= 8) {
        bcast_against_allreduce(count);
        different_ops(count);
        different_roots(count);
    }
    bcast_against_allreduce(BIG);
    barrier_against_allreduce();
    if (!node_aware) {
        different_roots_waitany(1);
        different_roots_waitany(600);
    }
    one_rank_late();
    /* The world is untouched: a last collective on it still gives the right sum. */
    {
        int one = 1, sum = 0;
        CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(sum == nranks, "sum %d, expected %d", sum, nranks);
    }
    return mrt_finish("mr_coll_mismatch");
}
