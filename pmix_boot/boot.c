/*
 * boot.c - boot_init's method selection, the node table, the singleton method, and the
 * public calls that dispatch to the method.
 */
#include "config.h"

#include "boot_impl.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The singleton: rank 0 of 1, every collective is a copy. */

static int single_allgather(struct boot *b, const void *in, size_t len, void *out)
{
    if (len) {
        memmove(out, in, len);
    }
    return PGC_OK;
}

static int single_barrier(struct boot *b)
{
    return PGC_OK;
}

static void single_abort(struct boot *b, int code, const char *msg)
{
    MPS_ERR("boot_abort (singleton, code %d): %s", code, msg ? msg : "");
}

static void single_fini(struct boot *b, bool barrier_ok)
{
}

static const struct boot_method singleton_method = {
    .allgather = single_allgather,
    .barrier = single_barrier,
    .abort = single_abort,
    .fini = single_fini,
};

static int singleton_start(struct boot *b)
{
    b->info.rank = 0;
    b->info.size = 1;
    b->info.method = "singleton";
    b->m = &singleton_method;
    return PGC_OK;
}

/* Method selection. */

static bool is(const char *method, const char *name)
{
    size_t n = strlen(name);
    return strcmp(method, name) == 0 ||
           (strncmp(method, name, n) == 0 && !strcmp(method + n, "://"));
}

static const char *auto_method(void)
{
    if (getenv("PMIX_RANK") || getenv("PMIX_NAMESPACE")) {
        return "pmix";
    }
    /* MPICH's hydra (mpiexec.mpich): the simple PMI-1 wire protocol. */
    if (getenv("PMI_FD") || getenv("PMI_PORT")) {
        return "pmi1";
    }
    if (getenv("RANK") && getenv("WORLD_SIZE")) {
        return "env";
    }
    return "singleton";
}

/* A task of an srun step of several tasks that found no PMI, PMIx or torch-style variables:
 * srun served none (--mpi=none, or a cluster whose MpiDefault is none). As a singleton each
 * task would run the whole program alone, N copies that each report success: refused, as
 * Open MPI refuses it. A batch script or an salloc shell (no step) stays a singleton, and
 * MPISHIM_BOOT_METHOD=singleton asks for one. */
static int refuse_srun_without_pmi(void)
{
    const char *tasks = getenv("SLURM_STEP_NUM_TASKS"), *task = getenv("SLURM_PROCID");

    if (!tasks || !task || atoi(tasks) < 2) {
        return PGC_OK;
    }
    return mps_error(PGC_ERR_BOOT,
                     "boot_init: started by srun as task %.16s of %.16s, but srun serves these "
                     "processes no PMIx or PMI (srun --mpi=none, or MpiDefault=none in "
                     "slurm.conf), so no task can find the others; run srun --mpi=pmix (or "
                     "--mpi=pmi2), or set MpiDefault=pmix (doc/running.md)",
                     task, tasks);
}

static int start_method(struct boot *b, const char *method, const struct boot_opts *o)
{
    if (is(method, "auto")) {
        method = auto_method();
        if (is(method, "singleton") && refuse_srun_without_pmi() != PGC_OK) {
            return PGC_ERR_BOOT;
        }
    }
    if (is(method, "pmix")) {
        return boot_pmix_start(b);
    }
    if (is(method, "pmi1")) {
        return boot_pmi1_start(b);
    }
    if (is(method, "env")) {
        return boot_env_start(b, o);
    }
    if (is(method, "singleton")) {
        return singleton_start(b);
    }
    if (strncmp(method, "tcp://", 6) == 0) {
        return boot_tcp_start(b, method + 6, o);
    }
    if (strncmp(method, "file://", 7) == 0) {
        return boot_file_start(b, method + 7, o);
    }
    return mps_error(PGC_ERR_INVALID_ARG,
                     "boot_init: unknown init method '%s' (expected auto, pmix://, pmi1://, "
                     "env://, tcp://host:port, file:///path or singleton)",
                     method);
}

/* The node table. */

static void my_node_name(char *name)
{
    const char *n = mps_config_str(MPS_CFG_NODE_NAME);

    memset(name, 0, BOOT_NODE_MAX);
    if (n && *n) {
        strncpy(name, n, BOOT_NODE_MAX - 1);
    } else if (gethostname(name, BOOT_NODE_MAX - 1) != 0 || !*name) {
        strcpy(name, "localhost");
    }
    name[BOOT_NODE_MAX - 1] = '\0';
}

/* Gathers every rank's node name and counts the ranks that share this rank's. */
static int gather_nodes(struct boot *b)
{
    struct boot_info *in = &b->info;
    int rc;

    my_node_name(in->node);
    b->nodes = calloc((size_t)in->size, BOOT_NODE_MAX);
    if (!b->nodes) {
        return mps_error(PGC_ERR_NOMEM, "boot_init: no memory for %d node names", in->size);
    }
    if ((rc = b->m->allgather(b, in->node, BOOT_NODE_MAX, b->nodes)) != PGC_OK) {
        return rc;
    }
    in->local_rank = in->local_size = 0;
    for (int r = 0; r < in->size; r++) {
        char *name = b->nodes + (size_t)r * BOOT_NODE_MAX;
        name[BOOT_NODE_MAX - 1] = '\0'; /* whatever a peer sent, it is a string now */
        if (strcmp(name, in->node) == 0) {
            in->local_rank += r < in->rank;
            in->local_size++;
        }
    }
    return PGC_OK;
}

int boot_init(const struct boot_opts *opts, struct boot **out)
{
    struct boot_opts o = {.init_method = NULL, .rank = -1, .size = -1, .timeout = 0};
    const char *method;
    struct boot *b;
    int rc;

    if (!out) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_init: NULL output");
    }
    *out = NULL;
    if (opts) {
        o = *opts;
    }
    if (!(b = calloc(1, sizeof(*b)))) {
        return mps_error(PGC_ERR_NOMEM, "boot_init: out of memory");
    }
    b->timeout = o.timeout > 0 ? o.timeout : mps_config_double(MPS_CFG_TIMEOUT);
    if (b->timeout <= 0) {
        b->timeout = 300;
    }
    method = o.init_method && *o.init_method ? o.init_method : mps_config_str(MPS_CFG_BOOT_METHOD);
    if ((rc = start_method(b, method, &o)) != PGC_OK) {
        goto fail;
    }
    if ((rc = gather_nodes(b)) != PGC_OK) {
        b->m->fini(b, false);
        goto fail;
    }
    MPS_INFO("bootstrap: method %s, rank %d of %d, node %s (local rank %d of %d)", b->info.method,
             b->info.rank, b->info.size, b->info.node, b->info.local_rank, b->info.local_size);
    *out = b;
    return PGC_OK;
fail:
    free(b->nodes);
    free(b);
    return rc;
}

const struct boot_info *boot_get_info(const struct boot *b)
{
    return b ? &b->info : NULL;
}

const char *boot_nodes(const struct boot *b)
{
    return b ? b->nodes : NULL;
}

int boot_allgather(struct boot *b, const void *in, size_t len, void *out)
{
    if (!b) {
        return mps_error(PGC_ERR_NOT_INITIALIZED, "boot_allgather: no bootstrap");
    }
    if (len && (!in || !out)) {
        return mps_error(PGC_ERR_INVALID_ARG, "boot_allgather: NULL buffer of %zu bytes", len);
    }
    return b->m->allgather(b, in, len, out);
}

int boot_barrier(struct boot *b)
{
    if (!b) {
        return mps_error(PGC_ERR_NOT_INITIALIZED, "boot_barrier: no bootstrap");
    }
    return b->m->barrier(b);
}

int boot_peers_alive(struct boot *b)
{
    return b && b->m && b->m->peers_alive ? b->m->peers_alive(b) : PGC_OK;
}

struct boot_store *boot_get_store(struct boot *b)
{
    return b ? b->store : NULL;
}

void boot_abort(struct boot *b, int code, const char *msg)
{
    if (b) {
        b->m->abort(b, code, msg);
    }
}

static void release(struct boot *b, bool barrier_ok)
{
    b->m->fini(b, barrier_ok);
    free(b->nodes);
    free(b);
}

int boot_fini(struct boot *b)
{
    int rc;

    if (!b) {
        return mps_error(PGC_ERR_NOT_INITIALIZED, "boot_fini: no bootstrap");
    }
    rc = b->m->barrier(b);
    release(b, rc == PGC_OK);
    return rc;
}

void boot_close(struct boot *b)
{
    if (b) {
        release(b, false);
    }
}
