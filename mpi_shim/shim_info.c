/*
 * shim_info.c - MPI_Info objects: ordered lists of (key, value) strings.
 *
 * Info objects are rare and small, so a table of pointers behind one lock serves them; every
 * call holds the lock for its whole duration, which also makes them thread safe. Handles are
 * MPISHIM_HANDLE_MAKE(MPISHIM_KIND_INDIRECT, MPISHIM_OBJ_INFO, slot). MPI_INFO_ENV is a
 * predefined, empty and read-only object. Keys keep the order in which they were first set
 * (MPI_Info_get_nthkey). These calls work before MPI_Init too, as MPI-4 allows.
 */
#include "config.h"

#include "mps_log.h"
#include "shim.h"
#include "shim_datatype.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct info_entry {
    char *key;
    char *val;
};

struct shim_info {
    struct info_entry *e;
    int n, cap;
};

static struct shim_info **infos;
static int ninfos;
static struct shim_info info_env;
static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;

/* The object of handle h, or NULL. Call with info_lock held. */
static struct shim_info *info_of(MPI_Info h)
{
    int idx = MPISHIM_HANDLE_INDEX(h);
    if (h == MPI_INFO_ENV) {
        return &info_env;
    }
    if (MPISHIM_HANDLE_KIND(h) != MPISHIM_KIND_INDIRECT ||
        MPISHIM_HANDLE_OBJ(h) != MPISHIM_OBJ_INFO || idx >= ninfos) {
        return NULL;
    }
    return infos[idx];
}

/* Stores a new object in a free slot and returns its handle, or MPI_INFO_NULL when out of
 * memory. Call with info_lock held. */
static MPI_Info info_publish(struct shim_info *in)
{
    int idx = 0;
    while (idx < ninfos && infos[idx]) {
        idx++;
    }
    if (idx == ninfos) {
        int n = ninfos ? 2 * ninfos : 16;
        struct shim_info **grown = realloc(infos, (size_t)n * sizeof(*grown));
        if (!grown) {
            return MPI_INFO_NULL;
        }
        memset(grown + ninfos, 0, (size_t)(n - ninfos) * sizeof(*grown));
        infos = grown;
        ninfos = n;
    }
    infos[idx] = in;
    return MPISHIM_HANDLE_MAKE(MPISHIM_KIND_INDIRECT, MPISHIM_OBJ_INFO, idx);
}

static void info_destroy(struct shim_info *in)
{
    for (int i = 0; i < in->n; i++) {
        free(in->e[i].key);
        free(in->e[i].val);
    }
    free(in->e);
    free(in);
}

static int find_key(const struct shim_info *in, const char *key)
{
    for (int i = 0; i < in->n; i++) {
        if (strcmp(in->e[i].key, key) == 0) {
            return i;
        }
    }
    return -1;
}

/* Sets key to val (copies both). Returns MPI_SUCCESS or MPI_ERR_OTHER (out of memory), and
 * then leaves the object as it was. */
static int info_put(struct shim_info *in, const char *key, const char *val)
{
    int i = find_key(in, key);
    char *v = strdup(val);
    if (!v) {
        return MPI_ERR_OTHER;
    }
    if (i >= 0) {
        free(in->e[i].val);
        in->e[i].val = v;
        return MPI_SUCCESS;
    }
    if (in->n == in->cap) {
        int cap = in->cap ? 2 * in->cap : 8;
        struct info_entry *e = realloc(in->e, (size_t)cap * sizeof(*e));
        if (!e) {
            free(v);
            return MPI_ERR_OTHER;
        }
        in->e = e;
        in->cap = cap;
    }
    in->e[in->n].key = strdup(key);
    if (!in->e[in->n].key) {
        free(v);
        return MPI_ERR_OTHER;
    }
    in->e[in->n++].val = v;
    return MPI_SUCCESS;
}

/* Checks a key argument: not NULL, 1 to MPI_MAX_INFO_KEY characters. */
static int check_key(const char *fn, const char *key)
{
    size_t n = key ? strnlen(key, MPI_MAX_INFO_KEY + 1) : 0;
    if (!key || n == 0 || n > MPI_MAX_INFO_KEY) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_INFO_KEY,
                          "key is NULL, empty or longer than MPI_MAX_INFO_KEY (%d)",
                          MPI_MAX_INFO_KEY);
    }
    return MPI_SUCCESS;
}

/* Looks up an info argument with info_lock held; on failure unlocks and raises. */
static int lock_info(const char *fn, MPI_Info h, struct shim_info **in)
{
    pthread_mutex_lock(&info_lock);
    *in = info_of(h);
    if (!*in) {
        pthread_mutex_unlock(&info_lock);
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_INFO, "info 0x%x is invalid or freed",
                          (unsigned int)h);
    }
    return MPI_SUCCESS;
}

/* Unlocks and raises errclass with a message, or returns MPI_SUCCESS. */
static int unlock_ret(const char *fn, int errclass, const char *what)
{
    pthread_mutex_unlock(&info_lock);
    if (errclass == MPI_SUCCESS) {
        return MPI_SUCCESS;
    }
    return shim_error(MPI_COMM_WORLD, fn, errclass, "%s", what);
}

#pragma weak MPI_Info_create = PMPI_Info_create
int PMPI_Info_create(MPI_Info *info)
{
    struct shim_info *in;
    if (!info) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "info is NULL");
    }
    in = calloc(1, sizeof(*in));
    pthread_mutex_lock(&info_lock);
    *info = in ? info_publish(in) : MPI_INFO_NULL;
    if (*info == MPI_INFO_NULL) {
        free(in);
        return unlock_ret(SHIM_FN, MPI_ERR_OTHER, "out of memory");
    }
    return unlock_ret(SHIM_FN, MPI_SUCCESS, NULL);
}

#pragma weak MPI_Info_set = PMPI_Info_set
int PMPI_Info_set(MPI_Info info, const char *key, const char *value)
{
    struct shim_info *in;
    int rc = check_key(SHIM_FN, key);
    if (rc == MPI_SUCCESS && (!value || strnlen(value, MPI_MAX_INFO_VAL + 1) > MPI_MAX_INFO_VAL)) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_INFO_VALUE,
                        "value is NULL or longer than MPI_MAX_INFO_VAL (%d)", MPI_MAX_INFO_VAL);
    }
    if (rc == MPI_SUCCESS) {
        rc = lock_info(SHIM_FN, info, &in);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (in == &info_env) {
        return unlock_ret(SHIM_FN, MPI_ERR_INFO, "MPI_INFO_ENV is read-only");
    }
    rc = info_put(in, key, value);
    return unlock_ret(SHIM_FN, rc, "out of memory");
}

#pragma weak MPI_Info_get = PMPI_Info_get
int PMPI_Info_get(MPI_Info info, const char *key, int valuelen, char *value, int *flag)
{
    struct shim_info *in;
    int rc = check_key(SHIM_FN, key);
    if (rc == MPI_SUCCESS && (valuelen < 0 || !flag || (valuelen > 0 && !value))) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG,
                        "valuelen %d < 0, or value or flag is NULL", valuelen);
    }
    if (rc == MPI_SUCCESS) {
        rc = lock_info(SHIM_FN, info, &in);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    int i = find_key(in, key);
    *flag = i >= 0;
    if (i >= 0 && value) {
        /* value holds valuelen + 1 chars (MPI-3.1 9.1); longer values are truncated. */
        size_t n = strnlen(in->e[i].val, (size_t)valuelen);
        memcpy(value, in->e[i].val, n);
        value[n] = '\0';
    }
    return unlock_ret(SHIM_FN, MPI_SUCCESS, NULL);
}

#pragma weak MPI_Info_get_valuelen = PMPI_Info_get_valuelen
int PMPI_Info_get_valuelen(MPI_Info info, const char *key, int *valuelen, int *flag)
{
    struct shim_info *in;
    int rc = check_key(SHIM_FN, key);
    if (rc == MPI_SUCCESS && (!valuelen || !flag)) {
        rc = shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "valuelen or flag is NULL");
    }
    if (rc == MPI_SUCCESS) {
        rc = lock_info(SHIM_FN, info, &in);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    int i = find_key(in, key);
    *flag = i >= 0;
    if (i >= 0) {
        *valuelen = (int)strlen(in->e[i].val);
    }
    return unlock_ret(SHIM_FN, MPI_SUCCESS, NULL);
}

#pragma weak MPI_Info_get_nkeys = PMPI_Info_get_nkeys
int PMPI_Info_get_nkeys(MPI_Info info, int *nkeys)
{
    struct shim_info *in;
    if (!nkeys) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "nkeys is NULL");
    }
    int rc = lock_info(SHIM_FN, info, &in);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    *nkeys = in->n;
    return unlock_ret(SHIM_FN, MPI_SUCCESS, NULL);
}

#pragma weak MPI_Info_get_nthkey = PMPI_Info_get_nthkey
int PMPI_Info_get_nthkey(MPI_Info info, int n, char *key)
{
    struct shim_info *in;
    if (!key) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "key is NULL");
    }
    int rc = lock_info(SHIM_FN, info, &in);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (n < 0 || n >= in->n) {
        int nkeys = in->n;
        pthread_mutex_unlock(&info_lock);
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "n = %d but the info has %d keys",
                          n, nkeys);
    }
    strcpy(key, in->e[n].key); /* key holds MPI_MAX_INFO_KEY + 1 chars; keys are no longer */
    return unlock_ret(SHIM_FN, MPI_SUCCESS, NULL);
}

#pragma weak MPI_Info_delete = PMPI_Info_delete
int PMPI_Info_delete(MPI_Info info, const char *key)
{
    struct shim_info *in;
    int rc = check_key(SHIM_FN, key);
    if (rc == MPI_SUCCESS) {
        rc = lock_info(SHIM_FN, info, &in);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    int i = find_key(in, key);
    if (i < 0 || in == &info_env) {
        pthread_mutex_unlock(&info_lock);
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_INFO_NOKEY, "key \"%s\" is not set",
                          key);
    }
    free(in->e[i].key);
    free(in->e[i].val);
    memmove(&in->e[i], &in->e[i + 1], (size_t)(in->n - i - 1) * sizeof(in->e[0]));
    in->n--;
    return unlock_ret(SHIM_FN, MPI_SUCCESS, NULL);
}

#pragma weak MPI_Info_dup = PMPI_Info_dup
int PMPI_Info_dup(MPI_Info info, MPI_Info *newinfo)
{
    struct shim_info *in, *copy;
    if (!newinfo) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "newinfo is NULL");
    }
    int rc = lock_info(SHIM_FN, info, &in);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    copy = calloc(1, sizeof(*copy));
    rc = copy ? MPI_SUCCESS : MPI_ERR_OTHER;
    for (int i = 0; i < in->n && rc == MPI_SUCCESS; i++) {
        rc = info_put(copy, in->e[i].key, in->e[i].val);
    }
    *newinfo = rc == MPI_SUCCESS ? info_publish(copy) : MPI_INFO_NULL;
    if (*newinfo == MPI_INFO_NULL && copy) {
        info_destroy(copy);
        rc = MPI_ERR_OTHER;
    }
    return unlock_ret(SHIM_FN, rc, "out of memory");
}

#pragma weak MPI_Info_free = PMPI_Info_free
int PMPI_Info_free(MPI_Info *info)
{
    struct shim_info *in;
    if (!info) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG, "info is NULL");
    }
    int rc = lock_info(SHIM_FN, *info, &in);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (in == &info_env) {
        return unlock_ret(SHIM_FN, MPI_ERR_INFO, "MPI_INFO_ENV cannot be freed");
    }
    infos[MPISHIM_HANDLE_INDEX(*info)] = NULL;
    info_destroy(in);
    *info = MPI_INFO_NULL;
    return unlock_ret(SHIM_FN, MPI_SUCCESS, NULL);
}

int shim_info_get_value(MPI_Info info, const char *key, char *value, size_t size)
{
    struct shim_info *in;
    int found = 0;
    if (info == MPI_INFO_NULL || !key || !value || size == 0) {
        return 0;
    }
    pthread_mutex_lock(&info_lock);
    in = info_of(info);
    int i = in ? find_key(in, key) : -1;
    if (i >= 0) {
        size_t n = strnlen(in->e[i].val, size - 1);
        memcpy(value, in->e[i].val, n);
        value[n] = '\0';
        found = 1;
    }
    pthread_mutex_unlock(&info_lock);
    return found;
}

int shim_info_valid(MPI_Info info)
{
    pthread_mutex_lock(&info_lock);
    int ok = info_of(info) != NULL;
    pthread_mutex_unlock(&info_lock);
    return ok;
}
