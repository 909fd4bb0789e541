/*
 * shim_topo.h - process topologies attached to communicators (Cartesian, graph and
 * distributed graph), as the neighbourhood collectives see them.
 *
 * A struct shim_topo is ONE allocation (the arrays live in its trailing data[]), owned by
 * its communicator: shim_comm_remove frees it with free(). A communicator made by
 * MPI_Comm_dup keeps the topology of its parent (shim_topo_dup).
 */
#ifndef SHIM_TOPO_H
#define SHIM_TOPO_H

#include "shim_comm.h"

struct shim_topo {
    int kind; /* MPI_CART, MPI_GRAPH or MPI_DIST_GRAPH */
    /* Cartesian */
    int ndims;
    int *dims, *periods, *coords;
    /* graph (MPI_Graph_create) */
    int nnodes, nedges;
    int *index, *edges;
    /* distributed graph: this rank's in- and out-neighbours and their weights */
    int indeg, outdeg;
    bool weighted;
    int *in, *inw, *out, *outw;
    int data[];
};

/* A copy of t (NULL: no topology or no memory; the caller cannot tell, so it checks t). */
struct shim_topo *shim_topo_dup(const struct shim_topo *t);

/* Copies old's topology onto the communicator new (MPI_Comm_dup keeps the topology).
 * MPI_SUCCESS or MPI_ERR_NO_MEM (not raised). */
int shim_topo_copy(MPI_Comm oldcomm, MPI_Comm newcomm);

/* This rank's in- and out-neighbours in the order of MPI-3.1 section 7.6 (Cartesian: per
 * dimension the -1 then the +1 neighbour, MPI_PROC_NULL at open edges), in two arrays the
 * caller frees. MPI_SUCCESS, MPI_ERR_TOPOLOGY (no topology) or MPI_ERR_NO_MEM, not
 * raised. */
int shim_topo_neighbors(const struct shim_comm *c, int *nin, int **in, int *nout, int **out);

#endif
