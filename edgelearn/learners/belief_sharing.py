"""What ActiveAROW and AROWRegressor share of their belief in a fleet: a diagonal
Gaussian over each channel's weights (linear, then ``n_bins`` bin weights, the
layout of :func:`edgelearn.kernels.arow.expand`), as numbers that add up across
learners (:mod:`edgelearn.learners.mergeable`): each weight's precision above the
prior, ``1 / S - 1 / prior``, and its precision x mean, ``W / S``; and each
channel's bin counts, ``count x bin_freq``.  A group model's weight is then
``sum(H) / (prior precision + sum(P))``, the precision-weighted combination of
Dredze, Kulesza & Crammer (Machine Learning 2010)."""

from __future__ import annotations

import numpy as np


def belief_columns(rows: int, n_bins: int) -> dict:
    """The per-channel columns and their widths, for ``rows`` belief rows."""
    width = rows * (1 + n_bins)
    return {"precision": width, "precision_mean": width, "bin_counts": n_bins}


def belief_by_slot(W, S, count, bin_freq, capacity: int, n_bins: int, prior: float) -> dict:
    """Per channel slot, per belief row: its linear weight's then its bin weights'
    precision above the prior and precision x mean (the rows one after another),
    and the bin counts."""
    precision = 1.0 / S - 1.0 / prior
    precision_mean = W / S

    def by_channel(feature_values):
        return np.concatenate([np.concatenate([row[:capacity, None], row[capacity:].reshape(capacity, n_bins)],
                                              axis=1) for row in feature_values], axis=1)

    return {"precision": by_channel(precision), "precision_mean": by_channel(precision_mean),
            "bin_counts": count[:, None] * bin_freq}


def load_belief(W, S, bin_freq, placed: list, part: dict, capacity: int, n_bins: int, floor: float,
                prior: float) -> None:
    """Each placed channel ``(index in part, slot)`` takes the group's means
    ``sum(H) / (1 / prior + sum(P))`` and variances ``max(1 / that, floor)``, and its
    bin frequencies ``bin_counts / n``."""
    rows = W.shape[0]
    for i, s in placed:
        precision = 1.0 / prior + np.asarray(part["precision"][i], dtype=np.float64).reshape(rows, -1)
        mean = np.asarray(part["precision_mean"][i], dtype=np.float64).reshape(rows, -1) / precision
        features = np.r_[s, capacity + s * n_bins + np.arange(n_bins)]
        W[:, features] = mean
        S[:, features] = np.maximum(1.0 / precision, floor)
        n = float(part["n"][i])
        if n > 0 and n_bins:
            bin_freq[s] = np.asarray(part["bin_counts"][i], dtype=np.float64) / n
