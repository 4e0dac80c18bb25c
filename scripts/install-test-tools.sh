#!/bin/sh
# Usage: scripts/install-test-tools.sh [--print-dir]
#
# Installs the tools the tests read relstack's output with that come from
# the npm registry, not from Debian, into a directory of their own (never
# the tree, never the system):
#   speedscope       the speedscope web app and its file-format schema
#                    (tests/system/test_speedscope.py)
#   playwright-core  drives Debian's chromium through that app
# The directory is $RELSTACK_TEST_TOOLS if set, else
# ${XDG_CACHE_HOME:-~/.cache}/relstack/test-tools; --print-dir prints it
# and changes nothing (the tests find the tools there).
#
# The versions are pinned.  Idempotent: npm runs only when a package is
# missing or of another version.  Needs node and npm (Debian packages
# nodejs and npm).
set -eu

# playwright-core 1.61 is the last that runs on Debian 12's Node.js 18.
packages="speedscope@1.25.0 playwright-core@1.61.1"
dir=${RELSTACK_TEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/relstack/test-tools}

case ${1-} in
--print-dir)
	echo "$dir"
	exit 0
	;;
'') ;;
*)
	echo "install-test-tools: unknown argument '$1': --print-dir or none" >&2
	exit 2
	;;
esac

# The installed version of package NAME in $dir, or nothing.
installed() {
	sed -n 's/^  "version": "\([^"]*\)".*/\1/p' "$dir/node_modules/$1/package.json" 2>/dev/null
}

missing=
for p in $packages; do
	if [ "$(installed "${p%@*}")" = "${p##*@}" ]; then
		echo "install-test-tools: $p is installed in $dir"
	else
		missing="$missing $p"
	fi
done
[ -n "$missing" ] || exit 0
for cmd in node npm; do
	command -v $cmd >/dev/null 2>&1 || {
		echo "install-test-tools: no command '$cmd' on PATH: install the Debian packages nodejs and npm" >&2
		exit 1
	}
done
echo "install-test-tools: installing$missing into $dir"
mkdir -p "$dir"
# shellcheck disable=SC2086
npm install --prefix "$dir" --no-audit --no-fund --no-update-notifier $missing
for p in $missing; do
	[ "$(installed "${p%@*}")" = "${p##*@}" ] || {
		echo "install-test-tools: npm did not install $p in $dir" >&2
		exit 1
	}
done
