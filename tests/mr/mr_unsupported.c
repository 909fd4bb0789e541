/*
 * mr_unsupported.c - the calls of mpi_shim/shim_unsupported.c. Every MPI function mpi.h
 * declares works now (the last refusals, dynamic windows and user window keyvals and error
 * handlers, are tested in tests/mr/mr_rma_dyn.c); what is left here are the small calls that
 * file defines: MPI_Pcontrol and the status setters.
 */
#include "mrtest.h"

#include <string.h>

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
    int one = 1, sum = 0, size;

    mrt_init(&argc, &argv);
    check_status_setters();
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(sum == size, "sum %d on %d ranks", sum, size);
    return mrt_finish("mr_unsupported");
}
