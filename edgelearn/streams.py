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

Generators with concept drift at known instance indices (:func:`sea`, :func:`led`,
:func:`random_rbf`, :func:`random_tree`) are in :mod:`edgelearn.drift`, and importable
from here as before.

Feature evolution (the PAFE protocol), also as an array with NaN for absent channels:

* :func:`evolve_features`: a channel set replaced by a linear mix of it, with an
  overlap in which both are present.

>>> import numpy as np
>>> X = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]])
>>> list(iter_array(X, np.array([0, 1]), ["t", "h", "co2"]))
[({'t': 1.0, 'co2': 3.0}, 0), ({'t': 4.0, 'h': 5.0, 'co2': 6.0}, 1)]
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

import numpy as np

from edgelearn._validation import check_number, check_seed, format_value

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


def _drop(X: Any, alpha: float, seed: Any, owner: str) -> np.ndarray:
    alpha = check_number("alpha", alpha, owner, 0, 1)
    rng = check_seed(seed, owner)
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
    features goes. Randomness comes from ``numpy.random.defaultcheck_seed(seed)``, so the
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
    rng = check_seed(seed, owner)
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
    (default ``n_new = d1``) drawn from ``numpy.random.defaultcheck_seed(seed)``.

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
        G = check_seed(seed, owner).standard_normal((d1, d2))
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


# The drifting generators, where they were before edgelearn.drift.
from .drift import LED_SEGMENTS, TREE_LEAF_FRACTION, led, random_rbf, random_tree, sea  # noqa: E402,F401
