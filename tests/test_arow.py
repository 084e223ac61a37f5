"""ActiveAROW: its kernels against the plain reference in ``tests/naive.py``,
and the learner's own promises (memory, probabilities, budget, multiclass,
checkpoints, the default kind).  The checks every learner shares are in
``tests/test_checks.py``."""

import math
import random

import numpy as np
import pytest

import edgelearn
import naive
from edgelearn import ActiveAROW
from edgelearn import state as checkpoint
from edgelearn.kernels import arow as K
from edgelearn.kernels.rate_control import new_query_state
from edgelearn.kernels.rng import new_state
from edgelearn.learners import arow as arow_learner

RTOL = 1e-12


def random_model(rng, capacity, rows, intercept=True):
    return {
        "W": rng.normal(size=(rows, capacity)),
        "S": rng.uniform(0.01, 1.0, size=(rows, capacity)),
        "b": rng.normal(size=rows),
        "Sb": rng.uniform(0.01, 1.0, size=rows) if intercept else np.zeros(rows),
    }


def instance(rng, capacity, k, unknown=False):
    slots = rng.choice(capacity, size=k, replace=False).astype(np.int32)
    if unknown and k:
        slots[0] = -1
    return slots, rng.normal(size=k) * 2.0


def assert_model(got, expected):
    for key in expected:
        np.testing.assert_allclose(got[key], expected[key], rtol=RTOL, atol=1e-15, err_msg=key)


@pytest.mark.parametrize("seed", range(20))
def test_margin_variance_and_scores_match(seed):
    rng = np.random.default_rng([13, seed])
    rows = 1 + seed % 5
    model = random_model(rng, 12, rows, intercept=seed % 2 == 0)
    slots, z = instance(rng, 12, int(rng.integers(0, 12)), unknown=seed % 4 == 0)
    out_m, out_v = np.full(rows, np.nan), np.full(rows, np.nan)
    K.scores(slots, z, len(slots), model["W"], model["S"], model["b"], model["Sb"], out_m, out_v)
    for row in range(rows):
        m, v = naive.arow_margin_variance(slots, z, model, row)
        assert math.isclose(out_m[row], m, rel_tol=RTOL, abs_tol=1e-15)
        assert math.isclose(out_v[row], v, rel_tol=RTOL, abs_tol=1e-15)
        # scores sums two rows per pass, each in margin_variance's order: the same bits
        # (learn_row sums a row alone; the multiclass row loop learns from scores' sums)
        alone = K.margin_variance(slots, z, len(slots), model["W"], model["S"], model["b"], model["Sb"], row)
        assert np.array([out_m[row], out_v[row]]).tobytes() == np.array(alone).tobytes(), row


@pytest.mark.parametrize("seed", range(30))
def test_learn_row_matches(seed):
    rng = np.random.default_rng([14, seed])
    model = random_model(rng, 10, 1, intercept=seed % 3 != 0)
    model["W"] *= 0.2  # margins on both sides of 1, so some instances are passive
    slots, z = instance(rng, 10, int(rng.integers(0, 7)))
    y = 1.0 if seed % 2 else -1.0
    r = float(rng.choice([0.1, 1.0, 30.0]))
    floor = [0.0, 0.05, 0.5][seed % 3]
    expected, moved = naive.arow_learn_row(slots, z, y, model, 0, r, floor)
    got = {k: v.copy() for k, v in model.items()}
    assert K.learn_row(slots, z, len(slots), y, got["W"], got["S"], got["b"], got["Sb"], 0, r, floor) == moved
    assert_model(got, expected)
    # Variances only shrink, stay positive, and a moved one stays at the floor or above.
    assert np.all(got["S"] > 0) and np.all(got["S"] <= np.maximum(model["S"], floor))
    if moved:
        assert np.all(got["S"][0, slots] >= floor) and (got["Sb"][0] == 0 or got["Sb"][0] >= floor)


def test_learn_row_is_passive_beyond_margin_one_and_keeps_absent_channels():
    W = np.zeros((1, 4))
    S = np.ones((1, 4))
    b = np.zeros(1)
    Sb = np.ones(1)
    slots = np.array([0, 2], dtype=np.int32)
    z = np.array([1.0, -2.0])
    assert K.learn_row(slots, z, 2, 1.0, W, S, b, Sb, 0, 1.0, 0.0)
    # absent channels 1 and 3 keep their mean and variance
    assert W[0, 1] == W[0, 3] == 0.0 and S[0, 1] == S[0, 3] == 1.0
    # a new channel (variance 1) moved further than it would with a small variance
    assert abs(W[0, 2]) > abs(W[0, 0]) > 0
    W[0, :] = [5.0, 0.0, -5.0, 0.0]
    before = (W.copy(), S.copy(), b.copy(), Sb.copy())
    assert not K.learn_row(slots, z, 2, 1.0, W, S, b, Sb, 0, 1.0, 0.0)
    for got, old in zip((W, S, b, Sb), before):
        np.testing.assert_array_equal(got, old)


@pytest.mark.parametrize("seed", range(20))
def test_learn_multiclass_matches(seed):
    rng = np.random.default_rng([15, seed])
    rows = 4
    model = random_model(rng, 9, rows)
    model["W"] *= 0.3
    slots, z = instance(rng, 9, int(rng.integers(1, 7)))
    n_known = int(rng.integers(1, rows + 1))
    c = int(rng.integers(0, n_known))
    floor = 0.1 * (seed % 2)
    expected, moved = naive.arow_learn_multiclass(slots, z, c, n_known, model, 2.0, floor)
    got = {k: v.copy() for k, v in model.items()}
    assert K.learn_multiclass(slots, z, len(slots), c, n_known, got["W"], got["S"], got["b"], got["Sb"], 2.0,
                              floor) == moved
    assert_model(got, expected)
    # rows of classes not yet seen are left alone
    np.testing.assert_array_equal(got["W"][n_known:], model["W"][n_known:])


@pytest.mark.parametrize("seed", range(10))
def test_a_new_class_starts_from_the_known_rows_mean(seed):
    rng = np.random.default_rng([17, seed])
    rows = 4
    model = random_model(rng, 9, rows)
    c = int(rng.integers(1, rows))
    model["W"][c:] = 0.0
    model["b"][c:] = 0.0
    slots, z = instance(rng, 9, int(rng.integers(1, 7)))
    expected, _ = naive.arow_learn_multiclass(slots, z, c, c + 1, {k: v.copy() for k, v in model.items()}, 2.0)
    got = {k: v.copy() for k, v in model.items()}
    K.learn_multiclass(slots, z, len(slots), c, c + 1, got["W"], got["S"], got["b"], got["Sb"], 2.0, 0.0)
    assert_model(got, expected)
    # the row started from the mean, not from 0: where the instance has no channel,
    # its weights are the known rows' mean exactly
    absent = np.setdiff1d(np.arange(9), slots)
    np.testing.assert_allclose(got["W"][c, absent], model["W"][:c, absent].mean(axis=0), rtol=1e-12)
    # a row already learned is not restarted
    again = {k: v.copy() for k, v in got.items()}
    K.learn_multiclass(slots, z, len(slots), c, c + 1, again["W"], again["S"], again["b"], again["Sb"], 2.0, 0.0)
    expected_again, _ = naive.arow_learn_multiclass(slots, z, c, c + 1, {k: v.copy() for k, v in got.items()}, 2.0)
    assert_model(again, expected_again)


@pytest.mark.parametrize("seed", range(20))
def test_learn_multiclass_scored_is_learn_multiclass_to_the_bit(seed):
    # the multiclass row loop learns from the margins it scored; the dict path sums
    # each row again: the same model either way, a new class's first label included
    rng = np.random.default_rng([29, seed])
    rows = 4
    model = random_model(rng, 9, rows)
    model["W"] *= 0.05  # margins near 0: every row's loss is positive, every row moves
    model["b"] *= 0.05
    n_known = int(rng.integers(1, rows + 1))
    c = int(rng.integers(0, n_known))
    if seed % 3 == 0 and n_known > 1:  # the newest class, never learned: its row starts
        c = n_known - 1
        model["W"][c:] = 0.0
        model["b"][c:] = 0.0
    floor = 0.1 * (seed % 2)
    slots, z = instance(rng, 9, int(rng.integers(1, 7)))
    plain = {k: v.copy() for k, v in model.items()}
    moved = K.learn_multiclass(slots, z, len(slots), c, n_known, plain["W"], plain["S"], plain["b"],
                               plain["Sb"], 2.0, floor)
    scored = {k: v.copy() for k, v in model.items()}
    row_m, row_v = np.full(rows, np.nan), np.full(rows, np.nan)
    K.scores(slots, z, len(slots), scored["W"], scored["S"], scored["b"], scored["Sb"], row_m, row_v)
    assert K.learn_multiclass_scored(slots, z, len(slots), c, n_known, scored["W"], scored["S"], scored["b"],
                                     scored["Sb"], 2.0, floor, row_m, row_v) == moved
    for key in model:
        assert scored[key].tobytes() == plain[key].tobytes(), key
    assert moved and not np.array_equal(plain["W"], model["W"])


@pytest.mark.parametrize("seed", range(20))
def test_class_means_match(seed):
    rng = np.random.default_rng([18, seed])
    rows, capacity = 4, 9
    sums = rng.normal(size=(rows, capacity))
    counts = rng.integers(0, 4, size=rows).astype(np.float64)
    # features as expand gives them: channel slots (one unknown: -1), then bin slots >= capacity
    slots, z = instance(rng, capacity, int(rng.integers(0, 7)), unknown=seed % 3 == 0)
    slots = np.r_[slots, capacity + rng.integers(0, 20, size=3)].astype(np.int32)
    z = np.r_[z, rng.normal(size=3)]
    n_known = int(rng.integers(1, rows + 1))
    weight = [0.0, 0.3, 2.0][seed % 3]
    m = rng.normal(size=rows)
    got = m.copy()
    K.add_class_means(slots, z, len(slots), capacity, sums, counts, n_known, weight, got)
    expected = naive.arow_add_class_means(slots, z, capacity, sums, counts, n_known, weight, m)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=1e-15)
    if weight and any(0 <= s < capacity for s in slots) and counts[:n_known].any():
        assert not np.array_equal(got, m)  # the class means moved a known row
    c = int(rng.integers(0, n_known))
    got_sums, got_counts = sums.copy(), counts.copy()
    K.count_class_mean(slots, z, len(slots), capacity, c, got_sums, got_counts)
    expected_sums, expected_counts = naive.arow_count_class_mean(slots, z, capacity, c, sums, counts)
    np.testing.assert_allclose(got_sums, expected_sums, rtol=RTOL, atol=1e-15)
    np.testing.assert_array_equal(got_counts, expected_counts)


def test_class_means_are_the_tuned_variant_and_off_is_the_former_learner():
    """The learner's class means (``class_mean_weight``) predict as the variant that
    measured them (``tools/label_budget_variants.py``'s ``ncm`` with ``ncm_k = 0``),
    and ``class_mean_weight=0`` is one-vs-rest AROW alone."""
    from results_pages import load_tool

    from edgelearn.evaluate import prequential

    tool = load_tool("label_budget_variants")
    rng = random.Random(4)
    stream = []
    for _ in range(1500):
        a, b, c = rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 1)
        x = {"a": a, "b": b, "c": c} if rng.random() > 0.3 else {"b": b, "c": c}
        stream.append((x, int(a > 0) + int(b > 0.5) + (1 if c > 1 else 0)))
    # measured without refits and before the multiclass terms (tests/test_arow_multiclass_terms.py)
    params = dict(target_query_rate=0.1, seed=5, n_classes=4, capacity=8, refit_until=0, novelty=0.0,
                  logit_adjustment=0.0)
    wired = prequential(ActiveAROW(class_mean_weight=0.3, **params), stream)
    measured = prequential(tool.Variant({"class_mean_weight": 0.0, "ncm": 0.3, "ncm_k": 0.0}, **params), stream)
    off = prequential(ActiveAROW(class_mean_weight=0.0, **params), stream)
    assert np.array_equal(wired.predictions, measured.predictions)
    assert np.array_equal(wired.asked, measured.asked)
    assert np.array_equal(wired.asked, off.asked)  # the query reads AROW's margin alone
    assert not np.array_equal(wired.predictions, off.predictions)


def test_a_state_saved_before_class_means_predicts_as_it_did():
    model = ActiveAROW(n_classes=3, target_query_rate=0.5, seed=2, capacity=4)
    rng = random.Random(6)
    for _ in range(200):
        x = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1)}
        d = model.decide_one(x)
        if d.ask:
            model.learn(d.slots, d.z, int(x["a"] > 0) + int(x["b"] > 0))
    old = model.to_state()
    del old["params"]["class_mean_weight"]
    del old["learned"]["class_sums"], old["learned"]["class_counts"]
    for name in ("novelty", "logit_adjustment", "refit_passes"):  # nor the terms after the class means
        del old["params"][name]
    del old["learned"]["novelty_stats"]
    loaded = ActiveAROW.from_state(old)
    assert loaded.class_mean_weight == 0.0
    off = ActiveAROW.from_state({**model.to_state(), "params": {**model.to_state()["params"], "class_mean_weight": 0.0,
                                                                "novelty": 0.0, "logit_adjustment": 0.0}})
    for _ in range(50):
        x = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1)}
        assert loaded.predict_one(x) == off.predict_one(x)


@pytest.mark.parametrize("seed", range(30))
def test_confidence_matches(seed):
    rng = np.random.default_rng([16, seed])
    rows = 1 if seed % 3 == 0 else 4
    m = rng.normal(size=rows)
    v = rng.uniform(0.0, 2.0, size=rows) * (seed % 5 != 0)
    n_known = 1 if rows == 1 else int(rng.integers(0, rows + 1))
    got = K.confidence(m, v, n_known, rows == 1)
    expected = naive.arow_confidence(m, v, n_known, rows == 1)
    assert got[0] == pytest.approx(expected[0], rel=RTOL)
    assert got[1] == pytest.approx(expected[1], rel=RTOL) or got[1] == expected[1] == math.inf


def test_draw_query_and_threshold_match():
    state = new_state(7)
    rng = 7
    threshold = 1.0
    asks = 0
    for i in range(3000):
        u = [0.0, 0.3, 1.0, 2.5, math.inf][i % 5]
        power = [1.0, 5.0][i % 2]
        got = K.draw_query(u, threshold, power, state)
        rng, expected = naive.arow_draw_query(u, threshold, power, rng)
        assert got == expected
        assert int(state[0]) == rng
        asks += got
        new = K.adapt_threshold(threshold, got, 0.2, 0.5)
        assert new == pytest.approx(naive.arow_adapt_threshold(threshold, got, 0.2, 0.5), rel=RTOL)
        threshold = new
    assert K.adapt_threshold(1e-6, True, 0.2, 0.5) == 1e-6
    assert K.adapt_threshold(1e6, False, 0.2, 0.5) == 1e6
    # u = 0 always asks, u = inf never
    assert K.draw_query(0.0, 1e-6, 5.0, new_state(1)) and not K.draw_query(math.inf, 1e6, 1.0, new_state(1))


def test_forget_slot_restores_the_prior():
    W = np.ones((3, 5))
    S = np.full((3, 5), 0.1)
    K.forget_slot(2, W, S, 1.0)
    assert np.all(W[:, 2] == 0) and np.all(S[:, 2] == 1.0)
    assert np.all(W[:, [0, 1, 3, 4]] == 1) and np.all(S[:, [0, 1, 3, 4]] == 0.1)


@pytest.mark.parametrize("seed", range(20))
def test_bins_count_and_expand_match(seed):
    rng = np.random.default_rng([17, seed])
    capacity, n_bins = 9, [2, 3, 8][seed % 3]
    edges = arow_learner.bin_edges(n_bins)
    freq = rng.dirichlet(np.ones(n_bins), size=capacity)
    count = rng.integers(0, 50, size=capacity)
    forget = [0.0, 0.01, 0.5][seed % 3]
    slots, z = instance(rng, capacity, int(rng.integers(0, 7)), unknown=seed % 4 == 0)
    z[: len(z) // 2] = edges[rng.integers(0, len(edges), size=len(z) // 2)]  # values on an edge
    expected = naive.arow_count_bins(slots, z, edges, freq, count, forget)
    got = freq.copy()
    K.count_bins(slots, z, len(slots), edges, got, count, forget)
    np.testing.assert_allclose(got, expected, rtol=RTOL, atol=1e-15)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-12)  # still frequencies
    for v in z:
        assert K.bin_of(v, edges) == naive.arow_bin_of(v, edges)
    out_slots = np.zeros(capacity * (1 + n_bins), dtype=np.int32)
    out_z = np.zeros(capacity * (1 + n_bins))
    n = K.expand(slots, z, len(slots), edges, got, capacity, out_slots, out_z)
    expected_slots, expected_z = naive.arow_expand(slots, z, edges, got, capacity)
    assert n == len(expected_slots) == len(slots) * (1 + n_bins)
    np.testing.assert_array_equal(out_slots[:n], expected_slots)
    np.testing.assert_allclose(out_z[:n], expected_z, rtol=RTOL, atol=1e-15)


def binned_instance(entropy, seed: int):
    """A reading and a binned model's frequencies for the fused kernels' tests: the
    number of bins, the forgetting rate, unknown channels and values on a bin edge
    varied by ``seed``."""
    rng = np.random.default_rng(entropy)
    capacity, n_bins = 9, [0, 1, 2, 3, 8][seed % 5]
    edges = arow_learner.bin_edges(n_bins)
    freq = rng.dirichlet(np.ones(max(n_bins, 1)), size=capacity)[:, :n_bins]
    count = rng.integers(0, 50, size=capacity)
    forget = [0.0, 0.01, 0.5][seed % 3]
    slots, z = instance(rng, capacity, int(rng.integers(0, 8)), unknown=seed % 4 == 0)
    if len(edges):
        z[: len(z) // 2] = edges[rng.integers(0, len(edges), size=len(z) // 2)]  # values on an edge
    return rng, capacity, n_bins, edges, freq, count, forget, slots, z


@pytest.mark.parametrize("seed", range(20))
def test_count_expand_is_count_bins_then_expand_to_the_bit(seed):
    # the one-pass kernel of the binary step and the multiclass row loop against the
    # two kernels the dict path calls (themselves tested against naive above)
    rng, capacity, n_bins, edges, freq, count, forget, slots, z = binned_instance([23, seed], seed)
    width = capacity * (1 + n_bins)
    two_freq, one_freq = freq.copy(), freq.copy()
    two_slots, one_slots = np.full(width, 7, dtype=np.int32), np.full(width, 7, dtype=np.int32)
    two_z, one_z = np.full(width, 7.0), np.full(width, 7.0)
    K.count_bins(slots, z, len(slots), edges, two_freq, count, forget)
    n_two = K.expand(slots, z, len(slots), edges, two_freq, capacity, two_slots, two_z)
    n_one = K.count_expand(slots, z, len(slots), edges, one_freq, count, forget, capacity, one_slots, one_z)
    assert n_one == n_two == len(slots) * (1 + n_bins)
    assert one_freq.tobytes() == two_freq.tobytes()
    np.testing.assert_array_equal(one_slots, two_slots)
    assert one_z.tobytes() == two_z.tobytes()
    if len(slots) and n_bins > 1 and slots[-1] >= 0:
        assert not np.array_equal(one_freq, freq)  # the frequencies did move


@pytest.mark.parametrize("seed", range(20))
def test_count_expand_score_is_count_expand_then_margin_variance_to_the_bit(seed):
    # the binary step's one pass (features, bin frequencies, margin and variance)
    # against the two kernels it fuses, and the margin against the plain reference
    rng, capacity, n_bins, edges, freq, count, forget, slots, z = binned_instance([29, seed], seed)
    width = capacity * (1 + n_bins)
    model = random_model(rng, width, 1, intercept=seed % 2 == 0)
    two_freq, one_freq = freq.copy(), freq.copy()
    two_slots, one_slots = np.full(width, 7, dtype=np.int32), np.full(width, 7, dtype=np.int32)
    two_z, one_z = np.full(width, 7.0), np.full(width, 7.0)
    n_two = K.count_expand(slots, z, len(slots), edges, two_freq, count, forget, capacity, two_slots, two_z)
    m_two, v_two = K.margin_variance(two_slots, two_z, n_two, model["W"], model["S"], model["b"], model["Sb"], 0)
    n_one, m_one, v_one = K.count_expand_score(slots, z, len(slots), edges, one_freq, count, forget, capacity,
                                               model["W"], model["S"], model["b"], model["Sb"], one_slots, one_z)
    assert n_one == n_two
    assert one_freq.tobytes() == two_freq.tobytes()
    np.testing.assert_array_equal(one_slots, two_slots)
    assert one_z.tobytes() == two_z.tobytes()
    assert np.array([m_one, v_one]).tobytes() == np.array([m_two, v_two]).tobytes()
    m_r, v_r = naive.arow_margin_variance(list(one_slots[:n_one]), list(one_z[:n_one]), model, 0)
    assert math.isclose(m_one, m_r, rel_tol=RTOL, abs_tol=1e-12)
    assert math.isclose(v_one, v_r, rel_tol=RTOL, abs_tol=1e-12)


# (n_bins, forget, intercept, floor, target, r): target 0 keeps the threshold fixed
DECIDE_LEARN_CASES = [
    (8, 0.0, True, 0.3, 0.2, 80.0),
    (3, 0.05, False, 0.0, 0.5, 1.0),
    (0, 0.0, True, 0.1, 0.0, 10.0),
    (1, 0.01, True, 0.0, 0.1, 50.0),
]


@pytest.mark.parametrize("only_if_asked", [False, True])
@pytest.mark.parametrize("case", DECIDE_LEARN_CASES)
def test_decide_learn_binary_equals_the_references_in_turn(case, only_if_asked):
    """The gateway's one-call kernel (observe, count bins, expand, score, ask, adapt,
    learn) against the plain references of each step, on a stream where channels
    appear, drop out and come back and labels come and go."""
    n_bins, forget, intercept, floor, target, r = case
    rng = np.random.default_rng([DECIDE_LEARN_CASES.index(case), 18])
    capacity, d, steps = 12, 9, 300
    eps, z_max, power, gain = 1e-8, 4.0, 5.0, 0.5
    edges = arow_learner.bin_edges(n_bins)
    features = capacity * (1 + n_bins)
    offsets, scales = rng.normal(0, 20, size=d), rng.uniform(0.1, 30, size=d)
    truth = rng.normal(size=d)
    appears = np.sort(rng.integers(0, steps // 3, size=d))
    stats_k = {"count": np.zeros(capacity, np.int64), "mean": np.zeros(capacity),
               "var": np.zeros(capacity), "last_seen": np.full(capacity, -1, np.int64)}
    stats_r = {key: value.copy() for key, value in stats_k.items()}
    model_k = {"W": np.zeros((1, features)), "S": np.ones((1, features)), "b": np.zeros(1),
               "Sb": np.full(1, 1.0 if intercept else 0.0)}
    model_r = {key: value.copy() for key, value in model_k.items()}
    freq_k, freq_r = np.zeros((capacity, n_bins)), np.zeros((capacity, n_bins))
    feature_slots, feature_z = np.zeros(features, np.int32), np.zeros(features)
    out_m, out_v = np.zeros(1), np.zeros(1)
    rng_k, rng_r, budget_r = new_query_state(7), 7, (0, 0)
    threshold_k = threshold_r = 1.0
    n_learned = n_asked = 0
    for t in range(steps):
        raw = rng.normal(size=d)
        present = (appears <= t) & (rng.random(d) > rng.uniform(0, 0.5))
        slots = rng.permutation(np.flatnonzero(present)).astype(np.int32)
        values = offsets[slots] + scales[slots] * raw[slots]
        y = 0.0 if rng.random() < 0.3 else (1.0 if truth @ raw > 0 else -1.0)  # 0: no label

        z_k = values.copy()
        margin, asked, threshold_k, learned = K.decide_learn_binary(
            slots, z_k, len(slots), t, threshold_k, y, only_if_asked,
            stats_k["count"], stats_k["mean"], stats_k["var"], stats_k["last_seen"], forget, eps,
            z_max, edges, freq_k, capacity, feature_slots, feature_z, model_k["W"],
            model_k["S"], model_k["b"], model_k["Sb"], out_m, out_v, r, floor, power, rng_k,
            target > 0.0, target, gain,
        )
        z_r, stats_r = naive.observe(slots, values, stats_r, t, forget, eps, z_max)
        freq_r = naive.arow_count_bins(slots, z_r, edges, freq_r, stats_r["count"], forget)
        f_slots, f_z = naive.arow_expand(slots, z_r, edges, freq_r, capacity)
        m_r, v_r = naive.arow_margin_variance(f_slots, f_z, model_r, 0)
        margin_r, u_r = naive.arow_confidence([m_r], [v_r], 1, True)
        rng_r, wanted_r = naive.arow_draw_query(u_r, threshold_r, power, rng_r)
        ask_r, threshold_r, budget_r = naive.budgeted_query(
            wanted_r, threshold_r, budget_r, target, gain, naive.arow_adapt_threshold)
        learned_r = y != 0.0 and (ask_r or not only_if_asked)
        if learned_r:
            model_r, _ = naive.arow_learn_row(f_slots, f_z, y, model_r, 0, r, floor)
        assert (bool(asked), bool(learned)) == (ask_r, learned_r), f"step {t}"
        assert margin == pytest.approx(margin_r, rel=1e-9, abs=1e-12)
        assert (out_m[0], out_v[0]) == pytest.approx((m_r, v_r), rel=1e-9, abs=1e-12)
        assert threshold_k == pytest.approx(threshold_r, rel=1e-9)
        n_learned += learned_r
        n_asked += ask_r
        np.testing.assert_allclose(z_k, z_r, rtol=1e-9, atol=1e-12, err_msg=f"z at step {t}")
        np.testing.assert_allclose(freq_k, freq_r, rtol=1e-9, atol=1e-12, err_msg=f"bins at step {t}")
        for key in stats_k:
            np.testing.assert_allclose(stats_k[key], stats_r[key], rtol=1e-9, atol=1e-12,
                                       err_msg=f"stats.{key} at step {t}")
        for key in model_k:
            np.testing.assert_allclose(model_k[key], model_r[key], rtol=1e-9, atol=1e-12,
                                       err_msg=f"model.{key} at step {t}")
    # the stream exercised what it is meant to: some asks, some lessons, a moved model
    assert 0 < n_asked < steps and 0 < n_learned < steps
    assert np.any(model_k["W"] != 0.0) and np.any(model_k["S"] < 1.0)
    assert (model_k["b"][0] != 0.0) == intercept

def test_bin_edges_cut_the_normal_evenly_and_a_constant_channel_codes_zero():
    assert arow_learner.bin_edges(0).shape == (0,)
    edges = arow_learner.bin_edges(4)
    np.testing.assert_allclose(edges, [-0.6744897501960817, 0.0, 0.6744897501960817], rtol=1e-12)
    draws = np.random.default_rng(1).normal(size=20000)
    shares = np.bincount([K.bin_of(v, edges) for v in draws], minlength=4) / len(draws)
    np.testing.assert_allclose(shares, 0.25, atol=0.02)
    # a channel always in one bin: frequency 1 there, so its code is all zeros
    freq = np.zeros((3, 4))
    slots, z = np.array([1], dtype=np.int32), np.array([0.1])
    for n in range(1, 6):
        K.count_bins(slots, z, 1, edges, freq, np.array([0, n, 0]), 0.0)
    out_slots, out_z = np.zeros(15, dtype=np.int32), np.zeros(15)
    assert K.expand(slots, z, 1, edges, freq, 3, out_slots, out_z) == 5
    assert out_z[0] == 0.1 and np.all(out_z[1:5] == 0.0)
    np.testing.assert_array_equal(out_slots[:5], [1, 3 + 4, 3 + 5, 3 + 6, 3 + 7])


def test_forget_bins_restores_the_prior_of_one_channel():
    capacity, n_bins = 4, 3
    W = np.ones((2, capacity * (1 + n_bins)))
    S = np.full_like(W, 0.1)
    freq = np.full((capacity, n_bins), 1 / 3)
    K.forget_bins(1, freq, capacity, W, S, 1.0)
    mine = [capacity + 1 * n_bins + b for b in range(n_bins)]
    assert np.all(W[:, mine] == 0) and np.all(S[:, mine] == 1.0) and np.all(freq[1] == 0)
    others = [j for j in range(W.shape[1]) if j not in mine]
    assert np.all(W[:, others] == 1) and np.all(S[:, others] == 0.1) and np.all(freq[[0, 2, 3]] == 1 / 3)


# -- the learner ------------------------------------------------------------------


def linear_stream(n, seed, n_channels=5, p_missing=0.3):
    rng = random.Random(seed)
    for _ in range(n):
        values = [rng.gauss(0, 1) for _ in range(n_channels)]
        x = {f"c{j}": 5.0 * j + v for j, v in enumerate(values) if rng.random() > p_missing}
        yield x, values[0] - values[1] + 0.5 * values[2] > 0.3


@pytest.mark.parametrize("n_classes,capacity,n_bins", [(2, 16, 8), (2, 256, 8), (5, 64, 8), (2, 64, 0), (3, 16, 2)])
def test_memory_bytes_is_the_documented_bound_and_fixed_but_for_the_refit_buffer(n_classes, capacity, n_bins):
    model = ActiveAROW(n_classes=n_classes, capacity=capacity, n_bins=n_bins)
    rows = 1 if n_classes == 2 else n_classes
    labels = 64 * n_classes
    bins = model.n_bins
    features = capacity * (1 + bins)
    class_means = 0 if n_classes == 2 else 8 * n_classes * (capacity + 1) + 16  # and the novelty statistics
    refit = 8 * 52 * (capacity + 1) + 8 + 12 * capacity  # the default refit: 52 labels kept at a 20% budget
    bound = (16 * rows * (features + 2) + 24 + 8 * capacity * bins + 8 * max(bins - 1, 0) + 12 * features + labels
             + class_means + refit + model.channels.memory_bytes())
    assert model.memory_bytes() == bound
    for i, (x, y) in enumerate(linear_stream(3000, 1)):
        x[f"extra-{i % 500}"] = 1.0
        d = model.decide_one(x)
        if d.ask:
            model.learn(d.slots, d.z, y if n_classes == 2 else i % n_classes)
    assert model.memory_bytes() == bound - (refit - 8)  # the refits are over: only their count stays


def test_learns_and_holds_the_label_budget():
    model = ActiveAROW(target_query_rate=0.2, seed=3)
    correct = asked = 0
    data = list(linear_stream(6000, 2))
    for x, y in data:
        d = model.decide_one(x)
        correct += d.label == y
        if d.ask:
            asked += 1
            model.learn(d.slots, d.z, y)
    assert 0.18 < asked / len(data) < 0.22
    assert correct / len(data) > 0.8
    # without a target the threshold stays where it started
    fixed = ActiveAROW(target_query_rate=None, threshold=0.5)
    for x, y in data[:200]:
        fixed.decide_one(x)
    assert fixed.current_threshold == 0.5


def test_zero_margin_predicts_false_and_probabilities():
    model = ActiveAROW()
    assert model.predict_one({"a": 1.0}) is False
    assert model.predict_proba_one({"a": 1.0}) == {True: 0.5, False: 0.5}
    for x, y in linear_stream(2000, 4):
        model.learn_one(x, y)
    for x, _ in linear_stream(200, 5):
        proba = model.predict_proba_one(x)
        assert set(proba) == {True, False}
        assert proba[True] + proba[False] == pytest.approx(1.0)
        # the probability agrees with the prediction, and is probit of the margin
        assert (proba[True] > 0.5) == model.predict_one(x)
        slots, z = model.channels.transform(x, True)
        slots, z = naive.arow_expand(slots, z, arow_learner.bin_edges(model.n_bins), model.bin_freq, model.capacity)
        m, v = naive.arow_margin_variance(slots, z, {"W": model.W, "S": model.S, "b": model.b, "Sb": model.Sb}, 0)
        assert proba[True] == pytest.approx(0.5 * math.erfc(-m / math.sqrt(2 * (1 + v))), rel=1e-12)


def test_multiclass_learns_names_and_probabilities():
    model = ActiveAROW(n_classes=3, target_query_rate=None, threshold=1e6, seed=1)
    assert model.classes == []
    rng = random.Random(6)
    names = ("low", "mid", "high")
    correct = 0
    for i in range(3000):
        v = rng.uniform(-3, 3)
        x = {"v": v, "noise": rng.gauss(0, 1)}
        y = names[0 if v < -1 else (1 if v < 1 else 2)]
        d = model.decide_one(x)
        correct += i >= 2000 and d.label == y
        model.learn(d.slots, d.z, y)
    # one-vs-rest on a single linear feature cannot carve out "mid" well, but
    # it must beat always-"mid" (1/3) by far and name the classes it saw
    assert correct / 1000 > 0.6
    assert set(model.classes) == set(names)
    proba = model.predict_proba_one({"v": 2.5, "noise": 0.0})
    assert set(proba) == set(names) and sum(proba.values()) == pytest.approx(1.0)
    assert max(proba, key=proba.get) == "high"


def test_checkpoint_restore_continues_bit_identically():
    data = list(linear_stream(3000, 7))
    model = ActiveAROW(seed=9)
    for x, y in data[:2000]:
        d = model.decide_one(x)
        if d.ask:
            model.learn(d.slots, d.z, y)
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(model.to_state())))
    assert restored.current_threshold == model.current_threshold
    for x, y in data[2000:]:
        a, b = model.decide_one(x), restored.decide_one(x)
        assert (a.label, a.ask) == (b.label, b.ask) and a.score.hex() == b.score.hex()
        assert model.predict_proba_one(x) == restored.predict_proba_one(x)
        if a.ask:
            model.learn(a.slots, a.z, y)
            restored.learn(b.slots, b.z, y)


def test_a_checkpoint_from_before_bins_loads_as_the_linear_model():
    # Before bins, a state had no 'n_bins' parameter and no 'bin_freq': it was n_bins=0.
    data = list(linear_stream(1500, 8))
    model = ActiveAROW(seed=4, n_bins=0)
    for x, y in data[:1000]:
        d = model.decide_one(x)
        if d.ask:
            model.learn(d.slots, d.z, y)
    old = model.to_state()
    del old["params"]["n_bins"]
    del old["learned"]["bin_freq"]
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(old)))
    assert restored.n_bins == 0 and restored.W.shape == model.W.shape
    for x, y in data[1000:]:
        a, b = model.decide_one(x), restored.decide_one(x)
        assert (a.label, a.ask) == (b.label, b.ask) and a.score.hex() == b.score.hex()
        if a.ask:
            model.learn(a.slots, a.z, y)
            restored.learn(b.slots, b.z, y)


def test_make_learner_kind_and_default():
    assert isinstance(edgelearn.make_learner("active_arow", {"r": 3.0}), ActiveAROW)
    assert edgelearn.DEFAULT_KIND in edgelearn.KINDS
    assert type(edgelearn.make_learner()) is edgelearn.KINDS[edgelearn.DEFAULT_KIND]
    with pytest.raises(ValueError, match="ActiveAROW has no parameter 'C'"):
        edgelearn.make_learner("active_arow", {"C": 1.0})


@pytest.mark.parametrize("param,value,error", [
    ("r", 0, ValueError), ("r", "1", TypeError), ("query_power", -1.0, ValueError),
    ("target_query_rate", 1.5, ValueError), ("variance_floor", 1.0, ValueError), ("variance_floor", -0.1, ValueError), ("threshold", 0.0, ValueError), ("budget_gain", True, TypeError),
    ("learn_intercept", 1, TypeError), ("n_classes", 1, ValueError), ("capacity", 0, ValueError),
    ("evict_after", 0, ValueError), ("seed", -1, ValueError), ("n_bins", -2, ValueError),
    ("n_bins", 2.0, TypeError),
])
def test_bad_parameters_are_named(param, value, error):
    with pytest.raises(error) as info:
        ActiveAROW(**{param: value})
    assert str(info.value).startswith(f"The '{param}' parameter of ActiveAROW must be ")
    assert str(info.value).endswith(f"Got {value!r}.")
