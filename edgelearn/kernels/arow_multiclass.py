"""Kernels of a multiclass :class:`edgelearn.ActiveAROW`'s prediction and query terms
(issue 26): the class means' score (:func:`~edgelearn.kernels.arow.add_class_means`, which
also gives each reading's distance to the nearest class mean, for ``novelty``), the
query's novelty divisor, and the logit adjustment.

What ``ActiveAROW._score`` / ``_ask`` and ``log_replay.arow_multiclass_log_loop`` both
call, so every path computes them with the same operations in the same order."""

import math

from ._jit import jit
from .arow import add_class_means, best_two


@jit
def logit_adjust(out_m, class_counts, n_known, amount):
    """Each known class's margin minus ``amount * log(prior_c)``, ``prior_c = (n_c + 1) /
    sum (n + 1)`` its share of the labels learned with one pseudo-label per class (Menon
    et al., ICLR 2021); nothing for fewer than two classes or ``amount`` 0."""
    if amount == 0.0 or n_known < 2:
        return
    total = 0.0
    for c in range(n_known):
        total += class_counts[c] + 1.0
    for c in range(n_known):
        out_m[c] -= amount * math.log((class_counts[c] + 1.0) / total)


@jit
def multiclass_prediction(slots, z, k, capacity, class_sums, class_counts, n_known, class_mean_weight,
                          novelty, logit_adjustment, out_m, margin):
    """A multiclass decision's code and margin after :func:`~edgelearn.kernels.arow.scores` and
    :func:`~edgelearn.kernels.arow.confidence` (``margin`` is confidence's): the class
    means (with the nearest class mean's distance when ``novelty`` is on) and the logit
    adjustment move ``out_m``, and the best known row and its gap to the runner-up are
    read from it (confidence's margin when neither moved it). ``(best, margin, distance)``:
    best -1 with no class known; distance -1.0 when off or undefined (``k``: the
    reading's channels, the first features)."""
    if n_known == 0:
        return -1, margin, -1.0
    distance = -1.0
    if novelty != 0.0 or class_mean_weight != 0.0:
        nearest = add_class_means(slots, z, k, capacity, class_sums, class_counts, n_known, class_mean_weight,
                                  out_m)
        if novelty != 0.0:
            distance = nearest
    adjusted = logit_adjustment != 0.0 and n_known >= 2
    if adjusted:
        logit_adjust(out_m, class_counts, n_known, logit_adjustment)
    best, runner = best_two(out_m, n_known)
    if class_mean_weight != 0.0 or adjusted:
        margin = out_m[best] - out_m[runner] if runner >= 0 else out_m[best]
    return best, margin, distance


@jit
def novelty_query(u, distance, stats, novelty, n_known, n_classes, class_counts):
    """The query's normalized margin ``u`` after the novelty term: ``distance`` (from
    :func:`multiclass_prediction`; negative: none) joins the running sum and count in
    ``stats``, and while some of the ``n_classes`` classes has no label learned, ``u`` is
    divided by ``max(1, distance / d_ref)^novelty``, ``d_ref = stats[0] / stats[1]`` (the
    mean over every reading decided, this one included)."""
    if novelty == 0.0 or distance < 0.0:
        return u
    stats[0] += distance
    stats[1] += 1.0
    few = n_known < n_classes
    for c in range(n_known):
        if class_counts[c] < 1.0:
            few = True
    if not few:
        return u
    ratio = distance / (stats[0] / stats[1])
    if ratio > 1.0:
        return u / ratio ** novelty
    return u
