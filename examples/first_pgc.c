/*
 * first_pgc.c - a first process-group program, torch.distributed's all_reduce in C: every
 * rank holds {rank, 1.0}, and after the SUM every rank holds {0 + 1 + ... + (size-1), size}.
 *
 *   mpicc -o first_pgc first_pgc.c && mpiexec -n 4 ./first_pgc
 */
#include <pgc.h>
#include <stdio.h>

int main(void)
{
    float v[2];
    pgc_tensor t = pgc_host_tensor(v, 2, PGC_FLOAT32);
    int rank, size, rc;

    /* NULL: every option from the environment (mpiexec, srun, or RANK/WORLD_SIZE/...). */
    rc = pgc_init_process_group(NULL);
    if (rc != PGC_OK) {
        fprintf(stderr, "init failed: %s\n", pgc_last_error());
        return 1;
    }
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    v[0] = (float)rank;
    v[1] = 1.0f;
    rc = pgc_all_reduce(&t, PGC_SUM, NULL, 0, NULL); /* world group, synchronous */
    if (rc != PGC_OK) {
        fprintf(stderr, "rank %d: all_reduce failed: %s\n", rank, pgc_last_error());
        return 1;
    }
    printf("rank %d of %d: {%g, %g} (expected {%d, %d})\n", rank, size, v[0], v[1],
           size * (size - 1) / 2, size);
    pgc_destroy_process_group();
    return v[0] == size * (size - 1) / 2 && v[1] == size ? 0 : 1;
}
