/*
 * shim_coll2.c - MPI gather(v), scatter(v), allgather(v), alltoall(v,w),
 * reduce_scatter(_block), scan and exscan, blocking and non-blocking, on pg_core's schedules.
 * A blocking collective is its non-blocking form and a wait.
 *
 * pg_core moves bytes, so each typed buffer is seen as a "side" of n blocks (block i: count
 * elements of a type at some address) and handed to pg_core as byte counts and byte
 * displacements. When every block is contiguous and lies at or after the buffer's start,
 * pg_core works in the user's buffer directly; otherwise the blocks are packed back to back
 * into a temporary: inputs now, outputs unpacked by the request's finish hook. The
 * temporaries, the byte layouts and the unpack list live in one allocation, the plan, which
 * the request holds in tmp2, so it is freed with the request whatever happens.
 *
 * A rank's own block of a gather, allgather or scatter is copied (type to type) when the
 * call starts, and pg_core then runs the collective in place: one path serves both the
 * MPI_IN_PLACE and the ordinary form.
 *
 * Datatypes of output blocks are retained until the finish hook unpacks them. A collective
 * that fails after it started (a peer's error, a timeout) skips the hook and keeps those
 * references, so such a derived type is never freed: shim_req.c runs no hook on failure.
 */
#include "config.h"
#include "shim_device.h"

#include "mps_log.h"
#include "pg_coll2.h"
#include "pg_device.h"
#include "pgc_status.h"
#include "shim_coll.h"
#include "shim_inter.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* One output block to unpack at completion: count elements of t from out + off into buf. */
struct seg {
    char *buf;
    size_t count;
    struct shim_dtype *t; /* retained until unpacked */
    size_t off;
};

/* What a collective keeps until it completes (one allocation, in the request's tmp2). */
struct plan {
    int nseg;
    struct seg *segs;   /* room for n */
    size_t *lay;        /* 4 n byte counts and displacements handed to pg_core */
    unsigned char *in;  /* packed input, when the send side is packed */
    unsigned char *out; /* packed output, when the receive side is packed */
};

/* One typed block of a user buffer. */
struct blk {
    char *ptr;
    size_t count;
    struct shim_dtype *t; /* may be NULL when count is 0 */
};

/* A side (send or receive) of a collective on this rank. */
struct side {
    struct blk *b;
    int n;      /* blocks; 0 when the side does not exist on this rank */
    char *base; /* the user's buffer: direct displacements are relative to it */
    bool pack;  /* packed into the plan (otherwise pg_core uses the user's buffer) */
    size_t bytes;
};

/* The state of one MPI call while it is set up. */
struct coll {
    const char *fn;
    MPI_Comm comm;
    struct shim_comm *c;
    struct shim_req *r;
    struct plan *p;
    int n, me;
    struct side S, R;
    size_t *scnt, *sdsp, *rcnt, *rdsp; /* byte layouts for pg_core (in the plan) */
    char *in, *out;                    /* what pg_core reads and writes */
    bool dev_checked; /* a shim_dev_try_* classified the buffers already: host memory */
};

static size_t round16(size_t x)
{
    return (x + 15) & ~(size_t)15;
}

static struct plan *plan_new(int n, size_t inbytes, size_t outbytes)
{
    size_t hdr = round16(sizeof(struct plan)), segb = round16(sizeof(struct seg) * (size_t)n);
    size_t layb = round16(sizeof(size_t) * 4 * (size_t)n);
    unsigned char *m = malloc(hdr + segb + layb + round16(inbytes) + outbytes + 1);
    struct plan *p = (struct plan *)m;

    if (!m) {
        return NULL;
    }
    p->nseg = 0;
    p->segs = (struct seg *)(m + hdr);
    p->lay = (size_t *)(m + hdr + segb);
    p->in = m + hdr + segb + layb;
    p->out = p->in + round16(inbytes);
    return p;
}

/* Drops the references of the unpack list (the plan's memory goes with the request). */
static void plan_drop(struct plan *p)
{
    for (int i = 0; p && i < p->nseg; i++) {
        shim_dtype_release(p->segs[i].t);
    }
    if (p) {
        p->nseg = 0;
    }
}

/* The request's finish hook: unpacks every output block. */
static int plan_finish(struct shim_req *r)
{
    struct plan *p = r->tmp2;

    for (int i = 0; i < p->nseg; i++) {
        struct seg *sg = &p->segs[i];
        shim_dtype_unpack(p->out + sg->off, sg->count, sg->t, sg->buf);
    }
    plan_drop(p);
    return MPI_SUCCESS;
}

/* ---- Argument checks ---- */

static int coll_begin(struct coll *k, const char *fn, MPI_Comm comm)
{
    int rc;

    memset(k, 0, sizeof(*k));
    k->fn = fn;
    k->comm = comm;
    rc = shim_coll_check(fn, comm, 0, MPI_DATATYPE_NULL, &k->c, NULL);
    if (rc == MPI_SUCCESS) {
        k->n = k->c->g->size;
        k->me = k->c->g->rank;
    }
    return rc;
}

static int check_type(struct coll *k, int count, MPI_Datatype dt, struct shim_dtype **t,
                      const char *what)
{
    if (count < 0) {
        return shim_error(k->comm, k->fn, MPI_ERR_COUNT, "%s %d is negative", what, count);
    }
    if (shim_dtype_check_comm(dt, t) != MPI_SUCCESS) {
        return shim_error(k->comm, k->fn, MPI_ERR_TYPE, "%s", mps_last_error());
    }
    return MPI_SUCCESS;
}

/* A count array (and a displacement array unless displs_needed is false) of n entries. */
static int check_counts(struct coll *k, const int *counts, const int *displs, bool displs_needed,
                        const char *what)
{
    if (!counts || (displs_needed && !displs)) {
        return shim_error(k->comm, k->fn, MPI_ERR_ARG, "the %s or displacement array is NULL",
                          what);
    }
    for (int i = 0; i < k->n; i++) {
        if (counts[i] < 0) {
            return shim_error(k->comm, k->fn, MPI_ERR_COUNT, "%s[%d] = %d is negative", what, i,
                              counts[i]);
        }
    }
    return MPI_SUCCESS;
}

static int check_in_place(struct coll *k, const void *buf, bool allowed, const char *what)
{
    if (buf == MPI_IN_PLACE && !allowed) {
        return shim_error(k->comm, k->fn, MPI_ERR_BUFFER,
                          "MPI_IN_PLACE is not allowed as the %s on rank %d", what, k->me);
    }
    return MPI_SUCCESS;
}

/* A send or receive buffer with one count and type; with MPI_IN_PLACE (where allowed) the
 * count and type are not significant and not checked. */
static int check_buf(struct coll *k, const void *buf, int count, MPI_Datatype dt,
                     struct shim_dtype **t, bool in_place_ok, const char *what)
{
    int rc = check_in_place(k, buf, in_place_ok, what);

    if (rc != MPI_SUCCESS || buf == MPI_IN_PLACE) {
        return rc;
    }
    return check_type(k, count, dt, t, what);
}

static int check_vbuf(struct coll *k, const void *buf, const int *counts, const int *displs,
                      MPI_Datatype dt, struct shim_dtype **t, bool in_place_ok, const char *what)
{
    int rc = check_in_place(k, buf, in_place_ok, what);

    if (rc != MPI_SUCCESS || buf == MPI_IN_PLACE) {
        return rc;
    }
    rc = check_counts(k, counts, displs, true, what);
    return rc == MPI_SUCCESS ? check_type(k, 0, dt, t, what) : rc;
}

/* ---- Sides: blocks, layout, packing ---- */

static int side_blocks(struct coll *k, struct side *sd, int n, const void *base)
{
    sd->b = calloc(n ? (size_t)n : 1, sizeof(*sd->b));
    sd->n = n;
    sd->base = (char *)base;
    if (!sd->b) {
        return shim_error(k->comm, k->fn, MPI_ERR_NO_MEM, "no memory for %d buffer blocks", n);
    }
    return MPI_SUCCESS;
}

/* n blocks of count elements each, back to back (gather, scatter, allgather, alltoall). */
static int side_equal(struct coll *k, struct side *sd, int n, const void *buf, int count,
                      struct shim_dtype *t)
{
    int rc = side_blocks(k, sd, n, buf);

    for (int i = 0; rc == MPI_SUCCESS && i < n; i++) {
        sd->b[i] = (struct blk){sd->base + (MPI_Aint)i * count * t->extent, (size_t)count, t};
    }
    return rc;
}

/* Block i: counts[i] elements at displs[i] extents from buf. */
static int side_v(struct coll *k, struct side *sd, const void *buf, const int *counts,
                  const int *displs, struct shim_dtype *t)
{
    int rc = side_blocks(k, sd, k->n, buf);

    for (int i = 0; rc == MPI_SUCCESS && i < k->n; i++) {
        sd->b[i] = (struct blk){sd->base + (MPI_Aint)displs[i] * t->extent, (size_t)counts[i], t};
    }
    return rc;
}

/* The other side's blocks, for MPI_IN_PLACE forms that read their input from recvbuf. */
static int side_copy(struct coll *k, struct side *dst, const struct side *src)
{
    int rc = side_blocks(k, dst, src->n, src->base);

    if (rc == MPI_SUCCESS) {
        memcpy(dst->b, src->b, sizeof(*dst->b) * (size_t)src->n);
    }
    return rc;
}

static void side_measure(struct side *sd, bool force_pack)
{
    sd->pack = force_pack;
    sd->bytes = 0;
    for (int i = 0; i < sd->n; i++) {
        struct blk *b = &sd->b[i];
        if (b->count == 0) {
            continue;
        }
        sd->bytes += b->count * b->t->size;
        if (!b->t->contig || b->ptr < sd->base) {
            sd->pack = true;
        }
    }
}

/* Fills the byte layout and returns the pointer pg_core works on (NULL: no side). */
static char *side_layout(const struct side *sd, unsigned char *tmp, size_t *cnt, size_t *dsp)
{
    size_t off = 0;

    for (int i = 0; i < sd->n; i++) {
        const struct blk *b = &sd->b[i];
        cnt[i] = b->count ? b->count * b->t->size : 0;
        dsp[i] = sd->pack ? off : (cnt[i] ? (size_t)(b->ptr - sd->base) : 0);
        off += cnt[i];
    }
    if (sd->n == 0) {
        return NULL;
    }
    return sd->pack ? (char *)tmp : sd->base;
}

static void side_pack(const struct side *sd, char *packed, const size_t *dsp)
{
    for (int i = 0; sd->pack && i < sd->n; i++) {
        const struct blk *b = &sd->b[i];
        if (b->count) {
            shim_dtype_pack(b->ptr, b->count, b->t, packed + dsp[i]);
        }
    }
}

static void side_unpack_later(struct plan *p, const struct side *sd, const size_t *dsp)
{
    for (int i = 0; sd->pack && i < sd->n; i++) {
        const struct blk *b = &sd->b[i];
        if (b->count) {
            shim_dtype_retain(b->t);
            p->segs[p->nseg++] = (struct seg){b->ptr, b->count, b->t, dsp[i]};
        }
    }
}

/* ---- Setting up and starting ---- */

/* A side is one kind of memory: its first block with data stands for it. */
static int side_host_only(struct coll *k, const struct side *sd, const char *what)
{
    const struct blk *b = sd->b;

    while (b < sd->b + sd->n && b->count == 0) {
        b++;
    }
    return b < sd->b + sd->n ? shim_dev_host_only(k->fn, k->comm, b->ptr, what) : MPI_SUCCESS;
}

/* With a GPU present, a collective without a device path must not touch device memory
 * on the CPU: it is refused here, before anything is packed. Managed memory goes on. The
 * collectives with a device path have classified their buffers before (dev_checked). */
static int device_guard(struct coll *k)
{
    int rc;

    if (mps_likely(!pg_dev_present()) || k->dev_checked) {
        return MPI_SUCCESS;
    }
    rc = side_host_only(k, &k->S, "sendbuf");
    return rc == MPI_SUCCESS ? side_host_only(k, &k->R, "recvbuf") : rc;
}

/* The request and its plan; lays out both sides, packs the input, lists the output. */
static int coll_prepare(struct coll *k, bool force_pack_send)
{
    int rc;

    side_measure(&k->S, force_pack_send);
    side_measure(&k->R, false);
    rc = device_guard(k);
    if (rc == MPI_SUCCESS) {
        rc = shim_coll_req(k->fn, k->comm, &k->r);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    k->p = plan_new(k->n, k->S.pack ? k->S.bytes : 0, k->R.pack ? k->R.bytes : 0);
    if (!k->p) {
        return shim_error(k->comm, k->fn, MPI_ERR_NO_MEM, "no memory to pack %zu + %zu bytes",
                          k->S.bytes, k->R.bytes);
    }
    k->r->tmp2 = k->p;
    k->r->finish = plan_finish;
    k->scnt = k->p->lay;
    k->sdsp = k->scnt + k->n;
    k->rcnt = k->sdsp + k->n;
    k->rdsp = k->rcnt + k->n;
    k->in = side_layout(&k->S, k->p->in, k->scnt, k->sdsp);
    k->out = side_layout(&k->R, k->p->out, k->rcnt, k->rdsp);
    side_pack(&k->S, k->in, k->sdsp);
    side_unpack_later(k->p, &k->R, k->rdsp);
    return MPI_SUCCESS;
}

static void coll_free_blocks(struct coll *k)
{
    free(k->S.b);
    free(k->R.b);
    k->S.b = k->R.b = NULL;
}

/* Undoes a setup that failed with the MPI error rc (already raised). */
static int coll_fail(struct coll *k, int rc)
{
    if (k->r) {
        plan_drop(k->p);
        shim_req_free(k->r);
        k->r = NULL;
    }
    coll_free_blocks(k);
    return rc;
}

/* After the pg_core call: hands out the request, or raises its error. */
static int coll_start(struct coll *k, int pgrc, MPI_Request *request)
{
    if (pgrc != PGC_OK) {
        plan_drop(k->p);
    }
    coll_free_blocks(k);
    return shim_coll_started(k->fn, pgrc, k->r, request);
}

/* Copies count elements of t at buf into my block of the output, so that pg_core then runs
 * in place (gather, allgather). */
static int own_into_out(struct coll *k, int me, const void *buf, size_t count, struct shim_dtype *t)
{
    size_t bytes = count ? count * t->size : 0;

    if (bytes > k->rcnt[me]) {
        return shim_error(k->comm, k->fn, MPI_ERR_TRUNCATE,
                          "rank %d sends %zu bytes to itself but its receive block holds %zu",
                          k->me, bytes, k->rcnt[me]);
    }
    if (bytes) {
        shim_dtype_pack(buf, count, t, k->out + k->rdsp[me]);
    }
    return MPI_SUCCESS;
}

/* MPI_IN_PLACE with a packed output: my block is already in recvbuf; pack it too, since
 * the whole output is unpacked at the end. */
static int own_in_place(struct coll *k)
{
    const struct blk *b = &k->R.b[k->me];

    return k->R.pack ? own_into_out(k, k->me, b->ptr, b->count, b->t) : MPI_SUCCESS;
}

/* The root's own block of a scatter: from the (packed) input straight into recvbuf. */
static int own_from_in(struct coll *k, int root, void *buf, int count, struct shim_dtype *t)
{
    size_t bytes = k->scnt[root], cap = (size_t)count * t->size;

    if (bytes > cap) {
        return shim_error(k->comm, k->fn, MPI_ERR_TRUNCATE,
                          "the root sends %zu bytes to itself but receives only %zu", bytes, cap);
    }
    if (bytes) {
        shim_dtype_unpack_partial(k->in + k->sdsp[root], (size_t)count, t, 0, buf, bytes);
    }
    return MPI_SUCCESS;
}

/* ---- Gather ---- */

static int gather_root_own(struct coll *k, const void *sendbuf, int sendcount,
                           struct shim_dtype *st)
{
    if (sendbuf == MPI_IN_PLACE) {
        return own_in_place(k);
    }
    return own_into_out(k, k->me, sendbuf, (size_t)sendcount, st);
}

#pragma weak MPI_Igather = PMPI_Igather
int PMPI_Igather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                 MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_gatherv(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL,
                                  recvcount, recvtype, root, comm, request);
    }
    struct coll k;
    struct shim_dtype *st = NULL, *rt = NULL;
    int rc;
    bool is_root;

    if (shim_dev_try_gather(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                            root, comm, request, &rc)) {
        return rc;
    }
    rc = coll_begin(&k, SHIM_FN, comm);
    k.dev_checked = true;

    if (rc == MPI_SUCCESS) {
        rc = shim_coll_check_root(SHIM_FN, comm, k.c, root);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    is_root = k.me == root;
    rc = check_buf(&k, sendbuf, sendcount, sendtype, &st, is_root, "sendbuf");
    if (rc == MPI_SUCCESS && is_root) {
        rc = check_buf(&k, recvbuf, recvcount, recvtype, &rt, false, "recvbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = is_root ? side_equal(&k, &k.R, k.n, recvbuf, recvcount, rt)
                     : side_equal(&k, &k.S, 1, sendbuf, sendcount, st);
    }
    if (rc == MPI_SUCCESS) {
        rc = coll_prepare(&k, false);
    }
    if (rc == MPI_SUCCESS && is_root) {
        rc = gather_root_own(&k, sendbuf, sendcount, st);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    if (is_root) {
        return coll_start(
            &k, pg_igather(k.c->g, k.out + k.rdsp[root], k.out, k.rcnt[root], root, &k.r->pr),
            request);
    }
    return coll_start(&k, pg_igather(k.c->g, k.in, NULL, k.scnt[0], root, &k.r->pr), request);
}

#pragma weak MPI_Gather = PMPI_Gather
int PMPI_Gather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(
        SHIM_FN,
        (shim_outer_fn = SHIM_FN, PMPI_Igather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, &req)),
        &req);
}

#pragma weak MPI_Igatherv = PMPI_Igatherv
int PMPI_Igatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                  MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_gatherv(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                  displs, 0, recvtype, root, comm, request);
    }
    struct coll k;
    struct shim_dtype *st = NULL, *rt = NULL;
    int rc = coll_begin(&k, SHIM_FN, comm);
    bool is_root;

    if (rc == MPI_SUCCESS) {
        rc = shim_coll_check_root(SHIM_FN, comm, k.c, root);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    is_root = k.me == root;
    rc = check_buf(&k, sendbuf, sendcount, sendtype, &st, is_root, "sendbuf");
    if (rc == MPI_SUCCESS && is_root) {
        rc = check_vbuf(&k, recvbuf, recvcounts, displs, recvtype, &rt, false, "recvcounts");
    }
    if (rc == MPI_SUCCESS) {
        rc = is_root ? side_v(&k, &k.R, recvbuf, recvcounts, displs, rt)
                     : side_equal(&k, &k.S, 1, sendbuf, sendcount, st);
    }
    if (rc == MPI_SUCCESS) {
        rc = coll_prepare(&k, false);
    }
    if (rc == MPI_SUCCESS && is_root) {
        rc = gather_root_own(&k, sendbuf, sendcount, st);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    if (is_root) {
        return coll_start(&k,
                          pg_igatherv(k.c->g, k.out + k.rdsp[root], k.rcnt[root], k.out, k.rcnt,
                                      k.rdsp, root, &k.r->pr),
                          request);
    }
    return coll_start(&k, pg_igatherv(k.c->g, k.in, k.scnt[0], NULL, NULL, NULL, root, &k.r->pr),
                      request);
}

#pragma weak MPI_Gatherv = PMPI_Gatherv
int PMPI_Gatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                 MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          (shim_outer_fn = SHIM_FN, PMPI_Igatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                        recvtype, root, comm, &req)),
                          &req);
}

/* ---- Scatter ---- */

/* The root's part of a scatter(v) once its send side is laid out: its own block, and the
 * pointer pg_core treats as its output (in place). */
static int scatter_root_own(struct coll *k, int root, void *recvbuf, int recvcount,
                            struct shim_dtype *rt)
{
    if (recvbuf == MPI_IN_PLACE) {
        return MPI_SUCCESS;
    }
    return own_from_in(k, root, recvbuf, recvcount, rt);
}

static int scatter_check(struct coll *k, const void *sendbuf, void *recvbuf, int recvcount,
                         MPI_Datatype recvtype, struct shim_dtype **rt, int root)
{
    int rc = shim_coll_check_root(k->fn, k->comm, k->c, root);

    if (rc == MPI_SUCCESS && k->me == root) {
        rc = check_in_place(k, sendbuf, false, "sendbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = check_buf(k, recvbuf, recvcount, recvtype, rt, k->me == root, "recvbuf");
    }
    return rc;
}

#pragma weak MPI_Iscatter = PMPI_Iscatter
int PMPI_Iscatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                  MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_scatterv(SHIM_FN, sendbuf, NULL, NULL, sendcount, sendtype, recvbuf,
                                   recvcount, recvtype, root, comm, request);
    }
    struct coll k;
    struct shim_dtype *st = NULL, *rt = NULL;
    int rc;
    bool is_root;

    if (shim_dev_try_scatter(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                             recvtype, root, comm, request, &rc)) {
        return rc;
    }
    rc = coll_begin(&k, SHIM_FN, comm);
    k.dev_checked = true;

    if (rc == MPI_SUCCESS) {
        rc = scatter_check(&k, sendbuf, recvbuf, recvcount, recvtype, &rt, root);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    is_root = k.me == root;
    if (is_root) {
        rc = check_type(&k, sendcount, sendtype, &st, "sendcount");
    }
    if (rc == MPI_SUCCESS) {
        rc = is_root ? side_equal(&k, &k.S, k.n, sendbuf, sendcount, st)
                     : side_equal(&k, &k.R, 1, recvbuf, recvcount, rt);
    }
    if (rc == MPI_SUCCESS) {
        rc = coll_prepare(&k, false);
    }
    if (rc == MPI_SUCCESS && is_root) {
        rc = scatter_root_own(&k, root, recvbuf, recvcount, rt);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    if (is_root) {
        return coll_start(
            &k, pg_iscatter(k.c->g, k.in, k.in + k.sdsp[root], k.scnt[root], root, &k.r->pr),
            request);
    }
    return coll_start(&k, pg_iscatter(k.c->g, NULL, k.out, k.rcnt[0], root, &k.r->pr), request);
}

#pragma weak MPI_Scatter = PMPI_Scatter
int PMPI_Scatter(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(
        SHIM_FN,
        (shim_outer_fn = SHIM_FN, PMPI_Iscatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm, &req)),
        &req);
}

#pragma weak MPI_Iscatterv = PMPI_Iscatterv
int PMPI_Iscatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                   MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_scatterv(SHIM_FN, sendbuf, sendcounts, displs, 0, sendtype, recvbuf,
                                   recvcount, recvtype, root, comm, request);
    }
    struct coll k;
    struct shim_dtype *st = NULL, *rt = NULL;
    int rc = coll_begin(&k, SHIM_FN, comm);
    bool is_root;

    if (rc == MPI_SUCCESS) {
        rc = scatter_check(&k, sendbuf, recvbuf, recvcount, recvtype, &rt, root);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    is_root = k.me == root;
    if (is_root) {
        rc = check_vbuf(&k, sendbuf, sendcounts, displs, sendtype, &st, false, "sendcounts");
    }
    if (rc == MPI_SUCCESS) {
        rc = is_root ? side_v(&k, &k.S, sendbuf, sendcounts, displs, st)
                     : side_equal(&k, &k.R, 1, recvbuf, recvcount, rt);
    }
    if (rc == MPI_SUCCESS) {
        rc = coll_prepare(&k, false);
    }
    if (rc == MPI_SUCCESS && is_root) {
        rc = scatter_root_own(&k, root, recvbuf, recvcount, rt);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    if (is_root) {
        return coll_start(&k,
                          pg_iscatterv(k.c->g, k.in, k.scnt, k.sdsp, k.in + k.sdsp[root],
                                       k.scnt[root], root, &k.r->pr),
                          request);
    }
    return coll_start(&k, pg_iscatterv(k.c->g, NULL, NULL, NULL, k.out, k.rcnt[0], root, &k.r->pr),
                      request);
}

#pragma weak MPI_Scatterv = PMPI_Scatterv
int PMPI_Scatterv(const void *sendbuf, const int sendcounts[], const int displs[],
                  MPI_Datatype sendtype, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                  int root, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          (shim_outer_fn = SHIM_FN, PMPI_Iscatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                         recvtype, root, comm, &req)),
                          &req);
}

/* ---- Allgather ---- */

/* Everything of allgather(v) after the receive side's blocks are set. */
static int allgather_common(struct coll *k, const void *sendbuf, int sendcount,
                            struct shim_dtype *st, bool v, MPI_Request *request)
{
    int rc = coll_prepare(k, false);
    int me = k->me, pgrc;
    const void *own = NULL;

    /* A contiguous block of the right size goes to pg_core as it is: it is copied into
     * place alongside the first transfer instead of before it. */
    if (rc == MPI_SUCCESS && sendbuf != MPI_IN_PLACE && st->contig &&
        (size_t)sendcount * st->size == k->rcnt[me]) {
        own = sendbuf;
    } else if (rc == MPI_SUCCESS) {
        own = k->out + k->rdsp[me];
        rc = gather_root_own(k, sendbuf, sendcount, st);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(k, rc);
    }
    if (v) {
        pgrc = pg_iallgatherv(k->c->g, own, k->rcnt[me], k->out, k->rcnt, k->rdsp, &k->r->pr);
    } else {
        pgrc = pg_iallgather(k->c->g, own, k->out, k->rcnt[me], &k->r->pr);
    }
    return coll_start(k, pgrc, request);
}

#pragma weak MPI_Iallgather = PMPI_Iallgather
int PMPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_allgatherv(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL,
                                     recvcount, recvtype, comm, request);
    }
    struct coll k;
    struct shim_dtype *st = NULL, *rt = NULL;
    int rc;
    if (shim_dev_try_allgather(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, request, &rc)) {
        return rc;
    }
    rc = coll_begin(&k, SHIM_FN, comm);
    k.dev_checked = true;

    if (rc == MPI_SUCCESS) {
        rc = check_buf(&k, sendbuf, sendcount, sendtype, &st, true, "sendbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = check_buf(&k, recvbuf, recvcount, recvtype, &rt, false, "recvbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = side_equal(&k, &k.R, k.n, recvbuf, recvcount, rt);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    return allgather_common(&k, sendbuf, sendcount, st, false, request);
}

/* MPI_IN_PLACE input of a blocking allgather or alltoall: my block (allgather) or all of
 * recvbuf (alltoall, from a copy: pg_alltoall's buffers may not overlap), packed. */
static int pair_in_place(struct shim_blk *b, void *recvbuf, int recvcount, bool gather)
{
    int n = b->c->g->size, me = b->c->g->rank;
    size_t block = (size_t)recvcount * b->t->size;

    if (gather) {
        b->in.ptr = (char *)b->out.ptr + (size_t)me * block;
        if (b->out.tmp) {
            shim_dtype_pack((char *)recvbuf + (MPI_Aint)me * recvcount * b->t->extent,
                            (size_t)recvcount, b->t, b->in.ptr);
        }
        return MPI_SUCCESS;
    }
    b->in.tmp = malloc(block * (size_t)n + 1);
    if (!b->in.tmp) {
        return shim_error(b->comm, b->fn, MPI_ERR_NO_MEM, "no memory to copy recvbuf");
    }
    shim_dtype_pack(recvbuf, (size_t)recvcount * (size_t)n, b->t, b->in.tmp);
    b->in.ptr = b->in.tmp;
    return MPI_SUCCESS;
}

/* Blocking allgather (gather) and alltoall: this rank's buffers in contiguous form, then
 * pg_core's blocking form, which alone chooses the path. MPI_IN_PLACE is given by every
 * rank or by none, as MPI requires. */
static int pair_blocking(const char *fn, const void *sendbuf, int sendcount, MPI_Datatype st,
                         void *recvbuf, int recvcount, MPI_Datatype rt, MPI_Comm comm,
                         bool gather)
{
    struct shim_blk b;
    struct shim_dtype *s = NULL;
    bool in_place = sendbuf == MPI_IN_PLACE;
    int rc = shim_blk_begin(&b, fn, comm, recvcount, rt);
    int n = rc == MPI_SUCCESS ? b.c->g->size : 0;
    size_t block = rc == MPI_SUCCESS ? (size_t)recvcount * b.t->size : 0;

    if (rc == MPI_SUCCESS && !in_place) {
        rc = shim_coll_check(fn, comm, sendcount, st, &b.c, &s);
    }
    if (rc == MPI_SUCCESS && (size_t)recvcount * (size_t)n > INT_MAX) {
        rc = shim_error(comm, fn, MPI_ERR_COUNT, "%d ranks x %d elements exceed an int", n,
                        recvcount);
    }
    if (rc == MPI_SUCCESS && !in_place && (size_t)sendcount * s->size != block) {
        rc = shim_error(comm, fn, MPI_ERR_TRUNCATE, "a block sent is %zu bytes, one received "
                        "%zu", (size_t)sendcount * s->size, block);
    }
    if (rc == MPI_SUCCESS) {
        rc = shim_blk_out(&b, recvbuf, recvcount * n, b.t, "recvbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = in_place ? pair_in_place(&b, recvbuf, recvcount, gather)
                      : shim_blk_in(&b, sendbuf, gather ? sendcount : sendcount * n, s,
                                    "sendbuf");
    }
    if (rc != MPI_SUCCESS) {
        shim_blk_end(&b, PGC_OK);
        return rc;
    }
    return shim_blk_end(&b, gather ? pg_allgather(b.c->g, b.in.ptr, b.out.ptr, block)
                                   : pg_alltoall(b.c->g, b.in.ptr, b.out.ptr, block));
}

#pragma weak MPI_Allgather = PMPI_Allgather
int PMPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_allgatherv(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, NULL, NULL,
                                     recvcount, recvtype, comm, NULL);
    }
    int rc;

    if (shim_dev_try_allgather(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                               recvtype, comm, NULL, &rc)) {
        return rc;
    }
    return pair_blocking(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                         comm, true);
}

#pragma weak MPI_Iallgatherv = PMPI_Iallgatherv
int PMPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                     MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_allgatherv(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                     displs, 0, recvtype, comm, request);
    }
    struct coll k;
    struct shim_dtype *st = NULL, *rt = NULL;
    int rc = coll_begin(&k, SHIM_FN, comm);

    if (rc == MPI_SUCCESS) {
        rc = check_buf(&k, sendbuf, sendcount, sendtype, &st, true, "sendbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = check_vbuf(&k, recvbuf, recvcounts, displs, recvtype, &rt, false, "recvcounts");
    }
    if (rc == MPI_SUCCESS) {
        rc = side_v(&k, &k.R, recvbuf, recvcounts, displs, rt);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    return allgather_common(&k, sendbuf, sendcount, st, true, request);
}

#pragma weak MPI_Allgatherv = PMPI_Allgatherv
int PMPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                    const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                    MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          (shim_outer_fn = SHIM_FN, PMPI_Iallgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts,
                                           displs, recvtype, comm, &req)),
                          &req);
}

/* ---- Alltoall ---- */

/* Everything of alltoall(v,w) after both sides' blocks are set. MPI_IN_PLACE reads the
 * input from recvbuf, so it is always packed into a copy first. */
static int alltoall_common(struct coll *k, bool in_place, MPI_Request *request)
{
    int rc = coll_prepare(k, in_place);
    bool equal = true;

    if (rc != MPI_SUCCESS) {
        return coll_fail(k, rc);
    }
    /* Equal blocks on both sides lie at i * bytes, direct or packed: the plain alltoall. */
    for (int i = 0; i < k->n; i++) {
        equal = equal && k->scnt[i] == k->rcnt[0] && k->rcnt[i] == k->rcnt[0] &&
                k->sdsp[i] == (size_t)i * k->rcnt[0] && k->rdsp[i] == (size_t)i * k->rcnt[0];
    }
    if (equal) {
        return coll_start(k, pg_ialltoall(k->c->g, k->in, k->out, k->rcnt[0], &k->r->pr), request);
    }
    return coll_start(
        k, pg_ialltoallv(k->c->g, k->in, k->scnt, k->sdsp, k->out, k->rcnt, k->rdsp, &k->r->pr),
        request);
}

#pragma weak MPI_Ialltoall = PMPI_Ialltoall
int PMPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   int recvcount, MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_alltoallw(SHIM_FN, sendbuf, NULL, NULL, NULL, sendcount, sendtype,
                                    recvbuf, NULL, NULL, NULL, recvcount, recvtype, comm, request);
    }
    struct coll k;
    struct shim_dtype *st = NULL, *rt = NULL;
    int rc;
    bool in_place = sendbuf == MPI_IN_PLACE;

    if (shim_dev_try_alltoall(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                              recvtype, comm, request, &rc)) {
        return rc;
    }
    rc = coll_begin(&k, SHIM_FN, comm);
    k.dev_checked = true;

    if (rc == MPI_SUCCESS) {
        rc = check_buf(&k, sendbuf, sendcount, sendtype, &st, true, "sendbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = check_buf(&k, recvbuf, recvcount, recvtype, &rt, false, "recvbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = side_equal(&k, &k.R, k.n, recvbuf, recvcount, rt);
    }
    if (rc == MPI_SUCCESS) {
        rc = in_place ? side_copy(&k, &k.S, &k.R)
                      : side_equal(&k, &k.S, k.n, sendbuf, sendcount, st);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    return alltoall_common(&k, in_place, request);
}

#pragma weak MPI_Alltoall = PMPI_Alltoall
int PMPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_alltoallw(SHIM_FN, sendbuf, NULL, NULL, NULL, sendcount, sendtype,
                                    recvbuf, NULL, NULL, NULL, recvcount, recvtype, comm, NULL);
    }
    int rc;

    if (shim_dev_try_alltoall(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcount,
                              recvtype, comm, NULL, &rc)) {
        return rc;
    }
    return pair_blocking(SHIM_FN, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                         comm, false);
}

#pragma weak MPI_Ialltoallv = PMPI_Ialltoallv
int PMPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                    const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_alltoallw(SHIM_FN, sendbuf, sendcounts, sdispls, NULL, 0, sendtype,
                                    recvbuf, recvcounts, rdispls, NULL, 0, recvtype, comm,
                                    request);
    }
    struct coll k;
    struct shim_dtype *st = NULL, *rt = NULL;
    int rc = coll_begin(&k, SHIM_FN, comm);
    bool in_place = sendbuf == MPI_IN_PLACE;

    if (rc == MPI_SUCCESS) {
        rc = check_vbuf(&k, sendbuf, sendcounts, sdispls, sendtype, &st, true, "sendcounts");
    }
    if (rc == MPI_SUCCESS) {
        rc = check_vbuf(&k, recvbuf, recvcounts, rdispls, recvtype, &rt, false, "recvcounts");
    }
    if (rc == MPI_SUCCESS) {
        rc = side_v(&k, &k.R, recvbuf, recvcounts, rdispls, rt);
    }
    if (rc == MPI_SUCCESS) {
        rc = in_place ? side_copy(&k, &k.S, &k.R)
                      : side_v(&k, &k.S, sendbuf, sendcounts, sdispls, st);
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    return alltoall_common(&k, in_place, request);
}

#pragma weak MPI_Alltoallv = PMPI_Alltoallv
int PMPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                   const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          (shim_outer_fn = SHIM_FN, PMPI_Ialltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf,
                                          recvcounts, rdispls, recvtype, comm, &req)),
                          &req);
}

/* Alltoallw's blocks: counts[i] elements of types[i] at displs[i] bytes from buf. The type
 * of an empty block is not looked at. */
static int side_w(struct coll *k, struct side *sd, const void *buf, const int *counts,
                  const int *displs, const MPI_Datatype *types, const char *what)
{
    int rc = check_counts(k, counts, displs, true, what);

    if (rc == MPI_SUCCESS && !types) {
        rc = shim_error(k->comm, k->fn, MPI_ERR_ARG, "the type array of %s is NULL", what);
    }
    if (rc == MPI_SUCCESS) {
        rc = side_blocks(k, sd, k->n, buf);
    }
    for (int i = 0; rc == MPI_SUCCESS && i < k->n; i++) {
        sd->b[i] = (struct blk){sd->base + displs[i], (size_t)counts[i], NULL};
        if (counts[i] > 0) {
            rc = check_type(k, counts[i], types[i], &sd->b[i].t, what);
        }
    }
    return rc;
}

#pragma weak MPI_Ialltoallw = PMPI_Ialltoallw
int PMPI_Ialltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                    const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                    const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm,
                    MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_alltoallw(SHIM_FN, sendbuf, sendcounts, sdispls, sendtypes, 0,
                                    MPI_DATATYPE_NULL, recvbuf, recvcounts, rdispls, recvtypes,
                                    0, MPI_DATATYPE_NULL, comm, request);
    }
    struct coll k;
    int rc = coll_begin(&k, SHIM_FN, comm);
    bool in_place = sendbuf == MPI_IN_PLACE;

    if (rc == MPI_SUCCESS) {
        rc = check_in_place(&k, recvbuf, false, "recvbuf");
    }
    if (rc == MPI_SUCCESS) {
        rc = side_w(&k, &k.R, recvbuf, recvcounts, rdispls, recvtypes, "recvcounts");
    }
    if (rc == MPI_SUCCESS) {
        rc = in_place ? side_copy(&k, &k.S, &k.R)
                      : side_w(&k, &k.S, sendbuf, sendcounts, sdispls, sendtypes, "sendcounts");
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    return alltoall_common(&k, in_place, request);
}

#pragma weak MPI_Alltoallw = PMPI_Alltoallw
int PMPI_Alltoallw(const void *sendbuf, const int sendcounts[], const int sdispls[],
                   const MPI_Datatype sendtypes[], void *recvbuf, const int recvcounts[],
                   const int rdispls[], const MPI_Datatype recvtypes[], MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN,
                          (shim_outer_fn = SHIM_FN, PMPI_Ialltoallw(sendbuf, sendcounts, sdispls, sendtypes, recvbuf,
                                          recvcounts, rdispls, recvtypes, comm, &req)),
                          &req);
}

/* ---- Reduce_scatter, scan, exscan ---- */

/* Checks and sides of a reduction whose input is in_count elements and whose output is
 * out_count elements (out_count < 0: no output on this rank, exscan's rank 0). Fills spec,
 * with its user-op context in the request; *scale: op elements per element of dt. */
static int red_prepare(struct coll *k, const void *sendbuf, void *recvbuf, size_t in_count,
                       int out_count, MPI_Datatype dt, MPI_Op op, struct pg_op_spec *spec,
                       size_t *scale)
{
    struct shim_dtype *t = NULL;
    struct shim_op_call call;
    int rc = check_in_place(k, recvbuf, false, "recvbuf");

    if (rc == MPI_SUCCESS) {
        rc = check_type(k, 0, dt, &t, "count");
    }
    if (rc == MPI_SUCCESS) {
        /* MPI_ERR_OP, or MPI_ERR_TYPE for a user op on a non-contiguous type. */
        rc = shim_op_spec(op, dt, t, spec, scale, &call);
        if (rc != MPI_SUCCESS) {
            rc = shim_error(k->comm, k->fn, rc, "%s", mps_last_error());
        }
    }
    if (rc == MPI_SUCCESS) {
        rc = side_blocks(k, &k->S, 1, sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf);
    }
    if (rc == MPI_SUCCESS) {
        k->S.b[0] = (struct blk){k->S.base, in_count, t};
        rc = side_blocks(k, &k->R, out_count < 0 ? 0 : 1, recvbuf);
    }
    if (rc == MPI_SUCCESS && out_count >= 0) {
        k->R.b[0] = (struct blk){k->R.base, (size_t)out_count, t};
    }
    if (rc == MPI_SUCCESS) {
        rc = coll_prepare(k, false);
    }
    if (rc == MPI_SUCCESS) {
        k->r->opcall = call;
        if (spec->user_fn) {
            spec->user_ctx = &k->r->opcall;
        }
    }
    return rc;
}

#pragma weak MPI_Ireduce_scatter_block = PMPI_Ireduce_scatter_block
int PMPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt,
                               MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_reduce_scatter(SHIM_FN, sendbuf, recvbuf, NULL, recvcount, dt, op,
                                         comm, request);
    }
    struct coll k;
    struct pg_op_spec spec;
    size_t scale;
    int rc;

    if (shim_dev_try_reduce_scatter_block(SHIM_FN, sendbuf, recvbuf, recvcount, dt, op, comm,
                                          request, &rc)) {
        return rc;
    }
    rc = coll_begin(&k, SHIM_FN, comm);
    k.dev_checked = true;

    if (rc == MPI_SUCCESS && recvcount < 0) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_COUNT, "recvcount %d is negative", recvcount);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = red_prepare(&k, sendbuf, recvbuf, (size_t)recvcount * (size_t)k.n, recvcount, dt, op,
                     &spec, &scale);
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    return coll_start(
        &k,
        pg_ireduce_scatter_block(k.c->g, k.in, k.out, (size_t)recvcount * scale, &spec, &k.r->pr),
        request);
}

#pragma weak MPI_Reduce_scatter_block = PMPI_Reduce_scatter_block
int PMPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount, MPI_Datatype dt,
                              MPI_Op op, MPI_Comm comm)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_reduce_scatter(SHIM_FN, sendbuf, recvbuf, NULL, recvcount, dt, op,
                                         comm, NULL);
    }
    int rc;

    if (shim_dev_try_reduce_scatter_block(SHIM_FN, sendbuf, recvbuf, recvcount, dt, op, comm,
                                          NULL, &rc)) {
        return rc;
    }
    return shim_reduce_scatter_block_blk(SHIM_FN, sendbuf, recvbuf, recvcount, dt, op, comm);
}

#pragma weak MPI_Ireduce_scatter = PMPI_Ireduce_scatter
int PMPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                         MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_reduce_scatter(SHIM_FN, sendbuf, recvbuf, recvcounts, 0, dt, op,
                                         comm, request);
    }
    struct coll k;
    struct pg_op_spec spec;
    size_t scale, total = 0, *counts = NULL;
    int rc = coll_begin(&k, SHIM_FN, comm);

    if (rc == MPI_SUCCESS) {
        rc = check_counts(&k, recvcounts, NULL, false, "recvcounts");
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    for (int i = 0; i < k.n; i++) {
        total += (size_t)recvcounts[i];
    }
    rc = red_prepare(&k, sendbuf, recvbuf, total, recvcounts[k.me], dt, op, &spec, &scale);
    if (rc == MPI_SUCCESS) {
        counts = malloc(sizeof(size_t) * (size_t)k.n);
        if (!counts) {
            rc = shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for %d counts", k.n);
        }
    }
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    for (int i = 0; i < k.n; i++) {
        counts[i] = (size_t)recvcounts[i] * scale;
    }
    /* pg_core copies the counts: they may go at return. */
    rc = pg_ireduce_scatter(k.c->g, k.in, k.out, counts, &spec, &k.r->pr);
    free(counts);
    return coll_start(&k, rc, request);
}

#pragma weak MPI_Reduce_scatter = PMPI_Reduce_scatter
int PMPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[], MPI_Datatype dt,
                        MPI_Op op, MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(
        SHIM_FN, (shim_outer_fn = SHIM_FN, PMPI_Ireduce_scatter(sendbuf, recvbuf, recvcounts, dt, op, comm, &req)), &req);
}

static int scan_common(const char *fn, const void *sendbuf, void *recvbuf, int count,
                       MPI_Datatype dt, MPI_Op op, MPI_Comm comm, bool exclusive,
                       MPI_Request *request)
{
    if (shim_comm_is_inter(comm)) {
        return shim_inter_scan(fn, comm);
    }
    struct coll k;
    struct pg_op_spec spec;
    size_t scale;
    int rc = coll_begin(&k, fn, comm), pgrc;

    if (rc == MPI_SUCCESS && count < 0) {
        rc = shim_error(comm, fn, MPI_ERR_COUNT, "count %d is negative", count);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Exscan leaves rank 0's recvbuf alone: no output side to unpack there. */
    rc = red_prepare(&k, sendbuf, recvbuf, (size_t)count, exclusive && k.me == 0 ? -1 : count, dt,
                     op, &spec, &scale);
    if (rc != MPI_SUCCESS) {
        return coll_fail(&k, rc);
    }
    if (exclusive) {
        pgrc = pg_iexscan(k.c->g, k.in, k.out, (size_t)count * scale, &spec, &k.r->pr);
    } else {
        pgrc = pg_iscan(k.c->g, k.in, k.out, (size_t)count * scale, &spec, &k.r->pr);
    }
    return coll_start(&k, pgrc, request);
}

#pragma weak MPI_Iscan = PMPI_Iscan
int PMPI_Iscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
               MPI_Comm comm, MPI_Request *request)
{
    return scan_common(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, false, request);
}

#pragma weak MPI_Scan = PMPI_Scan
int PMPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
              MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN, (shim_outer_fn = SHIM_FN, PMPI_Iscan(sendbuf, recvbuf, count, dt, op, comm, &req)), &req);
}

#pragma weak MPI_Iexscan = PMPI_Iexscan
int PMPI_Iexscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                 MPI_Comm comm, MPI_Request *request)
{
    return scan_common(SHIM_FN, sendbuf, recvbuf, count, dt, op, comm, true, request);
}

#pragma weak MPI_Exscan = PMPI_Exscan
int PMPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op,
                MPI_Comm comm)
{
    MPI_Request req;

    return shim_coll_wait(SHIM_FN, (shim_outer_fn = SHIM_FN, PMPI_Iexscan(sendbuf, recvbuf, count, dt, op, comm, &req)), &req);
}
