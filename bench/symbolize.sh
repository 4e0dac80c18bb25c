#!/bin/sh
# Symbolizer benchmark: builds the large -g program and its symbol-table-only
# copy, then runs bench_symbolize on libc, the program and the copy.
# Usage: bench/symbolize.sh BUILDDIR
set -eu
build=${1:-build}
ninja -C "$build" bench/bench_symbolize bench/symbolize/bigprog bench/symbolize/bigprog-symtab >/dev/null
exec "$build/bench/bench_symbolize" "$build/bench/symbolize/bigprog" "$build/bench/symbolize/bigprog-symtab"
