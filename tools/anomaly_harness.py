"""What the anomaly results tools share: River's detectors as they run here, and the
loops that run a detector over a series and time it.

River's detectors (river.anomaly) run as River documents them, each given a reading
as a dict, ``score_one`` before ``learn_one``:

* ``hst``: ``MinMaxScaler() | HalfSpaceTrees(seed=42)`` (HST expects features in
  [0, 1]; River's own example scales them so);
* ``loda``: ``LODA(seed=42)``;
* ``ocsvm``: ``StandardScaler() | OneClassSVM(nu=0.2)`` (River's example);
* ``sad``: ``StandardAbsoluteDeviation()`` (its mean) per channel, the reading's
  score the largest of its channels' (SAD is univariate).

River's scores are not all in [0, 1]; NAB's sweep starts at 1.1, so each raw score
``s`` is mapped to ``s / (1 + |s|) / 2 + 1/2``, monotone, which leaves every
threshold's detections (and so the corpus-optimized score) as they were. Their own
alarms: ``river.anomaly.QuantileFilter(q=0.999)`` (an alarm when the score passes its
running 0.999 quantile), the label-free rule River offers. Missing channels are
left out of the dict, as our detector gets them.
"""

from __future__ import annotations

import math
import time

import numpy as np

RIVER = {
    "hst": "River HalfSpaceTrees",
    "loda": "River LODA",
    "ocsvm": "River OneClassSVM",
    "sad": "River StandardAbsoluteDeviation",
}
RIVER_ALARM_QUANTILE = 0.999


class _MaxOfChannels:
    """A univariate River detector per channel; the reading's score is the largest."""

    def __init__(self, make):
        self.make = make
        self.per: dict = {}

    def score_one(self, x):
        best = 0.0
        for name, value in x.items():
            det = self.per.get(name)
            if det is not None:
                best = max(best, det.score_one(None, value))
        return best

    def learn_one(self, x):
        for name, value in x.items():
            det = self.per.get(name)
            if det is None:
                det = self.per[name] = self.make()
            det.learn_one(None, value)


def river_detector(name: str):
    from river import anomaly, compose, preprocessing

    if name == "hst":
        return compose.Pipeline(preprocessing.MinMaxScaler(), anomaly.HalfSpaceTrees(seed=42))
    if name == "loda":
        return anomaly.LODA(seed=42)
    if name == "ocsvm":
        return compose.Pipeline(preprocessing.StandardScaler(), anomaly.OneClassSVM(nu=0.2))
    if name == "sad":
        return _MaxOfChannels(anomaly.StandardAbsoluteDeviation)
    raise ValueError(f"The 'name' parameter of river_detector must be one of {sorted(RIVER)}. Got {name!r}.")


def unit_score(s: float) -> float:
    """A raw score mapped monotonically into (0, 1)."""
    return 0.5 + 0.5 * s / (1.0 + abs(s))


def rows_of(X: np.ndarray, columns: list) -> list[dict]:
    """The rows of X as dicts, a NaN (missing) reading left out."""
    out = []
    for row in X.tolist():
        out.append({c: v for c, v in zip(columns, row) if not math.isnan(v)})
    return out


def run_river(name: str, rows: list[dict]) -> tuple[np.ndarray, np.ndarray, float]:
    """``(scores in (0, 1), alarms, CPU seconds)`` of a fresh River detector over ``rows``."""
    from river import anomaly

    det = river_detector(name)
    alarm_filter = anomaly.QuantileFilter(det, q=RIVER_ALARM_QUANTILE)
    scores = np.empty(len(rows))
    alarms = np.zeros(len(rows), dtype=bool)
    start = time.process_time()
    for i, x in enumerate(rows):
        s = det.score_one(x)
        alarms[i] = alarm_filter.classify(s)
        scores[i] = s
        alarm_filter.learn_one(x)  # learns the quantile and the detector
    seconds = time.process_time() - start
    return np.array([unit_score(s) for s in scores]), alarms, seconds


def run_ours(params: dict, X: np.ndarray, columns: list, dicts: bool = False):
    """``(scores, alarms, CPU seconds)`` of a fresh SurpriseDetector over X: the jitted
    array loop, or ``decide_one`` per dict with ``dicts``."""
    from edgelearn.learners.surprise import SurpriseDetector

    det = SurpriseDetector(**params)
    if dicts:
        rows = rows_of(X, columns)
        scores = np.empty(len(rows))
        alarms = np.zeros(len(rows), dtype=bool)
        start = time.process_time()
        for i, x in enumerate(rows):
            d = det.decide_one(x)
            scores[i] = d.score
            alarms[i] = d.label
        return scores, alarms, time.process_time() - start
    start = time.process_time()
    out = det.decide_array(X, columns)
    return out["score"], out["alarm"], time.process_time() - start


def warm_up_kernels() -> None:
    """Compile (or load) the detector's kernels before anything is timed."""
    X = np.random.default_rng(0).normal(size=(50, 2))
    run_ours({}, X, ["a", "b"])
    run_ours({}, X, ["a", "b"], dicts=True)
