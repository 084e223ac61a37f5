"""make test-ecosystem: the gateway against the real programs an operator runs beside
it. Not part of `make test` (pyproject's norecursedirs leaves this folder out of the
default run); `make test-ecosystem` installs the programs and runs it."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))  # tests/brokers.py

from brokers import broker  # noqa: E402,F401  (a fixture: a mosquitto on a free port)
from harness import Timer  # noqa: E402


def pytest_terminal_summary(terminalreporter):
    if Timer.steps:
        terminalreporter.section("ecosystem steps (seconds)")
        for name, seconds in Timer.steps:
            terminalreporter.write_line(f"{seconds:8.1f}  {name}")
    if Timer.notes:
        terminalreporter.section("ecosystem clients and levels")
        for text in Timer.notes:
            terminalreporter.write_line(text)
