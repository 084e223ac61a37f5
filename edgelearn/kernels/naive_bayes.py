"""Gaussian naive Bayes kernels: per class and per slot, a running mean and
variance with an observation count; per class, an instance count; and the
joint log-likelihood of an instance over the slots it carries.

The owner allocates the state once (K classes, d slots) and passes it in:

* ``class_count`` (K,) float64: instances learned per class (decayed when
  forgetting; exact integers without);
* ``count`` (K, d) int64: observations of slot s among class c's instances;
* ``mean``, ``var`` (K, d) float64: their mean and *population* variance.

Learning one instance of class c folds each present (slot, value) into row c
with the step ``a = max(1 / n, forget)`` (n the new count) that
``kernels.channels`` uses: ``mean += a d``, ``var = (1 - a)(var + a d^2)``
(``d = x - old mean``), Welford's algorithm for ``forget = 0`` and an
exponentially weighted mean and variance once ``1 / n`` falls below
``forget``.  Class counts decay by ``1 - forget`` at every learned instance.

Scoring (:func:`joint_log_likelihood`): ``log P(c) + sum_s log N(x_s; mean[c, s],
v[c, s])`` for every class with a count, ``-inf`` for the others, with

* the population variance ``v = var`` (ddof 0, as River's ``GaussianNB``
  and scikit-learn's), floored at ``var_floor``: a slot that was constant
  within a class (a binary sensor) would otherwise give an infinite density
  and let one channel decide alone;
* only the slots every counted class has observed at least ``min_count``
  times (2 gives a variance).  A slot one class has not seen enough is left
  out for all classes alike: a missing channel is missing, never evidence.

These kernels serve an incremental learner (one :func:`learn_one` per
labelled instance) and a chunk-trained one (:func:`clear`, then
:func:`learn_many` over a chunk).
"""

import math

from ._jit import jit


@jit
def learn_one(slots, x, k, c, forget, class_count, count, mean, var):
    """Fold the first ``k`` (slot, value) pairs into class ``c``."""
    if forget > 0.0:
        for i in range(class_count.shape[0]):
            class_count[i] *= 1.0 - forget
    class_count[c] += 1.0
    for j in range(k):
        s = slots[j]
        n = count[c, s] + 1
        a = 1.0 / n
        if forget > a:
            a = forget
        d = x[j] - mean[c, s]
        mean[c, s] += a * d
        var[c, s] = (1.0 - a) * (var[c, s] + a * d * d)
        count[c, s] = n


@jit
def learn_many(slot_rows, value_rows, lengths, labels, m, forget, class_count, count, mean, var):
    """:func:`learn_one` for rows ``0..m-1`` in order: row i carries
    ``lengths[i]`` pairs ``(slot_rows[i, j], value_rows[i, j])`` and class
    ``labels[i]``."""
    for i in range(m):
        learn_one(slot_rows[i], value_rows[i], lengths[i], labels[i], forget, class_count, count, mean, var)


@jit
def joint_log_likelihood(slots, x, k, class_count, count, mean, var, var_floor, min_count, out):
    """Write each class's joint log-likelihood of the instance into ``out``
    (``-inf`` for a class never learned; all ``-inf`` for an empty model);
    return how many of the instance's slots entered the sum.  A negative slot
    (a channel the owner does not know) is left out."""
    n_classes = class_count.shape[0]
    total = 0.0
    for c in range(n_classes):
        total += class_count[c]
    for c in range(n_classes):
        out[c] = math.log(class_count[c] / total) if class_count[c] > 0.0 else -math.inf
    used = 0
    for j in range(k):
        s = slots[j]
        if s < 0:
            continue
        usable = True
        for c in range(n_classes):
            if class_count[c] > 0.0 and count[c, s] < min_count:
                usable = False
                break
        if not usable:
            continue
        used += 1
        for c in range(n_classes):
            if class_count[c] > 0.0:
                v = var[c, s]
                if v < var_floor:
                    v = var_floor
                d = x[j] - mean[c, s]
                out[c] -= 0.5 * (math.log(2.0 * math.pi * v) + d * d / v)
    return used


@jit
def top_two(out):
    """``(best, runner_up)`` indices of the finite scores in ``out`` (ties
    to the lower index); -1 where there is none."""
    best = -1
    runner = -1
    for c in range(out.shape[0]):
        v = out[c]
        if v == -math.inf:
            continue
        if best < 0 or v > out[best]:
            runner = best
            best = c
        elif runner < 0 or v > out[runner]:
            runner = c
    return best, runner


@jit
def forget_slot(slot, count, mean, var):
    """A recycled slot: no class has observed it."""
    for c in range(count.shape[0]):
        count[c, slot] = 0
        mean[c, slot] = 0.0
        var[c, slot] = 0.0


@jit
def clear(class_count, count, mean, var):
    """Back to an empty model (a chunk-trained learner starts each chunk so)."""
    class_count[:] = 0.0
    count[:, :] = 0
    mean[:, :] = 0.0
    var[:, :] = 0.0
