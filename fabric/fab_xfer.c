/*
 * fab_xfer.c - active messages, tagged data and completion progress.
 *
 * Every operation posted to libfabric carries a struct fab_req as its context: the
 * caller's for tagged data, an internal one embedded in a struct fab_buf for AM receive
 * and bounce buffers. fab_progress therefore dispatches every completion the same way,
 * by calling req->complete. No path here allocates memory: AMs go out with fi_tinject
 * from a stack copy when they fit, otherwise from a preallocated bounce buffer.
 */
#include "config.h"

#include "fab_int.h"
#include "fab_shm.h"
#include "fab_sock.h"
#include "mps_copy.h"
#include "mps_log.h"
#include "mps_stats.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <errno.h>
#include <poll.h>
#include <rdma/fi_errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>


/* ---- error conversion ---- */

static int map_fi_code(int fi_code)
{
    switch (fi_code) {
    case FI_ETRUNC:
        return PGC_ERR_TRUNCATE;
    case FI_ECANCELED:
        return PGC_ERR_CANCELLED;
    case FI_ENOMEM:
        return PGC_ERR_NOMEM;
    case FI_EHOSTUNREACH:
    case FI_ECONNREFUSED:
    case FI_EADDRNOTAVAIL:
        return PGC_ERR_UNREACHABLE;
    case FI_ECONNRESET:
    case FI_ENOTCONN:
    case FI_ESHUTDOWN:
        return PGC_ERR_PEER_DEAD;
    default:
        return PGC_ERR_FABRIC;
    }
}

/* Whether (call, code) was logged before; remembers the first 32 distinct pairs. */
static int seen_before(const char *call, int code)
{
    static struct {
        const char *call;
        int code;
    } seen[32];
    static int nseen;
    for (int i = 0; i < nseen; i++) {
        if (seen[i].code == code && strcmp(seen[i].call, call) == 0) {
            return 1;
        }
    }
    if (nseen < 32) {
        seen[nseen].call = call;
        seen[nseen++].code = code;
    }
    return 0;
}

int fab_fi_error(int fi_rc, const char *call, int peer)
{
    int code = fi_rc < 0 ? -fi_rc : fi_rc;
    if (!seen_before(call, code)) {
        MPS_WARN("libfabric %s failed: %s (-%d)", call, fi_strerror(code), code);
    }
    if (peer >= 0) {
        return mps_error(map_fi_code(code), "%s (peer rank %d): %s", call, peer, fi_strerror(code));
    }
    return mps_error(map_fi_code(code), "%s: %s", call, fi_strerror(code));
}

int fab_wait_step(struct fab *f, struct fab_wait *w, int peer, const char *call)
{
    if (w->polls++ == 0) {
        w->deadline = mps_now() + f->timeout;
    }
    fab_progress(f);
    if (w->polls > f->spin) {
        sched_yield();
    }
    if ((w->polls & 255) != 0) {
        return PGC_OK;
    }
    double now = mps_now();
    if (now > w->deadline) {
        return mps_error(PGC_ERR_TIMEOUT, "%s: rank %d made no room after %.0f s (-FI_EAGAIN)",
                         call, peer, f->timeout);
    }
    /* ofi_rxm answers -FI_EAGAIN for ever to a send to a peer that died on another node
     * (it keeps reconnecting, fab_probe.c): after a while, ask whether the peer lives. */
    if (now > w->deadline - f->timeout + FAB_PROBE_AFTER) {
        return fab_probe_peer(f, peer);
    }
    return PGC_OK;
}

/* ---- AM receive buffers ---- */

static void repost(struct fab *f, struct fab_buf *b)
{
    ssize_t rc =
        fi_trecv(b->ep->ep, b->mem, f->buf_len, NULL, FI_ADDR_UNSPEC, FAB_AM_TAG, 0, &b->req.ctx);
    if (rc) {
        /* Retried at the next fab_progress; a buffer is never lost. */
        if (rc != -FI_EAGAIN) {
            fab_fi_error((int)rc, "fi_trecv(AM buffer)", -1);
        }
        b->next = f->repost;
        f->repost = b;
    }
}

static void am_recv_done(struct fab_req *req, int status, size_t len)
{
    struct fab_buf *b = container_of(req, struct fab_buf, req);
    struct fab *f = b->fab;
    const struct fab_am_hdr *h = (const struct fab_am_hdr *)b->mem;
    if (status == PGC_ERR_CANCELLED) {
        return; /* the endpoint is closing */
    }
    if (status == PGC_OK && len >= sizeof(*h) && h->len == len - sizeof(*h) && h->src >= 0 &&
        h->src < f->size) {
        (void)f->am_handler(f->am_arg, h->src, b->mem + sizeof(*h), h->len, false);
    } else {
        MPS_ERR("fab_progress: dropped a malformed AM (status %d, %zu B, src %d)", status, len,
                (int)h->src);
    }
    repost(f, b);
}

int fab_post_rbufs(struct fab *f, struct fab_ep *e)
{
    e->rbufs = calloc(FAB_RBUF_COUNT, sizeof(*e->rbufs));
    if (!e->rbufs || posix_memalign((void **)&e->rmem, 64, FAB_RBUF_COUNT * f->buf_len)) {
        return mps_error(PGC_ERR_NOMEM, "fab_open: no memory for %d AM receive buffers",
                         FAB_RBUF_COUNT);
    }
    for (int i = 0; i < FAB_RBUF_COUNT; i++) {
        struct fab_buf *b = &e->rbufs[i];
        b->fab = f;
        b->ep = e;
        b->mem = e->rmem + (size_t)i * f->buf_len;
        b->req.complete = am_recv_done;
        b->req.fab_len = f->buf_len;
        ssize_t rc =
            fi_trecv(e->ep, b->mem, f->buf_len, NULL, FI_ADDR_UNSPEC, FAB_AM_TAG, 0, &b->req.ctx);
        if (rc) {
            return fab_fi_error((int)rc, "fi_trecv(AM buffer)", -1);
        }
    }
    return PGC_OK;
}

static void retry_reposts(struct fab *f)
{
    struct fab_buf *list = f->repost;
    f->repost = NULL;
    while (list) {
        struct fab_buf *b = list;
        list = b->next;
        repost(f, b);
    }
}

/* ---- AM send ---- */

/* A bounce buffer's send is done: the buffer goes back, and a zero-copy AM's request gets
 * the outcome (after, so that its callback finds the buffer free for a next send). */
static void sbuf_done(struct fab_req *req, int status, size_t len)
{
    struct fab_buf *b = container_of(req, struct fab_buf, req);
    struct fab *f = b->fab;
    struct fab_req *user = b->user;

    b->next = f->sfree;
    f->sfree = b;
    f->sbusy--;
    if (user) {
        user->complete(user, status, len);
    } else if (status != PGC_OK && status != PGC_ERR_CANCELLED) {
        MPS_ERR("fab_progress: an AM send failed: %s", pgc_strerror(status));
    }
}

/* Writes the AM header and hdr for a message of hlen + plen bytes; returns their length. */
static size_t am_fill_hdr(char *dst, int src, const void *hdr, size_t hlen, size_t plen)
{
    struct fab_am_hdr h = {.src = src, .len = (uint32_t)(hlen + plen)};
    memcpy(dst, &h, sizeof(h));
    if (hlen) {
        memcpy(dst + sizeof(h), hdr, hlen);
    }
    return sizeof(h) + hlen;
}

static size_t am_fill(char *dst, int src, const void *hdr, size_t hlen, const void *payload,
                      size_t plen)
{
    size_t n = am_fill_hdr(dst, src, hdr, hlen, plen);
    if (plen) {
        /* mps_copy, not memcpy: the payload lands 24 bytes into the buffer, a distance
         * from a page-aligned source at which glibc's memcpy crawls on Zen 3 (mps_copy.h);
         * 16 KiB over tcp took 16 -> 25 us that way. */
        mps_copy(dst + n, payload, plen);
    }
    return n + plen;
}

static int am_inject(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                     size_t plen)
{
    _Alignas(16) char buf[FAB_INJECT_STACK];
    struct fab_peer *p = &f->peers[peer];
    size_t total = am_fill(buf, f->rank, hdr, hlen, payload, plen);
    struct fab_wait w = {0};
    ssize_t rc;
    while ((rc = fi_tinject(p->ep->ep, buf, total, p->addr, FAB_AM_TAG)) == -FI_EAGAIN) {
        int st = fab_wait_step(f, &w, peer, "fab_am_send");
        if (st != PGC_OK) {
            return st;
        }
    }
    return rc ? fab_fi_error((int)rc, "fi_tinject", peer) : PGC_OK;
}

/* Fills bounce buffer b with the message (user NULL) or with its headers alone, the payload
 * then going from the caller's buffer as a second iov; returns the number of iovs. */
static size_t am_stage(struct fab *f, struct fab_buf *b, const void *hdr, size_t hlen,
                       const void *payload, size_t plen, struct iovec iov[2])
{
    iov[0].iov_base = b->mem;
    if (!b->user) {
        iov[0].iov_len = am_fill(b->mem, f->rank, hdr, hlen, payload, plen);
        return 1;
    }
    iov[0].iov_len = am_fill_hdr(b->mem, f->rank, hdr, hlen, plen);
    iov[1] = (struct iovec){.iov_base = (void *)payload, .iov_len = plen};
    return 2;
}

/* An AM through a bounce buffer, completed by sbuf_done; user as in am_stage. */
static int am_bounce(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                     size_t plen, struct fab_req *user)
{
    struct fab_peer *p = &f->peers[peer];
    struct fab_wait w = {0};
    struct iovec iov[2];
    ssize_t rc = 0;
    while (!f->sfree) {
        if ((rc = fab_wait_step(f, &w, peer, "fab_am_send (waiting for a send buffer)"))) {
            return (int)rc;
        }
    }
    struct fab_buf *b = f->sfree;
    f->sfree = b->next;
    f->sbusy++;
    b->req.complete = sbuf_done;
    b->user = user;
    size_t n = am_stage(f, b, hdr, hlen, payload, plen, iov);
    while ((rc = fi_tsendv(p->ep->ep, iov, NULL, n, p->addr, FAB_AM_TAG, &b->req.ctx)) ==
           -FI_EAGAIN) {
        if ((rc = fab_wait_step(f, &w, peer, "fab_am_send"))) {
            goto fail;
        }
    }
    if (rc) {
        rc = fab_fi_error((int)rc, "fi_tsendv(AM)", peer);
        goto fail;
    }
    return PGC_OK;
fail:
    /* Never posted, so it never completes: give the buffer back here. */
    b->next = f->sfree;
    f->sfree = b;
    f->sbusy--;
    return (int)rc;
}

static int check_peer(const struct fab *f, int peer, const char *call)
{
    if (mps_unlikely(
            !f || peer < 0 || peer >= f->size ||
            (!f->peers[peer].ep && !fab_shm_am_peer(f, peer) && !fab_sock_peer(f, peer)))) {
        return mps_error(PGC_ERR_INVALID_RANK, "%s: rank %d is not a connected peer (size %d)",
                         call, peer, f ? f->size : -1);
    }
    return PGC_OK;
}

bool fab_eager_fits(const struct fab *f, int peer, const void *buf, size_t len, bool coll)
{
    if (fab_sock_peer(f, peer)) {
        return true; /* an AM of any size up to MPISHIM_EAGER_MAX beats the CTS (fab_sock.c) */
    }
    if (!fab_shm_am_peer(f, peer)) {
        return len <= f->net_eager;
    }
    /* A small message, the common case, is decided without looking at the heap. */
    return len <= (coll ? f->coll_heap_eager : f->heap_eager) || !fab_shm_heap_direct(f, buf);
}

/* check_peer, and the AM size limit of every peer's receive buffers. */
static int check_am(const struct fab *f, int peer, size_t len, const char *call)
{
    int rc = check_peer(f, peer, call);
    if (rc == PGC_OK && mps_unlikely(len > f->am_max)) {
        rc = mps_error(PGC_ERR_INVALID_COUNT, "%s: %zu B to rank %d exceed the AM limit of %zu B",
                       call, len, peer, f->am_max);
    }
    return rc;
}

int fab_am_send(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                size_t plen)
{
    int rc;

    /* The common case first, with one test of the peer: a small message to a rank on
     * this node. */
    if (mps_likely(f && peer >= 0 && peer < f->size && hlen + plen <= f->am_max &&
                   fab_shm_am_peer(f, peer))) {
        mps_stats.shm_msgs++;
        mps_stats.shm_bytes += plen;
        return fab_shm_am_send(f, peer, hdr, hlen, payload, plen);
    }
    rc = check_am(f, peer, hlen + plen, "fab_am_send");
    if (rc != PGC_OK) {
        return rc;
    }
    mps_stats.fab_msgs++;
    mps_stats.fab_bytes += plen;
    if (fab_sock_peer(f, peer)) {
        return fab_sock_am_send(f, peer, hdr, hlen, payload, plen);
    }
    size_t total = sizeof(struct fab_am_hdr) + hlen + plen;
    if (total <= f->peers[peer].ep->inject_size && total <= FAB_INJECT_STACK) {
        return am_inject(f, peer, hdr, hlen, payload, plen);
    }
    return am_bounce(f, peer, hdr, hlen, payload, plen, NULL);
}

bool fab_am_zcopy(const struct fab *f, int peer)
{
    const struct fab_ep *ep = f->peers[peer].ep;
    return !fab_shm_am_peer(f, peer) && ep && ep->iov_limit >= 2;
}

int fab_am_send_zc(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                   size_t plen, struct fab_req *req)
{
    int rc = check_am(f, peer, hlen + plen, "fab_am_send_zc");
    if (rc == PGC_OK && fab_am_zcopy(f, peer)) {
        mps_stats.fab_msgs++;
        mps_stats.fab_bytes += plen;
        return am_bounce(f, peer, hdr, hlen, payload, plen, req);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    rc = fab_am_send(f, peer, hdr, hlen, payload, plen);
    if (rc == PGC_OK) {
        req->complete(req, PGC_OK, plen);
    }
    return rc;
}

/* ---- tagged data ---- */

static int check_tagged(const struct fab *f, int peer, size_t len, uint64_t tag,
                        const struct fab_req *req, const char *call)
{
    int rc = check_peer(f, peer, call);
    if (rc != PGC_OK) {
        return rc;
    }
    if (mps_unlikely(!(tag & FAB_TAG_RNDV))) {
        return mps_error(PGC_ERR_INVALID_TAG, "%s: tag 0x%llx lacks FAB_TAG_RNDV", call,
                         (unsigned long long)tag);
    }
    if (mps_unlikely(!req || !req->complete)) {
        return mps_error(PGC_ERR_REQUEST, "%s: request without a complete function", call);
    }
    if (fab_shm_data_peer(f, peer) || fab_sock_peer(f, peer)) {
        return PGC_OK; /* CMA and our sockets have no size limit */
    }
    if (mps_unlikely(len > f->peers[peer].ep->max_msg_size)) {
        return mps_error(PGC_ERR_INVALID_COUNT, "%s: %zu B exceed the %s limit of %zu B", call, len,
                         f->peers[peer].ep->prov, f->peers[peer].ep->max_msg_size);
    }
    return PGC_OK;
}

int fab_tsend(struct fab *f, int peer, const void *buf, size_t len, uint64_t tag,
              struct fab_req *req)
{
    int rc = check_tagged(f, peer, len, tag, req, "fab_tsend");
    if (rc != PGC_OK) {
        return rc;
    }
    if (fab_shm_data_peer(f, peer)) {
        mps_stats.shm_bytes += len;
        return fab_shm_tsend(f, peer, buf, len, tag, req);
    }
    mps_stats.fab_bytes += len;
    if (fab_sock_peer(f, peer)) {
        return fab_sock_tsend(f, peer, buf, len, tag, req);
    }
    struct fab_peer *p = &f->peers[peer];
    struct fab_wait w = {0};
    ssize_t frc;
    while ((frc = fi_tsend(p->ep->ep, buf, len, NULL, p->addr, tag, &req->ctx)) == -FI_EAGAIN) {
        if ((rc = fab_wait_step(f, &w, peer, "fab_tsend")) != PGC_OK) {
            return rc;
        }
    }
    return frc ? fab_fi_error((int)frc, "fi_tsend", peer) : PGC_OK;
}

/*
 * The discard sink works around libfabric 1.17's shm provider: a single-copy (CMA) message
 * longer than the posted receive makes its copy loop spin forever (it keeps asking
 * process_vm_readv for the whole message with no room left). Every shm receive therefore
 * gets a second iov, a large MAP_NORESERVE mapping that costs nothing unless written: the
 * tail of an over-long message lands there, the completion reports the full length, and
 * poll_cq turns that into PGC_ERR_TRUNCATE and gives the touched pages back.
 */
void fab_sink_open(struct fab *f)
{
    for (size_t len = (size_t)1 << 36; !f->sink && len >= ((size_t)1 << 30); len >>= 2) {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p != MAP_FAILED) {
            f->sink = p;
            f->sink_len = len;
        }
    }
    if (!f->sink) {
        MPS_WARN("fab_open: no discard area: a too-small shm receive may hang in libfabric");
    }
}

void fab_sink_close(struct fab *f)
{
    if (f->sink) {
        munmap(f->sink, f->sink_len);
        f->sink = NULL;
    }
}

static ssize_t post_recv(struct fab *f, struct fab_peer *p, void *buf, size_t len, uint64_t tag,
                         struct fab_req *req)
{
    if (p->ep->sink && f->sink) {
        struct iovec iov[2] = {{buf, len}, {f->sink, f->sink_len}};
        void *desc[2] = {NULL, NULL};
        return fi_trecvv(p->ep->ep, iov, desc, 2, p->addr, tag, 0, &req->ctx);
    }
    return fi_trecv(p->ep->ep, buf, len, NULL, p->addr, tag, 0, &req->ctx);
}

int fab_trecv(struct fab *f, int peer, void *buf, size_t len, uint64_t tag, struct fab_req *req)
{
    int rc = check_tagged(f, peer, len, tag, req, "fab_trecv");
    if (rc != PGC_OK) {
        return rc;
    }
    if (fab_shm_data_peer(f, peer)) {
        return fab_shm_trecv(f, peer, buf, len, tag, req);
    }
    if (fab_sock_peer(f, peer)) {
        return fab_sock_trecv(f, peer, buf, len, tag, req);
    }
    struct fab_peer *p = &f->peers[peer];
    struct fab_wait w = {0};
    ssize_t frc;
    req->fab_len = len;
    while ((frc = post_recv(f, p, buf, len, tag, req)) == -FI_EAGAIN) {
        if ((rc = fab_wait_step(f, &w, peer, "fab_trecv")) != PGC_OK) {
            return rc;
        }
    }
    return frc ? fab_fi_error((int)frc, "fi_trecv", peer) : PGC_OK;
}

/* ---- progress ---- */

static int read_cq_error(struct fab_ep *e)
{
    struct fi_cq_err_entry err = {0};
    ssize_t rc = fi_cq_readerr(e->cq, &err, 0);
    if (rc < 0) {
        return rc == -FI_EAGAIN ? 0 : fab_fi_error((int)rc, "fi_cq_readerr", -1);
    }
    int status = map_fi_code(err.err);
    if (status == PGC_ERR_FABRIC && !seen_before("completion", err.err)) {
        MPS_WARN("libfabric completion error on %s: %s (%s)", e->prov, fi_strerror(err.err),
                 fi_cq_strerror(e->cq, err.prov_errno, err.err_data, NULL, 0));
    }
    struct fab_req *req = err.op_context;
    if (req) {
        /* Providers disagree on err.len for a truncation; report what the buffer holds. */
        int recv = (err.flags & FI_RECV) != 0;
        req->complete(req, status, recv ? MPS_MIN(err.len, req->fab_len) : 0);
    }
    return 1;
}

/* A receive that overflowed into the discard sink: report the truncation, drop the pages. */
static void complete_truncated(struct fab *f, struct fab_req *req)
{
    if (f->sink) {
        madvise(f->sink, f->sink_len, MADV_DONTNEED);
    }
    req->complete(req, PGC_ERR_TRUNCATE, req->fab_len);
}

static int poll_cq(struct fab *f, struct fab_ep *e)
{
    struct fi_cq_tagged_entry ev[FAB_CQ_BATCH];
    ssize_t n = fi_cq_read(e->cq, ev, FAB_CQ_BATCH);
    if (n == -FI_EAGAIN) {
        return 0;
    }
    if (n == -FI_EAVAIL) {
        return read_cq_error(e);
    }
    if (n < 0) {
        return fab_fi_error((int)n, "fi_cq_read", -1);
    }
    for (ssize_t i = 0; i < n; i++) {
        struct fab_req *req = ev[i].op_context;
        if (!(ev[i].flags & FI_RECV)) {
            req->complete(req, PGC_OK, 0); /* send completions carry no length */
        } else if (mps_likely(ev[i].len <= req->fab_len)) {
            req->complete(req, PGC_OK, ev[i].len);
        } else {
            complete_truncated(f, req);
        }
    }
    return (int)n;
}

int fab_progress(struct fab *f)
{
    int total = f->ring ? fab_shm_progress(f) : 0;
    if (mps_unlikely(f->repost != NULL)) {
        retry_reposts(f);
    }
    for (int i = 0; i < f->neps; i++) {
        int n = poll_cq(f, &f->eps[i]);
        if (mps_unlikely(n < 0)) {
            return n;
        }
        total += n;
    }
    if (f->sock) {
        int n = fab_sock_progress(f);
        if (mps_unlikely(n < 0)) {
            return n;
        }
        total += n;
    }
    return total;
}

bool fab_can_sleep(const struct fab *f)
{
    if (f && f->sock) {
        return !f->ring && f->neps == 0; /* every peer on our sockets: their epoll fd */
    }
    return f && !f->ring && f->neps == 1 && f->eps[0].wait_fd >= 0;
}

/*
 * fi_trywait first: it says -FI_EAGAIN when the provider holds something a poll must handle
 * before the descriptor can be trusted (a completion not read yet, bytes already taken off
 * a socket). Otherwise the descriptor turns readable when a socket of the endpoint does,
 * which is what wakes us for a message, a rendezvous's data or a connection request.
 */
int fab_sleep_arm(struct fab *f)
{
    if (f->sock) {
        return 1; /* progress read every socket dry; level-triggered epoll says the rest */
    }
    struct fab_ep *e = &f->eps[0];
    struct fid *fids[1] = {&e->cq->fid};
    int rc = fi_trywait(e->fabric, fids, 1);

    if (rc == -FI_EAGAIN) {
        return 0;
    }
    if (rc != 0) {
        return fab_fi_error(rc, "fi_trywait", -1);
    }
    return 1;
}

/* A plain poll on a kernel descriptor: no provider call, so no lock is needed for it. */
int fab_sleep_poll(int fd, const char *prov, int timeout_ms)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};

    if (poll(&p, 1, timeout_ms) < 0 && errno != EINTR) {
        return mps_error(PGC_ERR_FABRIC, "fab_sleep: poll on the %s wait fd: %s", prov,
                         strerror(errno));
    }
    return 1;
}

int fab_sleep(struct fab *f, int timeout_ms)
{
    int rc = fab_sleep_arm(f);

    if (rc <= 0) {
        return rc;
    }
    const char *prov;
    int fd = fab_sleep_fd(f, &prov);

    mps_stats.fab_sleeps++;
    return fab_sleep_poll(fd, prov, timeout_ms);
}

/* Under oversubscription a blind nanosleep here made the ranks of a 2 x 8 job on 2 CPUs
 * answer each other's socket messages only after their pauses, and their wake-ups behind
 * the ranks that polled: mr_coll took 6-23 s in 3 of 12 runs instead of 3.1-3.9. */
void fab_nap(struct fab *f, long ns)
{
    struct timespec t = {0, ns};

    if (f && f->sock) {
        struct pollfd p = {.fd = fab_sock_wait_fd(f), .events = POLLIN};
        (void)ppoll(&p, 1, &t, NULL);
        return;
    }
    nanosleep(&t, NULL);
}

int fab_sleep_fd(const struct fab *f, const char **prov)
{
    if (f->sock) {
        *prov = FAB_SOCK_NAME;
        return fab_sock_wait_fd(f);
    }
    *prov = f->eps[0].prov;
    return f->eps[0].wait_fd;
}

int fab_am_peek(struct fab *f, int peer, const void **buf, size_t *len)
{
    if (mps_likely((unsigned)peer < (unsigned)f->size && fab_shm_am_peer(f, peer))) {
        return fab_shm_am_peek(f, peer, buf, len);
    }
    return -1;
}

void fab_am_consume(struct fab *f, int peer)
{
    fab_shm_am_consume(f, peer);
}

int fab_drain(struct fab *f, double limit)
{
    double deadline = mps_now() + limit;
    while (f->sbusy > 0) {
        if (fab_progress(f) < 0 || mps_now() > deadline) {
            MPS_WARN("fab_close: %d AM sends still in flight after %.1f s", f->sbusy, limit);
            return PGC_ERR_TIMEOUT;
        }
    }
    return PGC_OK;
}
