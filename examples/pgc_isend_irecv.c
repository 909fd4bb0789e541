/*
 * pgc_isend_irecv.c - non-blocking point-to-point (the "immediates" snippet of PyTorch's
 * "Writing Distributed Applications"): isend/irecv return a work handle; the tensor may
 * be neither reused (sender) nor read (receiver) until pgc_work_wait returns.
 *
 *   mpiexec -n 2 examples/pgc_isend_irecv
 *
 * Prints (as the Python original; the order of lines across ranks varies):
 *   Rank 0 started sending
 *   Rank 1 started receiving
 *   Rank  0  has data  tensor(1.)
 *   Rank  1  has data  tensor(1.)
 */
#include "pgc_example.h"

int main(void)
{
    float data = 0;
    pgc_tensor tensor = pgc_host_tensor(&data, 1, PGC_FLOAT32);
    pgc_work *req = NULL;
    char s[64];
    int rank;

    ex_init();
    rank = pgc_get_rank();
    if (pgc_get_world_size() < 2) {
        fprintf(stderr, "pgc_isend_irecv needs 2 ranks\n");
        return 1;
    }
    if (rank == 0) {
        data += 1;
        /* Send the tensor to process 1. */
        ex_check(pgc_isend(&tensor, 1, NULL, 0, &req), "pgc_isend");
        printf("Rank 0 started sending\n");
    } else if (rank == 1) {
        /* Receive tensor from process 0. */
        ex_check(pgc_irecv(&tensor, 0, NULL, 0, &req), "pgc_irecv");
        printf("Rank 1 started receiving\n");
    }
    if (req) {
        ex_check(pgc_work_wait(req, 0), "pgc_work_wait");
        pgc_work_free(req);
    }
    printf("Rank  %d  has data  %s\n", rank, ex_fmt_scalar(s, sizeof(s), data));
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
