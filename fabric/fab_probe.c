/*
 * fab_probe.c - whether a rank reached over TCP (tcp;ofi_rxm, net) still lives (issue 40).
 *
 * libfabric 1.17's ofi_rxm tells us nothing when a peer of another node dies. It reads the
 * FI_SHUTDOWN of the dead connection (or its error: ECONNRESET) off its own event queue and
 * closes the connection (rxm_process_shutdown in prov/rxm/src/rxm_conn.c); a receive we
 * posted stays posted. A send to the dead peer reconnects: fi_tsend answers -FI_EAGAIN while
 * the connection is being made, and the refusal is again taken by rxm (rxm_process_reject
 * frees the connection), so the next send answers -FI_EAGAIN again, for ever. Nothing
 * reaches our completion queue, and -FI_EAGAIN alone cannot tell a dead peer from a live one
 * that is slow to accept (a connection needs the peer's progress to be accepted).
 *
 * The peer's listening socket does tell. The address that ofi_rxm publishes (fi_getname) is
 * its tcp passive endpoint's (rxm_getname), a struct sockaddr_in or _in6 on which the
 * process listens from fi_enable until it closes its endpoint. A connect() to it is:
 *  - refused by the peer's kernel once the process is gone (ECONNREFUSED, one round trip):
 *    the verdict "dead";
 *  - accepted by the peer's kernel while the process lives, whatever the process is doing
 *    (it need not progress): the verdict "alive"; we reset the connection at once, and the
 *    peer's tcp provider drops a connection that closes before its connection request
 *    without a word (tcpx_cm_recv_req: "Failed to read cm header", a debug log);
 *  - left unanswered when the node or its link is down: no verdict; the wait's timeout
 *    speaks then (a node cut off is not a dead process).
 * The same holds for libfabric 1.17's `net` provider (its RDM endpoint's name is the
 * address its listening socket is bound to: xnet_rdm_getname) and for the native RDM
 * endpoint of the tcp provider that replaced it in later releases ("tcp" alone). Only those
 * are probed: a provider whose address is not a TCP listener (udp;ofi_rxd, shm, verbs)
 * would refuse every probe and make the living look dead.
 *
 * Probes run only from waits that have lasted (pg_progress.c's liveness look, every 0.1 s
 * of a wait past its first 0.1 s, and fab_wait_step's retries); nothing here is on the
 * path of a message. Each peer is probed at most every PROBE_EVERY, at most PROBE_BATCH at
 * a time, round robin over the peers, so a large job's waiting ranks cost each peer a few
 * accepted connections a second.
 */
#include "config.h"

#include "fab_int.h"
#include "fab_sock.h"
#include "mps_ifaddr.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PROBE_EVERY 0.25  /* s between two probes of one peer */
#define PROBE_GIVE_UP 2.0 /* s after which an unanswered probe is dropped (no verdict) */
#define PROBE_BATCH 4     /* probes in flight at once */

/* What one probe found. */
enum verdict { PROBE_PENDING, PROBE_ALIVE, PROBE_DEAD, PROBE_UNKNOWN };

struct fab_probe {
    struct sockaddr_storage addr;
    socklen_t len;  /* 0: this peer is not probed (this rank, shm, another provider) */
    struct sockaddr_storage refused; /* the last of its addresses that refused a probe */
    socklen_t refused_len;           /* 0: none did */
    int fd;         /* the connect in flight, or -1 */
    double started; /* when fd's connect began */
    double next;    /* the earliest start of this peer's next probe */
};

/* Whether name (len bytes) is an AF_INET or AF_INET6 socket address as a whole. */
static socklen_t sockaddr_len(const void *name, size_t len)
{
    sa_family_t family;

    if (len < sizeof(family)) {
        return 0;
    }
    memcpy(&family, name, sizeof(family));
    if (family == AF_INET && len == sizeof(struct sockaddr_in)) {
        return (socklen_t)len;
    }
    if (family == AF_INET6 && len == sizeof(struct sockaddr_in6)) {
        return (socklen_t)len;
    }
    return 0;
}

/* Whether the provider's endpoint name is the address of a socket that listens (above). */
static bool name_listens(const char *prov)
{
    return !strcmp(prov, "tcp;ofi_rxm") || !strcmp(prov, "net") || !strcmp(prov, "tcp") ||
           !strcmp(prov, FAB_SOCK_NAME);
}

void fab_probe_note(struct fab *f, int peer, const struct fab_ep *e, const void *name, size_t len)
{
    fab_probe_note_prov(f, peer, e->prov, name, len);
}

void fab_probe_note_prov(struct fab *f, int peer, const char *prov, const void *name, size_t len)
{
    socklen_t slen = sockaddr_len(name, len);

    if (peer == f->rank || slen == 0 || !name_listens(prov)) {
        return;
    }
    if (!f->probes) {
        f->probes = calloc((size_t)f->size, sizeof(*f->probes));
        if (!f->probes) {
            MPS_WARN("fab_connect: no memory to watch the peers of other nodes; a dead one is "
                     "found at the timeout only");
            return;
        }
        for (int r = 0; r < f->size; r++) {
            f->probes[r].fd = -1;
        }
    }
    memcpy(&f->probes[peer].addr, name, slen);
    f->probes[peer].len = slen;
}

/* Ends p's connect, resetting the connection (no TIME_WAIT here, no FIN dance there). */
static void probe_end(struct fab *f, struct fab_probe *p)
{
    struct linger reset = {.l_onoff = 1, .l_linger = 0};

    (void)setsockopt(p->fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    close(p->fd);
    p->fd = -1;
    f->probes_out--;
}

/* A refusal is a death where it came from the peer's only address. A sock peer not yet
 * reached has others, though: the refusal may be another host's, on a network that reuses
 * the subnet, and an address that is silent or unrouted (a private network of the peer's
 * node) tells nothing. Its next address is watched then (fab_sock_next_address, which drops
 * the refusing and the unrouted ones as a failed connect does). When the address left last
 * is silent or unrouted too, after another refused, no address of the peer's accepts and
 * one refused: a death, as the connect would conclude. Before, a first address that never
 * answered was watched for ever, and a peer that died before anyone connected to it went
 * unseen until the timeout. */
static enum verdict verdict_of(struct fab *f, struct fab_probe *p, int err)
{
    enum fab_sock_next next;

    if (err == 0) {
        return PROBE_ALIVE;
    }
    if (err == ECONNREFUSED) {
        memcpy(&p->refused, &p->addr, p->len);
        p->refused_len = p->len;
    }
    next = fab_sock_next_address(f, (int)(p - f->probes), err);
    if (next == FAB_SOCK_NEXT_MOVED) {
        return PROBE_UNKNOWN;
    }
    if (err == ECONNREFUSED) {
        return PROBE_DEAD;
    }
    return next == FAB_SOCK_NEXT_LAST && p->refused_len > 0 &&
                   (err == ETIMEDOUT || err == EHOSTUNREACH || err == ENETUNREACH)
               ? PROBE_DEAD
               : PROBE_UNKNOWN;
}

/* Starts a connect to p's address; the verdict when the kernel gave it at once. */
static enum verdict probe_start(struct fab *f, struct fab_probe *p, double now)
{
    const struct sockaddr *sa = (const struct sockaddr *)&p->addr;
    int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    p->next = now + PROBE_EVERY;
    if (fd < 0) {
        return PROBE_UNKNOWN; /* out of descriptors: try again later */
    }
    p->fd = fd;
    p->started = now;
    f->probes_out++;
    if (connect(fd, sa, p->len) == 0) {
        probe_end(f, p);
        return PROBE_ALIVE;
    }
    if (errno == EINPROGRESS) {
        return PROBE_PENDING;
    }
    int err = errno;
    probe_end(f, p);
    return verdict_of(f, p, err);
}

/* Looks whether p's connect has an answer yet, without waiting. */
static enum verdict probe_check(struct fab *f, struct fab_probe *p, double now)
{
    struct pollfd pfd = {.fd = p->fd, .events = POLLOUT};
    socklen_t elen = sizeof(int);
    int err = 0;

    if (poll(&pfd, 1, 0) == 0) {
        if (now - p->started <= PROBE_GIVE_UP) {
            return PROBE_PENDING;
        }
        probe_end(f, p);
        return verdict_of(f, p, ETIMEDOUT);
    }
    if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) {
        err = errno;
    }
    probe_end(f, p);
    return verdict_of(f, p, err);
}

/* The error of a peer found dead, naming it, its node and its address. */
static int dead_error(const struct fab *f, int peer)
{
    const struct sockaddr *sa = (const struct sockaddr *)&f->probes[peer].refused;
    char host[MPS_INADDR_STRLEN];

    return mps_error(PGC_ERR_PEER_DEAD,
                     "rank %d (on node %.*s) is gone: its endpoint at %s port %u refuses "
                     "connections (connection refused: its process has exited); this rank was "
                     "waiting for it or for a peer that needs it",
                     peer, (int)f->node_stride, f->nodes + (size_t)peer * f->node_stride,
                     mps_sockaddr_host(sa, host, sizeof(host)), mps_sockaddr_port(sa));
}

/* One look at peer: collects its probe's answer, or starts one when it is due. */
static enum verdict probe_step(struct fab *f, int peer, double now)
{
    struct fab_probe *p = &f->probes[peer];

    if (p->len == 0) {
        return PROBE_UNKNOWN;
    }
    if (p->fd >= 0) {
        return probe_check(f, p, now);
    }
    if (now < p->next || f->probes_out >= PROBE_BATCH) {
        return PROBE_PENDING;
    }
    return probe_start(f, p, now);
}

int fab_remote_alive(struct fab *f)
{
    double now = mps_now();
    /* A sock connection that ended without a goodbye says it at once. */
    int rc = f && f->sock ? fab_sock_alive(f) : PGC_OK;

    if (rc != PGC_OK || !f || !f->probes) {
        return rc;
    }
    /* Answers first, so that new probes find room in the batch. */
    for (int r = 0; r < f->size; r++) {
        if (f->probes[r].fd >= 0 && probe_check(f, &f->probes[r], now) == PROBE_DEAD) {
            return dead_error(f, r);
        }
    }
    for (int i = 0; i < f->size && f->probes_out < PROBE_BATCH; i++) {
        int r = f->probe_next;

        f->probe_next = (f->probe_next + 1) % f->size;
        if (f->probes[r].fd < 0 && probe_step(f, r, now) == PROBE_DEAD) {
            return dead_error(f, r);
        }
    }
    return PGC_OK;
}

int fab_probe_peer(struct fab *f, int peer)
{
    if (!f || !f->probes || peer < 0 || peer >= f->size) {
        return PGC_OK;
    }
    return probe_step(f, peer, mps_now()) == PROBE_DEAD ? dead_error(f, peer) : PGC_OK;
}

int fab_remote_verdict(struct fab *f, double limit)
{
    double end = mps_now() + limit;
    int rc = fab_remote_alive(f);

    while (rc == PGC_OK && f && f->probes && mps_now() < end) {
        (void)poll(NULL, 0, 5);
        rc = fab_remote_alive(f);
    }
    return rc;
}

void fab_probe_close(struct fab *f)
{
    for (int r = 0; f->probes && r < f->size; r++) {
        if (f->probes[r].fd >= 0) {
            probe_end(f, &f->probes[r]);
        }
    }
    free(f->probes);
    f->probes = NULL;
}
