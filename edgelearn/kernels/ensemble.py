"""Kernels of the online ensemble (AC_OE): the three chunk-trained base
learners, the weighted vote, the weight decay and the reservoir; and the
online members beyond the paper (forgetting RLS and PA-I on a row of an
intercept, the last labels and the channels), at the end of the file.

Instances are dense rows over the channel slots: ``X`` (rows, d) float64 with
0 where a channel is absent (and in every slot not yet assigned, so sums run
over the first ``width`` slots only), and ``present`` (rows, d) bool saying which
slots the instance carried.  Standardized 0 is the channel's running mean, so
for the kernel and linear learners an absent channel counts as its mean; the
naive Bayes learner reads ``present`` and leaves it out.

A *bank* holds several models of one kind, model ``i`` in row ``i`` of every
array, so the ensemble's members and its global learner (a bank of one) share
the kernels:

* ``"kelm"``: kernel ridge regression with an RBF kernel on one-vs-rest
  targets ``T[j, c] = +1 if y_j = c else -1``: ``coef = (K + I / C)^-1 T``
  (:func:`kelm_system` builds it; the owner solves it with LAPACK, once per
  chunk), scores ``k(x, support) @ coef``; ``support`` (models, rows, d),
  ``coef`` (models, rows, classes), ``n_support`` (models,), ``gamma`` (models,).
* ``"pa"``: one-vs-rest PA-I, one pass over the rows in order; ``w``
  (models, classes, d).
* ``"nb"``: Gaussian naive Bayes (:mod:`edgelearn.kernels.naive_bayes`).

Predictions are class indices; -1 means "no opinion" (an empty model).
"""

import math

from . import naive_bayes as NB
from ._jit import jit
from .rng import next_double


@jit
def scatter(slots, z, k, x, present):
    """Dense row of the first ``k`` (slot, value) pairs; a negative slot (a
    channel the space does not know, from ``transform``) is left out."""
    x[:] = 0.0
    present[:] = False
    for j in range(k):
        s = slots[j]
        if s >= 0:
            x[s] = z[j]
            present[s] = True


@jit
def argmax_or_none(scores, n_classes):
    """Index of the largest of ``scores[:n_classes]``, first on ties; -1 if none is finite."""
    best = -1
    for c in range(n_classes):
        if math.isfinite(scores[c]) and (best < 0 or scores[c] > scores[best]):
            best = c
    return best


# -- kernel ridge ------------------------------------------------------------


@jit
def rbf(a, b, gamma, width):
    total = 0.0
    for s in range(width):
        diff = a[s] - b[s]
        total += diff * diff
    return math.exp(-gamma * total)


@jit
def kelm_system(X, labels, m, width, n_classes, gamma, C, support, gram, target):
    """The kernel ridge system of rows ``0..m-1`` of ``X``: ``gram[:m, :m] =
    K + I / C`` and one-vs-rest targets ``target[:m, :n_classes]``; the rows
    are copied into ``support`` (the model's support vectors)."""
    for i in range(m):
        support[i, :] = X[i, :]
        gram[i, i] = 1.0 + 1.0 / C
        for j in range(i):
            value = rbf(X[i], X[j], gamma, width)
            gram[i, j] = value
            gram[j, i] = value
        for c in range(n_classes):
            target[i, c] = 1.0 if labels[i] == c else -1.0


@jit
def kelm_scores(model, x, width, support, coef, n_support, gammas, n_classes, out):
    """Scores of ``x`` under kernel ridge model ``model``; -inf for all classes of an empty model."""
    m = n_support[model]
    for c in range(n_classes):
        out[c] = 0.0 if m > 0 else -math.inf
    gamma = gammas[model]
    for j in range(m):
        value = rbf(x, support[model, j], gamma, width)
        for c in range(n_classes):
            out[c] += value * coef[model, j, c]


@jit
def kelm_labels(n_models, x, width, support, coef, n_support, gammas, n_classes, scores, out):
    """Each model's predicted class for ``x`` into ``out[:n_models]``."""
    for i in range(n_models):
        kelm_scores(i, x, width, support, coef, n_support, gammas, n_classes, scores)
        out[i] = argmax_or_none(scores, n_classes)


# -- PA-I --------------------------------------------------------------------


@jit
def pa_fit(model, X, labels, m, width, n_classes, C, w):
    """One pass of one-vs-rest PA-I over rows ``0..m-1``, from zero weights."""
    d = width
    w[model, :, :] = 0.0
    for i in range(m):
        norm = 0.0
        for s in range(d):
            norm += X[i, s] * X[i, s]
        if norm == 0.0:
            continue
        for c in range(n_classes):
            sign = 1.0 if labels[i] == c else -1.0
            margin = 0.0
            for s in range(d):
                margin += w[model, c, s] * X[i, s]
            loss = 1.0 - sign * margin
            if loss > 0.0:
                tau = min(C, loss / norm)
                for s in range(d):
                    w[model, c, s] += tau * sign * X[i, s]


@jit
def pa_scores(model, x, width, w, n_classes, out):
    for c in range(n_classes):
        total = 0.0
        for s in range(width):
            total += w[model, c, s] * x[s]
        out[c] = total


@jit
def pa_labels(n_models, x, width, w, trained, n_classes, scores, out):
    """Each model's class for ``x``; -1 for a model not trained yet."""
    for i in range(n_models):
        if not trained[i]:
            out[i] = -1
            continue
        pa_scores(i, x, width, w, n_classes, scores)
        out[i] = argmax_or_none(scores, n_classes)


# -- Gaussian naive Bayes ------------------------------------------------------


@jit
def nb_fit(model, X, present, labels, m, class_count, count, mean, var, slots, values):
    """Gaussian naive Bayes model ``model`` from rows ``0..m-1``; ``slots``
    and ``values`` are (d,) work rows."""
    NB.clear(class_count[model], count[model], mean[model], var[model])
    d = X.shape[1]
    for i in range(m):
        k = 0
        for s in range(d):
            if present[i, s]:
                slots[k] = s
                values[k] = X[i, s]
                k += 1
        NB.learn_one(slots, values, k, labels[i], 0.0, class_count[model], count[model], mean[model], var[model])


@jit
def nb_scores(model, slots, z, k, class_count, count, mean, var, var_floor, min_count, out):
    NB.joint_log_likelihood(slots, z, k, class_count[model], count[model], mean[model], var[model],
                            var_floor, min_count, out)


@jit
def nb_labels(n_models, slots, z, k, class_count, count, mean, var, var_floor, min_count, scores, out):
    for i in range(n_models):
        nb_scores(i, slots, z, k, class_count, count, mean, var, var_floor, min_count, scores)
        out[i] = argmax_or_none(scores, class_count.shape[1])


# -- the ensemble ------------------------------------------------------------


@jit
def weighted_vote(member_labels, weights, n_members, global_label, alpha, n_classes, votes):
    """``argmax_c sum_i w_i [h_i = c] + alpha [I = c]``; returns (label, margin
    of the winner over the runner-up); (-1, 0) when nobody votes."""
    votes[:n_classes] = 0.0
    voted = False
    for i in range(n_members):
        if member_labels[i] >= 0:
            votes[member_labels[i]] += weights[i]
            voted = True
    if global_label >= 0:
        votes[global_label] += alpha
        voted = True
    if not voted:
        return -1, 0.0
    best = 0
    for c in range(1, n_classes):
        if votes[c] > votes[best]:
            best = c
    runner = -math.inf
    for c in range(n_classes):
        if c != best and votes[c] > runner:
            runner = votes[c]
    return best, votes[best] - runner


@jit
def decay_weights(member_labels, y, weights, errors, n_members, beta):
    """Multiply the weight of every member that got ``y`` wrong by ``beta``,
    count its error, and renormalize the weights to sum 1."""
    total = 0.0
    for i in range(n_members):
        if member_labels[i] != y:
            weights[i] *= beta
            errors[i] += 1
        total += weights[i]
    if total > 0.0:
        for i in range(n_members):
            weights[i] /= total


@jit
def majority(labels, rows, n_classes, counts):
    """The most frequent of ``labels[:rows]`` (the smallest on ties); -1 for no rows."""
    if rows == 0:
        return -1
    counts[:n_classes] = 0.0
    for i in range(rows):
        counts[labels[i]] += 1.0
    best = 0
    for c in range(1, n_classes):
        if counts[c] > counts[best]:
            best = c
    return best


@jit
def worst_member(errors, born, n_members):
    """The member with most errors on the chunk; the oldest among equals."""
    worst = 0
    for i in range(1, n_members):
        if errors[i] > errors[worst] or (errors[i] == errors[worst] and born[i] < born[worst]):
            worst = i
    return worst


@jit
def reservoir_add(X, present, labels, keep, m, res_X, res_present, res_labels, counters, rng_state):
    """Offer rows ``0..m-1`` with ``keep[i]`` to a uniform reservoir
    (Vitter's algorithm R); ``counters[0]`` rows held, ``counters[1]`` rows offered so far."""
    capacity = res_X.shape[0]
    for i in range(m):
        if not keep[i]:
            continue
        counters[1] += 1
        if counters[0] < capacity:
            target = counters[0]
            counters[0] += 1
        else:
            target = int(next_double(rng_state) * counters[1])
            if target >= capacity:
                continue
        res_X[target, :] = X[i, :]
        res_present[target, :] = present[i, :]
        res_labels[target] = labels[i]


@jit
def stack_rows(X1, P1, y1, m1, X2, P2, y2, m2, X, P, y):
    """Rows ``0..m1-1`` of the first set, then ``0..m2-1`` of the second, into ``X, P, y``."""
    for i in range(m1):
        X[i, :] = X1[i, :]
        P[i, :] = P1[i, :]
        y[i] = y1[i]
    for i in range(m2):
        X[m1 + i, :] = X2[i, :]
        P[m1 + i, :] = P2[i, :]
        y[m1 + i] = y2[i]
    return m1 + m2



# -- online members (beyond the paper) ---------------------------------------
#
# Members that learn every labelled instance, not only at a chunk's end: a
# forgetting recursive-least-squares learner and a PA-I learner, both linear
# and one-vs-rest, on the *online row* ``v = [1, lag block, x[:width]]``: an
# intercept, the last labels learned (the lag block, see :func:`push_label`)
# and the standardized channels.  The row's length ``a = 1 + n_lag + width``
# grows as channels are assigned, and every loop runs over ``v[:a]`` only, so
# slots not assigned yet keep their initial state.


@jit
def online_row(x, width, lags, n_lag, v):
    """``v[:a] = [1, lags[:n_lag], x[:width]]``; returns ``a``."""
    v[0] = 1.0
    for j in range(n_lag):
        v[1 + j] = lags[j]
    for s in range(width):
        v[1 + n_lag + s] = x[s]
    return 1 + n_lag + width


@jit
def push_label(lags, n_lag, y, n_classes):
    """Shift the lag block one label back and put ``y`` in front.  A label is
    one value for two classes (+1 for class 1, -1 for class 0) and a one-hot
    block of ``n_classes`` values otherwise; ``n_lag`` is the whole block's length."""
    b = 1 if n_classes == 2 else n_classes
    for j in range(n_lag - 1, b - 1, -1):
        lags[j] = lags[j - b]
    if n_lag < b:
        return
    if n_classes == 2:
        lags[0] = 1.0 if y == 1 else -1.0
    else:
        for c in range(n_classes):
            lags[c] = 1.0 if y == c else 0.0


@jit
def linear_label(W, v, a, n_classes, scores):
    """``argmax_c W[c, :a] @ v[:a]`` (first on ties)."""
    for c in range(n_classes):
        total = 0.0
        for j in range(a):
            total += W[c, j] * v[j]
        scores[c] = total
    return argmax_or_none(scores, n_classes)


@jit
def rls_learn(P, W, v, a, y, n_classes, lam, Pv):
    """One step of exponentially weighted recursive least squares on the
    one-vs-rest targets ``+1 if y = c else -1`` (forgetting factor ``lam``):
    ``k = P v / (lam + v' P v)``, ``W[c] += k (t_c - W[c] v)``,
    ``P = (P - k v' P) / lam``.  Then every diagonal entry of ``P`` above 1
    (its starting value) is scaled back to 1 by ``P = S P S`` with ``S``
    diagonal, which keeps ``P`` symmetric positive definite: a direction the
    rows stop exciting (a channel held at its mean) would otherwise see
    ``P`` grow as ``lam^-t`` (covariance wind-up)."""
    for i in range(a):
        total = 0.0
        for j in range(a):
            total += P[i, j] * v[j]
        Pv[i] = total
    denom = lam
    for i in range(a):
        denom += v[i] * Pv[i]
    for c in range(n_classes):
        target = 1.0 if y == c else -1.0
        err = target
        for j in range(a):
            err -= W[c, j] * v[j]
        step = err / denom
        for j in range(a):
            W[c, j] += step * Pv[j]
    for i in range(a):
        for j in range(a):
            P[i, j] = (P[i, j] - Pv[i] * Pv[j] / denom) / lam
    for i in range(a):  # Pv becomes the scale S
        Pv[i] = 1.0 / math.sqrt(P[i, i]) if P[i, i] > 1.0 else 1.0
    for i in range(a):
        for j in range(a):
            P[i, j] *= Pv[i] * Pv[j]


@jit
def pa_learn(W, v, a, y, n_classes, C):
    """One one-vs-rest PA-I step (Crammer et al. 2006) on ``v[:a]``."""
    norm = 0.0
    for j in range(a):
        norm += v[j] * v[j]
    if norm == 0.0:
        return
    for c in range(n_classes):
        sign = 1.0 if y == c else -1.0
        margin = 0.0
        for j in range(a):
            margin += W[c, j] * v[j]
        loss = 1.0 - sign * margin
        if loss > 0.0:
            tau = min(C, loss / norm)
            for j in range(a):
                W[c, j] += tau * sign * v[j]
