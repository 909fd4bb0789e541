/*
 * test_fab.c - the libfabric transport between real processes.
 *
 * Each test forks 2 or 3 children that open the transport, hand their address blobs to
 * the parent over pipes, get every blob back, connect and run one scenario. A child
 * checks its own results and reports through its exit status (0 = all checks held; a
 * failed check prints its line); the parent asserts every child exited 0. The parent
 * also serves as a barrier before the children close their endpoints.
 */
#include "config.h"

#include "fab.h"
#include "fab_int.h"
#include "fab_reserve.h"
#include "fab_shm.h"
#include "mps_config.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_RANKS 3
#define NODE_STRIDE 8
#define TIMEOUT_S 4.0
#define BIG (4u << 20)
#define TAG (FAB_TAG_RNDV | 42)

/* ---- child side ---- */

/* A failed check ends the child with SIGTERM: libfabric's shm provider catches it to unlink
 * its /dev/shm region before the process dies (an _exit would leak 16 MiB there). */
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank %d: check failed at %s:%d: %s\n", g_rank, __FILE__, __LINE__,    \
                    #cond);                                                                        \
            raise(SIGTERM);                                                                        \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

static int g_rank;

/* What the AM handler saw. Every test AM is [u32 seq][u32 n] + n pattern bytes. */
static struct {
    int count[MAX_RANKS];     /* AMs from each peer */
    uint32_t next[MAX_RANKS]; /* the seq expected next from each peer (checks the order) */
    int bad;                  /* AMs with a wrong length, order or payload */
    size_t last_len;
} g_am;

static uint8_t pattern(uint32_t seq, size_t i)
{
    return (uint8_t)(seq * 31 + i * 7 + 1);
}

static bool pattern_ok(uint32_t seq, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] != pattern(seq, i)) {
            return false;
        }
    }
    return true;
}

/* How the AM handler checks the n bytes after an AM's (seq, n) header. */
static bool (*g_payload_ok)(uint32_t seq, const uint8_t *p, size_t n) = pattern_ok;

static enum fab_am_result am_handler(void *arg, int peer, const void *buf, size_t len,
                                     bool may_defer)
{
    uint32_t hdr[2];
    const uint8_t *p = (const uint8_t *)buf + sizeof(hdr);
    (void)arg;
    (void)may_defer;
    g_am.last_len = len;
    if (peer < 0 || peer >= MAX_RANKS || len < sizeof(hdr)) {
        g_am.bad++;
        return FAB_AM_TAKEN;
    }
    memcpy(hdr, buf, sizeof(hdr));
    int ok = hdr[0] == g_am.next[peer] && hdr[1] == len - sizeof(hdr) &&
             g_payload_ok(hdr[0], p, hdr[1]);
    g_am.bad += !ok;
    g_am.next[peer] = hdr[0] + 1;
    g_am.count[peer]++;
    return FAB_AM_TAKEN;
}

/* Sends AM number seq with the n bytes p; the (seq, n) header goes as the hdr part. */
static int send_am_bytes(struct fab *f, int peer, uint32_t seq, const void *p, size_t n)
{
    uint32_t hdr[2] = {seq, (uint32_t)n};
    return fab_am_send(f, peer, hdr, sizeof(hdr), p, n);
}

/* Sends AM number seq with n pattern bytes. */
static int send_am(struct fab *f, int peer, uint32_t seq, size_t n)
{
    static uint8_t payload[1 << 18];
    for (size_t i = 0; i < n; i++) {
        payload[i] = pattern(seq, i);
    }
    return send_am_bytes(f, peer, seq, payload, n);
}

static void wait_ams(struct fab *f, int peer, int count)
{
    double deadline = mps_now() + TIMEOUT_S;
    while (g_am.count[peer] < count && mps_now() < deadline) {
        CHECK(fab_progress(f) >= 0);
    }
    CHECK(g_am.count[peer] == count);
    CHECK(g_am.bad == 0);
}

struct test_req {
    struct fab_req base;
    int done, status;
    size_t len;
};

static void req_done(struct fab_req *req, int status, size_t len)
{
    struct test_req *r = container_of(req, struct test_req, base);
    r->done++;
    r->status = status;
    r->len = len;
}

static void wait_req(struct fab *f, struct test_req *r)
{
    double deadline = mps_now() + TIMEOUT_S;
    while (!r->done && mps_now() < deadline) {
        CHECK(fab_progress(f) >= 0);
    }
    CHECK(r->done == 1);
}

/* ---- scenarios (run in every child; rank tells the role) ---- */

typedef void (*scenario_fn)(struct fab *f, int rank, int size);

static void ping_pong(struct fab *f, int rank, int size)
{
    (void)size;
    int peer = 1 - rank;
    for (uint32_t i = 0; i < 10; i++) {
        if (rank == 0) {
            CHECK(send_am(f, peer, i, 100 + i) == PGC_OK);
            wait_ams(f, peer, (int)i + 1);
        } else {
            wait_ams(f, peer, (int)i + 1);
            CHECK(g_am.last_len == 8 + 100 + i);
            CHECK(send_am(f, peer, i, 100 + i) == PGC_OK);
        }
    }
}

/* Sizes cycle through inject-sized, bounce-buffered and empty payloads. */
static void burst(struct fab *f, int rank, int size)
{
    (void)size;
    static const size_t sizes[] = {8, 3000, 0, 9000, 120, 16000};
    if (rank == 0) {
        for (uint32_t i = 0; i < 1000; i++) {
            CHECK(send_am(f, 1, i, sizes[i % 6]) == PGC_OK);
        }
        wait_ams(f, 1, 1);
    } else {
        wait_ams(f, 0, 1000);
        CHECK(send_am(f, 0, 0, 0) == PGC_OK);
    }
}

/* Payloads that look like headers to a careless ring reader. The intra-node ring's reader
 * polls the line where the next record will start for that record's stamp (its position
 * + 1, fab_shm.c's rec_ready); a line that last held payload rather than a header could
 * hold exactly that value, and must not pass for a record; there the reader must go by the
 * tail, which the writer stores after the stamp. Here every line an AM's payload covers
 * starts with the stamp a record starting there one lap later would have, and the lengths
 * vary so that records start on such lines in later laps (about 45 laps). Each AM is
 * acknowledged before the next goes, so that the reader waits at the head, where it reads
 * a line before the writer has written it. The positions are computed here as fab_shm.c
 * lays records out; the scenario means something on the rings only, and passes on the
 * providers too. */
enum { STAMP_AMS = 3000 };
static uint64_t g_stamp_pos[STAMP_AMS]; /* AM seq's position in the ring */

static size_t stamp_len(uint32_t seq)
{
    static const size_t lens[] = {5000, 40, 12000, 304, 8, 16000, 1000, 8, 8};
    return lens[seq % 9];
}

static void stamp_layout(void)
{
    uint64_t pos = 0;
    for (uint32_t i = 0; i < STAMP_AMS; i++) {
        size_t need = FAB_SHM_REC_HDR + 8 + stamp_len(i);
        size_t off = pos % FAB_SHM_RING_BYTES;
        need = (need + FAB_SHM_REC_ALIGN - 1) / FAB_SHM_REC_ALIGN * FAB_SHM_REC_ALIGN;
        if (off + need > FAB_SHM_RING_BYTES) {
            pos += FAB_SHM_RING_BYTES - off; /* a record never straddles the end */
        }
        g_stamp_pos[i] = pos;
        pos += need;
    }
}

/* Word w of AM seq's payload: the next lap's stamp for the line the word is in. */
static uint64_t stamp_word(uint32_t seq, size_t w)
{
    uint64_t at = g_stamp_pos[seq] + FAB_SHM_REC_HDR + 8 + 8 * w;
    return at / FAB_SHM_REC_ALIGN * FAB_SHM_REC_ALIGN + FAB_SHM_RING_BYTES + 1;
}

static bool stamps_ok(uint32_t seq, const uint8_t *p, size_t n)
{
    if (seq >= STAMP_AMS || n != stamp_len(seq)) {
        return false;
    }
    for (size_t w = 0; w < n / 8; w++) {
        uint64_t v;
        memcpy(&v, p + 8 * w, sizeof(v));
        if (v != stamp_word(seq, w)) {
            return false;
        }
    }
    return true;
}

static void stale_stamps(struct fab *f, int rank, int size)
{
    (void)size;
    stamp_layout();
    if (rank == 0) {
        static uint64_t words[16000 / 8];
        for (uint32_t i = 0; i < STAMP_AMS; i++) {
            for (size_t w = 0; w < stamp_len(i) / 8; w++) {
                words[w] = stamp_word(i, w);
            }
            CHECK(send_am_bytes(f, 1, i, words, stamp_len(i)) == PGC_OK);
            wait_ams(f, 1, (int)i + 1);
        }
    } else {
        for (uint32_t i = 0; i < STAMP_AMS; i++) {
            g_payload_ok = stamps_ok;
            wait_ams(f, 0, (int)i + 1);
            g_payload_ok = pattern_ok;
            CHECK(send_am(f, 0, i, 0) == PGC_OK);
        }
    }
}

static void exact_am_max(struct fab *f, int rank, int size)
{
    (void)size;
    size_t n = fab_am_max(f) - 8; /* 8 bytes of (seq, n) header */
    if (rank == 0) {
        CHECK(send_am(f, 1, 0, n + 1) == PGC_ERR_INVALID_COUNT);
        CHECK(send_am(f, 1, 0, n) == PGC_OK);
        wait_ams(f, 1, 1);
    } else {
        wait_ams(f, 0, 1);
        CHECK(g_am.last_len == fab_am_max(f));
        CHECK(send_am(f, 0, 0, 0) == PGC_OK);
    }
}

static uint8_t *big_buffer(int fill)
{
    uint8_t *b = malloc(BIG);
    CHECK(b != NULL);
    for (size_t i = 0; i < BIG; i++) {
        b[i] = fill ? pattern(7, i) : 0;
    }
    return b;
}

static void check_big(const uint8_t *b)
{
    for (size_t i = 0; i < BIG; i++) {
        if (b[i] != pattern(7, i)) {
            fprintf(stderr, "rank %d: byte %zu is %u\n", g_rank, i, b[i]);
            CHECK(0);
        }
    }
}

/* Rank 1 posts the receive first and tells rank 0, which sends only then. */
static void tagged_recv_first(struct fab *f, int rank, int size)
{
    (void)size;
    struct test_req r = {.base.complete = req_done};
    uint8_t *b = big_buffer(rank == 0);
    if (rank == 0) {
        wait_ams(f, 1, 1);
        CHECK(fab_tsend(f, 1, b, BIG, TAG, &r.base) == PGC_OK);
        wait_req(f, &r);
        CHECK(r.status == PGC_OK);
    } else {
        CHECK(fab_trecv(f, 0, b, BIG, TAG, &r.base) == PGC_OK);
        CHECK(send_am(f, 0, 0, 0) == PGC_OK);
        wait_req(f, &r);
        CHECK(r.status == PGC_OK && r.len == BIG);
        check_big(b);
    }
    free(b);
}

/* Rank 0 sends first and says so; rank 1 lets the send arrive unexpected, then receives. */
static void tagged_send_first(struct fab *f, int rank, int size)
{
    (void)size;
    struct test_req r = {.base.complete = req_done};
    uint8_t *b = big_buffer(rank == 0);
    if (rank == 0) {
        CHECK(fab_tsend(f, 1, b, BIG, TAG, &r.base) == PGC_OK);
        CHECK(send_am(f, 1, 0, 0) == PGC_OK);
        wait_req(f, &r);
        CHECK(r.status == PGC_OK);
    } else {
        wait_ams(f, 0, 1);
        for (double t = mps_now(); mps_now() < t + 0.05;) {
            CHECK(fab_progress(f) >= 0);
        }
        CHECK(fab_trecv(f, 0, b, BIG, TAG, &r.base) == PGC_OK);
        wait_req(f, &r);
        CHECK(r.status == PGC_OK && r.len == BIG);
        check_big(b);
    }
    free(b);
}

/* Progress until *done reaches want, sleeping on the wait fd with no time limit whenever a
 * poll found nothing (where fab_can_sleep allows it; else polling). A wake-up the fd misses
 * leaves the child asleep until alarm() ends it. */
static void sleep_until(struct fab *f, const int *done, int want)
{
    while (*done < want) {
        int n = fab_progress(f);
        CHECK(n >= 0);
        if (n == 0 && *done < want && fab_can_sleep(f)) {
            CHECK(fab_sleep(f, -1) >= 0);
        }
    }
    CHECK(g_am.bad == 0);
}

/* Sleeping ranks woken by each kind of traffic: the first AM (which also opens rxm's
 * connection), a bounce-buffered one, and 4 MiB of tagged data both ways of waiting (the
 * sender for its completion, the receiver for the data). Each rank lets the other fall
 * asleep first. Only a socket provider's CQ has a wait fd to sleep on. */
static void sleeper(struct fab *f, int rank, int size)
{
    struct test_req r = {.base.complete = req_done};
    uint8_t *b = big_buffer(rank == 0);
    int peer = 1 - rank;

    (void)size;
    CHECK(fab_can_sleep(f) == (strstr(fab_peer_provider(f, peer), "tcp") != NULL));
    if (rank == 0) {
        usleep(20000);
        CHECK(send_am(f, 1, 0, 8) == PGC_OK);
        sleep_until(f, &g_am.count[1], 1);
        usleep(20000);
        CHECK(send_am(f, 1, 1, 16000) == PGC_OK);
        sleep_until(f, &g_am.count[1], 2);
        CHECK(fab_tsend(f, 1, b, BIG, TAG, &r.base) == PGC_OK);
        sleep_until(f, &r.done, 1);
        CHECK(r.status == PGC_OK);
    } else {
        sleep_until(f, &g_am.count[0], 1);
        CHECK(send_am(f, 0, 0, 0) == PGC_OK);
        sleep_until(f, &g_am.count[0], 2);
        CHECK(g_am.last_len == 8 + 16000);
        CHECK(fab_trecv(f, 0, b, BIG, TAG, &r.base) == PGC_OK);
        CHECK(send_am(f, 0, 1, 0) == PGC_OK);
        sleep_until(f, &r.done, 1);
        CHECK(r.status == PGC_OK && r.len == BIG);
        check_big(b);
    }
    free(b);
}

static void tagged_truncate(struct fab *f, int rank, int size)
{
    (void)size;
    struct test_req r = {.base.complete = req_done};
    uint8_t *b = big_buffer(rank == 0);
    if (rank == 0) {
        wait_ams(f, 1, 1);
        CHECK(fab_tsend(f, 1, b, BIG, TAG, &r.base) == PGC_OK);
        wait_req(f, &r); /* either status: the receiver's buffer was too small */
    } else {
        CHECK(fab_trecv(f, 0, b, 1000, TAG, &r.base) == PGC_OK);
        CHECK(send_am(f, 0, 0, 0) == PGC_OK);
        wait_req(f, &r);
        CHECK(r.status == PGC_ERR_TRUNCATE);
        CHECK(r.len == 1000);
        for (size_t i = 0; i < 1000; i++) {
            CHECK(b[i] == pattern(7, i));
        }
        CHECK(b[1000] == 0);
    }
    free(b);
}

/* Zero-copy AMs of 4-16 KB, each from one buffer that rank 0 refills with the next AM's
 * pattern once the request completes: rank 1 checks that every two-iov message arrives
 * whole and in order. Through a provider the request must still be pending when
 * fab_am_send_zc returns (its completion comes from fab_progress, once the provider is done
 * with the buffer; over tcp the kernel has usually copied it by then, so that check, not the
 * payload, is what catches a request completed at once); to a ring peer (no zero copy) it
 * has completed before fab_am_send_zc returns. */
static void zero_copy_am(struct fab *f, int rank, int size)
{
    static const size_t sizes[] = {4096, 9000, 16000, 5000};
    static uint8_t buf[16000];
    (void)size;
    if (rank == 1) {
        wait_ams(f, 0, 200);
        CHECK(send_am(f, 0, 0, 0) == PGC_OK);
        return;
    }
    bool zc = fab_am_zcopy(f, 1);
    CHECK(zc == (strncmp(fab_peer_provider(f, 1), "shm-ring", 8) != 0));
    for (uint32_t i = 0; i < 200; i++) {
        struct test_req r = {.base.complete = req_done};
        uint32_t hdr[2] = {i, (uint32_t)sizes[i % 4]};
        for (size_t k = 0; k < hdr[1]; k++) {
            buf[k] = pattern(i, k);
        }
        CHECK(fab_am_send_zc(f, 1, hdr, sizeof(hdr), buf, hdr[1], &r.base) == PGC_OK);
        CHECK(r.done == !zc);
        wait_req(f, &r);
        CHECK(r.status == PGC_OK);
    }
    wait_ams(f, 1, 1);
}

/* Rank 1 stops progressing: rank 0's AMs fill the shm queues until fab_am_send gives up
 * after MPISHIM_TIMEOUT (0.5 s here) instead of hanging. */
static void am_send_times_out(struct fab *f, int rank, int size)
{
    (void)size;
    if (rank == 0) {
        int rc = PGC_OK;
        double t0 = mps_now();
        for (uint32_t i = 0; i < 100000 && rc == PGC_OK; i++) {
            rc = send_am(f, 1, i, 8);
        }
        CHECK(rc == PGC_ERR_TIMEOUT);
        CHECK(mps_now() - t0 < 3.0);
    } else {
        usleep(1500 * 1000);
    }
}

static void bad_arguments(struct fab *f, int rank, int size)
{
    struct test_req r = {.base.complete = req_done};
    char b[8] = {0};
    CHECK(fab_am_send(f, size, b, 1, NULL, 0) == PGC_ERR_INVALID_RANK);
    CHECK(fab_am_send(f, -1, b, 1, NULL, 0) == PGC_ERR_INVALID_RANK);
    CHECK(fab_tsend(f, 1 - rank, b, sizeof(b), 42, &r.base) == PGC_ERR_INVALID_TAG);
    CHECK(fab_trecv(f, 1 - rank, b, sizeof(b), 42, &r.base) == PGC_ERR_INVALID_TAG);
    for (int i = 0; i < 100; i++) {
        CHECK(fab_progress(f) >= 0);
    }
    CHECK(r.done == 0); /* a call that failed never completes its request */
}

/* Nodes {a, a, b}: rank 0 reaches rank 1 over shm and rank 2 over the network; every rank
 * sends one AM to every rank (itself included) and receives one from each. */
static void mixed_nodes(struct fab *f, int rank, int size)
{
    /* Local peers go through the shared-memory rings ("shm-ring+cma") or libfabric's shm. */
    static const char *const expect[3][3] = {{"shm", "shm", "tcp;ofi_rxm"},
                                             {"shm", "shm", "tcp;ofi_rxm"},
                                             {"tcp;ofi_rxm", "tcp;ofi_rxm", "tcp;ofi_rxm"}};
    for (int p = 0; p < size; p++) {
        CHECK(strncmp(fab_peer_provider(f, p), expect[rank][p], strlen(expect[rank][p])) == 0);
    }
    for (int p = 0; p < size; p++) {
        CHECK(send_am(f, p, 0, 5000) == PGC_OK);
    }
    for (int p = 0; p < size; p++) {
        wait_ams(f, p, 1);
    }
}

/* ---- parent side: fork, exchange blobs, barrier, collect exit codes ---- */

static int xfer(int fd, void *buf, size_t len, int writing)
{
    for (size_t done = 0; done < len;) {
        ssize_t n = writing ? write(fd, (char *)buf + done, len - done)
                            : read(fd, (char *)buf + done, len - done);
        if (n <= 0) {
            return -1;
        }
        done += (size_t)n;
    }
    return 0;
}

static void child(int rank, int size, const char *nodes, int up, int down, scenario_fn fn)
{
    struct fab *f = NULL;
    static char blobs[MAX_RANKS * FAB_ADDR_MAX];
    char blob[FAB_ADDR_MAX], byte = 0;
    struct fab_opts o = {.rank = rank,
                         .size = size,
                         .nodes = nodes,
                         .node_stride = NODE_STRIDE,
                         .am_handler = am_handler,
                         .am_max = 16384 + 64};
    g_rank = rank;
    memset(&g_am, 0, sizeof(g_am)); /* the parent may have used it (single-rank test) */
    /* A hung child must not hang the test run; the bound only ends a broken run. 10 s was
     * a timing: 3,000 round trips of stale_stamps took longer under ASan with test_cluster
     * beside it (CI, 2026-11-27), and with two busy loops beside them here. */
    alarm(60);
    mps_config_reset();
    CHECK(fab_open(&o, &f) == PGC_OK);
    CHECK(fab_get_addr(f, blob) == PGC_OK);
    CHECK(xfer(up, blob, sizeof(blob), 1) == 0);
    CHECK(xfer(down, blobs, (size_t)size * FAB_ADDR_MAX, 0) == 0);
    CHECK(fab_connect(f, blobs) == PGC_OK);
    fn(f, rank, size);
    CHECK(xfer(up, &byte, 1, 1) == 0); /* barrier: nobody closes while a peer still sends */
    CHECK(xfer(down, &byte, 1, 0) == 0);
    CHECK(fab_close(f) == PGC_OK);
    _exit(0);
}

static void run_ranks(int size, const char *nodes, scenario_fn fn)
{
    int up[MAX_RANKS][2], down[MAX_RANKS][2], status;
    pid_t pid[MAX_RANKS];
    static char blobs[MAX_RANKS * FAB_ADDR_MAX];
    char byte = 0;
    for (int r = 0; r < size; r++) {
        assert_int_equal(pipe(up[r]), 0);
        assert_int_equal(pipe(down[r]), 0);
        pid[r] = fork();
        assert_true(pid[r] >= 0);
        if (pid[r] == 0) {
            child(r, size, nodes, up[r][1], down[r][0], fn);
        }
        close(up[r][1]);
        close(down[r][0]);
    }
    int ok = 1, failed = -1, fstatus = 0;
    for (int r = 0; r < size && ok; r++) {
        ok = xfer(up[r][0], blobs + r * FAB_ADDR_MAX, FAB_ADDR_MAX, 0) == 0;
    }
    for (int r = 0; r < size && ok; r++) {
        ok = xfer(down[r][1], blobs, (size_t)size * FAB_ADDR_MAX, 1) == 0;
    }
    for (int r = 0; r < size && ok; r++) {
        ok = xfer(up[r][0], &byte, 1, 0) == 0;
    }
    for (int r = 0; r < size && ok; r++) {
        ok = xfer(down[r][1], &byte, 1, 1) == 0;
    }
    for (int r = 0; r < size; r++) {
        if (!ok) {
            kill(pid[r], SIGTERM); /* one child failed: the others would only wait for it */
        }
        close(up[r][0]);
        close(down[r][1]);
    }
    for (int r = 0; r < size; r++) {
        assert_int_equal(waitpid(pid[r], &status, 0), pid[r]);
        if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) && failed < 0) {
            failed = r;
            fstatus = status;
        }
    }
    if (failed >= 0) {
        fail_msg("rank %d ended with status 0x%x", failed, fstatus);
    }
    assert_true(ok);
}

static void run_two(void **state, scenario_fn fn)
{
    /* The state names the forced provider ("" for the per-peer choice). */
    const char *prov = *state;
    setenv("MPISHIM_FABRIC_PROVIDER", prov, 1);
    run_ranks(2, "node0\0\0\0node0\0\0\0", fn);
    unsetenv("MPISHIM_FABRIC_PROVIDER");
}

/* The affinity mask pin_to_one_core replaced, which unpin restores. */
static cpu_set_t g_saved_mask;

/* Setup: this process, and the children it forks, on its first allowed core only. With
 * more ranks than cores, tagged data of 32 KiB or more is streamed through the rings
 * instead of read with CMA (fab_shm.c). */
static int pin_to_one_core(void **state)
{
    cpu_set_t one;
    int cpu = 0;

    (void)state;
    if (sched_getaffinity(0, sizeof(g_saved_mask), &g_saved_mask) != 0) {
        return -1;
    }
    while (!CPU_ISSET(cpu, &g_saved_mask)) {
        cpu++;
    }
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return sched_setaffinity(0, sizeof(one), &one) == 0 && mps_usable_cores() == 1 ? 0 : -1;
}

/* Teardown: the mask from before pin_to_one_core, also after a failed test. */
static int unpin(void **state)
{
    (void)state;
    return sched_setaffinity(0, sizeof(g_saved_mask), &g_saved_mask);
}

static void test_am_ping_pong_delivers_exact_payloads(void **state)
{
    run_two(state, ping_pong);
}

static void test_am_burst_of_1000_arrives_complete_and_in_order(void **state)
{
    run_two(state, burst);
}

static void test_zero_copy_am_completes_only_when_its_buffer_is_free(void **state)
{
    run_two(state, zero_copy_am);
}

static void test_am_payload_that_reads_as_a_ring_stamp_is_not_taken_for_a_record(void **state)
{
    run_two(state, stale_stamps);
}

static void test_am_of_exactly_am_max_bytes_arrives_and_one_more_is_refused(void **state)
{
    run_two(state, exact_am_max);
}

static void test_sleeping_ranks_are_woken_by_every_kind_of_message(void **state)
{
    run_two(state, sleeper);
}

static void test_tagged_4mib_arrives_when_recv_is_posted_first(void **state)
{
    run_two(state, tagged_recv_first);
}

static void test_tagged_4mib_arrives_when_send_comes_first(void **state)
{
    run_two(state, tagged_send_first);
}

static void test_tagged_recv_into_small_buffer_reports_truncate(void **state)
{
    run_two(state, tagged_truncate);
}

static void test_am_send_gives_up_after_the_timeout_when_the_peer_never_receives(void **state)
{
    const char *old = getenv("MPISHIM_TIMEOUT");
    char saved[64];
    (void)state;
    snprintf(saved, sizeof(saved), "%s", old ? old : "");
    setenv("MPISHIM_TIMEOUT", "0.5", 1);
    run_ranks(2, "node0\0\0\0node0\0\0\0", am_send_times_out);
    if (old) {
        setenv("MPISHIM_TIMEOUT", saved, 1);
    } else {
        unsetenv("MPISHIM_TIMEOUT");
    }
}

static void test_invalid_peer_or_tag_is_refused_and_never_completes(void **state)
{
    run_two(state, bad_arguments);
}

/* One rank alone: AMs and tagged data to itself (over shm, the endpoint a lone rank opens). */
static void test_single_rank_sends_to_itself(void **state)
{
    struct fab *f = NULL;
    char blob[FAB_ADDR_MAX];
    struct test_req s = {.base.complete = req_done}, r = {.base.complete = req_done};
    struct fab_opts o = {
        .rank = 0, .size = 1, .nodes = "solo", .node_stride = 5, .am_handler = am_handler};
    (void)state;
    memset(&g_am, 0, sizeof(g_am));
    assert_int_equal(fab_open(&o, &f), PGC_OK);
    assert_int_equal(fab_get_addr(f, blob), PGC_OK);
    assert_int_equal(fab_connect(f, blob), PGC_OK);
    assert_int_equal(strncmp(fab_peer_provider(f, 0), "shm", 3), 0);
    assert_int_equal(send_am(f, 0, 0, 3000), PGC_OK);
    uint8_t *src = big_buffer(1), *dst = big_buffer(0);
    assert_int_equal(fab_trecv(f, 0, dst, BIG, TAG, &r.base), PGC_OK);
    assert_int_equal(fab_tsend(f, 0, src, BIG, TAG, &s.base), PGC_OK);
    for (double t = mps_now(); (!r.done || !s.done || !g_am.count[0]) && mps_now() < t + 3;) {
        assert_true(fab_progress(f) >= 0);
    }
    assert_int_equal(g_am.count[0], 1);
    assert_int_equal(g_am.bad, 0);
    assert_int_equal(r.status, PGC_OK);
    assert_int_equal(r.len, BIG);
    assert_int_equal(s.status, PGC_OK);
    assert_memory_equal(src, dst, BIG);
    free(src);
    free(dst);
    assert_int_equal(fab_close(f), PGC_OK);
}

static void test_peers_on_same_node_use_shm_and_others_the_network(void **state)
{
    (void)state;
    setenv("MPISHIM_FABRIC_NET_PROVIDER", "tcp;ofi_rxm", 1);
    run_ranks(3, "a\0\0\0\0\0\0\0a\0\0\0\0\0\0\0b\0\0\0\0\0\0\0", mixed_nodes);
    unsetenv("MPISHIM_FABRIC_NET_PROVIDER");
}

static void test_list_providers_names_shm_and_tcp(void **state)
{
    char buf[512];
    (void)state;
    assert_int_equal(fab_list_providers(buf, sizeof(buf)), PGC_OK);
    assert_non_null(strstr(buf, "shm"));
    assert_non_null(strstr(buf, "tcp;ofi_rxm"));
}

/* fab_open sizes ofi_rxm's buffers for our eager sizes, but a value the user set wins. */
static void test_rxm_sizes_are_set_unless_the_user_set_them(void **state)
{
    struct fab *f = NULL;
    struct fab_opts o = {
        .rank = 0, .size = 1, .nodes = "solo", .node_stride = 5, .am_handler = am_handler};
    (void)state;
    unsetenv("FI_OFI_RXM_BUFFER_SIZE");
    unsetenv("FI_OFI_RXM_MSG_RX_SIZE");
    assert_int_equal(fab_open(&o, &f), PGC_OK);
    assert_int_equal(fab_close(f), PGC_OK);
    assert_string_equal(getenv("FI_OFI_RXM_BUFFER_SIZE"), "65536");
    assert_string_equal(getenv("FI_OFI_RXM_MSG_RX_SIZE"), "32");
    setenv("FI_OFI_RXM_MSG_RX_SIZE", "512", 1);
    assert_int_equal(fab_open(&o, &f), PGC_OK);
    assert_int_equal(fab_close(f), PGC_OK);
    assert_string_equal(getenv("FI_OFI_RXM_MSG_RX_SIZE"), "512");
    unsetenv("FI_OFI_RXM_MSG_RX_SIZE");
}

/* verbs and efa are asked only where the kernel lists an RDMA device (asking verbs reads
 * /proc/kallsyms twice); without a sysfs to tell by, they are asked as before. */
static void test_rdma_providers_are_asked_only_where_a_device_is_listed(void **state)
{
    char root[] = "/tmp/test_fab_sysfs.XXXXXX", cls[64], dev[96];
    (void)state;
    assert_non_null(mkdtemp(root));
    snprintf(cls, sizeof(cls), "%s/infiniband", root);
    snprintf(dev, sizeof(dev), "%s/mlx5_0", cls);
    assert_int_equal(fab_rdma_devices_present(cls), 0); /* class absent, parent present */
    assert_int_equal(mkdir(cls, 0700), 0);
    assert_int_equal(fab_rdma_devices_present(cls), 0); /* class empty */
    assert_int_equal(mkdir(dev, 0700), 0);
    assert_int_equal(fab_rdma_devices_present(cls), 1); /* one device */
    assert_int_equal(rmdir(dev), 0);
    assert_int_equal(rmdir(cls), 0);
    assert_int_equal(rmdir(root), 0);
    assert_int_equal(fab_rdma_devices_present("/nonexistent-sysfs/class/infiniband"), 1);
}

static void test_open_rejects_a_rank_outside_the_job(void **state)
{
    struct fab *f = NULL;
    struct fab_opts o = {
        .rank = 2, .size = 2, .nodes = "a\0b\0", .node_stride = 2, .am_handler = am_handler};
    (void)state;
    assert_int_equal(fab_open(&o, &f), PGC_ERR_INVALID_ARG);
    assert_null(f);
}

/* Each two-rank scenario runs on the per-peer choice (the shared-memory rings and CMA
 * here), on libfabric's shm provider (forcing a provider turns the rings off) and over
 * tcp;ofi_rxm. */
#define BOTH(fn)                                                                                   \
    {#fn, fn, NULL, NULL, ""}, {#fn "_over_libfabric_shm", fn, NULL, NULL, "shm"},                 \
    {                                                                                              \
#fn "_over_tcp_rxm", fn, NULL, NULL, "tcp;ofi_rxm"                                         \
    }

/* The tagged tests once more with both ranks on one core, where large data is streamed. */
#define STREAMED(fn) {#fn "_streamed_on_one_core", fn, pin_to_one_core, unpin, ""}

/* fab_reserve (fab_shm.c's queued control records, fab_sock.c's early clear-to-send): with
 * malloc failing (the test knob), the reserve's records come out one by one, the next take is
 * NULL with the loss recorded naming the record and the peer, and a record given back is
 * taken again. */
static void test_reserve_stands_behind_malloc_and_records_its_end(void **state)
{
    struct rec {
        void *link;
        int v;
    } pool[2];
    struct fab_reserve r;
    void *a, *b;

    (void)state;
    mps_test_fail_mask = MPS_FAIL_CTL;
    fab_reserve_init(&r, pool, sizeof(pool[0]), 2);
    a = fab_reserve_take(&r, "a clear-to-send of", 3);
    b = fab_reserve_take(&r, "a clear-to-send of", 3);
    assert_true(a != b && (a == &pool[0] || a == &pool[1]) && (b == &pool[0] || b == &pool[1]));
    assert_string_equal(r.lost, "");
    assert_null(fab_reserve_take(&r, "a clear-to-send of", 7));
    assert_non_null(strstr(r.lost, "lost a clear-to-send of rank 7"));
    fab_reserve_put(&r, b);
    assert_ptr_equal(fab_reserve_take(&r, "a clear-to-send of", 3), b);
    mps_test_fail_mask = 0;
    a = fab_reserve_take(&r, "a clear-to-send of", 3); /* malloc's, freed by put */
    assert_true(a != &pool[0] && a != &pool[1]);
    fab_reserve_put(&r, a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_stands_behind_malloc_and_records_its_end),
        BOTH(test_am_ping_pong_delivers_exact_payloads),
        BOTH(test_am_burst_of_1000_arrives_complete_and_in_order),
        BOTH(test_zero_copy_am_completes_only_when_its_buffer_is_free),
        BOTH(test_am_payload_that_reads_as_a_ring_stamp_is_not_taken_for_a_record),
        BOTH(test_am_of_exactly_am_max_bytes_arrives_and_one_more_is_refused),
        BOTH(test_sleeping_ranks_are_woken_by_every_kind_of_message),
        BOTH(test_tagged_4mib_arrives_when_recv_is_posted_first),
        BOTH(test_tagged_4mib_arrives_when_send_comes_first),
        BOTH(test_tagged_recv_into_small_buffer_reports_truncate),
        STREAMED(test_tagged_4mib_arrives_when_recv_is_posted_first),
        STREAMED(test_tagged_4mib_arrives_when_send_comes_first),
        STREAMED(test_tagged_recv_into_small_buffer_reports_truncate),
        BOTH(test_invalid_peer_or_tag_is_refused_and_never_completes),
        cmocka_unit_test(test_am_send_gives_up_after_the_timeout_when_the_peer_never_receives),
        cmocka_unit_test(test_single_rank_sends_to_itself),
        cmocka_unit_test(test_peers_on_same_node_use_shm_and_others_the_network),
        cmocka_unit_test(test_list_providers_names_shm_and_tcp),
        cmocka_unit_test(test_rxm_sizes_are_set_unless_the_user_set_them),
        cmocka_unit_test(test_rdma_providers_are_asked_only_where_a_device_is_listed),
        cmocka_unit_test(test_open_rejects_a_rank_outside_the_job),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
