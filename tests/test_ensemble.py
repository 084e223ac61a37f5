"""OnlineEnsemble (AC_OE): its kernels against plain NumPy, the decay rule by
hand, and the whole learner against the reference in ``naive``."""

import random

import numpy as np
import pytest

import edgelearn
import naive
from edgelearn.kernels import ensemble as E
from edgelearn.kernels.rng import new_state
from edgelearn.learners.ensemble import _MIN_COUNT

#: The paper's model (AC_OE): no online members (OnlineEnsemble's defaults have them).
NO_ONLINE = dict(forgetting=None, online_C=None, label_lags=0)


def test_weights_follow_the_decay_rule_on_a_hand_checked_sequence():
    weights = np.array([0.5, 0.25, 0.25, 0.0])
    errors = np.zeros(4, dtype=np.int64)
    # y = 1: member 0 is wrong, so 0.5 * 0.8 = 0.4 and the sum is 0.9.
    E.decay_weights(np.array([0, 1, 1, 7]), 1, weights, errors, 3, 0.8)
    np.testing.assert_allclose(weights[:3], [0.4 / 0.9, 0.25 / 0.9, 0.25 / 0.9], rtol=1e-15)
    assert weights[3] == 0.0 and errors.tolist() == [1, 0, 0, 0]
    # y = 0: members 1 and 2 are wrong: 4/9, 0.8 * 2.5/9, 0.8 * 2.5/9, sum 8/9.
    E.decay_weights(np.array([0, 2, 1, 7]), 0, weights, errors, 3, 0.8)
    np.testing.assert_allclose(weights[:3], [0.5, 0.25, 0.25], rtol=1e-14)
    assert errors.tolist() == [1, 1, 1, 0]


def test_weighted_vote_adds_the_global_learner_with_alpha():
    votes = np.zeros(3)
    labels = np.array([0, 2, 2, -1])
    weights = np.array([0.5, 0.3, 0.2, 0.9])
    assert E.weighted_vote(labels, weights, 4, -1, 1.0, 3, votes) == (0, pytest.approx(0.0))
    label, margin = E.weighted_vote(labels, weights, 4, 1, 0.6, 3, votes)
    assert label == 1 and margin == pytest.approx(0.1)
    assert E.weighted_vote(labels[:0], weights, 0, -1, 1.0, 3, votes) == (-1, 0.0)


def test_majority_is_bincount_argmax():
    counts = np.zeros(4)
    rng = np.random.default_rng(0)
    for rows in (1, 5, 30):
        labels = rng.integers(0, 4, 40)
        assert E.majority(labels, rows, 4, counts) == int(np.bincount(labels[:rows], minlength=4).argmax())
    assert E.majority(labels, 0, 4, counts) == -1


def test_worst_member_is_the_one_with_most_errors_then_the_oldest():
    assert E.worst_member(np.array([3, 5, 5, 1]), np.array([0, 4, 2, 1]), 4) == 2
    assert E.worst_member(np.array([3, 5, 5, 9]), np.array([0, 4, 2, 1]), 3) == 2


def _rows(rng, m, d, p_missing=0.3):
    X = rng.normal(size=(m, d))
    present = rng.random((m, d)) > p_missing
    return np.where(present, X, 0.0), present


def test_kernel_ridge_fit_matches_a_from_scratch_solve():
    rng = np.random.default_rng(1)
    X, present = _rows(rng, 40, 6)
    labels = rng.integers(0, 3, 40)
    gram, target, support = np.zeros((50, 50)), np.zeros((50, 3)), np.zeros((50, 6))
    E.kelm_system(X, labels, 40, 6, 3, 0.3, 2.0, support, gram, target)
    coef = np.linalg.solve(gram[:40, :40], target[:40])
    _, _, expected, _ = naive.OnlineEnsembleReference(
        "kelm", 40, 1, 0.9, 1.0, 0, 2.0, 0.3, 3, 0.01, 2, 0).fit(list(zip(X, present, labels)))
    np.testing.assert_allclose(coef, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(support[:40], X)
    scores = np.zeros(3)
    out = np.zeros(1, dtype=np.int64)
    bank_support, bank_coef = support[None].copy(), np.zeros((1, 50, 3))
    bank_coef[0, :40] = coef
    E.kelm_scores(0, X[3], 6, bank_support, bank_coef, np.array([40]), np.array([0.3]), 3, scores)
    np.testing.assert_allclose(scores, naive.kelm_kernel(X[3], X, 0.3)[0] @ coef, rtol=1e-12)
    E.kelm_labels(1, X[3], 6, bank_support, bank_coef, np.array([40]), np.array([0.3]), 3, scores, out)
    assert out[0] == int(np.argmax(scores))


def test_pa_fit_matches_the_reference():
    rng = np.random.default_rng(2)
    X, present = _rows(rng, 60, 5)
    labels = rng.integers(0, 3, 60)
    w = np.zeros((2, 3, 5))
    E.pa_fit(1, X, labels, 60, 5, 3, 0.5, w)
    _, expected = naive.OnlineEnsembleReference(
        "pa", 60, 1, 0.9, 1.0, 0, 0.5, None, 3, 0.01, 2, 0).fit(list(zip(X, present, labels)))
    np.testing.assert_allclose(w[1], expected, rtol=1e-12, atol=1e-14)
    assert not w[0].any()


def test_pa_and_naive_bayes_labels_match_the_reference():
    rng = np.random.default_rng(6)
    X, present = _rows(rng, 40, 5)
    labels = rng.integers(0, 3, 40)
    reference = naive.OnlineEnsembleReference("pa", 40, 1, 0.9, 1.0, 0, 0.5, None, 3, 0.01, 2, 0)
    w = np.zeros((2, 3, 5))
    E.pa_fit(0, X[:20], labels[:20], 20, 5, 3, 0.5, w)
    E.pa_fit(1, X[20:], labels[20:], 20, 5, 3, 0.5, w)
    models = [reference.fit(list(zip(X[:20], present[:20], labels[:20]))),
              reference.fit(list(zip(X[20:], present[20:], labels[20:])))]
    out, scores = np.zeros(2, dtype=np.int64), np.zeros(3)
    nb = naive.OnlineEnsembleReference("nb", 40, 1, 0.9, 1.0, 0, 1.0, None, 3, 0.01, 2, 0)
    bank = {"class_count": np.zeros((1, 3)), "count": np.zeros((1, 3, 5), dtype=np.int64),
            "mean": np.zeros((1, 3, 5)), "var": np.zeros((1, 3, 5))}
    E.nb_fit(0, X, present, labels, 40, bank["class_count"], bank["count"], bank["mean"], bank["var"],
             np.zeros(5, dtype=np.int32), np.zeros(5))
    nb_model = nb.fit(list(zip(X, present, labels)))
    x, p = np.zeros(5), np.zeros(5, dtype=np.bool_)
    for row, row_present in zip(*_rows(rng, 30, 5)):
        slots = np.flatnonzero(row_present).astype(np.int32)
        E.scatter(slots, row[slots], len(slots), x, p)
        np.testing.assert_array_equal(x, row)
        np.testing.assert_array_equal(p, row_present)
        E.pa_labels(2, x, 5, w, np.array([True, False]), 3, scores, out)
        assert out.tolist() == [reference.predict_model(models[0], x, p), -1]
        E.pa_labels(2, x, 5, w, np.array([True, True]), 3, scores, out)
        assert out.tolist() == [reference.predict_model(m, x, p) for m in models]
        E.nb_labels(1, slots, row[slots], len(slots), bank["class_count"], bank["count"], bank["mean"],
                    bank["var"], 0.01, 2, scores, out)
        assert out[0] == nb.predict_model(nb_model, x, p)


def test_naive_bayes_fit_matches_the_reference():
    rng = np.random.default_rng(3)
    X, present = _rows(rng, 50, 4)
    labels = rng.integers(0, 2, 50)
    bank = {"class_count": np.ones((1, 2)), "count": np.ones((1, 2, 4), dtype=np.int64),
            "mean": np.ones((1, 2, 4)), "var": np.ones((1, 2, 4))}
    E.nb_fit(0, X, present, labels, 50, bank["class_count"], bank["count"], bank["mean"], bank["var"],
             np.zeros(4, dtype=np.int32), np.zeros(4))
    _, expected = naive.OnlineEnsembleReference(
        "nb", 50, 1, 0.9, 1.0, 0, 1.0, None, 2, 0.01, 2, 0).fit(list(zip(X, present, labels)))
    for key in expected:
        np.testing.assert_allclose(bank[key][0], expected[key], rtol=1e-12, atol=1e-14)


def test_reservoir_keeps_a_uniform_sample_of_the_rows_offered():
    rng_state = new_state(5)
    res_X, res_present, res_labels = np.zeros((10, 1)), np.zeros((10, 1), dtype=np.bool_), np.zeros(10, dtype=np.int64)
    counts = np.zeros(2, dtype=np.int64)
    seen = np.zeros(1000)
    for start in range(0, 1000, 50):  # 20 chunks of 50, half of them kept
        X = np.arange(start, start + 50, dtype=float)[:, None]
        keep = (np.arange(50) % 2) == 0
        E.reservoir_add(X, np.ones((50, 1), dtype=np.bool_), np.zeros(50, dtype=np.int64), keep, 50,
                        res_X, res_present, res_labels, counts, rng_state)
        seen[res_X[:, 0].astype(int)] += 1
    assert counts.tolist() == [10, 500]
    assert (res_X[:, 0] % 2 == 0).all() and len(set(res_X[:, 0])) == 10
    # The same draws in plain Python.
    state, reservoir, offered = 5, [], 0
    for value in range(0, 1000, 2):
        offered += 1
        if len(reservoir) < 10:
            reservoir.append(value)
        else:
            state, u = naive.uniform(state)
            if int(u * offered) < 10:
                reservoir[int(u * offered)] = value
    assert res_X[:, 0].tolist() == reservoir


def _stream(n, seed, n_classes, n_channels=5, p_missing=0.2, switch=None):
    rng = random.Random(seed)
    weights = [[rng.gauss(0, 1) for _ in range(n_channels)] for _ in range(n_classes)]
    for i in range(n):
        if switch is not None and i == switch:
            weights = weights[1:] + weights[:1]
        values = [rng.gauss(0, 1) for _ in range(n_channels)]
        x = {f"ch{j}": 5 * j + v for j, v in enumerate(values) if rng.random() > p_missing}
        scores = [sum(w * v for w, v in zip(row, values)) for row in weights]
        yield x, scores.index(max(scores))


@pytest.mark.parametrize("base", ["kelm", "pa", "nb"])
@pytest.mark.parametrize("n_classes", [2, 3])
def test_learner_matches_the_reference_instance_by_instance(base, n_classes):
    params = dict(base=base, chunk_size=25, n_members=3, beta=0.8, alpha=0.7, reservoir_size=30, C=2.0,
                  gamma=None, var_floor=0.01, n_classes=n_classes, capacity=8, seed=4, **NO_ONLINE)
    model = edgelearn.OnlineEnsemble(**params)
    reference = naive.OnlineEnsembleReference(
        base, 25, 3, 0.8, 0.7, 30, 2.0, None, n_classes, 0.01, _MIN_COUNT, 4)
    agree = 0
    for i, (x, c) in enumerate(_stream(600, seed=n_classes, n_classes=n_classes, switch=300)):
        y = bool(c) if n_classes == 2 else f"class{c}"
        decision = model.decide_one(x)
        dense, present = np.zeros(8), np.zeros(8, dtype=bool)
        dense[decision.slots], present[decision.slots] = decision.z, True
        expected = reference.predict(dense, present)
        # The learner indexes multiclass labels in order of first appearance.
        expected_label = (expected == 1) if n_classes == 2 else (model.classes[expected] if expected >= 0 else None)
        assert decision.label == expected_label, i
        agree += decision.label == y
        model.learn(decision.slots, decision.z, y)
        index = c if n_classes == 2 else model.classes.index(y)
        reference.learn(dense, present, index)
        weights = [member["weight"] for member in reference.members]
        np.testing.assert_allclose(model.weights[: model.members], weights, rtol=1e-12)
    assert model.members == 3 and int(model.progress[2]) == 24
    assert int(model.reservoir_counts[0]) == 30
    assert agree / 600 > 0.5  # it learns something, or the comparison is empty


def test_members_are_replaced_after_a_drift_and_accuracy_recovers():
    model = edgelearn.OnlineEnsemble(chunk_size=50, n_members=4, alpha=1.0, n_classes=3, seed=1, **NO_ONLINE)
    hits = []
    for x, c in _stream(4000, seed=9, n_classes=3, p_missing=0.0, switch=2000):
        hits.append(model.predict_one(x) == c)
        model.learn_one(x, c)
    before, just_after, recovered = np.mean(hits[1500:2000]), np.mean(hits[2000:2100]), np.mean(hits[3500:])
    assert just_after < before - 0.2  # the drift hurts...
    # ...until new members have replaced the old ones (the global learner's
    # reservoir still holds the old concept, so not all the way back).
    assert recovered > just_after + 0.2
    assert model.born.min() >= 40  # every member was trained after the drift (chunk 40)


@pytest.mark.parametrize("base", ["kelm", "pa", "nb"])
def test_a_channel_the_model_has_never_seen_changes_no_prediction(base):
    model = edgelearn.OnlineEnsemble(base=base, chunk_size=20, n_members=2, reservoir_size=10, capacity=3, alpha=1.0)
    for x, c in _stream(200, seed=5, n_classes=2, n_channels=3, p_missing=0.0):
        model.learn_one(x, bool(c))
    x = {"ch0": 0.3, "ch1": -1.2, "ch2": 8.0}
    label = model.predict_one(x)
    dense = model._x.copy()
    assert dense[2] != 0.0  # ch2 holds the last slot, where slot -1 would wrap to
    assert model.predict_one({**x, "never_seen": 100.0}) == label
    np.testing.assert_array_equal(model._x, dense)

def test_forgetting_a_slot_clears_it_everywhere():
    model = edgelearn.OnlineEnsemble(base="nb", chunk_size=10, n_members=2, reservoir_size=5, capacity=3, evict_after=5,
                                     alpha=1.0)
    for i in range(40):
        model.learn_one({"a": float(i % 3), "b": float(i % 5)}, i % 2 == 0)
    slot = model.channels.slot_of("b")
    for i in range(20):  # "b" vanishes; "c" takes a free slot, "d" recycles b's
        model.learn_one({"a": float(i % 3), "c": 1.0 + i % 2}, i % 2 == 0)
    model.learn_one({"a": 1.0, "d": 2.0}, True)
    assert "b" not in model.channels.names and "d" in model.channels.names
    assert not model.member_count[:, :, slot].any() and not model.global_count[:, :, slot].any()
    assert not model.reservoir_present[:, slot].any()


def test_gateway_can_build_it_by_kind():
    model = edgelearn.make_learner("ensemble", {"base": "pa", "n_classes": 4, "chunk_size": 20})
    assert isinstance(model, edgelearn.OnlineEnsemble) and model.base == "pa" and model.n_classes == 4
    hits = []
    for x, c in _stream(400, seed=3, n_classes=4, p_missing=0.0):
        hits.append(model.predict_one(x) == c)
        model.learn_one(x, c)
    assert sorted(model.classes) == [0, 1, 2, 3]
    assert np.mean(hits[200:]) > 0.5  # four classes: chance is 0.25


@pytest.mark.parametrize("base", ["kelm", "pa", "nb"])
def test_memory_is_the_documented_bound(base):
    d, n, m, k, K = 32, 50, 120, 6, 3
    model = edgelearn.OnlineEnsemble(base=base, chunk_size=n, reservoir_size=m, n_members=k, n_classes=K, capacity=d,
                                     **NO_ONLINE)
    rows = 9 * d * (2 * n + 2 * m) + 17 * (n + m)
    models = {
        "kelm": 8 * (k * n + n + m) * (d + K) + 8 * (n + m) * (n + m + K),
        "pa": 8 * (k + 1) * K * d,
        "nb": 8 * (k + 1) * K * (3 * d + 1),
    }[base]
    bound = rows + models
    extra = model.memory_bytes() - model.channels.memory_bytes() - bound
    assert 0 <= extra <= 64 * (k + d + K)  # the scratch rows, counts and labels


# -- the online members (options beyond the paper) ---------------------------------


def _rls_reference(rows, labels, n_classes, lam, p0):
    """Exponentially weighted least squares solved from scratch after each row:
    ``W = argmin sum_i lam^(t-i) ||t_i - W v_i||^2 + lam^t ||W||^2 / p0`` (P starts at p0 I),
    i.e. ``W' = (lam^t I / p0 + sum lam^(t-i) v_i v_i')^-1 sum lam^(t-i) v_i t_i'``."""
    a = rows.shape[1]
    out = []
    for t in range(1, len(rows) + 1):
        decay = lam ** (t - 1 - np.arange(t))
        V, T = rows[:t], np.where(labels[:t, None] == np.arange(n_classes)[None, :], 1.0, -1.0)
        A = lam ** t * np.eye(a) / p0 + (V * decay[:, None]).T @ V
        out.append(np.linalg.solve(A, (V * decay[:, None]).T @ T).T)
    return out


def test_rls_learn_matches_a_from_scratch_weighted_least_squares():
    rng = np.random.default_rng(11)
    a, K, lam = 5, 3, 0.97
    rows = rng.normal(size=(60, a))
    labels = rng.integers(0, K, 60)
    # P starts at 0.1 I and every direction is excited, so P's diagonal stays below 1
    # and the wind-up bound never acts.
    P, W, Pv = 0.1 * np.eye(a + 2), np.zeros((K, a + 2)), np.zeros(a + 2)
    v = np.zeros(a + 2)
    for t, expected in enumerate(_rls_reference(rows, labels, K, lam, 0.1)):
        v[:a] = rows[t]
        E.rls_learn(P, W, v, a, labels[t], K, lam, Pv)
        assert P.diagonal()[:a].max() < 1.0
        np.testing.assert_allclose(W[:, :a], expected, rtol=1e-8, atol=1e-10)
    assert not W[:, a:].any() and P[a:, a:].tolist() == (0.1 * np.eye(2)).tolist()  # beyond a: untouched


def test_rls_bounds_the_covariance_of_a_direction_rows_stop_exciting():
    P, W, Pv, v = np.eye(3), np.zeros((2, 3)), np.zeros(3), np.array([1.0, 0.0, 0.5])
    rng = np.random.default_rng(3)
    for _ in range(2000):  # channel 1 held at its mean: P[1, 1] would grow as 0.99^-t
        v[2] = rng.normal()
        E.rls_learn(P, W, v, 3, int(rng.integers(0, 2)), 2, 0.99, Pv)
    assert P.diagonal().max() <= 1.0 + 1e-12
    np.testing.assert_allclose(P, P.T, atol=1e-12)
    assert np.linalg.eigvalsh(P).min() > 0.0


def test_pa_learn_is_pa_fit_one_row_at_a_time():
    rng = np.random.default_rng(12)
    X, _ = _rows(rng, 50, 4)
    labels = rng.integers(0, 3, 50)
    expected = np.zeros((1, 3, 4))
    E.pa_fit(0, X, labels, 50, 4, 3, 0.7, expected)
    W = np.zeros((3, 6))
    for x, c in zip(X, labels):
        E.pa_learn(W, np.concatenate([x, [9.0, 9.0]]), 4, c, 3, 0.7)
    np.testing.assert_allclose(W[:, :4], expected[0], rtol=1e-12)
    assert not W[:, 4:].any()


@pytest.mark.parametrize("n_classes", [2, 3])
def test_online_row_and_label_lags(n_classes):
    b = 1 if n_classes == 2 else n_classes
    lags, v = np.zeros(2 * b), np.zeros(1 + 2 * b + 4)
    history = []
    for y in (1, 0, 2 % n_classes, 1):
        E.push_label(lags, 2 * b, y, n_classes)
        history.insert(0, y)
        code = lambda c: [1.0 if c == 1 else -1.0] if n_classes == 2 else list(np.eye(n_classes)[c])  # noqa: E731
        assert lags.tolist() == code(history[0]) + (code(history[1]) if len(history) > 1 else [0.0] * b)
    x = np.array([0.5, -1.0, 3.0, 7.0])
    assert E.online_row(x, 3, lags, 2 * b, v) == 1 + 2 * b + 3
    assert v[: 1 + 2 * b + 3].tolist() == [1.0, *lags, 0.5, -1.0, 3.0]
    scores = np.zeros(n_classes)
    W = np.arange(n_classes * v.size, dtype=float).reshape(n_classes, -1) % 5 - 2
    assert E.linear_label(W, v, 4, n_classes, scores) == int(np.argmax(W[:, :4] @ v[:4]))


ONLINE = dict(forgetting=0.98, online_C=0.5, label_lags=2)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_online_members_follow_their_kernels_and_vote_with_decayed_weights(n_classes):
    """The learner's online members step for step against the kernels driven by
    hand from the decisions' (slots, z), and the vote against the decay rule."""
    model = edgelearn.OnlineEnsemble(chunk_size=20, n_members=2, reservoir_size=10, capacity=6, alpha=0.0,
                                      beta=0.6, n_classes=n_classes, seed=2, **ONLINE)
    K, b = n_classes, 1 if n_classes == 2 else n_classes
    n_lag, width = 2 * b, 1 + 2 * b + 6
    P, Wr, Wp, lags, Pv, v = np.eye(width), np.zeros((K, width)), np.zeros((K, width)), np.zeros(n_lag), np.zeros(width), np.zeros(width)
    weights = np.array([0.0, 0.0, 0.5, 0.5])
    scores = np.zeros(K)
    for i, (x, c) in enumerate(_stream(300, seed=7, n_classes=n_classes, switch=150)):
        y = bool(c) if n_classes == 2 else c
        decision = model.decide_one(x)
        dense = np.zeros(6)
        dense[decision.slots] = decision.z
        a = E.online_row(dense, model.channels.n_assigned, lags, n_lag, v)
        online = [E.linear_label(Wr, v, a, K, scores), E.linear_label(Wp, v, a, K, scores)]
        model.learn(decision.slots, decision.z, y)
        index = c if n_classes == 2 else model.classes.index(y)  # known once learned
        members = model._member_labels[:2].tolist()
        for j, label in enumerate([*members, *online]):
            if label != index:
                weights[j] *= 0.6
        weights /= weights.sum()
        assert model._member_labels[2:].tolist() == online, i
        E.rls_learn(P, Wr, v, a, index, K, 0.98, Pv)
        E.pa_learn(Wp, v, a, index, K, 0.5)
        E.push_label(lags, n_lag, index, K)
        if (i + 1) % 20 == 0:  # a chunk member is (re)placed with weight 1
            slot = int(np.argmax(model.born[:2] == i // 20)) if model.members == 2 else model.members - 1
            weights[slot] = 1.0
            weights /= weights.sum()
        np.testing.assert_allclose(model.weights, weights, rtol=1e-12)
    np.testing.assert_allclose(model.rls_W, Wr, rtol=1e-12)
    np.testing.assert_allclose(model.pa_W, Wp, rtol=1e-12)
    np.testing.assert_array_equal(model.lags, lags)
    assert int(model.reservoir_counts[0]) == 0  # alpha 0: no global learner, no reservoir


def test_online_state_round_trips_and_continues_alike():
    model = edgelearn.OnlineEnsemble(chunk_size=20, n_members=3, reservoir_size=10, capacity=6, **ONLINE)
    stream = list(_stream(400, seed=8, n_classes=2))
    for x, c in stream[:250]:
        model.learn_one(x, bool(c))
    copy = edgelearn.OnlineEnsemble.from_state(model.to_state())
    for name in ("rls_P", "rls_W", "pa_W", "lags", "weights"):
        np.testing.assert_array_equal(getattr(copy, name), getattr(model, name))
    for x, c in stream[250:]:
        assert copy.predict_one(x) == model.predict_one(x)
        model.learn_one(x, bool(c))
        copy.learn_one(x, bool(c))
    np.testing.assert_array_equal(copy.rls_W, model.rls_W)


def test_online_options_are_validated_with_their_names():
    for params, message in (({"forgetting": 1.5}, "'forgetting'"), ({"forgetting": 0.0}, "'forgetting'"),
                            ({"online_C": -1.0}, "'online_C'"), ({"label_lags": -1}, "'label_lags'")):
        with pytest.raises((ValueError, TypeError), match=message):
            edgelearn.OnlineEnsemble(**params)


def test_a_forgotten_slot_resets_its_online_column():
    model = edgelearn.OnlineEnsemble(base="pa", chunk_size=10, n_members=2, reservoir_size=5, capacity=3,
                                     evict_after=5, **ONLINE)
    for i in range(40):
        model.learn_one({"a": float(i % 3), "b": float(i % 5)}, i % 2 == 0)
    j = 1 + 2 + model.channels.slot_of("b")
    assert model.rls_W[:, j].any() and model.pa_W[:, j].any()
    for i in range(20):
        model.learn_one({"a": float(i % 3), "c": 1.0 + i % 2}, i % 2 == 0)
    model.learn_one({"a": 1.0, "d": 2.0}, True)
    assert "b" not in model.channels.names
    # "d" took b's slot and has been learned once since; before that the column was reset.
    copy = edgelearn.OnlineEnsemble(base="pa", chunk_size=10, n_members=2, reservoir_size=5, capacity=3,
                                    evict_after=5, **ONLINE)
    assert copy.rls_P.shape == model.rls_P.shape
    assert model.rls_P[j, j] <= 1.0


@pytest.mark.parametrize("n_classes", [2, 4])
def test_online_members_memory_is_the_documented_bound(n_classes):
    d, L, K = 32, 2, n_classes
    width = 1 + L * (1 if K == 2 else K) + d
    plain = edgelearn.OnlineEnsemble(n_members=0, n_classes=K, capacity=d, **NO_ONLINE)
    model = edgelearn.OnlineEnsemble(n_members=0, n_classes=K, capacity=d, label_lags=L)
    # RLS: P and W; PA-I: W; the lag block; the row and P v scratch; two more vote slots.
    extra = 8 * width * width + 8 * K * width + 8 * K * width + 8 * (width - 1 - d) + 16 * width + 2 * (8 + 8 + 8)
    assert model.memory_bytes() - plain.memory_bytes() == extra


def test_the_default_is_the_online_members_alone():
    """The defaults (tuned for drift, docs/results-drift.md): no chunk members, no global
    learner, an RLS and a PA-I member on [1, last label, x]."""
    model = edgelearn.OnlineEnsemble()
    assert (model.n_members, model.alpha, model.forgetting, model.online_C, model.label_lags) == (0, 0.0, 0.999, 1.0, 1)
    hits = []
    # A label that mostly repeats (Electricity-like autocorrelation) and depends on ch0 otherwise.
    rng, previous = random.Random(4), True
    for i in range(2000):
        x = {"ch0": rng.gauss(0, 1), "ch1": rng.gauss(0, 1)}
        y = previous if rng.random() < 0.8 else x["ch0"] > 0
        hits.append(model.predict_one(x) == y)
        model.learn_one(x, y)
        previous = y
    # The best rule is right 0.9 of the time (so is the last label alone; ch0 alone 0.6).
    assert np.mean(hits[500:]) > 0.85
    assert model.members == 0 and int(model.reservoir_counts[0]) == 0
