/*
 * pg_device.h - CUDA device buffers: classification, routing, and collectives and
 * point-to-point on device memory (NCCL, or staging through pinned host memory).
 *
 * pg_device.c is the only file of mpishim that includes cuda_runtime.h and nccl.h. A build
 * without CUDA (HAVE_CUDA 0) compiles it to stubs: nothing is ever classified as device
 * memory and every pg_dev_i* call fails with PGC_ERR_UNSUPPORTED. A build with CUDA links
 * neither the CUDA runtime nor NCCL: it opens libcudart.so.<major> and libnccl.so.2 at run
 * time (MPISHIM_CUDA_LIB and MPISHIM_NCCL_LIB may name the files; doc/gpu.md). It runs on
 * a machine without a GPU, a driver or the CUDA libraries: the first probe finds no device,
 * says so once at info level, and from then on every routing check is one predictable
 * branch (a pg_dev_i* call made anyway fails with PGC_ERR_DEVICE). Without NCCL every device
 * collective stages.
 *
 * Paths. A collective on device buffers takes one of two paths, chosen identically on every
 * rank without communication:
 *  - NCCL: the group's own NCCL communicator (created lazily by the first device collective
 *    on the group: rank 0's unique id is broadcast over the host path, ncclCommInitRank,
 *    then one host allreduce makes every rank agree that init worked everywhere; the
 *    outcome is cached in g->dev).
 *  - staging: device -> pinned host copy, the host collective of pg.h, pinned -> device copy.
 *    Taken for what NCCL cannot do (user ops, types or ops NCCL lacks), when NCCL is not
 *    compiled in, when the group's NCCL init failed anywhere (e.g. two ranks on one GPU,
 *    which NCCL refuses, or a rank where libnccl.so.2 does not load; logged once), and
 *    always with MPISHIM_DEVICE_COLL=staging.
 *  MPISHIM_DEVICE_COLL=nccl makes an NCCL init failure an error (PGC_ERR_DEVICE) instead of
 *  a fallback; user ops still stage (NCCL cannot run them). Every call logs its path at debug.
 *
 * Mixed host and device buffers across the ranks of one collective. Each rank classifies
 * only its own buffers. The staging path runs exactly the host collective that host-buffer
 * ranks run, so any mix is correct whenever device ranks stage: with
 * MPISHIM_DEVICE_COLL=staging, on a group whose NCCL init failed, and for ops NCCL lacks.
 * The NCCL path needs every rank of the call inside NCCL, so in auto/nccl mode a group with
 * a working NCCL communicator requires that a collective's ranks agree on the kind of
 * buffer (all device or all host), as torch's NCCL backend does. Knowing that per call
 * would cost a host round trip on every device collective, which defeats NCCL for small
 * messages; so we don't, and a violation ends in PGC_ERR_TIMEOUT (never a crash or a hang
 * beyond MPISHIM_TIMEOUT: our waits poll with a deadline and abort the communicator).
 *
 * Stream rules (NCCL's "Using NCCL with MPI" guidance):
 *  - Each group with device state owns one CUDA stream (cudaStreamNonBlocking) on the
 *    device that was current when the state was created; all our copies and NCCL calls go
 *    there. One device per process: switching the current device between calls on one
 *    group is not supported.
 *  - Input buffers must be ready when a call is made (synchronize the stream that produced
 *    them first), as in every CUDA-aware MPI: we do not order our stream after yours.
 *  - A blocking call synchronizes our stream (polling with the timeout) before it returns:
 *    outputs hold the result and inputs may be reused, on any stream.
 *  - A non-blocking call records a CUDA event after its work; its request completes when
 *    pg_dev_progress (called from pg_progress) sees the event done. Until then the buffers
 *    belong to the library.
 *  - Mixing with the application's own NCCL on the same device is safe: we use our own
 *    communicators and stream, never the application's. As NCCL documents for any two
 *    communicators, the application must not have its own NCCL operations in flight
 *    (unsynchronized) while it calls a device collective here if ranks could order the two
 *    differently; synchronizing its NCCL stream before calling us is enough.
 *
 * Point-to-point on device buffers: whole-message staging through one pinned buffer (see
 * pg_dev_isend). libfabric 1.17 as shipped by Debian is built without CUDA (its shm and tcp
 * providers advertise FI_HMEM but only system memory works), and our intra-node path uses
 * CMA (process_vm_readv), which cannot read device memory. The message on the wire is
 * exactly a host message, so full MPI matching (tags, PG_ANY_SOURCE, probe) and peers with
 * host buffers work unchanged. A chunked pipeline would need a framing that host-buffer
 * peers understand, i.e. a change of the host wire protocol; it is left for later.
 *
 * Threads: every entry point may be called from any thread (the world lock and a private
 * lock protect the shared state). Requests follow pg.h: a call that returns an error never
 * completes its request later.
 */
#ifndef PG_DEVICE_H
#define PG_DEVICE_H

#include "pg.h"

#include <stdbool.h>
#include <stddef.h>

enum pg_mem {
    PG_MEM_HOST,        /* pageable host memory (or unknown to CUDA) */
    PG_MEM_HOST_PINNED, /* host memory registered with or allocated by CUDA */
    PG_MEM_DEVICE,      /* cudaMalloc memory */
    PG_MEM_MANAGED,     /* cudaMallocManaged memory */
    PG_MEM_INVALID      /* neither valid host nor valid device memory (freed, foreign) */
};

enum pg_dev_path { PG_DEV_PATH_AUTO, PG_DEV_PATH_NCCL, PG_DEV_PATH_STAGING };

/* -1 before the first probe, 0 when no device is usable, 1 when one is. Read through
 * pg_dev_present(); written once by the probe. */
extern int pg_dev_state;

/* Probes once (thread-safe): cudaGetDeviceCount. Returns the device count (0 on failure,
 * without a driver, or without CUDA compiled in). Logs the outcome once at info level. */
int pg_dev_probe(void);

/* Whether a CUDA device is usable in this process. The first call probes; afterwards the
 * answer costs one load and one well-predicted branch. */
static inline bool pg_dev_present(void)
{
    int s = __atomic_load_n(&pg_dev_state, __ATOMIC_RELAXED);

    if (__builtin_expect(s == 0, 1)) {
        return false;
    }
    return s > 0 || pg_dev_probe() > 0;
}

/* Device count found by the probe (probing if needed). */
int pg_dev_count(void);
/* Versions compiled in and at run time (0 when absent): CUDA runtime as 1000*major+10*minor,
 * NCCL as NCCL_VERSION_CODE. */
int pg_dev_cuda_version(void);
int pg_dev_nccl_version(void);
/* The CUDA runtime and NCCL libraries, opened on first use (the call opens them): the file
 * loaded, or NULL with *why saying why not ("built without CUDA", or the loader's error, e.g.
 * "libnccl.so.2: cannot open shared object file: No such file or directory"). */
const char *pg_dev_cuda_lib(const char **why);
const char *pg_dev_nccl_lib(const char **why);
/* The configured path (MPISHIM_DEVICE_COLL, read once; an unknown value warns once and
 * means auto). */
enum pg_dev_path pg_dev_path_mode(void);
const char *pg_mem_name(enum pg_mem m);

/*
 * Where p points. NULL, pointers unknown to CUDA, and every pointer when no device is
 * usable are PG_MEM_HOST; classification never dereferences p. When a device is present a
 * pointer unknown to CUDA is checked for being readable host memory (one process_vm_readv
 * of one byte), so a freed cudaMalloc pointer or garbage gives PG_MEM_INVALID instead of
 * a segfault later. CUDA's sticky error state is cleared after a failed query.
 */
enum pg_mem pg_dev_classify(const void *p);

static inline bool pg_mem_is_device(enum pg_mem m)
{
    return m == PG_MEM_DEVICE || m == PG_MEM_MANAGED;
}

/* The slow part of pg_dev_route (a device is present). */
int pg_dev_route_slow(const void *a, size_t abytes, const void *b, size_t bbytes);

/*
 * Routing for a call with up to two buffers (a buffer with 0 bytes is not classified, so
 * pass 0 for buffers that are not significant at this rank, and NULL for MPI_IN_PLACE).
 * Returns 0: host path (both host or host-pinned); 1: device path (at least one on the
 * device or managed); PGC_ERR_BUFFER: a buffer is invalid (cause recorded).
 * Without a device this is one branch.
 */
static inline int pg_dev_route(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    if (__builtin_expect(!pg_dev_present(), 1)) {
        return 0;
    }
    return pg_dev_route_slow(a, abytes, b, bbytes);
}

/*
 * Collectives on device buffers, with the semantics of their host twins in pg.h and
 * pg_coll2.h (counts in elements of op->elem_size for reductions, else bytes; in == out is
 * in place where the twin allows it). Buffers may be device or managed memory (a host
 * buffer on one side is accepted too: it is copied through device scratch on the NCCL path).
 * Differences from the host twins:
 *  - PG_OP_AVG is finished here (the result is divided by the group size), because the
 *    caller cannot touch device memory; the host twins leave the division to the caller.
 *  - The staging path copies device inputs to pinned host memory before the call returns,
 *    so a non-blocking staged call is partly synchronous.
 * Non-blocking forms complete *req (PG_REQ_COLL); NCCL ones need pg_dev_progress called
 * from progress. Blocking forms wait themselves (they also drive pg_progress).
 */
int pg_dev_iallreduce(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op, struct pg_req *req);
int pg_dev_ibcast(struct pg_group *g, void *buf, size_t bytes, int root, struct pg_req *req);
int pg_dev_ireduce(struct pg_group *g, const void *in, void *out, size_t count,
                   const struct pg_op_spec *op, int root, struct pg_req *req);
int pg_dev_iallgather(struct pg_group *g, const void *in, void *out, size_t bytes,
                      struct pg_req *req);
/* in: size * count elements; out: count elements (in == out: the result lands at out). */
int pg_dev_ireduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                                 const struct pg_op_spec *op, struct pg_req *req);
/* in and out must not overlap. NCCL path: grouped ncclSend/ncclRecv. */
int pg_dev_ialltoall(struct pg_group *g, const void *in, void *out, size_t bytes,
                     struct pg_req *req);
int pg_dev_igather(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
                   struct pg_req *req);
int pg_dev_iscatter(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
                    struct pg_req *req);

int pg_dev_allreduce(struct pg_group *g, const void *in, void *out, size_t count,
                     const struct pg_op_spec *op);
int pg_dev_bcast(struct pg_group *g, void *buf, size_t bytes, int root);
int pg_dev_reduce(struct pg_group *g, const void *in, void *out, size_t count,
                  const struct pg_op_spec *op, int root);
int pg_dev_allgather(struct pg_group *g, const void *in, void *out, size_t bytes);
int pg_dev_reduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                                const struct pg_op_spec *op);
int pg_dev_alltoall(struct pg_group *g, const void *in, void *out, size_t bytes);
int pg_dev_gather(struct pg_group *g, const void *in, void *out, size_t bytes, int root);
int pg_dev_scatter(struct pg_group *g, const void *in, void *out, size_t bytes, int root);

/*
 * Point-to-point with device buffers, matched exactly like pg_isend/pg_irecv (the wire
 * message is a plain host message). isend copies buf to a pinned buffer before it returns
 * (so buf may be reused at once); irecv receives into a pinned buffer of cap bytes and
 * copies the len bytes that arrived to buf before *req completes (source, tag, len and
 * status are those of the host receive). A device receive cannot be cancelled with
 * pg_cancel_recv (its request is not the posted one).
 */
int pg_dev_isend(struct pg_group *g, const void *buf, size_t len, int dst, int tag, bool sync,
                 struct pg_req *req);
int pg_dev_irecv(struct pg_group *g, void *buf, size_t cap, int src, int tag, struct pg_req *req);

/* Waits for a request started by a pg_dev_i* call (drives pg_progress and
 * pg_dev_progress), giving up after timeout seconds (< 0: MPISHIM_TIMEOUT). */
int pg_dev_wait(struct pg_req *req, double timeout);

/* Hooks for the rest of pg_core:
 *  - pg_dev_progress: completes non-blocking NCCL requests whose event is done. Called
 *    with the world lock held, from pg_progress_locked. Cheap when nothing is pending.
 *  - pg_dev_detach: the waiter of req gave up (timeout): forget req so that its late
 *    completion writes nothing (call it beside pg_sched_detach).
 *  - pg_dev_awaited: what req, a device call whose wait timed out, waits for (pg_await.c):
 *    a staged call's host collective names the ranks; a NCCL call is named by the group's
 *    device collective number. False when req is no device call.
 *  - pg_dev_group_free: frees g->dev (stream, NCCL communicator); from pg_group_release.
 *  - pg_dev_finalize: frees the pinned staging cache; from pg_finalize. */
int pg_dev_progress(void);
void pg_dev_detach(struct pg_req *req);
struct pg_awaited;
bool pg_dev_awaited(const struct pg_req *req, struct pg_awaited *a);
/* The device roll call (pg_p2p.c's PG_COLL_DEV_ASK): how many of g's device collectives
 * this rank has started (the answer); the waiter of g's device collective seq asks
 * (pg_dev_roll_ask, from pg_roll_look); group rank `rank` answered `count`
 * (pg_dev_heard, under the world lock). */
uint64_t pg_dev_started(const struct pg_group *g);
void pg_dev_roll_ask(struct pg_group *g, uint32_t seq);
void pg_dev_heard(struct pg_group *g, int rank, uint32_t count);
void pg_dev_group_free(struct pg_group *g);
void pg_dev_finalize(void);

#endif
