/*
 * test_await.c - how a timed-out collective's message lists the ranks it waited for
 * (pg_core/pg_await.c's pg_ranks_str): one rank, a few, and many (the first four and a
 * count), and a buffer too small for the list (cut, never overrun); the ranks an account
 * keeps as numbers, and the account a timed-out wait keeps for a node-aware collective
 * (pg_awaited_keep). The messages as a user sees them are checked by
 * tests/mr/mr_coll_timeout.c and tests/mr/mr_hier_timeout.c.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "pg_internal.h"

static void ranks_are(const int *ranks, int n, const char *want)
{
    char buf[128];

    pg_ranks_str(ranks, n, buf, sizeof(buf));
    assert_string_equal(buf, want);
}

static void test_one_rank_is_named_alone(void **state)
{
    (void)state;
    ranks_are((const int[]){5}, 1, "rank 5");
}

static void test_up_to_five_ranks_are_all_listed(void **state)
{
    (void)state;
    ranks_are((const int[]){1, 2}, 2, "ranks 1 and 2");
    ranks_are((const int[]){0, 3, 7}, 3, "ranks 0, 3 and 7");
    ranks_are((const int[]){1, 2, 3, 4, 9}, 5, "ranks 1, 2, 3, 4 and 9");
}

static void test_more_than_five_show_the_first_four_and_a_count(void **state)
{
    int many[1000];

    (void)state;
    for (int i = 0; i < 1000; i++) {
        many[i] = 2 * i + 1;
    }
    ranks_are(many, 6, "ranks 1, 3, 5, 7 and 2 more");
    ranks_are(many, 1000, "ranks 1, 3, 5, 7 and 996 more");
}

static void test_no_rank_says_so(void **state)
{
    (void)state;
    ranks_are(NULL, 0, "no rank");
}

static void test_a_short_buffer_is_cut_not_overrun(void **state)
{
    char buf[16];
    const int ranks[] = {100000, 200000, 300000, 400000, 500000, 600000};

    (void)state;
    memset(buf, 'x', sizeof(buf));
    pg_ranks_str(ranks, 6, buf, 12);
    assert_int_equal(strlen(buf), 11);
    assert_memory_equal(buf, "ranks 10000", 11);
    assert_int_equal(buf[12], 'x');
}

/* The ranks an account names are also kept as numbers, the ones shown (a node-aware
 * collective maps them to its own group's), with their count and their group's id. */
static void test_an_account_keeps_the_ranks_it_shows_as_numbers(void **state)
{
    struct pg_awaited a;
    const int ranks[] = {1, 3, 5, 7, 9, 11, 13};

    (void)state;
    pg_awaited_ranks(&a, 42, ranks, 7);
    assert_string_equal(a.who, "ranks 1, 3, 5, 7 and 3 more");
    assert_int_equal(a.nranks, 7);
    assert_int_equal(a.ctx, 42);
    assert_memory_equal(a.ranks, ranks, sizeof(int) * (PG_AWAITED_SHOWN + 1));
    pg_awaited_ranks(&a, 43, ranks + 2, 1);
    assert_string_equal(a.who, "rank 5");
    assert_int_equal(a.nranks, 1);
    assert_int_equal(a.ranks[0], 5);
}

/* A timed-out wait's account is given to the next question about the same group once, and
 * never for another group: a later timeout elsewhere cannot borrow it. */
static void test_a_kept_account_is_given_once_and_only_for_its_group(void **state)
{
    struct pg_group mine = {0}, other = {0};
    struct pg_awaited a, got;
    const int r = 2;

    (void)state;
    mine.ctx = 12;
    other.ctx = 13;
    pg_awaited_ranks(&a, 12, &r, 1);
    snprintf(a.what, sizeof(a.what), "reduce");
    snprintf(a.how, sizeof(a.how), "a receive");
    pg_awaited_keep(&a);
    assert_false(pg_awaited_kept(&other, &got));
    pg_awaited_keep(&a);
    assert_true(pg_awaited_kept(&mine, &got));
    assert_string_equal(got.who, "rank 2");
    assert_string_equal(got.what, "reduce");
    assert_int_equal(got.ranks[0], 2);
    assert_false(pg_awaited_kept(&mine, &got));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_rank_is_named_alone),
        cmocka_unit_test(test_up_to_five_ranks_are_all_listed),
        cmocka_unit_test(test_more_than_five_show_the_first_four_and_a_count),
        cmocka_unit_test(test_no_rank_says_so),
        cmocka_unit_test(test_a_short_buffer_is_cut_not_overrun),
        cmocka_unit_test(test_an_account_keeps_the_ranks_it_shows_as_numbers),
        cmocka_unit_test(test_a_kept_account_is_given_once_and_only_for_its_group),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
