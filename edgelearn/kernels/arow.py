"""Kernels of :class:`edgelearn.ActiveAROW`: diagonal AROW (Crammer, Kulesza &
Dredze 2009) on a channel space, one-vs-rest for more than two classes.

Model arrays, all of fixed size ``capacity`` (slots) and ``rows`` (1 for a
binary model, ``n_classes`` otherwise):

* ``W[rows, capacity]`` the mean of the Gaussian belief over the weights;
* ``S[rows, capacity]`` its diagonal variance (``prior_var`` for a slot never
  learned; it only shrinks while a channel is learned, down to a floor, and
  stays put while a channel is absent);
* ``b[rows]``, ``Sb[rows]`` the intercept's mean and variance (a constant
  feature of value 1; ``Sb`` is 0 and ``b`` never moves without one).

An instance is ``(slots[:k], z[:k])``; a negative slot is a channel the model
does not know (read-only prediction), which adds nothing to the margin.

With ``n_bins`` bins the model has more features than the channel space has
channels: :func:`expand` maps an instance's ``k`` standardized values to
``k (1 + n_bins)`` features, the ``k`` values first, then each channel's
``n_bins`` centered bin codes.  The model arrays have ``capacity (1 + n_bins)``
columns (the ``capacity`` linear slots first, then ``n_bins`` per channel),
and ``bin_freq[capacity, n_bins]`` holds each channel's bin frequencies.
"""

import math

from numba.experimental import structref

from ._jit import jit, jit_without_refcounts
from .packed import PackedType
from .channels import observe_standardize, standardize
from .rate_control import adapt_level, budgeted_query
from .rng import next_double

#: The query threshold stays within these bounds (in standard deviations).
THRESHOLD_MIN = 1e-6
THRESHOLD_MAX = 1e6


@jit_without_refcounts
def margin_variance(slots, z, k, W, S, b, Sb, row):
    """The margin ``m = W[row] . z + b[row]`` and its variance under the
    belief, ``v = sum S[row, s] z_s^2 + Sb[row]``."""
    m = 0.0
    v = 0.0
    for j in range(k):
        s = slots[j]
        if s >= 0:
            m += W[row, s] * z[j]
            v += S[row, s] * z[j] * z[j]
    return m + b[row], v + Sb[row]


@jit_without_refcounts
def scores(slots, z, k, W, S, b, Sb, out_m, out_v):
    """Every row's margin and variance into ``out_m`` and ``out_v``."""
    # Two rows per pass over the features: each row's sums in :func:`margin_variance`'s
    # order (the same bits), but four chains of additions in flight instead of two,
    # where a row alone waits on each addition before the next.
    rows = W.shape[0]
    for c in range(0, rows - 1, 2):
        m0 = v0 = m1 = v1 = 0.0
        for j in range(k):
            s = slots[j]
            if s >= 0:
                zj = z[j]
                m0 += W[c, s] * zj
                v0 += S[c, s] * zj * zj
                m1 += W[c + 1, s] * zj
                v1 += S[c + 1, s] * zj * zj
        out_m[c] = m0 + b[c]
        out_v[c] = v0 + Sb[c]
        out_m[c + 1] = m1 + b[c + 1]
        out_v[c + 1] = v1 + Sb[c + 1]
    if rows % 2:
        out_m[rows - 1], out_v[rows - 1] = margin_variance(slots, z, k, W, S, b, Sb, rows - 1)


@jit_without_refcounts
def best_two(out_m, n_known):
    """The best known row, and the best other known row (-1 if none)."""
    best = 0
    for c in range(1, n_known):
        if out_m[c] > out_m[best]:
            best = c
    runner = -1
    for c in range(n_known):
        if c != best and (runner < 0 or out_m[c] > out_m[runner]):
            runner = c
    return best, runner


@jit_without_refcounts
def confidence(out_m, out_v, n_known, binary):
    """``(margin, normalized margin)`` of a prediction.  Binary: ``m`` and
    ``|m| / sqrt(v)``.  Multiclass: the gap between the best two known rows
    and that gap over the square root of the sum of their variances (a row
    alone against nothing is a gap of its own margin; no class known: 0)."""
    if binary:
        m = out_m[0]
        v = out_v[0]
    elif n_known == 0:
        return 0.0, 0.0
    else:
        best, runner = best_two(out_m, n_known)
        if runner < 0:
            m = out_m[best]
            v = out_v[best]
        else:
            m = out_m[best] - out_m[runner]
            v = out_v[best] + out_v[runner]
    if v <= 0.0:
        return m, math.inf if m != 0.0 else 0.0
    return m, abs(m) / math.sqrt(v)


@jit
def learn_row(slots, z, k, y, W, S, b, Sb, row, r, floor):
    """One AROW update of ``row`` for ``y`` in {-1, +1}; True if it moved.

    With a squared-hinge loss and a KL term to the current belief, the
    update (Crammer et al. 2009, eqs. 9-11, diagonal) is
    ``beta = 1 / (v + r)``, ``alpha = max(0, 1 - y m) beta``,
    ``w += alpha y S z``, ``S -= beta S^2 z^2``: a channel the model is
    unsure of (large S) moves far, a well-known one little.  A moved
    variance never falls below ``floor``: the lower bound on the covariance
    of ARCOR (Vaits & Crammer, "Re-adapting the regularization of weights
    for non-stationary regression", ALT 2011), so a channel learned long
    ago still moves when the concept drifts."""
    m, v = margin_variance(slots, z, k, W, S, b, Sb, row)
    return update_row(slots, z, k, y, m, v, W, S, b, Sb, row, r, floor)


@jit_without_refcounts
def update_row(slots, z, k, y, m, v, W, S, b, Sb, row, r, floor):
    """:func:`learn_row` given ``(m, v)``, what :func:`margin_variance` gives for
    ``row`` on these features with the model as it is: a caller that has just scored
    them (and changed nothing since) does not sum the row again."""
    loss = 1.0 - y * m
    if loss <= 0.0:
        return False
    beta = 1.0 / (v + r)
    alpha = loss * beta
    for j in range(k):
        s = slots[j]
        sz = S[row, s] * z[j]
        W[row, s] += alpha * y * sz
        S[row, s] = max(S[row, s] - beta * sz * sz, floor)
    if Sb[row] > 0.0:
        b[row] += alpha * y * Sb[row]
        Sb[row] = max(Sb[row] - beta * Sb[row] * Sb[row], floor)
    return True


@jit
def fresh_row(c, W, b):
    """Whether row ``c`` has never been learned: its intercept and every weight
    still 0 (a learned row's first step moves them: its margin was 0, its loss 1)."""
    if b[c] != 0.0:
        return False
    for s in range(W.shape[1]):
        if W[c, s] != 0.0:
            return False
    return True


@jit
def start_row(c, W, b):
    """A class seen for the first time starts from the mean of the known classes'
    rows (``0..c-1``), weights and intercept, instead of from 0; its variances stay
    at the prior, so it still moves as far as a new row.

    One-vs-rest rows are separate learners of related tasks: Evgeniou & Pontil
    ("Regularized multi-task learning", KDD 2004) write each task's weights as a
    common mean plus the task's own deviation, and the common mean is the best
    guess for a task with no data.  A row started at 0 has a margin of 0 where the
    known rows, which learned that most readings are not theirs, have negative
    margins: the new class then wins far beyond its one reading until enough
    readings of other classes have been learned, which at a 10% budget takes a
    long while.  On the tuning seeds 1000-1002 of ``tools/results_label_budget.py``
    at 10% it raised mean multiclass accuracy from 60.2 / 59.7 to 62.3 / 60.8 and
    macro F1 from 41.5 / 41.8 to 43.6 / 42.7 (PAACDS / haphazard protocols); the
    intercept alone gave 60.9 / 60.6."""
    if c == 0:
        return
    for s in range(W.shape[1]):
        total = 0.0
        for row in range(c):
            total += W[row, s]
        W[c, s] = total / c
    total = 0.0
    for row in range(c):
        total += b[row]
    b[c] = total / c


@jit
def learn_multiclass(slots, z, k, c, n_known, W, S, b, Sb, r, floor):
    """One-vs-rest: row ``c`` learns +1, every other known row -1.
    ``n_known`` counts ``c``'s class.  The newest class (``c = n_known - 1``),
    at its first label, first starts from the known rows' mean
    (:func:`start_row`).  True if any row moved."""
    start_new_row(c, n_known, W, b)
    changed = False
    for row in range(n_known):
        y = 1.0 if row == c else -1.0
        changed |= learn_row(slots, z, k, y, W, S, b, Sb, row, r, floor)
    return changed


@jit
def start_new_row(c, n_known, W, b):
    """:func:`start_row` for the newest class at its first label; True if it did."""
    if c > 0 and c == n_known - 1 and fresh_row(c, W, b):
        start_row(c, W, b)
        return True
    return False


@jit
def learn_multiclass_scored(slots, z, k, c, n_known, W, S, b, Sb, r, floor, row_m, row_v):
    """:func:`learn_multiclass` given each known row's margin and variance on these
    features with the model as it is (``row_m``, ``row_v``: what :func:`scores` gives,
    before any class means): a row's update moves only that row, so the others' stand,
    and only a row :func:`start_new_row` moved is summed again."""
    if start_new_row(c, n_known, W, b):
        row_m[c], row_v[c] = margin_variance(slots, z, k, W, S, b, Sb, c)
    changed = False
    for row in range(n_known):
        y = 1.0 if row == c else -1.0
        changed |= update_row(slots, z, k, y, row_m[row], row_v[row], W, S, b, Sb, row, r, floor)
    return changed


@jit
def add_class_means(slots, z, k, capacity, class_sums, class_counts, n_known, weight, out_m):
    """Add to each known row's margin ``weight`` times its nearest-class-mean score
    ``(mu_c . z - |mu_c|^2 / 2) / sqrt(present)`` over the instance's present
    channels (its features of slot below ``capacity``: the linear ones), ``mu_c``
    the mean standardized value of the labels of class ``c`` learned
    (``class_sums / class_counts``; 0 for a class never learned); nothing at ``weight`` 0.

    Returns the reading's mean squared distance to the nearest class mean over its
    present channels, ``min_c (sum z^2 - 2 g_c) / present`` with ``g_c = mu_c . z -
    |mu_c|^2 / 2`` the sum the score takes (``sum (mu_c - z)^2 = sum z^2 - 2 g_c``: no
    second pass), over the classes with a label learned; -1.0 when no channel is present
    or no class has a label (ActiveAROW's ``novelty`` reads it)."""
    present = 0
    sum_sq = 0.0
    for j in range(k):
        if 0 <= slots[j] < capacity:
            present += 1
            sum_sq += z[j] * z[j]
    if present == 0:
        return -1.0
    scale = weight / math.sqrt(present)
    nearest = -1.0
    for c in range(n_known):
        n = class_counts[c]
        if n <= 0.0:
            continue
        g = 0.0
        for j in range(k):
            s = slots[j]
            if 0 <= s < capacity:
                mu = class_sums[c, s] / n
                g += mu * z[j] - 0.5 * mu * mu
        if weight != 0.0:
            out_m[c] += scale * g
        d = max((sum_sq - 2.0 * g) / present, 0.0)  # (rounding can take an exact 0 below it)
        if nearest < 0.0 or d < nearest:
            nearest = d
    return nearest


@jit
def count_class_mean(slots, z, k, capacity, c, class_sums, class_counts):
    """Fold a learned label of class ``c`` into its class sums (the linear features) and count."""
    for j in range(k):
        s = slots[j]
        if 0 <= s < capacity:
            class_sums[c, s] += z[j]
    class_counts[c] += 1.0


@jit
def forget_class_sums(slot, class_sums):
    """A recycled slot's class sums start over."""
    for c in range(class_sums.shape[0]):
        class_sums[c, slot] = 0.0


@jit
def forget_slot(slot, W, S, prior_var):
    """A recycled slot starts over: mean 0, variance back to the prior."""
    for c in range(W.shape[0]):
        W[c, slot] = 0.0
        S[c, slot] = prior_var


@jit_without_refcounts
def draw_query(u, threshold, power, rng_state):
    """Ask with probability ``1 / (1 + (u / threshold)^power)``: 1/2 at the
    threshold, toward 1 below it and 0 above it, the faster the larger
    ``power``.  One draw from the generator whatever the outcome."""
    return next_double(rng_state) < 1.0 / (1.0 + (u / threshold) ** power)


@jit
def query(u, threshold, power, rng_state, target, gain):
    """One reading's query on its normalized margin ``u``: :func:`draw_query`, then the
    budget's decision and the threshold's step
    (:func:`~edgelearn.kernels.rate_control.budgeted_query`; ``target`` 0: no budget).
    What ``ActiveAROW._ask`` and the multiclass log loop both call:
    ``(asked, threshold)``."""
    return budgeted_query(draw_query(u, threshold, power, rng_state), threshold, rng_state,
                          target, gain, THRESHOLD_MIN, THRESHOLD_MAX)


@jit
def adapt_threshold(threshold, wanted, target, gain):
    """Multiplicative level control of the query rule: ``threshold *= exp(gain
    (target - wanted))``, so the rule wants ``target`` of the readings in the long
    run; clipped to [THRESHOLD_MIN, THRESHOLD_MAX]
    (:func:`~edgelearn.kernels.rate_control.adapt_level`)."""
    return adapt_level(threshold, wanted, target, gain, THRESHOLD_MIN, THRESHOLD_MAX)


@jit
def bin_of(value, edges):
    """The bin of ``value``: the number of ``edges`` (ascending) at or below it."""
    # Counted over every edge rather than stopping at the first above: the same
    # number for ascending edges, without a branch on the (random) value.
    b = 0
    for e in range(len(edges)):
        b += value >= edges[e]
    return b


@jit
def count_bins(slots, z, k, edges, bin_freq, count, forget):
    """Fold each present channel's bin into its bin frequencies, at the rate
    the channel space's mean moves (``max(1 / count, forget)``, ``count``
    already including this instance), so a channel's bin frequencies and
    its standardization describe the same stretch of the stream."""
    for j in range(k):
        s = slots[j]
        if s < 0:
            continue
        a = max(1.0 / max(count[s], 1), forget)
        c = bin_of(z[j], edges)
        for b in range(bin_freq.shape[1]):
            bin_freq[s, b] = (1.0 - a) * bin_freq[s, b] + (a if b == c else 0.0)


@jit
def expand(slots, z, k, edges, bin_freq, capacity, out_slots, out_z):
    """The model's features of an instance into ``out_slots``, ``out_z``;
    returns their number, ``k (1 + n_bins)``.

    First the ``k`` standardized values as they are (the linear part), then
    per channel its bin code centered on the channel's bin frequencies,
    ``1[bin == b] - p_b`` for each bin ``b``: a one-hot code minus its mean,
    so a channel that always falls in one bin adds nothing (its code is 0)
    instead of acting as a second intercept.  An unknown channel (negative
    slot) gives negative slots, which add nothing."""
    n_bins = bin_freq.shape[1]
    for j in range(k):
        out_slots[j] = slots[j]
        out_z[j] = z[j]
    n = k
    for j in range(k):
        s = slots[j]
        c = bin_of(z[j], edges) if s >= 0 else -1
        for b in range(n_bins):
            if s < 0:
                out_slots[n] = -1
                out_z[n] = 0.0
            else:
                out_slots[n] = capacity + s * n_bins + b
                out_z[n] = (1.0 if b == c else 0.0) - bin_freq[s, b]
            n += 1
    return n


@jit_without_refcounts
def count_expand(slots, z, k, edges, bin_freq, count, forget, capacity, out_slots, out_z):
    """:func:`count_bins` then :func:`expand` in one pass over the instance's channels,
    each channel's bin found once: the same frequencies and features to the bit, as a
    row's slots are distinct (a channel's frequencies move only at its own turn, before
    its code reads them). Returns the number of features, ``k (1 + n_bins)``."""
    n_bins = bin_freq.shape[1]
    n = k
    for j in range(k):
        s = slots[j]
        out_slots[j] = s
        out_z[j] = z[j]
        if s < 0:
            for b in range(n_bins):
                out_slots[n + b] = -1
                out_z[n + b] = 0.0
        else:
            c = bin_of(z[j], edges)
            a = max(1.0 / max(count[s], 1), forget)
            for b in range(n_bins):
                freq = (1.0 - a) * bin_freq[s, b] + (a if b == c else 0.0)
                bin_freq[s, b] = freq
                out_slots[n + b] = capacity + s * n_bins + b
                out_z[n + b] = (1.0 if b == c else 0.0) - freq
        n += n_bins
    return n


@jit_without_refcounts
def count_expand_score(slots, z, k, edges, bin_freq, count, forget, capacity, W, S, b, Sb,
                       out_slots, out_z):
    """:func:`count_expand` and :func:`margin_variance` of row 0 in one pass: returns
    ``(n, m, v)``, the number of features and their margin and variance. The sums run
    in :func:`margin_variance`'s order (the linear features, then each channel's bins
    in turn): the same bits. Why fused: the sums are two chains of additions, each
    waiting on the one before; summed as the features are made, the bin frequencies'
    updates run while the chains wait, where apart the chains ran after them."""
    n_bins = bin_freq.shape[1]
    m = 0.0
    v = 0.0
    for j in range(k):
        s = slots[j]
        zj = z[j]
        out_slots[j] = s
        out_z[j] = zj
        if s >= 0:
            m += W[0, s] * zj
            v += S[0, s] * zj * zj
    n = k
    for j in range(k):
        s = slots[j]
        if s < 0:
            for c in range(n_bins):
                out_slots[n + c] = -1
                out_z[n + c] = 0.0
        else:
            hit = bin_of(z[j], edges)
            a = max(1.0 / max(count[s], 1), forget)
            first = capacity + s * n_bins
            for c in range(n_bins):
                freq = (1.0 - a) * bin_freq[s, c] + (a if c == hit else 0.0)
                bin_freq[s, c] = freq
                fz = (1.0 if c == hit else 0.0) - freq
                out_slots[n + c] = first + c
                out_z[n + c] = fz
                m += W[0, first + c] * fz
                v += S[0, first + c] * fz * fz
        n += n_bins
    return n, m + b[0], v + Sb[0]


@jit
def forget_bins(slot, bin_freq, capacity, W, S, prior_var):
    """A recycled slot's bin weights and frequencies start over."""
    n_bins = bin_freq.shape[1]
    for b in range(n_bins):
        bin_freq[slot, b] = 0.0
        for c in range(W.shape[0]):
            W[c, capacity + slot * n_bins + b] = 0.0
            S[c, capacity + slot * n_bins + b] = prior_var


@jit_without_refcounts
def decide_learn_binary(
    slots, values, k, t, threshold, y, only_if_asked,
    count, mean, var, last_seen, forget, eps, z_max,
    edges, bin_freq, capacity, feature_slots, feature_z,
    W, S, b, Sb, out_m, out_v, r, floor, power, rng_state, adapt, target, gain,
):
    """A binary ``decide_one`` and the ``learn`` of its label in one call (the
    gateway's per-message path, where most readings carry their label): observe and
    standardize ``values`` in place (:func:`~edgelearn.kernels.channels.
    observe_standardize`), :func:`count_bins` and :func:`expand` into ``feature_slots``
    and ``feature_z`` and :func:`margin_variance` of row 0 into ``out_m``, ``out_v`` (in one
    pass: :func:`count_expand_score`),
    :func:`confidence`, :func:`draw_query` and, with ``adapt``, the budget's decision
    and the threshold's step (:func:`~edgelearn.kernels.rate_control.budgeted_query` on
    ``rng_state``, the learner's query state); then, if ``y`` (+1.0 or -1.0; 0.0: no label) is to be learned (always, or with
    ``only_if_asked`` only when the query was drawn), :func:`learn_row` on the same
    features (``learn`` expands the instance again from bin frequencies nothing has
    moved since; from the margin just scored, :func:`update_row`, as nothing has moved
    the model either). The same functions in the same order as ``decide_one`` then
    ``learn``: the same bits, with one dispatch instead of nine. What changes per
    call comes first; the rest a learner passes as one :class:`BinaryModel`.

    Returns ``(margin, asked, threshold, learned)``."""
    observe_standardize(slots, values, k, count, mean, var, last_seen, t, forget, eps, z_max,
                        True)
    n, m, v = count_expand_score(slots, values, k, edges, bin_freq, count, forget, capacity,
                                 W, S, b, Sb, feature_slots, feature_z)
    out_m[0] = m
    out_v[0] = v
    margin, u = confidence(out_m, out_v, 1, True)
    asked, threshold = budgeted_query(draw_query(u, threshold, power, rng_state), threshold,
                                      rng_state, target if adapt else 0.0, gain, THRESHOLD_MIN,
                                      THRESHOLD_MAX)
    learned = y != 0.0 and (asked or not only_if_asked)
    if learned:  # nothing has moved the model since it was scored: its margin stands
        update_row(feature_slots, feature_z, n, y, m, v, W, S, b, Sb, 0, r, floor)
    return margin, asked, threshold, learned


@structref.register
class _BinaryModelType(PackedType):
    pass


class BinaryModel(structref.StructRefProxy):
    """The arrays and constants :func:`decide_learn_binary` takes after its per-call
    arguments (:data:`BINARY_MODEL_FIELDS`, in that order), as one object: the
    arrays are the learner's own (shared, not copied), and numba unboxes one
    argument per call instead of 25 (:func:`decide_learn_model`)."""


BINARY_MODEL_FIELDS = (
    "count", "mean", "var", "last_seen", "forget", "eps", "z_max",
    "edges", "bin_freq", "capacity", "feature_slots", "feature_z",
    "W", "S", "b", "Sb", "out_m", "out_v", "r", "floor", "power", "rng_state", "adapt",
    "target", "gain",
)
structref.define_proxy(BinaryModel, _BinaryModelType, list(BINARY_MODEL_FIELDS))


@jit
def new_binary_model(
    count, mean, var, last_seen, forget, eps, z_max,
    edges, bin_freq, capacity, feature_slots, feature_z,
    W, S, b, Sb, out_m, out_v, r, floor, power, rng_state, adapt, target, gain,
):
    """A :class:`BinaryModel` of these (``BinaryModel(...)`` called from Python compiles
    its constructor anew in every process; this one is in numba's cache)."""
    return BinaryModel(
        count, mean, var, last_seen, forget, eps, z_max,
        edges, bin_freq, capacity, feature_slots, feature_z,
        W, S, b, Sb, out_m, out_v, r, floor, power, rng_state, adapt, target, gain,
    )


@jit
def decide_learn_model(slots, values, k, t, threshold, y, only_if_asked, m):
    """:func:`decide_learn_binary` with the model's part of the arguments in one
    :class:`BinaryModel`."""
    return decide_learn_binary(
        slots, values, k, t, threshold, y, only_if_asked,
        m.count, m.mean, m.var, m.last_seen, m.forget, m.eps, m.z_max,
        m.edges, m.bin_freq, m.capacity, m.feature_slots, m.feature_z,
        m.W, m.S, m.b, m.Sb, m.out_m, m.out_v, m.r, m.floor, m.power, m.rng_state, m.adapt,
        m.target, m.gain,
    )


# -- the refit of the first labels (ActiveAROW's refit_until) ---------------------------


@jit
def keep_for_refit(slots, z, k, y, mean, var, eps, kept, kept_y, kept_n):
    """Keep a learned label for the refits: the raw values its ``z`` stands for under the
    channels' statistics as they are now, ``mean + z sqrt(var + eps)`` (exact but for a
    ``z`` clipped at ``z_max``), by slot (NaN: a channel absent from the reading), and
    ``y`` (a sign, or a class index). ``kept_n[0]`` counts the labels kept; -1: no more
    refits. A label beyond the buffer's rows ends the refits (they would leave it out)."""
    n = kept_n[0]
    if n < 0:
        return
    if n == kept.shape[0]:
        kept_n[0] = -1
        return
    for s in range(kept.shape[1]):
        kept[n, s] = math.nan
    for j in range(k):
        s = slots[j]
        if s >= 0:
            kept[n, s] = mean[s] + z[j] * math.sqrt(var[s] + eps)
    kept_y[n] = y
    kept_n[0] = n + 1


@jit
def refit(kept, kept_y, n, count, mean, var, eps, z_max, edges, bin_freq, capacity,
          channel_slots, channel_z, feature_slots, feature_z, W, S, b, Sb, prior_var, intercept_var,
          r, floor, binary, n_known, class_sums, class_counts, passes):
    """The belief and the class sums back at the prior, then the first ``n`` kept labels
    learned again in order, ``passes`` times over (class sums and counts each time), each reading's kept values standardized under the channels'
    statistics as they are now (:func:`~edgelearn.kernels.channels.standardize`, slots in
    ascending order), :func:`expand` under today's bin frequencies, and :func:`learn_row`
    (binary) or :func:`learn_multiclass` and :func:`count_class_mean` with the ``n_known``
    classes known now. The first labels were learned on ``z`` from a few readings'
    statistics; this learns them on the scales the channels have since shown."""
    W[:] = 0.0
    S[:] = prior_var
    b[:] = 0.0
    Sb[:] = intercept_var
    class_sums[:] = 0.0
    class_counts[:] = 0.0
    for step in range(n * passes):
        i = step % n
        k = 0
        for s in range(kept.shape[1]):
            x = kept[i, s]
            if not math.isnan(x):
                channel_slots[k] = s
                channel_z[k] = x
                k += 1
        standardize(channel_slots, channel_z, k, count, mean, var, eps, z_max)
        nf = expand(channel_slots, channel_z, k, edges, bin_freq, capacity, feature_slots, feature_z)
        if binary:
            learn_row(feature_slots, feature_z, nf, kept_y[i], W, S, b, Sb, 0, r, floor)
        else:
            c = int(kept_y[i])
            learn_multiclass(feature_slots, feature_z, nf, c, n_known, W, S, b, Sb, r, floor)
            count_class_mean(feature_slots, feature_z, nf, capacity, c, class_sums, class_counts)


@jit
def forget_kept(slot, kept):
    """A recycled slot's kept values for the refits are gone (NaN: absent), in every kept row."""
    for i in range(kept.shape[0]):
        kept[i, slot] = math.nan


@jit
def last_refit_point(until):
    """The last of :func:`refit_points` (-1: none)."""
    if until < 10:
        return -1
    t = 10
    while 2 * t <= until:
        t *= 2
    return t


@jit
def next_refit_step(t, until, kept_n):
    """The first reading at or after ``t`` before which :func:`refit_step` is due: the
    next refit point, or ``t`` itself when past the last one with the refits still on
    (they end there, as ``ActiveAROW._refit_if_due`` ends them); -1 when they are off
    (no ``kept_n``) or over (``kept_n[0] < 0``). A jitted loop reads it once, then
    compares each reading's index with it: one integer compare per row."""
    if kept_n.shape[0] == 0 or kept_n[0] < 0:
        return -1
    last = last_refit_point(until)
    if t > last:
        return t
    p = 10
    while p < t:
        p *= 2
    return p


@jit
def refit_step(t, until, kept, kept_y, kept_n, count, mean, var, eps, z_max, edges, bin_freq,
               capacity, channel_slots, channel_z, feature_slots, feature_z, W, S, b, Sb, prior_var,
               intercept_var, r, floor, binary, n_known, class_sums, class_counts, passes):
    """``ActiveAROW._refit_if_due`` before reading ``t``, the reading
    :func:`next_refit_step` named: :func:`refit` of the labels kept, if any, at a refit
    point; the refits end at the last one (``kept_n[0] = -1``). Returns the next
    reading it is due at (-1: never)."""
    last = last_refit_point(until)
    n = kept_n[0]
    if n > 0 and t <= last:  # t is a refit point: next_refit_step gave it, or 2 t did
        refit(kept, kept_y, n, count, mean, var, eps, z_max, edges, bin_freq, capacity,
              channel_slots, channel_z, feature_slots, feature_z, W, S, b, Sb, prior_var, intercept_var,
              r, floor, binary, n_known, class_sums, class_counts, passes)
    if t >= last:
        kept_n[0] = -1
        return -1
    return 2 * t


def refit_points(until: int) -> list:
    """The readings at which the refits run: 10, 20, 40, ... up to ``until``."""
    points = []
    t = 10
    while t <= until:
        points.append(t)
        t *= 2
    return points
