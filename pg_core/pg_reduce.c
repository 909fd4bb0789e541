/*
 * pg_reduce.c - the local reduction kernels: inout[i] = in[i] op inout[i].
 *
 * One macro per family of operations stamps out a kernel for each type of a type list; the
 * kernels go into a table [op][dtype] built at compile time, so pg_reduce_local does one
 * lookup per call and the inner loops contain no dispatch at all.
 *
 * The loops are kept simple (restrict pointers, one statement per element, selects instead
 * of branches) so that GCC vectorizes them. The build uses -O2, which in GCC 12 vectorizes
 * only with the "very cheap" cost model (no loops needing a scalar epilogue), so this file
 * asks for -O3. Checked with -fdump-tree-vect-details (GCC 12, x86-64): every SUM, PROD,
 * MAX, MIN, bitwise and logical kernel on 8- to 64-bit integers, float, double, float16,
 * bfloat16 and complex SUM vectorizes, except that the SSE2 baseline lacks 64-bit integer
 * compare and multiply (int64 MAX/MIN/PROD/logical vectorize in the AVX2 clone only). Scalar:
 * long double, complex PROD (Annex G multiplication), MAXLOC/MINLOC, integer division.
 *
 * Signed integers are summed and multiplied in their unsigned type so that overflow wraps
 * (defined behaviour) instead of being undefined; the conversion back to the signed type is
 * modulo 2^bits in GCC and Clang.
 */
#include "config.h"

#include <complex.h>
#include <string.h>

#include "mps_log.h"
#include "pg_dtype.h"
#include "pgc_status.h"

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3") /* Clang vectorizes these loops at -O2 already. */
#endif

/*
 * On x86-64 the baseline ISA (SSE2) has no 64-bit integer compare or multiply, so MAX, MIN
 * and PROD on int64 stay scalar there. The vectorizable kernels are therefore also compiled
 * for AVX2 and chosen once at load time (an ifunc, which needs glibc). Both versions compute
 * each element with the same IEEE operations (AVX2 alone enables no FMA contraction), so
 * results do not depend on which one runs. ThreadSanitizer instruments the ifunc's resolver,
 * which runs before its runtime can: a TSan build keeps the baseline version only.
 */
#if defined(__x86_64__) && defined(__GLIBC__) && defined(__has_attribute) &&                      \
    !defined(__SANITIZE_THREAD__)
#if __has_attribute(target_clones)
#define KERNEL_CLONES __attribute__((target_clones("default", "avx2")))
#endif
#endif
#ifndef KERNEL_CLONES
#define KERNEL_CLONES
#endif

typedef void (*reduce_fn)(const void *restrict in, void *restrict inout, size_t n);
typedef void (*div_fn)(void *buf, size_t n, int divisor);

/* ---- Type lists: X(OP, NAME, T, U), NAME the pg_dtype suffix, T the element type. ---- */

/* U is an unsigned type at least as wide as T and as int, in which SUM/PROD wrap around
 * (unsigned short would be promoted to int, and 65535 * 65535 overflows int). */
#define INT_TYPES(X, OP)                                                                           \
    X(OP, INT8, int8_t, unsigned)                                                                  \
    X(OP, UINT8, uint8_t, unsigned)                                                                \
    X(OP, INT16, int16_t, unsigned)                                                                \
    X(OP, UINT16, uint16_t, unsigned)                                                              \
    X(OP, INT32, int32_t, uint32_t)                                                                \
    X(OP, UINT32, uint32_t, uint32_t)                                                              \
    X(OP, INT64, int64_t, uint64_t)                                                                \
    X(OP, UINT64, uint64_t, uint64_t)

#define REAL_TYPES(X, OP)                                                                          \
    X(OP, FLOAT, float, float)                                                                     \
    X(OP, DOUBLE, double, double)                                                                  \
    X(OP, LONG_DOUBLE, long double, long double)

/* U is the real type of the parts (used by the division of AVG). */
#define COMPLEX_TYPES(X, OP)                                                                       \
    X(OP, C_FLOAT_COMPLEX, float _Complex, float)                                                  \
    X(OP, C_DOUBLE_COMPLEX, double _Complex, double)                                               \
    X(OP, C_LONG_DOUBLE_COMPLEX, long double _Complex, long double)

/* Both 16-bit float formats: U names the conversion pair used (f16 or bf16). */
#define HALF_TYPES(X, OP)                                                                          \
    X(OP, FLOAT16, uint16_t, f16)                                                                  \
    X(OP, BFLOAT16, uint16_t, bf16)

#define PAIR_TYPES(X, OP)                                                                          \
    X(OP, FLOAT_INT, struct pg_float_int, -)                                                       \
    X(OP, DOUBLE_INT, struct pg_double_int, -)                                                     \
    X(OP, LONG_INT, struct pg_long_int, -)                                                         \
    X(OP, 2INT, struct pg_2int, -)                                                                 \
    X(OP, SHORT_INT, struct pg_short_int, -)                                                       \
    X(OP, LONG_DOUBLE_INT, struct pg_long_double_int, -)

/* _Bool is read through its one byte so that any non-zero byte counts as true. */
#define BOOL_TYPES(X, OP) X(OP, BOOL, uint8_t, uint8_t)
#define BYTE_TYPES(X, OP) X(OP, BYTE, uint8_t, uint8_t)

/* ---- The operations, on two values x (from in) and y (from inout). ---- */

#define EXPR_SUM(x, y) ((x) + (y))
#define EXPR_PROD(x, y) ((x) * (y))
#define EXPR_MAX(x, y) ((x) > (y) ? (x) : (y))
#define EXPR_MIN(x, y) ((x) < (y) ? (x) : (y))
#define EXPR_LAND(x, y) (((x) != 0) & ((y) != 0))
#define EXPR_LOR(x, y) (((x) != 0) | ((y) != 0))
#define EXPR_LXOR(x, y) (((x) != 0) ^ ((y) != 0))
#define EXPR_BAND(x, y) ((x) & (y))
#define EXPR_BOR(x, y) ((x) | (y))
#define EXPR_BXOR(x, y) ((x) ^ (y))

/* ---- Scalar conversions between float and the 16-bit formats (bit manipulation). ---- */

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

/* Branch-free select, so that loops calling the conversions stay free of control flow and
 * vectorize (GCC does not if-convert a float operation that may trap). */
static inline uint32_t select_u32(uint32_t cond, uint32_t a, uint32_t b)
{
    uint32_t mask = 0u - cond; /* all ones when cond is 1 */
    return (a & mask) | (b & ~mask);
}

/* binary16 -> binary32, exact. Subnormals are renormalized by one exact float subtraction:
 * with the exponent of 2^-14 patched in, the float is 2^-14 + m * 2^-24. */
static inline float f16_to_f32_one(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13;
    uint32_t exp = o & 0x0f800000u;
    uint32_t sub = f32_bits(bits_f32(o + (113u << 23)) - bits_f32(113u << 23));
    uint32_t r = o + (112u << 23); /* rebias 15 -> 127 */

    r = select_u32(exp == 0x0f800000u, r + (112u << 23), r); /* Inf/NaN: all-ones exponent */
    r = select_u32(exp == 0, sub, r);
    return bits_f32(r | ((uint32_t)(h & 0x8000u) << 16));
}

/* binary32 -> binary16, round to nearest even. Normal results round by adding 0xfff plus
 * the lowest kept bit before shifting (a carry into the exponent is the right result, up to
 * Inf); subnormal results let the FPU round: adding 0.5f puts the unit 2^-24 in the last
 * place. NaN keeps its sign and top payload bits and is made quiet. Assumes the default
 * rounding mode. */
static inline uint16_t f32_to_f16_one(float f)
{
    uint32_t x = f32_bits(f) & 0x7fffffffu;
    uint32_t sign = (f32_bits(f) >> 16) & 0x8000u;
    uint32_t norm = (x - (112u << 23) + 0xfffu + ((x >> 13) & 1u)) >> 13;
    uint32_t sub = f32_bits(bits_f32(x) + 0.5f) - 0x3f000000u;
    uint32_t big = select_u32(x > 0x7f800000u, 0x7e00u | ((x >> 13) & 0x3ffu), 0x7c00u);
    uint32_t r = select_u32(x < 0x38800000u, sub, norm); /* below 2^-14: subnormal or zero */

    r = select_u32(x >= 0x47800000u, big, r); /* 2^16 and above: Inf or NaN */
    return (uint16_t)(r | sign);
}

static inline float bf16_to_f32_one(uint16_t h)
{
    return bits_f32((uint32_t)h << 16);
}

/* Round to nearest even on the upper 16 bits; a NaN is truncated and its quiet bit set so
 * that a payload living only in the lower bits does not turn it into Inf. */
static inline uint16_t f32_to_bf16_one(float f)
{
    uint32_t x = f32_bits(f);
    uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
    uint32_t nan = (x >> 16) | 0x0040u;

    return (uint16_t)select_u32((x & 0x7fffffffu) > 0x7f800000u, nan, r);
}

void pg_f16_to_f32(const uint16_t *restrict src, float *restrict dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = f16_to_f32_one(src[i]);
    }
}

void pg_f32_to_f16(const float *restrict src, uint16_t *restrict dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = f32_to_f16_one(src[i]);
    }
}

void pg_bf16_to_f32(const uint16_t *restrict src, float *restrict dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = bf16_to_f32_one(src[i]);
    }
}

void pg_f32_to_bf16(const float *restrict src, uint16_t *restrict dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        dst[i] = f32_to_bf16_one(src[i]);
    }
}

/*
 * float16 kernels on x86-64 CPUs with F16C (all since 2013) convert 8 elements at a time with
 * vcvtph2ps/vcvtps2ph instead of the bit manipulation above, several times faster (GCC 12 does
 * not vectorize _Float16 conversions by itself, hence the intrinsics). The results are the
 * same: both round to nearest even, MAXPS/MINPS return the second operand unless the first
 * compares greater/less (the (x > y ? x : y) rule), and both quiet a NaN keeping its sign and
 * top payload bits. The CPU is checked once per call (a load and a test).
 */
#if defined(__x86_64__) && defined(__has_attribute) && !defined(__clang__)
#if __has_attribute(target) /* (Clang 14's __builtin_cpu_supports does not know "f16c".) */
#define HAVE_F16C_KERNELS 1
#endif
#endif

#ifdef HAVE_F16C_KERNELS
#include <immintrin.h>

static inline bool cpu_has_f16c(void)
{
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
}

#define VEXPR_SUM(x, y) _mm256_add_ps(x, y)
#define VEXPR_PROD(x, y) _mm256_mul_ps(x, y)
#define VEXPR_MAX(x, y) _mm256_max_ps(x, y)
#define VEXPR_MIN(x, y) _mm256_min_ps(x, y)

/* Defines f16c_OP(in, inout, n): runs the F16C kernel and returns true, or returns false
 * when the CPU lacks F16C. */
#define DEFINE_F16C_KERNEL(OP)                                                                     \
    __attribute__((target("avx2,f16c"))) static void kc_##OP(const void *restrict vin,             \
                                                             void *restrict vio, size_t n)         \
    {                                                                                              \
        const uint16_t *restrict in = vin;                                                         \
        uint16_t *restrict io = vio;                                                               \
        size_t i = 0;                                                                              \
        for (; i + 8 <= n; i += 8) {                                                               \
            __m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(in + i)));                \
            __m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(io + i)));                \
            _mm_storeu_si128((__m128i *)(io + i),                                                  \
                             _mm256_cvtps_ph(VEXPR_##OP(x, y), _MM_FROUND_TO_NEAREST_INT));        \
        }                                                                                          \
        for (; i < n; i++) {                                                                       \
            float x = _cvtsh_ss(in[i]);                                                            \
            float y = _cvtsh_ss(io[i]);                                                            \
            io[i] = _cvtss_sh(EXPR_##OP(x, y), _MM_FROUND_TO_NEAREST_INT);                         \
        }                                                                                          \
    }                                                                                              \
    static inline bool f16c_##OP(const void *restrict vin, void *restrict vio, size_t n)           \
    {                                                                                              \
        if (!cpu_has_f16c()) {                                                                     \
            return false;                                                                          \
        }                                                                                          \
        kc_##OP(vin, vio, n);                                                                      \
        return true;                                                                               \
    }

DEFINE_F16C_KERNEL(SUM)
DEFINE_F16C_KERNEL(PROD)
DEFINE_F16C_KERNEL(MAX)
DEFINE_F16C_KERNEL(MIN)
#define HALF_FAST_PATH_FLOAT16(OP, in, io, n) f16c_##OP(in, io, n)
#else
#define HALF_FAST_PATH_FLOAT16(OP, in, io, n) false
#endif
#define HALF_FAST_PATH_BFLOAT16(OP, in, io, n) false

/* ---- Kernel generators. ---- */

/* Elementwise op computed in type U (the unsigned twin for integer SUM/PROD, else T). */
#define DEFINE_KERNEL_IN(OP, NAME, T, U)                                                           \
    KERNEL_CLONES static void k_##OP##_##NAME(const void *restrict vin, void *restrict vio,        \
                                              size_t n)                                            \
    {                                                                                              \
        const T *restrict in = vin;                                                                \
        T *restrict io = vio;                                                                      \
        for (size_t i = 0; i < n; i++) {                                                           \
            U x = (U)in[i];                                                                        \
            U y = (U)io[i];                                                                        \
            io[i] = (T)(EXPR_##OP(x, y));                                                          \
        }                                                                                          \
    }

/* Elementwise op computed in the element type itself (comparisons must see the sign). */
#define DEFINE_KERNEL(OP, NAME, T, U) DEFINE_KERNEL_IN(OP, NAME, T, T)

/* 16-bit floats: widen both, compute in float, round once (after trying the fast path). */
#define DEFINE_HALF_KERNEL(OP, NAME, T, CV)                                                        \
    KERNEL_CLONES static void k_##OP##_##NAME(const void *restrict vin, void *restrict vio,        \
                                              size_t n)                                            \
    {                                                                                              \
        const uint16_t *restrict in = vin;                                                         \
        uint16_t *restrict io = vio;                                                               \
        if (HALF_FAST_PATH_##NAME(OP, vin, vio, n)) {                                              \
            return;                                                                                \
        }                                                                                          \
        for (size_t i = 0; i < n; i++) {                                                           \
            float x = CV##_to_f32_one(in[i]);                                                      \
            float y = CV##_to_f32_one(io[i]);                                                      \
            io[i] = f32_to_##CV##_one(EXPR_##OP(x, y));                                            \
        }                                                                                          \
    }

/* MAXLOC (CMP >) and MINLOC (CMP <): the better value wins; equal values keep the smaller
 * index. NaN compares false both ways, so a NaN in `in` never replaces inout. */
#define DEFINE_LOC_KERNEL(OP, NAME, T, CMP)                                                        \
    static void k_##OP##_##NAME(const void *restrict vin, void *restrict vio, size_t n)            \
    {                                                                                              \
        const T *restrict in = vin;                                                                \
        T *restrict io = vio;                                                                      \
        for (size_t i = 0; i < n; i++) {                                                           \
            if (in[i].v CMP io[i].v) {                                                             \
                io[i].v = in[i].v;                                                                 \
                io[i].i = in[i].i;                                                                 \
            } else if (in[i].v == io[i].v && in[i].i < io[i].i) {                                  \
                io[i].i = in[i].i;                                                                 \
            }                                                                                      \
        }                                                                                          \
    }
#define DEFINE_MAXLOC(OP, NAME, T, U) DEFINE_LOC_KERNEL(OP, NAME, T, >)
#define DEFINE_MINLOC(OP, NAME, T, U) DEFINE_LOC_KERNEL(OP, NAME, T, <)

INT_TYPES(DEFINE_KERNEL_IN, SUM)
INT_TYPES(DEFINE_KERNEL_IN, PROD)
INT_TYPES(DEFINE_KERNEL, MAX)
INT_TYPES(DEFINE_KERNEL, MIN)
INT_TYPES(DEFINE_KERNEL_IN, LAND)
INT_TYPES(DEFINE_KERNEL_IN, LOR)
INT_TYPES(DEFINE_KERNEL_IN, LXOR)
INT_TYPES(DEFINE_KERNEL_IN, BAND)
INT_TYPES(DEFINE_KERNEL_IN, BOR)
INT_TYPES(DEFINE_KERNEL_IN, BXOR)

REAL_TYPES(DEFINE_KERNEL, SUM)
REAL_TYPES(DEFINE_KERNEL, PROD)
REAL_TYPES(DEFINE_KERNEL, MAX)
REAL_TYPES(DEFINE_KERNEL, MIN)

HALF_TYPES(DEFINE_HALF_KERNEL, SUM)
HALF_TYPES(DEFINE_HALF_KERNEL, PROD)
HALF_TYPES(DEFINE_HALF_KERNEL, MAX)
HALF_TYPES(DEFINE_HALF_KERNEL, MIN)

COMPLEX_TYPES(DEFINE_KERNEL, SUM)
COMPLEX_TYPES(DEFINE_KERNEL, PROD)

/* Bool's bitwise operations are its logical ones (equal on 0/1, and normalized otherwise). */
BOOL_TYPES(DEFINE_KERNEL_IN, LAND)
BOOL_TYPES(DEFINE_KERNEL_IN, LOR)
BOOL_TYPES(DEFINE_KERNEL_IN, LXOR)

BYTE_TYPES(DEFINE_KERNEL_IN, BAND)
BYTE_TYPES(DEFINE_KERNEL_IN, BOR)
BYTE_TYPES(DEFINE_KERNEL_IN, BXOR)

PAIR_TYPES(DEFINE_MAXLOC, MAXLOC)
PAIR_TYPES(DEFINE_MINLOC, MINLOC)

/* The same on packed pairs (value bytes, then the int, no padding): memcpy loads and stores
 * at the packed stride, which compile to plain unaligned moves. */
#define DEFINE_PACKED_LOC_KERNEL(OP, NAME, T, CMP)                                                 \
    static void kp_##OP##_##NAME(const void *restrict vin, void *restrict vio, size_t n)           \
    {                                                                                              \
        enum { VS = sizeof(((T *)0)->v), S = VS + sizeof(int) };                                   \
        const char *restrict in = vin;                                                             \
        char *restrict io = vio;                                                                   \
        for (size_t k = 0; k < n; k++, in += S, io += S) {                                         \
            T a, b;                                                                                \
            memcpy(&a.v, in, VS);                                                                  \
            memcpy(&a.i, in + VS, sizeof(int));                                                    \
            memcpy(&b.v, io, VS);                                                                  \
            memcpy(&b.i, io + VS, sizeof(int));                                                    \
            if (a.v CMP b.v) {                                                                     \
                memcpy(io, in, S);                                                                 \
            } else if (a.v == b.v && a.i < b.i) {                                                  \
                memcpy(io + VS, &a.i, sizeof(int));                                                \
            }                                                                                      \
        }                                                                                          \
    }
#define DEFINE_PACKED_MAXLOC(OP, NAME, T, U) DEFINE_PACKED_LOC_KERNEL(OP, NAME, T, >)
#define DEFINE_PACKED_MINLOC(OP, NAME, T, U) DEFINE_PACKED_LOC_KERNEL(OP, NAME, T, <)

PAIR_TYPES(DEFINE_PACKED_MAXLOC, MAXLOC)
PAIR_TYPES(DEFINE_PACKED_MINLOC, MINLOC)

/* ---- The dispatch table. ---- */

#define ENTRY(OP, NAME, T, U) [PG_OP_##OP][PG_##NAME] = k_##OP##_##NAME,
/* AVG accumulates exactly like SUM. */
#define ENTRY_AVG(OP, NAME, T, U) [PG_OP_AVG][PG_##NAME] = k_SUM_##NAME,
#define ENTRY_BOOL(OP, NAME, T, U) [PG_OP_B##OP][PG_##NAME] = k_L##OP##_##NAME,

#define ARITH_ENTRIES(X, OP) INT_TYPES(X, OP) REAL_TYPES(X, OP) HALF_TYPES(X, OP)

/* One row per operation (clang-format would fill the lines instead). */
/* clang-format off */
static const reduce_fn reduce_table[PG_OP_COUNT][PG_DTYPE_COUNT] = {
    ARITH_ENTRIES(ENTRY, SUM) COMPLEX_TYPES(ENTRY, SUM)
    ARITH_ENTRIES(ENTRY, PROD) COMPLEX_TYPES(ENTRY, PROD)
    ARITH_ENTRIES(ENTRY_AVG, AVG) COMPLEX_TYPES(ENTRY_AVG, AVG)
    ARITH_ENTRIES(ENTRY, MAX)
    ARITH_ENTRIES(ENTRY, MIN)
    INT_TYPES(ENTRY, LAND) BOOL_TYPES(ENTRY, LAND)
    INT_TYPES(ENTRY, LOR) BOOL_TYPES(ENTRY, LOR)
    INT_TYPES(ENTRY, LXOR) BOOL_TYPES(ENTRY, LXOR)
    INT_TYPES(ENTRY, BAND) BYTE_TYPES(ENTRY, BAND) BOOL_TYPES(ENTRY_BOOL, AND)
    INT_TYPES(ENTRY, BOR) BYTE_TYPES(ENTRY, BOR) BOOL_TYPES(ENTRY_BOOL, OR)
    INT_TYPES(ENTRY, BXOR) BYTE_TYPES(ENTRY, BXOR) BOOL_TYPES(ENTRY_BOOL, XOR)
    PAIR_TYPES(ENTRY, MAXLOC)
    PAIR_TYPES(ENTRY, MINLOC)
};
/* clang-format on */

int pg_reduce_local(const void *in, void *inout, size_t count, enum pg_dtype dt, enum pg_op op)
{
    reduce_fn fn;

    if ((unsigned)dt >= (unsigned)PG_DTYPE_COUNT) {
        return mps_error(PGC_ERR_INVALID_DTYPE, "pg_reduce_local: datatype %d is not a pg_dtype",
                         (int)dt);
    }
    if (!pg_op_valid(op, dt)) {
        return mps_error(PGC_ERR_INVALID_OP,
                         "pg_reduce_local: operation %s (%d) does not apply to datatype %s",
                         pg_op_name(op), (int)op, pg_dtype_name(dt));
    }
    fn = reduce_table[op][dt];
    if (fn == NULL) {
        return mps_error(PGC_ERR_INTERNAL, "pg_reduce_local: no kernel for %s on %s",
                         pg_op_name(op), pg_dtype_name(dt));
    }
    if (count > 0 && (in == NULL || inout == NULL)) {
        return mps_error(PGC_ERR_BUFFER, "pg_reduce_local: NULL buffer for %zu elements of %s",
                         count, pg_dtype_name(dt));
    }
    fn(in, inout, count);
    return PGC_OK;
}

/* ---- Division for AVG. ---- */

/* Integers: C truncating division by a positive int (converted to the unsigned type for the
 * unsigned ones by the usual conversions, which keeps the value since divisor > 0). */
#define DEFINE_DIV_INT(OP, NAME, T, U)                                                             \
    static void d_##NAME(void *vbuf, size_t n, int divisor)                                        \
    {                                                                                              \
        T *restrict b = vbuf;                                                                      \
        for (size_t i = 0; i < n; i++) {                                                           \
            b[i] = (T)(b[i] / divisor);                                                            \
        }                                                                                          \
    }

/* Real and complex floats: divide by the divisor as a real of the part type. */
#define DEFINE_DIV_FLOAT(OP, NAME, T, U)                                                           \
    static void d_##NAME(void *vbuf, size_t n, int divisor)                                        \
    {                                                                                              \
        T *restrict b = vbuf;                                                                      \
        U d = (U)divisor;                                                                          \
        for (size_t i = 0; i < n; i++) {                                                           \
            b[i] = b[i] / d;                                                                       \
        }                                                                                          \
    }

#define DEFINE_DIV_HALF(OP, NAME, T, CV)                                                           \
    static void d_##NAME(void *vbuf, size_t n, int divisor)                                        \
    {                                                                                              \
        uint16_t *restrict b = vbuf;                                                               \
        float d = (float)divisor;                                                                  \
        for (size_t i = 0; i < n; i++) {                                                           \
            b[i] = f32_to_##CV##_one(CV##_to_f32_one(b[i]) / d);                                   \
        }                                                                                          \
    }

INT_TYPES(DEFINE_DIV_INT, -)
REAL_TYPES(DEFINE_DIV_FLOAT, -)
COMPLEX_TYPES(DEFINE_DIV_FLOAT, -)
HALF_TYPES(DEFINE_DIV_HALF, -)

#define DIV_ENTRY(OP, NAME, T, U) [PG_##NAME] = d_##NAME,

/* clang-format off */
static const div_fn div_table[PG_DTYPE_COUNT] = {
    INT_TYPES(DIV_ENTRY, -)
    REAL_TYPES(DIV_ENTRY, -)
    COMPLEX_TYPES(DIV_ENTRY, -)
    HALF_TYPES(DIV_ENTRY, -)
};
/* clang-format on */

int pg_reduce_div(void *buf, size_t count, enum pg_dtype dt, int divisor)
{
    if ((unsigned)dt >= (unsigned)PG_DTYPE_COUNT || div_table[dt] == NULL) {
        return mps_error(PGC_ERR_INVALID_DTYPE, "pg_reduce_div: cannot average datatype %s (%d)",
                         pg_dtype_name(dt), (int)dt);
    }
    if (divisor <= 0) {
        return mps_error(PGC_ERR_INVALID_ARG, "pg_reduce_div: divisor %d is not positive", divisor);
    }
    if (count > 0 && buf == NULL) {
        return mps_error(PGC_ERR_BUFFER, "pg_reduce_div: NULL buffer for %zu elements of %s", count,
                         pg_dtype_name(dt));
    }
    div_table[dt](buf, count, divisor);
    return PGC_OK;
}

#define PACKED_ENTRY(OP, NAME, T, U)                                                               \
    [PG_OP_##OP - PG_OP_MAXLOC][PG_##NAME - PG_FLOAT_INT] = kp_##OP##_##NAME,
#define PACKED_SIZE(OP, NAME, T, U) [PG_##NAME - PG_FLOAT_INT] = sizeof(((T *)0)->v) + sizeof(int),

/* clang-format off */
static const reduce_fn packed_table[2][PG_LONG_DOUBLE_INT - PG_FLOAT_INT + 1] = {
    PAIR_TYPES(PACKED_ENTRY, MAXLOC)
    PAIR_TYPES(PACKED_ENTRY, MINLOC)
};
static const size_t packed_size[PG_LONG_DOUBLE_INT - PG_FLOAT_INT + 1] = {
    PAIR_TYPES(PACKED_SIZE, -)
};
/* clang-format on */

size_t pg_pair_packed_size(enum pg_dtype dt)
{
    return dt >= PG_FLOAT_INT && dt <= PG_LONG_DOUBLE_INT ? packed_size[dt - PG_FLOAT_INT] : 0;
}

int pg_reduce_loc_packed(const void *in, void *inout, size_t count, enum pg_dtype dt,
                         enum pg_op op)
{
    if (pg_pair_packed_size(dt) == 0 || (op != PG_OP_MAXLOC && op != PG_OP_MINLOC)) {
        return mps_error(PGC_ERR_INVALID_OP,
                         "pg_reduce_loc_packed: operation %s does not apply to datatype %s",
                         pg_op_name(op), pg_dtype_name(dt));
    }
    if (count > 0 && (in == NULL || inout == NULL)) {
        return mps_error(PGC_ERR_BUFFER,
                         "pg_reduce_loc_packed: NULL buffer for %zu packed pairs of %s", count,
                         pg_dtype_name(dt));
    }
    packed_table[op - PG_OP_MAXLOC][dt - PG_FLOAT_INT](in, inout, count);
    return PGC_OK;
}
