/*
 * mr_coll_hier: the blocking collectives that run node-aware (pg_core/pg_coll_hier_*.c) give
 * the results the flat algorithms must give, on the world and on a communicator whose nodes
 * interleave (ranks of one node not consecutive), at sizes that take the shared-memory
 * round, the direct messages and the schedules within a node.
 *
 * Run it on a cluster (srun -N 2 -n 6) or on one node with MPISHIM_NODE_SPLIT=k, which makes
 * every k local ranks a node; tests/scripts/test_coll_hier.sh checks from the log that the
 * hierarchy was taken. Every expected value is computed here from the ranks alone: integer
 * sums exactly, a non-commutative op (2x2 matrix products, which must stay flat) in rank
 * order, and floating-point sums bitwise equal on every rank.
 */
#include "mrtest.h"

#include <stdint.h>

static const int counts[] = {0, 1, 7, 300, 1000, 20000};
#define NCOUNTS (int)(sizeof(counts) / sizeof(counts[0]))

/* Rank r's element i: distinct per rank and element, small enough that sums never wrap. */
static int32_t val(int r, int i)
{
    return (r + 1) * 1000 + i % 977 - 400;
}

static int64_t sum_of(int n, int i)
{
    int64_t s = 0;

    for (int r = 0; r < n; r++) {
        s += val(r, i);
    }
    return s;
}

static void check_allreduce(MPI_Comm c, int n, int me, int count, int32_t *a, int32_t *b)
{
    for (int i = 0; i < count; i++) {
        a[i] = val(me, i);
    }
    CHECK_MPI(MPI_Allreduce(a, b, count, MPI_INT32_T, MPI_SUM, c));
    for (int i = 0; i < count; i++) {
        CHECK(b[i] == sum_of(n, i), "allreduce count %d: [%d] = %d, expected %lld", count, i,
              b[i], (long long)sum_of(n, i));
    }
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, a, count, MPI_INT32_T, MPI_SUM, c));
    CHECK(count == 0 || memcmp(a, b, sizeof(int32_t) * (size_t)count) == 0,
          "in-place allreduce of %d differs", count);
}

static void check_reduce(MPI_Comm c, int n, int me, int count, int32_t *a, int32_t *b)
{
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < count; i++) {
            a[i] = val(me, i);
            b[i] = -1;
        }
        if (me == root && root % 2 == 1) {
            CHECK_MPI(MPI_Reduce(MPI_IN_PLACE, a, count, MPI_INT32_T, MPI_SUM, root, c));
            memcpy(b, a, sizeof(int32_t) * (size_t)count);
        } else {
            CHECK_MPI(MPI_Reduce(a, b, count, MPI_INT32_T, MPI_SUM, root, c));
        }
        for (int i = 0; me == root && i < count; i++) {
            CHECK(b[i] == sum_of(n, i), "reduce root %d count %d: [%d] = %d, expected %lld",
                  root, count, i, b[i], (long long)sum_of(n, i));
        }
        for (int i = 0; me != root && i < count; i++) {
            CHECK(b[i] == -1 && a[i] == val(me, i), "reduce root %d wrote a non-root's buffers",
                  root);
        }
    }
}

static void check_bcast(MPI_Comm c, int n, int me, int count, int32_t *a)
{
    for (int root = 0; root < n; root++) {
        for (int i = 0; i < count; i++) {
            a[i] = me == root ? val(root, i) : -7;
        }
        CHECK_MPI(MPI_Bcast(a, count, MPI_INT32_T, root, c));
        for (int i = 0; i < count; i++) {
            CHECK(a[i] == val(root, i), "bcast root %d count %d: [%d] = %d, expected %d", root,
                  count, i, a[i], val(root, i));
        }
    }
}

static void check_allgather(MPI_Comm c, int n, int me, int count, int32_t *a, int32_t *all)
{
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < count * n; i++) {
            all[i] = -5;
        }
        for (int i = 0; i < count; i++) {
            a[i] = val(me, i);
            all[(size_t)me * count + i] = val(me, i);
        }
        CHECK_MPI(MPI_Allgather(pass ? MPI_IN_PLACE : a, count, MPI_INT32_T, all, count,
                                MPI_INT32_T, c));
        for (int r = 0; r < n; r++) {
            for (int i = 0; i < count; i++) {
                CHECK(all[(size_t)r * count + i] == val(r, i),
                      "allgather%s count %d: rank %d's [%d] = %d, expected %d",
                      pass ? " in place" : "", count, r, i, all[(size_t)r * count + i],
                      val(r, i));
            }
        }
    }
}

/* 2x2 integer matrices under multiplication: associative, not commutative. */
static void matmul(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    const int64_t *x = in;
    int64_t *y = inout;

    (void)dt;
    for (int k = 0; k < *len; k++, x += 4, y += 4) {
        int64_t r[4] = {x[0] * y[0] + x[1] * y[2], x[0] * y[1] + x[1] * y[3],
                        x[2] * y[0] + x[3] * y[2], x[2] * y[1] + x[3] * y[3]};
        memcpy(y, r, sizeof(r));
    }
}

static void mat_of(int r, int64_t *m)
{
    m[0] = 1;
    m[1] = r + 1;
    m[2] = r % 3;
    m[3] = 1 + r % 2;
}

/* A non-commutative op keeps rank order (it must not run node-aware). */
static void check_noncommutative(MPI_Comm c, int n, int me)
{
    MPI_Datatype mat;
    MPI_Op op;
    int64_t mine[4], got[4], want[4] = {1, 0, 0, 1};

    CHECK_MPI(MPI_Type_contiguous(4, MPI_INT64_T, &mat));
    CHECK_MPI(MPI_Type_commit(&mat));
    CHECK_MPI(MPI_Op_create(matmul, 0, &op));
    for (int r = 0; r < n; r++) {
        int64_t m[4];
        int len = 1;

        mat_of(r, m);
        matmul(want, m, &len, &mat); /* m = want * m: the product in rank order */
        memcpy(want, m, sizeof(m));
    }
    mat_of(me, mine);
    CHECK_MPI(MPI_Allreduce(mine, got, 1, mat, op, c));
    CHECK(memcmp(got, want, sizeof(got)) == 0, "matrix product: %lld %lld %lld %lld, expected "
          "%lld %lld %lld %lld", (long long)got[0], (long long)got[1], (long long)got[2],
          (long long)got[3], (long long)want[0], (long long)want[1], (long long)want[2],
          (long long)want[3]);
    CHECK_MPI(MPI_Op_free(&op));
    CHECK_MPI(MPI_Type_free(&mat));
}

/* Floating-point sums: every rank must hold the same bits (one leader's result, broadcast). */
static void check_float_agrees(MPI_Comm c, int n, int me)
{
    enum { N = 600 };
    double x[N], s[N], *all = malloc(sizeof(double) * N * (size_t)n);

    CHECK(all != NULL, "no memory");
    for (int i = 0; i < N; i++) {
        x[i] = 0.1 * (me + 1) + 1e-7 * i;
    }
    CHECK_MPI(MPI_Allreduce(x, s, N, MPI_DOUBLE, MPI_SUM, c));
    CHECK_MPI(MPI_Allgather(s, N, MPI_DOUBLE, all, N, MPI_DOUBLE, c));
    for (int r = 0; r < n; r++) {
        CHECK(memcmp(all + (size_t)r * N, s, sizeof(s)) == 0,
              "rank %d's floating-point sum differs from this rank's", r);
    }
    free(all);
}

static void check_comm(MPI_Comm c)
{
    int n, me, maxc = counts[NCOUNTS - 1];
    int32_t *a, *b, *all;

    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    a = malloc(sizeof(int32_t) * (size_t)maxc);
    b = malloc(sizeof(int32_t) * (size_t)maxc);
    all = malloc(sizeof(int32_t) * (size_t)maxc * (size_t)n);
    CHECK(a && b && all, "no memory");
    for (int k = 0; k < NCOUNTS; k++) {
        check_allreduce(c, n, me, counts[k], a, b);
        check_reduce(c, n, me, counts[k], a, b);
        check_bcast(c, n, me, counts[k], a);
        check_allgather(c, n, me, counts[k], a, all);
        CHECK_MPI(MPI_Barrier(c));
    }
    check_noncommutative(c, n, me);
    check_float_agrees(c, n, me);
    free(a);
    free(b);
    free(all);
}

int main(int argc, char **argv)
{
    MPI_Comm odd_even;
    int n, me;

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    check_comm(MPI_COMM_WORLD);
    /* Even world ranks first, then odd ones: with nodes of consecutive world ranks, the
     * ranks of one node are no longer consecutive here. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, (me % 2) * n + me, &odd_even));
    check_comm(odd_even);
    for (int i = 0; i < 20; i++) {
        CHECK_MPI(MPI_Barrier(odd_even));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Comm_free(&odd_even));
    return mrt_finish("mr_coll_hier");
}
