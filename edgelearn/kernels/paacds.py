"""PAACDS kernels (seed 000; docs/learners.md, "PAACDS").

Model arrays, all of fixed size ``capacity`` (slots) and ``rows`` (1 for a
binary model, ``n_classes`` otherwise):

* ``W[rows, capacity]`` weights; ``active[capacity]`` the slot is in the model;
* ``b[rows]`` one bias per row (the optional intercept; all 0 and never
  moved when the learner has none, so adding it changes no score);
* ``h[capacity]`` each slot's information, and the short-horizon statistics
  it is computed from: ``h_n`` (observations), ``h_mean``, ``h_var``.

An instance is ``(slots[:k], z[:k])``.  A negative slot is a channel the model
does not know (read-only prediction): it is "new", with information 1.
"""

import math

import numpy as np
from numba.experimental import structref

from ._jit import jit, jit_without_refcounts
from .packed import PackedType
from .channels import observe_one
from .rate_control import adapt_level, budgeted_query
from .rng import next_double

#: ``delta`` stays within these bounds under a target query rate.
DELTA_MIN, DELTA_MAX = 1e-3, 1e6


@jit_without_refcounts
def shared_share(total, shared, n_shared, k):
    """p_s: the shared slots' share of the instance's information; by count
    if the information sums to 0; 0 for an empty instance."""
    if total > 0.0:
        return shared / total
    if k > 0:
        return n_shared / k
    return 0.0


@jit
def confidences(slots, k, active, h):
    """``(p_s, p_n)``: the shares of the instance's information carried by
    the shared (active) and the new slots."""
    total = 0.0
    shared = 0.0
    n_shared = 0
    for j in range(k):
        s = slots[j]
        hs = h[s] if s >= 0 else 1.0
        total += hs
        if s >= 0 and active[s]:
            shared += hs
            n_shared += 1
    p_s = shared_share(total, shared, n_shared, k)
    return p_s, 1.0 - p_s


@jit
def scores(slots, z, k, W, b, active, h, out):
    """Write ``p_s * W[c, s] . z_s + b[c]`` for every row c into ``out``;
    return p_s."""
    p_s, _ = confidences(slots, k, active, h)
    for c in range(W.shape[0]):
        acc = 0.0
        for j in range(k):
            s = slots[j]
            if s >= 0 and active[s]:
                acc += W[c, s] * z[j]
        out[c] = p_s * acc + b[c]
    return p_s


@jit_without_refcounts
def top_two(out, n_known, n_rows):
    """The best known class, and the best other class among the known ones
    plus the next unused row (the stand-in for "a class not seen yet")."""
    best = 0
    for c in range(1, n_known):
        if out[c] > out[best]:
            best = c
    considered = min(n_known + 1, n_rows)
    runner = -1
    for c in range(considered):
        if c != best and (runner < 0 or out[c] > out[runner]):
            runner = c
    return best, runner


@jit
def update_information(slots, z, k, h, h_n, h_mean, h_var, forget, k0):
    """Fold this instance's z into each present slot's short-horizon variance
    and refresh ``h = (k0 + n * ewvar) / (k0 + n)``."""
    for j in range(k):
        information_one(slots[j], z[j], h, h_n, h_mean, h_var, forget, k0)


@jit
def information_one(s, z, h, h_n, h_mean, h_var, forget, k0):
    n = h_n[s] + 1
    # past 1 / forget observations the step is the constant ``forget``;
    # skipping the division there is a measurable share of the hot loop
    a = forget if n * forget >= 1.0 else 1.0 / n
    d = z - h_mean[s]
    h_mean[s] += a * d
    h_var[s] = (1.0 - a) * (h_var[s] + a * d * d)
    h_n[s] = n
    h[s] = (k0 + n * h_var[s]) / (k0 + n)


@jit_without_refcounts
def observe_scores(
    slots, values, k, count, mean, var, last_seen, t, forget, eps, z_max,
    W, b, active, h, h_n, h_mean, h_var, h_forget, k0, out,
):
    """The per-instance step of an active learner in one pass: observe the
    channels and standardize ``values`` in place, score every row into
    ``out`` with the information as it was, then fold z into the
    information.  Same arithmetic, in the same order, as
    ``observe_standardize``, ``scores`` and ``update_information`` in turn;
    returns p_s."""
    rows = W.shape[0]
    for c in range(rows):
        out[c] = 0.0
    acc = 0.0  # the binary model's one score, kept in a register
    total = 0.0
    shared = 0.0
    n_shared = 0
    for j in range(k):
        s = slots[j]
        zj = observe_one(s, values[j], count, mean, var, last_seen, t, forget, eps, z_max)
        values[j] = zj
        hs = h[s]
        total += hs
        # Branch-free on purpose: which slots are active is unpredictable,
        # and an inactive slot's weights are 0 (adding 0 changes no sum).
        is_active = active[s]
        shared += hs if is_active else 0.0
        n_shared += is_active
        if rows == 1:
            acc += W[0, s] * zj
        else:
            for c in range(rows):
                out[c] += W[c, s] * zj
        information_one(s, zj, h, h_n, h_mean, h_var, h_forget, k0)
    p_s = shared_share(total, shared, n_shared, k)
    if rows == 1:
        out[0] = acc
    for c in range(rows):
        out[c] = out[c] * p_s + b[c]
    return p_s


@jit
def decide(
    slots, values, k, count, mean, var, last_seen, t, forget, eps, z_max,
    W, b, active, h, h_n, h_mean, h_var, h_forget, k0, out,
    n_known, delta, rng_state, adapt, target, gain,
):
    """A whole ``decide_one`` in one call (the gateway's per-message path):
    :func:`observe_scores`, then the label and its margin (the binary score,
    or best minus runner-up by :func:`top_two`), the query drawn by
    :func:`query` (with ``adapt``, under the budget; ``rng_state`` is the
    learner's query state). The same functions in the same order as the
    learner's separate calls, so the same bits.

    Returns ``(best, margin, asked, delta)``; ``best`` is -1 for a
    multiclass model that knows no class yet."""
    observe_scores(
        slots, values, k, count, mean, var, last_seen, t, forget, eps, z_max,
        W, b, active, h, h_n, h_mean, h_var, h_forget, k0, out,
    )
    rows = W.shape[0]
    if rows == 1:
        best = 0
        margin = out[0]
    else:
        best, runner = top_two(out, n_known, rows)
        margin = 0.0 if runner < 0 else out[best] - out[runner]
        if n_known == 0:
            best = -1
    asked, delta = query(margin, delta, rng_state, target if adapt else 0.0, gain)
    return best, margin, asked, delta


@jit
def decide_learn_binary(
    slots, values, k, t, n_slots, delta, y, only_if_asked,
    count, mean, var, last_seen, forget, eps, z_max,
    W, b, active, h, h_n, h_mean, h_var, h_forget, k0, out,
    rng_state, adapt, target, gain, C, variant_i, learn_intercept,
    tie_key, lam, B, max_weights, idx_buf, score_buf,
):
    """A binary ``decide_one`` and the ``learn`` of its label in one call (the
    gateway's per-message path, where most readings carry their label): :func:`decide`,
    then, if ``y`` (+1.0 or -1.0; 0.0: no label) is to be learned (always, or with
    ``only_if_asked`` only when the query was drawn), :func:`learn_binary` on the
    standardized ``values`` and :func:`sparsify` if it moved the weights. The same
    functions in the same order as ``decide_one`` then ``learn``: the same bits,
    with one dispatch instead of three. What changes per call comes first; the
    rest (the model's arrays and constants) a learner passes as one prebuilt tuple.

    Returns ``(margin, asked, delta, learned)``."""
    _, margin, asked, delta = decide(
        slots, values, k, count, mean, var, last_seen, t, forget, eps, z_max,
        W, b, active, h, h_n, h_mean, h_var, h_forget, k0, out,
        0, delta, rng_state, adapt, target, gain,
    )
    learned = y != 0.0 and (asked or not only_if_asked)
    if learned and learn_binary(slots, values, k, y, W, b, active, h, C, variant_i,
                                learn_intercept):
        sparsify(W, active, h, tie_key, n_slots, lam, B, max_weights, idx_buf, score_buf)
    return margin, asked, delta, learned


@structref.register
class _BinaryModelType(PackedType):
    pass


class BinaryModel(structref.StructRefProxy):
    """The arrays and constants :func:`decide_learn_binary` takes after its per-call
    arguments (:data:`BINARY_MODEL_FIELDS`, in that order), as one object: the
    arrays are the learner's own (shared, not copied), and numba unboxes one
    argument per call instead of 30 (:func:`decide_learn_model`)."""


BINARY_MODEL_FIELDS = (
    "count", "mean", "var", "last_seen", "forget", "eps", "z_max",
    "W", "b", "active", "h", "h_n", "h_mean", "h_var", "h_forget", "k0", "out",
    "rng_state", "adapt", "target", "gain", "C", "variant_i", "learn_intercept",
    "tie_key", "lam", "B", "max_weights", "idx_buf", "score_buf",
)
structref.define_proxy(BinaryModel, _BinaryModelType, list(BINARY_MODEL_FIELDS))


@jit
def new_binary_model(
    count, mean, var, last_seen, forget, eps, z_max,
    W, b, active, h, h_n, h_mean, h_var, h_forget, k0, out,
    rng_state, adapt, target, gain, C, variant_i, learn_intercept,
    tie_key, lam, B, max_weights, idx_buf, score_buf,
):
    """A :class:`BinaryModel` of these (``BinaryModel(...)`` called from Python compiles
    its constructor anew in every process; this one is in numba's cache)."""
    return BinaryModel(
        count, mean, var, last_seen, forget, eps, z_max,
        W, b, active, h, h_n, h_mean, h_var, h_forget, k0, out,
        rng_state, adapt, target, gain, C, variant_i, learn_intercept,
        tie_key, lam, B, max_weights, idx_buf, score_buf,
    )


@jit
def decide_learn_model(slots, values, k, t, n_slots, delta, y, only_if_asked, m):
    """:func:`decide_learn_binary` with the model's part of the arguments in one
    :class:`BinaryModel`."""
    return decide_learn_binary(
        slots, values, k, t, n_slots, delta, y, only_if_asked,
        m.count, m.mean, m.var, m.last_seen, m.forget, m.eps, m.z_max,
        m.W, m.b, m.active, m.h, m.h_n, m.h_mean, m.h_var, m.h_forget, m.k0, m.out,
        m.rng_state, m.adapt, m.target, m.gain, m.C, m.variant_i, m.learn_intercept,
        m.tie_key, m.lam, m.B, m.max_weights, m.idx_buf, m.score_buf,
    )


@jit_without_refcounts
def draw_query(margin, delta, rng_state):
    """Ask with probability ``delta / (delta + |margin|)``."""
    return next_double(rng_state) < delta / (delta + abs(margin))


@jit_without_refcounts
def query(margin, delta, rng_state, target, gain):
    """:func:`draw_query`, then the budget's decision and the step of ``delta``
    (:func:`~edgelearn.kernels.rate_control.budgeted_query`; ``target`` 0: no
    budget): ``(asked, delta)``."""
    return budgeted_query(draw_query(margin, delta, rng_state), delta, rng_state, target, gain,
                          DELTA_MIN, DELTA_MAX)


@jit
def adapt_delta(delta, wanted, target, gain):
    """Multiplicative level control of the query rule: ``delta *= exp(gain (target -
    wanted))``, clipped to [1e-3, 1e6] (:func:`~edgelearn.kernels.rate_control.adapt_level`)."""
    return adapt_level(delta, wanted, target, gain, DELTA_MIN, DELTA_MAX)


@jit
def _norms(slots, z, k, active):
    norm_s = 0.0
    norm_n = 0.0
    for j in range(k):
        s = slots[j]
        if active[s]:
            norm_s += z[j] * z[j]
        else:
            norm_n += z[j] * z[j]
    return norm_s, norm_n


@jit
def _step(loss, denom, C, variant_i):
    # ``denom`` already holds the intercept's share when there is one.
    if variant_i:
        denom += 0.5 / C
    if denom <= 0.0:
        return 0.0
    return min(C, loss / denom)


@jit_without_refcounts
def learn_binary(slots, z, k, y, W, b, active, h, C, variant_i, learn_intercept):
    """One PAACDS update for a label ``y`` in {-1, +1}; True if it changed
    the weights.  Shared slots move by ``tau p_s y z``; new slots start at
    ``tau p_n y z`` and join the model.  With ``learn_intercept`` the bias
    is a constant feature of value 1, always shared and never scaled by
    ``p_s``: it moves by ``tau y`` and adds 1 to the step's denominator."""
    # One pass gathers what confidences(), scores() and the norms need,
    # summing in the same order they do.
    total = 0.0
    shared = 0.0
    n_shared = 0
    acc = 0.0
    norm_s = 0.0
    norm_n = 0.0
    for j in range(k):
        s = slots[j]
        hs = h[s]
        total += hs
        is_active = active[s]
        sq = z[j] * z[j]
        shared += hs if is_active else 0.0
        n_shared += is_active
        acc += W[0, s] * z[j]
        norm_s += sq if is_active else 0.0
        norm_n += 0.0 if is_active else sq
    p_s = shared_share(total, shared, n_shared, k)
    p_n = 1.0 - p_s
    loss = 1.0 - y * (p_s * acc + b[0])
    if loss <= 0.0:
        return False
    denom = p_s * p_s * norm_s + p_n * p_n * norm_n
    if learn_intercept:
        denom += 1.0
    tau = _step(loss, denom, C, variant_i)
    step_s = tau * p_s * y  # the products in the order ``tau * p_s * y * z[j]`` takes them
    step_n = tau * p_n * y
    for j in range(k):
        s = slots[j]
        # Both values, then a pick: a branch on ``active`` (a coin toss) mispredicts.
        moved = W[0, s] + step_s * z[j]
        started = step_n * z[j]
        W[0, s] = moved if active[s] else started
        active[s] = True
    if learn_intercept:
        b[0] += tau * y
    return True


@jit_without_refcounts
def learn_multiclass(slots, z, k, y, n_known, W, b, active, h, C, variant_i, learn_intercept, out):
    """Multiclass PA (Crammer et al. 2006) on PAACDS's shared/new split:
    class ``y`` moves toward z, the best-scoring other class ``r`` away.
    With ``learn_intercept`` each row's bias is its constant feature 1:
    ``b[y] += tau``, ``b[r] -= tau``, and the denominator becomes
    ``2 (p_s^2 ||z_s||^2 + p_n^2 ||z_n||^2 + 1)``."""
    scores(slots, z, k, W, b, active, h, out)
    p_s, p_n = confidences(slots, k, active, h)
    considered = min(n_known + 1, W.shape[0])  # n_known counts y's class
    r = -1
    for c in range(considered):
        if c != y and (r < 0 or out[c] > out[r]):
            r = c
    if r < 0:
        return False
    loss = 1.0 - (out[y] - out[r])
    if loss <= 0.0:
        return False
    norm_s, norm_n = _norms(slots, z, k, active)
    denom = p_s * p_s * norm_s + p_n * p_n * norm_n
    if learn_intercept:
        denom += 1.0
    tau = _step(loss, 2.0 * denom, C, variant_i)
    for j in range(k):
        s = slots[j]
        if active[s]:
            W[y, s] += tau * p_s * z[j]
            W[r, s] -= tau * p_s * z[j]
    for j in range(k):
        s = slots[j]
        if not active[s]:
            W[y, s] = tau * p_n * z[j]
            W[r, s] = -tau * p_n * z[j]
            active[s] = True
    if learn_intercept:
        b[y] += tau
        b[r] -= tau
    return True


@jit_without_refcounts
def sparsify(W, active, h, tie_key, n_slots, lam, B, max_weights, idx_buf, score_buf):
    """Scale the weights down to an information-weighted L1 budget ``lam``
    (``lam <= 0`` turns scaling off), then keep only the
    ``min(max(1, ceil(B n_active)), max_weights)`` active slots with the
    largest ``max_c |W[c, i]| h[i]``; the rest leave the model with w = 0.
    Ties go to the smaller ``tie_key`` (the channel space's ``name_key``, a
    hash of each slot's channel name), so which channel stays does not depend
    on the order channels were first seen (slot order breaks only equal keys).
    Only slots below ``n_slots`` (the channel space's assigned slots) can be
    active: O(n_slots), no sort. ``score_buf`` holds ``4 * capacity``."""
    rows = W.shape[0]
    capacity = n_slots
    if lam > 0.0:
        total = 0.0
        for i in range(capacity):
            if active[i]:
                for c in range(rows):
                    total += abs(W[c, i]) * h[i]
        if total > lam:
            scale = lam / total
            for i in range(capacity):
                if active[i]:
                    for c in range(rows):
                        W[c, i] *= scale
    # Gather the active slots and their scores without branching on
    # ``active`` (unpredictable): every slot is written, only active ones
    # advance the cursor.
    n_active = 0
    for i in range(capacity):
        best = 0.0
        for c in range(rows):
            a = abs(W[c, i])
            best = a if a > best else best
        idx_buf[n_active] = i
        score_buf[n_active] = best * h[i]
        n_active += active[i]
    keep = max(1, math.ceil(B * n_active))
    if keep > max_weights:
        keep = max_weights
    if keep >= n_active:
        return
    threshold = kth_largest(score_buf, n_active, keep)
    # Slots strictly above the threshold stay; ties at the threshold fill the
    # remaining places in order of their keys: the ties_left-th smallest key
    # among the tied slots (by quickselect on their negated keys, past the
    # scores' own quickselect scratch) bounds the keys that stay.
    above = 0
    n_tied = 0
    keys = 2 * idx_buf.shape[0]  # where they start in score_buf
    for j in range(n_active):
        v = score_buf[j]
        above += v > threshold
        if v == threshold:
            score_buf[keys + n_tied] = -tie_key[idx_buf[j]]
            n_tied += 1
    ties_left = keep - above
    key_bound = -kth_largest_at(score_buf, keys, n_tied, ties_left) if ties_left > 0 else -math.inf
    bits = W.view(np.uint64)
    for j in range(n_active):
        i = idx_buf[j]
        v = score_buf[j]
        stay = v > threshold
        if v == threshold and ties_left > 0 and tie_key[i] <= key_bound:
            ties_left -= 1
            stay = True
        active[i] = stay
        # ``W[c, i] = W[c, i] if stay else 0.0`` without a branch on ``stay`` (a coin
        # toss, and a mispredicted branch per dropped slot): a kept weight's bits are
        # and-ed with all ones, a dropped one's with none (+0.0).
        keep_bits = np.uint64(0) - np.uint64(stay)
        for c in range(rows):
            bits[c, i] &= keep_bits


@jit_without_refcounts
def kth_largest(values, n, kth):
    """The ``kth`` largest of ``values[:n]`` (1-based), by quickselect on a
    scratch copy kept past ``n`` in the same buffer's second half."""
    return kth_largest_at(values, 0, n, kth)


@jit_without_refcounts
def kth_largest_at(buf, start, n, kth):
    """:func:`kth_largest` of ``buf[start:start + n]``, its scratch copy in
    ``buf[start + n:start + 2 * n]``. Offsets rather than slices: a slice is a
    new array, reference-counted in a loop that runs once per learned label."""
    w = start + n  # work[j] is buf[w + j]
    for j in range(n):
        buf[w + j] = buf[start + j]
    lo = w
    hi = w + n  # the answer is among buf[lo:hi]
    target = w + kth - 1  # position in descending order
    while hi - lo > 1:
        mid = (lo + hi - 1) // 2
        # median of three as pivot keeps sorted input linear
        a = buf[lo]
        b = buf[mid]
        c = buf[hi - 1]
        if (a >= b) == (b >= c):
            pivot = b
        elif (b >= a) == (a >= c):
            pivot = a
        else:
            pivot = c
        # Three-way partition, [greater | equal | less], without a branch on the
        # comparisons (which side a score falls is a coin toss): every element is
        # swapped, the cursor advances only when the element belongs in front.
        g = lo
        for i in range(lo, hi):
            v = buf[i]
            buf[i] = buf[g]
            buf[g] = v
            g += v > pivot
        e = g
        for i in range(g, hi):
            v = buf[i]
            buf[i] = buf[e]
            buf[e] = v
            e += v == pivot
        if target < g:
            hi = g
        elif target < e or e == lo:  # e == lo only for a NaN pivot: no progress
            return pivot
        else:
            lo = e
    return buf[lo]


@jit
def forget_slot(slot, W, active, h, h_n, h_mean, h_var):
    """A recycled slot leaves the model and starts with fresh information."""
    for c in range(W.shape[0]):
        W[c, slot] = 0.0
    active[slot] = False
    h[slot] = 1.0
    h_n[slot] = 0
    h_mean[slot] = 0.0
    h_var[slot] = 0.0


def allocate_scratch(capacity):
    """Buffers :func:`sparsify` needs (indices; scores and the tied slots' keys,
    each with its quickselect copy)."""
    return np.zeros(capacity, dtype=np.int64), np.zeros(4 * capacity, dtype=np.float64)
