/*
 * mr_signals.c - MPI_Init and the traffic after it leave the process's signal handlers as
 * the program set them. Debian's libfabric loads libinfinipath, whose constructor took
 * SIGINT, SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM with a handler that calls exit():
 * mpiexec's SIGTERM then ran the exit handlers inside a signal handler (ThreadSanitizer
 * failed the job on it), a crash exited 1 instead of dying of its signal, and a program's
 * own SIGINT handler was gone after MPI_Init.
 *
 * Every rank installs a handler of its own for SIGINT, records every signal's disposition,
 * initializes (--libfabric: and checks that libfabric is loaded, so that the check below
 * covers its load), exchanges messages with every other rank, and compares each signal's
 * handler and flags with the recorded ones.
 */
#include "mrtest.h"

#include <signal.h>

static struct sigaction before[NSIG];
static int known[NSIG]; /* glibc keeps two real-time signals to itself: no disposition */
static volatile sig_atomic_t own_calls;

static void own_handler(int sig)
{
    (void)sig;
    own_calls++;
}

static void install_own(void)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = own_handler;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGINT, &sa, NULL) != 0) {
        fprintf(stderr, "mr_signals: sigaction(SIGINT) failed\n");
        exit(1);
    }
    for (int s = 1; s < NSIG; s++) {
        known[s] = sigaction(s, NULL, &before[s]) == 0;
    }
}

static int libfabric_loaded(void)
{
    char line[512];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");

    CHECK(f != NULL, "cannot read /proc/self/maps");
    while (!found && fgets(line, sizeof(line), f)) {
        found = strstr(line, "/libfabric.so") != NULL;
    }
    fclose(f);
    return found;
}

static void exchange(int size)
{
    for (int peer = 0; peer < size; peer++) {
        int out = mrt_rank * 1000 + peer, in = -1;

        CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, peer, 5, &in, 1, MPI_INT, peer, 5, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        CHECK(in == peer * 1000 + mrt_rank, "from rank %d: %d", peer, in);
    }
}

int main(int argc, char **argv)
{
    int size, want_libfabric = 0;

    install_own();
    for (int i = 1; i < argc; i++) {
        want_libfabric |= strcmp(argv[i], "--libfabric") == 0;
    }
    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(!want_libfabric || libfabric_loaded(), "libfabric is not loaded: the run checks "
                                                 "nothing about its load");
    exchange(size);
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    for (int s = 1; s < NSIG; s++) {
        struct sigaction now;

        if (!known[s]) {
            continue;
        }
        CHECK(sigaction(s, NULL, &now) == 0, "signal %d: unreadable after MPI_Init", s);
        /* The flags of a default disposition mean nothing (glibc adds its SA_RESTORER). */
        CHECK(now.sa_handler == before[s].sa_handler &&
                  (now.sa_handler == SIG_DFL || now.sa_flags == before[s].sa_flags),
              "signal %d (%s): handler %p flags %#x after MPI_Init, %p %#x before", s, strsignal(s),
              (void *)now.sa_handler, (unsigned)now.sa_flags, (void *)before[s].sa_handler,
              (unsigned)before[s].sa_flags);
    }
    CHECK(raise(SIGINT) == 0 && own_calls == 1, "own SIGINT handler called %d times",
          (int)own_calls);
    return mrt_finish("mr_signals");
}
