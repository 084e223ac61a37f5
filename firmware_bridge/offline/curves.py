"""Learning curves of a replay: per stream, per reading, what the learner got right,
the labels it asked for against its budget, and the channels present (for a
regression or anomaly stream: its task's own columns, below).

:class:`CurveRecorder` watches a :class:`~firmware_bridge.pipeline.Pipeline` during
``edgelearn replay --curve FILE.csv`` / ``--plot FILE.png``: after each message it
reads the stream's counters, prequential metrics and last prediction (nothing on the
pipeline's path changes) and writes one CSV row per reading. The columns of a
classification stream:

``stream, reading, received_at, correct, rolling_accuracy, labels_asked,
labels_learned, label_budget, channels_present``

A regression stream's rows are ``stream, reading, received_at, y, prediction, lower,
upper, asked`` (``y`` the reference that came with the reading, empty without one); an
anomaly stream's ``stream, reading, received_at, score, alarm, asked, y`` (``score`` in
[0, 1], ``alarm`` and ``asked`` 1/0, ``y`` the verdict that came with the reading). A
batch message writes the row of its last reading.

``correct`` is 1/0 for a reading whose recorded label scored the prediction (empty
otherwise); ``rolling_accuracy`` the accuracy over the last ``window`` scored readings
(empty before the first); ``label_budget`` the labels the learner's
``target_query_rate`` allows by then (empty for learners that ask for every label).
For the picture it also keeps the series, thinned to at most ``max_points`` per
stream (every other point is dropped and the stride doubled when full), so a month
of logs draws in bounded memory.

>>> from firmware_bridge.pipeline import Pipeline
>>> from firmware_bridge.wire import encode_data
>>> pipeline = Pipeline("paacds", {"capacity": 8, "target_query_rate": 0.5}, label_policy="from_data")
>>> curves = CurveRecorder(pipeline, window=2)
>>> for seq in range(3):
...     payload = encode_data(float(seq), seq, {"t": float(seq)}, y=seq % 2 == 0)
...     _ = pipeline.handle("sensors/s1/data", payload, float(seq))
...     row = curves.observe("sensors/s1/data", payload, float(seq))
>>> row["reading"], row["label_budget"], row["channels_present"]
(3, 1.5, 1)
"""

from __future__ import annotations

import collections
import csv
import math
from typing import IO, Any

from ..wire import DataBatch, DataMessage, parse_message

__all__ = ["CurveRecorder", "COLUMNS", "TASK_COLUMNS"]

COLUMNS = ("stream", "reading", "received_at", "correct", "rolling_accuracy", "labels_asked",
           "labels_learned", "label_budget", "channels_present")

#: The columns of each task's rows (classification: :data:`COLUMNS`).
TASK_COLUMNS = {
    "regression": ("stream", "reading", "received_at", "y", "prediction", "lower", "upper",
                   "asked"),
    "anomaly": ("stream", "reading", "received_at", "score", "alarm", "asked", "y"),
}


class _Series:
    __slots__ = ("window", "stride", "points", "last_scored", "last_correct", "count")

    def __init__(self, window: int, columns: tuple[str, ...]):
        self.window: collections.deque[int] = collections.deque(maxlen=window)
        self.stride = 1
        self.points: dict[str, list] = {c: [] for c in columns[1:]}
        self.last_scored = 0
        self.last_correct = 0
        self.count = 0


class CurveRecorder:
    """Per-reading curves of a pipeline under replay (see the module docstring).

    ``out`` is a text file for the CSV rows (or ``None``); ``window`` the readings of
    the rolling accuracy; ``max_points`` the most points kept per stream for a plot.
    """

    def __init__(self, pipeline: Any, out: IO[str] | None = None, window: int = 500,
                 max_points: int = 20_000):
        self.pipeline = pipeline
        self.window = int(window)
        self.max_points = int(max_points)
        self.series: dict[str, _Series] = {}
        self.task = pipeline.task
        self.columns = TASK_COLUMNS.get(self.task, COLUMNS)
        self._writer = None
        if out is not None:
            self._writer = csv.writer(out)
            self._writer.writerow(self.columns)

    def budget_rate(self, stream: str) -> float | None:
        """The label budget (fraction) of ``stream``'s learner, or None (asks for all)."""
        rate = self.pipeline.learner(stream).get_params().get("target_query_rate")
        return None if rate is None else float(rate)

    def observe(self, topic: str, payload: bytes, received_at: float) -> dict | None:
        """Record the message the pipeline has just handled; return its row (the last
        reading's for a batch), or None if it was not an accepted reading."""
        pipeline = self.pipeline
        message = parse_message(topic, payload, pipeline.topics, pipeline.limits,
                                pipeline.json_fields, pipeline.task)
        if isinstance(message, DataMessage):
            present, truth = len(message.channels), message.y
        elif isinstance(message, DataBatch) and message.readings:
            present, truth = len(message.readings[-1].channels), message.readings[-1].y
        else:
            return None
        stream = message.stream
        if stream not in pipeline.streams:
            return None
        counts = pipeline.stream_counters(stream)
        series = self.series.get(stream)
        if series is None:
            series = self.series[stream] = _Series(self.window, self.columns)
        if counts["data"] == series.count:
            return None  # refused (counted by the pipeline): no new reading
        series.count = counts["data"]
        if self.task in TASK_COLUMNS:
            return self._write(series, self._task_row(stream, counts["data"], received_at, truth))
        metrics = pipeline.metrics(stream)
        scored, correct = getattr(metrics, "n", 0), getattr(metrics, "n_correct", None)
        outcome = None
        if correct is not None and scored > series.last_scored:
            outcome = int(correct > series.last_correct)
            series.window.append(outcome)
            series.last_scored, series.last_correct = scored, correct
        rate = self.budget_rate(stream)
        row = {
            "stream": stream,
            "reading": counts["data"],
            "received_at": received_at,
            "correct": outcome,
            "rolling_accuracy": (sum(series.window) / len(series.window)) if series.window else None,
            "labels_asked": counts["asked"],
            "labels_learned": counts["learned"],
            "label_budget": None if rate is None else rate * counts["data"],
            "channels_present": present,
        }
        return self._write(series, row)

    def _task_row(self, stream: str, reading: int, received_at: float, truth: Any) -> dict:
        """A regression or anomaly stream's row, from its last prediction message."""
        output = self.pipeline.last_output(stream) or {}
        row = {"stream": stream, "reading": reading, "received_at": received_at,
               "asked": int(bool(output.get("query")))}
        if self.task == "regression":
            row.update(y=truth, prediction=output.get("y"), lower=output.get("lower"),
                       upper=output.get("upper"))
        else:
            row.update(score=output.get("score"), alarm=int(bool(output.get("y"))),
                       y=None if truth is None else int(bool(truth)))
        return row

    def _write(self, series: _Series, row: dict) -> dict:
        if self._writer is not None:
            self._writer.writerow(["" if row[c] is None else row[c] for c in self.columns])
        self._keep(series, row)
        return row

    def _keep(self, series: _Series, row: dict) -> None:
        if (row["reading"] - 1) % series.stride:
            return
        points = series.points
        for column, values in points.items():
            value = row[column]
            values.append(math.nan if value is None else value)
        if len(points["reading"]) >= self.max_points:
            for column in points:
                points[column] = points[column][::2]
            series.stride *= 2
