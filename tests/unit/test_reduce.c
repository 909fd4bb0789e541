/*
 * test_reduce.c - the element datatypes and local reduction kernels of pg_core.
 *
 * The expected values come from a scalar reference written here from the definitions
 * (integers in 64-bit unsigned arithmetic truncated to the width, 16-bit floats decoded
 * with ldexp and encoded by searching the two neighbouring representable values), never
 * from the kernels' macros.
 */
#include "config.h"

#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "pg_dtype.h"
#include "pgc_status.h"

/* ---- A fixed-seed generator, so that failures reproduce. ---- */

static uint64_t rng_state;

static void rng_seed(uint64_t seed)
{
    rng_state = seed;
}

static uint64_t rng_next(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}

/* ---- Reference 16-bit float codecs: from the definitions of the formats. ---- */

struct half_format {
    int mant_bits;     /* 10 for binary16, 7 for bfloat16 */
    int exp_bits;      /* 5, 8 */
    int bias;          /* 15, 127 */
    uint16_t inf_bits; /* 0x7c00, 0x7f80 */
};

static const struct half_format fmt_f16 = {10, 5, 15, 0x7c00};
static const struct half_format fmt_bf16 = {7, 8, 127, 0x7f80};

static double ref_decode(const struct half_format *f, uint16_t h)
{
    int e = (h >> f->mant_bits) & ((1 << f->exp_bits) - 1);
    int m = h & ((1 << f->mant_bits) - 1);
    double mag;

    if (e == (1 << f->exp_bits) - 1) {
        mag = m ? NAN : INFINITY;
    } else if (e == 0) {
        mag = ldexp(m, 1 - f->bias - f->mant_bits);
    } else {
        mag = ldexp(m + (1 << f->mant_bits), e - f->bias - f->mant_bits);
    }
    return (h & 0x8000) ? -mag : mag;
}

/* The magnitude of pattern h, where the Inf pattern stands for the next power of two (the
 * value IEEE rounding uses to decide overflow). */
static double ref_magnitude(const struct half_format *f, uint16_t h)
{
    if (h == f->inf_bits) {
        return ldexp(1.0, (1 << f->exp_bits) - 1 - f->bias);
    }
    return ref_decode(f, h);
}

/* Round-to-nearest-even encoding by search: find the largest pattern not above |x|, then pick
 * the nearer of it and the next one (distances are exact in double), the even one on ties. */
static uint16_t ref_encode(const struct half_format *f, float x)
{
    uint16_t sign = signbit(x) ? 0x8000 : 0;
    double ax = fabs((double)x);
    uint32_t lo = 0;
    uint32_t hi = f->inf_bits;

    if (isnan(x)) {
        return sign | f->inf_bits | 1; /* the tests only check that it is a NaN */
    }
    if (ax >= ref_magnitude(f, f->inf_bits)) {
        return sign | f->inf_bits;
    }
    while (hi - lo > 1) { /* invariant: mag(lo) <= ax < mag(hi) */
        uint32_t mid = (lo + hi) / 2;
        if (ref_magnitude(f, (uint16_t)mid) <= ax) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    double dlo = ax - ref_magnitude(f, (uint16_t)lo);
    double dhi = ref_magnitude(f, (uint16_t)hi) - ax;
    if (dlo < dhi || (dlo == dhi && (lo & 1) == 0)) {
        return sign | (uint16_t)lo;
    }
    return sign | (uint16_t)hi;
}

static bool is_half_nan(const struct half_format *f, uint16_t h)
{
    return (h & f->inf_bits) == f->inf_bits && (h & ~(f->inf_bits | 0x8000)) != 0;
}

static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static uint32_t bits_from_f32(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

/* ---- The rules of MPI-3.1 section 5.9.2, restated as lists. ---- */

static bool is_int(enum pg_dtype dt)
{
    return dt >= PG_INT8 && dt <= PG_UINT64;
}

static bool is_half(enum pg_dtype dt)
{
    return dt == PG_FLOAT16 || dt == PG_BFLOAT16;
}

static bool is_real(enum pg_dtype dt)
{
    return is_half(dt) || dt == PG_FLOAT || dt == PG_DOUBLE || dt == PG_LONG_DOUBLE;
}

static bool is_complex(enum pg_dtype dt)
{
    return dt == PG_C_FLOAT_COMPLEX || dt == PG_C_DOUBLE_COMPLEX || dt == PG_C_LONG_DOUBLE_COMPLEX;
}

static bool is_pair(enum pg_dtype dt)
{
    return dt >= PG_FLOAT_INT && dt <= PG_LONG_DOUBLE_INT;
}

static bool expected_valid(enum pg_op op, enum pg_dtype dt)
{
    switch (op) {
    case PG_OP_SUM:
    case PG_OP_PROD:
    case PG_OP_AVG:
        return is_int(dt) || is_real(dt) || is_complex(dt);
    case PG_OP_MAX:
    case PG_OP_MIN:
        return is_int(dt) || is_real(dt);
    case PG_OP_LAND:
    case PG_OP_LOR:
    case PG_OP_LXOR:
        return is_int(dt) || dt == PG_BOOL;
    case PG_OP_BAND:
    case PG_OP_BOR:
    case PG_OP_BXOR:
        return is_int(dt) || dt == PG_BOOL || dt == PG_BYTE;
    case PG_OP_MAXLOC:
    case PG_OP_MINLOC:
        return is_pair(dt);
    default:
        return false;
    }
}

/* ---- Reference of one element: out = a op b. ---- */

static int int_width(enum pg_dtype dt)
{
    static const int w[] = {1, 1, 2, 2, 4, 4, 8, 8};
    return w[dt - PG_INT8];
}

static bool int_signed(enum pg_dtype dt)
{
    return ((dt - PG_INT8) & 1) == 0;
}

/* Loads an integer element, sign-extended to 64 bits for the signed types. */
static uint64_t load_int(enum pg_dtype dt, const void *p)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    bool s = int_signed(dt);

    switch (int_width(dt)) {
    case 1:
        memcpy(&u8, p, 1);
        return s ? (uint64_t)(int64_t)(int8_t)u8 : u8;
    case 2:
        memcpy(&u16, p, 2);
        return s ? (uint64_t)(int64_t)(int16_t)u16 : u16;
    case 4:
        memcpy(&u32, p, 4);
        return s ? (uint64_t)(int64_t)(int32_t)u32 : u32;
    default:
        memcpy(&u64, p, 8);
        return u64;
    }
}

/* Stores the low bytes of v: the value modulo 2^width, as two's complement wrap-around. */
static void store_int(enum pg_dtype dt, void *p, uint64_t v)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;

    switch (int_width(dt)) {
    case 1:
        memcpy(p, &u8, 1);
        break;
    case 2:
        memcpy(p, &u16, 2);
        break;
    case 4:
        memcpy(p, &u32, 4);
        break;
    default:
        memcpy(p, &v, 8);
        break;
    }
}

static uint64_t ref_int_op(enum pg_op op, uint64_t a, uint64_t b, bool s)
{
    bool a_gt_b = s ? (int64_t)a > (int64_t)b : a > b;
    bool a_lt_b = s ? (int64_t)a < (int64_t)b : a < b;

    switch (op) {
    case PG_OP_SUM:
    case PG_OP_AVG:
        return a + b;
    case PG_OP_PROD:
        return a * b;
    case PG_OP_MAX:
        return a_gt_b ? a : b;
    case PG_OP_MIN:
        return a_lt_b ? a : b;
    case PG_OP_LAND:
        return a != 0 && b != 0;
    case PG_OP_LOR:
        return a != 0 || b != 0;
    case PG_OP_LXOR:
        return (a != 0) != (b != 0);
    case PG_OP_BAND:
        return a & b;
    case PG_OP_BOR:
        return a | b;
    case PG_OP_BXOR:
        return a ^ b;
    default:
        fail_msg("no integer reference for op %d", op);
        return 0;
    }
}

static uint8_t ref_bool_op(enum pg_op op, uint8_t a, uint8_t b)
{
    switch (op) {
    case PG_OP_LAND:
    case PG_OP_BAND:
        return a != 0 && b != 0;
    case PG_OP_LOR:
    case PG_OP_BOR:
        return a != 0 || b != 0;
    default:
        return (a != 0) != (b != 0);
    }
}

static uint8_t ref_byte_op(enum pg_op op, uint8_t a, uint8_t b)
{
    switch (op) {
    case PG_OP_BAND:
        return a & b;
    case PG_OP_BOR:
        return a | b;
    default:
        return a ^ b;
    }
}

/* Real floats in their own type: one IEEE operation, so the result is exactly defined. MAX
 * and MIN follow the documented (a > b ? a : b) rule, with a from `in`. */
#define REF_REAL(T)                                                                                \
    do {                                                                                           \
        T a, b, r;                                                                                 \
        memcpy(&a, pa, sizeof(T));                                                                 \
        memcpy(&b, pb, sizeof(T));                                                                 \
        if (op == PG_OP_SUM || op == PG_OP_AVG) {                                                  \
            r = a + b;                                                                             \
        } else if (op == PG_OP_PROD) {                                                             \
            r = a * b;                                                                             \
        } else if (op == PG_OP_MAX) {                                                              \
            r = a > b ? a : b;                                                                     \
        } else {                                                                                   \
            r = a < b ? a : b;                                                                     \
        }                                                                                          \
        memcpy(out, &r, sizeof(T));                                                                \
    } while (0)

/* Complex as two parts (re, im), with the textbook product. */
#define REF_COMPLEX(T)                                                                             \
    do {                                                                                           \
        T a[2], b[2], r[2];                                                                        \
        memcpy(a, pa, sizeof(a));                                                                  \
        memcpy(b, pb, sizeof(b));                                                                  \
        if (op == PG_OP_PROD) {                                                                    \
            r[0] = a[0] * b[0] - a[1] * b[1];                                                      \
            r[1] = a[0] * b[1] + a[1] * b[0];                                                      \
        } else {                                                                                   \
            r[0] = a[0] + b[0];                                                                    \
            r[1] = a[1] + b[1];                                                                    \
        }                                                                                          \
        memcpy(out, r, sizeof(r));                                                                 \
    } while (0)

/* MAXLOC/MINLOC: the better value wins; on equal values the smaller index. */
#define REF_PAIR(T)                                                                                \
    do {                                                                                           \
        T a, b, r;                                                                                 \
        memcpy(&a, pa, sizeof(T));                                                                 \
        memcpy(&b, pb, sizeof(T));                                                                 \
        memcpy(&r, pb, sizeof(T));                                                                 \
        bool a_better = op == PG_OP_MAXLOC ? a.v > b.v : a.v < b.v;                                \
        bool tie = !(a.v < b.v) && !(b.v < a.v);                                                   \
        r.v = a_better ? a.v : b.v;                                                                \
        r.i = a_better ? a.i : (tie && a.i < b.i ? a.i : b.i);                                     \
        memcpy(out, &r, sizeof(T));                                                                \
    } while (0)

static void ref_half(enum pg_op op, const struct half_format *f, const void *pa, const void *pb,
                     void *out)
{
    uint16_t ha, hb, hr;
    memcpy(&ha, pa, 2);
    memcpy(&hb, pb, 2);
    float a = (float)ref_decode(f, ha);
    float b = (float)ref_decode(f, hb);
    float r;

    if (op == PG_OP_SUM || op == PG_OP_AVG) {
        r = a + b;
    } else if (op == PG_OP_PROD) {
        r = a * b;
    } else if (op == PG_OP_MAX) {
        r = a > b ? a : b;
    } else {
        r = a < b ? a : b;
    }
    hr = ref_encode(f, r);
    memcpy(out, &hr, 2);
}

static void ref_pair(enum pg_op op, enum pg_dtype dt, const void *pa, const void *pb, void *out)
{
    switch (dt) {
    case PG_FLOAT_INT:
        REF_PAIR(struct pg_float_int);
        break;
    case PG_DOUBLE_INT:
        REF_PAIR(struct pg_double_int);
        break;
    case PG_LONG_INT:
        REF_PAIR(struct pg_long_int);
        break;
    case PG_2INT:
        REF_PAIR(struct pg_2int);
        break;
    case PG_SHORT_INT:
        REF_PAIR(struct pg_short_int);
        break;
    default:
        REF_PAIR(struct pg_long_double_int);
        break;
    }
}

static void ref_element(enum pg_op op, enum pg_dtype dt, const void *pa, const void *pb, void *out)
{
    uint8_t a8, b8, r8;

    if (is_int(dt)) {
        store_int(dt, out, ref_int_op(op, load_int(dt, pa), load_int(dt, pb), int_signed(dt)));
        return;
    }
    switch (dt) {
    case PG_BOOL:
    case PG_BYTE:
        memcpy(&a8, pa, 1);
        memcpy(&b8, pb, 1);
        r8 = dt == PG_BOOL ? ref_bool_op(op, a8, b8) : ref_byte_op(op, a8, b8);
        memcpy(out, &r8, 1);
        break;
    case PG_FLOAT16:
        ref_half(op, &fmt_f16, pa, pb, out);
        break;
    case PG_BFLOAT16:
        ref_half(op, &fmt_bf16, pa, pb, out);
        break;
    case PG_FLOAT:
        REF_REAL(float);
        break;
    case PG_DOUBLE:
        REF_REAL(double);
        break;
    case PG_LONG_DOUBLE:
        REF_REAL(long double);
        break;
    case PG_C_FLOAT_COMPLEX:
        REF_COMPLEX(float);
        break;
    case PG_C_DOUBLE_COMPLEX:
        REF_COMPLEX(double);
        break;
    case PG_C_LONG_DOUBLE_COMPLEX:
        REF_COMPLEX(long double);
        break;
    default:
        ref_pair(op, dt, pa, pb, out);
        break;
    }
}

/* ---- Comparing results. ---- */

static bool close_enough(long double got, long double want, long double rel)
{
    return fabsl(got - want) <= rel * (fabsl(want) + 1e-30L);
}

#define PARTS_MATCH(T, N, REL)                                                                     \
    do {                                                                                           \
        T g[N], w[N];                                                                              \
        memcpy(g, got, sizeof(g));                                                                 \
        memcpy(w, want, sizeof(w));                                                                \
        for (int k = 0; k < (N); k++) {                                                            \
            if (!(g[k] == w[k] || close_enough(g[k], w[k], (REL)))) {                              \
                return false;                                                                      \
            }                                                                                      \
        }                                                                                          \
        return true;                                                                               \
    } while (0)

#define PAIR_MATCHES(T)                                                                            \
    do {                                                                                           \
        T g, w;                                                                                    \
        memcpy(&g, got, sizeof(T));                                                                \
        memcpy(&w, want, sizeof(T));                                                               \
        return g.v == w.v && g.i == w.i;                                                           \
    } while (0)

/* Exact everywhere except complex products, where the kernel may use the C library's
 * multiplication (Annex G) and so differ from the textbook formula by a rounding. Long double
 * values are compared by value because their 16 bytes include 6 bytes of padding. */
static bool element_matches(enum pg_op op, enum pg_dtype dt, const void *got, const void *want)
{
    bool prod = op == PG_OP_PROD;

    switch (dt) {
    case PG_LONG_DOUBLE:
        PARTS_MATCH(long double, 1, 0.0L);
    case PG_C_FLOAT_COMPLEX:
        PARTS_MATCH(float, 2, prod ? 1e-6L : 0.0L);
    case PG_C_DOUBLE_COMPLEX:
        PARTS_MATCH(double, 2, prod ? 1e-15L : 0.0L);
    case PG_C_LONG_DOUBLE_COMPLEX:
        PARTS_MATCH(long double, 2, prod ? 1e-18L : 0.0L);
    case PG_FLOAT_INT:
        PAIR_MATCHES(struct pg_float_int);
    case PG_DOUBLE_INT:
        PAIR_MATCHES(struct pg_double_int);
    case PG_LONG_INT:
        PAIR_MATCHES(struct pg_long_int);
    case PG_2INT:
        PAIR_MATCHES(struct pg_2int);
    case PG_SHORT_INT:
        PAIR_MATCHES(struct pg_short_int);
    case PG_LONG_DOUBLE_INT:
        PAIR_MATCHES(struct pg_long_double_int);
    default:
        return memcmp(got, want, pg_dtype_size(dt)) == 0;
    }
}

/* ---- Random inputs: a quarter zeros (for the logical ops), small pair values (for ties). ---- */

static double random_real(void)
{
    uint64_t r = rng_next();
    if (r % 8 == 0) {
        return 0.0;
    }
    /* Multiples of 1/1024 in [-977, 977]: exact in every float type. */
    return (double)((int64_t)((r >> 8) % 2000001) - 1000000) / 1024.0;
}

static uint16_t random_finite_half(const struct half_format *f)
{
    uint16_t h = (uint16_t)rng_next();
    if ((h & f->inf_bits) == f->inf_bits) {
        h ^= 0x4000; /* clear the top exponent bit (bit 14 in both formats): now finite */
    }
    return h;
}

#define STORE_AS(T, expr)                                                                          \
    do {                                                                                           \
        T v_ = (T)(expr);                                                                          \
        memcpy(p, &v_, sizeof(T));                                                                 \
    } while (0)

#define STORE_PAIR(T)                                                                              \
    do {                                                                                           \
        T v_;                                                                                      \
        memset(&v_, 0, sizeof(v_));                                                                \
        v_.v = (rng_next() >> 8) % 4;                                                              \
        v_.i = (int)((rng_next() >> 8) % 100);                                                     \
        memcpy(p, &v_, sizeof(T));                                                                 \
    } while (0)

static void random_pair(enum pg_dtype dt, void *p)
{
    switch (dt) {
    case PG_FLOAT_INT:
        STORE_PAIR(struct pg_float_int);
        break;
    case PG_DOUBLE_INT:
        STORE_PAIR(struct pg_double_int);
        break;
    case PG_LONG_INT:
        STORE_PAIR(struct pg_long_int);
        break;
    case PG_2INT:
        STORE_PAIR(struct pg_2int);
        break;
    case PG_SHORT_INT:
        STORE_PAIR(struct pg_short_int);
        break;
    default:
        STORE_PAIR(struct pg_long_double_int);
        break;
    }
}

static void random_element(enum pg_dtype dt, void *p)
{
    static const uint8_t bools[] = {0, 1, 0, 1, 2, 0xff}; /* any non-zero byte is true */
    uint64_t r = rng_next();

    if (is_int(dt)) {
        store_int(dt, p, r % 4 == 0 ? 0 : rng_next());
        return;
    }
    switch (dt) {
    case PG_BOOL:
        STORE_AS(uint8_t, bools[r % 6]);
        break;
    case PG_BYTE:
        STORE_AS(uint8_t, r);
        break;
    case PG_FLOAT16:
        STORE_AS(uint16_t, random_finite_half(&fmt_f16));
        break;
    case PG_BFLOAT16:
        STORE_AS(uint16_t, random_finite_half(&fmt_bf16));
        break;
    case PG_FLOAT:
        STORE_AS(float, random_real());
        break;
    case PG_DOUBLE:
        STORE_AS(double, random_real());
        break;
    case PG_LONG_DOUBLE:
        memset(p, 0, sizeof(long double));
        STORE_AS(long double, random_real());
        break;
    case PG_C_FLOAT_COMPLEX: {
        float v[2] = {(float)random_real(), (float)random_real()};
        memcpy(p, v, sizeof(v));
        break;
    }
    case PG_C_DOUBLE_COMPLEX: {
        double v[2] = {random_real(), random_real()};
        memcpy(p, v, sizeof(v));
        break;
    }
    case PG_C_LONG_DOUBLE_COMPLEX: {
        long double v[2] = {random_real(), random_real()};
        memcpy(p, v, sizeof(v));
        break;
    }
    default:
        random_pair(dt, p);
        break;
    }
}

/* Reduces `count` random elements starting `offset` elements into the buffers (so that the
 * vector loops start unaligned and leave remainders), and checks each against the reference. */
static void check_reduce(enum pg_op op, enum pg_dtype dt, size_t count, size_t offset)
{
    size_t sz = pg_dtype_size(dt);
    size_t total = count + offset;
    unsigned char *in = calloc(total, sz);
    unsigned char *io = calloc(total, sz);
    unsigned char *want = calloc(total, sz);

    assert_non_null(in);
    assert_non_null(io);
    assert_non_null(want);
    for (size_t i = offset; i < total; i++) {
        random_element(dt, in + i * sz);
        random_element(dt, io + i * sz);
        ref_element(op, dt, in + i * sz, io + i * sz, want + i * sz);
    }
    assert_int_equal(pg_reduce_local(in + offset * sz, io + offset * sz, count, dt, op), PGC_OK);
    for (size_t i = offset; i < total; i++) {
        if (!element_matches(op, dt, io + i * sz, want + i * sz)) {
            fail_msg("%s on %s, count %zu: element %zu differs from the reference", pg_op_name(op),
                     pg_dtype_name(dt), count, i - offset);
        }
    }
    free(in);
    free(io);
    free(want);
}

/* ---- Tests: validity and names. ---- */

static void test_op_validity_follows_the_mpi_rules_for_every_pair(void **state)
{
    for (int op = 0; op < PG_OP_COUNT; op++) {
        for (int dt = 0; dt < PG_DTYPE_COUNT; dt++) {
            if (pg_op_valid(op, dt) != expected_valid(op, dt)) {
                fail_msg("pg_op_valid(%s, %s) is %d", pg_op_name(op), pg_dtype_name(dt),
                         pg_op_valid(op, dt));
            }
        }
    }
    assert_false(pg_op_valid(PG_OP_COUNT, PG_INT32));
    assert_false(pg_op_valid(PG_OP_SUM, PG_DTYPE_NONE));
    assert_false(pg_op_valid(PG_OP_SUM, PG_DTYPE_COUNT));
}

static void test_dtype_sizes_match_the_c_types_and_pair_structs(void **state)
{
    assert_int_equal(pg_dtype_size(PG_INT8), 1);
    assert_int_equal(pg_dtype_size(PG_UINT64), 8);
    assert_int_equal(pg_dtype_size(PG_FLOAT16), 2);
    assert_int_equal(pg_dtype_size(PG_BFLOAT16), 2);
    assert_int_equal(pg_dtype_size(PG_LONG_DOUBLE), sizeof(long double));
    assert_int_equal(pg_dtype_size(PG_BOOL), sizeof(_Bool));
    assert_int_equal(pg_dtype_size(PG_C_DOUBLE_COMPLEX), 2 * sizeof(double));
    assert_int_equal(pg_dtype_size(PG_C_LONG_DOUBLE_COMPLEX), 2 * sizeof(long double));
    /* The MPI pair types as laid out by the C ABI of x86-64 and aarch64. */
    assert_int_equal(pg_dtype_size(PG_FLOAT_INT), 8);
    assert_int_equal(pg_dtype_size(PG_DOUBLE_INT), 16);
    assert_int_equal(pg_dtype_size(PG_LONG_INT), 16);
    assert_int_equal(pg_dtype_size(PG_2INT), 8);
    assert_int_equal(pg_dtype_size(PG_SHORT_INT), 8);
    assert_int_equal(pg_dtype_size(PG_LONG_DOUBLE_INT), 2 * sizeof(long double));
    assert_int_equal(pg_dtype_size(PG_BYTE), 1);
    assert_int_equal(pg_dtype_size(PG_DTYPE_NONE), 0);
    assert_int_equal(pg_dtype_size(PG_DTYPE_COUNT), 0);
}

static void test_every_dtype_and_op_has_a_distinct_name(void **state)
{
    assert_string_equal(pg_dtype_name(PG_INT32), "int32");
    assert_string_equal(pg_dtype_name(PG_FLOAT16), "float16");
    assert_string_equal(pg_dtype_name(PG_DOUBLE_INT), "double_int");
    assert_string_equal(pg_dtype_name(PG_2INT), "2int");
    assert_string_equal(pg_dtype_name(PG_DTYPE_NONE), "invalid");
    assert_string_equal(pg_op_name(PG_OP_SUM), "sum");
    assert_string_equal(pg_op_name(PG_OP_MINLOC), "minloc");
    assert_string_equal(pg_op_name(PG_OP_COUNT), "invalid");
    for (int a = 0; a < PG_DTYPE_COUNT; a++) {
        for (int b = a + 1; b < PG_DTYPE_COUNT; b++) {
            assert_string_not_equal(pg_dtype_name(a), pg_dtype_name(b));
        }
    }
    for (int a = 0; a < PG_OP_COUNT; a++) {
        for (int b = a + 1; b < PG_OP_COUNT; b++) {
            assert_string_not_equal(pg_op_name(a), pg_op_name(b));
        }
    }
}

/* ---- Tests: the kernels. ---- */

static void test_every_valid_op_and_dtype_matches_the_scalar_reference(void **state)
{
    static const size_t counts[] = {1, 7, 1000};

    rng_seed(0x5eed1234abcdULL);
    for (int op = 0; op < PG_OP_COUNT; op++) {
        for (int dt = 0; dt < PG_DTYPE_COUNT; dt++) {
            if (!pg_op_valid(op, dt)) {
                continue;
            }
            for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
                check_reduce(op, dt, counts[c], 0);
            }
            check_reduce(op, dt, 1000, 3);
        }
    }
}

static void test_every_invalid_pair_fails_and_leaves_inout_untouched(void **state)
{
    unsigned char in[64], io[64], saved[64];

    memset(in, 0x5a, sizeof(in));
    for (size_t i = 0; i < sizeof(io); i++) {
        io[i] = (unsigned char)(i * 7 + 1);
    }
    memcpy(saved, io, sizeof(io));
    for (int op = 0; op < PG_OP_COUNT; op++) {
        for (int dt = 0; dt < PG_DTYPE_COUNT; dt++) {
            if (pg_op_valid(op, dt)) {
                continue;
            }
            assert_int_equal(pg_reduce_local(in, io, 64 / pg_dtype_size(dt), dt, op),
                             PGC_ERR_INVALID_OP);
            assert_memory_equal(io, saved, sizeof(io));
        }
    }
}

static void test_out_of_range_dtype_or_op_is_rejected(void **state)
{
    int in = 1, io = 2;

    assert_int_equal(pg_reduce_local(&in, &io, 1, PG_DTYPE_NONE, PG_OP_SUM), PGC_ERR_INVALID_DTYPE);
    assert_int_equal(pg_reduce_local(&in, &io, 1, PG_DTYPE_COUNT, PG_OP_SUM),
                     PGC_ERR_INVALID_DTYPE);
    assert_int_equal(pg_reduce_local(&in, &io, 1, PG_INT32, PG_OP_COUNT), PGC_ERR_INVALID_OP);
    assert_int_equal(pg_reduce_local(&in, &io, 1, PG_INT32, (enum pg_op)(-1)), PGC_ERR_INVALID_OP);
    assert_int_equal(io, 2);
}

static void test_null_buffers_fail_unless_count_is_zero(void **state)
{
    int io = 2;

    assert_int_equal(pg_reduce_local(NULL, &io, 1, PG_INT32, PG_OP_SUM), PGC_ERR_BUFFER);
    assert_int_equal(pg_reduce_local(&io, NULL, 1, PG_INT32, PG_OP_SUM), PGC_ERR_BUFFER);
    assert_int_equal(pg_reduce_local(NULL, NULL, 0, PG_INT32, PG_OP_SUM), PGC_OK);
    assert_int_equal(io, 2);
}

static void test_signed_integer_sum_and_prod_wrap_around(void **state)
{
    int32_t in[2] = {INT32_MAX, INT32_MIN};
    int32_t io[2] = {1, -1};
    int64_t in64 = INT64_MAX, io64 = 2;

    assert_int_equal(pg_reduce_local(in, io, 2, PG_INT32, PG_OP_SUM), PGC_OK);
    assert_int_equal(io[0], INT32_MIN);
    assert_int_equal(io[1], INT32_MAX);
    assert_int_equal(pg_reduce_local(&in64, &io64, 1, PG_INT64, PG_OP_PROD), PGC_OK);
    assert_true(io64 == -2);
}

static void test_logical_ops_give_zero_or_one(void **state)
{
    int32_t in[3] = {5, 0, -7};
    int32_t io[3] = {-3, 9, 0};

    assert_int_equal(pg_reduce_local(in, io, 3, PG_INT32, PG_OP_LAND), PGC_OK);
    assert_int_equal(io[0], 1);
    assert_int_equal(io[1], 0);
    assert_int_equal(io[2], 0);
    io[0] = -3, io[1] = 9, io[2] = 0;
    assert_int_equal(pg_reduce_local(in, io, 3, PG_INT32, PG_OP_LXOR), PGC_OK);
    assert_int_equal(io[0], 0);
    assert_int_equal(io[1], 1);
    assert_int_equal(io[2], 1);
}

static void test_float_max_keeps_nan_from_inout_and_ignores_nan_from_in(void **state)
{
    float in[2] = {NAN, 1.0f};
    float io[2] = {1.0f, NAN};
    uint16_t hin[2] = {0x7e00, 0x3c00}; /* NaN, 1.0 */
    uint16_t hio[2] = {0x3c00, 0x7e00};

    assert_int_equal(pg_reduce_local(in, io, 2, PG_FLOAT, PG_OP_MAX), PGC_OK);
    assert_true(io[0] == 1.0f);
    assert_true(isnan(io[1]));
    assert_int_equal(pg_reduce_local(hin, hio, 2, PG_FLOAT16, PG_OP_MIN), PGC_OK);
    assert_int_equal(hio[0], 0x3c00);
    assert_true(is_half_nan(&fmt_f16, hio[1]));
}

static void test_maxloc_and_minloc_keep_the_smaller_index_on_ties(void **state)
{
    struct pg_2int in[3] = {{5, 7}, {5, 2}, {6, 9}};
    struct pg_2int io[3] = {{5, 3}, {5, 3}, {6, 1}};
    struct pg_double_int din[2] = {{-1.5, 4}, {2.0, 8}};
    struct pg_double_int dio[2] = {{-1.5, 10}, {1.0, 0}};

    assert_int_equal(pg_reduce_local(in, io, 3, PG_2INT, PG_OP_MAXLOC), PGC_OK);
    assert_int_equal(io[0].i, 3);
    assert_int_equal(io[1].i, 2);
    assert_int_equal(io[2].i, 1);
    assert_int_equal(pg_reduce_local(din, dio, 2, PG_DOUBLE_INT, PG_OP_MINLOC), PGC_OK);
    assert_true(dio[0].v == -1.5 && dio[0].i == 4);
    assert_true(dio[1].v == 1.0 && dio[1].i == 0);
}

/* Packs n (v, i) pairs of short_int as MPI's signature does: 2 bytes of value, 4 of index. */
static void pack_short_int(const struct pg_short_int *p, size_t n, unsigned char *out)
{
    for (size_t k = 0; k < n; k++) {
        memcpy(out + 6 * k, &p[k].v, 2);
        memcpy(out + 6 * k + 2, &p[k].i, 4);
    }
}

static void test_packed_maxloc_and_minloc_follow_the_struct_kernels(void **state)
{
    struct pg_short_int in[4] = {{5, 7}, {5, 2}, {-6, 9}, {3, 1}};
    struct pg_short_int io[4] = {{5, 3}, {4, 3}, {-6, 1}, {3, 4}};
    struct pg_short_int want[4];
    unsigned char pin[24], pio[24], pwant[24];

    (void)state;
    assert_int_equal(pg_pair_packed_size(PG_SHORT_INT), 6);
    assert_int_equal(pg_pair_packed_size(PG_DOUBLE_INT), 12);
    assert_int_equal(pg_pair_packed_size(PG_INT32), 0);
    for (int op = PG_OP_MAXLOC; op <= PG_OP_MINLOC; op++) {
        memcpy(want, io, sizeof(io));
        assert_int_equal(pg_reduce_local(in, want, 4, PG_SHORT_INT, (enum pg_op)op), PGC_OK);
        pack_short_int(in, 4, pin);
        pack_short_int(io, 4, pio);
        pack_short_int(want, 4, pwant);
        assert_int_equal(pg_reduce_loc_packed(pin, pio, 4, PG_SHORT_INT, (enum pg_op)op), PGC_OK);
        assert_memory_equal(pio, pwant, sizeof(pwant));
    }
    /* Hand-computed MINLOC: (5,2) vs (5,3) keeps index 2; (-6,1) keeps 1. */
    pack_short_int(in, 4, pin);
    pack_short_int(io, 4, pio);
    assert_int_equal(pg_reduce_loc_packed(pin, pio, 4, PG_SHORT_INT, PG_OP_MINLOC), PGC_OK);
    short v;
    int i;
    memcpy(&v, pio + 6, 2);
    memcpy(&i, pio + 8, 4);
    assert_true(v == 4 && i == 3);
    memcpy(&v, pio + 12, 2);
    memcpy(&i, pio + 14, 4);
    assert_true(v == -6 && i == 1);
    assert_int_equal(pg_reduce_loc_packed(pin, pio, 4, PG_INT32, PG_OP_MINLOC),
                     PGC_ERR_INVALID_OP);
    assert_int_equal(pg_reduce_loc_packed(NULL, pio, 4, PG_SHORT_INT, PG_OP_MINLOC),
                     PGC_ERR_BUFFER);
}

static void test_float16_sum_rounds_once_from_float(void **state)
{
    /* 2048 + 1 = 2049 is halfway between the float16 values 2048 and 2050: ties to even
     * give 2048 (0x6800). 2050 + 1 = 2051 rounds to 2052 (0x6802). */
    uint16_t in[2] = {0x6800, 0x6801};
    uint16_t io[2] = {0x3c00, 0x3c00};

    assert_int_equal(pg_reduce_local(in, io, 2, PG_FLOAT16, PG_OP_SUM), PGC_OK);
    assert_int_equal(io[0], 0x6800);
    assert_int_equal(io[1], 0x6802);
}

/* ---- Tests: pg_reduce_div. ---- */

static void test_div_truncates_integers_and_divides_floats_exactly(void **state)
{
    int32_t i32[3] = {7, -7, 9};
    uint8_t u8[1] = {255};
    double d[1] = {1.0};
    uint16_t h[2] = {0x4200, 0x3c00}; /* float16 3.0, 1.0 */
    uint16_t bh[1] = {0x4040};        /* bfloat16 3.0 */
    double c[2] = {2.0, -4.0};        /* 2 - 4i */

    assert_int_equal(pg_reduce_div(i32, 3, PG_INT32, 2), PGC_OK);
    assert_int_equal(i32[0], 3);
    assert_int_equal(i32[1], -3);
    assert_int_equal(i32[2], 4);
    assert_int_equal(pg_reduce_div(u8, 1, PG_UINT8, 4), PGC_OK);
    assert_int_equal(u8[0], 63);
    assert_int_equal(pg_reduce_div(d, 1, PG_DOUBLE, 3), PGC_OK);
    assert_true(d[0] == 1.0 / 3.0);
    assert_int_equal(pg_reduce_div(h, 2, PG_FLOAT16, 2), PGC_OK);
    assert_int_equal(h[0], 0x3e00); /* 1.5 */
    assert_int_equal(h[1], 0x3800); /* 0.5 */
    assert_int_equal(pg_reduce_div(bh, 1, PG_BFLOAT16, 2), PGC_OK);
    assert_int_equal(bh[0], 0x3fc0); /* 1.5 */
    assert_int_equal(pg_reduce_div(c, 1, PG_C_DOUBLE_COMPLEX, 2), PGC_OK);
    assert_true(c[0] == 1.0 && c[1] == -2.0);
}

static void test_div_rejects_bad_divisors_and_types_without_touching_buf(void **state)
{
    int32_t v = 12;
    struct pg_2int p = {4, 1};

    assert_int_equal(pg_reduce_div(&v, 1, PG_INT32, 0), PGC_ERR_INVALID_ARG);
    assert_int_equal(pg_reduce_div(&v, 1, PG_INT32, -2), PGC_ERR_INVALID_ARG);
    assert_int_equal(v, 12);
    assert_int_equal(pg_reduce_div(&v, 1, PG_BOOL, 2), PGC_ERR_INVALID_DTYPE);
    assert_int_equal(pg_reduce_div(&v, 1, PG_BYTE, 2), PGC_ERR_INVALID_DTYPE);
    assert_int_equal(pg_reduce_div(&p, 1, PG_2INT, 2), PGC_ERR_INVALID_DTYPE);
    assert_int_equal(pg_reduce_div(&v, 1, PG_DTYPE_COUNT, 2), PGC_ERR_INVALID_DTYPE);
    assert_int_equal(v, 12);
    assert_int_equal(p.v, 4);
}

static void test_avg_is_sum_then_one_division(void **state)
{
    float in[2] = {1.0f, 2.0f};
    float io[2] = {2.0f, 2.5f};

    assert_int_equal(pg_reduce_local(in, io, 2, PG_FLOAT, PG_OP_AVG), PGC_OK);
    assert_int_equal(pg_reduce_div(io, 2, PG_FLOAT, 2), PGC_OK);
    assert_true(io[0] == 1.5f);
    assert_true(io[1] == 2.25f);
}

/* ---- Tests: 16-bit float conversions. ---- */

static void check_round_trip(const struct half_format *f,
                             void (*widen)(const uint16_t *, float *, size_t),
                             void (*narrow)(const float *, uint16_t *, size_t))
{
    static uint16_t src[65536], back[65536];
    static float wide[65536];

    for (uint32_t h = 0; h < 65536; h++) {
        src[h] = (uint16_t)h;
    }
    widen(src, wide, 65536);
    narrow(wide, back, 65536);
    for (uint32_t h = 0; h < 65536; h++) {
        double want = ref_decode(f, (uint16_t)h);
        if (is_half_nan(f, (uint16_t)h)) {
            if (!isnan(wide[h]) || !is_half_nan(f, back[h]) || !signbit(wide[h]) != !(h & 0x8000)) {
                fail_msg("NaN 0x%04x came back as %g / 0x%04x", h, wide[h], back[h]);
            }
            continue;
        }
        if ((double)wide[h] != want || !signbit(wide[h]) != !signbit(want) || back[h] != h) {
            fail_msg("0x%04x widened to %a (want %a), narrowed to 0x%04x", h, wide[h], want,
                     back[h]);
        }
    }
}

static void test_f16_round_trip_is_exact_for_every_bit_pattern(void **state)
{
    check_round_trip(&fmt_f16, pg_f16_to_f32, pg_f32_to_f16);
}

static void test_bf16_round_trip_is_exact_for_every_bit_pattern(void **state)
{
    check_round_trip(&fmt_bf16, pg_bf16_to_f32, pg_f32_to_bf16);
}

static uint16_t narrow_one(void (*narrow)(const float *, uint16_t *, size_t), float x)
{
    uint16_t h;
    narrow(&x, &h, 1);
    return h;
}

/* For each pair of neighbours h, h+1 (h+1 = Inf included): the midpoint goes to the even one,
 * and one float ulp either side of it goes to the nearer one. Both signs. */
static void check_halfway_cases(const struct half_format *f,
                                void (*narrow)(const float *, uint16_t *, size_t))
{
    for (uint32_t h = 0; h < f->inf_bits; h++) {
        double lo = ref_magnitude(f, (uint16_t)h);
        double hi = ref_magnitude(f, (uint16_t)(h + 1));
        float mid = (float)((lo + hi) / 2); /* exact: one bit more than the format has */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;

        assert_true((double)mid == (lo + hi) / 2);
        for (int s = 0; s < 2; s++) {
            float m = s ? -mid : mid;
            uint16_t sign = s ? 0x8000 : 0;
            uint16_t got = narrow_one(narrow, m);
            uint16_t below = narrow_one(narrow, nextafterf(m, 0.0f));
            uint16_t above = narrow_one(narrow, nextafterf(m, s ? -INFINITY : INFINITY));
            if (got != (even | sign) || below != (h | sign) || above != ((h + 1) | sign)) {
                fail_msg("between 0x%04x and 0x%04x: mid %a -> 0x%04x, below -> 0x%04x, "
                         "above -> 0x%04x",
                         h | sign, (h + 1) | sign, m, got, below, above);
            }
        }
    }
}

static void test_f32_to_f16_rounds_halfway_cases_to_even(void **state)
{
    check_halfway_cases(&fmt_f16, pg_f32_to_f16);
}

static void test_f32_to_bf16_rounds_halfway_cases_to_even(void **state)
{
    check_halfway_cases(&fmt_bf16, pg_f32_to_bf16);
}

static void test_f32_to_f16_overflows_to_inf_and_keeps_nan(void **state)
{
    assert_int_equal(narrow_one(pg_f32_to_f16, 65504.0f), 0x7bff);
    assert_int_equal(narrow_one(pg_f32_to_f16, 65519.99f), 0x7bff);
    assert_int_equal(narrow_one(pg_f32_to_f16, 65520.0f), 0x7c00);
    assert_int_equal(narrow_one(pg_f32_to_f16, 1e10f), 0x7c00);
    assert_int_equal(narrow_one(pg_f32_to_f16, -FLT_MAX), 0xfc00);
    assert_int_equal(narrow_one(pg_f32_to_f16, INFINITY), 0x7c00);
    assert_int_equal(narrow_one(pg_f32_to_f16, -INFINITY), 0xfc00);
    assert_true(is_half_nan(&fmt_f16, narrow_one(pg_f32_to_f16, NAN)));
    /* A NaN whose payload lies only in bits that float16 drops stays a NaN. */
    assert_true(is_half_nan(&fmt_f16, narrow_one(pg_f32_to_f16, f32_from_bits(0x7f800001u))));
    assert_true(is_half_nan(&fmt_f16, narrow_one(pg_f32_to_f16, f32_from_bits(0xff800001u))));
    assert_int_equal(narrow_one(pg_f32_to_f16, f32_from_bits(0xff800001u)) & 0x8000, 0x8000);
}

static void test_f32_to_bf16_overflows_to_inf_and_keeps_nan(void **state)
{
    assert_int_equal(narrow_one(pg_f32_to_bf16, FLT_MAX), 0x7f80);
    assert_int_equal(narrow_one(pg_f32_to_bf16, -INFINITY), 0xff80);
    assert_int_equal(narrow_one(pg_f32_to_bf16, f32_from_bits(0x7f7f7fffu)), 0x7f7f);
    assert_true(is_half_nan(&fmt_bf16, narrow_one(pg_f32_to_bf16, f32_from_bits(0x7f800001u))));
    assert_true(is_half_nan(&fmt_bf16, narrow_one(pg_f32_to_bf16, NAN)));
}

static void test_f32_to_f16_produces_subnormals_and_zeros(void **state)
{
    assert_int_equal(narrow_one(pg_f32_to_f16, ldexpf(1.0f, -24)), 0x0001);
    assert_int_equal(narrow_one(pg_f32_to_f16, ldexpf(1.0f, -25)), 0x0000); /* tie: to even */
    assert_int_equal(narrow_one(pg_f32_to_f16, nextafterf(ldexpf(1.0f, -25), 1.0f)), 0x0001);
    assert_int_equal(narrow_one(pg_f32_to_f16, ldexpf(3.0f, -25)), 0x0002); /* tie: to even */
    assert_int_equal(narrow_one(pg_f32_to_f16, ldexpf(1023.0f, -24)), 0x03ff);
    assert_int_equal(narrow_one(pg_f32_to_f16, ldexpf(2047.0f, -25)), 0x0400); /* to normal */
    assert_int_equal(narrow_one(pg_f32_to_f16, -ldexpf(1.0f, -24)), 0x8001);
    assert_int_equal(narrow_one(pg_f32_to_f16, 1e-45f), 0x0000);
    assert_int_equal(narrow_one(pg_f32_to_f16, -1e-45f), 0x8000);
    assert_int_equal(narrow_one(pg_f32_to_f16, -0.0f), 0x8000);
}

/* Random float bit patterns over the whole range, against the search-based reference (and,
 * where the compiler has _Float16, against its conversion too). */
static void test_f32_to_16_bit_formats_match_the_reference_on_random_floats(void **state)
{
    enum { N = 1 << 18 };
    static float x[N];
    static uint16_t h[N], b[N];

    rng_seed(42);
    for (size_t i = 0; i < N; i++) {
        uint32_t u = (uint32_t)rng_next();
        if (i % 2) {
            /* Half the samples near the float16 range, where rounding is interesting. */
            u = (u & 0x807fffffu) | ((uint32_t)(100 + (rng_next() % 45)) << 23);
        }
        x[i] = f32_from_bits(u);
        if (isnan(x[i])) {
            x[i] = 1.0f;
        }
    }
    pg_f32_to_f16(x, h, N);
    pg_f32_to_bf16(x, b, N);
    for (size_t i = 0; i < N; i++) {
        uint16_t wh = ref_encode(&fmt_f16, x[i]);
        uint16_t wb = ref_encode(&fmt_bf16, x[i]);
#ifdef __FLT16_MANT_DIG__
        _Float16 c = (_Float16)x[i];
        uint16_t ch;
        memcpy(&ch, &c, 2);
        if (ch != wh) {
            fail_msg("reference disagrees with _Float16 on %a: 0x%04x vs 0x%04x", x[i], wh, ch);
        }
#endif
        if (h[i] != wh || b[i] != wb) {
            fail_msg("%a (0x%08x): float16 0x%04x want 0x%04x, bfloat16 0x%04x want 0x%04x", x[i],
                     bits_from_f32(x[i]), h[i], wh, b[i], wb);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_op_validity_follows_the_mpi_rules_for_every_pair),
        cmocka_unit_test(test_dtype_sizes_match_the_c_types_and_pair_structs),
        cmocka_unit_test(test_every_dtype_and_op_has_a_distinct_name),
        cmocka_unit_test(test_every_valid_op_and_dtype_matches_the_scalar_reference),
        cmocka_unit_test(test_every_invalid_pair_fails_and_leaves_inout_untouched),
        cmocka_unit_test(test_out_of_range_dtype_or_op_is_rejected),
        cmocka_unit_test(test_null_buffers_fail_unless_count_is_zero),
        cmocka_unit_test(test_signed_integer_sum_and_prod_wrap_around),
        cmocka_unit_test(test_logical_ops_give_zero_or_one),
        cmocka_unit_test(test_float_max_keeps_nan_from_inout_and_ignores_nan_from_in),
        cmocka_unit_test(test_maxloc_and_minloc_keep_the_smaller_index_on_ties),
        cmocka_unit_test(test_packed_maxloc_and_minloc_follow_the_struct_kernels),
        cmocka_unit_test(test_float16_sum_rounds_once_from_float),
        cmocka_unit_test(test_div_truncates_integers_and_divides_floats_exactly),
        cmocka_unit_test(test_div_rejects_bad_divisors_and_types_without_touching_buf),
        cmocka_unit_test(test_avg_is_sum_then_one_division),
        cmocka_unit_test(test_f16_round_trip_is_exact_for_every_bit_pattern),
        cmocka_unit_test(test_bf16_round_trip_is_exact_for_every_bit_pattern),
        cmocka_unit_test(test_f32_to_f16_rounds_halfway_cases_to_even),
        cmocka_unit_test(test_f32_to_bf16_rounds_halfway_cases_to_even),
        cmocka_unit_test(test_f32_to_f16_overflows_to_inf_and_keeps_nan),
        cmocka_unit_test(test_f32_to_bf16_overflows_to_inf_and_keeps_nan),
        cmocka_unit_test(test_f32_to_f16_produces_subnormals_and_zeros),
        cmocka_unit_test(test_f32_to_16_bit_formats_match_the_reference_on_random_floats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
