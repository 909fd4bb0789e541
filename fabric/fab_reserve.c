/*
 * fab_reserve.c - malloc with a reserve behind it, and a recorded loss past it
 * (fab_reserve.h).
 */
#include "config.h"

#include "fab_reserve.h"
#include "mps_config.h"
#include "mps_log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void fab_reserve_init(struct fab_reserve *r, void *pool, size_t size, size_t n)
{
    r->pool = pool;
    r->size = size;
    r->n = n;
    r->free = NULL;
    r->lost[0] = '\0';
    for (size_t i = n; i-- > 0;) {
        fab_reserve_put(r, r->pool + i * size);
    }
}

__attribute__((noinline, cold)) void *fab_reserve_take(struct fab_reserve *r, const char *what,
                                                       int peer)
{
    void *rec = mps_test_fails(MPS_FAIL_CTL) ? NULL : malloc(r->size);

    if (!rec && r->free) {
        rec = r->free;
        memcpy(&r->free, rec, sizeof(void *));
    }
    if (!rec && !r->lost[0]) {
        snprintf(r->lost, sizeof(r->lost),
                 "out of memory with its reserve used up, this rank lost %s rank %d, whose "
                 "transfer cannot complete",
                 what, peer);
    }
    if (!rec) {
        MPS_ERR("fab_progress: no memory (reserve used up too) for %s rank %d: its transfer "
                "is lost",
                what, peer);
    }
    return rec;
}

void fab_reserve_put(struct fab_reserve *r, void *rec)
{
    unsigned char *p = rec;

    if (p >= r->pool && p < r->pool + r->n * r->size) {
        memcpy(p, &r->free, sizeof(void *));
        r->free = p;
    } else {
        free(rec);
    }
}
