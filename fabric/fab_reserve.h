/*
 * fab_reserve.h - records a protocol path must not lose to a failed malloc (private to
 * fabric/): fab_shm.c's control records (FIN, CTS) that wait for room in a ring, fab_sock.c's
 * clear-to-send that comes before its send. Losing one leaves a transfer waiting for good, so
 * a fixed reserve stands behind malloc, and where even that ran dry the loss is recorded once
 * and fab_health fails the rank's waits with it (issue 37: no silent drops).
 */
#ifndef FAB_RESERVE_H
#define FAB_RESERVE_H

#include <stddef.h>

struct fab_reserve {
    unsigned char *pool; /* n records of size bytes, owned by the caller */
    size_t size, n;
    void *free;     /* the pool's unused records, linked through their first word */
    char lost[160]; /* set once a record was lost, reserve included */
};

/* Takes pool (n records of size bytes, size at least a pointer) as r's reserve. */
void fab_reserve_init(struct fab_reserve *r, void *pool, size_t size, size_t n);
/* A record: malloc's (unless the test knob MPISHIM_TEST_FAIL_ALLOC=ctl fails it), else one
 * of the reserve, else NULL with the loss recorded and logged; what names the record and its
 * peer in those lines ("a clear-to-send of"). */
void *fab_reserve_take(struct fab_reserve *r, const char *what, int peer);
/* Gives back a record that fab_reserve_take returned. */
void fab_reserve_put(struct fab_reserve *r, void *rec);

#endif
