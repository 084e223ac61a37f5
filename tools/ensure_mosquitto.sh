#!/bin/sh
# The broker tests start their own mosquitto; install Debian's when it is missing.
set -e
if command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; then
    if command -v mosquitto_pub >/dev/null 2>&1; then exit 0; fi
fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "The broker tests need mosquitto: install the Debian packages mosquitto and mosquitto-clients." >&2
    exit 1
fi
echo "installing mosquitto and mosquitto-clients (for the broker tests)" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mosquitto mosquitto-clients >/dev/null
