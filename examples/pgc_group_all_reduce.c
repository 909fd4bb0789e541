/*
 * pgc_group_all_reduce.c - "Collective Communication" of PyTorch's "Writing Distributed
 * Applications": an all_reduce SUM of ones on new_group([0, 1]). new_group is collective
 * over the world: every rank calls it; ranks outside the group get NULL and, as in torch,
 * leave their tensor as it is.
 *
 *   mpiexec -n 4 examples/pgc_group_all_reduce
 *
 * Prints (as the Python original):
 *   Rank  0  has data  tensor(2.)
 *   Rank  1  has data  tensor(2.)
 *   Rank  2  has data  tensor(1.)      (with 4 ranks)
 *   Rank  3  has data  tensor(1.)
 */
#include "pgc_example.h"

int main(void)
{
    static const int ranks[2] = {0, 1};
    float data = 1;
    pgc_tensor tensor = pgc_host_tensor(&data, 1, PGC_FLOAT32);
    pgc_group *group = NULL;
    char s[64];

    ex_init();
    if (pgc_get_world_size() < 2) {
        fprintf(stderr, "pgc_group_all_reduce needs 2 ranks\n");
        return 1;
    }
    ex_check(pgc_new_group(ranks, 2, &group), "pgc_new_group");
    if (group) {
        ex_check(pgc_all_reduce(&tensor, PGC_SUM, group, 0, NULL), "pgc_all_reduce");
        pgc_destroy_group(group);
    }
    printf("Rank  %d  has data  %s\n", pgc_get_rank(), ex_fmt_scalar(s, sizeof(s), data));
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
