/*
 * shim_env.c - the MPI environment: init and finalize, thread levels, error raising and
 * error strings, time, processor name, version, memory.
 */
#include "config.h"

#include "shim.h"
#include "shim_comm.h"
#include "boot.h"
#include "pg.h"
#include "pgc_status.h"
#include "mps_config.h"
#include "mps_log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int state; /* 0 before MPI_Init, 1 running, 2 finalized */
__thread const char *shim_outer_fn;
bool shim_thread_multiple;
static int thread_level = MPI_THREAD_SINGLE;
static pthread_t main_thread;
static bool owns_world; /* false when pgc_init_process_group had started the world */

bool shim_initialized(void)
{
    return state == 1;
}

bool shim_finalized(void)
{
    return state == 2;
}

int shim_check_init(const char *fn)
{
    if (state == 1) {
        return MPI_SUCCESS;
    }
    return shim_error(MPI_COMM_NULL, fn, MPI_ERR_OTHER, "%s",
                      state == 0 ? "called before MPI_Init" : "called after MPI_Finalize");
}

int shim_errclass(int status)
{
    switch (status) {
    case PGC_OK:
        return MPI_SUCCESS;
    case PGC_ERR_INVALID_ARG:
        return MPI_ERR_ARG;
    case PGC_ERR_INVALID_RANK:
        return MPI_ERR_RANK;
    case PGC_ERR_INVALID_COUNT:
        return MPI_ERR_COUNT;
    case PGC_ERR_INVALID_DTYPE:
        return MPI_ERR_TYPE;
    case PGC_ERR_INVALID_OP:
        return MPI_ERR_OP;
    case PGC_ERR_INVALID_GROUP:
        return MPI_ERR_GROUP;
    case PGC_ERR_INVALID_TAG:
        return MPI_ERR_TAG;
    case PGC_ERR_INVALID_ROOT:
        return MPI_ERR_ROOT;
    case PGC_ERR_TRUNCATE:
        return MPI_ERR_TRUNCATE;
    case PGC_ERR_NOMEM:
        return MPI_ERR_NO_MEM;
    case PGC_ERR_UNSUPPORTED:
        return MPI_ERR_UNSUPPORTED_OPERATION;
    case PGC_ERR_BUFFER:
        return MPI_ERR_BUFFER;
    case PGC_ERR_REQUEST:
        return MPI_ERR_REQUEST;
    case PGC_ERR_PENDING:
        return MPI_ERR_PENDING;
    case PGC_ERR_INTERNAL:
        return MPI_ERR_INTERN;
    default:
        return MPI_ERR_OTHER;
    }
}

/* The world rank for messages: before MPI_Init has its world, the one the bootstrap or the
 * launcher gave (a failing MPI_Init must name the rank that failed); 0 for a singleton. */
static int shim_rank_known(void)
{
    int r = mps_log_get_rank();

    if (state != 0) {
        return pg_world_rank();
    }
    return r >= 0 ? r : 0;
}

int shim_error(MPI_Comm comm, const char *fn, int errclass, const char *fmt, ...)
{
    char cause[400], msg[MPI_MAX_ERROR_STRING];
    struct shim_comm *c = NULL;
    MPI_Errhandler h = MPI_ERRORS_ARE_FATAL;
    va_list ap;
    int code;

    va_start(ap, fmt);
    vsnprintf(cause, sizeof(cause), fmt, ap);
    va_end(ap);
    if (shim_outer_fn) {
        fn = shim_outer_fn;
    }
    /* After MPI_Finalize the world's rank is still known (an error of MPI_Finalize itself,
     * or a call after it, names the rank that made it). */
    snprintf(msg, sizeof(msg), "%s (rank %d): %s", fn, shim_rank_known(), cause);
    if (state == 1 && (shim_comm_get(comm, &c) == MPI_SUCCESS ||
                       shim_comm_get(MPI_COMM_WORLD, &c) == MPI_SUCCESS)) {
        h = c->errh;
    }
    /* The handler and the caller get the same code, which keeps msg for MPI_Error_string
     * (under MPI_ERRORS_RETURN the only way to read it). */
    code = shim_errcode_make(errclass, msg);
    shim_errhandler_invoke(h, comm, code, msg);
    return code;
}

int shim_error_pg(MPI_Comm comm, const char *fn, int status)
{
    /* A status that completed a request may come without a recorded cause. */
    const char *cause = *mps_last_error() ? mps_last_error() : pgc_strerror(status);

    return shim_error(comm, fn, shim_errclass(status), "%s", cause);
}

/* MPI_Init failed: errors there are fatal (no handler can be set before it). pg_init has
 * released its bootstrap, so the fatal handler's pg_abort could not reach the launcher:
 * ask it here, or the other ranks wait in their start-up until MPISHIM_TIMEOUT. */
static void init_failed(int errclass)
{
    char msg[MPI_MAX_ERROR_STRING];

    snprintf(msg, sizeof(msg), "MPI_Init (rank %d): %s", shim_rank_known(), mps_last_error());
    fprintf(stderr, "[mpishim] fatal error: %s\n", msg);
    fflush(stdout);
    fflush(stderr);
    boot_abort_launcher(errclass, msg);
    _exit(errclass);
}

static int init_common(int required, int *provided)
{
    int rc;

    if (state != 0) {
        return shim_error(MPI_COMM_NULL, "MPI_Init", MPI_ERR_OTHER, "%s",
                          state == 1 ? "MPI is already initialized"
                                     : "MPI cannot be initialized again after MPI_Finalize");
    }
    /* Every level up to MPI_THREAD_MULTIPLE is provided: pg_core serializes behind one lock
     * when MULTIPLE is asked for, and takes no lock otherwise. */
    thread_level = required < MPI_THREAD_SINGLE ? MPI_THREAD_SINGLE
                   : required > MPI_THREAD_MULTIPLE ? MPI_THREAD_MULTIPLE
                                                    : required;
    if (provided) {
        *provided = thread_level;
    }
    main_thread = pthread_self();
    /* A process group world that pgc_init_process_group started is reused: MPI's
     * communicators are groups of that same world. */
    owns_world = !pg_is_initialized();
    rc = mps_config_validate();
    /* MPISHIM_ASYNC_PROGRESS=1: a progress thread of pg_core runs completion callbacks and
     * the windows' hook beside the program's thread, so the tables and the request pool
     * take their locks too, as MPICH runs internally at MULTIPLE (pg_async.c). */
    shim_thread_multiple = thread_level == MPI_THREAD_MULTIPLE ||
                           (rc == PGC_OK && mps_config_int(MPS_CFG_ASYNC_PROGRESS) != 0);
    if (rc == PGC_OK && owns_world) {
        rc = pg_init(NULL, -1, -1, 0, thread_level == MPI_THREAD_MULTIPLE);
    }
    if (rc != PGC_OK) {
        init_failed(shim_errclass(rc));
    }
    rc = shim_comm_init();
    if (rc == MPI_SUCCESS) {
        state = 1;
    }
    return rc;
}

#pragma weak MPI_Init = PMPI_Init
int PMPI_Init(int *argc, char ***argv)
{
    return init_common(MPI_THREAD_SINGLE, NULL);
}

#pragma weak MPI_Init_thread = PMPI_Init_thread
int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    return init_common(required, provided);
}

#pragma weak MPI_Initialized = PMPI_Initialized
int PMPI_Initialized(int *flag)
{
    *flag = state != 0;
    return MPI_SUCCESS;
}

#pragma weak MPI_Finalized = PMPI_Finalized
int PMPI_Finalized(int *flag)
{
    *flag = state == 2;
    return MPI_SUCCESS;
}

#pragma weak MPI_Finalize = PMPI_Finalize
int PMPI_Finalize(void)
{
    int rc = shim_check_init(SHIM_FN);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* MPI-3.1 section 8.7.1: first the equivalent of freeing MPI_COMM_SELF, whose attributes'
     * delete callbacks run newest first while MPI still works; libraries (HDF5 among them)
     * hang their cleanup on it. A failing callback is raised now, with MPI_COMM_SELF's
     * handler; under MPI_ERRORS_RETURN finalization goes on and returns it. */
    int arc = shim_attr_delete_all(MPI_COMM_SELF);
    if (arc != MPI_SUCCESS) {
        arc = shim_error(MPI_COMM_SELF, SHIM_FN, arc,
                         "a delete callback of an MPI_COMM_SELF attribute failed");
    }
    rc = owns_world ? pg_finalize() : pg_barrier(pg_world_group());
    shim_comm_fini();
    state = 2;
    if (rc != PGC_OK) {
        return shim_error(MPI_COMM_NULL, SHIM_FN, shim_errclass(rc), "%s", mps_last_error());
    }
    return arc;
}

#pragma weak MPI_Abort = PMPI_Abort
int PMPI_Abort(MPI_Comm comm, int errorcode)
{
    char msg[128];

    snprintf(msg, sizeof(msg), "MPI_Abort(comm, %d) called by rank %d", errorcode,
             shim_rank_known());
    fprintf(stderr, "[mpishim] %s\n", msg);
    fflush(stdout);
    if (state == 1) {
        pg_abort(errorcode, msg);
    }
    /* Before MPI_Init or after MPI_Finalize there is no bootstrap: the launcher still ends
     * the job. */
    boot_abort_launcher(errorcode ? errorcode : 1, msg);
    _exit(errorcode ? errorcode : 1);
}

#pragma weak MPI_Query_thread = PMPI_Query_thread
int PMPI_Query_thread(int *provided)
{
    *provided = thread_level;
    return MPI_SUCCESS;
}

#pragma weak MPI_Is_thread_main = PMPI_Is_thread_main
int PMPI_Is_thread_main(int *flag)
{
    *flag = pthread_equal(pthread_self(), main_thread);
    return MPI_SUCCESS;
}

#pragma weak MPI_Get_version = PMPI_Get_version
int PMPI_Get_version(int *version, int *subversion)
{
    *version = MPI_VERSION;
    *subversion = MPI_SUBVERSION;
    return MPI_SUCCESS;
}

#pragma weak MPI_Get_library_version = PMPI_Get_library_version
int PMPI_Get_library_version(char *version, int *resultlen)
{
    int n = snprintf(version, MPI_MAX_LIBRARY_VERSION_STRING,
                     "mpishim %s (MPI %d.%d subset over libfabric; CUDA %s, NCCL %s)",
                     PACKAGE_VERSION, MPI_VERSION, MPI_SUBVERSION, HAVE_CUDA ? "yes" : "no",
                     HAVE_NCCL ? "yes" : "no");
    *resultlen = n;
    return MPI_SUCCESS;
}

#pragma weak MPI_Get_processor_name = PMPI_Get_processor_name
int PMPI_Get_processor_name(char *name, int *resultlen)
{
    if (gethostname(name, MPI_MAX_PROCESSOR_NAME) != 0) {
        snprintf(name, MPI_MAX_PROCESSOR_NAME, "unknown");
    }
    name[MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    *resultlen = (int)strlen(name);
    return MPI_SUCCESS;
}

#pragma weak MPI_Wtime = PMPI_Wtime
double PMPI_Wtime(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#pragma weak MPI_Wtick = PMPI_Wtick
double PMPI_Wtick(void)
{
    struct timespec ts;

    clock_getres(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#pragma weak MPI_Alloc_mem = PMPI_Alloc_mem
int PMPI_Alloc_mem(MPI_Aint size, MPI_Info info, void *baseptr)
{
    void *p;

    if (size < 0) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "size %ld < 0", (long)size);
    }
    /* Page alignment suits the providers' registration and large copies. */
    if (posix_memalign(&p, 4096, size ? (size_t)size : 1) != 0) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "cannot allocate %ld bytes",
                          (long)size);
    }
    *(void **)baseptr = p;
    return MPI_SUCCESS;
}

#pragma weak MPI_Free_mem = PMPI_Free_mem
int PMPI_Free_mem(void *base)
{
    free(base);
    return MPI_SUCCESS;
}

static const char *class_strings[] = {
    [MPI_SUCCESS] = "no error",
    [MPI_ERR_BUFFER] = "invalid buffer pointer",
    [MPI_ERR_COUNT] = "invalid count argument",
    [MPI_ERR_TYPE] = "invalid datatype",
    [MPI_ERR_TAG] = "invalid tag",
    [MPI_ERR_COMM] = "invalid communicator",
    [MPI_ERR_RANK] = "invalid rank",
    [MPI_ERR_ROOT] = "invalid root",
    [MPI_ERR_GROUP] = "invalid group",
    [MPI_ERR_OP] = "invalid reduce operation",
    [MPI_ERR_TOPOLOGY] = "invalid topology",
    [MPI_ERR_DIMS] = "invalid dimension argument",
    [MPI_ERR_ARG] = "invalid argument of some other kind",
    [MPI_ERR_UNKNOWN] = "unknown error",
    [MPI_ERR_TRUNCATE] = "message truncated",
    [MPI_ERR_OTHER] = "known error not in this list",
    [MPI_ERR_INTERN] = "internal MPI error",
    [MPI_ERR_IN_STATUS] = "error code is in status",
    [MPI_ERR_PENDING] = "pending request",
    [MPI_ERR_REQUEST] = "invalid request",
    [MPI_ERR_ACCESS] = "permission denied",
    [MPI_ERR_AMODE] = "invalid file access mode",
    [MPI_ERR_BAD_FILE] = "invalid file name",
    [MPI_ERR_CONVERSION] = "error in a user data conversion function",
    [MPI_ERR_DUP_DATAREP] = "data representation already defined",
    [MPI_ERR_FILE_EXISTS] = "file exists",
    [MPI_ERR_FILE_IN_USE] = "file operation not possible: the file is in use",
    [MPI_ERR_FILE] = "invalid file handle",
    [MPI_ERR_INFO] = "invalid info object",
    [MPI_ERR_INFO_KEY] = "invalid info key",
    [MPI_ERR_INFO_VALUE] = "invalid info value",
    [MPI_ERR_INFO_NOKEY] = "info key not defined",
    [MPI_ERR_IO] = "I/O error",
    [MPI_ERR_NAME] = "service name not published",
    [MPI_ERR_NO_MEM] = "out of memory",
    [MPI_ERR_NOT_SAME] = "collective argument not identical on all processes",
    [MPI_ERR_NO_SPACE] = "not enough space",
    [MPI_ERR_NO_SUCH_FILE] = "file does not exist",
    [MPI_ERR_PORT] = "invalid port name",
    [MPI_ERR_QUOTA] = "quota exceeded",
    [MPI_ERR_READ_ONLY] = "read-only file or file system",
    [MPI_ERR_SERVICE] = "service name not published (MPI_Unpublish_name)",
    [MPI_ERR_SPAWN] = "error spawning processes",
    [MPI_ERR_UNSUPPORTED_DATAREP] = "unsupported data representation",
    [MPI_ERR_UNSUPPORTED_OPERATION] = "operation not supported",
    [MPI_ERR_WIN] = "invalid window",
    [MPI_ERR_BASE] = "invalid base address",
    [MPI_ERR_LOCKTYPE] = "invalid lock type",
    [MPI_ERR_KEYVAL] = "invalid keyval",
    [MPI_ERR_RMA_CONFLICT] = "conflicting accesses to a window",
    [MPI_ERR_RMA_SYNC] = "wrong synchronization of RMA calls",
    [MPI_ERR_SIZE] = "invalid size argument",
    [MPI_ERR_DISP] = "invalid displacement argument",
    [MPI_ERR_ASSERT] = "invalid assert argument",
    [MPI_ERR_RMA_RANGE] = "target memory is outside the window",
    [MPI_ERR_RMA_ATTACH] = "memory cannot be attached to the window",
    [MPI_ERR_RMA_SHARED] = "memory cannot be shared",
    [MPI_ERR_RMA_FLAVOR] = "passed window has the wrong flavor for the called function",
};

/* A predefined class's text, or NULL where class is none (54, or past 58). */
static const char *class_string(int errclass)
{
    if (errclass >= 0 && errclass < (int)(sizeof(class_strings) / sizeof(*class_strings))) {
        return class_strings[errclass];
    }
    return NULL;
}

#pragma weak MPI_Error_string = PMPI_Error_string
int PMPI_Error_string(int errorcode, char *string, int *resultlen)
{
    const char *s = class_string(shim_errcode_class(errorcode));

    /* A dynamic code whose slot was reused since reads as its class, as MPI allows. */
    if (s && shim_errcode_string(errorcode, string)) {
        *resultlen = (int)strlen(string);
        return MPI_SUCCESS;
    }
    if (!s) {
        s = shim_user_error_string(errorcode);
    }
    if (!s) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "unknown error code %d",
                          errorcode);
    }
    *resultlen = snprintf(string, MPI_MAX_ERROR_STRING, "%s", s);
    return MPI_SUCCESS;
}

#pragma weak MPI_Error_class = PMPI_Error_class
int PMPI_Error_class(int errorcode, int *errorclass)
{
    /* The predefined classes are the codes with a string: 0..58 but 54, as in MPICH; a
     * dynamic code (shim_errcode.c) carries one of them. */
    int errclass = shim_errcode_class(errorcode);

    if (class_string(errclass)) {
        *errorclass = errclass;
        return MPI_SUCCESS;
    }
    return shim_user_error_class(errorcode, errorclass);
}
