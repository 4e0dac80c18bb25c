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
	found_dir="$build/fuzz/found/$name"
	log="$build/fuzz/$name.log"
	mkdir -p "$work" "$found_dir"
	echo "fuzz: $name for ${secs}s"
	# the fuzzer's own status says whether it found a crash, a leak or a timeout;
	# what it found is kept in $found_dir and named below
	status=0
	"$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$found_dir/" "$work" "$seeds" >"$log" 2>&1 || status=$?
	grep -E '^(stat::|#[0-9]+ *DONE|==|SUMMARY)' "$log" || true
	if [ "$status" != 0 ]; then
		echo "fuzz: $name failed (exit $status); input: $(ls "$found_dir" | head -1); log: $log" >&2
		exit 1
	fi
done
[ "$found" = 1 ] || echo "fuzz: no targets built in $build"
