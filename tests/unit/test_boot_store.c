/* Unit tests of the TCP and file stores (pmix_boot/boot_store.h). Most tests run once per
 * kind of store; a few are about TCP or file only. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "boot_store.h"
#include "mps_log.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

enum kind { TCP, FILESTORE };

struct fixture {
    enum kind kind;
    struct boot_store_server *srv;
    char dir[64], path[128];
    struct boot_store *s;
};

static enum kind tcp_kind = TCP, file_kind = FILESTORE;

/* A second (or third) handle on the fixture's store. */
static struct boot_store *open_handle(struct fixture *f)
{
    struct boot_store *s = NULL;
    int rc = f->kind == TCP
                 ? boot_store_tcp_connect("127.0.0.1", boot_store_server_port(f->srv), 5.0, &s)
                 : boot_store_file_open(f->path, 5.0, &s);
    assert_int_equal(rc, PGC_OK);
    return s;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    f->kind = *(enum kind *)*state;
    if (f->kind == TCP) {
        assert_int_equal(boot_store_server_start("127.0.0.1", 0, &f->srv), PGC_OK);
        assert_true(boot_store_server_port(f->srv) > 0);
    } else {
        strcpy(f->dir, "/tmp/test_boot_store.XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        snprintf(f->path, sizeof(f->path), "%s/store", f->dir);
    }
    f->s = open_handle(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    boot_store_close(f->s);
    boot_store_server_stop(f->srv);
    if (f->kind == FILESTORE) {
        unlink(f->path);
        rmdir(f->dir);
    }
    free(f);
    return 0;
}

static void test_get_returns_the_exact_bytes_that_were_set(void **state)
{
    struct fixture *f = *state;
    const char val[] = "hello\0world";
    void *got = NULL;
    size_t len = 0;

    assert_int_equal(boot_store_set(f->s, "k", val, 11), PGC_OK);
    assert_int_equal(boot_store_get(f->s, "k", &got, &len), PGC_OK);
    assert_int_equal(len, 11);
    assert_memory_equal(got, val, 11);
    assert_int_equal(((char *)got)[11], '\0');
    free(got);
}

static void test_set_replaces_the_value_and_empty_values_work(void **state)
{
    struct fixture *f = *state;
    void *got = NULL;
    size_t len = 99;

    assert_int_equal(boot_store_set(f->s, "k", "first", 5), PGC_OK);
    assert_int_equal(boot_store_set(f->s, "k", "", 0), PGC_OK);
    assert_int_equal(boot_store_get(f->s, "k", &got, &len), PGC_OK);
    assert_int_equal(len, 0);
    free(got);
}

static void test_add_starts_from_zero_and_accumulates(void **state)
{
    struct fixture *f = *state;
    int64_t v = 0;
    void *got = NULL;
    size_t len = 0;

    assert_int_equal(boot_store_add(f->s, "n", 5, &v), PGC_OK);
    assert_int_equal(v, 5);
    assert_int_equal(boot_store_add(f->s, "n", -7, &v), PGC_OK);
    assert_int_equal(v, -2);
    assert_int_equal(boot_store_get(f->s, "n", &got, &len), PGC_OK);
    assert_string_equal(got, "-2");
    assert_int_equal(len, 2);
    free(got);
}

static void test_add_on_a_non_integer_value_fails(void **state)
{
    struct fixture *f = *state;
    int64_t v = 0;

    assert_int_equal(boot_store_set(f->s, "x", "abc", 3), PGC_OK);
    assert_int_equal(boot_store_add(f->s, "x", 1, &v), PGC_ERR_INVALID_ARG);
}

static void expect_cas(struct boot_store *s, const char *exp, const char *des, const char *cur)
{
    void *got = NULL;
    size_t len = 0;

    assert_int_equal(boot_store_compare_set(s, "c", exp, strlen(exp), des, strlen(des), &got, &len),
                     PGC_OK);
    assert_int_equal(len, strlen(cur));
    assert_memory_equal(got, cur, len);
    free(got);
}

static void test_compare_set_swaps_only_on_a_match(void **state)
{
    struct fixture *f = *state;
    const char *key = "c";
    bool exists = true;

    expect_cas(f->s, "x", "v0", ""); /* absent, expected not empty: stays absent */
    assert_int_equal(boot_store_check(f->s, &key, 1, &exists), PGC_OK);
    assert_false(exists);
    expect_cas(f->s, "", "v1", "v1"); /* absent counts as empty */
    expect_cas(f->s, "wrong", "v2", "v1");
    expect_cas(f->s, "v1", "v2", "v2");
}

static void test_delete_check_and_num_keys_agree(void **state)
{
    struct fixture *f = *state;
    const char *ac[] = {"a", "c"}, *ab[] = {"a", "b"};
    bool yes = false;
    int64_t n = -1;

    assert_int_equal(boot_store_set(f->s, "a", "1", 1), PGC_OK);
    assert_int_equal(boot_store_set(f->s, "b", "2", 1), PGC_OK);
    assert_int_equal(boot_store_set(f->s, "c", "3", 1), PGC_OK);
    assert_int_equal(boot_store_num_keys(f->s, &n), PGC_OK);
    assert_int_equal(n, 3);
    assert_int_equal(boot_store_delete(f->s, "b", &yes), PGC_OK);
    assert_true(yes);
    assert_int_equal(boot_store_delete(f->s, "b", &yes), PGC_OK);
    assert_false(yes);
    assert_int_equal(boot_store_num_keys(f->s, &n), PGC_OK);
    assert_int_equal(n, 2);
    assert_int_equal(boot_store_check(f->s, ac, 2, &yes), PGC_OK);
    assert_true(yes);
    assert_int_equal(boot_store_check(f->s, ab, 2, &yes), PGC_OK);
    assert_false(yes);
}

static void test_get_times_out_when_key_never_appears(void **state)
{
    struct fixture *f = *state;
    void *got = (void *)1;
    size_t len = 0;
    double t0 = mps_now(), dt;

    boot_store_set_timeout(f->s, 0.3);
    assert_int_equal(boot_store_get(f->s, "never", &got, &len), PGC_ERR_TIMEOUT);
    dt = mps_now() - t0;
    assert_null(got);
    assert_true(dt >= 0.29 && dt < 1.5);
    assert_non_null(strstr(mps_last_error(), "never"));
}

static void test_wait_times_out_when_one_key_is_missing(void **state)
{
    struct fixture *f = *state;
    const char *keys[] = {"here", "missing"};
    double t0 = mps_now(), dt;

    assert_int_equal(boot_store_set(f->s, "here", "", 0), PGC_OK);
    assert_int_equal(boot_store_wait(f->s, keys, 2, 0.3), PGC_ERR_TIMEOUT);
    dt = mps_now() - t0;
    assert_true(dt >= 0.29 && dt < 1.5);
}

struct adder {
    struct fixture *f;
    int delta, times, rc;
};

static void *add_thread(void *arg)
{
    struct adder *a = arg;
    struct boot_store *s = open_handle(a->f);
    int64_t v;

    for (int i = 0; i < a->times && a->rc == PGC_OK; i++) {
        a->rc = boot_store_add(s, "total", a->delta, &v);
    }
    boot_store_close(s);
    return NULL;
}

static void test_concurrent_clients_adding_give_the_exact_total(void **state)
{
    struct fixture *f = *state;
    struct adder a[4];
    pthread_t t[4];
    int64_t v = -1;

    for (int i = 0; i < 4; i++) {
        a[i] = (struct adder){.f = f, .delta = i + 1, .times = 100};
        assert_int_equal(pthread_create(&t[i], NULL, add_thread, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(a[i].rc, PGC_OK);
    }
    assert_int_equal(boot_store_add(f->s, "total", 0, &v), PGC_OK);
    assert_int_equal(v, 100 * (1 + 2 + 3 + 4));
}

static void *set_later_thread(void *arg)
{
    struct fixture *f = arg;
    struct boot_store *s = open_handle(f);

    usleep(150 * 1000);
    boot_store_set(s, "late1", "a", 1);
    usleep(50 * 1000);
    boot_store_set(s, "late2", "bb", 2);
    boot_store_close(s);
    return NULL;
}

static void test_wait_and_get_return_when_keys_appear_later(void **state)
{
    struct fixture *f = *state;
    const char *keys[] = {"late1", "late2"};
    double t0 = mps_now();
    void *got = NULL;
    size_t len = 0;
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, set_later_thread, f), 0);
    boot_store_set_timeout(f->s, 5.0);
    assert_int_equal(boot_store_get(f->s, "late1", &got, &len), PGC_OK);
    assert_true(mps_now() - t0 >= 0.14);
    assert_int_equal(len, 1);
    assert_memory_equal(got, "a", 1);
    assert_int_equal(boot_store_wait(f->s, keys, 2, 5.0), PGC_OK);
    assert_true(mps_now() - t0 >= 0.19);
    pthread_join(t, NULL);
    free(got);
}

/* TCP only. */

static int free_port(void)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void test_connect_to_a_port_nobody_listens_on_is_unreachable(void **state)
{
    int port = free_port();
    struct boot_store *s = (void *)1;
    double t0 = mps_now(), dt;
    char where[64];

    assert_int_equal(boot_store_tcp_connect("127.0.0.1", port, 0.3, &s), PGC_ERR_UNREACHABLE);
    dt = mps_now() - t0;
    assert_null(s);
    assert_true(dt >= 0.29 && dt < 2.0);
    snprintf(where, sizeof(where), "127.0.0.1:%d", port);
    assert_non_null(strstr(mps_last_error(), where));
}

struct late_server {
    int port;
    struct boot_store_server *srv;
};

static void *start_later_thread(void *arg)
{
    struct late_server *l = arg;

    usleep(300 * 1000);
    boot_store_server_start(NULL, l->port, &l->srv);
    return NULL;
}

static void test_connect_retries_until_the_server_starts(void **state)
{
    struct late_server l = {.port = free_port()};
    struct boot_store *s = NULL;
    int64_t v = 0;
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, start_later_thread, &l), 0);
    assert_int_equal(boot_store_tcp_connect("localhost", l.port, 5.0, &s), PGC_OK);
    assert_int_equal(boot_store_add(s, "k", 3, &v), PGC_OK);
    assert_int_equal(v, 3);
    pthread_join(t, NULL);
    boot_store_close(s);
    boot_store_server_stop(l.srv);
}

struct getter {
    struct boot_store *s;
    int rc;
};

static void *get_thread(void *arg)
{
    struct getter *g = arg;
    void *val = NULL;
    size_t len;

    boot_store_set_timeout(g->s, 10.0);
    g->rc = boot_store_get(g->s, "never", &val, &len);
    free(val);
    return NULL;
}

static void test_server_stopping_during_a_get_makes_it_unreachable(void **state)
{
    struct fixture *f = *state;
    struct getter g = {.s = f->s};
    double t0 = mps_now();
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, get_thread, &g), 0);
    usleep(100 * 1000);
    boot_store_server_stop(f->srv);
    f->srv = NULL;
    pthread_join(t, NULL);
    assert_int_equal(g.rc, PGC_ERR_UNREACHABLE);
    assert_true(mps_now() - t0 < 3.0);
    assert_int_equal(boot_store_set(f->s, "k", "v", 1), PGC_ERR_UNREACHABLE);
}

static void test_server_survives_a_garbage_frame(void **state)
{
    struct fixture *f = *state;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)boot_store_server_port(f->srv))};
    unsigned char junk[16] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3};
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int64_t v = 0;

    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(send(fd, junk, sizeof(junk), MSG_NOSIGNAL), sizeof(junk));
    usleep(50 * 1000);
    close(fd);
    assert_int_equal(boot_store_add(f->s, "k", 2, &v), PGC_OK);
    assert_int_equal(v, 2);
}

/* File only. */

static void test_last_handle_to_close_removes_the_file(void **state)
{
    struct fixture *f = *state;
    struct boot_store *s2 = open_handle(f);
    struct stat st;

    assert_int_equal(boot_store_set(s2, "k", "v", 1), PGC_OK);
    boot_store_close(s2);
    assert_int_equal(stat(f->path, &st), 0);
    boot_store_close(f->s);
    f->s = NULL;
    assert_int_equal(stat(f->path, &st), -1);
}

/* Named after the kind of store, so that the two runs of one test read apart. */
#define WITH(t, k, kind)                                                                           \
    {                                                                                              \
#t " (" k ")", t, setup, teardown, &kind                                                   \
    }
#define TCP_ONLY(t) WITH(t, "tcp", tcp_kind)
#define FILE_ONLY(t) WITH(t, "file", file_kind)
#define BOTH(t) TCP_ONLY(t), FILE_ONLY(t)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_get_returns_the_exact_bytes_that_were_set),
        BOTH(test_set_replaces_the_value_and_empty_values_work),
        BOTH(test_add_starts_from_zero_and_accumulates),
        BOTH(test_add_on_a_non_integer_value_fails),
        BOTH(test_compare_set_swaps_only_on_a_match),
        BOTH(test_delete_check_and_num_keys_agree),
        BOTH(test_get_times_out_when_key_never_appears),
        BOTH(test_wait_times_out_when_one_key_is_missing),
        BOTH(test_concurrent_clients_adding_give_the_exact_total),
        BOTH(test_wait_and_get_return_when_keys_appear_later),
        cmocka_unit_test(test_connect_to_a_port_nobody_listens_on_is_unreachable),
        cmocka_unit_test(test_connect_retries_until_the_server_starts),
        TCP_ONLY(test_server_stopping_during_a_get_makes_it_unreachable),
        TCP_ONLY(test_server_survives_a_garbage_frame),
        FILE_ONLY(test_last_handle_to_close_removes_the_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
