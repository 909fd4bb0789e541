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

static void user_trampoline(const void *in, void *inout, size_t count, void *ctx)
{
    struct shim_op_call *call = ctx;
    MPI_Datatype dt = call->dt;

    /* MPI's user functions take an int count; a schedule never hands over more at once
     * than one message holds, but split defensively. */
    while (count > 0) {
        int len = count > INT_MAX ? INT_MAX : (int)count;
        call->fn((void *)in, inout, &len, &dt);
        count -= (size_t)len;
    }
}

static int user_spec(struct shim_op *u, MPI_Datatype dt, const struct shim_dtype *t,
                     struct pg_op_spec *spec, size_t *scale, struct shim_op_call *call)
{
    if (!t->contig) {
        return mps_error(MPI_ERR_TYPE, "user-defined ops need a contiguous datatype");
    }
    call->fn = u->fn;
    call->dt = dt;
    *spec = (struct pg_op_spec){.dt = PG_BYTE, .elem_size = t->size, .user_fn = user_trampoline,
                                .user_ctx = call, .commutative = u->commute};
    *scale = 1;
    return MPI_SUCCESS;
}

int shim_op_spec(MPI_Op op, MPI_Datatype dt, const struct shim_dtype *t, struct pg_op_spec *spec,
                 size_t *scale, struct shim_op_call *call)
{
    struct shim_op *u = shim_table_get(&ops, op);
    int pop = builtin_op(op);

    if (u) {
        return user_spec(u, dt, t, spec, scale, call);
    }
    if (pop < 0) {
        return mps_error(MPI_ERR_OP, "invalid reduction operation 0x%x", (unsigned)op);
    }
    if (t->base == PG_DTYPE_NONE || !pg_op_valid((enum pg_op)pop, t->base)) {
        return mps_error(MPI_ERR_OP, "the reduction operation is not defined on datatype %s",
                         t->name[0] ? t->name : "(derived)");
    }
    *spec = (struct pg_op_spec){.dt = t->base, .op = (enum pg_op)pop,
                                .elem_size = pg_dtype_size(t->base), .commutative = true};
    *scale = t->base_per_elem;
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

    if (!u && builtin_op(op) < 0) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_OP, "invalid op 0x%x", (unsigned)op);
    }
    *commute = u ? u->commute : 1;
    return MPI_SUCCESS;
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
    if (rc == MPI_SUCCESS && !t->contig) {
        rc = mps_error(MPI_ERR_TYPE, "MPI_Reduce_local needs a contiguous datatype");
    }
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
    rc = pg_op_apply(&spec, inbuf, inoutbuf, (size_t)count * scale);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(MPI_COMM_WORLD, SHIM_FN, rc);
}
