/*
 * mpishim_info.c - what this build of mpishim is made of, and every MPISHIM_* variable.
 *
 *   mpishim_info          version, configure options, CUDA/NCCL, libfabric and PMIx
 *                         versions, the libfabric providers found, then the variables
 *   mpishim_info --vars   only the variables: name, type, default, current value, doc
 *
 * The variable list comes from common/mps_config.h's one table, so a variable added there
 * shows up here without touching this file.
 */
#include "config.h"

#include <pmix.h>
#include <rdma/fabric.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fab.h"
#include "mps_config.h"
#include "pg_device.h"
#include "pgc_status.h"

static void print_vars(void)
{
    printf("Environment variables (MPISHIM_*):\n");
    for (int id = 0; id < MPS_CFG_COUNT; id++) {
        const struct mps_config_desc *d = mps_config_desc((enum mps_config_id)id);
        const char *cur = getenv(d->name);
        printf("  %s (%s)\n", d->name, mps_config_type_name(d->type));
        printf("      default: \"%s\"   current: %s%s%s\n", d->def, cur ? "\"" : "",
               cur ? cur : "(unset)", cur ? "\"" : "");
        printf("      %s\n", d->doc);
    }
}

static void print_build(void)
{
    uint32_t fv = fab_runtime_version();
    char provs[4096] = "";
    printf("mpishim %s\n", PACKAGE_VERSION);
    printf("  configure options: %s\n", *MPS_CONFIGURE_ARGS ? MPS_CONFIGURE_ARGS : "(none)");
    printf("  CUDA:              %s\n", HAVE_CUDA ? "yes" : "no");
    printf("  NCCL:              %s\n", HAVE_NCCL ? "yes" : "no");
    printf("  libfabric:         %u.%u (built against %d.%d)\n", FI_MAJOR(fv), FI_MINOR(fv),
           FI_MAJOR_VERSION, FI_MINOR_VERSION);
    printf("  PMIx:              %s (built against %ld.%ld.%ld)\n", PMIx_Get_version(),
           (long)PMIX_VERSION_MAJOR, (long)PMIX_VERSION_MINOR, (long)PMIX_VERSION_RELEASE);
    int rc = fab_list_providers(provs, sizeof(provs));
    if (rc == PGC_OK) {
        printf("  providers:         %s\n", provs);
    } else {
        printf("  providers:         (none found: %s)\n", pgc_strerror(rc));
    }
    printf("\n");
}

/* Device support: what is compiled in, which CUDA runtime and NCCL were opened (the device
 * backend opens them at run time; without them the build still runs, host path only), and
 * whether a device is usable now (without a driver the probe finds none: not an error). */
static void print_device(void)
{
    int cv = pg_dev_cuda_version(), nv = pg_dev_nccl_version(), n = pg_dev_count();
    const char *cwhy = NULL, *nwhy = NULL;
    const char *clib = pg_dev_cuda_lib(&cwhy), *nlib = pg_dev_nccl_lib(&nwhy);

    printf("Device support:\n");
    printf("  compiled in:       %s\n",
           !HAVE_CUDA ? "no (built without CUDA)"
           : HAVE_NCCL
               ? "CUDA and NCCL, opened at run time"
               : "CUDA, opened at run time; no NCCL (device collectives stage through host)");
    if (HAVE_CUDA) {
        if (clib) {
            printf("  CUDA runtime:      %d.%d (%s)\n", cv / 1000, (cv % 1000) / 10, clib);
        } else {
            printf("  CUDA runtime:      not loaded (%s)\n", cwhy);
        }
    }
    if (HAVE_NCCL) {
        if (nlib) {
            printf("  NCCL:              %d.%d.%d (%s)\n", nv / 10000, (nv % 10000) / 100, nv % 100,
                   nlib);
        } else {
            printf("  NCCL:              not loaded (%s): device collectives stage through host\n",
                   nwhy);
        }
    }
    if (n > 0) {
        printf("  usable now:        yes, %d CUDA device(s)\n", n);
    } else {
        printf("  usable now:        no (%s)\n", !HAVE_CUDA ? "not compiled in"
                                                 : clib     ? "no CUDA device or driver found"
                                                            : "no CUDA runtime");
    }
    printf("  device collectives: MPISHIM_DEVICE_COLL=%s\n\n", mps_config_str(MPS_CFG_DEVICE_COLL));
}

int main(int argc, char **argv)
{
    bool vars_only = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vars")) {
            vars_only = true;
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: mpishim_info [--vars]\n");
            return 0;
        } else {
            fprintf(stderr, "mpishim_info: unknown option '%s'\nusage: mpishim_info [--vars]\n",
                    argv[i]);
            return 2;
        }
    }
    if (!vars_only) {
        print_build();
        print_device();
    }
    print_vars();
    return 0;
}
