/*
 * fab.h - the transport: libfabric RDM endpoints, chosen per peer.
 *
 * A process opens up to two endpoints: one on the shm provider for peers on its node and
 * one on a network provider (verbs, efa or tcp;ofi_rxm, whatever fi_getinfo offers) for
 * peers on other nodes. Which one a peer uses follows from the node names the bootstrap
 * reports, never from whether shm happens to connect. MPISHIM_FABRIC_PROVIDER forces one
 * provider for every peer. Our own TCP sockets (fab_sock.h), which load no libfabric, replace
 * the libfabric network endpoint where the node has no RDMA device, or where
 * MPISHIM_FABRIC_NET_PROVIDER or MPISHIM_FABRIC_PROVIDER names "sock".
 *
 * Two services:
 *  - active messages (AM): small, ordered (send-after-send per peer) messages of at most
 *    fab_am_max() bytes, delivered to the handler given to fab_open from inside
 *    fab_progress. The handler's buffer is valid only during the call; the handler must
 *    not call fab_* send functions (it queues work instead).
 *  - tagged data transfers of any size to/from one named peer (the rendezvous data of
 *    large messages): the provider's single-copy path (CMA for shm, its own rendezvous
 *    for rxm). A receive names the peer and the exact tag; FAB_TAG_RNDV must be set in
 *    the tag (AM traffic uses tags without it). Caveat (libfabric 1.17 shm without CMA,
 *    e.g. FI_SHM_DISABLE_CMA=1 or ptrace refused): its SAR fallback answers -FI_EAGAIN to
 *    every send to a peer while a large send to that peer waits for its receive, so an AM
 *    sent after fab_tsend to the same peer stalls until the receiver posts fab_trecv
 *    (fab_am_send then times out). fab_open enables CMA under Yama (PR_SET_PTRACER).
 *
 * Completions are reported by calling req->complete from inside fab_progress (which
 * fab_am_send, fab_tsend and fab_trecv also call while the provider answers -FI_EAGAIN).
 * complete(req, status, len): len is the bytes received for a receive (the buffer's length
 * when status is PGC_ERR_TRUNCATE) and 0 for a send. A call that returns an error never
 * completes its request later. A receive into a buffer shorter than the message completes
 * with PGC_ERR_TRUNCATE on every provider (the rest of the message is discarded) and the
 * matching send completes normally. Not thread-safe: pg_core serializes.
 * Foreign codes (-FI_E*) are converted to PGC_ERR_* here and logged once with
 * fi_strerror; they never leak upwards.
 */
#ifndef FAB_H
#define FAB_H

/* mps_util.h first: its container_of must win over the one <rdma/fabric.h> defines when
 * none exists (the two definitions differ in spelling, which would warn). */
#include "mps_util.h"

#include <rdma/fabric.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FAB_ADDR_MAX 256          /* bytes of one rank's published address blob */
#define FAB_TAG_RNDV (1ULL << 63) /* set in every tag passed to fab_tsend/fab_trecv */

struct fab;
struct fab_req;

typedef void (*fab_complete_fn)(struct fab_req *req, int status, size_t len);

/* What an AM handler did with a message. */
enum fab_am_result {
    FAB_AM_TAKEN,   /* handled or kept by the caller */
    FAB_AM_MATCHED, /* handled by a receive the caller had posted */
    FAB_AM_DEFER    /* not taken: hand it over again later (only when may_defer) */
};
/* AM handler: peer is the sender's rank, buf/len the message (valid during the call).
 * may_defer: the transport can keep the message where it is and hand it over again at a
 * later progress, in order; fab_shm sets it (with a core per rank only) once an earlier
 * message from the same sender in the same drain was MATCHED, never for the first one, so
 * every drain takes at least one. A receiver whose sender runs ahead then keeps the next
 * messages in the ring rather than copying them aside, and its next receive, posted as
 * soon as the wait returns, takes them straight from there (see fab_shm.c's drain). */
typedef enum fab_am_result (*fab_am_fn)(void *arg, int peer, const void *buf, size_t len,
                                        bool may_defer);

/* Embed in the caller's request; container_of gets back to it in complete(). */
struct fab_req {
    struct fi_context2 ctx; /* must stay first: libfabric hands it back */
    fab_complete_fn complete;
    size_t fab_len; /* private to fabric (the posted receive length) */
};

struct fab_opts {
    int rank, size;
    const char *nodes; /* size * node_stride bytes: node name of every rank */
    size_t node_stride;
    fab_am_fn am_handler;
    void *am_arg;
    size_t am_max; /* requested AM payload size (MPISHIM_EAGER_MAX + header) */
    long spin;     /* polls before a wait for room yields (0: MPISHIM_SPIN_COUNT); the
                    * caller's choice, which is 1 when a node has more ranks than cores */
};

/* Opens the endpoints this process may need (both when the node names are mixed). */
int fab_open(const struct fab_opts *opts, struct fab **out);
/* This rank's address blob (FAB_ADDR_MAX bytes, zero padded), to be allgathered. */
int fab_get_addr(struct fab *f, void *blob);
/* Inserts every rank's blob (size * FAB_ADDR_MAX bytes, rank order) in the AVs. */
int fab_connect(struct fab *f, const void *blobs);
/* Every rank's fab_connect has returned (the caller ran a barrier): names that were only
 * needed to connect are removed, so a crash leaves nothing behind in /dev/shm. */
void fab_connect_done(struct fab *f);
int fab_close(struct fab *f);

size_t fab_am_max(const struct fab *f);
/* Whether len bytes from buf are worth sending to peer as one AM. Through a libfabric
 * provider up to MPISHIM_NET_EAGER_MAX, past whose own eager size a provider such as
 * ofi_rxm switches to a slower protocol for the AM (16 KiB over tcp: 63 us as one AM, 25 us
 * as our rendezvous). Through the shared-memory rings any size, except past
 * MPISHIM_HEAP_EAGER_MAX (4 KiB) from a buffer in the shared heap when each local rank has
 * a core: the receiver's one memcpy straight from it beats the ring's two copies from 3 KiB
 * (2-rank ping-pong: 8 KiB 1.7 -> 0.6 us, 32 KiB 6.1 -> 1.6 us; bandwidth at 8-32 KiB
 * 1.3-1.9x). A collective's send (coll) has its own limit, MPISHIM_COLL_HEAP_EAGER_MAX
 * (8 KiB): its exchanges wait for the rendezvous's FIN, which cost a 2-rank allgather of 8
 * KiB blocks 2.2 -> 2.5 us, but from 16 KiB the single copy wins (2 ranks, 16-32 KiB:
 * allgather, alltoall 0.54-0.66 of the time; reduce_scatter at 32-64 KiB 0.68-0.74). buf
 * NULL: no such exception. */
bool fab_eager_fits(const struct fab *f, int peer, const void *buf, size_t len, bool coll);
/* Sends hdr and payload as one AM. Returns when both buffers may be reused (inject or an
 * internal copy); on -FI_EAGAIN it progresses and retries, giving up after MPISHIM_TIMEOUT. */
int fab_am_send(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                size_t plen);
/* Whether fab_am_send_zc sends to peer (a valid rank) without copying the payload: a peer
 * reached through a libfabric provider that takes two iovs. Otherwise it is fab_am_send. */
bool fab_am_zcopy(const struct fab *f, int peer);
/* fab_am_send without the copy of payload, where fab_am_zcopy says so: hdr may be reused at
 * return, payload not until req->complete has run (from fab_progress, with the outcome). The
 * provider sends it as one message from two iovs, so the receiver sees what fab_am_send
 * would have sent. To other peers it is fab_am_send, and req->complete runs before it
 * returns. */
int fab_am_send_zc(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                   size_t plen, struct fab_req *req);
int fab_tsend(struct fab *f, int peer, const void *buf, size_t len, uint64_t tag,
              struct fab_req *req);
int fab_trecv(struct fab *f, int peer, void *buf, size_t len, uint64_t tag, struct fab_req *req);
/* Polls every completion queue once; returns the number of events handled or an error. */
int fab_progress(struct fab *f);
/* Whether fab_sleep can wait in the kernel for everything this process may receive: every
 * peer is reached through one libfabric endpoint whose CQ has a file descriptor (a socket
 * provider, when no peer shares the node or one such provider is forced), or through our
 * sockets (their epoll descriptor). */
bool fab_can_sleep(const struct fab *f);
/* Sleeps until the endpoint's sockets have something for fab_progress or timeout_ms passed,
 * where fab_can_sleep says it may. 1: it slept (whatever woke it); 0: the provider had work
 * pending, progress first; an error code. A signal ends the sleep early (1). */
int fab_sleep(struct fab *f, int timeout_ms);
/* fab_sleep in two halves, for a thread that may not hold the provider while it sleeps
 * (pg_async.c), where fab_can_sleep says it may. fab_sleep_fd: the wait fd (valid until
 * fab_close) and the provider's name. fab_sleep_arm (a provider call: under the caller's
 * lock): 1 when the fd can now be trusted, 0 when the provider had work pending (progress
 * first), or an error code. fab_sleep_poll (no provider call, no lock needed): sleeps on the
 * fd as fab_sleep does; prov names the provider in its error. */
int fab_sleep_fd(const struct fab *f, const char **prov);
int fab_sleep_arm(struct fab *f);
int fab_sleep_poll(int fd, const char *prov, int timeout_ms);
/* The pause of a waiter that has waited long (pg_progress.c): up to ns nanoseconds, ended
 * at once when one of our sockets to other nodes (fab_sock) turns readable, so that their
 * messages do not wait out the pause; a plain nanosleep where there is none (rings alone,
 * a libfabric endpoint, f NULL). No provider call: no lock needed. */
void fab_nap(struct fab *f, long ns);
/* The oldest AM from peer not yet handed to the handler, looked at in place, for a caller
 * that can take it without progress (a blocking receive). 1: it is at *buf (*len bytes)
 * and stays there until fab_am_consume(f, peer) or the next progress; 0: nothing from peer
 * is waiting; -1: the next thing from peer is not an AM, or peer is not reached through the
 * shared-memory rings (progress must handle it). */
int fab_am_peek(struct fab *f, int peer, const void **buf, size_t *len);
/* Drops the AM that fab_am_peek returned 1 for. */
void fab_am_consume(struct fab *f, int peer);
/* Shared memory for collectives among the ranks of a node (pg_coll_shm.c lays it out):
 * FAB_COLL_BYTES in each rank's ring segment, written by its owner and readable by every
 * rank of the node. Returns that area of rank (this rank included), or NULL when rank is
 * not reached through the shared-memory rings (another node, no rings here). */
#define FAB_COLL_BYTES (272u * 1024u)
void *fab_coll_area(const struct fab *f, int rank);
/* A peer of this node whose process is gone (no such process, or one that exited and was not
 * reaped yet), or -1 when every ring peer lives; *pid gets its process id. A few system
 * calls per local peer: for waits that have lasted long enough to suspect a death. */
int fab_dead_peer(const struct fab *f, int *pid);
/* The process id of peer when this process may copy to and from peer's memory with
 * process_vm_readv/process_vm_writev (CMA): peer runs on this node, is reached through the
 * shared-memory rings, and the kernel let fab_open's probe read memory that way (Yama,
 * same user). 0 otherwise: another node, a forced provider, CMA refused. The one place
 * that decides "CMA works to this peer", for tagged data here and for mpi_shim's one-sided
 * put and get (through pg_cma_pid). Fixed once fab_connect returned. */
int fab_cma_pid(const struct fab *f, int peer);
/* PGC_ERR_PEER_DEAD, with a message naming the rank, its node and its address, when a rank
 * reached over tcp;ofi_rxm or our sockets (another node, or every peer when forced) is
 * found gone: its endpoint's listening socket refuses a connection, or (sock) a connection
 * of it ended without a goodbye. Otherwise PGC_OK, also
 * while the probes have no answer yet (a node cut off never answers). Each call collects
 * the probes' answers and starts the next few (at most 4 in flight, a peer at most every
 * 0.25 s; fab_probe.c): for waits that have lasted long enough to suspect a death. */
int fab_remote_alive(struct fab *f);
/* fab_remote_alive, looked at again until a probe finds a peer gone or limit seconds passed:
 * for a request the fabric failed (a provider may cancel a dead peer's transfer before any
 * probe answered), so that its error names the dead rank. PGC_OK at once without probes. */
int fab_remote_verdict(struct fab *f, double limit);
/* PGC_OK, or PGC_ERR_NOMEM (with its message) once the intra-node path lost a control
 * record, or our sockets a clear-to-send, for want of memory, reserve included: a transfer
 * that will not complete. */
int fab_health(const struct fab *f);
/* The provider name used for peer (for the info tool and the logs). */
const char *fab_peer_provider(const struct fab *f, int peer);
/* The version of the libfabric loaded at run time (FI_VERSION encoding), 0 if none. */
uint32_t fab_runtime_version(void);
/* Human-readable list of the providers fi_getinfo offers for RDM+tagged (info tool). */
int fab_list_providers(char *buf, size_t len);

#endif
