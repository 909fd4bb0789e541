/*
 * pg_rma.c - FI_RMA for mpi_shim's windows: group ranks to world ranks and the world lock
 * around fabric/fab_rma.c, so that mpi_shim needs no transport (contract in pg.h).
 */
#include "config.h"

#include "fab_rma.h"
#include "pg.h"
#include "pg_internal.h"
#include "pgc_status.h"

bool pg_rma_reachable(struct pg_group *g, int rank)
{
    return pg_w.fab && rank >= 0 && rank < g->size && fab_rma_peer(pg_w.fab, g->ranks[rank]);
}

size_t pg_rma_max(void)
{
    return pg_w.fab ? fab_rma_max(pg_w.fab) : 0;
}

int pg_rma_reg(void *base, size_t len, struct fab_mr **mr, struct fab_rma_key *key)
{
    int rc;

    *mr = NULL;
    if (!pg_w.fab) {
        return PGC_ERR_UNSUPPORTED;
    }
    PG_LOCK();
    rc = fab_mr_reg(pg_w.fab, base, len, mr, key);
    PG_UNLOCK();
    return rc;
}

void pg_rma_dereg(struct fab_mr *mr)
{
    if (!mr) {
        return;
    }
    PG_LOCK();
    fab_mr_close(mr);
    PG_UNLOCK();
}

int pg_rma_put(struct pg_group *g, int rank, const void *buf, size_t len,
               const struct fab_rma_key *key, uint64_t off, struct fab_req *req)
{
    int rc;

    PG_LOCK();
    rc = fab_rma_write(pg_w.fab, g->ranks[rank], buf, len, key, off, req);
    PG_UNLOCK();
    return rc;
}

int pg_rma_get(struct pg_group *g, int rank, void *buf, size_t len, const struct fab_rma_key *key,
               uint64_t off, struct fab_req *req)
{
    int rc;

    PG_LOCK();
    rc = fab_rma_read(pg_w.fab, g->ranks[rank], buf, len, key, off, req);
    PG_UNLOCK();
    return rc;
}
