# Sourced by the installers of make test-ecosystem (bash). Set LOG_TAG first.
#   CACHE         ~/.cache/edgelearn-ecosystem, or EDGELEARN_ECOSYSTEM_CACHE
#   say, die, step, need_debs   as in tools/debian_root.sh (which this sources)
#   cached MARKER WANT          true when MARKER holds exactly WANT (a finished install
#                               of that pin); the installers write it last
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$HERE/tools/debian_root.sh"
CACHE="${EDGELEARN_ECOSYSTEM_CACHE:-$HOME/.cache/edgelearn-ecosystem}"
mkdir -p "$CACHE"
cached() { [ -e "$1" ] && [ "$(cat "$1")" = "$2" ]; }
