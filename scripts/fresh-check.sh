#!/bin/sh
# Usage: scripts/fresh-check.sh [DIR]
#
# The README's two commands on a machine that has never built relstack:
# debootstraps Debian 12 (minbase) into DIR (default
# ${TMPDIR:-/var/tmp}/relstack-fresh, emptied first), installs there the
# toolchain a developer's Debian machine usually has (IMAGE_PACKAGES
# below), clones this checkout's HEAD into it, and runs `make demo` and
# then `make check` inside the chroot, with /proc, /sys (tracefs
# included) and /dev bound in and the chroot's root a mount point of its
# own.  Prints how long each step took and a summary at the end.  Every
# exit path stops what runs in the chroot and unmounts what it mounted;
# DIR itself is left for inspection (the next run empties it).
#
# Needs root and the Debian archive (MIRROR, SECURITY_MIRROR).  Not part
# of `make check`: it downloads a whole system.
set -eu

MIRROR=${MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
# What a developer's machine of this kind has before relstack: compilers,
# make, git, Python, the debuggers and the usual C tooling.
IMAGE_PACKAGES="ca-certificates gcc g++ make git python3 cmake gdb valgrind strace linux-perf
clang clang-format clang-tidy cppcheck clangd bear"

src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-${TMPDIR:-/var/tmp}/relstack-fresh}
case $dir in
/*) ;;
*) dir=$(pwd)/$dir ;;
esac

if [ "$(id -u)" -ne 0 ]; then
	echo "fresh-check: needs root (debootstrap, chroot, mounts)" >&2
	exit 2
fi

summary=""
timed() { # WHAT COMMAND... : runs it, prints and records how long it took
	what=$1
	shift
	echo "== fresh-check: $what ..."
	t=$(date +%s)
	st=0
	"$@" || st=$?
	t=$(($(date +%s) - t))
	echo "== fresh-check: $what: $t s (exit $st)"
	summary="$summary
  $what: $t s (exit $st)"
	return $st
}

mounted() { # the mount points under DIR, deepest first
	awk -v d="$dir" '$2 == d || index($2, d "/") == 1 { print $2 }' /proc/self/mounts | sort -r
}

cleanup() {
	st=$?
	trap - EXIT INT TERM HUP
	# what still runs in the chroot (a test the interrupted make left)
	for p in /proc/[0-9]*; do
		r=$(readlink "$p/root" 2>/dev/null) || continue
		case $r in
		"$dir" | "$dir"/*) kill -KILL "${p#/proc/}" 2>/dev/null || true ;;
		esac
	done
	for m in $(mounted); do
		umount "$m" 2>/dev/null || umount -l "$m" || echo "fresh-check: cannot unmount $m" >&2
	done
	if [ -n "$(mounted)" ]; then
		echo "fresh-check: still mounted under $dir:" $(mounted) >&2
		st=1
	fi
	echo "== fresh-check: summary (in $dir):$summary"
	exit $st
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

if ! command -v debootstrap >/dev/null; then
	timed "installing debootstrap on this machine" sh -c \
		'DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-remove debootstrap >/dev/null'
fi

# A previous run's system: nothing of it may still be mounted.
if [ -n "$(mounted)" ]; then
	echo "fresh-check: $dir has mounts ($(mounted | tr '\n' ' ')): not emptying it" >&2
	exit 1
fi
rm -rf "$dir"
mkdir -p "$dir"

timed "debootstrap $SUITE (minbase)" sh -c 'debootstrap --variant=minbase "$1" "$2" "$3" >"$2.debootstrap.log" 2>&1' \
	sh "$SUITE" "$dir" "$MIRROR" || {
	tail -20 "$dir.debootstrap.log" >&2
	exit 1
}

cat >"$dir/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb $SECURITY_MIRROR $SUITE-security main
EOF
# The machine's network as this one has it: its resolver, and the
# certificate authorities it adds to Debian's (a proxy's, say), which
# the ca-certificates package takes in when it is installed.
cp /etc/resolv.conf "$dir/etc/resolv.conf"
if [ -d /usr/local/share/ca-certificates ]; then
	mkdir -p "$dir/usr/local/share/ca-certificates"
	cp -r /usr/local/share/ca-certificates/. "$dir/usr/local/share/ca-certificates/"
fi
# services the packages bring (debuginfod) are not started in the chroot
printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
chmod +x "$dir/usr/sbin/policy-rc.d"

# The chroot's root is a mount point, as a machine's is (unshare -m
# makes / private, which fails on a directory that is not one).
mount --bind "$dir" "$dir"
mount --make-private "$dir"
mount -t proc proc "$dir/proc"
mount --rbind /sys "$dir/sys"
mount --make-rslave "$dir/sys"
mount --rbind /dev "$dir/dev"
mount --make-rslave "$dir/dev"
if [ ! -d "$dir/sys/kernel/tracing/instances" ]; then
	mount -t tracefs nodev "$dir/sys/kernel/tracing" ||
		echo "fresh-check: tracefs cannot be mounted: the kernel suites will say they are skipped" >&2
fi
mount -t tmpfs tmpfs "$dir/dev/shm" 2>/dev/null || true

# Node.js reads only its own certificate list unless told of the
# system's: the machine's setting goes in with the rest of its network.
node_ca=${NODE_EXTRA_CA_CERTS:+NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS}
inside() { # COMMAND (a shell command line) run as root in the chroot
	chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb $node_ca \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		/bin/sh -c "$1"
}

timed "the machine's usual toolchain ($(echo $IMAGE_PACKAGES | wc -w) packages and their dependencies)" \
	inside "export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq --no-install-recommends $(echo $IMAGE_PACKAGES) >/dev/null"

git clone -q --no-local "$src" "$dir/root/relstack"
echo "fresh-check: the checkout's HEAD, $(git -C "$src" log -1 --format='%h %s')"

timed "make demo" inside "cd /root/relstack && make demo"
timed "make check" inside "cd /root/relstack && make check"
