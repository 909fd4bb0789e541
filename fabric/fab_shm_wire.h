/*
 * fab_shm_wire.h - the records of the shared-memory rings (private to fabric/): their
 * header, the bodies of the control records, and the check every record passes before
 * fab_shm.c reads it, kept here apart so that tests/fuzz/fuzz_wire.c runs the same code.
 *
 * A ring is written by another process. A record whose header is out of range (a length
 * past the ring's end, a kind that does not exist, a body of the wrong size, a slot that
 * is none) is never read further: one whose length is sound is dropped with an error
 * naming it, and the ring goes on past it; one whose length is not (the next record's
 * place is then unknown) stops the reading of that ring for good.
 */
#ifndef FAB_SHM_WIRE_H
#define FAB_SHM_WIRE_H

#include <stddef.h>
#include <stdint.h>

/* A ring's bytes, and records of a 16-byte header plus payload, each starting on a line. */
#define FAB_SHM_RING_BYTES (256u * 1024u)
#define FAB_SHM_REC_ALIGN 64u
#define FAB_SHM_REC_HDR 16u
/* The shared-copy slots of a segment. */
#define FAB_SHM_NSLOTS 64
/* A streamed transfer's chunk record's ring bytes, header included: eight fill the ring. */
#define FAB_SHM_STREAM_REC (32u * 1024u)

enum rec_kind {
    REC_AM = 1,
    REC_DATA = 2,
    REC_FIN = 3,
    REC_WRAP = 4,
    REC_HELP = 5,
    REC_CTS = 6,  /* the receiver of a streamed transfer is ready (struct data_cts) */
    REC_CHUNK = 7 /* a piece of a streamed transfer (struct chunk_hdr, then the bytes) */
};

/* The sender comes from the ring a record is in, so the header fits in 16 bytes and a
 * small message (16 B header, pg's header, a few bytes) in one line. */
struct rec_hdr {
    uint64_t stamp; /* the record's ring position + 1, stored last (see rec_ready) */
    uint32_t len;   /* payload bytes after this header (WRAP: bytes to skip, header included) */
    uint16_t kind;
    uint16_t pad;
};
_Static_assert(sizeof(struct rec_hdr) == FAB_SHM_REC_HDR, "the header size");

struct data_rts {
    uint64_t tag, addr, len, cookie;
    uint32_t slot;   /* the shared copy's slot in the sender's segment + 1, or 0 */
    uint32_t stream; /* 1: the bytes come through the ring once the receiver sends a CTS */
};

struct data_fin {
    uint64_t cookie;
    int32_t status;
    uint32_t slot; /* as in data_rts: the sender frees it */
};

/* A streamed transfer's go-ahead: the sender's request and buffer (echoed from its DATA
 * record, so the sender keeps nothing while it waits), what to send, the receive's id. */
struct data_cts {
    uint64_t cookie, addr, len, rcookie;
};

/* Precedes the bytes of a CHUNK record: whose receive they fill, and where. */
struct chunk_hdr {
    uint64_t rcookie, off;
};

/* The bytes a record of payload bytes takes in the ring, header and padding included. */
static inline size_t fab_shm_rec_size(size_t payload)
{
    return (FAB_SHM_REC_HDR + payload + FAB_SHM_REC_ALIGN - 1) &
           ~(size_t)(FAB_SHM_REC_ALIGN - 1);
}

enum fab_shm_verdict {
    FAB_SHM_REC_OK,     /* read it */
    FAB_SHM_REC_DROP,   /* skip it (fab_shm_rec_size(h->len) bytes): its body is bad */
    FAB_SHM_REC_CORRUPT /* its length is impossible: read nothing more of this ring */
};

/* The control records' body sizes; 0 for the kinds whose payload has no fixed size. */
static inline uint32_t fab_shm_body_size(unsigned kind)
{
    switch (kind) {
    case REC_DATA:
        return sizeof(struct data_rts);
    case REC_FIN:
        return sizeof(struct data_fin);
    case REC_CTS:
        return sizeof(struct data_cts);
    case REC_HELP:
        return sizeof(uint32_t);
    default:
        return 0;
    }
}

/* The checks of a body whose size is right: slots name one of FAB_SHM_NSLOTS (or none
 * where that is allowed), a FIN's status is a status (0 or negative). */
static inline enum fab_shm_verdict fab_shm_body_check(const struct rec_hdr *h, const char **why)
{
    const void *body = h + 1;

    if (h->kind == REC_DATA && (((const struct data_rts *)body)->slot > FAB_SHM_NSLOTS ||
                                ((const struct data_rts *)body)->stream > 1)) {
        *why = "a DATA record with a slot or stream flag out of range";
        return FAB_SHM_REC_DROP;
    }
    if (h->kind == REC_FIN && (((const struct data_fin *)body)->slot > FAB_SHM_NSLOTS ||
                               ((const struct data_fin *)body)->status > 0)) {
        *why = "a FIN record with a slot or status out of range";
        return FAB_SHM_REC_DROP;
    }
    if (h->kind == REC_HELP && (*(const uint32_t *)body < 1 ||
                                *(const uint32_t *)body > FAB_SHM_NSLOTS)) {
        *why = "a HELP record naming no slot";
        return FAB_SHM_REC_DROP;
    }
    return FAB_SHM_REC_OK;
}

/* Checks the record h at byte off of a ring (a multiple of FAB_SHM_REC_ALIGN, so its
 * header lies inside): reads the header, and a body only once its size is known to be
 * right. *why says what is wrong when the answer is not FAB_SHM_REC_OK. */
static inline enum fab_shm_verdict fab_shm_rec_check(const struct rec_hdr *h, size_t off,
                                                     const char **why)
{
    size_t room = FAB_SHM_RING_BYTES - off;
    uint32_t body = fab_shm_body_size(h->kind);

    if (h->kind == REC_WRAP) {
        /* A WRAP fills the rest of the ring: the next record starts at 0. */
        *why = "a WRAP record that does not end at the ring's end";
        return h->len == room ? FAB_SHM_REC_OK : FAB_SHM_REC_CORRUPT;
    }
    if (h->len > room - FAB_SHM_REC_HDR) {
        *why = "a record longer than the ring holds";
        return FAB_SHM_REC_CORRUPT;
    }
    if (h->kind < REC_AM || h->kind > REC_CHUNK) {
        *why = "a record of unknown kind";
        return FAB_SHM_REC_DROP;
    }
    if (body && h->len != body) {
        *why = "a control record of the wrong size";
        return FAB_SHM_REC_DROP;
    }
    if (h->kind == REC_CHUNK && (h->len < sizeof(struct chunk_hdr) ||
                                 h->len > FAB_SHM_STREAM_REC - FAB_SHM_REC_HDR)) {
        *why = "a CHUNK record of the wrong size";
        return FAB_SHM_REC_DROP;
    }
    return fab_shm_body_check(h, why);
}

#endif
