#!/bin/sh
# Runs every benchmark of bench/ against a built tree and prints its
# figures: `<name>: <value> <unit>` and `<name>: ratio <x> vs <peer>`.
# Usage: scripts/bench.sh BUILDDIR
set -eu
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
export RELSTACK_SRC="$src" RELSTACK_BUILD="$build"
ninja -C "$build" >/dev/null

echo "== object table lookup"
"$build/bench/bench_lookup"
"$src/bench/callgrind.sh" "$build/bench/bench_lookup" lookup \
	"relstack_random relstack_random_batch relstack_run" "dl_find_object dladdr dl_iterate_phdr" \
	64000 320000 2000 12000

echo "== symbolizer"
"$src/bench/symbolize.sh" "$build"

echo "== compiled CFI tables"
"$src/bench/cfi.sh" "$build"

echo "== stack capture"
"$build/bench/bench_capture"
"$src/bench/capture.sh" "$build/bench/bench_capture"

echo "== buffer file write path"
"$src/bench/ring.sh" "$build"

echo "== agent (relstack record)"
"$src/bench/record.py" "$build"

echo "== kernel recorder"
"$build/bench/bench_kernel" "$build/tools/relstack"

echo "== relstack ps on live processes"
"$src/bench/ps.py" "$build"

echo "== decoder and presenters (report formats)"
"$build/bench/bench_present"
