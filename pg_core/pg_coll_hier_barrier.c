/*
 * Node-aware barrier: a barrier within each node (every rank has arrived at its leader),
 * one among the leaders (every node has arrived), and one within each node again (the
 * leader has seen every node).
 *
 * Cost (N nodes of L ranks): two rounds in shared memory (one stamp per rank,
 * pg_coll_shm.c) and log2 N rounds of the dissemination barrier over the network, one
 * message per node and round; the flat barrier sends log2(N·L) rounds from every rank.
 */
#include "config.h"

#include "pg_coll_hier.h"
#include "pg_internal.h"
#include "pgc_status.h"

int pg_barrier_hier(struct pg_group *g)
{
    struct pg_hier *h = g->hier;
    int rc = pg_hier_prepare(g);

    if (rc == PGC_OK && h->node) {
        rc = pg_barrier(h->node);
    }
    if (rc == PGC_OK && h->leaders) {
        rc = pg_barrier(h->leaders);
    }
    if (rc == PGC_OK && h->node) {
        rc = pg_barrier(h->node);
    }
    return rc;
}
