"""What a learner's jitted array loop (the ``"array_loop"`` capability,
``replay_arrays``) shares with the others: the labels of an array as the kernel's
numbers, the column map of the channel space around the loop, and the predictions
back in the user's labels under the rule for a learner that knows no label yet
(:mod:`edgelearn.learners.base`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import NamedTuple

import numpy as np


class ArrayReplay(NamedTuple):
    """What ``replay_arrays`` gives: per row the prediction (the user's label) and
    whether the label was asked for, and the seconds spent in the jitted loop."""

    predictions: list
    asked: np.ndarray
    seconds: float


class ArrayLabels(NamedTuple):
    """An array's labels as the kernel reads them: binary ``values`` are +1/-1;
    multiclass ``values`` are codes into ``uniques`` (first appearance), with
    ``code_class`` (code -> the learner's class index, -1: new to it) and
    ``class_code`` (class index -> code, -1: not in the array)."""

    values: np.ndarray
    uniques: list
    code_class: np.ndarray
    class_code: np.ndarray


def binary_signs(targets, y) -> np.ndarray:
    """Binary labels to a float array of +1/-1 through the learner's targets,
    registering its labels in order of first appearance."""
    values = y.tolist() if isinstance(y, np.ndarray) else list(y)
    cache: dict = {}
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        sign = cache.get(v)
        if sign is None:
            sign = cache[v] = targets.sign(v)
        out[i] = sign
    return out


def array_labels(model, y) -> ArrayLabels:
    """The labels ``y`` of an array for ``model``'s kernel (binary or multiclass);
    a multiclass array with more classes than the learner holds is refused."""
    empty = np.zeros(0, dtype=np.int64)
    if model.task == "binary":
        return ArrayLabels(binary_signs(model.targets, y), [], empty, empty)
    codes: dict = {}
    values = np.empty(len(y), dtype=np.float64)
    for i, v in enumerate(y.tolist() if isinstance(y, np.ndarray) else list(y)):
        values[i] = codes.setdefault(v, len(codes))
    uniques = list(codes)
    n_classes = model.targets.capacity
    if len(set(model.targets.labels) | set(uniques)) > n_classes:
        raise ValueError(f"{type(model).__name__} was built with n_classes={n_classes}; "
                         f"these labels hold {len(set(model.targets.labels) | set(uniques))} classes.")
    code_class = np.array([model.targets.find(label) for label in uniques], dtype=np.int64)
    class_code = np.full(n_classes, -1, dtype=np.int64)
    for code, c in enumerate(code_class.tolist()):
        if c >= 0:
            class_code[c] = code
    return ArrayLabels(values, uniques, code_class, class_code)


def run_columns(model, feature_names: list, loop: Callable[[tuple], np.ndarray]) -> float:
    """Run ``loop(column_map)`` between the channel space's ``column_map`` and
    ``take_column_map`` of ``feature_names``; return the seconds the loop took."""
    space = model.channels
    col_slot, slot_col, changed, counters = column_map = space.column_map(feature_names)
    start = time.perf_counter()
    loop(column_map)
    seconds = time.perf_counter() - start
    space.take_column_map(feature_names, slot_col, changed, counters)
    return seconds


def user_predictions(model, pred: np.ndarray, asked: np.ndarray, active: bool,
                     knew_labels: bool) -> list:
    """The kernel's predictions (binary: > 0 is positive; multiclass: class
    indices) in the user's labels; a learner that knew no label predicted the
    neutral answer up to and including the first instance it learned."""
    if model.task == "binary":
        predictions = [model.targets.decode(bool(p > 0)) for p in pred.tolist()]
    else:
        predictions = [model.targets.decode(int(c)) for c in pred.tolist()]
    n = len(predictions)
    if not knew_labels and n:
        learned = np.flatnonzero(asked) if active else np.arange(n)
        first = int(learned[0]) if len(learned) else n - 1
        predictions[: first + 1] = [model.targets.neutral()] * (first + 1)
    return predictions


class RowsPass(NamedTuple):
    """A stream's readings as arrays, for a learner's jitted loop over rows (the
    ``"log_loop"`` and ``"batch_pass"`` capabilities, ``run_rows``): ``X`` is
    (n, d) with NaN for a missing channel, column j the channel ``names[j]``;
    ``codes`` per row the index of its label in ``labels`` (-1: none, or a label
    the stream refused); with ``learn_if_asked`` a row's label is learned only if
    the learner asked for it (a replay's recorded labeller), else every labelled row
    is; with ``keep_features`` each row's ``(slots, z)`` is kept (label requests and
    the label journal need them)."""

    X: np.ndarray
    names: list
    codes: np.ndarray
    labels: list
    learn_if_asked: bool
    keep_features: bool


class RowsResult(NamedTuple):
    """What ``run_rows`` gives per row: ``pred`` (binary: 1 positive, 0 negative;
    multiclass: the class index), ``margins``, ``asked``; the kept features of row i,
    ``feat_slots[i, :feat_k[i]]`` and ``feat_z[i, :feat_k[i]]`` (empty without
    ``keep_features``); and the learner's targets states as its predictions saw
    them, ``(from row, state)`` pairs (a label learned at row r is known from row
    r + 1)."""

    pred: np.ndarray
    margins: np.ndarray
    asked: np.ndarray
    feat_k: np.ndarray
    feat_slots: np.ndarray
    feat_z: np.ndarray
    label_states: list
    #: Multiclass: per row whether its label could be taken (a class the learner
    #: knew, or a new one while it had room); None for a binary learner.
    usable: np.ndarray | None = None
    #: The task's own outputs per row, arrays by name (regression: ``lower`` and
    #: ``upper``; anomaly: ``top``, the columns behind the alarm, -1 padded); None
    #: for a classifier. ``feat_z`` then holds ``z_width`` numbers per channel.
    extra: dict | None = None
    z_width: int = 1


def feature_buffers(n: int, width: int, keep: bool, z_width: int = 1
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ``(feat_k, feat_slots, feat_z)`` arrays a loop over ``n`` rows of at most
    ``width`` channels fills, ``z_width`` numbers per channel in ``feat_z`` (empty
    ones when nothing is kept)."""
    if keep:
        return (np.empty(n, dtype=np.int64), np.empty((n, width), dtype=np.int32),
                np.empty((n, width * z_width), dtype=np.float64))
    return np.empty(0, dtype=np.int64), np.empty((0, 1), dtype=np.int32), np.empty((0, 1))


class RowBuffers(NamedTuple):
    """What a learner's jitted loop over a :class:`RowsPass` fills: ``slots`` and
    ``vals`` for one row's channels, then per row what :class:`RowsResult` gives."""

    slots: np.ndarray
    vals: np.ndarray
    pred: np.ndarray
    margins: np.ndarray
    asked: np.ndarray
    feat_k: np.ndarray
    feat_slots: np.ndarray
    feat_z: np.ndarray

    def result(self, label_states: list, usable: np.ndarray | None = None,
               extra: dict | None = None, z_width: int = 1) -> RowsResult:
        return RowsResult(self.pred, self.margins, self.asked, self.feat_k, self.feat_slots,
                          self.feat_z, label_states, usable, extra, z_width)


def row_buffers(rows: RowsPass, z_width: int = 1) -> RowBuffers:
    """The buffers of a loop over ``rows`` (one row holds at most ``len(rows.names)``
    channels; a decision keeps ``z_width`` numbers per channel)."""
    n, width = rows.X.shape[0], max(len(rows.names), 1)
    return RowBuffers(np.empty(width, dtype=np.int32), np.empty(width, dtype=np.float64),
                      np.empty(n, dtype=np.int64), np.empty(n, dtype=np.float64),
                      np.zeros(n, dtype=np.bool_),
                      *feature_buffers(n, width, rows.keep_features, z_width))


def run_signed(targets, rows: RowsPass, carried: float, run: Callable) -> tuple[float, list]:
    """Drive a binary learner's jitted row loop that stops at a label whose side is
    not known yet (``kernels/log_replay.py``): each label's sign, known ones now
    (``sign`` of a known label changes nothing) and a new one when the loop stops
    at the row that first learns it, where it is registered with ``targets``, as
    ``learn`` would, and the loop goes on from that row.

    ``run(code_sign, start, resume, carried)`` runs the loop from row ``start``
    (``resume``: what the loop returned to finish a stopped row, -1 for none) and
    returns ``(row, done, carried, resume)``; ``carried`` is the learner's query
    level, handed from call to call. Returns the final ``carried`` and the targets'
    states as the predictions saw them (``RowsResult.label_states``)."""
    codes, labels = rows.codes, rows.labels
    code_sign = np.zeros(max(len(labels), 1))
    for code, y in enumerate(labels):
        code_sign[code] = targets.known_sign(y)
    states: list[tuple[int, list]] = [(-1, targets.to_state())]
    start, resume = 0, -1
    while True:
        row, done, carried, resume = run(code_sign, start, resume, carried)
        if done:
            return carried, states
        code = int(codes[row])
        code_sign[code] = targets.sign(labels[code])
        states.append((row, targets.to_state()))
        start = row


def run_indexed(targets, rows: RowsPass, carried: float, run: Callable) -> tuple[float, list]:
    """:func:`run_signed` for a multiclass learner's jitted row loop, which stops at a
    label the learner has not met yet when it is to learn it: the label is then
    registered with ``targets`` (``index``, as ``learn`` would) and the loop goes on
    from that row. ``run(code_class, n_known, start, resume, carried)`` (``code_class``
    per label code the learner's class index, -1: not met) returns ``(row, done,
    carried, resume)``. Returns the final ``carried`` and the targets' states as the
    predictions saw them (``RowsResult.label_states``)."""
    codes, labels = rows.codes, rows.labels
    code_class = np.array([targets.find(y) for y in labels] or [-1], dtype=np.int64)
    states: list[tuple[int, list]] = [(-1, targets.to_state())]
    start, resume = 0, -1
    while True:
        row, done, carried, resume = run(code_class, len(targets.labels), start, resume, carried)
        if done:
            return carried, states
        targets.index(labels[int(codes[row])])
        # every code of a label equal to it (1 and True are one class) is known now
        code_class[:len(labels)] = [targets.find(y) for y in labels]
        states.append((row, targets.to_state()))
        start = row
