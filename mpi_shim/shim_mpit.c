/*
 * shim_mpit.c - the MPI tool information interface (MPI_T, MPI-3.1 chapter 14.3): what a
 * profiler (TAU, Score-P, Caliper) or a tuning tool reads from an MPI library.
 *
 * Control variables: one per MPISHIM_* variable of common/mps_config.h, in the table's
 * order, named as in the environment, with its doc as description. A value reads as the
 * library sees it (the environment's, else the default). Counts and sizes are
 * MPI_UNSIGNED_LONG_LONG, booleans MPI_INT, seconds MPI_DOUBLE, names MPI_CHAR strings of at
 * most MPIT_STRING_MAX bytes. A setting that is one of a fixed set of choices (LOG_LEVEL,
 * the collective algorithms) is an MPI_INT holding the choice's position in the table, with
 * an enumeration (MPI_T_enum) naming the positions; MPISHIM_BOOT_METHOD stays a string, as
 * tcp://host:port is no fixed choice. Most settings are read once, when MPI_Init or
 * pgc_init_process_group starts the library: they can be written until then (scope
 * MPI_T_SCOPE_LOCAL) and are read-only from then on (MPI_T_SCOPE_READONLY; a write is
 * MPI_T_ERR_CVAR_SET_NEVER once MPI started, which it cannot do again, and
 * MPI_T_ERR_CVAR_SET_NOT_NOW while only a pgc world runs, as the next pgc world reads them
 * afresh). The few the library reads again at each use (dynamic[] below) stay writable.
 *
 * Performance variables: the counters of common/mps_stats.h (messages and bytes sent per
 * transport, collectives per algorithm) and the unexpected-message queue's length and
 * high-water mark. Counters are continuous (always counting: no start or stop) and
 * per-handle: a handle reads 0 when allocated, then what happened since, and may be reset or
 * written; the counters underneath are never cleared.
 *
 * Events (MPI-4.0 15.3.8): there are none. The query side answers consistently (no event
 * type, one time source); calls on a registration or an instance, which cannot exist, are
 * MPI_T_ERR_INVALID_HANDLE.
 *
 * Every function holds one lock, so the interface is MPI_THREAD_MULTIPLE. None calls an
 * error handler (MPI-3.1 14.3.10): a misuse returns its MPI_T_ERR_* code, with a debug
 * line (MPISHIM_LOG_LEVEL=debug) naming the call and the cause.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_log.h"
#include "mps_stats.h"
#include "mps_util.h"
#include "pg.h"
#include "pgc_status.h"
#include "shim.h"

#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The count of an MPI_CHAR control variable: room for its longest value and the NUL. */
#define MPIT_STRING_MAX 256

/* Handles carry a tag so that a stale or foreign pointer is refused, not followed far. */
#define CVAR_MAGIC 0x6d707463u /* "mptc" */
#define PVAR_MAGIC 0x6d707470u /* "mptp" */
#define SESSION_MAGIC 0x6d707473u

struct mpishim_t_cvar_handle {
    uint32_t magic;
    int index;
    struct mpishim_t_cvar_handle *next; /* every live handle, freed by the last finalize */
};

struct mpishim_t_pvar_handle {
    uint32_t magic;
    int index;
    uint64_t mark;  /* the counter's raw value when this handle's value was last set */
    uint64_t value; /* this handle's value then */
    struct mpishim_t_pvar_handle *next;
};

struct mpishim_t_pvar_session {
    uint32_t magic;
    struct mpishim_t_pvar_handle *handles;
    struct mpishim_t_pvar_session *next;
};

static pthread_mutex_t t_lock = PTHREAD_MUTEX_INITIALIZER;
static int t_refs;
static struct mpishim_t_cvar_handle *t_cvars;
static struct mpishim_t_pvar_session *t_sessions;

/* ---- control variables ---- */

/* The settings the library reads again at every use, so a write takes effect at once. The
 * collective algorithms must be the same on every rank (MPI_T_SCOPE_ALL_EQ). */
static const enum mps_config_id dynamic[] = {MPS_CFG_LOG_LEVEL, MPS_CFG_COLL_ALLREDUCE,
                                             MPS_CFG_COLL_BCAST, MPS_CFG_COLL_ALLGATHER};

static bool is_dynamic(int i)
{
    for (size_t k = 0; k < sizeof(dynamic) / sizeof(dynamic[0]); k++) {
        if ((int)dynamic[k] == i) {
            return true;
        }
    }
    return false;
}

/* Whether MPI started the library, now or earlier: MPI cannot start again, so a setting
 * read then can never be set again in this process. */
static bool mpi_started(void)
{
    int init = 0, fini = 0;

    PMPI_Initialized(&init);
    PMPI_Finalized(&fini);
    return init || fini;
}

/* Whether the library runs (it read its settings) or MPI ran it. A pgc world alone may end
 * (pgc_destroy_process_group), and the next one reads the settings afresh. */
static bool library_started(void)
{
    return mpi_started() || pg_world_group() != NULL;
}

static int cvar_scope(int i)
{
    if (is_dynamic(i)) {
        return i == MPS_CFG_LOG_LEVEL ? MPI_T_SCOPE_LOCAL : MPI_T_SCOPE_ALL_EQ;
    }
    return library_started() ? MPI_T_SCOPE_READONLY : MPI_T_SCOPE_LOCAL;
}

/* ---- settings with a fixed set of choices ---- */

/* Whether control variable i is one of a fixed set of names: an ENUM of the table none of
 * whose choices is a prefix ("tcp://" takes any host and port after it). */
static bool is_choice(int i)
{
    const struct mps_config_desc *d = mps_config_desc((enum mps_config_id)i);

    if (d->type != MPS_CFG_ENUM) {
        return false;
    }
    for (const char *const *c = d->choices; *c; c++) {
        if (strstr(*c, "://")) {
            return false;
        }
    }
    return true;
}

static int num_choices(int i)
{
    int n = 0;

    while (mps_config_desc((enum mps_config_id)i)->choices[n]) {
        n++;
    }
    return n;
}

/* The position of value v among the choices of i; v is one of them, as the table spells it
 * (mps_config_str gives no other). */
static int choice_position(int i, const char *v)
{
    const char *const *c = mps_config_desc((enum mps_config_id)i)->choices;

    for (int k = 0; c[k]; k++) {
        if (strcmp(c[k], v) == 0) {
            return k;
        }
    }
    return 0;
}

/* The enumeration of control variable i is &t_enums[i]: only its address matters, so a
 * handle is checked by where it points, and no enumeration is ever allocated or freed. */
struct mpishim_t_enum {
    unsigned char unused;
};
static struct mpishim_t_enum t_enums[MPS_CFG_COUNT];

/* The control variable whose enumeration e is, or -1 when e is none. */
static int enum_cvar(MPI_T_enum e)
{
    uintptr_t p = (uintptr_t)e, base = (uintptr_t)t_enums;
    int i;

    if (p < base || p >= base + sizeof(t_enums) || (p - base) % sizeof(t_enums[0]) != 0) {
        return -1;
    }
    i = (int)((p - base) / sizeof(t_enums[0]));
    return is_choice(i) ? i : -1;
}

static MPI_Datatype cvar_type(int i)
{
    if (is_choice(i)) {
        return MPI_INT;
    }
    switch (mps_config_desc((enum mps_config_id)i)->type) {
    case MPS_CFG_INT:
    case MPS_CFG_SIZE:
        return MPI_UNSIGNED_LONG_LONG;
    case MPS_CFG_BOOL:
        return MPI_INT;
    case MPS_CFG_DOUBLE:
        return MPI_DOUBLE;
    default:
        return MPI_CHAR;
    }
}

/* ---- performance variables ---- */

enum pvar_src { SRC_STAT, SRC_UNEXP_NOW, SRC_UNEXP_MAX };

struct pvar_desc {
    const char *name;
    const char *desc;
    int var_class;
    enum pvar_src src;
    size_t offset; /* SRC_STAT: where in mps_stats */
};

#define STAT(field) SRC_STAT, offsetof(struct mps_stats, field)
static const struct pvar_desc pvars[] = {
    {"shm_msgs_sent", "messages sent through the shared-memory rings to ranks of this node",
     MPI_T_PVAR_CLASS_COUNTER, STAT(shm_msgs)},
    {"shm_bytes_sent",
     "payload bytes sent through the shared-memory rings (eager and "
     "rendezvous)",
     MPI_T_PVAR_CLASS_COUNTER, STAT(shm_bytes)},
    {"fabric_msgs_sent",
     "messages sent through a libfabric provider (other nodes, or every "
     "peer with MPISHIM_SHM_RING=0)",
     MPI_T_PVAR_CLASS_COUNTER, STAT(fab_msgs)},
    {"fabric_bytes_sent", "payload bytes sent through a libfabric provider",
     MPI_T_PVAR_CLASS_COUNTER, STAT(fab_bytes)},
    {"fabric_wait_sleeps",
     "waits that slept in the kernel on a network provider's file descriptor "
     "(MPISHIM_NET_SLEEP)",
     MPI_T_PVAR_CLASS_COUNTER, STAT(fab_sleeps)},
    {"fabric_rma_ops",
     "MPI_Put and MPI_Get pieces that went as libfabric fi_write/fi_read (FI_RMA, "
     "MPISHIM_WIN_FI_RMA) instead of active messages",
     MPI_T_PVAR_CLASS_COUNTER, STAT(fab_rma_ops)},
    {"fabric_rma_bytes", "bytes those fi_write/fi_read moved", MPI_T_PVAR_CLASS_COUNTER,
     STAT(fab_rma_bytes)},
    {"wait_naps_serving",
     "naps (sleeps between polls) of waits that were serving one-sided requests of other "
     "ranks; stays 0: a wait that serves requests polls on",
     MPI_T_PVAR_CLASS_COUNTER, STAT(wait_naps_serving)},
    {"unexpected_queue_length",
     "messages that arrived before their receive was posted and "
     "wait in the unexpected queues now",
     MPI_T_PVAR_CLASS_LEVEL, SRC_UNEXP_NOW, 0},
    {"unexpected_queue_max", "the most messages the unexpected queues held at once",
     MPI_T_PVAR_CLASS_HIGHWATERMARK, SRC_UNEXP_MAX, 0},
#define PVAR_ALGO(id, name, doc)                                                                   \
    {"coll_" name, doc, MPI_T_PVAR_CLASS_COUNTER, STAT(algo[MPS_ALGO_##id])},
    MPS_ALGO_LIST(PVAR_ALGO)
#undef PVAR_ALGO
};
#undef STAT
#define NUM_PVARS ((int)(sizeof(pvars) / sizeof(pvars[0])))
/* The first pvar of the collective-algorithm category. */
#define FIRST_ALGO_PVAR 10

static uint64_t pvar_raw(int i)
{
    uint64_t now = 0, most = 0;

    if (pvars[i].src == SRC_STAT) {
        /* Atomic: the algorithm counters are counted outside the world lock. */
        return __atomic_load_n((const uint64_t *)((const char *)&mps_stats + pvars[i].offset),
                               __ATOMIC_RELAXED);
    }
    pg_unexpected_counts(&now, &most);
    return pvars[i].src == SRC_UNEXP_NOW ? now : most;
}

static bool pvar_is_counter(int i)
{
    return pvars[i].var_class == MPI_T_PVAR_CLASS_COUNTER;
}

/* ---- categories ---- */

enum category { CAT_GENERAL, CAT_TRANSPORT, CAT_BOOTSTRAP, CAT_COLLECTIVES, CAT_DEVICE, NUM_CATS };

static const char *const cat_names[NUM_CATS] = {"mpishim_general", "mpishim_transport",
                                                "mpishim_bootstrap", "mpishim_collectives",
                                                "mpishim_device"};
static const char *const cat_descs[NUM_CATS] = {
    "timeouts, logging, API checks and the flight recorder",
    "shared-memory rings, the shared heap, libfabric providers and message protocols",
    "how ranks find each other: PMIx, env://, tcp://, file:// and the TCP store",
    "collective algorithms and their shared-memory paths", "CUDA and NCCL for device buffers"};

static bool has_prefix(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* A variable's category, from its name, so that a new table entry lands in one. */
static enum category cvar_category(int i)
{
    const char *n = mps_config_desc((enum mps_config_id)i)->name + strlen("MPISHIM_");

    if (has_prefix(n, "BOOT_") || has_prefix(n, "STORE_")) {
        return CAT_BOOTSTRAP;
    }
    if (has_prefix(n, "COLL_") || has_prefix(n, "ROOTED_")) {
        return CAT_COLLECTIVES;
    }
    if (has_prefix(n, "DEVICE_") || has_prefix(n, "CUDA_") || has_prefix(n, "NCCL_")) {
        return CAT_DEVICE;
    }
    if (has_prefix(n, "FABRIC_") || has_prefix(n, "SHM_") || has_prefix(n, "HEAP") ||
        has_prefix(n, "EAGER_") || has_prefix(n, "NET_") || has_prefix(n, "SPIN_") ||
        has_prefix(n, "NODE_")) {
        return CAT_TRANSPORT;
    }
    return CAT_GENERAL;
}

static enum category pvar_category(int i)
{
    return i >= FIRST_ALGO_PVAR ? CAT_COLLECTIVES : CAT_TRANSPORT;
}

/* ---- shared helpers ---- */

#define T_LOCK() pthread_mutex_lock(&t_lock)
#define T_UNLOCK() pthread_mutex_unlock(&t_lock)

/* Returns code after a debug line naming the call and the cause: MPI_T never calls an
 * error handler, and tools probe (an unknown name is a normal answer), so not louder. */
static int t_fail(const char *fn, int code, const char *why)
{
    MPS_DEBUG("%s: %s (MPI_T error %d)", fn, why, code);
    return code;
}

/* MPI-3.1 14.3.3: with *len 0 (or no buffer) only the length the string needs is returned;
 * otherwise at most *len - 1 characters and a NUL are stored, and *len says how many. */
static void copy_out(char *dst, int *len, const char *src)
{
    size_t n = strlen(src);

    if (!len) {
        return;
    }
    if (!dst || *len <= 0) {
        *len = (int)n + 1;
        return;
    }
    n = MPS_MIN(n, (size_t)*len - 1);
    memcpy(dst, src, n);
    dst[n] = '\0';
    *len = (int)n + 1;
}

static void set_int(int *p, int v)
{
    if (p) {
        *p = v;
    }
}

/* The first check of every call but init: the interface is initialised. */
static int check_init(const char *fn)
{
    return t_refs > 0 ? MPI_SUCCESS
                      : t_fail(fn, MPI_T_ERR_NOT_INITIALIZED, "MPI_T_init_thread was not called");
}

/* ---- init and finalize ---- */

#pragma weak MPI_T_init_thread = PMPI_T_init_thread
int PMPI_T_init_thread(int required, int *provided)
{
    if (!provided || required < MPI_THREAD_SINGLE || required > MPI_THREAD_MULTIPLE) {
        return t_fail(SHIM_FN, MPI_T_ERR_INVALID,
                      !provided ? "provided is NULL" : "required is no MPI_THREAD_* level");
    }
    T_LOCK();
    t_refs++;
    T_UNLOCK();
    /* One lock serialises every call: any level the caller asks for holds. */
    *provided = required;
    return MPI_SUCCESS;
}

static void free_all_handles(void)
{
    while (t_cvars) {
        struct mpishim_t_cvar_handle *h = t_cvars;
        t_cvars = h->next;
        h->magic = 0;
        free(h);
    }
    while (t_sessions) {
        struct mpishim_t_pvar_session *s = t_sessions;
        t_sessions = s->next;
        while (s->handles) {
            struct mpishim_t_pvar_handle *h = s->handles;
            s->handles = h->next;
            h->magic = 0;
            free(h);
        }
        s->magic = 0;
        free(s);
    }
}

#pragma weak MPI_T_finalize = PMPI_T_finalize
int PMPI_T_finalize(void)
{
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    if (rc == MPI_SUCCESS && --t_refs == 0) {
        /* Handles do not outlive the interface (MPI-3.1 14.3.4). */
        free_all_handles();
    }
    T_UNLOCK();
    return rc;
}

/* The *_get_num calls: n (after the init and NULL checks) into *out. */
static int get_num(const char *fn, int *out, int n, const char *what)
{
    int rc;

    T_LOCK();
    rc = check_init(fn);
    if (rc == MPI_SUCCESS && !out) {
        rc = t_fail(fn, MPI_T_ERR_INVALID, what);
    } else if (rc == MPI_SUCCESS) {
        *out = n;
    }
    T_UNLOCK();
    return rc;
}

/* Whether i indexes one of n variables of a kind ("control variable"). */
static int check_index(const char *fn, int i, int n, const char *kind)
{
    char why[80];

    if (i >= 0 && i < n) {
        return MPI_SUCCESS;
    }
    snprintf(why, sizeof(why), "%s %d outside 0..%d", kind, i, n - 1);
    return t_fail(fn, MPI_T_ERR_INVALID_INDEX, why);
}

/* ---- enumerations ---- */

/* The control variable of enumeration e after the init check, or -1 with *rc set. */
static int check_enum(const char *fn, MPI_T_enum e, int *rc)
{
    int i;

    *rc = check_init(fn);
    if (*rc != MPI_SUCCESS) {
        return -1;
    }
    i = enum_cvar(e);
    if (i < 0) {
        *rc = t_fail(fn, MPI_T_ERR_INVALID_HANDLE,
                     "not an enumeration (MPI_T_cvar_get_info gives them)");
    }
    return i;
}

#pragma weak MPI_T_enum_get_info = PMPI_T_enum_get_info
int PMPI_T_enum_get_info(MPI_T_enum enumtype, int *num, char *name, int *name_len)
{
    int rc, i;

    T_LOCK();
    i = check_enum(SHIM_FN, enumtype, &rc);
    if (i >= 0) {
        /* Named after its one variable: a tool shows "MPISHIM_LOG_LEVEL: warn". */
        set_int(num, num_choices(i));
        copy_out(name, name_len, mps_config_desc((enum mps_config_id)i)->name);
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_enum_get_item = PMPI_T_enum_get_item
int PMPI_T_enum_get_item(MPI_T_enum enumtype, int indx, int *value, char *name, int *name_len)
{
    int rc, i;

    T_LOCK();
    i = check_enum(SHIM_FN, enumtype, &rc);
    /* An item out of range: MPI-4.0's MPI_T_ERR_INVALID_INDEX, as MPICH 4 and Open MPI
     * return (MPI-3.1's MPI_T_ERR_INVALID_ITEM is deprecated since). */
    rc = i >= 0 ? check_index(SHIM_FN, indx, num_choices(i), "enumeration item") : rc;
    if (rc == MPI_SUCCESS) {
        set_int(value, indx);
        copy_out(name, name_len, mps_config_desc((enum mps_config_id)i)->choices[indx]);
    }
    T_UNLOCK();
    return rc;
}

/* ---- control variables ---- */

#pragma weak MPI_T_cvar_get_num = PMPI_T_cvar_get_num
int PMPI_T_cvar_get_num(int *num_cvar)
{
    return get_num(SHIM_FN, num_cvar, MPS_CFG_COUNT, "num_cvar is NULL");
}

static int check_cvar_index(const char *fn, int i)
{
    return check_index(fn, i, MPS_CFG_COUNT, "control variable");
}

#pragma weak MPI_T_cvar_get_info = PMPI_T_cvar_get_info
int PMPI_T_cvar_get_info(int cvar_index, char *name, int *name_len, int *verbosity,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                         int *bind, int *scope)
{
    const struct mps_config_desc *d;
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    rc = rc == MPI_SUCCESS ? check_cvar_index(SHIM_FN, cvar_index) : rc;
    if (rc != MPI_SUCCESS) {
        goto out;
    }
    d = mps_config_desc((enum mps_config_id)cvar_index);
    copy_out(name, name_len, d->name);
    copy_out(desc, desc_len, d->doc);
    set_int(verbosity, cvar_category(cvar_index) == CAT_GENERAL ? MPI_T_VERBOSITY_USER_BASIC
                                                                : MPI_T_VERBOSITY_TUNER_BASIC);
    if (datatype) {
        *datatype = cvar_type(cvar_index);
    }
    if (enumtype) {
        *enumtype = is_choice(cvar_index) ? &t_enums[cvar_index] : MPI_T_ENUM_NULL;
    }
    set_int(bind, MPI_T_BIND_NO_OBJECT);
    set_int(scope, cvar_scope(cvar_index));
out:
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_cvar_get_index = PMPI_T_cvar_get_index
int PMPI_T_cvar_get_index(const char *name, int *cvar_index)
{
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    if (rc == MPI_SUCCESS && (!name || !cvar_index)) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "name or cvar_index is NULL");
    }
    for (int i = 0; rc == MPI_SUCCESS && i < MPS_CFG_COUNT; i++) {
        if (strcmp(mps_config_desc((enum mps_config_id)i)->name, name) == 0) {
            *cvar_index = i;
            T_UNLOCK();
            return MPI_SUCCESS;
        }
    }
    T_UNLOCK();
    return rc != MPI_SUCCESS ? rc : t_fail(SHIM_FN, MPI_T_ERR_INVALID_NAME, "no such variable");
}

#pragma weak MPI_T_cvar_handle_alloc = PMPI_T_cvar_handle_alloc
int PMPI_T_cvar_handle_alloc(int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle,
                             int *count)
{
    struct mpishim_t_cvar_handle *h = NULL;
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    rc = rc == MPI_SUCCESS ? check_cvar_index(SHIM_FN, cvar_index) : rc;
    if (rc == MPI_SUCCESS && (!handle || !count)) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "handle or count is NULL");
    }
    if (rc == MPI_SUCCESS && !(h = calloc(1, sizeof(*h)))) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_MEMORY, "no memory for a handle");
    }
    if (rc == MPI_SUCCESS) {
        h->magic = CVAR_MAGIC;
        h->index = cvar_index;
        h->next = t_cvars;
        t_cvars = h;
        *handle = h;
        *count = cvar_type(cvar_index) == MPI_CHAR ? MPIT_STRING_MAX : 1;
    }
    T_UNLOCK();
    return rc;
}

/* The live handle h, unlinked from the list when take (to free it). */
static bool find_cvar(struct mpishim_t_cvar_handle *h, bool take)
{
    for (struct mpishim_t_cvar_handle **p = &t_cvars; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = take ? h->next : *p;
            return true;
        }
    }
    return false;
}

#pragma weak MPI_T_cvar_handle_free = PMPI_T_cvar_handle_free
int PMPI_T_cvar_handle_free(MPI_T_cvar_handle *handle)
{
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    if (rc == MPI_SUCCESS && (!handle || !find_cvar(*handle, true))) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID_HANDLE, "not a live control-variable handle");
    }
    if (rc == MPI_SUCCESS) {
        (*handle)->magic = 0;
        free(*handle);
        *handle = MPI_T_CVAR_HANDLE_NULL;
    }
    T_UNLOCK();
    return rc;
}

static int check_cvar_handle(const char *fn, MPI_T_cvar_handle h, const void *buf)
{
    int rc = check_init(fn);

    if (rc == MPI_SUCCESS && !find_cvar(h, false)) {
        rc = t_fail(fn, MPI_T_ERR_INVALID_HANDLE, "not a live control-variable handle");
    }
    if (rc == MPI_SUCCESS && !buf) {
        rc = t_fail(fn, MPI_T_ERR_INVALID, "buf is NULL");
    }
    return rc;
}

#pragma weak MPI_T_cvar_read = PMPI_T_cvar_read
int PMPI_T_cvar_read(MPI_T_cvar_handle handle, void *buf)
{
    enum mps_config_id id;
    int rc;

    T_LOCK();
    rc = check_cvar_handle(SHIM_FN, handle, buf);
    if (rc != MPI_SUCCESS) {
        goto out;
    }
    id = (enum mps_config_id)handle->index;
    switch (mps_config_desc(id)->type) {
    case MPS_CFG_INT:
    case MPS_CFG_SIZE:
        *(unsigned long long *)buf = (unsigned long long)mps_config_int(id);
        break;
    case MPS_CFG_BOOL:
        *(int *)buf = (int)mps_config_int(id);
        break;
    case MPS_CFG_ENUM:
        if (is_choice(id)) {
            *(int *)buf = choice_position(id, mps_config_str(id));
        } else {
            snprintf(buf, MPIT_STRING_MAX, "%s", mps_config_str(id));
        }
        break;
    case MPS_CFG_DOUBLE:
        *(double *)buf = mps_config_double(id);
        break;
    default:
        snprintf(buf, MPIT_STRING_MAX, "%s", mps_config_str(id));
        break;
    }
out:
    T_UNLOCK();
    return rc;
}

/* The text form of a value written as the variable's MPI type; false, with why saying so,
 * for an enumerated variable's value that is no item of its enumeration. */
static bool value_text(enum mps_config_id id, const void *buf, char *out, size_t n, char *why,
                       size_t why_n)
{
    int k;

    if (is_choice(id)) {
        k = *(const int *)buf;
        if (k < 0 || k >= num_choices(id)) {
            snprintf(why, why_n, "%s: %d is no item of its enumeration (0..%d)",
                     mps_config_desc(id)->name, k, num_choices(id) - 1);
            return false;
        }
        snprintf(out, n, "%s", mps_config_desc(id)->choices[k]);
        return true;
    }
    switch (mps_config_desc(id)->type) {
    case MPS_CFG_INT:
    case MPS_CFG_SIZE:
        snprintf(out, n, "%llu", *(const unsigned long long *)buf);
        break;
    case MPS_CFG_BOOL:
        snprintf(out, n, "%d", *(const int *)buf);
        break;
    case MPS_CFG_DOUBLE:
        snprintf(out, n, "%.17g", *(const double *)buf);
        break;
    default:
        snprintf(out, n, "%.*s", MPIT_STRING_MAX - 1, (const char *)buf);
        break;
    }
    return true;
}

#pragma weak MPI_T_cvar_write = PMPI_T_cvar_write
int PMPI_T_cvar_write(MPI_T_cvar_handle handle, const void *buf)
{
    char text[MPIT_STRING_MAX], why[400];
    enum mps_config_id id;
    int rc;

    T_LOCK();
    rc = check_cvar_handle(SHIM_FN, handle, buf);
    if (rc != MPI_SUCCESS) {
        goto out;
    }
    id = (enum mps_config_id)handle->index;
    if (cvar_scope(handle->index) == MPI_T_SCOPE_READONLY) {
        /* MPI cannot start again: never. A pgc world alone: until it is destroyed. */
        snprintf(why, sizeof(why), "%s is read when the library starts, which %s",
                 mps_config_desc(id)->name,
                 mpi_started() ? "MPI did" : "the running pgc world did (destroy it first)");
        rc = t_fail(SHIM_FN, mpi_started() ? MPI_T_ERR_CVAR_SET_NEVER : MPI_T_ERR_CVAR_SET_NOT_NOW,
                    why);
        goto out;
    }
    if (!value_text(id, buf, text, sizeof(text), why, sizeof(why)) ||
        mps_config_set(id, text, why, sizeof(why)) != PGC_OK) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, why);
        goto out;
    }
    if (id == MPS_CFG_LOG_LEVEL) {
        mps_log_level_reload();
    }
out:
    T_UNLOCK();
    return rc;
}

/* ---- performance variables ---- */

#pragma weak MPI_T_pvar_get_num = PMPI_T_pvar_get_num
int PMPI_T_pvar_get_num(int *num_pvar)
{
    return get_num(SHIM_FN, num_pvar, NUM_PVARS, "num_pvar is NULL");
}

static int check_pvar_index(const char *fn, int i)
{
    return check_index(fn, i, NUM_PVARS, "performance variable");
}

#pragma weak MPI_T_pvar_get_info = PMPI_T_pvar_get_info
int PMPI_T_pvar_get_info(int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
                         MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
                         int *bind, int *readonly, int *continuous, int *atomic)
{
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    rc = rc == MPI_SUCCESS ? check_pvar_index(SHIM_FN, pvar_index) : rc;
    if (rc == MPI_SUCCESS) {
        copy_out(name, name_len, pvars[pvar_index].name);
        copy_out(desc, desc_len, pvars[pvar_index].desc);
        set_int(verbosity, MPI_T_VERBOSITY_USER_BASIC);
        set_int(var_class, pvars[pvar_index].var_class);
        if (datatype) {
            *datatype = MPI_UNSIGNED_LONG_LONG;
        }
        if (enumtype) {
            *enumtype = MPI_T_ENUM_NULL;
        }
        set_int(bind, MPI_T_BIND_NO_OBJECT);
        set_int(readonly, !pvar_is_counter(pvar_index));
        set_int(continuous, 1);
        set_int(atomic, 0);
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_pvar_get_index = PMPI_T_pvar_get_index
int PMPI_T_pvar_get_index(const char *name, int var_class, int *pvar_index)
{
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    if (rc == MPI_SUCCESS && (!name || !pvar_index)) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "name or pvar_index is NULL");
    }
    for (int i = 0; rc == MPI_SUCCESS && i < NUM_PVARS; i++) {
        if (pvars[i].var_class == var_class && strcmp(pvars[i].name, name) == 0) {
            *pvar_index = i;
            T_UNLOCK();
            return MPI_SUCCESS;
        }
    }
    T_UNLOCK();
    return rc != MPI_SUCCESS ? rc
                             : t_fail(SHIM_FN, MPI_T_ERR_INVALID_NAME,
                                      "no performance variable of that name and class");
}

#pragma weak MPI_T_pvar_session_create = PMPI_T_pvar_session_create
int PMPI_T_pvar_session_create(MPI_T_pvar_session *session)
{
    struct mpishim_t_pvar_session *s = NULL;
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    if (rc == MPI_SUCCESS && !session) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "session is NULL");
    }
    if (rc == MPI_SUCCESS && !(s = calloc(1, sizeof(*s)))) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_MEMORY, "no memory for a session");
    }
    if (rc == MPI_SUCCESS) {
        s->magic = SESSION_MAGIC;
        s->next = t_sessions;
        t_sessions = s;
        *session = s;
    }
    T_UNLOCK();
    return rc;
}

/* The live session s, unlinked when take. */
static bool find_session(struct mpishim_t_pvar_session *s, bool take)
{
    for (struct mpishim_t_pvar_session **p = &t_sessions; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = take ? s->next : *p;
            return true;
        }
    }
    return false;
}

static int check_session(const char *fn, MPI_T_pvar_session s)
{
    int rc = check_init(fn);

    if (rc == MPI_SUCCESS && !find_session(s, false)) {
        rc = t_fail(fn, MPI_T_ERR_INVALID_SESSION, "not a live session");
    }
    return rc;
}

#pragma weak MPI_T_pvar_session_free = PMPI_T_pvar_session_free
int PMPI_T_pvar_session_free(MPI_T_pvar_session *session)
{
    int rc;

    T_LOCK();
    rc = check_session(SHIM_FN, session ? *session : NULL);
    if (rc == MPI_SUCCESS) {
        struct mpishim_t_pvar_session *s = *session;

        find_session(s, true);
        while (s->handles) {
            struct mpishim_t_pvar_handle *h = s->handles;
            s->handles = h->next;
            h->magic = 0;
            free(h);
        }
        s->magic = 0;
        free(s);
        *session = MPI_T_PVAR_SESSION_NULL;
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_pvar_handle_alloc = PMPI_T_pvar_handle_alloc
int PMPI_T_pvar_handle_alloc(MPI_T_pvar_session session, int pvar_index, void *obj_handle,
                             MPI_T_pvar_handle *handle, int *count)
{
    struct mpishim_t_pvar_handle *h = NULL;
    int rc;

    T_LOCK();
    rc = check_session(SHIM_FN, session);
    rc = rc == MPI_SUCCESS ? check_pvar_index(SHIM_FN, pvar_index) : rc;
    if (rc == MPI_SUCCESS && (!handle || !count)) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "handle or count is NULL");
    }
    if (rc == MPI_SUCCESS && !(h = calloc(1, sizeof(*h)))) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_MEMORY, "no memory for a handle");
    }
    if (rc == MPI_SUCCESS) {
        h->magic = PVAR_MAGIC;
        h->index = pvar_index;
        /* A counter's handle starts at 0 (MPI-3.1 14.3.7); levels read the live value. */
        h->mark = pvar_is_counter(pvar_index) ? pvar_raw(pvar_index) : 0;
        h->next = session->handles;
        session->handles = h;
        *handle = h;
        *count = 1;
    }
    T_UNLOCK();
    return rc;
}

/* The live handle h of session s, unlinked when take. */
static bool find_pvar(struct mpishim_t_pvar_session *s, struct mpishim_t_pvar_handle *h, bool take)
{
    for (struct mpishim_t_pvar_handle **p = &s->handles; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = take ? h->next : *p;
            return true;
        }
    }
    return false;
}

static int check_pvar_handle(const char *fn, MPI_T_pvar_session s, MPI_T_pvar_handle h)
{
    int rc = check_session(fn, s);

    if (rc == MPI_SUCCESS && !find_pvar(s, h, false)) {
        rc = t_fail(fn, MPI_T_ERR_INVALID_HANDLE,
                    h == MPI_T_PVAR_ALL_HANDLES ? "MPI_T_PVAR_ALL_HANDLES is not allowed here"
                                                : "not a live handle of this session");
    }
    return rc;
}

#pragma weak MPI_T_pvar_handle_free = PMPI_T_pvar_handle_free
int PMPI_T_pvar_handle_free(MPI_T_pvar_session session, MPI_T_pvar_handle *handle)
{
    int rc;

    T_LOCK();
    rc = check_pvar_handle(SHIM_FN, session, handle ? *handle : NULL);
    if (rc == MPI_SUCCESS) {
        find_pvar(session, *handle, true);
        (*handle)->magic = 0;
        free(*handle);
        *handle = MPI_T_PVAR_HANDLE_NULL;
    }
    T_UNLOCK();
    return rc;
}

/* Every variable is continuous: starting or stopping one handle is refused, and
 * MPI_T_PVAR_ALL_HANDLES (which skips continuous ones) has nothing to do. */
static int start_stop(const char *fn, MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    int rc;

    T_LOCK();
    rc = check_session(fn, session);
    if (rc == MPI_SUCCESS && handle != MPI_T_PVAR_ALL_HANDLES) {
        rc = check_pvar_handle(fn, session, handle);
        rc = rc == MPI_SUCCESS ? t_fail(fn, MPI_T_ERR_PVAR_NO_STARTSTOP,
                                        "the variable is continuous (always counting)")
                               : rc;
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_pvar_start = PMPI_T_pvar_start
int PMPI_T_pvar_start(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return start_stop(SHIM_FN, session, handle);
}

#pragma weak MPI_T_pvar_stop = PMPI_T_pvar_stop
int PMPI_T_pvar_stop(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    return start_stop(SHIM_FN, session, handle);
}

static uint64_t handle_value(const struct mpishim_t_pvar_handle *h)
{
    uint64_t raw = pvar_raw(h->index);

    return pvar_is_counter(h->index) ? h->value + (raw - h->mark) : raw;
}

/* Sets a counter handle's value to v from now on. */
static void handle_set(struct mpishim_t_pvar_handle *h, uint64_t v)
{
    h->mark = pvar_raw(h->index);
    h->value = v;
}

/* Reads a handle into buf (if any), then sets it to *set (if any). */
static int access_pvar(const char *fn, MPI_T_pvar_session session, MPI_T_pvar_handle handle,
                       void *buf, const uint64_t *set)
{
    int rc;

    T_LOCK();
    rc = check_pvar_handle(fn, session, handle);
    if (rc == MPI_SUCCESS && (set || !buf) && !pvar_is_counter(handle->index)) {
        rc = t_fail(fn, MPI_T_ERR_PVAR_NO_WRITE, "the variable is read-only (a level)");
    }
    if (rc == MPI_SUCCESS && buf) {
        *(unsigned long long *)buf = handle_value(handle);
    }
    if (rc == MPI_SUCCESS && set) {
        handle_set(handle, *set);
    }
    T_UNLOCK();
    return rc;
}

/* The init check, then buf: an uninitialised interface says so first, as everywhere. */
static int check_buf(const char *fn, const void *buf)
{
    int rc;

    T_LOCK();
    rc = check_init(fn);
    T_UNLOCK();
    return rc == MPI_SUCCESS && !buf ? t_fail(fn, MPI_T_ERR_INVALID, "buf is NULL") : rc;
}

#pragma weak MPI_T_pvar_read = PMPI_T_pvar_read
int PMPI_T_pvar_read(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    int rc = check_buf(SHIM_FN, buf);

    return rc != MPI_SUCCESS ? rc : access_pvar(SHIM_FN, session, handle, buf, NULL);
}

#pragma weak MPI_T_pvar_readreset = PMPI_T_pvar_readreset
int PMPI_T_pvar_readreset(MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf)
{
    static const uint64_t zero = 0;
    int rc = check_buf(SHIM_FN, buf);

    return rc != MPI_SUCCESS ? rc : access_pvar(SHIM_FN, session, handle, buf, &zero);
}

#pragma weak MPI_T_pvar_write = PMPI_T_pvar_write
int PMPI_T_pvar_write(MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf)
{
    uint64_t v;
    int rc = check_buf(SHIM_FN, buf);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    v = *(const unsigned long long *)buf;
    return access_pvar(SHIM_FN, session, handle, NULL, &v);
}

#pragma weak MPI_T_pvar_reset = PMPI_T_pvar_reset
int PMPI_T_pvar_reset(MPI_T_pvar_session session, MPI_T_pvar_handle handle)
{
    static const uint64_t zero = 0;
    int rc;

    if (handle != MPI_T_PVAR_ALL_HANDLES) {
        return access_pvar(SHIM_FN, session, handle, NULL, &zero);
    }
    /* Every writable handle of the session (MPI-3.1 14.3.7). */
    T_LOCK();
    rc = check_session(SHIM_FN, session);
    for (struct mpishim_t_pvar_handle *h = rc == MPI_SUCCESS ? session->handles : NULL; h;
         h = h->next) {
        if (pvar_is_counter(h->index)) {
            handle_set(h, 0);
        }
    }
    T_UNLOCK();
    return rc;
}

/* ---- categories ---- */

#pragma weak MPI_T_category_get_num = PMPI_T_category_get_num
int PMPI_T_category_get_num(int *num_cat)
{
    return get_num(SHIM_FN, num_cat, NUM_CATS, "num_cat is NULL");
}

static int check_cat_index(const char *fn, int c)
{
    int rc = check_init(fn);

    if (rc == MPI_SUCCESS && (c < 0 || c >= NUM_CATS)) {
        rc = t_fail(fn, MPI_T_ERR_INVALID_INDEX, "no category of that index");
    }
    return rc;
}

/* The members of category c: control variables (pvars false) or performance variables.
 * Stores at most len indices; returns how many there are. */
static int members(enum category c, bool perf, int len, int *indices)
{
    int n = 0, total = perf ? NUM_PVARS : MPS_CFG_COUNT;

    for (int i = 0; i < total; i++) {
        if ((perf ? pvar_category(i) : cvar_category(i)) != c) {
            continue;
        }
        if (indices && n < len) {
            indices[n] = i;
        }
        n++;
    }
    return n;
}

#pragma weak MPI_T_category_get_info = PMPI_T_category_get_info
int PMPI_T_category_get_info(int cat_index, char *name, int *name_len, char *desc, int *desc_len,
                             int *num_cvars, int *num_pvars, int *num_categories)
{
    int rc;

    T_LOCK();
    rc = check_cat_index(SHIM_FN, cat_index);
    if (rc == MPI_SUCCESS) {
        copy_out(name, name_len, cat_names[cat_index]);
        copy_out(desc, desc_len, cat_descs[cat_index]);
        set_int(num_cvars, members((enum category)cat_index, false, 0, NULL));
        set_int(num_pvars, members((enum category)cat_index, true, 0, NULL));
        set_int(num_categories, 0);
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_category_get_index = PMPI_T_category_get_index
int PMPI_T_category_get_index(const char *name, int *cat_index)
{
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    if (rc == MPI_SUCCESS && (!name || !cat_index)) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "name or cat_index is NULL");
    }
    for (int c = 0; rc == MPI_SUCCESS && c < NUM_CATS; c++) {
        if (strcmp(cat_names[c], name) == 0) {
            *cat_index = c;
            T_UNLOCK();
            return MPI_SUCCESS;
        }
    }
    T_UNLOCK();
    return rc != MPI_SUCCESS ? rc : t_fail(SHIM_FN, MPI_T_ERR_INVALID_NAME, "no such category");
}

static int category_members(const char *fn, int cat_index, bool perf, int len, int *indices)
{
    int rc;

    T_LOCK();
    rc = check_cat_index(fn, cat_index);
    if (rc == MPI_SUCCESS && len > 0 && !indices) {
        rc = t_fail(fn, MPI_T_ERR_INVALID, "indices is NULL");
    }
    if (rc == MPI_SUCCESS) {
        members((enum category)cat_index, perf, len, indices);
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_category_get_cvars = PMPI_T_category_get_cvars
int PMPI_T_category_get_cvars(int cat_index, int len, int indices[])
{
    return category_members(SHIM_FN, cat_index, false, len, indices);
}

#pragma weak MPI_T_category_get_pvars = PMPI_T_category_get_pvars
int PMPI_T_category_get_pvars(int cat_index, int len, int indices[])
{
    return category_members(SHIM_FN, cat_index, true, len, indices);
}

#pragma weak MPI_T_category_get_categories = PMPI_T_category_get_categories
int PMPI_T_category_get_categories(int cat_index, int len, int indices[])
{
    /* The categories are flat: none contains another. */
    return category_members(SHIM_FN, cat_index, false, 0, NULL);
}

#pragma weak MPI_T_category_changed = PMPI_T_category_changed
int PMPI_T_category_changed(int *update_number)
{
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    if (rc == MPI_SUCCESS && !update_number) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "update_number is NULL");
    } else if (rc == MPI_SUCCESS) {
        /* Variables and categories are fixed at build time: never changed. */
        *update_number = 0;
    }
    T_UNLOCK();
    return rc;
}

/* ---- events (MPI-4.0 15.3.8): none, and one time source ---- */

/* No event type exists, so no registration (made by MPI_T_event_handle_alloc from an event
 * index) and no instance (passed only to a callback) can: a tool that probes sees an empty
 * set, and whatever handle it passes is not one of ours. */
#define NUM_EVENTS 0

#pragma weak MPI_T_event_get_num = PMPI_T_event_get_num
int PMPI_T_event_get_num(int *num_events)
{
    return get_num(SHIM_FN, num_events, NUM_EVENTS, "num_events is NULL");
}

/* The init check, then the index check against no event at all. */
static int check_event_index(const char *fn, int i)
{
    int rc;

    T_LOCK();
    rc = check_init(fn);
    T_UNLOCK();
    return rc != MPI_SUCCESS ? rc : check_index(fn, i, NUM_EVENTS, "event type");
}

#pragma weak MPI_T_event_get_info = PMPI_T_event_get_info
int PMPI_T_event_get_info(int event_index, char *name, int *name_len, int *verbosity,
                          MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
                          int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc,
                          int *desc_len, int *bind)
{
    return check_event_index(SHIM_FN, event_index);
}

#pragma weak MPI_T_event_get_index = PMPI_T_event_get_index
int PMPI_T_event_get_index(const char *name, int *event_index)
{
    int rc;

    T_LOCK();
    rc = check_init(SHIM_FN);
    if (rc == MPI_SUCCESS && (!name || !event_index)) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "name or event_index is NULL");
    } else if (rc == MPI_SUCCESS) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID_NAME, "no event type (mpishim has none)");
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_event_handle_alloc = PMPI_T_event_handle_alloc
int PMPI_T_event_handle_alloc(int event_index, void *obj_handle, MPI_Info info,
                              MPI_T_event_registration *event_registration)
{
    return check_event_index(SHIM_FN, event_index);
}

/* Every call on a registration or an instance: after the init check, the handle is not
 * one (none exists). */
static int no_such_handle(const char *fn, const char *kind)
{
    char why[80];
    int rc;

    T_LOCK();
    rc = check_init(fn);
    T_UNLOCK();
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    snprintf(why, sizeof(why), "not an event %s (mpishim has no event types)", kind);
    return t_fail(fn, MPI_T_ERR_INVALID_HANDLE, why);
}

#pragma weak MPI_T_event_handle_set_info = PMPI_T_event_handle_set_info
int PMPI_T_event_handle_set_info(MPI_T_event_registration event_registration, MPI_Info info)
{
    return no_such_handle(SHIM_FN, "registration");
}

#pragma weak MPI_T_event_handle_get_info = PMPI_T_event_handle_get_info
int PMPI_T_event_handle_get_info(MPI_T_event_registration event_registration, MPI_Info *info_used)
{
    return no_such_handle(SHIM_FN, "registration");
}

#pragma weak MPI_T_event_register_callback = PMPI_T_event_register_callback
int PMPI_T_event_register_callback(MPI_T_event_registration event_registration,
                                   MPI_T_cb_safety cb_safety, MPI_Info info, void *user_data,
                                   MPI_T_event_cb_function event_cb_function)
{
    return no_such_handle(SHIM_FN, "registration");
}

#pragma weak MPI_T_event_callback_set_info = PMPI_T_event_callback_set_info
int PMPI_T_event_callback_set_info(MPI_T_event_registration event_registration,
                                   MPI_T_cb_safety cb_safety, MPI_Info info)
{
    return no_such_handle(SHIM_FN, "registration");
}

#pragma weak MPI_T_event_callback_get_info = PMPI_T_event_callback_get_info
int PMPI_T_event_callback_get_info(MPI_T_event_registration event_registration,
                                   MPI_T_cb_safety cb_safety, MPI_Info *info_used)
{
    return no_such_handle(SHIM_FN, "registration");
}

#pragma weak MPI_T_event_handle_free = PMPI_T_event_handle_free
int PMPI_T_event_handle_free(MPI_T_event_registration event_registration, void *user_data,
                             MPI_T_event_free_cb_function free_cb_function)
{
    return no_such_handle(SHIM_FN, "registration");
}

#pragma weak MPI_T_event_set_dropped_handler = PMPI_T_event_set_dropped_handler
int PMPI_T_event_set_dropped_handler(MPI_T_event_registration event_registration,
                                     MPI_T_event_dropped_cb_function dropped_cb_function)
{
    return no_such_handle(SHIM_FN, "registration");
}

#pragma weak MPI_T_event_read = PMPI_T_event_read
int PMPI_T_event_read(MPI_T_event_instance event_instance, int element_index, void *buffer)
{
    return no_such_handle(SHIM_FN, "instance");
}

#pragma weak MPI_T_event_copy = PMPI_T_event_copy
int PMPI_T_event_copy(MPI_T_event_instance event_instance, void *buffer)
{
    return no_such_handle(SHIM_FN, "instance");
}

#pragma weak MPI_T_event_get_timestamp = PMPI_T_event_get_timestamp
int PMPI_T_event_get_timestamp(MPI_T_event_instance event_instance, MPI_Count *event_timestamp)
{
    return no_such_handle(SHIM_FN, "instance");
}

#pragma weak MPI_T_event_get_source = PMPI_T_event_get_source
int PMPI_T_event_get_source(MPI_T_event_instance event_instance, int *source_index)
{
    return no_such_handle(SHIM_FN, "instance");
}

/* The one source: the monotonic clock in nanoseconds, which any event would be stamped
 * with. A tool can read it (MPI_T_source_get_timestamp) to align its own timeline. */
#pragma weak MPI_T_source_get_num = PMPI_T_source_get_num
int PMPI_T_source_get_num(int *num_sources)
{
    return get_num(SHIM_FN, num_sources, 1, "num_sources is NULL");
}

static int check_source_index(const char *fn, int i)
{
    int rc = check_init(fn);

    return rc != MPI_SUCCESS ? rc : check_index(fn, i, 1, "source");
}

#pragma weak MPI_T_source_get_info = PMPI_T_source_get_info
int PMPI_T_source_get_info(int source_index, char *name, int *name_len, char *desc, int *desc_len,
                           MPI_T_source_order *ordering, MPI_Count *ticks_per_second,
                           MPI_Count *max_ticks, MPI_Info *info)
{
    int rc;

    T_LOCK();
    rc = check_source_index(SHIM_FN, source_index);
    if (rc == MPI_SUCCESS) {
        copy_out(name, name_len, "mpishim_clock");
        copy_out(desc, desc_len, "the monotonic clock of this process, in nanoseconds");
        if (ordering) {
            *ordering = MPI_T_SOURCE_ORDERED;
        }
        if (ticks_per_second) {
            *ticks_per_second = 1000000000;
        }
        if (max_ticks) {
            *max_ticks = LLONG_MAX;
        }
        if (info) {
            /* No hints: the caller has nothing to free. */
            *info = MPI_INFO_NULL;
        }
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_source_get_timestamp = PMPI_T_source_get_timestamp
int PMPI_T_source_get_timestamp(int source_index, MPI_Count *timestamp)
{
    struct timespec ts;
    int rc;

    T_LOCK();
    rc = check_source_index(SHIM_FN, source_index);
    if (rc == MPI_SUCCESS && !timestamp) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "timestamp is NULL");
    } else if (rc == MPI_SUCCESS) {
        clock_gettime(CLOCK_MONOTONIC, &ts);
        *timestamp = (MPI_Count)ts.tv_sec * 1000000000 + ts.tv_nsec;
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_category_get_num_events = PMPI_T_category_get_num_events
int PMPI_T_category_get_num_events(int cat_index, int *num_events)
{
    int rc;

    T_LOCK();
    rc = check_cat_index(SHIM_FN, cat_index);
    if (rc == MPI_SUCCESS && !num_events) {
        rc = t_fail(SHIM_FN, MPI_T_ERR_INVALID, "num_events is NULL");
    } else if (rc == MPI_SUCCESS) {
        *num_events = NUM_EVENTS;
    }
    T_UNLOCK();
    return rc;
}

#pragma weak MPI_T_category_get_events = PMPI_T_category_get_events
int PMPI_T_category_get_events(int cat_index, int len, int indices[])
{
    /* No category holds an event: nothing is stored. */
    return category_members(SHIM_FN, cat_index, false, 0, NULL);
}
