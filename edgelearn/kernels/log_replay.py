"""PAACDS and ActiveAROW over a recorded stream's rows, as the gateway's pipeline runs them.

A log differs from a labelled array in two ways the loop of
:mod:`edgelearn.kernels.replay` does not cover, so this loop drives the same
per-row step (written out as in ``replay.paacds_loop``: see "The per-row step"
there) with its own label handling:

* a row may carry no usable label (``code < 0``: the message had no ``"y"``, or
  one the stream could not take); it is observed and predicted, never learned;
* labels are the user's own, and which one a binary learner calls positive is
  decided by the learner's targets when it first *learns* one, which depends
  on the queries drawn in this loop.  So a label's sign (``code_sign``) is 0
  until known: the loop stops before learning such a row and returns its index;
  the caller registers the label with the learner's targets (the same Python
  code the per-message path runs), fills in ``code_sign`` and calls again with
  ``resume_k`` (the row's gathered features are kept in ``slots``/``vals``).
  That happens at most twice per stream.

ActiveAROW's refit (``refit_until``) runs in its loops where ``ActiveAROW._refit_if_due``
and ``learn`` run it on the per-message path: ``arow.refit_step`` after a row's claim (a
recycled slot forgotten, its kept values too: ``arow.forget_kept``) and before its
observation, when the row's index is the one ``arow.next_refit_step`` named (one integer
compare per row; -1 when the refits are off or over); ``arow.keep_for_refit`` after a
label is learned, on a resumed row too. ``kept`` and the rest are the learner's refit
arrays (none, ``kept_n`` empty, when it has no refits).
"""

import numpy as np

from . import arow as ak
from . import arow_multiclass as mk
from . import paacds as pk
from ._jit import jit, jit_without_refcounts
from .channels import observe_standardize
from .replay import (
    N_ASSIGNED, N_EVICTED, T, forget_evicted, gather_row, information_steady, observe_score_dense, remap,
)

# What the loop returns as its second value.
DONE, NEED_SIGN = 0, 1


@jit
def paacds_binary_log_loop(
    X, codes, code_sign, start, resume_k, active_learning,
    col_slot, slot_col, changed, counters,
    count, mean, var, last_seen, forget, eps, z_max, evict_after,
    W, b, active, h, h_n, h_mean, h_var, h_forget, k0, rng_state, delta,
    target, gain, C, variant_i, learn_intercept, lam, B, max_weights,
    idx_buf, score_buf, col_key, tie_key, scores, slots, vals, xs, zs, hs,
    pred, margin_out, asked_out, feat_k, feat_slots, feat_z,
):
    """Binary PAACDS over rows ``start..`` of X (NaN = missing channel).

    Returns ``(row, status, delta, k)``: ``status`` DONE when every row is
    done, NEED_SIGN when row ``row`` is to be learned with a label whose sign
    ``code_sign[codes[row]]`` is unknown (its ``k`` features are in
    ``slots``/``vals``; call again with ``start=row, resume_k=k``).
    ``resume_k < 0`` starts row ``start`` from the beginning. With ``feat_k``
    as long as X, each row's features as the learner saw them (``(slots, z)``,
    what ``decide_one`` gives) are kept in ``feat_slots``/``feat_z`` (n x width)
    and their count in ``feat_k``, for label requests and the label journal."""
    n = X.shape[0]
    evicted_before = counters[N_EVICTED]
    assigned_before = -1
    mapped_evictions = -1
    dense = False
    steady = False
    i = start
    if resume_k >= 0:
        k = resume_k
        c = int(codes[i])
        if pk.learn_binary(slots, vals, k, code_sign[c], W, b, active, h, C, variant_i, learn_intercept):
            pk.sparsify(W, active, h, tie_key, counters[N_ASSIGNED], lam, B, max_weights, idx_buf, score_buf)
        i += 1
    while i < n:
        # the per-row step, as in replay.paacds_loop (see "The per-row step" there)
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
                dense = remap(True, col_slot, slot_col, assigned_before, col_key, tie_key)
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
        if feat_k.shape[0] == n:
            feat_k[i] = k
            for j in range(k):
                feat_slots[i, j] = slots[j]
                feat_z[i, j] = vals[j]
        q = scores[0]
        pred[i] = 1 if q > 0.0 else -1  # a zero margin predicts the negative label
        margin_out[i] = q
        ask, delta = pk.query(q, delta, rng_state, target, gain)
        asked_out[i] = ask
        c = int(codes[i])
        if (ask or not active_learning) and c >= 0:
            sign = code_sign[c]
            if sign == 0.0:
                return i, NEED_SIGN, delta, k
            if pk.learn_binary(slots, vals, k, sign, W, b, active, h, C, variant_i, learn_intercept):
                pk.sparsify(W, active, h, tie_key, counters[N_ASSIGNED], lam, B, max_weights, idx_buf, score_buf)
        i += 1
    return n, DONE, delta, 0


@jit_without_refcounts
def arow_binary_log_loop(
    X, codes, code_sign, start, resume_n, active_learning,
    col_slot, slot_col, changed, counters,
    count, mean, var, last_seen, forget, eps, z_max, evict_after,
    edges, bin_freq, capacity, feature_slots, feature_z,
    W, S, b, Sb, out_m, out_v, r, floor, power, prior_var, rng_state, threshold, adapt, target, gain,
    slots, vals, pred, margin_out, asked_out, feat_k, feat_slots, feat_z,
    refit_until, kept, kept_y, kept_n, refit_slots, refit_z, intercept_var, refit_passes, class_sums, class_counts,
):
    """Binary ActiveAROW over rows ``start..`` of X, as :func:`paacds_binary_log_loop`
    runs PAACDS: per row, claim slots for new columns (the model forgets recycled
    ones: ``arow.forget_slot``, ``arow.forget_bins`` and ``arow.forget_kept``, as the
    learner's ``_forget_slot``), the refit when due (see "ActiveAROW's refit" above), then ``arow.decide_learn_binary``, the kernel of the
    per-message path, deciding and learning a label whose sign is known, and
    ``arow.keep_for_refit`` of a label learned.

    Returns ``(row, status, threshold, n)``: ``status`` DONE when every row is
    done, NEED_SIGN when row ``row`` is to be learned with a label whose sign is
    unknown: its ``n`` features are in ``feature_slots``/``feature_z``; call again
    with ``start=row, resume_n=n`` and the sign in ``code_sign``, which learns them
    first (``arow.learn_row``, what ``learn`` does on the same features).
    ``resume_n < 0`` starts row ``start`` from the beginning. ``feat_*`` as in
    :func:`paacds_binary_log_loop`."""
    n = X.shape[0]
    evicted_before = counters[N_EVICTED]
    keeps = kept_n.shape[0] > 0
    i = start
    if resume_n >= 0:
        sign = code_sign[int(codes[i])]
        ak.learn_row(feature_slots, feature_z, resume_n, sign, W, S, b, Sb, 0, r, floor)
        if keeps:  # the row's channels are still in slots/vals
            ak.keep_for_refit(slots, vals, resume_n // (1 + bin_freq.shape[1]), sign, mean, var, eps,
                              kept, kept_y, kept_n)
        i += 1
    due = ak.next_refit_step(counters[T], refit_until, kept_n)
    while i < n:
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
                    ak.forget_kept(slots[j], kept)
                    changed[slots[j]] = 1
        if counters[T] == due:  # after the claim (a recycled slot is forgotten), before the observation
            due = ak.refit_step(counters[T], refit_until, kept, kept_y, kept_n, count, mean, var, eps, z_max,
                                edges, bin_freq, capacity, refit_slots, refit_z, feature_slots, feature_z,
                                W, S, b, Sb, prior_var, intercept_var, r, floor, True, 1, class_sums,
                                class_counts, refit_passes)
        c = int(codes[i])
        sign = code_sign[c] if c >= 0 else 0.0
        margin, ask, threshold, learned = ak.decide_learn_binary(
            slots, vals, k, counters[T], threshold, sign, active_learning,
            count, mean, var, last_seen, forget, eps, z_max,
            edges, bin_freq, capacity, feature_slots, feature_z,
            W, S, b, Sb, out_m, out_v, r, floor, power, rng_state, adapt, target, gain,
        )
        counters[T] += 1
        if learned and keeps:  # kept under the statistics the label was learned with, as in learn
            ak.keep_for_refit(slots, vals, k, sign, mean, var, eps, kept, kept_y, kept_n)
        if feat_k.shape[0] == n:
            feat_k[i] = k
            for j in range(k):
                feat_slots[i, j] = slots[j]
                feat_z[i, j] = vals[j]
        pred[i] = 1 if margin > 0.0 else -1  # a zero margin predicts the negative label
        margin_out[i] = margin
        asked_out[i] = ask
        if (ask or not active_learning) and c >= 0 and sign == 0.0:
            return i, NEED_SIGN, threshold, k * (1 + bin_freq.shape[1])
        i += 1
    return n, DONE, threshold, 0


# What the multiclass loops return as their second value when they stop at a row
# whose label the learner has not met: the caller registers it with the learner's
# targets (``targets.index``, what ``learn`` does), sets its ``code_class`` and calls
# again with ``resume`` (the row's features are kept as for NEED_SIGN).
NEED_CLASS = 2


@jit
def usable_label(c, code_class, n_known, n_rows):
    """Whether a row whose label code is ``c`` (-1: none) can be taken now: a class
    the learner knows, or a new one while it has room (``targets.accepts``)."""
    return c >= 0 and (code_class[c] >= 0 or n_known < n_rows)


@jit
def paacds_multiclass_log_loop(
    X, codes, code_class, start, resume_k, active_learning, n_known,
    col_slot, slot_col, changed, counters,
    count, mean, var, last_seen, forget, eps, z_max, evict_after,
    W, b, active, h, h_n, h_mean, h_var, h_forget, k0, rng_state, delta,
    target, gain, C, variant_i, learn_intercept, lam, B, max_weights,
    idx_buf, score_buf, col_key, tie_key, scores, slots, vals,
    pred, margin_out, asked_out, usable_out, feat_k, feat_slots, feat_z,
):
    """Multiclass PAACDS over rows ``start..`` of X, as ``decide_one`` then ``learn``
    run it reading by reading: per row :func:`gather_row` (the model forgets recycled
    slots), ``paacds.decide`` (the kernel of ``decide_one``) with the ``n_known``
    classes the learner knows, then, if the row's label is taken (``usable_out``:
    :func:`usable_label`) and learned (asked, or always without ``active_learning``),
    ``paacds.learn_multiclass`` and ``paacds.sparsify`` if it moved (``learn``).
    ``codes`` per row the label's code (-1: none), ``code_class`` per code the
    learner's class index (-1: not met yet).

    Returns ``(row, status, delta, k)``: DONE, or NEED_CLASS at row ``row`` (its
    ``k`` features in ``slots``/``vals``; call again with ``start=row, resume_k=k``
    and ``n_known`` counting the new class). ``pred`` is the class index (-1: the
    learner knew none), ``feat_*`` as in :func:`paacds_binary_log_loop`."""
    n = X.shape[0]
    n_rows = W.shape[0]
    evicted_before = counters[N_EVICTED]
    assigned_before = -1
    mapped_evictions = -1
    i = start
    if resume_k >= 0:
        k = resume_k
        if pk.learn_multiclass(slots, vals, k, code_class[int(codes[i])], n_known, W, b, active, h,
                               C, variant_i, learn_intercept, scores):
            pk.sparsify(W, active, h, tie_key, counters[N_ASSIGNED], lam, B, max_weights, idx_buf, score_buf)
        i += 1
    while i < n:
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
            remap(False, col_slot, slot_col, assigned_before, col_key, tie_key)
        best, margin, ask, delta = pk.decide(
            slots, vals, k, count, mean, var, last_seen, counters[T], forget, eps, z_max,
            W, b, active, h, h_n, h_mean, h_var, h_forget, k0, scores,
            n_known, delta, rng_state, True, target, gain,
        )
        counters[T] += 1
        if feat_k.shape[0] == n:
            feat_k[i] = k
            for j in range(k):
                feat_slots[i, j] = slots[j]
                feat_z[i, j] = vals[j]
        pred[i] = best
        margin_out[i] = margin
        asked_out[i] = ask
        c = int(codes[i])
        usable = usable_label(c, code_class, n_known, n_rows)
        usable_out[i] = usable
        if usable and (ask or not active_learning):
            if code_class[c] < 0:
                return i, NEED_CLASS, delta, k
            if pk.learn_multiclass(slots, vals, k, code_class[c], n_known, W, b, active, h,
                                   C, variant_i, learn_intercept, scores):
                pk.sparsify(W, active, h, tie_key, counters[N_ASSIGNED], lam, B, max_weights, idx_buf, score_buf)
        i += 1
    return n, DONE, delta, 0


@jit
def arow_multiclass_log_loop(
    X, codes, code_class, start, resume_n, active_learning, n_known,
    col_slot, slot_col, changed, counters,
    count, mean, var, last_seen, forget, eps, z_max, evict_after,
    edges, bin_freq, capacity, feature_slots, feature_z,
    W, S, b, Sb, out_m, out_v, r, floor, power, prior_var, rng_state, threshold, target, gain,
    slots, vals, pred, margin_out, asked_out, usable_out, feat_k, feat_slots, feat_z,
    class_sums, class_counts, class_mean_weight,
    refit_until, kept, kept_y, kept_n, refit_slots, refit_z, intercept_var, refit_passes,
    novelty, novelty_stats, logit_adjustment,
):
    """Multiclass ActiveAROW over rows ``start..`` of X, as ``decide_one`` then
    ``learn`` run it reading by reading, with the same kernels in the same order:
    :func:`gather_row` (the model forgets recycled slots: ``arow.forget_slot``,
    ``arow.forget_bins``), ``channels.observe_standardize``, ``arow.count_bins`` and
    ``arow.expand`` (in one pass: ``arow.count_expand``), ``arow.scores``, ``arow.confidence`` and ``arow.best_two`` of the
    ``n_known`` classes, ``arow_multiclass.multiclass_prediction`` (the class means, the
    nearest class mean's distance and the logit adjustment) and
    ``arow_multiclass.novelty_query`` (the novelty term of ``u``), ``arow.query``; then, for a
    label taken and learned (as in :func:`paacds_multiclass_log_loop`),
    ``arow.learn_multiclass`` (from the margins just scored: ``learn_multiclass_scored``)
    and ``arow.count_class_mean`` on the same features. Returns ``(row, status, threshold, n)``: DONE, or NEED_CLASS at row
    ``row`` with its ``n`` model features in ``feature_slots``/``feature_z`` (call
    again with ``start=row, resume_n=n`` and ``n_known`` counting the new class).
    The refit and the keep as in :func:`arow_binary_log_loop` (see "ActiveAROW's refit" above)."""
    n = X.shape[0]
    n_rows = W.shape[0]
    row_m = np.empty(n_rows)
    evicted_before = counters[N_EVICTED]
    keeps = kept_n.shape[0] > 0
    i = start
    if resume_n >= 0:
        c = code_class[int(codes[i])]
        ak.learn_multiclass(feature_slots, feature_z, resume_n, c, n_known, W, S, b, Sb, r, floor)
        ak.count_class_mean(feature_slots, feature_z, resume_n, capacity, c, class_sums, class_counts)
        if keeps:  # the row's channels are still in slots/vals
            ak.keep_for_refit(slots, vals, resume_n // (1 + bin_freq.shape[1]), float(c), mean, var, eps,
                              kept, kept_y, kept_n)
        i += 1
    due = ak.next_refit_step(counters[T], refit_until, kept_n)
    while i < n:
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
                    ak.forget_class_sums(slots[j], class_sums)
                    ak.forget_kept(slots[j], kept)
                    changed[slots[j]] = 1
        if counters[T] == due:
            due = ak.refit_step(counters[T], refit_until, kept, kept_y, kept_n, count, mean, var, eps, z_max,
                                edges, bin_freq, capacity, refit_slots, refit_z, feature_slots, feature_z,
                                W, S, b, Sb, prior_var, intercept_var, r, floor, False, n_known, class_sums,
                                class_counts, refit_passes)
        observe_standardize(slots, vals, k, count, mean, var, last_seen, counters[T], forget, eps,
                            z_max, True)
        counters[T] += 1
        n_features = ak.count_expand(slots, vals, k, edges, bin_freq, count, forget, capacity,
                                     feature_slots, feature_z)
        ak.scores(feature_slots, feature_z, n_features, W, S, b, Sb, out_m, out_v)
        for row in range(n_known):  # the rows' own margins, for the learning (class means move out_m)
            row_m[row] = out_m[row]
        margin, u = ak.confidence(out_m, out_v, n_known, False)
        # the first k features are the channels' own (expand): the class means read no bin
        best, margin, distance = mk.multiclass_prediction(
            feature_slots, feature_z, k, capacity, class_sums, class_counts, n_known, class_mean_weight,
            novelty, logit_adjustment, out_m, margin)
        u = mk.novelty_query(u, distance, novelty_stats, novelty, n_known, n_rows, class_counts)
        ask, threshold = ak.query(u, threshold, power, rng_state, target, gain)
        if feat_k.shape[0] == n:
            feat_k[i] = k
            for j in range(k):
                feat_slots[i, j] = slots[j]
                feat_z[i, j] = vals[j]
        pred[i] = best
        margin_out[i] = margin
        asked_out[i] = ask
        c = int(codes[i])
        usable = usable_label(c, code_class, n_known, n_rows)
        usable_out[i] = usable
        if usable and (ask or not active_learning):
            if code_class[c] < 0:
                return i, NEED_CLASS, threshold, n_features
            ak.learn_multiclass_scored(feature_slots, feature_z, n_features, code_class[c], n_known,
                                       W, S, b, Sb, r, floor, row_m, out_v)
            ak.count_class_mean(feature_slots, feature_z, n_features, capacity, code_class[c], class_sums,
                                class_counts)
            if keeps:
                ak.keep_for_refit(slots, vals, k, float(code_class[c]), mean, var, eps, kept, kept_y, kept_n)
        i += 1
    return n, DONE, threshold, 0
