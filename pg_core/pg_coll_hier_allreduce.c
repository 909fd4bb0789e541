/*
 * Node-aware allreduce: reduce within each node to its leader, allreduce among the
 * leaders, broadcast within each node.
 *
 * Cost (N nodes of L ranks, m bytes): 2 steps in shared memory or the rings of one node
 * (one round each up to 2 KiB, pg_coll_shm.c; else log2 L rounds of m·β_node) and the
 * leaders' allreduce over the network, log2 N rounds (recursive doubling) or 2·m·β_net
 * (Rabenseifner, ring). The flat algorithm sends log2(N·L) rounds over the network, most of
 * them between nodes; this sends log2 N, one message per node and round, not L.
 *
 * Order of reduction: each node reduces its own ranks first (pg_reduce on the node's group:
 * in rank order within the node for a shared-memory round, else the binomial tree), then the
 * leaders combine the node partials (pg_allreduce on the leaders, in node order: nodes are
 * numbered by their lowest rank). Every rank receives the leader's bytes, so the result is
 * bitwise the same on every rank; for SUM on integers it equals the flat result exactly,
 * for floating point it may differ from the flat algorithm's in the last bits.
 *
 * The non-blocking form runs the same three steps as a chain of non-blocking collectives
 * on the same groups with the same arguments (pg_coll_hier.h), so the two forms match.
 */
#include "config.h"

#include "pg_coll_hier.h"
#include "mps_stats.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <string.h>

int pg_allreduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op)
{
    struct pg_hier *h = g->hier;
    size_t bytes = count * op->elem_size;
    int rc = pg_hier_begin(g, PG_COLL_ALLREDUCE, op, -1);

    if (!pg_hier_goes_on(rc)) {
        return rc;
    }
    mps_stats_algo(MPS_ALGO_ALLREDUCE_HIER);
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node, pg_reduce(h->node, in, out, count, op, 0));
    } else if (in != out && bytes) {
        memcpy(out, in, bytes);
    }
    if (h->leaders) {
        PG_HIER_STEP(g, rc, h->leaders, pg_allreduce(h->leaders, out, out, count, op));
    }
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node, pg_bcast(h->node, out, bytes, 0));
    }
    return rc;
}

/* Stage 0 reduces within the node to its leader, 1 allreduces among the leaders, 2
 * broadcasts within the node: pg_allreduce_hier's calls, started non-blocking. */
static int allreduce_stage(struct pg_hier_op *o, int stage, bool *started)
{
    struct pg_hier *h = o->h;
    int rc = PGC_OK;

    o->on = stage == 1 ? h->leaders : h->node;
    *started = o->on != NULL;
    if (stage == 0 && h->node) {
        rc = pg_ireduce_impl(h->node, o->in, o->out, o->count, &o->op, 0, &o->sub);
    } else if (stage == 0 && o->in != o->out) {
        memcpy(o->out, o->in, o->bytes);
    } else if (stage == 1 && h->leaders) {
        rc = pg_iallreduce_impl(h->leaders, o->out, o->out, o->count, &o->op, &o->sub);
    } else if (stage == 2 && h->node) {
        rc = pg_ibcast_impl(h->node, o->out, o->bytes, 0, &o->sub);
    }
    *started = *started && rc == PGC_OK;
    return rc;
}

int pg_iallreduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                       const struct pg_op_spec *op, struct pg_req *req)
{
    struct pg_sched *s;
    struct pg_hier_op *o;
    int rc;

    s = pg_hier_sched_new(g, op, req, PG_COLL_ALLREDUCE, -1, &rc);
    if (!s) {
        return rc;
    }
    o = pg_hier_op_new(s, allreduce_stage, 3, "allreduce");
    if (o) {
        pg_hier_op_reduction(o, in, out, count, op);
    }
    rc = pg_hier_op_launch(s, o);
    if (rc == PGC_OK) {
        mps_stats_algo(MPS_ALGO_ALLREDUCE_HIER);
    }
    return rc;
}
