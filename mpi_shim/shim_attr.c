/*
 * shim_attr.c - communicator attributes and keyvals, and the predefined attributes
 * (MPI_TAG_UB, MPI_HOST, MPI_IO, MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM).
 *
 * Attributes of a communicator are a short linked list (programs set a handful); the copy
 * callback runs on MPI_Comm_dup, the delete callback on MPI_Comm_delete_attr, on
 * overwrite and on MPI_Comm_free. A keyval freed while attributes still use it stays
 * alive until the last of them goes, as the standard requires.
 */
#include "config.h"

#include "shim_comm.h"
#include "mps_log.h"
#include "pg.h"

#include <stdlib.h>

struct shim_keyval {
    MPI_Comm_copy_attr_function *copy;
    MPI_Comm_delete_attr_function *del;
    void *extra;
    int refs; /* the handle, plus one per attribute that uses it */
};

struct shim_attr {
    struct shim_attr *next;
    int keyval;
    void *val;
};

static struct shim_table keyvals = {.obj = MPISHIM_OBJ_KEYVAL};

/* The predefined attributes hold pointers to these values, as MPI wants. */
static int tag_ub = PG_TAG_UB;
static int host = MPI_PROC_NULL;
static int io = MPI_ANY_SOURCE; /* every rank may do I/O */
static int wtime_is_global = 0;
static int universe_size;
static int appnum = 0;

static int *predefined(int keyval)
{
    switch (keyval) {
    case MPI_TAG_UB:
        return &tag_ub;
    case MPI_HOST:
        return &host;
    case MPI_IO:
        return &io;
    case MPI_WTIME_IS_GLOBAL:
        return &wtime_is_global;
    case MPI_UNIVERSE_SIZE:
        universe_size = pg_world_size();
        return &universe_size;
    case MPI_APPNUM:
        return &appnum;
    default:
        return NULL;
    }
}

static void keyval_release(int handle)
{
    struct shim_keyval *k = shim_table_get(&keyvals, handle);

    if (k && __atomic_sub_fetch(&k->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        shim_table_remove(&keyvals, handle);
        free(k);
    }
}

#pragma weak MPI_Comm_create_keyval = PMPI_Comm_create_keyval
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy_fn,
                            MPI_Comm_delete_attr_function *delete_fn, int *keyval,
                            void *extra_state)
{
    struct shim_keyval *k = malloc(sizeof(*k));

    if (k) {
        *k = (struct shim_keyval){copy_fn, delete_fn, extra_state, 1};
        *keyval = shim_table_add(&keyvals, k);
    }
    if (!k || !*keyval) {
        free(k);
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_NO_MEM, "no memory for a keyval");
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Comm_free_keyval = PMPI_Comm_free_keyval
int PMPI_Comm_free_keyval(int *keyval)
{
    if (!shim_table_get(&keyvals, *keyval)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_KEYVAL, "invalid keyval 0x%x",
                          (unsigned)*keyval);
    }
    keyval_release(*keyval);
    *keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

static struct shim_attr **attr_find(struct shim_comm *c, int keyval)
{
    struct shim_attr **pp = &c->attrs;

    while (*pp && (*pp)->keyval != keyval) {
        pp = &(*pp)->next;
    }
    return pp;
}

/* Unlinks *pp after its delete callback agreed. */
static int attr_remove(MPI_Comm comm, struct shim_attr **pp)
{
    struct shim_attr *a = *pp;
    struct shim_keyval *k = shim_table_get(&keyvals, a->keyval);
    int rc = MPI_SUCCESS;

    if (k && k->del) {
        rc = k->del(comm, a->keyval, a->val, k->extra);
    }
    if (rc == MPI_SUCCESS) {
        *pp = a->next;
        keyval_release(a->keyval);
        free(a);
    }
    return rc;
}

static int attr_enter(MPI_Comm comm, int keyval, const char *fn, struct shim_comm **c)
{
    if (shim_comm_get(comm, c) != MPI_SUCCESS) {
        return shim_error(comm, fn, MPI_ERR_COMM, "invalid communicator 0x%x", (unsigned)comm);
    }
    if (!shim_table_get(&keyvals, keyval)) {
        return shim_error(comm, fn, MPI_ERR_KEYVAL, "invalid keyval 0x%x", (unsigned)keyval);
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Comm_set_attr = PMPI_Comm_set_attr
int PMPI_Comm_set_attr(MPI_Comm comm, int keyval, void *val)
{
    struct shim_comm *c;
    struct shim_attr **pp, *a;
    int rc = attr_enter(comm, keyval, SHIM_FN, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pp = attr_find(c, keyval);
    if (*pp && (rc = attr_remove(comm, pp)) != MPI_SUCCESS) {
        return shim_error(comm, SHIM_FN, rc, "the delete callback of the old value failed");
    }
    a = malloc(sizeof(*a));
    if (!a) {
        return shim_error(comm, SHIM_FN, MPI_ERR_NO_MEM, "no memory for an attribute");
    }
    *a = (struct shim_attr){c->attrs, keyval, val};
    c->attrs = a;
    /* atomic: threads set attributes of one keyval on their own communicators at once */
    __atomic_add_fetch(&((struct shim_keyval *)shim_table_get(&keyvals, keyval))->refs, 1,
                       __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

#pragma weak MPI_Comm_get_attr = PMPI_Comm_get_attr
int PMPI_Comm_get_attr(MPI_Comm comm, int keyval, void *val, int *flag)
{
    struct shim_comm *c;
    struct shim_attr **pp;
    int *pre = predefined(keyval);

    if (shim_comm_get(comm, &c) != MPI_SUCCESS) {
        return shim_error(comm, SHIM_FN, MPI_ERR_COMM, "invalid communicator 0x%x",
                          (unsigned)comm);
    }
    if (pre) {
        *(void **)val = pre;
        *flag = 1;
        return MPI_SUCCESS;
    }
    if (!shim_table_get(&keyvals, keyval)) {
        return shim_error(comm, SHIM_FN, MPI_ERR_KEYVAL, "invalid keyval 0x%x", (unsigned)keyval);
    }
    pp = attr_find(c, keyval);
    *flag = *pp != NULL;
    if (*pp) {
        *(void **)val = (*pp)->val;
    }
    return MPI_SUCCESS;
}

#pragma weak MPI_Comm_delete_attr = PMPI_Comm_delete_attr
int PMPI_Comm_delete_attr(MPI_Comm comm, int keyval)
{
    struct shim_comm *c;
    struct shim_attr **pp;
    int rc = attr_enter(comm, keyval, SHIM_FN, &c);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pp = attr_find(c, keyval);
    if (!*pp) {
        return shim_error(comm, SHIM_FN, MPI_ERR_KEYVAL, "no attribute for keyval 0x%x",
                          (unsigned)keyval);
    }
    rc = attr_remove(comm, pp);
    return rc == MPI_SUCCESS ? rc : shim_error(comm, SHIM_FN, rc, "the delete callback failed");
}

int shim_attr_copy_all(MPI_Comm oldcomm, MPI_Comm newcomm)
{
    struct shim_comm *oc, *nc;

    if (shim_comm_get(oldcomm, &oc) != MPI_SUCCESS || shim_comm_get(newcomm, &nc) != MPI_SUCCESS) {
        return MPI_ERR_COMM;
    }
    for (struct shim_attr *a = oc->attrs; a; a = a->next) {
        struct shim_keyval *k = shim_table_get(&keyvals, a->keyval);
        void *out = NULL;
        int flag = 0, rc;
        if (!k || !k->copy) {
            continue;
        }
        rc = k->copy(oldcomm, a->keyval, k->extra, a->val, &out, &flag);
        if (rc != MPI_SUCCESS) {
            return shim_error(oldcomm, "MPI_Comm_dup", rc, "an attribute copy callback failed");
        }
        if (flag) {
            PMPI_Comm_set_attr(newcomm, a->keyval, out);
        }
    }
    return MPI_SUCCESS;
}

int shim_attr_delete_all(MPI_Comm comm)
{
    struct shim_comm *c;
    int rc = MPI_SUCCESS;

    if (shim_comm_get(comm, &c) != MPI_SUCCESS) {
        return MPI_ERR_COMM;
    }
    while (c->attrs && rc == MPI_SUCCESS) {
        rc = attr_remove(comm, &c->attrs);
    }
    return rc;
}

/* The MPI-1 names. */
#pragma weak MPI_Keyval_create = PMPI_Keyval_create
int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                       void *extra_state)
{
    return PMPI_Comm_create_keyval((MPI_Comm_copy_attr_function *)copy_fn,
                                   (MPI_Comm_delete_attr_function *)delete_fn, keyval, extra_state);
}

#pragma weak MPI_Keyval_free = PMPI_Keyval_free
int PMPI_Keyval_free(int *keyval)
{
    return PMPI_Comm_free_keyval(keyval);
}

#pragma weak MPI_Attr_put = PMPI_Attr_put
int PMPI_Attr_put(MPI_Comm comm, int keyval, void *val)
{
    return PMPI_Comm_set_attr(comm, keyval, val);
}

#pragma weak MPI_Attr_get = PMPI_Attr_get
int PMPI_Attr_get(MPI_Comm comm, int keyval, void *val, int *flag)
{
    return PMPI_Comm_get_attr(comm, keyval, val, flag);
}

#pragma weak MPI_Attr_delete = PMPI_Attr_delete
int PMPI_Attr_delete(MPI_Comm comm, int keyval)
{
    return PMPI_Comm_delete_attr(comm, keyval);
}
