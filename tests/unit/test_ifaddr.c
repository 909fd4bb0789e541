/* Unit tests of mps_ifaddr (common/mps_ifaddr.c) on this host's own interfaces: which
 * addresses a rank announces, and which of a peer's it picks. The peer's lists are built
 * from what getifaddrs says here, so each expected index is known independently: an
 * address of ours is not picked while the peer has another, one on our subnet beats one
 * that needs a router, and the first one left wins otherwise. The multi-node suite
 * (tests/scripts/test_cluster.sh, decoy_jobs) runs the same choice between two emulated
 * nodes. */
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

static struct in_addr ip(const char *s)
{
    struct in_addr a;
    assert_int_equal(inet_pton(AF_INET, s, &a), 1);
    return a;
}

/* Another address on iface's subnet: its address with the host part's lowest bit flipped,
 * or the next one when that is the subnet's broadcast or network address. */
static struct in_addr neighbour(const struct iface *f)
{
    uint32_t a = ntohl(f->addr.s_addr), m = ntohl(f->mask.s_addr);
    uint32_t host = (a & ~m) ^ 1u;

    if (host == 0 || host == ~m) {
        host = (a & ~m) ^ 2u;
    }
    struct in_addr out = {.s_addr = htonl((a & m) | host)};
    return out;
}

static void announces_what_carries_traffic(void **state)
{
    struct in_addr mine[MPS_IFADDR_MAX], lo[2];
    struct iface f;
    int n = mps_ifaddr_mine("", mine, MPS_IFADDR_MAX);
    (void)state;

    assert_true(n >= 0);
    for (int k = 0; k < n; k++) {
        assert_int_not_equal(ntohl(mine[k].s_addr) >> 24, 127); /* never loopback */
    }
    if (find_iface(&f)) {
        int k = 0;
        while (k < n && mine[k].s_addr != f.addr.s_addr) {
            k++;
        }
        assert_true(k < n); /* the running interface's address is announced */
    }
    /* Named, loopback counts: the suite's one-node runs set MPISHIM_FABRIC_IFACE=lo. */
    assert_int_equal(mps_ifaddr_mine("lo", lo, 2) >= 1, 1);
    assert_int_equal(lo[0].s_addr, htonl(INADDR_LOOPBACK));
    assert_int_equal(mps_ifaddr_mine("nosuch0", lo, 2), 0);
}

static void never_picks_our_own(void **state)
{
    struct in_addr peer[3] = {ip("127.0.0.1"), ip("127.0.0.1"), ip(FAR_A)};
    struct iface f;
    (void)state;

    /* Loopback (ours) twice, then a routed address: the routed one. */
    assert_int_equal(mps_ifaddr_pick(peer, 3), 2);
    /* Only ours: the peer shares this host's addresses (another node name on this host):
     * the first. None: nothing to connect to. */
    assert_int_equal(mps_ifaddr_pick(peer, 2), 0);
    assert_int_equal(mps_ifaddr_pick(peer, 0), -1);
    if (!find_iface(&f)) {
        print_message("skip: no running interface but loopback on this host; the rest of "
                      "never_picks_our_own needs one\n");
        return;
    }
    /* The docker0 case: the peer lists an address we have too (first), then its real one. */
    peer[0] = f.addr;
    peer[1] = neighbour(&f);
    assert_int_equal(mps_ifaddr_pick(peer, 2), 1);
}

static void prefers_a_subnet_of_ours(void **state)
{
    struct iface f;
    struct in_addr peer[3];
    (void)state;

    if (!find_iface(&f)) {
        print_message("skip: no running interface but loopback on this host\n");
        skip();
    }
    peer[0] = ip(FAR_A);
    peer[1] = ip(FAR_B);
    peer[2] = neighbour(&f);
    /* Two routed addresses, then one on our subnet: the direct one. */
    assert_int_equal(mps_ifaddr_pick(peer, 3), 2);
    /* Routed ones only: the first. */
    assert_int_equal(mps_ifaddr_pick(peer, 2), 0);
}

static void lists_for_messages(void **state)
{
    struct in_addr peer[2] = {ip("10.0.0.1"), ip(FAR_A)};
    char buf[64];
    (void)state;

    assert_string_equal(mps_ifaddr_list(peer, 2, buf, sizeof(buf)), "10.0.0.1, " FAR_A);
    assert_string_equal(mps_ifaddr_list(peer, 0, buf, sizeof(buf)), "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(announces_what_carries_traffic),
        cmocka_unit_test(never_picks_our_own),
        cmocka_unit_test(prefers_a_subnet_of_ours),
        cmocka_unit_test(lists_for_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
