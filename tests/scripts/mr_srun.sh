#!/bin/sh
# make check entry: the multi-rank tests of tests/mr_launchers.list (a subset) under LAUNCHER=srun.
# Starts the one-node test Slurm (tests/scripts/slurm_cluster.sh up) if it is not up, and
# leaves it up for the next run; `tests/scripts/slurm_cluster.sh down` stops it.
# MR_SLURM_AUTOSTART=0 only uses a Slurm that is already running (SLURM_CONF).
LAUNCHER=srun MR_SLURM_AUTOSTART=${MR_SLURM_AUTOSTART:-1} exec "$(dirname "$0")/run_mr.sh" "${1:-$(dirname "$0")/../mr_launchers.list}"
