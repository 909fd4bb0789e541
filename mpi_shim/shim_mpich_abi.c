/*
 * shim_mpich_abi.c - what a binary built against MPICH's mpi.h refers to beyond functions:
 * the data objects MPICH exports (MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY, MPI_F_STATUS_IGNORE and
 * their kin), declared here with MPICH's types and sizes, and the Fortran status conversion
 * MPI_Status_c2f/MPI_Status_f2c.
 *
 * MPICH declares MPI_UNWEIGHTED as `extern int *const MPI_UNWEIGHTED` and a program compares
 * or passes its value; ours holds the sentinel that mpi.h's macro of the same name expands
 * to, so the dist_graph constructors see one value whichever header built the program. A
 * position-dependent program copies the variable into itself at load time (a copy
 * relocation), which needs the same size as MPICH's: a pointer.
 */
#include "config.h"

#include "shim.h"

/* mpi.h's macros of these names would replace the definitions below. */
#undef MPI_UNWEIGHTED
#undef MPI_WEIGHTS_EMPTY

#define SHIM_ABI_DATA __attribute__((visibility("default")))

SHIM_ABI_DATA int *const MPI_UNWEIGHTED = (int *)2;
SHIM_ABI_DATA int *const MPI_WEIGHTS_EMPTY = (int *)3;

/* Distinct objects, so that their addresses differ from any status a program owns. */
static MPI_Fint f_status_ignore[MPI_F_STATUS_SIZE];
static MPI_Fint f_statuses_ignore[MPI_F_STATUS_SIZE];
static MPI_F08_status f08_status_ignore;
static MPI_F08_status f08_statuses_ignore[1];

MPI_Fint *MPI_F_STATUS_IGNORE = f_status_ignore;
MPI_Fint *MPI_F_STATUSES_IGNORE = f_statuses_ignore;
MPI_F08_status *MPI_F08_STATUS_IGNORE = &f08_status_ignore;
MPI_F08_status *MPI_F08_STATUSES_IGNORE = f08_statuses_ignore;

/* MPI_T's "all handles" of a performance-variable session (MPICH: a const pointer). */
SHIM_ABI_DATA struct mpishim_t_pvar_handle *const MPI_T_PVAR_ALL_HANDLES =
    (struct mpishim_t_pvar_handle *)1;

static int bad_f_status(const MPI_Fint *f)
{
    return f == NULL || f == MPI_F_STATUS_IGNORE || f == MPI_F_STATUSES_IGNORE;
}

static int bad_c_status(const MPI_Status *c)
{
    return c == NULL || c == MPI_STATUS_IGNORE || c == MPI_STATUSES_IGNORE;
}

/* The two layouts hold the same five ints in the same order (MPICH's status). */
#pragma weak MPI_Status_c2f = PMPI_Status_c2f
int PMPI_Status_c2f(const MPI_Status *c_status, MPI_Fint *f_status)
{
    if (bad_c_status(c_status) || bad_f_status(f_status)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG,
                          "c_status and f_status must be statuses (not NULL or *_IGNORE)");
    }
    f_status[0] = c_status->count_lo;
    f_status[1] = c_status->count_hi_and_cancelled;
    f_status[MPI_F_SOURCE] = c_status->MPI_SOURCE;
    f_status[MPI_F_TAG] = c_status->MPI_TAG;
    f_status[MPI_F_ERROR] = c_status->MPI_ERROR;
    return MPI_SUCCESS;
}

#pragma weak MPI_Status_f2c = PMPI_Status_f2c
int PMPI_Status_f2c(const MPI_Fint *f_status, MPI_Status *c_status)
{
    if (bad_f_status(f_status) || bad_c_status(c_status)) {
        return shim_error(MPI_COMM_WORLD, SHIM_FN, MPI_ERR_ARG,
                          "f_status and c_status must be statuses (not NULL or *_IGNORE)");
    }
    c_status->count_lo = f_status[0];
    c_status->count_hi_and_cancelled = f_status[1];
    c_status->MPI_SOURCE = f_status[MPI_F_SOURCE];
    c_status->MPI_TAG = f_status[MPI_F_TAG];
    c_status->MPI_ERROR = f_status[MPI_F_ERROR];
    return MPI_SUCCESS;
}
