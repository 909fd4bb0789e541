/* Unit tests of the PMI-1 method's own parts (pmix_boot/boot_pmi1.c): the base64url coding
 * of allgather bytes, the parsing of a wire line, and what boot_init does when PMI_FD is
 * bad or its server never answers or hangs up. The server here is a bare socket that says
 * nothing: these tests claim nothing about hydra, which tests/scripts/test_hydra.sh runs. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "boot.h"
#include "boot_pmi1.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void clear_env(void)
{
    static const char *vars[] = {"PMIX_RANK", "PMIX_NAMESPACE", "RANK",       "WORLD_SIZE",
                                 "PMI_FD",    "PMI_PORT",       "PMI_ID",     "PMI_RANK",
                                 "PMI_SIZE",  "MPISHIM_BOOT_METHOD", "MPISHIM_TIMEOUT"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        unsetenv(vars[i]);
    }
    mps_config_reset();
}

static int setup(void **state)
{
    (void)state;
    clear_env();
    return 0;
}

/* RFC 4648's examples, in its URL-safe alphabet and without padding. */
static void encode_matches_rfc4648_base64url(void **state)
{
    static const struct {
        const char *in;
        size_t len;
        const char *out;
    } v[] = {{"", 0, ""},         {"f", 1, "Zg"},         {"fo", 2, "Zm8"},
             {"foo", 3, "Zm9v"},  {"foob", 4, "Zm9vYg"},   {"fooba", 5, "Zm9vYmE"},
             {"foobar", 6, "Zm9vYmFy"}, {"\xfb\xff", 2, "-_8"}};
    char out[16];

    (void)state;
    for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
        assert_int_equal(boot_pmi1_encoded_len(v[i].len), strlen(v[i].out));
        boot_pmi1_encode(v[i].in, v[i].len, out);
        assert_string_equal(out, v[i].out);
    }
}

static void decode_gives_every_byte_back(void **state)
{
    unsigned char in[300], back[300];
    char enc[420];

    (void)state;
    for (size_t i = 0; i < sizeof(in); i++) {
        in[i] = (unsigned char)(i * 151 + 7);
    }
    for (size_t len = 0; len <= sizeof(in); len += len < 8 ? 1 : 37) {
        size_t n = boot_pmi1_encoded_len(len);
        boot_pmi1_encode(in, len, enc);
        /* Nothing a PMI server would take for a separator. */
        assert_int_equal(strspn(enc, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                     "0123456789-_"),
                         n);
        memset(back, 0, sizeof(back));
        assert_int_equal(boot_pmi1_decode(enc, n, back, len), (long)len);
        assert_memory_equal(back, in, len);
    }
}

static void decode_rejects_what_encode_never_writes(void **state)
{
    unsigned char out[8];

    (void)state;
    assert_int_equal(boot_pmi1_decode("Zm9=", 4, out, sizeof(out)), -1); /* '=' */
    assert_int_equal(boot_pmi1_decode("Zm+v", 4, out, sizeof(out)), -1); /* '+' */
    assert_int_equal(boot_pmi1_decode("Zm9vY", 5, out, sizeof(out)), -1); /* 5 characters */
    assert_int_equal(boot_pmi1_decode("Zm9vYmFy", 8, out, 5), -1);       /* 6 bytes > 5 */
    assert_int_equal(boot_pmi1_decode("Zm9vYmFy", 8, out, 6), 6);
}

static void value_is_found_by_whole_key_only(void **state)
{
    char v[16];

    (void)state;
    assert_true(boot_pmi1_value("cmd=get_result rc=0 msg=success value=abc", "value", v,
                                sizeof(v)));
    assert_string_equal(v, "abc");
    assert_true(boot_pmi1_value("cmd=get_result rc=0 msg=success value=abc", "cmd", v,
                                sizeof(v)));
    assert_string_equal(v, "get_result");
    assert_true(boot_pmi1_value("src=1 rc=-1", "rc", v, sizeof(v)));
    assert_string_equal(v, "-1");
    assert_true(boot_pmi1_value("cmd=initack\ncmd=set size=4\n", "size", v, sizeof(v)));
    assert_string_equal(v, "4");
    assert_true(boot_pmi1_value("cmd=put_result value=", "value", v, sizeof(v)));
    assert_string_equal(v, "");
    assert_false(boot_pmi1_value("cmd=barrier_out", "rc", v, sizeof(v)));
    assert_false(boot_pmi1_value("cmd=maxes vallen_max=1024", "max", v, sizeof(v)));
    assert_false(boot_pmi1_value("value=0123456789abcdef", "value", v, sizeof(v))); /* 16 */
}

static int init_pmi1(const char *method, const char *fd, struct boot **b)
{
    struct boot_opts o = {.init_method = method, .rank = -1, .size = -1, .timeout = 0.3};

    setenv("PMI_FD", fd, 1);
    setenv("PMI_RANK", "1", 1);
    setenv("PMI_SIZE", "2", 1);
    return boot_init(&o, b);
}

/* A server that takes the line and never answers: boot_init gives up after the timeout
 * with an error naming the command and PMI_FD, also when "auto" picked the method. */
static void a_silent_server_fails_init_with_the_command_named(void **state)
{
    const char *methods[] = {"pmi1", "auto"};
    struct boot *b = (struct boot *)&b;
    char fd[16];
    int sv[2];

    (void)state;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        snprintf(fd, sizeof(fd), "%d", sv[0]);
        assert_int_equal(init_pmi1(methods[i], fd, &b), PGC_ERR_TIMEOUT);
        assert_null(b);
        assert_non_null(strstr(mps_last_error(), "boot_init: PMI-1 cmd=init"));
        assert_non_null(strstr(mps_last_error(), fd));
        close(sv[0]);
        close(sv[1]);
    }
}

static void a_server_that_hangs_up_fails_init_as_unreachable(void **state)
{
    struct boot *b = (struct boot *)&b;
    char fd[16];
    int sv[2];

    (void)state;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    close(sv[1]);
    snprintf(fd, sizeof(fd), "%d", sv[0]);
    assert_int_equal(init_pmi1("pmi1", fd, &b), PGC_ERR_UNREACHABLE);
    assert_null(b);
    assert_non_null(strstr(mps_last_error(), "cmd=init"));
    close(sv[0]);
}

static void a_bad_pmi_fd_is_an_invalid_argument(void **state)
{
    struct boot *b = (struct boot *)&b;

    (void)state;
    assert_int_equal(init_pmi1("pmi1", "five", &b), PGC_ERR_INVALID_ARG);
    assert_null(b);
    assert_non_null(strstr(mps_last_error(), "PMI_FD=five"));
    assert_int_equal(init_pmi1("pmi1", "987", &b), PGC_ERR_INVALID_ARG); /* not open */
    assert_non_null(strstr(mps_last_error(), "PMI_FD=987"));
    unsetenv("PMI_FD");
    assert_int_equal(boot_init(&(struct boot_opts){.init_method = "pmi1", .timeout = 0.3}, &b),
                     PGC_ERR_BOOT);
    assert_non_null(strstr(mps_last_error(), "PMI_FD or PMI_PORT"));
}

#define T(t) cmocka_unit_test_setup(t, setup)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(encode_matches_rfc4648_base64url),
        T(decode_gives_every_byte_back),
        T(decode_rejects_what_encode_never_writes),
        T(value_is_found_by_whole_key_only),
        T(a_silent_server_fails_init_with_the_command_named),
        T(a_server_that_hangs_up_fails_init_as_unreachable),
        T(a_bad_pmi_fd_is_an_invalid_argument),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
