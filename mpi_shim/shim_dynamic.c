/*
 * shim_dynamic.c - dynamic processes (MPI-3.1 chapter 10): spawning, ports, name
 * publishing, joining. mpishim starts and connects no process after MPI_Init, so these fail,
 * and they fail at once on every rank that calls them, without any communication: a
 * collective call such as MPI_Comm_spawn or MPI_Comm_accept then fails on all of its ranks
 * alike and leaves none of them waiting for another. Each output communicator is set to
 * MPI_COMM_NULL before the error is raised, so a caller under MPI_ERRORS_RETURN holds
 * nothing that looks valid.
 *
 * Classes: MPI_ERR_SPAWN for spawning and joining, MPI_ERR_PORT for ports, accept and
 * connect, MPI_ERR_SERVICE for publishing and unpublishing, MPI_ERR_NAME for a lookup.
 * The calls with a communicator raise on it; the others on MPI_COMM_WORLD.
 *
 * Two calls work: MPI_Comm_get_parent (no process has a parent: MPI_COMM_NULL) and
 * MPI_Comm_disconnect, which waits for the other ranks of the communicator (a barrier: a
 * program's communication on it is complete once all arrive) and frees it.
 */
#include "config.h"

#include "shim_comm.h"

#define NO_SPAWN                                                                                   \
    "mpishim starts no processes after MPI_Init (dynamic processes are not "                       \
    "supported)"
#define NO_PORT "mpishim connects to no other job (ports are not supported)"
#define NO_NAME "mpishim has no name service (dynamic processes are not supported)"

/* Fails a collective call over comm: the communicator is checked first, so that an invalid
 * one is reported as such. */
static int refuse_on(const char *fn, MPI_Comm comm, MPI_Comm *out, int errclass, const char *cause)
{
    struct shim_comm *c;
    int rc;

    if (out) {
        *out = MPI_COMM_NULL;
    }
    rc = shim_comm_enter(fn, comm, &c);
    return rc != MPI_SUCCESS ? rc : shim_error(comm, fn, errclass, "%s", cause);
}

static int refuse(const char *fn, int errclass, const char *cause)
{
    int rc = shim_check_init(fn);

    return rc != MPI_SUCCESS ? rc : shim_error(MPI_COMM_WORLD, fn, errclass, "%s", cause);
}

/* The root's error codes: one per process asked for, each MPI_ERR_SPAWN. */
static void spawn_codes(MPI_Comm comm, int root, int n, int *codes)
{
    int rank = -1;

    if (codes != MPI_ERRCODES_IGNORE && n > 0 && PMPI_Comm_rank(comm, &rank) == MPI_SUCCESS &&
        rank == root) {
        for (int i = 0; i < n; i++) {
            codes[i] = MPI_ERR_SPAWN;
        }
    }
}

#pragma weak MPI_Comm_spawn = PMPI_Comm_spawn
int PMPI_Comm_spawn(const char *command, char *argv[], int maxprocs, MPI_Info info, int root,
                    MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[])
{
    int rc = refuse_on(SHIM_FN, comm, intercomm, MPI_ERR_SPAWN, NO_SPAWN);

    if (shim_errcode_class(rc) == MPI_ERR_SPAWN) {
        spawn_codes(comm, root, maxprocs, array_of_errcodes);
    }
    return rc;
}

#pragma weak MPI_Comm_spawn_multiple = PMPI_Comm_spawn_multiple
int PMPI_Comm_spawn_multiple(int count, char *array_of_commands[], char **array_of_argv[],
                             const int array_of_maxprocs[], const MPI_Info array_of_info[],
                             int root, MPI_Comm comm, MPI_Comm *intercomm, int array_of_errcodes[])
{
    int rc = refuse_on(SHIM_FN, comm, intercomm, MPI_ERR_SPAWN, NO_SPAWN);
    int total = 0;

    /* The counts are significant at the root only: read them there. */
    if (shim_errcode_class(rc) == MPI_ERR_SPAWN && array_of_maxprocs && count > 0) {
        int rank = -1;
        PMPI_Comm_rank(comm, &rank);
        for (int i = 0; rank == root && i < count; i++) {
            total += array_of_maxprocs[i] > 0 ? array_of_maxprocs[i] : 0;
        }
    }
    if (shim_errcode_class(rc) == MPI_ERR_SPAWN) {
        spawn_codes(comm, root, total, array_of_errcodes);
    }
    return rc;
}

#pragma weak MPI_Comm_get_parent = PMPI_Comm_get_parent
int PMPI_Comm_get_parent(MPI_Comm *parent)
{
    int rc = shim_check_init(SHIM_FN);

    if (rc == MPI_SUCCESS) {
        *parent = MPI_COMM_NULL;
    }
    return rc;
}

#pragma weak MPI_Comm_accept = PMPI_Comm_accept
int PMPI_Comm_accept(const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                     MPI_Comm *newcomm)
{
    return refuse_on(SHIM_FN, comm, newcomm, MPI_ERR_PORT, NO_PORT);
}

#pragma weak MPI_Comm_connect = PMPI_Comm_connect
int PMPI_Comm_connect(const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                      MPI_Comm *newcomm)
{
    return refuse_on(SHIM_FN, comm, newcomm, MPI_ERR_PORT, NO_PORT);
}

#pragma weak MPI_Comm_join = PMPI_Comm_join
int PMPI_Comm_join(int fd, MPI_Comm *intercomm)
{
    if (intercomm) {
        *intercomm = MPI_COMM_NULL;
    }
    return refuse(SHIM_FN, MPI_ERR_SPAWN, NO_SPAWN);
}

#pragma weak MPI_Open_port = PMPI_Open_port
int PMPI_Open_port(MPI_Info info, char *port_name)
{
    if (port_name) {
        port_name[0] = '\0';
    }
    return refuse(SHIM_FN, MPI_ERR_PORT, NO_PORT);
}

#pragma weak MPI_Close_port = PMPI_Close_port
int PMPI_Close_port(const char *port_name)
{
    return refuse(SHIM_FN, MPI_ERR_PORT, NO_PORT);
}

#pragma weak MPI_Publish_name = PMPI_Publish_name
int PMPI_Publish_name(const char *service_name, MPI_Info info, const char *port_name)
{
    return refuse(SHIM_FN, MPI_ERR_SERVICE, NO_NAME);
}

#pragma weak MPI_Unpublish_name = PMPI_Unpublish_name
int PMPI_Unpublish_name(const char *service_name, MPI_Info info, const char *port_name)
{
    return refuse(SHIM_FN, MPI_ERR_SERVICE, NO_NAME);
}

#pragma weak MPI_Lookup_name = PMPI_Lookup_name
int PMPI_Lookup_name(const char *service_name, MPI_Info info, char *port_name)
{
    if (port_name) {
        port_name[0] = '\0';
    }
    return refuse(SHIM_FN, MPI_ERR_NAME, NO_NAME);
}

#pragma weak MPI_Comm_disconnect = PMPI_Comm_disconnect
int PMPI_Comm_disconnect(MPI_Comm *comm)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, *comm, &c);

    if (rc == MPI_SUCCESS && (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)) {
        rc = shim_error(*comm, SHIM_FN, MPI_ERR_COMM,
                        "a predefined communicator cannot be disconnected");
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Barrier(*comm);
    }
    return rc == MPI_SUCCESS ? PMPI_Comm_free(comm) : rc;
}
