/*
 * mr_unsupported.c - the one-sided (RMA) functions not built yet (dynamic windows, user
 * window keyvals; tests/mr/mr_rma.c tests the others) exist but
 * refuse to work: under MPI_ERRORS_RETURN each returns
 * MPI_ERR_UNSUPPORTED_OPERATION, sets an output handle to its null value, and leaves MPI
 * usable afterwards. Also the small calls of mpi_shim/shim_unsupported.c that do work:
 * MPI_Pcontrol and the status setters.
 */
#include "mrtest.h"

#include <string.h>

static void check_error_string(int rc)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0, cls = -1;

    CHECK_MPI(MPI_Error_class(rc, &cls));
    CHECK(cls == MPI_ERR_UNSUPPORTED_OPERATION, "class %d", cls);
    CHECK_MPI(MPI_Error_string(rc, msg, &len));
    CHECK(len > 0 && (int)strlen(msg) == len, "error string of length %d", len);
}

/* Set counts read back through MPI_Get_count / MPI_Get_elements; the cancelled bit keeps
 * apart from the count. */
static void check_status_setters(void)
{
    MPI_Status st;
    MPI_Datatype pair;
    int flag = -1, count = -1;

    CHECK_MPI(MPI_Pcontrol(1));
    memset(&st, 0, sizeof(st));
    CHECK_MPI(MPI_Status_set_elements(&st, MPI_DOUBLE, 7));
    CHECK_MPI(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == 7, "count %d after setting 7 doubles", count);
    CHECK_MPI(MPI_Get_count(&st, MPI_CHAR, &count));
    CHECK(count == 7 * (int)sizeof(double), "count %d chars", count);
    CHECK_MPI(MPI_Status_set_cancelled(&st, 1));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 1, "cancelled flag %d", flag);
    CHECK_MPI(MPI_Get_count(&st, MPI_DOUBLE, &count));
    CHECK(count == 7, "count %d after setting cancelled", count);
    CHECK_MPI(MPI_Status_set_cancelled(&st, 0));
    CHECK_MPI(MPI_Test_cancelled(&st, &flag));
    CHECK(flag == 0, "cancelled flag %d after clearing", flag);

    /* 5 ints as elements of a 2-int type: two whole pairs and half of one. */
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_MPI(MPI_Type_commit(&pair));
    CHECK_MPI(MPI_Status_set_elements(&st, pair, 5));
    CHECK_MPI(MPI_Get_elements(&st, pair, &count));
    CHECK(count == 5, "elements %d of the pair type", count);
    CHECK_MPI(MPI_Get_count(&st, MPI_INT, &count));
    CHECK(count == 5, "count %d ints", count);
    CHECK_MPI(MPI_Type_free(&pair));
}

int main(int argc, char **argv)
{
    int buf[4] = {1, 2, 3, 4}, sum = 0, one = 1, size, rc;
    MPI_Win win = (MPI_Win)0x1234;
    int keyval = 0;

    mrt_init(&argc, &argv);
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));

    rc = PMPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    CHECK(rc == MPI_ERR_UNSUPPORTED_OPERATION, "PMPI_Win_create_dynamic returned %d", rc);
    CHECK(win == MPI_WIN_NULL, "MPI_Win_create_dynamic left win = %#x", (unsigned)win);
    check_error_string(rc);
    rc = MPI_Win_attach(MPI_WIN_NULL, buf, sizeof(buf));
    CHECK(rc == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Win_attach returned %d", rc);

    rc = MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &keyval, NULL);
    CHECK(rc == MPI_ERR_UNSUPPORTED_OPERATION, "MPI_Win_create_keyval returned %d", rc);
    CHECK(keyval == MPI_KEYVAL_INVALID, "keyval %#x", (unsigned)keyval);

    /* MPI still works after the refusals. */
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(sum == size, "sum %d on %d ranks", sum, size);
    check_status_setters();
    return mrt_finish("mr_unsupported");
}
