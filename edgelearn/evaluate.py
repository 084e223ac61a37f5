"""Prequential (test-then-train) evaluation, over dicts or over arrays.

Every instance is predicted before its label is used; the label is used only
when the learner asks for it (or always, with ``active=False``); the metrics
count every instance, asked or not.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Iterable

import numpy as np

from . import metrics
from .learners.base import BinaryTargets


@dataclass
class PrequentialResult:
    """Metrics of one prequential run.  ``f1`` is the positive class's F1
    for a binary learner and the macro F1 otherwise."""

    n: int
    accuracy: float
    f1: float
    query_rate: float
    seconds: float
    predictions: np.ndarray = field(repr=False)
    asked: np.ndarray = field(repr=False)

    @property
    def n_queried(self) -> int:
        return int(self.asked.sum())

    @property
    def instances_per_s(self) -> float:
        return self.n / self.seconds if self.seconds > 0 else float("inf")

    def as_dict(self) -> dict:
        return {
            "n": self.n,
            "accuracy": self.accuracy,
            "f1": self.f1,
            "query_rate": self.query_rate,
            "n_queried": self.n_queried,
            "seconds": self.seconds,
            "instances_per_s": self.instances_per_s,
        }


def _is_binary(model) -> bool:
    return model.task == "binary"


def prequential(model, stream: Iterable, active: bool = True, progress=None) -> PrequentialResult:
    """Run ``model`` over ``(x, y)`` pairs, test-then-train.

    For each instance the model decides (observe, predict, ask or not); the
    label is learned only if it asked, or always with ``active=False``.
    ``progress``, if given, is called with the number of instances done
    every 1,000 instances.

    >>> from edgelearn import PAACDS
    >>> from edgelearn.evaluate import prequential
    >>> stream = [({"a": i % 7 - 3.0, "b": 1.0}, i % 7 > 3) for i in range(700)]
    >>> result = prequential(PAACDS(seed=1, target_query_rate=0.2), stream)
    >>> result.n, round(result.accuracy, 2), round(result.query_rate, 2)
    (700, 0.98, 0.2)
    """
    binary = _is_binary(model)
    predictions = []
    asked = []
    truth = []
    start = time.perf_counter()
    for i, (x, y) in enumerate(stream):
        decision = model.decide_one(x)
        if decision.ask or not active:
            model.learn(decision.slots, decision.z, y)
        predictions.append(decision.label)
        asked.append(decision.ask)
        truth.append(y)
        if progress is not None and (i + 1) % 1000 == 0:
            progress(i + 1)
    seconds = time.perf_counter() - start
    return _result(truth, predictions, asked, seconds, binary)


def _result(truth, predictions, asked, seconds, binary) -> PrequentialResult:
    n = len(truth)
    asked = np.asarray(asked, dtype=bool)
    if binary:
        # Any two labels: the positive one is the learner's (True/1 positive, else
        # the first seen). A prediction matching neither label (a learner that knows
        # no label yet predicts False) counts as negative for F1, wrong for accuracy.
        sides = BinaryTargets("prequential")
        y_true = np.array([sides.sign(v) > 0 for v in truth], dtype=bool)
        positive = sides.decode(True)
        y_pred_side = np.array([_equal(v, positive) for v in predictions], dtype=bool)
        f1 = metrics.f1_binary(y_true, y_pred_side, positive=True) if n else 0.0
        if all(isinstance(v, (bool, np.bool_)) for v in truth):
            y_pred = np.asarray(predictions, dtype=bool)
            y_true = np.asarray(truth, dtype=bool)
        else:
            y_pred = np.array(predictions + [None], dtype=object)[:-1]
            y_true = np.array(list(truth) + [None], dtype=object)[:-1]
            accuracy = float(np.mean([_equal(p, t) for p, t in zip(predictions, truth)])) if n else 0.0
            return PrequentialResult(n=n, accuracy=accuracy, f1=float(f1),
                                     query_rate=float(asked.mean()) if n else 0.0,
                                     seconds=seconds, predictions=y_pred, asked=asked)
    else:
        # Labels of any type: compare them through a shared integer code.
        codes: dict = {}
        y_true = np.array([codes.setdefault(v, len(codes)) for v in truth], dtype=np.int64)
        y_pred = np.array([-1 if v is None else codes.setdefault(v, len(codes)) for v in predictions], dtype=np.int64)
        f1 = metrics.f1_macro(y_true, y_pred) if n else 0.0
        y_pred = np.array(predictions, dtype=object)
        y_true = np.array(truth, dtype=object)
    accuracy = float(np.mean(y_true == y_pred)) if n else 0.0
    return PrequentialResult(
        n=n,
        accuracy=accuracy,
        f1=float(f1),
        query_rate=float(asked.mean()) if n else 0.0,
        seconds=seconds,
        predictions=y_pred,
        asked=asked,
    )


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def replay(model, X, y, active: bool = True, feature_names=None) -> PrequentialResult:
    """:func:`prequential` over a dense array, the whole loop in jitted code.

    ``X`` is (n, d) with NaN for a missing reading; column j is the channel
    named ``feature_names[j]`` (default ``str(j)``).  The predictions, query
    decisions and final model are exactly those of :func:`prequential` over
    the same rows as dicts (``edgelearn.streams.iter_array``) with the same
    seed.  Works for the learners that declare the ``"array_loop"`` capability
    (:class:`PAACDS`, :class:`PA`); the model is updated in
    place and may go on learning afterwards, from dicts or arrays.

    >>> import numpy as np
    >>> from edgelearn import PAACDS, replay
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 8))
    >>> y = X[:, 0] - X[:, 1] > 0
    >>> X[rng.random(X.shape) < 0.3] = np.nan
    >>> result = replay(PAACDS(target_query_rate=0.2), X, y)
    >>> round(result.accuracy, 2), round(result.query_rate, 2)
    (0.8, 0.2)
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (instances x channels). Got shape {X.shape}.")
    y = np.asarray(y)
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must hold one label per row of X ({X.shape[0]}). Got shape {y.shape}.")
    if feature_names is None:
        feature_names = [str(j) for j in range(X.shape[1])]
    feature_names = list(feature_names)
    if len(feature_names) != X.shape[1]:
        raise ValueError(f"feature_names has {len(feature_names)} names for {X.shape[1]} columns.")
    if not model.can("array_loop"):
        raise TypeError(
            f"replay runs learners that declare the 'array_loop' capability in jitted "
            f"code; for a {type(model).__name__} use edgelearn.evaluate.prequential over "
            "edgelearn.streams.iter_array(X, y)."
        )
    result = model.replay_arrays(X, y, active, feature_names)
    truth = list(y.tolist()) if isinstance(y, np.ndarray) else list(y)
    return _result(truth, result.predictions, result.asked, result.seconds, _is_binary(model))
