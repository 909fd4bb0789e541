/* Collectives: every root, several sizes (eager and rendezvous), every basic op, checked
 * against values each rank computes on its own. */
#include "mrtest.h"

#include <math.h>
#include <string.h>

static int rank, size;

static int contribution(int r, int i)
{
    return (r + 1) * 3 + i % 17 - 8;
}

static void bcast_all_roots(int count)
{
    int *buf = malloc(sizeof(int) * (size_t)(count ? count : 1));
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < count; i++) {
            buf[i] = rank == root ? root * 100000 + i : -1;
        }
        CHECK_MPI(MPI_Bcast(buf, count, MPI_INT, root, MPI_COMM_WORLD));
        for (int i = 0; i < count; i++) {
            CHECK(buf[i] == root * 100000 + i, "root %d count %d elem %d: %d", root, count, i,
                  buf[i]);
        }
    }
    free(buf);
}

/* Products use 1s and 2s so that no product overflows an int at 8 ranks. */
static int operand(int o, int r, int i)
{
    return o == 1 ? (r + i) % 2 + 1 : contribution(r, i);
}

static void reduce_int_ops(int count)
{
    MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_LAND,
                    MPI_LOR, MPI_LXOR};
    int *in = malloc(sizeof(int) * (size_t)count), *out = malloc(sizeof(int) * (size_t)count);

    for (int o = 0; o < (int)(sizeof(ops) / sizeof(*ops)); o++) {
        for (int root = 0; root < size; root += (size > 3 ? 2 : 1)) {
            for (int i = 0; i < count; i++) {
                in[i] = operand(o, rank, i);
                out[i] = -7;
            }
            CHECK_MPI(MPI_Reduce(in, out, count, MPI_INT, ops[o], root, MPI_COMM_WORLD));
            if (rank != root) {
                continue;
            }
            for (int i = 0; i < count; i++) {
                int e = operand(o, 0, i);
                for (int r = 1; r < size; r++) {
                    int v = operand(o, r, i);
                    switch (o) {
                    case 0: e += v; break;
                    case 1: e *= v; break;
                    case 2: e = v > e ? v : e; break;
                    case 3: e = v < e ? v : e; break;
                    case 4: e &= v; break;
                    case 5: e |= v; break;
                    case 6: e ^= v; break;
                    case 7: e = e && v; break;
                    case 8: e = e || v; break;
                    case 9: e = !e != !v; break;
                    }
                }
                if (o >= 7 && size == 1) {
                    e = e != 0; /* a single operand is returned as it is */
                    CHECK(out[i] == in[i], "op %d root %d elem %d: %d != %d", o, root, i, out[i],
                          in[i]);
                    continue;
                }
                CHECK(out[i] == e, "op %d root %d elem %d: %d != %d", o, root, i, out[i], e);
            }
        }
    }
    free(in);
    free(out);
}

static void allreduce_double(int count)
{
    double *buf = malloc(sizeof(double) * (size_t)count);
    double *out = malloc(sizeof(double) * (size_t)count);
    for (int i = 0; i < count; i++) {
        buf[i] = contribution(rank, i) * 0.5;
    }
    CHECK_MPI(MPI_Allreduce(buf, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        double e = 0;
        for (int r = 0; r < size; r++) {
            e += contribution(r, i) * 0.5;
        }
        CHECK(fabs(out[i] - e) < 1e-9, "count %d elem %d: %g != %g", count, i, out[i], e);
        /* Read in place of a copy (Rabenseifner out of place), never written. */
        CHECK(buf[i] == contribution(rank, i) * 0.5,
              "count %d: send buffer elem %d changed to "
              "%g",
              count, i, buf[i]);
    }
    /* In place, with MAX. */
    CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, buf, count, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        double e = -1e300;
        for (int r = 0; r < size; r++) {
            double v = contribution(r, i) * 0.5;
            e = v > e ? v : e;
        }
        CHECK(buf[i] == e, "in place max count %d elem %d: %g != %g", count, i, buf[i], e);
    }
    free(buf);
    free(out);
}

static void maxloc(void)
{
    struct {
        double v;
        int i;
    } in = {(double)((rank * 7) % size), rank}, out;
    double best = -1;
    int where = -1;
    for (int r = 0; r < size; r++) {
        double v = (double)((r * 7) % size);
        if (v > best) {
            best = v;
            where = r;
        }
    }
    CHECK_MPI(MPI_Allreduce(&in, &out, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(out.v == best && out.i == where, "maxloc %g@%d, expected %g@%d", out.v, out.i, best,
          where);
}

/* x -> m x + c composed in rank order: associative, not commutative. */
struct affine {
    long long m, c;
};

static void compose(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    struct affine *a = invec, *b = inoutvec;
    for (int i = 0; i < *len; i++) {
        b[i].c = b[i].m * a[i].c + b[i].c;
        b[i].m = b[i].m * a[i].m;
    }
}

/* count elements: 1 takes the direct path, 500 (8 KB) the schedule path. */
static void noncommutative_user_op(int count)
{
    MPI_Datatype t;
    MPI_Op op;
    struct affine *mine = malloc(sizeof(*mine) * (size_t)count);
    struct affine *out = malloc(sizeof(*out) * (size_t)count), e = {1, 0};

    CHECK_MPI(MPI_Type_contiguous(2, MPI_LONG_LONG, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    CHECK_MPI(MPI_Op_create(compose, 0, &op));
    for (int r = 0; r < size; r++) {
        e.c = (r + 2) * e.c + r + 1;
        e.m = (r + 2) * e.m;
    }
    for (int i = 0; i < count; i++) {
        mine[i] = (struct affine){rank + 2, rank + 1};
    }
    CHECK_MPI(MPI_Allreduce(mine, out, count, t, op, MPI_COMM_WORLD));
    for (int i = 0; i < count; i++) {
        CHECK(out[i].m == e.m && out[i].c == e.c, "allreduce elem %d (%lld,%lld) != (%lld,%lld)",
              i, out[i].m, out[i].c, e.m, e.c);
    }
    for (int root = 0; root < size; root++) {
        memset(out, 0, sizeof(*out) * (size_t)count);
        CHECK_MPI(MPI_Reduce(mine, out, count, t, op, root, MPI_COMM_WORLD));
        for (int i = 0; rank == root && i < count; i++) {
            CHECK(out[i].m == e.m && out[i].c == e.c, "reduce root %d elem %d (%lld,%lld)", root,
                  i, out[i].m, out[i].c);
        }
    }
    MPI_Op_free(&op);
    MPI_Type_free(&t);
    free(mine);
    free(out);
}

static void nonblocking_overlap(void)
{
    enum { N = 4096 };
    static long in[N], out[N];
    MPI_Request req;
    int flag = 0, polls = 0;
    for (int i = 0; i < N; i++) {
        in[i] = rank + i;
    }
    CHECK_MPI(MPI_Iallreduce(in, out, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &req));
    while (!flag) {
        polls++;
        CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    }
    for (int i = 0; i < N; i++) {
        long e = (long)size * i + (long)size * (size - 1) / 2;
        CHECK(out[i] == e, "elem %d: %ld != %ld", i, out[i], e);
    }
    CHECK(req == MPI_REQUEST_NULL, "request not freed after completion (%d polls)", polls);
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 3; i++) {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    bcast_all_roots(1);
    bcast_all_roots(1000);
    bcast_all_roots(6000); /* 24 KB: eager to a receive, rendezvous in a rooted collective */
    bcast_all_roots(200000);
    reduce_int_ops(1);
    reduce_int_ops(1001);
    reduce_int_ops(6001);
    allreduce_double(1);
    allreduce_double(7);
    allreduce_double(7001); /* 56 KB: exchanges of 28 KB halves, eager */
    allreduce_double(100000); /* large: the ring algorithm on more than 2 ranks */
    maxloc();
    noncommutative_user_op(1);
    noncommutative_user_op(500);
    nonblocking_overlap();
    return mrt_finish("mr_coll");
}
