/*
 * Node-aware reduce_scatter_block: reduce the whole vector within each node to its leader,
 * reduce-scatter the node sums among the leaders (each leader gets the blocks of its own
 * node's ranks), scatter those blocks within each node.
 *
 * Cost (N nodes of L ranks, m bytes per rank's block, M = N·L·m the whole vector): the node
 * reduce of M (the binomial tree: log2 L rounds of M·β_node), the leaders' pairwise
 * reduce-scatter, N-1 rounds over the network of L·m bytes each, and the node scatter of
 * L·m bytes (log2 L rounds). The flat pairwise exchange sends N·L-1 messages of m bytes
 * from every rank, of which (N-1)·L cross the network: per node, L times the messages and
 * the bytes that cross here. Within the node this moves the whole vector where the flat
 * exchange moves blocks: the trade that pays where the network is the slower link.
 *
 * Unequal nodes: leader k receives exactly the blocks of its node's c_k ranks, c_k·m bytes,
 * so the leaders' step is a reduce-scatter with unequal segments (pg_ireduce_scatter, the
 * segments in node order). An equal split of M among the N leaders would cut across node
 * boundaries, and every leader would then have to send parts of its segment to other
 * leaders in a second exchange over the network.
 *
 * Order: the leaders' segments must be contiguous in node order. Where a node's ranks are
 * consecutive in the group and the nodes in order (h->blocked), the vector already is;
 * elsewhere (an interleaved group) each leader copies its node sum into node order first.
 * Reduction order: as the node-aware allreduce (pg_coll_hier_allreduce.c), each node's
 * ranks first, then the nodes in node order; commutative ops only (the selection checks).
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

/* A leader's buffers: the node sum of the whole vector (acc, where the node has other
 * ranks), the same in node order (ord, where the group is not blocked), and the leaders'
 * segment counts (cd, one per node) followed by each node's first block in node order. */
struct rsb_bufs {
    void *acc, *ord;
    size_t *cd;
};

static int wait_started(int rc, struct pg_req *req)
{
    return rc == PGC_OK ? pg_wait(req, -1) : rc;
}

/* Copies the blocks of the vector v (rank order, bytes each) into ord in node order; first
 * holds each node's first block there. */
static void to_node_order(const struct pg_group *g, const struct pg_hier *h, const char *v,
                          char *ord, size_t bytes, const size_t *first)
{
    for (int i = 0; i < g->size; i++) {
        memcpy(ord + (first[h->node_of[i]] + (size_t)h->pos[i]) * bytes, v + (size_t)i * bytes,
               bytes);
    }
}

/* Starts the leaders' reduce-scatter of the node sums: src is this node's sum in rank
 * order, dst receives this node's c_k blocks. */
static int leaders_start(struct pg_group *g, const struct pg_hier *h, const void *src, void *dst,
                         size_t count, const struct pg_op_spec *op, struct rsb_bufs *b,
                         struct pg_req *req)
{
    size_t bytes = count * op->elem_size, *first = b->cd + h->nnodes, at = 0;

    for (int k = 0; k < h->nnodes; k++) {
        b->cd[k] = (size_t)h->count[k] * count;
        first[k] = at;
        at += (size_t)h->count[k];
    }
    if (b->ord) {
        to_node_order(g, h, src, b->ord, bytes, first);
        src = b->ord;
    }
    return pg_ireduce_scatter(h->leaders, src, dst, b->cd, op, req);
}

/* The leader's step among the leaders reads the node sum (or, alone on its node, its input)
 * and writes its node's blocks over the node sum (or, alone, its output). */
static const void *leaders_src(const struct pg_hier *h, const void *in, const struct rsb_bufs *b)
{
    return h->node ? b->acc : in;
}

static void *leaders_dst(const struct pg_hier *h, void *out, const struct rsb_bufs *b)
{
    return h->node ? b->acc : out;
}

/* A leader's buffers, from alloc (malloc for the blocking form, the schedule's scratch for
 * the non-blocking one); false without memory. */
static bool rsb_alloc(struct pg_group *g, size_t total, struct rsb_bufs *b,
                      void *(*alloc)(void *ctx, size_t n), void *ctx)
{
    struct pg_hier *h = g->hier;

    b->acc = h->node ? alloc(ctx, total ? total : 1) : NULL;
    b->ord = !h->blocked ? alloc(ctx, total ? total : 1) : NULL;
    b->cd = alloc(ctx, sizeof(size_t) * 2 * (size_t)h->nnodes);
    return (b->acc || !h->node) && (b->ord || h->blocked) && b->cd;
}

static void *heap_alloc(void *ctx, size_t n)
{
    (void)ctx;
    return malloc(n);
}

static void *sched_alloc(void *ctx, size_t n)
{
    return pg_sched_alloc(ctx, n);
}

int pg_reduce_scatter_block_hier(struct pg_group *g, const void *in, void *out, size_t count,
                                 const struct pg_op_spec *op)
{
    struct pg_hier *h = g->hier;
    size_t bytes = count * op->elem_size, total = bytes * (size_t)g->size;
    struct rsb_bufs b = {0};
    struct pg_req req = {0};
    int rc = pg_hier_begin(g, PG_COLL_REDUCE_SCATTER_BLOCK, op, -1);

    if (pg_hier_goes_on(rc) && h->leaders && !rsb_alloc(g, total, &b, heap_alloc, NULL)) {
        rc = mps_error(PGC_ERR_NOMEM, "reduce_scatter_block (rank %d): no memory for %zu B",
                       g->rank, total);
    }
    if (!pg_hier_goes_on(rc)) {
        goto done;
    }
    mps_stats_algo(MPS_ALGO_REDUCE_SCATTER_BLOCK_HIER);
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node, pg_reduce(h->node, in, b.acc, count * (size_t)g->size, op, 0));
    }
    if (h->leaders) {
        PG_HIER_STEP(g, rc, h->leaders,
                     wait_started(leaders_start(g, h, leaders_src(h, in, &b),
                                                leaders_dst(h, out, &b), count, op, &b, &req),
                                  &req));
    }
    if (h->node) {
        PG_HIER_STEP(g, rc, h->node,
                     wait_started(pg_iscatter(h->node, b.acc, out, bytes, 0, &req), &req));
    }
done:
    free(b.acc);
    free(b.ord);
    free(b.cd);
    return rc;
}

/* Stage 0 reduces the whole vector within the node to its leader, 1 reduce-scatters the
 * node sums among the leaders, 2 scatters each node's blocks from its leader:
 * pg_reduce_scatter_block_hier's calls, started non-blocking. */
static int rsb_stage(struct pg_hier_op *o, int stage, bool *started)
{
    struct pg_hier *h = o->h;
    struct rsb_bufs b = {o->acc, o->tmp, o->cd};
    int rc = PGC_OK;

    o->on = stage == 1 ? h->leaders : h->node;
    *started = false;
    if (stage == 0 && h->node) {
        rc = pg_ireduce_impl(h->node, o->in, o->acc, o->count * (size_t)o->g->size, &o->op, 0,
                             &o->sub);
        *started = true;
    } else if (stage == 1 && h->leaders) {
        rc = leaders_start(o->g, h, leaders_src(h, o->in, &b), leaders_dst(h, o->out, &b), o->count,
                           &o->op, &b, &o->sub);
        *started = true;
    } else if (stage == 2 && h->node) {
        rc = pg_iscatter(h->node, o->acc, o->out, o->bytes, 0, &o->sub);
        *started = true;
    }
    *started = *started && rc == PGC_OK;
    return rc;
}

int pg_ireduce_scatter_block_hier(struct pg_group *g, const void *in, void *out, size_t count,
                                  const struct pg_op_spec *op, struct pg_req *req)
{
    struct pg_sched *s;
    struct pg_hier_op *o;
    struct rsb_bufs b = {0};
    size_t bytes = count * op->elem_size;
    int rc;

    s = pg_hier_sched_new(g, op, req, PG_COLL_REDUCE_SCATTER_BLOCK, -1, &rc);
    if (!s) {
        return rc;
    }
    o = pg_hier_op_new(s, rsb_stage, 3, "reduce_scatter_block");
    if (o && g->hier->leaders) {
        /* Without memory the schedule holds the error, which the launch returns. */
        rsb_alloc(g, bytes * (size_t)g->size, &b, sched_alloc, s);
    }
    if (o) {
        pg_hier_op_reduction(o, in, out, count, op);
        o->acc = b.acc;
        o->tmp = b.ord;
        o->cd = b.cd;
    }
    rc = pg_hier_op_launch(s, o);
    if (rc == PGC_OK) {
        mps_stats_algo(MPS_ALGO_REDUCE_SCATTER_BLOCK_HIER);
    }
    return rc;
}
