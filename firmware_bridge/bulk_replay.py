"""Replay recorded logs with the learner's loop jitted: decode in bulk, then arrays.

:class:`~firmware_bridge.pipeline.Pipeline` handles one message at a time in
Python, as the live gateway must. Offline, nothing waits for an answer, so a
log can be decoded first and each stream's readings run through one jitted
loop. This module does that and ends with the *same pipeline object* the
per-message path would leave behind: the same counters, rejects, prequential
metrics, stream status and learner state (``Pipeline.to_state``), bit for bit
(``tests/test_bulk_replay.py`` holds the two paths equal).

How:

1. the records are decoded in bulk by :class:`~firmware_bridge.fast_decode.FastDecoder`
   (a log file's records CRC-checked and split in numba, data messages and
   batches read straight into arrays, channel names and labels as ids); a
   record the decoder is not sure of goes through the gateway's own
   ``parse_message`` (and label answers and rejects through ``Pipeline.handle``),
   in order, so validation, limits and reject counts are the gateway's; a data
   message is kept for its stream (``max_streams`` applies in order of first
   message, as live);
2. each stream whose learner has a jitted loop becomes an array (channels to
   columns in an order every message follows, NaN where a channel is absent) and
   a label code per row, and runs :func:`edgelearn.kernels.log_replay.paacds_binary_log_loop`;
3. the stream's counters, sequence accounting and metrics are then filled in from
   the loop's predictions and queries, with the pipeline's own rules, per label
   and per run of rows rather than per row.

Which streams take the jitted loop (:data:`JITTED_KINDS`): binary PAACDS under
the ``from_data`` and ``all`` label policies. Every other learner kind, and a
stream whose messages list their channels in differing orders (the learner's
sums run in message order, so an array's column order would change the last
bits), runs on the per-message path, and the result says so per stream.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from edgelearn.learners.base import BinaryTargets

from .fast_decode import REC_BATCH, REC_PYTHON, FastDecoder
from .pipeline import SEQUENCE_COUNTERS, Pipeline
from .protocol import DataBatch, DataMessage, check_stream_id, parse_message
from .recorder import LogFiles, LogRecord, read_log

__all__ = ["JITTED_KINDS", "jitted_path", "replay_records"]

#: Learner kinds with a jitted log loop, and the condition under which it is used.
JITTED_KINDS = {"paacds": "binary (n_classes=2), label policy from_data or all"}

#: Messages of one stream kept before they are run (memory stays bounded over
#: a month of logs; the learner's state carries over from chunk to chunk).
CHUNK = 65_536

#: The label policies under which no label request is ever issued, so a stream's
#: learning depends on its own messages only.
_OFFLINE_POLICIES = ("from_data", "all")


def jitted_path(pipeline: Pipeline) -> str | None:
    """Why ``pipeline``'s streams cannot take the jitted loop, or None if they can."""
    if pipeline.learner_kind not in JITTED_KINDS:
        return f"{pipeline.learner_kind} has no jitted log loop"
    if pipeline.label_policy not in _OFFLINE_POLICIES:
        return f"label policy {pipeline.label_policy!r} answers labels message by message"
    if pipeline.learner_params.get("n_classes", 2) != 2:
        return "multiclass PAACDS has no jitted log loop yet"
    return None


class _Rows:
    """One stream's accepted readings, kept as pieces of arrays: per reading seq,
    ts, label id (-1: none), receive time and channel count; per channel its name
    id and value (ids of the decoder's tables)."""

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
    keep_predictions: bool = False,
    progress: Callable[[Any, int], None] | None = None,
    chunk: int = CHUNK,
) -> dict[str, Any]:
    """Run ``records`` (``LogRecord``-like: ``topic``, ``payload``, ``received_at``;
    or the :class:`~firmware_bridge.recorder.LogFiles` of ``iter_logs``, whose files
    are then read in bulk) through ``pipeline`` and return, per stream, which path
    ran it (``"jitted"`` or ``"per-message: why"``) and, with ``keep_predictions``,
    its predictions, scores and queries as the prediction messages carried them;
    ``records``: how many records were read. A stream is run every ``chunk`` of its
    messages or so, so memory does not grow with the log.

    ``pipeline`` ends as :meth:`Pipeline.handle` over the same records would leave
    it. ``jit=False`` runs every stream on the per-message path. ``progress(record,
    count)`` is called every 4096 records or so.
    """
    why_not = None if jit else "per-message path asked for"
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

    #: records decoded per call when they come as Python objects
    BATCH = 16_384

    def __init__(self, pipeline: Pipeline, keep: bool, chunk: int, progress) -> None:
        self.pipeline = pipeline
        self.keep_predictions = keep
        self.chunk = chunk
        self.progress = progress
        self.decoder = FastDecoder(pipeline.limits, self._data_stream)
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
        pipeline._messages += b - a
        streams = self.decoder.topic_state[topics[a:b]]
        unique, first = np.unique(streams, return_index=True)
        for s in unique[np.argsort(first)].tolist():  # streams in order of first message
            recs = a + (np.flatnonzero(streams == s) if len(unique) > 1 else np.arange(b - a))
            name = self.decoder.streams[s]
            stream = pipeline._stream(name)
            if stream is None:  # beyond max_streams: one reject a message, as live
                pipeline._own_rejects["too_many_streams"] += len(recs) - 1
                continue
            pipeline._batches += int(np.count_nonzero(decoded.kind[recs] == REC_BATCH))
            counts = decoded.count[recs]
            readings = _ranges(decoded.first[recs], counts)
            pairs = _ranges(decoded.pair_first[readings], decoded.pair_count[readings])
            self._keep(name, (decoded.seq[readings], decoded.ts[readings], decoded.label[readings],
                              np.repeat(received[recs], counts), decoded.pair_count[readings],
                              decoded.pair_name[pairs], decoded.pair_value[pairs]))

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
        ))

    def _exact(self, topic: Any, payload: Any, received_at: float) -> None:
        """A record the kernel left alone: the gateway's exact path, in order."""
        pipeline = self.pipeline
        message = parse_message(topic, payload, pipeline.topics, pipeline.limits, pipeline.json_fields)
        if isinstance(message, DataMessage):
            pipeline._messages += 1
            if message.non_finite:
                pipeline._rejects.count(message)
            stream = pipeline._stream(message.stream)
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
                result = pipeline._answer(stream, (ts, seq, message.channels, message.y), received_at)
                if self.keep_predictions:
                    _keep_outputs(self.outputs, result, pipeline)
                self.paths[name] = "per-message: JSON messages without seq or ts"
                return
            self._keep_readings(message.stream, [(message.ts, message.seq, message.channels, message.y)],
                                received_at)
        elif isinstance(message, DataBatch):
            pipeline._messages += 1
            pipeline._rejects.count(message)
            for index, reject in message.rejects:
                pipeline._log.warning(reject.reason, "%s (reading %d of a batch on topic %.80r)",
                                      reject.detail, index, topic)
            if not message.readings or pipeline._stream(message.stream) is None:
                return
            pipeline._batches += 1  # every reading of a batch is answered (one message)
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
        from .kernels.replay_rows import column_order

        arrays = rows.arrays()
        columns = column_order(arrays[5], arrays[4], len(self.decoder.names))
        if columns.shape[0] or not arrays[5].shape[0]:
            kept = _run_jitted(self.pipeline, name, arrays, columns, self.decoder, self.keep_predictions)
            path = "jitted"
        else:
            kept = _run_per_message(self.pipeline, name, arrays, self.decoder, self.keep_predictions)
            path = "per-message: its messages list channels in differing orders"
        if self.paths.get(name, "jitted") == "jitted":  # one chunk per message: the stream says so
            self.paths[name] = path
        if kept is not None:
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


def _readings(arrays: tuple, decoder: FastDecoder) -> list[tuple]:
    """A stream's rows as the pipeline's reading tuples ``(ts, seq, channels, y)``."""
    seq, ts, label, _, count, name, value = arrays
    names, labels = decoder.names.values, decoder.labels.values
    out = []
    p = 0
    for i, k in enumerate(count.tolist()):
        channels = {names[n]: v for n, v in zip(name[p:p + k].tolist(), value[p:p + k].tolist())}
        p += k
        code = int(label[i])
        out.append((float(ts[i]), int(seq[i]), channels, None if code < 0 else labels[code]))
    return out


def _run_per_message(pipeline: Pipeline, name: str, arrays: tuple, decoder: FastDecoder,
                     keep: bool) -> dict | None:
    kept: dict = {"y": [], "score": [], "ask": []}
    stream = pipeline._streams[name]
    for reading, received_at in zip(_readings(arrays, decoder), arrays[3].tolist()):
        # one reading at a time: a batch's readings give the same predictions and
        # counts one by one (only the prediction message is shared)
        result = pipeline._predict(stream, reading, received_at)
        if keep and result is not None:
            kept["y"].append(result[0]["y"])
            kept["score"].append(result[0]["score"])
            kept["ask"].append(result[0]["query"])
    return kept if keep else None


def _label_sides(pipeline: Pipeline, stream, label: np.ndarray, decoder: FastDecoder):
    """The pipeline's label rule (``Pipeline._score`` with the stream's record of its
    two labels), decided once per distinct label at its first row: a label the
    stream's sides take there stays taken, one they refuse stays refused (sides only
    fill up). Returns per row the code the loop learns (-1: none), the truth (0: no
    label scored, 1/2: negative/positive), the labels by code, and the sides'
    states ``(from row, labels, state)``."""
    sides = stream.sides
    n = label.shape[0]
    codes = np.full(n, -1.0)
    truth = np.zeros(n, dtype=np.int8)
    side_labels: list[tuple[int, list, list]] = [(-1, sides.labels, sides.to_state())]
    labels: list = []
    rows = np.flatnonzero(label >= 0)
    if not rows.shape[0]:
        return codes, truth, labels, side_labels
    ids, first = np.unique(label[rows], return_index=True)
    order = np.argsort(first)
    local = np.full(len(decoder.labels), -1.0)
    side = np.zeros(len(decoder.labels), dtype=np.int8)
    unusable = np.zeros(len(decoder.labels), dtype=np.bool_)
    for ident, row in zip(ids[order].tolist(), rows[first[order]].tolist()):
        y = decoder.labels.values[ident]
        if isinstance(y, dict) or not sides.accepts(y):
            unusable[ident] = True
            continue
        before = len(sides.labels)
        positive = sides.sign(y) > 0
        if len(sides.labels) != before:
            side_labels.append((row, sides.labels, sides.to_state()))
        side[ident] = 2 if positive else 1
        local[ident] = len(labels)
        labels.append(y)
    codes[rows] = local[label[rows]]
    truth[rows] = side[label[rows]]
    bad = rows[unusable[label[rows]]]
    if bad.shape[0]:
        stream.unusable_labels += int(bad.shape[0]) - 1
        pipeline._own_rejects["unusable_label"] += int(bad.shape[0]) - 1
        pipeline._unusable(stream, decoder.labels.values[label[bad[-1]]],
                           "not one of the stream's two labels")
    return codes, truth, labels, side_labels


def _run_jitted(pipeline: Pipeline, name: str, arrays: tuple, columns: np.ndarray,
                decoder: FastDecoder, keep: bool) -> dict | None:
    from edgelearn.channels import name_key
    from edgelearn.kernels import log_replay as loop
    from edgelearn.learners.paacds import _K0

    from .kernels.replay_rows import sequence

    seqs, _, label, received, count, pair_name, pair_value = arrays
    stream = pipeline._streams[name]
    model = stream.learner
    n = seqs.shape[0]
    names = [decoder.names.values[c] for c in columns.tolist()]
    position = np.full(len(decoder.names), -1, dtype=np.int64)
    position[columns] = np.arange(columns.shape[0])
    X = np.full((n, len(names)), np.nan)
    X[np.repeat(np.arange(n), count), position[pair_name]] = pair_value

    codes, truth, labels, side_labels = _label_sides(pipeline, stream, label, decoder)
    code_sign = np.zeros(max(len(labels), 1))

    space = model.channels
    col_slot = np.array([space.slot_of(c) for c in names], dtype=np.int64)
    slot_col = np.full(space.capacity, -1, dtype=np.int64)
    for j, s in enumerate(col_slot):
        if s >= 0:
            slot_col[s] = j
    changed = np.zeros(space.capacity, dtype=np.int8)
    counters = np.array([space.t, space.n_assigned, space.n_ignored, space.n_evicted], dtype=np.int64)
    width = max(len(names), 1)
    slots = np.empty(width, dtype=np.int32)
    vals = np.empty(width, dtype=np.float64)
    cap = space.capacity
    xs, zs, hs = np.empty(cap), np.empty(cap), np.empty(cap)
    pred = np.empty(n, dtype=np.int64)
    margins = np.empty(n, dtype=np.float64)
    asked = np.zeros(n, dtype=np.bool_)
    col_key = np.array([name_key(c) for c in names], dtype=np.float64)
    target = 0.0 if model.target_query_rate is None else float(model.target_query_rate)
    active_learning = pipeline.label_policy == "from_data"
    # The learner's labels as its predictions saw them: (from row, targets state).
    target_states: list[tuple[int, list]] = [(-1, model.targets.to_state())]

    start, resume_k, delta = 0, -1, model._current_delta
    while True:
        row, status, delta, k = loop.paacds_binary_log_loop(
            X, codes, code_sign, start, resume_k, active_learning,
            col_slot, slot_col, changed, counters,
            space.count, space.mean, space.var, space.last_seen, space.forget, space.eps,
            space.z_max, space.evict_after,
            model.W, model.b, model.active, model.h, model.h_n, model.h_mean, model.h_var,
            model._h_forget, _K0, model.rng_state, delta, target, float(model.budget_gain),
            float(model.C), model._variant_i, model.learn_intercept, model._lam, float(model.B),
            model._max_weights, model._idx_buf, model._score_buf, col_key, space.name_key,
            model._scores, slots, vals, xs, zs, hs, pred, margins, asked,
        )
        if status == loop.DONE:
            break
        # A label this learner has not learned yet: its targets give it a side, as
        # PAACDS.learn would; then the loop learns the row and goes on.
        code = int(codes[row])
        code_sign[code] = model.targets.sign(labels[code])
        target_states.append((row, model.targets.to_state()))
        start, resume_k = row, k
    model._current_delta = float(delta)
    space.t, space.n_assigned, space.n_ignored, space.n_evicted = (int(v) for v in counters)
    space._assign_names({int(s): names[slot_col[s]] for s in np.flatnonzero(changed)})

    # Counters, as _handle_data keeps them.
    n_asked = int(asked.sum())
    learn_rows = (asked if active_learning else np.ones(n, dtype=bool)) & (codes >= 0)
    n_learned = int(learn_rows.sum())
    pipeline._data += n
    pipeline._predictions += n
    pipeline._asked += n_asked
    pipeline._learned += n_learned
    stream.data += n
    stream.asked += n_asked
    stream.learned += n_learned
    if n:
        stream.last_received_at = float(received[-1])
    # Sequence accounting, as Pipeline._predict does it reading by reading.
    moved = np.zeros(4, dtype=np.int64)
    last, window = sequence(seqs, stream.last_seq, np.uint64(stream.seq_window), moved)
    stream.last_seq, stream.seq_window = int(last), int(window)
    for key, delta_count in zip(SEQUENCE_COUNTERS, moved.tolist()):
        if delta_count:
            setattr(stream, key, getattr(stream, key) + delta_count)
            pipeline._sequence_counts[key] += delta_count
    if moved[0] or moved[3]:
        pipeline._log.warning("seq_gap", "stream %r: seq gaps or restarts in a replayed log "
                              "(%d missing, %d restarts)", name, int(moved[0]), int(moved[3]))

    # Scoring, as Pipeline._score does it, run by run of rows with the same labels.
    _score_rows(stream, name, pred, truth, side_labels, target_states)
    if n:
        stream.last_label = _label_at(target_states, n - 1, int(pred[-1]), name)
    if not keep:
        return None
    predicted = _user_predictions(pred, target_states, name)
    return {"y": predicted, "score": margins.tolist(), "ask": asked.tolist()}


def _targets_at(states: list[tuple[int, list]], row: int, name: str) -> BinaryTargets:
    # The learner's labels when it predicted ``row`` (a label learned at row r is
    # known from row r + 1).
    state = [s for r, s in states if r < row][-1]
    targets = BinaryTargets(name)
    targets.load(state)
    return targets


def _label_at(states: list, row: int, sign: int, name: str) -> Any:
    targets = _targets_at(states, row, name)
    if not targets.labels:
        return targets.neutral()
    return targets.decode(sign > 0)


def _score_rows(stream, name: str, pred: np.ndarray, truth: np.ndarray,
                side_labels: list, target_states: list) -> None:
    scored = truth > 0
    if not scored.any():
        return
    n = pred.shape[0]
    bounds = sorted({0, n, *(r for r, *_ in side_labels[1:]), *(r + 1 for r, _ in target_states[1:])})
    is_true = truth == 2
    guess = np.empty(n, dtype=np.bool_)
    for begin, end in zip(bounds, bounds[1:]):
        if begin >= end:
            continue
        state = [s for s in side_labels if s[0] <= begin][-1]
        known, checker = state[1], BinaryTargets(name)
        checker.load(state[2])
        for sign in (1, -1):
            rows = slice(begin, end)
            label = _label_at(target_states, begin, sign, name)
            mine = pred[rows] == sign if sign > 0 else pred[rows] != 1
            if label in known:
                guess[rows][mine] = checker.sign(label) > 0
            else:
                guess[rows][mine] = ~is_true[rows][mine]
    stream.metrics.update_many(is_true[scored], guess[scored])

def _user_predictions(pred: np.ndarray, states: list[tuple[int, list]], name: str) -> list:
    """Each row's prediction in the user's labels: the learner's labels as they
    were when it predicted (a label learned at row r is known from row r + 1)."""
    out: list = [None] * len(pred)
    signs = pred.tolist()
    bounds = [row + 1 for row, _ in states[1:]] + [len(signs)]
    begin = 0
    for (_, state), end in zip(states, bounds):
        targets = BinaryTargets(name)
        targets.load(state)
        if not targets.labels:
            value = targets.neutral()
            out[begin:end] = [value] * (end - begin)
        else:
            positive, negative = targets.decode(True), targets.decode(False)
            out[begin:end] = [positive if s > 0 else negative for s in signs[begin:end]]
        begin = end
    return out
