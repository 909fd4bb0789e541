/*
 * mps_config.h - every MPISHIM_* environment variable, in one table.
 *
 * Each entry has a name, a type, a default and a one-line doc; the info tool prints
 * them all. Values are read from the environment once, on first use, and cached.
 * To add a variable, add one line to MPS_CONFIG_LIST; nothing else needs to change.
 */
#ifndef MPS_CONFIG_H
#define MPS_CONFIG_H

#include <stdbool.h>

/* X(ID, "MPISHIM_NAME", type, "default", "doc"); type is INT, DOUBLE or STRING. */
#define MPS_CONFIG_LIST(X)                                                                         \
    X(TIMEOUT, "MPISHIM_TIMEOUT", DOUBLE, "300",                                                   \
      "seconds a blocking call (and the bootstrap) waits before giving up with a timeout error")   \
    X(LOG_LEVEL, "MPISHIM_LOG_LEVEL", STRING, "warn",                                              \
      "log verbosity: error, warn, info, debug")                                                   \
    X(FABRIC_PROVIDER, "MPISHIM_FABRIC_PROVIDER", STRING, "",                                      \
      "force one libfabric provider for every peer (e.g. shm, tcp;ofi_rxm); empty picks per peer") \
    X(FABRIC_NET_PROVIDER, "MPISHIM_FABRIC_NET_PROVIDER", STRING, "",                              \
      "provider for peers on other nodes; empty takes the first of verbs, efa, tcp;ofi_rxm")       \
    X(FABRIC_IFACE, "MPISHIM_FABRIC_IFACE", STRING, "",                                            \
      "network interface of the tcp and net providers (sets FI_TCP_IFACE and FI_NET_IFACE "      \
      "unless they are set; a name this node lacks is an error)")                                 \
    X(SHM_RING, "MPISHIM_SHM_RING", INT, "1",                                                      \
      "1: ranks of one node exchange messages through shared-memory rings and single-copy "      \
      "reads (CMA); 0: through libfabric's shm provider")                                        \
    X(HEAP, "MPISHIM_HEAP", INT, "1",                                                              \
      "1: once ranks share a node, malloc serves blocks of MPISHIM_HEAP_MIN bytes or more from "   \
      "a shared heap the other local ranks map, so large messages are one memcpy; 0: off")        \
    X(HEAP_MIN, "MPISHIM_HEAP_MIN", INT, "65536",                                                  \
      "smallest allocation (bytes) the shared heap serves")                                        \
    X(HEAP_SIZE, "MPISHIM_HEAP_SIZE", INT, "0",                                                    \
      "bytes of address space the shared heap reserves (0: the node's memory, at most 64 GiB)")   \
    X(EAGER_MAX, "MPISHIM_EAGER_MAX", INT, "32768",                                                \
      "largest message (bytes) sent eagerly; larger ones use the rendezvous path")                \
    X(ROOTED_EAGER_MAX, "MPISHIM_ROOTED_EAGER_MAX", INT, "16384",                                  \
      "largest message (bytes) a rooted collective (bcast, reduce, gather, scatter) sends "       \
      "eagerly from a buffer in the shared heap, at most MPISHIM_EAGER_MAX: its senders run "     \
      "ahead, so its messages arrive unexpected and would be copied twice")                        \
    X(HEAP_EAGER_MAX, "MPISHIM_HEAP_EAGER_MAX", INT, "4096",                                       \
      "largest point-to-point message sent eagerly to a rank of the node from a buffer in the "  \
      "shared heap when each local rank has a core; larger ones are one memcpy by the receiver "  \
      "(a blocking send then waits for its receive, as past Open MPI's 4 KiB)")                  \
    X(COLL_HEAP_EAGER_MAX, "MPISHIM_COLL_HEAP_EAGER_MAX", INT, "8192",                             \
      "the same for a collective's send: the receiver's memcpy from the heap wins from 16 KiB " \
      "(its exchanges wait for the rendezvous's completion)")                                     \
    X(NET_EAGER_MAX, "MPISHIM_NET_EAGER_MAX", INT, "16384",                                        \
      "largest message sent eagerly to a peer reached through a libfabric provider (tcp, verbs, " \
      "shm when forced); keep it below the provider's own eager size (ofi_rxm: "                 \
      "FI_OFI_RXM_BUFFER_SIZE, 64 KiB as we set it), past which its slower protocol costs more "  \
      "than our rendezvous")                                                                       \
    X(NET_ZCOPY_MIN, "MPISHIM_NET_ZCOPY_MIN", INT, "4096",                                       \
      "smallest eager payload (bytes) sent to a peer reached through a libfabric provider "      \
      "straight from the caller's buffer instead of a copy (the send then completes when the "    \
      "provider is done with the buffer); 0: always copy")                                        \
    X(BOOT_METHOD, "MPISHIM_BOOT_METHOD", STRING, "auto",                                          \
      "bootstrap: auto, pmix, env, singleton (auto: PMIx if its variables are set, then env)")     \
    X(BOOT_STORE_EXTERNAL, "MPISHIM_BOOT_STORE_EXTERNAL", INT, "0",                                \
      "1 when the launcher serves the TCP store, so rank 0 connects instead of serving it")        \
    X(STORE_TOKEN, "MPISHIM_STORE_TOKEN", STRING, "",                                              \
      "secret every client of the TCP store must present (mpiexec and pgc's default store make "  \
      "one); empty: none, and rank 0's store then listens on MASTER_ADDR only")                   \
    X(STORE_BIND, "MPISHIM_STORE_BIND", STRING, "",                                                \
      "address rank 0's env:// or tcp:// store listens on (default: MASTER_ADDR or the tcp:// "  \
      "host; * for every address)")                                                               \
    X(STORE_FRAME_MAX, "MPISHIM_STORE_FRAME_MAX", INT, "67108864",                                 \
      "largest request (bytes) the TCP store server accepts; a larger one is an error")           \
    X(STORE_BUFFER_MAX, "MPISHIM_STORE_BUFFER_MAX", INT, "268435456",                              \
      "bytes the TCP store server buffers across its connections (requests being read, "          \
      "answers not read yet); a request or answer above it is an error")                          \
    X(STORE_KEYS_MAX, "MPISHIM_STORE_KEYS_MAX", INT, "1048576",                                    \
      "most keys the TCP store server holds; adding one more is an error")                        \
    X(STORE_DATA_MAX, "MPISHIM_STORE_DATA_MAX", INT, "1073741824",                                 \
      "most bytes of keys and values the TCP store server holds; a set above it is an error")     \
    X(NODE_NAME, "MPISHIM_NODE_NAME", STRING, "",                                                  \
      "node identity used to pick shm or the network for a peer (default: the host name)")        \
    X(SPIN_COUNT, "MPISHIM_SPIN_COUNT", INT, "2000",                                               \
      "progress polls before a waiting rank yields the CPU; when a node has more ranks than "    \
      "cores the default is 1 (yield at once)")    \
    X(DEVICE_COLL, "MPISHIM_DEVICE_COLL", STRING, "auto",                                          \
      "path for device-buffer collectives: auto, nccl or staging")                                 \
    X(COLL_ALLREDUCE, "MPISHIM_COLL_ALLREDUCE", STRING, "auto",                                    \
      "allreduce algorithm: auto, recursive_doubling, rabenseifner, ring")                         \
    X(COLL_BCAST, "MPISHIM_COLL_BCAST", STRING, "auto",                                            \
      "broadcast algorithm: auto, binomial, scatter_allgather")                                    \
    X(COLL_ALLGATHER, "MPISHIM_COLL_ALLGATHER", STRING, "auto",                                    \
      "allgather algorithm: auto, bruck (also for recursive_doubling), ring")                                \
    X(COLL_SHM, "MPISHIM_COLL_SHM", INT, "1",                                                      \
      "1: allreduce, bcast and barrier of up to 2 KiB on a group within one node go through "    \
      "shared memory in one round (pg_coll_shm.c); 0: through messages")                        \
    X(PGC_DEBUG, "MPISHIM_PGC_DEBUG", STRING, "off",                                               \
      "pgc_ API checks: off, info, detail (detail: ranks compare collective arguments first)")

enum mps_config_id {
#define MPS_CONFIG_ENUM(id, name, type, def, doc) MPS_CFG_##id,
    MPS_CONFIG_LIST(MPS_CONFIG_ENUM)
#undef MPS_CONFIG_ENUM
        MPS_CFG_COUNT
};

enum mps_config_type { MPS_CFG_INT, MPS_CFG_DOUBLE, MPS_CFG_STRING };

struct mps_config_desc {
    const char *name;
    enum mps_config_type type;
    const char *def;
    const char *doc;
};

/* The table entry of a variable (for the info tool). */
const struct mps_config_desc *mps_config_desc(enum mps_config_id id);
/* The value as a string: the environment's if set and non-empty, else the default. */
const char *mps_config_str(enum mps_config_id id);
long mps_config_int(enum mps_config_id id);
double mps_config_double(enum mps_config_id id);
/* Whether the variable is set (non-empty) in the environment, as opposed to defaulted. */
bool mps_config_is_set(enum mps_config_id id);
/* Forget cached values (tests change the environment between cases). */
void mps_config_reset(void);

#endif
