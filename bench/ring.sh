#!/bin/sh
# The buffer file's write path: timings and records/s (bench_ring), then
# instructions per record counted by callgrind, against memcpy and write(2).
# Usage: bench/ring.sh BUILDDIR
set -eu
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
"$build/bench/bench_ring"
"$src/bench/callgrind.sh" "$build/bench/bench_ring" ring "write whole" "memcpy write2" 20000 120000 2000 12000
