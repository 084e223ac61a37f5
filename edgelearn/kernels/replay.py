"""Whole prequential loops over a dense array (NaN = missing), in one kernel.

Each loop does per row exactly what the dict path does per instance, with
the same kernels in the same order, so its predictions are the dict path's
to the bit: claim slots for new columns (recycling and making learners forget
evicted slots), observe and standardize, predict, fold in unsupervised
statistics, draw the query, and learn when asked (or always, if not active).
"""

import math

import numpy as np
from numba.cpython.unsafe.numbers import trailing_zeros

from . import channels as ch
from . import pa as pa_k
from . import paacds as pk
from ._jit import jit, jit_without_refcounts

# Positions in the ``counters`` array shared by every loop.
T, N_ASSIGNED, N_IGNORED, N_EVICTED = 0, 1, 2, 3


@jit_without_refcounts
def gather_row(
    X, i, col_slot, slot_col, changed, slots, vals, counters,
    count, mean, var, last_seen, evict_after,
):
    """Put row i's present columns into (slots, vals) and return their count.
    New columns claim slots; a recycled slot is flagged ``changed = 2`` so the
    caller makes its model forget it before the row is used."""
    k = 0
    for j in range(X.shape[1]):
        v = X[i, j]
        s = col_slot[j]
        finite = math.isfinite(v)
        if s >= 0:
            # The common case, without a branch on the (random) missing
            # pattern: always write, advance only for a present value.
            slots[k] = s
            vals[k] = v
            k += finite
            continue
        if not finite:
            continue
        if s < 0:
            s = ch.claim_slot(last_seen, counters[N_ASSIGNED], counters[T], evict_after)
            if s < 0:
                counters[N_IGNORED] += 1
                continue
            if s < counters[N_ASSIGNED]:
                old = slot_col[s]
                if old >= 0:
                    col_slot[old] = -1
                ch.reset_slot(s, count, mean, var, last_seen)
                counters[N_EVICTED] += 1
                # the caller's model forgets the slot: flag it for this row
                changed[s] = 2
            else:
                counters[N_ASSIGNED] += 1
                changed[s] = 1
            slot_col[s] = j
            col_slot[j] = s
            # seen now, so another new column of this row cannot take it
            last_seen[s] = counters[T]
        slots[k] = s
        vals[k] = v
        k += 1
    return k


@jit
def n_columns_assigned(col_slot, slot_col, n_assigned):
    """How many of the first ``n_assigned`` slots belong to a column, or -1
    if a column has no slot yet.  Equal to ``n_assigned`` when every slot in
    use is a column of X and every column has one: then the row can be
    processed slot-wise (see ``observe_score_dense``)."""
    for j in range(col_slot.shape[0]):
        if col_slot[j] < 0:
            return -1
    used = 0
    for s in range(n_assigned):
        used += slot_col[s] >= 0
    return used


@jit_without_refcounts
def observe_score_dense(
    X, i, col_slot, slot_col, slots, vals, xs, zs, hs, n_slots, steady,
    count, mean, var, last_seen, t, forget, eps, z_max,
    W, b, active, h, h_n, h_mean, h_var, h_forget, k0, scores,
):
    """``gather_row`` then ``paacds.observe_scores`` for a binary model when every
    slot in use is a column (no column can claim a slot): the per-slot updates run
    over all slots at once, a missing value masking its slot's update, which the
    compiler can vectorize; then the present channels are gathered into
    ``(slots, vals)`` in column order (the dict path's) and summed in that order,
    so the result is the same to the bit. Returns their count ``k``. ``steady``
    (see :func:`information_steady`) drops a division the compiler cannot skip."""
    for s in range(n_slots):
        # a column is never negative here: unsigned, the index needs no wrap-around
        xs[s] = X[i, np.uint64(slot_col[s])]
    # Two loops, not one with a test: a vectorized loop computes both sides of a
    # select, and the divisions are what this loop's time goes to.
    if steady:
        for s in range(n_slots):
            _observe_slot(s, xs[s], count, mean, var, last_seen, t, forget, eps, z_max,
                          h, h_n, h_mean, h_var, h_forget, k0, zs, hs, True)
    else:
        for s in range(n_slots):
            _observe_slot(s, xs[s], count, mean, var, last_seen, t, forget, eps, z_max,
                          h, h_n, h_mean, h_var, h_forget, k0, zs, hs, False)
    acc = 0.0
    total = 0.0
    shared = 0.0
    n_shared = 0
    k = 0
    # The present columns as bits, walked lowest first: one pass over the present
    # channels that gathers and sums, with no branch on the (random) missing pattern.
    for first in range(0, X.shape[1], 64):
        last = min(first + 64, X.shape[1])
        present = np.uint64(0)
        for j in range(first, last):
            present |= np.uint64(math.isfinite(X[i, j])) << np.uint64(j - first)
        while present:
            s = np.uint64(col_slot[first + np.int64(trailing_zeros(present))])
            present &= present - np.uint64(1)
            zj = zs[s]
            slots[k] = s
            vals[k] = zj
            k += 1
            total += hs[s]
            is_active = active[s]
            shared += hs[s] if is_active else 0.0
            n_shared += is_active
            acc += W[0, s] * zj
    p_s = pk.shared_share(total, shared, n_shared, k)
    scores[0] = acc * p_s + b[0]
    return k


@jit_without_refcounts
def _observe_slot(s, x, count, mean, var, last_seen, t, forget, eps, z_max,
                  h, h_n, h_mean, h_var, h_forget, k0, zs, hs, steady):
    # ``channels.observe_one`` then ``paacds.information_one`` for slot s, their
    # arithmetic in their order; a missing x (NaN) leaves the slot as it was.
    present = math.isfinite(x)
    n = count[s] + 1
    a = 1.0 / n
    a = forget if forget > a else a
    d = x - mean[s]
    m = mean[s] + a * d
    v = (1.0 - a) * (var[s] + a * d * d)
    z = ch._z(x, n, m, v, eps, z_max)
    hn = h_n[s] + 1
    ab = h_forget if steady or hn * h_forget >= 1.0 else 1.0 / hn
    e = z - h_mean[s]
    hm = h_mean[s] + ab * e
    hv = (1.0 - ab) * (h_var[s] + ab * e * e)
    hs[s] = h[s]
    zs[s] = z
    count[s] = n if present else count[s]
    mean[s] = m if present else mean[s]
    var[s] = v if present else var[s]
    last_seen[s] = t if present else last_seen[s]
    h_n[s] = hn if present else h_n[s]
    h_mean[s] = hm if present else h_mean[s]
    h_var[s] = hv if present else h_var[s]
    h[s] = (k0 + hn * hv) / (k0 + hn) if present else h[s]


@jit_without_refcounts
def information_steady(h_n, n_slots, h_forget):
    """Whether every slot below ``n_slots`` is past its information's start-up, where
    ``paacds.information_one`` takes the constant step ``h_forget`` instead of ``1 /
    n``. ``n * h_forget`` does not decrease with n, and a slot's count only grows
    while no slot is recycled, so once true it stays true for a dense loop."""
    if n_slots == 0:
        return False
    lowest = h_n[0]
    for s in range(1, n_slots):
        lowest = min(lowest, h_n[s])
    return (lowest + 1) * h_forget >= 1.0


# The per-row step. PAACDS's step before the prediction is written out in each
# PAACDS loop (``paacds_loop`` here, ``log_replay.paacds_binary_log_loop``), the
# same lines in both: gather row i (claiming slots for new columns), make the
# model forget recycled slots (``forget_evicted``), re-check the mapping when it
# changed (``remap``), observe and score (``observe_score_dense`` or
# ``paacds.observe_scores``), count the row. Once the mapping is dense (every
# column has a slot) no column can claim one and none is recycled, so it stays
# dense: ``observe_score_dense`` then gathers the row itself, in the same pass
# that sums it, and ``gather_row`` is skipped. After the prediction, the query
# (``paacds.query``) and, when learning, ``paacds.learn_binary`` then
# ``paacds.sparsify`` if the weights moved. It was one shared function taking 33
# arrays once (and two small wrappers of the query and the learning), and those
# calls per row made the array replay 0.6x as fast (issue 25: numba passes and
# reference-counts every array argument of a call it does not inline): the
# parts that run only when the mapping changes are functions, the rest is not.
# The functions a row does call are compiled without reference counting
# (``_jit.jit_without_refcounts``): with it, their calls still cost a third of the loop.


@jit
def forget_evicted(slots, k, changed, W, active, h, h_n, h_mean, h_var):
    """The model forgets the slots row's gathering recycled (``changed == 2``,
    see :func:`gather_row`); they are then marked as merely reassigned."""
    for j in range(k):
        if changed[slots[j]] == 2:
            pk.forget_slot(slots[j], W, active, h, h_n, h_mean, h_var)
            changed[slots[j]] = 1


@jit
def remap(binary, col_slot, slot_col, n_assigned, col_key, tie_key):
    """After the column-to-slot mapping changed: refresh the slots' tie-break
    keys (``sparsify`` breaks ties by the channel names' keys, ``col_key`` per
    column) and say whether rows can now be handled slot-wise
    (:func:`observe_score_dense`)."""
    for s in range(n_assigned):
        if slot_col[s] >= 0:
            tie_key[s] = col_key[slot_col[s]]
    return binary and n_assigned == n_columns_assigned(col_slot, slot_col, n_assigned)


@jit
def paacds_loop(
    X, y, active_learning, col_slot, slot_col, changed, counters,
    count, mean, var, last_seen, forget, eps, z_max, evict_after,
    W, b, active, h, h_n, h_mean, h_var, h_forget, k0, rng_state, delta,
    target, gain, C, variant_i, learn_intercept, lam, B, max_weights,
    code_class, class_code, n_known, scores, idx_buf, score_buf, col_key, tie_key,
    pred, margin_out, asked_out,
):
    """PAACDS over every row of X.  Binary if W has one row (y in {-1, +1});
    otherwise y holds label codes, ``code_class`` maps a code to its class
    row (-1 until learned) and ``class_code`` back.  Writes predictions (+1/-1
    or a class row, -1 for none), margins and query decisions; returns the
    final (delta, n_known).  ``b`` holds one bias per row (all 0 and left
    alone unless ``learn_intercept``).  y is float64 either way (one compiled loop)."""
    n = X.shape[0]
    rows = W.shape[0]
    binary = rows == 1
    slots = np.empty(X.shape[1], dtype=np.int32)
    vals = np.empty(X.shape[1], dtype=np.float64)
    xs = np.empty(W.shape[1], dtype=np.float64)
    zs = np.empty(W.shape[1], dtype=np.float64)
    hs = np.empty(W.shape[1], dtype=np.float64)
    evicted_before = counters[N_EVICTED]
    assigned_before = -1
    mapped_evictions = -1
    dense = False
    steady = False
    for i in range(n):
        # the per-row step (see "The per-row step" above)
        if not dense:
            k = gather_row(
                X, i, col_slot, slot_col, changed, slots, vals, counters,
                count, mean, var, last_seen, evict_after,
            )
            if counters[N_EVICTED] != evicted_before:
                evicted_before = counters[N_EVICTED]
                forget_evicted(slots, k, changed, W, active, h, h_n, h_mean, h_var)
            if counters[N_ASSIGNED] != assigned_before or counters[N_EVICTED] != mapped_evictions:
                assigned_before = counters[N_ASSIGNED]
                mapped_evictions = counters[N_EVICTED]
                dense = remap(binary, col_slot, slot_col, assigned_before, col_key, tie_key)
        if dense:
            steady = steady or information_steady(h_n, counters[N_ASSIGNED], h_forget)
            k = observe_score_dense(
                X, i, col_slot, slot_col, slots, vals, xs, zs, hs, counters[N_ASSIGNED], steady,
                count, mean, var, last_seen, counters[T], forget, eps, z_max,
                W, b, active, h, h_n, h_mean, h_var, h_forget, k0, scores,
            )
        else:
            pk.observe_scores(
                slots, vals, k, count, mean, var, last_seen, counters[T], forget, eps, z_max,
                W, b, active, h, h_n, h_mean, h_var, h_forget, k0, scores,
            )
        counters[T] += 1
        if binary:
            q = scores[0]
            pred[i] = 1 if q > 0.0 else -1
        else:
            best, runner = pk.top_two(scores, n_known, rows)
            q = 0.0 if runner < 0 else scores[best] - scores[runner]
            pred[i] = best if n_known > 0 else -1
        margin_out[i] = q
        ask, delta = pk.query(q, delta, rng_state, target, gain)
        asked_out[i] = ask
        if ask or not active_learning:
            if binary:
                if pk.learn_binary(slots, vals, k, y[i], W, b, active, h, C, variant_i, learn_intercept):
                    pk.sparsify(W, active, h, tie_key, counters[N_ASSIGNED], lam, B, max_weights, idx_buf, score_buf)
            else:
                code = int(y[i])
                c = code_class[code]
                if c < 0:
                    c = n_known
                    code_class[code] = c
                    class_code[c] = code
                    n_known += 1
                changed_w = pk.learn_multiclass(
                    slots, vals, k, c, n_known, W, b, active, h, C, variant_i, learn_intercept, scores
                )
                if changed_w:
                    pk.sparsify(W, active, h, tie_key, counters[N_ASSIGNED], lam, B, max_weights, idx_buf, score_buf)
    return delta, n_known


@jit
def pa_loop(
    X, y, col_slot, slot_col, changed, counters,
    count, mean, var, last_seen, forget, eps, z_max, evict_after, scale,
    w, intercept, C, mode, learn_intercept, pred, margin_out,
):
    """PA over every row of X (labels y in {-1, +1}), learning every label."""
    slots = np.empty(X.shape[1], dtype=np.int32)
    vals = np.empty(X.shape[1], dtype=np.float64)
    evicted_before = counters[N_EVICTED]
    for i in range(X.shape[0]):
        k = gather_row(
            X, i, col_slot, slot_col, changed, slots, vals, counters,
            count, mean, var, last_seen, evict_after,
        )
        if counters[N_EVICTED] != evicted_before:
            evicted_before = counters[N_EVICTED]
            for j in range(k):
                if changed[slots[j]] == 2:
                    pa_k.forget_slot(slots[j], w)
                    changed[slots[j]] = 1
        ch.observe_standardize(
            slots, vals, k, count, mean, var, last_seen, counters[T], forget, eps, z_max, scale
        )
        counters[T] += 1
        q = pa_k.margin(slots, vals, k, w, intercept)
        pred[i] = 1 if q > 0.0 else -1
        margin_out[i] = q
        pa_k.learn(slots, vals, k, y[i], w, intercept, C, mode, learn_intercept)
