/*
 * mr_net_sleep.c - waits that sleep in the kernel on the network provider's wait fd
 * (MPISHIM_NET_SLEEP, pg_core/pg_progress.c), and the messages they wait for.
 *
 *   mr_net_sleep [NAME=VALUE...] --sleeps | --no-sleeps [--threads]
 *
 * 1. A late sender: every rank r > 0 in turn sleeps 100 ms, then sends rank 0 8 bytes and
 *    1 MiB (eager and rendezvous); rank 0 has been waiting in MPI_Recv all along, far past
 *    any spin, so where waits sleep its MPI_T counter fabric_wait_sleeps must have grown.
 * 2. Every size both ways: each rank exchanges 0 B to 4 MiB with its ring neighbours by
 *    MPI_Sendrecv, then a window of 16 Isend/Irecv of 64 KiB in both directions at once (the
 *    sockets' buffers fill while both sides wait), every byte checked against a pattern of
 *    the sender's rank, the size and the index.
 * --sleeps: rank 0's counter grew in part 1 (and every value is right); --no-sleeps: no
 * rank's counter moved (MPISHIM_NET_SLEEP=0, the rings, or --threads: MPI_THREAD_MULTIPLE).
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#define BIG (4 << 20)
#define WINDOW 16
#define WIN_BYTES 65536

static unsigned char *sbuf, *rbuf;

static unsigned char pattern(int rank, size_t size, size_t i)
{
    return (unsigned char)(rank * 31 + size * 7 + i * 13 + (i >> 8));
}

static void fill(unsigned char *buf, int rank, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        buf[i] = pattern(rank, size, i);
    }
}

static void expect(const unsigned char *buf, int rank, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        CHECK(buf[i] == pattern(rank, size, i), "byte %zu of %zu from rank %d: %u, not %u", i, size,
              rank, buf[i], pattern(rank, size, i));
    }
}

/* The counter of waits that slept, read through MPI_T as a tool would. */
static unsigned long long sleeps(void)
{
    static struct mrt_counter c;

    return mrt_counter_read(&c, "fabric_wait_sleeps");
}

static void late_sender(int rank, int size)
{
    static const size_t sizes[] = {8, 1 << 20};

    for (int r = 1; r < size; r++) {
        for (int k = 0; k < 2; k++) {
            if (rank == r) {
                fill(sbuf, r, sizes[k]);
                usleep(100000);
                CHECK_MPI(MPI_Send(sbuf, (int)sizes[k], MPI_BYTE, 0, k, MPI_COMM_WORLD));
            } else if (rank == 0) {
                memset(rbuf, 0, sizes[k]);
                CHECK_MPI(MPI_Recv(rbuf, (int)sizes[k], MPI_BYTE, r, k, MPI_COMM_WORLD,
                                   MPI_STATUS_IGNORE));
                expect(rbuf, r, sizes[k]);
            }
        }
    }
}

static void both_ways(int rank, int size)
{
    static const size_t sizes[] = {0, 1, 8, 1000, 4096, 16384, 16385, 65536, 1 << 20, BIG};
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Request req[2 * WINDOW];

    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        fill(sbuf, rank, sizes[k]);
        memset(rbuf, 0, sizes[k]);
        CHECK_MPI(MPI_Sendrecv(sbuf, (int)sizes[k], MPI_BYTE, right, 10, rbuf, (int)sizes[k],
                               MPI_BYTE, left, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        expect(rbuf, left, sizes[k]);
    }
    fill(sbuf, rank, WIN_BYTES);
    for (int i = 0; i < WINDOW; i++) {
        CHECK_MPI(MPI_Irecv(rbuf + (size_t)i * WIN_BYTES, WIN_BYTES, MPI_BYTE, left, 20 + i,
                            MPI_COMM_WORLD, &req[i]));
        CHECK_MPI(
            MPI_Isend(sbuf, WIN_BYTES, MPI_BYTE, right, 20 + i, MPI_COMM_WORLD, &req[WINDOW + i]));
    }
    CHECK_MPI(MPI_Waitall(2 * WINDOW, req, MPI_STATUSES_IGNORE));
    for (int i = 0; i < WINDOW; i++) {
        expect(rbuf + (size_t)i * WIN_BYTES, left, WIN_BYTES);
    }
}

int main(int argc, char **argv)
{
    bool want_sleeps = false, want_none = false;
    unsigned long long before, after_late;
    int rank, size, provided;

    for (int i = 1; i < argc; i++) {
        want_sleeps |= strcmp(argv[i], "--sleeps") == 0;
        want_none |= strcmp(argv[i], "--no-sleeps") == 0;
    }
    mrt_init_threads(&argc, &argv);
    rank = mrt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(want_sleeps != want_none, "give --sleeps or --no-sleeps");
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    sbuf = malloc(BIG);
    rbuf = malloc(BIG);
    CHECK(sbuf && rbuf, "no memory");
    before = sleeps();
    late_sender(rank, size);
    after_late = sleeps();
    if (size > 1) {
        both_ways(rank, size);
    }
    if (want_sleeps && rank == 0 && size > 1) {
        CHECK(after_late > before, "rank 0 waited 100 ms per message and never slept (%llu)",
              after_late - before);
    }
    if (want_none) {
        CHECK(sleeps() == before, "%llu waits slept", sleeps() - before);
    }
    free(sbuf);
    free(rbuf);
    CHECK_MPI(MPI_T_finalize());
    return mrt_finish("mr_net_sleep");
}
