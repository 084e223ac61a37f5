"""The message log's file format: records packed and read back, a file at a time.

A log file is a plain sequence of msgpack objects (no framing of our own, so any
msgpack library can read it):

1. a header map ``{"format": "edgelearn-log", "version": 2, "created": <float unix
   time>}``;
2. then records, each a msgpack array ``[body: bin, crc32: int]``: ``body`` is the
   msgpack array ``[topic: str, received_at: float, payload: bin]`` and ``crc32`` its
   CRC-32 (``zlib.crc32``), where ``payload`` is the raw MQTT payload exactly as it
   arrived (even when the gateway rejected it, so a replay sees what the gateway
   saw).

Version 1 files (records ``[topic, received_at, payload]``, no checksum) still read.
A damaged record (a bad checksum, a record that does not decode or has the wrong
shape, a file that ends inside one) is reported with its byte offset and stops the
reading of that file, never read as data: msgpack has no sync marker, so after a
damaged record (a flipped length byte moves where the next one seems to start)
nothing that follows can be trusted, and ``edgelearn replay`` exits 1 rather than
give results from part of a log as if they were whole.

Other code (replay, the offline demo, tools) depends on this layout: change it only
with a new ``version``.

:class:`~firmware_bridge.service.recorder.LogWriter` (the service's recorder)
appends records and rotates files by size; :func:`read_log` reads
one file back as :class:`LogRecord` values with their byte offsets, and reports a
corrupt or truncated record instead of skipping it (msgpack has no sync marker, so
reading that file stops there); :func:`iter_logs` reads many files or directories.

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as tmp:
...     path = os.path.join(tmp, "demo.msgpack")
...     write_log(path, [("sensors/s1/data", 1700000000.5, b"\\x80")])
...     [(r.topic, r.received_at, r.payload, r.offset) for r in read_log(path)]
1
[('sensors/s1/data', 1700000000.5, b'\\x80', 59)]
"""

from __future__ import annotations

import os
import re
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

import msgpack


__all__ = [
    "LOG_FORMAT",
    "LOG_VERSION",
    "LOG_SUFFIX",
    "LogRecord",
    "LogError",
    "LOG_PREFIX_PATTERN",
    "pack_header",
    "pack_record",
    "read_header",
    "read_log",
    "iter_logs",
    "LogFiles",
    "write_log",
]

LOG_FORMAT = "edgelearn-log"
LOG_VERSION = 2
LOG_VERSIONS = (1, 2)  # what read_log reads
LOG_SUFFIX = ".msgpack"

DEFAULT_MAX_BYTES = 64 * 1024 * 1024

PathLike = str | os.PathLike[str]


class LogRecord(NamedTuple):
    """One recorded message; ``offset`` is its byte offset in the file it came from
    (``-1`` for a record that was not read from a file)."""

    topic: str
    received_at: float
    payload: bytes
    offset: int = -1


class LogError(ValueError):
    """A log file that is not a valid edgelearn log from some byte offset on.

    ``unread_bytes`` counts the bytes from ``offset`` to the end of the file that were
    not read (a bad header is reported at offset 0, and then the whole file is unread).

    >>> str(LogError("a.msgpack", 120, "truncated record", unread_bytes=7))
    'a.msgpack: byte offset 120: truncated record (7 bytes left unread)'
    """

    def __init__(self, path: PathLike, offset: int, reason: str, unread_bytes: int = 0):
        self.path = os.fspath(path)
        self.offset = offset
        self.reason = reason
        self.unread_bytes = unread_bytes
        super().__init__(
            f"{self.path}: byte offset {offset}: {reason} ({unread_bytes} bytes left unread)"
        )

    def __reduce__(self):
        # Exceptions pickle through their args; ours has a different signature, and
        # replays may fan out to worker processes that send errors back.
        return (type(self), (self.path, self.offset, self.reason, self.unread_bytes))


def pack_header(created: float) -> bytes:
    """The msgpack header that starts every log file, with the CRC-32 of its other
    fields (:func:`_header_crc`).

    >>> header = msgpack.unpackb(pack_header(1.5))
    >>> header["format"], header["version"], header["created"]
    ('edgelearn-log', 2, 1.5)
    """
    created = float(created)
    return msgpack.packb(
        {"format": LOG_FORMAT, "version": LOG_VERSION, "created": created,
         "crc32": _header_crc(LOG_VERSION, created)},
        use_bin_type=True,
    )


def _header_crc(version: Any, created: Any) -> int:
    return zlib.crc32(msgpack.packb([LOG_FORMAT, version, created], use_bin_type=True))


def pack_record(topic: str, received_at: float, payload: bytes) -> bytes:
    """One record as msgpack bytes (``[body, crc32]``, version 2); raises
    ``TypeError`` for values the format cannot hold.

    >>> body, crc = msgpack.unpackb(pack_record("t", 2, b"x"))
    >>> msgpack.unpackb(body), crc == zlib.crc32(body)
    (['t', 2.0, b'x'], True)
    >>> pack_record("t", 2.0, "x")
    Traceback (most recent call last):
    ...
    TypeError: a log record payload must be bytes, got str
    """
    body = _pack_body(topic, received_at, payload)
    return msgpack.packb([body, zlib.crc32(body)], use_bin_type=True)


def _pack_body(topic: str, received_at: float, payload: bytes) -> bytes:
    if not isinstance(topic, str):
        raise TypeError(f"a log record topic must be a str, got {type(topic).__name__}")
    if isinstance(received_at, bool) or not isinstance(received_at, (int, float)):
        raise TypeError(
            f"a log record received_at must be a float, got {type(received_at).__name__}"
        )
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        raise TypeError(f"a log record payload must be bytes, got {type(payload).__name__}")
    return msgpack.packb([topic, float(received_at), bytes(payload)], use_bin_type=True)


#: What a log file name prefix may be (the recorder's ``prefix``; the config checks it).
LOG_PREFIX_PATTERN = re.compile(r"[A-Za-z0-9_.]+(?:-[A-Za-z0-9_.]+)*")




def _describe(value: Any) -> str:
    if isinstance(value, list):
        inner = ", ".join(type(v).__name__ for v in value[:4])
        return f"array of {len(value)} [{inner}{', ...' if len(value) > 4 else ''}]"
    return type(value).__name__


def header_problem(header: Any) -> str | None:
    if not isinstance(header, dict) or header.get("format") != LOG_FORMAT:
        return (
            f"not an {LOG_FORMAT} file: the first object is not its header "
            f"(got {_describe(header)})"
        )
    version = header.get("version")
    if type(version) is not int or version not in LOG_VERSIONS:
        return (f"unsupported {LOG_FORMAT} version {version!r} (this reader knows "
                f"{', '.join(map(str, LOG_VERSIONS))})")
    created = header.get("created")
    if isinstance(created, bool) or not isinstance(created, (int, float)):
        return f"header 'created' must be a number, got {_describe(created)}"
    if version >= 2 and header.get("crc32") != _header_crc(version, created):
        return "corrupt header: checksum mismatch (the header's bytes were changed)"
    return None


def _as_record(obj: Any, offset: int) -> LogRecord | None:
    if (
        isinstance(obj, list)
        and len(obj) == 3
        and isinstance(obj[0], str)
        and isinstance(obj[1], (int, float))
        and not isinstance(obj[1], bool)
        and isinstance(obj[2], bytes)
    ):
        return LogRecord(obj[0], float(obj[1]), obj[2], offset)
    return None


_V1_SHAPE = "an array [topic: str, received_at: float, payload: bin]"


def _as_checked_record(obj: Any, offset: int) -> LogRecord | str:
    """A version 2 record ``[body, crc32]`` as a :class:`LogRecord`, or what is wrong."""
    if not (isinstance(obj, list) and len(obj) == 2 and isinstance(obj[0], bytes)
            and type(obj[1]) is int):
        return f"corrupt record: expected an array [body: bin, crc32: int], got {_describe(obj)}"
    body, crc = obj
    if zlib.crc32(body) != crc:
        return "corrupt record: checksum mismatch (the record's bytes were changed)"
    try:
        inner = msgpack.unpackb(body, raw=False, use_list=True, strict_map_key=True)
    except Exception as exc:  # a checksum that matches a body that does not decode
        return f"corrupt record: {_exception_text(exc)}"
    record = _as_record(inner, offset)
    if record is None:
        return f"corrupt record: expected a body {_V1_SHAPE}, got {_describe(inner)}"
    return record


def _unpacker(file: Any) -> msgpack.Unpacker:
    return msgpack.Unpacker(file, raw=False, use_list=True, strict_map_key=True)


def read_header(path: PathLike) -> dict[str, Any]:
    """The header map of a log file; raises :class:`LogError` at offset 0 if it is bad."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        try:
            header = _unpacker(file).unpack()
        except Exception as exc:  # any decoding failure means "no valid header"
            raise LogError(path, 0, _no_header(exc, size), size) from None
    problem = header_problem(header)
    if problem:
        raise LogError(path, 0, problem, size)
    return header


def _no_header(exc: BaseException, size: int) -> str:
    if size == 0:
        return "no valid header: the file is empty"
    return f"no valid header: {_exception_text(exc)}"


def _exception_text(exc: BaseException) -> str:
    if isinstance(exc, msgpack.OutOfData):
        return "the file ends inside it"
    return str(exc) or type(exc).__name__


def read_log(
    path: PathLike, on_error: Callable[[LogError], None] | None = None
) -> Iterator[LogRecord]:
    """Yield the records of one log file in order, each with its byte offset.

    A bad header, or a record that is truncated, corrupt or of the wrong shape, is
    reported, never skipped: with ``on_error`` it is called with the
    :class:`LogError` and reading of this file stops; without it the ``LogError`` is
    raised. Either way the records before the problem have been yielded, and the
    error says how many bytes were left unread.

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "cut.msgpack")
    ...     _ = write_log(path, [("t", 1.0, b"ab"), ("t", 2.0, b"cd")])
    ...     with open(path, "r+b") as f:
    ...         _ = f.truncate(os.path.getsize(path) - 1)
    ...     errors = []
    ...     [r.payload for r in read_log(path, on_error=errors.append)], errors[0].reason
    ([b'ab'], 'truncated record: the file ends inside it')
    """

    def report(offset: int, reason: str) -> None:
        # Bytes left unread are measured now, not at open, so a log still being
        # written is described as it is.
        error = LogError(path, offset, reason, max(os.fstat(file.fileno()).st_size - offset, 0))
        if on_error is None:
            raise error
        on_error(error)

    with open(path, "rb") as file:
        unpacker = _unpacker(file)
        try:
            header = unpacker.unpack()
        except Exception as exc:
            report(0, _no_header(exc, os.fstat(file.fileno()).st_size))
            return
        problem = header_problem(header)
        if problem:
            report(0, problem)
            return
        checked = header["version"] >= 2
        while True:
            offset = unpacker.tell()
            try:
                obj = unpacker.unpack()
            except msgpack.OutOfData:
                if os.fstat(file.fileno()).st_size > offset:
                    report(offset, "truncated record: the file ends inside it")
                return
            except Exception as exc:  # FormatError, StackError, bad UTF-8, BufferFull...
                report(offset, f"corrupt record: {_exception_text(exc)}")
                return
            if checked:
                record = _as_checked_record(obj, offset)
                if isinstance(record, str):
                    report(offset, record)
                    return
            else:
                record = _as_record(obj, offset)
                if record is None:
                    report(offset, f"corrupt record: expected {_V1_SHAPE}, got {_describe(obj)}")
                    return
            yield record


def _log_paths(paths_or_dirs: PathLike | Iterable[PathLike]) -> Iterator[str]:
    if isinstance(paths_or_dirs, (str, os.PathLike)):
        paths_or_dirs = [paths_or_dirs]
    for item in paths_or_dirs:
        item = os.fspath(item)
        if os.path.isdir(item):
            names = sorted(
                n
                for n in os.listdir(item)
                if n.endswith(LOG_SUFFIX) and os.path.isfile(os.path.join(item, n))
            )
            yield from (os.path.join(item, n) for n in names)
        else:
            yield item


class LogFiles:
    """The records of many log files, as :func:`iter_logs` gives them: iterate it for
    :class:`LogRecord` values; bulk readers (``firmware_bridge.offline.replay``) read
    :meth:`files` themselves and call ``on_error`` alike."""

    def __init__(self, paths_or_dirs: PathLike | Iterable[PathLike],
                 on_error: Callable[[LogError], None] | None = None):
        if not isinstance(paths_or_dirs, (str, os.PathLike)):
            paths_or_dirs = list(paths_or_dirs)
        self.paths_or_dirs = paths_or_dirs
        self.on_error = on_error

    def files(self) -> list[str]:
        """The files to read, in reading order."""
        return list(_log_paths(self.paths_or_dirs))

    def __iter__(self) -> Iterator[LogRecord]:
        for path in _log_paths(self.paths_or_dirs):
            yield from read_log(path, on_error=self.on_error)


def iter_logs(
    paths_or_dirs: PathLike | Iterable[PathLike],
    on_error: Callable[[LogError], None] | None = None,
) -> LogFiles:
    """The records of many log files: each directory's ``*.msgpack`` files in
    name order (which is write order for :class:`LogWriter` files), explicit files
    where they appear in the argument. ``on_error`` as in :func:`read_log`; with it, a
    bad file is reported and reading goes on with the next one."""
    return LogFiles(paths_or_dirs, on_error)


def write_log(
    path: PathLike,
    records: Iterable[LogRecord | tuple[str, float, bytes]],
    created: float | None = None,
) -> int:
    """Write a whole log file (header and ``records``) at ``path``, replacing any
    file there; return the number of records. For tools and tests; the gateway uses
    :class:`LogWriter`. ``records`` are ``(topic, received_at, payload)`` tuples or
    :class:`LogRecord` values (their offsets are ignored)."""
    count = 0
    with open(path, "wb") as file:
        file.write(pack_header(time.time() if created is None else created))
        for record in records:
            if isinstance(record, LogRecord):
                topic, received_at, payload = record.topic, record.received_at, record.payload
            else:
                topic, received_at, payload = record
            file.write(pack_record(topic, received_at, payload))
            count += 1
    return count
