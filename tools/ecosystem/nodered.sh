#!/bin/bash
# make test-ecosystem: Node-RED and node-red-node-msgpack from npm, pinned, in
# $CACHE/node-red (~/.cache/edgelearn-ecosystem unless EDGELEARN_ECOSYSTEM_CACHE).
# Node-RED 5 needs Node.js >= 22.9; Debian bookworm's and this machine's Node.js is
# 20, so 4.1.8, the newest 4.x, is the pin. Idempotent: a finished install of the
# same pins (its marker, written last) is kept. Prints the install's folder.
set -euo pipefail
LOG_TAG=node-red
. "$(dirname "$0")/lib.sh"
PINS="node-red@4.1.8 node-red-node-msgpack@1.2.1"
DIR="$CACHE/node-red"

need_debs node:nodejs npm:npm
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 18 ] || die "Node-RED 4 needs Node.js >= 18; this machine has $(node --version)"
npm_pins "$DIR" $PINS
[ -f "$DIR/node_modules/node-red/red.js" ] || die "npm installed no node-red/red.js in $DIR"
echo "$DIR"
