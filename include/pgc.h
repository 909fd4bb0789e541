/* pgc.h - process groups in C (placeholder; the full API is written in pg_core's step). */
#ifndef PGC_H
#define PGC_H
#include "pgc_status.h"
#endif
