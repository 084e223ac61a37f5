"""The gateway's checkpoint store: one file per stream in one directory.

Each stream's learned state is ``stream-<quoted id>.ckpt`` in the directory, written
with :func:`edgelearn.state.save_checkpoint` (atomic, two generations: the previous
one is ``.ckpt.1``). :meth:`CheckpointStore.restore` loads every checkpoint found into
a pipeline; a corrupt newest generation falls back to the older one and a checkpoint
that does not fit the configured learner leaves the stream with a fresh model; the
report says which. Moving a stream to another gateway instance is moving its two
files (see docs/fleet.md).
"""

from __future__ import annotations

import fnmatch
import logging
import os
import urllib.parse
from typing import Any

from edgelearn.state import CheckpointError, load_checkpoint, save_checkpoint

from ..pipeline import Pipeline, StateMismatch

__all__ = ["CheckpointStore", "checkpoint_path", "stream_of_checkpoint"]

logger = logging.getLogger("firmware_bridge.checkpoints")

_CLEAN_STOP = "clean-stop"  # written after the final checkpoint of a clean stop
_PREFIX = "stream-"
_SUFFIX = ".ckpt"
# What edgelearn.state.save_checkpoint leaves behind when killed mid-write: its
# temporary file (mkstemp: ".<name>.<random>.tmp") and the hard link it rotates
# through ("<that>.link"). Nothing else in the directory is matched.
_STALE_PATTERNS = (f".{_PREFIX}*{_SUFFIX}.*.tmp", f".{_PREFIX}*{_SUFFIX}.*.tmp.link")


def checkpoint_path(directory: str, stream: str) -> str:
    """The checkpoint file of ``stream``: its id percent-quoted, so that no stream id
    can name a path outside ``directory``.

    >>> checkpoint_path("/state", "kitchen.1")
    '/state/stream-kitchen.1.ckpt'
    >>> checkpoint_path("/state", "..")
    '/state/stream-...ckpt'
    """
    name = urllib.parse.quote(stream, safe="")
    return os.path.join(directory, f"{_PREFIX}{name}{_SUFFIX}")


def stream_of_checkpoint(filename: str) -> str | None:
    """The stream whose checkpoint (either generation) ``filename`` is, else ``None``.

    >>> stream_of_checkpoint("stream-a%2Fb.ckpt.1"), stream_of_checkpoint("notes.txt")
    ('a/b', None)
    """
    if filename.endswith(_SUFFIX + ".1"):
        filename = filename[:-2]
    if not (filename.startswith(_PREFIX) and filename.endswith(_SUFFIX)):
        return None
    quoted = filename[len(_PREFIX) : -len(_SUFFIX)]
    return urllib.parse.unquote(quoted) or None


class CheckpointStore:
    """Checkpoints of a pipeline's streams in ``directory`` (created if missing).

    ``report`` (for the status message) lists the streams ``restored``, those that
    ``fell_back`` to the older generation and those that ``failed``, with why, and
    ``stale_removed``, the temporary files of writes a crash interrupted, which the
    store deletes when it opens the directory (a process killed inside
    :func:`~edgelearn.state.save_checkpoint` leaves one each time; nothing else
    would ever remove them).
    """

    def __init__(self, directory: str):
        self.directory = directory
        os.makedirs(directory, exist_ok=True)
        self._saved_revision: dict[str, int] = {}
        self._saved_layout: dict[str, tuple[int, int]] = {}
        self.bytes_written = 0  # checkpoint bytes written (SD card wear), both generations' worth
        self.report: dict[str, Any] = {
            "directory": directory,
            "restored": [],
            "fell_back": {},
            "failed": {},
            "stale_removed": self._remove_stale(),
        }
        # Whether the last run stopped cleanly (its final checkpoints are current);
        # the marker goes now, so a crash of this run leaves none.
        marker = os.path.join(directory, _CLEAN_STOP)
        self.clean_start = os.path.exists(marker)
        if self.clean_start:
            os.unlink(marker)

    def mark_clean_stop(self) -> None:
        """Record that every stream's checkpoint is current (after the final round)."""
        with open(os.path.join(self.directory, _CLEAN_STOP), "wb"):
            pass

    def _remove_stale(self) -> int:
        removed = 0
        for name in os.listdir(self.directory):
            if any(fnmatch.fnmatchcase(name, p) for p in _STALE_PATTERNS):
                try:
                    os.unlink(os.path.join(self.directory, name))
                except FileNotFoundError:
                    continue
                except OSError as exc:
                    logger.warning("cannot remove the stale temporary file %s: %s", name, exc)
                    continue
                removed += 1
        if removed:
            logger.info("removed %d temporary file(s) of interrupted checkpoint writes "
                        "from %s", removed, self.directory)
        return removed

    def path(self, stream: str) -> str:
        return checkpoint_path(self.directory, stream)

    def streams(self) -> list[str]:
        """The streams with a checkpoint here, sorted."""
        return sorted({s for s in map(stream_of_checkpoint, os.listdir(self.directory))
                       if s is not None})

    def restore(self, pipeline: Pipeline, limit: int | None = None,
                first: frozenset[str] = frozenset()) -> None:
        """Load the checkpoints found into ``pipeline``: at most ``limit`` of them
        (``None``: ``pipeline.max_streams``), those of the streams in ``first`` (the
        label journal's) before the others, and of the others the most recently
        written first. The rest stay on disk (``report["not_restored"]``), restored
        when their stream returns (:mod:`firmware_bridge.service.admission`)."""
        report = self.report
        found = self.streams()
        allowed = [stream for stream in found if pipeline.allows(stream)]
        report["not_allowed"] = sorted(set(found) - set(allowed))
        if report["not_allowed"]:
            logger.warning("%d checkpoint(s) of streams [gateway] stream_pattern does not "
                           "allow not restored (kept on disk): %s", len(report["not_allowed"]),
                           ", ".join(map(repr, report["not_allowed"][:20])))
        written = self.written_at()
        allowed.sort(key=lambda stream: (stream not in first, -written.get(stream, 0)))
        limit = pipeline.max_streams if limit is None else limit
        # The journal's streams even beyond the limit: their lessons since the last
        # checkpoint round are replayed only into a restored stream.
        chosen = [s for s in allowed if s in first][: pipeline.max_streams]
        chosen += [s for s in allowed if s not in first][: max(0, limit - len(chosen))]
        report["not_restored"] = sorted(set(allowed) - set(chosen))
        for stream in chosen:
            if self.restore_one(pipeline, stream):
                report["restored"].append(stream)
        report["restored"].sort()  # the report by name; the restore went by priority
        if report["restored"]:
            logger.info("restored %d stream(s) from %s", len(report["restored"]), self.directory)
        if report["not_restored"]:
            logger.info("%d stream(s) not restored, to leave slots free for new ones (their "
                        "checkpoints are restored when their data comes)",
                        len(report["not_restored"]))

    def restore_one(self, pipeline: Pipeline, stream: str) -> bool:
        """Load ``stream``'s checkpoint into ``pipeline`` (falling back to the older
        generation); whether it was (the report says why not)."""
        report = self.report
        path = self.path(stream)
        problems: list[str] = []
        restored_from = None
        for candidate in (path, path + ".1"):
            try:
                state, load_report = load_checkpoint(candidate)
            except CheckpointError as exc:
                problems.extend(p for p in exc.problems if not p.endswith(": missing"))
                break  # load_checkpoint already tried the older generation
            problems.extend(load_report.problems)
            try:
                pipeline.restore(stream, state)
            except (StateMismatch, ValueError) as exc:
                problems.append(f"{load_report.path_used}: {exc}")
                if load_report.path_used != path:
                    break  # the older generation did not fit either
                continue
            restored_from = load_report.path_used
            break
        if restored_from is None:
            report["failed"][stream] = "; ".join(problems) or "no usable checkpoint"
            logger.error("stream %r starts with a fresh model: %s", stream,
                         report["failed"][stream])
            return False
        self._saved_revision[stream] = pipeline.revision(stream)
        self._saved_layout[stream] = pipeline.layout(stream)
        if restored_from != path:
            report["fell_back"][stream] = "; ".join(problems)
            logger.warning("stream %r restored from the older checkpoint %s: %s",
                           stream, restored_from, report["fell_back"][stream])
        return True

    def has(self, stream: str) -> bool:
        """Whether ``stream`` has a checkpoint here (either generation)."""
        path = self.path(stream)
        return os.path.exists(path) or os.path.exists(path + ".1")

    def is_current(self, pipeline: Pipeline, stream: str) -> bool:
        """Whether ``stream``'s last checkpoint written or restored here holds it as it is."""
        return self._saved_revision.get(stream) == pipeline.revision(stream)

    def written_at(self) -> dict[str, float]:
        """Each stream's newest checkpoint file's modification time (wall clock: only
        to order streams by when they were last written)."""
        newest: dict[str, float] = {}
        for stream, _, mtime in self.files():
            newest[stream] = max(mtime, newest.get(stream, 0.0))
        return newest

    def files(self) -> list[tuple[str, int, float]]:
        """``(stream, bytes, modification time)`` of every checkpoint file here (both
        generations)."""
        found = []
        with os.scandir(self.directory) as entries:
            for entry in entries:
                stream = stream_of_checkpoint(entry.name)
                if stream is None:
                    continue
                try:
                    info = entry.stat()
                except FileNotFoundError:
                    continue
                found.append((stream, info.st_size, info.st_mtime))
        return found

    def forget(self, stream: str) -> None:
        """Forget what was saved of ``stream`` (taken out of the pipeline; its files
        stay): :meth:`restore_one` learns it again when it returns."""
        self._saved_revision.pop(stream, None)
        self._saved_layout.pop(stream, None)

    def delete(self, stream: str) -> None:
        """Remove both generations of ``stream``'s checkpoint."""
        path = self.path(stream)
        for name in (path, path + ".1"):
            try:
                os.unlink(name)
            except FileNotFoundError:
                pass
        self.forget(stream)

    def saved_layout(self, stream: str) -> tuple[int, int] | None:
        """The channel layout (:meth:`Pipeline.layout`) of ``stream``'s last checkpoint
        written or restored here, or None."""
        return self._saved_layout.get(stream)

    def save(self, pipeline: Pipeline, stream: str) -> Exception | None:
        """Write ``stream``'s checkpoint now; return the error if it could not be."""
        revision = pipeline.revision(stream)
        layout = pipeline.layout(stream)
        path = self.path(stream)
        try:
            save_checkpoint(path, pipeline.to_state(stream))
            self.bytes_written += os.path.getsize(path)
        except (OSError, TypeError, ValueError) as exc:
            return exc
        self._saved_revision[stream] = revision
        self._saved_layout[stream] = layout
        return None

    def save_changed(self, pipeline: Pipeline) -> tuple[int, dict[str, Exception]]:
        """Write the checkpoint of every stream that changed since its last one; return
        how many were written and the streams that could not be, with the error."""
        written = 0
        failed: dict[str, Exception] = {}
        for stream in pipeline.streams:
            if self._saved_revision.get(stream) == pipeline.revision(stream):
                continue
            exc = self.save(pipeline, stream)
            if exc is None:
                written += 1
            else:
                failed[stream] = exc
        return written, failed
