/*
 * Gatherv: linear. Every rank sends its block straight to the root, which posts all n-1
 * receives at once, each into its place in the output.
 * Cost: (n-1) alpha + m beta at the root (m: the bytes gathered). Linear because the block
 * sizes are known only at the root, so no rank could forward a subtree's blocks.
 */
#include "config.h"

#include "pg_coll2.h"

void pg_gatherv_linear(struct pg_sched *s, const void *in, size_t inbytes, void *out,
                       const size_t *counts, const size_t *displs, int root)
{
    int n = s->g->size, r = s->g->rank;
    char *o = out;

    pg_sched_algo(s, "linear gatherv");
    if (r != root) {
        pg_sched_send(s, in, inbytes, root);
        return;
    }
    /* My own block first: a copy is a local step, which would otherwise wait for every
     * receive. */
    pg_sched_copy(s, o + displs[root], in, inbytes);
    for (int i = 0; i < n; i++) {
        if (i != root) {
            pg_sched_recv(s, o + displs[i], counts[i], i);
        }
    }
}
