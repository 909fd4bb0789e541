/*
 * mr_coll_timeout.c - a collective that times out names the ranks it was waiting for.
 * Run with a short MPISHIM_TIMEOUT (2 s) on 2, 4 or 8 ranks: rank 1 never calls the
 * collectives below; every other rank's call fails after the timeout, and its message
 * must name the call, this rank, the timeout, and the one rank it was waiting for:
 *   - MPI_Allreduce of 8 B (one round in shared memory; with MPISHIM_COLL_SHM=0, the
 *     direct recursive doubling);
 *   - MPI_Iallreduce of 8 B waited with MPI_Wait (a schedule: its shared-memory poll
 *     step, or the recursive doubling's steps);
 *   - MPI_Iallreduce of 8 B waited with MPI_Waitany beside a null request: the error
 *     reaches the handler of the request's communicator (it went to MPI_COMM_WORLD's,
 *     fatal by default) and names the request and the rank it waits for;
 *   - MPI_Bcast of 8 B from rank 1 (shared memory, or the binomial tree where ranks
 *     outnumber cores or with MPISHIM_COLL_SHM=0);
 *   - pgc_all_reduce of a float with PGC_AVG (the blocking form that runs a pgc work),
 *     and the async form whose pgc_work_wait gives up (the work stays pending).
 * The awaited rank is computed here from the algorithm the message names: in shared
 * memory rank 1, whose slot is missing; in recursive doubling the partner of the first
 * round whose message never comes (a rank whose partner waits for rank 1 waits for that
 * partner); in the binomial tree the parent. MPI errors reach a handler made with
 * MPI_Comm_create_errhandler, which mpishim passes the message after the code.
 * Each collective runs on a communicator or group of its own, made before any rank
 * falls behind, so that the world stays in step; rank 1 then waits in MPI_Ibarrier,
 * polled with MPI_Test (no wait that could time out), for the others to finish. The
 * others meet in such a polled barrier of their own before each case: each rank's timeout
 * runs from its own start, and on a loaded machine (a sanitizer's build beside another
 * test) one rank could otherwise fall a whole timeout behind the others, which would then
 * rightly name it too, or time out in the closing barrier.
 */
#include "mrtest.h"

#include <pgc.h>

#include <stdarg.h>
#include <stdbool.h>

#define LATE 1
#define NCOMMS 4

static int rank, nranks;
static bool shm_on;
static char msg[MPI_MAX_ERROR_STRING + 64];
/* pgc_cases' work, still pending at the end, and the groups that given-up collectives still
 * use: kept reachable to the end (they are not leaks). */
static pgc_work *work;
static pgc_group *groups[2];
/* The ranks other than LATE (MPI_COMM_NULL on LATE). */
static MPI_Comm others;

/* mpishim hands a communicator's error handler the message after the error code. */
static void keep_message(MPI_Comm *comm, int *code, ...)
{
    va_list ap;
    const char *m;

    (void)comm;
    (void)code;
    va_start(ap, code);
    m = va_arg(ap, const char *);
    va_end(ap);
    snprintf(msg, sizeof(msg), "%s", m ? m : "(no message)");
}

static int log2i(int n)
{
    int k = 0;

    while ((1 << k) < n) {
        k++;
    }
    return k;
}

/* Recursive doubling on n = 2^k ranks when LATE sends nothing: in round j rank q needs its
 * partner q ^ 2^j's message of round j, which the partner sent if it reached round j.
 * reach[q] is the round q waits in (log2 n: done); from "everyone done" the rounds only go
 * down until they hold. */
static int rd_awaited(int me)
{
    int k = log2i(nranks), reach[64];
    bool changed = true;

    for (int q = 0; q < nranks; q++) {
        reach[q] = q == LATE ? -1 : k;
    }
    while (changed) {
        changed = false;
        for (int q = 0; q < nranks; q++) {
            int j = 0;
            while (q != LATE && j < k && reach[q ^ (1 << j)] >= j) {
                j++;
            }
            if (q != LATE && j != reach[q]) {
                reach[q] = j;
                changed = true;
            }
        }
    }
    return me ^ (1 << reach[me]);
}

/* The binomial tree from root: my parent is my relative rank without its lowest bit. */
static int binomial_parent(int me, int root)
{
    int vr = (me - root + nranks) % nranks;

    return ((vr & (vr - 1)) + root) % nranks;
}

/* The message m of call on this rank: names the call and this rank, says what (coll:
 * "timed out after 2 s waiting for", or what pgc_work_wait says), names exactly the
 * awaited rank and the path. */
static void check_said(const char *m, const char *call, const char *what, int awaited,
                       const char *path)
{
    char want[160];

    printf("rank %d: %s\n", rank, m); /* what a user would read */
    fflush(stdout);
    snprintf(want, sizeof(want), "%s (rank %d)", call, rank);
    CHECK(strstr(m, want), "\"%s\" does not name the call and this rank (%s)", m, want);
    snprintf(want, sizeof(want), "%s rank %d (", what, awaited);
    CHECK(strstr(m, want), "\"%s\" does not say \"%s\"", m, want);
    CHECK(strstr(m, path), "\"%s\" does not name the path \"%s\"", m, path);
}

static void check_message(const char *m, const char *call, const char *coll, int awaited,
                          const char *path)
{
    char what[64];

    snprintf(what, sizeof(what), "%s: timed out after 2 s waiting for", coll);
    check_said(m, call, what, awaited, path);
}

/* The awaited rank in the message's allreduce: shared memory or recursive doubling. */
static void check_allreduce(const char *call, const char *direct_path)
{
    if (shm_on) {
        check_message(msg, call, "allreduce", LATE, "shared memory: its slot is not written");
    } else {
        check_message(msg, call, "allreduce", rd_awaited(rank), direct_path);
    }
}

static void mpi_cases(MPI_Comm *comms)
{
    double x = rank, y = 0;
    MPI_Request req;
    int rc;

    mrt_polled_barrier_on(others);
    msg[0] = '\0';
    rc = MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comms[0]);
    CHECK(rc != MPI_SUCCESS, "MPI_Allreduce without rank %d succeeded", LATE);
    check_allreduce("MPI_Allreduce", "direct recursive doubling: a receive of up to 8 B");

    mrt_polled_barrier_on(others);
    msg[0] = '\0';
    CHECK_MPI(MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comms[1], &req));
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS, "MPI_Wait on an MPI_Iallreduce without rank %d succeeded", LATE);
    check_allreduce("MPI_Wait", "of recursive doubling: a receive of 8 B");

    mrt_polled_barrier_on(others);
    msg[0] = '\0';
    {
        MPI_Request two[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        int index = 0;
        CHECK_MPI(MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, comms[3], &two[1]));
        rc = MPI_Waitany(2, two, &index, MPI_STATUS_IGNORE);
        CHECK(rc != MPI_SUCCESS, "MPI_Waitany on an MPI_Iallreduce without rank %d succeeded",
              LATE);
        CHECK(index == MPI_UNDEFINED, "MPI_Waitany failed with index %d", index);
        check_said(msg, "MPI_Waitany",
                   "none of 2 requests completed within 2 s; request 1, allreduce, is waiting for",
                   shm_on ? LATE : rd_awaited(rank),
                   shm_on ? "shared memory: its slot is not written"
                          : "of recursive doubling: a receive of 8 B");
    }

    /* Where ranks outnumber cores a broadcast stays a message (pg_shm_usable): the
     * message says which path ran, and the awaited rank follows from it. */
    mrt_polled_barrier_on(others);
    msg[0] = '\0';
    rc = MPI_Bcast(&x, 1, MPI_DOUBLE, LATE, comms[2]);
    CHECK(rc != MPI_SUCCESS, "MPI_Bcast from the absent rank %d succeeded", LATE);
    if (strstr(msg, "shared memory")) {
        CHECK(shm_on, "a broadcast in shared memory with MPISHIM_COLL_SHM=0: %s", msg);
        check_message(msg, "MPI_Bcast", "bcast", LATE, "its slot is not written");
    } else {
        check_message(msg, "MPI_Bcast", "bcast", binomial_parent(rank, LATE),
                      "direct binomial tree: a receive of up to 8 B");
    }
}

static void pgc_cases(void)
{
    float v = (float)rank;
    pgc_tensor t = pgc_host_tensor(&v, 1, PGC_FLOAT32);
    const char *rd = "of recursive doubling: a receive of 4 B";
    int rc;

    mrt_polled_barrier_on(others);
    rc = pgc_all_reduce(&t, PGC_AVG, groups[0], 0, NULL);
    CHECK(rc == PGC_ERR_TIMEOUT, "pgc_all_reduce without rank %d: %s", LATE, pgc_status_name(rc));
    check_message(pgc_last_error(), "pgc_all_reduce", "allreduce", shm_on ? LATE : rd_awaited(rank),
                  shm_on ? "shared memory: its slot is not written" : rd);

    mrt_polled_barrier_on(others);
    CHECK(pgc_all_reduce(&t, PGC_SUM, groups[1], 1, &work) == PGC_OK, "async pgc_all_reduce");
    rc = pgc_work_wait(work, 0);
    CHECK(rc == PGC_ERR_TIMEOUT, "pgc_work_wait without rank %d: %s", LATE, pgc_status_name(rc));
    check_said(pgc_last_error(), "pgc_work_wait: pgc_all_reduce",
               "still running after 2 s (the work stays pending): allreduce: waiting for",
               shm_on ? LATE : rd_awaited(rank),
               shm_on ? "shared memory: its slot is not written" : rd);
    /* The work stays pending (and keeps the group): rank 1 never comes. */
}

int main(int argc, char **argv)
{
    MPI_Comm comms[NCOMMS];
    MPI_Errhandler keep;
    const char *shm;

    mrt_init(&argc, &argv);
    rank = mrt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    CHECK(nranks >= 2 && nranks <= 64 && (nranks & (nranks - 1)) == 0,
          "needs 2, 4, 8 ... ranks, has %d", nranks);
    shm = getenv("MPISHIM_COLL_SHM");
    shm_on = !shm || strcmp(shm, "0") != 0;
    CHECK(pgc_init_process_group(NULL) == PGC_OK, "pgc_init_process_group: %s", pgc_last_error());
    CHECK_MPI(MPI_Comm_create_errhandler(keep_message, &keep));
    for (int i = 0; i < NCOMMS; i++) {
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]));
        CHECK_MPI(MPI_Comm_set_errhandler(comms[i], keep));
    }
    for (int i = 0; i < 2; i++) {
        CHECK(pgc_new_group(NULL, 0, &groups[i]) == PGC_OK, "pgc_new_group: %s", pgc_last_error());
    }
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank == LATE ? MPI_UNDEFINED : 0, rank, &others));
    if (rank == LATE) {
        mrt_polled_barrier();
        for (int i = 0; i < 2; i++) {
            CHECK(pgc_destroy_group(groups[i]) == PGC_OK, "pgc_destroy_group");
        }
    } else {
        mpi_cases(comms);
        pgc_cases();
        mrt_polled_barrier();
        CHECK_MPI(MPI_Comm_free(&others));
    }
    /* The communicators and groups whose collectives were given up stay: a given-up
     * collective still holds them (pg_sched_detach). */
    MPI_Errhandler_free(&keep);
    CHECK(pgc_destroy_process_group() == PGC_OK, "pgc_destroy_process_group: %s", pgc_last_error());
    return mrt_finish("mr_coll_timeout");
}
