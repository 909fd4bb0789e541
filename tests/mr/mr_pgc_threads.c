/*
 * mr_pgc_threads.c - the process-group API from several threads at once, as pgc.h allows
 * ("every call may be made from any thread"): each rank runs NT threads, and thread t
 *  - ping-pongs with thread t of its partner rank (rank ^ 1; a rank without one talks to
 *    itself) with pgc_isend/pgc_irecv and pgc_work_wait, told apart by its tag, the reply
 *    being every element plus one; every few iterations the message is long enough for
 *    the rendezvous path;
 *  - runs pgc_all_reduce (blocking, then async and waited) and pgc_broadcast on a group
 *    of its own (pgc_new_group of the whole world, made before the threads start: two
 *    threads must not run collectives on one group at once);
 *  - hands a work handle to the next thread's check: thread t starts an async all_reduce
 *    and thread (t + 1) % NT waits for it (a work is used by one thread at a time, not
 *    necessarily the one that made it).
 * Every value is computed here from the rank, thread and iteration. Built with
 * --enable-sanitizers=thread, a data race in the library fails the run.
 *
 * Run with 1 to 8 ranks: mpiexec -n 2 tests/mr/mr_pgc_threads
 */
#include <pgc.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define NT 4             /* threads per rank */
#define ITERS 120        /* iterations per thread */
#define LONG_LEN 20000   /* int32 elements of a long message (80 kB: past the eager limit) */
#define AR_LEN 64        /* int64 elements of an all_reduce */

struct thread_arg {
    int t, rank, size;
    pgc_group *g;       /* this thread's own group */
    int32_t *buf, *back;
    long checks;
};

/* Works handed from thread t to thread (t + 1) % NT, one per iteration, with their data. */
static struct handoff {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pgc_work *work; /* NULL until the producer has started it */
    int iter;       /* which iteration's work it is */
    int64_t data[AR_LEN];
} slots[NT];

#define TCHECK(a, cond, ...)                                                                       \
    do {                                                                                           \
        (a)->checks++;                                                                             \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d rank %d thread %d: %s: ", __FILE__, __LINE__, (a)->rank,   \
                    (a)->t, #cond);                                                                \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, " (last error: %s)\n", pgc_last_error());                              \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define TCHECK_OK(a, call)                                                                         \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        TCHECK(a, rc_ == PGC_OK, "%s returned %s", #call, pgc_status_name(rc_));                   \
    } while (0)

static int32_t value(int src, int t, int it, size_t i)
{
    return (int32_t)(src * 1000003 + t * 10007 + it * 101 + (int)i);
}

static size_t msg_len(int it)
{
    return it % 20 == 19 ? LONG_LEN : 1 + (size_t)(it % 50);
}

/* One exchange: both sides send their values and expect the partner's; the pair with the
 * lower rank then gets every element back plus one. */
static void ping_pong(struct thread_arg *a, int it)
{
    int peer = a->rank ^ 1;
    size_t n = msg_len(it);
    pgc_work *ws, *wr;

    if (peer >= a->size) {
        peer = a->rank;
    }
    for (size_t i = 0; i < n; i++) {
        a->buf[i] = value(a->rank, a->t, it, i);
    }
    pgc_tensor out = pgc_host_tensor(a->buf, n, PGC_INT32);
    pgc_tensor in = pgc_host_tensor(a->back, n, PGC_INT32);
    TCHECK_OK(a, pgc_irecv(&in, peer, NULL, a->t, &wr));
    TCHECK_OK(a, pgc_isend(&out, peer, NULL, a->t, &ws));
    TCHECK_OK(a, pgc_work_wait(wr, -1));
    TCHECK_OK(a, pgc_work_wait(ws, -1));
    TCHECK(a, pgc_work_source(wr) == peer, "source %d, expected %d", pgc_work_source(wr), peer);
    pgc_work_free(wr);
    pgc_work_free(ws);
    for (size_t i = 0; i < n; i++) {
        TCHECK(a, a->back[i] == value(peer, a->t, it, i), "iteration %d element %zu: %d", it, i,
               (int)a->back[i]);
    }
}

static void collectives(struct thread_arg *a, int it)
{
    int64_t v[AR_LEN];
    pgc_work *w;

    /* sum over ranks of (r + 1) * (t + it + i + 1) */
    int64_t ranks = (int64_t)a->size * (a->size + 1) / 2;
    for (int i = 0; i < AR_LEN; i++) {
        v[i] = (int64_t)(a->rank + 1) * (a->t + it + i + 1);
    }
    pgc_tensor tv = pgc_host_tensor(v, AR_LEN, PGC_INT64);
    if (it % 2 == 0) {
        TCHECK_OK(a, pgc_all_reduce(&tv, PGC_SUM, a->g, 0, NULL));
    } else {
        TCHECK_OK(a, pgc_all_reduce(&tv, PGC_SUM, a->g, 1, &w));
        TCHECK_OK(a, pgc_work_wait(w, -1));
        pgc_work_free(w);
    }
    for (int i = 0; i < AR_LEN; i++) {
        TCHECK(a, v[i] == ranks * (a->t + it + i + 1), "all_reduce %d element %d: %lld", it, i,
               (long long)v[i]);
    }
    int root = it % a->size;
    for (int i = 0; i < AR_LEN; i++) {
        v[i] = a->rank == root ? (int64_t)root * 7 + it + i : -1;
    }
    TCHECK_OK(a, pgc_broadcast(&tv, root, a->g, 0, NULL));
    for (int i = 0; i < AR_LEN; i++) {
        TCHECK(a, v[i] == (int64_t)root * 7 + it + i, "broadcast %d element %d", it, i);
    }
}

/* Starts iteration it's async all_reduce (max over ranks of rank * (t + 1) + it + i) in
 * this thread's slot, on this thread's group. */
static void handoff_start(struct thread_arg *a, int it)
{
    struct handoff *s = &slots[a->t];
    pgc_work *w;

    pthread_mutex_lock(&s->mu);
    while (s->work) { /* the consumer has not taken the previous one yet */
        pthread_cond_wait(&s->cv, &s->mu);
    }
    for (int i = 0; i < AR_LEN; i++) {
        s->data[i] = (int64_t)a->rank * (a->t + 1) + it + i;
    }
    pgc_tensor tv = pgc_host_tensor(s->data, AR_LEN, PGC_INT64);
    TCHECK_OK(a, pgc_all_reduce(&tv, PGC_MAX, a->g, 1, &w));
    s->work = w;
    s->iter = it;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* Waits, in this thread, for the work the previous thread started in iteration it. */
static void handoff_finish(struct thread_arg *a, int it)
{
    int from = (a->t + NT - 1) % NT;
    struct handoff *s = &slots[from];

    pthread_mutex_lock(&s->mu);
    while (!s->work || s->iter != it) {
        pthread_cond_wait(&s->cv, &s->mu);
    }
    TCHECK_OK(a, pgc_work_wait(s->work, -1));
    pgc_work_free(s->work);
    for (int i = 0; i < AR_LEN; i++) {
        int64_t want = (int64_t)(a->size - 1) * (from + 1) + it + i;
        TCHECK(a, s->data[i] == want, "handed-off all_reduce %d element %d: %lld, expected %lld",
               it, i, (long long)s->data[i], (long long)want);
    }
    s->work = NULL;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void *thread_main(void *p)
{
    struct thread_arg *a = p;

    for (int it = 0; it < ITERS; it++) {
        ping_pong(a, it);
        collectives(a, it);
        handoff_start(a, it);
        handoff_finish(a, it);
    }
    return NULL;
}

int main(void)
{
    struct thread_arg args[NT];
    pthread_t th[NT];
    long total = 0;

    if (pgc_init_process_group(NULL) != PGC_OK) {
        fprintf(stderr, "FAIL: pgc_init_process_group: %s\n", pgc_last_error());
        return 1;
    }
    int rank = pgc_get_rank(), size = pgc_get_world_size();
    int *all = malloc((size_t)size * sizeof(int));
    for (int r = 0; all && r < size; r++) {
        all[r] = r;
    }
    for (int t = 0; t < NT; t++) {
        args[t] = (struct thread_arg){.t = t, .rank = rank, .size = size};
        args[t].buf = malloc(LONG_LEN * sizeof(int32_t));
        args[t].back = malloc(LONG_LEN * sizeof(int32_t));
        pthread_mutex_init(&slots[t].mu, NULL);
        pthread_cond_init(&slots[t].cv, NULL);
        if (!all || !args[t].buf || !args[t].back || pgc_new_group(all, size, &args[t].g)) {
            fprintf(stderr, "FAIL rank %d: setup of thread %d: %s\n", rank, t, pgc_last_error());
            return 1;
        }
    }
    for (int t = 0; t < NT; t++) {
        if (pthread_create(&th[t], NULL, thread_main, &args[t]) != 0) {
            fprintf(stderr, "FAIL rank %d: pthread_create\n", rank);
            return 1;
        }
    }
    for (int t = 0; t < NT; t++) {
        pthread_join(th[t], NULL);
        total += args[t].checks;
    }
    for (int t = 0; t < NT; t++) {
        pgc_destroy_group(args[t].g);
        free(args[t].buf);
        free(args[t].back);
    }
    free(all);
    if (pgc_destroy_process_group() != PGC_OK) {
        fprintf(stderr, "FAIL rank %d: pgc_destroy_process_group: %s\n", rank, pgc_last_error());
        return 1;
    }
    printf("mr_pgc_threads: rank %d: %ld checks passed (world of %d)\n", rank, total, size);
    return 0;
}
