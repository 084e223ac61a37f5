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
from .kernels import replay as loops
from .channels import name_key
from .learners.base import BinaryTargets
from .learners.pa import PA
from .learners.paacds import PAACDS, _K0


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
    (700, 0.98, 0.21)
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
    seed.  Works for :class:`PAACDS` and :class:`PA`; the model is updated in
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
    if not isinstance(model, (PAACDS, PA)):
        raise TypeError(
            f"replay runs PAACDS and PA in jitted code; for a {type(model).__name__} "
            "use edgelearn.evaluate.prequential over edgelearn.streams.iter_array(X, y)."
        )

    space = model.channels
    col_slot, slot_col, changed, counters = space.column_map(feature_names)
    n = X.shape[0]
    pred = np.empty(n, dtype=np.int64)
    margins = np.empty(n, dtype=np.float64)
    channel_args = (space.count, space.mean, space.var, space.last_seen, space.forget, space.eps, space.z_max, space.evict_after)
    binary = _is_binary(model)

    start = time.perf_counter()
    knew_labels = model.targets.learned_any
    if isinstance(model, PA):
        y_sign = _signs(y, model)
        loops.pa_loop(
            X, y_sign, col_slot, slot_col, changed, counters, *channel_args, model._scale,
            model.w, model.intercept, float(model.C), model.mode, model.learn_intercept, pred, margins,
        )
        asked = np.ones(n, dtype=bool)
        y_labels = y_sign
    else:
        asked = np.empty(n, dtype=np.bool_)
        if binary:
            y_labels = _signs(y, model)
            code_class = np.zeros(0, dtype=np.int64)
            class_code = np.zeros(0, dtype=np.int64)
            uniques = []
        else:
            uniques, y_labels = _codes(y, model)
            code_class = np.full(len(uniques), -1, dtype=np.int64)
            for code, label in enumerate(uniques):
                code_class[code] = model.targets.find(label)
            class_code = np.full(model.n_classes, -1, dtype=np.int64)
            for code, c in enumerate(code_class):
                if c >= 0:
                    class_code[c] = code
        target = 0.0 if model.target_query_rate is None else float(model.target_query_rate)
        delta, n_known = loops.paacds_loop(
            X, y_labels, active, col_slot, slot_col, changed, counters, *channel_args,
            model.W, model.b, model.active, model.h, model.h_n, model.h_mean, model.h_var, model._h_forget, _K0,
            model.rng_state, model._current_delta, target, float(model.budget_gain), float(model.C),
            model._variant_i, model.learn_intercept, model._lam, float(model.B), model._max_weights,
            code_class, class_code, len(model.targets.labels), model._scores, model._idx_buf, model._score_buf,
            np.array([name_key(name) for name in feature_names], dtype=np.float64), space.name_key,
            pred, margins, asked,
        )
        model._current_delta = float(delta)
        for c in range(len(model.targets.labels), n_known):
            model.targets.index(uniques[class_code[c]])
    seconds = time.perf_counter() - start

    space.take_column_map(feature_names, slot_col, changed, counters)

    truth = list(y.tolist()) if isinstance(y, np.ndarray) else list(y)
    if binary:
        predictions = [model.targets.decode(bool(p > 0)) for p in pred.tolist()]
    else:
        predictions = [model.targets.decode(int(c)) for c in pred.tolist()]
    if not knew_labels and n:
        # The rule for a learner that knows no label (learners/base.py): up to and
        # including the first instance it learned, it predicted the neutral answer.
        learned = np.flatnonzero(asked) if active else np.arange(n)
        first = int(learned[0]) if len(learned) else n - 1
        predictions[: first + 1] = [model.targets.neutral()] * (first + 1)
    return _result(truth, predictions, asked, seconds, binary)


def _signs(y, model) -> np.ndarray:
    """Binary labels to a float array of +1/-1 through the learner's targets,
    registering its labels in order of first appearance."""
    values = y.tolist() if isinstance(y, np.ndarray) else list(y)
    cache: dict = {}
    out = np.empty(len(values), dtype=np.float64)
    for i, v in enumerate(values):
        sign = cache.get(v)
        if sign is None:
            sign = cache[v] = model.targets.sign(v)
        out[i] = sign
    return out


def _codes(y, model) -> tuple[list, np.ndarray]:
    """Multiclass labels to integer codes, refusing more classes than the model holds."""
    codes: dict = {}
    out = np.empty(len(y), dtype=np.float64)
    for i, v in enumerate(y.tolist()):
        out[i] = codes.setdefault(v, len(codes))
    uniques = list(codes)
    total = set(model.targets.labels) | set(uniques)
    if len(total) > model.n_classes:
        raise ValueError(
            f"PAACDS was built with n_classes={model.n_classes}; these labels hold {len(total)} classes."
        )
    return uniques, out
