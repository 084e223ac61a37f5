"""Passive-aggressive kernels (Crammer et al. 2006), binary, modes 0/1/2.

They follow River's ``linear_model.PAClassifier`` step for step, including
its use of the squared Euclidean norm of x without the intercept's constant
feature, so that an unstandardized ``edgelearn.PA`` reproduces it.
"""

import math

from ._jit import jit


@jit
def margin(slots, x, k, w, intercept):
    acc = 0.0
    for j in range(k):
        s = slots[j]
        if s >= 0:
            acc += w[s] * x[j]
    return acc + intercept[0]


@jit
def learn(slots, x, k, y, w, intercept, C, mode, learn_intercept):
    """One PA step for ``y`` in {-1, +1}; returns the step ``tau * y``."""
    loss = 1.0 - y * margin(slots, x, k, w, intercept)
    if loss < 0.0:
        loss = 0.0
    sq = 0.0
    for j in range(k):
        sq += x[j] * x[j]
    # River squares the 2-norm rather than summing squares; so do we, to the bit.
    norm2 = math.sqrt(sq) ** 2
    if mode == 0:
        tau = loss / norm2 if norm2 > 0.0 else 0.0
    elif mode == 1:
        tau = min(C, loss / norm2) if norm2 > 0.0 else 0.0
    else:
        tau = loss / (norm2 + 0.5 / C)
    step = tau * y
    for j in range(k):
        w[slots[j]] += step * x[j]
    if learn_intercept:
        intercept[0] += step
    return step


@jit
def forget_slot(slot, w):
    w[slot] = 0.0
