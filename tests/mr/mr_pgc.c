/*
 * mr_pgc.c - multi-rank test of the pgc_ API: every collective with every dtype (and every
 * reduce op where there is one), blocking and async, on the world and on a subgroup made
 * with pgc_new_group, against values computed here from the rank and the index; p2p; the
 * default store; monitored_barrier; and the error cases (a rank outside the group, a bad
 * dtype/op pair, local size errors, sizes that differ between ranks, a store key that
 * never appears, a rank that skips a monitored barrier). After each error the group must
 * still work.
 *
 * Run with 1 to 5 ranks: mpiexec -n 4 tests/mr/mr_pgc
 */
#include <pgc.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int me = -1, nw;
static long nchecks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        nchecks++;                                                                                 \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d rank %d: %s: ", __FILE__, __LINE__, me, #cond);            \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (last error: %s)\n", pgc_last_error());                              \
            fflush(stderr);                                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define CHECK_OK(call)                                                                             \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        CHECK(rc_ == PGC_OK, "%s returned %s", #call, pgc_status_name(rc_));                       \
    } while (0)

/* ---- element access, independent of the library ---- */

static const size_t esize[PGC_DTYPE_COUNT] = {1, 1, 4, 8, 2, 2, 4, 8};
static const char *const dname[PGC_DTYPE_COUNT] = {"int8",    "uint8",    "int32",   "int64",
                                                   "float16", "bfloat16", "float32", "float64"};
static const char *const oname[] = {"SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG"};

static bool is_float(pgc_dtype dt)
{
    return dt >= PGC_FLOAT16;
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1); /* round to nearest even (finite values only here) */
    return (uint16_t)(u >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* v, an integer a double holds exactly, modulo 2^64: the low bits that a sum or product
 * wrapping in an integer type keeps (mr_pgc's int32 product wraps from 64 ranks, 2^32; a
 * double out of an integer type's range does not convert). */
static uint64_t low_bits(double v)
{
    const double two64 = 18446744073709551616.0;
    double m = fmod(v, two64);

    return (uint64_t)(m < 0 ? m + two64 : m);
}

static void set_elem(void *buf, pgc_dtype dt, size_t i, double v)
{
    switch (dt) {
    case PGC_INT8:
        ((int8_t *)buf)[i] = (int8_t)(uint8_t)low_bits(v);
        break;
    case PGC_UINT8:
        ((uint8_t *)buf)[i] = (uint8_t)low_bits(v);
        break;
    case PGC_INT32:
        ((int32_t *)buf)[i] = (int32_t)(uint32_t)low_bits(v);
        break;
    case PGC_INT64:
        ((int64_t *)buf)[i] = (int64_t)low_bits(v);
        break;
    case PGC_FLOAT16:
        ((_Float16 *)buf)[i] = (_Float16)(float)v;
        break;
    case PGC_BFLOAT16:
        ((uint16_t *)buf)[i] = to_bf16((float)v);
        break;
    case PGC_FLOAT32:
        ((float *)buf)[i] = (float)v;
        break;
    default:
        ((double *)buf)[i] = v;
        break;
    }
}

static double get_elem(const void *buf, pgc_dtype dt, size_t i)
{
    switch (dt) {
    case PGC_INT8:
        return ((const int8_t *)buf)[i];
    case PGC_UINT8:
        return ((const uint8_t *)buf)[i];
    case PGC_INT32:
        return ((const int32_t *)buf)[i];
    case PGC_INT64:
        return (double)((const int64_t *)buf)[i];
    case PGC_FLOAT16:
        return (double)((const _Float16 *)buf)[i];
    case PGC_BFLOAT16:
        return from_bf16(((const uint16_t *)buf)[i]);
    case PGC_FLOAT32:
        return ((const float *)buf)[i];
    default:
        return ((const double *)buf)[i];
    }
}

/* v rounded to dtype (as the library must store it). */
static double in_dtype(pgc_dtype dt, double v)
{
    unsigned char tmp[8];
    set_elem(tmp, dt, 0, v);
    return get_elem(tmp, dt, 0);
}

/* ---- the values each rank contributes ---- */

static double contrib(pgc_reduce_op op, int rank, size_t i)
{
    if (op == PGC_PRODUCT) {
        return 1 + (double)((rank + i) % 2); /* 2^(ranks/2): wraps int8 from 16 ranks */
    }
    if (op == PGC_BAND || op == PGC_BOR || op == PGC_BXOR) {
        return (double)((rank * 37 + i * 11 + 5) & 0x7f);
    }
    return (double)((rank * 7 + i * 3) % 11 + 1);
}

/* v as the integer type dt holds it: an integer sum wraps in its type (AVG sums in the
 * type and then divides, truncating, as NCCL's ncclAvg does; mr_pgc at 12 ranks or more
 * wraps int8). */
static int64_t wrap_int(pgc_dtype dt, int64_t v)
{
    switch (dt) {
    case PGC_INT8:
        return (int8_t)(uint8_t)v;
    case PGC_UINT8:
        return (uint8_t)v;
    case PGC_INT32:
        return (int32_t)(uint32_t)v;
    default:
        return v;
    }
}

/* The reduction over n ranks (group ranks 0..n-1, whose values use their world ranks). */
static double expected(pgc_reduce_op op, pgc_dtype dt, const int *world, int n, size_t i)
{
    double acc = contrib(op, world[0], i);
    int64_t bits = (int64_t)acc;

    for (int r = 1; r < n; r++) {
        double v = contrib(op, world[r], i);
        switch (op) {
        case PGC_PRODUCT:
            acc *= v;
            break;
        case PGC_MIN:
            acc = v < acc ? v : acc;
            break;
        case PGC_MAX:
            acc = v > acc ? v : acc;
            break;
        case PGC_BAND:
            bits &= (int64_t)v;
            break;
        case PGC_BOR:
            bits |= (int64_t)v;
            break;
        case PGC_BXOR:
            bits ^= (int64_t)v;
            break;
        default:
            acc += v;
            break;
        }
    }
    if (op == PGC_BAND || op == PGC_BOR || op == PGC_BXOR) {
        return (double)bits;
    }
    if (op == PGC_AVG) {
        if (!is_float(dt)) {
            return (double)(wrap_int(dt, (int64_t)acc) / n);
        }
        acc = dt == PGC_FLOAT64 ? acc / n : (double)((float)acc / (float)n);
    }
    return in_dtype(dt, acc);
}

static bool op_valid(pgc_reduce_op op, pgc_dtype dt)
{
    return !(is_float(dt) && (op == PGC_BAND || op == PGC_BOR || op == PGC_BXOR));
}

static void *xmalloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    CHECK(p != NULL, "out of memory");
    return p;
}

/* A test group: its pgc handle and its ranks' world ranks. */
struct tgroup {
    pgc_group *g; /* NULL: the world (the calls' default) */
    int n, rank;
    int *world;
    const char *name;
};

static void fill(void *buf, pgc_dtype dt, pgc_reduce_op op, int world_rank, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        set_elem(buf, dt, i, contrib(op, world_rank, i));
    }
}

static void check_reduced(const void *buf, pgc_dtype dt, pgc_reduce_op op, const struct tgroup *t,
                          size_t n, size_t offset, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double got = get_elem(buf, dt, i), want = expected(op, dt, t->world, t->n, i + offset);
        CHECK(got == want, "%s %s %s on %s: element %zu is %g, expected %g", what, dname[dt],
              oname[op], t->name, i, got, want);
    }
}

/* ---- reductions ---- */

static void test_all_reduce(const struct tgroup *t, pgc_dtype dt, pgc_reduce_op op, size_t n,
                            int async)
{
    void *buf = xmalloc(n * esize[dt]);
    pgc_tensor x = pgc_host_tensor(buf, n, dt);
    pgc_work *w = NULL;

    fill(buf, dt, op, me, n);
    CHECK_OK(pgc_all_reduce(&x, op, t->g, async, &w));
    if (async) {
        CHECK(w != NULL, "no work");
        CHECK_OK(pgc_work_wait(w, 0));
        CHECK(pgc_work_is_completed(w) == 1, "not completed after wait");
        CHECK(pgc_work_status(w) == PGC_OK, "status %d", pgc_work_status(w));
        pgc_work_free(w);
    } else {
        CHECK(w == NULL, "blocking call returned a work");
    }
    check_reduced(buf, dt, op, t, n, 0, "all_reduce");
    free(buf);
}

static void test_reduce(const struct tgroup *t, pgc_dtype dt, pgc_reduce_op op, size_t n)
{
    void *buf = xmalloc(n * esize[dt]);
    pgc_tensor x = pgc_host_tensor(buf, n, dt);

    for (int root = 0; root < t->n; root++) {
        fill(buf, dt, op, me, n);
        CHECK_OK(pgc_reduce(&x, root, op, t->g, 0, NULL));
        if (t->rank == root) {
            check_reduced(buf, dt, op, t, n, 0, "reduce");
        } else {
            for (size_t i = 0; i < n; i++) {
                CHECK(get_elem(buf, dt, i) == in_dtype(dt, contrib(op, me, i)),
                      "reduce changed a non-root's tensor at %zu", i);
            }
        }
    }
    free(buf);
}

/* Rank i's block for rank j: the contributions at indexes j*n .. j*n+n-1. */
static void test_reduce_scatter(const struct tgroup *t, pgc_dtype dt, pgc_reduce_op op, size_t n)
{
    size_t bytes = n * esize[dt];
    char *in = xmalloc(bytes * (size_t)t->n), *out = xmalloc(bytes);
    pgc_tensor *list = xmalloc(sizeof(pgc_tensor) * (size_t)t->n);
    pgc_tensor o = pgc_host_tensor(out, n, dt), x = pgc_host_tensor(in, n * (size_t)t->n, dt);
    pgc_work *w;

    fill(in, dt, op, me, n * (size_t)t->n);
    CHECK_OK(pgc_reduce_scatter_tensor(&o, &x, op, t->g, 1, &w));
    CHECK_OK(pgc_work_wait(w, 0));
    pgc_work_free(w);
    check_reduced(out, dt, op, t, n, (size_t)t->rank * n, "reduce_scatter_tensor");
    for (int j = 0; j < t->n; j++) {
        list[j] = pgc_host_tensor(in + (size_t)j * bytes, n, dt);
    }
    memset(out, 0, bytes);
    CHECK_OK(pgc_reduce_scatter(&o, list, op, t->g, 0, NULL));
    check_reduced(out, dt, op, t, n, (size_t)t->rank * n, "reduce_scatter");
    free(in);
    free(out);
    free(list);
}

static void test_reductions(const struct tgroup *t)
{
    static const size_t sizes[] = {1, 13};

    for (int dt = 0; dt < PGC_DTYPE_COUNT; dt++) {
        for (int op = 0; op < PGC_REDUCE_OP_COUNT; op++) {
            if (!op_valid(op, dt)) {
                continue;
            }
            for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
                test_all_reduce(t, dt, op, sizes[k], (int)k);
                test_reduce(t, dt, op, sizes[k]);
                test_reduce_scatter(t, dt, op, sizes[k]);
            }
        }
    }
    /* Large enough for the rendezvous protocol and the ring algorithm. */
    test_all_reduce(t, PGC_FLOAT32, PGC_SUM, 40000, 1);
    test_all_reduce(t, PGC_FLOAT16, PGC_AVG, 40000, 0);
    test_all_reduce(t, PGC_BFLOAT16, PGC_SUM, 40000, 0);
    test_all_reduce(t, PGC_INT64, PGC_MAX, 40000, 0);
    test_reduce_scatter(t, PGC_FLOAT64, PGC_SUM, 5000);
}

/* ---- data movement ---- */

/* The value of element i of rank r's data in a movement test. */
static double mv(int r, size_t i)
{
    return (double)((r * 13 + i * 5) % 97);
}

static void fill_mv(void *buf, pgc_dtype dt, int r, size_t n, size_t off)
{
    for (size_t i = 0; i < n; i++) {
        set_elem(buf, dt, i, mv(r, i + off));
    }
}

static void check_mv(const void *buf, pgc_dtype dt, int r, size_t n, size_t off, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        double got = get_elem(buf, dt, i), want = in_dtype(dt, mv(r, i + off));
        CHECK(got == want, "%s %s: element %zu from rank %d is %g, expected %g", what, dname[dt], i,
              r, got, want);
    }
}

static void test_broadcast(const struct tgroup *t, pgc_dtype dt, size_t n)
{
    void *buf = xmalloc(n * esize[dt]);
    pgc_tensor x = pgc_host_tensor(buf, n, dt);

    for (int root = 0; root < t->n; root++) {
        memset(buf, 0, n * esize[dt]);
        if (t->rank == root) {
            fill_mv(buf, dt, t->world[root], n, 0);
        }
        CHECK_OK(pgc_broadcast(&x, root, t->g, 0, NULL));
        check_mv(buf, dt, t->world[root], n, 0, "broadcast");
    }
    free(buf);
}

static pgc_tensor *list_of(char *base, int k, size_t n, pgc_dtype dt)
{
    pgc_tensor *l = xmalloc(sizeof(pgc_tensor) * (size_t)k);

    for (int i = 0; i < k; i++) {
        l[i] = pgc_host_tensor(base + (size_t)i * n * esize[dt], n, dt);
    }
    return l;
}

/* A list whose tensors lie in base in reverse order (tensor i at block k - 1 - i): not end to
 * end, so pgc gathers into and scatters from scratch. */
static pgc_tensor *list_reversed(char *base, int k, size_t n, pgc_dtype dt)
{
    pgc_tensor *l = list_of(base, k, n, dt);

    for (int i = 0; i < k; i++) {
        l[i].data = base + (size_t)(k - 1 - i) * n * esize[dt];
    }
    return l;
}

/* Runs a started call to the end: blocking (*w untouched) or async (waits for *w, which
 * the call set: passed by address, read after the call). */
static void finish_call(int rc, int async, pgc_work **w, const char *what)
{
    CHECK(rc == PGC_OK, "%s returned %s (%s)", what, pgc_status_name(rc), pgc_last_error());
    if (rc == PGC_OK && async) {
        CHECK(pgc_work_wait(*w, 0) == PGC_OK, "%s: wait: %s", what, pgc_last_error());
        pgc_work_free(*w);
    }
}

/* Scatter and gather, blocking and async, with the root's list end to end and not. */
static void test_scatter_gather(const struct tgroup *t, pgc_dtype dt, size_t n)
{
    size_t bytes = n * esize[dt];
    char *all = xmalloc(bytes * (size_t)t->n), *one = xmalloc(bytes);
    pgc_tensor o = pgc_host_tensor(one, n, dt);

    for (int mode = 0; mode < 4; mode++) {
        bool rev = mode & 1;
        int async = mode >> 1;
        pgc_tensor *l = rev ? list_reversed(all, t->n, n, dt) : list_of(all, t->n, n, dt);
        for (int root = 0; root < t->n; root++) {
            pgc_work *w = NULL;
            /* scatter: block j of the root's buffer is mv(root, j*n + i); tensor r of the
             * list is block r, or block n - 1 - r when reversed */
            size_t block = rev ? (size_t)(t->n - 1 - t->rank) : (size_t)t->rank;
            fill_mv(all, dt, t->world[root], n * (size_t)t->n, 0);
            memset(one, 0, bytes);
            finish_call(pgc_scatter(&o, t->rank == root ? l : NULL, root, t->g, async, &w),
                        async, &w, "pgc_scatter");
            check_mv(one, dt, t->world[root], n, block * n, "scatter");
            /* gather: rank j sends mv(j, i) */
            fill_mv(one, dt, me, n, 0);
            memset(all, 0, bytes * (size_t)t->n);
            finish_call(pgc_gather(&o, t->rank == root ? l : NULL, root, t->g, async, &w),
                        async, &w, "pgc_gather");
            for (int j = 0; j < t->n && t->rank == root; j++) {
                check_mv(l[j].data, dt, t->world[j], n, 0, "gather");
            }
        }
        free(l);
    }
    free(all);
    free(one);
}

/* Tensors of no elements may have no data: the list forms still run (they once took the
 * list's NULL buffer for a failed allocation). */
static void test_list_forms_of_nothing(const struct tgroup *t)
{
    pgc_tensor *l = xmalloc(sizeof(pgc_tensor) * (size_t)t->n);
    pgc_tensor o = pgc_host_tensor(NULL, 0, PGC_INT32);

    for (int i = 0; i < t->n; i++) {
        l[i] = pgc_host_tensor(NULL, 0, PGC_INT32);
    }
    for (int async = 0; async < 2; async++) {
        pgc_work *w = NULL;
        finish_call(pgc_gather(&o, t->rank == 0 ? l : NULL, 0, t->g, async, &w), async, &w,
                    "pgc_gather of nothing");
        finish_call(pgc_scatter(&o, t->rank == 0 ? l : NULL, 0, t->g, async, &w), async, &w,
                    "pgc_scatter of nothing");
        finish_call(pgc_all_gather(l, &o, t->g, async, &w), async, &w, "pgc_all_gather of nothing");
    }
    free(l);
}

static void test_all_gather(const struct tgroup *t, pgc_dtype dt, size_t n)
{
    size_t bytes = n * esize[dt];
    char *all = xmalloc(bytes * (size_t)t->n), *one = xmalloc(bytes);
    pgc_tensor o = pgc_host_tensor(one, n, dt);
    pgc_tensor big = pgc_host_tensor(all, n * (size_t)t->n, dt);

    fill_mv(one, dt, me, n, 0);
    for (int mode = 0; mode < 4; mode++) {
        int async = mode >> 1;
        pgc_tensor *l = mode & 1 ? list_reversed(all, t->n, n, dt) : list_of(all, t->n, n, dt);
        pgc_work *w = NULL;
        memset(all, 0, bytes * (size_t)t->n);
        finish_call(pgc_all_gather(l, &o, t->g, async, &w), async, &w, "pgc_all_gather");
        for (int j = 0; j < t->n; j++) {
            check_mv(l[j].data, dt, t->world[j], n, 0, "all_gather");
        }
        free(l);
    }
    memset(all, 0, bytes * (size_t)t->n);
    CHECK_OK(pgc_all_gather_into_tensor(&big, &o, t->g, 0, NULL));
    for (int j = 0; j < t->n; j++) {
        check_mv(all + (size_t)j * bytes, dt, t->world[j], n, 0, "all_gather_into_tensor");
    }
    free(all);
    free(one);
}

/* Uneven all_to_all: rank a sends (a + b) % 3 + 1 elements (times scale) to rank b, with
 * values mv(a, 1000 * b + i). */
static size_t a2a_count(int a, int b, size_t scale)
{
    return (size_t)((a + b) % 3 + 1) * scale;
}

static void test_all_to_all(const struct tgroup *t, pgc_dtype dt, size_t scale)
{
    size_t *ss = xmalloc(sizeof(size_t) * (size_t)t->n),
           *rs = xmalloc(sizeof(size_t) * (size_t)t->n);
    size_t sn = 0, rn = 0, es = esize[dt];
    char *in, *out, *p;
    pgc_tensor *il = xmalloc(sizeof(pgc_tensor) * (size_t)t->n);
    pgc_tensor *ol = xmalloc(sizeof(pgc_tensor) * (size_t)t->n);

    for (int j = 0; j < t->n; j++) {
        ss[j] = a2a_count(t->rank, j, scale);
        rs[j] = a2a_count(j, t->rank, scale);
        sn += ss[j];
        rn += rs[j];
    }
    in = xmalloc(sn * es);
    out = xmalloc(rn * es);
    p = in;
    for (int j = 0; j < t->n; j++) {
        fill_mv(p, dt, me, ss[j], 1000 * (size_t)j);
        il[j] = pgc_host_tensor(p, ss[j], dt);
        p += ss[j] * es;
    }
    pgc_tensor x = pgc_host_tensor(in, sn, dt), y = pgc_host_tensor(out, rn, dt);
    CHECK_OK(pgc_all_to_all_single(&y, &x, rs, ss, t->g, 0, NULL));
    p = out;
    for (int j = 0; j < t->n; j++) {
        check_mv(p, dt, t->world[j], rs[j], 1000 * (size_t)t->rank, "all_to_all_single uneven");
        ol[j] = pgc_host_tensor(p, rs[j], dt);
        p += rs[j] * es;
    }
    memset(out, 0, rn * es);
    CHECK_OK(pgc_all_to_all(ol, il, t->g, 0, NULL));
    for (int j = 0; j < t->n; j++) {
        check_mv(ol[j].data, dt, t->world[j], rs[j], 1000 * (size_t)t->rank, "all_to_all list");
    }
    free(in);
    free(out);
    /* Equal splits: block j of rank a holds mv(a, 1000 * j + i). */
    in = xmalloc(scale * (size_t)t->n * es);
    out = xmalloc(scale * (size_t)t->n * es);
    for (int j = 0; j < t->n; j++) {
        fill_mv(in + (size_t)j * scale * es, dt, me, scale, 1000 * (size_t)j);
    }
    x = pgc_host_tensor(in, scale * (size_t)t->n, dt);
    y = pgc_host_tensor(out, scale * (size_t)t->n, dt);
    CHECK_OK(pgc_all_to_all_single(&y, &x, NULL, NULL, t->g, 0, NULL));
    for (int j = 0; j < t->n; j++) {
        check_mv(out + (size_t)j * scale * es, dt, t->world[j], scale, 1000 * (size_t)t->rank,
                 "all_to_all_single equal");
    }
    free(in);
    free(out);
    free(ss);
    free(rs);
    free(il);
    free(ol);
}

static void test_movement(const struct tgroup *t)
{
    for (int dt = 0; dt < PGC_DTYPE_COUNT; dt++) {
        test_broadcast(t, dt, 7);
        test_scatter_gather(t, dt, 5);
        test_all_gather(t, dt, 6);
        test_all_to_all(t, dt, 2);
    }
    test_broadcast(t, PGC_FLOAT64, 30000);
    test_scatter_gather(t, PGC_INT32, 20000);
    test_list_forms_of_nothing(t);
    test_all_gather(t, PGC_FLOAT32, 20000);
    test_all_to_all(t, PGC_UINT8, 30000);
    CHECK_OK(pgc_barrier(t->g, 0, NULL));
    pgc_work *w;
    CHECK_OK(pgc_barrier(t->g, 1, &w));
    CHECK_OK(pgc_work_wait(w, 0));
    pgc_work_free(w);
}

/* ---- point-to-point ---- */

static void test_p2p(const struct tgroup *t)
{
    int next = (t->rank + 1) % t->n, prev = (t->rank - 1 + t->n) % t->n;
    int32_t out[64], in[64];
    pgc_tensor o = pgc_host_tensor(out, 64, PGC_INT32), i = pgc_host_tensor(in, 64, PGC_INT32);
    pgc_work *ws, *wr;

    for (int k = 0; k < 64; k++) {
        out[k] = t->rank * 1000 + k;
    }
    CHECK_OK(pgc_irecv(&i, prev, t->g, 3, &wr));
    CHECK_OK(pgc_isend(&o, next, t->g, 3, &ws));
    CHECK_OK(pgc_work_wait(ws, 0));
    CHECK_OK(pgc_work_wait(wr, 0));
    CHECK(pgc_work_source(wr) == prev, "source %d, expected %d", pgc_work_source(wr), prev);
    pgc_work_free(ws);
    pgc_work_free(wr);
    for (int k = 0; k < 64; k++) {
        CHECK(in[k] == prev * 1000 + k, "p2p element %d is %d", k, in[k]);
    }
    /* Blocking, from any source: every rank sends to rank 0, which learns who sent. */
    if (t->rank == 0) {
        int distinct = 0;
        char *seen = calloc((size_t)t->n, 1);
        CHECK(seen != NULL, "no memory for %d ranks", t->n);
        for (int k = 1; seen && k < t->n; k++) {
            int src = pgc_recv(&i, PGC_ANY_SOURCE, t->g, 4);
            CHECK(src >= 1 && src < t->n, "recv returned %d", src);
            CHECK(in[0] == src * 1000, "message from %d holds %d", src, in[0]);
            if (src >= 1 && src < t->n && !seen[src]) {
                seen[src] = 1;
                distinct++;
            }
        }
        CHECK(distinct == t->n - 1, "%d distinct senders of %d", distinct, t->n - 1);
        free(seen);
    } else {
        CHECK_OK(pgc_send(&o, 0, t->g, 4));
    }
    /* A batch: exchange with both neighbours at once. */
    int32_t a[8] = {0}, b[8] = {0};
    pgc_p2p_op ops[4] = {
        {PGC_IRECV, pgc_host_tensor(a, 8, PGC_INT32), prev, t->g, 5},
        {PGC_IRECV, pgc_host_tensor(b, 8, PGC_INT32), next, t->g, 6},
        {PGC_ISEND, pgc_host_tensor(out, 8, PGC_INT32), next, t->g, 5},
        {PGC_ISEND, pgc_host_tensor(out, 8, PGC_INT32), prev, t->g, 6},
    };
    pgc_work *w;
    CHECK_OK(pgc_batch_isend_irecv(ops, 4, &w));
    CHECK_OK(pgc_work_wait(w, 0));
    pgc_work_free(w);
    CHECK(a[7] == prev * 1000 + 7 && b[7] == next * 1000 + 7, "batch got %d %d", a[7], b[7]);
}

/* ---- errors ---- */

static void expect_error(int rc, int want, const char *call, const char *word)
{
    CHECK(rc == want, "%s returned %s, expected %s", call, pgc_status_name(rc),
          pgc_status_name(want));
    CHECK(strstr(pgc_last_error(), call) != NULL, "message \"%s\" does not name %s",
          pgc_last_error(), call);
    CHECK(strstr(pgc_last_error(), word) != NULL, "message \"%s\" does not say \"%s\"",
          pgc_last_error(), word);
}

/* Errors every rank detects by itself: nothing is started, the group still works. */
static void test_local_errors(const struct tgroup *t)
{
    float f[8] = {0};
    int32_t k[16] = {0};
    pgc_tensor x = pgc_host_tensor(f, 8, PGC_FLOAT32), big = pgc_host_tensor(k, 16, PGC_INT32);
    pgc_tensor small = pgc_host_tensor(k, 1, PGC_INT32), bad = x;
    pgc_work *w = (pgc_work *)&w;

    expect_error(pgc_all_reduce(&x, PGC_BAND, t->g, 0, NULL), PGC_ERR_INVALID_OP, "pgc_all_reduce",
                 "BAND");
    expect_error(pgc_broadcast(&x, t->n, t->g, 0, NULL), PGC_ERR_INVALID_RANK, "pgc_broadcast",
                 "root");
    expect_error(pgc_send(&x, t->n + 3, t->g, 0), PGC_ERR_INVALID_RANK, "pgc_send", "peer");
    expect_error(pgc_all_gather_into_tensor(&small, &big, t->g, 1, &w), PGC_ERR_INVALID_COUNT,
                 "pgc_all_gather_into_tensor", "elements");
    CHECK(w == NULL, "a failed call left a work");
    bad.dtype = (pgc_dtype)42;
    expect_error(pgc_all_reduce(&bad, PGC_SUM, t->g, 0, NULL), PGC_ERR_INVALID_DTYPE,
                 "pgc_all_reduce", "dtype");
    bad = x;
    bad.device = PGC_DEVICE_CUDA;
    expect_error(pgc_all_reduce(&bad, PGC_SUM, t->g, 0, NULL), PGC_ERR_UNSUPPORTED,
                 "pgc_all_reduce", "CUDA");
    expect_error(pgc_all_reduce(&x, (pgc_reduce_op)99, t->g, 0, NULL), PGC_ERR_INVALID_OP,
                 "pgc_all_reduce", "op");
    expect_error(pgc_get_global_rank(t->g, t->n), PGC_ERR_INVALID_RANK, "pgc_get_global_rank",
                 "rank");
    test_all_reduce(t, PGC_INT32, PGC_SUM, 3, 0); /* still healthy */
}

/* Sizes that differ between ranks. The root scatters 8 elements per rank to ranks that
 * expect 4: each receiver gets PGC_ERR_MISMATCH at once, the root succeeds. pgc_scatter runs
 * MPI_Scatter's binomial tree, in which from 4 ranks on a rank may get its block forwarded
 * by another receiver, which fails first and forwards nothing: it would wait out the
 * timeout, as under MPI_Scatter. So the scatter case runs on groups of 2 and 3, where every
 * receiver is a child of the root. Then with the DETAIL check every rank of a mismatched
 * all_reduce gets PGC_ERR_MISMATCH. */
static void test_mismatch(const struct tgroup *t)
{
    int32_t buf[8 * 8] = {0}, out[8] = {0};
    pgc_tensor *l = list_of((char *)buf, t->n, 8, PGC_INT32);
    pgc_tensor o = pgc_host_tensor(out, t->rank == 0 ? 8 : 4, PGC_INT32);
    int rc;

    if (t->n < 2) {
        free(l);
        return;
    }
    /* Twice (groups of 2 and 3 only, see above): as it comes, and with the data surely arriving before the receive is posted
     * (the root sends a p2p note after scattering; a receiver takes the note first, and
     * messages from one peer arrive in order, so the scatter's data waits as unexpected). */
    for (int late = 0; late < 2 && t->n <= 3; late++) {
        int32_t note = 0;
        pgc_tensor nt = pgc_host_tensor(&note, 1, PGC_INT32);
        if (late && t->rank != 0) {
            CHECK(pgc_recv(&nt, 0, t->g, 9) == 0, "note");
        }
        rc = pgc_scatter(&o, t->rank == 0 ? l : NULL, 0, t->g, 0, NULL);
        if (t->rank == 0) {
            CHECK_OK(rc);
            for (int r = 1; late && r < t->n; r++) {
                CHECK_OK(pgc_send(&nt, r, t->g, 9));
            }
        } else {
            expect_error(rc, PGC_ERR_MISMATCH, "pgc_scatter", "different sizes");
        }
    }
    test_all_reduce(t, PGC_INT64, PGC_SUM, 5, 0);
    pgc_set_debug_level(PGC_DEBUG_DETAIL);
    pgc_tensor x = pgc_host_tensor(out, (size_t)(t->rank % 2) + 2, PGC_INT32);
    rc = pgc_all_reduce(&x, PGC_SUM, t->g, 0, NULL);
    expect_error(rc, PGC_ERR_MISMATCH, "pgc_all_reduce", "elements");
    test_all_reduce(t, PGC_INT64, PGC_SUM, 5, 0);
    pgc_set_debug_level(PGC_DEBUG_OFF);
    free(l);
}

/* ---- store, monitored barrier ---- */

static void test_store(void)
{
    pgc_store *s = pgc_default_store(), *p;
    char key[32], val[32];
    int64_t total = 0;
    void *v;
    size_t len;

    CHECK(s != NULL, "no default store");
    CHECK_OK(pgc_store_prefix_create(s, "mr_pgc", &p));
    snprintf(key, sizeof(key), "rank%d", me);
    snprintf(val, sizeof(val), "hello from %d", me);
    CHECK_OK(pgc_store_set(p, key, val, strlen(val)));
    CHECK_OK(pgc_store_add(p, "count", 1, &total));
    for (int r = 0; r < nw; r++) {
        snprintf(key, sizeof(key), "rank%d", r);
        const char *keys[1] = {key};
        CHECK_OK(pgc_store_wait(p, keys, 1, 0));
        CHECK_OK(pgc_store_get(p, key, &v, &len));
        snprintf(val, sizeof(val), "hello from %d", r);
        CHECK(len == strlen(val) && memcmp(v, val, len) == 0, "value %s", (char *)v);
        free(v);
    }
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    CHECK_OK(pgc_store_add(p, "count", 0, &total));
    CHECK(total == nw, "count %lld", (long long)total);
    /* A key that never appears: a timeout error, promptly. */
    const char *never[1] = {"never-set"};
    expect_error(pgc_store_wait(p, never, 1, 0.3), PGC_ERR_TIMEOUT, "pgc_store_wait", "never-set");
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    pgc_store_free(p);
}

static void test_monitored_barrier(void)
{
    pgc_group *dup;

    CHECK_OK(pgc_monitored_barrier(NULL, 0, 1));
    if (nw < 2) {
        return;
    }
    /* On a group of its own (the rank that skips leaves that group's sequence behind). */
    CHECK_OK(pgc_new_group(NULL, 0, &dup));
    if (me != nw - 1) {
        int rc = pgc_monitored_barrier(dup, 1.0, 1);
        char want[32];
        snprintf(want, sizeof(want), "%d did not arrive", nw - 1);
        expect_error(rc, PGC_ERR_TIMEOUT, "pgc_monitored_barrier", want);
    }
    CHECK_OK(pgc_barrier(NULL, 0, NULL));
    pgc_destroy_group(dup);
}

/* ---- groups ---- */

static void run_suite(const struct tgroup *t)
{
    test_reductions(t);
    test_movement(t);
    test_p2p(t);
    test_local_errors(t);
    test_mismatch(t);
}

/* The even world ranks in descending order: a group whose order differs from the world's. */
static void test_subgroup(void)
{
    int n = (nw + 1) / 2, ranks[64];
    struct tgroup t = {.n = n, .world = ranks, .name = "subgroup"};

    CHECK(n <= 64, "this test supports at most 128 ranks, not %d", nw);

    for (int i = 0; i < n; i++) {
        ranks[i] = 2 * (n - 1 - i);
    }
    CHECK_OK(pgc_new_group(ranks, n, &t.g));
    if (me % 2) {
        CHECK(t.g == NULL, "a non-member got a group");
        return;
    }
    CHECK(t.g != NULL, "a member got no group");
    t.rank = pgc_group_rank(t.g);
    CHECK(t.rank == n - 1 - me / 2, "group rank %d", t.rank);
    CHECK(pgc_group_size(t.g) == n, "group size %d", pgc_group_size(t.g));
    CHECK(pgc_get_global_rank(t.g, t.rank) == me, "global rank");
    CHECK(pgc_get_group_rank(t.g, me) == t.rank, "group rank");
    if (nw > 1) {
        expect_error(pgc_get_group_rank(t.g, 1), PGC_ERR_INVALID_RANK, "pgc_get_group_rank",
                     "not a member");
    }
    run_suite(&t);
    CHECK_OK(pgc_destroy_group(t.g));
}

static void test_split(void)
{
    pgc_group *g;
    int64_t v = me;
    pgc_tensor x = pgc_host_tensor(&v, 1, PGC_INT64);
    int64_t want = 0;

    CHECK_OK(pgc_split_group(NULL, me % 2, -me, &g));
    CHECK(g != NULL, "split gave no group");
    CHECK(pgc_group_size(g) == (nw + 1 - me % 2) / 2, "split size %d", pgc_group_size(g));
    CHECK_OK(pgc_all_reduce(&x, PGC_SUM, g, 0, NULL));
    for (int r = me % 2; r < nw; r += 2) {
        want += r;
    }
    CHECK(v == want, "split sum %lld, expected %lld", (long long)v, (long long)want);
    pgc_destroy_group(g);
}

int main(void)
{
    int world[64];
    struct tgroup t = {.g = NULL, .world = world, .name = "world"};

    CHECK_OK(pgc_init_process_group(NULL));
    CHECK(pgc_is_initialized() == 1, "not initialized");
    me = pgc_get_rank();
    nw = pgc_get_world_size();
    CHECK(nw >= 1 && nw <= 64 && me >= 0 && me < nw, "rank %d of %d", me, nw);
    CHECK(pgc_group_rank(NULL) == me && pgc_group_size(pgc_group_world()) == nw, "world group");
    for (int i = 0; i < nw; i++) {
        world[i] = i;
    }
    t.n = nw;
    t.rank = me;
    run_suite(&t);
    test_subgroup();
    test_split();
    test_store();
    test_monitored_barrier();
    CHECK_OK(pgc_destroy_process_group());
    CHECK(pgc_is_initialized() == 0, "still initialized");
    printf("mr_pgc: rank %d: %ld checks passed (world of %d)\n", me, nchecks, nw);
    return 0;
}
