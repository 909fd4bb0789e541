#!/bin/sh
# Regenerates the build system; nothing else.
set -e
cd "$(dirname "$0")"
autoreconf -fi
