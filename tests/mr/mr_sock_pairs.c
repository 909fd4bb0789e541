/*
 * mr_sock_pairs - every pair of ranks sends its first message both ways at once; then each
 * pair ping-pongs, the higher rank first, and streams of numbered messages go both ways;
 * three sizes (an eager one, a larger eager one and a rendezvous past MPISHIM_EAGER_MAX),
 * each checked for its number and bytes.
 *
 * Over our own sockets (MPISHIM_FABRIC_PROVIDER=sock, tests/mr.list) the first messages
 * make two connections per pair, and the higher rank moves its writes onto the lower
 * rank's at its next send (fabric/fab_sock.c, K_MOVED and K_HERE): its messages before and
 * after the move must arrive in order, whichever connection the receiver reads first. When
 * it reads the moved-to one first it holds it until the K_MOVED, and then must read what
 * it holds at once: before that, the pair waited for good whenever the held frames were
 * all in the receiver's buffer (seen in about one run in twenty at 2 ranks; at 6 ranks each
 * run has 15 pairs to try it). Any provider runs it as a plain ordering test.
 *
 * --one-per-pair (over sock): after the move the connection left idle is closed, so in
 * the end each rank holds at most one established TCP connection per peer, plus those of
 * its launcher's bootstrap (at most BOOT_CONNS); before, a pair that connected both ways
 * kept both, 2 per peer after the all-at-once hello.
 */
#include "mrtest.h"

#include <dirent.h>
#include <linux/tcp.h> /* the kernel's struct tcp_info: its data segment counts */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define ROUNDS 20
#define PER 6                   /* messages to each peer per round */
#define TCP_STATE_ESTABLISHED 1 /* tcpi_state (the kernel's TCP_ESTABLISHED) */
#define BOOT_CONNS 2 /* the bootstrap's own TCP connections (a store client, a launcher's) */

static const int sizes[3] = {8, 1024, 40 * 1024};

static void fill(unsigned char *b, int n, int src, int seq)
{
    for (int i = 0; i < n; i++) {
        b[i] = (unsigned char)(i * 13 + src * 7 + seq);
    }
}

static int first_wrong(const unsigned char *b, int n, int src, int seq)
{
    for (int i = 0; i < n; i++) {
        if (b[i] != (unsigned char)(i * 13 + src * 7 + seq)) {
            return i;
        }
    }
    return n;
}

/* The first messages, both ways at once: every rank sends before it receives. */
static void hello(int rank, int size)
{
    int out = rank, in[64];
    MPI_Request r[128];
    int n = 0;

    for (int p = 0; p < size; p++) {
        if (p != rank) {
            CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, p, 1, MPI_COMM_WORLD, &r[n++]));
        }
    }
    for (int p = 0; p < size; p++) {
        if (p != rank) {
            CHECK_MPI(MPI_Irecv(&in[p], 1, MPI_INT, p, 1, MPI_COMM_WORLD, &r[n++]));
        }
    }
    CHECK_MPI(MPI_Waitall(n, r, MPI_STATUSES_IGNORE));
    for (int p = 0; p < size; p++) {
        CHECK(p == rank || in[p] == p, "hello from rank %d says %d", p, in[p]);
    }
}

/* Ping-pongs of pair (lo, hi), the higher rank first: its first send after hello is the one
 * that moves, and it then waits for the answer, so nothing else comes to wake the lower
 * rank for frames it holds. */
static void pair_pingpong(int rank, int lo, int hi, unsigned char *sb, unsigned char *rb)
{
    for (int k = 0; k < PER; k++) {
        int n = sizes[k % 3];
        if (rank == hi) {
            fill(sb, n, rank, k);
            CHECK_MPI(MPI_Send(sb, n, MPI_BYTE, lo, 3, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Recv(rb, n, MPI_BYTE, lo, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(first_wrong(rb, n, lo, k) == n, "ping-pong %d from rank %d wrong", k, lo);
        } else if (rank == lo) {
            CHECK_MPI(MPI_Recv(rb, n, MPI_BYTE, hi, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK(first_wrong(rb, n, hi, k) == n, "ping-pong %d from rank %d wrong", k, hi);
            fill(sb, n, rank, k);
            CHECK_MPI(MPI_Send(sb, n, MPI_BYTE, hi, 3, MPI_COMM_WORLD));
        }
    }
}

/* One round: PER numbered messages to every peer and from every peer, same tag, so that
 * MPI's order per sender is what puts each into its receive. */
static void round_trip(int rank, int size, int rnd, unsigned char **sbuf, unsigned char **rbuf)
{
    MPI_Request r[2 * 64 * PER];
    int n = 0;

    for (int p = 0; p < size; p++) {
        for (int k = 0; p != rank && k < PER; k++) {
            CHECK_MPI(MPI_Irecv(rbuf[p * PER + k], sizes[k % 3], MPI_BYTE, p, 2, MPI_COMM_WORLD,
                                &r[n++]));
        }
    }
    for (int p = 0; p < size; p++) {
        for (int k = 0; p != rank && k < PER; k++) {
            unsigned char *b = sbuf[p * PER + k];
            fill(b, sizes[k % 3], rank, rnd * PER + k);
            CHECK_MPI(MPI_Isend(b, sizes[k % 3], MPI_BYTE, p, 2, MPI_COMM_WORLD, &r[n++]));
        }
    }
    CHECK_MPI(MPI_Waitall(n, r, MPI_STATUSES_IGNORE));
    for (int p = 0; p < size; p++) {
        for (int k = 0; p != rank && k < PER; k++) {
            int at = first_wrong(rbuf[p * PER + k], sizes[k % 3], p, rnd * PER + k);
            CHECK(at == sizes[k % 3], "round %d message %d from rank %d: byte %d of %d wrong", rnd,
                  k, p, at, sizes[k % 3]);
        }
    }
}

/* This process's TCP connections in the ESTABLISHED state that carried data: one the peer
 * closed is not, nor a liveness probe (fab_probe.c: a connect, and a reset once collected),
 * which a rank of a loaded machine may have in flight either way when this counts. */
static int established_tcp(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    CHECK(d != NULL, "cannot list /proc/self/fd");
    while (d && (e = readdir(d)) != NULL) {
        int fd = atoi(e->d_name), type = 0;
        struct tcp_info ti;
        socklen_t tl = sizeof(type), il = sizeof(ti);
        memset(&ti, 0, sizeof(ti));
        if (e->d_name[0] != '.' && fd != dirfd(d) &&
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0 && type == SOCK_STREAM &&
            getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &il) == 0 &&
            ti.tcpi_state == TCP_STATE_ESTABLISHED &&
            ti.tcpi_data_segs_in + ti.tcpi_data_segs_out > 0) {
            n++;
        }
    }
    if (d) {
        closedir(d);
    }
    return n;
}

int main(int argc, char **argv)
{
    int rank, size;
    unsigned char *sbuf[64 * PER], *rbuf[64 * PER];

    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "at most 64 ranks, not %d", size);
    for (int i = 0; i < size * PER; i++) {
        sbuf[i] = malloc((size_t)sizes[2]);
        rbuf[i] = malloc((size_t)sizes[2]);
        CHECK(sbuf[i] && rbuf[i], "no memory for buffer %d", i);
    }
    hello(rank, size);
    /* Every pair in one order all ranks share, so that no wait closes a cycle. */
    for (int lo = 0; lo < size; lo++) {
        for (int hi = lo + 1; hi < size; hi++) {
            pair_pingpong(rank, lo, hi, sbuf[0], rbuf[0]);
        }
    }
    for (int rnd = 0; rnd < ROUNDS; rnd++) {
        round_trip(rank, size, rnd, sbuf, rbuf);
    }
    if (argc > 1 && strcmp(argv[1], "--one-per-pair") == 0) {
        /* Two barriers: the ends of moved-from connections are read in the first's waits. */
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        int n = established_tcp();
        CHECK(n <= size - 1 + BOOT_CONNS,
              "%d established TCP connections for %d peers (at most %d bootstrap ones): the "
              "connection left by a move stayed open",
              n, size - 1, BOOT_CONNS);
    }
    for (int i = 0; i < size * PER; i++) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    return mrt_finish("mr_sock_pairs");
}
