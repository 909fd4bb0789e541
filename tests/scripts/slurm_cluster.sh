#!/bin/bash
# slurm_cluster.sh up|down|status - a one-node Slurm on this machine for the tests.
#
# slurmctld and slurmd run on 127.0.0.1 with every file in one state folder
# ($MPISHIM_SLURM_DIR, default /tmp/mpishim-slurm). The node claims 16 CPUs
# (SlurmdParameters=config_overrides), so `srun -n 16` runs on a 2-core machine, and
# MpiDefault=pmix, so `srun -n 4 ./app` serves PMIx to the ranks. Needs root, munge and the
# slurm-wlm packages.
#
#   up      start munge (if not running), slurmctld and slurmd; wait until the node is
#           idle; print the SLURM_CONF path. Idempotent: a running cluster is left as is.
#   down    stop what `up` started (munge only if `up` started it) and remove the state.
#   status  print "up SLURM_CONF=..." and exit 0, or "down" and exit 1.
#
# Nothing is exported to the caller: tests run `export SLURM_CONF=<printed path>`
# (without SLURM_CONF, srun tries a DNS SRV lookup and fails).
set -euo pipefail

D=${MPISHIM_SLURM_DIR:-/tmp/mpishim-slurm}
PORT=${MPISHIM_SLURM_PORT:-6917} # slurmctld; slurmd takes PORT+1 (away from Slurm's 6817)
NODE=$(hostname -s)
CONF=$D/slurm.conf
export SLURM_CONF=$CONF

write_conf() {
    mkdir -p "$D/state" "$D/spool" "$D/log" "$D/tmp"
    cat >"$CONF" <<CONF
# Written by tests/scripts/slurm_cluster.sh: a one-node Slurm for mpishim's tests.
ClusterName=mpishim
SlurmctldHost=$NODE(127.0.0.1)
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=pmix
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
TmpFS=$D/tmp
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
SlurmUser=root
SlurmdUser=root
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=16 Sockets=1 CoresPerSocket=16 ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
}

# True when the process whose pid is in file $1 is alive (and not a zombie).
alive() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    case "$(ps -o stat= -p "$pid" 2>/dev/null)" in
        "" | Z*) return 1 ;;
        *) return 0 ;;
    esac
}

node_idle() {
    [ -f "$CONF" ] || return 1
    grep -qx "$NODE" <<<"$(timeout 10 sinfo -h -N -t idle -o %N 2>/dev/null)"
}

status() {
    if alive "$D/slurmctld.pid" && alive "$D/slurmd.pid" && node_idle_or_busy; then
        echo "up SLURM_CONF=$CONF"
        return 0
    fi
    echo "down"
    return 1
}

# The node answers (idle, or running jobs: mixed/allocated).
node_idle_or_busy() {
    [ -f "$CONF" ] || return 1
    grep -qx "$NODE" <<<"$(timeout 10 sinfo -h -N -t idle,mixed,allocated -o %N 2>/dev/null)"
}

start_munge() {
    if timeout 10 munge -n </dev/null 2>/dev/null | timeout 10 unmunge >/dev/null 2>&1; then
        return 0 # a munged answers already (the system's or another test's)
    fi
    mkdir -p /run/munge
    chown munge:munge /run/munge
    # As root (-f) with its log and pid file in our folder: the packaged folders' ownership
    # then does not matter. The socket stays the default one, which Slurm uses.
    munged -f --log-file="$D/log/munged.log" --pid-file="$D/munged.pid"
    for _ in $(seq 1 50); do
        timeout 10 munge -n </dev/null 2>/dev/null | timeout 10 unmunge >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    echo "slurm_cluster.sh: munged did not answer" >&2
    return 1
}

up() {
    if status >/dev/null; then
        echo "$CONF"
        return 0
    fi
    stop_daemons # whatever is left of an earlier, half-started cluster
    rm -rf "$D/state" "$D/spool" "$D/tmp"
    write_conf
    start_munge
    slurmctld -c -f "$CONF"
    slurmd -f "$CONF"
    for _ in $(seq 1 150); do
        if node_idle; then
            echo "$CONF"
            return 0
        fi
        sleep 0.2
    done
    echo "slurm_cluster.sh: node $NODE did not become idle in 30 s; logs in $D/log" >&2
    timeout 10 sinfo -N -l >&2 || true
    tail -n 20 "$D/log/slurmctld.log" "$D/log/slurmd.log" >&2 || true
    return 1
}

# Ends the process in pid file $1: SIGTERM, then SIGKILL after 5 s.
stop_pidfile() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    alive "$1" && kill "$pid" 2>/dev/null
    for _ in $(seq 1 50); do
        alive "$1" || break
        sleep 0.1
    done
    alive "$1" && kill -9 "$pid" 2>/dev/null
    rm -f "$1"
}

# Ends process $1 and its descendants with SIGKILL, by pid, children first.
kill_tree() {
    local c
    for c in $(pgrep -P "$1" 2>/dev/null || true); do
        kill_tree "$c"
    done
    kill -9 "$1" 2>/dev/null || true
}

# Cancels every job while the controller still answers, so the steps end their tasks.
cancel_jobs() {
    local ids
    [ -f "$CONF" ] && alive "$D/slurmctld.pid" || return 0
    ids=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    [ -n "$ids" ] || return 0
    # shellcheck disable=SC2086 # one word per job id
    timeout 10 scancel $ids 2>/dev/null || true
    for _ in $(seq 1 50); do
        [ -z "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && return 0
        sleep 0.2
    done
}

# slurmstepd of a failed step may ignore SIGTERM: find ours (they hold files in $D) and
# end them and their tasks by pid.
kill_stray_stepds() {
    local p fd
    for p in $(pgrep -x slurmstepd 2>/dev/null || true); do
        for fd in /proc/"$p"/fd/*; do
            case "$(readlink "$fd" 2>/dev/null)" in
                "$D"/*)
                    kill_tree "$p"
                    break
                    ;;
            esac
        done
    done
}

stop_daemons() {
    cancel_jobs
    kill_stray_stepds
    stop_pidfile "$D/slurmd.pid"
    stop_pidfile "$D/slurmctld.pid"
    kill_stray_stepds
}

down() {
    stop_daemons
    if [ -f "$D/munged.pid" ]; then
        local pid
        pid=$(cat "$D/munged.pid")
        # Only if it is still the munged we started (pids get reused).
        if [ "$(ps -o comm= -p "$pid" 2>/dev/null)" = munged ]; then
            kill "$pid" 2>/dev/null || true
        fi
        rm -f "$D/munged.pid"
    fi
    rm -rf "$D/state" "$D/spool" "$D/tmp"
    echo "down"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    *)
        echo "usage: $0 up|down|status" >&2
        exit 2
        ;;
esac
