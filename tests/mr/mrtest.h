/*
 * mrtest.h - checks for the multi-rank test programs: a failed check prints the file,
 * line, rank and the expression with the values involved, and exits non-zero, so the
 * launcher reports the whole job as failed.
 */
#ifndef MRTEST_H
#define MRTEST_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mrt_rank = -1;
static int mrt_checks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        __atomic_add_fetch(&mrt_checks, 1, __ATOMIC_RELAXED); /* threads may check too */          \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "FAIL %s:%d rank %d: %s: ", __FILE__, __LINE__, mrt_rank, #cond);     \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            fflush(stderr);                                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* A failed call's code and its message (an error under MPI_ERRORS_RETURN says why only
 * there). */
#define CHECK_MPI(call)                                                                            \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != MPI_SUCCESS) {                                                                  \
            char m_[MPI_MAX_ERROR_STRING] = "";                                                    \
            int l_ = 0;                                                                            \
            MPI_Error_string(rc_, m_, &l_);                                                        \
            CHECK(rc_ == MPI_SUCCESS, "returned %d: %s", rc_, m_);                                 \
        }                                                                                          \
    } while (0)

/* Arguments of the form NAME=VALUE (from tests/mr.list) are set in the environment before
 * MPI_Init, so one program can be run with e.g. MPISHIM_COLL_ALLREDUCE=ring. */
/* Under MPI_ERRORS_RETURN: the call returns an error of class cls. */
#define EXPECT_CLASS(call, cls)                                                                    \
    do {                                                                                           \
        int rc_ = (call), c_;                                                                      \
        MPI_Error_class(rc_, &c_);                                                                 \
        CHECK(c_ == (cls), "%s gave class %d, expected %d (%s)", #call, c_, (cls), #cls);          \
    } while (0)

static inline void mrt_init(int *argc, char ***argv)
{
    for (int i = 1; i < *argc; i++) {
        if (strchr((*argv)[i], '=')) {
            putenv((*argv)[i]);
        }
    }
    CHECK_MPI(MPI_Init(argc, argv));
    MPI_Comm_rank(MPI_COMM_WORLD, &mrt_rank);
}

/* A wait polled with MPI_Test, and a barrier waited so: a rank can wait here longer than a
 * blocking wait may (MPISHIM_TIMEOUT), while another's calls time out, or while a slow
 * machine (a sanitizer's build) takes longer than a short MPISHIM_TIMEOUT. */
static inline void mrt_polled_wait(MPI_Request *r)
{
    int done = 0;

    while (!done) {
        CHECK_MPI(MPI_Test(r, &done, MPI_STATUS_IGNORE));
    }
}

static inline void mrt_polled_barrier_on(MPI_Comm c)
{
    MPI_Request r;

    CHECK_MPI(MPI_Ibarrier(c, &r));
    mrt_polled_wait(&r);
}

static inline void mrt_polled_barrier(void)
{
    mrt_polled_barrier_on(MPI_COMM_WORLD);
}

/* An MPI_T counter of this process, read with mrt_counter_read (MPI_T initialized by the
 * caller): its session and handle are made at the first read. */
struct mrt_counter {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle;
    int ready;
};

static inline unsigned long long mrt_counter_read(struct mrt_counter *c, const char *name)
{
    unsigned long long v = 0;
    int index, count;

    if (!c->ready) {
        CHECK(MPI_T_pvar_get_index(name, MPI_T_PVAR_CLASS_COUNTER, &index) == MPI_SUCCESS,
              "no MPI_T counter %s", name);
        CHECK_MPI(MPI_T_pvar_session_create(&c->session));
        CHECK_MPI(MPI_T_pvar_handle_alloc(c->session, index, NULL, &c->handle, &count));
        CHECK(count == 1, "%s: count %d", name, count);
        c->ready = 1;
    }
    CHECK_MPI(MPI_T_pvar_read(c->session, c->handle, &v));
    return v;
}

/* mrt_init, under MPI_THREAD_MULTIPLE (which it checks it got) where an argument is
 * --threads: whether it was. */
static inline int mrt_init_threads(int *argc, char ***argv)
{
    int threads = 0, provided = 0;

    for (int i = 1; i < *argc; i++) {
        threads |= strcmp((*argv)[i], "--threads") == 0;
        if (strchr((*argv)[i], '=')) {
            putenv((*argv)[i]);
        }
    }
    if (!threads) {
        mrt_init(argc, argv);
        return 0;
    }
    CHECK_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &mrt_rank);
    return 1;
}

/* Every rank reports its count of checks; rank 0 prints the total. */
static inline int mrt_finish(const char *name)
{
    long mine = mrt_checks, total = 0;
    MPI_Reduce(&mine, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (mrt_rank == 0) {
        int size;
        MPI_Comm_size(MPI_COMM_WORLD, &size);
        printf("%s: %ld checks passed on %d ranks\n", name, total, size);
    }
    MPI_Finalize();
    return 0;
}

#endif
