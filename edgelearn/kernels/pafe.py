"""PAFE kernels (seed 001): the overlap's ridge statistics and their solve,
recovering old channels from new ones, the map-initialized new model, and the
two ensembles of the second period.  The passive-aggressive steps themselves
are :mod:`edgelearn.kernels.pa`'s.

Old channels (the set S1 that is going away) and new ones (S2) are *tracked*
by position: ``old_slots[i]`` is the slot of old channel i (``old_pos`` the
inverse, -1 for an untracked slot), likewise ``new_slots``/``new_pos``.

Over the overlap the kernels keep raw sums, with ``u``/``v`` an instance's raw
old/new values by position (an absent channel takes its running mean):

    S11 += u u^T,  S22 += v v^T,  S21 += v u^T,  sum1 += u,  sum2 += v,  rows += 1

Learners see standardized values ``z = (x - m) / sd`` whose m and sd move as
the channel statistics learn (a new channel's after only a few values), so
the maps are solved in the z-space of the statistics *at the solve*:
``G = sum (u - m1)(u - m1)^T / (sd1 sd1^T)`` and so on, computed from the raw
sums.  The two ridge regressions are then

    recover_old = (G22 + r I)^-1 G21     (n_new x n_old; z1 ~ z2 . recover_old)
    predict_new = (G11 + r I)^-1 G21^T   (n_old x n_new; z2 ~ z1 . predict_new)

docs/learners.md's ``M1 x2`` is ``x2 . recover_old`` and ``M2 x1`` is
``x1 . predict_new``.  With ``m = 0`` and ``sd = 1`` (raw values) ``G`` is the
plain Gram matrix of the rows.
"""

import math

from ._jit import jit


@jit
def membership(slots, k, in_old, in_new):
    """How many of the instance's slots are old, new, and neither."""
    n_old = 0
    n_new = 0
    n_other = 0
    for j in range(k):
        s = slots[j]
        if s < 0:
            continue
        if in_old[s]:
            n_old += 1
        elif in_new[s]:
            n_new += 1
        else:
            n_other += 1
    return n_old, n_new, n_other


@jit
def select(slots, x, k, mask_a, mask_b, out_slots, out_x):
    """Copy the (slot, value) pairs whose slot is in ``mask_a`` or ``mask_b``
    to the front of ``out_slots``/``out_x``; return how many."""
    m = 0
    for j in range(k):
        s = slots[j]
        if s >= 0 and (mask_a[s] or mask_b[s]):
            out_slots[m] = s
            out_x[m] = x[j]
            m += 1
    return m


@jit
def scatter(slots, x, k, pos, n, out):
    """``out[:n]``: the instance's values by tracked position, 0 if absent."""
    for i in range(n):
        out[i] = 0.0
    for j in range(k):
        s = slots[j]
        if s >= 0:
            p = pos[s]
            if 0 <= p < n:
                out[p] = x[j]


@jit
def fill(slots, x, k, pos, tracked, n, mean, out):
    """``out[:n]``: the instance's values by tracked position; a tracked
    channel that is absent takes ``mean`` of its slot (0 for a position whose
    slot was recycled, ``tracked`` -1 or ``pos`` no longer pointing back)."""
    for i in range(n):
        s = tracked[i]
        out[i] = mean[s] if s >= 0 and pos[s] == i else 0.0
    for j in range(k):
        s = slots[j]
        if s >= 0:
            p = pos[s]
            if 0 <= p < n:
                out[p] = x[j]


@jit
def accumulate(slots, x, k, old_pos, new_pos, old_slots, new_slots, n_old, n_new, mean,
               u, v, S11, S22, S21, sum1, sum2):
    """Fold one overlap instance (raw values) into the raw sums."""
    fill(slots, x, k, old_pos, old_slots, n_old, mean, u)
    fill(slots, x, k, new_pos, new_slots, n_new, mean, v)
    for a in range(n_old):
        sum1[a] += u[a]
        for b in range(n_old):
            S11[a, b] += u[a] * u[b]
    for a in range(n_new):
        sum2[a] += v[a]
        for b in range(n_new):
            S22[a, b] += v[a] * v[b]
        for b in range(n_old):
            S21[a, b] += v[a] * u[b]


@jit
def _standardized(S, a, b, sum_a, sum_b, m_a, m_b, sd_a, sd_b, rows):
    # sum over rows of (x_a - m_a)(x_b - m_b) / (sd_a sd_b), from raw sums
    return (S[a, b] - m_a * sum_b - sum_a * m_b + rows * m_a * m_b) / (sd_a * sd_b)


@jit
def ridge_solve(S, sums, m, sd, n, R, R_sums_row, R_sums_col, m_row, m_col, sd_row, sd_col, m_cols,
                transpose_rhs, rows, ridge, L, out):
    """``out[:n, :m_cols] = (G + ridge I)^-1 H`` by Cholesky, with ``G`` the
    standardized ``S[:n, :n]`` (sums ``sums``, means ``m``, scales ``sd``) and
    ``H`` the standardized right-hand side: ``R[:n, :m_cols]``, or ``R[:m_cols,
    :n]`` transposed when ``transpose_rhs``, whose row and column sums, means
    and scales are the ``*_row``/``*_col`` arrays (rows of R as stored).
    ``L`` (at least n x n) is scratch; ``ridge > 0`` keeps G + ridge I
    positive definite."""
    for i in range(n):
        for j in range(i + 1):
            acc = _standardized(S, i, j, sums[i], sums[j], m[i], m[j], sd[i], sd[j], rows)
            if i == j:
                acc += ridge
            for p in range(j):
                acc -= L[i, p] * L[j, p]
            if i == j:
                L[i, i] = math.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    for c in range(m_cols):
        # forward: L y = h
        for i in range(n):
            if transpose_rhs:
                acc = _standardized(R, c, i, R_sums_row[c], R_sums_col[i], m_row[c], m_col[i],
                                    sd_row[c], sd_col[i], rows)
            else:
                acc = _standardized(R, i, c, R_sums_row[i], R_sums_col[c], m_row[i], m_col[c],
                                    sd_row[i], sd_col[c], rows)
            for p in range(i):
                acc -= L[i, p] * out[p, c]
            out[i, c] = acc / L[i, i]
        # back: L^T x = y
        for i in range(n - 1, -1, -1):
            acc = out[i, c]
            for p in range(i + 1, n):
                acc -= L[p, i] * out[p, c]
            out[i, c] = acc / L[i, i]


@jit
def solve_maps(S11, S22, S21, sum1, sum2, rows, m1, sd1, m2, sd2, n_old, n_new, ridge, L,
               recover_old, predict_new):
    """Both ridge maps, in the z-space of means ``m1``/``m2`` and scales
    ``sd1``/``sd2`` (by position), from the overlap's raw sums."""
    ridge_solve(S22, sum2, m2, sd2, n_new, S21, sum2, sum1, m2, m1, sd2, sd1, n_old, False, rows,
                ridge, L, recover_old)
    ridge_solve(S11, sum1, m1, sd1, n_old, S21, sum2, sum1, m2, m1, sd2, sd1, n_new, True, rows,
                ridge, L, predict_new)


@jit
def recover(slots, x, k, new_pos, n_old, n_new, recover_old, x2, x1):
    """``x1[:n_old]``: the old channels recovered from the instance's new ones."""
    scatter(slots, x, k, new_pos, n_new, x2)
    for i in range(n_old):
        acc = 0.0
        for j in range(n_new):
            acc += x2[j] * recover_old[j, i]
        x1[i] = acc


@jit
def map_weights(recover_old, old_slots, new_slots, n_old, n_new, w_old, scale, w_new):
    """``w_new[new_slots[j]] += scale * sum_i recover_old[j, i] w_old[old_slots[i]]``
    (``M1^T w1``): under these new-channel weights ``w_new . x2`` is
    ``w_old`` applied to the old channels recovered from x2."""
    for j in range(n_new):
        acc = 0.0
        for i in range(n_old):
            acc += recover_old[j, i] * w_old[old_slots[i]]
        w_new[new_slots[j]] += scale * acc


@jit
def clipped_hinge(y, f):
    """``min(1, max(0, 1 - y f))``: the ensembles' loss, in [0, 1]."""
    loss = 1.0 - y * f
    if loss < 0.0:
        return 0.0
    if loss > 1.0:
        return 1.0
    return loss


@jit
def mistake(y, f):
    """1 if margin ``f`` predicts the wrong side of label ``y`` (+-1), else 0;
    a margin of exactly 0 predicts the negative side."""
    return 1.0 if (f > 0.0) != (y > 0.0) else 0.0


@jit
def eta_combination(T):
    """Learning rate of the exponentially weighted combination for horizon T."""
    return math.sqrt(8.0 * math.log(2.0) / T)


@jit
def eta_selection(T):
    """Learning rate of the fixed-share selection for horizon T >= 2:
    ``sqrt(8 / T (2 ln 2 + (T - 1) H(1 / (T - 1))))``, H the binary entropy."""
    p = 1.0 / (T - 1.0)
    entropy = 0.0
    if 0.0 < p < 1.0:
        entropy = -p * math.log(p) - (1.0 - p) * math.log(1.0 - p)
    return math.sqrt(8.0 / T * (2.0 * math.log(2.0) + (T - 1.0) * entropy))


@jit
def doubling_horizon(t, horizon):
    """The horizon of round t (1-based): ``horizon`` if positive, else the
    doubling trick's ``2^floor(log2 t)``; at least 2."""
    if horizon > 0:
        T = float(horizon)
    else:
        T = 1.0
        while T * 2.0 <= t:
            T *= 2.0
    return T if T >= 2.0 else 2.0


@jit
def combine_update(a, loss1, loss2, eta):
    """``a_i <- a_i exp(-eta loss_i)``, normalized."""
    v1 = a[0] * math.exp(-eta * loss1)
    v2 = a[1] * math.exp(-eta * loss2)
    total = v1 + v2
    a[0] = v1 / total
    a[1] = v2 / total


@jit
def fixed_share_update(a, loss1, loss2, eta, delta):
    """``a_i <- delta Delta / 2 + (1 - delta) v_i`` with ``v_i = a_i
    exp(-eta loss_i)`` and ``Delta = v_1 + v_2``, then normalized (the
    update is homogeneous in v, so normalizing changes no choice; it keeps
    the weights from underflowing over a long stream)."""
    v1 = a[0] * math.exp(-eta * loss1)
    v2 = a[1] * math.exp(-eta * loss2)
    share = delta * (v1 + v2) / 2.0
    u1 = share + (1.0 - delta) * v1
    u2 = share + (1.0 - delta) * v2
    total = u1 + u2
    a[0] = u1 / total
    a[1] = u2 / total
