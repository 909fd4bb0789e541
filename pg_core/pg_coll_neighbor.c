/*
 * pg_coll_neighbor.c - neighbourhood exchange: every receive and every send of a rank
 * posted in a single round (the MPI neighbourhood collectives on Cartesian and graph
 * topologies).
 *
 * Cost: one round, alpha + max(bytes in, bytes out) * beta per rank when the transport
 * overlaps the transfers. Receives are posted before sends so that eager messages from
 * fast neighbours land in posted buffers rather than the unexpected queue.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_group_sub.h"
#include "pg_internal.h"
#include "pg_sched.h"
#include "pgc_status.h"

static int check_peers(struct pg_group *g, const struct pg_nbr_xfer *x, int n)
{
    for (int i = 0; i < n; i++) {
        if (x[i].peer != PG_PROC_NULL && (x[i].peer < 0 || x[i].peer >= g->size)) {
            return mps_error(PGC_ERR_INVALID_RANK,
                             "pg_ineighbor: neighbour %d is rank %d, outside a group of %d", i,
                             x[i].peer, g->size);
        }
    }
    return PGC_OK;
}

int pg_ineighbor(struct pg_group *g, const struct pg_nbr_xfer *sends, int nsend,
                 const struct pg_nbr_xfer *recvs, int nrecv, struct pg_req *req)
{
    struct pg_sched *s;
    int rc = check_peers(g, sends, nsend);

    if (rc == PGC_OK) {
        rc = check_peers(g, recvs, nrecv);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    s = pg_sched_new(g, NULL, req);
    if (s) {
        pg_sched_sig(s, PG_COLL_NEIGHBOR, NULL, -1);
    }
    if (!s) {
        return PGC_ERR_NOMEM;
    }
    for (int i = 0; i < nrecv; i++) {
        if (recvs[i].peer != PG_PROC_NULL) {
            pg_sched_recv(s, recvs[i].buf, recvs[i].bytes, recvs[i].peer);
        }
    }
    for (int i = 0; i < nsend; i++) {
        if (sends[i].peer != PG_PROC_NULL) {
            pg_sched_send(s, sends[i].buf, sends[i].bytes, sends[i].peer);
        }
    }
    PG_LOCK();
    rc = pg_sched_start(s);
    PG_UNLOCK();
    return rc;
}
