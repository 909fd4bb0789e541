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
 */
#include "config.h"

#include "pg_coll_hier.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <string.h>

int pg_allreduce_hier(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op)
{
    struct pg_hier *h = g->hier;
    size_t bytes = count * op->elem_size;
    int rc = pg_hier_prepare(g);

    if (rc != PGC_OK) {
        goto fail;
    }
    if (h->node) {
        rc = pg_reduce(h->node, in, out, count, op, 0);
    } else if (in != out) {
        memcpy(out, in, bytes);
    }
    if (rc == PGC_OK && h->leaders) {
        rc = pg_allreduce(h->leaders, out, out, count, op);
    }
    if (rc == PGC_OK && h->node) {
        rc = pg_bcast(h->node, out, bytes, 0);
    }
fail:
    return rc;
}
