/*
 * shim_req.c - the request pool, statuses, and the MPI completion calls (Wait*, Test*,
 * Request_free, Request_get_status, Cancel, Get_count, Get_elements).
 */
#include "config.h"

#include "mps_copy.h"
#include "mps_log.h"
#include "pgc_status.h"
#include "shim_req.h"
#include "shim_comm.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* The pool: slots never move (in-flight requests are pointed at by pg_core), free slots
 * are a stack of indexes. */
static struct shim_req **slots;
static int *free_stack;
static int nslots, nfree;

/* Under MPI_THREAD_MULTIPLE several threads take, free and look up requests at once: the
 * free stack and the slots array (which pool_grow reallocates) are guarded by pool_lock.
 * The requests themselves never move, so a pointer from shim_req_get stays valid after
 * the lock is dropped; a request is used by one thread at a time, as MPI requires. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

static bool pool_enter(void)
{
    bool locked = shim_thread_multiple;

    if (locked) {
        pthread_mutex_lock(&pool_lock);
    }
    return locked;
}

static void pool_leave(bool locked)
{
    if (locked) {
        pthread_mutex_unlock(&pool_lock);
    }
}

static int pool_grow(void)
{
    int n = nslots ? nslots * 2 : 256;
    struct shim_req **s = realloc(slots, sizeof(*s) * (size_t)n);
    int *f;

    if (!s) {
        return -1;
    }
    slots = s;
    f = realloc(free_stack, sizeof(int) * (size_t)n);
    if (!f) {
        return -1;
    }
    free_stack = f;
    for (int i = nslots; i < n; i++) {
        slots[i] = NULL;
    }
    for (int i = n - 1; i >= nslots; i--) {
        free_stack[nfree++] = i;
    }
    nslots = n;
    return 0;
}

/* A free slot's request (allocated on first use), taken off the free stack; -1 when out
 * of memory. Called with the pool lock held. */
static int pool_take(void)
{
    int i;

    if (nfree == 0 && pool_grow() != 0) {
        return -1;
    }
    i = free_stack[nfree - 1];
    if (!slots[i]) {
        slots[i] = malloc(sizeof(struct shim_req));
        if (!slots[i]) {
            return -1;
        }
    }
    nfree--;
    return i;
}

/* req_take zeroes from kind to the end: everything but the pg part, which must come first. */
_Static_assert(offsetof(struct shim_req, pr) == 0 &&
                   offsetof(struct shim_req, kind) >= sizeof(struct pg_req),
               "struct shim_req: pr must be the first member, before kind");

/* A pooled request, zeroed but for its pg part, which pg_core's calls set up (pg.h);
 * NULL when out of memory. */
static struct shim_req *req_take(enum shim_req_kind kind, MPI_Comm comm)
{
    struct shim_req *r;
    bool locked = pool_enter();
    int i = pool_take();

    r = i < 0 ? NULL : slots[i];
    if (r) {
        mps_zero(&r->kind, sizeof(*r) - offsetof(struct shim_req, kind));
        r->kind = kind;
        r->comm = comm;
        r->active = true;
        r->handle = MPISHIM_HANDLE_MAKE(MPISHIM_KIND_INDIRECT, MPISHIM_OBJ_REQUEST, i);
    }
    pool_leave(locked);
    return r;
}

struct shim_req *shim_req_new(enum shim_req_kind kind, MPI_Comm comm)
{
    struct shim_req *r = req_take(kind, comm);

    if (r) {
        memset(&r->pr, 0, sizeof(r->pr));
    }
    return r;
}

int shim_req_done(MPI_Comm comm, const char *fn, MPI_Request *request)
{
    struct shim_req *r = shim_req_new(SHIM_REQ_COLL, comm);

    if (!r) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a request");
    }
    pg_req_init(&r->pr, PG_REQ_COLL);
    pg_req_complete(&r->pr, PGC_OK);
    *request = r->handle;
    return MPI_SUCCESS;
}

struct shim_req *shim_req_new_p2p(enum shim_req_kind kind, MPI_Comm comm)
{
    struct shim_req *r = req_take(kind, comm);

    if (r) {
        pg_req_no_callback(&r->pr);
    }
    return r;
}

/* The request behind SHIM_REQ_SENT: complete and successful from the start, and only ever
 * read (threads share it), so a wait or test completes it as any finished send. */
static struct shim_req sent_req = {
    .pr = {.kind = PG_REQ_SEND, .done = 1, .status = PGC_OK, .source = PG_ANY_SOURCE,
           .tag = PG_ANY_TAG},
    .kind = SHIM_REQ_SEND,
    .comm = MPI_COMM_NULL,
    .handle = SHIM_REQ_SENT,
    .active = true,
    .finished = true,
};

/* The request of handle h, or NULL; reads the pool, so under MPI_THREAD_MULTIPLE the
 * caller holds the pool lock. */
static inline struct shim_req *req_at(MPI_Request h)
{
    unsigned i = (unsigned)MPISHIM_HANDLE_INDEX(h);
    struct shim_req *r;

    if (MPISHIM_HANDLE_KIND(h) != MPISHIM_KIND_INDIRECT ||
        MPISHIM_HANDLE_OBJ(h) != MPISHIM_OBJ_REQUEST || i >= (unsigned)nslots) {
        return h == SHIM_REQ_SENT ? &sent_req : NULL;
    }
    r = slots[i];
    return r && r->handle == h ? r : NULL;
}

struct shim_req *shim_req_get(MPI_Request h)
{
    struct shim_req *r;
    bool locked;

    if (mps_likely(!shim_thread_multiple)) {
        return req_at(h); /* every wait of every request looks here: no lock to skip */
    }
    locked = pool_enter();
    r = req_at(h);
    pool_leave(locked);
    return r;
}

static void release_temporaries(struct shim_req *r)
{
    if (mps_likely(!r->tmp && !r->tmp2 && !r->utype)) {
        return; /* a contiguous send or receive: nothing to release */
    }
    free(r->tmp);
    free(r->tmp2);
    r->tmp = r->tmp2 = NULL;
    if (r->utype) {
        shim_dtype_release(r->utype);
        r->utype = NULL;
    }
}

void shim_req_abandon(struct shim_req *r)
{
    bool locked;

    MPS_WARN("MPI_Request_free (rank %d): a send still under way after its wait gave up; "
             "its request and buffers are left to the transport (never reused), which may "
             "still read the buffer and complete the request", pg_world_rank());
    locked = pool_enter();
    r->handle = 0; /* the handle no longer names it; the slot never returns to the pool */
    pool_leave(locked);
}

void shim_req_free(struct shim_req *r)
{
    int i = MPISHIM_HANDLE_INDEX(r->handle);

    bool locked;

    if (r == &sent_req) {
        return; /* shared, never the pool's */
    }
    release_temporaries(r);
    if (r->greq) {
        shim_greq_release(r);
    }
    if (r->p.type) {
        shim_dtype_release(r->p.type);
        r->p.type = NULL;
    }
    locked = pool_enter();
    r->handle = 0; /* a stale handle no longer matches its slot */
    free_stack[nfree++] = i;
    pool_leave(locked);
}

int shim_msgbuf_send(const void *buf, int count, const struct shim_dtype *t,
                     struct shim_msgbuf *mb)
{
    mb->bytes = (size_t)count * t->size;
    mb->tmp = NULL;
    mb->ptr = (void *)buf;
    if (t->contig || mb->bytes == 0) {
        return MPI_SUCCESS;
    }
    mb->tmp = malloc(mb->bytes);
    if (!mb->tmp) {
        return MPI_ERR_NO_MEM;
    }
    shim_dtype_pack(buf, (size_t)count, t, mb->tmp);
    mb->ptr = mb->tmp;
    return MPI_SUCCESS;
}

int shim_msgbuf_recv(void *buf, int count, const struct shim_dtype *t, struct shim_msgbuf *mb)
{
    mb->bytes = (size_t)count * t->size;
    mb->tmp = NULL;
    mb->ptr = buf;
    if (t->contig || mb->bytes == 0) {
        return MPI_SUCCESS;
    }
    mb->tmp = malloc(mb->bytes);
    if (!mb->tmp) {
        return MPI_ERR_NO_MEM;
    }
    mb->ptr = mb->tmp;
    return MPI_SUCCESS;
}

static int finish_unpack(struct shim_req *r)
{
    /* A receive unpacks what arrived; a collective fills the whole output. */
    size_t n = r->kind == SHIM_REQ_COLL ? r->ucount * r->utype->size : r->pr.len;

    shim_dtype_unpack_partial(r->tmp, r->ucount, r->utype, 0, r->ubuf, n);
    return MPI_SUCCESS;
}

void shim_req_attach_recv(struct shim_req *r, struct shim_msgbuf *mb, void *buf, int count,
                          struct shim_dtype *t)
{
    if (!mb->tmp) {
        return;
    }
    r->tmp = mb->tmp;
    r->ubuf = buf;
    r->ucount = (size_t)count;
    r->utype = t;
    shim_dtype_retain(t);
    r->finish = finish_unpack;
}

void shim_status_empty(MPI_Status *st)
{
    if (st != MPI_STATUS_IGNORE) {
        st->count_lo = 0;
        st->count_hi_and_cancelled = 0;
        st->MPI_SOURCE = MPI_ANY_SOURCE;
        st->MPI_TAG = MPI_ANY_TAG;
    }
}

void shim_status_set(MPI_Status *st, const struct pg_req *pr, int error)
{
    uint64_t len = pr->kind == PG_REQ_RECV ? pr->len : 0;

    if (st == MPI_STATUS_IGNORE) {
        return;
    }
    st->count_lo = (int)(len & 0xffffffffu);
    st->count_hi_and_cancelled = (int)((len >> 32) & 0x7fffffffu) | (pr->cancelled ? INT32_MIN : 0);
    st->MPI_SOURCE = pr->kind == PG_REQ_RECV ? pr->source : MPI_ANY_SOURCE;
    st->MPI_TAG = pr->kind == PG_REQ_RECV ? pr->tag : MPI_ANY_TAG;
    /* MPI_ERROR is not written: single-completion calls return the error, and the
     * multi-completion ones set it themselves, only when they return MPI_ERR_IN_STATUS
     * (MPI-3.1 section 3.2.5). */
    (void)error;
}

int shim_raise_pg_req(MPI_Comm comm, const char *fn, const struct pg_req *pr)
{
    if (pr->status == PGC_OK) {
        return MPI_SUCCESS;
    }
    if (pr->status == PGC_ERR_TRUNCATE) {
        return shim_error(comm, fn, MPI_ERR_TRUNCATE,
                          "message from rank %d with tag %d is longer than the receive buffer "
                          "(%zu bytes)", pr->source, pr->tag, pr->cap);
    }
    /* No memory to keep a message that arrived first (pg_p2p.c, "No silent drops"): the
     * request itself names the peer, whichever thread completed it. */
    if (pr->status == PGC_ERR_NOMEM && pr->kind == PG_REQ_RECV) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory to keep a message from rank %d "
                          "(tag %d) that arrived before its receive: the message is lost",
                          pr->source, pr->tag);
    }
    if (pr->status == PGC_ERR_NOMEM && pr->kind == PG_REQ_SEND) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "rank %d had no memory to keep this "
                          "message (tag %d), which arrived before its receive: it is lost",
                          pr->match_src, pr->match_tag);
    }
    /* A dead peer's name was recorded by the wait that found it (pg_progress.c), a
     * collective's clash by the abort that failed it (pg_coll_aborted). */
    if ((pr->status == PGC_ERR_PEER_DEAD || pr->status == PGC_ERR_MISMATCH) && *mps_last_error()) {
        return shim_error(comm, fn, shim_errclass(pr->status), "%s", mps_last_error());
    }
    return shim_error(comm, fn, shim_errclass(pr->status), "%s", pgc_strerror(pr->status));
}

/* The error class of a finished request, with its cause raised on its communicator. */
int shim_req_raise(struct shim_req *r, const char *fn)
{
    return shim_raise_pg_req(r->comm, fn, &r->pr);
}

int shim_req_complete(struct shim_req *r, MPI_Request *h, MPI_Status *st)
{
    int err = MPI_SUCCESS;

    if (!r->finished) {
        r->finished = true;
        if (r->finish && r->pr.status == PGC_OK) {
            r->finish(r);
        } else if (r->finish && r->pr.status == PGC_ERR_TRUNCATE && r->tmp) {
            finish_unpack(r);
        }
        r->error = shim_errclass(r->pr.status);
    }
    err = r->error;
    if (r->greq) {
        err = shim_greq_query(r, st);
    } else {
        shim_status_set(st, &r->pr, err);
    }
    if (r->persistent) {
        r->active = false;
        release_temporaries(r);
    } else {
        shim_req_free(r);
        *h = MPI_REQUEST_NULL;
    }
    return err;
}
