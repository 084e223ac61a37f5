#!/bin/bash
# make test-ecosystem: a headless browser for the Home Assistant screenshot:
# Debian's chromium, driven by playwright-core from npm (pinned; it downloads no
# browser of its own: the test hands it /usr/bin/chromium), in $CACHE/browser.
set -euo pipefail
LOG_TAG=browser
. "$(dirname "$0")/lib.sh"
PINS="playwright-core@1.65.1"
DIR="$CACHE/browser"
MARKER="$DIR/.edgelearn-complete"
need_debs chromium:chromium node:nodejs npm:npm
if cached "$MARKER" "$PINS"; then
    step "cached: $PINS in $DIR"
else
    step "npm install $PINS"
    rm -rf "$DIR"; mkdir -p "$DIR"
    echo '{"name": "edgelearn-ecosystem-browser", "private": true}' >"$DIR/package.json"
    PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error $PINS \
        >"$CACHE/browser-npm.log" 2>&1 || die "npm install $PINS failed; see $CACHE/browser-npm.log"
    echo "$PINS" >"$MARKER"
fi
step "$(chromium --version 2>/dev/null)"
