/* mps_ifaddr.c - announcing and picking IPv4 and IPv6 addresses (see mps_ifaddr.h for why). */
#include "mps_ifaddr.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* a's bytes in network order and their count (4 or 16); NULL for another family. */
static const uint8_t *bytes_of(const struct sockaddr *sa, size_t *len)
{
    *len = 0;
    if (sa && sa->sa_family == AF_INET) {
        *len = 4;
        return (const uint8_t *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr;
    }
    if (sa && sa->sa_family == AF_INET6) {
        *len = 16;
        return ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
    }
    return NULL;
}

static const uint8_t *inaddr_bytes(const struct mps_inaddr *a, size_t *len)
{
    *len = a->family == AF_INET ? 4 : 16;
    return a->family == AF_INET ? (const uint8_t *)&a->a.v4 : a->a.v6.s6_addr;
}

/* What MPISHIM_FABRIC_IFACE names: nothing (every interface), an interface, or a subnet. */
struct selector {
    const char *name; /* an interface name, or NULL */
    bool subnet;      /* net/prefix: every address within it, on any interface */
    struct mps_inaddr net;
    int prefix;
};

/* text into sel; false where it has a '/' but is no subnet "address/prefix-length". */
static bool parse_selector(const char *text, struct selector *sel)
{
    char addr[MPS_INADDR_STRLEN], *end;
    const char *slash = text ? strchr(text, '/') : NULL;
    long prefix;

    memset(sel, 0, sizeof(*sel));
    if (!slash) {
        sel->name = text && *text ? text : NULL;
        return true;
    }
    prefix = strtol(slash + 1, &end, 10);
    if ((size_t)(slash - text) >= sizeof(addr) || slash[1] == '\0' || *end || prefix < 0) {
        return false;
    }
    memcpy(addr, text, (size_t)(slash - text));
    addr[slash - text] = '\0';
    if (!mps_inaddr_parse(addr, &sel->net) || prefix > (sel->net.family == AF_INET ? 32 : 128)) {
        return false;
    }
    sel->subnet = true;
    sel->prefix = (int)prefix;
    return true;
}

/* Whether the first bits of a and b agree. */
static bool same_prefix(const uint8_t *a, const uint8_t *b, int bits)
{
    for (int k = 0; bits > 0; k++, bits -= 8) {
        uint8_t m = bits >= 8 ? 0xff : (uint8_t)(0xff00u >> bits);
        if ((a[k] & m) != (b[k] & m)) {
            return false;
        }
    }
    return true;
}

/* Whether the interface address i is of family and usable by a peer: IPv6 link-local
 * addresses need this host's interface index on the connecting host (mps_ifaddr.h). */
static bool of_family(const struct ifaddrs *i, sa_family_t family)
{
    if (!i->ifa_addr || i->ifa_addr->sa_family != family) {
        return false;
    }
    return family != AF_INET6 ||
           !IN6_IS_ADDR_LINKLOCAL(
               &((const struct sockaddr_in6 *)(const void *)i->ifa_addr)->sin6_addr);
}

/* Up and running: a bridge without carrier (docker0 before its first container) is up but
 * not running, and nobody reaches this host through it. What the user names (sel) counts
 * when merely up, loopback included. */
static bool announced(const struct ifaddrs *i, sa_family_t family, const struct selector *sel)
{
    size_t len, nlen;

    if (!of_family(i, family) || !(i->ifa_flags & IFF_UP)) {
        return false;
    }
    if (sel && sel->subnet) {
        return family == sel->net.family &&
               same_prefix(bytes_of(i->ifa_addr, &len), inaddr_bytes(&sel->net, &nlen),
                           sel->prefix);
    }
    if (sel && sel->name) {
        return strcmp(i->ifa_name, sel->name) == 0;
    }
    return (i->ifa_flags & IFF_RUNNING) && !(i->ifa_flags & IFF_LOOPBACK);
}

static void copy_in(struct mps_inaddr *out, const struct sockaddr *sa)
{
    size_t len;
    const uint8_t *b = bytes_of(sa, &len);

    memset(out, 0, sizeof(*out));
    out->family = sa->sa_family;
    memcpy(out->family == AF_INET ? (void *)&out->a.v4 : (void *)&out->a.v6, b, len);
}

static const sa_family_t family_order[] = {AF_INET, AF_INET6}; /* IPv4 first: mps_ifaddr.h */
#define NFAMILIES (sizeof(family_order) / sizeof(family_order[0]))

int mps_ifaddr_mine(const char *iface, struct mps_inaddr *out, int max)
{
    struct selector sel;
    struct ifaddrs *list, *i;
    int n = 0;

    if (!parse_selector(iface, &sel)) {
        errno = EINVAL;
        return -1;
    }
    if (getifaddrs(&list) != 0) {
        return -1;
    }
    for (size_t f = 0; f < NFAMILIES; f++) {
        for (i = list; i && n < max; i = i->ifa_next) {
            if (announced(i, family_order[f], &sel)) {
                copy_in(&out[n++], i->ifa_addr);
            }
        }
    }
    freeifaddrs(list);
    return n;
}

int mps_ifaddr_iface_of(const char *iface, char *name, size_t cap)
{
    struct selector sel;
    struct ifaddrs *list, *i = NULL;

    if (!parse_selector(iface, &sel)) {
        errno = EINVAL;
        return -1;
    }
    if (!sel.subnet) {
        snprintf(name, cap, "%s", sel.name ? sel.name : "");
        return 0;
    }
    if (getifaddrs(&list) != 0) {
        return -1;
    }
    for (size_t f = 0; f < NFAMILIES && !i; f++) {
        for (i = list; i && !announced(i, family_order[f], &sel); i = i->ifa_next) {
        }
    }
    if (i) {
        snprintf(name, cap, "%s", i->ifa_name);
    }
    freeifaddrs(list);
    errno = i ? 0 : ENODEV;
    return i ? 0 : -1;
}

/* Whether the interface address i is a's family and, under its netmask (NULL: the whole
 * address), equal to a. */
static bool matches(const struct ifaddrs *i, const struct mps_inaddr *a, bool masked)
{
    size_t len, alen, mlen;
    const uint8_t *mine = bytes_of(i->ifa_addr, &len);
    const uint8_t *theirs = inaddr_bytes(a, &alen);
    const uint8_t *mask = masked ? bytes_of(i->ifa_netmask, &mlen) : NULL;

    if (!mine || i->ifa_addr->sa_family != a->family || (masked && (!mask || mlen != len))) {
        return false;
    }
    for (size_t k = 0; k < len; k++) {
        uint8_t m = mask ? mask[k] : 0xff;
        if ((mine[k] & m) != (theirs[k] & m)) {
            return false;
        }
    }
    return true;
}

/* Whether a is one of this host's addresses, on any interface in any state. */
static bool is_mine(const struct mps_inaddr *a, const struct ifaddrs *list)
{
    for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (matches(i, a, false)) {
            return true;
        }
    }
    return false;
}

/* Whether a is on the subnet of one of this host's interfaces that carry traffic: then it
 * is reached directly, without a router. */
static bool on_my_subnet(const struct mps_inaddr *a, const struct ifaddrs *list)
{
    for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (announced(i, a->family, NULL) && matches(i, a, true)) {
            return true;
        }
    }
    return false;
}

bool mps_ifaddr_same_subnet(const struct ifaddrs *list, const struct mps_inaddr *a,
                            const struct mps_inaddr *b)
{
    for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (announced(i, a->family, NULL) && matches(i, a, true) && matches(i, b, true)) {
            return true;
        }
    }
    return false;
}

int mps_ifaddr_order(const struct mps_inaddr *peer, int n, int *order)
{
    struct ifaddrs *list = NULL;
    int m;

    if (getifaddrs(&list) != 0) {
        list = NULL; /* nothing known of ours: the announced order */
    }
    m = mps_ifaddr_order_in(list, peer, n, order);
    if (list) {
        freeifaddrs(list);
    }
    return m;
}

int mps_ifaddr_order_in(const struct ifaddrs *list, const struct mps_inaddr *peer, int n,
                        int *order)
{
    int m = 0;

    /* First those on a subnet of ours (reached directly), then the routed ones; never ours. */
    for (int routed = 0; routed < 2; routed++) {
        for (int k = 0; k < n; k++) {
            if (!is_mine(&peer[k], list) && on_my_subnet(&peer[k], list) == !routed) {
                order[m++] = k;
            }
        }
    }
    if (m == 0 && n > 0) {
        order[m++] = 0; /* every one is ours too: the peer shares this host's addresses */
    }
    return m;
}

const char *mps_inaddr_str(const struct mps_inaddr *a, char *buf, size_t cap)
{
    size_t len;

    if (!inet_ntop(a->family, inaddr_bytes(a, &len), buf, (socklen_t)cap)) {
        snprintf(buf, cap, "?");
    }
    return buf;
}

bool mps_inaddr_parse(const char *text, struct mps_inaddr *out)
{
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, text, &out->a.v4) == 1) {
        out->family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, text, &out->a.v6) == 1) {
        out->family = AF_INET6;
        return true;
    }
    return false;
}

socklen_t mps_inaddr_sockaddr(const struct mps_inaddr *a, in_port_t port, union mps_sockaddr *out)
{
    memset(out, 0, sizeof(*out));
    if (a->family == AF_INET) {
        out->in.sin_family = AF_INET;
        out->in.sin_port = port;
        out->in.sin_addr = a->a.v4;
        return sizeof(out->in);
    }
    out->in6.sin6_family = AF_INET6;
    out->in6.sin6_port = port;
    out->in6.sin6_addr = a->a.v6;
    return sizeof(out->in6);
}

const char *mps_sockaddr_host(const struct sockaddr *sa, char *buf, size_t cap)
{
    size_t len;
    const uint8_t *b = bytes_of(sa, &len);

    if (!b || !inet_ntop(sa->sa_family, b, buf, (socklen_t)cap)) {
        snprintf(buf, cap, "?");
    }
    return buf;
}

unsigned mps_sockaddr_port(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        return ntohs(((const struct sockaddr_in *)(const void *)sa)->sin_port);
    }
    if (sa->sa_family == AF_INET6) {
        return ntohs(((const struct sockaddr_in6 *)(const void *)sa)->sin6_port);
    }
    return 0;
}

const char *mps_ifaddr_list(const struct mps_inaddr *peer, int n, char *buf, size_t cap)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int k = 0; k < n && used + MPS_INADDR_STRLEN + 2 < cap; k++) {
        char one[MPS_INADDR_STRLEN];
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", k ? ", " : "",
                                 mps_inaddr_str(&peer[k], one, sizeof(one)));
    }
    return buf;
}
