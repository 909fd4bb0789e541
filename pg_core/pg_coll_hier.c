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
 * node's ranks, one leader per node) are created by their members at g's first
 * hierarchical collective (pg_hier_prepare): a group that never runs one costs nothing.
 */
#include "config.h"

#include "boot.h"
#include "mps_config.h"
#include "mps_log.h"
#include "pg_coll_hier.h"
#include "pg_group_sub.h"
#include "pg_internal.h"
#include "pgc_status.h"

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
    free(members);
    h->made = rc == PGC_OK;
    if (rc == PGC_OK) {
        MPS_INFO("group of %d ranks on %d nodes: node-aware collectives (this node %d, %d "
                 "ranks)",
                 g->size, h->nnodes, h->my_node, n);
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
