"""tools/label_budget_variants.py: its NumPy AROW step is the kernels' step (so a
variant built on it differs from the learner by the variant alone), and a tiny
measurement runs end to end beside River."""

import random

import numpy as np

import edgelearn

from edgelearn.evaluate import prequential
from results_pages import load_tool


def _stream(n_classes, n=400, seed=3):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b, c = rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 1)
        x = {"a": a, "b": b, "c": c} if rng.random() > 0.3 else {"b": b, "c": c}
        y = a + b > 0 if n_classes == 2 else int(a > 0) + int(b > 0.5) + (1 if n_classes > 3 and c > 1 else 0)
        out.append((x, y))
    return out


def test_numpy_step_matches_the_kernels_binary_and_multiclass():
    tool = load_tool("label_budget_variants")
    for n_classes in (2, 4):
        stream = _stream(n_classes)
        # the variants run on the learner without its issue-26 terms (tool.TERMS_OFF)
        base = tool.Base(target_query_rate=0.1, seed=5, n_classes=n_classes, capacity=8, **tool.TERMS_OFF)
        check = tool.Variant({"mode": "hinge"}, target_query_rate=0.1, seed=5, n_classes=n_classes, capacity=8)
        a, b = prequential(base, stream), prequential(check, stream)
        assert np.array_equal(a.predictions, b.predictions)
        assert np.array_equal(a.asked, b.asked) and 0 < np.mean(a.asked) < 0.2
        np.testing.assert_allclose(check.W, base.W, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(check.S, base.S, rtol=1e-9, atol=1e-12)


def test_a_variant_changes_what_it_names():
    tool = load_tool("label_budget_variants")
    stream = _stream(2)
    base = prequential(tool.Base(target_query_rate=0.1, seed=5, refit_until=0, capacity=8), stream)
    replayed = prequential(tool.Variant({"replay": 8, "steps": 2}, target_query_rate=0.1, seed=5, capacity=8), stream)
    assert not np.array_equal(replayed.predictions, base.predictions)


def test_tiny_measurement_beside_river(tmp_path):
    tool = load_tool("label_budget_variants")
    table = tool.measure([{}, {"variance_floor": 0.5}], jobs=1, cache=tmp_path / "cache.json", seeds=(1000,),
                         binary_tasks=["spect"], multiclass_tasks=["dermatology"])
    assert edgelearn.ActiveAROW is tool.Base  # the stand-in is put back
    assert list(table) == ["base", '{"variance_floor": 0.5}']
    for rows in table.values():
        assert set(rows) == {(p, f) for p in ("paacds", "haphazard") for f in ("binary", "multiclass")}
        for acc, f1, dacc, df1, rate, balanced in rows.values():
            assert 0 < acc <= 100 and 0 <= f1 <= 100 and -100 < dacc < 100 and 0 < balanced <= 100
            assert 5 < rate <= 10.5  # the 10% budget held on a 267- and a 366-reading stream


def test_seeds_must_be_tuning_seeds(capsys):
    tool = load_tool("label_budget_variants")
    try:
        tool.main(["base", "--seeds", "3,1000", "--cache", ""])
    except SystemExit as stop:
        assert stop.code == 2
    else:
        raise AssertionError("a reported seed was accepted")
    assert "--seeds must be tuning seeds (1000 or more)" in capsys.readouterr().err


def test_a_hedge_of_the_learner_alone_is_the_learner():
    # a second belief at the learner's own r learns the same steps and never leads
    tool = load_tool("label_budget_variants")
    for n_classes in (2, 4):
        stream = _stream(n_classes)
        # the variants run on the learner without its issue-26 terms (tool.TERMS_OFF)
        base = tool.Base(target_query_rate=0.1, seed=5, n_classes=n_classes, capacity=8, **tool.TERMS_OFF)
        hedged = tool.Variant({"hedge": (80.0,)}, target_query_rate=0.1, seed=5, n_classes=n_classes, capacity=8)
        a, b = prequential(base, stream), prequential(hedged, stream)
        assert np.array_equal(a.predictions, b.predictions) and np.array_equal(a.asked, b.asked)
        assert np.array_equal(hedged.W, base.W) and np.array_equal(hedged._models[1][0], base.W)


def test_refit_keeps_the_raw_values_and_changes_the_first_predictions():
    tool = load_tool("label_budget_variants")
    stream = _stream(2)
    # refit_z: what the learner keeps of an asked reading is its raw values, rebuilt from z
    keeper = tool.Variant({"refit": (10**6,), "refit_z": 1}, target_query_rate=0.1, seed=5, capacity=8)
    kept = prequential(keeper, stream)
    asked = [x for (x, _), a in zip(stream, kept.asked) if a]
    assert len(keeper._early) == len(asked) > 20
    for (slots, values), x in zip((e[0] for e in keeper._early), asked):
        np.testing.assert_allclose(sorted(values), sorted(x.values()), rtol=1e-9, atol=1e-9)
    base = prequential(tool.Base(target_query_rate=0.1, seed=5, refit_until=0, capacity=8), stream)
    refit = prequential(tool.Variant({"refit": (10, 20, 40), "refit_z": 1}, target_query_rate=0.1, seed=5,
                                     capacity=8), stream)
    assert np.array_equal(refit.predictions[:10], base.predictions[:10])  # the first refit is before reading 11
    assert not np.array_equal(refit.predictions, base.predictions)
    assert np.mean(refit.asked) < 0.12


def test_refit_passes_change_the_fit_and_give_back_r_and_floor():
    tool = load_tool("label_budget_variants")
    stream = _stream(2)
    refit = {"refit": (10, 20, 40, 80), "refit_z": 1}
    one = prequential(tool.Variant(refit, target_query_rate=0.1, seed=5, capacity=8), stream)
    # one pass, the learner's r and floor in it: the refit as it was, every prediction
    same = prequential(tool.Variant({**refit, "refit_epochs": 1, "refit_r_later": 9.0, "refit_floor": 0.3},
                                    target_query_rate=0.1, seed=5, capacity=8), stream)
    assert np.array_equal(one.predictions, same.predictions) and np.array_equal(one.asked, same.asked)
    twice = tool.Variant({**refit, "refit_epochs": 2, "refit_r": 3.0, "refit_floor": 0.0}, target_query_rate=0.1,
                         seed=5, capacity=8)
    more = prequential(twice, stream)
    assert not np.array_equal(more.predictions, one.predictions)
    assert twice._r == twice.r and twice._floor == twice.variance_floor  # the refit's own r and floor put back
    assert 0 < np.mean(more.asked) < 0.12


def test_ceiling_refit_accuracy_learns_from_the_marked_labels_only():
    ceiling = load_tool("label_budget_ceiling")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 2))
    y = X[:, 0] > 0
    every = ceiling.refit_accuracy(X, y, np.ones(400, dtype=bool), 1.0, 20)
    assert every > 90  # a separable task, refit every 20 readings
    # marking only negatives: the majority label of them, always False
    only_negatives = ceiling.refit_accuracy(X, y, ~y, 1.0, 20)
    assert abs(only_negatives - 100 * np.mean(~y)) < 1e-9
