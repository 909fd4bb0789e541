/*
 * shim_comm.h - communicators, error handlers and ops: the MPI objects mpi_shim keeps on
 * top of pg_core. A communicator is a pg_group plus MPI-only state (error handler, name,
 * attributes, topology).
 */
#ifndef SHIM_COMM_H
#define SHIM_COMM_H

#include "shim.h"
#include "pg.h"

struct shim_attr;
struct shim_topo;
struct shim_inter;

struct shim_comm {
    struct pg_group *g;
    MPI_Errhandler errh;
    char name[MPI_MAX_OBJECT_NAME];
    struct shim_attr *attrs;  /* attribute list (shim_attr.c) */
    struct shim_topo *topo;   /* Cartesian or graph topology, or NULL (shim_topo.c) */
    struct shim_inter *inter; /* intercommunicator state, or NULL (shim_intercomm.c); then g
                               * is the remote view: its size is the remote group's */
    MPI_Win win;              /* the window this is the private communicator of, or 0 */
    bool in_use;
};

/* MPI_SUCCESS and *out, or MPI_ERR_COMM (no error raised: the caller raises it). */
int shim_comm_get(MPI_Comm h, struct shim_comm **out);
/* A new handle for g (takes the caller's reference to g); MPI_COMM_NULL on no memory. */
MPI_Comm shim_comm_add(struct pg_group *g, MPI_Errhandler errh);
/* Frees a user communicator's handle and releases its group. */
void shim_comm_remove(MPI_Comm h);
/* The opening of a communicator call: MPI initialized and comm valid (errors raised). */
int shim_comm_enter(const char *fn, MPI_Comm comm, struct shim_comm **c);
/* Wraps a new group (NULL: this rank is not a member, *out = MPI_COMM_NULL) in a handle
 * that inherits parent's error handler; raises MPI_ERR_NO_MEM on comm. */
int shim_comm_wrap(const char *fn, struct shim_comm *parent, MPI_Comm comm, struct pg_group *g,
                   MPI_Comm *out);
/* Whether comm is a valid intercommunicator (false for anything else: the caller's own
 * checks report an invalid handle). Every collective asks first; while no
 * intercommunicator exists (shim_inter_live, kept by shim_intercomm.c) that is one load,
 * not a handle lookup. */
extern int shim_inter_live;
bool shim_comm_is_inter_lookup(MPI_Comm comm);
static inline bool shim_comm_is_inter(MPI_Comm comm)
{
    return __atomic_load_n(&shim_inter_live, __ATOMIC_RELAXED) > 0 &&
           shim_comm_is_inter_lookup(comm);
}
/* Creates world and self; frees every communicator. */
int shim_comm_init(void);
void shim_comm_fini(void);

/* Attributes (shim_attr.c): copy every attribute of old to new through the keyvals' copy
 * callbacks (MPI_Comm_dup), and delete all of comm's (MPI_Comm_free). */
int shim_attr_copy_all(MPI_Comm oldcomm, MPI_Comm newcomm);
int shim_attr_delete_all(MPI_Comm comm);

/* Error handlers: the handler a communicator raises errors with. A window's errors are
 * raised on its private communicator, whose handler is then a window handler (or a
 * predefined one, which are of every kind). */
enum shim_errh_kind { SHIM_ERRH_ANY, SHIM_ERRH_COMM, SHIM_ERRH_WIN };
int shim_errhandler_check(MPI_Errhandler h);
/* The kind of a valid handler: SHIM_ERRH_ANY for the predefined ones. */
enum shim_errh_kind shim_errhandler_kind(MPI_Errhandler h);
/* Sets comm's handler to h (valid, checked by the caller). */
void shim_comm_set_errh(MPI_Comm comm, MPI_Errhandler h);
/* Runs h for comm; returns when the handler returns (fatal ones do not). */
void shim_errhandler_invoke(MPI_Errhandler h, MPI_Comm comm, int code, const char *msg);
void shim_errhandler_retain(MPI_Errhandler h);
void shim_errhandler_release(MPI_Errhandler h);

/* Ops. A user op is called through a trampoline that needs the MPI function and the
 * datatype handle: they live in a shim_op_call that must outlive the collective (the
 * request holds it for non-blocking ones). */
struct shim_dtype;
struct shim_op_call {
    MPI_User_function *fn;
    MPI_Datatype dt;
    const struct shim_dtype *t; /* a user op on a non-contiguous type: unpack around fn */
    enum pg_dtype pair;         /* MAXLOC/MINLOC on packed pairs (no fn): the pair type */
    enum pg_op pair_op;
};
/* Fills spec for op on t; *scale is how many spec elements one element of t holds.
 * MPI_SUCCESS, MPI_ERR_OP (invalid op, or op not defined on the type; cause recorded with
 * mps_error). */
int shim_op_spec(MPI_Op op, MPI_Datatype dt, const struct shim_dtype *t, struct pg_op_spec *spec,
                 size_t *scale, struct shim_op_call *call);
/* Validates an op handle: MPI_SUCCESS or MPI_ERR_OP. */
int shim_op_check(MPI_Op op);

#endif
