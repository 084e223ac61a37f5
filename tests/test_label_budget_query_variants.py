"""tools/label_budget_query_variants.py: each query switch at its neutral value is the learner,
each changes which labels are asked within the budget, and the distance and the expected
model change are the plain ones."""

import math
import random

import numpy as np
import pytest

from edgelearn.evaluate import prequential
from results_pages import load_tool

BASE = {"refit_until": 160}  # the wired refit, as the learner is


def _stream(n=600, seed=3):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b, c = rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 1)
        x = {"a": a, "b": b, "c": c} if rng.random() > 0.3 else {"b": b, "c": c}
        out.append((x, a + b + 0.3 * rng.gauss(0, 1) > 0))
    return out


def _run(tool, variant):
    model = tool.Variant(variant, target_query_rate=0.1, seed=5, capacity=8)
    return model, prequential(model, _stream())


def test_neutral_switches_are_the_learner():
    tool = load_tool("label_budget_variants")
    _, a = _run(tool, BASE)
    for switch in ({"dens": 16, "dens_beta": 0.0}, {"div": 0.0}, {"emc": 0.0}, {"emc": 0.0, "emc_kind": "error"}):
        _, b = _run(tool, {**BASE, **switch})
        assert np.array_equal(a.predictions, b.predictions), switch
        assert np.array_equal(a.asked, b.asked), switch


def test_each_switch_changes_the_asked_labels_within_the_budget():
    tool = load_tool("label_budget_variants")
    _, a = _run(tool, BASE)
    for switch in ({"dens": 16}, {"dens": 16, "dens_width": 2.0}, {"div": 1.0}, {"emc": 1.0}, {"emc": 1.0, "emc_u": 0},
                   {"emc": 1.0, "emc_kind": "error"}):
        _, b = _run(tool, {**BASE, **switch})
        assert not np.array_equal(a.asked, b.asked), switch
        assert 0.08 < np.mean(b.asked) < 0.12, switch


def test_bad_sizes_name_the_switch():
    tool = load_tool("label_budget_variants")
    with pytest.raises(ValueError, match="dens must be an int of 1 or more; got 0"):
        tool.Variant({"dens": 0})
    with pytest.raises(ValueError, match="emc_kind must be 'change' or 'error'; got 'x'"):
        tool.Variant({"emc": 1.0, "emc_kind": "x"})


def test_shared_channel_distance_is_the_plain_one():
    query = load_tool("label_budget_query_variants")
    store = np.array([[0.0, np.nan, 1.0], [np.nan, np.nan, np.nan], [2.0, 1.0, np.nan]])
    d = query._similar_distance(store, 3, np.array([0, 1]), np.array([1.0, -1.0]))
    assert d[0] == 1.0  # channel 0 alone shared
    assert np.isnan(d[1])
    assert d[2] == (1.0 + 4.0) / 2


@pytest.mark.parametrize("kind", ["change", "error"])
def test_expected_model_change_is_the_plain_one(kind):
    # the score E of the last reading, recomputed from a copy of the belief stepped under each label
    tool = load_tool("label_budget_variants")
    query = load_tool("label_budget_query_variants")
    model, _ = _run(tool, {**BASE, "emc": 1.0, "emc_n": 8, "emc_kind": kind})
    x, _ = _stream(1, seed=11)[0]
    slots, z = model.channels.observe(x, True)
    model._observe(slots, z)
    model._score(slots, z)
    F = model._emc_f.copy()  # the reservoir before this reading joins it
    fs, fz = model._features(slots, z)
    ok = fs >= 0
    fs, fz = fs[ok].copy(), fz[ok].copy()
    m, v = float(model._m[0]), float(model._v[0])
    p = 0.5 * math.erfc(-m / math.sqrt(2 * (1 + v)))

    def probs(W, b):
        return query._phi((F @ W + b) / np.sqrt(1 + (F * F) @ model.S[0] + model.Sb[0]))

    before = probs(model.W[0], model.b[0])
    expected = np.mean(np.minimum(before, 1 - before)) if kind == "error" else 0.0
    for y, p_y in ((1.0, p), (-1.0, 1 - p)):
        alpha = max(0.0, 1 - y * m) / (v + model._r)
        W = model.W[0].copy()
        W[fs] += alpha * y * model.S[0, fs] * fz
        after = probs(W, model.b[0] + alpha * y * model.Sb[0])
        if kind == "error":
            expected -= p_y * np.mean(np.minimum(after, 1 - after))
        else:
            expected += p_y * np.mean(np.abs(after - before))
    expected = max(expected, 1e-12)
    ref_sum, ref_n = model._emc_ref
    factor = model._emc_factor()
    mean = (ref_sum + expected) / (ref_n + 1)
    assert abs(factor - min(max(mean / expected, 1e-3), 1e3)) < 1e-9 * factor
    assert model._emc_ref[0] > 0  # the running mean counts a rise of the error as 1e-12
