/*
 * mr_coll_hier: the blocking collectives that run node-aware (pg_core/pg_coll_hier_*.c) give
 * the results the flat algorithms must give, on the world and on a communicator whose nodes
 * interleave (ranks of one node not consecutive), at sizes that take the shared-memory
 * round, the direct messages and the schedules within a node (MPI_Reduce_scatter_block runs
 * node-aware past 2 KiB in all, and as the node-aware allreduce up to it).
 *
 * The non-blocking forms (MPI_Iallreduce, _Ibcast, _Ireduce, _Iallgather, _Ibarrier,
 * _Ireduce_scatter_block) are checked the same way, several outstanding at once with mixed
 * roots and ops, a blocking allreduce and point-to-point traffic among them, waited for out
 * of order; and a first
 * non-blocking collective on a new communicator while a peer blocks in a send to this rank
 * (it must not wait for its peers to create anything).
 *
 * Run it on a cluster (srun -N 2 -n 6) or on one node with MPISHIM_NODE_SPLIT=k, which makes
 * every k local ranks a node; tests/scripts/test_coll_hier.sh checks from the log that the
 * hierarchy was taken. With MRT_EXPECT_HIER=1 (or 0) the program also checks, from the
 * MPI_T counters coll_<kind>_hier, that each non-blocking call ran node-aware (or none did).
 * Every expected value is computed here from the ranks alone: integer sums exactly, a
 * non-commutative op (2x2 matrix products, which must stay flat) in rank order, and
 * floating-point sums bitwise equal on every rank.
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

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

/* Rank r's input is val(r, j) at index j of the whole vector (n blocks of count); rank me
 * gets the sum of block me, in its own buffer and in place. */
static void check_reduce_scatter_block(MPI_Comm c, int n, int me, int count, int32_t *all,
                                       int32_t *b)
{
    for (int pass = 0; pass < 2; pass++) {
        int32_t *res = pass ? all : b;

        for (int j = 0; j < count * n; j++) {
            all[j] = val(me, j);
        }
        for (int i = 0; i < count; i++) {
            b[i] = -5;
        }
        CHECK_MPI(MPI_Reduce_scatter_block(pass ? MPI_IN_PLACE : all, res, count, MPI_INT32_T,
                                           MPI_SUM, c));
        for (int i = 0; i < count; i++) {
            int64_t want = sum_of(n, me * count + i);
            CHECK(res[i] == want, "reduce_scatter_block%s count %d: [%d] = %d, expected %lld",
                  pass ? " in place" : "", count, i, res[i], (long long)want);
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

/* Reduce_scatter_block of blocks of per matrices under op: element j of block q of rank r is
 * mat_of(r + 2q + j); rank me's result is the product over the ranks, in rank order. */
static void check_noncommutative_rsb(MPI_Comm c, int n, int me, MPI_Datatype mat, MPI_Op op,
                                     int per, bool nb)
{
    int64_t *in = malloc(sizeof(int64_t) * 4 * (size_t)(per * n)), *got, want[4];
    MPI_Request r;

    got = malloc(sizeof(int64_t) * 4 * (size_t)per);
    CHECK(in && got, "no memory");
    for (int q = 0; q < n; q++) {
        for (int j = 0; j < per; j++) {
            mat_of(me + 2 * q + j, in + 4 * ((size_t)q * per + j));
        }
    }
    if (nb) {
        CHECK_MPI(MPI_Ireduce_scatter_block(in, got, per, mat, op, c, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Reduce_scatter_block(in, got, per, mat, op, c));
    }
    for (int j = 0; j < per; j++) {
        int64_t m[4];
        int len = 1;

        want[0] = want[3] = 1;
        want[1] = want[2] = 0;
        for (int r2 = 0; r2 < n; r2++) {
            mat_of(r2 + 2 * me + j, m);
            matmul(want, m, &len, &mat); /* m = want * m */
            memcpy(want, m, sizeof(m));
        }
        CHECK(memcmp(got + 4 * (size_t)j, want, sizeof(want)) == 0,
              "%sreduce_scatter_block of %d matrices per rank: [%d] out of rank order",
              nb ? "i" : "", per, j);
    }
    free(in);
    free(got);
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
    /* One matrix per rank (an allreduce up to 2 KiB in all) and 100 (the scheduled form). */
    for (int nb = 0; nb < 2; nb++) {
        check_noncommutative_rsb(c, n, me, mat, op, 1, nb);
        check_noncommutative_rsb(c, n, me, mat, op, 100, nb);
    }
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

/* ---- the non-blocking forms ---- */

/* The MPI_T counters of the node-aware algorithms, in this order. */
enum { H_ALLREDUCE, H_BCAST, H_REDUCE, H_ALLGATHER, H_BARRIER, H_RSB, H_KINDS };
static const char *const hier_pvar[H_KINDS] = {
    "coll_allreduce_hier", "coll_bcast_hier",    "coll_reduce_hier",
    "coll_allgather_hier", "coll_barrier_hier", "coll_reduce_scatter_block_hier"};
static MPI_T_pvar_session pv_session;
static MPI_T_pvar_handle pv_handle[H_KINDS];
static int expect_hier = -1; /* MRT_EXPECT_HIER: 1, 0, or -1 (not checked) */

static void pvars_open(void)
{
    const char *e = getenv("MRT_EXPECT_HIER");
    int provided, idx, count;

    expect_hier = e && *e ? atoi(e) != 0 : -1;
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_pvar_session_create(&pv_session));
    for (int k = 0; k < H_KINDS; k++) {
        CHECK_MPI(MPI_T_pvar_get_index(hier_pvar[k], MPI_T_PVAR_CLASS_COUNTER, &idx));
        CHECK_MPI(MPI_T_pvar_handle_alloc(pv_session, idx, NULL, &pv_handle[k], &count));
    }
}

static void pvars_close(void)
{
    for (int k = 0; k < H_KINDS; k++) {
        CHECK_MPI(MPI_T_pvar_handle_free(pv_session, &pv_handle[k]));
    }
    CHECK_MPI(MPI_T_pvar_session_free(&pv_session));
    CHECK_MPI(MPI_T_finalize());
}

static void pvars_read(unsigned long long *v)
{
    for (int k = 0; k < H_KINDS; k++) {
        CHECK_MPI(MPI_T_pvar_read(pv_session, pv_handle[k], &v[k]));
    }
}

/* The counters moved by calls[k] each since before (every call or none node-aware). */
static void pvars_expect(const unsigned long long *before, const int *calls, const char *what)
{
    unsigned long long now[H_KINDS];

    pvars_read(now);
    for (int k = 0; expect_hier >= 0 && k < H_KINDS; k++) {
        unsigned long long want = expect_hier ? (unsigned long long)calls[k] : 0;
        CHECK(now[k] - before[k] == want, "%s: %s counted %llu node-aware calls, expected %llu",
              what, hier_pvar[k], now[k] - before[k], want);
    }
}

/* Buffers of one round of outstanding non-blocking collectives. */
struct nb_bufs {
    int32_t *a, *sum, *bc, *red, *all, *x, *pin, *pout, *rsin, *rs;
};

static int32_t xor_of(int n, int i)
{
    int32_t x = 0;

    for (int r = 0; r < n; r++) {
        x ^= val(r, i) * (r + 3);
    }
    return x;
}

static void nb_check(MPI_Comm c, int n, int me, int count, int rb, int rr, const struct nb_bufs *b,
                     int64_t total)
{
    int left = (me + n - 1) % n;

    CHECK(total == (int64_t)n * (n + 1) / 2, "blocking allreduce among them: %lld",
          (long long)total);
    for (int i = 0; i < count; i++) {
        CHECK(b->sum[i] == sum_of(n, i), "iallreduce count %d: [%d] = %d, expected %lld", count, i,
              b->sum[i], (long long)sum_of(n, i));
        CHECK(b->bc[i] == val(rb, i), "ibcast root %d count %d: [%d] = %d", rb, count, i, b->bc[i]);
        CHECK(me != rr || b->red[i] == val(0, i), "ireduce MIN root %d count %d: [%d] = %d", rr,
              count, i, b->red[i]);
        CHECK(me == rr || b->red[i] == -3, "ireduce root %d wrote a non-root's output", rr);
        CHECK(b->x[i] == xor_of(n, i), "iallreduce BXOR in place count %d: [%d] = %d", count, i,
              b->x[i]);
        CHECK(b->pin[i] == val(left, i) + 7, "sendrecv among them: [%d] = %d", i, b->pin[i]);
        CHECK(b->rs[i] == sum_of(n, me * count + i), "ireduce_scatter_block count %d: [%d] = %d, "
              "expected %lld", count, i, b->rs[i], (long long)sum_of(n, me * count + i));
        for (int r = 0; r < n; r++) {
            CHECK(b->all[(size_t)r * count + i] == val(r, i), "iallgather count %d: rank %d [%d]",
                  count, r, i);
        }
    }
    (void)c;
}

/* One round: seven non-blocking collectives outstanding at once (two allreduces with
 * different ops, a broadcast and a reduce with different roots, an allgather, a barrier, a
 * reduce_scatter_block), a blocking allreduce and a point-to-point exchange among them, then
 * waits out of order. */
static void nb_round(MPI_Comm c, int n, int me, int count, int rb, int rr, struct nb_bufs *b)
{
    MPI_Request r[7];
    int one = me + 1, right = (me + 1) % n, left = (me + n - 1) % n;
    int64_t total = 0;

    for (int i = 0; i < count; i++) {
        b->a[i] = val(me, i);
        b->sum[i] = b->all[(size_t)me * count + i] = -9;
        b->bc[i] = me == rb ? val(rb, i) : -7;
        b->red[i] = -3;
        b->x[i] = val(me, i) * (me + 3);
        b->pout[i] = val(me, i) + 7;
        b->pin[i] = 0;
        b->rs[i] = -11;
    }
    for (int j = 0; j < count * n; j++) {
        b->rsin[j] = val(me, j);
    }
    CHECK_MPI(MPI_Iallreduce(b->a, b->sum, count, MPI_INT32_T, MPI_SUM, c, &r[0]));
    CHECK_MPI(MPI_Ibcast(b->bc, count, MPI_INT32_T, rb, c, &r[1]));
    CHECK_MPI(MPI_Ireduce(b->a, b->red, count, MPI_INT32_T, MPI_MIN, rr, c, &r[2]));
    CHECK_MPI(MPI_Iallgather(b->a, count, MPI_INT32_T, b->all, count, MPI_INT32_T, c, &r[3]));
    CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, b->x, count, MPI_INT32_T, MPI_BXOR, c, &r[4]));
    CHECK_MPI(MPI_Ibarrier(c, &r[5]));
    CHECK_MPI(MPI_Ireduce_scatter_block(b->rsin, b->rs, count, MPI_INT32_T, MPI_SUM, c, &r[6]));
    /* Runs after the six on every rank: a blocking collective must not overtake them. */
    CHECK_MPI(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, c));
    CHECK_MPI(MPI_Sendrecv(b->pout, count, MPI_INT32_T, right, 11, b->pin, count, MPI_INT32_T,
                           left, 11, c, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&r[5], MPI_STATUS_IGNORE)); /* the last first: the others progress */
    CHECK_MPI(MPI_Wait(&r[2], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Waitall(7, r, MPI_STATUSES_IGNORE));
    nb_check(c, n, me, count, rb, rr, b, total);
}

static void check_nonblocking(MPI_Comm c, const char *what)
{
    int n, me, maxc = counts[NCOUNTS - 1], rounds = 0;
    struct nb_bufs b;
    unsigned long long before[H_KINDS];
    int calls[H_KINDS];

    MPI_Comm_size(c, &n);
    MPI_Comm_rank(c, &me);
    b.a = malloc(sizeof(int32_t) * (size_t)maxc);
    b.sum = malloc(sizeof(int32_t) * (size_t)maxc);
    b.bc = malloc(sizeof(int32_t) * (size_t)maxc);
    b.red = malloc(sizeof(int32_t) * (size_t)maxc);
    b.x = malloc(sizeof(int32_t) * (size_t)maxc);
    b.pin = malloc(sizeof(int32_t) * (size_t)maxc);
    b.pout = malloc(sizeof(int32_t) * (size_t)maxc);
    b.all = malloc(sizeof(int32_t) * (size_t)maxc * (size_t)n);
    b.rsin = malloc(sizeof(int32_t) * (size_t)maxc * (size_t)n);
    b.rs = malloc(sizeof(int32_t) * (size_t)maxc);
    CHECK(b.a && b.sum && b.bc && b.red && b.x && b.pin && b.pout && b.all && b.rsin && b.rs,
          "no memory");
    pvars_read(before);
    /* Three rounds per size, with the roots on different ranks (and nodes) in each. */
    for (int k = 0; k < NCOUNTS; k++) {
        for (int j = 0; j < 3; j++, rounds++) {
            nb_round(c, n, me, counts[k], (j * (n / 2 + 1) + k) % n, (j + k + 1) % n, &b);
        }
    }
    /* Per round: three allreduces (two non-blocking, one blocking run as its non-blocking
     * form while they wait), one of each other kind. */
    calls[H_ALLREDUCE] = 3 * rounds;
    calls[H_BCAST] = calls[H_REDUCE] = calls[H_ALLGATHER] = calls[H_BARRIER] = rounds;
    calls[H_RSB] = rounds;
    pvars_expect(before, calls, what);
    free(b.a);
    free(b.sum);
    free(b.bc);
    free(b.red);
    free(b.x);
    free(b.pin);
    free(b.pout);
    free(b.all);
    free(b.rsin);
    free(b.rs);
}

/* A new communicator's first collective is non-blocking, and a peer blocks in a send to
 * this rank before it calls its own: if starting it waited for the peers (to create the
 * node groups), neither would return. The message is larger than any eager limit. */
static void check_first_use(MPI_Comm parent)
{
    enum { BIG = 1 << 20 };
    MPI_Comm d;
    MPI_Request r;
    int n, me;
    int32_t *buf = malloc(sizeof(int32_t) * BIG);
    unsigned long long before[H_KINDS];
    int calls[H_KINDS] = {0, 0, 0, 0, 1, 0};

    CHECK(buf != NULL, "no memory");
    CHECK_MPI(MPI_Comm_dup(parent, &d));
    MPI_Comm_size(d, &n);
    MPI_Comm_rank(d, &me);
    for (int i = 0; i < BIG; i++) {
        buf[i] = me == n - 1 ? i ^ 0x5a5a : 0;
    }
    pvars_read(before);
    if (me == 0) {
        CHECK_MPI(MPI_Ibarrier(d, &r));
        CHECK_MPI(MPI_Recv(buf, BIG, MPI_INT32_T, n - 1, 3, d, MPI_STATUS_IGNORE));
    } else if (me == n - 1) {
        CHECK_MPI(MPI_Send(buf, BIG, MPI_INT32_T, 0, 3, d));
        CHECK_MPI(MPI_Ibarrier(d, &r));
    } else {
        CHECK_MPI(MPI_Ibarrier(d, &r));
    }
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    pvars_expect(before, calls, "first use");
    for (int i = 0; me == 0 && i < BIG; i++) {
        CHECK(buf[i] == (i ^ 0x5a5a), "first use: [%d] = %d", i, buf[i]);
    }
    CHECK_MPI(MPI_Comm_free(&d));
    free(buf);
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
        check_reduce_scatter_block(c, n, me, counts[k], all, b);
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
    pvars_open();
    check_comm(MPI_COMM_WORLD);
    check_nonblocking(MPI_COMM_WORLD, "world");
    check_first_use(MPI_COMM_WORLD);
    /* Even world ranks first, then odd ones: with nodes of consecutive world ranks, the
     * ranks of one node are no longer consecutive here. */
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, (me % 2) * n + me, &odd_even));
    check_comm(odd_even);
    check_nonblocking(odd_even, "odd-even split");
    for (int i = 0; i < 20; i++) {
        CHECK_MPI(MPI_Barrier(odd_even));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Comm_free(&odd_even));
    pvars_close();
    return mrt_finish("mr_coll_hier");
}
