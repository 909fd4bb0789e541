/*
 * pg_coll_hier.c - the node layout of a group and its sub-groups, for the node-aware
 * collectives (pg_coll_hier_<kind>.c).
 *
 * Which node a rank is on comes from the bootstrap's node name of every world rank (the
 * name the transport uses to pick shared memory or the network), never from whether the
 * rings reach a peer: the shm provider also reaches processes of another network namespace.
 * MPISHIM_NODE_SPLIT=k, a test knob, makes every k ranks of a real node (by local rank) a
 * node of their own, so that one machine runs the hierarchical algorithms in make check.
 *
 * The layout is computed without a message and cached on the group; the world's is
 * computed from the names once and every other group's from it. The two sub-groups (my
 * node's ranks, one leader per node) are created when g is (pg_hier_prepare, called by
 * pg_init and every group creation), only where g runs node-aware. Not later, at g's first
 * node-aware collective: creating them is collective and blocks, and a non-blocking
 * collective must not wait for its peers to call it (a rank may start MPI_Ibarrier and then
 * block in a receive that another rank sends before its own MPI_Ibarrier).
 *
 * Below: the chains that run the non-blocking forms' stages (pg_coll_hier.h).
 */
#include "config.h"

#include "boot.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pg_coll_hier.h"
#include "pg_group_sub.h"
#include "pg_internal.h"
#include "pgc_status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* pg_group_create_sub's tags for the two sub-groups: negative, so no MPI tag (>= 0) of a
 * concurrent MPI_Comm_create_group on the same communicator can equal them. */
#define TAG_NODE (-2)
#define TAG_LEADERS (-3)

/* Node id of every world rank: the node names, each cut into groups of k local ranks when
 * MPISHIM_NODE_SPLIT=k; ids are numbered by first appearance in world rank order. */
static int world_ids(int *wid)
{
    const char *names = pg_w.boot ? boot_nodes(pg_w.boot) : NULL;
    long k = mps_config_int(MPS_CFG_NODE_SPLIT);
    int n = pg_w.size, nnames = 0, nkeys = 0;
    int *first = malloc(sizeof(int) * (size_t)n * 4); /* name -> its first world rank */
    int *cnt, *kname, *ksub;

    if (!names || !first) {
        free(first);
        return mps_error(PGC_ERR_NOMEM, "no node names for a node layout of %d ranks", n);
    }
    cnt = first + n;
    kname = cnt + n;
    ksub = kname + n;
    for (int w = 0; w < n; w++) {
        const char *me = names + (size_t)w * BOOT_NODE_MAX;
        int j = 0, t = 0, sub;

        while (j < nnames &&
               strncmp(names + (size_t)first[j] * BOOT_NODE_MAX, me, BOOT_NODE_MAX) != 0) {
            j++;
        }
        if (j == nnames) {
            first[nnames] = w;
            cnt[nnames++] = 0;
        }
        sub = k > 0 ? (int)(cnt[j]++ / k) : 0;
        while (t < nkeys && (kname[t] != j || ksub[t] != sub)) {
            t++;
        }
        if (t == nkeys) {
            kname[nkeys] = j;
            ksub[nkeys++] = sub;
        }
        wid[w] = t;
    }
    free(first);
    return PGC_OK;
}

/* Fills h from the node id of each member (wid, indexed by group rank). */
static int number_nodes(struct pg_group *g, struct pg_hier *h, const int *wid)
{
    int *map = malloc(sizeof(int) * (size_t)pg_w.size);

    if (!map) {
        return mps_error(PGC_ERR_NOMEM, "no memory for the node layout of %d ranks", g->size);
    }
    for (int i = 0; i < pg_w.size; i++) {
        map[i] = -1;
    }
    h->blocked = true;
    for (int i = 0; i < g->size; i++) {
        int *m = &map[wid[i]];

        if (*m < 0) {
            *m = h->nnodes++;
            h->leader[*m] = i;
            h->count[*m] = 0;
        }
        h->blocked = h->blocked && (i == 0 || *m >= h->node_of[i - 1]);
        h->node_of[i] = *m;
        h->pos[i] = h->count[*m]++;
    }
    free(map);
    h->my_node = g->rank >= 0 ? h->node_of[g->rank] : -1;
    h->on = h->nnodes >= 2 && h->nnodes < g->size && mps_config_int(MPS_CFG_COLL_HIER);
    return PGC_OK;
}

static int compute(struct pg_group *g, struct pg_hier *h)
{
    struct pg_hier *wh = NULL;
    int *wid = malloc(sizeof(int) * (size_t)g->size); /* group rank -> world node id */
    int rc;

    if (g == pg_w.world) {
        rc = wid ? world_ids(wid) : mps_error(PGC_ERR_NOMEM, "no memory for a node layout");
    } else {
        wh = pg_w.world ? pg_hier_layout(pg_w.world) : NULL;
        rc = wh && wid ? PGC_OK : mps_error(PGC_ERR_NOMEM, "no node layout of the world");
        for (int i = 0; rc == PGC_OK && i < g->size; i++) {
            wid[i] = wh->node_of[g->ranks[i]];
        }
    }
    if (rc == PGC_OK) {
        rc = number_nodes(g, h, wid);
    }
    free(wid);
    return rc;
}

struct pg_hier *pg_hier_layout(struct pg_group *g)
{
    struct pg_hier *h;

    PG_LOCK(); /* the world's layout is shared by every thread's groups */
    h = g->hier;
    if (!h) {
        h = calloc(1, sizeof(*h) + sizeof(int) * 4 * (size_t)g->size);
        if (h) {
            h->node_of = (int *)(h + 1);
            h->pos = h->node_of + g->size;
            h->count = h->pos + g->size;
            h->leader = h->count + g->size;
            mps_list_init(&h->waiting);
        }
        if (h && compute(g, h) != PGC_OK) {
            free(h);
            h = NULL;
        }
        __atomic_store_n(&g->hier, h, __ATOMIC_RELEASE);
    }
    PG_UNLOCK();
    return h;
}

int pg_hier_prepare(struct pg_group *g)
{
    struct pg_hier *h = pg_hier_on(g) ? g->hier : NULL;
    int *members;
    int n = 0, rc = PGC_OK;

    if (!h || h->made) {
        return PGC_OK;
    }
    members = malloc(sizeof(int) * (size_t)g->size);
    if (!members) {
        return mps_error(PGC_ERR_NOMEM, "no memory for the node groups of %d ranks", g->size);
    }
    for (int i = 0; i < g->size; i++) {
        if (h->node_of[i] == h->my_node) {
            members[n++] = i;
        }
    }
    if (n > 1) {
        rc = pg_group_create_sub(g, members, n, TAG_NODE, &h->node);
    }
    if (rc == PGC_OK && h->leader[h->my_node] == g->rank) {
        rc = pg_group_create_sub(g, h->leader, h->nnodes, TAG_LEADERS, &h->leaders);
    }
    /* Their steps run inside g's collectives: the roll call asks about g's too. */
    if (h->node) {
        h->node->parent = g;
    }
    if (h->leaders) {
        h->leaders->parent = g;
    }
    free(members);
    h->made = rc == PGC_OK;
    if (rc == PGC_OK) {
        MPS_INFO("group of %d ranks on %d nodes: node-aware collectives (this node %d, %d "
                 "ranks)",
                 g->size, h->nnodes, h->my_node, n);
    }
    return rc;
}

int pg_hier_created(int rc, struct pg_group **g)
{
    if (rc == PGC_OK && *g) {
        rc = pg_hier_prepare(*g);
        if (rc != PGC_OK) {
            pg_group_release(*g);
            *g = NULL;
        }
    }
    return rc;
}

void pg_hier_free(struct pg_group *g)
{
    struct pg_hier *h = g->hier;

    g->hier = NULL;
    if (h) {
        pg_group_release(h->node);
        pg_group_release(h->leaders);
        free(h);
    }
}

/* ---- the steps of the blocking forms (pg_coll_hier.h) ---- */

int pg_hier_begin(struct pg_group *g, enum pg_coll_kind kind, const struct pg_op_spec *op,
                  int root)
{
    int rc = pg_hier_prepare(g);

    if (rc == PGC_OK) {
        PG_LOCK();
        pg_coll_tag(g, pg_coll_sig(kind, op, root));
        PG_UNLOCK();
    }
    return rc == PGC_OK && g->poison_next ? PGC_ERR_BUFFER : rc;
}

bool pg_hier_step_in(struct pg_group *sub, int rc)
{
    if (rc != PGC_OK && pg_hier_goes_on(rc)) {
        pg_coll_stand_in(sub, rc);
    }
    return pg_hier_goes_on(rc);
}

/* ---- what a step waits for, in ranks of the collective's group (timeouts only) ---- */

/* Where a step on sub (the node's or the leaders' group of g) runs. */
static const char *step_place(const struct pg_group *g, const struct pg_group *sub)
{
    return sub == g->hier->node ? "within this node" : "among the nodes' leaders";
}

/* "that group's ranks 0 to 3 are ranks 4, 5, 6 and 7 here": which ranks of g sub holds
 * (sub keeps g's order: a node's ranks in rank order, the leaders in node order, each
 * node's lowest rank). map[i] gets the rank of g that is rank i of sub. */
static void members_in(struct pg_group *g, const struct pg_group *sub, int *map, char *buf,
                       size_t len)
{
    char mine[128];

    for (int i = 0; i < sub->size; i++) {
        map[i] = pg_group_rank_of(g, sub->ranks[i]);
    }
    pg_ranks_str(map, sub->size, mine, sizeof(mine));
    snprintf(buf, len, "that group's ranks 0 to %d are %s here", sub->size - 1, mine);
}

/* The one account of a node-aware collective's step that did not complete, for both forms:
 * a, the step's own account of whom it waits for (ranks of sub, the step's group), becomes
 * one in ranks of g. a->who then names the ranks of g it waits for (where it named ranks:
 * a->nranks > 0), and a->how says which step that is, what it was doing and which ranks of
 * g its group holds ("a reduce within this node: step 1 of 1 of the binomial tree: a
 * receive of 8 B from rank 1; that group's ranks 0 to 1 are ranks 4 and 5 here"). False
 * without memory (a is then as it was). */
static __attribute__((noinline, cold)) bool awaited_in(struct pg_group *g,
                                                       const struct pg_group *sub,
                                                       struct pg_awaited *a)
{
    char how[sizeof(a->how)], members[192];
    int *map = malloc(sizeof(int) * (size_t)sub->size);
    int shown = a->nranks < PG_AWAITED_SHOWN + 1 ? a->nranks : PG_AWAITED_SHOWN + 1;

    if (!map) {
        return false;
    }
    members_in(g, sub, map, members, sizeof(members));
    /* Sub's order is g's, so the ranks shown stay the first ones, in increasing order. */
    for (int i = 0; i < shown; i++) {
        a->ranks[i] = a->ranks[i] >= 0 && a->ranks[i] < sub->size ? map[a->ranks[i]] : -1;
    }
    free(map);
    if (a->nranks > 0) {
        pg_awaited_ranks(a, g->ctx, a->ranks, a->nranks);
    }
    snprintf(how, sizeof(how), "%s", a->how);
    snprintf(a->how, sizeof(a->how), "a%s %s %s: %s; %s", a->what[0] && strchr("aeiou", a->what[0]) ? "n" : "",
             a->what, step_place(g, sub), how, members);
    return true;
}

/* A step on sub timed out, its message naming ranks of sub: the message names the ranks of
 * g it waited for instead (from the account its wait kept), or, where none was kept, says
 * which ranks of g sub's ranks are. */
static __attribute__((noinline, cold)) int step_timed_out(struct pg_group *g,
                                                          struct pg_group *sub, int rc)
{
    char why[512], members[192];
    struct pg_awaited a;
    int *map;

    if (pg_awaited_kept(sub, &a) && awaited_in(g, sub, &a)) {
        return mps_error(rc, "%s: timed out after %g s waiting for %s (a step of a node-aware "
                         "collective: %s)", a.what, pg_w.timeout, a.who, a.how);
    }
    snprintf(why, sizeof(why), "%s", mps_last_error());
    map = malloc(sizeof(int) * (size_t)sub->size);
    if (!map) {
        return rc;
    }
    members_in(g, sub, map, members, sizeof(members));
    free(map);
    return mps_error(rc, "%s (a step of a node-aware collective %s; %s)", why,
                     step_place(g, sub), members);
}

int pg_hier_step_out(struct pg_group *g, struct pg_group *sub, int rc, int step_rc)
{
    int got = pg_coll_poison_pending() ? pg_coll_poison_claim(sub) : PGC_OK;

    if (rc != PGC_OK) {
        pg_coll_stand_in_end(sub);
        return rc;
    }
    if (mps_unlikely(step_rc == PGC_ERR_TIMEOUT)) {
        return step_timed_out(g, sub, step_rc);
    }
    return step_rc != PGC_OK ? step_rc : got;
}

/* ---- the chains of the non-blocking forms ---- */

static void unqueue(struct pg_hier_op *o)
{
    if (o->queued) {
        mps_list_remove(&o->link);
        o->queued = false;
        __atomic_store_n(&o->h->nwaiting, o->h->nwaiting - 1, __ATOMIC_RELEASE);
    }
}

/* Starts o's stages while its stage in flight has completed and it is the oldest chain with
 * stages to start; *done once its last stage has completed. */
static int advance_chain(struct pg_hier_op *o, bool *done)
{
    int rc = PGC_OK;

    while (rc == PGC_OK) {
        if (o->busy && !pg_req_is_done(&o->sub)) {
            break;
        }
        if (o->busy) {
            o->busy = false;
            rc = o->sub.status;
        } else if (o->next == o->nstages) {
            *done = true;
            break;
        } else if (o->h->waiting.next != &o->link) {
            break; /* an older chain has a stage to start first */
        } else {
            pg_req_init(&o->sub, PG_REQ_COLL);
            o->on = NULL;
            rc = o->stage(o, o->next++, &o->busy);
            if (o->next == o->nstages) {
                unqueue(o);
            }
        }
    }
    return rc;
}

/* The schedule's poll step (under the world lock): the first call takes o's place in the
 * order of g's chains. */
static int chain_poll(void *arg, bool *done)
{
    struct pg_hier_op *o = arg;
    int rc;

    *done = false;
    if (o->next == 0 && !o->queued) {
        mps_list_push_back(&o->h->waiting, &o->link);
        o->queued = true;
        __atomic_store_n(&o->h->nwaiting, o->h->nwaiting + 1, __ATOMIC_RELEASE);
    }
    rc = advance_chain(o, done);
    if (rc != PGC_OK) {
        unqueue(o); /* the chains after it must not wait for its stages */
        *done = true;
    }
    return rc;
}

/* The account of the stage in flight on o->on: its collective's, or for the reduce's
 * hand-over to the root, its receive's. */
static bool stage_awaited(struct pg_hier_op *o, struct pg_awaited *a)
{
    struct pg_req *r = &o->sub;

    if (pg_req_awaited(r, a)) {
        return true;
    }
    if (r->kind != PG_REQ_RECV || r->match_src < 0 || r->match_src >= o->on->size) {
        return false;
    }
    snprintf(a->what, sizeof(a->what), "%s", "receive");
    pg_awaited_ranks(a, o->on->ctx, &r->match_src, 1);
    snprintf(a->how, sizeof(a->how), "the result, %zu B from rank %d", r->cap, r->match_src);
    return true;
}

/* What a chain waits for, when a wait for it timed out: the stage in flight's own account,
 * in ranks of the collective's group (awaited_in, as the blocking form's). */
static bool chain_desc(void *arg, struct pg_awaited *a)
{
    struct pg_hier_op *o = arg;
    struct pg_awaited sa;

    if (!o->busy) {
        snprintf(a->who, sizeof(a->who),
                 "the group's earlier non-blocking node-aware collectives");
        snprintf(a->how, sizeof(a->how),
                 "stage %d of %d of the node-aware %s, not yet started: they start theirs first",
                 o->next + 1, o->nstages, o->name);
        return true;
    }
    if (o->on && stage_awaited(o, &sa) && awaited_in(o->g, o->on, &sa)) {
        snprintf(a->who, sizeof(a->who), "%s", sa.who);
        a->ctx = sa.ctx;
        a->nranks = sa.nranks;
        memcpy(a->ranks, sa.ranks, sizeof(a->ranks));
        snprintf(a->how, sizeof(a->how), "stage %d of %d of the node-aware %s, %s", o->next,
                 o->nstages, o->name, sa.how);
        return true;
    }
    snprintf(a->who, sizeof(a->who), "%s",
             o->on == o->h->node ? "ranks of this node" : "the other nodes' leaders");
    snprintf(a->how, sizeof(a->how), "stage %d of %d of the node-aware %s: its step %s", o->next,
             o->nstages, o->name, o->on ? step_place(o->g, o->on) : "within this node");
    return true;
}

struct pg_sched *pg_hier_sched_new(struct pg_group *g, const struct pg_op_spec *op,
                                   struct pg_req *req, enum pg_coll_kind kind, int root,
                                   int *rc)
{
    struct pg_sched *s = NULL;

    *rc = pg_hier_prepare(g);
    if (*rc == PGC_OK && !(s = pg_sched_new(g, op, req))) {
        *rc = PGC_ERR_NOMEM;
    }
    if (s) {
        pg_sched_sig(s, kind, op, root);
    }
    return s;
}

struct pg_hier_op *pg_hier_op_new(struct pg_sched *s, pg_hier_stage_fn stage, int nstages,
                                  const char *name)
{
    struct pg_hier_op *o = pg_sched_alloc(s, sizeof(*o));

    if (o) {
        memset(o, 0, sizeof(*o));
        o->g = s->g;
        o->h = s->g->hier;
        o->stage = stage;
        o->nstages = nstages;
        o->name = name;
        mps_list_init(&o->link);
    }
    return o;
}

int pg_hier_op_launch(struct pg_sched *s, struct pg_hier_op *o)
{
    pg_sched_algo(s, "node-aware stages");
    if (o) {
        pg_sched_poll(s, chain_poll, o);
        pg_sched_poll_desc(s, chain_desc);
    }
    return pg_sched_launch(s);
}
