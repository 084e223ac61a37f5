# Sourced by the installers of make test-ecosystem (bash). Set LOG_TAG first.
#   CACHE         ~/.cache/edgelearn-ecosystem, or EDGELEARN_ECOSYSTEM_CACHE
#   say, die, step, need_debs   as in tools/debian_root.sh (which this sources)
#   cached MARKER WANT          true when MARKER holds exactly WANT (a finished install
#                               of that pin); the installers write it last
#   npm_pins DIR PINS...        npm packages, pinned, into DIR/node_modules, unless the
#                               marker DIR/.edgelearn-complete says they are there
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
. "$HERE/tools/debian_root.sh"
CACHE="${EDGELEARN_ECOSYSTEM_CACHE:-$HOME/.cache/edgelearn-ecosystem}"
mkdir -p "$CACHE"
cached() { [ -e "$1" ] && [ "$(cat "$1")" = "$2" ]; }

npm_pins() {  # DIR PIN...
    local dir=$1; shift
    local pins="$*" marker="$dir/.edgelearn-complete"
    if cached "$marker" "$pins"; then
        step "cached: $pins in $dir"
        return 0
    fi
    step "npm install $pins"
    rm -rf "$dir"; mkdir -p "$dir"
    echo "{\"name\": \"edgelearn-ecosystem-$(basename "$dir")\", \"private\": true}" >"$dir/package.json"
    npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$@" >"$dir.npm.log" 2>&1 \
        || die "npm install $pins failed; see $dir.npm.log"
    echo "$pins" >"$marker"
    step "installed $pins"
}
