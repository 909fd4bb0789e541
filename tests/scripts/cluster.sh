#!/bin/bash
# cluster.sh up|down|status|exec NODE CMD... - an emulated multi-node Slurm on this machine.
#
# Each node is a slurmd in its own network, UTS and mount namespace: its own address on a
# private bridge, its own host name, its own tmpfs on /dev/shm and its own TmpFS folder. One
# slurmctld (on the bridge's address) and a munged of our own (its own socket) serve them.
# Node names (cn1..cnN) are deliberately not resolvable: Slurm reaches nodes by NodeAddr, as
# on many real clusters. Needs root, namespaces, iproute2, util-linux and slurm-wlm.
#
#   up      start munged, the bridge, the nodes and slurmctld; wait until every node is
#           idle; print the SLURM_CONF path. Idempotent: a running cluster is left as is.
#   down    stop everything `up` started, by pid (slurmd, slurmstepd and their tasks, every
#           process left in a node's namespace, slurmctld, munged), delete the namespaces,
#           the veth pairs and the bridge, and remove the state. Always safe to run.
#   status  print "up SLURM_CONF=..." and exit 0, or "down" and exit 1.
#   exec NODE CMD...  run CMD inside node NODE (cn2, or 2): its network, host name and
#           /dev/shm, with the caller's environment.
#   addr NODE  print node NODE's address; addr6 NODE its IPv6 address.
#   decoy on|apart|off  give every node's interface dock0 (listed before eth0) one and the
#           same address, up and running, as docker0 has on real clusters; apart: one of
#           its own on every node, on one /16 that nobody routes; off: down, no address.
#   rsh HOST CMD...  an rsh agent for Open MPI's mpirun (--mca plm_rsh_agent "cluster.sh
#           rsh"): runs the shell command line CMD inside the node named or addressed HOST.
#
# Settings (environment): MPISHIM_CLUSTER_NODES (2), MPISHIM_CLUSTER_DIR
# (/tmp/mpishim-cluster), MPISHIM_CLUSTER_NET (10.77.0: the bridge is .1, node i is .10+i),
# MPISHIM_CLUSTER_NET6 (fd00:77: node i's eth0 also has fd00:77::<10+i>/64),
# MPISHIM_CLUSTER_PORT (7917: slurmctld; slurmd takes PORT+1; away from the one-node test
# Slurm of slurm_cluster.sh, 6917, and Slurm's 6817), MPISHIM_CLUSTER_CPUS (8 per node).
# Exits 77 with one line "SKIP: ..." where root or namespaces are not available.
set -euo pipefail

D=${MPISHIM_CLUSTER_DIR:-/tmp/mpishim-cluster}
N=${MPISHIM_CLUSTER_NODES:-2}
NET=${MPISHIM_CLUSTER_NET:-10.77.0}
PORT=${MPISHIM_CLUSTER_PORT:-7917}
CPUS=${MPISHIM_CLUSTER_CPUS:-8}
BR=br-mpsc         # bridge (interface names are at most 15 characters)
NS=mpsc            # namespace of node i: mpsc<i>; its host-side veth: vmpsc<i>
CONF=$D/slurm.conf
MUNGE_SOCK=$D/munge.socket
export SLURM_CONF=$CONF

node_addr() { echo "$NET.$((10 + $1))"; }

# Every node's eth0 has an IPv6 address too, on one /64 (no duplicate address detection, so
# that it is usable at once): the suite's IPv6 cases select it by subnet. Where IPv6 is off
# (a kernel booted with ipv6.disable=1) the nodes have none, and those cases skip.
NET6=${MPISHIM_CLUSTER_NET6:-fd00:77}
node_addr6() { echo "$NET6::$((10 + $1))"; }

# The decoy: an interface of every node, listed before eth0, down and without an address
# until `decoy on` gives it the same address on every node, as docker0 or virbr0 have on
# real clusters (up and running once a container runs). Nothing reaches another node
# through it.
DECOY=dock0
DECOY_ADDR=172.31.0.1/16

decoy() {
    local i
    for i in $(seq 1 "$N"); do
        case "$1" in
            on | apart)
                # apart: an address of its own on every node (172.31.<i>.1), all on one /16,
                # as per-node container networks carved from one pool are: every node sees
                # the others' on a subnet of its own, and reaches none of them.
                ip -n "$NS$i" addr flush dev "$DECOY"
                if [ "$1" = apart ]; then
                    ip -n "$NS$i" addr add "172.31.$i.1/16" dev "$DECOY"
                else
                    ip -n "$NS$i" addr add "$DECOY_ADDR" dev "$DECOY"
                fi
                ip -n "$NS$i" link set "${DECOY}p" up
                ip -n "$NS$i" link set "$DECOY" up
                ;;
            off)
                ip -n "$NS$i" addr flush dev "$DECOY"
                ip -n "$NS$i" link set "$DECOY" down
                ;;
            *)
                echo "usage: $0 decoy on|apart|off" >&2
                exit 2
                ;;
        esac
    done
}

write_conf() {
    local i
    mkdir -p "$D/state" "$D/log" "$D/spool" "$D/tmp"
    cat >"$CONF" <<CONF
# Written by tests/scripts/cluster.sh: an emulated ${N}-node Slurm for mpishim's tests.
ClusterName=mpishimc
SlurmctldHost=$(hostname -s)($NET.1)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCK
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=pmix
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool/%n
TmpFS=$D/tmp/%n
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.%n.log
SlurmUser=root
SlurmdUser=root
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
CONF
    for i in $(seq 1 "$N"); do
        echo "NodeName=cn$i NodeAddr=$(node_addr "$i") NodeHostname=cn$i CPUs=$CPUS Sockets=1" \
            "CoresPerSocket=$CPUS ThreadsPerCore=1 RealMemory=4000 State=UNKNOWN" >>"$CONF"
        mkdir -p "$D/spool/cn$i" "$D/tmp/cn$i"
    done
    echo "PartitionName=mpsc Nodes=cn[1-$N] Default=YES MaxTime=INFINITE State=UP" \
        "OverSubscribe=FORCE:4" >>"$CONF"
}

skip() {
    echo "SKIP: cluster.sh: $*"
    exit 77
}

# The emulated cluster needs root, network/UTS/mount namespaces and the daemons.
check_can_run() {
    local c
    [ "$(id -u)" = 0 ] || skip "needs root (network namespaces, a bridge, slurmd)"
    for c in ip nsenter unshare munged slurmctld slurmd sinfo srun; do
        command -v "$c" >/dev/null || skip "needs $c"
    done
    unshare --net --uts --mount true 2>/dev/null ||
        skip "needs network, UTS and mount namespaces (unshare --net --uts --mount failed)"
    case "$N" in
        '' | *[!0-9]*) skip "MPISHIM_CLUSTER_NODES='$N' is not a number" ;;
    esac
    [ "$N" -ge 1 ] && [ "$N" -le 200 ] || skip "MPISHIM_CLUSTER_NODES=$N is out of 1..200"
}

# True when the process whose pid is in file $1 is alive (and not a zombie).
alive() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 1
    [ -n "$pid" ] || return 1
    case "$(ps -o stat= -p "$pid" 2>/dev/null)" in
        "" | Z*) return 1 ;;
        *) return 0 ;;
    esac
}

nodes_up() {
    local n
    [ -f "$CONF" ] || return 1
    n=$(timeout 10 sinfo -h -N -t idle,mixed,allocated -o %N 2>/dev/null | sort -u | wc -l) ||
        return 1
    [ "$n" -eq "$N" ]
}

status() {
    local i
    alive "$D/slurmctld.pid" && alive "$D/munged.pid" || { echo down; return 1; }
    for i in $(seq 1 "$N"); do
        alive "$D/slurmd.cn$i.pid" || { echo down; return 1; }
    done
    nodes_up || { echo down; return 1; }
    echo "up SLURM_CONF=$CONF"
}

munge_ok() {
    timeout 10 munge -S "$MUNGE_SOCK" -n </dev/null 2>/dev/null |
        timeout 10 unmunge -S "$MUNGE_SOCK" >/dev/null 2>&1
}

# Our own munged on our own socket: the one-node test Slurm's `down` stops its munged, and
# that must not take this cluster's authentication with it.
start_munge() {
    munged -f --socket="$MUNGE_SOCK" --pid-file="$D/munged.pid" \
        --log-file="$D/log/munged.log" --seed-file="$D/munged.seed"
    for _ in $(seq 1 50); do
        munge_ok && return 0
        sleep 0.1
    done
    echo "cluster.sh: munged did not answer on $MUNGE_SOCK; log in $D/log" >&2
    return 1
}

make_net() {
    local i
    ip link add "$BR" type bridge
    ip addr add "$NET.1/24" dev "$BR"
    ip link set "$BR" up
    for i in $(seq 1 "$N"); do
        ip netns add "$NS$i"
        # The decoy first, so that it comes before eth0 in every listing of interfaces.
        ip -n "$NS$i" link add "$DECOY" type veth peer name "${DECOY}p"
        ip link add "v$NS$i" type veth peer name eth0 netns "$NS$i"
        ip link set "v$NS$i" master "$BR" up
        ip -n "$NS$i" addr add "$(node_addr "$i")/24" dev eth0
        ip -n "$NS$i" -6 addr add "$(node_addr6 "$i")/64" dev eth0 nodad 2>/dev/null || true
        ip -n "$NS$i" link set eth0 up
        ip -n "$NS$i" link set lo up
    done
}

# slurmd of node $1 in its namespaces. nsenter, not `ip netns exec`: that remounts /sys and
# hides /sys/fs/cgroup, and slurmd aborts. The mount namespace gives the node its own
# /dev/shm (as a real host has), so that shared-memory segments of two "nodes" never meet.
start_slurmd() {
    nsenter --net="/run/netns/$NS$1" unshare --uts --mount --propagation slave sh -c \
        "mount -t tmpfs -o mode=1777,size=1g shm-cn$1 /dev/shm && hostname cn$1 &&
         exec slurmd -f '$CONF' -N cn$1"
}

up() {
    local i
    check_can_run
    if status >/dev/null 2>&1; then
        echo "$CONF"
        return 0
    fi
    down >/dev/null # whatever is left of an earlier, half-started cluster
    for i in $(seq 1 "$N"); do
        if getent hosts "cn$i" >/dev/null; then
            echo "cluster.sh: cn$i resolves here; the cluster's node names must not" >&2
            return 1
        fi
    done
    mkdir -p "$D/log"
    write_conf
    start_munge
    make_net
    slurmctld -c -f "$CONF"
    for i in $(seq 1 "$N"); do
        start_slurmd "$i"
    done
    for _ in $(seq 1 150); do
        if [ "$(timeout 10 sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)" -eq "$N" ]; then
            echo "$CONF"
            return 0
        fi
        sleep 0.2
    done
    echo "cluster.sh: the $N nodes did not become idle in 30 s; logs in $D/log" >&2
    timeout 10 sinfo -N -l >&2 || true
    tail -n 20 "$D"/log/*.log >&2 || true
    return 1
}

# Ends the process in pid file $1: SIGTERM, then SIGKILL after 5 s.
stop_pidfile() {
    local pid
    pid=$(cat "$1" 2>/dev/null) || return 0
    if alive "$1"; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            alive "$1" || break
            sleep 0.1
        done
        alive "$1" && kill -9 "$pid" 2>/dev/null
    fi
    rm -f "$1"
}

# Cancels every job while the controller answers, so that the steps end their tasks.
cancel_jobs() {
    local ids
    [ -f "$CONF" ] && alive "$D/slurmctld.pid" || return 0
    ids=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
    [ -n "$ids" ] || return 0
    # shellcheck disable=SC2086 # one word per job id
    timeout 10 scancel $ids 2>/dev/null || true
    for _ in $(seq 1 25); do
        [ -z "$(timeout 10 squeue -h -o %i 2>/dev/null)" ] && return 0
        sleep 0.2
    done
}

# Every process left in node $1's network namespace (slurmstepd of a failed step ignores
# SIGTERM, tasks, programs of `exec`): SIGKILL by pid.
kill_node_procs() {
    local p
    [ -e "/run/netns/$NS$1" ] || return 0
    for p in $(ip netns pids "$NS$1" 2>/dev/null || true); do
        kill -9 "$p" 2>/dev/null || true
    done
}

# The highest node index that may be up: N, or more where a cluster of more nodes was
# brought up with another MPISHIM_CLUSTER_NODES (its namespaces and pid files say so).
nodes_to_clean() {
    local top=$N i
    for i in $(ip netns list 2>/dev/null | sed -n "s/^$NS\([0-9][0-9]*\).*/\1/p") \
        $(ls "$D" 2>/dev/null | sed -n 's/^slurmd\.cn\([0-9][0-9]*\)\.pid$/\1/p'); do
        [ "$i" -gt "$top" ] && top=$i
    done
    echo "$top"
}

down() {
    local i pid top
    set +e
    top=$(nodes_to_clean)
    cancel_jobs
    for i in $(seq 1 "$top"); do
        stop_pidfile "$D/slurmd.cn$i.pid"
    done
    for i in $(seq 1 "$top"); do
        kill_node_procs "$i"
    done
    stop_pidfile "$D/slurmctld.pid"
    if [ -f "$D/munged.pid" ]; then
        pid=$(cat "$D/munged.pid")
        # Only if it is still the munged we started (pids get reused).
        [ "$(ps -o comm= -p "$pid" 2>/dev/null)" = munged ] && stop_pidfile "$D/munged.pid"
        rm -f "$D/munged.pid"
    fi
    for i in $(seq 1 "$top"); do
        ip link del "v$NS$i" 2>/dev/null # the pair goes now even if the netns lingers
        ip netns del "$NS$i" 2>/dev/null
    done
    ip link del "$BR" 2>/dev/null
    rm -rf "$D/state" "$D/spool" "$D/tmp" "$D"/slurmd.*.pid "$D/munged.seed" "$MUNGE_SOCK"*
    set -e
    echo down
}

# The node index of "cn3", "3" or "10.77.0.13".
node_index() {
    local i=${1#cn}
    case "$1" in
        "$NET".*) i=$((${1##*.} - 10)) ;;
    esac
    case "$i" in
        '' | *[!0-9]*) i=0 ;;
    esac
    if [ "$i" -lt 1 ] || [ "$i" -gt "$N" ]; then
        echo "cluster.sh: no node '$1' (cn1..cn$N)" >&2
        exit 2
    fi
    echo "$i"
}

exec_on() {
    local i pid
    [ $# -ge 2 ] || { echo "usage: $0 exec NODE CMD..." >&2; exit 2; }
    i=$(node_index "$1")
    shift
    alive "$D/slurmd.cn$i.pid" || { echo "cluster.sh: node cn$i is not up" >&2; exit 1; }
    pid=$(cat "$D/slurmd.cn$i.pid")
    # slurmd's namespaces are the node's: its network, host name and /dev/shm.
    exec nsenter -t "$pid" --net --uts --mount --wd="$PWD" -- "$@"
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    exec)
        shift
        exec_on "$@"
        ;;
    addr) node_addr "$(node_index "${2:-}")" ;;
    addr6) node_addr6 "$(node_index "${2:-}")" ;;
    decoy) decoy "${2:-}" ;;
    rsh)
        # As ssh does: the words after the host are one command line for a shell.
        [ $# -ge 3 ] || { echo "usage: $0 rsh HOST CMD..." >&2; exit 2; }
        host=$2
        shift 2
        exec_on "$host" sh -c "$*"
        ;;
    *)
        echo "usage: $0 up|down|status|exec NODE CMD...|addr NODE|addr6 NODE|decoy on|apart|off" >&2
        exit 2
        ;;
esac
