/*
 * shim_group.c - MPI groups (see shim_group.h): construction from communicators, the set
 * operations, rank translation and comparison. MPI_GROUP_EMPTY is a builtin empty group;
 * every empty result is returned as MPI_GROUP_EMPTY, as MPICH does, and freeing it is
 * allowed (it only resets the handle). Errors are raised on MPI_COMM_WORLD (groups have no
 * communicator).
 */
#include "config.h"

#include "mps_log.h"
#include "pgc_status.h"
#include "shim_comm.h"
#include "shim_group.h"
#include "shim_inter.h"

#include <stdlib.h>
#include <string.h>

static struct shim_group empty_group;
static struct shim_table groups = {.obj = MPISHIM_OBJ_GROUP};

int shim_group_get(MPI_Group h, struct shim_group **out)
{
    struct shim_group *g = h == MPI_GROUP_EMPTY ? &empty_group : shim_table_get(&groups, h);

    if (!g) {
        return MPI_ERR_GROUP;
    }
    *out = g;
    return MPI_SUCCESS;
}

int shim_group_make(const int *world_ranks, int n, MPI_Group *out)
{
    struct shim_group *g;
    int h;

    *out = MPI_GROUP_EMPTY;
    if (n == 0) {
        return MPI_SUCCESS;
    }
    g = malloc(sizeof(*g) + sizeof(int) * (size_t)n);
    if (!g) {
        return MPI_ERR_NO_MEM;
    }
    g->size = n;
    g->ranks = (int *)(g + 1);
    memcpy(g->ranks, world_ranks, sizeof(int) * (size_t)n);
    h = shim_table_add(&groups, g);
    if (!h) {
        free(g);
        return MPI_ERR_NO_MEM;
    }
    *out = h;
    return MPI_SUCCESS;
}

/* Initialized, and a valid group (raised as fn). */
static int group_arg(const char *fn, MPI_Group h, struct shim_group **g)
{
    int rc = shim_check_init(fn);

    if (rc == MPI_SUCCESS && shim_group_get(h, g) != MPI_SUCCESS) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_GROUP, "invalid group 0x%x", (unsigned)h);
    }
    return rc;
}

static int group_args2(const char *fn, MPI_Group h1, MPI_Group h2, struct shim_group **g1,
                       struct shim_group **g2)
{
    int rc = group_arg(fn, h1, g1);

    return rc == MPI_SUCCESS ? group_arg(fn, h2, g2) : rc;
}

/* Makes the result handle, raising MPI_ERR_NO_MEM as fn. */
static int group_out(const char *fn, const int *world, int n, MPI_Group *out)
{
    if (shim_group_make(world, n, out) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_NO_MEM, "no memory for a group of %d", n);
    }
    return MPI_SUCCESS;
}

/* world rank -> group rank of g, or -1: a table over the world (callers free it). */
static int *world_map(const struct shim_group *g)
{
    int wsize = pg_world_size();
    int *map = malloc(sizeof(int) * (size_t)(wsize > 0 ? wsize : 1));

    if (map) {
        for (int i = 0; i < wsize; i++) {
            map[i] = -1;
        }
        for (int i = 0; i < g->size; i++) {
            map[g->ranks[i]] = i;
        }
    }
    return map;
}

static int *int_array(int n)
{
    return malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
}

#pragma weak MPI_Comm_group = PMPI_Comm_group
int PMPI_Comm_group(MPI_Comm comm, MPI_Group *group)
{
    struct shim_comm *c;
    int rc = shim_check_init(SHIM_FN);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (shim_comm_get(comm, &c) != MPI_SUCCESS) {
        return shim_error(comm, SHIM_FN, MPI_ERR_COMM, "invalid communicator 0x%x", (unsigned)comm);
    }
    /* An intercommunicator's g is its remote view: its local group is kept beside it. */
    if (c->inter) {
        return group_out(SHIM_FN, shim_inter_local_ranks(c), c->inter->lsize, group);
    }
    return group_out(SHIM_FN, c->g->ranks, c->g->size, group);
}

#pragma weak MPI_Group_size = PMPI_Group_size
int PMPI_Group_size(MPI_Group group, int *size)
{
    struct shim_group *g;
    int rc = group_arg(SHIM_FN, group, &g);

    if (rc == MPI_SUCCESS) {
        *size = g->size;
    }
    return rc;
}

#pragma weak MPI_Group_rank = PMPI_Group_rank
int PMPI_Group_rank(MPI_Group group, int *rank)
{
    struct shim_group *g;
    int rc = group_arg(SHIM_FN, group, &g);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *rank = MPI_UNDEFINED;
    for (int i = 0; i < g->size; i++) {
        if (g->ranks[i] == pg_world_rank()) {
            *rank = i;
        }
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Group_free = PMPI_Group_free
int PMPI_Group_free(MPI_Group *group)
{
    struct shim_group *g;
    int rc = group_arg(SHIM_FN, *group, &g);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (*group != MPI_GROUP_EMPTY) {
        free(shim_table_remove(&groups, *group));
    }
    *group = MPI_GROUP_NULL;
    return MPI_SUCCESS;
}

/* Checks a list of n distinct ranks of g; marks them in seen (g->size entries, zeroed). */
static int check_rank_list(const char *fn, const struct shim_group *g, int n, const int *ranks,
                           char *seen)
{
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= g->size) {
            return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_RANK,
                              "rank %d (entry %d) is outside the group of %d", ranks[i], i,
                              g->size);
        }
        if (seen[ranks[i]]) {
            return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_RANK, "rank %d is listed twice",
                              ranks[i]);
        }
        seen[ranks[i]] = 1;
    }
    return MPI_SUCCESS;
}

/* incl (keep the listed ranks, in list order) or excl (keep the others, in group order). */
static int incl_excl(const char *fn, MPI_Group group, int n, const int *ranks, bool incl,
                     MPI_Group *newgroup)
{
    struct shim_group *g;
    char *seen = NULL;
    int *world = NULL;
    int k = 0, rc = group_arg(fn, group, &g);

    if (rc == MPI_SUCCESS && (n < 0 || (n > 0 && !ranks))) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "invalid rank list (n = %d)", n);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    seen = calloc((size_t)g->size + 1, 1);
    world = int_array(g->size);
    if (!seen || !world) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_NO_MEM, "no memory for a group of %d", g->size);
        goto out;
    }
    rc = check_rank_list(fn, g, n, ranks, seen);
    if (rc != MPI_SUCCESS) {
        goto out;
    }
    for (int i = 0; i < (incl ? n : g->size); i++) {
        if (incl) {
            world[k++] = g->ranks[ranks[i]];
        } else if (!seen[i]) {
            world[k++] = g->ranks[i];
        }
    }
    rc = group_out(fn, world, k, newgroup);
out:
    free(seen);
    free(world);
    return rc;
}

#pragma weak MPI_Group_incl = PMPI_Group_incl
int PMPI_Group_incl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    return incl_excl(SHIM_FN, group, n, ranks, true, newgroup);
}

#pragma weak MPI_Group_excl = PMPI_Group_excl
int PMPI_Group_excl(MPI_Group group, int n, const int ranks[], MPI_Group *newgroup)
{
    return incl_excl(SHIM_FN, group, n, ranks, false, newgroup);
}

/* Expands (first, last, stride) triplets into a rank list (*out, *n; caller frees). */
static int expand_ranges(const char *fn, const struct shim_group *g, int n, int ranges[][3],
                         int **out, int *count)
{
    long total = 0;
    int k = 0;

    for (int i = 0; i < n; i++) {
        int first = ranges[i][0], last = ranges[i][1], stride = ranges[i][2];
        if (stride == 0 || first < 0 || first >= g->size || last < 0 || last >= g->size ||
            (stride > 0 && first > last) || (stride < 0 && first < last)) {
            return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG,
                              "range %d (%d, %d, %d) is invalid for a group of %d", i, first, last,
                              stride, g->size);
        }
        total += (last - first) / stride + 1;
    }
    if (total > g->size) {
        /* More ranks than members: some must repeat. */
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_RANK,
                          "the ranges name %ld ranks in a group of %d: some repeat", total,
                          g->size);
    }
    *out = int_array((int)total);
    if (!*out) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_NO_MEM, "no memory for %ld ranks", total);
    }
    for (int i = 0; i < n; i++) {
        for (int r = ranges[i][0]; ranges[i][2] > 0 ? r <= ranges[i][1] : r >= ranges[i][1];
             r += ranges[i][2]) {
            (*out)[k++] = r;
        }
    }
    *count = k;
    return MPI_SUCCESS;
}

static int range_incl_excl(const char *fn, MPI_Group group, int n, int ranges[][3], bool incl,
                           MPI_Group *newgroup)
{
    struct shim_group *g;
    int *list = NULL;
    int count = 0, rc = group_arg(fn, group, &g);

    if (rc == MPI_SUCCESS && (n < 0 || (n > 0 && !ranges))) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "invalid range list (n = %d)", n);
    }
    if (rc == MPI_SUCCESS) {
        rc = expand_ranges(fn, g, n, ranges, &list, &count);
    }
    if (rc == MPI_SUCCESS) {
        rc = incl_excl(fn, group, count, list, incl, newgroup);
    }
    free(list);
    return rc;
}

#pragma weak MPI_Group_range_incl = PMPI_Group_range_incl
int PMPI_Group_range_incl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    return range_incl_excl(SHIM_FN, group, n, ranges, true, newgroup);
}

#pragma weak MPI_Group_range_excl = PMPI_Group_range_excl
int PMPI_Group_range_excl(MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup)
{
    return range_incl_excl(SHIM_FN, group, n, ranges, false, newgroup);
}

enum set_op { SET_UNION, SET_INTERSECTION, SET_DIFFERENCE };

/* The set operations keep group1's order first, then (union) group2's new members. */
static int set_op(const char *fn, MPI_Group h1, MPI_Group h2, enum set_op op, MPI_Group *newgroup)
{
    struct shim_group *g1, *g2;
    int *in2 = NULL, *world = NULL;
    int k = 0, rc = group_args2(fn, h1, h2, &g1, &g2);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    in2 = world_map(g2);
    world = int_array(g1->size + g2->size);
    if (!in2 || !world) {
        rc = shim_error(MPI_COMM_WORLD, fn, MPI_ERR_NO_MEM, "no memory for a group operation");
        goto out;
    }
    for (int i = 0; i < g1->size; i++) {
        bool both = in2[g1->ranks[i]] >= 0;
        if (op == SET_UNION || (op == SET_INTERSECTION) == both) {
            world[k++] = g1->ranks[i];
        }
        in2[g1->ranks[i]] = -1; /* union: g2's copy of a common member is not added again */
    }
    for (int i = 0; op == SET_UNION && i < g2->size; i++) {
        if (in2[g2->ranks[i]] >= 0) {
            world[k++] = g2->ranks[i];
        }
    }
    rc = group_out(fn, world, k, newgroup);
out:
    free(in2);
    free(world);
    return rc;
}

#pragma weak MPI_Group_union = PMPI_Group_union
int PMPI_Group_union(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return set_op(SHIM_FN, group1, group2, SET_UNION, newgroup);
}

#pragma weak MPI_Group_intersection = PMPI_Group_intersection
int PMPI_Group_intersection(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return set_op(SHIM_FN, group1, group2, SET_INTERSECTION, newgroup);
}

#pragma weak MPI_Group_difference = PMPI_Group_difference
int PMPI_Group_difference(MPI_Group group1, MPI_Group group2, MPI_Group *newgroup)
{
    return set_op(SHIM_FN, group1, group2, SET_DIFFERENCE, newgroup);
}

#pragma weak MPI_Group_translate_ranks = PMPI_Group_translate_ranks
int PMPI_Group_translate_ranks(MPI_Group group1, int n, const int ranks1[], MPI_Group group2,
                               int ranks2[])
{
    struct shim_group *g1, *g2;
    int *in2;
    int rc = group_args2(SHIM_FN, group1, group2, &g1, &g2);

    if (rc == MPI_SUCCESS && n < 0) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "n = %d is negative", n);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    in2 = world_map(g2);
    if (!in2) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory to translate");
    }
    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        int r = ranks1[i];
        if (r == MPI_PROC_NULL) {
            ranks2[i] = MPI_PROC_NULL;
        } else if (r < 0 || r >= g1->size) {
            rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_RANK,
                            "rank %d (entry %d) is outside group1 of %d", r, i, g1->size);
        } else {
            ranks2[i] = in2[g1->ranks[r]] >= 0 ? in2[g1->ranks[r]] : MPI_UNDEFINED;
        }
    }
    free(in2);
    return rc;
}

/* MPI_IDENT, MPI_SIMILAR or MPI_UNEQUAL for two lists of world ranks. */
int shim_group_compare_lists(const int *a, int na, const int *b, int nb)
{
    bool same_order = true;

    if (na != nb) {
        return MPI_UNEQUAL;
    }
    for (int i = 0; i < na; i++) {
        bool found = false;
        same_order = same_order && a[i] == b[i];
        for (int j = 0; j < nb && !found && !same_order; j++) {
            found = a[i] == b[j];
        }
        if (!same_order && !found) {
            return MPI_UNEQUAL;
        }
    }
    return same_order ? MPI_IDENT : MPI_SIMILAR;
}

#pragma weak MPI_Group_compare = PMPI_Group_compare
int PMPI_Group_compare(MPI_Group group1, MPI_Group group2, int *result)
{
    struct shim_group *g1, *g2;
    int rc = group_args2(SHIM_FN, group1, group2, &g1, &g2);

    if (rc == MPI_SUCCESS) {
        *result = shim_group_compare_lists(g1->ranks, g1->size, g2->ranks, g2->size);
    }
    return rc;
}
