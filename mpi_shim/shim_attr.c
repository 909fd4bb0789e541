/*
 * shim_attr.c - attributes cached on communicators, datatypes and windows, their keyvals, and
 * the predefined communicator attributes (MPI_TAG_UB, MPI_HOST, MPI_IO,
 * MPI_WTIME_IS_GLOBAL, MPI_UNIVERSE_SIZE, MPI_APPNUM, MPI_LASTUSEDCODE).
 *
 * An object's attributes are a short linked list (programs set a handful), newest first,
 * so that deleting from the head deletes in the reverse order of setting, as MPI-3.1
 * section 6.7 asks of MPI_Finalize's deletion of MPI_COMM_SELF's attributes. The copy
 * callback runs on MPI_Comm_dup and MPI_Type_dup (a window is never duplicated, so a window
 * keyval's copy callback is never called), the delete callback on an explicit delete, on
 * overwrite and when the object is freed. A keyval belongs to one kind of object: a
 * communicator keyval used on a datatype or a window, or any such mix, is MPI_ERR_KEYVAL. A
 * keyval freed while attributes still use it stays alive until the last of them goes, as
 * the standard requires.
 */
#include "config.h"

#include "shim_comm.h"
#include "shim_datatype.h"
#include "shim_win.h"
#include "mps_log.h"
#include "pg.h"

#include <stdbool.h>
#include <stdlib.h>

enum attr_kind { ATTR_COMM, ATTR_TYPE, ATTR_WIN };

static const char *const kind_name[] = {"communicator", "datatype", "window"};

/* MPI_Comm, MPI_Datatype and MPI_Win are all int here, so the three kinds' callback types
 * are one C type and a keyval keeps any kind's in the same fields. */
struct shim_keyval {
    enum attr_kind kind;
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

/* An object that holds attributes: its handle (what the callbacks get), its list, and the
 * communicator its errors are raised on. */
struct attr_owner {
    enum attr_kind kind;
    int handle;
    struct shim_attr **head;
    MPI_Comm errc;
};

static struct shim_table keyvals = {.obj = MPISHIM_OBJ_KEYVAL};

/* The predefined attributes hold pointers to these values, as MPI wants. */
static int tag_ub = PG_TAG_UB;
static int host = MPI_PROC_NULL;
static int io = MPI_ANY_SOURCE; /* every rank may do I/O */
static int wtime_is_global = 0;
static int universe_size;
static int appnum = 0;
static int last_used_code;

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
    case MPI_LASTUSEDCODE:
        /* Read at each get, so it follows MPI_Add_error_class/code. */
        last_used_code = shim_last_used_code();
        return &last_used_code;
    default:
        return NULL;
    }
}

/* ---- keyvals ---- */

static void keyval_release(int handle)
{
    struct shim_keyval *k = shim_table_get(&keyvals, handle);

    if (k && __atomic_sub_fetch(&k->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        shim_table_remove(&keyvals, handle);
        free(k);
    }
}

/* The keyval of a handle, checked to be of kind; raises MPI_ERR_KEYVAL on errc if not. */
static int keyval_check(enum attr_kind kind, int keyval, MPI_Comm errc, const char *fn,
                        struct shim_keyval **out)
{
    struct shim_keyval *k = shim_table_get(&keyvals, keyval);

    if (!k) {
        return shim_error(errc, fn, MPI_ERR_KEYVAL, "invalid keyval 0x%x", (unsigned)keyval);
    }
    if (k->kind != kind) {
        return shim_error(errc, fn, MPI_ERR_KEYVAL, "keyval 0x%x is a %s keyval, not a %s one",
                          (unsigned)keyval, kind_name[k->kind], kind_name[kind]);
    }
    *out = k;
    return MPI_SUCCESS;
}

static int keyval_create(enum attr_kind kind, MPI_Comm_copy_attr_function *copy,
                         MPI_Comm_delete_attr_function *del, int *keyval, void *extra,
                         const char *fn)
{
    struct shim_keyval *k;

    if (!keyval) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "the keyval pointer is NULL");
    }
    k = malloc(sizeof(*k));
    *keyval = MPI_KEYVAL_INVALID;
    if (k) {
        *k = (struct shim_keyval){kind, copy, del, extra, 1};
        *keyval = shim_table_add(&keyvals, k);
    }
    if (!k || !*keyval) {
        free(k);
        *keyval = MPI_KEYVAL_INVALID;
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_NO_MEM, "no memory for a keyval");
    }
    return MPI_SUCCESS;
}

static int keyval_free(enum attr_kind kind, int *keyval, const char *fn)
{
    struct shim_keyval *k;
    int rc = keyval ? keyval_check(kind, *keyval, MPI_COMM_WORLD, fn, &k)
                    : shim_error(MPI_COMM_WORLD, fn, MPI_ERR_ARG, "the keyval pointer is NULL");

    if (rc == MPI_SUCCESS) {
        keyval_release(*keyval);
        *keyval = MPI_KEYVAL_INVALID;
    }
    return rc;
}

/* ---- one object's attribute list ---- */

static struct shim_attr **attr_find(const struct attr_owner *o, int keyval)
{
    struct shim_attr **pp = o->head;

    while (*pp && (*pp)->keyval != keyval) {
        pp = &(*pp)->next;
    }
    return pp;
}

/* Runs *pp's delete callback and unlinks it if the callback agreed, or in any case when
 * force is set (its object is going away); returns the callback's code. */
static int attr_remove(const struct attr_owner *o, struct shim_attr **pp, bool force)
{
    struct shim_attr *a = *pp;
    struct shim_keyval *k = shim_table_get(&keyvals, a->keyval);
    int rc = MPI_SUCCESS;

    if (k && k->del) {
        rc = k->del(o->handle, a->keyval, a->val, k->extra);
    }
    if (rc == MPI_SUCCESS || force) {
        *pp = a->next;
        keyval_release(a->keyval);
        free(a);
    }
    return rc;
}

static int attr_set(const struct attr_owner *o, int keyval, void *val, const char *fn)
{
    struct shim_keyval *k;
    struct shim_attr **pp, *a;
    int rc = keyval_check(o->kind, keyval, o->errc, fn, &k);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pp = attr_find(o, keyval);
    if (*pp && (rc = attr_remove(o, pp, false)) != MPI_SUCCESS) {
        return shim_error(o->errc, fn, rc, "the delete callback of the old value failed");
    }
    a = malloc(sizeof(*a));
    if (!a) {
        return shim_error(o->errc, fn, MPI_ERR_NO_MEM, "no memory for an attribute");
    }
    *a = (struct shim_attr){*o->head, keyval, val};
    *o->head = a;
    /* atomic: threads set attributes of one keyval on their own objects at once */
    __atomic_add_fetch(&k->refs, 1, __ATOMIC_RELAXED);
    return MPI_SUCCESS;
}

static int attr_get(const struct attr_owner *o, int keyval, void *val, int *flag, const char *fn)
{
    struct shim_keyval *k;
    struct shim_attr **pp;
    int rc = val && flag ? keyval_check(o->kind, keyval, o->errc, fn, &k)
                         : shim_error(o->errc, fn, MPI_ERR_ARG, "attribute_val or flag is NULL");

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pp = attr_find(o, keyval);
    *flag = *pp != NULL;
    if (*pp) {
        *(void **)val = (*pp)->val;
    }
    return MPI_SUCCESS;
}

static int attr_delete(const struct attr_owner *o, int keyval, const char *fn)
{
    struct shim_keyval *k;
    struct shim_attr **pp;
    int rc = keyval_check(o->kind, keyval, o->errc, fn, &k);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    pp = attr_find(o, keyval);
    if (!*pp) {
        return shim_error(o->errc, fn, MPI_ERR_KEYVAL, "no attribute for keyval 0x%x",
                          (unsigned)keyval);
    }
    rc = attr_remove(o, pp, false);
    return rc == MPI_SUCCESS ? rc : shim_error(o->errc, fn, rc, "the delete callback failed");
}

/* Copies every attribute of from whose keyval has a copy callback that asks for it. */
static int attr_copy_all(const struct attr_owner *from, const struct attr_owner *to,
                         const char *fn)
{
    for (struct shim_attr *a = *from->head; a; a = a->next) {
        struct shim_keyval *k = shim_table_get(&keyvals, a->keyval);
        void *out = NULL;
        int flag = 0, rc;
        if (!k || !k->copy) {
            continue;
        }
        rc = k->copy(from->handle, a->keyval, k->extra, a->val, &out, &flag);
        if (rc != MPI_SUCCESS) {
            return shim_error(from->errc, fn, rc, "an attribute copy callback failed");
        }
        if (flag && (rc = attr_set(to, a->keyval, out, fn)) != MPI_SUCCESS) {
            return rc;
        }
    }
    return MPI_SUCCESS;
}

/* Deletes every attribute of an object that is going away, newest first. One whose callback
 * fails goes too, since nothing could reach it again; the first failure is returned. */
static int attr_delete_all(const struct attr_owner *o)
{
    int first = MPI_SUCCESS;

    while (*o->head) {
        int rc = attr_remove(o, o->head, true);
        first = first == MPI_SUCCESS ? rc : first;
    }
    return first;
}

/* ---- communicators ---- */

static int comm_owner(MPI_Comm comm, const char *fn, struct attr_owner *o)
{
    struct shim_comm *c;

    if (shim_comm_get(comm, &c) != MPI_SUCCESS) {
        return shim_error(comm, fn, MPI_ERR_COMM, "invalid communicator 0x%x", (unsigned)comm);
    }
    *o = (struct attr_owner){ATTR_COMM, comm, &c->attrs, comm};
    return MPI_SUCCESS;
}

#pragma weak MPI_Comm_create_keyval = PMPI_Comm_create_keyval
int PMPI_Comm_create_keyval(MPI_Comm_copy_attr_function *copy_fn,
                            MPI_Comm_delete_attr_function *delete_fn, int *keyval,
                            void *extra_state)
{
    return keyval_create(ATTR_COMM, copy_fn, delete_fn, keyval, extra_state, SHIM_FN);
}

#pragma weak MPI_Comm_free_keyval = PMPI_Comm_free_keyval
int PMPI_Comm_free_keyval(int *keyval)
{
    return keyval_free(ATTR_COMM, keyval, SHIM_FN);
}

#pragma weak MPI_Comm_set_attr = PMPI_Comm_set_attr
int PMPI_Comm_set_attr(MPI_Comm comm, int keyval, void *val)
{
    struct attr_owner o;
    int rc = comm_owner(comm, SHIM_FN, &o);

    return rc == MPI_SUCCESS ? attr_set(&o, keyval, val, SHIM_FN) : rc;
}

#pragma weak MPI_Comm_get_attr = PMPI_Comm_get_attr
int PMPI_Comm_get_attr(MPI_Comm comm, int keyval, void *val, int *flag)
{
    struct attr_owner o;
    int rc = comm_owner(comm, SHIM_FN, &o);
    int *pre = predefined(keyval);

    if (rc == MPI_SUCCESS && pre && val && flag) {
        *(void **)val = pre;
        *flag = 1;
        return MPI_SUCCESS;
    }
    return rc == MPI_SUCCESS ? attr_get(&o, keyval, val, flag, SHIM_FN) : rc;
}

#pragma weak MPI_Comm_delete_attr = PMPI_Comm_delete_attr
int PMPI_Comm_delete_attr(MPI_Comm comm, int keyval)
{
    struct attr_owner o;
    int rc = comm_owner(comm, SHIM_FN, &o);

    return rc == MPI_SUCCESS ? attr_delete(&o, keyval, SHIM_FN) : rc;
}

int shim_attr_copy_all(MPI_Comm oldcomm, MPI_Comm newcomm)
{
    struct attr_owner from, to;
    int rc = comm_owner(oldcomm, "MPI_Comm_dup", &from);

    rc = rc == MPI_SUCCESS ? comm_owner(newcomm, "MPI_Comm_dup", &to) : rc;
    return rc == MPI_SUCCESS ? attr_copy_all(&from, &to, "MPI_Comm_dup") : rc;
}

int shim_attr_delete_all(MPI_Comm comm)
{
    struct shim_comm *c;

    if (shim_comm_get(comm, &c) != MPI_SUCCESS) {
        return MPI_ERR_COMM;
    }
    return attr_delete_all(&(struct attr_owner){ATTR_COMM, comm, &c->attrs, comm});
}

/* ---- datatypes ---- */

static int type_owner(MPI_Datatype type, const char *fn, struct attr_owner *o)
{
    struct shim_dtype *t;
    int rc = shim_check_init(fn);

    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (type == MPI_DATATYPE_NULL || shim_dtype_lookup(type, &t) != MPI_SUCCESS) {
        return shim_error(MPI_COMM_WORLD, fn, MPI_ERR_TYPE, "datatype 0x%x is invalid or freed",
                          (unsigned)type);
    }
    *o = (struct attr_owner){ATTR_TYPE, type, &t->attrs, MPI_COMM_WORLD};
    return MPI_SUCCESS;
}

#pragma weak MPI_Type_create_keyval = PMPI_Type_create_keyval
int PMPI_Type_create_keyval(MPI_Type_copy_attr_function *copy_fn,
                            MPI_Type_delete_attr_function *delete_fn, int *keyval,
                            void *extra_state)
{
    return keyval_create(ATTR_TYPE, copy_fn, delete_fn, keyval, extra_state, SHIM_FN);
}

#pragma weak MPI_Type_free_keyval = PMPI_Type_free_keyval
int PMPI_Type_free_keyval(int *keyval)
{
    return keyval_free(ATTR_TYPE, keyval, SHIM_FN);
}

#pragma weak MPI_Type_set_attr = PMPI_Type_set_attr
int PMPI_Type_set_attr(MPI_Datatype type, int keyval, void *val)
{
    struct attr_owner o;
    int rc = type_owner(type, SHIM_FN, &o);

    return rc == MPI_SUCCESS ? attr_set(&o, keyval, val, SHIM_FN) : rc;
}

#pragma weak MPI_Type_get_attr = PMPI_Type_get_attr
int PMPI_Type_get_attr(MPI_Datatype type, int keyval, void *val, int *flag)
{
    struct attr_owner o;
    int rc = type_owner(type, SHIM_FN, &o);

    return rc == MPI_SUCCESS ? attr_get(&o, keyval, val, flag, SHIM_FN) : rc;
}

#pragma weak MPI_Type_delete_attr = PMPI_Type_delete_attr
int PMPI_Type_delete_attr(MPI_Datatype type, int keyval)
{
    struct attr_owner o;
    int rc = type_owner(type, SHIM_FN, &o);

    return rc == MPI_SUCCESS ? attr_delete(&o, keyval, SHIM_FN) : rc;
}

int shim_attr_type_copy_all(MPI_Datatype oldtype, MPI_Datatype newtype)
{
    struct attr_owner from, to;
    int rc = type_owner(oldtype, "MPI_Type_dup", &from);

    rc = rc == MPI_SUCCESS ? type_owner(newtype, "MPI_Type_dup", &to) : rc;
    return rc == MPI_SUCCESS ? attr_copy_all(&from, &to, "MPI_Type_dup") : rc;
}

int shim_attr_type_delete_all(struct shim_dtype *t)
{
    return attr_delete_all(&(struct attr_owner){ATTR_TYPE, t->handle, &t->attrs, MPI_COMM_WORLD});
}

/* ---- windows ---- */

/* A window's attribute errors are raised on the window (its handler, MPI-3.1 8.3.2). */
static int win_owner(MPI_Win win, const char *fn, struct attr_owner *o)
{
    struct shim_win *w;
    int rc = shim_win_enter(fn, win, &w);

    if (rc == MPI_SUCCESS) {
        *o = (struct attr_owner){ATTR_WIN, win, &w->attrs, w->comm};
    }
    return rc;
}

#pragma weak MPI_Win_create_keyval = PMPI_Win_create_keyval
int PMPI_Win_create_keyval(MPI_Win_copy_attr_function *copy_fn,
                           MPI_Win_delete_attr_function *delete_fn, int *keyval,
                           void *extra_state)
{
    return keyval_create(ATTR_WIN, copy_fn, delete_fn, keyval, extra_state, SHIM_FN);
}

#pragma weak MPI_Win_free_keyval = PMPI_Win_free_keyval
int PMPI_Win_free_keyval(int *keyval)
{
    return keyval_free(ATTR_WIN, keyval, SHIM_FN);
}

#pragma weak MPI_Win_set_attr = PMPI_Win_set_attr
int PMPI_Win_set_attr(MPI_Win win, int keyval, void *val)
{
    struct attr_owner o;
    int rc = win_owner(win, SHIM_FN, &o);

    return rc == MPI_SUCCESS ? attr_set(&o, keyval, val, SHIM_FN) : rc;
}

#pragma weak MPI_Win_delete_attr = PMPI_Win_delete_attr
int PMPI_Win_delete_attr(MPI_Win win, int keyval)
{
    struct attr_owner o;
    int rc = win_owner(win, SHIM_FN, &o);

    return rc == MPI_SUCCESS ? attr_delete(&o, keyval, SHIM_FN) : rc;
}

/* MPI_Win_get_attr (shim_win.c) asks here for what is not a predefined attribute. */
int shim_attr_win_get(struct shim_win *w, int keyval, void *val, int *flag, const char *fn)
{
    struct attr_owner o = {ATTR_WIN, w->handle, &w->attrs, w->comm};

    return attr_get(&o, keyval, val, flag, fn);
}

int shim_attr_win_delete_all(struct shim_win *w)
{
    return attr_delete_all(&(struct attr_owner){ATTR_WIN, w->handle, &w->attrs, w->comm});
}

/* ---- the MPI-1 names ---- */

#pragma weak MPI_Keyval_create = PMPI_Keyval_create
int PMPI_Keyval_create(MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn, int *keyval,
                       void *extra_state)
{
    return keyval_create(ATTR_COMM, copy_fn, delete_fn, keyval, extra_state, SHIM_FN);
}

#pragma weak MPI_Keyval_free = PMPI_Keyval_free
int PMPI_Keyval_free(int *keyval)
{
    return keyval_free(ATTR_COMM, keyval, SHIM_FN);
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
