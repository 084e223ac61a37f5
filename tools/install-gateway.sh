#!/bin/sh
# Install the edgelearn gateway as a systemd service, in one command: what the
# README's "Raspberry Pi" section does step by step (venv, package, configuration,
# check, warm-up, unit, enable and start). Run as root, from a clone of the
# repository (or a copy of it):
#
#   sudo sh tools/install-gateway.sh                      # the package from this clone
#   sudo sh tools/install-gateway.sh --wheel dist/edgelearn-0.1.0-py3-none-any.whl
#   sudo sh tools/install-gateway.sh --config my-gateway.toml
#
# Options:
#   --wheel FILE     install edgelearn from this wheel instead of from the clone
#   --config FILE    install FILE as /etc/edgelearn/gateway.toml (a different one
#                    already there is kept as gateway.toml.bak); without it an existing
#                    configuration is kept, and a missing one is written from the
#                    documented defaults (`edgelearn config --print-default`)
#   --python PATH    the Python to make the venv with (default python3; >= 3.11)
#   --no-start       install and enable, but do not start or restart the service
#
# Idempotent: run again, it changes nothing that is already in place, and restarts
# the service only when the package, the configuration or the unit changed.
# Refuses, before changing anything, on a system the gateway does not support:
# 32-bit ARM (armv7l/armv6l: no numba/llvmlite wheels exist for it), a machine
# other than x86_64 or aarch64, a Python older than 3.11, no systemd.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
PREFIX=/opt/edgelearn
VENV=$PREFIX/venv
ETC=/etc/edgelearn
CONFIG=$ETC/gateway.toml
NUMBA_CACHE=/var/cache/edgelearn/numba
UNIT=edgelearn-gateway.service
UNIT_FILE=/etc/systemd/system/$UNIT
MIN_PYTHON=3.11

say() { echo "install-gateway: $*"; }
refuse() { echo "install-gateway: refused: $*" >&2; exit 3; }
die() { echo "install-gateway: FAILED: $*" >&2; exit 1; }

wheel=""; config_in=""; python=python3; start=yes
while [ $# -gt 0 ]; do
    case $1 in
        --wheel) [ $# -ge 2 ] || die "--wheel needs a file"; wheel=$2; shift 2 ;;
        --config) [ $# -ge 2 ] || die "--config needs a file"; config_in=$2; shift 2 ;;
        --python) [ $# -ge 2 ] || die "--python needs a path"; python=$2; shift 2 ;;
        --no-start) start=no; shift ;;
        -h|--help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done

# -- what this system is: refuse before changing anything ---------------------------
machine=$(uname -m)
case $machine in
    x86_64|aarch64) ;;
    armv7l|armv6l|armv8l|arm*)
        refuse "this is 32-bit ARM ($machine). The gateway needs numba and llvmlite, which have no wheels for 32-bit ARM; install the 64-bit Raspberry Pi OS (aarch64) instead (README.md, \"Raspberry Pi\")." ;;
    *)
        refuse "machine '$machine' is not supported: the gateway is tested on x86_64 and aarch64 (64-bit Raspberry Pi OS)." ;;
esac
command -v "$python" >/dev/null 2>&1 || refuse "no Python at '$python': install python3 (>= $MIN_PYTHON) and python3-venv."
py_version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])') \
    || refuse "'$python' does not run"
"$python" -c "import sys; sys.exit(sys.version_info[:2] < tuple(map(int, '$MIN_PYTHON'.split('.'))))" \
    || refuse "Python $py_version at '$python' is too old: the gateway needs Python >= $MIN_PYTHON (Raspberry Pi OS bookworm has 3.11)."
[ "$(id -u)" = 0 ] || refuse "needs root (it writes $PREFIX, $ETC and the systemd unit): run it with sudo."
[ -d /run/systemd/system ] || refuse "systemd is not running here (no /run/systemd/system): the service needs it."
[ -f "$SRC/configs/$UNIT" ] || die "no $SRC/configs/$UNIT: run the script from a clone of the repository."
[ -z "$wheel" ] || [ -f "$wheel" ] || die "no wheel at '$wheel'"
[ -z "$config_in" ] || [ -f "$config_in" ] || die "no configuration at '$config_in'"
say "$machine, Python $py_version ($python)"

changed=no

# -- 1. the venv ---------------------------------------------------------------------
if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "'$python' has no venv module: install python3-venv"
    say "installing python3-venv"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null \
        || die "apt-get install python3-venv failed"
fi
if [ ! -x "$VENV/bin/python" ] || [ "$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')" != "$py_version" ]; then
    say "creating the venv $VENV"
    rm -rf "$VENV"
    mkdir -p "$PREFIX"
    "$python" -m venv "$VENV" || die "$python -m venv $VENV failed"
    changed=yes
else
    say "venv $VENV in place"
fi

# -- 2. the package ------------------------------------------------------------------
# pip builds a source tree in place, so a clone is built from a copy (the clone may
# be read-only); the fingerprint of what was installed makes a rerun a no-op.
if [ -n "$wheel" ]; then
    fingerprint=$(sha256sum "$wheel" | cut -d' ' -f1)
else
    fingerprint=$(cd "$SRC" && find edgelearn firmware_bridge pyproject.toml -type f \
        ! -name '*.pyc' ! -path '*/__pycache__/*' ! -name '*.nbi' ! -name '*.nbc' \
        | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
fi
stamp=$VENV/.edgelearn-installed
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$fingerprint" ] && [ -x "$VENV/bin/edgelearn" ]; then
    say "edgelearn already installed from the same source"
else
    if [ -n "$wheel" ]; then
        say "installing $(basename "$wheel") and its dependencies (wheels from PyPI)"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check --prefer-binary "$wheel" \
            || die "pip could not install $wheel"
    else
        build=$(mktemp -d)
        (cd "$SRC" && tar -cf - pyproject.toml README.md edgelearn firmware_bridge) | tar -C "$build" -xf -
        say "installing edgelearn from $SRC and its dependencies (wheels from PyPI)"
        "$VENV/bin/pip" install --quiet --disable-pip-version-check --prefer-binary "$build" \
            || { rm -rf "$build"; die "pip could not install edgelearn from $SRC"; }
        rm -rf "$build"
    fi
    echo "$fingerprint" >"$stamp"
    changed=yes
fi
EDGELEARN=$VENV/bin/edgelearn

# -- 3. the configuration ------------------------------------------------------------
install -d -m 0755 "$ETC"
if [ -n "$config_in" ]; then
    if [ -f "$CONFIG" ] && cmp -s "$config_in" "$CONFIG"; then
        say "$CONFIG unchanged"
    else
        [ -f "$CONFIG" ] && cp -p "$CONFIG" "$CONFIG.bak" && say "the previous configuration is $CONFIG.bak"
        install -m 0644 "$config_in" "$CONFIG"
        say "installed $config_in as $CONFIG"
        changed=yes
    fi
elif [ -f "$CONFIG" ]; then
    say "keeping the existing $CONFIG"
else
    "$EDGELEARN" config --print-default >"$CONFIG.new" || die "edgelearn config --print-default failed"
    chmod 0644 "$CONFIG.new"; mv "$CONFIG.new" "$CONFIG"
    say "wrote the default configuration to $CONFIG: set [gateway] id, [mqtt] host and the rest there"
    changed=yes
fi
"$EDGELEARN" gateway --config "$CONFIG" --check-config >/dev/null \
    || die "$CONFIG has errors (above); fix them and run this again"

# -- 4. the warm-up: the learner's kernels compiled into the cache the unit uses ------
say "warm-up (compiles the configured learner's kernels once; minutes on a Pi)"
install -d -m 0755 "$(dirname "$NUMBA_CACHE")"
NUMBA_CACHE_DIR=$NUMBA_CACHE "$EDGELEARN" warmup --config "$CONFIG" \
    || die "edgelearn warmup failed"

# -- 5. the unit ---------------------------------------------------------------------
if [ -f "$UNIT_FILE" ] && cmp -s "$SRC/configs/$UNIT" "$UNIT_FILE"; then
    say "$UNIT_FILE unchanged"
else
    install -m 0644 "$SRC/configs/$UNIT" "$UNIT_FILE"
    say "installed $UNIT_FILE"
    changed=yes
fi
systemctl daemon-reload
systemctl enable --quiet "$UNIT"

# -- 6. start, or restart what changed -----------------------------------------------
if [ "$start" = no ]; then
    say "enabled; not started (--no-start)"
elif [ "$changed" = yes ] && systemctl is-active --quiet "$UNIT"; then
    say "restarting $UNIT (something changed)"
    systemctl restart "$UNIT" || die "systemctl restart $UNIT failed: journalctl -u $UNIT"
else
    systemctl start "$UNIT" || die "systemctl start $UNIT failed: journalctl -u $UNIT"
fi
[ "$start" = no ] || say "$UNIT is $(systemctl is-active "$UNIT"); logs: journalctl -u $UNIT -f"
