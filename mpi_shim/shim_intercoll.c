/*
 * shim_intercoll.c - the collectives on an intercommunicator (MPI-3.1 5.2.2): the data of
 * one side goes to the other.
 *
 * Each is built from intracommunicator calls on the two hidden communicators of
 * shim_inter.h, so that every rank of a side takes the same path:
 * - reductions: a reduce within the sending side to its leader (local rank 0), the leaders'
 *   exchange over the union, then a broadcast or scatter within the receiving side;
 * - rooted data movement and the all-to-all forms: direct transfers between the ranks that
 *   hold the data and those that want it, posted at once and waited together (a linear
 *   algorithm: L x R messages for the all- forms, where L and R are the side sizes);
 * - a broadcast: the root sends to the remote leader, which broadcasts within its side;
 * - a barrier: a barrier over the union.
 * The non-blocking forms run the same steps before they return, and hand back a complete
 * request (doc/mpi-semantics.md says what that means for a program).
 */
#include "config.h"

#include "pgc_status.h"
#include "shim_inter.h"
#include "shim_req.h"

#include <stdint.h>
#include <stdlib.h>

/* Tags on the hidden union, one per kind, so that the steps of different collectives
 * between two ranks never pair up (each collective's own messages keep their order). */
enum {
    TAG_BCAST = 10,
    TAG_REDUCE,
    TAG_ALLREDUCE,
    TAG_GATHER,
    TAG_SCATTER,
    TAG_ALLGATHER,
    TAG_ALLTOALL,
    TAG_RSCATTER
};

/* What a rank does in a rooted collective. */
enum role {
    ROLE_ROOT,  /* MPI_ROOT: I am the root */
    ROLE_IDLE,  /* MPI_PROC_NULL: the root is on my side, and not me */
    ROLE_REMOTE /* a rank: the root is that rank of the other side */
};

static int enter(const char *fn, MPI_Comm comm, struct shim_comm **c)
{
    int rc = shim_comm_enter(fn, comm, c);

    if (rc == MPI_SUCCESS && !(*c)->inter) {
        rc = shim_error(comm, fn, MPI_ERR_COMM, "not an intercommunicator");
    }
    return rc;
}

static int role_of(const char *fn, MPI_Comm comm, struct shim_comm *c, int root, enum role *role)
{
    if (root == MPI_ROOT) {
        *role = ROLE_ROOT;
    } else if (root == MPI_PROC_NULL) {
        *role = ROLE_IDLE;
    } else if (root >= 0 && root < c->inter->rsize) {
        *role = ROLE_REMOTE;
    } else {
        return shim_error(comm, fn, MPI_ERR_ROOT,
                          "root %d is neither MPI_ROOT, MPI_PROC_NULL nor a rank of the remote "
                          "group (size %d)",
                          root, c->inter->rsize);
    }
    return MPI_SUCCESS;
}

static int no_in_place(const char *fn, MPI_Comm comm, const void *buf)
{
    if (buf == MPI_IN_PLACE) {
        return shim_error(comm, fn, MPI_ERR_BUFFER,
                          "MPI_IN_PLACE is not defined on an intercommunicator");
    }
    return MPI_SUCCESS;
}

/* The end of every call: a failed step raised on comm; a complete request for the
 * non-blocking forms. */
static int finish(const char *fn, MPI_Comm comm, int rc, const char *step, MPI_Request *request)
{
    char what[MPI_MAX_ERROR_STRING];
    int len = 0;

    if (rc != MPI_SUCCESS) {
        if (PMPI_Error_string(rc, what, &len) != MPI_SUCCESS) {
            what[0] = '\0';
        }
        return shim_error(comm, fn, rc, "%s failed: %s", step, what);
    }
    return request ? shim_req_done(comm, fn, request) : MPI_SUCCESS;
}

/* A buffer for count elements of dt: *base is what to free, *buf what to pass to MPI. */
static int tmp_alloc(int count, MPI_Datatype dt, void **base, void **buf)
{
    MPI_Aint lb, extent, tlb, textent;
    size_t bytes = 1;

    *base = NULL;
    if (PMPI_Type_get_extent(dt, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent(dt, &tlb, &textent) != MPI_SUCCESS) {
        return MPI_ERR_TYPE;
    }
    if (count > 0) {
        bytes += (size_t)textent + (size_t)(count - 1) * (size_t)(extent < 0 ? -extent : extent);
    }
    *base = malloc(bytes);
    *buf = (char *)*base - tlb;
    return *base ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

static MPI_Aint extent_of(MPI_Datatype dt)
{
    MPI_Aint lb, extent = 0;

    PMPI_Type_get_extent(dt, &lb, &extent);
    return extent;
}

int shim_inter_barrier(const char *fn, MPI_Comm comm, MPI_Request *request)
{
    struct shim_comm *c;
    int rc = enter(fn, comm, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return finish(fn, comm, PMPI_Barrier(c->inter->uni), "the barrier over both groups", request);
}

int shim_inter_bcast(const char *fn, void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                     MPI_Request *request)
{
    struct shim_comm *c;
    enum role role = ROLE_IDLE;
    int rc = enter(fn, comm, &c);

    if (rc == MPI_SUCCESS) {
        rc = role_of(fn, comm, c, root, &role);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (role == ROLE_ROOT) {
        rc = PMPI_Send(buf, count, dt, c->inter->roff, TAG_BCAST, c->inter->uni);
    } else if (role == ROLE_REMOTE) {
        if (c->g->rank == 0) {
            rc = PMPI_Recv(buf, count, dt, c->inter->roff + root, TAG_BCAST, c->inter->uni,
                           MPI_STATUS_IGNORE);
        }
        if (rc == MPI_SUCCESS) {
            rc = PMPI_Bcast(buf, count, dt, 0, c->inter->local);
        }
    }
    return finish(fn, comm, rc, "a step of the broadcast", request);
}

/* The sending side's reduce to its leader, whose base and tmp hold the result. */
static int reduce_local(struct shim_comm *c, const void *sendbuf, int count, MPI_Datatype dt,
                        MPI_Op op, void **base, void **tmp)
{
    int rc = MPI_SUCCESS;

    *base = *tmp = NULL;
    if (c->g->rank == 0) {
        rc = tmp_alloc(count, dt, base, tmp);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Reduce(sendbuf, *tmp, count, dt, op, 0, c->inter->local);
    }
    return rc;
}

int shim_inter_reduce(const char *fn, const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request)
{
    struct shim_comm *c;
    enum role role = ROLE_IDLE;
    void *base = NULL, *tmp;
    int rc = enter(fn, comm, &c);

    if (rc == MPI_SUCCESS) {
        rc = role_of(fn, comm, c, root, &role);
    }
    if (rc == MPI_SUCCESS && role == ROLE_REMOTE) {
        rc = no_in_place(fn, comm, sendbuf);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (role == ROLE_ROOT) {
        rc = PMPI_Recv(recvbuf, count, dt, c->inter->roff, TAG_REDUCE, c->inter->uni,
                       MPI_STATUS_IGNORE);
    } else if (role == ROLE_REMOTE) {
        rc = reduce_local(c, sendbuf, count, dt, op, &base, &tmp);
        if (rc == MPI_SUCCESS && c->g->rank == 0) {
            rc = PMPI_Send(tmp, count, dt, c->inter->roff + root, TAG_REDUCE, c->inter->uni);
        }
    }
    free(base);
    return finish(fn, comm, rc, "a step of the reduction", request);
}

int shim_inter_allreduce(const char *fn, const void *sendbuf, void *recvbuf, int count,
                         MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    struct shim_comm *c;
    void *base = NULL, *tmp;
    int rc = enter(fn, comm, &c);

    if (rc == MPI_SUCCESS) {
        rc = no_in_place(fn, comm, sendbuf);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* My side's reduction goes to the other side, and theirs comes to mine. */
    rc = reduce_local(c, sendbuf, count, dt, op, &base, &tmp);
    if (rc == MPI_SUCCESS && c->g->rank == 0) {
        rc = PMPI_Sendrecv(tmp, count, dt, c->inter->roff, TAG_ALLREDUCE, recvbuf, count, dt,
                           c->inter->roff, TAG_ALLREDUCE, c->inter->uni, MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Bcast(recvbuf, count, dt, 0, c->inter->local);
    }
    free(base);
    return finish(fn, comm, rc, "a step of the reduction", request);
}

/* Waits for the n requests of reqs and frees the array. */
static int wait_all(MPI_Request *reqs, int n, int rc)
{
    int wrc = n > 0 ? PMPI_Waitall(n, reqs, MPI_STATUSES_IGNORE) : MPI_SUCCESS;

    free(reqs);
    return rc != MPI_SUCCESS ? rc : wrc;
}

/* Posts one receive or send per remote rank i of counts[i] (or count) elements of dt at
 * buf + displs[i] (or i * count) extents. recv: receives, else sends. *n counts those posted. */
static int post_each(struct shim_comm *c, bool recv, const void *buf, const int *counts,
                     const int *displs, int count, MPI_Datatype dt, int tag, MPI_Request *reqs,
                     int *n)
{
    MPI_Aint ext = extent_of(dt);
    int rc = MPI_SUCCESS;

    for (int i = 0; rc == MPI_SUCCESS && i < c->inter->rsize; i++) {
        int k = counts ? counts[i] : count;
        char *at = (char *)buf + (displs ? displs[i] : (MPI_Aint)i * count) * ext;
        int peer = c->inter->roff + i;
        rc = recv ? PMPI_Irecv(at, k, dt, peer, tag, c->inter->uni, &reqs[*n])
                  : PMPI_Isend(at, k, dt, peer, tag, c->inter->uni, &reqs[*n]);
        *n += rc == MPI_SUCCESS;
    }
    return rc;
}

int shim_inter_gatherv(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, const int *recvcounts, const int *displs, int recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request)
{
    struct shim_comm *c;
    enum role role = ROLE_IDLE;
    MPI_Request *reqs;
    int n = 0, rc = enter(fn, comm, &c);

    if (rc == MPI_SUCCESS) {
        rc = role_of(fn, comm, c, root, &role);
    }
    if (rc == MPI_SUCCESS && role == ROLE_REMOTE) {
        rc = no_in_place(fn, comm, sendbuf);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (role == ROLE_REMOTE) {
        rc = PMPI_Send(sendbuf, sendcount, sendtype, c->inter->roff + root, TAG_GATHER,
                       c->inter->uni);
    } else if (role == ROLE_ROOT) {
        reqs = malloc(sizeof(*reqs) * (size_t)c->inter->rsize);
        rc = reqs ? post_each(c, true, recvbuf, recvcounts, displs, recvcount, recvtype, TAG_GATHER,
                              reqs, &n)
                  : MPI_ERR_NO_MEM;
        rc = wait_all(reqs, n, rc);
    }
    return finish(fn, comm, rc, "a transfer of the gather", request);
}

int shim_inter_scatterv(const char *fn, const void *sendbuf, const int *sendcounts,
                        const int *displs, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                        MPI_Request *request)
{
    struct shim_comm *c;
    enum role role = ROLE_IDLE;
    MPI_Request *reqs;
    int n = 0, rc = enter(fn, comm, &c);

    if (rc == MPI_SUCCESS) {
        rc = role_of(fn, comm, c, root, &role);
    }
    if (rc == MPI_SUCCESS && role == ROLE_REMOTE) {
        rc = no_in_place(fn, comm, recvbuf);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (role == ROLE_REMOTE) {
        rc = PMPI_Recv(recvbuf, recvcount, recvtype, c->inter->roff + root, TAG_SCATTER,
                       c->inter->uni, MPI_STATUS_IGNORE);
    } else if (role == ROLE_ROOT) {
        reqs = malloc(sizeof(*reqs) * (size_t)c->inter->rsize);
        rc = reqs ? post_each(c, false, sendbuf, sendcounts, displs, sendcount, sendtype,
                              TAG_SCATTER, reqs, &n)
                  : MPI_ERR_NO_MEM;
        rc = wait_all(reqs, n, rc);
    }
    return finish(fn, comm, rc, "a transfer of the scatter", request);
}

int shim_inter_allgatherv(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const int *recvcounts, const int *displs, int recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    struct shim_comm *c;
    MPI_Request *reqs;
    int n = 0, rc = enter(fn, comm, &c);

    if (rc == MPI_SUCCESS) {
        rc = no_in_place(fn, comm, sendbuf);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* My block goes to every remote rank: the same buffer for each send. */
    reqs = malloc(sizeof(*reqs) * 2 * (size_t)c->inter->rsize);
    rc = reqs ? post_each(c, true, recvbuf, recvcounts, displs, recvcount, recvtype, TAG_ALLGATHER,
                          reqs, &n)
              : MPI_ERR_NO_MEM;
    for (int i = 0; rc == MPI_SUCCESS && i < c->inter->rsize; i++) {
        rc = PMPI_Isend(sendbuf, sendcount, sendtype, c->inter->roff + i, TAG_ALLGATHER,
                        c->inter->uni, &reqs[n]);
        n += rc == MPI_SUCCESS;
    }
    rc = wait_all(reqs, n, rc);
    return finish(fn, comm, rc, "a transfer of the allgather", request);
}

/* One side of an all-to-all: per remote rank, a count, a byte offset and a type. */
struct a2a_side {
    const int *counts, *displs;
    const MPI_Datatype *types; /* NULL: type for all, displs in its extents */
    int count;                 /* counts NULL: count for all, block i at i * count */
    MPI_Datatype type;
};

static void a2a_peer(const struct a2a_side *s, int i, int *count, MPI_Aint *off, MPI_Datatype *type)
{
    *type = s->types ? s->types[i] : s->type;
    *count = s->counts ? s->counts[i] : s->count;
    if (s->types) {
        *off = s->displs[i];
    } else {
        *off = (s->displs ? s->displs[i] : (MPI_Aint)i * s->count) * extent_of(s->type);
    }
}

static int a2a_post(struct shim_comm *c, const void *sendbuf, const struct a2a_side *snd,
                    void *recvbuf, const struct a2a_side *rcv, MPI_Request *reqs, int *n)
{
    int rc = MPI_SUCCESS;

    for (int i = 0; rc == MPI_SUCCESS && i < c->inter->rsize; i++) {
        MPI_Datatype t;
        MPI_Aint off;
        int k;
        a2a_peer(rcv, i, &k, &off, &t);
        rc = PMPI_Irecv((char *)recvbuf + off, k, t, c->inter->roff + i, TAG_ALLTOALL,
                        c->inter->uni, &reqs[(*n)++]);
        if (rc == MPI_SUCCESS) {
            a2a_peer(snd, i, &k, &off, &t);
            rc = PMPI_Isend((const char *)sendbuf + off, k, t, c->inter->roff + i, TAG_ALLTOALL,
                            c->inter->uni, &reqs[(*n)++]);
        }
        *n -= rc != MPI_SUCCESS;
    }
    return rc;
}

int shim_inter_alltoallw(const char *fn, const void *sendbuf, const int *sendcounts,
                         const int *sdispls, const MPI_Datatype *sendtypes, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
                         const int *rdispls, const MPI_Datatype *recvtypes, int recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    struct shim_comm *c;
    struct a2a_side snd = {sendcounts, sdispls, sendtypes, sendcount, sendtype};
    struct a2a_side rcv = {recvcounts, rdispls, recvtypes, recvcount, recvtype};
    MPI_Request *reqs;
    int n = 0, rc = enter(fn, comm, &c);

    if (rc == MPI_SUCCESS) {
        rc = no_in_place(fn, comm, sendbuf);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    reqs = malloc(sizeof(*reqs) * 2 * (size_t)c->inter->rsize);
    rc = reqs ? a2a_post(c, sendbuf, &snd, recvbuf, &rcv, reqs, &n) : MPI_ERR_NO_MEM;
    rc = wait_all(reqs, n, rc);
    return finish(fn, comm, rc, "a transfer of the all-to-all", request);
}

/* The leaders swap their sides' reductions of n elements after checking that both sides
 * agree on n; every rank of a side learns whether they did (*agree). */
static int swap_reduced(struct shim_comm *c, int n, MPI_Datatype dt, void *mine, void *theirs,
                        int *agree)
{
    int rn = -1, rc = MPI_SUCCESS;

    *agree = 1;
    if (c->g->rank == 0) {
        rc = PMPI_Sendrecv(&n, 1, MPI_INT, c->inter->roff, TAG_RSCATTER, &rn, 1, MPI_INT,
                           c->inter->roff, TAG_RSCATTER, c->inter->uni, MPI_STATUS_IGNORE);
        *agree = rn == n;
    }
    if (rc == MPI_SUCCESS && c->g->rank == 0 && *agree) {
        rc = PMPI_Sendrecv(mine, n, dt, c->inter->roff, TAG_RSCATTER, theirs, n, dt, c->inter->roff,
                           TAG_RSCATTER, c->inter->uni, MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Bcast(agree, 1, MPI_INT, 0, c->inter->local);
    }
    return rc;
}

/* The counts and displacements of the local scatter (recvcounts NULL: recvcount each). */
static int scatter_layout(struct shim_comm *c, const int *recvcounts, int recvcount, int **counts,
                          int **displs, int *total)
{
    int64_t sum = 0;

    *counts = malloc(sizeof(int) * (size_t)c->inter->lsize);
    *displs = malloc(sizeof(int) * (size_t)c->inter->lsize);
    if (!*counts || !*displs) {
        return MPI_ERR_NO_MEM;
    }
    for (int i = 0; i < c->inter->lsize; i++) {
        (*counts)[i] = recvcounts ? recvcounts[i] : recvcount;
        if ((*counts)[i] < 0 || sum + (*counts)[i] > INT32_MAX) {
            return MPI_ERR_COUNT;
        }
        (*displs)[i] = (int)sum;
        sum += (*counts)[i];
    }
    *total = (int)sum;
    return MPI_SUCCESS;
}

int shim_inter_reduce_scatter(const char *fn, const void *sendbuf, void *recvbuf,
                              const int *recvcounts, int recvcount, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request)
{
    struct shim_comm *c;
    void *base = NULL, *tmp, *base2 = NULL, *tmp2 = NULL;
    int *counts = NULL, *displs = NULL, n = 0, agree = 1;
    int rc = enter(fn, comm, &c);

    if (rc == MPI_SUCCESS) {
        rc = no_in_place(fn, comm, sendbuf);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Both sides' vectors have n elements: what my side keeps in all (MPICH's rule). */
    rc = scatter_layout(c, recvcounts, recvcount, &counts, &displs, &n);
    if (rc == MPI_SUCCESS) {
        rc = reduce_local(c, sendbuf, n, dt, op, &base, &tmp);
    }
    if (rc == MPI_SUCCESS && c->g->rank == 0) {
        rc = tmp_alloc(n, dt, &base2, &tmp2);
    }
    if (rc == MPI_SUCCESS) {
        rc = swap_reduced(c, n, dt, tmp, tmp2, &agree);
    }
    if (rc == MPI_SUCCESS && agree) {
        rc = PMPI_Scatterv(tmp2, counts, displs, dt, recvbuf, counts[c->g->rank], dt, 0,
                           c->inter->local);
    }
    free(base);
    free(base2);
    free(counts);
    free(displs);
    if (rc == MPI_SUCCESS && !agree) {
        return shim_error(comm, fn, MPI_ERR_COUNT,
                          "the two groups' vectors differ in length "
                          "(this group's receive counts add up to %d)",
                          n);
    }
    return finish(fn, comm, rc, "a step of the reduce-scatter", request);
}

int shim_inter_scan(const char *fn, MPI_Comm comm)
{
    return shim_error(comm, fn, MPI_ERR_COMM, "not defined on an intercommunicator");
}
