"""Channel statistics: online mean/variance per slot and standardization.

One update rule covers both plain Welford and exponential forgetting: with
step ``a = max(1 / n, forget)``,

    mean += a * d
    var   = (1 - a) * (var + a * d * d)        (d = x - old mean)

which for ``a = 1 / n`` is exactly the population variance of Welford's
algorithm, and for a constant ``a`` an exponentially weighted variance.
"""

import math

from ._jit import jit, jit_without_refcounts


@jit_without_refcounts
def observe_standardize(slots, values, k, count, mean, var, last_seen, t, forget, eps, z_max, scale):
    """Update the statistics of the first ``k`` (slot, value) pairs with the
    values, then (if ``scale``) overwrite ``values[:k]`` with their
    standardized form."""
    for j in range(k):
        z = observe_one(slots[j], values[j], count, mean, var, last_seen, t, forget, eps, z_max)
        if scale:
            values[j] = z


@jit_without_refcounts
def observe_one(s, x, count, mean, var, last_seen, t, forget, eps, z_max):
    """Fold value x into slot s's statistics; return its z."""
    n = count[s] + 1
    a = 1.0 / n
    if forget > a:
        a = forget
    d = x - mean[s]
    mean[s] += a * d
    var[s] = (1.0 - a) * (var[s] + a * d * d)
    count[s] = n
    last_seen[s] = t
    return _z(x, n, mean[s], var[s], eps, z_max)


@jit
def standardize(slots, values, k, count, mean, var, eps, z_max):
    """Overwrite ``values[:k]`` with their standardized form, learning nothing.
    A negative slot (a channel the space does not know) standardizes to 0."""
    for j in range(k):
        s = slots[j]
        if s < 0:
            values[j] = 0.0
        else:
            values[j] = _z(values[j], count[s], mean[s], var[s], eps, z_max)


@jit
def _z(x, n, mean, var, eps, z_max):
    # Below two observations there is no scale yet: report "average".
    if n < 2:
        return 0.0
    z = (x - mean) / math.sqrt(var + eps)
    if z > z_max:
        return z_max
    if z < -z_max:
        return -z_max
    return z


@jit
def claim_slot(last_seen, n_assigned, t, evict_after):
    """The slot a new channel may take at instance ``t``, or -1.

    Slots are handed out in order while any is unused; after that the slot
    unseen for longest is recycled if it has been absent for at least
    ``evict_after`` instances (ties: the lowest slot)."""
    capacity = last_seen.shape[0]
    if n_assigned < capacity:
        return n_assigned
    oldest = 0
    for s in range(1, capacity):
        if last_seen[s] < last_seen[oldest]:
            oldest = s
    if t - last_seen[oldest] >= evict_after:
        return oldest
    return -1


@jit
def reset_slot(slot, count, mean, var, last_seen):
    count[slot] = 0
    mean[slot] = 0.0
    var[slot] = 0.0
    last_seen[slot] = -1
