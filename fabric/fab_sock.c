/*
 * fab_sock.c - active messages and tagged data over plain TCP sockets (see fab_sock.h).
 *
 * Connections: a rank connects to a peer at its first send to it, unless the peer has
 * connected to it first and named itself: then it writes on that connection, which carries
 * both directions. Each rank writes to a peer on one connection only, set at its first
 * send and never changed, so the order of its AMs is the order of that one stream; it reads
 * every connection of the peer. When both sides send their first frame at once there are
 * two, until the higher rank moves onto the lower rank's (MOVED and HERE below) and closes
 * its own, whose end the peer takes as a goodbye once it has read the MOVED; nothing is
 * dropped or retried, as Open MPI's btl/tcp must (it keeps the lower rank's connection and
 * drops the other). Each connection has a receive buffer of in_cap, since any may carry
 * the peer's frames. One connection both ways is what makes a
 * ping-pong cheap: a TCP stream on which data goes one way only acknowledges every small
 * segment the moment it is read (the kernel's "not interactive" rule), a pure ACK of a
 * loopback or veth transmit inside the recv call, while on a stream that answers, the ACK
 * rides on the reply (measured: one segment per message instead of two, TcpExtTCPHPAcks).
 * The connect itself needs no progress from the peer: its kernel completes the handshake
 * from the listen backlog.
 *
 * Wire: every frame starts with struct sock_hdr {src, kind, flags, len, tag} (24 bytes, so
 * payloads stay 8-byte aligned in the receive buffer). Kinds:
 *  - AM: len payload bytes, handed to the AM handler straight from the receive buffer;
 *  - CTS: "my receive for tag is posted and holds len bytes";
 *  - DATA: len bytes of the transfer tag (at most CHUNK), DATA_LAST on its last frame, with
 *    DATA_TRUNC when the sender had more than the receiver's len;
 *  - BYE: "this connection ends because I close", so that its end is not a death;
 *  - MOVED, HERE: the higher rank of a pair that connected both ways at once moves onto the
 *    lower rank's connection at its next send: MOVED is the last frame it writes on its own
 *    (then closed), HERE the first on the other. The receiver parses nothing after a HERE
 *    until it has read the MOVED, so the sender's frames stay in order across the move.
 *
 * Tagged data is pulled: fab_tsend only queues, fab_trecv posts the receive and sends a CTS,
 * and the sender streams the data when the CTS comes. fab.h lets the sender post its data
 * before the receive exists; pushed data would then have to be read somewhere, since an
 * AM behind it on the same stream may be what the receiver waits for before it posts (a
 * receive of a later small message with another tag): the whole transfer would have to be
 * buffered, of any size. With the CTS nothing is buffered and data goes from the socket
 * straight into the posted buffer; the cost is half a round trip more per rendezvous, which
 * is why peers reached here take eager messages up to MPISHIM_EAGER_MAX (fab_eager_fits).
 * Truncation costs nothing: the sender sends at most what the CTS says fits.
 *
 * Data goes in frames of at most CHUNK bytes; between two frames an AM may go first, so a
 * small message does not wait for a whole large transfer to be written.
 *
 * Progress is one epoll_wait (level triggered) over the listening socket and every
 * connection: idle peers cost nothing, and the epoll descriptor is what fab_sleep waits on.
 * A connection that ends without a BYE (EOF, reset, a write that fails) marks its peer dead:
 * its requests complete with PGC_ERR_PEER_DEAD and fab_remote_alive names it; the liveness
 * probes of fab_probe.c watch the listening sockets too, for peers with nothing in flight.
 */
#include "config.h"

#include "fab_sock.h"
#include "fab_reserve.h"
#include "mps_config.h"
#include "mps_ifaddr.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHUNK (256u * 1024u) /* data bytes per frame */
#define EVENTS 32            /* epoll events read per progress */
#define CTS_RESERVE 64       /* early CTS records for a malloc that fails (cts_in) */
#define TRY_S 5.0            /* longest connect to one address while the peer has others to try */

enum { K_AM = 1, K_CTS, K_DATA, K_BYE, K_MOVED, K_HERE };
enum { F_LAST = 1, F_TRUNC = 2 };

struct sock_hdr {
    uint32_t src;
    uint16_t kind;
    uint16_t flags;
    uint64_t len;
    uint64_t tag;
};
_Static_assert(sizeof(struct sock_hdr) == 24, "frame header layout");

/* A tagged transfer's state, kept in its request's fi_context2 (unused here otherwise), so
 * posting allocates nothing. */
struct sock_op {
    struct mps_list link; /* posted (receive), waiting or ready (send) */
    char *buf;
    size_t len;  /* receive: posted length; send: bytes to send (min with the CTS) */
    size_t done; /* bytes received or sent */
    uint64_t tag;
    uint64_t full; /* send: the caller's length (truncation) */
};
_Static_assert(sizeof(struct sock_op) <= sizeof(struct fi_context2), "op fits the context");

/* One TCP connection and the frame parser of what comes in on it. */
struct sock_conn {
    int fd;
    int peer;  /* -1 until the first frame of an accepted connection names it */
    bool bye;  /* the peer said goodbye on it */
    bool hold; /* the peer moved here (K_HERE) before its K_MOVED was read: parse nothing */
    char *buf;
    size_t head, tail, cap;
    struct fab_req *rreq; /* DATA frame being read into this receive */
    size_t rleft;         /* bytes of that frame still to come */
    uint16_t rflags;
    struct sock_conn *next;
};

/* A CTS that came before the fab_tsend it answers. */
struct sock_cts {
    uint64_t tag;
    size_t len;
    struct sock_cts *next;
};

struct sock_peer {
    union mps_sockaddr addr; /* the announced address this rank connects to */
    socklen_t alen;
    /* Until a connection to it is made, the peer's addresses in the order to try them
     * (mps_ifaddr_order; addr is cand[at]); NULL when it has one worth trying. */
    struct mps_inaddr *cand;
    uint8_t ncand, at;
    bool on;                 /* reached through this transport */
    bool dead;               /* a connection ended without a goodbye */
    int err;                 /* errno of that end (0: end of stream) */
    struct sock_conn *out;   /* the one connection this rank writes to peer on */
    struct sock_conn *in;    /* the first connection peer made to us, once it named itself */
    bool moved;              /* peer's K_MOVED came: its frames on out follow from there */
    struct mps_list posted;  /* receives whose CTS went out */
    struct mps_list waiting; /* sends without a CTS */
    struct mps_list ready;   /* sends with one, streamed in order */
    struct sock_cts *early;
    /* The frame being written to out: header, and how much of header + data went. */
    struct fab_req *active;
    struct sock_hdr fh;
    size_t fsent, flen;
    bool am_busy;  /* a blocking send is mid-frame on out: the pump keeps off */
    bool want_out; /* EPOLLOUT is asked for out */
};

struct fab_sock {
    int lfd, epfd;
    in_port_t port;                          /* where lfd listens (network order) */
    int naddr;                               /* addresses announced (sock_name): */
    struct mps_inaddr addrs[MPS_IFADDR_MAX]; /* these */
    struct ifaddrs *ifs;                     /* this host's, for picking peers' addresses */
    bool ifs_taken;                          /* ifs was asked for (NULL if getifaddrs failed) */
    struct sock_peer *peers;
    struct sock_conn *conns;            /* all, for fab_sock_close */
    size_t in_cap;                      /* receive buffer of every connection */
    bool busy;                          /* inside fab_sock_progress: no nested parsing */
    struct sock_cts spare[CTS_RESERVE]; /* for a malloc that fails (cts_in) */
    struct fab_reserve reserve;         /* spare behind malloc (fab_reserve.h) */
    char accept_lost[160];              /* set once accept4 ran out of descriptors */
    /* The last addresses that could not be reached (no route, no answer): a peer's
     * candidates on their subnets go last (prefer_reachable). */
    struct mps_inaddr unreached[4];
    int nunreached;         /* how many of them are filled */
    unsigned unreached_out; /* where the next goes (a ring) */
};

/* AM frames are padded to 8 bytes on the wire, so the next frame's payload stays aligned. */
static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

static struct sock_op *op_of(struct fab_req *req)
{
    return (struct sock_op *)&req->ctx;
}

static struct fab_req *req_of(struct mps_list *link)
{
    return (struct fab_req *)((char *)link - offsetof(struct sock_op, link) -
                              offsetof(struct fab_req, ctx));
}

/* ---- addresses and listening ---- */

/* What a rank publishes (the net slot of its address blob): its port and the addresses it
 * listens on (mps_ifaddr.h), n4 IPv4 ones then n6 IPv6 ones, packed: only the addresses
 * used are sent, and as many as fit the slot (FAB_NAME_MAX: every IPv4 address, and six
 * IPv6 ones beside two IPv4). */
#define SOCK_NAME_MAGIC 0x6d707336u /* "mps6": the name of a build without IPv6 differs */
struct sock_name {
    uint32_t magic;
    uint16_t port; /* network order */
    uint8_t n4, n6;
    uint8_t addr[FAB_NAME_MAX - 8]; /* n4 struct in_addr, then n6 struct in6_addr */
};
_Static_assert(sizeof(struct sock_name) <= FAB_NAME_MAX, "sock name fits the blob");

static size_t name_len(int n4, int n6)
{
    return offsetof(struct sock_name, addr) + (size_t)n4 * sizeof(struct in_addr) +
           (size_t)n6 * sizeof(struct in6_addr);
}

/* Keeps of s->addrs what the listener serves (IPv6 only on an IPv6 socket) and what fits a
 * name, in order. */
static void keep_announceable(struct fab_sock *s, bool v6_ok)
{
    int kept = 0, n4 = 0, n6 = 0;

    for (int k = 0; k < s->naddr; k++) {
        bool v4 = s->addrs[k].family == AF_INET;
        if ((!v4 && !v6_ok) || name_len(n4 + v4, n6 + !v4) > sizeof(struct sock_name)) {
            continue;
        }
        n4 += v4;
        n6 += !v4;
        s->addrs[kept++] = s->addrs[k];
    }
    s->naddr = kept;
}

/* The addresses to announce: the first that MPISHIM_FABRIC_IFACE selects (an interface or
 * a subnet: the one it listens on), else every interface's that is up and running but
 * loopback, else loopback (a host without a network: its own ranks only). */
static int my_addrs(struct fab_sock *s, const char *iface)
{
    s->naddr = mps_ifaddr_mine(iface, s->addrs, *iface ? 1 : MPS_IFADDR_MAX);
    if ((s->naddr < 0 && errno == EINVAL) || (s->naddr == 0 && *iface)) {
        return fab_iface_error(iface, s->naddr < 0 ? EINVAL : ENODEV);
    }
    if (s->naddr < 0) {
        return mps_error(PGC_ERR_FABRIC, "fab_open(sock): getifaddrs: %s", strerror(errno));
    }
    if (s->naddr == 0) {
        mps_inaddr_parse("127.0.0.1", &s->addrs[s->naddr++]);
    }
    return PGC_OK;
}

/* A listening socket on sa (any port); the descriptor, or -1 with errno set. Where sa is
 * IPv6's any address, the socket takes IPv4 connections too (v6only off), so one port
 * serves both families whatever net.ipv6.bindv6only says. */
static int listen_one(union mps_sockaddr *sa, socklen_t len)
{
    int fd = socket(sa->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int off = 0, err;

    if (fd < 0) {
        return -1;
    }
    if (sa->sa.sa_family == AF_INET6 && IN6_IS_ADDR_UNSPECIFIED(&sa->in6.sin6_addr)) {
        (void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
    }
    if (bind(fd, &sa->sa, len) == 0 && listen(fd, SOMAXCONN) == 0 &&
        getsockname(fd, &sa->sa, &len) == 0) {
        return fd;
    }
    err = errno;
    close(fd);
    errno = err;
    return -1;
}

/* Listens on MPISHIM_FABRIC_IFACE's address, else on every address of both families (one
 * port for all): IPv6's any address, or IPv4's where the host has no IPv6 (a kernel booted
 * with ipv6.disable=1), announcing then its IPv4 addresses only. */
static int listen_on(struct fab_sock *s)
{
    const char *iface = mps_config_str(MPS_CFG_FABRIC_IFACE);
    struct mps_inaddr any;
    union mps_sockaddr sa;
    socklen_t len;
    int rc = my_addrs(s, iface);

    if (rc != PGC_OK) {
        return rc;
    }
    mps_inaddr_parse("::", &any);
    len = mps_inaddr_sockaddr(*iface ? &s->addrs[0] : &any, 0, &sa);
    s->lfd = listen_one(&sa, len);
    if (s->lfd < 0 && !*iface) {
        mps_inaddr_parse("0.0.0.0", &any);
        len = mps_inaddr_sockaddr(&any, 0, &sa);
        s->lfd = listen_one(&sa, len);
    }
    if (s->lfd < 0) {
        char host[MPS_INADDR_STRLEN];
        return mps_error(PGC_ERR_FABRIC, "fab_open(sock): cannot listen on %s: %s",
                         mps_sockaddr_host(&sa.sa, host, sizeof(host)), strerror(errno));
    }
    keep_announceable(s, sa.sa.sa_family == AF_INET6);
    s->port = htons((uint16_t)mps_sockaddr_port(&sa.sa));
    return PGC_OK;
}

/* A rank may hold two descriptors per peer on another node (two connections until the
 * move, see the file's head) besides the library's and the program's own: an all-to-all of
 * 500 ranks would reach the usual soft limit of 1,024. So the soft limit is lifted toward
 * what the job can need, up to the hard limit (Open MPI lifts it to the hard limit). */
static void fit_fd_limit(int size)
{
    struct rlimit rl;
    rlim_t need = 2 * (rlim_t)size + 256;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= need) {
        return;
    }
    rlim_t old = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max != RLIM_INFINITY && rl.rlim_max < need ? rl.rlim_max : need;
    if (rl.rlim_cur > old && setrlimit(RLIMIT_NOFILE, &rl) == 0) {
        MPS_DEBUG("fab_open(sock): open files limit %llu -> %llu for %d ranks",
                  (unsigned long long)old, (unsigned long long)rl.rlim_cur, size);
    }
}

int fab_sock_open(struct fab *f)
{
    struct fab_sock *s = calloc(1, sizeof(*s));
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};

    if (!s || !(s->peers = calloc((size_t)f->size, sizeof(*s->peers)))) {
        free(s);
        return mps_error(PGC_ERR_NOMEM, "fab_open(sock): no memory for %d peers", f->size);
    }
    f->sock = s;
    s->lfd = s->epfd = -1;
    fab_reserve_init(&s->reserve, s->spare, sizeof(s->spare[0]), CTS_RESERVE);
    /* Room for the largest AM and its header twice, so a frame always fits after a move. */
    s->in_cap = MPS_MAX((size_t)65536, 2 * (sizeof(struct sock_hdr) + pad8(f->am_max)));
    for (int r = 0; r < f->size; r++) {
        mps_list_init(&s->peers[r].posted);
        mps_list_init(&s->peers[r].waiting);
        mps_list_init(&s->peers[r].ready);
    }
    fit_fd_limit(f->size);
    int rc = listen_on(s);
    if (rc == PGC_OK) {
        s->epfd = epoll_create1(EPOLL_CLOEXEC);
        if (s->epfd < 0 || epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->lfd, &ev) != 0) {
            rc = mps_error(PGC_ERR_FABRIC, "fab_open(sock): epoll: %s", strerror(errno));
        }
    }
    if (rc == PGC_OK && mps_log_enabled(MPS_LOG_DEBUG)) {
        char list[MPS_IFADDR_MAX * (MPS_INADDR_STRLEN + 2)];
        MPS_DEBUG("fab_open: sock listens on port %u, announcing %s", (unsigned)ntohs(s->port),
                  mps_ifaddr_list(s->addrs, s->naddr, list, sizeof(list)));
    }
    return rc;
}

size_t fab_sock_addr(const struct fab *f, void *name, size_t cap)
{
    const struct fab_sock *s = f->sock;
    struct sock_name n = {.magic = SOCK_NAME_MAGIC};
    uint8_t *at = n.addr;

    for (int k = 0; s && k < s->naddr; k++) { /* IPv4 ones come first (mps_ifaddr_mine) */
        size_t len =
            s->addrs[k].family == AF_INET ? sizeof(struct in_addr) : sizeof(struct in6_addr);
        memcpy(at, &s->addrs[k].a, len);
        at += len;
        n.n4 += s->addrs[k].family == AF_INET;
        n.n6 += s->addrs[k].family != AF_INET;
    }
    if (!s || cap < name_len(n.n4, n.n6)) {
        return 0;
    }
    n.port = s->port;
    memcpy(name, &n, name_len(n.n4, n.n6));
    return name_len(n.n4, n.n6);
}

/* The addresses of a peer's name (checked by the caller) into out; their count. */
static int name_addrs(const struct sock_name *n, struct mps_inaddr *out)
{
    const uint8_t *at = n->addr;
    int k = 0;

    for (; k < n->n4 + n->n6; k++) {
        size_t len = k < n->n4 ? sizeof(struct in_addr) : sizeof(struct in6_addr);
        memset(&out[k], 0, sizeof(out[k]));
        out[k].family = k < n->n4 ? AF_INET : AF_INET6;
        memcpy(&out[k].a, at, len);
        at += len;
    }
    return k;
}

static const char *node_name(const struct fab *f, int peer, int *len)
{
    const char *n = f->nodes + (size_t)peer * f->node_stride;

    *len = (int)strnlen(n, f->node_stride);
    return n;
}

/* Puts addrs[0..n) in the order to try them (mps_ifaddr_order) into p->cand, and the first
 * of them into addrs[0]; p->cand stays NULL where only one is worth trying (or no memory:
 * that one alone then, as before there were others). */
static void keep_candidates(struct sock_peer *p, struct mps_inaddr *addrs, int n,
                            const struct ifaddrs *mine)
{
    int order[MPS_IFADDR_MAX];
    int m = n > 1 ? mps_ifaddr_order_in(mine, addrs, n, order) : 1;

    if (m > 1 && (p->cand = malloc((size_t)m * sizeof(*p->cand))) != NULL) {
        for (int k = 0; k < m; k++) {
            p->cand[k] = addrs[order[k]];
        }
        p->ncand = (uint8_t)m;
    }
    addrs[0] = addrs[n > 1 ? order[0] : 0];
}

int fab_sock_connect(struct fab *f, int peer, const void *name, size_t len)
{
    struct sock_peer *p = &f->sock->peers[peer];
    struct sock_name n = {0};
    struct mps_inaddr addrs[MPS_IFADDR_MAX];
    int naddr;

    memcpy(&n, name, MPS_MIN(len, sizeof(n)));
    if (len < name_len(0, 0) || n.magic != SOCK_NAME_MAGIC || n.n4 + n.n6 < 1 ||
        n.n4 + n.n6 > MPS_IFADDR_MAX || len != name_len(n.n4, n.n6)) {
        return mps_error(PGC_ERR_MISMATCH,
                         "fab_connect: rank %d published no sock address (%zu B); do all "
                         "ranks agree on MPISHIM_FABRIC_PROVIDER/MPISHIM_FABRIC_NET_PROVIDER, "
                         "and run one mpishim build?",
                         peer, len);
    }
    naddr = name_addrs(&n, addrs);
    /* On this node any address reaches the peer (the first); else mps_ifaddr_order's first,
     * the others kept to try where it fails, against one listing of this host's interfaces
     * for all the peers. */
    if (!f->sock->ifs_taken && !fab_same_node(f, peer, f->rank)) {
        f->sock->ifs_taken = true;
        if (getifaddrs(&f->sock->ifs) != 0) {
            f->sock->ifs = NULL;
        }
    }
    keep_candidates(p, addrs, fab_same_node(f, peer, f->rank) ? 1 : naddr, f->sock->ifs);
    p->alen = mps_inaddr_sockaddr(&addrs[0], n.port, &p->addr);
    p->on = true;
    return PGC_OK;
}

const struct sockaddr *fab_sock_peer_addr(const struct fab *f, int peer, socklen_t *len)
{
    *len = f->sock->peers[peer].alen;
    return &f->sock->peers[peer].addr.sa;
}

bool fab_sock_peer(const struct fab *f, int peer)
{
    return f->sock && f->sock->peers[peer].on;
}

int fab_sock_wait_fd(const struct fab *f)
{
    return f->sock->epfd;
}

/* ---- connections ---- */

/* What to say of an error of socket() or accept4(): its text, and where it is the limit
 * on open files, that limit and the cure. */
static const char *fd_error(int err, char *buf, size_t cap)
{
    struct rlimit rl = {0};

    if (err != EMFILE && err != ENFILE) {
        return strerror(err);
    }
    (void)getrlimit(RLIMIT_NOFILE, &rl);
    snprintf(buf, cap, "%s (open files limit %llu: raise `ulimit -n`)", strerror(err),
             (unsigned long long)rl.rlim_cur);
    return buf;
}

static struct sock_conn *conn_new(struct fab_sock *s, int fd, int peer, size_t cap)
{
    struct sock_conn *c = calloc(1, sizeof(*c));
    struct epoll_event ev = {.events = EPOLLIN};
    int one = 1;

    if (c && !(c->buf = malloc(cap))) {
        free(c);
        c = NULL;
    }
    ev.data.ptr = c;
    if (!c || epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0) {
        if (c) {
            free(c->buf);
            free(c);
        }
        close(fd);
        return NULL;
    }
    /* Small frames go at once: a ping-pong waits for each of them. */
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    c->fd = fd;
    c->peer = peer;
    c->cap = cap;
    c->next = s->conns;
    s->conns = c;
    return c;
}

static void conn_end(struct fab_sock *s, struct sock_conn *c)
{
    if (c->fd >= 0) {
        (void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
        c->fd = -1;
    }
}

/* The error of a peer found dead, naming it, its node, its address and what was seen. */
static int dead_error(const struct fab *f, int peer)
{
    const struct sock_peer *p = &f->sock->peers[peer];
    char host[MPS_INADDR_STRLEN];
    int nlen;
    const char *node = node_name(f, peer, &nlen);

    return mps_error(
        PGC_ERR_PEER_DEAD,
        "rank %d (on node %.*s) is gone: its sock connection (%s port %u) failed "
        "or ended without a goodbye (%s); this rank was waiting for it or for a peer that "
        "needs it",
        peer, nlen, node, mps_sockaddr_host(&p->addr.sa, host, sizeof(host)),
        mps_sockaddr_port(&p->addr.sa), p->err ? strerror(p->err) : "end of stream");
}

static void fail_list(struct mps_list *list, int status)
{
    while (!mps_list_empty(list)) {
        struct fab_req *req = req_of(list->next);

        mps_list_remove(list->next);
        req->complete(req, status, 0);
    }
}

/* peer's process is gone (err: what the socket said): every transfer with it fails. */
static void peer_dead(struct fab *f, int peer, int err)
{
    struct sock_peer *p = &f->sock->peers[peer];

    if (p->dead) {
        return;
    }
    p->dead = true;
    p->err = err;
    MPS_DEBUG("fab_progress: sock connection of rank %d ended: %s", peer,
              err ? strerror(err) : "end of stream");
    /* Its connections end too: a receive being filled must not be written after it failed. */
    for (struct sock_conn *c = f->sock->conns; c; c = c->next) {
        if (c->peer == peer) {
            conn_end(f->sock, c);
            c->rreq = NULL;
        }
    }
    p->active = NULL; /* the head of ready, failed with it */
    fail_list(&p->posted, PGC_ERR_PEER_DEAD);
    fail_list(&p->waiting, PGC_ERR_PEER_DEAD);
    fail_list(&p->ready, PGC_ERR_PEER_DEAD);
}

/* A connection ended (err 0: end of stream): a death unless the peer said goodbye. */
static void conn_lost(struct fab *f, struct sock_conn *c, int err)
{
    int peer = c->peer;
    bool bye = c->bye;

    conn_end(f->sock, c);
    if (peer >= 0 && !bye) {
        peer_dead(f, peer, err);
    }
}

/* Waits for a non-blocking connect, at most the timeout; 0 or the errno. */
static int connect_wait(int fd, double timeout)
{
    struct pollfd pfd = {.fd = fd, .events = POLLOUT};
    socklen_t elen = sizeof(int);
    int err = 0;
    int n;

    do {
        n = poll(&pfd, 1, (int)(timeout * 1000));
    } while (n < 0 && errno == EINTR);
    if (n == 0) {
        return ETIMEDOUT;
    }
    if (n < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) != 0) {
        return errno;
    }
    return err;
}

/* One connect to p's address, waiting at most limit seconds: 0 with the descriptor, the
 * errno of the connect, or minus socket()'s errno. */
static int connect_once(const struct sock_peer *p, double limit, int *fd_out)
{
    int fd = socket(p->addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int err = 0;

    if (fd < 0) {
        return -errno;
    }
    if (connect(fd, &p->addr.sa, p->alen) != 0) {
        err = errno == EINPROGRESS ? connect_wait(fd, limit) : errno;
    }
    if (err) {
        close(fd);
        return err;
    }
    *fd_out = fd;
    return 0;
}

/* peer's address becomes its candidate at (the port stays); the probes follow it. */
static void use_candidate(struct fab *f, int peer)
{
    struct sock_peer *p = &f->sock->peers[peer];
    in_port_t port = htons((uint16_t)mps_sockaddr_port(&p->addr.sa));

    p->alen = mps_inaddr_sockaddr(&p->cand[p->at], port, &p->addr);
    fab_probe_note_prov(f, peer, FAB_SOCK_NAME, &p->addr.sa, p->alen);
}

/* Whether a is on the subnet of an address this rank found unreachable. */
static bool near_unreached(const struct fab_sock *s, const struct mps_inaddr *a)
{
    for (int k = 0; k < s->nunreached; k++) {
        if (mps_ifaddr_same_subnet(s->ifs, a, &s->unreached[k])) {
            return true;
        }
    }
    return false;
}

/* Before the first connect to peer: its candidates on the subnet of an address found
 * unreachable (another peer's, on a private network of its node) go last, so that only
 * the first peer pays the wait for "no route" (about 3 s of unanswered ARP). */
static void prefer_reachable(struct fab *f, int peer)
{
    struct sock_peer *p = &f->sock->peers[peer];
    struct mps_inaddr sorted[MPS_IFADDR_MAX];
    int m = 0;

    if (p->ncand < 2 || f->sock->nunreached == 0) {
        return;
    }
    for (int late = 0; late < 2; late++) {
        for (int k = 0; k < p->ncand; k++) {
            if (near_unreached(f->sock, &p->cand[k]) == (bool)late) {
                sorted[m++] = p->cand[k];
            }
        }
    }
    memcpy(p->cand, sorted, (size_t)m * sizeof(*p->cand));
    p->at = 0;
    use_candidate(f, peer);
}

/* After a connect to peer's address failed with err: its next candidate, if it has one.
 * An address that refused or is unreachable is dropped; one that did not answer in time
 * goes last, to be tried again while the timeout lasts (a listen queue overflowing at
 * scale drops connects too). One not reached is remembered (prefer_reachable). */
static bool next_candidate(struct fab *f, int peer, int err)
{
    struct fab_sock *s = f->sock;
    struct sock_peer *p = &s->peers[peer];
    char was[MPS_INADDR_STRLEN], now[MPS_INADDR_STRLEN];

    if (p->ncand < 2) {
        return false;
    }
    if (err == EHOSTUNREACH || err == ENETUNREACH || err == ETIMEDOUT) {
        s->unreached[s->unreached_out++ % 4] = p->cand[p->at];
        s->nunreached = MPS_MIN(s->nunreached + 1, 4);
    }
    mps_sockaddr_host(&p->addr.sa, was, sizeof(was));
    if (err == ETIMEDOUT) {
        p->at = (uint8_t)((p->at + 1) % p->ncand);
    } else {
        p->ncand--;
        memmove(&p->cand[p->at], &p->cand[p->at + 1],
                (size_t)(p->ncand - p->at) * sizeof(*p->cand));
        p->at = p->at == p->ncand ? 0 : p->at;
    }
    use_candidate(f, peer);
    MPS_INFO("fab_sock: rank %d not reached at %s (%s); trying %s", peer, was, strerror(err),
             mps_inaddr_str(&p->cand[p->at], now, sizeof(now)));
    return true;
}

/* Connects to peer at its address, or at its other candidates in turn where that fails,
 * each try at most TRY_S while others remain (a firewall that drops a connect says
 * nothing), all within the timeout. 0 with the descriptor, else as connect_once. Once
 * connected the address is the peer's for good: the candidates go. */
static int connect_any(struct fab *f, int peer, int *fd_out)
{
    struct sock_peer *p = &f->sock->peers[peer];
    double deadline = mps_now() + f->timeout;
    int err;

    prefer_reachable(f, peer);
    do {
        double left = deadline - mps_now();
        err = left > 0 ? connect_once(p, p->ncand > 1 && left > TRY_S ? TRY_S : left, fd_out)
                       : ETIMEDOUT;
    } while (err > 0 && mps_now() < deadline && next_candidate(f, peer, err));
    if (err == 0) {
        free(p->cand);
        p->cand = NULL;
        p->ncand = 0;
    }
    return err;
}

enum fab_sock_next fab_sock_next_address(struct fab *f, int peer, int err)
{
    if (!f->sock || peer < 0 || peer >= f->size) {
        return FAB_SOCK_NEXT_NONE;
    }
    if (next_candidate(f, peer, err)) {
        return FAB_SOCK_NEXT_MOVED;
    }
    /* The candidates go once connected (connect_any); one left is the last of several. */
    return f->sock->peers[peer].cand ? FAB_SOCK_NEXT_LAST : FAB_SOCK_NEXT_NONE;
}

/* The connection to peer, made at the first send. */
static int get_out(struct fab *f, int peer, struct sock_conn **out)
{
    struct sock_peer *p = &f->sock->peers[peer];
    int fd, err = 0;

    if (p->dead) {
        return dead_error(f, peer);
    }
    if (!p->out && p->in && p->in->fd >= 0) {
        p->out = p->in; /* the peer's connection, both ways: see the file's head */
        MPS_DEBUG("fab_am_send(sock): writes to rank %d on the connection it made", peer);
    }
    if (p->out && p->out->fd >= 0) {
        *out = p->out;
        return PGC_OK;
    }
    err = connect_any(f, peer, &fd);
    if (err < 0) {
        char why[128];
        return mps_error(PGC_ERR_FABRIC, "fab_am_send(sock): cannot connect to rank %d: socket: %s",
                         peer, fd_error(-err, why, sizeof(why)));
    }
    if (err) {
        peer_dead(f, peer, err);
        return dead_error(f, peer);
    }
    p->want_out = false;
    p->out = conn_new(f->sock, fd, peer, f->sock->in_cap);
    if (!p->out) {
        return mps_error(PGC_ERR_NOMEM, "fab_am_send(sock): no memory for a connection");
    }
    *out = p->out;
    return PGC_OK;
}

/* Out of descriptors, a peer's connection stays in the backlog and the listener readable:
 * stop watching it (no spinning on it) and fail this rank's waits with the cause, not with
 * a peer's timeout much later. */
static void accept_failed(struct fab_sock *s, int err)
{
    char why[128];

    (void)epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->lfd, NULL);
    snprintf(s->accept_lost, sizeof(s->accept_lost),
             "fab_progress(sock): cannot take a peer's connection: %s",
             fd_error(err, why, sizeof(why)));
}

static void accept_all(struct fab *f)
{
    int fd;

    while ((fd = accept4(f->sock->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
        if (!conn_new(f->sock, fd, -1, f->sock->in_cap)) {
            MPS_ERR("fab_progress(sock): no memory for an incoming connection");
        }
    }
    if ((errno == EMFILE || errno == ENFILE) && !f->sock->accept_lost[0]) {
        accept_failed(f->sock, errno);
    }
}

/* ---- writing ---- */

/* Writes iov[0..n) from byte skip on; the bytes written (maybe 0), or -errno. */
static ssize_t write_from(int fd, const struct iovec *iov, int n, size_t skip)
{
    struct iovec v[4]; /* an AM: header, caller's header, payload, padding */
    int k = 0;

    for (int i = 0; i < n; i++) {
        if (skip >= iov[i].iov_len) {
            skip -= iov[i].iov_len;
            continue;
        }
        v[k].iov_base = (char *)iov[i].iov_base + skip;
        v[k++].iov_len = iov[i].iov_len - skip;
        skip = 0;
    }
    struct msghdr m = {.msg_iov = v, .msg_iovlen = (size_t)k};
    ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
    if (w < 0) {
        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
    }
    return w;
}

static void want_out(struct fab_sock *s, struct sock_peer *p, bool on)
{
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = p->out};

    if (p->want_out != on && p->out->fd >= 0) {
        (void)epoll_ctl(s->epfd, EPOLL_CTL_MOD, p->out->fd, &ev);
        p->want_out = on;
    }
}

/* Starts the next frame of the send at the head of ready. */
static void next_frame(struct fab *f, struct sock_peer *p)
{
    struct fab_req *req = req_of(p->ready.next);
    struct sock_op *op = op_of(req);
    size_t n = MPS_MIN(op->len - op->done, (size_t)CHUNK);
    bool last = op->done + n == op->len;

    p->active = req;
    p->fh = (struct sock_hdr){.src = (uint32_t)f->rank, .kind = K_DATA, .len = n, .tag = op->tag};
    p->fh.flags = (uint16_t)((last ? F_LAST : 0) | (last && op->full > op->len ? F_TRUNC : 0));
    p->fsent = 0;
    p->flen = sizeof(p->fh) + n;
}

/* Writes (more of) the data frame under way to peer, starting the next one when none is;
 * true once it is all written. */
static bool pump_frame(struct fab *f, int peer, struct sock_peer *p)
{
    if (p->out->fd < 0) {
        peer_dead(f, peer, EPIPE); /* it said goodbye and left with a send to take */
        return false;
    }
    if (!p->active) {
        next_frame(f, p);
    }
    struct sock_op *op = op_of(p->active);
    struct iovec iov[2] = {{&p->fh, sizeof(p->fh)}, {op->buf + op->done, p->fh.len}};
    ssize_t w = write_from(p->out->fd, iov, 2, p->fsent);
    if (w < 0) {
        conn_lost(f, p->out, (int)-w);
        return false;
    }
    p->fsent += (size_t)w;
    if (p->fsent < p->flen) {
        want_out(f->sock, p, true);
        return false;
    }
    op->done += p->fh.len;
    p->active = NULL;
    if (p->fh.flags & F_LAST) {
        struct fab_req *req = req_of(p->ready.next);

        mps_list_remove(p->ready.next);
        req->complete(req, PGC_OK, 0);
    }
    return true;
}

/* Writes data frames to peer until the socket is full or no send has its CTS. */
static void pump(struct fab *f, int peer)
{
    struct sock_peer *p = &f->sock->peers[peer];

    while (!p->am_busy && !p->dead && (p->active || !mps_list_empty(&p->ready))) {
        if (!pump_frame(f, peer, p)) {
            return;
        }
    }
    if (p->out && p->out->fd >= 0) {
        want_out(f->sock, p, false);
    }
}

/* Writes iov[0..n) whole to c, progressing while the socket is full. */
static int write_whole(struct fab *f, int peer, struct sock_conn *c, const struct iovec *iov, int n,
                       struct fab_wait *w, const char *call)
{
    struct sock_peer *p = &f->sock->peers[peer];
    size_t total = 0, sent = 0;
    int rc = PGC_OK;

    for (int i = 0; i < n; i++) {
        total += iov[i].iov_len;
    }
    p->am_busy = true;
    while (rc == PGC_OK && sent < total) {
        ssize_t k = p->dead ? -EPIPE : write_from(c->fd, iov, n, sent);
        if (k < 0) {
            conn_lost(f, c, (int)-k);
            rc = dead_error(f, peer);
        } else if ((sent += (size_t)k) < total) {
            rc = fab_wait_step(f, w, peer, call);
        }
    }
    p->am_busy = false;
    return rc;
}

/* Whether this rank writes to peer, a lower rank, on its own connection while peer's
 * connection to it is there too (both made their first send at once): then it moves. */
static bool should_move(const struct fab *f, int peer)
{
    const struct sock_peer *p = &f->sock->peers[peer];

    return peer < f->rank && p->in && p->in != p->out && p->in->fd >= 0;
}

/* Moves this rank's writes to peer onto peer's connection (K_MOVED, K_HERE: see the file's
 * head), so that the pair's traffic goes both ways on one connection from now on. */
static int move_out(struct fab *f, int peer, struct sock_conn **c, struct fab_wait *w,
                    const char *call)
{
    struct sock_peer *p = &f->sock->peers[peer];
    struct sock_hdr moved = {.src = (uint32_t)f->rank, .kind = K_MOVED};
    struct sock_hdr here = {.src = (uint32_t)f->rank, .kind = K_HERE};
    struct iovec v[2] = {{&moved, sizeof(moved)}, {&here, sizeof(here)}};
    struct sock_conn *old = *c;
    int rc = write_whole(f, peer, old, &v[0], 1, w, call);

    if (rc == PGC_OK) {
        MPS_DEBUG("fab_am_send(sock): moves onto the connection rank %d made", peer);
        want_out(f->sock, p, false); /* room is asked for on the connection written to */
        p->out = p->in;
        *c = p->out;
        /* Nothing comes on old any more (the peer writes on its own) and nothing goes: close
         * it, so that a pair holds one descriptor each, not two (an all-to-all makes every
         * pair connect both ways at once). The peer reads K_MOVED, then the end, which the
         * K_MOVED made a goodbye. */
        conn_end(f->sock, old);
        rc = write_whole(f, peer, *c, &v[1], 1, w, call);
    }
    return rc;
}

/* Writes one frame of iov[0..n) whole, progressing while the socket is full. */
static int send_frame(struct fab *f, int peer, const struct iovec *iov, int n, const char *call)
{
    struct sock_peer *p = &f->sock->peers[peer];
    struct sock_conn *c;
    struct fab_wait w = {0};
    int rc = get_out(f, peer, &c);

    /* A data frame half written goes on first (written here, not left to progress, which
     * does nothing when this runs inside it); between two frames an AM may pass. */
    while (rc == PGC_OK && p->active && p->fsent > 0 && !p->dead && !pump_frame(f, peer, p)) {
        rc = fab_wait_step(f, &w, peer, call);
    }
    if (rc == PGC_OK && should_move(f, peer)) {
        rc = move_out(f, peer, &c, &w, call);
    }
    if (rc == PGC_OK) {
        rc = write_whole(f, peer, c, iov, n, &w, call);
    }
    if (rc == PGC_OK && !mps_list_empty(&p->ready)) {
        pump(f, peer);
    }
    return rc;
}

int fab_sock_am_send(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                     size_t plen)
{
    static const char zeros[8];
    struct sock_hdr h = {.src = (uint32_t)f->rank, .kind = K_AM, .len = hlen + plen};
    struct iovec iov[4] = {{&h, sizeof(h)},
                           {(void *)hdr, hlen},
                           {(void *)payload, plen},
                           {(void *)zeros, pad8(hlen + plen) - (hlen + plen)}};

    return send_frame(f, peer, iov, 4, "fab_am_send");
}

/* A CTS for tag has come (len: the receiver's room): the send streams, or waits for it. */
static void cts_in(struct fab *f, int peer, uint64_t tag, size_t len)
{
    struct sock_peer *p = &f->sock->peers[peer];
    struct mps_list *pos;

    mps_list_for_each(pos, &p->waiting)
    {
        struct sock_op *op = op_of(req_of(pos));
        if (op->tag == tag) {
            op->len = MPS_MIN(op->full, len);
            mps_list_remove(pos);
            mps_list_push_back(&p->ready, pos);
            pump(f, peer);
            return;
        }
    }
    /* Kept for its send. A lost CTS leaves that send, and the receive at the other end,
     * waiting for good: the reserve covers CTS_RESERVE of them waiting at once, beyond which
     * the rank records the loss and fails its waits (fab_sock_health). (pg_p2p.c writes a
     * rendezvous's RTS whole before its fab_tsend, with no progress between, so its CTS
     * cannot come first; fab.h allows the other order.) */
    struct sock_cts *e = fab_reserve_take(&f->sock->reserve, "a clear-to-send of", peer);
    if (e) {
        *e = (struct sock_cts){.tag = tag, .len = len, .next = p->early};
        p->early = e;
    }
}

int fab_sock_tsend(struct fab *f, int peer, const void *buf, size_t len, uint64_t tag,
                   struct fab_req *req)
{
    struct sock_peer *p = &f->sock->peers[peer];
    struct sock_op *op = op_of(req);
    struct sock_conn *c;
    int rc = get_out(f, peer, &c);

    if (rc != PGC_OK) {
        return rc;
    }
    *op = (struct sock_op){.buf = (char *)buf, .len = len, .tag = tag, .full = len};
    mps_list_push_back(&p->waiting, &op->link);
    for (struct sock_cts **e = &p->early; *e; e = &(*e)->next) {
        if ((*e)->tag == tag) {
            struct sock_cts *hit = *e;
            *e = hit->next;
            cts_in(f, peer, tag, hit->len);
            fab_reserve_put(&f->sock->reserve, hit);
            break;
        }
    }
    return PGC_OK;
}

int fab_sock_trecv(struct fab *f, int peer, void *buf, size_t len, uint64_t tag,
                   struct fab_req *req)
{
    struct sock_peer *p = &f->sock->peers[peer];
    struct sock_op *op = op_of(req);
    struct sock_hdr h = {.src = (uint32_t)f->rank, .kind = K_CTS, .len = len, .tag = tag};
    struct iovec iov[1] = {{&h, sizeof(h)}};
    int rc = send_frame(f, peer, iov, 1, "fab_trecv");

    /* Posted once the CTS went: its data cannot come before our next progress reads it,
     * and a call that fails never completes its request. */
    if (rc == PGC_OK) {
        *op = (struct sock_op){.buf = buf, .len = len, .tag = tag};
        mps_list_push_back(&p->posted, &op->link);
    }
    return rc;
}

/* ---- reading ---- */

/* Reads what the socket has into c's buffer, moving the unread part to its start first
 * when less than need bytes of room are left. 1: bytes came (*drained: fewer than there was
 * room for, so the socket is empty); 0: none yet; -1: the connection ended (conn_lost ran). */
static int fill(struct fab *f, struct sock_conn *c, size_t need, bool *drained)
{
    if (c->head == c->tail) {
        c->head = c->tail = 0;
    } else if (c->cap - c->head < need) {
        memmove(c->buf, c->buf + c->head, c->tail - c->head);
        c->tail -= c->head;
        c->head = 0;
    }
    ssize_t n = recv(c->fd, c->buf + c->tail, c->cap - c->tail, 0);
    if (n > 0) {
        *drained = (size_t)n < c->cap - c->tail;
        c->tail += (size_t)n;
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return 0;
    }
    conn_lost(f, c, n < 0 ? errno : 0);
    return -1;
}

/* A protocol error from a peer: nothing it sends can be trusted from here on. */
static int bad_frame(struct fab *f, struct sock_conn *c, const struct sock_hdr *h)
{
    MPS_ERR("fab_progress(sock): bad frame (src %u, kind %u, %llu B) from rank %d: "
            "connection dropped",
            h->src, h->kind, (unsigned long long)h->len, c->peer);
    conn_lost(f, c, EPROTO);
    return -1;
}

static struct fab_req *find_posted(struct sock_peer *p, uint64_t tag)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &p->posted)
    {
        if (op_of(req_of(pos))->tag == tag) {
            return req_of(pos);
        }
    }
    return NULL;
}

/* A DATA frame's header: its bytes go to the posted receive of its tag. */
static int data_in(struct fab *f, struct sock_conn *c, const struct sock_hdr *h)
{
    struct fab_req *req = find_posted(&f->sock->peers[c->peer], h->tag);
    struct sock_op *op = req ? op_of(req) : NULL;

    if (!op || h->len > op->len - op->done) {
        return bad_frame(f, c, h); /* we never asked for these bytes */
    }
    c->rreq = req;
    c->rleft = h->len;
    c->rflags = h->flags;
    return 1;
}

/* The bytes of the DATA frame being read: from the buffer, then straight from the socket
 * into the receive. 1: the frame is complete; 0: more must come; -1: connection lost. */
static int data_body(struct fab *f, struct sock_conn *c)
{
    struct sock_op *op = op_of(c->rreq);
    size_t have = MPS_MIN(c->rleft, c->tail - c->head);

    if (have) {
        memcpy(op->buf + op->done, c->buf + c->head, have);
    }
    c->head += have;
    op->done += have;
    c->rleft -= have;
    while (c->rleft > 0) {
        ssize_t n = recv(c->fd, op->buf + op->done, c->rleft, 0);
        if (n <= 0) {
            if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
                return 0;
            }
            conn_lost(f, c, n < 0 ? errno : 0);
            return -1;
        }
        op->done += (size_t)n;
        c->rleft -= (size_t)n;
    }
    struct fab_req *req = c->rreq;
    c->rreq = NULL;
    if (c->rflags & F_LAST) {
        mps_list_remove(&op->link);
        req->complete(req, (c->rflags & F_TRUNC) ? PGC_ERR_TRUNCATE : PGC_OK, op->done);
    }
    return 1;
}

/* An AM frame: to the handler once it is all in the buffer, its payload 8-byte aligned (a
 * data frame of odd length before it leaves the stream off alignment: moved then). */
static int am_in(struct fab *f, struct sock_conn *c, const struct sock_hdr *h)
{
    size_t flen = sizeof(*h) + pad8(h->len);

    if (flen > c->cap / 2) {
        return bad_frame(f, c, h);
    }
    if (c->tail - c->head < flen) {
        return 0;
    }
    if (c->head & 7) {
        memmove(c->buf, c->buf + c->head, c->tail - c->head);
        c->tail -= c->head;
        c->head = 0;
    }
    c->head += flen;
    (void)f->am_handler(f->am_arg, c->peer, c->buf + c->head - flen + sizeof(*h), h->len, false);
    return 1;
}

static int conn_in(struct fab *f, struct sock_conn *c);

/* peer wrote its last frame on its own connection: what it wrote on ours may be read. Read
 * at once: the bytes may all be in our buffer already, and then epoll says nothing more. */
static int moved_in(struct fab *f, int peer)
{
    struct sock_peer *p = &f->sock->peers[peer];

    p->moved = true;
    if (!p->out || !p->out->hold) {
        return 1;
    }
    p->out->hold = false;
    return 1 + conn_in(f, p->out);
}

/* Handles the frame at the head of c's buffer when it is all there. 1: handled; 0: more
 * bytes must come; -1: the connection was dropped. */
static int frame_in(struct fab *f, struct sock_conn *c)
{
    struct sock_hdr h;

    if (c->tail - c->head < sizeof(h)) {
        return 0;
    }
    memcpy(&h, c->buf + c->head, sizeof(h));
    if (h.src >= (uint32_t)f->size || (c->peer >= 0 && h.src != (uint32_t)c->peer) ||
        !f->sock->peers[h.src].on) {
        return bad_frame(f, c, &h);
    }
    if (c->peer < 0) {
        c->peer = (int)h.src;
        if (!f->sock->peers[h.src].in) {
            f->sock->peers[h.src].in = c;
        }
    }
    if (h.kind == K_AM) {
        return am_in(f, c, &h);
    }
    if (h.kind == K_HERE && !f->sock->peers[c->peer].moved) {
        c->hold = true; /* what follows waits for the peer's frames before its K_MOVED */
        MPS_DEBUG("fab_progress(sock): rank %d moved here before its K_MOVED was read", c->peer);
        return 0;
    }
    c->head += sizeof(h);
    switch (h.kind) {
    case K_CTS:
        cts_in(f, c->peer, h.tag, h.len);
        return 1;
    case K_DATA:
        return data_in(f, c, &h);
    case K_BYE:
        c->bye = true;
        return 1;
    case K_MOVED:
        c->bye = true; /* the peer's last frame on c: its end is no death (move_out) */
        return moved_in(f, c->peer);
    case K_HERE:
        return 1;
    default:
        return bad_frame(f, c, &h);
    }
}

/* Handles every frame c has, reading until the socket is empty; the frames handled. */
static int conn_in(struct fab *f, struct sock_conn *c)
{
    int handled = 0;
    bool drained = false;

    while (c->fd >= 0 && !c->hold) {
        bool data = c->rreq != NULL;
        int rc = data ? data_body(f, c) : frame_in(f, c);
        if (rc < 0 || c->hold) {
            break;
        }
        handled += rc;
        drained = drained && !data; /* a whole data frame was read: more may be there */
        /* An empty socket ends the loop without one more read that would say so: the epoll
         * set is level triggered and reports what comes later. data_body stops only there. */
        if (rc == 0 && (data || drained)) {
            break;
        }
        /* Room for a whole AM (header and largest payload) once the frame has begun. */
        if (rc == 0 && fill(f, c, c->cap / 2, &drained) <= 0) {
            break;
        }
    }
    return handled;
}

/* ---- progress, sleep, liveness, close ---- */

/* Frees c when it ended before it said who it was (a liveness probe, fab_probe.c: one
 * every 0.25 s from each waiting peer), which nothing else refers to. */
static void forget_anonymous(struct fab_sock *s, struct sock_conn *c)
{
    if (c->fd >= 0 || c->peer >= 0) {
        return;
    }
    for (struct sock_conn **pp = &s->conns; *pp; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            free(c->buf);
            free(c);
            return;
        }
    }
}

/* Handles what epoll reports: new connections, readable ones, writable ones a send waits
 * for. The number of frames and writes handled, or an error. */
static int poll_events(struct fab *f)
{
    struct fab_sock *s = f->sock;
    struct epoll_event ev[EVENTS];
    int handled = 0;
    int n = epoll_wait(s->epfd, ev, EVENTS, 0);

    if (n < 0) {
        return errno == EINTR ? 0
                              : mps_error(PGC_ERR_FABRIC, "fab_progress(sock): epoll_wait: %s",
                                          strerror(errno));
    }
    for (int i = 0; i < n; i++) {
        struct sock_conn *c = ev[i].data.ptr;
        if (!c) {
            accept_all(f);
            continue;
        }
        if (ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            handled += conn_in(f, c);
        }
        if ((ev[i].events & EPOLLOUT) && c->peer >= 0 && c->fd >= 0) {
            pump(f, c->peer);
            handled++;
        }
        forget_anonymous(s, c);
    }
    return handled;
}

/*
 * One epoll_wait, then a recv on each connection it names. Reading the few connections
 * with a plain recv at every progress instead, without epoll, was measured and left: it
 * saves the epoll_wait of a message that came, but an empty recv costs 0.3 us against an
 * empty epoll_wait's 0.13 us here, and a waiting rank polls dozens of times a message
 * (bench/ab, 2 ranks over sock, 8 rounds: epoll alone had 0.97-0.98 of its latency).
 */
int fab_sock_progress(struct fab *f)
{
    struct fab_sock *s = f->sock;
    int handled;

    if (s->busy) {
        return 0; /* a complete() called from here progresses: the outer call goes on */
    }
    s->busy = true;
    handled = poll_events(f);
    s->busy = false;
    return handled;
}

int fab_sock_health(const struct fab *f)
{
    if (f->sock && f->sock->reserve.lost[0]) {
        return mps_error(PGC_ERR_NOMEM, "%s", f->sock->reserve.lost);
    }
    if (f->sock && f->sock->accept_lost[0]) {
        return mps_error(PGC_ERR_FABRIC, "%s", f->sock->accept_lost);
    }
    return PGC_OK;
}

int fab_sock_alive(struct fab *f)
{
    for (int r = 0; f->sock && r < f->size; r++) {
        if (f->sock->peers[r].dead) {
            return dead_error(f, r);
        }
    }
    return PGC_OK;
}

/* Goodbye on c, best effort: a connection mid-frame or full gets none (the peer then sees
 * an end without one, as after a crash, which only matters if it waits for us). */
static void say_bye(struct fab *f, struct sock_conn *c)
{
    struct sock_hdr h = {.src = (uint32_t)f->rank, .kind = K_BYE};
    struct sock_peer *p = c->peer >= 0 ? &f->sock->peers[c->peer] : NULL;

    if (c->fd >= 0 && c->peer >= 0 && !(p->out == c && p->active && p->fsent > 0)) {
        (void)send(c->fd, &h, sizeof(h), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
}

void fab_sock_close(struct fab *f)
{
    struct fab_sock *s = f->sock;

    if (!s) {
        return;
    }
    for (struct sock_conn *c = s->conns, *next; c; c = next) {
        next = c->next;
        say_bye(f, c);
        conn_end(s, c);
        free(c->buf);
        free(c);
    }
    for (int r = 0; r < f->size; r++) {
        for (struct sock_cts *e = s->peers[r].early, *next; e; e = next) {
            next = e->next;
            fab_reserve_put(&s->reserve, e);
        }
    }
    if (s->lfd >= 0) {
        close(s->lfd);
    }
    if (s->epfd >= 0) {
        close(s->epfd);
    }
    if (s->ifs) {
        freeifaddrs(s->ifs);
    }
    for (int r = 0; r < f->size; r++) {
        free(s->peers[r].cand);
    }
    free(s->peers);
    free(s);
    f->sock = NULL;
}
