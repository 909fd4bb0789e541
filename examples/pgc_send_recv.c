/*
 * pgc_send_recv.c - blocking point-to-point (the "Point-to-Point Communication" snippet of
 * PyTorch's "Writing Distributed Applications"): rank 0 adds one to a zero tensor and sends
 * it to rank 1, which receives it; both print what they hold.
 *
 *   mpiexec -n 2 examples/pgc_send_recv
 *   RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 examples/pgc_send_recv &
 *   RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 examples/pgc_send_recv
 *
 * Prints (as the Python original):
 *   Rank  0  has data  tensor(1.)
 *   Rank  1  has data  tensor(1.)
 */
#include "pgc_example.h"

int main(void)
{
    float data = 0;
    pgc_tensor tensor = pgc_host_tensor(&data, 1, PGC_FLOAT32);
    char s[64];
    int rank;

    ex_init();
    rank = pgc_get_rank();
    if (pgc_get_world_size() < 2) {
        fprintf(stderr, "pgc_send_recv needs 2 ranks\n");
        return 1;
    }
    if (rank == 0) {
        data += 1;
        /* Send the tensor to process 1. */
        ex_check(pgc_send(&tensor, 1, NULL, 0), "pgc_send");
    } else if (rank == 1) {
        /* Receive tensor from process 0. */
        ex_check(pgc_recv(&tensor, 0, NULL, 0), "pgc_recv");
    }
    printf("Rank  %d  has data  %s\n", rank, ex_fmt_scalar(s, sizeof(s), data));
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
