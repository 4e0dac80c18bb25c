#!/bin/sh
# The main job on a built-in example: run the demo program, which records
# stacks from several threads through a plugin it loads, unloads and loads
# again, and then crashes; decode what it left behind.
# Usage: scripts/demo.sh BUILDDIR [FILE]   (FILE: the buffer file, default BUILDDIR/relstack-demo.rsb)
set -eu
build=$(cd "${1:-build}" && pwd)
file="${2:-$build/relstack-demo.rsb}"
relstack="$build/tools/relstack"

rm -f "$file"
echo "== running the demo program (it crashes on purpose)"
status=0
"$build/demo/relstack-demo" "$file" "$build/demo/librelstack-demo-plugin.so" || status=$?
if [ "$status" -lt 128 ]; then
	echo "relstack demo: the demo program exited with status $status instead of crashing" >&2
	exit 1
fi
echo "the demo program died of signal $((status - 128)); its records survived in the file"
echo
echo "== relstack info (the object table shows the plugin unloaded, then loaded again)"
"$relstack" info "$file"
echo
echo "== relstack report (symbolised; the crash is the last record)"
"$relstack" report "$file"
echo
echo "recorded: $file"
