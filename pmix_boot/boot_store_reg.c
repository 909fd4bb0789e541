/*
 * boot_store_reg.c - the registration round of an env:// or tcp:// rendezvous, which finds a
 * rank started twice and ranks that disagree on WORLD_SIZE before any allgather could wait
 * for a process that will never come (and then name a present rank as missing).
 *
 * Every process stores "<size> <pid> <host> <nonce>" under boot/reg/<rank> with
 * compare_set, so a second process of the same rank finds the first one's entry. A rank
 * other than 0 first reads rank 0's entry and compares WORLD_SIZE. The ranks then count
 * themselves in boot/nreg; the one that completes the count sets boot/regdone, which every
 * rank waits for (one key each: the server checks one key per waiter, not the whole job's).
 *
 * A process that finds a problem sets boot/regdone to "bad: <message>" instead, so that every
 * rank still waiting fails at once with the same message, naming both processes: the
 * message travels in the answer that wakes them, which the server sends before rank 0 (its
 * host) can stop it. A duplicate that arrives after the round completed fails alone.
 */
#include "config.h"

#include "boot_store.h"
#include "boot_store_impl.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEY_LEN 64
#define ID_LEN 320
#define BAD "bad: "

struct ident {
    int size, pid;
    char host[256];
    char nonce[BOOT_STORE_TOKEN_LEN + 1]; /* tells two registrations of one process apart */
};

static void reg_key(char *key, int rank)
{
    snprintf(key, KEY_LEN, "boot/reg/%d", rank);
}

static void my_ident(struct ident *me, int size, int pid)
{
    const char *n = mps_config_str(MPS_CFG_NODE_NAME);

    me->size = size;
    me->pid = pid;
    if (n && *n) {
        snprintf(me->host, sizeof(me->host), "%s", n);
    } else if (gethostname(me->host, sizeof(me->host) - 1) != 0 || !me->host[0]) {
        snprintf(me->host, sizeof(me->host), "localhost");
    }
    me->host[sizeof(me->host) - 1] = '\0';
    if (boot_store_token_new(me->nonce) != PGC_OK) {
        snprintf(me->nonce, sizeof(me->nonce), "%p", (void *)me);
    }
}

static bool parse_ident(const char *v, struct ident *id)
{
    memset(id, 0, sizeof(*id));
    return sscanf(v, "%d %d %255s", &id->size, &id->pid, id->host) == 3; /* then the nonce */
}

/* Wakes the ranks waiting for the round with msg (the first message wins). Failures here
 * are not reported: the caller fails with msg anyway. */
static void poison(struct boot_store *s, const char *msg)
{
    char v[3 * ID_LEN];
    void *cur = NULL;
    size_t clen = 0;

    snprintf(v, sizeof(v), "%s%s", BAD, msg);
    boot_store_compare_set(s, "boot/regdone", "", 0, v, strlen(v), &cur, &clen);
    free(cur);
}

/* The timeout of the round, naming the first ranks that never registered. */
static int missing_ranks(struct boot_store *s, int rank, int size, double timeout)
{
    char key[KEY_LEN], list[160] = "";
    size_t off = 0;
    int nmiss = 0;

    for (int r = 0; r < size; r++) {
        const char *k = key;
        bool there = true;
        reg_key(key, r);
        if (boot_store_check(s, &k, 1, &there) != PGC_OK) {
            break;
        }
        if (!there && nmiss++ < 8 && off < sizeof(list)) {
            off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%d", off ? ", " : "", r);
        }
    }
    return mps_error(PGC_ERR_TIMEOUT,
                     "boot_init: rank %d timed out after %g s waiting for %d of %d ranks to "
                     "start (missing: rank%s %s%s)",
                     rank, timeout, nmiss, size, nmiss == 1 ? "" : "s", list,
                     nmiss > 8 ? ", ..." : "");
}

/* Rank 0's entry, compared with this rank's WORLD_SIZE. */
static int check_size(struct boot_store *s, int rank, const struct ident *me, double timeout)
{
    char key[KEY_LEN], msg[2 * ID_LEN];
    struct ident r0;
    void *v = NULL;
    size_t len = 0;
    int rc;

    reg_key(key, 0);
    if ((rc = boot_store_get(s, key, &v, &len)) != PGC_OK) {
        return rc == PGC_ERR_TIMEOUT ? missing_ranks(s, rank, me->size, timeout) : rc;
    }
    bool ok = parse_ident(v, &r0);
    free(v);
    if (ok && r0.size == me->size) {
        return PGC_OK;
    }
    snprintf(msg, sizeof(msg),
             "the ranks disagree on WORLD_SIZE: rank 0 (host %s, pid %d) has %d, rank %d (host "
             "%s, pid %d) has %d",
             r0.host, r0.pid, r0.size, rank, me->host, me->pid, me->size);
    poison(s, msg);
    return mps_error(PGC_ERR_MISMATCH, "boot_init: %s", msg);
}

/* Stores this process's entry; another entry there is another process of the same rank,
 * unless it names this process: an earlier init of it on a store that outlived that init
 * (mpiexec's), whose round completed then. */
static int claim_rank(struct boot_store *s, int rank, const struct ident *me)
{
    char key[KEY_LEN], mine[ID_LEN], msg[2 * ID_LEN + 64];
    struct ident other;
    void *cur = NULL;
    size_t clen = 0;
    int rc;

    reg_key(key, rank);
    snprintf(mine, sizeof(mine), "%d %d %s %s", me->size, me->pid, me->host, me->nonce);
    rc = boot_store_compare_set(s, key, "", 0, mine, strlen(mine), &cur, &clen);
    if (rc != PGC_OK || !strcmp(cur, mine)) {
        free(cur);
        return rc;
    }
    bool again = parse_ident(cur, &other) && other.pid == me->pid && !strcmp(other.host, me->host);
    free(cur);
    if (again) {
        return PGC_OK;
    }
    snprintf(msg, sizeof(msg),
             "rank %d was started twice: by host %s, pid %d, and by host %s, pid %d (check RANK "
             "of every process)",
             rank, other.host, other.pid, me->host, me->pid);
    poison(s, msg);
    return mps_error(PGC_ERR_INVALID_RANK, "boot_init: %s", msg);
}

int boot_store_register(struct boot_store *s, int rank, int size, double timeout)
{
    return boot_store_register_pid(s, rank, size, (int)getpid(), timeout);
}

int boot_store_register_pid(struct boot_store *s, int rank, int size, int pid, double timeout)
{
    struct ident me;
    int64_t n = 0;
    void *done = NULL;
    size_t len = 0;
    int rc;

    my_ident(&me, size, pid);
    boot_store_set_timeout(s, timeout);
    if ((rank != 0 && (rc = check_size(s, rank, &me, timeout)) != PGC_OK) ||
        (rc = claim_rank(s, rank, &me)) != PGC_OK ||
        (rc = boot_store_add(s, "boot/nreg", 1, &n)) != PGC_OK) {
        return rc;
    }
    if (n == size) {
        void *cur = NULL;
        size_t clen = 0;
        rc = boot_store_compare_set(s, "boot/regdone", "", 0, "ok", 2, &cur, &clen);
        free(cur);
        if (rc != PGC_OK) {
            return rc;
        }
    }
    if ((rc = boot_store_get(s, "boot/regdone", &done, &len)) != PGC_OK) {
        return rc == PGC_ERR_TIMEOUT ? missing_ranks(s, rank, size, timeout) : rc;
    }
    if (strcmp(done, "ok") != 0) {
        rc = mps_error(PGC_ERR_BOOT, "boot_init: rank %d (host %s, pid %d) ends: %s", rank, me.host,
                       me.pid,
                       strncmp(done, BAD, strlen(BAD)) ? (char *)done : (char *)done + strlen(BAD));
    }
    free(done);
    return rc;
}

int boot_store_rank_state(struct boot_store *s, int rank, bool *registered, bool *finalized)
{
    char reg[KEY_LEN], done[KEY_LEN];
    const char *k;
    int rc;

    reg_key(reg, rank);
    snprintf(done, sizeof(done), "boot/done/%d", rank);
    k = reg;
    if ((rc = boot_store_check(s, &k, 1, registered)) != PGC_OK) {
        return rc;
    }
    k = done;
    return boot_store_check(s, &k, 1, finalized);
}
