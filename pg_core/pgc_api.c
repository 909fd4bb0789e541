/*
 * pgc_api.c - the pgc_ process-group API: initialization, groups, point-to-point, and the
 * argument checks and error messages shared by the other pgc_*.c files.
 *
 * Every entry point checks its arguments before it starts anything, so a failed call
 * leaves no operation behind, and records a message "pgc_call on <group>: cause" that
 * pgc_last_error() returns.
 */
#include "config.h"

#include "mps_config.h"
#include "mps_log.h"
#include "pg_internal.h"
#include "pgc_internal.h"
#include "pg_device.h"
#include "pgc_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pgc_initialized;

static struct {
    bool owns_world; /* false when MPI_Init created the world before us */
    const char *backend;
} pgc_state;

pgc_debug_level pgc_debug;

/* ---- errors, names, checks ---- */

const char *pgc_last_error(void)
{
    return mps_last_error();
}

void pgc_group_desc(struct pg_group *g, char *buf, size_t len)
{
    size_t off;

    if (!g) {
        snprintf(buf, len, "no group");
        return;
    }
    if (g == pg_world_group()) {
        snprintf(buf, len, "world (%d ranks)", g->size);
        return;
    }
    off = (size_t)snprintf(buf, len, "group of %d ranks [", g->size);
    for (int i = 0; i < g->size && off + 16 < len; i++) {
        if (i == 8 && g->size > 9) {
            off += (size_t)snprintf(buf + off, len - off, " ...");
            break;
        }
        off += (size_t)snprintf(buf + off, len - off, i ? " %d" : "%d", g->ranks[i]);
    }
    if (off + 2 <= len) {
        snprintf(buf + off, len - off, "]");
    }
}

int pgc_wrap(int status, const char *fmt, ...)
{
    char prefix[256], cause[512];
    va_list ap;

    /* Copy the previous cause first: mps_error formats into the same buffer. */
    snprintf(cause, sizeof(cause), "%s", mps_last_error());
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    return mps_error(status, "%s: %s", prefix, cause);
}

void pgc_call_desc(const char *call, struct pg_group *g, char *buf, size_t len)
{
    char gd[96];

    pgc_group_desc(g, gd, sizeof(gd));
    snprintf(buf, len, "%s (rank %d) on %s", call, pg_world_rank(), gd);
}

int pgc_fail(int status, const char *call, struct pg_group *g, const char *fmt, ...)
{
    char cause[320], cd[160];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cause, sizeof(cause), fmt, ap);
    va_end(ap);
    if (!g) {
        return mps_error(status, "%s: %s", call, cause);
    }
    pgc_call_desc(call, g, cd, sizeof(cd));
    return mps_error(status, "%s: %s", cd, cause);
}

int pgc_resolve_group_slow(const char *call, pgc_group *in, struct pg_group **out)
{
    struct pg_group *g = pgc_pg(in);

    if (!pgc_initialized) {
        return pgc_fail(PGC_ERR_NOT_INITIALIZED, call, NULL,
                        "the process group is not initialized (call pgc_init_process_group)");
    }
    if (!g) {
        g = pg_world_group();
    }
    if (g->rank < 0 || g->rank >= g->size) {
        return pgc_fail(PGC_ERR_INVALID_GROUP, call, g, "this process is not a member");
    }
    *out = g;
    return PGC_OK;
}

enum pg_dtype pgc_to_pg_dtype(pgc_dtype dt)
{
    static const enum pg_dtype map[PGC_DTYPE_COUNT] = {
        [PGC_INT8] = PG_INT8,     [PGC_UINT8] = PG_UINT8,     [PGC_INT32] = PG_INT32,
        [PGC_INT64] = PG_INT64,   [PGC_FLOAT16] = PG_FLOAT16, [PGC_BFLOAT16] = PG_BFLOAT16,
        [PGC_FLOAT32] = PG_FLOAT, [PGC_FLOAT64] = PG_DOUBLE,
    };
    return (unsigned)dt < PGC_DTYPE_COUNT ? map[dt] : PG_DTYPE_NONE;
}

size_t pgc_dtype_size(pgc_dtype dt)
{
    enum pg_dtype p = pgc_to_pg_dtype(dt);

    return p == PG_DTYPE_NONE ? 0 : pg_dtype_size(p);
}

const char *pgc_dtype_name(pgc_dtype dt)
{
    static const char *const names[PGC_DTYPE_COUNT] = {"int8",    "uint8",    "int32",   "int64",
                                                       "float16", "bfloat16", "float32", "float64"};
    return (unsigned)dt < PGC_DTYPE_COUNT ? names[dt] : "invalid";
}

const char *pgc_reduce_op_name(pgc_reduce_op op)
{
    static const char *const names[PGC_REDUCE_OP_COUNT] = {"SUM",  "PRODUCT", "MIN",  "MAX",
                                                           "BAND", "BOR",     "BXOR", "AVG"};
    return (unsigned)op < PGC_REDUCE_OP_COUNT ? names[op] : "invalid";
}

/* The checks every tensor gets; allow_cuda: the call has a device path. */
int pgc_check_tensor_slow(const char *call, struct pg_group *g, const pgc_tensor *t,
                          const char *what, bool allow_cuda)
{
    size_t esz;

    if (!t) {
        return pgc_fail(PGC_ERR_INVALID_ARG, call, g, "%s is NULL", what);
    }
    esz = pgc_dtype_size(t->dtype);
    if (esz == 0) {
        return pgc_fail(PGC_ERR_INVALID_DTYPE, call, g, "%s has dtype %d, not a pgc_dtype", what,
                        (int)t->dtype);
    }
    if (t->device == PGC_DEVICE_CUDA && !allow_cuda) {
        return pgc_fail(PGC_ERR_UNSUPPORTED, call, g,
                        "%s is a CUDA tensor; this call takes host tensors only (the device "
                        "path covers broadcast, reduce, all_reduce and all_gather_into_tensor)",
                        what);
    }
    if (t->device == PGC_DEVICE_CUDA && !pg_dev_present()) {
        return pgc_fail(PGC_ERR_UNSUPPORTED, call, g,
                        "%s is a CUDA tensor but this process has no usable CUDA device", what);
    }
    if (t->device != PGC_DEVICE_HOST && t->device != PGC_DEVICE_CUDA) {
        return pgc_fail(PGC_ERR_INVALID_ARG, call, g, "%s has device %d", what, (int)t->device);
    }
    if (t->numel > SIZE_MAX / esz) {
        return pgc_fail(PGC_ERR_INVALID_COUNT, call, g, "%s has %zu elements: too many", what,
                        t->numel);
    }
    if (t->numel && !t->data) {
        return pgc_fail(PGC_ERR_BUFFER, call, g, "%s has %zu elements but NULL data", what,
                        t->numel);
    }
    return PGC_OK;
}

int pgc_op_spec(const char *call, struct pg_group *g, pgc_reduce_op op, pgc_dtype dt,
                struct pg_op_spec *spec)
{
    static const enum pg_op map[PGC_REDUCE_OP_COUNT] = {
        [PGC_SUM] = PG_OP_SUM,   [PGC_PRODUCT] = PG_OP_PROD, [PGC_MIN] = PG_OP_MIN,
        [PGC_MAX] = PG_OP_MAX,   [PGC_BAND] = PG_OP_BAND,    [PGC_BOR] = PG_OP_BOR,
        [PGC_BXOR] = PG_OP_BXOR, [PGC_AVG] = PG_OP_SUM,
    };
    enum pg_dtype pdt = pgc_to_pg_dtype(dt);

    if ((unsigned)op >= PGC_REDUCE_OP_COUNT) {
        return pgc_fail(PGC_ERR_INVALID_OP, call, g, "reduce op %d is not a pgc_reduce_op",
                        (int)op);
    }
    if (!pg_op_valid(map[op], pdt)) {
        return pgc_fail(PGC_ERR_INVALID_OP, call, g, "%s is not defined on %s",
                        pgc_reduce_op_name(op), pgc_dtype_name(dt));
    }
    *spec = (struct pg_op_spec){
        .dt = pdt, .op = map[op], .elem_size = pg_dtype_size(pdt), .commutative = true};
    return PGC_OK;
}

/* ---- the DETAIL argument check ---- */

void pgc_set_debug_level(pgc_debug_level level)
{
    pgc_debug = level;
}

pgc_debug_level pgc_get_debug_level(void)
{
    return pgc_debug;
}

static pgc_debug_level debug_from_env(void)
{
    const char *s = mps_config_str(MPS_CFG_PGC_DEBUG);

    if (strcmp(s, "detail") == 0 || strcmp(s, "DETAIL") == 0) {
        return PGC_DEBUG_DETAIL;
    }
    if (strcmp(s, "info") == 0 || strcmp(s, "INFO") == 0) {
        return PGC_DEBUG_INFO;
    }
    return PGC_DEBUG_OFF;
}

struct pgc_fingerprint {
    int32_t call_hash, dtype, op, root;
    uint64_t numel;
};

static int32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s) {
        h = (h ^ (unsigned char)*s++) * 16777619u;
    }
    return (int32_t)h;
}

static int compare_fingerprints(const char *call, struct pg_group *g,
                                const struct pgc_fingerprint *all)
{
    for (int i = 1; i < g->size; i++) {
        const struct pgc_fingerprint *a = &all[0], *b = &all[i];
        if (a->call_hash != b->call_hash) {
            return pgc_fail(PGC_ERR_MISMATCH, call, g,
                            "rank %d called a different collective than rank 0", i);
        }
        if (a->dtype != b->dtype || a->op != b->op || a->root != b->root) {
            return pgc_fail(PGC_ERR_MISMATCH, call, g,
                            "rank %d passes dtype %d, op %d, root %d where rank 0 passes dtype "
                            "%d, op %d, root %d",
                            i, b->dtype, b->op, b->root, a->dtype, a->op, a->root);
        }
        if (a->numel != b->numel) {
            return pgc_fail(PGC_ERR_MISMATCH, call, g,
                            "rank %d passes %llu elements where rank 0 passes %llu", i,
                            (unsigned long long)b->numel, (unsigned long long)a->numel);
        }
    }
    return PGC_OK;
}

int pgc_check_args_detail(const char *call, struct pg_group *g, int dtype, int op, int root,
                          uint64_t numel)
{
    struct pgc_fingerprint mine, *all;
    int rc;

    mine = (struct pgc_fingerprint){hash_name(call), dtype, op, root, numel};
    all = malloc(sizeof(*all) * (size_t)g->size);
    if (!all) {
        return pgc_fail(PGC_ERR_NOMEM, call, g, "no memory for the argument check");
    }
    rc = pg_allgather(g, &mine, all, sizeof(mine));
    if (rc != PGC_OK) {
        rc = pgc_fail(rc, call, g, "argument check failed: %s", mps_last_error());
    } else {
        rc = compare_fingerprints(call, g, all);
    }
    free(all);
    return rc;
}

/* ---- initialization ---- */

static int parse_backend(const char *b, const char **out)
{
    if (!b || !*b || strcmp(b, "auto") == 0 || strcmp(b, "host") == 0 || strcmp(b, "gloo") == 0 ||
        strcmp(b, "mpi") == 0) {
        *out = "host";
        return PGC_OK;
    }
    if (strcmp(b, "nccl") == 0) {
#if HAVE_NCCL
        *out = "nccl";
        return PGC_OK;
#else
        return mps_error(PGC_ERR_UNSUPPORTED,
                         "pgc_init_process_group: backend \"nccl\" needs a build with NCCL");
#endif
    }
    return mps_error(PGC_ERR_INVALID_ARG,
                     "pgc_init_process_group: unknown backend \"%s\" (auto, host or nccl)", b);
}

static int start_world(const pgc_init_opts *o)
{
    const char *method = o->init_method;
    int size = o->world_size > 0 ? o->world_size : -1;
    int rank = size > 0 && o->rank >= 0 ? o->rank : -1;
    int rc;

    if (method && strcmp(method, "auto") == 0) {
        method = NULL;
    }
    if (pg_is_initialized()) {
        /* MPI_Init came first: the world is MPI's; the init method has been decided. */
        pgc_state.owns_world = false;
        return PGC_OK;
    }
    rc = pg_init(method, rank, size, o->timeout, true);
    if (rc != PGC_OK) {
        return pgc_wrap(rc, "pgc_init_process_group (init_method %s)", method ? method : "auto");
    }
    pgc_state.owns_world = true;
    return PGC_OK;
}

int pgc_init_process_group(const pgc_init_opts *opts)
{
    pgc_init_opts defaults = PGC_INIT_OPTS_DEFAULT;
    const char *backend = NULL;
    int rc;

    if (pgc_initialized) {
        return mps_error(PGC_ERR_ALREADY_INITIALIZED,
                         "pgc_init_process_group: the process group is already initialized");
    }
    if (!opts) {
        opts = &defaults;
    }
    rc = parse_backend(opts->backend, &backend);
    if (rc == PGC_OK && (rc = mps_config_validate()) != PGC_OK) {
        rc = pgc_wrap(rc, "pgc_init_process_group");
    }
    if (rc == PGC_OK) {
        rc = start_world(opts);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    pgc_state.backend = backend;
    pgc_debug = debug_from_env();
    pgc_initialized = true;
    /* The default store is optional (pgc_default_store explains a failure). */
    pgc_store_default_open();
    mps_clear_error();
    return PGC_OK;
}

int pgc_destroy_process_group(void)
{
    int rc = PGC_OK;

    if (!pgc_initialized) {
        return mps_error(PGC_ERR_NOT_INITIALIZED,
                         "pgc_destroy_process_group: the process group is not initialized");
    }
    pgc_store_default_close();
    pgc_initialized = false;
    if (pgc_state.owns_world && pg_is_initialized()) {
        rc = pg_finalize();
        if (rc != PGC_OK) {
            rc = pgc_wrap(rc, "pgc_destroy_process_group");
        }
    }
    pgc_state.owns_world = false;
    pgc_state.backend = NULL;
    return rc;
}

int pgc_is_initialized(void)
{
    return pgc_initialized && pg_is_initialized();
}

#define NEED_INIT(call)                                                                            \
    do {                                                                                           \
        if (!pgc_is_initialized()) {                                                               \
            return mps_error(PGC_ERR_NOT_INITIALIZED, "%s: the process group is not initialized",  \
                             call);                                                                \
        }                                                                                          \
    } while (0)

int pgc_get_rank(void)
{
    NEED_INIT("pgc_get_rank");
    return pg_world_rank();
}

int pgc_get_world_size(void)
{
    NEED_INIT("pgc_get_world_size");
    return pg_world_size();
}

int pgc_get_local_rank(void)
{
    NEED_INIT("pgc_get_local_rank");
    return pg_local_rank();
}

int pgc_get_local_world_size(void)
{
    NEED_INIT("pgc_get_local_world_size");
    return pg_local_size();
}

const char *pgc_get_backend(void)
{
    return pgc_is_initialized() ? pgc_state.backend : NULL;
}

/* ---- groups ---- */

pgc_group *pgc_group_world(void)
{
    return pgc_is_initialized() ? pgc_of(pg_world_group()) : NULL;
}

/* Every rank of a new group must be a distinct world rank. */
static int check_rank_list(const int *ranks, int n)
{
    int size = pg_world_size();
    char *seen;

    if (n < 1 || n > size) {
        return pgc_fail(PGC_ERR_INVALID_COUNT, "pgc_new_group", pg_world_group(),
                        "%d ranks for a world of %d", n, size);
    }
    seen = calloc((size_t)size, 1);
    if (!seen) {
        return mps_error(PGC_ERR_NOMEM, "pgc_new_group: no memory");
    }
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= size || seen[ranks[i]]) {
            int r = ranks[i];
            free(seen);
            return pgc_fail(PGC_ERR_INVALID_RANK, "pgc_new_group", pg_world_group(),
                            "rank %d is %s", r,
                            r < 0 || r >= size ? "outside the world" : "listed twice");
        }
        seen[ranks[i]] = 1;
    }
    free(seen);
    return PGC_OK;
}

int pgc_new_group(const int *ranks, int n, pgc_group **out)
{
    struct pg_group *world, *g = NULL;
    int rc;

    if (!out) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_new_group: NULL output");
    }
    *out = NULL;
    NEED_INIT("pgc_new_group");
    world = pg_world_group();
    if (ranks) {
        rc = check_rank_list(ranks, n);
        if (rc != PGC_OK) {
            return rc;
        }
        rc = pg_group_create(world, ranks, n, &g);
    } else {
        /* new_group(None): every rank, in a group with its own contexts. */
        rc = pg_group_dup(world, &g);
    }
    if (rc != PGC_OK) {
        return pgc_fail(rc, "pgc_new_group", world, "%s", mps_last_error());
    }
    *out = pgc_of(g);
    return PGC_OK;
}

int pgc_split_group(pgc_group *parent, int color, int key, pgc_group **out)
{
    struct pg_group *p, *g = NULL;
    int rc;

    if (!out) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_split_group: NULL output");
    }
    *out = NULL;
    rc = pgc_resolve_group("pgc_split_group", parent, &p);
    if (rc != PGC_OK) {
        return rc;
    }
    rc = pg_group_split(p, color < 0 ? -1 : color, key, &g);
    if (rc != PGC_OK) {
        return pgc_fail(rc, "pgc_split_group", p, "%s", mps_last_error());
    }
    *out = pgc_of(g);
    return PGC_OK;
}

int pgc_group_rank(pgc_group *group)
{
    struct pg_group *g;
    int rc = pgc_resolve_group("pgc_group_rank", group, &g);

    return rc == PGC_OK ? g->rank : rc;
}

int pgc_group_size(pgc_group *group)
{
    struct pg_group *g;
    int rc = pgc_resolve_group("pgc_group_size", group, &g);

    return rc == PGC_OK ? g->size : rc;
}

int pgc_get_group_rank(pgc_group *group, int global_rank)
{
    struct pg_group *g;
    int rc = pgc_resolve_group("pgc_get_group_rank", group, &g);
    int r;

    if (rc != PGC_OK) {
        return rc;
    }
    r = pg_group_rank_of(g, global_rank);
    if (r < 0) {
        return pgc_fail(PGC_ERR_INVALID_RANK, "pgc_get_group_rank", g,
                        "global rank %d is not a member", global_rank);
    }
    return r;
}

int pgc_get_global_rank(pgc_group *group, int group_rank)
{
    struct pg_group *g;
    int rc = pgc_resolve_group("pgc_get_global_rank", group, &g);

    if (rc != PGC_OK) {
        return rc;
    }
    if (group_rank < 0 || group_rank >= g->size) {
        return pgc_fail(PGC_ERR_INVALID_RANK, "pgc_get_global_rank", g,
                        "group rank %d outside 0..%d", group_rank, g->size - 1);
    }
    return g->ranks[group_rank];
}

int pgc_destroy_group(pgc_group *group)
{
    struct pg_group *g = pgc_pg(group);

    if (!g || !pg_is_initialized() || g == pg_world_group()) {
        return PGC_OK;
    }
    pg_group_release(g);
    return PGC_OK;
}

/* ---- point-to-point ---- */

static int check_p2p(const char *call, pgc_group *group, const pgc_tensor *t, int peer, bool any_ok,
                     int tag, struct pg_group **g)
{
    int rc = pgc_resolve_group(call, group, g);

    if (rc == PGC_OK) {
        rc = pgc_check_tensor(call, *g, t, "the tensor");
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (!(any_ok && peer == PGC_ANY_SOURCE) && (peer < 0 || peer >= (*g)->size)) {
        return pgc_fail(PGC_ERR_INVALID_RANK, call, *g, "peer rank %d outside 0..%d%s", peer,
                        (*g)->size - 1, any_ok ? " (or PGC_ANY_SOURCE)" : "");
    }
    if (tag < 0 || tag > PG_TAG_UB) {
        return pgc_fail(PGC_ERR_INVALID_TAG, call, *g, "tag %d outside 0..%d", tag, PG_TAG_UB);
    }
    return PGC_OK;
}

/* Posts one send or receive into w->req. */
static int post_p2p(struct pgc_work *w, bool send, const pgc_tensor *t, int peer, int tag)
{
    size_t bytes = t->numel * pgc_dtype_size(t->dtype);
    int rc;

    if (send) {
        rc = pg_isend(w->g, t->data, bytes, peer, tag, false, &w->req);
    } else {
        w->check_len = true;
        w->expect_len = bytes;
        rc = pg_irecv(w->g, t->data, bytes, peer == PGC_ANY_SOURCE ? PG_ANY_SOURCE : peer, tag,
                      &w->req);
    }
    if (rc != PGC_OK) {
        rc = pgc_fail(rc, w->call, w->g, "%s", mps_last_error());
    }
    return rc;
}

static int p2p(const char *call, bool send, const pgc_tensor *t, int peer, pgc_group *group,
               int tag, int async_op, pgc_work **work)
{
    struct pgc_work stack, *w = &stack;
    struct pg_group *g;
    int rc;

    if (async_op && !work) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: NULL work output", call);
    }
    if (work) {
        *work = NULL;
    }
    rc = check_p2p(call, group, t, peer, !send, tag, &g);
    if (rc != PGC_OK) {
        return rc;
    }
    if (async_op) {
        w = pgc_work_new(call, g);
        if (!w) {
            return PGC_ERR_NOMEM;
        }
    } else {
        pgc_work_init(w, call, g);
    }
    rc = post_p2p(w, send, t, peer, tag);
    if (rc != PGC_OK) {
        pgc_work_discard(w);
        return rc;
    }
    if (async_op) {
        return pgc_work_launch(w, 1, work);
    }
    rc = pgc_work_launch(w, 0, NULL);
    return rc == PGC_OK && !send ? stack.source : rc;
}

int pgc_send(const pgc_tensor *tensor, int dst, pgc_group *group, int tag)
{
    return p2p("pgc_send", true, tensor, dst, group, tag, 0, NULL);
}

int pgc_recv(pgc_tensor *tensor, int src, pgc_group *group, int tag)
{
    return p2p("pgc_recv", false, tensor, src, group, tag, 0, NULL);
}

int pgc_isend(const pgc_tensor *tensor, int dst, pgc_group *group, int tag, pgc_work **work)
{
    return p2p("pgc_isend", true, tensor, dst, group, tag, 1, work);
}

int pgc_irecv(pgc_tensor *tensor, int src, pgc_group *group, int tag, pgc_work **work)
{
    return p2p("pgc_irecv", false, tensor, src, group, tag, 1, work);
}

/* Checks every op of a batch before any starts. */
static int check_batch(const pgc_p2p_op *ops, int n, struct pg_group **groups)
{
    for (int i = 0; i < n; i++) {
        const char *call = "pgc_batch_isend_irecv";
        int rc;
        if (ops[i].op != PGC_ISEND && ops[i].op != PGC_IRECV) {
            return mps_error(PGC_ERR_INVALID_ARG, "%s: op %d has kind %d", call, i, (int)ops[i].op);
        }
        rc = check_p2p(call, ops[i].group, &ops[i].tensor, ops[i].peer, false, ops[i].tag,
                       &groups[i]);
        if (rc != PGC_OK) {
            return rc;
        }
    }
    return PGC_OK;
}

static int post_batch(struct pgc_work *w, const pgc_p2p_op *ops, struct pg_group **groups)
{
    for (int i = 0; i < w->nreqs; i++) {
        const pgc_tensor *t = &ops[i].tensor;
        size_t bytes = t->numel * pgc_dtype_size(t->dtype);
        int rc =
            ops[i].op == PGC_ISEND
                ? pg_isend(groups[i], t->data, bytes, ops[i].peer, ops[i].tag, false, &w->reqs[i])
                : pg_irecv(groups[i], t->data, bytes, ops[i].peer, ops[i].tag, &w->reqs[i]);
        if (rc != PGC_OK) {
            /* Cancel the receives already posted; sends must run to completion. */
            for (int j = 0; j < i; j++) {
                if (ops[j].op == PGC_IRECV) {
                    pg_cancel_recv(&w->reqs[j]);
                }
                pg_wait(&w->reqs[j], -1);
            }
            return pgc_fail(rc, w->call, groups[i], "op %d: %s", i, mps_last_error());
        }
    }
    return PGC_OK;
}

int pgc_batch_isend_irecv(const pgc_p2p_op *ops, int n, pgc_work **work)
{
    struct pg_group **groups = NULL;
    struct pgc_work *w = NULL;
    int rc;

    if (!work || (n > 0 && !ops) || n < 1) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_batch_isend_irecv: %d ops, ops %p, work %p", n,
                         (const void *)ops, (void *)work);
    }
    *work = NULL;
    groups = malloc(sizeof(*groups) * (size_t)n);
    w = pgc_work_new("pgc_batch_isend_irecv", NULL);
    if (!groups || !w) {
        rc = mps_error(PGC_ERR_NOMEM, "pgc_batch_isend_irecv: no memory for %d ops", n);
        goto fail;
    }
    rc = check_batch(ops, n, groups);
    if (rc != PGC_OK) {
        goto fail;
    }
    w->reqs = calloc((size_t)n, sizeof(struct pg_req));
    if (!w->reqs) {
        w->reqs = &w->req;
        rc = mps_error(PGC_ERR_NOMEM, "pgc_batch_isend_irecv: no memory for %d requests", n);
        goto fail;
    }
    w->nreqs = n;
    rc = post_batch(w, ops, groups);
    if (rc != PGC_OK) {
        goto fail;
    }
    free(groups);
    return pgc_work_launch(w, 1, work);
fail:
    free(groups);
    if (w) {
        pgc_work_discard(w);
    }
    return rc;
}
