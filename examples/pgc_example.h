/*
 * pgc_example.h - what the pgc examples share: starting the process group (from the
 * launcher's environment: mpiexec, srun --mpi=pmix, or RANK/WORLD_SIZE/MASTER_ADDR/
 * MASTER_PORT set by hand in two shells), stopping on an error with its message, and
 * printing tensors the way PyTorch prints them, so that the output matches the documents.
 */
#ifndef PGC_EXAMPLE_H
#define PGC_EXAMPLE_H

#include <pgc.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exits with the library's message when rc is an error. */
static inline void ex_check(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "%s failed: %s\n", what, pgc_last_error());
        exit(1);
    }
}

static inline void ex_init(void)
{
    ex_check(pgc_init_process_group(NULL), "pgc_init_process_group");
}

/* "tensor([1, 2])" for integers. */
static inline const char *ex_fmt_i64(char *buf, size_t len, const int64_t *v, size_t n)
{
    size_t off = (size_t)snprintf(buf, len, "tensor([");
    for (size_t i = 0; i < n && off < len; i++) {
        off += (size_t)snprintf(buf + off, len - off, "%s%lld", i ? ", " : "", (long long)v[i]);
    }
    if (off < len) {
        snprintf(buf + off, len - off, "])");
    }
    return buf;
}

/* "tensor([1., 1.])", or with four decimals when a value is not integral, as torch does. */
static inline const char *ex_fmt_f32(char *buf, size_t len, const float *v, size_t n)
{
    int integral = 1;
    size_t off = (size_t)snprintf(buf, len, "tensor([");

    for (size_t i = 0; i < n; i++) {
        integral &= v[i] == floorf(v[i]);
    }
    for (size_t i = 0; i < n && off < len; i++) {
        off += (size_t)snprintf(buf + off, len - off, integral ? "%s%.0f." : "%s%.4f",
                                i ? ", " : "", (double)v[i]);
    }
    if (off < len) {
        snprintf(buf + off, len - off, "])");
    }
    return buf;
}

/* A 0-d tensor, as tensor[0] prints: "tensor(1.)". */
static inline const char *ex_fmt_scalar(char *buf, size_t len, float v)
{
    snprintf(buf, len, v == floorf(v) ? "tensor(%.0f.)" : "tensor(%.4f)", (double)v);
    return buf;
}

#endif
