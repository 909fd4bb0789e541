/*
 * shim_intercomm.c - making intercommunicators (MPI_Intercomm_create, dup, split, create
 * on one), merging one into an intracommunicator, and the queries (MPI_Comm_test_inter,
 * MPI_Comm_remote_size, MPI_Comm_remote_group). shim_inter.h says how one is built.
 *
 * Every intercommunicator comes from a union group of both sides, ordered low side first,
 * and inter_build turns such a group into the three parts: the union itself, my side (a
 * split of the union) and the remote view. All three are collective over the union, so
 * both sides take the same steps in the same order.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_group_sub.h"
#include "pgc_status.h"
#include "shim_group.h"
#include "shim_inter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The tag of the leaders' exchange in MPI_Intercomm_merge, on the hidden union. */
#define MERGE_TAG 1

int shim_inter_live;

void shim_inter_free(struct shim_inter *in)
{
    if (in && in->counted) {
        __atomic_sub_fetch(&shim_inter_live, 1, __ATOMIC_RELAXED);
    }
    if (in) {
        shim_comm_remove(in->local);
        shim_comm_remove(in->uni);
        free(in);
    }
}

const int *shim_inter_local_ranks(const struct shim_comm *c)
{
    struct shim_comm *l;

    return shim_comm_get(c->inter->local, &l) == MPI_SUCCESS ? l->g->ranks : NULL;
}

/* A hidden intracommunicator for g (takes the reference): errors return, so that the
 * intercommunicator call raises them on the user's handle with its own name. */
static MPI_Comm hidden(struct pg_group *g)
{
    MPI_Comm h = shim_comm_add(g, MPI_ERRORS_RETURN);

    if (h == MPI_COMM_NULL) {
        pg_group_release(g);
    }
    return h;
}

/* The parts other than the union: my side (ordered by key, then union rank) and the remote
 * view. Collective over u. */
static int build_parts(struct pg_group *u, bool low, int key, const int *remote, int rsize,
                       struct pg_group **l, struct pg_group **v)
{
    int rc = pg_group_split(u, low ? 0 : 1, key, l);

    if (rc == PGC_OK) {
        rc = pg_group_remote_view(u, (*l)->rank, remote, rsize, v);
    }
    return rc;
}

/*
 * Makes the intercommunicator of its three groups: union u, my side l and the remote view
 * v, of rsize ranks (the caller's references pass to it). low: my side comes first in u.
 */
static int inter_assemble(const char *fn, MPI_Comm comm, MPI_Errhandler errh, struct pg_group *u,
                          struct pg_group *l, struct pg_group *v, bool low, int rsize,
                          MPI_Comm *out)
{
    struct shim_inter *in = calloc(1, sizeof(*in));
    struct shim_comm *c;
    int rc = in ? PGC_OK : mps_error(PGC_ERR_NOMEM, "no memory for an intercommunicator");

    *out = MPI_COMM_NULL;
    if (rc != PGC_OK) {
        goto fail;
    }
    *in = (struct shim_inter){.lsize = l->size,
                              .rsize = rsize,
                              .low = low,
                              .loff = low ? 0 : rsize,
                              .roff = low ? l->size : 0};
    in->uni = hidden(u);
    u = NULL;
    in->local = hidden(l);
    l = NULL;
    *out = shim_comm_add(v, errh);
    if (in->uni == MPI_COMM_NULL || in->local == MPI_COMM_NULL || *out == MPI_COMM_NULL) {
        rc = mps_error(PGC_ERR_NOMEM, "no memory for an intercommunicator");
        goto fail;
    }
    v = NULL;
    shim_comm_get(*out, &c);
    c->inter = in;
    in->counted = true;
    __atomic_add_fetch(&shim_inter_live, 1, __ATOMIC_RELAXED);
    return MPI_SUCCESS;
fail:
    if (*out != MPI_COMM_NULL) {
        shim_comm_remove(*out);
        v = NULL;
        *out = MPI_COMM_NULL;
    }
    shim_inter_free(in);
    pg_group_release(u);
    pg_group_release(l);
    pg_group_release(v);
    return shim_error_pg(comm, fn, rc);
}

/*
 * Makes the intercommunicator of union group u (the caller's reference passes to it; u
 * may be NULL on a rank that gets no communicator, which then only returns). low: my side
 * comes first in u. remote: the other side's world ranks in remote-rank order.
 */
static int inter_build(const char *fn, MPI_Comm comm, MPI_Errhandler errh, struct pg_group *u,
                       bool low, int key, const int *remote, int rsize, MPI_Comm *out)
{
    struct pg_group *l = NULL, *v = NULL;
    int rc = build_parts(u, low, key, remote, rsize, &l, &v);

    if (rc != PGC_OK) {
        *out = MPI_COMM_NULL;
        pg_group_release(u);
        pg_group_release(l);
        pg_group_release(v);
        return shim_error_pg(comm, fn, rc);
    }
    return inter_assemble(fn, comm, errh, u, l, v, low, rsize, out);
}

/* The leader's half of MPI_Intercomm_create: swaps the world-rank lists of both sides with
 * the remote leader over peer_comm. Returns the MPI class (with *cause) or MPI_SUCCESS. */
static int leader_swap(MPI_Comm peer_comm, int remote_leader, int tag, const int *mine, int n,
                       int **remote, int *rn, char *cause, size_t len)
{
    struct shim_comm *p;
    MPI_Errhandler keep;
    int rc;

    if (shim_comm_get(peer_comm, &p) != MPI_SUCCESS) {
        snprintf(cause, len, "invalid peer communicator 0x%x", (unsigned)peer_comm);
        return MPI_ERR_COMM;
    }
    if (remote_leader < 0 || remote_leader >= p->g->size) {
        snprintf(cause, len, "remote_leader %d is not in the peer communicator (size %d)",
                 remote_leader, p->g->size);
        return MPI_ERR_RANK;
    }
    /* The peer's own handler must not abort here: the local group waits for this result. */
    keep = p->errh;
    p->errh = MPI_ERRORS_RETURN;
    rc = PMPI_Sendrecv(&n, 1, MPI_INT, remote_leader, tag, rn, 1, MPI_INT, remote_leader, tag,
                       peer_comm, MPI_STATUS_IGNORE);
    *remote = rc == MPI_SUCCESS ? malloc(sizeof(int) * (size_t)(*rn > 0 ? *rn : 1)) : NULL;
    if (rc == MPI_SUCCESS && !*remote) {
        rc = MPI_ERR_NO_MEM;
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Sendrecv(mine, n, MPI_INT, remote_leader, tag, *remote, *rn, MPI_INT,
                           remote_leader, tag, peer_comm, MPI_STATUS_IGNORE);
    }
    p->errh = keep;
    if (rc != MPI_SUCCESS) {
        snprintf(cause, len,
                 "the exchange with the remote leader (rank %d of the peer "
                 "communicator) failed",
                 remote_leader);
    }
    return rc;
}

/* Everyone learns the leader's result: {class, remote size}, then the remote list. */
static int share_remote(struct pg_group *g, int leader, int *head, int **remote)
{
    int rc = pg_bcast(g, head, 2 * sizeof(int), leader);

    if (rc == PGC_OK && head[0] == MPI_SUCCESS && g->rank != leader) {
        *remote = malloc(sizeof(int) * (size_t)(head[1] > 0 ? head[1] : 1));
        rc = *remote ? PGC_OK : mps_error(PGC_ERR_NOMEM, "no memory for %d ranks", head[1]);
    }
    if (rc == PGC_OK && head[0] == MPI_SUCCESS) {
        rc = pg_bcast(g, *remote, sizeof(int) * (size_t)head[1], leader);
    }
    return rc;
}

static bool overlap(const int *a, int na, const int *b, int nb, int *both)
{
    for (int i = 0; i < na; i++) {
        for (int j = 0; j < nb; j++) {
            if (a[i] == b[j]) {
                *both = a[i];
                return true;
            }
        }
    }
    return false;
}

static int min_of(const int *a, int n)
{
    int m = a[0];

    for (int i = 1; i < n; i++) {
        m = a[i] < m ? a[i] : m;
    }
    return m;
}

/* The union of both sides, low side first (the side holding the lowest world rank). */
static int make_union(const char *fn, MPI_Comm comm, struct pg_group *lg, const int *remote, int rn,
                      int tag, bool *low, struct pg_group **u)
{
    int n = lg->size + rn;
    int *all = malloc(sizeof(int) * (size_t)n);
    int rc;

    if (!all) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for %d ranks", n);
    }
    *low = min_of(lg->ranks, lg->size) < min_of(remote, rn);
    memcpy(all + (*low ? 0 : rn), lg->ranks, sizeof(int) * (size_t)lg->size);
    memcpy(all + (*low ? lg->size : 0), remote, sizeof(int) * (size_t)rn);
    /* World ranks are the world group's ranks; only the members of both sides take part. */
    rc = pg_group_create_sub(pg_world_group(), all, n, tag, u);
    free(all);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, rc);
}

#pragma weak MPI_Intercomm_create = PMPI_Intercomm_create
int PMPI_Intercomm_create(MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                          int remote_leader, int tag, MPI_Comm *newintercomm)
{
    struct shim_comm *c;
    struct pg_group *u = NULL;
    char cause[200] = "";
    int head[2] = {MPI_SUCCESS, 0}, *remote = NULL, both = -1;
    bool low = false;
    int rc = shim_comm_enter(SHIM_FN, local_comm, &c);

    *newintercomm = MPI_COMM_NULL;
    if (rc == MPI_SUCCESS && c->inter) {
        rc = shim_error(local_comm, SHIM_FN, MPI_ERR_COMM,
                        "local_comm is an intercommunicator (an intracommunicator is needed)");
    } else if (rc == MPI_SUCCESS && (local_leader < 0 || local_leader >= c->g->size)) {
        rc = shim_error(local_comm, SHIM_FN, MPI_ERR_RANK,
                        "local_leader %d is not in local_comm (size %d)", local_leader, c->g->size);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (c->g->rank == local_leader) {
        head[0] = leader_swap(peer_comm, remote_leader, tag, c->g->ranks, c->g->size, &remote,
                              &head[1], cause, sizeof(cause));
    }
    /* The leader shares a failure too, so that no member of the local group waits. */
    rc = share_remote(c->g, local_leader, head, &remote);
    if (rc != PGC_OK) {
        rc = shim_error_pg(local_comm, SHIM_FN, rc);
    } else if (head[0] != MPI_SUCCESS) {
        rc = shim_error(local_comm, SHIM_FN, head[0], "%s",
                        *cause ? cause
                               : "the local leader's exchange with the remote leader "
                                 "failed");
    } else if (head[1] < 1) {
        rc = shim_error(local_comm, SHIM_FN, MPI_ERR_INTERN,
                        "the remote leader sent a group of %d processes", head[1]);
    } else if (overlap(c->g->ranks, c->g->size, remote, head[1], &both)) {
        rc = shim_error(local_comm, SHIM_FN, MPI_ERR_ARG,
                        "the local and remote groups overlap (world rank %d is in both)", both);
    } else {
        rc = make_union(SHIM_FN, local_comm, c->g, remote, head[1], tag, &low, &u);
    }
    if (rc == MPI_SUCCESS) {
        rc = inter_build(SHIM_FN, local_comm, c->errh, u, low, c->g->rank, remote, head[1],
                         newintercomm);
    }
    free(remote);
    return rc;
}

/* The state of an intercommunicator argument; MPI_ERR_COMM raised for anything else. */
static int inter_enter(const char *fn, MPI_Comm comm, struct shim_comm **c)
{
    int rc = shim_comm_enter(fn, comm, c);

    if (rc == MPI_SUCCESS && !(*c)->inter) {
        rc = shim_error(comm, fn, MPI_ERR_COMM, "not an intercommunicator");
    }
    return rc;
}

static struct pg_group *group_of(MPI_Comm h)
{
    struct shim_comm *c;

    return shim_comm_get(h, &c) == MPI_SUCCESS ? c->g : NULL;
}

int shim_inter_dup(const char *fn, MPI_Comm comm, struct shim_comm *c, MPI_Comm *newcomm)
{
    struct pg_group *u = NULL;
    int rc = pg_group_dup(group_of(c->inter->uni), &u);

    *newcomm = MPI_COMM_NULL;
    if (rc != PGC_OK) {
        return shim_error_pg(comm, fn, rc);
    }
    return inter_build(fn, comm, c->errh, u, c->inter->low, c->g->rank, c->g->ranks, c->g->size,
                       newcomm);
}

int shim_inter_parts(const struct shim_comm *c, struct pg_group **parts)
{
    parts[0] = group_of(c->inter->uni);
    parts[1] = group_of(c->inter->local);
    parts[2] = c->g;
    return parts[0] && parts[1] ? 3 : 0;
}

int shim_inter_adopt(const char *fn, MPI_Comm comm, struct shim_comm *c, struct pg_group **parts,
                     MPI_Comm *newcomm)
{
    return inter_assemble(fn, comm, c->errh, parts[0], parts[1], parts[2], c->inter->low,
                          c->inter->rsize, newcomm);
}

struct member {
    int key, rank;
};

static int member_cmp(const void *a, const void *b)
{
    const struct member *x = a, *y = b;

    if (x->key != y->key) {
        return x->key < y->key ? -1 : 1;
    }
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* The remote members of color, ordered by (key, remote rank), as their side orders itself:
 * their world ranks into out; returns how many. all: (color, key) of every union rank. */
static int remote_members(const struct shim_comm *c, const int *all, int color, int *out)
{
    struct shim_inter *in = c->inter;
    struct member *m = malloc(sizeof(*m) * (size_t)in->rsize);
    int n = 0;

    if (!m) {
        return -1;
    }
    for (int r = 0; r < in->rsize; r++) {
        if (color != MPI_UNDEFINED && all[2 * (in->roff + r)] == color) {
            m[n++] = (struct member){all[2 * (in->roff + r) + 1], r};
        }
    }
    qsort(m, (size_t)n, sizeof(*m), member_cmp);
    for (int i = 0; i < n; i++) {
        out[i] = c->g->ranks[m[i].rank];
    }
    free(m);
    return n;
}

int shim_inter_split(const char *fn, MPI_Comm comm, struct shim_comm *c, int color, int key,
                     MPI_Comm *newcomm)
{
    struct shim_inter *in = c->inter;
    struct pg_group *ug = group_of(in->uni), *u = NULL;
    int mine[2] = {color, key};
    int *all = malloc(sizeof(int) * 2 * (size_t)ug->size);
    int *remote = malloc(sizeof(int) * (size_t)in->rsize);
    int rn = 0, rc = all && remote ? MPI_SUCCESS : MPI_ERR_NO_MEM;

    *newcomm = MPI_COMM_NULL;
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, in->uni);
    }
    if (rc == MPI_SUCCESS) {
        rn = remote_members(c, all, color, remote);
        rc = rn < 0 ? MPI_ERR_NO_MEM : MPI_SUCCESS;
    }
    /* A color with no member on the other side makes no communicator on either side. */
    if (rc == MPI_SUCCESS) {
        rc = pg_group_split(ug, rn > 0 ? color : -1, ug->rank, &u);
        rc = rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, rc);
    } else {
        rc = shim_error(comm, fn, rc, "the exchange of colors and keys failed");
    }
    if (rc == MPI_SUCCESS && u) {
        rc = inter_build(fn, comm, c->errh, u, in->low, key, remote, rn, newcomm);
    }
    free(all);
    free(remote);
    return rc;
}

int shim_inter_create(const char *fn, MPI_Comm comm, struct shim_comm *c, MPI_Group group,
                      MPI_Comm *newcomm)
{
    struct shim_group *grp;
    struct pg_group *lg = group_of(c->inter->local);
    int pos = -1;

    *newcomm = MPI_COMM_NULL;
    if (shim_group_get(group, &grp) != MPI_SUCCESS) {
        return shim_error(comm, fn, MPI_ERR_GROUP, "invalid group 0x%x", (unsigned)group);
    }
    for (int i = 0; i < grp->size; i++) {
        if (pg_group_rank_of(lg, grp->ranks[i]) < 0) {
            return shim_error(comm, fn, MPI_ERR_GROUP,
                              "group member %d (world rank %d) is not in the local group", i,
                              grp->ranks[i]);
        }
        pos = grp->ranks[i] == lg->ranks[lg->rank] ? i : pos;
    }
    /* The same as a split: members in the group's order, the others out. */
    return shim_inter_split(fn, comm, c, pos >= 0 ? 0 : MPI_UNDEFINED, pos, newcomm);
}

/* Both leaders' high flags: every rank learns the remote side's. */
static int swap_high(struct shim_comm *c, int high, int *rhigh)
{
    struct shim_inter *in = c->inter;
    int rc = MPI_SUCCESS;

    if (c->g->rank == 0) {
        rc = PMPI_Sendrecv(&high, 1, MPI_INT, in->roff, MERGE_TAG, rhigh, 1, MPI_INT, in->roff,
                           MERGE_TAG, in->uni, MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Bcast(rhigh, 1, MPI_INT, 0, in->local);
    }
    return rc;
}

#pragma weak MPI_Intercomm_merge = PMPI_Intercomm_merge
int PMPI_Intercomm_merge(MPI_Comm intercomm, int high, MPI_Comm *newintracomm)
{
    struct shim_comm *c;
    struct pg_group *g = NULL;
    int *order = NULL;
    int rhigh = 0, n = 0, rc = inter_enter(SHIM_FN, intercomm, &c);
    bool first;

    *newintracomm = MPI_COMM_NULL;
    if (rc == MPI_SUCCESS) {
        high = high != 0;
        rc = swap_high(c, high, &rhigh);
        rc = rc == MPI_SUCCESS ? rc
                               : shim_error(intercomm, SHIM_FN, rc,
                                            "the leaders' exchange "
                                            "of the high flags failed");
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* The side with high false comes first; with equal flags, the union's order holds. */
    first = high != rhigh ? !high : c->inter->low;
    n = c->inter->lsize + c->inter->rsize;
    order = malloc(sizeof(int) * (size_t)n);
    if (!order) {
        return shim_error(intercomm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for %d ranks", n);
    }
    for (int i = 0; i < c->inter->lsize; i++) {
        order[(first ? 0 : c->inter->rsize) + i] = c->inter->loff + i;
    }
    for (int i = 0; i < c->inter->rsize; i++) {
        order[(first ? c->inter->lsize : 0) + i] = c->inter->roff + i;
    }
    rc = pg_group_create(group_of(c->inter->uni), order, n, &g);
    free(order);
    if (rc != PGC_OK) {
        return shim_error_pg(intercomm, SHIM_FN, rc);
    }
    return shim_comm_wrap(SHIM_FN, c, intercomm, g, newintracomm);
}

#pragma weak MPI_Comm_test_inter = PMPI_Comm_test_inter
int PMPI_Comm_test_inter(MPI_Comm comm, int *flag)
{
    struct shim_comm *c;
    int rc = shim_comm_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS) {
        *flag = c->inter != NULL;
    }
    return rc;
}

#pragma weak MPI_Comm_remote_size = PMPI_Comm_remote_size
int PMPI_Comm_remote_size(MPI_Comm comm, int *size)
{
    struct shim_comm *c;
    int rc = inter_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS) {
        *size = c->inter->rsize;
    }
    return rc;
}

#pragma weak MPI_Comm_remote_group = PMPI_Comm_remote_group
int PMPI_Comm_remote_group(MPI_Comm comm, MPI_Group *group)
{
    struct shim_comm *c;
    int rc = inter_enter(SHIM_FN, comm, &c);

    if (rc == MPI_SUCCESS && shim_group_make(c->g->ranks, c->g->size, group) != MPI_SUCCESS) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a group of %d", c->g->size);
    }
    return rc;
}
