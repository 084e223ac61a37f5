#!/bin/bash
# make test-ecosystem: Home Assistant in a venv of its own, on the newest Python
# that pyenv or Debian offers here, with a pinned release, in $CACHE/homeassistant
# (~/.cache/edgelearn-ecosystem unless EDGELEARN_ECOSYSTEM_CACHE).
#
# The pin per Python minor version: the newest HA release that installs and runs on
# it. 2025.4.4 is the last release whose requirements allow Python 3.13.0 (2025.5
# asks for >= 3.13.2), and 3.13.0 is the newest Python pyenv has here (Debian
# bookworm has 3.11, which no HA of 2025 accepts).
#
# HA is installed with its own package_constraints.txt (shipped in its wheel: it
# pins every dependency of the core, so pip does not backtrack through hundreds
# of versions), then the requirements of every integration the tests make it load
# (its start-up set and api, config, onboarding, frontend, mqtt, with their
# dependencies), so the tests run it with --skip-pip and fetch nothing while they
# run. Idempotent: a finished install of the same pin (its marker, written last) is
# kept. Prints the venv's folder.
set -euo pipefail
LOG_TAG=homeassistant
. "$(dirname "$0")/lib.sh"
declare -A HA_PIN=([3.13]=2025.4.4)
DIR="$CACHE/homeassistant"
VENV="$DIR/venv"
MARKER="$DIR/.edgelearn-complete"

# -- the newest Python with a pin ------------------------------------------------------
candidates=()
if command -v pyenv >/dev/null 2>&1; then
    for p in "$(pyenv root)"/versions/*/bin/python3; do [ -x "$p" ] && candidates+=("$p"); done
fi
for p in /usr/bin/python3.* /usr/local/bin/python3.*; do
    [[ -x $p && $p =~ python3\.[0-9]+$ ]] && candidates+=("$p")
done
best=""; best_version=""
for p in "${candidates[@]}"; do
    v=$("$p" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null) || continue
    [ -n "${HA_PIN[${v%.*}]:-}" ] || continue
    if [ -z "$best" ] || [ "$(printf '%s\n%s\n' "$best_version" "$v" | sort -V | tail -n 1)" = "$v" ]; then
        best=$p; best_version=$v
    fi
done
[ -n "$best" ] || die "no Python with a Home Assistant pin (${!HA_PIN[*]}) here: pyenv install 3.13 (or a Debian with python3.13)"
HA_VERSION=${HA_PIN[${best_version%.*}]}
WANT="homeassistant==$HA_VERSION python $best_version"

if cached "$MARKER" "$WANT"; then
    step "cached: $WANT in $VENV"
    echo "$VENV"; exit 0
fi
step "installing $WANT into $VENV (a few minutes)"
rm -rf "$DIR"; mkdir -p "$DIR"
"$best" -m venv "$VENV" || die "$best -m venv failed"
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check --quiet)
"${PIP[@]}" install --upgrade pip >"$DIR/pip.log" 2>&1 || die "pip upgrade failed; see $DIR/pip.log"
"${PIP[@]}" download --no-deps -d "$DIR/wheel" "homeassistant==$HA_VERSION" >>"$DIR/pip.log" 2>&1 \
    || die "pip download homeassistant==$HA_VERSION failed; see $DIR/pip.log"
wheel=$(ls "$DIR"/wheel/homeassistant-*.whl)
"$VENV/bin/python" - "$wheel" "$DIR/constraints.txt" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, open(sys.argv[2], "wb") as out:
    out.write(z.read("homeassistant/package_constraints.txt"))
PY
step "pip install homeassistant==$HA_VERSION with its package constraints"
"${PIP[@]}" install -c "$DIR/constraints.txt" "$wheel" >>"$DIR/pip.log" 2>&1 \
    || die "pip install homeassistant==$HA_VERSION failed; see $DIR/pip.log"

# The requirements of what the tests load: HA's start-up integrations (bootstrap's
# own sets) and ours, with the integrations their manifests depend on.
"$VENV/bin/python" - >"$DIR/requirements.txt" <<'PY'
import json, pathlib
import homeassistant.bootstrap as b
import homeassistant.components as components
root = pathlib.Path(components.__file__).parent
wanted = set(b.CORE_INTEGRATIONS) | set(b.LOGGING_AND_HTTP_DEPS_INTEGRATIONS) \
    | set(b.FRONTEND_INTEGRATIONS) | set(b.DEFAULT_INTEGRATIONS) \
    | {"api", "config", "onboarding", "frontend", "mqtt", "http", "auth"}
todo, seen, requirements = list(wanted), set(), set()
while todo:
    domain = todo.pop()
    if domain in seen or not (root / domain / "manifest.json").exists():
        continue
    seen.add(domain)
    manifest = json.loads((root / domain / "manifest.json").read_text())
    requirements.update(manifest.get("requirements", []))
    todo.extend(manifest.get("dependencies", []))
print("\n".join(sorted(requirements)))
PY
step "pip install the requirements of $(wc -l <"$DIR/requirements.txt") packages its integrations name"
"${PIP[@]}" install -c "$DIR/constraints.txt" -r "$DIR/requirements.txt" >>"$DIR/pip.log" 2>&1 \
    || die "pip install of the integrations' requirements failed; see $DIR/pip.log"
"$VENV/bin/hass" --version >/dev/null || die "hass does not run"
echo "$HA_VERSION" >"$DIR/version"
echo "$WANT" >"$MARKER"
step "installed $WANT"
echo "$VENV"
