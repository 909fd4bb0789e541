/* Gather(v), scatter(v), allgather(v), alltoall(v,w), reduce_scatter(_block), scan and exscan,
 * blocking and non-blocking: every root, counts 0, 1 and past the rendezvous threshold,
 * MPI_IN_PLACE, a strided vector type, uneven counts, and a non-commutative user op. Every
 * expected value is a formula of the ranks and the index. */
#include "mrtest.h"

#include <stdbool.h>
#include <string.h>

/* The communicator under test, and my rank and its size there. */
static MPI_Comm comm;
static int rank, size;

/* Kind 0: MPI_INT. Kind 1: a vector of 2 ints with stride 2 (extent 3 ints, a gap of one
 * int in the middle of each element that no collective may touch). */
static MPI_Datatype types[2];
#define IPE(k) ((k) ? 2 : 1)    /* ints per element */
#define STRIDE(k) ((k) ? 3 : 1) /* ints per extent */
#define SENTINEL (-1)
#define BIG 6000 /* ints per peer: 24000 bytes, past the 16 KiB eager limit */

/* Runs the blocking form, or the non-blocking one and a wait. */
#define COLL(nb, name, iname, ...)                                                                 \
    do {                                                                                           \
        if (nb) {                                                                                  \
            MPI_Request q_;                                                                        \
            CHECK_MPI(MPI_##iname(__VA_ARGS__, &q_));                                              \
            CHECK_MPI(MPI_Wait(&q_, MPI_STATUS_IGNORE));                                           \
            CHECK(q_ == MPI_REQUEST_NULL, "request not freed");                                    \
        } else {                                                                                   \
            CHECK_MPI(MPI_##name(__VA_ARGS__));                                                    \
        }                                                                                          \
    } while (0)

/* The value rank src sends to rank dst at (logical int) index q. */
static int val(int src, int dst, int q)
{
    return src * 1000000 + dst * 10000 + q;
}

/* The int index of logical int q in a buffer of kind k. */
static size_t pos(int k, size_t q)
{
    return (q / IPE(k)) * STRIDE(k) + (k ? 2 * (q % 2) : 0);
}

/* A buffer of nelem elements of kind k, every int (gaps too) set to SENTINEL. */
static int *tb_new(int k, size_t nelem)
{
    size_t n = nelem * STRIDE(k) + 1;
    int *b = malloc(sizeof(int) * n);

    for (size_t i = 0; i < n; i++) {
        b[i] = SENTINEL;
    }
    return b;
}

static void tb_reset(int k, int *b, size_t nelem)
{
    for (size_t i = 0; i < nelem * STRIDE(k) + 1; i++) {
        b[i] = SENTINEL;
    }
}

/* Every int that is not part of logical ints [lo, hi) still holds SENTINEL. */
static void tb_check_rest(int k, const int *b, size_t nelem, size_t lo, size_t hi, const char *what)
{
    for (size_t i = 0; i < nelem * STRIDE(k) + 1; i++) {
        bool used = false;
        if (k == 0) {
            used = i >= lo && i < hi;
        } else if (i % 3 != 1 && i / 3 < nelem) {
            size_t q = (i / 3) * 2 + (i % 3 == 2);
            used = q >= lo && q < hi;
        }
        CHECK(used || b[i] == SENTINEL, "%s: int %zu outside the data changed to %d", what, i,
              b[i]);
    }
}

/* ---- Gather / scatter ---- */

static void gather(int cnt, int sk, int rk, bool nb, bool in_place)
{
    int sc = cnt / IPE(sk), rc = cnt / IPE(rk);
    int *sb = tb_new(sk, (size_t)sc), *rb = tb_new(rk, (size_t)rc * size);

    for (int root = 0; root < size; root++) {
        bool ip = in_place && rank == root;
        tb_reset(rk, rb, (size_t)rc * size);
        for (int q = 0; q < cnt; q++) {
            sb[pos(sk, q)] = val(rank, root, q);
            if (ip) {
                rb[pos(rk, (size_t)root * cnt + q)] = val(root, root, q);
            }
        }
        COLL(nb, Gather, Igather, ip ? MPI_IN_PLACE : sb, sc, types[sk], rb, rc, types[rk], root,
             comm);
        if (rank != root) {
            tb_check_rest(rk, rb, (size_t)rc * size, 0, 0, "gather non-root recvbuf");
            continue;
        }
        for (int i = 0; i < size; i++) {
            for (int q = 0; q < cnt; q++) {
                int got = rb[pos(rk, (size_t)i * cnt + q)];
                CHECK(got == val(i, root, q), "gather cnt %d kinds %d/%d root %d from %d q %d: %d",
                      cnt, sk, rk, root, i, q, got);
            }
        }
        tb_check_rest(rk, rb, (size_t)rc * size, 0, (size_t)cnt * size, "gather gaps");
    }
    free(sb);
    free(rb);
}

static void scatter(int cnt, int sk, int rk, bool nb, bool in_place)
{
    int sc = cnt / IPE(sk), rc = cnt / IPE(rk);
    int *sb = tb_new(sk, (size_t)sc * size), *rb = tb_new(rk, (size_t)rc);

    for (int root = 0; root < size; root++) {
        bool ip = in_place && rank == root;
        tb_reset(rk, rb, (size_t)rc);
        if (rank == root) {
            for (int i = 0; i < size; i++) {
                for (int q = 0; q < cnt; q++) {
                    sb[pos(sk, (size_t)i * cnt + q)] = val(root, i, q);
                }
            }
        }
        COLL(nb, Scatter, Iscatter, sb, sc, types[sk], ip ? MPI_IN_PLACE : rb, rc, types[rk], root,
             comm);
        if (ip) {
            /* The root's block stays where it is, and recvbuf is not touched. */
            tb_check_rest(rk, rb, (size_t)rc, 0, 0, "scatter in-place recvbuf");
            for (int q = 0; q < cnt; q++) {
                CHECK(sb[pos(sk, (size_t)root * cnt + q)] == val(root, root, q),
                      "scatter in place q %d", q);
            }
            continue;
        }
        for (int q = 0; q < cnt; q++) {
            CHECK(rb[pos(rk, q)] == val(root, rank, q),
                  "scatter cnt %d kinds %d/%d root %d q %d: %d", cnt, sk, rk, root, q,
                  rb[pos(rk, q)]);
        }
        tb_check_rest(rk, rb, (size_t)rc, 0, (size_t)cnt, "scatter gaps");
    }
    free(sb);
    free(rb);
}

/* Uneven counts (some zero when base is 0) and displacements in reverse rank order with a
 * one-element hole between blocks. Returns the number of elements the layout spans. */
static int uneven_layout(int base, int *counts, int *displs)
{
    int off = 0;

    for (int i = size - 1; i >= 0; i--) {
        counts[i] = base + (i * 5 + 3) % 4; /* 3, 0, 1, 2, 3, ... plus base */
        displs[i] = off;
        off += counts[i] + 1;
    }
    return off;
}

static void gatherv(int base, int k, bool nb, bool in_place)
{
    int counts[16], displs[16];
    int span = uneven_layout(base, counts, displs), ipe = IPE(k);
    int *sb = tb_new(k, (size_t)counts[rank]), *rb = tb_new(k, (size_t)span);

    for (int root = 0; root < size; root++) {
        bool ip = in_place && rank == root;
        tb_reset(k, rb, (size_t)span);
        for (int q = 0; q < counts[rank] * ipe; q++) {
            sb[pos(k, q)] = val(rank, root, q);
            if (ip) {
                rb[pos(k, (size_t)displs[rank] * ipe + q)] = val(rank, root, q);
            }
        }
        COLL(nb, Gatherv, Igatherv, ip ? MPI_IN_PLACE : sb, counts[rank], types[k], rb, counts,
             displs, types[k], root, comm);
        for (int i = 0; rank == root && i < size; i++) {
            for (int q = 0; q < counts[i] * ipe; q++) {
                int got = rb[pos(k, (size_t)displs[i] * ipe + q)];
                CHECK(got == val(i, root, q), "gatherv base %d kind %d root %d from %d q %d: %d",
                      base, k, root, i, q, got);
            }
            /* The hole after block i stays untouched. */
            CHECK(rb[pos(k, (size_t)(displs[i] + counts[i]) * ipe)] == SENTINEL,
                  "gatherv hole after block %d", i);
        }
    }
    free(sb);
    free(rb);
}

static void scatterv(int base, int k, bool nb, bool in_place)
{
    int counts[16], displs[16];
    int span = uneven_layout(base, counts, displs), ipe = IPE(k);
    int *sb = tb_new(k, (size_t)span), *rb = tb_new(k, (size_t)counts[rank]);

    for (int root = 0; root < size; root++) {
        bool ip = in_place && rank == root;
        tb_reset(k, rb, (size_t)counts[rank]);
        for (int i = 0; rank == root && i < size; i++) {
            for (int q = 0; q < counts[i] * ipe; q++) {
                sb[pos(k, (size_t)displs[i] * ipe + q)] = val(root, i, q);
            }
        }
        COLL(nb, Scatterv, Iscatterv, sb, counts, displs, types[k], ip ? MPI_IN_PLACE : rb,
             counts[rank], types[k], root, comm);
        if (ip) {
            tb_check_rest(k, rb, (size_t)counts[rank], 0, 0, "scatterv in-place recvbuf");
            continue;
        }
        for (int q = 0; q < counts[rank] * ipe; q++) {
            CHECK(rb[pos(k, q)] == val(root, rank, q), "scatterv base %d kind %d root %d q %d: %d",
                  base, k, root, q, rb[pos(k, q)]);
        }
        tb_check_rest(k, rb, (size_t)counts[rank], 0, (size_t)counts[rank] * ipe, "scatterv gaps");
    }
    free(sb);
    free(rb);
}

/* ---- Allgather ---- */

static void allgather(int cnt, int sk, int rk, bool nb, bool in_place)
{
    int sc = cnt / IPE(sk), rc = cnt / IPE(rk);
    int *sb = tb_new(sk, (size_t)sc), *rb = tb_new(rk, (size_t)rc * size);

    for (int q = 0; q < cnt; q++) {
        sb[pos(sk, q)] = val(rank, 0, q);
        if (in_place) {
            rb[pos(rk, (size_t)rank * cnt + q)] = val(rank, 0, q);
        }
    }
    COLL(nb, Allgather, Iallgather, in_place ? MPI_IN_PLACE : sb, sc, types[sk], rb, rc, types[rk],
         comm);
    for (int i = 0; i < size; i++) {
        for (int q = 0; q < cnt; q++) {
            int got = rb[pos(rk, (size_t)i * cnt + q)];
            CHECK(got == val(i, 0, q), "allgather cnt %d kinds %d/%d from %d q %d: %d", cnt, sk, rk,
                  i, q, got);
        }
    }
    tb_check_rest(rk, rb, (size_t)rc * size, 0, (size_t)cnt * size, "allgather gaps");
    free(sb);
    free(rb);
}

static void allgatherv(int base, int k, bool nb, bool in_place)
{
    int counts[16], displs[16];
    int span = uneven_layout(base, counts, displs), ipe = IPE(k);
    int *sb = tb_new(k, (size_t)counts[rank]), *rb = tb_new(k, (size_t)span);

    for (int q = 0; q < counts[rank] * ipe; q++) {
        sb[pos(k, q)] = val(rank, 0, q);
        if (in_place) {
            rb[pos(k, (size_t)displs[rank] * ipe + q)] = val(rank, 0, q);
        }
    }
    COLL(nb, Allgatherv, Iallgatherv, in_place ? MPI_IN_PLACE : sb, counts[rank], types[k], rb,
         counts, displs, types[k], comm);
    for (int i = 0; i < size; i++) {
        for (int q = 0; q < counts[i] * ipe; q++) {
            int got = rb[pos(k, (size_t)displs[i] * ipe + q)];
            CHECK(got == val(i, 0, q), "allgatherv base %d kind %d from %d q %d: %d", base, k, i, q,
                  got);
        }
        CHECK(rb[pos(k, (size_t)(displs[i] + counts[i]) * ipe)] == SENTINEL,
              "allgatherv hole after block %d", i);
    }
    free(sb);
    free(rb);
}

/* ---- Alltoall ---- */

static void alltoall(int cnt, int sk, int rk, bool nb, bool in_place)
{
    int sc = cnt / IPE(sk), rc = cnt / IPE(rk);
    int *sb = tb_new(sk, (size_t)sc * size), *rb = tb_new(rk, (size_t)rc * size);

    for (int d = 0; d < size; d++) {
        for (int q = 0; q < cnt; q++) {
            sb[pos(sk, (size_t)d * cnt + q)] = val(rank, d, q);
            if (in_place) {
                rb[pos(rk, (size_t)d * cnt + q)] = val(rank, d, q);
            }
        }
    }
    COLL(nb, Alltoall, Ialltoall, in_place ? MPI_IN_PLACE : sb, sc, types[sk], rb, rc, types[rk],
         comm);
    for (int s = 0; s < size; s++) {
        for (int q = 0; q < cnt; q++) {
            int got = rb[pos(rk, (size_t)s * cnt + q)];
            CHECK(got == val(s, rank, q), "alltoall cnt %d kinds %d/%d from %d q %d: %d", cnt, sk,
                  rk, s, q, got);
        }
    }
    tb_check_rest(rk, rb, (size_t)rc * size, 0, (size_t)cnt * size, "alltoall gaps");
    free(sb);
    free(rb);
}

/* Elements rank s sends to rank d; symmetric when sym (what MPI_IN_PLACE needs). */
static int a2a_count(int base, int s, int d, bool sym)
{
    int c = sym ? (s + d) % 3 : (s + 2 * d) % 4;
    return base ? base + c : c;
}

/* Lays out counts[j] = a2a_count for peer j in reverse order with holes; returns the span. */
static int a2a_layout(int base, bool sending, bool sym, int *counts, int *displs)
{
    int off = 0;

    for (int j = size - 1; j >= 0; j--) {
        counts[j] = sending ? a2a_count(base, rank, j, sym) : a2a_count(base, j, rank, sym);
        displs[j] = off;
        off += counts[j] + 1;
    }
    return off;
}

static void alltoallv(int base, int k, bool nb, bool in_place)
{
    int sc[16], sd[16], rc[16], rd[16], ipe = IPE(k);
    int sspan = a2a_layout(base, true, in_place, sc, sd);
    int rspan = a2a_layout(base, false, in_place, rc, rd);
    int *sb = tb_new(k, (size_t)sspan), *rb = tb_new(k, (size_t)rspan);

    for (int d = 0; d < size; d++) {
        for (int q = 0; q < sc[d] * ipe; q++) {
            sb[pos(k, (size_t)sd[d] * ipe + q)] = val(rank, d, q);
            if (in_place) {
                rb[pos(k, (size_t)rd[d] * ipe + q)] = val(rank, d, q);
            }
        }
    }
    COLL(nb, Alltoallv, Ialltoallv, in_place ? MPI_IN_PLACE : sb, sc, sd, types[k], rb, rc, rd,
         types[k], comm);
    for (int s = 0; s < size; s++) {
        for (int q = 0; q < rc[s] * ipe; q++) {
            int got = rb[pos(k, (size_t)rd[s] * ipe + q)];
            CHECK(got == val(s, rank, q), "alltoallv base %d kind %d from %d q %d: %d", base, k, s,
                  q, got);
        }
        CHECK(rb[pos(k, (size_t)(rd[s] + rc[s]) * ipe)] == SENTINEL,
              "alltoallv hole after block %d", s);
    }
    free(sb);
    free(rb);
}

/* Alltoallw: the block for peer j is 2 * a2a_count logical ints, sent as type j % 2 and
 * received as type (j + 1) % 2 (in place: type j % 2 both ways), in one int buffer with byte
 * displacements; peers' blocks lie in reverse order. */
static void alltoallw(int base, bool nb, bool in_place)
{
    int sc[16], sd[16], rc[16], rd[16], soff = 0, roff = 0;
    MPI_Datatype st[16], rt[16];
    int *sb, *rb;

    for (int j = size - 1; j >= 0; j--) {
        int sk = j % 2, rk = in_place ? j % 2 : (j + 1) % 2;
        int sl = 2 * a2a_count(base, rank, j, in_place),
            rl = 2 * a2a_count(base, j, rank, in_place);
        st[j] = types[sk];
        rt[j] = types[rk];
        sc[j] = sl / IPE(sk);
        rc[j] = rl / IPE(rk);
        sd[j] = soff * (int)sizeof(int);
        rd[j] = roff * (int)sizeof(int);
        soff += sc[j] * STRIDE(sk) + 1;
        roff += rc[j] * STRIDE(rk) + 1;
    }
    sb = tb_new(0, (size_t)soff);
    rb = tb_new(0, (size_t)roff);
    for (int d = 0; d < size; d++) {
        int sk = d % 2, rk = in_place ? d % 2 : (d + 1) % 2;
        for (int q = 0; q < sc[d] * IPE(sk); q++) {
            sb[sd[d] / (int)sizeof(int) + pos(sk, q)] = val(rank, d, q);
        }
        for (int q = 0; in_place && q < rc[d] * IPE(rk); q++) {
            rb[rd[d] / (int)sizeof(int) + pos(rk, q)] = val(rank, d, q);
        }
    }
    COLL(nb, Alltoallw, Ialltoallw, in_place ? MPI_IN_PLACE : sb, sc, sd, st, rb, rc, rd, rt, comm);
    for (int s = 0; s < size; s++) {
        int rk = in_place ? s % 2 : (s + 1) % 2;
        for (int q = 0; q < rc[s] * IPE(rk); q++) {
            int got = rb[rd[s] / (int)sizeof(int) + pos(rk, q)];
            CHECK(got == val(s, rank, q), "alltoallw base %d from %d q %d: %d", base, s, q, got);
        }
        CHECK(rb[rd[s] / (int)sizeof(int) + rc[s] * STRIDE(rk)] == SENTINEL,
              "alltoallw hole after block %d", s);
        if (rk == 1) {
            for (int e = 0; e < rc[s]; e++) {
                CHECK(rb[rd[s] / (int)sizeof(int) + e * 3 + 1] == SENTINEL,
                      "alltoallw gap of element %d from %d", e, s);
            }
        }
    }
    free(sb);
    free(rb);
}

/* ---- Reductions ---- */

static int contrib(int r, int i)
{
    return (r + 1) * 7 + i % 13 - 6;
}

/* Reduce_scatter_block with MPI_SUM on type k (the vector type packs the operands). */
static void reduce_scatter_block(int cnt, int k, bool nb, bool in_place)
{
    int rcount = cnt / IPE(k), total = cnt * size;
    int *sb = tb_new(k, (size_t)rcount * size), *rb = tb_new(k, (size_t)rcount * size);

    for (int q = 0; q < total; q++) {
        sb[pos(k, q)] = contrib(rank, q);
        if (in_place) {
            rb[pos(k, q)] = contrib(rank, q);
        }
    }
    COLL(nb, Reduce_scatter_block, Ireduce_scatter_block, in_place ? MPI_IN_PLACE : sb, rb, rcount,
         types[k], MPI_SUM, comm);
    for (int q = 0; q < cnt; q++) {
        int e = 0, g = rank * cnt + q;
        for (int r = 0; r < size; r++) {
            e += contrib(r, g);
        }
        CHECK(rb[pos(k, q)] == e, "reduce_scatter_block cnt %d kind %d q %d: %d != %d", cnt, k, q,
              rb[pos(k, q)], e);
    }
    if (!in_place) {
        tb_check_rest(k, rb, (size_t)rcount * size, 0, (size_t)cnt, "reduce_scatter_block");
    }
    free(sb);
    free(rb);
}

static void reduce_scatter(int base, bool nb, bool in_place)
{
    int counts[16], displs[16], total = 0, off;
    int *sb, *rb;

    uneven_layout(base, counts, displs);
    for (int i = 0; i < size; i++) {
        total += counts[i];
    }
    sb = tb_new(0, (size_t)total);
    rb = tb_new(0, (size_t)total);
    for (int q = 0; q < total; q++) {
        sb[q] = contrib(rank, q);
        if (in_place) {
            rb[q] = contrib(rank, q);
        }
    }
    COLL(nb, Reduce_scatter, Ireduce_scatter, in_place ? MPI_IN_PLACE : sb, rb, counts, MPI_INT,
         MPI_SUM, comm);
    off = 0;
    for (int i = 0; i < rank; i++) {
        off += counts[i];
    }
    for (int q = 0; q < counts[rank]; q++) {
        int e = 0;
        for (int r = 0; r < size; r++) {
            e += contrib(r, off + q);
        }
        CHECK(rb[q] == e, "reduce_scatter base %d q %d: %d != %d", base, q, rb[q], e);
    }
    if (!in_place) {
        tb_check_rest(0, rb, (size_t)total, 0, (size_t)counts[rank], "reduce_scatter");
    }
    free(sb);
    free(rb);
}

/* x -> m x + c composed in rank order: associative, not commutative. */
struct affine {
    long long m, c;
};
static MPI_Datatype affine_t;
static MPI_Op compose_op;

static void compose(void *invec, void *inoutvec, int *len, MPI_Datatype *dt)
{
    struct affine *a = invec, *b = inoutvec;
    (void)dt;
    for (int i = 0; i < *len; i++) {
        b[i].c = b[i].m * a[i].c + b[i].c;
        b[i].m = b[i].m * a[i].m;
    }
}

static struct affine aff(int r, int i)
{
    return (struct affine){(r + i) % 3 + 1, r * 3 + i % 5 - 2};
}

/* The composition of ranks lo .. hi - 1 at index i, in rank order. */
static struct affine aff_range(int lo, int hi, int i)
{
    struct affine e = {1, 0};

    for (int r = lo; r < hi; r++) {
        struct affine x = aff(r, i);
        e.c = x.m * e.c + x.c;
        e.m = x.m * e.m;
    }
    return e;
}

static void affine_reduce_scatter(int cnt, bool nb, bool block)
{
    int counts[16];
    struct affine *sb = malloc(sizeof(*sb) * (size_t)(cnt * size + 1)), *rb;

    rb = malloc(sizeof(*rb) * (size_t)(cnt + 1));
    for (int i = 0; i < size; i++) {
        counts[i] = cnt;
    }
    for (int q = 0; q < cnt * size; q++) {
        sb[q] = aff(rank, q);
    }
    if (block) {
        COLL(nb, Reduce_scatter_block, Ireduce_scatter_block, sb, rb, cnt, affine_t, compose_op,
             comm);
    } else {
        COLL(nb, Reduce_scatter, Ireduce_scatter, sb, rb, counts, affine_t, compose_op, comm);
    }
    for (int q = 0; q < cnt; q++) {
        struct affine e = aff_range(0, size, rank * cnt + q);
        CHECK(rb[q].m == e.m && rb[q].c == e.c,
              "affine reduce_scatter q %d: (%lld,%lld) != "
              "(%lld,%lld)",
              q, rb[q].m, rb[q].c, e.m, e.c);
    }
    free(sb);
    free(rb);
}

static void scan_sum(int cnt, int k, bool nb, bool in_place, bool exclusive)
{
    int c = cnt / IPE(k);
    int *sb = tb_new(k, (size_t)c), *rb = tb_new(k, (size_t)c);

    for (int q = 0; q < cnt; q++) {
        sb[pos(k, q)] = contrib(rank, q);
        if (in_place) {
            rb[pos(k, q)] = contrib(rank, q);
        }
    }
    if (exclusive) {
        COLL(nb, Exscan, Iexscan, in_place ? MPI_IN_PLACE : sb, rb, c, types[k], MPI_SUM, comm);
    } else {
        COLL(nb, Scan, Iscan, in_place ? MPI_IN_PLACE : sb, rb, c, types[k], MPI_SUM, comm);
    }
    for (int q = 0; q < cnt; q++) {
        int e = 0;
        for (int r = 0; r < rank + !exclusive; r++) {
            e += contrib(r, q);
        }
        if (exclusive && rank == 0) {
            /* Rank 0's output is left alone. */
            e = in_place ? contrib(0, q) : SENTINEL;
        }
        CHECK(rb[pos(k, q)] == e, "%s cnt %d kind %d q %d: %d != %d", exclusive ? "exscan" : "scan",
              cnt, k, q, rb[pos(k, q)], e);
    }
    tb_check_rest(k, rb, (size_t)c, 0, (size_t)cnt, "scan gaps");
    free(sb);
    free(rb);
}

static void affine_scan(int cnt, bool nb, bool in_place, bool exclusive)
{
    struct affine *sb = malloc(sizeof(*sb) * (size_t)(cnt + 1));
    struct affine *rb = malloc(sizeof(*rb) * (size_t)(cnt + 1));

    for (int q = 0; q < cnt; q++) {
        sb[q] = aff(rank, q);
        rb[q] = in_place ? aff(rank, q) : (struct affine){-5, -5};
    }
    if (exclusive) {
        COLL(nb, Exscan, Iexscan, in_place ? MPI_IN_PLACE : sb, rb, cnt, affine_t, compose_op,
             comm);
    } else {
        COLL(nb, Scan, Iscan, in_place ? MPI_IN_PLACE : sb, rb, cnt, affine_t, compose_op, comm);
    }
    for (int q = 0; q < cnt; q++) {
        struct affine e = aff_range(0, rank + !exclusive, q);
        if (exclusive && rank == 0) {
            e = in_place ? aff(0, q) : (struct affine){-5, -5};
        }
        CHECK(rb[q].m == e.m && rb[q].c == e.c, "affine %s q %d: (%lld,%lld) != (%lld,%lld)",
              exclusive ? "exscan" : "scan", q, rb[q].m, rb[q].c, e.m, e.c);
    }
    free(sb);
    free(rb);
}

/* ---- Several non-blocking collectives in flight at once ---- */

static void overlapping(void)
{
    int a[16], b[16 * 16], c[16 * 16], d[16], e[16];
    MPI_Request q[4];

    for (int i = 0; i < size; i++) {
        a[i] = val(rank, i, 0);
    }
    d[0] = rank + 1;
    CHECK_MPI(MPI_Ialltoall(a, 1, MPI_INT, b, 1, MPI_INT, comm, &q[0]));
    CHECK_MPI(MPI_Iallgather(&rank, 1, MPI_INT, c, 1, MPI_INT, comm, &q[1]));
    CHECK_MPI(MPI_Iscan(d, e, 1, MPI_INT, MPI_SUM, comm, &q[2]));
    CHECK_MPI(MPI_Igather(&rank, 1, MPI_INT, c + size, 1, MPI_INT, size - 1, comm, &q[3]));
    CHECK_MPI(MPI_Waitall(4, q, MPI_STATUSES_IGNORE));
    for (int i = 0; i < size; i++) {
        CHECK(b[i] == val(i, rank, 0), "overlapped alltoall from %d: %d", i, b[i]);
        CHECK(c[i] == i, "overlapped allgather %d: %d", i, c[i]);
        CHECK(rank != size - 1 || c[size + i] == i, "overlapped gather %d", i);
    }
    CHECK(e[0] == (rank + 1) * (rank + 2) / 2, "overlapped scan %d", e[0]);
}

/* ---- Driver ---- */

/* Type pairs for the equal-count forms: int/int, vector/vector, and each mixed with int. */
static const int kinds[4][2] = {{0, 0}, {1, 1}, {0, 1}, {1, 0}};

static void equal_count_forms(void)
{
    int counts[] = {0, 2, BIG};

    for (int c = 0; c < 3; c++) {
        for (int kp = 0; kp < 4; kp++) {
            int sk = kinds[kp][0], rk = kinds[kp][1];
            bool nb = (kp + c) % 2 == 1;
            /* Large runs only for two type pairs, to keep the runs short on small hosts. */
            if (counts[c] == BIG && kp >= 2) {
                continue;
            }
            gather(counts[c], sk, rk, nb, false);
            gather(counts[c], sk, rk, !nb, kp < 2);
            scatter(counts[c], sk, rk, nb, false);
            scatter(counts[c], sk, rk, !nb, kp < 2);
            allgather(counts[c], sk, rk, nb, false);
            allgather(counts[c], sk, rk, !nb, kp < 2);
            alltoall(counts[c], sk, rk, nb, false);
            alltoall(counts[c], sk, rk, !nb, kp < 2);
        }
    }
    /* A single element of MPI_INT. */
    gather(1, 0, 0, true, false);
    scatter(1, 0, 0, false, true);
    allgather(1, 0, 0, true, true);
    alltoall(1, 0, 0, false, false);
}

static void vector_forms(void)
{
    int bases[] = {0, 1, BIG};

    for (int b = 0; b < 3; b++) {
        for (int k = 0; k < 2; k++) {
            for (int ip = 0; ip < 2; ip++) {
                bool nb = (b + k + ip) % 2 == 1;
                gatherv(bases[b], k, nb, ip);
                scatterv(bases[b], k, !nb, ip);
                allgatherv(bases[b], k, nb, ip);
                alltoallv(bases[b], k, !nb, ip);
            }
            alltoallw(bases[b], k == 1, false);
            alltoallw(bases[b], k == 0, true);
        }
    }
}

static void reductions(void)
{
    int counts[] = {0, 2, BIG};

    for (int c = 0; c < 3; c++) {
        for (int k = 0; k < 2; k++) {
            for (int ip = 0; ip < 2; ip++) {
                bool nb = (c + k + ip) % 2 == 1;
                reduce_scatter_block(counts[c], k, nb, ip);
                scan_sum(counts[c], k, nb, ip, false);
                scan_sum(counts[c], k, !nb, ip, true);
            }
        }
        reduce_scatter(c == 2 ? BIG : c, c == 1, false);
        reduce_scatter(c == 2 ? BIG : c, c != 1, true);
    }
    for (int nb = 0; nb < 2; nb++) {
        affine_reduce_scatter(1, nb, true);
        affine_reduce_scatter(3, nb, false);
        affine_reduce_scatter(BIG / 4, nb, nb);
        for (int ip = 0; ip < 2; ip++) {
            affine_scan(1, nb, ip, false);
            affine_scan(1, nb, ip, true);
            affine_scan(BIG / 4, nb, ip, nb);
        }
    }
}

/* The same collectives on a sub-communicator whose rank order differs from the world's
 * (split by parity, keys reversed), so group ranks, roots and world ranks all differ. */
static void sub_communicator(void)
{
    int wrank = rank, wsize = size;

    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, wrank % 2, wsize - wrank, &comm));
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    CHECK(rank == (wsize - 1 - wrank) / 2, "split rank %d", rank);
    gather(4, 1, 0, true, false);
    scatter(BIG, 0, 1, false, true);
    gatherv(1, 1, false, true);
    allgatherv(0, 0, true, false);
    alltoallv(1, 1, true, false);
    alltoallw(1, false, true);
    reduce_scatter(1, true, false);
    reduce_scatter_block(BIG, 1, true, false);
    reduce_scatter_block(BIG, 0, false, true);
    affine_reduce_scatter(2, false, true);
    affine_scan(3, true, false, true);
    scan_sum(2, 1, false, true, false);
    CHECK_MPI(MPI_Comm_free(&comm));
    comm = MPI_COMM_WORLD;
    rank = wrank;
    size = wsize;
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    comm = MPI_COMM_WORLD;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 16, "this test supports at most 16 ranks, not %d", size);
    types[0] = MPI_INT;
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &types[1]));
    CHECK_MPI(MPI_Type_commit(&types[1]));
    CHECK_MPI(MPI_Type_contiguous(2, MPI_LONG_LONG, &affine_t));
    CHECK_MPI(MPI_Type_commit(&affine_t));
    CHECK_MPI(MPI_Op_create(compose, 0, &compose_op));
    equal_count_forms();
    vector_forms();
    reductions();
    overlapping();
    sub_communicator();
    MPI_Op_free(&compose_op);
    MPI_Type_free(&affine_t);
    MPI_Type_free(&types[1]);
    return mrt_finish("mr_coll2");
}
