/*
 * shim_op.c - reduction operations: the predefined ones map onto pg_core's kernels, user
 * ops (MPI_Op_create) run through a trampoline with MPI's calling convention.
 */
#include "config.h"

#include "shim_comm.h"
#include "shim_datatype.h"
#include "shim_device.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <limits.h>
#include <stdlib.h>

struct shim_op {
    MPI_User_function *fn;
    bool commute;
};

static struct shim_table ops = {.obj = MPISHIM_OBJ_OP};

/* The pg op of a predefined MPI op, or -1 (MPI_REPLACE and MPI_NO_OP are for one-sided
 * accumulates, which are not supported). */
static int builtin_op(MPI_Op op)
{
    switch (op) {
    case MPI_MAX:
        return PG_OP_MAX;
    case MPI_MIN:
        return PG_OP_MIN;
    case MPI_SUM:
        return PG_OP_SUM;
    case MPI_PROD:
        return PG_OP_PROD;
    case MPI_LAND:
        return PG_OP_LAND;
    case MPI_BAND:
        return PG_OP_BAND;
    case MPI_LOR:
        return PG_OP_LOR;
    case MPI_BOR:
        return PG_OP_BOR;
    case MPI_LXOR:
        return PG_OP_LXOR;
    case MPI_BXOR:
        return PG_OP_BXOR;
    case MPI_MINLOC:
        return PG_OP_MINLOC;
    case MPI_MAXLOC:
        return PG_OP_MAXLOC;
    default:
        return -1;
    }
}

int shim_op_check(MPI_Op op)
{
    return builtin_op(op) >= 0 || shim_table_get(&ops, op) ? MPI_SUCCESS : MPI_ERR_OP;
}

/* Calls the user function on count elements laid out as the call's datatype. */
static void user_call(struct shim_op_call *call, const void *in, void *inout, size_t count)
{
    MPI_Datatype dt = call->dt;

    /* MPI's user functions take an int count; a schedule never hands over more at once
     * than one message holds, but split defensively. */
    while (count > 0) {
        int len = count > INT_MAX ? INT_MAX : (int)count;
        call->fn((void *)in, inout, &len, &dt);
        count -= (size_t)len;
    }
}

/* Elements of t unpacked at once for a user op: about 64 KiB of typed scratch, at least 1. */
static size_t typed_chunk(const struct shim_dtype *t)
{
    size_t ext = t->extent > 0 ? (size_t)t->extent : 0;
    return ext && ext < 65536 ? 65536 / ext : 1;
}

/* A user op on a non-contiguous type. The schedule holds packed elements, but MPI-3.1
 * section 5.9.5 hands the function the datatype the call was made with, so it must see
 * elements in that type's layout: both operands are unpacked into typed scratch, the
 * function runs there, and the result is packed back. */
static void user_typed(struct shim_op_call *call, const char *in, char *inout, size_t count)
{
    const struct shim_dtype *t = call->t;
    size_t chunk = typed_chunk(t), span;
    char *a, *b;

    span = (chunk - 1) * (size_t)(t->extent > 0 ? t->extent : 0) + (size_t)t->true_extent;
    a = calloc(2, span ? span : 1);
    if (!a) {
        mps_error(MPI_ERR_NO_MEM, "no memory to unpack a user op's operands (%zu bytes)", span);
        return;
    }
    b = a + span;
    while (count > 0) {
        size_t n = count < chunk ? count : chunk;
        /* Element k of the typed form lives at base + k * extent; its data starts at
         * true_lb, which is where the scratch begins. */
        shim_dtype_unpack(in, n, t, a - t->true_lb);
        shim_dtype_unpack(inout, n, t, b - t->true_lb);
        user_call(call, a - t->true_lb, b - t->true_lb, n);
        shim_dtype_pack(b - t->true_lb, n, t, inout);
        in += n * t->size;
        inout += n * t->size;
        count -= n;
    }
    free(a);
}

static void user_trampoline(const void *in, void *inout, size_t count, void *ctx)
{
    struct shim_op_call *call = ctx;

    if (call->t) {
        user_typed(call, in, inout, count);
    } else {
        user_call(call, in, inout, count);
    }
}

/* MAXLOC/MINLOC on packed pairs: the kernel is pg_core's; the pair and op ride in ctx. */
static void packed_loc_trampoline(const void *in, void *inout, size_t count, void *ctx)
{
    struct shim_op_call *call = ctx;

    pg_reduce_loc_packed(in, inout, count, call->pair, call->pair_op);
}

static int user_spec(struct shim_op *u, MPI_Datatype dt, const struct shim_dtype *t,
                     struct pg_op_spec *spec, size_t *scale, struct shim_op_call *call)
{
    *call = (struct shim_op_call){.fn = u->fn, .dt = dt, .t = t->contig ? NULL : t};
    *spec = (struct pg_op_spec){.dt = PG_BYTE, .elem_size = t->size, .user_fn = user_trampoline,
                                .user_ctx = call, .commutative = u->commute};
    *scale = 1;
    return MPI_SUCCESS;
}

/* Whether t's packed elements differ from pg_core's native layout of its base: the pair
 * types whose C struct has padding (MPI_DOUBLE_INT: 12 packed bytes, a 16-byte struct). */
static bool packed_pairs(const struct shim_dtype *t)
{
    size_t ps = pg_pair_packed_size(t->base);
    return ps && ps != pg_dtype_size(t->base);
}

int shim_op_spec(MPI_Op op, MPI_Datatype dt, const struct shim_dtype *t, struct pg_op_spec *spec,
                 size_t *scale, struct shim_op_call *call)
{
    int pop = builtin_op(op);
    struct shim_op *u;

    /* A predefined op first: the table (and its lock) only for user ops, whose handles are
     * never predefined ones. */
    if (pop < 0) {
        u = shim_table_get(&ops, op);
        return u ? user_spec(u, dt, t, spec, scale, call)
                 : mps_error(MPI_ERR_OP, "invalid reduction operation 0x%x", (unsigned)op);
    }
    if (t->base == PG_DTYPE_NONE || !pg_op_valid((enum pg_op)pop, t->base)) {
        return mps_error(MPI_ERR_OP, "the reduction operation is not defined on datatype %s",
                         t->name[0] ? t->name : "(derived)");
    }
    *scale = t->base_per_elem;
    /* Pair types take only MAXLOC and MINLOC (pg_op_valid): the common ops skip the look. */
    if ((pop == PG_OP_MAXLOC || pop == PG_OP_MINLOC) && packed_pairs(t)) {
        *call = (struct shim_op_call){.pair = t->base, .pair_op = (enum pg_op)pop};
        *spec = (struct pg_op_spec){.dt = PG_BYTE, .elem_size = pg_pair_packed_size(t->base),
                                    .user_fn = packed_loc_trampoline, .user_ctx = call,
                                    .commutative = true};
        return MPI_SUCCESS;
    }
    *spec = (struct pg_op_spec){.dt = t->base, .op = (enum pg_op)pop,
                                .elem_size = pg_dtype_size(t->base), .commutative = true};
    return MPI_SUCCESS;
}

#pragma weak MPI_Op_create = PMPI_Op_create
int PMPI_Op_create(MPI_User_function *user_fn, int commute, MPI_Op *op)
{
    struct shim_op *u;

    if (!user_fn) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "the op function is NULL");
    }
    u = malloc(sizeof(*u));
    if (u) {
        u->fn = user_fn;
        u->commute = commute != 0;
        *op = shim_table_add(&ops, u);
    }
    if (!u || !*op) {
        free(u);
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory for an op");
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Op_free = PMPI_Op_free
int PMPI_Op_free(MPI_Op *op)
{
    struct shim_op *u = shim_table_remove(&ops, *op);

    if (!u) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_OP,
                          builtin_op(*op) >= 0 ? "a predefined op cannot be freed"
                                               : "invalid op 0x%x",
                          (unsigned)*op);
    }
    free(u);
    *op = MPI_OP_NULL;
    return MPI_SUCCESS;
}

#pragma weak MPI_Op_commutative = PMPI_Op_commutative
int PMPI_Op_commutative(MPI_Op op, int *commute)
{
    struct shim_op *u = shim_table_get(&ops, op);

    /* MPI_REPLACE and MPI_NO_OP are valid ops (of the one-sided accumulates), both
     * commutative as MPICH answers. */
    if (!u && builtin_op(op) < 0 && op != MPI_REPLACE && op != MPI_NO_OP) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_OP, "invalid op 0x%x", (unsigned)op);
    }
    *commute = u ? u->commute : 1;
    return MPI_SUCCESS;
}

/* MPI_Reduce_local on a non-contiguous type: reduce the packed forms, as a collective does,
 * and unpack the result. Returns a PGC_ status. */
static int reduce_packed(const struct pg_op_spec *spec, const void *inbuf, void *inoutbuf,
                         int count, const struct shim_dtype *t, size_t scale)
{
    size_t bytes = (size_t)count * t->size;
    char *a = malloc(bytes ? 2 * bytes : 1);
    int rc;

    if (!a) {
        return mps_error(PGC_ERR_NOMEM, "no memory to pack %zu bytes", 2 * bytes);
    }
    shim_dtype_pack(inbuf, (size_t)count, t, a);
    shim_dtype_pack(inoutbuf, (size_t)count, t, a + bytes);
    rc = pg_op_apply(spec, a, a + bytes, (size_t)count * scale);
    if (rc == PGC_OK) {
        shim_dtype_unpack(a + bytes, (size_t)count, t, inoutbuf);
    }
    free(a);
    return rc;
}

#pragma weak MPI_Reduce_local = PMPI_Reduce_local
int PMPI_Reduce_local(const void *inbuf, void *inoutbuf, int count, MPI_Datatype dt, MPI_Op op)
{
    struct shim_dtype *t;
    struct pg_op_spec spec;
    struct shim_op_call call;
    size_t scale;
    int rc;

    if (count < 0) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_COUNT, "count %d is negative", count);
    }
    if (shim_dtype_check_comm(dt, &t) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TYPE, "%s", mps_last_error());
    }
    rc = shim_op_spec(op, dt, t, &spec, &scale, &call);
    if (rc != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, rc, "%s", mps_last_error());
    }
    /* The op runs on the CPU: device memory is refused (count 0 touches nothing). */
    if (count) {
        rc = shim_dev_host_only(SHIM_FN, MPI_COMM_WORLD, inbuf, "inbuf");
        rc = rc == MPI_SUCCESS ? shim_dev_host_only(SHIM_FN, MPI_COMM_WORLD, inoutbuf, "inoutbuf")
                               : rc;
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = t->contig ? pg_op_apply(&spec, inbuf, inoutbuf, (size_t)count * scale)
                   : reduce_packed(&spec, inbuf, inoutbuf, count, t, scale);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(MPI_COMM_WORLD, SHIM_FN, rc);
}
