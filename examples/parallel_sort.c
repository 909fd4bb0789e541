/*
 * parallel_sort.c - sample sort: every rank sorts its keys, picks regular samples, and all
 * ranks choose the same splitters from the gathered samples (MPI_Allgather). Each rank
 * then tells every other how many keys it will send (MPI_Alltoall of counts) and sends
 * them (MPI_Alltoallv), and sorts what it received. Rank r ends with the r-th range of the
 * keys, so the concatenation over ranks is globally sorted; the program checks that.
 *
 * The keys come from a counter-based generator over their global index, and the checksum
 * weighs each key by its position in the sorted whole, so the output is the same for any
 * number of ranks and any MPI library.
 * An unmodified MPI program: builds with any MPI's mpicc.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NKEYS 200000LL

static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

static int cmp_key(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

    return x < y ? -1 : x > y;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);

    if (!p) {
        fprintf(stderr, "parallel_sort: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* This rank's block of the keys, sorted. */
static unsigned *make_keys(int rank, int size, int *n)
{
    long long first = rank * (NKEYS / size) + (rank < NKEYS % size ? rank : NKEYS % size);
    unsigned *keys;

    *n = (int)(NKEYS / size + (rank < NKEYS % size ? 1 : 0));
    keys = xmalloc(sizeof(unsigned) * (size_t)*n);
    for (int i = 0; i < *n; i++) {
        keys[i] = (unsigned)(mix64((uint64_t)(first + i)) >> 32);
    }
    qsort(keys, (size_t)*n, sizeof(unsigned), cmp_key);
    return keys;
}

/* size - 1 splitters, the same on every rank, from size - 1 regular samples per rank. */
static unsigned *choose_splitters(const unsigned *keys, int n, int size)
{
    int s = size - 1;
    unsigned *mine = xmalloc(sizeof(unsigned) * (size_t)s);
    unsigned *all = xmalloc(sizeof(unsigned) * (size_t)(s * size));
    unsigned *split = xmalloc(sizeof(unsigned) * (size_t)s);

    for (int k = 0; k < s; k++) {
        mine[k] = n ? keys[(long long)(k + 1) * n / size] : 0;
    }
    MPI_Allgather(mine, s, MPI_UNSIGNED, all, s, MPI_UNSIGNED, MPI_COMM_WORLD);
    qsort(all, (size_t)(s * size), sizeof(unsigned), cmp_key);
    for (int k = 0; k < s; k++) {
        split[k] = all[k * size + size / 2];
    }
    free(mine);
    free(all);
    return split;
}

/* Exchanges the buckets; returns the received keys (sorted) and their number in *m. */
static unsigned *exchange(const unsigned *keys, int n, const unsigned *split, int size, int *m)
{
    int *scount = xmalloc(sizeof(int) * (size_t)size),
        *sdispl = xmalloc(sizeof(int) * (size_t)size);
    int *rcount = xmalloc(sizeof(int) * (size_t)size),
        *rdispl = xmalloc(sizeof(int) * (size_t)size);
    unsigned *out;
    int d = 0;

    /* Key k goes to the first rank whose splitter is above it (the last rank otherwise). */
    for (int r = 0; r < size; r++) {
        scount[r] = 0;
    }
    for (int i = 0; i < n; i++) {
        while (d < size - 1 && keys[i] >= split[d]) {
            d++;
        }
        scount[d]++;
    }
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, MPI_COMM_WORLD);
    sdispl[0] = rdispl[0] = 0;
    for (int r = 1; r < size; r++) {
        sdispl[r] = sdispl[r - 1] + scount[r - 1];
        rdispl[r] = rdispl[r - 1] + rcount[r - 1];
    }
    *m = rdispl[size - 1] + rcount[size - 1];
    out = xmalloc(sizeof(unsigned) * (size_t)*m);
    MPI_Alltoallv(keys, scount, sdispl, MPI_UNSIGNED, out, rcount, rdispl, MPI_UNSIGNED,
                  MPI_COMM_WORLD);
    qsort(out, (size_t)*m, sizeof(unsigned), cmp_key);
    free(scount);
    free(sdispl);
    free(rcount);
    free(rdispl);
    return out;
}

/* 1 when the keys of all ranks, in rank order, are sorted (checked on every rank). */
static int globally_sorted(const unsigned *keys, int m, int size)
{
    unsigned long long mine[3] = {(unsigned long long)m, m ? keys[0] : 0, m ? keys[m - 1] : 0};
    unsigned long long *all = xmalloc(sizeof(mine) * (size_t)size);
    unsigned long long prev_max = 0;
    int ok = 1;

    for (int i = 1; i < m; i++) {
        ok &= keys[i - 1] <= keys[i];
    }
    MPI_Allgather(mine, 3, MPI_UNSIGNED_LONG_LONG, all, 3, MPI_UNSIGNED_LONG_LONG, MPI_COMM_WORLD);
    for (int r = 0; r < size; r++) {
        if (all[3 * r] > 0) {
            ok &= all[3 * r + 1] >= prev_max;
            prev_max = all[3 * r + 2];
        }
    }
    free(all);
    return ok;
}

int main(int argc, char **argv)
{
    int rank, size, n, m, ok, all_ok = 0;
    unsigned *keys, *split, *sorted;
    long long count, before = 0, total = 0;
    unsigned long long sum = 0, checksum = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    keys = make_keys(rank, size, &n);
    split = choose_splitters(keys, n, size);
    sorted = exchange(keys, n, split, size, &m);
    ok = globally_sorted(sorted, m, size);

    /* The global position of my first key: the keys on the ranks before me. */
    count = m;
    MPI_Scan(&count, &before, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    before -= count;
    for (int i = 0; i < m; i++) {
        sum += (unsigned long long)sorted[i] * (unsigned long long)(before + i + 1);
    }
    MPI_Reduce(&sum, &checksum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&count, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Reduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("keys: %lld\n", total);
        printf("globally sorted: %s\n", all_ok ? "yes" : "NO");
        printf("checksum: %llu\n", checksum);
    }
    free(keys);
    free(split);
    free(sorted);
    MPI_Finalize();
    /* Only rank 0 holds the verdict. */
    return rank != 0 || (all_ok && total == NKEYS) ? 0 : 1;
}
