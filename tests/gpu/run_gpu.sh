#!/bin/sh
# run_gpu.sh - the device test suite: tests/gpu/gpu_coll at 1 rank (NCCL), and at 2, 3 and 4
# ranks sharing the machine's GPU(s), once with MPISHIM_DEVICE_COLL=auto (NCCL if it accepts
# the ranks, else the logged staging fallback) and once with staging forced (which also
# runs the mixed host/device case); then NCCL between processes on one GPU (below). Exits 77
# with a line saying why when no GPU is present.
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
# NCCL between processes on one GPU. NCCL refuses two ranks of a communicator on one device
# ("Duplicate GPU detected": same bus id, same host hash) unless each rank's NCCL_HOSTID
# gives it a host of its own; the ranks then talk over NCCL's socket transport on loopback.
# So one GPU runs our NCCL path between processes too: gpu_coll with MPISHIM_DEVICE_COLL=nccl
# (an error if NCCL's init fails) at 2 and 3 ranks, and the NCCL timeout that names the rank
# that did not join (--timeout-nccl-peer). GPU_MPS=1 runs them under NVIDIA's MPS (started
# and stopped here), where the ranks' kernels run side by side instead of taking turns.
# shellcheck disable=SC2016 # expanded by each rank's shell
per_host='NCCL_HOSTID=mpishim-rank-$RANK exec "$0" "$@"'
if ! "$top_builddir/tools/mpishim_info" | grep -q "^  NCCL: *[0-9]"; then
    echo "SKIP: NCCL between processes: NCCL is not loaded (see mpishim_info)"
else
    export NCCL_SOCKET_IFNAME="${NCCL_SOCKET_IFNAME:-lo}"
    mps=
    if [ "${GPU_MPS:-0}" = 1 ] && nvidia-cuda-mps-control -d; then
        mps=" (MPS)"
    fi
    for n in 2 3; do
        echo "== gpu_coll: $n rank(s), NCCL between processes$mps"
        if ! MPISHIM_DEVICE_COLL=nccl timeout "${GPU_TIMEOUT:-600}" "$mpiexec" -n $n \
            sh -c "$per_host" "$prog"; then
            echo "FAIL: gpu_coll at $n rank(s) with NCCL between processes$mps"
            status=1
        fi
    done
    echo "== gpu_coll --timeout-nccl-peer: 2 ranks, NCCL between processes$mps"
    if ! MPISHIM_TIMEOUT=2 MPISHIM_DEVICE_COLL=nccl timeout 120 "$mpiexec" -n 2 \
        sh -c "$per_host" "$prog" --timeout-nccl-peer; then
        echo "FAIL: gpu_coll --timeout-nccl-peer"
        status=1
    fi
    if [ -n "$mps" ]; then
        echo quit | nvidia-cuda-mps-control
    fi
fi
exit $status
