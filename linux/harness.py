#!/usr/bin/env python3
"""Build the patched kernel and the test module, boot them twice under QEMU
with KASLR, and unpack what the guest sent into OUT/boot1 and OUT/boot2.

    linux/harness.py BUILD_DIR OUT_DIR

BUILD_DIR keeps the kernel tree between runs, so a second run rebuilds only
what changed: the source is extracted once, the series is re-applied only
when it changed (git keeps the files the series does not touch as they
were), and the configuration is regenerated only when the fragment or the
series changed.

Exit status: 0 when every step of both boots reported ok, 77 (skipped) when
the packages cannot be installed or the machine is not x86-64, 1 otherwise.
Each step's time is printed and written to OUT/steps.  Boot 2 runs with
-icount, so its figures count instructions and are the same in every run;
boot 1 runs on the host's clock.
"""
import hashlib
import os
import platform
import shutil
import struct
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGES = ["linux-source-6.1", "qemu-system-x86", "bc", "bison", "flex",
            "libelf-dev", "cpio", "gcc", "make", "perl", "git"]
TARBALL = "/usr/src/linux-source-6.1.tar.xz"
# The guest's steps, in the order it runs them; each must report "ok".
GUEST_STEPS = ["mount", "kallsyms-stext", "instance", "load-1", "trigger-1",
               "load-1-task", "load-1-timer", "send-load1", "unload",
               "load-2", "trigger-2", "load-2-task", "load-2-timer",
               "load-2-stacktrace-option", "load-2-func-stack-trace", "stop",
               "figures", "send", "done"]
BOOTS = 2
BOOT_TIMEOUT = 300
GIT_ENV = {"GIT_AUTHOR_NAME": "relstack", "GIT_AUTHOR_EMAIL": "relstack@example.org",
           "GIT_COMMITTER_NAME": "relstack", "GIT_COMMITTER_EMAIL": "relstack@example.org",
           "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent",
           # no `git gc --auto` repacking the kernel tree in the background
           # while the kernel builds
           "GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "gc.auto", "GIT_CONFIG_VALUE_0": "0",
           "GIT_CONFIG_KEY_1": "maintenance.auto", "GIT_CONFIG_VALUE_1": "false"}

steps = []


class Skip(Exception):
    pass


class Failure(Exception):
    pass


def step(name):
    """Decorator-free timer: `with step("build"):`."""
    class Timer:
        def __enter__(self):
            self.t = time.monotonic()
            print(f"harness: {name} ...", flush=True)

        def __exit__(self, kind, value, tb):
            dt = time.monotonic() - self.t
            steps.append((name, dt, kind is None))
            print(f"harness: {name} {'done' if kind is None else 'FAILED'} in {dt:.1f} s",
                  flush=True)
            return False
    return Timer()


def run(cmd, log=None, **kw):
    env = dict(os.environ, **kw.pop("env", {}))
    if log:
        with open(log, "w") as f:
            r = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, **kw)
    else:
        r = subprocess.run(cmd, env=env, **kw)
    if r.returncode != 0:
        raise Failure(f"{' '.join(cmd)} exited with {r.returncode}"
                      + (f" (log: {log})" if log else ""))
    return r


def digest(paths):
    h = hashlib.sha256()
    for p in paths:
        h.update(os.path.basename(p).encode() + b"\0")
        with open(p, "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return default


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def native_arch():
    return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip()


def missing_packages():
    """The packages whose native (or Architecture: all) copy is not
    installed: dpkg-query lists every architecture's copy, and the cross
    builds' i386 and arm64 copies of libelf-dev must not count."""
    native = native_arch()
    missing = []
    for p in PACKAGES:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Architecture} ${Status}\\n", p],
                           capture_output=True, text=True)
        if not any(line in (f"{native} install ok installed", "all install ok installed")
                   for line in r.stdout.splitlines()):
            missing.append(p)
    return missing


def ensure_packages():
    if platform.machine() != "x86_64":
        raise Skip(f"the kernel test needs an x86-64 machine, this is {platform.machine()}")
    if shutil.which("dpkg-query") is None:
        raise Skip("the kernel test needs Debian packages (no dpkg-query here)")
    missing = missing_packages()
    if not missing:
        return
    if os.geteuid() != 0:
        raise Skip("packages missing and not root to install them: " + " ".join(missing))
    # never removes a package (--no-remove): it fails instead, and says so
    native = native_arch()
    r = subprocess.run(["apt-get", "install", "-y", "-q", "--no-remove", "--no-install-recommends"]
                       + [f"{p}:{native}" for p in missing], capture_output=True, text=True)
    if r.returncode != 0 or missing_packages():
        err = [line for line in (r.stdout + r.stderr).splitlines() if line.startswith("E:")]
        raise Skip("cannot install packages: " + " ".join(missing_packages()) + (": " + err[0] if err else ""))


def prepare_source(build, patches):
    """Extract once, then (re)apply the series only when it changed."""
    src = os.path.join(build, "src")
    series = digest(patches)
    st = os.stat(TARBALL)
    tarball = f"{TARBALL} {st.st_size} {st.st_mtime_ns}"
    tar_stamp = os.path.join(build, "source.stamp")
    if read(tar_stamp) != tarball or not os.path.isdir(os.path.join(src, ".git")):
        # A new Debian upload of the source: start again from it.
        for stale in ("series.stamp", "config.stamp"):
            if os.path.exists(os.path.join(build, stale)):
                os.unlink(os.path.join(build, stale))
        shutil.rmtree(src, ignore_errors=True)
        tmp = os.path.join(build, "extract.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        run(["tar", "-C", tmp, "-xf", TARBALL])
        (top,) = os.listdir(tmp)
        os.rename(os.path.join(tmp, top), src)
        os.rmdir(tmp)
        git = ["git", "-C", src, "-c", "core.excludesFile=/dev/null"]
        run(git + ["init", "-q"], env=GIT_ENV)
        run(git + ["add", "-f", "-A", "."], env=GIT_ENV, stdout=subprocess.DEVNULL)
        run(git + ["commit", "-q", "-m", "linux-source-6.1"], env=GIT_ENV)
        run(git + ["tag", "base"], env=GIT_ENV)
        write(tar_stamp, tarball)
    stamp = os.path.join(build, "series.stamp")
    if read(stamp) == series:
        return src, False
    git = ["git", "-C", src]
    subprocess.run(git + ["am", "--abort"], env=GIT_ENV, capture_output=True)
    run(git + ["reset", "-q", "--hard", "base"], env=GIT_ENV)
    run(git + ["am", "-q"] + patches, env=GIT_ENV, log=os.path.join(build, "am.log"))
    write(stamp, series)
    return src, True


def configure(build, src, obj, changed):
    fragment = os.path.join(HERE, "relstack.config")
    stamp = os.path.join(build, "config.stamp")
    key = digest([fragment]) + read(os.path.join(build, "series.stamp"))
    if not changed and read(stamp) == key and os.path.exists(os.path.join(obj, ".config")):
        return
    os.makedirs(obj, exist_ok=True)
    log = os.path.join(build, "config.log")
    run(["make", "-C", src, f"O={obj}", "tinyconfig"], log=log)
    run([os.path.join(src, "scripts/kconfig/merge_config.sh"), "-m", "-O", obj,
         os.path.join(obj, ".config"), fragment], log=log, cwd=src)
    run(["make", "-C", src, f"O={obj}", "olddefconfig"], log=log)
    config = read(os.path.join(obj, ".config"))
    for line in read(fragment).splitlines():
        if line.startswith("CONFIG_") and line not in config.splitlines():
            raise Failure(f"config fragment line not in the final .config: {line}")
        if line.startswith("# CONFIG_") and f"{line.split()[1]}=y" in config.splitlines():
            raise Failure(f"config fragment wants {line.split()[1]} off but it is on")
    write(stamp, key)


def sync_tree(src_dir, dst_dir):
    """Copy files whose content differs, so make sees only real changes."""
    os.makedirs(dst_dir, exist_ok=True)
    for name in os.listdir(src_dir):
        s, d = os.path.join(src_dir, name), os.path.join(dst_dir, name)
        with open(s, "rb") as f:
            data = f.read()
        if not os.path.exists(d) or open(d, "rb").read() != data:
            with open(d, "wb") as f:
                f.write(data)


def unpack(blob, dest):
    """The guest's archive: "RSTF" u32 name_len name u32 data_len data ..., "RSTE"."""
    i = blob.find(b"RSTF")
    names = []
    if i < 0:
        raise Failure("the guest sent no archive")
    while blob[i:i + 4] == b"RSTF":
        (n,) = struct.unpack_from("<I", blob, i + 4)
        name = blob[i + 8:i + 8 + n].decode()
        i += 8 + n
        (size,) = struct.unpack_from("<I", blob, i)
        i += 4
        data = blob[i:i + size]
        if len(data) != size or ".." in name.split("/") or name.startswith("/"):
            raise Failure(f"archive member {name!r} is cut short or has a bad name")
        i += size
        path = os.path.join(dest, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
        names.append(name)
    if blob[i:i + 4] != b"RSTE":
        raise Failure(f"archive ends without its end marker after {names[-1:]}")
    return names


def check_boot(dest, n):
    status = read(os.path.join(dest, "status"))
    reported = {}
    for line in status.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] == "relstack-init:":
            reported[parts[1]] = parts[2]
    problems = [f"boot {n}: step {s} " + ("not reported" if s not in reported else reported[s])
                for s in GUEST_STEPS if reported.get(s) != "ok"]
    for f in ["trace", "load1/trace", "load1/per_cpu/cpu0/trace_pipe_raw",
              "load1/module_table", "func/trace", "func/per_cpu/cpu0/trace_pipe_raw",
              "header_page", "header_event", "module_table",
              "figures", "stext", "per_cpu/cpu0/trace_pipe_raw",
              "events/ftrace/kernel_stack_rel/format"]:
        if not os.path.exists(os.path.join(dest, f)):
            problems.append(f"boot {n}: {f} not received")
    return problems


def boot(build, obj, initramfs, out, n, icount):
    dest = os.path.join(out, f"boot{n}")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    archive = os.path.join(build, f"boot{n}.bin")
    console = os.path.join(dest, "console.log")
    for p in (archive, console):
        if os.path.exists(p):
            os.unlink(p)
    cmd = ["qemu-system-x86_64", "-accel", "tcg"]
    if icount:
        # The guest's time stamp counter then counts instructions: the
        # figures do not depend on the load of the host.  It also makes
        # KASLR's choice the same in every run, hence only for one boot.
        cmd += ["-icount", "shift=0,sleep=off"]
    cmd += ["-m", "256M", "-smp", "1",
           "-no-reboot", "-nographic", "-monitor", "none",
           "-kernel", os.path.join(obj, "arch/x86/boot/bzImage"), "-initrd", initramfs,
           "-append", "console=ttyS0 kaslr tsc=reliable panic=-1 oops=panic",
           "-chardev", f"file,id=out,path={archive}",
           "-device", "isa-debugcon,iobase=0xe9,chardev=out",
           "-serial", f"file:{console}"]
    try:
        subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.STDOUT, timeout=BOOT_TIMEOUT, check=True)
    except subprocess.TimeoutExpired:
        raise Failure(f"boot {n}: the guest did not finish in {BOOT_TIMEOUT} s (see {console})")
    except subprocess.CalledProcessError as e:
        raise Failure(f"boot {n}: qemu exited with {e.returncode} (see {console})")
    with open(archive, "rb") as f:
        unpack(f.read(), dest)
    return dest


def checkpatch(src, patches):
    r = subprocess.run([os.path.join(src, "scripts/checkpatch.pl"), "--strict",
                        "--no-tree", "--terse"] + patches,
                       capture_output=True, text=True, cwd=src)
    # The remaining --strict CHECKs are about the layout of TRACE_EVENT()
    # and FTRACE_ENTRY() macros, which the tree's own events share.
    return [line for line in r.stdout.splitlines()
            if ": ERROR:" in line or ": WARNING:" in line]


def main():
    if len(sys.argv) != 3:
        print("usage: harness.py BUILD_DIR OUT_DIR", file=sys.stderr)
        return 2
    build, out = (os.path.abspath(a) for a in sys.argv[1:])
    os.makedirs(build, exist_ok=True)
    patches = sorted(os.path.join(HERE, "patches", p)
                     for p in os.listdir(os.path.join(HERE, "patches"))
                     if p.endswith(".patch"))
    obj = os.path.join(build, "obj")
    problems = []
    start = time.monotonic()
    shutil.rmtree(out, ignore_errors=True)
    try:
        with step("packages"):
            ensure_packages()
        with step("source"):
            src, changed = prepare_source(build, patches)
        with step("checkpatch"):
            bad = checkpatch(src, patches)
            problems += ["checkpatch: " + b for b in bad]
        with step("configure"):
            configure(build, src, obj, changed)
        with step("kernel build"):
            run(["make", "-C", src, f"O={obj}", "-j2", "bzImage", "modules"],
                log=os.path.join(build, "kernel-build.log"))
        with step("module build"):
            moddir = os.path.join(build, "module")
            sync_tree(os.path.join(HERE, "module"), moddir)
            run(["make", "-C", src, f"O={obj}", f"M={moddir}", "modules"],
                log=os.path.join(build, "module-build.log"))
        with step("initramfs"):
            root = os.path.join(build, "initramfs")
            shutil.rmtree(root, ignore_errors=True)
            for d in ("proc", "sys", "dev"):
                os.makedirs(os.path.join(root, d))
            run(["gcc", "-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
                 os.path.join(root, "init"), os.path.join(HERE, "init", "relstack-init.c")])
            shutil.copy(os.path.join(moddir, "relstack_test.ko"), root)
            initramfs = os.path.join(build, "initramfs.cpio")
            files = subprocess.run(["find", "."], cwd=root, capture_output=True,
                                   text=True, check=True).stdout
            with open(initramfs, "wb") as f:
                subprocess.run(["cpio", "-o", "-H", "newc", "--quiet"], cwd=root,
                               input=files.encode(), stdout=f, check=True)
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(os.path.join(out, "modules"))
        shutil.copy(os.path.join(obj, "System.map"), out)
        shutil.copy(os.path.join(obj, "vmlinux"), out)
        shutil.copy(os.path.join(moddir, "relstack_test.ko"), os.path.join(out, "modules"))
        stexts = {}
        for n in range(BOOTS, 0, -1):
            # Boot 1 again (at most twice) if KASLR picked boot 2's place.
            for attempt in range(3):
                with step(f"boot {n}" + (f" again ({attempt})" if attempt else "")):
                    dest = boot(build, obj, initramfs, out, n, icount=n == BOOTS)
                stexts[n] = read(os.path.join(dest, "stext")).strip()
                if n == BOOTS or stexts[n] != stexts[BOOTS]:
                    break
            problems += check_boot(dest, n)
        if len(set(stexts.values())) != BOOTS or "" in stexts.values():
            problems.append(f"KASLR did not move _stext between boots: {stexts}")
    except Skip as e:
        print(f"SKIP: {e}")
        return 77
    except Failure as e:
        problems.append(str(e))
    total = time.monotonic() - start
    lines = [f"{name}\t{dt:.1f}\t{'ok' if ok else 'failed'}" for name, dt, ok in steps]
    lines.append(f"total\t{total:.1f}")
    if os.path.isdir(out):
        write(os.path.join(out, "steps"), "\n".join(lines) + "\n")
        write(os.path.join(out, "problems"), "".join(p + "\n" for p in problems))
    print("harness: step times (s):")
    for line in lines:
        print("  " + line)
    figures = read(os.path.join(out, f"boot{BOOTS}", "figures"))
    if figures:
        print(f"harness: figures of boot {BOOTS} (guest TSC ticks = instructions "
              "under -icount; only the ratios mean anything):")
        print("".join("  " + line + "\n" for line in figures.splitlines()), end="")
    for p in problems:
        print("harness: FAILED: " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
