/*
 * pg_coll_hier.h - node-aware (hierarchical) collectives: the node layout of a group, its
 * two sub-groups, and the five algorithms built on them (pg_coll_hier_<kind>.c).
 *
 * A group that spans nodes with several ranks on some node runs its allreduce, bcast,
 * reduce, allgather, barrier and reduce_scatter_block, blocking and non-blocking, in three
 * steps: within each
 * node (shared memory and the rings), among one leader per node (the network), and within
 * each node again. The layout is a pure function of what every rank knows alike (the
 * bootstrap's node name of every world rank and MPISHIM_NODE_SPLIT), so every member finds
 * the same one without a message; pg_coll.c's selection reads it beside the op and the
 * root.
 */
#ifndef PG_COLL_HIER_H
#define PG_COLL_HIER_H

#include "pg.h"
#include "pg_sched.h"
#include "pgc_status.h"

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
    /* Non-blocking node-aware collectives with stages still to start, in the order they
     * were called (struct pg_hier_op via link; the world lock guards it), and how many
     * (written under the lock, read without it by pg_hier_idle). */
    struct mps_list waiting;
    int nwaiting;
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
 * a flat group. pg_init calls it on the world and every group creation on the new group
 * (pg_hier_created), so that no non-blocking collective has to create them (and wait for
 * its peers to do so); group creation also calls it on the parent before it reads its
 * context-id proposal (a no-op by then). */
int pg_hier_prepare(struct pg_group *g);

/* The end of every group creation (rc its result, *g the new group or NULL on a rank
 * outside it): pg_hier_prepare on *g by its members, all of which are in the same creation
 * call; if that fails, *g is released and set to NULL. Returns the result. */
int pg_hier_created(int rc, struct pg_group **g);

/* Whether no non-blocking node-aware collective of this rank on g has a stage still to
 * start: then a blocking one may run its stages directly (else it starts the non-blocking
 * form and waits, so that the stages of both start in the order the calls were made). */
static inline bool pg_hier_idle(const struct pg_group *g)
{
    return __atomic_load_n(&g->hier->nwaiting, __ATOMIC_ACQUIRE) == 0;
}

/*
 * The steps of a blocking node-aware collective, each a collective on the node's or the
 * leaders' group. A rank whose call has failed in a way that leaves every sub-group in step
 * (pg_hier_goes_on: a stand-in's poison or a mismatch, found in an earlier step, or its own
 * stand-in for a bad buffer on g, g->poison_next) still runs its later steps, poisoned
 * (pg.h): the ranks that need its data then fail at once, through every step the data takes
 * (another node's ranks too), instead of waiting for it until the timeout, and each
 * sub-group's sequence stays the same on all its members. Any other error (a timeout, a dead
 * rank, no memory) ends the call at once.
 */
static inline bool pg_hier_goes_on(int rc)
{
    return rc == PGC_OK || rc == PGC_ERR_BUFFER || rc == PGC_ERR_MISMATCH;
}

/* The state a blocking node-aware collective on g (of kind, op and root, its signature)
 * starts in: its sub-groups ready, and PGC_ERR_BUFFER where this rank stands in for a bad
 * buffer. It takes g's next sequence number, as the non-blocking form's schedule does: the
 * roll call (pg_coll_roll.c) asks about it from the steps. */
int pg_hier_begin(struct pg_group *g, enum pg_coll_kind kind, const struct pg_op_spec *op,
                  int root);

/* Before a step on sub, with the call's state rc: whether to run it (poisoned if rc is an
 * error that goes on). */
bool pg_hier_step_in(struct pg_group *sub, int rc);

/* After a step on sub (a sub-group of g) that returned step_rc: the call's state, its first
 * error (a poison that reached this rank through the step included). A step's timeout
 * names ranks of sub: its message then also says which ranks of g they are. */
int pg_hier_step_out(struct pg_group *g, struct pg_group *sub, int rc, int step_rc);

/* rc = the state after the step `call` on sub, a sub-group of g, run as above. */
#define PG_HIER_STEP(g, rc, sub, call)                                                             \
    ((rc) = pg_hier_step_in((sub), (rc)) ? pg_hier_step_out((g), (sub), (rc), (call)) : (rc))

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
/* pg_reduce_scatter_block's contract (pg_coll2.h), for the sizes past its direct path. */
int pg_reduce_scatter_block_hier(struct pg_group *g, const void *in, void *out, size_t count,
                                 const struct pg_op_spec *op);

/*
 * The non-blocking forms: a chain of stages, each a collective (or one message) on the node
 * or the leaders' group, started when the stage before it has completed, by a poll step of
 * a schedule on g (pg_sched_poll) that the progress engine runs while the caller computes.
 * The stages are those of the blocking form, with the same arguments, so that a rank may
 * run either form while its peers run the other (pgc's async_op is each rank's own choice).
 *
 * Order: the sub-groups' collectives are matched by their sequence numbers, taken when each
 * stage starts. Stages of several outstanding collectives must therefore start in the same
 * order on every rank, whatever order their predecessors complete in: a collective starts
 * its stages only while it is the oldest of g's that still has stages to start
 * (h->waiting), so they start in call order, stage by stage, as the blocking forms run
 * them. A collective's last stage overlaps with the next one's first.
 */
struct pg_hier_op;
/* Does stage `stage` of o: local work and/or starting one sub-collective on o->sub
 * (*started then true). */
typedef int (*pg_hier_stage_fn)(struct pg_hier_op *o, int stage, bool *started);

struct pg_hier_op {
    struct pg_group *g;
    struct pg_hier *h;
    pg_hier_stage_fn stage;
    const char *name;    /* "allreduce", for a timeout's message */
    int nstages, next;   /* its stages, and the next one to start */
    bool busy;           /* sub is in flight */
    bool queued;         /* in h->waiting */
    struct pg_group *on; /* the group of the stage in flight, for a timeout's message */
    struct mps_list link;
    struct pg_req sub;
    /* the call's arguments and scratch */
    const void *in;
    void *out, *acc, *tmp;
    size_t count, bytes, *cd;
    struct pg_op_spec op;
    int root;
};

/* The arguments of a reduction's chain (allreduce, reduce, reduce_scatter_block). */
static inline void pg_hier_op_reduction(struct pg_hier_op *o, const void *in, void *out,
                                        size_t count, const struct pg_op_spec *op)
{
    o->in = in;
    o->out = out;
    o->count = count;
    o->bytes = count * op->elem_size;
    o->op = *op;
}

/* A new chain of nstages stages on the schedule s (on g): its memory belongs to s; NULL
 * when it has none (s holds the error). */
/* The schedule of a non-blocking node-aware collective of kind on g (sub-groups ready,
 * signature set), or NULL with *rc set. */
struct pg_sched *pg_hier_sched_new(struct pg_group *g, const struct pg_op_spec *op,
                                   struct pg_req *req, enum pg_coll_kind kind, int root,
                                   int *rc);
struct pg_hier_op *pg_hier_op_new(struct pg_sched *s, pg_hier_stage_fn stage, int nstages,
                                  const char *name);
/* Starts o's schedule: its first stage starts now if no earlier chain waits. */
int pg_hier_op_launch(struct pg_sched *s, struct pg_hier_op *o);

/* The non-blocking algorithms: the contracts of pg_iallreduce etc. (pg.h), for groups where
 * pg_hier_on holds; reductions with a commutative op only. */
int pg_iallreduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                       const struct pg_op_spec *op, struct pg_req *req);
int pg_ibcast_hier(struct pg_group *g, void *buf, size_t bytes, int root, struct pg_req *req);
int pg_ireduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                    const struct pg_op_spec *op, int root, struct pg_req *req);
int pg_iallgather_hier(struct pg_group *g, const void *in, void *out, size_t bytes,
                       struct pg_req *req);
int pg_ibarrier_hier(struct pg_group *g, struct pg_req *req);
int pg_ireduce_scatter_block_hier(struct pg_group *g, const void *in, void *out, size_t count,
                                  const struct pg_op_spec *op, struct pg_req *req);

#endif
