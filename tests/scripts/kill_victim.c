/*
 * kill_victim.c - for test_kill_matrix.sh: rank 1 (the victim) dies in one phase of a
 * program, one way, and rank 0 (the survivor) must end with an error naming it.
 *
 * Usage: kill_victim PHASE WAY
 *   WAY    kill (SIGKILL), term (SIGTERM) or exit (exit(3), no MPI_Finalize)
 *   PHASE  before    the victim dies before MPI_Init; the survivor waits in MPI_Init
 *          init      the victim dies inside MPI_Init, once its shared-memory segment exists
 *          after     the victim dies right after MPI_Init; the survivor is in a barrier
 *          first_recv  the same on 4 ranks, ranks 0 and 2 on one node, 1 and 3 on another:
 *                    rank 2 waits in a receive from the victim, ranks 0 and 3 sleep 15 s
 *                    outside MPI (they would see the death first: rank 0 on its connection
 *                    to the victim, rank 3 beside it). MPI_Init's one allreduce (recursive
 *                    doubling: pairs 0-1, 2-3, 0-2, 1-3) never made rank 2 and the victim
 *                    exchange a message, so rank 2 has no connection to it that could end:
 *                    only its probes of the victim's addresses can tell
 *          loop      nobody dies: allreduces for up to 60 s (a link is cut meanwhile)
 *          recv, rndv, allreduce_small, allreduce_large, barrier, finalize
 *                    the victim dies inside that call (a receive nobody serves, a 2 MiB
 *                    rendezvous send, an 8-byte and a 4 MiB MPI_Allreduce, MPI_Barrier,
 *                    MPI_Finalize): it enters it while the survivor sleeps, a helper
 *                    thread ends it 100 ms later, and the survivor enters the matching call
 *                    (a receive from the victim for recv and rndv) 500 ms after the victim.
 *
 * Every rank prints "pid RANK PID" before MPI_Init (RANK from the environment, which both
 * mpiexec and an env:// start set, or srun's SLURM_PROCID), so the test can check that no process and no
 * /dev/shm/mpishim-PID-* segment is left. The survivor never reaches its last line
 * ("survivor finished") unless the library failed to see the death.
 */
#include "config.h"

#include <dirent.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BIG_BYTES (4 << 20)
#define RNDV_BYTES (2 << 20)

static const char *way;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0) {
    }
}

static void die(void)
{
    struct timespec now;

    /* The wall clock, for the test to measure how long the survivor took after this. */
    clock_gettime(CLOCK_REALTIME, &now);
    fprintf(stderr, "victim: rank 1 dies (%s) at %lld ms\n", way,
            (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
    if (!strcmp(way, "kill")) {
        raise(SIGKILL);
    } else if (!strcmp(way, "term")) {
        raise(SIGTERM);
    }
    exit(3);
}

/* Whether /dev/shm holds a segment this process created (mpishim-PID-...). */
static int have_segment(void)
{
    char prefix[64];
    struct dirent *e;
    DIR *d = opendir("/dev/shm");
    int found = 0;

    if (!d) {
        return 0;
    }
    snprintf(prefix, sizeof(prefix), "mpishim-%d-", (int)getpid());
    while (!found && (e = readdir(d)) != NULL) {
        found = !strncmp(e->d_name, prefix, strlen(prefix));
    }
    closedir(d);
    return found;
}

static void *die_in_init(void *arg)
{
    (void)arg;
    /* A segment appears early in MPI_Init, before the ranks exchange addresses; give up
     * waiting after 5 s and die anyway (the phase is then "after MPI_Init"). */
    for (int i = 0; i < 5000 && !have_segment(); i++) {
        sleep_ms(1);
    }
    die();
    return NULL;
}

static void *die_later(void *arg)
{
    (void)arg;
    sleep_ms(100);
    die();
    return NULL;
}

static void start(void *(*fn)(void *))
{
    pthread_t t;

    if (pthread_create(&t, NULL, fn, NULL) != 0) {
        perror("pthread_create");
        exit(2);
    }
    pthread_detach(t);
}

/* The call of PHASE, on either side; rank 1 enters it first. */
static void in_phase(const char *phase, int rank)
{
    static char big[BIG_BYTES], out[BIG_BYTES];
    double x = 1, y;

    if (!strcmp(phase, "recv")) {
        MPI_Recv(&y, 1, MPI_DOUBLE, 1 - rank, rank, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(phase, "rndv") && rank == 1) {
        MPI_Send(big, RNDV_BYTES, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
    } else if (!strcmp(phase, "rndv")) {
        MPI_Recv(big, RNDV_BYTES, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (!strcmp(phase, "allreduce_small")) {
        MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else if (!strcmp(phase, "allreduce_large")) {
        MPI_Allreduce(big, out, BIG_BYTES / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    } else if (!strcmp(phase, "barrier")) {
        MPI_Barrier(MPI_COMM_WORLD);
    } else if (!strcmp(phase, "finalize")) {
        MPI_Finalize();
    }
}

/* Phase "loop" (nobody dies; test_cluster_faults.sh cuts a node's link meanwhile):
 * allreduces of 8 B and 4 MiB for up to 60 s, "looping" printed once they run. */
static void loop(int rank)
{
    static double big[BIG_BYTES / 8], out[BIG_BYTES / 8];
    time_t end = time(NULL) + 60;

    for (int i = 0; time(NULL) < end; i++) {
        MPI_Allreduce(big, out, i % 2 ? BIG_BYTES / 8 : 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (i == 10 && rank == 0) {
            printf("looping\n");
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    const char *phase = argc > 2 ? argv[1] : "";
    /* env:// and mpiexec set RANK; srun sets SLURM_PROCID (and PMIx's PMIX_RANK); MPICH's
     * hydra PMI_RANK. */
    const char *env = getenv("RANK")           ? getenv("RANK")
                      : getenv("SLURM_PROCID") ? getenv("SLURM_PROCID")
                                               : getenv("PMI_RANK");
    int rank = env ? atoi(env) : -1;
    int victim = rank == 1;

    if (argc != 3) {
        fprintf(stderr, "usage: kill_victim PHASE kill|term|exit\n");
        return 2;
    }
    way = argv[2];
    printf("pid %d %d\n", rank, (int)getpid());
    fflush(stdout);
    if (victim && !strcmp(phase, "before")) {
        die();
    }
    if (victim && !strcmp(phase, "init")) {
        start(die_in_init);
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (victim && (!strcmp(phase, "init") || !strcmp(phase, "after") ||
                   !strcmp(phase, "first_recv"))) {
        die();
    }
    if (!strcmp(phase, "loop")) {
        loop(rank);
    } else if (!strcmp(phase, "first_recv")) {
        double y;
        if (rank == 2) {
            MPI_Recv(&y, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            sleep_ms(15000);
        }
    } else if (strcmp(phase, "before") && strcmp(phase, "init") && strcmp(phase, "after")) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (victim) {
            start(die_later);
        } else {
            sleep_ms(600);
        }
        in_phase(phase, rank);
        if (victim) {
            for (;;) {
                pause(); /* the helper thread ends this process */
            }
        }
    }
    if (strcmp(phase, "finalize")) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
    }
    printf("survivor finished\n");
    return 0;
}
