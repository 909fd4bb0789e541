/*
 * shim_pgc.c - the link between pgc groups and MPI communicators. Both are the same
 * pg_group underneath; an MPI handle for a pgc group is made on first request and kept in
 * the group's user field (set by shim_comm_add), as for every communicator.
 */
#include "config.h"

#include "mps_log.h"
#include "pgc.h"
#include "pgc_status.h"
#include "shim_comm.h"

#include <stdint.h>

/* The group's communicator if its user field still names a live one for this group. */
static MPI_Comm existing_comm(struct pg_group *g)
{
    MPI_Comm h = (MPI_Comm)(intptr_t)g->user;
    struct shim_comm *c;

    if (h && shim_comm_get(h, &c) == MPI_SUCCESS && c->g == g) {
        return h;
    }
    return MPI_COMM_NULL;
}

int pgc_group_to_mpi_comm(pgc_group *group)
{
    struct pg_group *g = (struct pg_group *)group;
    MPI_Comm h;

    if (!shim_initialized() || shim_finalized() || !pg_is_initialized()) {
        return 0;
    }
    if (!g) {
        return MPI_COMM_WORLD;
    }
    if (g->rank < 0) {
        return 0;
    }
    h = existing_comm(g);
    if (h != MPI_COMM_NULL) {
        return h;
    }
    /* The communicator takes a reference of its own: it lives as long as the group does. */
    pg_group_retain(g);
    h = shim_comm_add(g, MPI_ERRORS_ARE_FATAL);
    if (h == MPI_COMM_NULL) {
        pg_group_release(g);
        mps_error(PGC_ERR_NOMEM, "pgc_group_to_mpi_comm: no memory for a communicator");
        return 0;
    }
    return h;
}

pgc_group *pgc_group_from_mpi_comm(int comm)
{
    struct shim_comm *c;

    if (!shim_initialized() || shim_finalized() || shim_comm_get(comm, &c) != MPI_SUCCESS) {
        mps_error(PGC_ERR_INVALID_GROUP,
                  "pgc_group_from_mpi_comm: 0x%x is not a communicator "
                  "(or MPI is not initialized)",
                  (unsigned)comm);
        return NULL;
    }
    if (c->inter) {
        /* A process group has one set of ranks; an intercommunicator has two. */
        mps_error(PGC_ERR_INVALID_GROUP,
                  "pgc_group_from_mpi_comm: 0x%x is an intercommunicator", (unsigned)comm);
        return NULL;
    }
    pg_group_retain(c->g);
    return (pgc_group *)c->g;
}
