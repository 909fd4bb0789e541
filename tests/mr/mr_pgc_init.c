/*
 * mr_pgc_init.c - one pgc rank for the launch tests: initializes the process group with
 * the init method of the command line, checks an all_reduce and the default store, and
 * tears down. Used by tests/scripts/test_env_launch.sh (env://, tcp://, file://, a
 * rendezvous that never completes) and by tests/mr.list (under every launcher, and with
 * --mpi: MPI_Init first, then the pgc world reuses MPI's and the groups convert both ways).
 *
 *   mr_pgc_init [--init-method M] [--rank R] [--world-size N] [--timeout S]
 *               [--expect-fail] [--peer-dies] [--mpi]
 * --expect-fail: the initialization must fail (exit 0 if it did, within the timeout).
 * --peer-dies: the last rank exits right after the initialization; the others' all_reduce
 *              and pgc_destroy_process_group must then fail with an error (not hang), and
 *              they exit 0 if both did.
 * --retry-port P: env:// only. The first initialization must fail halfway (a fabric
 *              provider that does not exist, after the rendezvous); rank 0's store must
 *              have given MASTER_PORT back; the second, with the provider unset and
 *              MASTER_PORT=P, must work (and the usual checks follow).
 */
#include <mpi.h>
#include <pgc.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "mr_pgc_init: FAIL: " __VA_ARGS__);                                        \
        fprintf(stderr, " (last error: %s)\n", pgc_last_error());                                  \
        exit(1);                                                                                   \
    } while (0)

struct args {
    pgc_init_opts o;
    int expect_fail, peer_dies, mpi, mpi_after;
    const char *retry_port;
};

static void parse(int argc, char **argv, struct args *a)
{
    pgc_init_opts d = PGC_INIT_OPTS_DEFAULT;

    a->o = d;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : "";
        if (!strcmp(argv[i], "--init-method")) {
            a->o.init_method = v, i++;
        } else if (!strcmp(argv[i], "--rank")) {
            a->o.rank = atoi(v), i++;
        } else if (!strcmp(argv[i], "--world-size")) {
            a->o.world_size = atoi(v), i++;
        } else if (!strcmp(argv[i], "--timeout")) {
            a->o.timeout = atof(v), i++;
        } else if (!strcmp(argv[i], "--expect-fail")) {
            a->expect_fail = 1;
        } else if (!strcmp(argv[i], "--retry-port")) {
            a->retry_port = v, i++;
        } else if (!strcmp(argv[i], "--peer-dies")) {
            a->peer_dies = 1;
        } else if (!strcmp(argv[i], "--mpi-after")) {
            a->mpi_after = 1;
        } else if (!strcmp(argv[i], "--mpi")) {
            a->mpi = 1;
        } else {
            FAIL("unknown argument %s", argv[i]);
        }
    }
}

/* Every rank adds 1 to a counter in the default store; after a barrier all see n. */
static void check_store(int n)
{
    pgc_store *s = pgc_default_store();
    int64_t v = 0;

    if (!s) {
        FAIL("no default store");
    }
    if (pgc_store_add(s, "mr_pgc_init/count", 1, NULL) != PGC_OK ||
        pgc_barrier(NULL, 0, NULL) != PGC_OK || pgc_store_add(s, "mr_pgc_init/count", 0, &v)) {
        FAIL("store add");
    }
    if (v != n) {
        FAIL("store counter %lld, expected %d", (long long)v, n);
    }
}

/* MPI first: the pgc world is MPI's, and groups and communicators convert both ways. */
static void check_mpi_interop(int me, int n)
{
    int ranks[1] = {0}, size = -1;
    pgc_group *g = NULL, *back;
    int comm;

    if (pgc_group_to_mpi_comm(NULL) != MPI_COMM_WORLD) {
        FAIL("world group is not MPI_COMM_WORLD");
    }
    back = pgc_group_from_mpi_comm(MPI_COMM_WORLD);
    if (back != pgc_group_world()) {
        FAIL("MPI_COMM_WORLD's group is not the world group");
    }
    pgc_destroy_group(back);
    if (pgc_new_group(ranks, 1, &g) != PGC_OK || (me == 0) != (g != NULL)) {
        FAIL("new_group([0])");
    }
    if (g) {
        comm = pgc_group_to_mpi_comm(g);
        if (!comm || MPI_Comm_size(comm, &size) != MPI_SUCCESS || size != 1) {
            FAIL("the communicator of group [0] has size %d", size);
        }
        if (pgc_group_to_mpi_comm(g) != comm || pgc_group_from_mpi_comm(comm) != g) {
            FAIL("the group <-> communicator link is not stable");
        }
        pgc_destroy_group(g); /* the reference from_mpi_comm gave */
        pgc_destroy_group(g);
    }
    int64_t v = me + 1, sum = 0;
    MPI_Allreduce(&v, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    if (sum != (int64_t)n * (n + 1) / 2) {
        FAIL("MPI_Allreduce gave %lld", (long long)sum);
    }
}

/* The last rank leaves without a word; the others' collective on the world must end in an
 * error, and a group of the survivors (made before) must still work afterwards. */
static int peer_dies(int me, int n)
{
    int64_t v = 1, h = me + 1;
    pgc_tensor t = pgc_host_tensor(&v, 1, PGC_INT64), ht = pgc_host_tensor(&h, 1, PGC_INT64);
    int ranks[64], rc;
    pgc_group *healthy = NULL;

    for (int i = 0; i < n - 1 && i < 64; i++) {
        ranks[i] = i;
    }
    if (pgc_new_group(ranks, n - 1, &healthy) != PGC_OK) {
        FAIL("pgc_new_group of the survivors: %s", pgc_last_error());
    }
    if (me == n - 1) {
        printf("mr_pgc_init: rank %d leaves without a word\n", me);
        fflush(stdout);
        _exit(0);
    }
    rc = pgc_all_reduce(&t, PGC_SUM, NULL, 0, NULL);
    if (rc == PGC_OK) {
        FAIL("all_reduce succeeded although rank %d is gone", n - 1);
    }
    printf("mr_pgc_init: rank %d: all_reduce failed as expected with %s: %s\n", me,
           pgc_status_name(rc), pgc_last_error());
    rc = pgc_all_reduce(&ht, PGC_SUM, healthy, 0, NULL);
    if (rc != PGC_OK || h != (int64_t)(n - 1) * n / 2) {
        FAIL("all_reduce on the survivors' group gave %s, %lld", pgc_status_name(rc),
             (long long)h);
    }
    printf("mr_pgc_init: rank %d: the survivors' group still works\n", me);
    pgc_destroy_group(healthy);
    rc = pgc_destroy_process_group();
    if (rc == PGC_OK) {
        FAIL("pgc_destroy_process_group succeeded although rank %d is gone", n - 1);
    }
    printf("mr_pgc_init: rank %d: destroy_process_group failed as expected with %s\n", me,
           pgc_status_name(rc));
    fflush(stdout);
    _exit(0);
}

/* Whether a listening socket could take MASTER_ADDR:MASTER_PORT (SO_REUSEADDR: connections
 * of the closed server lingering in TIME_WAIT do not count, a listener still does). */
static int master_port_free(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0), ok;

    sa.sin_port = htons((unsigned short)atoi(getenv("MASTER_PORT")));
    inet_pton(AF_INET, getenv("MASTER_ADDR"), &sa.sin_addr);
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    ok = fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, 1) == 0;
    close(fd);
    return ok;
}

/* A first initialization that fails after the rendezvous (the fabric cannot open), then a
 * second one on a fresh port that must work: nothing of the first may be left behind. */
static void init_fails_then_retry(struct args *a)
{
    const char *bad = "mpishim-test-no-such-provider";
    int rank0 = atoi(getenv("RANK")) == 0, rc;

    setenv("MPISHIM_FABRIC_PROVIDER", bad, 1);
    rc = pgc_init_process_group(&a->o);
    /* Rank 1 may instead lose the store that rank 0 already closed: any error will do. */
    if (rc == PGC_OK || (rank0 && !strstr(pgc_last_error(), bad))) {
        FAIL("an initialization with provider %s gave %s, not an error naming it", bad,
             pgc_status_name(rc));
    }
    printf("mr_pgc_init: the first initialization failed as expected with %s: %s\n",
           pgc_status_name(rc), pgc_last_error());
    if (rank0 && !master_port_free()) {
        FAIL("rank 0 still holds MASTER_PORT %s after the failed initialization",
             getenv("MASTER_PORT"));
    }
    unsetenv("MPISHIM_FABRIC_PROVIDER");
    setenv("MASTER_PORT", a->retry_port, 1);
}

int main(int argc, char **argv)
{
    struct args a = {0};
    int rc, me, n, local;
    int64_t v;
    pgc_tensor t = pgc_host_tensor(&v, 1, PGC_INT64);

    parse(argc, argv, &a);
    /* Before any world: a collective fails at once, saying so. */
    rc = pgc_all_reduce(&t, PGC_SUM, NULL, 0, NULL);
    if (rc != PGC_ERR_NOT_INITIALIZED || !strstr(pgc_last_error(), "not initialized")) {
        FAIL("pgc_all_reduce before init returned %s (%s)", pgc_status_name(rc),
             pgc_last_error());
    }
    if (a.mpi && MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        FAIL("MPI_Init");
    }
    if (a.retry_port) {
        init_fails_then_retry(&a);
    }
    rc = pgc_init_process_group(&a.o);
    if (a.expect_fail) {
        if (rc == PGC_OK) {
            FAIL("pgc_init_process_group succeeded but was expected to fail");
        }
        printf("mr_pgc_init: failed as expected with %s: %s\n", pgc_status_name(rc),
               pgc_last_error());
        return 0;
    }
    if (rc != PGC_OK) {
        FAIL("pgc_init_process_group returned %s", pgc_status_name(rc));
    }
    me = pgc_get_rank();
    n = pgc_get_world_size();
    local = pgc_get_local_rank();
    if (a.peer_dies) {
        return peer_dies(me, n);
    }
    v = me + 1;
    if (pgc_all_reduce(&t, PGC_SUM, NULL, 0, NULL) != PGC_OK || v != (int64_t)n * (n + 1) / 2) {
        FAIL("all_reduce gave %lld", (long long)v);
    }
    check_store(n);
    if (a.mpi) {
        check_mpi_interop(me, n);
    }
    /* The other order: MPI_Init after pgc_init reuses the pgc world. */
    if (a.mpi_after && MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        FAIL("MPI_Init after pgc_init_process_group");
    }
    if (a.mpi_after) {
        check_mpi_interop(me, n);
        if (MPI_Finalize() != MPI_SUCCESS) {
            FAIL("MPI_Finalize before pgc_destroy_process_group");
        }
    }
    if (pgc_destroy_process_group() != PGC_OK) {
        FAIL("pgc_destroy_process_group");
    }
    if (a.mpi && MPI_Finalize() != MPI_SUCCESS) {
        FAIL("MPI_Finalize");
    }
    printf("mr_pgc_init: rank %d of %d (local rank %d) ok\n", me, n, local);
    return 0;
}
