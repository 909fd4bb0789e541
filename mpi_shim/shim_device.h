/*
 * shim_device.h - MPI collectives on CUDA device buffers (CUDA-aware MPI), dispatched to
 * pg_core's device backend (pg_device.h) before the host path of an entry point runs.
 *
 * Each shim_dev_try_* is called first thing in the matching PMPI entry point:
 *
 *     int rc;
 *     if (shim_dev_try_allreduce(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, NULL, &rc)) {
 *         return rc;
 *     }
 *
 * (request NULL: the blocking call; the non-blocking one passes its MPI_Request *.) It
 * returns false, having checked and raised nothing, when the call is not a device call
 * (no GPU: one branch; host buffers; arguments the host path will reject anyway): the
 * entry point goes on as before. It returns true when it handled the call; *rc is then the
 * MPI result, and errors were raised through comm's handler as fn. Device buffers with a
 * non-contiguous datatype give MPI_ERR_TYPE; a freed or foreign pointer MPI_ERR_BUFFER.
 * MPI_IN_PLACE is accepted where MPI allows it.
 */
#ifndef SHIM_DEVICE_H
#define SHIM_DEVICE_H

#include "mpi.h"
#include "pg_device.h"

#include <stdbool.h>

/* For calls without a device path: MPI_ERR_BUFFER (raised through comm's handler as fn)
 * when buf is CUDA device memory, which their CPU code would read, or no live memory at
 * all; MPI_SUCCESS for host, pinned and managed memory. Without a GPU: one branch. */
int shim_dev_host_only(const char *fn, MPI_Comm comm, const void *buf, const char *what);

/* The small collectives' fast paths ask pg_dev_present inline: without a GPU the call
 * costs one load and a branch, not a call with ten arguments. */
bool shim_dev_try_allreduce_slow(const char *fn, const void *sendbuf, void *recvbuf, int count,
                                 MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *request,
                                 int *rc);
bool shim_dev_try_reduce_slow(const char *fn, const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
                              MPI_Request *request, int *rc);
bool shim_dev_try_bcast_slow(const char *fn, void *buf, int count, MPI_Datatype dt, int root,
                             MPI_Comm comm, MPI_Request *request, int *rc);

static inline bool shim_dev_try_allreduce(const char *fn, const void *sendbuf, void *recvbuf,
                                          int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
                                          MPI_Request *request, int *rc)
{
    return pg_dev_present() &&
           shim_dev_try_allreduce_slow(fn, sendbuf, recvbuf, count, dt, op, comm, request, rc);
}

static inline bool shim_dev_try_reduce(const char *fn, const void *sendbuf, void *recvbuf,
                                       int count, MPI_Datatype dt, MPI_Op op, int root,
                                       MPI_Comm comm, MPI_Request *request, int *rc)
{
    return pg_dev_present() &&
           shim_dev_try_reduce_slow(fn, sendbuf, recvbuf, count, dt, op, root, comm, request, rc);
}

static inline bool shim_dev_try_bcast(const char *fn, void *buf, int count, MPI_Datatype dt,
                                      int root, MPI_Comm comm, MPI_Request *request, int *rc)
{
    return pg_dev_present() && shim_dev_try_bcast_slow(fn, buf, count, dt, root, comm, request, rc);
}
bool shim_dev_try_allgather(const char *fn, const void *sendbuf, int sendcount,
                            MPI_Datatype sendtype, void *recvbuf, int recvcount,
                            MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, int *rc);
bool shim_dev_try_alltoall(const char *fn, const void *sendbuf, int sendcount,
                           MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request, int *rc);
bool shim_dev_try_gather(const char *fn, const void *sendbuf, int sendcount,
                         MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request,
                         int *rc);
bool shim_dev_try_scatter(const char *fn, const void *sendbuf, int sendcount,
                          MPI_Datatype sendtype, void *recvbuf, int recvcount,
                          MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request,
                          int *rc);
bool shim_dev_try_reduce_scatter_block(const char *fn, const void *sendbuf, void *recvbuf,
                                       int recvcount, MPI_Datatype dt, MPI_Op op,
                                       MPI_Comm comm, MPI_Request *request, int *rc);

#endif
