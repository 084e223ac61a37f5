#!/bin/bash
# make test-ecosystem: a Debian bookworm root (this machine's architecture) with
# systemd, for booting with `systemd-nspawn --boot --register=no --keep-unit`: the
# systemd tests and the install script's test run the gateway's unit there under a
# real systemd 252. Cached in $CACHE/nspawn-root (EDGELEARN_ECOSYSTEM_CACHE, else
# ~/.cache/edgelearn-ecosystem); a root without its marker (written last) is rebuilt.
# Needs root (debootstrap, systemd-nspawn). Prints the root's path on stdout.
set -euo pipefail
LOG_TAG=nspawn-root
HERE="$(cd "$(dirname "$0")/../.." && pwd)"
. "$HERE/tools/debian_root.sh"
CACHE="${EDGELEARN_ECOSYSTEM_CACHE:-$HOME/.cache/edgelearn-ecosystem}"
ROOT="$CACHE/nspawn-root"

[ "$(id -u)" = 0 ] || die "needs root (debootstrap and systemd-nspawn); run it as root or with sudo."
need_debs debootstrap:debootstrap systemd-nspawn:systemd-container systemd-analyze:systemd
mkdir -p "$CACHE"
exec 8>"$CACHE/nspawn-root.lock"
flock -n 8 || die "another run holds $CACHE/nspawn-root.lock"
# python3-venv and ca-certificates: the install script makes a venv and pip reaches
# PyPI from there; dbus: systemctl inside; iproute2 and procps: a look around.
build_root "$ROOT" "$(dpkg --print-architecture)" \
    systemd,systemd-sysv,dbus,python3,python3-venv,ca-certificates,iproute2,procps \
    "$CACHE/nspawn-logs"
copy_host_ca "$ROOT"
echo "$ROOT"
