/*
 * mr_rndv_timeout.c - a large (rendezvous) send that times out may still be completed by
 * the transport later, so its request must outlive the call. Run on 2 ranks with a short
 * MPISHIM_TIMEOUT (1 s).
 *
 * Rank 0 sends BIG bytes with MPI_Send, and BIG more with MPI_Isend + MPI_Wait, both of
 * which rank 1 receives only after they timed out (MPI_ERRORS_RETURN): each call must fail
 * with a timeout. Rank 0 then frees the Isend's request and waits, inside a function whose
 * frame covers where MPI_Send's frames were with a known pattern, until rank 1 has received
 * both messages: the transport's completion of the two transfers (their FIN records or
 * completions) arrives there. MPI_Send's request lived in its own stack frame, so that
 * completion wrote into this pattern (or called through a pointer read from it: a crash),
 * and MPI_Request_free waited a second timeout and put the request back in the pool while
 * the transfer still named it. Rank 1 checks each message's bytes against the values
 * computed here (rank 0's buffers stay as they were), rank 0 the pattern; then 20 more
 * messages each way must arrive intact. Every wait meant to succeed is polled (MPI_Test,
 * which no timeout ends): a ThreadSanitizer build over tcp;ofi_rxm took 0.3-0.6 s here to
 * move the two messages, and longer than the 1 s timeout on a slower machine.
 */
#include "mrtest.h"

#include <stdlib.h>
#include <string.h>

#define BIG (1 << 20)
#define PAD (128 * 1024)

static unsigned char *a, *b;

static unsigned char byte_of(int msg, size_t i)
{
    return (unsigned char)(msg * 31 + i * 7);
}

static void fill(unsigned char *buf, int msg)
{
    for (size_t i = 0; i < BIG; i++) {
        buf[i] = byte_of(msg, i);
    }
}

static void expect(const unsigned char *buf, int msg)
{
    for (size_t i = 0; i < BIG; i++) {
        if (buf[i] != byte_of(msg, i)) {
            CHECK(0, "message %d byte %zu: %u, expected %u", msg, i, buf[i], byte_of(msg, i));
        }
    }
}

/* Rank 0's two sends that nobody receives in time; both requests are let go of. */
static __attribute__((noinline)) void given_up_sends(void)
{
    MPI_Request r;

    EXPECT_CLASS(MPI_Send(a, BIG, MPI_BYTE, 1, 1, MPI_COMM_WORLD), MPI_ERR_OTHER);
    CHECK_MPI(MPI_Isend(b, BIG, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &r));
    EXPECT_CLASS(MPI_Wait(&r, MPI_STATUS_IGNORE), MPI_ERR_OTHER);
    CHECK_MPI(MPI_Request_free(&r));
    CHECK(r == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
}

/* Rank 0, in a frame laid over where given_up_sends' callees had theirs: waits until rank 1
 * has both messages (its note comes after their transfers' completions, on the same
 * channel), then checks that nothing wrote into the frame. */
static __attribute__((noinline)) void guarded_wait(void)
{
    volatile unsigned char pad[PAD];
    int note = 0;
    MPI_Request r;

    for (size_t i = 0; i < PAD; i++) {
        pad[i] = (unsigned char)(i * 13 + 5);
    }
    mrt_polled_barrier();
    CHECK_MPI(MPI_Irecv(&note, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, &r));
    mrt_polled_wait(&r);
    CHECK(note == 2, "rank 1's note says %d messages", note);
    for (size_t i = 0; i < PAD; i++) {
        if (pad[i] != (unsigned char)(i * 13 + 5)) {
            CHECK(0, "byte %zu of a live stack frame changed after the sends gave up", i);
        }
    }
}

int main(int argc, char **argv)
{
    int size, v, got;
    MPI_Request r[2];

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "run on 2 ranks, not %d", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    a = malloc(BIG);
    b = malloc(BIG);
    CHECK(a && b, "no memory");
    fill(a, 1);
    fill(b, 2);
    if (mrt_rank == 0) {
        given_up_sends();
        guarded_wait();
    } else {
        mrt_polled_barrier();
        memset(a, 0, BIG);
        memset(b, 0, BIG);
        CHECK_MPI(MPI_Irecv(a, BIG, MPI_BYTE, 0, 1, MPI_COMM_WORLD, &r[0]));
        mrt_polled_wait(&r[0]);
        CHECK_MPI(MPI_Irecv(b, BIG, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &r[0]));
        mrt_polled_wait(&r[0]);
        expect(a, 1);
        expect(b, 2);
        v = 2;
        CHECK_MPI(MPI_Isend(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, &r[0]));
        mrt_polled_wait(&r[0]);
    }
    for (int i = 0; i < 20; i++) {
        v = mrt_rank * 100 + i;
        CHECK_MPI(MPI_Irecv(&got, 1, MPI_INT, 1 - mrt_rank, 10, MPI_COMM_WORLD, &r[0]));
        CHECK_MPI(MPI_Isend(&v, 1, MPI_INT, 1 - mrt_rank, 10, MPI_COMM_WORLD, &r[1]));
        mrt_polled_wait(&r[0]);
        mrt_polled_wait(&r[1]);
        CHECK(got == (1 - mrt_rank) * 100 + i, "round %d: %d", i, got);
    }
    mrt_polled_barrier();
    free(a);
    free(b);
    return mrt_finish("mr_rndv_timeout");
}
