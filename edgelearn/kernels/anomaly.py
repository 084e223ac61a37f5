"""Kernels of the streaming anomaly detector (edgelearn.learners.anomaly).

Per channel slot ``c`` the detector keeps a row of statistics ``st[c]`` (the
columns below), an exponentially weighted histogram per evidence kind of the
surprises that kind has produced, ``hist[c, k]``, and a table of transitions
between value bins, ``trans[c]``. Every evidence kind turns a reading into a
*surprise* ``a >= 0`` in nats; its own histogram turns the surprise into a tail
probability (how often this channel has been at least this surprising), so the
evidence of a noisy channel and of a quiet one are on the same scale.

The kinds (``KINDS``):

0. level: ``a = z^2 / 2``, ``z`` the value's distance from a slowly forgetting mean
   in units of the slowly forgetting mean absolute deviation (times sqrt(pi/2),
   the standard deviation of a normal variable with that mean absolute deviation);
1. change: the same for the step from the previous value, against the typical step;
2. shift: the same for a fast-forgetting mean against the slow one, in units of
   the standard deviation of the fast mean (a level shift or a slow drift);
3. context: ``-log P(bin | previous bin)`` from the transition table (Laplace prior),
   the order of values a channel usually follows (in the spirit of CAD OSE);
4. stuck: ``a = run / typical run`` when the channel repeats its value longer
   than it ever does (in nats: the run's probability under a geometric law of runs);
5. range: how far the value is beyond every value the channel has had, in units of
   that range, times a scale;
6. season: the change kind at a lag of ``P`` readings of the channel (a period: the
   value a day ago), against the typical change at that lag; it needs a ring of the
   last ``P`` values per channel, and speaks once the channel has ``P + warmup``.

Plain NumPy references of every kernel are in tests/naive.py.
"""

from __future__ import annotations

import math

import numpy as np

from ._jit import jit
from .channels import observe_standardize

# Columns of st (per slot).
N, MEAN, DEV, FAST, PREV, STEP, LO, HI, RUN, RUNLEN, BIN, SEASON_STEP = range(12)
N_STATS = 12

KINDS = ("level", "change", "shift", "context", "stuck", "range", "season")
SEASON = 6
N_KINDS = len(KINDS)

# A decision keeps, per channel, a row of EV_ROW numbers: the evidence of each kind
# (unweighted), the evidence of a confirmed pattern it matched, the raw value, and the
# channel's evidence (its weighted kinds combined, or the confirmed evidence if larger).
EV_CONFIRMED = N_KINDS
EV_VALUE = N_KINDS + 1
EV_STRENGTH = N_KINDS + 2
EV_ROW = N_KINDS + 3

# conf[c, j] = (value, evidence): a confirmed anomaly of channel c (evidence 0: empty).
CONF_VALUE, CONF_EVIDENCE = 0, 1

# Columns of the parameter vector.
P_SLOW, P_FASTR, P_HIST, P_WARMUP, P_PRIOR, P_BINW, P_TRANS, P_NBINS, P_KINDS, P_RANGE, P_CONFTOL, P_SEASON = range(12)
N_PARAMS = 12

_SQRT_HALF_PI = math.sqrt(math.pi / 2.0)
_TINY = 1e-12


@jit
def bin_of(z, n_bins):
    """The bin of a standardized value: ``n_bins`` bins of width 6 / n_bins over
    [-3, 3], the outer ones open."""
    b = int(math.floor((z + 3.0) * n_bins / 6.0))
    if b < 0:
        return 0
    if b >= n_bins:
        return n_bins - 1
    return b


@jit
def tail_probability(hist_row, total, a, bin_width, prior):
    """P(surprise >= a) from an EW histogram of past surprises (bins of
    ``bin_width`` in ``log2(1 + a)`` from 0; the last bin open), with a prior of
    weight ``prior`` whose tail is ``exp(-a)``; linear inside a bin, and past
    the last bin's left edge its mass decays as ``edge / a``."""
    n_b = hist_row.shape[0]
    pos = surprise_position(a, bin_width)
    b = int(math.floor(pos))
    tail = 0.0
    if b < n_b - 1:
        for j in range(b + 1, n_b):
            tail += hist_row[j]
        tail += hist_row[b] * (1.0 - (pos - b))
    else:
        edge = 2.0 ** ((n_b - 1) * bin_width) - 1.0
        tail = hist_row[n_b - 1] * edge / a
    return (tail + prior * math.exp(-a)) / (total + prior)


@jit
def surprise_position(a, bin_width):
    """Where a surprise falls on the histogram's axis, in bins: ``log2(1 + a) / bin_width``."""
    return math.log2(1.0 + a) / bin_width


@jit
def season_active(st, c, params):
    """Whether the season kind has a lagged value and enough of them to judge."""
    period = params[P_SEASON]
    return period > 0.0 and st[c, N] >= period + params[P_WARMUP]


@jit
def lagged(ring, st, c, params):
    """The channel's value ``P`` of its readings ago (valid once it has ``P``)."""
    return ring[c, int(st[c, N]) % int(params[P_SEASON])]


@jit
def surprises(st, trans, ring, c, x, params, out):
    """The surprise of each kind for value ``x`` on slot ``c`` (before learning it)."""
    n_bins = int(params[P_NBINS])
    fast_ratio = params[P_FASTR]
    sd = spread(st, c)
    z = (x - st[c, MEAN]) / sd
    out[0] = 0.5 * z * z
    step_sd = st[c, STEP] * _SQRT_HALF_PI + _TINY
    d = (x - st[c, PREV]) / step_sd
    out[1] = 0.5 * d * d
    # The fast mean after taking x, against the slow one, in units of its spread.
    fast = st[c, FAST] + fast_ratio * (x - st[c, FAST])
    u = (fast - st[c, MEAN]) / (sd * math.sqrt(fast_ratio / (2.0 - fast_ratio)))
    out[2] = 0.5 * u * u
    b = bin_of(z, n_bins)
    prev = int(st[c, BIN])
    row = 0.0
    for j in range(n_bins):
        row += trans[c, prev, j]
    out[3] = -math.log((trans[c, prev, b] + 1.0) / (row + n_bins))
    if x == st[c, PREV]:
        out[4] = (st[c, RUN] + 1.0) / (st[c, RUNLEN] + 1.0)
    else:
        out[4] = 0.0
    span = st[c, HI] - st[c, LO] + _TINY
    beyond = max(x - st[c, HI], st[c, LO] - x, 0.0) / span
    out[5] = params[P_RANGE] * beyond
    if season_active(st, c, params):
        v = (x - lagged(ring, st, c, params)) / (st[c, SEASON_STEP] * _SQRT_HALF_PI + _TINY)
        out[SEASON] = 0.5 * v * v
    else:
        out[SEASON] = 0.0


@jit
def learn_value(st, hist, trans, ring, c, x, a, params):
    """Fold value ``x`` (whose surprises are ``a``) into slot ``c``'s statistics."""
    n_bins = int(params[P_NBINS])
    warm = st[c, N] >= params[P_WARMUP]
    if warm:
        keep = 1.0 - params[P_HIST]
        for k in range(hist.shape[1]):
            if k == SEASON and not season_active(st, c, params):
                continue
            row = hist[c, k]
            for j in range(row.shape[0]):
                row[j] *= keep
            b = int(surprise_position(a[k], params[P_BINW]))
            if b >= row.shape[0]:
                b = row.shape[0] - 1
            row[b] += 1.0
    period = int(params[P_SEASON])
    if period > 0:
        if st[c, N] >= period:
            r = max(params[P_SLOW], 1.0 / (st[c, N] - period + 1.0))
            st[c, SEASON_STEP] += r * (abs(x - lagged(ring, st, c, params)) - st[c, SEASON_STEP])
        ring[c, int(st[c, N]) % period] = x
    if st[c, N] == 0.0:
        st[c, MEAN] = x
        st[c, FAST] = x
        st[c, LO] = x
        st[c, HI] = x
        st[c, PREV] = x
        st[c, RUN] = 0.0
        st[c, RUNLEN] = 1.0
        st[c, BIN] = n_bins // 2
        st[c, N] = 1.0
        return
    n = st[c, N] + 1.0
    rate = max(params[P_SLOW], 1.0 / n)
    sd = spread(st, c)
    b = bin_of((x - st[c, MEAN]) / sd, n_bins)
    decay = 1.0 - params[P_TRANS]
    prev = int(st[c, BIN])
    for j in range(n_bins):
        trans[c, prev, j] *= decay
    trans[c, prev, b] += 1.0
    st[c, BIN] = b
    st[c, DEV] += rate * (abs(x - st[c, MEAN]) - st[c, DEV])
    st[c, MEAN] += rate * (x - st[c, MEAN])
    st[c, FAST] += params[P_FASTR] * (x - st[c, FAST])
    st[c, STEP] += rate * (abs(x - st[c, PREV]) - st[c, STEP])
    if x == st[c, PREV]:
        st[c, RUN] += 1.0
    else:
        st[c, RUNLEN] += rate * (st[c, RUN] + 1.0 - st[c, RUNLEN])
        st[c, RUN] = 0.0
    st[c, LO] = min(st[c, LO], x)
    st[c, HI] = max(st[c, HI], x)
    st[c, PREV] = x
    st[c, N] = n


@jit
def channel_evidence(st, hist, trans, ring, c, x, params, a, out):
    """Each kind's evidence against value ``x`` on slot ``c``: ``-log10`` of its tail
    probability (0 for a kind switched off, and for every kind while the channel
    warms up), into ``out``. Leaves the surprises in ``a``; returns whether the
    channel is warm."""
    surprises(st, trans, ring, c, x, params, a)
    warm = st[c, N] >= params[P_WARMUP] + 1.0
    mask = int(params[P_KINDS])
    for k in range(a.shape[0]):
        out[k] = 0.0
        if not warm or not (mask >> k) & 1:
            continue
        if k == SEASON and not season_active(st, c, params):
            continue
        total = 0.0
        for j in range(hist.shape[2]):
            total += hist[c, k, j]
        p = tail_probability(hist[c, k], total, a[k], params[P_BINW], params[P_PRIOR])
        out[k] = -math.log10(max(p, 1e-300))
    return warm


@jit
def n_kinds_on(params):
    mask = int(params[P_KINDS])
    n = 0
    for k in range(N_KINDS):
        n += (mask >> k) & 1
    return n


_LN10 = math.log(10.0)


@jit
def fisher(total, k):
    """Fisher's combination of ``k`` independent p-values whose ``-log10`` sum to
    ``total``: ``-log10`` of P(chi2 with 2k degrees of freedom >= 2 ln(10) total),
    which is ``total - log10(sum_{i<k} h^i / i!)`` with ``h = ln(10) total``;
    increasing in ``total``, and ``total`` itself for ``k = 1``."""
    h = _LN10 * total
    term = 1.0
    poly = 0.0
    for i in range(k):
        poly += term
        term *= h / (i + 1)
    return total - math.log10(poly)


@jit
def fisher_inverse(target, k):
    """The sum of ``-log10`` p-values whose Fisher combination (``k`` of them) is
    ``target`` (bisection; ``fisher(s, k) <= s``, so it is at least ``target``).
    The bracket grows by a doubling step added to ``target``, so it closes where
    ``target + 1`` rounds to ``target`` too (a threshold a target alarm rate drove
    past 2**53), and the step stops growing at 1e308 (a ``target`` of inf)."""
    lo = target
    step = 1.0
    hi = target + step
    while fisher(hi, k) < target and step < 1e308:
        step *= 2.0
        hi = target + step
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if fisher(mid, k) < target:
            lo = mid
        else:
            hi = mid
    return hi


@jit
def spread(st, c):
    """A channel's typical spread: its mean absolute deviation times sqrt(pi/2)."""
    return st[c, DEV] * _SQRT_HALF_PI + _TINY


@jit
def confirmed_evidence(conf, st, c, x, tolerance):
    """The largest evidence of a confirmed anomaly of slot ``c`` whose value is within
    ``tolerance`` spreads of ``x`` (0: none)."""
    best = 0.0
    reach = tolerance * spread(st, c)
    for j in range(conf.shape[1]):
        e = conf[c, j, CONF_EVIDENCE]
        if e > best and abs(x - conf[c, j, CONF_VALUE]) <= reach:
            best = e
    return best


@jit
def combined(weight, c, row, k_on):
    """A channel's evidence: Fisher's combination of its kinds' weighted evidence."""
    total = 0.0
    for k in range(N_KINDS):
        total += weight[c, k] * row[k]
    return fisher(total, k_on)


@jit
def reading_evidence(st, hist, trans, ring, weight, conf, slots, values, n, params, a, ev, learn):
    """The reading's evidence: per warm channel, Fisher's combination of its kinds'
    weighted evidence, or the evidence of a confirmed anomaly its value matches if
    larger; the largest over channels, less ``log10`` of the number of warm channels
    (Bonferroni), at least 0; and the slot that gave it (-1: none).
    ``ev[i * EV_ROW:(i + 1) * EV_ROW]`` gets channel i's row (unweighted evidence per
    kind, confirmed evidence, value: what feedback learns from; and the channel's
    evidence). A slot of -1 (a
    channel the detector does not know) adds nothing. With ``learn`` each value is
    then folded into its channel's statistics."""
    best = 0.0
    top = -1
    warm = 0
    k_on = n_kinds_on(params)
    for i in range(n):
        c = slots[i]
        row = ev[i * EV_ROW:(i + 1) * EV_ROW]
        row[:] = 0.0
        row[EV_VALUE] = values[i]
        if c < 0:
            continue
        if channel_evidence(st, hist, trans, ring, c, values[i], params, a, row[:N_KINDS]):
            warm += 1
            row[EV_CONFIRMED] = confirmed_evidence(conf, st, c, values[i], params[P_CONFTOL])
            e = max(combined(weight, c, row, k_on), row[EV_CONFIRMED])
            row[EV_STRENGTH] = e
            if e > best:
                best = e
                top = c
        if learn:
            learn_value(st, hist, trans, ring, c, values[i], a, params)
    if warm > 1:
        best -= math.log10(warm)
    return max(best, 0.0), top


# Columns of the control vector ctl: the alarm's evidence threshold, the decaying
# maximum of the current episode's evidence, the label tokens, and counters.
C_THRESHOLD, C_EPISODE, C_TOKENS, C_READINGS, C_ALARMS, C_ASKED = range(6)
N_CONTROL = 6

# Columns of the control parameters: score scale, episode decay, target alarm rate
# (0: a fixed threshold), the rate's gain, label rate, most label tokens held.
Q_SCALE, Q_EPISODE, Q_TARGET, Q_GAIN, Q_LABELS, Q_TOKENS = range(6)
N_QPARAMS = 6
# The bounds of a threshold that follows a target alarm rate, in units of the score
# scale: evidence E scores E / (E + scale), so these are the scores 0.001 and 0.999.
THRESHOLD_LOWEST, THRESHOLD_HIGHEST = 1.0 / 999.0, 999.0


@jit
def score_of(evidence, scale):
    """The calibrated score in [0, 1): ``E / (E + scale)`` for evidence E (``-log10``
    of the reading's p-value); 1/2 at ``E = scale``."""
    return evidence / (evidence + scale)


@jit
def alarm_step(evidence, ctl, q):
    """Decide the alarm and the label request for a reading of this evidence, and
    move the controls: an alarm needs evidence at least the threshold and above the
    current episode's decaying maximum (an episode alarms once, unless it grows);
    the threshold follows the target alarm rate when one is set; a label request
    spends a token (tokens accrue at the label rate)."""
    alarm = evidence >= ctl[C_THRESHOLD] and evidence > ctl[C_EPISODE]
    ctl[C_EPISODE] = max(ctl[C_EPISODE] * q[Q_EPISODE], evidence)
    if q[Q_TARGET] > 0.0:
        moved = ctl[C_THRESHOLD] * math.exp(q[Q_GAIN] * ((1.0 if alarm else 0.0) - q[Q_TARGET]))
        # Held to scores in [0.001, 0.999]: a stream that cannot reach the rate (a stuck
        # sensor never alarms; an episode alarms once) drove it to 0.0, which no factor
        # moves again, or past 2**53.
        ctl[C_THRESHOLD] = min(max(moved, q[Q_SCALE] * THRESHOLD_LOWEST), q[Q_SCALE] * THRESHOLD_HIGHEST)
    ctl[C_TOKENS] = min(ctl[C_TOKENS] + q[Q_LABELS], q[Q_TOKENS])
    ask = alarm and ctl[C_TOKENS] >= 1.0
    if ask:
        ctl[C_TOKENS] -= 1.0
        ctl[C_ASKED] += 1.0
    ctl[C_READINGS] += 1.0
    if alarm:
        ctl[C_ALARMS] += 1.0
    return alarm, ask


@jit
def feedback(weight, conf, st, slots, ev, n, real, threshold, channels_log, shrink, tolerance, k_on):
    """Learn an operator's answer about a reading whose decision kept the rows ``ev``;
    ``limit = threshold + channels_log`` is the evidence one channel needs to alarm.

    A false alarm scales the kind weights of every channel whose combined evidence
    reaches the limit by one factor, so that it would combine to ``shrink`` times the
    limit, and forgets the confirmed anomalies its values match: the same pattern
    stops alarming, stronger evidence still does. A real one raises the kind weights
    of the channel with the most evidence to at least 1 and remembers its value as a
    confirmed anomaly, with evidence at least the limit, in place of the weakest one
    remembered: the same value alarms again."""
    limit = threshold + channels_log
    if real:
        best = -1.0
        bi = -1
        for i in range(n):
            if slots[i] < 0:
                continue
            e = combined(weight, slots[i], ev[i * EV_ROW:(i + 1) * EV_ROW], k_on)
            if e > best:
                best = e
                bi = i
        if bi < 0:
            return
        c = slots[bi]
        for k in range(N_KINDS):
            weight[c, k] = max(weight[c, k], 1.0)
        weakest = 0
        for j in range(conf.shape[1]):
            if conf[c, j, CONF_EVIDENCE] < conf[c, weakest, CONF_EVIDENCE]:
                weakest = j
        conf[c, weakest, CONF_VALUE] = ev[bi * EV_ROW + EV_VALUE]
        conf[c, weakest, CONF_EVIDENCE] = max(best, ev[bi * EV_ROW + EV_CONFIRMED], limit)
        return
    target = fisher_inverse(shrink * limit, k_on)
    for i in range(n):
        c = slots[i]
        if c < 0:
            continue
        row = ev[i * EV_ROW:(i + 1) * EV_ROW]
        if combined(weight, c, row, k_on) >= limit:
            total = 0.0
            for k in range(N_KINDS):
                total += weight[c, k] * row[k]
            for k in range(N_KINDS):
                weight[c, k] *= target / total
        reach = tolerance * spread(st, c)
        for j in range(conf.shape[1]):
            if abs(row[EV_VALUE] - conf[c, j, CONF_VALUE]) <= reach:
                conf[c, j, CONF_EVIDENCE] = 0.0


@jit
def decide_step(st, hist, trans, ring, weight, conf, ctl, slots, values, n, params, q, a, ev):
    """``decide_one``'s work in one call: the reading's evidence (learning it), its
    alarm and label request, and its score; returns ``(score, alarm, ask)``."""
    e, _ = reading_evidence(st, hist, trans, ring, weight, conf, slots, values, n, params, a, ev, True)
    alarm, ask = alarm_step(e, ctl, q)
    return score_of(e, q[Q_SCALE]), alarm, ask


@jit
def run_rows(X, col_slot, count, mean, var, last_seen, counters, forget, eps, z_max,
             st, hist, trans, ring, weight, conf, ctl, params, q, scores, alarms, asks, tops):
    """The dict path's ``decide_one`` over every row of X (NaN: missing), the columns
    already holding slots ``col_slot``: channel-space statistics, evidence, score,
    alarm and label request per row, learning each row (no answers)."""
    d = X.shape[1]
    slots = np.empty(d, dtype=np.int32)
    vals = np.empty(d, dtype=np.float64)
    a = np.empty(N_KINDS)
    ev = np.empty(d * EV_ROW)
    for r in range(X.shape[0]):
        k = 0
        for j in range(d):
            x = X[r, j]
            if math.isfinite(x):
                slots[k] = col_slot[j]
                vals[k] = x
                k += 1
        observe_raw(slots, vals, k, count, mean, var, last_seen, counters[0], forget, eps, z_max)
        counters[0] += 1
        scores[r], alarms[r], asks[r] = decide_step(st, hist, trans, ring, weight, conf, ctl, slots,
                                                    vals, k, params, q, a, ev)
        best = 0.0
        tops[r] = -1
        for i in range(k):
            if ev[i * EV_ROW + EV_STRENGTH] > best:
                best = ev[i * EV_ROW + EV_STRENGTH]
                tops[r] = slots[i]


@jit
def observe_raw(slots, vals, k, count, mean, var, last_seen, t, forget, eps, z_max):
    """The channel space's statistics of a reading, its values left raw."""
    observe_standardize(slots, vals, k, count, mean, var, last_seen, t, forget, eps, z_max, False)
