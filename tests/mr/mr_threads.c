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
 * Last, each point-to-point thread churns objects that all threads share: it sets an
 * attribute of one keyval (with copy and delete callbacks) on its communicator, duplicates
 * it (the copy callback adds one, the duplicate inherits a user error handler), checks the
 * copy, exchanges a strided message built with a derived datatype on the duplicate, and
 * frees it all; main counts the delete callbacks afterwards.
 */
#include "mrtest.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#define NPP 4          /* point-to-point threads per rank */
#define ITERS 150      /* ping-pongs per thread and phase */
#define COLL_ITERS 200 /* allreduces of the collective thread */
#define LONG_LEN 20000 /* ints in a long message (80 kB: past the eager limit) */
#define OBJ_ITERS 40   /* rounds of the object phase */

static int keyval = MPI_KEYVAL_INVALID; /* shared by every thread */
static int deletes;                     /* delete callbacks run (atomic) */

static int copy_plus_one(MPI_Comm comm, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)kv, (void)extra;
    *(void **)out = (void *)((intptr_t)in + 1);
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int kv, void *val, void *extra)
{
    (void)comm, (void)kv, (void)val, (void)extra;
    __atomic_add_fetch(&deletes, 1, __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

static void errors_return(MPI_Comm *comm, int *code, ...)
{
    (void)comm, (void)code;
}

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

/* One round of the object phase (see the top of the file). */
static void objects(struct thread_arg *a, int it)
{
    int peer = (a->rank ^ 1) < a->size ? a->rank ^ 1 : a->rank, n = 1 + it % 50, flag = 0;
    intptr_t val = 1000 * a->t + it;
    MPI_Datatype strided;
    MPI_Comm d;
    void *got = NULL;

    TCHECK(a, MPI_Comm_set_attr(a->comm, keyval, (void *)val) == MPI_SUCCESS, "set_attr");
    TCHECK(a, MPI_Comm_dup(a->comm, &d) == MPI_SUCCESS, "dup");
    TCHECK(a, MPI_Comm_get_attr(d, keyval, &got, &flag) == MPI_SUCCESS, "get_attr");
    TCHECK(a, flag && (intptr_t)got == val + 1, "copied attribute %ld, want %ld",
           (long)(intptr_t)got, (long)val + 1);
    /* every other int of buf, received contiguous */
    TCHECK(a, MPI_Type_vector(n, 1, 2, MPI_INT, &strided) == MPI_SUCCESS, "type_vector");
    TCHECK(a, MPI_Type_commit(&strided) == MPI_SUCCESS, "commit");
    for (int i = 0; i < 2 * n; i++) {
        a->buf[i] = value(a->rank, a->t, it, i);
    }
    TCHECK(a, MPI_Sendrecv(a->buf, 1, strided, peer, 3, a->back, n, MPI_INT, peer, 3, d,
                           MPI_STATUS_IGNORE) == MPI_SUCCESS, "sendrecv");
    for (int i = 0; i < n; i++) {
        TCHECK(a, a->back[i] == value(peer, a->t, it, 2 * i), "strided [%d] = %d", i, a->back[i]);
    }
    TCHECK(a, MPI_Type_free(&strided) == MPI_SUCCESS, "type_free");
    TCHECK(a, MPI_Comm_free(&d) == MPI_SUCCESS, "comm_free");
    TCHECK(a, MPI_Comm_delete_attr(a->comm, keyval) == MPI_SUCCESS, "delete_attr");
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
    for (int it = 0; it < OBJ_ITERS; it++) {
        objects(a, it);
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

    MPI_Errhandler eh;
    CHECK_MPI(MPI_Comm_create_keyval(copy_plus_one, count_delete, &keyval, NULL));
    CHECK_MPI(MPI_Comm_create_errhandler(errors_return, &eh));
    for (int t = 0; t <= NPP; t++) {
        args[t] = (struct thread_arg){.t = t, .rank = rank, .size = size};
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &args[t].comm));
        CHECK_MPI(MPI_Comm_set_errhandler(args[t].comm, eh));
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
    /* per round: the duplicate's attribute when it is freed, the original's on delete */
    CHECK(deletes == NPP * OBJ_ITERS * 2, "%d delete callbacks, want %d", deletes,
          NPP * OBJ_ITERS * 2);
    CHECK_MPI(MPI_Errhandler_free(&eh));
    CHECK_MPI(MPI_Comm_free_keyval(&keyval));
    return mrt_finish("mr_threads");
}
