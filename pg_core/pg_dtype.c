/*
 * pg_dtype.c - sizes and names of the element datatypes, and which operations apply to
 * which types (MPI-3.1 section 5.9.2). The kernels themselves are in pg_reduce.c.
 */
#include "config.h"

#include <complex.h>

#include "pg_dtype.h"

/* The classes of MPI-3.1 section 5.9.2 (C integer, floating point, complex, logical, byte),
 * plus the MAXLOC/MINLOC pair types. */
enum dtype_class {
    CLS_INT = 1 << 0,
    CLS_REAL = 1 << 1,
    CLS_COMPLEX = 1 << 2,
    CLS_BOOL = 1 << 3,
    CLS_BYTE = 1 << 4,
    CLS_PAIR = 1 << 5,
};

struct dtype_info {
    const char *name;
    size_t size;
    unsigned cls;
};

static const struct dtype_info dtype_table[PG_DTYPE_COUNT] = {
    [PG_INT8] = {"int8", sizeof(int8_t), CLS_INT},
    [PG_UINT8] = {"uint8", sizeof(uint8_t), CLS_INT},
    [PG_INT16] = {"int16", sizeof(int16_t), CLS_INT},
    [PG_UINT16] = {"uint16", sizeof(uint16_t), CLS_INT},
    [PG_INT32] = {"int32", sizeof(int32_t), CLS_INT},
    [PG_UINT32] = {"uint32", sizeof(uint32_t), CLS_INT},
    [PG_INT64] = {"int64", sizeof(int64_t), CLS_INT},
    [PG_UINT64] = {"uint64", sizeof(uint64_t), CLS_INT},
    [PG_FLOAT16] = {"float16", sizeof(uint16_t), CLS_REAL},
    [PG_BFLOAT16] = {"bfloat16", sizeof(uint16_t), CLS_REAL},
    [PG_FLOAT] = {"float", sizeof(float), CLS_REAL},
    [PG_DOUBLE] = {"double", sizeof(double), CLS_REAL},
    [PG_LONG_DOUBLE] = {"long_double", sizeof(long double), CLS_REAL},
    [PG_BOOL] = {"bool", sizeof(_Bool), CLS_BOOL},
    [PG_C_FLOAT_COMPLEX] = {"c_float_complex", sizeof(float _Complex), CLS_COMPLEX},
    [PG_C_DOUBLE_COMPLEX] = {"c_double_complex", sizeof(double _Complex), CLS_COMPLEX},
    [PG_C_LONG_DOUBLE_COMPLEX] = {"c_long_double_complex", sizeof(long double _Complex),
                                  CLS_COMPLEX},
    [PG_FLOAT_INT] = {"float_int", sizeof(struct pg_float_int), CLS_PAIR},
    [PG_DOUBLE_INT] = {"double_int", sizeof(struct pg_double_int), CLS_PAIR},
    [PG_LONG_INT] = {"long_int", sizeof(struct pg_long_int), CLS_PAIR},
    [PG_2INT] = {"2int", sizeof(struct pg_2int), CLS_PAIR},
    [PG_SHORT_INT] = {"short_int", sizeof(struct pg_short_int), CLS_PAIR},
    [PG_LONG_DOUBLE_INT] = {"long_double_int", sizeof(struct pg_long_double_int), CLS_PAIR},
    [PG_BYTE] = {"byte", 1, CLS_BYTE},
};

/* For each operation, the classes it applies to. */
static const unsigned op_classes[PG_OP_COUNT] = {
    [PG_OP_SUM] = CLS_INT | CLS_REAL | CLS_COMPLEX,
    [PG_OP_PROD] = CLS_INT | CLS_REAL | CLS_COMPLEX,
    [PG_OP_MAX] = CLS_INT | CLS_REAL,
    [PG_OP_MIN] = CLS_INT | CLS_REAL,
    [PG_OP_LAND] = CLS_INT | CLS_BOOL,
    [PG_OP_LOR] = CLS_INT | CLS_BOOL,
    [PG_OP_LXOR] = CLS_INT | CLS_BOOL,
    [PG_OP_BAND] = CLS_INT | CLS_BOOL | CLS_BYTE,
    [PG_OP_BOR] = CLS_INT | CLS_BOOL | CLS_BYTE,
    [PG_OP_BXOR] = CLS_INT | CLS_BOOL | CLS_BYTE,
    [PG_OP_MAXLOC] = CLS_PAIR,
    [PG_OP_MINLOC] = CLS_PAIR,
    [PG_OP_AVG] = CLS_INT | CLS_REAL | CLS_COMPLEX,
};

static const char *const op_names[PG_OP_COUNT] = {
    [PG_OP_SUM] = "sum",   [PG_OP_PROD] = "prod",     [PG_OP_MAX] = "max",
    [PG_OP_MIN] = "min",   [PG_OP_LAND] = "land",     [PG_OP_LOR] = "lor",
    [PG_OP_LXOR] = "lxor", [PG_OP_BAND] = "band",     [PG_OP_BOR] = "bor",
    [PG_OP_BXOR] = "bxor", [PG_OP_MAXLOC] = "maxloc", [PG_OP_MINLOC] = "minloc",
    [PG_OP_AVG] = "avg",
};

/* Enums may hold any int, so every lookup checks the range first (casting to unsigned makes
 * negative values fail the same comparison). */
static bool dtype_in_range(enum pg_dtype dt)
{
    return (unsigned)dt < (unsigned)PG_DTYPE_COUNT;
}

static bool op_in_range(enum pg_op op)
{
    return (unsigned)op < (unsigned)PG_OP_COUNT;
}

size_t pg_dtype_size(enum pg_dtype dt)
{
    return dtype_in_range(dt) ? dtype_table[dt].size : 0;
}

const char *pg_dtype_name(enum pg_dtype dt)
{
    return dtype_in_range(dt) ? dtype_table[dt].name : "invalid";
}

const char *pg_op_name(enum pg_op op)
{
    return op_in_range(op) ? op_names[op] : "invalid";
}

bool pg_op_valid(enum pg_op op, enum pg_dtype dt)
{
    if (!op_in_range(op) || !dtype_in_range(dt)) {
        return false;
    }
    return (op_classes[op] & dtype_table[dt].cls) != 0;
}
