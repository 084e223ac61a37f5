"""A regression or anomaly stream's rows through its learner's jitted loop: what
:func:`~firmware_bridge.pipeline.rows.run_pass` does for a binary stream with its two
labels, done by those tasks' rules (:class:`~firmware_bridge.pipeline.tasks.RegressionRules`,
:class:`~firmware_bridge.pipeline.tasks.AnomalyRules`): each prediction scored against
its reading's answer, the predictions in the user's terms, and the task's own outputs
of each reading (a regression's interval, the channels behind an alarm) as
``Pipeline.predict`` puts them in the prediction message and the label request."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgelearn.learners.arrays import RowsResult

from ..wire.bulk_decode import LABEL_NUMBER
from .kernels.task_rows import regression_sums

__all__ = ["TASKS", "number_codes", "row_outputs", "score_rows", "user_predictions"]

#: The tasks this module scores.
TASKS = ("regression", "anomaly")


def number_codes(label: np.ndarray, number: np.ndarray, codes: np.ndarray, labels: list
                 ) -> tuple[np.ndarray, list]:
    """``codes`` and ``labels`` (of the rows' label ids) with the rows whose label is a
    number the decoder kept apart (``LABEL_NUMBER``: a regression stream's finite float
    references) added, each its own label."""
    rows = np.flatnonzero(label == LABEL_NUMBER)
    if not rows.shape[0]:
        return codes, labels
    codes = codes.copy()
    codes[rows] = len(labels) + np.arange(rows.shape[0])
    return codes, labels + number[rows].tolist()


def score_rows(stream: Any, codes: np.ndarray, labels: list, result: RowsResult) -> None:
    """Score each row as ``Pipeline.predict`` does: an anomaly stream counts every
    row's alarm (``AnomalyRules.note``) and judges the labelled ones
    (``AnomalyRules.score``); a regression stream scores each labelled row's
    prediction and interval (``RegressionRules.score``). Labels the learner cannot take
    have code -1 (counted as unusable by ``multiclass_rows.label_codes``)."""
    metrics = stream.metrics
    rows = codes >= 0
    if stream.learner.task == "anomaly":
        alarm = result.pred > 0
        metrics.n += int(alarm.shape[0])
        metrics.alarms += int(alarm.sum())
        real = np.array([stream.learner.targets.sign(y) > 0 for y in labels] or [False])
        verdict = real[codes[rows].astype(np.int64)]
        judged = alarm[rows]
        metrics.judged += int(verdict.shape[0])
        metrics.true_alarms += int(np.count_nonzero(judged & verdict))
        metrics.false_alarms += int(np.count_nonzero(judged & ~verdict))
        metrics.missed += int(np.count_nonzero(~judged & verdict))
        return
    if not rows.any():
        return
    values = stream.learner.targets.values(labels)
    extra = result.extra
    sums = np.array([metrics.abs_sum, metrics.sq_sum])
    counts = np.zeros(2, dtype=np.int64)
    regression_sums(values[codes[rows].astype(np.int64)], extra["yhat"][rows], extra["lower"][rows],
                    extra["upper"][rows], sums, counts)
    metrics.n += int(rows.sum())
    metrics.abs_sum, metrics.sq_sum = float(sums[0]), float(sums[1])
    metrics.n_intervals += int(counts[0])
    metrics.n_covered += int(counts[1])


def user_predictions(task: str, result: RowsResult) -> tuple[np.ndarray, list]:
    """Each row's prediction as ``labels[index[row]]``: an anomaly stream's alarm
    (False/True), a regression stream's number."""
    if task == "anomaly":
        return result.pred.astype(np.int64), [False, True]
    yhat = result.extra["yhat"]
    return np.arange(yhat.shape[0], dtype=np.int64), yhat.tolist()


def row_outputs(task: str, result: RowsResult, names: list) -> list[dict]:
    """The task's own outputs of each row, as ``TaskRules.outputs`` gives them of a
    decision's extra: an anomaly stream's ``{"top": (names...)}``; a regression
    stream's ``{"lower", "upper"}`` (both None unless both are finite)."""
    extra = result.extra
    if task == "anomaly":
        return [{"top": tuple(names[j] for j in row if j >= 0)} for row in extra["top"].tolist()]
    lower, upper = extra["lower"], extra["upper"]
    finite = np.isfinite(lower) & np.isfinite(upper)
    return [{"lower": lo, "upper": hi} if ok else {"lower": None, "upper": None}
            for lo, hi, ok in zip(lower.tolist(), upper.tolist(), finite.tolist())]
