/*
 * shim_libmpi.c - the whole of libmpi.so.12, mpishim under the MPICH ABI's library name
 * (installed in $(libdir)/mpich-abi with libmpich.so.12 beside it; see lib.include).
 *
 * It holds no MPI code: it depends on libmpishim.so.0, and the dynamic loader finds a
 * program's MPI_ symbols there (the lookup covers every library loaded, dependencies of
 * dependencies included). So a process that loads both names (an MPICH-built program with a
 * library built by our mpicc) has one copy of the library's state, not two.
 */
#include "config.h"

#include "mpi.h"

/* A reference to libmpishim, so that a linker run with --as-needed keeps the dependency. */
__attribute__((used)) static int (*const shim_libmpi_needs)(int *, char ***) = PMPI_Init;
