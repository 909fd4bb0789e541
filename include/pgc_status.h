/*
 * pgc_status.h - the one list of status codes of mpishim.
 *
 * Every layer returns these (0 is success, errors are negative). Foreign codes
 * (libfabric -FI_E*, pmix_status_t, ncclResult_t, cudaError_t) are converted at the
 * folder boundary and never leak upwards. pgc_strerror() gives the string of each.
 */
#ifndef PGC_STATUS_H
#define PGC_STATUS_H

/* X(NAME, value, "what it means") */
#define PGC_STATUS_LIST(X)                                                                         \
    X(PGC_OK, 0, "success")                                                                        \
    X(PGC_ERR_INVALID_ARG, -1, "invalid argument")                                                 \
    X(PGC_ERR_INVALID_RANK, -2, "invalid rank")                                                    \
    X(PGC_ERR_INVALID_COUNT, -3, "invalid count")                                                  \
    X(PGC_ERR_INVALID_DTYPE, -4, "invalid datatype")                                               \
    X(PGC_ERR_INVALID_OP, -5, "invalid reduction operation for this datatype")                     \
    X(PGC_ERR_INVALID_GROUP, -6, "invalid group or communicator")                                  \
    X(PGC_ERR_INVALID_TAG, -7, "invalid tag")                                                      \
    X(PGC_ERR_INVALID_ROOT, -8, "invalid root")                                                    \
    X(PGC_ERR_TRUNCATE, -9, "message truncated: receive buffer too small")                         \
    X(PGC_ERR_TIMEOUT, -10, "timed out")                                                           \
    X(PGC_ERR_NOMEM, -11, "out of memory")                                                         \
    X(PGC_ERR_FABRIC, -12, "transport (libfabric) error")                                          \
    X(PGC_ERR_BOOT, -13, "bootstrap error")                                                        \
    X(PGC_ERR_UNREACHABLE, -14, "peer or server unreachable")                                      \
    X(PGC_ERR_PEER_DEAD, -15, "a peer process died")                                               \
    X(PGC_ERR_NOT_INITIALIZED, -16, "not initialized (or already finalized)")                      \
    X(PGC_ERR_ALREADY_INITIALIZED, -17, "already initialized")                                     \
    X(PGC_ERR_UNSUPPORTED, -18, "operation not supported")                                         \
    X(PGC_ERR_CANCELLED, -19, "operation cancelled")                                               \
    X(PGC_ERR_NOT_FOUND, -20, "key or item not found")                                             \
    X(PGC_ERR_MISMATCH, -21, "ranks disagree on sizes or arguments")                               \
    X(PGC_ERR_DEVICE, -22, "device (CUDA/NCCL) error")                                             \
    X(PGC_ERR_IO, -23, "I/O error")                                                                \
    X(PGC_ERR_BUFFER, -24, "invalid buffer")                                                       \
    X(PGC_ERR_REQUEST, -25, "invalid request or work handle")                                      \
    X(PGC_ERR_PENDING, -26, "operation still pending")                                             \
    X(PGC_ERR_INTERNAL, -27, "internal error")

typedef enum {
#define PGC_STATUS_ENUM(name, val, str) name = val,
    PGC_STATUS_LIST(PGC_STATUS_ENUM)
#undef PGC_STATUS_ENUM
} pgc_status_t;

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with hidden visibility; what this header declares is its API. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* A static string for a status code; "unknown status" for codes not in the list. */
const char *pgc_strerror(int status);
/* The code's name, e.g. "PGC_ERR_TIMEOUT". */
const char *pgc_status_name(int status);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
