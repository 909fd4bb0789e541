/*
 * test_device.c - the device backend on a machine without a GPU (and in a build without
 * CUDA, where pg_device.c is stubs): classification says host, without error and without
 * touching CUDA's error state; routing chooses the host path; MPIX_Query_cuda_support says
 * 0; a device collective called anyway fails with an error instead of crashing.
 * Where a GPU is present the no-GPU cases skip (tests/gpu covers that machine).
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "mpi.h"
#include "mps_log.h"
#include "pg_device.h"
#include "pgc_status.h"

/* Independent of the code under test: a GPU shows up as an NVIDIA device node. */
static bool gpu_node_present(void)
{
    return access("/dev/nvidia0", F_OK) == 0 || access("/dev/nvidiactl", F_OK) == 0;
}

static void skip_if_gpu(void)
{
    if (gpu_node_present()) {
        print_message("a GPU is present: this no-GPU case is covered by tests/gpu instead\n");
        skip();
    }
}

static void test_null_pointer_is_host_memory(void **state)
{
    (void)state;
    assert_int_equal(pg_dev_classify(NULL), PG_MEM_HOST);
}

static void test_stack_pointer_is_host_memory_without_error(void **state)
{
    int on_stack[4] = {1, 2, 3, 4};

    (void)state;
    skip_if_gpu();
    mps_clear_error();
    assert_int_equal(pg_dev_classify(on_stack), PG_MEM_HOST);
    assert_string_equal(mps_last_error(), "");
}

static void test_heap_pointer_is_host_memory_without_error(void **state)
{
    double *heap = malloc(64 * sizeof(double));

    (void)state;
    skip_if_gpu();
    assert_non_null(heap);
    mps_clear_error();
    assert_int_equal(pg_dev_classify(heap), PG_MEM_HOST);
    assert_int_equal(pg_dev_classify(heap + 63), PG_MEM_HOST);
    assert_string_equal(mps_last_error(), "");
    free(heap);
}

static void test_no_device_is_found_without_a_gpu(void **state)
{
    (void)state;
    skip_if_gpu();
    assert_int_equal(pg_dev_count(), 0);
    assert_false(pg_dev_present());
    assert_int_equal(pg_dev_state, 0);
}

static void test_host_buffers_route_to_the_host_path(void **state)
{
    char a[32], b[32];

    (void)state;
    skip_if_gpu();
    assert_int_equal(pg_dev_route(a, sizeof(a), b, sizeof(b)), 0);
    assert_int_equal(pg_dev_route(a, sizeof(a), NULL, 0), 0);
    /* A garbage pointer with zero bytes is never looked at. */
    assert_int_equal(pg_dev_route((void *)-1, 0, b, sizeof(b)), 0);
}

static void test_query_cuda_support_is_zero_without_a_gpu(void **state)
{
    (void)state;
    skip_if_gpu();
    assert_int_equal(MPIX_Query_cuda_support(), 0);
    assert_int_equal(PMPIX_Query_cuda_support(), 0);
}

static void test_query_cuda_support_is_zero_without_cuda_compiled_in(void **state)
{
    (void)state;
    if (HAVE_CUDA) {
        print_message("built with CUDA: covered by the no-GPU case\n");
        skip();
    }
    assert_int_equal(MPIX_Query_cuda_support(), 0);
}

static void test_versions_are_reported_only_when_compiled_in(void **state)
{
    (void)state;
    if (HAVE_CUDA) {
        assert_true(pg_dev_cuda_version() >= 11000); /* the runtime needs no driver */
    } else {
        assert_int_equal(pg_dev_cuda_version(), 0);
    }
    if (HAVE_NCCL) {
        assert_true(pg_dev_nccl_version() >= 20000);
    } else {
        assert_int_equal(pg_dev_nccl_version(), 0);
    }
}

static void test_mem_names_read_as_words(void **state)
{
    (void)state;
    assert_string_equal(pg_mem_name(PG_MEM_HOST), "host");
    assert_string_equal(pg_mem_name(PG_MEM_HOST_PINNED), "host-pinned");
    assert_string_equal(pg_mem_name(PG_MEM_DEVICE), "device");
    assert_string_equal(pg_mem_name(PG_MEM_MANAGED), "managed");
    assert_string_equal(pg_mem_name((enum pg_mem)99), "invalid");
}

static void test_device_collective_without_a_device_fails_cleanly(void **state)
{
    int world = 0;
    struct pg_group g = {.ctx = 2, .rank = 0, .size = 1, .ranks = &world, .refs = 1};
    struct pg_op_spec sum = {.dt = PG_FLOAT, .op = PG_OP_SUM, .elem_size = 4, .commutative = true};
    struct pg_req req = {0};
    float x[4] = {1, 2, 3, 4};
    int rc;

    (void)state;
    skip_if_gpu();
    rc = pg_dev_iallreduce(&g, x, x, 4, &sum, &req);
    /* Without CUDA: unsupported; with CUDA but no device: a device error (no stream). */
    assert_int_equal(rc, HAVE_CUDA ? PGC_ERR_DEVICE : PGC_ERR_UNSUPPORTED);
    assert_false(req.done);
    assert_true(strlen(mps_last_error()) > 0);
    assert_true(x[0] == 1 && x[3] == 4);
    pg_dev_group_free(&g);
    assert_null(g.dev);
}

static void test_progress_and_finalize_are_harmless_when_idle(void **state)
{
    (void)state;
    assert_int_equal(pg_dev_progress(), PGC_OK);
    pg_dev_detach(NULL);
    pg_dev_finalize();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_null_pointer_is_host_memory),
        cmocka_unit_test(test_stack_pointer_is_host_memory_without_error),
        cmocka_unit_test(test_heap_pointer_is_host_memory_without_error),
        cmocka_unit_test(test_no_device_is_found_without_a_gpu),
        cmocka_unit_test(test_host_buffers_route_to_the_host_path),
        cmocka_unit_test(test_query_cuda_support_is_zero_without_a_gpu),
        cmocka_unit_test(test_query_cuda_support_is_zero_without_cuda_compiled_in),
        cmocka_unit_test(test_versions_are_reported_only_when_compiled_in),
        cmocka_unit_test(test_mem_names_read_as_words),
        cmocka_unit_test(test_device_collective_without_a_device_fails_cleanly),
        cmocka_unit_test(test_progress_and_finalize_are_harmless_when_idle),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
