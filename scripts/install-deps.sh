#!/bin/sh
# Installs the Debian packages that building, testing, fuzzing and
# benchmarking relstack need.  Idempotent: packages already present are
# skipped, and apt-get runs only when something is missing.
set -eu

pkgs="meson ninja-build pkg-config gcc clang libclang-rt-14-dev llvm-14
libcmocka-dev libelf-dev libdw-dev libdebuginfod-dev debuginfod zlib1g-dev elfutils libunwind-dev
binutils gdb valgrind libc6-dbg python3 linux-perf
libtracefs-dev libtraceevent-dev libtracecmd-dev trace-cmd
protobuf-compiler chromium"
# The kernel patch series' harness (linux/): kernel source, build tools, QEMU.
if [ "$(dpkg --print-architecture)" = amd64 ]; then
	pkgs="$pkgs linux-source-6.1 qemu-system-x86 bc bison flex cpio"
fi

# The cross builds' compilers and libraries (make check-cross): an
# architecture whose packages cannot be installed is skipped there, saying why.
for arch in i386 aarch64; do
	"$(dirname "$0")/cross-check.sh" --install "$arch" || true
done

missing=""
for p in $pkgs; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing="$missing $p"
	fi
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "relstack: missing Debian packages:$missing; run as root or install them" >&2
	exit 1
fi
echo "relstack: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
