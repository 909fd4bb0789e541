/*
 * test_device.c - the device backend on a machine without a GPU (and in a build without
 * CUDA, where pg_device.c is stubs): classification says host, without error and without
 * touching CUDA's error state; routing chooses the host path; MPIX_Query_cuda_support says
 * 0; a device collective called anyway fails with an error instead of crashing.
 * Where a GPU is present the no-GPU cases skip (tests/gpu covers that machine).
 *
 * The CUDA runtime and NCCL are opened at run time: one case runs this program again with
 * MPISHIM_CUDA_LIB and MPISHIM_NCCL_LIB naming files that do not exist (--libraries-absent),
 * where the same answers must hold on any machine, a GPU's too, and the reports say why.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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
    /* Without CUDA: unsupported; with CUDA but no device: a device error naming the cause. */
    assert_int_equal(rc, HAVE_CUDA ? PGC_ERR_DEVICE : PGC_ERR_UNSUPPORTED);
    assert_false(req.done);
    assert_non_null(strstr(mps_last_error(), HAVE_CUDA ? "no usable CUDA device" : "without CUDA"));
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

/* ---- Run with the CUDA libraries absent (the child of the case below). */

#define ABSENT_CUDART "/nonexistent/libcudart.so"
#define ABSENT_NCCL "/nonexistent/libnccl.so"

static void test_absent_runtime_means_no_device_even_with_a_gpu(void **state)
{
    (void)state;
    assert_int_equal(pg_dev_count(), 0);
    assert_false(pg_dev_present());
    assert_int_equal(pg_dev_state, 0);
    assert_int_equal(MPIX_Query_cuda_support(), 0);
    assert_int_equal(pg_dev_cuda_version(), 0);
    assert_int_equal(pg_dev_nccl_version(), 0);
}

static void test_absent_libraries_are_reported_with_the_cause(void **state)
{
    const char *why = NULL;

    (void)state;
    assert_null(pg_dev_cuda_lib(&why));
    assert_non_null(why);
    /* The variable, the file and the loader's reason. */
    if (HAVE_CUDA) {
        assert_non_null(strstr(why, "MPISHIM_CUDA_LIB=" ABSENT_CUDART));
        assert_non_null(strstr(why, "No such file"));
    } else {
        assert_string_equal(why, "built without CUDA");
    }
    why = NULL;
    assert_null(pg_dev_nccl_lib(&why));
    assert_non_null(why);
    if (HAVE_NCCL) {
        assert_non_null(strstr(why, "MPISHIM_NCCL_LIB=" ABSENT_NCCL));
    } else {
        assert_non_null(strstr(why, "built without"));
    }
}

static void test_absent_runtime_classifies_every_pointer_as_host(void **state)
{
    int on_stack[2] = {1, 2};
    char *heap = malloc(100);

    (void)state;
    assert_non_null(heap);
    mps_clear_error();
    assert_int_equal(pg_dev_classify(on_stack), PG_MEM_HOST);
    assert_int_equal(pg_dev_classify(heap), PG_MEM_HOST);
    assert_int_equal(pg_dev_route(on_stack, sizeof(on_stack), heap, 100), 0);
    assert_string_equal(mps_last_error(), "");
    free(heap);
}

static void test_absent_runtime_fails_device_calls_with_the_cause(void **state)
{
    int world = 0;
    struct pg_group g = {.ctx = 2, .rank = 0, .size = 1, .ranks = &world, .refs = 1};
    struct pg_op_spec sum = {.dt = PG_FLOAT, .op = PG_OP_SUM, .elem_size = 4, .commutative = true};
    struct pg_req req = {0};
    float x[4] = {1, 2, 3, 4};

    (void)state;
    assert_int_equal(pg_dev_iallreduce(&g, x, x, 4, &sum, &req),
                     HAVE_CUDA ? PGC_ERR_DEVICE : PGC_ERR_UNSUPPORTED);
    assert_false(req.done);
    if (HAVE_CUDA) {
        assert_non_null(strstr(mps_last_error(), "rank 0"));
        assert_non_null(strstr(mps_last_error(), ABSENT_CUDART));
    }
    assert_int_equal(pg_dev_isend(&g, x, sizeof(x), 0, 1, false, &req),
                     HAVE_CUDA ? PGC_ERR_DEVICE : PGC_ERR_UNSUPPORTED);
    assert_false(req.done);
    assert_true(x[0] == 1 && x[3] == 4);
    assert_null(g.dev);
    pg_dev_finalize();
}

static int run_with_libraries_absent(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_absent_runtime_means_no_device_even_with_a_gpu),
        cmocka_unit_test(test_absent_libraries_are_reported_with_the_cause),
        cmocka_unit_test(test_absent_runtime_classifies_every_pointer_as_host),
        cmocka_unit_test(test_absent_runtime_fails_device_calls_with_the_cause),
    };

    return cmocka_run_group_tests_name("libraries absent", tests, NULL, NULL);
}

/* The probe runs once per process, so the absent case is a fresh process: this program,
 * run again with the variables set. */
static void test_cuda_libraries_absent_at_run_time_mean_no_device(void **state)
{
    int status = -1;
    pid_t pid;

    (void)state;
    fflush(stdout);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        setenv("MPISHIM_CUDA_LIB", ABSENT_CUDART, 1);
        setenv("MPISHIM_NCCL_LIB", ABSENT_NCCL, 1);
        execl("/proc/self/exe", "test_device", "--libraries-absent", (char *)NULL);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

int main(int argc, char **argv)
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
        cmocka_unit_test(test_cuda_libraries_absent_at_run_time_mean_no_device),
    };

    if (argc > 1 && !strcmp(argv[1], "--libraries-absent")) {
        return run_with_libraries_absent();
    }
    return cmocka_run_group_tests(tests, NULL, NULL);
}
