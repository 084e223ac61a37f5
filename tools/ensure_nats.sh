#!/bin/sh
# The NATS cluster test (tests/test_nats_cluster.py) starts its own three nats-server
# processes on free loopback ports; install Debian's package when it is missing.
set -e
if command -v nats-server >/dev/null 2>&1 || [ -x /usr/sbin/nats-server ] || [ -x /usr/bin/nats-server ]; then
    exit 0
fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "The NATS cluster test needs nats-server: install the Debian package nats-server." >&2
    exit 1
fi
echo "installing nats-server (for the NATS cluster test)" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nats-server >/dev/null
