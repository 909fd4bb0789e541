/*
 * mr_big.c - messages past 2 GiB and 4 GiB arrive whole: lengths that pass through an int
 * or a 32-bit wire field would arrive truncated, wrapped or negative.
 *
 * Usage: mr_big MIB [bcast]. The message is MIB elements of a contiguous datatype of 1 MiB
 * (a count an int holds, a size it does not). Without bcast (2 ranks): rank 0 sends it with
 * MPI_Send and rank 1 receives it with MPI_Irecv + MPI_Wait, checks MPI_Get_count (MIB) and
 * MPI_Get_elements_x (MIB << 20 bytes), then sends it back with MPI_Isend for rank 0 to
 * receive with MPI_Recv; with bcast (any ranks), rank 0 broadcasts it. Every receiver checks
 * the first and last byte of every 4 KiB page (and a word in the middle) against values
 * computed here from the page's index, so that a misplaced or missing piece shows.
 * Memory: MIB MiB per rank.
 */
#include "mrtest.h"

#include <stdint.h>

#define PAGE 4096

static unsigned char first_of(size_t page)
{
    return (unsigned char)(page * 7 + 1);
}

static unsigned char last_of(size_t page)
{
    return (unsigned char)((page >> 8) ^ 0x5a);
}

static uint32_t mid_of(size_t page)
{
    return (uint32_t)(page * 2654435761u);
}

static void fill(unsigned char *b, size_t n)
{
    for (size_t p = 0; p < n / PAGE; p++) {
        uint32_t m = mid_of(p);

        b[p * PAGE] = first_of(p);
        memcpy(b + p * PAGE + PAGE / 2, &m, sizeof(m));
        b[p * PAGE + PAGE - 1] = last_of(p);
    }
}

static void expect(const unsigned char *b, size_t n, const char *what)
{
    for (size_t p = 0; p < n / PAGE; p++) {
        uint32_t m;

        memcpy(&m, b + p * PAGE + PAGE / 2, sizeof(m));
        if (b[p * PAGE] != first_of(p) || b[p * PAGE + PAGE - 1] != last_of(p) || m != mid_of(p)) {
            CHECK(0, "%s: page %zu (byte %zu of %zu) differs: %u %u %u, expected %u %u %u", what, p,
                  p * PAGE, n, b[p * PAGE], b[p * PAGE + PAGE - 1], m, first_of(p), last_of(p),
                  mid_of(p));
        }
    }
}

static void check_status(const MPI_Status *st, MPI_Datatype mib, int count, const char *what)
{
    int got = -1;
    MPI_Count bytes = -1;

    CHECK_MPI(MPI_Get_count(st, mib, &got));
    CHECK(got == count, "%s: MPI_Get_count %d, expected %d", what, got, count);
    CHECK_MPI(MPI_Get_elements_x(st, MPI_BYTE, &bytes));
    CHECK(bytes == (MPI_Count)count << 20, "%s: MPI_Get_elements_x %lld, expected %lld", what,
          (long long)bytes, (long long)count << 20);
}

static void there_and_back(unsigned char *b, size_t n, int count, MPI_Datatype mib)
{
    MPI_Status st;
    MPI_Request r;

    if (mrt_rank == 0) {
        fill(b, n);
        CHECK_MPI(MPI_Send(b, count, mib, 1, 1, MPI_COMM_WORLD));
        memset(b, 0, n);
        CHECK_MPI(MPI_Recv(b, count, mib, 1, 2, MPI_COMM_WORLD, &st));
        check_status(&st, mib, count, "rank 0's MPI_Recv");
        expect(b, n, "the message back on rank 0");
    } else if (mrt_rank == 1) {
        memset(b, 0, n);
        CHECK_MPI(MPI_Irecv(b, count, mib, 0, 1, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Wait(&r, &st));
        check_status(&st, mib, count, "rank 1's MPI_Irecv");
        expect(b, n, "the message on rank 1");
        CHECK_MPI(MPI_Isend(b, count, mib, 0, 2, MPI_COMM_WORLD, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
}

int main(int argc, char **argv)
{
    int count = argc > 1 ? atoi(argv[1]) : 0, size;
    int bcast = argc > 2 && !strcmp(argv[2], "bcast");
    size_t n = (size_t)count << 20;
    unsigned char *b;
    MPI_Datatype mib;

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(count > 0, "usage: mr_big MIB [bcast]");
    CHECK(bcast || size == 2, "run on 2 ranks without bcast, not %d", size);
    b = malloc(n);
    CHECK(b != NULL, "no memory for %d MiB", count);
    CHECK_MPI(MPI_Type_contiguous(1 << 20, MPI_BYTE, &mib));
    CHECK_MPI(MPI_Type_commit(&mib));
    if (bcast) {
        if (mrt_rank == 0) {
            fill(b, n);
        } else {
            memset(b, 0, n);
        }
        CHECK_MPI(MPI_Bcast(b, count, mib, 0, MPI_COMM_WORLD));
        expect(b, n, "the broadcast message");
    } else {
        there_and_back(b, n, count, mib);
    }
    CHECK_MPI(MPI_Type_free(&mib));
    free(b);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    return mrt_finish("mr_big");
}
