#!/bin/sh
# The clock tests run the gateway under libfaketime (a wall clock that steps while
# the process runs); install Debian's package when it is missing.
set -e
if command -v faketime >/dev/null 2>&1 && ls /usr/lib/*/faketime/libfaketime.so.1 >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "The clock tests need libfaketime: install the Debian package faketime." >&2
    exit 1
fi
echo "installing faketime (for the clock tests)" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq faketime >/dev/null
