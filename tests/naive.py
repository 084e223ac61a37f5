"""Slow, plain references for the jitted kernels in ``edgelearn.kernels``.

Written from docs/learners.md and the kernels' docstrings, not from
the kernels' code, so that a test comparing the two compares two independent
readings.  Every function works on copies and returns new values; state is
passed as dicts of arrays:

* channel statistics ``{"count", "mean", "var", "last_seen"}``;
* a PAACDS model ``{"W", "b", "active", "h", "h_n", "h_mean", "h_var"}``
  (``b``: one bias per row, the optional intercept).

Sums over an instance run in the instance's order and sums over the model in
slot order (Python ``sum`` is left to right): that is the plain reading, and
it keeps a kernel and its reference within rounding of each other even where
near-ties decide which slot survives.
"""

import math

import numpy as np

MASK64 = (1 << 64) - 1


def _copy(state):
    return {key: np.array(value, copy=True) for key, value in state.items()}


# -- SplitMix64 ---------------------------------------------------------------


def splitmix64(state):
    """One SplitMix64 step on an int state: ``(new_state, output)``."""
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, z ^ (z >> 31)


def uniform(state):
    """``(new_state, u)``, u on [0, 1) from the top 53 bits of one output."""
    state, z = splitmix64(state)
    return state, (z >> 11) / 2.0**53


# -- channel statistics ---------------------------------------------------------


def channel_step(n, forget):
    """Step size of the n-th observation: Welford's ``1/n``, floored at the
    forgetting rate once ``1/n`` falls below it."""
    return max(1.0 / n, forget)


def information_step(n, forget):
    # The kernel switches on ``n * forget >= 1`` rather than comparing 1/n
    # with forget; the two differ only by rounding, but it is what runs.
    return forget if n * forget >= 1.0 else 1.0 / n


def moving_moments(mean, var, x, a):
    """Fold x into a (population) mean and variance with step a."""
    d = x - mean
    return mean + a * d, (1.0 - a) * (var + a * d * d)


def batch_moments(xs, steps):
    """Mean and variance of ``xs`` under the weights a sequence of steps
    gives: observation i keeps ``steps[i] * prod_{j > i} (1 - steps[j])``.
    With steps 1/n these are ``np.mean`` and ``np.var``; with a constant step
    an exponentially weighted mean and variance.  A batch definition, to
    check the one-pass recursion against."""
    xs = np.asarray(xs, dtype=np.float64)
    steps = np.asarray(steps, dtype=np.float64)
    weights = np.empty(len(xs))
    for i in range(len(xs)):
        weights[i] = steps[i] * np.prod(1.0 - steps[i + 1 :])
    mean = float(np.sum(weights * xs))
    return mean, float(np.sum(weights * (xs - mean) ** 2))


def z_score(x, n, mean, var, eps, z_max):
    """Standardized x; 0 while fewer than 2 observations give a scale."""
    if n < 2:
        return 0.0
    return float(np.clip((x - mean) / math.sqrt(var + eps), -z_max, z_max))


def observe(slots, values, stats, t, forget, eps, z_max):
    """Fold one instance into the statistics, then standardize it with the
    updated statistics (ChannelSpace: "updated *before* standardizing").
    Returns ``(z, new_stats)``."""
    stats = _copy(stats)
    z = np.zeros(len(slots))
    for j, (s, x) in enumerate(zip(slots, values)):
        n = int(stats["count"][s]) + 1
        stats["mean"][s], stats["var"][s] = moving_moments(
            stats["mean"][s], stats["var"][s], x, channel_step(n, forget)
        )
        stats["count"][s] = n
        stats["last_seen"][s] = t
        z[j] = z_score(x, n, stats["mean"][s], stats["var"][s], eps, z_max)
    return z, stats


def standardize(slots, values, stats, eps, z_max):
    """Read-only z; slot -1 (a channel the space does not know) gives 0."""
    return np.array(
        [
            0.0 if s < 0 else z_score(x, stats["count"][s], stats["mean"][s], stats["var"][s], eps, z_max)
            for s, x in zip(slots, values)
        ]
    )


def claim_slot(last_seen, n_assigned, t, evict_after):
    """Next unused slot; else the least recently seen (lowest on ties) if it
    has been away at least ``evict_after`` instances; else -1."""
    if n_assigned < len(last_seen):
        return n_assigned
    oldest = int(np.argmin(last_seen))
    return oldest if t - last_seen[oldest] >= evict_after else -1


def reset_slot(stats, slot):
    stats = _copy(stats)
    stats["count"][slot] = 0
    stats["mean"][slot] = 0.0
    stats["var"][slot] = 0.0
    stats["last_seen"][slot] = -1
    return stats


# -- PAACDS ---------------------------------------------------------------------


def _information(slot, h):
    # A channel the model does not know is new, with the prior information 1.
    return 1.0 if slot < 0 else float(h[slot])


def _is_shared(slot, active):
    return slot >= 0 and bool(active[slot])


def confidences(slots, active, h):
    """``(p_s, p_n)``: shares of the instance's information held by shared
    and new slots; by count if the information sums to 0; ``(0, 1)`` for an
    empty instance (nothing is shared)."""
    infos = [_information(s, h) for s in slots]
    shared = [_is_shared(s, active) for s in slots]
    total = sum(infos)
    if total > 0.0:
        p_s = sum(i for i, sh in zip(infos, shared) if sh) / total
    elif len(slots):
        p_s = sum(shared) / len(slots)
    else:
        p_s = 0.0
    return p_s, 1.0 - p_s


def scores(slots, z, model):
    """``(p_s * W[c, shared] . z_shared + b[c] for every row c, p_s)``."""
    W, b, active = model["W"], model["b"], model["active"]
    p_s, _ = confidences(slots, active, model["h"])
    out = np.array(
        [
            p_s * sum(W[c, s] * zj for s, zj in zip(slots, z) if _is_shared(s, active)) + b[c]
            for c in range(W.shape[0])
        ]
    )
    return out, p_s


def top_two(out, n_known, n_rows):
    """Best known class (0 if none), and the best of the other known classes
    plus one unused row standing for a class not seen yet (-1 if none)."""
    best = int(np.argmax(out[:n_known])) if n_known > 0 else 0
    others = [c for c in range(min(n_known + 1, n_rows)) if c != best]
    if not others:
        return best, -1
    return best, max(others, key=lambda c: (out[c], -c))


def update_information(slots, z, model, forget, k0):
    """Each present slot's short-horizon variance of z, and
    ``h = (k0 * 1 + n * ewvar) / (k0 + n)``."""
    model = _copy(model)
    for s, zj in zip(slots, z):
        n = int(model["h_n"][s]) + 1
        model["h_mean"][s], model["h_var"][s] = moving_moments(
            model["h_mean"][s], model["h_var"][s], zj, information_step(n, forget)
        )
        model["h_n"][s] = n
        model["h"][s] = (k0 * 1.0 + n * model["h_var"][s]) / (k0 + n)
    return model


def observe_scores(slots, values, stats, t, forget, eps, z_max, model, h_forget, k0):
    """Observe and standardize, score with the information as it was before
    this instance, then fold z into the information.
    Returns ``(z, out, p_s, new_stats, new_model)``."""
    z, stats = observe(slots, values, stats, t, forget, eps, z_max)
    out, p_s = scores(slots, z, model)
    return z, out, p_s, stats, update_information(slots, z, model, h_forget, k0)


def draw_query(margin, delta, rng):
    """``(asked, new_rng)``: ask with probability ``delta / (delta + |q|)``."""
    rng, u = uniform(rng)
    return u < delta / (delta + abs(margin)), rng


def hold_budget(wanted, budget, target, window=1000, tolerance=0.05, min_burst=2.0, shortest=250):
    """The label budget (``rate_control``'s docstring): ``(ask, new_budget)`` with
    ``budget = (readings, asks)``.  Never more asks than ``target * readings +
    room``, the room ``tolerance * target * readings`` up to ``burst - 1`` (``burst``
    from ``1 / (tolerance * target)`` readings after the window), plus a start-up
    loan ``(1 + tolerance) * target * (shortest - readings)`` until ``shortest``, ``burst =
    max(min_burst, tolerance * target * window)``; within that, ask when the
    asks are at or behind ``target * readings`` (a full bucket), else as wanted.
    ``target <= 0``: no budget.  A budget of three counts ``(readings, asks,
    forgone)`` is an informed start's: no loan, and over the first ``shortest``
    readings a full bucket gives up a label the rule does not want (counted in
    ``forgone``, taken off the credit) instead of asking for it."""
    if len(budget) == 3:
        return _hold_informed_budget(wanted, budget, target, window, tolerance, min_burst, shortest)
    readings, asks = budget
    readings += 1
    if target <= 0.0:
        ask = bool(wanted)
    else:
        burst = max(min_burst, tolerance * target * window)
        credit = burst + target * readings - asks
        # up to burst - 1 until just after the window (rate_control.room)
        room = min(tolerance * target * readings,
                   burst - 1.0 + min(1.0, tolerance * target * max(0.0, readings - window)))
        # the start-up loan: what a stream of `shortest` readings allows, repaid by then
        loan = (1.0 + tolerance) * target * max(0.0, shortest - readings)
        ask = False if credit - 1.0 < burst - room - loan else (True if credit >= burst else bool(wanted))
    return ask, (readings, asks + int(ask))


def _hold_informed_budget(wanted, budget, target, window, tolerance, min_burst, shortest):
    readings, asks, forgone = budget
    readings += 1
    if target <= 0.0:
        return bool(wanted), (readings, asks + int(bool(wanted)), forgone)
    burst = max(min_burst, tolerance * target * window)
    credit = burst + target * readings - asks - forgone
    room = min(tolerance * target * readings,
               burst - 1.0 + min(1.0, tolerance * target * max(0.0, readings - window)))
    if credit - 1.0 < burst - room:
        ask = False
    elif credit >= burst and not (readings <= shortest and not wanted):
        ask = True
    elif credit >= burst:
        ask, forgone = False, forgone + 1
    else:
        ask = bool(wanted)
    return ask, (readings, asks + int(ask), forgone)


def budgeted_query(wanted, level, budget, target, gain, adapt):
    """``(asked, level, budget)``: the budget decides on the rule's wish; the
    level takes ``adapt``'s step on the wish unless the budget refused it (no
    step at all without a target)."""
    asked, budget = hold_budget(wanted, budget, target)
    if target > 0.0 and (asked or not wanted):
        level = adapt(level, wanted, target, gain)
    return asked, level, budget


def query(margin, delta, rng, budget, target, gain):
    """PAACDS's query under the budget: ``(asked, delta, rng, budget)``."""
    wanted, rng = draw_query(margin, delta, rng)
    asked, delta, budget = budgeted_query(wanted, delta, budget, target, gain, adapt_delta)
    return asked, delta, rng, budget


def adapt_delta(delta, asked, target, gain):
    return min(max(delta * math.exp(gain * (target - float(asked))), 1e-3), 1e6)


def _norms(slots, z, active):
    norm_s = sum(zj * zj for s, zj in zip(slots, z) if active[s])
    norm_n = sum(zj * zj for s, zj in zip(slots, z) if not active[s])
    return norm_s, norm_n


def _tau(loss, denom, C, variant_i):
    if variant_i:
        denom += 1.0 / (2.0 * C)
    # A zero denominator means every update term is 0 (p z = 0 on both
    # parts), so any tau gives the same model; 0 avoids dividing by it.
    return 0.0 if denom <= 0.0 else min(C, loss / denom)


def learn_binary(slots, z, y, model, C, variant_i, learn_intercept=False):
    """PAACDS / PAACDS-I update for y in {-1, +1} with the current model.
    Returns ``(new_model, updated)``, updated meaning the loss was positive
    (docs/learners.md, PAACDS step 5; step 6 sparsifies after each such update).
    The margin includes the bias b; with ``learn_intercept`` the bias is a
    constant feature 1, always shared and not weighted by p_s: its square
    adds 1 to the denominator and it moves by ``tau y``."""
    model = _copy(model)
    W, b, active = model["W"], model["b"], model["active"]
    p_s, p_n = confidences(slots, active, model["h"])
    q = p_s * sum(W[0, s] * zj for s, zj in zip(slots, z) if active[s]) + b[0]
    loss = max(0.0, 1.0 - y * q)
    if loss <= 0.0:
        return model, False
    norm_s, norm_n = _norms(slots, z, active)
    bias_sq = 1.0 if learn_intercept else 0.0
    tau = _tau(loss, p_s**2 * norm_s + p_n**2 * norm_n + bias_sq, C, variant_i)
    new = [not active[s] for s in slots]
    for s, zj, is_new in zip(slots, z, new):
        if is_new:
            W[0, s] = tau * p_n * y * zj
        else:
            W[0, s] += tau * p_s * y * zj
    active[slots] = True
    if learn_intercept:
        b[0] += tau * y
    return model, True


def learn_multiclass(slots, z, y, n_known, model, C, variant_i, learn_intercept=False):
    """Crammer's multiclass PA on the shared/new split: row y toward z, the
    best-scoring other row r (among the known classes plus one unused row)
    away.  With ``learn_intercept`` each row's bias is a constant feature 1
    (in both rows of the update, so it adds 2 to the denominator):
    ``b[y] += tau``, ``b[r] -= tau``.  Returns ``(new_model, updated, scores)``."""
    model = _copy(model)
    W, b, active = model["W"], model["b"], model["active"]
    out, p_s = scores(slots, z, model)
    p_n = 1.0 - p_s
    others = [c for c in range(min(n_known + 1, W.shape[0])) if c != y]
    if not others:
        return model, False, out
    r = max(others, key=lambda c: (out[c], -c))
    loss = max(0.0, 1.0 - (out[y] - out[r]))
    if loss <= 0.0:
        return model, False, out
    norm_s, norm_n = _norms(slots, z, active)
    bias_sq = 1.0 if learn_intercept else 0.0
    tau = _tau(loss, 2.0 * (p_s**2 * norm_s + p_n**2 * norm_n + bias_sq), C, variant_i)
    for s, zj in zip(slots, z):
        if active[s]:
            W[y, s] += tau * p_s * zj
            W[r, s] -= tau * p_s * zj
        else:
            W[y, s] = tau * p_n * zj
            W[r, s] = -tau * p_n * zj
    active[slots] = True
    if learn_intercept:
        b[y] += tau
        b[r] -= tau
    return model, True, out


def sparsify(model, n_slots, lam, B, max_weights, tie_key=None):
    """Scale to ``sum |W| h <= lam`` (all rows; lam <= 0: off), then keep the
    ``min(max(1, ceil(B n_active)), max_weights)`` active slots with the
    largest ``max_c |W[c, i]| h[i]``, ties to the smaller ``tie_key`` (default:
    the lower slot); the others leave the model with weight 0."""
    model = _copy(model)
    W, active, h = model["W"], model["active"], model["h"]
    slots = [i for i in range(n_slots) if active[i]]
    if lam > 0.0:
        total = sum(abs(W[c, i]) * h[i] for i in slots for c in range(W.shape[0]))
        if total > 0.0:
            W[:, slots] *= min(1.0, lam / total)
    keep = min(max(1, math.ceil(B * len(slots))), max_weights)
    score = np.array([np.max(np.abs(W[:, i])) * h[i] for i in slots])
    keys = np.arange(float(n_slots)) if tie_key is None else np.asarray(tie_key)
    order = np.lexsort(([keys[i] for i in slots], -score)) if slots else np.zeros(0, dtype=np.int64)
    for j in order[keep:]:
        W[:, slots[j]] = 0.0
        active[slots[j]] = False
    return model


def kth_largest(values, kth):
    """The kth largest (1-based) of values."""
    return float(np.sort(np.asarray(values, dtype=np.float64))[::-1][kth - 1])


def forget_slot(model, slot):
    """A recycled slot: out of the model, information back to the prior 1."""
    model = _copy(model)
    model["W"][:, slot] = 0.0
    model["active"][slot] = False
    model["h"][slot] = 1.0
    model["h_n"][slot] = 0
    model["h_mean"][slot] = 0.0
    model["h_var"][slot] = 0.0
    return model


# -- PA (River's PAClassifier) ---------------------------------------------------


def pa_margin(slots, x, w, intercept):
    """``w . x + b`` over the known slots (slot -1 contributes nothing)."""
    return sum(w[s] * xj for s, xj in zip(slots, x) if s >= 0) + float(intercept)


def pa_learn(slots, x, y, w, intercept, C, mode, learn_intercept):
    """PA (mode 0), PA-I (1), PA-II (2) for y in {-1, +1}, as River's
    PAClassifier: hinge loss, tau from ``||x||^2`` (the intercept's constant
    feature not counted).  Returns ``(new_w, new_intercept, tau * y)``."""
    w = np.array(w, dtype=np.float64, copy=True)
    loss = max(0.0, 1.0 - y * pa_margin(slots, x, w, intercept))
    norm2 = float(np.linalg.norm(np.asarray(x, dtype=np.float64))) ** 2
    if mode == 0:
        tau = loss / norm2 if norm2 > 0 else 0.0
    elif mode == 1:
        tau = min(C, loss / norm2) if norm2 > 0 else 0.0
    else:
        tau = loss / (norm2 + 1.0 / (2.0 * C))
    step = tau * y
    w[np.asarray(slots)] += step * np.asarray(x, dtype=np.float64)
    return w, float(intercept) + (step if learn_intercept else 0.0), step


# -- Gaussian naive Bayes ----------------------------------------------------------


def nb_learn(slots, x, c, model, forget):
    """Fold one instance of class c into a naive Bayes model
    ``{"class_count", "count", "mean", "var"}``: every class count decays by
    ``1 - forget``, class c's gains 1, and each present slot's mean and
    population variance in row c move with the channel step."""
    model = _copy(model)
    model["class_count"] *= 1.0 - forget
    model["class_count"][c] += 1.0
    for s, v in zip(slots, x):
        n = int(model["count"][c, s]) + 1
        model["mean"][c, s], model["var"][c, s] = moving_moments(
            model["mean"][c, s], model["var"][c, s], v, channel_step(n, forget)
        )
        model["count"][c, s] = n
    return model


def gaussian_log_pdf(x, mean, variance):
    return -0.5 * math.log(2.0 * math.pi * variance) - (x - mean) ** 2 / (2.0 * variance)


def nb_joint_log_likelihood(slots, x, model, var_floor, min_count):
    """``(scores, n_used)``: log prior plus the Gaussian log densities (population
    variance, floored) of the slots that every class with a count has seen at
    least ``min_count`` times; ``-inf`` for classes never learned."""
    class_count = model["class_count"]
    counted = [c for c in range(len(class_count)) if class_count[c] > 0]
    scores = np.full(len(class_count), -np.inf)
    total = sum(class_count)
    usable = [
        (s, v) for s, v in zip(slots, x) if s >= 0 and all(model["count"][c, s] >= min_count for c in counted)
    ]
    for c in counted:
        score = math.log(class_count[c] / total)
        for s, v in usable:
            score += gaussian_log_pdf(v, model["mean"][c, s], max(model["var"][c, s], var_floor))
        scores[c] = score
    return scores, len(usable)


def nb_forget_slot(model, slot):
    model = _copy(model)
    for key in ("count", "mean", "var"):
        model[key][:, slot] = 0
    return model


# -- PAFE -----------------------------------------------------------------------------


def by_position(slots, x, tracked):
    """An instance's values in the order of ``tracked`` slots, 0 where absent."""
    values = dict(zip((int(s) for s in slots), x))
    return np.array([values.get(int(s), 0.0) for s in tracked])


def ridge_map(X, Y, ridge):
    """``(X^T X + ridge I)^-1 X^T Y`` from the data matrices, by ``np.linalg.solve``."""
    X = np.asarray(X, dtype=np.float64)
    return np.linalg.solve(X.T @ X + ridge * np.eye(X.shape[1]), X.T @ np.asarray(Y, dtype=np.float64))


def gram(rows_old, rows_new):
    """``(G11, G22, G21)`` of the overlap rows (one row per instance)."""
    X1 = np.asarray(rows_old, dtype=np.float64).reshape(len(rows_old), -1)
    X2 = np.asarray(rows_new, dtype=np.float64).reshape(len(rows_new), -1)
    return X1.T @ X1, X2.T @ X2, X2.T @ X1


def clipped_hinge(y, f):
    return min(1.0, max(0.0, 1.0 - y * f))


def mistake(y, f):
    """Whether margin f (0 predicts negative) gets label y (+1/-1) wrong."""
    return float((1.0 if f > 0 else -1.0) != y)


def eta_combination(T):
    return math.sqrt(8.0 * math.log(2.0) / T)


def binary_entropy(p):
    return 0.0 if p in (0.0, 1.0) else -p * math.log(p) - (1 - p) * math.log(1 - p)


def eta_selection(T):
    return math.sqrt(8.0 / T * (2.0 * math.log(2.0) + (T - 1) * binary_entropy(1.0 / (T - 1))))


def doubling_horizon(t, horizon):
    """The fixed horizon, else the largest power of two not above round t; at least 2."""
    if horizon > 0:
        return float(max(horizon, 2))
    return float(max(2, 2 ** int(math.floor(math.log2(t)))))


def combine_update(a, loss1, loss2, eta):
    v = np.asarray(a, dtype=np.float64) * np.exp(-eta * np.array([loss1, loss2]))
    return v / v.sum()


def fixed_share_update(a, loss1, loss2, eta, delta):
    v = np.asarray(a, dtype=np.float64) * np.exp(-eta * np.array([loss1, loss2]))
    u = delta * v.sum() / 2.0 + (1.0 - delta) * v
    return u / u.sum()


# -- SSBOIL sample synthesis --------------------------------------------------------------


def synthesis_learn(slots, x, c, default, num, forget, var_floor, min_count, model, centroids, rng):
    """One labelled instance: predict (``default`` when no class has a
    score), learn it, learn ``num`` instances ``r c_y + (1 - r) x`` after a
    mistake if class c has a centroid (a slot the centroid lacks keeps x),
    then fold x into the centroids (a naive Bayes state of real instances).
    Returns ``(model, centroids, rng, wrong)``."""
    scores, _ = nb_joint_log_likelihood(slots, x, model, var_floor, min_count)
    best = int(np.argmax(scores)) if np.isfinite(scores).any() else default
    wrong = best != c
    model = nb_learn(slots, x, c, model, forget)
    if wrong and centroids["class_count"][c] > 0:
        for _ in range(num):
            rng, r = uniform(rng)
            synthetic = [
                r * centroids["mean"][c, s] + (1 - r) * v if centroids["count"][c, s] > 0 else v
                for s, v in zip(slots, x)
            ]
            model = nb_learn(slots, synthetic, c, model, forget)
    return model, nb_learn(slots, x, c, centroids, forget), rng, wrong


# -- multi-label semi-supervised online KELM (seed 002) ---------------------------


def kelm_kernel(U, V, gamma):
    """RBF kernel matrix ``exp(-gamma ||u - v||^2)`` between the rows of U and V."""
    U = np.atleast_2d(np.asarray(U, dtype=np.float64))
    V = np.atleast_2d(np.asarray(V, dtype=np.float64))
    squared = ((U[:, None, :] - V[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * squared)


def laplacian(S):
    """``D - S`` with D the row sums of S."""
    return np.diag(S.sum(axis=1)) - S


def kelm_block_similarities(Kbb, targets, scores, n_neighbors):
    """``(Sx, Sy)`` of one block.  Sx: each instance's ``min(n_neighbors,
    nb - 1)`` most similar others by the kernel (ties: lower index), an edge
    if either end picked it, weighted by the kernel.  Sy: the cosine of the
    label vectors floored at 0, a missing target (0) filled with the sign of
    its score (+1 if > 0, else -1); no edges without labels."""
    nb = len(Kbb)
    k = min(n_neighbors, nb - 1)
    picked = np.zeros((nb, nb), dtype=bool)
    for i in range(nb):
        others = sorted((j for j in range(nb) if j != i), key=lambda j: (-Kbb[i, j], j))
        picked[i, others[:k]] = True
    Sx = np.where(picked | picked.T, Kbb, 0.0)
    np.fill_diagonal(Sx, 0.0)
    targets = np.asarray(targets, dtype=np.float64)
    if targets.shape[1] == 0:
        return Sx, np.zeros((nb, nb))
    filled = np.where(targets != 0, targets, np.where(np.asarray(scores) > 0, 1.0, -1.0))
    norms = np.linalg.norm(filled, axis=1)
    Sy = np.maximum(filled @ filled.T / np.outer(norms, norms), 0.0)
    np.fill_diagonal(Sy, 0.0)
    return Sx, Sy


def kelm_omega(X, c, Lx, Ly, gamma, lam, gam):
    """``Omega = I + (C + lam Lx + gam Ly) K`` of a window whose features
    are the rows of X."""
    K = kelm_kernel(X, X, gamma)
    return np.eye(len(c)) + (np.diag(c) + lam * Lx + gam * Ly) @ K


def block_diagonal_from_local(L_local, block, n):
    """The full n x n matrix of a per-block local layout: row a's entry q
    is column (first row of a's block) + q."""
    full = np.zeros((n, n))
    for a in range(n):
        first = a
        while first > 0 and block[first - 1] == block[a]:
            first -= 1
        size = int(np.sum(block[:n] == block[a]))
        full[a, first:first + size] = L_local[a, :size]
    return full


def kelm_loo_scores(X, c, T, Lx, Ly, gamma, lam, gam):
    """Each labelled row refit out: the model with its label set removed
    (c_a = 0, t_a = 0; the graphs kept) solved from scratch scores it.
    Returns the (score, positive) pairs of its known targets, rows then labels."""
    S, Y = [], []
    for a in np.flatnonzero(c > 0):
        c_out, T_out = c.copy(), T.copy()
        c_out[a], T_out[a] = 0.0, 0.0
        omega = kelm_omega(X, c_out, Lx, Ly, gamma, lam, gam)
        f = kelm_kernel(X[a], X, gamma)[0] @ np.linalg.solve(omega, c_out[:, None] * T_out)
        for j in np.flatnonzero(T[a]):
            S.append(f[j])
            Y.append(T[a, j] > 0)
    return np.array(S, dtype=np.float64), np.array(Y, dtype=bool)


def count_cut(S, Y):
    """Yang's PCut pooled over labels: midway between the P-th and the
    (P+1)-th highest score, P the positives; NaN without both classes."""
    P = int(np.sum(Y))
    if P == 0 or P == len(Y):
        return math.nan
    s = np.sort(S)[::-1]
    return 0.5 * (s[P - 1] + s[P])


def f1_cut(S, Y):
    """The pooled F1-optimal cut: of the midpoints between consecutive
    distinct sorted scores (apart by more than 1e-9 of their range), the
    highest with the largest F1 of ``S > cut``; NaN without both classes or
    two distinct scores."""
    P = int(np.sum(Y))
    if P == 0 or P == len(Y):
        return math.nan
    s = np.sort(S)[::-1]
    distinct = s[:-1] - s[1:] > 1e-9 * (s[0] - s[-1])  # closer: one score
    if not distinct.any():
        return math.nan
    cuts = 0.5 * (s[:-1] + s[1:])[distinct]
    f1 = [2.0 * np.sum(Y & (S > cut)) / (np.sum(S > cut) + P) for cut in cuts]
    best = max(f1)
    return float(max(cut for cut, value in zip(cuts, f1) if value == best))


def learned_cut(S, Y, threshold):
    """MultiLabelKELM's cut from leave-one-out scores: PCut, or midway
    between PCut and the F1-optimal cut."""
    if threshold == "pcut":
        return count_cut(S, Y)
    return 0.5 * (count_cut(S, Y) + f1_cut(S, Y))


class KELMReference:
    """The multi-label KELM window rebuilt from scratch at every question,
    from docs/learners.md and MultiLabelKELM's docstring: lists of instances,
    each block's similarity graphs kept whole, the window's Laplacians those
    of the graphs among the members still there, Omega inverted by NumPy.

    ``observe(x)`` puts an instance in the pending block (adding the block
    to the window first if it is full); ``label(x, t)`` sets targets t (a
    vector in {-1, 0, +1}^m) on the newest instance with features x (an
    unlabelled one first, pending first), or appends x labelled.  Labels
    are indexed in order of first appearance: the label graph of a block
    uses the labels known when it enters.
    """

    def __init__(self, window, block_size, max_unlabelled, gamma, J0, lam, gam, n_neighbors, m, threshold="pcut-f1"):
        self.window, self.block_size, self.max_unlabelled = window, block_size, max_unlabelled
        self.gamma, self.J0, self.lam, self.gam = gamma, J0, lam, gam
        self.n_neighbors, self.m = n_neighbors, m
        self.threshold = threshold
        # A label is predicted present when its score is above the cut:
        # refit from the window's leave-one-out scores after every block.
        self.cut = 0.0 if isinstance(threshold, str) else float(threshold)
        self.items = []      # window, oldest first: {"uid", "x", "t", "c", "block"}
        self.pending = []    # {"x", "t"}
        self.graphs = {}     # block id -> (uids, Sx, Sy) as built
        self.next_uid = 0
        self.next_block = 0
        self.n_known = 0

    # -- the window as matrices
    def arrays(self):
        X = np.array([it["x"] for it in self.items]).reshape(len(self.items), -1)
        T = np.array([it["t"] for it in self.items]).reshape(len(self.items), self.m)
        c = np.array([it["c"] for it in self.items])
        return X, T, c

    def laplacians(self):
        n = len(self.items)
        Lx, Ly = np.zeros((n, n)), np.zeros((n, n))
        position = {it["uid"]: a for a, it in enumerate(self.items)}
        for uids, Sx, Sy in self.graphs.values():
            live = [i for i, u in enumerate(uids) if u in position]
            rows = [position[uids[i]] for i in live]
            Lx[np.ix_(rows, rows)] = laplacian(Sx[np.ix_(live, live)])
            Ly[np.ix_(rows, rows)] = laplacian(Sy[np.ix_(live, live)])
        return Lx, Ly

    def omega(self):
        X, _, c = self.arrays()
        Lx, Ly = self.laplacians()
        return kelm_omega(X, c, Lx, Ly, self.gamma, self.lam, self.gam)

    def scores(self, x):
        """``f(x) = k(x, window)^T Omega^-1 C T`` (zeros for an empty window)."""
        if not self.items:
            return np.zeros(self.m)
        X, T, c = self.arrays()
        k = kelm_kernel(x, X, self.gamma)[0]
        return k @ np.linalg.solve(self.omega(), c[:, None] * T)

    # -- penalties
    def penalty(self, t, labelled):
        """``J0 / N``: N the labelled instances among ``labelled`` (target
        vectors) sharing t's most frequent positive label, or, for t with
        no positive label, those with none; at least 1."""
        labelled = np.array(labelled).reshape(-1, self.m)
        positive = np.flatnonzero(np.asarray(t) > 0)
        if positive.size:
            N = max(int(np.sum(labelled[:, j] > 0)) for j in positive)
        else:
            N = int(np.sum(~(labelled > 0).any(axis=1)))
        return self.J0 / max(1, N)

    # -- the stream
    def observe(self, x):
        if len(self.pending) == self.block_size:
            self.flush()
        self.pending.append({"x": np.array(x, dtype=np.float64), "t": np.zeros(self.m)})

    def label(self, x, t):
        t = np.asarray(t, dtype=np.float64)
        self.n_known = max(self.n_known, int(np.flatnonzero(t).max()) + 1)
        places = [(self.pending, True), (self.items, True), (self.pending, False), (self.items, False)]
        for where, unlabelled_only in places:
            for item in reversed(where):
                if unlabelled_only and (item["t"] != 0).any():
                    continue
                if np.array_equal(item["x"], x):
                    item["t"] = t.copy()
                    if where is self.items:
                        others = [it["t"] for it in self.items if it["c"] > 0 and it is not item]
                        item["c"] = self.penalty(t, others + [t])
                    return
        self.observe(x)
        self.pending[-1]["t"] = t.copy()

    def flush(self):
        block = self.pending
        nb = len(block)
        unlabelled = [it for it in self.items if it["c"] == 0]
        pending_unlabelled = sum(not (b["t"] != 0).any() for b in block)
        excess = max(0, len(unlabelled) + pending_unlabelled - self.max_unlabelled)
        gone = {id(it) for it in unlabelled[:excess]}
        self.items = [it for it in self.items if id(it) not in gone]
        self.items = self.items[max(0, len(self.items) + nb - self.window):]
        F = np.array([self.scores(b["x"]) for b in block]).reshape(nb, self.m)
        Xb = np.array([b["x"] for b in block])
        Tb = np.array([b["t"] for b in block]).reshape(nb, self.m)
        known = self.n_known
        Sx, Sy = kelm_block_similarities(kelm_kernel(Xb, Xb, self.gamma), Tb[:, :known], F[:, :known],
                                         self.n_neighbors)
        labelled = [it["t"] for it in self.items if it["c"] > 0] + [t for t in Tb if (t != 0).any()]
        uids = []
        for b in block:
            is_labelled = (b["t"] != 0).any()
            c = self.penalty(b["t"], labelled) if is_labelled else 0.0
            self.items.append({"uid": self.next_uid, "x": b["x"], "t": b["t"], "c": c, "block": self.next_block})
            uids.append(self.next_uid)
            self.next_uid += 1
        self.graphs[self.next_block] = (uids, Sx, Sy)
        self.next_block += 1
        self.pending = []
        live = {it["uid"] for it in self.items}
        self.graphs = {k: g for k, g in self.graphs.items() if live.intersection(g[0])}
        if isinstance(self.threshold, str):
            X, T, c = self.arrays()
            Lx, Ly = self.laplacians()
            S, Y = kelm_loo_scores(X, c, T, Lx, Ly, self.gamma, self.lam, self.gam)
            cut = learned_cut(S, Y, self.threshold)
            if not math.isnan(cut):
                self.cut = cut


# -- online ensemble, AC_OE (seed 003) ------------------------------------------------


class OnlineEnsembleReference:
    """AC_OE read from docs/learners.md with lists and NumPy, instance by
    instance.  Instances are dense rows ``x`` (0 where absent) with a boolean
    ``present`` row; classes are indices.  Members are dicts
    ``{"model", "weight", "errors", "born"}`` in the order they were first
    filled; a model is ``None`` (no vote) or what ``fit`` returns."""

    def __init__(self, base, chunk_size, n_members, beta, alpha, reservoir_size, C, gamma,
                 n_classes, var_floor, min_count, seed):
        self.base, self.n, self.k, self.beta, self.alpha = base, chunk_size, n_members, beta, alpha
        self.m, self.C, self.gamma, self.K = reservoir_size, C, gamma, n_classes
        self.var_floor, self.min_count = var_floor, min_count
        self.rng = int(seed)
        self.members = []
        self.global_model = None
        self.chunk = []  # (x, present, c, correct)
        self.reservoir = []  # (x, present, c)
        self.offered = 0
        self.chunks = 0

    def fit(self, rows):
        X = np.array([r[0] for r in rows])
        P = np.array([r[1] for r in rows])
        y = np.array([r[2] for r in rows])
        if self.base == "kelm":
            gamma = self.gamma if self.gamma is not None else 1.0 / max(1, int(P.any(axis=0).sum()))
            K = kelm_kernel(X, X, gamma)
            T = np.where(y[:, None] == np.arange(self.K)[None, :], 1.0, -1.0)
            return ("kelm", X, np.linalg.solve(K + np.eye(len(y)) / self.C, T), gamma)
        if self.base == "pa":
            W = np.zeros((self.K, X.shape[1]))
            for x, c in zip(X, y):
                norm = float(x @ x)
                if norm == 0.0:
                    continue
                for label in range(self.K):
                    sign = 1.0 if label == c else -1.0
                    loss = 1.0 - sign * float(W[label] @ x)
                    if loss > 0.0:
                        W[label] += min(self.C, loss / norm) * sign * x
            return ("pa", W)
        d = X.shape[1]
        model = {"class_count": np.zeros(self.K), "count": np.zeros((self.K, d), dtype=np.int64),
                 "mean": np.zeros((self.K, d)), "var": np.zeros((self.K, d))}
        for x, p, c in zip(X, P, y):
            slots = np.flatnonzero(p)
            model = nb_learn(slots, x[slots], int(c), model, 0.0)
        return ("nb", model)

    def predict_model(self, model, x, present):
        if model is None:
            return -1
        if model[0] == "kelm":
            _, X, coef, gamma = model
            scores = np.exp(-gamma * ((X - x) ** 2).sum(axis=1)) @ coef
        elif model[0] == "pa":
            scores = model[1] @ x
        else:
            slots = np.flatnonzero(present)
            scores, _ = nb_joint_log_likelihood(slots, x[slots], model[1], self.var_floor, self.min_count)
        finite = np.isfinite(scores)
        return int(np.argmax(np.where(finite, scores, -np.inf))) if finite.any() else -1

    def votes(self, x, present):
        votes = np.zeros(self.K)
        voted = False
        for member in self.members:
            label = self.predict_model(member["model"], x, present)
            if label >= 0:
                votes[label] += member["weight"]
                voted = True
        label = self.predict_model(self.global_model, x, present) if self.chunks else -1
        if label >= 0:
            votes[label] += self.alpha
            voted = True
        return votes, voted

    def predict(self, x, present):
        votes, voted = self.votes(x, present)
        if voted:
            return int(np.argmax(votes))
        if not self.chunk:
            return -1
        return int(np.argmax(np.bincount([r[2] for r in self.chunk], minlength=self.K)))

    def learn(self, x, present, c):
        predicted = self.predict(x, present)
        for member in self.members:
            if self.predict_model(member["model"], x, present) != c:
                member["weight"] *= self.beta
                member["errors"] += 1
        total = sum(member["weight"] for member in self.members)
        for member in self.members:
            member["weight"] /= total
        self.chunk.append((x.copy(), present.copy(), c, predicted == c))
        if len(self.chunk) == self.n:
            self.end_chunk()

    def end_chunk(self):
        newcomer = {"model": self.fit(self.chunk), "weight": 1.0, "errors": 0, "born": self.chunks}
        if len(self.members) < self.k:
            self.members.append(newcomer)
        else:
            worst = max(range(self.k), key=lambda i: (self.members[i]["errors"], -self.members[i]["born"]))
            self.members[worst] = newcomer
        total = sum(member["weight"] for member in self.members)
        for member in self.members:
            member["weight"] /= total
            member["errors"] = 0
        self.global_model = self.fit(self.chunk + [(x, p, c, True) for x, p, c in self.reservoir])
        for x, p, c, correct in self.chunk:
            if not correct:
                continue
            self.offered += 1
            if len(self.reservoir) < self.m:
                self.reservoir.append((x, p, c))
            else:
                self.rng, u = uniform(self.rng)
                j = int(u * self.offered)
                if j < self.m:
                    self.reservoir[j] = (x, p, c)
        self.chunk = []
        self.chunks += 1


# -- drift metrics (AC_OE, section 3.3) -----------------------------------------


def is_convergence_point(raccs, t, n_ref, eps):
    """Eq. 14 at chunk ``t``, read term by term: the ``n_ref`` reference points
    after ``t`` each differ by less than ``eps`` from the point before them, and
    the means of their two halves differ by less than ``eps``."""
    for i in range(1, n_ref + 1):
        if not abs(raccs[t + i - 1] - raccs[t + i]) < eps:
            return False
    half = n_ref // 2
    first = np.mean(np.asarray(raccs[t + 1:t + 1 + half], dtype=float))
    second = np.mean(np.asarray(raccs[t + 1 + half:t + 1 + n_ref], dtype=float))
    return abs(first - second) < eps


def recovery(raccs, drift_chunks, n_ref, eps):
    """RSA per drift by a plain search: the first convergence point ``t >= d``
    whose reference points end before the next drift chunk (or the stream's end);
    ``(t - d) * (1 - mean(raccs[d..t]))``, or None."""
    out = []
    for i, d in enumerate(drift_chunks):
        end = drift_chunks[i + 1] if i + 1 < len(drift_chunks) else len(raccs)
        found = None
        t = d
        while t + n_ref < end:
            if is_convergence_point(raccs, t, n_ref, eps):
                found = t
                break
            t += 1
        if found is None:
            out.append(None)
        else:
            out.append((found - d) * (1.0 - np.mean(np.asarray(raccs[d:found + 1], dtype=float))))
    return out


# -- ActiveAROW (diagonal AROW, Crammer, Kulesza & Dredze 2009) ------------------
#
# A model is ``{"W", "S", "b", "Sb"}``: the mean and diagonal variance of the
# belief over each row's weights, and of each row's intercept (Sb = 0: none).


def arow_margin_variance(slots, z, model, row):
    """``(m, v)``: the mean margin ``W . z + b`` and its variance
    ``z' diag(S) z + Sb`` under the belief; unknown slots (-1) add nothing."""
    known = [(s, v) for s, v in zip(slots, z) if s >= 0]
    m = sum(model["W"][row, s] * v for s, v in known) + model["b"][row]
    var = sum(model["S"][row, s] * v * v for s, v in known) + model["Sb"][row]
    return m, var


def arow_learn_row(slots, z, y, model, row, r, floor=0.0):
    """AROW's update with the full covariance restricted to its diagonal:
    with x = (z, 1) and Sigma = diag(S, Sb), ``mu += alpha y Sigma x`` and
    ``Sigma -= beta Sigma x x' Sigma`` keeping only the diagonal, each moved
    variance kept at ``floor`` or above."""
    model = _copy(model)
    m, v = arow_margin_variance(slots, z, model, row)
    if y * m >= 1.0:
        return model, False
    beta = 1.0 / (v + r)
    alpha = (1.0 - y * m) * beta
    for s, x in zip(slots, z):
        sigma_x = model["S"][row, s] * x
        model["W"][row, s] += alpha * y * sigma_x
        model["S"][row, s] = max(model["S"][row, s] - beta * sigma_x**2, floor)
    if model["Sb"][row] > 0.0:
        model["b"][row] += alpha * y * model["Sb"][row]
        model["Sb"][row] = max(model["Sb"][row] - beta * model["Sb"][row] ** 2, floor)
    return model, True


def arow_learn_multiclass(slots, z, c, n_known, model, r, floor=0.0):
    """One-vs-rest: class c's row learns +1, the other known rows -1; the newest
    class's row, never learned (all zero), first takes the mean of the rows
    before it."""
    W, b = model["W"], model["b"]
    if 0 < c == n_known - 1 and b[c] == 0.0 and not np.any(W[c]):
        W[c] = W[:c].mean(axis=0)
        b[c] = b[:c].mean()
    changed = False
    for row in range(n_known):
        model, moved = arow_learn_row(slots, z, 1.0 if row == c else -1.0, model, row, r, floor)
        changed = changed or moved
    return model, changed


def arow_add_class_means(slots, z, capacity, sums, counts, n_known, weight, m):
    """Each known class's margin plus ``weight`` times its nearest-class-mean score over
    the present channels (slots in [0, capacity)): ``(mu . z - |mu|^2 / 2) /
    sqrt(present)``, ``mu = sums / count`` (nothing for a class with no label)."""
    m = [float(x) for x in m]
    present = [(int(s), float(v)) for s, v in zip(slots, z) if 0 <= s < capacity]
    if weight == 0.0 or not present:
        return m
    for c in range(n_known):
        if counts[c] <= 0.0:
            continue
        mu = {s: sums[c][s] / counts[c] for s, _ in present}
        score = sum(mu[s] * v for s, v in present) - 0.5 * sum(mu[s] ** 2 for s, _ in present)
        m[c] += weight / math.sqrt(len(present)) * score
    return m


def arow_count_class_mean(slots, z, capacity, c, sums, counts):
    """Class ``c``'s sums and count after one more label of it."""
    sums, counts = [list(row) for row in sums], list(counts)
    for s, v in zip(slots, z):
        if 0 <= s < capacity:
            sums[c][int(s)] += float(v)
    counts[c] += 1.0
    return sums, counts


def arow_keep_for_refit(slots, z, y, stats, eps, kept, kept_y, n):
    """A learned label kept for ActiveAROW's refits: row ``n`` of ``kept`` holds, per
    slot, the raw value the reading's ``z`` stands for under ``stats`` (``mean + z
    sqrt(var + eps)``; NaN for a channel not in it) and ``kept_y[n]`` its label; the new
    count, or -1 when the buffer was full (no more refits; nothing kept)."""
    kept, kept_y = np.array(kept, dtype=float), np.array(kept_y, dtype=float)
    if n < 0 or n == len(kept):
        return kept, kept_y, -1
    kept[n] = np.nan
    for s, v in zip(slots, z):
        if s >= 0:
            kept[n, s] = stats["mean"][s] + v * math.sqrt(stats["var"][s] + eps)
    kept_y[n] = y
    return kept, kept_y, n + 1


def arow_refit(kept, kept_y, n, stats, eps, z_max, edges, freq, capacity, model, r, floor, binary, n_known,
               sums, counts, passes=1):
    """ActiveAROW's refit: the belief at the prior (weights 0, variances 1, the intercept's
    1 if it has one) and no class sums, then each of the first ``n`` kept labels learned
    in turn on its values standardized under today's ``stats`` and expanded under
    today's bin frequencies, the whole sequence ``passes`` times: ``(model, sums, counts)``."""
    model = _copy(model)
    model["W"][:] = 0.0
    model["S"][:] = 1.0
    model["b"][:] = 0.0
    model["Sb"][:] = np.where(model["Sb"] > 0.0, 1.0, 0.0)
    sums, counts = np.zeros_like(sums), np.zeros_like(counts)
    for i in list(range(n)) * passes:
        slots = [s for s in range(kept.shape[1]) if not math.isnan(kept[i, s])]
        z = standardize(slots, [kept[i, s] for s in slots], stats, eps, z_max)
        f_slots, f_z = arow_expand(slots, z, edges, freq, capacity)
        if binary:
            model, _ = arow_learn_row(f_slots, f_z, kept_y[i], model, 0, r, floor)
        else:
            c = int(kept_y[i])
            model, _ = arow_learn_multiclass(f_slots, f_z, c, n_known, model, r, floor)
            sums, counts = arow_count_class_mean(f_slots, f_z, capacity, c, sums, counts)
            sums, counts = np.array(sums), np.array(counts)
    return model, sums, counts


def arow_confidence(m, v, n_known, binary):
    """``(margin, |margin| / sd)`` of a decision: binary, row 0; multiclass,
    the best known row against the runner-up (or alone), variances added."""
    if binary:
        margin, var = m[0], v[0]
    elif n_known == 0:
        return 0.0, 0.0
    else:
        order = sorted(range(n_known), key=lambda c: (-m[c], c))
        if n_known == 1:
            margin, var = m[order[0]], v[order[0]]
        else:
            margin, var = m[order[0]] - m[order[1]], v[order[0]] + v[order[1]]
    if var <= 0.0:
        return margin, (math.inf if margin != 0.0 else 0.0)
    return margin, abs(margin) / math.sqrt(var)


def arow_draw_query(u, threshold, power, rng):
    """``(rng, ask)``: ask with probability 1 / (1 + (u / threshold)^power)."""
    rng, draw = uniform(rng)
    return rng, draw < 1.0 / (1.0 + (u / threshold) ** power)


def arow_adapt_threshold(threshold, asked, target, gain):
    threshold *= math.exp(gain * (target - float(asked)))
    return min(max(threshold, 1e-6), 1e6)


def arow_bin_of(value, edges):
    """The bin of ``value`` among ``len(edges) + 1``: edges are lower bounds."""
    return sum(1 for e in edges if value >= e)


def arow_count_bins(slots, z, edges, freq, count, forget):
    """Each present channel's bin frequencies move toward its one-hot bin at
    rate ``max(1 / count, forget)``."""
    freq = np.array(freq, dtype=float)
    for s, v in zip(slots, z):
        if s < 0 or freq.shape[1] == 0:  # unknown channel, or a model without bins
            continue
        a = max(1.0 / max(count[s], 1), forget)
        onehot = np.zeros(freq.shape[1])
        onehot[arow_bin_of(v, edges)] = 1.0
        freq[s] = (1.0 - a) * freq[s] + a * onehot
    return freq


def arow_expand(slots, z, edges, freq, capacity):
    """``(slots, z)`` of the model's features: the values, then each
    channel's one-hot bin code minus its bin frequencies (slots ``capacity +
    s * n_bins + b``); an unknown channel's codes are slot -1, value 0."""
    n_bins = freq.shape[1]
    out_slots, out_z = list(slots), list(z)
    for s, v in zip(slots, z):
        for b in range(n_bins):
            if s < 0:
                out_slots.append(-1)
                out_z.append(0.0)
            else:
                out_slots.append(capacity + s * n_bins + b)
                out_z.append(float(b == arow_bin_of(v, edges)) - freq[s, b])
    return out_slots, out_z


# -- SurpriseDetector (edgelearn/kernels/anomaly.py) ------------------------------
#
# A channel's statistics are a dict {"n", "mean", "dev", "fast", "prev", "step", "lo",
# "hi", "run", "runlen", "bin", "season_step"}, its histograms a (kinds, bins) array,
# its transitions an (n_bins, n_bins) array, its ring of past values an array of
# max(season, 1); params a dict of the parameter names.

SURPRISE_KINDS = ("level", "change", "shift", "context", "stuck", "range", "season")


def surprise_season_on(ch, p):
    return p["season"] > 0 and ch["n"] >= p["season"] + p["warmup"]


def surprise_bin(z, n_bins):
    return min(n_bins - 1, max(0, math.floor((z + 3.0) * n_bins / 6.0)))


def surprise_kinds(ch, trans, ring, x, p):
    """The seven surprises (nats) of value x against a channel's statistics."""
    sd = ch["dev"] * math.sqrt(math.pi / 2) + 1e-12
    z = (x - ch["mean"]) / sd
    step_sd = ch["step"] * math.sqrt(math.pi / 2) + 1e-12
    d = (x - ch["prev"]) / step_sd
    r = p["fast_rate"]
    fast = ch["fast"] + r * (x - ch["fast"])
    u = (fast - ch["mean"]) / (sd * math.sqrt(r / (2 - r)))
    b = surprise_bin(z, p["n_bins"])
    row = trans[int(ch["bin"])]
    context = -math.log((row[b] + 1.0) / (sum(row) + p["n_bins"]))
    stuck = (ch["run"] + 1.0) / (ch["runlen"] + 1.0) if x == ch["prev"] else 0.0
    beyond = max(x - ch["hi"], ch["lo"] - x, 0.0) / (ch["hi"] - ch["lo"] + 1e-12)
    season = 0.0
    if surprise_season_on(ch, p):  # the value P readings ago, against the typical change at lag P
        v = (x - ring[int(ch["n"]) % p["season"]]) / (ch["season_step"] * math.sqrt(math.pi / 2) + 1e-12)
        season = v * v / 2
    return [z * z / 2, d * d / 2, u * u / 2, context, stuck, p["range_scale"] * beyond, season]


def surprise_tail(hist_row, a, width, prior):
    """P(surprise >= a): the histogram's mass at or past a (bins of ``width`` on
    log2(1 + a), linear inside a bin; past the last bin's left edge its mass times
    edge / a), plus a prior of weight ``prior`` with tail exp(-a), over the total."""
    pos = math.log2(1.0 + a) / width
    b = math.floor(pos)
    last = len(hist_row) - 1
    if b < last:
        tail = sum(hist_row[b + 1:]) + hist_row[b] * (1 - (pos - b))
    else:
        tail = hist_row[last] * (2.0 ** (last * width) - 1.0) / a
    return (tail + prior * math.exp(-a)) / (sum(hist_row) + prior)


def surprise_learn(ch, hist, trans, ring, x, a, p):
    """Fold x into a channel (copies returned): histograms (once warm; the season
    kind's once it speaks), the ring and the typical change at the season's lag, then
    the transition table, the slow and fast means, the deviations, runs and range."""
    ch, hist, trans, ring = dict(ch), hist.copy(), trans.copy(), ring.copy()
    if ch["n"] >= p["warmup"]:
        for k in range(hist.shape[0]):
            if k == 6 and not surprise_season_on(ch, p):
                continue
            hist[k] *= 1.0 - p["hist_rate"]
            b = min(int(math.log2(1.0 + a[k]) / p["bin_width"]), hist.shape[1] - 1)
            hist[k, b] += 1.0
    period = p["season"]
    if period > 0:
        if ch["n"] >= period:
            r = max(p["slow_rate"], 1.0 / (ch["n"] - period + 1))
            ch["season_step"] += r * (abs(x - ring[int(ch["n"]) % period]) - ch["season_step"])
        ring[int(ch["n"]) % period] = x
    if ch["n"] == 0:
        ch.update(mean=x, fast=x, lo=x, hi=x, prev=x, run=0.0, runlen=1.0, bin=p["n_bins"] // 2, n=1.0)
        return ch, hist, trans, ring
    n = ch["n"] + 1
    rate = max(p["slow_rate"], 1.0 / n)
    sd = ch["dev"] * math.sqrt(math.pi / 2) + 1e-12
    b = surprise_bin((x - ch["mean"]) / sd, p["n_bins"])
    prev_bin = int(ch["bin"])
    trans[prev_bin] *= 1.0 - p["trans_rate"]
    trans[prev_bin, b] += 1.0
    ch["bin"] = b
    ch["dev"] += rate * (abs(x - ch["mean"]) - ch["dev"])
    ch["mean"] += rate * (x - ch["mean"])
    ch["fast"] += p["fast_rate"] * (x - ch["fast"])
    ch["step"] += rate * (abs(x - ch["prev"]) - ch["step"])
    if x == ch["prev"]:
        ch["run"] += 1
    else:
        ch["runlen"] += rate * (ch["run"] + 1 - ch["runlen"])
        ch["run"] = 0.0
    ch["lo"], ch["hi"], ch["prev"], ch["n"] = min(ch["lo"], x), max(ch["hi"], x), x, n
    return ch, hist, trans, ring


def surprise_spread(ch):
    return ch["dev"] * math.sqrt(math.pi / 2) + 1e-12


def surprise_fisher(total, k):
    """-log10 of the chi-squared (2k degrees of freedom) survival at 2 ln(10) total:
    Fisher's combination of k p-values whose -log10 sum to total."""
    h = math.log(10) * total
    return total - math.log10(sum(h ** i / math.factorial(i) for i in range(k)))


def surprise_reading(channels, hists, transs, rings, weights, confirmed, slots, values, p, learn):
    """A reading's evidence: per channel and kind -log10 of the tail probability (0
    while the channel has fewer than warmup + 1 readings, and for kinds off); per warm
    channel Fisher's combination of its weighted kinds, or the evidence of a
    confirmed anomaly ``confirmed[c]`` (pairs of value, evidence) within conf_tol
    spreads of its value if larger; the best channel's less log10(warm channels), at
    least 0; the slot that gave it; per channel the row [evidence per kind...,
    confirmed evidence, value]; and, with learn, the channels after learning."""
    channels, hists, transs, rings = dict(channels), dict(hists), dict(transs), dict(rings)
    kinds_on = [k for k in range(7) if k in p["kinds"]]
    best, top, warm, rows = 0.0, -1, 0, []
    for c, x in zip(slots, values):
        a = surprise_kinds(channels[c], transs[c], rings[c], x, p)
        row = [0.0] * 7 + [0.0, x, 0.0]
        if channels[c]["n"] >= p["warmup"] + 1:
            warm += 1
            for k in kinds_on:
                if k == 6 and not surprise_season_on(channels[c], p):
                    continue
                tail = surprise_tail(hists[c][k], a[k], p["bin_width"], p["prior"])
                row[k] = -math.log10(max(tail, 1e-300))
            reach = p["conf_tol"] * surprise_spread(channels[c])
            row[7] = max([e for v, e in confirmed[c] if e > 0 and abs(x - v) <= reach], default=0.0)
            e = max(surprise_fisher(sum(weights[c][k] * row[k] for k in range(7)), len(kinds_on)), row[7])
            row[9] = e
            if e > best:
                best, top = e, c
        rows.append(row)
        if learn:
            channels[c], hists[c], transs[c], rings[c] = surprise_learn(
                channels[c], hists[c], transs[c], rings[c], x, a, p)
    if warm > 1:
        best -= math.log10(warm)
    return max(best, 0.0), top, rows, channels, hists, transs, rings


def surprise_alarm(evidence, ctl, q):
    """An alarm needs evidence at least the threshold and above the episode's decaying
    maximum; then the episode maximum, the threshold (towards the target rate, if any),
    the label tokens and the counters move. ``ctl`` = [threshold, episode, tokens,
    readings, alarms, asked]; ``q`` = [scale, episode decay, target, gain, label rate,
    most tokens]. Returns (alarm, ask, new ctl)."""
    threshold, episode, tokens, readings, alarms, asked = ctl
    alarm = evidence >= threshold and evidence > episode
    episode = max(episode * q[1], evidence)
    if q[2] > 0:
        threshold *= math.exp(q[3] * (float(alarm) - q[2]))
        threshold = min(max(threshold, q[0] / 999.0), q[0] * 999.0)  # scores 0.001 to 0.999
    tokens = min(tokens + q[4], q[5])
    ask = alarm and tokens >= 1.0
    if ask:
        tokens -= 1.0
        asked += 1
    return alarm, ask, [threshold, episode, tokens, readings + 1, alarms + float(alarm), asked]


def surprise_feedback(weights, confirmed, spreads, slots, rows, real, threshold, channels_log,
                      shrink, tolerance, k):
    """Learn an answer (copies returned); limit = threshold + channels_log. Real: the
    channel whose weighted kinds combine (Fisher, k kinds) to the most gets every
    kind weight at least 1, and remembers [value, max(that evidence, the row's
    confirmed evidence, limit)] in place of its weakest confirmed entry (the first of
    equals). False: each channel whose weighted kinds combine to at least the limit
    has its weights scaled so that they would combine to shrink * limit, and its
    confirmed entries within tolerance * spread of the value are emptied."""
    weights = {c: list(w) for c, w in weights.items()}
    confirmed = {c: [list(e) for e in v] for c, v in confirmed.items()}
    limit = threshold + channels_log

    def total(c, row):
        return sum(weights[c][i] * row[i] for i in range(7))

    if real:
        best, where = -1.0, None
        for i, (c, row) in enumerate(zip(slots, rows)):
            e = surprise_fisher(total(c, row), k)
            if e > best:
                best, where = e, (i, c)
        if where is not None:
            i, c = where
            weights[c] = [max(w, 1.0) for w in weights[c]]
            evidences = [e for _, e in confirmed[c]]
            weakest = evidences.index(min(evidences))
            confirmed[c][weakest] = [rows[i][8], max(best, rows[i][7], limit)]
        return weights, confirmed
    lo, hi = shrink * limit, shrink * limit + 100.0
    for _ in range(200):  # the sum whose combination is shrink * limit
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if surprise_fisher(mid, k) < shrink * limit else (lo, mid)
    for c, row in zip(slots, rows):
        s = total(c, row)
        if surprise_fisher(s, k) >= limit:
            weights[c] = [w * hi / s for w in weights[c]]
        for entry in confirmed[c]:
            if abs(row[8] - entry[0]) <= tolerance * spreads[c]:
                entry[1] = 0.0
    return weights, confirmed
# -- AROWRegressor (AROW regression, error feedback, adaptive conformal intervals) ----
#
# The learner's scalars are a dict (``offset``, ``n_ref``, ``sigma2``, ``n_noise``,
# ``alpha_t``, ``q``, ``gauss_q``, ``scores`` (a list, oldest first), ``window``,
# ``log_sd_mean``, ``n_widths``, ``threshold``, ``tokens``, ``covered``, ``scored``,
# ``last_e``, ``last_t``, ``y_mean``, ``y_var``, ``last_beyond``, ``rejected``), the lag table a dict of lag bucket
# to ``[n, sxy, sxx, syy]``, the model ActiveAROW's ``{"W", "S", "b", "Sb"}``.

AROWR_NOISE_PRIOR = 5.0
AROWR_EXACT_LAGS = 16
AROWR_LAG_PRIOR = 5.0


def arowr_missing_variance(slots, count, last_seen, t, evict_after, W, freq, capacity):
    """Sum over the channels with a scale (count >= 2), absent from the reading and
    seen fewer than evict_after readings ago, of the variance of their term over a
    standardized value and their bin frequencies: W^2 + E_p[W_b^2] - E_p[W_b]^2."""
    present = {s for s in slots if s >= 0}
    total = 0.0
    n_bins = freq.shape[1]
    for s in range(capacity):
        if s in present or count[s] < 2 or last_seen[s] < 0 or t - last_seen[s] >= evict_after:
            continue
        wb = [W[0, capacity + s * n_bins + b] for b in range(n_bins)]
        p = list(freq[s])
        second = sum(pb * w * w for pb, w in zip(p, wb))
        first = sum(pb * w for pb, w in zip(p, wb))
        total += W[0, s] ** 2 + second - first * first
    return total


def arowr_noise_variance(st):
    n = st["n_noise"]
    return (AROWR_NOISE_PRIOR * st["y_var"] + n * st["sigma2"]) / (AROWR_NOISE_PRIOR + n)


def arowr_lag_bucket(d, n_lags):
    """Lags 1..16 one bucket each (0..15), then one per doubling: 17-32 -> 16,
    33-64 -> 17, ...; None past the table."""
    if d < 1:
        return None
    if d <= AROWR_EXACT_LAGS:
        bucket = d - 1
    else:
        bucket = AROWR_EXACT_LAGS + math.ceil(math.log2(d / AROWR_EXACT_LAGS)) - 1
    return bucket if bucket < n_lags else None


def arowr_feedback(st, lags, t, n_lags):
    """(correction, variance factor) from the last reference's residual."""
    if st["last_t"] < 0:
        return 0.0, 1.0
    bucket = arowr_lag_bucket(t - st["last_t"], n_lags)
    if bucket is None or bucket not in lags:
        return 0.0, 1.0
    n, sxy, sxx, syy = lags[bucket]
    if n < 2 or sxx <= 0 or syy <= 0:
        return 0.0, 1.0
    shrink = n / (n + AROWR_LAG_PRIOR)
    return shrink * sxy / sxx * st["last_e"], 1.0 - shrink * min(sxy * sxy / (sxx * syy), 1.0)


def arowr_estimate(slots, z, edges, freq, capacity, model, st, count, last_seen, t, evict_after,
                   lags, n_lags, r):
    """(features, m, v, mv, yhat, sd, model_sd) of a reading."""
    fs, fz = arow_expand(slots, z, edges, freq, capacity)
    m, v = arow_margin_variance(fs, fz, model, 0)
    mv = arowr_missing_variance(slots, count, last_seen, t, evict_after, model["W"], freq, capacity)
    if st["n_noise"] < 1:
        sd = model_sd = math.inf
    else:
        sigma2 = arowr_noise_variance(st)
        sd = math.sqrt(sigma2 * (1 + v / r) + mv)
        model_sd = math.sqrt(sigma2 * (1 + v / r))
    correction, factor = arowr_feedback(st, lags, t, n_lags)
    return (fs, fz), m, v, mv, st["offset"] + m + correction, sd * math.sqrt(factor), model_sd


def arowr_interval(yhat, sd, st):
    if not math.isfinite(sd):
        return -math.inf, math.inf
    return yhat - st["q"] * sd, yhat + st["q"] * sd


def arowr_conformal_quantile(scores, level):
    """The ceil(level (n + 1))-th smallest score, capped at the largest; 0 below the first."""
    n = len(scores)
    if n == 0:
        return 0.0
    rank = math.ceil(level * (n + 1))
    if rank <= 0:
        return 0.0
    return sorted(scores)[min(rank, n) - 1]


def arowr_decide(slots, z, edges, freq, capacity, model, st, count, last_seen, t, evict_after,
                 lags, n_lags, r, power, rng, target, gain, width_forget, burst):
    """``(st, rng, (yhat, sd, lower, upper, asked))``: the prediction, its interval,
    and the question: u = exp(mean log sd - log model_sd) (0 while it is infinite),
    the running mean then updated; target 1 asks always; else a draw of ActiveAROW's
    rule, granted only if the bucket (target per reading, at most burst) holds 1."""
    st = dict(st)
    _, _, _, _, yhat, sd, model_sd = arowr_estimate(slots, z, edges, freq, capacity, model, st, count,
                                                    last_seen, t, evict_after, lags, n_lags, r)
    lower, upper = arowr_interval(yhat, sd, st)
    if not math.isfinite(model_sd) or model_sd <= 0:
        u = 0.0
    else:
        st["n_widths"] += 1
        if st["n_widths"] == 1:
            u = 1.0
            st["log_sd_mean"] = math.log(model_sd)
        else:
            u = math.exp(st["log_sd_mean"] - math.log(model_sd))
            a = max(1.0 / st["n_widths"], width_forget)
            st["log_sd_mean"] += a * (math.log(model_sd) - st["log_sd_mean"])
    if target >= 1.0:
        return st, rng, (yhat, sd, lower, upper, True)
    tokens = min(st["tokens"] + target, burst)
    rng, drawn = arow_draw_query(u, st["threshold"], power, rng)
    asked = drawn and tokens >= 1.0
    st["tokens"] = tokens - 1.0 if asked else tokens
    st["threshold"] = arow_adapt_threshold(st["threshold"], asked, target, gain)
    return st, rng, (yhat, sd, lower, upper, asked)


def arowr_learn(slots, z, y, edges, freq, capacity, model, st, count, last_seen, t, evict_after,
                lags, n_lags, r, floor, huber, reject, alpha, gamma, noise_forget, lag_forget):
    """``(model, st, lags, verdict)`` after learning reference y of the reading at t."""
    model, st, lags = _copy(model), dict(st), {k: list(v) for k, v in lags.items()}
    st["scores"] = list(st["scores"])
    (fs, fz), m, v, mv, yhat, sd, _ = arowr_estimate(slots, z, edges, freq, capacity, model, st, count,
                                                     last_seen, t, evict_after, lags, n_lags, r)
    st["n_ref"] += 1

    def add_pair(e):
        if st["last_t"] >= 0:
            bucket = arowr_lag_bucket(t - st["last_t"], n_lags)
            if bucket is not None:
                row = lags.setdefault(bucket, [0.0, 0.0, 0.0, 0.0])
                row[0] += 1
                w = max(1.0 / row[0], lag_forget)
                x = st["last_e"]
                row[1] += w * (x * e - row[1])
                row[2] += w * (x * x - row[2])
                row[3] += w * (e * e - row[3])
        st["last_e"], st["last_t"] = e, t

    if st["n_ref"] == 1:
        st["offset"] = st["y_mean"] = y
        add_pair(0.0)
        return model, st, lags, -1
    verdict = -1
    e = y - (st["offset"] + m)
    if math.isfinite(sd):
        lower, upper = arowr_interval(yhat, sd, st)
        covered = lower <= y <= upper
        verdict = int(covered)
        st["scored"] += 1
        st["covered"] += int(covered)
        model_sd = st["q"] / st["gauss_q"] * math.sqrt(arowr_noise_variance(st) * (1 + v / r) + mv)
        st["scores"] = (st["scores"] + [abs(y - yhat) / sd if sd > 0 else math.inf])[-st["window"]:]
        st["alpha_t"] += gamma * (alpha - (0.0 if covered else 1.0))
        level = min(max(1.0 - st["alpha_t"], 0.0), 1.0)
        n = len(st["scores"])
        if n < st["window"] and math.ceil(level * (n + 1)) > n:
            st["q"] = st["gauss_q"]
        else:
            st["q"] = arowr_conformal_quantile(st["scores"], level)
        beyond = abs(e) > reject * model_sd
        alone = beyond and not st["last_beyond"]
        st["last_beyond"] = beyond
        if alone:  # a spike: the verdict counts, nothing is learned
            st["rejected"] += 1
            return model, st, lags, verdict
        bound = huber * model_sd
        if bound > 0:
            e = min(max(e, -bound), bound)
    # the clipped reference offset + m + e feeds the statistics and the lag table
    a = max(1.0 / st["n_ref"], noise_forget)
    delta = st["offset"] + m + e - st["y_mean"]
    st["y_mean"] += a * delta
    st["y_var"] = (1 - a) * (st["y_var"] + a * delta * delta)
    add_pair(e)
    st["n_noise"] += 1
    a = max(1.0 / st["n_noise"], noise_forget)
    sigma2 = arowr_noise_variance(st)
    noise = sigma2 * (1 + v / r)
    share = 1.0 if st["n_noise"] == 1 or noise + mv <= 0 else noise / (noise + mv)
    st["sigma2"] = max(st["sigma2"] + a * share * ((e * e - mv) / (1 + v / r) - st["sigma2"]), 0.0)
    r_reading = r * (1 + mv / sigma2) if sigma2 > 0 else r
    beta = 1.0 / (v + r_reading)
    for s, x in zip(fs, fz):
        if s < 0:
            continue
        sx = model["S"][0, s] * x
        model["W"][0, s] += e * beta * sx
        model["S"][0, s] = max(model["S"][0, s] - beta * sx * sx, floor)
    if model["Sb"][0] > 0:
        model["b"][0] += e * beta * model["Sb"][0]
        model["Sb"][0] = max(model["Sb"][0] - beta * model["Sb"][0] ** 2, floor)
    return model, st, lags, verdict


# -- the new tasks' row loops (kernels/log_replay_anomaly.py, log_replay_regression.py) --


def surprise_top(strengths, columns, n_top):
    """The columns of the channels with the most evidence (at least 1), strongest
    first, equals in reading order, at most ``n_top`` (SurpriseDetector._top)."""
    order = sorted(range(len(strengths)), key=lambda i: -strengths[i])  # a stable sort
    return [columns[i] for i in order[:n_top] if strengths[i] >= 1.0]


def surprise_rows(X, codes, real, learn_if_asked, chans, hists, transs, rings, weights, confirmed,
                  p, ctl, q, n_top, shrink, tolerance):
    """SurpriseDetector over the rows of X (NaN: missing; column j is slot j, no slot
    recycled), as decide_one then learn reading by reading: the reading's evidence
    (:func:`surprise_reading`, learning it), the alarm (:func:`surprise_alarm`), the
    score E / (E + scale), the channels behind it (:func:`surprise_top`), and for a
    row whose verdict ``real[codes[i]]`` is learned (asked, or always without
    ``learn_if_asked``) :func:`surprise_feedback`. Returns per row ``(score, alarm,
    ask, top)`` and the final ``(weights, confirmed, ctl)``."""
    out = []
    kinds_on = len(p["kinds"])
    for i, row in enumerate(X):
        slots = [j for j in range(len(row)) if math.isfinite(row[j])]
        values = [float(row[j]) for j in slots]
        e, _, rows, chans, hists, transs, rings = surprise_reading(
            chans, hists, transs, rings, weights, confirmed, slots, values, p, True)
        alarm, ask, ctl = surprise_alarm(e, ctl, q)
        out.append((e / (e + q[0]), alarm, ask, surprise_top([r[9] for r in rows], slots, n_top)))
        c = int(codes[i])
        if c >= 0 and (ask or not learn_if_asked):
            spreads = {s: surprise_spread(chans[s]) for s in slots}
            weights, confirmed = surprise_feedback(
                weights, confirmed, spreads, slots, rows, real[c] > 0, ctl[0],
                math.log10(len(slots)) if len(slots) > 1 else 0.0, shrink, tolerance, kinds_on)
    return out, (weights, confirmed, ctl)


def arowr_rows(X, codes, values, learn_if_asked, edges, freq, capacity, model, st, stats, t,
               evict_after, table, n_lags, r, floor, huber, reject, alpha, gamma, noise_forget,
               power, rng, target, gain, width_forget, burst, forget, eps, z_max):
    """AROWRegressor over the rows of X (NaN: missing; column j is slot j, no slot
    recycled), as decide_one then learn reading by reading: the channel statistics
    (:func:`observe`), the bin frequencies (:func:`arow_count_bins`),
    :func:`arowr_decide`, and for a row whose reference ``values[codes[i]]`` is
    learned (asked, or always without ``learn_if_asked``) :func:`arowr_learn`.
    Returns per row ``(yhat, sd, lower, upper, asked)`` and the final
    ``(model, st, table, freq, stats)``."""
    out = []
    for i, row in enumerate(X):
        slots = [j for j in range(len(row)) if math.isfinite(row[j])]
        z, stats = observe(slots, [float(row[j]) for j in slots], stats, t, forget, eps, z_max)
        freq = arow_count_bins(slots, z, edges, freq, stats["count"], forget)
        st, rng, decided = arowr_decide(slots, z, edges, freq, capacity, model, st, stats["count"],
                                        stats["last_seen"], t, evict_after, table, n_lags, r, power,
                                        rng, target, gain, width_forget, burst)
        out.append(decided)
        c = int(codes[i])
        if c >= 0 and (decided[4] or not learn_if_asked):
            model, st, table, _ = arowr_learn(slots, z, values[c], edges, freq, capacity, model, st,
                                              stats["count"], stats["last_seen"], t, evict_after, table,
                                              n_lags, r, floor, huber, reject, alpha, gamma,
                                              noise_forget, noise_forget)
        t += 1
    return out, (model, st, table, freq, stats)


def regression_sums(y, pred, lower, upper):
    """RegressionMetrics.update over the rows: ``(abs_sum, sq_sum, n_intervals,
    n_covered)``, an interval counted when both bounds are finite."""
    abs_sum = sq_sum = 0.0
    n_intervals = n_covered = 0
    for t, p, lo, hi in zip(y, pred, lower, upper):
        error = t - p
        abs_sum += abs(error)
        sq_sum += error * error
        if math.isfinite(lo) and math.isfinite(hi):
            n_intervals += 1
            n_covered += lo <= t <= hi
    return abs_sum, sq_sum, n_intervals, n_covered


def arow_class_mean_distance(slots, z, capacity, sums, counts, n_known):
    """The mean squared distance, over the present channels (slots in [0, capacity)), from
    ``z`` to the nearest mean ``sums / count`` of a class with a label; -1 if no channel
    is present or no class has a label (ActiveAROW's ``novelty``)."""
    present = [(int(s), float(v)) for s, v in zip(slots, z) if 0 <= s < capacity]
    distances = [sum((sums[c][s] / counts[c] - v) ** 2 for s, v in present) / len(present)
                 for c in range(n_known) if counts[c] > 0.0 and present]
    return min(distances) if distances else -1.0


def arow_logit_adjust(m, counts, n_known, amount):
    """Each known class's margin minus ``amount log((n_c + 1) / sum (n + 1))`` (two classes
    or more)."""
    m = [float(x) for x in m]
    if amount == 0.0 or n_known < 2:
        return m
    total = sum(counts[c] + 1.0 for c in range(n_known))
    for c in range(n_known):
        m[c] -= amount * math.log((counts[c] + 1.0) / total)
    return m


def arow_novelty_query(u, distance, stats, novelty, n_known, n_classes, counts):
    """``(u, stats)`` after ActiveAROW's novelty term: the distance (if any) joins the running
    sum and count; while a class of ``n_classes`` has no label, ``u`` over ``max(1, distance /
    mean)^novelty``."""
    stats = [float(x) for x in stats]
    if novelty == 0.0 or distance < 0.0:
        return u, stats
    stats = [stats[0] + distance, stats[1] + 1.0]
    few = n_known < n_classes or any(counts[c] < 1.0 for c in range(n_known))
    ratio = distance / (stats[0] / stats[1])
    if few and ratio > 1.0:
        u = u / ratio ** novelty
    return u, stats
