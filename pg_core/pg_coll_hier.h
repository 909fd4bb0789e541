/*
 * pg_coll_hier.h - node-aware (hierarchical) collectives: the node layout of a group, its
 * two sub-groups, and the five algorithms built on them (pg_coll_hier_<kind>.c).
 *
 * A group that spans nodes with several ranks on some node runs its blocking allreduce,
 * bcast, reduce, allgather and barrier in three steps: within each node (shared memory and
 * the rings), among one leader per node (the network), and within each node again. The
 * layout is a pure function of what every rank knows alike (the bootstrap's node name of
 * every world rank and MPISHIM_NODE_SPLIT), so every member finds the same one without a
 * message; pg_coll.c's selection reads it beside the op and the root.
 */
#ifndef PG_COLL_HIER_H
#define PG_COLL_HIER_H

#include "pg.h"

struct pg_hier {
    bool on;      /* the group spans nodes and some node has several of its ranks */
    bool blocked; /* every node's ranks are consecutive in the group */
    bool made;    /* node and leaders were created (pg_hier_prepare) */
    int nnodes;
    int my_node;
    int *node_of;          /* group rank -> node, numbered by first appearance in rank order */
    int *pos;              /* group rank -> its rank in its node's group */
    int *count;            /* node -> its ranks in the group */
    int *leader;           /* node -> its leader: its lowest group rank, rank `node` of leaders */
    struct pg_group *node; /* my node's ranks in group order; NULL when alone there */
    struct pg_group *leaders; /* one rank per node, in node order; NULL on non-leaders */
};

/* Computes g's layout once (under the world lock) and caches it on g; NULL without memory
 * or a bootstrap, which callers treat as a flat group. Not collective. */
struct pg_hier *pg_hier_layout(struct pg_group *g);

/* Whether g's blocking collectives run node-aware: the layout says the group spans nodes
 * with several ranks on a node, and MPISHIM_COLL_HIER is 1. The same on every member. */
static inline bool pg_hier_on(struct pg_group *g)
{
    /* Acquire: the world's layout may be published by another thread's group (its layout
     * is computed from the world's), while this one runs a collective on the world. */
    const struct pg_hier *h = __atomic_load_n(&g->hier, __ATOMIC_ACQUIRE);

    if (!h) {
        h = pg_hier_layout(g);
    }

    return h && h->on;
}

/* Creates g's node and leader sub-groups if g runs node-aware and has none yet. Collective
 * over g (every member calls it, in the same order as g's other collectives); a no-op for
 * a flat group. Group creation calls it before it reads its context-id proposal, so that a
 * hierarchical allreduce inside the agreement never creates groups halfway through it. */
int pg_hier_prepare(struct pg_group *g);

/* Releases the sub-groups and the layout (pg_group_release). */
void pg_hier_free(struct pg_group *g);

/* The algorithms: the contracts of pg_allreduce etc. (pg.h). Reductions require a
 * commutative op (the selection checks it): nodes reduce in their own order first. */
int pg_allreduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op);
int pg_bcast_hier(struct pg_group *g, void *buf, size_t bytes, int root);
int pg_reduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                   const struct pg_op_spec *op, int root);
int pg_allgather_hier(struct pg_group *g, const void *in, void *out, size_t bytes);
int pg_barrier_hier(struct pg_group *g);

#endif
