/*
 * test_fab_probe.c - the liveness probe of fabric/fab_probe.c against real sockets on the
 * loopback: a peer whose address has a listener is never called dead (probed again and
 * again), a peer whose listener closed is found gone within a second with a message naming
 * its rank, node, address and port, and addresses the probe must leave alone (another
 * provider, a name that is not a socket address, this rank) are never probed. What
 * ofi_rxm itself does when a peer dies is checked with real processes by
 * tests/scripts/test_kill_matrix.sh ("filenet") and test_cluster_faults.sh.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fab.h"
#include "fab_int.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define STRIDE 8

struct world {
    struct fab f;
    struct fab_ep ep;
    char nodes[2 * STRIDE];
    int listener;
    struct sockaddr_in addr;
};

/* A listening socket on 127.0.0.1 (a port the kernel picks), as a live peer has. */
static int listen_loopback(struct sockaddr_in *addr)
{
    socklen_t len = sizeof(*addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    memset(addr, 0, sizeof(*addr));
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)addr, sizeof(*addr)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)addr, &len), 0);
    return fd;
}

/* Rank 0 of 2 on node "nodeA"; rank 1 on "nodeB" published addr over prov. */
static void world_init(struct world *w, const char *prov)
{
    memset(w, 0, sizeof(*w));
    w->f.rank = 0;
    w->f.size = 2;
    w->f.node_stride = STRIDE;
    w->f.nodes = w->nodes;
    memcpy(w->nodes, "nodeA\0\0\0nodeB\0\0\0", sizeof(w->nodes));
    snprintf(w->ep.prov, sizeof(w->ep.prov), "%s", prov);
    w->listener = listen_loopback(&w->addr);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* Calls fab_remote_alive every 20 ms for ms milliseconds or until it finds a death. */
static int look_for(struct world *w, long ms)
{
    int rc = PGC_OK;

    for (long t = 0; t < ms && rc == PGC_OK; t += 20) {
        rc = fab_remote_alive(&w->f);
        sleep_ms(20);
    }
    return rc;
}

static void test_a_listening_peer_is_never_called_dead(void **state)
{
    struct world w;

    (void)state;
    world_init(&w, "tcp;ofi_rxm");
    fab_probe_note(&w.f, 1, &w.ep, &w.addr, sizeof(w.addr));
    assert_non_null(w.f.probes);
    /* 1 s: four probes or more, each accepted by the kernel. */
    assert_int_equal(look_for(&w, 1000), PGC_OK);
    assert_int_equal(fab_probe_peer(&w.f, 1), PGC_OK);
    fab_probe_close(&w.f);
    assert_null(w.f.probes);
    assert_int_equal(w.f.probes_out, 0);
    close(w.listener);
}

static void test_a_peer_whose_listener_closed_is_found_gone(void **state)
{
    struct world w;
    char want[160];

    (void)state;
    world_init(&w, "tcp;ofi_rxm");
    fab_probe_note(&w.f, 1, &w.ep, &w.addr, sizeof(w.addr));
    assert_int_equal(look_for(&w, 300), PGC_OK);
    close(w.listener); /* what the kernel does to a dead process's sockets */
    assert_int_equal(look_for(&w, 1000), PGC_ERR_PEER_DEAD);
    snprintf(want, sizeof(want),
             "rank 1 (on node nodeB) is gone: its endpoint at 127.0.0.1 port %u refuses "
             "connections",
             (unsigned)ntohs(w.addr.sin_port));
    assert_non_null(strstr(mps_last_error(), want));
    fab_probe_close(&w.f);
}

static void test_a_send_retry_probes_its_peer(void **state)
{
    struct world w;
    int rc = PGC_OK;

    (void)state;
    world_init(&w, "tcp;ofi_rxm");
    fab_probe_note(&w.f, 1, &w.ep, &w.addr, sizeof(w.addr));
    close(w.listener);
    for (int i = 0; i < 50 && rc == PGC_OK; i++) {
        rc = fab_probe_peer(&w.f, 1);
        sleep_ms(20);
    }
    assert_int_equal(rc, PGC_ERR_PEER_DEAD);
    fab_probe_close(&w.f);
}

static void test_other_providers_and_names_are_not_probed(void **state)
{
    struct world w;
    char not_sockaddr[16] = "shm://12345";

    (void)state;
    world_init(&w, "udp;ofi_rxd");
    close(w.listener); /* nobody listens: a probe would call the peer dead */
    fab_probe_note(&w.f, 1, &w.ep, &w.addr, sizeof(w.addr));
    snprintf(w.ep.prov, sizeof(w.ep.prov), "tcp;ofi_rxm");
    fab_probe_note(&w.f, 1, &w.ep, not_sockaddr, sizeof(not_sockaddr));
    fab_probe_note(&w.f, 1, &w.ep, &w.addr, sizeof(w.addr) - 1);
    fab_probe_note(&w.f, 0, &w.ep, &w.addr, sizeof(w.addr)); /* this rank */
    assert_int_equal(look_for(&w, 600), PGC_OK);
    assert_int_equal(fab_probe_peer(&w.f, 1), PGC_OK);
    fab_probe_close(&w.f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_listening_peer_is_never_called_dead),
        cmocka_unit_test(test_a_peer_whose_listener_closed_is_found_gone),
        cmocka_unit_test(test_a_send_retry_probes_its_peer),
        cmocka_unit_test(test_other_providers_and_names_are_not_probed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
