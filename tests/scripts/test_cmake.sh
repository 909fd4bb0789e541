#!/bin/bash
# test_cmake.sh - doc/cmake.md holds: a tiny CMake project with find_package(MPI) finds the
# build tree's libmpishim when given our tools, by MPI_C_COMPILER + MPIEXEC_EXECUTABLE and
# by MPI_HOME (a prefix laid out as installed: bin/mpicc, bin/mpiexec), builds
# examples/hello.c and runs it at 2 ranks through ctest; and pkg-config's mpishim.pc names
# the library and the configured directories.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
top_srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

if ! command -v cmake >/dev/null; then
    echo "SKIP: needs cmake (apt-get install cmake)"
    exit 77
fi
if [ ! -r "$top_builddir/.libs/libmpishim.so" ]; then
    echo "SKIP: needs the shared library (configure without --disable-shared)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MPISHIM_WRAPPER_BUILDDIR=$top_builddir
unset MPI_HOME MPICH_CC OMPI_CC

mkdir "$tmp/src"
cp "$top_srcdir/examples/hello.c" "$tmp/src/"
cat >"$tmp/src/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.10)
project(hello_mpishim C)
find_package(MPI REQUIRED COMPONENTS C)
message(STATUS "test: MPI_C_LIBRARIES=${MPI_C_LIBRARIES}")
message(STATUS "test: MPIEXEC_EXECUTABLE=${MPIEXEC_EXECUTABLE}")
add_executable(hello hello.c)
target_link_libraries(hello PRIVATE MPI::MPI_C)
enable_testing()
add_test(NAME hello COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} 2
                            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:hello> ${MPIEXEC_POSTFLAGS})
CMAKE

# A prefix as installed, for MPI_HOME.
mkdir -p "$tmp/home/bin"
ln -s "$top_builddir/tools/mpicc" "$tmp/home/bin/mpicc"
ln -s "$top_builddir/tools/mpiexec" "$tmp/home/bin/mpiexec"

# A sanitizer build's library needs programs that carry the sanitizer's runtime.
san=${MPS_SAN_FLAGS:-}
run_project() { # NAME CMAKE-ARGS...: configure, build and ctest; prints what was found.
    name=$1
    shift
    cmake -S "$tmp/src" -B "$tmp/$name" -DCMAKE_C_FLAGS="$san" \
        -DCMAKE_EXE_LINKER_FLAGS="$san" "$@" >"$tmp/$name.log" 2>&1 &&
        cmake --build "$tmp/$name" >>"$tmp/$name.log" 2>&1 &&
        (cd "$tmp/$name" && MPISHIM_TIMEOUT=60 ctest --output-on-failure >>"$tmp/$name.log" 2>&1)
    rc=$?
    [ $rc = 0 ] || tail -20 "$tmp/$name.log"
    echo "$rc $(sed -n 's/.*test: MPI_C_LIBRARIES=//p' "$tmp/$name.log")"
}

lib=$top_builddir/.libs/libmpishim.so
expect "MPI_C_COMPILER and MPIEXEC_EXECUTABLE: found, built, ran at 2 ranks" "0 $lib" \
    "$(run_project tools -DMPI_C_COMPILER="$top_builddir/tools/mpicc" \
        -DMPIEXEC_EXECUTABLE="$top_builddir/tools/mpiexec")"
expect "ctest ran hello under our mpiexec" "$top_builddir/tools/mpiexec" \
    "$(sed -n 's/.*test: MPIEXEC_EXECUTABLE=//p' "$tmp/tools.log")"
expect "MPI_HOME: found, built, ran at 2 ranks" "0 $lib" \
    "$(run_project home -DMPI_HOME="$tmp/home")"
expect "MPI_HOME: the launcher is the prefix's mpiexec" "$tmp/home/bin/mpiexec" \
    "$(sed -n 's/.*test: MPIEXEC_EXECUTABLE=//p' "$tmp/home.log")"

if command -v pkg-config >/dev/null; then
    libdir=$("$top_builddir/tools/mpishim_info" --parsable | sed -n 's/^path:libdir://p')
    incdir=$("$top_builddir/tools/mpishim_info" --parsable | sed -n 's/^path:includedir://p')
    pc() { PKG_CONFIG_PATH=$top_builddir/tools pkg-config "$@" mpishim; }
    expect "pkg-config --libs names the library in the configured libdir" \
        "-L$libdir -Wl,-rpath,$libdir -lmpishim" "$(pc --libs | sed 's/ *$//')"
    expect "pkg-config --cflags names the configured includedir" "-I$incdir" \
        "$(pc --cflags | sed 's/ *$//')"
fi

expect_done
