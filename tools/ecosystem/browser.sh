#!/bin/bash
# make test-ecosystem: a headless browser for the Home Assistant screenshot:
# Debian's chromium, driven by playwright-core from npm (pinned; it downloads no
# browser of its own: the test hands it /usr/bin/chromium), in $CACHE/browser.
set -euo pipefail
LOG_TAG=browser
. "$(dirname "$0")/lib.sh"
PINS="playwright-core@1.65.1"
DIR="$CACHE/browser"
need_debs chromium:chromium node:nodejs npm:npm
# playwright-core downloads no browser of its own at install; the test hands it
# /usr/bin/chromium.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm_pins "$DIR" $PINS
step "$(chromium --version 2>/dev/null)"
