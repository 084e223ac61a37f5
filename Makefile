# Two commands for a fresh machine (Debian/Ubuntu with python3 >= 3.11):
#   make demo   set up .venv and replay the bundled sensor log (no broker needed)
#   make test   set up .venv (+ mosquitto and nats-server, for the broker tests) and run the tests
#   make test-aarch64   the package on an emulated Debian bookworm arm64 root (as root;
#               cached under ~/.cache/edgelearn-aarch64; see tools/test_aarch64.sh)
#   make test-ecosystem the gateway against Home Assistant, Prometheus, Node-RED and
#               systemd (as root; installs them, cached under ~/.cache/edgelearn-ecosystem;
#               see tests/ecosystem/ and tools/ecosystem/)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

RESULTS := paacds pafe synthesis kelm ensemble label-budget drift nab faults regression fleet
BENCHES := replay kelm gateway memory log-replay startup

# (bench-* and results-* are not .PHONY: make skips pattern rules for phony targets.)
.PHONY: setup demo test test-aarch64 test-ecosystem bench results leaderboard clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

# The picture and its series go to demo-out/ (ignored by git); the command prints where.
demo: setup
	$(VENV)/bin/edgelearn replay --plot demo-out/occupancy-demo.png --curve demo-out/occupancy-demo.csv

test: setup
	sh tools/ensure_mosquitto.sh
	sh tools/ensure_nats.sh
	sh tools/ensure_faketime.sh
	$(PY) -m pytest -q

test-aarch64: setup
	bash tools/test_aarch64.sh

test-ecosystem: setup
	sh tools/ensure_mosquitto.sh
	bash tools/ecosystem/install.sh
	$(PY) -m pytest -q --durations=0 tests/ecosystem

# Each writes its page under docs/ (the page names its command and machine).
bench: $(BENCHES:%=bench-%)

bench-gateway: setup
	sh tools/ensure_mosquitto.sh
	$(PY) tools/bench_gateway.py

bench-log-replay: setup
	$(PY) tools/bench_log_replay.py

bench-memory: setup
	sh tools/ensure_mosquitto.sh
	$(PY) tools/bench_memory.py

# This checkout against BASE (a commit), alternated in one run: run it before
# submitting a change to a hot path. BENCH_COMPARE_FLAGS: e.g. --strict --rounds 5.
bench-compare: setup
	$(if $(BASE),,$(error make bench-compare needs BASE=<commit>, e.g. make bench-compare BASE=main))
	$(PY) tools/bench_compare.py --base $(BASE) $(BENCH_COMPARE_FLAGS)

bench-%: setup
	$(PY) tools/bench_$*.py

# The papers' protocols: minutes each, results-ensemble about an hour on 2 cores.
# results-nab (NAB v1.1, docs/results-nab.md) and results-faults (docs/results-anomaly-faults.md): minutes each.
results: $(RESULTS:%=results-%)

results-ensemble: setup
	$(PY) tools/results_ensemble.py --jobs 2

results-drift: setup
	$(PY) tools/results_drift.py --jobs 2

results-label-budget: setup
	$(PY) tools/results_label_budget.py --jobs 2

results-regression: setup
	$(PY) tools/results_regression.py --tune --jobs 2

# The fleet (issue 29): one process (seconds), then real gateway processes over
# mosquitto and a NATS cluster (about 10 min on 2 busy cores).
results-fleet: setup
	sh tools/ensure_mosquitto.sh
	sh tools/ensure_nats.sh
	$(PY) tools/results_fleet.py
	$(PY) tools/results_fleet_gateways.py

results-%: setup
	$(PY) tools/results_$*.py

# docs/leaderboard.md from the results pages' summaries (docs/data/*.json); runs no protocol.
leaderboard: setup
	$(PY) tools/leaderboard.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
