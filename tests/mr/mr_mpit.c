/*
 * mr_mpit - the MPI tool interface read as a tool would (mpi_shim/shim_mpit.c):
 *   - MPI_T before MPI_Init, reference counted, and again after MPI_Finalize;
 *   - every control variable enumerated: its name is an MPISHIM_* variable, and a variable
 *     set in the environment (tests/mr.list sets some) reads as that value, parsed here;
 *   - a setting written before MPI_Init takes effect (MPISHIM_COLL_SHM=0: the small
 *     allreduce runs the direct algorithm), one read at init refuses a later write, and a
 *     collective algorithm written after init is the one the next allreduce runs;
 *   - message counters before and after a known exchange: rank 0 sends one 100-byte eager
 *     message and one 1 MiB rendezvous message to rank 1, and its counters of the transport
 *     in use grow by exactly 2 messages and 100 + 1 MiB bytes;
 *   - categories cover every variable once; bad handles and indices give their errors;
 *   - every setting with a fixed set of choices is an MPI_INT with an enumeration whose name,
 *     items, values and item names are those of the table in common/mps_config.h (expanded
 *     here from the table's macro, not asked of the library); the others have none;
 *   - MPI-3.1's error cases: every call before MPI_T_init_thread is
 *     MPI_T_ERR_NOT_INITIALIZED, indices and handles out of range or stale are refused;
 *   - the MPI-4.0 events: none (0 event types, 1 time source, errors for any index or handle).
 * Arguments NAME=VALUE go to the environment first; --fabric says that messages go
 * through a libfabric provider (MPISHIM_FABRIC_PROVIDER or MPISHIM_SHM_RING=0). --pgc runs
 * no MPI: a pgc world instead, while which a setting read at init is
 * MPI_T_ERR_CVAR_SET_NOT_NOW, and writable again once the world is destroyed.
 */
#include "mrtest.h"

#include "mps_config.h"

#include <limits.h>
#include <pgc.h>
#include <stdbool.h>
#include <stdint.h>
#include <strings.h>

#define BIG (1 << 20)

static char big[BIG];

/* The settings as common/mps_config.h declares them, in its order. */
struct setting {
    const char *name;
    bool is_enum;
    const char *const *choices;
};
#define SETTING(id, name, type, def, choices, doc) {name, MPS_CFG_##type == MPS_CFG_ENUM, choices},
static const struct setting table[] = {MPS_CONFIG_LIST(SETTING)};
#undef SETTING
#define NUM_SETTINGS ((int)(sizeof(table) / sizeof(table[0])))

/* Whether setting i takes one of a fixed set of names (no choice is a prefix like tcp://). */
static bool fixed_choices(int i)
{
    if (!table[i].is_enum) {
        return false;
    }
    for (const char *const *c = table[i].choices; *c; c++) {
        if (strstr(*c, "://")) {
            return false;
        }
    }
    return true;
}

static int table_index(const char *name)
{
    for (int i = 0; i < NUM_SETTINGS; i++) {
        if (strcmp(table[i].name, name) == 0) {
            return i;
        }
    }
    CHECK(0, "%s is not in the table", name);
    return -1;
}

/* The position of choice v (any case) among setting i's. */
static int choice_of(int i, const char *v)
{
    for (int k = 0; table[i].choices[k]; k++) {
        if (strcasecmp(table[i].choices[k], v) == 0) {
            return k;
        }
    }
    CHECK(0, "%s is no choice of %s", v, table[i].name);
    return -1;
}

/* The value of a size in the environment's syntax (32k), parsed independently. */
static unsigned long long parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);

    switch (*end) {
    case 'k':
    case 'K':
        return v << 10;
    case 'm':
    case 'M':
        return v << 20;
    case 'g':
    case 'G':
        return v << 30;
    default:
        return v;
    }
}

static int cvar_index(const char *name)
{
    int i = -1;

    CHECK_MPI(MPI_T_cvar_get_index(name, &i));
    return i;
}

/* Reads control variable i (a string when its type is MPI_CHAR). */
static MPI_Datatype read_cvar(int i, void *buf)
{
    MPI_T_cvar_handle h;
    MPI_Datatype dt;
    int count = 0;

    CHECK_MPI(MPI_T_cvar_get_info(i, NULL, NULL, NULL, &dt, NULL, NULL, NULL, NULL, NULL));
    CHECK_MPI(MPI_T_cvar_handle_alloc(i, NULL, &h, &count));
    CHECK(count == (dt == MPI_CHAR ? 256 : 1), "count %d", count);
    CHECK_MPI(MPI_T_cvar_read(h, buf));
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    CHECK(h == MPI_T_CVAR_HANDLE_NULL, "handle not cleared");
    return dt;
}

static int write_cvar(const char *name, const void *buf)
{
    MPI_T_cvar_handle h;
    int count, rc;

    CHECK_MPI(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count));
    rc = MPI_T_cvar_write(h, buf);
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    return rc;
}

/* Every control variable: an MPISHIM_* name, once, whose value matches the environment. */
static void check_cvars(bool started)
{
    int n = 0, matched = 0, set = 0;
    char names[64][64];

    CHECK_MPI(MPI_T_cvar_get_num(&n));
    CHECK(n == NUM_SETTINGS && n <= 64, "%d control variables, the table has %d", n, NUM_SETTINGS);
    for (int i = 0; i < n; i++) {
        char name[64], desc[512], val[256];
        int name_len = sizeof(name), desc_len = sizeof(desc), scope, bind, verb;
        MPI_Datatype dt;
        MPI_T_enum et;
        const char *env;

        CHECK_MPI(MPI_T_cvar_get_info(i, name, &name_len, &verb, &dt, &et, desc, &desc_len, &bind,
                                      &scope));
        CHECK(strncmp(name, "MPISHIM_", 8) == 0 && name_len == (int)strlen(name) + 1,
              "cvar %d is %s (len %d)", i, name, name_len);
        CHECK(desc_len > 10 && bind == MPI_T_BIND_NO_OBJECT, "%s: desc_len %d bind %d", name,
              desc_len, bind);
        CHECK(strcmp(table[i].name, name) == 0, "cvar %d is %s, the table's %s", i, name,
              table[i].name);
        for (int j = 0; j < i; j++) {
            CHECK(strcmp(names[j], name) != 0, "%s listed twice", name);
        }
        snprintf(names[i], sizeof(names[i]), "%s", name);
        CHECK(cvar_index(name) == i, "%s: index", name);
        CHECK(read_cvar(i, val) == dt, "%s: type", name);
        if (started && strcmp(name, "MPISHIM_EAGER_MAX") == 0) {
            CHECK(scope == MPI_T_SCOPE_READONLY, "%s: scope %d after init", name, scope);
        }
        if (!started) {
            CHECK(scope != MPI_T_SCOPE_READONLY, "%s: read-only before init", name);
        }
        env = getenv(name);
        if (!env || !*env || strcmp(name, "MPISHIM_COLL_SHM") == 0) {
            continue;
        }
        set++;
        if (dt == MPI_UNSIGNED_LONG_LONG) {
            matched += *(unsigned long long *)val == parse_size(env);
        } else if (dt == MPI_INT && et != MPI_T_ENUM_NULL) {
            matched += *(int *)val == choice_of(i, env);
        } else if (dt == MPI_INT) {
            matched += *(int *)val == atoi(env);
        } else if (dt == MPI_DOUBLE) {
            matched += *(double *)val == strtod(env, NULL);
        } else {
            CHECK(dt == MPI_CHAR, "%s: type %x", name, (unsigned)dt);
            matched += strcasecmp(val, env) == 0;
        }
        CHECK(matched == set, "%s=%s reads otherwise", name, env);
    }
    /* tests/mr.list starts this program with some variables set; MPISHIM_TIMEOUT always. */
    CHECK(set >= 1, "no MPISHIM_ variable set in the environment");
}

struct counters {
    MPI_T_pvar_session s;
    int n;
    MPI_T_pvar_handle h[64];
    char name[64][64];
};

static void open_counters(struct counters *c)
{
    CHECK_MPI(MPI_T_pvar_session_create(&c->s));
    CHECK_MPI(MPI_T_pvar_get_num(&c->n));
    CHECK(c->n > 6 && c->n <= 64, "%d performance variables", c->n);
    for (int i = 0; i < c->n; i++) {
        int len = sizeof(c->name[i]), cls, ro, cont, atomic, count;
        MPI_Datatype dt;

        CHECK_MPI(MPI_T_pvar_get_info(i, c->name[i], &len, NULL, &cls, &dt, NULL, NULL, NULL, NULL,
                                      &ro, &cont, &atomic));
        CHECK(dt == MPI_UNSIGNED_LONG_LONG && cont == 1, "%s", c->name[i]);
        CHECK(ro == (cls != MPI_T_PVAR_CLASS_COUNTER), "%s: readonly %d", c->name[i], ro);
        CHECK_MPI(MPI_T_pvar_handle_alloc(c->s, i, NULL, &c->h[i], &count));
        CHECK(count == 1, "count %d", count);
    }
}

static unsigned long long value(struct counters *c, const char *name)
{
    unsigned long long v = 0;

    for (int i = 0; i < c->n; i++) {
        if (strcmp(c->name[i], name) == 0) {
            CHECK_MPI(MPI_T_pvar_read(c->s, c->h[i], &v));
            return v;
        }
    }
    CHECK(0, "no performance variable %s", name);
    return 0;
}

/* The sum of the collective-algorithm counters. */
static unsigned long long colls(struct counters *c)
{
    unsigned long long sum = 0;

    for (int i = 0; i < c->n; i++) {
        if (strncmp(c->name[i], "coll_", 5) == 0) {
            sum += value(c, c->name[i]);
        }
    }
    return sum;
}

static void check_exchange(struct counters *c, int rank, int size, bool fabric)
{
    const char *msgs = fabric ? "fabric_msgs_sent" : "shm_msgs_sent";
    const char *bytes = fabric ? "fabric_bytes_sent" : "shm_bytes_sent";
    const char *other = fabric ? "shm_msgs_sent" : "fabric_msgs_sent";
    unsigned long long m0, b0, o0;
    char small[100] = {1};

    if (size < 2) {
        return;
    }
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    m0 = value(c, msgs);
    b0 = value(c, bytes);
    o0 = value(c, other);
    if (rank == 0) {
        CHECK_MPI(MPI_Send(small, 100, MPI_CHAR, 1, 7, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Send(big, BIG, MPI_CHAR, 1, 8, MPI_COMM_WORLD));
        CHECK(value(c, msgs) - m0 == 2, "%s grew by %llu, not 2", msgs, value(c, msgs) - m0);
        CHECK(value(c, bytes) - b0 == 100 + BIG, "%s grew by %llu, not %d", bytes,
              value(c, bytes) - b0, 100 + BIG);
        CHECK(value(c, other) == o0, "%s grew", other);
    } else if (rank == 1) {
        CHECK_MPI(MPI_Recv(small, 100, MPI_CHAR, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Recv(big, BIG, MPI_CHAR, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(small[0] == 1, "payload");
        CHECK(value(c, msgs) == m0 && value(c, bytes) == b0, "a receiver counted a send");
    }
}

/* 8 bytes ran the direct algorithm (MPISHIM_COLL_SHM=0 written before init); 1 MiB the
 * ring, written just before (as its item of MPISHIM_COLL_ALLREDUCE's enumeration). */
static void check_collectives(struct counters *c)
{
    static double in[BIG / 8], out[BIG / 8];
    double x = 1, y = 0;
    unsigned long long all = colls(c), direct = value(c, "coll_allreduce_direct");
    unsigned long long ring = value(c, "coll_allreduce_ring");
    int algo = table_index("MPISHIM_COLL_ALLREDUCE"), ring_item = choice_of(algo, "ring"), now;

    CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(value(c, "coll_allreduce_direct") - direct == 1 && colls(c) - all == 1,
          "direct %llu, all %llu", value(c, "coll_allreduce_direct") - direct, colls(c) - all);
    /* The algorithm is an enumeration item: its position in the table. */
    CHECK(write_cvar("MPISHIM_COLL_ALLREDUCE", &ring_item) == MPI_SUCCESS, "write refused");
    read_cvar(algo, &now);
    CHECK(now == ring_item, "wrote item %d, read %d", ring_item, now);
    in[0] = 1;
    CHECK_MPI(MPI_Allreduce(in, out, BIG / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(value(c, "coll_allreduce_ring") - ring == 1 && colls(c) - all == 2, "ring %llu, all %llu",
          value(c, "coll_allreduce_ring") - ring, colls(c) - all);
    CHECK(out[0] == y && y >= 1, "sums %g %g", out[0], y);
    CHECK(write_cvar("MPISHIM_COLL_ALLREDUCE", &(int){choice_of(algo, "auto")}) == MPI_SUCCESS,
          "write refused");
}

/* Reset, write and read-only refusals on handle 0 (a counter) and the level. */
static void check_handles(struct counters *c)
{
    unsigned long long v = 5;
    int level = -1;

    CHECK_MPI(MPI_T_pvar_get_index("unexpected_queue_length", MPI_T_PVAR_CLASS_LEVEL, &level));
    CHECK_MPI(MPI_T_pvar_read(c->s, c->h[level], &v));
    CHECK(MPI_T_pvar_reset(c->s, c->h[level]) == MPI_T_ERR_PVAR_NO_WRITE, "level reset");
    CHECK(MPI_T_pvar_start(c->s, c->h[0]) == MPI_T_ERR_PVAR_NO_STARTSTOP, "start continuous");
    CHECK_MPI(MPI_T_pvar_start(c->s, MPI_T_PVAR_ALL_HANDLES));
    v = 5;
    CHECK_MPI(MPI_T_pvar_write(c->s, c->h[0], &v));
    CHECK_MPI(MPI_T_pvar_readreset(c->s, c->h[0], &v));
    CHECK(v == 5, "written 5, read %llu", v);
    CHECK_MPI(MPI_T_pvar_read(c->s, c->h[0], &v));
    CHECK(v == 0, "reset, read %llu", v);
    CHECK(MPI_T_pvar_read(c->s, MPI_T_PVAR_HANDLE_NULL, &v) == MPI_T_ERR_INVALID_HANDLE, "null");
    CHECK(MPI_T_pvar_get_index("shm_msgs_sent", MPI_T_PVAR_CLASS_LEVEL, &level) ==
              MPI_T_ERR_INVALID_NAME,
          "wrong class found");
}

/* Every variable is in exactly one category. */
static void check_categories(void)
{
    int ncat, ncv, npv, seen_c[64] = {0}, seen_p[64] = {0}, idx[64];

    CHECK_MPI(MPI_T_category_get_num(&ncat));
    CHECK_MPI(MPI_T_cvar_get_num(&ncv));
    CHECK_MPI(MPI_T_pvar_get_num(&npv));
    for (int k = 0; k < ncat; k++) {
        char name[64];
        int len = sizeof(name), nc, np, nsub, at = -1;

        CHECK_MPI(MPI_T_category_get_info(k, name, &len, NULL, NULL, &nc, &np, &nsub));
        CHECK_MPI(MPI_T_category_get_index(name, &at));
        CHECK(at == k && nsub == 0, "%s", name);
        CHECK_MPI(MPI_T_category_get_cvars(k, 64, idx));
        for (int j = 0; j < nc; j++) {
            seen_c[idx[j]]++;
        }
        CHECK_MPI(MPI_T_category_get_pvars(k, 64, idx));
        for (int j = 0; j < np; j++) {
            seen_p[idx[j]]++;
        }
    }
    for (int i = 0; i < ncv; i++) {
        CHECK(seen_c[i] == 1, "cvar %d in %d categories", i, seen_c[i]);
    }
    for (int i = 0; i < npv; i++) {
        CHECK(seen_p[i] == 1, "pvar %d in %d categories", i, seen_p[i]);
    }
}

/* Each setting with fixed choices has an enumeration that is the table's list; no other
 * variable has one, and what is not an enumeration is refused as one. */
static void check_enums(void)
{
    int enums = 0, expected = 0, num = -1, len, value;
    char name[64], item[64];

    for (int i = 0; i < NUM_SETTINGS; i++) {
        MPI_Datatype dt;
        MPI_T_enum et;
        int n = 0;

        CHECK_MPI(MPI_T_cvar_get_info(i, NULL, NULL, NULL, &dt, &et, NULL, NULL, NULL, NULL));
        if (!fixed_choices(i)) {
            CHECK(et == MPI_T_ENUM_NULL, "%s has an enumeration", table[i].name);
            CHECK(!table[i].is_enum || dt == MPI_CHAR, "%s (prefix choices) is no string",
                  table[i].name);
            continue;
        }
        expected++;
        CHECK(dt == MPI_INT && et != MPI_T_ENUM_NULL, "%s: type %x, no enumeration", table[i].name,
              (unsigned)dt);
        while (table[i].choices[n]) {
            n++;
        }
        len = sizeof(name);
        CHECK_MPI(MPI_T_enum_get_info(et, &num, name, &len));
        CHECK(num == n && strcmp(name, table[i].name) == 0 && len == (int)strlen(name) + 1,
              "%s: enumeration %s of %d items (len %d), expected %d", table[i].name, name, num, len,
              n);
        for (int k = 0; k < n; k++) {
            len = sizeof(item);
            value = -1;
            CHECK_MPI(MPI_T_enum_get_item(et, k, &value, item, &len));
            CHECK(value == k && strcmp(item, table[i].choices[k]) == 0 &&
                      len == (int)strlen(item) + 1,
                  "%s item %d: %d %s, expected %s", table[i].name, k, value, item,
                  table[i].choices[k]);
        }
        /* A length of 0: only the length needed (MPI-3.1 14.3.3). */
        len = 0;
        CHECK_MPI(MPI_T_enum_get_item(et, n - 1, &value, NULL, &len));
        CHECK(len == (int)strlen(table[i].choices[n - 1]) + 1, "length %d", len);
        CHECK(MPI_T_enum_get_item(et, n, &value, item, &len) == MPI_T_ERR_INVALID_INDEX,
              "%s: item %d of %d", table[i].name, n, n);
        CHECK(MPI_T_enum_get_item(et, -1, &value, item, &len) == MPI_T_ERR_INVALID_INDEX,
              "%s: item -1", table[i].name);
        enums++;
    }
    /* LOG_LEVEL, DEVICE_COLL, the three algorithms and PGC_DEBUG at least. */
    CHECK(enums == expected && expected >= 6, "%d enumerations, %d expected", enums, expected);
    CHECK(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &num, NULL, NULL) == MPI_T_ERR_INVALID_HANDLE,
          "MPI_T_ENUM_NULL");
    CHECK(MPI_T_enum_get_info((MPI_T_enum)(void *)name, &num, NULL, NULL) ==
              MPI_T_ERR_INVALID_HANDLE,
          "a pointer to a local array");
    CHECK(MPI_T_enum_get_item(MPI_T_ENUM_NULL, 0, &value, NULL, NULL) == MPI_T_ERR_INVALID_HANDLE,
          "item of MPI_T_ENUM_NULL");
}

/* MPI-3.1 14.3.4: before MPI_T_init_thread every call but it is MPI_T_ERR_NOT_INITIALIZED
 * (MPI-4.0's event calls too). */
static void check_not_initialized(void)
{
    const int e = MPI_T_ERR_NOT_INITIALIZED;
    MPI_T_pvar_session s;
    MPI_T_cvar_handle h;
    MPI_Count ts;
    int n, i;

    CHECK(MPI_T_finalize() == e, "finalize");
    CHECK(MPI_T_cvar_get_num(&n) == e, "cvar_get_num");
    CHECK(MPI_T_cvar_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) == e,
          "cvar_get_info");
    CHECK(MPI_T_cvar_get_index("MPISHIM_TIMEOUT", &i) == e, "cvar_get_index");
    CHECK(MPI_T_cvar_handle_alloc(0, NULL, &h, &n) == e, "cvar_handle_alloc");
    CHECK(MPI_T_pvar_get_num(&n) == e, "pvar_get_num");
    CHECK(MPI_T_pvar_session_create(&s) == e, "pvar_session_create");
    CHECK(MPI_T_category_get_num(&n) == e, "category_get_num");
    CHECK(MPI_T_category_changed(&n) == e, "category_changed");
    CHECK(MPI_T_enum_get_info(MPI_T_ENUM_NULL, &n, NULL, NULL) == e, "enum_get_info");
    CHECK(MPI_T_event_get_num(&n) == e, "event_get_num");
    CHECK(MPI_T_source_get_num(&n) == e, "source_get_num");
    CHECK(MPI_T_source_get_timestamp(0, &ts) == e, "source_get_timestamp");
    CHECK(MPI_T_event_read(NULL, 0, &n) == e, "event_read");
    CHECK(MPI_T_pvar_read(NULL, NULL, NULL) == e, "pvar_read");
    CHECK(MPI_T_pvar_write(NULL, NULL, NULL) == e, "pvar_write");
    CHECK(MPI_T_init_thread(MPI_THREAD_MULTIPLE + 1, &n) == MPI_T_ERR_INVALID, "bad level");
    CHECK(MPI_T_cvar_get_num(&n) == e, "initialised by a refused init");
}

/* MPI-4.0 15.3.8: no event type, one source, and every index or handle refused. */
static void check_events(void)
{
    int n = -1, ncat, i, len;
    char name[64];
    MPI_T_source_order order;
    MPI_Count tps = 0, max = 0, t0 = -1, t1 = -1;
    MPI_Info info = MPI_INFO_ENV;
    MPI_T_event_registration reg = NULL;

    CHECK_MPI(MPI_T_event_get_num(&n));
    CHECK(n == 0, "%d event types", n);
    CHECK(MPI_T_event_get_info(0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                               NULL) == MPI_T_ERR_INVALID_INDEX,
          "event 0");
    CHECK(MPI_T_event_get_index("mpishim_any", &i) == MPI_T_ERR_INVALID_NAME, "event name");
    CHECK(MPI_T_event_handle_alloc(0, NULL, MPI_INFO_NULL, &reg) == MPI_T_ERR_INVALID_INDEX,
          "handle_alloc 0");
    CHECK(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_NONE, MPI_INFO_NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_HANDLE,
          "register_callback");
    CHECK(MPI_T_event_handle_free(reg, NULL, NULL) == MPI_T_ERR_INVALID_HANDLE, "handle_free");
    CHECK(MPI_T_event_set_dropped_handler(reg, NULL) == MPI_T_ERR_INVALID_HANDLE, "dropped");
    CHECK(MPI_T_event_read(NULL, 0, &n) == MPI_T_ERR_INVALID_HANDLE, "read");
    CHECK(MPI_T_event_copy(NULL, &n) == MPI_T_ERR_INVALID_HANDLE, "copy");
    CHECK(MPI_T_event_get_timestamp(NULL, &t0) == MPI_T_ERR_INVALID_HANDLE, "timestamp");
    CHECK(MPI_T_event_get_source(NULL, &i) == MPI_T_ERR_INVALID_HANDLE, "source");
    CHECK_MPI(MPI_T_source_get_num(&n));
    CHECK(n == 1, "%d sources", n);
    len = sizeof(name);
    CHECK_MPI(MPI_T_source_get_info(0, name, &len, NULL, NULL, &order, &tps, &max, &info));
    CHECK(len == (int)strlen(name) + 1 && len > 1 && order == MPI_T_SOURCE_ORDERED &&
              tps == 1000000000 && max == LLONG_MAX && info == MPI_INFO_NULL,
          "source %s: order %d, %lld ticks/s, max %lld", name, (int)order, tps, max);
    CHECK_MPI(MPI_T_source_get_timestamp(0, &t0));
    CHECK_MPI(MPI_T_source_get_timestamp(0, &t1));
    CHECK(t0 > 0 && t1 >= t0, "ordered source went from %lld to %lld", t0, t1);
    CHECK(MPI_T_source_get_info(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX,
          "source 1");
    CHECK(MPI_T_source_get_timestamp(-1, &t0) == MPI_T_ERR_INVALID_INDEX, "source -1");
    CHECK_MPI(MPI_T_category_get_num(&ncat));
    for (int k = 0; k < ncat; k++) {
        n = -1;
        CHECK_MPI(MPI_T_category_get_num_events(k, &n));
        CHECK(n == 0, "category %d has %d events", k, n);
        CHECK_MPI(MPI_T_category_get_events(k, 0, NULL));
    }
    CHECK(MPI_T_category_get_num_events(ncat, &n) == MPI_T_ERR_INVALID_INDEX, "category");
}

/* MPI-3.1 14.3: indices out of range, unknown names, stale handles, values refused. */
static void check_errors(void)
{
    MPI_T_cvar_handle h;
    MPI_T_pvar_session s, dead;
    MPI_T_pvar_handle ph;
    int count, i, ncv, npv, ncat, idx[4];
    char buf[256];

    CHECK_MPI(MPI_T_cvar_get_num(&ncv));
    CHECK_MPI(MPI_T_pvar_get_num(&npv));
    CHECK_MPI(MPI_T_category_get_num(&ncat));
    CHECK(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX,
          "index -1");
    CHECK(MPI_T_cvar_get_info(ncv, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX,
          "cvar index %d", ncv);
    CHECK(MPI_T_cvar_handle_alloc(ncv, NULL, &h, &count) == MPI_T_ERR_INVALID_INDEX, "alloc");
    CHECK(MPI_T_pvar_get_info(npv, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                              NULL) == MPI_T_ERR_INVALID_INDEX,
          "pvar index %d", npv);
    CHECK(MPI_T_category_get_info(ncat, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX,
          "category index %d", ncat);
    CHECK(MPI_T_category_get_cvars(-1, 4, idx) == MPI_T_ERR_INVALID_INDEX, "category -1");
    CHECK(MPI_T_category_get_index("mpishim_none", &i) == MPI_T_ERR_INVALID_NAME, "category");
    CHECK_MPI(MPI_T_pvar_session_create(&s));
    CHECK(MPI_T_pvar_handle_alloc(s, npv, NULL, &ph, &count) == MPI_T_ERR_INVALID_INDEX,
          "pvar alloc %d", npv);
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, 0, NULL, &ph, &count));
    CHECK_MPI(MPI_T_pvar_session_create(&dead));
    CHECK(MPI_T_pvar_read(dead, ph, buf) == MPI_T_ERR_INVALID_HANDLE, "another session's");
    CHECK_MPI(MPI_T_pvar_session_free(&dead));
    CHECK(dead == MPI_T_PVAR_SESSION_NULL, "session not cleared");
    CHECK(MPI_T_pvar_read(dead, ph, buf) == MPI_T_ERR_INVALID_SESSION, "freed session");
    CHECK_MPI(MPI_T_pvar_session_free(&s));
    CHECK(MPI_T_pvar_handle_free(s, &ph) == MPI_T_ERR_INVALID_SESSION, "handle of a freed one");
    CHECK(MPI_T_cvar_write(MPI_T_CVAR_HANDLE_NULL, buf) == MPI_T_ERR_INVALID_HANDLE, "null");
    CHECK(MPI_T_cvar_get_index("MPISHIM_NO_SUCH", &i) == MPI_T_ERR_INVALID_NAME, "name");
    CHECK_MPI(MPI_T_cvar_handle_alloc(cvar_index("MPISHIM_TIMEOUT"), NULL, &h, &count));
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    CHECK(MPI_T_cvar_read(h, buf) == MPI_T_ERR_INVALID_HANDLE, "freed handle read");
    CHECK(write_cvar("MPISHIM_COLL_ALLREDUCE", &(int){-1}) == MPI_T_ERR_INVALID, "item -1");
    CHECK(write_cvar("MPISHIM_COLL_ALLREDUCE", &(int){99}) == MPI_T_ERR_INVALID, "item 99");
    CHECK(write_cvar("MPISHIM_EAGER_MAX", &(unsigned long long){4096}) == MPI_T_ERR_CVAR_SET_NEVER,
          "a setting read at init was written after it");
}

/* The scope control variable name reports now. */
static int scope_of(const char *name)
{
    int scope = -1;

    CHECK_MPI(MPI_T_cvar_get_info(cvar_index(name), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                  &scope));
    return scope;
}

/* --pgc: no MPI. While a pgc world runs, a setting it read at init cannot be set now
 * (MPI_T_ERR_CVAR_SET_NOT_NOW: destroying the world makes it writable, and the next world
 * reads it); MPISHIM_LOG_LEVEL, read at each use, stays writable. */
static int run_pgc(void)
{
    pgc_init_opts o = PGC_INIT_OPTS_DEFAULT;
    unsigned long long eager = 8192, now = 0;
    int provided, level = table_index("MPISHIM_LOG_LEVEL"), item = -1;

    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK(scope_of("MPISHIM_EAGER_MAX") == MPI_T_SCOPE_LOCAL, "read-only before the world");
    CHECK(pgc_init_process_group(&o) == PGC_OK, "pgc_init_process_group: %s", pgc_last_error());
    mrt_rank = pgc_get_rank();
    CHECK(scope_of("MPISHIM_EAGER_MAX") == MPI_T_SCOPE_READONLY, "writable in a pgc world");
    CHECK(write_cvar("MPISHIM_EAGER_MAX", &eager) == MPI_T_ERR_CVAR_SET_NOT_NOW,
          "a setting read by the running pgc world was not refused for now");
    read_cvar(level, &item);
    CHECK(write_cvar("MPISHIM_LOG_LEVEL", &item) == MPI_SUCCESS, "log level refused");
    CHECK(pgc_barrier(NULL, 0, NULL) == PGC_OK, "barrier: %s", pgc_last_error());
    CHECK(pgc_destroy_process_group() == PGC_OK, "destroy: %s", pgc_last_error());
    CHECK(scope_of("MPISHIM_EAGER_MAX") == MPI_T_SCOPE_LOCAL, "read-only after the world");
    CHECK(write_cvar("MPISHIM_EAGER_MAX", &eager) == MPI_SUCCESS, "refused after the world");
    read_cvar(cvar_index("MPISHIM_EAGER_MAX"), &now);
    CHECK(now == eager, "wrote %llu, read %llu", eager, now);
    CHECK_MPI(MPI_T_finalize());
    if (mrt_rank == 0) {
        printf("mr_mpit --pgc: %d checks passed on rank 0\n", mrt_checks);
    }
    return 0;
}

int main(int argc, char **argv)
{
    int provided, n, rank, size, off = 0;
    bool fabric = false, pgc = false;
    struct counters c;

    for (int i = 1; i < argc; i++) {
        if (strchr(argv[i], '=')) {
            putenv(argv[i]);
        }
        fabric |= strcmp(argv[i], "--fabric") == 0;
        pgc |= strcmp(argv[i], "--pgc") == 0;
    }
    check_not_initialized();
    if (pgc) {
        return run_pgc();
    }
    /* Before MPI_Init, twice, then once less: still initialised. */
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    CHECK_MPI(MPI_T_finalize());
    check_cvars(false);
    check_enums();
    check_events();
    CHECK(write_cvar("MPISHIM_COLL_SHM", &off) == MPI_SUCCESS, "pre-init write refused");
    mrt_init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_cvars(true);
    open_counters(&c);
    check_exchange(&c, rank, size, fabric);
    check_collectives(&c);
    check_handles(&c);
    check_categories();
    check_errors();
    check_enums();
    CHECK_MPI(MPI_T_pvar_handle_free(c.s, &c.h[0]));
    CHECK_MPI(MPI_T_pvar_session_free(&c.s));
    CHECK_MPI(MPI_T_finalize());
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "usable after its finalize");
    mrt_finish("mr_mpit");
    /* After MPI_Finalize the interface still answers. */
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_cvar_get_num(&n));
    CHECK(write_cvar("MPISHIM_EAGER_MAX", &(unsigned long long){4096}) == MPI_T_ERR_CVAR_SET_NEVER,
          "a setting MPI read was writable after MPI_Finalize");
    CHECK_MPI(MPI_T_finalize());
    return 0;
}
