"""A contribution's envelope and its checks: each refusal has its named reason."""

import zlib

import msgpack
import numpy as np
import pytest

from edgelearn import PA, ActiveAROW
from edgelearn.contributions import REASONS, Limits, Rejected, check, pack, unpack


def contribution(cls=ActiveAROW, n=60, names=("a", "b", "c")):
    model = cls()
    for i in range(n):
        x = {name: float((i * (j + 3)) % 7) - 3.0 for j, name in enumerate(names)}
        model.learn_one(x, x[names[0]] > 0)
    return model.contribution()


def repacked(data, **changes):
    envelope = msgpack.unpackb(data, raw=False)
    envelope.update(changes)
    return msgpack.packb(envelope, use_bin_type=True)


def with_body(body_dict, **envelope_changes):
    body = msgpack.packb(body_dict, use_bin_type=True)
    return msgpack.packb({"v": 1, "group": "g", "sender": "x", "seq": 1, "weight": 1.0, "crc32": zlib.crc32(body),
                          "body": body, **envelope_changes}, use_bin_type=True)


def reason_of(data, **kwargs):
    with pytest.raises(Rejected) as error:
        unpack(data, **kwargs)
    assert error.value.reason in REASONS
    return error.value.reason, str(error.value)


def test_a_packed_contribution_comes_back_whole_and_merges():
    c = contribution()
    received = unpack(pack(c, "greenhouses", "gw-a", 5, 2.0), kind="ActiveAROW", structure=c["structure"])
    assert (received.group, received.sender, received.seq, received.weight) == ("greenhouses", "gw-a", 5, 2.0)
    assert received.contribution == c
    group = ActiveAROW.merge([received.contribution], [received.weight])
    assert group["channels"]["n"] == [2 * n for n in c["channels"]["n"]]


def test_too_large():
    assert reason_of(pack(contribution(), "g", "x"), limits=Limits(max_bytes=100))[0] == "too_large"


def test_malformed():
    assert reason_of(b"\xc1garbage")[0] == "malformed"
    assert reason_of(msgpack.packb([1, 2]))[0] == "malformed"
    reason, message = reason_of(repacked(pack(contribution(), "g", "x"), sender=7))
    assert reason == "malformed" and "'sender' must be a str. Got int." in message


def test_version_of_envelope_and_of_contribution():
    reason, message = reason_of(repacked(pack(contribution(), "g", "x"), v=2))
    assert (reason, message) == ("version", "Contribution envelope version must be 1. Got 2.")
    assert reason_of(with_body({**contribution(), "version": 9}))[0] == "version"


def test_checksum():
    data = pack(contribution(), "g", "x")
    envelope = msgpack.unpackb(data, raw=False)
    body = bytearray(envelope["body"])
    body[-1] ^= 0x01  # one bit flipped in transit
    reason, message = reason_of(repacked(data, body=bytes(body)))
    assert reason == "checksum" and "its envelope says" in message


@pytest.mark.parametrize("weight", [-1.0, 1e3, float("nan"), float("inf")])
def test_weight_beyond_its_bound(weight):
    reason, message = reason_of(pack(contribution(), "g", "x", 1, weight))
    assert reason == "weight" and message.startswith("A contribution's weight must be in [0, 100].")


def test_kind_and_structure():
    c = contribution()
    assert reason_of(pack(contribution(PA), "g", "x"), kind="ActiveAROW")[0] == "kind"
    assert reason_of(pack(c, "g", "x"), kind="ActiveAROW", structure={**c["structure"], "n_bins": 4})[0] == "kind"


def test_channel_count_flood():
    names = tuple(f"ch{i}" for i in range(40))
    reason, message = reason_of(pack(contribution(PA, names=names), "g", "x"), limits=Limits(max_channels=32))
    assert (reason, message) == ("channel_flood", "A contribution may name at most 32 channels. Got 40.")


def test_sizes():
    c = contribution()
    short = {**c, "channels": {**c["channels"], "mean": c["channels"]["mean"][:-1]}}
    reason, message = reason_of(with_body(short))
    assert reason == "sizes" and "must have one row per channel (3). Got 2." in message
    ragged = {**c, "channels": {**c["channels"], "precision": [c["channels"]["precision"][0][:2]]
                                + c["channels"]["precision"][1:]}}
    assert reason_of(with_body(ragged))[0] == "sizes"
    twice = {**c, "channels": {**c["channels"], "names": ["a", "a", "b"]}}
    assert reason_of(with_body(twice))[0] == "sizes"


def test_not_finite():
    c = contribution()
    rows = [list(r) for r in c["channels"]["precision_mean"]]
    rows[1][0] = float("nan")
    reason, message = reason_of(with_body({**c, "channels": {**c["channels"], "precision_mean": rows}}))
    assert reason == "not_finite" and "'precision_mean' must hold finite numbers. Got nan." in message
    assert reason_of(with_body({**c, "intercept_precision": [float("inf")]}))[0] == "not_finite"


def test_out_of_bounds():
    c = contribution()
    counts = list(c["channels"]["n"])
    counts[0] = 1e9
    reason, message = reason_of(with_body({**c, "channels": {**c["channels"], "n": counts}}))
    assert reason == "out_of_bounds" and "'n' must hold numbers in [0, 1e+07]. Got 1000000000.0." in message
    rows = [list(r) for r in c["channels"]["precision"]]
    rows[0][0] = -1.0  # a precision never falls: a made-up contribution
    assert reason_of(with_body({**c, "channels": {**c["channels"], "precision": rows}}))[0] == "out_of_bounds"


def test_check_alone_is_the_same_checks():
    check(contribution())
    with pytest.raises(Rejected):
        check({"channels": {}})


def test_a_hostile_weight_claim_moves_the_group_by_at_most_its_bounded_weight():
    """A gateway may state any weight: beyond MAX_WEIGHT it is refused and the group is
    untouched; within it, the contribution counts exactly as that many copies of
    itself, so each of the group's weights moves at most by the precision share the
    stated weight gives it, never more."""
    from edgelearn.merging import MAX_WEIGHT

    honest = ActiveAROW.merge([contribution(n=60 + 10 * s) for s in range(3)])
    liar = ActiveAROW()  # learned the opposite concept: its weights pull the other way
    for i in range(60):
        x = {name: float((i * (j + 3)) % 7) - 3.0 for j, name in enumerate(("a", "b", "c"))}
        liar.learn_one(x, not x["a"] > 0)
    claim = liar.contribution()
    for weight in (1e6, MAX_WEIGHT * 1.01):
        assert reason_of(pack(claim, "g", "x", 1, weight))[0] == "weight"
    received = unpack(pack(claim, "g", "x", 1, MAX_WEIGHT))
    moved = ActiveAROW.merge([received.contribution], [received.weight], group=honest)
    copies = ActiveAROW.merge([claim] * int(MAX_WEIGHT), group=honest)
    np.testing.assert_allclose(moved["channels"]["precision"], copies["channels"]["precision"], rtol=1e-9)
    np.testing.assert_allclose(moved["channels"]["precision_mean"], copies["channels"]["precision_mean"],
                               rtol=1e-9, atol=1e-12)
    mean = {}
    for name, group in (("honest", honest), ("moved", moved)):
        part = group["channels"]
        mean[name] = np.asarray(part["precision_mean"]) / (1.0 + np.asarray(part["precision"]))
    part, own = honest["channels"], claim["channels"]
    order = [own["names"].index(n) for n in part["names"]]
    p_group = 1.0 + np.asarray(part["precision"])
    p_liar = MAX_WEIGHT * np.asarray(own["precision"])[order]
    mean_liar = np.asarray(own["precision_mean"])[order] / np.where(p_liar > 0, p_liar / MAX_WEIGHT, 1.0)
    share = p_liar / (p_group + p_liar)  # what the stated weight buys it, and no more
    np.testing.assert_allclose(mean["moved"], (1 - share) * mean["honest"] + share * mean_liar, rtol=1e-9,
                               atol=1e-12)
    assert np.all(np.abs(mean["moved"] - mean["honest"]) <= share * np.abs(mean_liar - mean["honest"]) + 1e-12)
    assert np.abs(mean["moved"] - mean["honest"]).max() > 0.01  # it did move: the test can see a move


# -- content bounds: what no learner of the group could have learned ----------------------


def honest_totals():
    """(learner with the group's parameters, a total of two honest learners), per mergeable kind."""
    from edgelearn import PAACDS, AROWRegressor

    rng = np.random.default_rng(29)
    cases = []
    for make in (lambda: ActiveAROW(), lambda: ActiveAROW(n_classes=3), lambda: PA(), lambda: PAACDS(),
                 lambda: AROWRegressor(), lambda: ActiveAROW(r=0.5, variance_floor=0.0)):
        learners = [make(), make()]
        for model in learners:
            for _ in range(300):
                x = {k: float(rng.normal() * 5 + 3) for k in "abcd" if rng.random() > 0.2}
                score = x.get("a", 3.0) - x.get("b", 3.0)
                if model.task == "regression":
                    y = 10.0 + score
                elif model.task == "multiclass":
                    y = "lo" if score < -2 else ("mid" if score < 2 else "hi")
                else:
                    y = score > 0
                model.learn_one(x, y)
        kind = type(learners[0])
        total = kind.merge([learners[0].contribution()])
        total = kind.merge([learners[1].contribution()], group=total)  # a gateway's two streams
        cases.append((make(), total))
    return cases


def test_honest_totals_of_every_mergeable_kind_are_within_the_content_bounds():
    for bounds, total in honest_totals():
        assert bounds.content_problem(total) is None, type(bounds).__name__
        assert bounds.content_problem(type(bounds).merge([total], [MAX_WEIGHT_OF_TEST])) is None


MAX_WEIGHT_OF_TEST = 100.0


def test_a_claim_no_learner_could_have_learned_is_a_content_problem():
    cases = {type(b).__name__ + ("-multi" if "n_classes" in t["structure"] else ""): (b, t)
             for b, t in honest_totals()}
    bounds, total = cases["ActiveAROW"]
    part = total["channels"]

    def changed(**channel_changes):
        return {**total, "channels": {**part, **channel_changes}}

    # a precision its readings cannot buy (the weight a liar would win by it)
    inflated = [[v * 1e6 for v in row] for row in part["precision"]]
    assert "claims a precision" in bounds.content_problem(changed(precision=inflated))
    # the same precision with the readings to back it is within the bound (the bound is the readings)
    assert bounds.content_problem(changed(precision=inflated, n=[n * 1e6 for n in part["n"]],
                                          bin_counts=[[c * 1e6 for c in row] for row in part["bin_counts"]])) is None
    # bin counts beyond the readings, or negative
    assert "bin counts" in bounds.content_problem(changed(bin_counts=[[c * 3 for c in row]
                                                                     for row in part["bin_counts"]]))
    assert "bin counts" in bounds.content_problem(changed(bin_counts=[[-c for c in row]
                                                                     for row in part["bin_counts"]]))
    # more labels than a binary learner has, and model-wide lists of the wrong length
    assert "labels" in bounds.content_problem({**total, "labels": [False, True, "maybe"]})
    assert "intercept_precision" in bounds.content_problem({**total, "intercept_precision": [0.0] * 5})
    multi_bounds, multi = cases["ActiveAROW-multi"]
    assert "labels" in multi_bounds.content_problem({**multi, "labels": ["a", "b", "c", "d"]})
    assert "intercept_precision" in multi_bounds.content_problem({**multi, "intercept_precision": [0.0]})
    # the regressor's precision bound, with its own r
    reg_bounds, reg = cases["AROWRegressor"]
    reg_part = reg["channels"]
    assert reg_bounds.content_problem(reg) is None
    assert "claims a precision" in reg_bounds.content_problem(
        {**reg, "channels": {**reg_part, "precision": [v + 1e9 for v in reg_part["precision"]]}})
