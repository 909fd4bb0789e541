/*
 * mr_flight - the flight recorder (pg_core/pg_flight.c) read after a hang, as a user would
 * (2 ranks, run with a short MPISHIM_TIMEOUT):
 *   - both ranks run 3 allreduces; rank 0 then enters a barrier that rank 1 does not enter
 *     yet. After the timeout rank 0's dump names the barrier as POSTED with the collective
 *     sequence number that follows its last allreduce's;
 *   - rank 0 then sends SIGUSR1 to rank 1, which is busy polling: rank 1 dumps and runs on,
 *     and its dump shows the same last allreduce and no barrier (the rank that fell behind);
 *   - rank 1 then enters the barrier, which completes with rank 0's message, and both end
 *     normally.
 * Each rank sends its dump to a file of its own: stderr redirected to it (the default
 * output), or with the argument "file", MPISHIM_FLIGHT_RECORDER_FILE naming it.
 */
#include "mrtest.h"

#include <signal.h>
#include <stdbool.h>
#include <unistd.h>

#define TAG_PID 1
#define TAG_GO 2

static char path[64] = "/tmp/mr_flight.XXXXXX";
static char text[1 << 16];
static int err_fd = -1; /* the real stderr, while 2 is the dump file */

static void read_dump(void)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(text, 1, sizeof(text) - 1, f) : 0;

    text[n] = '\0';
    if (f) {
        fclose(f);
    }
}

/* The sequence number on the last line of the dump with kind and state, or -1. */
static long last_seq(const char *kind, const char *state)
{
    char pat[64];
    long seq = -1;

    snprintf(pat, sizeof(pat), ": %s coll seq ", kind);
    for (const char *p = strstr(text, pat); p; p = strstr(p + 1, pat)) {
        const char *eol = strchr(p, '\n');
        const char *st = strstr(p, state);

        if (st && (!eol || st < eol)) {
            seq = atol(p + strlen(pat));
        }
    }
    return seq;
}

/* Waits (at most 20 s: the signal is delivered at once, the bound only ends a broken run)
 * until the dump file holds what. */
static bool wait_for(const char *what)
{
    for (int i = 0; i < 2000; i++) {
        read_dump();
        if (strstr(text, what)) {
            return true;
        }
        usleep(10000);
    }
    return false;
}

static void rank0(pid_t peer)
{
    int rc;
    long barrier, allreduce;

    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rc = MPI_Barrier(MPI_COMM_WORLD);
    read_dump();
    dup2(err_fd, 2);
    CHECK(rc != MPI_SUCCESS, "the barrier rank 1 never entered completed");
    CHECK(strstr(text, "flight recorder dump on a timeout"), "no dump on the timeout:\n%s", text);
    barrier = last_seq("barrier", "POSTED");
    allreduce = last_seq("allreduce", "done");
    CHECK(allreduce >= 2 && barrier == allreduce + 1,
          "pending barrier seq %ld after allreduce seq %ld:\n%s", barrier, allreduce, text);
    CHECK(kill(peer, SIGUSR1) == 0, "kill");
    CHECK_MPI(MPI_Send(&barrier, 1, MPI_LONG, 1, TAG_GO, MPI_COMM_WORLD));
}

static void rank1(void)
{
    int flag = 0;
    long barrier = -1;

    /* Busy outside any collective until rank 0 says go (no wait that could time out). */
    while (!flag) {
        CHECK_MPI(MPI_Iprobe(0, TAG_GO, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        usleep(1000);
    }
    CHECK_MPI(MPI_Recv(&barrier, 1, MPI_LONG, 0, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    flag = wait_for("flight recorder dump on SIGUSR1");
    dup2(err_fd, 2);
    CHECK(flag, "no dump on SIGUSR1:\n%s", text);
    CHECK(last_seq("allreduce", "done") == barrier - 1 && last_seq("barrier", "POSTED") < 0,
          "rank 1's dump (rank 0's barrier has seq %ld):\n%s", barrier, text);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

int main(int argc, char **argv)
{
    int fd = mkstemp(path), rank, size;
    double x = 1, y;
    pid_t pid = getpid(), peer = 0;
    bool file = false;

    err_fd = dup(2);
    CHECK(fd >= 0 && err_fd >= 0, "mkstemp %s", path);
    for (int i = 1; i < argc; i++) {
        file |= strcmp(argv[i], "file") == 0;
    }
    if (file) {
        setenv("MPISHIM_FLIGHT_RECORDER_FILE", path, 1);
    } else {
        dup2(fd, 2);
    }
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 2, "needs 2 ranks, has %d", size);
    for (int i = 0; i < 3; i++) {
        CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    }
    if (rank == 1) {
        CHECK_MPI(MPI_Send(&pid, sizeof(pid), MPI_BYTE, 0, TAG_PID, MPI_COMM_WORLD));
        rank1();
    } else {
        CHECK_MPI(
            MPI_Recv(&peer, sizeof(peer), MPI_BYTE, 1, TAG_PID, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        rank0(peer);
    }
    /* Rank 0 is done long before rank 1 (its dump, its barrier): meet without a timeout
     * before mrt_finish's reduce, which a slow machine could otherwise time out. */
    mrt_polled_barrier();
    dup2(err_fd, 2);
    unlink(path);
    return mrt_finish("mr_flight");
}
