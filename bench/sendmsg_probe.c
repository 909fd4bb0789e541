/*
 * sendmsg_probe.c - an LD_PRELOAD probe that times every sendmsg() of at least PROBE_MIN
 * bytes (default 8000) and prints, at exit, the median and 10th percentile and the page
 * offset of the last iovec (the payload). Tracing tools cost tens of us per call in these
 * VMs (strace, perf trace); two clock reads cost well under one.
 *
 *   gcc -O2 -shared -fPIC -o /tmp/sendmsg_probe.so bench/sendmsg_probe.c -ldl
 *   LD_PRELOAD=/tmp/sendmsg_probe.so MPISHIM_FABRIC_PROVIDER="tcp;ofi_rxm" \
 *       mpiexec -n 2 bench/bench_p2p latency -s 16384 -t 0.2
 *   LD_PRELOAD=/tmp/sendmsg_probe.so fi_pingpong -p tcp -e rdm -S 16384 -I 5000 ...
 *
 * It is a diagnostic, not part of the build: see bench/README.md, "tcp latency against
 * fi_pingpong". It keeps its samples without a lock, so it assumes one thread calls
 * sendmsg (true of our ranks and of fi_pingpong).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_SAMPLES 65536

static double samples[MAX_SAMPLES];
static int nsamples;
static unsigned long last_offset;
static long min_bytes = -1;
static ssize_t (*real_sendmsg)(int, const struct msghdr *, int);

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    if (!real_sendmsg) {
        const char *env = getenv("PROBE_MIN");
        real_sendmsg = (ssize_t(*)(int, const struct msghdr *, int))dlsym(RTLD_NEXT, "sendmsg");
        min_bytes = env ? atol(env) : 8000;
    }
    double t0 = now();
    ssize_t rc = real_sendmsg(fd, msg, flags);
    double t = now() - t0;
    if (rc >= min_bytes && nsamples < MAX_SAMPLES && msg->msg_iovlen > 0) {
        last_offset = (uintptr_t)msg->msg_iov[msg->msg_iovlen - 1].iov_base & 4095;
        samples[nsamples++] = t;
    }
    return rc;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

__attribute__((destructor)) static void report(void)
{
    if (nsamples < 100) {
        return; /* control traffic only */
    }
    qsort(samples, (size_t)nsamples, sizeof(samples[0]), by_value);
    fprintf(stderr,
            "[sendmsg_probe pid %d] %d calls >= %ld B: median %.2f us, p10 %.2f us, "
            "payload page offset %lu\n",
            (int)getpid(), nsamples, min_bytes, samples[nsamples / 2] * 1e6,
            samples[nsamples / 10] * 1e6, last_offset);
}
