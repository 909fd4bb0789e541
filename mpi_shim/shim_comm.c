/*
 * shim_comm.c - communicator handles: MPI_COMM_WORLD and MPI_COMM_SELF are builtin
 * handles of two static objects; the others live in a handle table. Each holds a pg_group.
 */
#include "config.h"

#include "shim_comm.h"
#include "shim_inter.h"
#include "shim_topo.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct shim_comm world_comm, self_comm;
static struct shim_table comms = {.obj = MPISHIM_OBJ_COMM};

int shim_comm_get(MPI_Comm h, struct shim_comm **out)
{
    struct shim_comm *c = NULL;

    if (h == MPI_COMM_WORLD) {
        c = &world_comm;
    } else if (h == MPI_COMM_SELF) {
        c = &self_comm;
    } else {
        c = shim_table_get(&comms, h);
    }
    if (!c || !c->in_use) {
        return MPI_ERR_COMM;
    }
    *out = c;
    return MPI_SUCCESS;
}

MPI_Comm shim_comm_add(struct pg_group *g, MPI_Errhandler errh)
{
    struct shim_comm *c = calloc(1, sizeof(*c));
    int h;

    if (!c) {
        return MPI_COMM_NULL;
    }
    c->g = g;
    c->errh = errh;
    c->in_use = true;
    shim_errhandler_retain(errh);
    h = shim_table_add(&comms, c);
    if (!h) {
        free(c);
        return MPI_COMM_NULL;
    }
    g->user = (void *)(intptr_t)h;
    return h;
}

void shim_comm_remove(MPI_Comm h)
{
    struct shim_comm *c = shim_table_remove(&comms, h);

    if (c) {
        shim_inter_free(c->inter);
        shim_errhandler_release(c->errh);
        pg_group_release(c->g);
        free(c->topo);
        free(c);
    }
}

bool shim_comm_is_inter_lookup(MPI_Comm comm)
{
    struct shim_comm *c;

    return comm != MPI_COMM_WORLD && comm != MPI_COMM_SELF &&
           shim_comm_get(comm, &c) == MPI_SUCCESS && c->inter;
}

int shim_comm_init(void)
{
    world_comm = (struct shim_comm){.g = pg_world_group(), .errh = MPI_ERRORS_ARE_FATAL,
                                    .in_use = true};
    self_comm = (struct shim_comm){.g = pg_self_group(), .errh = MPI_ERRORS_ARE_FATAL,
                                   .in_use = true};
    snprintf(world_comm.name, sizeof(world_comm.name), "MPI_COMM_WORLD");
    snprintf(self_comm.name, sizeof(self_comm.name), "MPI_COMM_SELF");
    pg_world_group()->user = (void *)(intptr_t)MPI_COMM_WORLD;
    pg_self_group()->user = (void *)(intptr_t)MPI_COMM_SELF;
    return MPI_SUCCESS;
}

void shim_comm_fini(void)
{
    for (int i = 0; i < comms.n; i++) {
        if (comms.slots[i]) {
            shim_comm_remove(MPISHIM_HANDLE_MAKE(MPISHIM_KIND_INDIRECT, MPISHIM_OBJ_COMM, i));
        }
    }
    free(comms.slots);
    comms = (struct shim_table){.obj = MPISHIM_OBJ_COMM};
    world_comm.in_use = self_comm.in_use = false;
}

int shim_comm_enter(const char *fn, MPI_Comm comm, struct shim_comm **c)
{
    int rc = shim_check_init(fn);

    if (rc == MPI_SUCCESS && shim_comm_get(comm, c) != MPI_SUCCESS) {
        rc = shim_error(comm, fn, MPI_ERR_COMM, "invalid communicator 0x%x", (unsigned)comm);
    }
    return rc;
}

#pragma weak MPI_Comm_rank = PMPI_Comm_rank
int PMPI_Comm_rank(MPI_Comm comm, int *rank)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS) {
        *rank = c->g->rank;
    }
    return rc;
}

#pragma weak MPI_Comm_size = PMPI_Comm_size
int PMPI_Comm_size(MPI_Comm comm, int *size)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS) {
        /* An intercommunicator's g is its remote view: the local size is kept beside it. */
        *size = c->inter ? c->inter->lsize : c->g->size;
    }
    return rc;
}

/* Wraps a new group in a handle that inherits the parent's error handler. */
int shim_comm_wrap(const char *fn, struct shim_comm *parent, MPI_Comm comm, struct pg_group *g,
                   MPI_Comm *out)
{
    *out = MPI_COMM_NULL;
    if (!g) {
        return MPI_SUCCESS;
    }
    *out = shim_comm_add(g, parent->errh);
    if (*out == MPI_COMM_NULL) {
        pg_group_release(g);
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a communicator");
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Comm_dup = PMPI_Comm_dup
int PMPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    struct shim_comm *c;
    struct pg_group *g;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (c->inter) {
        rc = shim_inter_dup(SHIM_FN, comm, c, newcomm);
    } else if ((rc = pg_group_dup(c->g, &g)) != PGC_OK) {
        return shim_error_pg(comm, SHIM_FN, rc);
    } else {
        rc = shim_comm_wrap(SHIM_FN, c, comm, g, newcomm);
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_topo_copy(comm, *newcomm);
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_attr_copy_all(comm, *newcomm);
    }
    return rc;
}

#pragma weak MPI_Comm_split = PMPI_Comm_split
int PMPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    struct shim_comm *c;
    struct pg_group *g;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (color < 0 && color != MPI_UNDEFINED) {
        return shim_error(comm, SHIM_FN, MPI_ERR_ARG, "color %d is negative", color);
    }
    if (c->inter) {
        return shim_inter_split(SHIM_FN, comm, c, color, key, newcomm);
    }
    rc = pg_group_split(c->g, color == MPI_UNDEFINED ? -1 : color, key, &g);
    if (rc != PGC_OK) {
        return shim_error_pg(comm, SHIM_FN, rc);
    }
    return shim_comm_wrap(SHIM_FN, c, comm, g, newcomm);
}

#pragma weak MPI_Comm_free = PMPI_Comm_free
int PMPI_Comm_free(MPI_Comm *comm)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, *comm, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (*comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF) {
        return shim_error(*comm, SHIM_FN, MPI_ERR_COMM, "a predefined communicator cannot be freed");
    }
    rc = shim_attr_delete_all(*comm);
    shim_comm_remove(*comm);
    *comm = MPI_COMM_NULL;
    return rc;
}

#pragma weak MPI_Comm_set_errhandler = PMPI_Comm_set_errhandler
int PMPI_Comm_set_errhandler(MPI_Comm comm, MPI_Errhandler errhandler)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (shim_errhandler_check(errhandler) != MPI_SUCCESS) {
        return shim_error(comm, SHIM_FN, MPI_ERR_ARG, "invalid error handler 0x%x",
                          (unsigned)errhandler);
    }
    if (shim_errhandler_kind(errhandler) == SHIM_ERRH_WIN) {
        return shim_error(comm, SHIM_FN, MPI_ERR_ARG,
                          "error handler 0x%x was made by MPI_Win_create_errhandler: it is for "
                          "windows, not communicators",
                          (unsigned)errhandler);
    }
    shim_comm_set_errh(comm, errhandler);
    return MPI_SUCCESS;
}

void shim_comm_set_errh(MPI_Comm comm, MPI_Errhandler h)
{
    struct shim_comm *c;

    if (shim_comm_get(comm, &c) == MPI_SUCCESS) {
        shim_errhandler_retain(h);
        shim_errhandler_release(c->errh);
        c->errh = h;
    }
}

#pragma weak MPI_Comm_get_errhandler = PMPI_Comm_get_errhandler
int PMPI_Comm_get_errhandler(MPI_Comm comm, MPI_Errhandler *errhandler)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS) {
        shim_errhandler_retain(c->errh);
        *errhandler = c->errh;
    }
    return rc;
}

#pragma weak MPI_Comm_set_name = PMPI_Comm_set_name
int PMPI_Comm_set_name(MPI_Comm comm, const char *name)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS) {
        snprintf(c->name, sizeof(c->name), "%s", name);
    }
    return rc;
}

#pragma weak MPI_Comm_get_name = PMPI_Comm_get_name
int PMPI_Comm_get_name(MPI_Comm comm, char *name, int *resultlen)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS) {
        *resultlen = snprintf(name, MPI_MAX_OBJECT_NAME, "%s", c->name);
    }
    return rc;
}
