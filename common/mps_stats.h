/*
 * mps_stats.h - the counters the library keeps for its tool interface (MPI_T performance
 * variables, mpi_shim/shim_mpit.c).
 *
 * One struct per process of plain uint64_t, incremented where a path already branches
 * (which transport a message takes, which algorithm a collective runs). They are not
 * atomic: the sends they count run under the progress lock (PG_LOCK) when several threads
 * call in, and a lock-prefixed add on every small message would cost more than the rest of
 * its bookkeeping. A reader on another thread may see a value one update old.
 */
#ifndef MPS_STATS_H
#define MPS_STATS_H

#include <stdint.h>

/* The collective algorithms counted, one counter each (the MPI_T names are in
 * mpi_shim/shim_mpit.c, in this order). */
#define MPS_ALGO_LIST(X)                                                                           \
    X(ALLREDUCE_SHM, "allreduce_shm", "allreduces in one round through shared memory")             \
    X(ALLREDUCE_DIRECT, "allreduce_direct", "small allreduces by direct recursive doubling")       \
    X(ALLREDUCE_RECURSIVE_DOUBLING, "allreduce_recursive_doubling",                                \
      "scheduled allreduces by recursive doubling")                                                \
    X(ALLREDUCE_RABENSEIFNER, "allreduce_rabenseifner",                                            \
      "scheduled allreduces by Rabenseifner's reduce-scatter + allgather")                         \
    X(ALLREDUCE_RING, "allreduce_ring", "scheduled allreduces by the ring")                        \
    X(BCAST_BINOMIAL, "bcast_binomial", "scheduled broadcasts by the binomial tree")               \
    X(BCAST_SCATTER_ALLGATHER, "bcast_scatter_allgather",                                          \
      "scheduled broadcasts by scatter + allgather")                                               \
    X(ALLGATHER_BRUCK, "allgather_bruck", "scheduled allgathers by Bruck's algorithm")             \
    X(ALLGATHER_RING, "allgather_ring", "scheduled allgather(v)s by the ring")                     \
    X(BARRIER_DISSEMINATION, "barrier_dissemination",                                              \
      "scheduled (nonblocking) barriers by dissemination")                                         \
    X(ALLREDUCE_HIER, "allreduce_hier", "node-aware allreduces, blocking and nonblocking")         \
    X(BCAST_HIER, "bcast_hier", "node-aware broadcasts, blocking and nonblocking")                 \
    X(REDUCE_HIER, "reduce_hier", "node-aware reduces, blocking and nonblocking")                  \
    X(ALLGATHER_HIER, "allgather_hier", "node-aware allgathers, blocking and nonblocking")         \
    X(BARRIER_HIER, "barrier_hier", "node-aware barriers, blocking and nonblocking")              \
    X(REDUCE_SCATTER_BLOCK_HIER, "reduce_scatter_block_hier",                                      \
      "node-aware reduce_scatter_blocks, blocking (past 2 KiB in all) and nonblocking")

enum mps_algo {
#define MPS_ALGO_ENUM(id, name, doc) MPS_ALGO_##id,
    MPS_ALGO_LIST(MPS_ALGO_ENUM)
#undef MPS_ALGO_ENUM
        MPS_ALGO_COUNT
};

struct mps_stats {
    uint64_t shm_msgs;  /* messages (envelopes) sent through our shared-memory rings */
    uint64_t shm_bytes; /* payload bytes sent through them, eager and rendezvous */
    uint64_t fab_msgs;  /* messages sent through a libfabric provider */
    uint64_t fab_bytes; /* payload bytes sent through it */
    uint64_t fab_sleeps; /* waits that slept on a network provider's wait fd (fab_sleep) */
    uint64_t fab_rma_ops;   /* fi_write/fi_read posted for windows (fab_rma.c) */
    uint64_t fab_rma_bytes; /* bytes they moved */
    /* naps of pg_core's waits (a 50 us sleep between polls) taken while the wait's last look
     * had found requests of other ranks served: 0 unless a serving wait naps (pg_progress.c) */
    uint64_t wait_naps_serving;
    uint64_t algo[MPS_ALGO_COUNT];
};

extern struct mps_stats mps_stats;

/* Counts one collective run by algorithm a. Schedules are built outside the world lock, so
 * threads may count at once: relaxed atomic loads and stores keep that free of data races
 * at the cost of a plain increment (a concurrent count may be lost, never torn). */
static inline void mps_stats_algo(enum mps_algo a)
{
    uint64_t *c = &mps_stats.algo[a];

    __atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

#endif
