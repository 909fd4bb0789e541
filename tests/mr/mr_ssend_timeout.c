/*
 * mr_ssend_timeout.c - a synchronous send that times out is forgotten by the library, so the
 * program may go on (MPI_ERRORS_RETURN) and its request's memory be reused. Run on 2 ranks
 * with a short MPISHIM_TIMEOUT (1 s).
 *
 * Rank 0 sends small (eager) synchronous messages that rank 1 does not receive until later:
 * one with MPI_Ssend (its request lives in MPI_Ssend's stack frame) and one with MPI_Issend
 * + MPI_Wait (its request is freed by the failed wait). Each must fail with a timeout. The
 * send then stayed on the list of synchronous sends waiting for their acknowledgement,
 * pointing into a dead stack frame and freed memory, and the next synchronous sends walked
 * it (a crash, a hang, or AddressSanitizer's use-after-free). After a barrier rank 1 receives
 * the two given-up messages (their late acknowledgements must be ignored) and ROUNDS more
 * synchronous messages, each checked against the value computed here; rank 0's synchronous
 * sends of them must all succeed.
 */
#include "mrtest.h"

#define ROUNDS 50
#define N 4

static void fill(int *buf, int seq)
{
    for (int i = 0; i < N; i++) {
        buf[i] = seq * 1000 + i;
    }
}

static void expect(const int *buf, int seq)
{
    for (int i = 0; i < N; i++) {
        CHECK(buf[i] == seq * 1000 + i, "message %d element %d: %d, expected %d", seq, i, buf[i],
              seq * 1000 + i);
    }
}

/* Rank 0's two sends that nobody receives in time. */
static void given_up_sends(void)
{
    int a[N], b[N];
    MPI_Request r;

    fill(a, 1);
    fill(b, 2);
    EXPECT_CLASS(MPI_Ssend(a, N, MPI_INT, 1, 1, MPI_COMM_WORLD), MPI_ERR_OTHER);
    CHECK_MPI(MPI_Issend(b, N, MPI_INT, 1, 2, MPI_COMM_WORLD, &r));
    EXPECT_CLASS(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_OTHER);
}

int main(int argc, char **argv)
{
    int size, buf[N];

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run on 2 ranks, not %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (mrt_rank == 0) {
        given_up_sends();
    }
    mrt_polled_barrier();
    for (int seq = 1; seq <= ROUNDS + 2; seq++) {
        if (mrt_rank == 0 && seq > 2) {
            fill(buf, seq);
            CHECK_MPI(MPI_Ssend(buf, N, MPI_INT, 1, seq, MPI_COMM_WORLD));
        } else if (mrt_rank == 1) {
            CHECK_MPI(MPI_Recv(buf, N, MPI_INT, 0, seq, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            expect(buf, seq);
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return mrt_finish("mr_ssend_timeout");
}
