"""Pending label requests: a bounded table with a TTL that matches label answers.

When the gateway asks for a label it keeps the features the learner saw at prediction
time (``(slots, z)`` from ``learner.decide_one``), because the label may come back
minutes later, after the stream's channels and statistics have moved on. An answer is
accepted only for a request this table issued, for the same stream, before its TTL
ran out, and only once; everything else is counted by reason and dropped, so no
client can feed labels for data the gateway never asked about.

Request ids are ``f"{id_prefix}-{counter:x}-{16 random hex digits}"``: the counter
makes them unique within a run, the 64 random bits make them unique across restarts
and unguessable (an answer has to quote an id it was sent).

>>> clock = iter([0.0, 1.0, 2.0, 3.0]).__next__
>>> table = PendingLabels(capacity=2, ttl_seconds=60, clock=clock, id_prefix="gw1")
>>> req = table.issue("s1", seq=7, features=("slots", "z"), y_hat=True)
>>> req.startswith("gw1-0-"), len(req)
(True, 22)
>>> entry = table.answer(req, "s1")
>>> entry.seq, entry.features
(7, ('slots', 'z'))
>>> table.answer(req, "s1"), table.answer("gw1-9-0000000000000000", "s1")
(<Outcome.DUPLICATE: 'duplicate'>, <Outcome.UNKNOWN_REQUEST: 'unknown_request'>)
"""

from __future__ import annotations

import enum
import re
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from edgelearn.constraints import Interval, check

__all__ = ["Outcome", "PendingEntry", "PendingLabels", "COUNTER_KEYS"]


class Outcome(enum.StrEnum):
    """Why an answer was not accepted; the values are counter names."""

    UNKNOWN_REQUEST = "unknown_request"
    """No such request: never issued here, forged, or forgotten long ago."""
    EXPIRED = "expired"
    """The request's TTL had run out when the answer came."""
    EVICTED_REQUEST = "evicted_request"
    """The request was evicted unanswered to make room (the table was full)."""
    DUPLICATE = "duplicate"
    """The request was already answered."""
    WRONG_STREAM = "wrong_stream"
    """The answer came on another stream's label topic; a pending request stays pending."""


COUNTER_KEYS: tuple[str, ...] = (
    "pending",  # requests in the table now (a gauge, not a count)
    "issued",
    "restored",  # requests of an earlier run taken back at a start (still pending then)
    "answered",
    "evicted",  # requests pushed out unanswered by a full table
    "timed_out",  # requests whose TTL ran out unanswered
    *(outcome.value for outcome in Outcome),
)
"""The keys of :meth:`PendingLabels.as_dict`."""


@dataclass(frozen=True, slots=True)
class PendingEntry:
    """What the gateway kept when it asked for a label.

    ``features`` is whatever the pipeline stored (``(slots, z)`` arrays); the table
    neither copies nor reads it, so the pipeline must not change it afterwards.
    ``issued_at`` and ``deadline`` are on the table's clock.
    """

    req_id: str
    stream: str
    seq: int
    features: Any
    y_hat: Any
    issued_at: float
    deadline: float


_ID_PREFIX = re.compile(r"[A-Za-z0-9_.:-]{1,24}")


class PendingLabels:
    """Label requests waiting for answers, at most ``capacity`` of them.

    ``issue`` first drops expired requests, then, if the table is still full, evicts
    the oldest one (counted as ``"evicted"``). ``answer`` hands back a pending,
    unexpired request of the same stream exactly once; any other answer returns an
    :class:`Outcome` and is counted under its value. To tell a duplicate or late
    answer from a forged one, the ids of the last ``recent_capacity`` closed requests
    (answered, expired, evicted) are remembered; older ones count as unknown. Memory
    is bounded by ``capacity + recent_capacity`` whatever arrives.

    TTLs use ``clock`` (``time.monotonic`` by default, so wall-clock jumps do not
    expire requests). Not thread-safe: the pipeline thread owns the table.
    """

    def __init__(
        self,
        capacity: int,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        *,
        id_prefix: str = "req",
        recent_capacity: int | None = None,
    ):
        self.capacity = check("PendingLabels", "capacity", capacity, Interval(int, 1, None))
        self.ttl_seconds = check("PendingLabels", "ttl_seconds", ttl_seconds,
                                 Interval(float, 0, None, closed="right"))
        if not isinstance(id_prefix, str) or not _ID_PREFIX.fullmatch(id_prefix):
            raise ValueError(
                "The 'id_prefix' parameter of PendingLabels must be 1 to 24 of "
                f"A-Z a-z 0-9 _ . : -. Got {id_prefix!r}."
            )
        self.id_prefix = id_prefix
        self.recent_capacity = (
            self.capacity
            if recent_capacity is None
            else check("PendingLabels", "recent_capacity", recent_capacity, Interval(int, 0, None))
        )
        self._clock = clock
        self._counter = 0
        self._pending: OrderedDict[str, PendingEntry] = OrderedDict()
        # req_id -> (stream, outcome for any later answer), oldest first.
        self._recent: OrderedDict[str, tuple[str, Outcome]] = OrderedDict()
        self._counts = dict.fromkeys(COUNTER_KEYS, 0)
        # Called with each entry issued, and each answered (settled): the gateway logs
        # them so a crash keeps its pending requests (service/request_log.py).
        self.on_issue: Callable[[PendingEntry], None] | None = None
        self.on_settle: Callable[[PendingEntry], None] | None = None

    def __len__(self) -> int:
        return len(self._pending)

    def __contains__(self, req_id: object) -> bool:
        return req_id in self._pending

    def _new_id(self) -> str:
        req_id = f"{self.id_prefix}-{self._counter:x}-{secrets.token_hex(8)}"
        self._counter += 1
        return req_id

    def _close(self, entry: PendingEntry, later: Outcome) -> None:
        self._recent[entry.req_id] = (entry.stream, later)
        while len(self._recent) > self.recent_capacity:
            self._recent.popitem(last=False)

    def issue(self, stream: str, seq: int, features: Any, y_hat: Any) -> str:
        """Record a label request for data message ``seq`` of ``stream``; return its id."""
        now = self._clock()
        self.expire(now)
        if len(self._pending) >= self.capacity:
            _, oldest = self._pending.popitem(last=False)
            self._close(oldest, Outcome.EVICTED_REQUEST)
            self._counts["evicted"] += 1
        req_id = self._new_id()
        entry = self._pending[req_id] = PendingEntry(
            req_id, stream, seq, features, y_hat, now, now + self.ttl_seconds
        )
        self._counts["issued"] += 1
        if self.on_issue is not None:
            self.on_issue(entry)
        return req_id

    def answer(self, req_id: str, stream: str) -> PendingEntry | Outcome:
        """The pending entry for ``req_id``, removed from the table, if the answer is
        acceptable; otherwise the :class:`Outcome` saying why not (and counted).
        :meth:`lookup` then :meth:`settle`, for a caller that takes any label."""
        entry = self.lookup(req_id, stream)
        if isinstance(entry, PendingEntry):
            self.settle(entry)
        return entry

    def lookup(self, req_id: str, stream: str) -> PendingEntry | Outcome:
        """The pending, unexpired entry for ``req_id`` on ``stream``, left in the table
        (the caller checks the label first, then :meth:`settle` closes the request; a
        label it cannot use leaves the request open for a correct answer within the
        TTL); otherwise the :class:`Outcome` saying why not (and counted)."""
        entry = self._pending.get(req_id)
        if entry is not None:
            if entry.stream != stream:
                return self._count(Outcome.WRONG_STREAM)
            if self._clock() >= entry.deadline:
                del self._pending[req_id]
                self._counts["timed_out"] += 1
                self._close(entry, Outcome.EXPIRED)
                return self._count(Outcome.EXPIRED)
            return entry
        closed = self._recent.get(req_id)
        if closed is None:
            return self._count(Outcome.UNKNOWN_REQUEST)
        closed_stream, outcome = closed
        return self._count(Outcome.WRONG_STREAM if closed_stream != stream else outcome)

    def settle(self, entry: PendingEntry) -> None:
        """Close ``entry`` (from :meth:`lookup`) as answered: a later answer to it is a
        duplicate."""
        if self._pending.pop(entry.req_id, None) is None:
            return
        self._close(entry, Outcome.DUPLICATE)
        self._counts["answered"] += 1
        if self.on_settle is not None:
            self.on_settle(entry)

    def _count(self, outcome: Outcome) -> Outcome:
        self._counts[outcome.value] += 1
        return outcome

    def expire(self, now: float | None = None) -> int:
        """Drop requests whose TTL has run out (at ``now``, default the clock's time);
        return how many. Cost is proportional to the number dropped."""
        if now is None:
            now = self._clock()
        dropped = 0
        # Issue order is deadline order (one TTL, a monotonic clock), so the expired
        # requests are at the front. Should a custom clock step back, a stale entry
        # may wait behind a fresh one; answer() still checks every deadline.
        while self._pending:
            entry = next(iter(self._pending.values()))
            if now < entry.deadline:
                break
            del self._pending[entry.req_id]
            self._close(entry, Outcome.EXPIRED)
            dropped += 1
        self._counts["timed_out"] += dropped
        return dropped

    def export(self) -> tuple[list[tuple], list[tuple]]:
        """The table to keep across a restart: ``(pending, closed)``, where pending is
        ``(req_id, stream, seq, features, y_hat, remaining_s)`` per request (the TTL
        left on the table's clock now) and closed ``(req_id, stream, outcome)`` per
        remembered closed request, oldest first."""
        now = self._clock()
        pending = [(e.req_id, e.stream, e.seq, e.features, e.y_hat, e.deadline - now)
                   for e in self._pending.values() if e.deadline > now]
        closed = [(req_id, stream, outcome.value)
                  for req_id, (stream, outcome) in self._recent.items()]
        return pending, closed

    def restore(self, pending: list[tuple], closed: list[tuple], gone: set[str],
                elapsed_s: float = 0.0) -> dict[str, int]:
        """Take back what :meth:`export` gave in an earlier run: closed ids first (so a
        late duplicate stays a duplicate), then each pending request with its
        remaining TTL less ``elapsed_s`` (the time the gateway was away). A request
        whose TTL ran out meanwhile, or of a stream in ``gone`` (not restored), is
        closed as expired, so its answer counts as ``expired``, apart from
        ``unknown_request``; the most recent ``capacity`` requests are kept (the others
        count as evicted). Returns ``{"restored", "expired", "evicted"}``."""
        for req_id, stream, outcome in closed[-self.recent_capacity:]:
            self._recent[req_id] = (stream, Outcome(outcome))
        while len(self._recent) > self.recent_capacity:
            self._recent.popitem(last=False)
        now = self._clock()
        counts = dict.fromkeys(("restored", "expired", "evicted"), 0)
        for req_id, stream, seq, features, y_hat, remaining in pending:
            entry = PendingEntry(req_id, stream, seq, features, y_hat, now,
                                 now + remaining - max(0.0, elapsed_s))
            if stream in gone or entry.deadline <= now:
                self._close(entry, Outcome.EXPIRED)
                self._counts["timed_out"] += 1
                counts["expired"] += 1
                continue
            if len(self._pending) >= self.capacity:
                _, oldest = self._pending.popitem(last=False)
                self._close(oldest, Outcome.EVICTED_REQUEST)
                self._counts["evicted"] += 1
                counts["evicted"] += 1
            self._pending[req_id] = entry
            counts["restored"] += 1
        # Deadlines in order (expire() relies on it): one TTL, kept in issue order.
        self._pending = OrderedDict(sorted(self._pending.items(), key=lambda i: i[1].deadline))
        self._counts["restored"] += counts["restored"]
        return counts

    def as_dict(self) -> dict[str, int]:
        """Every counter (:data:`COUNTER_KEYS`), zeros included, and the pending count."""
        counts = dict(self._counts)
        counts["pending"] = len(self._pending)
        return counts
