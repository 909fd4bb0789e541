/*
 * mr_attr.c - attributes cached on communicators and datatypes (MPI-3.1 section 6.7):
 * set, get, overwrite and delete; the copy callback on MPI_Comm_dup / MPI_Type_dup and the
 * predefined MPI_*_DUP_FN and MPI_*_NULL_COPY_FN; the delete callback on delete, overwrite
 * and free, with the value it was given; a keyval freed while in use; a keyval of one kind
 * used on the other kind of object (MPI_ERR_KEYVAL); and MPI_Finalize deleting the
 * attributes of MPI_COMM_SELF newest first while MPI still works. Every callback records
 * what it saw, and the checks compare that with what the test set.
 */
#include "mrtest.h"

enum { MAXLOG = 16 };

/* What the delete callbacks saw, in order. */
static struct {
    int handle, keyval;
    long val;
} deleted[MAXLOG];
static int ndeleted, ncopied;

static int copy_plus_one(int old, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)old;
    (void)keyval;
    ncopied++;
    *(long *)out = (long)in + 1 + (long)extra;
    *flag = 1;
    return MPI_SUCCESS;
}

static int record_delete(int handle, int keyval, void *val, void *extra)
{
    (void)extra;
    if (ndeleted < MAXLOG) {
        deleted[ndeleted].handle = handle;
        deleted[ndeleted].keyval = keyval;
        deleted[ndeleted].val = (long)val;
    }
    ndeleted++;
    return MPI_SUCCESS;
}

static int failing_delete(int handle, int keyval, void *val, void *extra)
{
    (void)handle;
    (void)keyval;
    (void)val;
    (void)extra;
    return MPI_ERR_OTHER;
}

static long get_long(int (*get)(int, int, void *, int *), int handle, int keyval, int *flag)
{
    void *v = NULL;
    CHECK_MPI(get(handle, keyval, &v, flag));
    return (long)v;
}

static void check_deleted(int i, int handle, int keyval, long val)
{
    CHECK(ndeleted > i && deleted[i].handle == handle && deleted[i].keyval == keyval &&
              deleted[i].val == val,
          "delete %d of %d: handle %#x keyval %#x value %ld, expected %#x %#x %ld", i, ndeleted,
          (unsigned)deleted[i].handle, (unsigned)deleted[i].keyval, deleted[i].val,
          (unsigned)handle, (unsigned)keyval, val);
}

static void communicators(void)
{
    int kv, kv_null, flag;
    MPI_Comm a, b;

    ndeleted = ncopied = 0;
    CHECK_MPI(MPI_Comm_create_keyval(copy_plus_one, record_delete, &kv, (void *)10));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, record_delete, &kv_null, NULL));
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &a));
    get_long(MPI_Comm_get_attr, a, kv, &flag);
    CHECK(!flag, "an attribute nobody set was found");
    CHECK_MPI(MPI_Comm_set_attr(a, kv, (void *)100));
    CHECK_MPI(MPI_Comm_set_attr(a, kv_null, (void *)7));
    CHECK_MPI(MPI_Comm_set_attr(a, kv, (void *)200)); /* overwrite: 100 is deleted */
    check_deleted(0, a, kv, 100);
    CHECK(get_long(MPI_Comm_get_attr, a, kv, &flag) == 200 && flag, "get after overwrite");

    /* Dup: copy_plus_one gives 200 + 1 + its extra state 10; the null copy copies nothing. */
    CHECK_MPI(MPI_Comm_dup(a, &b));
    CHECK(ncopied == 1, "%d copy callbacks", ncopied);
    CHECK(get_long(MPI_Comm_get_attr, b, kv, &flag) == 211 && flag, "copied value");
    get_long(MPI_Comm_get_attr, b, kv_null, &flag);
    CHECK(!flag, "MPI_COMM_NULL_COPY_FN copied an attribute");

    /* A keyval freed while attributes use it still deletes them when their comm goes. */
    int kv_null_handle = kv_null;
    CHECK_MPI(MPI_Comm_free_keyval(&kv_null));
    CHECK(kv_null == MPI_KEYVAL_INVALID, "free_keyval left %#x", (unsigned)kv_null);
    CHECK_MPI(MPI_Comm_delete_attr(b, kv));
    check_deleted(1, b, kv, 211);
    get_long(MPI_Comm_get_attr, b, kv, &flag);
    CHECK(!flag, "a deleted attribute was found");
    CHECK_MPI(MPI_Comm_set_errhandler(b, MPI_ERRORS_RETURN));
    EXPECT_CLASS(MPI_Comm_delete_attr(b, kv), MPI_ERR_KEYVAL); /* nothing left to delete */
    CHECK_MPI(MPI_Comm_free(&b));
    CHECK(ndeleted == 2, "freeing a comm without attributes deleted %d", ndeleted - 2);
    /* Freed newest first: kv (set last, at 200) before the kv_null one (7), whose keyval
     * handle is gone but which is still deleted. */
    MPI_Comm a_handle = a;
    CHECK_MPI(MPI_Comm_free(&a));
    CHECK(ndeleted == 4, "%d deletes after freeing a", ndeleted);
    check_deleted(2, a_handle, kv, 200);
    check_deleted(3, a_handle, kv_null_handle, 7);
    CHECK_MPI(MPI_Comm_free_keyval(&kv));

    /* The predefined attribute: a pointer to the tag bound. */
    int *ub;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag));
    CHECK(flag && *ub >= 32767, "MPI_TAG_UB %d", flag ? *ub : -1);
}

static void datatypes(void)
{
    int kv, kv_dup, flag;
    MPI_Datatype t, u;

    ndeleted = ncopied = 0;
    CHECK_MPI(MPI_Type_create_keyval(copy_plus_one, record_delete, &kv, NULL));
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_DUP_FN, record_delete, &kv_dup, NULL));
    CHECK_MPI(MPI_Type_vector(3, 2, 4, MPI_INT, &t));
    CHECK_MPI(MPI_Type_set_attr(t, kv, (void *)5));
    CHECK_MPI(MPI_Type_set_attr(t, kv_dup, (void *)9));
    CHECK(get_long(MPI_Type_get_attr, t, kv, &flag) == 5 && flag, "type attribute");

    /* Type_dup: copy_plus_one gives 6, MPI_TYPE_DUP_FN the same 9; the copy works. */
    CHECK_MPI(MPI_Type_dup(t, &u));
    CHECK(ncopied == 1, "%d copy callbacks", ncopied);
    CHECK(get_long(MPI_Type_get_attr, u, kv, &flag) == 6 && flag, "dup'ed attribute");
    CHECK(get_long(MPI_Type_get_attr, u, kv_dup, &flag) == 9 && flag, "MPI_TYPE_DUP_FN");
    CHECK_MPI(MPI_Type_commit(&u));
    int in[12], out[12];
    for (int i = 0; i < 12; i++) {
        in[i] = 100 + i;
        out[i] = -1;
    }
    CHECK_MPI(MPI_Sendrecv(in, 1, u, 0, 7, out, 1, u, 0, 7, MPI_COMM_SELF, MPI_STATUS_IGNORE));
    for (int i = 0; i < 12; i++) {
        int want = i % 4 < 2 && i < 10 ? 100 + i : -1;
        CHECK(out[i] == want, "dup'ed vector elem %d = %d, want %d", i, out[i], want);
    }

    /* Freeing a type deletes its attributes newest first, with the handle still valid. */
    MPI_Datatype t_handle = t, u_handle = u;
    CHECK_MPI(MPI_Type_free(&t));
    CHECK(ndeleted == 2, "%d deletes after freeing t", ndeleted);
    check_deleted(0, t_handle, kv_dup, 9);
    check_deleted(1, t_handle, kv, 5);
    CHECK_MPI(MPI_Type_delete_attr(u, kv));
    check_deleted(2, u_handle, kv, 6);
    int kv_dup_handle = kv_dup;
    CHECK_MPI(MPI_Type_free_keyval(&kv_dup));
    CHECK_MPI(MPI_Type_free(&u)); /* kv_dup is freed, its attribute still deleted */
    check_deleted(3, u_handle, kv_dup_handle, 9);

    /* Predefined types take attributes too. */
    CHECK_MPI(MPI_Type_set_attr(MPI_INT, kv, (void *)42));
    CHECK(get_long(MPI_Type_get_attr, MPI_INT, kv, &flag) == 42 && flag, "MPI_INT attribute");
    CHECK_MPI(MPI_Type_delete_attr(MPI_INT, kv));
    check_deleted(4, MPI_INT, kv, 42);
    get_long(MPI_Type_get_attr, MPI_INT, kv, &flag);
    CHECK(!flag, "MPI_INT kept a deleted attribute");
    CHECK_MPI(MPI_Type_free_keyval(&kv));
}

/* Each kind of keyval belongs to its kind of object; bad handles are errors too. */
static void errors(void)
{
    int ckv, tkv, flag;
    void *v;
    MPI_Datatype t;

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &ckv, NULL));
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, MPI_TYPE_NULL_DELETE_FN, &tkv, NULL));
    EXPECT_CLASS(MPI_Type_set_attr(MPI_INT, ckv, NULL), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Type_get_attr(MPI_INT, ckv, &v, &flag), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Comm_set_attr(MPI_COMM_WORLD, tkv, NULL), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Comm_free_keyval(&tkv), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Type_free_keyval(&ckv), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Type_set_attr(MPI_DATATYPE_NULL, tkv, NULL), MPI_ERR_TYPE);
    EXPECT_CLASS(MPI_Type_get_attr(MPI_INT, 0x1234, &v, &flag), MPI_ERR_KEYVAL);
    EXPECT_CLASS(MPI_Type_get_attr(MPI_INT, tkv, &v, NULL), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL, &flag), MPI_ERR_ARG);
    EXPECT_CLASS(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, NULL, NULL, NULL), MPI_ERR_ARG);
    CHECK_MPI(MPI_Comm_free_keyval(&ckv));
    CHECK_MPI(MPI_Type_free_keyval(&tkv));

    /* A delete callback's failure is MPI_Type_free's error; the type is gone all the same. */
    CHECK_MPI(MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, failing_delete, &tkv, NULL));
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &t));
    CHECK_MPI(MPI_Type_set_attr(t, tkv, NULL));
    EXPECT_CLASS(MPI_Type_delete_attr(t, tkv), MPI_ERR_OTHER);
    EXPECT_CLASS(MPI_Type_free(&t), MPI_ERR_OTHER);
    CHECK(t == MPI_DATATYPE_NULL, "MPI_Type_free left %#x", (unsigned)t);
    CHECK_MPI(MPI_Type_free_keyval(&tkv));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* MPI_Finalize's deletes of MPI_COMM_SELF's attributes: order, values, and MPI usable. */
static int self_order[2], self_sum[2], nself;

static int self_delete(int comm, int keyval, void *val, void *extra)
{
    int one = 1;
    (void)keyval;
    (void)extra;
    if (comm != MPI_COMM_SELF || nself >= 2) {
        return MPI_ERR_OTHER;
    }
    self_order[nself] = (int)(long)val;
    /* MPI still works: a collective over every rank, which all are in MPI_Finalize for. */
    if (MPI_Allreduce(&one, &self_sum[nself], 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) !=
        MPI_SUCCESS) {
        self_sum[nself] = -1;
    }
    nself++;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int kv1, kv2, size;

    mrt_init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    communicators();
    datatypes();
    errors();
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &kv1, NULL));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &kv2, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, kv1, (void *)1));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, kv2, (void *)2));
    mrt_finish("mr_attr"); /* MPI_Finalize */
    CHECK(nself == 2 && self_order[0] == 2 && self_order[1] == 1,
          "MPI_Finalize deleted %d MPI_COMM_SELF attributes, in the order %d %d", nself,
          self_order[0], self_order[1]);
    CHECK(self_sum[0] == size && self_sum[1] == size, "allreduce in the callbacks gave %d %d",
          self_sum[0], self_sum[1]);
    return 0;
}
