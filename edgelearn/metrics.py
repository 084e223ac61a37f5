"""Prequential classification metrics that agree with scikit-learn.

Two forms of the same definitions:

* :class:`ClassificationMetrics`, updated one ``(y_true, y_pred)`` pair at a time, for
  test-then-train loops and the gateway's status counters; its memory is bounded by
  the number of distinct labels (``max_labels``);
* :func:`accuracy`, :func:`f1_binary`, :func:`f1_macro` on whole arrays (NumPy only).

They match ``sklearn.metrics.accuracy_score`` and ``f1_score(..., zero_division=0)``
(``average="binary"`` with ``pos_label``, or ``average="macro"`` over the union of the
labels seen in ``y_true`` and ``y_pred``) to rounding.

Multi-label, on ``(n, m)`` arrays (rows instances, columns labels; truths and
predictions as bools or 0/1, scores as floats, larger meaning "more likely present"):
:func:`hamming_loss`, :func:`micro_f1`, :func:`average_precision` (label-ranking average
precision), :func:`ranking_loss`, :func:`one_error`, :func:`macro_auc`, all six at once
with :func:`multilabel_metrics`; and :class:`MultiLabelMetrics`, Hamming loss and
micro-F1 updated one label set (a dict of label name to bool) at a time.

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

__all__ = [
    "MULTILABEL_METRICS", "ClassificationMetrics", "MultiLabelMetrics", "accuracy", "average_precision", "f1_binary",
    "f1_macro", "hamming_loss", "macro_auc", "micro_f1", "multilabel_metrics", "one_error",
    "ranking_loss",
]


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


# -- multi-label ---------------------------------------------------------------------


def _label_matrix(Y: Any, owner: str, name: str) -> np.ndarray:
    Y = np.asarray(Y)
    if Y.ndim != 2:
        raise ValueError(f"{owner} expects 2-D {name} (instances x labels); got shape {Y.shape}")
    if Y.size == 0:
        raise ValueError(f"{owner}: empty {name} (at least one instance and one label are needed)")
    return Y


def _matrices(Y_true: Any, other: Any, owner: str, other_name: str) -> tuple[np.ndarray, np.ndarray]:
    t = _label_matrix(Y_true, owner, "y_true")
    o = _label_matrix(other, owner, other_name)
    if t.shape != o.shape:
        raise ValueError(f"{owner}: y_true and {other_name} have different shapes ({t.shape} and {o.shape})")
    return t != 0, o


def hamming_loss(Y_true: Any, Y_pred: Any) -> float:
    """Fraction of (instance, label) entries predicted wrong.

    >>> hamming_loss([[1, 0, 1], [0, 0, 1]], [[1, 1, 1], [0, 0, 0]])
    0.3333333333333333
    """
    t, p = _matrices(Y_true, Y_pred, "hamming_loss", "y_pred")
    return float(np.count_nonzero(t != (p != 0)) / t.size)


def micro_f1(Y_true: Any, Y_pred: Any) -> float:
    """F1 of all (instance, label) entries pooled: ``2 tp / (2 tp + fp + fn)``,
    0 when no label is present in either.

    >>> micro_f1([[1, 0, 1], [0, 0, 1]], [[1, 1, 1], [0, 0, 0]])
    0.6666666666666666
    """
    t, p = _matrices(Y_true, Y_pred, "micro_f1", "y_pred")
    p = p != 0
    return _f1(int(np.count_nonzero(t & p)), int(np.count_nonzero(t)), int(np.count_nonzero(p)))


def average_precision(Y_true: Any, scores: Any) -> float:
    """Label-ranking average precision: per instance, the mean over its
    present labels r of (present labels scored >= r) / (labels scored >= r);
    an instance with no label present, or all of them, counts 1.  Averaged
    over instances.

    >>> average_precision([[1, 0, 0], [0, 0, 1]], [[0.75, 0.5, 1.0], [1.0, 0.2, 0.1]])
    0.41666666666666663
    """
    t, s = _matrices(Y_true, scores, "average_precision", "scores")
    s = s.astype(np.float64)
    at_least = s[:, None, :] >= s[:, :, None]  # [i, r, k]: label k scored >= label r
    rank = at_least.sum(axis=2)
    present_above = (at_least & t[:, None, :]).sum(axis=2)
    n_present = t.sum(axis=1)
    ratio = np.where(t, present_above / rank, 0.0).sum(axis=1)
    ranked = (n_present > 0) & (n_present < t.shape[1])
    per_instance = np.where(ranked, ratio / np.maximum(n_present, 1), 1.0)
    return float(per_instance.mean())


def ranking_loss(Y_true: Any, scores: Any) -> float:
    """Per instance, the fraction of (present, absent) label pairs whose
    absent label is scored at least as high as the present one (0 for an
    instance with no label present or all of them); averaged over instances.

    >>> ranking_loss([[1, 0, 0], [0, 0, 1]], [[0.75, 0.5, 1.0], [1.0, 0.2, 0.1]])
    0.75
    """
    t, s = _matrices(Y_true, scores, "ranking_loss", "scores")
    s = s.astype(np.float64)
    misordered = s[:, :, None] <= s[:, None, :]  # [i, r, k]: r scored <= k
    pairs = misordered & t[:, :, None] & ~t[:, None, :]
    n_present = t.sum(axis=1)
    n_absent = t.shape[1] - n_present
    denominator = n_present * n_absent
    per_instance = np.where(denominator > 0, pairs.sum(axis=(1, 2)) / np.maximum(denominator, 1), 0.0)
    return float(per_instance.mean())


def one_error(Y_true: Any, scores: Any) -> float:
    """Fraction of instances whose top-scored label is not present (ties:
    the first such label in column order; an instance with no label present
    always counts as an error).

    >>> one_error([[1, 0, 0], [0, 0, 1]], [[0.75, 0.5, 1.0], [1.0, 0.2, 0.1]])
    1.0
    """
    t, s = _matrices(Y_true, scores, "one_error", "scores")
    top = np.argmax(s.astype(np.float64), axis=1)
    return float(np.mean(~t[np.arange(t.shape[0]), top]))


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of ``values``, ties sharing the mean of their ranks."""
    unique, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
    below = np.cumsum(counts) - counts
    return (below + (counts + 1) / 2.0)[inverse.ravel()]


def macro_auc(Y_true: Any, scores: Any) -> float:
    """Mean ROC AUC over the labels (columns) where both present and absent
    instances occur; a label's AUC is the probability that a present
    instance is scored above an absent one, ties counting one half.  NaN if
    no label has both.

    >>> macro_auc([[1, 0], [0, 0], [1, 1]], [[0.9, 0.1], [0.2, 0.4], [0.8, 0.3]])
    0.75
    """
    t, s = _matrices(Y_true, scores, "macro_auc", "scores")
    s = s.astype(np.float64)
    aucs = []
    for j in range(t.shape[1]):
        positive = t[:, j]
        n_pos = int(positive.sum())
        n_neg = t.shape[0] - n_pos
        if n_pos == 0 or n_neg == 0:
            continue
        ranks = _average_ranks(s[:, j])
        aucs.append((ranks[positive].sum() - n_pos * (n_pos + 1) / 2.0) / (n_pos * n_neg))
    return float(np.mean(aucs)) if aucs else math.nan


#: The six metrics of the multi-label KELM protocol, and whether larger is better.
MULTILABEL_METRICS = {
    "hamming_loss": False,
    "micro_f1": True,
    "average_precision": True,
    "ranking_loss": False,
    "one_error": False,
    "macro_auc": True,
}


def multilabel_metrics(Y_true: Any, Y_pred: Any, scores: Any) -> dict[str, float]:
    """The six metrics of :data:`MULTILABEL_METRICS` at once.

    >>> m = multilabel_metrics([[1, 0], [0, 1]], [[1, 0], [1, 1]], [[0.9, -0.5], [0.2, 0.4]])
    >>> m["hamming_loss"], m["one_error"], m["macro_auc"]
    (0.25, 0.0, 1.0)
    """
    return {
        "hamming_loss": hamming_loss(Y_true, Y_pred),
        "micro_f1": micro_f1(Y_true, Y_pred),
        "average_precision": average_precision(Y_true, scores),
        "ranking_loss": ranking_loss(Y_true, scores),
        "one_error": one_error(Y_true, scores),
        "macro_auc": macro_auc(Y_true, scores),
    }


class MultiLabelMetrics:
    """Streaming Hamming loss and micro-F1 over label sets, one at a time.

    A label set is a dict of label name to bool (or 0/1).  Only the labels
    the true set names (with a value other than ``None``) are scored: a
    missing label is not counted, and a label the prediction leaves out is
    predicted absent.  Memory is O(1).  Before the first update both are 0.0.

    >>> m = MultiLabelMetrics()
    >>> _ = m.update({"a": True, "b": False}, {"a": True, "b": True})
    >>> _ = m.update({"a": False, "c": True}, {"a": False})
    >>> m.n, m.n_entries, m.hamming_loss, round(m.micro_f1, 4)
    (2, 4, 0.5, 0.5)
    """

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Forget every update."""
        self.n = 0
        self.n_entries = 0
        self.n_wrong = 0
        self._tp = self._n_true = self._n_pred = 0

    def update(self, y_true: dict, y_pred: dict) -> "MultiLabelMetrics":
        """Count one prediction; returns ``self``."""
        for name, truth in y_true.items():
            if truth is None:
                continue
            present = bool(truth)
            predicted = bool(y_pred.get(name, False))
            self.n_entries += 1
            self.n_wrong += present != predicted
            self._tp += present and predicted
            self._n_true += present
            self._n_pred += predicted
        self.n += 1
        return self

    @property
    def hamming_loss(self) -> float:
        """Fraction of scored labels predicted wrong."""
        return self.n_wrong / self.n_entries if self.n_entries else 0.0

    @property
    def micro_f1(self) -> float:
        """F1 over every scored label, pooled."""
        return _f1(self._tp, self._n_true, self._n_pred)

    def __repr__(self) -> str:
        return (f"MultiLabelMetrics(n={self.n}, hamming_loss={self.hamming_loss:.4f}, "
                f"micro_f1={self.micro_f1:.4f})")
