/* Unit tests of mps_copy (common/mps_copy.c): every byte arrives, none past the end moves,
 * at the sizes and distances where it takes another way than memcpy (the 4 KiB aliasing
 * window, the 512 KiB pieces of 1-4 MiB copies) and on each side of their bounds. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mps_copy.h"

#define GUARD 64

/* A byte that depends on its position, so a piece copied to the wrong place shows. */
static unsigned char pattern(size_t i)
{
    return (unsigned char)(i * 2654435761u >> 13);
}

/* Copies n bytes from src_off past the start of one buffer to dst_off past a 4 KiB
 * boundary further on (so the destination lies dst_off - src_off past the source modulo
 * 4 KiB, the distance mps_copy looks at), and checks every byte and the guard bytes on
 * either side of the destination. */
static void check_copy(size_t n, size_t src_off, size_t dst_off)
{
    size_t far = (src_off + n + GUARD + 4095) / 4096 * 4096;
    unsigned char *buf = malloc(far + dst_off + n + GUARD);
    unsigned char *s, *d;

    assert_non_null(buf);
    s = buf + src_off;
    d = buf + far + dst_off;
    memset(buf, 0xa5, far + dst_off + n + GUARD);
    for (size_t i = 0; i < n; i++) {
        s[i] = pattern(i);
    }
    mps_copy(d, s, n);
    for (size_t i = 0; i < n; i++) {
        if (d[i] != pattern(i)) {
            fail_msg("byte %zu of %zu (src +%zu, dst +%zu): %u, expected %u", i, n, src_off,
                     dst_off, d[i], pattern(i));
        }
    }
    for (size_t i = 1; i <= GUARD; i++) {
        assert_int_equal(d[-(ptrdiff_t)i], 0xa5);
        assert_int_equal(d[n - 1 + i], 0xa5);
    }
    free(buf);
}

static void test_small_and_aliased(void **state)
{
    static const size_t sizes[] = {0, 1, 7, 64, 2047, 2048, 2049, 32768, 65537};
    static const size_t dists[] = {0, 8, 17, 63, 64, 4095};

    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        for (size_t j = 0; j < sizeof(dists) / sizeof(dists[0]); j++) {
            check_copy(sizes[i], 0, dists[j]);
            check_copy(sizes[i], 5, 5 + dists[j]);
        }
    }
}

/* Around the pieces: 1 MiB - 1 (one copy), 1 MiB (two whole pieces), sizes that end in a
 * short piece, 4 MiB - 1 (the last size in pieces) and 4 MiB (one copy again). */
static void test_pieces(void **state)
{
    static const size_t sizes[] = {(1u << 20) - 1, 1u << 20,       (1u << 20) + 1,
                                    (3u << 19) + 5, (4u << 20) - 1, 4u << 20};

    (void)state;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        check_copy(sizes[i], 3, 3);
        check_copy(sizes[i], 0, 16); /* in the aliasing window: each piece takes the loop */
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_and_aliased),
        cmocka_unit_test(test_pieces),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
