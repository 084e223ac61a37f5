"""A stream's decoded rows through its learner's jitted loop, with the pipeline's rules.

Both users hold a stream's readings as arrays (:class:`~firmware_bridge.wire.bulk_decode.FastDecoder`
ids: per reading seq, ts, label id, receive time and channel count; per channel
its name id and value): offline replay (:mod:`firmware_bridge.offline.replay`, a
chunk of a log) and the gateway's batches (:mod:`firmware_bridge.pipeline.batches`).
:func:`run_pass` (and :func:`run_jitted`, its form for replay) hands them to the
learner's ``run_rows`` (the ``"log_loop"`` / ``"batch_pass"`` capabilities) and
leaves the stream as ``Pipeline.predict`` reading by reading would: learner state,
counters, sequence accounting, label sides, metrics, and under the ``request``
policy the label requests and the label journal's records. It works on the
pipeline's public parts: its tally, label table, policy and journal hooks.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from edgelearn.learners.arrays import RowsPass
from edgelearn.learners.base import BinaryTargets

from ..wire import encode_label_request
from ..wire.bulk_decode import LABEL_NUMBER, FastDecoder
from . import multiclass_rows, task_rows
from .kernels.rows import first_rows, rows_matrix, sequence
from .tally import Outbound

# The pipeline is passed in (pipeline.core imports this module through batches.py);
# this module reads only its public parts.
Pipeline = Any

__all__ = ["BatchPass", "rows_fit", "run_jitted", "run_pass", "run_per_message"]


def _readings(arrays: tuple, decoder: FastDecoder) -> list[tuple]:
    """A stream's rows as the pipeline's reading tuples ``(ts, seq, channels, y)``."""
    seq, ts, label, _, count, name, value, number = arrays
    names, labels = decoder.names.values, decoder.labels.values
    out = []
    p = 0
    for i, k in enumerate(count.tolist()):
        channels = {names[n]: v for n, v in zip(name[p:p + k].tolist(), value[p:p + k].tolist())}
        p += k
        code = int(label[i])
        y = labels[code] if code >= 0 else float(number[i]) if code == LABEL_NUMBER else None
        out.append((float(ts[i]), int(seq[i]), channels, y))
    return out


def run_per_message(pipeline: Pipeline, stream: Any, arrays: tuple, decoder: FastDecoder,
                    keep: bool) -> dict | None:
    """``stream``'s rows one reading at a time through ``pipeline.predict``."""
    kept: dict = {"y": [], "score": [], "ask": []}
    for reading, received_at in zip(_readings(arrays, decoder), arrays[3].tolist()):
        # one reading at a time: a batch's readings give the same predictions and
        # counts one by one (only the prediction message is shared)
        result = pipeline.predict(stream, reading, received_at)
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
    ids, first = first_rows(label, len(decoder.labels))
    if not ids.shape[0]:
        return codes, truth, labels, side_labels
    rows = np.flatnonzero(label >= 0)
    local = np.full(len(decoder.labels), -1.0)
    side = np.zeros(len(decoder.labels), dtype=np.int8)
    unusable = np.zeros(len(decoder.labels), dtype=np.bool_)
    for ident, row in zip(ids.tolist(), first.tolist()):
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
        pipeline.tally.unusable(stream, decoder.labels.values[label[bad[-1]]],
                                "not one of the stream's two labels", count=int(bad.shape[0]))
    return codes, truth, labels, side_labels


class BatchPass(NamedTuple):
    """What :func:`run_pass` gives per row: the learner's sign (``pred``, +1/-1),
    ``margin``, whether it asked (``asked``), and its prediction in the user's
    labels, ``labels[label_index[row]]``; and the label requests it issued
    (:class:`Outbound`, under the ``request`` policy), in row order, with their
    rows (``request_rows``). A regression or anomaly stream's rows also have the
    task's own outputs (``outputs``, per row a dict: an interval, the channels behind
    an alarm), which its prediction message carries; None for a classifier."""

    pred: np.ndarray
    margin: np.ndarray
    asked: np.ndarray
    label_index: np.ndarray
    labels: list
    requests: list
    request_rows: list
    outputs: list | None = None


def rows_fit(stream: Any, label: np.ndarray, decoder: FastDecoder) -> bool:
    """Whether :func:`run_pass` follows the per-message path on rows with these label
    ids exactly (a multiclass stream's metrics must have room for every label:
    :func:`~firmware_bridge.pipeline.multiclass_rows.multiclass_rows_fit`)."""
    return (stream.learner.task != "multiclass"
            or multiclass_rows.multiclass_rows_fit(stream, label, decoder))


def run_jitted(pipeline: Pipeline, stream: Any, arrays: tuple, columns: np.ndarray,
               decoder: FastDecoder, keep: bool) -> dict | None:
    """:func:`run_pass`; with ``keep``, return per row the prediction (``"y"``, the
    user's label), ``"score"`` and ``"ask"``, and the label requests issued
    (``"requests"``)."""
    result = run_pass(pipeline, stream, arrays, columns, decoder)
    if not keep:
        return None
    labels = result.labels
    return {"y": [labels[i] for i in result.label_index.tolist()],
            "score": result.margin.tolist(), "ask": result.asked.tolist(),
            "requests": result.requests}


def run_pass(pipeline: Pipeline, stream: Any, arrays: tuple, columns: np.ndarray,
             decoder: FastDecoder) -> BatchPass:
    """Run ``stream``'s rows (``arrays``, channels in the order ``columns``) through
    its learner's jitted loop. A label journal hears of every lesson learned, after
    the pass: ``on_learn_batch`` once, or else ``on_learn`` per lesson."""
    seqs, _, label, received, count, pair_name, pair_value, number = arrays
    name = stream.name
    model = stream.learner
    tally = pipeline.tally
    n = seqs.shape[0]
    names = [decoder.names.values[c] for c in columns.tolist()]
    position = np.full(len(decoder.names), -1, dtype=np.int64)
    position[columns] = np.arange(columns.shape[0])
    X = rows_matrix(count, pair_name, pair_value, position, len(names))

    task = model.task
    multiclass = task == "multiclass"
    valued = task in task_rows.TASKS  # regression, anomaly: answers are numbers or verdicts
    if multiclass or valued:
        codes, labels = multiclass_rows.label_codes(pipeline, stream, label, decoder)
        if valued:  # a regression stream's numbers, each its own label
            codes, labels = task_rows.number_codes(label, number, codes, labels)
    else:
        codes, truth, labels, side_labels = _label_sides(pipeline, stream, label, decoder)
    active_learning = pipeline.label_policy == "from_data"
    requesting = pipeline.label_policy == "request"
    journaling = pipeline.on_learn is not None or pipeline.on_learn_batch is not None
    # Label requests and the journal keep the features the learner saw.
    result = model.run_rows(RowsPass(X, names, codes, labels, active_learning,
                                     requesting or journaling))
    pred, margins, asked = result.pred, result.margins, result.asked
    feat_k, feat_slots, feat_z = result.feat_k, result.feat_slots, result.feat_z
    target_states = result.label_states

    # Counters, as _handle_data keeps them.
    n_asked = int(asked.sum())
    learn_rows = (asked if active_learning else np.ones(n, dtype=bool)) & (codes >= 0)
    if multiclass:  # a new label met when the learner's classes were full is not learned
        learn_rows &= result.usable
    n_learned = int(learn_rows.sum())
    tally.data += n
    tally.predictions += n
    tally.asked += n_asked
    tally.learned += n_learned
    stream.data += n
    stream.asked += n_asked
    stream.learned += n_learned
    if journaling and n_learned:  # after the counts, so a checkpoint it makes holds them with the lessons
        _journal_lessons(pipeline, name, stream.learned - n_learned, np.flatnonzero(learn_rows),
                         codes, labels, feat_k, feat_slots, feat_z, result.z_width)
    if n:
        stream.last_received_at = float(received[-1])
    # Sequence accounting, as StreamState.note_seq does it reading by reading.
    moved = np.zeros(4, dtype=np.int64)
    last, window = sequence(seqs, stream.last_seq, np.uint64(stream.seq_window), moved)
    stream.last_seq, stream.seq_window = int(last), int(window)
    if moved.any():
        stream.add_sequence_counts(moved.tolist(), tally)

    # Scoring, as the task's rules do it, run by run of rows with the same labels.
    outputs = None
    if valued:
        task_rows.score_rows(stream, codes, labels, result)
        label_index, user_labels = task_rows.user_predictions(task, result)
        outputs = task_rows.row_outputs(task, result, names)
    elif multiclass:
        label_index, user_labels = multiclass_rows.user_predictions(pred, model.targets)
        multiclass_rows.score_rows(pipeline, stream, codes, labels, result.usable, label_index,
                                   user_labels)
    else:
        _score_rows(stream, name, pred, truth, side_labels, target_states)
        label_index, user_labels = _user_predictions(pred, target_states, name)
    if n:
        stream.last_label = user_labels[int(label_index[-1])]
        stream.last_output = {"seq": int(seqs[-1]), "ts": float(arrays[1][-1]),
                              "y": stream.last_label, "score": float(margins[-1]),
                              "query": bool(asked[-1])}
        if outputs is not None:
            stream.last_output.update(outputs[-1])
    requests = []
    request_rows = np.flatnonzero(asked & (label == -1)).tolist() if requesting else []
    if requesting:
        # Pipeline.predict's label requests: a row without a label that asked
        for i in request_rows:
            k = int(feat_k[i])
            seq, ts = int(seqs[i]), float(arrays[1][i])
            features = (feat_slots[i, :k].copy(), feat_z[i, :k * result.z_width].copy())
            predicted = user_labels[int(label_index[i])]
            req = pipeline.labels.issue(name, seq, features, predicted)
            requests.append(Outbound(
                stream.label_request_topic,
                encode_label_request(req, seq, ts, predicted, float(margins[i]),
                                     pipeline.labels.ttl_seconds, None,
                                     None if outputs is None else outputs[i]),
                pipeline.label_request_qos, False))
        tally.label_requests += len(requests)
        stream.label_requests += len(requests)
    return BatchPass(pred, margins, asked, label_index, user_labels, requests, request_rows, outputs)


def _journal_lessons(pipeline: Pipeline, name: str, learned_before: int, rows: np.ndarray,
                     codes: np.ndarray, labels: list, feat_k: np.ndarray,
                     feat_slots: np.ndarray, feat_z: np.ndarray, z_width: int = 1) -> None:
    """Tell the label journal of the lessons the pass learned (``rows``, in order),
    numbered from the stream's ``learned`` count before the pass, as
    ``Pipeline._learn`` does reading by reading: all at once (``on_learn_batch``,
    one journal record), or each (``on_learn``). They are told after the pass, not
    before each update, and that loses nothing: the gateway acks the batch only after
    its outputs, which come after this, and a crash before then loses the learner's
    memory of the batch too. If the stream's channel map moved during the pass, the
    journal checkpoints the stream first, with every lesson of the batch in it, and a
    replay skips them as already learned. A lesson that keeps ``z_width`` numbers
    of ``feat_z`` per channel (an anomaly detector's evidence rows: ``z_width`` > 1)
    goes to ``on_learn``, as reading by reading: a batch record holds one number of
    ``z`` per channel."""
    if pipeline.on_learn_batch is not None and z_width == 1:
        k = feat_k[rows]
        kept = np.arange(feat_slots.shape[1]) < k[:, None]  # each lesson's first k features
        pipeline.on_learn_batch(name, learned_before, k, feat_slots[rows][kept],
                                feat_z[rows][kept], codes[rows].astype(np.int32), labels)
        return
    if pipeline.on_learn is None:
        return
    for j, i in enumerate(rows.tolist()):
        k = int(feat_k[i])
        pipeline.on_learn(name, learned_before + j, feat_slots[i, :k].copy(),
                          feat_z[i, :k * z_width].copy(), labels[int(codes[i])])


def _targets_at(states: list[tuple[int, list]], row: int, name: str) -> BinaryTargets:
    # The learner's labels when it predicted ``row`` (a label learned at row r is
    # known from row r + 1).
    state = [s for r, s in states if r < row][-1]
    targets = BinaryTargets(name)
    targets.load(state)
    return targets


def _score_rows(stream, name: str, pred: np.ndarray, truth: np.ndarray,
                side_labels: list, target_states: list) -> None:
    scored = truth > 0
    if not scored.any():
        return
    n = pred.shape[0]
    bounds = sorted({0, n, *(r for r, *_ in side_labels[1:]), *(r + 1 for r, _ in target_states[1:])})
    is_true = truth == 2
    positive = pred == 1
    guess = np.empty(n, dtype=np.bool_)
    for begin, end in zip(bounds, bounds[1:]):
        if begin >= end:
            continue
        _, known, sides = [s for s in side_labels if s[0] <= begin][-1]
        checker = BinaryTargets(name)
        checker.load(sides)
        targets = _targets_at(target_states, begin, name)
        rows = slice(begin, end)
        verdicts = []
        for side in (True, False):  # what a prediction on each side says of the truth
            label = targets.decode(side) if targets.labels else targets.neutral()
            # not one of the stream's labels: wrong whatever the truth
            verdicts.append(checker.sign(label) > 0 if label in known else ~is_true[rows])
        guess[rows] = np.where(positive[rows], verdicts[0], verdicts[1])
    stream.metrics.update_many(is_true[scored], guess[scored])


def _user_predictions(pred: np.ndarray, states: list[tuple[int, list]],
                      name: str) -> tuple[np.ndarray, list]:
    """Each row's prediction in the user's labels, as ``labels[index[row]]``: the
    learner's labels as they were when it predicted (a label learned at row r is
    known from row r + 1)."""
    n = pred.shape[0]
    index = np.empty(n, dtype=np.int64)
    labels: list = []
    bounds = [row + 1 for row, _ in states[1:]] + [n]
    begin = 0
    for (_, state), end in zip(states, bounds):
        targets = BinaryTargets(name)
        targets.load(state)
        if not targets.labels:
            index[begin:end] = len(labels)
            labels.append(targets.neutral())
        else:
            positive = len(labels)
            labels += (targets.decode(True), targets.decode(False))
            index[begin:end] = np.where(pred[begin:end] > 0, positive, positive + 1)
        begin = end
    return index, labels
