/*
 * mpi.h - the MPI-3.1 subset that mpishim implements, with MPICH's ABI.
 *
 * Handles are ints with the same values as MPICH 4.0 (x86-64), so that the numbers a
 * program prints, stores or passes through Fortran match MPICH's. Every function exists
 * twice: MPI_Xxx (a weak alias) and PMPI_Xxx (the definition), for profiling tools.
 *
 * Handle layout (MPICH's; the one place this mapping is recorded):
 *   bits 30-31  kind: 0 invalid, 1 builtin (predefined), 2 direct, 3 indirect (user object)
 *   bits 26-29  object type (MPISHIM_OBJ_* below)
 *   bits  0-25  index; for builtin datatypes bits 8-15 hold the size in bytes
 * A *_NULL handle has kind 0 and its object type, so 0x04000000 is MPI_COMM_NULL.
 * Objects that mpishim creates (communicators, groups, derived datatypes, ops, requests,
 * info objects, keyvals, errhandlers) get kind 3 handles: 0xc0000000 | (obj << 26) | index.
 *
 * Deliberate differences from MPICH's header: MPI_VERSION is 3.1 (of MPI-4.0 only the
 * large-count _c functions whose int version exists; no sessions, no MPI-IO, no dynamic
 * processes); MPI_Count and MPI_Offset are long long (same size and ABI as MPICH's long on
 * x86-64); MPI_UNWEIGHTED and MPI_WEIGHTS_EMPTY are sentinel pointers here (the library also
 * exports MPICH's variables of those names, holding the same values, for binaries built
 * against MPICH); MPI_DUP_FN is a static inline function; no C++ bindings. The library
 * (and its MPICH-ABI name libmpi.so.12) defines every function MPICH 4.0 exports: those not
 * declared here return MPI_ERR_UNSUPPORTED_OPERATION (tools/gen_abi_stubs.sh).
 */
#ifndef MPI_INCLUDED
#define MPI_INCLUDED

#include <stddef.h>

#if defined(__cplusplus)
extern "C" {
#endif

#define MPISHIM 1
#define MPISHIM_VERSION "0.1.0"
#define MPISHIM_NUMVERSION 100 /* major * 10000 + minor * 100 + patch */

#define MPI_VERSION 3
#define MPI_SUBVERSION 1

#if defined(__GNUC__)
#define MPISHIM_API __attribute__((visibility("default")))
#else
#define MPISHIM_API
#endif

/* ---- Handle encoding (see the top of this file). ---- */
#define MPISHIM_KIND_INVALID 0
#define MPISHIM_KIND_BUILTIN 1
#define MPISHIM_KIND_DIRECT 2
#define MPISHIM_KIND_INDIRECT 3
#define MPISHIM_OBJ_COMM 0x1
#define MPISHIM_OBJ_GROUP 0x2
#define MPISHIM_OBJ_DATATYPE 0x3
#define MPISHIM_OBJ_FILE 0x4
#define MPISHIM_OBJ_ERRHANDLER 0x5
#define MPISHIM_OBJ_OP 0x6
#define MPISHIM_OBJ_INFO 0x7
#define MPISHIM_OBJ_WIN 0x8
#define MPISHIM_OBJ_KEYVAL 0x9
#define MPISHIM_OBJ_ATTR 0xa
#define MPISHIM_OBJ_REQUEST 0xb
#define MPISHIM_OBJ_SESSION 0xe
#define MPISHIM_HANDLE_KIND(h) ((int)(((unsigned int)(h) >> 30) & 0x3u))
#define MPISHIM_HANDLE_OBJ(h) ((int)(((unsigned int)(h) >> 26) & 0xfu))
#define MPISHIM_HANDLE_INDEX(h) ((int)((unsigned int)(h) & 0x03ffffffu))
#define MPISHIM_HANDLE_MAKE(kind, obj, index)                                                    \
    ((int)(((unsigned int)(kind) << 30) | ((unsigned int)(obj) << 26) |                           \
           ((unsigned int)(index) & 0x03ffffffu)))
/* Size in bytes of a builtin datatype, read from its handle. */
#define MPISHIM_BUILTIN_TYPE_SIZE(h) ((int)(((unsigned int)(h) >> 8) & 0xffu))

/* ---- Handle and scalar types. ---- */
typedef int MPI_Comm;
typedef int MPI_Group;
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Errhandler;
typedef int MPI_Request;
typedef int MPI_Message;
typedef int MPI_Info;
typedef int MPI_Win;
typedef struct ADIOI_FileD *MPI_File;

typedef long MPI_Aint;
typedef long long MPI_Offset;
typedef long long MPI_Count;
typedef int MPI_Fint;

/* MPICH's status layout: the received byte count is split in count_lo and the low 31 bits
 * of count_hi_and_cancelled; bit 31 of the latter is the cancelled flag. */
typedef struct MPI_Status {
    int count_lo;
    int count_hi_and_cancelled;
    int MPI_SOURCE;
    int MPI_TAG;
    int MPI_ERROR;
} MPI_Status;

/* ---- Null handles. ---- */
#define MPI_COMM_NULL ((MPI_Comm)0x04000000)
#define MPI_OP_NULL ((MPI_Op)0x18000000)
#define MPI_GROUP_NULL ((MPI_Group)0x08000000)
#define MPI_DATATYPE_NULL ((MPI_Datatype)0x0c000000)
#define MPI_REQUEST_NULL ((MPI_Request)0x2c000000)
#define MPI_ERRHANDLER_NULL ((MPI_Errhandler)0x14000000)
#define MPI_MESSAGE_NULL ((MPI_Message)0x2c000000)
#define MPI_MESSAGE_NO_PROC ((MPI_Message)0x6c000000)
#define MPI_INFO_NULL ((MPI_Info)0x1c000000)
#define MPI_WIN_NULL ((MPI_Win)0x20000000)
#define MPI_FILE_NULL ((MPI_File)0)

/* ---- Predefined communicators and groups. ---- */
#define MPI_COMM_WORLD ((MPI_Comm)0x44000000)
#define MPI_COMM_SELF ((MPI_Comm)0x44000001)
#define MPI_GROUP_EMPTY ((MPI_Group)0x48000000)
#define MPI_INFO_ENV ((MPI_Info)0x5c000001)

/* ---- Predefined datatypes (C). ---- */
#define MPI_CHAR ((MPI_Datatype)0x4c000101)
#define MPI_SIGNED_CHAR ((MPI_Datatype)0x4c000118)
#define MPI_UNSIGNED_CHAR ((MPI_Datatype)0x4c000102)
#define MPI_BYTE ((MPI_Datatype)0x4c00010d)
#define MPI_WCHAR ((MPI_Datatype)0x4c00040e)
#define MPI_SHORT ((MPI_Datatype)0x4c000203)
#define MPI_UNSIGNED_SHORT ((MPI_Datatype)0x4c000204)
#define MPI_INT ((MPI_Datatype)0x4c000405)
#define MPI_UNSIGNED ((MPI_Datatype)0x4c000406)
#define MPI_LONG ((MPI_Datatype)0x4c000807)
#define MPI_UNSIGNED_LONG ((MPI_Datatype)0x4c000808)
#define MPI_FLOAT ((MPI_Datatype)0x4c00040a)
#define MPI_DOUBLE ((MPI_Datatype)0x4c00080b)
#define MPI_LONG_DOUBLE ((MPI_Datatype)0x4c00100c)
#define MPI_LONG_LONG_INT ((MPI_Datatype)0x4c000809)
#define MPI_UNSIGNED_LONG_LONG ((MPI_Datatype)0x4c000819)
#define MPI_LONG_LONG MPI_LONG_LONG_INT
#define MPI_PACKED ((MPI_Datatype)0x4c00010f)
/* MPI_LB and MPI_UB were removed in MPI-3.0; only MPI_Type_struct accepts them. */
#define MPI_LB ((MPI_Datatype)0x4c000010)
#define MPI_UB ((MPI_Datatype)0x4c000011)

/* Pair types for MINLOC/MAXLOC: struct { value; int index; } with C alignment. */
#define MPI_FLOAT_INT ((MPI_Datatype)0x8c000000)
#define MPI_DOUBLE_INT ((MPI_Datatype)0x8c000001)
#define MPI_LONG_INT ((MPI_Datatype)0x8c000002)
#define MPI_SHORT_INT ((MPI_Datatype)0x8c000003)
#define MPI_2INT ((MPI_Datatype)0x4c000816)
#define MPI_LONG_DOUBLE_INT ((MPI_Datatype)0x8c000004)

/* Fortran types (usable from C, e.g. for data written by Fortran codes). */
#define MPI_COMPLEX ((MPI_Datatype)0x4c00081e)
#define MPI_DOUBLE_COMPLEX ((MPI_Datatype)0x4c001022)
#define MPI_LOGICAL ((MPI_Datatype)0x4c00041d)
#define MPI_REAL ((MPI_Datatype)0x4c00041c)
#define MPI_DOUBLE_PRECISION ((MPI_Datatype)0x4c00081f)
#define MPI_INTEGER ((MPI_Datatype)0x4c00041b)
#define MPI_2INTEGER ((MPI_Datatype)0x4c000820)
#define MPI_2REAL ((MPI_Datatype)0x4c000821)
#define MPI_2DOUBLE_PRECISION ((MPI_Datatype)0x4c001023)
#define MPI_CHARACTER ((MPI_Datatype)0x4c00011a)
#define MPI_REAL4 ((MPI_Datatype)0x4c000427)
#define MPI_REAL8 ((MPI_Datatype)0x4c000829)
#define MPI_REAL16 ((MPI_Datatype)0x4c00102b)
#define MPI_COMPLEX8 ((MPI_Datatype)0x4c000828)
#define MPI_COMPLEX16 ((MPI_Datatype)0x4c00102a)
#define MPI_COMPLEX32 ((MPI_Datatype)0x4c00202c)
#define MPI_INTEGER1 ((MPI_Datatype)0x4c00012d)
#define MPI_INTEGER2 ((MPI_Datatype)0x4c00022f)
#define MPI_INTEGER4 ((MPI_Datatype)0x4c000430)
#define MPI_INTEGER8 ((MPI_Datatype)0x4c000831)
#define MPI_INTEGER16 ((MPI_Datatype)MPI_DATATYPE_NULL)

/* C99 fixed-width and other C types. */
#define MPI_INT8_T ((MPI_Datatype)0x4c000137)
#define MPI_INT16_T ((MPI_Datatype)0x4c000238)
#define MPI_INT32_T ((MPI_Datatype)0x4c000439)
#define MPI_INT64_T ((MPI_Datatype)0x4c00083a)
#define MPI_UINT8_T ((MPI_Datatype)0x4c00013b)
#define MPI_UINT16_T ((MPI_Datatype)0x4c00023c)
#define MPI_UINT32_T ((MPI_Datatype)0x4c00043d)
#define MPI_UINT64_T ((MPI_Datatype)0x4c00083e)
#define MPI_C_BOOL ((MPI_Datatype)0x4c00013f)
#define MPI_C_FLOAT_COMPLEX ((MPI_Datatype)0x4c000840)
#define MPI_C_COMPLEX MPI_C_FLOAT_COMPLEX
#define MPI_C_DOUBLE_COMPLEX ((MPI_Datatype)0x4c001041)
#define MPI_C_LONG_DOUBLE_COMPLEX ((MPI_Datatype)0x4c002042)
#define MPIX_C_FLOAT16 ((MPI_Datatype)0x4c000246)
#define MPI_AINT ((MPI_Datatype)0x4c000843)
#define MPI_OFFSET ((MPI_Datatype)0x4c000844)
#define MPI_COUNT ((MPI_Datatype)0x4c000845)
#define MPI_CXX_BOOL ((MPI_Datatype)0x4c000133)
#define MPI_CXX_FLOAT_COMPLEX ((MPI_Datatype)0x4c000834)
#define MPI_CXX_DOUBLE_COMPLEX ((MPI_Datatype)0x4c001035)
#define MPI_CXX_LONG_DOUBLE_COMPLEX ((MPI_Datatype)0x4c002036)

/* Type classes for MPI_Type_match_size. */
#define MPI_TYPECLASS_REAL 1
#define MPI_TYPECLASS_INTEGER 2
#define MPI_TYPECLASS_COMPLEX 3

/* ---- Predefined reduction operations. ---- */
#define MPI_MAX ((MPI_Op)0x58000001)
#define MPI_MIN ((MPI_Op)0x58000002)
#define MPI_SUM ((MPI_Op)0x58000003)
#define MPI_PROD ((MPI_Op)0x58000004)
#define MPI_LAND ((MPI_Op)0x58000005)
#define MPI_BAND ((MPI_Op)0x58000006)
#define MPI_LOR ((MPI_Op)0x58000007)
#define MPI_BOR ((MPI_Op)0x58000008)
#define MPI_LXOR ((MPI_Op)0x58000009)
#define MPI_BXOR ((MPI_Op)0x5800000a)
#define MPI_MINLOC ((MPI_Op)0x5800000b)
#define MPI_MAXLOC ((MPI_Op)0x5800000c)
#define MPI_REPLACE ((MPI_Op)0x5800000d)
#define MPI_NO_OP ((MPI_Op)0x5800000e)

/* ---- Predefined error handlers. ---- */
#define MPI_ERRORS_ARE_FATAL ((MPI_Errhandler)0x54000000)
#define MPI_ERRORS_RETURN ((MPI_Errhandler)0x54000001)
#define MPI_ERRORS_ABORT ((MPI_Errhandler)0x54000003)

/* ---- Predefined attribute keys. ---- */
#define MPI_KEYVAL_INVALID 0x24000000
#define MPI_TAG_UB 0x64400001
#define MPI_HOST 0x64400003
#define MPI_IO 0x64400005
#define MPI_WTIME_IS_GLOBAL 0x64400007
#define MPI_UNIVERSE_SIZE 0x64400009
#define MPI_LASTUSEDCODE 0x6440000b
#define MPI_APPNUM 0x6440000d
#define MPI_WIN_BASE 0x66000001
#define MPI_WIN_SIZE 0x66000003
#define MPI_WIN_DISP_UNIT 0x66000005
#define MPI_WIN_CREATE_FLAVOR 0x66000007
#define MPI_WIN_MODEL 0x66000009

/* ---- Constants. ---- */
#define MPI_IDENT 0
#define MPI_CONGRUENT 1
#define MPI_SIMILAR 2
#define MPI_UNEQUAL 3

#define MPI_MAX_PROCESSOR_NAME 128
#define MPI_MAX_LIBRARY_VERSION_STRING 8192
#define MPI_MAX_ERROR_STRING 512
#define MPI_MAX_PORT_NAME 256
#define MPI_MAX_OBJECT_NAME 128
#define MPI_MAX_INFO_KEY 255
#define MPI_MAX_INFO_VAL 1024
#define MPI_MAX_DATAREP_STRING 128

#define MPI_UNDEFINED (-32766)
#define MPI_PROC_NULL (-1)
#define MPI_ANY_SOURCE (-2)
#define MPI_ROOT (-3)
#define MPI_ANY_TAG (-1)

#define MPI_BOTTOM ((void *)0)
#define MPI_IN_PLACE ((void *)-1)
#define MPI_STATUS_IGNORE ((MPI_Status *)1)
#define MPI_STATUSES_IGNORE ((MPI_Status *)1)
#define MPI_ERRCODES_IGNORE ((int *)0)
#define MPI_ARGV_NULL ((char **)0)
#define MPI_ARGVS_NULL ((char ***)0)
/* Sentinels for the dist_graph constructors; never dereferenced. */
#define MPI_UNWEIGHTED ((int *)2)
#define MPI_WEIGHTS_EMPTY ((int *)3)

#define MPI_THREAD_SINGLE 0
#define MPI_THREAD_FUNNELED 1
#define MPI_THREAD_SERIALIZED 2
#define MPI_THREAD_MULTIPLE 3

#define MPI_BSEND_OVERHEAD 96

/* Topology types (MPI_Topo_test). */
#define MPI_GRAPH 1
#define MPI_CART 2
#define MPI_DIST_GRAPH 3

/* MPI_Comm_split_type. */
#define MPI_COMM_TYPE_SHARED 1

/* Datatype decoding (MPI_Type_get_envelope). */
#define MPI_COMBINER_NAMED 1
#define MPI_COMBINER_DUP 2
#define MPI_COMBINER_CONTIGUOUS 3
#define MPI_COMBINER_VECTOR 4
#define MPI_COMBINER_HVECTOR_INTEGER 5
#define MPI_COMBINER_HVECTOR 6
#define MPI_COMBINER_INDEXED 7
#define MPI_COMBINER_HINDEXED_INTEGER 8
#define MPI_COMBINER_HINDEXED 9
#define MPI_COMBINER_INDEXED_BLOCK 10
#define MPI_COMBINER_STRUCT_INTEGER 11
#define MPI_COMBINER_STRUCT 12
#define MPI_COMBINER_SUBARRAY 13
#define MPI_COMBINER_DARRAY 14
#define MPI_COMBINER_F90_REAL 15
#define MPI_COMBINER_F90_COMPLEX 16
#define MPI_COMBINER_F90_INTEGER 17
#define MPI_COMBINER_RESIZED 18
#define MPI_COMBINER_HINDEXED_BLOCK 19

/* Subarray and darray constructors. */
#define MPI_ORDER_C 56
#define MPI_ORDER_FORTRAN 57
#define MPI_DISTRIBUTE_BLOCK 121
#define MPI_DISTRIBUTE_CYCLIC 122
#define MPI_DISTRIBUTE_NONE 123
#define MPI_DISTRIBUTE_DFLT_DARG (-49767)

/* One-sided constants (the window functions are prototyped but unsupported). */
#define MPI_WIN_FLAVOR_CREATE 1
#define MPI_WIN_FLAVOR_ALLOCATE 2
#define MPI_WIN_FLAVOR_DYNAMIC 3
#define MPI_WIN_FLAVOR_SHARED 4
#define MPI_WIN_SEPARATE 1
#define MPI_WIN_UNIFIED 2
#define MPI_LOCK_EXCLUSIVE 234
#define MPI_LOCK_SHARED 235
#define MPI_MODE_NOCHECK 1024
#define MPI_MODE_NOSTORE 2048
#define MPI_MODE_NOPUT 4096
#define MPI_MODE_NOPRECEDE 8192
#define MPI_MODE_NOSUCCEED 16384

/* ---- Error classes (MPICH's numbers). ---- */
#define MPI_SUCCESS 0
#define MPI_ERR_BUFFER 1
#define MPI_ERR_COUNT 2
#define MPI_ERR_TYPE 3
#define MPI_ERR_TAG 4
#define MPI_ERR_COMM 5
#define MPI_ERR_RANK 6
#define MPI_ERR_ROOT 7
#define MPI_ERR_GROUP 8
#define MPI_ERR_OP 9
#define MPI_ERR_TOPOLOGY 10
#define MPI_ERR_DIMS 11
#define MPI_ERR_ARG 12
#define MPI_ERR_UNKNOWN 13
#define MPI_ERR_TRUNCATE 14
#define MPI_ERR_OTHER 15
#define MPI_ERR_INTERN 16
#define MPI_ERR_IN_STATUS 17
#define MPI_ERR_PENDING 18
#define MPI_ERR_REQUEST 19
#define MPI_ERR_ACCESS 20
#define MPI_ERR_AMODE 21
#define MPI_ERR_BAD_FILE 22
#define MPI_ERR_CONVERSION 23
#define MPI_ERR_DUP_DATAREP 24
#define MPI_ERR_FILE_EXISTS 25
#define MPI_ERR_FILE_IN_USE 26
#define MPI_ERR_FILE 27
#define MPI_ERR_INFO 28
#define MPI_ERR_INFO_KEY 29
#define MPI_ERR_INFO_VALUE 30
#define MPI_ERR_INFO_NOKEY 31
#define MPI_ERR_IO 32
#define MPI_ERR_NAME 33
#define MPI_ERR_NO_MEM 34
#define MPI_ERR_NOT_SAME 35
#define MPI_ERR_NO_SPACE 36
#define MPI_ERR_NO_SUCH_FILE 37
#define MPI_ERR_PORT 38
#define MPI_ERR_QUOTA 39
#define MPI_ERR_READ_ONLY 40
#define MPI_ERR_SERVICE 41
#define MPI_ERR_SPAWN 42
#define MPI_ERR_UNSUPPORTED_DATAREP 43
#define MPI_ERR_UNSUPPORTED_OPERATION 44
#define MPI_ERR_WIN 45
#define MPI_ERR_BASE 46
#define MPI_ERR_LOCKTYPE 47
#define MPI_ERR_KEYVAL 48
#define MPI_ERR_RMA_CONFLICT 49
#define MPI_ERR_RMA_SYNC 50
#define MPI_ERR_SIZE 51
#define MPI_ERR_DISP 52
#define MPI_ERR_ASSERT 53
#define MPI_ERR_RMA_RANGE 55
#define MPI_ERR_RMA_ATTACH 56
#define MPI_ERR_RMA_SHARED 57
#define MPI_ERR_RMA_FLAVOR 58
#define MPI_ERR_LASTCODE 0x3fffffff

/* ---- Callback types. ---- */
typedef void(MPI_User_function)(void *invec, void *inoutvec, int *len, MPI_Datatype *datatype);
typedef void(MPI_Handler_function)(MPI_Comm *, int *, ...);
typedef void(MPI_Comm_errhandler_function)(MPI_Comm *, int *, ...);
typedef void(MPI_Win_errhandler_function)(MPI_Win *, int *, ...);
typedef MPI_Comm_errhandler_function MPI_Comm_errhandler_fn;
typedef MPI_Win_errhandler_function MPI_Win_errhandler_fn;
typedef int(MPI_Comm_copy_attr_function)(MPI_Comm oldcomm, int comm_keyval, void *extra_state,
                                         void *attribute_val_in, void *attribute_val_out,
                                         int *flag);
typedef int(MPI_Comm_delete_attr_function)(MPI_Comm comm, int comm_keyval, void *attribute_val,
                                           void *extra_state);
typedef int(MPI_Type_copy_attr_function)(MPI_Datatype oldtype, int type_keyval, void *extra_state,
                                         void *attribute_val_in, void *attribute_val_out,
                                         int *flag);
typedef int(MPI_Type_delete_attr_function)(MPI_Datatype datatype, int type_keyval,
                                           void *attribute_val, void *extra_state);
typedef int(MPI_Win_copy_attr_function)(MPI_Win oldwin, int win_keyval, void *extra_state,
                                        void *attribute_val_in, void *attribute_val_out,
                                        int *flag);
typedef int(MPI_Win_delete_attr_function)(MPI_Win win, int win_keyval, void *attribute_val,
                                          void *extra_state);
typedef int(MPI_Copy_function)(MPI_Comm, int, void *, void *, void *, int *);
typedef int(MPI_Delete_function)(MPI_Comm, int, void *, void *);

/* The predefined "duplicate the attribute" copy callback: copies the pointer value. It is an
 * inline function here (MPICH exports MPIR_Dup_fn), so it needs no library symbol. */
static inline int MPISHIM_Dup_fn(MPI_Comm oldcomm, int keyval, void *extra_state,
                                 void *attribute_val_in, void *attribute_val_out, int *flag)
{
    (void)oldcomm;
    (void)keyval;
    (void)extra_state;
    *(void **)attribute_val_out = attribute_val_in;
    *flag = 1;
    return MPI_SUCCESS;
}

#define MPI_NULL_COPY_FN ((MPI_Copy_function *)0)
#define MPI_NULL_DELETE_FN ((MPI_Delete_function *)0)
#define MPI_DUP_FN MPISHIM_Dup_fn
#define MPI_COMM_NULL_COPY_FN ((MPI_Comm_copy_attr_function *)0)
#define MPI_COMM_NULL_DELETE_FN ((MPI_Comm_delete_attr_function *)0)
#define MPI_COMM_DUP_FN ((MPI_Comm_copy_attr_function *)MPISHIM_Dup_fn)
#define MPI_TYPE_NULL_COPY_FN ((MPI_Type_copy_attr_function *)0)
#define MPI_TYPE_NULL_DELETE_FN ((MPI_Type_delete_attr_function *)0)
#define MPI_TYPE_DUP_FN ((MPI_Type_copy_attr_function *)(void (*)(void))MPISHIM_Dup_fn)
#define MPI_WIN_NULL_COPY_FN ((MPI_Win_copy_attr_function *)0)
#define MPI_WIN_NULL_DELETE_FN ((MPI_Win_delete_attr_function *)0)
#define MPI_WIN_DUP_FN ((MPI_Win_copy_attr_function *)(void (*)(void))MPISHIM_Dup_fn)

/* ---- Handle conversion to and from Fortran: the values are the same. ---- */
#define MPI_Comm_c2f(h) ((MPI_Fint)(h))
#define MPI_Comm_f2c(h) ((MPI_Comm)(h))
#define MPI_Type_c2f(h) ((MPI_Fint)(h))
#define MPI_Type_f2c(h) ((MPI_Datatype)(h))
#define MPI_Group_c2f(h) ((MPI_Fint)(h))
#define MPI_Group_f2c(h) ((MPI_Group)(h))
#define MPI_Info_c2f(h) ((MPI_Fint)(h))
#define MPI_Info_f2c(h) ((MPI_Info)(h))
#define MPI_Request_c2f(h) ((MPI_Fint)(h))
#define MPI_Request_f2c(h) ((MPI_Request)(h))
#define MPI_Op_c2f(h) ((MPI_Fint)(h))
#define MPI_Op_f2c(h) ((MPI_Op)(h))
#define MPI_Errhandler_c2f(h) ((MPI_Fint)(h))
#define MPI_Errhandler_f2c(h) ((MPI_Errhandler)(h))
#define MPI_Win_c2f(h) ((MPI_Fint)(h))
#define MPI_Win_f2c(h) ((MPI_Win)(h))
#define MPI_Message_c2f(h) ((MPI_Fint)(h))
#define MPI_Message_f2c(h) ((MPI_Message)(h))
/* Their profiling names, as in MPICH (MPI-3.1 14.2.1: every MPI name has a PMPI_ one). */
#define PMPI_Comm_c2f(h) ((MPI_Fint)(h))
#define PMPI_Comm_f2c(h) ((MPI_Comm)(h))
#define PMPI_Type_c2f(h) ((MPI_Fint)(h))
#define PMPI_Type_f2c(h) ((MPI_Datatype)(h))
#define PMPI_Group_c2f(h) ((MPI_Fint)(h))
#define PMPI_Group_f2c(h) ((MPI_Group)(h))
#define PMPI_Info_c2f(h) ((MPI_Fint)(h))
#define PMPI_Info_f2c(h) ((MPI_Info)(h))
#define PMPI_Request_c2f(h) ((MPI_Fint)(h))
#define PMPI_Request_f2c(h) ((MPI_Request)(h))
#define PMPI_Op_c2f(h) ((MPI_Fint)(h))
#define PMPI_Op_f2c(h) ((MPI_Op)(h))
#define PMPI_Errhandler_c2f(h) ((MPI_Fint)(h))
#define PMPI_Errhandler_f2c(h) ((MPI_Errhandler)(h))
#define PMPI_Win_c2f(h) ((MPI_Fint)(h))
#define PMPI_Win_f2c(h) ((MPI_Win)(h))
#define PMPI_Message_c2f(h) ((MPI_Fint)(h))
#define PMPI_Message_f2c(h) ((MPI_Message)(h))

/* ---- Functions. ----
 * Each line declares MPI_<name> and its profiling twin PMPI_<name> with the same signature.
 * Return values are MPI error classes (MPI_SUCCESS or MPI_ERR_*), after the error handler of
 * the communicator involved (MPI_COMM_WORLD for calls without one) has run. */
#define MPISHIM_PROTO(ret, name, args)                                                           \
    MPISHIM_API ret MPI_##name args;                                                             \
    MPISHIM_API ret PMPI_##name args;

/* Attributes and keyvals. */
MPISHIM_PROTO(int, Attr_delete, (MPI_Comm comm, int keyval))
MPISHIM_PROTO(int, Attr_get, (MPI_Comm comm, int keyval, void *attribute_val, int *flag))
MPISHIM_PROTO(int, Attr_put, (MPI_Comm comm, int keyval, void *attribute_val))
MPISHIM_PROTO(int, Comm_create_keyval, (MPI_Comm_copy_attr_function *comm_copy_attr_fn,
                                        MPI_Comm_delete_attr_function *comm_delete_attr_fn,
                                        int *comm_keyval, void *extra_state))
MPISHIM_PROTO(int, Comm_delete_attr, (MPI_Comm comm, int comm_keyval))
MPISHIM_PROTO(int, Comm_free_keyval, (int *comm_keyval))
MPISHIM_PROTO(int, Comm_get_attr, (MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag))
MPISHIM_PROTO(int, Comm_set_attr, (MPI_Comm comm, int comm_keyval, void *attribute_val))
MPISHIM_PROTO(int, Keyval_create, (MPI_Copy_function *copy_fn, MPI_Delete_function *delete_fn,
                                   int *keyval, void *extra_state))
MPISHIM_PROTO(int, Keyval_free, (int *keyval))
MPISHIM_PROTO(int, Type_create_keyval, (MPI_Type_copy_attr_function *type_copy_attr_fn,
                                        MPI_Type_delete_attr_function *type_delete_attr_fn,
                                        int *type_keyval, void *extra_state))
MPISHIM_PROTO(int, Type_delete_attr, (MPI_Datatype datatype, int type_keyval))
MPISHIM_PROTO(int, Type_free_keyval, (int *type_keyval))
MPISHIM_PROTO(int, Type_get_attr, (MPI_Datatype datatype, int type_keyval, void *attribute_val,
                                   int *flag))
MPISHIM_PROTO(int, Type_set_attr, (MPI_Datatype datatype, int type_keyval, void *attribute_val))
MPISHIM_PROTO(int, Win_create_keyval, (MPI_Win_copy_attr_function *win_copy_attr_fn,
                                       MPI_Win_delete_attr_function *win_delete_attr_fn,
                                       int *win_keyval, void *extra_state))
MPISHIM_PROTO(int, Win_delete_attr, (MPI_Win win, int win_keyval))
MPISHIM_PROTO(int, Win_free_keyval, (int *win_keyval))
MPISHIM_PROTO(int, Win_get_attr, (MPI_Win win, int win_keyval, void *attribute_val, int *flag))
MPISHIM_PROTO(int, Win_set_attr, (MPI_Win win, int win_keyval, void *attribute_val))

/* Collectives (blocking, nonblocking, neighborhood). */
MPISHIM_PROTO(int, Allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, const int recvcounts[], const int displs[],
                                MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Allreduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                               MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Alltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[],
                               MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                               const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Alltoallw, (const void *sendbuf, const int sendcounts[], const int sdispls[],
                               const MPI_Datatype sendtypes[], void *recvbuf,
                               const int recvcounts[], const int rdispls[],
                               const MPI_Datatype recvtypes[], MPI_Comm comm))
MPISHIM_PROTO(int, Barrier, (MPI_Comm comm))
MPISHIM_PROTO(int, Bcast, (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm))
MPISHIM_PROTO(int, Exscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                            MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Gather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm))
MPISHIM_PROTO(int, Gatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, int root, MPI_Comm comm))
MPISHIM_PROTO(int, Iallgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Request *request))
MPISHIM_PROTO(int, Iallgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, const int recvcounts[], const int displs[],
                                 MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Iallreduce, (const void *sendbuf, void *recvbuf, int count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request))
MPISHIM_PROTO(int, Ialltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                               MPI_Request *request))
MPISHIM_PROTO(int, Ialltoallv, (const void *sendbuf, const int sendcounts[], const int sdispls[],
                                MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                MPI_Request *request))
MPISHIM_PROTO(int, Ialltoallw, (const void *sendbuf, const int sendcounts[], const int sdispls[],
                                const MPI_Datatype sendtypes[], void *recvbuf,
                                const int recvcounts[], const int rdispls[],
                                const MPI_Datatype recvtypes[], MPI_Comm comm,
                                MPI_Request *request))
MPISHIM_PROTO(int, Ibarrier, (MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ibcast, (void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                            MPI_Request *request))
MPISHIM_PROTO(int, Iexscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Igather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Igatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, int root, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ineighbor_allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                         MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ineighbor_allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                          void *recvbuf, const int recvcounts[], const int displs[],
                                          MPI_Datatype recvtype, MPI_Comm comm,
                                          MPI_Request *request))
MPISHIM_PROTO(int, Ineighbor_alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ineighbor_alltoallv, (const void *sendbuf, const int sendcounts[],
                                         const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                         const int recvcounts[], const int rdispls[],
                                         MPI_Datatype recvtype, MPI_Comm comm,
                                         MPI_Request *request))
MPISHIM_PROTO(int, Ineighbor_alltoallw, (const void *sendbuf, const int sendcounts[],
                                         const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                         void *recvbuf, const int recvcounts[],
                                         const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                         MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ireduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, int root, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ireduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[],
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                     MPI_Request *request))
MPISHIM_PROTO(int, Ireduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount,
                                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                           MPI_Request *request))
MPISHIM_PROTO(int, Iscan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Iscatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Iscatterv, (const void *sendbuf, const int sendcounts[], const int displs[],
                               MPI_Datatype sendtype, void *recvbuf, int recvcount,
                               MPI_Datatype recvtype, int root, MPI_Comm comm,
                               MPI_Request *request))
MPISHIM_PROTO(int, Neighbor_allgather, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                        void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                        MPI_Comm comm))
MPISHIM_PROTO(int, Neighbor_allgatherv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                         void *recvbuf, const int recvcounts[], const int displs[],
                                         MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Neighbor_alltoall, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                       void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                       MPI_Comm comm))
MPISHIM_PROTO(int, Neighbor_alltoallv, (const void *sendbuf, const int sendcounts[],
                                        const int sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                        const int recvcounts[], const int rdispls[],
                                        MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Neighbor_alltoallw, (const void *sendbuf, const int sendcounts[],
                                        const MPI_Aint sdispls[], const MPI_Datatype sendtypes[],
                                        void *recvbuf, const int recvcounts[],
                                        const MPI_Aint rdispls[], const MPI_Datatype recvtypes[],
                                        MPI_Comm comm))
MPISHIM_PROTO(int, Reduce, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                            MPI_Op op, int root, MPI_Comm comm))
MPISHIM_PROTO(int, Reduce_local, (const void *inbuf, void *inoutbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op))
MPISHIM_PROTO(int, Reduce_scatter, (const void *sendbuf, void *recvbuf, const int recvcounts[],
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Reduce_scatter_block, (const void *sendbuf, void *recvbuf, int recvcount,
                                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Scan, (const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Scatter, (const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, int root,
                             MPI_Comm comm))
MPISHIM_PROTO(int, Scatterv, (const void *sendbuf, const int sendcounts[], const int displs[],
                              MPI_Datatype sendtype, void *recvbuf, int recvcount,
                              MPI_Datatype recvtype, int root, MPI_Comm comm))

/* Communicators. */
MPISHIM_PROTO(int, Comm_compare, (MPI_Comm comm1, MPI_Comm comm2, int *result))
MPISHIM_PROTO(int, Comm_create, (MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm))
MPISHIM_PROTO(int, Comm_create_group, (MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm))
MPISHIM_PROTO(int, Comm_dup, (MPI_Comm comm, MPI_Comm *newcomm))
MPISHIM_PROTO(int, Comm_dup_with_info, (MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm))
MPISHIM_PROTO(int, Comm_free, (MPI_Comm *comm))
MPISHIM_PROTO(int, Comm_get_info, (MPI_Comm comm, MPI_Info *info_used))
MPISHIM_PROTO(int, Comm_get_name, (MPI_Comm comm, char *comm_name, int *resultlen))
MPISHIM_PROTO(int, Comm_group, (MPI_Comm comm, MPI_Group *group))
MPISHIM_PROTO(int, Comm_idup, (MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *request))
MPISHIM_PROTO(int, Comm_rank, (MPI_Comm comm, int *rank))
MPISHIM_PROTO(int, Comm_remote_group, (MPI_Comm comm, MPI_Group *group))
MPISHIM_PROTO(int, Comm_remote_size, (MPI_Comm comm, int *size))
MPISHIM_PROTO(int, Comm_set_info, (MPI_Comm comm, MPI_Info info))
MPISHIM_PROTO(int, Comm_set_name, (MPI_Comm comm, const char *comm_name))
MPISHIM_PROTO(int, Comm_size, (MPI_Comm comm, int *size))
MPISHIM_PROTO(int, Comm_split, (MPI_Comm comm, int color, int key, MPI_Comm *newcomm))
MPISHIM_PROTO(int, Comm_split_type, (MPI_Comm comm, int split_type, int key, MPI_Info info,
                                     MPI_Comm *newcomm))
MPISHIM_PROTO(int, Comm_test_inter, (MPI_Comm comm, int *flag))
MPISHIM_PROTO(int, Intercomm_create, (MPI_Comm local_comm, int local_leader, MPI_Comm peer_comm,
                                      int remote_leader, int tag, MPI_Comm *newintercomm))
MPISHIM_PROTO(int, Intercomm_merge, (MPI_Comm intercomm, int high, MPI_Comm *newintracomm))

/* Dynamic processes (MPI-3.1 chapter 10). No process is ever started or connected: every
 * call fails at once on each rank that makes it, without communicating (MPI_ERR_SPAWN,
 * MPI_ERR_PORT for ports, MPI_ERR_SERVICE / MPI_ERR_NAME for names), and its output
 * communicator is MPI_COMM_NULL. MPI_Comm_get_parent gives MPI_COMM_NULL (no process has a
 * parent); MPI_Comm_disconnect waits for the communicator's ranks (a barrier) and frees it. */
/* Dynamic processes (each fails at once, but MPI_Comm_get_parent and MPI_Comm_disconnect). */
MPISHIM_PROTO(int, Close_port, (const char *port_name))
MPISHIM_PROTO(int, Comm_accept, (const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                                 MPI_Comm *newcomm))
MPISHIM_PROTO(int, Comm_connect, (const char *port_name, MPI_Info info, int root, MPI_Comm comm,
                                  MPI_Comm *newcomm))
MPISHIM_PROTO(int, Comm_disconnect, (MPI_Comm *comm))
MPISHIM_PROTO(int, Comm_get_parent, (MPI_Comm *parent))
MPISHIM_PROTO(int, Comm_join, (int fd, MPI_Comm *intercomm))
MPISHIM_PROTO(int, Comm_spawn, (const char *command, char *argv[], int maxprocs, MPI_Info info,
                                int root, MPI_Comm comm, MPI_Comm *intercomm,
                                int array_of_errcodes[]))
MPISHIM_PROTO(int, Comm_spawn_multiple, (int count, char *array_of_commands[],
                                         char **array_of_argv[], const int array_of_maxprocs[],
                                         const MPI_Info array_of_info[], int root, MPI_Comm comm,
                                         MPI_Comm *intercomm, int array_of_errcodes[]))
MPISHIM_PROTO(int, Lookup_name, (const char *service_name, MPI_Info info, char *port_name))
MPISHIM_PROTO(int, Open_port, (MPI_Info info, char *port_name))
MPISHIM_PROTO(int, Publish_name, (const char *service_name, MPI_Info info,
                                  const char *port_name))
MPISHIM_PROTO(int, Unpublish_name, (const char *service_name, MPI_Info info,
                                    const char *port_name))

/* Datatypes. */
MPISHIM_PROTO(int, Get_address, (const void *location, MPI_Aint *address))
MPISHIM_PROTO(int, Get_count, (const MPI_Status *status, MPI_Datatype datatype, int *count))
MPISHIM_PROTO(int, Get_elements, (const MPI_Status *status, MPI_Datatype datatype, int *count))
MPISHIM_PROTO(int, Get_elements_x, (const MPI_Status *status, MPI_Datatype datatype,
                                    MPI_Count *count))
MPISHIM_PROTO(int, Pack, (const void *inbuf, int incount, MPI_Datatype datatype, void *outbuf,
                          int outsize, int *position, MPI_Comm comm))
MPISHIM_PROTO(int, Pack_size, (int incount, MPI_Datatype datatype, MPI_Comm comm, int *size))
MPISHIM_PROTO(int, Status_set_elements, (MPI_Status *status, MPI_Datatype datatype, int count))
MPISHIM_PROTO(int, Status_set_elements_x, (MPI_Status *status, MPI_Datatype datatype,
                                           MPI_Count count))
MPISHIM_PROTO(int, Type_commit, (MPI_Datatype *datatype))
MPISHIM_PROTO(int, Type_contiguous, (int count, MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_darray, (int size, int rank, int ndims, const int array_of_gsizes[],
                                        const int array_of_distribs[], const int array_of_dargs[],
                                        const int array_of_psizes[], int order,
                                        MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_hindexed, (int count, const int array_of_blocklengths[],
                                          const MPI_Aint array_of_displacements[],
                                          MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_hindexed_block, (int count, int blocklength,
                                                const MPI_Aint array_of_displacements[],
                                                MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_hvector, (int count, int blocklength, MPI_Aint stride,
                                         MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_indexed_block, (int count, int blocklength,
                                               const int array_of_displacements[],
                                               MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_resized, (MPI_Datatype oldtype, MPI_Aint lb, MPI_Aint extent,
                                         MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_struct, (int count, const int array_of_blocklengths[],
                                        const MPI_Aint array_of_displacements[],
                                        const MPI_Datatype array_of_types[], MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_subarray, (int ndims, const int array_of_sizes[],
                                          const int array_of_subsizes[],
                                          const int array_of_starts[], int order,
                                          MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_dup, (MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_free, (MPI_Datatype *datatype))
MPISHIM_PROTO(int, Type_get_contents, (MPI_Datatype datatype, int max_integers, int max_addresses,
                                       int max_datatypes, int array_of_integers[],
                                       MPI_Aint array_of_addresses[],
                                       MPI_Datatype array_of_datatypes[]))
MPISHIM_PROTO(int, Type_get_envelope, (MPI_Datatype datatype, int *num_integers, int *num_addresses,
                                       int *num_datatypes, int *combiner))
MPISHIM_PROTO(int, Type_get_extent, (MPI_Datatype datatype, MPI_Aint *lb, MPI_Aint *extent))
MPISHIM_PROTO(int, Type_get_extent_x, (MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent))
MPISHIM_PROTO(int, Type_get_name, (MPI_Datatype datatype, char *type_name, int *resultlen))
MPISHIM_PROTO(int, Type_get_true_extent, (MPI_Datatype datatype, MPI_Aint *true_lb,
                                          MPI_Aint *true_extent))
MPISHIM_PROTO(int, Type_get_true_extent_x, (MPI_Datatype datatype, MPI_Count *true_lb,
                                            MPI_Count *true_extent))
MPISHIM_PROTO(int, Type_indexed, (int count, const int array_of_blocklengths[],
                                  const int array_of_displacements[], MPI_Datatype oldtype,
                                  MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_match_size, (int typeclass, int size, MPI_Datatype *datatype))
MPISHIM_PROTO(int, Type_set_name, (MPI_Datatype datatype, const char *type_name))
MPISHIM_PROTO(int, Type_size, (MPI_Datatype datatype, int *size))
MPISHIM_PROTO(int, Type_size_x, (MPI_Datatype datatype, MPI_Count *size))
MPISHIM_PROTO(int, Type_vector, (int count, int blocklength, int stride, MPI_Datatype oldtype,
                                 MPI_Datatype *newtype))
MPISHIM_PROTO(int, Unpack, (const void *inbuf, int insize, int *position, void *outbuf,
                            int outcount, MPI_Datatype datatype, MPI_Comm comm))
/* Fortran 90 parameterized types: the predefined type of at least the precision p (decimal
 * digits) and exponent range r asked for (MPI_UNDEFINED: any), MPI_ERR_ARG if none has it. */
MPISHIM_PROTO(int, Type_create_f90_complex, (int p, int r, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_f90_integer, (int r, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_f90_real, (int p, int r, MPI_Datatype *newtype))
/* external32 (MPI-3.1 13.5.2): big-endian packing; datarep must be "external32". Datatypes
 * holding long, long double or wchar_t (whose external32 sizes differ from this machine's)
 * are refused with MPI_ERR_UNSUPPORTED_DATAREP. */
MPISHIM_PROTO(int, Pack_external, (const char datarep[], const void *inbuf, int incount,
                                   MPI_Datatype datatype, void *outbuf, MPI_Aint outsize,
                                   MPI_Aint *position))
MPISHIM_PROTO(int, Pack_external_size, (const char datarep[], int incount, MPI_Datatype datatype,
                                        MPI_Aint *size))
MPISHIM_PROTO(int, Unpack_external, (const char datarep[], const void *inbuf, MPI_Aint insize,
                                     MPI_Aint *position, void *outbuf, int outcount,
                                     MPI_Datatype datatype))
/* Removed in MPI-3.0; kept so that old codes still compile. */
MPISHIM_PROTO(int, Address, (void *location, MPI_Aint *address))
MPISHIM_PROTO(int, Type_extent, (MPI_Datatype datatype, MPI_Aint *extent))
MPISHIM_PROTO(int, Type_lb, (MPI_Datatype datatype, MPI_Aint *displacement))
MPISHIM_PROTO(int, Type_ub, (MPI_Datatype datatype, MPI_Aint *displacement))
MPISHIM_PROTO(int, Type_hindexed, (int count, int array_of_blocklengths[],
                                   MPI_Aint array_of_displacements[], MPI_Datatype oldtype,
                                   MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_hvector, (int count, int blocklength, MPI_Aint stride, MPI_Datatype oldtype,
                                  MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_struct, (int count, int array_of_blocklengths[],
                                 MPI_Aint array_of_displacements[], MPI_Datatype array_of_types[],
                                 MPI_Datatype *newtype))
MPISHIM_PROTO(int, Errhandler_create, (MPI_Handler_function *function,
                                       MPI_Errhandler *errhandler))
MPISHIM_PROTO(int, Errhandler_get, (MPI_Comm comm, MPI_Errhandler *errhandler))
MPISHIM_PROTO(int, Errhandler_set, (MPI_Comm comm, MPI_Errhandler errhandler))

/* Error handlers and error classes. */
MPISHIM_PROTO(int, Add_error_class, (int *errorclass))
MPISHIM_PROTO(int, Add_error_code, (int errorclass, int *errorcode))
MPISHIM_PROTO(int, Add_error_string, (int errorcode, const char *string))
MPISHIM_PROTO(int, Comm_call_errhandler, (MPI_Comm comm, int errorcode))
MPISHIM_PROTO(int, Comm_create_errhandler, (MPI_Comm_errhandler_function *comm_errhandler_fn,
                                            MPI_Errhandler *errhandler))
MPISHIM_PROTO(int, Comm_get_errhandler, (MPI_Comm comm, MPI_Errhandler *errhandler))
MPISHIM_PROTO(int, Comm_set_errhandler, (MPI_Comm comm, MPI_Errhandler errhandler))
MPISHIM_PROTO(int, Errhandler_free, (MPI_Errhandler *errhandler))
MPISHIM_PROTO(int, Error_class, (int errorcode, int *errorclass))
MPISHIM_PROTO(int, Error_string, (int errorcode, char *string, int *resultlen))
MPISHIM_PROTO(int, Win_call_errhandler, (MPI_Win win, int errorcode))
MPISHIM_PROTO(int, Win_create_errhandler, (MPI_Win_errhandler_function *win_errhandler_fn,
                                           MPI_Errhandler *errhandler))
MPISHIM_PROTO(int, Win_get_errhandler, (MPI_Win win, MPI_Errhandler *errhandler))
MPISHIM_PROTO(int, Win_set_errhandler, (MPI_Win win, MPI_Errhandler errhandler))

/* Groups. */
MPISHIM_PROTO(int, Group_compare, (MPI_Group group1, MPI_Group group2, int *result))
MPISHIM_PROTO(int, Group_difference, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup))
MPISHIM_PROTO(int, Group_excl, (MPI_Group group, int n, const int ranks[], MPI_Group *newgroup))
MPISHIM_PROTO(int, Group_free, (MPI_Group *group))
MPISHIM_PROTO(int, Group_incl, (MPI_Group group, int n, const int ranks[], MPI_Group *newgroup))
MPISHIM_PROTO(int, Group_intersection, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup))
MPISHIM_PROTO(int, Group_range_excl, (MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup))
MPISHIM_PROTO(int, Group_range_incl, (MPI_Group group, int n, int ranges[][3], MPI_Group *newgroup))
MPISHIM_PROTO(int, Group_rank, (MPI_Group group, int *rank))
MPISHIM_PROTO(int, Group_size, (MPI_Group group, int *size))
MPISHIM_PROTO(int, Group_translate_ranks, (MPI_Group group1, int n, const int ranks1[],
                                           MPI_Group group2, int ranks2[]))
MPISHIM_PROTO(int, Group_union, (MPI_Group group1, MPI_Group group2, MPI_Group *newgroup))

/* Info objects. */
MPISHIM_PROTO(int, Info_create, (MPI_Info *info))
MPISHIM_PROTO(int, Info_delete, (MPI_Info info, const char *key))
MPISHIM_PROTO(int, Info_dup, (MPI_Info info, MPI_Info *newinfo))
MPISHIM_PROTO(int, Info_free, (MPI_Info *info))
MPISHIM_PROTO(int, Info_get, (MPI_Info info, const char *key, int valuelen, char *value, int *flag))
MPISHIM_PROTO(int, Info_get_nkeys, (MPI_Info info, int *nkeys))
MPISHIM_PROTO(int, Info_get_nthkey, (MPI_Info info, int n, char *key))
MPISHIM_PROTO(int, Info_get_valuelen, (MPI_Info info, const char *key, int *valuelen, int *flag))
MPISHIM_PROTO(int, Info_set, (MPI_Info info, const char *key, const char *value))

/* Environment. */
MPISHIM_PROTO(int, Abort, (MPI_Comm comm, int errorcode))
MPISHIM_PROTO(int, Finalize, (void))
MPISHIM_PROTO(int, Finalized, (int *flag))
MPISHIM_PROTO(int, Init, (int *argc, char ***argv))
MPISHIM_PROTO(int, Init_thread, (int *argc, char ***argv, int required, int *provided))
MPISHIM_PROTO(int, Initialized, (int *flag))
MPISHIM_PROTO(int, Is_thread_main, (int *flag))
MPISHIM_PROTO(int, Query_thread, (int *provided))
MPISHIM_PROTO(MPI_Aint, Aint_add, (MPI_Aint base, MPI_Aint disp))
MPISHIM_PROTO(MPI_Aint, Aint_diff, (MPI_Aint addr1, MPI_Aint addr2))
MPISHIM_PROTO(int, Get_library_version, (char *version, int *resultlen))
MPISHIM_PROTO(int, Get_processor_name, (char *name, int *resultlen))
MPISHIM_PROTO(int, Get_version, (int *version, int *subversion))
MPISHIM_PROTO(int, Pcontrol, (const int level, ...))
MPISHIM_PROTO(int, Alloc_mem, (MPI_Aint size, MPI_Info info, void *baseptr))
MPISHIM_PROTO(int, Free_mem, (void *base))

/* Reduction operations. */
MPISHIM_PROTO(int, Op_commutative, (MPI_Op op, int *commute))
MPISHIM_PROTO(int, Op_create, (MPI_User_function *user_fn, int commute, MPI_Op *op))
MPISHIM_PROTO(int, Op_free, (MPI_Op *op))

/* Point-to-point. */
MPISHIM_PROTO(int, Bsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm))
MPISHIM_PROTO(int, Bsend_init, (const void *buf, int count, MPI_Datatype datatype, int dest,
                                int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Buffer_attach, (void *buffer, int size))
MPISHIM_PROTO(int, Buffer_detach, (void *buffer_addr, int *size))
MPISHIM_PROTO(int, Ibsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                            MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Improbe, (int source, int tag, MPI_Comm comm, int *flag, MPI_Message *message,
                             MPI_Status *status))
MPISHIM_PROTO(int, Imrecv, (void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                            MPI_Request *request))
MPISHIM_PROTO(int, Iprobe, (int source, int tag, MPI_Comm comm, int *flag, MPI_Status *status))
MPISHIM_PROTO(int, Irecv, (void *buf, int count, MPI_Datatype datatype, int source, int tag,
                           MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Irsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                            MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Isend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Issend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                            MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Mprobe, (int source, int tag, MPI_Comm comm, MPI_Message *message,
                            MPI_Status *status))
MPISHIM_PROTO(int, Mrecv, (void *buf, int count, MPI_Datatype datatype, MPI_Message *message,
                           MPI_Status *status))
MPISHIM_PROTO(int, Probe, (int source, int tag, MPI_Comm comm, MPI_Status *status))
MPISHIM_PROTO(int, Recv, (void *buf, int count, MPI_Datatype datatype, int source, int tag,
                          MPI_Comm comm, MPI_Status *status))
MPISHIM_PROTO(int, Recv_init, (void *buf, int count, MPI_Datatype datatype, int source, int tag,
                               MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Rsend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm))
MPISHIM_PROTO(int, Rsend_init, (const void *buf, int count, MPI_Datatype datatype, int dest,
                                int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Send, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                          MPI_Comm comm))
MPISHIM_PROTO(int, Send_init, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                               MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Sendrecv, (const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                              int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                              int source, int recvtag, MPI_Comm comm, MPI_Status *status))
MPISHIM_PROTO(int, Sendrecv_replace, (void *buf, int count, MPI_Datatype datatype, int dest,
                                      int sendtag, int source, int recvtag, MPI_Comm comm,
                                      MPI_Status *status))
MPISHIM_PROTO(int, Ssend, (const void *buf, int count, MPI_Datatype datatype, int dest, int tag,
                           MPI_Comm comm))
MPISHIM_PROTO(int, Ssend_init, (const void *buf, int count, MPI_Datatype datatype, int dest,
                                int tag, MPI_Comm comm, MPI_Request *request))

/* Requests and completion. */
MPISHIM_PROTO(int, Cancel, (MPI_Request *request))
/* Generalized requests (MPI-3.1 12.2): an operation the program completes itself with
 * MPI_Grequest_complete. query_fn fills the status when a completion call returns the
 * request (its return value is the request's error class); free_fn runs once when the
 * request is freed (by that completion call or by MPI_Request_free after completion);
 * cancel_fn runs at MPI_Cancel with complete = whether MPI_Grequest_complete was called.
 * The callbacks run in the thread that makes the call. */
typedef int(MPI_Grequest_query_function)(void *extra_state, MPI_Status *status);
typedef int(MPI_Grequest_free_function)(void *extra_state);
typedef int(MPI_Grequest_cancel_function)(void *extra_state, int complete);
MPISHIM_PROTO(int, Grequest_complete, (MPI_Request request))
MPISHIM_PROTO(int, Grequest_start, (MPI_Grequest_query_function *query_fn,
                                    MPI_Grequest_free_function *free_fn,
                                    MPI_Grequest_cancel_function *cancel_fn, void *extra_state,
                                    MPI_Request *request))
MPISHIM_PROTO(int, Request_free, (MPI_Request *request))
MPISHIM_PROTO(int, Request_get_status, (MPI_Request request, int *flag, MPI_Status *status))
MPISHIM_PROTO(int, Start, (MPI_Request *request))
MPISHIM_PROTO(int, Startall, (int count, MPI_Request array_of_requests[]))
MPISHIM_PROTO(int, Status_set_cancelled, (MPI_Status *status, int flag))
MPISHIM_PROTO(int, Test, (MPI_Request *request, int *flag, MPI_Status *status))
MPISHIM_PROTO(int, Test_cancelled, (const MPI_Status *status, int *flag))
MPISHIM_PROTO(int, Testall, (int count, MPI_Request array_of_requests[], int *flag,
                             MPI_Status *array_of_statuses))
MPISHIM_PROTO(int, Testany, (int count, MPI_Request array_of_requests[], int *indx, int *flag,
                             MPI_Status *status))
MPISHIM_PROTO(int, Testsome, (int incount, MPI_Request array_of_requests[], int *outcount,
                              int array_of_indices[], MPI_Status *array_of_statuses))
MPISHIM_PROTO(int, Wait, (MPI_Request *request, MPI_Status *status))
MPISHIM_PROTO(int, Waitall, (int count, MPI_Request array_of_requests[],
                             MPI_Status *array_of_statuses))
MPISHIM_PROTO(int, Waitany, (int count, MPI_Request array_of_requests[], int *indx,
                             MPI_Status *status))
MPISHIM_PROTO(int, Waitsome, (int incount, MPI_Request array_of_requests[], int *outcount,
                              int array_of_indices[], MPI_Status *array_of_statuses))

/* One-sided communication (RMA windows). */
MPISHIM_PROTO(int, Accumulate, (const void *origin_addr, int origin_count,
                                MPI_Datatype origin_datatype, int target_rank, MPI_Aint target_disp,
                                int target_count, MPI_Datatype target_datatype, MPI_Op op,
                                MPI_Win win))
MPISHIM_PROTO(int, Compare_and_swap, (const void *origin_addr, const void *compare_addr,
                                      void *result_addr, MPI_Datatype datatype, int target_rank,
                                      MPI_Aint target_disp, MPI_Win win))
MPISHIM_PROTO(int, Fetch_and_op, (const void *origin_addr, void *result_addr, MPI_Datatype datatype,
                                  int target_rank, MPI_Aint target_disp, MPI_Op op, MPI_Win win))
MPISHIM_PROTO(int, Get, (void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                         int target_rank, MPI_Aint target_disp, int target_count,
                         MPI_Datatype target_datatype, MPI_Win win))
MPISHIM_PROTO(int, Get_accumulate, (const void *origin_addr, int origin_count,
                                    MPI_Datatype origin_datatype, void *result_addr,
                                    int result_count, MPI_Datatype result_datatype, int target_rank,
                                    MPI_Aint target_disp, int target_count,
                                    MPI_Datatype target_datatype, MPI_Op op, MPI_Win win))
MPISHIM_PROTO(int, Put, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                         int target_rank, MPI_Aint target_disp, int target_count,
                         MPI_Datatype target_datatype, MPI_Win win))
MPISHIM_PROTO(int, Raccumulate, (const void *origin_addr, int origin_count,
                                 MPI_Datatype origin_datatype, int target_rank,
                                 MPI_Aint target_disp, int target_count,
                                 MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                                 MPI_Request *request))
MPISHIM_PROTO(int, Rget, (void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                          int target_rank, MPI_Aint target_disp, int target_count,
                          MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request))
MPISHIM_PROTO(int, Rget_accumulate, (const void *origin_addr, int origin_count,
                                     MPI_Datatype origin_datatype, void *result_addr,
                                     int result_count, MPI_Datatype result_datatype,
                                     int target_rank, MPI_Aint target_disp, int target_count,
                                     MPI_Datatype target_datatype, MPI_Op op, MPI_Win win,
                                     MPI_Request *request))
MPISHIM_PROTO(int, Rput, (const void *origin_addr, int origin_count, MPI_Datatype origin_datatype,
                          int target_rank, MPI_Aint target_disp, int target_count,
                          MPI_Datatype target_datatype, MPI_Win win, MPI_Request *request))
MPISHIM_PROTO(int, Win_allocate, (MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                  void *baseptr, MPI_Win *win))
MPISHIM_PROTO(int, Win_allocate_shared, (MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                                         void *baseptr, MPI_Win *win))
MPISHIM_PROTO(int, Win_attach, (MPI_Win win, void *base, MPI_Aint size))
MPISHIM_PROTO(int, Win_complete, (MPI_Win win))
MPISHIM_PROTO(int, Win_create, (void *base, MPI_Aint size, int disp_unit, MPI_Info info,
                                MPI_Comm comm, MPI_Win *win))
MPISHIM_PROTO(int, Win_create_dynamic, (MPI_Info info, MPI_Comm comm, MPI_Win *win))
MPISHIM_PROTO(int, Win_detach, (MPI_Win win, const void *base))
MPISHIM_PROTO(int, Win_fence, (int assert, MPI_Win win))
MPISHIM_PROTO(int, Win_flush, (int rank, MPI_Win win))
MPISHIM_PROTO(int, Win_flush_all, (MPI_Win win))
MPISHIM_PROTO(int, Win_flush_local, (int rank, MPI_Win win))
MPISHIM_PROTO(int, Win_flush_local_all, (MPI_Win win))
MPISHIM_PROTO(int, Win_free, (MPI_Win *win))
MPISHIM_PROTO(int, Win_get_group, (MPI_Win win, MPI_Group *group))
MPISHIM_PROTO(int, Win_get_info, (MPI_Win win, MPI_Info *info_used))
MPISHIM_PROTO(int, Win_get_name, (MPI_Win win, char *win_name, int *resultlen))
MPISHIM_PROTO(int, Win_lock, (int lock_type, int rank, int assert, MPI_Win win))
MPISHIM_PROTO(int, Win_lock_all, (int assert, MPI_Win win))
MPISHIM_PROTO(int, Win_post, (MPI_Group group, int assert, MPI_Win win))
MPISHIM_PROTO(int, Win_set_info, (MPI_Win win, MPI_Info info))
MPISHIM_PROTO(int, Win_set_name, (MPI_Win win, const char *win_name))
MPISHIM_PROTO(int, Win_shared_query, (MPI_Win win, int rank, MPI_Aint *size, int *disp_unit,
                                      void *baseptr))
MPISHIM_PROTO(int, Win_start, (MPI_Group group, int assert, MPI_Win win))
MPISHIM_PROTO(int, Win_sync, (MPI_Win win))
MPISHIM_PROTO(int, Win_test, (MPI_Win win, int *flag))
MPISHIM_PROTO(int, Win_unlock, (int rank, MPI_Win win))
MPISHIM_PROTO(int, Win_unlock_all, (MPI_Win win))
MPISHIM_PROTO(int, Win_wait, (MPI_Win win))

/* Timers. */
MPISHIM_PROTO(double, Wtick, (void))
MPISHIM_PROTO(double, Wtime, (void))

/* Process topologies. */
MPISHIM_PROTO(int, Cart_coords, (MPI_Comm comm, int rank, int maxdims, int coords[]))
MPISHIM_PROTO(int, Cart_create, (MPI_Comm comm_old, int ndims, const int dims[],
                                 const int periods[], int reorder, MPI_Comm *comm_cart))
MPISHIM_PROTO(int, Cart_get, (MPI_Comm comm, int maxdims, int dims[], int periods[], int coords[]))
MPISHIM_PROTO(int, Cart_map, (MPI_Comm comm, int ndims, const int dims[], const int periods[],
                              int *newrank))
MPISHIM_PROTO(int, Cart_rank, (MPI_Comm comm, const int coords[], int *rank))
MPISHIM_PROTO(int, Cart_shift, (MPI_Comm comm, int direction, int disp, int *rank_source,
                                int *rank_dest))
MPISHIM_PROTO(int, Cart_sub, (MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm))
MPISHIM_PROTO(int, Cartdim_get, (MPI_Comm comm, int *ndims))
MPISHIM_PROTO(int, Dims_create, (int nnodes, int ndims, int dims[]))
MPISHIM_PROTO(int, Dist_graph_create, (MPI_Comm comm_old, int n, const int sources[],
                                       const int degrees[], const int destinations[],
                                       const int weights[], MPI_Info info, int reorder,
                                       MPI_Comm *comm_dist_graph))
MPISHIM_PROTO(int, Dist_graph_create_adjacent, (MPI_Comm comm_old, int indegree,
                                                const int sources[], const int sourceweights[],
                                                int outdegree, const int destinations[],
                                                const int destweights[], MPI_Info info, int reorder,
                                                MPI_Comm *comm_dist_graph))
MPISHIM_PROTO(int, Dist_graph_neighbors, (MPI_Comm comm, int maxindegree, int sources[],
                                          int sourceweights[], int maxoutdegree, int destinations[],
                                          int destweights[]))
MPISHIM_PROTO(int, Dist_graph_neighbors_count, (MPI_Comm comm, int *indegree, int *outdegree,
                                                int *weighted))
MPISHIM_PROTO(int, Graph_create, (MPI_Comm comm_old, int nnodes, const int indx[],
                                  const int edges[], int reorder, MPI_Comm *comm_graph))
MPISHIM_PROTO(int, Graph_get, (MPI_Comm comm, int maxindex, int maxedges, int indx[], int edges[]))
MPISHIM_PROTO(int, Graph_map, (MPI_Comm comm, int nnodes, const int indx[], const int edges[],
                               int *newrank))
MPISHIM_PROTO(int, Graph_neighbors, (MPI_Comm comm, int rank, int maxneighbors, int neighbors[]))
MPISHIM_PROTO(int, Graph_neighbors_count, (MPI_Comm comm, int rank, int *nneighbors))
MPISHIM_PROTO(int, Graphdims_get, (MPI_Comm comm, int *nnodes, int *nedges))
MPISHIM_PROTO(int, Topo_test, (MPI_Comm comm, int *status))

/* Extensions. */
/* 1 when this build can take CUDA device buffers (built with CUDA and a GPU is present). */
MPISHIM_API int MPIX_Query_cuda_support(void);
MPISHIM_API int PMPIX_Query_cuda_support(void);

/* ---- MPICH ABI: Fortran status conversion and MPICH's data objects (shim_mpich_abi.c). ---- */
/* A Fortran status is MPI_F_STATUS_SIZE MPI_Fints; these index its fields (MPI-4.0). */
#define MPI_F_STATUS_SIZE 5
#define MPI_F_SOURCE 2
#define MPI_F_TAG 3
#define MPI_F_ERROR 4
typedef struct {
    MPI_Fint count_lo;
    MPI_Fint count_hi_and_cancelled;
    MPI_Fint MPI_SOURCE;
    MPI_Fint MPI_TAG;
    MPI_Fint MPI_ERROR;
} MPI_F08_status;
/* Variables, as in MPICH's mpi.h, so that a binary built against it finds them here. Passing
 * one to MPI_Status_f2c is an error (MPI_ERR_ARG). */
MPISHIM_API extern MPI_Fint *MPI_F_STATUS_IGNORE;
MPISHIM_API extern MPI_Fint *MPI_F_STATUSES_IGNORE;
MPISHIM_API extern MPI_F08_status *MPI_F08_STATUS_IGNORE;
MPISHIM_API extern MPI_F08_status *MPI_F08_STATUSES_IGNORE;
/* Fortran status conversion. */
MPISHIM_PROTO(int, Status_c2f, (const MPI_Status *c_status, MPI_Fint *f_status))
MPISHIM_PROTO(int, Status_f2c, (const MPI_Fint *f_status, MPI_Status *c_status))
/* ---- End of the MPICH ABI block. ---- */

/* ---- MPI-4.0 large-count functions (tools/gen_large_count.py writes this block). ---- */
/* Large-count functions (MPI-4.0). */
MPISHIM_PROTO(int, Allgather_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                 MPI_Comm comm))
MPISHIM_PROTO(int, Allreduce_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Alltoall_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                MPI_Comm comm))
MPISHIM_PROTO(int, Bcast_c, (void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                             MPI_Comm comm))
MPISHIM_PROTO(int, Exscan_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Gather_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                              MPI_Comm comm))
MPISHIM_PROTO(int, Iallgather_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Iallreduce_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  MPI_Request *request))
MPISHIM_PROTO(int, Ialltoall_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                 MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ibcast_c, (void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                              MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Iexscan_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               MPI_Request *request))
MPISHIM_PROTO(int, Igather_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ineighbor_allgather_c, (const void *sendbuf, MPI_Count sendcount,
                                           MPI_Datatype sendtype, void *recvbuf,
                                           MPI_Count recvcount, MPI_Datatype recvtype,
                                           MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Ineighbor_alltoall_c, (const void *sendbuf, MPI_Count sendcount,
                                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                          MPI_Datatype recvtype, MPI_Comm comm,
                                          MPI_Request *request))
MPISHIM_PROTO(int, Ireduce_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                               MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                               MPI_Request *request))
MPISHIM_PROTO(int, Ireduce_scatter_block_c, (const void *sendbuf, void *recvbuf,
                                             MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                             MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Iscan_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Iscatter_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                                MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Neighbor_allgather_c, (const void *sendbuf, MPI_Count sendcount,
                                          MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                          MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Neighbor_alltoall_c, (const void *sendbuf, MPI_Count sendcount,
                                         MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                         MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Reduce_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                              MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm))
MPISHIM_PROTO(int, Reduce_local_c, (const void *inbuf, void *inoutbuf, MPI_Count count,
                                    MPI_Datatype datatype, MPI_Op op))
MPISHIM_PROTO(int, Reduce_scatter_block_c, (const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Scan_c, (const void *sendbuf, void *recvbuf, MPI_Count count,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm))
MPISHIM_PROTO(int, Scatter_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                               MPI_Comm comm))
MPISHIM_PROTO(int, Get_count_c, (const MPI_Status *status, MPI_Datatype datatype, MPI_Count *count))
MPISHIM_PROTO(int, Get_elements_c, (const MPI_Status *status, MPI_Datatype datatype,
                                    MPI_Count *count))
MPISHIM_PROTO(int, Pack_c, (const void *inbuf, MPI_Count incount, MPI_Datatype datatype,
                            void *outbuf, MPI_Count outsize, MPI_Count *position, MPI_Comm comm))
MPISHIM_PROTO(int, Pack_size_c, (MPI_Count incount, MPI_Datatype datatype, MPI_Comm comm,
                                 MPI_Count *size))
MPISHIM_PROTO(int, Type_contiguous_c, (MPI_Count count, MPI_Datatype oldtype,
                                       MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_hvector_c, (MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                           MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_create_resized_c, (MPI_Datatype oldtype, MPI_Count lb, MPI_Count extent,
                                           MPI_Datatype *newtype))
MPISHIM_PROTO(int, Type_get_extent_c, (MPI_Datatype datatype, MPI_Count *lb, MPI_Count *extent))
MPISHIM_PROTO(int, Type_get_true_extent_c, (MPI_Datatype datatype, MPI_Count *true_lb,
                                            MPI_Count *true_extent))
MPISHIM_PROTO(int, Type_size_c, (MPI_Datatype datatype, MPI_Count *size))
MPISHIM_PROTO(int, Type_vector_c, (MPI_Count count, MPI_Count blocklength, MPI_Count stride,
                                   MPI_Datatype oldtype, MPI_Datatype *newtype))
MPISHIM_PROTO(int, Unpack_c, (const void *inbuf, MPI_Count insize, MPI_Count *position,
                              void *outbuf, MPI_Count outcount, MPI_Datatype datatype,
                              MPI_Comm comm))
MPISHIM_PROTO(int, Bsend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                             int tag, MPI_Comm comm))
MPISHIM_PROTO(int, Bsend_init_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                  int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Buffer_attach_c, (void *buffer, MPI_Count size))
MPISHIM_PROTO(int, Buffer_detach_c, (void *buffer_addr, MPI_Count *size))
MPISHIM_PROTO(int, Ibsend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                              int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Imrecv_c, (void *buf, MPI_Count count, MPI_Datatype datatype,
                              MPI_Message *message, MPI_Request *request))
MPISHIM_PROTO(int, Irecv_c, (void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                             MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Irsend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                              int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Isend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                             int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Issend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                              int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Mrecv_c, (void *buf, MPI_Count count, MPI_Datatype datatype,
                             MPI_Message *message, MPI_Status *status))
MPISHIM_PROTO(int, Recv_c, (void *buf, MPI_Count count, MPI_Datatype datatype, int source, int tag,
                            MPI_Comm comm, MPI_Status *status))
MPISHIM_PROTO(int, Recv_init_c, (void *buf, MPI_Count count, MPI_Datatype datatype, int source,
                                 int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Rsend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                             int tag, MPI_Comm comm))
MPISHIM_PROTO(int, Rsend_init_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                  int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Send_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                            int tag, MPI_Comm comm))
MPISHIM_PROTO(int, Send_init_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                 int tag, MPI_Comm comm, MPI_Request *request))
MPISHIM_PROTO(int, Sendrecv_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                int dest, int sendtag, void *recvbuf, MPI_Count recvcount,
                                MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm,
                                MPI_Status *status))
MPISHIM_PROTO(int, Sendrecv_replace_c, (void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                        int sendtag, int source, int recvtag, MPI_Comm comm,
                                        MPI_Status *status))
MPISHIM_PROTO(int, Ssend_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                             int tag, MPI_Comm comm))
MPISHIM_PROTO(int, Ssend_init_c, (const void *buf, MPI_Count count, MPI_Datatype datatype, int dest,
                                  int tag, MPI_Comm comm, MPI_Request *request))
/* ---- End of the large-count functions. ---- */

/* ---- MPI-4.0 large-count collectives with count arrays (shim_large_count_v.c). ---- */
/* Large-count functions with count arrays (MPI-4.0). */
MPISHIM_PROTO(int, Allgatherv_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, const MPI_Count recvcounts[],
                                  const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Alltoallv_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                 const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                 const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                 MPI_Datatype recvtype, MPI_Comm comm))
MPISHIM_PROTO(int, Gatherv_c, (const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                               MPI_Datatype recvtype, int root, MPI_Comm comm))
MPISHIM_PROTO(int, Scatterv_c, (const void *sendbuf, const MPI_Count sendcounts[],
                                const MPI_Aint displs[], MPI_Datatype sendtype, void *recvbuf,
                                MPI_Count recvcount, MPI_Datatype recvtype, int root,
                                MPI_Comm comm))
MPISHIM_PROTO(int, Reduce_scatter_c, (const void *sendbuf, void *recvbuf,
                                      const MPI_Count recvcounts[], MPI_Datatype datatype,
                                      MPI_Op op, MPI_Comm comm))
/* ---- End of the large-count collectives with count arrays. ---- */

/* ---- The tool information interface, MPI_T (MPI-3.1 chapter 14.3; shim_mpit.c). ----
 * A tool reads the library's settings (control variables: every MPISHIM_* variable) and
 * counters (performance variables), grouped in categories; doc/mpi-t.md lists them. Usable
 * before MPI_Init and after MPI_Finalize, between MPI_T_init_thread and MPI_T_finalize
 * (which count: each init needs its finalize). The functions never call an error handler;
 * they return MPI_SUCCESS or an MPI_T_ERR_* code. Handles and constants have MPICH's
 * values and representation (pointers), so that MPICH-built tools run unchanged. */
typedef struct mpishim_t_enum *MPI_T_enum;
typedef struct mpishim_t_cvar_handle *MPI_T_cvar_handle;
typedef struct mpishim_t_pvar_handle *MPI_T_pvar_handle;
typedef struct mpishim_t_pvar_session *MPI_T_pvar_session;
/* MPI-4.0 events (15.3.8): mpishim has no event types, so no registration or instance
 * ever exists; the types are MPICH 4.0's, for tools that probe. */
typedef struct mpishim_t_event_registration *MPI_T_event_registration;
typedef struct mpishim_t_event_instance *MPI_T_event_instance;
typedef enum MPI_T_cb_safety {
    MPI_T_CB_REQUIRE_NONE = 0,
    MPI_T_CB_REQUIRE_MPI_RESTRICTED,
    MPI_T_CB_REQUIRE_THREAD_SAFE,
    MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE
} MPI_T_cb_safety;
typedef enum MPI_T_source_order {
    MPI_T_SOURCE_ORDERED = 0,
    MPI_T_SOURCE_UNORDERED
} MPI_T_source_order;
typedef void(MPI_T_event_cb_function)(MPI_T_event_instance event_instance,
                                      MPI_T_event_registration event_registration,
                                      MPI_T_cb_safety cb_safety, void *user_data);
typedef void(MPI_T_event_free_cb_function)(MPI_T_event_registration event_registration,
                                           MPI_T_cb_safety cb_safety, void *user_data);
typedef void(MPI_T_event_dropped_cb_function)(MPI_Count count,
                                              MPI_T_event_registration event_registration,
                                              int source_index, MPI_T_cb_safety cb_safety,
                                              void *user_data);

MPISHIM_API extern struct mpishim_t_pvar_handle *const MPI_T_PVAR_ALL_HANDLES;
#define MPI_T_ENUM_NULL ((MPI_T_enum)0)
#define MPI_T_CVAR_HANDLE_NULL ((MPI_T_cvar_handle)0)
#define MPI_T_PVAR_HANDLE_NULL ((MPI_T_pvar_handle)0)
#define MPI_T_PVAR_SESSION_NULL ((MPI_T_pvar_session)0)

#define MPI_T_VERBOSITY_USER_BASIC 221
#define MPI_T_VERBOSITY_USER_DETAIL 222
#define MPI_T_VERBOSITY_USER_ALL 223
#define MPI_T_VERBOSITY_TUNER_BASIC 224
#define MPI_T_VERBOSITY_TUNER_DETAIL 225
#define MPI_T_VERBOSITY_TUNER_ALL 226
#define MPI_T_VERBOSITY_MPIDEV_BASIC 227
#define MPI_T_VERBOSITY_MPIDEV_DETAIL 228
#define MPI_T_VERBOSITY_MPIDEV_ALL 229

#define MPI_T_BIND_NO_OBJECT 9700
#define MPI_T_BIND_MPI_COMM 9701
#define MPI_T_BIND_MPI_DATATYPE 9702
#define MPI_T_BIND_MPI_ERRHANDLER 9703
#define MPI_T_BIND_MPI_FILE 9704
#define MPI_T_BIND_MPI_GROUP 9705
#define MPI_T_BIND_MPI_OP 9706
#define MPI_T_BIND_MPI_REQUEST 9707
#define MPI_T_BIND_MPI_WIN 9708
#define MPI_T_BIND_MPI_MESSAGE 9709
#define MPI_T_BIND_MPI_INFO 9710

#define MPI_T_SCOPE_CONSTANT 60438
#define MPI_T_SCOPE_READONLY 60439
#define MPI_T_SCOPE_LOCAL 60440
#define MPI_T_SCOPE_GROUP 60441
#define MPI_T_SCOPE_GROUP_EQ 60442
#define MPI_T_SCOPE_ALL 60443
#define MPI_T_SCOPE_ALL_EQ 60444

#define MPI_T_PVAR_CLASS_STATE 240
#define MPI_T_PVAR_CLASS_LEVEL 241
#define MPI_T_PVAR_CLASS_SIZE 242
#define MPI_T_PVAR_CLASS_PERCENTAGE 243
#define MPI_T_PVAR_CLASS_HIGHWATERMARK 244
#define MPI_T_PVAR_CLASS_LOWWATERMARK 245
#define MPI_T_PVAR_CLASS_COUNTER 246
#define MPI_T_PVAR_CLASS_AGGREGATE 247
#define MPI_T_PVAR_CLASS_TIMER 248
#define MPI_T_PVAR_CLASS_GENERIC 249

#define MPI_T_ERR_MEMORY 59
#define MPI_T_ERR_NOT_INITIALIZED 60
#define MPI_T_ERR_CANNOT_INIT 61
#define MPI_T_ERR_INVALID_INDEX 62
#define MPI_T_ERR_INVALID_ITEM 63
#define MPI_T_ERR_INVALID_HANDLE 64
#define MPI_T_ERR_OUT_OF_HANDLES 65
#define MPI_T_ERR_OUT_OF_SESSIONS 66
#define MPI_T_ERR_INVALID_SESSION 67
#define MPI_T_ERR_CVAR_SET_NOT_NOW 68
#define MPI_T_ERR_CVAR_SET_NEVER 69
#define MPI_T_ERR_PVAR_NO_STARTSTOP 70
#define MPI_T_ERR_PVAR_NO_WRITE 71
#define MPI_T_ERR_PVAR_NO_ATOMIC 72
#define MPI_T_ERR_INVALID_NAME 73
#define MPI_T_ERR_INVALID 74
#define MPI_T_ERR_NOT_SUPPORTED 78

/* The tool information interface, MPI_T (MPI-3.1). */
MPISHIM_PROTO(int, T_init_thread, (int required, int *provided))
MPISHIM_PROTO(int, T_finalize, (void))
MPISHIM_PROTO(int, T_enum_get_info, (MPI_T_enum enumtype, int *num, char *name, int *name_len))
MPISHIM_PROTO(int, T_enum_get_item,
              (MPI_T_enum enumtype, int indx, int *value, char *name, int *name_len))
MPISHIM_PROTO(int, T_cvar_get_num, (int *num_cvar))
MPISHIM_PROTO(int, T_cvar_get_info,
              (int cvar_index, char *name, int *name_len, int *verbosity, MPI_Datatype *datatype,
               MPI_T_enum *enumtype, char *desc, int *desc_len, int *bind, int *scope))
MPISHIM_PROTO(int, T_cvar_get_index, (const char *name, int *cvar_index))
MPISHIM_PROTO(int, T_cvar_handle_alloc,
              (int cvar_index, void *obj_handle, MPI_T_cvar_handle *handle, int *count))
MPISHIM_PROTO(int, T_cvar_handle_free, (MPI_T_cvar_handle * handle))
MPISHIM_PROTO(int, T_cvar_read, (MPI_T_cvar_handle handle, void *buf))
MPISHIM_PROTO(int, T_cvar_write, (MPI_T_cvar_handle handle, const void *buf))
MPISHIM_PROTO(int, T_pvar_get_num, (int *num_pvar))
MPISHIM_PROTO(int, T_pvar_get_info,
              (int pvar_index, char *name, int *name_len, int *verbosity, int *var_class,
               MPI_Datatype *datatype, MPI_T_enum *enumtype, char *desc, int *desc_len,
               int *bind, int *readonly, int *continuous, int *atomic))
MPISHIM_PROTO(int, T_pvar_get_index, (const char *name, int var_class, int *pvar_index))
MPISHIM_PROTO(int, T_pvar_session_create, (MPI_T_pvar_session * session))
MPISHIM_PROTO(int, T_pvar_session_free, (MPI_T_pvar_session * session))
MPISHIM_PROTO(int, T_pvar_handle_alloc, (MPI_T_pvar_session session, int pvar_index,
                                         void *obj_handle, MPI_T_pvar_handle *handle, int *count))
MPISHIM_PROTO(int, T_pvar_handle_free, (MPI_T_pvar_session session, MPI_T_pvar_handle *handle))
MPISHIM_PROTO(int, T_pvar_start, (MPI_T_pvar_session session, MPI_T_pvar_handle handle))
MPISHIM_PROTO(int, T_pvar_stop, (MPI_T_pvar_session session, MPI_T_pvar_handle handle))
MPISHIM_PROTO(int, T_pvar_read, (MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf))
MPISHIM_PROTO(int, T_pvar_write,
              (MPI_T_pvar_session session, MPI_T_pvar_handle handle, const void *buf))
MPISHIM_PROTO(int, T_pvar_reset, (MPI_T_pvar_session session, MPI_T_pvar_handle handle))
MPISHIM_PROTO(int, T_pvar_readreset,
              (MPI_T_pvar_session session, MPI_T_pvar_handle handle, void *buf))
MPISHIM_PROTO(int, T_category_get_num, (int *num_cat))
MPISHIM_PROTO(int, T_category_get_info,
              (int cat_index, char *name, int *name_len, char *desc, int *desc_len, int *num_cvars,
               int *num_pvars, int *num_categories))
MPISHIM_PROTO(int, T_category_get_index, (const char *name, int *cat_index))
MPISHIM_PROTO(int, T_category_get_cvars, (int cat_index, int len, int indices[]))
MPISHIM_PROTO(int, T_category_get_pvars, (int cat_index, int len, int indices[]))
MPISHIM_PROTO(int, T_category_get_categories, (int cat_index, int len, int indices[]))
MPISHIM_PROTO(int, T_category_changed, (int *update_number))
/* Events of the tool interface (MPI-4.0; mpishim has no event type, and says so). */
MPISHIM_PROTO(int, T_event_get_num, (int *num_events))
MPISHIM_PROTO(int, T_event_get_info,
              (int event_index, char *name, int *name_len, int *verbosity,
               MPI_Datatype array_of_datatypes[], MPI_Aint array_of_displacements[],
               int *num_elements, MPI_T_enum *enumtype, MPI_Info *info, char *desc,
               int *desc_len, int *bind))
MPISHIM_PROTO(int, T_event_get_index, (const char *name, int *event_index))
MPISHIM_PROTO(int, T_event_handle_alloc, (int event_index, void *obj_handle, MPI_Info info,
                                          MPI_T_event_registration *event_registration))
MPISHIM_PROTO(int, T_event_handle_set_info,
              (MPI_T_event_registration event_registration, MPI_Info info))
MPISHIM_PROTO(int, T_event_handle_get_info,
              (MPI_T_event_registration event_registration, MPI_Info *info_used))
MPISHIM_PROTO(int, T_event_register_callback,
              (MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
               MPI_Info info, void *user_data, MPI_T_event_cb_function event_cb_function))
MPISHIM_PROTO(int, T_event_callback_set_info,
              (MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
               MPI_Info info))
MPISHIM_PROTO(int, T_event_callback_get_info,
              (MPI_T_event_registration event_registration, MPI_T_cb_safety cb_safety,
               MPI_Info *info_used))
MPISHIM_PROTO(int, T_event_handle_free,
              (MPI_T_event_registration event_registration, void *user_data,
               MPI_T_event_free_cb_function free_cb_function))
MPISHIM_PROTO(int, T_event_set_dropped_handler,
              (MPI_T_event_registration event_registration,
               MPI_T_event_dropped_cb_function dropped_cb_function))
MPISHIM_PROTO(int, T_event_read,
              (MPI_T_event_instance event_instance, int element_index, void *buffer))
MPISHIM_PROTO(int, T_event_copy, (MPI_T_event_instance event_instance, void *buffer))
MPISHIM_PROTO(int, T_event_get_timestamp,
              (MPI_T_event_instance event_instance, MPI_Count *event_timestamp))
MPISHIM_PROTO(int, T_event_get_source, (MPI_T_event_instance event_instance, int *source_index))
MPISHIM_PROTO(int, T_source_get_num, (int *num_sources))
MPISHIM_PROTO(int, T_source_get_info,
              (int source_index, char *name, int *name_len, char *desc, int *desc_len,
               MPI_T_source_order *ordering, MPI_Count *ticks_per_second, MPI_Count *max_ticks,
               MPI_Info *info))
MPISHIM_PROTO(int, T_source_get_timestamp, (int source_index, MPI_Count *timestamp))
MPISHIM_PROTO(int, T_category_get_num_events, (int cat_index, int *num_events))
MPISHIM_PROTO(int, T_category_get_events, (int cat_index, int len, int indices[]))
/* ---- End of MPI_T. ---- */

#undef MPISHIM_PROTO

#if defined(__cplusplus)
}
#endif

#endif /* MPI_INCLUDED */
