/* Unit tests of mps_ifaddr (common/mps_ifaddr.c): which addresses a rank announces, and
 * which of a peer's it picks. On this host's own interfaces the peer's lists are built from
 * what getifaddrs says here, so each expected index is known independently: an address of
 * ours is not picked while the peer has another, one on our subnet beats one that needs a
 * router, and the first one left wins otherwise. The IPv6 rules run against interface
 * lists built here (a host need not have IPv6 configured), the same rules with 16-byte
 * masks. The multi-node suite (tests/scripts/test_cluster.sh, decoy_jobs and ipv6_jobs)
 * runs the same choice between emulated nodes. */
#include "config.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "mps_ifaddr.h"

/* The address a rank connects to first among peer's n (mps_ifaddr_order's first), against
 * mine (NULL: this host's own interfaces); -1 where there is none. */
static int pick_in(const struct ifaddrs *mine, const struct mps_inaddr *peer, int n)
{
    int order[MPS_IFADDR_MAX];
    int m = mine ? mps_ifaddr_order_in(mine, peer, n, order) : mps_ifaddr_order(peer, n, order);

    return m > 0 ? order[0] : -1;
}

static int pick(const struct mps_inaddr *peer, int n)
{
    return pick_in(NULL, peer, n);
}

/* Documentation addresses (RFC 5737): nobody has them, and nobody is on their subnets
 * unless a test machine is configured that way, which setup checks. */
#define FAR_A "203.0.113.7"
#define FAR_B "198.51.100.9"

/* An interface of this host that carries traffic, with a subnet wider than one address. */
struct iface {
    struct in_addr addr, mask;
    char name[IF_NAMESIZE];
};

static int find_iface(struct iface *out)
{
    struct ifaddrs *list, *i;
    int found = 0;

    assert_int_equal(getifaddrs(&list), 0);
    for (i = list; i && !found; i = i->ifa_next) {
        if (i->ifa_addr && i->ifa_netmask && i->ifa_addr->sa_family == AF_INET &&
            (i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING) &&
            !(i->ifa_flags & IFF_LOOPBACK)) {
            out->addr = ((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr;
            out->mask = ((struct sockaddr_in *)(void *)i->ifa_netmask)->sin_addr;
            snprintf(out->name, sizeof(out->name), "%s", i->ifa_name);
            found = ntohl(out->mask.s_addr) < 0xfffffffcu;
        }
    }
    freeifaddrs(list);
    return found;
}

static struct mps_inaddr ip(const char *s)
{
    struct mps_inaddr a;
    assert_true(mps_inaddr_parse(s, &a));
    return a;
}

static struct mps_inaddr ip4(struct in_addr v4)
{
    struct mps_inaddr a = {.family = AF_INET, .a.v4 = v4};
    return a;
}

/* Another address on iface's subnet: its address with the host part's lowest bit flipped,
 * or the next one when that is the subnet's broadcast or network address. */
static struct mps_inaddr neighbour(const struct iface *f)
{
    uint32_t a = ntohl(f->addr.s_addr), m = ntohl(f->mask.s_addr);
    uint32_t host = (a & ~m) ^ 1u;

    if (host == 0 || host == ~m) {
        host = (a & ~m) ^ 2u;
    }
    struct in_addr out = {.s_addr = htonl((a & m) | host)};
    return ip4(out);
}

static void announces_what_carries_traffic(void **state)
{
    struct mps_inaddr mine[MPS_IFADDR_MAX], lo[2];
    struct iface f;
    int n = mps_ifaddr_mine("", mine, MPS_IFADDR_MAX);
    bool seen_v6 = false;
    (void)state;

    assert_true(n >= 0);
    for (int k = 0; k < n; k++) {
        if (mine[k].family == AF_INET) {
            assert_false(seen_v6);                                       /* IPv4 ones first */
            assert_int_not_equal(ntohl(mine[k].a.v4.s_addr) >> 24, 127); /* never loopback */
        } else {
            assert_int_equal(mine[k].family, AF_INET6);
            assert_false(IN6_IS_ADDR_LOOPBACK(&mine[k].a.v6));
            assert_false(IN6_IS_ADDR_LINKLOCAL(&mine[k].a.v6)); /* a peer cannot use one */
            seen_v6 = true;
        }
    }
    if (find_iface(&f)) {
        int k = 0;
        while (k < n && !(mine[k].family == AF_INET && mine[k].a.v4.s_addr == f.addr.s_addr)) {
            k++;
        }
        assert_true(k < n); /* the running interface's address is announced */
    }
    /* Named, loopback counts: the suite's one-node runs set MPISHIM_FABRIC_IFACE=lo. */
    assert_int_equal(mps_ifaddr_mine("lo", lo, 2) >= 1, 1);
    assert_int_equal(lo[0].family, AF_INET);
    assert_int_equal(lo[0].a.v4.s_addr, htonl(INADDR_LOOPBACK));
    assert_int_equal(mps_ifaddr_mine("nosuch0", lo, 2), 0);
}

static void never_picks_our_own(void **state)
{
    struct mps_inaddr peer[3] = {ip("127.0.0.1"), ip("127.0.0.1"), ip(FAR_A)};
    struct iface f;
    (void)state;

    /* Loopback (ours) twice, then a routed address: the routed one. */
    assert_int_equal(pick(peer, 3), 2);
    /* Only ours: the peer shares this host's addresses (another node name on this host):
     * the first. None: nothing to connect to. */
    assert_int_equal(pick(peer, 2), 0);
    assert_int_equal(pick(peer, 0), -1);
    if (!find_iface(&f)) {
        print_message("skip: no running interface but loopback on this host; the rest of "
                      "never_picks_our_own needs one\n");
        return;
    }
    /* The docker0 case: the peer lists an address we have too (first), then its real one. */
    peer[0] = ip4(f.addr);
    peer[1] = neighbour(&f);
    assert_int_equal(pick(peer, 2), 1);
}

static void prefers_a_subnet_of_ours(void **state)
{
    struct iface f;
    struct mps_inaddr peer[3];
    (void)state;

    if (!find_iface(&f)) {
        print_message("skip: no running interface but loopback on this host\n");
        skip();
    }
    peer[0] = ip(FAR_A);
    peer[1] = ip(FAR_B);
    peer[2] = neighbour(&f);
    /* Two routed addresses, then one on our subnet: the direct one. */
    assert_int_equal(pick(peer, 3), 2);
    /* Routed ones only: the first. */
    assert_int_equal(pick(peer, 2), 0);
}

static void lists_for_messages(void **state)
{
    struct mps_inaddr peer[3] = {ip("10.0.0.1"), ip(FAR_A), ip("fd00:77::11")};
    char buf[96];
    (void)state;

    assert_string_equal(mps_ifaddr_list(peer, 3, buf, sizeof(buf)),
                        "10.0.0.1, " FAR_A ", fd00:77::11");
    assert_string_equal(mps_ifaddr_list(peer, 0, buf, sizeof(buf)), "");
}

/* ---- IPv6, against interface lists built here ---- */

/* One interface address of a made-up host: name, address, prefix length, flags. */
struct fake_if {
    struct ifaddrs ifa;
    struct sockaddr_in6 addr, mask;
};

static void fake_v6(struct fake_if *f, const char *name, const char *addr, int prefix,
                    unsigned flags, struct fake_if *next)
{
    memset(f, 0, sizeof(*f));
    f->addr.sin6_family = f->mask.sin6_family = AF_INET6;
    assert_int_equal(inet_pton(AF_INET6, addr, &f->addr.sin6_addr), 1);
    for (int b = 0; b < prefix; b++) {
        f->mask.sin6_addr.s6_addr[b / 8] |= (uint8_t)(0x80u >> (b % 8));
    }
    f->ifa.ifa_name = (char *)name;
    f->ifa.ifa_flags = flags;
    f->ifa.ifa_addr = (struct sockaddr *)&f->addr;
    f->ifa.ifa_netmask = (struct sockaddr *)&f->mask;
    f->ifa.ifa_next = next ? &next->ifa : NULL;
}

#define RUNNING (IFF_UP | IFF_RUNNING)

/* A host with loopback, a docker0-like bridge whose address every node has, and a data
 * network fd00:77::/64 (this host fd00:77::12). */
static void v6_host(struct fake_if h[3])
{
    fake_v6(&h[2], "eth1", "fd00:77::12", 64, RUNNING, NULL);
    fake_v6(&h[1], "dock0", "fd00:99::1", 64, RUNNING, &h[2]);
    fake_v6(&h[0], "lo", "::1", 128, RUNNING | IFF_LOOPBACK, &h[1]);
}

static void picks_ipv6_by_the_same_rules(void **state)
{
    struct fake_if h[3];
    /* A peer that announces the shared bridge address, a routed one, its data address. */
    struct mps_inaddr peer[3] = {ip("fd00:99::1"), ip("2001:db8::5"), ip("fd00:77::11")};
    (void)state;

    v6_host(h);
    /* Ours skipped, and the one on our /64 beats the routed one. */
    assert_int_equal(pick_in(&h[0].ifa, peer, 3), 2);
    /* Without it, the routed one (the first not ours). */
    assert_int_equal(pick_in(&h[0].ifa, peer, 2), 1);
    /* The subnet is the interface's prefix: fd00:77:0:1::11 is outside a /64 and routed;
     * the same address is inside a /48. */
    peer[0] = ip("2001:db8::5");
    peer[1] = ip("fd00:77:0:1::11");
    assert_int_equal(pick_in(&h[0].ifa, peer, 2), 0);
    fake_v6(&h[2], "eth1", "fd00:77::12", 48, RUNNING, NULL);
    assert_int_equal(pick_in(&h[0].ifa, peer, 2), 1);
    /* Only ours (another node name on this host): the first. */
    peer[0] = ip("fd00:77::12");
    peer[1] = ip("::1");
    assert_int_equal(pick_in(&h[0].ifa, peer, 2), 0);
}

/* The order to try a peer's addresses in: on a subnet of ours first, then routed ones, each
 * as announced, never ours; and which addresses share one of our subnets. */
static void orders_what_to_try_next(void **state)
{
    struct fake_if h[3];
    /* Ours (the bridge), routed, on our /64, routed, on our /64. */
    struct mps_inaddr peer[5] = {ip("fd00:99::1"), ip("2001:db8::5"), ip("fd00:77::11"),
                                 ip("2001:db8::6"), ip("fd00:77::13")};
    int order[5];
    (void)state;

    v6_host(h);
    assert_int_equal(mps_ifaddr_order_in(&h[0].ifa, peer, 5, order), 4);
    assert_int_equal(order[0], 2);
    assert_int_equal(order[1], 4);
    assert_int_equal(order[2], 1);
    assert_int_equal(order[3], 3);
    /* Only ours: the first alone. None: nothing. */
    assert_int_equal(mps_ifaddr_order_in(&h[0].ifa, peer, 1, order), 1);
    assert_int_equal(order[0], 0);
    assert_int_equal(mps_ifaddr_order_in(&h[0].ifa, peer, 0, order), 0);
    /* fd00:77::11 and ::13 share our eth1's /64; a routed one shares none of ours. */
    assert_true(mps_ifaddr_same_subnet(&h[0].ifa, &peer[2], &peer[4]));
    assert_false(mps_ifaddr_same_subnet(&h[0].ifa, &peer[1], &peer[3]));
    assert_false(mps_ifaddr_same_subnet(&h[0].ifa, &peer[2], &peer[1]));
}

static void ipv4_and_ipv6_are_told_apart(void **state)
{
    struct fake_if h[3];
    /* 10.0.0.1 is no IPv6 subnet's; the IPv6 data address is: it wins although second. */
    struct mps_inaddr peer[2] = {ip("10.0.0.1"), ip("fd00:77::11")};
    struct mps_inaddr v4mapped = ip("::ffff:10.0.0.1");
    (void)state;

    v6_host(h);
    assert_int_equal(pick_in(&h[0].ifa, peer, 2), 1);
    /* A down interface's subnet reaches nobody: the first address then. */
    h[2].ifa.ifa_flags = IFF_UP;
    assert_int_equal(pick_in(&h[0].ifa, peer, 2), 0);
    /* Text and socket addresses of both families. */
    union mps_sockaddr sa;
    char host[MPS_INADDR_STRLEN];
    assert_int_equal(mps_inaddr_sockaddr(&peer[1], htons(4242), &sa), sizeof(struct sockaddr_in6));
    assert_string_equal(mps_sockaddr_host(&sa.sa, host, sizeof(host)), "fd00:77::11");
    assert_int_equal(mps_sockaddr_port(&sa.sa), 4242);
    assert_int_equal(mps_inaddr_sockaddr(&peer[0], htons(80), &sa), sizeof(struct sockaddr_in));
    assert_string_equal(mps_sockaddr_host(&sa.sa, host, sizeof(host)), "10.0.0.1");
    assert_int_equal(v4mapped.family, AF_INET6);
    assert_false(mps_inaddr_parse("node1", &peer[0])); /* names are not addresses */
    assert_false(mps_inaddr_parse("[fd00::1]", &peer[0]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(announces_what_carries_traffic),
        cmocka_unit_test(never_picks_our_own),
        cmocka_unit_test(prefers_a_subnet_of_ours),
        cmocka_unit_test(lists_for_messages),
        cmocka_unit_test(picks_ipv6_by_the_same_rules),
        cmocka_unit_test(ipv4_and_ipv6_are_told_apart),
        cmocka_unit_test(orders_what_to_try_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
