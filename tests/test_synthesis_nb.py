"""SynthesisNB: its learning step against the reference in ``tests/naive.py``,
the synthesis itself, plain naive Bayes (``num=0``) against River, drift
with forgetting, multiclass labels and the decision it reports."""

import random

import numpy as np
import pytest

import edgelearn
import naive
from edgelearn import SynthesisNB
from edgelearn import state as checkpoint
from edgelearn.evaluate import prequential
from edgelearn.kernels import naive_bayes as NB
from edgelearn.kernels import synthesis_nb as K
from edgelearn.kernels.rng import new_state
from edgelearn.streams import hyperplane, iter_array


def empty(n_classes, capacity):
    return {
        "class_count": np.zeros(n_classes),
        "count": np.zeros((n_classes, capacity), dtype=np.int64),
        "mean": np.zeros((n_classes, capacity)),
        "var": np.zeros((n_classes, capacity)),
    }


@pytest.mark.parametrize("num,forget", [(5, 0.0), (3, 0.02), (0, 0.0)])
def test_learning_step_matches_the_reference(num, forget):
    rng = np.random.default_rng([1, num])
    capacity, n_classes = 6, 3
    model, centroids = empty(n_classes, capacity), empty(n_classes, capacity)
    ref_model, ref_centroids, ref_rng = empty(n_classes, capacity), empty(n_classes, capacity), 42
    rng_state = new_state(42)
    scores, synthetic = np.zeros(n_classes), np.zeros(capacity)
    mistakes = 0
    for _ in range(300):
        slots = rng.permutation(np.flatnonzero(rng.random(capacity) < 0.7)).astype(np.int32)
        c = int(rng.integers(0, n_classes))
        x = rng.normal(size=len(slots)) + 2.0 * c * (slots % 2)
        wrong = K.learn(
            slots, x, len(slots), c, -1, num, forget, 0.05, 2,
            model["class_count"], model["count"], model["mean"], model["var"],
            centroids["class_count"], centroids["count"], centroids["mean"], centroids["var"],
            scores, synthetic, rng_state,
        )
        ref_model, ref_centroids, ref_rng, ref_wrong = naive.synthesis_learn(
            slots, x, c, -1, num, forget, 0.05, 2, ref_model, ref_centroids, ref_rng
        )
        assert wrong == ref_wrong
        mistakes += wrong
        assert int(rng_state[0]) == ref_rng
        for key in model:
            np.testing.assert_allclose(model[key], ref_model[key], rtol=1e-11, atol=1e-300, err_msg=key)
            np.testing.assert_allclose(centroids[key], ref_centroids[key], rtol=1e-11, atol=1e-300, err_msg=key)
    assert 30 < mistakes < 270


def test_synthetic_instances_lie_between_the_centroid_and_the_instance():
    centroid_count = np.array([[0, 3, 1]], dtype=np.int64)
    centroid_mean = np.array([[9.0, 10.0, -4.0]])
    slots = np.array([2, 0, 1], dtype=np.int32)
    x = np.array([0.0, 1.0, 2.0])
    out = np.zeros(3)
    K.synthesize(slots, x, 3, 0, 0.25, centroid_count, centroid_mean, out)
    # slot 0 has no centroid value yet: it keeps x.
    np.testing.assert_allclose(out, [0.25 * -4.0, 1.0, 0.25 * 10.0 + 0.75 * 2.0])


def test_synthesis_only_after_a_mistake_and_centroids_are_means_of_real_instances():
    model = SynthesisNB(num=4, standardize=False, seed=3, half_life=None, error_scaled=False)
    rng = np.random.default_rng(4)
    real = {True: [], False: []}
    learned = 0
    for _ in range(200):
        y = bool(rng.random() < 0.5)
        x = {"a": float(rng.normal(2.0 if y else -2.0)), "b": float(rng.normal())}
        wrong = model.predict_one(x) != y
        before = model.class_count.sum()
        model.learn_one(x, y)
        learned += 1 + (4 if wrong and real[y] else 0)
        assert model.class_count.sum() - before == (5 if wrong and real[y] else 1)
        real[y].append([x["a"], x["b"]])
    assert model.class_count.sum() == learned
    for y, row in ((False, 0), (True, 1)):
        np.testing.assert_allclose(model.centroid[row, :2], np.mean(real[y], axis=0), rtol=1e-12)
        assert model.centroid_class_count[row] == len(real[y])


def test_without_synthesis_it_is_river_gaussian_nb():
    """num=0 on raw values: River's GaussianNB, prediction for prediction, once
    both classes have 2 instances (River's 1e-9 and the min-count rule only
    differ before that; see tests/test_naive_bayes.py)."""
    from river import naive_bayes  # a dev dependency: missing it must fail, not skip
    rng = np.random.default_rng(5)
    river = naive_bayes.GaussianNB()
    model = SynthesisNB(num=0, standardize=False, var_floor=1e-12, half_life=None)
    seen = {True: 0, False: 0}
    compared = 0
    for _ in range(2000):
        y = bool(rng.random() < 0.3)
        x = {"t": float(rng.normal(21.0 + y, 1.0)), "co2": float(rng.normal(500 + 150 * y, 80.0)),
             "light": float(rng.normal(50 + 80 * y, 60.0))}
        if min(seen.values()) >= 2:
            assert model.predict_one(x) == river.predict_one(x)
            compared += 1
        model.learn_one(x, y)
        river.learn_one(x, y)
        seen[y] += 1
    assert compared > 1990


def test_forgetting_follows_a_drifting_concept():
    X, y = hyperplane(8000, n_features=5, n_drift_features=2, mag_change=0.1, sigma=0.1, noise=0.0, seed=6)
    plain = prequential(SynthesisNB(num=0, half_life=None), iter_array(X, y), active=False).accuracy
    forgetting = prequential(SynthesisNB(num=0, half_life=300.0), iter_array(X, y), active=False).accuracy
    assert forgetting > plain + 0.05


def test_multiclass_labels_scores_and_missing_channels():
    model = SynthesisNB(n_classes=3, num=2, seed=7)
    rng = random.Random(8)
    centers = {"low": -3.0, "mid": 0.0, "high": 3.0}
    correct = 0
    for i in range(1500):
        label = rng.choice(list(centers))
        x = {"a": rng.gauss(centers[label], 1.0), "b": rng.gauss(-centers[label], 1.0)}
        if rng.random() < 0.3:
            del x["b"]
        d = model.decide_one(x)
        correct += i >= 500 and d.label == label
        assert d.ask and (d.score >= 0.0)
        model.learn(d.slots, d.z, label)
    assert model.classes == ["low", "mid", "high"] or sorted(model.classes) == sorted(centers)
    assert correct / 1000 > 0.9
    with pytest.raises(ValueError, match="n_classes=3"):
        model.learn_one({"a": 1.0}, "extreme")


def test_binary_decision_is_the_log_odds():
    model = SynthesisNB(standardize=False)
    assert model.predict_one({"a": 1.0}) is False  # knows no label: False (learners/base.py)
    assert model.decide_one({"a": 1.0}).score == 0.0
    for v, y in ((0.0, False), (0.2, False), (2.0, True), (2.4, True), (0.1, False)):
        model.learn_one({"a": v}, y)
    d = model.decide_one({"a": 1.9})
    scores = np.zeros(2)
    NB.joint_log_likelihood(d.slots, d.z, len(d.slots), model.class_count, model.count, model.mean,
                            model.var, model.var_floor, 2, scores)
    assert d.label is True and d.score == pytest.approx(scores[1] - scores[0]) and d.score > 0
    with pytest.raises(ValueError, match="binary learner"):
        model.learn_one({"a": 1.0}, "yes")


def test_state_round_trip_mid_stream_with_synthesis_draws():
    X, y = hyperplane(3000, n_features=5, mag_change=0.1, noise=0.2, seed=9)
    stream = list(iter_array(X, y))
    model = SynthesisNB(num=5, half_life=500.0, seed=11)
    for x, label in stream[:2000]:
        model.learn_one(x, label)
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(model.to_state())))
    out = []
    for m in (model, restored):
        run = []
        for x, label in stream[2000:]:
            d = m.decide_one(x)
            run.append((d.label, d.score))
            m.learn(d.slots, d.z, label)
        out.append(run)
    assert out[0] == out[1]
    assert model.rng_state.tobytes() == restored.rng_state.tobytes()


def test_memory_budget_matches_its_formula():
    for n_classes, capacity in ((2, 256), (5, 40)):
        model = SynthesisNB(n_classes=n_classes, capacity=capacity)
        rows = n_classes
        expected = 16 * rows * (3 * capacity + 1) + 8 * (rows + capacity + 2)
        expected += 64 * n_classes  # its labels (two when binary)
        assert model.memory_bytes() == expected + model.channels.memory_bytes()


def test_the_gateway_config_and_pipeline_run_synthesis_nb(tmp_path):
    """kind = "synthesis_nb" in a gateway.toml: the configuration validates and
    the pipeline serves a multiclass stream with noisy labels."""
    from firmware_bridge.service.config import load_config
    from firmware_bridge.wire import encode_data

    path = tmp_path / "gateway.toml"
    path.write_text('[learner]\nkind = "synthesis_nb"\n[learner.params]\ncapacity = 16\n'
                    'n_classes = 3\nhalf_life = 500.0\nseed = 4\n')
    config, errors = load_config(path)
    assert errors == [] and config.learner_kind == "synthesis_nb"
    pipeline = config.make_pipeline()
    rng = random.Random(12)
    for seq in range(1500):
        label = rng.choice(["empty", "one", "many"])
        level = {"empty": 0.0, "one": 1.0, "many": 2.0}[label]
        x = {"co2": rng.gauss(450 + 200 * level, 60), "sound": rng.gauss(30 + 10 * level, 6)}
        noisy = label if rng.random() > 0.1 else rng.choice(["empty", "one", "many"])
        out = pipeline.handle("sensors/room/data", encode_data(float(seq), seq, x, noisy), 0.0)
        assert len(out) == 1
    metrics = pipeline.metrics("room")
    assert metrics.n == 1500 and metrics.accuracy > 0.8
    assert sorted(pipeline.learner("room").classes) == ["empty", "many", "one"]


def test_error_scaled_synthesis_stops_when_labels_are_noise():
    rng = np.random.default_rng(12)
    scaled = SynthesisNB(num=5, half_life=None, seed=4)
    paper = SynthesisNB(num=5, half_life=None, error_scaled=False, seed=4)
    synthetic = {"scaled": 0, "paper": 0}
    for i in range(3000):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        y = bool(rng.random() < 0.5)  # labels the features say nothing about
        for name, model in (("scaled", scaled), ("paper", paper)):
            before = model.class_count.sum()
            model.learn_one(x, y)
            if i >= 2000:  # the running error rate has settled near 1/2
                synthetic[name] += model.class_count.sum() - before - 1
    assert abs(scaled.error_rate[0] - 0.5) < 0.1
    assert synthetic["paper"] > 2000 and synthetic["scaled"] < 0.2 * synthetic["paper"]


def test_a_state_from_before_error_scaled_loads_the_papers_rule():
    model = SynthesisNB(num=5, half_life=None, error_scaled=False, seed=4)
    model.learn_one({"a": 1.0}, True)
    state = model.to_state()
    del state["params"]["error_scaled"]
    del state["learned"]["error_rate"]
    restored = edgelearn.from_state(state)
    assert restored.error_scaled is False and restored.error_rate[0] == 0.0
