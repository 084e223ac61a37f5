"""edgelearn.PA(standardize=False) against River's PAClassifier, prediction
for prediction and weight for weight."""

import random

import pytest

import river.linear_model as river_lm  # a dev dependency: missing it must fail, not skip

import edgelearn


def sparse_stream(n, seed):
    rng = random.Random(seed)
    names = [f"f{j}" for j in range(10)]
    w = {name: rng.gauss(0, 1) for name in names}
    for _ in range(n):
        full = {name: rng.gauss(0, 3) + j for j, name in enumerate(names)}
        y = sum(w[k] * v for k, v in full.items()) + rng.gauss(0, 2) > 5
        yield {k: v for k, v in full.items() if rng.random() > 0.3}, y


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("learn_intercept", [True, False])
@pytest.mark.parametrize("C", [0.01, 1.0])
def test_pa_reproduces_river(mode, learn_intercept, C):
    ours = edgelearn.PA(C=C, mode=mode, learn_intercept=learn_intercept, standardize=False)
    theirs = river_lm.PAClassifier(C=C, mode=mode, learn_intercept=learn_intercept)
    disagreements = 0
    for i, (x, y) in enumerate(sparse_stream(5000, seed=mode * 10 + int(learn_intercept))):
        disagreements += ours.predict_one(x) != theirs.predict_one(x)
        ours.learn_one(x, y)
        theirs.learn_one(x, y)
        if i % 500 == 0:
            assert ours.weights() == pytest.approx(dict(theirs.weights), rel=1e-9, abs=1e-12)
    assert disagreements == 0
    assert ours.weights() == pytest.approx(dict(theirs.weights), rel=1e-9, abs=1e-12)
    assert float(ours.intercept[0]) == pytest.approx(theirs.intercept, rel=1e-9, abs=1e-12)
