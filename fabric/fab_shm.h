/*
 * fab_shm.h - the intra-node fast path (private to fabric/).
 *
 * Between ranks of one node, active messages go through single-producer single-consumer
 * byte rings in shared memory (one ring per sender in each receiver's segment), and tagged
 * data is copied once, by the receiver, with process_vm_readv (CMA) from the sender's
 * buffer. This is what Open MPI's vader and MPICH's shm do; it costs one cache-line
 * transfer for a small message instead of the libfabric shm provider's command queues.
 * Buffers in a peer's shared heap (fab_heap.h: what malloc handed out in large blocks
 * after the rings came up) are copied with memcpy instead, through a mapping of it.
 * libfabric still carries everything between nodes, and local data when CMA is refused.
 */
#ifndef FAB_SHM_H
#define FAB_SHM_H

#include "fab_int.h"
/* The ring's layout and records (FAB_SHM_RING_BYTES, FAB_SHM_REC_ALIGN, FAB_SHM_REC_HDR),
 * for fab_shm.c and for the tests that lay records out as it does. */
#include "fab_shm_wire.h"

#include <stdbool.h>

/* Creates this rank's segment when the fast path applies (intra-node peers, no forced
 * provider, MPISHIM_SHM_RING=1). f->ring stays NULL when it does not. */
int fab_shm_open(struct fab *f);
/* Whether CMA works here (tagged data can bypass libfabric). */
bool fab_shm_cma(const struct fab *f);
/* What a peer needs to map our segment: our pid and a nonce, part of the address blob. */
void fab_shm_addr(const struct fab *f, uint32_t *pid, uint32_t *nonce);
/* Maps the segment of a peer on this node. */
int fab_shm_connect(struct fab *f, int peer, uint32_t pid, uint32_t nonce);
/* Removes our segment's name (every peer has mapped it). */
void fab_shm_unlink(struct fab *f);
void fab_shm_close(struct fab *f);

/* Whether peer's AMs (and, with CMA, its data) go through the fast path. */
bool fab_shm_am_peer(const struct fab *f, int peer);
bool fab_shm_data_peer(const struct fab *f, int peer);
/* Whether a rendezvous from buf is one memcpy by the receiver that costs the sender no CPU:
 * buf lies in the shared heap and every local rank has a core (a receiver that must wait
 * for the core makes the sender wait too). */
bool fab_shm_heap_direct(const struct fab *f, const void *buf);
int fab_shm_am_send(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                    size_t plen);
int fab_shm_tsend(struct fab *f, int peer, const void *buf, size_t len, uint64_t tag,
                  struct fab_req *req);
int fab_shm_trecv(struct fab *f, int peer, void *buf, size_t len, uint64_t tag,
                  struct fab_req *req);
/* fab_am_peek and fab_am_consume for a peer whose AMs come through the rings. */
int fab_shm_am_peek(struct fab *f, int peer, const void **buf, size_t *len);
void fab_shm_am_consume(struct fab *f, int peer);
/* Drains the inbound rings; returns the number of records handled. */
int fab_shm_progress(struct fab *f);

#endif
