/*
 * mr_idup.c - MPI_Comm_idup is non-blocking (found by MPICH's comm/comm_idup test, issue 38):
 * a rank may wait for a message that its peers send only after their own MPI_Comm_idup
 * returned, and idups in flight together, or with a blocking creation after them, each give
 * a working communicator of their own.
 */
#include "mrtest.h"

static int rank, size;

/* comm has the members of MPI_COMM_WORLD in its order, and its own messages: the sum of
 * the ranks comes back, and a message sent on comm is not received on MPI_COMM_WORLD. */
static void works_as_a_copy_of_world(MPI_Comm comm, int tag)
{
    int result, sum = -1, flag = 1, got = -1;

    CHECK(comm != MPI_COMM_NULL, "no communicator");
    CHECK_MPI(MPI_Comm_compare(comm, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT, "compare gave %d", result);
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == size * (size - 1) / 2, "sum %d, expected %d", sum, size * (size - 1) / 2);
    CHECK_MPI(MPI_Send(&rank, 1, MPI_INT, (rank + 1) % size, tag, comm));
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "a message sent on the copy is visible on MPI_COMM_WORLD");
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, (rank + size - 1) % size, tag, comm,
                       MPI_STATUS_IGNORE));
    CHECK(got == (rank + size - 1) % size, "got %d from the left", got);
}

/* Rank 0 receives from every other rank before it calls MPI_Comm_idup; the others call it
 * first and then send synchronously. A blocking idup would wait for rank 0 for ever. */
static void idup_returns_before_the_others_call(void)
{
    MPI_Comm dup;
    MPI_Request req;
    int v = -1;

    if (rank == 0) {
        for (int r = 1; r < size; r++) {
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == 10 * r, "got %d from rank %d", v, r);
        }
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req));
    } else {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req));
        v = 10 * rank;
        CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, 0, 7, MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    works_as_a_copy_of_world(dup, 1);
    CHECK_MPI(MPI_Comm_free(&dup));
}

/* Three idups in flight at once, a blocking dup started while they are, and an allreduce on
 * the parent between them: four distinct working communicators. */
static void overlapping_idups_and_a_dup(void)
{
    MPI_Comm d[4];
    MPI_Request req[3];
    int one = 1, n = 0;

    for (int i = 0; i < 2; i++) {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &d[i], &req[i]));
    }
    CHECK_MPI(MPI_Allreduce(&one, &n, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(n == size, "allreduce between idups gave %d", n);
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &d[2], &req[2]));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d[3]));
    CHECK_MPI(MPI_Waitall(3, req, MPI_STATUSES_IGNORE));
    for (int i = 0; i < 4; i++) {
        works_as_a_copy_of_world(d[i], 20 + i);
    }
    /* A message on each copy with the same tag goes to the receive on that copy only. */
    for (int i = 0; i < 4; i++) {
        CHECK_MPI(MPI_Send(&i, 1, MPI_INT, (rank + 1) % size, 5, d[i]));
    }
    for (int i = 3; i >= 0; i--) {
        int got = -1;
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, (rank + size - 1) % size, 5, d[i],
                           MPI_STATUS_IGNORE));
        CHECK(got == i, "copy %d received the message sent on copy %d", i, got);
    }
    for (int i = 0; i < 4; i++) {
        CHECK_MPI(MPI_Comm_free(&d[i]));
    }
}

/* The copy has the parent's attributes (copied by their copy callback, as MPI_Comm_dup
 * does) once the request completed. */
static void idup_copies_attributes(void)
{
    MPI_Comm dup;
    MPI_Request req;
    int key, *val = NULL, flag = 0;
    static int payload = 42;

    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, key, &payload));
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Comm_get_attr(dup, key, &val, &flag));
    CHECK(flag && val == &payload, "attribute not copied (flag %d)", flag);
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_delete_attr(MPI_COMM_WORLD, key));
    CHECK_MPI(MPI_Comm_free_keyval(&key));
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    idup_returns_before_the_others_call();
    overlapping_idups_and_a_dup();
    idup_copies_attributes();
    return mrt_finish("mr_idup");
}
