"""SSBOIL's learning step (seed 004): Gaussian naive Bayes that, after a
mistake, also learns synthetic instances drawn between the instance and its
class centroid.

The naive Bayes state is that of :mod:`edgelearn.kernels.naive_bayes`; the
class centroids are a second such state (``centroid_*``) that learns only
the real instances, whose ``mean`` rows are the centroids (per slot, so a
channel missing from some instances has its own count).
"""

from . import naive_bayes as NB
from ._jit import jit
from .rng import next_double


@jit
def synthesize(slots, x, k, c, r, centroid_count, centroid_mean, out):
    """``out[j] = r * centroid[c, s] + (1 - r) * x[j]`` over the instance's
    slots; a slot the centroid has not seen keeps its value ``x[j]``."""
    for j in range(k):
        s = slots[j]
        if centroid_count[c, s] > 0:
            out[j] = r * centroid_mean[c, s] + (1.0 - r) * x[j]
        else:
            out[j] = x[j]


@jit
def learn(
    slots, x, k, c, default, num, forget, var_floor, min_count,
    class_count, count, mean, var,
    centroid_class_count, centroid_count, centroid_mean, centroid_var,
    scores, synthetic, rng_state,
):
    """One labelled instance of class ``c``: predict with the model as it is
    (``default`` stands for the prediction of a model with no class yet),
    learn the instance, and if the prediction was wrong and class c has a
    centroid, learn ``num`` synthetic instances ``r c_y + (1 - r) x`` with
    ``r ~ U[0, 1)`` from ``rng_state``; then fold the instance into c's
    centroid.  Returns whether the prediction was wrong."""
    NB.joint_log_likelihood(slots, x, k, class_count, count, mean, var, var_floor, min_count, scores)
    best, _ = NB.top_two(scores)
    if best < 0:
        best = default
    wrong = best != c
    NB.learn_one(slots, x, k, c, forget, class_count, count, mean, var)
    if wrong and centroid_class_count[c] > 0.0:
        for _ in range(num):
            synthesize(slots, x, k, c, next_double(rng_state), centroid_count, centroid_mean, synthetic)
            NB.learn_one(slots, synthetic, k, c, forget, class_count, count, mean, var)
    NB.learn_one(slots, x, k, c, forget, centroid_class_count, centroid_count, centroid_mean, centroid_var)
    return wrong
