/* Groups and communicator construction: every group set operation with the members
 * worked out by hand, Comm_create/create_group/split_type/compare/idup, and the error
 * classes of bad group arguments. */
#include "mrtest.h"

#include <string.h>

static int rank, size;

/* The error class of a returned code (MPI returns codes; classes are what is portable). */
static int errclass(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

/* The world ranks of a group, in group order (via translate_ranks to the world group). */
static void members(MPI_Group g, int *n, int *out)
{
    MPI_Group wg;
    int in[64];

    CHECK_MPI(MPI_Group_size(g, n));
    CHECK(*n <= 64, "group of %d", *n);
    for (int i = 0; i < *n; i++) {
        in[i] = i;
    }
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    CHECK_MPI(MPI_Group_translate_ranks(g, *n, in, wg, out));
    CHECK_MPI(MPI_Group_free(&wg));
}

static void expect_members(MPI_Group g, const int *want, int nwant, const char *what)
{
    int n, got[64], grank, myidx = MPI_UNDEFINED;

    members(g, &n, got);
    CHECK(n == nwant, "%s: size %d, expected %d", what, n, nwant);
    for (int i = 0; i < n; i++) {
        CHECK(got[i] == want[i], "%s: member %d is %d, expected %d", what, i, got[i], want[i]);
        if (want[i] == rank) {
            myidx = i;
        }
    }
    CHECK_MPI(MPI_Group_rank(g, &grank));
    CHECK(grank == myidx, "%s: group rank %d, expected %d", what, grank, myidx);
}

/* evens: 0, 2, 4, ...; odds: 1, 3, ... */
static int evens(int *out)
{
    int k = 0;
    for (int r = 0; r < size; r += 2) {
        out[k++] = r;
    }
    return k;
}

static int odds(int *out)
{
    int k = 0;
    for (int r = 1; r < size; r += 2) {
        out[k++] = r;
    }
    return k;
}

static void test_group_basics(void)
{
    MPI_Group wg, g;
    int want[64], n, r;

    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    for (int i = 0; i < size; i++) {
        want[i] = i;
    }
    expect_members(wg, want, size, "world group");

    /* incl in a given order: the last rank, then rank 0. */
    int two[2] = {size - 1, 0};
    CHECK_MPI(MPI_Group_incl(wg, size > 1 ? 2 : 1, two, &g));
    expect_members(g, two, size > 1 ? 2 : 1, "incl {last, 0}");
    CHECK_MPI(MPI_Group_free(&g));
    CHECK(g == MPI_GROUP_NULL, "free left 0x%x", (unsigned)g);

    /* excl rank 0: 1..size-1 in order. */
    int zero = 0;
    CHECK_MPI(MPI_Group_excl(wg, 1, &zero, &g));
    expect_members(g, want + 1, size - 1, "excl {0}");
    CHECK_MPI(MPI_Group_free(&g));

    /* range_incl (0, size-1, 2): the evens; descending (size-1, 0, -3). */
    int rng[1][3] = {{0, size - 1, 2}};
    CHECK_MPI(MPI_Group_range_incl(wg, 1, rng, &g));
    n = evens(want);
    expect_members(g, want, n, "range_incl evens");
    CHECK_MPI(MPI_Group_free(&g));
    int down[1][3] = {{size - 1, 0, -3}};
    CHECK_MPI(MPI_Group_range_incl(wg, 1, down, &g));
    n = 0;
    for (r = size - 1; r >= 0; r -= 3) {
        want[n++] = r;
    }
    expect_members(g, want, n, "range_incl descending by 3");
    CHECK_MPI(MPI_Group_free(&g));

    /* range_excl of the evens leaves the odds. */
    CHECK_MPI(MPI_Group_range_excl(wg, 1, rng, &g));
    n = odds(want);
    expect_members(g, want, n, "range_excl evens");
    CHECK_MPI(MPI_Group_free(&g));

    /* An empty incl is MPI_GROUP_EMPTY. */
    CHECK_MPI(MPI_Group_incl(wg, 0, NULL, &g));
    CHECK(g == MPI_GROUP_EMPTY, "empty incl gave 0x%x", (unsigned)g);
    CHECK_MPI(MPI_Group_size(g, &n));
    CHECK(n == 0, "empty size %d", n);
    CHECK_MPI(MPI_Group_rank(g, &r));
    CHECK(r == MPI_UNDEFINED, "rank in empty group %d", r);
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Group_free(&wg));
}

static void test_group_set_ops(void)
{
    MPI_Group wg, ev, od, half, g;
    int list[64], want[64], n, ne, no, nh, res;

    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    ne = evens(list);
    CHECK_MPI(MPI_Group_incl(wg, ne, list, &ev));
    no = odds(list);
    CHECK_MPI(MPI_Group_incl(wg, no, list, &od));
    /* half: the first (size + 1) / 2 ranks, listed in reverse. */
    nh = (size + 1) / 2;
    for (int i = 0; i < nh; i++) {
        list[i] = nh - 1 - i;
    }
    CHECK_MPI(MPI_Group_incl(wg, nh, list, &half));

    /* union(evens, odds) = evens then odds. */
    n = evens(want);
    n += odds(want + n);
    CHECK_MPI(MPI_Group_union(ev, od, &g));
    expect_members(g, want, n, "union(evens, odds)");
    CHECK_MPI(MPI_Group_compare(g, wg, &res));
    CHECK(res == (size > 2 ? MPI_SIMILAR : MPI_IDENT), "compare(union, world) %d", res);
    CHECK_MPI(MPI_Group_free(&g));

    /* union(half, evens) = half (reversed), then the evens >= nh. */
    n = 0;
    for (int i = nh - 1; i >= 0; i--) {
        want[n++] = i;
    }
    for (int r = 0; r < size; r += 2) {
        if (r >= nh) {
            want[n++] = r;
        }
    }
    CHECK_MPI(MPI_Group_union(half, ev, &g));
    expect_members(g, want, n, "union(half, evens)");
    CHECK_MPI(MPI_Group_free(&g));

    /* intersection(half, evens) = the evens < nh, in half's (descending) order. */
    n = 0;
    for (int i = nh - 1; i >= 0; i--) {
        if (i % 2 == 0) {
            want[n++] = i;
        }
    }
    CHECK_MPI(MPI_Group_intersection(half, ev, &g));
    expect_members(g, want, n, "intersection(half, evens)");
    CHECK_MPI(MPI_Group_free(&g));

    /* intersection(evens, odds) is empty. */
    CHECK_MPI(MPI_Group_intersection(ev, od, &g));
    CHECK(g == MPI_GROUP_EMPTY, "disjoint intersection gave 0x%x", (unsigned)g);

    /* difference(world, evens) = odds; difference(evens, half) = evens >= nh. */
    n = odds(want);
    CHECK_MPI(MPI_Group_difference(wg, ev, &g));
    expect_members(g, want, n, "difference(world, evens)");
    CHECK_MPI(MPI_Group_free(&g));
    n = 0;
    for (int r = 0; r < size; r += 2) {
        if (r >= nh) {
            want[n++] = r;
        }
    }
    CHECK_MPI(MPI_Group_difference(ev, half, &g));
    expect_members(g, want, n, "difference(evens, half)");
    if (g != MPI_GROUP_EMPTY) {
        CHECK_MPI(MPI_Group_free(&g));
    }

    /* translate world ranks (and MPI_PROC_NULL) into the evens. */
    int in[65], out[65];
    for (int i = 0; i < size; i++) {
        in[i] = i;
    }
    in[size] = MPI_PROC_NULL;
    CHECK_MPI(MPI_Group_translate_ranks(wg, size + 1, in, ev, out));
    for (int i = 0; i < size; i++) {
        CHECK(out[i] == (i % 2 == 0 ? i / 2 : MPI_UNDEFINED), "translate %d -> %d", i, out[i]);
    }
    CHECK(out[size] == MPI_PROC_NULL, "translate PROC_NULL -> %d", out[size]);

    /* compare: a second world group is IDENT; reversed half vs. the first nh in order. */
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &g));
    CHECK_MPI(MPI_Group_compare(g, wg, &res));
    CHECK(res == MPI_IDENT, "compare(world, world) %d", res);
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Group_range_incl(wg, 1, (int[][3]){{0, nh - 1, 1}}, &g));
    CHECK_MPI(MPI_Group_compare(g, half, &res));
    CHECK(res == (nh > 1 ? MPI_SIMILAR : MPI_IDENT), "compare(first half, reversed) %d", res);
    CHECK_MPI(MPI_Group_compare(ev, wg, &res));
    CHECK(res == (size > 1 ? MPI_UNEQUAL : MPI_IDENT), "compare(evens, world) %d", res);
    CHECK_MPI(MPI_Group_free(&g));

    CHECK_MPI(MPI_Group_free(&half));
    CHECK_MPI(MPI_Group_free(&ev));
    if (od != MPI_GROUP_EMPTY) {
        CHECK_MPI(MPI_Group_free(&od));
    }
    CHECK_MPI(MPI_Group_free(&wg));
}

static void test_group_errors(void)
{
    MPI_Group wg, g = MPI_GROUP_NULL;
    int n, out;

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    int dup[2] = {0, 0};
    CHECK(errclass(MPI_Group_incl(wg, 2, dup, &g)) == MPI_ERR_RANK, "duplicate rank in incl");
    int far = size;
    CHECK(errclass(MPI_Group_incl(wg, 1, &far, &g)) == MPI_ERR_RANK, "out-of-range rank in incl");
    CHECK(errclass(MPI_Group_excl(wg, 2, dup, &g)) == MPI_ERR_RANK, "duplicate rank in excl");
    int neg = -1;
    CHECK(errclass(MPI_Group_excl(wg, 1, &neg, &g)) == MPI_ERR_RANK, "negative rank in excl");
    CHECK(errclass(MPI_Group_size(MPI_GROUP_NULL, &n)) == MPI_ERR_GROUP, "size of MPI_GROUP_NULL");
    CHECK(errclass(MPI_Group_translate_ranks(wg, 1, &far, wg, &out)) == MPI_ERR_RANK,
          "translate of an out-of-range rank");
    CHECK(errclass(MPI_Group_range_incl(wg, 1, (int[][3]){{0, 0, 0}}, &g)) == MPI_ERR_ARG,
          "stride 0");
    CHECK(g == MPI_GROUP_NULL, "a failed call set the group to 0x%x", (unsigned)g);
    CHECK_MPI(MPI_Group_free(&wg));
    CHECK(errclass(MPI_Group_free(&wg)) == MPI_ERR_GROUP, "double free");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Sum of the world ranks over comm: each member adds its own. */
static int world_sum(MPI_Comm comm)
{
    int s = 0;
    CHECK_MPI(MPI_Allreduce(&rank, &s, 1, MPI_INT, MPI_SUM, comm));
    return s;
}

static void test_comm_create(void)
{
    MPI_Group wg, ev, rev;
    MPI_Comm c;
    int list[64], n, r, s, want = 0;

    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    n = evens(list);
    CHECK_MPI(MPI_Group_incl(wg, n, list, &ev));
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, ev, &c));
    if (rank % 2 == 1) {
        CHECK(c == MPI_COMM_NULL, "odd rank got a communicator");
    } else {
        CHECK_MPI(MPI_Comm_size(c, &s));
        CHECK_MPI(MPI_Comm_rank(c, &r));
        CHECK(s == n && r == rank / 2, "evens comm: size %d rank %d", s, r);
        for (int i = 0; i < size; i += 2) {
            want += i;
        }
        CHECK(world_sum(c) == want, "sum over evens");
        CHECK_MPI(MPI_Comm_free(&c));
    }
    /* The whole world in reverse order. */
    for (int i = 0; i < size; i++) {
        list[i] = size - 1 - i;
    }
    CHECK_MPI(MPI_Group_incl(wg, size, list, &rev));
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, rev, &c));
    CHECK_MPI(MPI_Comm_rank(c, &r));
    CHECK(r == size - 1 - rank, "reversed comm rank %d", r);
    CHECK(world_sum(c) == size * (size - 1) / 2, "sum over reversed world");
    CHECK_MPI(MPI_Comm_free(&c));
    CHECK_MPI(MPI_Group_free(&rev));
    CHECK_MPI(MPI_Group_free(&ev));
    CHECK_MPI(MPI_Group_free(&wg));
}

/* create_group: the odds and the evens each build a communicator while the others do not
 * call; twice, with the same tag, to show that sequential calls do not mix. */
static void test_comm_create_group(void)
{
    MPI_Group wg, mine;
    MPI_Comm c;
    int list[64], n, r, s, want = 0;

    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &wg));
    n = rank % 2 == 0 ? evens(list) : odds(list);
    for (int i = 0; i < n; i++) {
        want += list[i];
    }
    CHECK_MPI(MPI_Group_incl(wg, n, list, &mine));
    for (int round = 0; round < 2; round++) {
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, mine, 7, &c));
        CHECK(c != MPI_COMM_NULL, "member got no communicator");
        CHECK_MPI(MPI_Comm_size(c, &s));
        CHECK_MPI(MPI_Comm_rank(c, &r));
        CHECK(s == n && r == rank / 2, "create_group: size %d rank %d", s, r);
        CHECK(world_sum(c) == want, "sum over my parity");
        CHECK_MPI(MPI_Comm_free(&c));
    }
    CHECK_MPI(MPI_Group_free(&mine));
    /* Only rank 0 alone: a group of one, the others do not call. */
    if (rank == 0) {
        int zero = 0;
        CHECK_MPI(MPI_Group_incl(wg, 1, &zero, &mine));
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, mine, 3, &c));
        CHECK(world_sum(c) == 0, "sum over rank 0 alone");
        CHECK_MPI(MPI_Comm_free(&c));
        CHECK_MPI(MPI_Group_free(&mine));
    }
    CHECK_MPI(MPI_Group_free(&wg));
    /* Communicators made by everyone afterwards still work. */
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c));
    CHECK(world_sum(c) == size * (size - 1) / 2, "sum over a later dup");
    CHECK_MPI(MPI_Comm_free(&c));
}

/* Node names of every rank, with bcasts over the world (not the code under test). */
static void test_split_type(void)
{
    char mine[MPI_MAX_PROCESSOR_NAME], other[MPI_MAX_PROCESSOR_NAME];
    int len, same = 0, before = 0, after = 0, zero_same = 0, s, r;
    MPI_Comm c;

    memset(mine, 0, sizeof(mine));
    CHECK_MPI(MPI_Get_processor_name(mine, &len));
    for (int i = 0; i < size; i++) {
        memcpy(other, mine, sizeof(mine));
        CHECK_MPI(MPI_Bcast(other, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, i, MPI_COMM_WORLD));
        if (strcmp(other, mine) == 0) {
            same++;
            before += i < rank;
            after += i > rank;
            zero_same += i == 0;
        }
    }
    /* key = -rank: the node's ranks in reverse order. */
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &c));
    CHECK_MPI(MPI_Comm_size(c, &s));
    CHECK_MPI(MPI_Comm_rank(c, &r));
    CHECK(s == same && r == after, "split_type: size %d (want %d) rank %d (want %d)", s, same, r,
          after);
    CHECK_MPI(MPI_Comm_free(&c));
    /* Rank 0 opts out. */
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED,
                                  rank, MPI_INFO_NULL, &c));
    if (rank == 0) {
        CHECK(c == MPI_COMM_NULL, "MPI_UNDEFINED got a communicator");
        return;
    }
    CHECK_MPI(MPI_Comm_size(c, &s));
    CHECK_MPI(MPI_Comm_rank(c, &r));
    /* Without rank 0: one member less, and one less before me, when it shares my node. */
    CHECK(s == same - zero_same && r == before - zero_same,
          "split_type without rank 0: size %d (want %d) rank %d (want %d)", s, same - zero_same, r,
          before - zero_same);
    CHECK_MPI(MPI_Comm_free(&c));
}

static void test_compare_idup_inter(void)
{
    MPI_Comm dup, rev, half, idup;
    MPI_Request req;
    int res, flag;

    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &res));
    CHECK(res == MPI_IDENT, "world vs world %d", res);
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, dup, &res));
    CHECK(res == MPI_CONGRUENT, "world vs dup %d", res);
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, &rev));
    CHECK_MPI(MPI_Comm_compare(rev, dup, &res));
    CHECK(res == (size > 1 ? MPI_SIMILAR : MPI_CONGRUENT), "reversed vs dup %d", res);
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank < (size + 1) / 2, rank, &half));
    CHECK_MPI(MPI_Comm_compare(half, MPI_COMM_WORLD, &res));
    CHECK(res == (size > 1 ? MPI_UNEQUAL : MPI_CONGRUENT), "half vs world %d", res);

    CHECK_MPI(MPI_Comm_idup(rev, &idup, &req));
    for (flag = 0; !flag;) {
        CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    }
    CHECK(req == MPI_REQUEST_NULL, "idup request not freed");
    CHECK_MPI(MPI_Comm_compare(rev, idup, &res));
    CHECK(res == MPI_CONGRUENT, "idup vs its parent %d", res);
    CHECK(world_sum(idup) == size * (size - 1) / 2, "sum over idup");

    CHECK_MPI(MPI_Comm_test_inter(dup, &flag));
    CHECK(flag == 0, "test_inter %d", flag);
    CHECK_MPI(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN));
    CHECK(errclass(MPI_Comm_remote_size(dup, &res)) == MPI_ERR_COMM, "remote_size on an intracomm");
    MPI_Group g;
    CHECK(errclass(MPI_Comm_remote_group(dup, &g)) == MPI_ERR_COMM, "remote_group on an intracomm");
    CHECK_MPI(MPI_Comm_free(&idup));
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&rev));
    CHECK_MPI(MPI_Comm_free(&dup));
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "at most 64 ranks (have %d)", size);
    test_group_basics();
    test_group_set_ops();
    test_group_errors();
    test_comm_create();
    test_comm_create_group();
    test_split_type();
    test_compare_idup_inter();
    return mrt_finish("mr_comm");
}
