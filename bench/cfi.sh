#!/bin/sh
# Compiled CFI tables (src/capture/cfi.c): how long building a table takes
# per MB of .eh_frame read, and how many bytes a row takes (its head and
# block index included), against the
# .eh_frame it came from and against ORC, the kernel's compiled form
# (6 bytes of unwind data + 4 of address per row).  Uses the test tool
# cfi_tables, which compiles a table from a file mapped read-only as the
# object table does from a loaded object; each figure is the mean of 20
# builds.
#
# Usage: bench/cfi.sh BUILDDIR
set -eu
build=${1:-build}
tool="$build/tests/system/cfi_tables"
libc=$(ldd "$tool" | awk '/libc.so/ { print $3 }')
ldso=$(ldd "$tool" | awk '/ld-linux/ { print $1 }')
files="$libc $ldso"
# the C++ library of the tool's own architecture, where its multiarch directory has one
for f in "$(dirname "$libc")/libstdc++.so.6" "$build/src/librelstack.so"; do
	[ -f "$f" ] && files="$files $(readlink -f "$f")"
done
"$tool" --repeat 20 $files | awk '
	$1 == "total" { next }
	{
		n = split($1, p, "/"); name = p[n]
		fdes = $3; rows = $5; bytes = $9; tbytes = $11; us = $13
		printf "cfi_table_%s: %d FDEs, %d rows, %d bytes of CFI, %d bytes of table\n", name, fdes, rows, bytes, tbytes
		printf "cfi_table_%s_build: %.1f us, %.2f ms per MB of CFI\n", name, us, us / 1000 / (bytes / 1048576)
		printf "cfi_table_%s_bytes_per_row: %.2f (table, block index included) vs %.2f (.eh_frame): ratio %.2f vs .eh_frame, %.2f vs ORC (10)\n",
			name, tbytes / rows, bytes / rows, tbytes / bytes, tbytes / rows / 10
	}'
