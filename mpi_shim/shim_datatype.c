/*
 * shim_datatype.c - the datatype engine: predefined types, the handle table of derived
 * types, typemap flattening, pack/unpack, and the MPI_Type_* functions.
 *
 * Every constructor reduces to "place nrep repetitions, rstride bytes apart, of count
 * consecutive copies of type T at displacement D" entries fed to an accumulator (struct
 * acc), which folds sizes, bounds, alignment and the base element type, and builds both
 * forms of the typemap (shim_datatype.h) at once: the flat blocks while they stay within
 * SHIM_DTYPE_FLAT_MAX, and the compact entries (adjacent ones merged into one strided
 * entry). acc_finish keeps the flat form when it fits, else the compact one. A flat type
 * never refers back to its old types; those are kept (retained) for MPI_Type_get_contents,
 * and a compact type also retains the types its entries repeat.
 */
#include "config.h"

#include "shim_datatype.h"

#include "mps_log.h"
#include "shim.h"

#include <float.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------- */
/* Predefined types                                                                      */
/* ------------------------------------------------------------------------------------- */

#define TYPE_C(h, ctype, pg, per, nb, nm)                                                          \
    [(h)&0xff] = {.handle = (h),                                                                   \
                  .builtin = true,                                                                 \
                  .committed = true,                                                               \
                  .contig = true,                                                                  \
                  .size = sizeof(ctype),                                                           \
                  .mpi_size = sizeof(ctype),                                                       \
                  .extent = sizeof(ctype),                                                         \
                  .true_extent = sizeof(ctype),                                                    \
                  .align = _Alignof(ctype),                                                        \
                  .base = (pg),                                                                    \
                  .base_per_elem = (per),                                                          \
                  .nbasic = (nb),                                                                  \
                  .nblocks = 1,                                                                    \
                  .blocks = &builtin_4c[(h)&0xff].one_block,                                       \
                  .one_block = {0, sizeof(ctype)},                                                 \
                  .combiner = MPI_COMBINER_NAMED,                                                  \
                  .name = nm}
#define TYPE_1(h, ctype, pg) TYPE_C(h, ctype, pg, (pg) == PG_DTYPE_NONE ? 0 : 1, 1, #h)
#define TYPE_MARKER(h)                                                                             \
    [(h)&0xff] = {.handle = (h),                                                                   \
                  .builtin = true,                                                                 \
                  .committed = true,                                                               \
                  .contig = true,                                                                  \
                  .align = 1,                                                                      \
                  .base = PG_DTYPE_NONE,                                                           \
                  .blocks = &builtin_4c[(h)&0xff].one_block,                                       \
                  .combiner = MPI_COMBINER_NAMED,                                                  \
                  .name = #h}

struct two_int {
    int a, b;
};
struct two_float {
    float a, b;
};
struct two_double {
    double a, b;
};
/* Fortran REAL*16 and COMPLEX*32: only their size and alignment matter here. */
typedef long double quad_t_;
struct quad_complex_ {
    long double re, im;
};

/* The builtin handles 0x4c0000XX, indexed by their low byte (all distinct in MPICH's ABI). */
static struct shim_dtype builtin_4c[0x47] = {
    TYPE_1(MPI_CHAR, signed char, PG_INT8),
    TYPE_1(MPI_SIGNED_CHAR, signed char, PG_INT8),
    TYPE_1(MPI_UNSIGNED_CHAR, unsigned char, PG_UINT8),
    TYPE_1(MPI_BYTE, unsigned char, PG_BYTE),
    TYPE_1(MPI_PACKED, unsigned char, PG_BYTE),
    TYPE_1(MPI_WCHAR, int32_t, PG_INT32),
    TYPE_1(MPI_SHORT, short, PG_INT16),
    TYPE_1(MPI_UNSIGNED_SHORT, unsigned short, PG_UINT16),
    TYPE_1(MPI_INT, int, PG_INT32),
    TYPE_1(MPI_UNSIGNED, unsigned, PG_UINT32),
    TYPE_1(MPI_LONG, long, PG_INT64),
    TYPE_1(MPI_UNSIGNED_LONG, unsigned long, PG_UINT64),
    TYPE_1(MPI_LONG_LONG_INT, long long, PG_INT64),
    TYPE_1(MPI_UNSIGNED_LONG_LONG, unsigned long long, PG_UINT64),
    TYPE_1(MPI_FLOAT, float, PG_FLOAT),
    TYPE_1(MPI_DOUBLE, double, PG_DOUBLE),
    TYPE_1(MPI_LONG_DOUBLE, long double, PG_LONG_DOUBLE),
    TYPE_MARKER(MPI_LB),
    TYPE_MARKER(MPI_UB),
    TYPE_C(MPI_2INT, struct two_int, PG_2INT, 1, 2, "MPI_2INT"),
    TYPE_1(MPI_COMPLEX, float _Complex, PG_C_FLOAT_COMPLEX),
    TYPE_1(MPI_DOUBLE_COMPLEX, double _Complex, PG_C_DOUBLE_COMPLEX),
    TYPE_1(MPI_LOGICAL, int, PG_INT32),
    TYPE_1(MPI_REAL, float, PG_FLOAT),
    TYPE_1(MPI_DOUBLE_PRECISION, double, PG_DOUBLE),
    TYPE_1(MPI_INTEGER, int, PG_INT32),
    TYPE_C(MPI_2INTEGER, struct two_int, PG_2INT, 1, 2, "MPI_2INTEGER"),
    TYPE_C(MPI_2REAL, struct two_float, PG_FLOAT, 2, 2, "MPI_2REAL"),
    TYPE_C(MPI_2DOUBLE_PRECISION, struct two_double, PG_DOUBLE, 2, 2, "MPI_2DOUBLE_PRECISION"),
    TYPE_1(MPI_CHARACTER, char, PG_INT8),
    TYPE_1(MPI_REAL4, float, PG_FLOAT),
    TYPE_1(MPI_REAL8, double, PG_DOUBLE),
    TYPE_1(MPI_REAL16, quad_t_, PG_DTYPE_NONE),
    TYPE_1(MPI_COMPLEX8, float _Complex, PG_C_FLOAT_COMPLEX),
    TYPE_1(MPI_COMPLEX16, double _Complex, PG_C_DOUBLE_COMPLEX),
    TYPE_1(MPI_COMPLEX32, struct quad_complex_, PG_DTYPE_NONE),
    TYPE_1(MPI_INTEGER1, int8_t, PG_INT8),
    TYPE_1(MPI_INTEGER2, int16_t, PG_INT16),
    TYPE_1(MPI_INTEGER4, int32_t, PG_INT32),
    TYPE_1(MPI_INTEGER8, int64_t, PG_INT64),
    TYPE_1(MPI_INT8_T, int8_t, PG_INT8),
    TYPE_1(MPI_INT16_T, int16_t, PG_INT16),
    TYPE_1(MPI_INT32_T, int32_t, PG_INT32),
    TYPE_1(MPI_INT64_T, int64_t, PG_INT64),
    TYPE_1(MPI_UINT8_T, uint8_t, PG_UINT8),
    TYPE_1(MPI_UINT16_T, uint16_t, PG_UINT16),
    TYPE_1(MPI_UINT32_T, uint32_t, PG_UINT32),
    TYPE_1(MPI_UINT64_T, uint64_t, PG_UINT64),
    TYPE_1(MPI_C_BOOL, _Bool, PG_BOOL),
    TYPE_1(MPI_C_FLOAT_COMPLEX, float _Complex, PG_C_FLOAT_COMPLEX),
    TYPE_1(MPI_C_DOUBLE_COMPLEX, double _Complex, PG_C_DOUBLE_COMPLEX),
    TYPE_1(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex, PG_C_LONG_DOUBLE_COMPLEX),
    TYPE_1(MPIX_C_FLOAT16, uint16_t, PG_FLOAT16),
    TYPE_1(MPI_AINT, MPI_Aint, PG_INT64),
    TYPE_1(MPI_OFFSET, MPI_Offset, PG_INT64),
    TYPE_1(MPI_COUNT, MPI_Count, PG_INT64),
    TYPE_1(MPI_CXX_BOOL, _Bool, PG_BOOL),
    TYPE_1(MPI_CXX_FLOAT_COMPLEX, float _Complex, PG_C_FLOAT_COMPLEX),
    TYPE_1(MPI_CXX_DOUBLE_COMPLEX, double _Complex, PG_C_DOUBLE_COMPLEX),
    TYPE_1(MPI_CXX_LONG_DOUBLE_COMPLEX, long double _Complex, PG_C_LONG_DOUBLE_COMPLEX),
};

/* The MINLOC/MAXLOC pairs 0x8c00000X. Their type signature is (value type, int), so their
 * packed form is the value's bytes and then the index's, without the struct's padding: a
 * message sent as {double, int, double, int} and received as 2 x MPI_DOUBLE_INT must match
 * by signature. The typed layout (extent, true extent) is the C struct's, as in MPICH. A pair
 * whose struct has no padding (MPI_FLOAT_INT) stays contiguous; the others are one or two
 * blocks (MPI_SHORT_INT has its padding between the short and the int). */
#define PAIR_VAL(st) sizeof(((struct st *)0)->v)
#define PAIR_GAP(st) (offsetof(struct st, i) != PAIR_VAL(st))
#define TYPE_PAIR(h, st, pg, nm)                                                                   \
    [(h)&0xff] = {.handle = (h),                                                                   \
                  .builtin = true,                                                                 \
                  .committed = true,                                                               \
                  .contig = PAIR_VAL(st) + sizeof(int) == sizeof(struct st),                       \
                  .size = PAIR_VAL(st) + sizeof(int),                                              \
                  .mpi_size = PAIR_VAL(st) + sizeof(int),                                          \
                  .extent = sizeof(struct st),                                                     \
                  .true_extent = offsetof(struct st, i) + sizeof(int),                             \
                  .align = _Alignof(struct st),                                                    \
                  .base = (pg),                                                                    \
                  .base_per_elem = 1,                                                              \
                  .nbasic = 2,                                                                     \
                  .nblocks = PAIR_GAP(st) ? 2 : 1,                                                 \
                  .blocks = PAIR_GAP(st) ? pair_blocks_##st : &builtin_8c[(h)&0xff].one_block,     \
                  .one_block = {0, PAIR_VAL(st) + sizeof(int)},                                    \
                  .combiner = MPI_COMBINER_NAMED,                                                  \
                  .name = nm}
#define PAIR_BLOCKS(st)                                                                            \
    static struct shim_dtype_block pair_blocks_##st[2] = {                                         \
        {0, PAIR_VAL(st)}, {offsetof(struct st, i), sizeof(int)}}

PAIR_BLOCKS(pg_float_int);
PAIR_BLOCKS(pg_double_int);
PAIR_BLOCKS(pg_long_int);
PAIR_BLOCKS(pg_short_int);
PAIR_BLOCKS(pg_long_double_int);

static struct shim_dtype builtin_8c[5] = {
    TYPE_PAIR(MPI_FLOAT_INT, pg_float_int, PG_FLOAT_INT, "MPI_FLOAT_INT"),
    TYPE_PAIR(MPI_DOUBLE_INT, pg_double_int, PG_DOUBLE_INT, "MPI_DOUBLE_INT"),
    TYPE_PAIR(MPI_LONG_INT, pg_long_int, PG_LONG_INT, "MPI_LONG_INT"),
    TYPE_PAIR(MPI_SHORT_INT, pg_short_int, PG_SHORT_INT, "MPI_SHORT_INT"),
    TYPE_PAIR(MPI_LONG_DOUBLE_INT, pg_long_double_int, PG_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT"),
};

struct shim_dtype *shim_dtype_builtin(MPI_Datatype h)
{
    unsigned int u = (unsigned int)h;

    if ((u >> 24) == 0x4cu && (u & 0xffu) < 0x47u && (unsigned)builtin_4c[u & 0xffu].handle == u) {
        return &builtin_4c[u & 0xffu];
    }
    if ((u >> 8) == 0x8c0000u && (u & 0xffu) < 5u) {
        return &builtin_8c[u & 0xffu];
    }
    return NULL;
}

const char *shim_dtype_builtin_name(MPI_Datatype h)
{
    struct shim_dtype *t = shim_dtype_builtin(h);
    return t ? t->name : NULL;
}

/* ------------------------------------------------------------------------------------- */
/* The handle table of derived types                                                     */
/* ------------------------------------------------------------------------------------- */

/* A handle's index holds a 20-bit slot and a 6-bit generation that changes on each reuse of
 * the slot. Slots live in chunks that never move, so lookups need no lock. */
#define SLOT_BITS 20
#define CHUNK_BITS 10
#define CHUNK_SIZE (1u << CHUNK_BITS)
#define NCHUNKS (1u << (SLOT_BITS - CHUNK_BITS))
#define GEN_MASK 0x3fu

struct slot {
    struct shim_dtype *obj;
    unsigned int gen;
    unsigned int next_free;
};

static struct slot *chunks[NCHUNKS];
static unsigned int next_unused;
static unsigned int free_head = UINT_MAX;
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;

static struct slot *slot_at(unsigned int idx)
{
    struct slot *c = __atomic_load_n(&chunks[idx >> CHUNK_BITS], __ATOMIC_ACQUIRE);
    return c ? &c[idx & (CHUNK_SIZE - 1)] : NULL;
}

/* Gives t a new handle. Call with table_lock held. Returns MPI_SUCCESS or MPI_ERR_OTHER. */
static int publish_locked(struct shim_dtype *t)
{
    unsigned int idx;
    struct slot *s;
    if (free_head != UINT_MAX) {
        idx = free_head;
        s = slot_at(idx);
        free_head = s->next_free;
    } else {
        if (next_unused >= (1u << SLOT_BITS)) {
            return mps_error(MPI_ERR_OTHER, "more than %u derived datatypes exist", next_unused);
        }
        idx = next_unused;
        if (!chunks[idx >> CHUNK_BITS]) {
            struct slot *c = calloc(CHUNK_SIZE, sizeof(*c));
            if (!c) {
                return mps_error(MPI_ERR_OTHER, "out of memory for the datatype table");
            }
            __atomic_store_n(&chunks[idx >> CHUNK_BITS], c, __ATOMIC_RELEASE);
        }
        next_unused++;
        s = slot_at(idx);
    }
    s->gen = (s->gen + 1) & GEN_MASK;
    t->handle = MPISHIM_HANDLE_MAKE(MPISHIM_KIND_INDIRECT, MPISHIM_OBJ_DATATYPE,
                                    (s->gen << SLOT_BITS) | idx);
    __atomic_store_n(&s->obj, t, __ATOMIC_RELEASE);
    return MPI_SUCCESS;
}

/* Removes t's handle from the table. Call with table_lock held. */
static void unpublish_locked(struct shim_dtype *t)
{
    unsigned int idx = (unsigned int)MPISHIM_HANDLE_INDEX(t->handle) & ((1u << SLOT_BITS) - 1);
    struct slot *s = slot_at(idx);
    __atomic_store_n(&s->obj, NULL, __ATOMIC_RELEASE);
    s->next_free = free_head;
    free_head = idx;
}

static struct shim_dtype *derived_of(unsigned int u)
{
    unsigned int idx, gen;
    struct slot *s;
    struct shim_dtype *t;
    if (MPISHIM_HANDLE_KIND(u) != MPISHIM_KIND_INDIRECT ||
        MPISHIM_HANDLE_OBJ(u) != MPISHIM_OBJ_DATATYPE) {
        return NULL;
    }
    idx = u & ((1u << SLOT_BITS) - 1);
    gen = (u >> SLOT_BITS) & GEN_MASK;
    s = idx < (1u << SLOT_BITS) ? slot_at(idx) : NULL;
    if (!s) {
        return NULL;
    }
    t = __atomic_load_n(&s->obj, __ATOMIC_ACQUIRE);
    return (t && s->gen == gen) ? t : NULL;
}

int shim_dtype_lookup(MPI_Datatype h, struct shim_dtype **out)
{
    struct shim_dtype *t = shim_dtype_builtin(h);
    if (!t) {
        t = derived_of((unsigned int)h);
    }
    if (!t) {
        return MPI_ERR_TYPE;
    }
    *out = t;
    return MPI_SUCCESS;
}

int shim_dtype_check_comm(MPI_Datatype h, struct shim_dtype **out)
{
    struct shim_dtype *t;
    if (h == MPI_DATATYPE_NULL) {
        return mps_error(MPI_ERR_TYPE, "datatype is MPI_DATATYPE_NULL");
    }
    if (shim_dtype_lookup(h, &t) != MPI_SUCCESS) {
        return mps_error(MPI_ERR_TYPE, "datatype 0x%x is invalid or freed", (unsigned int)h);
    }
    if (!t->committed) {
        return mps_error(MPI_ERR_TYPE, "datatype 0x%x is not committed", (unsigned int)h);
    }
    if (h == MPI_LB || h == MPI_UB) {
        return mps_error(MPI_ERR_TYPE, "%s is a marker, not a datatype to communicate", t->name);
    }
    *out = t;
    return MPI_SUCCESS;
}

/* One entry of the compact form: nrep repetitions, rstride bytes apart, of count consecutive
 * elements of t (extent apart) at disp. pstart: the packed bytes of one element of the
 * whole type that come before this entry, for seeking by binary search. */
struct shim_dtype_ent {
    MPI_Aint disp, rstride;
    size_t nrep, count;
    size_t pstart;
    struct shim_dtype *t; /* retained */
};

static void release_ents(struct shim_dtype_ent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        shim_dtype_release(e[i].t);
    }
    free(e);
}

static void dtype_destroy(struct shim_dtype *t)
{
    for (int i = 0; i < t->ntypes; i++) {
        shim_dtype_release(t->types[i]);
    }
    release_ents(t->ent, t->nent);
    if (t->blocks != &t->one_block) {
        free(t->blocks);
    }
    free(t->sig);
    free(t->ints);
    free(t->aints);
    free(t->types);
    free(t);
}

void shim_dtype_retain(struct shim_dtype *t)
{
    if (!t->builtin) {
        __atomic_fetch_add(&t->refs, 1, __ATOMIC_RELAXED);
    }
}

void shim_dtype_release(struct shim_dtype *t)
{
    if (!t->builtin && __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        dtype_destroy(t);
    }
}

/* ------------------------------------------------------------------------------------- */
/* Building typemaps                                                                     */
/* ------------------------------------------------------------------------------------- */

/* The state of a type under construction: both forms so far and the folded properties.
 * too_many: the flat form grew too big (flat_too_big) (or would take too long to
 * find out) and was dropped; the type will be compact. */
struct acc {
    struct shim_dtype_block *b;
    size_t n, cap;
    bool too_many;
    struct shim_dtype_ent *e;
    size_t ne, cape;
    size_t size, nbasic, per_elem, align;
    MPI_Count mpi_size;
    bool have_bounds, have_true, have_xlb, have_xub, base_set, base_mixed, oom;
    MPI_Aint lb, ub, tlb, tub, xlb, xub;
    enum pg_dtype base;
    struct shim_sig_run *sig;
    size_t nsig, capsig;
    bool sig_too_big; /* more than SHIM_DTYPE_FLAT_MAX runs: dropped, the type is compact */
    bool no_external32;
};

/* How external32 (MPI-3.1 13.5.2, table 13.2) writes one number of a signature run: its bytes
 * reversed (EXT_SWAP), or converted where its external32 size or format is not this
 * machine's: long is 4 bytes there, long double an IEEE binary128 (x86's is the 80-bit x87
 * format in 16 bytes), wchar_t 2 bytes. */
enum ext_kind { EXT_SWAP = 0, EXT_LONG, EXT_ULONG, EXT_X87, EXT_WCHAR };

/* This machine's long double: x87 extended (converted), binary128 (swapped) or other. */
#define LDOUBLE_X87 (LDBL_MANT_DIG == 64 && LDBL_MAX_EXP == 16384)
#define LDOUBLE_QUAD (LDBL_MANT_DIG == 113)

/* The ext_kind of the numbers of builtin h (the value of a MINLOC/MAXLOC pair). */
static int ext_kind_of(MPI_Datatype h)
{
    if ((h == MPI_LONG || h == MPI_LONG_INT) && sizeof(long) == 8) {
        return EXT_LONG;
    }
    if (h == MPI_UNSIGNED_LONG && sizeof(unsigned long) == 8) {
        return EXT_ULONG;
    }
    if ((h == MPI_LONG_DOUBLE || h == MPI_LONG_DOUBLE_INT || h == MPI_C_LONG_DOUBLE_COMPLEX ||
         h == MPI_CXX_LONG_DOUBLE_COMPLEX) &&
        LDOUBLE_X87) {
        return EXT_X87;
    }
    if (h == MPI_WCHAR && sizeof(wchar_t) == 4) {
        return EXT_WCHAR;
    }
    return EXT_SWAP;
}

/* One element's signature runs of t into out (at most 2 for a builtin), or t's own list. */
static const struct shim_sig_run *sig_of(const struct shim_dtype *t, struct shim_sig_run out[2],
                                         size_t *n)
{
    if (!t->builtin) {
        *n = t->nsig;
        return t->sig;
    }
    *n = 0;
    if (t->size == 0 || t->nbasic == 0) {
        return out;
    }
    if (((unsigned int)t->handle >> 8) == 0x8c0000u) {
        /* A MINLOC/MAXLOC pair (builtin_8c): the value, then the int. */
        out[0] = (struct shim_sig_run){t->size - sizeof(int), 1, t->size - sizeof(int),
                                       ext_kind_of(t->handle)};
        out[1] = (struct shim_sig_run){sizeof(int), 1, sizeof(int), EXT_SWAP};
        *n = 2;
        return out;
    }
    out[0] = (struct shim_sig_run){t->size / t->nbasic, t->nbasic, t->size / t->nbasic,
                                   ext_kind_of(t->handle)};
    if (t->base == PG_C_FLOAT_COMPLEX || t->base == PG_C_DOUBLE_COMPLEX ||
        t->base == PG_C_LONG_DOUBLE_COMPLEX || t->handle == MPI_COMPLEX32) {
        out[0].unit /= 2;
    }
    *n = 1;
    return out;
}

/* Whether t holds a long double and this machine's long double is neither x87 extended nor
 * binary128: external32 cannot be written then (MPI-3.1 table 13.2: a 16-byte IEEE quad). */
static bool no_external32(const struct shim_dtype *t)
{
    static const MPI_Datatype ld[] = {MPI_LONG_DOUBLE, MPI_C_LONG_DOUBLE_COMPLEX,
                                      MPI_CXX_LONG_DOUBLE_COMPLEX, MPI_LONG_DOUBLE_INT};

    if (!t->builtin) {
        return t->no_external32;
    }
    for (size_t i = 0; i < sizeof(ld) / sizeof(*ld); i++) {
        if (t->handle == ld[i]) {
            return !LDOUBLE_X87 && !LDOUBLE_QUAD;
        }
    }
    return false;
}

static void acc_sig(struct acc *a, size_t esize, size_t n, size_t unit, int ext)
{
    if (n == 0 || a->oom) {
        return;
    }
    if (a->nsig > 0 && a->sig[a->nsig - 1].esize == esize && a->sig[a->nsig - 1].unit == unit &&
        a->sig[a->nsig - 1].ext == ext) {
        a->sig[a->nsig - 1].n += n;
        return;
    }
    if (a->nsig == a->capsig) {
        size_t cap = a->capsig ? 2 * a->capsig : 4;
        struct shim_sig_run *ns = realloc(a->sig, cap * sizeof(*ns));
        if (!ns) {
            a->oom = true;
            return;
        }
        a->sig = ns;
        a->capsig = cap;
    }
    a->sig[a->nsig++] = (struct shim_sig_run){esize, n, unit, ext};
}

/* Whether t's signature is a list of runs (sig_of); if not, t is compact and its signature
 * is that of its entries, in order. */
static bool sig_flat(const struct shim_dtype *t)
{
    return t->builtin || t->nsig > 0 || t->size == 0;
}

static void acc_sig_drop(struct acc *a)
{
    free(a->sig);
    a->sig = NULL;
    a->nsig = a->capsig = 0;
    a->sig_too_big = true;
}

/* Appends count copies of t's signature. A signature of mixed types repeats its runs with
 * each copy, so past SHIM_DTYPE_FLAT_MAX runs it is dropped (and the type made compact)
 * rather than grown with the count. */
static void acc_sig_entry(struct acc *a, MPI_Aint count, const struct shim_dtype *t)
{
    struct shim_sig_run tmp[2];
    size_t n;
    const struct shim_sig_run *r = sig_of(t, tmp, &n);

    if (a->sig_too_big) {
        return;
    }
    if (!sig_flat(t)) {
        acc_sig_drop(a);
        return;
    }
    if (n == 1) {
        acc_sig(a, r[0].esize, (size_t)count * r[0].n, r[0].unit, r[0].ext);
    }
    for (MPI_Aint j = 0; j < count && n > 1 && a->nsig <= SHIM_DTYPE_FLAT_MAX; j++) {
        for (size_t k = 0; k < n; k++) {
            acc_sig(a, r[k].esize, r[k].n, r[k].unit, r[k].ext);
        }
    }
    if (a->nsig > SHIM_DTYPE_FLAT_MAX) {
        acc_sig_drop(a);
    }
}

static void acc_block(struct acc *a, MPI_Aint off, size_t len)
{
    if (len == 0 || a->oom) {
        return;
    }
    if (a->n > 0 && a->b[a->n - 1].off + (MPI_Aint)a->b[a->n - 1].len == off) {
        a->b[a->n - 1].len += len;
        return;
    }
    if (a->n == a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 8;
        struct shim_dtype_block *nb = realloc(a->b, cap * sizeof(*nb));
        if (!nb) {
            a->oom = true;
            return;
        }
        a->b = nb;
        a->cap = cap;
    }
    a->b[a->n].off = off;
    a->b[a->n].len = len;
    a->n++;
}

static void acc_bounds(struct acc *a, MPI_Aint disp, MPI_Aint count, const struct shim_dtype *t)
{
    MPI_Aint span = (count - 1) * t->extent;
    MPI_Aint lo = disp + t->lb + (span < 0 ? span : 0);
    MPI_Aint hi = disp + t->lb + t->extent + (span > 0 ? span : 0);
    if (!a->have_bounds || lo < a->lb) {
        a->lb = lo;
    }
    if (!a->have_bounds || hi > a->ub) {
        a->ub = hi;
    }
    a->have_bounds = true;
    /* Sticky MPI_LB/MPI_UB markers (MPI-1 rules; also set by MPI_Type_create_resized). */
    if (t->explicit_lb && (!a->have_xlb || lo < a->xlb)) {
        a->xlb = lo;
        a->have_xlb = true;
    }
    if (t->explicit_ub && (!a->have_xub || hi > a->xub)) {
        a->xub = hi;
        a->have_xub = true;
    }
    if (t->size > 0) {
        MPI_Aint tlo = disp + t->true_lb + (span < 0 ? span : 0);
        MPI_Aint thi = disp + t->true_lb + t->true_extent + (span > 0 ? span : 0);
        a->tlb = (!a->have_true || tlo < a->tlb) ? tlo : a->tlb;
        a->tub = (!a->have_true || thi > a->tub) ? thi : a->tub;
        a->have_true = true;
    }
}

static void acc_base(struct acc *a, MPI_Aint count, const struct shim_dtype *t)
{
    if (t->size == 0) {
        return;
    }
    if (!a->base_set) {
        a->base = t->base;
        a->base_set = true;
    } else if (a->base != t->base) {
        a->base_mixed = true;
    }
    a->per_elem += (size_t)count * t->base_per_elem;
}

/* Whether the elements of t follow each other in memory without a gap: one block as long
 * as the extent (a basic type, a contiguous type, a resized one that stays dense). */
static bool dense(const struct shim_dtype *t)
{
    return t->nent == 0 && t->nblocks == 1 && (MPI_Aint)t->blocks[0].len == t->extent;
}

/* Whether the flat form has grown past SHIM_DTYPE_FLAT_MAX blocks and past the size of the
 * compact entries (with the one being added): it is then dropped. A long flat list is kept
 * only where the compact form would be no smaller, as for an indexed type of irregular
 * blocks, whose blocks are its arguments. */
static bool flat_too_big(const struct acc *a)
{
    return a->n > SHIM_DTYPE_FLAT_MAX &&
           a->n * sizeof(struct shim_dtype_block) > (a->ne + 1) * sizeof(struct shim_dtype_ent);
}

/* Adds the flat blocks of an entry (see acc_vec), unless the flat form is already given up.
 * Dense copies that touch make one block; otherwise blocks are appended one at a time, and
 * the flat form is dropped when flat_too_big or after 4 * SHIM_DTYPE_FLAT_MAX appends in one
 * call (merged ones), so that no constructor spends time in proportion to the block count. */
static void acc_flat(struct acc *a, MPI_Aint disp, size_t nrep, MPI_Aint rstride, size_t count,
                     const struct shim_dtype *t)
{
    bool d = dense(t);
    size_t pieces = 0;

    if (a->too_many || a->oom) {
        return;
    }
    if (t->nent > 0) {
        a->too_many = true;
        return;
    }
    if (d && (nrep == 1 || rstride == (MPI_Aint)count * t->extent)) {
        acc_block(a, disp + t->blocks[0].off, nrep * count * t->blocks[0].len);
        a->too_many = flat_too_big(a);
        return;
    }
    for (size_t r = 0; r < nrep; r++) {
        for (size_t j = 0; j < (d ? 1 : count); j++) {
            for (size_t k = 0; k < t->nblocks; k++) {
                MPI_Aint off = disp + (MPI_Aint)r * rstride + (MPI_Aint)j * t->extent;
                acc_block(a, off + t->blocks[k].off,
                          d ? count * t->blocks[k].len : t->blocks[k].len);
                if (flat_too_big(a) || ++pieces > 4 * SHIM_DTYPE_FLAT_MAX) {
                    a->too_many = true;
                    return;
                }
            }
        }
    }
}

/* Whether an entry of nrep == 1 (disp, count, t) extends the last one: the next count
 * elements right after its own, or the next repetition of the same count. */
static bool acc_merge(struct acc *a, MPI_Aint disp, size_t count, const struct shim_dtype *t)
{
    struct shim_dtype_ent *l = a->ne > 0 ? &a->e[a->ne - 1] : NULL;

    if (!l || l->t != t) {
        return false;
    }
    if (l->nrep == 1 && disp == l->disp + (MPI_Aint)l->count * t->extent) {
        l->count += count;
        return true;
    }
    if (l->count != count) {
        return false;
    }
    if (l->nrep == 1) {
        l->rstride = disp - l->disp;
        l->nrep = 2;
        return true;
    }
    if (disp == l->disp + (MPI_Aint)l->nrep * l->rstride) {
        l->nrep++;
        return true;
    }
    return false;
}

/* Adds a compact entry, merged into the last one where it continues it. */
static void acc_ent(struct acc *a, MPI_Aint disp, size_t nrep, MPI_Aint rstride, size_t count,
                    struct shim_dtype *t)
{
    if (a->oom || t->size == 0 || (nrep == 1 && acc_merge(a, disp, count, t))) {
        return;
    }
    if (a->ne == a->cape) {
        size_t cap = a->cape ? 2 * a->cape : 2;
        struct shim_dtype_ent *ne = realloc(a->e, cap * sizeof(*ne));
        if (!ne) {
            a->oom = true;
            return;
        }
        a->e = ne;
        a->cape = cap;
    }
    shim_dtype_retain(t);
    a->e[a->ne++] = (struct shim_dtype_ent){disp, nrep > 1 ? rstride : 0, nrep, count, 0, t};
}

/* A marker (MPI_LB, MPI_UB) at disp: the lowest MPI_LB and the highest MPI_UB count. */
static void acc_marker(struct acc *a, MPI_Aint disp, const struct shim_dtype *t)
{
    bool lb = t->handle == MPI_LB;
    MPI_Aint *x = lb ? &a->xlb : &a->xub;
    bool *have = lb ? &a->have_xlb : &a->have_xub;
    if (!*have || (lb ? disp < *x : disp > *x)) {
        *x = disp;
    }
    *have = true;
}

/* Places nrep repetitions, rstride bytes apart, of count consecutive copies of t (stride:
 * its extent) at byte displacement disp: a vector in one call, in time and memory that do
 * not depend on nrep (but for a type signature of several runs, see acc_sig_entry). */
static void acc_vec(struct acc *a, MPI_Aint disp, size_t nrep, MPI_Aint rstride, MPI_Aint count,
                    struct shim_dtype *t)
{
    MPI_Aint last = disp + (nrep > 0 ? (MPI_Aint)(nrep - 1) * rstride : 0);

    if (t->handle == MPI_LB || t->handle == MPI_UB) {
        if (nrep > 0) {
            acc_marker(a, disp, t);
            acc_marker(a, last, t);
        }
        return;
    }
    if (count <= 0 || nrep == 0) {
        return;
    }
    a->size += nrep * (size_t)count * t->size;
    a->mpi_size += (MPI_Count)nrep * (MPI_Count)count * t->mpi_size;
    a->nbasic += nrep * (size_t)count * t->nbasic;
    a->align = t->align > a->align ? t->align : a->align;
    /* Bounds are min/max over a linear progression: its two ends decide them. */
    acc_bounds(a, disp, count, t);
    acc_bounds(a, last, count, t);
    acc_base(a, (MPI_Aint)nrep * count, t);
    acc_sig_entry(a, (MPI_Aint)nrep * count, t);
    a->no_external32 |= no_external32(t);
    acc_flat(a, disp, nrep, rstride, (size_t)count, t);
    acc_ent(a, disp, nrep, rstride, (size_t)count, t);
}

/* Places count consecutive copies of t (stride: its extent) at byte displacement disp. */
static void acc_entry(struct acc *a, MPI_Aint disp, MPI_Aint count, struct shim_dtype *t)
{
    acc_vec(a, disp, 1, 0, count, t);
}

/* Keeps the flat form if it fits (see flat_too_big), else the compact one (with each
 * entry's packed start). */
static void acc_typemap(struct acc *a, struct shim_dtype *t)
{
    bool smaller = a->n * sizeof(struct shim_dtype_block) > a->ne * sizeof(struct shim_dtype_ent);

    if (a->too_many || a->sig_too_big || (a->n > SHIM_DTYPE_FLAT_MAX && smaller)) {
        free(a->b);
        size_t p = 0;
        for (size_t i = 0; i < a->ne; i++) {
            a->e[i].pstart = p;
            p += a->e[i].nrep * a->e[i].count * a->e[i].t->size;
        }
        t->ent = a->e;
        t->nent = a->ne;
        t->blocks = &t->one_block;
        return;
    }
    release_ents(a->e, a->ne);
    t->nblocks = a->n;
    if (a->n <= 1) {
        t->one_block = a->n ? a->b[0] : (struct shim_dtype_block){0, 0};
        t->blocks = &t->one_block;
        free(a->b);
    } else {
        t->blocks = a->b;
    }
}

/* Turns the accumulated state into a new (unpublished) type object; NULL when out of memory.
 * pad_struct applies MPI_Type_create_struct's rounding of the extent to the alignment. */
static struct shim_dtype *acc_finish(struct acc *a, bool pad_struct)
{
    struct shim_dtype *t = a->oom ? NULL : calloc(1, sizeof(*t));
    if (!t) {
        free(a->b);
        free(a->sig);
        release_ents(a->e, a->ne);
        return NULL;
    }
    t->sig = a->sig;
    t->nsig = a->nsig;
    t->no_external32 = a->no_external32;
    t->refs = 1;
    t->handle_refs = 1;
    t->size = a->size;
    t->mpi_size = a->mpi_size;
    t->nbasic = a->nbasic;
    t->align = a->align ? a->align : 1;
    t->explicit_lb = a->have_xlb;
    t->explicit_ub = a->have_xub;
    t->lb = a->have_xlb ? a->xlb : (a->have_bounds ? a->lb : 0);
    MPI_Aint ub = a->have_xub ? a->xub : (a->have_bounds ? a->ub : 0);
    if (pad_struct && !a->have_xub && (ub - t->lb) % (MPI_Aint)t->align != 0) {
        ub += (MPI_Aint)t->align - (ub - t->lb) % (MPI_Aint)t->align;
    }
    t->extent = ub - t->lb;
    t->true_lb = a->have_true ? a->tlb : 0;
    t->true_extent = a->have_true ? a->tub - a->tlb : 0;
    bool one_base = a->base_set && !a->base_mixed && a->base != PG_DTYPE_NONE;
    t->base = one_base ? a->base : PG_DTYPE_NONE;
    t->base_per_elem = one_base ? a->per_elem : 0;
    acc_typemap(a, t);
    /* A compact type has more than SHIM_DTYPE_FLAT_MAX blocks: never contiguous. */
    t->contig = t->nent == 0 && (MPI_Aint)t->size == t->extent &&
                (t->nblocks == 0 || (t->nblocks == 1 && t->blocks[0].off == 0));
    return t;
}

/* Records the constructor's arguments for MPI_Type_get_contents and retains the old types. */
static int record(struct shim_dtype *t, int combiner, int ni, const int *ints, int na,
                  const MPI_Aint *aints, int nd, struct shim_dtype *const *types)
{
    t->combiner = combiner;
    t->ints = ni ? malloc((size_t)ni * sizeof(int)) : NULL;
    t->aints = na ? malloc((size_t)na * sizeof(MPI_Aint)) : NULL;
    t->types = nd ? malloc((size_t)nd * sizeof(*types)) : NULL;
    if ((ni && !t->ints) || (na && !t->aints) || (nd && !t->types)) {
        return MPI_ERR_OTHER;
    }
    if (ni) {
        memcpy(t->ints, ints, (size_t)ni * sizeof(int));
    }
    if (na) {
        memcpy(t->aints, aints, (size_t)na * sizeof(MPI_Aint));
    }
    for (int i = 0; i < nd; i++) {
        t->types[i] = types[i];
        shim_dtype_retain(types[i]);
    }
    t->nints = ni;
    t->naints = na;
    t->ntypes = nd;
    return MPI_SUCCESS;
}

/* Publishes t and stores its handle; on failure frees t and raises. */
static int finish_new(const char *fn, struct shim_dtype *t, int rc, MPI_Datatype *newtype)
{
    if (t && rc == MPI_SUCCESS) {
        pthread_mutex_lock(&table_lock);
        rc = publish_locked(t);
        pthread_mutex_unlock(&table_lock);
        if (rc == MPI_SUCCESS) {
            *newtype = t->handle;
            return MPI_SUCCESS;
        }
        dtype_destroy(t);
        return shim_error(MPI_COMM_WORLD, fn, rc, "%s", mps_last_error());
    }
    if (t) {
        dtype_destroy(t);
    }
    return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_OTHER, "out of memory building a datatype");
}

/* ------------------------------------------------------------------------------------- */
/* Argument checks shared by the constructors                                            */
/* ------------------------------------------------------------------------------------- */

static int check_old(const char *fn, MPI_Datatype old, struct shim_dtype **t)
{
    int rc = shim_check_init(fn);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (old == MPI_DATATYPE_NULL || shim_dtype_lookup(old, t) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_TYPE, "oldtype 0x%x is invalid or freed",
                          (unsigned int)old);
    }
    return MPI_SUCCESS;
}

static int check_count(const char *fn, int count, const void *arr, MPI_Datatype *newtype)
{
    if (count < 0) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_COUNT, "count %d < 0", count);
    }
    if (count > 0 && !arr) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "an array argument is NULL");
    }
    if (!newtype) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "newtype is NULL");
    }
    return MPI_SUCCESS;
}

static int check_blocklens(const char *fn, int count, const int *bl)
{
    for (int i = 0; i < count; i++) {
        if (bl[i] < 0) {
            return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "blocklength[%d] = %d < 0", i,
                              bl[i]);
        }
    }
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------- */
/* Constructors                                                                          */
/* ------------------------------------------------------------------------------------- */

#pragma weak MPI_Type_contiguous = PMPI_Type_contiguous
int PMPI_Type_contiguous(int count, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    struct shim_dtype *old;
    struct acc a = {0};
    int rc = check_old(SHIM_FN, oldtype, &old);
    if (rc == MPI_SUCCESS) {
        rc = check_count(SHIM_FN, count, "", newtype);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    acc_entry(&a, 0, count, old);
    struct shim_dtype *t = acc_finish(&a, false);
    rc = t ? record(t, MPI_COMBINER_CONTIGUOUS, 1, &count, 0, NULL, 1, &old) : MPI_ERR_OTHER;
    return finish_new(SHIM_FN, t, rc, newtype);
}

/* vector and hvector: count blocks of blocklen elements, block i at i * stride_bytes. */
static int make_hvector(const char *fn, int count, int blocklen, MPI_Aint stride_bytes,
                        struct shim_dtype *old, MPI_Datatype *newtype, int combiner,
                        MPI_Aint stride_arg)
{
    struct acc a = {0};
    int rc = check_count(fn, count, "", newtype);
    if (rc == MPI_SUCCESS && blocklen < 0) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "blocklength %d < 0", blocklen);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    acc_vec(&a, 0, (size_t)count, stride_bytes, blocklen, old);
    struct shim_dtype *t = acc_finish(&a, false);
    int ints[3] = {count, blocklen, (int)stride_arg};
    if (!t) {
        rc = MPI_ERR_OTHER;
    } else if (combiner == MPI_COMBINER_VECTOR) {
        rc = record(t, combiner, 3, ints, 0, NULL, 1, &old);
    } else {
        rc = record(t, combiner, 2, ints, 1, &stride_arg, 1, &old);
    }
    return finish_new(fn, t, rc, newtype);
}

#pragma weak MPI_Type_vector = PMPI_Type_vector
int PMPI_Type_vector(int count, int blocklength, int stride, MPI_Datatype oldtype,
                     MPI_Datatype *newtype)
{
    struct shim_dtype *old;
    int rc = check_old(SHIM_FN, oldtype, &old);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return make_hvector(SHIM_FN, count, blocklength, (MPI_Aint)stride * old->extent, old, newtype,
                        MPI_COMBINER_VECTOR, stride);
}

#pragma weak MPI_Type_create_hvector = PMPI_Type_create_hvector
int PMPI_Type_create_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                             MPI_Datatype *newtype)
{
    struct shim_dtype *old;
    int rc = check_old(SHIM_FN, oldtype, &old);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return make_hvector(SHIM_FN, count, blocklength, stride, old, newtype, MPI_COMBINER_HVECTOR,
                        stride);
}

#pragma weak MPI_Type_hvector = PMPI_Type_hvector
int PMPI_Type_hvector(int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                      MPI_Datatype *newtype)
{
    return PMPI_Type_create_hvector(count, blocklength, stride, oldtype, newtype);
}

/* The indexed family. bl == NULL means every block has blocklen; a nonzero disp_scale means
 * the displacements count old extents (indexed), zero that they are bytes (hindexed); exactly
 * one of idisp (int) and adisp (MPI_Aint) is given. */
struct indexed_args {
    int count, blocklen;
    const int *bl, *idisp;
    const MPI_Aint *adisp;
    MPI_Aint disp_scale;
    int combiner;
};

static int indexed_record(struct shim_dtype *t, const struct indexed_args *x,
                          struct shim_dtype *old)
{
    int n = x->count, nb = x->bl ? n : 1;
    int ni = 1 + nb + (x->idisp ? n : 0);
    int *ints = malloc((size_t)ni * sizeof(int));
    if (!ints) {
        return MPI_ERR_OTHER;
    }
    ints[0] = n;
    if (x->bl) {
        memcpy(ints + 1, x->bl, (size_t)n * sizeof(int));
    } else {
        ints[1] = x->blocklen;
    }
    if (x->idisp) {
        memcpy(ints + 1 + nb, x->idisp, (size_t)n * sizeof(int));
    }
    int rc = record(t, x->combiner, ni, ints, x->adisp ? n : 0, x->adisp, 1, &old);
    free(ints);
    return rc;
}

static int make_indexed(const char *fn, const struct indexed_args *x, MPI_Datatype oldtype,
                        MPI_Datatype *newtype)
{
    struct shim_dtype *old;
    struct acc a = {0};
    const void *disp = x->idisp ? (const void *)x->idisp : (const void *)x->adisp;
    int rc = check_old(fn, oldtype, &old);
    if (rc == MPI_SUCCESS) {
        rc = check_count(fn, x->count, disp, newtype);
    }
    if (rc == MPI_SUCCESS && x->bl) {
        rc = check_blocklens(fn, x->count, x->bl);
    } else if (rc == MPI_SUCCESS && x->blocklen < 0) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "blocklength %d < 0", x->blocklen);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    MPI_Aint scale = x->disp_scale ? old->extent : 1;
    for (int i = 0; i < x->count; i++) {
        MPI_Aint d = x->idisp ? (MPI_Aint)x->idisp[i] : x->adisp[i];
        acc_entry(&a, d * scale, x->bl ? x->bl[i] : x->blocklen, old);
    }
    struct shim_dtype *t = acc_finish(&a, false);
    rc = t ? indexed_record(t, x, old) : MPI_ERR_OTHER;
    return finish_new(fn, t, rc, newtype);
}

#pragma weak MPI_Type_indexed = PMPI_Type_indexed
int PMPI_Type_indexed(int count, const int array_of_blocklengths[],
                      const int array_of_displacements[], MPI_Datatype oldtype,
                      MPI_Datatype *newtype)
{
    struct indexed_args x = {.count = count,
                             .bl = array_of_blocklengths,
                             .idisp = array_of_displacements,
                             .disp_scale = 1,
                             .combiner = MPI_COMBINER_INDEXED};
    if (count > 0 && !array_of_blocklengths) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    }
    return make_indexed(SHIM_FN, &x, oldtype, newtype);
}

#pragma weak MPI_Type_create_hindexed = PMPI_Type_create_hindexed
int PMPI_Type_create_hindexed(int count, const int array_of_blocklengths[],
                              const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                              MPI_Datatype *newtype)
{
    struct indexed_args x = {.count = count,
                             .bl = array_of_blocklengths,
                             .adisp = array_of_displacements,
                             .combiner = MPI_COMBINER_HINDEXED};
    if (count > 0 && !array_of_blocklengths) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "array_of_blocklengths is NULL");
    }
    return make_indexed(SHIM_FN, &x, oldtype, newtype);
}

#pragma weak MPI_Type_hindexed = PMPI_Type_hindexed
int PMPI_Type_hindexed(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                       MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    return PMPI_Type_create_hindexed(count, array_of_blocklengths, array_of_displacements,
                                     oldtype, newtype);
}

#pragma weak MPI_Type_create_indexed_block = PMPI_Type_create_indexed_block
int PMPI_Type_create_indexed_block(int count, int blocklength, const int array_of_displacements[],
                                   MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    struct indexed_args x = {.count = count,
                             .blocklen = blocklength,
                             .idisp = array_of_displacements,
                             .disp_scale = 1,
                             .combiner = MPI_COMBINER_INDEXED_BLOCK};
    return make_indexed(SHIM_FN, &x, oldtype, newtype);
}

#pragma weak MPI_Type_create_hindexed_block = PMPI_Type_create_hindexed_block
int PMPI_Type_create_hindexed_block(int count, int blocklength,
                                    const MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                    MPI_Datatype *newtype)
{
    struct indexed_args x = {.count = count,
                             .blocklen = blocklength,
                             .adisp = array_of_displacements,
                             .combiner = MPI_COMBINER_HINDEXED_BLOCK};
    return make_indexed(SHIM_FN, &x, oldtype, newtype);
}

static int struct_types(const char *fn, int count, const MPI_Datatype in[],
                        struct shim_dtype **out)
{
    for (int i = 0; i < count; i++) {
        if (in[i] == MPI_DATATYPE_NULL || shim_dtype_lookup(in[i], &out[i]) != MPI_SUCCESS) {
            return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_TYPE,
                              "array_of_types[%d] = 0x%x is invalid or freed", i,
                              (unsigned int)in[i]);
        }
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Type_create_struct = PMPI_Type_create_struct
int PMPI_Type_create_struct(int count, const int array_of_blocklengths[],
                            const MPI_Aint array_of_displacements[],
                            const MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    struct shim_dtype **types = NULL;
    struct acc a = {0};
    int rc = shim_check_init(SHIM_FN);
    if (rc == MPI_SUCCESS) {
        rc = check_count(SHIM_FN, count,
                         array_of_blocklengths && array_of_displacements ? array_of_types : NULL,
                         newtype);
    }
    if (rc == MPI_SUCCESS) {
        rc = check_blocklens(SHIM_FN, count, array_of_blocklengths);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    types = malloc((size_t)(count > 0 ? count : 1) * sizeof(*types));
    if (!types) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_OTHER, "out of memory");
    }
    rc = struct_types(SHIM_FN, count, array_of_types, types);
    if (rc != MPI_SUCCESS) {
        goto out;
    }
    for (int i = 0; i < count; i++) {
        acc_entry(&a, array_of_displacements[i], array_of_blocklengths[i], types[i]);
    }
    struct shim_dtype *t = acc_finish(&a, true);
    int *ints = malloc((size_t)(count + 1) * sizeof(int));
    rc = (t && ints) ? MPI_SUCCESS : MPI_ERR_OTHER;
    if (rc == MPI_SUCCESS) {
        ints[0] = count;
        memcpy(ints + 1, array_of_blocklengths, (size_t)count * sizeof(int));
        rc = record(t, MPI_COMBINER_STRUCT, count + 1, ints, count, array_of_displacements, count,
                    types);
    }
    free(ints);
    rc = finish_new(SHIM_FN, t, rc, newtype);
out:
    free(types);
    return rc;
}

#pragma weak MPI_Type_struct = PMPI_Type_struct
int PMPI_Type_struct(int count, int array_of_blocklengths[], MPI_Aint array_of_displacements[],
                     MPI_Datatype array_of_types[], MPI_Datatype *newtype)
{
    return PMPI_Type_create_struct(count, array_of_blocklengths, array_of_displacements,
                                   array_of_types, newtype);
}

/* Checks the subarray arguments; C order is checked on the arrays as given. */
static int check_subarray(const char *fn, int ndims, const int sizes[], const int subsizes[],
                          const int starts[], int order)
{
    if (ndims <= 0) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_DIMS, "ndims %d <= 0", ndims);
    }
    if (!sizes || !subsizes || !starts) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "an array argument is NULL");
    }
    if (order != MPI_ORDER_C && order != MPI_ORDER_FORTRAN) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "order %d is neither MPI_ORDER_C "
                          "nor MPI_ORDER_FORTRAN", order);
    }
    for (int d = 0; d < ndims; d++) {
        if (sizes[d] <= 0 || subsizes[d] < 0 || subsizes[d] > sizes[d] || starts[d] < 0 ||
            starts[d] > sizes[d] - subsizes[d]) {
            return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG,
                              "dimension %d: size %d, subsize %d, start %d do not fit", d,
                              sizes[d], subsizes[d], starts[d]);
        }
    }
    return MPI_SUCCESS;
}

/* Adds the rows of a subarray: runs of subsizes[inner] elements, in the array's memory
 * order. dim(i) maps loop position i (0 = slowest) to the dimension index. */
static void subarray_rows(struct acc *a, int ndims, const int sizes[], const int subsizes[],
                          const int starts[], int order, struct shim_dtype *old)
{
    int idx[32] = {0};
#define DIM(i) (order == MPI_ORDER_C ? (i) : ndims - 1 - (i))
    int inner = DIM(ndims - 1);
    for (int d = 0; d < ndims; d++) {
        if (subsizes[d] == 0) {
            return;
        }
    }
    for (;;) {
        MPI_Aint off = 0;
        for (int i = 0; i < ndims; i++) {
            off = off * sizes[DIM(i)] + starts[DIM(i)] + (i == ndims - 1 ? 0 : idx[i]);
        }
        acc_entry(a, off * old->extent, subsizes[inner], old);
        int i = ndims - 2;
        while (i >= 0 && ++idx[i] == subsizes[DIM(i)]) {
            idx[i--] = 0;
        }
        if (i < 0) {
            break;
        }
    }
#undef DIM
}

#pragma weak MPI_Type_create_subarray = PMPI_Type_create_subarray
int PMPI_Type_create_subarray(int ndims, const int array_of_sizes[],
                              const int array_of_subsizes[], const int array_of_starts[],
                              int order, MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    struct shim_dtype *old;
    struct acc a = {0};
    int rc = check_old(SHIM_FN, oldtype, &old);
    if (rc == MPI_SUCCESS) {
        rc = check_subarray(SHIM_FN, ndims, array_of_sizes, array_of_subsizes, array_of_starts,
                            order);
    }
    if (rc == MPI_SUCCESS && ndims > 32) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_DIMS, "ndims %d > 32", ndims);
    }
    if (rc == MPI_SUCCESS && !newtype) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "newtype is NULL");
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    subarray_rows(&a, ndims, array_of_sizes, array_of_subsizes, array_of_starts, order, old);
    /* The type spans the whole array: lb 0, extent prod(sizes) * old extent (MPI-3.1 4.1.3). */
    MPI_Aint total = old->extent;
    for (int d = 0; d < ndims; d++) {
        total *= array_of_sizes[d];
    }
    a.xlb = 0;
    a.xub = total;
    a.have_xlb = a.have_xub = true;
    struct shim_dtype *t = acc_finish(&a, false);
    int *ints = malloc((size_t)(3 * ndims + 2) * sizeof(int));
    rc = (t && ints) ? MPI_SUCCESS : MPI_ERR_OTHER;
    if (rc == MPI_SUCCESS) {
        ints[0] = ndims;
        memcpy(ints + 1, array_of_sizes, (size_t)ndims * sizeof(int));
        memcpy(ints + 1 + ndims, array_of_subsizes, (size_t)ndims * sizeof(int));
        memcpy(ints + 1 + 2 * ndims, array_of_starts, (size_t)ndims * sizeof(int));
        ints[1 + 3 * ndims] = order;
        rc = record(t, MPI_COMBINER_SUBARRAY, 3 * ndims + 2, ints, 0, NULL, 1, &old);
    }
    free(ints);
    return finish_new(SHIM_FN, t, rc, newtype);
}

/* The arguments of MPI_Type_create_darray, and per dimension the process coordinate and
 * block size (darg, or its default). */
struct darray {
    int size, rank, ndims, order;
    const int *gsizes, *distribs, *dargs, *psizes;
    int coord[32], block[32];
};

static int darray_dim_check(const char *fn, struct darray *d, int i)
{
    int g = d->gsizes[i], p = d->psizes[i], dist = d->distribs[i], b = d->dargs[i];

    if (g <= 0 || p <= 0) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "gsizes[%d] = %d, psizes[%d] = %d", i,
                          g, i, p);
    }
    if (dist != MPI_DISTRIBUTE_BLOCK && dist != MPI_DISTRIBUTE_CYCLIC &&
        dist != MPI_DISTRIBUTE_NONE) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "distribs[%d] = %d is unknown", i,
                          dist);
    }
    if (dist == MPI_DISTRIBUTE_NONE && p != 1) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG,
                          "dimension %d is not distributed but psizes[%d] = %d", i, i, p);
    }
    if (b != MPI_DISTRIBUTE_DFLT_DARG && b <= 0) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "dargs[%d] = %d", i, b);
    }
    if (dist == MPI_DISTRIBUTE_BLOCK && b != MPI_DISTRIBUTE_DFLT_DARG && (long)b * p < g) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG,
                          "dimension %d: %d blocks of %d cover less than its %d elements", i, p,
                          b, g);
    }
    d->block[i] = dist == MPI_DISTRIBUTE_NONE     ? g
                  : b != MPI_DISTRIBUTE_DFLT_DARG ? b
                  : dist == MPI_DISTRIBUTE_BLOCK  ? (g + p - 1) / p
                                                  : 1;
    return MPI_SUCCESS;
}

static int darray_check(const char *fn, struct darray *d, MPI_Datatype *newtype)
{
    long procs = 1;
    int rc = MPI_SUCCESS, r;

    if (d->ndims < 1 || d->ndims > 32 || d->size < 1 || d->rank < 0 || d->rank >= d->size ||
        (d->order != MPI_ORDER_C && d->order != MPI_ORDER_FORTRAN) || !newtype || !d->gsizes ||
        !d->distribs || !d->dargs || !d->psizes) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG,
                          "bad size %d, rank %d, ndims %d, order %d or a NULL array", d->size,
                          d->rank, d->ndims, d->order);
    }
    for (int i = 0; i < d->ndims && rc == MPI_SUCCESS; i++) {
        rc = darray_dim_check(fn, d, i);
        procs *= d->psizes[i];
    }
    if (rc == MPI_SUCCESS && procs != d->size) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG,
                        "the process grid has %ld processes, not size %d", procs, d->size);
    }
    /* The process grid is row-major whatever the array order (MPI-3.1 4.1.4). */
    r = d->rank;
    for (int i = d->ndims - 1; i >= 0 && rc == MPI_SUCCESS; i--) {
        d->coord[i] = r % d->psizes[i];
        r /= d->psizes[i];
    }
    return rc;
}

/* Whether global index j of dimension i belongs to this process (blocks of block[i] dealt
 * round-robin over the psizes[i] coordinates; BLOCK and NONE are the one-round case). */
static bool darray_owns(const struct darray *d, int i, int j)
{
    return (j / d->block[i]) % d->psizes[i] == d->coord[i];
}

/* Adds this process's elements in array order: dimension pos (0 = slowest in memory). */
static void darray_add(struct acc *a, const struct darray *d, struct shim_dtype *old, int pos,
                       MPI_Aint off)
{
    int i = d->order == MPI_ORDER_C ? pos : d->ndims - 1 - pos;

    for (int j = 0; j < d->gsizes[i]; j++) {
        if (!darray_owns(d, i, j)) {
            continue;
        }
        if (pos == d->ndims - 1) {
            acc_entry(a, (off * d->gsizes[i] + j) * old->extent, 1, old);
        } else {
            darray_add(a, d, old, pos + 1, off * d->gsizes[i] + j);
        }
    }
}

#pragma weak MPI_Type_create_darray = PMPI_Type_create_darray
int PMPI_Type_create_darray(int size, int rank, int ndims, const int array_of_gsizes[],
                            const int array_of_distribs[], const int array_of_dargs[],
                            const int array_of_psizes[], int order, MPI_Datatype oldtype,
                            MPI_Datatype *newtype)
{
    struct darray d = {size,           rank,          ndims, order, array_of_gsizes,
                       array_of_distribs, array_of_dargs, array_of_psizes};
    struct shim_dtype *old, *t;
    struct acc a = {0};
    MPI_Aint total;
    int *ints, ni = 4 * ndims + 4;
    int rc = check_old(SHIM_FN, oldtype, &old);

    if (rc == MPI_SUCCESS) {
        rc = darray_check(SHIM_FN, &d, newtype);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    darray_add(&a, &d, old, 0, 0);
    /* Like a subarray, the type spans the whole global array: lb 0, extent
     * prod(gsizes) * old extent. */
    total = old->extent;
    for (int i = 0; i < ndims; i++) {
        total *= array_of_gsizes[i];
    }
    a.xlb = 0;
    a.xub = total;
    a.have_xlb = a.have_xub = true;
    t = acc_finish(&a, false);
    ints = malloc((size_t)ni * sizeof(int));
    rc = (t && ints) ? MPI_SUCCESS : MPI_ERR_OTHER;
    if (rc == MPI_SUCCESS) {
        ints[0] = size;
        ints[1] = rank;
        ints[2] = ndims;
        memcpy(ints + 3, array_of_gsizes, (size_t)ndims * sizeof(int));
        memcpy(ints + 3 + ndims, array_of_distribs, (size_t)ndims * sizeof(int));
        memcpy(ints + 3 + 2 * ndims, array_of_dargs, (size_t)ndims * sizeof(int));
        memcpy(ints + 3 + 3 * ndims, array_of_psizes, (size_t)ndims * sizeof(int));
        ints[3 + 4 * ndims] = order;
        rc = record(t, MPI_COMBINER_DARRAY, ni, ints, 0, NULL, 1, &old);
    }
    free(ints);
    return finish_new(SHIM_FN, t, rc, newtype);
}

#pragma weak MPI_Type_create_resized = PMPI_Type_create_resized
int PMPI_Type_create_resized(MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                             MPI_Datatype *newtype)
{
    struct shim_dtype *old;
    struct acc a = {0};
    int rc = check_old(SHIM_FN, oldtype, &old);
    if (rc == MPI_SUCCESS) {
        rc = check_count(SHIM_FN, 1, "", newtype);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    acc_entry(&a, 0, 1, old);
    a.xlb = lb;
    a.xub = lb + extent;
    a.have_xlb = a.have_xub = true;
    struct shim_dtype *t = acc_finish(&a, false);
    MPI_Aint aints[2] = {lb, extent};
    rc = t ? record(t, MPI_COMBINER_RESIZED, 0, NULL, 2, aints, 1, &old) : MPI_ERR_OTHER;
    return finish_new(SHIM_FN, t, rc, newtype);
}

#pragma weak MPI_Type_dup = PMPI_Type_dup
int PMPI_Type_dup(MPI_Datatype oldtype, MPI_Datatype *newtype)
{
    struct shim_dtype *old;
    struct acc a = {0};
    int rc = check_old(SHIM_FN, oldtype, &old);
    if (rc == MPI_SUCCESS) {
        rc = check_count(SHIM_FN, 1, "", newtype);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* The same typemap and bounds: one entry of the old type, with its bounds kept. */
    acc_entry(&a, 0, 1, old);
    a.xlb = old->lb;
    a.xub = old->lb + old->extent;
    a.have_xlb = a.have_xub = true;
    struct shim_dtype *t = acc_finish(&a, false);
    if (t) {
        t->explicit_lb = old->explicit_lb;
        t->explicit_ub = old->explicit_ub;
        t->committed = old->committed;
        t->true_lb = old->true_lb;
        t->true_extent = old->true_extent;
    }
    rc = t ? record(t, MPI_COMBINER_DUP, 0, NULL, 0, NULL, 1, &old) : MPI_ERR_OTHER;
    rc = finish_new(SHIM_FN, t, rc, newtype);
    if (rc == MPI_SUCCESS && (rc = shim_attr_type_copy_all(oldtype, *newtype)) != MPI_SUCCESS) {
        PMPI_Type_free(newtype); /* a failed copy callback leaves no half-made type */
    }
    return rc;
}

/* ------------------------------------------------------------------------------------- */
/* Commit, free, queries                                                                 */
/* ------------------------------------------------------------------------------------- */

/* Looks up a datatype argument of fn, raising MPI_ERR_TYPE when it is not one. */
static int get_type(const char *fn, MPI_Datatype h, struct shim_dtype **t)
{
    int rc = shim_check_init(fn);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (h == MPI_DATATYPE_NULL || shim_dtype_lookup(h, t) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_TYPE, "datatype 0x%x is invalid or freed",
                          (unsigned int)h);
    }
    return MPI_SUCCESS;
}

#define NONNULL(fn, p)                                                                             \
    do {                                                                                           \
        if (!(p)) {                                                                                \
            return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "%s is NULL", #p);                  \
        }                                                                                          \
    } while (0)

#pragma weak MPI_Type_commit = PMPI_Type_commit
int PMPI_Type_commit(MPI_Datatype *datatype)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, datatype);
    int rc = get_type(SHIM_FN, *datatype, &t);
    if (rc == MPI_SUCCESS) {
        t->committed = true;
    }
    return rc;
}

#pragma weak MPI_Type_free = PMPI_Type_free
int PMPI_Type_free(MPI_Datatype *datatype)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, datatype);
    int rc = get_type(SHIM_FN, *datatype, &t);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (t->builtin || t->combiner == MPI_COMBINER_F90_INTEGER ||
        t->combiner == MPI_COMBINER_F90_REAL || t->combiner == MPI_COMBINER_F90_COMPLEX) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TYPE,
                          "%s is predefined and cannot be freed",
                          t->builtin ? t->name : "an MPI_Type_create_f90_* type");
    }
    /* The attributes go with the last handle, while it is still valid for the callbacks.
     * A failing delete callback is reported, and the type is freed all the same. */
    if (t->handle_refs == 1) {
        rc = shim_attr_type_delete_all(t);
    }
    pthread_mutex_lock(&table_lock);
    if (--t->handle_refs == 0) {
        unpublish_locked(t);
    }
    pthread_mutex_unlock(&table_lock);
    shim_dtype_release(t);
    *datatype = MPI_DATATYPE_NULL;
    return rc == MPI_SUCCESS
               ? rc
               : shim_error(MPI_COMM_WORLD, SHIM_FN, rc, "an attribute delete callback failed");
}

#pragma weak MPI_Type_get_extent_x = PMPI_Type_get_extent_x
int PMPI_Type_get_extent_x(MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent)
{
    MPI_Aint l, e;
    NONNULL(SHIM_FN, lb);
    NONNULL(SHIM_FN, extent);
    int rc;

    shim_outer_fn = SHIM_FN; /* errors in the caller's name */
    rc = PMPI_Type_get_extent(datatype, &l, &e);
    shim_outer_fn = NULL;
    if (rc == MPI_SUCCESS) {
        *lb = l;
        *extent = e;
    }
    return rc;
}

#pragma weak MPI_Type_get_extent = PMPI_Type_get_extent
int PMPI_Type_get_extent(MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, lb);
    NONNULL(SHIM_FN, extent);
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc == MPI_SUCCESS) {
        *lb = t->lb;
        *extent = t->extent;
    }
    return rc;
}

#pragma weak MPI_Type_get_true_extent_x = PMPI_Type_get_true_extent_x
int PMPI_Type_get_true_extent_x(MPI_Datatype datatype, MPI_Count *true_lb,
                                MPI_Count *true_extent)
{
    MPI_Aint l, e;
    NONNULL(SHIM_FN, true_lb);
    NONNULL(SHIM_FN, true_extent);
    int rc;

    shim_outer_fn = SHIM_FN; /* errors in the caller's name */
    rc = PMPI_Type_get_true_extent(datatype, &l, &e);
    shim_outer_fn = NULL;
    if (rc == MPI_SUCCESS) {
        *true_lb = l;
        *true_extent = e;
    }
    return rc;
}

#pragma weak MPI_Type_get_true_extent = PMPI_Type_get_true_extent
int PMPI_Type_get_true_extent(MPI_Datatype datatype, MPI_Aint *true_lb, MPI_Aint *true_extent)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, true_lb);
    NONNULL(SHIM_FN, true_extent);
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc == MPI_SUCCESS) {
        *true_lb = t->true_lb;
        *true_extent = t->true_extent;
    }
    return rc;
}

#pragma weak MPI_Type_extent = PMPI_Type_extent
int PMPI_Type_extent(MPI_Datatype datatype, MPI_Aint *extent)
{
    MPI_Aint lb;
    return PMPI_Type_get_extent(datatype, &lb, extent);
}

#pragma weak MPI_Type_lb = PMPI_Type_lb
int PMPI_Type_lb(MPI_Datatype datatype, MPI_Aint *displacement)
{
    MPI_Aint extent;
    return PMPI_Type_get_extent(datatype, displacement, &extent);
}

#pragma weak MPI_Type_ub = PMPI_Type_ub
int PMPI_Type_ub(MPI_Datatype datatype, MPI_Aint *displacement)
{
    MPI_Aint lb, extent;
    int rc = PMPI_Type_get_extent(datatype, &lb, &extent);
    if (rc == MPI_SUCCESS && displacement) {
        *displacement = lb + extent;
    }
    return rc;
}

#pragma weak MPI_Type_size_x = PMPI_Type_size_x
int PMPI_Type_size_x(MPI_Datatype datatype, MPI_Count *size)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, size);
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc == MPI_SUCCESS) {
        *size = t->mpi_size;
    }
    return rc;
}

#pragma weak MPI_Type_size = PMPI_Type_size
int PMPI_Type_size(MPI_Datatype datatype, int *size)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, size);
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc == MPI_SUCCESS) {
        *size = t->mpi_size > INT_MAX ? MPI_UNDEFINED : (int)t->mpi_size;
    }
    return rc;
}

#pragma weak MPI_Type_get_name = PMPI_Type_get_name
int PMPI_Type_get_name(MPI_Datatype datatype, char *type_name, int *resultlen)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, type_name);
    NONNULL(SHIM_FN, resultlen);
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc == MPI_SUCCESS) {
        size_t n = strnlen(t->name, MPI_MAX_OBJECT_NAME - 1);
        memcpy(type_name, t->name, n);
        type_name[n] = '\0';
        *resultlen = (int)n;
    }
    return rc;
}

#pragma weak MPI_Type_set_name = PMPI_Type_set_name
int PMPI_Type_set_name(MPI_Datatype datatype, const char *type_name)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, type_name);
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc == MPI_SUCCESS) {
        /* Longer names are truncated, as MPI-3.1 6.8 allows. */
        size_t n = strnlen(type_name, MPI_MAX_OBJECT_NAME - 1);
        memcpy(t->name, type_name, n);
        t->name[n] = '\0';
    }
    return rc;
}

#pragma weak MPI_Type_get_envelope = PMPI_Type_get_envelope
int PMPI_Type_get_envelope(MPI_Datatype datatype, int *num_integers, int *num_addresses,
                           int *num_datatypes, int *combiner)
{
    struct shim_dtype *t;
    NONNULL(SHIM_FN, num_integers);
    NONNULL(SHIM_FN, num_addresses);
    NONNULL(SHIM_FN, num_datatypes);
    NONNULL(SHIM_FN, combiner);
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc == MPI_SUCCESS) {
        *num_integers = t->nints;
        *num_addresses = t->naints;
        *num_datatypes = t->ntypes;
        *combiner = t->combiner;
    }
    return rc;
}

/* A user handle for t, as MPI_Type_get_contents returns it: builtins as they are; a derived
 * type gets one more handle reference (the user frees it), and a new handle if its old one
 * was freed meanwhile. */
static int handle_for_user(struct shim_dtype *t, MPI_Datatype *out)
{
    int rc = MPI_SUCCESS;
    if (t->builtin) {
        *out = t->handle;
        return MPI_SUCCESS;
    }
    pthread_mutex_lock(&table_lock);
    if (t->handle_refs == 0) {
        rc = publish_locked(t);
    }
    if (rc == MPI_SUCCESS) {
        t->handle_refs++;
        shim_dtype_retain(t);
        *out = t->handle;
    }
    pthread_mutex_unlock(&table_lock);
    return rc;
}

#pragma weak MPI_Type_get_contents = PMPI_Type_get_contents
int PMPI_Type_get_contents(MPI_Datatype datatype, int max_integers, int max_addresses,
                           int max_datatypes, int array_of_integers[],
                           MPI_Aint array_of_addresses[], MPI_Datatype array_of_datatypes[])
{
    struct shim_dtype *t;
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (t->combiner == MPI_COMBINER_NAMED) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TYPE,
                          "%s is predefined: it has no contents", t->name);
    }
    if (max_integers < t->nints || max_addresses < t->naints || max_datatypes < t->ntypes) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG,
                          "arrays too small: need %d integers, %d addresses, %d datatypes",
                          t->nints, t->naints, t->ntypes);
    }
    if ((t->nints && !array_of_integers) || (t->naints && !array_of_addresses) ||
        (t->ntypes && !array_of_datatypes)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "an array argument is NULL");
    }
    if (t->nints) {
        memcpy(array_of_integers, t->ints, (size_t)t->nints * sizeof(int));
    }
    if (t->naints) {
        memcpy(array_of_addresses, t->aints, (size_t)t->naints * sizeof(MPI_Aint));
    }
    for (int i = 0; i < t->ntypes && rc == MPI_SUCCESS; i++) {
        rc = handle_for_user(t->types[i], &array_of_datatypes[i]);
    }
    if (rc != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, rc, "%s", mps_last_error());
    }
    return MPI_SUCCESS;
}

/* Finds the smallest predefined type of typeclass with the given size (MPI-3.1 17.1.9). */
#pragma weak MPI_Type_match_size = PMPI_Type_match_size
int PMPI_Type_match_size(int typeclass, int size, MPI_Datatype *datatype)
{
    static const MPI_Datatype reals[] = {MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE};
    static const MPI_Datatype ints[] = {MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T};
    static const MPI_Datatype cplx[] = {MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX,
                                        MPI_C_LONG_DOUBLE_COMPLEX};
    const MPI_Datatype *list = typeclass == MPI_TYPECLASS_REAL      ? reals
                               : typeclass == MPI_TYPECLASS_INTEGER ? ints
                               : typeclass == MPI_TYPECLASS_COMPLEX ? cplx
                                                                    : NULL;
    size_t n = typeclass == MPI_TYPECLASS_INTEGER ? 4 : 3;
    NONNULL(SHIM_FN, datatype);
    if (!list) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "typeclass %d is unknown",
                          typeclass);
    }
    for (size_t i = 0; i < n; i++) {
        if (MPISHIM_BUILTIN_TYPE_SIZE(list[i]) == size) {
            *datatype = list[i];
            return MPI_SUCCESS;
        }
    }
    return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG,
                      "no predefined type of typeclass %d has size %d", typeclass, size);
}

/* The Fortran 90 parameterized types: the smallest predefined type of the list that has at
 * least the precision p (decimal digits) and the exponent range r; MPI_UNDEFINED leaves p or
 * r free. The handle returned is not that predefined one: MPI-3.1 4.1.13 gives these types
 * their own combiner (MPI_COMBINER_F90_*) whose contents are p and r, and clients decode
 * them so (mpi4py's Datatype.decode). Each is made once per (combiner, p, r), as a copy of
 * the chosen type, kept until the process ends and never freed (it is predefined), so
 * repeated calls return the same handle. */
struct f90_choice {
    int p, r;
    MPI_Datatype type;
};

#define F90_CACHE 32
static struct {
    int combiner, p, r;
    MPI_Datatype handle;
} f90_cache[F90_CACHE];
static int f90_cached;
static pthread_mutex_t f90_lock = PTHREAD_MUTEX_INITIALIZER;

/* A copy of base with combiner and contents (r alone for integers, else p and r). */
static int f90_make(int combiner, int p, int r, MPI_Datatype base, MPI_Datatype *out)
{
    struct shim_dtype *t;
    int ints[2] = {p, r};
    int ni = combiner == MPI_COMBINER_F90_INTEGER ? 1 : 2;
    int rc = PMPI_Type_dup(base, out);

    if (rc != MPI_SUCCESS || (rc = shim_dtype_lookup(*out, &t)) != MPI_SUCCESS) {
        return rc;
    }
    free(t->types); /* the dup's old type: a builtin, so holding no reference */
    t->types = NULL;
    t->ntypes = 0;
    t->combiner = combiner;
    t->ints = malloc(sizeof(ints));
    if (!t->ints) {
        return MPI_ERR_NO_MEM;
    }
    memcpy(t->ints, ni == 1 ? &ints[1] : ints, (size_t)ni * sizeof(int));
    t->nints = ni;
    return MPI_SUCCESS;
}

/* The handle of the F90 type (combiner, p, r) copied from base, made on first use. */
static int f90_handle(const char *fn, int combiner, int p, int r, MPI_Datatype base,
                      MPI_Datatype *newtype)
{
    int rc = MPI_SUCCESS;
    int i;

    pthread_mutex_lock(&f90_lock);
    for (i = 0; i < f90_cached; i++) {
        if (f90_cache[i].combiner == combiner && f90_cache[i].p == p && f90_cache[i].r == r) {
            break;
        }
    }
    if (i == f90_cached && i == F90_CACHE) {
        rc = MPI_ERR_INTERN;
    } else if (i == f90_cached) {
        rc = f90_make(combiner, p, r, base, &f90_cache[i].handle);
        if (rc == MPI_SUCCESS) {
            f90_cache[i].combiner = combiner;
            f90_cache[i].p = p;
            f90_cache[i].r = r;
            f90_cached++;
        }
    }
    if (rc == MPI_SUCCESS) {
        *newtype = f90_cache[i].handle;
    }
    pthread_mutex_unlock(&f90_lock);
    if (rc != MPI_SUCCESS) {
        return shim_error(
            MPI_COMM_WORLD, fn, rc, "cannot make the type (precision %d, range %d): %s", p, r,
            rc == MPI_ERR_INTERN ? "more than 32 distinct F90 types requested" : "out of memory");
    }
    return MPI_SUCCESS;
}

static int f90_pick(const char *fn, int combiner, const struct f90_choice *list, size_t n, int p,
                    int r, MPI_Datatype *newtype)
{
    int rc = shim_check_init(fn);

    if (rc == MPI_SUCCESS && !newtype) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "newtype is NULL");
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if ((p == MPI_UNDEFINED || p <= list[i].p) && (r == MPI_UNDEFINED || r <= list[i].r)) {
            return f90_handle(fn, combiner, p, r, list[i].type, newtype);
        }
    }
    return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG,
                      "no predefined type has precision %d and exponent range %d", p, r);
}

#pragma weak MPI_Type_create_f90_integer = PMPI_Type_create_f90_integer
int PMPI_Type_create_f90_integer(int r, MPI_Datatype *newtype)
{
    /* Decimal range: 10^r - 1 must fit (127 holds r = 2, 2^63 - 1 holds r = 18). */
    static const struct f90_choice ints[] = {{0, 2, MPI_INTEGER1},
                                             {0, 4, MPI_INTEGER2},
                                             {0, 9, MPI_INTEGER4},
                                             {0, 18, MPI_INTEGER8}};
    return f90_pick(SHIM_FN, MPI_COMBINER_F90_INTEGER, ints, 4, MPI_UNDEFINED, r, newtype);
}

/* IEEE binary32, binary64 and x87 extended (long double): precision and range as Fortran's
 * PRECISION() and RANGE() report them. */
#pragma weak MPI_Type_create_f90_real = PMPI_Type_create_f90_real
int PMPI_Type_create_f90_real(int p, int r, MPI_Datatype *newtype)
{
    static const struct f90_choice reals[] = {
        {6, 37, MPI_REAL4}, {15, 307, MPI_REAL8}, {18, 4931, MPI_REAL16}};
    return f90_pick(SHIM_FN, MPI_COMBINER_F90_REAL, reals, 3, p, r, newtype);
}

#pragma weak MPI_Type_create_f90_complex = PMPI_Type_create_f90_complex
int PMPI_Type_create_f90_complex(int p, int r, MPI_Datatype *newtype)
{
    static const struct f90_choice cplx[] = {
        {6, 37, MPI_COMPLEX8}, {15, 307, MPI_COMPLEX16}, {18, 4931, MPI_COMPLEX32}};
    return f90_pick(SHIM_FN, MPI_COMBINER_F90_COMPLEX, cplx, 3, p, r, newtype);
}

/* ------------------------------------------------------------------------------------- */
/* Pack and unpack                                                                       */
/* ------------------------------------------------------------------------------------- */

/* memcpy with the common small sizes spelled out, so the compiler emits single moves. */
static inline void copy_bytes(char *dst, const char *src, size_t len)
{
    switch (len) {
    case 4:
        memcpy(dst, src, 4);
        break;
    case 8:
        memcpy(dst, src, 8);
        break;
    case 16:
        memcpy(dst, src, 16);
        break;
    default:
        memcpy(dst, src, len);
    }
}

static void copy_range(char *typed, char *packed, const struct shim_dtype *t, size_t lo, size_t hi,
                       bool to_packed);

static inline void copy_dir(char *tp, char *pp, size_t len, bool to_packed)
{
    if (to_packed) {
        copy_bytes(pp, tp, len);
    } else {
        copy_bytes(tp, pp, len);
    }
}

/* The first entry of compact t whose packed bytes reach past p (binary search on pstart). */
static size_t ent_at(const struct shim_dtype *t, size_t p)
{
    size_t lo = 0, hi = t->nent;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ent[mid].pstart <= p) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* Packed bytes [lo, hi) of one element of compact t at elem; packed holds byte lo. Each
 * repetition of an entry is count elements of the type below: copied in one piece when
 * that type is dense (the strided-leaf fast path), else by recursion. */
static void copy_elem_compact(char *elem, char *packed, const struct shim_dtype *t, size_t lo,
                              size_t hi, bool to_packed)
{
    for (size_t i = ent_at(t, lo); i < t->nent && t->ent[i].pstart < hi; i++) {
        const struct shim_dtype_ent *e = &t->ent[i];
        size_t unit = e->count * e->t->size;
        size_t a = (lo > e->pstart ? lo : e->pstart) - e->pstart;
        size_t b = (hi < e->pstart + e->nrep * unit ? hi : e->pstart + e->nrep * unit) - e->pstart;
        char *pp = packed + (e->pstart + a - lo);
        for (size_t r = a / unit; r * unit < b; r++) {
            size_t rl = (a > r * unit ? a : r * unit) - r * unit;
            size_t rh = (b < (r + 1) * unit ? b : (r + 1) * unit) - r * unit;
            char *rep = elem + e->disp + (MPI_Aint)r * e->rstride;
            if (dense(e->t)) {
                copy_dir(rep + e->t->blocks[0].off + rl, pp, rh - rl, to_packed);
            } else {
                copy_range(rep, pp, e->t, rl, rh, to_packed);
            }
            pp += rh - rl;
        }
    }
}

/* Packed bytes [lo, hi) of one element of flat t at elem; packed holds byte lo. */
static void copy_elem_flat(char *elem, char *packed, const struct shim_dtype *t, size_t lo,
                           size_t hi, bool to_packed)
{
    size_t pos = 0;
    if (lo == 0 && hi == t->size) {
        /* A whole element (all but the ends of a partial copy): no bounds to check. */
        for (size_t b = 0; b < t->nblocks; packed += t->blocks[b++].len) {
            copy_dir(elem + t->blocks[b].off, packed, t->blocks[b].len, to_packed);
        }
        return;
    }
    for (size_t b = 0; b < t->nblocks && pos < hi; b++) {
        size_t blo = pos, bhi = pos + t->blocks[b].len;
        pos = bhi;
        if (bhi <= lo) {
            continue;
        }
        size_t from = (blo < lo ? lo : blo) - blo, to = (bhi < hi ? bhi : hi) - blo;
        copy_dir(elem + t->blocks[b].off + from, packed + (blo + from - lo), to - from, to_packed);
    }
}

/* Copies the packed bytes [lo, hi) of the elements of t at typed (element k at k * extent)
 * between the typed buffer and packed, which holds byte lo. */
static void copy_range(char *typed, char *packed, const struct shim_dtype *t, size_t lo, size_t hi,
                       bool to_packed)
{
    if (dense(t)) {
        copy_dir(typed + t->blocks[0].off + lo, packed, hi - lo, to_packed);
        return;
    }
    for (size_t k = lo / t->size; k * t->size < hi; k++) {
        size_t base = k * t->size;
        size_t elo = (lo > base ? lo : base) - base;
        size_t ehi = (hi < base + t->size ? hi : base + t->size) - base;
        char *elem = typed + (ptrdiff_t)k * t->extent, *pp = packed + (base + elo - lo);
        if (t->nent > 0) {
            copy_elem_compact(elem, pp, t, elo, ehi, to_packed);
        } else {
            copy_elem_flat(elem, pp, t, elo, ehi, to_packed);
        }
    }
}

/* Copies the packed bytes [skip, skip + max) of count elements between the typed buffer and
 * the packed one (to_packed chooses the direction). Returns the bytes copied. */
static size_t walk(char *typed, char *packed, size_t count, const struct shim_dtype *t,
                   size_t skip, size_t max, bool to_packed)
{
    size_t total = count * t->size;
    if (t->size == 0 || skip >= total) {
        return 0;
    }
    size_t end = (max < total - skip) ? skip + max : total;
    copy_range(typed, packed, t, skip, end, to_packed);
    return end - skip;
}

/* The whole-buffer copy, with fast paths for dense types and for single-block types. */
static void copy_all(char *typed, char *packed, size_t count, const struct shim_dtype *t,
                     bool to_packed)
{
    if (t->nblocks == 1 && (MPI_Aint)t->blocks[0].len == t->extent) {
        char *tp = typed + t->blocks[0].off;
        if (to_packed) {
            memcpy(packed, tp, count * t->size);
        } else {
            memcpy(tp, packed, count * t->size);
        }
        return;
    }
    if (t->nblocks == 1) {
        size_t len = t->blocks[0].len;
        char *tp = typed + t->blocks[0].off;
        for (size_t k = 0; k < count; k++, tp += t->extent, packed += len) {
            if (to_packed) {
                copy_bytes(packed, tp, len);
            } else {
                copy_bytes(tp, packed, len);
            }
        }
        return;
    }
    walk(typed, packed, count, t, 0, SIZE_MAX, to_packed);
}

void shim_dtype_pack(const void *buf, size_t count, const struct shim_dtype *t, void *out)
{
    copy_all((char *)buf, out, count, t, true);
}

void shim_dtype_unpack(const void *in, size_t count, const struct shim_dtype *t, void *buf)
{
    copy_all(buf, (char *)in, count, t, false);
}

size_t shim_dtype_pack_partial(const void *buf, size_t count, const struct shim_dtype *t,
                               size_t skip, void *out, size_t max_bytes)
{
    return walk((char *)buf, out, count, t, skip, max_bytes, true);
}

size_t shim_dtype_unpack_partial(const void *in, size_t count, const struct shim_dtype *t,
                                 size_t skip, void *buf, size_t max_bytes)
{
    return walk(buf, (char *)in, count, t, skip, max_bytes, false);
}

/* Where packed byte p (< t->size) of one element of t lies: its offset from the element and
 * the bytes that follow it contiguously in memory (at least to the end of its block). */
static void locate(const struct shim_dtype *t, size_t p, MPI_Aint *off, size_t *len)
{
    if (t->nent == 0) {
        size_t pos = 0, b = 0;
        while (b + 1 < t->nblocks && pos + t->blocks[b].len <= p) {
            pos += t->blocks[b++].len;
        }
        *off = t->blocks[b].off + (MPI_Aint)(p - pos);
        *len = t->blocks[b].len - (p - pos);
        return;
    }
    const struct shim_dtype_ent *e = &t->ent[ent_at(t, p)];
    size_t q = p - e->pstart, unit = e->count * e->t->size;
    size_t r = q / unit, j = (q % unit) / e->t->size;
    locate(e->t, q % unit % e->t->size, off, len);
    *off += e->disp + (MPI_Aint)r * e->rstride + (MPI_Aint)j * e->t->extent;
    if (dense(e->t)) {
        *len = unit - q % unit; /* the rest of this repetition */
    }
}

void shim_dtype_iter_init(struct shim_dtype_iter *it, const struct shim_dtype *t, size_t count)
{
    it->t = t;
    it->pos = 0;
    it->end = count * t->size;
}

bool shim_dtype_iter_next(struct shim_dtype_iter *it, size_t max, MPI_Aint *off, size_t *len)
{
    const struct shim_dtype *t = it->t;
    size_t k, n;

    if (it->pos >= it->end) {
        return false;
    }
    k = it->pos / t->size;
    locate(t, it->pos % t->size, off, &n);
    *off += (MPI_Aint)k * t->extent;
    if (dense(t)) {
        n = it->end - it->pos; /* all that is left is one run */
    }
    n = n < it->end - it->pos ? n : it->end - it->pos;
    *len = n < max ? n : max;
    it->pos += *len;
    return true;
}

size_t shim_dtype_mem_bytes(const struct shim_dtype *t)
{
    size_t n;

    if (t->builtin) {
        return 0; /* static */
    }
    n = sizeof(*t) + t->nsig * sizeof(*t->sig) + (size_t)t->nints * sizeof(int) +
        (size_t)t->naints * sizeof(MPI_Aint) + (size_t)t->ntypes * sizeof(*t->types) +
        (t->blocks != &t->one_block ? t->nblocks * sizeof(*t->blocks) : 0) +
        t->nent * sizeof(*t->ent);
    for (size_t i = 0; i < t->nent; i++) {
        if (i == 0 || t->ent[i].t != t->ent[i - 1].t) {
            n += shim_dtype_mem_bytes(t->ent[i].t);
        }
    }
    return n;
}

/* The basic elements in the first rem (< t->size) packed bytes of one element of compact t
 * without a signature list: whole entries, then the partial one by recursion. */
static MPI_Count elements_compact(const struct shim_dtype *t, size_t rem)
{
    MPI_Count count = 0;

    for (size_t i = 0; i < t->nent && rem > 0; i++) {
        const struct shim_dtype_ent *e = &t->ent[i];
        size_t n = e->nrep * e->count;
        if (rem < n * e->t->size) {
            MPI_Count in = shim_dtype_elements(e->t, rem);
            return in == MPI_UNDEFINED ? MPI_UNDEFINED : count + in;
        }
        count += (MPI_Count)(n * e->t->nbasic);
        rem -= n * e->t->size;
    }
    return count;
}

MPI_Count shim_dtype_elements(const struct shim_dtype *t, size_t nbytes)
{
    struct shim_sig_run tmp[2];
    const struct shim_sig_run *r;
    size_t n, rem;
    MPI_Count count;

    if (t->size == 0) {
        return 0;
    }
    count = (MPI_Count)(nbytes / t->size) * (MPI_Count)t->nbasic;
    rem = nbytes % t->size;
    if (rem > 0 && !sig_flat(t)) {
        MPI_Count in = elements_compact(t, rem);
        return in == MPI_UNDEFINED ? MPI_UNDEFINED : count + in;
    }
    r = sig_of(t, tmp, &n);
    for (size_t k = 0; k < n && rem > 0; k++) {
        size_t whole = rem / r[k].esize < r[k].n ? rem / r[k].esize : r[k].n;
        count += (MPI_Count)whole;
        rem -= whole * r[k].esize;
        if (whole < r[k].n) {
            break;
        }
    }
    return rem ? MPI_UNDEFINED : count;
}

/* Checks what MPI_Pack and MPI_Unpack share; *t is the datatype. */
static int check_pack_args(const char *fn, int count, MPI_Datatype datatype, int outsize,
                           const int *position, struct shim_dtype **t)
{
    int rc = shim_check_init(fn);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (count < 0) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_COUNT, "count %d < 0", count);
    }
    if (!position || *position < 0 || outsize < 0) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "position or buffer size is invalid");
    }
    rc = shim_dtype_check_comm(datatype, t);
    if (rc != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, fn, rc, "%s", mps_last_error());
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Pack = PMPI_Pack
int PMPI_Pack(const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf, int outsize,
              int *position, MPI_Comm comm)
{
    struct shim_dtype *t;
    (void)comm;
    int rc = check_pack_args(SHIM_FN, incount, datatype, outsize, position, &t);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    size_t need = (size_t)incount * t->size;
    if ((size_t)*position > (size_t)outsize || need > (size_t)(outsize - *position)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TRUNCATE,
                          "packing %zu bytes at position %d overflows the %d-byte buffer", need,
                          *position, outsize);
    }
    shim_dtype_pack(inbuf, (size_t)incount, t, (char *)outbuf + *position);
    *position += (int)need;
    return MPI_SUCCESS;
}

#pragma weak MPI_Unpack = PMPI_Unpack
int PMPI_Unpack(const void *inbuf, int insize, int *position, void *outbuf, int outcount,
                MPI_Datatype datatype, MPI_Comm comm)
{
    struct shim_dtype *t;
    (void)comm;
    int rc = check_pack_args(SHIM_FN, outcount, datatype, insize, position, &t);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    size_t need = (size_t)outcount * t->size;
    if ((size_t)*position > (size_t)insize || need > (size_t)(insize - *position)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TRUNCATE,
                          "unpacking %zu bytes at position %d reads past the %d-byte buffer",
                          need, *position, insize);
    }
    shim_dtype_unpack((const char *)inbuf + *position, (size_t)outcount, t, outbuf);
    *position += (int)need;
    return MPI_SUCCESS;
}

#pragma weak MPI_Pack_size = PMPI_Pack_size
int PMPI_Pack_size(int incount, MPI_Datatype datatype, MPI_Comm comm, int *size)
{
    struct shim_dtype *t;
    (void)comm;
    NONNULL(SHIM_FN, size);
    int rc = get_type(SHIM_FN, datatype, &t);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (incount < 0) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_COUNT, "incount %d < 0", incount);
    }
    size_t n = (size_t)incount * t->size;
    if (n > INT_MAX) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_COUNT,
                          "%d elements pack into %zu bytes, more than an int holds", incount, n);
    }
    *size = (int)n;
    return MPI_SUCCESS;
}

/* ---- external32 (MPI-3.1 13.5.2): the packed form, each number big-endian ---- */

/* Writes the low n bytes of v at p, most significant first, and reads them back. */
static void put_be(unsigned char *p, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[n - 1 - i] = (unsigned char)(v >> (8 * i));
    }
}

static uint64_t get_be(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        v = (v << 8) | p[i];
    }
    return v;
}

/* Bytes one number of kind ext with native size unit takes in external32. */
static size_t ext_unit(int ext, size_t unit)
{
    return ext == EXT_LONG || ext == EXT_ULONG ? 4 : ext == EXT_WCHAR ? 2 : unit;
}

/* external32 bytes of count elements of t. */
static size_t ext_size(size_t count, const struct shim_dtype *t)
{
    struct shim_sig_run tmp[2];
    size_t n, bytes = 0;
    const struct shim_sig_run *r = sig_of(t, tmp, &n);

    if (!sig_flat(t)) {
        for (size_t i = 0; i < t->nent; i++) {
            bytes += ext_size(t->ent[i].nrep * t->ent[i].count, t->ent[i].t);
        }
        return count * bytes;
    }
    for (size_t k = 0; k < n; k++) {
        bytes += r[k].n * (r[k].esize / r[k].unit) * ext_unit(r[k].ext, r[k].unit);
    }
    return count * bytes;
}

/* x87 extended (64-bit significand with its integer bit, then sign and 15-bit exponent, in
 * 16 bytes) to binary128 (sign, the same 15-bit exponent and bias, 112-bit fraction without
 * the integer bit): the fraction is the significand's low 63 bits followed by zeros. */
static void x87_to_quad(const unsigned char *in, unsigned char *out)
{
    uint64_t m, frac;
    uint16_t se;

    memcpy(&m, in, 8);
    memcpy(&se, in + 8, 2);
    frac = m & ~(UINT64_C(1) << 63);
    put_be(out, ((uint64_t)se << 48) | (frac >> 15), 8);
    put_be(out + 8, frac << 49, 8);
}

/* The reverse: the fraction's low 49 bits are dropped (truncated); the integer bit is 1 but
 * for zeros and subnormals (exponent 0). */
static void quad_to_x87(const unsigned char *in, unsigned char *out)
{
    uint64_t hi = get_be(in, 8), lo = get_be(in + 8, 8);
    uint16_t se = (uint16_t)(hi >> 48);
    uint64_t m = ((hi & ((UINT64_C(1) << 48) - 1)) << 15) | (lo >> 49);

    if (se & 0x7fff) {
        m |= UINT64_C(1) << 63;
    }
    memset(out, 0, 16);
    memcpy(out, &m, 8);
    memcpy(out + 8, &se, 2);
}

/* One number of kind ext from native bytes nat (unit of them) to external32 at x. */
static void ext_put(int ext, size_t unit, const unsigned char *nat, unsigned char *x)
{
    int64_t l;
    uint64_t u;
    int32_t w;

    switch (ext) {
    case EXT_LONG:
        memcpy(&l, nat, 8);
        put_be(x, (uint64_t)l, 4); /* MPI-3.1 13.5.2: an out-of-range value is erroneous */
        break;
    case EXT_ULONG:
        memcpy(&u, nat, 8);
        put_be(x, u, 4);
        break;
    case EXT_X87:
        x87_to_quad(nat, x);
        break;
    case EXT_WCHAR:
        memcpy(&w, nat, 4);
        put_be(x, (uint64_t)(uint32_t)w, 2);
        break;
    default:
        for (size_t i = 0; i < unit; i++) {
            x[i] = __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__ ? nat[i] : nat[unit - 1 - i];
        }
    }
}

/* The reverse of ext_put: long is sign-extended, unsigned long and wchar_t zero-extended. */
static void ext_get(int ext, size_t unit, const unsigned char *x, unsigned char *nat)
{
    int64_t l;
    uint64_t u;
    int32_t w;

    switch (ext) {
    case EXT_LONG:
        l = (int64_t)(int32_t)(uint32_t)get_be(x, 4);
        memcpy(nat, &l, 8);
        break;
    case EXT_ULONG:
        u = get_be(x, 4);
        memcpy(nat, &u, 8);
        break;
    case EXT_X87:
        quad_to_x87(x, nat);
        break;
    case EXT_WCHAR:
        w = (int32_t)get_be(x, 2);
        memcpy(nat, &w, 4);
        break;
    default:
        ext_put(EXT_SWAP, unit, x, nat); /* reversing is its own inverse */
    }
}

/* Converts count packed elements of t between this machine's packed form (nat) and
 * external32 (x), in the direction to_ext says: the packed form is the signature's basic
 * elements back to back, so walking the runs finds each number. */
static void ext_convert(unsigned char *nat, unsigned char *x, size_t count,
                        const struct shim_dtype *t, bool to_ext);

/* A compact type without a signature list converts entry by entry, the types below in
 * turn; the packed and external32 forms follow the same order. */
static void ext_convert_compact(unsigned char *nat, unsigned char *x, size_t count,
                                const struct shim_dtype *t, bool to_ext)
{
    for (size_t e = 0; e < count; e++) {
        for (size_t i = 0; i < t->nent; i++) {
            size_t n = t->ent[i].nrep * t->ent[i].count;
            ext_convert(nat, x, n, t->ent[i].t, to_ext);
            nat += n * t->ent[i].t->size;
            x += ext_size(n, t->ent[i].t);
        }
    }
}

static void ext_convert(unsigned char *nat, unsigned char *x, size_t count,
                        const struct shim_dtype *t, bool to_ext)
{
    struct shim_sig_run tmp[2];
    size_t n;
    const struct shim_sig_run *r = sig_of(t, tmp, &n);

    if (!sig_flat(t)) {
        ext_convert_compact(nat, x, count, t, to_ext);
        return;
    }
    for (size_t e = 0; e < count; e++) {
        for (size_t k = 0; k < n; k++) {
            size_t numbers = r[k].n * (r[k].esize / r[k].unit);
            size_t xu = ext_unit(r[k].ext, r[k].unit);
            for (size_t j = 0; j < numbers; j++, nat += r[k].unit, x += xu) {
                if (to_ext) {
                    ext_put(r[k].ext, r[k].unit, nat, x);
                } else {
                    ext_get(r[k].ext, r[k].unit, x, nat);
                }
            }
        }
    }
}

/* Checks datarep and the type for the external calls; *t is the datatype. */
static int check_external(const char *fn, const char *datarep, int count, MPI_Datatype dt,
                          struct shim_dtype **t)
{
    int rc = shim_check_init(fn);

    if (rc == MPI_SUCCESS && (!datarep || strcmp(datarep, "external32") != 0)) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG,
                        "data representation \"%s\" is not \"external32\"",
                        datarep ? datarep : "(null)");
    }
    if (rc == MPI_SUCCESS && count < 0) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_COUNT, "count %d < 0", count);
    }
    if (rc == MPI_SUCCESS && (rc = shim_dtype_check_comm(dt, t)) != MPI_SUCCESS) {
        rc = shim_error(MPI_COMM_WORLD, fn, rc, "%s", mps_last_error());
    }
    if (rc == MPI_SUCCESS && no_external32(*t)) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_UNSUPPORTED_DATAREP,
                        "datatype %s holds a long double, whose format here is neither x87 "
                        "extended nor IEEE binary128: no external32 form",
                        (*t)->name[0] ? (*t)->name : "(derived)");
    }
    return rc;
}

#pragma weak MPI_Pack_external_size = PMPI_Pack_external_size
int PMPI_Pack_external_size(const char datarep[], int incount, MPI_Datatype datatype,
                            MPI_Aint *size)
{
    struct shim_dtype *t;
    int rc = check_external(SHIM_FN, datarep, incount, datatype, &t);

    if (rc == MPI_SUCCESS && !size) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "size is NULL");
    }
    if (rc == MPI_SUCCESS) {
        *size = (MPI_Aint)ext_size((size_t)incount, t);
    }
    return rc;
}

#pragma weak MPI_Pack_external = PMPI_Pack_external
int PMPI_Pack_external(const char datarep[], const void *inbuf, int incount,
                       MPI_Datatype datatype, void *outbuf, MPI_Aint outsize,
                       MPI_Aint *position)
{
    struct shim_dtype *t;
    size_t need;
    unsigned char *tmp;
    int rc = check_external(SHIM_FN, datarep, incount, datatype, &t);

    if (rc == MPI_SUCCESS && (!position || *position < 0 || outsize < 0)) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "position or outsize is invalid");
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    need = ext_size((size_t)incount, t);
    if (*position > outsize || need > (size_t)(outsize - *position)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TRUNCATE,
                          "packing %zu bytes at position %ld overflows the %ld-byte buffer",
                          need, (long)*position, (long)outsize);
    }
    /* Packed here first, then converted: a long or wchar_t shrinks on the way. */
    tmp = malloc(incount ? (size_t)incount * t->size : 1);
    if (!tmp) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory for %zu bytes",
                          (size_t)incount * t->size);
    }
    shim_dtype_pack(inbuf, (size_t)incount, t, tmp);
    ext_convert(tmp, (unsigned char *)outbuf + *position, (size_t)incount, t, true);
    free(tmp);
    *position += (MPI_Aint)need;
    return MPI_SUCCESS;
}

#pragma weak MPI_Unpack_external = PMPI_Unpack_external
int PMPI_Unpack_external(const char datarep[], const void *inbuf, MPI_Aint insize,
                         MPI_Aint *position, void *outbuf, int outcount, MPI_Datatype datatype)
{
    struct shim_dtype *t;
    size_t need;
    unsigned char *tmp;
    int rc = check_external(SHIM_FN, datarep, outcount, datatype, &t);

    if (rc == MPI_SUCCESS && (!position || *position < 0 || insize < 0)) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "position or insize is invalid");
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    need = ext_size((size_t)outcount, t);
    if (*position > insize || need > (size_t)(insize - *position)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TRUNCATE,
                          "unpacking %zu bytes at position %ld reads past the %ld-byte buffer",
                          need, (long)*position, (long)insize);
    }
    /* Converted to this machine's packed form in a copy, then unpacked from it. */
    tmp = malloc(outcount ? (size_t)outcount * t->size : 1);
    if (!tmp) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory for %zu bytes",
                          (size_t)outcount * t->size);
    }
    ext_convert(tmp, (unsigned char *)inbuf + *position, (size_t)outcount, t, false);
    shim_dtype_unpack(tmp, (size_t)outcount, t, outbuf);
    free(tmp);
    *position += (MPI_Aint)need;
    return MPI_SUCCESS;
}

/* ------------------------------------------------------------------------------------- */
/* Addresses                                                                             */
/* ------------------------------------------------------------------------------------- */

#pragma weak MPI_Get_address = PMPI_Get_address
int PMPI_Get_address(const void *location, MPI_Aint *address)
{
    NONNULL(SHIM_FN, address);
    *address = (MPI_Aint)(intptr_t)location;
    return MPI_SUCCESS;
}

#pragma weak MPI_Address = PMPI_Address
int PMPI_Address(void *location, MPI_Aint *address)
{
    return PMPI_Get_address(location, address);
}

#pragma weak MPI_Aint_add = PMPI_Aint_add
MPI_Aint PMPI_Aint_add(MPI_Aint base, MPI_Aint disp)
{
    return (MPI_Aint)((uintptr_t)base + (uintptr_t)disp);
}

#pragma weak MPI_Aint_diff = PMPI_Aint_diff
MPI_Aint PMPI_Aint_diff(MPI_Aint addr1, MPI_Aint addr2)
{
    return (MPI_Aint)((uintptr_t)addr1 - (uintptr_t)addr2);
}
