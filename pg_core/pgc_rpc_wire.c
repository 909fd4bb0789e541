/*
 * pgc_rpc_wire.c - a pgc_rpc_value on the wire.
 *
 * One header message carries, in order: struct rpc_hdr, the function name (or error text),
 * one rpc_tdesc per tensor, one rpc_rdesc per RRef, the bytes, then the data of the small
 * tensors. A tensor of RPC_INLINE_MAX bytes or more travels as a message of its own, sent
 * from the caller's memory (no copy on the send path; past the eager limit the transport
 * moves it by rendezvous) and received straight into the buffer the value will own. Small
 * tensors are copied once into the header message: one message costs less than two.
 */
#include "config.h"

#include "mps_log.h"
#include "pgc_internal.h"
#include "pgc_rpc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RPC_INLINE_MAX 8192
/* The name is padded to 8 bytes on the wire, so that the descriptors after it (read in
 * place) are aligned as their types require. */
#define NAME_PADDED(n) (((size_t)(n) + 7) & ~(size_t)7)

static size_t tensor_bytes(const pgc_tensor *t)
{
    return t->numel * pgc_dtype_size(t->dtype);
}

static bool tensor_separate(const pgc_tensor *t)
{
    return tensor_bytes(t) >= RPC_INLINE_MAX;
}

int rpc_wire_pack(struct rpc_hdr *h, const char *name, size_t name_len, const pgc_rpc_value *v,
                  const struct rpc_rdesc *rd, void *small, size_t small_len, void **buf,
                  size_t *len)
{
    int nt = v ? v->ntensors : 0, nr = v ? v->nrrefs : 0;
    size_t nb = v ? v->nbytes : 0;
    size_t total = sizeof(*h) + NAME_PADDED(name_len) + (size_t)nt * sizeof(struct rpc_tdesc) +
                   (size_t)nr * sizeof(struct rpc_rdesc) + nb;
    struct rpc_tdesc *td;
    unsigned char *p;

    for (int i = 0; i < nt; i++) {
        total += tensor_separate(&v->tensors[i]) ? 0 : tensor_bytes(&v->tensors[i]);
    }
    p = total <= small_len ? small : malloc(total);
    if (!p) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc: %zu bytes for a message", total);
    }
    h->magic = RPC_MAGIC;
    h->name_len = (uint16_t)name_len;
    h->ntensors = (uint32_t)nt;
    h->nrrefs = (uint32_t)nr;
    h->nbytes = nb;
    *buf = p;
    *len = total;
    memcpy(p, h, sizeof(*h));
    p += sizeof(*h);
    memcpy(p, name, name_len);
    memset(p + name_len, 0, NAME_PADDED(name_len) - name_len);
    p += NAME_PADDED(name_len);
    td = (struct rpc_tdesc *)p;
    for (int i = 0; i < nt; i++) {
        td[i].dtype = (uint32_t)v->tensors[i].dtype;
        td[i].numel = v->tensors[i].numel;
        td[i].separate = tensor_separate(&v->tensors[i]);
    }
    p += (size_t)nt * sizeof(*td);
    if (nr) {
        memcpy(p, rd, (size_t)nr * sizeof(*rd));
    }
    p += (size_t)nr * sizeof(*rd);
    if (nb) {
        memcpy(p, v->bytes, nb);
    }
    p += nb;
    for (int i = 0; i < nt; i++) {
        if (!td[i].separate && tensor_bytes(&v->tensors[i])) {
            memcpy(p, v->tensors[i].data, tensor_bytes(&v->tensors[i]));
            p += tensor_bytes(&v->tensors[i]);
        }
    }
    return PGC_OK;
}

/* The descriptors' claims against the message's length: a corrupt or foreign message is an
 * error, never a read past the buffer. */
static int check_sizes(const struct rpc_hdr *h, const struct rpc_tdesc *td, size_t len)
{
    size_t need = sizeof(*h) + NAME_PADDED(h->name_len) + (size_t)h->ntensors * sizeof(*td) +
                  (size_t)h->nrrefs * sizeof(struct rpc_rdesc);

    if (h->ntensors > 65536 || h->nrrefs > 65536 || need > len || h->nbytes > len - need) {
        return PGC_ERR_TRUNCATE;
    }
    need += h->nbytes;
    for (uint32_t i = 0; i < h->ntensors; i++) {
        size_t es = pgc_dtype_size((pgc_dtype)td[i].dtype);
        if (es == 0 || td[i].numel > SIZE_MAX / 2 / es) {
            return PGC_ERR_INVALID_DTYPE;
        }
        if (!td[i].separate) {
            need += td[i].numel * es;
            if (need > len) {
                return PGC_ERR_TRUNCATE;
            }
        }
    }
    return PGC_OK;
}

static int recv_separate(int src, uint32_t tag, void *buf, size_t n)
{
    struct pg_req req;
    int rc;

    pg_req_no_callback(&req);
    rc = pg_irecv(rpc.g, buf, n, src, (int)tag, &req);
    if (rc == PGC_OK) {
        rc = pg_wait(&req, rpc.timeout);
    }
    if (rc == PGC_OK && req.len != n) {
        rc = mps_error(PGC_ERR_TRUNCATE, "a tensor of %zu bytes arrived as %zu", n, req.len);
    }
    return rc;
}

static int unpack_tensors(int src, const struct rpc_hdr *h, const struct rpc_tdesc *td,
                          const unsigned char *p, pgc_rpc_value *v)
{
    int rc = PGC_OK;

    v->tensors = calloc(h->ntensors ? h->ntensors : 1, sizeof(*v->tensors));
    if (!v->tensors) {
        return PGC_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < h->ntensors && rc == PGC_OK; i++) {
        size_t n = td[i].numel * pgc_dtype_size((pgc_dtype)td[i].dtype);
        void *data = malloc(n ? n : 1);
        if (!data) {
            rc = PGC_ERR_NOMEM;
            break;
        }
        v->tensors[v->ntensors++] = pgc_host_tensor(data, td[i].numel, (pgc_dtype)td[i].dtype);
        if (td[i].separate) {
            rc = recv_separate(src, h->data_tag, data, n);
        } else if (n) {
            memcpy(data, p, n);
            p += n;
        }
    }
    return rc;
}

int rpc_wire_unpack(int src, void *buf, size_t len, struct rpc_hdr *h, char *name,
                    size_t name_cap, pgc_rpc_value *v)
{
    const unsigned char *p = buf;
    const struct rpc_tdesc *td;
    const struct rpc_rdesc *rd;
    int rc;

    memset(v, 0, sizeof(*v));
    if (len < sizeof(*h)) {
        return mps_error(PGC_ERR_TRUNCATE, "pgc_rpc: a message of %zu bytes from rank %d", len,
                         src);
    }
    memcpy(h, p, sizeof(*h));
    p += sizeof(*h);
    td = (const struct rpc_tdesc *)(p + NAME_PADDED(h->name_len));
    if (h->magic != RPC_MAGIC || h->kind == 0 || h->kind >= RPC_KIND_END ||
        check_sizes(h, td, len) != PGC_OK) {
        return mps_error(PGC_ERR_TRUNCATE, "pgc_rpc: a malformed message from rank %d", src);
    }
    snprintf(name, name_cap, "%.*s", (int)h->name_len, (const char *)p);
    p += NAME_PADDED(h->name_len) + (size_t)h->ntensors * sizeof(*td);
    rd = (const struct rpc_rdesc *)p;
    p += (size_t)h->nrrefs * sizeof(*rd);
    if (h->nbytes && !(v->bytes = malloc(h->nbytes))) {
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc: %zu bytes", (size_t)h->nbytes);
    }
    if (h->nbytes) {
        memcpy(v->bytes, p, h->nbytes);
        v->nbytes = h->nbytes;
    }
    p += h->nbytes;
    rc = unpack_tensors(src, h, td, p, v);
    if (rc == PGC_OK && h->nrrefs) {
        v->rrefs = calloc(h->nrrefs, sizeof(*v->rrefs));
        rc = v->rrefs ? PGC_OK : PGC_ERR_NOMEM;
    }
    for (uint32_t i = 0; i < h->nrrefs && rc == PGC_OK; i++) {
        struct rpc_rdesc d;
        memcpy(&d, &rd[i], sizeof(d));
        v->rrefs[i] = rpc_rref_fork_in(src, &d);
        rc = v->rrefs[i] ? PGC_OK : PGC_ERR_NOMEM;
        v->nrrefs += rc == PGC_OK;
    }
    if (rc != PGC_OK) {
        pgc_rpc_value_free(v);
        return mps_error(rc, "pgc_rpc: receiving a message from rank %d: %s", src,
                         pgc_strerror(rc));
    }
    return PGC_OK;
}

int rpc_value_copy(const pgc_rpc_value *in, pgc_rpc_value *out)
{
    int rc = PGC_OK;

    memset(out, 0, sizeof(*out));
    if (in->nbytes) {
        rc = pgc_rpc_value_set_bytes(out, in->bytes, in->nbytes);
    }
    for (int i = 0; i < in->ntensors && rc == PGC_OK; i++) {
        rc = pgc_rpc_value_add_tensor(out, &in->tensors[i]);
    }
    for (int i = 0; i < in->nrrefs && rc == PGC_OK; i++) {
        rc = pgc_rpc_value_add_rref(out, in->rrefs[i]);
    }
    if (rc != PGC_OK) {
        pgc_rpc_value_free(out);
    }
    return rc;
}
