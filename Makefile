# Two commands for a fresh machine (Debian/Ubuntu with python3 >= 3.11):
#   make demo   set up .venv and replay the bundled sensor log (no broker needed)
#   make test   set up .venv (+ mosquitto, for the broker tests) and run the tests
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup demo test bench results clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/edgelearn replay

test: setup
	sh tools/ensure_mosquitto.sh
	$(PY) -m pytest -q

bench: setup
	$(PY) tools/bench_replay.py

results: setup
	$(PY) tools/results_paacds.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
