/*
 * mr_pgc_async.c - a torch-style program's asynchronous send progresses while the sender
 * computes (MPISHIM_ASYNC_PROGRESS=1: pgc_init_process_group starts pg_core/pg_async.c's
 * thread).
 *
 * Run over tcp;ofi_rxm with MPISHIM_SHM_RING=0 (tests/mr.list), as between nodes. Rank 0
 * starts pgc_isend of LEN int32 (past the eager limit: a rendezvous, which the sender must
 * progress to answer) to every other rank, then computes without calling pgc until each
 * receiver says, through a file outside pgc created after its blocking pgc_recv returned,
 * that the message arrived; it gives up after GIVE_UP seconds and fails (the sender's
 * progress did not happen: run it without the variable to see that). The receivers check
 * every element against a value computed from its index and their rank; rank 0 then waits
 * for its works, which must have succeeded.
 */
#include <pgc.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LEN (256 * 1024) /* int32 elements: 1 MiB */
#define GIVE_UP 20.0     /* s the sender computes waiting for the receivers' word */
#define MAXR 64

static int rank, size;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d rank %d: %s: ", __FILE__, __LINE__, rank, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (last error: %s)\n", pgc_last_error());                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int32_t value(int dst, size_t i)
{
    return (int32_t)(dst * 1000003 + (int)(i * 7u) + 1);
}

/* Computes without calling pgc until every receiver's file exists; false after GIVE_UP. */
static bool compute_until_all(const char *prefix)
{
    volatile double x = 0;
    double start = now();
    char path[300];
    struct stat st;
    int seen = 1;

    while (seen < size) {
        for (int i = 0; i < 100000; i++) {
            x += (double)i * 1e-9;
        }
        snprintf(path, sizeof(path), "%s.%d", prefix, seen);
        if (stat(path, &st) == 0) {
            unlink(path);
            seen++;
        } else if (now() - start > GIVE_UP) {
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    pgc_init_opts o = PGC_INIT_OPTS_DEFAULT;
    char prefix[256] = "";
    pgc_tensor pt = pgc_host_tensor(prefix, sizeof(prefix), PGC_UINT8);
    int32_t *buf;

    for (int i = 1; i < argc; i++) {
        if (strchr(argv[i], '=')) {
            putenv(argv[i]);
        }
    }
    CHECK(pgc_init_process_group(&o) == PGC_OK, "init");
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    if (size < 2 || size > MAXR) {
        if (rank == 0) {
            printf("SKIP: mr_pgc_async needs 2 to %d ranks, not %d\n", MAXR, size);
        }
        pgc_destroy_process_group();
        return 0;
    }
    if (rank == 0) {
        const char *dir = getenv("TMPDIR");
        snprintf(prefix, sizeof(prefix), "%s/mr_pgc_async.%ld", dir && *dir ? dir : "/tmp",
                 (long)getpid());
    }
    CHECK(pgc_broadcast(&pt, 0, NULL, 0, NULL) == PGC_OK, "broadcast of the file name");
    buf = malloc(sizeof(int32_t) * LEN * (rank == 0 ? (size_t)size : 1));
    CHECK(buf != NULL, "no memory");
    if (rank == 0) {
        pgc_work *w[MAXR];
        pgc_tensor t[MAXR];

        for (int d = 1; d < size; d++) {
            int32_t *b = buf + (size_t)d * LEN;
            for (size_t i = 0; i < LEN; i++) {
                b[i] = value(d, i);
            }
            t[d] = pgc_host_tensor(b, LEN, PGC_INT32);
            CHECK(pgc_isend(&t[d], d, NULL, 7, &w[d]) == PGC_OK, "isend to %d", d);
        }
        CHECK(compute_until_all(prefix),
              "a receiver did not get rank 0's isend within %.0f s while rank 0 computed: the "
              "sender's progress did not happen (is MPISHIM_ASYNC_PROGRESS=1 set?)",
              GIVE_UP);
        for (int d = 1; d < size; d++) {
            CHECK(pgc_work_wait(w[d], -1) == PGC_OK, "the isend to %d failed", d);
            pgc_work_free(w[d]);
        }
    } else {
        pgc_tensor t = pgc_host_tensor(buf, LEN, PGC_INT32);
        char path[300];

        CHECK(pgc_recv(&t, 0, NULL, 7) == 0, "recv");
        for (size_t i = 0; i < LEN; i++) {
            CHECK(buf[i] == value(rank, i), "element %zu is %d, not %d", i, buf[i], value(rank, i));
        }
        snprintf(path, sizeof(path), "%s.%d", prefix, rank);
        FILE *f = fopen(path, "w");
        CHECK(f != NULL, "cannot create %s", path);
        fclose(f);
    }
    CHECK(pgc_barrier(NULL, 0, NULL) == PGC_OK, "barrier");
    free(buf);
    if (rank == 0) {
        printf("mr_pgc_async: %d receivers got 1 MiB each while rank 0 computed\n", size - 1);
    }
    CHECK(pgc_destroy_process_group() == PGC_OK, "destroy");
    return 0;
}
