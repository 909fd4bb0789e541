/* Process topologies and neighbourhood collectives: Cartesian grids (2-D and 3-D, periodic
 * and not) checked against coordinates computed by formula, MPI_Dims_create with known
 * answers, Cart_sub, a halo exchange, distributed graphs (adjacent and general), the old
 * graph calls, and the non-blocking neighbourhood forms with MPI_Test polling. */
#include "mrtest.h"

#include <stdbool.h>
#include <string.h>

static int rank, size;

/* The error class of a returned code (MPI returns codes; classes are what is portable). */
static int errclass(int code)
{
    int c = -1;
    MPI_Error_class(code, &c);
    return c;
}

static void test_dims_create(void)
{
    struct {
        int n, nd, in[4], want[4];
    } cases[] = {
        /* Ties of the largest-smallest spread go to the larger smallest factor, then the next
         * (MPICH's answers, from its test topo/dims5's table; 54x44x29 and 13x12x6x6 before). */
        {68904, 3, {0, 0, 0}, {58, 36, 33}},
        {71400, 3, {0, 0, 0}, {51, 40, 35}},
        {100320, 3, {0, 0, 0}, {57, 44, 40}},
        {5616, 4, {0, 0, 0, 0}, {13, 9, 8, 6}},
        {6, 2, {0, 0}, {3, 2}},
        {7, 2, {0, 0}, {7, 1}},
        {12, 3, {0, 0, 0}, {3, 2, 2}},
        {16, 2, {0, 0}, {4, 4}},
        {24, 3, {0, 0, 0}, {4, 3, 2}},
        {1, 3, {0, 0, 0}, {1, 1, 1}},
        {1000, 3, {0, 0, 0}, {10, 10, 10}},
        {30, 2, {0, 0}, {6, 5}},
        {12, 3, {0, 3, 0}, {2, 3, 2}},
        {8, 2, {2, 0}, {2, 4}},
        {1000003, 2, {0, 0}, {1000003, 1}},
        {36, 2, {0, 0}, {6, 6}},
        {8, 3, {0, 0, 0}, {2, 2, 2}},
        {6, 3, {1, 0, 1}, {1, 6, 1}},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(*cases); c++) {
        int d[4];
        memcpy(d, cases[c].in, sizeof(d));
        CHECK_MPI(MPI_Dims_create(cases[c].n, cases[c].nd, d));
        for (int i = 0; i < cases[c].nd; i++) {
            CHECK(d[i] == cases[c].want[i], "Dims_create(%d, %d) case %zu: dims[%d] = %d, want %d",
                  cases[c].n, cases[c].nd, c, i, d[i], cases[c].want[i]);
        }
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int bad[2] = {2, 0};
    CHECK(errclass(MPI_Dims_create(7, 2, bad)) == MPI_ERR_DIMS, "7 nodes with a fixed 2");
    int full[2] = {2, 3};
    CHECK(errclass(MPI_Dims_create(7, 2, full)) == MPI_ERR_DIMS, "7 nodes with all fixed to 6");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* The rank at coordinates c on a grid (row-major), wrapping periodic dimensions;
 * MPI_PROC_NULL off an open edge. Written out independently of the library. */
static int grid_rank(int nd, const int *dims, const int *periods, const int *c)
{
    int r = 0;
    for (int d = 0; d < nd; d++) {
        int x = c[d];
        if (x < 0 || x >= dims[d]) {
            if (!periods[d]) {
                return MPI_PROC_NULL;
            }
            x = ((x % dims[d]) + dims[d]) % dims[d];
        }
        r = r * dims[d] + x;
    }
    return r;
}

static void grid_coords(int nd, const int *dims, int r, int *c)
{
    for (int d = nd - 1; d >= 0; d--) {
        c[d] = r % dims[d];
        r /= dims[d];
    }
}

/* Coordinates, ranks and shifts of every rank of a grid, against the formulas. */
static void check_grid(MPI_Comm cart, int nd, const int *dims, const int *periods)
{
    int n = 1, c[3], got[3], r, src, dst;

    for (int d = 0; d < nd; d++) {
        n *= dims[d];
    }
    for (int q = 0; q < n; q++) {
        grid_coords(nd, dims, q, c);
        CHECK_MPI(MPI_Cart_coords(cart, q, nd, got));
        for (int d = 0; d < nd; d++) {
            CHECK(got[d] == c[d], "coords of %d, dim %d: %d want %d", q, d, got[d], c[d]);
        }
        CHECK_MPI(MPI_Cart_rank(cart, c, &r));
        CHECK(r == q, "Cart_rank of coords of %d: %d", q, r);
    }
    grid_coords(nd, dims, rank, c);
    for (int d = 0; d < nd; d++) {
        for (int disp = -2; disp <= 2; disp++) {
            int cs[3], cd[3];
            memcpy(cs, c, sizeof(cs));
            memcpy(cd, c, sizeof(cd));
            cs[d] -= disp;
            cd[d] += disp;
            CHECK_MPI(MPI_Cart_shift(cart, d, disp, &src, &dst));
            CHECK(src == grid_rank(nd, dims, periods, cs) &&
                      dst == grid_rank(nd, dims, periods, cd),
                  "shift dim %d disp %d: src %d dst %d", d, disp, src, dst);
        }
        /* A coordinate one grid length away: same rank when periodic, an error when not. */
        int far[3];
        memcpy(far, c, sizeof(far));
        far[d] += dims[d];
        CHECK_MPI(MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN));
        int rc = MPI_Cart_rank(cart, far, &r);
        if (periods[d]) {
            CHECK(rc == MPI_SUCCESS && r == rank, "periodic wrap in dim %d: rc %d rank %d", d, rc,
                  r);
        } else {
            CHECK(errclass(rc) == MPI_ERR_RANK, "off the open edge of dim %d: rc %d", d, rc);
        }
        CHECK_MPI(MPI_Comm_set_errhandler(cart, MPI_ERRORS_ARE_FATAL));
    }
    int gd[3], gp[3], gc[3], nd2, status;
    CHECK_MPI(MPI_Cartdim_get(cart, &nd2));
    CHECK(nd2 == nd, "Cartdim_get %d", nd2);
    CHECK_MPI(MPI_Cart_get(cart, nd, gd, gp, gc));
    for (int d = 0; d < nd; d++) {
        CHECK(gd[d] == dims[d] && gp[d] == periods[d] && gc[d] == c[d], "Cart_get dim %d", d);
    }
    CHECK_MPI(MPI_Topo_test(cart, &status));
    CHECK(status == MPI_CART, "Topo_test %d", status);
}

static void test_cart_2d(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 0};
    MPI_Comm cart;

    CHECK_MPI(MPI_Dims_create(size, 2, dims));
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    check_grid(cart, 2, dims, periods);
    CHECK_MPI(MPI_Comm_free(&cart));
    int status;
    CHECK_MPI(MPI_Topo_test(MPI_COMM_WORLD, &status));
    CHECK(status == MPI_UNDEFINED, "world has topology %d", status);
}

/* A 3-D grid that may leave ranks out: {2,2,2} at 8, {2,2,1} at 5 (rank 4 is out) ... */
static void grid3(int *dims)
{
    static const int table[9][3] = {{1, 1, 1}, {1, 1, 1}, {2, 1, 1}, {1, 3, 1}, {2, 1, 2},
                                    {2, 2, 1}, {3, 2, 1}, {3, 1, 2}, {2, 2, 2}};
    memcpy(dims, table[size <= 8 ? size : 8], sizeof(int) * 3);
}

static void test_cart_3d_and_sub(void)
{
    int dims[3], periods[3] = {1, 0, 1}, n, c[3];
    MPI_Comm cart, sub;

    grid3(dims);
    n = dims[0] * dims[1] * dims[2];
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 3, dims, periods, 0, &cart));
    if (rank >= n) {
        CHECK(cart == MPI_COMM_NULL, "rank %d outside a grid of %d got a communicator", rank, n);
        return;
    }
    check_grid(cart, 3, dims, periods);

    /* Keep dimensions 0 and 2: the ranks with my coordinate in dimension 1. */
    int remain[3] = {1, 0, 1}, sd[2], sp[2], sc[2], sr, ssize, nd, sum = 0, want = 0;
    grid_coords(3, dims, rank, c);
    CHECK_MPI(MPI_Cart_sub(cart, remain, &sub));
    CHECK_MPI(MPI_Comm_size(sub, &ssize));
    CHECK_MPI(MPI_Comm_rank(sub, &sr));
    CHECK(ssize == dims[0] * dims[2] && sr == c[0] * dims[2] + c[2], "sub: size %d rank %d", ssize,
          sr);
    CHECK_MPI(MPI_Cartdim_get(sub, &nd));
    CHECK_MPI(MPI_Cart_get(sub, 2, sd, sp, sc));
    CHECK(nd == 2 && sd[0] == dims[0] && sd[1] == dims[2] && sp[0] == 1 && sp[1] == 1 &&
              sc[0] == c[0] && sc[1] == c[2],
          "sub topology: nd %d dims %d,%d coords %d,%d", nd, sd[0], sd[1], sc[0], sc[1]);
    for (int a = 0; a < dims[0]; a++) {
        for (int b = 0; b < dims[2]; b++) {
            want += (a * dims[1] + c[1]) * dims[2] + b;
        }
    }
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, sub));
    CHECK(sum == want, "sum over the sub-grid %d want %d", sum, want);
    CHECK_MPI(MPI_Comm_free(&sub));

    /* idup keeps the topology. */
    MPI_Comm d;
    MPI_Request req;
    int flag = 0, status;
    CHECK_MPI(MPI_Comm_idup(cart, &d, &req));
    while (!flag) {
        CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
    }
    CHECK_MPI(MPI_Topo_test(d, &status));
    CHECK(status == MPI_CART, "idup of a grid has topology %d", status);
    CHECK_MPI(MPI_Comm_free(&d));
    CHECK_MPI(MPI_Comm_free(&cart));
}

/* What my neighbour in slot k (Cartesian order) sent me: its slot k^1, the opposite
 * direction. This holds also when a periodic dimension has 1 or 2 ranks, so that both
 * neighbours are one process (MPI-4.0 made this explicit; MPICH does it). */
static int sent_slot(int k)
{
    return k ^ 1;
}

static void wait_polling(MPI_Request *req)
{
    int flag = 0, rc = MPI_SUCCESS;
    while (!flag && rc == MPI_SUCCESS) {
        rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    }
    CHECK(rc == MPI_SUCCESS, "MPI_Test returned %d", rc);
    CHECK(*req == MPI_REQUEST_NULL, "completed request not freed");
}

/* 2-D halo exchange: 2 ints per neighbour, blocking then non-blocking; then allgather and
 * alltoallw with a strided receive type. */
static void test_halo(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 0}, nbr[4], c[2];
    int send[8], recv[8];
    MPI_Comm cart;

    CHECK_MPI(MPI_Dims_create(size, 2, dims));
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    grid_coords(2, dims, rank, c);
    for (int k = 0; k < 4; k++) {
        int cc[2] = {c[0], c[1]};
        cc[k / 2] += k % 2 ? 1 : -1;
        nbr[k] = grid_rank(2, dims, periods, cc);
    }
    for (int nb = 0; nb < 2; nb++) {
        for (int k = 0; k < 8; k++) {
            send[k] = rank * 100 + (k / 2) * 10 + k % 2;
            recv[k] = -1;
        }
        if (nb) {
            MPI_Request req;
            CHECK_MPI(MPI_Ineighbor_alltoall(send, 2, MPI_INT, recv, 2, MPI_INT, cart, &req));
            wait_polling(&req);
        } else {
            CHECK_MPI(MPI_Neighbor_alltoall(send, 2, MPI_INT, recv, 2, MPI_INT, cart));
        }
        for (int k = 0; k < 4; k++) {
            int s = sent_slot(k);
            for (int e = 0; e < 2; e++) {
                int want = nbr[k] == MPI_PROC_NULL ? -1 : nbr[k] * 100 + s * 10 + e;
                CHECK(recv[2 * k + e] == want, "halo%s slot %d elem %d: %d want %d",
                      nb ? " (non-blocking)" : "", k, e, recv[2 * k + e], want);
            }
        }
    }

    /* allgather: everybody sends its rank to all four. */
    int mine = rank * 3 + 1;
    MPI_Request req;
    for (int k = 0; k < 4; k++) {
        recv[k] = -1;
    }
    CHECK_MPI(MPI_Ineighbor_allgather(&mine, 1, MPI_INT, recv, 1, MPI_INT, cart, &req));
    wait_polling(&req);
    for (int k = 0; k < 4; k++) {
        int want = nbr[k] == MPI_PROC_NULL ? -1 : nbr[k] * 3 + 1;
        CHECK(recv[k] == want, "neighbor_allgather slot %d: %d want %d", k, recv[k], want);
    }

    /* alltoallw: 2 ints out of each send slot, received through a vector type that spreads
     * them at a stride of 2 ints, in 16-byte slots in reverse slot order. */
    MPI_Datatype vec, stypes[4], rtypes[4];
    MPI_Aint sd[4], rd[4];
    int sc[4], rc[4], wrecv[16];
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    for (int k = 0; k < 4; k++) {
        stypes[k] = MPI_INT;
        sc[k] = 2;
        sd[k] = (MPI_Aint)(2 * k * sizeof(int));
        rtypes[k] = vec;
        rc[k] = 1;
        rd[k] = (MPI_Aint)((3 - k) * 4 * sizeof(int));
    }
    for (int k = 0; k < 16; k++) {
        wrecv[k] = -1;
    }
    for (int k = 0; k < 8; k++) {
        send[k] = rank * 100 + (k / 2) * 10 + k % 2;
    }
    for (int nb = 0; nb < 2; nb++) {
        if (nb) {
            CHECK_MPI(
                MPI_Ineighbor_alltoallw(send, sc, sd, stypes, wrecv, rc, rd, rtypes, cart, &req));
            wait_polling(&req);
        } else {
            CHECK_MPI(MPI_Neighbor_alltoallw(send, sc, sd, stypes, wrecv, rc, rd, rtypes, cart));
        }
        for (int k = 0; k < 4; k++) {
            int s = sent_slot(k), *slot = wrecv + (3 - k) * 4;
            for (int e = 0; e < 2; e++) {
                int want = nbr[k] == MPI_PROC_NULL ? -1 : nbr[k] * 100 + s * 10 + e;
                CHECK(slot[2 * e] == want && slot[2 * e + 1] == -1,
                      "alltoallw slot %d elem %d: %d want %d (gap %d)", k, e, slot[2 * e], want,
                      slot[2 * e + 1]);
            }
        }
    }
    CHECK_MPI(MPI_Type_free(&vec));
    CHECK_MPI(MPI_Comm_free(&cart));
}

/* A ring with weights through Dist_graph_create_adjacent: in-neighbours left and right,
 * out-neighbours right and left. */
static void test_ring(void)
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    int srcs[2] = {left, right}, sw[2] = {10 * left + rank, 10 * right + rank};
    int dsts[2] = {right, left}, dw[2] = {10 * rank + right, 10 * rank + left};
    int nin, nout, weighted, gs[2], gsw[2], gd[2], gdw[2], status;
    MPI_Comm ring;

    CHECK_MPI(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, srcs, sw, 2, dsts, dw,
                                             MPI_INFO_NULL, 0, &ring));
    CHECK_MPI(MPI_Topo_test(ring, &status));
    CHECK(status == MPI_DIST_GRAPH, "Topo_test %d", status);
    CHECK_MPI(MPI_Dist_graph_neighbors_count(ring, &nin, &nout, &weighted));
    CHECK(nin == 2 && nout == 2 && weighted, "counts %d %d %d", nin, nout, weighted);
    CHECK_MPI(MPI_Dist_graph_neighbors(ring, 2, gs, gsw, 2, gd, gdw));
    for (int i = 0; i < 2; i++) {
        CHECK(gs[i] == srcs[i] && gsw[i] == sw[i] && gd[i] == dsts[i] && gdw[i] == dw[i],
              "ring neighbour %d: %d/%d %d/%d", i, gs[i], gsw[i], gd[i], gdw[i]);
    }

    /* allgatherv: 2 ints from each, the left one's at offset 2, the right one's at 0. */
    int mine[2] = {rank * 10, rank * 10 + 1}, recv[5], counts[2] = {2, 2}, displs[2] = {2, 0};
    for (int nb = 0; nb < 2; nb++) {
        for (int i = 0; i < 5; i++) {
            recv[i] = -1;
        }
        if (nb) {
            MPI_Request req;
            CHECK_MPI(MPI_Ineighbor_allgatherv(mine, 2, MPI_INT, recv, counts, displs, MPI_INT,
                                               ring, &req));
            wait_polling(&req);
        } else {
            CHECK_MPI(
                MPI_Neighbor_allgatherv(mine, 2, MPI_INT, recv, counts, displs, MPI_INT, ring));
        }
        CHECK(recv[2] == left * 10 && recv[3] == left * 10 + 1 && recv[0] == right * 10 &&
                  recv[1] == right * 10 + 1 && recv[4] == -1,
              "ring allgatherv: %d %d %d %d %d", recv[0], recv[1], recv[2], recv[3], recv[4]);
    }
    CHECK_MPI(MPI_Comm_free(&ring));
}

/* The edges rank r declares in the irregular graph: r -> r+1, r -> (r*r + 3) for even r,
 * and (r+2) -> r on behalf of another rank; the last rank declares none. */
static int declared(int r, int *src, int *dst)
{
    int k = 0;
    if (r == size - 1 && size > 1) {
        return 0;
    }
    src[k] = r, dst[k++] = (r + 1) % size;
    if (r % 2 == 0) {
        src[k] = r, dst[k++] = (r * r + 3) % size;
    }
    src[k] = (r + 2) % size, dst[k++] = r;
    return k;
}

static int count_edges(int who, bool as_src)
{
    int src[3], dst[3], n = 0;
    for (int r = 0; r < size; r++) {
        int k = declared(r, src, dst);
        for (int e = 0; e < k; e++) {
            n += as_src ? src[e] == who : dst[e] == who;
        }
    }
    return n;
}

static void test_irregular_graph(void)
{
    int src[3], dst[3], w[3], k = declared(rank, src, dst), sources[3], degrees[3], n = 0;
    int nin, nout, weighted;
    MPI_Comm g;

    /* Group my declared edges by source, as Dist_graph_create wants them. */
    for (int e = 0; e < k; e++) {
        if (n == 0 || sources[n - 1] != src[e]) {
            sources[n] = src[e];
            degrees[n++] = 0;
        }
        degrees[n - 1]++;
        w[e] = src[e] * 1000 + dst[e];
    }
    CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, n, sources, degrees, dst,
                                    k ? w : MPI_WEIGHTS_EMPTY, MPI_INFO_NULL, 0, &g));
    CHECK_MPI(MPI_Dist_graph_neighbors_count(g, &nin, &nout, &weighted));
    CHECK(nin == count_edges(rank, false) && nout == count_edges(rank, true) && weighted,
          "irregular counts: in %d (want %d) out %d (want %d) weighted %d", nin,
          count_edges(rank, false), nout, count_edges(rank, true), weighted);
    int in[16], inw[16], out[16], outw[16];
    CHECK(nin <= 16 && nout <= 16, "degrees %d %d", nin, nout);
    CHECK_MPI(MPI_Dist_graph_neighbors(g, nin, in, inw, nout, out, outw));
    /* Each edge's weight names it; every in-edge must be declared, counted per source. */
    for (int i = 0; i < nin; i++) {
        CHECK(inw[i] == in[i] * 1000 + rank, "in-edge %d from %d weight %d", i, in[i], inw[i]);
    }
    for (int i = 0; i < nout; i++) {
        CHECK(outw[i] == rank * 1000 + out[i], "out-edge %d to %d weight %d", i, out[i], outw[i]);
    }
    for (int p = 0; p < size; p++) {
        int want_in = 0, want_out = 0, got_in = 0, got_out = 0;
        for (int r = 0; r < size; r++) {
            int s2[3], d2[3], k2 = declared(r, s2, d2);
            for (int e = 0; e < k2; e++) {
                want_in += s2[e] == p && d2[e] == rank;
                want_out += s2[e] == rank && d2[e] == p;
            }
        }
        for (int i = 0; i < nin; i++) {
            got_in += in[i] == p;
        }
        for (int i = 0; i < nout; i++) {
            got_out += out[i] == p;
        }
        CHECK(got_in == want_in && got_out == want_out, "edges with %d: in %d/%d out %d/%d", p,
              got_in, want_in, got_out, want_out);
    }

    /* alltoall over the graph (blocking and not): on the edge to p send rank * 1000 + p. */
    int sbuf[16], rbuf[16];
    for (int nb = 0; nb < 2; nb++) {
        for (int i = 0; i < nout; i++) {
            sbuf[i] = rank * 1000 + out[i];
        }
        for (int i = 0; i < nin; i++) {
            rbuf[i] = -1;
        }
        if (nb) {
            MPI_Request req;
            CHECK_MPI(MPI_Ineighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, g, &req));
            wait_polling(&req);
        } else {
            CHECK_MPI(MPI_Neighbor_alltoall(sbuf, 1, MPI_INT, rbuf, 1, MPI_INT, g));
        }
        for (int i = 0; i < nin; i++) {
            CHECK(rbuf[i] == in[i] * 1000 + rank, "graph alltoall from %d: %d", in[i], rbuf[i]);
        }
    }
    /* alltoallv: i+1 ints to out-neighbour i would need the receiver to know i; instead send
     * 2 ints everywhere, laid out in reverse slot order with a gap of one. */
    int scounts[16], sdispls[16], rcounts[16], rdispls[16], sv[48], rv[48];
    for (int i = 0; i < nout; i++) {
        scounts[i] = 2;
        sdispls[i] = 3 * (nout - 1 - i);
        sv[sdispls[i]] = rank * 1000 + out[i];
        sv[sdispls[i] + 1] = -(rank * 1000 + out[i]);
    }
    for (int i = 0; i < nin; i++) {
        rcounts[i] = 2;
        rdispls[i] = 3 * i;
    }
    for (int i = 0; i < 48; i++) {
        rv[i] = -7;
    }
    CHECK_MPI(
        MPI_Neighbor_alltoallv(sv, scounts, sdispls, MPI_INT, rv, rcounts, rdispls, MPI_INT, g));
    for (int i = 0; i < nin; i++) {
        int want = in[i] * 1000 + rank;
        CHECK(rv[3 * i] == want && rv[3 * i + 1] == -want && rv[3 * i + 2] == -7,
              "graph alltoallv from %d: %d %d %d", in[i], rv[3 * i], rv[3 * i + 1], rv[3 * i + 2]);
    }
    CHECK_MPI(MPI_Comm_free(&g));
}

/* The old graph interface: a ring of the first size-1 ranks (all of them at size 1). */
static void test_graph(void)
{
    int nn = size > 1 ? size - 1 : 1, index[64], edges[128], status, nnodes, nedges, cnt;
    MPI_Comm g;

    for (int i = 0; i < nn; i++) {
        edges[2 * i] = (i + nn - 1) % nn;
        edges[2 * i + 1] = (i + 1) % nn;
        index[i] = 2 * (i + 1);
    }
    CHECK_MPI(MPI_Graph_create(MPI_COMM_WORLD, nn, index, edges, 0, &g));
    if (rank >= nn) {
        CHECK(g == MPI_COMM_NULL, "rank outside the graph got a communicator");
        return;
    }
    CHECK_MPI(MPI_Topo_test(g, &status));
    CHECK_MPI(MPI_Graphdims_get(g, &nnodes, &nedges));
    CHECK(status == MPI_GRAPH && nnodes == nn && nedges == 2 * nn, "graph %d %d %d", status, nnodes,
          nedges);
    int gi[64], ge[128], nb[2];
    CHECK_MPI(MPI_Graph_get(g, nn, 2 * nn, gi, ge));
    for (int i = 0; i < nn; i++) {
        CHECK(gi[i] == index[i] && ge[2 * i] == edges[2 * i] && ge[2 * i + 1] == edges[2 * i + 1],
              "Graph_get node %d", i);
    }
    CHECK_MPI(MPI_Graph_neighbors_count(g, rank, &cnt));
    CHECK_MPI(MPI_Graph_neighbors(g, rank, 2, nb));
    CHECK(cnt == 2 && nb[0] == (rank + nn - 1) % nn && nb[1] == (rank + 1) % nn,
          "Graph_neighbors %d: %d %d", cnt, nb[0], nb[1]);
    int mine = rank + 5, recv[2] = {-1, -1};
    CHECK_MPI(MPI_Neighbor_allgather(&mine, 1, MPI_INT, recv, 1, MPI_INT, g));
    CHECK(recv[0] == nb[0] + 5 && recv[1] == nb[1] + 5, "graph allgather %d %d", recv[0], recv[1]);
    CHECK_MPI(MPI_Comm_free(&g));
}

static void test_errors(void)
{
    int dims[2] = {size + 1, 1}, periods[2] = {0, 0}, recv[4];
    MPI_Comm c = MPI_COMM_NULL;

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(errclass(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c)) == MPI_ERR_TOPOLOGY,
          "a grid larger than the communicator");
    dims[0] = 0;
    CHECK(errclass(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &c)) == MPI_ERR_DIMS,
          "a 0 dim");
    CHECK(errclass(MPI_Neighbor_allgather(&rank, 1, MPI_INT, recv, 1, MPI_INT, MPI_COMM_WORLD)) ==
              MPI_ERR_TOPOLOGY,
          "neighbour collective without a topology");
    int nd;
    CHECK(errclass(MPI_Cartdim_get(MPI_COMM_WORLD, &nd)) == MPI_ERR_TOPOLOGY,
          "Cartdim_get on the world");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size <= 64, "at most 64 ranks (have %d)", size);
    test_dims_create();
    test_cart_2d();
    test_cart_3d_and_sub();
    test_halo();
    test_ring();
    test_irregular_graph();
    test_graph();
    test_errors();
    return mrt_finish("mr_topo");
}
