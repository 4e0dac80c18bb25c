#!/bin/sh
# Runs every libFuzzer target of a fuzz build for a bounded time each,
# starting from the seed corpus in fuzz/corpus/<target>/.
# Usage: scripts/fuzz.sh BUILDDIR SECONDS
set -eu
build=${1:-build-fuzz}
secs=${2:-60}
src=$(cd "$(dirname "$0")/.." && pwd)
found=0
for t in "$build"/fuzz/fuzz_*; do
	[ -f "$t" ] && [ -x "$t" ] || continue
	found=1
	name=$(basename "$t")
	seeds="$src/fuzz/corpus/${name#fuzz_}"
	work="$build/fuzz/corpus-run/$name"
	mkdir -p "$work"
	echo "fuzz: $name for ${secs}s"
	"$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		"$work" "$seeds" 2>&1 | grep -E '^(stat::|#[0-9]+ *DONE|==|SUMMARY)' || true
	# a crash leaves crash-* and a non-zero status: run once more on the corpus to fail loudly
	"$t" -runs=0 "$work" "$seeds" >/dev/null 2>&1 || { echo "fuzz: $name failed" >&2; exit 1; }
done
[ "$found" = 1 ] || echo "fuzz: no targets built in $build"
