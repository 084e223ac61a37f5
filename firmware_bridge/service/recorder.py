"""The service's message recorder: raw MQTT messages appended to a log, files rotated
by size (the format: :mod:`firmware_bridge.wire.logfile`)."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import Any


from edgelearn.constraints import Interval, check

from ..wire.logfile import DEFAULT_MAX_BYTES, LOG_PREFIX_PATTERN, LOG_SUFFIX, PathLike, pack_header, pack_record

__all__ = ["LogWriter"]


class LogWriter:
    """Append records to size-limited log files in ``directory``, rotating as needed.

    Files are named ``{prefix}-{counter:08d}-{YYYYmmddTHHMMSSZ}.msgpack``. The counter
    comes first and continues from the highest one already in the directory, so name
    order is write order even when the clock jumps backwards (a Raspberry Pi without a
    real-time clock boots with a stale time until NTP answers); the UTC time is there
    for people. A file is created on the first record after opening or rotation, so a
    gateway that restarts often leaves no empty files behind.

    Before a record is written, the writer rotates if the record would take the
    current file past ``max_bytes``. The record that triggers a rotation is written to
    the new file, and a record larger than ``max_bytes`` gets a file of its own, so no
    record is ever dropped or split. The new file is created before the old one is
    closed: if it cannot be created, ``write`` raises and the writer stays on the old
    file. With ``max_files`` set, the oldest files of this prefix are deleted after a
    rotation so that at most ``max_files`` remain (the current one included).

    Not thread-safe: one thread writes.

    >>> import tempfile
    >>> from firmware_bridge.wire.logfile import iter_logs
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     with LogWriter(tmp, max_bytes=200) as writer:
    ...         for seq in range(3):
    ...             writer.write("sensors/s1/data", b"x" * 30, received_at=float(seq))
    ...     names = sorted(os.listdir(tmp))
    ...     [r.received_at for r in iter_logs([tmp])], len(names)
    ([0.0, 1.0, 2.0], 2)
    """

    def __init__(
        self,
        directory: PathLike,
        prefix: str = "messages",
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_files: int | None = None,
        *,
        clock: Callable[[], float] = time.time,
    ):
        if not isinstance(prefix, str) or not LOG_PREFIX_PATTERN.fullmatch(prefix):
            raise ValueError(
                "The 'prefix' parameter of LogWriter must be letters, digits, '_', '.' "
                f"and single '-' between them. Got {prefix!r}."
            )
        self.directory = os.fspath(directory)
        self.prefix = prefix
        self.max_bytes = check("LogWriter", "max_bytes", max_bytes, Interval(int, 1, None))
        self.max_files = (
            None
            if max_files is None
            else check("LogWriter", "max_files", max_files, Interval(int, 1, None))
        )
        self._clock = clock
        self._name_pattern = re.compile(
            re.escape(prefix) + r"-(\d{8,})-\d{8}T\d{6}Z" + re.escape(LOG_SUFFIX)
        )
        os.makedirs(self.directory, exist_ok=True)
        self._next_counter = self._highest_counter() + 1
        self._file: Any = None
        self._path: str | None = None
        self._size = 0
        self._records_in_file = 0
        self._closed = False
        self.records_written = 0
        self.files_created = 0

    @property
    def path(self) -> str | None:
        """The file being written, or ``None`` before the first record."""
        return self._path

    def write(self, topic: str, payload: bytes, received_at: float | None = None) -> None:
        """Append one record (``received_at`` defaults to the clock's time now)."""
        if self._closed:
            raise ValueError("write to a closed LogWriter")
        record = pack_record(topic, self._clock() if received_at is None else received_at, payload)
        if self._file is None or (
            self._records_in_file > 0 and self._size + len(record) > self.max_bytes
        ):
            self._rotate()
        self._file.write(record)
        self._size += len(record)
        self._records_in_file += 1
        self.records_written += 1

    def flush(self, fsync: bool = False) -> None:
        """Hand buffered records to the OS; with ``fsync`` also to the storage."""
        if self._file is not None:
            self._file.flush()
            if fsync:
                os.fsync(self._file.fileno())

    def close(self) -> None:
        """Flush, fsync and close the current file. Closing twice is harmless."""
        if self._file is not None:
            self._finish(self._file)
            self._file = None
        self._closed = True

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def log_files(self) -> list[str]:
        """Paths of this prefix's log files in ``directory``, oldest first."""
        names = [n for n in os.listdir(self.directory) if self._name_pattern.fullmatch(n)]
        names.sort(key=lambda n: int(self._name_pattern.fullmatch(n).group(1)))
        return [os.path.join(self.directory, n) for n in names]

    def _highest_counter(self) -> int:
        counters = [
            int(m.group(1))
            for m in map(self._name_pattern.fullmatch, os.listdir(self.directory))
            if m
        ]
        return max(counters, default=-1)

    def _rotate(self) -> None:
        created = self._clock()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(created))
        while True:
            path = os.path.join(
                self.directory, f"{self.prefix}-{self._next_counter:08d}-{stamp}{LOG_SUFFIX}"
            )
            self._next_counter += 1
            try:
                # Exclusive create: never append to or overwrite a file another writer
                # (or an earlier run in the same second) made.
                new_file = open(path, "xb")
            except FileExistsError:
                continue
            break
        try:
            header = pack_header(created)
            new_file.write(header)
        except BaseException:
            new_file.close()
            raise
        old_file, self._file, self._path = self._file, new_file, path
        self._size = len(header)
        self._records_in_file = 0
        self.files_created += 1
        if old_file is not None:
            self._finish(old_file)
        if self.max_files is not None:
            self._delete_oldest()

    @staticmethod
    def _finish(file: Any) -> None:
        file.flush()
        os.fsync(file.fileno())
        file.close()

    def _delete_oldest(self) -> None:
        files = [p for p in self.log_files() if p != self._path]
        excess = len(files) + 1 - self.max_files
        for path in files[: max(excess, 0)]:
            try:
                os.remove(path)
            except FileNotFoundError:
                pass  # someone else cleaned up first; the goal is met
