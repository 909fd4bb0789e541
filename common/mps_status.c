/* Strings of the status list, generated from PGC_STATUS_LIST so they cannot drift. */
#include "config.h"

#include "pgc_status.h"

const char *pgc_strerror(int status)
{
    switch (status) {
#define PGC_STATUS_STR(name, val, str)                                                             \
    case val:                                                                                      \
        return str;
        PGC_STATUS_LIST(PGC_STATUS_STR)
#undef PGC_STATUS_STR
    }
    return "unknown status";
}

const char *pgc_status_name(int status)
{
    switch (status) {
#define PGC_STATUS_NAME(name, val, str)                                                            \
    case val:                                                                                      \
        return #name;
        PGC_STATUS_LIST(PGC_STATUS_NAME)
#undef PGC_STATUS_NAME
    }
    return "PGC_ERR_UNKNOWN";
}
