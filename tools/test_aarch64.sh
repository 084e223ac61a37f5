#!/bin/bash
# make test-aarch64: the package on 64-bit ARM (what a Raspberry Pi 4/5 runs),
# emulated on this machine with qemu-user.
#
#   1. a Debian bookworm arm64 root with python3 (debootstrap --foreign, its
#      packages unpacked on the host: tools/debian_root.sh), cached in $CACHE/root;
#   2. a venv in that root with aarch64 wheels from PyPI (numpy, numba,
#      llvmlite, msgpack, paho-mqtt, pytest, hypothesis), downloaded on the host
#      for the root's Python and glibc (cached in $CACHE/pypi-wheels) and
#      installed by the root's pip from there, offline;
#   3. edgelearn from a wheel built here, reinstalled only when its content
#      changed;
#   4. `edgelearn replay` (the demo) there and here: the result lines must be
#      equal; then the kernel/state/protocol/recorder/pipeline tests there.
#
# Every step that cannot be done fails the script with a message saying what
# is missing; nothing is skipped. Needs root (debootstrap, chroot, mounts).
#
# Cache: ~/.cache/edgelearn-aarch64 (EDGELEARN_AARCH64_CACHE overrides). A
# root or venv without its marker file (written last) is a half-built one from
# an interrupted run and is built again.
set -euo pipefail

HERE="$(cd "$(dirname "$0")/.." && pwd)"
LOG_TAG=test-aarch64
. "$HERE/tools/debian_root.sh"
CACHE="${EDGELEARN_AARCH64_CACHE:-$HOME/.cache/edgelearn-aarch64}"
ROOT="$CACHE/root"
VENV=/opt/edgelearn-venv                  # inside the root
VENV_MARKER="$ROOT$VENV/.edgelearn-venv-complete"
WHEEL_STAMP="$ROOT$VENV/.edgelearn-wheel-sha256"
HOST_PY="${PY:-$HERE/.venv/bin/python}"
# The runtime dependencies come from pyproject.toml (installed with the wheel);
# these are what the named tests need on top. (pytest-xdist with 2 workers was
# tried: 823 s for the cold emulated tests against 782 s in one process, at a
# similar load, and 158 s against 123 s warm.)
TEST_DEPS="pytest>=8 hypothesis>=6"
TESTS="tests/test_kernels.py tests/test_state.py tests/test_protocol.py tests/test_recorder.py tests/test_pipeline.py"

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot and mounts); run it as root or with sudo."
[ -x "$HOST_PY" ] || die "no host venv at $HOST_PY: run 'make setup' first."

# -- host tools ----------------------------------------------------------------
need_debs debootstrap:debootstrap /usr/bin/qemu-aarch64-static:qemu-user-static update-binfmts:binfmt-support

# -- binfmt: the kernel must hand aarch64 ELF files to qemu ----------------------
BINFMT=/proc/sys/fs/binfmt_misc
if [ ! -e "$BINFMT/status" ]; then
    mount -t binfmt_misc binfmt_misc "$BINFMT" \
        || die "cannot mount binfmt_misc on $BINFMT (a container without that privilege cannot run foreign binaries)"
fi
if ! grep -qx enabled "$BINFMT/qemu-aarch64" 2>/dev/null; then
    step "registering qemu-aarch64 with binfmt_misc"
    update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
    if ! grep -qx enabled "$BINFMT/qemu-aarch64" 2>/dev/null; then
        # The same entry Debian's qemu-user-static ships, written by hand;
        # flag F keeps the interpreter open so it works inside the chroot.
        echo ':qemu-aarch64:M::\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:/usr/bin/qemu-aarch64-static:F' \
            > "$BINFMT/register" 2>/dev/null || true
    fi
    grep -qx enabled "$BINFMT/qemu-aarch64" 2>/dev/null \
        || die "qemu-aarch64 is not registered in $BINFMT and registering it failed"
fi

# -- mounts, undone on every exit ---------------------------------------------
trap_cleanup

in_root() {  # run a command in the arm64 root (which never reaches the network)
    chroot "$ROOT" /usr/bin/env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin \
        LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 NUMBA_CACHE_DIR=/var/cache/edgelearn-numba "$@"
}

# Byte-compiles Python files of the root with the host's Python when both have the
# same bytecode (importlib's MAGIC_NUMBER, one per minor version): what Debian's
# postinst and pip would do under emulation takes 6 to 10 s here, and
# without it every emulated start compiles what it imports again (numba, numpy
# and the stdlib: 8 to 10 s instead of 5 to 6 s for `import numba, numpy` under
# qemu, measured once on 2026-11-26).
# The .pyc name the root's paths; a Python whose magic differs ignores them.
compile_in_root() {  # PATH-IN-ROOT ...
    local dirs=() d
    if [ "$root_magic" != "$host_magic" ]; then
        say "not byte-compiling ${*}: the host's Python writes other bytecode ($host_magic, the root's $root_magic)"
        return 0
    fi
    for d in "$@"; do dirs+=("$ROOT$d"); done
    "$HOST_PY" -m compileall -q -j 0 -s "$ROOT" -p / "${dirs[@]}" >"$CACHE/compileall.log" 2>&1 \
        || die "byte-compiling ${*} with the host's Python failed; see $CACHE/compileall.log"
}

# One run at a time per cache; with the lock held, mounts left in the root are
# from a run that was killed before its clean-up: undo them.
lock_cache "$CACHE"
unmount_stale "$ROOT"

# -- 1. the root ----------------------------------------------------------------
build_root "$ROOT" arm64 python3 "$CACHE"

mount_into "$ROOT"
[ "$(in_root uname -m)" = aarch64 ] || die "the cached root does not run as aarch64"
# The root's Python version, glibc version and bytecode magic: the wheels are
# chosen for the first two, compile_in_root checks the third.
read -r py_ver glibc_ver root_magic < <(in_root python3 -c \
    'import importlib.util, os, sys; print("%d.%d" % sys.version_info[:2], os.confstr("CS_GNU_LIBC_VERSION").split()[1], importlib.util.MAGIC_NUMBER.hex())') \
    || die "python3 does not run in the arm64 root"
host_magic=$("$HOST_PY" -c 'import importlib.util; print(importlib.util.MAGIC_NUMBER.hex())')

# -- 2. the venv: PyPI's aarch64 wheels, never source builds ---------------------
# The requirement list is part of the marker: a changed list rebuilds the venv.
runtime_deps=$("$HOST_PY" - "$HERE/pyproject.toml" <<'EOF'
import sys, tomllib
with open(sys.argv[1], "rb") as f:
    print(" ".join(tomllib.load(f)["project"]["dependencies"]))
EOF
)
venv_want="$runtime_deps $TEST_DEPS"
if [ ! -e "$VENV_MARKER" ] || [ "$(cat "$VENV_MARKER")" != "$venv_want" ]; then
    # Every manylinux tag the root's glibc accepts (PEP 600: manylinux_2_17 and up
    # to its own version; manylinux2014 is manylinux_2_17).
    platforms=(--platform manylinux2014_aarch64)
    for ((minor = 17; minor <= ${glibc_ver#2.}; minor++)); do
        platforms+=(--platform "manylinux_2_${minor}_aarch64")
    done
    step "downloading aarch64 wheels for CPython $py_ver, glibc $glibc_ver on the host: pip $venv_want"
    mkdir -p "$CACHE/pypi-wheels"
    "$HOST_PY" -m pip download --quiet --disable-pip-version-check --only-binary=:all: \
        "${platforms[@]}" --python-version "$py_ver" --implementation cp --abi "cp${py_ver/./}" \
        -d "$CACHE/pypi-wheels" pip $venv_want >"$CACHE/pip-download.log" 2>&1 \
        || die "pip could not download aarch64 wheels (CPython $py_ver, glibc $glibc_ver) of: pip $venv_want; see $CACHE/pip-download.log"
    step "venv with those wheels, installed by the root's pip (no index, no network)"
    rm -rf "$ROOT$VENV" "$ROOT/tmp/edgelearn-pypi-wheels"
    # --without-pip: Debian's python3 has no ensurepip (python3-venv); the pip
    # wheel downloaded above installs itself.
    in_root python3 -m venv --without-pip "$VENV" || die "python3 -m venv --without-pip failed in the arm64 root"
    cp -r "$CACHE/pypi-wheels" "$ROOT/tmp/edgelearn-pypi-wheels"
    pip_wheel=$(cd "$ROOT/tmp/edgelearn-pypi-wheels" && ls -v pip-*.whl | tail -n 1)
    in_root "$VENV/bin/python" "/tmp/edgelearn-pypi-wheels/$pip_wheel/pip" install --quiet --disable-pip-version-check \
        --no-index --find-links /tmp/edgelearn-pypi-wheels --only-binary=:all: --no-compile pip $venv_want \
        || die "the root's pip could not install the downloaded aarch64 wheels ($CACHE/pypi-wheels) of: pip $venv_want"
    rm -rf "$ROOT/tmp/edgelearn-pypi-wheels"
    step "byte-compiling the root's stdlib and venv on the host"
    compile_in_root "/usr/lib/python$py_ver" "$VENV"
    echo "$venv_want" >"$VENV_MARKER"
else
    step "venv cached"
fi

# -- 3. edgelearn from a wheel built here ------------------------------------------
WHEELS="$CACHE/wheel"
rm -rf "$WHEELS"; mkdir -p "$WHEELS"
step "building the edgelearn wheel on the host"
"$HOST_PY" -m pip wheel --quiet --no-deps -w "$WHEELS" "$HERE" >"$CACHE/wheel.log" 2>&1 \
    || die "pip wheel failed; see $CACHE/wheel.log"
wheel=$(ls "$WHEELS"/edgelearn-*.whl 2>/dev/null | head -n 1)
[ -n "$wheel" ] || die "pip wheel wrote no edgelearn-*.whl into $WHEELS"
# The content, not the zip (whose entries carry file times).
wheel_sha=$("$HOST_PY" - "$wheel" <<'EOF'
import hashlib, sys, zipfile
h = hashlib.sha256()
with zipfile.ZipFile(sys.argv[1]) as z:
    # Not METADATA (it holds the README) nor RECORD (its hashes): a README-only
    # change must not reinstall the package and wipe the arm64 Numba cache.
    for name in sorted(n for n in z.namelist()
                       if not n.endswith((".dist-info/METADATA", ".dist-info/RECORD"))):
        h.update(name.encode() + b"\0" + z.read(name))
print(h.hexdigest())
EOF
)
if [ ! -e "$WHEEL_STAMP" ] || [ "$(cat "$WHEEL_STAMP")" != "$wheel_sha" ]; then
    step "installing $(basename "$wheel") in the arm64 venv"
    rm -f "$WHEEL_STAMP"
    mkdir -p "$ROOT/tmp/edgelearn-wheel"
    rm -f "$ROOT"/tmp/edgelearn-wheel/*.whl
    cp "$wheel" "$ROOT/tmp/edgelearn-wheel/"
    in_root "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-index --no-deps --force-reinstall \
        --no-compile "/tmp/edgelearn-wheel/$(basename "$wheel")" || die "pip could not install the edgelearn wheel in the arm64 venv"
    compile_in_root "$VENV"
    # A new package may change the kernels: start their cache afresh.
    rm -rf "$ROOT/var/cache/edgelearn-numba"
    echo "$wheel_sha" >"$WHEEL_STAMP"
else
    step "edgelearn wheel unchanged (sha256 of its content $wheel_sha)"
fi
in_root "$VENV/bin/python" -c "import platform, numba, edgelearn; assert platform.machine() == 'aarch64', platform.machine()" \
    || die "edgelearn does not import in the arm64 venv"

# -- 4a. the demo, here and there ------------------------------------------------------
result_line() { grep -E '^stream ' || true; }
step "demo on the host (x86-64)"
host_out=$("$HERE/.venv/bin/edgelearn" replay) || die "'edgelearn replay' failed on the host"
host_line=$(echo "$host_out" | result_line)
[ -n "$host_line" ] || die "the host demo printed no 'stream ...' result line: $host_out"
step "demo in the arm64 root (emulated; about a minute with a cold numba cache)"
arm_out=$(in_root "$VENV/bin/edgelearn" replay) || die "'edgelearn replay' failed in the arm64 root"
arm_line=$(echo "$arm_out" | result_line)
echo "x86-64:  $host_line"
echo "aarch64: $arm_line"
[ "$host_line" = "$arm_line" ] || die "the demo's result lines differ between x86-64 and aarch64"
echo "demo result lines are equal"

# -- 4b. the named tests ------------------------------------------------------------------
# The tests (not the package: that is the installed wheel) go into a fresh folder.
step "tests in the arm64 root: $TESTS"
rm -rf "$ROOT/opt/edgelearn-tests"
mkdir -p "$ROOT/opt/edgelearn-tests"
# configs/: tests/test_protocol.py checks the shipped gateway.toml against the code.
cp -r "$HERE/tests" "$HERE/configs" "$ROOT/opt/edgelearn-tests/"
in_root /bin/sh -c "cd /opt/edgelearn-tests && exec $VENV/bin/python -m pytest -q -p no:cacheprovider $TESTS" \
    || die "tests failed in the arm64 root"
step "passed"
