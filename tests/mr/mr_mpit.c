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
 *   - categories cover every variable once; bad handles and indices give their errors.
 * Arguments NAME=VALUE go to the environment first; --fabric says that messages go
 * through a libfabric provider (MPISHIM_FABRIC_PROVIDER or MPISHIM_SHM_RING=0).
 */
#include "mrtest.h"

#include <stdbool.h>
#include <stdint.h>
#include <strings.h>

#define BIG (1 << 20)

static char big[BIG];

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
    CHECK(n >= 30 && n <= 64, "%d control variables", n);
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
        CHECK(desc_len > 10 && bind == MPI_T_BIND_NO_OBJECT && et == MPI_T_ENUM_NULL,
              "%s: desc_len %d bind %d", name, desc_len, bind);
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
 * ring, written just before. */
static void check_collectives(struct counters *c)
{
    static double in[BIG / 8], out[BIG / 8];
    double x = 1, y = 0;
    unsigned long long all = colls(c), direct = value(c, "coll_allreduce_direct");
    unsigned long long ring = value(c, "coll_allreduce_ring");

    CHECK_MPI(MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(value(c, "coll_allreduce_direct") - direct == 1 && colls(c) - all == 1,
          "direct %llu, all %llu", value(c, "coll_allreduce_direct") - direct, colls(c) - all);
    CHECK(write_cvar("MPISHIM_COLL_ALLREDUCE", "ring") == MPI_SUCCESS, "write refused");
    in[0] = 1;
    CHECK_MPI(MPI_Allreduce(in, out, BIG / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    CHECK(value(c, "coll_allreduce_ring") - ring == 1 && colls(c) - all == 2, "ring %llu, all %llu",
          value(c, "coll_allreduce_ring") - ring, colls(c) - all);
    CHECK(out[0] == y && y >= 1, "sums %g %g", out[0], y);
    CHECK(write_cvar("MPISHIM_COLL_ALLREDUCE", "auto") == MPI_SUCCESS, "write refused");
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

static void check_errors(void)
{
    MPI_T_cvar_handle h;
    int count, i;
    char buf[256];

    CHECK(MPI_T_cvar_get_info(-1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
              MPI_T_ERR_INVALID_INDEX,
          "index -1");
    CHECK(MPI_T_cvar_get_index("MPISHIM_NO_SUCH", &i) == MPI_T_ERR_INVALID_NAME, "name");
    CHECK_MPI(MPI_T_cvar_handle_alloc(cvar_index("MPISHIM_TIMEOUT"), NULL, &h, &count));
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
    CHECK(MPI_T_cvar_read(h, buf) == MPI_T_ERR_INVALID_HANDLE, "freed handle read");
    CHECK(write_cvar("MPISHIM_COLL_ALLREDUCE", "bogus") == MPI_T_ERR_INVALID, "bad value");
    CHECK(write_cvar("MPISHIM_EAGER_MAX", &(unsigned long long){4096}) == MPI_T_ERR_CVAR_SET_NEVER,
          "a setting read at init was written after it");
}

int main(int argc, char **argv)
{
    int provided, n, rank, size, off = 0;
    bool fabric = false;
    struct counters c;

    for (int i = 1; i < argc; i++) {
        if (strchr(argv[i], '=')) {
            putenv(argv[i]);
        }
        fabric |= strcmp(argv[i], "--fabric") == 0;
    }
    /* Before MPI_Init, twice, then once less: still initialised. */
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided));
    CHECK(provided == MPI_THREAD_MULTIPLE, "provided %d", provided);
    CHECK_MPI(MPI_T_finalize());
    check_cvars(false);
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
    CHECK_MPI(MPI_T_pvar_handle_free(c.s, &c.h[0]));
    CHECK_MPI(MPI_T_pvar_session_free(&c.s));
    CHECK_MPI(MPI_T_finalize());
    CHECK(MPI_T_cvar_get_num(&n) == MPI_T_ERR_NOT_INITIALIZED, "usable after its finalize");
    mrt_finish("mr_mpit");
    /* After MPI_Finalize the interface still answers. */
    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    CHECK_MPI(MPI_T_cvar_get_num(&n));
    CHECK_MPI(MPI_T_finalize());
    return 0;
}
