/*
 * fab_shm.c - the intra-node fast path: shared-memory rings for active messages and
 * receiver-side single copy (CMA) for tagged data. See fab_shm.h for why.
 *
 * Layout: each rank owns one segment, /dev/shm/mpishim-<pid>-<nonce>, holding one ring per
 * rank of its node (indexed by the sender's local index), its own included. A ring is a
 * single-producer single-consumer byte ring: the sender appends a record, publishes it by
 * storing its stamp (its position + 1) and then `tail` (release); the receiver polls the
 * line where the next record will start for its stamp, or `tail` where that line may hold
 * old payload (rec_ready), handles the records in place and gives the space back by
 * storing `head`. tail and head sit on separate cache lines so the two sides never write
 * the same line. Records are 64-byte aligned; a record that would straddle the end is
 * preceded by a WRAP record. The segment also holds FAB_COLL_BYTES that only its owner
 * writes and every local rank reads, for the collectives in shared memory (fab_coll_area;
 * pg_core/pg_coll_shm.c lays it out); pages untouched there cost no memory.
 *
 * Tagged data: the sender appends a DATA record (tag, address, length, cookie); the
 * receiver, once its receive for (peer, tag) is posted, reads the bytes straight from the
 * sender's memory with process_vm_readv and appends a FIN record (cookie, status) to the
 * sender's ring, which completes the send. A FIN that finds the ring full waits in a list
 * and goes out at the next progress, so progress never blocks.
 *
 * Where the peer's side of a copy lies in its shared heap (fab_heap.h), the copy is a
 * memcpy through a mapping of that heap (made at first use) instead of a system call:
 * every path below (one read, shared copies, the sender's writes) goes through cma_copy,
 * which picks. 2 ranks, 4 MiB: bandwidth 9.6-15 -> 21-33 GB/s, bidirectional 13-18 ->
 * 51-63, latency of 1 MiB 76-85 -> 20-23 us. The figures for CMA below are for buffers
 * outside the heap (glibc's small blocks, the stack, memory allocated before MPI_Init).
 *
 * Shared copies: one core copies about 8.5 GB/s through process_vm_readv here, two cores
 * copying halves about 15 GB/s. A large transfer (SPLIT_MIN bytes or more, and a core per
 * local rank) therefore gets a slot in the sender's segment: the DATA record names it, the
 * receiver publishes its buffer there and asks for help with a HELP record, and both sides
 * claim pieces with an atomic counter, the receiver reading, the sender (when it handles
 * the HELP record, which it does while it waits for the send) writing with
 * process_vm_writev. A piece is half the transfer, between CHUNK_MIN and CHUNK: two halves
 * give the two cores one system call each, and past 256 KiB pieces of CHUNK keep both busy
 * to the end. From SPLIT_MIN = 32 KiB this measured faster than one read: bandwidth at
 * 32/64/128 KiB 5.3/6.8/7.8 -> 6.6/10.0/13.2 GB/s, latency at 64 KiB 10.1 -> 7.0 us. The
 * receiver sends the FIN once every claimed piece is done. A sender that never progresses
 * costs nothing but the help it does not give: the receiver then claims every piece itself.
 * Nor is help asked below 128 KiB where the receiver's part is a memcpy from the sender's
 * heap and the sender's would be a system call (help_too_slow).
 *
 * Streamed transfers, where a node has more ranks than cores: there the cores are the
 * limit, and a byte costs less CPU time through two memcpys (~30 GB/s each on one core)
 * than through one process_vm_readv (~8 GB/s); a buffer in the sender's heap is one
 * memcpy away and is not streamed. The DATA record says so (stream); the
 * receiver, once its receive is posted, answers with a CTS record naming it, and the
 * sender appends CHUNK records (at most STREAM_REC bytes each, eight in a ring) as the ring
 * frees, from progress, which the receiver copies into place; the send completes when its
 * last chunk is in the ring. 4 ranks on 2 cores, 64 KiB / 1 MiB: alltoall 100 -> 74 /
 * 2279 -> 1994 us, allgather 103 -> 75 / 1595 -> 1341, bcast 31 -> 25 / 400 -> 307,
 * reduce 41 -> 34 / 579 -> 504 (bench/ab, medians of 5). With a core per rank streaming
 * was measured too and is not used: it depends on the cache-to-cache bandwidth between
 * the two vCPUs, which changes with their placement every few minutes; 2-rank bandwidth
 * at 4 MiB was 19-22 GB/s against CMA's 16-18 when they sat close, and 6 against 15 when
 * they sat apart. A choice by measured cost per transfer did not work: a stream's time
 * includes its wait behind the sender's other work, so samples were off by 20-50 times.
 * The receiver's own copy of each chunk out of the ring, timed alone, does tell the two
 * placements apart with no waiting in it: 32 KiB chunks copied at 20-30+ GB/s near and
 * 10-15 GB/s apart (60-100 thousand chunks per 4 MiB bw run, every run one mode or the
 * other). Streamed near, 2-rank alltoall of 1 MiB took 143-165 us against CMA's 176-204,
 * but bibw of 1 MiB fell to 16-18 GB/s against CMA's 18-21, so a choice on that signal
 * would also need to know when many sends are in flight both ways. Tried and dropped: the
 * receiver published its chunk rate (EWMA) in the ring and the sender streamed above 18
 * GB/s, probing once per 100 ms when the figure was stale. One streamed transfer as the
 * probe, amid a window of shared copies, measured their interference and mostly kept CMA
 * (near: 706 streamed, 1086 copied; bw 4 MiB 12.7-13.3 against 16-20 streamed); streaming
 * everything for 2 ms as the probe cost far placements 25 % (a bw window issues its 64
 * sends within microseconds, so 2 ms covered all of them).
 */
#include "config.h"

#include "fab_shm.h"
#include "fab_reserve.h"
#include "fab_sock.h"
#include "fab_heap.h"
#include "mps_config.h"
#include "mps_copy.h"
#include "mps_log.h"
#include "mps_proc.h"
#include "pgc_status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define RING_BYTES FAB_SHM_RING_BYTES
#define SPLIT_MIN (32u * 1024u)
#define CHUNK (128u * 1024u)
#define CHUNK_MIN (16u * 1024u)
/* Below this a reader copying through the heap mapping goes alone where its helper would
 * need a system call (help_too_slow). */
#define HELP_MIXED_MIN (128u * 1024u)
#define NSLOTS FAB_SHM_NSLOTS
/* A chunk record's ring bytes, header included: eight fill the ring. Records of 16 and
 * 64 KiB were tried (2 ranks, bw/bibw/latency 64 KiB-4 MiB) and were no better. */
#define STREAM_REC FAB_SHM_STREAM_REC
#define STREAM_CHUNK (STREAM_REC - FAB_SHM_REC_HDR - sizeof(struct chunk_hdr))
#define STREAM_MIN (32u * 1024u)
#define REC_ALIGN FAB_SHM_REC_ALIGN
#define LINES (RING_BYTES / REC_ALIGN)
#define SEG_MAGIC 0x6d70697368696d33ULL /* "mpishim3" */

struct ring {
    _Alignas(64) uint64_t tail; /* written by the producer */
    _Alignas(64) uint64_t head; /* written by the consumer */
    _Alignas(64) uint32_t starved; /* set by the producer that found the ring full */
    _Alignas(64) unsigned char data[RING_BYTES];
};

/* A shared copy (see the top): in the sender's segment, each field written by the side
 * noted. state: FREE -> ANNOUNCED (sender) -> READY (receiver) -> FREE (sender, on FIN). */
enum { SLOT_FREE, SLOT_ANNOUNCED, SLOT_READY };
struct slot {
    _Alignas(64) uint32_t state;
    int32_t status;              /* the first error of the sender's chunks */
    uint64_t src;                /* the sender's buffer (sender) */
    uint64_t dst, bytes;         /* the receiver's buffer and what to copy (receiver) */
    uint32_t nchunks, chunk;     /* (receiver) */
    _Alignas(64) uint32_t next;  /* chunk claims, both sides */
    _Alignas(64) uint32_t done;  /* chunks copied, both sides */
};

struct seg {
    uint64_t magic;
    uint32_t nrings;
    struct fab_heap_info heap; /* the owner's shared heap (size 0: none) */
    struct slot slots[NSLOTS];
    _Alignas(64) unsigned char coll[FAB_COLL_BYTES]; /* fab_coll_area */
    _Alignas(64) struct ring rings[];
};

/* A DATA record whose receive is not posted yet. */
struct pending_data {
    struct pending_data *next;
    int peer;
    struct data_rts d;
};

/* Control records kept for when malloc fails (send_ctl). */
#define CTL_RESERVE 64

/* A FIN or CTS that found the peer's ring full. */
struct pending_ctl {
    struct pending_ctl *next;
    int peer;
    enum rec_kind kind;
    size_t len;
    unsigned char body[sizeof(struct data_cts)];
};

struct fab_shm {
    char name[64];
    uint32_t nonce;
    struct seg *mine;
    size_t seg_bytes;
    int nlocal, my_local;
    int *local_of;         /* rank -> local index, -1 off this node */
    struct seg **peer_seg; /* rank -> mapped segment (mine for myself) */
    uint64_t *ptail;       /* rank -> my private copy of the tail of my ring in its segment */
    uint64_t *phead;       /* rank -> last head seen there */
    uint64_t *chead;       /* local index -> my private head of my ring for that sender */
    int *rank_of;          /* local index -> rank */
    uint8_t *stale;        /* local index * LINES + line: that line of my ring for that sender
                            * starts with bytes of an old payload, not a header (rec_ready) */
    uint8_t *wfaulted;     /* rank -> the ring I write in its segment is mapped (prefault) */
    uint8_t *rfaulted;     /* local index -> the ring I read for that sender: RING_* */
    uint8_t *peek_small;   /* local index -> the last AM taken by fab_shm_am_peek was small */
    pid_t *pids;
    struct fab_heap_info *heap; /* rank -> its shared heap, copied at connect */
    char **heap_at;             /* rank -> where its heap is mapped here (first use) */
    bool cma, unlinked;
    bool split;              /* a core per local rank: shared copies, early head (drain) */
    uint64_t active_slots;   /* bit i: my slot i is in use */
    int slot_peer[NSLOTS];   /* the receiver of my slot i's copy */
    struct fab_req *posted; /* posted receives, linked through ctx.internal[0] */
    struct pending_data *unexp;
    struct pending_ctl *ctls;
    struct pending_ctl ctl_spare[CTL_RESERVE]; /* for a malloc that fails (send_ctl) */
    struct fab_reserve ctl_reserve;            /* ctl_spare behind malloc (fab_reserve.h) */
    struct fab_req *streams; /* sends being streamed, oldest first (SR_NEXT) */
};


/* The state of a ring I read: not touched yet, mapped (prefaulted), or no longer read
 * because a record in it had an impossible length (fab_shm_rec_check). */
enum { RING_UNTOUCHED, RING_MAPPED, RING_BROKEN };

/* A posted receive keeps its fields in the fi_context2 scratch space, which libfabric
 * would own only if the request went to a provider. */
enum { PR_NEXT, PR_PEER, PR_TAG, PR_BUF, PR_GOT, PR_WANT, PR_FULL };
/* A streamed send, likewise, from its CTS until its last chunk is in the ring. */
enum { SR_NEXT, SR_PEER, SR_SRC, SR_LEN, SR_OFF, SR_RCOOKIE };

static size_t rec_size(size_t payload)
{
    return fab_shm_rec_size(payload);
}

static size_t seg_bytes(int nlocal)
{
    return sizeof(struct seg) + (size_t)nlocal * sizeof(struct ring);
}

static void seg_name(char *buf, size_t len, uint32_t pid, uint32_t nonce)
{
    snprintf(buf, len, "/mpishim-%u-%u", pid, nonce);
}

/* CMA needs the kernel to let us read a sibling's memory: same user, and Yama at most 1
 * (with PR_SET_PTRACER_ANY, which fab_open sets). */
static bool probe_cma(void)
{
    int scope = 0;
    FILE *fp = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    uint64_t word = 0x1234, copy = 0;
    struct iovec l = {&copy, sizeof(copy)}, r = {&word, sizeof(word)};

    if (fp) {
        if (fscanf(fp, "%d", &scope) != 1) {
            scope = 0;
        }
        fclose(fp);
    }
#ifdef PR_SET_PTRACER
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
    return scope <= 1 && process_vm_readv(getpid(), &l, 1, &r, 1, 0) == sizeof(word) &&
           copy == word;
}

static int alloc_tables(struct fab *f, struct fab_shm *s)
{
    s->local_of = malloc(sizeof(int) * (size_t)f->size);
    s->peer_seg = calloc((size_t)f->size, sizeof(*s->peer_seg));
    s->ptail = calloc((size_t)f->size, sizeof(uint64_t));
    s->phead = calloc((size_t)f->size, sizeof(uint64_t));
    s->pids = calloc((size_t)f->size, sizeof(pid_t));
    s->wfaulted = calloc((size_t)f->size, 1);
    s->heap = calloc((size_t)f->size, sizeof(*s->heap));
    s->heap_at = calloc((size_t)f->size, sizeof(*s->heap_at));
    if (!s->local_of || !s->peer_seg || !s->ptail || !s->phead || !s->pids || !s->wfaulted ||
        !s->heap || !s->heap_at) {
        return mps_error(PGC_ERR_NOMEM, "fab_open: no memory for the shared-memory tables");
    }
    s->nlocal = 0;
    for (int r = 0; r < f->size; r++) {
        s->local_of[r] = fab_same_node(f, r, f->rank) ? s->nlocal++ : -1;
    }
    s->my_local = s->local_of[f->rank];
    s->chead = calloc((size_t)s->nlocal, sizeof(uint64_t));
    s->rfaulted = calloc((size_t)s->nlocal, 1);
    s->peek_small = calloc((size_t)s->nlocal, 1);
    s->rank_of = malloc(sizeof(int) * (size_t)s->nlocal);
    s->stale = calloc((size_t)s->nlocal, LINES);
    if (!s->chead || !s->rfaulted || !s->peek_small || !s->rank_of || !s->stale) {
        return mps_error(PGC_ERR_NOMEM, "fab_open: no memory for ring heads");
    }
    for (int r = 0; r < f->size; r++) {
        if (s->local_of[r] >= 0) {
            s->rank_of[s->local_of[r]] = r;
        }
    }
    return PGC_OK;
}

static int create_segment(struct fab_shm *s)
{
    int fd;

    s->nonce = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL) ^ (uint32_t)clock();
    seg_name(s->name, sizeof(s->name), (uint32_t)getpid(), s->nonce);
    s->seg_bytes = seg_bytes(s->nlocal);
    fd = shm_open(s->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        return mps_error(PGC_ERR_FABRIC, "fab_open: shm_open(%s): %s", s->name, strerror(errno));
    }
    if (ftruncate(fd, (off_t)s->seg_bytes) != 0) {
        close(fd);
        shm_unlink(s->name);
        return mps_error(PGC_ERR_FABRIC, "fab_open: cannot size %s to %zu B (is /dev/shm full?)",
                         s->name, s->seg_bytes);
    }
    s->mine = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->mine == MAP_FAILED) {
        s->mine = NULL;
        shm_unlink(s->name);
        return mps_error(PGC_ERR_FABRIC, "fab_open: mmap of %s: %s", s->name, strerror(errno));
    }
    s->mine->nrings = (uint32_t)s->nlocal;
    s->mine->magic = SEG_MAGIC;
    if (s->cma && s->nlocal > 1) {
        fab_heap_start(&s->mine->heap);
    }
    return PGC_OK;
}

int fab_shm_open(struct fab *f)
{
    struct fab_shm *s;
    int rc;

    if (*mps_config_str(MPS_CFG_FABRIC_PROVIDER) || mps_config_int(MPS_CFG_SHM_RING) == 0) {
        return PGC_OK; /* a forced provider carries everything, as asked */
    }
    s = calloc(1, sizeof(*s));
    if (!s) {
        return mps_error(PGC_ERR_NOMEM, "fab_open: no memory");
    }
    f->ring = s;
    fab_reserve_init(&s->ctl_reserve, s->ctl_spare, sizeof(s->ctl_spare[0]), CTL_RESERVE);
    rc = alloc_tables(f, s);
    s->cma = probe_cma();
    if (rc == PGC_OK) {
        rc = create_segment(s);
    }
    if (rc == PGC_OK) {
        int cores = mps_usable_cores();
        s->split = cores > 0 && s->nlocal <= cores;
        MPS_INFO("intra-node rings for %d local ranks; single copy (CMA) %s", s->nlocal,
                 s->cma ? "on" : "off: data through libfabric shm");
    }
    return rc;
}

bool fab_shm_cma(const struct fab *f)
{
    return f->ring && f->ring->cma;
}

int fab_health(const struct fab *f)
{
    if (f->ring && f->ring->ctl_reserve.lost[0]) {
        return mps_error(PGC_ERR_NOMEM, "%s", f->ring->ctl_reserve.lost);
    }
    return fab_sock_health(f);
}

int fab_dead_peer(const struct fab *f, int *pid)
{
    const struct fab_shm *s = f->ring;

    for (int i = 0; s && i < s->nlocal; i++) {
        int r = s->rank_of[i];
        if (r != f->rank && s->pids[r] > 0 && mps_process_gone(s->pids[r])) {
            *pid = (int)s->pids[r];
            return r;
        }
    }
    return -1;
}

void fab_shm_addr(const struct fab *f, uint32_t *pid, uint32_t *nonce)
{
    *pid = f->ring ? (uint32_t)getpid() : 0;
    *nonce = f->ring ? f->ring->nonce : 0;
}

int fab_shm_connect(struct fab *f, int peer, uint32_t pid, uint32_t nonce)
{
    struct fab_shm *s = f->ring;
    char name[64];
    struct seg *seg;
    int fd;

    if (peer == f->rank) {
        s->peer_seg[peer] = s->mine;
        s->pids[peer] = getpid();
        return PGC_OK;
    }
    seg_name(name, sizeof(name), pid, nonce);
    fd = shm_open(name, O_RDWR, 0);
    /* The name holds the owner's pid and a nonce, so no other process or job creates or
     * removes it, and the owner creates it before its address is published. Only the owner
     * removes it: after the barrier that follows every rank's connect, or when its own
     * start-up failed. ENOENT therefore means the latter (the owner's message says why), or
     * a node name shared by two hosts, whose /dev/shm differ. */
    if (fd < 0 && errno == ENOENT) {
        return mps_error(PGC_ERR_PEER_DEAD, "fab_connect: rank %d's segment %s is gone: rank %d "
                         "ended its start-up (see its message), or two hosts share the node "
                         "name \"%s\"", peer, name, peer, f->nodes + (size_t)peer * f->node_stride);
    }
    if (fd < 0) {
        return mps_error(PGC_ERR_FABRIC, "fab_connect: cannot open rank %d's segment %s: %s",
                         peer, name, strerror(errno));
    }
    seg = mmap(NULL, s->seg_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (seg == MAP_FAILED || seg->magic != SEG_MAGIC || (int)seg->nrings != s->nlocal) {
        if (seg != MAP_FAILED) {
            munmap(seg, s->seg_bytes);
        }
        return mps_error(PGC_ERR_MISMATCH, "fab_connect: rank %d's segment %s does not match "
                         "(%d local ranks expected)", peer, name, s->nlocal);
    }
    s->peer_seg[peer] = seg;
    s->pids[peer] = (pid_t)pid;
    s->heap[peer] = seg->heap;
    return PGC_OK;
}

void fab_shm_unlink(struct fab *f)
{
    if (f->ring && f->ring->mine && !f->ring->unlinked) {
        shm_unlink(f->ring->name);
        f->ring->unlinked = true;
    }
}

void fab_shm_close(struct fab *f)
{
    struct fab_shm *s = f->ring;

    if (!s) {
        return;
    }
    fab_shm_unlink(f);
    for (int r = 0; s->peer_seg && r < f->size; r++) {
        if (s->peer_seg[r] && s->peer_seg[r] != s->mine) {
            munmap(s->peer_seg[r], s->seg_bytes);
        }
        if (s->heap_at && s->heap_at[r]) { /* tables may be partial after a failed open */
            fab_heap_unmap(s->heap_at[r], &s->heap[r]);
        }
    }
    if (s->mine) {
        munmap(s->mine, s->seg_bytes);
    }
    while (s->unexp) {
        struct pending_data *d = s->unexp;
        s->unexp = d->next;
        free(d);
    }
    while (s->ctls) {
        struct pending_ctl *p = s->ctls;
        s->ctls = p->next;
        fab_reserve_put(&s->ctl_reserve, p);
    }
    free(s->local_of);
    free(s->peer_seg);
    free(s->ptail);
    free(s->phead);
    free(s->pids);
    free(s->heap);
    free(s->heap_at);
    free(s->chead);
    free(s->wfaulted);
    free(s->rfaulted);
    free(s->peek_small);
    free(s->rank_of);
    free(s->stale);
    free(s);
    f->ring = NULL;
}

bool fab_shm_am_peer(const struct fab *f, int peer)
{
    return f->ring && f->ring->peer_seg[peer] != NULL;
}

bool fab_shm_heap_direct(const struct fab *f, const void *buf)
{
    return f->ring->split && fab_heap_owns(buf);
}

void *fab_coll_area(const struct fab *f, int rank)
{
    return f->ring && f->ring->peer_seg[rank] ? f->ring->peer_seg[rank]->coll : NULL;
}

bool fab_shm_data_peer(const struct fab *f, int peer)
{
    return fab_shm_am_peer(f, peer) && f->ring->cma;
}

int fab_cma_pid(const struct fab *f, int peer)
{
    return peer >= 0 && peer < f->size && fab_shm_data_peer(f, peer) ? (int)f->ring->pids[peer]
                                                                      : 0;
}

/* ---- producer side ---- */

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* Maps the pages of ring r writable in this process, all at once: the first pass over a
 * fresh ring otherwise takes a page fault every 4 KiB, in the writer and in the reader,
 * which at 64 B per small message added ~0.2 us to each of the first thousands of messages
 * (2-rank barrier timed over 1000 calls: 0.48 -> 0.18 us). Done on first use of a ring,
 * not at connect: 16 ranks mapping all their rings up front started 60 ms slower. The
 * fallback touches each page with an atomic no-op, safe while the other side writes. */
static void ring_prefault(struct ring *r)
{
    if (madvise(r, sizeof(*r), MADV_POPULATE_WRITE) != 0) {
        for (size_t off = 0; off < sizeof(*r); off += 4096) {
            __atomic_fetch_or((unsigned char *)r + off, 0, __ATOMIC_RELAXED);
        }
    }
}

/* Whether my ring in peer's segment has room up to position end, once the head is read
 * again; if not, the reader is told that a writer waits (starved). */
static __attribute__((noinline)) bool ring_room(struct fab_shm *s, struct ring *r, int peer,
                                                uint64_t end)
{
    s->phead[peer] = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
    if (end - s->phead[peer] <= RING_BYTES) {
        return true;
    }
    if (!__atomic_load_n(&r->starved, __ATOMIC_RELAXED)) {
        __atomic_store_n(&r->starved, 1, __ATOMIC_RELAXED);
    }
    return false;
}

/* Room for a record of `need` bytes in my ring inside peer's segment, or NULL when full.
 * *tail gets the tail to publish once the record is written. Inline, with the rare cases
 * out of line: every small message comes through here. */
static inline unsigned char *ring_claim(struct fab_shm *s, int peer, size_t need, uint64_t *tail)
{
    struct ring *r = &s->peer_seg[peer]->rings[s->my_local];
    uint64_t t = s->ptail[peer];
    size_t off = t % RING_BYTES;
    size_t waste = off + need > RING_BYTES ? RING_BYTES - off : 0;

    if (mps_unlikely(!s->wfaulted[peer])) {
        ring_prefault(r);
        s->wfaulted[peer] = 1;
    }
    if (mps_unlikely(t + waste + need - s->phead[peer] > RING_BYTES) &&
        !ring_room(s, r, peer, t + waste + need)) {
        return NULL;
    }
    if (mps_unlikely(waste)) {
        struct rec_hdr *w = (struct rec_hdr *)(r->data + off);
        w->kind = REC_WRAP;
        w->len = (uint32_t)waste;
        __atomic_store_n(&w->stamp, t + 1, __ATOMIC_RELEASE);
        t += waste;
        off = 0;
    }
    *tail = t + need;
    return r->data + off;
}

/* Publishes the record h, which ends at tail: its stamp for a reader that polls the
 * record's line, then the tail for one that cannot trust that line (rec_ready). */
static inline void ring_publish(struct fab_shm *s, int peer, struct rec_hdr *h, size_t need,
                                uint64_t tail)
{
    struct ring *r = &s->peer_seg[peer]->rings[s->my_local];

    __atomic_store_n(&h->stamp, tail - need + 1, __ATOMIC_RELEASE);
    s->ptail[peer] = tail;
    __atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
}

/* Copies bytes [lo, hi) of the payload a (alen bytes) followed by b to d + lo. */
static void copy_range(unsigned char *d, const unsigned char *a, size_t alen,
                       const unsigned char *b, size_t lo, size_t hi)
{
    if (lo < alen && lo < hi) {
        size_t end = hi < alen ? hi : alen;
        mps_copy_small(d + lo, a + lo, end - lo);
        lo = end;
    }
    if (lo < hi) {
        mps_copy_small(d + lo, b + (lo - alen), hi - lo);
    }
}

/* Appends one record (two payload pieces) if there is room; false when the ring is full.
 * The record's first line, which the reader may be polling (rec_ready), is written last
 * and at once: the payload's later lines first, then the first line's bytes, header and
 * stamp, so that the line moves to this core once rather than once per store. */
static inline __attribute__((always_inline)) bool
try_append(struct fab *f, int peer, enum rec_kind kind, const void *a, size_t alen, const void *b,
           size_t blen)
{
    struct fab_shm *s = f->ring;
    uint64_t tail;
    size_t need = rec_size(alen + blen);
    unsigned char *dst = ring_claim(s, peer, need, &tail);
    struct rec_hdr *h = (struct rec_hdr *)dst;

    if (!dst) {
        return false;
    }
    size_t plen = alen + blen, first = REC_ALIGN - sizeof(*h);
    first = plen < first ? plen : first;
    copy_range(dst + sizeof(*h), a, alen, b, first, plen);
    copy_range(dst + sizeof(*h), a, alen, b, 0, first);
    h->len = (uint32_t)plen;
    h->kind = (uint16_t)kind;
    ring_publish(s, peer, h, need, tail);
    return true;
}

/* Appends a record, progressing (which drains our own rings, so two ranks that fill each
 * other's rings cannot deadlock) until there is room or the timeout passes. */
static int append(struct fab *f, int peer, enum rec_kind kind, const void *a, size_t alen,
                  const void *b, size_t blen, const char *call)
{
    struct fab_wait w = {0};
    int rc;

    while (!try_append(f, peer, kind, a, alen, b, blen)) {
        if ((rc = fab_wait_step(f, &w, peer, call)) != PGC_OK) {
            return rc;
        }
    }
    return PGC_OK;
}

int fab_shm_am_send(struct fab *f, int peer, const void *hdr, size_t hlen, const void *payload,
                    size_t plen)
{
    if (mps_likely(try_append(f, peer, REC_AM, hdr, hlen, payload, plen))) {
        return PGC_OK;
    }
    return append(f, peer, REC_AM, hdr, hlen, payload, plen, "fab_am_send");
}

/* A free slot of mine for a shared copy of buf, announced; 0 when none (copy alone). */
static uint32_t slot_take(struct fab_shm *s, int peer, const void *buf, size_t len)
{
    struct slot *sl;
    int i;

    if (!s->split || len < SPLIT_MIN || s->active_slots == ~0ull) {
        return 0;
    }
    i = __builtin_ctzll(~s->active_slots); /* the lowest free slot */
    sl = &s->mine->slots[i];
    sl->src = (uint64_t)(uintptr_t)buf;
    sl->status = PGC_OK;
    sl->next = sl->done = 0;
    __atomic_store_n(&sl->state, SLOT_ANNOUNCED, __ATOMIC_RELEASE);
    s->active_slots |= 1ull << i;
    s->slot_peer[i] = peer;
    return (uint32_t)i + 1;
}

int fab_shm_tsend(struct fab *f, int peer, const void *buf, size_t len, uint64_t tag,
                  struct fab_req *req)
{
    /* A buffer in the shared heap is one memcpy away for the receiver: cheaper than two. */
    bool stream = !f->ring->split && len >= STREAM_MIN && !fab_heap_owns(buf);
    struct data_rts d = {tag, (uint64_t)(uintptr_t)buf, len, (uint64_t)(uintptr_t)req,
                         stream ? 0 : slot_take(f->ring, peer, buf, len), stream};

    return append(f, peer, REC_DATA, &d, sizeof(d), NULL, 0, "fab_tsend");
}

/* Appends a small control record (FIN, CTS) now, or queues it behind those already
 * waiting for room, in order: progress never blocks on a full ring. (The test knob
 * MPISHIM_TEST_FAIL_ALLOC=ctl queues every one, as if the ring were full.) */
static void send_ctl(struct fab *f, int peer, enum rec_kind kind, const void *body, size_t len)
{
    struct pending_ctl *p, **pp = &f->ring->ctls;

    if (!f->ring->ctls && !mps_test_fails(MPS_FAIL_CTL) &&
        try_append(f, peer, kind, body, len, NULL, 0)) {
        return;
    }
    /* A lost FIN or CTS would leave its rendezvous waiting for good: the reserve covers
     * CTL_RESERVE of them waiting at once, beyond which the rank records the loss and fails
     * its waits (fab_health). */
    p = fab_reserve_take(&f->ring->ctl_reserve, "a control record for", peer);
    if (!p) {
        return;
    }
    *p = (struct pending_ctl){.peer = peer, .kind = kind, .len = len};
    memcpy(p->body, body, len);
    while (*pp) {
        pp = &(*pp)->next;
    }
    *pp = p;
}

static void send_fin(struct fab *f, int peer, uint64_t cookie, int status, uint32_t slot)
{
    struct data_fin fin = {.cookie = cookie, .status = status, .slot = slot};

    send_ctl(f, peer, REC_FIN, &fin, sizeof(fin));
}

/* Out of line: the progress poll that calls it (rarely) stays small. */
static __attribute__((noinline, cold)) void flush_ctls(struct fab *f)
{
    struct fab_shm *s = f->ring;

    while (s->ctls && try_append(f, s->ctls->peer, s->ctls->kind, s->ctls->body, s->ctls->len,
                                 NULL, 0)) {
        struct pending_ctl *p = s->ctls;
        s->ctls = p->next;
        fab_reserve_put(&s->ctl_reserve, p);
    }
}

/* ---- streamed transfers, sender side ---- */

#define SR(r, field) ((r)->ctx.internal[SR_##field])

/* Appends as many chunks of the streamed send r as the ring takes, counting them in *n;
 * true once the last one is in (the send is then complete: the bytes are out of the
 * user's buffer). */
static bool stream_pump(struct fab *f, struct fab_req *r, int *n)
{
    int peer = (int)(intptr_t)SR(r, PEER);
    const unsigned char *src = SR(r, SRC);
    uint64_t len = (uint64_t)(uintptr_t)SR(r, LEN), off = (uint64_t)(uintptr_t)SR(r, OFF);
    struct chunk_hdr ch = {(uint64_t)(uintptr_t)SR(r, RCOOKIE), 0};

    while (off < len) {
        size_t bytes = len - off < STREAM_CHUNK ? (size_t)(len - off) : STREAM_CHUNK;
        ch.off = off;
        if (!try_append(f, peer, REC_CHUNK, &ch, sizeof(ch), src + off, bytes)) {
            break;
        }
        off += bytes;
        ++*n;
    }
    SR(r, OFF) = (void *)(uintptr_t)off;
    return off == len;
}

/* Pumps every streamed send, oldest first, completing those whose bytes are all out.
 * Returns the chunks appended: progress, for a waiter deciding whether to yield its core
 * (not counting them let the sender yield between chunks: bw 4 MiB fell to 6-13 GB/s). */
static int stream_pump_all(struct fab *f)
{
    struct fab_req **pp = &f->ring->streams;
    int n = 0;

    while (*pp) {
        struct fab_req *r = *pp;
        if (stream_pump(f, r, &n)) {
            *pp = SR(r, NEXT);
            r->complete(r, PGC_OK, 0);
        } else {
            pp = (struct fab_req **)&SR(r, NEXT);
        }
    }
    return n;
}

/* The receiver is ready: stream the bytes it asked for (none when it truncates to 0). */
static void on_cts(struct fab *f, int peer, const struct data_cts *c)
{
    struct fab_req *r = (struct fab_req *)(uintptr_t)c->cookie, **pp = &f->ring->streams;

    SR(r, PEER) = (void *)(intptr_t)peer;
    SR(r, SRC) = (void *)(uintptr_t)c->addr;
    SR(r, LEN) = (void *)(uintptr_t)c->len;
    SR(r, OFF) = 0;
    SR(r, RCOOKIE) = (void *)(uintptr_t)c->rcookie;
    SR(r, NEXT) = NULL;
    while (*pp) {
        pp = (struct fab_req **)&SR(*pp, NEXT);
    }
    *pp = r;
    stream_pump_all(f);
}

/* ---- consumer side ---- */

/* Where peer's bytes [addr, addr + len) are mapped here, when they lie in its shared
 * heap (fab_heap.h) and that can be mapped (at its first use; a heap that cannot is
 * forgotten, size 0, so it is tried once); else NULL. */
static char *heap_addr(struct fab_shm *s, int peer, uint64_t addr, size_t len)
{
    const struct fab_heap_info *h = &s->heap[peer];
    uint64_t off = addr - h->base;

    if (off >= h->size || len > h->size - off) {
        return NULL;
    }
    if (mps_unlikely(!s->heap_at[peer])) {
        s->heap_at[peer] = fab_heap_map((uint32_t)s->pids[peer], h);
        if (!s->heap_at[peer]) {
            s->heap[peer].size = 0;
            return NULL;
        }
        MPS_INFO("rank %d's shared heap mapped: its large buffers are a memcpy away", peer);
    }
    return s->heap_at[peer] + off;
}

/* Copies len bytes between my buffer buf and peer's address addr: with memcpy where that
 * lies in peer's shared heap, else with CMA, reading (process_vm_readv) or writing
 * (process_vm_writev), until all of it moved. */
static int cma_copy(struct fab_shm *s, int peer, void *buf, uint64_t addr, size_t len, bool write)
{
    char *mapped = heap_addr(s, peer, addr, len);
    size_t done = 0;

    if (mapped) {
        mps_copy(write ? mapped : buf, write ? buf : mapped, len);
        return PGC_OK;
    }
    while (done < len) {
        struct iovec l = {(char *)buf + done, len - done};
        struct iovec r = {(void *)(uintptr_t)(addr + done), len - done};
        ssize_t n = write ? process_vm_writev(s->pids[peer], &l, 1, &r, 1, 0)
                          : process_vm_readv(s->pids[peer], &l, 1, &r, 1, 0);
        if (n < 0 && errno == ESRCH) {
            return mps_error(PGC_ERR_PEER_DEAD, "rank %d (pid %d, on this node) has died in the "
                             "middle of a transfer (process_vm_%s: %s)", peer, (int)s->pids[peer],
                             write ? "writev" : "readv", strerror(errno));
        }
        if (n <= 0) {
            return mps_error(PGC_ERR_FABRIC,
                             "process_vm_%s of %zu B %s rank %d failed: %s (set "
                             "MPISHIM_SHM_RING=0 to use libfabric's shm)",
                             write ? "writev" : "readv", len, write ? "to" : "from", peer,
                             n < 0 ? strerror(errno) : "no progress");
        }
        done += (size_t)n;
    }
    return PGC_OK;
}

static int cma_read(struct fab_shm *s, int peer, void *buf, uint64_t addr, size_t len)
{
    return cma_copy(s, peer, buf, addr, len, false);
}

/* Copies chunks claimed from sl until none is left; an error goes to sl->status before its
 * chunk counts as done. Both sides run it: the receiver reading (peer = the sender), the
 * sender writing (peer = the receiver). */
static void copy_chunks(struct fab_shm *s, int peer, struct slot *sl, bool reader)
{
    uint32_t c;

    while ((c = __atomic_fetch_add(&sl->next, 1, __ATOMIC_ACQ_REL)) < sl->nchunks) {
        uint64_t off = (uint64_t)c * sl->chunk;
        size_t n = sl->bytes - off < sl->chunk ? sl->bytes - off : sl->chunk;
        int32_t ok = PGC_OK;
        int r = reader ? cma_read(s, peer, (void *)(uintptr_t)(sl->dst + off), sl->src + off, n)
                       : cma_copy(s, peer, (void *)(uintptr_t)(sl->src + off), sl->dst + off, n,
                                  true);
        if (r != PGC_OK) {
            __atomic_compare_exchange_n(&sl->status, &ok, r, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED);
        }
        __atomic_fetch_add(&sl->done, 1, __ATOMIC_RELEASE);
    }
}

/* Waits for the chunks the sender claimed: each is at most one CHUNK copy away (~15 us),
 * unless the sender died mid-copy, which the timeout catches. */
static int wait_helper(struct fab *f, int peer, struct slot *sl)
{
    struct fab_wait w = {0};

    while (__atomic_load_n(&sl->done, __ATOMIC_ACQUIRE) < sl->nchunks) {
        if (w.polls++ == 0) {
            w.deadline = mps_now() + f->timeout;
        } else if (w.polls > 1000) {
            sched_yield();
        }
        if ((w.polls & 255) == 0 && mps_now() > w.deadline) {
            return mps_error(PGC_ERR_TIMEOUT, "fab_progress: rank %d did not finish its part "
                             "of a %" PRIu64 " B transfer within %.0f s (did it die?)",
                             peer, sl->bytes, f->timeout);
        }
    }
    return __atomic_load_n(&sl->status, __ATOMIC_RELAXED);
}

/* Whether the sender's help would slow a copy of n bytes from its address src into my buf:
 * when src lies in its shared heap my part is a memcpy, and when buf is outside mine its
 * part is a process_vm_writev, whose fixed cost the reader then waits out. Mixed so (2
 * ranks, a stream of blocking sends from a heap buffer into an mmap'd one), 32 KiB took
 * 2.6 us alone against 3.4 with help, 64 KiB 4.4 against 4.7, 128 KiB 7.8 against 7.3,
 * 1 MiB 67 against 44; a 2-rank reduce of 32 KiB (its root receives into scratch outside
 * the heap) 4.2 against 8.0. */
static bool help_too_slow(struct fab_shm *s, int peer, uint64_t src, const void *buf, size_t n)
{
    return n < HELP_MIXED_MIN && !fab_heap_owns(buf) && heap_addr(s, peer, src, n);
}

/* The receiver's side of a shared copy of n bytes into buf: publish the buffer, copy
 * chunks, wait for the sender's chunks in flight. */
static int shared_read(struct fab *f, int peer, uint32_t slot, void *buf, size_t n)
{
    struct slot *sl = &f->ring->peer_seg[peer]->slots[slot - 1];

    /* Copy alone with large sends of my own in flight (the traffic goes both ways and both
     * cores are busy reading already; chunks cost a system call each, and help measured
     * slower: bidirectional 4 MiB 12.5 -> 11.4 GB/s), or where help would cost more than
     * it saves (help_too_slow). */
    if (f->ring->active_slots || help_too_slow(f->ring, peer, sl->src, buf, n)) {
        return cma_read(f->ring, peer, buf, sl->src, n);
    }
    sl->dst = (uint64_t)(uintptr_t)buf;
    sl->bytes = n;
    sl->chunk = n / 2 < CHUNK_MIN ? CHUNK_MIN : n / 2 > CHUNK ? CHUNK : (uint32_t)(n / 2);
    sl->nchunks = (uint32_t)((n + sl->chunk - 1) / sl->chunk);
    __atomic_store_n(&sl->state, SLOT_READY, __ATOMIC_RELEASE);
    /* A full ring loses the request for help: I copy every chunk then. */
    try_append(f, peer, REC_HELP, &slot, sizeof(slot), NULL, 0);
    copy_chunks(f->ring, peer, sl, true);
    return wait_helper(f, peer, sl);
}

#define PR(r, field) ((r)->ctx.internal[PR_##field])

/* Completes a streamed receive: n bytes, out of the full bytes the sender had. */
static void stream_done(struct fab_req *req, uint64_t n, uint64_t full)
{
    req->complete(req, full > n ? PGC_ERR_TRUNCATE : PGC_OK, n);
}

/* A streamed transfer matched a posted receive: ask for what fits; the chunks complete it
 * (on_chunk), or nothing does when nothing fits. */
static void stream_accept(struct fab *f, int peer, const struct data_rts *d, struct fab_req *req)
{
    uint64_t n = d->len < req->fab_len ? d->len : req->fab_len;
    struct data_cts c = {d->cookie, d->addr, n, (uint64_t)(uintptr_t)req};

    PR(req, GOT) = 0;
    PR(req, WANT) = (void *)(uintptr_t)n;
    PR(req, FULL) = (void *)(uintptr_t)d->len;
    send_ctl(f, peer, REC_CTS, &c, sizeof(c));
    if (n == 0) {
        stream_done(req, 0, d->len);
    }
}

/* A piece of a streamed transfer: into its receive's buffer, which it completes last. */
static void on_chunk(const struct chunk_hdr *ch, size_t len, int peer)
{
    struct fab_req *req = (struct fab_req *)(uintptr_t)ch->rcookie;
    uint64_t got = (uint64_t)(uintptr_t)PR(req, GOT) + len;
    uint64_t want = (uint64_t)(uintptr_t)PR(req, WANT);

    /* Only the bytes the CTS asked for, within the receive's buffer. */
    if (ch->off > want || len > want - ch->off || got > want) {
        MPS_ERR("fab_progress: a CHUNK record from rank %d for bytes %" PRIu64 "..%" PRIu64
                " of a receive of %" PRIu64 " bytes: dropped",
                peer, ch->off, ch->off + len, want);
        return;
    }
    mps_copy((char *)PR(req, BUF) + ch->off, ch + 1, len);
    PR(req, GOT) = (void *)(uintptr_t)got;
    if (got == (uint64_t)(uintptr_t)PR(req, WANT)) {
        stream_done(req, got, (uint64_t)(uintptr_t)PR(req, FULL));
    }
}

/* Copies a DATA record's bytes into a posted receive, acks the sender, completes. */
static void data_complete(struct fab *f, int peer, const struct data_rts *d, struct fab_req *req)
{
    size_t cap = req->fab_len;
    size_t n = d->len < cap ? d->len : cap;
    int rc;

    if (d->stream) {
        stream_accept(f, peer, d, req);
        return;
    }
    rc = d->slot ? shared_read(f, peer, d->slot, PR(req, BUF), n)
                 : cma_read(f->ring, peer, PR(req, BUF), d->addr, n);
    send_fin(f, peer, d->cookie, rc, d->slot);
    if (rc == PGC_OK && d->len > cap) {
        rc = PGC_ERR_TRUNCATE;
    }
    req->complete(req, rc, n);
}

static struct fab_req *take_posted(struct fab_shm *s, int peer, uint64_t tag)
{
    struct fab_req **pp = &s->posted;

    while (*pp) {
        struct fab_req *r = *pp;
        if ((int)(intptr_t)r->ctx.internal[PR_PEER] == peer &&
            (uint64_t)(uintptr_t)r->ctx.internal[PR_TAG] == tag) {
            *pp = r->ctx.internal[PR_NEXT];
            return r;
        }
        pp = (struct fab_req **)&r->ctx.internal[PR_NEXT];
    }
    return NULL;
}

static void on_data(struct fab *f, int peer, const struct data_rts *d)
{
    struct fab_req *req = take_posted(f->ring, peer, d->tag);
    struct pending_data *p;

    if (req) {
        data_complete(f, peer, d, req);
        return;
    }
    p = malloc(sizeof(*p));
    if (!p) {
        MPS_ERR("fab_progress: no memory for a transfer announced by rank %d", peer);
        send_fin(f, peer, d->cookie, PGC_ERR_NOMEM, d->slot);
        return;
    }
    p->peer = peer;
    p->d = *d;
    p->next = f->ring->unexp;
    f->ring->unexp = p;
}

static void on_fin(struct fab_shm *s, const struct data_fin *fin)
{
    struct fab_req *req = (struct fab_req *)(uintptr_t)fin->cookie;

    if (fin->slot) {
        __atomic_store_n(&s->mine->slots[fin->slot - 1].state, SLOT_FREE, __ATOMIC_RELEASE);
        s->active_slots &= ~(1ull << (fin->slot - 1));
    }

    req->complete(req, fin->status, 0);
}

/* The sender's side of a shared copy: its receiver published its buffer and asks for
 * help (a REC_HELP record naming my slot). */
static void on_help(struct fab_shm *s, uint32_t slot)
{
    struct slot *sl;

    if (slot < 1 || slot > NSLOTS || !(s->active_slots & (1ull << (slot - 1)))) {
        return; /* not a copy of mine in flight: nothing to help with */
    }
    sl = &s->mine->slots[slot - 1];
    if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) == SLOT_READY) {
        copy_chunks(s, s->slot_peer[slot - 1], sl, false);
    }
}

/* Handles one record; FAB_AM_DEFER leaves it in the ring (see drain). */
static enum fab_am_result dispatch(struct fab *f, const struct rec_hdr *h, int src,
                                   bool may_defer)
{
    const void *payload = h + 1;

    if (h->kind == REC_AM) {
        return f->am_handler(f->am_arg, src, payload, h->len, may_defer);
    } else if (h->kind == REC_DATA) {
        on_data(f, src, payload);
    } else if (h->kind == REC_FIN) {
        on_fin(f->ring, payload);
    } else if (h->kind == REC_CHUNK) {
        on_chunk(payload, h->len - sizeof(struct chunk_hdr), src);
    } else if (h->kind == REC_CTS) {
        on_cts(f, src, payload);
    } else if (h->kind == REC_HELP) {
        on_help(f->ring, *(const uint32_t *)payload);
    } else {
        MPS_ERR("fab_progress: unknown record kind %u from rank %d", h->kind, src);
    }
    return FAB_AM_TAKEN;
}

/* Whether a record is published at position head of my ring for local sender li. Polling
 * the record's own line saves a cache-line transfer per message over polling the tail (the
 * writer stores the record, then its stamp; the reader misses once instead of on the tail
 * and then the record): 8 B latency 0.20 -> 0.15 us, 1 KiB 0.32 -> 0.22 us, 2-rank barrier
 * 0.21 -> 0.18 us (best of 10 runs each). A stamp equals head + 1 only when written for
 * this position, since positions only grow, unless the line held old payload that happens
 * to read so: the lines a consumed record's payload covered are marked stale, and there the
 * tail decides. */
static inline bool rec_ready(const struct fab_shm *s, int li, uint64_t head)
{
    struct ring *r = &s->mine->rings[li];
    size_t off = head % RING_BYTES;

    if (mps_unlikely(s->stale[(size_t)li * LINES + off / REC_ALIGN])) {
        /* Not !=: records read by their stamps can take head past a tail not yet stored. */
        return __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) > head;
    }
    return __atomic_load_n(&((struct rec_hdr *)(r->data + off))->stamp, __ATOMIC_ACQUIRE) ==
           head + 1;
}

/* Notes what the lines of a consumed record hold now: a header in its first, old payload
 * in the rest (a WRAP's rest holds what it held before). */
static void mark_consumed(struct fab_shm *s, int li, size_t off, size_t bytes, bool wrap)
{
    uint8_t *line = s->stale + (size_t)li * LINES + off / REC_ALIGN;

    line[0] = 0;
    if (!wrap && bytes > REC_ALIGN) {
        memset(line + 1, 1, bytes / REC_ALIGN - 1);
    }
}

/* A record that failed fab_shm_rec_check: logged, and skipped when its length is sound
 * (true); otherwise the ring is read no more (false): where its next record starts is
 * unknown. The sender's requests behind it then end by their timeout. */
static __attribute__((noinline, cold)) bool bad_record(struct fab_shm *s, int li,
                                                       const struct rec_hdr *h, size_t off,
                                                       const char *why, enum fab_shm_verdict v)
{
    MPS_ERR("fab_progress: %s (kind %u, %u bytes) at byte %zu of the ring from rank %d: %s", why,
            (unsigned)h->kind, (unsigned)h->len, off, s->rank_of[li],
            v == FAB_SHM_REC_DROP ? "dropped" : "that ring is no longer read");
    if (v == FAB_SHM_REC_CORRUPT) {
        s->rfaulted[li] = RING_BROKEN;
        return false;
    }
    return true;
}

/* Handles the records published in the ring of one local sender. Kept out of line: the
 * poll that finds nothing (most of them) then costs no register saves.
 * Once a message has completed a posted receive, the ones behind it that match nothing
 * stay in the ring (the handler defers them): the caller's wait is over and its next
 * receive, posted at once, takes the next message straight from the ring. Copying them
 * aside instead cost each a second copy, and a sender that runs ahead (a broadcast's
 * root) kept its receiver on that slow path for good. 2-rank bcast, 1/4/8 KiB: 0.8-1.1 /
 * 2.9-3.8 / 5-13 us -> 0.19 / 0.27-0.43 / 0.5-0.76 us. Only with a core per rank: with more
 * ranks than cores a sender held back gives its core away, and a 4-rank reduce measured
 * slower (bench/ab, 12 rounds, 1 / 16 KiB: 1.9 / 10.7 -> 2.3 / 14.4 us). The first record
 * of every drain is always taken, so the ring keeps moving. */
static __attribute__((noinline)) int drain(struct fab *f, int li)
{
    struct fab_shm *s = f->ring;
    struct ring *r = &s->mine->rings[li];
    uint64_t head = s->chead[li];
    bool matched = false;
    int n = 0;

    if (mps_unlikely(s->rfaulted[li] != RING_MAPPED)) {
        if (s->rfaulted[li] == RING_BROKEN) {
            return 0;
        }
        ring_prefault(r);
        s->rfaulted[li] = RING_MAPPED;
    }

    while (rec_ready(s, li, head)) {
        size_t off = head % RING_BYTES;
        const struct rec_hdr *h = (const struct rec_hdr *)(r->data + off);
        const char *why = "";
        enum fab_shm_verdict v = fab_shm_rec_check(h, off, &why);
        bool wrap = h->kind == REC_WRAP;
        size_t bytes = wrap ? h->len : rec_size(h->len);

        if (mps_unlikely(v != FAB_SHM_REC_OK)) {
            if (!bad_record(s, li, h, off, why, v)) {
                break;
            }
        } else if (!wrap) {
            enum fab_am_result res = dispatch(f, h, s->rank_of[li], matched);
            if (res == FAB_AM_DEFER) {
                break;
            }
            matched = matched || (res == FAB_AM_MATCHED && s->split);
            n++;
        }
        mark_consumed(s, li, off, bytes, wrap);
        head += bytes;
        /* A writer that found the ring full gets the space back record by record, not
         * after the whole batch has been copied out: two ranks streaming 16 KiB both ways
         * otherwise fell into a 4.7 GB/s mode (bibw 16-64 KiB: 4.7 -> 14-20 GB/s). Only
         * then, and only with a core per rank: with more ranks than cores, the writer held
         * back leaves its core to the others (4 ranks on 2 cores, reduce of 16 KiB 13 ->
         * 22-28 us when its leaves got space back early). */
        if (mps_unlikely(s->split && __atomic_load_n(&r->starved, __ATOMIC_RELAXED))) {
            __atomic_store_n(&r->starved, 0, __ATOMIC_RELAXED);
            __atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
        }
    }
    s->chead[li] = head;
    __atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
    return n;
}

/* The record at the head of my ring for peer, for a receive that takes the next AM in
 * place (fab_am_peek): what drain would dispatch next, so taking it keeps the order. A
 * WRAP, a ring not yet touched and any other record are left to drain.
 * While nothing is there, and the last record taken was small, the line after the polled
 * one is prefetched too: a record of two lines (a message of 33-112 bytes) then arrives
 * with both lines fetched together rather than one after the other. 64 B latency with the
 * vCPUs apart: 0.47-0.69 -> 0.38-0.50 us. After a larger record it is not, as the
 * prefetches then contend with the writer for the second of many lines (1 KiB: 0.69-0.88
 * -> 0.81-0.96 us). */
int fab_shm_am_peek(struct fab *f, int peer, const void **buf, size_t *len)
{
    struct fab_shm *s = f->ring;
    int li = s->local_of[peer];
    uint64_t head = s->chead[li];
    const struct rec_hdr *h;

    if (mps_unlikely(s->rfaulted[li] != RING_MAPPED)) {
        return -1;
    }
    if (!rec_ready(s, li, head)) {
        if (s->peek_small[li]) {
            __builtin_prefetch(s->mine->rings[li].data + (head + REC_ALIGN) % RING_BYTES);
        }
        return 0;
    }
    h = (const struct rec_hdr *)(s->mine->rings[li].data + head % RING_BYTES);
    /* Anything but a sound AM is drain's, which reports a bad one. */
    if (h->kind != REC_AM || h->len > RING_BYTES - head % RING_BYTES - FAB_SHM_REC_HDR) {
        return -1;
    }
    *buf = h + 1;
    *len = h->len;
    return 1;
}

void fab_shm_am_consume(struct fab *f, int peer)
{
    struct fab_shm *s = f->ring;
    int li = s->local_of[peer];
    uint64_t head = s->chead[li];
    size_t off = head % RING_BYTES;
    size_t bytes = rec_size(((const struct rec_hdr *)(s->mine->rings[li].data + off))->len);

    mark_consumed(s, li, off, bytes, false);
    s->peek_small[li] = bytes <= 2 * REC_ALIGN;
    s->chead[li] = head + bytes;
    __atomic_store_n(&s->mine->rings[li].head, head + bytes, __ATOMIC_RELEASE);
}

int fab_shm_progress(struct fab *f)
{
    struct fab_shm *s = f->ring;
    int n = 0;

    if (mps_unlikely(s->ctls != NULL)) {
        flush_ctls(f);
    }
    if (s->streams) {
        n += stream_pump_all(f);
    }
    for (int li = 0; li < s->nlocal; li++) {
        if (rec_ready(s, li, s->chead[li])) {
            n += drain(f, li);
        }
    }
    return n;
}

int fab_shm_trecv(struct fab *f, int peer, void *buf, size_t len, uint64_t tag,
                  struct fab_req *req)
{
    struct fab_shm *s = f->ring;
    struct pending_data **pp = &s->unexp;

    req->fab_len = len;
    req->ctx.internal[PR_BUF] = buf;
    while (*pp) {
        struct pending_data *p = *pp;
        if (p->peer == peer && p->d.tag == tag) {
            *pp = p->next;
            data_complete(f, peer, &p->d, req);
            free(p);
            return PGC_OK;
        }
        pp = &p->next;
    }
    req->ctx.internal[PR_PEER] = (void *)(intptr_t)peer;
    req->ctx.internal[PR_TAG] = (void *)(uintptr_t)tag;
    req->ctx.internal[PR_NEXT] = s->posted;
    s->posted = req;
    return PGC_OK;
}
