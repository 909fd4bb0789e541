/*
 * test_pgc_store.c - the public Store of the pgc_ API: TCP store (a server and clients,
 * clients in concurrent threads), file store, prefix store, timeouts, compare_set, wait,
 * check, delete, num_keys, and the messages of failed calls.
 */
#include "config.h"

#include <pgc.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct fixture {
    pgc_store *server; /* a server with its own client connection */
    int port;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    assert_int_equal(pgc_store_tcp_create(NULL, 0, 1, 5.0, &f->server), PGC_OK);
    f->port = pgc_store_port(f->server);
    assert_true(f->port > 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;

    pgc_store_free(f->server);
    free(f);
    return 0;
}

static pgc_store *client(const struct fixture *f)
{
    pgc_store *c = NULL;

    assert_int_equal(pgc_store_tcp_create("127.0.0.1", f->port, 0, 5.0, &c), PGC_OK);
    return c;
}

static void assert_value(pgc_store *s, const char *key, const char *want)
{
    void *v = NULL;
    size_t len = 0;

    assert_int_equal(pgc_store_get(s, key, &v, &len), PGC_OK);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(v, want, len);
    assert_int_equal(((char *)v)[len], '\0');
    free(v);
}

static void test_set_then_get_returns_the_value_to_another_client(void **state)
{
    struct fixture *f = *state;
    pgc_store *c = client(f);

    assert_int_equal(pgc_store_set(f->server, "k", "value", 5), PGC_OK);
    assert_value(c, "k", "value");
    assert_int_equal(pgc_store_set(c, "k", "v2", 2), PGC_OK);
    assert_value(f->server, "k", "v2");
    pgc_store_free(c);
}

struct setter {
    int port;
    const char *key;
    double delay;
};

static void *set_later(void *arg)
{
    struct setter *s = arg;
    pgc_store *c = NULL;

    usleep((useconds_t)(s->delay * 1e6));
    if (pgc_store_tcp_create("127.0.0.1", s->port, 0, 5.0, &c) == PGC_OK) {
        pgc_store_set(c, s->key, "late", 4);
        pgc_store_free(c);
    }
    return NULL;
}

static void test_get_blocks_until_another_thread_sets_the_key(void **state)
{
    struct fixture *f = *state;
    struct setter s = {f->port, "later", 0.3};
    pthread_t th;
    double t0 = now();

    assert_int_equal(pthread_create(&th, NULL, set_later, &s), 0);
    assert_value(f->server, "later", "late");
    assert_true(now() - t0 >= 0.25);
    pthread_join(th, NULL);
}

static void test_get_times_out_when_the_key_never_appears(void **state)
{
    struct fixture *f = *state;
    void *v = (void *)1;
    size_t len = 7;
    double t0 = now();

    assert_int_equal(pgc_store_set_timeout(f->server, 0.3), PGC_OK);
    assert_int_equal(pgc_store_get(f->server, "never", &v, &len), PGC_ERR_TIMEOUT);
    assert_true(now() - t0 < 3.0);
    assert_null(v);
    assert_non_null(strstr(pgc_last_error(), "pgc_store_get"));
    assert_non_null(strstr(pgc_last_error(), "never"));
}

static void test_wait_returns_once_every_key_exists(void **state)
{
    struct fixture *f = *state;
    struct setter s = {f->port, "b", 0.2};
    const char *keys[2] = {"a", "b"};
    pthread_t th;

    assert_int_equal(pgc_store_set(f->server, "a", "1", 1), PGC_OK);
    assert_int_equal(pthread_create(&th, NULL, set_later, &s), 0);
    assert_int_equal(pgc_store_wait(f->server, keys, 2, 5.0), PGC_OK);
    pthread_join(th, NULL);
}

static void test_wait_times_out_when_one_key_is_missing(void **state)
{
    struct fixture *f = *state;
    const char *keys[2] = {"present", "missing"};
    double t0 = now();

    assert_int_equal(pgc_store_set(f->server, "present", "", 0), PGC_OK);
    assert_int_equal(pgc_store_wait(f->server, keys, 2, 0.3), PGC_ERR_TIMEOUT);
    assert_true(now() - t0 < 3.0);
    assert_non_null(strstr(pgc_last_error(), "pgc_store_wait"));
}

struct adder {
    int port, n;
    int rc;
};

static void *add_many(void *arg)
{
    struct adder *a = arg;
    pgc_store *c = NULL;

    a->rc = pgc_store_tcp_create("127.0.0.1", a->port, 0, 5.0, &c);
    for (int i = 0; i < a->n && a->rc == PGC_OK; i++) {
        a->rc = pgc_store_add(c, "counter", 1, NULL);
    }
    pgc_store_free(c);
    return NULL;
}

static void test_add_counts_every_increment_of_concurrent_client_threads(void **state)
{
    struct fixture *f = *state;
    struct adder a[8];
    pthread_t th[8];
    int64_t total = -1;

    for (int i = 0; i < 8; i++) {
        a[i] = (struct adder){f->port, 50, -1};
        assert_int_equal(pthread_create(&th[i], NULL, add_many, &a[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].rc, PGC_OK);
    }
    assert_int_equal(pgc_store_add(f->server, "counter", 0, &total), PGC_OK);
    assert_int_equal(total, 400);
    assert_value(f->server, "counter", "400");
}

struct sharer {
    pgc_store *s;
    int rc;
};

static void *add_shared(void *arg)
{
    struct sharer *a = arg;

    a->rc = PGC_OK;
    for (int i = 0; i < 50 && a->rc == PGC_OK; i++) {
        a->rc = pgc_store_add(a->s, "shared", 1, NULL);
    }
    return NULL;
}

static void test_one_handle_may_be_used_by_several_threads(void **state)
{
    struct fixture *f = *state;
    struct sharer a[4];
    pthread_t th[4];
    int64_t total = -1;

    for (int i = 0; i < 4; i++) {
        a[i] = (struct sharer){f->server, -1};
        assert_int_equal(pthread_create(&th[i], NULL, add_shared, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].rc, PGC_OK);
    }
    assert_int_equal(pgc_store_add(f->server, "shared", 0, &total), PGC_OK);
    assert_int_equal(total, 200);
}

static void test_compare_set_swaps_only_when_the_expected_value_matches(void **state)
{
    struct fixture *f = *state;
    void *cur = NULL;
    size_t len = 0;

    assert_int_equal(pgc_store_set(f->server, "cas", "old", 3), PGC_OK);
    assert_int_equal(pgc_store_compare_set(f->server, "cas", "wrong", 5, "new", 3, &cur, &len),
                     PGC_OK);
    assert_int_equal(len, 3);
    assert_memory_equal(cur, "old", 3);
    free(cur);
    assert_int_equal(pgc_store_compare_set(f->server, "cas", "old", 3, "new", 3, &cur, &len),
                     PGC_OK);
    assert_memory_equal(cur, "new", 3);
    free(cur);
    assert_value(f->server, "cas", "new");
}

static void test_compare_set_of_an_absent_key_with_empty_expected_creates_it(void **state)
{
    struct fixture *f = *state;
    void *cur = NULL;
    size_t len = 0;

    assert_int_equal(pgc_store_compare_set(f->server, "fresh", "", 0, "first", 5, &cur, &len),
                     PGC_OK);
    assert_memory_equal(cur, "first", 5);
    free(cur);
    assert_value(f->server, "fresh", "first");
}

static void test_check_reports_existence_without_blocking(void **state)
{
    struct fixture *f = *state;
    const char *one[1] = {"chk"}, *two[2] = {"chk", "nope"};
    int all = -1;
    double t0 = now();

    assert_int_equal(pgc_store_check(f->server, one, 1, &all), PGC_OK);
    assert_int_equal(all, 0);
    assert_int_equal(pgc_store_set(f->server, "chk", "x", 1), PGC_OK);
    assert_int_equal(pgc_store_check(f->server, one, 1, &all), PGC_OK);
    assert_int_equal(all, 1);
    assert_int_equal(pgc_store_check(f->server, two, 2, &all), PGC_OK);
    assert_int_equal(all, 0);
    assert_true(now() - t0 < 1.0);
}

static void test_delete_key_removes_it_and_tells_whether_it_existed(void **state)
{
    struct fixture *f = *state;
    int deleted = -1;
    int64_t n0 = -1, n1 = -1;

    assert_int_equal(pgc_store_set(f->server, "del", "x", 1), PGC_OK);
    assert_int_equal(pgc_store_num_keys(f->server, &n0), PGC_OK);
    assert_int_equal(pgc_store_delete_key(f->server, "del", &deleted), PGC_OK);
    assert_int_equal(deleted, 1);
    assert_int_equal(pgc_store_num_keys(f->server, &n1), PGC_OK);
    assert_int_equal(n1, n0 - 1);
    assert_int_equal(pgc_store_delete_key(f->server, "del", &deleted), PGC_OK);
    assert_int_equal(deleted, 0);
}

static void test_num_keys_counts_the_keys_set(void **state)
{
    struct fixture *f = *state;
    int64_t n = -1;

    assert_int_equal(pgc_store_num_keys(f->server, &n), PGC_OK);
    assert_int_equal(n, 0);
    assert_int_equal(pgc_store_set(f->server, "a", "1", 1), PGC_OK);
    assert_int_equal(pgc_store_set(f->server, "b", "2", 1), PGC_OK);
    assert_int_equal(pgc_store_set(f->server, "a", "3", 1), PGC_OK);
    assert_int_equal(pgc_store_num_keys(f->server, &n), PGC_OK);
    assert_int_equal(n, 2);
}

static void test_prefix_store_prefixes_every_key(void **state)
{
    struct fixture *f = *state;
    pgc_store *p = NULL;
    const char *keys[1] = {"k"};
    int all = 0;
    int64_t v = 0;

    assert_int_equal(pgc_store_prefix_create(f->server, "grp", &p), PGC_OK);
    assert_int_equal(pgc_store_set(p, "k", "in-prefix", 9), PGC_OK);
    assert_value(f->server, "grp/k", "in-prefix");
    assert_int_equal(pgc_store_check(p, keys, 1, &all), PGC_OK);
    assert_int_equal(all, 1);
    assert_int_equal(pgc_store_check(f->server, keys, 1, &all), PGC_OK);
    assert_int_equal(all, 0);
    assert_int_equal(pgc_store_add(p, "n", 5, &v), PGC_OK);
    assert_value(f->server, "grp/n", "5");
    assert_int_equal(pgc_store_wait(p, keys, 1, 1.0), PGC_OK);
    pgc_store_free(p);
}

static void test_nested_prefix_stores_put_the_outer_prefix_first(void **state)
{
    struct fixture *f = *state;
    pgc_store *a = NULL, *b = NULL;

    assert_int_equal(pgc_store_prefix_create(f->server, "a", &a), PGC_OK);
    assert_int_equal(pgc_store_prefix_create(a, "b", &b), PGC_OK);
    assert_int_equal(pgc_store_set(b, "k", "deep", 4), PGC_OK);
    assert_value(f->server, "a/b/k", "deep");
    assert_value(a, "b/k", "deep");
    pgc_store_free(a);
    pgc_store_free(b);
}

static void test_prefix_store_keeps_its_base_alive(void **state)
{
    pgc_store *base = NULL, *p = NULL;

    (void)state;
    assert_int_equal(pgc_store_tcp_create(NULL, 0, 1, 5.0, &base), PGC_OK);
    assert_int_equal(pgc_store_prefix_create(base, "x", &p), PGC_OK);
    pgc_store_free(base);
    assert_int_equal(pgc_store_set(p, "k", "alive", 5), PGC_OK);
    assert_value(p, "k", "alive");
    pgc_store_free(p);
}

static void test_file_store_shares_keys_between_handles(void **state)
{
    char path[] = "/tmp/test_pgc_store_XXXXXX";
    int fd = mkstemp(path);
    pgc_store *a = NULL, *b = NULL;
    int64_t v = 0;

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    assert_int_equal(pgc_store_file_create(path, &a), PGC_OK);
    assert_int_equal(pgc_store_file_create(path, &b), PGC_OK);
    assert_int_equal(pgc_store_set(a, "k", "file", 4), PGC_OK);
    assert_value(b, "k", "file");
    assert_int_equal(pgc_store_add(a, "n", 2, NULL), PGC_OK);
    assert_int_equal(pgc_store_add(b, "n", 3, &v), PGC_OK);
    assert_int_equal(v, 5);
    pgc_store_free(a);
    pgc_store_free(b);
    unlink(path);
}

static void test_file_store_get_times_out_when_the_key_never_appears(void **state)
{
    char path[] = "/tmp/test_pgc_store_XXXXXX";
    int fd = mkstemp(path);
    pgc_store *a = NULL;
    void *v = NULL;
    size_t len = 0;
    double t0 = now();

    (void)state;
    assert_true(fd >= 0);
    close(fd);
    unlink(path);
    assert_int_equal(pgc_store_file_create(path, &a), PGC_OK);
    assert_int_equal(pgc_store_set_timeout(a, 0.3), PGC_OK);
    assert_int_equal(pgc_store_get(a, "never", &v, &len), PGC_ERR_TIMEOUT);
    assert_true(now() - t0 < 3.0);
    pgc_store_free(a);
    unlink(path);
}

static void test_client_of_a_port_nobody_serves_fails_within_its_timeout(void **state)
{
    struct fixture *f = *state;
    pgc_store *dead = NULL, *c = NULL;
    int port;
    double t0;

    /* A port that was free a moment ago: start and stop a server on it. */
    (void)f;
    assert_int_equal(pgc_store_tcp_create(NULL, 0, 1, 1.0, &dead), PGC_OK);
    port = pgc_store_port(dead);
    pgc_store_free(dead);
    t0 = now();
    assert_int_not_equal(pgc_store_tcp_create("127.0.0.1", port, 0, 0.5, &c), PGC_OK);
    assert_null(c);
    assert_true(now() - t0 < 5.0);
    assert_non_null(strstr(pgc_last_error(), "pgc_store_tcp_create"));
}

static void test_bad_arguments_fail_with_a_message_naming_the_call(void **state)
{
    struct fixture *f = *state;
    pgc_store *p = NULL;
    void *v;
    size_t len;

    assert_int_equal(pgc_store_set(f->server, "", "x", 1), PGC_ERR_INVALID_ARG);
    assert_non_null(strstr(pgc_last_error(), "pgc_store_set"));
    assert_int_equal(pgc_store_get(NULL, "k", &v, &len), PGC_ERR_INVALID_ARG);
    assert_int_equal(pgc_store_prefix_create(f->server, "", &p), PGC_ERR_INVALID_ARG);
    assert_null(p);
    assert_int_equal(pgc_store_set_timeout(f->server, 0), PGC_ERR_INVALID_ARG);
    assert_int_equal(pgc_store_tcp_create(NULL, 1, 0, 1.0, &p), PGC_ERR_INVALID_ARG);
}

static void test_default_store_is_null_before_init(void **state)
{
    (void)state;
    assert_null(pgc_default_store());
    assert_non_null(strstr(pgc_last_error(), "not initialized"));
    pgc_store_free(pgc_default_store()); /* ignored */
}

#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_set_then_get_returns_the_value_to_another_client),
        T(test_get_blocks_until_another_thread_sets_the_key),
        T(test_get_times_out_when_the_key_never_appears),
        T(test_wait_returns_once_every_key_exists),
        T(test_wait_times_out_when_one_key_is_missing),
        T(test_add_counts_every_increment_of_concurrent_client_threads),
        T(test_one_handle_may_be_used_by_several_threads),
        T(test_compare_set_swaps_only_when_the_expected_value_matches),
        T(test_compare_set_of_an_absent_key_with_empty_expected_creates_it),
        T(test_check_reports_existence_without_blocking),
        T(test_delete_key_removes_it_and_tells_whether_it_existed),
        T(test_num_keys_counts_the_keys_set),
        T(test_prefix_store_prefixes_every_key),
        T(test_nested_prefix_stores_put_the_outer_prefix_first),
        cmocka_unit_test(test_prefix_store_keeps_its_base_alive),
        cmocka_unit_test(test_file_store_shares_keys_between_handles),
        cmocka_unit_test(test_file_store_get_times_out_when_the_key_never_appears),
        T(test_client_of_a_port_nobody_serves_fails_within_its_timeout),
        T(test_bad_arguments_fail_with_a_message_naming_the_call),
        cmocka_unit_test(test_default_store_is_null_before_init),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
