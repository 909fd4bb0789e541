#!/bin/bash
# quickstart.sh - from a fresh Debian 12 checkout to "Hello from rank 0 of 4": installs the
# packages of tools/deps.txt (as root; skipped otherwise), builds in build/ and runs
# examples/hello on 4 ranks with the build tree's mpiexec.
#   BUILD_DIR  build folder (default: build)    MAKE_JOBS  parallel make jobs (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=${BUILD_DIR:-build}
jobs=${MAKE_JOBS:-$(nproc)}

if [ "$(id -u)" = 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    # shellcheck disable=SC2046 # one word per package
    apt-get install -y $(sed -e 's/#.*//' tools/deps.txt)
else
    echo "quickstart.sh: not root, not installing packages (see tools/deps.txt)" >&2
fi

./autogen.sh
mkdir -p "$build"
cd "$build"
"$src/configure"
make -j"$jobs"
echo "+ mpiexec -n 4 examples/hello"
./tools/mpiexec -n 4 ./examples/hello
