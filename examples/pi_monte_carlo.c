/*
 * pi_monte_carlo.c - the classic Monte Carlo estimate of pi: throw points into the unit
 * square, count those inside the quarter circle, and combine the counts with MPI_Reduce.
 *
 * The points come from a counter-based generator (splitmix64 of the sample's global index)
 * and each rank takes a contiguous block of indexes, so the answer is the same for any
 * number of ranks and any MPI library: the counts are integers and their sum is exact.
 * An unmodified MPI program: builds with any MPI's mpicc.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define SAMPLES 2000000LL

/* splitmix64: a good 64-bit mix of a counter, so sample i is the same on every rank. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

/* A coordinate in [0, 1) from the top 53 bits of a 64-bit value. */
static double unit(uint64_t v)
{
    return (double)(v >> 11) * (1.0 / 9007199254740992.0);
}

static long long count_hits(long long first, long long n)
{
    long long hits = 0;

    for (long long i = first; i < first + n; i++) {
        double x = unit(mix64(2 * (uint64_t)i));
        double y = unit(mix64(2 * (uint64_t)i + 1));

        if (x * x + y * y < 1.0) {
            hits++;
        }
    }
    return hits;
}

int main(int argc, char **argv)
{
    int rank, size;
    long long first, n, hits, total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    /* Block distribution of the sample indexes; the first SAMPLES % size ranks get one more. */
    n = SAMPLES / size + (rank < SAMPLES % size ? 1 : 0);
    first = rank * (SAMPLES / size) + (rank < SAMPLES % size ? rank : SAMPLES % size);
    hits = count_hits(first, n);
    MPI_Reduce(&hits, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        double pi = 4.0 * (double)total / (double)SAMPLES;

        printf("samples: %lld\n", SAMPLES);
        printf("inside:  %lld\n", total);
        printf("pi ~= %.6f\n", pi);
    }
    MPI_Finalize();
    return 0;
}
