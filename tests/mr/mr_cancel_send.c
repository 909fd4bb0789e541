/* MPI_Cancel of sends (MPI-3.1 3.8.4): a wait on a cancelled send returns whatever the
 * receiver does, and then either the message was withdrawn (MPI_Test_cancelled true, no
 * receive ever gets it) or the send completed as usual (false, the receive gets it), never
 * both and never neither. Each rank sends to the next (rank + 1 mod size) and receives from
 * the previous one; the sizes are a rendezvous (LARGE, above every eager limit) and an eager
 * message (SMALL). The receives that decide an outcome are posted only after a barrier that
 * follows the cancelled sends' waits, so "unmatched" is certain, and "matched" is certain
 * where the receive was posted before a barrier that precedes the send. Every payload is
 * checked against values computed here. Before sends could be cancelled, the first wait on
 * an unmatched rendezvous hung until MPISHIM_TIMEOUT (tests/mr.list sets 20 s). */
#include "mrtest.h"

#include <stdbool.h>

#define LARGE (1 << 18) /* ints: 1 MiB */
#define SMALL 16        /* ints: 64 B */

static int rank, size, next, prev;
static int *out, *in;

static int value(int from, int seq, int i)
{
    return from * 1000003 + seq * 7919 + i;
}

static void fill(int *buf, int n, int seq)
{
    for (int i = 0; i < n; i++) {
        buf[i] = value(rank, seq, i);
    }
}

/* The message from the previous rank was its message seq, all n ints of it. */
static void expect_from_prev(const int *buf, int n, int seq, const char *what)
{
    for (int i = 0; i < n; i++) {
        CHECK(buf[i] == value(prev, seq, i), "%s: int %d is %d, not %d (message %d of rank %d)",
              what, i, buf[i], value(prev, seq, i), seq, prev);
    }
}

static bool cancelled(const MPI_Status *st)
{
    int flag = -1;

    CHECK_MPI(MPI_Test_cancelled(st, &flag));
    return flag != 0;
}

/* Receives one message of n ints with tag from the previous rank and checks that it is its
 * message seq. */
static void recv_expect(int n, int tag, int seq, const char *what)
{
    MPI_Status st;
    int count = -1;

    CHECK_MPI(MPI_Recv(in, n, MPI_INT, prev, tag, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == n && !cancelled(&st), "%s: received %d ints", what, count);
    expect_from_prev(in, n, seq, what);
}

/* Two sends with one envelope; the first is cancelled before any receive exists: it must
 * be withdrawn, and the receive that comes later gets the second. */
static void unmatched(int n, bool sync, int tag, const char *what)
{
    int *second = malloc(sizeof(int) * (size_t)n);
    MPI_Request r[2];
    MPI_Status st;

    fill(out, n, 1);
    fill(second, n, 2);
    CHECK_MPI((sync ? MPI_Issend : MPI_Isend)(out, n, MPI_INT, next, tag, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI((sync ? MPI_Issend : MPI_Isend)(second, n, MPI_INT, next, tag, MPI_COMM_WORLD,
                                              &r[1]));
    CHECK_MPI(MPI_Cancel(&r[0]));
    CHECK_MPI(MPI_Wait(&r[0], &st));
    CHECK(cancelled(&st), "%s: an unmatched send was not cancelled", what);
    CHECK(r[0] == MPI_REQUEST_NULL, "%s: the request is not freed", what);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    recv_expect(n, tag, 2, what);
    CHECK_MPI(MPI_Wait(&r[1], &st));
    CHECK(!cancelled(&st), "%s: a send nobody cancelled is marked cancelled", what);
    free(second);
}

/* A standard eager send is done once the fabric has it: its cancel may succeed or not, and
 * the receiver must see the message exactly when it was not cancelled. The sender tells. */
static void eager_either_way(void)
{
    int flag, other;
    MPI_Request r;
    MPI_Status st;

    fill(out, SMALL, 3);
    CHECK_MPI(MPI_Isend(out, SMALL, MPI_INT, next, 30, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Cancel(&r));
    CHECK_MPI(MPI_Wait(&r, &st));
    flag = cancelled(&st);
    fill(out, SMALL, 4);
    CHECK_MPI(MPI_Send(out, SMALL, MPI_INT, next, 30, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Sendrecv(&flag, 1, MPI_INT, next, 31, &other, 1, MPI_INT, prev, 31,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    if (!other) {
        recv_expect(SMALL, 30, 3, "eager send not cancelled");
    }
    recv_expect(SMALL, 30, 4, "the eager send after a cancelled one");
}

/* The receive is posted before the barrier that precedes the send: the message matches on
 * arrival, so the cancel that follows it is too late and the send completes. */
static void matched(int n, bool sync, int tag, const char *what)
{
    MPI_Request s, r;
    MPI_Status st;

    fill(out, n, 5);
    CHECK_MPI(MPI_Irecv(in, n, MPI_INT, prev, tag, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI((sync ? MPI_Issend : MPI_Isend)(out, n, MPI_INT, next, tag, MPI_COMM_WORLD, &s));
    CHECK_MPI(MPI_Cancel(&s));
    CHECK_MPI(MPI_Wait(&s, &st));
    CHECK(!cancelled(&st), "%s: a matched send was cancelled", what);
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK(!cancelled(&st), "%s: its receive is marked cancelled", what);
    expect_from_prev(in, n, 5, what);
}

/* A persistent send, cancelled unmatched, then started again and received; the request
 * stays usable after a cancelled round. */
static void persistent(int n, bool sync, int tag, const char *what)
{
    MPI_Request p;
    MPI_Status st;

    fill(out, n, 6);
    CHECK_MPI((sync ? MPI_Ssend_init : MPI_Send_init)(out, n, MPI_INT, next, tag, MPI_COMM_WORLD,
                                                      &p));
    CHECK_MPI(MPI_Start(&p));
    CHECK_MPI(MPI_Cancel(&p));
    CHECK_MPI(MPI_Wait(&p, &st));
    CHECK(cancelled(&st), "%s: the unmatched round was not cancelled", what);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Start(&p));
    recv_expect(n, tag, 6, what);
    CHECK_MPI(MPI_Wait(&p, &st));
    CHECK(!cancelled(&st), "%s: the received round is marked cancelled", what);
    CHECK_MPI(MPI_Request_free(&p));
}

/* MPI_Request_free right after MPI_Cancel (no wait): the message never arrives. */
static void cancel_then_free(void)
{
    MPI_Request r;

    fill(out, LARGE, 7);
    CHECK_MPI(MPI_Isend(out, LARGE, MPI_INT, next, 70, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Cancel(&r));
    CHECK_MPI(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL, "the freed request is not MPI_REQUEST_NULL");
    fill(out, SMALL, 8);
    CHECK_MPI(MPI_Send(out, SMALL, MPI_INT, next, 70, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    recv_expect(SMALL, 70, 8, "after a cancelled and freed send");
}

/* Sends to this same process, cancelled before their receive, and one after it matched. */
static void to_self(void)
{
    int sizes[2] = {LARGE, SMALL};
    MPI_Request r;
    MPI_Status st;

    for (int k = 0; k < 2; k++) {
        fill(out, sizes[k], 9);
        CHECK_MPI(MPI_Issend(out, sizes[k], MPI_INT, rank, 90, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Cancel(&r));
        CHECK_MPI(MPI_Wait(&r, &st));
        CHECK(cancelled(&st), "a send of %d ints to self was not cancelled", sizes[k]);
    }
    fill(out, LARGE, 10);
    CHECK_MPI(MPI_Isend(out, LARGE, MPI_INT, rank, 90, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Recv(in, LARGE, MPI_INT, rank, 90, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Cancel(&r));
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK(!cancelled(&st), "a received send to self was cancelled");
    for (int i = 0; i < LARGE; i++) {
        CHECK(in[i] == value(rank, 10, i), "self: int %d is %d", i, in[i]);
    }
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = mrt_rank;
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    out = malloc(sizeof(int) * LARGE);
    in = malloc(sizeof(int) * LARGE);
    CHECK(out && in, "no memory");

    unmatched(LARGE, false, 10, "rendezvous");
    unmatched(LARGE, true, 11, "synchronous rendezvous");
    unmatched(SMALL, true, 12, "synchronous eager");
    eager_either_way();
    matched(LARGE, false, 40, "matched rendezvous");
    matched(LARGE, true, 41, "matched synchronous rendezvous");
    matched(SMALL, true, 42, "matched synchronous eager");
    persistent(LARGE, false, 60, "persistent rendezvous");
    persistent(SMALL, true, 61, "persistent synchronous eager");
    cancel_then_free();
    to_self();

    free(out);
    free(in);
    return mrt_finish("mr_cancel_send");
}
