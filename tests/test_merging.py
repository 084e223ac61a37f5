"""Mergeable learners (the "merge" capability): contributions, group models and
the start from one, against the formulas computed by hand in NumPy from the
learners' own arrays, looked up by channel name."""

import msgpack
import numpy as np
import pytest

from edgelearn import PA, ActiveAROW
from edgelearn.checks import check_declares_capabilities
from edgelearn.merging import MAX_WEIGHT, combine_statistics, split_statistics

NAMES = ("a", "b", "c", "d")


def readings(n, seed, order=NAMES, offset=0.0, drop=0.2):
    """Readings of one concept; channels in ``order`` (a dict's order decides slots),
    each missing with probability ``drop``; the raw values kept per channel."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        v = {"a": rng.normal(), "b": 3.0 * rng.normal() + 1.0, "c": rng.normal(), "d": rng.normal() - 2.0}
        y = bool(v["a"] + v["b"] / 3.0 - v["c"] > 0.3 + offset)
        x = {k: float(v[k]) for k in order if rng.random() > drop}
        out.append((x, y))
    return out


def trained(cls, data, **params):
    model = cls(**params)
    for x, y in data:
        model.learn_one(x, y)
    return model


def raw_values(data, name):
    return np.array([x[name] for x, _ in data if name in x])


def by_name(part, column, name):
    return np.asarray(part[column][part["names"].index(name)], dtype=np.float64)


# -- ActiveAROW ---------------------------------------------------------------------


def arow_features(model, name):
    """The feature indices of a channel (linear, then bins: K.expand's layout)."""
    s = model.channels.slot_of(name)
    return np.r_[s, model.capacity + s * model.n_bins + np.arange(model.n_bins)]


def test_arow_merge_of_two_halves_is_the_precision_weighted_combination():
    first, second = readings(400, 1), readings(400, 2, order=("d", "c", "b", "a"))
    a, b = trained(ActiveAROW, first), trained(ActiveAROW, second)
    # different orders: the two learners hold the channels in different slots
    assert [a.channels.slot_of(n) for n in NAMES] != [b.channels.slot_of(n) for n in NAMES]
    group = ActiveAROW.merge([a.contribution(), b.contribution()])
    part = group["channels"]
    assert sorted(part["names"]) == sorted(NAMES)
    for name in NAMES:
        fa, fb = arow_features(a, name), arow_features(b, name)
        precision = (1.0 / a.S[0, fa] - 1.0) + (1.0 / b.S[0, fb] - 1.0)
        precision_mean = a.W[0, fa] / a.S[0, fa] + b.W[0, fb] / b.S[0, fb]
        np.testing.assert_allclose(by_name(part, "precision", name), precision, rtol=1e-12)
        np.testing.assert_allclose(by_name(part, "precision_mean", name), precision_mean, rtol=1e-12, atol=1e-15)
        both = np.r_[raw_values(first, name), raw_values(second, name)]
        assert by_name(part, "n", name) == len(both)
        np.testing.assert_allclose(by_name(part, "mean", name), both.mean(), rtol=1e-12)
        np.testing.assert_allclose(by_name(part, "var", name), both.var(), rtol=1e-10)
        sa, sb = a.channels.slot_of(name), b.channels.slot_of(name)
        counts = a.channels.count[sa] * a.bin_freq[sa] + b.channels.count[sb] * b.bin_freq[sb]
        np.testing.assert_allclose(by_name(part, "bin_counts", name), counts, rtol=1e-12)
    np.testing.assert_allclose(group["intercept_precision"], [1 / a.Sb[0] - 1 + 1 / b.Sb[0] - 1], rtol=1e-12)
    np.testing.assert_allclose(group["intercept_precision_mean"], [a.b[0] / a.Sb[0] + b.b[0] / b.Sb[0]],
                               rtol=1e-12)

    # a new learner takes mean sum(H) / (1 + sum(P)) and variance max(1 / (1 + sum(P)), floor)
    new = ActiveAROW.from_group(group)
    for name in NAMES:
        f = arow_features(new, name)
        p = 1.0 + by_name(part, "precision", name)
        np.testing.assert_allclose(new.W[0, f], by_name(part, "precision_mean", name) / p, rtol=1e-12)
        np.testing.assert_allclose(new.S[0, f], np.maximum(1.0 / p, new.variance_floor), rtol=1e-12)
        s = new.channels.slot_of(name)
        assert new.channels.count[s] == by_name(part, "n", name)
        np.testing.assert_allclose(new.bin_freq[s], by_name(part, "bin_counts", name) / by_name(part, "n", name))
    assert new.classes == a.classes


def test_arow_group_start_beats_a_lone_start():
    group = ActiveAROW.merge([trained(ActiveAROW, readings(300, s)).contribution() for s in (1, 2)])
    test = readings(500, 9)
    joined, alone = ActiveAROW.from_group(group), ActiveAROW()
    score = {m: np.mean([m.predict_one(x) == y for x, y in test]) for m in (joined, alone)}
    assert score[joined] > 0.85 and score[joined] > score[alone] + 0.25


def test_arow_repeated_contributions_count_nothing_twice():
    data = readings(600, 3)
    model = trained(ActiveAROW, data[:250])
    first = model.contribution()
    assert first["channels"]["n"] == [float(model.channels.count[model.channels.slot_of(n)])
                                      for n in first["channels"]["names"]]
    for x, y in data[250:]:
        model.learn_one(x, y)
    second = model.contribution()
    group = ActiveAROW.merge([first, second])
    part = group["channels"]
    for name in NAMES:
        f = arow_features(model, name)
        # the two deltas add up to the learner's state now, exactly once
        np.testing.assert_allclose(by_name(part, "precision", name), 1.0 / model.S[0, f] - 1.0, rtol=1e-9)
        np.testing.assert_allclose(by_name(part, "precision_mean", name), model.W[0, f] / model.S[0, f],
                                   rtol=1e-9, atol=1e-12)
        values = raw_values(data, name)
        assert by_name(part, "n", name) == len(values)
        np.testing.assert_allclose(by_name(part, "mean", name), values.mean(), rtol=1e-10)
        np.testing.assert_allclose(by_name(part, "var", name), values.var(), rtol=1e-9)
    # nothing learned since: an empty delta
    third = model.contribution()
    assert all(v == 0.0 for v in third["channels"]["n"])
    assert np.abs(np.asarray(third["channels"]["precision"])).max() == 0.0


def test_arow_started_from_a_group_contributes_only_its_own_learning():
    group = ActiveAROW.merge([trained(ActiveAROW, readings(300, 4)).contribution()])
    new = ActiveAROW.from_group(group)
    nothing = new.contribution()
    assert np.abs(np.asarray(nothing["channels"]["precision"])).max() == 0.0
    assert np.abs(np.asarray(nothing["channels"]["precision_mean"])).max() == 0.0
    assert all(v == 0.0 for v in nothing["channels"]["n"])
    for x, y in readings(200, 5):
        new.learn_one(x, y)
    own = new.contribution()
    assert min(min(row) for row in own["channels"]["precision"]) >= 0.0
    assert sum(own["channels"]["n"]) == sum(len(x) for x, _ in readings(200, 5))
    # group + own delta is the new learner's belief, wherever it was not held at the floor
    updated = ActiveAROW.merge([own], group=group)
    for name in NAMES:
        f = arow_features(new, name)
        p = 1.0 + by_name(updated["channels"], "precision", name)
        start_p = 1.0 + by_name(group["channels"], "precision", name)
        free = 1.0 / start_p > new.variance_floor
        np.testing.assert_allclose(p[free], 1.0 / new.S[0, f][free], rtol=1e-9)


def test_arow_started_from_a_group_holds_an_informed_budget_across_checkpoints():
    from edgelearn.kernels import rate_control as RC

    group = ActiveAROW.merge([trained(ActiveAROW, readings(600, s)).contribution() for s in (1, 2)])
    joined, alone = ActiveAROW.from_group(group, target_query_rate=0.1), ActiveAROW(target_query_rate=0.1)
    assert RC.is_informed(joined.rng_state) and not RC.is_informed(alone.rng_state)
    test = readings(400, 9)
    asked = {}
    for model in (joined, alone):
        asked[model] = []
        for x, y in test[:200]:
            d = model.decide_one(x)
            asked[model].append(d.ask)
            if d.ask:
                model.learn(d.slots, d.z, y)
    # no start-up loan: never ahead of the budget; the lone learner takes its loan at once
    assert sum(asked[joined]) <= 1.05 * 0.1 * 200 and sum(asked[alone]) >= 25
    assert sum(asked[joined]) < sum(asked[alone])
    restored = ActiveAROW.from_state(joined.to_state())
    assert restored.rng_state.tolist() == joined.rng_state.tolist()
    for x, y in test[200:]:  # the same decisions after a checkpoint, in both the fused and the dict path
        a, b = joined.decide_one(x), restored.decide_one(x)
        assert a.ask == b.ask
        if a.ask:
            joined.learn(a.slots, a.z, y)
            restored.learn(b.slots, b.z, y)
    assert restored.rng_state.tolist() == joined.rng_state.tolist()
    # a lone learner's state does not load an informed one's word
    assert not RC.is_informed(ActiveAROW.from_state(alone.to_state()).rng_state)


def test_arow_checkpoint_keeps_the_last_contribution():
    data = readings(400, 6)
    model = trained(ActiveAROW, data[:200])
    model.contribution()
    restored = ActiveAROW.from_state(model.to_state())
    for x, y in data[200:]:
        model.learn_one(x, y)
        restored.learn_one(x, y)
    a, b = model.contribution(), restored.contribution()
    assert a == b
    assert sum(a["channels"]["n"]) == sum(len(x) for x, _ in data[200:])


def test_arow_recycled_slot_starts_its_contribution_from_nothing():
    model = ActiveAROW(capacity=2, evict_after=5)
    for x, y in readings(170, 7, order=("a", "b"), drop=0.0):  # past the refits (reading 160): it merges
        model.learn_one({k: x[k] for k in ("a", "b")}, y)
    model.contribution()
    # "b" disappears, "c" takes its slot
    for x, y in readings(60, 8, order=("a", "c"), drop=0.0):
        model.learn_one({k: x[k] for k in ("a", "c")}, y)
    assert model.channels.slot_of("b") == -1 and model.channels.slot_of("c") >= 0
    part = model.contribution()["channels"]
    assert "b" not in part["names"]
    f = arow_features(model, "c")
    np.testing.assert_allclose(by_name(part, "precision", "c"), 1.0 / model.S[0, f] - 1.0, rtol=1e-12)
    assert by_name(part, "n", "c") == model.channels.count[model.channels.slot_of("c")]
    assert np.asarray(part["precision"]).min() >= 0.0


def test_arow_reversed_labels_are_turned_round():
    # one concept, labels "yes"/"no"; the first learner met "yes" first, the second "no"
    # first, so each holds the other's positive side and its weights have the other sign
    data = [(x, "yes" if y else "no") for x, y in readings(600, 10)]
    first = next(i for i, (_, y) in enumerate(data) if y == "yes")
    second = next(i for i, (_, y) in enumerate(data) if y == "no")
    a = trained(ActiveAROW, [data[first]] + data[:300])
    b = trained(ActiveAROW, [data[second]] + data[300:])
    assert a.targets.to_state() == b.targets.to_state()[::-1]
    group = ActiveAROW.merge([a.contribution(), b.contribution()])
    assert group["labels"] == a.targets.to_state()
    for name in NAMES:
        fa, fb = arow_features(a, name), arow_features(b, name)
        np.testing.assert_allclose(by_name(group["channels"], "precision_mean", name),
                                   a.W[0, fa] / a.S[0, fa] - b.W[0, fb] / b.S[0, fb], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(by_name(group["channels"], "precision", name),
                                   1 / a.S[0, fa] - 1 + 1 / b.S[0, fb] - 1, rtol=1e-12)
    np.testing.assert_allclose(group["intercept_precision_mean"], [a.b[0] / a.Sb[0] - b.b[0] / b.Sb[0]], rtol=1e-12)
    test = [(x, "yes" if y else "no") for x, y in readings(400, 11)]
    alone_on_all = trained(ActiveAROW, data)
    accuracy = {m: np.mean([m.predict_one(x) == y for x, y in test])
                for m in (ActiveAROW.from_group(group), alone_on_all)}
    joined = next(m for m in accuracy if m is not alone_on_all)
    assert accuracy[joined] > accuracy[alone_on_all] - 0.03 and accuracy[joined] > 0.8
    # labels that are neither the group's nor the other way round are refused
    c = trained(ActiveAROW, [(x, "on" if y else "off") for x, y in readings(170, 12)])  # past the refits
    with pytest.raises(ValueError, match="knows the labels"):
        ActiveAROW.merge([c.contribution()], group=group)


def multiclass_readings(n, seed, order=NAMES, drop=0.2):
    """Three classes of one concept, by the sum that decides readings()'s binary label."""
    out = []
    for x, _ in readings(n, seed, order, drop=0.0):
        score = x["a"] + x["b"] / 3.0 - x["c"]
        label = "low" if score < -0.5 else ("mid" if score < 1.0 else "high")
        rng = np.random.default_rng(abs(hash((seed, len(out)))) % 2**32)
        out.append(({k: v for k, v in x.items() if rng.random() > drop}, label))
    return out


def test_arow_multiclass_merge_is_the_precision_weighted_combination_by_class_name():
    check_declares_capabilities(ActiveAROW())
    check_declares_capabilities(ActiveAROW(n_classes=3))
    check_declares_capabilities(PA())
    first = multiclass_readings(400, 1)
    # the second learner meets the classes (and channels) in another order: its rows differ
    second = sorted(multiclass_readings(400, 2, order=("d", "c", "b", "a")), key=lambda r: r[1] != "low")[:40] \
        + multiclass_readings(400, 2, order=("d", "c", "b", "a"))[40:]
    a, b = trained(ActiveAROW, first, n_classes=3), trained(ActiveAROW, second, n_classes=3)
    assert a.can("merge") and a.targets.to_state() != b.targets.to_state()
    group = ActiveAROW.merge([a.contribution(), b.contribution()])
    assert group["structure"]["n_classes"] == 3 and sorted(group["labels"]) == ["high", "low", "mid"]
    part, width = group["channels"], 1 + a.n_bins
    for label in group["labels"]:
        g, ra, rb = (group["labels"].index(label), a.targets.to_state().index(label),
                     b.targets.to_state().index(label))
        for name in NAMES:
            fa, fb = arow_features(a, name), arow_features(b, name)
            block = slice(g * width, (g + 1) * width)
            np.testing.assert_allclose(by_name(part, "precision", name)[block],
                                       (1.0 / a.S[ra, fa] - 1.0) + (1.0 / b.S[rb, fb] - 1.0), rtol=1e-12)
            np.testing.assert_allclose(by_name(part, "precision_mean", name)[block],
                                       a.W[ra, fa] / a.S[ra, fa] + b.W[rb, fb] / b.S[rb, fb], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(group["intercept_precision_mean"][g], a.b[ra] / a.Sb[ra] + b.b[rb] / b.Sb[rb],
                                   rtol=1e-12)
    new = ActiveAROW.from_group(group, n_classes=3)
    assert new.targets.to_state() == group["labels"]
    for g in range(3):
        for name in NAMES:
            f = arow_features(new, name)
            p = 1.0 + by_name(part, "precision", name)[g * width:(g + 1) * width]
            np.testing.assert_allclose(new.W[g, f], by_name(part, "precision_mean", name)[g * width:(g + 1) * width] / p,
                                       rtol=1e-12)
            np.testing.assert_allclose(new.S[g, f], np.maximum(1.0 / p, new.variance_floor), rtol=1e-12)
    test = multiclass_readings(400, 9)
    score = {m: np.mean([m.predict_one(x) == y for x, y in test]) for m in (new, ActiveAROW(n_classes=3))}
    assert score[new] > 0.7 and score[new] > list(score.values())[1] + 0.2
    # a fourth class beyond n_classes = 3 is refused; another n_classes is another structure
    d = trained(ActiveAROW, [(x, "off") for x, _ in multiclass_readings(170, 3)], n_classes=3)  # past the refits
    with pytest.raises(ValueError, match="more than n_classes=3"):
        ActiveAROW.merge([d.contribution()], group=group)
    with pytest.raises(ValueError, match="structure"):
        ActiveAROW.merge([trained(ActiveAROW, first[:170], n_classes=4).contribution()], group=group)


# -- PA ----------------------------------------------------------------------------


def test_pa_merge_is_the_count_weighted_average_of_weights():
    first, second = readings(300, 11), readings(500, 12, order=("c", "a", "d", "b"))
    a, b = trained(PA, first), trained(PA, second)
    group = PA.merge([a.contribution(), b.contribution()])
    new = PA.from_group(group)
    for name in NAMES:
        sa, sb = a.channels.slot_of(name), b.channels.slot_of(name)
        na, nb = a.channels.count[sa], b.channels.count[sb]
        expected = (na * a.w[sa] + nb * b.w[sb]) / (na + nb)
        np.testing.assert_allclose(new.w[new.channels.slot_of(name)], expected, rtol=1e-12)
        both = np.r_[raw_values(first, name), raw_values(second, name)]
        s = new.channels.slot_of(name)
        np.testing.assert_allclose([new.channels.mean[s], new.channels.var[s]], [both.mean(), both.var()],
                                   rtol=1e-10)
    np.testing.assert_allclose(new.intercept[0], (300 * a.intercept[0] + 500 * b.intercept[0]) / 800, rtol=1e-12)
    # weights scale each contributor's share
    weighted = PA.from_group(PA.merge([a.contribution(), b.contribution()], weights=[2.0, 0.0]))
    # second contributions are empty deltas: the group above already holds a and b
    assert weighted.w.tolist() == PA().w.tolist()
    group2 = PA.merge([trained(PA, first).contribution(), trained(PA, second).contribution()], weights=[3.0, 1.0])
    new2 = PA.from_group(group2)
    s = new2.channels.slot_of("a")
    na, nb = a.channels.count[a.channels.slot_of("a")], b.channels.count[b.channels.slot_of("a")]
    expected = (3 * na * a.w[a.channels.slot_of("a")] + nb * b.w[b.channels.slot_of("a")]) / (3 * na + nb)
    np.testing.assert_allclose(new2.w[s], expected, rtol=1e-12)


def test_pa_group_start_learns_on_and_is_msgpack_able():
    group = PA.merge([trained(PA, readings(300, s)).contribution() for s in (13, 14)])
    assert msgpack.unpackb(msgpack.packb(group), strict_map_key=False) == group
    new = PA.from_group(group)
    test = readings(400, 15)
    assert np.mean([new.predict_one(x) == y for x, y in test]) > 0.85
    new.learn_one(*test[0])
    assert new.contribution()["intercept_count"] == [1.0]


# -- bounds --------------------------------------------------------------------------


@pytest.mark.parametrize("weights, message", [
    ([1.0], "one weight per contribution (2). Got 1 weights."),
    ([1.0, -0.5], f"list of floats in [0, {MAX_WEIGHT:g}]. Got -0.5."),
    ([1.0, float("nan")], "Got nan."),
    ([1.0, MAX_WEIGHT * 2], f"Got {MAX_WEIGHT * 2!r}."),
    ([1.0, True], "Got True."),
])
def test_merge_refuses_bad_weights(weights, message):
    contributions = [trained(PA, readings(20, s)).contribution() for s in (1, 2)]
    with pytest.raises(ValueError) as error:
        PA.merge(contributions, weights)
    assert str(error.value).startswith("The 'weights' parameter of merge must be")
    assert message in str(error.value)


def test_merge_refuses_another_kind_version_or_structure():
    pa = trained(PA, readings(20, 1)).contribution()
    with pytest.raises(ValueError, match="is of a 'PA', not a ActiveAROW"):
        ActiveAROW.merge([pa])
    with pytest.raises(ValueError, match="version 7 is not supported"):
        PA.merge([{**pa, "version": 7}])
    arow = trained(ActiveAROW, readings(170, 1)).contribution()  # past the refits (reading 160): it merges
    with pytest.raises(ValueError, match="structure"):
        ActiveAROW.merge([arow], group=ActiveAROW.merge([trained(ActiveAROW, readings(170, 1), n_bins=4)
                                                         .contribution()]))
    with pytest.raises(ValueError, match="has learned nothing"):
        trained(PA, readings(20, 1)).load_group(PA.merge([pa]))


def test_group_larger_than_capacity_keeps_the_most_observed_channels():
    data = readings(200, 16, drop=0.0)
    data = [({**x, "rare": 1.0} if i % 10 == 0 else x, y) for i, (x, y) in enumerate(data)]
    group = PA.merge([trained(PA, data).contribution()])
    new = PA.from_group(group, capacity=4)
    assert sorted(new.channels.names) == sorted(NAMES)


def test_chan_formulas_against_numpy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50) * 4 + 2
    for cut in (1, 7, 25, 49):
        n, m, v = combine_statistics(cut, x[:cut].mean(), x[:cut].var(), 50 - cut, x[cut:].mean(), x[cut:].var())
        assert n == 50
        np.testing.assert_allclose([m, v], [x.mean(), x.var()], rtol=1e-12)
        n, m, v = split_statistics(50, x.mean(), x.var(), cut, x[:cut].mean(), x[:cut].var())
        assert n == 50 - cut
        np.testing.assert_allclose([m, v], [x[cut:].mean(), x[cut:].var()], rtol=1e-9, atol=1e-12)


def test_a_learner_that_met_one_label_merges_on_its_side():
    data = [(x, "yes" if y else "no") for x, y in readings(300, 17)]
    both = trained(PA, data)
    one = trained(PA, [(x, y) for x, y in data if y == "yes"][:40])
    assert None in one.targets.to_state()
    group = PA.merge([both.contribution(), one.contribution()])
    assert group["labels"] == both.targets.to_state()
    positive_side = one.targets.to_state().index("yes") == both.targets.to_state().index("yes")
    a_both, a_one = both.channels.slot_of("a"), one.channels.slot_of("a")
    n_both, n_one = both.channels.count[a_both], one.channels.count[a_one]
    sign = 1.0 if positive_side else -1.0
    expected = (n_both * both.w[a_both] + sign * n_one * one.w[a_one]) / (n_both + n_one)
    np.testing.assert_allclose(PA.from_group(group).w[PA.from_group(group).channels.slot_of("a")], expected,
                               rtol=1e-12)


# -- PAACDS --------------------------------------------------------------------------


def test_paacds_merge_averages_weights_and_combines_information_statistics():
    from edgelearn import PAACDS

    first, second = readings(400, 21), readings(300, 22, order=("b", "d", "a", "c"))
    a, b = trained(PAACDS, first), trained(PAACDS, second)
    group = PAACDS.merge([a.contribution(), b.contribution()])
    new = PAACDS.from_group(group)
    for name in NAMES:
        sa, sb, s = a.channels.slot_of(name), b.channels.slot_of(name), new.channels.slot_of(name)
        na, nb = a.channels.count[sa], b.channels.count[sb]
        w = (na * a.W[0, sa] + nb * b.W[0, sb]) / (na + nb)
        np.testing.assert_allclose(new.W[0, s], w, rtol=1e-12, atol=1e-15)
        assert new.active[s] == (w != 0.0)
        ha, hb = a.h_n[sa], b.h_n[sb]
        n, mean, var = combine_statistics(ha, a.h_mean[sa], a.h_var[sa], hb, b.h_mean[sb], b.h_var[sb])
        assert new.h_n[s] == ha + hb
        np.testing.assert_allclose([new.h_mean[s], new.h_var[s]], [mean, var], rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(new.h[s], (5.0 + n * var) / (5.0 + n), rtol=1e-9)
        both = np.r_[raw_values(first, name), raw_values(second, name)]
        np.testing.assert_allclose([new.channels.mean[s], new.channels.var[s]], [both.mean(), both.var()],
                                   rtol=1e-10)
    np.testing.assert_allclose(new.b[0], (400 * a.b[0] + 300 * b.b[0]) / 700, rtol=1e-12)
    assert PAACDS(n_classes=3).can("merge") and PAACDS().can("merge")


def test_paacds_multiclass_merge_averages_each_class_row_by_class_name():
    from edgelearn import PAACDS

    check_declares_capabilities(PAACDS(n_classes=3))
    first = multiclass_readings(400, 31)
    second = sorted(multiclass_readings(300, 32, order=("b", "d", "a", "c")), key=lambda r: r[1] != "low")[:30] \
        + multiclass_readings(300, 32, order=("b", "d", "a", "c"))[30:]
    a, b = trained(PAACDS, first, n_classes=3), trained(PAACDS, second, n_classes=3)
    assert a.targets.to_state() != b.targets.to_state()
    group = PAACDS.merge([a.contribution(), b.contribution()])
    new = PAACDS.from_group(group, n_classes=3)
    assert new.targets.to_state() == group["labels"]
    for label in group["labels"]:
        g, ra, rb = (group["labels"].index(label), a.targets.to_state().index(label),
                     b.targets.to_state().index(label))
        for name in NAMES:
            sa, sb, s = a.channels.slot_of(name), b.channels.slot_of(name), new.channels.slot_of(name)
            na, nb = a.channels.count[sa], b.channels.count[sb]
            np.testing.assert_allclose(new.W[g, s], (na * a.W[ra, sa] + nb * b.W[rb, sb]) / (na + nb),
                                       rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(new.b[g], (400 * a.b[ra] + 300 * b.b[rb]) / 700, rtol=1e-12, atol=1e-15)
    test = multiclass_readings(300, 39)
    score = {m: np.mean([m.predict_one(x) == y for x, y in test]) for m in (new, PAACDS(n_classes=3))}
    assert score[new] > list(score.values())[1] + 0.2


def test_paacds_group_start_beats_a_lone_start_and_counts_nothing_twice():
    from edgelearn import PAACDS

    group = PAACDS.merge([trained(PAACDS, readings(400, s)).contribution() for s in (23, 24)])
    test = readings(300, 25)
    joined, alone = PAACDS.from_group(group), PAACDS()
    assert np.mean([joined.predict_one(x) == y for x, y in test[:100]]) > \
        np.mean([alone.predict_one(x) == y for x, y in test[:100]]) + 0.2
    for x, y in test:
        joined.learn_one(x, y)
    own = joined.contribution()
    assert sum(own["channels"]["n"]) == sum(len(x) for x, _ in test)
    assert own["intercept_count"] == [300.0]
    restored = PAACDS.from_state(joined.to_state())
    assert sum(restored.contribution()["channels"]["n"]) == 0


# -- AROWRegressor (the virtual sensor) -------------------------------------------------


def sensor_readings(n, seed, order=NAMES, level=400.0, drop=0.2):
    """A virtual sensor's readings: y = level + 30 a + 2 b - 5 c + noise; channels in
    ``order``, each missing with probability ``drop``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        v = {"a": rng.normal(20, 3), "b": rng.normal(50, 10), "c": rng.normal(), "d": rng.normal()}
        y = level + 30 * v["a"] + 2 * v["b"] - 5 * v["c"] + rng.normal(0, 5)
        out.append(({k: float(v[k]) for k in order if rng.random() > drop}, float(y)))
    return out


def regressor(data, **params):
    from edgelearn import AROWRegressor

    model = AROWRegressor(**{"r": 1.0, "variance_floor": 0.3, **params})
    for x, y in data:
        model.learn_one(x, y)
    return model


def test_arow_regressor_declares_merge_and_a_one_member_group_is_the_member():
    from edgelearn import AROWRegressor
    from edgelearn.kernels import arow_regression as KR

    check_declares_capabilities(AROWRegressor())
    data = sensor_readings(500, 1)
    a = regressor(data, n_lags=0)  # no error feedback: the prediction is the belief's alone
    new = AROWRegressor.from_group(AROWRegressor.merge([a.contribution()]), r=1.0, variance_floor=0.3, n_lags=0)
    # the offset and intercept in the target's units: offset + b is the member's, exactly
    assert new.stats[KR.OFFSET] == a.stats[KR.OFFSET]
    np.testing.assert_allclose(new.b[0], a.b[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(new.Sb[0], a.Sb[0], rtol=1e-12)
    for name in NAMES:
        np.testing.assert_allclose(new.W[0, arow_features(new, name)], a.W[0, arow_features(a, name)],
                                   rtol=1e-9, atol=1e-12)
    test = sensor_readings(50, 9)
    for x, _ in test:  # the same belief predicts the same (the channels' statistics are the member's)
        assert new._score(*new.channels.transform(x, True))[0] == pytest.approx(
            a._score(*a.channels.transform(x, True))[0], rel=1e-9)


def test_arow_regressor_merge_centres_the_intercepts_on_the_members_mean_offset():
    from edgelearn import AROWRegressor
    from edgelearn.kernels import arow_regression as KR

    # two members whose first references differ by hundreds: each one's offset is its own
    a = regressor(sensor_readings(400, 2, level=100.0))
    b = regressor(sensor_readings(400, 3, order=("d", "c", "b", "a"), level=900.0))
    assert abs(a.stats[KR.OFFSET] - b.stats[KR.OFFSET]) > 300
    group = AROWRegressor.merge([a.contribution(), b.contribution()], weights=[1.0, 3.0])
    o = (a.stats[KR.OFFSET] + 3 * b.stats[KR.OFFSET]) / 4
    np.testing.assert_allclose(group["offset_count"], [4.0])
    np.testing.assert_allclose(group["offset_sum"], [4 * o], rtol=1e-12)
    pa, pb = 1 / a.Sb[0] - 1, 1 / b.Sb[0] - 1
    np.testing.assert_allclose(group["intercept_precision"], [pa + 3 * pb], rtol=1e-12)
    new = AROWRegressor.from_group(group, r=1.0, variance_floor=0.3)
    # the precision-weighted mean of the members' intercepts (offset + b), around o
    expected = ((a.stats[KR.OFFSET] + a.b[0] - o) / a.Sb[0] + 3 * (b.stats[KR.OFFSET] + b.b[0] - o) / b.Sb[0]) \
        / (1 + pa + 3 * pb)
    assert new.stats[KR.OFFSET] == pytest.approx(o, rel=1e-12)
    np.testing.assert_allclose(new.b[0], expected, rtol=1e-9, atol=1e-9)
    for name in NAMES:
        fa, fb, f = arow_features(a, name), arow_features(b, name), arow_features(new, name)
        p = 1 + (1 / a.S[0, fa] - 1) + 3 * (1 / b.S[0, fb] - 1)
        h = a.W[0, fa] / a.S[0, fa] + 3 * b.W[0, fb] / b.S[0, fb]
        np.testing.assert_allclose(new.W[0, f], h / p, rtol=1e-9, atol=1e-12)


def test_arow_regressor_contributions_count_nothing_twice_and_survive_a_checkpoint():
    from edgelearn import AROWRegressor

    data = sensor_readings(600, 4)
    model = regressor(data[:250])
    first = model.contribution()
    restored = AROWRegressor.from_state(model.to_state())
    for x, y in data[250:]:
        model.learn_one(x, y)
        restored.learn_one(x, y)
    second = model.contribution()
    assert restored.contribution() == second  # the checkpoint kept the last contribution
    group = AROWRegressor.merge([first, second])
    assert group["offset_count"] == [1.0]  # one member, one offset, however many contributions
    one = AROWRegressor.from_group(group, r=1.0, variance_floor=0.3)
    np.testing.assert_allclose(one.b[0], model.b[0], rtol=1e-9, atol=1e-9)
    for name in NAMES:
        f = arow_features(model, name)
        np.testing.assert_allclose(by_name(group["channels"], "precision", name), 1.0 / model.S[0, f] - 1.0,
                                   rtol=1e-9)
    third = model.contribution()
    assert all(v == 0.0 for v in third["channels"]["n"]) and third["offset_count"] == [0.0]


def test_arow_regressor_group_start_beats_a_lone_start_and_adds_only_its_own():
    from edgelearn import AROWRegressor

    group = AROWRegressor.merge([regressor(sensor_readings(400, s)).contribution() for s in (5, 6)])
    joined = AROWRegressor.from_group(group, r=1.0, variance_floor=0.3)
    alone = AROWRegressor(r=1.0, variance_floor=0.3)
    err = {joined: [], alone: []}
    for x, y in sensor_readings(60, 7, drop=0.0):
        for model in (joined, alone):
            err[model].append(abs(model.predict_one(x) - y))
            model.learn_one(x, y)
    assert np.mean(err[joined]) < 0.5 * np.mean(err[alone])
    # the loaded offset is kept: the first reference after the start does not replace it
    from edgelearn.kernels import arow_regression as KR

    assert joined.stats[KR.OFFSET] == pytest.approx(group["offset_sum"][0] / group["offset_count"][0], rel=1e-12)
    own = joined.contribution()
    assert own["offset_count"] == [0.0] and own["offset_sum"] == [0.0]  # the group's offset is not its own
    msgpack.packb(own)
