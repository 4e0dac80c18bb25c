#!/bin/sh
# Instructions per unit of work, counted by callgrind, for a benchmark
# program that takes `METHOD N` and does N units of METHOD: the count for
# N2 units minus the count for N1 units, divided by N2 - N1, so set-up
# cancels out.  Then ratios of the first methods against the peers.
#
# Usage: bench/callgrind.sh PROG PREFIX "ours..." "peers..." [N1 N2 [peer-N1 peer-N2]]
set -eu
prog=$1 prefix=$2 ours=$3 peers=$4
n1=${5:-20000} n2=${6:-120000}
pn1=${7:-$n1} pn2=${8:-$n2}

if ! command -v valgrind >/dev/null; then
	echo "$prefix: callgrind skipped: valgrind not installed" >&2
	exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

count() { # METHOD N -> total Ir
	valgrind --tool=callgrind --callgrind-out-file="$tmp/out" "$prog" "$1" "$2" >/dev/null 2>"$tmp/log"
	sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$tmp/log"
}

per_unit() { # METHOD N1 N2
	a=$(count "$1" "$2")
	b=$(count "$1" "$3")
	awk -v a="$a" -v b="$b" -v n1="$2" -v n2="$3" 'BEGIN { printf "%.1f", (b - a) / (n2 - n1) }'
}

for m in $ours; do
	v=$(per_unit "$m" "$n1" "$n2")
	echo "${prefix}_${m}_ir: $v instructions/unit"
	eval "ir_$m=$v"
done
for p in $peers; do
	v=$(per_unit "$p" "$pn1" "$pn2")
	echo "${prefix}_${p}_ir: $v instructions/unit"
	eval "ir_$p=$v"
done
for m in $ours; do
	for p in $peers; do
		eval "a=\$ir_$m b=\$ir_$p"
		awk -v a="$a" -v b="$b" -v n="${prefix}_${m}_ir" -v p="$p" \
			'BEGIN { if (b > 0) printf "%s: ratio %.3f vs %s\n", n, a / b, p }'
	done
done
