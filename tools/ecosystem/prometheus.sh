#!/bin/bash
# make test-ecosystem: Prometheus and promtool from Debian (bookworm: 2.42). The
# tests start their own prometheus on a free loopback port with a scrape config
# of their own; the packaged service, where systemd runs it, is left as it is.
set -euo pipefail
LOG_TAG=prometheus
. "$(dirname "$0")/lib.sh"
need_debs prometheus:prometheus promtool:prometheus
step "$(prometheus --version 2>&1 | head -n 1)"
