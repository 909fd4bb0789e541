/*
 * mps_copy.c - memcpy for message payloads (see mps_copy.h for why not memcpy itself).
 */
#include "config.h"

#include "mps_copy.h"

#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#include <stdint.h>

/* The destinations that `rep movsb` handles slowly: 1-63 bytes past the source modulo
 * 4 KiB (measured slow at 8-24, fast from 32; the margin is cheap). glibc uses `rep movsb`
 * from about 2 KiB (below, this test would cost more than it saves) up to the L2 size on
 * AMD; from ALIAS_MAX on it copies with vector moves or non-temporal stores anyway. */
#define ALIAS_WINDOW 64u
#define ALIAS_MIN 2048u
#define ALIAS_MAX (4u << 20)

/* A plain SSE2 loop (every x86-64 has it): 37-46 GB/s at any distance, where glibc's
 * memcpy gave 2.9 in the window. Elsewhere glibc is as fast or faster (AVX2 moves on
 * cache-resident data, non-temporal stores for huge copies), so it keeps those. */
static void copy_sse2(unsigned char *d, const unsigned char *s, size_t n)
{
    size_t i = 0;

    for (; i + 64 <= n; i += 64) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s + i + 16));
        __m128i c = _mm_loadu_si128((const __m128i *)(s + i + 32));
        __m128i e = _mm_loadu_si128((const __m128i *)(s + i + 48));
        _mm_storeu_si128((__m128i *)(d + i), a);
        _mm_storeu_si128((__m128i *)(d + i + 16), b);
        _mm_storeu_si128((__m128i *)(d + i + 32), c);
        _mm_storeu_si128((__m128i *)(d + i + 48), e);
    }
    memcpy(d + i, s + i, n - i);
}

/* Copies of 1 to 4 MiB go in 512 KiB pieces: glibc moves a piece below the L2 size with
 * `rep movsb`, a whole copy of the L2 size or more (on AMD) with its vector loop, which here
 * moves cache-resident data 15-20 % slower (1 MiB: 58 -> 70 GB/s in pieces, 2 MiB: 56 -> 63;
 * an MPI_Put of 1 MiB on a shared window is one such copy). From 4 MiB on glibc may choose
 * non-temporal stores, which a piece would lose. */
#define PIECE_FROM (1u << 20)
#define PIECE (512u << 10)

static void copy_piece(void *dst, const void *src, size_t n)
{
    size_t dist = ((uintptr_t)dst - (uintptr_t)src) % 4096u;

    if (n >= ALIAS_MIN && n < ALIAS_MAX && dist - 1u < ALIAS_WINDOW - 1u) {
        copy_sse2(dst, src, n);
    } else if (n) { /* an empty message may come with NULL buffers, which memcpy forbids */
        memcpy(dst, src, n);
    }
}

void mps_copy(void *dst, const void *src, size_t n)
{
    if (n < PIECE_FROM || n >= ALIAS_MAX) {
        copy_piece(dst, src, n);
        return;
    }
    for (size_t off = 0; off < n; off += PIECE) {
        copy_piece((char *)dst + off, (const char *)src + off, n - off < PIECE ? n - off : PIECE);
    }
}
#else
void mps_copy(void *dst, const void *src, size_t n)
{
    if (n) { /* an empty message may come with NULL buffers, which memcpy forbids */
        memcpy(dst, src, n);
    }
}
#endif

/* Never inlined nor specialised for a constant n (link-time optimisation would otherwise
 * turn the call back into `rep stos`). */
#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noipa))
#endif
void mps_zero(void *p, size_t n)
{
    memset(p, 0, n);
}
