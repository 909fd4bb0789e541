#!/bin/bash
# test_rpc_examples.sh - the RPC examples (examples/rpc_*) at 1 and 3 workers, their
# printed results checked against values this script computes on its own (Python, from the
# definitions of the data set and the models in the examples' comments):
#  - rpc_rref_linear: the loss of every epoch and the final weights of the same SGD;
#  - rpc_parameter_server: the teacher's weights (HogWild order varies; the data are exactly
#    linear, so every order converges there) and trainers x steps updates;
#  - rpc_batch_inference: each client's weighted sum of W x over its samples, and batches of
#    clients x 4 requests.
set -uo pipefail

top_builddir=${top_builddir:-$PWD}
ex=$top_builddir/examples
for p in rpc_rref_linear rpc_parameter_server rpc_batch_inference; do
    [ -x "$ex/$p" ] || { echo "test_rpc_examples.sh: $ex/$p is not built"; exit 99; }
done
command -v python3 >/dev/null || { echo "SKIP: needs python3 to recompute the results"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

check() { # NAME NPROCS PROGRAM: runs it, then the Python check of this case on the output
    local name=$1 n=$2
    if ! timeout 120 "$top_builddir/tools/mpiexec" -n "$n" "$ex/$name" >"$tmp/out" 2>&1; then
        echo "FAIL - $name at $n workers exited with an error"
        sed 's/^/       /' "$tmp/out"
        failures=$((failures + 1))
        return
    fi
    if python3 - "$name" "$n" "$tmp/out" <<'PY'; then
import sys

name, n, out = sys.argv[1], int(sys.argv[2]), open(sys.argv[3]).read().splitlines()
DIM = 4


def sample(i):
    x = [((i * 7 + j * 3) % 11) / 10.0 - 0.5 for j in range(DIM)]
    t = 0.3
    for j in range(DIM):
        t += (j + 1) * 0.1 * (-1 if j % 2 else 1) * x[j]
    return x, t


def close(a, b, tol):
    return abs(a - b) <= tol * max(1.0, abs(b))


def fail(msg):
    print("FAIL - %s at %d workers: %s" % (name, n, msg))
    sys.exit(1)


def line(prefix):
    for l in out:
        if l.startswith(prefix):
            return l
    fail("no line starting with %r" % prefix)


if name == "rpc_rref_linear":
    w = [0.0] * (DIM + 1)
    for e in range(20):
        loss = 0.0
        for s in range(0, 32, 8):
            g = [0.0] * (DIM + 1)
            bl = 0.0
            for i in range(8):
                x, y = sample(s + i)
                p = w[DIM] + sum(w[j] * x[j] for j in range(DIM))
                err = p - y
                bl += err * err / 8
                for j in range(DIM):
                    g[j] += 2 * err * x[j] / 8
                g[DIM] += 2 * err / 8
            w = [w[j] - 0.1 * g[j] for j in range(DIM + 1)]
            loss += bl / 4
        got = float(line("epoch %d loss" % e).split()[-1])
        if not close(got, loss, 1e-9):
            fail("epoch %d loss %r, expected %r" % (e, got, loss))
    got = [float(v) for v in line("weights").split()[1:]]
    if len(got) != DIM + 1 or not all(close(a, b, 1e-9) for a, b in zip(got, w)):
        fail("weights %r, expected %r" % (got, w))
    print("ok   - %s at %d workers: 20 epochs, loss %.3g, weights as computed here" % (name, n, loss))
elif name == "rpc_parameter_server":
    trainers = max(n - 1, 1)
    teacher = [(j + 1) * 0.1 * (-1 if j % 2 else 1) for j in range(DIM)] + [0.3]
    head = line("parameter server:").split()
    if int(head[2]) != trainers or int(head[4]) != trainers * 800:
        fail("%r, expected %d trainers and %d updates" % (head, trainers, trainers * 800))
    got = [float(v) for v in line("weights").split()[1:]]
    if len(got) != DIM + 1 or not all(abs(a - b) < 1e-3 for a, b in zip(got, teacher)):
        fail("weights %r, expected the teacher's %r" % (got, teacher))
    print("ok   - %s at %d workers: %d updates, weights within 1e-3 of the teacher" % (name, n, trainers * 800))
else:
    clients = max(n - 1, 1)
    for c in range(clients):
        total = 0.0
        for r in range(10):
            for k in range(4):
                x, _ = sample((c * 10 + r) * 4 + k)
                for o in range(3):
                    total += sum(((o + 1) * 0.5 - j * 0.25) * x[j] for j in range(DIM)) * (o + 1)
        got = float(line("client %d:" % c).split()[-1])
        if not close(got, total, 1e-9):
            fail("client %d sum %r, expected %r" % (c, got, total))
    want = "server: 10 batches of %d requests" % (clients * 4)
    if want not in out:
        fail("no line %r" % want)
    print("ok   - %s at %d workers: every answer as computed here, %s" % (name, n, want[8:]))
PY
        :
    else
        sed 's/^/       /' "$tmp/out"
        failures=$((failures + 1))
    fi
}

for n in 1 3; do
    check rpc_rref_linear "$n"
    check rpc_parameter_server "$n"
    check rpc_batch_inference "$n"
done
[ $failures = 0 ] || exit 1
exit 0
