/* Bad arguments under MPI_ERRORS_RETURN: each call returns the right error class, leaves
 * nothing half-done, and the communicator keeps working afterwards. A returned code is a
 * dynamic one (MPICH's scheme): MPI_Error_class gives its class, MPI_Error_string the line
 * that names the call, the rank and the cause, and 64 errors later only the class text. */
#include "mrtest.h"

#include <stdio.h>
#include <string.h>

static int rank, size;

static void argument_errors(void)
{
    int v = 1, buf[4];
    MPI_Datatype uncommitted;
    MPI_Request req = (MPI_Request)0x7777;

    EXPECT_CLASS(MPI_Send(&v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Send(&v, 1, MPI_INT, -5, 0, MPI_COMM_WORLD), MPI_ERR_RANK);
    EXPECT_CLASS(MPI_Send(&v, -1, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT);
    EXPECT_CLASS(MPI_Send(&v, 1, MPI_INT, 0, -3, MPI_COMM_WORLD), MPI_ERR_TAG);
    EXPECT_CLASS(MPI_Recv(buf, 1, MPI_INT, 0, 1 << 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                 MPI_ERR_TAG);
    EXPECT_CLASS(MPI_Send(&v, 1, (MPI_Datatype)0x1234, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Send(&v, 1, MPI_DATATYPE_NULL, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &uncommitted));
    EXPECT_CLASS(MPI_Send(buf, 1, uncommitted, 0, 0, MPI_COMM_WORLD), MPI_ERR_TYPE);
    MPI_Type_free(&uncommitted);
    EXPECT_CLASS(MPI_Bcast(buf, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT);
    EXPECT_CLASS(MPI_Allreduce(&v, buf, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP);
    {
        double d = 1.0, e;
        EXPECT_CLASS(MPI_Allreduce(&d, &e, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP);
    }
    EXPECT_CLASS(MPI_Wait(&req, MPI_STATUS_IGNORE), MPI_ERR_REQUEST);
}

static void invalid_comm(void)
{
    int r;
    /* The error is raised on MPI_COMM_WORLD's handler (MPI_ERRORS_RETURN here). */
    EXPECT_CLASS(MPI_Comm_rank((MPI_Comm)0x44001234, &r), MPI_ERR_COMM);
    EXPECT_CLASS(MPI_Barrier(MPI_COMM_NULL), MPI_ERR_COMM);
}

/* A message longer than the receive buffer: MPI_ERR_TRUNCATE, and the next message on the
 * same pair arrives intact. Both the eager and the rendezvous sizes. */
static void truncation(int n)
{
    int *big = malloc(sizeof(int) * (size_t)n), *small = malloc(sizeof(int) * (size_t)n);
    MPI_Status st;

    if (size < 2 || rank > 1) {
        free(big);
        free(small);
        return;
    }
    for (int i = 0; i < n; i++) {
        big[i] = i * 3 + 1;
    }
    if (rank == 0) {
        CHECK_MPI(MPI_Send(big, n, MPI_INT, 1, 9, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(big, n, MPI_INT, 1, 9, MPI_COMM_WORLD));
    } else {
        int got;
        EXPECT_CLASS(MPI_Recv(small, n / 2, MPI_INT, 0, 9, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE);
        CHECK_MPI(MPI_Recv(small, n, MPI_INT, 0, 9, MPI_COMM_WORLD, &st));
        MPI_Get_count(&st, MPI_INT, &got);
        CHECK(got == n, "count %d after a truncated receive", got);
        for (int i = 0; i < n; i++) {
            CHECK(small[i] == i * 3 + 1, "elem %d = %d after a truncated receive", i, small[i]);
        }
    }
    free(big);
    free(small);
}

static void error_strings(void)
{
    char s[MPI_MAX_ERROR_STRING];
    int len, cls;
    CHECK_MPI(MPI_Error_string(MPI_ERR_TRUNCATE, s, &len));
    CHECK(len > 0 && strstr(s, "trunc"), "string '%s'", s);
    CHECK_MPI(MPI_Error_class(MPI_ERR_RANK, &cls));
    CHECK(cls == MPI_ERR_RANK, "class %d", cls);
}

/* rc is of class cls but is not the bare class, and its string is the detailed line
 * "fn (rank R): cause" (want, formatted here from what the call was given). */
static void expect_detail(int rc, int cls, const char *fn, const char *want)
{
    char s[MPI_MAX_ERROR_STRING], line[MPI_MAX_ERROR_STRING];
    int len = -1, c = -1;

    CHECK_MPI(MPI_Error_class(rc, &c));
    CHECK(c == cls, "%s: code %d has class %d, expected %d", fn, rc, c, cls);
    CHECK(rc != cls && rc > 0 && rc <= MPI_ERR_LASTCODE, "%s: code %d is a bare class", fn, rc);
    CHECK_MPI(MPI_Error_string(rc, s, &len));
    snprintf(line, sizeof(line), "%s (rank %d): %s", fn, rank, want);
    CHECK(strcmp(s, line) == 0 && len == (int)strlen(line),
          "%s: string '%s' (len %d), expected '%s'", fn, s, len, line);
}

/* The handler is given the code the call returns, and can read its detail there. */
static int handled_code = -1;
static char handled_string[MPI_MAX_ERROR_STRING];

static void keep_code(MPI_Comm *comm, int *code, ...)
{
    int len;

    (void)comm;
    handled_code = *code;
    MPI_Error_string(*code, handled_string, &len);
}

/* Truncation (16 bytes into 8), an invalid rank and an invalid count: each returned code
 * gives its class and its own detail, including through a Waitall's statuses. */
static void dynamic_codes(void)
{
    int v[4] = {1, 2, 3, 4}, small[2], cls, len, rc, first, early;
    char s[MPI_MAX_ERROR_STRING], want[MPI_MAX_ERROR_STRING], text[MPI_MAX_ERROR_STRING];
    MPI_Errhandler eh;
    MPI_Request rq;
    MPI_Status st;

    first = MPI_Send(v, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD);
    snprintf(want, sizeof(want), "rank %d is not in the communicator (size %d)", size + 3, size);
    expect_detail(first, MPI_ERR_RANK, "MPI_Send", want);
    expect_detail(MPI_Send(v, -7, MPI_INT, 0, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Send",
                  "count -7 is negative");
    /* The first code still reads as its own line after another error. */
    expect_detail(first, MPI_ERR_RANK, "MPI_Send", want);
    if (size >= 2 && rank == 0) {
        CHECK_MPI(MPI_Send(v, 4, MPI_INT, 1, 21, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(v, 4, MPI_INT, 1, 22, MPI_COMM_WORLD));
    } else if (size >= 2 && rank == 1) {
        snprintf(want, sizeof(want),
                 "message from rank 0 with tag 21 is longer than the receive "
                 "buffer (%zu bytes)",
                 sizeof(small));
        expect_detail(MPI_Recv(small, 2, MPI_INT, 0, 21, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE,
                      "MPI_Recv", want);
        CHECK_MPI(MPI_Irecv(small, 2, MPI_INT, 0, 22, MPI_COMM_WORLD, &rq));
        rc = MPI_Waitall(1, &rq, &st);
        CHECK_MPI(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_IN_STATUS, "Waitall gave %d of class %d", rc, cls);
        snprintf(want, sizeof(want),
                 "message from rank 0 with tag 22 is longer than the receive "
                 "buffer (%zu bytes)",
                 sizeof(small));
        expect_detail(st.MPI_ERROR, MPI_ERR_TRUNCATE, "MPI_Waitall", want);
    }
    /* A handler of our own gets the same code the call returns, detail included. */
    CHECK_MPI(MPI_Comm_create_errhandler(keep_code, &eh));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh));
    rc = MPI_Bcast(v, -2, MPI_INT, 0, MPI_COMM_WORLD);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Errhandler_free(&eh));
    CHECK(handled_code == rc, "the handler got %d, the call returned %d", handled_code, rc);
    snprintf(want, sizeof(want), "MPI_Bcast (rank %d): count -2 is negative", rank);
    CHECK(strcmp(handled_string, want) == 0, "the handler read '%s'", handled_string);
    /* 100 errors later the ring has moved on: the first code is still of its class and
     * reads as the class's text, never as another error's line. */
    early = MPI_Send(v, 1, MPI_INT, -5, 0, MPI_COMM_WORLD);
    for (int i = 0; i < 100; i++) {
        rc = MPI_Send(v, 1, MPI_INT, 0, -1 - i, MPI_COMM_WORLD);
        CHECK_MPI(MPI_Error_class(rc, &cls));
        CHECK(cls == MPI_ERR_TAG, "error %d: class %d", i, cls);
    }
    CHECK_MPI(MPI_Error_string(MPI_ERR_RANK, text, &len));
    CHECK_MPI(MPI_Error_class(early, &cls));
    CHECK(cls == MPI_ERR_RANK, "an old code has class %d", cls);
    CHECK_MPI(MPI_Error_string(early, s, &len));
    CHECK(strcmp(s, text) == 0 && len == (int)strlen(text), "an old code reads '%s', not '%s'", s,
          text);
    snprintf(want, sizeof(want), "tag %d is outside 0..", -100);
    CHECK_MPI(MPI_Error_string(rc, s, &len));
    CHECK(strstr(s, want) && strstr(s, "MPI_Send (rank "), "the newest code reads '%s'", s);
    /* A value with no class in it is no code; a returned code stands for its class when a
     * user code is added to it, and user codes keep their own numbers and strings. */
    EXPECT_CLASS(MPI_Error_class(1 << 13, &cls), MPI_ERR_ARG);
    {
        int mine, mcls;
        CHECK_MPI(MPI_Add_error_code(first, &mine));
        CHECK(mine > MPI_ERR_LASTCODE, "MPI_Add_error_code gave %d", mine);
        CHECK_MPI(MPI_Error_class(mine, &mcls));
        CHECK(mcls == MPI_ERR_RANK, "a user code added to a returned code has class %d", mcls);
        CHECK_MPI(MPI_Add_error_string(mine, "my own error"));
        CHECK_MPI(MPI_Error_string(mine, s, &len));
        CHECK(strcmp(s, "my own error") == 0, "the user code reads '%s'", s);
    }
}

int main(int argc, char **argv)
{
    int sum = 0, one = 1;

    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    argument_errors();
    invalid_comm();
    truncation(10);
    truncation(100000);
    error_strings();
    dynamic_codes();
    /* Nothing was left half-done: a collective on the same communicator still works. */
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size, "allreduce after errors gave %d", sum);
    return mrt_finish("mr_errors");
}
