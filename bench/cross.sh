#!/bin/sh
# Other architectures against the native one, in instructions counted by
# callgrind (emulated and native runs count alike, time would not):
#
#   capture at depth 32: bench_cross of each build, (Ir for N2 captures -
#   Ir for N1) / (N2 - N1), so start-up and set-up cancel out;
#   decoding: the native relstack (report and dump) on a file of N records
#   written by each build, per record the same way, so that a foreign file
#   is shown to decode at the native rate.
#
# Usage: bench/cross.sh NATIVE_BUILD ARCH_BUILD [WRAPPER]
#   WRAPPER runs the ARCH build's programs (an emulator; none for i386),
#   and callgrind counts the emulator too: the capture figure is then only
#   meaningful where valgrind runs the ARCH binaries itself (i386 here).
set -eu
native=$(cd "$1" && pwd)
cross=$(cd "$2" && pwd)
wrapper=${3:-}
n1=2000 n2=6000

if ! command -v valgrind >/dev/null; then
	echo "cross: skipped: valgrind not installed" >&2
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
arch=$(file -L "$cross/bench/bench_cross" | sed -n 's/.*ELF \([0-9]*-bit\) [LM]SB [a-z ]*, \([^,]*\),.*/\1 \2/p')

count() { # COMMAND... -> total Ir
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$@" >/dev/null 2>"$tmp/log"
	sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$tmp/log"
}

per() { # A B N1 N2 -> (B - A) / (N2 - N1)
	awk -v a="$1" -v b="$2" -v n1="$3" -v n2="$4" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }'
}

# capture at depth 32
for b in native cross; do
	eval "dir=\$$b"
	w=""
	[ "$b" = cross ] && w=$wrapper
	# shellcheck disable=SC2086
	a=$(count $w "$dir/bench/bench_cross" capture 32 $n1)
	# shellcheck disable=SC2086
	c=$(count $w "$dir/bench/bench_cross" capture 32 $n2)
	eval "cap_$b=$(per "$a" "$c" $n1 $n2)"
done
echo "cross_capture_d32_ir_native: $cap_native instructions/capture"
echo "cross_capture_d32_ir_foreign: $cap_cross instructions/capture ($arch)"
awk -v a="$cap_cross" -v b="$cap_native" 'BEGIN { printf "cross_capture_d32_ir_foreign: ratio %.2f vs native\n", a / b }'

# decoding a file of each build with the native relstack
for b in native cross; do
	eval "dir=\$$b"
	w=""
	[ "$b" = cross ] && w=$wrapper
	for n in $n1 $n2; do
		rm -f "$tmp/$b-$n.rsb"
		# shellcheck disable=SC2086
		$w "$dir/bench/bench_cross" record "$tmp/$b-$n.rsb" "$n"
	done
	for cmd in report dump; do
		a=$(count "$native/tools/relstack" "$cmd" "$tmp/$b-$n1.rsb")
		c=$(count "$native/tools/relstack" "$cmd" "$tmp/$b-$n2.rsb")
		eval "dec_${cmd}_$b=$(per "$a" "$c" $n1 $n2)"
	done
done
for cmd in report dump; do
	eval "a=\$dec_${cmd}_native c=\$dec_${cmd}_cross"
	echo "cross_decode_${cmd}_ir_native: $a instructions/record"
	echo "cross_decode_${cmd}_ir_foreign: $c instructions/record ($arch file)"
	awk -v a="$c" -v b="$a" -v n="cross_decode_${cmd}_ir_foreign" 'BEGIN { printf "%s: ratio %.2f vs native\n", n, a / b }'
done
