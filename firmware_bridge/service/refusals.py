"""Publishes the broker refused: counted per topic kind, logged, and the status degraded.

An MQTT 5 broker answers a QoS>0 publish it will not take (its ACL denies the topic, a
quota is exceeded) with a PUBACK (or PUBCOMP) whose reason code is 0x80 or more. paho
marks such a message published all the same, so without this the gateway would count
it a success. :class:`PublishRefusals` is what the MQTT bridge tells of each one.

The rule for the inbound message whose outputs were refused: it is acknowledged all
the same (it was processed: the learner saw it, a label it carried is learned and
journaled), and its refused outputs are counted, logged and not retried. A refusal is
the broker's configuration, which a retry cannot change; leaving the message
unacknowledged would stop the inbound session until the broker's queue overflowed and
dropped readings the gateway never read, uncounted by anything but sequence gaps.

>>> from firmware_bridge.service.counters import CounterRegistry
>>> from firmware_bridge.wire import Topics
>>> now = [100.0]
>>> refusals = PublishRefusals(CounterRegistry(), Topics(), clock=lambda: now[0])
>>> refusals.degraded_by()
[]
>>> refusals.refused("edgelearn/s1/prediction", "Not authorized")
>>> refusals.counts()["prediction"], refusals.degraded_by()
(1, ['publish_refused'])
>>> now[0] += 61.0
>>> refusals.degraded_by()
[]
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from typing import Any

from ..pipeline import RateLimitedLog
from ..wire import Topics
from .counters import CounterRegistry

__all__ = ["OUTBOUND_KINDS", "DEGRADED_HOLD_S", "PublishRefusals"]

logger = logging.getLogger("firmware_bridge.gateway")

OUTBOUND_KINDS = ("prediction", "label_request", "status", "other")
"""The kinds a refused publish is counted under (``publish_refused_<kind>``); "other"
is a sink's own topic (Home Assistant's discovery, the JSON status)."""

DEGRADED_HOLD_S = 60.0
"""The status says "degraded" for at least this long after a refusal."""


class PublishRefusals:
    """The ``publish_refused_<kind>`` counters (problems in ``registry``), a log line
    per kind at most every ``log_interval_s`` (with the count of those held back), and
    whether the gateway is degraded now. ``on_first`` is called when a refusal comes
    after a quiet spell (the gateway then publishes its status at once)."""

    def __init__(self, registry: CounterRegistry, topics: Topics, *,
                 clock: Callable[[], float] = time.monotonic, log_interval_s: float = 60.0,
                 hold_s: float = DEGRADED_HOLD_S, on_first: Callable[[], None] | None = None):
        self._topics = topics
        self._clock = clock
        self._hold = hold_s
        self._on_first = on_first
        self._log = RateLimitedLog(logger, log_interval_s, clock)
        self._last = -math.inf  # monotonic time of the last refusal
        self._counters = {kind: registry.counter(
            f"publish_refused_{kind}", f"{kind.replace('_', ' ')} publishes the broker "
            "refused (an MQTT 5 reason code >= 0x80: its ACL, a quota)", problem=True)
            for kind in OUTBOUND_KINDS}

    def refused(self, topic: str, reason: Any) -> None:
        """The MQTT bridge's ``on_publish_refused``: count, log, degrade."""
        parsed = self._topics.parse(topic)
        kind = parsed[0] if parsed is not None and parsed[0] in self._counters else "other"
        self._counters[kind].inc()
        now = self._clock()
        first = now - self._last >= self._hold
        self._last = now
        self._log.warning(f"publish_refused_{kind}",
                          "the broker refused a %s publish on %.80r: %s (check its ACL); "
                          "counted as publish_refused_%s, not retried; the inbound message "
                          "is acknowledged", kind.replace("_", " "), topic, reason, kind)
        if first and self._on_first is not None:
            self._on_first()

    def counts(self) -> dict[str, int]:
        """Refusals so far, by kind."""
        return {kind: counter.value for kind, counter in self._counters.items()}

    def degraded_by(self) -> list[str]:
        """``["publish_refused"]`` within ``hold_s`` of a refusal, else ``[]``."""
        return ["publish_refused"] if self._clock() - self._last < self._hold else []
