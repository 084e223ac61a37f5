"""Bulk decoding of data messages and log records into arrays, with the protocol's
verdicts to the bit.

The wire protocol's exact decoder (:mod:`firmware_bridge.wire`) builds Python
objects per message; that is what a live gateway needs, and too slow to replay a
month of logs. :class:`FastDecoder` runs the jitted scanners of
:mod:`firmware_bridge.wire.kernels.msgpack_scan` instead and keeps, across calls, the
tables that map channel names, labels and topics to small ints (each decoded and
judged once, in Python, by the protocol's own rules).

Exactness first: a record the kernels accept gives exactly the readings
``wire.parse_message`` would give (same limits, same int/float coercions, same
label values); anything else -- a reject, NaN or infinite values (dropped and
counted by the exact path), bools as values, duplicate keys, extra keys, huge ints,
JSON, label answers -- is marked ``REC_PYTHON`` and left to the exact path.
``tests/test_fast_decode.py`` holds the two to the same verdicts and values on
random valid and invalid messages.

>>> from firmware_bridge.wire import encode_data
>>> decoder = FastDecoder()
>>> payloads = [encode_data(1.5, 7, {"t": 20.5, "h": 3}, "warm"), b"\\xc1"]
>>> chunk = decoder.decode_payloads(payloads)
>>> chunk.kind.tolist(), chunk.seq.tolist(), chunk.ts.tolist()
([0, 2], [7], [1.5])
>>> [decoder.names.values[i] for i in chunk.pair_name], chunk.pair_value.tolist()
(['t', 'h'], [20.5, 3.0])
>>> decoder.labels.values[chunk.label[0]]
'warm'
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from typing import Any

import msgpack
import numpy as np

from .kernels import msgpack_scan as k
from .labels import NUMBER_TASKS, label_problem
from .limits import DEFAULT_LIMITS, Limits
from .logfile import header_problem
from .names import name_problem

__all__ = ["ByteTable", "FastDecoder", "DecodedPayloads", "LABEL_NUMBER", "ScannedLog", "REC_SINGLE",
           "REC_BATCH", "REC_PYTHON"]

REC_SINGLE, REC_BATCH, REC_PYTHON = k.REC_SINGLE, k.REC_BATCH, k.REC_PYTHON
#: A reading's label code when its label is a number kept in ``label_number``.
LABEL_NUMBER = k.LABEL_NUMBER
#: The fewest bytes a reading of a batch takes: a map header, the keys ``ts``,
#: ``seq`` and ``ch`` and a byte or more for each one's value.
MIN_READING_BYTES = 14


class ByteTable:
    """Byte strings to ids (the kernels' open-addressing table), each with a Python
    value and a verdict (``ok``: the kernels may accept it). Grows as needed.

    >>> table = ByteTable()
    >>> table.add(b"temp", "temp", True), table.add(b"hum", "hum", False), table.find(b"temp")
    (0, 1, 0)
    """

    def __init__(self, capacity: int = 64):
        self.values: list[Any] = []
        self.index: dict[Any, int] = {}  # (type, value) -> id, for the exact path
        self._raw: list[bytes | None] = []  # None: no kernel key
        self._rebuild(capacity)

    def _rebuild(self, capacity: int) -> None:
        size = 1
        while size < 2 * capacity:
            size *= 2
        self.keys = np.zeros(size, dtype=np.int64)
        self.vals = np.zeros(size, dtype=np.int64)
        self.off = np.zeros(capacity, dtype=np.int64)
        self.length = np.full(capacity, -1, dtype=np.int64)
        ok = np.zeros(capacity, dtype=np.int8)
        if len(self._raw):
            ok[: len(self._raw)] = self.ok[: len(self._raw)]
        self.ok = ok
        self.pool = np.zeros(max(sum(len(r or b"") for r in self._raw), 64), dtype=np.uint8)
        self._used = 0
        for ident, raw in enumerate(self._raw):
            self._place(ident, raw)

    def _place(self, ident: int, raw: bytes | None) -> None:
        if raw is None:
            return  # length stays -1: no kernel lookup finds it
        at = self._used
        if at + len(raw) > self.pool.shape[0]:
            self.pool = _grow(self.pool, max(2 * self.pool.shape[0], at + len(raw)))
        src = np.frombuffer(raw, dtype=np.uint8)
        self.pool[at: at + len(raw)] = src
        self._used = at + len(raw)
        self.off[ident] = at
        self.length[ident] = len(raw)
        k.table_insert(self.keys, self.vals, k.fnv1a(src, 0, len(raw)), ident)

    @property
    def capacity(self) -> int:
        return self.off.shape[0]

    def __len__(self) -> int:
        return len(self.values)

    def find(self, raw: bytes) -> int:
        src = np.frombuffer(raw, dtype=np.uint8)
        return int(k.table_find(self.keys, self.vals, self.pool, self.off, self.length,
                                src, 0, len(raw)))

    def add(self, raw: bytes | None, value: Any, ok: bool) -> int:
        """A new entry with its verdict; ``raw`` None: known to the exact path only."""
        ident = len(self.values)
        if ident >= self.capacity:
            self._rebuild(2 * self.capacity)
        self.values.append(value)
        self._raw.append(raw)
        try:
            self.index.setdefault((type(value), value), ident)
        except TypeError:  # unhashable (a multi-label map): no index entry
            pass
        self.ok[ident] = ok
        self._place(ident, raw)
        return ident


@dataclass
class DecodedPayloads:
    """What :meth:`FastDecoder.decode_payloads` read: per record its ``kind``
    (REC_SINGLE, REC_BATCH or REC_PYTHON) and its readings ``first[i] ..
    first[i] + count[i]``; per reading ``seq``, ``ts``, ``label`` (a label id,
    -1 for none, :data:`LABEL_NUMBER` for a number in ``label_number``: a regression
    stream's float references, which the label table does not keep) and its pairs
    ``pair_first .. + pair_count`` in ``pair_name`` (name ids) and ``pair_value``."""

    kind: np.ndarray
    first: np.ndarray
    count: np.ndarray
    seq: np.ndarray
    ts: np.ndarray
    label: np.ndarray
    pair_first: np.ndarray
    pair_count: np.ndarray
    pair_name: np.ndarray
    pair_value: np.ndarray
    label_number: np.ndarray | None = None


@dataclass
class ScannedLog:
    """The records of one log file that :meth:`FastDecoder.scan_log` read: ``buf``
    the file's bytes, per record its byte ``offset``, ``topic`` id, ``received_at``
    and payload span; ``stop``: the offset where the exact reader must take over
    (``None``: read to the end)."""

    buf: np.ndarray
    offset: np.ndarray
    topic: np.ndarray
    received_at: np.ndarray
    payload_start: np.ndarray
    payload_len: np.ndarray
    stop: int | None


def _grow(array: np.ndarray, size: int) -> np.ndarray:
    grown = np.empty(size, dtype=array.dtype)
    grown[: array.shape[0]] = array
    return grown


class FastDecoder:
    """The jitted decoder with its tables (channel names, labels, topics), for one
    set of :class:`~firmware_bridge.wire.Limits`.

    ``topic_stream(topic)``: the stream whose data topic ``topic`` is, or None
    (records on other topics are left to the exact path)."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS, topic_stream=None, task: str = "binary"):
        self.limits = limits
        self.task = task  # what a label may be (firmware_bridge.wire.labels)
        self.names = ByteTable()
        self.labels = ByteTable()
        self.topics = ByteTable()
        self._topic_stream = topic_stream or (lambda topic: None)
        #: per topic id: the stream id (an index into ``streams``), -1 another topic,
        #: -2 not UTF-8 (a damaged record)
        self.topic_state = np.zeros(64, dtype=np.int64)
        self.streams: list[str] = []
        self._stream_index: dict[str, int] = {}
        self._mark = np.zeros(64, dtype=np.int64)
        self._short_names = k.new_short_names()  # the names table's cache for short names
        self._stamp = np.zeros(1, dtype=np.int64)
        self._info = np.zeros(3, dtype=np.int64)
        self._bits = np.zeros(1, dtype=np.int64)
        self._canon = np.zeros(limits.max_string_bytes + 1, dtype=np.uint8)

    # -- tables ----------------------------------------------------------------------

    def name_id(self, name: str) -> int:
        """The id of a channel name the exact path accepted."""
        ident = self.names.index.get((str, name))
        if ident is None:
            ident = self.names.add(name.encode("utf-8"), name, True)
        return ident

    def label_id(self, y: Any) -> int:
        """The id of a label value (any value a data message's ``"y"`` may hold)."""
        try:
            ident = self.labels.index.get((type(y), y))
        except TypeError:
            ident = None
        if ident is None:
            ident = self.labels.add(_canonical_label(y), y, label_problem(y, self.limits, self.task) is None)
        return ident

    def _add_name(self, buf: np.ndarray) -> None:
        raw = bytes(buf[self._info[0]: self._info[1]])
        try:
            name = raw.decode("utf-8")
        except UnicodeDecodeError:
            self.names.add(raw, None, False)
            return
        self.names.add(raw, name, name_problem(name, self.limits.max_channel_name_bytes) is None)

    def _add_label(self) -> None:
        canon = bytes(self._canon[: self._info[2]])
        tag, body = canon[0], canon[1:]
        if tag == k.TAG_BOOL:
            value: Any = bool(body[0])
        elif tag == k.TAG_INT:
            value = int.from_bytes(body, "big", signed=True)
        else:
            try:
                value = body.decode("utf-8")
            except UnicodeDecodeError:
                self.labels.add(canon, None, False)
                return
        self.labels.add(canon, value, label_problem(value, self.limits, self.task) is None)

    def topic_id(self, topic: str) -> int:
        """The id of a topic (as the exact path names it)."""
        ident = self.topics.index.get((str, topic))
        if ident is None:
            ident = self._add_topic(topic.encode("utf-8"), topic)
        return ident

    def _add_topic(self, raw: bytes, topic: str | None) -> int:
        ident = self.topics.add(raw, topic, topic is not None)
        if ident >= self.topic_state.shape[0]:
            self.topic_state = _grow(self.topic_state, 2 * self.topic_state.shape[0])
        stream = None if topic is None else self._topic_stream(topic)
        if topic is None:
            self.topic_state[ident] = -2
        elif stream is None:
            self.topic_state[ident] = -1
        else:
            index = self._stream_index.get(stream)
            if index is None:
                index = self._stream_index[stream] = len(self.streams)
                self.streams.append(stream)
            self.topic_state[ident] = index
        return ident

    # -- decoding --------------------------------------------------------------------

    def decode_payloads(self, payloads: Any, spans: tuple | None = None,
                        data: np.ndarray | None = None) -> DecodedPayloads:
        """Decode data payloads: a list of ``bytes``, or a buffer with ``spans``
        ``(start, length)`` arrays. ``data[i]`` false marks a record as not on a data
        topic (default: all are)."""
        if spans is None and len(payloads) == 1 and type(payloads[0]) is bytes:
            # The gateway's one batch at a time: its bytes as they are (what joining
            # one gives), no running sum (the NumPy calls cost more than they do).
            total = len(payloads[0])
            buf = np.frombuffer(payloads[0] or b"\0", dtype=np.uint8)
            starts, lengths = np.zeros(1, dtype=np.int64), np.full(1, total, dtype=np.int64)
        elif spans is None:
            lengths = np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads))
            starts = np.zeros(len(payloads), dtype=np.int64)
            np.cumsum(lengths[:-1], out=starts[1:])
            buf = np.frombuffer(b"".join(payloads) or b"\0", dtype=np.uint8)
            total = int(lengths.sum())
        else:
            buf = payloads
            starts, lengths = spans
            total = int(lengths.sum())
        n = starts.shape[0]
        ok = np.ones(n, dtype=np.bool_) if data is None else np.asarray(data, dtype=np.bool_)
        limits = self.limits
        max_readings = min(limits.max_batch_readings, limits.max_container_len)
        kind = np.empty(n, dtype=np.int8)
        first = np.empty(n, dtype=np.int64)
        count = np.empty(n, dtype=np.int64)
        r_cap = max(n + max_readings, 16)
        # A pair takes two bytes or more (a name's header, a value), so half the
        # payloads' bytes hold every pair: no pass ends FULL and starts over for
        # pairs (pages of the arrays never written are never touched).
        p_cap = total // 2 + max_readings * limits.max_channels + 16
        r = [np.empty(r_cap, dtype=np.int64), np.empty(r_cap, dtype=np.float64),
             np.empty(r_cap, dtype=np.int64), np.empty(r_cap, dtype=np.int64),
             np.empty(r_cap, dtype=np.int64), np.empty(r_cap, dtype=np.float64)]
        pairs = [np.empty(p_cap, dtype=np.int64), np.empty(p_cap, dtype=np.float64)]
        cursors = np.zeros(2, dtype=np.int64)
        i = 0
        while True:
            names, labels = self.names, self.labels
            if self._mark.shape[0] < names.capacity:
                self._mark = _grow(self._mark, names.capacity)
                self._mark[:] = 0
            i, status = k.decode_payloads(
                buf, starts, lengths, ok, i, n, kind, first, count, *r, *pairs,
                names.keys, names.vals, names.pool, names.off, names.length, names.ok,
                self._short_names, self._mark, self._stamp,
                labels.keys, labels.vals, labels.pool, labels.off, labels.length, labels.ok,
                self._canon, limits.max_payload_bytes, limits.max_channels,
                limits.max_channel_name_bytes, limits.max_string_bytes, max_readings,
                limits.max_depth >= 4, self._info, self._bits, cursors, self.task in NUMBER_TASKS,
            )
            if status == k.DONE:
                break
            if status == k.NEED_NAME:
                self._add_name(buf)
            elif status == k.NEED_LABEL:
                self._add_label()
            else:  # FULL: grow what is short (only the readings, with the sizes above)
                r, pairs = self._grown(r, pairs, cursors, int(lengths[i:].sum()), max_readings)
        n_r, n_p = int(cursors[0]), int(cursors[1])
        return DecodedPayloads(kind, first, count, r[0][:n_r], r[1][:n_r], r[2][:n_r],
                               r[3][:n_r], r[4][:n_r], pairs[0][:n_p], pairs[1][:n_p], r[5][:n_r])

    def _grown(self, r: list, pairs: list, cursors: np.ndarray, bytes_left: int,
               max_readings: int) -> tuple[list, list]:
        """The reading and pair arrays with room for the records still to decode. A
        run of batch messages holds up to ``max_readings`` readings a message, more
        than the first guess: the reading arrays grow at once to what the bytes left
        can hold (a reading takes :data:`MIN_READING_BYTES` or more), not by doubling,
        and the pair arrays (sized by the bytes already) only when they are short.
        Growing both by doubling, each copy touching every page of the pair arrays,
        made 32 batches in one call slower than 32 calls (``tools/bench_gateway.py``'s
        compact batches handed over 32 at a time)."""
        n_r, n_p = int(cursors[0]), int(cursors[1])
        if n_r + max_readings > r[0].shape[0]:
            size = max(2 * r[0].shape[0], n_r + bytes_left // MIN_READING_BYTES + max_readings)
            r = [_grow(a, size) for a in r]
        if n_p + max_readings * self.limits.max_channels > pairs[0].shape[0]:
            pairs = [_grow(a, 2 * a.shape[0]) for a in pairs]
        return r, pairs

    def scan_log(self, path: Any) -> ScannedLog | None:
        """The records of a version 2 log file, CRC-checked in the kernel; None for a
        file the exact reader must read whole (another version, a bad header)."""
        with open(path, "rb") as file:
            unpacker = msgpack.Unpacker(file, raw=False, use_list=True, strict_map_key=True)
            try:
                header = unpacker.unpack()
            except Exception:
                return None
            start = unpacker.tell()

        if header_problem(header) is not None or header.get("version") != 2:
            return None
        buf = _map_file(path)
        end = buf.shape[0]
        cap = max(1024, end // 64)
        rec = [np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int64),
               np.empty(cap, dtype=np.float64), np.empty(cap, dtype=np.int64),
               np.empty(cap, dtype=np.int64)]
        n, pos, stop = 0, start, None
        while True:
            views = [a[n:] for a in rec]
            t = self.topics
            got, pos, status = k.scan_records(
                buf, pos, end, t.keys, t.vals, t.pool, t.off, t.length, self.topic_state,
                *views, self._info, self._bits,
            )
            n += got
            if status == k.DONE:
                break
            if status == k.NEED_TOPIC:
                raw = bytes(buf[self._info[0]: self._info[1]])
                try:
                    topic = raw.decode("utf-8")
                except UnicodeDecodeError:
                    topic = None
                self._add_topic(raw, topic)
            elif status == k.FULL:
                rec = [_grow(a, 2 * a.shape[0]) for a in rec]
            else:  # STOP
                stop = int(pos)
                break
        return ScannedLog(buf, rec[0][:n], rec[1][:n], rec[2][:n], rec[3][:n], rec[4][:n], stop)


def _map_file(path: Any) -> np.ndarray:
    """The file's bytes as a uint8 array over a private memory map of it. Reading it
    whole into memory (``np.fromfile``) copied every byte into fresh pages, each
    zeroed by the kernel first: a tenth of a fresh ``edgelearn replay`` process's
    time on a 75 MB log (perf). Mapped, the pages are the OS's file cache's own.
    ``ACCESS_COPY`` keeps the array writable, the type the kernels were compiled for
    (nothing writes to it). A log is append-only; one cut shorter while it is read
    would fault, as it would corrupt any reader."""
    with open(path, "rb") as file:
        if os.fstat(file.fileno()).st_size == 0:
            return np.zeros(0, dtype=np.uint8)
        mapped = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_COPY)
    return np.frombuffer(mapped, dtype=np.uint8)


def _canonical_label(y: Any) -> bytes | None:
    # The label table's key bytes, as the kernel builds them (None: no kernel key).
    if isinstance(y, bool):
        return bytes((k.TAG_BOOL, int(y)))
    if isinstance(y, int) and -(2 ** 63) <= y < 2 ** 63:
        return bytes((k.TAG_INT,)) + y.to_bytes(8, "big", signed=True)
    if isinstance(y, str):
        try:
            return bytes((k.TAG_STR,)) + y.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return None
