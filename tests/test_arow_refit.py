"""ActiveAROW's refit of the first labels (``refit_until``, ``refit_labels``; issue 26):
its kernels against plain references, the learner against the variant that measured
it (``tools/label_budget_variants.py``), every per-message path and the jitted row loops
alike, and its state, merges and memory."""

import random

import numpy as np
import pytest

import edgelearn
import naive
from edgelearn import ActiveAROW
from edgelearn import state as checkpoint
from edgelearn.kernels import arow as K
from edgelearn.learners import arow as arow_learner

REFIT = dict(refit_until=160, refit_labels=32)
MEASURED = {"refit": [10, 20, 40, 80, 160], "refit_z": 1, "refit_cap": 32}


@pytest.mark.parametrize("seed", range(12))
def test_keep_and_refit_match_the_references(seed):
    rng = np.random.default_rng([26, seed])
    binary, intercept = seed % 2 == 0, seed % 3 != 0
    capacity, n_bins, labels = 10, [0, 3, 8][seed % 3], 6
    rows = 1 if binary else 4
    passes = 1 + seed // 4 % 2  # refit_passes 1 and 2, binary and multiclass
    n_known = 1 if binary else int(rng.integers(2, rows + 1))
    eps, z_max, r, floor = 1e-8, 3.0, [1.0, 80.0][seed % 2], [0.0, 0.3][seed % 4 // 2]
    stats = {"count": rng.integers(0, 9, size=capacity), "mean": rng.normal(0, 5, size=capacity),
             "var": rng.uniform(0, 9, size=capacity), "last_seen": np.zeros(capacity, np.int64)}
    freq = rng.dirichlet(np.ones(max(n_bins, 1)), size=capacity)[:, :n_bins].copy()
    edges = arow_learner.bin_edges(n_bins)
    kept, kept_y, n = np.zeros((labels, capacity)), np.zeros(labels), np.array([0])
    ref_kept, ref_y, ref_n = kept.copy(), kept_y.copy(), 0
    for i in range(labels + 1):  # one more than the buffer holds: the refits end
        k = int(rng.integers(0, capacity + 1))
        slots = rng.choice(capacity, size=k, replace=False).astype(np.int32)
        z = rng.normal(0, 2, size=k)
        y = float(rng.choice([-1.0, 1.0])) if binary else float(rng.integers(0, n_known))
        K.keep_for_refit(slots, z, k, y, stats["mean"], stats["var"], eps, kept, kept_y, n)
        ref_kept, ref_y, ref_n = naive.arow_keep_for_refit(slots, z, y, stats, eps, ref_kept, ref_y, ref_n)
        assert n[0] == ref_n
        np.testing.assert_allclose(kept, ref_kept, rtol=1e-12, atol=1e-15)
        np.testing.assert_array_equal(kept_y, ref_y)
    assert n[0] == -1
    features = capacity * (1 + n_bins)
    model = {"W": rng.normal(size=(rows, features)), "S": rng.uniform(0.1, 1, size=(rows, features)),
             "b": rng.normal(size=rows), "Sb": rng.uniform(0.1, 1, size=rows) if intercept else np.zeros(rows)}
    sums, counts = rng.normal(size=(0 if binary else rows, capacity)), rng.uniform(1, 3, size=0 if binary else rows)
    got = {key: value.copy() for key, value in model.items()}
    got_sums, got_counts = sums.copy(), counts.copy()
    K.refit(kept, kept_y, labels, stats["count"], stats["mean"], stats["var"], eps, z_max, edges, freq, capacity,
            np.zeros(capacity, np.int32), np.zeros(capacity), np.zeros(features, np.int32), np.zeros(features),
            got["W"], got["S"], got["b"], got["Sb"], 1.0, 1.0 if intercept else 0.0, r, floor, binary, n_known,
            got_sums, got_counts, passes)
    expected, ref_sums, ref_counts = naive.arow_refit(kept, kept_y, labels, stats, eps, z_max, edges, freq, capacity,
                                                      model, r, floor, binary, n_known, sums, counts, passes)
    for key in model:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-12, atol=1e-15, err_msg=key)
    np.testing.assert_allclose(got_sums, ref_sums, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(got_counts, ref_counts)
    assert np.any(got["W"] != 0.0)  # the kept labels were learned again


def _stream(n, seed, n_classes=2):
    """Every channel in the first reading (slots in the readings' order), then some missing."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        a, b, c = rng.gauss(0, 1), rng.gauss(10, 4), rng.gauss(-3, 0.5)
        x = {"a": a, "b": b, "c": c}
        if i and rng.random() < 0.3:
            del x[rng.choice("abc")]
        score = a + (b - 10) / 4 - (c + 3) * 2
        y = score > 0.3 if n_classes == 2 else int(score > -1) + int(score > 1)
        out.append((x, y))
    return out


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_learner_is_the_measured_variant(n_classes, seed):
    """``refit_until=160, refit_labels=32`` predicts and asks as the variant tool's
    ``{"refit": [10, 20, 40, 80, 160], "refit_z": 1, "refit_cap": 32}``, every reading.
    (Two differences, absent from this stream: the learner runs a refit after a claim that
    recycles a slot, the variant before it; and the learner sums a kept reading's
    channels in slot order, the variant in the reading's, which can change the last bits
    when the two differ.)"""
    from results_pages import load_tool

    from edgelearn.evaluate import prequential

    tool = load_tool("label_budget_variants")
    stream = _stream(1200, seed, n_classes)
    # the multiclass terms of B' off (tests/test_arow_multiclass_terms.py measures them)
    params = dict(target_query_rate=0.1, seed=seed + 3, n_classes=n_classes, capacity=8,
                  novelty=0.0, logit_adjustment=0.0, refit_passes=1)
    wired = prequential(ActiveAROW(**REFIT, **params), stream)
    measured = prequential(tool.Variant(MEASURED, **params), stream)
    off = prequential(ActiveAROW(refit_until=0, **params), stream)
    assert np.array_equal(wired.predictions, measured.predictions)
    assert np.array_equal(wired.asked, measured.asked)
    assert not np.array_equal(wired.predictions, off.predictions)  # the refits changed something


def test_learn_one_and_decide_and_learn_are_decide_one_then_learn():
    """Every per-message path runs the refits alike: ``decide_and_learn`` (the one-call
    kernel with the refit before it and the keep after it) and ``decide_one`` then
    ``learn`` give the same margins, queries and final state, bit for bit; ``learn_one``
    learns what ``decide_one`` then ``learn`` of every label does."""
    stream = _stream(600, 5)
    params = dict(target_query_rate=0.2, seed=8, capacity=8, evict_after=30, **REFIT)
    fused, split = ActiveAROW(**params), ActiveAROW(**params)
    every, one = ActiveAROW(**params), ActiveAROW(**params)
    for i, (x, y) in enumerate(stream):
        if i % 50 == 25:
            x = {**x, f"new{i}": 1.0}  # a channel that takes a slot, recycled later
        d, learned = fused.decide_and_learn(x, y, only_if_asked=True)
        e = split.decide_one(x)
        if e.ask:
            split.learn(e.slots, e.z, y)
        assert (d.label, d.ask, learned, d.score.hex()) == (e.label, e.ask, e.ask, e.score.hex())
        f = every.decide_one(x)
        every.learn(f.slots, f.z, y)
        one.learn_one(x, y)
    assert fused.channels.n_evicted > 0
    for a, b in ((fused, split), (every, one)):
        for name, array in a.to_state()["learned"].items():
            if b is one and name in ("rng_state", "threshold"):
                continue  # learn_one draws no query
            np.testing.assert_array_equal(array, b.to_state()["learned"][name], err_msg=name)
    assert fused.refit_count[0] == -1 and every.refit_count[0] == -1  # over after reading 160


def _early_rows(n: int, seed: int, n_labels: int):
    """A stream's rows whose slots are recycled within the refits' span: 4 channels,
    then a new name every 20 rows from row 15 on, each present for 8 rows (with
    ``capacity=6, evict_after=10`` each takes the slot of one gone), labels on 70% of
    the rows drawn from ``n_labels`` labels (more than a learner of 3 classes holds)."""
    rng = np.random.default_rng([26, seed])
    names = [f"c{j}" for j in range(4)] + [f"new{i}" for i in range(15, n, 20)]
    X = np.full((n, len(names)), np.nan)
    X[:, :4] = rng.normal(size=(n, 4)) * [1.0, 3.0, 0.5, 2.0] + [0.0, 10.0, -3.0, 1.0]
    X[:, :4][rng.random((n, 4)) < 0.2] = np.nan
    for j, first in enumerate(range(15, n, 20)):
        X[first:first + 8, 4 + j] = rng.normal(size=min(8, n - first))
    labels = ["a", "b", "c", "d", "e"][:n_labels]
    score = np.nan_to_num(X[:, 0] + (X[:, 1] - 10.0) / 3.0)
    code = np.digitize(score, np.linspace(-1.5, 1.5, n_labels - 1)).astype(float)
    code[rng.random(n) < 0.3] = -1.0
    return X, names, code, labels


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("refit_labels", [32, 6])
@pytest.mark.parametrize("target, learn_if_asked", [(0.2, True), (None, False)])
def test_run_rows_refits_as_decide_one_and_learn_bit_for_bit(n_classes, refit_labels, target, learn_if_asked):
    """The jitted row loops (``run_rows``: replay's ``"log_loop"``, the gateway's
    ``"batch_pass"``) refit and keep as ``decide_one`` and ``learn`` do, reading by
    reading: the same queries, margins, features and learned state, refit buffers and
    query state included, with slots recycled in the refits' span, passes cut inside it
    (before, at and after refit points), a label whose side or class is new stopping the
    loop and resuming, and (``refit_labels=6``) a label beyond the buffer ending the
    refits."""
    from test_fast_path import _per_message

    from edgelearn.learners.arrays import RowsPass

    params = dict(capacity=6, evict_after=10, n_classes=n_classes, target_query_rate=target, seed=5,
                  refit_until=160, refit_labels=refit_labels)
    X, names, codes, labels = _early_rows(400, seed=n_classes, n_labels=2 if n_classes == 2 else 5)
    reference, jitted = ActiveAROW(**params), ActiveAROW(**params)
    assert jitted.can("log_loop") and jitted.can("batch_pass") and jitted.why_not("log_loop") is None
    expected = _per_message(reference, X, names, codes, labels, learn_if_asked)
    cuts = [0, 7, 10, 11, 33, 40, 41, 150, 161, 400]
    got, evicted, kept_nan = [], {}, {}
    for a, b in zip(cuts, cuts[1:]):
        got.append(jitted.run_rows(RowsPass(X[a:b], names, codes[a:b], labels, learn_if_asked, True)))
        evicted[b] = jitted.channels.n_evicted
        kept_nan[b] = np.isnan(jitted.refit_values).any()
    assert evicted[150] >= 3  # slots recycled while the refits run
    assert np.concatenate([g.asked for g in got]).tolist() == expected["asked"]
    assert np.concatenate([g.margins for g in got]).tobytes() == np.array(expected["margin"]).tobytes()
    feats = [(g.feat_slots[i, :g.feat_k[i]], g.feat_z[i, :g.feat_k[i]]) for g in got for i in range(len(g.pred))]
    for (sa, za), (sb, zb) in zip(feats, expected["feat"]):
        assert sa.tolist() == sb.tolist() and za.tobytes() == zb.tobytes()
    a, b = reference.to_state(), jitted.to_state()
    for name, value in a["learned"].items():
        if isinstance(value, np.ndarray):
            assert value.tobytes() == b["learned"][name].tobytes(), name  # NaN included
        else:
            assert value == b["learned"][name], name
    for name, value in a["channels"].items():
        if isinstance(value, np.ndarray):
            assert value.tobytes() == b["channels"][name].tobytes(), name
    # what the test is about: recycles before reading 160, labels resumed, the refits over
    assert jitted.channels.t == 400
    assert sum(len(g.label_states) - 1 for g in got) >= (1 if n_classes == 2 else 3)
    assert jitted.refit_count[0] == -1 and not jitted._refitting
    if refit_labels == 32:  # every refit point ran with labels kept: the belief differs from no refits
        plain = ActiveAROW(**{**params, "refit_until": 0})
        plain.run_rows(RowsPass(X, names, codes, labels, learn_if_asked, False))
        assert not np.array_equal(plain.W, jitted.W)
        assert any(kept_nan.values())  # recycled slots cleared in kept rows (freed once the refits are over)


def test_run_rows_mid_refits_hands_over_to_the_per_message_path():
    """A pass that ends inside the refits' span leaves the learner as ``decide_one`` and
    ``learn`` would: the next readings, per message, go on bit for bit."""
    from test_fast_path import _per_message

    from edgelearn.learners.arrays import RowsPass

    params = dict(capacity=6, evict_after=10, target_query_rate=0.3, seed=2, **REFIT)
    X, names, codes, labels = _early_rows(240, seed=7, n_labels=2)
    reference, mixed = ActiveAROW(**params), ActiveAROW(**params)
    expected = _per_message(reference, X, names, codes, labels, True)
    mixed.run_rows(RowsPass(X[:55], names, codes[:55], labels, True, False))
    assert mixed._refitting and mixed.refit_count[0] > 0
    rest = _per_message(mixed, X[55:], names, codes[55:], labels, True)
    assert rest["asked"] == expected["asked"][55:]
    assert np.array(rest["margin"]).tobytes() == np.array(expected["margin"][55:]).tobytes()
    for name, value in reference.to_state()["learned"].items():
        if isinstance(value, np.ndarray):
            assert value.tobytes() == mixed.to_state()["learned"][name].tobytes(), name


@pytest.mark.parametrize("n_classes", [2, 3])
def test_replay_with_refits_is_jitted_and_equals_the_live_pipeline(n_classes):
    """``edgelearn replay``'s jitted log loop with refits, against the per-message
    pipeline, bit for bit (outputs, counters, metrics, learners' states); slots of the
    log's bursts of new names recycled while the refits run, chunks cut inside them."""
    from test_bulk_replay import _assert_same, _log_records, _pipeline

    from firmware_bridge.offline.replay import replay_records

    records = _log_records(n_classes, n=2000, label_kind="str" if n_classes == 2 else "many")
    live = _pipeline("from_data", "active_arow", n_classes=n_classes, **REFIT)
    bulk = _pipeline("from_data", "active_arow", n_classes=n_classes, **REFIT)
    ran = replay_records(live, records, jit=False, keep_predictions=True)
    jitted = replay_records(bulk, records, keep_predictions=True, chunk=45)
    assert set(jitted["paths"].values()) == {"jitted"}
    for name in live.streams:
        a, b = ran["outputs"][name], jitted["outputs"][name]
        assert a["ask"] == b["ask"] and a["y"] == b["y"]
        assert np.array_equal(np.array(a["score"]), np.array(b["score"]))
        assert bulk.learner(name).refit_count[0] == -1
    _assert_same(live, bulk)


def test_state_saves_loads_and_an_old_state_predicts_as_before():
    stream = _stream(400, 3)
    model = ActiveAROW(seed=2, target_query_rate=0.2, **REFIT)
    plain = ActiveAROW(seed=2, target_query_rate=0.2, refit_until=0)
    for x, y in stream[:70]:  # mid-refits: kept labels, refits at 80 and 160 still to come
        for m in (model, plain):
            d = m.decide_one(x)
            if d.ask:
                m.learn(d.slots, d.z, y)
    assert model.refit_count[0] > 0
    restored = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(model.to_state())))
    old = plain.to_state()  # as a state saved before the refit: no such params or arrays
    for name in ("refit_until", "refit_labels"):
        del old["params"][name]
    for name in ("refit_values", "refit_targets", "refit_count"):
        del old["learned"][name]
    loaded = edgelearn.from_state(checkpoint.loads(checkpoint.dumps(old)))
    assert loaded.refit_until == 0 and loaded.refit_count.size == 0 and loaded.can("log_loop")
    for x, y in stream[70:]:
        for a, b in ((model, restored), (plain, loaded)):
            d, e = a.decide_one(x), b.decide_one(x)
            assert (d.label, d.ask, d.score.hex()) == (e.label, e.ask, e.score.hex())
            if d.ask:
                a.learn(d.slots, d.z, y)
                b.learn(e.slots, e.z, y)


def test_a_learner_started_from_a_group_makes_no_refits():
    teacher = ActiveAROW(seed=1, target_query_rate=0.5)
    for x, y in _stream(300, 4):
        teacher.learn_one(x, y)
    group = ActiveAROW.merge([teacher.contribution()])
    student = ActiveAROW.from_group(group, seed=3, **REFIT)
    assert student.refit_count[0] == -1
    before = student.W.copy()
    for x, y in _stream(30, 6):
        student.learn_one(x, y)
    assert student.channels.t == 30 and not np.all(student.W == 0.0) and np.any(before != 0.0)
    assert np.all(student.refit_values == 0.0)  # nothing kept


def test_a_recycled_slot_clears_its_kept_values():
    model = ActiveAROW(capacity=2, evict_after=3, **REFIT)
    model.learn_one({"a": 1.0, "b": 2.0}, True)
    model.learn_one({"a": 2.0, "b": 1.0}, False)
    slot_b = model.channels.slot_of("b")
    assert not np.isnan(model.refit_values[:2, slot_b]).any()
    for i in range(4):
        model.learn_one({"a": float(i)}, i % 2 == 0)
    model.learn_one({"c": 1.0}, True)  # takes b's slot
    assert model.channels.slot_of("c") == slot_b
    assert np.isnan(model.refit_values[:6, slot_b]).all() and model.refit_values[6, slot_b] == 1.0


@pytest.mark.parametrize("target", [0.05, 0.1, 0.2, 0.5])
def test_refit_labels_none_holds_every_label_asked_for_before_the_last_refit(target):
    """``refit_labels=None`` (the default) sizes the buffer from the budget,
    ``rate_control.most_asks(refit_until, target_query_rate)``: a learner asking as much
    as its budget lets it (a threshold that wants every label) keeps every label it asks
    for up to the last refit, and fills the buffer; one label fewer would end its refits
    at reading 160 without the refit there."""
    from edgelearn.kernels.rate_control import most_asks

    size = most_asks(160, target)
    assert ActiveAROW(refit_until=160, target_query_rate=target).refit_values.shape == (size, 256)
    for labels in (size, size - 1):
        model = ActiveAROW(refit_until=160, refit_labels=labels if labels < size else None,
                           target_query_rate=target, threshold=1e6, budget_gain=1e-9, seed=1, capacity=8)
        asked = 0
        for i, (x, y) in enumerate(_stream(161, 9)):
            if i == 160:
                assert asked == size  # the budget let every label it could through
                assert model.refit_count[0] == (size if labels == size else -1)  # -1: ended early
            d = model.decide_one(x)
            asked += d.ask
            if d.ask:
                model.learn(d.slots, d.z, y)
        assert model.refit_count[0] == -1
    assert ActiveAROW(refit_until=160, target_query_rate=None).refit_values.shape[0] == 160  # no budget
    assert ActiveAROW(refit_until=160, refit_labels=7).refit_values.shape[0] == 7  # a number is taken as it is
    assert ActiveAROW(refit_until=160, target_query_rate=0.1).refit_values.shape[0] == 26
    assert ActiveAROW(refit_until=160).refit_values.shape[0] == 52  # target_query_rate 0.2


@pytest.mark.parametrize("param,value,error", [
    ("refit_until", -1, ValueError), ("refit_until", 9, ValueError), ("refit_until", 1.5, ValueError), ("refit_labels", 0, ValueError),
    ("refit_labels", "32", TypeError), ("refit_labels", 2.5, TypeError),
])
def test_bad_refit_parameters_are_named(param, value, error):
    with pytest.raises(error) as info:
        ActiveAROW(**{param: value})
    assert str(info.value).startswith(f"The '{param}' parameter of ActiveAROW must be ")
    assert str(info.value).endswith(f"Got {value!r}.")


@pytest.mark.parametrize("n_classes,capacity", [(2, 256), (4, 16)])
def test_memory_is_the_documented_bound(n_classes, capacity):
    off = ActiveAROW(n_classes=n_classes, capacity=capacity, refit_until=0)
    on = ActiveAROW(n_classes=n_classes, capacity=capacity, **REFIT)
    # the labels' values, their labels and the count, and two scratch arrays of a reading
    assert on.memory_bytes() - off.memory_bytes() == 8 * 32 * (capacity + 1) + 8 + 12 * capacity
    # the default: refit_until 160 and the buffer sized from the budget, 52 labels at target_query_rate 0.2
    assert ActiveAROW().memory_bytes() - ActiveAROW(refit_until=0).memory_bytes() == 8 * 52 * 257 + 8 + 12 * 256 == 109_992
    off = ActiveAROW(refit_until=0)
    assert off.memory_bytes() == ActiveAROW(refit_until=0, refit_labels=500).memory_bytes()  # off: nothing more


def test_no_contribution_while_refits_are_pending():
    """A refit puts the belief back at the prior, which a contribution (a change in
    precision since the last one, never negative) cannot carry: a learner with refits
    pending cannot merge (the fleet skips it and takes it later); once they are over,
    its contributions pass the group's checks."""
    from edgelearn import contributions

    model = ActiveAROW(target_query_rate=0.3, seed=1, capacity=8, **REFIT)
    for i, (x, y) in enumerate(_stream(400, 7)):
        pending = model.channels.t <= 160 and model.refit_count[0] >= 0
        assert model.can("merge") is not pending
        if pending:
            with pytest.raises(ValueError, match="refits pending"):
                model.contribution()
        elif i % 15 == 0:
            contributions.check(model.contribution())
        d = model.decide_one(x)
        if d.ask:
            model.learn(d.slots, d.z, y)
    assert model.can("merge") and ActiveAROW(refit_until=0).can("merge") and not ActiveAROW().can("merge")
