"""Prequential evaluation: the dict path and the jitted replay agree exactly,
and the metrics are the ones scikit-learn computes."""

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

import edgelearn
from edgelearn.evaluate import prequential, replay
from edgelearn.streams import drop_features, iter_array


def make_data(n=2500, d=10, seed=0, classes=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 10, size=d) + rng.normal(size=d) * 5
    score = (X - X.mean(0)) / X.std(0) @ rng.normal(size=d)
    if classes is None:
        y = score > np.median(score)
    else:
        y = np.asarray(classes)[np.digitize(score, np.quantile(score, [0.25, 0.5, 0.75])[: len(classes) - 1])]
    return drop_features(X, alpha=0.5, seed=seed), y


CASES = [
    ("PAACDS", lambda: edgelearn.PAACDS(seed=1), None),
    ("PAACDS-budget", lambda: edgelearn.PAACDS(target_query_rate=0.2, seed=2), None),
    ("PAACDS-I-lam-evict", lambda: edgelearn.PAACDS(variant="PAACDS-I", lam=4.0, capacity=6, evict_after=2, seed=3), None),
    ("PAACDS-multiclass", lambda: edgelearn.PAACDS(n_classes=4, target_query_rate=0.3, seed=4), ["a", "b", "c", "d"]),
    ("PAACDS-intercept", lambda: edgelearn.PAACDS(learn_intercept=True, target_query_rate=0.2, seed=5), None),
    # past the information's start-up within ~10 readings per channel, so most rows take
    # the dense step without its division (replay.information_steady)
    ("PAACDS-short-halflife", lambda: edgelearn.PAACDS(h_halflife=5.0, target_query_rate=0.2, seed=8), None),
    (
        "PAACDS-I-intercept-lam-evict",
        lambda: edgelearn.PAACDS(variant="PAACDS-I", learn_intercept=True, lam=4.0, capacity=6, evict_after=2, seed=6),
        None,
    ),
    (
        "PAACDS-multiclass-intercept",
        lambda: edgelearn.PAACDS(n_classes=4, learn_intercept=True, target_query_rate=0.3, seed=7),
        ["a", "b", "c", "d"],
    ),
    ("PA-raw", lambda: edgelearn.PA(standardize=False), None),
    ("PA-II-z-evict", lambda: edgelearn.PA(mode=2, capacity=5, evict_after=3), None),
]


@pytest.mark.parametrize("active", [True, False])
@pytest.mark.parametrize("name,factory,classes", CASES, ids=[c[0] for c in CASES])
def test_replay_equals_dict_path(name, factory, classes, active):
    X, y = make_data(classes=classes)
    by_dict, by_array = factory(), factory()
    r_dict = prequential(by_dict, iter_array(X, y), active=active)
    r_array = replay(by_array, X, y, active=active)

    assert np.array_equal(r_dict.predictions, r_array.predictions)
    assert np.array_equal(r_dict.asked, r_array.asked)
    assert r_dict.accuracy == r_array.accuracy and r_dict.f1 == r_array.f1
    s_dict, s_array = by_dict.to_state(), by_array.to_state()
    for key, value in s_dict["learned"].items():
        other = s_array["learned"][key]
        assert (value.tobytes() == other.tobytes()) if isinstance(value, np.ndarray) else value == other, key
    for key in ("names", "t", "n_assigned", "n_ignored", "n_evicted"):
        assert s_dict["channels"][key] == s_array["channels"][key], key
    for key in ("count", "mean", "var", "last_seen"):
        assert s_dict["channels"][key].tobytes() == s_array["channels"][key].tobytes(), key


def test_replay_continues_a_model_trained_on_dicts():
    X, y = make_data(seed=5)
    a, b = edgelearn.PAACDS(seed=7), edgelearn.PAACDS(seed=7)
    names = [f"s{j}" for j in range(X.shape[1])]
    prequential(a, iter_array(X[:1000], y[:1000], names))
    prequential(b, iter_array(X[:1000], y[:1000], names))
    # Columns in another order than the channels' slots: matched by name.
    order = np.random.default_rng(0).permutation(X.shape[1])
    r1 = prequential(a, iter_array(X[1000:, order], y[1000:], [names[j] for j in order]))
    r2 = replay(b, X[1000:, order], y[1000:], feature_names=[names[j] for j in order])
    assert np.array_equal(r1.predictions, r2.predictions)
    assert a.W.tobytes() == b.W.tobytes()


@pytest.mark.parametrize("classes", [None, ["x", "y", "z"]])
def test_metrics_match_scikit_learn(classes):
    X, y = make_data(n=1500, seed=8, classes=classes)
    model = edgelearn.PAACDS(n_classes=2 if classes is None else 3, target_query_rate=0.3)
    result = replay(model, X, y)
    y_pred = result.predictions
    if classes is not None:  # "no prediction yet" (None) is a label of its own
        y, y_pred = y.astype(str), y_pred.astype(str)
    assert result.accuracy == pytest.approx(accuracy_score(y, y_pred), abs=1e-12)
    if classes is None:
        assert result.f1 == pytest.approx(f1_score(y, y_pred, zero_division=0), abs=1e-12)
    else:
        expected = f1_score(y, y_pred, average="macro", zero_division=0)
        assert result.f1 == pytest.approx(expected, abs=1e-12)
    assert result.query_rate == pytest.approx(result.asked.mean())
    assert result.n == len(y)


def test_active_uses_only_asked_labels():
    """With a tiny budget the model learns from few labels: it must do worse
    than with every label, and ask about as often as told."""
    X, y = make_data(n=4000, seed=9)
    few = replay(edgelearn.PAACDS(target_query_rate=0.02, seed=1), X, y)
    every = replay(edgelearn.PAACDS(seed=1), X, y, active=False)
    assert abs(few.query_rate - 0.02) < 0.01
    assert every.accuracy > few.accuracy


def test_target_query_rate_is_met_on_a_long_stream():
    X, y = make_data(n=20_000, seed=10)
    for target in (0.05, 0.1, 0.2, 0.5):
        result = replay(edgelearn.PAACDS(target_query_rate=target), X, y)
        assert abs(result.query_rate - target) < 0.01, (target, result.query_rate)


def test_replay_rejects_bad_input():
    model = edgelearn.PAACDS()
    with pytest.raises(ValueError, match="2-D"):
        replay(model, np.zeros(3), np.zeros(3))
    with pytest.raises(ValueError, match="one label per row"):
        replay(model, np.zeros((3, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="binary learner"):
        replay(model, np.zeros((3, 2)), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="n_classes=3"):
        replay(edgelearn.PAACDS(n_classes=3), np.zeros((4, 2)), np.array([0, 1, 2, 3]))
    with pytest.raises(ValueError, match="feature_names"):
        replay(model, np.zeros((3, 2)), np.zeros(3), feature_names=["a"])
