/*
 * pgc_custom_collectives.c - collectives written by hand with point-to-point, as in the
 * "Advanced Topics" of PyTorch's "Writing Distributed Applications": a scatter and a gather
 * made of send/recv, and the ring all-reduce made of isend/recv, each checked against the
 * library's own collective.
 *
 *   mpiexec -n 4 examples/pgc_custom_collectives
 *
 * Prints, per rank r of n:
 *   Rank r: my_scatter got tensor([r., r.]) (as pgc_scatter)
 *   Rank 0: my_gather got [tensor([0., 0.]), ..., tensor([n-1., n-1.])] (as pgc_gather)
 *   Rank r: ring allreduce gives tensor([a., b.]) (as pgc_all_reduce), a = n (n - 1) / 2,
 *           b = a + n
 */
#include "pgc_example.h"

#define N 2

/* Rank src sends scatter_list[i] to rank i; everyone receives into tensor. */
static void my_scatter(float *tensor, float (*scatter_list)[N], int src)
{
    int rank = pgc_get_rank(), size = pgc_get_world_size();
    pgc_tensor t = pgc_host_tensor(tensor, N, PGC_FLOAT32);

    if (rank == src) {
        for (int i = 0; i < size; i++) {
            pgc_tensor part = pgc_host_tensor(scatter_list[i], N, PGC_FLOAT32);
            if (i == src) {
                memcpy(tensor, scatter_list[i], sizeof(float) * N);
            } else {
                ex_check(pgc_send(&part, i, NULL, 0), "pgc_send");
            }
        }
    } else {
        ex_check(pgc_recv(&t, src, NULL, 0), "pgc_recv");
    }
}

/* Every rank sends tensor to dst, which receives rank i's into gather_list[i]. */
static void my_gather(float *tensor, float (*gather_list)[N], int dst)
{
    int rank = pgc_get_rank(), size = pgc_get_world_size();
    pgc_tensor t = pgc_host_tensor(tensor, N, PGC_FLOAT32);

    if (rank == dst) {
        for (int i = 0; i < size; i++) {
            pgc_tensor part = pgc_host_tensor(gather_list[i], N, PGC_FLOAT32);
            if (i == dst) {
                memcpy(gather_list[i], tensor, sizeof(float) * N);
            } else {
                ex_check(pgc_recv(&part, i, NULL, 0), "pgc_recv");
            }
        }
    } else {
        ex_check(pgc_send(&t, dst, NULL, 0), "pgc_send");
    }
}

/* The tutorial's ring all-reduce: n - 1 steps, each sends what came last to the right
 * neighbour and adds what comes from the left one. */
static void ring_allreduce(const float *send, float *recv)
{
    int rank = pgc_get_rank(), size = pgc_get_world_size();
    int left = (rank - 1 + size) % size, right = (rank + 1) % size;
    float send_buff[N], recv_buff[N], accum[N];
    pgc_tensor sb = pgc_host_tensor(send_buff, N, PGC_FLOAT32);
    pgc_tensor rb = pgc_host_tensor(recv_buff, N, PGC_FLOAT32);

    memcpy(send_buff, send, sizeof(send_buff));
    memcpy(recv_buff, send, sizeof(recv_buff));
    memcpy(accum, send, sizeof(accum));
    for (int i = 0; i < size - 1; i++) {
        pgc_work *send_req;
        pgc_tensor *out = i % 2 == 0 ? &sb : &rb, *in = i % 2 == 0 ? &rb : &sb;
        ex_check(pgc_isend(out, right, NULL, 0, &send_req), "pgc_isend");
        ex_check(pgc_recv(in, left, NULL, 0), "pgc_recv");
        for (int k = 0; k < N; k++) {
            accum[k] += ((float *)in->data)[k];
        }
        ex_check(pgc_work_wait(send_req, 0), "pgc_work_wait");
        pgc_work_free(send_req);
    }
    memcpy(recv, accum, sizeof(accum));
}

/* A list of descriptors of the rows of a, for the library's scatter and gather (static:
 * one list is used at a time). */
static pgc_tensor *lib_list(float (*a)[N], int size)
{
    static pgc_tensor l[1024];

    for (int i = 0; i < size && i < 1024; i++) {
        l[i] = pgc_host_tensor(a[i], N, PGC_FLOAT32);
    }
    return l;
}

/* Exits unless the library's collective succeeded and gave what ours gave (n rows for a
 * gather, one for a scatter). */
static void same_as_library(const float *ours, int rc, const float *lib, const char *what)
{
    size_t rows = strcmp(what, "gather") == 0 ? (size_t)pgc_get_world_size() : 1;

    ex_check(rc, what);
    if (memcmp(ours, lib, sizeof(float) * N * rows) != 0) {
        fprintf(stderr, "Rank %d: my_%s differs from pgc_%s\n", pgc_get_rank(), what, what);
        exit(1);
    }
}

int main(void)
{
    float mine[N], ref[N], (*list)[N];
    pgc_tensor t = pgc_host_tensor(ref, N, PGC_FLOAT32), m = pgc_host_tensor(mine, N, PGC_FLOAT32);
    char s[128];
    int rank, size;

    ex_init();
    rank = pgc_get_rank();
    size = pgc_get_world_size();
    list = calloc((size_t)size, sizeof(*list));
    if (!list) {
        return 1;
    }
    for (int i = 0; i < size && rank == 0; i++) {
        list[i][0] = list[i][1] = (float)i;
    }
    my_scatter(mine, list, 0);
    same_as_library(mine,
                    pgc_scatter(&t, rank == 0 ? lib_list(list, size) : NULL, 0, NULL, 0, NULL), ref,
                    "scatter");
    printf("Rank %d: my_scatter got %s (as pgc_scatter)\n", rank,
           ex_fmt_f32(s, sizeof(s), mine, N));
    memset(list, 0, sizeof(*list) * (size_t)size);
    my_gather(mine, list, 0);
    if (rank == 0) {
        float(*lib)[N] = calloc((size_t)size, sizeof(*lib));
        if (!lib) {
            return 1;
        }
        ex_check(pgc_gather(&m, lib_list(lib, size), 0, NULL, 0, NULL), "pgc_gather");
        same_as_library(list[0], PGC_OK, lib[0], "gather");
        free(lib);
    } else {
        ex_check(pgc_gather(&m, NULL, 0, NULL, 0, NULL), "pgc_gather");
    }
    if (rank == 0) {
        printf("Rank 0: my_gather got [");
        for (int i = 0; i < size; i++) {
            printf("%s%s", i ? ", " : "", ex_fmt_f32(s, sizeof(s), list[i], N));
        }
        printf("] (as pgc_gather)\n");
    }
    mine[0] = (float)rank;
    mine[1] = (float)(rank + 1);
    ring_allreduce(mine, list[0]);
    memcpy(ref, mine, sizeof(ref));
    ex_check(pgc_all_reduce(&t, PGC_SUM, NULL, 0, NULL), "pgc_all_reduce");
    if (memcmp(ref, list[0], sizeof(ref)) != 0) {
        fprintf(stderr, "Rank %d: the ring all-reduce differs from pgc_all_reduce\n", rank);
        return 1;
    }
    printf("Rank %d: ring allreduce gives %s (as pgc_all_reduce)\n", rank,
           ex_fmt_f32(s, sizeof(s), list[0], N));
    free(list);
    ex_check(pgc_destroy_process_group(), "pgc_destroy_process_group");
    return 0;
}
