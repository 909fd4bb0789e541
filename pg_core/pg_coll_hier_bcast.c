/*
 * Node-aware broadcast: within the root's node from the root, among the leaders from the
 * root's node's leader, then within every other node from its leader.
 *
 * Cost (N nodes of L ranks, m bytes): the root's node and the other nodes run their
 * broadcasts one after the other, each one round in shared memory up to 1 KiB (log2 L
 * rounds of the binomial tree otherwise), and the leaders' broadcast sends log2 N rounds
 * over the network; the flat binomial tree sends m across the network once per node that
 * holds part of a subtree, up to L times per node.
 */
#include "config.h"

#include "pg_coll_hier.h"
#include "pg_internal.h"
#include "pgc_status.h"

int pg_bcast_hier(struct pg_group *g, void *buf, size_t bytes, int root)
{
    struct pg_hier *h = g->hier;
    int rc = pg_hier_prepare(g);
    int rnode = h->node_of[root];

    if (rc == PGC_OK && h->node && h->my_node == rnode) {
        rc = pg_bcast(h->node, buf, bytes, h->pos[root]);
    }
    if (rc == PGC_OK && h->leaders) {
        rc = pg_bcast(h->leaders, buf, bytes, rnode);
    }
    if (rc == PGC_OK && h->node && h->my_node != rnode) {
        rc = pg_bcast(h->node, buf, bytes, 0);
    }
    return rc;
}
