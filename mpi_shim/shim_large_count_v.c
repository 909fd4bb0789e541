/*
 * shim_large_count_v.c - the MPI-4.0 large-count collectives with count and displacement
 * arrays (MPI_Allgatherv_c, MPI_Alltoallv_c, MPI_Gatherv_c, MPI_Scatterv_c,
 * MPI_Reduce_scatter_c), which tools/gen_large_count.py cannot map argument by argument.
 *
 * Each copies its MPI_Count counts and MPI_Aint displacements into int arrays, checking that
 * every value fits (MPI_ERR_COUNT naming the argument, the index and the value otherwise),
 * calls the int version and frees the copies. The int versions are blocking and keep no
 * pointer to the arrays after they return, so the copies may go at once; the nonblocking
 * variants (MPI_Ialltoallv_c, ...) would need them until completion and are not here (the
 * MPICH ABI stubs refuse them).
 *
 * An array is as long as the group it describes: the communicator's size, or for an
 * intercommunicator the remote group's (the local one's for MPI_Reduce_scatter_c). Arrays
 * that MPI says are significant only at the root are read only there, and a send side that
 * MPI_IN_PLACE replaces is not read.
 */
#include "config.h"

#include "shim.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#define NARRAYS 4

static int too_large(MPI_Comm comm, const char *fn, const char *arg, long long v)
{
    return shim_error(comm, fn, MPI_ERR_COUNT,
                      "%s = %lld does not fit in an int (mpishim's large-count calls take values "
                      "up to INT_MAX)",
                      arg, v);
}

/* *n = the length of the call's arrays: the remote group's size on an intercommunicator
 * when remote is true, else the (local) group's. */
static int array_len(MPI_Comm comm, bool remote, int *n)
{
    int inter = 0;
    int rc = PMPI_Comm_test_inter(comm, &inter);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return inter && remote ? PMPI_Comm_remote_size(comm, n) : PMPI_Comm_size(comm, n);
}

/* Whether this rank is the root of a rooted collective (intercommunicator: MPI_ROOT). */
static int is_root(MPI_Comm comm, int root, bool *yes)
{
    int inter = 0, rank = -1;
    int rc = PMPI_Comm_test_inter(comm, &inter);

    if (rc == MPI_SUCCESS && !inter) {
        rc = PMPI_Comm_rank(comm, &rank);
    }
    *yes = inter ? root == MPI_ROOT : rank == root;
    return rc;
}

/* *out = an int copy of the n values at in (MPI_Aint values when aint, else MPI_Count), or
 * NULL when in is NULL; the caller frees it. */
static int narrow(MPI_Comm comm, const char *fn, const char *arg, const void *in, bool aint,
                  int n, int **out)
{
    char name[64];
    int *v;

    *out = NULL;
    if (in == NULL) {
        return MPI_SUCCESS;
    }
    v = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (v == NULL) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a copy of %d %s", n, arg);
    }
    for (int i = 0; i < n; i++) {
        long long x = aint ? (long long)((const MPI_Aint *)in)[i] : ((const MPI_Count *)in)[i];
        if (x < INT_MIN || x > INT_MAX) {
            free(v);
            snprintf(name, sizeof(name), "%s[%d]", arg, i);
            return too_large(comm, fn, name, x);
        }
        v[i] = (int)x;
    }
    *out = v;
    return MPI_SUCCESS;
}

static void release(int *v[NARRAYS])
{
    for (int i = 0; i < NARRAYS; i++) {
        free(v[i]);
    }
}

#pragma weak MPI_Allgatherv_c = PMPI_Allgatherv_c
int PMPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                      MPI_Datatype recvtype, MPI_Comm comm)
{
    int *v[NARRAYS] = {NULL, NULL, NULL, NULL};
    int n = 0, rc;

    if (sendbuf != MPI_IN_PLACE && (sendcount < INT_MIN || sendcount > INT_MAX)) {
        return too_large(comm, SHIM_FN, "sendcount", sendcount);
    }
    rc = array_len(comm, true, &n);
    if (rc == MPI_SUCCESS) {
        rc = narrow(comm, SHIM_FN, "recvcounts", recvcounts, false, n, &v[0]);
    }
    if (rc == MPI_SUCCESS) {
        rc = narrow(comm, SHIM_FN, "displs", displs, true, n, &v[1]);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Allgatherv(sendbuf, sendbuf == MPI_IN_PLACE ? 0 : (int)sendcount, sendtype,
                             recvbuf, v[0], v[1], recvtype, comm);
    }
    release(v);
    return rc;
}

#pragma weak MPI_Alltoallv_c = PMPI_Alltoallv_c
int PMPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                     MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                     const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    int *v[NARRAYS] = {NULL, NULL, NULL, NULL};
    bool in_place = sendbuf == MPI_IN_PLACE;
    int n = 0, rc;

    rc = array_len(comm, true, &n);
    if (rc == MPI_SUCCESS) {
        rc = narrow(comm, SHIM_FN, "recvcounts", recvcounts, false, n, &v[0]);
    }
    if (rc == MPI_SUCCESS) {
        rc = narrow(comm, SHIM_FN, "rdispls", rdispls, true, n, &v[1]);
    }
    if (rc == MPI_SUCCESS && !in_place) {
        rc = narrow(comm, SHIM_FN, "sendcounts", sendcounts, false, n, &v[2]);
    }
    if (rc == MPI_SUCCESS && !in_place) {
        rc = narrow(comm, SHIM_FN, "sdispls", sdispls, true, n, &v[3]);
    }
    /* In place, the send arrays are ignored: the receive ones stand in for them. */
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Alltoallv(sendbuf, in_place ? v[0] : v[2], in_place ? v[1] : v[3], sendtype,
                            recvbuf, v[0], v[1], recvtype, comm);
    }
    release(v);
    return rc;
}

#pragma weak MPI_Gatherv_c = PMPI_Gatherv_c
int PMPI_Gatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                   int root, MPI_Comm comm)
{
    int *v[NARRAYS] = {NULL, NULL, NULL, NULL};
    bool at_root = false;
    int n = 0, rc;

    if (sendcount < INT_MIN || sendcount > INT_MAX) {
        return too_large(comm, SHIM_FN, "sendcount", sendcount);
    }
    rc = is_root(comm, root, &at_root);
    if (rc == MPI_SUCCESS && at_root) {
        rc = array_len(comm, true, &n);
    }
    if (rc == MPI_SUCCESS && at_root) {
        rc = narrow(comm, SHIM_FN, "recvcounts", recvcounts, false, n, &v[0]);
    }
    if (rc == MPI_SUCCESS && at_root) {
        rc = narrow(comm, SHIM_FN, "displs", displs, true, n, &v[1]);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Gatherv(sendbuf, (int)sendcount, sendtype, recvbuf, v[0], v[1], recvtype, root,
                          comm);
    }
    release(v);
    return rc;
}

#pragma weak MPI_Scatterv_c = PMPI_Scatterv_c
int PMPI_Scatterv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                    MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    int *v[NARRAYS] = {NULL, NULL, NULL, NULL};
    bool at_root = false;
    int n = 0, rc;

    if (recvcount < INT_MIN || recvcount > INT_MAX) {
        return too_large(comm, SHIM_FN, "recvcount", recvcount);
    }
    rc = is_root(comm, root, &at_root);
    if (rc == MPI_SUCCESS && at_root) {
        rc = array_len(comm, true, &n);
    }
    if (rc == MPI_SUCCESS && at_root) {
        rc = narrow(comm, SHIM_FN, "sendcounts", sendcounts, false, n, &v[0]);
    }
    if (rc == MPI_SUCCESS && at_root) {
        rc = narrow(comm, SHIM_FN, "displs", displs, true, n, &v[1]);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Scatterv(sendbuf, v[0], v[1], sendtype, recvbuf, (int)recvcount, recvtype, root,
                           comm);
    }
    release(v);
    return rc;
}

#pragma weak MPI_Reduce_scatter_c = PMPI_Reduce_scatter_c
int PMPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf, const MPI_Count recvcounts[],
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    int *v[NARRAYS] = {NULL, NULL, NULL, NULL};
    int n = 0, rc;

    rc = array_len(comm, false, &n);
    if (rc == MPI_SUCCESS) {
        rc = narrow(comm, SHIM_FN, "recvcounts", recvcounts, false, n, &v[0]);
    }
    if (rc == MPI_SUCCESS) {
        rc = PMPI_Reduce_scatter(sendbuf, recvbuf, v[0], datatype, op, comm);
    }
    release(v);
    return rc;
}
