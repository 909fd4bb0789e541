/*
 * Scatterv: linear. The root posts all n-1 sends at once, each from its place in the input;
 * every other rank receives its block straight from the root.
 * Cost: (n-1) alpha + m beta at the root (m: the bytes scattered). Linear because the block
 * sizes are known only at the root.
 */
#include "config.h"

#include "pg_coll2.h"

void pg_scatterv_linear(struct pg_sched *s, const void *in, const size_t *counts,
                        const size_t *displs, void *out, size_t outbytes, int root)
{
    int n = s->g->size, r = s->g->rank;
    const char *b = in;

    pg_sched_algo(s, "linear scatterv");
    if (r != root) {
        pg_sched_recv(s, out, outbytes, root);
        return;
    }
    pg_sched_copy(s, out, b + displs[root], counts[root]);
    for (int i = 0; i < n; i++) {
        if (i != root) {
            pg_sched_send(s, b + displs[i], counts[i], i);
        }
    }
}
