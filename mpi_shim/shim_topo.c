/*
 * shim_topo.c - process topologies: Cartesian grids, graphs and distributed graphs (MPI-3.1
 * chapter 7). A topology communicator is a new group (the first ranks of the parent for
 * grids and graphs, a duplicate for distributed graphs) with a struct shim_topo attached.
 * Reordering is never done (allowed by the standard: reorder is a hint).
 */
#include "config.h"

#include "mps_log.h"
#include "pgc_status.h"
#include "shim_topo.h"

#include <stdlib.h>
#include <string.h>

/* A topology with room for nints ints in data[], zeroed. */
static struct shim_topo *topo_new(int kind, size_t nints)
{
    struct shim_topo *t = calloc(1, sizeof(*t) + sizeof(int) * (nints ? nints : 1));

    if (t) {
        t->kind = kind;
    }
    return t;
}

static int *rebase(const struct shim_topo *from, struct shim_topo *to, const int *p)
{
    return p ? to->data + (p - from->data) : NULL;
}

/* The ints in data[] are laid out by the constructors; the copy keeps the layout. */
static size_t topo_nints(const struct shim_topo *t)
{
    if (t->kind == MPI_CART) {
        return 3 * (size_t)t->ndims;
    }
    if (t->kind == MPI_GRAPH) {
        return (size_t)t->nnodes + (size_t)t->nedges;
    }
    return 2 * ((size_t)t->indeg + (size_t)t->outdeg);
}

struct shim_topo *shim_topo_dup(const struct shim_topo *t)
{
    struct shim_topo *n;
    size_t nints;

    if (!t) {
        return NULL;
    }
    nints = topo_nints(t);
    n = topo_new(t->kind, nints);
    if (!n) {
        return NULL;
    }
    memcpy(n, t, sizeof(*t) + sizeof(int) * nints);
    n->dims = rebase(t, n, t->dims);
    n->periods = rebase(t, n, t->periods);
    n->coords = rebase(t, n, t->coords);
    n->index = rebase(t, n, t->index);
    n->edges = rebase(t, n, t->edges);
    n->in = rebase(t, n, t->in);
    n->inw = rebase(t, n, t->inw);
    n->out = rebase(t, n, t->out);
    n->outw = rebase(t, n, t->outw);
    return n;
}

int shim_topo_copy(MPI_Comm oldcomm, MPI_Comm newcomm)
{
    struct shim_comm *o, *n;

    if (shim_comm_get(oldcomm, &o) != MPI_SUCCESS || shim_comm_get(newcomm, &n) != MPI_SUCCESS ||
        !o->topo) {
        return MPI_SUCCESS;
    }
    free(n->topo);
    n->topo = shim_topo_dup(o->topo);
    return n->topo ? MPI_SUCCESS : MPI_ERR_NO_MEM;
}

/* topo_enter's kind for a call that builds on the communicator: an intracommunicator. */
#define TOPO_BUILD (-1)

/* Initialized and a valid comm; with kind > 0 also a topology of that kind, with TOPO_BUILD
 * an intracommunicator (MPI-3.1 7.5 defines topologies on those only). */
static int topo_enter(const char *fn, MPI_Comm comm, int kind, struct shim_comm **c)
{
    int rc = shim_check_init(fn);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (shim_comm_get(comm, c) != MPI_SUCCESS) {
        return shim_error(comm, fn, MPI_ERR_COMM, "invalid communicator 0x%x", (unsigned)comm);
    }
    if (kind == TOPO_BUILD && (*c)->inter) {
        return shim_error(comm, fn, MPI_ERR_COMM, "not defined on an intercommunicator");
    }
    if (kind > 0 && (!(*c)->topo || (*c)->topo->kind != kind)) {
        return shim_error(comm, fn, MPI_ERR_TOPOLOGY, "the communicator has no %s topology",
                          kind == MPI_CART    ? "Cartesian"
                          : kind == MPI_GRAPH ? "graph"
                                              : "distributed graph");
    }
    return MPI_SUCCESS;
}

/* Wraps g (may be NULL: not a member) in a communicator carrying t; t is consumed. */
static int wrap_topo(const char *fn, struct shim_comm *parent, MPI_Comm comm, struct pg_group *g,
                     struct shim_topo *t, MPI_Comm *out)
{
    struct shim_comm *nc;

    *out = MPI_COMM_NULL;
    if (!g) {
        free(t);
        return MPI_SUCCESS;
    }
    *out = shim_comm_add(g, parent->errh);
    if (*out == MPI_COMM_NULL) {
        pg_group_release(g);
        free(t);
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a communicator");
    }
    shim_comm_get(*out, &nc);
    nc->topo = t;
    return MPI_SUCCESS;
}

/* A group of the first n ranks of parent (collective over parent; NULL for the others). */
static int first_ranks_group(struct pg_group *parent, int n, struct pg_group **g)
{
    int *list = malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    int rc;

    if (!list) {
        return mps_error(PGC_ERR_NOMEM, "no memory for a list of %d ranks", n);
    }
    for (int i = 0; i < n; i++) {
        list[i] = i;
    }
    rc = pg_group_create(parent, list, n, g);
    free(list);
    return rc;
}

/* ---- Cartesian grids ---- */

static void cart_coords_of(const struct shim_topo *t, int rank, int *coords)
{
    for (int d = t->ndims - 1; d >= 0; d--) {
        coords[d] = rank % t->dims[d];
        rank /= t->dims[d];
    }
}

/* The rank at coords, wrapping periodic dimensions; -1 when off a non-periodic edge. */
static int cart_rank_of(const struct shim_topo *t, const int *coords)
{
    int rank = 0;

    for (int d = 0; d < t->ndims; d++) {
        int x = coords[d];
        if (t->periods[d]) {
            x = ((x % t->dims[d]) + t->dims[d]) % t->dims[d];
        } else if (x < 0 || x >= t->dims[d]) {
            return -1;
        }
        rank = rank * t->dims[d] + x;
    }
    return rank;
}

static struct shim_topo *cart_new(int ndims, const int *dims, const int *periods)
{
    struct shim_topo *t = topo_new(MPI_CART, 3 * (size_t)ndims);

    if (t) {
        t->ndims = ndims;
        t->dims = t->data;
        t->periods = t->data + ndims;
        t->coords = t->data + 2 * ndims;
        for (int d = 0; d < ndims; d++) {
            t->dims[d] = dims[d];
            t->periods[d] = periods[d] != 0;
        }
    }
    return t;
}

/* Checks the grid shape; *nnodes gets the product of dims. */
static int cart_check(const char *fn, MPI_Comm comm, const struct shim_comm *c, int ndims,
                      const int *dims, int *nnodes)
{
    long n = 1;

    if (ndims < 0 || ndims > 64) {
        return shim_error(comm, fn, MPI_ERR_DIMS, "ndims %d is outside 0..64", ndims);
    }
    for (int d = 0; d < ndims; d++) {
        if (dims[d] <= 0) {
            return shim_error(comm, fn, MPI_ERR_DIMS, "dims[%d] = %d is not positive", d, dims[d]);
        }
        n *= dims[d];
        if (n > c->g->size) {
            break;
        }
    }
    if (n > c->g->size) {
        return shim_error(comm, fn, MPI_ERR_TOPOLOGY,
                          "the grid needs more ranks than the communicator has (%d)", c->g->size);
    }
    *nnodes = (int)n;
    return MPI_SUCCESS;
}

#pragma weak MPI_Cart_create = PMPI_Cart_create
int PMPI_Cart_create(MPI_Comm comm_old, int ndims, const int dims[], const int periods[],
                     int reorder, MPI_Comm *comm_cart)
{
    struct shim_comm *c;
    struct shim_topo *t;
    struct pg_group *g = NULL;
    int nnodes = 0, rc = topo_enter(SHIM_FN, comm_old, TOPO_BUILD, &c);

    (void)reorder;
    if (rc == MPI_SUCCESS) {
        rc = cart_check(SHIM_FN, comm_old, c, ndims, dims, &nnodes);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    t = cart_new(ndims, dims, periods);
    if (!t) {
        return shim_error(comm_old, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a topology");
    }
    rc = first_ranks_group(c->g, nnodes, &g);
    if (rc != PGC_OK) {
        free(t);
        return shim_error_pg(comm_old, SHIM_FN, rc);
    }
    if (g) {
        cart_coords_of(t, g->rank, t->coords);
    }
    return wrap_topo(SHIM_FN, c, comm_old, g, t, comm_cart);
}

#pragma weak MPI_Cart_map = PMPI_Cart_map
int PMPI_Cart_map(MPI_Comm comm, int ndims, const int dims[], const int periods[], int *newrank)
{
    struct shim_comm *c;
    int nnodes = 0, rc = topo_enter(SHIM_FN, comm, TOPO_BUILD, &c);

    (void)periods;
    if (rc == MPI_SUCCESS) {
        rc = cart_check(SHIM_FN, comm, c, ndims, dims, &nnodes);
    }
    if (rc == MPI_SUCCESS) {
        *newrank = c->g->rank < nnodes ? c->g->rank : MPI_UNDEFINED;
    }
    return rc;
}

#pragma weak MPI_Cartdim_get = PMPI_Cartdim_get
int PMPI_Cartdim_get(MPI_Comm comm, int *ndims)
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, MPI_CART, &c);

    if (rc == MPI_SUCCESS) {
        *ndims = c->topo->ndims;
    }
    return rc;
}

#pragma weak MPI_Cart_get = PMPI_Cart_get
int PMPI_Cart_get(MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[])
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, MPI_CART, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    for (int d = 0; d < maxdims && d < c->topo->ndims; d++) {
        dims[d] = c->topo->dims[d];
        periods[d] = c->topo->periods[d];
        coords[d] = c->topo->coords[d];
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Cart_coords = PMPI_Cart_coords
int PMPI_Cart_coords(MPI_Comm comm, int rank, int maxdims, int coords[])
{
    struct shim_comm *c;
    int tmp[64];
    int rc = topo_enter(SHIM_FN, comm, MPI_CART, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (rank < 0 || rank >= c->g->size) {
        return shim_error(comm, SHIM_FN, MPI_ERR_RANK, "rank %d is outside the grid of %d", rank,
                          c->g->size);
    }
    if (maxdims < c->topo->ndims || c->topo->ndims > 64) {
        return shim_error(comm, SHIM_FN, MPI_ERR_ARG, "maxdims %d < ndims %d", maxdims,
                          c->topo->ndims);
    }
    cart_coords_of(c->topo, rank, tmp);
    memcpy(coords, tmp, sizeof(int) * (size_t)c->topo->ndims);
    return MPI_SUCCESS;
}

#pragma weak MPI_Cart_rank = PMPI_Cart_rank
int PMPI_Cart_rank(MPI_Comm comm, const int coords[], int *rank)
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, MPI_CART, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *rank = cart_rank_of(c->topo, coords);
    if (*rank < 0) {
        for (int d = 0; d < c->topo->ndims; d++) {
            if (!c->topo->periods[d] && (coords[d] < 0 || coords[d] >= c->topo->dims[d])) {
                return shim_error(comm, SHIM_FN, MPI_ERR_RANK,
                                  "coordinate %d of dimension %d is outside 0..%d (not periodic)",
                                  coords[d], d, c->topo->dims[d] - 1);
            }
        }
    }
    return MPI_SUCCESS;
}

/* The rank disp steps from mine along dimension dir, or MPI_PROC_NULL off an open edge. */
static int cart_step(const struct shim_topo *t, int dir, int disp)
{
    int coords[64];
    int r;

    memcpy(coords, t->coords, sizeof(int) * (size_t)t->ndims);
    coords[dir] += disp;
    r = cart_rank_of(t, coords);
    return r < 0 ? MPI_PROC_NULL : r;
}

#pragma weak MPI_Cart_shift = PMPI_Cart_shift
int PMPI_Cart_shift(MPI_Comm comm, int direction, int disp, int *rank_source, int *rank_dest)
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, MPI_CART, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (direction < 0 || direction >= c->topo->ndims) {
        return shim_error(comm, SHIM_FN, MPI_ERR_ARG, "direction %d is outside 0..%d", direction,
                          c->topo->ndims - 1);
    }
    *rank_source = cart_step(c->topo, direction, -disp);
    *rank_dest = cart_step(c->topo, direction, disp);
    return MPI_SUCCESS;
}

/* The sub-grid of the kept dimensions; color and key of my rank for the split. */
static struct shim_topo *cart_sub_topo(const struct shim_topo *t, const int *remain, int *color,
                                       int *key)
{
    int dims[64], periods[64];
    int n = 0;

    *color = 0;
    *key = 0;
    for (int d = 0; d < t->ndims; d++) {
        if (remain[d]) {
            dims[n] = t->dims[d];
            periods[n++] = t->periods[d];
            *key = *key * t->dims[d] + t->coords[d];
        } else {
            *color = *color * t->dims[d] + t->coords[d];
        }
    }
    return cart_new(n, dims, periods);
}

#pragma weak MPI_Cart_sub = PMPI_Cart_sub
int PMPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
    struct shim_comm *c;
    struct shim_topo *t;
    struct pg_group *g = NULL;
    int color, key, rc = topo_enter(SHIM_FN, comm, MPI_CART, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    t = cart_sub_topo(c->topo, remain_dims, &color, &key);
    if (!t) {
        return shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a topology");
    }
    rc = pg_group_split(c->g, color, key, &g);
    if (rc != PGC_OK) {
        free(t);
        return shim_error_pg(comm, SHIM_FN, rc);
    }
    cart_coords_of(t, g->rank, t->coords);
    return wrap_topo(SHIM_FN, c, comm, g, t, newcomm);
}

/* ---- MPI_Dims_create: the most balanced factorization ---- */

struct dims_search {
    int nfree;
    int cur[64], best[64];
    int best_spread; /* largest - smallest factor of the best one found, or -1 */
    int ndiv;
    int div[1600]; /* the divisors of the number to factor, descending (at most 1536) */
};

/* The divisors of n in descending order (trial division up to sqrt(n)). */
static void dims_divisors(struct dims_search *s, int n)
{
    int small[800], nsmall = 0;

    s->ndiv = 0;
    for (int d = 1; (long)d * d <= n; d++) {
        if (n % d == 0) {
            small[nsmall++] = d;
        }
    }
    for (int i = 0; i < nsmall; i++) {
        s->div[s->ndiv++] = n / small[i];
    }
    for (int i = nsmall - 1; i >= 0; i--) {
        if (small[i] != n / small[i]) {
            s->div[s->ndiv++] = small[i];
        }
    }
}

/* Whether the full sequence in s->cur, whose spread is given, is more balanced than the
 * best so far: its largest and smallest factors are closer, or as close and its smallest
 * factor larger, then its second smallest, and so on (13x9x8x6 before 13x12x6x6, 58x36x33
 * before 54x44x29). MPI-3.1 section 7.5.2 asks only for dimensions "as close to each other
 * as possible"; this order gives MPICH's answers (its test topo/dims5 lists 75,000). */
static bool dims_better(const struct dims_search *s, int spread)
{
    if (s->best_spread < 0 || spread != s->best_spread) {
        return s->best_spread < 0 || spread < s->best_spread;
    }
    for (int k = s->nfree - 1; k >= 0; k--) {
        if (s->cur[k] != s->best[k]) {
            return s->cur[k] > s->best[k];
        }
    }
    return false;
}

/* Tries every non-increasing sequence of factors of rest for positions pos..nfree-1,
 * keeping the most balanced one (dims_better). */
static void dims_search(struct dims_search *s, int pos, int rest, int maxf)
{
    if (pos == s->nfree - 1) {
        int spread = pos == 0 ? 0 : s->cur[0] - rest;
        if (rest > maxf) {
            return;
        }
        s->cur[pos] = rest;
        if (dims_better(s, spread)) {
            memcpy(s->best, s->cur, sizeof(int) * (size_t)s->nfree);
            s->best_spread = spread;
        }
        return;
    }
    for (int i = 0; i < s->ndiv; i++) {
        int f = s->div[i];
        long p = 1;
        if (f > maxf || rest % f != 0) {
            continue;
        }
        /* The later factors are at most f, so f^(factors left) must reach rest. */
        for (int k = pos; k < s->nfree && p < rest; k++) {
            p *= f;
        }
        if (p < rest) {
            break;
        }
        s->cur[pos] = f;
        dims_search(s, pos + 1, rest / f, f);
    }
}

/* Checks the arguments; *rest gets nnodes over the product of the fixed entries. */
static int dims_check(const char *fn, int nnodes, int ndims, const int *dims, int *nfree, int *rest)
{
    long fixed = 1;

    if (nnodes <= 0 || ndims < 0 || ndims > 64) {
        return shim_error(MPI_COMM_WORLD, fn, nnodes <= 0 ? MPI_ERR_ARG : MPI_ERR_DIMS,
                          "nnodes %d, ndims %d (need nnodes > 0, 0 <= ndims <= 64)", nnodes, ndims);
    }
    *nfree = 0;
    for (int d = 0; d < ndims; d++) {
        if (dims[d] < 0) {
            return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_DIMS, "dims[%d] = %d is negative", d,
                              dims[d]);
        }
        if (dims[d] == 0) {
            (*nfree)++;
        } else if ((fixed *= dims[d]) > nnodes) {
            break;
        }
    }
    if (fixed > nnodes || nnodes % fixed != 0 || (*nfree == 0 && fixed != nnodes)) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_DIMS,
                          "%d nodes cannot be divided by the fixed dimensions", nnodes);
    }
    *rest = (int)(nnodes / fixed);
    return MPI_SUCCESS;
}

#pragma weak MPI_Dims_create = PMPI_Dims_create
int PMPI_Dims_create(int nnodes, int ndims, int dims[])
{
    struct dims_search s = {.best_spread = -1};
    int rest, k = 0;
    int rc = shim_check_init(SHIM_FN);

    if (rc == MPI_SUCCESS) {
        rc = dims_check(SHIM_FN, nnodes, ndims, dims, &s.nfree, &rest);
    }
    if (rc != MPI_SUCCESS || s.nfree == 0) {
        return rc;
    }
    dims_divisors(&s, rest);
    dims_search(&s, 0, rest, rest);
    for (int d = 0; d < ndims; d++) {
        if (dims[d] == 0) {
            dims[d] = s.best[k++];
        }
    }
    return MPI_SUCCESS;
}

/* ---- Graphs (MPI_Graph_create) ---- */

static int graph_check(const char *fn, MPI_Comm comm, const struct shim_comm *c, int nnodes,
                       const int *index, const int *edges)
{
    if (nnodes < 0 || nnodes > c->g->size) {
        return shim_error(comm, fn, MPI_ERR_ARG, "nnodes %d is outside 0..%d", nnodes, c->g->size);
    }
    for (int i = 0; i < nnodes; i++) {
        if (index[i] < (i ? index[i - 1] : 0)) {
            return shim_error(comm, fn, MPI_ERR_ARG, "index[%d] = %d decreases", i, index[i]);
        }
    }
    for (int e = 0; nnodes > 0 && e < index[nnodes - 1]; e++) {
        if (edges[e] < 0 || edges[e] >= nnodes) {
            return shim_error(comm, fn, MPI_ERR_ARG, "edge %d goes to %d, outside 0..%d", e,
                              edges[e], nnodes - 1);
        }
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Graph_create = PMPI_Graph_create
int PMPI_Graph_create(MPI_Comm comm_old, int nnodes, const int indx[], const int edges[],
                      int reorder, MPI_Comm *comm_graph)
{
    struct shim_comm *c;
    struct shim_topo *t;
    struct pg_group *g = NULL;
    int nedges, rc = topo_enter(SHIM_FN, comm_old, TOPO_BUILD, &c);

    (void)reorder;
    if (rc == MPI_SUCCESS) {
        rc = graph_check(SHIM_FN, comm_old, c, nnodes, indx, edges);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    nedges = nnodes > 0 ? indx[nnodes - 1] : 0;
    t = topo_new(MPI_GRAPH, (size_t)nnodes + (size_t)nedges);
    if (!t) {
        return shim_error(comm_old, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a topology");
    }
    t->nnodes = nnodes;
    t->nedges = nedges;
    t->index = t->data;
    t->edges = t->data + nnodes;
    memcpy(t->index, indx, sizeof(int) * (size_t)nnodes);
    memcpy(t->edges, edges, sizeof(int) * (size_t)nedges);
    rc = first_ranks_group(c->g, nnodes, &g);
    if (rc != PGC_OK) {
        free(t);
        return shim_error_pg(comm_old, SHIM_FN, rc);
    }
    return wrap_topo(SHIM_FN, c, comm_old, g, t, comm_graph);
}

#pragma weak MPI_Graph_map = PMPI_Graph_map
int PMPI_Graph_map(MPI_Comm comm, int nnodes, const int indx[], const int edges[], int *newrank)
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, TOPO_BUILD, &c);

    if (rc == MPI_SUCCESS) {
        rc = graph_check(SHIM_FN, comm, c, nnodes, indx, edges);
    }
    if (rc == MPI_SUCCESS) {
        *newrank = c->g->rank < nnodes ? c->g->rank : MPI_UNDEFINED;
    }
    return rc;
}

#pragma weak MPI_Graphdims_get = PMPI_Graphdims_get
int PMPI_Graphdims_get(MPI_Comm comm, int *nnodes, int *nedges)
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, MPI_GRAPH, &c);

    if (rc == MPI_SUCCESS) {
        *nnodes = c->topo->nnodes;
        *nedges = c->topo->nedges;
    }
    return rc;
}

#pragma weak MPI_Graph_get = PMPI_Graph_get
int PMPI_Graph_get(MPI_Comm comm, int maxindex, int maxedges, int indx[], int edges[])
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, MPI_GRAPH, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    for (int i = 0; i < maxindex && i < c->topo->nnodes; i++) {
        indx[i] = c->topo->index[i];
    }
    for (int e = 0; e < maxedges && e < c->topo->nedges; e++) {
        edges[e] = c->topo->edges[e];
    }
    return MPI_SUCCESS;
}

/* The neighbours of rank in a graph: *first is the offset in edges, the count returned. */
static int graph_span(const struct shim_topo *t, int rank, int *first)
{
    *first = rank > 0 ? t->index[rank - 1] : 0;
    return t->index[rank] - *first;
}

#pragma weak MPI_Graph_neighbors_count = PMPI_Graph_neighbors_count
int PMPI_Graph_neighbors_count(MPI_Comm comm, int rank, int *nneighbors)
{
    struct shim_comm *c;
    int first, rc = topo_enter(SHIM_FN, comm, MPI_GRAPH, &c);

    if (rc == MPI_SUCCESS && (rank < 0 || rank >= c->topo->nnodes)) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_RANK, "rank %d is outside the graph of %d", rank,
                        c->topo->nnodes);
    }
    if (rc == MPI_SUCCESS) {
        *nneighbors = graph_span(c->topo, rank, &first);
    }
    return rc;
}

#pragma weak MPI_Graph_neighbors = PMPI_Graph_neighbors
int PMPI_Graph_neighbors(MPI_Comm comm, int rank, int maxneighbors, int neighbors[])
{
    struct shim_comm *c;
    int first, n, rc = topo_enter(SHIM_FN, comm, MPI_GRAPH, &c);

    if (rc == MPI_SUCCESS && (rank < 0 || rank >= c->topo->nnodes)) {
        rc = shim_error(comm, SHIM_FN, MPI_ERR_RANK, "rank %d is outside the graph of %d", rank,
                        c->topo->nnodes);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    n = graph_span(c->topo, rank, &first);
    for (int i = 0; i < n && i < maxneighbors; i++) {
        neighbors[i] = c->topo->edges[first + i];
    }
    return MPI_SUCCESS;
}

/* ---- Distributed graphs ---- */

/* A distributed-graph topology; weights may be NULL (unweighted, or no edges). */
static struct shim_topo *dist_new(int indeg, const int *in, const int *inw, int outdeg,
                                  const int *out, const int *outw, bool weighted)
{
    struct shim_topo *t = topo_new(MPI_DIST_GRAPH, 2 * ((size_t)indeg + (size_t)outdeg));

    if (!t) {
        return NULL;
    }
    t->indeg = indeg;
    t->outdeg = outdeg;
    t->weighted = weighted;
    t->in = t->data;
    t->inw = t->in + indeg;
    t->out = t->inw + indeg;
    t->outw = t->out + outdeg;
    for (int i = 0; i < indeg; i++) {
        t->in[i] = in ? in[i] : 0;
        t->inw[i] = weighted && inw ? inw[i] : 1;
    }
    for (int i = 0; i < outdeg; i++) {
        t->out[i] = out ? out[i] : 0;
        t->outw[i] = weighted && outw ? outw[i] : 1;
    }
    return t;
}

static int check_ranks(const char *fn, MPI_Comm comm, int size, int n, const int *ranks,
                       const char *what)
{
    if (n < 0) {
        return shim_error(comm, fn, MPI_ERR_ARG, "%s count %d is negative", what, n);
    }
    for (int i = 0; i < n; i++) {
        if (ranks[i] < 0 || ranks[i] >= size) {
            return shim_error(comm, fn, MPI_ERR_RANK, "%s %d is rank %d, outside 0..%d", what, i,
                              ranks[i], size - 1);
        }
    }
    return MPI_SUCCESS;
}

/* Duplicates the parent's group and attaches t (consumed). */
static int dist_finish(const char *fn, struct shim_comm *c, MPI_Comm comm, struct shim_topo *t,
                       MPI_Comm *out)
{
    struct pg_group *g = NULL;
    int rc;

    *out = MPI_COMM_NULL;
    if (!t) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for a topology");
    }
    rc = pg_group_dup(c->g, &g);
    if (rc != PGC_OK) {
        free(t);
        return shim_error_pg(comm, fn, rc);
    }
    return wrap_topo(fn, c, comm, g, t, out);
}

#pragma weak MPI_Dist_graph_create_adjacent = PMPI_Dist_graph_create_adjacent
int PMPI_Dist_graph_create_adjacent(MPI_Comm comm_old, int indegree, const int sources[],
                                    const int sourceweights[], int outdegree,
                                    const int destinations[], const int destweights[],
                                    MPI_Info info, int reorder, MPI_Comm *comm_dist_graph)
{
    struct shim_comm *c;
    bool weighted = sourceweights != MPI_UNWEIGHTED;
    int rc = topo_enter(SHIM_FN, comm_old, TOPO_BUILD, &c);

    (void)info;
    (void)reorder;
    if (rc == MPI_SUCCESS) {
        rc = check_ranks(SHIM_FN, comm_old, c->g->size, indegree, sources, "source");
    }
    if (rc == MPI_SUCCESS) {
        rc = check_ranks(SHIM_FN, comm_old, c->g->size, outdegree, destinations, "destination");
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return dist_finish(
        SHIM_FN, c, comm_old,
        dist_new(indegree, sources, sourceweights == MPI_WEIGHTS_EMPTY ? NULL : sourceweights,
                 outdegree, destinations,
                 destweights == MPI_WEIGHTS_EMPTY || destweights == MPI_UNWEIGHTED ? NULL
                                                                                   : destweights,
                 weighted),
        comm_dist_graph);
}

/* An edge as exchanged by MPI_Dist_graph_create. */
struct dist_edge {
    int src, dst, w;
};

/* This rank's edges, from the (sources, degrees, destinations, weights) lists. */
static int local_edges(const char *fn, MPI_Comm comm, int size, int n, const int *sources,
                       const int *degrees, const int *dests, const int *weights,
                       struct dist_edge **out, int *m)
{
    bool weighted = weights != MPI_UNWEIGHTED && weights != MPI_WEIGHTS_EMPTY;
    int rc = check_ranks(fn, comm, size, n, sources, "source");
    int k = 0;

    for (int i = 0; i < n && rc == MPI_SUCCESS; i++) {
        if (degrees[i] < 0) {
            rc = shim_error(comm, fn, MPI_ERR_ARG, "degrees[%d] = %d is negative", i, degrees[i]);
        }
        k += rc == MPI_SUCCESS ? degrees[i] : 0;
    }
    if (rc == MPI_SUCCESS) {
        rc = check_ranks(fn, comm, size, k, dests, "destination");
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *out = malloc(sizeof(**out) * (size_t)(k > 0 ? k : 1));
    if (!*out) {
        return shim_error(comm, fn, MPI_ERR_NO_MEM, "no memory for %d edges", k);
    }
    *m = 0;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < degrees[i]; j++, (*m)++) {
            (*out)[*m] = (struct dist_edge){sources[i], dests[*m], weighted ? weights[*m] : 1};
        }
    }
    return MPI_SUCCESS;
}

/* Every rank's edges, gathered everywhere: *all (caller frees) and *total. */
static int gather_edges(struct pg_group *g, const struct dist_edge *mine, int m, int *weighted,
                        struct dist_edge **all, int *total)
{
    int me[2] = {m, *weighted};
    int *info = malloc(sizeof(int) * 2 * (size_t)g->size);
    size_t *cd = malloc(sizeof(size_t) * 2 * (size_t)g->size);
    struct pg_req req = {0};
    int rc = info && cd ? pg_allgather(g, me, info, sizeof(me)) : PGC_ERR_NOMEM;

    *all = NULL;
    *total = 0;
    for (int r = 0; rc == PGC_OK && r < g->size; r++) {
        cd[r] = sizeof(struct dist_edge) * (size_t)info[2 * r];
        cd[g->size + r] = sizeof(struct dist_edge) * (size_t)*total;
        *total += info[2 * r];
        *weighted |= info[2 * r + 1];
    }
    if (rc == PGC_OK) {
        *all = malloc(sizeof(struct dist_edge) * (size_t)(*total > 0 ? *total : 1));
        rc = *all ? pg_iallgatherv(g, mine, cd[g->rank], *all, cd, cd + g->size, &req)
                  : PGC_ERR_NOMEM;
    }
    if (rc == PGC_OK) {
        rc = pg_wait(&req, -1);
    }
    free(info);
    free(cd);
    return rc;
}

/* My in- and out-edges among all edges, in the order the ranks gave them. */
static struct shim_topo *dist_from_edges(const struct dist_edge *all, int total, int me,
                                         bool weighted)
{
    int nin = 0, nout = 0;
    struct shim_topo *t;

    for (int e = 0; e < total; e++) {
        nin += all[e].dst == me;
        nout += all[e].src == me;
    }
    t = dist_new(nin, NULL, NULL, nout, NULL, NULL, false);
    if (!t) {
        return NULL;
    }
    t->weighted = weighted;
    nin = nout = 0;
    for (int e = 0; e < total; e++) {
        if (all[e].dst == me) {
            t->in[nin] = all[e].src;
            t->inw[nin++] = all[e].w;
        }
        if (all[e].src == me) {
            t->out[nout] = all[e].dst;
            t->outw[nout++] = all[e].w;
        }
    }
    return t;
}

#pragma weak MPI_Dist_graph_create = PMPI_Dist_graph_create
int PMPI_Dist_graph_create(MPI_Comm comm_old, int n, const int sources[], const int degrees[],
                           const int destinations[], const int weights[], MPI_Info info,
                           int reorder, MPI_Comm *comm_dist_graph)
{
    struct shim_comm *c;
    struct dist_edge *mine = NULL, *all = NULL;
    int m = 0, total = 0, weighted = weights != MPI_UNWEIGHTED;
    int rc = topo_enter(SHIM_FN, comm_old, TOPO_BUILD, &c);

    (void)info;
    (void)reorder;
    if (rc == MPI_SUCCESS) {
        rc = local_edges(SHIM_FN, comm_old, c->g->size, n, sources, degrees, destinations, weights,
                         &mine, &m);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = gather_edges(c->g, mine, m, &weighted, &all, &total);
    if (rc == PGC_OK) {
        rc = dist_finish(SHIM_FN, c, comm_old, dist_from_edges(all, total, c->g->rank, weighted),
                         comm_dist_graph);
    } else {
        rc = shim_error_pg(comm_old, SHIM_FN, rc);
    }
    free(mine);
    free(all);
    return rc;
}

#pragma weak MPI_Dist_graph_neighbors_count = PMPI_Dist_graph_neighbors_count
int PMPI_Dist_graph_neighbors_count(MPI_Comm comm, int *indegree, int *outdegree, int *weighted)
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, MPI_DIST_GRAPH, &c);

    if (rc == MPI_SUCCESS) {
        *indegree = c->topo->indeg;
        *outdegree = c->topo->outdeg;
        *weighted = c->topo->weighted;
    }
    return rc;
}

#pragma weak MPI_Dist_graph_neighbors = PMPI_Dist_graph_neighbors
int PMPI_Dist_graph_neighbors(MPI_Comm comm, int maxindegree, int sources[], int sourceweights[],
                              int maxoutdegree, int destinations[], int destweights[])
{
    struct shim_comm *c;
    const struct shim_topo *t;
    int rc = topo_enter(SHIM_FN, comm, MPI_DIST_GRAPH, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    t = c->topo;
    for (int i = 0; i < maxindegree && i < t->indeg; i++) {
        sources[i] = t->in[i];
        if (t->weighted && sourceweights != MPI_UNWEIGHTED && sourceweights != MPI_WEIGHTS_EMPTY) {
            sourceweights[i] = t->inw[i];
        }
    }
    for (int i = 0; i < maxoutdegree && i < t->outdeg; i++) {
        destinations[i] = t->out[i];
        if (t->weighted && destweights != MPI_UNWEIGHTED && destweights != MPI_WEIGHTS_EMPTY) {
            destweights[i] = t->outw[i];
        }
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Topo_test = PMPI_Topo_test
int PMPI_Topo_test(MPI_Comm comm, int *status)
{
    struct shim_comm *c;
    int rc = topo_enter(SHIM_FN, comm, 0, &c);

    if (rc == MPI_SUCCESS) {
        *status = c->topo ? c->topo->kind : MPI_UNDEFINED;
    }
    return rc;
}

/* ---- Neighbour lists for the neighbourhood collectives ---- */

static int cart_neighbors(const struct shim_topo *t, int *list)
{
    for (int d = 0; d < t->ndims; d++) {
        list[2 * d] = cart_step(t, d, -1);
        list[2 * d + 1] = cart_step(t, d, 1);
    }
    return 2 * t->ndims;
}

int shim_topo_neighbors(const struct shim_comm *c, int *nin, int **in, int *nout, int **out)
{
    const struct shim_topo *t = c->topo;
    const int *src_in = NULL, *src_out = NULL;
    int first = 0;

    if (!t) {
        return MPI_ERR_TOPOLOGY;
    }
    if (t->kind == MPI_CART) {
        *nin = *nout = 2 * t->ndims;
    } else if (t->kind == MPI_GRAPH) {
        *nin = *nout = graph_span(t, c->g->rank, &first);
        src_in = src_out = t->edges + first;
    } else {
        *nin = t->indeg;
        *nout = t->outdeg;
        src_in = t->in;
        src_out = t->out;
    }
    *in = malloc(sizeof(int) * (size_t)(*nin + 1));
    *out = malloc(sizeof(int) * (size_t)(*nout + 1));
    if (!*in || !*out) {
        free(*in);
        free(*out);
        return MPI_ERR_NO_MEM;
    }
    if (t->kind == MPI_CART) {
        cart_neighbors(t, *in);
        cart_neighbors(t, *out);
    } else {
        memcpy(*in, src_in, sizeof(int) * (size_t)*nin);
        memcpy(*out, src_out, sizeof(int) * (size_t)*nout);
    }
    return MPI_SUCCESS;
}
