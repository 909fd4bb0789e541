/*
 * pgc_all_reduce.c - torch.distributed.all_reduce, as in its documentation: every rank
 * holds arange(2) + 1 + 2 * rank, and after the SUM every rank holds the sum.
 *
 *   mpiexec -n 2 examples/pgc_all_reduce
 *
 * Prints (2 ranks):
 *   tensor([1, 2]) # Rank 0
 *   tensor([3, 4]) # Rank 1
 *   tensor([4, 6]) # Rank 0
 *   tensor([4, 6]) # Rank 1
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
    printf("%s # Rank %d\n", ex_fmt_i64(s, sizeof(s), v, 2), rank);
    ex_check(pgc_all_reduce(&tensor, PGC_SUM, NULL, 0, NULL), "pgc_all_reduce");
    printf("%s # Rank %d\n", ex_fmt_i64(s, sizeof(s), v, 2), rank);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
