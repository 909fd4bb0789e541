/* Intercommunicators (MPI-3.1 6.6 and the 5.2.2 collective semantics) and the
 * dynamic-process calls. The world splits into side 0 (world ranks r with r % 3 == 0) and
 * side 1 (the others): uneven and interleaved, so that remote ranks, the union's order and
 * MPI_Intercomm_merge's order all differ from world order. Every result is checked against
 * values computed here from the world ranks alone. Needs 2 ranks or more. */
#include "mrtest.h"

#define MAXR 16

static int wrank, wsize, side, lr, lsize, rsize;
static int sidew[2][MAXR], sidesz[2]; /* each side's world ranks, in local-rank order */
static MPI_Comm ic;

static int val(int world, int i)
{
    return world * 100 + i + 1;
}

static void setup_sides(void)
{
    for (int r = 0; r < wsize; r++) {
        int s = r % 3 == 0 ? 0 : 1;
        sidew[s][sidesz[s]++] = r;
    }
    side = wrank % 3 == 0 ? 0 : 1;
    lsize = sidesz[side];
    rsize = sidesz[1 - side];
    for (int i = 0; i < lsize; i++) {
        lr = sidew[side][i] == wrank ? i : lr;
    }
}

/* The world ranks of g's members, compared with want. */
static void expect_group(MPI_Group g, const int *want, int n, const char *what)
{
    MPI_Group wg;
    int got[MAXR], idx[MAXR], gn;

    CHECK_MPI(MPI_Group_size(g, &gn));
    CHECK(gn == n, "%s: size %d, expected %d", what, gn, n);
    for (int i = 0; i < n; i++) {
        idx[i] = i;
    }
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    CHECK_MPI(MPI_Group_translate_ranks(g, n, idx, wg, got));
    for (int i = 0; i < n; i++) {
        CHECK(got[i] == want[i], "%s: member %d is world %d, expected %d", what, i, got[i],
              want[i]);
    }
    MPI_Group_free(&wg);
}

static void check_shape(MPI_Comm c, const int *loc, int nl, const int *rem, int nr, int me)
{
    MPI_Group g;
    int flag = 0, n = -1, r = -1;

    CHECK_MPI(MPI_Comm_test_inter(c, &flag));
    CHECK(flag == 1, "test_inter %d", flag);
    CHECK_MPI(MPI_Comm_size(c, &n));
    CHECK(n == nl, "size %d, expected %d", n, nl);
    CHECK_MPI(MPI_Comm_rank(c, &r));
    CHECK(r == me, "rank %d, expected %d", r, me);
    CHECK_MPI(MPI_Comm_remote_size(c, &n));
    CHECK(n == nr, "remote size %d, expected %d", n, nr);
    CHECK_MPI(MPI_Comm_group(c, &g));
    expect_group(g, loc, nl, "local group");
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Comm_remote_group(c, &g));
    expect_group(g, rem, nr, "remote group");
    MPI_Group_free(&g);
}

/* Every rank sends to every remote rank and receives from each, then once more with
 * MPI_ANY_SOURCE: the source is the sender's rank in its own group. */
static void check_p2p(MPI_Comm c, const int *rem, int nr)
{
    int out[MAXR], in[MAXR], me;
    MPI_Request rq[2 * MAXR];
    MPI_Status st;

    MPI_Comm_rank(c, &me);
    for (int r = 0; r < nr; r++) {
        out[r] = 1000 * wrank + r;
        CHECK_MPI(MPI_Irecv(&in[r], 1, MPI_INT, r, 5, c, &rq[r]));
        CHECK_MPI(MPI_Isend(&out[r], 1, MPI_INT, r, 5, c, &rq[nr + r]));
    }
    CHECK_MPI(MPI_Waitall(2 * nr, rq, MPI_STATUSES_IGNORE));
    for (int r = 0; r < nr; r++) {
        CHECK(in[r] == 1000 * rem[r] + me, "from remote %d: %d, expected %d", r, in[r],
              1000 * rem[r] + me);
    }
    for (int r = 0; r < nr; r++) {
        CHECK_MPI(MPI_Send(&wrank, 1, MPI_INT, r, 6, c));
    }
    for (int k = 0; k < nr; k++) {
        int w;
        CHECK_MPI(MPI_Recv(&w, 1, MPI_INT, MPI_ANY_SOURCE, 6, c, &st));
        CHECK(st.MPI_SOURCE >= 0 && st.MPI_SOURCE < nr && rem[st.MPI_SOURCE] == w,
              "any-source receive: source %d sent world rank %d", st.MPI_SOURCE, w);
    }
}

/* A blocking collective, or its non-blocking form and a wait. */
#define COLL(nb, Name, name, ...)                                                                  \
    do {                                                                                           \
        if (nb) {                                                                                  \
            MPI_Request rq_;                                                                       \
            CHECK_MPI(MPI_I##name(__VA_ARGS__, &rq_));                                             \
            CHECK_MPI(MPI_Wait(&rq_, MPI_STATUS_IGNORE));                                          \
        } else {                                                                                   \
            CHECK_MPI(MPI_##Name(__VA_ARGS__));                                                    \
        }                                                                                          \
    } while (0)

/* The root argument of a rooted collective whose root is rank root of side rs. */
static int root_arg(int rs, int root)
{
    if (side == rs) {
        return lr == root ? MPI_ROOT : MPI_PROC_NULL;
    }
    return root;
}

static int remote_sum(int i)
{
    int s = 0;

    for (int r = 0; r < rsize; r++) {
        s += val(sidew[1 - side][r], i);
    }
    return s;
}

static void rooted_bcast_reduce(int nb, int rs, int root)
{
    int ra = root_arg(rs, root), buf[3], sum[3] = {-1, -1, -1};
    int rw = sidew[rs][root];

    for (int i = 0; i < 3; i++) {
        buf[i] = ra == MPI_ROOT ? val(rw, i) : -1;
    }
    COLL(nb, Bcast, bcast, buf, 3, MPI_INT, ra, ic);
    for (int i = 0; side != rs && i < 3; i++) {
        CHECK(buf[i] == val(rw, i), "bcast[%d] %d, expected %d", i, buf[i], val(rw, i));
    }
    for (int i = 0; i < 3; i++) {
        buf[i] = val(wrank, i);
    }
    COLL(nb, Reduce, reduce, buf, sum, 3, MPI_INT, MPI_SUM, ra, ic);
    for (int i = 0; ra == MPI_ROOT && i < 3; i++) {
        CHECK(sum[i] == remote_sum(i), "reduce[%d] %d, expected %d", i, sum[i], remote_sum(i));
    }
}

static void rooted_gather_scatter(int nb, int rs, int root)
{
    int ra = root_arg(rs, root), mine[MAXR + 2], all[4 * MAXR * MAXR], counts[MAXR], displs[MAXR];
    int at = 0;

    for (int i = 0; i <= lr || i < 2; i++) {
        mine[i] = val(wrank, i);
    }
    COLL(nb, Gather, gather, mine, 2, MPI_INT, all, 2, MPI_INT, ra, ic);
    for (int r = 0; ra == MPI_ROOT && r < rsize; r++) {
        for (int i = 0; i < 2; i++) {
            CHECK(all[2 * r + i] == val(sidew[1 - side][r], i), "gather block %d[%d]", r, i);
        }
    }
    /* Remote rank r sends r + 1 elements, placed one slot apart. */
    for (int r = 0; r < rsize; r++) {
        counts[r] = r + 1;
        displs[r] = at;
        at += r + 2;
    }
    COLL(nb, Gatherv, gatherv, mine, lr + 1, MPI_INT, all, counts, displs, MPI_INT, ra, ic);
    for (int r = 0; ra == MPI_ROOT && r < rsize; r++) {
        for (int i = 0; i <= r; i++) {
            CHECK(all[displs[r] + i] == val(sidew[1 - side][r], i), "gatherv block %d[%d]", r, i);
        }
    }
    for (int r = 0; ra == MPI_ROOT && r < rsize; r++) {
        all[2 * r] = 7000 + r;
        all[2 * r + 1] = 8000 + r;
    }
    COLL(nb, Scatter, scatter, all, 2, MPI_INT, mine, 2, MPI_INT, ra, ic);
    CHECK(side == rs || (mine[0] == 7000 + lr && mine[1] == 8000 + lr), "scatter got %d %d",
          mine[0], mine[1]);
    for (int r = 0; ra == MPI_ROOT && r < rsize; r++) {
        for (int i = 0; i <= r; i++) {
            all[displs[r] + i] = 9000 + 10 * r + i;
        }
    }
    COLL(nb, Scatterv, scatterv, all, counts, displs, MPI_INT, mine, lr + 1, MPI_INT, ra, ic);
    for (int i = 0; side != rs && i <= lr; i++) {
        CHECK(mine[i] == 9000 + 10 * lr + i, "scatterv[%d] %d", i, mine[i]);
    }
}

static void all_reductions(int nb)
{
    int in[MAXR * MAXR + 3], out[MAXR * MAXR + 3], counts[MAXR];
    int n = lsize * rsize, first = 0;

    for (int i = 0; i < n || i < 3; i++) {
        in[i] = val(wrank, i);
    }
    COLL(nb, Allreduce, allreduce, in, out, 3, MPI_INT, MPI_SUM, ic);
    for (int i = 0; i < 3; i++) {
        CHECK(out[i] == remote_sum(i), "allreduce[%d] %d, expected %d", i, out[i], remote_sum(i));
    }
    /* n = lsize * rsize elements on both sides; my share is rsize of them. */
    COLL(nb, Reduce_scatter_block, reduce_scatter_block, in, out, rsize, MPI_INT, MPI_SUM, ic);
    for (int i = 0; i < rsize; i++) {
        CHECK(out[i] == remote_sum(lr * rsize + i), "reduce_scatter_block[%d] %d", i, out[i]);
    }
    for (int k = 0; k < lsize; k++) {
        counts[k] = rsize + (lsize > 1 ? (k == 0) - (k == lsize - 1) : 0);
        first += k < lr ? counts[k] : 0;
    }
    COLL(nb, Reduce_scatter, reduce_scatter, in, out, counts, MPI_INT, MPI_SUM, ic);
    for (int i = 0; i < counts[lr]; i++) {
        CHECK(out[i] == remote_sum(first + i), "reduce_scatter[%d] %d", i, out[i]);
    }
}

static void all_gathers(int nb)
{
    int mine[MAXR + 1], all[4 * MAXR], counts[MAXR], displs[MAXR], at = 0;

    for (int i = 0; i <= lr; i++) {
        mine[i] = val(wrank, i);
    }
    COLL(nb, Allgather, allgather, mine, 1, MPI_INT, all, 1, MPI_INT, ic);
    for (int r = 0; r < rsize; r++) {
        CHECK(all[r] == val(sidew[1 - side][r], 0), "allgather[%d] %d", r, all[r]);
    }
    for (int r = 0; r < rsize; r++) {
        counts[r] = r + 1;
        displs[r] = at;
        at += r + 2;
    }
    COLL(nb, Allgatherv, allgatherv, mine, lr + 1, MPI_INT, all, counts, displs, MPI_INT, ic);
    for (int r = 0; r < rsize; r++) {
        for (int i = 0; i <= r; i++) {
            CHECK(all[displs[r] + i] == val(sidew[1 - side][r], i), "allgatherv %d[%d]", r, i);
        }
    }
}

/* What local rank s of one side sends to local rank t of the other: how many, and each. */
static int a2a_count(int s, int t)
{
    return (s + t) % 3 + 1;
}

static int a2a_val(int sw, int t, int i)
{
    return 10000 * sw + 100 * t + i;
}

static void all_to_alls(int nb)
{
    int out[4 * MAXR], in[4 * MAXR], sc[MAXR], sd[MAXR], rc[MAXR], rd[MAXR], sb[MAXR], rb[MAXR];
    MPI_Datatype st[MAXR], rt[MAXR];
    int so = 0, ro = 0;

    for (int t = 0; t < rsize; t++) {
        out[2 * t] = a2a_val(wrank, t, 0);
        out[2 * t + 1] = a2a_val(wrank, t, 1);
    }
    COLL(nb, Alltoall, alltoall, out, 2, MPI_INT, in, 2, MPI_INT, ic);
    for (int r = 0; r < rsize; r++) {
        for (int i = 0; i < 2; i++) {
            CHECK(in[2 * r + i] == a2a_val(sidew[1 - side][r], lr, i), "alltoall %d[%d]", r, i);
        }
    }
    for (int t = 0; t < rsize; t++) {
        sc[t] = a2a_count(lr, t);
        sd[t] = so;
        sb[t] = (int)sizeof(int) * so;
        st[t] = MPI_INT;
        for (int i = 0; i < sc[t]; i++) {
            out[so + i] = a2a_val(wrank, t, i);
        }
        so += sc[t];
        rc[t] = a2a_count(t, lr);
        rd[t] = ro;
        rb[t] = (int)sizeof(int) * ro;
        rt[t] = MPI_INT;
        ro += rc[t] + 1;
    }
    for (int w = 0; w < 2; w++) {
        if (w) {
            COLL(nb, Alltoallw, alltoallw, out, sc, sb, st, in, rc, rb, rt, ic);
        } else {
            COLL(nb, Alltoallv, alltoallv, out, sc, sd, MPI_INT, in, rc, rd, MPI_INT, ic);
        }
        for (int r = 0; r < rsize; r++) {
            for (int i = 0; i < rc[r]; i++) {
                CHECK(in[rd[r] + i] == a2a_val(sidew[1 - side][r], lr, i), "alltoall%c %d[%d]",
                      w ? 'w' : 'v', r, i);
            }
        }
    }
}

static void collectives(void)
{
    for (int nb = 0; nb < 2; nb++) {
        for (int rs = 0; rs < 2; rs++) {
            /* The last rank of the root's side, so that the root is not a leader. */
            rooted_bcast_reduce(nb, rs, sidesz[rs] - 1);
            rooted_gather_scatter(nb, rs, sidesz[rs] - 1);
        }
        all_reductions(nb);
        all_gathers(nb);
        all_to_alls(nb);
        if (nb) {
            MPI_Request rq;
            CHECK_MPI(MPI_Ibarrier(ic, &rq));
            CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
        } else {
            CHECK_MPI(MPI_Barrier(ic));
        }
    }
}

static void errors(void)
{
    static int big[128];
    int x[4] = {0}, y[4];
    MPI_Request rq;
    MPI_Comm bad;

    CHECK_MPI(MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Bcast(x, 1, MPI_INT, rsize, ic), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Reduce(x, y, 1, MPI_INT, MPI_SUM, -7, ic), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Gather(x, 1, MPI_INT, y, 1, MPI_INT, rsize + 3, ic), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Iscatter(x, 1, MPI_INT, y, 1, MPI_INT, -5, ic, &rq), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Scan(x, y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Exscan(x, y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Iscan(x, y, 1, MPI_INT, MPI_SUM, ic, &rq), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Allreduce(MPI_IN_PLACE, y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Intercomm_create(ic, 0, MPI_COMM_WORLD, 0, 1, &bad), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Cart_create(ic, 1, (int[]){lsize}, (int[]){0}, 0, &bad), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Comm_split_type(ic, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &bad),
                 MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Comm_create_group(ic, MPI_GROUP_EMPTY, 0, &bad), MPI_ERR_COMM);
    /* The groups' vectors differ in length: every rank of both learns it. */
    EXPECT_CLASS(MPI_Reduce_scatter_block(big, big + 64, rsize + side, MPI_INT, MPI_SUM, ic),
                 MPI_ERR_COUNT);
    CHECK_MPI(MPI_Topo_test(ic, &y[0]));
    CHECK(y[0] == MPI_UNDEFINED, "topo_test %d", y[0]);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &bad), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Comm_remote_size(MPI_COMM_WORLD, x), MPI_ERR_COMM);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Merge with each high flag: the side with high false first, in local order; with equal
 * flags, side 0 (it holds world rank 0) first. */
static void check_merge(int high0, int high1)
{
    MPI_Comm m;
    MPI_Group g;
    int want[MAXR], n = 0, first = high0 == high1 ? 0 : (high0 ? 1 : 0), r, sum = 0;

    for (int s = 0; s < 2; s++) {
        int sd = s == 0 ? first : 1 - first;
        for (int i = 0; i < sidesz[sd]; i++) {
            want[n++] = sidew[sd][i];
        }
    }
    CHECK_MPI(MPI_Intercomm_merge(ic, side ? high1 : high0, &m));
    CHECK_MPI(MPI_Comm_group(m, &g));
    expect_group(g, want, n, "merged group");
    MPI_Group_free(&g);
    CHECK_MPI(MPI_Comm_rank(m, &r));
    CHECK(want[r] == wrank, "merged rank %d", r);
    CHECK_MPI(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, m));
    CHECK(sum == wsize * (wsize - 1) / 2, "allreduce on the merged comm %d", sum);
    CHECK_MPI(MPI_Comm_free(&m));
}

static int copied;

static int copy_fn(MPI_Comm c, int key, void *extra, void *in, void *out, int *flag)
{
    copied++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static void check_dup(void)
{
    MPI_Comm d, d2;
    MPI_Request rq;
    int key, res, *val_out = NULL, flag = 0, len;
    static int attr = 42;
    char name[MPI_MAX_OBJECT_NAME];

    CHECK_MPI(MPI_Comm_create_keyval(copy_fn, MPI_COMM_NULL_DELETE_FN, &key, NULL));
    CHECK_MPI(MPI_Comm_set_attr(ic, key, &attr));
    CHECK_MPI(MPI_Comm_set_name(ic, "inter"));
    CHECK_MPI(MPI_Comm_get_name(ic, name, &len));
    CHECK(strcmp(name, "inter") == 0, "name %s", name);
    CHECK_MPI(MPI_Comm_dup(ic, &d));
    CHECK(copied == 1, "copy callback ran %d times", copied);
    CHECK_MPI(MPI_Comm_get_attr(d, key, &val_out, &flag));
    CHECK(flag && val_out == &attr, "attribute not copied to the dup");
    check_shape(d, sidew[side], lsize, sidew[1 - side], rsize, lr);
    CHECK_MPI(MPI_Comm_compare(ic, ic, &res));
    CHECK(res == MPI_IDENT, "compare(ic, ic) %d", res);
    CHECK_MPI(MPI_Comm_compare(ic, d, &res));
    CHECK(res == MPI_CONGRUENT, "compare(ic, dup) %d", res);
    CHECK_MPI(MPI_Comm_compare(ic, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_UNEQUAL, "compare(ic, world) %d", res);
    check_p2p(d, sidew[1 - side], rsize);
    CHECK_MPI(MPI_Comm_idup(d, &d2, &rq));
    CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
    check_shape(d2, sidew[side], lsize, sidew[1 - side], rsize, lr);
    CHECK_MPI(MPI_Comm_free(&d2));
    CHECK_MPI(MPI_Comm_disconnect(&d));
    CHECK(d == MPI_COMM_NULL, "disconnect left a handle");
    CHECK_MPI(MPI_Comm_delete_attr(ic, key));
    CHECK_MPI(MPI_Comm_free_keyval(&key));
}

/* Members of side s with color c (local rank % 2), ordered by key (minus local rank). */
static int split_members(int s, int c, int *out)
{
    int n = 0;

    for (int i = sidesz[s] - 1; i >= 0; i--) {
        if (i % 2 == c) {
            out[n++] = sidew[s][i];
        }
    }
    return n;
}

static void check_split(void)
{
    MPI_Comm sp;
    int loc[MAXR], rem[MAXR], nl = split_members(side, lr % 2, loc);
    int nr = split_members(1 - side, lr % 2, rem), me = 0;

    CHECK_MPI(MPI_Comm_split(ic, lr % 2, -lr, &sp));
    if (nr == 0) {
        CHECK(sp == MPI_COMM_NULL, "split with no remote member of my color gave a comm");
        return;
    }
    for (int i = 0; i < nl; i++) {
        me = loc[i] == wrank ? i : me;
    }
    check_shape(sp, loc, nl, rem, nr, me);
    check_p2p(sp, rem, nr);
    CHECK_MPI(MPI_Comm_free(&sp));
}

/* MPI_Comm_create with each side's group less its local rank 1 (when it has one). */
static void check_create(void)
{
    MPI_Group lg, sub;
    MPI_Comm cr;
    int one = 1, loc[MAXR], rem[MAXR], nl = 0, nr = 0, sum = -1, want = 0;

    for (int i = 0; i < sidesz[side]; i++) {
        if (i != 1 || sidesz[side] == 1) {
            loc[nl++] = sidew[side][i];
        }
    }
    for (int i = 0; i < sidesz[1 - side]; i++) {
        if (i != 1 || sidesz[1 - side] == 1) {
            rem[nr++] = sidew[1 - side][i];
            want += sidew[1 - side][i];
        }
    }
    CHECK_MPI(MPI_Comm_group(ic, &lg));
    if (lsize > 1) {
        CHECK_MPI(MPI_Group_excl(lg, 1, &one, &sub));
    } else {
        CHECK_MPI(MPI_Group_excl(lg, 0, &one, &sub));
    }
    CHECK_MPI(MPI_Comm_create(ic, sub, &cr));
    if (lr == 1) {
        CHECK(cr == MPI_COMM_NULL, "local rank 1 is outside the group but got a comm");
    } else {
        check_shape(cr, loc, nl, rem, nr, lr > 1 ? lr - 1 : lr);
        CHECK_MPI(MPI_Allreduce(&wrank, &sum, 1, MPI_INT, MPI_SUM, cr));
        CHECK(sum == want, "allreduce on the created comm %d, expected %d", sum, want);
        CHECK_MPI(MPI_Comm_free(&cr));
    }
    MPI_Group_free(&sub);
    MPI_Group_free(&lg);
}

/* Each dynamic-process call fails with its class on this rank alone: only world rank 0
 * makes the collective ones, so a call that waited for other ranks would hang the test. */
static void check_dynamic(void)
{
    MPI_Comm c = MPI_COMM_WORLD, parent = MPI_COMM_SELF, d;
    char port[MPI_MAX_PORT_NAME] = "x";
    int codes[2] = {0, 0};
    char *args[] = {"-x", NULL};

    CHECK_MPI(MPI_Comm_get_parent(&parent));
    CHECK(parent == MPI_COMM_NULL, "get_parent gave a communicator");
    if (wrank == 0) {
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        EXPECT_CLASS(MPI_Comm_spawn("./none", args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c, codes),
                     MPI_ERR_SPAWN);
        CHECK(c == MPI_COMM_NULL && codes[0] == MPI_ERR_SPAWN && codes[1] == MPI_ERR_SPAWN,
              "spawn outputs");
        c = MPI_COMM_WORLD;
        EXPECT_CLASS(MPI_Comm_spawn_multiple(1, (char *[]){"./none"}, MPI_ARGVS_NULL, (int[]){1},
                                             (MPI_Info[]){MPI_INFO_NULL}, 0, MPI_COMM_WORLD, &c,
                                             MPI_ERRCODES_IGNORE),
                     MPI_ERR_SPAWN);
        CHECK(c == MPI_COMM_NULL, "spawn_multiple output");
        EXPECT_CLASS(MPI_Open_port(MPI_INFO_NULL, port), MPI_ERR_PORT);
        EXPECT_CLASS(MPI_Close_port("port"), MPI_ERR_PORT);
        EXPECT_CLASS(MPI_Comm_accept("port", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c), MPI_ERR_PORT);
        EXPECT_CLASS(MPI_Comm_connect("port", MPI_INFO_NULL, 0, MPI_COMM_WORLD, &c), MPI_ERR_PORT);
        EXPECT_CLASS(MPI_Comm_join(0, &c), MPI_ERR_SPAWN);
        EXPECT_CLASS(MPI_Publish_name("svc", MPI_INFO_NULL, "port"), MPI_ERR_SERVICE);
        EXPECT_CLASS(MPI_Unpublish_name("svc", MPI_INFO_NULL, "port"), MPI_ERR_SERVICE);
        EXPECT_CLASS(MPI_Lookup_name("svc", MPI_INFO_NULL, port), MPI_ERR_NAME);
        EXPECT_CLASS(MPI_Comm_disconnect(&c), MPI_ERR_COMM);
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &d));
    CHECK_MPI(MPI_Comm_disconnect(&d));
    CHECK(d == MPI_COMM_NULL, "disconnect left a handle");
}

/* A bad remote leader fails on every rank of the leader's group, and no rank waits. */
static void check_bad_leader(MPI_Comm local)
{
    MPI_Comm bad = MPI_COMM_WORLD;

    CHECK_MPI(MPI_Comm_set_errhandler(local, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, wsize + 5, 3, &bad), MPI_ERR_RANK);
    CHECK(bad == MPI_COMM_NULL, "failed create left a handle");
    EXPECT_CLASS(MPI_Intercomm_create(local, lsize, MPI_COMM_WORLD, 0, 3, &bad), MPI_ERR_RANK);
    CHECK_MPI(MPI_Comm_set_errhandler(local, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    MPI_Comm local;

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &wsize);
    wrank = mrt_rank;
    check_dynamic();
    if (wsize < 2 || wsize > MAXR) {
        if (wrank == 0) {
            printf("mr_intercomm: intercommunicators need 2 to %d ranks; only the dynamic "
                   "checks ran\n",
                   MAXR);
        }
        return mrt_finish("mr_intercomm");
    }
    setup_sides();
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, side, wrank, &local));
    check_bad_leader(local);
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, sidew[1 - side][0], 7, &ic));
    check_shape(ic, sidew[side], lsize, sidew[1 - side], rsize, lr);
    check_p2p(ic, sidew[1 - side], rsize);
    collectives();
    errors();
    check_merge(0, 1);
    check_merge(1, 0);
    check_merge(0, 0);
    check_merge(1, 1);
    check_dup();
    check_split();
    check_create();
    CHECK_MPI(MPI_Comm_free(&ic));
    /* Again with the same arguments: the second creation must not meet the first's steps. */
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, sidew[1 - side][0], 7, &ic));
    check_shape(ic, sidew[side], lsize, sidew[1 - side], rsize, lr);
    check_p2p(ic, sidew[1 - side], rsize);
    CHECK_MPI(MPI_Comm_free(&ic));
    CHECK_MPI(MPI_Comm_free(&local));
    return mrt_finish("mr_intercomm");
}
