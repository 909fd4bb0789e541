/*
 * Node-aware reduce: reduce within each node to its leader, reduce among the leaders to
 * the leader of the root's node, and a message from that leader to the root when the root
 * is not its node's leader.
 *
 * Cost (N nodes of L ranks, m bytes): the node reduce (one round in shared memory up to
 * 2 KiB, else log2 L rounds of the binomial tree through the rings), log2 N rounds over the
 * network among the leaders, and at most one m-byte copy within the root's node. Order of
 * reduction: as the node-aware allreduce (pg_coll_hier_allreduce.c): each node's ranks
 * first, then the nodes in node order.
 *
 * The non-blocking form runs the same steps as a chain of non-blocking calls on the same
 * groups with the same arguments (pg_coll_hier.h), so the two forms match.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_coll_hier.h"
#include "mps_stats.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <stdlib.h>
#include <string.h>

/* pg_isend/pg_irecv's tags on the node group, which carries no other point-to-point: the
 * result, or a stand-in for it from a leader whose call failed in a way that goes on
 * (pg_hier_goes_on). The root receives either. */
#define HIER_TAG 0
#define HIER_TAG_POISON 1

/* The root's handover arrived (req done, rc its status): a poisoned one fails the root. */
static int handed(const struct pg_req *req, int rc, int leader)
{
    if (rc == PGC_OK && req->tag == HIER_TAG_POISON) {
        rc = mps_error(PGC_ERR_BUFFER, "the data from rank %d stands in for a rank's failed "
                       "part: one passed an invalid buffer, or ranks called different "
                       "collectives (its own error names the cause)", leader);
    }
    return rc;
}

/* The leader of the root's node hands the result to the root (a stand-in where the
 * leader's call failed, rc). */
static int to_root(struct pg_hier *h, void *acc, void *out, size_t bytes, int root,
                   bool me_root, int rc)
{
    struct pg_req req = {0};
    int tag = rc == PGC_OK ? HIER_TAG : HIER_TAG_POISON;
    int src_rc;

    if (me_root) {
        src_rc = pg_irecv(h->node, out, bytes, 0, PG_ANY_TAG, &req);
        src_rc = src_rc == PGC_OK ? handed(&req, pg_wait(&req, -1), h->leader[h->my_node]) : src_rc;
    } else {
        src_rc = pg_isend(h->node, acc, bytes, h->pos[root], tag, false, &req);
        src_rc = src_rc == PGC_OK ? pg_wait(&req, -1) : src_rc;
    }
    return rc != PGC_OK ? rc : src_rc;
}

int pg_reduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                   const struct pg_op_spec *op, int root)
{
    struct pg_hier *h = g->hier;
    size_t bytes = count * op->elem_size;
    bool me_root = g->rank == root, root_leads = h->leader[h->node_of[root]] == root;
    void *acc = NULL; /* a leader's node partial, then the leaders' result */
    int rc = pg_hier_begin(g, PG_COLL_REDUCE, op, root);

    if (pg_hier_goes_on(rc) && h->leaders) {
        acc = me_root ? out : malloc(bytes ? bytes : 1);
        /* out may be NULL at a root that receives nothing (pgc's empty tensors). */
        if (!acc && bytes) {
            rc = mps_error(PGC_ERR_NOMEM, "reduce (rank %d): no memory for %zu bytes of a "
                           "node's partial result", g->rank, bytes);
        }
    }
    if (!pg_hier_goes_on(rc)) {
        goto done;
    }
    mps_stats_algo(MPS_ALGO_REDUCE_HIER);
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node, pg_reduce(h->node, in, acc, count, op, 0));
    } else if (acc != in && bytes) {
        memcpy(acc, in, bytes);
    }
    if (h->leaders) {
        PG_HIER_STEP(g, rc, h->leaders, pg_reduce(h->leaders, acc, acc, count, op,
                                               h->node_of[root]));
    }
    if (pg_hier_goes_on(rc) && !root_leads && h->my_node == h->node_of[root] &&
        (me_root || h->leaders)) {
        rc = to_root(h, acc, out, bytes, root, me_root, rc);
    }
done:
    if (acc != out) {
        free(acc);
    }
    return rc;
}

/* Whether this rank takes part in the last step: the root's node's leader handing the
 * result to the root, when they differ. */
static bool hands_over(const struct pg_hier_op *o)
{
    const struct pg_hier *h = o->h;
    int rnode = h->node_of[o->root];

    return h->leader[rnode] != o->root && h->my_node == rnode &&
           (o->g->rank == o->root || h->leaders);
}

/* Stage 0 reduces within the node to its leader, 1 among the leaders to the root's node's
 * leader, 2 hands the result to the root: pg_reduce_hier's calls, started non-blocking
 * (the last on the locked path: pg_isend_ctx, as pg_isend sends it). */
static int reduce_stage(struct pg_hier_op *o, int stage, bool *started)
{
    struct pg_hier *h = o->h;
    int rc = PGC_OK;

    o->on = stage == 1 ? h->leaders : h->node;
    *started = false;
    if (stage == 0 && h->node) {
        rc = pg_ireduce_impl(h->node, o->in, o->acc, o->count, &o->op, 0, &o->sub);
        *started = true;
    } else if (stage == 0 && o->acc != o->in) {
        memcpy(o->acc, o->in, o->bytes);
    } else if (stage == 1 && h->leaders) {
        rc = pg_ireduce_impl(h->leaders, o->acc, o->acc, o->count, &o->op, h->node_of[o->root],
                             &o->sub);
        *started = true;
    } else if (stage == 2 && hands_over(o) && o->g->rank == o->root) {
        rc = pg_irecv_ctx(h->node, pg_ctx_p2p(h->node), o->out, o->bytes, 0, HIER_TAG, &o->sub);
        *started = true;
    } else if (stage == 2 && hands_over(o)) {
        rc = pg_isend_ctx(h->node, pg_ctx_p2p(h->node), o->acc, o->bytes, h->pos[o->root],
                          HIER_TAG, 0, &o->sub);
        *started = true;
    }
    *started = *started && rc == PGC_OK;
    return rc;
}

int pg_ireduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                    const struct pg_op_spec *op, int root, struct pg_req *req)
{
    struct pg_sched *s;
    struct pg_hier_op *o;
    size_t bytes = count * op->elem_size;
    int rc;

    s = pg_hier_sched_new(g, op, req, PG_COLL_REDUCE, root, &rc);
    if (!s) {
        return rc;
    }
    o = pg_hier_op_new(s, reduce_stage, 3, "reduce");
    if (o) {
        pg_hier_op_reduction(o, in, out, count, op);
        o->root = root;
        /* A leader's node partial, then the leaders' result: the root's own output, else
         * the schedule's scratch. */
        o->acc = !g->hier->leaders ? NULL : g->rank == root ? out : pg_sched_alloc(s, bytes);
    }
    rc = pg_hier_op_launch(s, o);
    if (rc == PGC_OK) {
        mps_stats_algo(MPS_ALGO_REDUCE_HIER);
    }
    return rc;
}
