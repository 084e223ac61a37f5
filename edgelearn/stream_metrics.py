"""Prequential metrics of the tasks beyond classification, one reading at a time, in
fixed memory: a regression stream's errors and interval coverage, and an anomaly
stream's alarms and the operator's verdicts on them.

Each has ``n`` (readings scored) and ``as_dict()`` (what a status message, a replay
summary and Prometheus report). Before anything is scored a figure is ``None``:
"unknown", not 0.

>>> m = RegressionMetrics()
>>> for y, p, lo, hi in [(1.0, 1.5, 0.0, 2.0), (2.0, 1.0, 0.5, 1.5), (4.0, 4.0, None, None)]:
...     _ = m.update(y, p, lo, hi)
>>> m.n, m.mae, round(m.rmse, 4), m.coverage
(3, 0.5, 0.6455, 0.5)
>>> a = AnomalyMetrics()
>>> for alarm, verdict in [(True, True), (True, False), (False, None), (False, True)]:
...     _ = a.update(alarm, verdict)
>>> a.as_dict()["alarm_rate"], a.precision, a.recall
(0.5, 0.5, 0.5)
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["AnomalyMetrics", "RegressionMetrics"]


class RegressionMetrics:
    """Mean absolute and root mean squared error of predictions against the numbers
    that came back (scikit-learn's ``mean_absolute_error`` and
    ``root_mean_squared_error``), and how often the true value fell inside the
    predicted interval (``coverage``, over the ``n_intervals`` readings that had one)."""

    __slots__ = ("n", "abs_sum", "sq_sum", "n_covered", "n_intervals")

    def __init__(self):
        self.n = 0
        self.abs_sum = 0.0
        self.sq_sum = 0.0
        self.n_covered = 0
        self.n_intervals = 0

    def update(self, y_true: float, y_pred: float, lower: float | None = None,
               upper: float | None = None) -> "RegressionMetrics":
        error = float(y_true) - float(y_pred)
        self.n += 1
        self.abs_sum += abs(error)
        self.sq_sum += error * error
        if lower is not None and upper is not None:
            self.n_intervals += 1
            self.n_covered += lower <= y_true <= upper
        return self

    @property
    def mae(self) -> float | None:
        return self.abs_sum / self.n if self.n else None

    @property
    def rmse(self) -> float | None:
        return math.sqrt(self.sq_sum / self.n) if self.n else None

    @property
    def coverage(self) -> float | None:
        return self.n_covered / self.n_intervals if self.n_intervals else None

    def as_dict(self) -> dict[str, Any]:
        return {"scored": self.n, "mae": self.mae, "rmse": self.rmse, "coverage": self.coverage}


class AnomalyMetrics:
    """Alarms raised, and what the operator (or a replay's label column) said of the
    readings it judged: true positives (an alarm on a real anomaly), false alarms,
    and missed anomalies (no alarm on a real one)."""

    __slots__ = ("n", "alarms", "judged", "true_alarms", "false_alarms", "missed")

    def __init__(self):
        self.n = 0
        self.alarms = 0
        self.judged = 0
        self.true_alarms = 0
        self.false_alarms = 0
        self.missed = 0

    def update(self, alarm: bool, verdict: bool | None = None) -> "AnomalyMetrics":
        """Count one reading's ``alarm``; ``verdict`` (True: a real anomaly, None:
        not judged) scores it."""
        self.n += 1
        self.alarms += bool(alarm)
        if verdict is not None:
            self.judge(alarm, verdict)
        return self

    def judge(self, alarm: bool, verdict: bool) -> None:
        """Score an alarm (or its absence) counted before by :meth:`update`."""
        self.judged += 1
        if alarm:
            self.true_alarms += bool(verdict)
            self.false_alarms += not verdict
        elif verdict:
            self.missed += 1

    @property
    def precision(self) -> float | None:
        judged = self.true_alarms + self.false_alarms
        return self.true_alarms / judged if judged else None

    @property
    def recall(self) -> float | None:
        real = self.true_alarms + self.missed
        return self.true_alarms / real if real else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "scored": self.judged,
            "alarms": self.alarms,
            "alarm_rate": self.alarms / self.n if self.n else None,
            "true_alarms": self.true_alarms,
            "false_alarms": self.false_alarms,
            "missed_anomalies": self.missed,
            "precision": self.precision,
            "recall": self.recall,
        }
