#!/bin/sh
# The broker tests start their own mosquitto (and make TLS certificates with
# openssl); install Debian's packages when they are missing.
set -e
if command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ]; then
    if command -v mosquitto_pub >/dev/null 2>&1 && command -v openssl >/dev/null 2>&1; then
        exit 0
    fi
fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "The broker tests need mosquitto: install the Debian packages mosquitto, mosquitto-clients and openssl." >&2
    exit 1
fi
echo "installing mosquitto, mosquitto-clients and openssl (for the broker tests)" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mosquitto mosquitto-clients openssl >/dev/null
