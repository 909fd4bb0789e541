/*
 * fab_rma.c - FI_RMA on the network endpoint: whether to ask for it, memory registration,
 * fi_write and fi_read (contract in fab_rma.h).
 *
 * Why the same endpoint and not a second one: a second endpoint would mean a second set of
 * connections, a second address to publish and a second CQ that every fab_progress polls,
 * for every rank, windows or not. Asking the one endpoint for FI_RMA costs nothing where
 * the provider's offer stays the same endpoint: fab_rma_offer asks with FI_RMA and keeps
 * that offer only if it is the same provider, fabric and domain with the same sizes the
 * message path reads (inject, message size, iovs, queue sizes) and no mode bit we did not
 * have; otherwise the endpoint opens as before and windows keep active messages. The
 * mr_mode bits we honour are named in the hints (FI_MR_VIRT_ADDR, FI_MR_PROV_KEY,
 * FI_MR_ALLOCATED), never FI_MR_LOCAL (the message path passes no descriptors) nor
 * FI_MR_ENDPOINT.
 */
#include "config.h"

#include "fab_rma.h"

#include "fab_int.h"
#include "fab_shm.h"
#include "mps_config.h"
#include "mps_log.h"
#include "mps_stats.h"
#include "pgc_status.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <stdlib.h>
#include <string.h>

#define FAB_RMA_CAPS (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)
#define FAB_RMA_MR_MODE (FI_MR_VIRT_ADDR | FI_MR_PROV_KEY | FI_MR_ALLOCATED)

struct fab_mr {
    struct fid_mr *mr;
};

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Whether the FI_RMA offer is the endpoint base describes, as far as messages can tell. */
static bool same_endpoint(const struct fi_info *base, const struct fi_info *rma)
{
    return same_str(base->fabric_attr->prov_name, rma->fabric_attr->prov_name) &&
           same_str(base->fabric_attr->name, rma->fabric_attr->name) &&
           same_str(base->domain_attr->name, rma->domain_attr->name) &&
           base->tx_attr->inject_size == rma->tx_attr->inject_size &&
           base->tx_attr->iov_limit == rma->tx_attr->iov_limit &&
           base->tx_attr->size == rma->tx_attr->size && base->rx_attr->size == rma->rx_attr->size &&
           base->ep_attr->max_msg_size == rma->ep_attr->max_msg_size &&
           (rma->mode & ~base->mode) == 0 && (rma->caps & FI_RMA) != 0 &&
           (rma->domain_attr->mr_mode & ~(uint64_t)FAB_RMA_MR_MODE) == 0;
}

/* The first offer of base's provider, fabric and domain for our hints plus FI_RMA. */
static struct fi_info *rma_info(const struct fi_info *base)
{
    struct fi_info *hints = fab_make_hints(base->fabric_attr->prov_name), *info = NULL;
    if (!hints) {
        return NULL;
    }
    hints->caps |= FAB_RMA_CAPS;
    hints->domain_attr->mr_mode = FAB_RMA_MR_MODE;
    free(hints->domain_attr->name);
    hints->domain_attr->name = base->domain_attr->name ? strdup(base->domain_attr->name) : NULL;
    int rc =
        fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (rc != 0 || !info) {
        MPS_DEBUG("fab_open: %s offers no FI_RMA (fi_getinfo: %s)", base->fabric_attr->prov_name,
                  fi_strerror(-rc));
        return NULL;
    }
    struct fi_info *first = fi_dupinfo(info); /* the first offer alone, as get_info keeps */
    fi_freeinfo(info);
    return first;
}

struct fi_info *fab_rma_offer(struct fi_info *base, bool *rma_on)
{
    *rma_on = false;
    if (!mps_config_int(MPS_CFG_WIN_FI_RMA)) {
        MPS_DEBUG("fab_open: MPISHIM_WIN_FI_RMA=0: FI_RMA not asked for");
        return base;
    }
    struct fi_info *rma = rma_info(base);
    if (!rma) {
        return base;
    }
    if (!same_endpoint(base, rma)) {
        MPS_DEBUG("fab_open: %s with FI_RMA is another endpoint (inject %zu/%zu B, mode "
                  "0x%llx/0x%llx): windows keep active messages",
                  base->fabric_attr->prov_name, base->tx_attr->inject_size,
                  rma->tx_attr->inject_size, (unsigned long long)base->mode,
                  (unsigned long long)rma->mode);
        fi_freeinfo(rma);
        return base;
    }
    MPS_DEBUG("fab_open: %s offers FI_RMA on the same endpoint (mr_mode 0x%x)",
              rma->fabric_attr->prov_name, (unsigned)rma->domain_attr->mr_mode);
    fi_freeinfo(base);
    *rma_on = true;
    return rma;
}

bool fab_rma_on(const struct fab *f)
{
    return f && f->net && f->net->rma;
}

bool fab_rma_peer(const struct fab *f, int peer)
{
    return f && peer >= 0 && peer < f->size && !fab_shm_am_peer(f, peer) && f->peers[peer].ep &&
           f->peers[peer].ep->rma;
}

size_t fab_rma_max(const struct fab *f)
{
    return fab_rma_on(f) ? f->net->info->ep_attr->max_msg_size : 0;
}

int fab_mr_reg(struct fab *f, void *base, size_t len, struct fab_mr **out, struct fab_rma_key *key)
{
    struct fab_mr *m = NULL;
    int rc;

    *out = NULL;
    if (!fab_rma_on(f) || len == 0) {
        return PGC_ERR_UNSUPPORTED;
    }
    struct fab_ep *e = f->net;
    m = calloc(1, sizeof(*m));
    if (!m) {
        return mps_error(PGC_ERR_NOMEM, "fab_mr_reg: no memory");
    }
    /* Keys are ours to choose without FI_MR_PROV_KEY: unique per domain is all it takes. */
    uint64_t want = (e->mr_mode & FI_MR_PROV_KEY) ? 0 : ++e->next_key;
    rc =
        fi_mr_reg(e->domain, base, len, FI_REMOTE_READ | FI_REMOTE_WRITE, 0, want, 0, &m->mr, NULL);
    if (rc != 0) {
        rc = fab_fi_error(rc, "fi_mr_reg", -1);
        goto fail;
    }
    key->key = fi_mr_key(m->mr);
    if (key->key == FI_KEY_NOTAVAIL) {
        rc = mps_error(PGC_ERR_FABRIC, "fab_mr_reg: %s gave no key for the region", e->prov);
        goto fail;
    }
    key->addr = (e->mr_mode & FI_MR_VIRT_ADDR) ? (uint64_t)(uintptr_t)base : 0;
    *out = m;
    return PGC_OK;
fail:
    if (m->mr) {
        fi_close(&m->mr->fid);
    }
    free(m);
    return rc;
}

void fab_mr_close(struct fab_mr *m)
{
    if (!m) {
        return;
    }
    int rc = fi_close(&m->mr->fid);
    if (rc != 0) {
        MPS_WARN("fab_mr_close: fi_close failed: %s", fi_strerror(-rc));
    }
    free(m);
}

static int check_rma(const struct fab *f, int peer, size_t len, const struct fab_req *req,
                     const char *call)
{
    if (mps_unlikely(!fab_rma_peer(f, peer))) {
        return mps_error(PGC_ERR_INVALID_RANK, "%s: rank %d is not reached through FI_RMA", call,
                         peer);
    }
    if (mps_unlikely(!req || !req->complete)) {
        return mps_error(PGC_ERR_REQUEST, "%s: request without a complete function", call);
    }
    if (mps_unlikely(len > fab_rma_max(f))) {
        return mps_error(PGC_ERR_INVALID_COUNT, "%s: %zu B to rank %d exceed the %s limit of %zu B",
                         call, len, peer, f->net->prov, fab_rma_max(f));
    }
    return PGC_OK;
}

/* One fi_writemsg or fi_read. A write completes once it reached the target's memory, not
 * just its transport: the epoch that waits for it may be closed by messages that take
 * another way (a barrier through other ranks), which must not find the data in flight. */
static ssize_t post(struct fab_peer *p, bool write, void *buf, size_t len,
                    const struct fab_rma_key *key, uint64_t off, struct fab_req *req)
{
    struct iovec iov = {.iov_base = buf, .iov_len = len};
    struct fi_rma_iov riov = {.addr = key->addr + off, .len = len, .key = key->key};
    struct fi_msg_rma msg = {.msg_iov = &iov,
                             .desc = NULL,
                             .iov_count = 1,
                             .addr = p->addr,
                             .rma_iov = &riov,
                             .rma_iov_count = 1,
                             .context = &req->ctx};

    if (!write) {
        return fi_read(p->ep->ep, buf, len, NULL, p->addr, riov.addr, key->key, &req->ctx);
    }
    return fi_writemsg(p->ep->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
}

/* fab_rma_write and fab_rma_read: checks, then posts, retrying while the provider is full. */
static int transfer(struct fab *f, int peer, bool write, void *buf, size_t len,
                    const struct fab_rma_key *key, uint64_t off, struct fab_req *req)
{
    const char *call = write ? "fab_rma_write" : "fab_rma_read";
    int rc = check_rma(f, peer, len, req, call);
    struct fab_wait w = {0};
    ssize_t frc = 0;

    if (rc != PGC_OK) {
        return rc;
    }
    req->fab_len = 0;
    while ((frc = post(&f->peers[peer], write, buf, len, key, off, req)) == -FI_EAGAIN) {
        if ((rc = fab_wait_step(f, &w, peer, call)) != PGC_OK) {
            return rc;
        }
    }
    if (frc) {
        return fab_fi_error((int)frc, write ? "fi_writemsg" : "fi_read", peer);
    }
    mps_stats.fab_rma_ops++;
    mps_stats.fab_rma_bytes += len;
    return PGC_OK;
}

int fab_rma_write(struct fab *f, int peer, const void *buf, size_t len,
                  const struct fab_rma_key *key, uint64_t off, struct fab_req *req)
{
    return transfer(f, peer, true, (void *)buf, len, key, off, req);
}

int fab_rma_read(struct fab *f, int peer, void *buf, size_t len, const struct fab_rma_key *key,
                 uint64_t off, struct fab_req *req)
{
    return transfer(f, peer, false, buf, len, key, off, req);
}
