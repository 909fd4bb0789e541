/*
 * mr_p2p_nomem - no silent drops: when a protocol allocation fails, nothing is lost without
 * an error on the rank that needed it (doc/internals.md, "No silent drops"). The test knob
 * MPISHIM_TEST_FAIL_ALLOC (tests/mr.list sets it per case) makes the named allocations fail:
 *  - unexpected: a point-to-point message that arrives before its receive finds no memory.
 *    An eager one's receive fails with MPI_ERR_NO_MEM naming the source and the size, in its
 *    place in the order (the next message with the same envelope is not taken in its
 *    stead); a synchronous sender is told and fails too; a rendezvous one (no payload to
 *    keep) completes with every byte right.
 *  - ack: the acknowledgements of synchronous sends come from the reserve, many more than it
 *    holds, one after the other: every send completes.
 *  - ctl: the control records of the intra-node rendezvous (FIN, CTS) are queued as if the
 *    ring were full and find no memory: every transfer completes with its bytes right.
 * Before the fix each case waited until the timeout. Only ranks 0 and 1 take part.
 */
#include "mrtest.h"

#include <stdbool.h>

#define BIG (256 * 1024)

static bool knob(const char *site)
{
    const char *v = getenv("MPISHIM_TEST_FAIL_ALLOC");
    return v && strstr(v, site);
}

/* The call failed with MPI_ERR_NO_MEM and its message holds each of the words. */
static void expect_nomem(int rc, const char *call, const char *w1, const char *w2)
{
    char s[MPI_MAX_ERROR_STRING];
    int len, cls;

    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_NO_MEM, "%s gave class %d, expected MPI_ERR_NO_MEM", call, cls);
    MPI_Error_string(rc, s, &len);
    CHECK(strstr(s, call) && strstr(s, w1) && strstr(s, w2),
          "%s's message '%s' names the call, '%s' and '%s'", call, s, w1, w2);
}

static void fill(unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++) {
        b[i] = (unsigned char)(i * 7 + (size_t)seed);
    }
}

static size_t first_wrong(const unsigned char *b, size_t n, int seed)
{
    for (size_t i = 0; i < n; i++) {
        if (b[i] != (unsigned char)(i * 7 + (size_t)seed)) {
            return i;
        }
    }
    return n;
}

/* Rank 1 posts the receive of a sentinel message, and then every rank meets: what rank 0
 * sends after the meeting arrives at rank 1 in order, so that everything before the
 * sentinel arrived before its receive (unexpected), and the sentinel itself does not. */
static void meet(int rank, int *sentinel, int tag, MPI_Request *r)
{
    if (rank == 1) {
        CHECK_MPI(MPI_Irecv(sentinel, 1, MPI_INT, 0, tag, MPI_COMM_WORLD, r));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* An eager message lost on arrival: its receive fails; a later one with the same envelope
 * is received by the next receive, not by the failed one. */
static void lost_eager(int rank)
{
    unsigned char a[1024];
    int b = 0, sentinel = 0, rc;
    MPI_Request rs, r;

    meet(rank, &sentinel, 5, &rs);
    if (rank == 0) {
        fill(a, sizeof(a), 1);
        CHECK_MPI(MPI_Send(a, sizeof(a), MPI_BYTE, 1, 3, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(&sentinel, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
    } else if (rank == 1) {
        CHECK_MPI(MPI_Wait(&rs, MPI_STATUS_IGNORE));
        rc = MPI_Recv(a, sizeof(a), MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        expect_nomem(rc, "MPI_Recv", "message from rank 0 (tag 3)", "arrived before its receive");
        CHECK_MPI(MPI_Irecv(&b, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, &r));
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    if (rank == 0) {
        b = 4242;
        CHECK_MPI(MPI_Send(&b, 1, MPI_INT, 1, 3, MPI_COMM_WORLD));
    } else if (rank == 1) {
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(b == 4242, "the message sent after the lost one: %d", b);
    }
}

/* A synchronous message lost on arrival: its receive fails, and so does its send. */
static void lost_sync(int rank)
{
    int c = 7, sentinel = 0, rc;
    MPI_Request rs, r;

    meet(rank, &sentinel, 7, &rs);
    if (rank == 0) {
        CHECK_MPI(MPI_Issend(&c, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Send(&sentinel, 1, MPI_INT, 1, 7, MPI_COMM_WORLD));
        rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        expect_nomem(rc, "MPI_Wait", "rank 1 had no memory", "(tag 6)");
    } else if (rank == 1) {
        CHECK_MPI(MPI_Wait(&rs, MPI_STATUS_IGNORE));
        rc = MPI_Recv(&c, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        expect_nomem(rc, "MPI_Recv", "message from rank 0", "(tag 6)");
    }
}

/* A rendezvous envelope that arrives before its receive loses nothing: it completes. */
static void kept_rendezvous(int rank, unsigned char *big)
{
    int sentinel = 0;
    MPI_Request rs, r;

    meet(rank, &sentinel, 9, &rs);
    if (rank == 0) {
        fill(big, BIG, 3);
        CHECK_MPI(MPI_Isend(big, BIG, MPI_BYTE, 1, 8, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Send(&sentinel, 1, MPI_INT, 1, 9, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else if (rank == 1) {
        CHECK_MPI(MPI_Wait(&rs, MPI_STATUS_IGNORE));
        memset(big, 0, BIG);
        CHECK_MPI(MPI_Recv(big, BIG, MPI_BYTE, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(first_wrong(big, BIG, 3) == BIG, "byte %zu of the rendezvous message is wrong",
              first_wrong(big, BIG, 3));
    }
}

/* More synchronous sends than the acknowledgement reserve holds, one after another. */
static void many_ssends(int rank)
{
    for (int i = 0; i < 200; i++) {
        int v = rank == 0 ? 1000 + i : -1;
        if (rank == 0) {
            CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, 1, 10, MPI_COMM_WORLD));
        } else if (rank == 1) {
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 0, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == 1000 + i, "synchronous message %d: %d", i, v);
        }
    }
}

/* Rendezvous transfers one at a time and 16 at once (each needs its FIN or CTS). */
static void many_rendezvous(int rank, unsigned char *big)
{
    enum { N = 16, PART = BIG / N * 4 };
    static unsigned char parts[N][PART];
    MPI_Request r[N];

    for (int i = 0; i < 8; i++) {
        if (rank == 0) {
            fill(big, BIG, 10 + i);
            CHECK_MPI(MPI_Send(big, BIG, MPI_BYTE, 1, 11, MPI_COMM_WORLD));
        } else if (rank == 1) {
            CHECK_MPI(MPI_Recv(big, BIG, MPI_BYTE, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(first_wrong(big, BIG, 10 + i) == BIG, "transfer %d: byte %zu is wrong", i,
                  first_wrong(big, BIG, 10 + i));
        }
    }
    for (int i = 0; i < N && rank < 2; i++) {
        if (rank == 0) {
            fill(parts[i], PART, 40 + i);
            CHECK_MPI(MPI_Isend(parts[i], PART, MPI_BYTE, 1, 12 + i, MPI_COMM_WORLD, &r[i]));
        } else {
            CHECK_MPI(MPI_Irecv(parts[i], PART, MPI_BYTE, 0, 12 + i, MPI_COMM_WORLD, &r[i]));
        }
    }
    if (rank < 2) {
        CHECK_MPI(MPI_Waitall(N, r, MPI_STATUSES_IGNORE));
    }
    for (int i = 0; i < N && rank == 1; i++) {
        CHECK(first_wrong(parts[i], PART, 40 + i) == PART, "transfer %d of %d at once: byte %zu "
              "is wrong", i, N, first_wrong(parts[i], PART, 40 + i));
    }
}

int main(int argc, char **argv)
{
    static unsigned char big[BIG];
    int size;

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size < 2) {
        return mrt_finish("mr_p2p_nomem (needs 2 ranks: nothing to do)");
    }
    if (knob("unexpected")) {
        lost_eager(mrt_rank);
        lost_sync(mrt_rank);
        kept_rendezvous(mrt_rank, big);
    } else {
        many_ssends(mrt_rank);
        many_rendezvous(mrt_rank, big);
    }
    return mrt_finish("mr_p2p_nomem");
}
