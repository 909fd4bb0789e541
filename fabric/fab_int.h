/*
 * fab_int.h - the transport's private structures, shared by fab_open.c (endpoints, AV,
 * provider choice) and fab_xfer.c (AM, tagged data, progress). Nothing outside fabric/
 * includes this file.
 */
#ifndef FAB_INT_H
#define FAB_INT_H

#include "fab.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_tagged.h>
#include <stdbool.h>
#include <string.h>

/*
 * libfabric is opened at run time (fab_dl.c), not linked: Debian's libfabric pulls in
 * libinfinipath, whose constructor spends ~200 ms calibrating the CPU clock with sleeps in
 * every process that loads it, and a process with no peer (a singleton, a tool) should not
 * pay that. Its six exported functions are reached through this table; everything else in
 * libfabric's API is inline calls through the objects' operation tables.
 */
struct fab_fi_api {
    int (*getinfo)(uint32_t version, const char *node, const char *service, uint64_t flags,
                   const struct fi_info *hints, struct fi_info **info);
    void (*freeinfo)(struct fi_info *info);
    struct fi_info *(*dupinfo)(const struct fi_info *info);
    int (*fabric)(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
    const char *(*strerror)(int errnum);
    uint32_t (*version)(void);
};
extern struct fab_fi_api fab_fi;
/* Opens libfabric once; PGC_ERR_FABRIC (cause recorded) when it cannot be loaded. */
int fab_dl_load(void);
#define fi_getinfo fab_fi.getinfo
#define fi_freeinfo fab_fi.freeinfo
#define fi_dupinfo fab_fi.dupinfo
#define fi_fabric fab_fi.fabric
#define fi_strerror fab_fi.strerror
#define fi_version fab_fi.version

#define FAB_EP_MAX 2          /* one shm endpoint and one network endpoint at most */
#define FAB_NAME_MAX 112      /* fi_getname bytes of one endpoint kept in the blob */
#define FAB_PROV_MAX 48       /* provider name, e.g. "tcp;ofi_rxm" */
/* AM receive buffers pre-posted per endpoint. Few, so that the ones a ping-pong cycles
 * through stay in the cache (over tcp, 16 instead of 64 was 0.90-1.03x the latency, median
 * 0.95); a burst beyond them waits in the provider's unexpected queue until one is reposted. */
#define FAB_RBUF_COUNT 16
#define FAB_SBUF_COUNT 64     /* AM send bounce buffers (shared by the endpoints) */
#define FAB_CQ_BATCH 16       /* completions read per fi_cq_read */
#define FAB_INJECT_STACK 4096 /* largest AM sent with fi_tinject from a stack copy */
#define FAB_PROBE_AFTER 0.1   /* s of -FI_EAGAIN retries before the peer is probed */
#define FAB_AM_TAG 0ULL       /* AM traffic: no FAB_TAG_RNDV bit */

/* The header in front of every AM payload: the sender's rank, since FI_SOURCE is not used.
 * Eight bytes keep the payload 8-byte aligned in the receive buffer. */
struct fab_am_hdr {
    int32_t src;
    uint32_t len; /* payload bytes after the header (a cross-check of the completion length) */
};

/* A pre-posted AM receive buffer, or an AM send bounce buffer. */
struct fab_buf {
    struct fab_req req; /* first: its fi_context2 is what libfabric hands back */
    struct fab *fab;
    struct fab_ep *ep;    /* receive buffers: the endpoint it is posted on */
    struct fab_buf *next; /* free list (send) or repost list (receive) */
    char *mem;            /* sizeof(struct fab_am_hdr) + am_max bytes */
    struct fab_req *user; /* send: the caller's request of a zero-copy AM, else NULL */
};

struct fab_ep {
    struct fi_info *info;
    struct fid_fabric *fabric;
    struct fid_domain *domain;
    struct fid_ep *ep;
    struct fid_cq *cq;
    struct fid_av *av;
    size_t inject_size; /* 0 when the provider has no inject (never fi_tinject then) */
    size_t max_msg_size;
    size_t iov_limit; /* iovs one send takes (a zero-copy AM needs 2) */
    char prov[FAB_PROV_MAX];
    int wait_fd; /* the CQ's wait object (FI_WAIT_FD) for fab_sleep, or -1 when it has none */
    int sink;              /* receives get the discard sink as a second iov (shm, see fab_xfer.c) */
    bool rma;              /* opened with FI_RMA (fab_rma.c): fi_write/fi_read to its peers */
    uint64_t mr_mode;      /* the domain's mr_mode (FI_MR_VIRT_ADDR, FI_MR_PROV_KEY...) */
    uint64_t next_key;     /* the last key requested where the provider lets us choose */
    struct fab_buf *rbufs; /* FAB_RBUF_COUNT receive buffers */
    char *rmem;
};

struct fab_peer {
    struct fab_ep *ep;
    fi_addr_t addr;
};

struct fab_shm;
struct fab_sock;  /* fab_sock.c */
struct fab_probe; /* fab_probe.c */

/* -FI_EAGAIN (or full ring) retry state: progress, then yield after MPISHIM_SPIN_COUNT
 * polls, then time out after MPISHIM_TIMEOUT. */
struct fab_wait {
    long polls;
    double deadline;
};

struct fab {
    int rank, size;
    struct fab_shm *ring;  /* the intra-node fast path (fab_shm.c), or NULL */
    struct fab_sock *sock; /* our TCP transport (fab_sock.c), or NULL */
    int neps;
    struct fab_ep eps[FAB_EP_MAX];
    struct fab_ep *shm, *net; /* the same endpoint when a provider is forced */
    char *nodes;              /* copy of the node names, size * node_stride bytes */
    size_t node_stride;
    struct fab_peer *peers; /* size entries once fab_connect succeeded */
    fab_am_fn am_handler;
    void *am_arg;
    size_t am_max;  /* payload bytes of one AM (the header comes on top) */
    size_t buf_len; /* bytes of one AM buffer: header + am_max */
    struct fab_buf *sbufs, *sfree;
    char *smem;
    int sbusy;              /* bounce buffers in flight */
    struct fab_buf *repost; /* receive buffers whose repost hit -FI_EAGAIN */
    void *sink; /* discard area for the tail of truncated shm receives (virtual, NORESERVE) */
    size_t sink_len;
    double timeout; /* MPISHIM_TIMEOUT in seconds */
    long spin;      /* MPISHIM_SPIN_COUNT */
    size_t net_eager;  /* MPISHIM_NET_EAGER_MAX */
    size_t heap_eager;      /* MPISHIM_HEAP_EAGER_MAX */
    size_t coll_heap_eager; /* MPISHIM_COLL_HEAP_EAGER_MAX */
    struct fab_probe *probes; /* size entries, or NULL when no peer is probed (fab_probe.c) */
    int probes_out;           /* probes in flight */
    int probe_next;           /* the peer the next round of probes starts at */
};

/* Whether ranks a and b run on one node (their node names, as the bootstrap gave them). */
static inline bool fab_same_node(const struct fab *f, int a, int b)
{
    return strncmp(f->nodes + (size_t)a * f->node_stride, f->nodes + (size_t)b * f->node_stride,
                   f->node_stride) == 0;
}

/* Converts a -FI_E* code to PGC_ERR_* and records the cause naming the call; the
 * fi_strerror text is logged once per (call, code). */
int fab_fi_error(int fi_rc, const char *call, int peer);
/* MPI_Init's error for an MPISHIM_FABRIC_IFACE (iface) that this node cannot use: err is
 * EINVAL where it is malformed, else nothing on this node matches it. */
int fab_iface_error(const char *iface, int err);
/* Whether class_dir (the kernel's RDMA device class, /sys/class/infiniband) lists a device:
 * 0 when it is absent or empty while its parent exists, 1 otherwise (a device, or no sysfs
 * to tell by). */
int fab_rdma_devices_present(const char *class_dir);

/* The offer of base's provider with FI_RMA added to our hints, when it is the same endpoint
 * as base in every attribute the message path depends on (fab_rma.c), *rma then true; else
 * base. Frees base when it returns the other offer. MPISHIM_WIN_FI_RMA=0: base, unasked. */
struct fi_info *fab_rma_offer(struct fi_info *base, bool *rma);
/* The hints of fab_open (fab_open.c), for fab_rma_offer to extend. */
struct fi_info *fab_make_hints(const char *prov);

/* Posts every receive buffer of ep (after fi_enable). */
int fab_post_rbufs(struct fab *f, struct fab_ep *ep);
/* Maps the discard sink (once); without it truncated shm receives are not caught. */
void fab_sink_open(struct fab *f);
void fab_sink_close(struct fab *f);
/* One step of a retry loop: progress, maybe yield; PGC_ERR_TIMEOUT past the deadline. */
int fab_wait_step(struct fab *f, struct fab_wait *w, int peer, const char *call);
/* Records peer's address (name, len bytes, as published for endpoint e) for liveness probes
 * when e is tcp;ofi_rxm and name a TCP socket address; else the peer is not probed. */
void fab_probe_note(struct fab *f, int peer, const struct fab_ep *e, const void *name,
                    size_t len);
/* fab_probe_note for a peer reached through the transport named prov (fab_sock.c: "sock"). */
void fab_probe_note_prov(struct fab *f, int peer, const char *prov, const void *name, size_t len);
/* PGC_ERR_PEER_DEAD (cause recorded) when a probe found peer's process gone, else PGC_OK
 * (alive, not probed, or no answer yet); starts a probe of peer when one is due. */
int fab_probe_peer(struct fab *f, int peer);
/* Ends the probes in flight and forgets the addresses (fab_close). */
void fab_probe_close(struct fab *f);
/* Progresses until every bounce buffer has completed or limit seconds passed. */
int fab_drain(struct fab *f, double limit);

#endif
