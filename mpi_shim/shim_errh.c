/*
 * shim_errh.c - error handlers (predefined and user), and user error classes and codes.
 */
#include "config.h"

#include "boot.h"
#include "shim_comm.h"
#include "mps_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* MPI_Comm and MPI_Win are both int here, so a communicator handler and a window
 * handler are one C type: kind says which handle it is called with. */
struct shim_errh {
    MPI_Comm_errhandler_function *fn;
    enum shim_errh_kind kind;
    int refs;
};

static struct shim_table errhs = {.obj = MPISHIM_OBJ_ERRHANDLER};

static bool is_predefined(MPI_Errhandler h)
{
    return h == MPI_ERRORS_ARE_FATAL || h == MPI_ERRORS_RETURN || h == MPI_ERRORS_ABORT;
}

int shim_errhandler_check(MPI_Errhandler h)
{
    return is_predefined(h) || shim_table_get(&errhs, h) ? MPI_SUCCESS : MPI_ERR_ARG;
}

enum shim_errh_kind shim_errhandler_kind(MPI_Errhandler h)
{
    struct shim_errh *e = shim_table_get(&errhs, h);

    return e ? e->kind : SHIM_ERRH_ANY;
}

void shim_errhandler_retain(MPI_Errhandler h)
{
    struct shim_errh *e = shim_table_get(&errhs, h);

    if (e) {
        __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED); /* communicators of any thread */
    }
}

void shim_errhandler_release(MPI_Errhandler h)
{
    struct shim_errh *e = shim_table_get(&errhs, h);

    if (e && __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        shim_table_remove(&errhs, h);
        free(e);
    }
}

/* The window whose private communicator comm is (a window handler is set nowhere else). */
static MPI_Win window_of(MPI_Comm comm)
{
    struct shim_comm *c;

    return shim_comm_get(comm, &c) == MPI_SUCCESS && c->win ? c->win : MPI_WIN_NULL;
}

void shim_errhandler_invoke(MPI_Errhandler h, MPI_Comm comm, int code, const char *msg)
{
    struct shim_errh *e;

    if (h == MPI_ERRORS_RETURN) {
        MPS_DEBUG("%s", msg);
        return;
    }
    e = shim_table_get(&errhs, h);
    if (e) {
        int c = code;
        int handle = e->kind == SHIM_ERRH_WIN ? window_of(comm) : comm;

        e->fn(&handle, &c, msg);
        return;
    }
    /* MPI_ERRORS_ARE_FATAL and MPI_ERRORS_ABORT: say what failed, then end the job with
     * the class as exit status (a dynamic code's low byte would say nothing). */
    fprintf(stderr, "[mpishim] fatal error: %s\n", msg);
    fflush(stdout);
    fflush(stderr);
    code = shim_errcode_class(code);
    if (shim_initialized()) {
        pg_abort(code ? code : 1, msg);
    }
    /* Before MPI_Init's world or after MPI_Finalize (one whose barrier timed out, say) no
     * bootstrap is left: the launcher must still end the other ranks. */
    boot_abort_launcher(code ? code : 1, msg);
    _exit(code ? code : 1);
}

static int errhandler_create(MPI_Comm_errhandler_function *fn, enum shim_errh_kind kind,
                             MPI_Errhandler *errhandler, const char *name)
{
    struct shim_errh *e;

    if (!fn || !errhandler) {
        return shim_error(MPI_COMM_WORLD, name, MPI_ERR_ARG,
                          "the handler function or the handle pointer is NULL");
    }
    *errhandler = MPI_ERRHANDLER_NULL;
    e = calloc(1, sizeof(*e));
    if (e) {
        e->fn = fn;
        e->kind = kind;
        e->refs = 1;
        *errhandler = shim_table_add(&errhs, e);
    }
    if (!e || !*errhandler) {
        free(e);
        *errhandler = MPI_ERRHANDLER_NULL;
        return shim_error(MPI_COMM_WORLD, name, MPI_ERR_NO_MEM, "no memory for a handler");
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Comm_create_errhandler = PMPI_Comm_create_errhandler
int PMPI_Comm_create_errhandler(MPI_Comm_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    return errhandler_create(fn, SHIM_ERRH_COMM, errhandler, SHIM_FN);
}

#pragma weak MPI_Win_create_errhandler = PMPI_Win_create_errhandler
int PMPI_Win_create_errhandler(MPI_Win_errhandler_function *fn, MPI_Errhandler *errhandler)
{
    return errhandler_create(fn, SHIM_ERRH_WIN, errhandler, SHIM_FN);
}

/* The MPI-1 names (removed in MPI-3.0, still shipped by MPICH): thin wrappers. */
#pragma weak MPI_Errhandler_create = PMPI_Errhandler_create
int PMPI_Errhandler_create(MPI_Handler_function *function, MPI_Errhandler *errhandler)
{
    return PMPI_Comm_create_errhandler(function, errhandler);
}

#pragma weak MPI_Errhandler_set = PMPI_Errhandler_set
int PMPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
    return PMPI_Comm_set_errhandler(comm, errhandler);
}

#pragma weak MPI_Errhandler_get = PMPI_Errhandler_get
int PMPI_Errhandler_get(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    return PMPI_Comm_get_errhandler(comm, errhandler);
}

#pragma weak MPI_Errhandler_free = PMPI_Errhandler_free
int PMPI_Errhandler_free(MPI_Errhandler *errhandler)
{
    if (shim_errhandler_check(*errhandler) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "invalid error handler 0x%x",
                          (unsigned)*errhandler);
    }
    shim_errhandler_release(*errhandler);
    *errhandler = MPI_ERRHANDLER_NULL;
    return MPI_SUCCESS;
}

#pragma weak MPI_Comm_call_errhandler = PMPI_Comm_call_errhandler
int PMPI_Comm_call_errhandler(MPI_Comm comm, int errorcode)
{
    struct shim_comm *c;
    char msg[MPI_MAX_ERROR_STRING];
    int len;

    if (shim_comm_get(comm, &c) != MPI_SUCCESS) {
        return shim_error(comm, SHIM_FN, MPI_ERR_COMM, "invalid communicator 0x%x",
                          (unsigned)comm);
    }
    if (PMPI_Error_string(errorcode, msg, &len) != MPI_SUCCESS) {
        snprintf(msg, sizeof(msg), "error code %d", errorcode);
    }
    shim_errhandler_invoke(c->errh, comm, errorcode, msg);
    return MPI_SUCCESS;
}

/* User error classes and codes: values above MPI_ERR_LASTCODE (as MPI requires, and as
 * MPICH numbers them), each with its class and an optional string. */
#define SHIM_FIRST_USER_CODE (MPI_ERR_LASTCODE + 1)
#define SHIM_MAX_USER_CODES 256

static struct {
    int errclass;
    char *string;
} user_codes[SHIM_MAX_USER_CODES];
static int n_user_codes;

static int add_code(int errclass, int *out)
{
    if (n_user_codes == SHIM_MAX_USER_CODES) {
        return shim_error(MPI_COMM_WORLD, "MPI_Add_error_code", MPI_ERR_OTHER,
                          "at most %d user error codes", SHIM_MAX_USER_CODES);
    }
    *out = SHIM_FIRST_USER_CODE + n_user_codes;
    user_codes[n_user_codes].errclass = errclass < 0 ? *out : errclass;
    __atomic_store_n(&n_user_codes, n_user_codes + 1, __ATOMIC_RELEASE);
    return MPI_SUCCESS;
}

#pragma weak MPI_Add_error_class = PMPI_Add_error_class
int PMPI_Add_error_class(int *errorclass)
{
    return add_code(-1, errorclass);
}

#pragma weak MPI_Add_error_code = PMPI_Add_error_code
int PMPI_Add_error_code(int errorclass, int *errorcode)
{
    int cls;

    if (PMPI_Error_class(errorclass, &cls) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "unknown error class %d",
                          errorclass);
    }
    /* A code some call returned stands for its class. */
    return add_code(cls, errorcode);
}

#pragma weak MPI_Add_error_string = PMPI_Add_error_string
int PMPI_Add_error_string(int errorcode, const char *string)
{
    int i = errorcode - SHIM_FIRST_USER_CODE;

    if (i < 0 || i >= n_user_codes) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG,
                          "error code %d was not added with MPI_Add_error_code/class", errorcode);
    }
    free(user_codes[i].string);
    user_codes[i].string = strdup(string);
    return MPI_SUCCESS;
}

const char *shim_user_error_string(int code)
{
    int i = code - SHIM_FIRST_USER_CODE;

    if (i < 0 || i >= n_user_codes) {
        return NULL;
    }
    return user_codes[i].string ? user_codes[i].string : "";
}

int shim_user_error_class(int code, int *errclass)
{
    int i = code - SHIM_FIRST_USER_CODE;

    if (i < 0 || i >= n_user_codes) {
        return shim_error(MPI_COMM_WORLD, "MPI_Error_class", MPI_ERR_ARG, "unknown error code %d",
                          code);
    }
    *errclass = user_codes[i].errclass;
    return MPI_SUCCESS;
}

int shim_last_used_code(void)
{
    int n = __atomic_load_n(&n_user_codes, __ATOMIC_ACQUIRE);

    return n ? SHIM_FIRST_USER_CODE + n - 1 : MPI_ERR_LASTCODE;
}
