/*
 * shim_bsend.c - buffered sends. MPI_Buffer_attach gives a byte budget; each buffered send
 * copies its packed data (plus MPI_BSEND_OVERHEAD of accounting) out of the user's buffer
 * and is charged against the budget until the transfer completes. The copy lives in our
 * own allocation rather than inside the attached memory: the observable semantics (the
 * call returns at once; MPI_ERR_BUFFER when the budget is exceeded; detach waits for every
 * buffered send) are the standard's.
 */
#include "config.h"

#include "shim_req.h"
#include "shim_comm.h"
#include "shim_device.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct bsend {
    struct pg_req pr;
    size_t charge;
    struct bsend *next;
    unsigned char data[];
};

static void *attached;
static size_t budget, used;
static struct bsend *pending;
/* The attached budget is process-wide: under MPI_THREAD_MULTIPLE one lock guards it. */
static pthread_mutex_t bsend_lock = PTHREAD_MUTEX_INITIALIZER;

static void lock(void)
{
    if (shim_thread_multiple) {
        pthread_mutex_lock(&bsend_lock);
    }
}

static void unlock(void)
{
    if (shim_thread_multiple) {
        pthread_mutex_unlock(&bsend_lock);
    }
}

/* Drops the buffered sends that completed, giving their charge back (lock held). */
static void reclaim(bool wait)
{
    struct bsend **pp = &pending;

    while (*pp) {
        struct bsend *b = *pp;
        if (wait && !pg_req_is_done(&b->pr)) {
            pg_wait(&b->pr, -1);
        }
        if (pg_req_is_done(&b->pr)) {
            *pp = b->next;
            used -= b->charge;
            free(b);
        } else {
            pp = &b->next;
        }
    }
}

#pragma weak MPI_Buffer_attach = PMPI_Buffer_attach
int PMPI_Buffer_attach(void *buffer, int size)
{
    int rc = MPI_SUCCESS;

    lock();
    if (attached) {
        rc = MPI_ERR_BUFFER;
    } else if (size >= 0) {
        attached = buffer;
        budget = (size_t)size;
    }
    unlock();
    if (rc != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_BUFFER, "a buffer is already attached");
    }
    if (size < 0) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "size %d is negative", size);
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Buffer_detach = PMPI_Buffer_detach
int PMPI_Buffer_detach(void *buffer_addr, int *size)
{
    lock();
    reclaim(true);
    *(void **)buffer_addr = attached;
    *size = (int)budget;
    attached = NULL;
    budget = 0;
    unlock();
    return MPI_SUCCESS;
}

/* Takes bytes (plus the overhead) from the attached budget; false when they do not fit. */
static bool charge(size_t bytes, size_t *in_use)
{
    bool ok;

    lock();
    reclaim(false);
    ok = used + bytes + MPI_BSEND_OVERHEAD <= budget;
    used += ok ? bytes + MPI_BSEND_OVERHEAD : 0;
    *in_use = used;
    unlock();
    return ok;
}

static void uncharge(size_t bytes)
{
    lock();
    used -= bytes + MPI_BSEND_OVERHEAD;
    unlock();
}

/* Copies the message out and starts sending it; *out is the pending copy. */
static int bsend_start(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                       MPI_Comm comm, struct bsend **out, const char *fn)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct bsend *b;
    size_t bytes, in_use;
    int rc;

    if (shim_comm_get(comm, &c) != MPI_SUCCESS || shim_dtype_check_comm(dt, &t) != MPI_SUCCESS ||
        count < 0) {
        /* Let the standard send path raise the precise error. */
        return PMPI_Send(buf, count, dt, dest, tag, comm);
    }
    /* NULL is MPI_BOTTOM, legal only with a derived type at absolute addresses. */
    if (!buf && count > 0 && t->size > 0 && (t->builtin || t->true_lb == 0)) {
        return shim_error(comm, fn, MPI_ERR_BUFFER,
                          "the buffer is NULL but holds %d elements of a %zu-byte datatype",
                          count, t->size);
    }
    /* The copy out is a CPU pack: device memory is refused, not read. */
    if ((rc = shim_dev_host_only(fn, comm, buf, "buf")) != MPI_SUCCESS) {
        return rc;
    }
    bytes = (size_t)count * t->size;
    if (!charge(bytes, &in_use)) {
        return shim_error(comm, fn, MPI_ERR_BUFFER,
                          "buffered send of %zu bytes does not fit: %zu of %zu attached bytes in "
                          "use", bytes, in_use, budget);
    }
    b = calloc(1, sizeof(*b) + bytes);
    if (!b) {
        uncharge(bytes);
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for %zu bytes", bytes);
    }
    shim_dtype_pack(buf, (size_t)count, t, b->data);
    b->charge = bytes + MPI_BSEND_OVERHEAD;
    rc = pg_isend(c->g, b->data, bytes, dest, tag, false, &b->pr);
    if (rc != PGC_OK) {
        uncharge(bytes);
        free(b);
        return shim_error_pg(comm, fn, rc);
    }
    lock();
    b->next = pending;
    pending = b;
    unlock();
    *out = b;
    return MPI_SUCCESS;
}

#pragma weak MPI_Bsend = PMPI_Bsend
int PMPI_Bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    struct bsend *b;
    int rc = shim_check_init(SHIM_FN);

    return rc != MPI_SUCCESS ? rc : bsend_start(buf, count, dt, dest, tag, comm, &b, SHIM_FN);
}

/* A buffered send's request completes at once: the data is already copied out. */
static void complete_now(struct shim_req *r)
{
    pg_req_init(&r->pr, PG_REQ_SEND);
    pg_req_complete(&r->pr, PGC_OK);
}

int shim_bsend_start(struct shim_req *r)
{
    struct bsend *b;
    int rc = bsend_start(r->p.buf, r->p.count, r->p.dt, r->p.peer, r->p.tag, r->comm, &b,
                         "MPI_Start");

    if (rc == MPI_SUCCESS) {
        r->finished = false;
        r->active = true;
        complete_now(r);
    }
    return rc;
}

#pragma weak MPI_Ibsend = PMPI_Ibsend
int PMPI_Ibsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    struct shim_req *r;
    int rc = PMPI_Bsend(buf, count, dt, dest, tag, comm);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    r = shim_req_new(SHIM_REQ_SEND, comm);
    if (!r) {
        return shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a request");
    }
    complete_now(r);
    *request = r->handle;
    return MPI_SUCCESS;
}
