"""Gaussian naive Bayes kernels against their references in ``tests/naive.py``,
against their batch definition, and against River's ``naive_bayes.GaussianNB``."""

import math

import numpy as np
import pytest

import naive
from edgelearn.kernels import naive_bayes as NB

RTOL = 1e-12


def new_model(n_classes, capacity):
    return {
        "class_count": np.zeros(n_classes),
        "count": np.zeros((n_classes, capacity), dtype=np.int64),
        "mean": np.zeros((n_classes, capacity)),
        "var": np.zeros((n_classes, capacity)),
    }


def copy_model(model):
    return {key: value.copy() for key, value in model.items()}


def assert_model(got, expected, rtol=RTOL):
    for key in expected:
        if got[key].dtype.kind in "iu":
            np.testing.assert_array_equal(got[key], expected[key], err_msg=key)
        else:
            np.testing.assert_allclose(got[key], expected[key], rtol=rtol, atol=1e-300, err_msg=key)


def kernel_learn(slots, x, c, model, forget):
    NB.learn_one(slots, x, len(slots), c, forget, model["class_count"], model["count"], model["mean"], model["var"])


def kernel_scores(slots, x, model, var_floor, min_count):
    out = np.empty(len(model["class_count"]))
    used = NB.joint_log_likelihood(
        slots, x, len(slots), model["class_count"], model["count"], model["mean"], model["var"],
        var_floor, min_count, out,
    )
    return out, used


def random_instance(rng, capacity, p_present=0.6, scale=3.0):
    present = np.flatnonzero(rng.random(capacity) < p_present)
    slots = rng.permutation(present).astype(np.int32)
    return slots, rng.normal(size=len(slots)) * scale + slots


@pytest.mark.parametrize("forget", [0.0, 0.01, 0.3])
@pytest.mark.parametrize("n_classes", [2, 4])
def test_learn_and_score_match_the_reference_over_a_stream(forget, n_classes):
    rng = np.random.default_rng([3, n_classes, int(forget * 100)])
    capacity = 7
    got = new_model(n_classes, capacity)
    expected = new_model(n_classes, capacity)
    for t in range(300):
        slots, x = random_instance(rng, capacity)
        # Score first, as a learner does (including while classes are still empty).
        for var_floor, min_count in ((1e-9, 2), (0.5, 3)):
            scores, used = kernel_scores(slots, x, got, var_floor, min_count)
            ref_scores, ref_used = naive.nb_joint_log_likelihood(slots, x, expected, var_floor, min_count)
            assert used == ref_used
            np.testing.assert_array_equal(np.isinf(scores), np.isinf(ref_scores))
            finite = np.isfinite(ref_scores)
            np.testing.assert_allclose(scores[finite], ref_scores[finite], rtol=1e-11)
        c = int(rng.integers(0, n_classes))
        kernel_learn(slots, x, c, got, forget)
        expected = naive.nb_learn(slots, x, c, expected, forget)
        assert_model(got, expected)


def test_welford_equals_the_batch_moments_and_counts():
    rng = np.random.default_rng(5)
    n, capacity, n_classes = 400, 5, 3
    X = rng.normal(size=(n, capacity)) * [1, 2, 3, 4, 5] + [0, 10, -3, 1, 7]
    mask = rng.random((n, capacity)) < 0.7
    y = rng.integers(0, n_classes, size=n)
    model = new_model(n_classes, capacity)
    for i in range(n):
        slots = np.flatnonzero(mask[i]).astype(np.int32)
        kernel_learn(slots, X[i, slots], int(y[i]), model, 0.0)
    np.testing.assert_array_equal(model["class_count"], np.bincount(y, minlength=n_classes))
    for c in range(n_classes):
        for s in range(capacity):
            values = X[(y == c) & mask[:, s], s]
            assert model["count"][c, s] == len(values)
            assert model["mean"][c, s] == pytest.approx(np.mean(values), rel=1e-12)
            assert model["var"][c, s] == pytest.approx(np.var(values), rel=1e-10)


@pytest.mark.parametrize("forget", [0.02, 0.2])
def test_forgetting_gives_the_weighted_moments_of_the_steps(forget):
    rng = np.random.default_rng(6)
    xs = rng.normal(2.0, 3.0, size=150)
    model = new_model(2, 1)
    slot = np.zeros(1, dtype=np.int32)
    for x in xs:
        kernel_learn(slot, np.array([x]), 1, model, forget)
    steps = [naive.channel_step(n, forget) for n in range(1, len(xs) + 1)]
    mean, var = naive.batch_moments(xs, steps)
    assert model["mean"][1, 0] == pytest.approx(mean, rel=1e-9)
    assert model["var"][1, 0] == pytest.approx(var, rel=1e-9)
    # Only class 1 was learned: class 0 keeps nothing, class 1 a count that
    # the decay holds below 1 / forget.
    assert model["class_count"][0] == 0.0
    assert model["class_count"][1] == pytest.approx((1 - (1 - forget) ** len(xs)) / forget, rel=1e-12)


def test_learn_many_equals_learn_one_in_order():
    rng = np.random.default_rng(8)
    capacity, n_classes, m = 6, 3, 50
    slot_rows = np.zeros((m, capacity), dtype=np.int32)
    value_rows = np.full((m, capacity), np.nan)  # padding the kernel must not read
    lengths = np.zeros(m, dtype=np.int64)
    labels = rng.integers(0, n_classes, size=m).astype(np.int64)
    one = new_model(n_classes, capacity)
    for i in range(m):
        slots, x = random_instance(rng, capacity)
        slot_rows[i, : len(slots)] = slots
        value_rows[i, : len(slots)] = x
        lengths[i] = len(slots)
        kernel_learn(slots, x, int(labels[i]), one, 0.05)
    many = new_model(n_classes, capacity)
    NB.learn_many(slot_rows, value_rows, lengths, labels, m, 0.05, many["class_count"], many["count"], many["mean"], many["var"])
    for key in one:
        assert one[key].tobytes() == many[key].tobytes(), key
    NB.clear(many["class_count"], many["count"], many["mean"], many["var"])
    assert_model(many, new_model(n_classes, capacity))


def test_scores_edges():
    model = new_model(3, 4)
    slots = np.array([0, 2], dtype=np.int32)
    # An empty model: every class -inf, no best class.
    scores, used = kernel_scores(slots, np.array([1.0, 2.0]), model, 1e-9, 2)
    assert np.all(scores == -math.inf) and used == 2
    assert NB.top_two(scores) == (-1, -1)

    for x, c in (([0.0, 5.0], 0), ([1.0, 7.0], 0), ([4.0, 5.0], 2), ([6.0, 5.0], 2)):
        kernel_learn(slots, np.array(x), c, model, 0.0)
    # Class 1 never learned: -inf.  Slot 2 is constant (5.0) in class 2: the
    # floor stands in for its zero variance.  A slot -1 is skipped.
    query = np.array([2, 0, -1], dtype=np.int32)
    scores, used = kernel_scores(query, np.array([5.0, 0.5, 99.0]), model, 0.1, 2)
    assert used == 2 and scores[1] == -math.inf
    expected0 = math.log(0.5) + naive.gaussian_log_pdf(5.0, 6.0, 1.0) + naive.gaussian_log_pdf(0.5, 0.5, 0.25)
    expected2 = math.log(0.5) + naive.gaussian_log_pdf(5.0, 5.0, 0.1) + naive.gaussian_log_pdf(0.5, 5.0, 1.0)
    assert scores[0] == pytest.approx(expected0, rel=RTOL)
    assert scores[2] == pytest.approx(expected2, rel=RTOL)
    assert NB.top_two(scores) == (0, 2)

    # A slot that one counted class has seen only once is left out for all.
    kernel_learn(np.array([3], dtype=np.int32), np.array([1.0]), 0, model, 0.0)
    kernel_learn(np.array([3], dtype=np.int32), np.array([2.0]), 0, model, 0.0)
    kernel_learn(np.array([3], dtype=np.int32), np.array([9.0]), 2, model, 0.0)
    scores, used = kernel_scores(np.array([3], dtype=np.int32), np.array([1.5]), model, 0.25, 2)
    assert used == 0
    np.testing.assert_allclose(scores[[0, 2]], np.log([4 / 7, 3 / 7]), rtol=RTOL)


def test_top_two_ties_go_to_the_lower_index():
    assert NB.top_two(np.array([1.0, 3.0, 3.0, -math.inf])) == (1, 2)
    assert NB.top_two(np.array([-math.inf, 2.0, -math.inf])) == (1, -1)
    assert NB.top_two(np.array([0.0, 0.0])) == (0, 1)


def test_forget_slot_matches():
    rng = np.random.default_rng(9)
    model = new_model(3, 5)
    for _ in range(40):
        slots, x = random_instance(rng, 5)
        kernel_learn(slots, x, int(rng.integers(0, 3)), model, 0.0)
    expected = naive.nb_forget_slot(model, 2)
    NB.forget_slot(2, model["count"], model["mean"], model["var"])
    assert_model(model, expected)
    assert model["count"][:, 2].sum() == 0 and model["class_count"].sum() == 40


# -- River ------------------------------------------------------------------------


def test_matches_river_gaussian_nb_on_a_stream_without_missing_values():
    """Same statistics, the same log-likelihoods as River's Gaussians give,
    and the same predictions as River's GaussianNB.

    Conventions: both use the population variance (River's GaussianNB sets
    its Gaussians' ddof to 0).  River adds 1e-9 to each density before its
    log and gives a feature of zero variance (fewer than 2 observations in a
    class) density 0; the kernel leaves a feature with fewer than 2
    observations in some class out for every class, and floors the variance.
    On this stream (every feature present, variances far above the floor)
    the scores equal River's exact log densities (``Gaussian.log_pdf``) once
    every class has 2 instances, and every prediction from then on is
    River's (its 1e-9 decides none of them here).
    """
    from river import naive_bayes  # a dev dependency: missing it must fail, not skip
    rng = np.random.default_rng(10)
    n, d, n_classes = 1500, 4, 3
    centers = rng.normal(size=(n_classes, d)) * 1.5
    y = rng.integers(0, n_classes, size=n)
    X = centers[y] + rng.normal(size=(n, d)) * [1.0, 2.0, 0.5, 3.0]
    river = naive_bayes.GaussianNB()
    model = new_model(n_classes, d)
    slots = np.arange(d, dtype=np.int32)
    seen = np.zeros(n_classes, dtype=int)
    compared = agreed = 0
    for i in range(n):
        x = {j: float(X[i, j]) for j in range(d)}
        scores, used = kernel_scores(slots, X[i], model, 1e-12, 2)
        if seen.min() >= 2:
            assert used == d
            for c in range(n_classes):
                exact = math.log(river.p_class(c)) + sum(river.gaussians[c][j].log_pdf(x[j]) for j in range(d))
                assert scores[c] == pytest.approx(exact, rel=1e-9, abs=1e-9)
            compared += 1
            agreed += NB.top_two(scores)[0] == river.predict_one(x)
        river.learn_one(x, int(y[i]))
        kernel_learn(slots, X[i], int(y[i]), model, 0.0)
        seen[y[i]] += 1
    assert compared > n - 20 and agreed == compared, (agreed, compared)
    for c in range(n_classes):
        for j in range(d):
            gaussian = river.gaussians[c][j]
            assert model["mean"][c, j] == pytest.approx(gaussian.mu, rel=1e-12)
            assert model["var"][c, j] == pytest.approx(gaussian.sigma**2, rel=1e-10)


def test_matches_scikit_learn_gaussian_nb_fitted_on_the_same_rows():
    """Welford over the rows gives scikit-learn's batch fit: the same class
    means, variances (population, var_smoothing 0) and joint log-likelihoods."""
    from sklearn import naive_bayes  # a dev dependency: missing it must fail, not skip
    rng = np.random.default_rng(12)
    n, d, n_classes = 600, 5, 3
    y = rng.integers(0, n_classes, size=n)
    X = rng.normal(size=(n_classes, d))[y] + rng.normal(size=(n, d)) * rng.uniform(0.5, 3.0, size=d)
    model = new_model(n_classes, d)
    slots = np.arange(d, dtype=np.int32)
    for i in range(n):
        kernel_learn(slots, X[i], int(y[i]), model, 0.0)
    sk = naive_bayes.GaussianNB(var_smoothing=0.0).fit(X, y)
    np.testing.assert_allclose(model["mean"], sk.theta_, rtol=1e-12)
    np.testing.assert_allclose(model["var"], sk.var_, rtol=1e-10)
    queries = rng.normal(size=(50, d)) * 2
    expected = sk.predict_joint_log_proba(queries)
    for q, row in zip(queries, expected):
        scores, used = kernel_scores(slots, q, model, 1e-12, 2)
        assert used == d
        np.testing.assert_allclose(scores, row, rtol=1e-10)
