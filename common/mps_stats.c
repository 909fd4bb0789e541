#include "config.h"

#include "mps_stats.h"

/* Zero at load: the counters run from the start of the process (MPI_T_pvar_reset and a
 * session's start read them relative to a handle's own base, never clearing these). */
struct mps_stats mps_stats;
