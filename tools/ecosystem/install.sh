#!/bin/bash
# make test-ecosystem's programs, each by its installer (cached under
# ~/.cache/edgelearn-ecosystem, or EDGELEARN_ECOSYSTEM_CACHE; a cached one costs a
# second): Prometheus and promtool (Debian), Node-RED with node-red-node-msgpack
# (npm), Debian's chromium with playwright-core (npm) for the HA screenshot, Home
# Assistant in its own venv (pip), and a Debian bookworm root for systemd-nspawn.
# Each prints its elapsed seconds; a failing one stops the run with its reason.
# Needs root (apt-get, debootstrap).
set -euo pipefail
here=$(dirname "$0")
start=$(date +%s)
for installer in prometheus nodered browser homeassistant nspawn_root; do
    t=$(date +%s)
    bash "$here/$installer.sh" >/dev/null
    echo "test-ecosystem: $installer ready in $(( $(date +%s) - t )) s" >&2
done
echo "test-ecosystem: programs ready in $(( $(date +%s) - start )) s" >&2
