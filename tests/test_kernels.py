"""Every jitted kernel against its plain reference in ``tests/naive.py``.

Arrays are built with the dtypes the learners use (int32 slots, int64
counts, bool masks, C-contiguous float64) so the tests run the same compiled
specializations as the package, from numba's cache.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import naive
from edgelearn.kernels import channels as CH
from edgelearn.kernels import pa as PA
from edgelearn.kernels import paacds as K
from edgelearn.kernels import replay as R
from edgelearn.kernels.rate_control import new_query_state
from edgelearn.kernels.rng import new_state, next_double, next_uint64

RTOL = 1e-12
FEW = settings(max_examples=60, deadline=None)


def close(got, expected, rtol=RTOL):
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=0.0)


def instance(rng, capacity, k, scale=2.0):
    slots = rng.choice(capacity, size=k, replace=False).astype(np.int32)
    return slots, rng.normal(size=k) * scale


def new_stats(capacity):
    return {
        "count": np.zeros(capacity, dtype=np.int64),
        "mean": np.zeros(capacity),
        "var": np.zeros(capacity),
        "last_seen": np.full(capacity, -1, dtype=np.int64),
    }


def random_stats(rng, capacity):
    return {
        "count": rng.integers(0, 4, size=capacity).astype(np.int64),
        "mean": rng.normal(size=capacity),
        "var": rng.uniform(0.0, 3.0, size=capacity),
        "last_seen": rng.integers(-1, 50, size=capacity).astype(np.int64),
    }


def new_model(capacity, rows):
    return {
        "W": np.zeros((rows, capacity)),
        "b": np.zeros(rows),
        "active": np.zeros(capacity, dtype=np.bool_),
        "h": np.ones(capacity),
        "h_n": np.zeros(capacity, dtype=np.int64),
        "h_mean": np.zeros(capacity),
        "h_var": np.zeros(capacity),
    }


def random_model(rng, capacity, rows, p_active=0.5, n_slots=None, bias=False):
    """A reachable model: inactive slots carry zero weights (the kernels sum
    over them branch-free, relying on that); biases 0 unless ``bias``."""
    active = rng.random(capacity) < p_active
    if n_slots is not None:
        active[n_slots:] = False
    return {
        "W": rng.normal(size=(rows, capacity)) * active,
        "b": rng.normal(size=rows) if bias else np.zeros(rows),
        "active": active,
        "h": rng.uniform(0.05, 2.0, size=capacity),
        "h_n": rng.integers(0, 40, size=capacity).astype(np.int64),
        "h_mean": rng.normal(size=capacity) * 0.3,
        "h_var": rng.uniform(0.0, 2.0, size=capacity),
    }


def copy_state(state):
    return {key: value.copy() for key, value in state.items()}


def assert_state(got, expected, rtol=RTOL):
    assert got.keys() == expected.keys()
    for key in got:
        if got[key].dtype.kind in "biu":
            np.testing.assert_array_equal(got[key], expected[key], err_msg=key)
        else:
            np.testing.assert_allclose(got[key], expected[key], rtol=rtol, atol=0.0, err_msg=key)


def seeds(n, base=0):
    return [np.random.default_rng([base, i]) for i in range(n)]


# -- rng ----------------------------------------------------------------------


def test_splitmix64_known_outputs():
    # Published first outputs of SplitMix64 seeded with 0: ties the
    # reference itself to the algorithm, not only to the kernel.
    state = new_state(0)
    assert [int(next_uint64(state)) for _ in range(3)] == [
        0xE220A8397B1DCDAF,
        0x6E789E6AA1B965F4,
        0x06C45D188009454F,
    ]
    s, outputs = 0, []
    for _ in range(3):
        s, z = naive.splitmix64(s)
        outputs.append(z)
    assert outputs == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]


@FEW
@given(st.integers(0, 2**64 - 1))
def test_splitmix64_and_uniform_match(seed):
    state = new_state(seed)
    ref = seed
    for _ in range(4):
        ref, z = naive.splitmix64(ref)
        assert int(next_uint64(state)) == z
        assert int(state[0]) == ref
    for _ in range(4):
        ref, u = naive.uniform(ref)
        got = next_double(state)
        assert got == u and 0.0 <= got < 1.0
        assert int(state[0]) == ref


def test_new_state_wraps_seed_to_64_bits():
    assert int(new_state(2**64 + 5)[0]) == 5
    assert int(new_state(2**64 - 1)[0]) == 2**64 - 1


# -- channels ---------------------------------------------------------------------


@pytest.mark.parametrize("forget", [0.0, 0.05])
@pytest.mark.parametrize("scale", [True, False])
def test_observe_standardize_matches(forget, scale):
    for rng in seeds(30, 1):
        capacity = 8
        stats = random_stats(rng, capacity)
        k = int(rng.integers(0, capacity + 1))
        slots, values = instance(rng, capacity, k, scale=5.0)
        t = int(rng.integers(0, 100))
        got = copy_state(stats)
        vals = values.copy()
        CH.observe_standardize(
            slots, vals, k, got["count"], got["mean"], got["var"], got["last_seen"], t, forget, 1e-8, 3.0, scale
        )
        z, expected = naive.observe(slots, values, stats, t, forget, 1e-8, 3.0)
        assert_state(got, expected)
        close(vals, z if scale else values)


def test_observe_one_returns_z_and_reads_only_first_k():
    rng = np.random.default_rng(7)
    stats = random_stats(rng, 6)
    slots = np.array([4, 1, 2, 0, 0], dtype=np.int32)  # the tail past k is garbage
    values = rng.normal(size=5) * 4
    got = copy_state(stats)
    vals = values.copy()
    CH.observe_standardize(slots, vals, 3, got["count"], got["mean"], got["var"], got["last_seen"], 9, 0.0, 1e-8, 5.0, True)
    z, expected = naive.observe(slots[:3], values[:3], stats, 9, 0.0, 1e-8, 5.0)
    assert_state(got, expected)
    close(vals[:3], z)
    assert np.array_equal(vals[3:], values[3:])

    one = copy_state(stats)
    zj = CH.observe_one(2, 1.5, one["count"], one["mean"], one["var"], one["last_seen"], 4, 0.1, 1e-8, 5.0)
    z1, expected1 = naive.observe(np.array([2]), np.array([1.5]), stats, 4, 0.1, 1e-8, 5.0)
    assert zj == pytest.approx(z1[0], rel=RTOL, abs=0.0)
    assert_state(one, expected1)


@pytest.mark.parametrize("forget", [0.0, 0.02, 0.3])
def test_running_moments_equal_their_batch_definition(forget):
    # Welford (forget 0) must give np.mean / np.var; with forgetting, the
    # weighted moments the steps max(1/n, forget) define.
    rng = np.random.default_rng(11)
    xs = rng.normal(3.0, 2.0, size=120)
    stats = new_stats(1)
    slot = np.zeros(1, dtype=np.int32)
    zs = []
    for t, x in enumerate(xs):
        vals = np.array([x])
        CH.observe_standardize(slot, vals, 1, stats["count"], stats["mean"], stats["var"], stats["last_seen"], t, forget, 1e-8, 1e9, True)
        zs.append(vals[0])
    steps = [naive.channel_step(n, forget) for n in range(1, len(xs) + 1)]
    mean, var = naive.batch_moments(xs, steps)
    assert stats["mean"][0] == pytest.approx(mean, rel=1e-9)
    assert stats["var"][0] == pytest.approx(var, rel=1e-9)
    if forget == 0.0:
        assert stats["mean"][0] == pytest.approx(np.mean(xs), rel=1e-9)
        assert stats["var"][0] == pytest.approx(np.var(xs), rel=1e-9)
    assert zs[0] == 0.0  # one observation: no scale yet
    assert zs[-1] == pytest.approx((xs[-1] - mean) / math.sqrt(var + 1e-8), rel=1e-9)
    assert stats["count"][0] == len(xs) and stats["last_seen"][0] == len(xs) - 1


def test_z_is_clipped_and_zero_below_two_observations():
    stats = new_stats(2)
    slots = np.array([0, 1], dtype=np.int32)

    def observe(t, a, b):
        vals = np.array([a, b])
        CH.observe_standardize(slots, vals, 2, stats["count"], stats["mean"], stats["var"], stats["last_seen"], t, 0.0, 1e-8, 2.5, True)
        return vals.tolist()

    assert observe(0, 100.0, -3.0) == [0.0, 0.0]
    # The statistics include x itself, so |z| <= sqrt(n - 1): clipping at 2.5
    # needs n >= 8.
    for t in range(1, 10):
        observe(t, 100.0 + 0.01 * t, -3.0 - 0.01 * t)
    assert observe(10, 1e6, -1e6) == [2.5, -2.5]


def test_standardize_read_only_with_unknown_slots():
    for rng in seeds(30, 2):
        capacity = 7
        stats = random_stats(rng, capacity)
        k = int(rng.integers(0, capacity + 1))
        slots, values = instance(rng, capacity, k, scale=4.0)
        slots[rng.random(k) < 0.3] = -1
        before = copy_state(stats)
        vals = values.copy()
        CH.standardize(slots, vals, k, stats["count"], stats["mean"], stats["var"], 1e-8, 3.0)
        close(vals, naive.standardize(slots, values, stats, 1e-8, 3.0))
        assert_state(stats, before)  # learns nothing
        assert np.all(vals[slots < 0] == 0.0)


def test_claim_slot_matches():
    for rng in seeds(200, 3):
        capacity = int(rng.integers(1, 8))
        # few distinct values: ties in last_seen, and the tie goes to the lowest slot
        last_seen = rng.integers(-1, 4, size=capacity).astype(np.int64)
        n_assigned = int(rng.integers(0, capacity + 1))
        t = int(rng.integers(0, 8))
        evict_after = int(rng.integers(1, 6))
        got = CH.claim_slot(last_seen, n_assigned, t, evict_after)
        assert got == naive.claim_slot(last_seen, n_assigned, t, evict_after)


def test_claim_slot_edges():
    last_seen = np.array([5, 2, 2, 7], dtype=np.int64)
    assert CH.claim_slot(last_seen, 2, 9, 100) == 2  # a free slot first
    assert CH.claim_slot(last_seen, 4, 9, 7) == 1  # absent exactly evict_after
    assert CH.claim_slot(last_seen, 4, 9, 8) == -1


def test_reset_slot_matches():
    rng = np.random.default_rng(4)
    stats = random_stats(rng, 5)
    got = copy_state(stats)
    CH.reset_slot(3, got["count"], got["mean"], got["var"], got["last_seen"])
    assert_state(got, naive.reset_slot(stats, 3))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 2000), min_size=1, max_size=12),
    st.integers(0, 12),
    st.floats(1e-4, 1.5, allow_nan=False),
)
def test_information_steady_is_every_slots_constant_step(h_n, n_slots, h_forget):
    """The dense step drops ``1 / n`` only when ``information_one`` would take the
    constant step ``h_forget`` for every slot in use (``n * h_forget >= 1``, n = h_n + 1)."""
    n_slots = min(n_slots, len(h_n))
    counts = np.array(h_n, dtype=np.int64)
    expected = n_slots > 0 and all((c + 1) * h_forget >= 1.0 for c in h_n[:n_slots])
    assert R.information_steady(counts, n_slots, h_forget) == expected


def test_gather_row_never_gives_one_row_the_same_slot_twice():
    # docs/learners.md, ChannelSpace: a slot is recycled only from a channel
    # absent for at least evict_after instances.  Here a device is replaced:
    # channel 2 goes silent, then two new channels (3, 4) arrive in one row
    # while channels 0 and 1 are still reporting.  Channel 3 may take channel
    # 2's stale slot; channel 4 must then be ignored (no other slot is stale),
    # not handed the slot channel 3 has just taken in this same row.
    nan = np.nan
    X = np.array([[1.0, 2.0, 3.0, nan, nan]] * 3 + [[1.0, 2.0, nan, nan, nan]] * 8 + [[1.0, 2.0, nan, 4.0, 5.0]])
    capacity, evict_after = 3, 5
    col_slot = np.full(X.shape[1], -1, dtype=np.int64)
    slot_col = np.full(capacity, -1, dtype=np.int64)
    changed = np.zeros(capacity, dtype=np.int8)
    counters = np.zeros(4, dtype=np.int64)  # t, n_assigned, n_ignored, n_evicted
    stats = new_stats(capacity)
    slots = np.empty(X.shape[1], dtype=np.int32)
    vals = np.empty(X.shape[1])
    for i in range(X.shape[0]):
        k = R.gather_row(
            X, i, col_slot, slot_col, changed, slots, vals, counters,
            stats["count"], stats["mean"], stats["var"], stats["last_seen"], evict_after,
        )
        CH.observe_standardize(
            slots, vals, k, stats["count"], stats["mean"], stats["var"], stats["last_seen"],
            int(counters[0]), 0.0, 1e-8, 5.0, False,
        )
        counters[0] += 1
        taken = slots[:k].tolist()
        assert len(set(taken)) == len(taken), f"row {i} got slots {taken} for columns present {np.flatnonzero(np.isfinite(X[i])).tolist()}"
    assert counters[3] == 1 and counters[2] == 1  # one recycled, one ignored


# -- PAACDS: scoring ------------------------------------------------------------


def _unknown(rng, slots, p=0.25):
    slots = slots.copy()
    slots[rng.random(len(slots)) < p] = -1
    return slots


def test_confidences_matches():
    for rng in seeds(80, 5):
        capacity = 9
        model = random_model(rng, capacity, 1, p_active=rng.choice([0.0, 0.5, 1.0]))
        k = int(rng.integers(0, capacity + 1))
        slots, _ = instance(rng, capacity, k)
        if rng.random() < 0.3:
            slots = _unknown(rng, slots)
        if rng.random() < 0.2:
            model["h"][:] = 0.0
        got = K.confidences(slots, k, model["active"], model["h"])
        expected = naive.confidences(slots, model["active"], model["h"])
        close(np.array(got), np.array(expected))


def test_confidences_edges():
    active = np.array([True, True, False, False])
    slots = np.array([0, 2, 3], dtype=np.int32)
    assert K.confidences(slots[:0], 0, active, np.ones(4)) == (0.0, 1.0)  # empty instance
    # zero information total: shares by count
    assert K.confidences(slots, 3, active, np.zeros(4)) == pytest.approx((1 / 3, 2 / 3), rel=RTOL)
    assert K.confidences(slots[1:], 2, active, np.ones(4)) == (0.0, 1.0)  # all new
    assert K.confidences(np.array([0, 1], dtype=np.int32), 2, active, np.ones(4)) == (1.0, 0.0)  # all shared
    # an unknown channel is new, with information 1
    h = np.array([3.0, 1.0, 1.0, 1.0])
    assert K.confidences(np.array([0, -1], dtype=np.int32), 2, active, h) == pytest.approx((0.75, 0.25), rel=RTOL)


@pytest.mark.parametrize("rows", [1, 4])
def test_scores_matches(rows):
    for rng in seeds(60, 6):
        capacity = 10
        model = random_model(rng, capacity, rows, p_active=rng.choice([0.0, 0.4, 1.0]))
        k = int(rng.integers(0, capacity + 1))
        slots, z = instance(rng, capacity, k)
        if rng.random() < 0.4:
            slots = _unknown(rng, slots)
        if rng.random() < 0.1:
            model["h"][:] = 0.0
        out = np.full(rows, np.nan)
        p_s = K.scores(slots, z, k, model["W"], model["b"], model["active"], model["h"], out)
        expected, p_ref = naive.scores(slots, z, model)
        assert p_s == pytest.approx(p_ref, rel=RTOL, abs=0.0)
        close(out, expected)


@FEW
@given(
    st.lists(st.sampled_from([-1.0, 0.0, 0.5, 2.0]), min_size=3, max_size=6),
    st.integers(0, 6),
)
def test_top_two_matches(values, n_known):
    out = np.array(values)
    n_known = min(n_known, len(values))
    got = K.top_two(out, n_known, len(values))
    assert tuple(int(v) for v in got) == naive.top_two(out, n_known, len(values))


def test_top_two_edges():
    out = np.array([0.3, 0.9, -1.0, 5.0])
    assert K.top_two(out, 0, 4) == (0, -1)  # nothing known yet
    assert K.top_two(out, 1, 4) == (0, 1)  # runner-up: the stand-in unused row
    assert K.top_two(out, 4, 4) == (3, 1)  # all rows known: no stand-in
    assert K.top_two(np.array([1.0, 1.0, 1.0]), 3, 3) == (0, 1)  # ties: lowest row


# -- PAACDS: information -------------------------------------------------------------


@pytest.mark.parametrize("forget", [0.0, 0.01, 0.4])
def test_update_information_matches(forget):
    for rng in seeds(40, 7):
        capacity = 8
        model = random_model(rng, capacity, 1)
        k = int(rng.integers(0, capacity + 1))
        slots, z = instance(rng, capacity, k)
        got = copy_state(model)
        K.update_information(slots, z, k, got["h"], got["h_n"], got["h_mean"], got["h_var"], forget, 5.0)
        assert_state(got, naive.update_information(slots, z, model, forget, 5.0))


def test_information_is_shrunk_variance_of_z():
    # Batch check of the short-horizon variance and the k0 = 5 prior: a
    # constant (stuck) channel drifts toward 0, a fresh one starts at 1.
    rng = np.random.default_rng(8)
    forget = 1.0 - 2.0 ** (-1.0 / 20.0)
    zs = rng.normal(0.0, 1.7, size=150)
    model = new_model(1, 1)
    slot = np.zeros(1, dtype=np.int32)
    for zj in zs:
        K.update_information(slot, np.array([zj]), 1, model["h"], model["h_n"], model["h_mean"], model["h_var"], forget, 5.0)
    steps = [naive.information_step(n, forget) for n in range(1, len(zs) + 1)]
    _, var = naive.batch_moments(zs, steps)
    assert model["h"][0] == pytest.approx((5.0 + 150 * var) / 155.0, rel=1e-9)

    stuck = new_model(1, 1)
    for _ in range(400):
        K.update_information(slot, np.array([2.0]), 1, stuck["h"], stuck["h_n"], stuck["h_mean"], stuck["h_var"], forget, 5.0)
    assert stuck["h"][0] == pytest.approx(5.0 / 405.0, rel=1e-12)


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("forget", [0.0, 0.05])
def test_observe_scores_is_observe_then_score_then_inform(rows, forget):
    for rng in seeds(40, 9):
        capacity = 9
        stats = random_stats(rng, capacity)
        model = random_model(rng, capacity, rows, p_active=rng.choice([0.0, 0.5, 1.0]))
        k = int(rng.integers(0, capacity + 1))
        slots, values = instance(rng, capacity, k, scale=3.0)
        t = int(rng.integers(0, 60))
        h_forget = float(rng.choice([0.0, 0.02, 0.5]))
        got_stats, got_model = copy_state(stats), copy_state(model)
        vals = values.copy()
        out = np.full(rows, np.nan)
        p_s = K.observe_scores(
            slots, vals, k, got_stats["count"], got_stats["mean"], got_stats["var"], got_stats["last_seen"],
            t, forget, 1e-8, 4.0, got_model["W"], got_model["b"], got_model["active"], got_model["h"], got_model["h_n"],
            got_model["h_mean"], got_model["h_var"], h_forget, 5.0, out,
        )
        z, expected_out, p_ref, stats_ref, model_ref = naive.observe_scores(
            slots, values, stats, t, forget, 1e-8, 4.0, model, h_forget, 5.0
        )
        close(vals, z)
        close(out, expected_out)
        assert p_s == pytest.approx(p_ref, rel=RTOL, abs=0.0)
        assert_state(got_stats, stats_ref)
        assert_state(got_model, model_ref)


# -- PAACDS: query ------------------------------------------------------------------


def test_draw_query_matches():
    rng = np.random.default_rng(10)
    state = new_state(123)
    ref = 123
    asked = 0
    for _ in range(500):
        margin = float(rng.normal() * 3)
        delta = float(rng.choice([1.0, 2.5, 50.0]))
        got = K.draw_query(margin, delta, state)
        expected, ref = naive.draw_query(margin, delta, ref)
        assert bool(got) == expected
        assert int(state[0]) == ref
        asked += got
    assert 0 < asked < 500
    assert K.draw_query(0.0, 1.0, state)  # |q| = 0: probability 1


def test_adapt_delta_matches():
    for delta in [1e-3, 0.5, 1.0, 7.0, 1e6]:
        for asked in [False, True]:
            for target in [0.1, 0.5, 1.0]:
                for gain in [0.1, 0.5, 30.0]:
                    got = K.adapt_delta(delta, asked, target, gain)
                    assert got == pytest.approx(naive.adapt_delta(delta, asked, target, gain), rel=RTOL, abs=0.0)
    assert K.adapt_delta(1e6, False, 0.5, 5.0) == 1e6
    assert K.adapt_delta(1e-3, True, 0.1, 5.0) == 1e-3


# -- PAACDS: learning -------------------------------------------------------------------


def _learn_binary_case(rng, capacity, model, k, variant_i, C, y, learn_intercept=False):
    slots, z = instance(rng, capacity, k)
    got = copy_state(model)
    changed = K.learn_binary(slots, z, k, y, got["W"], got["b"], got["active"], got["h"], C, variant_i, learn_intercept)
    expected, changed_ref = naive.learn_binary(slots, z, y, model, C, variant_i, learn_intercept)
    assert bool(changed) == changed_ref
    assert_state(got, expected)
    return got


@pytest.mark.parametrize("variant_i", [False, True])
@pytest.mark.parametrize("p_active", [0.0, 0.5, 1.0])
def test_learn_binary_matches(variant_i, p_active):
    for rng in seeds(40, 12):
        capacity = 10
        model = random_model(rng, capacity, 1, p_active=p_active)
        if rng.random() < 0.15:
            model["h"][:] = 0.0
        k = int(rng.integers(0, capacity + 1))
        C = float(rng.choice([0.01, 1.0, 100.0]))
        y = float(rng.choice([-1.0, 1.0]))
        _learn_binary_case(rng, capacity, model, k, variant_i, C, y)


def test_learn_binary_edges():
    rng = np.random.default_rng(13)
    # empty instance: loss 1 but nothing to move
    _learn_binary_case(rng, 6, random_model(rng, 6, 1), 0, False, 1.0, 1.0)
    _learn_binary_case(rng, 6, random_model(rng, 6, 1), 0, True, 1.0, -1.0)
    # all new on an empty model: w_n = tau y z with tau = min(C, 1 / ||z||^2)
    model = new_model(4, 1)
    slots = np.array([2, 0], dtype=np.int32)
    z = np.array([0.5, -1.0])
    assert K.learn_binary(slots, z, 2, -1.0, model["W"], model["b"], model["active"], model["h"], 1.0, False, False)
    tau = min(1.0, 1.0 / 1.25)
    close(model["W"][0], [tau, 0.0, -0.5 * tau, 0.0])
    assert model["active"].tolist() == [True, False, True, False]
    # a correct prediction with margin >= 1 changes nothing
    model = new_model(2, 1)
    model["W"][0] = [2.0, 0.0]
    model["active"][0] = True
    before = copy_state(model)
    assert not K.learn_binary(slots[1:], np.array([1.0]), 1, 1.0, model["W"], model["b"], model["active"], model["h"], 1.0, False, False)
    assert_state(model, before)
    # new slots whose z is 0 (fewer than 2 observations) still join the model
    model = new_model(3, 1)
    assert K.learn_binary(np.array([1], dtype=np.int32), np.array([0.0]), 1, 1.0, model["W"], model["b"], model["active"], model["h"], 1.0, False, False)
    assert model["active"].tolist() == [False, True, False] and np.all(model["W"] == 0.0)


@pytest.mark.parametrize("variant_i", [False, True])
def test_learn_multiclass_matches(variant_i):
    rows = 4
    for rng in seeds(60, 14):
        capacity = 9
        model = random_model(rng, capacity, rows, p_active=rng.choice([0.0, 0.5, 1.0]))
        if rng.random() < 0.1:
            model["h"][:] = 0.0
        n_known = int(rng.choice([0, 1, 2, rows]))
        y = 0 if n_known == 0 else int(rng.integers(0, n_known))
        k = int(rng.integers(0, capacity + 1))
        slots, z = instance(rng, capacity, k)
        C = float(rng.choice([0.05, 1.0, 20.0]))
        got = copy_state(model)
        out = np.full(rows, np.nan)
        changed = K.learn_multiclass(slots, z, k, y, n_known, got["W"], got["b"], got["active"], got["h"], C, variant_i, False, out)
        expected, changed_ref, out_ref = naive.learn_multiclass(slots, z, y, n_known, model, C, variant_i)
        assert bool(changed) == changed_ref
        assert_state(got, expected)
        close(out, out_ref)


def test_learn_multiclass_edges():
    z = np.array([1.0, -2.0])
    slots = np.array([0, 3], dtype=np.int32)
    # n_known 0: no other row to push away
    model = new_model(4, 3)
    assert not K.learn_multiclass(slots, z, 2, 0, 0, model["W"], model["b"], model["active"], model["h"], 1.0, False, False, np.zeros(3))
    assert not model["active"].any()
    # n_known 1: the stand-in row 1 is pushed away, row 2 untouched
    model = new_model(4, 3)
    assert K.learn_multiclass(slots, z, 2, 0, 1, model["W"], model["b"], model["active"], model["h"], 1.0, False, False, np.zeros(3))
    tau = min(1.0, 1.0 / (2 * 5.0))
    close(model["W"][0], [tau, 0, 0, -2 * tau])
    close(model["W"][1], [-tau, 0, 0, 2 * tau])
    assert np.all(model["W"][2] == 0.0)
    # all rows known: the runner-up among the others, lowest on ties
    model = new_model(4, 3)
    expected, _, _ = naive.learn_multiclass(slots, z, 2, 3, model, 1.0, True)
    K.learn_multiclass(slots, z, 2, 2, 3, model["W"], model["b"], model["active"], model["h"], 1.0, True, False, np.zeros(3))
    assert_state(model, expected)
    assert np.any(model["W"][0] != 0.0) and np.all(model["W"][1] == 0.0)


# -- PAACDS: intercept -------------------------------------------------------------------


@pytest.mark.parametrize("rows", [1, 4])
def test_scores_add_the_bias(rows):
    for rng in seeds(40, 30):
        capacity = 8
        model = random_model(rng, capacity, rows, p_active=rng.choice([0.0, 0.5, 1.0]), bias=True)
        k = int(rng.integers(0, capacity + 1))
        slots, z = instance(rng, capacity, k)
        if rng.random() < 0.3:
            slots = _unknown(rng, slots)
        out = np.full(rows, np.nan)
        K.scores(slots, z, k, model["W"], model["b"], model["active"], model["h"], out)
        expected, _ = naive.scores(slots, z, model)
        close(out, expected)
        # the bias is added after the p_s weighting: an empty instance scores b
        K.scores(slots[:0], z[:0], 0, model["W"], model["b"], model["active"], model["h"], out)
        assert out.tolist() == model["b"].tolist()


@pytest.mark.parametrize("rows", [1, 3])
def test_observe_scores_adds_the_bias(rows):
    for rng in seeds(30, 31):
        capacity = 9
        stats = random_stats(rng, capacity)
        model = random_model(rng, capacity, rows, p_active=rng.choice([0.0, 0.5, 1.0]), bias=True)
        k = int(rng.integers(0, capacity + 1))
        slots, values = instance(rng, capacity, k, scale=3.0)
        got_stats, got_model = copy_state(stats), copy_state(model)
        vals = values.copy()
        out = np.full(rows, np.nan)
        K.observe_scores(
            slots, vals, k, got_stats["count"], got_stats["mean"], got_stats["var"], got_stats["last_seen"],
            5, 0.0, 1e-8, 4.0, got_model["W"], got_model["b"], got_model["active"], got_model["h"],
            got_model["h_n"], got_model["h_mean"], got_model["h_var"], 0.02, 5.0, out,
        )
        z, expected_out, _, stats_ref, model_ref = naive.observe_scores(
            slots, values, stats, 5, 0.0, 1e-8, 4.0, model, 0.02, 5.0
        )
        close(vals, z)
        close(out, expected_out)
        assert_state(got_model, model_ref)


@pytest.mark.parametrize("variant_i", [False, True])
@pytest.mark.parametrize("learn_intercept", [False, True])
@pytest.mark.parametrize("p_active", [0.0, 0.5, 1.0])
def test_learn_binary_with_bias_matches(variant_i, learn_intercept, p_active):
    for rng in seeds(40, 32):
        capacity = 10
        model = random_model(rng, capacity, 1, p_active=p_active, bias=True)
        if rng.random() < 0.15:
            model["h"][:] = 0.0
        k = int(rng.integers(0, capacity + 1))
        C = float(rng.choice([0.01, 1.0, 100.0]))
        y = float(rng.choice([-1.0, 1.0]))
        got = _learn_binary_case(rng, capacity, model, k, variant_i, C, y, learn_intercept)
        if not learn_intercept:  # a given bias is used but never moved
            assert got["b"].tolist() == model["b"].tolist()


def test_learn_binary_bias_edges():
    # an empty instance: only the bias can move, by tau y with tau = min(C, 1 / 1)
    model = new_model(3, 1)
    empty = np.zeros(0, dtype=np.int32)
    assert K.learn_binary(empty, np.zeros(0), 0, -1.0, model["W"], model["b"], model["active"], model["h"], 1.0, False, True)
    assert model["b"].tolist() == [-1.0] and not model["active"].any()
    # PAACDS-I: tau = min(C, l / (1 + 1/(2C))); margin -1 for y = +1 gives l = 2
    model = new_model(3, 1)
    model["b"][0] = -1.0
    K.learn_binary(empty, np.zeros(0), 0, 1.0, model["W"], model["b"], model["active"], model["h"], 10.0, True, True)
    assert model["b"][0] == pytest.approx(-1.0 + 2.0 / 1.05, rel=RTOL)
    # the bias is a shared feature of value 1: all-new z = (0.5, -1) on an
    # empty model, y = -1, loss 1, tau = min(C, 1 / (1.25 + 1))
    model = new_model(4, 1)
    slots = np.array([2, 0], dtype=np.int32)
    z = np.array([0.5, -1.0])
    assert K.learn_binary(slots, z, 2, -1.0, model["W"], model["b"], model["active"], model["h"], 1.0, False, True)
    tau = 1.0 / 2.25
    close(model["W"][0], [tau, 0.0, -0.5 * tau, 0.0])
    close(model["b"], [-tau])
    # after the step the margin of that instance moved toward y: q = p_s w.z + b
    out = np.zeros(1)
    K.scores(slots, z, 2, model["W"], model["b"], model["active"], model["h"], out)
    assert out[0] < 0.0
    # a margin >= 1 from the bias alone: no update
    model = new_model(2, 1)
    model["b"][0] = 1.5
    assert not K.learn_binary(slots[1:], np.array([0.7]), 1, 1.0, model["W"], model["b"], model["active"], model["h"], 1.0, False, True)
    assert model["b"][0] == 1.5 and not model["active"].any()


@pytest.mark.parametrize("variant_i", [False, True])
@pytest.mark.parametrize("learn_intercept", [False, True])
def test_learn_multiclass_with_bias_matches(variant_i, learn_intercept):
    rows = 4
    for rng in seeds(60, 33):
        capacity = 9
        model = random_model(rng, capacity, rows, p_active=rng.choice([0.0, 0.5, 1.0]), bias=True)
        n_known = int(rng.choice([0, 1, 2, rows]))
        y = 0 if n_known == 0 else int(rng.integers(0, n_known))
        k = int(rng.integers(0, capacity + 1))
        slots, z = instance(rng, capacity, k)
        C = float(rng.choice([0.05, 1.0, 20.0]))
        got = copy_state(model)
        out = np.full(rows, np.nan)
        changed = K.learn_multiclass(
            slots, z, k, y, n_known, got["W"], got["b"], got["active"], got["h"], C, variant_i, learn_intercept, out
        )
        expected, changed_ref, out_ref = naive.learn_multiclass(slots, z, y, n_known, model, C, variant_i, learn_intercept)
        assert bool(changed) == changed_ref
        assert_state(got, expected)
        close(out, out_ref)
        # the update moves the biases by +tau and -tau: their sum is kept
        assert got["b"].sum() == pytest.approx(model["b"].sum(), abs=1e-12)


def test_learn_multiclass_bias_edges():
    # empty instance, one known class: row 0 gets +tau, the stand-in row 1
    # -tau, tau = min(C, 1 / (2 * 1)); row 2 untouched
    model = new_model(3, 3)
    empty = np.zeros(0, dtype=np.int32)
    assert K.learn_multiclass(empty, np.zeros(0), 0, 0, 1, model["W"], model["b"], model["active"], model["h"], 1.0, False, True, np.zeros(3))
    assert model["b"].tolist() == [0.5, -0.5, 0.0]
    # with features: denominator 2 (||z||^2 + 1)
    model = new_model(4, 3)
    slots = np.array([0, 3], dtype=np.int32)
    z = np.array([1.0, -2.0])
    K.learn_multiclass(slots, z, 2, 0, 1, model["W"], model["b"], model["active"], model["h"], 1.0, False, True, np.zeros(3))
    tau = 1.0 / (2 * 6.0)
    close(model["W"][0], [tau, 0, 0, -2 * tau])
    close(model["b"], [tau, -tau, 0.0])


def test_sparsify_and_forget_leave_the_bias_alone():
    rng = np.random.default_rng(34)
    for rows in (1, 3):
        model = random_model(rng, 8, rows, p_active=1.0, bias=True)
        before = model["b"].copy()
        idx_buf, score_buf = K.allocate_scratch(8)
        K.sparsify(model["W"], model["active"], model["h"], np.arange(8.0), 8, 0.1, 0.25, 8, idx_buf, score_buf)
        K.forget_slot(3, model["W"], model["active"], model["h"], model["h_n"], model["h_mean"], model["h_var"])
        assert model["b"].tolist() == before.tolist()


# -- PAACDS: sparsity -------------------------------------------------------------------


def _sparsify_case(model, n_slots, lam, B, max_weights, tie_key=None):
    capacity = model["W"].shape[1]
    tie_key = np.arange(float(capacity)) if tie_key is None else tie_key
    idx_buf, score_buf = K.allocate_scratch(capacity)
    got = copy_state(model)
    K.sparsify(got["W"], got["active"], got["h"], tie_key, n_slots, lam, B, max_weights, idx_buf, score_buf)
    expected = naive.sparsify(model, n_slots, lam, B, max_weights, tie_key)
    assert_state(got, expected)
    return got


@pytest.mark.parametrize("rows", [1, 3])
def test_sparsify_matches(rows):
    for rng in seeds(80, 15):
        capacity = 16
        n_slots = int(rng.integers(1, capacity + 1))
        model = random_model(rng, capacity, rows, p_active=rng.uniform(0, 1), n_slots=n_slots)
        lam = float(rng.choice([0.0, 0.3, 5.0, 1e9]))
        B = float(rng.choice([0.1, 0.5, 0.64, 1.0]))
        max_weights = int(rng.integers(1, capacity + 1))
        _sparsify_case(model, n_slots, lam, B, max_weights)


@FEW
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from([-1.0, 0.0, 0.5, 1.0]), st.sampled_from([0.0, 0.5, 1.0])),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([0.1, 0.5, 0.64, 1.0]),
    st.integers(1, 12),
    st.sampled_from([0.0, 0.7]),
)
def test_sparsify_ties_go_to_the_smaller_key(slots, B, max_weights, lam):
    # Few distinct weights and informations: many exact ties in |w| h; the
    # keys (hashes of channel names in the learner) in slot order and shuffled.
    active = np.array([a for a, _, _ in slots])
    model = new_model(len(slots), 1)
    model["active"] = active
    model["W"][0] = np.array([w for _, w, _ in slots]) * active
    model["h"] = np.array([h for _, _, h in slots])
    _sparsify_case(model, len(slots), lam, B, max_weights)
    keys = np.random.default_rng(len(slots)).permutation(len(slots)).astype(np.float64) * 1e6
    _sparsify_case(model, len(slots), lam, B, max_weights, tie_key=keys)


def test_sparsify_edges():
    # max_weights below ceil(B n): the cap wins
    model = new_model(6, 1)
    model["active"][:] = True
    model["W"][0] = [0.1, -3.0, 2.0, 0.5, -1.0, 0.2]
    got = _sparsify_case(model, 6, 0.0, 1.0, 2)
    assert got["active"].tolist() == [False, True, True, False, False, False]
    # lam scaling on: sum |w| h = 6.8 > 3.4 halves every weight before ranking
    got = _sparsify_case(model, 6, 3.4, 1.0, 6)
    close(got["W"][0], model["W"][0] * 0.5)
    # all scores tie: keep the lowest ceil(B n) slots
    model = new_model(5, 1)
    model["active"][:] = True
    model["W"][0] = 1.0
    got = _sparsify_case(model, 5, 0.0, 0.5, 5)
    assert got["active"].tolist() == [True, True, True, False, False]
    # nothing active, and a single active slot: K = max(1, ...) keeps it
    _sparsify_case(new_model(4, 1), 4, 0.0, 0.5, 4)
    model = new_model(4, 2)
    model["active"][2] = True
    model["W"][:, 2] = [0.0, -4.0]
    assert _sparsify_case(model, 4, 1.0, 0.01, 4)["active"].tolist() == [False, False, True, False]
    # zero information everywhere: scaling has nothing to divide by
    model = new_model(3, 1)
    model["active"][:] = True
    model["W"][0] = [1.0, 2.0, 3.0]
    model["h"][:] = 0.0
    _sparsify_case(model, 3, 0.5, 0.64, 3)


def _kth_case(values, kth):
    n = len(values)
    buf = np.zeros(2 * n)
    buf[:n] = values
    got = K.kth_largest(buf, n, kth)
    assert got == naive.kth_largest(values, kth)
    assert np.array_equal(buf[:n], values)  # only the scratch half is reordered


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.25, 1.0, 3.0, 7.5]), min_size=1, max_size=20), st.data())
def test_kth_largest_with_ties(values, data):
    _kth_case(np.array(values), data.draw(st.integers(1, len(values))))


def test_kth_largest_random_and_ordered():
    for rng in seeds(40, 16):
        n = int(rng.integers(1, 60))
        values = rng.normal(size=n)
        for arranged in (values, np.sort(values), np.sort(values)[::-1].copy(), np.full(n, 2.0)):
            for kth in {1, n, int(rng.integers(1, n + 1))}:
                _kth_case(arranged, kth)


@pytest.mark.parametrize("rows", [1, 3])
def test_forget_slot_matches(rows):
    rng = np.random.default_rng(17)
    model = random_model(rng, 6, rows, p_active=1.0)
    got = copy_state(model)
    K.forget_slot(4, got["W"], got["active"], got["h"], got["h_n"], got["h_mean"], got["h_var"])
    assert_state(got, naive.forget_slot(model, 4))


# -- PA ----------------------------------------------------------------------------------


def test_pa_margin_skips_unknown_slots():
    for rng in seeds(40, 18):
        capacity = 8
        w = rng.normal(size=capacity)
        intercept = np.array([rng.normal()])
        k = int(rng.integers(0, capacity + 1))
        slots, x = instance(rng, capacity, k)
        slots = _unknown(rng, slots, 0.3)
        got = PA.margin(slots, x, k, w, intercept)
        assert got == pytest.approx(naive.pa_margin(slots, x, w, intercept[0]), rel=RTOL, abs=0.0)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("learn_intercept", [True, False])
def test_pa_learn_matches(mode, learn_intercept):
    for rng in seeds(50, 19):
        capacity = 8
        w = rng.normal(size=capacity) * 0.5
        intercept = np.array([rng.normal() * 0.3])
        k = int(rng.integers(0, capacity + 1))
        slots, x = instance(rng, capacity, k)
        if rng.random() < 0.1:
            x[:] = 0.0
        y = float(rng.choice([-1.0, 1.0]))
        C = float(rng.choice([0.01, 1.0, 10.0]))
        got_w, got_b = w.copy(), intercept.copy()
        step = PA.learn(slots, x, k, y, got_w, got_b, C, mode, learn_intercept)
        w_ref, b_ref, step_ref = naive.pa_learn(slots, x, y, w, intercept[0], C, mode, learn_intercept)
        assert step == pytest.approx(step_ref, rel=RTOL, abs=0.0)
        close(got_w, w_ref)
        assert got_b[0] == pytest.approx(b_ref, rel=RTOL, abs=0.0)


def test_pa_forget_slot():
    w = np.arange(4.0)
    PA.forget_slot(2, w)
    assert w.tolist() == [0.0, 1.0, 0.0, 3.0]


# -- PAACDS: a whole stream, kernels and references side by side ------------------------------


SEQUENCE_CASES = [
    # rows, channel forget, variant_i, lam, B, max_weights, target query rate, learn_intercept
    (1, 0.0, False, 0.0, 0.64, 16, 0.0, False),
    (1, 0.02, True, 2.0, 0.64, 16, 0.2, False),
    (1, 0.0, False, 0.5, 0.9, 4, 0.0, False),
    (4, 0.02, False, 3.0, 0.8, 16, 0.3, False),
    (4, 0.0, True, 0.0, 0.64, 5, 0.0, False),
    (1, 0.0, False, 0.5, 0.64, 16, 0.2, True),
    (1, 0.02, True, 0.0, 0.9, 4, 0.0, True),
    (4, 0.02, False, 3.0, 0.8, 16, 0.3, True),
    (4, 0.0, True, 0.0, 0.64, 5, 0.0, True),
]


@pytest.mark.parametrize("case", SEQUENCE_CASES)
def test_stream_of_kernels_equals_stream_of_references(case):
    rows, forget, variant_i, lam, B, max_weights, target, bias = case
    rng = np.random.default_rng([SEQUENCE_CASES.index(case), 2024])
    capacity, d, steps = 16, 12, 300
    eps, z_max, k0, C, gain = 1e-8, 4.0, 5.0, 1.0, 0.5
    h_forget = 1.0 - 2.0 ** (-1.0 / 25.0)  # short half-life: both step regimes occur
    offsets = rng.normal(0, 20, size=d)
    scales = rng.uniform(0.1, 30, size=d)
    truth = rng.normal(size=(max(rows, 2), d))
    appears = np.sort(rng.integers(0, steps // 3, size=d))  # channels arrive over time

    stats_k, stats_r = new_stats(capacity), new_stats(capacity)
    model_k, model_r = new_model(capacity, rows), new_model(capacity, rows)
    out = np.zeros(rows)
    idx_buf, score_buf = K.allocate_scratch(capacity)
    rng_k, rng_r, budget_r = new_query_state(99), 99, (0, 0)
    delta_k = delta_r = 1.0
    n_known = 0
    asked_total = 0
    for t in range(steps):
        raw = rng.normal(size=d)
        present = (appears <= t) & (rng.random(d) > rng.uniform(0, 0.5))
        slots = rng.permutation(np.flatnonzero(present)).astype(np.int32)
        n_slots = int(np.sum(appears <= t))
        k = len(slots)
        values = offsets[slots] + scales[slots] * raw[slots]
        logits = truth @ raw
        y_bin = 1.0 if logits[0] > 0 else -1.0
        y_cls = int(np.argmax(logits[:rows]))

        if t % 97 == 96:  # a channel's slot is recycled
            gone = int(rng.integers(0, n_slots))
            if gone not in slots:
                CH.reset_slot(gone, stats_k["count"], stats_k["mean"], stats_k["var"], stats_k["last_seen"])
                K.forget_slot(gone, model_k["W"], model_k["active"], model_k["h"], model_k["h_n"], model_k["h_mean"], model_k["h_var"])
                stats_r = naive.reset_slot(stats_r, gone)
                model_r = naive.forget_slot(model_r, gone)

        z_k = values.copy()
        p_k = K.observe_scores(
            slots, z_k, k, stats_k["count"], stats_k["mean"], stats_k["var"], stats_k["last_seen"], t, forget,
            eps, z_max, model_k["W"], model_k["b"], model_k["active"], model_k["h"], model_k["h_n"], model_k["h_mean"],
            model_k["h_var"], h_forget, k0, out,
        )
        z_r, out_r, p_r, stats_r, model_r = naive.observe_scores(
            slots, values, stats_r, t, forget, eps, z_max, model_r, h_forget, k0
        )
        np.testing.assert_allclose(z_k, z_r, rtol=1e-9, atol=1e-12, err_msg=f"z at step {t}")
        np.testing.assert_allclose(out, out_r, rtol=1e-9, atol=1e-12, err_msg=f"scores at step {t}")
        assert p_k == pytest.approx(p_r, rel=1e-9, abs=1e-12)

        if rows == 1:
            q_k, q_r = out[0], out_r[0]
        else:
            best, runner = K.top_two(out, n_known, rows)
            assert (best, runner) == naive.top_two(out_r, n_known, rows), f"step {t}"
            q_k = 0.0 if runner < 0 else out[best] - out[runner]
            q_r = 0.0 if runner < 0 else out_r[best] - out_r[runner]
        ask, delta_k = K.query(q_k, delta_k, rng_k, target, gain)
        ask_r, delta_r, rng_r, budget_r = naive.query(q_r, delta_r, rng_r, budget_r, target, gain)
        assert bool(ask) == ask_r and int(rng_k[0]) == rng_r, f"query at step {t}"
        assert (int(rng_k[1]), int(rng_k[2])) == budget_r, f"budget at step {t}"
        assert delta_k == pytest.approx(delta_r, rel=1e-9)

        if ask:
            asked_total += 1
            if rows == 1:
                changed = K.learn_binary(
                    slots, z_k, k, y_bin, model_k["W"], model_k["b"], model_k["active"], model_k["h"], C, variant_i, bias
                )
                model_r, changed_r = naive.learn_binary(slots, z_r, y_bin, model_r, C, variant_i, bias)
            else:
                n_known = max(n_known, y_cls + 1)  # classes indexed in order of appearance, roughly
                changed = K.learn_multiclass(
                    slots, z_k, k, y_cls, n_known, model_k["W"], model_k["b"], model_k["active"], model_k["h"], C,
                    variant_i, bias, out,
                )
                model_r, changed_r, _ = naive.learn_multiclass(slots, z_r, y_cls, n_known, model_r, C, variant_i, bias)
            assert bool(changed) == changed_r, f"step {t}"
            if changed:
                K.sparsify(model_k["W"], model_k["active"], model_k["h"], np.arange(float(capacity)), n_slots, lam, B,
                           max_weights, idx_buf, score_buf)
                model_r = naive.sparsify(model_r, n_slots, lam, B, max_weights)

        for name, got, expected in (("stats", stats_k, stats_r), ("model", model_k, model_r)):
            for key in got:
                if got[key].dtype.kind in "biu":
                    np.testing.assert_array_equal(got[key], expected[key], err_msg=f"{name}.{key} at step {t}")
                else:
                    np.testing.assert_allclose(got[key], expected[key], rtol=1e-9, atol=1e-12, err_msg=f"{name}.{key} at step {t}")

    # the stream exercised what it is meant to
    assert 0 < asked_total < steps or target == 0.0
    assert model_k["active"].any()
    # the bias moved only if it is learned, and sparsity never touched it
    assert np.any(model_k["b"] != 0.0) == bias


@pytest.mark.parametrize("only_if_asked", [False, True])
@pytest.mark.parametrize("case", [c for c in SEQUENCE_CASES if c[0] == 1])
def test_decide_learn_binary_equals_the_references_in_turn(case, only_if_asked):
    """The gateway's one-call kernel (observe, score, ask, adapt, learn, sparsify)
    against the plain references of each step, on a stream where labels come and go."""
    _, forget, variant_i, lam, B, max_weights, target, bias = case
    rng = np.random.default_rng([SEQUENCE_CASES.index(case), 14])
    capacity, d, steps = 16, 12, 300
    eps, z_max, k0, C, gain = 1e-8, 4.0, 5.0, 1.0, 0.5
    h_forget = 1.0 - 2.0 ** (-1.0 / 25.0)
    offsets = rng.normal(0, 20, size=d)
    scales = rng.uniform(0.1, 30, size=d)
    truth = rng.normal(size=d)
    appears = np.sort(rng.integers(0, steps // 3, size=d))
    stats_k, stats_r = new_stats(capacity), new_stats(capacity)
    model_k, model_r = new_model(capacity, 1), new_model(capacity, 1)
    out = np.zeros(1)
    idx_buf, score_buf = K.allocate_scratch(capacity)
    tie_key = np.arange(float(capacity))
    rng_k, rng_r, budget_r = new_query_state(7), 7, (0, 0)
    delta_k = delta_r = 1.0
    n_learned = 0
    for t in range(steps):
        raw = rng.normal(size=d)
        present = (appears <= t) & (rng.random(d) > rng.uniform(0, 0.5))
        slots = rng.permutation(np.flatnonzero(present)).astype(np.int32)
        n_slots = int(np.sum(appears <= t))
        values = offsets[slots] + scales[slots] * raw[slots]
        y = 0.0 if rng.random() < 0.3 else (1.0 if truth @ raw > 0 else -1.0)  # 0: no label

        z_k = values.copy()
        margin, asked, delta_k, learned = K.decide_learn_binary(
            slots, z_k, len(slots), t, n_slots, delta_k, y, only_if_asked,
            stats_k["count"], stats_k["mean"], stats_k["var"], stats_k["last_seen"], forget, eps,
            z_max, model_k["W"], model_k["b"], model_k["active"], model_k["h"], model_k["h_n"],
            model_k["h_mean"], model_k["h_var"], h_forget, k0, out, rng_k, target > 0.0, target,
            gain, C, variant_i, bias, tie_key, lam, B, max_weights, idx_buf, score_buf,
        )
        z_r, out_r, _, stats_r, model_r = naive.observe_scores(
            slots, values, stats_r, t, forget, eps, z_max, model_r, h_forget, k0)
        ask_r, delta_r, rng_r, budget_r = naive.query(out_r[0], delta_r, rng_r, budget_r, target, gain)
        learned_r = y != 0.0 and (ask_r or not only_if_asked)
        if learned_r:
            model_r, changed_r = naive.learn_binary(slots, z_r, y, model_r, C, variant_i, bias)
            if changed_r:
                model_r = naive.sparsify(model_r, n_slots, lam, B, max_weights, tie_key)
        assert (bool(asked), bool(learned)) == (ask_r, learned_r), f"step {t}"
        assert margin == pytest.approx(out_r[0], rel=1e-9, abs=1e-12)
        assert delta_k == pytest.approx(delta_r, rel=1e-9)
        n_learned += learned_r
        np.testing.assert_allclose(z_k, z_r, rtol=1e-9, atol=1e-12, err_msg=f"z at step {t}")
        for name, got, expected in (("stats", stats_k, stats_r), ("model", model_k, model_r)):
            for key in got:
                if got[key].dtype.kind in "biu":
                    np.testing.assert_array_equal(got[key], expected[key], err_msg=f"{name}.{key} at step {t}")
                else:
                    np.testing.assert_allclose(got[key], expected[key], rtol=1e-9, atol=1e-12,
                                               err_msg=f"{name}.{key} at step {t}")
    assert 0 < n_learned < steps and model_k["active"].any()
