/*
 * jacobi2d.c - Jacobi iteration for the Laplace equation on a 2-D grid split in blocks
 * over a Cartesian communicator (MPI_Dims_create, MPI_Cart_create, MPI_Cart_shift). Each
 * iteration exchanges one-cell halos with the four neighbours by MPI_Sendrecv: rows are
 * contiguous, columns go as a derived datatype (MPI_Type_vector). Ranks on the border
 * exchange with MPI_PROC_NULL, which leaves the fixed boundary values in their halo.
 *
 * Every grid value is computed with the same arithmetic whatever the decomposition, and the
 * results are combined exactly (a maximum, and a sum of integers), so the output is the
 * same for any number of ranks and any MPI library.
 * An unmodified MPI program: builds with any MPI's mpicc.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NX 96 /* interior columns of the global grid */
#define NY 64 /* interior rows */
#define ITERATIONS 500

struct block {
    MPI_Comm cart;
    int up, down, left, right; /* neighbour ranks, MPI_PROC_NULL on the border */
    int row0, col0;            /* global index of the first interior row and column */
    int ny, nx;                /* interior rows and columns of this block */
    MPI_Datatype column;       /* one interior column of a (ny + 2) x (nx + 2) array */
};

#define AT(u, b, i, j) ((u)[(size_t)(i) * (size_t)((b)->nx + 2) + (size_t)(j)])

/* The block of n cells that part p of parts gets: the first n % parts get one more. */
static void split(int n, int parts, int p, int *first, int *len)
{
    *len = n / parts + (p < n % parts ? 1 : 0);
    *first = p * (n / parts) + (p < n % parts ? p : n % parts);
}

/* The fixed boundary: the top edge is held at 1, the left edge at 0.5, the others at 0. */
static double boundary(int gi, int gj)
{
    if (gi < 0) {
        return 1.0;
    }
    if (gj < 0) {
        return 0.5;
    }
    return 0.0;
}

static void setup(struct block *b)
{
    int size, dims[2] = {0, 0}, periods[2] = {0, 0}, coords[2], rank;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Dims_create(size, 2, dims);
    MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &b->cart);
    MPI_Comm_rank(b->cart, &rank);
    MPI_Cart_coords(b->cart, rank, 2, coords);
    MPI_Cart_shift(b->cart, 0, 1, &b->up, &b->down);
    MPI_Cart_shift(b->cart, 1, 1, &b->left, &b->right);
    split(NY, dims[0], coords[0], &b->row0, &b->ny);
    split(NX, dims[1], coords[1], &b->col0, &b->nx);
    MPI_Type_vector(b->ny, 1, b->nx + 2, MPI_DOUBLE, &b->column);
    MPI_Type_commit(&b->column);
}

/* Interior zero; halo cells on the global border get the boundary value. */
static void init_grid(const struct block *b, double *u)
{
    for (int i = 0; i < b->ny + 2; i++) {
        for (int j = 0; j < b->nx + 2; j++) {
            int gi = b->row0 + i - 1, gj = b->col0 + j - 1;
            int border = gi < 0 || gi >= NY || gj < 0 || gj >= NX;

            AT(u, b, i, j) = border ? boundary(gi, gj) : 0.0;
        }
    }
}

static void exchange_halos(const struct block *b, double *u)
{
    int nx = b->nx, ny = b->ny;

    /* Rows: my first row goes up while the row below mine arrives from down, and back. */
    MPI_Sendrecv(&AT(u, b, 1, 1), nx, MPI_DOUBLE, b->up, 1, &AT(u, b, ny + 1, 1), nx, MPI_DOUBLE,
                 b->down, 1, b->cart, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&AT(u, b, ny, 1), nx, MPI_DOUBLE, b->down, 2, &AT(u, b, 0, 1), nx, MPI_DOUBLE,
                 b->up, 2, b->cart, MPI_STATUS_IGNORE);
    /* Columns, one element per row, as the strided column type. */
    MPI_Sendrecv(&AT(u, b, 1, 1), 1, b->column, b->left, 3, &AT(u, b, 1, nx + 1), 1, b->column,
                 b->right, 3, b->cart, MPI_STATUS_IGNORE);
    MPI_Sendrecv(&AT(u, b, 1, nx), 1, b->column, b->right, 4, &AT(u, b, 1, 0), 1, b->column,
                 b->left, 4, b->cart, MPI_STATUS_IGNORE);
}

/* One sweep from u into v; returns the largest change of a cell. */
static double sweep(const struct block *b, const double *u, double *v)
{
    double change = 0.0;

    for (int i = 1; i <= b->ny; i++) {
        for (int j = 1; j <= b->nx; j++) {
            double x = 0.25 * (AT(u, b, i - 1, j) + AT(u, b, i + 1, j) + AT(u, b, i, j - 1) +
                               AT(u, b, i, j + 1));
            double d = fabs(x - AT(u, b, i, j));

            AT(v, b, i, j) = x;
            change = d > change ? d : change;
        }
    }
    return change;
}

/* The sum of the interior in units of 1e-12, exact in integers whatever the order. */
static long long checksum(const struct block *b, const double *u)
{
    long long s = 0;

    for (int i = 1; i <= b->ny; i++) {
        for (int j = 1; j <= b->nx; j++) {
            s += llround(AT(u, b, i, j) * 1e12);
        }
    }
    return s;
}

int main(int argc, char **argv)
{
    struct block b;
    double *u, *v, *t, change = 0.0, residual = 0.0;
    long long sum, total = 0;
    int rank;

    MPI_Init(&argc, &argv);
    setup(&b);
    MPI_Comm_rank(b.cart, &rank);
    u = malloc(sizeof(double) * (size_t)(b.ny + 2) * (size_t)(b.nx + 2));
    v = malloc(sizeof(double) * (size_t)(b.ny + 2) * (size_t)(b.nx + 2));
    if (!u || !v) {
        fprintf(stderr, "jacobi2d: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    init_grid(&b, u);
    init_grid(&b, v);
    for (int it = 0; it < ITERATIONS; it++) {
        exchange_halos(&b, u);
        change = sweep(&b, u, v);
        t = u;
        u = v;
        v = t;
    }
    MPI_Allreduce(&change, &residual, 1, MPI_DOUBLE, MPI_MAX, b.cart);
    sum = checksum(&b, u);
    MPI_Reduce(&sum, &total, 1, MPI_LONG_LONG, MPI_SUM, 0, b.cart);
    if (rank == 0) {
        printf("grid %d x %d, %d iterations\n", NX, NY, ITERATIONS);
        printf("residual (max change in the last sweep): %.10e\n", residual);
        printf("checksum (sum of the interior): %.10e\n", (double)total * 1e-12);
    }
    free(u);
    free(v);
    MPI_Type_free(&b.column);
    MPI_Comm_free(&b.cart);
    MPI_Finalize();
    return 0;
}
