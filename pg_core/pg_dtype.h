/*
 * pg_dtype.h - element datatypes, reduction operations and the local reduction kernels.
 *
 * Every collective of both APIs (MPI and the torch-style pgc_ calls) describes its data as
 * `count` elements of one pg_dtype and combines contributions with pg_reduce_local. The
 * kernels are pure functions of their arguments: they allocate nothing, keep no state and
 * may be called from any thread at once.
 *
 * Storage of the less common types:
 * - PG_FLOAT16 and PG_BFLOAT16 elements are stored as uint16_t bit patterns (IEEE binary16
 *   and the upper half of a binary32). Reductions convert each element to float, compute in
 *   float and round once to nearest-even when storing the result.
 * - PG_BOOL is C _Bool (one byte). The kernels read any non-zero byte as true and write 0/1.
 * - The MAXLOC/MINLOC pair types are laid out exactly as the C structs below (MPI's
 *   MPI_FLOAT_INT, MPI_DOUBLE_INT, ...), padding included, so their sizes are sizeof(struct).
 * - PG_BYTE is opaque: only the bitwise operations apply to it.
 */
#ifndef PG_DTYPE_H
#define PG_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pg_dtype {
    PG_DTYPE_NONE = -1,
    PG_INT8,
    PG_UINT8,
    PG_INT16,
    PG_UINT16,
    PG_INT32,
    PG_UINT32,
    PG_INT64,
    PG_UINT64,
    PG_FLOAT16,
    PG_BFLOAT16,
    PG_FLOAT,
    PG_DOUBLE,
    PG_LONG_DOUBLE,
    PG_BOOL, /* C _Bool */
    PG_C_FLOAT_COMPLEX,
    PG_C_DOUBLE_COMPLEX,
    PG_C_LONG_DOUBLE_COMPLEX,
    /* The MAXLOC/MINLOC pair types, laid out as the structs pg_float_int etc. below. */
    PG_FLOAT_INT,
    PG_DOUBLE_INT,
    PG_LONG_INT,
    PG_2INT,
    PG_SHORT_INT,
    PG_LONG_DOUBLE_INT,
    PG_BYTE, /* no arithmetic, only BAND/BOR/BXOR */
    PG_DTYPE_COUNT
};

enum pg_op {
    PG_OP_SUM,
    PG_OP_PROD,
    PG_OP_MAX,
    PG_OP_MIN,
    PG_OP_LAND,
    PG_OP_LOR,
    PG_OP_LXOR,
    PG_OP_BAND,
    PG_OP_BOR,
    PG_OP_BXOR,
    PG_OP_MAXLOC,
    PG_OP_MINLOC,
    PG_OP_AVG,
    PG_OP_COUNT
};

/* The element layouts of the pair types (value first, then the index). */
struct pg_float_int {
    float v;
    int i;
};
struct pg_double_int {
    double v;
    int i;
};
struct pg_long_int {
    long v;
    int i;
};
struct pg_2int {
    int v;
    int i;
};
struct pg_short_int {
    short v;
    int i;
};
struct pg_long_double_int {
    long double v;
    int i;
};

#ifdef __cplusplus
extern "C" {
#endif

/* The size in bytes of one element; 0 for a value outside [0, PG_DTYPE_COUNT). */
size_t pg_dtype_size(enum pg_dtype dt);
/* A static lower-case name ("int32", "float16", "double_int", "2int"); "invalid" for a value
 * outside the enum. */
const char *pg_dtype_name(enum pg_dtype dt);
/* A static lower-case name ("sum", "maxloc", "avg"); "invalid" outside the enum. */
const char *pg_op_name(enum pg_op op);

/*
 * Whether op applies to dt, following MPI-3.1 section 5.9.2:
 * - SUM, PROD: integers, real floats (float16 and bfloat16 included) and complex.
 * - AVG: as SUM (AVG is torch's ReduceOp.AVG, not an MPI operation).
 * - MAX, MIN: integers and real floats (not complex, not bool).
 * - LAND, LOR, LXOR: integers and bool.
 * - BAND, BOR, BXOR: integers, bool and byte.
 * - MAXLOC, MINLOC: only the pair types.
 * False for values outside either enum.
 */
bool pg_op_valid(enum pg_op op, enum pg_dtype dt);

/*
 * inout[i] = in[i] op inout[i] for i < count.
 *
 * in and inout must not overlap (the kernels use restrict pointers); both may be NULL when
 * count is 0. No alignment beyond the element type's natural alignment is required.
 *
 * Results, element by element:
 * - Integer SUM/PROD wrap around modulo 2^bits (signed types included: the kernels compute
 *   in the unsigned type, so overflow is defined and never traps).
 * - Float MAX is (in > inout ? in : inout), MIN is (in < inout ? in : inout), in every
 *   code path (scalar, vectorized, float16/bfloat16). So a NaN in inout is kept, a NaN in
 *   in is ignored unless inout is NaN too, and of +0.0 and -0.0 the inout one is kept.
 * - LAND/LOR/LXOR give 0 or 1 of the element type.
 * - MAXLOC/MINLOC keep the pair with the larger/smaller value; on equal values the pair
 *   with the smaller index (MPI rule).
 * - AVG reduces like SUM; the caller divides once at the end with pg_reduce_div.
 *
 * Returns PGC_OK; PGC_ERR_INVALID_DTYPE for dt outside the enum; PGC_ERR_INVALID_OP when
 * !pg_op_valid(op, dt); PGC_ERR_BUFFER when count > 0 and a pointer is NULL. Each error is
 * recorded with mps_error (naming op and dtype) and leaves inout untouched.
 */
int pg_reduce_local(const void *in, void *inout, size_t count, enum pg_dtype dt, enum pg_op op);

/*
 * MAXLOC/MINLOC on pairs in the packed form of MPI's type signature: each element is the
 * value (sizeof v bytes) immediately followed by the int index, without the struct padding
 * (12 bytes for double_int, 6 for short_int), as MPI packs MPI_DOUBLE_INT and friends.
 * Same results and rules as pg_reduce_local; no alignment is required. dt must be a pair
 * type and op MAXLOC or MINLOC: PGC_ERR_INVALID_OP otherwise; PGC_ERR_BUFFER when count > 0
 * and a pointer is NULL. pg_pair_packed_size gives the bytes of one packed pair (0 for a
 * type that is no pair).
 */
int pg_reduce_loc_packed(const void *in, void *inout, size_t count, enum pg_dtype dt,
                         enum pg_op op);
size_t pg_pair_packed_size(enum pg_dtype dt);

/*
 * buf[i] /= divisor for i < count, to finish an AVG. Real and complex floats (float16 and
 * bfloat16 included, rounded once) use true division; integers use C's truncating division.
 * divisor must be > 0 (it is a group size): PGC_ERR_INVALID_ARG otherwise.
 * PGC_ERR_INVALID_DTYPE for types on which AVG is invalid (bool, byte, pair types).
 * A failed call leaves buf untouched.
 */
int pg_reduce_div(void *buf, size_t count, enum pg_dtype dt, int divisor);

/*
 * Conversions between float and the 16-bit float formats, for accumulating float16/bfloat16
 * in float. Widening is exact. Narrowing rounds to nearest, ties to even; values beyond the
 * largest finite number round to +-Inf as IEEE 754 says; float16 subnormals are produced
 * exactly; Inf keeps its sign; NaN stays NaN (quiet, with the sign and the top payload bits).
 * src and dst must not overlap.
 */
void pg_f16_to_f32(const uint16_t *src, float *dst, size_t n);
void pg_f32_to_f16(const float *src, uint16_t *dst, size_t n);
void pg_bf16_to_f32(const uint16_t *src, float *dst, size_t n);
void pg_f32_to_bf16(const float *src, uint16_t *dst, size_t n);

#ifdef __cplusplus
}
#endif

#endif
