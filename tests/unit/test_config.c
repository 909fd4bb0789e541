/* Unit tests of the MPISHIM_* table: the syntax of each type, the check at init
 * (mps_config_validate) and the values read after it. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

/* Every case starts from an environment without the table's variables. */
static int clean_env(void **state)
{
    (void)state;
    for (int i = 0; i < MPS_CFG_COUNT; i++) {
        unsetenv(mps_config_desc((enum mps_config_id)i)->name);
    }
    unsetenv("MPISHIM_EAGERMAX");
    unsetenv("MPISHIM_NO_SUCH_SETTING_AT_ALL");
    unsetenv("MPISHIM_CC");
    mps_config_reset();
    mps_clear_error();
    return 0;
}

/* Sets one variable and runs the check from scratch. */
static int validate_with(const char *name, const char *value)
{
    setenv(name, value, 1);
    mps_config_reset();
    mps_clear_error();
    return mps_config_validate();
}

/* With only this variable set, the check refuses the value, names variable and value, and
 * the value reads as the default. */
static void assert_refused(enum mps_config_id id, const char *value)
{
    const struct mps_config_desc *d = mps_config_desc(id);
    char named[128];

    snprintf(named, sizeof(named), "%s=\"%s\"", d->name, value);
    clean_env(NULL);
    assert_int_equal(validate_with(d->name, value), PGC_ERR_INVALID_ARG);
    if (!strstr(mps_last_error(), named)) {
        fail_msg("the error \"%s\" does not name %s", mps_last_error(), named);
    }
    assert_string_equal(mps_config_str(id), d->def);
}

static void test_a_size_takes_a_k_m_or_g_suffix_in_either_case(void **state)
{
    (void)state;
    assert_int_equal(validate_with("MPISHIM_EAGER_MAX", "32k"), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_EAGER_MAX), 32 * 1024);
    assert_int_equal(validate_with("MPISHIM_EAGER_MAX", "3M"), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_EAGER_MAX), 3 * 1024 * 1024);
    assert_int_equal(validate_with("MPISHIM_HEAP_SIZE", "2g"), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_HEAP_SIZE), 2L * 1024 * 1024 * 1024);
    assert_int_equal(validate_with("MPISHIM_EAGER_MAX", "65536"), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_EAGER_MAX), 65536);
}

static void test_a_leading_zero_is_decimal_never_octal(void **state)
{
    (void)state;
    assert_int_equal(validate_with("MPISHIM_EAGER_MAX", "010"), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_EAGER_MAX), 10);
    assert_int_equal(validate_with("MPISHIM_SPIN_COUNT", "0100"), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_SPIN_COUNT), 100);
}

static void test_a_size_with_a_sign_hex_or_other_text_is_refused(void **state)
{
    static const char *const bad[] = {"32x",           "-1", "+5",  "0x100", "32 k",
                                      "32kb",          "k",  " 32", "1.5k",  "99999999999999999999",
                                      "9999999999999g"};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_refused(MPS_CFG_EAGER_MAX, bad[i]);
        assert_int_equal(mps_config_int(MPS_CFG_EAGER_MAX), 32768);
    }
}

static void test_a_count_takes_no_suffix(void **state)
{
    (void)state;
    assert_refused(MPS_CFG_SPIN_COUNT, "2k");
    assert_refused(MPS_CFG_SPIN_COUNT, "-3");
    clean_env(NULL);
    assert_int_equal(validate_with("MPISHIM_SPIN_COUNT", "0"), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_SPIN_COUNT), 0);
}

static void test_a_switch_is_0_or_1(void **state)
{
    (void)state;
    assert_refused(MPS_CFG_HEAP, "2");
    assert_refused(MPS_CFG_HEAP, "yes");
    assert_refused(MPS_CFG_COLL_SHM, "01");
    clean_env(NULL);
    assert_int_equal(validate_with("MPISHIM_HEAP", "0"), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_HEAP), 0);
}

static void test_a_timeout_is_a_number_of_seconds_above_zero(void **state)
{
    static const char *const bad[] = {"-1", "0", "0.0", "abc", "inf", "nan", "0x10", "5s", "1e999"};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_refused(MPS_CFG_TIMEOUT, bad[i]);
        assert_true(mps_config_double(MPS_CFG_TIMEOUT) == 300.0);
    }
    clean_env(NULL);
    assert_int_equal(validate_with("MPISHIM_TIMEOUT", "0.5"), PGC_OK);
    assert_true(mps_config_double(MPS_CFG_TIMEOUT) == 0.5);
    assert_int_equal(validate_with("MPISHIM_TIMEOUT", "1e3"), PGC_OK);
    assert_true(mps_config_double(MPS_CFG_TIMEOUT) == 1000.0);
}

static void test_an_unknown_algorithm_is_refused_with_the_list_of_names(void **state)
{
    (void)state;
    assert_refused(MPS_CFG_COLL_ALLREDUCE, "rign");
    assert_non_null(strstr(mps_last_error(), "auto, recursive_doubling, rabenseifner, ring"));
    assert_refused(MPS_CFG_DEVICE_COLL, "cuda");
    assert_refused(MPS_CFG_LOG_LEVEL, "verbose");
    assert_refused(MPS_CFG_PGC_DEBUG, "on");
}

static void test_a_name_reads_as_the_table_spells_it_in_any_case(void **state)
{
    (void)state;
    assert_int_equal(validate_with("MPISHIM_COLL_ALLREDUCE", "RING"), PGC_OK);
    assert_string_equal(mps_config_str(MPS_CFG_COLL_ALLREDUCE), "ring");
    assert_int_equal(validate_with("MPISHIM_PGC_DEBUG", "DETAIL"), PGC_OK);
    assert_string_equal(mps_config_str(MPS_CFG_PGC_DEBUG), "detail");
}

static void test_a_boot_method_url_is_kept_whole(void **state)
{
    (void)state;
    assert_int_equal(validate_with("MPISHIM_BOOT_METHOD", "tcp://127.0.0.1:29500"), PGC_OK);
    assert_string_equal(mps_config_str(MPS_CFG_BOOT_METHOD), "tcp://127.0.0.1:29500");
    assert_int_equal(validate_with("MPISHIM_BOOT_METHOD", "file:///tmp/rdv"), PGC_OK);
    assert_string_equal(mps_config_str(MPS_CFG_BOOT_METHOD), "file:///tmp/rdv");
    assert_refused(MPS_CFG_BOOT_METHOD, "slurm");
}

static void test_several_bad_values_are_named_in_one_error(void **state)
{
    (void)state;
    setenv("MPISHIM_TIMEOUT", "-1", 1);
    setenv("MPISHIM_COLL_BCAST", "tree", 1);
    assert_int_equal(validate_with("MPISHIM_EAGER_MAX", "32x"), PGC_ERR_INVALID_ARG);
    /* The first in table order is described, the others named. */
    assert_non_null(strstr(mps_last_error(), "MPISHIM_TIMEOUT=\"-1\""));
    assert_non_null(strstr(mps_last_error(), "MPISHIM_EAGER_MAX"));
    assert_non_null(strstr(mps_last_error(), "MPISHIM_COLL_BCAST"));
}

static void test_an_empty_value_is_the_default(void **state)
{
    (void)state;
    assert_int_equal(validate_with("MPISHIM_EAGER_MAX", ""), PGC_OK);
    assert_int_equal(mps_config_int(MPS_CFG_EAGER_MAX), 32768);
}

static void test_every_default_is_valid_for_its_type(void **state)
{
    (void)state;
    for (int i = 0; i < MPS_CFG_COUNT; i++) {
        const struct mps_config_desc *d = mps_config_desc((enum mps_config_id)i);

        if (*d->def && validate_with(d->name, d->def) != PGC_OK) {
            fail_msg("the default of %s is refused: %s", d->name, mps_last_error());
        }
        assert_int_equal((d->type == MPS_CFG_ENUM), (d->choices != NULL));
    }
}

/* The test knob of "No silent drops": each named site sets its bit, an unknown name is an
 * error that names it, and unset means no allocation fails on purpose. */
static void test_the_fail_alloc_knob_sets_the_named_sites_only(void **state)
{
    (void)state;
    assert_int_equal(validate_with("MPISHIM_TEST_FAIL_ALLOC", "ack,ctl"), PGC_OK);
    assert_int_equal(mps_test_fail_init(), PGC_OK);
    assert_int_equal(mps_test_fail_mask, MPS_FAIL_ACK | MPS_FAIL_CTL);
    assert_true(mps_test_fails(MPS_FAIL_CTL));
    assert_false(mps_test_fails(MPS_FAIL_UNEXPECTED));
    assert_int_equal(validate_with("MPISHIM_TEST_FAIL_ALLOC", "unexpected,acks"), PGC_OK);
    assert_int_equal(mps_test_fail_init(), PGC_ERR_INVALID_ARG);
    assert_non_null(strstr(mps_last_error(), "'acks' is not one of ack, unexpected, ctl"));
    unsetenv("MPISHIM_TEST_FAIL_ALLOC");
    mps_config_reset();
    assert_int_equal(mps_test_fail_init(), PGC_OK);
    assert_int_equal(mps_test_fail_mask, 0);
}

/* The doc line the info tool prints must not drift from the names the check accepts. */
static void test_every_enum_doc_names_its_choices(void **state)
{
    (void)state;
    for (int i = 0; i < MPS_CFG_COUNT; i++) {
        const struct mps_config_desc *d = mps_config_desc((enum mps_config_id)i);

        for (const char *const *c = d->choices; c && *c; c++) {
            if (!strstr(*c, "://") && !strstr(d->doc, *c)) {
                fail_msg("the doc of %s does not name \"%s\"", d->name, *c);
            }
        }
    }
}

/* Runs mps_config_validate with stderr in a file, and returns what it printed. */
static int validate_capturing(char *out, size_t n)
{
    FILE *f = tmpfile();
    int saved = dup(2), rc;
    size_t got;

    assert_non_null(f);
    fflush(stderr);
    dup2(fileno(f), 2);
    mps_config_reset();
    rc = mps_config_validate();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    got = fread(out, 1, n - 1, f);
    out[got] = '\0';
    fclose(f);
    return rc;
}

static void test_an_unknown_name_is_a_warning_with_the_nearest_name(void **state)
{
    char err[1024];

    (void)state;
    setenv("MPISHIM_EAGERMAX", "65536", 1);
    setenv("MPISHIM_NO_SUCH_SETTING_AT_ALL", "1", 1);
    assert_int_equal(validate_capturing(err, sizeof(err)), PGC_OK);
    assert_non_null(strstr(err, "MPISHIM_EAGERMAX is not a variable of this library"));
    assert_non_null(strstr(err, "did you mean MPISHIM_EAGER_MAX?"));
    assert_non_null(strstr(err, "MPISHIM_NO_SUCH_SETTING_AT_ALL is not a variable"));
    /* A tool's variable (the compiler wrappers read it) is no typo. */
    unsetenv("MPISHIM_EAGERMAX");
    unsetenv("MPISHIM_NO_SUCH_SETTING_AT_ALL");
    setenv("MPISHIM_CC", "gcc", 1);
    assert_int_equal(validate_capturing(err, sizeof(err)), PGC_OK);
    assert_null(strstr(err, "MPISHIM_CC"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_a_size_takes_a_k_m_or_g_suffix_in_either_case, clean_env),
        cmocka_unit_test_setup(test_a_leading_zero_is_decimal_never_octal, clean_env),
        cmocka_unit_test_setup(test_a_size_with_a_sign_hex_or_other_text_is_refused, clean_env),
        cmocka_unit_test_setup(test_a_count_takes_no_suffix, clean_env),
        cmocka_unit_test_setup(test_a_switch_is_0_or_1, clean_env),
        cmocka_unit_test_setup(test_a_timeout_is_a_number_of_seconds_above_zero, clean_env),
        cmocka_unit_test_setup(test_an_unknown_algorithm_is_refused_with_the_list_of_names,
                               clean_env),
        cmocka_unit_test_setup(test_a_name_reads_as_the_table_spells_it_in_any_case, clean_env),
        cmocka_unit_test_setup(test_a_boot_method_url_is_kept_whole, clean_env),
        cmocka_unit_test_setup(test_several_bad_values_are_named_in_one_error, clean_env),
        cmocka_unit_test_setup(test_an_empty_value_is_the_default, clean_env),
        cmocka_unit_test_setup(test_every_default_is_valid_for_its_type, clean_env),
        cmocka_unit_test_setup(test_every_enum_doc_names_its_choices, clean_env),
        cmocka_unit_test_setup(test_the_fail_alloc_knob_sets_the_named_sites_only, clean_env),
        cmocka_unit_test_setup(test_an_unknown_name_is_a_warning_with_the_nearest_name, clean_env),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
