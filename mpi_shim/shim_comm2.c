/*
 * shim_comm2.c - the communicator calls beyond dup/split/free: creation from a group
 * (collective over the parent, or over the group's members only), splitting by node,
 * comparison, the non-blocking dup and info hints. Intercommunicators are made and
 * queried in shim_intercomm.c.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_group_sub.h"
#include "pgc_status.h"
#include "shim_comm.h"
#include "shim_group.h"
#include "shim_inter.h"
#include "shim_req.h"
#include "shim_topo.h"

#include <stdlib.h>
#include <string.h>

/* The parent ranks of a group's members (caller frees); MPI_ERR_GROUP raised when one is
 * not in the parent. */
static int parent_ranks(const char *fn, MPI_Comm comm, struct shim_comm *c, MPI_Group group,
                        int **ranks, int *n)
{
    struct shim_group *grp;

    *ranks = NULL;
    if (shim_group_get(group, &grp) != MPI_SUCCESS) {
        return shim_error(comm, fn, MPI_ERR_GROUP, "invalid group 0x%x", (unsigned)group);
    }
    *ranks = malloc(sizeof(int) * (size_t)(grp->size > 0 ? grp->size : 1));
    if (!*ranks) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for %d ranks", grp->size);
    }
    for (int i = 0; i < grp->size; i++) {
        (*ranks)[i] = pg_group_rank_of(c->g, grp->ranks[i]);
        if ((*ranks)[i] < 0) {
            free(*ranks);
            *ranks = NULL;
            return shim_error(comm, fn, MPI_ERR_GROUP,
                              "group member %d (world rank %d) is not in the communicator", i,
                              grp->ranks[i]);
        }
    }
    *n = grp->size;
    return MPI_SUCCESS;
}

static bool contains(const int *list, int n, int x)
{
    for (int i = 0; i < n; i++) {
        if (list[i] == x) {
            return true;
        }
    }
    return false;
}

#pragma weak MPI_Comm_create = PMPI_Comm_create
int PMPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
    struct shim_comm *c;
    struct pg_group *g = NULL;
    int *ranks = NULL;
    int n = 0, rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS && c->inter) {
        return shim_inter_create(SHIM_FN, comm, c, group, newcomm);
    }
    if (rc == MPI_SUCCESS) {
        rc = parent_ranks(SHIM_FN, comm, c, group, &ranks, &n);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = pg_group_create(c->g, ranks, n, &g);
    free(ranks);
    if (rc != PGC_OK) {
        return shim_error_pg(comm, SHIM_FN, rc);
    }
    return shim_comm_wrap(SHIM_FN, c, comm, g, newcomm);
}

#pragma weak MPI_Comm_create_group = PMPI_Comm_create_group
int PMPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
    struct shim_comm *c;
    struct pg_group *g = NULL;
    int *ranks = NULL;
    int n = 0, rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS && c->inter) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_COMM, "not defined on an intercommunicator");
    }
    if (rc == MPI_SUCCESS && tag < 0) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_TAG, "tag %d is negative", tag);
    }
    if (rc == MPI_SUCCESS) {
        rc = parent_ranks(SHIM_FN, comm, c, group, &ranks, &n);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!contains(ranks, n, c->g->rank)) {
        /* Only members call; a caller outside the group gets no communicator. */
        free(ranks);
        *newcomm = MPI_COMM_NULL;
        return MPI_SUCCESS;
    }
    rc = pg_group_create_sub(c->g, ranks, n, tag, &g);
    free(ranks);
    if (rc != PGC_OK) {
        return shim_error_pg(comm, SHIM_FN, rc);
    }
    return shim_comm_wrap(SHIM_FN, c, comm, g, newcomm);
}

/* The color of each rank for a split by node: the first rank on the same node. */
static int node_color(struct pg_group *g, int *color)
{
    char mine[MPI_MAX_PROCESSOR_NAME];
    char *all = malloc((size_t)MPI_MAX_PROCESSOR_NAME * (size_t)g->size);
    int rc;

    if (!all) {
        return mps_error(PGC_ERR_NOMEM, "no memory for %d node names", g->size);
    }
    memset(mine, 0, sizeof(mine));
    strncpy(mine, pg_node_name(), sizeof(mine) - 1);
    rc = pg_allgather(g, mine, all, sizeof(mine));
    for (int r = 0; rc == PGC_OK && r <= g->rank; r++) {
        if (strcmp(all + (size_t)r * MPI_MAX_PROCESSOR_NAME, mine) == 0) {
            *color = r;
            break;
        }
    }
    free(all);
    return rc;
}

#pragma weak MPI_Comm_split_type = PMPI_Comm_split_type
int PMPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
    struct shim_comm *c;
    struct pg_group *g = NULL;
    int color = -1, rc = shim_comm_enter(SHIM_FN, comm, &c);

    (void)info;
    if (rc == MPI_SUCCESS && c->inter) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_COMM, "not defined on an intercommunicator");
    }
    if (rc == MPI_SUCCESS && split_type != MPI_COMM_TYPE_SHARED && split_type != MPI_UNDEFINED) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_ARG,
                        "split_type %d is neither MPI_COMM_TYPE_SHARED nor MPI_UNDEFINED",
                        split_type);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Every rank takes part in the name exchange, MPI_UNDEFINED ones too. */
    rc = node_color(c->g, &color);
    if (rc == PGC_OK) {
        rc = pg_group_split(c->g, split_type == MPI_UNDEFINED ? -1 : color, key, &g);
    }
    if (rc != PGC_OK) {
        return shim_error_pg(comm, SHIM_FN, rc);
    }
    return shim_comm_wrap(SHIM_FN, c, comm, g, newcomm);
}

/* Two intercommunicators: congruent when both groups are identical, similar when both
 * hold the same members (MPI-3.1 6.4.1). */
static int compare_inter(const struct shim_comm *c1, const struct shim_comm *c2)
{
    int l = shim_group_compare_lists(shim_inter_local_ranks(c1), c1->inter->lsize,
                                     shim_inter_local_ranks(c2), c2->inter->lsize);
    int r = shim_group_compare_lists(c1->g->ranks, c1->g->size, c2->g->ranks, c2->g->size);

    if (l == MPI_UNEQUAL || r == MPI_UNEQUAL) {
        return MPI_UNEQUAL;
    }
    return l == MPI_IDENT && r == MPI_IDENT ? MPI_CONGRUENT : MPI_SIMILAR;
}

#pragma weak MPI_Comm_compare = PMPI_Comm_compare
int PMPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    struct shim_comm *c1, *c2;
    int rc = shim_comm_enter(SHIM_FN, comm1, &c1);

    if (rc == MPI_SUCCESS) {
        rc = shim_comm_enter(SHIM_FN, comm2, &c2);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (comm1 == comm2) {
        *result = MPI_IDENT;
    } else if (!c1->inter != !c2->inter) {
        *result = MPI_UNEQUAL;
    } else if (c1->inter) {
        *result = compare_inter(c1, c2);
    } else {
        *result = shim_group_compare_lists(c1->g->ranks, c1->g->size, c2->g->ranks,
                                           c2->g->size);
        *result = *result == MPI_IDENT ? MPI_CONGRUENT : *result;
    }
    return MPI_SUCCESS;
}

/* The end of a non-blocking dup, when its agreement completed: the groups, the handle in
 * the caller's variable (MPI-3.1 6.4.2: newcomm is valid once the request completes), and
 * what MPI_Comm_dup copies. An error becomes the request's. */
static int idup_finish(struct shim_req *r)
{
    struct pg_group *g[PG_IDUP_MAX] = {NULL};
    MPI_Comm *out = r->ubuf;
    struct shim_comm *c;
    int rc = pg_group_idup_end(r->tmp, g);

    r->tmp = NULL; /* pg_group_idup_end freed it */
    if (rc != PGC_OK) {
        r->pr.status = rc; /* the completion call raises it */
        return MPI_SUCCESS;
    }
    rc = shim_comm_enter("MPI_Comm_idup", r->comm, &c);
    if (rc != MPI_SUCCESS) {
        for (int i = 0; i < PG_IDUP_MAX; i++) {
            pg_group_release(g[i]);
        }
    } else if (c->inter) {
        rc = shim_inter_adopt("MPI_Comm_idup", r->comm, c, g, out);
    } else {
        rc = shim_comm_wrap("MPI_Comm_idup", c, r->comm, g[0], out);
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_topo_copy(r->comm, *out);
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_attr_copy_all(r->comm, *out);
    }
    if (rc != MPI_SUCCESS) {
        r->pr.status = PGC_ERR_INTERNAL;
    }
    return rc;
}

/* The context ids are agreed by rounds of non-blocking allreduces (pg_group_idup_start), so
 * a rank may go on to wait for messages of peers that have not called MPI_Comm_idup yet,
 * and any number of dups may be in flight, on intra- and intercommunicators, with any
 * thread level; the new communicator is made when the request completes (idup_finish). An
 * intercommunicator's three groups (union, my side, remote view) are duplicated at once,
 * agreed over the union, as shim_inter_dup makes them one after another. */
#pragma weak MPI_Comm_idup = PMPI_Comm_idup
int PMPI_Comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request)
{
    struct pg_group *parts[PG_IDUP_MAX] = {NULL};
    struct shim_comm *c;
    struct shim_req *r;
    struct pg_idup *d = NULL;
    int n, rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    parts[0] = c->g;
    n = c->inter ? shim_inter_parts(c, parts) : 1;
    if (n == 0) {
        return shim_error(comm, SHIM_FN, MPI_ERR_COMM, "an intercommunicator without its parts");
    }
    r = shim_req_new(SHIM_REQ_COLL, comm);
    if (!r) {
        return shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a request");
    }
    pg_req_init(&r->pr, PG_REQ_COLL);
    rc = pg_group_idup_start(parts, n, &r->pr, &d);
    if (rc != PGC_OK) {
        shim_req_free(r);
        return shim_error_pg(comm, SHIM_FN, rc);
    }
    r->tmp = d; /* freed by idup_finish, or as a temporary if the agreement failed */
    r->ubuf = newcomm;
    r->finish = idup_finish;
    *newcomm = MPI_COMM_NULL;
    *request = r->handle;
    return MPI_SUCCESS;
}

/* Hints are accepted and ignored: no communicator behaviour depends on one. */
#pragma weak MPI_Comm_dup_with_info = PMPI_Comm_dup_with_info
int PMPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup(comm, newcomm);

    (void)info;
    if (rc == MPI_SUCCESS && shim_topo_copy(comm, *newcomm) != MPI_SUCCESS) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory to copy the topology");
    }
    return rc;
}

#pragma weak MPI_Comm_set_info = PMPI_Comm_set_info
int PMPI_Comm_set_info(MPI_Comm comm, MPI_Info info)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS && info != MPI_INFO_NULL && !shim_info_valid(info)) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_INFO, "invalid info object 0x%x", (unsigned)info);
    }
    return rc;
}

/* No hint is used, so the info in use is always empty (a new object the caller frees). */
#pragma weak MPI_Comm_get_info = PMPI_Comm_get_info
int PMPI_Comm_get_info(MPI_Comm comm, MPI_Info *info_used)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    return rc == MPI_SUCCESS ? PMPI_Info_create(info_used) : rc;
}
