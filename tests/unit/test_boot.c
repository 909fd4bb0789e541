/* Unit tests of the bootstrap (pmix_boot/boot.h): the singleton in this process, and the
 * store methods with forked ranks that check their own results and exit non-zero (with a
 * line on stderr) on any mismatch. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "boot.h"
#include "boot_store.h"
#include "mps_config.h"
#include "mps_log.h"
#include "mps_util.h"
#include "pgc_status.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NRANKS 3

static void clear_env(void)
{
    static const char *vars[] = {
        "PMIX_RANK",           "PMIX_NAMESPACE",    "PMIX_SERVER_URI41",
        "PMIX_SERVER_URI4",    "PMIX_SERVER_URI3",  "PMIX_SERVER_URI21",
        "PMIX_SERVER_URI2",    "PMIX_SERVER_URI",   "RANK",
        "WORLD_SIZE",          "MASTER_ADDR",       "MASTER_PORT",
        "MPISHIM_BOOT_METHOD", "MPISHIM_NODE_NAME", "MPISHIM_BOOT_STORE_EXTERNAL",
        "MPISHIM_TIMEOUT"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        unsetenv(vars[i]);
    }
    mps_config_reset();
}

static int setup(void **state)
{
    clear_env();
    return 0;
}

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

static void setenv_int(const char *var, int v)
{
    char s[16];
    snprintf(s, sizeof(s), "%d", v);
    setenv(var, s, 1);
}

/* In-process tests. */

static void test_singleton_is_rank_0_of_1_on_this_node(void **state)
{
    struct boot_opts o = {.init_method = "singleton", .rank = -1, .size = -1};
    struct boot *b = NULL;
    int in = 42, out = 0;

    setenv("MPISHIM_NODE_NAME", "alpha", 1);
    assert_int_equal(boot_init(&o, &b), PGC_OK);
    const struct boot_info *i = boot_get_info(b);
    assert_int_equal(i->rank, 0);
    assert_int_equal(i->size, 1);
    assert_int_equal(i->local_rank, 0);
    assert_int_equal(i->local_size, 1);
    assert_string_equal(i->node, "alpha");
    assert_string_equal(i->method, "singleton");
    assert_string_equal(boot_nodes(b), "alpha");
    assert_null(boot_get_store(b));
    assert_int_equal(boot_allgather(b, &in, sizeof(in), &out), PGC_OK);
    assert_int_equal(out, 42);
    assert_int_equal(boot_fini(b), PGC_OK);
}

static void test_auto_without_any_variable_is_the_singleton(void **state)
{
    struct boot *b = NULL;

    assert_int_equal(boot_init(NULL, &b), PGC_OK);
    assert_string_equal(boot_get_info(b)->method, "singleton");
    assert_int_equal(boot_get_info(b)->size, 1);
    assert_int_equal(boot_fini(b), PGC_OK);
}

static void test_env_without_master_addr_names_the_variable(void **state)
{
    struct boot_opts o = {.init_method = "env://", .rank = -1, .size = -1};
    struct boot *b = (void *)1;

    setenv("RANK", "0", 1);
    setenv("WORLD_SIZE", "2", 1);
    assert_int_equal(boot_init(&o, &b), PGC_ERR_INVALID_ARG);
    assert_null(b);
    assert_non_null(strstr(mps_last_error(), "MASTER_ADDR"));
    setenv("WORLD_SIZE", "two", 1);
    assert_int_equal(boot_init(&o, &b), PGC_ERR_INVALID_ARG);
    assert_non_null(strstr(mps_last_error(), "WORLD_SIZE"));
}

static void test_tcp_without_rank_names_the_variable(void **state)
{
    struct boot_opts o = {.init_method = "tcp://127.0.0.1:1", .rank = -1, .size = 2};
    struct boot *b = (void *)1;

    assert_int_equal(boot_init(&o, &b), PGC_ERR_INVALID_ARG);
    assert_null(b);
    assert_non_null(strstr(mps_last_error(), "RANK"));
    o.init_method = "tcp://nocolon";
    o.rank = 1;
    assert_int_equal(boot_init(&o, &b), PGC_ERR_INVALID_ARG);
    o.init_method = "bogus://x";
    assert_int_equal(boot_init(&o, &b), PGC_ERR_INVALID_ARG);
}

static void test_rank_whose_master_port_has_no_server_fails_after_the_timeout(void **state)
{
    struct boot *b = (void *)1;
    double t0 = mps_now(), dt;

    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv_int("MASTER_PORT", free_port());
    setenv("MPISHIM_TIMEOUT", "1", 1);
    mps_config_reset();
    assert_int_equal(boot_init(NULL, &b), PGC_ERR_UNREACHABLE);
    dt = mps_now() - t0;
    assert_null(b);
    assert_true(dt >= 0.99 && dt < 4.0);
}

/* Forked ranks. */

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "rank check failed at line %d: %s (%s)\n", __LINE__, #cond,            \
                    mps_last_error());                                                             \
            _exit(1);                                                                              \
        }                                                                                          \
    } while (0)

/* What each rank expects: ranks 0 and 1 on node "nodeA", rank 2 on "nodeB". */
static const char *node_of(int r)
{
    return r < 2 ? "nodeA" : "nodeB";
}

/* The body of every forked rank: init, two allgathers, a barrier, the node table, fini. */
static void rank_main(const struct boot_opts *o, int rank, const char *method)
{
    struct boot *b = NULL;
    int in[2] = {rank * 7 + 1, -rank}, out[2 * NRANKS];

    setenv("MPISHIM_NODE_NAME", node_of(rank), 1);
    mps_config_reset();
    CHECK(boot_init(o, &b) == PGC_OK);
    const struct boot_info *i = boot_get_info(b);
    CHECK(i->rank == rank && i->size == NRANKS && strcmp(i->method, method) == 0);
    CHECK(strcmp(i->node, node_of(rank)) == 0);
    CHECK(i->local_rank == (rank == 1 ? 1 : 0) && i->local_size == (rank < 2 ? 2 : 1));
    for (int r = 0; r < NRANKS; r++) {
        CHECK(strcmp(boot_nodes(b) + r * BOOT_NODE_MAX, node_of(r)) == 0);
    }
    for (int round = 0; round < 3; round++) {
        in[1] = -rank - 100 * round;
        memset(out, 0, sizeof(out));
        CHECK(boot_allgather(b, in, sizeof(in), out) == PGC_OK);
        for (int r = 0; r < NRANKS; r++) {
            CHECK(out[2 * r] == r * 7 + 1 && out[2 * r + 1] == -r - 100 * round);
        }
        CHECK(boot_barrier(b) == PGC_OK);
    }
    CHECK(boot_fini(b) == PGC_OK);
    _exit(0);
}

/* Waits for every child until the deadline, killing the rest after it; returns how many
 * exited with status 0. */
static int wait_ranks(pid_t *pids, int n, double timeout)
{
    double deadline = mps_now() + timeout;
    int ok = 0, left = n, status;

    while (left > 0 && mps_now() < deadline) {
        for (int i = 0; i < n; i++) {
            if (pids[i] > 0 && waitpid(pids[i], &status, WNOHANG) == pids[i]) {
                ok += WIFEXITED(status) && WEXITSTATUS(status) == 0;
                pids[i] = 0;
                left--;
            }
        }
        usleep(10 * 1000);
    }
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0) {
            kill(pids[i], SIGKILL);
            waitpid(pids[i], &status, 0);
        }
    }
    return ok;
}

/* Forks n ranks; each sets RANK (or opts.rank) and runs rank_main. */
static int run_ranks(int n, const char *init_method, bool rank_in_opts, const char *method)
{
    pid_t pids[NRANKS];

    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        assert_true(pids[r] >= 0);
        if (pids[r] == 0) {
            struct boot_opts o = {
                .init_method = init_method, .rank = -1, .size = -1, .timeout = 10};
            if (rank_in_opts) {
                o.rank = r;
                o.size = NRANKS;
            } else {
                setenv_int("RANK", r);
                setenv_int("WORLD_SIZE", NRANKS);
            }
            rank_main(&o, r, method);
        }
    }
    return wait_ranks(pids, n, 20);
}

static void test_env_ranks_allgather_their_ranks_and_nodes(void **state)
{
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv_int("MASTER_PORT", free_port());
    assert_int_equal(run_ranks(NRANKS, NULL, false, "env"), NRANKS);
}

/* The launcher's store server, in a process of its own: the ranks are forked from this
 * one, which must not hold a server thread then (a fork copies one thread only, and
 * ThreadSanitizer's child can deadlock on a lock that the other thread held). Returns its
 * pid and the port, or -1. It serves until killed. */
static pid_t start_server_process(int *port)
{
    int fds[2];
    pid_t pid;

    if (pipe(fds) != 0 || (pid = fork()) < 0) {
        return -1;
    }
    if (pid == 0) {
        struct boot_store_server *srv = NULL;
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* no server left behind if the test dies */
        int p = boot_store_server_start(NULL, 0, &srv) == PGC_OK ? boot_store_server_port(srv)
                                                                  : -1;
        if (write(fds[1], &p, sizeof(p)) != (ssize_t)sizeof(p) || p < 0) {
            _exit(1);
        }
        for (;;) {
            pause();
        }
    }
    close(fds[1]);
    if (read(fds[0], port, sizeof(*port)) != (ssize_t)sizeof(*port) || *port < 0) {
        kill(pid, SIGKILL);
        pid = -1;
    }
    close(fds[0]);
    return pid;
}

static void test_env_ranks_use_an_external_store(void **state)
{
    struct boot_store *s = NULL;
    int64_t n = -1;
    int port = -1, ranks_ok;
    pid_t srv = start_server_process(&port);

    assert_true(srv > 0);
    setenv("MASTER_ADDR", "localhost", 1);
    setenv_int("MASTER_PORT", port);
    setenv("MPISHIM_BOOT_STORE_EXTERNAL", "1", 1);
    ranks_ok = run_ranks(NRANKS, "env://", false, "env");
    /* The ranks used the launcher's server. Each rank deleted its key of every round but
     * the last (the barrier of boot_fini) and set one "done" key, and its registration
     * (boot/reg/<rank>) stays, with the round's count and its end: 3 keys per rank + 2. */
    if (boot_store_tcp_connect("127.0.0.1", port, 2, &s) == PGC_OK) {
        boot_store_num_keys(s, &n);
        boot_store_close(s);
    }
    kill(srv, SIGKILL);
    waitpid(srv, NULL, 0);
    assert_int_equal(ranks_ok, NRANKS);
    assert_int_equal(n, 3 * NRANKS + 2);
}

static void test_tcp_ranks_allgather_their_ranks_and_nodes(void **state)
{
    char m[64];

    snprintf(m, sizeof(m), "tcp://127.0.0.1:%d", free_port());
    assert_int_equal(run_ranks(NRANKS, m, true, "tcp"), NRANKS);
}

static void test_file_ranks_allgather_and_leave_no_file_behind(void **state)
{
    char dir[] = "/tmp/test_boot.XXXXXX", m[128];
    struct stat st;

    assert_non_null(mkdtemp(dir));
    snprintf(m, sizeof(m), "file://%s/store", dir);
    assert_int_equal(run_ranks(NRANKS, m, true, "file"), NRANKS);
    assert_int_equal(stat(m + 7, &st), -1);
    assert_int_equal(rmdir(dir), 0);
}

/* Ranks 0 and 1 of 3 start; rank 0 (the store's server) must give up naming rank 2. Rank 1
 * waits longer: had it given up first, its exit would close its connection, and rank 0
 * would rightly name rank 1's death instead (a race CI's no-CUDA pass lost once). */
static void absent_rank_main(int rank)
{
    struct boot_opts o = {
        .init_method = "env://", .rank = rank, .size = NRANKS, .timeout = rank == 0 ? 1 : 4};
    struct boot *b = (void *)1;

    CHECK(boot_init(&o, &b) != PGC_OK && b == NULL);
    CHECK(strstr(mps_last_error(), "rank 2") != NULL || rank != 0);
    _exit(0);
}

static void test_allgather_names_the_rank_that_never_arrived(void **state)
{
    pid_t pids[2];

    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv_int("MASTER_PORT", free_port());
    for (int r = 0; r < 2; r++) {
        if ((pids[r] = fork()) == 0) {
            absent_rank_main(r);
        }
    }
    assert_int_equal(wait_ranks(pids, 2, 10), 2);
}

/* PMIx variables that point at no server, or at one that never answers. */
static void pmix_fault_main(int port)
{
    char uri[64];
    struct boot *b = (void *)1;
    double t0 = mps_now();

    snprintf(uri, sizeof(uri), "test.0;tcp4://127.0.0.1:%d", port);
    setenv("PMIX_NAMESPACE", "test", 1);
    setenv("PMIX_RANK", "0", 1);
    setenv("PMIX_SERVER_URI41", uri, 1);
    setenv("PMIX_SERVER_URI4", uri, 1);
    setenv("MPISHIM_TIMEOUT", "1", 1);
    mps_config_reset();
    CHECK(boot_init(NULL, &b) == PGC_ERR_UNREACHABLE && b == NULL);
    CHECK(mps_now() - t0 < 5.0);
    CHECK(strstr(mps_last_error(), "PMIx server unreachable") != NULL);
    CHECK(strstr(mps_last_error(), "PMIX_NAMESPACE=test") != NULL);
    _exit(0);
}

static void run_pmix_fault(int port)
{
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    if ((pid = fork()) == 0) {
        pmix_fault_main(port);
    }
    assert_int_equal(wait_ranks(&pid, 1, 15), 1);
}

static void test_pmix_variables_without_a_server_fail_instead_of_singleton(void **state)
{
    run_pmix_fault(free_port());
}

static void test_pmix_server_that_never_answers_fails_after_the_timeout(void **state)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    /* The kernel completes connections in the backlog; nobody ever answers them. */
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(listen(fd, 16), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &l), 0);
    run_pmix_fault(ntohs(a.sin_port));
    close(fd);
}

#define T(t) cmocka_unit_test_setup(t, setup)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_singleton_is_rank_0_of_1_on_this_node),
        T(test_auto_without_any_variable_is_the_singleton),
        T(test_env_without_master_addr_names_the_variable),
        T(test_tcp_without_rank_names_the_variable),
        T(test_rank_whose_master_port_has_no_server_fails_after_the_timeout),
        T(test_env_ranks_allgather_their_ranks_and_nodes),
        T(test_env_ranks_use_an_external_store),
        T(test_tcp_ranks_allgather_their_ranks_and_nodes),
        T(test_file_ranks_allgather_and_leave_no_file_behind),
        T(test_allgather_names_the_rank_that_never_arrived),
        T(test_pmix_variables_without_a_server_fail_instead_of_singleton),
        T(test_pmix_server_that_never_answers_fails_after_the_timeout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
