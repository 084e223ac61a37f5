"""PAFE: its kernels against the references in ``tests/naive.py``, the ridge
maps against a from-scratch solve and against the true map, detection of a
replacement in a live stream, the baselines, the ensembles, and PA-I's
behaviour on streams with no replacement pattern."""

import math
import random

import numpy as np
import pytest

import edgelearn
import naive
from edgelearn import PA, PAFE
from edgelearn import state as checkpoint
from edgelearn.evaluate import prequential
from edgelearn.kernels import pafe as K
from edgelearn.streams import drop_features, evolve_features, iter_array


# -- kernels ------------------------------------------------------------------------


def test_membership_select_and_scatter_match():
    rng = np.random.default_rng(1)
    capacity = 10
    for _ in range(50):
        in_old = rng.random(capacity) < 0.4
        in_new = (rng.random(capacity) < 0.4) & ~in_old
        slots = rng.permutation(capacity)[: rng.integers(0, capacity + 1)].astype(np.int32)
        slots[rng.random(len(slots)) < 0.1] = -1
        x = rng.normal(size=len(slots))
        k = len(slots)
        known = slots[slots >= 0]
        assert K.membership(slots, k, in_old, in_new) == (
            int(in_old[known].sum()), int(in_new[known].sum()), int((~in_old[known] & ~in_new[known]).sum())
        )
        out_slots, out_x = np.zeros(capacity, dtype=np.int32), np.zeros(capacity)
        m = K.select(slots, x, k, in_old, in_new, out_slots, out_x)
        keep = [(s, v) for s, v in zip(slots, x) if s >= 0 and (in_old[s] or in_new[s])]
        assert m == len(keep)
        assert out_slots[:m].tolist() == [s for s, _ in keep] and out_x[:m].tolist() == [v for _, v in keep]
        tracked = np.flatnonzero(in_new).astype(np.int32)
        pos = np.full(capacity, -1, dtype=np.int32)
        pos[tracked] = np.arange(len(tracked))
        out = np.full(capacity, 7.0)
        K.scatter(slots, x, k, pos, len(tracked), out)
        np.testing.assert_array_equal(out[: len(tracked)], naive.by_position(slots, x, tracked))


def tracked_sets(rng, capacity, n_old, n_new):
    order = rng.permutation(capacity).astype(np.int32)
    old_slots, new_slots = order[:n_old], order[n_old : n_old + n_new]
    old_pos = np.full(capacity, -1, dtype=np.int32)
    new_pos = np.full(capacity, -1, dtype=np.int32)
    old_pos[old_slots] = np.arange(n_old)
    new_pos[new_slots] = np.arange(n_new)
    return old_slots, new_slots, old_pos, new_pos


@pytest.mark.parametrize("n_old,n_new", [(3, 5), (6, 2), (4, 4)])
def test_accumulate_and_solve_equal_the_from_scratch_ridge(n_old, n_new):
    """Raw sums over rows with missing channels (their running mean stands
    in), solved in a z-space given by means and scales: the same maps as
    standardizing the rows and calling np.linalg.solve."""
    rng = np.random.default_rng([2, n_old, n_new])
    capacity, max_old, max_new, ridge = 14, 7, 6, 0.7
    old_slots, new_slots, old_pos, new_pos = tracked_sets(rng, capacity, n_old, n_new)
    S11, S22, S21 = np.zeros((max_old, max_old)), np.zeros((max_new, max_new)), np.zeros((max_new, max_old))
    sum1, sum2 = np.zeros(max_old), np.zeros(max_new)
    u, v = np.zeros(max_old), np.zeros(max_new)
    rows_old, rows_new = [], []
    for _ in range(40):
        running_mean = rng.normal(size=capacity) * 3 + 5  # whatever the statistics say now
        present = rng.random(capacity) < 0.8
        slots = rng.permutation(np.flatnonzero(present)).astype(np.int32)
        x = rng.normal(size=len(slots)) * 2 + 5
        K.accumulate(slots, x, len(slots), old_pos, new_pos, old_slots, new_slots, n_old, n_new,
                     running_mean, u, v, S11, S22, S21, sum1, sum2)
        values = dict(zip(slots.tolist(), x))
        rows_old.append([values.get(int(s), running_mean[s]) for s in old_slots])
        rows_new.append([values.get(int(s), running_mean[s]) for s in new_slots])
    rows_old, rows_new = np.array(rows_old), np.array(rows_new)
    E11, E22, E21 = naive.gram(rows_old, rows_new)
    np.testing.assert_allclose(S11[:n_old, :n_old], E11, rtol=1e-12)
    np.testing.assert_allclose(S22[:n_new, :n_new], E22, rtol=1e-12)
    np.testing.assert_allclose(S21[:n_new, :n_old], E21, rtol=1e-12)
    np.testing.assert_allclose(sum1[:n_old], rows_old.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(sum2[:n_new], rows_new.sum(axis=0), rtol=1e-12)
    assert not S11[n_old:].any() and not S22[n_new:].any() and not S21[n_new:].any()

    m1, sd1 = np.zeros(max_old), np.ones(max_old)
    m2, sd2 = np.zeros(max_new), np.ones(max_new)
    m1[:n_old], sd1[:n_old] = rng.normal(size=n_old) + 5, rng.uniform(0.5, 3, size=n_old)
    m2[:n_new], sd2[:n_new] = rng.normal(size=n_new) + 5, rng.uniform(0.5, 3, size=n_new)
    Z1 = (rows_old - m1[:n_old]) / sd1[:n_old]
    Z2 = (rows_new - m2[:n_new]) / sd2[:n_new]
    L = np.zeros((max(max_old, max_new),) * 2)
    recover_old, predict_new = np.zeros((max_new, max_old)), np.zeros((max_old, max_new))
    K.solve_maps(S11, S22, S21, sum1, sum2, 40.0, m1, sd1, m2, sd2, n_old, n_new, ridge, L,
                 recover_old, predict_new)
    np.testing.assert_allclose(recover_old[:n_new, :n_old], naive.ridge_map(Z2, Z1, ridge), rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(predict_new[:n_old, :n_new], naive.ridge_map(Z1, Z2, ridge), rtol=1e-8, atol=1e-11)

    # Recovering and mapping weights use the solved map as docs/learners.md's M1.
    M1 = recover_old[:n_new, :n_old].T
    slots = rng.permutation(capacity).astype(np.int32)
    x = rng.normal(size=capacity)
    out = np.zeros(max_old)
    K.recover(slots, x, capacity, new_pos, n_old, n_new, recover_old, v, out)
    np.testing.assert_allclose(out[:n_old], M1 @ naive.by_position(slots, x, new_slots), rtol=1e-12, atol=1e-14)
    w_old = rng.normal(size=capacity)
    w_new = rng.normal(size=capacity)
    expected = w_new.copy()
    expected[new_slots] += 0.3 * (M1.T @ w_old[old_slots])
    K.map_weights(recover_old, old_slots, new_slots, n_old, n_new, w_old, 0.3, w_new)
    np.testing.assert_allclose(w_new, expected, rtol=1e-12)


def test_ridge_solve_of_a_random_system():
    """Raw sums of random rows; means 0 and scales 1 make them plain Gram
    matrices, and the solve is np.linalg.solve's."""
    rng = np.random.default_rng(3)
    for n, m in ((1, 1), (5, 3), (12, 7)):
        A = rng.normal(size=(30, n))
        B = rng.normal(size=(30, m))
        S, R = A.T @ A, B.T @ A  # R as S21 stores it: (m x n)
        zeros_n, ones_n, zeros_m, ones_m = np.zeros(n), np.ones(n), np.zeros(m), np.ones(m)
        L, out = np.zeros((n, n)), np.zeros((n, m))
        K.ridge_solve(S, zeros_n, zeros_n, ones_n, n, R, zeros_m, zeros_n, zeros_m, zeros_n, ones_m, ones_n,
                      m, True, 30.0, 0.5, L, out)
        np.testing.assert_allclose(out, naive.ridge_map(A, B, 0.5), rtol=1e-9, atol=1e-12)


def test_ensemble_kernels_match():
    rng = np.random.default_rng(4)
    for _ in range(200):
        y, f = rng.choice([-1.0, 1.0]), rng.normal() * 2
        assert K.clipped_hinge(y, f) == naive.clipped_hinge(y, f)
        assert K.mistake(y, f) == naive.mistake(y, f)
        T = float(rng.integers(2, 10_000))
        assert K.eta_combination(T) == pytest.approx(naive.eta_combination(T), rel=1e-14)
        assert K.eta_selection(T) == pytest.approx(naive.eta_selection(T), rel=1e-12)
        a = rng.dirichlet([1, 1])
        l1, l2, eta = rng.random(), rng.random(), rng.random() * 3
        got = a.copy()
        K.combine_update(got, l1, l2, eta)
        np.testing.assert_allclose(got, naive.combine_update(a, l1, l2, eta), rtol=1e-13)
        got = a.copy()
        K.fixed_share_update(got, l1, l2, eta, 1.0 / (T - 1))
        np.testing.assert_allclose(got, naive.fixed_share_update(a, l1, l2, eta, 1.0 / (T - 1)), rtol=1e-13)
    assert [K.mistake(y, 0.0) for y in (-1.0, 1.0)] == [0.0, 1.0]  # a zero margin predicts negative
    for t in range(1, 70):
        assert K.doubling_horizon(t, 0) == naive.doubling_horizon(t, 0)
        assert K.doubling_horizon(t, 37) == 37.0
    assert [K.doubling_horizon(t, 0) for t in (1, 2, 3, 4, 7, 8)] == [2, 2, 2, 4, 4, 8]
    # T = 2: delta = 1 shares everything, so the weights go back to equal.
    a = np.array([0.9, 0.1])
    K.fixed_share_update(a, 0.0, 1.0, K.eta_selection(2.0), 1.0)
    np.testing.assert_allclose(a, [0.5, 0.5])


# -- streams ------------------------------------------------------------------------


OLD = ["a0", "a1", "a2", "a3"]


def evolving(n=1200, t1=600, overlap=10, seed=0, noise=0.0, d2=5):
    """A linearly separable stream whose 4 old channels are replaced by 5
    linear mixes of them, with ``overlap`` instances carrying both."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) * [1.0, 2.0, 0.5, 1.5] + [0.0, 3.0, -1.0, 0.5]
    w = np.array([1.0, -0.5, 2.0, 0.7])
    y = (X - [0.0, 3.0, -1.0, 0.5]) @ w > 0
    Z, G = evolve_features(X, t1, overlap, n_new=d2, seed=seed + 100)
    if noise:
        Z[:, 4:] += rng.normal(size=(n, d2)) * noise
    return Z, y, OLD + [f"b{j}" for j in range(d2)], G


def run(model, Z, y, names, watch=()):
    """Prequential over the stream; returns correctness per instance and the
    phase after each observed instance."""
    correct, phases = [], []
    for x, label in iter_array(Z, y, names):
        d = model.decide_one(x)
        correct.append(d.label == label)
        phases.append(getattr(model, "phase", None))  # PA has no phases
        model.learn(d.slots, d.z, label)
    return np.array(correct), phases


def test_detects_overlap_and_second_period_where_they_are():
    Z, y, names, _ = evolving(t1=600, overlap=10)
    model = PAFE(C=0.1)
    _, phases = run(model, Z, y, names)
    assert set(phases[:590]) == {"stable"}
    assert set(phases[590:600]) == {"overlap"}
    assert set(phases[600:]) == {"evolved"}
    old, new = model.channel_sets()
    assert old == OLD and new == names[4:]


def test_too_short_an_overlap_is_no_replacement():
    Z, y, names, _ = evolving(t1=600, overlap=3)
    model = PAFE(C=0.1, overlap_min=5)
    _, phases = run(model, Z, y, names)
    assert phases[599] == "overlap" and set(phases[600:]) == {"stable"}
    assert model.channel_sets() == (names, [])  # S2 joined S1: plain PA-I from here


def test_maps_converge_to_the_true_linear_map():
    """Raw values, zero-mean old channels, new = G^T old: the ridge maps
    approach M2 = G^T and M1 = pinv(G^T) as the overlap grows."""
    rng = np.random.default_rng(5)
    G = rng.normal(size=(3, 4))
    errors = []
    for overlap in (20, 200, 2000):
        # One row of old channels, `overlap` rows of both, one row of new ones.
        X = rng.normal(size=(overlap + 2, 3)) * [1.0, 2.0, 3.0]
        Z, _ = evolve_features(X, overlap + 1, overlap, mixing=G)
        model = PAFE(standardize=False, ridge=1.0, absorb_after=10**6)
        for x, _ in iter_array(Z, None, OLD[:3] + ["b0", "b1", "b2", "b3"]):
            model.learn_one(x, True)
        assert model.phase == "evolved"
        M1, M2, old, new = model.maps()
        assert old == OLD[:3] and new == ["b0", "b1", "b2", "b3"]
        errors.append((np.abs(M2 - G.T).max(), np.abs(M1 - np.linalg.pinv(G.T)).max()))
    (m2_20, m1_20), (m2_200, m1_200), (m2_2000, m1_2000) = errors
    assert m2_2000 < 5e-3 and m1_2000 < 5e-3
    assert m2_2000 < m2_200 < m2_20 and m1_2000 < m1_200 < m1_20


def test_maps_equal_a_from_scratch_solve_of_the_overlap_rows():
    """The overlap rows standardized with the channel statistics of the
    solve, one np.linalg.solve each way, and the learner's maps agree; and
    they are solved again, in the z-space of the moment, as the second
    period goes on."""
    Z, y, names, _ = evolving(t1=600, overlap=40, noise=0.1)
    model = PAFE(C=0.1, ridge=0.3)
    stream = list(iter_array(Z, y, names))
    for x, label in stream[:601]:
        d = model.decide_one(x)
        model.learn(d.slots, d.z, label)
    assert model.phase == "evolved"

    def reference():
        space = model.channels
        mean = {n: space.mean[space.slot_of(n)] for n in names}
        sd = {n: np.sqrt(space.var[space.slot_of(n)] + space.eps) for n in names}
        Z1 = np.array([[(x[n] - mean[n]) / sd[n] for n in OLD] for x, _ in stream[560:600]])
        Z2 = np.array([[(x[n] - mean[n]) / sd[n] for n in names[4:]] for x, _ in stream[560:600]])
        return naive.ridge_map(Z2, Z1, 0.3).T, naive.ridge_map(Z1, Z2, 0.3).T

    M1, M2, old, new = model.maps()
    assert old == OLD and new == names[4:]
    R1, R2 = reference()
    np.testing.assert_allclose(M1, R1, rtol=1e-8, atol=1e-11)
    np.testing.assert_allclose(M2, R2, rtol=1e-8, atol=1e-11)
    # The second period's instance i (0-based, at row 600 + i) re-solves
    # when i + 1 is a power of 2: row 727 is the 128th.
    for x, label in stream[601:700]:
        model.learn_one(x, label)
    for x, label in stream[700:728]:
        model.decide_one(x)
    R1_now, _ = reference()
    M1_now = model.maps()[0]
    assert not np.allclose(M1_now, M1)
    np.testing.assert_allclose(M1_now, R1_now, rtol=1e-8, atol=1e-11)


def margins_at_first_period_two_instance(variant, **params):
    Z, y, names, _ = evolving(t1=600, overlap=10)
    model = PAFE(C=0.1, variant=variant, learn_intercept=True, **params)
    for t, (x, label) in enumerate(iter_array(Z, y, names)):
        if t == 600:
            d = model.decide_one(x)
            return model, model._margins(d.slots, d.z), d
        model.learn_one(x, label)


def test_w2_starts_as_the_old_model_through_the_map():
    model, (f1, f2, _), d = margins_at_first_period_two_instance("NPA-d")
    # w2 = M1^T w1[S1] plus the S2 weights w1 learned over the overlap (still in w1).
    overlap_part = float(np.dot(model.w1[d.slots], d.z))
    assert f2 == pytest.approx(f1 + overlap_part, rel=1e-9, abs=1e-12) and f1 != 0.0 and overlap_part != 0.0
    assert d.score == f2
    assert model.b2[0] == model.b1[0] != 0.0
    model, (f1, f2, _), d = margins_at_first_period_two_instance("NPA-r")
    assert f2 == 0.0 and f1 != 0.0 and not model.w2.any()
    model, (f1, f2, f3), d = margins_at_first_period_two_instance("PAFE-c")
    assert d.score == pytest.approx(0.5 * f1 + 0.5 * f2, rel=1e-12) and f3 == 0.0
    # PAFE-h: the mapped model and the fresh one, equal weights; f1 is not used.
    model, (f1, f2_h, f3), d = margins_at_first_period_two_instance("PAFE-h")
    assert f1 == 0.0 and f2_h == pytest.approx(f2, rel=1e-12) and f3 != 0.0
    assert d.score == pytest.approx(0.5 * f2 + 0.5 * f3, rel=1e-12)
    assert model.ensemble_weights == (0.0, 0.5, 0.5)


def test_baselines_update_what_the_paper_says():
    Z, y, names, _ = evolving(t1=600, overlap=10, noise=0.3)
    final = {}
    for variant in ("RPA-u", "RPA-f", "NPA-d", "NPA-r", "PAFE-c", "PAFE-h"):
        model = PAFE(C=0.1, variant=variant, learn_intercept=False)
        stream = list(iter_array(Z, y, names))
        for x, label in stream[:601]:
            model.learn_one(x, label)
        w1, w2, w3 = model.w1.copy(), model.w2.copy(), model.w3.copy()
        for x, label in stream[601:]:
            model.learn_one(x, label)
        final[variant] = (np.array_equal(model.w1, w1), np.array_equal(model.w2, w2), model.ensemble_weights,
                          np.array_equal(model.w3, w3))
    assert final["RPA-u"][:2] == (False, True)   # w1 learns on recovered channels
    assert final["RPA-f"][:2] == (True, True)    # nothing learns
    assert final["NPA-d"][:2] == (True, False)   # only w2 learns
    assert final["NPA-r"][:2] == (True, False)
    assert final["PAFE-c"][:2] == (False, False)
    assert final["PAFE-c"][2] != (0.5, 0.5) and final["RPA-u"][2] == (0.5, 0.5)
    assert final["PAFE-h"][:2] == (True, False) and not final["PAFE-h"][3]  # w2 and w3 learn
    assert final["PAFE-h"][2][0] == 0.0 and final["PAFE-h"][2] != (0.0, 0.5, 0.5)
    assert all(final[v][3] for v in ("RPA-u", "NPA-d", "PAFE-c"))  # the others have no w3


def test_pafe_h_fresh_member_is_a_pa_i_on_the_new_channels_alone():
    """f3 is, weight for weight, a PA-I fed the new channels only, from the
    first instance that carries them: the reference the defaults must beat."""
    Z, y, names, _ = evolving(n=900, t1=600, overlap=10, noise=0.3)
    model = PAFE(C=0.05, variant="PAFE-h")
    fresh = PA(C=0.05, mode=1, learn_intercept=True)
    new = names[4:]
    checked = 0
    for t, (x, label) in enumerate(iter_array(Z, y, names)):
        d = model.decide_one(x)
        if t >= 590:  # the new channels' first instance
            xf = {k: v for k, v in x.items() if k in new}
            df = fresh.decide_one(xf)
            if t >= 600:
                assert model._margins(d.slots, d.z)[2] == pytest.approx(df.score, rel=1e-12, abs=1e-14)
            fresh.learn(df.slots, df.z, label)
        model.learn(d.slots, d.z, label)
        if t >= 590:
            for name in new:
                assert model.w3[model.channels.slot_of(name)] == pytest.approx(
                    fresh.w[fresh.channels.slot_of(name)], rel=1e-12, abs=1e-14)
            assert model.b3[0] == pytest.approx(fresh.intercept[0], rel=1e-12, abs=1e-14)
            checked += 1
    assert checked == 310 and model.phase == "evolved" and np.abs(model.w3).sum() > 0


def test_defaults_move_their_weight_to_the_fresh_model_when_the_mapped_one_is_wrong():
    """The new channels copy the old ones, but the concept flips with the
    replacement: the mapped model starts from the wrong weights, the fresh
    PA-I from zero, and the combination follows the fresh one."""
    rng = np.random.default_rng(12)
    n, t1 = 3000, 1000
    X = rng.normal(size=(n, 3))
    y = np.where(np.arange(n) < t1, 1.0, -1.0) * (X[:, 0] - X[:, 1]) > 0
    Z = np.full((n, 6), np.nan)
    Z[:t1, :3] = X[:t1]
    Z[t1 - 30 :, 3:] = X[t1 - 30 :] + 0.01 * rng.normal(size=(n - t1 + 30, 3))
    model = PAFE()
    assert model.variant == "PAFE-h" and model.learn_intercept
    correct, phases = run(model, Z, y, ["a0", "a1", "a2", "b0", "b1", "b2"])
    a1, a2, a3 = model.ensemble_weights
    assert phases[-1] == "evolved" and a1 == 0.0 and a3 > 0.9 > a2 and a2 + a3 == pytest.approx(1.0)
    fresh, _ = run(PA(), Z[t1 - 30 :, 3:], y[t1 - 30 :], ["b0", "b1", "b2"])
    assert correct[t1:].mean() >= fresh[30:].mean() - 0.01 and correct[-1000:].mean() > 0.95


def test_a_checkpoint_from_before_pafe_h_loads():
    """States saved before PAFE-h had no fresh model and two weights."""
    Z, y, names, _ = evolving(n=700, t1=600, overlap=10)
    model = PAFE(C=0.1, variant="PAFE-c")
    for x, label in iter_array(Z, y, names):
        model.learn_one(x, label)
    state = model.to_state()
    for name in ("w3", "b3"):
        del state["learned"][name]
    state["learned"]["a"] = state["learned"]["a"][:2]
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(state)))
    assert restored.ensemble_weights == model.ensemble_weights and restored.phase == "evolved"
    probe = dict(zip(names[4:], Z[-1, 4:]))
    assert restored.decide_one(probe).score == model.decide_one(probe).score


def test_combination_moves_weight_to_the_better_model():
    """A new set that carries information the old one lacks: f2 learns it,
    f1 (old channels recovered) cannot, and the weights follow."""
    rng = np.random.default_rng(6)
    n, t1 = 3000, 500
    X = rng.normal(size=(n, 3))
    extra = rng.normal(size=n)
    y = X[:, 0] + 3 * extra > 0
    Z = np.full((n, 6), np.nan)
    Z[:t1, :3] = X[:t1]
    Z[t1 - 20 :, 3:5] = X[t1 - 20 :, :2]
    Z[t1 - 20 :, 5] = extra[t1 - 20 :]
    for variant in ("PAFE-c", "PAFE-s"):
        model = PAFE(C=0.1, variant=variant, learn_intercept=False)
        correct, _ = run(model, Z, y, ["a0", "a1", "a2", "b0", "b1", "b2"])
        a1, a2 = model.ensemble_weights
        assert a2 > 0.9 > a1 and a1 + a2 == pytest.approx(1.0)
        assert correct[t1:].mean() > 0.9


def test_a_gap_in_the_old_set_is_not_a_replacement():
    rng = np.random.default_rng(7)
    model = PAFE(C=0.1, vanish_after=30, absorb_after=150)
    phases = []
    for t in range(400):
        v = rng.normal(size=3)
        x = {}
        if not 200 <= t < 210:  # old channels away for 10 instances
            x.update(a=v[0], b=v[1])
        if t >= 150:
            x.update(c=v[0] + v[1], d=v[2])
        model.learn_one(x, v[0] > 0)
        phases.append(getattr(model, "phase", None))  # PA has no phases
    assert phases[149] == "stable" and phases[150] == "overlap"
    assert set(phases[200:210]) == {"evolved"}
    # Back to the overlap; after 150 instances with both sets, c and d are
    # taken for channels that were added.
    assert set(phases[210:309]) == {"overlap"}
    assert set(phases[309:]) == {"stable"}
    assert model.channel_sets() == (["a", "b", "c", "d"], [])


def test_after_the_old_set_is_released_new_channels_collapse_the_models():
    """The second period's predictor is linear in the new channels: after the
    collapse one PA-I model on them gives the same margin."""
    Z, y, names, _ = evolving(n=900, t1=600, overlap=10, noise=0.2)
    # Raw values: the channel statistics cannot move the probe's features.
    model = PAFE(C=0.1, vanish_after=50, learn_intercept=True, standardize=False)
    stream = list(iter_array(Z, y, names))
    for x, label in stream[:700]:
        model.learn_one(x, label)
    assert model.phase == "evolved" and model.ensemble_weights != (0.5, 0.5)
    probe = model.channels.transform(stream[700][0], False)
    before = model._score(*probe)[1]
    model.decide_one({**stream[700][0], "c0": 1.0})  # a channel of a third set
    assert model.phase == "overlap"
    assert model.channel_sets() == (names[4:], ["c0"])
    assert model._score(*probe)[1] == pytest.approx(before, rel=1e-9)


# -- no replacement pattern ------------------------------------------------------------


def markov_stream(n, seed, d=8, mean_on=150, mean_off=60):
    """Channels that switch on and off at random (runs of geometric length),
    some appearing for the first time late; the label is a fixed linear
    concept of all channels."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = rng.normal(size=d)
    y = X @ w + 0.3 * rng.normal(size=n) > 0
    on = rng.random(d) < 0.6
    first = rng.integers(0, n // 3, size=d)
    mask = np.zeros((n, d), dtype=bool)
    for t in range(n):
        flip = rng.random(d) < np.where(on, 1 / mean_on, 1 / mean_off)
        on ^= flip
        mask[t] = on & (t >= first)
    X[~mask] = np.nan
    return X, y


@pytest.mark.parametrize("stream", ["drop_features", "markov"])
def test_without_a_replacement_pattern_it_stays_within_one_percent_of_pa_i(stream):
    if stream == "drop_features":  # the PAACDS protocol: each instance loses up to half its channels
        rng = np.random.default_rng(8)
        X = rng.normal(size=(6000, 8))
        y = X @ rng.normal(size=8) + 0.3 * rng.normal(size=6000) > 0
        X = drop_features(X, alpha=0.5, seed=8)
    else:
        X, y = markov_stream(6000, 9)
    names = [f"ch{j}" for j in range(X.shape[1])]
    pa = prequential(PA(C=0.1, mode=1, learn_intercept=False), iter_array(X, y, names), active=False)
    for variant in ("PAFE-h", "PAFE-c", "PAFE-s"):
        model = PAFE(C=0.1, variant=variant, learn_intercept=False)
        result = prequential(model, iter_array(X, y, names), active=False)
        assert abs(result.accuracy - pa.accuracy) <= 0.01, (variant, result.accuracy, pa.accuracy)


# -- state ----------------------------------------------------------------------------


@pytest.mark.parametrize("variant", ["PAFE-h", "PAFE-c", "PAFE-s"])
@pytest.mark.parametrize("cut", [300, 595, 605, 900])
def test_state_round_trip_is_exact_in_every_phase(variant, cut):
    Z, y, names, _ = evolving(n=1200, t1=600, overlap=10, noise=0.2)
    stream = list(iter_array(Z, y, names))
    model = PAFE(C=0.1, variant=variant, learn_intercept=True, seed=3)
    for x, label in stream[:cut]:
        d = model.decide_one(x)
        model.learn(d.slots, d.z, label)
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(model.to_state())))
    for name, value in model.to_state()["learned"].items():
        again = restored.to_state()["learned"][name]
        if isinstance(value, np.ndarray):
            assert value.tobytes() == again.tobytes(), name
        else:  # the labels
            assert value == again, name
    assert restored.phase == model.phase

    def rest(m):
        out = []
        for x, label in stream[cut:]:
            d = m.decide_one(x)
            out.append((d.label, d.score, m.phase))
            m.learn(d.slots, d.z, label)
        return out

    assert rest(restored) == rest(model)


def test_memory_budget_matches_its_formula():
    model = PAFE(max_old=5, max_new=7, capacity=40)
    side = 7
    expected = 8 * (25 + 49 + 3 * 35 + side * side + 4 * (5 + 7)) + 4 * 12 + 54 * 40 + 112
    expected += 2 * 64  # its two labels
    assert model.memory_bytes() == expected + model.channels.memory_bytes()


def test_more_old_channels_than_the_maps_cover():
    """The maps cover the max_old old channels with the largest weights."""
    rng = np.random.default_rng(10)
    n, t1 = 1500, 800
    X = rng.normal(size=(n, 6))
    y = X @ np.array([3.0, 0.01, 2.0, 0.01, 1.0, 0.01]) > 0
    Z, _ = evolve_features(X, t1, 20, seed=11)
    names = [f"a{j}" for j in range(6)] + [f"b{j}" for j in range(6)]
    model = PAFE(C=0.1, max_old=3, max_new=4)
    correct, phases = run(model, Z, y, names)
    M1, M2, old, new = model.maps()
    assert old == ["a0", "a2", "a4"] and new == ["b0", "b1", "b2", "b3"]
    assert M1.shape == (3, 4) and phases[-1] == "evolved"
    assert set(model.channel_sets()[1]) == set(names[6:])  # b4, b5: in w2, not in the maps
    # The partial maps still carry the old model over: better than a new
    # model from scratch on the same detection.
    from_scratch, _ = run(PAFE(C=0.1, max_old=3, max_new=4, variant="NPA-r"), Z, y, names)
    assert correct[t1:].mean() > from_scratch[t1:].mean() + 0.01


# -- gateway --------------------------------------------------------------------------


def test_the_gateway_config_and_pipeline_run_pafe(tmp_path):
    """kind = "pafe" in a gateway.toml: the configuration validates, the
    pipeline serves a stream whose sensors are replaced, and a stream's
    checkpoint restores."""
    from firmware_bridge.service.config import load_config
    from firmware_bridge.wire import encode_data

    path = tmp_path / "gateway.toml"
    path.write_text('[learner]\nkind = "pafe"\n[learner.params]\ncapacity = 16\nC = 0.1\n'
                    'max_old = 4\nmax_new = 8\nvariant = "PAFE-s"\n')
    config, errors = load_config(path)
    assert errors == [] and config.learner_kind == "pafe"
    pipeline = config.make_pipeline()
    Z, y, names, _ = evolving(n=1200, t1=600, overlap=10)
    for seq, (x, label) in enumerate(iter_array(Z, y, names)):
        out = pipeline.handle("sensors/room/data", encode_data(float(seq), seq, x, label), 0.0)
        assert len(out) == 1  # a prediction; labels came with the data
    learner = pipeline.learner("room")
    assert learner.phase == "evolved" and learner.memory_bytes() == PAFE(**config.learner_params).memory_bytes()
    assert pipeline.metrics("room").n == 1200 and pipeline.metrics("room").accuracy > 0.9

    from edgelearn.state import dumps, loads

    restored = config.make_pipeline()
    restored.restore("room", loads(dumps(pipeline.to_state("room"))))
    assert restored.learner("room").phase == "evolved"
    probe = encode_data(1200.0, 1200, {n: float(v) for n, v in zip(names[4:], Z[-1, 4:])})
    assert restored.handle("sensors/room/data", probe, 0.0)[0].payload == \
        pipeline.handle("sensors/room/data", probe, 0.0)[0].payload
