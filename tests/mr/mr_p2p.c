/* Point-to-point semantics across ranks: values, envelopes, order, sizes, wildcards. */
#include "mrtest.h"

#include <stdbool.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

/* Value of element i of the message from src to dst: known to both sides independently. */
static int pattern(int src, int dst, int i)
{
    return src * 1000003 + dst * 7919 + i * 31;
}

static void ring_blocking(int count)
{
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    int *out = malloc(sizeof(int) * (size_t)count), *in = malloc(sizeof(int) * (size_t)count);
    MPI_Status st;
    int got;

    for (int i = 0; i < count; i++) {
        out[i] = pattern(rank, right, i);
        in[i] = -1;
    }
    CHECK_MPI(MPI_Sendrecv(out, count, MPI_INT, right, 7, in, count, MPI_INT, left, 7,
                           MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == left && st.MPI_TAG == 7, "source %d tag %d", st.MPI_SOURCE,
          st.MPI_TAG);
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(got == count, "count %d != %d", got, count);
    for (int i = 0; i < count; i++) {
        CHECK(in[i] == pattern(left, rank, i), "element %d of %d: %d != %d", i, count, in[i],
              pattern(left, rank, i));
    }
    free(out);
    free(in);
}

/* Rank 0 receives one message from every other rank with MPI_ANY_SOURCE/MPI_ANY_TAG and
 * checks each envelope against its payload. */
static void any_source(void)
{
    if (rank == 0) {
        char *seen = calloc((size_t)size, 1);
        CHECK(seen != NULL, "no memory for %d ranks", size);
        for (int k = 1; seen && k < size; k++) {
            int v[2];
            MPI_Status st;
            CHECK_MPI(MPI_Recv(v, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            CHECK(v[0] == st.MPI_SOURCE && v[1] == st.MPI_TAG, "payload %d/%d vs envelope %d/%d",
                  v[0], v[1], st.MPI_SOURCE, st.MPI_TAG);
            CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < size && !seen[st.MPI_SOURCE],
                  "rank %d seen twice", st.MPI_SOURCE);
            if (st.MPI_SOURCE > 0 && st.MPI_SOURCE < size) {
                seen[st.MPI_SOURCE] = 1;
            }
        }
        free(seen);
    } else {
        int v[2] = {rank, 100 + rank};
        CHECK_MPI(MPI_Send(v, 2, MPI_INT, 0, 100 + rank, MPI_COMM_WORLD));
    }
    /* Later phases send to rank 0 too: MPI_ANY_TAG would rightly match them. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Non-overtaking: messages from one sender with the same envelope arrive in send order,
 * eager and rendezvous sizes mixed. */
static void ordering(void)
{
    enum { N = 40 };
    static char big[N][20000];
    if (size < 2 || rank > 1) {
        return;
    }
    if (rank == 0) {
        MPI_Request reqs[N];
        for (int i = 0; i < N; i++) {
            int len = i % 3 == 0 ? 20000 : 8;
            memset(big[i], i + 1, (size_t)len);
            CHECK_MPI(MPI_Isend(big[i], len, MPI_CHAR, 1, 5, MPI_COMM_WORLD, &reqs[i]));
        }
        CHECK_MPI(MPI_Waitall(N, reqs, MPI_STATUSES_IGNORE));
    } else {
        static char in[20000];
        for (int i = 0; i < N; i++) {
            MPI_Status st;
            int len;
            CHECK_MPI(MPI_Recv(in, sizeof(in), MPI_CHAR, 0, 5, MPI_COMM_WORLD, &st));
            MPI_Get_count(&st, MPI_CHAR, &len);
            CHECK(len == (i % 3 == 0 ? 20000 : 8), "message %d has %d bytes", i, len);
            CHECK(in[0] == i + 1 && in[len - 1] == i + 1, "message %d holds %d", i, in[0]);
        }
    }
}

/* Tags select among pending messages: receive in the reverse order of sending. */
static void tag_selection(void)
{
    if (size < 2 || rank > 1) {
        return;
    }
    if (rank == 0) {
        for (int t = 0; t < 5; t++) {
            CHECK_MPI(MPI_Send(&t, 1, MPI_INT, 1, t, MPI_COMM_WORLD));
        }
    } else {
        for (int t = 4; t >= 0; t--) {
            int v = -1;
            CHECK_MPI(MPI_Recv(&v, 1, MPI_INT, 0, t, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(v == t, "tag %d carried %d", t, v);
        }
    }
}

/* A sender far ahead of its receiver: most messages are waiting before their receive is
 * posted, partly copied aside and partly still in the transport (fab_shm leaves those
 * behind a matched one where they are, see drain). Three rounds check that every way of
 * receiving sees them whole and in send order: by tag, by MPI_ANY_TAG, by probe. */
enum { RA_N = 600, RA_MAX = 3000 };

static int runahead_tag(int i)
{
    return i % 7 == 3 ? 2 : 1;
}

static int runahead_len(int i)
{
    return 1 + (i * 37) % RA_MAX;
}

static void runahead_fill(unsigned char *b, int i, int len)
{
    for (int k = 0; k < len; k++) {
        b[k] = (unsigned char)(i * 13 + k * 7);
    }
}

/* Receives the next message with tag (or MPI_ANY_TAG) and checks that it is message i. */
static void runahead_expect(int i, int tag, bool probe)
{
    static unsigned char in[RA_MAX], want[RA_MAX];
    MPI_Status st;
    int len = -1;

    if (probe) {
        CHECK_MPI(MPI_Probe(0, tag, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &len);
        CHECK(len == runahead_len(i), "probe of message %d: %d bytes", i, len);
    }
    CHECK_MPI(MPI_Recv(in, RA_MAX, MPI_BYTE, 0, tag, MPI_COMM_WORLD, &st));
    MPI_Get_count(&st, MPI_BYTE, &len);
    runahead_fill(want, i, runahead_len(i));
    CHECK(st.MPI_TAG == runahead_tag(i) && len == runahead_len(i) && !memcmp(in, want, len),
          "message %d: tag %d, %d bytes, first byte %d (want tag %d, %d bytes, %d)", i,
          st.MPI_TAG, len, in[0], runahead_tag(i), runahead_len(i), want[0]);
}

static void runahead(void)
{
    static unsigned char out[RA_MAX];
    if (size < 2 || rank > 1) {
        return;
    }
    for (int round = 0; round < 3; round++) {
        if (rank == 0) {
            for (int i = 0; i < RA_N; i++) {
                runahead_fill(out, i, runahead_len(i));
                CHECK_MPI(MPI_Send(out, runahead_len(i), MPI_BYTE, 1, runahead_tag(i),
                                   MPI_COMM_WORLD));
            }
            continue;
        }
        if (round == 0) { /* tag 1 in order, then tag 2 in order */
            for (int t = 1; t <= 2; t++) {
                for (int i = 0; i < RA_N; i++) {
                    if (runahead_tag(i) == t) {
                        runahead_expect(i, t, false);
                    }
                }
            }
        } else {
            for (int i = 0; i < RA_N; i++) {
                runahead_expect(i, MPI_ANY_TAG, round == 2);
            }
        }
    }
}

/* Every other rank sends MS_N small messages to rank 0 at once, which finds them all
 * unexpected (a queue per sender): the first half is received sender by sender from the
 * highest down, the rest with MPI_ANY_SOURCE, half of those through a probe first. Each
 * sender's messages must come in the order it sent them, whichever way they are taken. */
enum { MS_N = 50 };

static void many_senders_check(const int v[2], const MPI_Status *st, int *next)
{
    int src = st->MPI_SOURCE;
    CHECK(src > 0 && src < size && v[0] == src && st->MPI_TAG == 300 + v[1] % 3 &&
              v[1] == next[src],
          "from %d tag %d: payload (%d, %d), expected message %d of rank %d", src, st->MPI_TAG,
          v[0], v[1], src > 0 && src < size ? next[src] : -1, src);
    if (src > 0 && src < size) {
        next[src]++;
    }
}

static void many_senders(void)
{
    int next[64] = {0};
    int v[2];
    MPI_Status st;

    if (size < 2 || size > 64) {
        return;
    }
    if (rank != 0) {
        for (int i = 0; i < MS_N; i++) {
            int out[2] = {rank, i};
            CHECK_MPI(MPI_Send(out, 2, MPI_INT, 0, 300 + i % 3, MPI_COMM_WORLD));
        }
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        return;
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* everything has been sent */
    for (int src = size - 1; src > 0; src--) {
        for (int i = 0; i < MS_N / 2; i++) {
            CHECK_MPI(MPI_Recv(v, 2, MPI_INT, src, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            many_senders_check(v, &st, next);
        }
    }
    for (int k = 0; k < (size - 1) * (MS_N - MS_N / 2); k++) {
        int src = MPI_ANY_SOURCE, tag = MPI_ANY_TAG;
        if (k % 2) {
            CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
            src = st.MPI_SOURCE;
            tag = st.MPI_TAG;
        }
        CHECK_MPI(MPI_Recv(v, 2, MPI_INT, src, tag, MPI_COMM_WORLD, &st));
        many_senders_check(v, &st, next);
    }
    for (int src = 1; src < size; src++) {
        CHECK(next[src] == MS_N, "%d messages from rank %d, expected %d", next[src], src, MS_N);
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* A blocking receive takes a small message straight from its sender's ring only when no
 * receive is posted and nothing waits in the unexpected queue (pg_recv_direct). Here an
 * older message is in each of those places while a newer one with the same envelope sits in
 * the ring: the older one must be received first. Rank 0 sends each message only when rank
 * 1 says so (tag 6), so that rank 1 knows where it is. */
static void direct_order(void)
{
    int a = 0, b = 0, go = 1, found = 0;
    MPI_Request r;

    if (size < 2 || rank > 1) {
        return;
    }
    for (int round = 0; round < 2; round++) {
        if (rank == 0) {
            int first = 100 + round, second = 200 + round;
            CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(&first, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(&go, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Send(&second, 1, MPI_INT, 1, 5, MPI_COMM_WORLD));
            continue;
        }
        if (round == 0) { /* the older message will match a posted receive */
            CHECK_MPI(MPI_Irecv(&a, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, &r));
            CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
        } else { /* the older message goes to the unexpected queue, found by a probe */
            CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
            while (!found) {
                CHECK_MPI(MPI_Iprobe(0, 5, MPI_COMM_WORLD, &found, MPI_STATUS_IGNORE));
            }
        }
        CHECK_MPI(MPI_Send(&go, 1, MPI_INT, 0, 6, MPI_COMM_WORLD));
        usleep(20000); /* no progress here: what arrives stays in the ring */
        CHECK_MPI(MPI_Recv(&b, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        if (round == 0) {
            CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            CHECK(a == 100 && b == 200, "posted receive got %d, MPI_Recv %d (want 100, 200)", a,
                  b);
        } else {
            CHECK(b == 101, "MPI_Recv got %d, want the older message 101", b);
            CHECK_MPI(MPI_Recv(&b, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(b == 201, "second MPI_Recv got %d, want 201", b);
        }
    }
}

/* Ping-pong of every size from 0 to 130 bytes (one ring line holds up to 32), many times
 * round each ring, checking the bytes, the count, the source and the tag of each reply. */
static void pingpong_sizes(void)
{
    unsigned char out[130], in[130];
    enum { ROUNDS = 9000 };

    if (size < 2 || rank > 1) {
        return;
    }
    for (int i = 0; i < ROUNDS; i++) {
        int len = i % 131, peer = 1 - rank, tag = i % 3, got;
        MPI_Status st;
        for (int k = 0; k < len; k++) {
            out[k] = (unsigned char)(i * 7 + k * 3 + rank);
        }
        if (rank == 1) {
            CHECK_MPI(MPI_Recv(in, sizeof(in), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        }
        CHECK_MPI(MPI_Send(out, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        if (rank == 0) {
            CHECK_MPI(MPI_Recv(in, sizeof(in), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        }
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(got == len && st.MPI_SOURCE == peer && st.MPI_TAG == tag,
              "round %d: %d bytes from %d tag %d (want %d from %d tag %d)", i, got,
              st.MPI_SOURCE, st.MPI_TAG, len, peer, tag);
        for (int k = 0; k < len; k++) {
            if (in[k] != (unsigned char)(i * 7 + k * 3 + peer)) {
                CHECK(false, "round %d: byte %d of %d is %d", i, k, len, in[k]);
                break;
            }
        }
    }
}

static void self_and_null(void)
{
    int v = 42 + rank, w = 0;
    MPI_Request r;
    MPI_Status st;

    CHECK_MPI(MPI_Isend(&v, 1, MPI_INT, rank, 3, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Recv(&w, 1, MPI_INT, rank, 3, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    CHECK(w == 42 + rank, "self message %d", w);
    CHECK_MPI(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Recv(&w, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL, "source %d", st.MPI_SOURCE);
    MPI_Get_count(&st, MPI_INT, &w);
    CHECK(w == 0, "count from MPI_PROC_NULL %d", w);
}

static void nonblocking_many(void)
{
    enum { N = 16 };
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    int out[N], in[N];
    MPI_Request reqs[2 * N];

    for (int i = 0; i < N; i++) {
        out[i] = pattern(rank, right, i);
        in[i] = -1;
        CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, left, i, MPI_COMM_WORLD, &reqs[i]));
    }
    for (int i = N - 1; i >= 0; i--) {
        CHECK_MPI(MPI_Isend(&out[i], 1, MPI_INT, right, i, MPI_COMM_WORLD, &reqs[N + i]));
    }
    CHECK_MPI(MPI_Waitall(2 * N, reqs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++) {
        CHECK(in[i] == pattern(left, rank, i), "tag %d got %d", i, in[i]);
        CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d not freed", i);
    }
}

/* A completed send leaves its buffer to the caller: each sender overwrites it at once,
 * while its receiver, asleep at first, has taken nothing yet (more data than the transport
 * buffers, so later sends wait for room). Where a send goes from the caller's buffer itself
 * (over libfabric: an eager send of MPISHIM_NET_ZCOPY_MIN, 4 KiB, or more, and a rendezvous
 * past MPISHIM_NET_EAGER_MAX, 16 KiB), a request completed before the fabric was done with
 * the buffer would deliver the overwritten bytes. Pairs (2k, 2k + 1), 4-20 KiB, blocking
 * and non-blocking sends in turn; tests/mr.list also runs this file over tcp;ofi_rxm.
 * alloc_ints: the buffer's size, small (malloc'd by glibc: 4-20 KB go eager through the
 * ring) or past the shared heap's 64 KiB threshold (from 4 KiB they go as rendezvous, the
 * receiver copying straight from the sender's heap). */
static void send_then_overwrite(int alloc_ints)
{
    enum { K = 1024, MAXN = 5120 };
    int peer = rank ^ 1;
    int *buf = malloc(sizeof(int) * (size_t)alloc_ints);

    for (int k = 0; peer < size && k < K; k++) {
        int n = 1024 + (k * 37) % (MAXN - 1024 + 1);
        MPI_Request r;
        MPI_Status st;
        int got = -1;

        if (rank % 2 == 0) {
            for (int i = 0; i < n; i++) {
                buf[i] = pattern(rank, peer, i + k);
            }
            if (k % 2) {
                CHECK_MPI(MPI_Send(buf, n, MPI_INT, peer, 60, MPI_COMM_WORLD));
            } else {
                CHECK_MPI(MPI_Isend(buf, n, MPI_INT, peer, 60, MPI_COMM_WORLD, &r));
                CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
            }
            memset(buf, 0xff, sizeof(int) * (size_t)n);
            continue;
        }
        if (k == 0) {
            usleep(100000);
        }
        CHECK_MPI(MPI_Recv(buf, MAXN, MPI_INT, peer, 60, MPI_COMM_WORLD, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_INT, &got));
        CHECK(got == n, "message %d: %d elements, expected %d", k, got, n);
        for (int i = 0; i < n && i < got; i++) {
            if (buf[i] != pattern(peer, rank, i + k)) {
                CHECK(0, "message %d element %d: %d != %d", k, i, buf[i],
                      pattern(peer, rank, i + k));
                break;
            }
        }
    }
    free(buf);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Checks len bytes at p against pattern(src, k, i), reporting the first that differs. */
static void check_bytes(const unsigned char *p, int len, int src, int k, const char *what)
{
    for (int i = 0; i < len; i++) {
        if (p[i] != (unsigned char)pattern(src, k, i)) {
            CHECK(0, "%s %d (%d B): byte %d is %d", what, k, len, i, p[i]);
            return;
        }
    }
}

/* Messages from 4 KiB to 36 KB out of a buffer in the shared heap (a 1 MiB block), sent
 * from unaligned offsets: with a core per rank they go as rendezvous (the receiver copies
 * straight from the sender's heap), 4 KiB and below eager. Blocking ping-pong both ways,
 * each length between every pairing of a heap and a static (outside the heap) buffer, so
 * that from 32 KiB the receiver copies alone or with the sender's help as the pairing
 * decides (fab_shm.c, help_too_slow); then a burst of non-blocking sends that arrive before
 * their receives, which take them with MPI_ANY_SOURCE and MPI_ANY_TAG; every byte and
 * envelope is checked. */
static void heap_mid_sizes(void)
{
    static const int lens[] = {4095, 4096, 4097, 6000, 8192, 16383, 32768, 36001};
    enum { NL = sizeof(lens) / sizeof(lens[0]), BLOCK = 1 << 20, STATIC = 40960 };
    static unsigned char static_out[STATIC], static_in[STATIC];
    unsigned char *out = malloc(BLOCK), *in = malloc(BLOCK);
    MPI_Request reqs[NL];
    int peer = rank ^ 1, got;
    MPI_Status st;

    for (int k = 0; peer < size && k < NL * 4; k++) {
        int len = lens[k % NL], off = (k * 136 + 8) % 4096, tag = 70 + k % 3;
        bool first = (k % 2 == 0) == (rank % 2 == 0);
        unsigned char *src = (k / NL) % 2 ? static_out : out;
        unsigned char *dst = (k / NL) / 2 ? static_in : in;
        for (int i = 0; i < len; i++) {
            src[off + i] = (unsigned char)pattern(rank, k, i);
        }
        if (first) {
            CHECK_MPI(MPI_Send(src + off, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }
        CHECK_MPI(MPI_Recv(dst + 3, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st));
        if (!first) {
            CHECK_MPI(MPI_Send(src + off, len, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(got == len, "ping-pong %d: %d bytes, expected %d", k, got, len);
        check_bytes(dst + 3, got < len ? got : len, peer, k, "ping-pong");
    }
    for (int m = 0; peer < size && m < NL; m++) {
        unsigned char *p = out + (size_t)m * 40000;
        for (int i = 0; i < lens[m]; i++) {
            p[i] = (unsigned char)pattern(rank, m, i);
        }
        CHECK_MPI(MPI_Isend(p, lens[m], MPI_BYTE, peer, 80 + m, MPI_COMM_WORLD, &reqs[m]));
    }
    if (peer < size) {
        usleep(20000); /* the receives come after the envelopes */
    }
    for (int m = 0; peer < size && m < NL; m++) {
        unsigned char *p = in + (size_t)m * 40000;
        CHECK_MPI(MPI_Recv(p, 40000, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_BYTE, &got);
        CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 80 + m && got == lens[m],
              "burst %d: %d bytes from %d tag %d (want %d from %d tag %d)", m, got,
              st.MPI_SOURCE, st.MPI_TAG, lens[m], peer, 80 + m);
        check_bytes(p, got < lens[m] ? got : lens[m], peer, m, "burst");
    }
    if (peer < size) {
        CHECK_MPI(MPI_Waitall(NL, reqs, MPI_STATUSES_IGNORE));
    }
    free(out);
    free(in);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* Large transfers, which fabric's shared copies split between the two sides when the
 * traffic goes one way (the receiver reading, the sender writing), and which it streams
 * through the rings in 32 KiB pieces when ranks outnumber cores: sizes that are no
 * multiple of a chunk, several messages in flight received out of order, and a sender that
 * computes (no MPI calls) while its receiver copies, so that the receiver must take every
 * chunk itself (a stream instead waits for the sender's next call). Pairs (2k, 2k + 1): 2k
 * sends, 2k + 1 receives; then the ring, both ways. */
enum { LARGE_M = 5 };
/* 4 MB, 280 KB and 1 MB (pieces of 128 KiB), 36 KB and 80 KB (two halves and a rest). */
static const int large_counts[LARGE_M] = {1000003, 70001, 262147, 9001, 20011};

static void large_post(int peer, bool send, int **bufs, MPI_Request *reqs)
{
    int from = send ? rank : peer, to = send ? peer : rank;

    for (int m = LARGE_M - 1; m >= 0; m--) {
        bufs[m] = malloc(sizeof(int) * (size_t)large_counts[m]);
        for (int i = 0; i < large_counts[m]; i++) {
            bufs[m][i] = send ? pattern(from, to, i + m) : -1;
        }
        if (send) {
            CHECK_MPI(MPI_Isend(bufs[m], large_counts[m], MPI_INT, peer, 40 + m, MPI_COMM_WORLD,
                                &reqs[m]));
        } else {
            CHECK_MPI(MPI_Irecv(bufs[m], large_counts[m], MPI_INT, peer, 40 + m, MPI_COMM_WORLD,
                                &reqs[m]));
        }
    }
}

static void large_check(int from, int **bufs)
{
    for (int m = 0; m < LARGE_M; m++) {
        for (int i = 0; i < large_counts[m]; i++) {
            if (bufs[m][i] != pattern(from, rank, i + m)) {
                CHECK(0, "message %d element %d of %d: %d != %d", m, i, large_counts[m],
                      bufs[m][i], pattern(from, rank, i + m));
                break;
            }
        }
    }
}

static void large_copies(bool both_ways, bool sender_naps)
{
    int right = (rank + 1) % size, left = (rank - 1 + size) % size;
    bool sends = both_ways || (rank % 2 == 0 && rank + 1 < size);
    bool recvs = both_ways || rank % 2 == 1;
    int *out[LARGE_M], *in[LARGE_M];
    MPI_Request reqs[2 * LARGE_M];
    int nreq = 0;

    if (recvs) {
        large_post(left, false, in, reqs);
        nreq += LARGE_M;
    }
    if (sends) {
        large_post(right, true, out, reqs + nreq);
        nreq += LARGE_M;
    }
    if (sends && sender_naps) {
        usleep(50000); /* busy elsewhere: no progress from this sender for a while */
    }
    CHECK_MPI(MPI_Waitall(nreq, reqs, MPI_STATUSES_IGNORE));
    if (recvs) {
        large_check(left, in);
    }
    for (int m = 0; m < LARGE_M; m++) {
        if (recvs) {
            free(in[m]);
        }
        if (sends) {
            free(out[m]);
        }
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ring_blocking(1);
    ring_blocking(1000);
    ring_blocking(300000); /* 1.2 MB: the rendezvous path */
    ring_blocking(0);
    large_copies(false, false);
    large_copies(false, true);
    large_copies(true, false);
    any_source();
    ordering();
    tag_selection();
    runahead();
    many_senders();
    direct_order();
    pingpong_sizes();
    self_and_null();
    nonblocking_many();
    send_then_overwrite(5120);
    send_then_overwrite(1 << 17); /* 512 KiB: in the shared heap */
    heap_mid_sizes();
    return mrt_finish("mr_p2p");
}
