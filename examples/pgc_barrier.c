/*
 * pgc_barrier.c - torch.distributed.barrier: no rank leaves it before every rank entered.
 * Rank r sleeps r * 100 ms before entering, so without the barrier the "after" lines would
 * interleave with the "before" lines; with it, every "before" comes first.
 *
 *   mpiexec -n 4 examples/pgc_barrier
 *
 * Prints:
 *   Rank 0 before the barrier  ... (one line per rank)
 *   Rank 0 after the barrier   ... (one line per rank, after all the "before" lines)
 */
#include "pgc_example.h"

#include <unistd.h>

int main(void)
{
    int rank;

    ex_init();
    rank = pgc_get_rank();
    usleep((useconds_t)rank * 100000);
    printf("Rank %d before the barrier\n", rank);
    fflush(stdout);
    ex_check(pgc_barrier(NULL, 0, NULL), "pgc_barrier");
    printf("Rank %d after the barrier\n", rank);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
