/*
 * shim.h - what every mpi_shim file shares: the init state, error raising, and the
 * convention for defining an MPI function with its PMPI_ twin.
 *
 * Each MPI function is defined once as PMPI_Xxx, and MPI_Xxx is a weak alias of it
 * (`#pragma weak MPI_Xxx = PMPI_Xxx` just before the definition), so that a profiling
 * library that defines MPI_Xxx and calls PMPI_Xxx interposes cleanly. Inside the library,
 * call PMPI_ names or internal shim_/pg_ functions, never MPI_ names.
 *
 * Errors: a function that fails calls shim_error(comm, "MPI_Xxx", errclass, fmt, ...),
 * which formats "MPI_Xxx (rank R): cause", runs the communicator's error handler (the
 * default MPI_ERRORS_ARE_FATAL prints the line and aborts the job) and returns a dynamic
 * error code of class errclass that keeps that line for MPI_Error_string (shim_errcode.c);
 * compare what a call returned with shim_errcode_class(rc), never with == MPI_ERR_xxx.
 * The usual line is `return shim_error(comm, __func__ + 1, MPI_ERR_COUNT, "count %d < 0", c);`
 * (__func__ + 1 turns "PMPI_Send" into "MPI_Send"). Errors not tied to a communicator
 * (datatypes, ops, info, groups) are raised on MPI_COMM_WORLD, as MPI-3.1 says.
 */
#ifndef SHIM_H
#define SHIM_H

#include "mpi.h"

#include <stdarg.h>
#include <stdbool.h>

/* The PMPI name to MPI name for messages: SHIM_FN is "MPI_Xxx" inside PMPI_Xxx. */
#define SHIM_FN (__func__ + 1)

/* The blocking call being served when a blocking collective runs its non-blocking form:
 * errors raised meanwhile carry this name (MPI_Gather, not MPI_Igather). Set with a comma
 * expression around the I-call; shim_coll_wait clears it. */
extern __thread const char *shim_outer_fn;

/* True when MPI_THREAD_MULTIPLE was granted: shared tables then take locks. */
extern bool shim_thread_multiple;

/* True between MPI_Init and MPI_Finalize. */
bool shim_initialized(void);
bool shim_finalized(void);

/* Raises an error on comm (MPI_COMM_NULL or an invalid comm: MPI_COMM_WORLD's handler,
 * or fatal before MPI_Init). Returns a code of class errclass (errclass may itself be a code
 * another call returned) when the handler returns. */
int shim_error(MPI_Comm comm, const char *fn, int errclass, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The MPI error class for a pgc status code (PGC_ERR_TRUNCATE -> MPI_ERR_TRUNCATE ...). */
int shim_errclass(int pgc_status);
/* Raises the error of a failed pg_core call: the class from status, the cause from
 * mps_last_error(). */
int shim_error_pg(MPI_Comm comm, const char *fn, int status);

/* Returns MPI_SUCCESS when MPI is initialized and not finalized; otherwise raises
 * MPI_ERR_OTHER naming fn (fatal: no communicator exists yet to choose another handler). */
int shim_check_init(const char *fn);

/* Dynamic error codes (shim_errcode.c): a code of errclass that keeps msg for
 * MPI_Error_string, in a ring of the last 64 (user classes and MPI_SUCCESS come back as
 * they are); the class of any code (a class is its own); whether code is a dynamic one; and
 * its message, copied to out (MPI_MAX_ERROR_STRING bytes), false once its slot was reused. */
int shim_errcode_make(int errclass, const char *msg);
int shim_errcode_class(int code);
bool shim_errcode_is_dynamic(int code);
bool shim_errcode_string(int code, char *out);

/* User-defined error classes and codes (MPI_Add_error_*): their string or NULL. */
const char *shim_user_error_string(int code);
int shim_user_error_class(int code, int *errclass);
/* The largest error code or class in use (MPI_LASTUSEDCODE): MPI_ERR_LASTCODE until
 * MPI_Add_error_class/code adds one. */
int shim_last_used_code(void);

/* The object table behind every kind of user handle: a growable array of pointers with
 * a free list, handles made with MPISHIM_HANDLE_MAKE(KIND_INDIRECT, obj, index). */
struct shim_table {
    void **slots;
    int n, cap;
    int obj;      /* MPISHIM_OBJ_* */
    int first;    /* first index handed out (indexes below are builtin objects) */
};
/* Stores p; returns its handle, or 0 (not a valid handle) when out of memory. */
int shim_table_add(struct shim_table *t, void *p);
/* The object of a handle made by this table (kind indirect), or NULL. */
void *shim_table_get(const struct shim_table *t, int handle);
/* Removes and returns the object (NULL if the handle is not in the table). */
void *shim_table_remove(struct shim_table *t, int handle);

#endif
