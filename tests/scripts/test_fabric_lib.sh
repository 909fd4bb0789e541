#!/bin/bash
# test_fabric_lib.sh - when libfabric is loaded, and which one (issue 39, start-up cost):
#  1. a job on one node never loads libfabric (its start-up costs every process a few hundred
#     ms here: doc/cluster.md): examples/ring on 2 ranks runs right with MPISHIM_FABRIC_LIB
#     naming a file that does not exist, and the loader's trace shows no libfabric;
#  2. ranks on different nodes (MPISHIM_NODE_NAME per rank) over a libfabric provider
#     (MPISHIM_FABRIC_NET_PROVIDER=tcp;ofi_rxm) do load it, from the file MPISHIM_FABRIC_LIB
#     names: a file that does not exist fails MPI_Init with a message
#     naming the variable (from the first rank to fail: mpiexec then ends the other), and
#     the configure-time libfabric named there runs the ring to its end;
#  3. a forced provider loads it even on one node, from that file too;
#  4. ranks on different nodes that reach each other through our own sockets
#     (MPISHIM_FABRIC_NET_PROVIDER=sock, fabric/fab_sock.c) never load it, nor does a job
#     that forces them for every peer: the ring runs right with the missing file named;
#  5. nor do ranks on different nodes by default where the machine has no RDMA device (no
#     entry in /sys/class/infiniband): sock is then the default between nodes.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
# shellcheck source=tests/scripts/expect.sh
. "$(dirname "$0")/expect.sh"

mpiexec=$top_builddir/tools/mpiexec
ring=$top_builddir/examples/ring
missing=/nonexistent/libfabric.so.1
libdir=$(sed -n 's/^#define MPS_LIBFABRIC_LIBDIR "\(.*\)"$/\1/p' "$top_builddir/config.h")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export MPISHIM_FABRIC_IFACE=lo

# run NAME [VAR=VALUE...]: the ring on 2 ranks, each on the node "node<rank>" when SPLIT=1;
# output in $tmp/NAME.out, the loader's trace in $tmp/NAME.ld.*, exit status in $tmp/NAME.rc.
run() {
    local name=$1
    shift
    env "$@" LD_DEBUG=files LD_DEBUG_OUTPUT="$tmp/$name.ld" timeout 60 "$mpiexec" -n 2 \
        sh -c '[ "${SPLIT:-0}" = 1 ] && export MPISHIM_NODE_NAME=node$RANK; exec "$0"' \
        "$ring" >"$tmp/$name.out" 2>&1
    echo $? >"$tmp/$name.rc"
}

loaded_libfabric() {
    cat "$tmp/$1".ld.* 2>/dev/null | grep -c 'calling init: .*libfabric\.so'
}

named_missing() {
    grep -q "fatal error: MPI_Init (rank [01]): MPISHIM_FABRIC_LIB=$missing: cannot load it" \
        "$tmp/$1.out" && echo yes || echo no
}

finished() {
    grep -c '^Process [01] exiting$' "$tmp/$1.out"
}

run one_node MPISHIM_FABRIC_LIB=$missing
expect "one node: the ring ends (exit status)" 0 "$(cat "$tmp/one_node.rc")"
expect "one node: both ranks finish" 2 "$(finished one_node)"
expect "one node: no process loads libfabric" 0 "$(loaded_libfabric one_node)"

run two_nodes_missing SPLIT=1 "MPISHIM_FABRIC_NET_PROVIDER=tcp;ofi_rxm" MPISHIM_FABRIC_LIB=$missing
expect "two nodes, missing library: MPI_Init fails" yes \
    "$([ "$(cat "$tmp/two_nodes_missing.rc")" != 0 ] && echo yes || echo no)"
expect "two nodes, missing library: the error names the variable and the file" yes \
    "$(named_missing two_nodes_missing)"

run two_nodes SPLIT=1 "MPISHIM_FABRIC_NET_PROVIDER=tcp;ofi_rxm" \
    MPISHIM_FABRIC_LIB=$libdir/libfabric.so.1
expect "two nodes, configure's libfabric named: the ring ends" 0 "$(cat "$tmp/two_nodes.rc")"
expect "two nodes: both ranks finish" 2 "$(finished two_nodes)"
expect "two nodes: both processes load libfabric" 2 "$(loaded_libfabric two_nodes)"

run forced "MPISHIM_FABRIC_PROVIDER=tcp;ofi_rxm" MPISHIM_FABRIC_LIB=$missing
expect "forced provider, missing library: MPI_Init fails" yes \
    "$([ "$(cat "$tmp/forced.rc")" != 0 ] && echo yes || echo no)"
expect "forced provider, missing library: the error names the variable and the file" yes \
    "$(named_missing forced)"

run two_nodes_sock SPLIT=1 MPISHIM_FABRIC_NET_PROVIDER=sock MPISHIM_FABRIC_LIB=$missing
expect "two nodes over sock: the ring ends" 0 "$(cat "$tmp/two_nodes_sock.rc")"
expect "two nodes over sock: both ranks finish" 2 "$(finished two_nodes_sock)"
expect "two nodes over sock: no process loads libfabric" 0 "$(loaded_libfabric two_nodes_sock)"

run forced_sock MPISHIM_FABRIC_PROVIDER=sock MPISHIM_FABRIC_LIB=$missing
expect "forced sock: the ring ends" 0 "$(cat "$tmp/forced_sock.rc")"
expect "forced sock: no process loads libfabric" 0 "$(loaded_libfabric forced_sock)"

if [ -n "$(ls -A /sys/class/infiniband 2>/dev/null)" ]; then
    echo "SKIP: two nodes by default: this machine has an RDMA device (/sys/class/infiniband)," \
        "so the default between nodes is libfabric's verbs or efa, not sock"
else
    run two_nodes_default SPLIT=1 MPISHIM_FABRIC_LIB=$missing
    expect "two nodes, no RDMA device, default: the ring ends (over sock)" 0 \
        "$(cat "$tmp/two_nodes_default.rc")"
    expect "two nodes, default: both ranks finish" 2 "$(finished two_nodes_default)"
    expect "two nodes, default: no process loads libfabric" 0 \
        "$(loaded_libfabric two_nodes_default)"
fi

# MPISHIM_FABRIC_IFACE as a subnet (the same on every node, where interface names may
# differ): sock between the two node names over IPv6 loopback (where this host has it), every
# rank announcing ::1 alone; libfabric's tcp told the interface that holds 127.0.0.0/8; and
# a subnet that is malformed or holds no address of this node: MPI_Init fails, saying so.
if grep -q '^0\{31\}1 ' /proc/net/if_inet6 2>/dev/null; then
    run v6_sock SPLIT=1 MPISHIM_FABRIC_NET_PROVIDER=sock MPISHIM_FABRIC_IFACE=::1/128 \
        MPISHIM_LOG_LEVEL=debug MPISHIM_FABRIC_LIB=$missing
    expect "two nodes over sock on ::1/128: the ring ends" 0 "$(cat "$tmp/v6_sock.rc")"
    expect "two nodes over sock on ::1/128: both ranks announce ::1 alone" 2 \
        "$(grep -c 'sock listens on port [0-9]*, announcing ::1$' "$tmp/v6_sock.out")"
else
    echo "skip - sock over IPv6: this host has no IPv6 loopback (::1 in /proc/net/if_inet6)"
fi
run rxm_subnet SPLIT=1 "MPISHIM_FABRIC_NET_PROVIDER=tcp;ofi_rxm" MPISHIM_FABRIC_IFACE=127.0.0.0/8 \
    MPISHIM_FABRIC_LIB=$libdir/libfabric.so.1
expect "two nodes over tcp;ofi_rxm on 127.0.0.0/8: the ring ends" 0 "$(cat "$tmp/rxm_subnet.rc")"
# failed_saying NAME TEXT: the run failed, and its output has TEXT.
failed_saying() {
    [ "$(cat "$tmp/$1.rc")" != 0 ] && grep -q "$2" "$tmp/$1.out" && echo yes || echo no
}
run bad_subnet MPISHIM_FABRIC_PROVIDER=sock MPISHIM_FABRIC_IFACE=10.0.0.0/99
expect "forced sock, MPISHIM_FABRIC_IFACE=10.0.0.0/99: MPI_Init fails saying why" yes \
    "$(failed_saying bad_subnet 'MPI_Init (rank [01]): .*MPISHIM_FABRIC_IFACE=10.0.0.0/99: neither an interface.s name nor a subnet')"
run far_subnet SPLIT=1 "MPISHIM_FABRIC_NET_PROVIDER=tcp;ofi_rxm" \
    MPISHIM_FABRIC_IFACE=203.0.113.0/24 MPISHIM_FABRIC_LIB=$libdir/libfabric.so.1
expect "tcp;ofi_rxm, a subnet without an address of this node: MPI_Init fails saying so" yes \
    "$(failed_saying far_subnet 'MPISHIM_FABRIC_IFACE=203.0.113.0/24: no address of this node is within that subnet')"

if [ "$failures" -ne 0 ]; then
    for f in "$tmp"/*.out; do
        echo "== $f"
        tail -5 "$f"
    done
fi
expect_done
