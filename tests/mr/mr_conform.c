/* MPI conformance fixes of issue 38, one function per fix, each checking values it computes
 * itself:
 * - pair types (MPI_DOUBLE_INT, ...) match by type signature, not by their padded layout:
 *   point-to-point against a struct type, MPI_Pack/Unpack, sizes, and MINLOC/MAXLOC;
 * - collectives with count 0 and NULL buffers return on every rank (no hang);
 * - completion calls with count 0 and NULL arrays, and point-to-point calls with a NULL
 *   buffer and count > 0 (MPI_ERR_BUFFER, no crash);
 * - the smaller items: persistent requests outliving their type, MPI_Get_elements on a
 *   partial message, status.MPI_ERROR untouched, error strings and classes, MPI_REPLACE and
 *   MPI_NO_OP commutative, user ops on a derived type;
 * - types of more blocks than the flat form keeps (compact) across ranks. */
#include "mrtest.h"

#include <complex.h>
#include <float.h>
#include <stddef.h>
#include <string.h>

static int rank, size;

/* The C layouts MPI's pair types describe. */
struct d_i {
    double v;
    int i;
};
struct s_i {
    short v;
    int i;
};
struct l_i {
    long v;
    int i;
};
struct ld_i {
    long double v;
    int i;
};
/* Two pairs spelled out, as a program that never heard of MPI_DOUBLE_INT would send them. */
struct two {
    double a;
    int b;
    double c;
    int d;
};

/* {double, int, double, int} as a struct type with the C struct's displacements. */
static MPI_Datatype two_type(void)
{
    int bl[4] = {1, 1, 1, 1};
    MPI_Aint disp[4] = {offsetof(struct two, a), offsetof(struct two, b), offsetof(struct two, c),
                        offsetof(struct two, d)};
    MPI_Datatype types[4] = {MPI_DOUBLE, MPI_INT, MPI_DOUBLE, MPI_INT}, t;

    CHECK_MPI(MPI_Type_create_struct(4, bl, disp, types, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    return t;
}

/* Rank r sends to (r + 1) % size and receives from (r - 1 + size) % size: one message as
 * struct two, one as 2 x MPI_DOUBLE_INT, each received as the other. */
static void pairs_match_by_signature(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    MPI_Datatype t = two_type();
    struct two s2 = {rank + 0.5, rank + 10, rank + 2.5, rank + 20}, r2;
    struct d_i sp[2] = {{rank + 100.25, rank + 7}, {rank + 200.75, rank + 8}}, rp[2];
    MPI_Request q[2];
    MPI_Status st;
    int n;

    memset(rp, 0xff, sizeof(rp));
    memset(&r2, 0xff, sizeof(r2));
    CHECK_MPI(MPI_Irecv(rp, 2, MPI_DOUBLE_INT, from, 1, MPI_COMM_WORLD, &q[0]));
    CHECK_MPI(MPI_Irecv(&r2, 1, t, from, 2, MPI_COMM_WORLD, &q[1]));
    CHECK_MPI(MPI_Send(&s2, 1, t, to, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Send(sp, 2, MPI_DOUBLE_INT, to, 2, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&q[0], &st));
    CHECK(rp[0].v == from + 0.5 && rp[0].i == from + 10 && rp[1].v == from + 2.5 &&
              rp[1].i == from + 20,
          "received %g %d %g %d from %d", rp[0].v, rp[0].i, rp[1].v, rp[1].i, from);
    CHECK_MPI(MPI_Get_count(&st, MPI_DOUBLE_INT, &n));
    CHECK(n == 2, "MPI_Get_count gave %d pairs", n);
    CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &n));
    CHECK(n == 24, "MPI_Get_count gave %d bytes, the signature holds 24", n);
    CHECK_MPI(MPI_Wait(&q[1], MPI_STATUS_IGNORE));
    CHECK(r2.a == from + 100.25 && r2.b == from + 7 && r2.c == from + 200.75 && r2.d == from + 8,
          "received %g %d %g %d from %d", r2.a, r2.b, r2.c, r2.d, from);
    CHECK_MPI(MPI_Type_free(&t));
}

/* MPI_Pack of pair types writes the signature's bytes; sizes say the same. */
static void pairs_pack_without_padding(void)
{
    struct s_i in[2] = {{-3, 40}, {5, -60}}, out[2];
    char buf[64];
    short sv;
    int iv, pos = 0, sz;

    CHECK_MPI(MPI_Type_size(MPI_DOUBLE_INT, &sz));
    CHECK(sz == (int)(sizeof(double) + sizeof(int)), "MPI_Type_size(MPI_DOUBLE_INT) = %d", sz);
    CHECK_MPI(MPI_Type_size(MPI_SHORT_INT, &sz));
    CHECK(sz == (int)(sizeof(short) + sizeof(int)), "MPI_Type_size(MPI_SHORT_INT) = %d", sz);
    CHECK_MPI(MPI_Pack_size(3, MPI_LONG_INT, MPI_COMM_WORLD, &sz));
    CHECK(sz == 3 * (int)(sizeof(long) + sizeof(int)), "MPI_Pack_size(3, MPI_LONG_INT) = %d", sz);
    CHECK_MPI(MPI_Pack(in, 2, MPI_SHORT_INT, buf, sizeof(buf), &pos, MPI_COMM_WORLD));
    CHECK(pos == 2 * (int)(sizeof(short) + sizeof(int)), "packed %d bytes", pos);
    /* Read back as the signature says: short, int, short, int. */
    pos = 0;
    for (int k = 0; k < 2; k++) {
        CHECK_MPI(MPI_Unpack(buf, sizeof(buf), &pos, &sv, 1, MPI_SHORT, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Unpack(buf, sizeof(buf), &pos, &iv, 1, MPI_INT, MPI_COMM_WORLD));
        CHECK(sv == in[k].v && iv == in[k].i, "pair %d unpacked as %d %d", k, sv, iv);
    }
    pos = 0;
    memset(out, 0, sizeof(out));
    CHECK_MPI(MPI_Unpack(buf, sizeof(buf), &pos, out, 2, MPI_SHORT_INT, MPI_COMM_WORLD));
    CHECK(out[0].v == -3 && out[0].i == 40 && out[1].v == 5 && out[1].i == -60,
          "round trip gave %d %d %d %d", out[0].v, out[0].i, out[1].v, out[1].i);
}

/* The value rank r contributes at index k, chosen so that ties happen (several ranks share a
 * value) and the winner moves with k. */
static int loc_val(int r, int k)
{
    return ((r * 7 + k * 3) % 5) - 2;
}

/* The expected MAXLOC (max != 0) or MINLOC pair at index k: best value, smallest index. */
static void loc_expect(int k, int max, int *v, int *i)
{
    *v = loc_val(0, k);
    *i = 0;
    for (int r = 1; r < size; r++) {
        int x = loc_val(r, k);
        if (max ? x > *v : x < *v) {
            *v = x;
            *i = r;
        }
    }
}

/* MAXLOC and MINLOC over every padded pair type, small (one message) and large (past the
 * eager size), allreduce and reduce, and MPI_Reduce_local. The index is rank * 3 + 1 so that
 * it is not the rank itself; the expected index is computed from the winning rank. */
#define LOC_CASE(ST, DT, N)                                                                        \
    do {                                                                                           \
        struct ST *a = malloc(sizeof(*a) * (N)), *b = malloc(sizeof(*b) * (N));                   \
        for (int op = 0; op < 2; op++) {                                                           \
            for (int k = 0; k < (N); k++) {                                                        \
                a[k].v = loc_val(rank, k);                                                         \
                a[k].i = rank * 3 + 1;                                                             \
                b[k].v = 99;                                                                       \
                b[k].i = -1;                                                                       \
            }                                                                                      \
            if (op == 0) {                                                                         \
                CHECK_MPI(MPI_Allreduce(a, b, (N), DT, MPI_MAXLOC, MPI_COMM_WORLD));               \
            } else {                                                                               \
                CHECK_MPI(MPI_Reduce(a, b, (N), DT, MPI_MINLOC, size - 1, MPI_COMM_WORLD));        \
            }                                                                                      \
            for (int k = 0; k < (N) && (op == 0 || rank == size - 1); k++) {                       \
                int v, w;                                                                          \
                loc_expect(k, op == 0, &v, &w);                                                    \
                CHECK(b[k].v == v && b[k].i == w * 3 + 1, "%s %s[%d] = (%g, %d), not (%d, %d)",    \
                      #DT, op ? "minloc" : "maxloc", k, (double)b[k].v, b[k].i, v, w * 3 + 1);     \
            }                                                                                      \
        }                                                                                          \
        for (int k = 0; k < (N); k++) {                                                            \
            a[k].v = (k % 3) - 1;                                                                  \
            a[k].i = k;                                                                            \
            b[k].v = 0;                                                                            \
            b[k].i = 1000;                                                                         \
        }                                                                                          \
        CHECK_MPI(MPI_Reduce_local(a, b, (N), DT, MPI_MINLOC));                                    \
        for (int k = 0; k < (N); k++) {                                                            \
            int x = (k % 3) - 1, v = x < 0 ? -1 : 0, w = x < 0 || (x == 0 && k < 1000) ? k : 1000; \
            CHECK(b[k].v == v && b[k].i == w, "%s reduce_local[%d] = (%g, %d), not (%d, %d)",      \
                  #DT, k, (double)b[k].v, b[k].i, v, w);                                           \
        }                                                                                          \
        free(a);                                                                                   \
        free(b);                                                                                   \
    } while (0)

static void minloc_maxloc_on_pairs(void)
{
    LOC_CASE(d_i, MPI_DOUBLE_INT, 3);
    LOC_CASE(d_i, MPI_DOUBLE_INT, 5000);
    LOC_CASE(s_i, MPI_SHORT_INT, 3);
    LOC_CASE(s_i, MPI_SHORT_INT, 5000);
    LOC_CASE(l_i, MPI_LONG_INT, 7);
    LOC_CASE(ld_i, MPI_LONG_DOUBLE_INT, 7);
    LOC_CASE(ld_i, MPI_LONG_DOUBLE_INT, 2000);
}

/* Rooted and all-to-all collectives with count 0 and NULL buffers return on every rank;
 * a barrier after each would hang if one rank were left waiting. */
static void zero_count_collectives_with_null_buffers(void)
{
    int *zeros = calloc((size_t)size, sizeof(int));

    for (int root = 0; root < size; root++) {
        CHECK_MPI(MPI_Scatter(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Gather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, root, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Scatterv(NULL, zeros, zeros, MPI_INT, NULL, 0, MPI_INT, root,
                               MPI_COMM_WORLD));
        CHECK_MPI(MPI_Gatherv(NULL, 0, MPI_INT, NULL, zeros, zeros, MPI_INT, root,
                              MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Allgather(NULL, 0, MPI_INT, NULL, 0, MPI_INT, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Allgatherv(NULL, 0, MPI_INT, NULL, zeros, zeros, MPI_INT, MPI_COMM_WORLD));
    /* Alltoall's direct path copies my block with memcpy even when it is empty, which
     * UBSan reports for NULL (pg_coll_direct.c, being rewritten): a real pointer here. */
    CHECK_MPI(MPI_Alltoall(zeros, 0, MPI_INT, zeros, 0, MPI_INT, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Alltoallv(NULL, zeros, zeros, MPI_INT, NULL, zeros, zeros, MPI_INT,
                            MPI_COMM_WORLD));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    free(zeros);
}

/* Completion calls with count 0 accept NULL arrays and write only their scalar outputs. */
static void completion_calls_with_no_requests(void)
{
    int outcount = -5, index = -5, flag = 0;
    MPI_Status st;

    CHECK_MPI(MPI_Testsome(0, NULL, &outcount, NULL, NULL));
    CHECK(outcount == MPI_UNDEFINED, "Testsome outcount %d", outcount);
    outcount = -5;
    CHECK_MPI(MPI_Waitsome(0, NULL, &outcount, NULL, NULL));
    CHECK(outcount == MPI_UNDEFINED, "Waitsome outcount %d", outcount);
    CHECK_MPI(MPI_Testall(0, NULL, &flag, NULL));
    CHECK(flag == 1, "Testall flag %d", flag);
    CHECK_MPI(MPI_Waitall(0, NULL, NULL));
    flag = 0;
    CHECK_MPI(MPI_Testany(0, NULL, &index, &flag, &st));
    CHECK(index == MPI_UNDEFINED && flag == 1, "Testany index %d flag %d", index, flag);
    index = -5;
    CHECK_MPI(MPI_Waitany(0, NULL, &index, &st));
    CHECK(index == MPI_UNDEFINED, "Waitany index %d", index);
}

/* A NULL buffer with count > 0 of a predefined type is MPI_ERR_BUFFER, in every send mode,
 * receive and persistent form; nothing is sent, so the next message still matches. */
static void null_buffers_are_refused(void)
{
    MPI_Request q = MPI_REQUEST_NULL;
    int x = 0, n;

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Send(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Ssend(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Rsend(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Bsend(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Isend(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD, &q), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Issend(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD, &q), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Irecv(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD, &q), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Recv(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Send_init(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD, &q), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Recv_init(NULL, 3, MPI_INT, rank, 5, MPI_COMM_WORLD, &q), MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Sendrecv(NULL, 3, MPI_INT, rank, 5, &x, 1, MPI_INT, rank, 5, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE),
                 MPI_ERR_BUFFER);
    EXPECT_CLASS(MPI_Sendrecv(&x, 1, MPI_INT, rank, 5, NULL, 1, MPI_INT, rank, 5, MPI_COMM_WORLD,
                              MPI_STATUS_IGNORE),
                 MPI_ERR_BUFFER);
    CHECK(q == MPI_REQUEST_NULL, "a failed call returned a request");
    /* Count 0 with NULL is fine. */
    x = 42;
    CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_INT, rank, 6, NULL, 0, MPI_INT, rank, 6, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Sendrecv(&x, 1, MPI_INT, rank, 7, &n, 1, MPI_INT, rank, 7, MPI_COMM_WORLD,
                           MPI_STATUS_IGNORE));
    CHECK(n == 42, "after the refused calls, a message to myself carried %d", n);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* A persistent send and receive keep working after their datatype's handle is freed. */
static void persistent_requests_hold_their_type(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    int sbuf[6], rbuf[6];
    MPI_Datatype t;
    MPI_Request q[2];

    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &t)); /* ints 0 and 2 of 3 */
    CHECK_MPI(MPI_Type_commit(&t));
    CHECK_MPI(MPI_Recv_init(rbuf, 2, t, from, 9, MPI_COMM_WORLD, &q[0]));
    CHECK_MPI(MPI_Send_init(sbuf, 2, t, to, 9, MPI_COMM_WORLD, &q[1]));
    CHECK_MPI(MPI_Type_free(&t));
    for (int it = 0; it < 2; it++) {
        for (int k = 0; k < 6; k++) {
            sbuf[k] = rank * 100 + it * 10 + k;
            rbuf[k] = -1;
        }
        CHECK_MPI(MPI_Startall(2, q));
        CHECK_MPI(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        /* Element j of the vector is ints 3j and 3j + 2 (extent 3 ints): 1 and 4 are gaps. */
        for (int k = 0; k < 6; k++) {
            int want = (k == 1 || k == 4) ? -1 : from * 100 + it * 10 + k;
            CHECK(rbuf[k] == want, "start %d: rbuf[%d] = %d, not %d", it, k, rbuf[k], want);
        }
    }
    CHECK_MPI(MPI_Request_free(&q[0]));
    CHECK_MPI(MPI_Request_free(&q[1]));
}

/* Single-completion calls leave status.MPI_ERROR alone; Waitall sets it for every request
 * when it returns MPI_ERR_IN_STATUS. */
static void status_error_field(void)
{
    int to = (rank + 1) % size, from = (rank - 1 + size) % size;
    int two[2] = {rank, rank + 1}, one = -1, flag = 0, rc, cls;
    MPI_Request q[2];
    MPI_Status st, sts[2];

    st.MPI_ERROR = 777;
    CHECK_MPI(MPI_Irecv(&one, 1, MPI_INT, from, 11, MPI_COMM_WORLD, &q[0]));
    CHECK_MPI(MPI_Send(two, 1, MPI_INT, to, 11, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Wait(&q[0], &st));
    CHECK(st.MPI_ERROR == 777 && one == from, "MPI_Wait: MPI_ERROR %d, got %d", st.MPI_ERROR, one);
    CHECK_MPI(MPI_Irecv(&one, 1, MPI_INT, from, 12, MPI_COMM_WORLD, &q[0]));
    CHECK_MPI(MPI_Send(two, 1, MPI_INT, to, 12, MPI_COMM_WORLD));
    while (!flag) {
        CHECK_MPI(MPI_Test(&q[0], &flag, &st));
    }
    CHECK(st.MPI_ERROR == 777, "MPI_Test wrote MPI_ERROR = %d", st.MPI_ERROR);
    CHECK_MPI(MPI_Send(two, 1, MPI_INT, to, 13, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Probe(from, 13, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_ERROR == 777, "MPI_Probe wrote MPI_ERROR = %d", st.MPI_ERROR);
    CHECK_MPI(MPI_Recv(&one, 1, MPI_INT, from, 13, MPI_COMM_WORLD, &st));
    CHECK(st.MPI_ERROR == 777, "MPI_Recv wrote MPI_ERROR = %d", st.MPI_ERROR);
    /* A truncated receive in a Waitall: a code of class MPI_ERR_IN_STATUS (a dynamic code,
     * as every returned error), the receive's status says
     * MPI_ERR_TRUNCATE and the send's MPI_SUCCESS. */
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    sts[0].MPI_ERROR = sts[1].MPI_ERROR = 777;
    CHECK_MPI(MPI_Irecv(&one, 1, MPI_INT, from, 14, MPI_COMM_WORLD, &q[0]));
    CHECK_MPI(MPI_Isend(two, 2, MPI_INT, to, 14, MPI_COMM_WORLD, &q[1]));
    rc = MPI_Waitall(2, q, sts);
    MPI_Error_class(rc, &cls);
    CHECK(cls == MPI_ERR_IN_STATUS, "Waitall returned %d (class %d)", rc, cls);
    MPI_Error_class(sts[0].MPI_ERROR, &cls);
    CHECK(cls == MPI_ERR_TRUNCATE, "the truncated receive's MPI_ERROR has class %d", cls);
    CHECK(sts[1].MPI_ERROR == MPI_SUCCESS, "the send's MPI_ERROR is %d", sts[1].MPI_ERROR);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI_Get_elements on a partial message of a mixed type counts the basic elements that
 * arrived: {int, double} packs 4 + 8 bytes, so 16 bytes are one pair and one int. */
static void get_elements_on_partial_mixed_type(void)
{
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, t;
    char out[32] = {0}, in[64];
    MPI_Status st;
    int n;
    MPI_Count nx;

    CHECK_MPI(MPI_Type_create_struct(2, bl, disp, types, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    CHECK_MPI(MPI_Sendrecv(out, 16, MPI_BYTE, rank, 21, in, 4, t, rank, 21, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_elements(&st, t, &n));
    CHECK(n == 3, "16 bytes of {int, double}: %d basic elements, not 3", n);
    CHECK_MPI(MPI_Get_elements_x(&st, t, &nx));
    CHECK(nx == 3, "MPI_Get_elements_x gave %lld", (long long)nx);
    CHECK_MPI(MPI_Get_count(&st, t, &n));
    CHECK(n == MPI_UNDEFINED, "MPI_Get_count of a partial element gave %d", n);
    CHECK_MPI(MPI_Sendrecv(out, 28, MPI_BYTE, rank, 22, in, 4, t, rank, 22, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_elements(&st, t, &n));
    CHECK(n == 5, "28 bytes of {int, double}: %d basic elements, not 5", n);
    CHECK_MPI(MPI_Sendrecv(out, 18, MPI_BYTE, rank, 23, in, 4, t, rank, 23, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_elements(&st, t, &n));
    CHECK(n == MPI_UNDEFINED, "18 bytes end inside a double: %d, not MPI_UNDEFINED", n);
    CHECK_MPI(MPI_Type_free(&t));
}

/* Every predefined error class has a text; user classes and codes lie above
 * MPI_ERR_LASTCODE and MPI_LASTUSEDCODE follows them; MPI_REPLACE and MPI_NO_OP are
 * commutative ops. */
static void error_classes_and_strings(void)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len, cls, code, flag, *last, commute;

    for (int c = 0; c <= MPI_ERR_RMA_FLAVOR; c++) {
        if (c == 54) { /* no class has this value (as in MPICH) */
            continue;
        }
        len = -1;
        CHECK_MPI(MPI_Error_string(c, msg, &len));
        CHECK(len > 0 && (int)strlen(msg) == len, "class %d: text '%s' (%d)", c, msg, len);
        CHECK_MPI(MPI_Error_class(c, &cls));
        CHECK(cls == c, "MPI_Error_class(%d) = %d", c, cls);
    }
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE %d (flag %d)", *last, flag);
    CHECK_MPI(MPI_Add_error_class(&cls));
    CHECK(cls > MPI_ERR_LASTCODE, "MPI_Add_error_class gave %d", cls);
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(flag && *last == cls, "MPI_LASTUSEDCODE %d after class %d", *last, cls);
    CHECK_MPI(MPI_Add_error_code(cls, &code));
    CHECK(code > cls, "MPI_Add_error_code gave %d", code);
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK(*last == code, "MPI_LASTUSEDCODE %d after code %d", *last, code);
    CHECK_MPI(MPI_Add_error_string(code, "a code of mr_conform"));
    CHECK_MPI(MPI_Error_string(code, msg, &len));
    CHECK(strcmp(msg, "a code of mr_conform") == 0, "user code text '%s'", msg);
    CHECK_MPI(MPI_Error_class(code, &flag));
    CHECK(flag == cls, "MPI_Error_class(user code) = %d, not %d", flag, cls);
    commute = 0;
    CHECK_MPI(MPI_Op_commutative(MPI_REPLACE, &commute));
    CHECK(commute == 1, "MPI_REPLACE commutative = %d", commute);
    commute = 0;
    CHECK_MPI(MPI_Op_commutative(MPI_NO_OP, &commute));
    CHECK(commute == 1, "MPI_NO_OP commutative = %d", commute);
}

/* A user op on a vector type (ints 0 and 2 of each 3): the function must get the datatype
 * handle of the call and the elements in that type's layout (MPI-3.1 5.9.5). */
static MPI_Datatype vec_type;

static void vec_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    int *a = in, *b = inout;

    CHECK(*dt == vec_type, "the user function got datatype 0x%x", (unsigned)*dt);
    for (int k = 0; k < *len; k++) {
        b[3 * k] += a[3 * k];
        b[3 * k + 2] += 2 * a[3 * k + 2];
    }
}

static void user_op_on_derived_type(void)
{
    enum { N = 20000 };
    int *a = malloc(sizeof(int) * 3 * N), *b = malloc(sizeof(int) * 3 * N);
    MPI_Op op;
    long sr = (long)size * (size - 1) / 2;

    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &vec_type));
    CHECK_MPI(MPI_Type_commit(&vec_type));
    CHECK_MPI(MPI_Op_create(vec_sum, 1, &op));
    for (int n = 1; n <= N; n *= 100) {
        for (int k = 0; k < n; k++) {
            a[3 * k] = rank + k;
            a[3 * k + 1] = -7;
            a[3 * k + 2] = 10 * rank + k;
            b[3 * k] = b[3 * k + 1] = b[3 * k + 2] = -9;
        }
        CHECK_MPI(MPI_Allreduce(a, b, n, vec_type, op, MPI_COMM_WORLD));
        /* Column 0 sums; column 2 of the result is in_0 + 2 * (in_1 + ... ) in some order:
         * with c the value of a rank, the fold of x, y -> x + 2y is not symmetric, so only
         * size 1 and 2 give a closed form; the others check column 0 and the gaps. */
        for (int k = 0; k < n; k++) {
            CHECK(b[3 * k] == (int)(sr + (long)size * k), "column 0 [%d] = %d", k, b[3 * k]);
            CHECK(b[3 * k + 1] == -9, "the gap [%d] was written: %d", k, b[3 * k + 1]);
        }
        if (size == 1) {
            CHECK(b[2] == 0 && b[3 * (n - 1) + 2] == n - 1, "column 2: %d", b[2]);
        }
    }
    /* MPI_Reduce_local on the same type: b = a + b in column 0, b + 2a in column 2. */
    for (int k = 0; k < 100; k++) {
        a[3 * k] = k;
        a[3 * k + 2] = 3 * k;
        b[3 * k] = 1000;
        b[3 * k + 1] = -9;
        b[3 * k + 2] = 5;
    }
    CHECK_MPI(MPI_Reduce_local(a, b, 100, vec_type, op));
    for (int k = 0; k < 100; k++) {
        CHECK(b[3 * k] == 1000 + k && b[3 * k + 1] == -9 && b[3 * k + 2] == 5 + 6 * k,
              "reduce_local [%d] = %d %d %d", k, b[3 * k], b[3 * k + 1], b[3 * k + 2]);
    }
    CHECK_MPI(MPI_Op_free(&op));
    CHECK_MPI(MPI_Type_free(&vec_type));
    free(a);
    free(b);
}

/* Generalized requests: the callbacks' calls are counted here. */
struct greq_state {
    int queries, frees, cancels, last_complete;
};

static int greq_query(void *extra, MPI_Status *st)
{
    struct greq_state *g = extra;

    g->queries++;
    MPI_Status_set_elements(st, MPI_INT, 5);
    MPI_Status_set_cancelled(st, 0);
    st->MPI_SOURCE = 3;
    st->MPI_TAG = 4;
    return MPI_SUCCESS;
}

static int greq_free(void *extra)
{
    ((struct greq_state *)extra)->frees++;
    return MPI_SUCCESS;
}

static int greq_cancel(void *extra, int complete)
{
    struct greq_state *g = extra;

    g->cancels++;
    g->last_complete = complete;
    return MPI_SUCCESS;
}

static void generalized_requests(void)
{
    struct greq_state a = {0}, b = {0}, c = {0};
    MPI_Request q[2];
    MPI_Status st, sts[2];
    int flag = 1, n, index;

    CHECK_MPI(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &a, &q[0]));
    CHECK_MPI(MPI_Test(&q[0], &flag, &st));
    CHECK(flag == 0 && a.queries == 0, "an uncompleted request tested complete");
    CHECK_MPI(MPI_Cancel(&q[0]));
    CHECK(a.cancels == 1 && a.last_complete == 0, "cancel callback %d (%d)", a.cancels,
          a.last_complete);
    CHECK_MPI(MPI_Grequest_complete(q[0]));
    st.MPI_ERROR = 777;
    CHECK_MPI(MPI_Wait(&q[0], &st));
    CHECK(q[0] == MPI_REQUEST_NULL, "the request was not freed");
    CHECK(a.queries == 1 && a.frees == 1, "query %d, free %d", a.queries, a.frees);
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &n));
    CHECK(n == 5 && st.MPI_SOURCE == 3 && st.MPI_TAG == 4 && st.MPI_ERROR == 777,
          "status: count %d source %d tag %d error %d", n, st.MPI_SOURCE, st.MPI_TAG,
          st.MPI_ERROR);
    /* Two in a Waitany and a Waitall. */
    CHECK_MPI(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &a, &q[0]));
    CHECK_MPI(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &b, &q[1]));
    CHECK_MPI(MPI_Grequest_complete(q[1]));
    CHECK_MPI(MPI_Waitany(2, q, &index, &st));
    CHECK(index == 1 && b.queries == 1 && b.frees == 1, "waitany index %d", index);
    CHECK_MPI(MPI_Grequest_complete(q[0]));
    CHECK_MPI(MPI_Waitall(2, q, sts));
    CHECK(a.queries == 2 && a.frees == 2, "waitall: query %d, free %d", a.queries, a.frees);
    /* Freed before it completes: the free callback runs at MPI_Grequest_complete. */
    CHECK_MPI(MPI_Grequest_start(greq_query, greq_free, greq_cancel, &c, &q[0]));
    MPI_Request keep = q[0];
    CHECK_MPI(MPI_Request_free(&q[0]));
    CHECK(q[0] == MPI_REQUEST_NULL && c.frees == 0, "free before completion: frees %d", c.frees);
    CHECK_MPI(MPI_Grequest_complete(keep));
    CHECK(c.frees == 1 && c.queries == 0, "after completion: frees %d queries %d", c.frees,
          c.queries);
}

/* The MPI-1 names removed in MPI-3.0 link and behave like their successors. */
static int mpi1_handler_calls, mpi1_handler_class;

static void mpi1_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    mpi1_handler_calls++;
    MPI_Error_class(*code, &mpi1_handler_class);
}

/* An MPI_Type_create_f90_* result (mpi4py decodes them so): the layout of the predefined
 * type chosen, its own combiner with p and r as contents (r alone for integers), the same
 * handle on a second call, and it cannot be freed. */
static void f90_type_is(MPI_Datatype t, MPI_Datatype want, int combiner, int p, int r)
{
    int ni, na, nd, comb, ints[2] = {-1, -1}, tsize, wsize;
    MPI_Datatype again;

    CHECK_MPI(MPI_Type_size(t, &tsize));
    CHECK_MPI(MPI_Type_size(want, &wsize));
    CHECK(tsize == wsize, "F90 type of size %d, not %d", tsize, wsize);
    CHECK_MPI(MPI_Type_get_envelope(t, &ni, &na, &nd, &comb));
    CHECK(comb == combiner && ni == (combiner == MPI_COMBINER_F90_INTEGER ? 1 : 2) && na == 0 &&
              nd == 0,
          "envelope: combiner %d (not %d), %d integers", comb, combiner, ni);
    CHECK_MPI(MPI_Type_get_contents(t, 2, 0, 0, ints, NULL, NULL));
    CHECK(ni == 1 ? ints[0] == r : ints[0] == p && ints[1] == r, "contents %d %d, not %d %d",
          ints[0], ints[1], p, r);
    if (combiner == MPI_COMBINER_F90_INTEGER) {
        CHECK_MPI(MPI_Type_create_f90_integer(r, &again));
    } else if (combiner == MPI_COMBINER_F90_REAL) {
        CHECK_MPI(MPI_Type_create_f90_real(p, r, &again));
    } else {
        CHECK_MPI(MPI_Type_create_f90_complex(p, r, &again));
    }
    CHECK(again == t, "a second call gave 0x%x, not 0x%x", (unsigned)again, (unsigned)t);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Type_free(&again), MPI_ERR_TYPE);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

static void mpi1_names_and_f90_types(void)
{
    MPI_Errhandler h, got;
    MPI_Aint ext, lb, ub, addr1, addr2;
    MPI_Datatype t;
    double pair[2];
    int key, val = 5, *pv, flag;

    CHECK_MPI(MPI_Errhandler_create(mpi1_handler, &h));
    CHECK_MPI(MPI_Errhandler_set(MPI_COMM_WORLD, h));
    CHECK_MPI(MPI_Errhandler_get(MPI_COMM_WORLD, &got));
    CHECK(got == h, "MPI_Errhandler_get gave 0x%x, not 0x%x", (unsigned)got, (unsigned)h);
    MPI_Send(&val, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
    CHECK(mpi1_handler_calls == 1 && mpi1_handler_class == MPI_ERR_RANK,
          "handler called %d times, class %d", mpi1_handler_calls, mpi1_handler_class);
    CHECK_MPI(MPI_Errhandler_free(&got));
    CHECK_MPI(MPI_Errhandler_set(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK_MPI(MPI_Errhandler_free(&h));
    CHECK_MPI(MPI_Type_extent(MPI_DOUBLE_INT, &ext));
    CHECK_MPI(MPI_Type_lb(MPI_DOUBLE_INT, &lb));
    CHECK_MPI(MPI_Type_ub(MPI_DOUBLE_INT, &ub));
    CHECK(ext == (MPI_Aint)sizeof(struct d_i) && lb == 0 && ub == ext, "extent %ld lb %ld ub %ld",
          (long)ext, (long)lb, (long)ub);
    CHECK_MPI(MPI_Address(&pair[0], &addr1));
    CHECK_MPI(MPI_Address(&pair[1], &addr2));
    CHECK(addr2 - addr1 == sizeof(double), "MPI_Address difference %ld", (long)(addr2 - addr1));
    CHECK_MPI(MPI_Type_hvector(2, 1, 16, MPI_INT, &t));
    CHECK_MPI(MPI_Type_extent(t, &ext));
    CHECK(ext == 20, "hvector extent %ld", (long)ext);
    CHECK_MPI(MPI_Type_free(&t));
    CHECK_MPI(MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &key, NULL));
    CHECK_MPI(MPI_Attr_put(MPI_COMM_WORLD, key, &val));
    CHECK_MPI(MPI_Attr_get(MPI_COMM_WORLD, key, &pv, &flag));
    CHECK(flag && pv == &val, "MPI_Attr_get flag %d", flag);
    CHECK_MPI(MPI_Attr_delete(MPI_COMM_WORLD, key));
    CHECK_MPI(MPI_Keyval_free(&key));
    /* Fortran 90 types: the smallest predefined type with the asked precision/range. */
    CHECK_MPI(MPI_Type_create_f90_integer(2, &t));
    f90_type_is(t, MPI_INTEGER1, MPI_COMBINER_F90_INTEGER, 0, 2);
    CHECK_MPI(MPI_Type_create_f90_integer(5, &t));
    f90_type_is(t, MPI_INTEGER4, MPI_COMBINER_F90_INTEGER, 0, 5);
    CHECK_MPI(MPI_Type_create_f90_integer(10, &t));
    f90_type_is(t, MPI_INTEGER8, MPI_COMBINER_F90_INTEGER, 0, 10);
    CHECK_MPI(MPI_Type_create_f90_real(10, MPI_UNDEFINED, &t));
    f90_type_is(t, MPI_REAL8, MPI_COMBINER_F90_REAL, 10, MPI_UNDEFINED);
    CHECK_MPI(MPI_Type_create_f90_real(MPI_UNDEFINED, 30, &t));
    f90_type_is(t, MPI_REAL4, MPI_COMBINER_F90_REAL, MPI_UNDEFINED, 30);
    CHECK_MPI(MPI_Type_create_f90_complex(6, 300, &t));
    f90_type_is(t, MPI_COMPLEX16, MPI_COMBINER_F90_COMPLEX, 6, 300);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Type_create_f90_integer(19, &t), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Type_create_f90_real(40, MPI_UNDEFINED, &t), MPI_ERR_ARG);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* MPI_Type_create_darray on a 5 x 7 int array over a 2 x 2 process grid, rows in blocks and
 * columns cyclic by 2, in both orders: each process's type holds its elements in array
 * order, the four types together hold every element once, and each spans the array. */
static void darray_partitions_the_array(void)
{
    int gs[2] = {5, 7}, dist[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    int darg[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {2, 2};
    int global[35], seen[35], packed[35], pos, sz;
    MPI_Aint lb, ext;
    MPI_Datatype t;

    for (int k = 0; k < 35; k++) {
        global[k] = k;
    }
    for (int order = 0; order < 2; order++) {
        memset(seen, 0, sizeof(seen));
        for (int r = 0; r < 4; r++) {
            CHECK_MPI(MPI_Type_create_darray(4, r, 2, gs, dist, darg, ps,
                                             order ? MPI_ORDER_FORTRAN : MPI_ORDER_C, MPI_INT,
                                             &t));
            CHECK_MPI(MPI_Type_commit(&t));
            CHECK_MPI(MPI_Type_get_extent(t, &lb, &ext));
            CHECK(lb == 0 && ext == 35 * (MPI_Aint)sizeof(int), "lb %ld extent %ld", (long)lb,
                  (long)ext);
            CHECK_MPI(MPI_Type_size(t, &sz));
            pos = 0;
            CHECK_MPI(MPI_Pack(global, 1, t, packed, sizeof(packed), &pos, MPI_COMM_WORLD));
            CHECK(pos == sz, "packed %d of %d bytes", pos, sz);
            for (int k = 0; k < sz / (int)sizeof(int); k++) {
                int g = packed[k];
                /* In C order index g is row g / 7, column g % 7; in Fortran order the first
                 * dimension (rows, 5) varies fastest: row g % 5, column g / 5. */
                int row = order ? g % 5 : g / 7, col = order ? g / 5 : g % 7;
                int owner = (row / 3) * 2 + (col / 2) % 2;
                CHECK(owner == r, "order %d: process %d holds (%d, %d) of process %d", order, r,
                      row, col, owner);
                CHECK(k == 0 || packed[k - 1] < g, "elements out of array order");
                seen[g]++;
            }
            if (r == 0 && order == 0) {
                /* Rows 0-2, columns 0, 1, 4, 5. */
                CHECK(sz == 12 * (int)sizeof(int) && packed[0] == 0 && packed[1] == 1 &&
                          packed[2] == 4 && packed[3] == 5 && packed[4] == 7,
                      "process 0: %d bytes, %d %d %d %d %d", sz, packed[0], packed[1], packed[2],
                      packed[3], packed[4]);
            }
            CHECK_MPI(MPI_Type_free(&t));
        }
        for (int k = 0; k < 35; k++) {
            CHECK(seen[k] == 1, "order %d: element %d held %d times", order, k, seen[k]);
        }
    }
}

/* external32: big-endian numbers, sizes of the signature; a complex swaps its two halves
 * separately. */
static void pack_external32(void)
{
    struct {
        int i;
        double d;
        float _Complex z;
    } in = {0x01020304, 1.0, 2.0f + 0.5f * I}, out;
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {0, offsetof(__typeof__(in), d), offsetof(__typeof__(in), z)};
    MPI_Datatype types[3] = {MPI_INT, MPI_DOUBLE, MPI_C_FLOAT_COMPLEX}, t;
    unsigned char buf[32];
    /* 0x01020304; 1.0 = 0x3ff0000000000000; 2.0f = 0x40000000, 0.5f = 0x3f000000. */
    static const unsigned char want[20] = {1, 2, 3, 4, 0x3f, 0xf0, 0, 0, 0, 0,
                                           0, 0, 0x40, 0, 0, 0, 0x3f, 0, 0, 0};
    MPI_Aint pos = 0, size;

    CHECK_MPI(MPI_Type_create_struct(3, bl, disp, types, &t));
    CHECK_MPI(MPI_Type_commit(&t));
    CHECK_MPI(MPI_Pack_external_size("external32", 1, t, &size));
    CHECK(size == 20, "external32 size %ld", (long)size);
    CHECK_MPI(MPI_Pack_external("external32", &in, 1, t, buf, sizeof(buf), &pos));
    CHECK(pos == 20 && memcmp(buf, want, 20) == 0, "external32 bytes differ (position %ld)",
          (long)pos);
    memset(&out, 0, sizeof(out));
    pos = 0;
    CHECK_MPI(MPI_Unpack_external("external32", buf, sizeof(buf), &pos, &out, 1, t));
    CHECK(pos == 20 && out.i == in.i && out.d == in.d && out.z == in.z, "round trip");
    CHECK_MPI(MPI_Type_free(&t));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    pos = 0;
    EXPECT_CLASS(MPI_Pack_external("native", &in, 1, MPI_INT, buf, sizeof(buf), &pos),
                 MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Pack_external("external32", &in, 9, MPI_INT, buf, sizeof(buf), &pos),
                 MPI_ERR_TRUNCATE);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Packs n of type dt in external32 at buf + *pos, checks the size, the bytes against want
 * and that unpacking gives the input back (out must hold what in holds). */
static void ext32_is(const void *in, void *out, size_t bytes, int n, MPI_Datatype dt,
                     const unsigned char *want, MPI_Aint wsize, const char *what)
{
    unsigned char buf[64];
    MPI_Aint pos = 0, size;

    CHECK_MPI(MPI_Pack_external_size("external32", n, dt, &size));
    CHECK(size == wsize, "%s: external32 size %ld, not %ld", what, (long)size, (long)wsize);
    CHECK_MPI(MPI_Pack_external("external32", in, n, dt, buf, sizeof(buf), &pos));
    CHECK(pos == wsize && memcmp(buf, want, (size_t)wsize) == 0,
          "%s: external32 bytes differ (position %ld)", what, (long)pos);
    pos = 0;
    memset(out, 0, bytes);
    CHECK_MPI(MPI_Unpack_external("external32", buf, wsize, &pos, out, n, dt));
    CHECK(pos == wsize && memcmp(in, out, bytes) == 0, "%s: round trip differs", what);
}

/* The types whose external32 form is not this machine's (MPI-3.1 table 13.2, on LP64 x86):
 * long and unsigned long are 4 bytes, wchar_t 2, long double an IEEE binary128. mpi4py's
 * test_pack packs them (they were refused with MPI_ERR_UNSUPPORTED_DATAREP). */
static void pack_external32_converts(void)
{
    long l[2] = {-2, 70000}, lout[2];
    unsigned long ul = 0xdeadbeefUL, ulout;
    wchar_t wc = 0xe9, wcout;
    struct {
        long v;
        int i;
    } li, liout;
    static const unsigned char want_l[8] = {0xff, 0xff, 0xff, 0xfe, 0, 1, 0x11, 0x70};
    static const unsigned char want_ul[4] = {0xde, 0xad, 0xbe, 0xef};
    static const unsigned char want_wc[2] = {0, 0xe9};
    static const unsigned char want_li[8] = {0, 0, 0, 7, 0, 0, 0, 3};

    if (sizeof(long) != 8 || sizeof(wchar_t) != 4) {
        return; /* the expected bytes below are LP64's */
    }
    ext32_is(l, lout, sizeof(l), 2, MPI_LONG, want_l, 8, "long");
    ext32_is(&ul, &ulout, sizeof(ul), 1, MPI_UNSIGNED_LONG, want_ul, 4, "unsigned long");
    ext32_is(&wc, &wcout, sizeof(wc), 1, MPI_WCHAR, want_wc, 2, "wchar_t");
    /* Zeroed padding on both sides: the unpack writes only v and i. */
    memset(&li, 0, sizeof(li));
    li.v = 7;
    li.i = 3;
    ext32_is(&li, &liout, sizeof(li), 1, MPI_LONG_INT, want_li, 8, "long-int pair");
#if LDBL_MANT_DIG == 64
    {
        /* -1.5: sign 1 and exponent 0x3fff (bias 16383 in both formats), fraction .1.
         * 2^-16400, an x87 subnormal (significand 2^45 at scale 2^-16445): in binary128 the
         * fraction 2^94 at scale 2^-16494, so bit 30 of the high 64 bits, byte 4. */
        long double ld[2] = {-1.5L, 0x1p-16400L}, ldout[2] = {0, 0};
        unsigned char want_ld[32] = {0xbf, 0xff, 0x80}, buf[64];
        MPI_Aint pos = 0, size;

        want_ld[16 + 4] = 0x40;
        CHECK_MPI(MPI_Pack_external_size("external32", 2, MPI_LONG_DOUBLE, &size));
        CHECK(size == 32, "long double: external32 size %ld", (long)size);
        CHECK_MPI(MPI_Pack_external("external32", ld, 2, MPI_LONG_DOUBLE, buf, sizeof(buf), &pos));
        CHECK(pos == 32 && memcmp(buf, want_ld, 32) == 0,
              "long double: external32 bytes %02x%02x%02x ... %02x%02x%02x", buf[0], buf[1], buf[2],
              buf[19], buf[20], buf[21]);
        pos = 0;
        CHECK_MPI(MPI_Unpack_external("external32", buf, 32, &pos, ldout, 2, MPI_LONG_DOUBLE));
        CHECK(pos == 32 && ldout[0] == ld[0] && ldout[1] == ld[1], "long double round trip");
    }
#endif
}

/* Types of more than 64 blocks are kept compact (a vector is one entry, not one per block):
 * point-to-point (rendezvous, pipelined) and collectives move them as they moved the flat
 * ones. Every int or double is a function of its rank and index, checked on arrival. */
static void compact_types_across_ranks(void)
{
    enum { N = 300000, M = 1000 };
    int *strided = malloc(sizeof(int) * 3 * N), *dense = malloc(sizeof(int) * N);
    double *dv = malloc(sizeof(double) * 5 * M), *all = malloc(sizeof(double) * 2 * M * size);
    int to = (rank + 1) % size, from = (rank + size - 1) % size, count;
    MPI_Datatype vec, dvec;
    MPI_Status st;

    CHECK_MPI(MPI_Type_vector(N, 1, 3, MPI_INT, &vec));
    CHECK_MPI(MPI_Type_commit(&vec));
    for (int k = 0; k < 3 * N; k++) {
        strided[k] = k % 3 ? -1 : 1000 * rank + k / 3;
    }
    /* Strided out, dense in. */
    CHECK_MPI(
        MPI_Sendrecv(strided, 1, vec, to, 38, dense, N, MPI_INT, from, 38, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == N, "received %d ints, not %d", count, N);
    for (int k = 0; k < N; k++) {
        CHECK(dense[k] == 1000 * from + k, "int %d from rank %d is %d", k, from, dense[k]);
    }
    /* Dense out, strided in: the gaps keep their -2. */
    for (int k = 0; k < N; k++) {
        dense[k] = 7 * rank - k;
    }
    for (int k = 0; k < 3 * N; k++) {
        strided[k] = -2;
    }
    CHECK_MPI(
        MPI_Sendrecv(dense, N, MPI_INT, to, 39, strided, 1, vec, from, 39, MPI_COMM_WORLD, &st));
    CHECK_MPI(MPI_Get_count(&st, vec, &count));
    CHECK(count == 1, "received %d vectors, not 1", count);
    for (int k = 0; k < 3 * N; k++) {
        int want = k % 3 ? -2 : 7 * from - k / 3;
        CHECK(strided[k] == want, "int %d is %d, not %d", k, strided[k], want);
    }
    /* A broadcast of the vector from rank 0. */
    for (int k = 0; k < 3 * N; k++) {
        strided[k] = rank == 0 ? (k % 3 ? -3 : 5 * k + 1) : -4;
    }
    CHECK_MPI(MPI_Bcast(strided, 1, vec, 0, MPI_COMM_WORLD));
    for (int k = 0; k < 3 * N; k++) {
        int want = k % 3 ? (rank == 0 ? -3 : -4) : 5 * k + 1;
        CHECK(strided[k] == want, "bcast int %d is %d, not %d", k, strided[k], want);
    }
    /* An allgather of 1000 blocks of 2 doubles, stride 5, into dense doubles. */
    CHECK_MPI(MPI_Type_vector(M, 2, 5, MPI_DOUBLE, &dvec));
    CHECK_MPI(MPI_Type_commit(&dvec));
    for (int k = 0; k < 5 * M; k++) {
        dv[k] = rank * 1e6 + k;
    }
    CHECK_MPI(MPI_Allgather(dv, 1, dvec, all, 2 * M, MPI_DOUBLE, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) {
        for (int b = 0; b < M; b++) {
            for (int j = 0; j < 2; j++) {
                double want = r * 1e6 + 5 * b + j;
                CHECK(all[2 * M * r + 2 * b + j] == want, "allgather [%d][%d] is %g, not %g", r,
                      2 * b + j, all[2 * M * r + 2 * b + j], want);
            }
        }
    }
    CHECK_MPI(MPI_Type_free(&vec));
    CHECK_MPI(MPI_Type_free(&dvec));
    free(strided);
    free(dense);
    free(dv);
    free(all);
}

/* The handle conversions have PMPI_ names too (MPICH's pt2pt/mprobe calls
 * PMPI_Message_c2f): each gives the MPI_ form's value and converts back. */
static void handle_conversions_have_pmpi_names(void)
{
    MPI_Comm dup;

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK(PMPI_Comm_c2f(dup) == MPI_Comm_c2f(dup), "comm");
    CHECK(PMPI_Comm_f2c(PMPI_Comm_c2f(dup)) == dup, "comm round trip");
    CHECK(PMPI_Type_f2c(PMPI_Type_c2f(MPI_DOUBLE)) == MPI_DOUBLE, "type round trip");
    CHECK(PMPI_Message_c2f(MPI_MESSAGE_NULL) == MPI_Message_c2f(MPI_MESSAGE_NULL), "message");
    CHECK(PMPI_Message_f2c(PMPI_Message_c2f(MPI_MESSAGE_NO_PROC)) == MPI_MESSAGE_NO_PROC,
          "message round trip");
    CHECK(PMPI_Request_f2c(PMPI_Request_c2f(MPI_REQUEST_NULL)) == MPI_REQUEST_NULL, "request");
    CHECK(PMPI_Op_f2c(PMPI_Op_c2f(MPI_SUM)) == MPI_SUM, "op");
    CHECK(PMPI_Group_f2c(PMPI_Group_c2f(MPI_GROUP_EMPTY)) == MPI_GROUP_EMPTY, "group");
    CHECK(PMPI_Info_f2c(PMPI_Info_c2f(MPI_INFO_NULL)) == MPI_INFO_NULL, "info");
    CHECK(PMPI_Errhandler_f2c(PMPI_Errhandler_c2f(MPI_ERRORS_RETURN)) == MPI_ERRORS_RETURN,
          "errhandler");
    CHECK(PMPI_Win_f2c(PMPI_Win_c2f(MPI_WIN_NULL)) == MPI_WIN_NULL, "win");
    CHECK_MPI(MPI_Comm_free(&dup));
}

int main(int argc, char **argv)
{
    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank = mrt_rank;
    pairs_match_by_signature();
    pairs_pack_without_padding();
    minloc_maxloc_on_pairs();
    zero_count_collectives_with_null_buffers();
    completion_calls_with_no_requests();
    null_buffers_are_refused();
    persistent_requests_hold_their_type();
    status_error_field();
    get_elements_on_partial_mixed_type();
    error_classes_and_strings();
    user_op_on_derived_type();
    generalized_requests();
    mpi1_names_and_f90_types();
    darray_partitions_the_array();
    pack_external32();
    pack_external32_converts();
    compact_types_across_ranks();
    handle_conversions_have_pmpi_names();
    return mrt_finish("mr_conform");
}
