/*
 * fuzz_wire.c - a libFuzzer target for the headers other processes write into what a rank
 * reads: the records of the shared-memory rings (fabric/fab_shm_wire.h) and the envelope
 * of a point-to-point message (pg_core/pg_wire.h), both the very inline functions that
 * fab_shm.c's drain and pg_p2p.c's pg_am_handler run. Run by tests/fuzz/run_fuzz.sh
 * (FUZZ_TARGET=wire).
 *
 * Byte 0 of an input chooses:
 *   even: the rest is the content of one ring from offset 0 (the rest of the ring zero),
 *         read record after record as drain does: the check decides, a sound record's
 *         body is read (an AM's payload as an envelope, as the handler would), a dropped
 *         one skipped, a corrupt one ends the walk;
 *   odd:  the rest is one active message from world rank byte 1, decoded as the handler
 *         does, and an accepted payload is read to its announced end.
 * The ring and the message lie in buffers of exactly their size, so that AddressSanitizer
 * sees any read past them.
 */
#include "config.h"

#include "fab_shm_wire.h"
#include "pg_wire.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;

/* Reads n bytes, as a copy to the receiver's buffer would. */
static void consume(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t sum = 0;

    for (size_t i = 0; i < n; i++) {
        sum += b[i];
    }
    sink += sum;
}

static void envelope(const void *buf, size_t len, int peer)
{
    struct pg_wire w;
    const char *why = NULL;
    const void *payload = pg_wire_parse(buf, len, peer, &w, &why);

    if (!payload) {
        sink += strlen(why);
        return;
    }
    consume(payload, w.kind == PG_WIRE_EAGER ? w.len : 0);
    sink += w.ctx + (uint64_t)w.src + (uint64_t)w.tag + w.rndv_tag + w.sync_id;
}

/* The body of a sound record, read as fab_shm.c's handlers read it. */
static void record(const struct rec_hdr *h)
{
    const void *body = h + 1;

    switch (h->kind) {
    case REC_AM:
        envelope(body, h->len, 1);
        break;
    case REC_DATA:
        sink += ((const struct data_rts *)body)->len + ((const struct data_rts *)body)->slot;
        break;
    case REC_FIN:
        sink += (uint64_t)((const struct data_fin *)body)->status;
        break;
    case REC_CTS:
        sink += ((const struct data_cts *)body)->rcookie;
        break;
    case REC_HELP:
        sink += *(const uint32_t *)body;
        break;
    case REC_CHUNK:
        sink += ((const struct chunk_hdr *)body)->off;
        consume((const struct chunk_hdr *)body + 1, h->len - sizeof(struct chunk_hdr));
        break;
    default:
        abort(); /* the check lets no other kind through */
    }
}

static void ring(const uint8_t *data, size_t size)
{
    unsigned char *r = calloc(1, FAB_SHM_RING_BYTES);
    size_t off = 0, total = 0;
    /* The writer's tail: the input's end, rounded to a line, at most one lap ahead. */
    size_t tail = size < FAB_SHM_RING_BYTES ? (size + FAB_SHM_REC_ALIGN - 1) &
                                                  ~(size_t)(FAB_SHM_REC_ALIGN - 1)
                                            : FAB_SHM_RING_BYTES;

    if (!r) {
        return;
    }
    memcpy(r, data, size < FAB_SHM_RING_BYTES ? size : FAB_SHM_RING_BYTES);
    /* drain reads up to the tail; a record may end past it here (the checks do not know
     * the tail), never past the ring. */
    while (total < tail) {
        const struct rec_hdr *h = (const struct rec_hdr *)(r + off);
        const char *why = NULL;
        enum fab_shm_verdict v = fab_shm_rec_check(h, off, &why);
        size_t bytes = h->kind == REC_WRAP ? h->len : fab_shm_rec_size(h->len);

        if (v == FAB_SHM_REC_CORRUPT) {
            sink += strlen(why);
            break;
        }
        if (v == FAB_SHM_REC_OK && h->kind != REC_WRAP) {
            record(h);
        }
        if (bytes == 0 || off + bytes > FAB_SHM_RING_BYTES || bytes % FAB_SHM_REC_ALIGN) {
            abort(); /* a record the check passed must keep the walk inside the ring */
        }
        off = (off + bytes) % FAB_SHM_RING_BYTES;
        total += bytes;
    }
    free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) {
        return 0;
    }
    if (data[0] & 1) {
        /* In a buffer of its own size, 8-byte aligned as a ring record's payload. */
        size_t n = size > 2 ? size - 2 : 0;
        void *msg = malloc(n ? n : 1);

        if (msg) {
            memcpy(msg, data + 2, n);
            envelope(msg, n, size > 1 ? data[1] : 0);
            free(msg);
        }
        return 0;
    }
    ring(data + 1, size - 1);
    return 0;
}
