/*
 * syscall_trace.c - an LD_PRELOAD recorder of the socket and poll calls of a ping-pong,
 * for taking one hop apart: when each call began and ended, what it returned, and the page
 * offset of the buffer it moved. Tracing tools cost tens of us per call in these VMs; two
 * clock reads cost well under one. bench/syscall_trace.py reads the records.
 *
 *   gcc -O2 -shared -fPIC -o /tmp/syscall_trace.so bench/syscall_trace.c -ldl
 *   mkdir -p /tmp/t1 && TRACE_DIR=/tmp/t1 LD_PRELOAD=/tmp/syscall_trace.so \
 *       MPISHIM_FABRIC_PROVIDER="tcp;ofi_rxm" build/tools/mpiexec -n 2 \
 *       build/bench/bench_p2p latency -s 16384 -t 0.3
 *   TRACE_DIR=/tmp/t2 LD_PRELOAD=/tmp/syscall_trace.so fi_pingpong -p tcp -e rdm -S 16384 ...
 *   bench/syscall_trace.py 16384 /tmp/t1/tr.* /tmp/t2/tr.*
 *
 * Each process that made 1,000 calls or more writes TRACE_DIR/tr.PID at exit: records of
 * struct rec below, in call order. It keeps them without a lock, so it assumes one thread
 * makes these calls (true of our ranks and of fi_pingpong). A diagnostic, not part of the
 * build: see bench/README.md, "tcp latency against fi_pingpong".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_RECS (1 << 21)

/* 32 bytes; syscall_trace.py unpacks it as "ddlii". */
struct rec {
    double t0, t1; /* CLOCK_MONOTONIC seconds at entry and return */
    long ret;
    int kind;     /* 1 sendmsg, 2 send/sendto, 3 recv/recvfrom, 4 recvmsg, 5 poll, 6 read, 7 write,
                     8 epoll_wait */
    int page_off; /* buffer & 4095 (sendmsg: its last iovec), -1 when not recorded */
};

static struct rec *recs;
static long nrecs;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void record(int kind, double t0, long ret, const void *buf)
{
    if (!recs) {
        recs = malloc(sizeof(*recs) * MAX_RECS);
    }
    if (recs && nrecs < MAX_RECS) {
        recs[nrecs++] = (struct rec){t0, now(), ret, kind, buf ? (int)((uintptr_t)buf & 4095) : -1};
    }
}

/* Defines name(params) calling the real one with args, recorded as kind with buffer buf. */
#define WRAP(name, rt, kind, buf, params, args)                                                    \
    rt name params                                                                                 \
    {                                                                                              \
        static rt(*real) params;                                                                   \
        if (!real) {                                                                               \
            real = (rt(*) params)dlsym(RTLD_NEXT, #name);                                          \
        }                                                                                          \
        double t0 = now();                                                                         \
        rt r = real args;                                                                          \
        record(kind, t0, (long)r, buf);                                                            \
        return r;                                                                                  \
    }

WRAP(sendmsg, ssize_t, 1, m->msg_iovlen ? m->msg_iov[m->msg_iovlen - 1].iov_base : NULL,
     (int fd, const struct msghdr *m, int f), (fd, m, f))
WRAP(send, ssize_t, 2, b, (int fd, const void *b, size_t l, int f), (fd, b, l, f))
WRAP(sendto, ssize_t, 2, b,
     (int fd, const void *b, size_t l, int f, const struct sockaddr *a, socklen_t al),
     (fd, b, l, f, a, al))
WRAP(recv, ssize_t, 3, b, (int fd, void *b, size_t l, int f), (fd, b, l, f))
WRAP(recvfrom, ssize_t, 3, b, (int fd, void *b, size_t l, int f, struct sockaddr *a, socklen_t *al),
     (fd, b, l, f, a, al))
WRAP(recvmsg, ssize_t, 4, NULL, (int fd, struct msghdr *m, int f), (fd, m, f))
WRAP(poll, int, 5, NULL, (struct pollfd * p, nfds_t n, int t), (p, n, t))
WRAP(read, ssize_t, 6, NULL, (int fd, void *b, size_t l), (fd, b, l))
WRAP(write, ssize_t, 7, NULL, (int fd, const void *b, size_t l), (fd, b, l))
WRAP(epoll_wait, int, 8, NULL, (int e, struct epoll_event *v, int m, int t), (e, v, m, t))

__attribute__((destructor)) static void dump(void)
{
    const char *dir = getenv("TRACE_DIR");
    char path[512];
    if (!dir || nrecs < 1000) {
        return; /* launchers and control processes */
    }
    long n = nrecs;
    nrecs = MAX_RECS; /* stop recording: the writes below are ours */
    snprintf(path, sizeof(path), "%s/tr.%d", dir, (int)getpid());
    FILE *f = fopen(path, "w");
    if (f) {
        fwrite(recs, sizeof(*recs), (size_t)n, f);
        fclose(f);
    }
}
