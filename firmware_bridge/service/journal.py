"""The label journal: every label the gateway learns, on disk before it is learned.

Checkpoints are written every few minutes (SD cards wear out); a process killed in
between would forget the labels learned since. So each lesson is appended to
``labels.journal`` in the checkpoint directory before the message that taught it is
acknowledged (before the learner takes it, or, on the one-call path of settled
binary PAACDS streams, right after it and its count: a process killed in between
loses the lesson with the learner's memory, and the broker delivers the message
again): the stream, ``n`` (the stream's ``learned`` count before this lesson), the features the
learner kept at prediction time (``slots``, ``z``) and the label. At start the
gateway restores the checkpoints and then replays the journal on top of them
(:func:`replay`), so a SIGKILL at any moment loses no label the gateway had learned;
after a checkpoint round that wrote every changed stream, the journal is truncated.

Why this is exact: a learner's ``learn(slots, z, y)`` is deterministic given its
state. A record applies only when ``n`` equals the restored stream's ``learned``
count, so records the checkpoint already holds are skipped and replaying twice is
harmless. Slots mean channel names only through the stream's channel map, so a
record also carries the map's layout (channels assigned, evicted); the gateway
checkpoints a stream before journaling a lesson whose layout its last checkpoint
does not have, and replay skips (and counts) a record whose layout differs from the
restored one rather than teach a weight to the wrong channel. What the journal does
not hold is the observation statistics of unlabelled messages since the checkpoint
(channel means and variances, the query budget): those rewind to the checkpoint.

Format: records, each a 4-byte marker, the payload's length and CRC-32
(little-endian uint32 each), then the msgpack payload. ``b"ELJ1"``: one lesson,
``[stream, n, n_assigned, n_evicted, slots dtype, slots bytes, z dtype, z bytes,
y]``. ``b"ELJ2"``: the lessons of one batch (the gateway's jitted batches) of one
stream, numbered ``n, n + 1, ...``, in one layout, ``[stream, n, n_assigned,
n_evicted, counts dtype, counts bytes, slots dtype, slots bytes, z dtype, z bytes,
codes dtype, codes bytes, labels]``: lesson i has ``counts[i]`` features, the
next ones of ``slots``/``z``, and the label ``labels[codes[i]]``. A write cut short
by a kill leaves a torn last record; a damaged one fails its checksum. Either stops
the replay there, reported with its byte offset: records of a stream must apply in
order, so nothing after a bad record can be trusted to fit.

Writes go straight to the file (one ``write`` per record: a killed process loses
nothing the kernel has; a batch's lessons are all in the kernel or, torn, none
replayed, and its data messages are not acknowledged until after the write). The
gateway's worker holds the records of one turn (:meth:`LabelJournal.hold`) and writes
them with one ``write`` (:meth:`LabelJournal.release`) before it acknowledges any
message of the turn, so the rule holds per turn: a process killed before the write
loses the turn's lessons with the learner's memory of them, and the broker delivers
the turn's messages again; a write that fails leaves none of the turn's records.
``fsync`` is batched (at most one per ``fsync_interval_s``), which bounds what a
power cut can lose. The file is bounded by ``max_bytes``: the gateway checkpoints
when it passes half of it, and a record that would pass the bound is learned but
not journaled (its lessons counted as ``journal_dropped``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, NamedTuple

import msgpack
import numpy as np

from .records import frame, iter_records

__all__ = ["JOURNAL_NAME", "LabelJournal", "Lesson", "read_journal", "replay"]

JOURNAL_NAME = "labels.journal"
_MAGIC = b"ELJ1"
_MAGIC_BATCH = b"ELJ2"


class Lesson(NamedTuple):
    """One journaled label: what ``learner.learn`` got, and where it stood."""

    stream: str
    n: int
    layout: tuple[int, int]
    slots: np.ndarray
    z: np.ndarray
    y: Any


def _encode(stream: str, n: int, layout: tuple[int, int], slots: Any, z: Any, y: Any,
            pack: Any = None) -> bytes:
    # One lesson per labelled message: a journal passes its own packer (packb makes
    # one per call), and the usual dtypes' names are looked up, not built.
    slots = np.asarray(slots)
    z = np.asarray(z)
    payload = (pack or _new_packer().pack)(
        [stream, n, layout[0], layout[1], _DTYPE_NAMES.get(slots.dtype) or slots.dtype.str,
         slots.tobytes(), _DTYPE_NAMES.get(z.dtype) or z.dtype.str, z.tobytes(), y])
    return frame(_MAGIC, payload)


def _new_packer() -> msgpack.Packer:
    return msgpack.Packer(use_bin_type=True)


_DTYPE_NAMES = {np.dtype(t): np.dtype(t).str for t in (np.int32, np.int64, np.float64)}


def _encode_batch(stream: str, n: int, layout: tuple[int, int], counts: np.ndarray,
                  slots: np.ndarray, z: np.ndarray, codes: np.ndarray, labels: list) -> bytes:
    fields = [stream, n, layout[0], layout[1]]
    for array in (counts, slots, z, codes):
        array = np.ascontiguousarray(array)
        fields += (array.dtype.str, array.tobytes())
    fields.append(labels)
    payload = msgpack.packb(fields, use_bin_type=True)
    return frame(_MAGIC_BATCH, payload)


class LabelJournal:
    """Appends lessons to ``path`` (created if missing; kept as it is, for replay).

    >>> import tempfile, numpy as np
    >>> path = tempfile.mkdtemp() + "/labels.journal"
    >>> journal = LabelJournal(path)
    >>> journal.append("s1", 0, (2, 0), np.array([0, 1], np.int32), np.array([0.5, -1.0]), True)
    True
    >>> journal.close()
    >>> lessons, problem = read_journal(path)
    >>> [(l.stream, l.n, l.slots.tolist(), l.z.tolist(), l.y) for l in lessons], problem
    ([('s1', 0, [0, 1], [0.5, -1.0], True)], None)
    """

    def __init__(self, path: str, max_bytes: int = 4 << 20, fsync_interval_s: float = 5.0):
        self.path = path
        self.max_bytes = max_bytes
        self.fsync_interval_s = fsync_interval_s
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.size = os.fstat(self._fd).st_size
        self._dirty = False
        self._last_sync = -float("inf")
        self.records_written = 0
        self.lessons_written = 0
        self.bytes_written = 0
        self.dropped = 0
        self.syncs = 0
        self._pack = _new_packer().pack  # one thread appends (the gateway's worker)
        # Records waiting for release() while holding (one list for the journal's life:
        # a turn of the worker allocates nothing to hold and release).
        self._held: list[bytes] = []
        self._holding = False
        self._held_bytes = 0
        self.held_lessons = 0

    @property
    def wants_checkpoint(self) -> bool:
        """Past half its bound: time for a checkpoint round (then a truncate)."""
        return self.size > self.max_bytes // 2

    def append(self, stream: str, n: int, layout: tuple[int, int], slots: Any, z: Any,
               y: Any) -> bool:
        """Write one lesson; False (and counted in ``dropped``) if it would pass
        ``max_bytes``. Raises ``OSError`` if the write fails."""
        return self._write(_encode(stream, n, layout, slots, z, y, self._pack), 1)

    def append_batch(self, stream: str, n: int, layout: tuple[int, int], counts: np.ndarray,
                     slots: np.ndarray, z: np.ndarray, codes: np.ndarray, labels: list) -> bool:
        """Write the lessons ``n, n + 1, ...`` of one batch of ``stream`` as one record:
        lesson i has the next ``counts[i]`` of ``slots``/``z`` and the label
        ``labels[codes[i]]``. False (each lesson counted in ``dropped``) if it would
        pass ``max_bytes``. Raises ``OSError`` if the write fails."""
        return self._write(_encode_batch(stream, n, layout, counts, slots, z, codes, labels),
                           int(counts.shape[0]))

    def hold(self) -> None:
        """Keep the records appended from now on in memory until :meth:`release`
        (the gateway's worker: one ``write`` per turn; the messages of the turn are
        acknowledged only after it)."""
        self._holding = True

    def release(self) -> None:
        """Write the held records with one ``write`` and stop holding. Raises
        ``OSError`` if the write fails (then none of them is in the file)."""
        self._holding = False
        held = self._held
        if not held:
            return
        data, records, lessons = held[0] if len(held) == 1 else b"".join(held), len(held), self.held_lessons
        held.clear()
        self.held_lessons = self._held_bytes = 0
        self._write_now(data, records, lessons)

    def _write(self, record: bytes, lessons: int) -> bool:
        if self.size + self._held_bytes + len(record) > self.max_bytes:
            self.dropped += lessons
            return False
        if self._holding:
            self._held.append(record)
            self._held_bytes += len(record)
            self.held_lessons += lessons
        else:
            self._write_now(record, 1, lessons)
        return True

    def _write_now(self, data: bytes, records: int, lessons: int) -> None:
        written = os.write(self._fd, data)
        if written != len(data):  # a full disk mid-record: leave no torn record behind
            os.ftruncate(self._fd, self.size)
            raise OSError(f"short write to {self.path} ({written} of {len(data)} bytes)")
        self.size += written
        self.bytes_written += written
        self.records_written += records
        self.lessons_written += lessons
        self._dirty = True

    def sync(self, now: float, force: bool = False) -> None:
        """``fsync`` what was appended, if anything, at most once per interval."""
        if self._dirty and (force or now - self._last_sync >= self.fsync_interval_s):
            os.fsync(self._fd)
            self._dirty = False
            self._last_sync = now
            self.syncs += 1

    def truncate(self) -> None:
        """Empty the journal (every lesson in it, and every one held, is in a
        checkpoint now)."""
        if self._held:
            self._held.clear()
            self._held_bytes = self.held_lessons = 0
        if self.size:
            os.ftruncate(self._fd, 0)
            os.fsync(self._fd)
            self.size = 0
            self._dirty = False

    def close(self) -> None:
        if self._fd >= 0:
            self.release()
            if self._dirty:
                os.fsync(self._fd)
            os.close(self._fd)
            self._fd = -1

    def counters(self) -> dict[str, int]:
        return {"journal_records": self.records_written, "journal_lessons": self.lessons_written,
                "journal_bytes": self.bytes_written,
                "journal_dropped": self.dropped, "journal_syncs": self.syncs}


def _iter_lessons(data: bytes) -> Iterator[Lesson | str]:
    for record in iter_records(data, (_MAGIC, _MAGIC_BATCH), "a journal record"):
        if isinstance(record, str):
            yield record
            return
        offset, magic, payload = record
        try:
            lessons = (_decode(payload) if magic == _MAGIC else _decode_batch(payload))
        except (ValueError, TypeError, IndexError, msgpack.UnpackException) as exc:
            yield f"byte {offset}: a record that does not decode ({exc})"
            return
        yield from lessons


def _decode(payload: bytes) -> list[Lesson]:
    stream, n, assigned, evicted, sdt, sbytes, zdt, zbytes, y = msgpack.unpackb(
        payload, raw=False, strict_map_key=False)
    slots = np.frombuffer(sbytes, dtype=np.dtype(sdt)).copy()
    z = np.frombuffer(zbytes, dtype=np.dtype(zdt)).copy()
    return [Lesson(stream, n, (assigned, evicted), slots, z, y)]


def _decode_batch(payload: bytes) -> list[Lesson]:
    (stream, n, assigned, evicted, cdt, cbytes, sdt, sbytes, zdt, zbytes, ydt, ybytes,
     labels) = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    counts = np.frombuffer(cbytes, dtype=np.dtype(cdt)).tolist()
    slots = np.frombuffer(sbytes, dtype=np.dtype(sdt))
    z = np.frombuffer(zbytes, dtype=np.dtype(zdt))
    codes = np.frombuffer(ybytes, dtype=np.dtype(ydt)).tolist()
    if (len(codes) != len(counts) or sum(counts) != slots.shape[0] or slots.shape != z.shape
            or min(counts, default=0) < 0 or not all(0 <= c < len(labels) for c in codes)):
        raise ValueError("its counts, features and label codes do not agree")
    out, at = [], 0
    for i, (k, code) in enumerate(zip(counts, codes)):
        out.append(Lesson(stream, n + i, (assigned, evicted), slots[at:at + k].copy(),
                          z[at:at + k].copy(), labels[code]))
        at += k
    return out


def read_journal(path: str) -> tuple[list[Lesson], str | None]:
    """The lessons in ``path`` up to the first bad record, and what was wrong there
    (``None`` if nothing). A missing file is an empty journal."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return [], None
    lessons: list[Lesson] = []
    for item in _iter_lessons(data):
        if isinstance(item, str):
            return lessons, item
        lessons.append(item)
    return lessons, None


def replay(pipeline: Any, path: str, restored: set[str] | frozenset[str]) -> dict[str, Any]:
    """Teach ``pipeline`` the lessons of the journal at ``path`` that its restored
    checkpoints do not hold; return a report: ``replayed``, ``skipped`` (already in
    the checkpoint), ``no_checkpoint`` (a stream whose checkpoint did not restore:
    its slots mean nothing to a fresh model), ``layout_mismatch``, ``out_of_order``
    (a lesson after a missing one), ``failed`` (the learner refused it, as it did
    live) and ``problem`` (the first bad record, with its byte offset, or None)."""
    lessons, problem = read_journal(path)
    report = {"replayed": 0, "skipped": 0, "no_checkpoint": 0, "layout_mismatch": 0,
              "out_of_order": 0, "failed": 0, "problem": problem}
    for lesson in lessons:
        if lesson.stream not in restored:
            report["no_checkpoint"] += 1
            continue
        outcome = pipeline.relearn(lesson.stream, lesson.n, lesson.layout, lesson.slots,
                                   lesson.z, lesson.y)
        report[outcome] += 1
    return report
