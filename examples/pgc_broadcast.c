/*
 * pgc_broadcast.c - torch.distributed.broadcast: rank 0's arange(2) + 1 replaces every
 * rank's tensor (rank r starts with arange(2) + 1 + 2 * r).
 *
 *   mpiexec -n 2 examples/pgc_broadcast
 *
 * Prints (2 ranks):
 *   tensor([1, 2]) # Rank 0
 *   tensor([1, 2]) # Rank 1
 */
#include "pgc_example.h"

int main(void)
{
    int64_t v[2];
    pgc_tensor tensor = pgc_host_tensor(v, 2, PGC_INT64);
    char s[128];
    int rank;

    ex_init();
    rank = pgc_get_rank();
    v[0] = 1 + 2 * rank;
    v[1] = 2 + 2 * rank;
    ex_check(pgc_broadcast(&tensor, 0, NULL, 0, NULL), "pgc_broadcast");
    printf("%s # Rank %d\n", ex_fmt_i64(s, sizeof(s), v, 2), rank);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
