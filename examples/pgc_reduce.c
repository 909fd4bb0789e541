/*
 * pgc_reduce.c - torch.distributed.reduce: the SUM of every rank's arange(2) + 1 + 2 * rank
 * lands on rank 0 (dst); the other ranks keep their tensor.
 *
 *   mpiexec -n 2 examples/pgc_reduce
 *
 * Prints (2 ranks):
 *   tensor([4, 6]) # Rank 0
 *   tensor([3, 4]) # Rank 1
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
    ex_check(pgc_reduce(&tensor, 0, PGC_SUM, NULL, 0, NULL), "pgc_reduce");
    printf("%s # Rank %d\n", ex_fmt_i64(s, sizeof(s), v, 2), rank);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
