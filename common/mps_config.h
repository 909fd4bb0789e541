/*
 * mps_config.h - every MPISHIM_* environment variable, in one table.
 *
 * Each entry has a name, a type, a default, the allowed names of an enum and a one-line
 * doc; the info tool prints them all. Values are read from the environment once, on first
 * use, and cached; MPI_Init and pgc_init_process_group check them all (mps_config_validate).
 * To add a variable, add one entry to MPS_CONFIG_LIST; nothing else needs to change.
 */
#ifndef MPS_CONFIG_H
#define MPS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

/*
 * X(ID, "MPISHIM_NAME", type, "default", choices, "doc"). The type says what a value may be
 * (doc/configuration.md has the same list for users):
 *   INT     a count: decimal digits, 0 or more ("010" is ten, never octal)
 *   SIZE    bytes: decimal digits, optionally followed by k, m or g (KiB, MiB, GiB: 32k)
 *   BOOL    0 or 1
 *   DOUBLE  a decimal number above 0 (300, 0.5, 1e3)
 *   ENUM    one of choices, in any case; a choice ending in "://" is a prefix (tcp://h:p)
 *   STRING  anything; the module that reads it checks it (a provider or interface name)
 * choices is MPS_ONE_OF("a", "b", ...) for an ENUM and MPS_ANY otherwise.
 */
#define MPS_CONFIG_LIST(X)                                                                         \
    X(TIMEOUT, "MPISHIM_TIMEOUT", DOUBLE, "300", MPS_ANY,                                          \
      "seconds a blocking call (and the bootstrap) waits before giving up with a timeout error")   \
    X(LOG_LEVEL, "MPISHIM_LOG_LEVEL", ENUM, "warn", MPS_ONE_OF("error", "warn", "info", "debug"),  \
      "log verbosity: error, warn, info, debug")                                                   \
    X(FABRIC_PROVIDER, "MPISHIM_FABRIC_PROVIDER", STRING, "", MPS_ANY,                             \
      "force one libfabric provider for every peer (e.g. shm, tcp;ofi_rxm), or sock (our own TCP "  \
      "sockets); empty picks per peer")                                                           \
    X(FABRIC_NET_PROVIDER, "MPISHIM_FABRIC_NET_PROVIDER", STRING, "", MPS_ANY,                     \
      "transport for peers on other nodes: sock (our own TCP sockets, no libfabric) or a "        \
      "libfabric provider (tcp;ofi_rxm, net, verbs;ofi_rxm, efa); empty: where "                  \
      "/sys/class/infiniband lists a device the first of verbs, efa, tcp;ofi_rxm, else sock")    \
    X(FABRIC_IFACE, "MPISHIM_FABRIC_IFACE", STRING, "", MPS_ANY,                                   \
      "network interface of the tcp and net providers (sets FI_TCP_IFACE and FI_NET_IFACE "        \
      "unless they are set; a name this node lacks is an error)")                                  \
    X(FABRIC_LIB, "MPISHIM_FABRIC_LIB", STRING, "", MPS_ANY,                                       \
      "libfabric to open when a peer needs it (a file or a name for dlopen); empty: "              \
      "configure's libfabric.so.1, then the loader's. One built with only the providers in use "   \
      "starts faster (doc/cluster.md)")                                                            \
    X(SHM_RING, "MPISHIM_SHM_RING", BOOL, "1", MPS_ANY,                                            \
      "1: ranks of one node exchange messages through shared-memory rings and single-copy "        \
      "reads (CMA); 0: through libfabric's shm provider")                                          \
    X(HEAP, "MPISHIM_HEAP", BOOL, "1", MPS_ANY,                                                    \
      "1: once ranks share a node, malloc serves blocks of MPISHIM_HEAP_MIN bytes or more from "   \
      "a shared heap the other local ranks map, so large messages are one memcpy; 0: off")         \
    X(HEAP_MIN, "MPISHIM_HEAP_MIN", SIZE, "65536", MPS_ANY,                                        \
      "smallest allocation (bytes) the shared heap serves")                                        \
    X(HEAP_SIZE, "MPISHIM_HEAP_SIZE", SIZE, "0", MPS_ANY,                                          \
      "bytes of address space the shared heap reserves (0: the node's memory, at most 64 GiB)")    \
    X(EAGER_MAX, "MPISHIM_EAGER_MAX", SIZE, "32768", MPS_ANY,                                      \
      "largest message (bytes) sent eagerly; larger ones use the rendezvous path")                 \
    X(ROOTED_EAGER_MAX, "MPISHIM_ROOTED_EAGER_MAX", SIZE, "16384", MPS_ANY,                        \
      "largest message (bytes) a rooted collective (bcast, reduce, gather, scatter) sends "        \
      "eagerly from a buffer in the shared heap, at most MPISHIM_EAGER_MAX: its senders run "      \
      "ahead, so its messages arrive unexpected and would be copied twice")                        \
    X(HEAP_EAGER_MAX, "MPISHIM_HEAP_EAGER_MAX", SIZE, "4096", MPS_ANY,                             \
      "largest point-to-point message sent eagerly to a rank of the node from a buffer in the "    \
      "shared heap when each local rank has a core; larger ones are one memcpy by the receiver "   \
      "(a blocking send then waits for its receive, as past Open MPI's 4 KiB)")                    \
    X(COLL_HEAP_EAGER_MAX, "MPISHIM_COLL_HEAP_EAGER_MAX", SIZE, "8192", MPS_ANY,                   \
      "the same for a collective's send: the receiver's memcpy from the heap wins from 16 KiB "    \
      "(its exchanges wait for the rendezvous's completion)")                                      \
    X(NET_EAGER_MAX, "MPISHIM_NET_EAGER_MAX", SIZE, "16384", MPS_ANY,                              \
      "largest message sent eagerly to a peer reached through a libfabric provider (tcp, verbs, "  \
      "shm when forced); keep it below the provider's own eager size (ofi_rxm: "                   \
      "FI_OFI_RXM_BUFFER_SIZE, 64 KiB as we set it), past which its slower protocol costs more "   \
      "than our rendezvous")                                                                       \
    X(NET_ZCOPY_MIN, "MPISHIM_NET_ZCOPY_MIN", SIZE, "4096", MPS_ANY,                               \
      "smallest eager payload (bytes) sent to a peer reached through a libfabric provider "        \
      "straight from the caller's buffer instead of a copy (the send then completes when the "     \
      "provider is done with the buffer); 0: always copy")                                         \
    X(NET_SLEEP, "MPISHIM_NET_SLEEP", BOOL, "1", MPS_ANY,                                          \
      "1: a single-threaded rank whose peers are all reached through one socket provider "         \
      "(tcp;ofi_rxm, one rank per node) sleeps in the kernel on the provider's wait fd once a "    \
      "wait has polled MPISHIM_NET_SPIN_US, so the next message wakes it; 0: it polls and "        \
      "yields, as ranks with peers on their node do")                                              \
    X(NET_SPIN_US, "MPISHIM_NET_SPIN_US", INT, "100", MPS_ANY,                                     \
      "microseconds a wait polls a socket provider before it sleeps (MPISHIM_NET_SLEEP); none "    \
      "while more tasks are runnable than the machine has CPUs + 1")                               \
    X(ASYNC_PROGRESS, "MPISHIM_ASYNC_PROGRESS", BOOL, "0", MPS_ANY,                                \
      "1: a thread of the library runs progress while the program is not inside it, so "         \
      "passive-target RMA on this rank completes while it computes (the world lock is then on, "  \
      "as under MPI_THREAD_MULTIPLE); 0: progress only inside the program's MPI and pgc calls")    \
    X(BOOT_METHOD, "MPISHIM_BOOT_METHOD", ENUM, "auto",                                            \
      MPS_ONE_OF("auto", "pmix", "pmi1", "env", "singleton", "pmix://", "pmi1://", "env://",      \
                 "tcp://", "file://"),                                                             \
      "bootstrap: auto, pmix, pmi1, env, singleton, tcp://host:port or file:///path (auto: PMIx "  \
      "if its variables are set, then PMI-1 if PMI_FD or PMI_PORT is (MPICH's hydra), then env, "  \
      "then singleton)")                                                                           \
    X(BOOT_STORE_EXTERNAL, "MPISHIM_BOOT_STORE_EXTERNAL", BOOL, "0", MPS_ANY,                      \
      "1 when the launcher serves the TCP store, so rank 0 connects instead of serving it")        \
    X(STORE_TOKEN, "MPISHIM_STORE_TOKEN", STRING, "", MPS_ANY,                                     \
      "secret every client of the TCP store must present (mpiexec and pgc's default store make "   \
      "one); empty: none, and rank 0's store then listens on MASTER_ADDR only")                    \
    X(STORE_BIND, "MPISHIM_STORE_BIND", STRING, "", MPS_ANY,                                       \
      "address rank 0's env:// or tcp:// store listens on (default: MASTER_ADDR or the tcp:// "    \
      "host; * for every address)")                                                                \
    X(STORE_FRAME_MAX, "MPISHIM_STORE_FRAME_MAX", SIZE, "64m", MPS_ANY,                            \
      "largest request (bytes) the TCP store server accepts; a larger one is an error")            \
    X(STORE_BUFFER_MAX, "MPISHIM_STORE_BUFFER_MAX", SIZE, "256m", MPS_ANY,                         \
      "bytes the TCP store server buffers across its connections (requests being read, "           \
      "answers not read yet); a request or answer above it is an error")                           \
    X(STORE_KEYS_MAX, "MPISHIM_STORE_KEYS_MAX", INT, "1048576", MPS_ANY,                           \
      "most keys the TCP store server holds; adding one more is an error")                         \
    X(STORE_DATA_MAX, "MPISHIM_STORE_DATA_MAX", SIZE, "1g", MPS_ANY,                               \
      "most bytes of keys and values the TCP store server holds; a set above it is an error")      \
    X(NODE_NAME, "MPISHIM_NODE_NAME", STRING, "", MPS_ANY,                                         \
      "node identity used to pick shm or the network for a peer (default: the host name)")         \
    X(SPIN_COUNT, "MPISHIM_SPIN_COUNT", INT, "2000", MPS_ANY,                                      \
      "progress polls before a waiting rank yields the CPU; when a node has more ranks than "      \
      "cores the default is 1 (yield at once)")                                                    \
    X(DEVICE_COLL, "MPISHIM_DEVICE_COLL", ENUM, "auto", MPS_ONE_OF("auto", "nccl", "staging"),     \
      "path for device-buffer collectives: auto, nccl or staging")                                 \
    X(CUDA_LIB, "MPISHIM_CUDA_LIB", STRING, "", MPS_ANY,                                           \
      "CUDA runtime to open at run time (a file or a name for dlopen); empty: "                    \
      "libcudart.so.<major of the build's headers>, then configure's CUDA, then libcudart.so")     \
    X(NCCL_LIB, "MPISHIM_NCCL_LIB", STRING, "", MPS_ANY,                                           \
      "NCCL to open at run time (a file or a name for dlopen); empty: libnccl.so.2, then "         \
      "configure's NCCL. A file that does not open means no NCCL: device collectives stage")       \
    X(COLL_ALLREDUCE, "MPISHIM_COLL_ALLREDUCE", ENUM, "auto",                                      \
      MPS_ONE_OF("auto", "recursive_doubling", "rabenseifner", "ring"),                            \
      "allreduce algorithm: auto, recursive_doubling, rabenseifner, ring")                         \
    X(COLL_BCAST, "MPISHIM_COLL_BCAST", ENUM, "auto",                                              \
      MPS_ONE_OF("auto", "binomial", "scatter_allgather"),                                         \
      "broadcast algorithm: auto, binomial, scatter_allgather")                                    \
    X(COLL_ALLGATHER, "MPISHIM_COLL_ALLGATHER", ENUM, "auto",                                      \
      MPS_ONE_OF("auto", "bruck", "recursive_doubling", "ring"),                                   \
      "allgather algorithm: auto, bruck (also for recursive_doubling), ring")                      \
    X(COLL_SHM, "MPISHIM_COLL_SHM", BOOL, "1", MPS_ANY,                                            \
      "1: allreduce, bcast and barrier of up to 2 KiB on a group within one node go through "      \
      "shared memory in one round (pg_coll_shm.c); 0: through messages")                           \
    X(RMA_DIRECT, "MPISHIM_RMA_DIRECT", BOOL, "1", MPS_ANY,                                        \
      "1: a window of MPI_Win_allocate or _allocate_shared whose members share one node is "       \
      "memory they all map: put, get, accumulates and locks are loads, stores and CPU atomics; "   \
      "0: every operation is a message its target applies. Same value on every rank")              \
    X(RMA_CMA, "MPISHIM_RMA_CMA", BOOL, "1", MPS_ANY,                                              \
      "1: put and get on windows of MPI_Win_create and _create_dynamic copy straight into and "    \
      "out of a target on this node with process_vm_writev/readv; 0: as messages its target "      \
      "applies. May differ between ranks")                                                         \
    X(WIN_FI_RMA, "MPISHIM_WIN_FI_RMA", BOOL, "1", MPS_ANY,                                        \
      "1: the network endpoint takes FI_RMA where its provider offers it on the same endpoint, "   \
      "and MPI_Put/MPI_Get of contiguous data to a window's target on it use fi_write/fi_read; "   \
      "0: they stay active messages")                                                              \
    X(COLL_HIER, "MPISHIM_COLL_HIER", BOOL, "1", MPS_ANY,                                          \
      "1: allreduce, bcast, reduce, allgather, barrier and reduce_scatter_block (blocking and "     \
      "non-blocking) of a group that spans nodes with several ranks on a node run within each node, then among "      \
      "one leader per node; 0: flat")                                                              \
    X(NODE_SPLIT, "MPISHIM_NODE_SPLIT", INT, "0", MPS_ANY,                                         \
      "test knob: k > 0 makes node-aware collectives treat every k ranks of a node (by local "     \
      "rank) as a node of their own; the transport is unchanged. 0: the real nodes")               \
    X(PGC_DEBUG, "MPISHIM_PGC_DEBUG", ENUM, "off", MPS_ONE_OF("off", "info", "detail"),            \
      "pgc_ API checks: off, info, detail (detail: ranks compare collective arguments first)")     \
    X(FLIGHT_RECORDER, "MPISHIM_FLIGHT_RECORDER", INT, "0", MPS_ANY,                               \
      "operations each process group remembers (kind, bytes, peer, sequence number, state), "      \
      "dumped on a timeout, a fatal error and SIGUSR1 (doc/failures.md); 0: off (64 is a good "    \
      "size; it costs about 50 instructions per small call)")                                      \
    X(FLIGHT_RECORDER_FILE, "MPISHIM_FLIGHT_RECORDER_FILE", STRING, "", MPS_ANY,                   \
      "file the flight recorder's dumps are appended to (empty: stderr)")                          \
    X(TEST_FAIL_ALLOC, "MPISHIM_TEST_FAIL_ALLOC", STRING, "", MPS_ANY,                             \
      "test knob: a comma list of protocol allocations that fail on purpose, to test that "        \
      "nothing is lost without an error: ack, unexpected, ctl (doc/internals.md)")

/* The allowed names of an ENUM (a NULL-terminated array with static storage). */
#define MPS_ONE_OF(...) ((const char *const[]){__VA_ARGS__, NULL})
#define MPS_ANY NULL

enum mps_config_id {
#define MPS_CONFIG_ENUM(id, name, type, def, choices, doc) MPS_CFG_##id,
    MPS_CONFIG_LIST(MPS_CONFIG_ENUM)
#undef MPS_CONFIG_ENUM
        MPS_CFG_COUNT
};

enum mps_config_type {
    MPS_CFG_INT,
    MPS_CFG_DOUBLE,
    MPS_CFG_STRING,
    MPS_CFG_SIZE,
    MPS_CFG_BOOL,
    MPS_CFG_ENUM
};

struct mps_config_desc {
    const char *name;
    enum mps_config_type type;
    const char *def;
    const char *const *choices; /* NULL-terminated for an ENUM, else NULL */
    const char *doc;
};

/* The table entry of a variable (for the info tool). */
const struct mps_config_desc *mps_config_desc(enum mps_config_id id);
/* "int", "size", "bool", "double", "enum" or "string". */
const char *mps_config_type_name(enum mps_config_type type);
/*
 * The value as a string: the environment's if set and non-empty, else the default. An ENUM
 * gives its choice as the table spells it ("RING" reads as "ring"). A value that is not
 * valid for its type reads as the default: mps_config_validate reports it at init.
 */
const char *mps_config_str(enum mps_config_id id);
/* The value of an INT, SIZE (suffix applied) or BOOL variable. */
long mps_config_int(enum mps_config_id id);
double mps_config_double(enum mps_config_id id);
/* Whether the variable is set (non-empty) in the environment, as opposed to defaulted. */
bool mps_config_is_set(enum mps_config_id id);
/* Whether id has its default value (a pointer comparison: cheap on fast paths). */
bool mps_config_default(enum mps_config_id id);
/*
 * Checks every MPISHIM_* variable set in the environment, once per process (MPI_Init and
 * pgc_init_process_group call it before anything reads a value). A value invalid for its
 * type is PGC_ERR_INVALID_ARG, with mps_last_error naming the variable, the value and what
 * is accepted. An MPISHIM_* name the table lacks is a warning line on stderr, not an error.
 */
int mps_config_validate(void);
/*
 * Sets the value the library reads from now on, as if the environment said so (the MPI_T
 * control variables write through it). A value invalid for the type is
 * PGC_ERR_INVALID_ARG, with why saying what is accepted. Code that read the value before
 * keeps what it read: mpi_shim/shim_mpit.c says which variables are read again later.
 */
int mps_config_set(enum mps_config_id id, const char *value, char *why, size_t n);
/* Forget cached values and the validation (tests change the environment between cases);
 * values written by mps_config_set stay. */
void mps_config_reset(void);

/*
 * The test knob MPISHIM_TEST_FAIL_ALLOC: the protocol allocations that fail on purpose, so
 * that tests reach the paths that keep a message, an acknowledgement or a control record
 * when memory runs out (doc/internals.md, "No silent drops"). A site tests its bit only
 * where it is about to allocate, never on a path that allocates nothing.
 */
enum { MPS_FAIL_ACK = 1u, MPS_FAIL_UNEXPECTED = 2u, MPS_FAIL_CTL = 4u };
extern unsigned mps_test_fail_mask;
/* Reads the variable into mps_test_fail_mask (world init calls it); an unknown site name is
 * PGC_ERR_INVALID_ARG naming it. */
int mps_test_fail_init(void);
static inline bool mps_test_fails(unsigned site)
{
    return __builtin_expect((mps_test_fail_mask & site) != 0, 0);
}

#endif
