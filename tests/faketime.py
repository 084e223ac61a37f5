"""A wall clock that steps while a process runs: libfaketime (Debian's ``faketime``).

:class:`SteppingClock` writes an offset (``"-10y"``, ``"+0"``) into a file that
libfaketime re-reads; :meth:`SteppingClock.env` is the environment that preloads it
into a child process. Only the wall clock is faked (``FAKETIME_DONT_FAKE_MONOTONIC``):
that is what an NTP step does, which never moves ``CLOCK_MONOTONIC``.

libfaketime 0.9.10 (Debian bookworm) turns every ``clock_nanosleep`` on the monotonic
clock into EINVAL when the monotonic clock is not faked, and Python's ``time.sleep``
is one; so the child also gets a ``sitecustomize`` that sleeps with ``select`` (which
libfaketime leaves alone). Nothing else of the child is changed.

A missing libfaketime fails the test naming the package (``sh tools/ensure_faketime.sh``
installs it); it never skips.
"""

from __future__ import annotations

import glob
import pathlib

import pytest

__all__ = ["SteppingClock", "libfaketime"]

_SLEEP_WITH_SELECT = '''"""Written by tests/faketime.py: time.sleep by select (see there why)."""
import select
import time


def _sleep(seconds):
    select.select([], [], [], seconds)


time.sleep = _sleep
'''


def libfaketime() -> str:
    """The path of libfaketime.so.1; the test fails naming the Debian package if none."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1")
                   + glob.glob("/usr/lib/faketime/libfaketime.so.1"))
    if not found:
        pytest.fail("the clock tests need libfaketime, which is not installed: run "
                    "`sh tools/ensure_faketime.sh` (the Debian package `faketime`)",
                    pytrace=False)
    return found[0]


class SteppingClock:
    """A fake wall clock for child processes, at ``offset`` until :meth:`step`."""

    def __init__(self, directory: pathlib.Path, offset: str = "+0"):
        self.library = libfaketime()
        directory.mkdir(parents=True, exist_ok=True)
        self.file = directory / "faketime.rc"
        self.site = directory / "site"
        self.site.mkdir(exist_ok=True)
        (self.site / "sitecustomize.py").write_text(_SLEEP_WITH_SELECT)
        self.step(offset)

    def step(self, offset: str) -> None:
        """Set the wall clock of every child to real time + ``offset`` (libfaketime's
        syntax: ``"-10y"``, ``"+3600"``); they see it within a second."""
        self.file.write_text(offset + "\n")

    def env(self, pythonpath: str) -> dict[str, str]:
        return {
            "LD_PRELOAD": self.library,
            "FAKETIME_TIMESTAMP_FILE": str(self.file),
            "FAKETIME_CACHE_DURATION": "1",  # re-read the file at most once a second
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "NO_FAKE_STAT": "1",  # file times stay real (numba's cache compares them)
            "PYTHONPATH": f"{self.site}:{pythonpath}",
        }
