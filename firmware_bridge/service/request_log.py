"""Pending label requests that survive a crash: ``labels.requests``, an append-only log.

At a clean stop the pending requests are written whole (``labels.pending``,
:mod:`firmware_bridge.service.pending_store`). After a crash (SIGKILL, a power cut)
that file is not there; so, with the label journal on, every request is also appended
to ``labels.requests`` in the checkpoint directory as it is issued (before the reading
that caused it is acknowledged, so before the request is published), and every
request answered and learned gets a short record too:

* ``ELR1``, a request issued: ``[req_id, stream, seq, slots dtype, slots bytes,
  z dtype, z bytes, y_hat, wall-clock deadline]`` (the features the learner saw, as
  the label journal keeps them; some 40 bytes plus 12 a channel);
* ``ELR2``, a request answered: ``[req_id, stream]`` (some 40 bytes), so that a
  duplicate answer after a crash is not learned twice.

Expired and evicted requests need no record: a start checks every deadline again, and
the table's capacity keeps the newest. The log is **compacted** (rewritten atomically
with the requests still pending, nothing else) once it passes twice its size after the
last compaction (and at least :data:`COMPACT_MIN_BYTES`), so each request is written
about twice at most whatever the traffic, and the file stays bounded by the table's
capacity. Each record is one ``write`` (a killed process loses none); fsync is batched
to at most one every :data:`REQUEST_FSYNC_S` seconds (or ``[checkpoints]
journal_fsync_seconds`` if longer), so a power cut may lose the requests of the last
half minute (their answers then count as ``label_unknown_request``). Each fsync costs a
card a block write: at the journal's 5 s this log would double the card's writes
(``tools/measure_writes.py``; docs/reliability.md).

At a start after a crash (no clean-stop marker) the log is read up to its first
damaged or torn record (reported, as the journal's), and every request issued and not
answered whose deadline has not passed (by the wall clock, its TTL at most: a clock
stepped back does not lengthen it) is pending again, counted ``label_restored``; an
answered one is closed (a later answer is a duplicate). A request of a stream that is
neither served nor on disk is closed as expired. A start after a clean stop takes
``labels.pending`` instead and starts the log again from the table.

Before a request of a stream whose channel map its last checkpoint does not have is
logged, the stream is checkpointed (as for the label journal), so the slots mean what
the restored map says.

What it does not keep: the ids of requests answered before the last compaction (an
answer to one of those after a crash counts as ``label_unknown_request``, not as a
duplicate; it is not learned either way).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import msgpack
import numpy as np

from .records import frame, iter_records

__all__ = ["COMPACT_MIN_BYTES", "REQUEST_FSYNC_S", "REQUESTS_NAME", "RequestLog",
           "open_request_log", "read_requests"]

REQUESTS_NAME = "labels.requests"
COMPACT_MIN_BYTES = 256 << 10
"""The log is never compacted below this size (compaction rewrites the table)."""
REQUEST_FSYNC_S = 30.0
"""Shortest time between two fsyncs of the log."""

_ISSUED = b"ELR1"
_ANSWERED = b"ELR2"


def _record(marker: bytes, fields: list) -> bytes:
    return frame(marker, msgpack.packb(fields, use_bin_type=True))


def _issued(req_id: str, stream: str, seq: int, features: Any, y_hat: Any,
            deadline: float) -> bytes:
    slots, z = (np.ascontiguousarray(a) for a in features)
    return _record(_ISSUED, [req_id, stream, seq, slots.dtype.str, slots.tobytes(),
                             z.dtype.str, z.tobytes(), _plain(y_hat), deadline])


def _plain(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


class RequestLog:
    """Appends issued and answered label requests to ``path`` (the module docstring).

    ``pipeline.labels``' ``on_issue``/``on_settle`` call :meth:`issued` and
    :meth:`answered` (:meth:`attach`); ``before_issue(stream)`` is called first (the
    gateway checkpoints a stream whose channel map its checkpoint lacks). Worker
    thread only.
    """

    def __init__(self, path: str, fsync_interval_s: float = REQUEST_FSYNC_S):
        self.path = path
        self.fsync_interval_s = max(REQUEST_FSYNC_S, fsync_interval_s)
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.size = os.fstat(self._fd).st_size
        self._compact_at = max(COMPACT_MIN_BYTES, 2 * self.size)
        self._dirty = False
        self._last_sync = -float("inf")
        self.bytes_written = 0
        self.records_written = 0
        self.compactions = 0
        self.syncs = 0
        self.errors = 0
        self._labels: Any = None
        self._before_issue: Callable[[str], Any] | None = None

    def attach(self, labels: Any, before_issue: Callable[[str], Any] | None = None) -> None:
        """Log ``labels``' (a PendingLabels) requests from now on."""
        self._labels = labels
        self._before_issue = before_issue
        labels.on_issue = self.issued
        labels.on_settle = self.answered

    def issued(self, entry: Any) -> None:
        if self._before_issue is not None:
            self._before_issue(entry.stream)
        remaining = entry.deadline - entry.issued_at
        self._append(_issued(entry.req_id, entry.stream, entry.seq, entry.features,
                             entry.y_hat, time.time() + remaining))

    def answered(self, entry: Any) -> None:
        self._append(_record(_ANSWERED, [entry.req_id, entry.stream]))

    def _append(self, record: bytes) -> None:
        try:
            os.write(self._fd, record)
        except OSError:
            self.errors += 1  # counted; the request is still served, only not crash-safe
            return
        self.size += len(record)
        self.bytes_written += len(record)
        self.records_written += 1
        self._dirty = True

    def sync(self, now: float) -> None:
        """fsync what was appended, at most once per interval; compact when due."""
        if self._dirty and now - self._last_sync >= self.fsync_interval_s:
            os.fsync(self._fd)
            self._dirty = False
            self._last_sync = now
            self.syncs += 1
        if self.size > self._compact_at and self._labels is not None:
            self.compact()

    def compact(self) -> int:
        """Rewrite the log with the requests pending now (atomically); how many."""
        pending, _ = self._labels.export()
        wall = time.time()
        data = b"".join(_issued(req_id, stream, seq, features, y_hat, wall + remaining)
                        for req_id, stream, seq, features, y_hat, remaining in pending)
        temporary = self.path + ".tmp"
        with open(temporary, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, self.path)
        self.syncs += 1
        os.close(self._fd)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        self.size = len(data)
        self.bytes_written += len(data)
        self._compact_at = max(COMPACT_MIN_BYTES, 2 * self.size)
        self._dirty = False
        self.compactions += 1
        return len(pending)

    def close(self) -> None:
        if self._fd >= 0:
            if self._dirty:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1

    def counters(self) -> dict[str, int]:
        return {"request_log_bytes": self.bytes_written,
                "request_log_compactions": self.compactions,
                "request_log_syncs": self.syncs,
                "request_log_errors": self.errors}


def read_requests(path: str, ttl_s: float, now_wall: float | None = None
                  ) -> tuple[list[tuple], list[tuple], str | None]:
    """``(pending, answered, problem)`` of the log at ``path``: pending rows as
    ``PendingLabels.restore`` takes them (``(req_id, stream, seq, (slots, z), y_hat,
    remaining_s)``, remaining at most ``ttl_s``), answered ``(req_id, stream,
    "duplicate")``, and the first bad record (with its byte offset) or None."""
    now_wall = time.time() if now_wall is None else now_wall
    try:
        with open(path, "rb") as file:
            data = file.read()
    except FileNotFoundError:
        return [], [], None
    issued: dict[str, tuple] = {}
    answered: list[tuple] = []
    problem = None
    for record in iter_records(data, (_ISSUED, _ANSWERED), "a request record"):
        if isinstance(record, str):
            problem = record
            break
        offset, marker, payload = record
        try:
            fields = msgpack.unpackb(payload, raw=False, strict_map_key=False)
            if marker == _ISSUED:
                req_id, stream, seq, sdt, sbytes, zdt, zbytes, y_hat, deadline = fields
                features = (np.frombuffer(sbytes, dtype=np.dtype(sdt)).copy(),
                            np.frombuffer(zbytes, dtype=np.dtype(zdt)).copy())
                remaining = min(float(ttl_s), float(deadline) - now_wall)
                issued[req_id] = (req_id, stream, seq, features, y_hat, remaining)
            else:
                req_id, stream = fields
                if issued.pop(req_id, None) is not None:
                    answered.append((req_id, stream, "duplicate"))
        except (ValueError, TypeError, IndexError, msgpack.UnpackException) as exc:
            problem = f"byte {offset}: a record that does not decode ({exc})"
            break
    return list(issued.values()), answered, problem


def open_request_log(directory: str, labels: Any, store: Any, fsync_interval_s: float,
                     before_issue: Callable[[str], Any], log: Any) -> RequestLog:
    """The request log of ``directory``, after taking back what it holds when the last
    run did not stop cleanly (``store.clean_start``; the report goes to
    ``store.report["request_log"]``), started again from ``labels`` (compacted) and
    attached to it."""
    path = os.path.join(directory, REQUESTS_NAME)
    report: dict[str, Any] = {"restored": 0, "expired": 0, "evicted": 0, "problem": None}
    if not store.clean_start:
        pending, answered, report["problem"] = read_requests(path, labels.ttl_seconds)
        if report["problem"]:
            log.warning("label request log %s: read up to %s", path, report["problem"])
        served = set(store.report["restored"])
        gone = {row[1] for row in pending if row[1] not in served and not store.has(row[1])}
        report.update(labels.restore(pending, answered, gone))
        if pending or answered:
            log.info("label requests after a crash: %d pending request(s) restored from %s, "
                     "%d expired, %d evicted", report["restored"], REQUESTS_NAME,
                     report["expired"], report["evicted"])
    store.report["request_log"] = report
    request_log = RequestLog(path, fsync_interval_s)
    request_log.attach(labels, before_issue)
    request_log.compact()
    return request_log
