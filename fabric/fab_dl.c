/* fab_dl.c - opening libfabric at run time (see fab_int.h for why). */
#include "config.h"

#include "fab_int.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

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

static void load(void)
{
    void *h = open_library();

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
