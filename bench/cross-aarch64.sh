#!/bin/sh
# aarch64 against x86-64 (issue 19), printed, never asserted:
#
#  capture   instructions per stack capture at depth 32.  aarch64: the
#            aarch64 build's bench_capture under qemu-aarch64-static with
#            -singlestep (one instruction per translated block) and
#            -d exec,nochain (a log line per block executed, chaining off so
#            that none is missed): lines for N2 captures - lines for N1, over
#            N2 - N1, so start-up and set-up cancel out.  x86-64: the native
#            build's under callgrind, as bench/capture.sh counts.
#  decode    records per second of the native relstack decoding a file the
#            aarch64 build wrote and one the native build wrote, the same
#            100,000... records of depth 32 (bench_present's), and the ratio.
#
# Usage: bench/cross-aarch64.sh NATIVE_BUILD AARCH64_BUILD [N1 N2 RECORDS]
set -eu
native=$1 cross=$2
n1=${3:-200} n2=${4:-600} records=${5:-20000}
qemu="qemu-aarch64-static -L /"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for tool in qemu-aarch64-static valgrind; do
	if ! command -v $tool >/dev/null; then
		echo "cross-aarch64: skipped: $tool not installed" >&2
		exit 0
	fi
done

a64_count() { # METHOD N -> instructions executed by the aarch64 bench_capture
	# shellcheck disable=SC2086
	$qemu -singlestep -d exec,nochain -D /proc/self/fd/3 "$cross/bench/bench_capture" "$1" 32 "$2" \
		3>&1 >/dev/null | grep -c '^Trace'
}

x64_count() { # METHOD N -> instructions callgrind counts
	valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$native/bench/bench_capture" "$1" 32 "$2" \
		>/dev/null 2>"$tmp/log"
	sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$tmp/log"
}

for m in relstack relstack_abs fp_floor; do
	a=$(a64_count $m "$n1") b=$(a64_count $m "$n2")
	c=$(x64_count $m "$n1") d=$(x64_count $m "$n2")
	# shellcheck disable=SC2086
	fa=$($qemu "$cross/bench/bench_capture" $m 32 frames)
	fx=$("$native/bench/bench_capture" $m 32 frames)
	awk -v a="$a" -v b="$b" -v c="$c" -v d="$d" -v n1="$n1" -v n2="$n2" -v m="$m" -v fa="$fa" -v fx="$fx" 'BEGIN {
		ia = (b - a) / (n2 - n1); ix = (d - c) / (n2 - n1)
		printf "capture_%s_d32_aarch64_insn: %.1f instructions/capture (%d frames, counted under qemu-user)\n", m, ia, fa
		printf "capture_%s_d32_x86_64_ir: %.1f instructions/capture (%d frames, callgrind)\n", m, ix, fx
		printf "capture_%s_d32_aarch64_insn: ratio %.2f vs x86_64\n", m, ia / ix
	}'
	eval "a64_$m=\$(awk -v a=\"\$a\" -v b=\"\$b\" -v n1=\"\$n1\" -v n2=\"\$n2\" 'BEGIN { print (b - a) / (n2 - n1) }')"
	eval "x64_$m=\$(awk -v c=\"\$c\" -v d=\"\$d\" -v n1=\"\$n1\" -v n2=\"\$n2\" 'BEGIN { print (d - c) / (n2 - n1) }')"
done
# shellcheck disable=SC2154
awk -v a="$a64_relstack" -v b="$a64_fp_floor" -v c="$x64_relstack" -v d="$x64_fp_floor" 'BEGIN {
	printf "capture_relstack_d32_aarch64_insn: ratio %.2f vs fp_floor on aarch64 (x86_64: %.2f)\n", a / b, c / d
}'

# The same records written by each build (bench_present keeps its file).
# shellcheck disable=SC2086
$qemu "$cross/bench/bench_present" "$records" "$tmp/aarch64.rsb" >/dev/null 2>&1
"$native/bench/bench_present" "$records" "$tmp/x86_64.rsb" >/dev/null 2>&1

best_rate() { # FILE FORMAT -> records/s of the native relstack, the best of three
	best=0
	for i in 1 2 3; do
		t0=$(date +%s.%N)
		"$native/tools/relstack" report --color never --format "$2" "$1" >/dev/null
		t1=$(date +%s.%N)
		best=$(awk -v b="$best" -v t0="$t0" -v t1="$t1" -v n="$records" 'BEGIN { r = n / (t1 - t0); print (r > b ? r : b) }')
	done
	echo "$best"
}

for f in text folded; do
	ra=$(best_rate "$tmp/aarch64.rsb" $f)
	rx=$(best_rate "$tmp/x86_64.rsb" $f)
	awk -v a="$ra" -v x="$rx" -v f="$f" 'BEGIN {
		printf "decode_%s_aarch64_file: %.0f records/s (the x86_64 relstack)\n", f, a
		printf "decode_%s_x86_64_file: %.0f records/s\n", f, x
		printf "decode_%s_aarch64_file: ratio %.2f vs x86_64 file\n", f, a / x
	}'
done
