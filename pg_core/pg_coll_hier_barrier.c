/*
 * Node-aware barrier: a barrier within each node (every rank has arrived at its leader),
 * one among the leaders (every node has arrived), and one within each node again (the
 * leader has seen every node).
 *
 * Cost (N nodes of L ranks): two rounds in shared memory (one stamp per rank,
 * pg_coll_shm.c) and log2 N rounds of the dissemination barrier over the network, one
 * message per node and round; the flat barrier sends log2(N·L) rounds from every rank.
 *
 * The non-blocking form runs the same three steps as a chain of non-blocking barriers on
 * the same groups (pg_coll_hier.h), so the two forms match.
 */
#include "config.h"

#include "pg_coll_hier.h"
#include "mps_stats.h"
#include "pg_internal.h"
#include "pgc_status.h"

int pg_barrier_hier(struct pg_group *g)
{
    struct pg_hier *h = g->hier;
    int rc = pg_hier_begin(g, PG_COLL_BARRIER, NULL, -1);

    if (!pg_hier_goes_on(rc)) {
        return rc;
    }
    mps_stats_algo(MPS_ALGO_BARRIER_HIER);
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node, pg_barrier(h->node));
    }
    if (h->leaders) {
        PG_HIER_STEP(g, rc, h->leaders, pg_barrier(h->leaders));
    }
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node, pg_barrier(h->node));
    }
    return rc;
}

/* Stages 0 and 2 within the node, 1 among the leaders: pg_barrier_hier's, non-blocking. */
static int barrier_stage(struct pg_hier_op *o, int stage, bool *started)
{
    int rc = PGC_OK;

    o->on = stage == 1 ? o->h->leaders : o->h->node;
    if (o->on) {
        rc = pg_ibarrier_impl(o->on, &o->sub);
    }
    *started = o->on && rc == PGC_OK;
    return rc;
}

int pg_ibarrier_hier(struct pg_group *g, struct pg_req *req)
{
    struct pg_sched *s;
    struct pg_hier_op *o;
    int rc;

    s = pg_hier_sched_new(g, NULL, req, PG_COLL_BARRIER, -1, &rc);
    if (!s) {
        return rc;
    }
    o = pg_hier_op_new(s, barrier_stage, 3, "barrier");
    rc = pg_hier_op_launch(s, o);
    if (rc == PGC_OK) {
        mps_stats_algo(MPS_ALGO_BARRIER_HIER);
    }
    return rc;
}
