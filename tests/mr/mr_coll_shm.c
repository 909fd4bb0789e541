/*
 * mr_coll_shm.c - the flat shared-memory collectives (pg_core/pg_coll_shm.c): allreduce,
 * bcast and barrier of up to 2 KiB on communicators within one node, checked against values
 * computed here, at the sizes around the path's limits, on more communicators than it has
 * channels, across freeing and re-creating communicators (channels reused), on split
 * communicators, mixed with non-blocking collectives in flight, and with mismatched counts
 * (an error on every rank, not garbage; test_faults.sh checks its message).
 * tests/scripts/test_coll_shm.sh checks from the log
 * that the path is taken, and that MPISHIM_COLL_SHM=0 gives the same results by messages.
 */
#include "mrtest.h"

#include <unistd.h>

#define NCOMMS 24 /* more than the 15 channels a process has for communicators */

static int rank, size;

static int value(int r, int i, int salt)
{
    return (r + 1) * 1000003 % 7919 + i * 31 + salt * 17;
}

/* Allreduce of count ints, SUM and MAX, out of place and in place. */
static void check_allreduce(MPI_Comm comm, int count, int salt)
{
    int r, n;
    int *in = malloc(sizeof(int) * (size_t)count), *out = malloc(sizeof(int) * (size_t)count);

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int i = 0; i < count; i++) {
        in[i] = value(r, i, salt);
    }
    CHECK_MPI(MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, comm));
    for (int i = 0; i < count; i++) {
        long want = 0;
        for (int p = 0; p < n; p++) {
            want += value(p, i, salt);
        }
        CHECK(out[i] == want, "sum of %d ints, element %d: %d, expected %ld", count, i, out[i],
              want);
    }
    memcpy(out, in, sizeof(int) * (size_t)count);
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, count, MPI_INT, MPI_MAX, comm));
    for (int i = 0; i < count; i++) {
        int want = value(0, i, salt);
        for (int p = 1; p < n; p++) {
            want = value(p, i, salt) > want ? value(p, i, salt) : want;
        }
        CHECK(out[i] == want, "max of %d ints, element %d: %d, expected %d", count, i, out[i],
              want);
    }
    free(in);
    free(out);
}

/* Broadcasts from every root in turn, rounds times each (a root runs ahead of its readers
 * by more than the slots it has), each round with new bytes. */
static void check_bcast(MPI_Comm comm, int bytes, int rounds)
{
    int r, n;
    unsigned char *buf = malloc((size_t)bytes + 1);

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    for (int root = 0; root < n; root++) {
        for (int k = 0; k < rounds; k++) {
            for (int i = 0; i < bytes; i++) {
                buf[i] = r == root ? (unsigned char)(i * 7 + k * 13 + root) : 0xee;
            }
            CHECK_MPI(MPI_Bcast(buf, bytes, MPI_BYTE, root, comm));
            for (int i = 0; i < bytes; i++) {
                CHECK(buf[i] == (unsigned char)(i * 7 + k * 13 + root),
                      "bcast of %d B from %d, round %d, byte %d: %u", bytes, root, k, i, buf[i]);
            }
        }
    }
    free(buf);
}

/* Affine maps x -> m x + c composed: not commutative, so the result shows the order. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;
    (void)dt;
    for (int i = 0; i < *len; i++) {
        /* result = a then b applied in rank order: b(a(x)) for a from the lower rank */
        int m = a[2 * i] * b[2 * i], c = b[2 * i] * a[2 * i + 1] + b[2 * i + 1];
        b[2 * i] = m;
        b[2 * i + 1] = c;
    }
}

static void check_noncommutative(MPI_Comm comm)
{
    MPI_Datatype pair;
    MPI_Op op;
    int r, n, mine[2], got[2], want[2] = {1, 0};

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_MPI(MPI_Type_commit(&pair));
    CHECK_MPI(MPI_Op_create(compose, 0, &op));
    mine[0] = r + 2;
    mine[1] = 3 * r + 1;
    for (int p = 0; p < n; p++) {
        int m = (p + 2) * want[0], c = (p + 2) * want[1] + 3 * p + 1;
        want[0] = m;
        want[1] = c;
    }
    CHECK_MPI(MPI_Allreduce(mine, got, 1, pair, op, comm));
    CHECK(got[0] == want[0] && got[1] == want[1], "composition in rank order: %d x + %d, "
          "expected %d x + %d", got[0], got[1], want[0], want[1]);
    MPI_Op_free(&op);
    MPI_Type_free(&pair);
}

/* Nobody leaves a barrier before the last rank entered it: rank r enters r * 20 ms late.
 * The ranks share a node, so MPI_Wtime (CLOCK_MONOTONIC) is one clock for all of them:
 * each rank's leaving time is compared with every rank's entering time, which holds
 * however unevenly the ranks came out of the barrier before. */
static void check_barrier(MPI_Comm comm)
{
    int r, n;
    double enter, left, last = 0;

    MPI_Comm_rank(comm, &r);
    MPI_Comm_size(comm, &n);
    double *enters = malloc((size_t)n * sizeof(double));
    CHECK(enters != NULL, "out of memory");
    CHECK_MPI(MPI_Barrier(comm));
    usleep((useconds_t)r * 20000);
    enter = MPI_Wtime();
    CHECK_MPI(MPI_Barrier(comm));
    left = MPI_Wtime();
    CHECK_MPI(MPI_Allgather(&enter, 1, MPI_DOUBLE, enters, 1, MPI_DOUBLE, comm));
    for (int i = 0; i < n; i++) {
        last = enters[i] > last ? enters[i] : last;
    }
    CHECK(left >= last, "left the barrier %.6f s before the last rank entered it", last - left);
    free(enters);
}

static void check_comm(MPI_Comm comm, int salt)
{
    static const int counts[] = {1, 2, 12, 13, 256, 511, 512, 513, 1024};

    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
        check_allreduce(comm, counts[i], salt);
    }
    check_bcast(comm, 1, 300);
    check_bcast(comm, 1024, 3);
    check_bcast(comm, 1025, 2);
    check_bcast(comm, 2048, 2);
    check_bcast(comm, 2049, 1);
    check_noncommutative(comm);
}

/* Many communicators at once, used in turn, then freed and made again. */
static void check_many(void)
{
    MPI_Comm c[NCOMMS];

    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < NCOMMS; i++) {
            CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[i]));
        }
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < NCOMMS; i++) {
                check_allreduce(c[(i * 7 + k) % NCOMMS], 3, i + k);
                CHECK_MPI(MPI_Barrier(c[i]));
            }
        }
        for (int i = 0; i < NCOMMS; i++) {
            check_bcast(c[i], 8, 2);
            CHECK_MPI(MPI_Comm_free(&c[i]));
        }
    }
}

/* Split communicators (two colors), with a non-blocking barrier in flight on the world. */
static void check_split(void)
{
    MPI_Comm half;
    MPI_Request req;
    int flag = 0;

    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, size - rank, &half));
    CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &req));
    check_comm(half, 5);
    check_barrier(half);
    check_allreduce(MPI_COMM_WORLD, 4, 9);
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    CHECK(flag, "a completed request tests as complete");
    CHECK_MPI(MPI_Comm_free(&half));
}

/* Counts that differ between ranks: every rank gets an error naming the cause, and the
 * communicator still works afterwards. */
static void check_mismatch(void)
{
    const char *shm = getenv("MPISHIM_COLL_SHM");
    const char *prov = getenv("MPISHIM_FABRIC_PROVIDER");
    int in[2] = {1, 2}, out[2];
    int rc;

    /* Through messages only the receiver of the longer message can tell (MPI leaves the
     * outcome undefined); through shared memory every rank sees every count. Forcing any
     * provider, shm included, turns the node's rings off and the shared-memory path with
     * them (doc/configuration.md, MPISHIM_FABRIC_PROVIDER). */
    if (size < 2 || (shm && strcmp(shm, "0") == 0) || (prov && *prov)) {
        if (rank == 0) {
            printf("mr_coll_shm: mismatched counts not checked: needs 2 ranks or more and "
                   "the shared-memory path (MPISHIM_COLL_SHM=0 or MPISHIM_FABRIC_PROVIDER "
                   "set here, or 1 rank)\n");
        }
        return;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Allreduce(in, out, rank == 0 ? 2 : 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(rc != MPI_SUCCESS, "allreduce with mismatched counts succeeded");
    check_allreduce(MPI_COMM_WORLD, 5, 11);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_comm(MPI_COMM_WORLD, 1);
    check_barrier(MPI_COMM_WORLD);
    check_many();
    check_split();
    check_mismatch();
    return mrt_finish("mr_coll_shm");
}
