/*
 * pgc.h - process groups in plain C: the rank/group model of PyTorch's torch.distributed
 * (c10d), with its Store, for C programs that want it without C++ or Python.
 *
 * A program calls pgc_init_process_group once (collective over every process of the job),
 * then point-to-point and collective operations on groups, then
 * pgc_destroy_process_group. MPI communicators and pgc groups are the same objects
 * underneath: pgc_group_to_mpi_comm and pgc_group_from_mpi_comm convert between them.
 *
 * General rules (they hold for every call below unless the call says otherwise):
 *
 * - Status: calls return PGC_OK (0) or a negative PGC_ERR_* code (pgc_status.h). A failed
 *   call records a message that names the call, the group and the cause, readable with
 *   pgc_last_error() in the same thread until that thread's next failing call. A call that
 *   fails has started nothing: no work handle is returned (*work is set to NULL), no
 *   buffer is read or written after it returns, and the group stays usable.
 * - Groups: a pgc_group argument of NULL means the world group (torch's group=None).
 *   Ranks given to an operation (dst, src, root, peer) are GROUP ranks, as torch's
 *   group_dst/group_src; for the world group they equal global ranks. pgc_get_group_rank
 *   and pgc_get_global_rank translate. A process that is not a member of the group gets
 *   PGC_ERR_INVALID_GROUP from every operation on it.
 * - Collectives are collective: every member of the group must call them in the same order,
 *   with the same root, op and dtype, and with sizes that agree (see each call). A size
 *   that disagrees between ranks is detected where data arrives (PGC_ERR_MISMATCH on the
 *   rank that receives more or less than it expects); other ranks may then complete, or
 *   give up with PGC_ERR_TIMEOUT after the timeout. With pgc_set_debug_level(PGC_DEBUG_DETAIL)
 *   (or MPISHIM_PGC_DEBUG=detail) every collective first checks its arguments against
 *   every member's, so that all ranks return PGC_ERR_MISMATCH instead (torch's
 *   TORCH_DISTRIBUTED_DEBUG=DETAIL); this costs one small all_gather per collective.
 * - Buffers and blocking calls: with async_op = 0 a call returns when the operation is
 *   complete on this rank: input tensors may be reused and outputs hold the result.
 * - Buffers and non-blocking calls: with async_op != 0 (and isend/irecv/batch) the call
 *   returns a work handle in *work; until the work completes (pgc_work_wait returns
 *   PGC_OK or pgc_work_is_completed returns 1), the caller must neither modify any input
 *   tensor nor read or modify any output tensor, and the tensor data (not the pgc_tensor
 *   descriptors, which are copied) must stay allocated. Argument arrays (tensor lists,
 *   split sizes, rank lists) are copied during the call and may be freed when it returns.
 * - Threads: every call may be made from any thread; the library serializes internally
 *   (when MPI_Init created the world, as MPI's thread level allows: MPI_THREAD_MULTIPLE).
 *   Two threads must not start collectives on the same group concurrently (their order
 *   would differ between ranks), exactly as in torch. A work handle and a store handle are
 *   used by one thread at a time.
 * - Timeouts: every blocking call gives up with PGC_ERR_TIMEOUT after the process-group
 *   timeout (pgc_init_opts.timeout, default MPISHIM_TIMEOUT, 300 s) unless it takes its own.
 * - Devices: tensors on PGC_DEVICE_CUDA (data is CUDA device memory) are taken by
 *   pgc_broadcast, pgc_reduce, pgc_all_reduce and pgc_all_gather_into_tensor, through NCCL
 *   or by staging through pinned host memory (doc/gpu.md); the other calls return
 *   PGC_ERR_UNSUPPORTED for them, as does every call in a process without a usable CUDA
 *   device (no GPU, no driver, or no CUDA runtime to load: mpishim opens it at run time).
 */
#ifndef PGC_H
#define PGC_H

#include "pgc_status.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; what this header declares is its API. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* ---------------------------------------------------------------------------------------
 * Tensors: a descriptor of caller-owned memory. pgc never allocates, frees or keeps a
 * tensor's data beyond the completion of the operation that uses it.
 */

typedef enum {
    PGC_INT8,
    PGC_UINT8,
    PGC_INT32,
    PGC_INT64,
    PGC_FLOAT16,  /* IEEE binary16, stored as uint16_t bit patterns */
    PGC_BFLOAT16, /* the upper half of a binary32, stored as uint16_t */
    PGC_FLOAT32,
    PGC_FLOAT64,
    PGC_DTYPE_COUNT
} pgc_dtype;

typedef enum { PGC_DEVICE_HOST, PGC_DEVICE_CUDA } pgc_device;

typedef struct {
    void *data;   /* numel elements of dtype, contiguous; may be NULL when numel == 0 */
    size_t numel; /* number of elements */
    pgc_dtype dtype;
    pgc_device device;
} pgc_tensor;

/* A host tensor descriptor, for brevity: pgc_host_tensor(buf, 16, PGC_FLOAT32). */
static inline pgc_tensor pgc_host_tensor(void *data, size_t numel, pgc_dtype dtype)
{
    pgc_tensor t = {data, numel, dtype, PGC_DEVICE_HOST};
    return t;
}

/* Bytes of one element of dtype; 0 for a value outside the enum. */
size_t pgc_dtype_size(pgc_dtype dtype);
/* A static name: "float32", "bfloat16"; "invalid" outside the enum. */
const char *pgc_dtype_name(pgc_dtype dtype);

/*
 * Reduction operations (torch's ReduceOp). BAND/BOR/BXOR apply to the integer dtypes only
 * (PGC_ERR_INVALID_OP on floats). AVG is SUM followed by a division by the group size
 * (truncating for integers). FLOAT16 and BFLOAT16 SUM and AVG accumulate in float32 and
 * round once at the end, so the result does not drift with the number of ranks.
 */
typedef enum {
    PGC_SUM,
    PGC_PRODUCT,
    PGC_MIN,
    PGC_MAX,
    PGC_BAND,
    PGC_BOR,
    PGC_BXOR,
    PGC_AVG,
    PGC_REDUCE_OP_COUNT
} pgc_reduce_op;

const char *pgc_reduce_op_name(pgc_reduce_op op);

/* Opaque handles. */
typedef struct pgc_group pgc_group;
typedef struct pgc_work pgc_work;
typedef struct pgc_store pgc_store;

/* ---------------------------------------------------------------------------------------
 * Initialization (torch.distributed.init_process_group and friends).
 */

typedef struct {
    /* "auto" (or NULL), "host" (libfabric; torch's "gloo" and "mpi" are accepted as
     * synonyms) or "nccl" (accepted in a build with NCCL; CUDA tensors take the device path,
     * NCCL where it loads and accepts the group, else staging, whatever the backend; host
     * tensors still use the host transport). */
    const char *backend;
    /* NULL or "auto": PMIx when a PMIx server launched us (srun --mpi=pmix, mpirun),
     *     else env:// when RANK and WORLD_SIZE are set, else a world of one.
     * "env://": RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the environment (torchrun,
     *     our mpiexec, or two shells); rank 0 serves the TCP store.
     * "tcp://host:port": rank and world_size below must be given; rank 0 serves the store.
     * "file:///path": a file on a file system every rank sees; rank and world_size given.
     *     The file must not exist before the job (remove it afterwards).
     * "pmix://": PMIx only (PGC_ERR_UNREACHABLE if no server answers). */
    const char *init_method;
    int world_size; /* <= 0: from the environment or the launcher */
    int rank;       /* < 0 (or world_size <= 0): from the environment or the launcher */
    double timeout; /* seconds for rendezvous and every blocking call; <= 0: MPISHIM_TIMEOUT */
} pgc_init_opts;

/* The defaults: every field from the environment. */
#define PGC_INIT_OPTS_DEFAULT                                                                      \
    {                                                                                              \
        NULL, NULL, -1, -1, 0.0                                                                    \
    }

/*
 * Creates the world. Collective over every process of the job; blocks until every rank
 * has joined or the timeout passes (PGC_ERR_TIMEOUT, PGC_ERR_UNREACHABLE: a wrong port,
 * a missing peer). opts may be NULL (all defaults). If MPI_Init already ran in this
 * process, the MPI world is reused (the init method is ignored) and
 * pgc_destroy_process_group leaves it to MPI_Finalize. A failed call leaves the process
 * uninitialized; it may try again. PGC_ERR_ALREADY_INITIALIZED on a second call.
 */
int pgc_init_process_group(const pgc_init_opts *opts);
/* Collective: waits for every rank (a barrier), then tears the world down. Every group,
 * work and store derived from the default store must have been freed before. In an MPI
 * program call it before MPI_Finalize, which then ends the world. */
int pgc_destroy_process_group(void);
/* 1 between a successful init and destroy (or while MPI runs), else 0. */
int pgc_is_initialized(void);
/* This process's global rank, the world size, its rank among the processes of its node
 * and their number; negative PGC_ERR_NOT_INITIALIZED before init. */
int pgc_get_rank(void);
int pgc_get_world_size(void);
int pgc_get_local_rank(void);
int pgc_get_local_world_size(void);
/* "host" or "nccl"; NULL before init. */
const char *pgc_get_backend(void);

/* The message of this thread's last failure ("" if none); valid until the thread's next
 * pgc call. */
const char *pgc_last_error(void);

typedef enum { PGC_DEBUG_OFF, PGC_DEBUG_INFO, PGC_DEBUG_DETAIL } pgc_debug_level;
/* DETAIL: check the arguments of every collective across ranks (see the top of this
 * file). The default comes from MPISHIM_PGC_DEBUG (off, info, detail). Set it to the same
 * level on every rank, between collectives. */
void pgc_set_debug_level(pgc_debug_level level);
pgc_debug_level pgc_get_debug_level(void);

/* ---------------------------------------------------------------------------------------
 * Groups.
 */

/* The world group (owned by the library; pgc_destroy_group on it does nothing). NULL
 * before init. */
pgc_group *pgc_group_world(void);

/*
 * torch.distributed.new_group(ranks): collective over the WORLD (every process calls it,
 * members or not, in the same order). ranks are n distinct global ranks in the order of
 * the new group's ranks; ranks == NULL (n ignored) means all ranks. Members get the group
 * in *out; non-members get *out = NULL and PGC_OK. The caller owns the group: release it
 * with pgc_destroy_group. PGC_ERR_INVALID_RANK for a rank outside the world or repeated.
 */
int pgc_new_group(const int *ranks, int n, pgc_group **out);
/* Collective over parent (NULL: world): the members with the same color form one group,
 * ordered by key, then parent rank. A negative color joins none (*out = NULL). */
int pgc_split_group(pgc_group *parent, int color, int key, pgc_group **out);
/* My rank in the group and its size; negative status if g is invalid or I am not in it. */
int pgc_group_rank(pgc_group *g);
int pgc_group_size(pgc_group *g);
/* Global rank -> group rank, and back; PGC_ERR_INVALID_RANK if it is not in the group. */
int pgc_get_group_rank(pgc_group *g, int global_rank);
int pgc_get_global_rank(pgc_group *g, int group_rank);
/* Releases the caller's reference. Not collective. Pending operations on g must have
 * completed (their works freed). NULL and the world group are ignored. */
int pgc_destroy_group(pgc_group *g);

/* ---------------------------------------------------------------------------------------
 * Work handles: the result of every non-blocking call.
 */

/* Progresses communication; 1 when the operation finished (successfully or not), else 0.
 * Once it returns 1, outputs are final and buffers may be reused. */
int pgc_work_is_completed(pgc_work *work);
/*
 * Waits until the operation finishes or timeout seconds pass (<= 0: the process-group
 * timeout). Returns the operation's status, or PGC_ERR_TIMEOUT when it is still running:
 * then the work stays pending and may be waited for again (its buffers still belong to
 * the operation).
 */
int pgc_work_wait(pgc_work *work, double timeout);
/* PGC_ERR_PENDING while running; then the final status (torch's work.exception()). */
int pgc_work_status(pgc_work *work);
/* The message of a failed work ("" while pending or on success). Owned by the work. */
const char *pgc_work_error(pgc_work *work);
/* For a receive: the sender's group rank (useful with PGC_ANY_SOURCE); else -1. */
int pgc_work_source(pgc_work *work);
/* Frees the handle. A pending work is waited for first (with the process-group timeout);
 * if it still runs then, its memory is deliberately leaked, because the transport may still
 * write into it. NULL is ignored. */
void pgc_work_free(pgc_work *work);

/* ---------------------------------------------------------------------------------------
 * Point-to-point. tag >= 0 and at most 2^30 - 1; sends and receives match on (group,
 * source, tag) in send order. The receiving tensor must have the size of the message:
 * a larger or smaller message fails the receive with PGC_ERR_MISMATCH.
 */

#define PGC_ANY_SOURCE (-2)

int pgc_send(const pgc_tensor *tensor, int dst, pgc_group *group, int tag);
/* Returns the sender's group rank (>= 0; useful with src = PGC_ANY_SOURCE), or a status. */
int pgc_recv(pgc_tensor *tensor, int src, pgc_group *group, int tag);
int pgc_isend(const pgc_tensor *tensor, int dst, pgc_group *group, int tag, pgc_work **work);
int pgc_irecv(pgc_tensor *tensor, int src, pgc_group *group, int tag, pgc_work **work);

typedef enum { PGC_ISEND, PGC_IRECV } pgc_p2p_kind;

/* One operation of a batch (torch.distributed.P2POp). */
typedef struct {
    pgc_p2p_kind op;
    pgc_tensor tensor;
    int peer;         /* group rank (PGC_ANY_SOURCE is not allowed in a batch) */
    pgc_group *group; /* NULL: world */
    int tag;
} pgc_p2p_op;

/* Starts all n operations; *work completes when all have. Every op is checked before any
 * starts, so a failed call started none. */
int pgc_batch_isend_irecv(const pgc_p2p_op *ops, int n, pgc_work **work);

/* ---------------------------------------------------------------------------------------
 * Collectives. Every call takes async_op and work: with async_op = 0 it blocks and, if
 * work is not NULL, sets *work = NULL; otherwise it returns at once with a work handle in
 * *work (work must not be NULL) that the caller frees. Sizes are element counts and must
 * agree between ranks as stated; all tensors of one call have the same dtype.
 */

/* tensor (the same numel everywhere) is sent from group rank src to every member. */
int pgc_broadcast(pgc_tensor *tensor, int src, pgc_group *group, int async_op, pgc_work **work);
/* Reduces every member's tensor into dst's tensor (in place); others' tensors unchanged. */
int pgc_reduce(pgc_tensor *tensor, int dst, pgc_reduce_op op, pgc_group *group, int async_op,
               pgc_work **work);
/* Every member's tensor becomes the reduction of all of them (in place). */
int pgc_all_reduce(pgc_tensor *tensor, pgc_reduce_op op, pgc_group *group, int async_op,
                   pgc_work **work);
/* src sends scatter_list[i] (group-size tensors, each output->numel elements) to rank i.
 * scatter_list is read only on src (NULL elsewhere). */
int pgc_scatter(pgc_tensor *output, const pgc_tensor *scatter_list, int src, pgc_group *group,
                int async_op, pgc_work **work);
/* dst receives rank i's input in gather_list[i] (group-size tensors of input->numel);
 * gather_list is used only on dst (NULL elsewhere). */
int pgc_gather(const pgc_tensor *input, pgc_tensor *gather_list, int dst, pgc_group *group,
               int async_op, pgc_work **work);
/* List form: output_list[i] (group-size tensors of input->numel) receives rank i's input. */
int pgc_all_gather(pgc_tensor *output_list, const pgc_tensor *input, pgc_group *group, int async_op,
                   pgc_work **work);
/* Tensor form: output (group size * input->numel) holds the inputs in rank order. */
int pgc_all_gather_into_tensor(pgc_tensor *output, const pgc_tensor *input, pgc_group *group,
                               int async_op, pgc_work **work);
/* List form: output on rank i = the reduction over ranks of their input_list[i] (group-size
 * tensors of output->numel). */
int pgc_reduce_scatter(pgc_tensor *output, const pgc_tensor *input_list, pgc_reduce_op op,
                       pgc_group *group, int async_op, pgc_work **work);
/* Tensor form: input (group size * output->numel) is reduced; rank i gets block i. */
int pgc_reduce_scatter_tensor(pgc_tensor *output, const pgc_tensor *input, pgc_reduce_op op,
                              pgc_group *group, int async_op, pgc_work **work);
/*
 * torch.distributed.all_to_all_single. With both split arrays NULL, input and output have
 * group size * k elements and block i of input goes to rank i, block j of output comes
 * from rank j. Otherwise input_splits[i] elements (consecutive, in rank order) go to rank
 * i and output_splits[j] elements come from rank j; the sums must equal the numels, and
 * rank j's input_splits[i] must equal rank i's output_splits[j]. A NULL split array means
 * equal splits of that side.
 */
int pgc_all_to_all_single(pgc_tensor *output, const pgc_tensor *input, const size_t *output_splits,
                          const size_t *input_splits, pgc_group *group, int async_op,
                          pgc_work **work);
/* List form: input_list[i] goes to rank i; output_list[j] receives rank j's input_list[me]
 * (sizes may differ per pair and must agree between the two ranks of each pair). */
int pgc_all_to_all(pgc_tensor *output_list, const pgc_tensor *input_list, pgc_group *group,
                   int async_op, pgc_work **work);
int pgc_barrier(pgc_group *group, int async_op, pgc_work **work);
/*
 * A barrier that names who is missing (torch.distributed.monitored_barrier; blocking, host
 * only). Rank 0 of the group waits up to timeout seconds (<= 0: the process-group timeout)
 * for every other rank; if some did not arrive it returns PGC_ERR_TIMEOUT with a message
 * naming them (all of them with wait_all_ranks, else the first), and tells the ranks that
 * did arrive, which return the same error. A rank that hears nothing from rank 0 within
 * twice the timeout returns PGC_ERR_TIMEOUT naming rank 0.
 */
int pgc_monitored_barrier(pgc_group *group, double timeout, int wait_all_ranks);

/* ---------------------------------------------------------------------------------------
 * The Store (torch.distributed.TCPStore, FileStore, PrefixStore): a key-value store for
 * rendezvous and small shared state. Keys are non-empty strings (at most 4096 bytes);
 * values are byte strings. Blocking calls (get, wait) give up with PGC_ERR_TIMEOUT after
 * the store's timeout. Calls on one handle are serialized by a lock in the handle; a
 * thread blocked in get or wait holds it, so a thread that sets keys another thread waits
 * for needs its own handle (connect one per thread). A failed call changes nothing.
 */

/*
 * A TCP store at host:port. With is_server, this process also serves it (in a thread) on
 * host (NULL or "" binds every address; port 0 picks a free port, see pgc_store_port);
 * freeing the handle stops the server. A client retries connecting until timeout seconds
 * (<= 0: MPISHIM_TIMEOUT), which is also the default timeout of its blocking calls.
 */
int pgc_store_tcp_create(const char *host, int port, int is_server, double timeout,
                         pgc_store **out);
/* A file store: path on a file system that every user of the store sees; created if
 * absent. The file is not removed by pgc_store_free. */
int pgc_store_file_create(const char *path, pgc_store **out);
/* A view of base in which every key is prefixed with "prefix/". It keeps base alive until
 * it is freed itself (base may be freed first). num_keys counts base's keys. */
int pgc_store_prefix_create(pgc_store *base, const char *prefix, pgc_store **out);
/*
 * The store of the process group: the rendezvous store of env://, tcp:// and file://,
 * or under PMIx (and in a world of one) a TCP store served by rank 0, created by
 * pgc_init_process_group. Owned by the library (pgc_store_free on it does nothing); valid
 * until pgc_destroy_process_group. NULL before init or if it could not be created
 * (pgc_last_error says why).
 */
pgc_store *pgc_default_store(void);
/* The port of a TCP store (the bound one for a server created with port 0); else -1. */
int pgc_store_port(pgc_store *store);
/* The default timeout of this handle's blocking calls (> 0 seconds). */
int pgc_store_set_timeout(pgc_store *store, double timeout);

int pgc_store_set(pgc_store *store, const char *key, const void *value, size_t len);
/* Blocks until key exists; *value is malloc'd (the caller frees it) and NUL-terminated
 * past *len, so string values can be used directly. */
int pgc_store_get(pgc_store *store, const char *key, void **value, size_t *len);
/* Adds delta to the decimal integer value of key (0 if absent); *result (if not NULL)
 * gets the new value. */
int pgc_store_add(pgc_store *store, const char *key, int64_t delta, int64_t *result);
/* Sets key to desired if its current value equals expected (an absent key equals an
 * empty expected). *current (malloc'd, caller frees; may be NULL to ignore) gets the value
 * after the call: desired if it was swapped. */
int pgc_store_compare_set(pgc_store *store, const char *key, const void *expected,
                          size_t expected_len, const void *desired, size_t desired_len,
                          void **current, size_t *current_len);
/* Blocks until every one of the n keys exists, or timeout seconds (<= 0: the store's). */
int pgc_store_wait(pgc_store *store, const char *const *keys, int n, double timeout);
/* *all_exist = 1 if every key exists now, else 0. Does not block. */
int pgc_store_check(pgc_store *store, const char *const *keys, int n, int *all_exist);
/* *deleted (may be NULL) = 1 if the key existed. */
int pgc_store_delete_key(pgc_store *store, const char *key, int *deleted);
int pgc_store_num_keys(pgc_store *store, int64_t *n);
/* Closes the handle (NULL and the default store are ignored). */
void pgc_store_free(pgc_store *store);

/* ---------------------------------------------------------------------------------------
 * Interop with MPI (in MPI programs MPI_Init creates the world; in pgc programs
 * pgc_init_process_group does; when both are used, call MPI_Init first).
 */

/* The MPI_Comm handle of group (NULL: world) as an int, created on first use with
 * MPI_ERRORS_ARE_FATAL and owned by the group (do not MPI_Comm_free it); 0 if MPI is not
 * initialized or g is invalid. */
int pgc_group_to_mpi_comm(pgc_group *group);
/* The group of an MPI communicator; the caller owns a reference (pgc_destroy_group).
 * NULL if MPI is not initialized or comm is not a valid communicator. */
pgc_group *pgc_group_from_mpi_comm(int comm);

/* ---------------------------------------------------------------------------------------
 * Data-parallel training: a gradient reducer in the spirit of DDP's Reducer.
 *
 * It packs the registered gradient tensors into buckets of at most bucket_cap_bytes
 * (0: 25 MiB, DDP's default), in reverse registration order, since backward produces the
 * last layer's gradients first. Each training step: call pgc_reducer_mark_ready(i) once
 * for every gradient i as soon as it is computed; when the last gradient of a bucket is
 * marked, that bucket's asynchronous all_reduce starts (buckets start in bucket order on
 * every rank), overlapping with the computation of the remaining gradients. Then
 * pgc_reducer_finish waits for all buckets, divides by the group size and writes the
 * averaged gradients back into the registered tensors. Between mark_ready(i) and finish,
 * gradient i must not be modified. Every rank must register the same tensors (numel and
 * dtype) in the same order. Host FLOAT32/FLOAT64/FLOAT16/BFLOAT16 gradients.
 */
typedef struct pgc_reducer pgc_reducer;

/* grads (n descriptors, copied; the data stays the caller's) on group (NULL: world). */
int pgc_reducer_create(pgc_group *group, const pgc_tensor *grads, int n, size_t bucket_cap_bytes,
                       pgc_reducer **out);
/* The number of buckets (for tests and logs). */
int pgc_reducer_num_buckets(pgc_reducer *r);
/* Marks gradient index ready; PGC_ERR_INVALID_ARG if it was already marked this step. */
int pgc_reducer_mark_ready(pgc_reducer *r, int index);
/* Marks any gradient not yet marked, waits for every bucket, averages and copies back.
 * The reducer is then ready for the next step. */
int pgc_reducer_finish(pgc_reducer *r);
/* Frees the reducer (waiting for a step in flight first). NULL is ignored. */
void pgc_reducer_free(pgc_reducer *r);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
