/*
 * fab_open.c - endpoints, provider choice, address blobs and the AV.
 *
 * A process opens the shm endpoint when a peer shares its node name and a network endpoint
 * when a peer does not; the node names come from the bootstrap, never from whether shm
 * happens to connect (it does across network namespaces). MPISHIM_FABRIC_PROVIDER forces
 * one endpoint for every peer. Each endpoint has its own fabric, domain, CQ and AV, so a
 * completion never has to say which provider it came from.
 */
#include "config.h"

#include "fab_int.h"
#include "fab_shm.h"
#include "fab_sock.h"
#include "mps_config.h"
#include "mps_ifaddr.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <dirent.h>
#include <errno.h>
#include <net/if.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#define FAB_BLOB_VERSION 2
#define FAB_SLOT_SHM 0
#define FAB_SLOT_NET 1

/* The published address of one rank: the fi_getname bytes of each endpoint it opened. */
struct fab_blob {
    uint8_t version;
    uint8_t present; /* bit i set: slot i holds a name */
    uint16_t len[2];
    uint32_t shm_pid, shm_nonce; /* the intra-node ring segment (fab_shm.c), 0 if none */
    char name[2][FAB_NAME_MAX];
};
_Static_assert(sizeof(struct fab_blob) <= FAB_ADDR_MAX, "address blob too large");

/* Network providers tried in order when MPISHIM_FABRIC_NET_PROVIDER is unset; the first
 * ones need an RDMA device (rdma_candidate). */
static const char *const net_candidates[] = {"verbs;ofi_rxm", "efa", "tcp;ofi_rxm"};

/* Where the kernel lists RDMA devices (InfiniBand, RoCE, iWARP, EFA, rxe): what libibverbs,
 * and through it libfabric's verbs and efa providers, enumerate. */
#define FAB_RDMA_CLASS_DIR "/sys/class/infiniband"

/* tcp, sockets, and net (libfabric 1.17's fork of tcp with its own RDM endpoint). */
static bool socket_provider(const char *prov)
{
    return prov && (strstr(prov, "tcp") || strstr(prov, "sockets") || strstr(prov, "net"));
}

/* The interface MPISHIM_FABRIC_IFACE selects on this node: the name it gives, or, for a
 * subnet ("10.1.0.0/16"), the interface of this node's address within it ("" unless set). */
static char iface_name[IF_NAMESIZE + 1];

int fab_iface_error(const char *iface, int err)
{
    return mps_error(PGC_ERR_INVALID_ARG, "fab_open: MPISHIM_FABRIC_IFACE=%s: %s", iface,
                     err == EINVAL ? "neither an interface's name nor a subnet "
                                     "(address/prefix-length)"
                     : strchr(iface, '/')
                         ? "no address of this node is within that subnet"
                         : "this node has no such network interface, or none with an "
                           "address that is up (link-local IPv6 ones do not count)");
}

/* libfabric 1.17's tcp and net providers ignore the domain name of the hints and take their
 * addresses from FI_TCP_IFACE / FI_NET_IFACE, read when the providers load (the first
 * fi_getinfo), and a name the node lacks makes them fall back to every interface without a
 * word. So MPISHIM_FABRIC_IFACE sets both, unless the user did, and a wrong name is an
 * error here rather than traffic on an interface nobody chose. */
static int apply_iface(void)
{
    const char *iface = mps_config_str(MPS_CFG_FABRIC_IFACE);
    if (!*iface) {
        return PGC_OK;
    }
    if (mps_ifaddr_iface_of(iface, iface_name, sizeof(iface_name)) != 0 ||
        if_nametoindex(iface_name) == 0) {
        iface_name[0] = '\0';
        return fab_iface_error(iface, errno);
    }
    setenv("FI_TCP_IFACE", iface_name, 0);
    setenv("FI_NET_IFACE", iface_name, 0);
    return PGC_OK;
}

struct fi_info *fab_make_hints(const char *prov)
{
    struct fi_info *hints = fab_fi.dupinfo(NULL); /* fi_allocinfo, through the table */
    if (!hints) {
        return NULL;
    }
    hints->caps = FI_TAGGED | FI_DIRECTED_RECV;
    hints->mode = FI_CONTEXT | FI_CONTEXT2;
    hints->ep_attr->type = FI_EP_RDM;
    hints->tx_attr->msg_order = FI_ORDER_SAS;
    hints->rx_attr->msg_order = FI_ORDER_SAS;
    hints->domain_attr->threading = FI_THREAD_DOMAIN;
    hints->domain_attr->av_type = FI_AV_TABLE;
    hints->domain_attr->mr_mode = 0; /* we register nothing: the provider handles local MRs */
    if (prov) {
        hints->fabric_attr->prov_name = strdup(prov);
    }
    /* The interface matters only for the socket providers (their domain is the netdev). */
    if (*iface_name && socket_provider(prov)) {
        hints->domain_attr->name = strdup(iface_name);
    }
    return hints;
}

/* The first offer of prov for our hints, or NULL (rc set to the -FI_E* code). */
static struct fi_info *get_info(const char *prov, int *rc)
{
    struct fi_info *hints = fab_make_hints(prov), *info = NULL;
    if (!hints) {
        *rc = -FI_ENOMEM;
        return NULL;
    }
    *rc = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    if (*rc == 0 && info && info->next) {
        /* Keep the first offer only: fi_freeinfo frees the whole chain otherwise later. */
        struct fi_info *first = fi_dupinfo(info);
        fi_freeinfo(info);
        info = first;
        *rc = info ? 0 : -FI_ENOMEM;
    }
    return *rc == 0 ? info : NULL;
}

int fab_rdma_devices_present(const char *class_dir)
{
    DIR *d = opendir(class_dir);
    if (!d) {
        /* Absent under a mounted sysfs: no RDMA driver is loaded. No sysfs at all (some
         * containers): we cannot tell, so the providers are asked as before. */
        char parent[256];
        snprintf(parent, sizeof(parent), "%s", class_dir);
        char *slash = strrchr(parent, '/');
        if (slash && slash != parent) {
            *slash = '\0';
        }
        return access(parent, F_OK) != 0;
    }
    int found = 0;
    for (struct dirent *e; !found && (e = readdir(d));) {
        found = e->d_name[0] != '.';
    }
    closedir(d);
    return found;
}

static bool rdma_candidate(const char *prov)
{
    return strstr(prov, "verbs") || strcmp(prov, "efa") == 0;
}

/*
 * Asking a provider is not free: libfabric's verbs provider reads all of /proc/kallsyms twice
 * (some 120,000 lines: whether the kernel offers peer memory and dma-buf registration),
 * about 130 ms of CPU per process here, before it looks for a device. libfabric 1.17 does
 * that when it loads, whatever the hints name; from 1.19 on, on verbs' first fi_getinfo
 * only. So a node without an RDMA device does not ask verbs or efa at all, and on such a
 * libfabric never pays for the read.
 */
static int choose_net_info(struct fi_info **out)
{
    const char *forced = mps_config_str(MPS_CFG_FABRIC_NET_PROVIDER);
    int rc = 0;
    if (*forced) {
        *out = get_info(forced, &rc);
        return *out ? PGC_OK : fab_fi_error(rc, "fi_getinfo(MPISHIM_FABRIC_NET_PROVIDER)", -1);
    }
    int rdma = fab_rdma_devices_present(FAB_RDMA_CLASS_DIR);
    if (!rdma) {
        MPS_DEBUG("fab_open: no RDMA device in %s: verbs and efa not asked", FAB_RDMA_CLASS_DIR);
    }
    for (size_t i = 0; i < sizeof(net_candidates) / sizeof(net_candidates[0]); i++) {
        if (!rdma && rdma_candidate(net_candidates[i])) {
            continue;
        }
        *out = get_info(net_candidates[i], &rc);
        if (*out) {
            return PGC_OK;
        }
    }
    return mps_error(PGC_ERR_FABRIC,
                     "fab_open: no network provider (tried %stcp;ofi_rxm) for peers on other nodes",
                     rdma ? "verbs;ofi_rxm, efa, " : "");
}

/* libfabric's shm provider names its region after the pid ("<pid>:0:0" in /dev/shm) and
 * cannot create it while a file of that name exists, which a killed process leaves behind:
 * a later process given the same pid then failed fi_enable with -FI_EBUSY. A name with a
 * per-process nonce never meets such a leftover. */
static int name_shm_ep(struct fab_ep *e)
{
    static unsigned seq;
    char name[64];

    snprintf(name, sizeof(name), "mpishim-%d-%lx-%u", (int)getpid(),
             (unsigned long)(mps_now() * 1e9) & 0xffffffffUL, seq++);
    return fi_setname(&e->ep->fid, name, strlen(name) + 1);
}

/*
 * The CQ of a socket provider gets a file descriptor as its wait object, so that a rank whose
 * every peer is on another node can sleep in the kernel until a message comes (fab_sleep)
 * instead of polling for a turn on a busy CPU. A message caught by polling costs the same
 * system calls as before (the tcp provider signals a wait object of its own on every
 * completion either way); each sleep adds a write and a read of rxm's wake-up byte (strace,
 * 8-byte ping-pong over tcp;ofi_rxm: 2 of each per round trip when polling, 4 when every
 * wait sleeps). Other providers, and one that refuses a wait object, keep a CQ without,
 * and their waits poll.
 */
static int open_cq(struct fab_ep *e)
{
    struct fi_cq_attr attr = {.format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_NONE};

    e->wait_fd = -1;
    if (socket_provider(e->prov)) {
        attr.wait_obj = FI_WAIT_FD;
        if (fi_cq_open(e->domain, &attr, &e->cq, NULL) == 0) {
            if (fi_control(&e->cq->fid, FI_GETWAIT, &e->wait_fd) != 0) {
                e->wait_fd = -1;
            }
            return 0;
        }
        MPS_DEBUG("fab_open: %s offers no CQ with a wait fd: its waits poll", e->prov);
        attr.wait_obj = FI_WAIT_NONE;
    }
    return fi_cq_open(e->domain, &attr, &e->cq, NULL);
}

static int open_objects(struct fab_ep *e)
{
    struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
    const char *call = "fi_fabric";
    int rc = fi_fabric(e->info->fabric_attr, &e->fabric, NULL);
    if (!rc && (call = "fi_domain")) {
        rc = fi_domain(e->fabric, e->info, &e->domain, NULL);
    }
    if (!rc && (call = "fi_cq_open")) {
        rc = open_cq(e);
    }
    if (!rc && (call = "fi_av_open")) {
        rc = fi_av_open(e->domain, &av_attr, &e->av, NULL);
    }
    if (!rc && (call = "fi_endpoint")) {
        rc = fi_endpoint(e->domain, e->info, &e->ep, NULL);
    }
    if (!rc && (call = "fi_ep_bind(cq)")) {
        rc = fi_ep_bind(e->ep, &e->cq->fid, FI_TRANSMIT | FI_RECV);
    }
    if (!rc && (call = "fi_ep_bind(av)")) {
        rc = fi_ep_bind(e->ep, &e->av->fid, 0);
    }
    if (!rc && strcmp(e->prov, "shm") == 0 && (call = "fi_setname")) {
        rc = name_shm_ep(e);
    }
    if (!rc && (call = "fi_enable")) {
        rc = fi_enable(e->ep);
    }
    return rc ? fab_fi_error(rc, call, -1) : PGC_OK;
}

static void close_ep(struct fab_ep *e)
{
    struct fid *fids[] = {e->ep ? &e->ep->fid : NULL, e->av ? &e->av->fid : NULL,
                          e->cq ? &e->cq->fid : NULL, e->domain ? &e->domain->fid : NULL,
                          e->fabric ? &e->fabric->fid : NULL};
    for (size_t i = 0; i < sizeof(fids) / sizeof(fids[0]); i++) {
        int rc = fids[i] ? fi_close(fids[i]) : 0;
        if (rc) {
            MPS_WARN("fab_close: fi_close failed on %s: %s", e->prov, fi_strerror(-rc));
        }
    }
    if (e->info) {
        fi_freeinfo(e->info);
    }
    free(e->rbufs);
    free(e->rmem);
    memset(e, 0, sizeof(*e));
}

/* Opens one endpoint on info (which it takes over) and posts its AM receive buffers; rma:
 * info is fab_rma_offer's FI_RMA offer. */
static int open_ep(struct fab *f, struct fi_info *info, bool rma, struct fab_ep **out)
{
    struct fab_ep *e = &f->eps[f->neps++];
    e->info = info;
    snprintf(e->prov, sizeof(e->prov), "%s", info->fabric_attr->prov_name);
    e->inject_size = info->tx_attr->inject_size;
    e->max_msg_size = info->ep_attr->max_msg_size;
    e->iov_limit = info->tx_attr->iov_limit;
    e->rma = rma;
    e->mr_mode = (uint64_t)info->domain_attr->mr_mode;
    int rc = open_objects(e);
    if (rc == PGC_OK) {
        rc = fab_post_rbufs(f, e);
    }
    if (rc == PGC_OK) {
        MPS_DEBUG("fab_open: endpoint on %s (inject %zu B%s)", e->prov, e->inject_size,
                  e->rma ? ", FI_RMA" : "");
        *out = e;
    }
    return rc;
}

static int open_with(struct fab *f, const char *prov, struct fab_ep **out)
{
    int rc = 0;
    struct fi_info *info = get_info(prov, &rc);
    bool rma = false;
    if (!info) {
        fab_fi_error(rc, "fi_getinfo", -1);
        return mps_error(PGC_ERR_FABRIC, "fab_open: provider %s offers no RDM tagged endpoint",
                         prov);
    }
    /* A forced network provider carries windows' puts and gets too; shm's peers share the
     * node, where windows have their own paths. */
    if (strcmp(prov, "shm") != 0) {
        info = fab_rma_offer(info, &rma);
    }
    return open_ep(f, info, rma, out);
}

static int alloc_pools(struct fab *f)
{
    f->buf_len = sizeof(struct fab_am_hdr) + f->am_max;
    f->buf_len = (f->buf_len + 63) & ~(size_t)63; /* cache-line aligned slots */
    f->sbufs = calloc(FAB_SBUF_COUNT, sizeof(*f->sbufs));
    if (!f->sbufs || posix_memalign((void **)&f->smem, 64, FAB_SBUF_COUNT * f->buf_len)) {
        return mps_error(PGC_ERR_NOMEM, "fab_open: no memory for %d AM send buffers of %zu B",
                         FAB_SBUF_COUNT, f->buf_len);
    }
    for (int i = 0; i < FAB_SBUF_COUNT; i++) {
        struct fab_buf *b = &f->sbufs[i];
        b->fab = f;
        b->mem = f->smem + (size_t)i * f->buf_len;
        b->next = f->sfree;
        f->sfree = b;
    }
    return PGC_OK;
}

/* Which endpoints the node names call for. */
static void needed_eps(const struct fab *f, int *need_shm, int *need_net)
{
    *need_shm = f->size == 1;
    *need_net = 0;
    for (int r = 0; r < f->size; r++) {
        if (r != f->rank) {
            *(fab_same_node(f, r, f->rank) ? need_shm : need_net) = 1;
        }
    }
}

/* The shm provider's single-copy path reads peers' memory with process_vm_readv, which
 * Yama (ptrace_scope 1, the Ubuntu default) refuses between sibling processes. Allowing any
 * same-user process to "trace" us, as MPICH does, keeps CMA on; without it libfabric falls
 * back to its slower SAR copies, whose ordering rules can also stall AMs behind a large send. */
static void allow_cma(void)
{
#ifdef PR_SET_PTRACER
    if (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0) {
        MPS_DEBUG("fab_open: prctl(PR_SET_PTRACER) refused; shm may copy without CMA");
    }
#endif
}

static void use_sink(struct fab *f, struct fab_ep *e)
{
    e->sink = 1;
    fab_sink_open(f);
    allow_cma();
}

/* Whether name selects our own TCP transport instead of a libfabric provider. */
static bool is_sock(const char *name)
{
    return strcmp(name, FAB_SOCK_NAME) == 0;
}

/* Whether peers on other nodes go through our own sockets: where
 * MPISHIM_FABRIC_NET_PROVIDER names sock, and by default where the node has no RDMA device,
 * so that libfabric would only offer tcp;ofi_rxm. There our sockets start a process without
 * loading libfabric (its 0.3 s of start-up, cluster.md) and move large messages faster, as
 * Open MPI's btl/tcp takes Ethernet from its libfabric and UCX paths. An RDMA device keeps
 * libfabric's verbs or efa. Looked up once: every endpoint of the process must agree. */
static bool net_is_sock(void)
{
    static int sock = -1;
    const char *forced = mps_config_str(MPS_CFG_FABRIC_NET_PROVIDER);

    if (*forced) {
        return is_sock(forced);
    }
    if (sock < 0) {
        sock = !fab_rdma_devices_present(FAB_RDMA_CLASS_DIR);
    }
    return sock;
}

/* The network endpoint for peers on other nodes: our sockets or a libfabric provider. */
static int open_net(struct fab *f)
{
    struct fi_info *info = NULL;
    bool rma = false;
    int rc;

    if (net_is_sock()) {
        return fab_sock_open(f);
    }
    rc = choose_net_info(&info);
    if (rc == PGC_OK) {
        info = fab_rma_offer(info, &rma);
        rc = open_ep(f, info, rma, &f->net);
    }
    return rc;
}

static int open_endpoints(struct fab *f)
{
    const char *forced = mps_config_str(MPS_CFG_FABRIC_PROVIDER);
    if (is_sock(forced)) {
        return fab_sock_open(f); /* every peer, no libfabric, no rings */
    }
    if (*forced) {
        int rc = socket_provider(forced) ? apply_iface() : PGC_OK;
        rc = rc == PGC_OK ? fab_dl_load() : rc;
        rc = rc == PGC_OK ? open_with(f, forced, &f->shm) : rc;
        f->net = f->shm;
        if (rc == PGC_OK && strcmp(f->shm->prov, "shm") == 0) {
            use_sink(f, f->shm);
        }
        return rc;
    }
    int need_shm, need_net, rc = PGC_OK;
    needed_eps(f, &need_shm, &need_net);
    if (need_net) {
        rc = apply_iface(); /* before libfabric loads its providers */
    }
    if (rc == PGC_OK && need_shm) {
        rc = fab_shm_open(f);
    }
    /* With the rings and CMA, no local traffic is left for libfabric's shm provider, and a
     * job on one node, or one whose other nodes are reached through our sockets, never
     * loads libfabric at all. */
    bool net_fi = need_net && !net_is_sock();
    if (rc == PGC_OK && (net_fi || (need_shm && !fab_shm_cma(f)))) {
        rc = fab_dl_load();
    }
    if (rc == PGC_OK && need_shm && !fab_shm_cma(f)) {
        rc = open_with(f, "shm", &f->shm);
    }
    if (rc == PGC_OK && f->shm) {
        use_sink(f, f->shm);
    }
    if (rc == PGC_OK && need_net) {
        rc = open_net(f);
    }
    return rc;
}

/*
 * ofi_rxm's defaults (16 KiB bounce buffers, 128 posted per connection) do not suit our
 * traffic: a 16 KiB message plus our header misses the eager size and takes rxm's
 * segmenting path, and 32-64 KiB take its rendezvous. Measured over tcp;ofi_rxm between two
 * ranks here (latency, us, default -> 64 KiB buffers): 16 KiB 30 -> 18, 64 KiB 91 -> 31,
 * 1 MiB 422 -> 305. Few posted buffers per connection keep the ones a ping-pong cycles
 * through warm in the cache: 32 instead of 256 was 0.87-1.04x the latency at 0 B-4 MiB
 * (median 0.92, 10 alternated sweeps; bench/README.md). Flow control is not at stake: our
 * AM receives are always posted, so rxm's buffers never wait long for a match. libfabric
 * reads these when its providers load, at the first fi_getinfo; a value the user set wins.
 */
static void tune_rxm(void)
{
    setenv("FI_OFI_RXM_BUFFER_SIZE", "65536", 0);
    setenv("FI_OFI_RXM_MSG_RX_SIZE", "32", 0);
}

static int copy_opts(struct fab *f, const struct fab_opts *o)
{
    f->rank = o->rank;
    f->size = o->size;
    f->node_stride = o->node_stride;
    f->am_handler = o->am_handler;
    f->am_arg = o->am_arg;
    f->am_max = o->am_max ? o->am_max : (size_t)mps_config_int(MPS_CFG_EAGER_MAX) + 64;
    f->timeout = mps_config_double(MPS_CFG_TIMEOUT);
    f->spin = o->spin > 0 ? o->spin : mps_config_int(MPS_CFG_SPIN_COUNT);
    f->net_eager = (size_t)mps_config_int(MPS_CFG_NET_EAGER_MAX);
    f->heap_eager = (size_t)mps_config_int(MPS_CFG_HEAP_EAGER_MAX);
    f->coll_heap_eager = (size_t)mps_config_int(MPS_CFG_COLL_HEAP_EAGER_MAX);
    f->nodes = malloc((size_t)o->size * o->node_stride);
    f->peers = calloc((size_t)o->size, sizeof(*f->peers));
    if (!f->nodes || !f->peers) {
        return mps_error(PGC_ERR_NOMEM, "fab_open: no memory for %d peers", o->size);
    }
    memcpy(f->nodes, o->nodes, (size_t)o->size * o->node_stride);
    return PGC_OK;
}

int fab_open(const struct fab_opts *opts, struct fab **out)
{
    if (!opts || !out || opts->size < 1 || opts->rank < 0 || opts->rank >= opts->size ||
        !opts->nodes || !opts->node_stride || !opts->am_handler) {
        return mps_error(PGC_ERR_INVALID_ARG, "fab_open: bad options (rank/size/nodes/handler)");
    }
    *out = NULL;
    struct fab *f = calloc(1, sizeof(*f));
    if (!f) {
        return mps_error(PGC_ERR_NOMEM, "fab_open: no memory");
    }
    int rc = copy_opts(f, opts);
    tune_rxm();
    if (rc == PGC_OK) {
        rc = alloc_pools(f);
    }
    if (rc == PGC_OK) {
        rc = open_endpoints(f);
    }
    if (rc != PGC_OK) {
        goto fail;
    }
    /* An AM must fit every endpoint's largest message. */
    for (int i = 0; i < f->neps; i++) {
        if (f->buf_len > f->eps[i].max_msg_size) {
            rc = mps_error(PGC_ERR_FABRIC, "fab_open: %s carries at most %zu B, AMs need %zu B",
                           f->eps[i].prov, f->eps[i].max_msg_size, f->buf_len);
            goto fail;
        }
    }
    *out = f;
    return PGC_OK;
fail:
    fab_close(f);
    return rc;
}

static void log_addr(struct fab_ep *e, const void *name, size_t len)
{
    char str[128];
    size_t slen = sizeof(str);
    if (mps_log_enabled(MPS_LOG_DEBUG)) {
        const char *s = fi_av_straddr(e->av, name, str, &slen);
        MPS_DEBUG("fab_get_addr: %s address of %zu B: %s", e->prov, len, s ? s : "?");
    }
}

int fab_get_addr(struct fab *f, void *blob_out)
{
    struct fab_blob b = {.version = FAB_BLOB_VERSION};
    struct fab_ep *slots[2] = {f->shm, f->net == f->shm ? NULL : f->net};
    for (int s = 0; s < 2; s++) {
        size_t len = FAB_NAME_MAX;
        if (!slots[s]) {
            continue;
        }
        int rc = fi_getname(&slots[s]->ep->fid, b.name[s], &len);
        if (rc) {
            return fab_fi_error(rc, "fi_getname", -1);
        }
        b.len[s] = (uint16_t)len;
        log_addr(slots[s], b.name[s], len);
        b.present |= (uint8_t)(1u << s);
    }
    if (f->sock) {
        b.len[FAB_SLOT_NET] = (uint16_t)fab_sock_addr(f, b.name[FAB_SLOT_NET], FAB_NAME_MAX);
        b.present |= (uint8_t)(1u << FAB_SLOT_NET);
    }
    fab_shm_addr(f, &b.shm_pid, &b.shm_nonce);
    memset(blob_out, 0, FAB_ADDR_MAX);
    memcpy(blob_out, &b, sizeof(b));
    return PGC_OK;
}

/* A peer reached through our sockets: its listening address, watched by the probes too. */
static int connect_sock(struct fab *f, int r, const struct fab_blob *b)
{
    if (b->version != FAB_BLOB_VERSION || !(b->present & (1u << FAB_SLOT_NET))) {
        return mps_error(PGC_ERR_MISMATCH,
                         "fab_connect: rank %d published no network address (blob version %u, "
                         "slots 0x%x); do all ranks agree on MPISHIM_FABRIC_PROVIDER?",
                         r, b->version, b->present);
    }
    int rc = fab_sock_connect(f, r, b->name[FAB_SLOT_NET], b->len[FAB_SLOT_NET]);
    if (rc == PGC_OK) {
        socklen_t len;
        const struct sockaddr *sa = fab_sock_peer_addr(f, r, &len);
        fab_probe_note_prov(f, r, FAB_SOCK_NAME, sa, len);
    }
    return rc;
}

static int connect_peer(struct fab *f, int r, const struct fab_blob *b)
{
    if (f->ring && fab_same_node(f, r, f->rank)) {
        int rc = b->shm_pid || r == f->rank
                     ? fab_shm_connect(f, r, b->shm_pid, b->shm_nonce)
                     : mps_error(PGC_ERR_MISMATCH, "fab_connect: rank %d on this node published "
                                 "no ring segment; do all ranks agree on MPISHIM_SHM_RING?", r);
        if (rc != PGC_OK || !f->shm) {
            return rc; /* the rings (and CMA) carry everything to this peer */
        }
    }
    /* Sockets: every peer when forced (no shm endpoint then), else those of other nodes. */
    if (f->sock && (!f->shm || !fab_same_node(f, r, f->rank))) {
        return connect_sock(f, r, b);
    }
    int use_shm = f->shm && (f->shm == f->net || fab_same_node(f, r, f->rank));
    struct fab_ep *e = use_shm ? f->shm : f->net;
    int slot = use_shm ? FAB_SLOT_SHM : FAB_SLOT_NET;
    if (b->version != FAB_BLOB_VERSION || !(b->present & (1u << slot)) || !e) {
        return mps_error(PGC_ERR_MISMATCH,
                         "fab_connect: rank %d published no %s address (blob version %u, "
                         "slots 0x%x); do all ranks agree on MPISHIM_FABRIC_PROVIDER?",
                         r, use_shm ? "shm" : "network", b->version, b->present);
    }
    int n = fi_av_insert(e->av, b->name[slot], 1, &f->peers[r].addr, 0, NULL);
    if (n != 1) {
        return fab_fi_error(n < 0 ? n : -FI_EINVAL, "fi_av_insert", r);
    }
    f->peers[r].ep = e;
    fab_probe_note(f, r, e, b->name[slot], b->len[slot]);
    return PGC_OK;
}

int fab_connect(struct fab *f, const void *blobs)
{
    if (!f || !blobs) {
        return mps_error(PGC_ERR_INVALID_ARG, "fab_connect: NULL argument");
    }
    for (int r = 0; r < f->size; r++) {
        struct fab_blob b;
        memcpy(&b, (const char *)blobs + (size_t)r * FAB_ADDR_MAX, sizeof(b));
        int rc = connect_peer(f, r, &b);
        if (rc != PGC_OK) {
            return rc;
        }
    }
    return PGC_OK;
}

int fab_close(struct fab *f)
{
    if (!f) {
        return PGC_OK;
    }
    /* A bounce buffer may still be read by the peer (shm CMA): let it finish, briefly. */
    fab_drain(f, 2.0);
    fab_shm_close(f);
    fab_sock_close(f);
    fab_probe_close(f);
    for (int i = 0; i < f->neps; i++) {
        close_ep(&f->eps[i]);
    }
    fab_sink_close(f);
    free(f->sbufs);
    free(f->smem);
    free(f->nodes);
    free(f->peers);
    free(f);
    return PGC_OK;
}

size_t fab_am_max(const struct fab *f)
{
    return f->am_max;
}

void fab_connect_done(struct fab *f)
{
    fab_shm_unlink(f);
}

const char *fab_peer_provider(const struct fab *f, int peer)
{
    if (f && peer >= 0 && peer < f->size && fab_shm_am_peer(f, peer)) {
        return fab_shm_cma(f) ? "shm-ring+cma" : "shm-ring";
    }
    if (f && peer >= 0 && peer < f->size && fab_sock_peer(f, peer)) {
        return FAB_SOCK_NAME;
    }
    if (!f || peer < 0 || peer >= f->size || !f->peers[peer].ep) {
        return "none";
    }
    return f->peers[peer].ep->prov;
}

/* Whether the space-separated list holds word. */
static int has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = strstr(list, word); p; p = strstr(p + 1, word)) {
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
            return 1;
        }
    }
    return 0;
}

int fab_list_providers(char *buf, size_t len)
{
    if (!buf || !len) {
        return mps_error(PGC_ERR_INVALID_ARG, "fab_list_providers: no buffer");
    }
    buf[0] = '\0';
    if (fab_dl_load() != PGC_OK) {
        return PGC_ERR_FABRIC;
    }
    struct fi_info *hints = fab_make_hints(NULL), *info = NULL;
    if (!hints) {
        return mps_error(PGC_ERR_NOMEM, "fab_list_providers: no memory");
    }
    int rc =
        fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), NULL, NULL, 0, hints, &info);
    fi_freeinfo(hints);
    size_t used = 0;
    for (struct fi_info *i = info; rc == 0 && i; i = i->next) {
        const char *p = i->fabric_attr->prov_name;
        if (!has_word(buf, p) && used + strlen(p) + 2 <= len) {
            used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? " " : "", p);
        }
    }
    fi_freeinfo(info);
    return rc == 0 || rc == -FI_ENODATA ? PGC_OK : fab_fi_error(rc, "fi_getinfo", -1);
}
