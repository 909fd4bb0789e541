/*
 * mr_hier_timeout.c - a node-aware collective that times out names the ranks of the
 * communicator it was waiting for, in its non-blocking form (MPI_Iallreduce, MPI_Ibcast and
 * MPI_Ireduce_scatter_block, then MPI_Wait) and its blocking one (MPI_Allreduce), not ranks
 * of the node's or the leaders' group that runs the step (issue 40).
 *
 * Run on 2 nodes made by MPISHIM_NODE_SPLIT=k (k = 2 or 3, 2k ranks: every node of one
 * machine's k consecutive local ranks, which here are the world ranks) with
 * MPISHIM_TIMEOUT=2, and `--late L`: world rank L never calls the collectives below. Every
 * other rank's call fails after the timeout, and the message that MPI_Error_string gives for
 * the code it returns (under MPI_ERRORS_RETURN) must say
 * "waiting for rank X (" with X exactly the one communicator rank this rank waits for, and
 * that the wait was in a node-aware step.
 *
 * Which rank that is follows from the steps (pg_core/pg_coll_hier_*.c), each a collective of
 * at most 3 ranks, where every algorithm waits for the same peer: a node's reduce to its
 * leader waits for a missing child (the root waits for the late rank), a node's broadcast
 * for its root, and the leaders' step of 2 for the other leader. So, with node(q) and
 * leader(q) (its node's lowest rank) computed here from the communicator's world ranks:
 *   - allreduce and reduce_scatter_block (reduce in the node, then the leaders, then back
 *     into the node): a leader waits for the late rank if it is on its node, else for the
 *     late rank's leader; any other rank for its own leader (which waits in turn);
 *   - bcast from the late rank: its node's ranks wait for it, the other node's leader for
 *     the late rank's leader, the other node's other ranks for their leader.
 * The cases run on a duplicate of the world and on a communicator of the same ranks in
 * reverse order, where the ranks of the communicator, of the world and of the steps' groups
 * all differ. Each collective has a communicator of its own, made before any rank falls
 * behind; the late rank waits in MPI_Ibarrier on the world, polled with MPI_Test, until the
 * others are done. The others meet in such a polled barrier of their own before each case,
 * so that none falls a whole timeout behind on a loaded machine (each rank's timeout runs
 * from its own start).
 */
#include "mrtest.h"

#include <stdbool.h>

enum { ALLREDUCE, IALLREDUCE, IBCAST, IREDUCE_SCATTER_BLOCK, NKINDS };
static const char *const kind_name[NKINDS] = {"MPI_Allreduce", "MPI_Iallreduce", "MPI_Ibcast",
                                              "MPI_Ireduce_scatter_block"};

static int wrank, nranks, split, late;

/* The communicator under test: my rank, each rank's node and leader, the late rank. */
struct layout {
    int me, late;
    int node[16], leader[16];
};

static struct layout layout_of(MPI_Comm c)
{
    struct layout l;
    MPI_Group wg, cg;
    int ranks[16], world[16], lowest[16];

    MPI_Comm_rank(c, &l.me);
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    CHECK_MPI(MPI_Comm_group(c, &cg));
    for (int q = 0; q < nranks; q++) {
        ranks[q] = q;
        lowest[q] = nranks;
    }
    CHECK_MPI(MPI_Group_translate_ranks(cg, nranks, ranks, wg, world));
    for (int q = 0; q < nranks; q++) {
        int w = world[q];
        l.node[q] = w / split; /* MPISHIM_NODE_SPLIT's nodes, by local (= world) rank */
        lowest[l.node[q]] = q < lowest[l.node[q]] ? q : lowest[l.node[q]];
        if (w == late) {
            l.late = q;
        }
    }
    for (int q = 0; q < nranks; q++) {
        l.leader[q] = lowest[l.node[q]];
    }
    MPI_Group_free(&wg);
    MPI_Group_free(&cg);
    return l;
}

/* The rank of the communicator this rank waits for when the late one never comes. */
static int awaited(const struct layout *l, int kind)
{
    int me = l->me, lt = l->late;
    bool leads = l->leader[me] == me, same = l->node[me] == l->node[lt];

    if (kind == IBCAST) { /* from the late rank */
        return same ? lt : leads ? l->leader[lt] : l->leader[me];
    }
    return !leads ? l->leader[me] : same ? lt : l->leader[lt];
}

static int start(int kind, MPI_Comm c, int root, double *in, double *out, MPI_Request *req)
{
    switch (kind) {
    case IALLREDUCE:
        return MPI_Iallreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, c, req);
    case IBCAST:
        return MPI_Ibcast(out, 1, MPI_DOUBLE, root, c, req);
    case IREDUCE_SCATTER_BLOCK:
        return MPI_Ireduce_scatter_block(in, out, 1, MPI_DOUBLE, MPI_SUM, c, req);
    default:
        *req = MPI_REQUEST_NULL;
        return MPI_Allreduce(in, out, 1, MPI_DOUBLE, MPI_SUM, c);
    }
}

/* One collective on c without the late rank: its error names the rank computed above. */
static void check_case(int kind, MPI_Comm c, const char *comm_name)
{
    const struct layout l = layout_of(c);
    double in[16], out[16];
    MPI_Request req;
    char msg[MPI_MAX_ERROR_STRING], want[64];
    int rc, len = 0, x = awaited(&l, kind);

    for (int i = 0; i < nranks; i++) {
        in[i] = l.me + i;
        out[i] = -1;
    }
    rc = start(kind, c, l.late, in, out, &req);
    if (kind != ALLREDUCE) {
        CHECK(rc == MPI_SUCCESS, "%s on %s did not start: %d", kind_name[kind], comm_name, rc);
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    CHECK(rc != MPI_SUCCESS, "%s on %s without rank %d succeeded", kind_name[kind], comm_name,
          l.late);
    CHECK(MPI_Error_string(rc, msg, &len) == MPI_SUCCESS && len > 0, "no message for %d", rc);
    printf("rank %d (%d here), %s on %s: %s\n", wrank, l.me, kind_name[kind], comm_name, msg);
    fflush(stdout);
    snprintf(want, sizeof(want), "waiting for rank %d (", x);
    CHECK(strstr(msg, want), "%s on %s, rank %d here: \"%s\" does not say \"%s\"", kind_name[kind],
          comm_name, l.me, msg, want);
    CHECK(strstr(msg, "node-aware"), "%s on %s: \"%s\" does not name the node-aware step",
          kind_name[kind], comm_name, msg);
    snprintf(want, sizeof(want), "timed out after %s s", getenv("MPISHIM_TIMEOUT"));
    CHECK(strstr(msg, want), "%s on %s: \"%s\" does not say \"%s\"", kind_name[kind], comm_name,
          msg, want);
}

int main(int argc, char **argv)
{
    enum { NCASES = 6 };
    static const int kinds[NCASES] = {IALLREDUCE, IBCAST,     IREDUCE_SCATTER_BLOCK,
                                      ALLREDUCE,  IALLREDUCE, ALLREDUCE};
    MPI_Comm comms[NCASES], others;
    const char *s;

    mrt_init(&argc, &argv); /* puts the list's NAME=VALUE arguments in the environment */
    s = getenv("MPISHIM_NODE_SPLIT");
    wrank = mrt_rank;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    split = s ? atoi(s) : 0;
    late = 1;
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--late") == 0) {
            late = atoi(argv[i + 1]);
        }
    }
    CHECK((split == 2 || split == 3) && nranks == 2 * split,
          "needs MPISHIM_NODE_SPLIT=2 or 3 and twice as many ranks (has %s and %d)", s ? s : "none",
          nranks);
    CHECK(late >= 0 && late < nranks, "--late %d: no such rank", late);
    CHECK(getenv("MPISHIM_TIMEOUT"), "needs a short MPISHIM_TIMEOUT (2 s)");
    /* The first four on duplicates of the world, the last two in reverse rank order. */
    for (int i = 0; i < NCASES; i++) {
        if (i < 4) {
            CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comms[i]));
        } else {
            CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, nranks - wrank, &comms[i]));
        }
        CHECK_MPI(MPI_Comm_set_errhandler(comms[i], MPI_ERRORS_RETURN));
    }
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, wrank == late ? MPI_UNDEFINED : 0, wrank, &others));
    if (wrank == late) {
        mrt_polled_barrier();
    } else {
        for (int i = 0; i < NCASES; i++) {
            mrt_polled_barrier_on(others);
            check_case(kinds[i], comms[i], i < 4 ? "a duplicate of the world" : "the reverse");
        }
        mrt_polled_barrier();
        CHECK_MPI(MPI_Comm_free(&others));
    }
    /* The communicators whose collectives were given up stay: a given-up collective still
     * holds them (pg_sched_detach). */
    return mrt_finish("mr_hier_timeout");
}
