/* mps_ifaddr.h - which of a host's addresses (IPv4 and IPv6) to announce, and which of a
 * peer's announced addresses to connect to: for fab_sock's listening sockets and for the
 * default store that rank 0 serves (pgc_store.c).
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
 *
 * IPv4 addresses are listed before IPv6 ones, so a dual-stack cluster keeps using IPv4 as
 * before and an IPv6-only one (or an IPv6-only data network named by MPISHIM_FABRIC_IFACE)
 * works too. IPv6 link-local addresses (fe80::/10) are never announced: connecting to one
 * needs the interface's index on the connecting host, which the announcing host cannot know.
 */
#ifndef MPS_IFADDR_H
#define MPS_IFADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

/* At most this many addresses are announced by one rank. */
#define MPS_IFADDR_MAX 12

/* One address of either family, as announced and picked. */
struct mps_inaddr {
    sa_family_t family; /* AF_INET or AF_INET6 */
    union {
        struct in_addr v4;
        struct in6_addr v6;
    } a;
};

/* A socket address of either family (what connect and bind take). */
union mps_sockaddr {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
};

/* This host's addresses worth announcing, at most max: IPv4 ones, then IPv6 ones, each in
 * interface order, of every interface that is up and running but loopback; or, where iface
 * (MPISHIM_FABRIC_IFACE) is an interface's name, of that interface; or, where it is a
 * subnet "address/prefix-length" (10.1.0.0/16, fd00:1::/64: the same on every node, where
 * interface names may differ), every address within it; both up, loopback included.
 * Returns the count (0: none), or -1 with errno set (EINVAL: iface has a '/' and is no
 * subnet; else the interfaces could not be listed). */
int mps_ifaddr_mine(const char *iface, struct mps_inaddr *out, int max);

/* The name of the interface iface selects into name: iface itself unless it is a subnet,
 * else the interface of this host's first address within it (for libfabric's providers,
 * which take interface names). 0, or -1 with errno set (EINVAL: no subnet; ENODEV: no
 * address of this host within it). */
int mps_ifaddr_iface_of(const char *iface, char *name, size_t cap);

/* The order to try peer[0..n-1] in (addresses a rank on another node announced, n at most
 * MPS_IFADDR_MAX): addresses this host has itself are left out (the peer is on another
 * node, so such an address is a copy on a virtual bridge); those on a subnet of one of this
 * host's interfaces come first, then the routed ones, each in the announced order. When
 * every one is also ours, {0}: the peer shares this host's addresses (the same host under
 * another node name, as the tests' MPISHIM_NODE_NAME makes it, or containers on the host's
 * network). The first is the one to connect to; the next is for when one fails: an address
 * on a subnet of ours may be another node's private network that nobody routes (per-node
 * container networks carved from one pool). Fills order[0..count); the count (0 when n is
 * 0). */
int mps_ifaddr_order(const struct mps_inaddr *peer, int n, int *order);

struct ifaddrs;
/* mps_ifaddr_order against mine, a getifaddrs list the caller keeps (NULL: none known), for
 * a rank that orders for many peers: a getifaddrs costs about 40 us here, once per peer of
 * another node at start-up. */
int mps_ifaddr_order_in(const struct ifaddrs *mine, const struct mps_inaddr *peer, int n,
                        int *order);

/* Whether a and b lie on the subnet of one of mine's interfaces that carry traffic: both
 * are reached through it (where one was not, the other most likely is not either). */
bool mps_ifaddr_same_subnet(const struct ifaddrs *mine, const struct mps_inaddr *a,
                            const struct mps_inaddr *b);

/* a as text ("10.0.0.1", "fd00::1": no brackets, what getaddrinfo takes); buf. */
const char *mps_inaddr_str(const struct mps_inaddr *a, char *buf, size_t cap);
/* text (an IPv4 or IPv6 address, no name) into out; whether it was one. */
bool mps_inaddr_parse(const char *text, struct mps_inaddr *out);
/* a with port (network order) as a socket address; its length. */
socklen_t mps_inaddr_sockaddr(const struct mps_inaddr *a, in_port_t port, union mps_sockaddr *out);
/* sa's address as text, for messages ("?" for another family); buf. */
const char *mps_sockaddr_host(const struct sockaddr *sa, char *buf, size_t cap);
/* sa's port in host order (0 for another family). */
unsigned mps_sockaddr_port(const struct sockaddr *sa);

/* The longest text of one address (IPv6, with a terminating NUL). */
#define MPS_INADDR_STRLEN INET6_ADDRSTRLEN

/* peer's n addresses as "a, b, c" into buf (for messages); buf. */
const char *mps_ifaddr_list(const struct mps_inaddr *peer, int n, char *buf, size_t cap);

#endif
