"""The gateway's two clocks: monotonic for every duration, the wall clock for what is shown.

Uptime, checkpoint ages, label TTLs, intervals and rate limits are measured on the
monotonic clock, which no clock step moves. The wall clock only stamps what is shown or
recorded (the status' ``"time"`` and ``"started_at"``, the recorder's records). A board
without a real-time clock (a Raspberry Pi) boots with a stale wall clock until NTP
steps it, sometimes by years; :class:`WallClockWatch` notices such a step, logs it and
counts it, so the jump in recorded timestamps is explained.

>>> wall = iter([1000.0, 1000.25, 9000.5]).__next__
>>> steps = []
>>> watch = WallClockWatch(0.0, wall=wall, on_step=steps.append)
>>> watch.check(0.25), watch.check(0.5)
(0.0, 8000.0)
>>> steps
[8000.0]

Against a simulation's clock (not the system's monotonic one) it watches nothing:

>>> WallClockWatch(0.0, monotonic=lambda: 0.0).check(3600.0)
0.0
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

__all__ = ["CLOCK_STEP_S", "WallClockWatch"]

logger = logging.getLogger("firmware_bridge.gateway")

CLOCK_STEP_S = 2.0
"""A change of more than this in (wall clock - monotonic clock) between two checks is
a clock step (NTP setting the time of a board without a real-time clock, an
operator's ``date -s``). NTP's slewing changes it by at most 0.5 ms a second."""


class WallClockWatch:
    """Compares the wall clock with the monotonic one at each :meth:`check`; a step of
    more than :data:`CLOCK_STEP_S` is logged (every one: steps are rare and no client
    can cause one) and handed to ``on_step`` (the gateway's counter)."""

    __slots__ = ("_wall", "_offset", "_on_step", "_watching")

    def __init__(self, now: float, *, wall: Callable[[], float] = time.time,
                 monotonic: Callable[[], float] = time.monotonic,
                 on_step: Callable[[float], None] | None = None):
        # Against another clock than the system's monotonic one (a simulation's,
        # tools/measure_writes.py) there is nothing to compare, unless the wall clock
        # is injected too (a test's).
        self._watching = monotonic is time.monotonic or wall is not time.time
        self._wall = wall
        self._offset = wall() - now
        self._on_step = on_step

    def check(self, now: float) -> float:
        """The step since the last check (``now`` is monotonic), 0.0 if none."""
        if not self._watching:
            return 0.0
        wall = self._wall()
        offset = wall - now
        step = offset - self._offset
        self._offset = offset
        if abs(step) <= CLOCK_STEP_S:
            return 0.0
        logger.warning("clock_step: the wall clock stepped by %+.1f s (now %s UTC); "
                       "uptime, ages and TTLs are on the monotonic clock and unchanged",
                       step, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(wall)))
        if self._on_step is not None:
            self._on_step(step)
        return step
