"""What every ``edgelearn`` command shares: the user-error type and its exit
status, the bundled demo log, ``--set KEY=VALUE`` parsing, argument types and
the progress bar."""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

#: The bundled demo: an office's occupancy sensors as a recorded gateway log.
DEMO_LOG = Path(__file__).resolve().parents[2] / "edgelearn" / "data" / "occupancy-demo.msgpack"

EXIT_USAGE = 2


class CliError(Exception):
    """A problem the user can fix; printed without a traceback, exit 2."""


def parse_setting(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` with VALUE a Python literal (number, True, None, 'str');
    anything that is not a literal is taken as a string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"--set takes KEY=VALUE (e.g. C=0.5). Got {text!r}.")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key, value


def kind_argument(text: str) -> str:
    """A learner kind (``--learner``): one the registry knows, or ``river:MODULE.CLASS``."""
    from edgelearn.learners.registry import resolve

    try:
        resolve(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).replace(
            "The 'kind' parameter of a learner configuration must be", "must be")) from None
    return text


def window_argument(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= 1_000_000:
        raise argparse.ArgumentTypeError(
            f"The '--window' option must be an int in [1, 1000000]. Got {text!r}.")
    return value


def seconds_argument(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, 3600]. Got {text!r}.")
    return value


class Progress:
    """A one-line progress bar on stderr, drawn only on a terminal and at
    most ten times a second."""

    def __init__(self, total: float, unit: str, enabled: bool):
        self.total = total
        self.unit = unit
        self.enabled = enabled and sys.stderr.isatty()
        self.start = time.perf_counter()
        self._last = 0.0

    def update(self, done: float, count: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self._last < 0.1:
            return
        self._last = now
        fraction = min(1.0, done / self.total) if self.total else 0.0
        bar = "#" * int(30 * fraction)
        rate = count / max(now - self.start, 1e-9)
        sys.stderr.write(f"\r[{bar:<30}] {fraction:6.1%} {count:>10,} {self.unit} {rate:>10,.0f}/s")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r" + " " * 80 + "\r")
            sys.stderr.flush()
