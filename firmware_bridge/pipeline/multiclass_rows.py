"""A multiclass stream's rows through its learner's jitted loop: what
:func:`~firmware_bridge.pipeline.rows.run_pass` does for a binary stream with its
record of two labels (``_label_sides``, ``_score_rows``, ``_user_predictions``), done
by the multiclass rules (:class:`~firmware_bridge.pipeline.tasks.MulticlassRules`):
which labels the learner can take, each prediction scored against its reading's
label, and the predictions in the user's labels."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..wire.bulk_decode import FastDecoder
from .kernels.rows import first_rows

__all__ = ["label_codes", "multiclass_rows_fit", "score_rows", "user_predictions"]


def multiclass_rows_fit(stream: Any, label: np.ndarray, decoder: FastDecoder) -> bool:
    """Whether the stream's metrics can take every prediction and label of these rows:
    the metrics hold ``max_labels`` labels (the learner's classes and None) and refuse
    one more, which makes that reading's label unusable; the jitted pass does not
    follow that case (the per-message path does), and it can only arise when the
    metrics' labels, None, the learner's and these rows' labels it may still take
    (any while it has room for a class, else those it knows) outnumber it."""
    metrics = stream.metrics
    targets = stream.learner.targets
    ids, _ = first_rows(label, len(decoder.labels))
    seen = {None, *metrics.labels, *targets.labels}
    full = len(targets.labels) >= targets.capacity  # then only known labels are scored
    for ident in ids.tolist():
        y = decoder.labels.values[ident]
        try:
            if not full or targets.find(y) >= 0:
                seen.add(y)
        except TypeError:  # unhashable: refused before the metrics see it
            continue
    return len(seen) <= metrics.max_labels


def label_codes(pipeline: Any, stream: Any, label: np.ndarray, decoder: FastDecoder
                ) -> tuple[np.ndarray, list]:
    """Per row the code the loop reads (-1: no label, or one the learner can never take:
    a multi-label map, an unhashable or NaN label, a new label when its classes are
    full), and the labels by code. Those never taken are counted as unusable here, as
    ``MulticlassRules.score`` counts them reading by reading; a new label the learner
    has room for now is the loop's to decide (``usable_label``)."""
    n = label.shape[0]
    codes = np.full(n, -1.0)
    labels: list = []
    ids, _ = first_rows(label, len(decoder.labels))
    if not ids.shape[0]:
        return codes, labels
    rows = np.flatnonzero(label >= 0)
    local = np.full(len(decoder.labels), -1.0)
    refused = np.zeros(len(decoder.labels), dtype=np.bool_)
    rules = stream.rules
    for ident in ids.tolist():
        y = decoder.labels.values[ident]
        if rules.label_problem(stream, y) is not None:
            refused[ident] = True
            continue
        local[ident] = len(labels)
        labels.append(y)
    codes[rows] = local[label[rows]]
    bad = rows[refused[label[rows]]]
    if bad.shape[0]:
        y = decoder.labels.values[label[bad[-1]]]
        pipeline.tally.unusable(stream, y, rules.label_problem(stream, y) or "refused",
                                count=int(bad.shape[0]))
    return codes, labels


def user_predictions(pred: np.ndarray, targets: Any) -> tuple[np.ndarray, list]:
    """Each row's prediction as ``labels[index[row]]``: None while the learner knew no
    class (``pred`` -1), else its class's label (classes are only ever added, so the
    final targets name every class a row predicted)."""
    return pred + 1, [targets.neutral(), *targets.labels]


def score_rows(pipeline: Any, stream: Any, codes: np.ndarray, labels: list, usable: np.ndarray,
               label_index: np.ndarray, user_labels: list) -> None:
    """Score each labelled row's prediction in row order (``metrics.update``, as
    ``MulticlassRules.score``); a label the learner could not take then (its classes
    were full) is counted as unusable instead."""
    metrics = stream.metrics
    rows = np.flatnonzero(codes >= 0)
    refused = 0
    last = None
    for i, ok in zip(rows.tolist(), usable[rows].tolist()):
        y = labels[int(codes[i])]
        if ok:
            metrics.update(y, user_labels[int(label_index[i])])
        else:
            refused += 1
            last = y
    if refused:
        targets = stream.learner.targets
        pipeline.tally.unusable(stream, last, f"the learner knows the labels {targets.labels!r} "
                                f"and can hold {targets.capacity}", count=refused)
