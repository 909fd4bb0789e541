/*
 * pg_await.c - what a collective that timed out was waiting for: its name, the ranks it
 * still needed, and where it stood ("allreduce: timed out after 60 s waiting for rank 5
 * (step 5 of 7 of recursive doubling: a receive of 8 B from rank 5)").
 *
 * Nothing here runs before a wait times out. The waits record nothing for it: the account
 * is read afterwards from what the collective left behind anyway, a schedule's steps and
 * their requests (pg_sched.c), a shared-memory slot's stamp (pg_coll_shm.c), or the one
 * message a collective without a schedule waits for (pg_coll_direct.c), whose tag carries
 * the collective's kind (pg_coll_sig.c). So the fast paths cost what they did.
 *
 * A node-aware collective (pg_coll_hier.c) runs as collectives on smaller groups, whose
 * accounts name ranks of those groups: an account therefore also keeps the ranks it names
 * as numbers, with their group's id, and a wait that timed out keeps its account for the
 * blocking node-aware step that called it, which names the ranks of its own group instead.
 */
#include "config.h"

#include "pg_device.h"
#include "pg_internal.h"
#include "pg_sched.h"

#include <stdio.h>

void pg_ranks_str(const int *ranks, int n, char *buf, size_t len)
{
    int shown = n > PG_AWAITED_SHOWN + 1 ? PG_AWAITED_SHOWN : n;
    size_t off = 0;

    buf[0] = '\0';
    if (n <= 0) {
        snprintf(buf, len, "no rank");
        return;
    }
    for (int i = 0; i < shown && off < len; i++) {
        const char *sep = i == 0 ? (n > 1 ? "ranks " : "rank ") : i + 1 == n ? " and " : ", ";
        off += (size_t)snprintf(buf + off, len - off, "%s%d", sep, ranks[i]);
    }
    if (shown < n && off < len) {
        snprintf(buf + off, len - off, " and %d more", n - shown);
    }
}

void pg_awaited_ranks(struct pg_awaited *a, uint64_t ctx, const int *ranks, int n)
{
    a->ctx = ctx;
    a->nranks = n > 0 ? n : 0;
    for (int i = 0; i < n && i < PG_AWAITED_SHOWN + 1; i++) {
        a->ranks[i] = ranks[i];
    }
    pg_ranks_str(ranks, n, a->who, sizeof(a->who));
}

/* The last timeout's account on this thread (pg_awaited_keep); kept.nranks 0: none. */
static __thread struct pg_awaited kept;

void pg_awaited_keep(const struct pg_awaited *a)
{
    kept = *a;
}

bool pg_awaited_kept(const struct pg_group *sub, struct pg_awaited *a)
{
    bool mine = kept.nranks > 0 && kept.ctx == sub->ctx;

    if (mine) {
        *a = kept;
    }
    kept.nranks = 0;
    return mine;
}

/* The tag of a collective's message holds its signature (pg_coll_tag): its kind. */
static unsigned tag_kind(int tag)
{
    return (unsigned)tag >> 8 & 15u;
}

/* One message of a collective that runs without a schedule (pg_coll_direct.c): a receive
 * that has not matched, or a rendezvous send its receiver has not taken. */
static bool message_awaited(const struct pg_req *req, struct pg_awaited *a)
{
    bool recv = req->kind == PG_REQ_RECV;
    unsigned kind = tag_kind(req->match_tag);

    if ((req->kind != PG_REQ_SEND && !recv) || !pg_ctx_is_coll(req->ctx) || req->match_src < 0) {
        return false;
    }
    snprintf(a->what, sizeof(a->what), "%s", pg_coll_kind_name(kind));
    a->g = req->g;
    a->seq = (uint32_t)req->match_tag >> PG_COLL_SIG_BITS;
    /* A group's collective context is its context id shifted left, plus one. */
    pg_awaited_ranks(a, req->ctx >> 1, &req->match_src, 1);
    snprintf(a->how, sizeof(a->how), "%s: a %s of %s%zu B %s rank %d", pg_direct_algo(kind),
             recv ? "receive" : "send", recv ? "up to " : "", recv ? req->cap : req->len,
             recv ? "from" : "to", req->match_src);
    return true;
}

bool pg_req_awaited(const struct pg_req *req, struct pg_awaited *a)
{
    a->g = NULL; /* known only to the accounts of the collectives of a group */
    a->device = false;
    if (pg_dev_awaited(req, a)) {
        return true;
    }
    if (req->kind == PG_REQ_COLL) {
        return pg_sched_awaited(req, a);
    }
    return message_awaited(req, a);
}
