/*
 * pgc_all_gather.c - torch.distributed.all_gather, as in its documentation: every rank
 * contributes arange(2) + 1 + 2 * rank and every rank gets the list of all of them; then
 * the same into one tensor (all_gather_into_tensor).
 *
 *   mpiexec -n 2 examples/pgc_all_gather
 *
 * Prints (2 ranks):
 *   [tensor([1, 2]), tensor([3, 4])] # Rank 0
 *   [tensor([1, 2]), tensor([3, 4])] # Rank 1
 *   tensor([1, 2, 3, 4]) # Rank 0
 *   tensor([1, 2, 3, 4]) # Rank 1
 */
#include "pgc_example.h"

int main(void)
{
    int64_t in[2], *all;
    pgc_tensor tensor = pgc_host_tensor(in, 2, PGC_INT64), *tensor_list, flat;
    char s[256], line[1024];
    int rank, size;
    size_t off;

    ex_init();
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    in[0] = 1 + 2 * rank;
    in[1] = 2 + 2 * rank;
    all = calloc(2 * (size_t)size, sizeof(int64_t));
    tensor_list = malloc(sizeof(pgc_tensor) * (size_t)size);
    if (!all || !tensor_list) {
        return 1;
    }
    for (int i = 0; i < size; i++) {
        tensor_list[i] = pgc_host_tensor(&all[2 * i], 2, PGC_INT64);
    }
    ex_check(pgc_all_gather(tensor_list, &tensor, NULL, 0, NULL), "pgc_all_gather");
    off = (size_t)snprintf(line, sizeof(line), "[");
    for (int i = 0; i < size && off < sizeof(line); i++) {
        off += (size_t)snprintf(line + off, sizeof(line) - off, "%s%s", i ? ", " : "",
                                ex_fmt_i64(s, sizeof(s), &all[2 * i], 2));
    }
    printf("%s] # Rank %d\n", line, rank);
    memset(all, 0, 2 * (size_t)size * sizeof(int64_t));
    flat = pgc_host_tensor(all, 2 * (size_t)size, PGC_INT64);
    ex_check(pgc_all_gather_into_tensor(&flat, &tensor, NULL, 0, NULL),
             "pgc_all_gather_into_tensor");
    printf("%s # Rank %d\n", ex_fmt_i64(line, sizeof(line), all, 2 * (size_t)size), rank);
    free(all);
    free(tensor_list);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
