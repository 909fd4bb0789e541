/*
 * pg_device.c - the device backend: probe, buffer classification, the pinned staging cache,
 * per-group NCCL communicators, collectives and point-to-point on device buffers.
 *
 * The only file that includes cuda_runtime.h and nccl.h (see pg_device.h for the contract).
 * Without HAVE_CUDA the part at the end compiles to stubs; without HAVE_NCCL every device
 * collective stages through pinned host memory. With them, the headers give the types and
 * prototypes, but the CUDA runtime and NCCL are opened at run time (dlopen), never linked:
 * one build loads on nodes without CUDA, where it behaves as on a node without a GPU.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_log.h"
#include "pg_coll2.h"
#include "pg_device.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/uio.h>
#include <unistd.h>

#if HAVE_CUDA
#include <cuda.h>
#include <cuda_runtime.h>
#endif
#if HAVE_NCCL
#include <nccl.h>
#endif

int pg_dev_state = -1;

static int dev_count;

const char *pg_mem_name(enum pg_mem m)
{
    static const char *const names[] = {"host", "host-pinned", "device", "managed", "invalid"};

    return (unsigned)m <= PG_MEM_INVALID ? names[m] : "invalid";
}

enum pg_dev_path pg_dev_path_mode(void)
{
    static int mode = -1;
    const char *s;

    if (mode >= 0) {
        return (enum pg_dev_path)mode;
    }
    s = mps_config_str(MPS_CFG_DEVICE_COLL);
    if (!strcasecmp(s, "nccl")) {
        mode = PG_DEV_PATH_NCCL;
    } else if (!strcasecmp(s, "staging")) {
        mode = PG_DEV_PATH_STAGING;
    } else {
        if (strcasecmp(s, "auto")) {
            MPS_WARN("MPISHIM_DEVICE_COLL=%s is not auto, nccl or staging: using auto", s);
        }
        mode = PG_DEV_PATH_AUTO;
    }
    return (enum pg_dev_path)mode;
}

int pg_dev_count(void)
{
    pg_dev_probe();
    return dev_count;
}

#if HAVE_CUDA

/* ======================================================================================
 * The CUDA runtime and NCCL, opened on first use (as fabric/fab_dl.c opens libfabric), so
 * that libmpishim.so needs neither to load. Every call this file makes into them goes
 * through rt.* or nc.*, whose types are the headers' own (__typeof__), so a pointer cannot
 * disagree with its prototype. A library that does not open is not an error: without the
 * CUDA runtime the process has no device, as on a node without a GPU; without NCCL the
 * device collectives stage through host memory. Either says why, once, at info level.
 */

#define DL_STR_(x) #x
/* The exported name of f, expanded first: a header may map f onto a variant (_ptsz). */
#define DL_STR(f) DL_STR_(f)
#define DL_MEMBER(f) __typeof__(f) *f;

#define CUDART_FNS(X)                                                                              \
    X(cudaGetDeviceCount)                                                                          \
    X(cudaGetDevice)                                                                               \
    X(cudaGetLastError)                                                                            \
    X(cudaGetErrorString)                                                                          \
    X(cudaRuntimeGetVersion)                                                                       \
    X(cudaGetDriverEntryPointByVersion)                                                            \
    X(cudaPointerGetAttributes)                                                                    \
    X(cudaStreamCreateWithFlags)                                                                   \
    X(cudaStreamDestroy)                                                                           \
    X(cudaStreamSynchronize)                                                                       \
    X(cudaMemcpy)                                                                                  \
    X(cudaMemcpyAsync)                                                                             \
    X(cudaHostAlloc)                                                                               \
    X(cudaFreeHost)                                                                                \
    X(cudaMallocAsync)                                                                             \
    X(cudaFreeAsync)                                                                               \
    X(cudaEventCreateWithFlags)                                                                    \
    X(cudaEventRecord)                                                                             \
    X(cudaEventQuery)                                                                              \
    X(cudaEventDestroy)

static struct {
    CUDART_FNS(DL_MEMBER)
} rt;

/* One library opened at run time: whether it loaded, the file, or why not. */
struct dl_lib {
    pthread_once_t once;
    bool loaded;
    char path[256];
    char why[384];
};

static struct dl_lib rt_lib = {.once = PTHREAD_ONCE_INIT};

/* Opens the file the variable names when it is set (and only that: it is how a user picks
 * a library, or hides one), else the first of names the dynamic loader finds. */
static void *dl_open(struct dl_lib *lib, enum mps_config_id var, const char *const *names, int n)
{
    const char *set = mps_config_is_set(var) ? mps_config_str(var) : NULL;
    void *h = NULL;

    if (set) {
        names = &set;
        n = 1;
    }
    for (int i = 0; i < n && !h; i++) {
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h && i == 0) {
            /* The first name's error says most (later names are fallbacks). */
            snprintf(lib->why, sizeof(lib->why), "%s%s%s", set ? mps_config_desc(var)->name : "",
                     set ? "=" : "", dlerror());
        }
    }
    return h;
}

/* The file h was opened from, for the info tool and the logs. */
static void dl_name(struct dl_lib *lib, void *h, const char *fallback)
{
    struct link_map *lm = NULL;

    if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) {
        fallback = lm->l_name;
    }
    snprintf(lib->path, sizeof(lib->path), "%s", fallback);
}

static bool dl_missing(struct dl_lib *lib, const char *sym)
{
    snprintf(lib->why, sizeof(lib->why), "%s lacks %s: %s", lib->path, sym, dlerror());
    return false;
}

/* Fills rt from h; false (and why) when a function is missing, e.g. a runtime older than the
 * headers. */
static bool rt_fill(void *h)
{
#define RT_SYM(f)                                                                                  \
    if ((*(void **)&rt.f = dlsym(h, DL_STR(f))) == NULL) {                                         \
        return dl_missing(&rt_lib, DL_STR(f));                                                     \
    }
    CUDART_FNS(RT_SYM)
#undef RT_SYM
    return true;
}

/* libcudart.so.<major> of the headers (the ABI they describe) where the loader finds it, then
 * in the directory configure found CUDA in, then any libcudart.so. */
static void rt_load_once(void)
{
    char soname[32], configured[320];
    const char *names[] = {soname, configured, "libcudart.so"};
    int v = 0;
    void *h;

    snprintf(soname, sizeof(soname), "libcudart.so.%d", CUDART_VERSION / 1000);
    snprintf(configured, sizeof(configured), "%s/%s", MPS_CUDA_LIBDIR, soname);
    h = dl_open(&rt_lib, MPS_CFG_CUDA_LIB, names, 3);
    if (!h) {
        return;
    }
    dl_name(&rt_lib, h, soname);
    if (!rt_fill(h)) {
        dlclose(h);
        return;
    }
    rt_lib.loaded = true;
    if (rt.cudaRuntimeGetVersion(&v) == cudaSuccess && v / 1000 != CUDART_VERSION / 1000) {
        MPS_WARN("device: %s is CUDA runtime %d.%d, but mpishim was built with CUDA %d.%d "
                 "headers (set MPISHIM_CUDA_LIB to a libcudart.so.%d)",
                 rt_lib.path, v / 1000, v % 1000 / 10, CUDART_VERSION / 1000,
                 CUDART_VERSION % 1000 / 10, CUDART_VERSION / 1000);
    }
    MPS_DEBUG("device: CUDA runtime loaded from %s", rt_lib.path);
}

static bool rt_load(void)
{
    pthread_once(&rt_lib.once, rt_load_once);
    return rt_lib.loaded;
}

const char *pg_dev_cuda_lib(const char **why)
{
    bool ok = rt_load();

    *why = ok ? NULL : rt_lib.why;
    return ok ? rt_lib.path : NULL;
}

#if HAVE_NCCL

#define NCCL_FNS(X)                                                                                \
    X(ncclGetVersion)                                                                              \
    X(ncclGetErrorString)                                                                          \
    X(ncclGetUniqueId)                                                                             \
    X(ncclCommInitRank)                                                                            \
    X(ncclCommDestroy)                                                                             \
    X(ncclCommAbort)                                                                               \
    X(ncclCommGetAsyncError)                                                                       \
    X(ncclGroupStart)                                                                              \
    X(ncclGroupEnd)                                                                                \
    X(ncclAllReduce)                                                                               \
    X(ncclBroadcast)                                                                               \
    X(ncclReduce)                                                                                  \
    X(ncclAllGather)                                                                               \
    X(ncclReduceScatter)                                                                           \
    X(ncclSend)                                                                                    \
    X(ncclRecv)

static struct {
    NCCL_FNS(DL_MEMBER)
} nc;

static struct dl_lib nc_lib = {.once = PTHREAD_ONCE_INIT};

static bool nc_fill(void *h)
{
#define NC_SYM(f)                                                                                  \
    if ((*(void **)&nc.f = dlsym(h, DL_STR(f))) == NULL) {                                         \
        return dl_missing(&nc_lib, DL_STR(f));                                                     \
    }
    NCCL_FNS(NC_SYM)
#undef NC_SYM
    return true;
}

/* libnccl.so.<major> where the loader finds it, then where configure found it. */
static void nc_load_once(void)
{
    char soname[32], configured[320];
    const char *names[] = {soname, configured};
    void *h;

    snprintf(soname, sizeof(soname), "libnccl.so.%d", NCCL_MAJOR);
    snprintf(configured, sizeof(configured), "%s/%s", MPS_NCCL_LIBDIR, soname);
    h = dl_open(&nc_lib, MPS_CFG_NCCL_LIB, names, 2);
    if (!h) {
        return;
    }
    dl_name(&nc_lib, h, soname);
    if (!nc_fill(h)) {
        dlclose(h);
        return;
    }
    nc_lib.loaded = true;
    MPS_DEBUG("device: NCCL loaded from %s", nc_lib.path);
}

static bool nc_load(void)
{
    pthread_once(&nc_lib.once, nc_load_once);
    return nc_lib.loaded;
}

const char *pg_dev_nccl_lib(const char **why)
{
    bool ok = nc_load();

    *why = ok ? NULL : nc_lib.why;
    return ok ? nc_lib.path : NULL;
}

#else /* !HAVE_NCCL */

const char *pg_dev_nccl_lib(const char **why)
{
    *why = "built without NCCL";
    return NULL;
}

#endif /* HAVE_NCCL */

/* ======================================================================================
 * Probe and classification.
 */

static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

/* Driver entry points, fetched through the runtime so that we need not link libcuda:
 * they tell whether any CUDA context exists, without creating one (a runtime call such as
 * cudaPointerGetAttributes would create the primary context of device 0 in every host-only
 * process of a GPU node, costing time and device memory). */
typedef CUresult (*ctx_get_current_fn)(CUcontext *);
typedef CUresult (*primary_state_fn)(CUdevice, unsigned int *, int *);
typedef CUresult (*device_get_fn)(CUdevice *, int);
static ctx_get_current_fn drv_ctx_get_current;
static primary_state_fn drv_primary_state;
static device_get_fn drv_device_get;
static int cuda_in_use; /* 1 once a CUDA context was seen: from then on always classify */

static void *driver_fn(const char *name)
{
    enum cudaDriverEntryPointQueryResult q;
    void *fn = NULL;

    if (rt.cudaGetDriverEntryPointByVersion(name, &fn, 12000, cudaEnableDefault, &q) !=
            cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
        rt.cudaGetLastError();
        return NULL;
    }
    return fn;
}

/* No CUDA runtime to load is the same as no device: host path only. */
static void probe_without_runtime(void)
{
    dev_count = 0;
    MPS_INFO("device: no CUDA runtime (%s): host path only", rt_lib.why);
    __atomic_store_n(&pg_dev_state, 0, __ATOMIC_RELEASE);
}

static void probe_run(void)
{
    cudaError_t e;

    if (!rt_load()) {
        probe_without_runtime();
        return;
    }
    e = rt.cudaGetDeviceCount(&dev_count);
    if (e != cudaSuccess || dev_count <= 0) {
        dev_count = 0;
        rt.cudaGetLastError(); /* a failed probe must not leave a sticky error behind */
        MPS_INFO("device: no usable CUDA device (cudaGetDeviceCount: %s): host path only",
                 e != cudaSuccess ? rt.cudaGetErrorString(e) : "0 devices");
        __atomic_store_n(&pg_dev_state, 0, __ATOMIC_RELEASE);
        return;
    }
    drv_ctx_get_current = (ctx_get_current_fn)driver_fn("cuCtxGetCurrent");
    drv_primary_state = (primary_state_fn)driver_fn("cuDevicePrimaryCtxGetState");
    drv_device_get = (device_get_fn)driver_fn("cuDeviceGet");
    if (!drv_ctx_get_current || !drv_primary_state || !drv_device_get) {
        cuda_in_use = 1; /* cannot tell: classify every buffer */
    }
    MPS_INFO("device: %d CUDA device(s); collectives on device buffers via %s", dev_count,
             HAVE_NCCL ? "NCCL or staging" : "staging (built without NCCL)");
    __atomic_store_n(&pg_dev_state, 1, __ATOMIC_RELEASE);
}

int pg_dev_probe(void)
{
    pthread_once(&probe_once, probe_run);
    return dev_count;
}

/* Whether a device is usable, with the probe's writes (rt, dev_count) visible to this
 * thread: entry points that call into CUDA ask this, not pg_dev_present's relaxed read. */
static bool device_ready(void)
{
    return pg_dev_probe() > 0;
}

int pg_dev_cuda_version(void)
{
    int v = 0;

    if (!rt_load()) {
        return 0;
    }
    if (rt.cudaRuntimeGetVersion(&v) != cudaSuccess) {
        rt.cudaGetLastError();
        return 0;
    }
    return v;
}

int pg_dev_nccl_version(void)
{
#if HAVE_NCCL
    int v = 0;

    return nc_load() && nc.ncclGetVersion(&v) == ncclSuccess ? v : 0;
#else
    return 0;
#endif
}

/* Whether any CUDA context exists (current on this thread, or a device's primary one).
 * Without one no pointer can be device memory. Once true, stays true. */
static bool cuda_context_exists(void)
{
    CUcontext ctx = NULL;

    if (__atomic_load_n(&cuda_in_use, __ATOMIC_RELAXED)) {
        return true;
    }
    if (drv_ctx_get_current(&ctx) == CUDA_SUCCESS && ctx) {
        __atomic_store_n(&cuda_in_use, 1, __ATOMIC_RELAXED);
        return true;
    }
    for (int i = 0; i < dev_count; i++) {
        CUdevice d;
        unsigned int flags;
        int active = 0;
        if (drv_device_get(&d, i) == CUDA_SUCCESS &&
            drv_primary_state(d, &flags, &active) == CUDA_SUCCESS && active) {
            __atomic_store_n(&cuda_in_use, 1, __ATOMIC_RELAXED);
            return true;
        }
    }
    return false;
}

/* Whether p is readable host memory, without touching it (a fault is an error return). */
static bool host_readable(const void *p)
{
    char byte;
    struct iovec l = {&byte, 1}, r = {(void *)p, 1};

    if (process_vm_readv(getpid(), &l, 1, &r, 1, 0) == 1) {
        return true;
    }
    return errno != EFAULT; /* ENOSYS/EPERM (seccomp): cannot tell, trust it */
}

enum pg_mem pg_dev_classify(const void *p)
{
    struct cudaPointerAttributes a;
    cudaError_t e;

    if (!p || !pg_dev_present() || !device_ready() || !cuda_context_exists()) {
        return PG_MEM_HOST;
    }
    e = rt.cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        rt.cudaGetLastError(); /* clear the sticky error, or the next CUDA call reports it */
        return host_readable(p) ? PG_MEM_HOST : PG_MEM_INVALID;
    }
    switch (a.type) {
    case cudaMemoryTypeDevice:
        return PG_MEM_DEVICE;
    case cudaMemoryTypeManaged:
        return PG_MEM_MANAGED;
    case cudaMemoryTypeHost:
        return PG_MEM_HOST_PINNED;
    default:
        /* Unknown to CUDA: host memory, or a freed device allocation (UVA keeps its range
         * reserved, unreadable). */
        return host_readable(p) ? PG_MEM_HOST : PG_MEM_INVALID;
    }
}

static int classify_checked(const void *p, size_t bytes, enum pg_mem *m)
{
    *m = bytes ? pg_dev_classify(p) : PG_MEM_HOST;
    if (*m == PG_MEM_INVALID) {
        return mps_error(PGC_ERR_BUFFER,
                         "buffer %p (%zu bytes) is neither host memory nor a live CUDA "
                         "allocation (freed or foreign pointer?)",
                         p, bytes);
    }
    return PGC_OK;
}

int pg_dev_route_slow(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    enum pg_mem ma, mb;
    int rc = classify_checked(a, abytes, &ma);

    if (rc == PGC_OK) {
        rc = classify_checked(b, bbytes, &mb);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    return pg_mem_is_device(ma) || pg_mem_is_device(mb);
}

static int cuda_status(cudaError_t e, const char *what)
{
    rt.cudaGetLastError();
    return mps_error(PGC_ERR_DEVICE, "%s failed: %s (CUDA error %d)", what,
                     rt.cudaGetErrorString(e), (int)e);
}

/* ======================================================================================
 * Pinned staging buffers, cached per power-of-two size class (a few per class), so a
 * steady stream of staged calls allocates nothing. cudaHostAlloc is slow (it pins pages).
 */

#define PIN_CLASSES 48
#define PIN_KEEP 4
#define PIN_MIN_SHIFT 12

static pthread_mutex_t pin_lock = PTHREAD_MUTEX_INITIALIZER;
static void *pin_cache[PIN_CLASSES][PIN_KEEP];
static int pin_n[PIN_CLASSES];

static int pin_class(size_t bytes)
{
    int c = 0;

    while (((size_t)1 << (c + PIN_MIN_SHIFT)) < bytes && c < PIN_CLASSES - 1) {
        c++;
    }
    return c;
}

static int pin_get(size_t bytes, void **out)
{
    int c = pin_class(bytes);
    cudaError_t e;

    *out = NULL;
    if (bytes == 0) {
        return PGC_OK;
    }
    pthread_mutex_lock(&pin_lock);
    if (pin_n[c] > 0) {
        *out = pin_cache[c][--pin_n[c]];
    }
    pthread_mutex_unlock(&pin_lock);
    if (*out) {
        return PGC_OK;
    }
    e = rt.cudaHostAlloc(out, (size_t)1 << (c + PIN_MIN_SHIFT), cudaHostAllocPortable);
    return e == cudaSuccess ? PGC_OK : cuda_status(e, "cudaHostAlloc of a staging buffer");
}

static void pin_put(void *p, size_t bytes)
{
    int c = pin_class(bytes);

    if (!p) {
        return;
    }
    pthread_mutex_lock(&pin_lock);
    if (pin_n[c] < PIN_KEEP) {
        pin_cache[c][pin_n[c]++] = p;
        p = NULL;
    }
    pthread_mutex_unlock(&pin_lock);
    if (p) {
        rt.cudaFreeHost(p);
    }
}

/* ======================================================================================
 * Group device state: our stream, and the NCCL communicator once agreed.
 */

enum { DEV_G_UNKNOWN, DEV_G_NCCL, DEV_G_STAGING, DEV_G_BROKEN };

struct pg_group_dev {
    int path; /* DEV_G_*: what the first device collective agreed on */
    int device;
    uint64_t ncalls; /* device collectives started on the group (atomic: the roll call reads it) */
    /* The device roll call (pg_dev_roll_ask), under the world lock: the collective it asks
     * about, when it next asks, and per group rank 1 + the count it answered (0: none yet). */
    uint32_t asked_seq;
    double ask_next;
    uint64_t *heard;
    cudaStream_t stream;
#if HAVE_NCCL
    ncclComm_t comm;
#endif
};

static pthread_mutex_t gdev_lock = PTHREAD_MUTEX_INITIALIZER;

static int group_dev(struct pg_group *g, struct pg_group_dev **out)
{
    struct pg_group_dev *d;
    cudaError_t e;
    int rc = PGC_OK;

    pthread_mutex_lock(&gdev_lock);
    d = g->dev;
    if (!d && (d = calloc(1, sizeof(*d))) == NULL) {
        rc = mps_error(PGC_ERR_NOMEM, "no memory for the device state of a group");
    } else if (!g->dev) {
        rt.cudaGetDevice(&d->device);
        /* A blocking stream: its work waits for what the caller queued on the legacy
         * default stream, so the CUDA-aware MPI idiom (cudaMemcpy or a kernel on stream 0,
         * then MPI_Allreduce) reads finished data. A cudaMemcpy from pageable memory may
         * return before its DMA lands, and a non-blocking stream then read stale bytes
         * (seen on an H100: staged 4 KiB allreduces summed zeros). */
        e = rt.cudaStreamCreateWithFlags(&d->stream, cudaStreamDefault);
        if (e != cudaSuccess) {
            rc = cuda_status(e, "cudaStreamCreateWithFlags");
            free(d);
            d = NULL;
        }
        __atomic_store_n(&g->dev, d, __ATOMIC_RELEASE); /* pg_dev_started reads it unlocked */
    }
    pthread_mutex_unlock(&gdev_lock);
    *out = d;
    return rc;
}

void pg_dev_group_free(struct pg_group *g)
{
    struct pg_group_dev *d = g ? g->dev : NULL;

    if (!d) {
        return;
    }
#if HAVE_NCCL
    if (d->comm) {
        nc.ncclCommDestroy(d->comm);
    }
#endif
    rt.cudaStreamDestroy(d->stream);
    free(d->heard);
    free(d);
    g->dev = NULL;
}

/* ======================================================================================
 * Operations in flight: one struct per device call (recycled through a free list), on the
 * active list (under the world lock) until its user request completes or is detached.
 */

enum coll_kind {
    K_ALLREDUCE,
    K_BCAST,
    K_REDUCE,
    K_ALLGATHER,
    K_REDSCAT,
    K_ALLTOALL,
    K_GATHER,
    K_SCATTER,
    K_SEND,
    K_RECV
};

static const char *const kind_name[] = {
    "allreduce", "bcast",  "reduce",  "allgather", "reduce_scatter_block",
    "alltoall",  "gather", "scatter", "send",      "recv"};

/* A device call: what it does and where its data is. counts: reductions in elements of
 * op->elem_size, everything else in bytes. */
struct coll_desc {
    enum coll_kind kind;
    const void *in;
    void *out;
    size_t count;
    const struct pg_op_spec *op;
    int root;
    size_t in_bytes, out_bytes; /* significant at this rank */
    bool copy_back;             /* this rank's out is written */
};

struct dev_op {
    struct mps_list link;
    struct pg_req *user;
    struct pg_req inner; /* staging / p2p: the host operation */
    struct pg_group *g;
    struct pg_group_dev *gd;
    bool nccl;
    uint64_t seq; /* the group's device collective number, from 1 */
    cudaEvent_t ev;
    struct coll_desc d;
    struct pg_op_spec op;
    void *pin, *pin2; /* staging buffers and their sizes */
    size_t pin_bytes, pin2_bytes;
    void *hout;                   /* host image of d.out */
    void *bounce_in, *bounce_out; /* NCCL path: device scratch for host-side buffers */
};

static pthread_mutex_t op_lock = PTHREAD_MUTEX_INITIALIZER;
static struct mps_list op_free = {&op_free, &op_free};
static struct mps_list op_active = {&op_active, &op_active}; /* under the world lock */
static int nccl_pending;                                     /* under the world lock */

static struct dev_op *op_get(void)
{
    struct dev_op *o = NULL;
    cudaEvent_t ev = NULL;

    pthread_mutex_lock(&op_lock);
    if (!mps_list_empty(&op_free)) {
        o = container_of(op_free.next, struct dev_op, link);
        mps_list_remove(&o->link);
        ev = o->ev;
    }
    pthread_mutex_unlock(&op_lock);
    if (!o && (o = malloc(sizeof(*o))) == NULL) {
        mps_error(PGC_ERR_NOMEM, "no memory for a device operation");
        return NULL;
    }
    memset(o, 0, sizeof(*o));
    o->ev = ev; /* the event is kept across reuse */
    mps_list_init(&o->link);
    return o;
}

static void op_put(struct dev_op *o)
{
    pin_put(o->pin, o->pin_bytes);
    pin_put(o->pin2, o->pin2_bytes);
    if (o->g) {
        pg_group_release(o->g);
    }
    o->pin = o->pin2 = NULL;
    o->g = NULL;
    pthread_mutex_lock(&op_lock);
    mps_list_push_back(&op_free, &o->link);
    pthread_mutex_unlock(&op_lock);
}

/* Completes the user's request (unless its waiter gave up) and recycles o. The world lock
 * is held. */
static void op_finish(struct dev_op *o, int status)
{
    struct pg_req *u = o->user;

    mps_list_remove(&o->link);
    if (o->nccl) {
        nccl_pending--;
    }
    op_put(o);
    if (u) {
        pg_req_complete(u, status);
    }
}

static void op_activate(struct dev_op *o, struct pg_group *g, struct pg_req *user,
                        enum pg_req_kind kind)
{
    pg_req_cb cb = user->on_complete;
    void *arg = user->cb_arg;

    /* Like pg_sched_start: reset the request but keep the completion hook its owner set. */
    pg_req_init(user, kind);
    user->on_complete = cb;
    user->cb_arg = arg;
    o->user = user;
    pg_group_retain(g);
    o->g = g;
}

/* Puts o on the active list, where detach and progress find it; an NCCL op only once its
 * event is recorded (an unrecorded event queries as done). */
static void op_publish(struct dev_op *o)
{
    PG_LOCK();
    mps_list_push_back(&op_active, &o->link);
    if (o->nccl) {
        nccl_pending++;
    }
    PG_UNLOCK();
}

/* ======================================================================================
 * Descriptors: the bytes each rank's buffers hold, per kind.
 */

static void desc_sizes(struct coll_desc *d, struct pg_group *g)
{
    size_t n = (size_t)g->size, es = d->op ? d->op->elem_size : 1, b = d->count * es;
    bool root = g->rank == d->root;

    d->copy_back = true;
    switch (d->kind) {
    case K_ALLREDUCE:
        d->in_bytes = d->out_bytes = b;
        break;
    case K_BCAST:
        d->in_bytes = root ? b : 0;
        d->out_bytes = root ? 0 : b;
        break;
    case K_REDUCE:
        d->in_bytes = b;
        d->out_bytes = root ? b : 0;
        break;
    case K_ALLGATHER:
    case K_GATHER:
        d->in_bytes = b;
        d->out_bytes = d->kind == K_GATHER && !root ? 0 : n * b;
        break;
    case K_REDSCAT:
        d->in_bytes = n * b;
        d->out_bytes = b;
        break;
    case K_ALLTOALL:
        d->in_bytes = d->out_bytes = n * b;
        break;
    default: /* K_SCATTER */
        d->in_bytes = root ? n * b : 0;
        d->out_bytes = b;
        break;
    }
    d->copy_back = d->out_bytes > 0;
}

/* ======================================================================================
 * The staging path: device -> pinned, host collective, pinned -> device.
 */

/* Host images of in and out: one pinned buffer over both when they overlap (in place),
 * else one each; the input bytes are copied in. */
static int stage_in(struct dev_op *o)
{
    struct coll_desc *d = &o->d;
    const char *in = d->in, *out = d->out;
    const char *lo, *hi;
    char *hin;
    cudaError_t e;
    int rc;
    bool overlap = d->in_bytes && d->out_bytes && in < out + d->out_bytes && out < in + d->in_bytes;

    if (overlap) {
        lo = in < out ? in : out;
        hi = in + d->in_bytes > out + d->out_bytes ? in + d->in_bytes : out + d->out_bytes;
        o->pin_bytes = (size_t)(hi - lo);
        rc = pin_get(o->pin_bytes, &o->pin);
        hin = (char *)o->pin + (in - lo);
        o->hout = (char *)o->pin + (out - lo);
    } else {
        o->pin_bytes = d->in_bytes;
        o->pin2_bytes = d->out_bytes;
        rc = pin_get(o->pin_bytes, &o->pin);
        if (rc == PGC_OK) {
            rc = pin_get(o->pin2_bytes, &o->pin2);
        }
        hin = o->pin;
        o->hout = o->pin2;
    }
    if (rc != PGC_OK || !d->in_bytes) {
        d->in = hin; /* from here on d->in is the host image */
        return rc;
    }
    e = rt.cudaMemcpyAsync(hin, in, d->in_bytes, cudaMemcpyDefault, o->gd->stream);
    if (e == cudaSuccess) {
        e = rt.cudaStreamSynchronize(o->gd->stream);
    }
    d->in = hin;
    return e == cudaSuccess ? PGC_OK : cuda_status(e, "copy of a device input to host");
}

static size_t avg_count(const struct dev_op *o)
{
    return o->op.op == PG_OP_AVG && !o->op.user_fn && o->d.out_bytes
               ? o->d.out_bytes / o->op.elem_size
               : 0;
}

/* The host collective finished: finish AVG, copy the result back, complete. Runs from
 * progress with the world lock held (so it calls no locking pg function). */
static void staged_done(struct pg_req *inner)
{
    struct dev_op *o = inner->cb_arg;
    int status = inner->status;
    size_t n = avg_count(o);
    cudaError_t e;

    if (status == PGC_OK && n) {
        status = pg_reduce_div(o->hout, n, o->op.dt, o->g->size);
    }
    if (status == PGC_OK && o->d.copy_back) {
        e = rt.cudaMemcpyAsync(o->d.out, o->hout, o->d.out_bytes, cudaMemcpyDefault, o->gd->stream);
        if (e == cudaSuccess) {
            e = rt.cudaStreamSynchronize(o->gd->stream);
        }
        if (e != cudaSuccess) {
            status = cuda_status(e, "copy of a staged result to the device");
        }
    }
    op_finish(o, status);
}

static int host_start(struct dev_op *o)
{
    struct coll_desc *d = &o->d;
    struct pg_group *g = o->g;
    struct pg_req *r = &o->inner;
    void *hout = o->hout;

    switch (d->kind) {
    case K_ALLREDUCE:
        return pg_iallreduce(g, d->in, hout, d->count, &o->op, r);
    case K_BCAST:
        return pg_ibcast(g, g->rank == d->root ? (void *)d->in : hout, d->count, d->root, r);
    case K_REDUCE:
        return pg_ireduce(g, d->in, hout, d->count, &o->op, d->root, r);
    case K_ALLGATHER:
        return pg_iallgather(g, d->in, hout, d->count, r);
    case K_REDSCAT:
        return pg_ireduce_scatter_block(g, d->in, hout, d->count, &o->op, r);
    case K_ALLTOALL:
        return pg_ialltoall(g, d->in, hout, d->count, r);
    case K_GATHER:
        return pg_igather(g, d->in, hout, d->count, d->root, r);
    default:
        return pg_iscatter(g, d->in, hout, d->count, d->root, r);
    }
}

static int stage_start(struct dev_op *o)
{
    int rc = stage_in(o);

    if (rc != PGC_OK) {
        return rc;
    }
    o->inner.on_complete = staged_done;
    o->inner.cb_arg = o;
    return host_start(o);
}

/* ======================================================================================
 * The NCCL path.
 */
#if HAVE_NCCL

static int nccl_status(ncclResult_t r, const char *what)
{
    return mps_error(PGC_ERR_DEVICE, "%s failed: %s (NCCL error %d)", what,
                     nc.ncclGetErrorString(r), (int)r);
}

static bool nccl_dtype(enum pg_dtype dt, ncclDataType_t *out)
{
    switch (dt) {
    case PG_INT8:
        *out = ncclInt8;
        return true;
    case PG_UINT8:
        *out = ncclUint8;
        return true;
    case PG_INT32:
        *out = ncclInt32;
        return true;
    case PG_UINT32:
        *out = ncclUint32;
        return true;
    case PG_INT64:
        *out = ncclInt64;
        return true;
    case PG_UINT64:
        *out = ncclUint64;
        return true;
    case PG_FLOAT16:
        *out = ncclFloat16;
        return true;
    case PG_BFLOAT16:
        *out = ncclBfloat16;
        return true;
    case PG_FLOAT:
        *out = ncclFloat32;
        return true;
    case PG_DOUBLE:
        *out = ncclFloat64;
        return true;
    default:
        return false;
    }
}

static bool is_float(enum pg_dtype dt)
{
    return dt == PG_FLOAT16 || dt == PG_BFLOAT16 || dt == PG_FLOAT || dt == PG_DOUBLE;
}

static bool nccl_redop(const struct pg_op_spec *op, ncclRedOp_t *out)
{
    switch (op->op) {
    case PG_OP_SUM:
        *out = ncclSum;
        return true;
    case PG_OP_PROD:
        *out = ncclProd;
        return true;
    case PG_OP_MAX:
        *out = ncclMax;
        return true;
    case PG_OP_MIN:
        *out = ncclMin;
        return true;
    case PG_OP_AVG:
        *out = ncclAvg;
        return is_float(op->dt); /* integer AVG: staged */
    default:
        return false;
    }
}

/* Whether NCCL can run this call at all (the same answer on every rank). */
static const char *nccl_cannot(const struct coll_desc *d)
{
    ncclDataType_t t;
    ncclRedOp_t r;

    if (!d->op || d->kind == K_BCAST || d->kind == K_ALLGATHER || d->kind == K_ALLTOALL ||
        d->kind == K_GATHER || d->kind == K_SCATTER) {
        return NULL;
    }
    if (d->op->user_fn) {
        return "a user-defined op";
    }
    if (!nccl_dtype(d->op->dt, &t)) {
        return "a datatype NCCL lacks";
    }
    return nccl_redop(d->op, &r) ? NULL : "an op NCCL lacks";
}

/* One host allreduce(min) of a flag over g: every rank learns whether all said yes. */
static int agree(struct pg_group *g, int mine, int *all)
{
    struct pg_op_spec min = {.dt = PG_INT32, .op = PG_OP_MIN, .elem_size = 4, .commutative = true};
    int32_t in = mine, out = 0;
    int rc = pg_allreduce(g, &in, &out, 1, &min);

    *all = out;
    return rc;
}

/* The first NCCL collective on g: readiness (NCCL loaded) agreed, id from rank 0 over the
 * host path, ncclCommInitRank, then agreement that init worked everywhere; the outcome is
 * cached. A rank without NCCL thus makes the whole group stage, never only itself. */
static int nccl_init(struct pg_group *g, struct pg_group_dev *gd)
{
    struct {
        ncclUniqueId id;
        int32_t ok;
    } msg;
    ncclResult_t r = ncclInvalidUsage;
    bool ready = nc_load();
    const char *why = ready ? "NCCL could not be loaded on another rank" : nc_lib.why;
    int all = 0, rc = agree(g, ready, &all);

    memset(&msg, 0, sizeof(msg));
    if (rc == PGC_OK && all && g->rank == 0) {
        msg.ok = nc.ncclGetUniqueId(&msg.id) == ncclSuccess;
    }
    if (rc == PGC_OK && all) {
        rc = pg_bcast(g, &msg, sizeof(msg), 0);
        why = "ncclGetUniqueId failed on rank 0";
    }
    if (rc == PGC_OK && all && msg.ok) {
        r = nc.ncclCommInitRank(&gd->comm, g->size, msg.id, g->rank);
        why = r == ncclSuccess ? "on another rank" : nc.ncclGetErrorString(r);
        rc = agree(g, r == ncclSuccess, &all);
    }
    if (rc != PGC_OK) {
        return rc; /* the host path failed: nothing is cached, the next call tries again */
    }
    if (r == ncclSuccess && all) {
        gd->path = DEV_G_NCCL;
        MPS_INFO("device: NCCL communicator ready for a group of %d", g->size);
        return PGC_OK;
    }
    if (r == ncclSuccess) {
        nc.ncclCommAbort(gd->comm); /* another rank failed: ours is of no use */
    }
    gd->comm = NULL;
    gd->path = DEV_G_STAGING;
    MPS_INFO("device: NCCL init failed for a group of %d (%s): its device collectives stage "
             "through host memory",
             g->size, why);
    return pg_dev_path_mode() == PG_DEV_PATH_NCCL
               ? mps_error(PGC_ERR_DEVICE,
                           "MPISHIM_DEVICE_COLL=nccl but NCCL init failed on a group of %d "
                           "(rank %d: %s)",
                           g->size, g->rank, why)
               : PGC_OK;
}

/* Device scratch for a host-side buffer on the NCCL path (NCCL reads device memory). */
static int bounce(struct dev_op *o, const void *host, size_t bytes, bool copy_in, void **dev)
{
    cudaError_t e = rt.cudaMallocAsync(dev, bytes, o->gd->stream);

    if (e == cudaSuccess && copy_in) {
        e = rt.cudaMemcpyAsync(*dev, host, bytes, cudaMemcpyDefault, o->gd->stream);
    }
    return e == cudaSuccess ? PGC_OK : cuda_status(e, "device scratch for a host buffer");
}

static ncclResult_t nccl_p2p(const struct coll_desc *d, const char *in, char *out, int me, int n,
                             ncclComm_t c, cudaStream_t s)
{
    size_t b = d->count;
    ncclResult_t r = nc.ncclGroupStart();

    for (int j = 0; j < n && r == ncclSuccess; j++) {
        bool send = j != me && (d->kind == K_ALLTOALL || (d->kind == K_GATHER && j == d->root) ||
                                (d->kind == K_SCATTER && me == d->root));
        bool recv = j != me && (d->kind == K_ALLTOALL || (d->kind == K_SCATTER && j == d->root) ||
                                (d->kind == K_GATHER && me == d->root));
        if (send) {
            r = nc.ncclSend(d->kind == K_GATHER ? in : in + (size_t)j * b, b, ncclInt8, j, c, s);
        }
        if (recv && r == ncclSuccess) {
            r = nc.ncclRecv(d->kind == K_SCATTER ? out : out + (size_t)j * b, b, ncclInt8, j, c, s);
        }
    }
    return r == ncclSuccess ? nc.ncclGroupEnd() : r;
}

/* The block a rank keeps for itself in alltoall/gather/scatter: a device-to-device copy. */
static cudaError_t self_block(const struct coll_desc *d, const char *in, char *out, int me,
                              cudaStream_t s)
{
    size_t b = d->count;
    const char *src = d->kind == K_GATHER ? in : in + (size_t)me * b;
    char *dst = d->kind == K_SCATTER ? out : out + (size_t)me * b;

    if (d->kind != K_ALLTOALL && me != d->root) {
        return cudaSuccess;
    }
    return src == dst || !b ? cudaSuccess : rt.cudaMemcpyAsync(dst, src, b, cudaMemcpyDefault, s);
}

static ncclResult_t nccl_enqueue(struct dev_op *o, const void *in, void *out)
{
    struct coll_desc *d = &o->d;
    ncclComm_t c = o->gd->comm;
    cudaStream_t s = o->gd->stream;
    ncclDataType_t t = ncclInt8;
    ncclRedOp_t rop = ncclSum;

    if (d->op) {
        nccl_dtype(d->op->dt, &t);
        nccl_redop(d->op, &rop);
    }
    switch (d->kind) {
    case K_ALLREDUCE:
        return nc.ncclAllReduce(in, out, d->count, t, rop, c, s);
    case K_BCAST:
        return nc.ncclBroadcast(in ? in : out, out ? out : (void *)in, d->count, ncclInt8, d->root,
                                c, s);
    case K_REDUCE:
        return nc.ncclReduce(in, out ? out : (void *)in, d->count, t, rop, d->root, c, s);
    case K_ALLGATHER:
        return nc.ncclAllGather(in, out, d->count, ncclInt8, c, s);
    case K_REDSCAT:
        return nc.ncclReduceScatter(in, out, d->count, t, rop, c, s);
    default:
        if (self_block(d, in, out, o->g->rank, s) != cudaSuccess) {
            rt.cudaGetLastError();
            return ncclUnhandledCudaError;
        }
        return nccl_p2p(d, in, out, o->g->rank, o->g->size, c, s);
    }
}

/* Enqueues the call on the group's stream (with device scratch where a buffer of this rank
 * is on the host), then records the op's event. */
static int nccl_start(struct dev_op *o)
{
    struct coll_desc *d = &o->d;
    const void *in = d->in;
    void *out = d->out;
    cudaError_t e;
    ncclResult_t r;
    int rc = PGC_OK;
    bool redscat_shift = d->kind == K_REDSCAT && d->in == d->out && o->g->rank > 0;

    if (d->in_bytes && !pg_mem_is_device(pg_dev_classify(d->in))) {
        rc = bounce(o, d->in, d->in_bytes, true, &o->bounce_in);
        in = o->bounce_in;
    }
    if (rc == PGC_OK && d->out_bytes &&
        (redscat_shift || !pg_mem_is_device(pg_dev_classify(d->out)))) {
        /* NCCL's in-place reduce_scatter wants out at in + rank * count: use scratch. */
        rc = bounce(o, NULL, d->out_bytes, false, &o->bounce_out);
        out = o->bounce_out;
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (d->kind == K_BCAST) {
        in = out = d->in_bytes ? (void *)in : out;
    }
    r = nccl_enqueue(o, in, out);
    if (r != ncclSuccess) {
        return nccl_status(r, kind_name[d->kind]);
    }
    e = o->bounce_out ? rt.cudaMemcpyAsync(d->out, o->bounce_out, d->out_bytes, cudaMemcpyDefault,
                                           o->gd->stream)
                      : cudaSuccess;
    if (o->bounce_in) {
        rt.cudaFreeAsync(o->bounce_in, o->gd->stream);
    }
    if (o->bounce_out) {
        rt.cudaFreeAsync(o->bounce_out, o->gd->stream);
    }
    if (e == cudaSuccess && !o->ev) {
        e = rt.cudaEventCreateWithFlags(&o->ev, cudaEventDisableTiming);
    }
    if (e == cudaSuccess) {
        e = rt.cudaEventRecord(o->ev, o->gd->stream);
    }
    return e == cudaSuccess ? PGC_OK : cuda_status(e, "recording a device collective's event");
}

/* Runs when the op's event is done (from pg_dev_progress). */
static void nccl_done(struct dev_op *o, cudaError_t e)
{
    int status = e == cudaSuccess ? PGC_OK : cuda_status(e, "a device collective");
    ncclResult_t async = ncclSuccess;

    if (status == PGC_OK && o->gd->comm &&
        nc.ncclCommGetAsyncError(o->gd->comm, &async) == ncclSuccess && async != ncclSuccess) {
        status = nccl_status(async, kind_name[o->d.kind]);
    }
    op_finish(o, status);
}

#endif /* HAVE_NCCL */

/* ======================================================================================
 * Dispatch.
 */

/* Picks the path for d on g (identically on every rank: it depends only on the
 * configuration, the op and the group's agreed state), creating the NCCL communicator on
 * the group's first NCCL-capable call. */
static int choose_path(struct pg_group *g, struct pg_group_dev *gd, const struct coll_desc *d,
                       bool *nccl, const char **why)
{
    *nccl = false;
    *why = "MPISHIM_DEVICE_COLL=staging";
    if (pg_dev_path_mode() == PG_DEV_PATH_STAGING) {
        return PGC_OK;
    }
#if HAVE_NCCL
    if ((*why = nccl_cannot(d)) != NULL) {
        return PGC_OK;
    }
    nc_load(); /* once loaded, this makes the loading thread's writes to nc visible here */
    if (gd->path == DEV_G_UNKNOWN) {
        int rc = nccl_init(g, gd);
        if (rc != PGC_OK) {
            return rc;
        }
    }
    if (gd->path == DEV_G_STAGING && pg_dev_path_mode() == PG_DEV_PATH_NCCL) {
        return mps_error(PGC_ERR_DEVICE,
                         "MPISHIM_DEVICE_COLL=nccl but NCCL init failed on "
                         "this group of %d",
                         g->size);
    }
    if (gd->path == DEV_G_BROKEN) {
        return mps_error(PGC_ERR_DEVICE, "the group's NCCL communicator was aborted after a "
                                         "timeout: no more device collectives on it");
    }
    *nccl = gd->path == DEV_G_NCCL;
    *why = *nccl ? "NCCL" : "NCCL init failed on this group";
    return PGC_OK;
#else
    (void)g;
    (void)gd;
    (void)d;
    *why = "built without NCCL";
    if (pg_dev_path_mode() == PG_DEV_PATH_NCCL) {
        return mps_error(PGC_ERR_DEVICE, "MPISHIM_DEVICE_COLL=nccl but mpishim was built "
                                         "without NCCL");
    }
    return PGC_OK;
#endif
}

static void log_path(const struct coll_desc *d, struct pg_group *g, bool nccl, const char *why)
{
    static int logged_staging;

    if (!nccl && why && !__atomic_exchange_n(&logged_staging, 1, __ATOMIC_RELAXED)) {
        MPS_INFO("device: a %s on device buffers stages through host memory (%s); later "
                 "staged calls are logged at debug level",
                 kind_name[d->kind], why);
    }
    MPS_DEBUG("device: %s of %zu/%zu bytes on a group of %d: %s path%s%s%s", kind_name[d->kind],
              d->in_bytes, d->out_bytes, g->size, nccl ? "nccl" : "staging", why ? " (" : "",
              why ? why : "", why ? ")" : "");
}

static int dev_start(struct pg_group *g, struct coll_desc *d, struct pg_req *req)
{
    struct pg_group_dev *gd;
    struct dev_op *o;
    const char *why = NULL;
    bool nccl = false;
    int rc = group_dev(g, &gd);

    if (rc == PGC_OK) {
        desc_sizes(d, g);
        rc = choose_path(g, gd, d, &nccl, &why);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    log_path(d, g, nccl, why);
    if ((o = op_get()) == NULL) {
        return PGC_ERR_NOMEM;
    }
    o->d = *d;
    if (d->op) {
        o->op = *d->op;
        o->d.op = &o->op;
    }
    o->gd = gd;
    o->nccl = nccl;
    o->seq = __atomic_add_fetch(&gd->ncalls, 1, __ATOMIC_RELAXED);
    op_activate(o, g, req, PG_REQ_COLL);
#if HAVE_NCCL
    if (nccl) {
        rc = nccl_start(o);
        if (rc == PGC_OK) {
            op_publish(o); /* pg_dev_progress completes it */
            return rc;
        }
        o->nccl = false;
        PG_LOCK();
        o->user = NULL; /* a failed call never completes its request */
        op_finish(o, rc);
        PG_UNLOCK();
        return rc;
    }
#endif
    op_publish(o); /* before the start: the host collective may complete at once */
    rc = stage_start(o);
    if (rc != PGC_OK) {
        PG_LOCK();
        o->user = NULL;
        op_finish(o, rc);
        PG_UNLOCK();
    }
    return rc;
}

/* A device call in a process without a device: callers route only device memory here, which
 * cannot exist then, but a direct pg_dev_* call must fail cleanly, not call into CUDA. */
static int no_device(const struct pg_group *g, enum coll_kind k)
{
    return mps_error(PGC_ERR_DEVICE, "device %s on rank %d: no usable CUDA device (%s)",
                     kind_name[k], g->rank,
                     rt_lib.loaded ? "cudaGetDeviceCount found none" : rt_lib.why);
}

static int start_kind(struct pg_group *g, enum coll_kind k, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op, int root, struct pg_req *req)
{
    struct coll_desc d = {.kind = k, .in = in, .out = out, .count = count, .op = op, .root = root};
    int rc = op ? pg_check_op(op) : PGC_OK;

    if (rc == PGC_OK && !device_ready()) {
        rc = no_device(g, k);
    }
    if (rc == PGC_OK && (k == K_BCAST || k == K_REDUCE || k == K_GATHER || k == K_SCATTER)) {
        rc = pg_check_root(g, root);
    }
    return rc == PGC_OK ? dev_start(g, &d, req) : rc;
}

int pg_dev_iallreduce(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op, struct pg_req *req)
{
    return start_kind(g, K_ALLREDUCE, in, out, count, op, 0, req);
}

int pg_dev_ibcast(struct pg_group *g, void *buf, size_t bytes, int root, struct pg_req *req)
{
    return start_kind(g, K_BCAST, g->rank == root ? buf : NULL, g->rank == root ? NULL : buf, bytes,
                      NULL, root, req);
}

int pg_dev_ireduce(struct pg_group *g, const void *in, void *out, size_t count,
                   const struct pg_op_spec *op, int root, struct pg_req *req)
{
    return start_kind(g, K_REDUCE, in, g->rank == root ? out : NULL, count, op, root, req);
}

int pg_dev_iallgather(struct pg_group *g, const void *in, void *out, size_t bytes,
                      struct pg_req *req)
{
    return start_kind(g, K_ALLGATHER, in, out, bytes, NULL, 0, req);
}

int pg_dev_ireduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                                 const struct pg_op_spec *op, struct pg_req *req)
{
    return start_kind(g, K_REDSCAT, in, out, count, op, 0, req);
}

int pg_dev_ialltoall(struct pg_group *g, const void *in, void *out, size_t bytes,
                     struct pg_req *req)
{
    return start_kind(g, K_ALLTOALL, in, out, bytes, NULL, 0, req);
}

int pg_dev_igather(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
                   struct pg_req *req)
{
    return start_kind(g, K_GATHER, in, g->rank == root ? out : NULL, bytes, NULL, root, req);
}

int pg_dev_iscatter(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
                    struct pg_req *req)
{
    return start_kind(g, K_SCATTER, g->rank == root ? in : NULL, out, bytes, NULL, root, req);
}

/* ======================================================================================
 * Point-to-point: whole-message staging (see pg_device.h for why).
 */

static void p2p_done(struct pg_req *inner)
{
    struct dev_op *o = inner->cb_arg;
    struct pg_req *u = o->user;
    int status = inner->status;
    size_t n = inner->len < o->d.out_bytes ? inner->len : o->d.out_bytes;
    cudaError_t e;

    if (o->d.kind == K_RECV && (status == PGC_OK || status == PGC_ERR_TRUNCATE) && n &&
        !inner->cancelled) {
        e = rt.cudaMemcpy(o->d.out, o->pin, n, cudaMemcpyDefault);
        if (e != cudaSuccess) {
            status = cuda_status(e, "copy of a received message to the device");
        }
    }
    if (u) {
        u->source = inner->source;
        u->tag = inner->tag;
        u->len = inner->len;
        u->cancelled = inner->cancelled;
    }
    op_finish(o, status);
}

static int p2p_start(struct pg_group *g, enum coll_kind k, const void *buf, size_t len, int peer,
                     int tag, bool sync, struct pg_req *req)
{
    struct dev_op *o;
    cudaError_t e = cudaSuccess;
    int rc;

    if (!device_ready()) {
        return no_device(g, k);
    }
    if ((o = op_get()) == NULL) {
        return PGC_ERR_NOMEM;
    }
    o->d.kind = k;
    o->d.out = (void *)buf;
    o->d.out_bytes = len;
    o->pin_bytes = len;
    rc = pin_get(len, &o->pin);
    if (rc == PGC_OK && k == K_SEND && len) {
        e = rt.cudaMemcpy(o->pin, buf, len, cudaMemcpyDefault);
        rc = e == cudaSuccess ? PGC_OK : cuda_status(e, "copy of a device send buffer to host");
    }
    if (rc != PGC_OK) {
        op_put(o);
        return rc;
    }
    MPS_DEBUG("device: %s of %zu bytes, peer %d tag %d: staged", kind_name[k], len, peer, tag);
    op_activate(o, g, req, k == K_SEND ? PG_REQ_SEND : PG_REQ_RECV);
    op_publish(o);
    o->inner.on_complete = p2p_done;
    o->inner.cb_arg = o;
    rc = k == K_SEND ? pg_isend(g, o->pin, len, peer, tag, sync, &o->inner)
                     : pg_irecv(g, o->pin, len, peer, tag, &o->inner);
    if (rc != PGC_OK) {
        PG_LOCK();
        o->user = NULL;
        op_finish(o, rc);
        PG_UNLOCK();
    }
    return rc;
}

int pg_dev_isend(struct pg_group *g, const void *buf, size_t len, int dst, int tag, bool sync,
                 struct pg_req *req)
{
    return p2p_start(g, K_SEND, buf, len, dst, tag, sync, req);
}

int pg_dev_irecv(struct pg_group *g, void *buf, size_t cap, int src, int tag, struct pg_req *req)
{
    return p2p_start(g, K_RECV, buf, cap, src, tag, false, req);
}

/* ======================================================================================
 * Progress, waits, detach, finalize.
 */

int pg_dev_progress(void)
{
#if HAVE_NCCL
    struct mps_list *pos, *tmp;

    if (__builtin_expect(nccl_pending == 0, 1)) {
        return PGC_OK;
    }
    mps_list_for_each_safe(pos, tmp, &op_active)
    {
        struct dev_op *o = container_of(pos, struct dev_op, link);
        cudaError_t e;
        if (!o->nccl) {
            continue;
        }
        e = rt.cudaEventQuery(o->ev);
        if (e != cudaErrorNotReady) {
            nccl_done(o, e);
        }
    }
#endif
    return PGC_OK;
}

void pg_dev_detach(struct pg_req *req)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &op_active)
    {
        struct dev_op *o = container_of(pos, struct dev_op, link);
        if (o->user != req) {
            continue;
        }
        o->user = NULL;
#if HAVE_NCCL
        /* A kernel that waits for a peer that never comes would hold the device forever:
         * abort the communicator; the group's later device collectives fail cleanly. */
        if (o->nccl && o->gd->comm) {
            MPS_WARN("device: aborting the NCCL communicator of a group of %d after a "
                     "timeout",
                     o->g->size);
            nc.ncclCommAbort(o->gd->comm);
            o->gd->comm = NULL;
            o->gd->path = DEV_G_BROKEN;
        }
#endif
    }
}

uint64_t pg_dev_started(const struct pg_group *g)
{
    const struct pg_group_dev *gd = __atomic_load_n(&g->dev, __ATOMIC_ACQUIRE);

    return gd ? __atomic_load_n(&gd->ncalls, __ATOMIC_RELAXED) : 0;
}

/* The device roll call asks every other member of the group (NCCL cannot say whom a call
 * waits for), which a host roll call, asking the one rank it waits for, never does: so it
 * asks only once the wait has lasted half of MPISHIM_TIMEOUT (the first look comes
 * PG_ROLL_AFTER into the wait; a NCCL collective of a large job may well take seconds), and again every
 * DEV_ASK_EVERY, or every 10 ms per member on a large group: at most about 100 questions a
 * second from each waiting rank. The account needs the answers only at the timeout. */
#define DEV_ASK_EVERY 0.5

void pg_dev_roll_ask(struct pg_group *g, uint32_t seq)
{
    struct pg_group_dev *gd = g->dev;
    double now = mps_now();

    if (!gd || g->size < 2) {
        return;
    }
    if (!gd->heard && (gd->heard = calloc((size_t)g->size, sizeof(*gd->heard))) == NULL) {
        return; /* no memory: the account names no rank, as before the roll call */
    }
    if (gd->asked_seq != seq) { /* answers about an earlier collective say nothing of this one */
        memset(gd->heard, 0, sizeof(*gd->heard) * (size_t)g->size);
        gd->asked_seq = seq;
        gd->ask_next = now + MPS_MAX(0.0, pg_w.timeout / 2 - PG_ROLL_AFTER);
    }
    if (now < gd->ask_next) {
        return;
    }
    gd->ask_next = now + MPS_MAX(DEV_ASK_EVERY, 0.01 * g->size);
    pg_roll_ask_device(g);
}

void pg_dev_heard(struct pg_group *g, int rank, uint32_t count)
{
    struct pg_group_dev *gd = g->dev;

    if (gd && gd->heard && rank >= 0 && rank < g->size) {
        gd->heard[rank] = 1 + (uint64_t)count;
    }
}

/* The first group ranks of one kind (those an account shows), and how many there were. */
struct rank_list {
    int n;
    int r[PG_AWAITED_SHOWN + 1];
};

static void rank_list_add(struct rank_list *l, int rank)
{
    if (l->n < PG_AWAITED_SHOWN + 1) {
        l->r[l->n] = rank;
    }
    l->n++;
}

/* What the device roll call heard about collective o->seq of its group: the ranks that had
 * not started it when they answered, the ranks that never answered, and the first
 * laggard's count. False where nobody was asked about it. */
static bool roll_heard(const struct dev_op *o, struct rank_list *behind, struct rank_list *silent,
                       uint64_t *first_count)
{
    const struct pg_group_dev *gd = o->gd;
    uint32_t seq = (uint32_t)o->seq;

    if (!gd->heard || gd->asked_seq != seq) {
        return false;
    }
    for (int r = 0; r < o->g->size; r++) {
        /* An answer is the count's low 32 bits: compare in that ring. */
        uint32_t lag = seq - (uint32_t)(gd->heard[r] - 1);
        if (r == o->g->rank) {
            continue;
        }
        if (gd->heard[r] == 0) {
            rank_list_add(silent, r);
        } else if (lag > 0 && lag < (1u << 31)) {
            if (behind->n == 0) {
                *first_count = gd->heard[r] - 1;
            }
            rank_list_add(behind, r);
        }
    }
    return true;
}

/* The account of a NCCL collective whose wait timed out. NCCL cannot say which rank has not
 * called it (its kernels just wait); the device roll call (pg_dev_roll_ask) asked the others
 * how many of the group's device collectives they had started: the account names those that
 * had not started this one, else those that did not answer. The call is named by the
 * group's device collective number too, as torch's NCCL watchdog does, so that the ranks'
 * messages or flight recorders show who never reached it. */
static void nccl_awaited(const struct dev_op *o, struct pg_awaited *a)
{
    size_t bytes = o->d.in_bytes > o->d.out_bytes ? o->d.in_bytes : o->d.out_bytes;
    struct rank_list behind = {0}, silent = {0};
    uint64_t first_count = 0;
    char names[128];
    char *tail;
    size_t left;
    int off;

    snprintf(a->what, sizeof(a->what), "NCCL %s", kind_name[o->d.kind]);
    a->g = o->g;
    a->seq = (uint32_t)o->seq;
    a->device = true;
    a->nranks = 0;
    off =
        snprintf(a->how, sizeof(a->how),
                 "the group's device collective %llu, %zu B: ", (unsigned long long)o->seq, bytes);
    tail = a->how + off;
    left = sizeof(a->how) - (size_t)off;
    if (o->g->size == 1) {
        snprintf(a->who, sizeof(a->who), "this rank's GPU (no other rank is in the group)");
        snprintf(tail, left, "the GPU waits for work queued before it");
    } else if (!roll_heard(o, &behind, &silent, &first_count)) {
        snprintf(a->who, sizeof(a->who),
                 "one of the group's other %d ranks, which NCCL does not name", o->g->size - 1);
        snprintf(tail, left,
                 "a rank in another call, on host buffers or dead never joins; the "
                 "GPU also waits for work queued before it");
    } else if (behind.n > 0) {
        pg_awaited_ranks(a, o->g->ctx, behind.r, behind.n);
        snprintf(tail, left,
                 "when asked, rank %d had started only %llu of the group's device collectives "
                 "(it is in another call, or on host buffers)%s",
                 behind.r[0], (unsigned long long)first_count,
                 silent.n > 0 ? "; some ranks did not answer" : "");
    } else if (silent.n > 0) {
        pg_awaited_ranks(a, o->g->ctx, silent.r, silent.n);
        pg_ranks_str(silent.r, silent.n, names, sizeof(names));
        snprintf(tail, left,
                 "%s did not answer when asked how far it was (busy outside any call of the "
                 "library, or gone)",
                 names);
    } else {
        snprintf(a->who, sizeof(a->who),
                 "the GPU: every other rank of the group had started this collective when asked");
        snprintf(tail, left,
                 "the GPU waits for work queued before it, or the ranks called "
                 "different device collectives");
    }
}

bool pg_dev_awaited(const struct pg_req *req, struct pg_awaited *a)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &op_active)
    {
        struct dev_op *o = container_of(pos, struct dev_op, link);
        if (o->user != req) {
            continue;
        }
        if (!o->nccl) {
            return pg_req_awaited(&o->inner, a); /* staged: the host collective names ranks */
        }
        nccl_awaited(o, a);
        return true;
    }
    return false;
}

/* The one wait (pg_wait: its progress runs the device's too; a timeout's message comes from
 * pg_dev_awaited). */
int pg_dev_wait(struct pg_req *req, double timeout)
{
    return pg_wait(req, timeout);
}

void pg_dev_finalize(void)
{
    struct mps_list *pos, *tmp;

    pthread_mutex_lock(&pin_lock);
    for (int c = 0; c < PIN_CLASSES; c++) {
        while (pin_n[c] > 0) {
            rt.cudaFreeHost(pin_cache[c][--pin_n[c]]);
        }
    }
    pthread_mutex_unlock(&pin_lock);
    pthread_mutex_lock(&op_lock);
    mps_list_for_each_safe(pos, tmp, &op_free)
    {
        struct dev_op *o = container_of(pos, struct dev_op, link);
        mps_list_remove(&o->link);
        if (o->ev) {
            rt.cudaEventDestroy(o->ev);
        }
        free(o);
    }
    pthread_mutex_unlock(&op_lock);
}

#else /* !HAVE_CUDA: stubs. Nothing is ever device memory. */

int pg_dev_probe(void)
{
    if (__atomic_exchange_n(&pg_dev_state, 0, __ATOMIC_RELAXED) != 0) {
        MPS_INFO("device: built without CUDA: host path only");
    }
    return 0;
}

int pg_dev_cuda_version(void)
{
    return 0;
}

int pg_dev_nccl_version(void)
{
    return 0;
}

const char *pg_dev_cuda_lib(const char **why)
{
    *why = "built without CUDA";
    return NULL;
}

const char *pg_dev_nccl_lib(const char **why)
{
    *why = "built without CUDA";
    return NULL;
}

enum pg_mem pg_dev_classify(const void *p)
{
    (void)p;
    return PG_MEM_HOST;
}

int pg_dev_route_slow(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    (void)a;
    (void)abytes;
    (void)b;
    (void)bbytes;
    return 0;
}

static int unsupported(const char *what)
{
    return mps_error(PGC_ERR_UNSUPPORTED,
                     "%s on device buffers: mpishim was built without "
                     "CUDA",
                     what);
}

int pg_dev_iallreduce(struct pg_group *g, const void *in, void *out, size_t count,
                      const struct pg_op_spec *op, struct pg_req *req)
{
    (void)g, (void)in, (void)out, (void)count, (void)op, (void)req;
    return unsupported("allreduce");
}

int pg_dev_ibcast(struct pg_group *g, void *buf, size_t bytes, int root, struct pg_req *req)
{
    (void)g, (void)buf, (void)bytes, (void)root, (void)req;
    return unsupported("broadcast");
}

int pg_dev_ireduce(struct pg_group *g, const void *in, void *out, size_t count,
                   const struct pg_op_spec *op, int root, struct pg_req *req)
{
    (void)g, (void)in, (void)out, (void)count, (void)op, (void)root, (void)req;
    return unsupported("reduce");
}

int pg_dev_iallgather(struct pg_group *g, const void *in, void *out, size_t bytes,
                      struct pg_req *req)
{
    (void)g, (void)in, (void)out, (void)bytes, (void)req;
    return unsupported("allgather");
}

int pg_dev_ireduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                                 const struct pg_op_spec *op, struct pg_req *req)
{
    (void)g, (void)in, (void)out, (void)count, (void)op, (void)req;
    return unsupported("reduce_scatter");
}

int pg_dev_ialltoall(struct pg_group *g, const void *in, void *out, size_t bytes,
                     struct pg_req *req)
{
    (void)g, (void)in, (void)out, (void)bytes, (void)req;
    return unsupported("alltoall");
}

int pg_dev_igather(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
                   struct pg_req *req)
{
    (void)g, (void)in, (void)out, (void)bytes, (void)root, (void)req;
    return unsupported("gather");
}

int pg_dev_iscatter(struct pg_group *g, const void *in, void *out, size_t bytes, int root,
                    struct pg_req *req)
{
    (void)g, (void)in, (void)out, (void)bytes, (void)root, (void)req;
    return unsupported("scatter");
}

int pg_dev_isend(struct pg_group *g, const void *buf, size_t len, int dst, int tag, bool sync,
                 struct pg_req *req)
{
    (void)g, (void)buf, (void)len, (void)dst, (void)tag, (void)sync, (void)req;
    return unsupported("send");
}

int pg_dev_irecv(struct pg_group *g, void *buf, size_t cap, int src, int tag, struct pg_req *req)
{
    (void)g, (void)buf, (void)cap, (void)src, (void)tag, (void)req;
    return unsupported("receive");
}

int pg_dev_wait(struct pg_req *req, double timeout)
{
    return pg_wait(req, timeout);
}

int pg_dev_progress(void)
{
    return PGC_OK;
}

bool pg_dev_awaited(const struct pg_req *req, struct pg_awaited *a)
{
    (void)req, (void)a;
    return false;
}

uint64_t pg_dev_started(const struct pg_group *g)
{
    (void)g;
    return 0; /* a rank built without CUDA starts no device collective */
}

void pg_dev_roll_ask(struct pg_group *g, uint32_t seq)
{
    (void)g, (void)seq;
}

void pg_dev_heard(struct pg_group *g, int rank, uint32_t count)
{
    (void)g, (void)rank, (void)count;
}

void pg_dev_detach(struct pg_req *req)
{
    (void)req;
}

void pg_dev_group_free(struct pg_group *g)
{
    (void)g;
}

void pg_dev_finalize(void)
{
}

#endif /* HAVE_CUDA */

/* ======================================================================================
 * Blocking forms (both builds): start, then wait.
 */

#define PG_DEV_BLOCKING(call)                                                                      \
    do {                                                                                           \
        struct pg_req req = {0};                                                                   \
        int rc_ = (call);                                                                          \
        return rc_ == PGC_OK ? pg_dev_wait(&req, -1) : rc_;                                        \
    } while (0)

int pg_dev_allreduce(struct pg_group *g, const void *in, void *out, size_t count,
                     const struct pg_op_spec *op)
{
    PG_DEV_BLOCKING(pg_dev_iallreduce(g, in, out, count, op, &req));
}

int pg_dev_bcast(struct pg_group *g, void *buf, size_t bytes, int root)
{
    PG_DEV_BLOCKING(pg_dev_ibcast(g, buf, bytes, root, &req));
}

int pg_dev_reduce(struct pg_group *g, const void *in, void *out, size_t count,
                  const struct pg_op_spec *op, int root)
{
    PG_DEV_BLOCKING(pg_dev_ireduce(g, in, out, count, op, root, &req));
}

int pg_dev_allgather(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    PG_DEV_BLOCKING(pg_dev_iallgather(g, in, out, bytes, &req));
}

int pg_dev_reduce_scatter_block(struct pg_group *g, const void *in, void *out, size_t count,
                                const struct pg_op_spec *op)
{
    PG_DEV_BLOCKING(pg_dev_ireduce_scatter_block(g, in, out, count, op, &req));
}

int pg_dev_alltoall(struct pg_group *g, const void *in, void *out, size_t bytes)
{
    PG_DEV_BLOCKING(pg_dev_ialltoall(g, in, out, bytes, &req));
}

int pg_dev_gather(struct pg_group *g, const void *in, void *out, size_t bytes, int root)
{
    PG_DEV_BLOCKING(pg_dev_igather(g, in, out, bytes, root, &req));
}

int pg_dev_scatter(struct pg_group *g, const void *in, void *out, size_t bytes, int root)
{
    PG_DEV_BLOCKING(pg_dev_iscatter(g, in, out, bytes, root, &req));
}
