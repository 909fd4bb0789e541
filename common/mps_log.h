/*
 * mps_log.h - logging and the per-thread "last error" message.
 *
 * A layer that fails sets a message saying the cause (mps_error) and returns the code;
 * the API layer on top adds the call name and the rank and either returns it or
 * prints it (MPI's fatal handler). Log lines go to stderr with the rank as prefix.
 */
#ifndef MPS_LOG_H
#define MPS_LOG_H

#include <stdarg.h>

enum mps_log_level { MPS_LOG_ERROR = 0, MPS_LOG_WARN, MPS_LOG_INFO, MPS_LOG_DEBUG };

/* The rank printed in log lines. Until the bootstrap sets it, the rank a launcher put in
 * the environment (PMIX_RANK, PMI_RANK, OMPI_COMM_WORLD_RANK, RANK, SLURM_PROCID); -1
 * (none) prints none. */
void mps_log_set_rank(int rank);
int mps_log_get_rank(void);
int mps_log_enabled(enum mps_log_level level);
/* Reads MPISHIM_LOG_LEVEL again at the next message (after mps_config_set changed it). */
void mps_log_level_reload(void);
void mps_log(enum mps_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records the cause of a failure for this thread and returns status, so that
 * `return mps_error(PGC_ERR_INVALID_RANK, "rank %d not in group of %d", r, n);` reads well. */
int mps_error(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The cause recorded by the last mps_error of this thread ("" if none). */
const char *mps_last_error(void);
void mps_clear_error(void);

#define MPS_ERR(...) mps_log(MPS_LOG_ERROR, __VA_ARGS__)
#define MPS_WARN(...) mps_log(MPS_LOG_WARN, __VA_ARGS__)
#define MPS_INFO(...) mps_log(MPS_LOG_INFO, __VA_ARGS__)
#define MPS_DEBUG(...)                                                                             \
    do {                                                                                           \
        if (mps_log_enabled(MPS_LOG_DEBUG)) {                                                      \
            mps_log(MPS_LOG_DEBUG, __VA_ARGS__);                                                   \
        }                                                                                          \
    } while (0)

#endif
