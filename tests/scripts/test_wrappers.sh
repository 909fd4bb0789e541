#!/bin/bash
# test_wrappers.sh - the build tree's mpicc/mpicxx: the flags they add, when they add the
# link flags, the -show family, the compiler override (-cc=, -cxx= and the MPISHIM_, MPICH_
# and OMPI_ variables, in that order), -v, and a program built and run with
# them against the build tree's libmpishim.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
export MPISHIM_WRAPPER_BUILDDIR=$top_builddir
MPICC=$top_builddir/tools/mpicc
MPICXX=$top_builddir/tools/mpicxx
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

# The compiler choice is tested below; a caller's MPICH_CC or OMPI_CC must not change it.
unset MPISHIM_CC MPISHIM_CXX MPICH_CC MPICH_CXX OMPI_CC OMPI_CXX
libdir=$top_builddir/.libs
# MPS_SAN_FLAGS (from make check): what --enable-sanitizers adds to both flag sets.
san=${MPS_SAN_FLAGS:+ $MPS_SAN_FLAGS}
link="-L$libdir -Wl,-rpath,$libdir$san -lmpishim"
inc=$("$MPICC" -showme:incdirs)
cflags="-I$inc$san"
expect "the include dir of the build tree holds the public headers" yes \
    "$([ -f "$inc/pgc_status.h" ] && echo yes || echo no)"
expect "-showme:compile is -I<includedir>" "$cflags" "$("$MPICC" -showme:compile)"
expect "-showme:link names the build tree's library" "$link" "$("$MPICC" -showme:link)"
expect "-show of a compile-only command adds no link flags" "gcc $cflags -c a.c -o a.o" \
    "$(MPISHIM_CC=gcc "$MPICC" -show -c a.c -o a.o)"
expect "-show of a link command adds the link flags last" "gcc $cflags a.o -o a $link" \
    "$(MPISHIM_CC=gcc "$MPICC" -show a.o -o a)"
expect "MPISHIM_CC replaces the compiler" "ccache cc $cflags -E a.c" \
    "$(MPISHIM_CC="ccache cc" "$MPICC" --showme -E a.c)"
expect "-link_info prints the whole link command" "g++ $cflags $link" \
    "$(MPISHIM_CXX=g++ "$MPICXX" -link_info)"

# The compiler: -cc= (-cxx= for mpicxx), then MPISHIM_CC, MPICH_CC, OMPI_CC, then configure's.
expect "-cc= replaces the compiler" "clang $cflags -c a.c" "$("$MPICC" -cc=clang -show -c a.c)"
expect "-cc= wins over MPISHIM_CC" "clang $cflags -c a.c" \
    "$(MPISHIM_CC=icx "$MPICC" -show -cc=clang -c a.c)"
expect "MPICH_CC replaces the compiler" "clang $cflags -c a.c" \
    "$(MPICH_CC=clang "$MPICC" -show -c a.c)"
expect "MPISHIM_CC wins over MPICH_CC" "icx $cflags -c a.c" \
    "$(MPISHIM_CC=icx MPICH_CC=clang "$MPICC" -show -c a.c)"
expect "OMPI_CC is used when neither MPISHIM_CC nor MPICH_CC is set" "clang $cflags -c a.c" \
    "$(OMPI_CC=clang "$MPICC" -show -c a.c)"
expect "MPICH_CC wins over OMPI_CC" "icx $cflags -c a.c" \
    "$(MPICH_CC=icx OMPI_CC=clang "$MPICC" -show -c a.c)"
expect "mpicxx takes -cxx=" "clang++ $cflags -c a.cc" "$("$MPICXX" -cxx=clang++ -show -c a.cc)"
expect "mpicxx takes MPICH_CXX" "clang++ $cflags -c a.cc" \
    "$(MPICH_CXX=clang++ "$MPICXX" -show -c a.cc)"
expect "mpicxx takes OMPI_CXX" "clang++ $cflags -c a.cc" \
    "$(OMPI_CXX=clang++ "$MPICXX" -show -c a.cc)"

# -v: a line naming mpishim and its version, then the compiler's own -v output.
version=$("$MPICC" -showme:version)
version=${version##* }
out=$("$MPICC" -v 2>&1)
expect "mpicc -v first names mpishim and its version" "mpicc for mpishim $version" \
    "$(echo "$out" | head -1)"
expect "mpicc -v then runs the compiler with -v (its version line follows)" yes \
    "$(grep -qi ' version ' <<<"$(tail -n +2 <<<"$out")" && echo yes || echo no)"
out=$(MPISHIM_CXX=g++ "$MPICXX" -v 2>&1)
expect "mpicxx -v names mpishim too" "mpicxx for mpishim $version" "$(echo "$out" | head -1)"

cat >"$tmp/t.c" <<'C'
#include <pgc_status.h>
#include <stdio.h>
int main(void) { printf("%s\n", pgc_strerror(PGC_ERR_TIMEOUT)); return 0; }
C
cp "$tmp/t.c" "$tmp/t.cc"
"$MPICC" -o "$tmp/t" "$tmp/t.c" && out=$("$tmp/t") || out="build or run failed"
expect "mpicc builds a program that runs against the build tree's library" "timed out" "$out"
"$MPICC" -c -o "$tmp/t.o" "$tmp/t.c" && "$MPICC" -o "$tmp/t2" "$tmp/t.o" && out=$("$tmp/t2") ||
    out="build or run failed"
expect "mpicc -c then mpicc to link works" "timed out" "$out"
"$MPICC" -cc=cc -o "$tmp/t3" "$tmp/t.c" && out=$("$tmp/t3") || out="build or run failed"
expect "mpicc -cc=cc builds a program with that compiler" "timed out" "$out"
"$MPICXX" -o "$tmp/tx" "$tmp/t.cc" && out=$("$tmp/tx") || out="build or run failed"
expect "mpicxx builds a C++ program" "timed out" "$out"

# A C++ program on the MPI C API, and a C program from two sources with an extra library.
cat >"$tmp/mpi.cc" <<'CXX'
#include <mpi.h>
#include <cstdio>
int main(int argc, char **argv)
{
    int rank = -1, size = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    std::printf("rank %d of %d\n", rank, size);
    return MPI_Finalize();
}
CXX
"$MPICXX" -o "$tmp/mpicxx_prog" "$tmp/mpi.cc" && out=$("$tmp/mpicxx_prog") || out="build or run failed"
expect "mpicxx builds a C++ MPI program that runs as a singleton" "rank 0 of 1" "$out"
printf '#include <math.h>\ndouble half(double x) { return sqrt(x) / 2; }\n' >"$tmp/part.c"
printf '#include <mpi.h>\n#include <stdio.h>\ndouble half(double);\nint main(int c, char **v) { MPI_Init(&c, &v); printf("%%.1f\\n", half(16)); return MPI_Finalize(); }\n' >"$tmp/main.c"
"$MPICC" -O2 -o "$tmp/two" "$tmp/main.c" "$tmp/part.c" -lm && out=$("$tmp/two") || out="build or run failed"
expect "mpicc takes several sources and an extra library" "2.0" "$out"

# The classic MPI hello world, compiled with mpicc and run with the build tree's mpiexec.
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
"$MPICC" -o "$tmp/hello" "$top_srcdir/examples/hello.c" &&
    out=$(timeout 60 "$top_builddir/tools/mpiexec" -n 2 "$tmp/hello" | sed 's/ on .*//' | sort) ||
    out="build or run failed"
expect "mpicc builds examples/hello.c and it runs on 2 ranks" \
    "$(printf 'Hello from rank 0 of 2\nHello from rank 1 of 2')" "$out"

expect_done
