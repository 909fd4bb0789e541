/* fab_dl.c - opening libfabric at run time (see fab_int.h for why). */
#include "config.h"

#include "fab_int.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

struct fab_fi_api fab_fi;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int load_status = PGC_ERR_FABRIC;
static char load_error[256];

/* The file MPISHIM_FABRIC_LIB names, and only that when it is set (a user picks another
 * build this way, e.g. one without the providers whose start-up costs: doc/cluster.md);
 * otherwise the copy configure found, then whatever the loader finds. */
static void *open_library(void)
{
    char path[512];
    void *h;

    if (mps_config_is_set(MPS_CFG_FABRIC_LIB)) {
        const char *set = mps_config_str(MPS_CFG_FABRIC_LIB);
        h = dlopen(set, RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            snprintf(load_error, sizeof(load_error), "MPISHIM_FABRIC_LIB=%s: cannot load it: %s",
                     set, dlerror());
        }
        return h;
    }
    snprintf(path, sizeof(path), "%s/libfabric.so.1", MPS_LIBFABRIC_LIBDIR);
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    h = h ? h : dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(load_error, sizeof(load_error), "cannot load libfabric.so.1: %s", dlerror());
    }
    return h;
}

/* Debian's libfabric links the psm provider's libinfinipath, whose constructor takes SIGINT,
 * SIGILL, SIGABRT, SIGBUS, SIGSEGV and SIGTERM with a handler that prints a backtrace and
 * calls exit(). A rank that mpiexec ends with SIGTERM then runs the atexit handlers and the
 * libraries' destructors inside a signal handler (it can deadlock on a lock the interrupted
 * code held, and ThreadSanitizer reports each call), a crash no longer dumps core or tells
 * its signal, and the program's own handlers installed before MPI_Init are replaced.
 * Opening a transport must not change how the process takes signals: every disposition the
 * load changed is put back. */
static bool same_action(const struct sigaction *a, const struct sigaction *b)
{
    return a->sa_handler == b->sa_handler && a->sa_flags == b->sa_flags;
}

static void *open_keeping_signals(void)
{
    static struct sigaction before[NSIG];
    static bool known[NSIG];
    void *h;

    for (int s = 1; s < NSIG; s++) {
        known[s] = sigaction(s, NULL, &before[s]) == 0;
    }
    h = open_library();
    for (int s = 1; s < NSIG; s++) {
        struct sigaction now;

        if (known[s] && sigaction(s, NULL, &now) == 0 && !same_action(&now, &before[s])) {
            sigaction(s, &before[s], NULL);
            MPS_DEBUG("loading libfabric replaced the handler of signal %d (%s): put back", s,
                      strsignal(s));
        }
    }
    return h;
}

static void load(void)
{
    void *h = open_keeping_signals();

    if (!h) {
        return;
    }
    *(void **)&fab_fi.getinfo = dlsym(h, "fi_getinfo");
    *(void **)&fab_fi.freeinfo = dlsym(h, "fi_freeinfo");
    *(void **)&fab_fi.dupinfo = dlsym(h, "fi_dupinfo");
    *(void **)&fab_fi.fabric = dlsym(h, "fi_fabric");
    *(void **)&fab_fi.strerror = dlsym(h, "fi_strerror");
    *(void **)&fab_fi.version = dlsym(h, "fi_version");
    if (!fab_fi.getinfo || !fab_fi.freeinfo || !fab_fi.dupinfo || !fab_fi.fabric ||
        !fab_fi.strerror || !fab_fi.version) {
        snprintf(load_error, sizeof(load_error), "libfabric.so.1 lacks fi_getinfo & co.: %s",
                 dlerror());
        return;
    }
    load_status = PGC_OK;
}

int fab_dl_load(void)
{
    pthread_once(&once, load);
    if (load_status != PGC_OK) {
        return mps_error(load_status, "%s", load_error);
    }
    return PGC_OK;
}

uint32_t fab_runtime_version(void)
{
    return fab_dl_load() == PGC_OK ? fab_fi.version() : 0;
}
