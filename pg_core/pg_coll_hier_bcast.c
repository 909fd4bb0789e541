/*
 * Node-aware broadcast: within the root's node from the root, among the leaders from the
 * root's node's leader, then within every other node from its leader.
 *
 * Cost (N nodes of L ranks, m bytes): the root's node and the other nodes run their
 * broadcasts one after the other, each one round in shared memory up to 1 KiB (log2 L
 * rounds of the binomial tree otherwise), and the leaders' broadcast sends log2 N rounds
 * over the network; the flat binomial tree sends m across the network once per node that
 * holds part of a subtree, up to L times per node.
 *
 * The non-blocking form runs the same three steps as a chain of non-blocking broadcasts on
 * the same groups with the same arguments (pg_coll_hier.h), so the two forms match.
 */
#include "config.h"

#include "pg_coll_hier.h"
#include "mps_stats.h"
#include "pg_internal.h"
#include "pgc_status.h"

int pg_bcast_hier(struct pg_group *g, void *buf, size_t bytes, int root)
{
    struct pg_hier *h = g->hier;
    int rc = pg_hier_begin(g, PG_COLL_BCAST, NULL, root);
    int rnode = h->node_of[root];

    if (!pg_hier_goes_on(rc)) {
        return rc;
    }
    mps_stats_algo(MPS_ALGO_BCAST_HIER);
    if (h->node && h->my_node == rnode) {
        PG_HIER_STEP(g, rc, h->node, pg_bcast(h->node, buf, bytes, h->pos[root]));
    }
    if (h->leaders) {
        PG_HIER_STEP(g, rc, h->leaders, pg_bcast(h->leaders, buf, bytes, rnode));
    }
    if (h->node && h->my_node != rnode) {
        PG_HIER_STEP(g, rc, h->node, pg_bcast(h->node, buf, bytes, 0));
    }
    return rc;
}

/* Stage 0 broadcasts within the root's node, 1 among the leaders, 2 within the other
 * nodes: pg_bcast_hier's calls, started non-blocking. */
static int bcast_stage(struct pg_hier_op *o, int stage, bool *started)
{
    struct pg_hier *h = o->h;
    int rnode = h->node_of[o->root];
    bool mine = h->my_node == rnode;
    int rc = PGC_OK;

    o->on = stage == 1 ? h->leaders : h->node;
    *started = false;
    if (stage == 0 && h->node && mine) {
        rc = pg_ibcast_impl(h->node, o->out, o->bytes, h->pos[o->root], &o->sub);
        *started = true;
    } else if (stage == 1 && h->leaders) {
        rc = pg_ibcast_impl(h->leaders, o->out, o->bytes, rnode, &o->sub);
        *started = true;
    } else if (stage == 2 && h->node && !mine) {
        rc = pg_ibcast_impl(h->node, o->out, o->bytes, 0, &o->sub);
        *started = true;
    }
    *started = *started && rc == PGC_OK;
    return rc;
}

int pg_ibcast_hier(struct pg_group *g, void *buf, size_t bytes, int root, struct pg_req *req)
{
    struct pg_sched *s;
    struct pg_hier_op *o;
    int rc;

    s = pg_hier_sched_new(g, NULL, req, PG_COLL_BCAST, root, &rc);
    if (!s) {
        return rc;
    }
    o = pg_hier_op_new(s, bcast_stage, 3, "bcast");
    if (o) {
        o->out = buf;
        o->bytes = bytes;
        o->root = root;
    }
    rc = pg_hier_op_launch(s, o);
    if (rc == PGC_OK) {
        mps_stats_algo(MPS_ALGO_BCAST_HIER);
    }
    return rc;
}
