/*
 * pgc_internal.h - private to the pgc_*.c files of pg_core: the work object, argument
 * checks, the error helper that names the call and the group, and the state of the
 * process group (backend, default store, debug level).
 *
 * A pgc_group IS a struct pg_group (the public type is only an opaque name for it), so an
 * MPI communicator and a pgc group share one object and interop is a cast.
 */
#ifndef PGC_INTERNAL_H
#define PGC_INTERNAL_H

#include "pg.h"
#include "pgc.h"

#include <stdbool.h>
#include <stdint.h>

static inline struct pg_group *pgc_pg(pgc_group *g)
{
    return (struct pg_group *)g;
}

static inline pgc_group *pgc_of(struct pg_group *g)
{
    return (pgc_group *)g;
}

struct pgc_work;
/* Runs once, in the waiting thread, after every request of the work completed without
 * error: converts float16 back, divides an AVG, copies a result out. Returns a status. */
typedef int (*pgc_finish_fn)(struct pgc_work *w);

#define PGC_WORK_MSG_MAX 512

struct pgc_work {
    struct pg_req req;   /* the request of single-request operations */
    struct pg_req *reqs; /* all requests (&req, or an owned array for batches) */
    int nreqs;
    const char *call;   /* "pgc_all_reduce", for messages */
    struct pg_group *g; /* retained while the work runs (NULL for batches) */
    int status;         /* PGC_ERR_PENDING until finished */
    bool heap;          /* allocated by pgc_work_new */
    bool check_len;     /* a p2p receive: the message must fill the tensor exactly */
    size_t expect_len;
    int source; /* a receive's sender (group rank), else -1 */
    pgc_finish_fn finish;
    /* State of finish. */
    void *tmp;           /* owned scratch (float32 copy of a float16 tensor), freed at the end */
    void *out;           /* the caller's result buffer */
    size_t count;        /* its elements */
    enum pg_dtype dt;    /* the reduction's element type */
    pgc_dtype out_dtype; /* the caller's dtype (float16/bfloat16 conversion) */
    int divisor;         /* AVG: the group size; 0 no division */
    char err[PGC_WORK_MSG_MAX];
};

/* pgc_work.c */
/* Prepares w (zeroed) for call on g; heap works come from pgc_work_new. */
void pgc_work_init(struct pgc_work *w, const char *call, struct pg_group *g);
struct pgc_work *pgc_work_new(const char *call, struct pg_group *g);
/* Frees what a work that never started owns (after a failed start). */
void pgc_work_discard(struct pgc_work *w);
/* Ends a started work: async -> hands it out in *out; blocking -> waits (pg_wait semantics
 * on timeout), finishes and releases it. Returns the status of the operation. */
int pgc_work_launch(struct pgc_work *w, int async_op, pgc_work **out);
/* Polls once: true when finished (finish run, status final). */
bool pgc_work_poll(struct pgc_work *w);

/* pgc_api.c */
/* Records "call (rank R) on <group>: cause" and returns status. g may be NULL (no group:
 * "call: cause"). */
int pgc_fail(int status, const char *call, struct pg_group *g, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Records "<formatted>: <the cause recorded before>" and returns status. */
int pgc_wrap(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "world (4 ranks)" or "group of 2 ranks [0 1]". */
void pgc_group_desc(struct pg_group *g, char *buf, size_t len);
/* "pgc_all_reduce (rank 2) on world (4 ranks)": a message's prefix, with this process's
 * global rank. */
void pgc_call_desc(const char *call, struct pg_group *g, char *buf, size_t len);
/* Whether pgc_init_process_group (or MPI_Init) made the pgc world. */
extern bool pgc_initialized;
/* The full pgc_resolve_group, which raises the precise error. */
int pgc_resolve_group_slow(const char *call, pgc_group *in, struct pg_group **out);
/* NULL -> world; checks init and membership (inline: every collective asks). */
static inline int pgc_resolve_group(const char *call, pgc_group *in, struct pg_group **out)
{
    struct pg_group *g = in ? pgc_pg(in) : pg_world_group();

    if (__builtin_expect(pgc_initialized && g && (unsigned)g->rank < (unsigned)g->size, 1)) {
        *out = g;
        return PGC_OK;
    }
    return pgc_resolve_group_slow(call, in, out);
}
/* The full check of a tensor, which raises the precise error (allow_cuda: see below). */
int pgc_check_tensor_slow(const char *call, struct pg_group *g, const pgc_tensor *t,
                          const char *what, bool allow_cuda);
/* What every valid host tensor passes, in a few instructions: the collectives check their
 * tensors at every call, and an 8-byte all_reduce costs a few hundred in all. The element
 * count bound is that of the widest dtype (8 bytes). */
static inline bool pgc_host_tensor_fine(const pgc_tensor *t)
{
    return t && (unsigned)t->dtype < PGC_DTYPE_COUNT && t->device == PGC_DEVICE_HOST &&
           t->numel <= SIZE_MAX / 8 && (t->data || !t->numel);
}
/* A host tensor with a valid dtype and a buffer for its elements. */
static inline int pgc_check_tensor(const char *call, struct pg_group *g, const pgc_tensor *t,
                                   const char *what)
{
    return pgc_host_tensor_fine(t) ? PGC_OK : pgc_check_tensor_slow(call, g, t, what, false);
}
/* The same, also accepting a CUDA tensor when a device is usable (calls with a device path). */
static inline int pgc_check_tensor_dev(const char *call, struct pg_group *g, const pgc_tensor *t,
                                       const char *what)
{
    return pgc_host_tensor_fine(t) ? PGC_OK : pgc_check_tensor_slow(call, g, t, what, true);
}
/* The reduction of op on dtype (AVG reduces as SUM); PGC_ERR_INVALID_OP if undefined. */
int pgc_op_spec(const char *call, struct pg_group *g, pgc_reduce_op op, pgc_dtype dt,
                struct pg_op_spec *spec);
enum pg_dtype pgc_to_pg_dtype(pgc_dtype dt);
/* The debug level (pgc_set_debug_level, PGC_DEBUG): read at every collective. */
extern pgc_debug_level pgc_debug;
int pgc_check_args_detail(const char *call, struct pg_group *g, int dtype, int op, int root,
                          uint64_t numel);
/* DETAIL debug level: every member compares (call, dtype, op, root, numel) with the
 * others; PGC_ERR_MISMATCH on every rank when they differ. A no-op otherwise, decided
 * inline before the name is hashed. */
static inline int pgc_check_args(const char *call, struct pg_group *g, int dtype, int op, int root,
                                 uint64_t numel)
{
    if (__builtin_expect(pgc_debug != PGC_DEBUG_DETAIL || g->size == 1, 1)) {
        return PGC_OK;
    }
    return pgc_check_args_detail(call, g, dtype, op, root, numel);
}

/* pgc_store.c */
/* The default store: wraps the bootstrap's store, or serves one from rank 0 (collective). */
int pgc_store_default_open(void);
void pgc_store_default_close(void);

#endif
