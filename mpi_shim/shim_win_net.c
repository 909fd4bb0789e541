/*
 * shim_win_net.c - MPI_Put and MPI_Get between nodes as libfabric fi_write/fi_read (FI_RMA),
 * where the network provider offers it (fabric/fab_rma.c decides, MPISHIM_WIN_FI_RMA=0
 * forbids it).
 *
 * At creation (MPI_Win_create, and MPI_Win_allocate when the direct path did not map the
 * window) every member registers its window memory and the members allgather (address,
 * key, length): one allgather of 24 bytes each, and nothing per operation. A member whose
 * registration failed, or whose process has no FI_RMA, publishes length 0, and the others
 * keep active messages for it.
 *
 * What goes as FI_RMA: MPI_Put and MPI_Get (and MPI_Rput, MPI_Rget) to another member
 * reached through the network endpoint, contiguous on both sides (a predefined type, or a
 * derived one that is one block), of up to the provider's message size. Everything else
 * keeps active messages (shim_win_am.c): derived datatypes with holes (one fi_writev per
 * batch would need the target's pieces listed as rma_iovs, and active messages already
 * send them packed), accumulates (tcp;ofi_rxm's FI_ATOMIC is software in the target's
 * progress like our own active messages, and mixing the two would break the per-element
 * atomicity and ordering between accumulates), get_accumulate with MPI_NO_OP for the same
 * reason, the caller's own rank, and dynamic windows (MPI_Win_attach is not collective, so
 * there is no exchange to carry a new region's key).
 *
 * Completion: each transfer counts in w->pending (and the request's counter) like an active
 * message and counts down when libfabric reports it, a write once its data is in the
 * target's memory (FI_DELIVERY_COMPLETE). So fence, unlock, flush and complete wait for them
 * with no change, and a failure is reported by the call that waits, as a target's refusal is.
 */
#include "config.h"

#include "fab_rma.h"
#include "mps_log.h"
#include "pgc_status.h"
#include "shim_win.h"

#include <stdlib.h>
#include <string.h>

/* What a member publishes: len 0 when its memory cannot be reached through FI_RMA. */
struct net_entry {
    uint64_t addr, key, len;
};

struct shim_win_net {
    struct fab_mr *mr;         /* this member's registration, or NULL */
    struct net_entry *entries; /* [size] */
};

/* One fi_write or fi_read in flight. */
struct net_op {
    struct fab_req freq; /* first: what libfabric hands back */
    struct shim_win *w;
    int *counter;
    int target;
    bool get;
};

void shim_win_net_free(struct shim_win *w)
{
    if (!w->net) {
        return;
    }
    pg_rma_dereg(w->net->mr);
    free(w->net->entries);
    free(w->net);
    w->net = NULL;
}

/* This member's entry: its memory registered, or len 0 (the reason logged). */
static struct net_entry register_mine(struct shim_win *w, struct shim_win_net *n)
{
    struct net_entry mine = {0};
    struct fab_rma_key key;
    int rc;

    if (w->size < 2 || w->my_size <= 0) {
        return mine;
    }
    rc = pg_rma_reg(w->base, (size_t)w->my_size, &n->mr, &key);
    if (rc == PGC_OK) {
        mine = (struct net_entry){key.addr, key.key, (uint64_t)w->my_size};
    } else if (rc != PGC_ERR_UNSUPPORTED) {
        MPS_DEBUG("window: registering %ld bytes for FI_RMA failed (%s): active messages to "
                  "rank %d",
                  (long)w->my_size, mps_last_error(), w->rank);
    }
    return mine;
}

int shim_win_net_setup(struct shim_win *w)
{
    struct shim_win_net *n = calloc(1, sizeof(*n));
    struct net_entry mine;
    int rc = PGC_ERR_NOMEM;

    if (!n || !(n->entries = calloc((size_t)w->size, sizeof(*n->entries)))) {
        goto fail;
    }
    w->net = n;
    mine = register_mine(w, n);
    rc = pg_allgather(w->g, &mine, n->entries, sizeof(mine));
    if (rc != PGC_OK) {
        goto fail;
    }
    for (int r = 0; r < w->size; r++) {
        if (r != w->rank && n->entries[r].len > 0 && pg_rma_reachable(w->g, r)) {
            MPS_DEBUG("window: puts and gets to rank %d go as FI_RMA", r);
            return PGC_OK;
        }
    }
    /* Nobody to reach this way; keep the registration only if others may reach us. */
    if (!n->mr) {
        shim_win_net_free(w);
    }
    return PGC_OK;
fail:
    if (w->net) {
        shim_win_net_free(w);
    } else if (n) {
        free(n);
    }
    return rc;
}

static void net_done(struct fab_req *req, int status, size_t len)
{
    struct net_op *o = container_of(req, struct net_op, freq);
    struct shim_win *w = o->w;

    (void)len;
    if (status != PGC_OK) {
        int64_t none = 0, err = (int64_t)o->target << 32 | (uint32_t)shim_errclass(status);

        MPS_ERR("MPI_%s through FI_RMA to rank %d failed: %s", o->get ? "Get" : "Put", o->target,
                pgc_strerror(status));
        __atomic_compare_exchange_n(&w->remote_err, &none, err, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
    }
    if (o->counter) {
        __atomic_sub_fetch(o->counter, 1, __ATOMIC_ACQ_REL);
    }
    __atomic_sub_fetch(&w->pending, 1, __ATOMIC_ACQ_REL);
    free(o);
}

/* Whether op can go as one fi_write/fi_read: *len its bytes, *local the origin's buffer. */
static bool net_fits(const struct shim_win *w, const struct shim_rma *op, size_t *len, void **local)
{
    bool get = op->kind == SHIM_AM_GET;
    const struct shim_dtype *lt = get ? op->rtype : op->otype;
    const struct net_entry *e;

    if (!w->net || (op->kind != SHIM_AM_PUT && !get) || (get && op->op == SHIM_AM_NO_OP) ||
        op->target == w->rank || !lt || !op->ttype || !lt->contig || !op->ttype->contig) {
        return false;
    }
    e = &w->net->entries[op->target];
    *len = op->tcount * op->ttype->size;
    *local = get ? op->result : (void *)op->origin;
    return *len > 0 && e->len > 0 && op->disp >= 0 && (uint64_t)op->disp + *len <= e->len &&
           *len <= pg_rma_max() && pg_rma_reachable(w->g, op->target);
}

bool shim_win_net_op(struct shim_win *w, const struct shim_rma *op, int *rc)
{
    const struct net_entry *e;
    struct fab_rma_key key;
    struct net_op *o;
    void *local;
    size_t len;

    if (!net_fits(w, op, &len, &local)) {
        return false;
    }
    o = malloc(sizeof(*o));
    if (!o) {
        *rc = mps_error(PGC_ERR_NOMEM, "no memory for a one-sided transfer");
        return true;
    }
    *o = (struct net_op){
        .w = w, .counter = op->counter, .target = op->target, .get = op->kind == SHIM_AM_GET};
    o->freq.complete = net_done;
    e = &w->net->entries[op->target];
    key = (struct fab_rma_key){e->addr, e->key};
    __atomic_add_fetch(&w->pending, 1, __ATOMIC_ACQ_REL);
    if (o->counter) {
        __atomic_add_fetch(o->counter, 1, __ATOMIC_ACQ_REL);
    }
    *rc = o->get ? pg_rma_get(w->g, op->target, local, len, &key, (uint64_t)op->disp, &o->freq)
                 : pg_rma_put(w->g, op->target, local, len, &key, (uint64_t)op->disp, &o->freq);
    if (*rc != PGC_OK) {
        /* Never posted, so it never completes: count it out here. */
        if (o->counter) {
            __atomic_sub_fetch(o->counter, 1, __ATOMIC_ACQ_REL);
        }
        __atomic_sub_fetch(&w->pending, 1, __ATOMIC_ACQ_REL);
        free(o);
    }
    return true;
}
