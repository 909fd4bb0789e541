/*
 * prof_counter.c - a tiny profiling library of the kind MPI tools are: it defines some MPI_
 * functions, counts the calls, and forwards them to the PMPI_ names. Linked in front of
 * libmpishim (tests/mr/mr_pmpi) or preloaded (LD_PRELOAD=libprofcount.so), its MPI_
 * definitions must win over the library's weak ones, and the library must still work.
 */
#include <mpi.h>

long prof_counts[4]; /* MPI_Send, MPI_Isend, MPI_Allreduce, MPI_Barrier */

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    prof_counts[0]++;
    return PMPI_Send(buf, count, dt, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    prof_counts[1]++;
    return PMPI_Isend(buf, count, dt, dest, tag, comm, request);
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                  MPI_Comm comm)
{
    prof_counts[2]++;
    return PMPI_Allreduce(sendbuf, recvbuf, count, dt, op, comm);
}

int MPI_Barrier(MPI_Comm comm)
{
    prof_counts[3]++;
    return PMPI_Barrier(comm);
}
