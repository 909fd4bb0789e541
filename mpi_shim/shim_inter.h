/*
 * shim_inter.h - intercommunicators (MPI-3.1 6.6): two disjoint groups, where a rank names
 * a process of the other group.
 *
 * An intercommunicator's shim_comm holds, in g, the remote view (pg_group_remote_view):
 * point-to-point across runs on it unchanged. Beside it (struct shim_inter) live two
 * hidden intracommunicators with private contexts: my side alone ("local") and both sides
 * ("uni", the low side first, as MPI_Intercomm_merge orders them by default). The
 * collectives are built from intracommunicator calls on those two (shim_intercoll.c), so
 * their traffic never matches a user's.
 */
#ifndef SHIM_INTER_H
#define SHIM_INTER_H

#include "shim_comm.h"

struct shim_inter {
    MPI_Comm local; /* hidden: my side, in local-rank order */
    MPI_Comm uni;   /* hidden: both sides, the low side first */
    int lsize, rsize;
    int loff, roff; /* where my side and the remote side start in uni */
    bool low;       /* my side comes first in uni */
    bool counted;   /* counted in shim_inter_live (once its handle holds it) */
};

/* Frees the hidden communicators and the state (shim_comm_remove calls it). */
void shim_inter_free(struct shim_inter *in);

/* The communicator calls that differ on an intercommunicator; each raises its errors on
 * comm under the name fn. */
int shim_inter_dup(const char *fn, MPI_Comm comm, struct shim_comm *c, MPI_Comm *newcomm);
int shim_inter_split(const char *fn, MPI_Comm comm, struct shim_comm *c, int color, int key,
                     MPI_Comm *newcomm);
int shim_inter_create(const char *fn, MPI_Comm comm, struct shim_comm *c, MPI_Group group,
                      MPI_Comm *newcomm);
/* MPI_Comm_idup of an intercommunicator: its three groups (union, my side, remote view) into
 * parts, the union first, for pg_group_idup_start; how many (3, or 0 for a broken one).
 * shim_inter_adopt makes the new intercommunicator of the three duplicates (its references
 * pass to it), as shim_inter_dup would have, raising its errors on comm. */
int shim_inter_parts(const struct shim_comm *c, struct pg_group **parts);
int shim_inter_adopt(const char *fn, MPI_Comm comm, struct shim_comm *c, struct pg_group **parts,
                     MPI_Comm *newcomm);
/* The local group's world ranks, in local-rank order (owned by the state). */
const int *shim_inter_local_ranks(const struct shim_comm *c);

/*
 * The collectives on an intercommunicator (shim_intercoll.c), with MPI-3.1 5.2.2's
 * semantics: a rooted one's root is MPI_ROOT at the root, MPI_PROC_NULL at the other ranks
 * of its side, and the root's rank in the other side there. request NULL: the blocking
 * call; otherwise the call completes before it returns and *request is a complete request
 * (see doc/mpi-semantics.md). MPI_IN_PLACE is refused (MPI_ERR_BUFFER), as MPI defines it
 * on intracommunicators only.
 */
int shim_inter_barrier(const char *fn, MPI_Comm comm, MPI_Request *request);
int shim_inter_bcast(const char *fn, void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm,
                     MPI_Request *request);
int shim_inter_reduce(const char *fn, const void *sendbuf, void *recvbuf, int count,
                      MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm, MPI_Request *request);
int shim_inter_allreduce(const char *fn, const void *sendbuf, void *recvbuf, int count,
                         MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *request);
int shim_inter_gatherv(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                       void *recvbuf, const int *recvcounts, const int *displs, int recvcount,
                       MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request);
int shim_inter_scatterv(const char *fn, const void *sendbuf, const int *sendcounts,
                        const int *displs, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                        int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                        MPI_Request *request);
int shim_inter_allgatherv(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                          void *recvbuf, const int *recvcounts, const int *displs, int recvcount,
                          MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
/* Alltoall (counts NULL: sendcount/recvcount for every peer), alltoallv (types NULL) and
 * alltoallw (displacements in bytes). */
int shim_inter_alltoallw(const char *fn, const void *sendbuf, const int *sendcounts,
                         const int *sdispls, const MPI_Datatype *sendtypes, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, const int *recvcounts,
                         const int *rdispls, const MPI_Datatype *recvtypes, int recvcount,
                         MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request);
/* Reduce_scatter (recvcounts) and reduce_scatter_block (recvcounts NULL: recvcount). */
int shim_inter_reduce_scatter(const char *fn, const void *sendbuf, void *recvbuf,
                              const int *recvcounts, int recvcount, MPI_Datatype dt, MPI_Op op,
                              MPI_Comm comm, MPI_Request *request);
/* Scan and exscan: not defined on an intercommunicator (MPI_ERR_COMM). */
int shim_inter_scan(const char *fn, MPI_Comm comm);

#endif
