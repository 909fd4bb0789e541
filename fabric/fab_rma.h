/*
 * fab_rma.h - one-sided transfers through libfabric (FI_RMA): memory registration and
 * fi_write/fi_read to a peer's registered memory, for the windows of MPI one-sided
 * communication between nodes (mpi_shim/shim_win_net.c, through pg_core/pg_rma.c).
 *
 * The network endpoint is opened with FI_RMA only where the provider offers it on the very
 * endpoint the messages would get without it (fab_rma_offer, fab_rma.c), and not at all
 * with MPISHIM_WIN_FI_RMA=0. Peers reached through the shared-memory rings or libfabric's
 * shm provider never take this path (fab_rma_peer is false for them).
 *
 * Completions come as every other transfer's: req->complete(req, status, 0) from inside
 * fab_progress, once a write has reached the target's memory (FI_DELIVERY_COMPLETE) or a
 * read's data is in the local buffer. Software providers (tcp;ofi_rxm) move the data in the
 * target's progress, so a target must progress for the transfer to end, as for active
 * messages. A call that returns an error never completes its request later. Not
 * thread-safe: pg_core serializes, as for the rest of fab.h.
 */
#ifndef FAB_RMA_H
#define FAB_RMA_H

#include "fab.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct fab_mr;

/* What a peer needs to reach a registered region: the remote address of its first byte
 * (the virtual address, or 0 where the provider addresses by offset) and the key. */
struct fab_rma_key {
    uint64_t addr;
    uint64_t key;
};

/* Whether this process's network endpoint took FI_RMA (then fab_mr_reg can work). */
bool fab_rma_on(const struct fab *f);
/* Whether fab_rma_write/read reach peer: a connected peer through an endpoint with FI_RMA. */
bool fab_rma_peer(const struct fab *f, int peer);
/* The most bytes one fab_rma_write or fab_rma_read moves (0 without FI_RMA). */
size_t fab_rma_max(const struct fab *f);
/* Registers [base, base + len) for peers to write and read; *key is what they need. Honours
 * the domain's mr_mode (addresses by offset without FI_MR_VIRT_ADDR; a key of our choosing
 * without FI_MR_PROV_KEY). PGC_ERR_UNSUPPORTED without FI_RMA or len 0. */
int fab_mr_reg(struct fab *f, void *base, size_t len, struct fab_mr **mr, struct fab_rma_key *key);
/* Deregisters (no transfer to it may be in flight); NULL is fine. */
void fab_mr_close(struct fab_mr *mr);
/* Writes len bytes from buf to peer's region key at byte off of it; buf may be reused once
 * req completes. On -FI_EAGAIN it progresses and retries, until MPISHIM_TIMEOUT. */
int fab_rma_write(struct fab *f, int peer, const void *buf, size_t len,
                  const struct fab_rma_key *key, uint64_t off, struct fab_req *req);
/* Reads len bytes at byte off of peer's region key into buf, there once req completes. */
int fab_rma_read(struct fab *f, int peer, void *buf, size_t len, const struct fab_rma_key *key,
                 uint64_t off, struct fab_req *req);

#endif
