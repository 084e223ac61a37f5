"""tools/label_budget_multiclass_variants.py (and its diagnosis tool): each multiclass switch at its neutral value is
the learner (so a switch's numbers differ from R's by the switch alone), each changes what it
names on a multiclass stream and nothing on a binary one, and the diagnosis and the
multiclass table run end to end."""

import random

import numpy as np

from edgelearn.evaluate import prequential
from results_pages import load_tool

R = {"refit": (10, 20, 40, 80, 160), "refit_z": 1, "refit_cap": 32}


def _stream(n_classes, n=400, seed=3):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b, c = rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 1)
        x = {"a": a, "b": b, "c": c} if rng.random() > 0.3 else {"b": b, "c": c}
        y = a + b > 0 if n_classes == 2 else int(a > 0) + int(b > 0.5) + (1 if n_classes > 3 and c > 1.3 else 0)
        out.append((x, y))
    return out


def _run(tool, variant, n_classes, stream=None):
    model = tool.Variant(variant, target_query_rate=0.1, seed=5, n_classes=n_classes, capacity=8)
    return model, prequential(model, stream or _stream(n_classes))


def _assert_neutral(tool, base_variant, switches):
    """Each of ``switches`` on ``base_variant`` predicts, asks and learns as the variant alone."""
    base, a = _run(tool, base_variant, 4)
    for switch in switches:
        model, b = _run(tool, {**base_variant, **switch}, 4)
        assert np.array_equal(a.predictions, b.predictions), switch
        assert np.array_equal(a.asked, b.asked), switch
        np.testing.assert_allclose(model.W, base.W, rtol=1e-9, atol=1e-12)


def test_neutral_switches_are_the_learner():
    # cmw_k 0 re-adds the class means one class at a time (the learner's kernel adds them all);
    # pos_w 0 is one-vs-rest at r; novelty 0 divides u by 1; one refit epoch in order is R
    tool = load_tool("label_budget_variants")
    for base_variant in ({}, R):
        _assert_neutral(tool, base_variant, ({"cmw_k": 0.0}, {"pos_w": 0.0}, {"novelty": 0.0},
                                             {"novelty": 0.0, "novelty_ref": "stream"},
                                             {"unclaimed": 0.0}, {"refit_epochs": 1}))


def test_each_switch_changes_multiclass_and_not_binary():
    tool = load_tool("label_budget_variants")
    _, base4 = _run(tool, R, 4)
    _, base2 = _run(tool, R, 2)
    for switch in ({"cmw_k": 3.0}, {"pos_w": 1.0}, {"novelty": 3.0}, {"novelty": 3.0, "novelty_ref": "stream"},
                   {"unclaimed": 3.0}, {"refit_order": "interleave"}, {"refit_epochs": 2}):
        _, b4 = _run(tool, {**R, **switch}, 4)
        assert not (np.array_equal(base4.predictions, b4.predictions) and np.array_equal(base4.asked, b4.asked)), \
            switch
        assert np.mean(b4.asked) < 0.12, switch  # the budget still holds
        _, b2 = _run(tool, {**R, **switch}, 2)
        same_binary = np.array_equal(base2.predictions, b2.predictions) and np.array_equal(base2.asked, b2.asked)
        # refit_epochs is shared: a binary learner's passes are label_budget_belief_variants' (later ones
        # in random order), so it changes binary too; the others are multiclass-only
        assert same_binary == (switch != {"refit_epochs": 2}), switch


def test_class_mean_distance_is_the_plain_one():
    tool = load_tool("label_budget_variants")
    model, _ = _run(tool, {"novelty": 1.0}, 4)
    slots = np.array([0, 2, 1], dtype=np.int32)
    z = np.array([0.5, -1.0, 2.0])
    n_known = len(model.targets.labels)
    d = model._class_mean_distance(slots, z, n_known)
    for c in range(n_known):
        mu = model.class_sums[c, slots] / model.class_counts[c]
        assert abs(d[c] - np.mean((mu - z) ** 2)) < 1e-12
    assert model._d_ref[1] > 5  # the asked labels' own distances were counted


def test_interleaved_refit_order():
    tool = load_tool("label_budget_variants")
    model = tool.Variant({**R, "refit_order": "interleave"}, target_query_rate=0.1, seed=5, n_classes=3, capacity=8)
    learned = []
    model._early = [({"a": float(i)}, y, 1.0) for i, y in enumerate([0, 0, 0, 1, 2, 2])]  # (values, label, p)
    original = tool.Base.learn
    try:
        tool.Base.learn = lambda self, slots, z, y: learned.append(y)
        model.channels.observe({"a": 1.0}, True)
        model._refit()
    finally:
        tool.Base.learn = original
    assert learned == [0, 1, 2, 0, 2, 0]
    assert [kept[1] for kept in model._early] == [0, 0, 0, 1, 2, 2]  # the kept labels stay in their order


def test_diagnosis_and_table_run(tmp_path, capsys):
    tool = load_tool("label_budget_multiclass_diagnosis")
    lines = tool.diagnose(R, (1000,), ["dermatology"])
    assert len(lines) == 2 * 7 and "6 classes, 366 readings" in lines[0]
    assert tool.main(["--table", "base", '{"cmw_k": 1.0}', "--seeds", "1000", "--cache", str(tmp_path / "c.json")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("base |") and out[1].startswith('{"cmw_k": 1.0} |')
    assert out[0].count("; +0.0)") == 4  # the first line's deltas to itself


def test_an_unknown_choice_is_refused_by_name():
    tool = load_tool("label_budget_variants")
    try:
        tool.Variant({"refit_order": "shuffle"}, n_classes=3)
    except ValueError as error:
        assert "refit_order must be one of 'interleave', 'reverse'; got 'shuffle'" in str(error)
    else:
        raise AssertionError("refit_order 'shuffle' was accepted")


def test_new_switches_neutral_values_are_the_learner():
    # rare_bias 0 adds nothing; cmw_pow with cmw_k 0 is the class means; novelty_scale 1 is novelty;
    # refit_balance 1 caps every class weight at 1 (both modes)
    tool = load_tool("label_budget_variants")
    B = {**R, "novelty": 5.0, "novelty_until": 1, "novelty_ref": "stream", "refit_epochs": 2}
    for base_variant in (R, B):
        switches = ({"rare_bias": 0.0}, {"pred_balance": 0.0}, {"cmw_k": 0.0, "cmw_pow": 0.5},
                    {"novelty_scale": 1.0}, {"novelty_patience": 10**9}, {"refit_balance": 1.0},
                    {"refit_balance": 1.0, "refit_balance_mode": "repeat"},
                    {"refit_balance": 1.0, "refit_balance_mode": "inverse"})
        _assert_neutral(tool, base_variant, [
            switch for switch in switches  # the novelty's own switches need the novelty on
            if "novelty" in base_variant or not ("novelty_scale" in switch or "novelty_patience" in switch)])


def test_new_switches_change_multiclass_and_not_binary():
    tool = load_tool("label_budget_variants")
    # the stream's class 3 is rare (c > 1.3: about 10% of readings), so the class balance has something to weigh
    _, base4 = _run(tool, R, 4)
    _, base2 = _run(tool, R, 2)
    for switch in ({"rare_bias": 0.5}, {"pred_balance": 0.5}, {"cmw_k": 3.0, "cmw_pow": 0.5},
                   {"novelty": 3.0, "novelty_nn": 1}, {"novelty": 3.0, "novelty_scale": 0.5}, {"refit_balance": 3.0},
                   {"refit_balance": 3.0, "refit_balance_mode": "repeat"},
                   {"refit_balance": 3.0, "refit_balance_mode": "inverse"}, {"lda_k": 5.0}):
        _, b4 = _run(tool, {**R, **switch}, 4)
        assert not (np.array_equal(base4.predictions, b4.predictions) and np.array_equal(base4.asked, b4.asked)), \
            switch
        assert np.mean(b4.asked) < 0.12, switch
        _, b2 = _run(tool, {**R, **switch}, 2)
        assert np.array_equal(base2.predictions, b2.predictions) and np.array_equal(base2.asked, b2.asked), switch


def test_asked_distance_is_the_plain_nearest_reading():
    tool = load_tool("label_budget_variants")
    model, _ = _run(tool, {"novelty": 1.0, "novelty_nn": 1}, 4)
    assert len(model._asked_z) > 5
    slots = np.array([0, 2, 1], dtype=np.int32)
    z = np.array([0.5, -1.0, 2.0])
    d = model._asked_distance(slots, z)
    for j, kept in enumerate(model._asked_z):
        both = ~np.isnan(kept[slots])
        assert abs(d[j] - np.mean((kept[slots][both] - z[both]) ** 2)) < 1e-12


def test_class_balance_weights_and_repeats():
    tool = load_tool("label_budget_variants")
    model = tool.Variant({**R, "refit_balance": 3.0, "refit_balance_mode": "repeat"}, target_query_rate=0.1, seed=5,
                         n_classes=3, capacity=8)
    # counts 4, 1, 1 (mean 2): weights 1, 2, 2; capped at 3
    assert model._class_balance([0, 0, 0, 0, 1, 2]) == {0: 1.0, 1: 2.0, 2: 2.0}
    assert model._class_balance([0] * 10 + [1]) == {0: 1.0, 1: 3.0}
    model._variant["refit_balance_mode"] = "inverse"  # counts 4, 1, 1: the common class at 2 / 4
    assert model._class_balance([0, 0, 0, 0, 1, 2]) == {0: 0.5, 1: 2.0, 2: 2.0}
    model._variant["refit_balance_mode"] = "repeat"
    learned = []
    model._early = [({"a": float(i)}, y, 1.0) for i, y in enumerate([0, 0, 0, 0, 1, 2])]
    model.channels.observe({"a": 0.0}, True)
    model._refit_one_pass = False
    original = tool.Base.learn
    try:
        tool.Base.learn = lambda self, slots, z, y: learned.append(y)
        model._refit()
    finally:
        tool.Base.learn = original
    assert learned == [0, 0, 0, 0, 1, 2, 1, 2]


def test_lda_score_is_the_plain_one_and_infinite_shrinkage_is_the_class_means():
    tool = load_tool("label_budget_variants")
    model, _ = _run(tool, {**R, "lda_k": 5.0}, 4)
    zs, ys = np.asarray(model._asked_z), np.asarray(model._asked_y)
    s2 = model._within_class_variance()
    for j in range(3):
        squares = dof = 0.0
        for c in set(ys.tolist()):
            col = zs[ys == c, j]
            col = col[~np.isnan(col)]
            squares += float(np.sum((col - col.mean()) ** 2)) if len(col) else 0.0
            dof += max(len(col) - 1, 0)
        assert abs(s2[j] - (squares + 5.0) / (dof + 5.0)) < 1e-12
    # with the shrinkage at infinity s^2 = 1 and the score is the learner's class means
    _, a = _run(tool, R, 4)
    _, b = _run(tool, {**R, "lda_k": 1e300}, 4)
    same = [p == q for p, q in zip(a.predictions, b.predictions)]
    assert len(same) == 400 and np.mean(same) > 0.99  # (the kernel and NumPy sum in other orders)


def test_novelty_patience_stops_the_term():
    tool = load_tool("label_budget_variants")
    _, on = _run(tool, {**R, "novelty": 3.0}, 4)
    model, patient = _run(tool, {**R, "novelty": 3.0, "novelty_patience": 3}, 4)
    assert model._since_new > 3  # every class was met early; the term is off after 3 more labels
    assert not (np.array_equal(on.predictions, patient.predictions) and np.array_equal(on.asked, patient.asked))
