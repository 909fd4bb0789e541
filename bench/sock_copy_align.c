/*
 * sock_copy_align.c - how the kernel's copy of a TCP payload depends on where the user's
 * buffer lies within its page (no MPI, one process, loopback).
 *
 *   bench/sock_copy_align [SIZE [HEADER]]
 *
 * Each row sends SIZE bytes after a HEADER-byte iovec (default 16408 and 24: our tcp AM of
 * 16 KiB as tcp;ofi_rxm writes it), 2,000 times, and prints the mean time of:
 * - send: sendmsg() with the payload starting OFFSET bytes into a page;
 * - recv: the recv() calls that drain the message into a buffer OFFSET bytes into a page.
 * The kernel copies with `rep movsb` on CPUs with fast short moves; on AMD Zen 3 that crawls
 * when the destination lies 8-31 bytes past the source modulo 4 KiB (mps_copy.h has the
 * user-space side). A page-fragment the kernel reuses starts at offset 0, so a page-aligned
 * payload behind a 24-byte header is such a pair. See bench/README.md, "tcp latency against
 * fi_pingpong", for what it measured and what it does not explain.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 2000

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what)
{
    perror(what);
    exit(1);
}

/* A connected loopback pair: fd[0] sends, fd[1] receives. */
static void loopback_pair(int fd[2])
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int one = 1;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) || listen(ls, 1) ||
        getsockname(ls, (struct sockaddr *)&a, &len)) {
        die("listen");
    }
    fd[0] = socket(AF_INET, SOCK_STREAM, 0);
    if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&a, sizeof(a))) {
        die("connect");
    }
    fd[1] = accept(ls, NULL, NULL);
    if (fd[1] < 0) {
        die("accept");
    }
    setsockopt(fd[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    close(ls);
}

/* One message: returns the seconds spent in sendmsg (want_recv 0) or in the receives. */
static double one_message(const int fd[2], char *hdr, size_t hlen, const char *src, char *dst,
                          size_t len, int want_recv)
{
    struct iovec iov[2] = {{hdr, hlen}, {(void *)src, len}};
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
    double t0 = now();
    if (sendmsg(fd[0], &m, 0) != (ssize_t)(hlen + len)) {
        die("sendmsg");
    }
    double t1 = now();
    for (size_t got = 0; got < hlen + len;) {
        ssize_t n = recv(fd[1], dst + got, hlen + len - got, 0);
        if (n <= 0) {
            die("recv");
        }
        got += (size_t)n;
    }
    return want_recv ? now() - t1 : t1 - t0;
}

int main(int argc, char **argv)
{
    static const int offsets[] = {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 128, 2048, 4064, 4088};
    size_t len = argc > 1 ? strtoul(argv[1], NULL, 10) : 16408;
    size_t hlen = argc > 2 ? strtoul(argv[2], NULL, 10) : 24;
    char hdr[4096] = {0};
    char *src, *dst;
    int fd[2];

    if (hlen > sizeof(hdr) || len > (1 << 20) ||
        posix_memalign((void **)&src, 4096, (1 << 20) + 8192) ||
        posix_memalign((void **)&dst, 4096, (1 << 20) + 8192)) {
        fprintf(stderr, "usage: sock_copy_align [SIZE <= 1 MiB [HEADER <= 4096]]\n");
        return 2;
    }
    memset(src, 'a', (1 << 20) + 8192);
    memset(dst, 0, (1 << 20) + 8192);
    loopback_pair(fd);
    printf("# %zu B after a %zu B header; mean us over %d messages\n# offset  send  recv\n", len,
           hlen, ROUNDS);
    for (size_t k = 0; k < sizeof(offsets) / sizeof(offsets[0]); k++) {
        int off = offsets[k];
        double send = 0, recv_t = 0;
        for (int i = 0; i < ROUNDS; i++) {
            send += one_message(fd, hdr, hlen, src + off, dst + 64, len, 0);
            recv_t += one_message(fd, hdr, hlen, src + 64, dst + off, len, 1);
        }
        printf("%6d %6.2f %6.2f\n", off, send / ROUNDS * 1e6, recv_t / ROUNDS * 1e6);
    }
    return 0;
}
