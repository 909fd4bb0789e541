/* Point-to-point modes and request calls of MPI-3.1 chapter 3, each checked with values the
 * test computes itself: synchronous, ready and buffered sends, sendrecv_replace, probes and
 * matched probes, persistent requests (buffered ones too), the any/some/all completion
 * calls, cancel, request status, element counts. Ranks pair up (0-1, 2-3, ...); an odd
 * last rank talks to itself. */
#include "mrtest.h"

#include <string.h>

static int rank, size, peer;

static int value(int from, int i)
{
    return from * 1000 + i * 7 + 3;
}

/* An MPI_Issend is not complete before the matching receive is posted; after it, it is. */
static void synchronous(void)
{
    int v = value(rank, 1), got = -1, flag = 1;
    MPI_Request s;

    if (peer == rank) {
        CHECK_MPI(MPI_Issend(&v, 1, MPI_INT, rank, 11, MPI_COMM_WORLD, &s));
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, rank, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
        CHECK(got == v, "self issend carried %d", got);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* the pairs' barrier below */
        return;
    }
    CHECK_MPI(MPI_Issend(&v, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, &s));
    /* The peer posts its receive only after the barrier: nothing can have matched yet. */
    for (int i = 0; i < 100; i++) {
        CHECK_MPI(MPI_Test(&s, &flag, MPI_STATUS_IGNORE));
        CHECK(!flag, "MPI_Issend completed before the receive was posted");
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&s, MPI_STATUS_IGNORE));
    CHECK(got == value(peer, 1), "issend carried %d", got);
    /* Blocking synchronous sends both ways would deadlock: the lower rank sends first. */
    if (rank < peer) {
        CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, peer, 12, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, peer, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, peer, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Ssend(&v, 1, MPI_INT, peer, 12, MPI_COMM_WORLD));
    }
    CHECK(got == value(peer, 1), "ssend carried %d", got);
}

static void ready_and_buffered(void)
{
    int v = value(rank, 2), got[3] = {-1, -1, -1}, size_out;
    char *pool = malloc(4096);
    void *back;
    MPI_Request r[3];

    /* Ready send: the receive is posted before the barrier that precedes the send. */
    CHECK_MPI(MPI_Irecv(&got[0], 1, MPI_INT, peer, 21, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Rsend(&v, 1, MPI_INT, peer, 21, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    CHECK(got[0] == value(peer, 2), "rsend carried %d", got[0]);
    /* Buffered: the sends return before any receive exists; detach waits for them. */
    CHECK_MPI(MPI_Buffer_attach(pool, 4096));
    CHECK_MPI(MPI_Bsend(&v, 1, MPI_INT, peer, 22, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Ibsend(&v, 1, MPI_INT, peer, 23, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Wait(&r[0], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Irsend(&v, 1, MPI_INT, peer, 24, MPI_COMM_WORLD, &r[2]));
    CHECK_MPI(MPI_Recv(&got[1], 1, MPI_INT, peer, 23, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Recv(&got[0], 1, MPI_INT, peer, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Recv(&got[2], 1, MPI_INT, peer, 24, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Wait(&r[2], MPI_STATUS_IGNORE));
    CHECK(got[0] == value(peer, 2) && got[1] == value(peer, 2) && got[2] == value(peer, 2),
          "buffered sends carried %d %d %d", got[0], got[1], got[2]);
    CHECK_MPI(MPI_Buffer_detach(&back, &size_out));
    CHECK(back == pool && size_out == 4096, "detach gave %p/%d", back, size_out);
    free(pool);
}

static void replace_and_probes(void)
{
    int buf[4], n, flag = 0;
    MPI_Status st;
    MPI_Message msg;

    for (int i = 0; i < 4; i++) {
        buf[i] = value(rank, i);
    }
    CHECK_MPI(MPI_Sendrecv_replace(buf, 4, MPI_INT, peer, 31, peer, 31, MPI_COMM_WORLD, &st));
    for (int i = 0; i < 4; i++) {
        CHECK(buf[i] == value(peer, i), "sendrecv_replace elem %d = %d", i, buf[i]);
    }
    /* Probe sees size, source and tag before the receive. */
    CHECK_MPI(MPI_Send(buf, 3, MPI_INT, peer, 32, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Probe(peer, 32, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 3 && st.MPI_SOURCE == peer && st.MPI_TAG == 32, "probe %d from %d tag %d", n,
          st.MPI_SOURCE, st.MPI_TAG);
    CHECK_MPI(MPI_Recv(buf, n, MPI_INT, peer, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Iprobe(peer, 33, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
    CHECK(!flag, "iprobe found a message nobody sent");
    /* Matched probe: the message is taken out of matching, then received. */
    CHECK_MPI(MPI_Send(buf, 2, MPI_INT, peer, 34, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Mprobe(peer, 34, MPI_COMM_WORLD, &msg, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 2, "mprobe count %d", n);
    CHECK_MPI(MPI_Mrecv(buf, n, MPI_INT, &msg, &st));
    CHECK(msg == MPI_MESSAGE_NULL, "mrecv left the message handle");
    CHECK_MPI(MPI_Send(buf, 1, MPI_INT, peer, 35, MPI_COMM_WORLD));
    do {
        CHECK_MPI(MPI_Improbe(peer, 35, MPI_COMM_WORLD, &flag, &msg, &st));
    } while (!flag);
    MPI_Request r;
    CHECK_MPI(MPI_Imrecv(buf, 1, MPI_INT, &msg, &r));
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == 35, "imrecv from %d tag %d", st.MPI_SOURCE,
          st.MPI_TAG);
}

static void persistent(void)
{
    int out = 0, in = -1;
    MPI_Request r[2];

    CHECK_MPI(MPI_Recv_init(&in, 1, MPI_INT, peer, 41, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Send_init(&out, 1, MPI_INT, peer, 41, MPI_COMM_WORLD, &r[1]));
    for (int it = 0; it < 5; it++) {
        out = value(rank, it);
        CHECK_MPI(MPI_Startall(2, r));
        CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        CHECK(in == value(peer, it), "persistent round %d got %d", it, in);
        CHECK(r[0] != MPI_REQUEST_NULL, "a persistent request was freed by the wait");
    }
    CHECK_MPI(MPI_Request_free(&r[0]));
    CHECK_MPI(MPI_Request_free(&r[1]));
    CHECK_MPI(MPI_Ssend_init(&out, 1, MPI_INT, peer, 42, MPI_COMM_WORLD, &r[1]));
    CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, peer, 42, MPI_COMM_WORLD, &r[0]));
    CHECK_MPI(MPI_Start(&r[1]));
    CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    CHECK(in == out - rank * 1000 + peer * 1000, "ssend_init got %d", in);
    CHECK_MPI(MPI_Request_free(&r[1]));
}

/* MPI_Bsend_init: each start copies the message out against the attached buffer and
 * completes at once, so the sender may reuse its buffer after the wait and the peer may
 * receive much later; a start whose message cannot fit fails with MPI_ERR_BUFFER and leaves
 * the request inactive. */
static void persistent_buffered(void)
{
    enum { N = 4, ROUNDS = 5 };
    int pool_len = ROUNDS * (N * (int)sizeof(int) + MPI_BSEND_OVERHEAD), out[N], in[N], len;
    char *pool = malloc(pool_len);
    int *big = calloc(pool_len, 1);
    void *back;
    MPI_Comm c;
    MPI_Request r;

    CHECK_MPI(MPI_Buffer_attach(pool, pool_len));
    CHECK_MPI(MPI_Bsend_init(out, N, MPI_INT, peer, 43, MPI_COMM_WORLD, &r));
    for (int it = 0; it < ROUNDS; it++) {
        for (int i = 0; i < N; i++) {
            out[i] = value(rank, it * N + i);
        }
        CHECK_MPI(MPI_Start(&r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        CHECK(r != MPI_REQUEST_NULL, "the wait freed a persistent buffered send");
    }
    memset(out, 0xff, sizeof(out)); /* each start took its own copy */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD)); /* no receive was posted before all five sends */
    for (int it = 0; it < ROUNDS; it++) {
        CHECK_MPI(MPI_Recv(in, N, MPI_INT, peer, 43, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < N; i++) {
            CHECK(in[i] == value(peer, it * N + i), "bsend_init round %d elem %d = %d", it, i,
                  in[i]);
        }
    }
    CHECK_MPI(MPI_Request_free(&r));

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK_MPI(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Bsend_init(big, pool_len / (int)sizeof(int), MPI_INT, peer, 44, c, &r));
    EXPECT_CLASS(MPI_Start(&r), MPI_ERR_BUFFER);
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE)); /* inactive: returns at once */
    CHECK_MPI(MPI_Request_free(&r));
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Buffer_detach(&back, &len));
    CHECK(back == pool && len == pool_len, "detach gave %p/%d", back, len);
    free(big);
    free(pool);
}

/* Waitany/Waitsome/Testall/Testany/Testsome over a set of receives from the peer. */
static void completion_calls(void)
{
    enum { N = 6 };
    int in[N], out[N], idx, cnt, flag, idxs[N], seen = 0;
    MPI_Request r[N], s[N];
    MPI_Status st[N];

    for (int i = 0; i < N; i++) {
        out[i] = value(rank, i);
        CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, peer, 50 + i, MPI_COMM_WORLD, &r[i]));
    }
    for (int i = 0; i < N; i++) {
        CHECK_MPI(MPI_Isend(&out[i], 1, MPI_INT, peer, 50 + i, MPI_COMM_WORLD, &s[i]));
    }
    CHECK_MPI(MPI_Waitany(N, r, &idx, &st[0]));
    CHECK(idx >= 0 && idx < N && in[idx] == value(peer, idx) && st[0].MPI_TAG == 50 + idx,
          "waitany index %d", idx);
    seen |= 1 << idx;
    CHECK_MPI(MPI_Waitsome(N, r, &cnt, idxs, st));
    for (int i = 0; i < cnt; i++) {
        CHECK(!(seen & (1 << idxs[i])) && in[idxs[i]] == value(peer, idxs[i]),
              "waitsome index %d", idxs[i]);
        seen |= 1 << idxs[i];
    }
    while (seen != (1 << N) - 1) {
        CHECK_MPI(MPI_Testany(N, r, &idx, &flag, MPI_STATUS_IGNORE));
        if (flag && idx != MPI_UNDEFINED) {
            seen |= 1 << idx;
        }
        CHECK_MPI(MPI_Testsome(N, r, &cnt, idxs, MPI_STATUSES_IGNORE));
        for (int i = 0; cnt != MPI_UNDEFINED && i < cnt; i++) {
            seen |= 1 << idxs[i];
        }
    }
    for (int i = 0; i < N; i++) {
        CHECK(in[i] == value(peer, i), "elem %d = %d", i, in[i]);
    }
    do {
        CHECK_MPI(MPI_Testall(N, s, &flag, MPI_STATUSES_IGNORE));
    } while (!flag);
    CHECK_MPI(MPI_Waitany(N, r, &idx, MPI_STATUS_IGNORE));
    CHECK(idx == MPI_UNDEFINED, "waitany on null requests gave %d", idx);
}

static void cancel_and_status(void)
{
    int in, flag, v = 7;
    double d[3] = {1, 2, 3};
    MPI_Request r;
    MPI_Status st;
    MPI_Count ec;

    CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, peer, 61, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Request_get_status(r, &flag, &st));
    CHECK(!flag, "a receive nobody sends to reported complete");
    CHECK_MPI(MPI_Cancel(&r));
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(flag, "the cancelled receive is not marked cancelled");
    CHECK_MPI(MPI_Sendrecv(d, 3, MPI_DOUBLE, peer, 62, d, 3, MPI_DOUBLE, peer, 62,
                           MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_elements_x(&st, MPI_DOUBLE, &ec));
    CHECK(ec == 3, "get_elements_x %lld", (long long)ec);
    CHECK_MPI(MPI_Get_elements(&st, MPI_BYTE, &flag));
    CHECK(flag == 24, "get_elements in bytes %d", flag);
    CHECK_MPI(MPI_Send(&v, 1, MPI_INT, MPI_PROC_NULL, 63, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, MPI_PROC_NULL, 63, MPI_COMM_WORLD, &r));
    CHECK_MPI(MPI_Wait(&r, &st));
    CHECK(st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG, "proc_null status %d/%d",
          st.MPI_SOURCE, st.MPI_TAG);
}

/* A small standard send to another process completes as it starts and shares one request
 * handle with every other such send (shim_req.h): each call on those handles must still do
 * what it does for a complete send. The receives are posted first, so no send can be
 * cancelled (each has matched), and every value must arrive. */
static void sends_done_at_once(void)
{
    enum { N = 5 };
    int out[N], in[N], flag = 0, idx = -1, cnt = 0, idxs[N], done = 0;
    MPI_Request r[N], s[N];
    MPI_Status st;

    for (int i = 0; i < N; i++) {
        out[i] = value(rank, 70 + i);
        in[i] = -1;
        CHECK_MPI(MPI_Irecv(&in[i], 1, MPI_INT, peer, 70 + i, MPI_COMM_WORLD, &r[i]));
    }
    for (int i = 0; i < N; i++) {
        CHECK_MPI(MPI_Isend(&out[i], 1, MPI_INT, peer, 70 + i, MPI_COMM_WORLD, &s[i]));
        out[i] = -2; /* a complete send's buffer is the caller's again */
    }
    while (!flag) {
        CHECK_MPI(MPI_Request_get_status(s[0], &flag, &st));
    }
    CHECK(s[0] != MPI_REQUEST_NULL, "MPI_Request_get_status freed the request");
    CHECK_MPI(MPI_Cancel(&s[0]));
    CHECK_MPI(MPI_Wait(&s[0], &st));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(!flag && s[0] == MPI_REQUEST_NULL, "a matched send reads cancelled (%d)", flag);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Start(&s[1]), MPI_ERR_REQUEST); /* not a persistent request */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Request_free(&s[1]));
    CHECK(s[1] == MPI_REQUEST_NULL, "MPI_Request_free left the handle");
    for (flag = 0; !flag;) {
        CHECK_MPI(MPI_Testany(N, s, &idx, &flag, MPI_STATUS_IGNORE));
    }
    CHECK(idx >= 2 && idx < N && s[idx] == MPI_REQUEST_NULL, "testany index %d", idx);
    CHECK_MPI(MPI_Waitsome(N, s, &cnt, idxs, MPI_STATUSES_IGNORE));
    for (int i = 0; i < cnt; i++) {
        done += idxs[i] >= 2 && idxs[i] < N && idxs[i] != idx;
    }
    CHECK(cnt == N - 3 && done == cnt, "waitsome completed %d of the %d sends left", cnt,
          N - 3);
    CHECK_MPI(MPI_Waitall(N, r, MPI_STATUSES_IGNORE));
    for (int i = 0; i < N; i++) {
        CHECK(in[i] == value(peer, 70 + i), "message %d carried %d", i, in[i]);
    }
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank ^ 1;
    if (peer >= size) {
        peer = rank;
    }
    synchronous();
    ready_and_buffered();
    replace_and_probes();
    persistent();
    persistent_buffered();
    completion_calls();
    cancel_and_status();
    sends_done_at_once();
    return mrt_finish("mr_p2p_modes");
}
