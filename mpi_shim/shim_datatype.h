/*
 * shim_datatype.h - MPI datatypes: the predefined ones, derived types (a short list of
 * contiguous byte blocks, or a compact description for larger ones), and packing between a
 * typed buffer and contiguous bytes.
 *
 * Every datatype, predefined or derived, is a struct shim_dtype. Its typemap is kept in one
 * of two forms, both private to shim_datatype.c (everything else walks a type with
 * struct shim_dtype_iter or packs it with the calls below):
 * - flat: `blocks` lists the bytes of one element as (offset from the buffer pointer,
 *   length) pairs in typemap order, with adjacent blocks merged. Types of at most
 *   SHIM_DTYPE_FLAT_MAX blocks are kept so (the common case; a short list is the fastest
 *   to pack), and longer ones only where the compact form would take more memory (an
 *   indexed type of irregular blocks: its blocks are its arguments).
 * - compact: any larger type is a list of `ent` entries, "nrep repetitions, rstride bytes
 *   apart, of count consecutive elements of the type below, at disp", the type below kept
 *   by reference. A vector is one entry whatever its count, so memory grows with the number
 *   of constructor calls and arguments, never with the block count (MPICH's dataloops and
 *   yaksa keep types the same way).
 * Element k of a buffer starts at buf + k * extent.
 *
 * The packed form of count elements (what goes on the wire, and what MPI_Pack writes) is
 * the blocks of element 0, then those of element 1, ..., copied back to back: count * size
 * bytes. It follows the type signature, never the layout: padding is not data, so the
 * MINLOC/MAXLOC pair types (struct { double v; int i; } and friends) pack as the value's
 * bytes followed by the int's (12 bytes for MPI_DOUBLE_INT), and a message sent as
 * {double, int} structs matches one received as MPI_DOUBLE_INT. When base != PG_DTYPE_NONE
 * the packed form is exactly count * base_per_elem elements of that pg_dtype, in native
 * layout for every base but the pair types, whose packed elements are value-then-index with
 * no padding (shim_op.c reduces those with pg_reduce_loc_packed). Byte counts in an
 * MPI_Status are packed bytes, so MPI_Get_count divides them by `size`.
 *
 * Handles: predefined types have MPICH's builtin handles; derived types get
 * MPISHIM_HANDLE_MAKE(MPISHIM_KIND_INDIRECT, MPISHIM_OBJ_DATATYPE, generation << 20 | slot),
 * so a freed handle is rejected (MPI_ERR_TYPE) even after its slot is reused, in all but one
 * case of 64.
 *
 * Lifetime: a derived type holds references (shim_dtype_retain) - one for its handle, one
 * for each derived type built from it, and one for each pending operation that the MPI layer
 * takes. MPI_Type_free removes the handle at once (later use is MPI_ERR_TYPE) and drops the
 * handle's reference; the object lives until the last reference goes. Predefined types are
 * static: retain/release do nothing for them.
 *
 * Threads: lookups, retain/release, pack/unpack may run in any thread at once; constructors
 * and MPI_Type_free serialize on an internal lock. Using a handle while another thread frees
 * it is the caller's error, as in MPI.
 */
#ifndef SHIM_DATATYPE_H
#define SHIM_DATATYPE_H

#include "mpi.h"
#include "pg_dtype.h"

#include <stdbool.h>
#include <stddef.h>

/* One contiguous run of bytes of an element: [off, off + len) relative to the element. */
struct shim_attr;

struct shim_dtype_block {
    MPI_Aint off;
    size_t len;
};

/* Types of more blocks than this (per element) are kept in the compact form, unless it is
 * larger than their list of blocks. */
#define SHIM_DTYPE_FLAT_MAX 64

/* One entry of the compact form (defined in shim_datatype.c). */
struct shim_dtype_ent;

/* A run of the type signature: n basic elements of esize bytes each, back to back in the
 * packed form. One element's signature is a list of runs, merged where sizes repeat, so a
 * type of one basic type has one run whatever its block count. */
struct shim_sig_run {
    size_t esize;
    size_t n;
    size_t unit; /* bytes swapped as one number in external32 (a complex: half of esize) */
    int ext;     /* how external32 writes each number (enum in shim_datatype.c): 0 swaps it */
};

struct shim_dtype {
    MPI_Datatype handle; /* the handle it was created with (builtin: its MPI handle) */
    int refs;            /* references (atomic); unused for builtins */
    int handle_refs;     /* user handles (1, +1 per MPI_Type_get_contents that returns it) */
    bool builtin;
    bool committed;
    bool contig; /* one block at offset 0 with size == extent: send buf as it is */

    size_t size;     /* packed bytes per element */
    MPI_Count mpi_size; /* MPI_Type_size (equal to size; kept as MPI_Count for _x calls) */
    MPI_Aint lb, extent;
    MPI_Aint true_lb, true_extent;
    size_t align; /* largest alignment of the basic types, for MPI_Type_create_struct */
    bool explicit_lb, explicit_ub; /* set by MPI_LB / MPI_UB in MPI_Type_struct */

    enum pg_dtype base;   /* the element type of every packed byte, or PG_DTYPE_NONE */
    size_t base_per_elem; /* base elements per element of this type (0 when base is NONE) */
    size_t nbasic;        /* basic MPI elements per element, for MPI_Get_elements */

    bool no_external32; /* holds a basic type whose external32 size differs (long, ...) */
    /* Derived types: runs of one element's signature (builtins: computed where needed).
     * A signature of more than SHIM_DTYPE_FLAT_MAX runs (mixed types repeated) is not kept
     * (nsig 0, sig NULL): the type is compact and its signature that of its entries. */
    size_t nsig;
    struct shim_sig_run *sig;

    /* The typemap (private to shim_datatype.c): flat when nent == 0, else compact. */
    size_t nblocks;
    struct shim_dtype_block *blocks; /* points at one_block when nblocks <= 1 */
    struct shim_dtype_block one_block;
    size_t nent;
    struct shim_dtype_ent *ent;

    /* What built it, for MPI_Type_get_envelope / MPI_Type_get_contents. */
    int combiner;
    int nints, naints, ntypes;
    int *ints;
    MPI_Aint *aints;
    struct shim_dtype **types; /* retained */

    char name[MPI_MAX_OBJECT_NAME];
    struct shim_attr *attrs; /* cached attributes (shim_attr.c) */
};

/* Finds the type of handle h. Returns MPI_SUCCESS and sets *out, or MPI_ERR_TYPE (without
 * raising it: the caller raises with its own function name) for MPI_DATATYPE_NULL, a freed
 * handle or a value that is no datatype. The pointer stays valid while the handle does. */
int shim_dtype_lookup(MPI_Datatype h, struct shim_dtype **out);

/* As shim_dtype_lookup, and the type must be usable for communication: committed and not a
 * marker (MPI_LB/MPI_UB). On failure returns MPI_ERR_TYPE and records the cause with
 * mps_error ("datatype 0x... is not committed", "... is invalid or freed"), so the caller
 * can write: if ((rc = shim_dtype_check_comm(dt, &t))) return shim_error(comm, SHIM_FN, rc,
 * "%s", mps_last_error()); */
int shim_dtype_check_comm(MPI_Datatype h, struct shim_dtype **out);

/* Takes / drops a reference (no-ops for builtins). Drop the last one and the type is freed. */
void shim_dtype_retain(struct shim_dtype *t);
void shim_dtype_release(struct shim_dtype *t);

/* Attributes (shim_attr.c): MPI_Type_dup copies old's into new through the keyvals' copy
 * callbacks; freeing the last handle of t deletes t's, newest first. Both return the MPI
 * error class of a failing callback (raised by the copy, returned as it is by the delete). */
int shim_attr_type_copy_all(MPI_Datatype oldtype, MPI_Datatype newtype);
int shim_attr_type_delete_all(struct shim_dtype *t);

/* Copies count elements of type t from buf (element k at buf + k * extent) into out, back to
 * back (count * t->size bytes). out must not overlap the source bytes. */
void shim_dtype_pack(const void *buf, size_t count, const struct shim_dtype *t, void *out);

/* The reverse: scatters count * t->size packed bytes from in into count elements at buf. */
void shim_dtype_unpack(const void *in, size_t count, const struct shim_dtype *t, void *buf);

/* Packs at most max_bytes, starting skip bytes into the packed stream of count elements;
 * returns the number of bytes written. For partial messages (truncation, pipelining). */
size_t shim_dtype_pack_partial(const void *buf, size_t count, const struct shim_dtype *t,
                               size_t skip, void *out, size_t max_bytes);
size_t shim_dtype_unpack_partial(const void *in, size_t count, const struct shim_dtype *t,
                                 size_t skip, void *buf, size_t max_bytes);

/* Walks the contiguous byte ranges of count elements of t, in typemap (packed) order, a
 * piece at a time, in O(1) memory whatever the type's block count. Pieces that touch in
 * memory may come as separate pieces; callers merge them where it matters. */
struct shim_dtype_iter {
    const struct shim_dtype *t;
    size_t pos, end; /* packed bytes done, and in all */
};
void shim_dtype_iter_init(struct shim_dtype_iter *it, const struct shim_dtype *t, size_t count);
/* The next piece of at most max (> 0) bytes: its offset from the buffer pointer and its
 * length. Returns false when all count elements have been walked. */
bool shim_dtype_iter_next(struct shim_dtype_iter *it, size_t max, MPI_Aint *off, size_t *len);

/* The bytes of memory t keeps alive: its own allocations and, for the compact form, those
 * of the derived types it refers to (each counted once per reference). For tests and the
 * info tool: the vector of 2^30 chars must stay at a few hundred bytes. */
size_t shim_dtype_mem_bytes(const struct shim_dtype *t);

/* The number of basic elements in the first nbytes of the packed form of t (for
 * MPI_Get_elements): whole elements of t, then the basic elements of a partial last one,
 * following its type signature (mixed types too). MPI_UNDEFINED when nbytes ends inside a
 * basic element. */
MPI_Count shim_dtype_elements(const struct shim_dtype *t, size_t nbytes);

/* The MPI name of a predefined type ("MPI_INT"), or NULL for others. */
const char *shim_dtype_builtin_name(MPI_Datatype h);
/* The predefined type of handle h (committed by definition), or NULL for any other value. */
struct shim_dtype *shim_dtype_builtin(MPI_Datatype h);

/* ---- Info objects (shim_info.c), for the calls that take hints. ---- */

/* 1 when info is a live info object (MPI_INFO_ENV included), 0 otherwise (MPI_INFO_NULL
 * too). */
int shim_info_valid(MPI_Info info);
/* Copies the value of key into value (size bytes, always NUL-terminated, truncated if
 * longer) and returns 1; returns 0 when info is MPI_INFO_NULL or invalid or has no such key.
 * Thread safe. */
int shim_info_get_value(MPI_Info info, const char *key, char *value, size_t size);

#endif
