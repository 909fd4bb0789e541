#!/usr/bin/env python3
"""rpc_torch.py - torch.distributed.rpc.rpc_sync echo round trips (8 B, 1 KiB, 1 MiB), the
counterpart of bench/bench_rpc.c; the same output ("size median_us mean_us").

Two processes, started by hand (bench/rpc_compare.sh does it):
    RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 python3 bench/rpc_torch.py [ITERS] &
    RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29500 python3 bench/rpc_torch.py [ITERS]
Needs torch (Debian: apt-get install python3-torch). 8 B and 1 KiB are sent as bytes, 1 MiB
as a uint8 tensor, as bench_rpc does.
"""
import os
import sys
import time

import torch
import torch.distributed.rpc as rpc


def echo(x):
    return x


def run(to, size, iters):
    arg = torch.zeros(size, dtype=torch.uint8) if size >= 1 << 20 else bytes(size)
    times = []
    for i in range(-(iters // 10) - 2, iters):
        t0 = time.perf_counter()
        rpc.rpc_sync(to, echo, args=(arg,))
        if i >= 0:
            times.append((time.perf_counter() - t0) * 1e6)
    times.sort()
    print("%d %.1f %.1f" % (size, times[len(times) // 2], sum(times) / len(times)), flush=True)


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    opts = rpc.TensorPipeRpcBackendOptions(
        num_worker_threads=4,
        init_method="tcp://%s:%s" % (os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"]))
    rpc.init_rpc("worker%d" % rank, rank=rank, world_size=world, rpc_backend_options=opts)
    if rank == 0:
        to = "worker1" if world > 1 else "worker0"
        print("# torch %s rpc_sync echo worker0 -> %s, %d iterations" % (torch.__version__, to, iters))
        print("# size median_us mean_us")
        run(to, 8, iters)
        run(to, 1024, iters)
        run(to, 1 << 20, max(iters // 10, 10))
    rpc.shutdown()


if __name__ == "__main__":
    main()
