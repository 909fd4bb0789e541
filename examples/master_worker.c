/*
 * master_worker.c - a task farm: rank 0 hands out task numbers, the workers compute and
 * reply with a result whose length depends on the task. The master takes replies in
 * whatever order they come (MPI_Probe on MPI_ANY_SOURCE), sizes its buffer with
 * MPI_Get_count, receives from the rank the probe named and sends that worker the next
 * task, until all are done; then it tells every worker to stop.
 *
 * Which worker did which task depends on timing, but the sum of the results does not.
 * With one rank the master does the tasks itself.
 * An unmodified MPI program: builds with any MPI's mpicc.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NTASKS 60
#define TAG_TASK 1
#define TAG_RESULT 2
#define TAG_STOP 3

/* The result of task t: t % 9 + 1 numbers, the first being the task number. */
static int result_len(int t)
{
    return t % 9 + 1;
}

static void compute(int t, long long *out)
{
    out[0] = t;
    for (int i = 1; i < result_len(t); i++) {
        out[i] = (long long)t * t * i + 7 * i;
    }
}

static long long sum_of(const long long *r, int n)
{
    long long s = 0;

    for (int i = 0; i < n; i++) {
        s += r[i];
    }
    return s;
}

static void worker(void)
{
    long long out[16];
    MPI_Status st;
    int t;

    for (;;) {
        MPI_Recv(&t, 1, MPI_INT, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        if (st.MPI_TAG == TAG_STOP) {
            return;
        }
        compute(t, out);
        MPI_Send(out, result_len(t), MPI_LONG_LONG, 0, TAG_RESULT, MPI_COMM_WORLD);
    }
}

/* Receives one reply of any worker; returns that worker's rank and adds to *total. */
static int collect(long long *total, int *done)
{
    MPI_Status st;
    long long *buf;
    int n;

    MPI_Probe(MPI_ANY_SOURCE, TAG_RESULT, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_LONG_LONG, &n);
    buf = malloc(sizeof(long long) * (size_t)n);
    if (!buf) {
        fprintf(stderr, "master_worker: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Recv(buf, n, MPI_LONG_LONG, st.MPI_SOURCE, TAG_RESULT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (n != result_len((int)buf[0])) {
        fprintf(stderr, "master_worker: task %lld answered %d numbers\n", buf[0], n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    *total += sum_of(buf, n);
    (*done)++;
    free(buf);
    return st.MPI_SOURCE;
}

static long long master(int size)
{
    long long total = 0, out[16];
    int next = 0, done = 0, stop = 0;

    if (size == 1) {
        for (; next < NTASKS; next++) {
            compute(next, out);
            total += sum_of(out, result_len(next));
        }
        return total;
    }
    /* One task to each worker to start (fewer if there are fewer tasks than workers). */
    for (int w = 1; w < size && next < NTASKS; w++, next++) {
        MPI_Send(&next, 1, MPI_INT, w, TAG_TASK, MPI_COMM_WORLD);
    }
    while (done < NTASKS) {
        int w = collect(&total, &done);

        if (next < NTASKS) {
            MPI_Send(&next, 1, MPI_INT, w, TAG_TASK, MPI_COMM_WORLD);
            next++;
        }
    }
    for (int w = 1; w < size; w++) {
        MPI_Send(&stop, 1, MPI_INT, w, TAG_STOP, MPI_COMM_WORLD);
    }
    return total;
}

int main(int argc, char **argv)
{
    int rank, size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == 0) {
        long long total = master(size);

        printf("tasks: %d\n", NTASKS);
        printf("sum of results: %lld\n", total);
    } else {
        worker();
    }
    MPI_Finalize();
    return 0;
}
