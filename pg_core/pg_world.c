/*
 * pg_world.c - starting and stopping the world: bootstrap, transport, address exchange,
 * the world and self groups.
 */
#include "config.h"
#include "pg_device.h"

#include "pg_coll_hier.h"
#include "pg_internal.h"
#include "boot.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Recursive: the last release of a group takes the lock to free it, and may run in a
 * caller that holds it already. No wait runs with it held twice (a wait drops it once to
 * let other threads progress). */
struct pg_world pg_w = {.lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP};

static void world_reset_lists(void)
{
    mps_list_init(&pg_w.posted);
    mps_list_init(&pg_w.rndv_todo);
    mps_list_init(&pg_w.acks);
    mps_list_init(&pg_w.scheds);
    mps_list_init(&pg_w.sync_sends);
}

/* Opens the transport and exchanges every rank's address through the bootstrap. */
/* Whether waits sleep in the kernel on the fabric's wait fd (pg_progress.c). Only where
 * that fd covers everything a wait may wait for: one socket endpoint for every peer (no
 * rings), and one thread (another could take the completion the sleeper was woken for). */
static void choose_net_sleep(void)
{
    pg_w.net_sleep = mps_config_int(MPS_CFG_NET_SLEEP) && !pg_w.mt && fab_can_sleep(pg_w.fab);
    pg_w.net_spin = (double)mps_config_int(MPS_CFG_NET_SPIN_US) * 1e-6;
    pg_w.net_spin_count = pg_w.spin_count;
    pg_w.net_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (pg_w.net_sleep) {
        pg_w.spin_count = 1;
        MPS_INFO("waits sleep on the network provider's fd after %.0f us of polling",
                 pg_w.net_spin * 1e6);
    }
}

static int world_open_fabric(void)
{
    const struct boot_info *bi = boot_get_info(pg_w.boot);
    struct fab_opts fo = {
        .rank = bi->rank,
        .size = bi->size,
        .nodes = boot_nodes(pg_w.boot),
        .node_stride = BOOT_NODE_MAX,
        .am_handler = pg_am_handler,
        .am_arg = NULL,
        .am_max = pg_w.eager_max + sizeof(struct pg_wire_hdr) + sizeof(struct pg_wire_ext),
        .spin = pg_w.spin_count,
    };
    unsigned char blob[FAB_ADDR_MAX];
    unsigned char *all = NULL;
    int rc;

    rc = fab_open(&fo, &pg_w.fab);
    if (rc != PGC_OK) {
        goto fail;
    }
    memset(blob, 0, sizeof(blob));
    rc = fab_get_addr(pg_w.fab, blob);
    if (rc != PGC_OK) {
        goto fail;
    }
    all = malloc((size_t)bi->size * FAB_ADDR_MAX);
    if (!all) {
        rc = mps_error(PGC_ERR_NOMEM, "no memory for %d fabric addresses", bi->size);
        goto fail;
    }
    rc = boot_allgather(pg_w.boot, blob, FAB_ADDR_MAX, all);
    if (rc == PGC_OK) {
        rc = fab_connect(pg_w.fab, all);
    }
    /* Once everyone is connected, names in /dev/shm are no longer needed. */
    if (rc == PGC_OK) {
        rc = boot_barrier(pg_w.boot);
    }
    if (rc == PGC_OK) {
        fab_connect_done(pg_w.fab);
        choose_net_sleep();
    }
fail:
    free(all);
    return rc;
}

static int world_make_groups(void)
{
    int *ranks = malloc(sizeof(int) * (size_t)pg_w.size);
    int rc;

    if (!ranks) {
        return mps_error(PGC_ERR_NOMEM, "no memory for the world group");
    }
    for (int i = 0; i < pg_w.size; i++) {
        ranks[i] = i;
    }
    rc = pg_group_new(0, 0, pg_w.rank, pg_w.size, ranks, &pg_w.world);
    if (rc == PGC_OK) {
        rc = pg_group_new(1, -1, 0, 1, &pg_w.rank, &pg_w.self);
    }
    free(ranks);
    pg_w.next_ctx = 2;
    pg_w.next_nb_ctx = 3; /* pg_group.c: even ids for blocking creations, odd ones for others */
    return rc;
}

/* Whether this node has more ranks than usable cores. */
static bool node_oversubscribed(void)
{
    int cores = mps_usable_cores();

    return cores > 0 && boot_get_info(pg_w.boot)->local_size > cores;
}

/* A rank that waits must give its core away at once when the node has more ranks than
 * cores: spinning would starve the very peer it waits for (MPICH's millisecond trap at 4
 * ranks on 2 cores). Otherwise spin a while first, which is what small-message latency
 * wants. An explicit MPISHIM_SPIN_COUNT always wins. */
static int choose_spin_count(void)
{
    if (mps_config_is_set(MPS_CFG_SPIN_COUNT)) {
        return (int)mps_config_int(MPS_CFG_SPIN_COUNT);
    }
    if (pg_w.oversubscribed) {
        MPS_INFO("%d ranks on %d cores: waiting ranks yield at once",
                 boot_get_info(pg_w.boot)->local_size, mps_usable_cores());
        return 1;
    }
    return (int)mps_config_int(MPS_CFG_SPIN_COUNT);
}

/* Whether any node has more ranks than cores, agreed by all (an allreduce, which also makes
 * init a fence): algorithms chosen by it must be chosen alike on every rank, and a rank's
 * cores can differ from its neighbour's (affinity masks). */
static int agree_oversubscribed(void)
{
    struct pg_op_spec max = {.dt = PG_INT32, .op = PG_OP_MAX, .elem_size = 4,
                             .commutative = true};
    int32_t mine = pg_w.oversubscribed, any = mine;
    int rc = pg_allreduce_direct(pg_w.world, &mine, &any, 1, &max);

    pg_w.oversubscribed = any != 0;
    return rc;
}

/* Closes the fabric, the matching state, the bootstrap and the world's groups, whichever
 * exist. collective: the bootstrap's closing barrier too (pg_finalize); otherwise nobody is
 * waited for (an initialization that failed halfway). Returns the barrier's status. */
static int world_close(bool collective)
{
    int rc = PGC_OK;

    pg_async_stop(); /* it polls the fabric: first */
    if (pg_w.fab) {
        pg_w.net_sleep = false;
        fab_close(pg_w.fab);
        pg_w.fab = NULL;
    }
    pg_p2p_fini(); /* after the fabric: nothing can arrive any more */
    if (collective) {
        rc = boot_fini(pg_w.boot);
    } else {
        boot_close(pg_w.boot);
    }
    pg_w.boot = NULL;
    pg_group_release(pg_w.world);
    pg_group_release(pg_w.self);
    pg_w.world = pg_w.self = NULL;
    return rc;
}

int pg_init(const char *init_method, int rank, int size, double timeout, bool mt)
{
    struct boot_opts bo = {.init_method = init_method, .rank = rank, .size = size,
                           .timeout = timeout};
    bool async;
    int rc;

    if (pg_w.initialized) {
        return mps_error(PGC_ERR_ALREADY_INITIALIZED, "the process group world already exists");
    }
    /* Each initialization reads the MPISHIM_* variables afresh: a retry after a failed one
     * may have corrected them. */
    mps_config_reset();
    pg_flight_init();
    world_reset_lists();
    pg_shm_reset();
    /* A progress thread needs the world lock, whatever level the program asked for (what
     * MPI_Query_thread reports stays the program's: mpi_shim keeps it). */
    async = mps_config_int(MPS_CFG_ASYNC_PROGRESS) != 0;
    pg_w.mt = mt || async;
    pg_w.timeout = timeout > 0 ? timeout : mps_config_double(MPS_CFG_TIMEOUT);
    pg_w.eager_max = (size_t)mps_config_int(MPS_CFG_EAGER_MAX);
    pg_w.rooted_eager_max = (size_t)mps_config_int(MPS_CFG_ROOTED_EAGER_MAX);
    pg_w.rooted_eager_max = MPS_MIN(pg_w.rooted_eager_max, pg_w.eager_max);
    pg_w.net_zcopy_min = (size_t)mps_config_int(MPS_CFG_NET_ZCOPY_MIN);
    pg_w.net_zcopy_min = pg_w.net_zcopy_min ? pg_w.net_zcopy_min : SIZE_MAX;
    rc = boot_init(&bo, &pg_w.boot);
    if (rc != PGC_OK) {
        goto fail;
    }
    pg_w.oversubscribed = node_oversubscribed();
    pg_w.spin_count = choose_spin_count();
    pg_w.rank = boot_get_info(pg_w.boot)->rank;
    pg_w.size = boot_get_info(pg_w.boot)->size;
    mps_log_set_rank(pg_w.rank);
    rc = pg_p2p_init();
    if (rc == PGC_OK && pg_w.size > 1) {
        rc = world_open_fabric();
    }
    if (rc == PGC_OK) {
        rc = world_make_groups();
    }
    if (rc != PGC_OK) {
        goto fail;
    }
    pg_w.initialized = true;
    /* Leave together, as other MPIs do (their init ends with a fence): the first timed
     * call of a program should not absorb the ranks' skew in getting here. */
    rc = agree_oversubscribed();
    if (rc == PGC_OK) {
        rc = pg_hier_prepare(pg_w.world); /* while every rank is here (pg_coll_hier.c) */
    }
    if (rc == PGC_OK && async) {
        rc = pg_async_start();
    }
    if (rc != PGC_OK) {
        pg_w.initialized = false;
        goto fail;
    }
    MPS_INFO("world of %d ranks up (bootstrap %s)", pg_w.size, pg_boot_method());
    return PGC_OK;
fail:
    /* Release everything without waiting for the others, which may never come: the
     * caller can then try again (rank 0's store server no longer holds its port). */
    world_close(false);
    return rc;
}

int pg_finalize(void)
{
    int rc, fin;

    if (!pg_w.initialized) {
        return mps_error(PGC_ERR_NOT_INITIALIZED, "the process group world is not running");
    }
    /* A barrier first: no rank may close its endpoint while a peer still sends to it. When
     * it fails (a peer died), the bootstrap's own barrier would only wait out a second
     * timeout: close without it. */
    rc = pg_barrier(pg_w.world);
    fin = world_close(rc == PGC_OK);
    pg_dev_finalize();
    pg_w.initialized = false;
    return rc != PGC_OK ? rc : fin;
}

bool pg_is_initialized(void)
{
    return pg_w.initialized;
}

int pg_world_rank(void)
{
    return pg_w.rank;
}

int pg_world_size(void)
{
    return pg_w.size;
}

int pg_local_rank(void)
{
    return boot_get_info(pg_w.boot)->local_rank;
}

int pg_local_size(void)
{
    return boot_get_info(pg_w.boot)->local_size;
}

const char *pg_node_name(void)
{
    return boot_get_info(pg_w.boot)->node;
}

const char *pg_boot_method(void)
{
    return boot_get_info(pg_w.boot)->method;
}

struct pg_group *pg_world_group(void)
{
    return pg_w.world;
}

struct pg_group *pg_self_group(void)
{
    return pg_w.self;
}

double pg_timeout(void)
{
    return pg_w.timeout;
}

void pg_unexpected_counts(uint64_t *now, uint64_t *most)
{
    PG_LOCK();
    *now = pg_w.unexp_count;
    *most = pg_w.unexp_max;
    PG_UNLOCK();
}

struct boot_store *pg_store(void)
{
    return pg_w.boot ? boot_get_store(pg_w.boot) : NULL;
}

void pg_abort(int code, const char *msg)
{
    pg_flight_dump_all("a fatal error");
    if (pg_w.boot) {
        boot_abort(pg_w.boot, code, msg);
    }
    /* No launcher took the job down (singleton, env://): end this process; the launcher
     * or the peers' timeouts end the rest. */
    _exit(code ? code : 1);
}
