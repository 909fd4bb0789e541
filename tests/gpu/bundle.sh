#!/bin/sh
# bundle.sh OUTDIR - the device test suite as a folder that runs on a GPU machine lacking
# the build's dependencies (a compiler, libfabric, PMIx, cmocka): a static mpishim build
# (BUILD_DIR, default a temporary folder) links the GPU programs, which are copied into
# OUTDIR with every shared library they load except the C runtime, CUDA's driver and NCCL
# (which the GPU machine has: NCCL is 200 MB). mpishim links neither the CUDA runtime nor
# NCCL: it opens libcudart.so.<major> and libnccl.so.2 at run time (dlopen), so ldd does not
# show them for mpishim_info or mpiexec; the runtime configure found is copied into OUTDIR/lib
# explicitly, NCCL is the GPU machine's own (run.sh puts both on LD_LIBRARY_PATH and fails if
# mpishim_info reports either not loaded). Run it there with `sh OUTDIR/run.sh`: the
# GPU suite (tests/gpu/run_gpu.sh), the two device examples, and bench/dev_bench at 1, 2
# and 4 ranks. This is how the suite ran on an H100 (doc/gpu.md, "Tests and what was
# verified where").
set -eu
out=${1:?usage: bundle.sh OUTDIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
if [ -n "${BUILD_DIR:-}" ]; then
    build=$BUILD_DIR
else
    build=$(mktemp -d)
    trap 'rm -rf "$build"' EXIT # a build of our own is not kept
fi
# What the GPU machine has: the C runtime, CUDA's driver, NCCL.
system_libs='libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|libcuda|libnccl'
progs="tests/gpu/gpu_coll tools/mpiexec tools/mpishim_info bench/dev_bench
       examples/device_allreduce examples/pgc_device_allreduce"

if [ ! -f "$build/Makefile" ]; then
    (cd "$build" && "$src/configure" --enable-static --disable-shared --with-cuda --with-nccl \
        >configure.log)
fi
# shellcheck disable=SC2086 # one word per program
if ! make -C "$build" -j"$(nproc)" $progs >"$build/bundle-make.log" 2>&1; then
    tail -30 "$build/bundle-make.log"
    exit 1
fi
mkdir -p "$out/lib"
for p in $progs; do
    mkdir -p "$out/$(dirname "$p")"
    cp "$build/$p" "$out/$p"
done
cp "$src/tests/gpu/run_gpu.sh" "$out/tests/gpu/"
# The libraries the programs load, and libfabric (opened with dlopen) with its own.
fabric=$(ldconfig -p | awk '/libfabric.so.1 .*x86-64/ {print $NF; exit}')
# shellcheck disable=SC2086
for f in $(for p in $progs; do echo "$out/$p"; done) $fabric; do
    ldd "$f" | awk '/=> \// {print $3}'
done | sort -u | grep -v -E "/($system_libs)\.so" | while read -r lib; do
    cp -L "$lib" "$out/lib/"
done
[ -n "$fabric" ] && cp -L "$fabric" "$out/lib/libfabric.so.1"
# The CUDA runtime mpishim opens by its soname (the programs that call CUDA link it too).
cudart_dir=$(sed -n 's/^#define MPS_CUDA_LIBDIR "\(.*\)"$/\1/p' "$build/config.h")
cudart=$(sed -n 's/^MPS_CUDART_SONAME = //p' "$build/Makefile")
cp -L "$cudart_dir/$cudart" "$out/lib/$cudart"
cat >"$out/run.sh" <<'EOF'
#!/bin/sh
# Runs the bundled device suite (see tests/gpu/bundle.sh). NCCL_LIB: the folder holding
# libnccl.so.2 when the loader would not find it (default: the one of python3's nvidia-nccl
# package, if any).
cd "$(dirname "$0")"
find_nccl='import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))'
nccl=${NCCL_LIB:-$(python3 -c "$find_nccl" 2>/dev/null)}
export LD_LIBRARY_PATH="$PWD/lib${nccl:+:$nccl}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
info=$(tools/mpishim_info | sed -n '/^Device support/,/device collectives/p')
echo "$info"
# mpishim opens both at run time: a missing one would quietly mean no device or staging.
for lib in "CUDA runtime" NCCL; do
    if ! echo "$info" | grep -q "^  $lib: *[0-9]"; then
        echo "bundle: $lib not loaded (the reason is above; NCCL_LIB: the folder of libnccl.so.2)"
        status=1
    fi
done
top_builddir=. sh tests/gpu/run_gpu.sh || status=1
for n in 1 2; do
    tools/mpiexec -n $n examples/device_allreduce || status=1
    tools/mpiexec -n $n examples/pgc_device_allreduce || status=1
done
tools/mpiexec -n 1 bench/dev_bench || status=1
for n in 2 4; do
    tools/mpiexec -n $n bench/dev_bench 16777216 || status=1
done
echo "bundle: $([ $status = 0 ] && echo all passed || echo FAILED)"
exit $status
EOF
echo "bundle.sh: $out is ready; run it on the GPU machine with: sh $out/run.sh"
