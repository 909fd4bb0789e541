/*
 * shim_p2p.c - MPI point-to-point: the send modes, receives, probes, matched probes,
 * persistent requests and buffered sends, translated onto pg_isend/pg_irecv.
 *
 * Non-contiguous datatypes are packed into a temporary before a send and unpacked from one
 * after a receive; contiguous ones go straight from and into the user's buffer.
 */
#include "config.h"

#include "shim_coll.h"
#include "pg_device.h"
#include "shim_req.h"
#include "shim_comm.h"
#include "shim_device.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdlib.h>
#include <string.h>

/* The full checks, with a message for each error. */
static int p2p_check_full(const char *fn, MPI_Comm comm, const void *buf, int count,
                          MPI_Datatype dt, int peer, int tag, bool recv, struct shim_comm **c,
                          struct shim_dtype **t)
{
    int rc = shim_coll_check(fn, comm, count, dt, c, t);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* NULL is MPI_BOTTOM: legal with a derived type whose data lies at absolute addresses
     * (true lb > 0), never with a predefined one (MPICH's rule). */
    if (!buf && count > 0 && (*t)->size > 0 && ((*t)->builtin || (*t)->true_lb == 0)) {
        return shim_error(comm, fn, MPI_ERR_BUFFER,
                          "the buffer is NULL but holds %d elements of a %zu-byte datatype",
                          count, (*t)->size);
    }
    if (peer != MPI_PROC_NULL && !(recv && peer == MPI_ANY_SOURCE) &&
        (peer < 0 || peer >= (*c)->g->size)) {
        return shim_error(comm, fn, MPI_ERR_RANK, "rank %d is not in the communicator (size %d)",
                          peer, (*c)->g->size);
    }
    if (!(recv && tag == MPI_ANY_TAG) && (tag < 0 || tag > PG_TAG_UB)) {
        return shim_error(comm, fn, MPI_ERR_TAG, "tag %d is outside 0..%d", tag, PG_TAG_UB);
    }
    return MPI_SUCCESS;
}

/* The common case of p2p_check, tested without its calls and messages: MPI running, a
 * valid communicator, a buffer (or count 0), a predefined datatype, a rank of the communicator (or
 * MPI_ANY_SOURCE) and a tag in range (or MPI_ANY_TAG). Every small message pays for these
 * tests, so they come first and cheap; anything else takes the full checks. */
static inline bool p2p_args_common(MPI_Comm comm, const void *buf, int count, MPI_Datatype dt,
                                   int peer, int tag, bool recv, struct shim_comm **c,
                                   struct shim_dtype **t)
{
    if (!shim_initialized() || count < 0 || (!buf && count > 0) || dt == MPI_LB || dt == MPI_UB ||
        shim_comm_get(comm, c) != MPI_SUCCESS || !(*t = shim_dtype_builtin(dt))) {
        return false;
    }
    return ((unsigned)peer < (unsigned)(*c)->g->size || (recv && peer == MPI_ANY_SOURCE)) &&
           ((unsigned)tag <= PG_TAG_UB || (recv && tag == MPI_ANY_TAG));
}

/* Checks shared by every point-to-point call. peer may be MPI_PROC_NULL, and for receives
 * MPI_ANY_SOURCE; tag for receives may be MPI_ANY_TAG. Inlined, so that the common case
 * costs its tests and not a nine-argument call. */
static inline __attribute__((always_inline)) int
p2p_check(const char *fn, MPI_Comm comm, const void *buf, int count, MPI_Datatype dt, int peer,
          int tag, bool recv, struct shim_comm **c, struct shim_dtype **t)
{
    if (mps_likely(p2p_args_common(comm, buf, count, dt, peer, tag, recv, c, t))) {
        return MPI_SUCCESS;
    }
    return p2p_check_full(fn, comm, buf, count, dt, peer, tag, recv, c, t);
}

/* device_buffer where a device is present. */
static int device_buffer_check(const char *fn, MPI_Comm comm, const void *buf, int count,
                               const struct shim_dtype *t, bool *dev)
{
    int route = pg_dev_route(buf, (size_t)count * t->size, NULL, 0);

    *dev = route == 1;
    if (route < 0) {
        return shim_error_pg(comm, fn, route);
    }
    if (*dev && !t->contig) {
        return shim_error(comm, fn, MPI_ERR_TYPE,
                          "non-contiguous datatypes on device buffers are not supported");
    }
    return MPI_SUCCESS;
}

/* Whether buf (count elements of t) is device memory: those go through pinned staging
 * (pg_dev_isend/pg_dev_irecv), contiguous ones only. Without a GPU this is one branch,
 * inline. */
static inline int device_buffer(const char *fn, MPI_Comm comm, const void *buf, int count,
                                const struct shim_dtype *t, bool *dev)
{
    *dev = false;
    return mps_likely(!pg_dev_present()) ? MPI_SUCCESS
                                         : device_buffer_check(fn, comm, buf, count, t, dev);
}

/* A standard send's fast path (pg_send_now), tried before a request is made: true when
 * the message went, or failed, at once (*rc is then the call's result: MPI_SUCCESS, or the
 * error raised on comm), false when the send needs a request. Contiguous host data only:
 * the rest is packed or staged first. */
static inline bool send_now(const char *fn, MPI_Comm comm, const struct shim_comm *c,
                            const void *buf, int count, const struct shim_dtype *t, int dest,
                            int tag, bool sync, int *rc)
{
    int prc;

    if (sync || !t->contig || pg_dev_present()) {
        return false;
    }
    prc = pg_send_now(c->g, buf, (size_t)count * t->size, dest, tag);
    if (prc == PG_NOT_NOW) {
        return false;
    }
    *rc = prc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, prc);
    return true;
}

/* Starts a send into r (a new or persistent request); r owns any packed temporary. */
static int start_send(struct shim_req *r, struct shim_comm *c, const void *buf, int count,
                      struct shim_dtype *t, int dest, int tag, bool sync, const char *fn)
{
    struct shim_msgbuf mb;
    bool dev;
    int rc = device_buffer(fn, r->comm, buf, count, t, &dev);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    r->finished = false;
    r->active = true;
    if (dev) {
        rc = pg_dev_isend(c->g, buf, (size_t)count * t->size, dest, tag, sync, &r->pr);
        return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(r->comm, fn, rc);
    }
    rc = shim_msgbuf_send(buf, count, t, &mb);
    if (rc != MPI_SUCCESS) {
        return shim_error(r->comm, fn, rc, "no memory to pack %d elements", count);
    }
    r->tmp = mb.tmp;
    rc = pg_isend(c->g, mb.ptr, mb.bytes, dest, tag, sync, &r->pr);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(r->comm, fn, rc);
}

static int start_recv(struct shim_req *r, struct shim_comm *c, void *buf, int count,
                      struct shim_dtype *t, int src, int tag, const char *fn)
{
    struct shim_msgbuf mb;
    bool dev;
    int rc = device_buffer(fn, r->comm, buf, count, t, &dev);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    r->finished = false;
    r->active = true;
    if (dev) {
        rc = pg_dev_irecv(c->g, buf, (size_t)count * t->size, src, tag, &r->pr);
        return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(r->comm, fn, rc);
    }
    rc = shim_msgbuf_recv(buf, count, t, &mb);
    if (rc != MPI_SUCCESS) {
        return shim_error(r->comm, fn, rc, "no memory for %d elements", count);
    }
    shim_req_attach_recv(r, &mb, buf, count, t);
    rc = pg_irecv(c->g, mb.ptr, mb.bytes, src, tag, &r->pr);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(r->comm, fn, rc);
}

/* A new request, started: a send to peer, or a receive from it (kind SHIM_REQ_RECV). */
static int p2p_start(enum shim_req_kind kind, void *buf, int count, MPI_Datatype dt, int peer,
                     int tag, MPI_Comm comm, bool sync, MPI_Request *request, const char *fn)
{
    bool recv = kind == SHIM_REQ_RECV;
    struct shim_comm *c;
    struct shim_dtype *t;
    struct shim_req *r;
    int rc = p2p_check(fn, comm, buf, count, dt, peer, tag, recv, &c, &t);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (!recv && send_now(fn, comm, c, buf, count, t, peer, tag, sync, &rc)) {
        *request = rc == MPI_SUCCESS ? SHIM_REQ_SENT : *request;
        return rc;
    }
    r = shim_req_new_p2p(kind, comm);
    if (!r) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a request");
    }
    rc = recv ? start_recv(r, c, buf, count, t, peer, tag, fn)
              : start_send(r, c, buf, count, t, peer, tag, sync, fn);
    if (rc != MPI_SUCCESS) {
        shim_req_free(r);
        return rc;
    }
    *request = r->handle;
    return MPI_SUCCESS;
}

static int isend_common(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                        MPI_Comm comm, bool sync, MPI_Request *request, const char *fn)
{
    return p2p_start(SHIM_REQ_SEND, (void *)buf, count, dt, dest, tag, comm, sync, request, fn);
}

/* A blocking send's request, on the heap rather than in send_common's frame: a send whose
 * wait gives up may still be completed by the transport after the call returned (a
 * rendezvous whose receiver posts late writes its completion, reads the packed copy). */
struct blocking_send {
    struct pg_req pr;
    void *tmp;                  /* the packed copy of a non-contiguous message, or NULL */
    struct blocking_send *next; /* on the list of those given up */
};

/* Sends given up while the transport may still complete them: never freed, and kept
 * reachable (a leak checker then sees them as held, which they are). */
static struct blocking_send *given_up;

/* One request kept for the next blocking send, whichever thread makes it (swapped in and
 * out atomically; a thread's own would be lost when the thread ends): a malloc and free per
 * large send cost as much as a small message's whole latency. */
static struct blocking_send *spare;

static struct blocking_send *blocking_send_take(void)
{
    struct blocking_send *bs = __atomic_exchange_n(&spare, NULL, __ATOMIC_ACQUIRE);

    return bs ? bs : malloc(sizeof(*bs));
}

/* After a blocking send's wait: its request and packed copy go, unless the send is still
 * under way after its wait gave up (a timeout, a dead peer): both are then left to the
 * transport for good, as pgc_work_free leaves a work that is still sending. */
static void send_release(struct blocking_send *bs, bool waited)
{
    if (waited && !pg_req_is_done(&bs->pr)) {
        MPS_WARN("MPI_Send (rank %d): the send is still under way after its wait gave up; its "
                 "request is left to the transport, which may still complete it (and, for a "
                 "large message, read the buffer)", pg_world_rank());
        bs->next = __atomic_load_n(&given_up, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&given_up, &bs->next, bs, true, __ATOMIC_RELEASE,
                                            __ATOMIC_RELAXED)) {
        }
        return;
    }
    free(bs->tmp);
    struct blocking_send *none = NULL;
    if (!__atomic_compare_exchange_n(&spare, &none, bs, false, __ATOMIC_RELEASE,
                                     __ATOMIC_RELAXED)) {
        free(bs);
    }
}

/* A blocking send is a send request waited for at once, without a pooled request. */
static int send_common(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                       MPI_Comm comm, bool sync, const char *fn)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct shim_msgbuf mb = {.tmp = NULL};
    struct blocking_send *bs;
    int rc = p2p_check(fn, comm, buf, count, dt, dest, tag, false, &c, &t);
    bool dev, waited;

    if (rc == MPI_SUCCESS) {
        rc = device_buffer(fn, comm, buf, count, t, &dev);
    }
    if (rc != MPI_SUCCESS || send_now(fn, comm, c, buf, count, t, dest, tag, sync, &rc)) {
        return rc;
    }
    bs = blocking_send_take();
    if (!bs || (!dev && shim_msgbuf_send(buf, count, t, &mb) != MPI_SUCCESS)) {
        free(bs);
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a request or to pack %d "
                          "elements", count);
    }
    bs->tmp = mb.tmp;
    pg_req_no_callback(&bs->pr);
    rc = dev ? pg_dev_isend(c->g, buf, (size_t)count * t->size, dest, tag, sync, &bs->pr)
             : pg_isend(c->g, mb.ptr, mb.bytes, dest, tag, sync, &bs->pr);
    /* A send that failed to start was never left with the transport. */
    waited = rc == PGC_OK && !pg_req_is_done(&bs->pr);
    if (waited) {
        rc = pg_wait(&bs->pr, -1);
    }
    send_release(bs, waited);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, rc);
}

#pragma weak MPI_Send = PMPI_Send
int PMPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_common(buf, count, dt, dest, tag, comm, false, SHIM_FN);
}

#pragma weak MPI_Ssend = PMPI_Ssend
int PMPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_common(buf, count, dt, dest, tag, comm, true, SHIM_FN);
}

/* A ready send may assume the receive is posted; sending it as a standard send is correct
 * whether or not it is. */
#pragma weak MPI_Rsend = PMPI_Rsend
int PMPI_Rsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
    return send_common(buf, count, dt, dest, tag, comm, false, SHIM_FN);
}

#pragma weak MPI_Isend = PMPI_Isend
int PMPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    return isend_common(buf, count, dt, dest, tag, comm, false, request, SHIM_FN);
}

#pragma weak MPI_Issend = PMPI_Issend
int PMPI_Issend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    return isend_common(buf, count, dt, dest, tag, comm, true, request, SHIM_FN);
}

#pragma weak MPI_Irsend = PMPI_Irsend
int PMPI_Irsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                MPI_Request *request)
{
    return isend_common(buf, count, dt, dest, tag, comm, false, request, SHIM_FN);
}

static int irecv_impl(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                      MPI_Request *request, const char *fn)
{
    return p2p_start(SHIM_REQ_RECV, buf, count, dt, source, tag, comm, false, request, fn);
}

#pragma weak MPI_Irecv = PMPI_Irecv
int PMPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
               MPI_Request *request)
{
    return irecv_impl(buf, count, dt, source, tag, comm, request, SHIM_FN);
}

#pragma weak MPI_Recv = PMPI_Recv
int PMPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
              MPI_Status *status)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct pg_req pr;
    MPI_Request req;
    int rc = p2p_check(SHIM_FN, comm, buf, count, dt, source, tag, true, &c, &t);

    pg_req_no_callback(&pr);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    /* Non-contiguous types and device buffers take the request path. */
    if (!t->contig || pg_dev_present()) {
        rc = irecv_impl(buf, count, dt, source, tag, comm, &req, SHIM_FN);
        return rc == MPI_SUCCESS ? shim_wait_named(&req, status, SHIM_FN) : rc;
    }
    /* The common case needs no request object: take the message from the sender's ring,
     * or receive straight into buf and wait. */
    if (pg_recv_direct(c->g, buf, (size_t)count * t->size, source, tag, &pr)) {
        shim_status_set(status, &pr, MPI_SUCCESS);
        return MPI_SUCCESS;
    }
    rc = pg_irecv(c->g, buf, (size_t)count * t->size, source, tag, &pr);
    if (rc == PGC_OK && !pg_req_is_done(&pr)) {
        rc = pg_wait(&pr, -1);
    }
    if (!pg_req_is_done(&pr)) {
        return shim_error(comm, SHIM_FN, shim_errclass(rc), "%s", mps_last_error());
    }
    rc = shim_raise_pg_req(comm, SHIM_FN, &pr);
    shim_status_set(status, &pr, rc);
    return rc;
}

#pragma weak MPI_Sendrecv = PMPI_Sendrecv
int PMPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                  int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source,
                  int recvtag, MPI_Comm comm, MPI_Status *status)
{
    MPI_Request reqs[2];
    MPI_Status sts[2];
    int rc2;
    int rc = irecv_impl(recvbuf, recvcount, recvtype, source, recvtag, comm, &reqs[0], SHIM_FN);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = isend_common(sendbuf, sendcount, sendtype, dest, sendtag, comm, false, &reqs[1], SHIM_FN);
    if (rc != MPI_SUCCESS) {
        PMPI_Cancel(&reqs[0]);
        PMPI_Request_free(&reqs[0]);
        return rc;
    }
    rc = shim_wait_named(&reqs[0], &sts[0], SHIM_FN);
    rc2 = shim_wait_named(&reqs[1], &sts[1], SHIM_FN);
    if (status != MPI_STATUS_IGNORE) {
        *status = sts[0];
    }
    return rc != MPI_SUCCESS ? rc : rc2;
}

#pragma weak MPI_Sendrecv_replace = PMPI_Sendrecv_replace
int PMPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int sendtag,
                          int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct shim_msgbuf mb;
    int rc = p2p_check(SHIM_FN, comm, buf, count, dt, dest, sendtag, false, &c, &t);

    /* The outgoing data is packed into a temporary so the receive may overwrite buf: a CPU
     * pack, so device memory is refused, not read. */
    if (rc != MPI_SUCCESS || (rc = shim_dev_host_only(SHIM_FN, comm, buf, "buf")) != MPI_SUCCESS) {
        return rc;
    }
    mb.bytes = (size_t)count * t->size;
    mb.tmp = malloc(mb.bytes ? mb.bytes : 1);
    if (!mb.tmp) {
        return shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for %zu bytes", mb.bytes);
    }
    shim_dtype_pack(buf, (size_t)count, t, mb.tmp);
    rc = PMPI_Sendrecv(mb.tmp, (int)mb.bytes, MPI_BYTE, dest, sendtag, buf, count, dt, source,
                       recvtag, comm, status);
    free(mb.tmp);
    return rc;
}

/* ---- Probes ---- */

static int probe_check(const char *fn, MPI_Comm comm, int source, int tag, struct shim_comm **c)
{
    struct shim_dtype *t;

    return p2p_check(fn, comm, NULL, 0, MPI_BYTE, source, tag, true, c, &t);
}

/* One probe attempt; with take, the message is removed (matched probe). */
static int probe_once(struct shim_comm *c, int source, int tag, bool take, int *flag,
                      MPI_Status *status, struct pg_msg **msg)
{
    struct pg_req env;
    bool found;
    int rc;

    pg_req_init(&env, PG_REQ_RECV);
    rc = pg_iprobe(c->g, source, tag, take, &found, &env, msg);
    *flag = found;
    if (rc == PGC_OK && found) {
        env.cap = env.len;
        shim_status_set(status, &env, MPI_SUCCESS);
    }
    return rc;
}

static int probe_wait(MPI_Comm comm, struct shim_comm *c, int source, int tag, bool take,
                      MPI_Status *status, struct pg_msg **msg, const char *fn)
{
    double deadline = mps_now() + pg_timeout();
    int flag = 0, rc = PGC_OK;

    while (rc == PGC_OK && !flag) {
        rc = probe_once(c, source, tag, take, &flag, status, msg);
        if (!flag && mps_now() > deadline) {
            return shim_error(comm, fn, MPI_ERR_OTHER,
                              "no message from source %d with tag %d arrived within %.0f s",
                              source, tag, pg_timeout());
        }
    }
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, fn, rc);
}

#pragma weak MPI_Iprobe = PMPI_Iprobe
int PMPI_Iprobe(int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status)
{
    struct shim_comm *c;
    int rc = probe_check(SHIM_FN, comm, source, tag, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        shim_status_empty(status);
        if (status != MPI_STATUS_IGNORE) {
            status->MPI_SOURCE = MPI_PROC_NULL;
        }
        return MPI_SUCCESS;
    }
    rc = probe_once(c, source, tag, false, flag, status, NULL);
    return rc == PGC_OK ? MPI_SUCCESS : shim_error_pg(comm, SHIM_FN, rc);
}

#pragma weak MPI_Probe = PMPI_Probe
int PMPI_Probe(int source, int tag, MPI_Comm comm, MPI_Status *status)
{
    struct shim_comm *c;
    int rc = probe_check(SHIM_FN, comm, source, tag, &c);

    if (rc != MPI_SUCCESS || source == MPI_PROC_NULL) {
        int flag;
        return rc != MPI_SUCCESS ? rc : PMPI_Iprobe(source, tag, comm, &flag, status);
    }
    return probe_wait(comm, c, source, tag, false, status, NULL, SHIM_FN);
}

/* Matched messages live in their own handle table until MPI_Mrecv takes them. */
static struct shim_table messages = {.obj = 0xc};

static int message_handle(struct pg_msg *m, MPI_Message *message, MPI_Comm comm, const char *fn)
{
    *message = shim_table_add(&messages, m);
    if (!*message) {
        pg_msg_free(m);
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a message handle");
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Improbe = PMPI_Improbe
int PMPI_Improbe(int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                 MPI_Status *status)
{
    struct shim_comm *c;
    struct pg_msg *m = NULL;
    int rc = probe_check(SHIM_FN, comm, source, tag, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (source == MPI_PROC_NULL) {
        *flag = 1;
        *message = MPI_MESSAGE_NO_PROC;
        return PMPI_Iprobe(source, tag, comm, flag, status);
    }
    rc = probe_once(c, source, tag, true, flag, status, &m);
    if (rc != PGC_OK) {
        return shim_error_pg(comm, SHIM_FN, rc);
    }
    return *flag ? message_handle(m, message, comm, SHIM_FN) : MPI_SUCCESS;
}

#pragma weak MPI_Mprobe = PMPI_Mprobe
int PMPI_Mprobe(int source, int tag, MPI_Comm comm, MPI_Message *message, MPI_Status *status)
{
    struct shim_comm *c;
    struct pg_msg *m = NULL;
    int rc = probe_check(SHIM_FN, comm, source, tag, &c);

    if (rc != MPI_SUCCESS || source == MPI_PROC_NULL) {
        int flag;
        return rc != MPI_SUCCESS ? rc : PMPI_Improbe(source, tag, comm, &flag, message, status);
    }
    rc = probe_wait(comm, c, source, tag, true, status, &m, SHIM_FN);
    return rc == MPI_SUCCESS ? message_handle(m, message, comm, SHIM_FN) : rc;
}

#pragma weak MPI_Imrecv = PMPI_Imrecv
int PMPI_Imrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *message,
                MPI_Request *request)
{
    struct shim_dtype *t;
    struct shim_msgbuf mb;
    struct shim_req *r;
    struct pg_msg *m;
    int rc = shim_check_init(SHIM_FN);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (*message == MPI_MESSAGE_NO_PROC) {
        r = shim_req_new(SHIM_REQ_RECV, MPI_COMM_WORLD);
        if (!r) {
            return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a request");
        }
        pg_irecv(pg_self_group(), NULL, 0, PG_PROC_NULL, 0, &r->pr);
        *request = r->handle;
        *message = MPI_MESSAGE_NULL;
        return MPI_SUCCESS;
    }
    m = shim_table_get(&messages, *message);
    if (!m) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_REQUEST, "invalid message handle 0x%x",
                          (unsigned)*message);
    }
    if (count < 0 || shim_dtype_check_comm(dt, &t) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, count < 0 ? MPI_ERR_COUNT : MPI_ERR_TYPE,
                          "%s", count < 0 ? "negative count" : mps_last_error());
    }
    r = shim_req_new(SHIM_REQ_RECV, MPI_COMM_WORLD);
    if (!r || shim_msgbuf_recv(buf, count, t, &mb) != MPI_SUCCESS) {
        if (r) {
            shim_req_free(r);
        }
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory to receive");
    }
    shim_table_remove(&messages, *message);
    shim_req_attach_recv(r, &mb, buf, count, t);
    pg_mrecv(m, mb.ptr, mb.bytes, &r->pr);
    *request = r->handle;
    *message = MPI_MESSAGE_NULL;
    return MPI_SUCCESS;
}

#pragma weak MPI_Mrecv = PMPI_Mrecv
int PMPI_Mrecv(void *buf, int count, MPI_Datatype dt, MPI_Message *message, MPI_Status *status)
{
    MPI_Request req;
    int rc = PMPI_Imrecv(buf, count, dt, message, &req);

    return rc == MPI_SUCCESS ? shim_wait_named(&req, status, SHIM_FN) : rc;
}

/* ---- Persistent requests ---- */

static int persist_init(const void *buf, int count, MPI_Datatype dt, int peer, int tag,
                        MPI_Comm comm, enum shim_req_kind kind, bool sync, MPI_Request *request,
                        const char *fn)
{
    struct shim_comm *c;
    struct shim_dtype *t;
    struct shim_req *r;
    int rc = p2p_check(fn, comm, buf, count, dt, peer, tag, kind == SHIM_REQ_RECV, &c, &t);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    r = shim_req_new(kind, comm);
    if (!r) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a request");
    }
    r->persistent = true;
    r->active = false;
    r->p = (struct shim_persist){buf, count, dt, peer, tag, sync, false, t};
    /* The request holds the type: MPI_Type_free before MPI_Start must not break it. */
    shim_dtype_retain(t);
    *request = r->handle;
    return MPI_SUCCESS;
}

#pragma weak MPI_Send_init = PMPI_Send_init
int PMPI_Send_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm,
                   MPI_Request *request)
{
    return persist_init(buf, count, dt, dest, tag, comm, SHIM_REQ_SEND, false, request, SHIM_FN);
}

#pragma weak MPI_Ssend_init = PMPI_Ssend_init
int PMPI_Ssend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    return persist_init(buf, count, dt, dest, tag, comm, SHIM_REQ_SEND, true, request, SHIM_FN);
}

#pragma weak MPI_Rsend_init = PMPI_Rsend_init
int PMPI_Rsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    return persist_init(buf, count, dt, dest, tag, comm, SHIM_REQ_SEND, false, request, SHIM_FN);
}

#pragma weak MPI_Bsend_init = PMPI_Bsend_init
int PMPI_Bsend_init(const void *buf, int count, MPI_Datatype dt, int dest, int tag,
                    MPI_Comm comm, MPI_Request *request)
{
    int rc = persist_init(buf, count, dt, dest, tag, comm, SHIM_REQ_SEND, false, request, SHIM_FN);

    if (rc == MPI_SUCCESS) {
        shim_req_get(*request)->p.buffered = true;
    }
    return rc;
}

#pragma weak MPI_Recv_init = PMPI_Recv_init
int PMPI_Recv_init(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm,
                   MPI_Request *request)
{
    return persist_init(buf, count, dt, source, tag, comm, SHIM_REQ_RECV, false, request, SHIM_FN);
}

#pragma weak MPI_Start = PMPI_Start
int PMPI_Start(MPI_Request *request)
{
    struct shim_req *r = shim_req_get(*request);
    struct shim_comm *c;
    struct shim_dtype *t;
    int rc;

    if (!r || !r->persistent || r->active) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_REQUEST,
                          "request 0x%x is not an inactive persistent request", (unsigned)*request);
    }
    /* The arguments were checked by the _init call, and the request holds its type (whose
     * handle may be freed by now); only the communicator is looked up again. */
    rc = shim_comm_get(r->comm, &c);
    if (rc != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, rc, "the request's communicator is freed");
    }
    t = r->p.type;
    if (r->kind == SHIM_REQ_RECV) {
        return start_recv(r, c, (void *)r->p.buf, r->p.count, t, r->p.peer, r->p.tag, SHIM_FN);
    }
    if (r->p.buffered) {
        return shim_bsend_start(r);
    }
    return start_send(r, c, r->p.buf, r->p.count, t, r->p.peer, r->p.tag, r->p.sync, SHIM_FN);
}

#pragma weak MPI_Startall = PMPI_Startall
int PMPI_Startall(int count, MPI_Request reqs[])
{
    for (int i = 0; i < count; i++) {
        int rc = PMPI_Start(&reqs[i]);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    return MPI_SUCCESS;
}
