/*
 * mps_copy.h - memcpy for message payloads.
 *
 * glibc's memcpy moves medium sizes (about 2 KiB up to the L2 size) with `rep movsb` on
 * CPUs that advertise fast string moves. On AMD Zen 3 (the EPYC of our test machines) that
 * runs at 2-3 GB/s instead of 30-45 when the destination lies 8-31 bytes past the source
 * modulo 4 KiB, a relation that ring offsets and user buffers fall into by chance: a 32 KiB
 * copy measured 2.9 GB/s at those distances and 40-46 GB/s at every other one. Message
 * payloads go through this, which copies such pairs with a vector loop instead.
 */
#ifndef MPS_COPY_H
#define MPS_COPY_H

#include <stddef.h>

/* Copies n bytes from src to dst (which must not overlap), like memcpy. */
void mps_copy(void *dst, const void *src, size_t n);

/* memset(p, 0, n) for a struct of a few hundred bytes on a per-message path, through libc:
 * given a constant size, gcc zeroes such a struct inline with `rep stos`, which takes tens
 * of cycles to start on AMD Zen (the two of a 1-byte MPI_Irecv's requests were 30 % of a
 * receiving rank's time in `bench_p2p bw`, perf) where libc's vector stores take a few. */
void mps_zero(void *p, size_t n);

/* mps_copy for the few bytes of a header or a small payload, inline: a call into libc
 * costs more than such a copy. Two overlapping fixed-size moves cover any n up to twice
 * their size. */
static inline void mps_copy_small(void *dst, const void *src, size_t n)
{
    unsigned char *d = dst;
    const unsigned char *s = src;

    if (n > 64) {
        mps_copy(d, s, n);
    } else if (n >= 32) {
        __builtin_memcpy(d, s, 32);
        __builtin_memcpy(d + n - 32, s + n - 32, 32);
    } else if (n >= 16) {
        __builtin_memcpy(d, s, 16);
        __builtin_memcpy(d + n - 16, s + n - 16, 16);
    } else if (n >= 8) {
        __builtin_memcpy(d, s, 8);
        __builtin_memcpy(d + n - 8, s + n - 8, 8);
    } else if (n >= 4) {
        __builtin_memcpy(d, s, 4);
        __builtin_memcpy(d + n - 4, s + n - 4, 4);
    } else if (n > 0) {
        d[0] = s[0];
        d[n / 2] = s[n / 2];
        d[n - 1] = s[n - 1];
    }
}

#endif
