/* Log lines and the per-thread error message. */
#include "config.h"

#include "mps_log.h"
#include "mps_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int log_rank = -1;
static int log_level = -1;
static __thread char last_error[512];

void mps_log_set_rank(int rank)
{
    log_rank = rank;
}

/* The rank a launcher gave this process in its environment, before the bootstrap confirms
 * it: a message of a failing start-up must still say which rank failed. -1 if none. */
static int launcher_rank(void)
{
    /* srun's task number last: its variables also reach what a batch script starts. */
    static const char *vars[] = {"PMIX_RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK", "RANK",
                                 "SLURM_PROCID"};

    for (size_t i = 0; i < sizeof(vars) / sizeof(*vars); i++) {
        const char *v = getenv(vars[i]);
        char *end;
        long r;

        if (!v || !*v) {
            continue;
        }
        r = strtol(v, &end, 10);
        if (*end == '\0' && r >= 0 && r < (1L << 30)) {
            return (int)r;
        }
    }
    return -1;
}

int mps_log_get_rank(void)
{
    return log_rank >= 0 ? log_rank : launcher_rank();
}

static int parse_level(const char *s)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(s, names[i]) == 0) {
            return i;
        }
    }
    return MPS_LOG_WARN;
}

void mps_log_level_reload(void)
{
    log_level = -1;
}

int mps_log_enabled(enum mps_log_level level)
{
    if (log_level < 0) {
        log_level = parse_level(mps_config_str(MPS_CFG_LOG_LEVEL));
    }
    return (int)level <= log_level;
}

void mps_log(enum mps_log_level level, const char *fmt, ...)
{
    static const char *names[] = {"error", "warning", "info", "debug"};
    char line[1024];
    va_list ap;
    int n;

    if (!mps_log_enabled(level)) {
        return;
    }
    int rank = mps_log_get_rank();

    if (rank >= 0) {
        n = snprintf(line, sizeof(line), "[mpishim rank %d] %s: ", rank, names[level]);
    } else {
        n = snprintf(line, sizeof(line), "[mpishim] %s: ", names[level]);
    }
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    /* One fprintf per line so that lines of concurrent ranks do not interleave. */
    fprintf(stderr, "%s\n", line);
}

int mps_error(int status, const char *fmt, ...)
{
    char msg[sizeof(last_error)];
    va_list ap;
    /* Format into a temporary: the arguments may include mps_last_error() itself. */
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    memcpy(last_error, msg, sizeof(msg));
    MPS_DEBUG("error %d: %s", status, last_error);
    return status;
}

const char *mps_last_error(void)
{
    return last_error;
}

void mps_clear_error(void)
{
    last_error[0] = '\0';
}
