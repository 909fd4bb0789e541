/*
 * test_wire.c - the checks of the wire headers other processes write (issue 40): the
 * records of the shared-memory rings (fabric/fab_shm_wire.h) and pg's message envelope
 * (pg_core/pg_wire.h). tests/fuzz/fuzz_wire.c fuzzes the same functions where clang is
 * present; these cases run everywhere.
 */
#include "config.h"

#include "fab_shm_wire.h"
#include "pg_wire.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

/* A ring of its real size, so that records can sit at its end. */
static _Alignas(64) unsigned char ring[FAB_SHM_RING_BYTES];

static struct rec_hdr *rec_at(size_t off, unsigned kind, uint32_t len, const void *body,
                              size_t blen)
{
    struct rec_hdr *h = (struct rec_hdr *)(ring + off);

    memset(ring, 0, sizeof(ring));
    *h = (struct rec_hdr){.stamp = off + 1, .len = len, .kind = (uint16_t)kind};
    if (blen) {
        memcpy(h + 1, body, blen);
    }
    return h;
}

static enum fab_shm_verdict check_at(size_t off, unsigned kind, uint32_t len, const void *body,
                                     size_t blen)
{
    const char *why = NULL;
    enum fab_shm_verdict v = fab_shm_rec_check(rec_at(off, kind, len, body, blen), off, &why);

    assert_true(v == FAB_SHM_REC_OK || (why && *why));
    return v;
}

static void test_sound_ring_records_are_taken(void **state)
{
    struct data_rts d = {.tag = 1, .addr = 4096, .len = 100, .cookie = 8, .slot = 64};
    struct data_fin fin = {.cookie = 8, .status = -3, .slot = 1};
    struct data_cts c = {1, 2, 3, 4};
    uint32_t slot = 7;
    unsigned char chunk[sizeof(struct chunk_hdr) + 100] = {0};

    (void)state;
    assert_int_equal(check_at(0, REC_DATA, sizeof(d), &d, sizeof(d)), FAB_SHM_REC_OK);
    assert_int_equal(check_at(64, REC_FIN, sizeof(fin), &fin, sizeof(fin)), FAB_SHM_REC_OK);
    assert_int_equal(check_at(128, REC_CTS, sizeof(c), &c, sizeof(c)), FAB_SHM_REC_OK);
    assert_int_equal(check_at(192, REC_HELP, 4, &slot, 4), FAB_SHM_REC_OK);
    assert_int_equal(check_at(256, REC_CHUNK, sizeof(chunk), chunk, sizeof(chunk)),
                     FAB_SHM_REC_OK);
    assert_int_equal(check_at(320, REC_AM, 0, NULL, 0), FAB_SHM_REC_OK);
    /* An AM that fills the ring's last bytes exactly. */
    assert_int_equal(check_at(FAB_SHM_RING_BYTES - 128, REC_AM, 128 - FAB_SHM_REC_HDR, NULL, 0),
                     FAB_SHM_REC_OK);
    assert_int_equal(check_at(FAB_SHM_RING_BYTES - 192, REC_WRAP, 192, NULL, 0),
                     FAB_SHM_REC_OK);
}

static void test_ring_records_with_bad_bodies_are_dropped(void **state)
{
    struct data_rts d = {.slot = 65};
    struct data_rts s = {.stream = 2};
    struct data_fin fin = {.status = 1};
    struct data_fin fslot = {.slot = 65};
    uint32_t none = 0, far = 65;
    unsigned char small[8] = {0};

    (void)state;
    assert_int_equal(check_at(0, 0, 4, small, 4), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, 8, 4, small, 4), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_DATA, 5, small, 5), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_DATA, sizeof(d), &d, sizeof(d)), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_DATA, sizeof(s), &s, sizeof(s)), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_FIN, sizeof(fin), &fin, sizeof(fin)), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_FIN, sizeof(fslot), &fslot, sizeof(fslot)),
                     FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_CTS, 8, small, 8), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_HELP, 4, &none, 4), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_HELP, 4, &far, 4), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_HELP, 8, small, 8), FAB_SHM_REC_DROP);
    /* Shorter than its chunk header (its byte count would wrap around), or longer than a
     * chunk record may be. */
    assert_int_equal(check_at(0, REC_CHUNK, 8, small, 8), FAB_SHM_REC_DROP);
    assert_int_equal(check_at(0, REC_CHUNK, FAB_SHM_STREAM_REC, small, 8), FAB_SHM_REC_DROP);
}

static void test_ring_records_past_the_ring_end_stop_the_ring(void **state)
{
    (void)state;
    assert_int_equal(check_at(0, REC_AM, FAB_SHM_RING_BYTES, NULL, 0), FAB_SHM_REC_CORRUPT);
    assert_int_equal(check_at(0, REC_AM, UINT32_MAX, NULL, 0), FAB_SHM_REC_CORRUPT);
    assert_int_equal(check_at(FAB_SHM_RING_BYTES - 64, REC_AM, 64 - FAB_SHM_REC_HDR + 1, NULL, 0),
                     FAB_SHM_REC_CORRUPT);
    assert_int_equal(check_at(FAB_SHM_RING_BYTES - 64, 9, 100, NULL, 0), FAB_SHM_REC_CORRUPT);
    assert_int_equal(check_at(64, REC_WRAP, 64, NULL, 0), FAB_SHM_REC_CORRUPT);
    assert_int_equal(check_at(64, REC_WRAP, 0, NULL, 0), FAB_SHM_REC_CORRUPT);
}

/* An envelope (and extension, when ext) followed by payload, 8-byte aligned. */
static union {
    uint64_t align;
    unsigned char b[256];
} msg;

static size_t envelope(int kind, int src, uint16_t len, bool ext, uint64_t xlen, uint64_t rndv,
                       uint64_t sync, size_t plen)
{
    struct pg_wire_hdr h = {.ctx = 4, .src = src, .tag = 9, .len = len, .kind = (uint8_t)kind,
                            .has_ext = ext};
    struct pg_wire_ext x = {xlen, rndv, sync};
    size_t n = sizeof(h);

    memcpy(msg.b, &h, sizeof(h));
    if (ext) {
        memcpy(msg.b + n, &x, sizeof(x));
        n += sizeof(x);
    }
    memset(msg.b + n, 'p', plen);
    return n + plen;
}

static const void *parse(size_t len, int peer, struct pg_wire *w)
{
    const char *why = NULL;
    const void *p = pg_wire_parse(msg.b, len, peer, w, &why);

    assert_true(p || (why && *why));
    return p;
}

static void test_sound_envelopes_are_decoded(void **state)
{
    struct pg_wire w;
    uint64_t tag = PG_WIRE_RNDV_BIT | (3ULL << 32) | 17;
    size_t n;

    (void)state;
    n = envelope(PG_WIRE_EAGER, 2, 5, false, 0, 0, 0, 5);
    assert_ptr_equal(parse(n, 3, &w), msg.b + sizeof(struct pg_wire_hdr));
    assert_int_equal(w.len, 5);
    assert_int_equal(w.src, 2);
    assert_int_equal(w.src_world, 3);
    n = envelope(PG_WIRE_EAGER, 2, 0, true, 7, 0, 0x1000, 7);
    assert_ptr_equal(parse(n, 3, &w), msg.b + 40);
    assert_int_equal(w.len, 7);
    assert_int_equal(w.sync_id, 0x1000);
    n = envelope(PG_WIRE_RTS, 2, 0, true, 1u << 30, tag, 0, 0);
    assert_non_null(parse(n, 3, &w));
    assert_int_equal(w.rndv_tag, tag);
    n = envelope(PG_WIRE_ACK, 0, 0, true, 0, 0, 0x2000, 0);
    assert_non_null(parse(n, 3, &w));
    /* A sender's withdrawal of its rendezvous message, and of a synchronous eager one. */
    n = envelope(PG_WIRE_CANCEL, 2, 0, true, 0, tag, 0x3000, 0);
    assert_non_null(parse(n, 3, &w));
    assert_int_equal(w.rndv_tag, tag);
    assert_int_equal(w.sync_id, 0x3000);
    n = envelope(PG_WIRE_CANCEL, 2, 0, true, 0, 0, 0x3000, 0);
    assert_non_null(parse(n, 3, &w));
    assert_int_equal(w.rndv_tag, 0);
}

static void test_malformed_envelopes_are_refused(void **state)
{
    struct pg_wire w;
    uint64_t tag = PG_WIRE_RNDV_BIT | (3ULL << 32) | 17;
    size_t n;

    (void)state;
    /* Short, of no kind, or an extension flag that is not a flag. */
    assert_null(parse(8, 3, &w));
    assert_null(parse(envelope(PG_WIRE_EAGER, 2, 0, true, 0, 0, 0, 0) - 1, 3, &w));
    assert_null(parse(envelope(0, 2, 0, false, 0, 0, 0, 0), 3, &w));
    assert_null(parse(envelope(PG_WIRE_CANCEL + 1, 2, 0, true, 0, 0, 1, 0), 3, &w));
    n = envelope(PG_WIRE_EAGER, 2, 40, false, 0, 0, 0, 40);
    msg.b[offsetof(struct pg_wire_hdr, has_ext)] = 2;
    assert_null(parse(n, 3, &w));
    /* An eager payload longer or shorter than its header says. */
    assert_null(parse(envelope(PG_WIRE_EAGER, 2, 60000, false, 0, 0, 0, 10), 3, &w));
    assert_null(parse(envelope(PG_WIRE_EAGER, 2, 4, false, 0, 0, 0, 10), 3, &w));
    assert_null(parse(envelope(PG_WIRE_EAGER, 2, 0, true, 1ULL << 40, 0, 0, 10), 3, &w));
    /* A rendezvous or an ack without extension, with a payload, or naming another rank. */
    assert_null(parse(envelope(PG_WIRE_RTS, 2, 0, false, 0, 0, 0, 0), 3, &w));
    assert_null(parse(envelope(PG_WIRE_RTS, 2, 0, true, 100, tag, 0, 4), 3, &w));
    assert_null(parse(envelope(PG_WIRE_RTS, 2, 0, true, 100, tag, 0, 0), 4, &w));
    assert_null(parse(envelope(PG_WIRE_RTS, 2, 0, true, 100, tag & ~PG_WIRE_RNDV_BIT, 0, 0), 3,
                      &w));
    assert_null(parse(envelope(PG_WIRE_ACK, 0, 0, false, 0, 0, 0, 0), 3, &w));
    assert_null(parse(envelope(PG_WIRE_ACK, 0, 0, true, 0, 0, 0, 0), 3, &w));
    /* A cancel without extension, with a payload, of no send, or naming another rank's
     * rendezvous. */
    assert_null(parse(envelope(PG_WIRE_CANCEL, 2, 0, false, 0, 0, 0, 0), 3, &w));
    assert_null(parse(envelope(PG_WIRE_CANCEL, 2, 0, true, 0, tag, 0x3000, 4), 3, &w));
    assert_null(parse(envelope(PG_WIRE_CANCEL, 2, 0, true, 0, tag, 0, 0), 3, &w));
    assert_null(parse(envelope(PG_WIRE_CANCEL, 2, 0, true, 0, tag, 0x3000, 0), 4, &w));
    assert_null(parse(envelope(PG_WIRE_CANCEL, 2, 0, true, 0, tag & ~PG_WIRE_RNDV_BIT, 0x3000, 0),
                      3, &w));
    /* A negative source rank. */
    assert_null(parse(envelope(PG_WIRE_EAGER, -1, 0, false, 0, 0, 0, 0), 3, &w));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sound_ring_records_are_taken),
        cmocka_unit_test(test_ring_records_with_bad_bodies_are_dropped),
        cmocka_unit_test(test_ring_records_past_the_ring_end_stop_the_ring),
        cmocka_unit_test(test_sound_envelopes_are_decoded),
        cmocka_unit_test(test_malformed_envelopes_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
