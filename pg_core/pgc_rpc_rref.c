/*
 * pgc_rpc_rref.c - remote references: torch's RRef protocol (owner and users, forks, and
 * reference counting with confirmation).
 *
 * Every handle, on a user or on the owner, is a fork with an id unique in the group, and
 * the owner keeps the set of forks of each object it owns. The object is freed exactly
 * when that set is empty and no queued call uses it. How a fork reaches the owner's set
 * depends on who sends the RRef (torch's three cases):
 *  - owner to user: the owner adds the fork before it sends the RRef;
 *  - user to owner: the owner adds it when the message arrives; the sender's own fork is
 *    still in the set then, since its delete can only come after (one sender's messages
 *    arrive in order, and the agent handles them in that order);
 *  - user A to user B: A counts the fork as a pending child and keeps its own fork until
 *    the owner confirms; B sends a fork request to the owner, which adds the fork and
 *    tells A (child accept). A's fork, and thus the object, outlives the unconfirmed child.
 * pgc_remote creates the object and its creator's fork with one message: the owner
 * registers both when it arrives, before it runs the function. A fork request or a call
 * from another worker may arrive before that message (different senders are not ordered):
 * the owner then makes the object early, empty and pending, and the creating request fills
 * it (torch's getOrCreateOwnerRRef). A pgc_remote to itself makes the object before it
 * sends, since its own later local uses of the handle do not queue behind the request.
 */
#include "config.h"

#include "mps_log.h"
#include "pgc_internal.h"
#include "pgc_rpc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- owned objects ---- */

/* Since the process started (pgc_rpc_debug_info): objects made here as their owner, freed
 * because their last fork was gone, and freed by shutdown with forks still live. Atomic:
 * owned_free runs outside rpc.mu. */
static long owned_made, owned_deleted, owned_dropped;

void rpc_rref_lifetime_counts(long *made, long *deleted, long *dropped)
{
    *made = __atomic_load_n(&owned_made, __ATOMIC_RELAXED);
    *deleted = __atomic_load_n(&owned_deleted, __ATOMIC_RELAXED);
    *dropped = __atomic_load_n(&owned_dropped, __ATOMIC_RELAXED);
}

static struct rpc_owned *owned_find_locked(uint64_t rref_id)
{
    struct mps_list *pos;

    mps_list_for_each(pos, &rpc.owned)
    {
        struct rpc_owned *o = container_of(pos, struct rpc_owned, link);
        if (o->rref_id == rref_id) {
            return o;
        }
    }
    return NULL;
}

/* Frees o; by_protocol: its last fork and queued call were gone (else shutdown drops it). */
static void owned_free(struct rpc_owned *o, bool by_protocol)
{
    if (!o) {
        return;
    }
    __atomic_add_fetch(by_protocol ? &owned_deleted : &owned_dropped, 1, __ATOMIC_RELAXED);
    pgc_rpc_value_free(&o->value);
    pgc_future_free(o->created);
    free(o->forks);
    free(o);
}

/* Unlinks o when nothing refers to it any more; returns it for owned_free (outside the
 * lock: its value may hold RRefs, whose release takes the lock). */
static struct rpc_owned *owned_unlink_if_unused_locked(struct rpc_owned *o)
{
    if (o && o->nforks == 0 && o->busy == 0) {
        mps_list_remove(&o->link);
        return o;
    }
    return NULL;
}

static int owned_add_fork_locked(struct rpc_owned *o, uint64_t fork_id)
{
    if (o->nforks == o->cap) {
        int cap = o->cap ? 2 * o->cap : 4;
        uint64_t *f = realloc(o->forks, sizeof(*f) * (size_t)cap);
        if (!f) {
            return PGC_ERR_NOMEM;
        }
        o->forks = f;
        o->cap = cap;
    }
    o->forks[o->nforks++] = fork_id;
    return PGC_OK;
}

/* Under rpc.mu: the object of rref_id, made (empty, pending, busy for the REMOTE request
 * still to come) if none exists: a fork or a call may reach the owner before the creating
 * request does, when they come from another worker than the creator (torch's
 * getOrCreateOwnerRRef). EARLY_BY_FORK: the creator's fork is added when that request
 * arrives. */
static struct rpc_owned *owned_get_or_make_locked(uint64_t rref_id)
{
    struct rpc_owned *o = owned_find_locked(rref_id);

    if (o) {
        return o;
    }
    o = calloc(1, sizeof(*o));
    if (!o || !(o->created = pgc_future_new())) {
        free(o);
        return NULL;
    }
    __atomic_add_fetch(&owned_made, 1, __ATOMIC_RELAXED);
    o->rref_id = rref_id;
    o->busy = 1;
    o->early = EARLY_BY_FORK;
    mps_list_push_back(&rpc.owned, &o->link);
    return o;
}

static void owned_add_fork(uint64_t rref_id, uint64_t fork_id)
{
    struct rpc_owned *o;

    pthread_mutex_lock(&rpc.mu);
    o = owned_get_or_make_locked(rref_id);
    if (o) {
        owned_add_fork_locked(o, fork_id);
    }
    pthread_mutex_unlock(&rpc.mu);
}

static void owned_remove_fork(uint64_t rref_id, uint64_t fork_id)
{
    struct rpc_owned *o, *dead = NULL;

    pthread_mutex_lock(&rpc.mu);
    o = owned_find_locked(rref_id);
    for (int i = 0; o && i < o->nforks; i++) {
        if (o->forks[i] == fork_id) {
            o->forks[i] = o->forks[--o->nforks];
            dead = owned_unlink_if_unused_locked(o);
            break;
        }
    }
    pthread_mutex_unlock(&rpc.mu);
    owned_free(dead, true);
}

struct rpc_owned *rpc_owned_create(const struct rpc_hdr *h)
{
    struct rpc_owned *o;

    pthread_mutex_lock(&rpc.mu);
    o = owned_get_or_make_locked(h->rref_id);
    if (o && o->early == EARLY_BY_FORK) {
        owned_add_fork_locked(o, h->fork_id);
    }
    if (o) {
        /* The busy count the early object holds passes to this request. */
        o->early = EARLY_NONE;
    }
    pthread_mutex_unlock(&rpc.mu);
    return o;
}

/* pgc_remote to itself: the object with its creator's fork, before the request leaves. */
static struct rpc_owned *owned_make_for_self(uint64_t rref_id, uint64_t fork_id)
{
    struct rpc_owned *o;

    pthread_mutex_lock(&rpc.mu);
    o = owned_get_or_make_locked(rref_id);
    if (o) {
        owned_add_fork_locked(o, fork_id);
        o->early = EARLY_BY_SELF;
    }
    pthread_mutex_unlock(&rpc.mu);
    return o;
}

struct rpc_owned *rpc_owned_get(uint64_t rref_id)
{
    struct rpc_owned *o;

    pthread_mutex_lock(&rpc.mu);
    o = owned_get_or_make_locked(rref_id);
    if (o) {
        o->busy++;
    }
    pthread_mutex_unlock(&rpc.mu);
    return o;
}

void rpc_owned_put(struct rpc_owned *o)
{
    struct rpc_owned *dead;

    pthread_mutex_lock(&rpc.mu);
    o->busy--;
    dead = owned_unlink_if_unused_locked(o);
    pthread_mutex_unlock(&rpc.mu);
    owned_free(dead, true);
}

/* ---- handles ---- */

static pgc_rref *handle_new(uint64_t rref_id, uint64_t fork_id, int owner)
{
    pgc_rref *r = calloc(1, sizeof(*r));

    if (!r) {
        return NULL;
    }
    r->rref_id = rref_id;
    r->fork_id = fork_id;
    r->owner = owner;
    r->refs = 1;
    r->linked = true;
    pthread_mutex_lock(&rpc.mu);
    mps_list_push_back(&rpc.handles, &r->link);
    pthread_mutex_unlock(&rpc.mu);
    return r;
}

static void handle_free(pgc_rref *r)
{
    pgc_future_free(r->created);
    free(r);
}

/* The fork of r goes back to its owner (r is unlinked and marked released). */
static void give_back(pgc_rref *r)
{
    struct rpc_hdr h = {.kind = RPC_DELETE, .rref_id = r->rref_id, .fork_id = r->fork_id};

    if (r->owner == rpc.rank) {
        owned_remove_fork(r->rref_id, r->fork_id);
    } else if (__atomic_load_n(&rpc.up, __ATOMIC_ACQUIRE) && !rpc.dead[r->owner]) {
        rpc_send(r->owner, &h, "", 0, NULL);
    }
}

/* Under rpc.mu: whether r's fork should go back now (no local reference or dropped by
 * shutdown, and no unconfirmed child); if so unlinks it. */
static bool release_due_locked(pgc_rref *r, bool dropping)
{
    if (!r->linked || r->pending_children > 0 || (r->refs > 0 && !dropping)) {
        return false;
    }
    mps_list_remove(&r->link);
    r->linked = false;
    r->released = true;
    return true;
}

pgc_rref *pgc_rref_retain(pgc_rref *r)
{
    if (r) {
        pthread_mutex_lock(&rpc.mu);
        r->refs++;
        pthread_mutex_unlock(&rpc.mu);
    }
    return r;
}

void pgc_rref_free(pgc_rref *r)
{
    bool back, gone;

    if (!r) {
        return;
    }
    pthread_mutex_lock(&rpc.mu);
    r->refs--;
    back = r->refs == 0 && release_due_locked(r, false);
    gone = r->refs == 0 && !r->linked;
    pthread_mutex_unlock(&rpc.mu);
    if (back) {
        give_back(r);
    }
    if (gone) {
        handle_free(r);
    }
}

int pgc_rref_owner(pgc_rref *r)
{
    return r ? r->owner : mps_error(PGC_ERR_INVALID_ARG, "pgc_rref_owner: NULL rref");
}

const char *pgc_rref_owner_name(pgc_rref *r)
{
    return r && rpc.names && r->owner < rpc.size ? rpc.names[r->owner] : NULL;
}

int pgc_rref_is_owner(pgc_rref *r)
{
    return r && __atomic_load_n(&rpc.up, __ATOMIC_ACQUIRE) && r->owner == rpc.rank;
}

/* ---- the protocol ---- */

int rpc_rref_fork_out(pgc_rref *r, int dst, struct rpc_rdesc *d)
{
    d->rref_id = r->rref_id;
    d->owner = r->owner;
    d->fork_id = rpc_new_id();
    d->parent_fork = r->fork_id;
    if (r->owner == rpc.rank) {
        d->how = FORK_FROM_OWNER;
        owned_add_fork(r->rref_id, d->fork_id);
    } else if (dst == r->owner) {
        d->how = FORK_TO_OWNER;
    } else {
        d->how = FORK_USER_TO_USER;
        pthread_mutex_lock(&rpc.mu);
        r->pending_children++;
        pthread_mutex_unlock(&rpc.mu);
    }
    return PGC_OK;
}

static void child_done(pgc_rref *r)
{
    bool back, gone;

    pthread_mutex_lock(&rpc.mu);
    r->pending_children--;
    back = release_due_locked(r, r->released);
    gone = back && r->refs == 0;
    pthread_mutex_unlock(&rpc.mu);
    if (back) {
        give_back(r);
    }
    if (gone) {
        handle_free(r);
    }
}

void rpc_rref_fork_undo(pgc_rref *r, const struct rpc_rdesc *d)
{
    if (d->how == FORK_FROM_OWNER) {
        owned_remove_fork(d->rref_id, d->fork_id);
    } else if (d->how == FORK_USER_TO_USER) {
        child_done(r);
    }
}

pgc_rref *rpc_rref_fork_in(int src, const struct rpc_rdesc *d)
{
    struct rpc_hdr h = {.kind = RPC_FORK_REQ, .rref_id = d->rref_id, .fork_id = d->fork_id,
                        .parent_fork = d->parent_fork, .parent = src};
    pgc_rref *r = handle_new(d->rref_id, d->fork_id, d->owner);

    if (!r) {
        return NULL;
    }
    if (d->how == FORK_TO_OWNER) {
        owned_add_fork(d->rref_id, d->fork_id);
    } else if (d->how == FORK_USER_TO_USER) {
        rpc_send(d->owner, &h, "", 0, NULL);
    }
    return r;
}

void rpc_rref_on_fork_req(int src, const struct rpc_hdr *h)
{
    struct rpc_hdr acc = {.kind = RPC_CHILD_ACCEPT, .rref_id = h->rref_id,
                          .fork_id = h->fork_id, .parent_fork = h->parent_fork};

    (void)src;
    owned_add_fork(h->rref_id, h->fork_id);
    if (h->parent >= 0 && h->parent < rpc.size) {
        rpc_send(h->parent, &acc, "", 0, NULL);
    }
}

void rpc_rref_on_child_accept(const struct rpc_hdr *h)
{
    struct mps_list *pos;
    pgc_rref *r = NULL;

    pthread_mutex_lock(&rpc.mu);
    mps_list_for_each(pos, &rpc.handles)
    {
        pgc_rref *c = container_of(pos, struct pgc_rref, link);
        if (c->fork_id == h->parent_fork) {
            r = c;
            break;
        }
    }
    pthread_mutex_unlock(&rpc.mu);
    if (r) {
        child_done(r);
    }
}

void rpc_rref_on_delete(const struct rpc_hdr *h)
{
    owned_remove_fork(h->rref_id, h->fork_id);
}

void rpc_rref_release_all(void)
{
    struct mps_list out, *pos, *tmp;

    mps_list_init(&out);
    pthread_mutex_lock(&rpc.mu);
    mps_list_for_each_safe(pos, tmp, &rpc.handles)
    {
        pgc_rref *r = container_of(pos, struct pgc_rref, link);
        /* Marked released: a handle still waiting for a child's confirmation goes back when
         * it comes (child_done). */
        r->released = true;
        if (release_due_locked(r, true)) {
            mps_list_push_back(&out, &r->link);
        }
    }
    pthread_mutex_unlock(&rpc.mu);
    mps_list_for_each_safe(pos, tmp, &out)
    {
        pgc_rref *r = container_of(pos, struct pgc_rref, link);
        give_back(r);
        if (r->refs == 0) {
            handle_free(r);
        }
    }
}

int rpc_rref_busy_count(void)
{
    struct mps_list *pos;
    int n = 0;

    pthread_mutex_lock(&rpc.mu);
    mps_list_for_each(pos, &rpc.owned)
    {
        n++;
    }
    mps_list_for_each(pos, &rpc.handles)
    {
        n += container_of(pos, struct pgc_rref, link)->pending_children > 0;
    }
    pthread_mutex_unlock(&rpc.mu);
    return n;
}

void rpc_rref_fini(void)
{
    struct mps_list *pos, *tmp;
    struct mps_list owned;

    mps_list_init(&owned);
    pthread_mutex_lock(&rpc.mu);
    mps_list_for_each_safe(pos, tmp, &rpc.handles)
    {
        pgc_rref *r = container_of(pos, struct pgc_rref, link);
        mps_list_remove(&r->link);
        r->linked = false;
        r->released = true;
        if (r->refs == 0) {
            handle_free(r);
        }
    }
    mps_list_for_each_safe(pos, tmp, &rpc.owned)
    {
        mps_list_remove(pos);
        mps_list_push_back(&owned, pos);
    }
    pthread_mutex_unlock(&rpc.mu);
    mps_list_for_each_safe(pos, tmp, &owned)
    {
        owned_free(container_of(pos, struct rpc_owned, link), false);
    }
}

/* ---- the calls ---- */

int pgc_remote(const char *to, const char *fn, const pgc_rpc_value *args, double timeout,
               pgc_rref **out)
{
    struct rpc_hdr h = {.kind = RPC_REMOTE};
    struct rpc_owned *early = NULL;
    pgc_rref *r;
    int dst, rc;

    if (!out) {
        return mps_error(PGC_ERR_INVALID_ARG, "pgc_remote: NULL rref pointer");
    }
    *out = NULL;
    rc = rpc_dst_of("pgc_remote", to, &dst);
    if (rc != PGC_OK) {
        return rc;
    }
    r = handle_new(rpc_new_id(), rpc_new_id(), dst);
    if (!r) {
        return mps_error(PGC_ERR_NOMEM, "pgc_remote");
    }
    h.rref_id = r->rref_id;
    h.fork_id = r->fork_id;
    /* To itself, the owner makes the object before the request leaves: this thread's next
     * local use of the handle (a fork, its free) would otherwise find no object, since it
     * does not travel behind the request as a message to another owner would. */
    if (dst == rpc.rank && !(early = owned_make_for_self(h.rref_id, h.fork_id))) {
        rc = mps_error(PGC_ERR_NOMEM, "pgc_remote");
    }
    if (rc == PGC_OK) {
        rc = rpc_call("pgc_remote", dst, &h, fn, args, timeout, &r->created);
    }
    if (rc != PGC_OK && early) {
        owned_remove_fork(h.rref_id, h.fork_id);
        rpc_owned_put(early);
    }
    if (rc != PGC_OK) {
        /* The owner never heard of it: drop the handle without a delete. */
        pthread_mutex_lock(&rpc.mu);
        mps_list_remove(&r->link);
        pthread_mutex_unlock(&rpc.mu);
        handle_free(r);
        return rc;
    }
    *out = r;
    return PGC_OK;
}

/* On the owner: the object of r once created (busy-referenced), or an error. */
static int local_object(const char *call, pgc_rref *r, struct rpc_owned **out)
{
    struct rpc_owned *o;
    int rc = PGC_OK;

    *out = NULL;
    if (r->created) {
        rc = pgc_future_wait(r->created, rpc.timeout);
    }
    o = rc == PGC_OK ? rpc_owned_get(r->rref_id) : NULL;
    if (rc == PGC_OK && !o) {
        rc = mps_error(PGC_ERR_NOT_FOUND, "%s: worker '%s' owns no such object", call,
                       rpc.names[rpc.rank]);
    }
    if (rc == PGC_OK && (rc = pgc_future_wait(o->created, rpc.timeout)) != PGC_OK) {
        rpc_owned_put(o);
        o = NULL;
    }
    if (rc != PGC_OK) {
        return pgc_wrap(rc, "%s", call);
    }
    *out = o;
    return PGC_OK;
}

static int check_rref(const char *call, pgc_rref *r)
{
    int rc = rpc_check_up(call);

    if (rc == PGC_OK && (!r || r->released)) {
        rc = mps_error(PGC_ERR_INVALID_ARG, "%s: NULL or released rref", call);
    }
    return rc;
}

int pgc_rref_to_here(pgc_rref *r, double timeout, pgc_rpc_value *out)
{
    struct rpc_hdr h = {.kind = RPC_TO_HERE};
    struct rpc_owned *o;
    pgc_future *f;
    int rc = check_rref("pgc_rref_to_here", r);

    if (rc == PGC_OK && !out) {
        rc = mps_error(PGC_ERR_INVALID_ARG, "pgc_rref_to_here: NULL output");
    }
    if (rc != PGC_OK) {
        return rc;
    }
    memset(out, 0, sizeof(*out));
    if (r->owner == rpc.rank) {
        rc = local_object("pgc_rref_to_here", r, &o);
        if (rc == PGC_OK) {
            rc = rpc_value_copy(&o->value, out);
            rpc_owned_put(o);
        }
        return rc;
    }
    h.rref_id = r->rref_id;
    rc = rpc_call("pgc_rref_to_here", r->owner, &h, NULL, NULL, timeout, &f);
    return rc == PGC_OK ? rpc_wait_take(f, out) : rc;
}

pgc_rpc_value *pgc_rref_local_value(pgc_rref *r)
{
    struct rpc_owned *o;

    if (check_rref("pgc_rref_local_value", r) != PGC_OK) {
        return NULL;
    }
    if (r->owner != rpc.rank) {
        mps_error(PGC_ERR_INVALID_ARG, "pgc_rref_local_value on worker '%s': the owner is '%s'",
                  rpc.names[rpc.rank], rpc.names[r->owner]);
        return NULL;
    }
    if (local_object("pgc_rref_local_value", r, &o) != PGC_OK) {
        return NULL;
    }
    /* r's own fork keeps the object alive: the busy reference is not needed past here. */
    rpc_owned_put(o);
    return &o->value;
}

int pgc_rref_rpc_async(pgc_rref *r, const char *fn, const pgc_rpc_value *args, double timeout,
                       pgc_future **fut)
{
    struct rpc_hdr h = {.kind = RPC_RREF_CALL};
    int rc = check_rref("pgc_rref_rpc_async", r);

    if (rc == PGC_OK && !fut) {
        rc = mps_error(PGC_ERR_INVALID_ARG, "pgc_rref_rpc_async: NULL future pointer");
    }
    if (rc != PGC_OK) {
        return rc;
    }
    h.rref_id = r->rref_id;
    return rpc_call("pgc_rref_rpc_async", r->owner, &h, fn, args, timeout, fut);
}

int pgc_rref_rpc_sync(pgc_rref *r, const char *fn, const pgc_rpc_value *args, double timeout,
                      pgc_rpc_value *result)
{
    pgc_future *f;
    int rc;

    if (result) {
        memset(result, 0, sizeof(*result));
    }
    rc = pgc_rref_rpc_async(r, fn, args, timeout, &f);
    return rc == PGC_OK ? rpc_wait_take(f, result) : rc;
}
