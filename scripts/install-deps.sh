#!/bin/sh
# Usage: scripts/install-deps.sh [demo|check] [--print-missing]
#
# Installs the Debian packages relstack needs, then checks that what they
# provide is really there, and fails naming the package when it is not.
#   demo   what `make demo` builds and runs: the compiler, meson and ninja,
#          pkg-config and the libraries the relstack command links;
#   check  (the default) everything `make check` needs besides: the test
#          framework, the sanitizers' and libFuzzer's runtimes, the
#          independent tools the tests compare with (and, from the npm
#          registry, speedscope: scripts/install-test-tools.sh), the kernel patch
#          series' harness (kernel source, QEMU) and, last, the cross
#          builds' compilers and libraries (scripts/cross-check.sh --install).
# --print-missing prints the packages that would be installed, one per
# line, and changes nothing.
#
# The native build's packages are asked for as PKG:ARCH with ARCH the
# native architecture, and installed before any foreign one.  A package
# counts as present only when its native (or Architecture: all) copy is
# installed: once the cross builds have added i386 or arm64 copies,
# dpkg-query lists every architecture's copy of a library, and a foreign
# one must not hide a missing native one.
#
# An install never removes a package: when one would have to go, the
# script stops and names both.  Idempotent: apt-get runs only when
# something is missing.
set -eu

profile=check
print_missing=false
for a in "$@"; do
	case $a in
	demo | check) profile=$a ;;
	--print-missing) print_missing=true ;;
	*)
		echo "install-deps: unknown argument '$a': demo, check or --print-missing" >&2
		exit 2
		;;
	esac
done
cd "$(dirname "$0")/.."
native=$(dpkg --print-architecture)

# What each profile needs: PROFILE PACKAGE POST-CONDITION, where the
# post-condition is one of
#   cmd NAME     NAME is a command on PATH
#   pc MODULE    the native compiler links a program against MODULE, as
#                pkg-config describes it (the library of this architecture)
#   file PATH    PATH exists
#   cc FLAGS     clang links a program with FLAGS (the sanitizer runtimes)
#   so NAME      the dynamic linker finds the library NAME (no -dev package)
# "kernel" is the check profile's part for the linux/ harness, which
# builds and boots an x86-64 kernel.
table() {
	cat <<'EOF'
demo   gcc                 cmd gcc
demo   make                cmd make
demo   meson               cmd meson
demo   ninja-build         cmd ninja
demo   pkg-config          cmd pkg-config
demo   python3             cmd python3
demo   libelf-dev          pc libelf
demo   libdw-dev           pc libdw
demo   libdebuginfod-dev   pc libdebuginfod
demo   zlib1g-dev          pc zlib
demo   libtracefs-dev      pc libtracefs
demo   libtraceevent-dev   pc libtraceevent
demo   libtracecmd-dev     pc libtracecmd
check  libcmocka-dev       pc cmocka
check  libunwind8          so libunwind.so.8
check  clang               cmd clang
check  libclang-rt-14-dev  cc -fsanitize=fuzzer,address,undefined
check  llvm-14             cmd llvm-symbolizer-14
check  libc6-dbg           file /usr/lib/debug/.build-id
check  elfutils            cmd eu-stack
check  debuginfod          cmd debuginfod
check  binutils            cmd addr2line
check  gdb                 cmd gdb
check  valgrind            cmd valgrind
check  linux-perf          cmd perf
check  trace-cmd           cmd trace-cmd
check  protobuf-compiler   cmd protoc
check  chromium            cmd chromium
check  golang-go           cmd go
check  nodejs              cmd node
check  npm                 cmd npm
kernel linux-source-6.1    file /usr/src/linux-source-6.1.tar.xz
kernel qemu-system-x86     cmd qemu-system-x86_64
kernel bc                  cmd bc
kernel bison               cmd bison
kernel flex                cmd flex
kernel cpio                cmd cpio
kernel git                 cmd git
EOF
}

# The rows of the table this run needs.
rows() {
	table | while read -r prof pkg kind what; do
		case $profile/$prof in
		demo/demo | check/demo | check/check) ;;
		check/kernel) [ "$native" = amd64 ] || continue ;;
		*) continue ;;
		esac
		echo "$pkg $kind $what"
	done
}

# Whether the native (or Architecture: all) copy of PKG is installed.
# dpkg-query prints one line per installed architecture's copy.
native_installed() {
	dpkg-query -W -f='${Architecture} ${Status}\n' "$1" 2>/dev/null |
		grep -Eq "^($native|all) install ok installed\$"
}

# A tool already on PATH is not asked for again, whoever installed it
# (Node.js's own packages, a Python of the user's): what counts is that
# it runs.  A library counts only as the native Debian package.
missing() {
	rows | while read -r pkg kind what; do
		[ "$kind" = cmd ] && command -v "$what" >/dev/null 2>&1 && continue
		native_installed "$pkg" || echo "$pkg:$native"
	done
}

# The post-condition of one row; prints what is wrong when it fails.
holds() { # KIND WHAT...
	kind=$1
	shift
	case $kind in
	cmd) command -v "$1" >/dev/null 2>&1 || { echo "no command '$1' on PATH"; return 1; } ;;
	file) [ -e "$1" ] || { echo "no $1"; return 1; } ;;
	pc)
		flags=$(pkg-config --cflags --libs "$1" 2>&1) || { echo "pkg-config: $flags"; return 1; }
		# shellcheck disable=SC2086
		out=$(printf 'int main(void) { return 0; }\n' |
			${CC:-cc} -x c - $flags -o "$tmp/a.out" 2>&1) || {
			echo "the native compiler cannot link it: $(echo "$out" | grep -m1 -E 'error|cannot|wrong' || echo "$out" | head -1)"
			return 1
		}
		;;
	so)
		printf '#include <dlfcn.h>\nint main(void) { return !dlopen("%s", RTLD_NOW); }\n' "$1" |
			${CC:-cc} -x c - -o "$tmp/so" -ldl 2>/dev/null && "$tmp/so" || { echo "no $1 for the native programs"; return 1; }
		;;
	cc)
		out=$(printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' |
			clang -x c - "$@" -o "$tmp/a.out" 2>&1) || {
			echo "clang $* cannot link: $(echo "$out" | grep -m1 -E 'error|cannot' || echo "$out" | head -1)"
			return 1
		}
		;;
	esac
}

# Every row's post-condition; fails naming each package whose does not hold.
check_all() {
	bad=0
	rows >"$tmp/rows"
	while read -r pkg kind what; do
		# shellcheck disable=SC2086
		if ! why=$(holds "$kind" $what); then
			echo "install-deps: package $pkg is installed but $why" >&2
			bad=1
		fi
	done <"$tmp/rows"
	return $bad
}

list=$(missing)
if $print_missing; then
	[ -z "$list" ] || echo "$list"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ -n "$list" ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "install-deps: missing Debian packages for '$profile':" $list "; run as root or install them" >&2
		exit 1
	fi
	echo "install-deps: $profile: installing $(echo "$list" | wc -l) packages:" $list
	export DEBIAN_FRONTEND=noninteractive
	# an index that fails (a mirror in sync) costs only what it lists;
	# the simulation below says what cannot be installed
	apt-get update -qq || echo "install-deps: apt-get update failed for some index (above); going on with what apt has" >&2
	# shellcheck disable=SC2086
	sim=$(apt-get install -s --no-install-recommends $list 2>&1) || {
		echo "install-deps: apt-get cannot install them:" >&2
		echo "$sim" | grep -E '^E:|^ ' >&2
		exit 1
	}
	removed=$(echo "$sim" | sed -n 's/^Remv \([^ ]*\).*/\1/p' | tr '\n' ' ')
	if [ -n "$removed" ]; then
		# name the packages that ask for it, one simulation each
		for p in $list; do
			r=$(apt-get install -s --no-install-recommends "$p" 2>/dev/null | sed -n 's/^Remv \([^ ]*\).*/\1/p' | tr '\n' ' ')
			[ -z "$r" ] || echo "install-deps: installing $p would remove the installed packages: $r" >&2
		done
		echo "install-deps: nothing installed: an install step never removes a package; remove them by hand if you accept that" >&2
		exit 1
	fi
	echo "$sim" | grep -c '^Inst' | sed 's/^/install-deps: apt-get installs /; s/$/ packages in all (with their dependencies)/'
	# shellcheck disable=SC2086
	apt-get install -y -q --no-remove --no-install-recommends $list >"$tmp/apt.log" 2>&1 || {
		tail -20 "$tmp/apt.log" >&2
		echo "install-deps: apt-get install failed" >&2
		exit 1
	}
fi

check_all || {
	echo "install-deps: $profile: the packages above do not provide what relstack needs" >&2
	exit 1
}

# The tools the tests take from the npm registry (speedscope's app), then
# the cross builds' packages, after every native one.
if [ "$profile" = check ]; then
	./scripts/install-test-tools.sh >&2 || {
		echo "install-deps: the npm test tools (scripts/install-test-tools.sh) cannot be installed" >&2
		exit 1
	}
	for arch in i386 aarch64; do
		./scripts/cross-check.sh --install "$arch" || [ $? -eq 77 ]
	done
fi
exit 0
