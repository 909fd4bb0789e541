/* The MPISHIM_* variable table, its cached lookups and the check of every value at init. */
#include "config.h"

#include "mps_config.h"
#include "mps_log.h"
#include "pgc_status.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

static const struct mps_config_desc table[MPS_CFG_COUNT] = {
#define MPS_CONFIG_DESC(id, name, type, def, choices, doc)                                         \
    [MPS_CFG_##id] = {name, MPS_CFG_##type, def, choices, doc},
    MPS_CONFIG_LIST(MPS_CONFIG_DESC)
#undef MPS_CONFIG_DESC
};

/* MPISHIM_* names that the compiler wrappers and test scripts read, not the library: a
 * program started from a test or a wrapper's environment sees them and must not warn. */
static const char *const tool_names[] = {"MPISHIM_CC", "MPISHIM_CXX", "MPISHIM_WRAPPER_BUILDDIR",
                                         "MPISHIM_SLURM_DIR", "MPISHIM_SLURM_PORT"};

/* Values are looked up once: getenv on a hot path (the spin count, the eager size) costs.
 * Threads may look a value up at the same time (a schedule is built outside the world
 * lock): each finds the same string, and the atomics make the caching race-free. */
static const char *cache[MPS_CFG_COUNT];
static bool written[MPS_CFG_COUNT];
static bool validated;

/* The values mps_config_set stored. Never freed: a reader on another thread may still
 * hold the previous one, and tools write a handful at most. The list keeps them reachable
 * (LeakSanitizer). */
struct owned_value {
    struct owned_value *next;
    char s[];
};
static struct owned_value *owned;

const struct mps_config_desc *mps_config_desc(enum mps_config_id id)
{
    return &table[id];
}

const char *mps_config_type_name(enum mps_config_type type)
{
    static const char *const names[] = {
        [MPS_CFG_INT] = "int",   [MPS_CFG_DOUBLE] = "double", [MPS_CFG_STRING] = "string",
        [MPS_CFG_SIZE] = "size", [MPS_CFG_BOOL] = "bool",     [MPS_CFG_ENUM] = "enum"};

    return names[type];
}

/* Parsing. Only decimal digits: strtol's base 0 read "010" as octal 8 and stopped silently
 * at "32k", giving 32. NULL when there is no digit or the number overflows a long. */
static const char *parse_digits(const char *s, long *out)
{
    long v = 0;

    if (!isdigit((unsigned char)*s)) {
        return NULL;
    }
    for (; isdigit((unsigned char)*s); s++) {
        int d = *s - '0';

        if (v > (LONG_MAX - d) / 10) {
            return NULL;
        }
        v = v * 10 + d;
    }
    *out = v;
    return s;
}

static bool parse_count(const char *s, long *out)
{
    const char *end = parse_digits(s, out);

    return end && *end == '\0';
}

static bool parse_size(const char *s, long *out)
{
    const char *end = parse_digits(s, out);
    int shift = 0;

    if (!end) {
        return false;
    }
    switch (tolower((unsigned char)*end)) {
    case 'k':
        shift = 10;
        break;
    case 'm':
        shift = 20;
        break;
    case 'g':
        shift = 30;
        break;
    default:
        return *end == '\0';
    }
    if (end[1] != '\0' || *out > (LONG_MAX >> shift)) {
        return false;
    }
    *out <<= shift;
    return true;
}

/* A positive decimal number; strtod alone would also take hex, "inf" and "nan". */
static bool parse_seconds(const char *s, double *out)
{
    char *end;

    if (!(isdigit((unsigned char)*s) || *s == '.') || strpbrk(s, "xX")) {
        return false;
    }
    errno = 0;
    *out = strtod(s, &end);
    return *end == '\0' && errno == 0 && isfinite(*out) && *out > 0;
}

/* An ENUM's choice as the table spells it, the value itself for a prefix choice
 * ("tcp://host:port"), or NULL if it matches none. */
static const char *match_choice(const struct mps_config_desc *d, const char *v)
{
    for (const char *const *c = d->choices; *c; c++) {
        size_t n = strlen(*c);
        bool prefix = n > 3 && strcmp(*c + n - 3, "://") == 0;

        if (prefix ? strncmp(v, *c, n) == 0 : strcasecmp(v, *c) == 0) {
            return prefix ? v : *c;
        }
    }
    return NULL;
}

static void list_choices(const struct mps_config_desc *d, char *buf, size_t n)
{
    size_t used = 0;

    buf[0] = '\0';
    for (const char *const *c = d->choices; *c && used < n; c++) {
        used += (size_t)snprintf(buf + used, n - used, "%s%s", c == d->choices ? "" : ", ", *c);
    }
}

/* The value to use for v (the table's spelling for an ENUM), or NULL if v is not valid for
 * the variable's type; then why, if not NULL, says what is accepted. */
static const char *check(const struct mps_config_desc *d, const char *v, char *why, size_t n)
{
    static const char *const wants[MPS_CFG_ENUM + 1] = {
        [MPS_CFG_INT] = "a count (decimal digits, 0 or more)",
        [MPS_CFG_SIZE] = "a size in bytes (decimal digits, optionally followed by k, m or g: "
                         "32k is 32768)",
        [MPS_CFG_BOOL] = "0 or 1",
        [MPS_CFG_DOUBLE] = "a number of seconds above 0 (300, 0.5)",
    };
    const char *ok = NULL;
    char choices[240];
    long l;
    double x;

    switch (d->type) {
    case MPS_CFG_INT:
        ok = parse_count(v, &l) ? v : NULL;
        break;
    case MPS_CFG_SIZE:
        ok = parse_size(v, &l) ? v : NULL;
        break;
    case MPS_CFG_BOOL:
        ok = strcmp(v, "0") == 0 || strcmp(v, "1") == 0 ? v : NULL;
        break;
    case MPS_CFG_DOUBLE:
        ok = parse_seconds(v, &x) ? v : NULL;
        break;
    case MPS_CFG_ENUM:
        ok = match_choice(d, v);
        break;
    case MPS_CFG_STRING:
        ok = v;
        break;
    }
    if (!ok && why) {
        if (d->type == MPS_CFG_ENUM) {
            list_choices(d, choices, sizeof(choices));
        }
        snprintf(why, n, "%s=\"%.40s\" is not %s%s", d->name, v,
                 d->type == MPS_CFG_ENUM ? "one of " : wants[d->type],
                 d->type == MPS_CFG_ENUM ? choices : "");
    }
    return ok;
}

const char *mps_config_str(enum mps_config_id id)
{
    const char *c = __atomic_load_n(&cache[id], __ATOMIC_ACQUIRE);

    if (!c) {
        const char *v = getenv(table[id].name);

        c = v && *v ? check(&table[id], v, NULL, 0) : NULL;
        if (!c) {
            c = table[id].def;
        }
        __atomic_store_n(&cache[id], c, __ATOMIC_RELEASE);
    }
    return c;
}

long mps_config_int(enum mps_config_id id)
{
    long v = 0;

    /* mps_config_str gives a valid value (or the default): a count and a bool are sizes
     * without a suffix. */
    return parse_size(mps_config_str(id), &v) ? v : 0;
}

double mps_config_double(enum mps_config_id id)
{
    return strtod(mps_config_str(id), NULL);
}

bool mps_config_default(enum mps_config_id id)
{
    return mps_config_str(id) == table[id].def;
}

bool mps_config_is_set(enum mps_config_id id)
{
    const char *v = getenv(table[id].name);

    return (v && *v) || __atomic_load_n(&written[id], __ATOMIC_ACQUIRE);
}

int mps_config_set(enum mps_config_id id, const char *value, char *why, size_t n)
{
    struct owned_value *o;
    const char *ok;
    size_t len;

    if (!*value) {
        /* Empty means the default, as an empty variable in the environment does. */
        __atomic_store_n(&cache[id], table[id].def, __ATOMIC_RELEASE);
        return PGC_OK;
    }
    ok = check(&table[id], value, why, n);
    if (!ok) {
        return PGC_ERR_INVALID_ARG;
    }
    len = strlen(ok);
    o = malloc(sizeof(*o) + len + 1);
    if (!o) {
        snprintf(why, n, "no memory for the value of %s", table[id].name);
        return PGC_ERR_NOMEM;
    }
    memcpy(o->s, ok, len + 1);
    o->next = owned;
    owned = o;
    __atomic_store_n(&written[id], true, __ATOMIC_RELEASE);
    __atomic_store_n(&cache[id], o->s, __ATOMIC_RELEASE);
    return PGC_OK;
}

/* The unknown-name warning. */

static size_t edit_distance(const char *a, size_t na, const char *b)
{
    size_t nb = strlen(b), row[64];

    if (na >= 64 || nb >= 64) {
        return SIZE_MAX;
    }
    for (size_t j = 0; j <= nb; j++) {
        row[j] = j;
    }
    for (size_t i = 1; i <= na; i++) {
        size_t diag = row[0];

        row[0] = i;
        for (size_t j = 1; j <= nb; j++) {
            size_t up = row[j];
            size_t best = diag + (a[i - 1] != b[j - 1]);

            best = up + 1 < best ? up + 1 : best;
            best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
            row[j] = best;
            diag = up;
        }
    }
    return row[nb];
}

static bool is_known(const char *name, size_t n)
{
    for (int i = 0; i < MPS_CFG_COUNT; i++) {
        if (strlen(table[i].name) == n && strncmp(table[i].name, name, n) == 0) {
            return true;
        }
    }
    for (size_t i = 0; i < sizeof(tool_names) / sizeof(tool_names[0]); i++) {
        if (strlen(tool_names[i]) == n && strncmp(tool_names[i], name, n) == 0) {
            return true;
        }
    }
    return false;
}

/* An unknown name is a warning, not an error: a job script written for another version of
 * the library (which has a variable this one lacks) still runs, as a typo is still seen. */
static void warn_unknown(void)
{
    for (char **e = environ; e && *e; e++) {
        size_t n = strcspn(*e, "="), best = 4;
        const char *near = NULL;

        if (strncmp(*e, "MPISHIM_", 8) != 0 || is_known(*e, n)) {
            continue;
        }
        for (int i = 0; i < MPS_CFG_COUNT; i++) {
            size_t d = edit_distance(*e, n, table[i].name);

            if (d < best) {
                best = d;
                near = table[i].name;
            }
        }
        MPS_WARN("%.*s is not a variable of this library and is ignored%s%s%s "
                 "(mpishim_info --vars lists them)",
                 (int)n, *e, near ? "; did you mean " : "", near ? near : "", near ? "?" : "");
    }
}

int mps_config_validate(void)
{
    char first[400] = "", others[200] = "";
    size_t used = 0;
    int bad = 0;

    if (__atomic_load_n(&validated, __ATOMIC_ACQUIRE)) {
        return PGC_OK;
    }
    warn_unknown();
    for (int i = 0; i < MPS_CFG_COUNT; i++) {
        const char *v = getenv(table[i].name);

        if (!v || !*v || check(&table[i], v, bad ? NULL : first, sizeof(first))) {
            continue;
        }
        if (bad++ > 0 && used < sizeof(others)) {
            used += (size_t)snprintf(others + used, sizeof(others) - used, "%s%s",
                                     bad == 2 ? " (also invalid: " : ", ", table[i].name);
        }
    }
    if (bad > 0) {
        return mps_error(PGC_ERR_INVALID_ARG, "%s%s%s", first, others, bad > 1 ? ")" : "");
    }
    __atomic_store_n(&validated, true, __ATOMIC_RELEASE);
    return PGC_OK;
}

void mps_config_reset(void)
{
    for (int i = 0; i < MPS_CFG_COUNT; i++) {
        /* A value a tool wrote (mps_config_set) stands in for the environment's. */
        if (!__atomic_load_n(&written[i], __ATOMIC_ACQUIRE)) {
            __atomic_store_n(&cache[i], NULL, __ATOMIC_RELEASE);
        }
    }
    __atomic_store_n(&validated, false, __ATOMIC_RELEASE);
}

unsigned mps_test_fail_mask;

int mps_test_fail_init(void)
{
    static const char *const sites[] = {"ack", "unexpected", "ctl"};
    const char *v = mps_config_str(MPS_CFG_TEST_FAIL_ALLOC);
    unsigned mask = 0;

    while (*v) {
        size_t n = strcspn(v, ",");
        unsigned bit = 0;
        for (unsigned i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
            if (strlen(sites[i]) == n && strncmp(v, sites[i], n) == 0) {
                bit = 1u << i;
            }
        }
        if (n && !bit) {
            return mps_error(PGC_ERR_INVALID_ARG,
                             "MPISHIM_TEST_FAIL_ALLOC=%s: '%.*s' is not one of ack, unexpected, "
                             "ctl", mps_config_str(MPS_CFG_TEST_FAIL_ALLOC), (int)n, v);
        }
        mask |= bit;
        v += n + (v[n] == ',');
    }
    mps_test_fail_mask = mask;
    return PGC_OK;
}
