"""SurpriseDetector over a recorded stream's rows, as the gateway's pipeline runs it.

The loop is ``decide_one`` then ``learn`` reading by reading, with the per-message
path's own kernels in the same order: :func:`~.replay.gather_row` (new channels
claim slots; a recycled slot is forgotten as the learner's ``_forget_slot`` does),
:func:`~.anomaly.observe_raw` (the channel space's statistics, values left raw),
:func:`~.anomaly.decide_step` (evidence, alarm, label request, learning the values)
and, for a row whose verdict is learned, :func:`~.anomaly.feedback`. An anomaly
stream's verdicts (True/1, False/0) have fixed sides, so unlike the binary
classifiers' loops this one never stops for a label.
"""

import math

from . import anomaly as K
from ._jit import jit
from .replay import N_EVICTED, T, gather_row


@jit
def forget_slot(s, st, hist, trans, ring, weight, conf):
    """``SurpriseDetector._forget_slot``: a recycled slot starts over."""
    st[s] = 0.0
    hist[s] = 0.0
    trans[s] = 0.0
    ring[s] = 0.0
    weight[s] = 1.0
    conf[s] = 0.0


@jit
def top_columns(slots, k, ev, slot_col, out):
    """``SurpriseDetector._top`` as columns: the channels whose evidence is largest
    (at least 1), strongest first, ties in reading order (a stable sort), at most
    ``out.shape[0]`` of them; the rest of ``out`` is -1."""
    for m in range(out.shape[0]):
        out[m] = -1
    for m in range(out.shape[0]):
        best = -1
        for i in range(k):
            s = ev[i * K.EV_ROW + K.EV_STRENGTH]
            if s < 1.0:
                continue
            taken = False
            for p in range(m):
                if out[p] == slot_col[slots[i]]:
                    taken = True
            if taken:
                continue
            if best < 0 or s > ev[best * K.EV_ROW + K.EV_STRENGTH]:
                best = i
        if best < 0:
            return
        out[m] = slot_col[slots[best]]


@jit
def surprise_log_loop(
    X, codes, code_real, learn_if_asked,
    col_slot, slot_col, changed, counters,
    count, mean, var, last_seen, forget, eps, z_max, evict_after,
    st, hist, trans, ring, weight, conf, ctl, params, q, a, ev, shrink, tolerance, k_on,
    slots, vals, score_out, alarm_out, asked_out, top_out, feat_k, feat_slots, feat_z,
):
    """SurpriseDetector over every row of X (NaN = missing channel). ``codes`` per row
    its verdict's code (-1: none), ``code_real`` per code whether it says a real
    anomaly; a row's verdict is learned when asked for, or always without
    ``learn_if_asked``. Per row: the score, the alarm, whether it asked, the columns
    behind the alarm (``top_out``, n x n_top, -1 padded) and, with ``feat_k`` as long
    as X, the decision's ``(slots, ev)`` (``feat_z`` row i holds ``feat_k[i] * EV_ROW``
    numbers), what a label request and the label journal keep."""
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
                    forget_slot(slots[j], st, hist, trans, ring, weight, conf)
                    changed[slots[j]] = 1
        K.observe_raw(slots, vals, k, count, mean, var, last_seen, counters[T], forget, eps, z_max)
        counters[T] += 1
        score, alarm, ask = K.decide_step(st, hist, trans, ring, weight, conf, ctl, slots, vals, k,
                                          params, q, a, ev)
        score_out[i] = score
        alarm_out[i] = alarm
        asked_out[i] = ask
        top_columns(slots, k, ev, slot_col, top_out[i])
        if feat_k.shape[0] == n:
            feat_k[i] = k
            for j in range(k):
                feat_slots[i, j] = slots[j]
            for j in range(k * K.EV_ROW):
                feat_z[i, j] = ev[j]
        c = int(codes[i])
        if c >= 0 and (ask or not learn_if_asked):
            # SurpriseDetector.learn: the channels tested are the reading's (all known)
            K.feedback(weight, conf, st, slots, ev, k, code_real[c] > 0.0, ctl[K.C_THRESHOLD],
                       math.log10(k) if k > 1 else 0.0, shrink, tolerance, k_on)
