"""Label answers cannot starve sensor data: a rate limit per stream, and the order the
worker takes them in.

Answers come on their own MQTT session (:class:`~firmware_bridge.service.mqtt.MqttBridge`'s
answers connection, ``[labels] own_session``), so a flood of them fills that session's
queue on the broker, never the data session's: the broker drops answers beyond it
(mosquitto's ``max_queued_messages``), not readings. The worker takes queued data
first and then :func:`answers_to_take` answers: :data:`ANSWERS_PER_TURN`, or as many
as the label requests the turn's data issued if more (a backlog of batches asks more
than that a turn; its answers then keep pace instead of falling a turn behind per
turn, so a catch-up after a stall is predicted by a model that learned them), never
more than the answer queue holds. So a data message waits behind no more than
:data:`ANSWERS_PER_TURN` answers, or the answers its own turn's data asked for.

:class:`AnswerRateLimit` is the per-stream rate limit (``[labels]
max_answers_per_second``): a token bucket per label topic (one topic per stream) that
holds one second's worth, refilled on the monotonic clock. An answer beyond it is
looked at (its payload decoded within the protocol's limits): if its ``req`` is a
request pending now it goes on (a genuine answer is never dropped for the limit, and
each request can be answered once); any other is acknowledged and dropped, counted
``label_rate_limited`` and logged (rate-limited), before the pipeline spends anything
on it. Topics are remembered up to :data:`MAX_TOPICS`; beyond that the
bucket of the topic least recently seen is forgotten (a flood of topic names cannot
grow memory; a forgotten topic starts again with a full bucket).

Data are protected by the separate session and the order above, whatever the limit;
the limit bounds what forged, repeated and late answers cost the worker.
"""

from __future__ import annotations

import collections
import functools
import time
from collections.abc import Callable
from typing import Any

import msgpack

__all__ = ["ANSWER_QUEUE_LENGTH", "ANSWERS_PER_TURN", "AnswerRateLimit", "MAX_TOPICS",
           "answers_to_take"]

ANSWERS_PER_TURN = 64
"""Most answers the worker takes per turn, after the data queued."""

ANSWER_QUEUE_LENGTH = 4 * ANSWERS_PER_TURN
"""Answers received and waiting for the worker (also the answers session's MQTT 5
Receive Maximum): the socket is not read beyond it, so the backlog stays with the broker."""

MAX_TOPICS = 4096
"""Label topics whose buckets are remembered at once."""


def answers_to_take(waiting: int, requested: int) -> int:
    """How many of the ``waiting`` answers the worker takes after a turn's data, whose
    readings issued ``requested`` label requests: :data:`ANSWERS_PER_TURN`, or
    ``requested`` if more (answers in proportion to the data), at most ``waiting``
    (itself at most :data:`ANSWER_QUEUE_LENGTH`).

    >>> answers_to_take(300, 0), answers_to_take(300, 200), answers_to_take(10, 200)
    (64, 200, 10)
    """
    return min(waiting, max(ANSWERS_PER_TURN, requested))


class AnswerRateLimit:
    """At most ``per_second`` answers a second per label topic (bursts of one second's
    worth), but every answer whose ``req`` is ``pending``. ``admit(topic, payload)`` says
    whether an answer may go on; ``dropped`` counts those that may not; ``log`` (a
    RateLimitedLog) says so now and then; ``unpack`` decodes a payload (the protocol's
    bounded msgpack).

    >>> import msgpack
    >>> now = [0.0]
    >>> limit = AnswerRateLimit(2, clock=lambda: now[0], pending=lambda req: req == "gw1-7")
    >>> forged, real = msgpack.packb({"req": "x", "y": 1}), msgpack.packb({"req": "gw1-7", "y": 1})
    >>> [limit.admit("edgelearn/label/a", forged) for _ in range(3)]
    [True, True, False]
    >>> limit.admit("edgelearn/label/a", real), limit.admit("edgelearn/label/b", forged)
    (True, True)
    >>> now[0] = 0.5
    >>> limit.admit("edgelearn/label/a", forged), limit.dropped
    (True, 1)
    """

    def __init__(self, per_second: float, clock: Callable[[], float] = time.monotonic,
                 log: Any = None, pending: Callable[[Any], bool] = lambda req: False,
                 unpack: Callable[[bytes], Any] = functools.partial(msgpack.unpackb, raw=False)):
        self.per_second = float(per_second)
        self.dropped = 0
        self._clock = clock
        self._log = log
        self._pending = pending
        self._unpack = unpack
        # topic -> [tokens, monotonic time of the last refill], least recently seen first
        self._buckets: collections.OrderedDict[str, list[float]] = collections.OrderedDict()

    def admit(self, topic: str, payload: bytes) -> bool:
        """Whether an answer on ``topic`` is within the limit (a token is taken) or
        answers a pending request."""
        now = self._clock()
        rate = self.per_second
        bucket = self._buckets.get(topic)
        if bucket is None:
            if len(self._buckets) >= MAX_TOPICS:
                self._buckets.popitem(last=False)
            bucket = self._buckets[topic] = [rate, now]
        else:
            self._buckets.move_to_end(topic)
            bucket[0] = min(rate, bucket[0] + (now - bucket[1]) * rate)
            bucket[1] = now
        if bucket[0] < 1.0:
            try:
                answer = self._unpack(payload)
            except Exception:  # noqa: BLE001 -- anything undecodable is not an answer
                answer = None
            if type(answer) is dict and isinstance(answer.get("req"), str) and self._pending(
                    answer["req"]):
                return True
            self.dropped += 1
            if self._log is not None:
                self._log.warning("label_rate_limited", "answers on %.80r beyond %g a second "
                                  "dropped", topic, rate)
            return False
        bucket[0] -= 1.0
        return True

    def counters(self) -> dict[str, int]:
        return {"label_rate_limited": self.dropped}
