#!/bin/sh
# The buffer file's write path: timings and records/s (bench_ring), then
# instructions per record counted by callgrind, against memcpy and write(2);
# then the stack table against inline stacks (bench_stacks): bytes, ns and
# instructions per record, reader speed.
# Usage: bench/ring.sh BUILDDIR
set -eu
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
"$build/bench/bench_ring"
"$src/bench/callgrind.sh" "$build/bench/bench_ring" ring "write whole" "memcpy write2" 20000 120000 2000 12000
"$build/bench/bench_stacks"
"$src/bench/callgrind.sh" "$build/bench/bench_stacks" stacks_d32 "table" "inline" 20000 120000
