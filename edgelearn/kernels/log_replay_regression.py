"""AROWRegressor over a recorded stream's rows, as the gateway's pipeline runs it.

The loop is ``decide_one`` then ``learn`` reading by reading, with the per-message
path's own kernels in the same order: :func:`~.replay.gather_row` (new channels
claim slots; a recycled slot is forgotten as the learner's ``_forget_slot`` does:
``arow.forget_slot``, ``arow.forget_bins``), ``channels.observe_standardize``,
``arow.count_bins`` (the learner's ``_observe``), :func:`~.arow_regression.decide`
and, for a row whose reference is learned, :func:`~.arow_regression.learn`.
A regression stream's references are numbers (converted once per distinct value by
the learner's targets), so the loop never stops for a label.
"""

from . import arow as ak
from . import arow_regression as K
from ._jit import jit
from .channels import observe_standardize
from .replay import N_EVICTED, T, gather_row


@jit
def arow_regressor_log_loop(
    X, codes, code_value, learn_if_asked,
    col_slot, slot_col, changed, counters,
    count, mean, var, last_seen, forget, eps, z_max, evict_after,
    edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb, stats, present, lags,
    scores, scratch, r, floor, huber, reject, alpha, gamma, noise_forget,
    power, rng_state, target, gain, width_forget, burst, prior_var,
    slots, vals, yhat_out, sd_out, lower_out, upper_out, asked_out, feat_k, feat_slots, feat_z,
):
    """AROWRegressor over every row of X (NaN = missing channel). ``codes`` per row
    its reference's code (-1: none), ``code_value`` per code the number; a row's
    reference is learned when asked for, or always without ``learn_if_asked``. Per
    row: the prediction, its sd, the interval and whether it asked; with ``feat_k``
    as long as X, the decision's ``(slots, z)`` (what a label request and the label
    journal keep)."""
    n = X.shape[0]
    evicted_before = counters[N_EVICTED]
    for i in range(n):
        k = gather_row(
            X, i, col_slot, slot_col, changed, slots, vals, counters,
            count, mean, var, last_seen, evict_after,
        )
        if counters[N_EVICTED] != evicted_before:
            evicted_before = counters[N_EVICTED]
            for j in range(k):
                if changed[slots[j]] == 2:
                    ak.forget_slot(slots[j], W, S, prior_var)
                    ak.forget_bins(slots[j], bin_freq, capacity, W, S, prior_var)
                    changed[slots[j]] = 1
        t = counters[T]
        observe_standardize(slots, vals, k, count, mean, var, last_seen, t, forget, eps, z_max, True)
        counters[T] += 1
        ak.count_bins(slots, vals, k, edges, bin_freq, count, forget)
        yhat, sd, lower, upper, asked = K.decide(
            slots, vals, k, edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb,
            stats, count, last_seen, t, evict_after, present, lags, r, power, rng_state, target,
            gain, width_forget, burst)
        yhat_out[i] = yhat
        sd_out[i] = sd
        lower_out[i] = lower
        upper_out[i] = upper
        asked_out[i] = asked
        if feat_k.shape[0] == n:
            feat_k[i] = k
            for j in range(k):
                feat_slots[i, j] = slots[j]
                feat_z[i, j] = vals[j]
        c = int(codes[i])
        if c >= 0 and (asked or not learn_if_asked):
            K.learn(slots, vals, k, code_value[c], edges, bin_freq, capacity, feature_slots,
                    feature_z, W, S, b, Sb, stats, count, last_seen, t, evict_after, present, lags,
                    scores, scratch, r, floor, huber, reject, alpha, gamma, noise_forget,
                    noise_forget)
