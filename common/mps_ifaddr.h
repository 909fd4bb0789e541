/* mps_ifaddr.h - which of a host's IPv4 addresses to announce, and which of a peer's
 * announced addresses to connect to: for fab_sock's listening sockets and for the default
 * store that rank 0 serves (pgc_store.c).
 *
 * A node of a real cluster often has several interfaces: a management network and a fast
 * one, docker0 or virbr0 with the *same* address on every node, a bridge without carrier.
 * Announcing one address (the first interface, or the host name) is wrong on such nodes in
 * ways that show up as a dead peer or a hang. So a rank announces every address of an
 * interface that is up and running (loopback left out), and the peer picks: never an
 * address it has itself (the peer is on another node, so such an address is a copy on a
 * virtual bridge, not the peer, unless the peer has no other), first one on a subnet of its
 * own interfaces, else the first one left (reached through a router). Open MPI's btl/tcp
 * matches subnets the same way; MPICH asks the user (-iface).
 */
#ifndef MPS_IFADDR_H
#define MPS_IFADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>

/* At most this many addresses are announced by one rank. */
#define MPS_IFADDR_MAX 12

/* This host's IPv4 addresses worth announcing, at most max, in interface order: every
 * interface that is up and running but loopback, or, when iface names one, that
 * interface's (loopback included). Returns the count (0: none), or -1 when the interfaces
 * cannot be listed (errno set). */
int mps_ifaddr_mine(const char *iface, struct in_addr *out, int max);

/* The index among peer[0..n-1] (addresses a rank on another node announced) of the one to
 * connect to: addresses this host has itself are skipped; the first on a subnet of one of
 * this host's interfaces wins, else the first left. When every one is also ours, 0: the
 * peer shares this host's addresses (the same host under another node name, as the tests'
 * MPISHIM_NODE_NAME makes it, or containers on the host's network). -1 when n is 0. */
int mps_ifaddr_pick(const struct in_addr *peer, int n);

struct ifaddrs;
/* mps_ifaddr_pick against mine, a getifaddrs list the caller keeps (NULL: none known), for
 * a rank that picks for many peers: a getifaddrs costs about 40 us here, once per peer of
 * another node at start-up. */
int mps_ifaddr_pick_in(const struct ifaddrs *mine, const struct in_addr *peer, int n);

/* peer's n addresses as "a, b, c" into buf (for messages); buf. */
const char *mps_ifaddr_list(const struct in_addr *peer, int n, char *buf, size_t cap);

#endif
