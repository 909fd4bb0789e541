/* abi_unweighted.c - MPICH's data objects, as a program built against MPICH's mpi.h sees
 * them: MPI_UNWEIGHTED in MPI_Dist_graph_create_adjacent (a ring), then a neighbour
 * exchange over the graph; MPI_F_STATUS_IGNORE and MPI_Status_c2f/f2c; an MPICH function
 * that mpishim does not implement (MPI_File_open) refusing instead of failing to load. Prints
 * "unweighted ok" on rank 0 when every check passed on every rank. */
#include <mpi.h>
#include <stdio.h>

static int failures;

static void check(int cond, int rank, const char *what)
{
    if (!cond) {
        printf("rank %d: FAIL %s\n", rank, what);
        failures++;
    }
}

int main(int argc, char **argv)
{
    int rank, n, indeg = -1, outdeg = -1, weighted = -1;
    MPI_Comm ring;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int left = (rank + n - 1) % n, right = (rank + 1) % n;

    /* Each rank hears from its left neighbour and talks to its right one, unweighted. */
    check(MPI_UNWEIGHTED != NULL, rank, "MPI_UNWEIGHTED is not NULL");
    check(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, &left, MPI_UNWEIGHTED, 1, &right,
                                         MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &ring) == MPI_SUCCESS,
          rank, "MPI_Dist_graph_create_adjacent with MPI_UNWEIGHTED");
    MPI_Dist_graph_neighbors_count(ring, &indeg, &outdeg, &weighted);
    check(indeg == 1 && outdeg == 1, rank, "one in and one out neighbour");
    check(weighted == 0, rank, "the graph is unweighted");
    int src = -1, dst = -1;
    MPI_Dist_graph_neighbors(ring, 1, &src, MPI_UNWEIGHTED, 1, &dst, MPI_UNWEIGHTED);
    check(src == left && dst == right, rank, "the neighbours are left and right");
    int mine = 100 + rank, from_left = -1;
    MPI_Neighbor_allgather(&mine, 1, MPI_INT, &from_left, 1, MPI_INT, ring);
    check(from_left == 100 + left, rank, "the neighbour exchange brings the left rank's value");
    MPI_Comm_free(&ring);

    /* A status through its Fortran form and back. */
    MPI_Status st, back;
    MPI_Fint f[MPI_F_STATUS_SIZE];
    int v = 0;
    MPI_Sendrecv(&mine, 1, MPI_INT, right, 7 + rank, &v, 1, MPI_INT, left, 7 + left,
                 MPI_COMM_WORLD, &st);
    check(v == 100 + left, rank, "sendrecv brings the left rank's value");
    check(MPI_Status_c2f(&st, f) == MPI_SUCCESS, rank, "MPI_Status_c2f succeeds");
    check(f[MPI_F_SOURCE] == left && f[MPI_F_TAG] == 7 + left, rank,
          "the Fortran status holds the source and tag");
    check(MPI_Status_f2c(f, &back) == MPI_SUCCESS, rank, "MPI_Status_f2c succeeds");
    int count = -1;
    MPI_Get_count(&back, MPI_INT, &count);
    check(back.MPI_SOURCE == left && back.MPI_TAG == 7 + left && count == 1, rank,
          "the status converted back has source, tag and count");
    check(MPI_F_STATUS_IGNORE != NULL && MPI_F_STATUSES_IGNORE != NULL &&
              MPI_F_STATUS_IGNORE != MPI_F_STATUSES_IGNORE,
          rank, "MPI_F_STATUS_IGNORE and MPI_F_STATUSES_IGNORE are distinct and not NULL");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back), cls = -1;
    MPI_Error_class(rc, &cls);
    check(cls == MPI_ERR_ARG, rank, "MPI_Status_f2c(MPI_F_STATUS_IGNORE) is MPI_ERR_ARG");

    /* A function of MPICH's ABI that mpishim does not implement exists and refuses. */
    MPI_File fh;
    rc = MPI_File_open(MPI_COMM_WORLD, "/nonexistent", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    MPI_Error_class(rc, &cls);
    check(cls == MPI_ERR_UNSUPPORTED_OPERATION, rank,
          "MPI_File_open is MPI_ERR_UNSUPPORTED_OPERATION");

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0 && total == 0) {
        printf("unweighted ok\n");
    }
    MPI_Finalize();
    return total != 0;
}
