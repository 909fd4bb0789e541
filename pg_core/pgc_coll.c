/*
 * pgc_coll.c - the pgc_ collectives: argument checks, then a pg collective (broadcast,
 * reduce, all_reduce, all_gather into a tensor, barrier) or a schedule built here for the
 * forms pg has no entry point for (scatter, gather, the list forms, reduce_scatter,
 * all_to_all), and monitored_barrier.
 *
 * The schedules built here are the direct ("linear") algorithms: every rank posts its
 * sends and receives to every peer at once and then does its local work. Cost per rank:
 * alpha (n - 1) + beta (n - 1) m for m bytes per block, the same bandwidth term as a ring
 * and fine up to moderate group sizes; they write straight into the caller's list tensors,
 * so the list forms need no packing copies. Local steps (a self copy, the reduction) come
 * after every communication step, because pg_sched runs a local step only once all earlier
 * communication completed.
 *
 * float16/bfloat16 SUM, AVG and PRODUCT are reduced in float32: the input is widened into
 * a scratch tensor owned by the work, reduced, and narrowed into the caller's tensor by the
 * work's finish step, so the result is rounded once and does not depend on the group size.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_coll2.h"
#include "pg_internal.h"
#include "pg_sched.h"
#include "pgc_internal.h"
#include "pg_device.h"
#include "pgc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t nbytes(const pgc_tensor *t)
{
    return t->numel * pgc_dtype_size(t->dtype);
}

/* ---- finish steps ---- */

static int finish_div(struct pgc_work *w)
{
    return pg_reduce_div(w->out, w->count, w->dt, w->divisor);
}

/* w->tmp holds count float32 results: divide (AVG) and narrow into the caller's tensor. */
static int finish_narrow(struct pgc_work *w)
{
    int rc = PGC_OK;

    if (w->divisor) {
        rc = pg_reduce_div(w->tmp, w->count, PG_FLOAT, w->divisor);
    }
    if (w->out_dtype == PGC_FLOAT16) {
        pg_f32_to_f16(w->tmp, w->out, w->count);
    } else {
        pg_f32_to_bf16(w->tmp, w->out, w->count);
    }
    return rc;
}

static bool needs_widening(pgc_dtype dt, pgc_reduce_op op)
{
    return (dt == PGC_FLOAT16 || dt == PGC_BFLOAT16) &&
           (op == PGC_SUM || op == PGC_AVG || op == PGC_PRODUCT);
}

static void widen(const void *src, float *dst, size_t n, pgc_dtype dt)
{
    if (dt == PGC_FLOAT16) {
        pg_f16_to_f32(src, dst, n);
    } else {
        pg_bf16_to_f32(src, dst, n);
    }
}

static struct pg_op_spec float_spec(const struct pg_op_spec *orig)
{
    return (struct pg_op_spec){
        .dt = PG_FLOAT, .op = orig->op, .elem_size = sizeof(float), .commutative = true};
}

/* Sets up the finish of a reduction whose result (count elements) belongs in t: a division
 * for AVG, or for a widened float16/bfloat16 (result in w->tmp) the narrowing into t. */
static void set_reduce_finish(struct pgc_work *w, pgc_reduce_op op, const pgc_tensor *t,
                              size_t count, bool widened)
{
    w->out = t->data;
    w->count = count;
    w->dt = pgc_to_pg_dtype(t->dtype);
    w->out_dtype = t->dtype;
    w->divisor = op == PGC_AVG ? w->g->size : 0;
    if (widened) {
        w->finish = finish_narrow;
    } else if (w->divisor) {
        w->finish = finish_div;
    }
}

/* ---- the common frame of every collective ---- */

static int coll_begin(const char *call, pgc_group *group, int async_op, pgc_work **work,
                      struct pg_group **g)
{
    if (async_op && !work) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s: async_op needs a work output", call);
    }
    if (work) {
        *work = NULL;
    }
    return pgc_resolve_group(call, group, g);
}

static struct pgc_work *coll_work(const char *call, struct pg_group *g, int async_op,
                                  struct pgc_work *stack)
{
    if (async_op) {
        return pgc_work_new(call, g);
    }
    pgc_work_init(stack, call, g);
    return stack;
}

/* rc: the result of starting the operation into w. */
static int coll_start(struct pgc_work *w, int rc, int async_op, pgc_work **work)
{
    if (rc != PGC_OK) {
        rc = pgc_fail(rc, w->call, w->g, "%s", mps_last_error());
        pgc_work_discard(w);
        return rc;
    }
    return pgc_work_launch(w, async_op, work);
}

/*
 * A blocking call on host memory runs pg's blocking form, the path MPI's twin takes (one
 * round in shared memory, or the direct algorithms): pg's non-blocking forms take the same
 * protocol for the same arguments, so ranks may mix async_op freely, as torch allows. That
 * holds for the node-aware forms too (pg_coll_hier.h: both run the same steps).
 * rc: the blocking form's result.
 */
static bool blocking_host(int async_op, const pgc_tensor *t)
{
    return !async_op && (!t || t->device != PGC_DEVICE_CUDA);
}

static int blocking_done(const char *call, struct pg_group *g, int rc)
{
    return rc == PGC_OK ? PGC_OK : pgc_fail(rc, call, g, "%s", mps_last_error());
}

static int check_root(const char *call, struct pg_group *g, int root)
{
    if (root < 0 || root >= g->size) {
        return pgc_fail(PGC_ERR_INVALID_RANK, call, g, "root %d outside 0..%d", root, g->size - 1);
    }
    return PGC_OK;
}

/* Every tensor of a list: valid, same dtype as ref, numel elements. */
static int check_list(const char *call, struct pg_group *g, const pgc_tensor *list,
                      const pgc_tensor *ref, size_t numel, bool any_numel)
{
    char what[48];

    if (!list) {
        return pgc_fail(PGC_ERR_INVALID_ARG, call, g, "NULL tensor list");
    }
    for (int i = 0; i < g->size; i++) {
        int rc;
        snprintf(what, sizeof(what), "tensor %d of the list", i);
        rc = pgc_check_tensor(call, g, &list[i], what);
        if (rc != PGC_OK) {
            return rc;
        }
        if (list[i].dtype != ref->dtype) {
            return pgc_fail(PGC_ERR_INVALID_DTYPE, call, g, "%s is %s, not %s", what,
                            pgc_dtype_name(list[i].dtype), pgc_dtype_name(ref->dtype));
        }
        if (!any_numel && list[i].numel != numel) {
            return pgc_fail(PGC_ERR_INVALID_COUNT, call, g, "%s has %zu elements, not %zu", what,
                            list[i].numel, numel);
        }
    }
    return PGC_OK;
}

static int same_dtype(const char *call, struct pg_group *g, const pgc_tensor *a,
                      const pgc_tensor *b)
{
    if (a->dtype != b->dtype) {
        return pgc_fail(PGC_ERR_INVALID_DTYPE, call, g, "input is %s but output is %s",
                        pgc_dtype_name(b->dtype), pgc_dtype_name(a->dtype));
    }
    return PGC_OK;
}

/* ---- broadcast, barrier ---- */

int pgc_broadcast(pgc_tensor *tensor, int src, pgc_group *group, int async_op, pgc_work **work)
{
    const char *call = "pgc_broadcast";
    struct pgc_work stack, *w;
    struct pg_group *g;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = pgc_check_tensor_dev(call, g, tensor, "the tensor");
    }
    if (rc == PGC_OK) {
        rc = check_root(call, g, src);
    }
    if (rc == PGC_OK) {
        rc = pgc_check_args(call, g, tensor->dtype, -1, src, tensor->numel);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (blocking_host(async_op, tensor)) {
        return blocking_done(call, g, pg_bcast(g, tensor->data, nbytes(tensor), src));
    }
    w = coll_work(call, g, async_op, &stack);
    if (!w) {
        return PGC_ERR_NOMEM;
    }
    rc = tensor->device == PGC_DEVICE_CUDA
             ? pg_dev_ibcast(g, tensor->data, nbytes(tensor), src, &w->req)
             : pg_ibcast(g, tensor->data, nbytes(tensor), src, &w->req);
    return coll_start(w, rc, async_op, work);
}

/* The work of a barrier that is not pg's blocking one; apart, so that the blocking call's
 * frame holds no work (its 8-byte round costs a hundred-odd instructions in all). */
static __attribute__((noinline)) int barrier_work(struct pg_group *g, int async_op,
                                                  pgc_work **work)
{
    struct pgc_work stack, *w = coll_work("pgc_barrier", g, async_op, &stack);

    if (!w) {
        return PGC_ERR_NOMEM;
    }
    return coll_start(w, pg_ibarrier(g, &w->req), async_op, work);
}

int pgc_barrier(pgc_group *group, int async_op, pgc_work **work)
{
    const char *call = "pgc_barrier";
    struct pg_group *g;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = pgc_check_args(call, g, -1, -1, -1, 0);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (blocking_host(async_op, NULL)) {
        return blocking_done(call, g, pg_barrier(g));
    }
    return barrier_work(g, async_op, work);
}

/* ---- reduce, all_reduce ---- */

/* Checks shared by the reductions; fills spec. */
static int check_reduction(const char *call, struct pg_group *g, const pgc_tensor *t,
                           pgc_reduce_op op, int root, struct pg_op_spec *spec)
{
    int rc = pgc_check_tensor_dev(call, g, t, "the tensor");

    if (rc == PGC_OK) {
        rc = pgc_op_spec(call, g, op, t->dtype, spec);
    }
    if (rc == PGC_OK && root >= 0) {
        rc = check_root(call, g, root);
    }
    if (rc == PGC_OK) {
        rc = pgc_check_args(call, g, t->dtype, op, root, t->numel);
    }
    return rc;
}

/* Widens t into a float32 scratch owned by w; NULL on no memory. */
static float *widen_into_work(struct pgc_work *w, const pgc_tensor *t, size_t extra)
{
    float *f = malloc(sizeof(float) * (t->numel + extra + 1));

    if (f) {
        widen(t->data, f, t->numel, t->dtype);
        w->tmp = f;
    }
    return f;
}

/* root >= 0: reduce to root; root < 0: all_reduce. */
static int reduction(const char *call, pgc_tensor *t, int root, pgc_reduce_op op, pgc_group *group,
                     int async_op, pgc_work **work)
{
    struct pgc_work stack, *w;
    struct pg_op_spec spec;
    struct pg_group *g;
    bool wide;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = check_reduction(call, g, t, op, root, &spec);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (blocking_host(async_op, t) && op != PGC_AVG && !needs_widening(t->dtype, op)) {
        rc = root < 0 ? pg_allreduce(g, t->data, t->data, t->numel, &spec)
                      : pg_reduce(g, t->data, t->data, t->numel, &spec, root);
        return blocking_done(call, g, rc);
    }
    w = coll_work(call, g, async_op, &stack);
    if (!w) {
        return PGC_ERR_NOMEM;
    }
    if (t->device == PGC_DEVICE_CUDA) {
        /* NCCL (or its staging fallback) reduces fp16/bf16 and divides AVG itself. */
        if (op == PGC_AVG) {
            spec.op = PG_OP_AVG;
        }
        rc = root < 0 ? pg_dev_iallreduce(g, t->data, t->data, t->numel, &spec, &w->req)
                      : pg_dev_ireduce(g, t->data, t->data, t->numel, &spec, root, &w->req);
        return coll_start(w, rc, async_op, work);
    }
    wide = needs_widening(t->dtype, op);
    void *buf = t->data;
    if (wide) {
        buf = widen_into_work(w, t, 0);
        if (!buf) {
            rc = mps_error(PGC_ERR_NOMEM, "no memory for a float32 copy of %zu elements", t->numel);
            return coll_start(w, rc, async_op, work);
        }
        spec = float_spec(&spec);
    }
    if (root < 0 || g->rank == root) {
        set_reduce_finish(w, op, t, t->numel, wide);
    }
    if (root < 0) {
        rc = pg_iallreduce(g, buf, buf, t->numel, &spec, &w->req);
    } else {
        rc = pg_ireduce(g, buf, buf, t->numel, &spec, root, &w->req);
    }
    return coll_start(w, rc, async_op, work);
}

int pgc_reduce(pgc_tensor *tensor, int dst, pgc_reduce_op op, pgc_group *group, int async_op,
               pgc_work **work)
{
    if (dst < 0) {
        /* A negative root must not select the all_reduce path. */
        struct pg_group *g;
        int rc = pgc_resolve_group("pgc_reduce", group, &g);
        return rc != PGC_OK ? rc : check_root("pgc_reduce", g, dst);
    }
    return reduction("pgc_reduce", tensor, dst, op, group, async_op, work);
}

int pgc_all_reduce(pgc_tensor *tensor, pgc_reduce_op op, pgc_group *group, int async_op,
                   pgc_work **work)
{
    return reduction("pgc_all_reduce", tensor, -1, op, group, async_op, work);
}

/* ---- the list forms: MPI's algorithms on one contiguous buffer ---- */

/*
 * torch passes gather, scatter and all_gather one tensor per rank. They run the algorithms
 * of MPI_Gather, MPI_Scatter and MPI_Allgather on one buffer of n blocks: the list's own
 * when its tensors lie end to end, else scratch that is filled from them before (scatter)
 * or copied into them after (gather, all_gather, by the work's finish). Which of the two a
 * rank uses changes how it copies, never the protocol the group runs.
 */

/* Whether the n tensors of list lie end to end, bytes each. */
static bool list_flat(const pgc_tensor *list, int n, size_t bytes)
{
    for (int i = 1; i < n && bytes; i++) {
        if ((const char *)list[i].data != (const char *)list[0].data + (size_t)i * bytes) {
            return false;
        }
    }
    return true;
}

/* Scratch of n blocks of bytes keeps the addresses of the tensors they go to behind them,
 * from this offset on. */
static size_t list_addrs_at(int n, size_t bytes)
{
    return ((size_t)n * bytes + sizeof(void *) - 1) / sizeof(void *) * sizeof(void *);
}

static void **list_addrs(void *scratch, int n, size_t bytes)
{
    return (void **)((char *)scratch + list_addrs_at(n, bytes));
}

/* w->tmp holds the n blocks of w->count bytes: each to its tensor. */
static int finish_unpack_list(struct pgc_work *w)
{
    void **to = list_addrs(w->tmp, w->g->size, w->count);

    for (int i = 0; i < w->g->size; i++) {
        memcpy(to[i], (char *)w->tmp + (size_t)i * w->count, w->count);
    }
    return PGC_OK;
}

/* One buffer for the n tensors of list, bytes each (see above), in *out: the list's own
 * (NULL for tensors of no elements, which may have none), or scratch owned by w, packed
 * from the tensors now (pack) or unpacked into them by w's finish. */
static int list_buffer(struct pgc_work *w, const pgc_tensor *list, size_t bytes, bool pack,
                       char **out)
{
    int n = w->g->size;
    void **to;

    if (list_flat(list, n, bytes)) {
        *out = list[0].data;
        return PGC_OK;
    }
    w->tmp = malloc(list_addrs_at(n, bytes) + (size_t)n * sizeof(void *));
    if (!w->tmp) {
        return mps_error(PGC_ERR_NOMEM, "no memory for %d x %zu bytes", n, bytes);
    }
    to = list_addrs(w->tmp, n, bytes);
    for (int i = 0; i < n; i++) {
        if (pack) {
            memcpy((char *)w->tmp + (size_t)i * bytes, list[i].data, bytes);
        }
        to[i] = list[i].data;
    }
    if (!pack) {
        w->count = bytes;
        w->finish = finish_unpack_list;
    }
    *out = w->tmp;
    return PGC_OK;
}

/* Scatter (the root's list to one tensor per rank) or gather (the reverse): the same
 * checks; MPI_Scatter's and MPI_Gather's binomial trees. */
static int rooted_list(const char *call, pgc_tensor *one, pgc_tensor *list, int root,
                       bool gather, pgc_group *group, int async_op, pgc_work **work)
{
    const char *what = gather ? "the input" : "the output";
    struct pgc_work stack, *w;
    struct pg_group *g;
    size_t n;
    char *all = NULL;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = pgc_check_tensor(call, g, one, what);
    }
    if (rc == PGC_OK) {
        rc = check_root(call, g, root);
    }
    if (rc == PGC_OK && g->rank == root) {
        rc = check_list(call, g, list, one, one->numel, false);
    }
    if (rc == PGC_OK) {
        rc = pgc_check_args(call, g, one->dtype, -1, root, one->numel);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    w = coll_work(call, g, async_op, &stack);
    if (!w) {
        return PGC_ERR_NOMEM;
    }
    n = nbytes(one);
    if (g->rank != root) {
        rc = gather ? pg_igather(g, one->data, NULL, n, root, &w->req)
                    : pg_iscatter(g, NULL, one->data, n, root, &w->req);
    } else if ((rc = list_buffer(w, list, n, !gather, &all)) == PGC_OK && gather) {
        /* The root's own block goes in place first (the input may be that very block). */
        if (n && one->data != all + (size_t)root * n) {
            memcpy(all + (size_t)root * n, one->data, n);
        }
        rc = pg_igather(g, all + (size_t)root * n, all, n, root, &w->req);
    } else if (rc == PGC_OK) {
        rc = pg_iscatter(g, all, one->data, n, root, &w->req);
    }
    return coll_start(w, rc, async_op, work);
}

int pgc_scatter(pgc_tensor *output, const pgc_tensor *scatter_list, int src, pgc_group *group,
                int async_op, pgc_work **work)
{
    return rooted_list("pgc_scatter", output, (pgc_tensor *)scatter_list, src, false, group,
                       async_op, work);
}

int pgc_gather(const pgc_tensor *input, pgc_tensor *gather_list, int dst, pgc_group *group,
               int async_op, pgc_work **work)
{
    return rooted_list("pgc_gather", (pgc_tensor *)input, gather_list, dst, true, group,
                       async_op, work);
}

/* ---- all_gather ---- */

/* MPI_Allgather's path: blocking, pg's blocking form (into the buffer, then the tensors),
 * async its non-blocking twin. */
int pgc_all_gather(pgc_tensor *output_list, const pgc_tensor *input, pgc_group *group, int async_op,
                   pgc_work **work)
{
    const char *call = "pgc_all_gather";
    struct pgc_work stack, *w;
    struct pg_group *g;
    char *all;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = pgc_check_tensor(call, g, input, "the input");
    }
    if (rc == PGC_OK) {
        rc = check_list(call, g, output_list, input, input->numel, false);
    }
    if (rc == PGC_OK) {
        rc = pgc_check_args(call, g, input->dtype, -1, -1, input->numel);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    w = coll_work(call, g, async_op, &stack);
    if (!w) {
        return PGC_ERR_NOMEM;
    }
    rc = list_buffer(w, output_list, nbytes(input), false, &all);
    if (rc == PGC_OK && blocking_host(async_op, input)) {
        rc = pg_allgather(g, input->data, all, nbytes(input));
        if (rc == PGC_OK && w->finish) {
            rc = w->finish(w);
        }
        pgc_work_discard(w);
        return blocking_done(call, g, rc);
    }
    if (rc == PGC_OK) {
        rc = pg_iallgather(g, input->data, all, nbytes(input), &w->req);
    }
    return coll_start(w, rc, async_op, work);
}

int pgc_all_gather_into_tensor(pgc_tensor *output, const pgc_tensor *input, pgc_group *group,
                               int async_op, pgc_work **work)
{
    const char *call = "pgc_all_gather_into_tensor";
    struct pgc_work stack, *w;
    struct pg_group *g;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = pgc_check_tensor_dev(call, g, input, "the input");
    }
    if (rc == PGC_OK) {
        rc = pgc_check_tensor_dev(call, g, output, "the output");
    }
    if (rc == PGC_OK && input->device != output->device) {
        rc = pgc_fail(PGC_ERR_INVALID_ARG, call, g, "the input and output are on different devices");
    }
    if (rc == PGC_OK) {
        rc = same_dtype(call, g, output, input);
    }
    if (rc == PGC_OK &&
        (output->numel % (size_t)g->size || output->numel / (size_t)g->size != input->numel)) {
        rc = pgc_fail(PGC_ERR_INVALID_COUNT, call, g,
                      "the output has %zu elements; it needs %d x %zu (group size x input)",
                      output->numel, g->size, input->numel);
    }
    if (rc == PGC_OK) {
        rc = pgc_check_args(call, g, input->dtype, -1, -1, input->numel);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (blocking_host(async_op, input)) {
        return blocking_done(call, g, pg_allgather(g, input->data, output->data, nbytes(input)));
    }
    w = coll_work(call, g, async_op, &stack);
    if (!w) {
        return PGC_ERR_NOMEM;
    }
    rc = input->device == PGC_DEVICE_CUDA
             ? pg_dev_iallgather(g, input->data, output->data, nbytes(input), &w->req)
             : pg_iallgather(g, input->data, output->data, nbytes(input), &w->req);
    return coll_start(w, rc, async_op, work);
}

/* ---- reduce_scatter ---- */

/*
 * blocks[i]: my contribution to rank i (count elements of spec). Rank order reduction:
 * out = b0 op (b1 op (... op b(n-1))), where bj is rank j's block for me. My own block is
 * copied into scratch first, so that out may overlap the input.
 */
static void build_reduce_scatter(struct pg_sched *s, const void *const *blocks, void *out,
                                 size_t count)
{
    struct pg_group *g = s->g;
    size_t bytes = count * s->op.elem_size;
    char *scratch = pg_sched_alloc(s, bytes * (size_t)g->size);

    if (!scratch) {
        return;
    }
    pg_sched_copy(s, scratch + (size_t)g->rank * bytes, blocks[g->rank], bytes);
    for (int i = 0; i < g->size; i++) {
        if (i != g->rank) {
            pg_sched_send(s, blocks[i], bytes, i);
            pg_sched_recv(s, scratch + (size_t)i * bytes, bytes, i);
        }
    }
    pg_sched_copy(s, out, scratch + (size_t)(g->size - 1) * bytes, bytes);
    for (int i = g->size - 2; i >= 0; i--) {
        pg_sched_reduce(s, scratch + (size_t)i * bytes, out, count);
    }
}

/* list != NULL: list form; else input holds the blocks back to back. */
static int reduce_scatter(const char *call, struct pg_group *g, pgc_tensor *output,
                          const pgc_tensor *list, const pgc_tensor *input, pgc_reduce_op op,
                          struct pg_op_spec *spec, int async_op, pgc_work **work)
{
    struct pgc_work stack, *w = coll_work(call, g, async_op, &stack);
    bool wide = needs_widening(output->dtype, op);
    size_t m = output->numel, esz = pgc_dtype_size(output->dtype);
    const void **blocks = malloc(sizeof(void *) * (size_t)g->size);
    void *out = output->data;
    struct pg_sched *s = NULL;
    int rc = PGC_ERR_NOMEM;

    if (!w || !blocks) {
        goto fail;
    }
    if (wide) {
        float *f = malloc(sizeof(float) * (m * (size_t)(g->size + 1) + 1));
        if (!f) {
            goto fail;
        }
        w->tmp = f;
        out = f;
        for (int i = 0; i < g->size; i++) {
            const void *src = list ? list[i].data : (const char *)input->data + i * m * esz;
            widen(src, f + m * (size_t)(i + 1), m, output->dtype);
            blocks[i] = f + m * (size_t)(i + 1);
        }
        *spec = float_spec(spec);
    } else {
        for (int i = 0; i < g->size; i++) {
            blocks[i] = list ? list[i].data : (const char *)input->data + i * m * esz;
        }
    }
    set_reduce_finish(w, op, output, m, wide);
    s = pg_sched_new(g, spec, &w->req);
    if (s) {
        pg_sched_sig(s, PG_COLL_REDUCE_SCATTER, spec, -1);
        build_reduce_scatter(s, blocks, out, m);
        rc = pg_sched_launch(s);
    }
fail:
    free(blocks);
    if (!w) {
        return mps_error(PGC_ERR_NOMEM, "%s: no memory for a work", call);
    }
    if (rc == PGC_ERR_NOMEM && !s) {
        mps_error(rc, "no memory for the reduce_scatter of %zu elements", m);
    }
    return coll_start(w, rc, async_op, work);
}

/* w->tmp holds the whole reduced vector: my block of w->count bytes goes out. */
static int finish_my_block(struct pgc_work *w)
{
    memcpy(w->out, (char *)w->tmp + (size_t)w->g->rank * w->count, w->count);
    return PGC_OK;
}

/* The tensor form on host memory: MPI_Reduce_scatter_block's path. Blocking, pg's blocking
 * form; async, its non-blocking twin, which for the sizes whose blocking form runs an
 * allreduce and keeps its block (pg_reduce_scatter_block) is that allreduce here too. */
static int reduce_scatter_block(const char *call, struct pg_group *g, pgc_tensor *output,
                                const pgc_tensor *input, const struct pg_op_spec *spec,
                                int async_op, pgc_work **work)
{
    size_t block = nbytes(output), total = block * (size_t)g->size;
    struct pgc_work *w;
    int rc;

    if (!async_op) {
        return blocking_done(call, g, pg_reduce_scatter_block(g, input->data, output->data,
                                                              output->numel, spec));
    }
    w = coll_work(call, g, async_op, NULL);
    if (!w) {
        return PGC_ERR_NOMEM;
    }
    if (total > PG_DIRECT_MAX) {
        rc = pg_ireduce_scatter_block(g, input->data, output->data, output->numel, spec, &w->req);
        return coll_start(w, rc, async_op, work);
    }
    w->tmp = malloc(total + 1);
    w->out = output->data;
    w->count = block;
    w->finish = finish_my_block;
    rc = w->tmp ? pg_iallreduce(g, input->data, w->tmp, input->numel, spec, &w->req)
                : mps_error(PGC_ERR_NOMEM, "no memory for %zu bytes", total);
    return coll_start(w, rc, async_op, work);
}

int pgc_reduce_scatter(pgc_tensor *output, const pgc_tensor *input_list, pgc_reduce_op op,
                       pgc_group *group, int async_op, pgc_work **work)
{
    const char *call = "pgc_reduce_scatter";
    struct pg_op_spec spec;
    struct pg_group *g;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = check_reduction(call, g, output, op, -1, &spec);
    }
    if (rc == PGC_OK) {
        rc = check_list(call, g, input_list, output, output->numel, false);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    return reduce_scatter(call, g, output, input_list, NULL, op, &spec, async_op, work);
}

int pgc_reduce_scatter_tensor(pgc_tensor *output, const pgc_tensor *input, pgc_reduce_op op,
                              pgc_group *group, int async_op, pgc_work **work)
{
    const char *call = "pgc_reduce_scatter_tensor";
    struct pg_op_spec spec;
    struct pg_group *g;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = pgc_check_tensor(call, g, input, "the input");
    }
    if (rc == PGC_OK) {
        rc = same_dtype(call, g, output, input);
    }
    if (rc == PGC_OK) {
        rc = check_reduction(call, g, output, op, -1, &spec);
    }
    if (rc == PGC_OK &&
        (input->numel % (size_t)g->size || input->numel / (size_t)g->size != output->numel)) {
        rc = pgc_fail(PGC_ERR_INVALID_COUNT, call, g,
                      "the input has %zu elements; it needs %d x %zu (group size x output)",
                      input->numel, g->size, output->numel);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    if (output->device != PGC_DEVICE_CUDA && op != PGC_AVG && !needs_widening(output->dtype, op)) {
        return reduce_scatter_block(call, g, output, input, &spec, async_op, work);
    }
    return reduce_scatter(call, g, output, NULL, input, op, &spec, async_op, work);
}

/* ---- all_to_all ---- */

/* Byte offsets and sizes of the n blocks of t: splits (elements) or equal blocks. */
static int layout(const char *call, struct pg_group *g, const pgc_tensor *t, const size_t *splits,
                  const char *side, size_t *off, size_t *len)
{
    size_t esz = pgc_dtype_size(t->dtype), sum = 0;

    if (!splits && t->numel % (size_t)g->size) {
        return pgc_fail(PGC_ERR_INVALID_COUNT, call, g,
                        "the %s has %zu elements, not a multiple of the group size %d", side,
                        t->numel, g->size);
    }
    for (int i = 0; i < g->size; i++) {
        size_t k = splits ? splits[i] : t->numel / (size_t)g->size;
        off[i] = sum * esz;
        len[i] = k * esz;
        sum += k;
    }
    if (sum != t->numel) {
        return pgc_fail(PGC_ERR_INVALID_COUNT, call, g,
                        "the %s splits add up to %zu elements but the %s has %zu", side, sum, side,
                        t->numel);
    }
    return PGC_OK;
}

/* sends[i]/recvs[i]: the block for/from rank i. */
static int start_all_to_all(struct pgc_work *w, const void *const *sbuf, const size_t *slen,
                            void *const *rbuf, const size_t *rlen)
{
    struct pg_group *g = w->g;
    struct pg_sched *s = pg_sched_new(g, NULL, &w->req);

    if (!s) {
        return PGC_ERR_NOMEM;
    }
    pg_sched_sig(s, PG_COLL_ALLTOALL, NULL, -1);
    for (int k = 1; k < g->size; k++) {
        /* Pairwise order (peer rank + k, rank - k) spreads the load over the peers. */
        int to = (g->rank + k) % g->size, from = (g->rank - k + g->size) % g->size;
        pg_sched_recv(s, rbuf[from], rlen[from], from);
        pg_sched_send(s, sbuf[to], slen[to], to);
    }
    if (rlen[g->rank] != slen[g->rank]) {
        pg_sched_discard(s);
        return pgc_fail(PGC_ERR_INVALID_COUNT, w->call, g,
                        "this rank sends itself %zu bytes but expects %zu", slen[g->rank],
                        rlen[g->rank]);
    }
    pg_sched_copy(s, rbuf[g->rank], sbuf[g->rank], slen[g->rank]);
    return pg_sched_launch(s);
}

static int all_to_all_common(const char *call, struct pg_group *g, const void **sbuf, size_t *slen,
                             void **rbuf, size_t *rlen, int async_op, pgc_work **work)
{
    struct pgc_work stack, *w = coll_work(call, g, async_op, &stack);

    if (!w) {
        return PGC_ERR_NOMEM;
    }
    return coll_start(w, start_all_to_all(w, sbuf, slen, rbuf, rlen), async_op, work);
}

struct a2a_bufs {
    const void **sbuf;
    void **rbuf;
    size_t *slen, *rlen, *soff, *roff;
};

static int a2a_alloc(const char *call, int n, struct a2a_bufs *b)
{
    size_t *all = malloc(sizeof(size_t) * 4 * (size_t)n);

    b->sbuf = malloc(sizeof(void *) * (size_t)n);
    b->rbuf = malloc(sizeof(void *) * (size_t)n);
    if (!all || !b->sbuf || !b->rbuf) {
        free(all);
        free(b->sbuf);
        free(b->rbuf);
        return mps_error(PGC_ERR_NOMEM, "%s: no memory for %d blocks", call, n);
    }
    b->slen = all;
    b->rlen = all + n;
    b->soff = all + 2 * n;
    b->roff = all + 3 * n;
    return PGC_OK;
}

static void a2a_free(struct a2a_bufs *b)
{
    free(b->sbuf);
    free(b->rbuf);
    free(b->slen);
}

int pgc_all_to_all_single(pgc_tensor *output, const pgc_tensor *input, const size_t *output_splits,
                          const size_t *input_splits, pgc_group *group, int async_op,
                          pgc_work **work)
{
    const char *call = "pgc_all_to_all_single";
    struct a2a_bufs b;
    struct pg_group *g;
    bool equal = !output_splits && !input_splits;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK) {
        rc = pgc_check_tensor(call, g, input, "the input");
    }
    if (rc == PGC_OK) {
        rc = pgc_check_tensor(call, g, output, "the output");
    }
    if (rc == PGC_OK) {
        rc = same_dtype(call, g, output, input);
    }
    if (rc == PGC_OK) {
        rc = pgc_check_args(call, g, input->dtype, -1, -1, equal ? input->numel : 0);
    }
    if (rc == PGC_OK && equal && blocking_host(async_op, input) &&
        input->numel % (size_t)g->size == 0 && output->numel == input->numel) {
        /* MPI_Alltoall's path: one message per pair, as the schedule below sends. */
        return blocking_done(call, g, pg_alltoall(g, input->data, output->data,
                                                  nbytes(input) / (size_t)g->size));
    }
    if (rc == PGC_OK) {
        rc = a2a_alloc(call, g->size, &b);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    rc = layout(call, g, input, input_splits, "input", b.soff, b.slen);
    if (rc == PGC_OK) {
        rc = layout(call, g, output, output_splits, "output", b.roff, b.rlen);
    }
    if (rc == PGC_OK) {
        for (int i = 0; i < g->size; i++) {
            b.sbuf[i] = (const char *)input->data + b.soff[i];
            b.rbuf[i] = (char *)output->data + b.roff[i];
        }
        rc = all_to_all_common(call, g, b.sbuf, b.slen, b.rbuf, b.rlen, async_op, work);
    }
    a2a_free(&b);
    return rc;
}

int pgc_all_to_all(pgc_tensor *output_list, const pgc_tensor *input_list, pgc_group *group,
                   int async_op, pgc_work **work)
{
    const char *call = "pgc_all_to_all";
    struct a2a_bufs b;
    struct pg_group *g;
    int rc = coll_begin(call, group, async_op, work, &g);

    if (rc == PGC_OK && (!input_list || !output_list)) {
        rc = pgc_fail(PGC_ERR_INVALID_ARG, call, g, "NULL tensor list");
    }
    if (rc == PGC_OK) {
        rc = check_list(call, g, input_list, &input_list[0], 0, true);
    }
    if (rc == PGC_OK) {
        rc = check_list(call, g, output_list, &input_list[0], 0, true);
    }
    if (rc == PGC_OK) {
        rc = pgc_check_args(call, g, input_list[0].dtype, -1, -1, 0);
    }
    if (rc == PGC_OK) {
        rc = a2a_alloc(call, g->size, &b);
    }
    if (rc != PGC_OK) {
        return rc;
    }
    for (int i = 0; i < g->size; i++) {
        b.sbuf[i] = input_list[i].data;
        b.slen[i] = nbytes(&input_list[i]);
        b.rbuf[i] = output_list[i].data;
        b.rlen[i] = nbytes(&output_list[i]);
    }
    rc = all_to_all_common(call, g, b.sbuf, b.slen, b.rbuf, b.rlen, async_op, work);
    a2a_free(&b);
    return rc;
}

/* ---- monitored_barrier ---- */

#define MB_MISSING_MAX 64

/* The answer of rank 0 to every rank that arrived. */
struct mb_ack {
    int32_t status;
    int32_t nmissing;
    int32_t missing[MB_MISSING_MAX];
};

struct req_set {
    struct pg_req *reqs;
    int n;
};

static bool all_done(void *arg)
{
    const struct req_set *rs = arg;

    for (int i = 0; i < rs->n; i++) {
        if (rs->reqs[i].kind != PG_REQ_NULL && !pg_req_is_done(&rs->reqs[i])) {
            return false;
        }
    }
    return true;
}

/* Waits (the one wait primitive) until every request is done or the deadline passes; true
 * if all are done. */
static bool wait_all_until(struct pg_req *reqs, int n, double deadline)
{
    struct req_set rs = {reqs, n};
    double left = deadline - mps_now();
    int rc;

    PG_LOCK();
    rc = pg_wait_until_locked(all_done, &rs, left > 0 ? left : 0);
    PG_UNLOCK();
    return rc == PGC_OK;
}

static int mb_post(struct pg_group *g, bool send, void *buf, size_t len, int peer, int tag,
                   struct pg_req *req)
{
    int rc;

    PG_LOCK();
    if (send) {
        rc = pg_isend_ctx(g, pg_ctx_coll(g), buf, len, peer, tag, 0, req);
    } else {
        rc = pg_irecv_ctx(g, pg_ctx_coll(g), buf, len, peer, tag, req);
    }
    PG_UNLOCK();
    return rc;
}

static void mb_list(char *buf, size_t len, const struct mb_ack *a)
{
    size_t off = 0;

    buf[0] = '\0';
    for (int i = 0; i < a->nmissing && i < MB_MISSING_MAX && off + 12 < len; i++) {
        off += (size_t)snprintf(buf + off, len - off, i ? ", %d" : "%d", a->missing[i]);
    }
}

struct mb_root_state {
    struct pg_req *recv, *send;
    int32_t *arrived;
    struct mb_ack ack;
};

/* Rank 0: waits for every rank, then answers those that arrived. */
static int mb_root(struct pg_group *g, int tag, double timeout, int wait_all)
{
    int n = g->size, rc = PGC_OK;
    struct mb_root_state st = {calloc((size_t)n, sizeof(struct pg_req)),
                               calloc((size_t)n, sizeof(struct pg_req)),
                               calloc((size_t)n, sizeof(int32_t)),
                               {0}};
    char list[256];

    if (!st.recv || !st.send || !st.arrived) {
        rc = mps_error(PGC_ERR_NOMEM, "no memory for a monitored barrier of %d", n);
        goto out;
    }
    st.recv[0].kind = st.send[0].kind = PG_REQ_NULL;
    for (int i = 1; i < n && rc == PGC_OK; i++) {
        rc = mb_post(g, false, &st.arrived[i], sizeof(int32_t), i, tag, &st.recv[i]);
        for (int j = 1; rc != PGC_OK && j < i; j++) {
            pg_cancel_recv(&st.recv[j]);
        }
    }
    if (rc == PGC_OK && !wait_all_until(st.recv, n, mps_now() + timeout)) {
        for (int i = 1; i < n; i++) {
            if (!pg_req_is_done(&st.recv[i])) {
                pg_cancel_recv(&st.recv[i]);
                if (st.ack.nmissing < MB_MISSING_MAX && (wait_all || st.ack.nmissing == 0)) {
                    st.ack.missing[st.ack.nmissing++] = i;
                }
            }
        }
        st.ack.status = PGC_ERR_TIMEOUT;
    }
    for (int i = 1; i < n && rc == PGC_OK; i++) {
        st.send[i].kind = PG_REQ_NULL;
        if (pg_req_is_done(&st.recv[i]) && !st.recv[i].cancelled) {
            rc = mb_post(g, true, &st.ack, sizeof(st.ack), i, tag, &st.send[i]);
        }
    }
    if (rc == PGC_OK && !wait_all_until(st.send, n, mps_now() + timeout)) {
        /* A send still in the transport may touch st: keep it alive. */
        return pgc_fail(PGC_ERR_TIMEOUT, "pgc_monitored_barrier", g,
                        "answering the ranks that arrived did not complete within %.1f s", timeout);
    }
    if (rc == PGC_OK && st.ack.status != PGC_OK) {
        mb_list(list, sizeof(list), &st.ack);
        rc = pgc_fail(PGC_ERR_TIMEOUT, "pgc_monitored_barrier", g,
                      "rank%s %s%s did not arrive within %.1f s", st.ack.nmissing > 1 ? "s" : "",
                      list, wait_all ? "" : " (and possibly others)", timeout);
    } else if (rc != PGC_OK) {
        rc = pgc_fail(rc, "pgc_monitored_barrier", g, "%s", mps_last_error());
    }
out:
    free(st.recv);
    free(st.send);
    free(st.arrived);
    return rc;
}

/* Another rank: tells rank 0 it arrived and waits for its answer. The state is on the heap
 * and leaked if the transport may still use it after a timeout. */
static int mb_leaf(struct pg_group *g, int tag, double timeout)
{
    struct {
        struct pg_req req[2];
        int32_t me;
        struct mb_ack ack;
    } *st = calloc(1, sizeof(*st));
    char list[256];
    int rc;

    if (!st) {
        return mps_error(PGC_ERR_NOMEM, "no memory for a monitored barrier");
    }
    st->me = g->rank;
    rc = mb_post(g, false, &st->ack, sizeof(st->ack), 0, tag, &st->req[1]);
    if (rc == PGC_OK) {
        rc = mb_post(g, true, &st->me, sizeof(st->me), 0, tag, &st->req[0]);
        if (rc != PGC_OK) {
            pg_cancel_recv(&st->req[1]);
        }
    }
    if (rc != PGC_OK) {
        free(st);
        return pgc_fail(rc, "pgc_monitored_barrier", g, "%s", mps_last_error());
    }
    if (!wait_all_until(st->req, 2, mps_now() + 2 * timeout)) {
        pg_cancel_recv(&st->req[1]);
        return pgc_fail(PGC_ERR_TIMEOUT, "pgc_monitored_barrier", g,
                        "no answer from rank 0 within %.1f s", 2 * timeout);
    }
    rc = st->ack.status;
    if (rc != PGC_OK) {
        mb_list(list, sizeof(list), &st->ack);
        rc = pgc_fail(rc, "pgc_monitored_barrier", g,
                      "rank 0 reports that rank%s %s did not arrive within %.1f s",
                      st->ack.nmissing > 1 ? "s" : "", list, timeout);
    }
    free(st);
    return rc;
}

int pgc_monitored_barrier(pgc_group *group, double timeout, int wait_all_ranks)
{
    struct pg_group *g;
    int tag;
    int rc = pgc_resolve_group("pgc_monitored_barrier", group, &g);

    if (rc != PGC_OK || g->size == 1) {
        return rc;
    }
    if (timeout <= 0) {
        timeout = pg_timeout();
    }
    /* The tag of a collective: the same sequence number on every member. */
    PG_LOCK();
    tag = pg_coll_tag(g, pg_coll_sig(PG_COLL_BARRIER, NULL, -1));
    PG_UNLOCK();
    return g->rank == 0 ? mb_root(g, tag, timeout, wait_all_ranks) : mb_leaf(g, tag, timeout);
}
