/*
 * pgc_scatter.c - torch.distributed.scatter, as in its documentation: rank 0 scatters
 * [ones(2), ones(2) * 5, ...] (tensor i is ones * (1 + 4 i)); rank i gets tensor i.
 *
 *   mpiexec -n 2 examples/pgc_scatter
 *
 * Prints (2 ranks):
 *   tensor([1., 1.]) # Rank 0
 *   tensor([5., 5.]) # Rank 1
 */
#include "pgc_example.h"

int main(void)
{
    float out[2] = {0, 0};
    pgc_tensor output = pgc_host_tensor(out, 2, PGC_FLOAT32);
    pgc_tensor *scatter_list = NULL;
    float *data = NULL;
    char s[128];
    int rank, size;

    ex_init();
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    if (rank == 0) {
        /* Only tensors, all of which must be the same size. */
        data = malloc(sizeof(float) * 2 * (size_t)size);
        scatter_list = malloc(sizeof(pgc_tensor) * (size_t)size);
        if (!data || !scatter_list) {
            return 1;
        }
        for (int i = 0; i < size; i++) {
            data[2 * i] = data[2 * i + 1] = (float)(1 + 4 * i);
            scatter_list[i] = pgc_host_tensor(&data[2 * i], 2, PGC_FLOAT32);
        }
    }
    ex_check(pgc_scatter(&output, scatter_list, 0, NULL, 0, NULL), "pgc_scatter");
    /* Rank i gets scatter_list[i]. */
    printf("%s # Rank %d\n", ex_fmt_f32(s, sizeof(s), out, 2), rank);
    free(data);
    free(scatter_list);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
