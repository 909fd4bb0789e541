/*
 * Scatter: binomial tree rooted at root (the mirror of the binomial gather).
 * With ranks numbered relative to the root, a rank receives from its parent, in one
 * message, the blocks of its whole subtree (ranks vr .. vr + lowbit(vr) - 1), keeps the
 * first and forwards the others to its children, largest subtree first.
 * Cost: ceil(log2 n) alpha + (n-1)/n m beta (m: the bytes the root scatters). With n <= 2
 * the tree has one level, so it is the linear scatter.
 */
#include "config.h"

#include "pg_coll2.h"
#include "pg_coll_steps.h"
#include "pgc_status.h"

/* The root's blocks in relative order: the input itself when the root is rank 0. */
static const char *root_blocks(struct pg_sched *s, const void *in, size_t bytes, int root)
{
    int n = s->g->size;
    char *rot;

    if (root == 0) {
        return in;
    }
    rot = pg_sched_alloc(s, (size_t)n * bytes);
    if (rot) {
        pg_sched_copy(s, rot, (const char *)in + (size_t)root * bytes, (size_t)(n - root) * bytes);
        pg_sched_copy(s, rot + (size_t)(n - root) * bytes, in, (size_t)root * bytes);
    }
    return rot;
}

void pg_scatter_binomial(struct pg_sched *s, const void *in, void *out, size_t bytes, int root)
{
    int n = s->g->size, vr = (s->g->rank - root + n) % n;
    int span = pg_tree_top(vr, n); /* the size of the block I head */
    int sub = span < n - vr ? span : n - vr;
    const char *blocks;

    pg_sched_algo(s, "the binomial tree");
    if (vr == 0) {
        blocks = root_blocks(s, in, bytes, root);
        pg_sched_copy(s, out, (const char *)in + (size_t)root * bytes, bytes);
    } else if (sub == 1) {
        pg_sched_recv(s, out, bytes, (vr - span + root) % n);
        return;
    } else {
        char *mine = pg_sched_alloc(s, (size_t)sub * bytes);
        blocks = mine;
        if (mine) {
            pg_sched_recv(s, mine, (size_t)sub * bytes, (vr - span + root) % n);
            pg_sched_fence(s);
            pg_sched_copy(s, out, mine, bytes);
        }
    }
    /* Only a failed allocation stops here: a NULL input is legal when bytes is 0, and the
     * children must still get their (empty) messages or they wait forever. */
    if (s->status != PGC_OK) {
        return;
    }
    for (int mask = span >> 1; mask > 0; mask >>= 1) {
        int child = vr + mask;
        if (child < n) {
            int csub = mask < n - child ? mask : n - child;
            pg_sched_send(s, blocks + (size_t)mask * bytes, (size_t)csub * bytes,
                          (child + root) % n);
        }
    }
}
