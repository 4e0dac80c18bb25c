#!/bin/sh
# Instructions per stack capture, counted by callgrind, for every method of
# bench_capture at depths 8, 32 and 128: (Ir for N2 captures - Ir for N1
# captures) / (N2 - N1), so process start-up and set-up cancel out.  Prints
# per capture and per frame, then ratios of relstack against each peer and
# what skipping one frame adds; last, what each frame costs beyond depth 32
# (the difference between depths 128 and 32, over the frames between).
#
# Usage: bench/capture.sh BENCH_CAPTURE [N1 N2]
set -eu
prog=$1
n1=${2:-1000} n2=${3:-3000}
methods="relstack relstack_abs fp_floor unw_backtrace glibc relstack_skip1 relstack_context relstack_qsort relstack_check unw_qsort"

if ! command -v valgrind >/dev/null; then
	echo "capture: callgrind skipped: valgrind not installed" >&2
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() { # METHOD DEPTH N -> total Ir
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$prog" "$1" "$2" "$3" >/dev/null 2>"$tmp/log"
	sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$tmp/log"
}

for d in 8 32 128; do
	for m in $methods; do
		a=$(count "$m" "$d" "$n1")
		b=$(count "$m" "$d" "$n2")
		ir=$(awk -v a="$a" -v b="$b" -v n1="$n1" -v n2="$n2" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }')
		echo "capture_${m}_d${d}_ir: $ir instructions/capture"
		eval "ir_$m=$ir"
	done
	for m in $methods; do
		eval "v=\$ir_$m"
		f=$("$prog" "$m" "$d" frames)
		awk -v v="$v" -v f="$f" -v n="capture_${m}_d${d}_ir_frame" \
			'BEGIN { printf "%s: %.1f instructions/frame\n", n, v / f }'
	done
	for p in fp_floor unw_backtrace glibc relstack_abs; do
		eval "v=\$ir_$p"
		awk -v a="$ir_relstack" -v b="$v" -v n="capture_relstack_d${d}_ir" -v p="$p" \
			'BEGIN { printf "%s: ratio %.2f vs %s\n", n, a / b, p }'
	done
	awk -v a="$ir_relstack_skip1" -v b="$ir_relstack" -v n="capture_relstack_skip1_d${d}_ir" \
		'BEGIN { printf "%s: %+.1f instructions/capture vs relstack\n", n, a - b }'
	awk -v a="$ir_relstack_check" -v b="$ir_relstack" -v n="capture_relstack_check_d${d}_ir" \
		'BEGIN { printf "%s: ratio %.2f vs relstack (the stack checker)\n", n, a / b }'
	awk -v a="$ir_relstack_qsort" -v b="$ir_unw_qsort" -v n="capture_relstack_qsort_d${d}_ir" \
		'BEGIN { printf "%s: ratio %.2f vs unw_qsort (frame pointers and CFI tables against libunwind, same stack)\n", n, a / b }'
	# the frames a qsort() call adds (the comparison function's and the C library's), each by CFI
	fq=$("$prog" relstack_qsort "$d" frames)
	fr=$("$prog" relstack "$d" frames)
	awk -v a="$ir_relstack_qsort" -v b="$ir_relstack" -v fa="$fq" -v fb="$fr" \
		-v n="capture_relstack_qsort_d${d}_ir_extra_frame" \
		'BEGIN { printf "%s: %.1f instructions/frame for the %d frames qsort adds\n", n, (a - b) / (fa - fb), fa - fb }'
	for m in relstack fp_floor; do
		eval "ir_${m}_d$d=\$ir_$m"
		eval "frames_${m}_d$d=\$($prog $m $d frames)"
	done
	eval "ir_unw_backtrace_d$d=\$ir_unw_backtrace"
done
for m in relstack fp_floor; do
	eval "a=\$ir_${m}_d32 b=\$ir_${m}_d128 fa=\$frames_${m}_d32 fb=\$frames_${m}_d128"
	awk -v a="$a" -v b="$b" -v fa="$fa" -v fb="$fb" -v n="capture_${m}_d32_d128_ir_frame" \
		'BEGIN { printf "%s: %.2f instructions/frame\n", n, (b - a) / (fb - fa) }'
done
# A cold capture: the first of a thread (no cached range, no tail), at
# depth 32: threads that capture once, less the same threads without it.
c1=$(count relstack_cold 32 100)
c2=$(count relstack_cold 32 300)
t1=$(count thread_only 32 100)
t2=$(count thread_only 32 300)
awk -v c1="$c1" -v c2="$c2" -v t1="$t1" -v t2="$t2" -v w="$ir_relstack_d32" -v u="$ir_unw_backtrace_d32" 'BEGIN {
	cold = ((c2 - c1) - (t2 - t1)) / 200
	printf "capture_relstack_cold_d32_ir: %.1f instructions/capture (the first of a thread)\n", cold
	printf "capture_relstack_cold_d32_ir: ratio %.2f vs relstack (warm), %.2f vs unw_backtrace\n", cold / w, cold / u
}'
