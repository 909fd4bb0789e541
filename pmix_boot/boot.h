/*
 * boot.h - the bootstrap: who am I, how many are we, and an out-of-band allgather.
 *
 * boot_init picks a method, in this order for "auto":
 *   1. PMIx, when PMIX_RANK/PMIX_NAMESPACE are in the environment (srun --mpi=pmix,
 *      Open MPI's mpirun). If they are set but no server answers, boot_init fails with
 *      PGC_ERR_UNREACHABLE after the timeout; it never falls back to a silent singleton.
 *   2. PMI-1, when PMI_FD or PMI_PORT is set (MPICH's hydra, mpiexec.mpich): the simple
 *      PMI-1 wire protocol (cmd=init, put, barrier_in, get, abort, finalize).
 *   3. env://, when RANK and WORLD_SIZE (and MASTER_ADDR/MASTER_PORT) are set: a TCP store,
 *      served by rank 0 (or by the launcher when MPISHIM_BOOT_STORE_EXTERNAL=1).
 *   4. singleton: rank 0 of 1.
 * Explicit methods: "pmix://", "pmi1://", "env://", "tcp://host:port" (rank and size from opts),
 * "file:///path" (a file store on a shared file system), "singleton".
 *
 * Every method reports the node identity of every rank (MPISHIM_NODE_NAME or the host
 * name), from which local_rank/local_size are derived, and which the transport uses to
 * choose shm or the network per peer. Calls are not thread-safe; pg_core serializes them.
 */
#ifndef BOOT_H
#define BOOT_H

#include <stddef.h>
#include <stdint.h>

#define BOOT_NODE_MAX 64

struct boot;
struct boot_store;

struct boot_opts {
    const char *init_method; /* NULL or "auto", or one of the methods above */
    int rank;                /* tcp:// and file:// (and env:// override): -1 reads RANK */
    int size;                /* likewise for WORLD_SIZE */
    double timeout;          /* seconds; <= 0 takes MPISHIM_TIMEOUT */
};

struct boot_info {
    int rank, size;
    int local_rank, local_size; /* among the ranks with the same node name */
    char node[BOOT_NODE_MAX];   /* this rank's node identity */
    const char *method;         /* "pmix", "pmi1", "env", "tcp", "file" or "singleton" */
};

/* Starts the bootstrap. On failure *out is NULL and a cause is recorded (mps_error). */
int boot_init(const struct boot_opts *opts, struct boot **out);
const struct boot_info *boot_get_info(const struct boot *b);
/* Node name of every rank, size * BOOT_NODE_MAX bytes, rank order; valid until boot_fini. */
const char *boot_nodes(const struct boot *b);
/* Every rank contributes len bytes; out receives size * len bytes in rank order.
 * Collective over all ranks; gives up with PGC_ERR_TIMEOUT after the timeout. */
int boot_allgather(struct boot *b, const void *in, size_t len, void *out);
int boot_barrier(struct boot *b);
/* The key-value store behind env://, tcp:// and file:// (NULL for pmix, pmi1, singleton). */
struct boot_store *boot_get_store(struct boot *b);
/* Asks the launcher to end the whole job (PMIx_Abort under PMIx, cmd=abort under PMI-1);
 * returns if it cannot. */
void boot_abort(struct boot *b, int code, const char *msg);
/* The same without a bootstrap (it failed, or was released): under a PMIx server, a new
 * connection's PMIx_Abort, so that a rank whose initialization failed still ends the whole
 * step instead of leaving its peers waiting; under MPICH's hydra, cmd=abort on PMI_FD;
 * returns where there is no such launcher. */
void boot_abort_launcher(int code, const char *msg);
/* Not collective; for a wait that has lasted a while (pg_progress.c): PGC_OK, or an error
 * that names a rank the bootstrap knows to be gone where no pid can be watched (another
 * node): under PMIx a process-termination event from the server; with a TCP store (env://,
 * tcp://, mpiexec) the store server's record of a rank whose connection closed before it
 * finished (boot/dead), or the store itself unreachable (rank 0, its host, died). A round
 * trip to the store: call it about once a second, not per poll. Call it only where no other
 * thread uses the bootstrap (after MPI_Init, before MPI_Finalize). */
int boot_peers_alive(struct boot *b);
/* Collective: waits for all ranks (so that rank 0's store outlives every client). */
int boot_fini(struct boot *b);
/* Not collective: releases what boot_init acquired (rank 0's store server, the store
 * connection, the PMIx client) without waiting for anyone, for an initialization that
 * failed after boot_init. NULL is allowed. */
void boot_close(struct boot *b);

#endif
