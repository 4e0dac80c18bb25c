#!/bin/sh
# Usage: scripts/cross-check.sh ARCH [NATIVE_BUILD]
#        scripts/cross-check.sh --install ARCH
#
# Builds relstack for ARCH (i386, aarch64) in build-ARCH with the meson
# cross file cross/ARCH.ini, runs the test suites that can run there, then
# the cross-file tests (tests/cross/test_cross_files.py): files written by
# the ARCH build decoded by the native build NATIVE_BUILD (default: build),
# and the other way round where the ARCH build has a decoder.  Each step
# prints how long it took (scripts/timed.sh).  --install only installs what
# ARCH needs.
#
# What ARCH needs comes from Debian: the compiler (i386: the native gcc's
# -m32 runtime, lib32gcc-12-dev and libc6-dev-i386, not gcc-multilib, which
# conflicts with every cross compiler), and the ARCH builds of the
# libraries (multiarch, dpkg --add-architecture).  Two sets of libraries:
#   capture  what the library, the agent and the tests of the capture side
#            link: without them there is no ARCH build, and the script
#            exits 77 (skipped) saying what could not be installed;
#   decode   the decoder's (libelf, libdw, libdebuginfod, ...): without
#            them the ARCH build is configured with -Ddecode=false, says
#            so, and its decoding tests do not exist.
# libtracecmd-dev is not Multi-Arch: same (installing another
# architecture's removes the native one, which the native build needs):
# it and its library are unpacked into build-ARCH-sysroot, never
# installed, and pkg-config finds them there.
#
# Every part runs; the failures are listed at the end.
# Exit status: 0 when the build and every test passed, 77 when ARCH cannot
# be built on this machine (or, i386, its programs cannot run on this
# kernel), anything else a failure.
set -eu

install_only=false
if [ "${1:-}" = --install ]; then
	install_only=true
	shift
fi
arch=${1:?usage: scripts/cross-check.sh [--install] ARCH [NATIVE_BUILD]}
native=${2:-build}
cd "$(dirname "$0")/.."
timed=./scripts/timed.sh

# The decoder's libraries, the same for every architecture; per
# architecture: the Debian architecture and its multiarch directory, the
# compiler's packages, the capture side's libraries and what the
# decoder's programs need to run beyond the decoder's libraries (both
# installed as PKG:DEBARCH), the suites the ARCH build cannot run and why.
decode_libs="libelf-dev libdw-dev libdebuginfod-dev zlib1g-dev libtracefs-dev libtraceevent-dev libunwind8"
case $arch in
i386)
	debarch=i386 multiarch=i386-linux-gnu
	tools="libc6-dev-i386 lib32gcc-12-dev lib32stdc++-12-dev"
	capture_libs="libcmocka-dev libc6-dbg"
	decode_run="" # the decoder's C++ runtime comes with lib32stdc++-12-dev
	# the kernel recorder records the running 64-bit kernel: an i386
	# build of it has no kernel of its own to record; the linux suite
	# builds and boots the x86-64 test kernel, the native build's work
	no_suites="kernel linux"
	no_suites_why="kernel: records the running 64-bit kernel; linux: the x86-64 test kernel, built and booted by the native build"
	;;
aarch64)
	debarch=arm64 multiarch=aarch64-linux-gnu
	# libstdc++ of the cross compiler: the decoder demangles with __cxa_demangle
	tools="gcc-aarch64-linux-gnu libstdc++-12-dev-arm64-cross qemu-user-static"
	capture_libs="libc6-dev libcmocka-dev"
	# the cross compiler's libstdc++ lies where qemu-aarch64 -L / does not look
	decode_run="libstdc++6"
	# the kernel recorder needs the host kernel's tracefs, which user-mode
	# emulation does not translate; the scripted suites run the build's
	# programs themselves, not through the cross file's exe_wrapper (and
	# need gdb, perf and ptrace of another process besides, which qemu-user
	# does not give): the cross-file tests run the aarch64 programs under
	# qemu instead
	no_suites="kernel linux scripted"
	no_suites_why="kernel: the host kernel's tracefs, which qemu-user does not translate; linux: the x86-64 test kernel, built and booted by the native build; scripted: Python scripts that run the aarch64 programs without the exe_wrapper, with gdb, perf and ptrace of other processes, which qemu-user does not give (the cross-file tests run the aarch64 programs under qemu)"
	;;
*)
	echo "cross-check: no cross build for '$arch' (cross/$arch.ini): i386 or aarch64" >&2
	exit 2
	;;
esac
build=build-$arch
sysroot=$(pwd)/build-$arch-sysroot
extract="libtracecmd-dev libtracecmd1"

skip() {
	echo "cross-check: $arch skipped: $*" >&2
	exit 77
}
[ -f "cross/$arch.ini" ] || skip "no meson cross file cross/$arch.ini"

installed() { # PKG... -> true if every one is installed
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || return 1
	done
}

foreign() { # PKG... -> PKG:DEBARCH...
	for p in "$@"; do printf '%s:%s ' "$p" "$debarch"; done
}

# Installs PKG... unless something is missing and cannot be installed
# without removing an installed package.  Prints why not on failure.
apt_install() {
	# shellcheck disable=SC2086,SC2048
	installed $* && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "not installed and not root: $*"
		return 1
	fi
	sim=$(apt-get install -s --no-install-recommends "$@" 2>&1) || {
		echo "$sim" | grep -E '^ |^E:' | head -5 | tr -s ' \n' ' '
		return 1
	}
	if echo "$sim" | grep -q '^Remv'; then
		echo "installing would remove: $(echo "$sim" | sed -n 's/^Remv \([^ ]*\).*/\1/p' | tr '\n' ' ')"
		return 1
	fi
	echo "cross-check: $arch: installing $* ($(echo "$sim" | grep -c '^Inst') packages with their dependencies)" >&2
	t=$(date +%s)
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-remove --no-install-recommends "$@" >/dev/null 2>&1 || {
		echo "apt-get install $* failed"
		return 1
	}
	echo "cross-check: $arch: installed in $(($(date +%s) - t)) s" >&2
}

# Fetches the package indexes of the native architecture and ARCH only.
# A Multi-Arch: same library must be the same version in every
# architecture, so a foreign index older than the native one (a mirror
# that served one file of a repository badly makes apt keep that whole
# repository's old indexes) leaves the foreign copy uninstallable; an
# index of a third architecture failing must not hold back this one.
refreshed=false
refresh() {
	$refreshed && return 1
	refreshed=true
	[ "$(id -u)" -eq 0 ] || return 1
	echo "cross-check: $arch: fetching the package indexes of $(dpkg --print-architecture) and $debarch again" >&2
	apt-get update -qq -o APT::Architectures::="$(dpkg --print-architecture)" -o APT::Architectures::="$debarch" >&2 ||
		echo "cross-check: $arch: apt-get update failed for some index (above); going on with what apt has" >&2
}

install_deps() {
	if ! dpkg --print-foreign-architectures | grep -qx "$debarch" && [ "$debarch" != "$(dpkg --print-architecture)" ]; then
		[ "$(id -u)" -eq 0 ] || skip "dpkg has no $debarch architecture and this is not root (dpkg --add-architecture $debarch)"
		dpkg --add-architecture "$debarch"
		refresh || true
	fi
	# shellcheck disable=SC2086
	why=$(apt_install $tools $(foreign $capture_libs)) || why=$(refresh && apt_install $tools $(foreign $capture_libs)) ||
		skip "$why"
	# shellcheck disable=SC2086
	if why=$(apt_install $(foreign $decode_libs $decode_run)) ||
		why=$(refresh && apt_install $(foreign $decode_libs $decode_run)); then
		decode=true
	else
		decode=false
		echo "cross-check: $arch: the decoder's libraries for $debarch cannot be installed" \
			"($why): building the capture side only (-Ddecode=false), no decoding tests in $build" >&2
	fi
	if $decode && [ ! -e "$sysroot/.done" ]; then
		rm -rf "$sysroot"
		mkdir -p "$sysroot/debs"
		# shellcheck disable=SC2046
		(cd "$sysroot/debs" && apt-get download $(foreign $extract) >/dev/null 2>&1) ||
			skip "apt-get download $(foreign $extract) failed"
		for d in "$sysroot"/debs/*.deb; do dpkg-deb -x "$d" "$sysroot"; done
		# their pkg-config files name /usr (in prefix, or in libdir and
		# includedir themselves): point them at the unpacked tree
		sed -i -E "s#^(prefix|libdir|includedir)=/usr(/|\$)#\1=$sysroot/usr\2#" "$sysroot"/usr/lib/*/pkgconfig/*.pc
		touch "$sysroot/.done"
	fi
}

decode=false
install_deps
$install_only && exit 0

export LD_LIBRARY_PATH="$sysroot/usr/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The benchmarks are built (bench/cross.sh runs bench_cross of both builds).
opts="-Dwerror=true -Ddecode=$decode -Dbenchmarks=true -Dpkg_config_path=$sysroot/usr/lib/$multiarch/pkgconfig"
if [ -e "$build/build.ninja" ]; then
	# shellcheck disable=SC2086
	meson configure "$build" $opts >/dev/null
else
	# shellcheck disable=SC2086
	$timed "$arch: configure $build" meson setup "$build" --cross-file "cross/$arch.ini" \
		--buildtype=debugoptimized $opts
fi
$timed "$arch: build" ninja -C "$build" -j2

# i386 programs run on the x86-64 kernel itself, which needs the kernel's
# IA32 emulation: a kernel built without it, or booted with
# ia32_emulation=0, refuses them (ENOEXEC).  Then the build above is all
# that can be checked here: the tests are skipped, saying why.
if [ "$arch" = i386 ]; then
	probe=$build/run-probe
	printf 'int main(void) { return 0; }\n' | gcc -m32 -x c - -o "$probe"
	if ! "$probe" 2>/dev/null; then
		echo "cross-check: i386: this kernel does not run i386 programs (no IA32 emulation:" \
			"CONFIG_IA32_EMULATION off or ia32_emulation=0): built, but its test suites and" \
			"cross-file tests cannot run here" >&2
		exit 77
	fi
fi

# Every part runs even when an earlier one failed (the cross-file tests
# do not need the ARCH suites to pass): the failures are listed at the end.
failed=""
suites=""
for s in $no_suites; do suites="$suites --no-suite $s"; done
echo "cross-check: $arch: not run: suites$suites (why: ${no_suites_why:-scripts/cross-check.sh})"
# shellcheck disable=SC2086
$timed "$arch: test suites" meson test -C "$build" --print-errorlogs --num-processes 2 $suites ||
	failed="$failed
  the $arch test suites (meson test -C $build$suites)"

# The cross-file tests need the native decoder.
if [ ! -x "$native/tools/relstack" ]; then
	failed="$failed
  the cross-file tests: $native/tools/relstack is missing (build the native build first: make all)"
else
	$timed "$arch: cross-file tests" python3 tests/cross/test_cross_files.py "$arch" "$native" "$build" ||
		failed="$failed
  the cross-file tests (python3 tests/cross/test_cross_files.py $arch $native $build)"
fi

if [ -n "$failed" ]; then
	echo "cross-check: $arch: failed:$failed" >&2
	exit 1
fi
echo "cross-check: $arch: every part passed"
