"""A log that cannot be flooded: one line per key (a reject reason) per interval."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from edgelearn.constraints import Interval, check

__all__ = ["RateLimitedLog"]


class RateLimitedLog:
    """Log at most one line per key every ``interval_s`` seconds, with a count of the
    lines held back in between, so a flood of bad messages cannot flood the log.

    Keys must come from a fixed set (reject reasons), which bounds memory.

    >>> clock = iter([0.0, 1.0, 2.0, 100.0]).__next__
    >>> log = RateLimitedLog(logging.getLogger("demo"), 60.0, clock)
    >>> [log.warning("too_large", "payload is %d bytes", n) for n in (5000, 6000, 7000, 8000)]
    [True, False, False, True]
    """

    __slots__ = ("_logger", "_interval", "_clock", "_last", "_held")

    def __init__(
        self,
        log: logging.Logger,
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._logger = log
        self._interval = check("RateLimitedLog", "interval_s", interval_s, Interval(float, 0, None))
        self._clock = clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def warning(self, key: str, message: str, *args: Any) -> bool:
        """Log ``message % args`` under ``key`` unless one was logged too recently;
        return whether it was logged."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self._interval:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        held = self._held.pop(key, 0)
        self._last[key] = now
        if held:
            self._logger.warning(
                "%s: " + message + " (%d more like it since the last line)", key, *args, held
            )
        else:
            self._logger.warning("%s: " + message, key, *args)
        return True
