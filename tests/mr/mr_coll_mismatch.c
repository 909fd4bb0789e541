/*
 * mr_coll_mismatch.c - ranks that call different collectives, or the same one with
 * different ops, at the same point: every rank that reads another's contribution must fail
 * with an error instead of returning success with the other collective's bytes (before
 * collective signatures, a rank in MPI_Allreduce facing a rank in MPI_Bcast returned
 * MPI_SUCCESS holding a wrong sum). The root of a broadcast reads nothing from the others
 * and cannot tell; it returns MPI_SUCCESS. Each case runs on a fresh communicator, since the
 * mismatched one is out of step afterwards. tests/mr.list runs it with shared memory on and
 * off, at 2 to 8 ranks. Through messages, the rank that finds the clash tells every member
 * (pg_p2p.c's abort notices), so the ranks that never read the other collective fail too,
 * at once: each case must end well within MPISHIM_TIMEOUT (60 s in the suite; a case takes
 * milliseconds, and we allow 20 s), or it waited for the timeout. Ranks whose different
 * collectives take different transports (a broadcast stays a message where ranks outnumber
 * cores, an allreduce uses shared memory) cannot see each other and time out instead: with
 * shared memory on, the broadcast case runs on 2 ranks only.
 * With MRT_NODE_AWARE=1 (tests/mr.list with MPISHIM_NODE_SPLIT, test_cluster.sh across the
 * nodes) the communicators run node-aware (pg_coll_hier.h): a rank that finds the clash in
 * one step runs the later steps poisoned, so the ranks that learn of it only there (another
 * node's) fail with MPI_ERR_BUFFER and a message saying the data stands in for a rank's
 * failed part; still at once. There only the different ops run: ranks in node-aware
 * collectives of different kinds run different steps on the sub-groups, which then fall out
 * of step, and some rank can still wait for the timeout (doc/internals.md, "Signatures").
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;
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

static void expect_failed(int rc, const char *what)
{
    int cls;

    MPI_Error_class(rc, &cls);
    if (node_aware && cls == MPI_ERR_BUFFER) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;

        MPI_Error_string(rc, msg, &len);
        CHECK(strstr(msg, "stands in for a rank's failed part") ||
              strstr(msg, "or ranks called different collectives"),
              "%s: MPI_ERR_BUFFER without the poisoned step's message: %s", what, msg);
        return;
    }
    CHECK(cls == MPI_ERR_OTHER, "%s: class %d, expected MPI_ERR_OTHER (%d)", what, cls,
          MPI_ERR_OTHER);
}

/* Rank 0 broadcasts, the others allreduce, count ints. */
static void bcast_against_allreduce(int count)
{
    MPI_Comm c = fresh();
    int buf[600], out[600], rc;

    for (int i = 0; i < count; i++) {
        buf[i] = rank + i;
    }
    if (rank == 0) {
        rc = MPI_Bcast(buf, count, MPI_INT, 0, c);
        CHECK(rc == MPI_SUCCESS, "the broadcast root reads nothing: rc %d", rc);
    } else {
        rc = MPI_Allreduce(buf, out, count, MPI_INT, MPI_SUM, c);
        expect_failed(rc, "allreduce facing a bcast");
    }
    in_time("bcast against allreduce");
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
                  "allreduce with another op");
    in_time("allreduce with different ops");
    MPI_Comm_free(&c);
}

/* Rank 0 in a barrier, the others in an allreduce of one int. */
static void barrier_against_allreduce(void)
{
    MPI_Comm c = fresh();
    int one = 1, out;

    if (rank == 0) {
        expect_failed(MPI_Barrier(c), "barrier facing an allreduce");
    } else {
        expect_failed(MPI_Allreduce(&one, &out, 1, MPI_INT, MPI_SUM, c),
                      "allreduce facing a barrier");
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
    const char *shm = getenv("MPISHIM_COLL_SHM");
    const char *na = getenv("MRT_NODE_AWARE");
    bool messages = shm && strcmp(shm, "0") == 0;

    node_aware = na && strcmp(na, "1") == 0;

    /* Up to 256 bytes: a broadcast goes through shared memory like the allreduce. */
    if (node_aware && mrt_rank == 0) {
        printf("mr_coll_mismatch: node-aware: collectives of different kinds not run (they "
               "can wait for the timeout there)\n");
    }
    for (int count = 1; count <= 64; count *= 8) {
        if ((nranks == 2 || messages) && !node_aware) {
            bcast_against_allreduce(count);
        }
        different_ops(count);
    }
    if (!node_aware) {
        barrier_against_allreduce();
    }
    /* The world is untouched: a last collective on it still gives the right sum. */
    {
        int one = 1, sum = 0;
        CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
        CHECK(sum == nranks, "sum %d, expected %d", sum, nranks);
    }
    return mrt_finish("mr_coll_mismatch");
}
