"""Replay recorded logs with the learner's loop jitted: decode in bulk, then arrays.

:class:`~firmware_bridge.pipeline.Pipeline` handles one message at a time in
Python, as the live gateway must. Offline, nothing waits for an answer, so a
log can be decoded first and each stream's readings run through one jitted
loop. This module does that and ends with the *same pipeline object* the
per-message path would leave behind: the same counters, rejects, prequential
metrics, stream status and learner state (``Pipeline.to_state``), bit for bit
(``tests/test_bulk_replay.py`` holds the two paths equal).

How:

1. the records are decoded in bulk by :class:`~firmware_bridge.wire.bulk_decode.FastDecoder`
   (a log file's records CRC-checked and split in numba, data messages and
   batches read straight into arrays, channel names and labels as ids); a
   record the decoder is not sure of goes through the gateway's own
   ``parse_message`` (and label answers and rejects through ``Pipeline.handle``),
   in order, so validation, limits and reject counts are the gateway's; a data
   message is kept for its stream (``max_streams`` applies in order of first
   message, as live);
2. each stream whose learner has a jitted loop becomes an array (channels to
   columns in an order every message follows, NaN where a channel is absent) and
   a label code per row, and runs the learner's ``run_rows`` (PAACDS's and
   ActiveAROW's loops in :mod:`edgelearn.kernels.log_replay`, binary and multiclass;
   SurpriseDetector's and AROWRegressor's in ``log_replay_anomaly`` and
   ``log_replay_regression``);
3. the stream's counters, sequence accounting and metrics are then filled in from
   the loop's predictions and queries, with the pipeline's own rules, per label
   and per run of rows rather than per row.

Which streams take the jitted loop: those whose learner declares the
``"log_loop"`` capability (PAACDS and ActiveAROW, binary and multiclass, SurpriseDetector
and AROWRegressor, today), under the
``from_data`` and ``all`` label policies. Every other learner, and a
stream whose messages list their channels in differing orders (the learner's
sums run in message order, so an array's column order would change the last
bits), runs on the per-message path, and the result says so per stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from ..wire.bulk_decode import REC_BATCH, REC_PYTHON, FastDecoder
from ..pipeline.rows import rows_fit, run_jitted, run_per_message
from ..pipeline import Pipeline
from ..wire import DataBatch, DataMessage, Reject, check_stream_id, parse_message
from ..wire.logfile import LogError, LogFiles, LogRecord, read_header, read_log

__all__ = ["JITTED_KINDS", "jitted_path", "replay_records"]

#: Learner kinds with a jitted log loop, and the condition under which it is used
#: (kept for callers of the older name; the pipeline asks the learner instead).
JITTED_KINDS = {"paacds": "binary or multiclass, label policy from_data or all",
                "active_arow": "binary or multiclass, label policy from_data or all",
                "surprise": "anomaly, label policy from_data or all",
                "arow_regressor": "regression, label policy from_data or all"}

#: Messages of one stream kept before they are run (memory stays bounded over
#: a month of logs; the learner's state carries over from chunk to chunk). As
#: many as the records decoded at a time (``_BulkReplay.BATCH``), so that a
#: one-stream log's chunk is one decoded piece, run as it is, not a copy of
#: pieces joined; and small enough that a chunk's arrays (its rows' matrix: 4 MiB
#: at 32 channels) stay in memory ``malloc`` reuses (``offline.memory``). At
#: 65,536 a fresh process spent a sixth of a replay's CPU time faulting in pages
#: for the joined copies and the matrices (measured with ``perf``; each chunk
#: costs about 2 ms of Python besides its rows).
CHUNK = 16_384

#: The label policies under which no label request is ever issued, so a stream's
#: learning depends on its own messages only.
_OFFLINE_POLICIES = ("from_data", "all")


def unchecked_logs(paths: Iterable[str], pipeline: Pipeline) -> list[dict]:
    """The format-1 logs among ``paths`` (records without checksums), each with its
    ``records`` and the ``undecodable`` ones by reject reason: records whose message
    the protocol (with ``pipeline``'s topics, limits and task) cannot decode. In such a
    log a damaged record is either one of those or, if it still decodes (a changed
    value, name or topic), undetectable; the replay counts the first kind among its
    rejects, and this names them, so neither passes unsaid."""
    found = []
    for path in paths:
        try:
            if read_header(path)["version"] >= 2:
                continue
        except LogError:
            continue  # the replay reports a bad header itself
        records = 0
        undecodable: dict[str, int] = {}
        for record in read_log(path, on_error=lambda error: None):
            records += 1
            message = parse_message(record.topic, record.payload, pipeline.topics,
                                    pipeline.limits, pipeline.json_fields, pipeline.task)
            if isinstance(message, Reject):
                undecodable[message.reason] = undecodable.get(message.reason, 0) + 1
        found.append({"path": str(path), "records": records, "undecodable": undecodable})
    return found


def jitted_path(pipeline: Pipeline) -> str | None:
    """Why ``pipeline``'s streams cannot take the jitted loop, or None if they can."""
    if not pipeline.learner_can("log_loop"):
        # a parameter that rules the loop out says so (Learner.why_not)
        return (pipeline.learner_why_not("log_loop")
                or f"{pipeline.learner_kind} has no jitted log loop for {pipeline.task} streams")
    if pipeline.label_policy not in _OFFLINE_POLICIES:
        return f"label policy {pipeline.label_policy!r} answers labels message by message"
    return None


class _Rows:
    """One stream's accepted readings, kept as pieces of arrays: per reading seq,
    ts, label id (-1: none; LABEL_NUMBER: the number in the last array), receive
    time and channel count; per channel its name id and value (ids of the
    decoder's tables); per reading its number label (NaN: none)."""

    __slots__ = ("pieces", "size")

    def __init__(self) -> None:
        self.pieces: list[tuple[np.ndarray, ...]] = []
        self.size = 0

    def add(self, piece: tuple[np.ndarray, ...]) -> None:
        self.pieces.append(piece)
        self.size += piece[0].shape[0]

    def arrays(self) -> tuple[np.ndarray, ...]:
        if len(self.pieces) == 1:
            return self.pieces[0]
        return tuple(np.concatenate(parts) for parts in zip(*self.pieces))


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + c) for s, c in zip(starts, counts)])``, vectorized."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(counts)
    shift = np.repeat(starts - (ends - counts), counts)
    return shift + np.arange(total, dtype=np.int64)


def replay_records(
    pipeline: Pipeline,
    records: Iterable[Any],
    *,
    jit: bool = True,
    per_message_reason: str = "per-message path asked for",
    keep_predictions: bool = False,
    progress: Callable[[Any, int], None] | None = None,
    chunk: int = CHUNK,
) -> dict[str, Any]:
    """Run ``records`` (``LogRecord``-like: ``topic``, ``payload``, ``received_at``;
    or the :class:`~firmware_bridge.wire.logfile.LogFiles` of ``iter_logs``, whose files
    are then read in bulk) through ``pipeline`` and return, per stream, which path
    ran it (``"jitted"`` or ``"per-message: why"``) and, with ``keep_predictions``,
    its predictions, scores and queries as the prediction messages carried them;
    ``records``: how many records were read. A stream is run every ``chunk`` of its
    messages or so, so memory does not grow with the log.

    ``pipeline`` ends as :meth:`Pipeline.handle` over the same records would leave
    it. ``jit=False`` runs every stream on the per-message path (the summary says
``per_message_reason``). ``progress(record,
    count)`` is called every 4096 records or so.
    """
    why_not = None if jit else per_message_reason
    if why_not is None:
        why_not = jitted_path(pipeline)
    outputs: dict[str, dict[str, list]] = {}
    if why_not is not None:
        count = 0
        for record in records:
            out = pipeline.handle(record.topic, record.payload, record.received_at)
            if keep_predictions:
                _keep_outputs(outputs, out, pipeline)
            count += 1
            if progress is not None and count % 4096 == 0:
                progress(record, count)
        return {"paths": dict.fromkeys(pipeline.streams, f"per-message: {why_not}"),
                "outputs": outputs, "records": count}

    replay = _BulkReplay(pipeline, keep_predictions, chunk, progress)
    if isinstance(records, LogFiles):
        for path in records.files():
            replay.log_file(path, records.on_error)
    else:
        replay.records(records)
    return replay.finish()


class _BulkReplay:
    """The decoded path of :func:`replay_records`: records in, streams run in chunks."""

    #: records decoded per call (see CHUNK)
    BATCH = CHUNK

    def __init__(self, pipeline: Pipeline, keep: bool, chunk: int, progress) -> None:
        self.pipeline = pipeline
        self.keep_predictions = keep
        self.chunk = chunk
        self.progress = progress
        self.decoder = FastDecoder(pipeline.limits, self._data_stream, pipeline.task)
        self.rows: dict[str, _Rows] = {}
        self.paths: dict[str, str] = {}
        self.outputs: dict[str, dict[str, list]] = {}
        self.count = 0
        self._shown = 0

    def _data_stream(self, topic: str) -> str | None:
        # Which stream's data topic this is, if its records may be decoded in bulk
        # (a valid, unreserved stream id); any other topic: the exact path.
        parsed = self.pipeline.topics.parse(topic)
        if parsed is None or parsed[0] != "data":
            return None
        if check_stream_id(parsed[1], self.pipeline.limits, self.pipeline.topics) is not None:
            return None
        return parsed[1]

    # -- input -----------------------------------------------------------------------

    def log_file(self, path: str, on_error) -> None:
        scanned = self.decoder.scan_log(path)
        if scanned is None:  # not a version 2 log the kernel reads: the exact reader
            self.records(read_log(path, on_error=on_error))
            return
        n = scanned.offset.shape[0]
        for a in range(0, n, self.BATCH):
            b = min(a + self.BATCH, n)
            self._decoded(scanned.buf, scanned.topic[a:b], scanned.received_at[a:b],
                          scanned.payload_start[a:b], scanned.payload_len[a:b])
            self._show(path, scanned, b - 1)
        if scanned.stop is not None:
            # The kernel stopped at a record it does not read; the exact reader
            # reads on from there (and reports the damage, if it is one).
            self.records(r for r in read_log(path, on_error=on_error) if r.offset >= scanned.stop)

    def _show(self, path: str, scanned, last: int) -> None:
        if self.progress is not None and self.count - self._shown >= 4096:
            self._shown = self.count
            record = LogRecord(self.decoder.topics.values[scanned.topic[last]],
                               float(scanned.received_at[last]), b"", int(scanned.offset[last]))
            self.progress(record, self.count)

    def records(self, records: Iterable[Any]) -> None:
        batch: list = []
        for record in records:
            batch.append(record)
            if len(batch) == self.BATCH:
                self._objects(batch)
                batch = []
        if batch:
            self._objects(batch)

    def _objects(self, batch: list) -> None:
        decoder = self.decoder
        topics = np.fromiter((decoder.topic_id(r.topic) if type(r.topic) is str else -1
                              for r in batch), dtype=np.int64, count=len(batch))
        received = np.fromiter((r.received_at for r in batch), dtype=np.float64, count=len(batch))
        payloads = [r.payload if type(r.payload) is bytes else b"" for r in batch]
        lengths = np.fromiter(map(len, payloads), dtype=np.int64, count=len(batch))
        starts = np.zeros(len(batch), dtype=np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        buf = np.frombuffer(b"".join(payloads) or b"\0", dtype=np.uint8)
        # records whose topic or payload is not a str/bytes: the exact path
        odd = (topics < 0) | np.fromiter((type(r.payload) is not bytes for r in batch),
                                         dtype=np.bool_, count=len(batch))
        self._decoded(buf, topics, received, starts, lengths, batch, odd)
        if self.progress is not None and self.count - self._shown >= 4096:
            self._shown = self.count
            self.progress(batch[-1], self.count)

    # -- decoded records ----------------------------------------------------------------

    def _decoded(self, buf, topics, received, starts, lengths, objects=None, odd=None) -> None:
        decoder = self.decoder
        safe_topics = np.where(topics < 0, 0, topics)
        on_data = decoder.topic_state[safe_topics] >= 0
        if odd is not None:
            on_data &= ~odd
        decoded = decoder.decode_payloads(buf, (starts, lengths), on_data)
        n = topics.shape[0]
        flagged = np.flatnonzero(decoded.kind == REC_PYTHON).tolist()
        a = 0
        for f in flagged + [n]:
            if f > a:
                self._fast_run(decoded, topics, received, a, f)
            if f < n:
                if objects is not None:
                    record = objects[f]
                    self._exact(record.topic, record.payload, record.received_at)
                else:
                    payload = bytes(buf[starts[f]: starts[f] + lengths[f]])
                    self._exact(decoder.topics.values[topics[f]], payload, float(received[f]))
            a = f + 1
        self.count += n

    def _fast_run(self, decoded, topics, received, a: int, b: int) -> None:
        """Records a..b-1: data messages and batches the kernel read whole."""
        pipeline = self.pipeline
        tally = pipeline.tally
        tally.messages += b - a
        streams = self.decoder.topic_state[topics[a:b]]
        unique, first = np.unique(streams, return_index=True)
        for s in unique[np.argsort(first)].tolist():  # streams in order of first message
            recs = a + (np.flatnonzero(streams == s) if len(unique) > 1 else np.arange(b - a))
            name = self.decoder.streams[s]
            stream = pipeline.stream_for(name)
            if stream is None:  # beyond max_streams: one reject a message, as live
                tally.own_rejects["too_many_streams"] += len(recs) - 1
                continue
            tally.batches += int(np.count_nonzero(decoded.kind[recs] == REC_BATCH))
            counts = decoded.count[recs]
            readings = pairs = None
            if len(unique) == 1:
                # One stream's run of records: the decoder wrote their readings, and
                # those readings' pairs, one after the other, so slices (views) take
                # them without gathering every pair.
                r0, r1 = int(decoded.first[a]), int(decoded.first[b - 1] + decoded.count[b - 1])
                if r1 - r0 == int(counts.sum()) and r1 > r0:
                    p0 = int(decoded.pair_first[r0])
                    p1 = int(decoded.pair_first[r1 - 1] + decoded.pair_count[r1 - 1])
                    if p1 - p0 == int(decoded.pair_count[r0:r1].sum()):
                        readings, pairs = slice(r0, r1), slice(p0, p1)
            if readings is None:
                readings = _ranges(decoded.first[recs], counts)
                pairs = _ranges(decoded.pair_first[readings], decoded.pair_count[readings])
            self._keep(name, (decoded.seq[readings], decoded.ts[readings], decoded.label[readings],
                              np.repeat(received[recs], counts), decoded.pair_count[readings],
                              decoded.pair_name[pairs], decoded.pair_value[pairs],
                              decoded.label_number[readings]))

    def _keep(self, name: str, piece: tuple) -> None:
        target = self.rows.get(name)
        if target is None:
            target = self.rows[name] = _Rows()
        target.add(piece)
        if target.size >= self.chunk:
            self._flush(name, self.rows.pop(name))

    def _keep_readings(self, name: str, readings: list, received_at: float) -> None:
        decoder = self.decoder
        names, values, counts = [], [], []
        for reading in readings:
            counts.append(len(reading[2]))
            for channel, value in reading[2].items():
                names.append(decoder.name_id(channel))
                values.append(value)
        self._keep(name, (
            np.array([r[1] for r in readings], dtype=np.int64),
            np.array([r[0] for r in readings], dtype=np.float64),
            np.array([-1 if r[3] is None else decoder.label_id(r[3]) for r in readings], dtype=np.int64),
            np.full(len(readings), received_at, dtype=np.float64),
            np.array(counts, dtype=np.int64),
            np.array(names, dtype=np.int64),
            np.array(values, dtype=np.float64),
            np.full(len(readings), np.nan),  # labels by id (LABEL_NUMBER is the kernel's)
        ))

    def _exact(self, topic: Any, payload: Any, received_at: float) -> None:
        """A record the kernel left alone: the gateway's exact path, in order."""
        pipeline = self.pipeline
        message = parse_message(topic, payload, pipeline.topics, pipeline.limits, pipeline.json_fields,
                                pipeline.task)
        tally = pipeline.tally
        if isinstance(message, DataMessage):
            tally.messages += 1
            if message.non_finite:
                tally.rejects.count(message)
            stream = pipeline.stream_for(message.stream)
            if stream is None:  # beyond max_streams: counted
                return
            if message.seq < 0 or message.ts != message.ts:
                # A JSON sensor object without "seq" or "ts": numbered from the stream's
                # last seq as it stands, so the readings kept so far run first and this
                # one runs message by message.
                name = message.stream
                if name in self.rows:
                    self._flush(name, self.rows.pop(name))
                seq = stream.last_seq + 1 if message.seq < 0 else message.seq
                ts = received_at if message.ts != message.ts else message.ts
                result = pipeline.answer(stream, (ts, seq, message.channels, message.y), received_at)
                if self.keep_predictions:
                    _keep_outputs(self.outputs, result, pipeline)
                self.paths[name] = "per-message: JSON messages without seq or ts"
                return
            self._keep_readings(message.stream, [(message.ts, message.seq, message.channels, message.y)],
                                received_at)
        elif isinstance(message, DataBatch):
            tally.messages += 1
            tally.count_batch_rejects(message, topic)
            if not message.readings or pipeline.stream_for(message.stream) is None:
                return
            tally.batches += 1  # every reading of a batch is answered (one message)
            self._keep_readings(message.stream, [(r.ts, r.seq, r.channels, r.y) for r in message.readings],
                                received_at)
        else:
            # Label answers and rejects: the pipeline's own handling (it parses again;
            # these are the rare messages).
            pipeline.handle(topic, payload, received_at)

    # -- running a stream ------------------------------------------------------------

    def finish(self) -> dict[str, Any]:
        for name, rows in list(self.rows.items()):
            self._flush(name, rows)
        self.rows.clear()
        return {"paths": self.paths, "outputs": self.outputs, "records": self.count}

    def _flush(self, name: str, rows: _Rows) -> None:
        """Run one stream's kept messages: jitted if their channel orders agree."""
        from ..pipeline.kernels.rows import column_order

        arrays = rows.arrays()
        stream = self.pipeline.stream_state(name)
        columns = column_order(arrays[5], arrays[4], len(self.decoder.names))
        if not rows_fit(stream, arrays[2], self.decoder):
            kept = run_per_message(self.pipeline, stream, arrays, self.decoder, self.keep_predictions)
            path = "per-message: more distinct labels than its metrics hold"
        elif columns.shape[0] or not arrays[5].shape[0]:
            kept = run_jitted(self.pipeline, stream, arrays, columns, self.decoder, self.keep_predictions)
            path = "jitted"
        else:
            kept = run_per_message(self.pipeline, stream, arrays, self.decoder, self.keep_predictions)
            path = "per-message: its messages list channels in differing orders"
        if self.paths.get(name, "jitted") == "jitted":  # one chunk per message: the stream says so
            self.paths[name] = path
        if kept is not None and self.keep_predictions:
            so_far = self.outputs.setdefault(name, {"y": [], "score": [], "ask": []})
            for key in so_far:
                so_far[key].extend(kept[key])


def _keep_outputs(outputs: dict, out: list, pipeline: Pipeline) -> None:
    import msgpack

    for o in out:
        if o.topic.endswith("/prediction"):
            stream = pipeline.topics.parse(o.topic)[1]
            p = msgpack.unpackb(o.payload)
            kept = outputs.setdefault(stream, {"y": [], "score": [], "ask": []})
            for one in p["predictions"] if "predictions" in p else [p]:
                kept["y"].append(one["y"])
                kept["score"].append(one["score"])
                kept["ask"].append(one["query"])
