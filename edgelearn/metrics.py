"""Prequential classification metrics that agree with scikit-learn.

Two forms of the same definitions:

* :class:`ClassificationMetrics`, updated one ``(y_true, y_pred)`` pair at a time, for
  test-then-train loops and the gateway's status counters; its memory is bounded by
  the number of distinct labels (``max_labels``);
* :func:`accuracy`, :func:`f1_binary`, :func:`f1_macro` on whole arrays (NumPy only).

They match ``sklearn.metrics.accuracy_score`` and ``f1_score(..., zero_division=0)``
(``average="binary"`` with ``pos_label``, or ``average="macro"`` over the union of the
labels seen in ``y_true`` and ``y_pred``) to rounding.

Per label, ``F1 = 2 tp / (2 tp + fp + fn) = 2 tp / (n_true + n_pred)``, and 0 when the
label was neither true nor predicted (``zero_division=0``).

>>> m = ClassificationMetrics()
>>> for t, p in [("a", "a"), ("b", "a"), ("c", "c"), ("a", "a")]:
...     _ = m.update(t, p)
>>> m.accuracy, round(m.f1, 4)
(0.75, 0.6)
>>> f1_macro(["a", "b", "c", "a"], ["a", "a", "c", "a"]) == m.f1
True
"""

from __future__ import annotations

import math
from typing import Any, Hashable

import numpy as np

from edgelearn._validation import check_number

__all__ = ["ClassificationMetrics", "accuracy", "f1_binary", "f1_macro"]


def _f1(tp: int, n_true: int, n_pred: int) -> float:
    denom = n_true + n_pred
    return 2.0 * tp / denom if denom else 0.0


class ClassificationMetrics:
    """Streaming accuracy and F1, one instance at a time.

    Parameters
    ----------
    positive : hashable or None
        ``None`` (default): multiclass, ``f1`` is the macro-F1 over every label seen
        so far in ``y_true`` or ``y_pred``. Otherwise binary: ``f1`` is the F1 of this
        label; any other label counts as negative (scikit-learn would refuse a third
        label in binary mode; here it is simply "not positive").
    max_labels : int
        Bound on the distinct labels kept in multiclass mode (memory is
        O(max_labels)); one more raises ``ValueError``. Binary mode keeps O(1).

    Before the first update every metric is 0.0 (the ``zero_division=0`` reading).

    >>> m = ClassificationMetrics(positive=1)
    >>> for t, p in zip([1, 0, 1, 1, 0], [1, 1, 0, 1, 0]):
    ...     _ = m.update(t, p)
    >>> m.n, m.accuracy, round(m.precision, 4), round(m.recall, 4), round(m.f1, 4)
    (5, 0.6, 0.6667, 0.6667, 0.6667)
    """

    def __init__(self, positive: Hashable | None = None, max_labels: int = 1024) -> None:
        self.positive = positive
        self.max_labels = check_number("max_labels", max_labels, "ClassificationMetrics",
                                       1, None, integer=True)
        self.reset()

    def reset(self) -> None:
        """Forget every update."""
        self.n = 0
        self.n_correct = 0
        # Binary mode: counts of the positive label only.
        self._tp = self._n_true = self._n_pred = 0
        # Multiclass mode: label -> [tp, n_true, n_pred], in first-seen order.
        self._counts: dict[Hashable, list[int]] = {}

    def _row(self, label: Hashable) -> list[int]:
        row = self._counts.get(label)
        if row is None:
            if len(self._counts) >= self.max_labels:
                raise ValueError(
                    f"ClassificationMetrics has seen {len(self._counts)} distinct labels "
                    f"and {label!r} would exceed max_labels={self.max_labels}; raise "
                    "max_labels if this many classes are expected")
            row = self._counts[label] = [0, 0, 0]
        return row

    def update(self, y_true: Hashable, y_pred: Hashable) -> "ClassificationMetrics":
        """Count one prediction; returns ``self``."""
        correct = bool(y_true == y_pred)
        if self.positive is None:
            # Look both rows up before changing anything, so a max_labels error
            # leaves the counts consistent.
            row_t = self._row(y_true)
            row_p = self._row(y_pred)
            row_t[1] += 1
            row_p[2] += 1
            if correct:
                row_t[0] += 1
        else:
            pos_t = bool(y_true == self.positive)
            pos_p = bool(y_pred == self.positive)
            self._n_true += pos_t
            self._n_pred += pos_p
            self._tp += pos_t and pos_p
        self.n += 1
        self.n_correct += correct
        return self

    @property
    def accuracy(self) -> float:
        """Fraction of correct predictions (0.0 before any update)."""
        return self.n_correct / self.n if self.n else 0.0

    @property
    def labels(self) -> list[Hashable]:
        """Labels seen so far in either argument, first-seen order (multiclass mode)."""
        return list(self._counts)

    def f1_per_label(self) -> dict[Hashable, float]:
        """F1 of every label seen so far (multiclass mode)."""
        return {lab: _f1(*row) for lab, row in self._counts.items()}

    @property
    def precision(self) -> float:
        """Precision of the positive label (binary mode)."""
        self._need_binary("precision")
        return self._tp / self._n_pred if self._n_pred else 0.0

    @property
    def recall(self) -> float:
        """Recall of the positive label (binary mode)."""
        self._need_binary("recall")
        return self._tp / self._n_true if self._n_true else 0.0

    @property
    def f1(self) -> float:
        """Binary F1 of ``positive``, or macro-F1 over the labels seen."""
        if self.positive is not None:
            return _f1(self._tp, self._n_true, self._n_pred)
        if not self._counts:
            return 0.0
        # fsum: the result must not depend on the order labels were first seen.
        return math.fsum(_f1(*row) for row in self._counts.values()) / len(self._counts)

    def _need_binary(self, what: str) -> None:
        if self.positive is None:
            raise AttributeError(f"{what} is defined in binary mode only "
                                 "(ClassificationMetrics(positive=...))")

    def __repr__(self) -> str:
        mode = "macro" if self.positive is None else f"positive={self.positive!r}"
        return (f"ClassificationMetrics({mode}, n={self.n}, "
                f"accuracy={self.accuracy:.4f}, f1={self.f1:.4f})")


def _pair(y_true: Any, y_pred: Any, owner: str) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(y_true)
    p = np.asarray(y_pred)
    if t.ndim != 1 or p.ndim != 1:
        raise ValueError(f"{owner} expects 1-D label arrays; got shapes "
                         f"{t.shape} and {p.shape}")
    if t.shape != p.shape:
        raise ValueError(f"{owner}: y_true and y_pred have different lengths "
                         f"({t.shape[0]} and {p.shape[0]})")
    if t.size == 0:
        raise ValueError(f"{owner}: empty input (at least one label is needed)")
    return t, p


def accuracy(y_true: Any, y_pred: Any) -> float:
    """Fraction of positions where ``y_true == y_pred``.

    >>> accuracy([1, 2, 3, 4], [1, 2, 0, 0])
    0.5
    """
    t, p = _pair(y_true, y_pred, "accuracy")
    return float(np.count_nonzero(t == p) / t.size)


def f1_binary(y_true: Any, y_pred: Any, positive: Any = True) -> float:
    """F1 of the label ``positive``; every other label is negative. 0.0 if there is
    no positive in either array.

    >>> f1_binary([True, False, True], [True, True, False])
    0.5
    >>> f1_binary([-1, -1], [-1, -1], positive=1)
    0.0
    """
    t, p = _pair(y_true, y_pred, "f1_binary")
    pt = t == positive
    pp = p == positive
    return _f1(int(np.count_nonzero(pt & pp)), int(np.count_nonzero(pt)),
               int(np.count_nonzero(pp)))


def f1_macro(y_true: Any, y_pred: Any) -> float:
    """Unweighted mean of per-label F1 over the union of labels in both arrays.

    >>> f1_macro([0, 1, 2, 2], [0, 2, 2, 2])
    0.6
    """
    t, p = _pair(y_true, y_pred, "f1_macro")
    try:
        _, inverse = np.unique(np.concatenate([t, p]), return_inverse=True)
    except TypeError:
        # Labels that do not sort together (e.g. mixed str and int in an object
        # array): number them by first appearance instead.
        codes: dict[Any, int] = {}
        inverse = np.fromiter((codes.setdefault(v, len(codes)) for v in
                               np.concatenate([t, p]).tolist()), dtype=np.intp)
    inverse = inverse.ravel()
    n_labels = int(inverse.max()) + 1
    it, ip = inverse[: t.size], inverse[t.size:]
    n_true = np.bincount(it, minlength=n_labels)
    n_pred = np.bincount(ip, minlength=n_labels)
    tp = np.bincount(it[it == ip], minlength=n_labels)
    # Every label in the union was true or predicted at least once: no 0/0.
    return float(np.mean(2.0 * tp / (n_true + n_pred)))
