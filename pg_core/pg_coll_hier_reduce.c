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
 */
#include "config.h"

#include "mps_log.h"
#include "pg_coll_hier.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <stdlib.h>
#include <string.h>

/* pg_isend/pg_irecv's tag on the node group, which carries no other point-to-point. */
#define HIER_TAG 0

/* The leader of the root's node hands the result to the root. */
static int to_root(struct pg_hier *h, void *acc, void *out, size_t bytes, int root, bool me_root)
{
    struct pg_req req = {0};
    int rc;

    if (me_root) {
        rc = pg_irecv(h->node, out, bytes, 0, HIER_TAG, &req);
    } else {
        rc = pg_isend(h->node, acc, bytes, h->pos[root], HIER_TAG, false, &req);
    }
    return rc == PGC_OK ? pg_wait(&req, -1) : rc;
}

int pg_reduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                   const struct pg_op_spec *op, int root)
{
    struct pg_hier *h = g->hier;
    size_t bytes = count * op->elem_size;
    bool me_root = g->rank == root, root_leads = h->leader[h->node_of[root]] == root;
    void *acc = NULL; /* a leader's node partial, then the leaders' result */
    int rc = pg_hier_prepare(g);

    if (rc == PGC_OK && h->leaders) {
        acc = me_root ? out : malloc(bytes ? bytes : 1);
        rc = acc ? PGC_OK
                 : mps_error(PGC_ERR_NOMEM,
                             "reduce (rank %d): no memory for %zu "
                             "bytes of a node's partial result",
                             g->rank, bytes);
    }
    if (rc == PGC_OK && h->node) {
        rc = pg_reduce(h->node, in, acc, count, op, 0);
    } else if (rc == PGC_OK && acc != in) {
        memcpy(acc, in, bytes);
    }
    if (rc == PGC_OK && h->leaders) {
        rc = pg_reduce(h->leaders, acc, acc, count, op, h->node_of[root]);
    }
    if (rc == PGC_OK && !root_leads && h->my_node == h->node_of[root] && (me_root || h->leaders)) {
        rc = to_root(h, acc, out, bytes, root, me_root);
    }
    if (acc != out) {
        free(acc);
    }
    return rc;
}
