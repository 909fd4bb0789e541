/*
 * first_pgc.c - a first process-group program, torch.distributed's all_reduce in C: every
 * rank holds {rank, 1.0}, and after the SUM every rank holds {0 + 1 + ... + (size-1), size}.
 * README.md shows this file below this comment (tests/scripts/test_first_programs.sh checks).
 *
 *   mpicc -o first_pgc first_pgc.c && mpiexec -n 4 ./first_pgc
 */
#include <pgc.h>
#include <stdio.h>

int main(void)
{
    float v[2];
    pgc_tensor t = pgc_host_tensor(v, 2, PGC_FLOAT32);

    if (pgc_init_process_group(NULL) != PGC_OK) { /* NULL: options from the environment */
        fprintf(stderr, "init failed: %s\n", pgc_last_error());
        return 1;
    }
    v[0] = (float)pgc_get_rank();
    v[1] = 1.0f;
    if (pgc_all_reduce(&t, PGC_SUM, NULL, 0, NULL) != PGC_OK) { /* world, synchronous */
        fprintf(stderr, "all_reduce failed: %s\n", pgc_last_error());
        return 1;
    }
    printf("rank %d: {%g, %g}\n", pgc_get_rank(), v[0], v[1]); /* {0+1+...+(n-1), n} */
    return pgc_destroy_process_group() == PGC_OK ? 0 : 1;
}
