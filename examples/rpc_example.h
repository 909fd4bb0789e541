/*
 * rpc_example.h - what the RPC examples share: worker names, starting RPC from the
 * launcher's environment, stopping on an error with its message, and the synthetic data
 * set (points labelled by a fixed linear "teacher") that tests/scripts/test_rpc_examples.sh
 * recomputes on its own to check the printed results.
 */
#ifndef RPC_EXAMPLE_H
#define RPC_EXAMPLE_H

#include <pgc_rpc.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EX_DIM 4 /* input features */

static inline void rx_check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "%s failed: %s\n", what, pgc_last_error());
        exit(1);
    }
}

/* Worker r is "worker<r>" (torch's tutorials name them so). */
static inline const char *rx_name(int r)
{
    static __thread char buf[4][24];
    static __thread int k;
    char *b = buf[k++ & 3];

    snprintf(b, 24, "worker%d", r);
    return b;
}

/* Joins RPC as worker<rank>; rank and size from the launcher. Returns the rank. */
static inline int rx_init(int *size)
{
    pgc_rpc_opts o = PGC_RPC_OPTS_DEFAULT;
    pgc_rpc_worker_info me;
    const char *r = getenv("RANK") ? getenv("RANK")
                    : getenv("PMIX_RANK") ? getenv("PMIX_RANK") : getenv("SLURM_PROCID");
    char name[24];

    /* The name needs the rank before init: the launcher's environment has it (mpiexec,
     * srun and env:// set RANK or PMIX_RANK); a lone process is worker0. */
    snprintf(name, sizeof(name), "worker%s", r ? r : "0");
    o.num_server_threads = 4;
    rx_check(pgc_rpc_init(name, -1, -1, &o), "pgc_rpc_init");
    rx_check(pgc_rpc_get_self(&me), "pgc_rpc_get_self");
    for (*size = 0; pgc_rpc_get_worker_info_by_rank(*size, &me) == PGC_OK; (*size)++) {
    }
    pgc_rpc_get_self(&me);
    return me.rank;
}

/* Sample i: features x (EX_DIM) and label y = w_true . x + b_true. */
static inline void rx_sample(int i, double *x, double *y)
{
    double t = 0.3;

    for (int j = 0; j < EX_DIM; j++) {
        double w = (j + 1) * 0.1 * (j % 2 ? -1 : 1);
        x[j] = ((i * 7 + j * 3) % 11) / 10.0 - 0.5;
        t += w * x[j];
    }
    *y = t;
}

#endif
