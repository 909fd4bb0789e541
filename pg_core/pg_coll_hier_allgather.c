/*
 * Node-aware allgather: gather each node's blocks at its leader, allgather the node blocks
 * among the leaders, broadcast the whole result within each node.
 *
 * Cost (N nodes of L ranks, m bytes per rank): the node gather (log2 L rounds through the
 * rings, (L-1)·m bytes into the leader), the leaders' allgather of L·m-byte node blocks over
 * the network (Bruck or the ring: log2 N or N-1 rounds, (N-1)·L·m bytes per leader), and a
 * broadcast of N·L·m bytes within each node. The flat algorithms send log2(N·L) or N·L-1
 * rounds from every rank, most of them between nodes.
 *
 * The leaders exchange node blocks in node order; where a node's ranks are not consecutive
 * in the group (a cyclic placement, MPISHIM_NODE_SPLIT on an interleaved group) they are
 * gathered into scratch and put in rank order before the node broadcast.
 *
 * The non-blocking form runs the same steps as a chain of non-blocking collectives on the
 * same groups with the same arguments (pg_coll_hier.h), so the two forms match.
 */
#include "config.h"

#include "mps_log.h"
#include "mps_stats.h"
#include "pg_coll2.h"
#include "pg_coll_hier.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <stdlib.h>
#include <string.h>

static int wait_started(int rc, struct pg_req *req)
{
    return rc == PGC_OK ? pg_wait(req, -1) : rc;
}

/* Starts the leaders' allgather of node blocks into tmp, node k's block at cd[nnodes + k]
 * (cd: the counts, then the displacements, of the nodes' blocks). */
static int leaders_exchange_start(struct pg_hier *h, char *tmp, size_t bytes, size_t *cd,
                                  struct pg_req *req)
{
    size_t *counts = cd, *displs = cd + h->nnodes, at = 0;

    for (int k = 0; k < h->nnodes; k++) {
        counts[k] = (size_t)h->count[k] * bytes;
        displs[k] = at;
        at += counts[k];
    }
    return pg_iallgatherv(h->leaders, tmp + displs[h->my_node], counts[h->my_node], tmp, counts,
                          displs, req);
}

/* The leaders' allgather of node blocks, waited for. */
static int leaders_exchange(struct pg_hier *h, char *tmp, size_t bytes, size_t *cd)
{
    struct pg_req req = {0};

    return wait_started(leaders_exchange_start(h, tmp, bytes, cd, &req), &req);
}

/* Where my node's block starts in the node-ordered blocks: the ranks of the nodes before. */
static size_t node_start(const struct pg_hier *h, size_t bytes)
{
    size_t before = 0;

    for (int k = 0; k < h->my_node; k++) {
        before += (size_t)h->count[k] * bytes;
    }
    return before;
}

/* Node-ordered blocks (tmp) to rank order (out). */
static void to_rank_order(const struct pg_group *g, const struct pg_hier *h, const char *tmp,
                          char *out, size_t bytes, const size_t *displs)
{
    for (int i = 0; i < g->size; i++) {
        memcpy(out + (size_t)i * bytes, tmp + displs[h->node_of[i]] + (size_t)h->pos[i] * bytes,
               bytes);
    }
}

int pg_allgather_hier(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    struct pg_hier *h = g->hier;
    size_t total = (size_t)g->size * bytes, *cd = NULL;
    struct pg_req req = {0};
    char *tmp = NULL, *mine;
    int rc = pg_hier_begin(g, PG_COLL_ALLGATHER, NULL, -1);

    if (pg_hier_goes_on(rc) && h->leaders) {
        /* Consecutive nodes need no reordering: the leaders gather straight into out. */
        tmp = h->blocked ? out : malloc(total ? total : 1);
        cd = malloc(sizeof(size_t) * 2 * (size_t)h->nnodes);
        /* out may be NULL where there is nothing to gather (pgc's empty tensors). */
        if ((!tmp && total) || !cd) {
            rc = mps_error(PGC_ERR_NOMEM, "allgather (rank %d): no memory for %zu bytes",
                           g->rank, total);
        }
    }
    if (!pg_hier_goes_on(rc)) {
        goto done;
    }
    mps_stats_algo(MPS_ALGO_ALLGATHER_HIER);
    mine = tmp ? tmp + node_start(h, bytes) : NULL;
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node,
                     wait_started(pg_igather(h->node, in, mine, bytes, 0, &req), &req));
    } else if (mine != in && bytes) {
        memmove(mine, in, bytes);
    }
    if (h->leaders) {
        PG_HIER_STEP(g, rc, h->leaders, leaders_exchange(h, tmp, bytes, cd));
    }
    if (pg_hier_goes_on(rc) && h->leaders && tmp != out) {
        to_rank_order(g, h, tmp, out, bytes, cd + h->nnodes);
    }
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node, pg_bcast(h->node, out, total, 0));
    }
done:
    if (tmp != out) {
        free(tmp);
    }
    free(cd);
    return rc;
}

/* Stage 0 gathers the node's blocks at its leader, 1 exchanges the node blocks among the
 * leaders (and puts them in rank order), 2 broadcasts the whole within the node:
 * pg_allgather_hier's calls, started non-blocking. */
static int allgather_stage(struct pg_hier_op *o, int stage, bool *started)
{
    struct pg_hier *h = o->h;
    char *mine = o->tmp ? (char *)o->tmp + node_start(h, o->bytes) : NULL;
    int rc = PGC_OK;

    o->on = stage == 1 ? h->leaders : h->node;
    *started = false;
    if (stage == 0 && h->node) {
        rc = pg_igather(h->node, o->in, mine, o->bytes, 0, &o->sub);
        *started = true;
    } else if (stage == 0 && mine != o->in) {
        memmove(mine, o->in, o->bytes);
    } else if (stage == 1 && h->leaders) {
        rc = leaders_exchange_start(h, o->tmp, o->bytes, o->cd, &o->sub);
        *started = true;
    } else if (stage == 2) {
        if (h->leaders && o->tmp != o->out) {
            to_rank_order(o->g, h, o->tmp, o->out, o->bytes, o->cd + h->nnodes);
        }
        if (h->node) {
            rc = pg_ibcast_impl(h->node, o->out, (size_t)o->g->size * o->bytes, 0, &o->sub);
            *started = true;
        }
    }
    *started = *started && rc == PGC_OK;
    return rc;
}

int pg_iallgather_hier(struct pg_group *g, const void *in, void *out, size_t bytes,
                       struct pg_req *req)
{
    struct pg_sched *s;
    struct pg_hier_op *o;
    struct pg_hier *h = g->hier;
    int rc;

    s = pg_hier_sched_new(g, NULL, req, PG_COLL_ALLGATHER, -1, &rc);
    if (!s) {
        return rc;
    }
    o = pg_hier_op_new(s, allgather_stage, 3, "allgather");
    if (o) {
        o->in = in;
        o->out = out;
        o->bytes = bytes;
    }
    if (o && h->leaders) {
        /* Consecutive nodes need no reordering: the leaders gather straight into out. */
        o->tmp = h->blocked ? out : pg_sched_alloc(s, (size_t)g->size * bytes);
        o->cd = pg_sched_alloc(s, sizeof(size_t) * 2 * (size_t)h->nnodes);
    }
    rc = pg_hier_op_launch(s, o);
    if (rc == PGC_OK) {
        mps_stats_algo(MPS_ALGO_ALLGATHER_HIER);
    }
    return rc;
}
