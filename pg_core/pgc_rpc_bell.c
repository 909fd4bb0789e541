/*
 * pgc_rpc_bell.c - the RPC agent's doorbell: a wake-up from the sender of a message to the
 * receiver's agent, so that an idle agent can sleep in the kernel instead of polling.
 *
 * Why: the agent finds messages by polling the fabric (pg_iprobe). Polling without end
 * burns a core, and a thread that polls on a CPU shared with other busy processes runs only
 * in the slices the scheduler gives it, while a thread woken from a sleep runs at once. So
 * an idle agent sleeps, and every sender, once its message has left, rings its bell.
 *
 * The bell is a page of shared memory per worker holding a futex word and a flag that says
 * whether the agent sleeps. A ring costs one load of that flag while the receiver is awake
 * (a thread of it polls: the agent, a server thread or a caller waiting for its answer),
 * and a FUTEX_WAKE only when it sleeps. The eventcount protocol makes that safe: the
 * sleeper sets the flag, reads the word, probes the fabric once more and sleeps only if the
 * word is unchanged; a sender writes its message, then reads the flag (a full fence between
 * each side's write and read). Either the sender sees the flag and bumps the word, which
 * ends or prevents the sleep, or the sleeper's probe sees the message.
 *
 * The page is named after its owner's pid and a nonce, exchanged at init, and unlinked once
 * every worker has mapped its peers' pages (a barrier), so nothing is left in /dev/shm. A
 * worker whose page can not be opened (another node: its /dev/shm differs) is not rung: the
 * agent's sleep stays bounded (rpc_bell_sleep's timeout), so its messages are still found.
 */
#include "config.h"

#include "mps_log.h"
#include "pg_internal.h"
#include "pgc_internal.h"
#include "pgc_rpc_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct rpc_bell {
    uint32_t sleeping; /* enum rpc_bell_state: whether ringing must wake the agent */
    uint32_t word;     /* the futex word, bumped by each ring that finds it sleeping */
};

#define BELL_BYTES 4096

struct bell_id {
    int32_t pid;
    uint32_t nonce; /* 0: this worker has no bell */
};

static void bell_name(char *buf, size_t len, const struct bell_id *id)
{
    snprintf(buf, len, "/mpishim-rpc-%d-%08x", (int)id->pid, (unsigned)id->nonce);
}

static struct rpc_bell *bell_map(const struct bell_id *id, bool create)
{
    char name[64];
    void *p;
    int fd;

    bell_name(name, sizeof(name), id);
    fd = create ? shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600) : shm_open(name, O_RDWR, 0);
    if (fd < 0) {
        return NULL;
    }
    if (create && ftruncate(fd, BELL_BYTES) != 0) {
        close(fd);
        shm_unlink(name);
        return NULL;
    }
    p = mmap(NULL, BELL_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED && create) {
        shm_unlink(name);
    }
    return p == MAP_FAILED ? NULL : p;
}

/* Our own page, or a nonce of 0 in *me when there is none (the agent then naps). */
static struct rpc_bell *bell_create(struct bell_id *me)
{
    struct timespec ts;
    struct rpc_bell *b;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    me->pid = (int32_t)getpid();
    me->nonce = ((uint32_t)ts.tv_nsec ^ (uint32_t)me->pid * 2654435761u) | 1u;
    b = bell_map(me, true);
    if (!b) {
        mps_log(MPS_LOG_DEBUG, "pgc_rpc_init: no doorbell (%s): the agent naps", strerror(errno));
        me->nonce = 0;
    }
    return b;
}

/* Opens this worker's bell and maps every peer's (collective over the RPC group). */
int rpc_bell_open(void)
{
    struct bell_id me, *ids;
    char name[64];
    int rc;

    rpc.bell = bell_create(&me);
    ids = calloc((size_t)rpc.size, sizeof(*ids));
    rpc.bells = calloc((size_t)rpc.size, sizeof(*rpc.bells));
    if (!ids || !rpc.bells) {
        free(ids);
        return mps_error(PGC_ERR_NOMEM, "pgc_rpc_init: the table of %d doorbells", rpc.size);
    }
    rc = pg_allgather(rpc.g, &me, ids, sizeof(me));
    for (int r = 0; rc == PGC_OK && r < rpc.size; r++) {
        rpc.bells[r] = r == rpc.rank ? rpc.bell : ids[r].nonce ? bell_map(&ids[r], false) : NULL;
    }
    /* Every worker has mapped the pages it could: the names can go. */
    if (rc == PGC_OK) {
        rc = pg_barrier(rpc.g);
    }
    if (rpc.bell) {
        bell_name(name, sizeof(name), &me);
        shm_unlink(name);
    }
    free(ids);
    return rc == PGC_OK ? PGC_OK : pgc_wrap(rc, "pgc_rpc_init: exchanging doorbells");
}

void rpc_bell_close(void)
{
    for (int r = 0; rpc.bells && r < rpc.size; r++) {
        if (rpc.bells[r] && rpc.bells[r] != rpc.bell) {
            munmap(rpc.bells[r], BELL_BYTES);
        }
    }
    if (rpc.bell) {
        munmap(rpc.bell, BELL_BYTES);
    }
    free(rpc.bells);
    rpc.bells = NULL;
    rpc.bell = NULL;
}

static long futex(uint32_t *word, int op, uint32_t val, const struct timespec *ts)
{
    /* Not FUTEX_PRIVATE_FLAG: the word is shared with other processes. */
    return syscall(SYS_futex, word, op, val, ts, NULL, 0);
}

/* Wakes b's agent if its flag is at least level (BELL_ASLEEP: asleep; BELL_PARKED: parked
 * too). */
static void bell_wake(struct rpc_bell *b, uint32_t level)
{
    /* The message (or whatever the sleeper must see) is written before the flag is read. */
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (__atomic_load_n(&b->sleeping, __ATOMIC_SEQ_CST) >= level) {
        __atomic_add_fetch(&b->word, 1, __ATOMIC_SEQ_CST);
        futex(&b->word, FUTEX_WAKE, 1, NULL);
    }
}

void rpc_bell_ring(int dst)
{
    if (rpc.bells && rpc.bells[dst]) {
        bell_wake(rpc.bells[dst], BELL_ASLEEP);
    }
}

void rpc_bell_ring_self(void)
{
    if (rpc.bell) {
        bell_wake(rpc.bell, BELL_PARKED);
    }
}

uint32_t rpc_bell_arm(uint32_t how)
{
    if (!rpc.bell) {
        return 0;
    }
    __atomic_store_n(&rpc.bell->sleeping, how, __ATOMIC_SEQ_CST);
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    return __atomic_load_n(&rpc.bell->word, __ATOMIC_SEQ_CST);
}

void rpc_bell_disarm(void)
{
    if (rpc.bell) {
        __atomic_store_n(&rpc.bell->sleeping, BELL_AWAKE, __ATOMIC_SEQ_CST);
    }
}

void rpc_bell_sleep(uint32_t word, double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};

    if (!rpc.bell) {
        nanosleep(&ts, NULL);
        return;
    }
    /* Returns at once when the word moved since rpc_bell_arm (EAGAIN): a ring came. */
    futex(&rpc.bell->word, FUTEX_WAIT, word, &ts);
    rpc_bell_disarm();
}
