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

Concept-drift metrics of the AC_OE paper (section 3.3), over the predictions of a
whole stream: :func:`realtime_accuracies` (``racc_t``, the accuracy of each chunk),
:func:`average_realtime_accuracy` (Avgracc, eq. 10), :func:`cumulative_accuracy`
(Cumacc, eq. 12), :func:`recovery` (RSA after each drift point, eqs. 13-14) and
:func:`robustness` (eqs. 15-16, across algorithms and data sets).

Regression: :class:`RegressionMetrics`, MAE, RMSE and interval coverage one reading at a time.

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
import numbers
from typing import Any, Hashable

import numpy as np

from edgelearn._validation import check_number, format_value
from edgelearn.stream_metrics import RegressionMetrics  # noqa: F401  (one class, two homes)

__all__ = [
    "MULTILABEL_METRICS", "ClassificationMetrics", "MultiLabelMetrics", "RegressionMetrics", "accuracy", "average_precision", "balanced_accuracy", "f1_binary",
    "f1_macro", "hamming_loss", "macro_auc", "micro_f1", "multilabel_metrics", "one_error",
    "ranking_loss",
    "realtime_accuracies", "average_realtime_accuracy", "cumulative_accuracy", "recovery",
    "robustness",
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

    def update_many(self, y_true: np.ndarray, y_pred: np.ndarray) -> "ClassificationMetrics":
        """Count many predictions at once in binary mode (``positive`` set): the
        counts :meth:`update` would reach one pair at a time. Returns ``self``."""
        self._need_binary("update_many")
        pos_t = np.asarray(y_true) == self.positive
        pos_p = np.asarray(y_pred) == self.positive
        self.n += int(pos_t.shape[0])
        self.n_correct += int(np.count_nonzero(np.asarray(y_true) == np.asarray(y_pred)))
        self._n_true += int(np.count_nonzero(pos_t))
        self._n_pred += int(np.count_nonzero(pos_p))
        self._tp += int(np.count_nonzero(pos_t & pos_p))
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


def balanced_accuracy(y_true: Any, y_pred: Any) -> float:
    """Mean over the labels of ``y_true`` of each one's recall (scikit-learn's
    ``balanced_accuracy_score``); a label only ``y_pred`` has adds nothing.

    >>> balanced_accuracy([1, 1, 1, 0], [1, 1, 0, 0])
    0.8333333333333333
    """
    t, p = _pair(y_true, y_pred, "balanced_accuracy")
    recalls = [float(np.count_nonzero(p[t == label] == label)) / np.count_nonzero(t == label)
               for label in dict.fromkeys(t.tolist())]
    return float(np.mean(recalls))


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
    try:
        Y = np.asarray(Y)
    except ValueError:  # ragged rows
        raise ValueError(f"{owner} expects 2-D {name} (instances x labels) with rows of one length") from None
    if Y.ndim != 2:
        raise ValueError(f"{owner} expects 2-D {name} (instances x labels); got shape {Y.shape}")
    if Y.dtype.kind not in "biuf":
        raise TypeError(f"{owner} expects {name} of bools or numbers; got dtype {Y.dtype}")
    if Y.dtype.kind == "f" and not np.isfinite(Y).all():
        raise ValueError(f"{owner} expects finite {name}; it holds NaN or infinity")
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
        for name, value in (("y_true", y_true), ("y_pred", y_pred)):
            if not isinstance(value, dict):
                raise TypeError(f"MultiLabelMetrics.update expects {name} as a dict of label name to bool. "
                                f"Got {type(value).__name__}.")
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


# -- concept drift (AC_OE, section 3.3) ------------------------------------------------


def realtime_accuracies(y_true: Any, y_pred: Any, chunk: int = 100) -> np.ndarray:
    """Real-time accuracy ``racc_t = n_t / n`` (eq. 11) of each chunk of ``chunk``
    consecutive predictions, in stream order, as a float64 array.

    A last partial chunk (when ``chunk`` does not divide the length) is the fraction
    of its own predictions that are right, over its own size.

    >>> realtime_accuracies([0, 1, 1, 0, 1], [0, 1, 0, 0, 0], chunk=2)
    array([1. , 0.5, 0. ])
    """
    owner = "realtime_accuracies"
    chunk = check_number("chunk", chunk, owner, 1, None, integer=True)
    t, p = _pair(y_true, y_pred, owner)
    correct = (t == p).astype(np.int64)
    starts = np.arange(0, t.size, chunk)
    sizes = np.diff(np.append(starts, t.size))
    return np.add.reduceat(correct, starts) / sizes


def average_realtime_accuracy(y_true: Any, y_pred: Any, chunk: int = 100) -> float:
    """Avgracc (eq. 10): the mean of :func:`realtime_accuracies`, each chunk
    counting once (a last partial chunk too, with its own accuracy).

    >>> average_realtime_accuracy([0, 1, 1, 0, 1], [0, 1, 0, 0, 0], chunk=2)
    0.5
    """
    owner = "average_realtime_accuracy"
    chunk = check_number("chunk", chunk, owner, 1, None, integer=True)
    t, p = _pair(y_true, y_pred, owner)
    return float(np.mean(realtime_accuracies(t, p, chunk)))


def cumulative_accuracy(y_true: Any, y_pred: Any) -> float:
    """Cumacc (eq. 12): right predictions over all predictions so far, which is the
    plain accuracy of the whole stream (chunks do not matter).

    >>> cumulative_accuracy([0, 1, 1, 0, 1], [0, 1, 0, 0, 0])
    0.6
    """
    t, p = _pair(y_true, y_pred, "cumulative_accuracy")
    return float(np.count_nonzero(t == p) / t.size)


def _converged(r: np.ndarray, n_ref: int, eps: float) -> np.ndarray:
    """``ok[t]`` for ``t = 0 .. len(r) - n_ref - 1``: chunk ``t`` is a convergence
    point by eq. 14 (see :func:`recovery`)."""
    if r.size <= n_ref:
        return np.zeros(0, dtype=bool)
    steady = np.abs(np.diff(r)) < eps
    # steady[t + i - 1] for i = 1 .. n_ref: |racc_{t+i-1} - racc_{t+i}| < eps.
    smooth = np.lib.stride_tricks.sliding_window_view(steady, n_ref).all(axis=1)
    ref = np.lib.stride_tricks.sliding_window_view(r[1:], n_ref)  # racc_{t+1 .. t+n_ref}
    half = n_ref // 2
    flat = np.abs(ref[:, :half].mean(axis=1) - ref[:, half:].mean(axis=1)) < eps
    return smooth & flat


def recovery(
    raccs: Any, drift_chunks: Any, n_ref: int = 10, eps: float = 0.02
) -> list[float | None]:
    """RSA (eq. 13), the recovery after each drift: ``steps * (1 - avgracc)``.

    ``raccs`` are the real-time accuracies of a stream (:func:`realtime_accuracies`)
    and ``drift_chunks`` the indices of the chunks where the drifts happen (for a
    drift at instance ``p``, chunk ``p // chunk``), strictly increasing.

    Chunk ``t`` is a convergence point (eq. 14) when its ``n_ref`` reference points
    ``t + 1 .. t + n_ref`` all change by less than ``eps`` from the chunk before,
    ``|racc_{t+i-1} - racc_{t+i}| < eps`` for ``i = 1 .. n_ref``, and the mean of the
    first half of them differs from the mean of the second half by less than
    ``eps``. For the drift at chunk ``d``, the convergence point is the first such
    ``t >= d`` whose reference points all lie before the next drift chunk (or the
    end of the stream); then ``steps = t - d`` and ``avgracc`` is the mean of
    ``racc_d .. racc_t`` (the chunks from the drift to convergence, both included;
    ``steps = 0`` gives RSA 0). The result has one entry per drift: the RSA, or
    ``None`` if the stream does not converge before the next drift or its end.
    Lower is better.

    >>> r = [0.9, 0.9, 0.5, 0.7, 0.8, 0.85, 0.86, 0.87, 0.87]
    >>> [round(v, 4) for v in recovery(r, [2], n_ref=4, eps=0.06)]
    [0.6667]
    >>> recovery(r, [2, 6], n_ref=4, eps=0.06)
    [None, None]
    """
    owner = "recovery"
    try:
        r = None if isinstance(raccs, (str, bytes)) else np.asarray(raccs, dtype=np.float64)
    except (TypeError, ValueError):
        r = None
    if r is None or r.ndim != 1 or r.size == 0 or not np.isfinite(r).all():
        raise ValueError(f"The 'raccs' parameter of {owner} must be a non-empty 1-D "
                         f"sequence of finite accuracies. Got {format_value(raccs)}.")
    bad = (f"The 'drift_chunks' parameter of {owner} must be a strictly increasing "
           f"sequence of ints in [0, {r.size - 1}] (chunk indices of raccs). "
           f"Got {format_value(drift_chunks)}.")
    if isinstance(drift_chunks, (str, bytes)) or not hasattr(drift_chunks, "__iter__"):
        raise TypeError(bad)
    drifts = list(drift_chunks)
    if any(not isinstance(d, numbers.Integral) or isinstance(d, (bool, np.bool_))
           for d in drifts):
        raise TypeError(bad)
    drifts = [int(d) for d in drifts]
    if (any(d < 0 or d >= r.size for d in drifts)
            or any(b <= a for a, b in zip(drifts, drifts[1:]))):
        raise ValueError(bad)
    n_ref = check_number("n_ref", n_ref, owner, 2, None, integer=True)
    if n_ref % 2:
        raise ValueError(f"The 'n_ref' parameter of {owner} must be an even int in "
                         f"[2, inf) (two halves of reference points). Got {n_ref}.")
    eps = check_number("eps", eps, owner, 0, None, low_open=True)

    ok = _converged(r, n_ref, eps)
    out: list[float | None] = []
    for i, d in enumerate(drifts):
        end = drifts[i + 1] if i + 1 < len(drifts) else r.size
        # t + n_ref must stay below the next drift chunk: t < end - n_ref.
        hits = np.flatnonzero(ok[d:max(d, end - n_ref)])
        if hits.size == 0:
            out.append(None)
            continue
        t = d + int(hits[0])
        steps = t - d
        out.append(float(steps * (1.0 - r[d:t + 1].mean())))
    return out


def robustness(avgraccs: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Robustness (eqs. 15-16) of algorithms across data sets.

    ``avgraccs`` maps algorithm -> data set -> its (average real-time) accuracy on
    that data set; every algorithm must have the same data sets and every accuracy
    must be positive (any scale: fractions or percentages). The result has the same
    nesting, algorithm -> data set -> ``R_A(D) = racc_A(D) / min_a racc_a(D)`` (1.0
    for the worst algorithm on ``D``, larger is more robust), plus the sum over the
    data sets, ``R_A``, under the key ``"total"`` (so no data set may be called
    ``"total"``).

    >>> r = robustness({"A": {"sea": 0.8, "led": 0.6}, "B": {"sea": 0.9, "led": 0.3}})
    >>> r["A"], r["B"]
    ({'sea': 1.0, 'led': 2.0, 'total': 3.0}, {'sea': 1.125, 'led': 1.0, 'total': 2.125})
    """
    owner = "robustness"
    shape = (f"The 'avgraccs' parameter of {owner} must be a non-empty dict of "
             f"algorithm -> dict of data set -> accuracy")
    if not isinstance(avgraccs, dict) or not avgraccs:
        raise TypeError(f"{shape}. Got {format_value(avgraccs)}.")
    datasets: list[str] | None = None
    for algorithm, per_dataset in avgraccs.items():
        if not isinstance(per_dataset, dict) or not per_dataset:
            raise TypeError(f"{shape}. Got {format_value(per_dataset)} for {algorithm!r}.")
        if datasets is None:
            datasets = list(per_dataset)
            if "total" in per_dataset:
                raise ValueError(f"{shape}; 'total' is reserved for the sum and cannot "
                                 "name a data set.")
        elif set(per_dataset) != set(datasets):
            raise ValueError(f"{shape}, the same data sets for every algorithm. "
                             f"{algorithm!r} has {sorted(map(str, per_dataset))}, "
                             f"expected {sorted(map(str, datasets))}.")
        for dataset, value in per_dataset.items():
            if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
                    or not math.isfinite(value) or value <= 0):
                raise ValueError(f"{shape} in (0, inf). Got {format_value(value)} for "
                                 f"{algorithm!r} on {dataset!r}.")
    assert datasets is not None
    worst = {ds: min(float(per[ds]) for per in avgraccs.values()) for ds in datasets}
    out: dict[str, dict[str, float]] = {}
    for algorithm, per_dataset in avgraccs.items():
        ratios = {ds: float(per_dataset[ds]) / worst[ds] for ds in datasets}
        ratios["total"] = math.fsum(ratios.values())
        out[algorithm] = ratios
    return out
