/*
 * shim_unsupported.c - the MPI functions that mpi.h declares but mpishim does not provide
 * (none at present: the macros stay for the next one), and four small calls that no other
 * file defines and that are simple enough to do properly here rather than refuse:
 * MPI_Pcontrol and the status setters.
 *
 * They exist as symbols, with their PMPI_ twins, because benchmark and utility code often
 * references them without calling them, and such a program must still link. Calling one
 * raises MPI_ERR_UNSUPPORTED_OPERATION on MPI_COMM_WORLD with a message naming the call
 * (fatal under the default handler; returned under MPI_ERRORS_RETURN), never a silent
 * no-op. An output handle (a window, a request) is set to its null value first, so a
 * caller that ignores the error holds nothing that looks valid.
 *
 * tools/gen_function_list.sh reads the names in the SHIM_UNSUPPORTED lines below to mark
 * these functions "unsupported" in doc/mpi-functions.md: keep one function per macro.
 */
#include "config.h"

#include "shim.h"
#include "shim_datatype.h"

#include <stdint.h>
#include <string.h>

#define SHIM_PRAGMA(x) _Pragma(#x)

/* Defines PMPI_name (MPI_name is its weak alias) raising MPI_ERR_UNSUPPORTED_OPERATION. */
#define SHIM_UNSUPPORTED(name, params, cause)                                                      \
    SHIM_PRAGMA(weak MPI_##name = PMPI_##name)                                                     \
    int PMPI_##name params                                                                         \
    {                                                                                              \
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_UNSUPPORTED_OPERATION, "%s", cause);    \
    }

/* The same, for a function with an output handle: *out is set to null_value first. */
#define SHIM_UNSUPPORTED_OUT(name, params, cause, out, null_value)                                 \
    SHIM_PRAGMA(weak MPI_##name = PMPI_##name)                                                     \
    int PMPI_##name params                                                                         \
    {                                                                                              \
        if (out) {                                                                                 \
            *(out) = (null_value);                                                                 \
        }                                                                                          \
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_UNSUPPORTED_OPERATION, "%s", cause);    \
    }

/* ------------------------------------------------------------------------------------- */
/* Supported: small calls with no better home                                            */
/* ------------------------------------------------------------------------------------- */

/* Profiling control is for a profiling library interposed on MPI_Pcontrol; the library
 * itself ignores it, as the standard says. */
#pragma weak MPI_Pcontrol = PMPI_Pcontrol
int PMPI_Pcontrol(const int level, ...)
{
    return MPI_SUCCESS;
}

#pragma weak MPI_Status_set_cancelled = PMPI_Status_set_cancelled
int PMPI_Status_set_cancelled(MPI_Status *status, int flag)
{
    if (flag) {
        status->count_hi_and_cancelled |= INT32_MIN;
    } else {
        status->count_hi_and_cancelled &= INT32_MAX;
    }
    return MPI_SUCCESS;
}

/* The status holds a byte count (as a receive fills it): the smallest number of bytes of
 * the packed form of t that holds count basic elements, or -1 if no prefix does. */
static int64_t bytes_of_elements(const struct shim_dtype *t, MPI_Count count)
{
    MPI_Count per = t->size ? shim_dtype_elements(t, t->size) : 0;
    int64_t full;

    if (per <= 0) {
        return count == 0 ? 0 : -1;
    }
    full = (int64_t)(count / per) * (int64_t)t->size;
    for (size_t b = 0; b < t->size; b++) {
        if (shim_dtype_elements(t, (size_t)full + b) == count) {
            return full + (int64_t)b;
        }
    }
    return -1;
}

#pragma weak MPI_Status_set_elements_x = PMPI_Status_set_elements_x
int PMPI_Status_set_elements_x(MPI_Status *status, MPI_Datatype datatype, MPI_Count count)
{
    struct shim_dtype *t;
    int64_t bytes;

    if (shim_dtype_lookup(datatype, &t) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_TYPE, "invalid datatype 0x%x",
                          (unsigned)datatype);
    }
    bytes = count < 0 ? -1 : bytes_of_elements(t, count);
    if (bytes < 0 || bytes > ((int64_t)INT32_MAX << 32)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_COUNT,
                          "%lld basic elements of datatype 0x%x make no whole byte count",
                          (long long)count, (unsigned)datatype);
    }
    status->count_lo = (int)(uint32_t)(bytes & 0xffffffff);
    status->count_hi_and_cancelled =
        (status->count_hi_and_cancelled & INT32_MIN) | (int)((bytes >> 32) & 0x7fffffff);
    return MPI_SUCCESS;
}

#pragma weak MPI_Status_set_elements = PMPI_Status_set_elements
int PMPI_Status_set_elements(MPI_Status *status, MPI_Datatype datatype, int count)
{
    return PMPI_Status_set_elements_x(status, datatype, count);
}

/* ------------------------------------------------------------------------------------- */
/* The MPICH ABI stubs' common body (tools/gen_abi_stubs.sh)                             */
/* ------------------------------------------------------------------------------------- */

int shim_abi_refuse(const char *fn);

/* A function MPICH exports and mpishim does not implement. The MPI_T_ interface never calls
 * an error handler and is often probed by tools before MPI_Init: its functions only return
 * MPI_T_ERR_NOT_SUPPORTED (MPICH's value, 78). */
int shim_abi_refuse(const char *fn)
{
    if (strncmp(fn, "MPI_T_", 6) == 0) {
        return 78;
    }
    return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_UNSUPPORTED_OPERATION,
                      "%s is not implemented by mpishim (it exists for MPICH ABI compatibility)",
                      fn);
}
