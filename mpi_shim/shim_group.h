/*
 * shim_group.h - MPI groups: an ordered set of processes, kept as the world ranks of the
 * members in group-rank order. Groups are local objects (no communication).
 */
#ifndef SHIM_GROUP_H
#define SHIM_GROUP_H

#include "shim.h"

struct shim_group {
    int size;
    int *ranks; /* group rank -> world rank (one allocation with the struct) */
};

/* MPI_SUCCESS and *out for a live group (MPI_GROUP_EMPTY included), or MPI_ERR_GROUP
 * (not raised: the caller raises it with its own name). */
int shim_group_get(MPI_Group h, struct shim_group **out);
/* A new handle for the n world ranks (copied); MPI_GROUP_EMPTY when n == 0. MPI_SUCCESS
 * or MPI_ERR_NO_MEM (not raised). */
int shim_group_make(const int *world_ranks, int n, MPI_Group *out);

/* MPI_IDENT (same members, same order), MPI_SIMILAR (same members) or MPI_UNEQUAL for two
 * lists of distinct world ranks. */
int shim_group_compare_lists(const int *a, int na, const int *b, int nb);

#endif
