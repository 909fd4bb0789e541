/*
 * mpishim_info.c - what this build of mpishim is made of, and every MPISHIM_* variable.
 *
 *   mpishim_info             version, configure options, CUDA/NCCL, libfabric and PMIx
 *                            versions, the libfabric providers found, then the variables
 *   mpishim_info --all       the same, plus the build's features and install paths
 *   mpishim_info --vars      only the variables: name, type, default, current value, doc
 *   mpishim_info --parsable  everything as key:value lines (ompi_info --parsable's form):
 *                            package:..., build:<key>:..., path:<key>:..., feature:<key>:...,
 *                            device:<key>:..., var:<NAME>:{type,value,default,source,doc}:...
 *   mpishim_info --version   "mpishim <version>"
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

/* A variable's current value as the info tool shows it: a secret (the store's token) only
 * as set or not, since the output lands in logs and bug reports. */
static const char *shown_value(enum mps_config_id id, const char *value)
{
    return id == MPS_CFG_STORE_TOKEN && value && *value ? "(set, not shown)" : value;
}

static void print_vars(void)
{
    printf("Environment variables (MPISHIM_*):\n");
    for (int id = 0; id < MPS_CFG_COUNT; id++) {
        const struct mps_config_desc *d = mps_config_desc((enum mps_config_id)id);
        const char *cur = shown_value((enum mps_config_id)id, getenv(d->name));
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

/* What this build offers: a key and a plain value for --parsable, a label and a note for
 * people (--all). */
struct feature {
    const char *key;
    const char *label;
    const char *value;
    const char *note;
};

static const struct feature features[] = {
    {"mpi_version", "MPI standard", "3.1", "and MPI-4.0's large-count _c functions"},
    {"mpich_abi", "MPICH ABI", "yes",
     "libmpi.so.12 and libmpich.so.12 in " MPS_LIBDIR "/mpich-abi"},
    {"thread_level", "thread support", "MPI_THREAD_MULTIPLE", ""},
    {"pgc_api", "process groups", "yes", "pgc.h, with torch.distributed's names"},
    {"cuda", "CUDA device buffers", HAVE_CUDA ? "yes" : "no", ""},
    {"nccl", "NCCL collectives", HAVE_NCCL ? "yes" : "no", ""},
    {"rma", "one-sided (RMA)", "yes", "active messages; the target progresses in its MPI calls"},
    {"mpi_io", "MPI-IO", "no", "MPI_ERR_UNSUPPORTED_OPERATION"},
    {"dynamic_processes", "dynamic processes", "no", "MPI_ERR_UNSUPPORTED_OPERATION"},
    {"sanitizers", "sanitizers", MPS_SAN_FLAGS, ""}, /* empty: none */
};

static const struct feature paths[] = {
    {"prefix", "prefix", MPS_PREFIX, ""},
    {"bindir", "programs", MPS_BINDIR, ""},
    {"libdir", "libmpishim", MPS_LIBDIR, ""},
    {"mpich_abi_libdir", "libmpi.so.12", MPS_LIBDIR "/mpich-abi", ""},
    {"includedir", "mpi.h, pgc.h", MPS_INCLUDEDIR, ""},
};

#define NFEATURES (sizeof(features) / sizeof(features[0]))
#define NPATHS (sizeof(paths) / sizeof(paths[0]))

static void print_features(void)
{
    printf("Features:\n");
    for (size_t i = 0; i < NFEATURES; i++) {
        const struct feature *f = &features[i];
        printf("  %-20s %s%s%s%s\n", f->label, *f->value ? f->value : "none", *f->note ? " (" : "",
               f->note, *f->note ? ")" : "");
    }
    printf("\nInstall paths:\n");
    for (size_t i = 0; i < NPATHS; i++) {
        printf("  %-20s %s\n", paths[i].label, paths[i].value);
    }
    printf("\n");
}

static void print_parsable(void)
{
    uint32_t fv = fab_runtime_version();
    char provs[4096] = "";
    int n = pg_dev_count();

    printf("package:mpishim\n");
    printf("version:%s\n", PACKAGE_VERSION);
    printf("build:configure_args:%s\n", MPS_CONFIGURE_ARGS);
    printf("build:libfabric:%u.%u\n", FI_MAJOR(fv), FI_MINOR(fv));
    printf("build:pmix:%s\n", PMIx_Get_version());
    printf("build:providers:%s\n", fab_list_providers(provs, sizeof(provs)) == PGC_OK ? provs : "");
    for (size_t i = 0; i < NFEATURES; i++) {
        printf("feature:%s:%s\n", features[i].key, *features[i].value ? features[i].value : "none");
    }
    for (size_t i = 0; i < NPATHS; i++) {
        printf("path:%s:%s\n", paths[i].key, paths[i].value);
    }
    printf("device:usable:%s\n", n > 0 ? "yes" : "no");
    printf("device:count:%d\n", n > 0 ? n : 0);
    for (int id = 0; id < MPS_CFG_COUNT; id++) {
        const struct mps_config_desc *d = mps_config_desc((enum mps_config_id)id);
        bool set = mps_config_is_set((enum mps_config_id)id);
        printf("var:%s:type:%s\n", d->name, mps_config_type_name(d->type));
        printf("var:%s:value:%s\n", d->name,
               shown_value((enum mps_config_id)id, mps_config_str((enum mps_config_id)id)));
        printf("var:%s:default:%s\n", d->name, d->def);
        printf("var:%s:source:%s\n", d->name, set ? "environment" : "default");
        printf("var:%s:doc:%s\n", d->name, d->doc);
    }
}

static const char usage[] = "usage: mpishim_info [--all | --vars | --parsable | --version]\n";

int main(int argc, char **argv)
{
    const char *mode = "";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--vars") || !strcmp(argv[i], "--all") ||
            !strcmp(argv[i], "--parsable") || !strcmp(argv[i], "--version")) {
            mode = argv[i];
        } else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("%s", usage);
            return 0;
        } else {
            fprintf(stderr, "mpishim_info: unknown option '%s'\n%s", argv[i], usage);
            return 2;
        }
    }
    if (!strcmp(mode, "--version")) {
        printf("mpishim %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (!strcmp(mode, "--parsable")) {
        print_parsable();
        return 0;
    }
    if (strcmp(mode, "--vars")) {
        print_build();
        if (!strcmp(mode, "--all")) {
            print_features();
        }
        print_device();
    }
    print_vars();
    return 0;
}
