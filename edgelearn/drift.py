"""Seeded synthetic streams with concept drift at known instance indices, after MOA's
generators: the streams of the AC_OE protocol (100k instances, drifts at 25k/50k/75k).
Each returns arrays ``(X, y)``; ``drift_at[j]`` is the first instance of concept
``j + 1``.

* :func:`sea`: SEA concepts (Street and Kim 2001), abrupt threshold changes.
* :func:`led`: the seven-segment LED digits with drifting attribute positions,
  abrupt or gradual (MOA's ``LEDGeneratorDrift`` in a ``ConceptDriftStream``).
* :func:`random_rbf`: random radial basis functions, centroids moving at a given
  speed and redrawn at each drift point ("RBF blips").
* :func:`random_tree`: labels from a random decision tree, a new tree per concept.
"""

from __future__ import annotations

import numbers
from typing import Any, Sequence

import numpy as np

from ._validation import check_bool, check_number, check_seed, format_value

__all__ = ["LED_SEGMENTS", "TREE_LEAF_FRACTION", "led", "random_rbf", "random_tree", "sea"]


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
    rng = check_seed(seed, owner)
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
    rng = check_seed(seed, owner)

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
    rng = check_seed(seed, owner)

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
    rng = check_seed(seed, owner)
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
