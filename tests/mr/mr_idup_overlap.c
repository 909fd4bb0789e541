/*
 * mr_idup_overlap.c - MPI_Comm_idup in every case (issue 38; MPICH's comm/comm_idup_overlap,
 * comm_create_group_idup, and comm_idup at 4 ranks): idups on several parents started in
 * opposite orders on even and odd ranks, an idup of an intercommunicator, an idup in flight
 * while a blocking MPI_Comm_split runs on another communicator, and, with --threads (under
 * MPI_THREAD_MULTIPLE), all of that plus idups from two threads at once. Each case but the
 * last hung while only one idup could be in flight per process, or while idup was a
 * blocking dup on an intercommunicator and under MPI_THREAD_MULTIPLE; the last is there for
 * ThreadSanitizer (two agreements of one process claiming from two threads).
 */
#include "mrtest.h"

#include <pthread.h>

static int rank, size;

/* dup is a copy of parent: the same members in the same order, the sum of the parent ranks
 * by allreduce, a ring of messages, and its messages are its own (the same tag sent on the
 * parent stays there). */
static void works_as_a_copy_of(MPI_Comm dup, MPI_Comm parent, int tag)
{
    int result, n, me, sum = -1, got = -1, flag = 1;

    CHECK(dup != MPI_COMM_NULL, "no communicator");
    CHECK_MPI(MPI_Comm_compare(dup, parent, &result));
    CHECK(result == MPI_CONGRUENT, "compare gave %d", result);
    CHECK_MPI(MPI_Comm_size(dup, &n));
    CHECK_MPI(MPI_Comm_rank(dup, &me));
    CHECK_MPI(MPI_Allreduce(&me, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK(sum == n * (n - 1) / 2, "sum %d, expected %d", sum, n * (n - 1) / 2);
    CHECK_MPI(MPI_Send(&me, 1, MPI_INT, (me + 1) % n, tag, dup));
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, tag, parent, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "a message sent on the copy is visible on its parent");
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, (me + n - 1) % n, tag, dup, MPI_STATUS_IGNORE));
    CHECK(got == (me + n - 1) % n, "got %d from the left", got);
}

/* One message with the same tag on each of n communicators (all with the members of
 * MPI_COMM_WORLD or of one half of it, in any order), received in reverse order: each
 * receive gets the message of its own communicator, so no two share a context. */
static void contexts_are_distinct(MPI_Comm *c, int n)
{
    for (int i = 0; i < n; i++) {
        int me, sz, v = 1000 * i + rank;
        CHECK_MPI(MPI_Comm_rank(c[i], &me));
        CHECK_MPI(MPI_Comm_size(c[i], &sz));
        CHECK_MPI(MPI_Send(&v, 1, MPI_INT, (me + 1) % sz, 9, c[i]));
    }
    for (int i = n - 1; i >= 0; i--) {
        int me, sz, got = -1, left;
        MPI_Group g, w;
        CHECK_MPI(MPI_Comm_rank(c[i], &me));
        CHECK_MPI(MPI_Comm_size(c[i], &sz));
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, (me + sz - 1) % sz, 9, c[i], MPI_STATUS_IGNORE));
        /* the left neighbour's world rank, from the groups */
        left = (me + sz - 1) % sz;
        CHECK_MPI(MPI_Comm_group(c[i], &g));
        CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &w));
        CHECK_MPI(MPI_Group_translate_ranks(g, 1, &left, w, &left));
        CHECK_MPI(MPI_Group_free(&g));
        CHECK_MPI(MPI_Group_free(&w));
        CHECK(got == 1000 * i + left, "communicator %d received %d, expected %d", i, got,
              1000 * i + left);
    }
}

/* Three parents (the world, the world reversed, this rank's half) are duplicated by idups
 * started in one order on even ranks and in the other on odd ranks, and completed in
 * different orders too. One dup in flight per process: an even rank's second idup waits
 * for its first, which waits for the odd ranks, whose second waits for their first. */
static void idups_in_opposite_orders(void)
{
    MPI_Comm parent[3], dup[3];
    MPI_Request req[3];

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &parent[0]));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &parent[1]));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &parent[2]));
    for (int k = 0; k < 3; k++) {
        int i = rank % 2 ? 2 - k : k;
        CHECK_MPI(MPI_Comm_idup(parent[i], &dup[i], &req[i]));
    }
    if (rank % 2) {
        CHECK_MPI(MPI_Waitall(3, req, MPI_STATUSES_IGNORE));
    } else {
        for (int i = 2; i >= 0; i--) {
            CHECK_MPI(MPI_Wait(&req[i], MPI_STATUS_IGNORE));
        }
    }
    for (int i = 0; i < 3; i++) {
        works_as_a_copy_of(dup[i], parent[i], 30 + i);
    }
    contexts_are_distinct(dup, 3);
    contexts_are_distinct(parent, 3);
    for (int i = 0; i < 3; i++) {
        CHECK_MPI(MPI_Comm_free(&dup[i]));
        CHECK_MPI(MPI_Comm_free(&parent[i]));
    }
}

/* Rank 0 idups a communicator and then joins a blocking split of the world; the others
 * join the split first and idup afterwards. A split that first waits for the dup in flight
 * waits for ranks that are in the split. The results and the world keep their messages
 * apart. */
static void idup_in_flight_during_a_split(void)
{
    MPI_Comm parent, dup, half, c[3];
    MPI_Request req;

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &parent));
    if (rank == 0) {
        CHECK_MPI(MPI_Comm_idup(parent, &dup, &req));
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    } else {
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
        CHECK_MPI(MPI_Comm_idup(parent, &dup, &req));
    }
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    works_as_a_copy_of(dup, parent, 40);
    c[0] = dup;
    c[1] = half;
    c[2] = parent;
    contexts_are_distinct(c, 3);
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&parent));
}

/* The sum of the world ranks of the other side (even ranks: the odd ones, and back). */
static int remote_world_sum(void)
{
    int sum = 0;

    for (int r = 0; r < size; r++) {
        sum += r % 2 != rank % 2 ? r : 0;
    }
    return sum;
}

/* An intercommunicator between the even and the odd ranks is duplicated by an idup. Rank 1
 * idups and then sends to rank 0, which receives before it idups: a blocking dup of the
 * intercommunicator waits for rank 0 for ever. On the copy: every rank sends its world rank
 * to every remote rank and receives theirs, an allreduce gives each side the other side's
 * sum, and the original does not see the copy's messages. */
static void idup_of_an_intercommunicator(void)
{
    MPI_Comm local, inter, dup;
    MPI_Request req, *r;
    int lsize, rsize, flag = 1, sum = -1, v = -1, *got, want;

    if (size < 2) {
        printf("mr_idup_overlap: skipping the intercommunicator case (needs 2 ranks)\n");
        return;
    }
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &local));
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 11, &inter));
    if (rank == 0) {
        CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 1, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(v == 77, "got %d from rank 1", v);
        CHECK_MPI(MPI_Comm_idup(inter, &dup, &req));
    } else {
        CHECK_MPI(MPI_Comm_idup(inter, &dup, &req));
        if (rank == 1) {
            v = 77;
            CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, 0, 12, MPI_COMM_WORLD));
        }
    }
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(dup != MPI_COMM_NULL, "no communicator");
    CHECK_MPI(MPI_Comm_test_inter(dup, &flag));
    CHECK(flag, "the copy is not an intercommunicator");
    CHECK_MPI(MPI_Comm_size(dup, &lsize));
    CHECK_MPI(MPI_Comm_remote_size(dup, &rsize));
    CHECK(lsize == (size + 1 - rank % 2) / 2 && rsize == size - lsize, "sizes %d and %d", lsize,
          rsize);
    got = malloc(sizeof(int) * (size_t)rsize);
    r = malloc(sizeof(*r) * 2 * (size_t)rsize);
    CHECK(got && r, "no memory");
    for (int i = 0; i < rsize; i++) {
        CHECK_MPI(MPI_Irecv(&got[i], 1, MPI_INT, i, 13, dup, &r[i]));
        CHECK_MPI(MPI_Isend(&rank, 1, MPI_INT, i, 13, dup, &r[rsize + i]));
    }
    CHECK_MPI(MPI_Waitall(2 * rsize, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < rsize; i++) {
        want = 2 * i + (rank % 2 ? 0 : 1); /* remote rank i is the i-th of the other parity */
        CHECK(got[i] == want, "remote rank %d sent %d, expected %d", i, got[i], want);
    }
    CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, inter, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "a message sent on the copy is visible on the original");
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK(sum == remote_world_sum(), "allreduce across gave %d, expected %d", sum,
          remote_world_sum());
    CHECK_MPI(MPI_Barrier(dup));
    free(got);
    free(r);
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&local));
}

#define THREAD_ROUNDS 20

/* Each thread idups its own parent again and again, so that two agreements of this process
 * run at once in different threads, with their claims racing. */
static void *idup_thread(void *arg)
{
    MPI_Comm parent = *(MPI_Comm *)arg, dup;
    MPI_Request req;

    for (int i = 0; i < THREAD_ROUNDS; i++) {
        CHECK_MPI(MPI_Comm_idup(parent, &dup, &req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        works_as_a_copy_of(dup, parent, 50);
        CHECK_MPI(MPI_Comm_free(&dup));
    }
    return NULL;
}

static void idups_from_two_threads(void)
{
    MPI_Comm parent[2];
    pthread_t th[2];

    for (int t = 0; t < 2; t++) {
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &parent[t]));
    }
    for (int t = 0; t < 2; t++) {
        CHECK(pthread_create(&th[t], NULL, idup_thread, &parent[t]) == 0, "pthread_create");
    }
    for (int t = 0; t < 2; t++) {
        CHECK(pthread_join(th[t], NULL) == 0, "pthread_join");
    }
    contexts_are_distinct(parent, 2);
    for (int t = 0; t < 2; t++) {
        CHECK_MPI(MPI_Comm_free(&parent[t]));
    }
}

int main(int argc, char **argv)
{
    int threads = mrt_init_threads(&argc, &argv);

    rank = mrt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    idups_in_opposite_orders();
    idup_in_flight_during_a_split();
    idup_of_an_intercommunicator();
    if (threads) {
        idups_from_two_threads();
    }
    return mrt_finish("mr_idup_overlap");
}
