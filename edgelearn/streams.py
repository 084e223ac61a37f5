"""Stream wrappers: arrays to instance streams, and capricious feature removal.

An *instance* in a stream is ``(features, label)`` with ``features`` a ``dict`` of
channel name to Python ``float``; a channel that is missing is absent from the dict
(never a NaN, never 0), which is how the gateway sees sensor messages.

* :func:`iter_array` turns a matrix (NaN = missing) and labels into such a stream.
* :func:`drop_features` applies the PAACDS evaluation protocol to a matrix: each
  instance loses a random fraction, drawn uniformly in ``[0, alpha]``, of the
  features it has.
* :func:`capricious` is both at once, so the dict stream and the array form carry the
  same missing pattern.

Synthetic generators return arrays ``(X, y)``, seeded, so the jitted replay and the
dict path (through :func:`iter_array`) see the same stream:

* :func:`hyperplane`: the rotating (moving) hyperplane of Hulten et al. (2001).

Generators with concept drift at known instance indices (``drift_at``; instance
``drift_at[j]`` is the first one of concept ``j + 1``), after MOA's generators; the
streams of the AC_OE protocol (100k instances, drifts at 25k/50k/75k):

* :func:`sea`: SEA concepts (Street and Kim 2001), abrupt threshold changes.
* :func:`led`: the seven-segment LED digits with drifting attribute positions,
  abrupt or gradual (MOA's ``LEDGeneratorDrift`` in a ``ConceptDriftStream``).
* :func:`random_rbf`: random radial basis functions, centroids moving at a given
  speed and redrawn at each drift point ("RBF blips").
* :func:`random_tree`: labels from a random decision tree, a new tree per concept.

Feature evolution (the PAFE protocol), also as an array with NaN for absent channels:

* :func:`evolve_features`: a channel set replaced by a linear mix of it, with an
  overlap in which both are present.

>>> import numpy as np
>>> X = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
>>> list(iter_array(X, np.array([0, 1]), ["t", "h", "co2"]))
[({'t': 1.0, 'co2': 3.0}, 0), ({'t': 4.0, 'h': 5.0, 'co2': 6.0}, 1)]
"""

from __future__ import annotations

import numbers
from typing import Any, Iterator, Sequence

import numpy as np

from edgelearn._validation import check_bool, check_number, format_value

__all__ = [
    "iter_array", "drop_features", "capricious", "hyperplane", "evolve_features",
    "sea", "led", "LED_SEGMENTS", "random_rbf", "random_tree", "TREE_LEAF_FRACTION",
]


def _as_matrix(X: Any, owner: str) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{owner} expects a 2-D feature matrix; got shape {X.shape}")
    return X


def iter_array(
    X: Any, y: Any, feature_names: Sequence[str] | None = None
) -> Iterator[tuple[dict[str, float], Any]]:
    """Yield ``(features, label)`` for each row of ``X``.

    ``features`` maps ``feature_names`` (default ``"0"``, ``"1"``, ...) to Python
    floats, in column order, leaving out NaN entries. Labels come out as plain
    Python scalars (``.item()`` of NumPy scalars; other objects in a list are
    passed through as they are); a 2-D ``y`` array (multi-label) gives a list per
    row; ``y=None`` gives ``None`` labels (an unlabelled stream).

    Arguments are checked when ``iter_array`` is called, not on the first ``next``.

    >>> X = np.array([[0.5, np.nan]])
    >>> next(iter_array(X, np.array([True])))
    ({'0': 0.5}, True)
    """
    X = _as_matrix(X, "iter_array")
    n, d = X.shape
    if feature_names is None:
        names = [str(j) for j in range(d)]
    else:
        names = [str(name) for name in feature_names]
        if len(names) != d:
            raise ValueError(f"iter_array: {len(names)} feature names for {d} columns")
        if len(set(names)) != d:
            raise ValueError("iter_array: feature names must be unique")
    if y is None:
        labels: list[Any] = [None] * n
    elif isinstance(y, np.ndarray):
        if y.ndim not in (1, 2) or y.shape[0] != n:
            raise ValueError(f"iter_array: y of shape {y.shape} does not match "
                             f"{n} rows of X")
        labels = y.tolist()
    else:
        # Not through np.asarray: it would turn [1, "a"] into two strings.
        labels = [v.item() if isinstance(v, np.generic) else v for v in y]
        if len(labels) != n:
            raise ValueError(f"iter_array: {len(labels)} labels for {n} rows of X")
    return _iter_rows(X, labels, names)


def _iter_rows(X: np.ndarray, labels: list[Any], names: list[str]):
    for row, label in zip(X, labels):
        # tolist() gives Python floats in one C call; `v == v` is False only for NaN.
        yield {name: v for name, v in zip(names, row.tolist()) if v == v}, label


def _rng(seed: Any, owner: str) -> np.random.Generator:
    ok = seed is None or isinstance(seed, (np.random.Generator, np.random.SeedSequence))
    if isinstance(seed, numbers.Integral) and not isinstance(seed, (bool, np.bool_)):
        ok = seed >= 0
        if not ok:
            raise ValueError(f"The 'seed' parameter of {owner} must be an int in "
                             f"[0, inf), a numpy Generator or None. Got "
                             f"{format_value(seed)}.")
    if not ok:
        raise TypeError(f"The 'seed' parameter of {owner} must be an int in [0, inf), "
                        f"a numpy Generator or None. Got {format_value(seed)}.")
    return np.random.default_rng(seed)


def _drop(X: Any, alpha: float, seed: Any, owner: str) -> np.ndarray:
    alpha = check_number("alpha", alpha, owner, 0, 1)
    rng = _rng(seed, owner)
    out = _as_matrix(X, owner).copy()
    n, d = out.shape
    present = ~np.isnan(out)
    # The draws are fixed in number and order (n fractions, then an n x d matrix of
    # sort keys), so a seed gives the same pattern whatever the missing values.
    fraction = rng.uniform(0.0, alpha, size=n)
    keys = rng.random((n, d))
    n_present = present.sum(axis=1)
    # rint rounds half to even, exactly like Python's round() on the same double.
    n_drop = np.rint(fraction * n_present).astype(np.intp)
    # Dropping the k present entries with the smallest random keys picks a uniform
    # k-subset without replacement, for all rows at once.
    keys[~present] = np.inf
    rank = np.empty((n, d), dtype=np.intp)
    np.put_along_axis(rank, np.argsort(keys, axis=1),
                      np.broadcast_to(np.arange(d), (n, d)), axis=1)
    out[rank < n_drop[:, None]] = np.nan
    return out


def drop_features(X: Any, alpha: float = 0.5, seed: Any = 0) -> np.ndarray:
    """Return a float64 copy of ``X`` with features removed at random (NaN).

    The PAACDS protocol: for each row draw ``f ~ U[0, alpha]`` and set to NaN
    ``round(f * n_present)`` of its present (non-NaN) entries, chosen uniformly
    without replacement. On average a fraction ``alpha / 2`` of the present
    features goes. Randomness comes from ``numpy.random.default_rng(seed)``, so the
    same seed gives the same pattern. ``X`` is not modified.

    >>> X = np.arange(12, dtype=float).reshape(3, 4)
    >>> drop_features(X, alpha=0.5, seed=0)
    array([[nan,  1.,  2.,  3.],
           [ 4., nan,  6.,  7.],
           [ 8.,  9., 10., 11.]])
    >>> drop_features(X, alpha=1.5)
    Traceback (most recent call last):
    ...
    ValueError: The 'alpha' parameter of drop_features must be a float in [0, 1]. Got 1.5.
    """
    return _drop(X, alpha, seed, "drop_features")


def capricious(
    X: Any,
    y: Any,
    alpha: float = 0.5,
    seed: Any = 0,
    feature_names: Sequence[str] | None = None,
) -> Iterator[tuple[dict[str, float], Any]]:
    """A capricious stream: ``iter_array(drop_features(X, alpha, seed), y, feature_names)``.

    >>> X = np.arange(12, dtype=float).reshape(3, 4)
    >>> [sorted(x) for x, _ in capricious(X, [0, 1, 0], seed=0)]
    [['1', '2', '3'], ['0', '2', '3'], ['0', '1', '2', '3']]
    """
    return iter_array(_drop(X, alpha, seed, "capricious"), y, feature_names)


def hyperplane(
    n: int,
    n_features: int = 10,
    n_drift_features: int = 2,
    mag_change: float = 0.0,
    sigma: float = 0.1,
    noise: float = 0.05,
    seed: Any = 0,
    return_weights: bool = False,
):
    """The rotating hyperplane stream (Hulten, Spencer and Domingos 2001; MOA's
    ``HyperplaneGenerator``): ``n`` instances, features uniform in [0, 1].

    The label is 1 when ``sum_i w_i x_i >= 0.5 * sum_i w_i``, else 0, then flipped
    with probability ``noise``. After each instance, each of the first
    ``n_drift_features`` weights moves by ``mag_change`` in its current direction,
    and that direction reverses with probability ``sigma``; the initial weights are
    uniform in [0, 1] and every direction starts at +1. With ``mag_change = 0`` the
    concept is fixed.

    Returns ``(X, y)``: float64 ``(n, n_features)`` and int64 labels in {0, 1}; with
    ``return_weights=True`` also the ``(n, n_features)`` weights each instance was
    labelled with. The same ``seed`` gives the same stream.

    >>> X, y = hyperplane(4, n_features=3, seed=3)
    >>> X.shape, y.tolist()
    ((4, 3), [0, 1, 0, 1])
    >>> hyperplane(10, n_drift_features=11)
    Traceback (most recent call last):
    ...
    ValueError: The 'n_drift_features' parameter of hyperplane must be an int in [0, 10]. Got 11.
    """
    owner = "hyperplane"
    n = check_number("n", n, owner, 0, None, integer=True)
    d = check_number("n_features", n_features, owner, 1, None, integer=True)
    k = check_number("n_drift_features", n_drift_features, owner, 0, d, integer=True)
    mag_change = check_number("mag_change", mag_change, owner, 0, None)
    sigma = check_number("sigma", sigma, owner, 0, 1)
    noise = check_number("noise", noise, owner, 0, 1)
    rng = _rng(seed, owner)
    weights0 = rng.random(d)
    X = rng.random((n, d))
    flip_label = rng.random(n) < noise
    reverse = rng.random((n, k)) < sigma
    # Direction used after instance t: +1 reversed once per earlier reversal, so a
    # cumulative product; the weight of instance t adds the steps of instances < t.
    direction = np.cumprod(np.where(reverse, -1.0, 1.0), axis=0)
    direction = np.vstack([np.ones((1, k)), direction[:-1]]) if n else direction
    steps = np.cumsum(direction, axis=0) * mag_change
    W = np.broadcast_to(weights0, (n, d)).copy()
    if n:
        W[1:, :k] += steps[:-1]
    y = (np.einsum("ij,ij->i", X, W) >= 0.5 * W.sum(axis=1)).astype(np.int64)
    y[flip_label] ^= 1
    return (X, y, W) if return_weights else (X, y)


def evolve_features(
    X: Any,
    t1: int,
    overlap: int,
    n_new: int | None = None,
    seed: Any = 0,
    mixing: Any = None,
):
    """A feature-evolvable stream (Hou, Zhang and Zhou 2017; the PAFE protocol):
    the old channels ``X`` (n x d1) are replaced by new ones ``X2 = X G``.

    Rows ``0 .. t1-1`` carry the old channels, rows ``t1-overlap .. n-1`` the new
    ones, so the last ``overlap`` rows of the first period carry both and the
    ``T2 = n - t1`` rows of the second period only the new ones. ``G`` is
    ``mixing`` if given (d1 x d2), else a standard Gaussian d1 x ``n_new`` matrix
    (default ``n_new = d1``) drawn from ``numpy.random.default_rng(seed)``.

    Returns ``(Z, G)``: ``Z`` of shape (n, d1 + d2), the old channels in the first
    d1 columns and the new ones after, NaN where a channel is absent (a NaN in X
    stays missing in its own column; a new channel mixing a missing value is
    missing too). ``X`` is not modified.

    >>> X = np.arange(8, dtype=float).reshape(4, 2)
    >>> Z, G = evolve_features(X, t1=2, overlap=1, mixing=np.eye(2))
    >>> Z
    array([[ 0.,  1., nan, nan],
           [ 2.,  3.,  2.,  3.],
           [nan, nan,  4.,  5.],
           [nan, nan,  6.,  7.]])
    >>> evolve_features(X, t1=2, overlap=3)
    Traceback (most recent call last):
    ...
    ValueError: The 'overlap' parameter of evolve_features must be an int in [0, 2]. Got 3.
    """
    owner = "evolve_features"
    X = _as_matrix(X, owner)
    n, d1 = X.shape
    t1 = check_number("t1", t1, owner, 0, n, integer=True)
    overlap = check_number("overlap", overlap, owner, 0, t1, integer=True)
    if mixing is None:
        d2 = d1 if n_new is None else check_number("n_new", n_new, owner, 1, None, integer=True)
        G = _rng(seed, owner).standard_normal((d1, d2))
    else:
        G = np.array(mixing, dtype=np.float64)
        if G.ndim != 2 or G.shape[0] != d1 or G.shape[1] < 1:
            raise ValueError(f"The 'mixing' parameter of {owner} must be a matrix with {d1} rows "
                             f"(one per column of X) and at least one column. Got shape {G.shape}.")
        if not np.isfinite(G).all():
            raise ValueError(f"The 'mixing' parameter of {owner} must be finite.")
        d2 = G.shape[1]
        if n_new is not None and n_new != d2:
            raise ValueError(f"The 'n_new' parameter of {owner} must be None or {d2} (the columns of "
                             f"'mixing') when 'mixing' is given. Got {format_value(n_new)}.")
    Z = np.full((n, d1 + d2), np.nan)
    Z[:t1, :d1] = X[:t1]
    start = t1 - overlap
    # NaN times 0 is NaN, so a missing old value leaves its mixes missing.
    Z[start:, d1:] = X[start:] @ G
    return Z, G


# -- drifting generators -----------------------------------------------------------


def _drift_points(drift_at: Any, owner: str) -> tuple[int, ...]:
    """``drift_at`` as a tuple of strictly increasing non-negative ints.

    Points at or beyond ``n`` are allowed (that drift simply does not happen in a
    shorter stream), so the paper's defaults work for quick small streams.
    """
    message = (f"The 'drift_at' parameter of {owner} must be a strictly increasing "
               f"sequence of ints in [0, inf). Got {format_value(drift_at)}.")
    if isinstance(drift_at, (str, bytes)) or isinstance(drift_at, numbers.Number):
        raise TypeError(message)
    try:
        points = list(drift_at)
    except TypeError:
        raise TypeError(message) from None
    for p in points:
        if not isinstance(p, numbers.Integral) or isinstance(p, (bool, np.bool_)):
            raise TypeError(message)
    points = [int(p) for p in points]
    if any(p < 0 for p in points) or any(b <= a for a, b in zip(points, points[1:])):
        raise ValueError(message)
    return tuple(points)


def _concept_index(n: int, drift_at: tuple[int, ...]) -> np.ndarray:
    """Concept of each instance for abrupt drift: the number of drift points <= t."""
    return np.searchsorted(np.asarray(drift_at, dtype=np.int64), np.arange(n),
                           side="right").astype(np.int64)


def _concept_starts(drift_at: tuple[int, ...]) -> np.ndarray:
    return np.asarray((0,) + drift_at, dtype=np.int64)


def sea(
    n: int,
    drift_at: Sequence[int] = (25_000, 50_000, 75_000),
    thresholds: Sequence[float] = (8.0, 9.0, 7.0, 9.5),
    noise: float = 0.1,
    seed: Any = 0,
):
    """SEA concepts (Street and Kim 2001; MOA's ``SEAGenerator``): ``n`` instances of
    three features uniform in [0, 10], of which only the first two matter.

    Concept ``j`` (instances ``drift_at[j-1] <= t < drift_at[j]``) labels an instance
    1 when ``x1 + x2 > thresholds[j]`` and 0 when ``x1 + x2 <= thresholds[j]`` (MOA's
    direction, and that of the bundled ``load("sea")``: its labels agree with
    ``x1 + x2 > 9`` on 90% of the rows, its 10% noise); the label is then flipped
    with probability ``noise``. So ``thresholds`` has one value per concept,
    ``len(drift_at) + 1``. Drift points at or beyond ``n`` do not happen.

    Returns ``(X, y)``: float64 ``(n, 3)`` and int64 labels in {0, 1}. The same
    ``seed`` gives the same stream, and the features do not depend on ``noise``.

    >>> X, y = sea(6, drift_at=(3,), thresholds=(8.0, 12.0), noise=0.0, seed=1)
    >>> X.shape, y.tolist()
    ((6, 3), [1, 1, 1, 0, 0, 0])
    >>> bool(((X[:, 0] + X[:, 1] > np.array([8, 8, 8, 12, 12, 12])) == y).all())
    True
    >>> sea(10, noise=2)
    Traceback (most recent call last):
    ...
    ValueError: The 'noise' parameter of sea must be a float in [0, 1]. Got 2.
    """
    owner = "sea"
    n = check_number("n", n, owner, 0, None, integer=True)
    points = _drift_points(drift_at, owner)
    if isinstance(thresholds, (str, bytes)) or not hasattr(thresholds, "__len__"):
        raise TypeError(f"The 'thresholds' parameter of {owner} must be a sequence of "
                        f"floats, one per concept. Got {format_value(thresholds)}.")
    if len(thresholds) != len(points) + 1:
        raise ValueError(f"The 'thresholds' parameter of {owner} must have "
                         f"len(drift_at) + 1 = {len(points) + 1} values (one per concept). "
                         f"Got {len(thresholds)}.")
    limits = np.array([check_number("thresholds", v, owner, None, None) for v in thresholds],
                      dtype=np.float64)
    noise = check_number("noise", noise, owner, 0, 1)
    rng = _rng(seed, owner)
    X = rng.uniform(0.0, 10.0, size=(n, 3))
    flip = rng.random(n) < noise
    y = (X[:, 0] + X[:, 1] > limits[_concept_index(n, points)]).astype(np.int64)
    y[flip] ^= 1
    return X, y


#: Segments lit for each digit (rows 0..9), in MOA's order: top, upper left, upper
#: right, middle, lower left, lower right, bottom.
LED_SEGMENTS = np.array([
    [1, 1, 1, 0, 1, 1, 1],
    [0, 0, 1, 0, 0, 1, 0],
    [1, 0, 1, 1, 1, 0, 1],
    [1, 0, 1, 1, 0, 1, 1],
    [0, 1, 1, 1, 0, 1, 0],
    [1, 1, 0, 1, 0, 1, 1],
    [1, 1, 0, 1, 1, 1, 1],
    [1, 0, 1, 0, 0, 1, 0],
    [1, 1, 1, 1, 1, 1, 1],
    [1, 1, 1, 1, 0, 1, 1],
], dtype=np.int64)
LED_SEGMENTS.setflags(write=False)

_LED_ATTRIBUTES = 24


def _gradual_concepts(n: int, drift_at: tuple[int, ...], width: float,
                      rng: np.random.Generator) -> np.ndarray:
    """Concept of each instance for MOA's nested ``ConceptDriftStream``.

    Around drift point ``p`` an instance at ``t`` passes to the next concept with
    probability ``1 / (1 + exp(-4 (t - p) / width))``; the streams are nested, so it
    reaches concept ``j`` only if it passed drift points ``1 .. j``. The draws
    (``n x len(drift_at)`` uniforms) are made whatever ``width`` is.
    """
    u = rng.random((n, len(drift_at)))
    t = np.arange(n, dtype=np.float64)[:, None]
    p = np.asarray(drift_at, dtype=np.float64)[None, :]
    if width == 0:
        passed = t >= p
    else:
        # 1 / (1 + exp(-x)) = (1 + tanh(x / 2)) / 2, which never overflows.
        passed = u < 0.5 * (1.0 + np.tanh(2.0 * (t - p) / width))
    return np.cumprod(passed, axis=1).sum(axis=1).astype(np.int64)


def led(
    n: int,
    drift_at: Sequence[int] = (50_000,),
    width: float = 0,
    n_drift_features: int = 7,
    noise: float = 0.1,
    seed: Any = 0,
    return_segments: bool = False,
):
    """LED digits with drift (MOA's ``LEDGeneratorDrift``, changes as in its
    ``ConceptDriftStream``): ``n`` instances of 24 binary attributes.

    The class is a digit, uniform in 0..9. Seven attributes are the seven segments
    of that digit on a display (:data:`LED_SEGMENTS`), each flipped with
    probability ``noise``; the other 17 are random bits. Concept 0 has the segments
    in columns 0..6. At each drift point a new concept places them afresh:
    ``n_drift_features`` of the seven segments, chosen at random, move to random
    irrelevant columns, whose bits move to the segments' columns (a swap from the
    plain layout, redrawn if it equals the previous concept's).

    ``width = 0``: abrupt drift, instance ``t`` belongs to the concept after every
    drift point ``<= t``. ``width > 0``: gradual, as ``ConceptDriftStream``: around
    each drift point ``p`` the instance at ``t`` comes from the newer concept with
    probability ``1 / (1 + exp(-4 (t - p) / width))`` (half at ``p``, about 98% at
    ``p + width``). The paper's LED_abrupt is ``led(100_000)``; its LED_gradual is
    taken here as ``led(100_000, drift_at=(25_000, 50_000, 75_000), width=1000)``.

    Returns ``(X, y)``: float64 ``(n, 24)`` of 0/1 and int64 digits; with
    ``return_segments=True`` also ``segments``, int64 ``(len(drift_at) + 1, 7)``,
    the column of each segment in each concept, and ``concept``, int64 ``(n,)``, the
    concept each instance was drawn from. The same ``seed`` gives the same stream.

    >>> X, y, segments, concept = led(3, drift_at=(2,), noise=0.0, seed=0,
    ...                               return_segments=True)
    >>> X.shape, y.tolist(), concept.tolist()
    ((3, 24), [5, 0, 2], [0, 0, 1])
    >>> X[2, segments[1]].astype(int).tolist() == LED_SEGMENTS[2].tolist()
    True
    >>> led(10, n_drift_features=8)
    Traceback (most recent call last):
    ...
    ValueError: The 'n_drift_features' parameter of led must be an int in [0, 7]. Got 8.
    """
    owner = "led"
    n = check_number("n", n, owner, 0, None, integer=True)
    points = _drift_points(drift_at, owner)
    width = check_number("width", width, owner, 0, None)
    if not np.isfinite(width):
        raise ValueError(f"The 'width' parameter of {owner} must be finite. Got inf.")
    k = check_number("n_drift_features", n_drift_features, owner, 0, 7, integer=True)
    noise = check_number("noise", noise, owner, 0, 1)
    return_segments = check_bool("return_segments", return_segments, owner)
    rng = _rng(seed, owner)

    # layouts[j, a]: the column of base attribute a (0..6 segments, 7..23 random bits).
    layouts = np.empty((len(points) + 1, _LED_ATTRIBUTES), dtype=np.int64)
    layouts[0] = np.arange(_LED_ATTRIBUTES)
    for j in range(1, len(points) + 1):
        while True:
            layout = np.arange(_LED_ATTRIBUTES)
            moved = rng.permutation(7)[:k]
            into = 7 + rng.permutation(_LED_ATTRIBUTES - 7)[:k]
            layout[moved], layout[into] = into, moved
            if k == 0 or not np.array_equal(layout, layouts[j - 1]):
                break
        layouts[j] = layout

    digit = rng.integers(0, 10, size=n)
    base = np.empty((n, _LED_ATTRIBUTES), dtype=np.float64)
    base[:, :7] = LED_SEGMENTS[digit] ^ (rng.random((n, 7)) < noise)
    base[:, 7:] = rng.integers(0, 2, size=(n, _LED_ATTRIBUTES - 7))
    concept = _gradual_concepts(n, points, width, rng)
    X = np.empty_like(base)
    # Row i puts base attribute a into column layouts[concept[i], a].
    X[np.arange(n)[:, None], layouts[concept]] = base
    y = digit.astype(np.int64)
    if return_segments:
        return X, y, layouts[:, :7].copy(), concept
    return X, y


def _bounce(u: np.ndarray) -> np.ndarray:
    """Fold coordinates into [0, 1] by reflection at 0 and 1 (a point moving at
    constant speed that bounces off the walls of the unit cube)."""
    r = np.mod(u, 2.0)
    return np.where(r > 1.0, 2.0 - r, r)


def random_rbf(
    n: int,
    n_features: int = 20,
    n_classes: int = 4,
    n_centroids: int = 50,
    drift_at: Sequence[int] = (25_000, 50_000, 75_000),
    speed: float = 0.0,
    seed: Any = 0,
    return_centroids: bool = False,
):
    """Random radial basis functions with drift (MOA's ``RandomRBFGenerator`` and
    ``RandomRBFGeneratorDrift``; the paper's "RBFblips").

    ``n_centroids`` centroids, each with a position uniform in ``[0, 1]^d``, a class
    uniform in ``0 .. n_classes - 1``, a standard deviation uniform in [0, 1) and a
    weight uniform in [0, 1). An instance picks a centroid with probability
    proportional to its weight and lies at the centroid's position plus a random
    direction (uniform in ``[-1, 1]^d``, normalized) times a length drawn from
    ``N(0, stddev^2)``; it carries the centroid's class. Instances may fall outside
    the unit cube, as in MOA.

    Drift: every centroid moves ``speed`` per instance along a random direction of
    its own, bouncing off the faces of ``[0, 1]^d`` (instance ``t`` of a concept
    sees the positions after ``t`` steps from the concept's start); at each drift
    point all centroid positions are redrawn uniformly and the movement restarts
    from them (classes, deviations, weights and directions stay). ``speed = 0``
    (default) gives only the abrupt changes.

    Returns ``(X, y)``: float64 ``(n, n_features)`` and int64 classes. With
    ``return_centroids=True`` also a dict of arrays: ``"centroid"`` ``(n,)`` the
    centroid each instance came from, ``"center"`` ``(n, d)`` its position then,
    ``"positions"`` ``(len(drift_at) + 1, n_centroids, d)`` the positions at each
    concept's start, ``"classes"``, ``"stddev"``, ``"weights"`` ``(n_centroids,)``
    and ``"velocity"`` ``(n_centroids, d)``. The same ``seed`` gives the same stream.

    >>> X, y = random_rbf(5, n_features=2, n_classes=3, n_centroids=4, seed=0)
    >>> X.shape, y.tolist()
    ((5, 2), [1, 2, 2, 2, 2])
    >>> random_rbf(10, speed=-0.1)
    Traceback (most recent call last):
    ...
    ValueError: The 'speed' parameter of random_rbf must be a float in [0, inf]. Got -0.1.
    """
    owner = "random_rbf"
    n = check_number("n", n, owner, 0, None, integer=True)
    d = check_number("n_features", n_features, owner, 1, None, integer=True)
    n_classes = check_number("n_classes", n_classes, owner, 1, None, integer=True)
    c = check_number("n_centroids", n_centroids, owner, 1, None, integer=True)
    points = _drift_points(drift_at, owner)
    speed = check_number("speed", speed, owner, 0, None)
    if not np.isfinite(speed):
        raise ValueError(f"The 'speed' parameter of {owner} must be finite. Got inf.")
    return_centroids = check_bool("return_centroids", return_centroids, owner)
    rng = _rng(seed, owner)

    # The model: drawn first, a fixed number of draws for given sizes.
    positions = rng.random((len(points) + 1, c, d))
    classes = rng.integers(0, n_classes, size=c).astype(np.int64)
    stddev = rng.random(c)
    weights = rng.random(c)
    heading = rng.uniform(-1.0, 1.0, size=(c, d))
    norm = np.linalg.norm(heading, axis=1, keepdims=True)
    velocity = speed * heading / np.where(norm > 0, norm, 1.0)

    # The instances.
    which = rng.choice(c, size=n, p=weights / weights.sum())
    direction = rng.uniform(-1.0, 1.0, size=(n, d))
    length = rng.standard_normal(n) * stddev[which]
    concept = _concept_index(n, points)
    steps = (np.arange(n) - _concept_starts(points)[concept]).astype(np.float64)
    center = positions[concept, which]
    if speed > 0:
        center = _bounce(center + steps[:, None] * velocity[which])
    norm = np.linalg.norm(direction, axis=1)
    scale = length / np.where(norm > 0, norm, 1.0)
    X = center + direction * scale[:, None]
    y = classes[which]
    if return_centroids:
        return X, y, {"centroid": which.astype(np.int64), "center": center,
                      "positions": positions, "classes": classes, "stddev": stddev,
                      "weights": weights, "velocity": velocity}
    return X, y


#: Probability that a node at depth ``>= min_leaf_depth`` (and ``< max_depth``) is a
#: leaf in :func:`random_tree`: MOA's ``leafFraction`` default.
TREE_LEAF_FRACTION = 0.15


def _grow_tree(rng: np.random.Generator, n_features: int, n_classes: int,
               max_depth: int, min_leaf_depth: int) -> dict[str, np.ndarray]:
    """One random tree in preorder, as MOA's ``generateRandomTreeNode`` on numeric
    attributes: a split draws its threshold uniformly inside the range the path
    leaves to that feature, so no branch is empty."""
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    label: list[int] = []

    def grow(depth: int, lo: np.ndarray, hi: np.ndarray) -> int:
        node = len(feature)
        feature.append(-1)
        threshold.append(np.nan)
        left.append(-1)
        right.append(-1)
        label.append(-1)
        if depth >= max_depth or (depth >= min_leaf_depth
                                  and rng.random() < TREE_LEAF_FRACTION):
            label[node] = int(rng.integers(n_classes))
            return node
        f = int(rng.integers(n_features))
        cut = lo[f] + (hi[f] - lo[f]) * rng.random()
        feature[node], threshold[node] = f, cut
        below_hi = hi.copy()
        below_hi[f] = cut
        above_lo = lo.copy()
        above_lo[f] = cut
        left[node] = grow(depth + 1, lo, below_hi)
        right[node] = grow(depth + 1, above_lo, hi)
        return node

    grow(0, np.zeros(n_features), np.ones(n_features))
    return {
        "feature": np.array(feature, dtype=np.int64),
        "threshold": np.array(threshold, dtype=np.float64),
        "left": np.array(left, dtype=np.int64),
        "right": np.array(right, dtype=np.int64),
        "label": np.array(label, dtype=np.int64),
    }


def _tree_labels(tree: dict[str, np.ndarray], X: np.ndarray, depth: int) -> np.ndarray:
    """Route every row of ``X`` down ``tree`` at once, one level per pass."""
    node = np.zeros(len(X), dtype=np.int64)
    rows = np.arange(len(X))
    feature, threshold = tree["feature"], tree["threshold"]
    for _ in range(depth):
        f = feature[node]
        inner = f >= 0
        if not inner.any():
            break
        value = X[rows, np.maximum(f, 0)]
        step = np.where(value < threshold[node], tree["left"][node], tree["right"][node])
        node = np.where(inner, step, node)
    return tree["label"][node]


def random_tree(
    n: int,
    n_features: int = 30,
    n_classes: int = 10,
    max_depth: int = 5,
    min_leaf_depth: int = 3,
    drift_at: Sequence[int] = (25_000, 50_000, 75_000),
    seed: Any = 0,
    return_trees: bool = False,
):
    """Labels from a random decision tree (MOA's ``RandomTreeGenerator``, numeric
    attributes only), a new tree at each drift point.

    Features are uniform in [0, 1]. A tree node at depth ``< min_leaf_depth`` (the
    root has depth 0) always splits; from ``min_leaf_depth`` on it is a leaf with
    probability :data:`TREE_LEAF_FRACTION` (0.15, MOA's default), and at
    ``max_depth`` always. A split picks a random feature and a threshold uniform in
    the interval that the splits above leave to that feature; a row goes left when
    its value is ``< threshold``, right otherwise. A leaf's class is uniform in
    ``0 .. n_classes - 1``. Concept ``j`` labels its instances with tree ``j``.

    Returns ``(X, y)``: float64 ``(n, n_features)`` and int64 classes. With
    ``return_trees=True`` also the list of ``len(drift_at) + 1`` trees, each a dict
    of arrays over its nodes (preorder, node 0 the root): ``"feature"`` (-1 at a
    leaf), ``"threshold"`` (NaN at a leaf), ``"left"``, ``"right"`` (child node
    indices, -1 at a leaf) and ``"label"`` (the class at a leaf, -1 inside). The
    same ``seed`` gives the same stream.

    >>> X, y, trees = random_tree(4, n_features=3, n_classes=2, max_depth=2,
    ...                           min_leaf_depth=2, seed=5, return_trees=True)
    >>> X.shape, y.tolist()
    ((4, 3), [0, 1, 1, 1])
    >>> trees[0]["feature"].tolist(), trees[0]["label"].tolist()
    ([2, 2, -1, -1, 2, -1, -1], [-1, -1, 1, 0, -1, 0, 1])
    >>> random_tree(10, max_depth=2)
    Traceback (most recent call last):
    ...
    ValueError: The 'min_leaf_depth' parameter of random_tree must be an int in [0, 2]. Got 3.
    """
    owner = "random_tree"
    n = check_number("n", n, owner, 0, None, integer=True)
    d = check_number("n_features", n_features, owner, 1, None, integer=True)
    n_classes = check_number("n_classes", n_classes, owner, 1, None, integer=True)
    # The tree may have 2**max_depth leaves: beyond 20 it no longer fits in memory.
    max_depth = check_number("max_depth", max_depth, owner, 0, 20, integer=True)
    min_leaf_depth = check_number("min_leaf_depth", min_leaf_depth, owner, 0, max_depth,
                                  integer=True)
    points = _drift_points(drift_at, owner)
    return_trees = check_bool("return_trees", return_trees, owner)
    rng = _rng(seed, owner)
    trees = [_grow_tree(rng, d, n_classes, max_depth, min_leaf_depth)
             for _ in range(len(points) + 1)]
    X = rng.random((n, d))
    y = np.empty(n, dtype=np.int64)
    starts = list(_concept_starts(points)) + [n]
    for j, tree in enumerate(trees):
        lo, hi = min(int(starts[j]), n), min(int(starts[j + 1]), n)
        if hi > lo:
            y[lo:hi] = _tree_labels(tree, X[lo:hi], max_depth)
    return (X, y, trees) if return_trees else (X, y)
