/*
 * mr_coll_standin.c - a blocking collective where one rank passes an unusable buffer (NULL
 * with a count > 0). That rank fails with MPI_ERR_BUFFER, but it still takes part with
 * scratch in place of its buffer and a poisoned signature (pg.h), so that nobody waits for
 * it until the timeout:
 *   - every rank whose result depends on the bad rank's data fails with MPI_ERR_BUFFER
 *     (an allreduce, allgather, alltoall or reduce_scatter_block: every rank; a reduce:
 *     the root);
 *   - every other rank returns MPI_SUCCESS with the right result, or MPI_ERR_BUFFER where
 *     its data came through the bad rank (a broadcast's subtree below it); never success
 *     with wrong data, never a timeout (which would be another class);
 *   - the communicator stays usable: the next collective on it gives the right sum.
 * Sizes span the shared-memory slots, the direct algorithms and the schedules;
 * tests/mr.list runs it with shared memory on and off, at 2 to 8 ranks.
 */
#include "mrtest.h"

#include <stdlib.h>

static int rank, nranks;

static MPI_Comm fresh(void)
{
    MPI_Comm c;

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    return c;
}

static int class_of(int rc)
{
    int cls;

    MPI_Error_class(rc, &cls);
    return cls;
}

/* The communicator still works: an allreduce of the ranks gives their sum. */
static void still_works(MPI_Comm c, const char *after)
{
    int mine = rank + 1, sum = 0;

    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, c));
    CHECK(sum == nranks * (nranks + 1) / 2, "after %s: sum %d, expected %d", after, sum,
          nranks * (nranks + 1) / 2);
}

static int *ints(int count, int base)
{
    int *p = malloc((size_t)count * sizeof(int));

    CHECK(p != NULL, "no memory for %d ints", count);
    for (int i = 0; p && i < count; i++) {
        p[i] = base + i;
    }
    return p;
}

/* Rank bad passes a NULL send buffer: every rank's sum needs its data. */
static void allreduce_null_send(int count, int bad)
{
    MPI_Comm c = fresh();
    int *in = ints(count, rank), *out = ints(count, -1);
    int rc = MPI_Allreduce(rank == bad ? NULL : in, out, count, MPI_INT, MPI_SUM, c);

    CHECK(class_of(rc) == MPI_ERR_BUFFER, "allreduce of %d ints, rank %d's send buffer NULL: "
          "class %d, expected MPI_ERR_BUFFER (%d)", count, bad, class_of(rc), MPI_ERR_BUFFER);
    still_works(c, "a poisoned allreduce");
    free(in);
    free(out);
    MPI_Comm_free(&c);
}

/* The root's buffer is NULL: every rank would receive its data. */
static void bcast_null_root(int count, int root)
{
    MPI_Comm c = fresh();
    int *buf = ints(count, 0);
    int rc = MPI_Bcast(rank == root ? NULL : buf, count, MPI_INT, root, c);

    CHECK(class_of(rc) == MPI_ERR_BUFFER, "bcast of %d ints from root %d with a NULL buffer: "
          "class %d, expected MPI_ERR_BUFFER", count, root, class_of(rc));
    still_works(c, "a poisoned bcast");
    free(buf);
    MPI_Comm_free(&c);
}

/* A receiver's buffer is NULL: it fails; the root succeeds; everyone else has the root's
 * data or, where it came through the bad rank, MPI_ERR_BUFFER. */
static void bcast_null_receiver(int count, int root, int bad)
{
    MPI_Comm c = fresh();
    int *buf = ints(count, rank == root ? 1000 : -5);
    int rc = MPI_Bcast(rank == bad ? NULL : buf, count, MPI_INT, root, c);
    int cls = class_of(rc);

    if (rank == bad) {
        CHECK(cls == MPI_ERR_BUFFER, "bcast of %d ints: the NULL receiver got class %d", count,
              cls);
    } else if (rank == root) {
        CHECK(rc == MPI_SUCCESS, "bcast of %d ints: the root got class %d", count, cls);
    } else if (rc == MPI_SUCCESS) {
        for (int i = 0; i < count; i++) {
            if (buf[i] != 1000 + i) {
                CHECK(0, "bcast of %d ints succeeded with [%d] = %d, expected %d", count, i,
                      buf[i], 1000 + i);
                break;
            }
        }
    } else {
        CHECK(cls == MPI_ERR_BUFFER, "bcast of %d ints: rank %d got class %d, expected "
              "success or MPI_ERR_BUFFER", count, rank, cls);
    }
    still_works(c, "a bcast with a NULL receiver");
    free(buf);
    MPI_Comm_free(&c);
}

/* A NULL send buffer at a non-root: the root's result needs it; the others get none. */
static void reduce_null_leaf(int count, int root, int bad)
{
    MPI_Comm c = fresh();
    int *in = ints(count, rank), *out = ints(count, -1);
    int rc = MPI_Reduce(rank == bad ? NULL : in, out, count, MPI_INT, MPI_SUM, root, c);
    int cls = class_of(rc);

    if (rank == bad || rank == root) {
        CHECK(cls == MPI_ERR_BUFFER, "reduce of %d ints, rank %d's send buffer NULL: rank %d "
              "got class %d, expected MPI_ERR_BUFFER", count, bad, rank, cls);
    } else {
        CHECK(rc == MPI_SUCCESS || cls == MPI_ERR_BUFFER, "reduce of %d ints: rank %d got "
              "class %d", count, rank, cls);
    }
    still_works(c, "a poisoned reduce");
    free(in);
    free(out);
    MPI_Comm_free(&c);
}

/* Rank bad's send block is NULL: every rank gathers it. */
static void allgather_null_send(int count, int bad)
{
    MPI_Comm c = fresh();
    int *in = ints(count, rank), *out = ints(count * nranks, -1);
    int rc = MPI_Allgather(rank == bad ? NULL : in, count, MPI_INT, out, count, MPI_INT, c);

    CHECK(class_of(rc) == MPI_ERR_BUFFER, "allgather of %d ints, rank %d's send buffer NULL: "
          "class %d, expected MPI_ERR_BUFFER", count, bad, class_of(rc));
    still_works(c, "a poisoned allgather");
    free(in);
    free(out);
    MPI_Comm_free(&c);
}

/* Rank bad's send blocks are NULL: every rank receives one of them. */
static void alltoall_null_send(int count, int bad)
{
    MPI_Comm c = fresh();
    int *in = ints(count * nranks, rank), *out = ints(count * nranks, -1);
    int rc = MPI_Alltoall(rank == bad ? NULL : in, count, MPI_INT, out, count, MPI_INT, c);

    CHECK(class_of(rc) == MPI_ERR_BUFFER, "alltoall of %d ints, rank %d's send buffer NULL: "
          "class %d, expected MPI_ERR_BUFFER", count, bad, class_of(rc));
    still_works(c, "a poisoned alltoall");
    free(in);
    free(out);
    MPI_Comm_free(&c);
}

/* Rank bad's send buffer is NULL: every rank's block sums a part of it. */
static void reduce_scatter_block_null_send(int count, int bad)
{
    MPI_Comm c = fresh();
    int *in = ints(count * nranks, rank), *out = ints(count, -1);
    int rc = MPI_Reduce_scatter_block(rank == bad ? NULL : in, out, count, MPI_INT, MPI_SUM, c);

    CHECK(class_of(rc) == MPI_ERR_BUFFER, "reduce_scatter_block of %d ints per rank, rank %d's "
          "send buffer NULL: class %d, expected MPI_ERR_BUFFER", count, bad, class_of(rc));
    still_works(c, "a poisoned reduce_scatter_block");
    free(in);
    free(out);
    MPI_Comm_free(&c);
}

int main(int argc, char **argv)
{
    /* 1 int: shared-memory slots or direct; 2000: direct or a schedule; 70000 (280 KB):
     * schedules with rendezvous messages. */
    static const int counts[] = {1, 2000, 70000};

    mrt_init(&argc, &argv);
    rank = mrt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    CHECK(nranks >= 2, "needs 2 ranks or more, got %d", nranks);
    for (size_t i = 0; i < sizeof(counts) / sizeof(*counts); i++) {
        int n = counts[i];

        allreduce_null_send(n, nranks - 1);
        allreduce_null_send(n, 0);
        bcast_null_root(n, 0);
        bcast_null_root(n, nranks - 1);
        bcast_null_receiver(n, 0, nranks / 2);
        reduce_null_leaf(n, 0, nranks - 1);
        allgather_null_send(n, nranks / 2);
        alltoall_null_send(n / 4 + 1, 0);
        reduce_scatter_block_null_send(n / 4 + 1, nranks - 1);
    }
    still_works(MPI_COMM_WORLD, "all cases");
    return mrt_finish("mr_coll_standin");
}
