#!/bin/sh
# Fuzzes the checks of the wire headers other processes write (the shared-memory rings'
# records, pg's message envelope) for FUZZ_SECONDS: tests/fuzz/run_fuzz.sh wire.
exec sh "$(cd "$(dirname "$0")" && pwd)/run_fuzz.sh" wire
