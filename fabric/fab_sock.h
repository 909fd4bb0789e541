/*
 * fab_sock.h - our own TCP transport between nodes (issue 39; private to fabric/).
 *
 * The default for the peers of other nodes where the node has no RDMA device (fab_open.c's
 * net_is_sock), or MPISHIM_FABRIC_NET_PROVIDER=sock anywhere; MPISHIM_FABRIC_PROVIDER=sock
 * for every peer. It replaces the libfabric network endpoint
 * for those peers, so a job whose every remote peer uses it never loads libfabric: Debian's
 * libfabric 1.17 costs each process its providers' start-up (doc/cluster.md), and tcp;ofi_rxm
 * doubled the small-message latency against MPICH's and Open MPI's own TCP paths.
 *
 * Each rank listens on one TCP socket: on the first address MPISHIM_FABRIC_IFACE selects,
 * else on every address of both families, announcing those of the interfaces that are up
 * and running but loopback, IPv4 and IPv6 (else loopback); a peer connects to the first in
 * mps_ifaddr_order's order, and to the next where it fails. Everything fab.h promises
 * holds: AMs in order per peer, tagged data matched by (peer, tag) with truncation to the
 * posted length, completions from progress, a dead peer named with PGC_ERR_PEER_DEAD. See
 * fab_sock.c for the wire and its choices.
 */
#ifndef FAB_SOCK_H
#define FAB_SOCK_H

#include "fab_int.h"

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The name MPISHIM_FABRIC_PROVIDER / MPISHIM_FABRIC_NET_PROVIDER give this transport. */
#define FAB_SOCK_NAME "sock"

/* Opens the listening socket and the epoll set (f->sock); opens no libfabric. */
int fab_sock_open(struct fab *f);
/* This rank's port and the addresses it announces (fab_sock.c's sock_name) into name; its
 * length, or 0. */
size_t fab_sock_addr(const struct fab *f, void *name, size_t cap);
/* Records which of peer's announced addresses to reach it at (len bytes from its blob;
 * mps_ifaddr_order's first, the others kept to try); the connection is made at the first
 * send to it. */
int fab_sock_connect(struct fab *f, int peer, const void *name, size_t len);
/* The address of peer's that fab_sock_connect chose (what the probes watch). */
const struct sockaddr *fab_sock_peer_addr(const struct fab *f, int peer, socklen_t *len);
/* Whether peer is reached through this transport. */
bool fab_sock_peer(const struct fab *f, int peer);
/* What fab_sock_next_address did. */
enum fab_sock_next {
    FAB_SOCK_NEXT_NONE,  /* peer is connected, or had one address: its address stays */
    FAB_SOCK_NEXT_MOVED, /* the probes and the next connect go to peer's next address */
    FAB_SOCK_NEXT_LAST,  /* peer, not reached yet, has this address left alone */
};
/* A liveness probe of peer's address failed with err (ECONNREFUSED, EHOSTUNREACH, or
 * ETIMEDOUT: no answer): where no connection to peer was made yet and it announced other
 * addresses worth trying, moves to the next, as a failed connect would (a refusal may be
 * another host's, on a network that reuses the subnet; silence, an unrouted private
 * network's). */
enum fab_sock_next fab_sock_next_address(struct fab *f, int peer, int err);
int fab_sock_am_send(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                     size_t plen);
int fab_sock_tsend(struct fab *f, int peer, const void *buf, size_t len, uint64_t tag,
                   struct fab_req *req);
int fab_sock_trecv(struct fab *f, int peer, void *buf, size_t len, uint64_t tag,
                   struct fab_req *req);
/* Handles what the sockets have (one epoll_wait); the number of events, or an error. */
int fab_sock_progress(struct fab *f);
/* The epoll descriptor: readable when fab_sock_progress has something to do. */
int fab_sock_wait_fd(const struct fab *f);
/* PGC_ERR_NOMEM (with its message) once a clear-to-send that came before its send was lost
 * for want of memory, reserve included; else PGC_OK. */
int fab_sock_health(const struct fab *f);
/* PGC_ERR_PEER_DEAD naming the first peer whose connection ended without a goodbye. */
int fab_sock_alive(struct fab *f);
/* Says goodbye on every connection and closes them. */
void fab_sock_close(struct fab *f);

#endif
