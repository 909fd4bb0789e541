/*
 * mr_threads.c - MPI_THREAD_MULTIPLE under load: MPI_Init_thread(MULTIPLE) must grant it,
 * and then several threads per rank call MPI at the same time.
 *
 * Each rank runs NPP point-to-point threads and one collective thread. Point-to-point
 * thread t ping-pongs with the same thread of its partner rank (rank ^ 1; a rank without
 * one talks to itself): first on MPI_COMM_WORLD told apart from the other threads only by
 * its tag, then on its own communicator (MPI_Comm_dup, made before the threads start).
 * Blocking and non-blocking calls alternate, and every few iterations the message is
 * long enough to take the rendezvous path. The partner answers each value plus one, so
 * both directions are checked. The collective thread runs MPI_Allreduce and
 * MPI_Iallreduce + MPI_Wait on its own communicator and checks the sums.
 */
#include "mrtest.h"

#include <pthread.h>
#include <stdlib.h>

#define NPP 4          /* point-to-point threads per rank */
#define ITERS 150      /* ping-pongs per thread and phase */
#define COLL_ITERS 200 /* allreduces of the collective thread */
#define LONG_LEN 20000 /* ints in a long message (80 kB: past the eager limit) */

struct thread_arg {
    int t;          /* thread number */
    MPI_Comm comm;  /* this thread's own communicator */
    int rank, size; /* in MPI_COMM_WORLD */
    long checks;    /* checks passed (added to the total after the join) */
    int *buf, *back;
};

/* A failed check in a thread ends the whole job, as CHECK does. */
#define TCHECK(a, cond, ...)                                                                       \
    do {                                                                                           \
        (a)->checks++;                                                                             \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d rank %d thread %d: %s: ", __FILE__, __LINE__, (a)->rank,   \
                    (a)->t, #cond);                                                                \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* The value at index i of the message thread t of rank src sends in iteration it. */
static int value(int src, int t, int it, int i)
{
    return src * 1000003 + t * 10007 + it * 101 + i;
}

static int msg_len(int it)
{
    return it % 25 == 24 ? LONG_LEN : 1 + it % 64;
}

static void xfer(struct thread_arg *a, int *buf, int n, int peer, int tag, MPI_Comm comm, int send,
                 int it)
{
    MPI_Request r;

    /* Even iterations block, odd ones go through the request pool. */
    if (it % 2 == 0) {
        if (send) {
            TCHECK(a, MPI_Send(buf, n, MPI_INT, peer, tag, comm) == MPI_SUCCESS, "send");
        } else {
            MPI_Status st;
            int count;

            TCHECK(a, MPI_Recv(buf, n, MPI_INT, peer, tag, comm, &st) == MPI_SUCCESS, "recv");
            MPI_Get_count(&st, MPI_INT, &count);
            TCHECK(a, count == n && st.MPI_TAG == tag, "count %d tag %d", count, st.MPI_TAG);
        }
        return;
    }
    if (send) {
        TCHECK(a, MPI_Isend(buf, n, MPI_INT, peer, tag, comm, &r) == MPI_SUCCESS, "isend");
    } else {
        TCHECK(a, MPI_Irecv(buf, n, MPI_INT, peer, tag, comm, &r) == MPI_SUCCESS, "irecv");
    }
    TCHECK(a, MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait");
}

/* One ping-pong: the lower rank of the pair starts; the other answers value + 1. */
static void ping_pong(struct thread_arg *a, MPI_Comm comm, int tag, int it)
{
    int peer = (a->rank ^ 1) < a->size ? a->rank ^ 1 : a->rank;
    int n = msg_len(it), first = a->rank <= peer;
    MPI_Request r;

    if (peer == a->rank) {
        /* Alone: a non-blocking receive from myself, then the send. */
        for (int i = 0; i < n; i++) {
            a->buf[i] = value(a->rank, a->t, it, i);
        }
        MPI_Irecv(a->back, n, MPI_INT, peer, tag, comm, &r);
        xfer(a, a->buf, n, peer, tag, comm, 1, it);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        for (int i = 0; i < n; i++) {
            TCHECK(a, a->back[i] == value(a->rank, a->t, it, i), "[%d] = %d", i, a->back[i]);
        }
        return;
    }
    if (first) {
        for (int i = 0; i < n; i++) {
            a->buf[i] = value(a->rank, a->t, it, i);
        }
        xfer(a, a->buf, n, peer, tag, comm, 1, it);
        xfer(a, a->back, n, peer, tag, comm, 0, it);
        for (int i = 0; i < n; i++) {
            TCHECK(a, a->back[i] == value(a->rank, a->t, it, i) + 1, "[%d] = %d", i, a->back[i]);
        }
        return;
    }
    xfer(a, a->back, n, peer, tag, comm, 0, it);
    for (int i = 0; i < n; i++) {
        TCHECK(a, a->back[i] == value(peer, a->t, it, i), "[%d] = %d", i, a->back[i]);
        a->back[i]++;
    }
    xfer(a, a->back, n, peer, tag, comm, 1, it);
}

static void *p2p_thread(void *p)
{
    struct thread_arg *a = p;

    for (int it = 0; it < ITERS; it++) {
        ping_pong(a, MPI_COMM_WORLD, 100 + a->t, it);
    }
    for (int it = 0; it < ITERS; it++) {
        ping_pong(a, a->comm, 7, it);
    }
    return NULL;
}

static void *coll_thread(void *p)
{
    struct thread_arg *a = p;
    enum { N = 37 };
    long in[N], out[N];
    MPI_Request r;

    for (int it = 0; it < COLL_ITERS; it++) {
        for (int i = 0; i < N; i++) {
            in[i] = (long)a->rank * it + i;
            out[i] = -1;
        }
        if (it % 2 == 0) {
            TCHECK(a, MPI_Allreduce(in, out, N, MPI_LONG, MPI_SUM, a->comm) == MPI_SUCCESS, "ar");
        } else {
            TCHECK(a, MPI_Iallreduce(in, out, N, MPI_LONG, MPI_SUM, a->comm, &r) == MPI_SUCCESS,
                   "iallreduce");
            TCHECK(a, MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS, "wait");
        }
        for (int i = 0; i < N; i++) {
            long want = (long)it * a->size * (a->size - 1) / 2 + (long)a->size * i;

            TCHECK(a, out[i] == want, "it %d [%d] = %ld, want %ld", it, i, out[i], want);
        }
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct thread_arg args[NPP + 1];
    pthread_t th[NPP + 1];
    int provided = -1, rank, size;

    CHECK_MPI(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    mrt_rank = rank;
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d, want MPI_THREAD_MULTIPLE (%d)", provided,
          MPI_THREAD_MULTIPLE);
    CHECK_MPI(MPI_Query_thread(&provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_Query_thread says %d", provided);

    for (int t = 0; t <= NPP; t++) {
        args[t] = (struct thread_arg){.t = t, .rank = rank, .size = size};
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &args[t].comm));
        args[t].buf = malloc(sizeof(int) * LONG_LEN);
        args[t].back = malloc(sizeof(int) * LONG_LEN);
        CHECK(args[t].buf && args[t].back, "out of memory");
    }
    for (int t = 0; t <= NPP; t++) {
        CHECK(pthread_create(&th[t], NULL, t < NPP ? p2p_thread : coll_thread, &args[t]) == 0,
              "pthread_create");
    }
    for (int t = 0; t <= NPP; t++) {
        pthread_join(th[t], NULL);
        mrt_checks += (int)args[t].checks;
        CHECK_MPI(MPI_Comm_free(&args[t].comm));
        free(args[t].buf);
        free(args[t].back);
    }
    return mrt_finish("mr_threads");
}
