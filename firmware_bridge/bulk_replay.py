"""Replay recorded logs with the learner's loop jitted: decode in bulk, then arrays.

:class:`~firmware_bridge.pipeline.Pipeline` handles one message at a time in
Python, as the live gateway must. Offline, nothing waits for an answer, so a
log can be decoded first and each stream's readings run through one jitted
loop. This module does that and ends with the *same pipeline object* the
per-message path would leave behind: the same counters, rejects, prequential
metrics, stream status and learner state (``Pipeline.to_state``), bit for bit
(``tests/test_bulk_replay.py`` holds the two paths equal).

How:

1. every record goes through the gateway's own ``parse_message`` with the
   pipeline's topics and limits, so validation, limits and reject counts are
   the gateway's; label answers and rejects go to ``Pipeline.handle`` as they
   would live; a data message is kept for its stream (``max_streams`` applies
   in order of first message, as live);
2. each stream whose learner has a jitted loop becomes an array (channels to
   columns in order of first appearance, NaN where a channel is absent) and a
   label code per row, and runs :func:`edgelearn.kernels.log_replay.paacds_binary_log_loop`;
3. the stream's counters and metrics are then filled in from the loop's
   predictions and queries, with the pipeline's own scoring rules.

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

from .pipeline import SEQ_WINDOW, Pipeline
from .protocol import DataBatch, DataMessage, parse_message, plain_reading

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
    """One stream's accepted readings ``(ts, seq, channels, y)``, and the orders its
    channels came in."""

    __slots__ = ("readings", "received", "layouts")

    def __init__(self) -> None:
        self.readings: list[tuple] = []
        self.received: list[float] = []
        # each distinct channel list, in order of first appearance
        self.layouts: dict[tuple[str, ...], None] = {}

    def add(self, reading: tuple, received_at: float) -> None:
        self.readings.append(reading)
        self.received.append(received_at)
        self.layouts.setdefault(tuple(reading[2]))

    def columns(self) -> list[str] | None:
        """The channel names in one order that every message's channels follow
        (the learner sums in message order, so columns must keep it), or None if
        the messages disagree. Ties go to the name first seen."""
        first_seen: dict[str, int] = {}
        for layout in self.layouts:
            for name in layout:
                first_seen.setdefault(name, len(first_seen))
        after: dict[str, set[str]] = {name: set() for name in first_seen}
        waiting = dict.fromkeys(first_seen, 0)
        for layout in self.layouts:
            for a, b in zip(layout, layout[1:]):
                if b not in after[a]:
                    after[a].add(b)
                    waiting[b] += 1
        ready = sorted((n for n, w in waiting.items() if w == 0), key=first_seen.get)
        order: list[str] = []
        while ready:
            name = ready.pop(0)
            order.append(name)
            for b in sorted(after[name], key=first_seen.get):
                waiting[b] -= 1
                if waiting[b] == 0:
                    ready.append(b)
            ready.sort(key=first_seen.get)
        return order if len(order) == len(first_seen) else None


def replay_records(
    pipeline: Pipeline,
    records: Iterable[Any],
    *,
    jit: bool = True,
    keep_predictions: bool = False,
    progress: Callable[[Any, int], None] | None = None,
    chunk: int = CHUNK,
) -> dict[str, Any]:
    """Run ``records`` (``LogRecord``-like: ``topic``, ``payload``, ``received_at``)
    through ``pipeline`` and return, per stream, which path ran it (``"jitted"`` or
    ``"per-message: why"``) and, with ``keep_predictions``, its predictions, scores
    and queries as the prediction messages carried them; ``records``: how many
    records were read. A stream is run every ``chunk`` of its messages, so memory
    does not grow with the log.

    ``pipeline`` ends as :meth:`Pipeline.handle` over the same records would leave
    it. ``jit=False`` runs every stream on the per-message path. ``progress(record,
    count)`` is called every 4096 records.
    """
    why_not = None if jit else "per-message path asked for"
    if why_not is None:
        why_not = jitted_path(pipeline)
    paths: dict[str, str] = {}
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

    rows: dict[str, _Rows] = {}
    limits, rejects, names = pipeline.limits, pipeline._rejects, pipeline._names
    data_topics, unpack = pipeline._data_topics, pipeline._unpack
    count = 0

    def keep(stream: str, readings: list, received_at: float) -> None:
        target = rows.get(stream)
        if target is None:
            target = rows[stream] = _Rows()
        for reading in readings:
            target.add(reading, received_at)
        if len(target.readings) >= chunk:
            _flush(pipeline, stream, target, paths, outputs, keep_predictions)
            rows[stream] = _Rows()

    for record in records:
        count += 1
        if progress is not None and count % 4096 == 0:
            progress(record, count)
        topic, payload, received_at = record.topic, record.payload, record.received_at
        # Pipeline.handle's steps, with the learner's work deferred: its fast path for
        # plain readings on a known stream's topic, else parse_message's verdict.
        stream = data_topics.get(topic)
        if stream is not None and type(payload) is bytes and len(payload) <= limits.max_payload_bytes:
            try:
                obj = unpack(payload)
            except Exception:
                obj = None
            if type(obj) is dict:
                reading = plain_reading(obj, limits, names)
                if reading is not None:
                    pipeline._messages += 1
                    keep(stream.name, (reading,), received_at)
                    continue
                if len(obj) == 1 and pipeline._fast_batches:
                    batch = obj.get("readings")
                    if type(batch) is list and 0 < len(batch) <= limits.max_batch_readings:
                        plain = [plain_reading(r, limits, names) for r in batch]
                        if None not in plain:
                            pipeline._messages += 1
                            pipeline._batches += 1
                            keep(stream.name, plain, received_at)
                            continue
        message = parse_message(topic, payload, pipeline.topics, limits, pipeline.json_fields)
        if isinstance(message, DataMessage):
            pipeline._messages += 1
            if message.non_finite:
                rejects.count(message)
            stream = pipeline._stream(message.stream)
            if stream is None:  # beyond max_streams: counted
                continue
            if message.seq < 0 or message.ts != message.ts:
                # A JSON sensor object without "seq" or "ts": numbered from the stream's
                # last seq as it stands, so the readings kept so far run first and this
                # one runs message by message.
                name = message.stream
                if name in rows:
                    _flush(pipeline, name, rows.pop(name), paths, outputs, keep_predictions)
                seq = stream.last_seq + 1 if message.seq < 0 else message.seq
                ts = received_at if message.ts != message.ts else message.ts
                result = pipeline._answer(stream, (ts, seq, message.channels, message.y), received_at)
                if keep_predictions:
                    _keep_outputs(outputs, result, pipeline)
                paths[name] = "per-message: JSON messages without seq or ts"
                continue
            keep(message.stream, ((message.ts, message.seq, message.channels, message.y),), received_at)
        elif isinstance(message, DataBatch):
            pipeline._messages += 1
            rejects.count(message)
            for index, reject in message.rejects:
                pipeline._log.warning(reject.reason, "%s (reading %d of a batch on topic %.80r)",
                                      reject.detail, index, topic)
            if not message.readings or pipeline._stream(message.stream) is None:
                continue
            pipeline._batches += 1  # every reading of a batch is answered (one message)
            keep(message.stream, [(r.ts, r.seq, r.channels, r.y) for r in message.readings], received_at)
        else:
            # Label answers and rejects: the pipeline's own handling (it parses again;
            # these are the rare messages).
            pipeline.handle(topic, payload, received_at)

    for name, stream_rows in rows.items():
        _flush(pipeline, name, stream_rows, paths, outputs, keep_predictions)
    return {"paths": paths, "outputs": outputs, "records": count}


def _flush(pipeline: Pipeline, name: str, rows: _Rows, paths: dict, outputs: dict, keep: bool) -> None:
    """Run one stream's kept messages: jitted if their channel orders agree."""
    columns = rows.columns()
    if columns is not None:
        kept = _run_jitted(pipeline, name, rows, columns, keep)
        path = "jitted"
    else:
        kept = _run_per_message(pipeline, name, rows, keep)
        path = "per-message: its messages list channels in differing orders"
    if paths.get(name, "jitted") == "jitted":  # one chunk per message: the stream says so
        paths[name] = path
    if kept is not None:
        so_far = outputs.setdefault(name, {"y": [], "score": [], "ask": []})
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


def _run_per_message(pipeline: Pipeline, name: str, rows: _Rows, keep: bool) -> dict | None:
    outputs: dict = {}
    stream = pipeline._streams[name]
    for reading, received_at in zip(rows.readings, rows.received):
        # one reading at a time: a batch's readings give the same predictions and
        # counts one by one (only the prediction message is shared)
        result = pipeline._predict(stream, reading, received_at)
        if keep and result is not None:
            kept = outputs.setdefault(name, {"y": [], "score": [], "ask": []})
            kept["y"].append(result[0]["y"])
            kept["score"].append(result[0]["score"])
            kept["ask"].append(result[0]["query"])
    return outputs.get(name, {"y": [], "score": [], "ask": []}) if keep else None


def _run_jitted(pipeline: Pipeline, name: str, rows: _Rows, names: list[str], keep: bool) -> dict | None:
    from edgelearn.channels import name_key
    from edgelearn.kernels import log_replay as loop
    from edgelearn.learners.paacds import _K0

    stream = pipeline._streams[name]
    model = stream.learner
    readings = rows.readings
    n = len(readings)
    X = np.full((n, len(names)), np.nan)
    columns = {c: j for j, c in enumerate(names)}
    for i, reading in enumerate(readings):
        row = X[i]
        for channel, value in reading[2].items():
            row[columns[channel]] = value

    # Labels: which rows carry one the stream can take (the pipeline's rule, with
    # its own label bookkeeping), and a code per distinct label.
    sides = stream.sides  # the pipeline's own record of the stream's two labels
    codes = np.full(n, -1.0)
    code_of: dict = {}
    labels: list = []
    truth = np.zeros(n, dtype=np.int8)  # 0: no label scored, 1/2: negative/positive
    # (from row, sides.labels, sides' state): what the stream's labels were from a row on
    side_labels: list[tuple[int, list, list]] = [(-1, sides.labels, sides.to_state())]
    unusable = 0
    for i, reading in enumerate(readings):
        y = reading[3]
        if y is None:
            continue
        if isinstance(y, dict) or not sides.accepts(y):
            unusable += 1
            pipeline._unusable(stream, y, "not one of the stream's two labels")
            continue
        before = len(sides.labels)
        positive = sides.sign(y) > 0
        if len(sides.labels) != before:
            side_labels.append((i, sides.labels, sides.to_state()))
        truth[i] = 2 if positive else 1
        key = (type(y), y)
        code = code_of.get(key)
        if code is None:
            code = code_of[key] = len(labels)
            labels.append(y)
        codes[i] = code
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
        stream.last_received_at = rows.received[-1]
    # Sequence accounting, reading by reading, as Pipeline._predict does it.
    window_mask = (1 << SEQ_WINDOW) - 1
    for reading in readings:
        seq = reading[1]
        if seq == stream.last_seq + 1:
            stream.last_seq = seq
            stream.seq_window = ((stream.seq_window << 1) | 1) & window_mask
        else:
            pipeline._sequence(stream, seq)

    # Predictions in the user's labels, then scoring, as Pipeline._score does.
    predicted = _user_predictions(pred, target_states, name)
    metrics = stream.metrics
    scored = np.flatnonzero(truth)
    state_index = 0
    known = side_labels[0][1]
    checker = BinaryTargets(name)
    checker.load(side_labels[0][2])
    update = metrics.update
    for i in scored.tolist():
        while state_index + 1 < len(side_labels) and side_labels[state_index + 1][0] <= i:
            state_index += 1
            known = side_labels[state_index][1]
            checker = BinaryTargets(name)
            checker.load(side_labels[state_index][2])
        is_true = truth[i] == 2
        guess_label = predicted[i]
        guess = checker.sign(guess_label) > 0 if guess_label in known else not is_true
        update(bool(is_true), bool(guess))
    if not keep:
        return None
    return {"y": predicted, "score": margins.tolist(), "ask": asked.tolist()}


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
