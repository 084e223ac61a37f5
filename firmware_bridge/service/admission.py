"""Stream slots a hostile client cannot keep: idle streams give theirs up, a start
leaves room for new ones, and the checkpoints of absent streams stay within a disk budget.

A gateway serves at most ``[gateway] max_streams`` streams at once. Without this, a
client that publishes data for many stream names holds every slot for good (and, through
their checkpoints, across restarts), and a new legitimate stream is refused. So:

* **idle streams give up their slot**: a stream whose learner has not changed (no
  reading, no label) for ``[gateway] idle_stream_seconds`` is checkpointed (if its last
  checkpoint does not hold it already) and taken out of the pipeline: its slot and
  memory are free. Its checkpoint stays on disk, and its pending label requests stay
  open. When its data, or an answer to one of its requests, comes again, the stream is
  restored from that checkpoint (:meth:`StreamAdmission.bring_back`), so nothing it
  learned is lost; it is counted ``streams_returned``;
* **a start leaves room**: at most ``max_streams - [gateway] reserved_stream_slots``
  checkpoints are restored at a start, the streams the label journal names first
  (their lessons since the last checkpoint round replay only into a restored stream),
  then the most recently written; the others come back as above when their data comes;
* **a disk budget**: the checkpoint files (both generations) are kept within
  ``[checkpoints] max_bytes``; beyond it, the checkpoints of streams not served now are
  deleted, the least recently written first (``checkpoints_deleted``: what those
  streams learned is gone, so the counter is a problem). Checkpoints of the streams
  served are never deleted.

Every eviction, return, deletion and refusal of a new stream when every slot is taken
(``too_many_streams``) is counted, and logged once per stream (the first
:data:`LOGGED_NAMES` names, of them :data:`LOGGED_REFUSALS` refusals; a hostile flood
of names is then counted only). Activity is
read from the pipeline's per-stream revision (readings observed plus labels learned)
at most every :data:`LOOK_INTERVAL_S`, off the per-message path, on the monotonic clock.
Without a checkpoint directory nothing is evicted (there would be nowhere to keep it).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from .checkpoints import CheckpointStore
from .counters import CounterRegistry
from .journal import JOURNAL_NAME, read_journal

__all__ = ["LOGGED_NAMES", "LOGGED_REFUSALS", "LOOK_INTERVAL_S", "StreamAdmission"]

logger = logging.getLogger("firmware_bridge.admission")

LOOK_INTERVAL_S = 1.0
"""Longest between two looks at the streams' activity (less for a short idle time)."""

LOGGED_NAMES = 10_000
"""Stream names whose eviction, return or deletion is logged (once each): a bound on
the memory a flood of names can take; beyond it they are counted only."""

LOGGED_REFUSALS = 1_000
"""Of those, how many may be refusals (a flood of new names, every slot taken), so a
flood does not fill the log; every refusal is counted (``too_many_streams``)."""


class StreamAdmission:
    """Reclaims idle streams' slots, brings them back from their checkpoints, keeps the
    checkpoint directory within its budget (the module docstring says the rules).

    Made by the gateway when it has a checkpoint directory: it restores the checkpoints
    (``max_streams`` less the reserve), registers its counters, and hooks
    :meth:`bring_back` to ``pipeline.on_unknown_stream``. ``save(stream)`` writes a
    stream's checkpoint and returns whether it was written (the gateway's, which counts
    it); :meth:`tick` is called from the worker's housekeeping.
    """

    def __init__(self, config: Any, pipeline: Any, store: CheckpointStore,
                 registry: CounterRegistry, save: Callable[[str], bool],
                 clock: Callable[[], float]):
        self.pipeline = pipeline
        self.store = store
        self._save = save
        self._clock = clock
        self.idle_s = float(config["gateway.idle_stream_seconds"])
        self.max_bytes = int(config["checkpoints.max_bytes"])
        self.restore_limit = max(0, config.max_streams - config["gateway.reserved_stream_slots"])
        counter = registry.counter
        self._evicted = counter("streams_evicted", "idle streams whose slot was reclaimed "
                                "(their checkpoint kept on disk)")
        self._returned = counter("streams_returned", "streams brought back from their "
                                 "checkpoint when their data or a label answer came")
        self._deleted = counter("checkpoints_deleted", "checkpoints of streams not served "
                                "deleted to keep [checkpoints] max_bytes", problem=True)
        first = frozenset()
        if config.journal_enabled:
            lessons, _ = read_journal(os.path.join(store.directory, JOURNAL_NAME))
            first = frozenset(lesson.stream for lesson in lessons)
        # When each was last written, before this start writes any (trim's order).
        self._written_at = store.written_at()
        store.restore(pipeline, self.restore_limit, first)
        # After a crash a checkpoint's last seq is stale (later readings were processed):
        # forgotten for the restored streams now, for the others when they come back.
        self._stale_seq: set[str] = set()
        if not store.clean_start:
            for stream in store.report["restored"]:
                pipeline.forget_last_seq(stream)
            self._stale_seq.update(store.report["not_restored"])
        now = clock()
        # stream -> (its revision when last seen changing, monotonic time of that look)
        self._seen: dict[str, tuple[int, float]] = {
            stream: (pipeline.revision(stream), now) for stream in pipeline.streams}
        self._logged: set[tuple[str, str]] = set()
        self._refusals_logged = 0
        self._look_every = min(LOOK_INTERVAL_S, self.idle_s / 4) if self.idle_s else LOOK_INTERVAL_S
        self._next_look = now
        self._bytes_seen = -1  # store.bytes_written when the budget was last kept
        self._over_budget_logged = False
        pipeline.on_unknown_stream = self.bring_back
        self.keep_budget()

    def trim(self) -> int:
        """Evict the least recently written streams beyond the restore limit (the label
        journal's streams are restored beyond it to replay their lessons; the gateway
        calls this once those are checkpointed); how many."""
        pipeline = self.pipeline
        excess = pipeline.n_streams - self.restore_limit
        if excess <= 0:
            return 0
        oldest = sorted(pipeline.streams, key=lambda s: self._written_at.get(s, 0.0))
        return sum(self.evict(stream, "beyond the slots a start fills")
                   for stream in oldest[:excess])

    # -- the worker's calls ------------------------------------------------------

    def tick(self, now: float) -> None:
        """Note which streams changed, evict those idle too long, and keep the disk
        budget once checkpoints were written (at most every ``_look_every`` s)."""
        if now < self._next_look:
            return
        self._next_look = now + self._look_every
        pipeline = self.pipeline
        seen = self._seen
        idle = []
        for stream in pipeline.streams:
            revision = pipeline.revision(stream)
            last = seen.get(stream)
            if last is None or last[0] != revision:
                seen[stream] = (revision, now)
            elif self.idle_s and now - last[1] >= self.idle_s:
                idle.append(stream)
        for stream in idle:
            self.evict(stream, f"idle for {now - seen[stream][1]:.0f} s")
        if self.store.bytes_written != self._bytes_seen:
            self.keep_budget()

    def evict(self, stream: str, why: str) -> bool:
        """Checkpoint ``stream`` (unless its checkpoint holds it already) and free its
        slot (``why``, for the log); whether it was evicted (not when its checkpoint
        could not be written)."""
        pipeline = self.pipeline
        if not self.store.is_current(pipeline, stream) and not self._save(stream):
            return False  # the gateway counted and logged the failed write; kept for now
        pipeline.drop(stream)
        self.store.forget(stream)  # so a flood of names cannot grow the store's tables
        self._seen.pop(stream, None)
        self._evicted.inc()
        self._log_once("evicted", stream, logging.INFO, "stream %r %s: its slot is free, its "
                       "checkpoint kept (restored when it returns)", why)
        return True

    def bring_back(self, stream: str) -> bool:
        """``pipeline.on_unknown_stream``: restore ``stream`` from its checkpoint if it
        has one and a slot is free; whether it did. (A stream with no checkpoint is a
        new one: the pipeline makes it.)"""
        pipeline = self.pipeline
        if pipeline.n_streams >= pipeline.max_streams:
            # Counted too_many_streams by the pipeline (and logged per reason); named
            # here once per stream, for the first LOGGED_REFUSALS of them.
            if self._refusals_logged < LOGGED_REFUSALS and ("refused", stream) not in self._logged:
                self._refusals_logged += 1
                self._log_once("refused", stream, logging.WARNING, "stream %r refused: all %d "
                               "slots taken (too_many_streams)", pipeline.max_streams)
            return False
        if not self.store.has(stream):
            return False
        if not self.store.restore_one(pipeline, stream):
            return False  # logged; the pipeline starts it with a fresh model, as at a start
        if stream in self._stale_seq:
            self._stale_seq.discard(stream)
            pipeline.forget_last_seq(stream)
        self._seen[stream] = (pipeline.revision(stream), self._clock())
        self._returned.inc()
        self._log_once("returned", stream, logging.INFO,
                       "stream %r returned: restored from its checkpoint")
        return True

    def keep_budget(self) -> int:
        """Delete the checkpoints of streams not served now, least recently written
        first, until the directory's checkpoints fit ``max_bytes``; return how many
        streams' checkpoints were deleted."""
        self._bytes_seen = self.store.bytes_written
        if not self.max_bytes:
            return 0
        try:
            files = self.store.files()
        except OSError as exc:  # the directory gone or unreadable: the checkpoints say so
            logger.warning("cannot list the checkpoints to keep [checkpoints] max_bytes: %s", exc)
            return 0
        total = sum(size for _, size, _ in files)
        if total <= self.max_bytes:
            self._over_budget_logged = False
            return 0
        served = set(self.pipeline.streams)
        absent: dict[str, list[float]] = {}  # stream -> [bytes, newest mtime]
        for stream, size, mtime in files:
            if stream not in served:
                entry = absent.setdefault(stream, [0.0, 0.0])
                entry[0] += size
                entry[1] = max(entry[1], mtime)
        deleted = 0
        for stream in sorted(absent, key=lambda s: absent[s][1]):
            if total <= self.max_bytes:
                break
            self.store.delete(stream)
            self._stale_seq.discard(stream)
            total -= absent[stream][0]
            deleted += 1
            self._deleted.inc()
            self._log_once("deleted", stream, logging.WARNING, "stream %r: its checkpoint "
                           "deleted to keep [checkpoints] max_bytes = %d (what it learned is "
                           "gone)", self.max_bytes)
        if total > self.max_bytes and not self._over_budget_logged:
            self._over_budget_logged = True
            logger.warning("the checkpoints of the %d streams served take %d bytes, over "
                           "[checkpoints] max_bytes = %d (they are never deleted)",
                           len(served), total, self.max_bytes)
        return deleted

    def _log_once(self, kind: str, stream: str, level: int, message: str, *args: Any) -> None:
        """Log ``message % (stream, *args)`` the first time ``stream`` is ``kind``
        (evicted, returned, deleted)."""
        key = (kind, stream)
        if key in self._logged or len(self._logged) >= LOGGED_NAMES:
            return
        self._logged.add(key)
        logger.log(level, message, stream, *args)
