"""ActiveAROW's multiclass terms of issue 26 (``novelty``, ``logit_adjustment``,
``refit_passes``): the kernels against plain references, the learner against the
variant tool that measured them (``B'`` of ``tools/label_budget_multiclass_variants.py``),
the jitted row loop against ``decide_one`` and ``learn`` bit for bit, state, merges and
the parameters' errors. (The refit's passes are checked against ``naive.arow_refit`` in
``test_arow_refit.py``; the live pipeline's replay, with these defaults, there too.)"""

import random

import numpy as np
import pytest

import edgelearn
import naive
from edgelearn import ActiveAROW
from edgelearn import state as checkpoint
from edgelearn.kernels import arow as K
from edgelearn.kernels import arow_multiclass as MK
from edgelearn.learners.arow import bin_edges

REFIT = dict(refit_until=160, refit_labels=32)
OFF = dict(novelty=0.0, logit_adjustment=0.0, refit_passes=1)
#: what the variant tool measured as B' on top of the refit R (docs/learners.md)
MEASURED_R = {"refit": [10, 20, 40, 80, 160], "refit_z": 1, "refit_cap": 32}
MEASURED_B_PRIME = {**MEASURED_R, "novelty": 5.0, "novelty_until": 1, "novelty_ref": "stream", "refit_epochs": 2,
                    "logit_adj": 0.1}


@pytest.mark.parametrize("seed", range(12))
def test_prediction_and_novelty_kernels_match_the_references(seed):
    rng = np.random.default_rng([261, seed])
    capacity, n_bins, n_rows = 9, [0, 3][seed % 2], 5
    n_known = int(rng.integers(0, n_rows + 1))
    weight = [0.0, 0.3][seed // 2 % 2]
    novelty, adjustment = [0.0, 5.0, 2.0][seed % 3], [0.0, 0.1, 0.7][seed // 3 % 3]
    k = int(rng.integers(0, capacity + 1))
    slots = rng.choice(capacity, size=k, replace=False).astype(np.int32)
    z = rng.normal(0, 1.5, size=k)
    f_slots, f_z = np.zeros(capacity * (1 + n_bins), np.int32), np.zeros(capacity * (1 + n_bins))
    n = K.expand(slots, z, k, bin_edges(n_bins), np.full((capacity, n_bins), 1.0 / max(n_bins, 1)), capacity,
                 f_slots, f_z)
    f_slots, f_z = f_slots[:n], f_z[:n]  # the channels first, then their bins (the distance reads no bin)
    sums = rng.normal(0, 3, size=(n_rows, capacity))
    counts = rng.integers(0, 4, size=n_rows).astype(float)  # some classes known without a label
    m = rng.normal(size=n_rows)
    margin = float(rng.normal())
    got = m.copy()
    best, got_margin, distance = MK.multiclass_prediction(f_slots, f_z, k, capacity, sums, counts, n_known, weight,
                                                          novelty, adjustment, got, margin)
    expected = naive.arow_logit_adjust(naive.arow_add_class_means(f_slots, f_z, capacity, sums, counts, n_known,
                                                                  weight, m), counts, n_known, adjustment)
    np.testing.assert_allclose(got[:n_known], expected[:n_known], rtol=1e-12, atol=1e-12)
    if n_known == 0:
        assert (best, got_margin, distance) == (-1, margin, -1.0)
        return
    order = sorted(range(n_known), key=lambda c: -expected[c])
    assert best == order[0]
    if weight or (adjustment and n_known >= 2):
        gap = expected[order[0]] - (expected[order[1]] if n_known > 1 else 0.0)
        assert got_margin == pytest.approx(gap, rel=1e-9, abs=1e-12)
    else:
        assert got_margin == margin
    reference = naive.arow_class_mean_distance(f_slots, f_z, capacity, sums, counts, n_known) if novelty else -1.0
    assert distance == pytest.approx(reference, rel=1e-9, abs=1e-12)
    # the query's term: over several readings, stats carried
    stats = np.array([float(rng.uniform(0, 3)), 2.0])
    ref_stats = list(stats)
    for d in (distance, 0.1, 7.5, -1.0):
        u = float(rng.uniform(0.1, 3))
        got_u = MK.novelty_query(u, d, stats, novelty, n_known, n_rows, counts)
        ref_u, ref_stats = naive.arow_novelty_query(u, d, ref_stats, novelty, n_known, n_rows, counts)
        assert got_u == pytest.approx(ref_u, rel=1e-12)
        np.testing.assert_allclose(stats, ref_stats, rtol=1e-12)


def test_the_class_means_distance_does_not_depend_on_their_weight():
    """``add_class_means`` gives the nearest class mean's distance (the novelty term's) at any
    weight, and at weight 0 adds nothing to the margins."""
    rng = np.random.default_rng(5)
    slots, z = np.arange(7, dtype=np.int32), rng.normal(size=7)
    sums, counts = rng.normal(size=(4, 7)), np.array([2.0, 0.0, 1.0, 3.0])
    a, b = np.zeros(4), np.zeros(4)
    d_a = K.add_class_means(slots, z, 7, 7, sums, counts, 4, 0.3, a)
    d_b = K.add_class_means(slots, z, 7, 7, sums, counts, 4, 0.0, b)
    assert b.tobytes() == np.zeros(4).tobytes() and a.tobytes() != b.tobytes()
    assert d_a == d_b == pytest.approx(naive.arow_class_mean_distance(slots, z, 7, sums, counts, 4), rel=1e-12)


def _stream(n, seed, n_classes):
    """Three channels, some missing; the classes by a score's quantiles, the last class
    rare and outlying (the case the novelty term is for)."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        rare = i > 40 and rng.random() < 0.04
        a, b, c = rng.gauss(4 if rare else 0, 1), rng.gauss(10, 4), rng.gauss(-3, 0.5)
        x = {"a": a, "b": b, "c": c}
        if i and rng.random() < 0.3:
            del x[rng.choice("bc")]
        score = (b - 10) / 4 - (c + 3) * 2
        y = n_classes - 1 if rare else min(int(score > -1) + int(score > 1), n_classes - 2)
        out.append((x, y))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("n_classes", [3, 4])
def test_the_learner_is_the_measured_b_prime(seed, n_classes):
    """The defaults (``novelty`` 5, ``refit_passes`` 2, ``logit_adjustment`` 0.1) with
    ``refit_until=160, refit_labels=32`` predict and ask as the variant tool's B' on top
    of its refit R, every reading (the tool runs its switches on the learner with the
    three terms off)."""
    from results_pages import load_tool

    from edgelearn.evaluate import prequential

    tool = load_tool("label_budget_variants")
    stream = _stream(1200, seed, n_classes)
    params = dict(target_query_rate=0.1, seed=seed + 3, n_classes=n_classes, capacity=8)
    wired = prequential(ActiveAROW(**REFIT, **params), stream)
    measured = prequential(tool.Variant(MEASURED_B_PRIME, **params), stream)  # on the learner with the terms off
    off = prequential(ActiveAROW(**REFIT, **params, **OFF), stream)
    assert np.array_equal(wired.predictions, measured.predictions)
    assert np.array_equal(wired.asked, measured.asked)
    assert not np.array_equal(wired.asked, off.asked)  # the novelty term asked otherwise
    assert not np.array_equal(wired.predictions, off.predictions)


def test_a_binary_learner_is_untouched():
    """The three terms are multiclass: a binary learner's defaults change nothing (one
    refit pass, no novelty statistics)."""
    stream = [(x, y == 1) for x, y in _stream(600, 4, 3)]
    a = ActiveAROW(target_query_rate=0.1, seed=1, **REFIT)
    b = ActiveAROW(target_query_rate=0.1, seed=1, **REFIT, **OFF)
    for x, y in stream:
        d, e = a.decide_one(x), b.decide_one(x)
        assert (d.label, d.ask, d.score.hex()) == (e.label, e.ask, e.score.hex())
        if d.ask:
            a.learn(d.slots, d.z, y)
            b.learn(e.slots, e.z, y)
    assert a.novelty_stats.size == 0 and a._refit_passes == 1
    assert ActiveAROW(n_classes=3)._refit_passes == 2 and ActiveAROW(n_classes=3, refit_passes=3)._refit_passes == 3


@pytest.mark.parametrize("target, learn_if_asked", [(0.1, True), (None, False)])
def test_run_rows_is_decide_one_and_learn_bit_for_bit(target, learn_if_asked):
    """The jitted multiclass loop with the three terms: the same queries, margins and
    state (novelty statistics included) as ``decide_one`` then ``learn``, passes cut
    inside the refits' span, rows resumed after NEED_CLASS; and the novelty term did
    divide some reading's ``u`` (the asks differ with it off)."""
    from test_arow_refit import _early_rows
    from test_fast_path import _per_message

    from edgelearn.learners.arrays import RowsPass

    params = dict(capacity=6, evict_after=10, n_classes=4, target_query_rate=target, seed=7, **REFIT)
    X, names, codes, labels = _early_rows(500, seed=11, n_labels=5)
    reference, jitted = ActiveAROW(**params), ActiveAROW(**params)
    expected = _per_message(reference, X, names, codes, labels, learn_if_asked)
    cuts = [0, 9, 10, 31, 80, 81, 200, 500]
    got = [jitted.run_rows(RowsPass(X[a:b], names, codes[a:b], labels, learn_if_asked, True))
           for a, b in zip(cuts, cuts[1:])]
    assert np.concatenate([g.asked for g in got]).tolist() == expected["asked"]
    assert np.concatenate([g.margins for g in got]).tobytes() == np.array(expected["margin"]).tobytes()
    assert sum(len(g.label_states) - 1 for g in got) >= 3  # rows resumed with a new class
    a, b = reference.to_state()["learned"], jitted.to_state()["learned"]
    for name, value in a.items():
        if isinstance(value, np.ndarray):
            assert value.tobytes() == b[name].tobytes(), name
        else:
            assert value == b[name], name
    assert jitted.novelty_stats[1] > 0
    off = ActiveAROW(**params, **{**OFF, "refit_passes": 2, "logit_adjustment": 0.1})
    if target is not None:
        assert _per_message(off, X, names, codes, labels, learn_if_asked)["asked"] != expected["asked"]


def test_state_saves_loads_and_an_old_state_predicts_as_before():
    stream = _stream(500, 3, 4)
    model = ActiveAROW(seed=2, target_query_rate=0.1, n_classes=4, **REFIT)
    plain = ActiveAROW(seed=2, target_query_rate=0.1, n_classes=4, **REFIT, **OFF)
    for x, y in stream[:40]:  # mid-refits, a class without a label yet
        for m in (model, plain):
            d = m.decide_one(x)
            if d.ask:
                m.learn(d.slots, d.z, y)
    assert model.novelty_stats[1] > 0 and len(model.targets.labels) < 4  # the term is on
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(model.to_state())))
    old = plain.to_state()  # as a state saved before the terms: no such params or arrays
    for name in ("novelty", "logit_adjustment", "refit_passes"):
        del old["params"][name]
    del old["learned"]["novelty_stats"]
    loaded = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(old)))
    assert (loaded.novelty, loaded.logit_adjustment, loaded._refit_passes) == (0.0, 0.0, 1)
    for x, y in stream[40:]:
        for a, b in ((model, restored), (plain, loaded)):
            d, e = a.decide_one(x), b.decide_one(x)
            assert (d.label, d.ask, d.score.hex()) == (e.label, e.ask, e.score.hex())
            if d.ask:
                a.learn(d.slots, d.z, y)
                b.learn(e.slots, e.z, y)
    assert restored.novelty_stats.tobytes() == model.novelty_stats.tobytes()


def test_a_merge_shares_neither_class_counts_nor_novelty_statistics():
    """The class means, their counts (the logit adjustment's priors) and the novelty
    statistics are the learner's own: a contribution carries none of them, and a learner
    started from a group has none; with no class of its own labelled, its novelty term
    is off (no class mean to be far from) until it learns labels itself."""
    stream = _stream(400, 5, 3)
    teacher = ActiveAROW(seed=1, target_query_rate=0.5, n_classes=3)
    for x, y in stream:
        teacher.learn_one(x, y)
    for x, _ in stream[:50]:
        teacher.decide_one(x)
    assert teacher.novelty_stats[1] > 0
    contribution = teacher.contribution()
    assert not any("novelty" in key or "class_counts" in key for key in contribution)
    student = ActiveAROW.from_group(ActiveAROW.merge([contribution]), seed=3, n_classes=3)
    assert not student.novelty_stats.any() and not student.class_counts.any()
    d = student.decide_one(stream[0][0])
    assert student._distance == -1.0 and student.novelty_stats[1] == 0  # no class mean of its own
    student.learn(d.slots, d.z, stream[0][1])
    student.decide_one(stream[1][0])
    assert student.novelty_stats[1] == 1


@pytest.mark.parametrize("param,value,error", [
    ("novelty", -1.0, ValueError), ("novelty", "5", TypeError), ("logit_adjustment", -0.1, ValueError),
    ("refit_passes", 0, ValueError), ("refit_passes", 1.5, TypeError),
])
def test_bad_parameters_are_named(param, value, error):
    with pytest.raises(error) as info:
        ActiveAROW(**{param: value})
    assert str(info.value).startswith(f"The '{param}' parameter of ActiveAROW must be ")
    assert str(info.value).endswith(f"Got {value!r}.")


def test_refit_passes_on_a_binary_learner_every_path():
    """``refit_passes`` given to a binary learner: the one-call path (``decide_and_learn``,
    the pipeline's ``decide_learn_claimed``), ``decide_one`` then ``learn`` and the jitted
    row loop give the same asks, margins and state, bit for bit; and two passes are not one."""
    from test_arow_refit import _early_rows
    from test_fast_path import _per_message

    from edgelearn.learners.arrays import RowsPass

    params = dict(capacity=6, evict_after=10, target_query_rate=0.3, seed=4, refit_passes=2, **REFIT)
    X, names, codes, labels = _early_rows(300, seed=3, n_labels=2)
    split, fused, jitted = ActiveAROW(**params), ActiveAROW(**params), ActiveAROW(**params)
    expected = _per_message(split, X, names, codes, labels, True)
    margins, asked = [], []
    for i in range(X.shape[0]):
        x = {name: float(v) for name, v in zip(names, X[i]) if np.isfinite(v)}
        y = labels[int(codes[i])] if codes[i] >= 0 else None
        d, _ = fused.decide_and_learn(x, y, only_if_asked=True)
        margins.append(d.score)
        asked.append(d.ask)
    got = [jitted.run_rows(RowsPass(X[a:b], names, codes[a:b], labels, True, True)) for a, b in ((0, 35), (35, 300))]
    assert asked == expected["asked"] == np.concatenate([g.asked for g in got]).tolist()
    assert np.array(margins).tobytes() == np.array(expected["margin"]).tobytes()
    assert np.concatenate([g.margins for g in got]).tobytes() == np.array(expected["margin"]).tobytes()
    for other in (fused, jitted):
        for name, value in split.to_state()["learned"].items():
            if isinstance(value, np.ndarray):
                assert value.tobytes() == other.to_state()["learned"][name].tobytes(), name
    one = ActiveAROW(**{**params, "refit_passes": 1})
    _per_message(one, X, names, codes, labels, True)
    assert not np.array_equal(one.W, split.W)
