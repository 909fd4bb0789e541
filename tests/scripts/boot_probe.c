/*
 * boot_probe.c - a rank that only bootstraps: boot_init (whatever the launcher offers),
 * an allgather of rank * 10 checked against the values it computes itself, boot_fini.
 * Prints "rank R/N method M ok" and exits 0, or names what failed and exits 1.
 * test_mpiexec.sh runs it under mpiexec to check that the launcher's store works.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "boot.h"
#include "mps_log.h"
#include "pgc_status.h"

int main(void)
{
    struct boot *b = NULL;
    int *all = NULL;
    int rc = boot_init(NULL, &b);
    if (rc != PGC_OK) {
        fprintf(stderr, "boot_probe: boot_init: %s: %s\n", pgc_strerror(rc), mps_last_error());
        return 1;
    }
    const struct boot_info *info = boot_get_info(b);
    int mine = info->rank * 10;
    all = calloc((size_t)info->size, sizeof(int));
    rc = all ? boot_allgather(b, &mine, sizeof(mine), all) : PGC_ERR_NOMEM;
    if (rc != PGC_OK) {
        fprintf(stderr, "boot_probe: allgather: %s: %s\n", pgc_strerror(rc), mps_last_error());
        goto fail;
    }
    for (int r = 0; r < info->size; r++) {
        if (all[r] != r * 10) {
            fprintf(stderr, "boot_probe: rank %d: allgather[%d] = %d, expected %d\n", info->rank, r,
                    all[r], r * 10);
            goto fail;
        }
    }
    printf("rank %d/%d method %s ok\n", info->rank, info->size, info->method);
    free(all);
    return boot_fini(b) == PGC_OK ? 0 : 1;
fail:
    free(all);
    boot_fini(b);
    return 1;
}
