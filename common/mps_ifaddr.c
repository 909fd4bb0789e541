/* mps_ifaddr.c - announcing and picking IPv4 addresses (see mps_ifaddr.h for why). */
#include "mps_ifaddr.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static bool is_ipv4(const struct ifaddrs *i)
{
    return i->ifa_addr && i->ifa_addr->sa_family == AF_INET;
}

static in_addr_t ipv4_of(const struct sockaddr *sa)
{
    return ((const struct sockaddr_in *)(const void *)sa)->sin_addr.s_addr;
}

/* Up and running: a bridge without carrier (docker0 before its first container) is up but
 * not running, and nobody reaches this host through it. */
static bool announced(const struct ifaddrs *i, const char *iface)
{
    if (!is_ipv4(i) || !(i->ifa_flags & IFF_UP)) {
        return false;
    }
    if (iface && *iface) {
        return strcmp(i->ifa_name, iface) == 0;
    }
    return (i->ifa_flags & IFF_RUNNING) && !(i->ifa_flags & IFF_LOOPBACK);
}

int mps_ifaddr_mine(const char *iface, struct in_addr *out, int max)
{
    struct ifaddrs *list, *i;
    int n = 0;

    if (getifaddrs(&list) != 0) {
        return -1;
    }
    for (i = list; i && n < max; i = i->ifa_next) {
        if (announced(i, iface)) {
            out[n++].s_addr = ipv4_of(i->ifa_addr);
        }
    }
    freeifaddrs(list);
    return n;
}

/* Whether a is one of this host's addresses, on any interface in any state. */
static bool is_mine(in_addr_t a, const struct ifaddrs *list)
{
    for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (is_ipv4(i) && ipv4_of(i->ifa_addr) == a) {
            return true;
        }
    }
    return false;
}

/* Whether a is on the subnet of one of this host's interfaces that carry traffic: then it
 * is reached directly, without a router. */
static bool on_my_subnet(in_addr_t a, const struct ifaddrs *list)
{
    for (const struct ifaddrs *i = list; i; i = i->ifa_next) {
        if (announced(i, NULL) && i->ifa_netmask) {
            in_addr_t mask = ipv4_of(i->ifa_netmask);
            if ((ipv4_of(i->ifa_addr) & mask) == (a & mask)) {
                return true;
            }
        }
    }
    return false;
}

int mps_ifaddr_pick(const struct in_addr *peer, int n)
{
    struct ifaddrs *list = NULL;
    int k;

    if (getifaddrs(&list) != 0) {
        list = NULL; /* nothing known of ours: the first address */
    }
    k = mps_ifaddr_pick_in(list, peer, n);
    if (list) {
        freeifaddrs(list);
    }
    return k;
}

int mps_ifaddr_pick_in(const struct ifaddrs *list, const struct in_addr *peer, int n)
{
    int first = -1, direct = -1;

    for (int k = 0; k < n && direct < 0; k++) {
        if (is_mine(peer[k].s_addr, list)) {
            continue;
        }
        first = first < 0 ? k : first;
        direct = on_my_subnet(peer[k].s_addr, list) ? k : -1;
    }
    return direct >= 0 ? direct : first >= 0 ? first : n > 0 ? 0 : -1;
}

const char *mps_ifaddr_list(const struct in_addr *peer, int n, char *buf, size_t cap)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int k = 0; k < n && used + INET_ADDRSTRLEN + 2 < cap; k++) {
        char one[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &peer[k], one, sizeof(one));
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", k ? ", " : "", one);
    }
    return buf;
}
