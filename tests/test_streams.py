import math
import re

import numpy as np
import pytest

from edgelearn.streams import capricious, drop_features, iter_array


def dropped_fraction(before, after):
    present = ~np.isnan(before)
    gone = present & np.isnan(after)
    return gone.sum(axis=1) / np.maximum(present.sum(axis=1), 1)


@pytest.mark.parametrize("alpha", [0.1, 0.5, 1.0])
def test_mean_dropped_fraction_is_half_alpha(alpha):
    X = np.ones((20000, 20))
    frac = dropped_fraction(X, drop_features(X, alpha=alpha, seed=1))
    # Per-row fractions have sd <= alpha / sqrt(12) + rounding; 20000 rows put the
    # standard error of the mean near 0.001.
    assert abs(frac.mean() - alpha / 2) < 0.01
    assert frac.min() == 0.0
    assert frac.max() <= round(alpha * 20) / 20


def test_only_present_features_are_dropped_and_counted():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(20000, 12))
    X[rng.random(X.shape) < 0.3] = np.nan
    out = drop_features(X, alpha=0.5, seed=2)
    # Missing stays missing; present values are kept bit for bit or become NaN.
    assert np.isnan(out[np.isnan(X)]).all()
    kept = ~np.isnan(out)
    assert np.array_equal(out[kept], X[kept])
    n_present = (~np.isnan(X)).sum(axis=1)
    n_dropped = (np.isnan(out) & ~np.isnan(X)).sum(axis=1)
    # round(f * n) with f <= alpha never exceeds round(alpha * n).
    assert (n_dropped <= np.rint(0.5 * n_present)).all()
    frac = n_dropped[n_present > 0] / n_present[n_present > 0]
    assert abs(frac.mean() - 0.25) < 0.01


def test_every_column_is_equally_likely_to_go():
    X = np.zeros((20000, 10))
    gone = np.isnan(drop_features(X, alpha=0.6, seed=3)).mean(axis=0)
    # Each column goes with probability 0.3; sd of a column's rate ~ 0.0032.
    assert np.all(np.abs(gone - 0.3) < 0.02)


def test_same_seed_same_pattern_other_seed_other_pattern():
    X = np.random.default_rng(0).normal(size=(200, 15))
    a = drop_features(X, alpha=0.5, seed=42)
    b = drop_features(X, alpha=0.5, seed=42)
    c = drop_features(X, alpha=0.5, seed=43)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    assert not np.array_equal(np.isnan(a), np.isnan(c))


def test_generator_seed_is_accepted():
    X = np.ones((50, 6))
    a = drop_features(X, seed=np.random.default_rng(7))
    b = drop_features(X, seed=7)
    assert np.array_equal(np.isnan(a), np.isnan(b))


def test_alpha_zero_drops_nothing():
    X = np.arange(30.0).reshape(5, 6)
    assert np.array_equal(drop_features(X, alpha=0.0), X)


def test_inputs_not_mutated_and_output_is_a_float_copy():
    X = np.arange(40, dtype=np.int64).reshape(8, 5)
    Xf = np.where(X % 7 == 0, np.nan, X.astype(float))
    y = np.arange(8)
    X0, Xf0, y0 = X.copy(), Xf.copy(), y.copy()
    out = drop_features(X, alpha=1.0, seed=0)
    assert out.dtype == np.float64 and np.isnan(out).any()
    list(capricious(Xf, y, alpha=1.0, seed=0))
    list(iter_array(Xf, y))
    assert np.array_equal(X, X0)
    assert np.array_equal(Xf, Xf0, equal_nan=True)
    assert np.array_equal(y, y0)
    Xf_same = drop_features(Xf, alpha=0.0)
    assert Xf_same is not Xf


def test_capricious_equals_iter_array_of_drop_features():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 7))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = rng.integers(0, 3, size=300)
    names = [f"ch{j}" for j in range(7)]
    a = list(capricious(X, y, alpha=0.5, seed=9, feature_names=names))
    b = list(iter_array(drop_features(X, alpha=0.5, seed=9), y, names))
    assert a == b
    assert len(a) == 300


def test_iter_array_contents_and_types():
    X = np.array([[1.5, np.nan, -0.0], [np.nan, np.nan, np.nan], [np.inf, 2, 3]])
    y = np.array([1, 0, 1], dtype=np.int8)
    rows = list(iter_array(X, y))
    assert rows[0] == ({"0": 1.5, "2": -0.0}, 1)
    assert math.copysign(1.0, rows[0][0]["2"]) == -1.0
    assert rows[1] == ({}, 0)
    assert rows[2] == ({"0": math.inf, "1": 2.0, "2": 3.0}, 1)
    for features, label in rows:
        assert type(label) is int
        assert all(type(k) is str and type(v) is float for k, v in features.items())
    assert list(rows[2][0]) == ["0", "1", "2"]  # column order


@pytest.mark.parametrize("y, expected_type", [
    (np.array(["a", "b"]), str),
    (np.array([True, False]), bool),
    (np.array([0.5, 1.5], dtype=np.float32), float),
    (np.array([-1, 1], dtype=np.int64), int),
    ([3, 4], int),
])
def test_labels_are_python_scalars(y, expected_type):
    labels = [label for _, label in iter_array(np.zeros((2, 1)), y)]
    assert all(type(v) is expected_type for v in labels)
    assert labels == np.asarray(y).tolist()


def test_list_labels_keep_their_types():
    y = [1, "a", np.int64(2), (0, 1)]
    labels = [lab for _, lab in iter_array(np.zeros((4, 1)), y)]
    assert labels == [1, "a", 2, (0, 1)] and type(labels[2]) is int


def test_multilabel_and_unlabelled():
    X = np.zeros((2, 2))
    assert [lab for _, lab in iter_array(X, np.array([[0, 1], [1, 1]]))] == [[0, 1], [1, 1]]
    assert [lab for _, lab in iter_array(X, None)] == [None, None]


def test_feature_names_keep_column_order():
    X = np.array([[1.0, 2.0, 3.0]])
    x, _ = next(iter_array(X, [0], ["z", "a", "m"]))
    assert list(x) == ["z", "a", "m"]


def test_iter_array_checks_arguments_eagerly():
    with pytest.raises(ValueError, match="2-D"):
        iter_array(np.zeros(3), [0, 1, 2])
    with pytest.raises(ValueError, match="does not match"):
        iter_array(np.zeros((3, 2)), np.array([0, 1]))
    with pytest.raises(ValueError, match="2 labels for 3 rows"):
        iter_array(np.zeros((3, 2)), [0, 1])
    with pytest.raises(ValueError, match="3 feature names for 2 columns"):
        iter_array(np.zeros((3, 2)), [0, 1, 2], ["a", "b", "c"])
    with pytest.raises(ValueError, match="unique"):
        iter_array(np.zeros((3, 2)), [0, 1, 2], ["a", "a"])


@pytest.mark.parametrize("fn", ["drop_features", "capricious"])
@pytest.mark.parametrize("alpha, exc, shown", [
    (1.5, ValueError, "1.5"),
    (-0.1, ValueError, "-0.1"),
    (float("nan"), ValueError, "nan"),
    ("0.5", TypeError, "'0.5'"),
    (True, TypeError, "True"),
    (None, TypeError, "None"),
])
def test_bad_alpha_rejected_with_message(fn, alpha, exc, shown):
    X = np.ones((3, 3))
    msg = f"The 'alpha' parameter of {fn} must be a float in [0, 1]. Got {shown}."
    with pytest.raises(exc) as info:
        if fn == "drop_features":
            drop_features(X, alpha=alpha)
        else:
            capricious(X, [0, 1, 0], alpha=alpha)
    assert str(info.value) == msg


@pytest.mark.parametrize("seed, exc", [(-1, ValueError), (1.5, TypeError),
                                       ("x", TypeError), (True, TypeError)])
def test_bad_seed_rejected(seed, exc):
    with pytest.raises(exc, match=r"The 'seed' parameter of drop_features must be"):
        drop_features(np.ones((2, 2)), seed=seed)


# --- synthetic generators ------------------------------------------------------------

from edgelearn.streams import hyperplane  # noqa: E402


def test_hyperplane_labels_follow_the_weights_it_reports():
    X, y, W = hyperplane(5000, n_features=5, n_drift_features=2, mag_change=0.1,
                         sigma=0.1, noise=0.0, seed=7, return_weights=True)
    rule = (X * W).sum(axis=1) >= 0.5 * W.sum(axis=1)
    assert np.array_equal(y, rule.astype(np.int64))
    assert ((X >= 0) & (X < 1)).all()


def test_hyperplane_drift_moves_only_the_drifting_weights_by_the_magnitude():
    _, _, W = hyperplane(20000, n_features=5, n_drift_features=2, mag_change=0.1,
                         sigma=0.1, noise=0.0, seed=1, return_weights=True)
    steps = np.diff(W, axis=0)
    assert np.allclose(np.abs(steps[:, :2]), 0.1)
    assert (steps[:, 2:] == 0).all()
    # The first step is +mag (every direction starts at +1); a direction reverses
    # with probability sigma, so about 10% of consecutive steps change sign.
    assert np.allclose(steps[0, :2], 0.1)
    reversals = (np.sign(steps[1:, :2]) != np.sign(steps[:-1, :2])).mean()
    assert abs(reversals - 0.1) < 0.01


def test_hyperplane_noise_flips_that_fraction_of_the_same_stream():
    X0, y0 = hyperplane(20000, n_features=5, noise=0.0, seed=2)
    X1, y1 = hyperplane(20000, n_features=5, noise=0.3, seed=2)
    assert np.array_equal(X0, X1)
    assert abs((y0 != y1).mean() - 0.3) < 0.015


def test_hyperplane_without_drift_is_one_concept_and_seeds_repeat():
    X, y, W = hyperplane(1000, mag_change=0.0, seed=4, return_weights=True)
    assert (W == W[0]).all()
    X2, y2 = hyperplane(1000, mag_change=0.0, seed=4)
    assert np.array_equal(X, X2) and np.array_equal(y, y2)
    assert len(hyperplane(0)[1]) == 0


def test_hyperplane_rejects_bad_parameters_by_name():
    with pytest.raises(ValueError, match="'sigma' parameter of hyperplane must be a float in \\[0, 1\\]. Got 2"):
        hyperplane(10, sigma=2)
    with pytest.raises(TypeError, match="'n' parameter of hyperplane"):
        hyperplane(10.0)


def test_evolve_features_layout_mixing_and_seeds():
    from edgelearn.streams import evolve_features

    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    X[4, 1] = np.nan
    Z, G = evolve_features(X, t1=20, overlap=5, n_new=4, seed=7)
    assert Z.shape == (30, 7) and G.shape == (3, 4)
    np.testing.assert_array_equal(Z[:20, :3], X[:20])
    assert np.isnan(Z[20:, :3]).all() and np.isnan(Z[:15, 3:]).all()
    np.testing.assert_allclose(Z[15:, 3:], X[15:] @ G)
    # Same seed, same G; the input is untouched.
    np.testing.assert_array_equal(evolve_features(X, 20, 5, n_new=4, seed=7)[1], G)
    assert not np.array_equal(evolve_features(X, 20, 5, n_new=4, seed=8)[1], G)
    # A missing old value makes its mixes missing where they are present.
    Z, _ = evolve_features(X, t1=10, overlap=8, seed=1)
    assert np.isnan(Z[4, 3:]).all() and np.isnan(Z[4, 1]) and not np.isnan(Z[4, [0, 2]]).any()
    # No overlap: the sets never meet.
    Z, _ = evolve_features(X, t1=12, overlap=0, mixing=np.eye(3))
    assert not (~np.isnan(Z[:, :3]) & ~np.isnan(Z[:, 3:])).any()


@pytest.mark.parametrize(
    "kwargs,exc,shown",
    [
        ({"t1": 31, "overlap": 0}, ValueError, "'t1' parameter of evolve_features must be an int in [0, 30]"),
        ({"t1": 10, "overlap": 11}, ValueError, "'overlap' parameter of evolve_features must be an int in [0, 10]"),
        ({"t1": 10, "overlap": 2, "n_new": 0}, ValueError, "'n_new' parameter"),
        ({"t1": 10, "overlap": 2, "mixing": np.ones((2, 2))}, ValueError, "matrix with 3 rows"),
        ({"t1": 10, "overlap": 2, "mixing": np.full((3, 2), np.nan)}, ValueError, "must be finite"),
        ({"t1": 10.0, "overlap": 2}, TypeError, "'t1' parameter"),
    ],
)
def test_evolve_features_rejects_bad_parameters(kwargs, exc, shown):
    from edgelearn.streams import evolve_features

    with pytest.raises(exc, match=re.escape(shown)):
        evolve_features(np.zeros((30, 3)), **kwargs)


# --- drifting generators ---------------------------------------------------------------

from edgelearn.datasets import load  # noqa: E402
from edgelearn.streams import sea  # noqa: E402


def test_sea_rule_matches_the_shared_data_at_its_noise_level():
    data = load("sea")
    Xd, yd = data.X, data.y
    # The data agree with their own rule (x1 + x2 > 9 is class 1) on ~90% of rows...
    data_rule = (Xd[:, 0] + Xd[:, 1] > 9).astype(np.int64)
    agree_data = (data_rule == yd).mean()
    assert abs(agree_data - 0.9) < 0.01
    # ...and the other direction would agree on ~10% only.
    assert ((Xd[:, 0] + Xd[:, 1] <= 9) == yd).mean() < 0.15
    # The generator with the same single concept and noise: same direction, same rate.
    X, y = sea(len(yd), drift_at=(), thresholds=(9,), noise=0.1, seed=3)
    agree_gen = ((X[:, 0] + X[:, 1] > 9) == y).mean()
    assert abs(agree_gen - agree_data) < 0.01
    # Noiseless, the generator labels the data's own features with their rule: it
    # reproduces the data's labels at the data's rate.
    X0, y0 = sea(10, drift_at=(), thresholds=(9,), noise=0.0)
    assert np.array_equal(y0, (X0[:, 0] + X0[:, 1] > 9).astype(np.int64))
    assert X.min() >= 0 and X.max() <= 10 and abs(X.mean() - 5) < 0.05


def test_sea_noiseless_obeys_each_concepts_threshold_and_noise_flips_only_labels():
    drift_at = (250, 500, 750)
    X, y = sea(1000, drift_at=drift_at, noise=0.0, seed=5)
    assert X.dtype == np.float64 and y.dtype == np.int64 and X.shape == (1000, 3)
    limits = np.repeat([8.0, 9.0, 7.0, 9.5], 250)
    assert np.array_equal(y, (X[:, 0] + X[:, 1] > limits).astype(np.int64))
    X2, y2 = sea(20000, drift_at=drift_at, noise=0.0, seed=5)
    X3, y3 = sea(20000, drift_at=drift_at, noise=0.25, seed=5)
    assert np.array_equal(X2, X3) and np.array_equal(X2[:1000], X)
    assert abs((y2 != y3).mean() - 0.25) < 0.015


def test_sea_same_seed_same_stream_and_drift_beyond_n_never_happens():
    a = sea(500, seed=9)
    b = sea(500, seed=9)
    c = sea(500, seed=10)
    assert all(np.array_equal(u, v) for u, v in zip(a, b))
    assert not np.array_equal(a[0], c[0])
    # Default drift points (25k, ...) lie beyond 500 instances: one concept (8.0).
    X, y = sea(500, noise=0.0, seed=9)
    assert np.array_equal(y, (X[:, 0] + X[:, 1] > 8.0).astype(np.int64))
    assert sea(0)[0].shape == (0, 3) and sea(0)[1].dtype == np.int64
    Xg, yg = sea(50, seed=np.random.default_rng(4))
    Xs, ys = sea(50, seed=4)
    assert np.array_equal(Xg, Xs) and np.array_equal(yg, ys)


@pytest.mark.parametrize("kwargs, exc, shown", [
    ({"noise": 2}, ValueError, "The 'noise' parameter of sea must be a float in [0, 1]. Got 2."),
    ({"thresholds": (8.0, 9.0)}, ValueError,
     "The 'thresholds' parameter of sea must have len(drift_at) + 1 = 4 values (one per concept). Got 2."),
    ({"drift_at": (10,), "thresholds": (8.0, 9.0, 7.0)}, ValueError, "len(drift_at) + 1 = 2 values"),
    ({"thresholds": 8.0, "drift_at": ()}, TypeError, "'thresholds' parameter of sea must be a sequence"),
    ({"thresholds": (8.0, "9", 7.0, 9.5)}, TypeError, "'thresholds' parameter of sea"),
    ({"drift_at": (50, 20, 70)}, ValueError,
     "The 'drift_at' parameter of sea must be a strictly increasing sequence of ints in [0, inf)"),
    ({"drift_at": (-1, 20, 70)}, ValueError, "'drift_at' parameter of sea"),
    ({"drift_at": (10.0, 20, 70)}, TypeError, "'drift_at' parameter of sea"),
    ({"drift_at": 10}, TypeError, "'drift_at' parameter of sea"),
    ({"seed": -1}, ValueError, "'seed' parameter of sea"),
])
def test_sea_rejects_bad_parameters_by_name(kwargs, exc, shown):
    with pytest.raises(exc) as info:
        sea(100, **kwargs)
    assert shown in str(info.value)


def test_sea_rejects_bad_n():
    with pytest.raises(TypeError, match="'n' parameter of sea"):
        sea(10.0)
    with pytest.raises(ValueError, match="'n' parameter of sea"):
        sea(-1)


from edgelearn.streams import LED_SEGMENTS, led  # noqa: E402


def _decode(X, segments, concept):
    """Digit shown by each row through its concept's segment columns (-1: none)."""
    shown = X[np.arange(len(X))[:, None], segments[concept]].astype(np.int64)
    match = (shown[:, None, :] == LED_SEGMENTS[None, :, :]).all(axis=2)
    return np.where(match.any(axis=1), match.argmax(axis=1), -1)


def test_led_segment_table_is_the_seven_segment_display():
    # Ten distinct patterns; 8 lights all, 1 the two right segments.
    assert len({tuple(r) for r in LED_SEGMENTS.tolist()}) == 10
    assert LED_SEGMENTS[8].sum() == 7 and LED_SEGMENTS[1].tolist() == [0, 0, 1, 0, 0, 1, 0]
    assert LED_SEGMENTS.sum(axis=1).tolist() == [6, 2, 5, 5, 4, 5, 6, 3, 7, 6]


@pytest.mark.parametrize("width", [0, 300])
def test_led_noiseless_rows_decode_to_their_digit_through_the_moved_segments(width):
    drift_at = (2000, 4000, 6000)
    X, y, segments, concept = led(8000, drift_at=drift_at, width=width, noise=0.0,
                                  seed=1, return_segments=True)
    assert X.shape == (8000, 24) and X.dtype == np.float64 and y.dtype == np.int64
    assert set(np.unique(X).tolist()) == {0.0, 1.0}
    assert segments.shape == (4, 7) and segments[0].tolist() == list(range(7))
    assert np.array_equal(_decode(X, segments, concept), y)
    # Each later concept moves all 7 segments (the default) into irrelevant columns.
    for j in range(1, 4):
        assert (segments[j] >= 7).all() and len(set(segments[j].tolist())) == 7
        assert not np.array_equal(segments[j], segments[j - 1])
    # Through the first concept's columns, later rows no longer decode as their digit.
    later = concept > 0
    assert (_decode(X[later], segments, np.zeros(later.sum(), dtype=np.int64)) == y[later]).mean() < 0.2
    # Classes uniform, irrelevant bits fair coins.
    assert np.all(np.abs(np.bincount(y, minlength=10) / 8000 - 0.1) < 0.02)


def test_led_abrupt_concepts_follow_the_drift_points():
    _, _, segments, concept = led(1000, drift_at=(100, 600), seed=2, return_segments=True)
    assert np.array_equal(concept, np.repeat([0, 1, 2], [100, 500, 400]))
    _, _, segments, _ = led(10, drift_at=(100, 600), n_drift_features=2, seed=2,
                            return_segments=True)
    for j in (1, 2):
        moved = segments[j] != np.arange(7)
        assert moved.sum() == 2 and (segments[j][moved] >= 7).all()
    _, _, segments, concept = led(300, drift_at=(100,), n_drift_features=0, seed=2,
                                  return_segments=True)
    assert (segments == np.arange(7)).all()


def test_led_gradual_mixes_concepts_with_moas_sigmoid():
    width, p = 1000, 25_000
    _, _, _, concept = led(50_000, drift_at=(p,), width=width, seed=3, return_segments=True)
    t = np.arange(50_000)
    for lo, hi in [(p - 1500, p - 500), (p - 250, p + 250), (p + 500, p + 1500)]:
        inside = (t >= lo) & (t < hi)
        expected = (1 / (1 + np.exp(-4 * (t[inside] - p) / width))).mean()
        assert abs((concept[inside] == 1).mean() - expected) < 0.03
    # Far from the drift point the concept is pure.
    assert (concept[: p - 5 * width] == 0).all() and (concept[p + 5 * width:] == 1).all()
    # Nested drift points: concept 2 only after both, in order.
    _, _, _, concept = led(30_000, drift_at=(10_000, 20_000), width=1000, seed=4,
                           return_segments=True)
    assert (np.diff(concept[:: 500]) >= 0).all()
    assert concept.min() == 0 and concept.max() == 2


def test_led_noise_flips_segments_only_and_seeds_repeat():
    X0, y0 = led(20000, noise=0.0, seed=5)
    X1, y1 = led(20000, noise=0.2, seed=5)
    assert np.array_equal(y0, y1) and np.array_equal(X0[:, 7:], X1[:, 7:])
    assert abs((X0[:, :7] != X1[:, :7]).mean() - 0.2) < 0.01
    assert abs(X0[:, 7:].mean() - 0.5) < 0.01
    a, b, c = led(500, seed=6), led(500, seed=6), led(500, seed=7)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    assert led(0)[0].shape == (0, 24)


@pytest.mark.parametrize("kwargs, exc, shown", [
    ({"noise": 1.5}, ValueError, "The 'noise' parameter of led must be a float in [0, 1]. Got 1.5."),
    ({"width": -1}, ValueError, "The 'width' parameter of led must be a float in [0, inf]. Got -1."),
    ({"width": float("inf")}, ValueError, "The 'width' parameter of led must be finite. Got inf."),
    ({"n_drift_features": 8}, ValueError, "'n_drift_features' parameter of led must be an int in [0, 7]"),
    ({"n_drift_features": 2.0}, TypeError, "'n_drift_features' parameter of led"),
    ({"drift_at": (5, 5)}, ValueError, "'drift_at' parameter of led"),
    ({"return_segments": 1}, TypeError, "The 'return_segments' parameter of led must be a bool. Got 1."),
])
def test_led_rejects_bad_parameters_by_name(kwargs, exc, shown):
    with pytest.raises(exc) as info:
        led(100, **kwargs)
    assert shown in str(info.value)


from edgelearn.streams import random_rbf  # noqa: E402


def test_random_rbf_instances_lie_around_their_centroid_and_carry_its_class():
    X, y, info = random_rbf(40_000, n_features=5, n_classes=3, n_centroids=8,
                            drift_at=(), seed=1, return_centroids=True)
    assert X.shape == (40_000, 5) and X.dtype == np.float64 and y.dtype == np.int64
    k = info["centroid"]
    assert np.array_equal(y, info["classes"][k])
    assert set(np.unique(y).tolist()) <= {0, 1, 2}
    # Distance to the centroid over its deviation is |N(0, 1)|.
    ratio = np.linalg.norm(X - info["positions"][0][k], axis=1) / info["stddev"][k]
    assert abs(ratio.mean() - math.sqrt(2 / math.pi)) < 0.02 and ratio.max() < 6
    # The tightest centroid: all its instances are close (6 of its deviations), and
    # nearer to it than to any centroid of another class.
    c0 = int(np.argmin(info["stddev"]))
    tight = k == c0
    assert tight.sum() > 100 and info["stddev"][c0] < 0.2
    dist = np.linalg.norm(X[tight][:, None, :] - info["positions"][0][None], axis=2)
    assert (dist[:, c0] < 6 * info["stddev"][c0]).all()
    other = info["classes"] != info["classes"][c0]
    assert (dist[:, c0] < dist[:, other].min(axis=1)).mean() > 0.9
    # Centroids are picked in proportion to their weights.
    share = np.bincount(k, minlength=8) / 40_000
    assert np.allclose(share, info["weights"] / info["weights"].sum(), atol=0.01)
    p = info["positions"]
    assert p.shape == (1, 8, 5) and (p >= 0).all() and (p < 1).all()
    assert ((info["stddev"] >= 0) & (info["stddev"] < 1)).all()


def test_random_rbf_positions_are_redrawn_at_each_drift_point():
    drift_at = (10_000, 20_000)
    X, y, info = random_rbf(30_000, n_features=3, n_centroids=4, drift_at=drift_at,
                            seed=2, return_centroids=True)
    p, k = info["positions"], info["centroid"]
    assert p.shape == (3, 4, 3)
    assert np.array_equal(info["center"], p[np.repeat([0, 1, 2], 10_000), k])
    # From the data alone: per concept and centroid, the instances average to
    # that concept's position, which differs from one concept to the next.
    for j in range(3):
        rows = slice(j * 10_000, (j + 1) * 10_000)
        for c in range(4):
            mine = k[rows] == c
            if mine.sum() < 200:
                continue
            spread = info["stddev"][c] / math.sqrt(mine.sum())
            assert np.all(np.abs(X[rows][mine].mean(axis=0) - p[j, c]) < 6 * spread + 1e-9)
    assert np.all(np.linalg.norm(np.diff(p, axis=0), axis=2) > 0.01)


def test_random_rbf_centroids_move_at_the_speed_and_bounce_in_the_unit_cube():
    speed, n = 0.013, 3000
    _, _, info = random_rbf(n, n_features=4, n_centroids=6, drift_at=(1000,), speed=speed,
                            seed=3, return_centroids=True)
    v = info["velocity"]
    assert np.allclose(np.linalg.norm(v, axis=1), speed)
    # Plain simulation: positions step by v and reflect off 0 and 1; restart at drift.
    expected = np.empty((n, 4))
    pos, vel = info["positions"][0].copy(), v.copy()
    for t in range(n):
        if t == 1000:
            pos, vel = info["positions"][1].copy(), v.copy()
        expected[t] = pos[info["centroid"][t]]
        pos = pos + vel
        over, under = pos > 1, pos < 0
        pos[over] = 2 - pos[over]
        pos[under] = -pos[under]
        vel[over | under] *= -1
    np.testing.assert_allclose(info["center"], expected, atol=1e-9)
    assert (info["center"] >= 0).all() and (info["center"] <= 1).all()


def test_random_rbf_seeds_and_shapes():
    a, b, c = random_rbf(300, seed=4), random_rbf(300, seed=4), random_rbf(300, seed=5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[0], c[0])
    X, y = random_rbf(0)
    assert X.shape == (0, 20) and y.shape == (0,) and y.dtype == np.int64


@pytest.mark.parametrize("kwargs, exc, shown", [
    ({"speed": -0.1}, ValueError, "The 'speed' parameter of random_rbf must be a float in [0, inf]. Got -0.1."),
    ({"speed": float("inf")}, ValueError, "'speed' parameter of random_rbf must be finite"),
    ({"n_features": 0}, ValueError, "'n_features' parameter of random_rbf must be an int in [1, inf)"),
    ({"n_classes": 0}, ValueError, "'n_classes' parameter of random_rbf"),
    ({"n_centroids": 2.5}, TypeError, "'n_centroids' parameter of random_rbf"),
    ({"drift_at": [3, 2]}, ValueError, "'drift_at' parameter of random_rbf"),
    ({"return_centroids": "yes"}, TypeError, "'return_centroids' parameter of random_rbf must be a bool"),
])
def test_random_rbf_rejects_bad_parameters_by_name(kwargs, exc, shown):
    with pytest.raises(exc) as info:
        random_rbf(100, **kwargs)
    assert shown in str(info.value)


from edgelearn.streams import TREE_LEAF_FRACTION, random_tree  # noqa: E402


def _tree_label(tree, x, node=0):
    """Plain recursive evaluation of one row."""
    f = tree["feature"][node]
    if f < 0:
        return int(tree["label"][node])
    child = tree["left"][node] if x[f] < tree["threshold"][node] else tree["right"][node]
    return _tree_label(tree, x, child)


def _leaf_depths(tree, node=0, depth=0):
    if tree["feature"][node] < 0:
        return [depth]
    return (_leaf_depths(tree, tree["left"][node], depth + 1)
            + _leaf_depths(tree, tree["right"][node], depth + 1))


def test_random_tree_labels_equal_a_recursive_evaluation_of_each_concepts_tree():
    drift_at = (1000, 2000, 3000)
    X, y, trees = random_tree(4000, drift_at=drift_at, seed=1, return_trees=True)
    assert X.shape == (4000, 30) and X.dtype == np.float64 and y.dtype == np.int64
    assert ((X >= 0) & (X < 1)).all() and len(trees) == 4
    for j, tree in enumerate(trees):
        rows = range(j * 1000, (j + 1) * 1000)
        assert [_tree_label(tree, X[i]) for i in rows] == y[j * 1000:(j + 1) * 1000].tolist()
    # A new concept is a new tree: the previous tree disagrees with most new labels.
    for j in range(1, 4):
        rows = range(j * 1000, (j + 1) * 1000)
        old = np.array([_tree_label(trees[j - 1], X[i]) for i in rows])
        assert (old != y[j * 1000:(j + 1) * 1000]).mean() > 0.5
    assert set(np.unique(y).tolist()) <= set(range(10)) and len(np.unique(y)) > 3


@pytest.mark.parametrize("max_depth, min_leaf_depth", [(5, 3), (4, 0), (3, 3), (0, 0)])
def test_random_tree_shape_follows_the_depth_limits(max_depth, min_leaf_depth):
    _, _, trees = random_tree(10, n_features=4, n_classes=3, max_depth=max_depth,
                              min_leaf_depth=min_leaf_depth, drift_at=tuple(range(1, 40)),
                              seed=2, return_trees=True)
    depths = []
    for tree in trees:
        leaf = tree["feature"] < 0
        assert np.array_equal(leaf, tree["left"] < 0) and np.array_equal(leaf, tree["right"] < 0)
        assert (tree["label"][leaf] >= 0).all() and (tree["label"][leaf] < 3).all()
        assert (tree["label"][~leaf] == -1).all() and np.isnan(tree["threshold"][leaf]).all()
        d = _leaf_depths(tree)
        assert len(d) == leaf.sum() and min(d) >= min_leaf_depth and max(d) <= max_depth
        depths += d
    if min_leaf_depth < max_depth:
        # Below max_depth a node becomes a leaf with probability 0.15, so most leaves
        # sit at max_depth but some stop earlier.
        assert min(depths) < max_depth
    # Every split keeps both sides non-empty: its threshold lies inside the range
    # its ancestors leave to its feature.
    for tree in trees:
        def check(node, lo, hi):
            f = tree["feature"][node]
            if f < 0:
                return
            t = tree["threshold"][node]
            assert lo[f] <= t <= hi[f]
            check(tree["left"][node], lo, {**hi, f: t})
            check(tree["right"][node], {**lo, f: t}, hi)
        check(0, dict.fromkeys(range(4), 0.0), dict.fromkeys(range(4), 1.0))


def test_random_tree_leaf_fraction_and_seeds():
    _, _, trees = random_tree(1, max_depth=12, min_leaf_depth=0, drift_at=tuple(range(1, 30)),
                              seed=3, return_trees=True)
    n_leaves = sum(int((t["feature"] < 0).sum()) for t in trees)
    n_inner = sum(int((t["feature"] >= 0).sum()) for t in trees)
    # Nodes at depth 12 are forced leaves; the others are leaves with probability 0.15.
    forced = sum(sum(1 for d in _leaf_depths(t) if d == 12) for t in trees)
    rate = (n_leaves - forced) / (n_leaves - forced + n_inner)
    assert abs(rate - TREE_LEAF_FRACTION) < 0.03
    a, b, c = random_tree(200, seed=4), random_tree(200, seed=4), random_tree(200, seed=5)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert not np.array_equal(a[1], c[1])
    X, y = random_tree(0)
    assert X.shape == (0, 30) and y.shape == (0,)


@pytest.mark.parametrize("kwargs, exc, shown", [
    ({"max_depth": 2}, ValueError,
     "The 'min_leaf_depth' parameter of random_tree must be an int in [0, 2]. Got 3."),
    ({"max_depth": -1}, ValueError, "'max_depth' parameter of random_tree must be an int in [0, 20]"),
    ({"max_depth": 1200, "min_leaf_depth": 1200}, ValueError,
     "'max_depth' parameter of random_tree must be an int in [0, 20]. Got 1200."),
    ({"n_classes": 0}, ValueError, "'n_classes' parameter of random_tree"),
    ({"n_features": 3.0}, TypeError, "'n_features' parameter of random_tree"),
    ({"drift_at": "abc"}, TypeError, "'drift_at' parameter of random_tree"),
    ({"return_trees": None}, TypeError, "'return_trees' parameter of random_tree must be a bool"),
])
def test_random_tree_rejects_bad_parameters_by_name(kwargs, exc, shown):
    with pytest.raises(exc) as info:
        random_tree(100, **kwargs)
    assert shown in str(info.value)


def test_evolve_features_n_new_must_agree_with_mixing():
    from edgelearn.streams import evolve_features

    X = np.ones((4, 2))
    with pytest.raises(ValueError, match="'n_new' parameter of evolve_features must be None or 3"):
        evolve_features(X, t1=2, overlap=1, n_new=0, mixing=np.ones((2, 3)))
    with pytest.raises(ValueError, match="at least one column"):
        evolve_features(X, t1=2, overlap=1, mixing=np.ones((2, 0)))
    Z, _ = evolve_features(X, t1=2, overlap=1, n_new=3, mixing=np.ones((2, 3)))
    assert Z.shape == (4, 5)
