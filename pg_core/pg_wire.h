/*
 * pg_wire.h - the envelope of a point-to-point message as it travels in an active message
 * (a ring record or a libfabric message), and its decoding, which checks everything a
 * peer wrote before anything is read by it. Apart from pg_internal.h so that
 * tests/fuzz/fuzz_wire.c runs the same code as pg_p2p.c.
 */
#ifndef PG_WIRE_H
#define PG_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A message's envelope as the matching code sees it (decoded from the wire form below). */
enum pg_wire_kind {
    PG_WIRE_EAGER = 1,
    PG_WIRE_RTS = 2,
    PG_WIRE_ACK = 3, /* its tag carries a status: < 0 when the receiver lost the message, else
                      * PG_ACK_* */
    /* A sender withdraws a message it sent (MPI_Cancel, pg_cancel_send): rndv_tag names a
     * rendezvous message, or is 0 for a synchronous eager one; sync_id is the cookie of the
     * send, which the answer (an ACK) carries back. */
    PG_WIRE_CANCEL = 4,
    PG_WIRE_LOST = 0x80 /* never on the wire: a queued envelope whose payload no memory kept */
};

/* The status an ACK carries when it is not an error: the receive of a synchronous message
 * started, or the answer to a PG_WIRE_CANCEL (the message was withdrawn, or it had already
 * matched a receive and is kept). */
enum pg_ack_status { PG_ACK_RECEIVED = 0, PG_ACK_WITHDRAWN = 1, PG_ACK_KEPT = 2 };

struct pg_wire {
    uint64_t ctx;
    int32_t src; /* the sender's rank in the group of ctx */
    int32_t tag;
    uint32_t kind;
    uint32_t src_world;
    uint64_t len;
    uint64_t rndv_tag; /* RTS: the fabric tag of the data transfer */
    uint64_t sync_id;  /* synchronous eager send: the cookie to ack; ACK: that cookie;
                        * CANCEL: the cookie of the send withdrawn */
};

/* On the wire: 16 bytes for a standard eager message of less than 64 KiB, so that the ring
 * record of a message of up to 32 bytes (record header, this, payload) fits one cache line;
 * rendezvous, synchronous, ack and longer messages add the extension. Contexts fit 32 bits
 * (PG_CTX_LIMIT). The sender's world rank comes from the transport. */
struct pg_wire_hdr {
    uint32_t ctx;
    int32_t src, tag;
    uint16_t len; /* eager payload bytes (the extension holds the 64-bit length) */
    uint8_t kind;
    uint8_t has_ext;
};
_Static_assert(sizeof(struct pg_wire_hdr) == 16, "one line holds a 32-byte message");

struct pg_wire_ext {
    uint64_t len, rndv_tag, sync_id;
};

/* The fabric tag of every rendezvous transfer (fab.h's FAB_TAG_RNDV) and the sender's
 * world rank above bit 32 of it: an RTS names its own sender. */
#define PG_WIRE_RNDV_BIT (1ULL << 63)

/* Decodes the wire form in buf (len bytes, an active message from world rank peer) into
 * *w and returns its payload, or returns NULL with *why saying what is wrong: too short
 * for its header, an unknown kind, an eager payload whose size is not the one announced,
 * a rendezvous, an ack or a cancel without its extension or with a payload, a rendezvous
 * tag (of an RTS or a cancel) that is not the sender's, an ack or a cancel of nothing, a
 * negative source rank. */
static inline const void *pg_wire_parse(const void *buf, size_t len, int peer, struct pg_wire *w,
                                        const char **why)
{
    const struct pg_wire_hdr *h = buf;
    const struct pg_wire_ext *x = (const void *)(h + 1);
    size_t hlen;

    *why = "shorter than its header";
    if (len < sizeof(*h) || h->has_ext > 1 || len < sizeof(*h) + h->has_ext * sizeof(*x)) {
        return NULL;
    }
    hlen = sizeof(*h) + h->has_ext * sizeof(*x);
    *w = (struct pg_wire){.ctx = h->ctx, .src = h->src, .tag = h->tag, .kind = h->kind,
                          .src_world = (uint32_t)peer, .len = h->len};
    if (h->has_ext) {
        w->len = x->len;
        w->rndv_tag = x->rndv_tag;
        w->sync_id = x->sync_id;
    }
    *why = "of an unknown kind";
    if (w->kind < PG_WIRE_EAGER || w->kind > PG_WIRE_CANCEL) {
        return NULL;
    }
    *why = "whose payload is not the size its header says";
    if (w->kind == PG_WIRE_EAGER ? w->len != len - hlen : len != hlen) {
        return NULL;
    }
    *why = "that is a rendezvous, an acknowledgement or a cancel without its extension";
    if (w->kind != PG_WIRE_EAGER && !h->has_ext) {
        return NULL;
    }
    *why = "that is a rendezvous whose tag is not its sender's";
    if ((w->kind == PG_WIRE_RTS || (w->kind == PG_WIRE_CANCEL && w->rndv_tag)) &&
        (!(w->rndv_tag & PG_WIRE_RNDV_BIT) ||
         ((w->rndv_tag >> 32) & 0x7fffffffu) != (uint32_t)peer)) {
        return NULL;
    }
    *why = "that acknowledges or cancels no send or names a negative source rank";
    if ((w->kind >= PG_WIRE_ACK && !w->sync_id) || (w->kind != PG_WIRE_ACK && w->src < 0)) {
        return NULL;
    }
    return (const char *)buf + hlen;
}

#endif
