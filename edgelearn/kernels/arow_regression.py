"""Kernels of :class:`edgelearn.AROWRegressor`: diagonal AROW regression on the
channel-wise additive model of :mod:`edgelearn.kernels.arow`, its predictive
interval with an adaptive conformal correction, and its reference requests.

The model arrays are ActiveAROW's with one row (``W[1, F]``, ``S[1, F]``,
``b[1]``, ``Sb[1]``, the features of :func:`~edgelearn.kernels.arow.expand`);
the rest of the learner's state is one float64 array ``stats`` (indices below)
and the ring ``scores`` of the last conformity scores.

* **Prediction**: ``yhat = offset + m`` with ``(m, v)`` the belief's mean and
  variance of ``W . x + b`` (:func:`~edgelearn.kernels.arow.margin_variance`) and
  ``offset`` the first reference learned (a centring constant; AROW's steps are
  equivariant in ``y``, so it only spares the intercept its first long step).
* **Predictive spread**: AROW's update is recursive least squares on a diagonal,
  where ``r`` is the noise variance in units of the prior's; the belief in the
  target's units is ``sigma2 / r`` times ``S``, so the predictive variance is
  ``sigma2 (1 + v / r)``, with ``sigma2`` the noise variance estimated from the
  references' clipped residuals.
* **Error feedback**: a virtual sensor's errors persist (the process it misses
  drifts slowly), so the model's residual on the last reference, ``e``, ``d``
  readings ago, says something about this one: the prediction adds ``c_d e``
  and its variance shrinks by ``1 - rho_d^2``, with ``c_d`` and ``rho_d`` the
  regression coefficient and correlation of consecutive references' residuals
  ``d`` readings apart (:func:`lag_bucket`), estimated online and shrunk toward
  0 (:func:`feedback`).  Without such persistence (shuffled rows) they stay near
  0 and nothing changes: the soft sensors' bias update (Kadlec, Gabrys & Strandt,
  "Data-driven soft sensors in the process industry", Computers & Chemical
  Engineering 2009), with its gain learned per lag.
* **Interval**: ``yhat -+ q sd``, ``q`` the conformal quantile of the normalized
  scores ``|y - yhat| / sd`` of the last ``len(scores)`` references, at the level
  ``1 - alpha_t`` adapted by adaptive conformal inference (Gibbs & Candes 2021):
  ``alpha_t += gamma (alpha - miss)`` after each reference.
"""

import math

from ._jit import jit
from .arow import adapt_threshold, draw_query, expand, margin_variance

# Indices of the learner's ``stats`` array.
OFFSET = 0        # the first reference (the centring constant); 0 before it
N_REF = 1         # references learned
SIGMA2 = 2        # the noise variance estimate (target units squared)
N_NOISE = 3       # residuals folded into SIGMA2
ALPHA_T = 4       # ACI's current miss level
QUANT = 5         # the current conformal quantile q (in predictive sds)
N_SCORES = 6      # scores held in the ring (at most its length)
SCORE_POS = 7     # where the next score goes in the ring
LOG_SD_MEAN = 8   # running mean of log(sd) over the readings observed (query history)
N_WIDTHS = 9      # readings folded into LOG_SD_MEAN
THRESHOLD = 10    # the query threshold as the rate control left it
N_COVERED = 11    # references inside the interval they were given
N_SCORED = 12     # references that had an interval (a finite sd) when learned
GAUSS_Q = 13      # the normal quantile of the stated coverage: q until scores can say
LAST_E = 14       # the model's residual on the last reference learned
LAST_T = 15       # the reading index of the last reference learned; -1 before one
TOKENS = 16       # the budget's bucket: references that may be asked for now
Y_MEAN = 17       # running mean of the references (for Y_VAR)
Y_VAR = 18        # running variance of the references: the noise's prior
LAST_BEYOND = 19  # 1 if the last scored reference was beyond the reject bound
N_REJECTED = 20   # references not learned: alone beyond the reject bound
N_STATS = 21

#: Pseudo-residuals of the noise prior: the references' own variance (what a model
#: that knows nothing would be off by) weighs as this many residuals.
NOISE_PRIOR = 5.0

# Columns of the error-feedback table ``lags[n_lags, 4]``, one row per lag bucket.
LAG_N, LAG_XY, LAG_XX, LAG_YY = 0, 1, 2, 3
#: Lags 1..EXACT_LAGS have a bucket each; beyond, one per doubling.
EXACT_LAGS = 16
#: Pseudo-pairs shrinking a bucket's correction toward none.
LAG_PRIOR = 5.0


@jit
def predictive(m, v, mv, stats, r):
    """``(yhat, sd)`` of a reading whose belief margin and variance are ``(m, v)``
    and whose missing channels add ``mv``: ``sd = sqrt(sigma2 (1 + v / r) + mv)``,
    infinite until the noise variance has been estimated from a residual."""
    yhat = stats[OFFSET] + m
    if stats[N_NOISE] < 1.0:
        return yhat, math.inf
    return yhat, math.sqrt(noise_variance(stats) * (1.0 + v / r) + mv)


@jit
def noise_variance(stats):
    """The noise variance the predictions use: the residuals' estimate shrunk
    toward the references' own variance, ``(NOISE_PRIOR Y_VAR + n SIGMA2) /
    (NOISE_PRIOR + n)`` over ``n`` residuals, so that a few lucky residuals
    (two equal references) cannot make the model sure of itself."""
    n = stats[N_NOISE]
    return (NOISE_PRIOR * stats[Y_VAR] + n * stats[SIGMA2]) / (NOISE_PRIOR + n)


@jit
def missing_variance(slots, k, count, last_seen, t, evict_after, present, W, bin_freq, capacity):
    """The variance the known channels absent from a reading add to its prediction.

    A channel counts if it has a scale (``count >= 2``), is not among the
    reading's ``slots[:k]`` and was seen within the last ``evict_after``
    readings (``t - last_seen < evict_after``; ``t`` the index of the reading);
    one gone longer is not expected back.  Its term is ``W z + sum_b W_b (1[bin
    = b] - p_b)`` with ``z`` standardized (variance at most 1) and the bin
    frequencies ``p``: variance ``W^2 + sum_b p_b W_b^2 - (sum_b p_b W_b)^2``,
    the two parts taken as uncorrelated (the prediction took the term's mean,
    0).  ``present`` is scratch of ``capacity`` zeros, left as found."""
    for j in range(k):
        if slots[j] >= 0:
            present[slots[j]] = 1
    n_bins = bin_freq.shape[1]
    total = 0.0
    for s in range(capacity):
        if present[s] or count[s] < 2 or last_seen[s] < 0 or t - last_seen[s] >= evict_after:
            continue
        w = W[0, s]
        term = w * w
        mean = 0.0
        for bb in range(n_bins):
            wb = W[0, capacity + s * n_bins + bb]
            term += bin_freq[s, bb] * wb * wb
            mean += bin_freq[s, bb] * wb
        total += term - mean * mean
    for j in range(k):
        if slots[j] >= 0:
            present[slots[j]] = 0
    return total


@jit
def interval(yhat, sd, stats):
    """``(lower, upper)``: ``yhat -+ q sd``; the whole line while ``sd`` is infinite."""
    if not math.isfinite(sd):
        return -math.inf, math.inf
    half = stats[QUANT] * sd
    return yhat - half, yhat + half


@jit
def conformal_quantile(scores, n, level, scratch):
    """The split-conformal quantile of ``scores[:n]`` at ``level``: the
    ``ceil(level (n + 1))``-th smallest.  Past the largest (a level too high for
    ``n`` scores, where Gibbs & Candes's set is the whole line) it is the largest
    score, so that the interval stays finite; below the first, 0.  ``scratch``
    (as long as ``scores``) holds the sorted copy."""
    if n == 0:
        return 0.0
    rank = int(math.ceil(level * (n + 1)))
    if rank <= 0:
        return 0.0
    if rank > n:
        rank = n
    kept = scratch[:n]
    kept[:] = scores[:n]
    kept.sort()  # n is a window of a few hundred, sorted once per reference
    return kept[rank - 1]


@jit
def add_score(score, miss, stats, scores, scratch, alpha, gamma):
    """Fold one reference's score into the ring and adapt the level (ACI):
    ``alpha_t += gamma (alpha - miss)``, then refresh the quantile at
    ``1 - alpha_t`` (clipped to [0, 1]).  While the ring is not full and holds
    too few scores for that level (``ceil(level (n + 1)) > n``), ``q`` is the
    normal quantile of the stated coverage: the model's own Gaussian interval."""
    window = len(scores)
    pos = int(stats[SCORE_POS])
    scores[pos] = score
    stats[SCORE_POS] = (pos + 1) % window
    if stats[N_SCORES] < window:
        stats[N_SCORES] += 1.0
    stats[ALPHA_T] += gamma * (alpha - (1.0 if miss else 0.0))
    level = min(max(1.0 - stats[ALPHA_T], 0.0), 1.0)
    n = int(stats[N_SCORES])
    if n < window and math.ceil(level * (n + 1)) > n:
        stats[QUANT] = stats[GAUSS_Q]
    else:
        stats[QUANT] = conformal_quantile(scores, n, level, scratch)


@jit
def relative_certainty(sd, stats, width_forget):
    """How much narrower than usual this reading's interval is,
    ``exp(mean log sd - log sd)``, with the running mean of ``log sd`` (at rate
    ``max(1 / n, width_forget)``) then updated with it.  0 (ask) while ``sd`` is
    infinite, which leaves the history untouched."""
    if not math.isfinite(sd) or sd <= 0.0:
        return 0.0
    log_sd = math.log(sd)
    n = stats[N_WIDTHS] + 1.0
    if n == 1.0:
        u = 1.0
        stats[LOG_SD_MEAN] = log_sd
    else:
        u = math.exp(stats[LOG_SD_MEAN] - log_sd)
        a = max(1.0 / n, width_forget)
        stats[LOG_SD_MEAN] += a * (log_sd - stats[LOG_SD_MEAN])
    stats[N_WIDTHS] = n
    return u


@jit
def lag_bucket(d, n_lags):
    """The bucket of a lag of ``d >= 1`` readings: ``d - 1`` up to
    :data:`EXACT_LAGS`, then one per doubling; -1 beyond the table."""
    if d < 1:
        return -1
    if d <= EXACT_LAGS:
        bucket = d - 1
    else:
        bucket = EXACT_LAGS
        span = 2 * EXACT_LAGS
        while d > span:
            bucket += 1
            span *= 2
    return bucket if bucket < n_lags else -1


@jit
def feedback(stats, lags, t):
    """``(correction, variance factor)`` for a reading at index ``t``: with the
    last reference's residual ``e`` ``d = t - LAST_T`` readings ago and its
    bucket's pairs, ``c e`` with ``c = sxy / sxx * n / (n + LAG_PRIOR)`` and
    ``1 - rho^2 n / (n + LAG_PRIOR)``, ``rho^2 = sxy^2 / (sxx syy)`` (the
    correlation, shrunk alike); ``(0, 1)`` without a reference or pairs."""
    if stats[LAST_T] < 0.0:
        return 0.0, 1.0
    bucket = lag_bucket(int(t - stats[LAST_T]), lags.shape[0])
    if bucket < 0:
        return 0.0, 1.0
    n = lags[bucket, LAG_N]
    sxx = lags[bucket, LAG_XX]
    syy = lags[bucket, LAG_YY]
    if n < 2.0 or sxx <= 0.0 or syy <= 0.0:
        return 0.0, 1.0
    sxy = lags[bucket, LAG_XY]
    shrink = n / (n + LAG_PRIOR)
    rho2 = min(sxy * sxy / (sxx * syy), 1.0)
    return shrink * sxy / sxx * stats[LAST_E], 1.0 - shrink * rho2


@jit
def add_pair(stats, lags, t, e, forget):
    """Fold the pair (last reference's residual, this one's ``e``) into its lag's
    bucket (sums forgetting at ``max(1 / n, forget)``), then make ``e`` at ``t``
    the last reference."""
    if stats[LAST_T] >= 0.0:
        bucket = lag_bucket(int(t - stats[LAST_T]), lags.shape[0])
        if bucket >= 0:
            x = stats[LAST_E]
            lags[bucket, LAG_N] += 1.0
            a = max(1.0 / lags[bucket, LAG_N], forget)
            lags[bucket, LAG_XY] += a * (x * e - lags[bucket, LAG_XY])
            lags[bucket, LAG_XX] += a * (x * x - lags[bucket, LAG_XX])
            lags[bucket, LAG_YY] += a * (e * e - lags[bucket, LAG_YY])
    stats[LAST_E] = e
    stats[LAST_T] = t


@jit
def estimate(slots, z, k, edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb,
             stats, count, last_seen, t, evict_after, present, lags, r):
    """Everything a reading's prediction is made of:
    ``(n, m, v, mv, yhat, sd, model_sd)``: its ``n`` features (expanded into
    ``feature_slots``, ``feature_z``), the belief's margin and variance, the
    missing channels' variance, the prediction with its error feedback and its
    sd, and the belief's part of the sd alone (what a reference can reduce)."""
    n = expand(slots, z, k, edges, bin_freq, capacity, feature_slots, feature_z)
    m, v = margin_variance(feature_slots, feature_z, n, W, S, b, Sb, 0)
    mv = missing_variance(slots, k, count, last_seen, t, evict_after, present, W, bin_freq,
                          capacity)
    yhat, sd = predictive(m, v, mv, stats, r)
    model_sd = predictive(m, v, 0.0, stats, r)[1]
    correction, factor = feedback(stats, lags, t)
    return n, m, v, mv, yhat + correction, sd * math.sqrt(factor), model_sd


@jit
def decide(slots, z, k, edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb,
           stats, count, last_seen, t, evict_after, present, lags, r, power, rng_state, target,
           gain, width_forget, burst):
    """Predict an observed reading (index ``t``) and decide whether to ask for
    its reference.

    Returns ``(yhat, sd, lower, upper, asked)``.  ``target`` is the query rate:
    1.0 asks for every reference (no draw, no control); below it, the reading is
    asked for with probability ``1 / (1 + (u / threshold)^power)``, ``u`` the
    :func:`relative_certainty` of the belief's part of its sd (a reference
    cannot tell what an absent channel read, nor undo the error feedback's
    doubt), :func:`~edgelearn.kernels.arow.draw_query`, and the threshold
    follows :func:`~edgelearn.kernels.arow.adapt_threshold` so that the share
    asked stays at ``target``.  A token bucket holds the budget as a bound, not
    only on average: it earns ``target`` per reading (at most ``burst`` held;
    it starts empty) and a question costs 1, so ``n`` readings are never asked
    more than ``target n`` times; a draw without a token is not asked (and counts
    as not asked for the threshold)."""
    _, _, _, _, yhat, sd, model_sd = estimate(
        slots, z, k, edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb, stats,
        count, last_seen, t, evict_after, present, lags, r)
    lower, upper = interval(yhat, sd, stats)
    u = relative_certainty(model_sd, stats, width_forget)
    if target >= 1.0:
        return yhat, sd, lower, upper, True
    threshold = stats[THRESHOLD]
    # the bucket earns `target` per reading up to `burst` and pays 1 per question:
    # never more than target * n questions over n readings, whatever the draws
    tokens = min(stats[TOKENS] + target, burst)
    asked = draw_query(u, threshold, power, rng_state) and tokens >= 1.0
    stats[TOKENS] = tokens - 1.0 if asked else tokens
    stats[THRESHOLD] = adapt_threshold(threshold, asked, target, gain)
    return yhat, sd, lower, upper, asked


@jit
def predict(slots, z, k, edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb,
            stats, count, last_seen, t, evict_after, present, lags, r):
    """``(yhat, sd, lower, upper)`` of a reading at index ``t``, changing nothing."""
    _, _, _, _, yhat, sd, _ = estimate(
        slots, z, k, edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb, stats,
        count, last_seen, t, evict_after, present, lags, r)
    lower, upper = interval(yhat, sd, stats)
    return yhat, sd, lower, upper


@jit
def learn_row(slots, z, k, e, v, W, S, b, Sb, r, floor):
    """AROW's regression step on row 0 for the residual ``e`` of a reading whose
    belief variance is ``v``: ``beta = 1 / (v + r)``, ``w += e beta S x``,
    ``S -= beta S^2 x^2`` (floored at ``floor``, ARCOR's bound), the intercept
    (a feature of value 1, ``Sb = 0``: none) alike.  Unknown slots (-1) are
    skipped."""
    beta = 1.0 / (v + r)
    for j in range(k):
        s = slots[j]
        if s < 0:
            continue
        sz = S[0, s] * z[j]
        W[0, s] += e * beta * sz
        S[0, s] = max(S[0, s] - beta * sz * sz, floor)
    if Sb[0] > 0.0:
        b[0] += e * beta * Sb[0]
        Sb[0] = max(Sb[0] - beta * Sb[0] * Sb[0], floor)


@jit
def learn(slots, z, k, y, edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb,
          stats, count, last_seen, t, evict_after, present, lags, scores, scratch, r, floor,
          huber, reject, alpha, gamma, noise_forget, lag_forget):
    """Learn reference ``y`` of the reading at index ``t``, with the model as it is now.

    In order: the reading's prediction and interval now (:func:`estimate`); the
    first reference only sets the offset and the references' mean (and is the
    last reference); after it, the interval's verdict is counted and its score
    ``|y - yhat| / sd`` enters the conformal ring (:func:`add_score`); the
    model's own residual ``e = y - (offset + m)`` (before error feedback) is
    judged against the sd of the prediction without feedback as the intervals
    calibrate it (times ``q`` over the normal quantile of ``coverage``; a small
    ``r`` inflates the belief's own scale, which the conformal ``q`` undoes):
    beyond ``reject``
    sds, and the last scored reference was not, it is a spike and nothing more
    is learned from it (counted in ``N_REJECTED``; a second one in a row is a
    change, and is learned); otherwise it is clipped to ``huber`` sds (Huber's
    influence bound; neither while the sd is infinite), and from then on
    the reference is the clipped ``offset + m + e``, so that an outlier moves
    everything below by a bounded amount: the references' running mean and
    variance (:func:`noise_variance`'s prior, at rate ``max(1 / n,
    noise_forget)``), the lag table (:func:`add_pair`, with ``e``), the noise
    variance moves toward ``(e^2 - mv) / (1 + v / r)`` (``mv`` the missing
    channels' share, :func:`missing_variance`) at rate ``max(1 / n,
    noise_forget)`` times the noise's share of the reading's variance,
    ``sigma2 (1 + v / r) / (sigma2 (1 + v / r) + mv)`` (kept at 0 or above); and
    the model takes :func:`learn_row`'s step with ``r`` scaled by ``1 + mv /
    sigma2`` (the reading's noise variance is ``sigma2 + mv``: the absent
    channels' terms are noise to the present ones).

    Returns 1 if ``y`` was inside its interval, 0 if not, -1 if it had none."""
    n, m, v, mv, yhat, sd, _ = estimate(
        slots, z, k, edges, bin_freq, capacity, feature_slots, feature_z, W, S, b, Sb, stats,
        count, last_seen, t, evict_after, present, lags, r)
    stats[N_REF] += 1.0
    if stats[N_REF] == 1.0:
        stats[OFFSET] = y
        stats[Y_MEAN] = y
        add_pair(stats, lags, t, 0.0, lag_forget)
        return -1
    verdict = -1
    e = y - (stats[OFFSET] + m)
    if math.isfinite(sd):
        lower, upper = interval(yhat, sd, stats)
        covered = lower <= y <= upper
        verdict = 1 if covered else 0
        stats[N_SCORED] += 1.0
        stats[N_COVERED] += 1.0 if covered else 0.0
        # the sd as the intervals calibrate it (q over the normal quantile), so that
        # the bounds below mean sds whatever r does to the belief's own scale
        model_sd = stats[QUANT] / stats[GAUSS_Q] * predictive(m, v, mv, stats, r)[1]
        add_score(abs(y - yhat) / sd if sd > 0.0 else math.inf, not covered, stats, scores,
                  scratch, alpha, gamma)
        beyond = abs(e) > reject * model_sd
        alone = beyond and stats[LAST_BEYOND] == 0.0
        stats[LAST_BEYOND] = 1.0 if beyond else 0.0
        if alone:
            # a spike: not learned (two in a row are a change, and are learned)
            stats[N_REJECTED] += 1.0
            return verdict
        bound = huber * model_sd
        if bound > 0.0:
            e = min(max(e, -bound), bound)
    # from here on the reference is the clipped one, offset + m + e: an outlier moves
    # the references' statistics, the error feedback and the model a bounded amount
    a = max(1.0 / stats[N_REF], noise_forget)
    delta = stats[OFFSET] + m + e - stats[Y_MEAN]
    stats[Y_MEAN] += a * delta
    stats[Y_VAR] = (1.0 - a) * (stats[Y_VAR] + a * delta * delta)
    add_pair(stats, lags, t, e, lag_forget)
    stats[N_NOISE] += 1.0
    a = max(1.0 / stats[N_NOISE], noise_forget)
    sigma2 = noise_variance(stats)
    # E[e^2] = sigma2 (1 + v / r) + mv: the reading's estimate of sigma2 is
    # (e^2 - mv) / (1 + v / r), unbiased but the noisier the larger mv, so it
    # moves sigma2 in proportion to the noise's share of the reading's variance
    noise = sigma2 * (1.0 + v / r)
    share = 1.0 if stats[N_NOISE] == 1.0 or noise + mv <= 0.0 else noise / (noise + mv)
    stats[SIGMA2] = max(stats[SIGMA2] + a * share * ((e * e - mv) / (1.0 + v / r) - stats[SIGMA2]),
                        0.0)
    # the missing channels' terms are noise to this step: the reading's noise
    # variance is sigma2 + mv, r (the noise in prior units) grows with it
    r_reading = r * (1.0 + mv / sigma2) if sigma2 > 0.0 else r
    learn_row(feature_slots, feature_z, n, e, v, W, S, b, Sb, r_reading, floor)
    return verdict
