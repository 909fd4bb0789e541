/*
 * test_datatype.c - the datatype engine (mpi_shim/shim_datatype.c) and MPI_Info objects
 * (mpi_shim/shim_info.c), linked without the rest of mpi_shim: the error raising of shim.h
 * is replaced by a fake that records the error class and returns it (MPI_ERRORS_RETURN),
 * and the attribute hooks of shim_attr.c by ones that do nothing.
 *
 * Every expected size, extent and byte below is worked out by hand in the comments.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "mpi.h"
#include "shim.h"
#include "shim_datatype.h"

/* ---- Fakes for what shim_env.c provides in the library. ---- */
static int last_errclass;

/* shim_env.c's name override for nested calls (unused by the fakes). */
__thread const char *shim_outer_fn;

int shim_error(MPI_Comm comm, const char *fn, int errclass, const char *fmt, ...)
{
    (void)comm;
    (void)fn;
    (void)fmt;
    last_errclass = errclass;
    return errclass;
}

int shim_check_init(const char *fn)
{
    (void)fn;
    return MPI_SUCCESS;
}

/* shim_attr.c's hooks: attributes are tested through the library (tests/mr/mr_attr.c). */
int shim_attr_type_copy_all(MPI_Datatype oldtype, MPI_Datatype newtype)
{
    (void)oldtype;
    (void)newtype;
    return MPI_SUCCESS;
}

int shim_attr_type_delete_all(struct shim_dtype *t)
{
    (void)t;
    return MPI_SUCCESS;
}

/* ---- Helpers. ---- */
struct shape {
    MPI_Aint lb, extent, true_lb, true_extent;
    int size;
};

static struct shape shape_of(MPI_Datatype t)
{
    struct shape s;
    assert_int_equal(MPI_Type_get_extent(t, &s.lb, &s.extent), MPI_SUCCESS);
    assert_int_equal(MPI_Type_get_true_extent(t, &s.true_lb, &s.true_extent), MPI_SUCCESS);
    assert_int_equal(MPI_Type_size(t, &s.size), MPI_SUCCESS);
    return s;
}

static void assert_shape(MPI_Datatype t, MPI_Aint lb, MPI_Aint extent, MPI_Aint tlb,
                         MPI_Aint textent, int size)
{
    struct shape s = shape_of(t);
    assert_int_equal(s.lb, lb);
    assert_int_equal(s.extent, extent);
    assert_int_equal(s.true_lb, tlb);
    assert_int_equal(s.true_extent, textent);
    assert_int_equal(s.size, size);
}

static struct shim_dtype *dt(MPI_Datatype h)
{
    struct shim_dtype *t = NULL;
    assert_int_equal(shim_dtype_lookup(h, &t), MPI_SUCCESS);
    return t;
}

/* The contiguous pieces of one element, in typemap order, through the iterator (the only
 * way out of shim_datatype.c to the typemap); returns their number, fills at most max. */
static size_t pieces(MPI_Datatype h, MPI_Aint *off, size_t *len, size_t max)
{
    struct shim_dtype_iter it;
    MPI_Aint o;
    size_t l, n = 0;
    shim_dtype_iter_init(&it, dt(h), 1);
    while (shim_dtype_iter_next(&it, SIZE_MAX, &o, &l)) {
        if (n < max) {
            off[n] = o;
            len[n] = l;
        }
        n++;
    }
    return n;
}

static size_t nblocks(MPI_Datatype h)
{
    return pieces(h, NULL, NULL, 0);
}

static MPI_Aint block_off(MPI_Datatype h, size_t i)
{
    MPI_Aint off[8];
    size_t len[8];
    assert_true(pieces(h, off, len, 8) > i);
    return off[i];
}

static size_t block_len(MPI_Datatype h, size_t i)
{
    MPI_Aint off[8];
    size_t len[8];
    assert_true(pieces(h, off, len, 8) > i);
    return len[i];
}

static void free_type(MPI_Datatype *t)
{
    assert_int_equal(MPI_Type_free(t), MPI_SUCCESS);
    assert_int_equal(*t, MPI_DATATYPE_NULL);
}

/* ---- Constructors: sizes and extents. ---- */

static void test_contiguous_of_three_ints_is_12_dense_bytes(void **state)
{
    MPI_Datatype t;
    (void)state;
    assert_int_equal(MPI_Type_contiguous(3, MPI_INT, &t), MPI_SUCCESS);
    assert_shape(t, 0, 12, 0, 12, 12);
    assert_true(dt(t)->contig);
    assert_int_equal(nblocks(t), 1);
    free_type(&t);
}

static void test_vector_has_gaps_between_blocks(void **state)
{
    MPI_Datatype t;
    (void)state;
    /* 3 blocks of 2 ints, stride 4 ints: bytes [0,8) [16,24) [32,40). */
    assert_int_equal(MPI_Type_vector(3, 2, 4, MPI_INT, &t), MPI_SUCCESS);
    assert_shape(t, 0, 40, 0, 40, 24);
    assert_false(dt(t)->contig);
    assert_int_equal(nblocks(t), 3);
    assert_int_equal(block_off(t, 1), 16);
    assert_int_equal(block_len(t, 1), 8);
    free_type(&t);
}

static void test_vector_with_negative_stride_has_negative_lb(void **state)
{
    MPI_Datatype t;
    (void)state;
    /* Blocks at 0 and -12 bytes: lb -12, ub 4 (MPICH gives the same). */
    assert_int_equal(MPI_Type_vector(2, 1, -3, MPI_INT, &t), MPI_SUCCESS);
    assert_shape(t, -12, 16, -12, 16, 8);
    free_type(&t);
}

static void test_hvector_stride_is_in_bytes(void **state)
{
    MPI_Datatype t;
    (void)state;
    /* Doubles at 0 and 20: ub 28. */
    assert_int_equal(MPI_Type_create_hvector(2, 1, 20, MPI_DOUBLE, &t), MPI_SUCCESS);
    assert_shape(t, 0, 28, 0, 28, 16);
    free_type(&t);
}

static void test_indexed_keeps_typemap_order(void **state)
{
    MPI_Datatype t;
    int bl[2] = {2, 1}, disp[2] = {3, 0};
    (void)state;
    /* Ints 3,4 then int 0: bytes [12,20) then [0,4); lb 0, ub 20. */
    assert_int_equal(MPI_Type_indexed(2, bl, disp, MPI_INT, &t), MPI_SUCCESS);
    assert_shape(t, 0, 20, 0, 20, 12);
    assert_int_equal(block_off(t, 0), 12);
    assert_int_equal(block_off(t, 1), 0);
    free_type(&t);
}

static void test_hindexed_and_block_variants(void **state)
{
    MPI_Datatype a, b, c;
    int bl[2] = {1, 1}, idisp[3] = {0, 5, 10};
    MPI_Aint hdisp[2] = {8, 0}, hdisp2[2] = {4, 16};
    (void)state;
    /* Shorts at 8 and 0: ub 10. */
    assert_int_equal(MPI_Type_create_hindexed(2, bl, hdisp, MPI_SHORT, &a), MPI_SUCCESS);
    assert_shape(a, 0, 10, 0, 10, 4);
    /* Pairs of floats at elements 0, 5, 10: ub (10 + 2) * 4 = 48. */
    assert_int_equal(MPI_Type_create_indexed_block(3, 2, idisp, MPI_FLOAT, &b), MPI_SUCCESS);
    assert_shape(b, 0, 48, 0, 48, 24);
    /* Ints at bytes 4 and 16: lb 4, ub 20. */
    assert_int_equal(MPI_Type_create_hindexed_block(2, 1, hdisp2, MPI_INT, &c), MPI_SUCCESS);
    assert_shape(c, 4, 16, 4, 16, 8);
    free_type(&a);
    free_type(&b);
    free_type(&c);
}

static void test_struct_extent_is_padded_to_alignment(void **state)
{
    MPI_Datatype t;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 4};
    MPI_Datatype types[2] = {MPI_INT, MPI_CHAR};
    (void)state;
    /* Data [0,5); the int's alignment 4 rounds ub up to 8 (as MPICH does). */
    assert_int_equal(MPI_Type_create_struct(2, bl, disp, types, &t), MPI_SUCCESS);
    assert_shape(t, 0, 8, 0, 5, 5);
    free_type(&t);
}

static void test_struct_of_mixed_types_has_no_base_type(void **state)
{
    MPI_Datatype t, c;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {0, 8};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    (void)state;
    /* int at 0, gap [4,8), double at 8: size 12, extent 16. */
    assert_int_equal(MPI_Type_create_struct(2, bl, disp, types, &t), MPI_SUCCESS);
    assert_shape(t, 0, 16, 0, 16, 12);
    assert_int_equal(dt(t)->base, PG_DTYPE_NONE);
    assert_int_equal(nblocks(t), 2);
    assert_int_equal(MPI_Type_contiguous(4, MPI_DOUBLE, &c), MPI_SUCCESS);
    assert_int_equal(dt(c)->base, PG_DOUBLE);
    assert_int_equal(dt(c)->base_per_elem, 4);
    free_type(&t);
    free_type(&c);
}

static void test_subarray_in_c_order(void **state)
{
    MPI_Datatype t;
    int sizes[2] = {4, 5}, sub[2] = {2, 3}, starts[2] = {1, 2};
    (void)state;
    /* Rows 1..2, columns 2..4 of int[4][5]: runs at elements 7 and 12, 3 ints each.
     * Extent is the whole array (80); true bounds [28, 60). */
    assert_int_equal(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t),
                     MPI_SUCCESS);
    assert_shape(t, 0, 80, 28, 32, 24);
    assert_int_equal(nblocks(t), 2);
    free_type(&t);
}

static void test_subarray_in_fortran_order(void **state)
{
    MPI_Datatype t;
    int sizes[2] = {4, 5}, sub[2] = {2, 3}, starts[2] = {1, 2};
    (void)state;
    /* Dimension 0 varies fastest: runs of 2 at elements 1 + 4 * (2, 3, 4) = 9, 13, 17;
     * true bounds [36, 76). */
    assert_int_equal(
        MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_FORTRAN, MPI_INT, &t),
        MPI_SUCCESS);
    assert_shape(t, 0, 80, 36, 40, 24);
    assert_int_equal(nblocks(t), 3);
    free_type(&t);
}

static void test_resized_changes_extent_not_size(void **state)
{
    MPI_Datatype t;
    (void)state;
    assert_int_equal(MPI_Type_create_resized(MPI_INT, -4, 16, &t), MPI_SUCCESS);
    assert_shape(t, -4, 16, 0, 4, 4);
    assert_false(dt(t)->contig);
    free_type(&t);
}

static void test_lb_and_ub_markers_set_bounds_in_type_struct(void **state)
{
    MPI_Datatype t;
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {-8, 0, 16};
    MPI_Datatype types[3] = {MPI_LB, MPI_INT, MPI_UB};
    (void)state;
    assert_int_equal(MPI_Type_struct(3, bl, disp, types, &t), MPI_SUCCESS);
    assert_shape(t, -8, 24, 0, 4, 4);
    free_type(&t);
}

static void test_pair_type_packs_its_signature_without_padding(void **state)
{
    struct {
        short v;
        int i;
    } si[2] = {{-5, 7}, {9, -11}}, back[2];
    char packed[12];
    short s;
    int i;
    (void)state;
    /* MPI_DOUBLE_INT: 12 bytes of data in a 16-byte struct; packed, only the 12. */
    assert_shape(MPI_DOUBLE_INT, 0, 16, 0, 12, 12);
    assert_int_equal(dt(MPI_DOUBLE_INT)->size, 12);
    assert_false(dt(MPI_DOUBLE_INT)->contig);
    assert_int_equal(dt(MPI_DOUBLE_INT)->base, PG_DOUBLE_INT);
    /* MPI_SHORT_INT: the padding sits between the short and the int. */
    assert_shape(MPI_SHORT_INT, 0, 8, 0, 8, 6);
    shim_dtype_pack(si, 2, dt(MPI_SHORT_INT), packed);
    memcpy(&s, packed + 6, sizeof(s));
    memcpy(&i, packed + 8, sizeof(i));
    assert_int_equal(s, 9);
    assert_int_equal(i, -11);
    memset(back, 0, sizeof(back));
    shim_dtype_unpack(packed, 2, dt(MPI_SHORT_INT), back);
    assert_int_equal(back[0].v, -5);
    assert_int_equal(back[0].i, 7);
    assert_int_equal(back[1].v, 9);
    assert_int_equal(back[1].i, -11);
    /* MPI_FLOAT_INT has no padding: still one dense block. */
    assert_true(dt(MPI_FLOAT_INT)->contig);
}

static void test_nested_and_pair_shapes_match_mpich(void **state)
{
    MPI_Datatype r, c, s1, s2;
    int bl[2] = {1, 1};
    MPI_Aint d0[1] = {0}, d2[2] = {0, 4};
    MPI_Datatype pair[1] = {MPI_DOUBLE_INT}, cs[2] = {MPI_CHAR, MPI_SHORT};
    (void)state;
    /* Two ints 6 bytes apart: data [0,4) [6,10), extent 12 (MPICH 4.0.2 prints the same). */
    assert_int_equal(MPI_Type_create_resized(MPI_INT, 0, 6, &r), MPI_SUCCESS);
    assert_int_equal(MPI_Type_contiguous(2, r, &c), MPI_SUCCESS);
    assert_shape(c, 0, 12, 0, 10, 8);
    /* A struct holding one MPI_DOUBLE_INT keeps its 16-byte extent and 12-byte true extent. */
    assert_int_equal(MPI_Type_create_struct(1, bl, d0, pair, &s1), MPI_SUCCESS);
    assert_shape(s1, 0, 16, 0, 12, 12);
    /* char at 0, short at 4: ub 6 is already a multiple of the short's alignment. */
    assert_int_equal(MPI_Type_create_struct(2, bl, d2, cs, &s2), MPI_SUCCESS);
    assert_shape(s2, 0, 6, 0, 6, 3);
    free_type(&r);
    free_type(&c);
    free_type(&s1);
    free_type(&s2);
}

static void test_zero_count_gives_an_empty_type(void **state)
{
    MPI_Datatype t;
    (void)state;
    assert_int_equal(MPI_Type_contiguous(0, MPI_INT, &t), MPI_SUCCESS);
    assert_shape(t, 0, 0, 0, 0, 0);
    free_type(&t);
}

/* ---- Pack and unpack. ---- */

static void test_vector_pack_unpack_round_trip(void **state)
{
    MPI_Datatype t;
    int src[10], packed[3], back[10] = {0};
    (void)state;
    for (int i = 0; i < 10; i++) {
        src[i] = 100 + i;
    }
    assert_int_equal(MPI_Type_vector(3, 1, 3, MPI_INT, &t), MPI_SUCCESS);
    shim_dtype_pack(src, 1, dt(t), packed);
    assert_int_equal(packed[0], 100);
    assert_int_equal(packed[1], 103);
    assert_int_equal(packed[2], 106);
    shim_dtype_unpack(packed, 1, dt(t), back);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(back[i], i % 3 == 0 && i < 7 ? 100 + i : 0);
    }
    free_type(&t);
}

static void test_indexed_packs_in_typemap_order(void **state)
{
    MPI_Datatype t;
    int bl[2] = {2, 1}, disp[2] = {3, 0}, src[10], packed[6];
    (void)state;
    for (int i = 0; i < 10; i++) {
        src[i] = i;
    }
    assert_int_equal(MPI_Type_indexed(2, bl, disp, MPI_INT, &t), MPI_SUCCESS);
    /* Two elements, extent 20 bytes = 5 ints: {3,4,0} then {8,9,5}. */
    shim_dtype_pack(src, 2, dt(t), packed);
    int want[6] = {3, 4, 0, 8, 9, 5};
    assert_memory_equal(packed, want, sizeof(want));
    free_type(&t);
}

struct rec {
    int i;
    double d;
};

static void test_struct_pack_skips_padding(void **state)
{
    MPI_Datatype t;
    int bl[2] = {1, 1};
    MPI_Aint disp[2] = {offsetof(struct rec, i), offsetof(struct rec, d)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    struct rec src[2] = {{7, 1.5}, {-3, 2.25}}, back[2];
    unsigned char packed[24], want[24];
    (void)state;
    assert_int_equal(MPI_Type_create_struct(2, bl, disp, types, &t), MPI_SUCCESS);
    assert_int_equal(dt(t)->size, 12);
    shim_dtype_pack(src, 2, dt(t), packed);
    memcpy(want, &src[0].i, 4);
    memcpy(want + 4, &src[0].d, 8);
    memcpy(want + 12, &src[1].i, 4);
    memcpy(want + 16, &src[1].d, 8);
    assert_memory_equal(packed, want, 24);
    memset(back, 0, sizeof(back));
    shim_dtype_unpack(packed, 2, dt(t), back);
    assert_int_equal(back[1].i, -3);
    assert_true(back[1].d == 2.25);
    free_type(&t);
}

static void test_subarray_pack_takes_the_submatrix(void **state)
{
    MPI_Datatype t;
    int m[4][5], packed[6], sizes[2] = {4, 5}, sub[2] = {2, 3}, starts[2] = {1, 2};
    (void)state;
    for (int i = 0; i < 4; i++) {
        for (int j = 0; j < 5; j++) {
            m[i][j] = 10 * i + j;
        }
    }
    assert_int_equal(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t),
                     MPI_SUCCESS);
    shim_dtype_pack(m, 1, dt(t), packed);
    int want[6] = {12, 13, 14, 22, 23, 24};
    assert_memory_equal(packed, want, sizeof(want));
    free_type(&t);
}

static void test_partial_pack_resumes_mid_block(void **state)
{
    MPI_Datatype t;
    int src[10], packed[6] = {0};
    (void)state;
    for (int i = 0; i < 10; i++) {
        src[i] = i;
    }
    /* vector(2, 2, 3): element 0 packs ints {0,1,3,4}, element 1 (20 bytes on) {5,6,8,9}.
     * Packed bytes 6..26 are the last 2 bytes of int 1, ints 3, 4, 5, 6 and 2 bytes of 8. */
    assert_int_equal(MPI_Type_vector(2, 2, 3, MPI_INT, &t), MPI_SUCCESS);
    size_t n = shim_dtype_pack_partial(src, 2, dt(t), 6, packed, 20);
    assert_int_equal(n, 20);
    int got[4];
    memcpy(got, (char *)packed + 2, sizeof(got));
    int want[4] = {3, 4, 5, 6};
    assert_memory_equal(got, want, sizeof(want));
    /* Past the end nothing is copied. */
    assert_int_equal(shim_dtype_pack_partial(src, 2, dt(t), 32, packed, 8), 0);
    free_type(&t);
}

static void test_mpi_pack_advances_position_and_detects_overflow(void **state)
{
    int a[3] = {1, 2, 3}, b[3] = {0};
    char buf[16];
    int pos = 0;
    (void)state;
    assert_int_equal(MPI_Pack(a, 3, MPI_INT, buf, sizeof(buf), &pos, MPI_COMM_WORLD),
                     MPI_SUCCESS);
    assert_int_equal(pos, 12);
    assert_int_equal(MPI_Pack(a, 2, MPI_INT, buf, sizeof(buf), &pos, MPI_COMM_WORLD),
                     MPI_ERR_TRUNCATE);
    assert_int_equal(pos, 12);
    pos = 0;
    assert_int_equal(MPI_Unpack(buf, 12, &pos, b, 3, MPI_INT, MPI_COMM_WORLD), MPI_SUCCESS);
    assert_memory_equal(a, b, sizeof(a));
    assert_int_equal(MPI_Unpack(buf, 12, &pos, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TRUNCATE);
    int size = 0;
    assert_int_equal(MPI_Pack_size(5, MPI_DOUBLE, MPI_COMM_WORLD, &size), MPI_SUCCESS);
    assert_int_equal(size, 40);
}

/* ---- Handles, lifetime, commit. ---- */

static void test_freed_type_gives_err_type(void **state)
{
    MPI_Datatype t, old;
    int size;
    struct shim_dtype *p;
    (void)state;
    assert_int_equal(MPI_Type_contiguous(2, MPI_INT, &t), MPI_SUCCESS);
    old = t;
    free_type(&t);
    assert_int_equal(MPI_Type_size(old, &size), MPI_ERR_TYPE);
    assert_int_equal(shim_dtype_lookup(old, &p), MPI_ERR_TYPE);
    assert_int_equal(MPI_Type_free(&t), MPI_ERR_TYPE);
    /* The next type may reuse the slot, but not the handle value. */
    assert_int_equal(MPI_Type_contiguous(2, MPI_INT, &t), MPI_SUCCESS);
    assert_int_not_equal(t, old);
    assert_int_equal(MPI_Type_size(old, &size), MPI_ERR_TYPE);
    free_type(&t);
}

static void test_handles_differ_from_builtins_and_null(void **state)
{
    MPI_Datatype t;
    (void)state;
    assert_int_equal(MPI_Type_contiguous(1, MPI_INT, &t), MPI_SUCCESS);
    assert_int_not_equal(t, MPI_DATATYPE_NULL);
    assert_null(shim_dtype_builtin_name(t));
    assert_int_equal(MPISHIM_HANDLE_OBJ(t), MPISHIM_OBJ_DATATYPE);
    free_type(&t);
    assert_int_equal(MPI_Type_free(&(MPI_Datatype){MPI_INT}), MPI_ERR_TYPE);
}

static void test_uncommitted_type_rejected_for_communication(void **state)
{
    MPI_Datatype t;
    struct shim_dtype *p = NULL;
    (void)state;
    assert_int_equal(MPI_Type_vector(2, 1, 2, MPI_INT, &t), MPI_SUCCESS);
    assert_int_equal(shim_dtype_check_comm(t, &p), MPI_ERR_TYPE);
    assert_int_equal(MPI_Type_commit(&t), MPI_SUCCESS);
    assert_int_equal(shim_dtype_check_comm(t, &p), MPI_SUCCESS);
    assert_ptr_equal(p, dt(t));
    assert_int_equal(shim_dtype_check_comm(MPI_DOUBLE, &p), MPI_SUCCESS);
    assert_int_equal(shim_dtype_check_comm(MPI_DATATYPE_NULL, &p), MPI_ERR_TYPE);
    assert_int_equal(shim_dtype_check_comm(MPI_UB, &p), MPI_ERR_TYPE);
    free_type(&t);
}

static void test_type_used_by_a_pending_operation_survives_free(void **state)
{
    MPI_Datatype t;
    int src[4] = {1, 2, 3, 4}, out[2];
    (void)state;
    assert_int_equal(MPI_Type_vector(2, 1, 2, MPI_INT, &t), MPI_SUCCESS);
    struct shim_dtype *p = dt(t);
    shim_dtype_retain(p);
    free_type(&t);
    shim_dtype_pack(src, 1, p, out);
    assert_int_equal(out[1], 3);
    shim_dtype_release(p);
}

static void test_get_contents_returns_a_live_handle_for_a_freed_old_type(void **state)
{
    MPI_Datatype v, c, got;
    int ni, na, nd, comb, ints[1];
    MPI_Aint aints[1];
    (void)state;
    assert_int_equal(MPI_Type_vector(3, 2, 4, MPI_INT, &v), MPI_SUCCESS);
    assert_int_equal(MPI_Type_contiguous(2, v, &c), MPI_SUCCESS);
    free_type(&v);
    assert_int_equal(MPI_Type_get_envelope(c, &ni, &na, &nd, &comb), MPI_SUCCESS);
    assert_int_equal(comb, MPI_COMBINER_CONTIGUOUS);
    assert_int_equal(ni, 1);
    assert_int_equal(na, 0);
    assert_int_equal(nd, 1);
    assert_int_equal(MPI_Type_get_contents(c, 1, 1, 1, ints, aints, &got), MPI_SUCCESS);
    assert_int_equal(ints[0], 2);
    assert_shape(got, 0, 40, 0, 40, 24);
    free_type(&got);
    free_type(&c);
}

static void test_envelope_of_vector_and_struct(void **state)
{
    MPI_Datatype v, s, types[2] = {MPI_INT, MPI_DOUBLE}, got[2];
    int ni, na, nd, comb, ints[3], bl[2] = {1, 2};
    MPI_Aint disp[2] = {0, 8}, aints[2];
    (void)state;
    assert_int_equal(MPI_Type_vector(3, 2, 4, MPI_INT, &v), MPI_SUCCESS);
    assert_int_equal(MPI_Type_get_envelope(v, &ni, &na, &nd, &comb), MPI_SUCCESS);
    assert_int_equal(comb, MPI_COMBINER_VECTOR);
    assert_int_equal(ni, 3);
    assert_int_equal(MPI_Type_get_contents(v, 3, 0, 1, ints, aints, got), MPI_SUCCESS);
    assert_int_equal(ints[0], 3);
    assert_int_equal(ints[1], 2);
    assert_int_equal(ints[2], 4);
    assert_int_equal(got[0], MPI_INT);
    assert_int_equal(MPI_Type_create_struct(2, bl, disp, types, &s), MPI_SUCCESS);
    assert_int_equal(MPI_Type_get_envelope(s, &ni, &na, &nd, &comb), MPI_SUCCESS);
    assert_int_equal(comb, MPI_COMBINER_STRUCT);
    assert_int_equal(ni, 3);
    assert_int_equal(na, 2);
    assert_int_equal(nd, 2);
    assert_int_equal(MPI_Type_get_contents(s, 3, 2, 2, ints, aints, got), MPI_SUCCESS);
    assert_int_equal(ints[2], 2);
    assert_int_equal(aints[1], 8);
    assert_int_equal(got[1], MPI_DOUBLE);
    assert_int_equal(MPI_Type_get_envelope(MPI_INT, &ni, &na, &nd, &comb), MPI_SUCCESS);
    assert_int_equal(comb, MPI_COMBINER_NAMED);
    assert_int_equal(MPI_Type_get_contents(MPI_INT, 0, 0, 0, ints, aints, got), MPI_ERR_TYPE);
    free_type(&v);
    free_type(&s);
}

static void test_dup_keeps_typemap_and_commit_state(void **state)
{
    MPI_Datatype v, d;
    int ni, na, nd, comb;
    (void)state;
    assert_int_equal(MPI_Type_vector(2, 1, -3, MPI_INT, &v), MPI_SUCCESS);
    assert_int_equal(MPI_Type_commit(&v), MPI_SUCCESS);
    assert_int_equal(MPI_Type_dup(v, &d), MPI_SUCCESS);
    assert_shape(d, -12, 16, -12, 16, 8);
    assert_true(dt(d)->committed);
    assert_int_equal(MPI_Type_get_envelope(d, &ni, &na, &nd, &comb), MPI_SUCCESS);
    assert_int_equal(comb, MPI_COMBINER_DUP);
    free_type(&v);
    free_type(&d);
}

static void test_names_of_predefined_and_derived_types(void **state)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len;
    MPI_Datatype t;
    (void)state;
    assert_int_equal(MPI_Type_get_name(MPI_CHAR, name, &len), MPI_SUCCESS);
    assert_string_equal(name, "MPI_CHAR");
    assert_int_equal(len, 8);
    assert_int_equal(MPI_Type_get_name(MPI_LONG_DOUBLE_INT, name, &len), MPI_SUCCESS);
    assert_string_equal(name, "MPI_LONG_DOUBLE_INT");
    assert_int_equal(MPI_Type_contiguous(2, MPI_INT, &t), MPI_SUCCESS);
    assert_int_equal(MPI_Type_get_name(t, name, &len), MPI_SUCCESS);
    assert_int_equal(len, 0);
    assert_int_equal(MPI_Type_set_name(t, "pair"), MPI_SUCCESS);
    assert_int_equal(MPI_Type_get_name(t, name, &len), MPI_SUCCESS);
    assert_string_equal(name, "pair");
    free_type(&t);
}

static void test_builtin_mapping_to_pg_types(void **state)
{
    (void)state;
    assert_int_equal(dt(MPI_CHAR)->base, PG_INT8);
    assert_int_equal(dt(MPI_BYTE)->base, PG_BYTE);
    assert_int_equal(dt(MPI_PACKED)->base, PG_BYTE);
    assert_int_equal(dt(MPI_LONG)->base, PG_INT64);
    assert_int_equal(dt(MPI_WCHAR)->base, PG_INT32);
    assert_int_equal(dt(MPI_COUNT)->base, PG_INT64);
    assert_int_equal(dt(MPI_C_BOOL)->base, PG_BOOL);
    assert_int_equal(dt(MPI_UINT16_T)->base, PG_UINT16);
    assert_int_equal(dt(MPI_C_DOUBLE_COMPLEX)->base, PG_C_DOUBLE_COMPLEX);
    assert_int_equal(dt(MPI_2INT)->base, PG_2INT);
    assert_int_equal(dt(MPI_LONG_DOUBLE)->size, 16);
    assert_int_equal(dt(MPI_C_LONG_DOUBLE_COMPLEX)->size, 32);
    assert_int_equal(shim_dtype_lookup(MPI_DATATYPE_NULL, &(struct shim_dtype *){NULL}),
                     MPI_ERR_TYPE);
    assert_int_equal(shim_dtype_lookup(0x4c0004ff, &(struct shim_dtype *){NULL}), MPI_ERR_TYPE);
}

static void test_constructor_argument_errors(void **state)
{
    MPI_Datatype t;
    int bl[1] = {-1}, disp[1] = {0};
    (void)state;
    assert_int_equal(MPI_Type_contiguous(-1, MPI_INT, &t), MPI_ERR_COUNT);
    assert_int_equal(MPI_Type_contiguous(1, MPI_DATATYPE_NULL, &t), MPI_ERR_TYPE);
    assert_int_equal(MPI_Type_vector(1, -2, 1, MPI_INT, &t), MPI_ERR_ARG);
    assert_int_equal(MPI_Type_indexed(1, bl, disp, MPI_INT, &t), MPI_ERR_ARG);
    int sizes[1] = {4}, sub[1] = {5}, starts[1] = {0};
    assert_int_equal(MPI_Type_create_subarray(1, sizes, sub, starts, MPI_ORDER_C, MPI_INT, &t),
                     MPI_ERR_ARG);
    /* Distribution 4 is none of BLOCK, CYCLIC, NONE (and psizes {4} is not size 1). */
    assert_int_equal(MPI_Type_create_darray(1, 0, 1, sizes, sizes, sizes, sizes, MPI_ORDER_C,
                                            MPI_INT, &t),
                     MPI_ERR_ARG);
}

static void test_elements_counts_basic_elements(void **state)
{
    MPI_Datatype t;
    (void)state;
    assert_int_equal(shim_dtype_elements(dt(MPI_INT), 20), 5);
    assert_int_equal(MPI_Type_contiguous(2, MPI_INT, &t), MPI_SUCCESS);
    assert_int_equal(shim_dtype_elements(dt(t), 12), 3); /* one whole pair and one int */
    assert_int_equal(shim_dtype_elements(dt(t), 6), MPI_UNDEFINED);
    /* A pair type counts its value and its index: 2 per element. */
    assert_int_equal(shim_dtype_elements(dt(MPI_DOUBLE_INT), 24), 4);
    free_type(&t);
}

static void test_address_arithmetic_and_match_size(void **state)
{
    double a[4] = {0};
    MPI_Aint p0, p2;
    MPI_Datatype t;
    (void)state;
    assert_int_equal(MPI_Get_address(&a[0], &p0), MPI_SUCCESS);
    assert_int_equal(MPI_Get_address(&a[2], &p2), MPI_SUCCESS);
    assert_int_equal(MPI_Aint_diff(p2, p0), 16);
    assert_int_equal(MPI_Aint_add(p0, 16), p2);
    assert_int_equal(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &t), MPI_SUCCESS);
    assert_int_equal(t, MPI_DOUBLE);
    assert_int_equal(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 2, &t), MPI_SUCCESS);
    assert_int_equal(t, MPI_INT16_T);
    assert_int_equal(MPI_Type_match_size(MPI_TYPECLASS_INTEGER, 3, &t), MPI_ERR_ARG);
}

/* ---- Info. ---- */

/* ---- The compact form: memory that does not grow with the block count. ---- */

/* Limits the address space to what the process maps now plus extra bytes, so that an engine
 * that allocates in proportion to the block count fails (out of memory) instead of passing
 * or swapping. Not under the sanitizers: their shadow memory needs terabytes of address
 * space. Returns whether the limit is in force; *old is what to restore. */
static bool limit_address_space(size_t extra, struct rlimit *old)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    (void)extra;
    (void)old;
    return false;
#else
    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%lu", &pages) != 1 || getrlimit(RLIMIT_AS, old) != 0) {
        if (f) {
            fclose(f);
        }
        return false;
    }
    fclose(f);
    struct rlimit lim = {pages * 4096ul + extra, old->rlim_max};
    return setrlimit(RLIMIT_AS, &lim) == 0;
#endif
}

static void restore_address_space(bool limited, const struct rlimit *old)
{
    if (limited) {
        assert_int_equal(setrlimit(RLIMIT_AS, old), 0);
    }
}

/* The byte at address i of the test buffers: a hash, so that a misplaced byte shows. */
static unsigned char pattern(size_t i)
{
    return (unsigned char)((i * 2654435761u) >> 13);
}

static void test_vector_of_2_30_chars_commits_in_a_few_hundred_bytes(void **state)
{
    const size_t n = (size_t)1 << 30, span = 2 * n - 1;
    MPI_Datatype t;
    struct rlimit old;
    unsigned char out[4096];
    (void)state;
    /* One entry per block would be 2^30 x 16 bytes: far past the 64 MiB allowed here. */
    bool limited = limit_address_space(64u << 20, &old);
    int rc = MPI_Type_vector((int)n, 1, 2, MPI_CHAR, &t);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_commit(&t);
    }
    restore_address_space(limited, &old);
    assert_int_equal(rc, MPI_SUCCESS);
    /* Blocks at 0, 2, ..., 2^31 - 2: extent 2^31 - 1, size 2^30. */
    assert_shape(t, 0, (MPI_Aint)span, 0, (MPI_Aint)span, (int)n);
    assert_true(shim_dtype_mem_bytes(dt(t)) < 1024);
    print_message("vector of 2^30 chars: %zu bytes\n", shim_dtype_mem_bytes(dt(t)));
    /* Packs pieces from the middle and the end of a 2 GiB mapping that is never touched
     * elsewhere (untouched pages cost no memory): the seek must not walk the blocks. */
    unsigned char *buf = mmap(NULL, span, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (buf == MAP_FAILED) {
        print_message("skipped the packing: no 2 GiB of address space to map\n");
        free_type(&t);
        return;
    }
    size_t skips[3] = {n / 2 + 12345, n - sizeof(out), 7};
    for (int k = 0; k < 3; k++) {
        for (size_t j = 0; j < sizeof(out); j++) {
            buf[2 * (skips[k] + j)] = pattern(skips[k] + j);
        }
        memset(out, 0, sizeof(out));
        assert_int_equal(shim_dtype_pack_partial(buf, 1, dt(t), skips[k], out, sizeof(out)),
                         sizeof(out));
        for (size_t j = 0; j < sizeof(out); j++) {
            assert_int_equal(out[j], pattern(skips[k] + j));
        }
    }
    munmap(buf, span);
    free_type(&t);
}

static void test_vector_of_2_24_chars_packs_every_byte_without_growing(void **state)
{
    const size_t n = (size_t)1 << 24;
    MPI_Datatype t;
    struct rlimit old;
    int pos = 0;
    unsigned char *buf = malloc(2 * n), *out = malloc(n), piece[65537];
    (void)state;
    assert_non_null(buf);
    assert_non_null(out);
    for (size_t i = 0; i < 2 * n; i++) {
        buf[i] = pattern(i);
    }
    /* The buffers are allocated: 16 MiB more is all the type and the packing may take. */
    bool limited = limit_address_space(16u << 20, &old);
    int rc = MPI_Type_vector((int)n, 1, 2, MPI_CHAR, &t);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_commit(&t);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Pack(buf, 1, t, out, (int)n, &pos, MPI_COMM_WORLD);
    }
    restore_address_space(limited, &old);
    assert_int_equal(rc, MPI_SUCCESS);
    assert_int_equal(pos, (int)n);
    assert_true(shim_dtype_mem_bytes(dt(t)) < 1024);
    for (size_t i = 0; i < n; i++) {
        if (out[i] != pattern(2 * i)) {
            fail_msg("packed byte %zu is %u, not the buffer's byte %zu (%u)", i, out[i], 2 * i,
                     pattern(2 * i));
        }
    }
    /* In pieces of odd sizes: the same bytes as the one-shot pack. */
    static const size_t sizes[] = {1, 7, 65537, 4093, 13, 60001};
    size_t skip = 0;
    for (int k = 0; skip < n; k = (k + 1) % 6) {
        size_t got = shim_dtype_pack_partial(buf, 1, dt(t), skip, piece, sizes[k]);
        assert_int_equal(got, sizes[k] < n - skip ? sizes[k] : n - skip);
        assert_memory_equal(piece, out + skip, got);
        skip += got;
    }
    /* Unpacked into a cleared buffer: even bytes back, odd bytes untouched. */
    memset(buf, 0, 2 * n);
    pos = 0;
    assert_int_equal(MPI_Unpack(out, (int)n, &pos, buf, 1, t, MPI_COMM_WORLD), MPI_SUCCESS);
    for (size_t i = 0; i < 2 * n; i++) {
        if (buf[i] != (i % 2 ? 0 : pattern(i))) {
            fail_msg("unpacked byte %zu is %u", i, buf[i]);
        }
    }
    free(buf);
    free(out);
    free_type(&t);
}

/* The nested type below, {double, int, char} structs in a vector in an hvector, described
 * independently: the (offset, size) of every basic element of count elements, in typemap
 * order. */
#define NEST_COUNT 3
#define NEST_VEC 100                                        /* inner: 100 blocks of 2, stride 3 */
#define NEST_IEXT ((NEST_VEC - 1) * 3 * 16 + 2 * 16)        /* 4784 */
#define NEST_OSTRIDE (2 * NEST_IEXT + 40)                   /* outer: 5 blocks of 2 inner */
#define NEST_EXT (4 * NEST_OSTRIDE + 2 * NEST_IEXT)         /* 48000 */
#define NEST_BASICS (NEST_COUNT * 5 * 2 * NEST_VEC * 2 * 3) /* 18000 */

struct basic {
    size_t off, len;
};

static size_t nest_reference(struct basic *list)
{
    size_t n = 0;
    for (size_t e = 0; e < NEST_COUNT; e++) {
        for (size_t r = 0; r < 5; r++) {
            for (size_t j = 0; j < 2; j++) {
                for (size_t v = 0; v < NEST_VEC; v++) {
                    for (size_t b = 0; b < 2; b++) {
                        size_t s =
                            e * NEST_EXT + r * NEST_OSTRIDE + j * NEST_IEXT + v * 48 + b * 16;
                        list[n++] = (struct basic){s, 8};
                        list[n++] = (struct basic){s + 8, 4};
                        list[n++] = (struct basic){s + 12, 1};
                    }
                }
            }
        }
    }
    return n;
}

static MPI_Datatype nest_type(void)
{
    MPI_Datatype s, inner, outer;
    int bl[3] = {1, 1, 1};
    MPI_Aint disp[3] = {0, 8, 12};
    MPI_Datatype types[3] = {MPI_DOUBLE, MPI_INT, MPI_CHAR};
    assert_int_equal(MPI_Type_create_struct(3, bl, disp, types, &s), MPI_SUCCESS);
    assert_int_equal(MPI_Type_vector(NEST_VEC, 2, 3, s, &inner), MPI_SUCCESS);
    assert_int_equal(MPI_Type_create_hvector(5, 2, NEST_OSTRIDE, inner, &outer), MPI_SUCCESS);
    assert_int_equal(MPI_Type_commit(&outer), MPI_SUCCESS);
    free_type(&s);
    free_type(&inner);
    return outer;
}

/* The basic elements wholly in the first nbytes packed bytes, or MPI_UNDEFINED. */
static MPI_Count nest_elements(const struct basic *list, size_t n, size_t nbytes)
{
    size_t pos = 0, k = 0;
    while (k < n && pos + list[k].len <= nbytes) {
        pos += list[k++].len;
    }
    return pos == nbytes ? (MPI_Count)k : MPI_UNDEFINED;
}

static void test_nested_vector_of_struct_matches_a_naive_packer(void **state)
{
    struct basic *list = malloc(NEST_BASICS * sizeof(*list));
    size_t nb = nest_reference(list), psize = 0;
    unsigned char *buf = malloc(NEST_COUNT * NEST_EXT), *ref = malloc(NEST_COUNT * NEST_EXT);
    unsigned char *packed = malloc(NEST_BASICS * 8), *want = malloc(NEST_BASICS * 8);
    (void)state;
    assert_int_equal(nb, NEST_BASICS);
    for (size_t i = 0; i < NEST_COUNT * NEST_EXT; i++) {
        buf[i] = pattern(i);
    }
    memset(ref, 0, NEST_COUNT * NEST_EXT);
    for (size_t k = 0; k < nb; k++) {
        memcpy(want + psize, buf + list[k].off, list[k].len);
        memcpy(ref + list[k].off, buf + list[k].off, list[k].len);
        psize += list[k].len;
    }
    MPI_Datatype t = nest_type();
    assert_shape(t, 0, NEST_EXT, 0, NEST_EXT - 3, (int)(psize / NEST_COUNT));
    /* One entry per block (2000 of 13 bytes) or per signature run (6000) would be tens of
     * kilobytes; the compact form is three small types. */
    print_message("nested type: %zu bytes\n", shim_dtype_mem_bytes(dt(t)));
    assert_true(shim_dtype_mem_bytes(dt(t)) < 4096);

    int pos = 0;
    assert_int_equal(MPI_Pack(buf, NEST_COUNT, t, packed, (int)psize, &pos, MPI_COMM_WORLD),
                     MPI_SUCCESS);
    assert_int_equal(pos, (int)psize);
    assert_memory_equal(packed, want, psize);

    /* Pieces of odd sizes, packed and unpacked: the same bytes as the reference. */
    static const size_t sizes[] = {1, 7, 13, 4093, 333, 5};
    unsigned char *typed = calloc(NEST_COUNT * NEST_EXT, 1);
    memset(packed, 0, psize);
    for (size_t skip = 0, k = 0, got; skip < psize; skip += got, k = (k + 1) % 6) {
        got = shim_dtype_pack_partial(buf, NEST_COUNT, dt(t), skip, packed + skip, sizes[k]);
        assert_int_equal(got, sizes[k] < psize - skip ? sizes[k] : psize - skip);
        assert_int_equal(
            shim_dtype_unpack_partial(want + skip, NEST_COUNT, dt(t), skip, typed, sizes[k]), got);
    }
    assert_memory_equal(packed, want, psize);
    assert_memory_equal(typed, ref, NEST_COUNT * NEST_EXT);

    /* The iterator's pieces (at most 5 bytes each), read from buf, are the packed bytes. */
    struct shim_dtype_iter it;
    MPI_Aint off;
    size_t len, at = 0;
    shim_dtype_iter_init(&it, dt(t), NEST_COUNT);
    while (shim_dtype_iter_next(&it, 5, &off, &len)) {
        assert_true(len > 0 && len <= 5 && at + len <= psize);
        assert_memory_equal(buf + off, want + at, len);
        at += len;
    }
    assert_int_equal(at, psize);

    /* MPI_Get_elements' count of partial messages, mixed types. */
    static const size_t nbytes[] = {0,    8,    9, 12, 13, 26000, 26008, 26012, 52000 + 13 * 7 + 12,
                                    5555, 78000};
    for (size_t k = 0; k < sizeof(nbytes) / sizeof(*nbytes); k++) {
        assert_int_equal(shim_dtype_elements(dt(t), nbytes[k]), nest_elements(list, nb, nbytes[k]));
    }

    /* external32: every number big-endian, in typemap order; and back. */
    MPI_Aint xpos = 0, xsize = 0;
    assert_int_equal(MPI_Pack_external_size("external32", NEST_COUNT, t, &xsize), MPI_SUCCESS);
    assert_int_equal(xsize, (MPI_Aint)psize);
    assert_int_equal(MPI_Pack_external("external32", buf, NEST_COUNT, t, packed, xsize, &xpos),
                     MPI_SUCCESS);
    for (size_t k = 0, p = 0; k < nb; p += list[k++].len) {
        for (size_t b = 0; b < list[k].len; b++) {
            assert_int_equal(packed[p + b], buf[list[k].off + list[k].len - 1 - b]);
        }
    }
    memset(typed, 0, NEST_COUNT * NEST_EXT);
    xpos = 0;
    assert_int_equal(MPI_Unpack_external("external32", packed, xsize, &xpos, typed, NEST_COUNT, t),
                     MPI_SUCCESS);
    assert_memory_equal(typed, ref, NEST_COUNT * NEST_EXT);

    free_type(&t);
    free(typed);
    free(list);
    free(buf);
    free(ref);
    free(packed);
    free(want);
}

static void test_dup_and_resized_of_a_compact_type_pack_alike(void **state)
{
    MPI_Datatype v, d, r;
    int in[700], out[200], two[400], back[596];
    (void)state;
    for (int i = 0; i < 700; i++) {
        in[i] = i * 3 + 1;
    }
    /* 100 blocks of 2 ints at ints 6b, 6b + 1: compact (more than 64 blocks); ub 596 ints. */
    assert_int_equal(MPI_Type_vector(100, 2, 6, MPI_INT, &v), MPI_SUCCESS);
    assert_int_equal(MPI_Type_dup(v, &d), MPI_SUCCESS);
    /* The same blocks, an element every 100 ints. */
    assert_int_equal(MPI_Type_create_resized(v, 0, 100 * sizeof(int), &r), MPI_SUCCESS);
    assert_int_equal(MPI_Type_commit(&d), MPI_SUCCESS);
    assert_int_equal(MPI_Type_commit(&r), MPI_SUCCESS);
    assert_shape(d, 0, 596 * 4, 0, 596 * 4, 800);
    assert_shape(r, 0, 400, 0, 596 * 4, 800);
    shim_dtype_pack(in, 1, dt(d), out);
    for (int b = 0; b < 100; b++) {
        assert_int_equal(out[2 * b], in[6 * b]);
        assert_int_equal(out[2 * b + 1], in[6 * b + 1]);
    }
    shim_dtype_pack(in, 2, dt(r), two);
    for (int e = 0; e < 2; e++) {
        for (int b = 0; b < 100; b++) {
            assert_int_equal(two[200 * e + 2 * b], in[100 * e + 6 * b]);
            assert_int_equal(two[200 * e + 2 * b + 1], in[100 * e + 6 * b + 1]);
        }
    }
    /* Unpacked through the dup: the block ints back, the gaps left alone. */
    memset(back, 0, sizeof(back));
    shim_dtype_unpack(out, 1, dt(d), back);
    for (int i = 0; i < 596; i++) {
        assert_int_equal(back[i], i % 6 < 2 ? in[i] : 0);
    }
    free_type(&v);
    free_type(&d);
    free_type(&r);
}

/* Packs count elements of t from a patterned buffer of span bytes in one shot, in pieces of
 * odd sizes and through the iterator, and unpacks them into a cleared one, comparing each
 * with the byte ranges list (n of them, typemap order, all count elements) says. */
static void check_against(MPI_Datatype t, size_t count, const struct basic *list, size_t n,
                          size_t span)
{
    static const size_t sizes[] = {3, 1, 29, 1024, 7};
    unsigned char *buf = malloc(span), *typed = calloc(span, 1), *ref = calloc(span, 1);
    size_t psize = 0;
    for (size_t k = 0; k < n; k++) {
        psize += list[k].len;
    }
    unsigned char *want = malloc(psize + 1), *packed = calloc(psize + 1, 1);
    for (size_t i = 0; i < span; i++) {
        buf[i] = pattern(i);
    }
    for (size_t k = 0, p = 0; k < n; p += list[k++].len) {
        memcpy(want + p, buf + list[k].off, list[k].len);
        memcpy(ref + list[k].off, buf + list[k].off, list[k].len);
    }
    assert_int_equal(count * dt(t)->size, psize);
    shim_dtype_pack(buf, count, dt(t), packed);
    assert_memory_equal(packed, want, psize);
    memset(packed, 0, psize);
    for (size_t skip = 0, k = 0, got; skip < psize; skip += got, k = (k + 1) % 5) {
        got = shim_dtype_pack_partial(buf, count, dt(t), skip, packed + skip, sizes[k]);
        assert_int_equal(got, sizes[k] < psize - skip ? sizes[k] : psize - skip);
        shim_dtype_unpack_partial(want + skip, count, dt(t), skip, typed, got);
    }
    assert_memory_equal(packed, want, psize);
    assert_memory_equal(typed, ref, span);
    struct shim_dtype_iter it;
    MPI_Aint off;
    size_t len, at = 0;
    shim_dtype_iter_init(&it, dt(t), count);
    while (shim_dtype_iter_next(&it, 11, &off, &len)) {
        assert_memory_equal(buf + off, want + at, len);
        at += len;
    }
    assert_int_equal(at, psize);
    free(buf);
    free(typed);
    free(ref);
    free(want);
    free(packed);
}

static void test_large_subarray_indexed_and_struct_match_their_typemaps(void **state)
{
    MPI_Datatype sub, idx, st;
    struct basic *list = malloc(4096 * sizeof(*list));
    size_t n = 0;
    (void)state;
    /* int[12][10][8], the block [2..10][1..8][3..6] in C order: 72 rows of 4 ints (compact),
     * rows of a plane 8 ints apart, planes 80 ints apart; count 2 (the second array 960 ints
     * on). */
    int sizes[3] = {12, 10, 8}, subs[3] = {9, 8, 4}, starts[3] = {2, 1, 3};
    assert_int_equal(MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_INT, &sub),
                     MPI_SUCCESS);
    assert_int_equal(MPI_Type_commit(&sub), MPI_SUCCESS);
    for (size_t e = 0; e < 2; e++) {
        for (size_t i = 0; i < 9; i++) {
            for (size_t j = 0; j < 8; j++) {
                size_t at = e * 960 + (2 + i) * 80 + (1 + j) * 8 + 3;
                list[n++] = (struct basic){4 * at, 16};
            }
        }
    }
    assert_true(nblocks(sub) > SHIM_DTYPE_FLAT_MAX);
    check_against(sub, 2, list, n, 2 * 960 * 4);
    /* 100 blocks of 1 + b % 3 doubles at doubles 5b (b even) or 5b + 1 (b odd), backwards:
     * block b is listed at position 99 - b. Nothing merges: this one stays a flat list (its
     * blocks are its arguments, and 100 entries would be larger). */
    int bl[100], disp[100];
    n = 0;
    for (int k = 0; k < 100; k++) {
        int b = 99 - k;
        bl[k] = 1 + b % 3;
        disp[k] = 5 * b + b % 2;
        list[n++] = (struct basic){8 * (size_t)disp[k], 8 * (size_t)bl[k]};
    }
    assert_int_equal(MPI_Type_indexed(100, bl, disp, MPI_DOUBLE, &idx), MPI_SUCCESS);
    assert_int_equal(MPI_Type_commit(&idx), MPI_SUCCESS);
    check_against(idx, 1, list, n, 8 * 500);
    /* A struct of 80 members alternating a short and the indexed type above, 4000 bytes
     * apart (the indexed one's extent is (5 * 99 + 1 + 1) * 8 = 3976): 4040 blocks, compact. */
    int sbl[80];
    MPI_Aint sdisp[80];
    MPI_Datatype stypes[80];
    struct basic *inner = malloc(100 * sizeof(*inner));
    memcpy(inner, list, 100 * sizeof(*inner));
    n = 0;
    for (int k = 0; k < 80; k++) {
        sbl[k] = 1;
        sdisp[k] = 4000 * (MPI_Aint)k;
        stypes[k] = k % 2 ? idx : MPI_SHORT;
        if (k % 2) {
            for (int b = 0; b < 100; b++) {
                list[n++] = (struct basic){(size_t)sdisp[k] + inner[b].off, inner[b].len};
            }
        } else {
            list[n++] = (struct basic){(size_t)sdisp[k], 2};
        }
    }
    assert_int_equal(MPI_Type_create_struct(80, sbl, sdisp, stypes, &st), MPI_SUCCESS);
    assert_int_equal(MPI_Type_commit(&st), MPI_SUCCESS);
    check_against(st, 1, list, n, 80 * 4000);
    free_type(&sub);
    free_type(&idx);
    free_type(&st);
    free(inner);
    free(list);
}

static void test_info_set_get_nkeys_nthkey(void **state)
{
    MPI_Info info;
    char val[MPI_MAX_INFO_VAL + 1], key[MPI_MAX_INFO_KEY + 1];
    int flag, n, len;
    (void)state;
    assert_int_equal(MPI_Info_create(&info), MPI_SUCCESS);
    assert_int_equal(MPI_Info_set(info, "alpha", "1"), MPI_SUCCESS);
    assert_int_equal(MPI_Info_set(info, "beta", "two"), MPI_SUCCESS);
    assert_int_equal(MPI_Info_set(info, "alpha", "uno"), MPI_SUCCESS);
    assert_int_equal(MPI_Info_get_nkeys(info, &n), MPI_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(MPI_Info_get_nthkey(info, 1, key), MPI_SUCCESS);
    assert_string_equal(key, "beta");
    assert_int_equal(MPI_Info_get(info, "alpha", MPI_MAX_INFO_VAL, val, &flag), MPI_SUCCESS);
    assert_true(flag);
    assert_string_equal(val, "uno");
    assert_int_equal(MPI_Info_get(info, "beta", 2, val, &flag), MPI_SUCCESS);
    assert_string_equal(val, "tw");
    assert_int_equal(MPI_Info_get_valuelen(info, "beta", &len, &flag), MPI_SUCCESS);
    assert_int_equal(len, 3);
    assert_int_equal(MPI_Info_get(info, "gamma", MPI_MAX_INFO_VAL, val, &flag), MPI_SUCCESS);
    assert_false(flag);
    assert_int_equal(MPI_Info_get_nthkey(info, 2, key), MPI_ERR_ARG);
    assert_int_equal(MPI_Info_free(&info), MPI_SUCCESS);
    assert_int_equal(info, MPI_INFO_NULL);
}

static void test_info_delete_and_dup(void **state)
{
    MPI_Info a, b;
    char val[16];
    int flag, n;
    (void)state;
    assert_int_equal(MPI_Info_create(&a), MPI_SUCCESS);
    assert_int_equal(MPI_Info_set(a, "k1", "v1"), MPI_SUCCESS);
    assert_int_equal(MPI_Info_set(a, "k2", "v2"), MPI_SUCCESS);
    assert_int_equal(MPI_Info_dup(a, &b), MPI_SUCCESS);
    assert_int_equal(MPI_Info_delete(a, "k1"), MPI_SUCCESS);
    assert_int_equal(MPI_Info_delete(a, "k1"), MPI_ERR_INFO_NOKEY);
    assert_int_equal(MPI_Info_get_nkeys(a, &n), MPI_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(MPI_Info_get_nkeys(b, &n), MPI_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(MPI_Info_get(b, "k1", 15, val, &flag), MPI_SUCCESS);
    assert_true(flag);
    assert_string_equal(val, "v1");
    assert_int_equal(shim_info_get_value(b, "k2", val, sizeof(val)), 1);
    assert_string_equal(val, "v2");
    assert_int_equal(MPI_Info_free(&a), MPI_SUCCESS);
    assert_int_equal(MPI_Info_free(&b), MPI_SUCCESS);
}

static void test_info_errors(void **state)
{
    MPI_Info info, freed;
    char longkey[MPI_MAX_INFO_KEY + 2];
    int n;
    (void)state;
    memset(longkey, 'k', sizeof(longkey) - 1);
    longkey[sizeof(longkey) - 1] = '\0';
    assert_int_equal(MPI_Info_create(&info), MPI_SUCCESS);
    assert_int_equal(MPI_Info_set(info, longkey, "v"), MPI_ERR_INFO_KEY);
    assert_int_equal(MPI_Info_set(info, "", "v"), MPI_ERR_INFO_KEY);
    freed = info;
    assert_int_equal(MPI_Info_free(&info), MPI_SUCCESS);
    assert_int_equal(MPI_Info_get_nkeys(freed, &n), MPI_ERR_INFO);
    assert_int_equal(MPI_Info_get_nkeys(MPI_INFO_NULL, &n), MPI_ERR_INFO);
    assert_int_equal(MPI_Info_get_nkeys(MPI_INFO_ENV, &n), MPI_SUCCESS);
    assert_int_equal(n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contiguous_of_three_ints_is_12_dense_bytes),
        cmocka_unit_test(test_vector_has_gaps_between_blocks),
        cmocka_unit_test(test_vector_with_negative_stride_has_negative_lb),
        cmocka_unit_test(test_hvector_stride_is_in_bytes),
        cmocka_unit_test(test_indexed_keeps_typemap_order),
        cmocka_unit_test(test_hindexed_and_block_variants),
        cmocka_unit_test(test_struct_extent_is_padded_to_alignment),
        cmocka_unit_test(test_struct_of_mixed_types_has_no_base_type),
        cmocka_unit_test(test_subarray_in_c_order),
        cmocka_unit_test(test_subarray_in_fortran_order),
        cmocka_unit_test(test_resized_changes_extent_not_size),
        cmocka_unit_test(test_lb_and_ub_markers_set_bounds_in_type_struct),
        cmocka_unit_test(test_pair_type_packs_its_signature_without_padding),
        cmocka_unit_test(test_nested_and_pair_shapes_match_mpich),
        cmocka_unit_test(test_zero_count_gives_an_empty_type),
        cmocka_unit_test(test_vector_pack_unpack_round_trip),
        cmocka_unit_test(test_indexed_packs_in_typemap_order),
        cmocka_unit_test(test_struct_pack_skips_padding),
        cmocka_unit_test(test_subarray_pack_takes_the_submatrix),
        cmocka_unit_test(test_partial_pack_resumes_mid_block),
        cmocka_unit_test(test_mpi_pack_advances_position_and_detects_overflow),
        cmocka_unit_test(test_freed_type_gives_err_type),
        cmocka_unit_test(test_handles_differ_from_builtins_and_null),
        cmocka_unit_test(test_uncommitted_type_rejected_for_communication),
        cmocka_unit_test(test_type_used_by_a_pending_operation_survives_free),
        cmocka_unit_test(test_get_contents_returns_a_live_handle_for_a_freed_old_type),
        cmocka_unit_test(test_envelope_of_vector_and_struct),
        cmocka_unit_test(test_dup_keeps_typemap_and_commit_state),
        cmocka_unit_test(test_names_of_predefined_and_derived_types),
        cmocka_unit_test(test_builtin_mapping_to_pg_types),
        cmocka_unit_test(test_constructor_argument_errors),
        cmocka_unit_test(test_elements_counts_basic_elements),
        cmocka_unit_test(test_address_arithmetic_and_match_size),
        cmocka_unit_test(test_vector_of_2_30_chars_commits_in_a_few_hundred_bytes),
        cmocka_unit_test(test_vector_of_2_24_chars_packs_every_byte_without_growing),
        cmocka_unit_test(test_nested_vector_of_struct_matches_a_naive_packer),
        cmocka_unit_test(test_dup_and_resized_of_a_compact_type_pack_alike),
        cmocka_unit_test(test_large_subarray_indexed_and_struct_match_their_typemaps),
        cmocka_unit_test(test_info_set_get_nkeys_nthkey),
        cmocka_unit_test(test_info_delete_and_dup),
        cmocka_unit_test(test_info_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
