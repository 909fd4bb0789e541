#!/bin/sh
# run_gpu.sh - the device test suite: tests/gpu/gpu_coll at 1 rank (NCCL), and at 2, 3 and 4
# ranks sharing the machine's GPU(s), once with MPISHIM_DEVICE_COLL=auto (NCCL if it accepts
# the ranks, else the logged staging fallback) and once with staging forced (which also
# runs the mixed host/device case). Exits 77 with a line saying why when no GPU is present.
top_builddir=${top_builddir:-.}
prog="$top_builddir/tests/gpu/gpu_coll"
mpiexec="$top_builddir/tools/mpiexec"

"$prog" --probe
rc=$?
if [ $rc -ne 0 ]; then
    exit $rc # 77 with "SKIP: needs an NVIDIA GPU (cudaGetDeviceCount found none)"
fi
export MPISHIM_TIMEOUT=${MPISHIM_TIMEOUT:-120}
status=0
for n in 1 2 3 4; do
    for mode in auto staging; do
        echo "== gpu_coll: $n rank(s), MPISHIM_DEVICE_COLL=$mode"
        if ! MPISHIM_DEVICE_COLL=$mode timeout "${GPU_TIMEOUT:-600}" "$mpiexec" -n $n "$prog"; then
            echo "FAIL: gpu_coll at $n rank(s) with MPISHIM_DEVICE_COLL=$mode"
            status=1
        fi
    done
done
# Timeouts (MPISHIM_TIMEOUT=2): a NCCL call held up on the GPU, and a staged call one rank
# never joins; each checks the message it gets.
echo "== gpu_coll --timeout-nccl: 1 rank"
if ! MPISHIM_TIMEOUT=2 MPISHIM_DEVICE_COLL=auto timeout 120 "$mpiexec" -n 1 "$prog" --timeout-nccl; then
    echo "FAIL: gpu_coll --timeout-nccl"
    status=1
fi
echo "== gpu_coll --timeout-staged: 2 ranks"
if ! MPISHIM_TIMEOUT=2 MPISHIM_DEVICE_COLL=staging timeout 120 "$mpiexec" -n 2 "$prog" \
    --timeout-staged; then
    echo "FAIL: gpu_coll --timeout-staged"
    status=1
fi
exit $status
