/*
 * pgc_gather.c - torch.distributed.gather, as in its documentation: every rank sends
 * ones(2) + rank; rank 0 (dst) gets them all in gather_list, the others pass NULL.
 *
 *   mpiexec -n 2 examples/pgc_gather
 *
 * Prints (2 ranks):
 *   [tensor([1., 1.]), tensor([2., 2.])] # Rank 0
 *   None                                 # Rank 1
 */
#include "pgc_example.h"

int main(void)
{
    float in[2];
    pgc_tensor tensor = pgc_host_tensor(in, 2, PGC_FLOAT32);
    pgc_tensor *gather_list = NULL;
    float *data = NULL;
    char s[64];
    int rank, size;

    ex_init();
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    in[0] = in[1] = (float)(1 + rank);
    if (rank == 0) {
        data = calloc(2 * (size_t)size, sizeof(float));
        gather_list = malloc(sizeof(pgc_tensor) * (size_t)size);
        if (!data || !gather_list) {
            return 1;
        }
        for (int i = 0; i < size; i++) {
            gather_list[i] = pgc_host_tensor(&data[2 * i], 2, PGC_FLOAT32);
        }
    }
    ex_check(pgc_gather(&tensor, gather_list, 0, NULL, 0, NULL), "pgc_gather");
    if (rank == 0) {
        printf("[");
        for (int i = 0; i < size; i++) {
            printf("%s%s", i ? ", " : "", ex_fmt_f32(s, sizeof(s), &data[2 * i], 2));
        }
        printf("] # Rank 0\n");
    } else {
        printf("None                                 # Rank %d\n", rank);
    }
    free(data);
    free(gather_list);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
