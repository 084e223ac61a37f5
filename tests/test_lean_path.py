"""The one-call path of settled binary streams whose learner has one (PAACDS and
ActiveAROW, the default kind: ``Pipeline._predict_lean``, ``decide_and_learn``): one
kernel call observes, predicts, asks and learns.

It must change nothing but the cost: these tests run the same traffic through a
pipeline that takes it and one that never does (``_settle`` switched off, so every
reading goes through ``decide_one``, ``_score`` and ``_learn``) and compare outputs
byte for byte, counters, metrics, the label journal's lessons and the learners'
states bit for bit.
"""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest

from edgelearn import DEFAULT_KIND, PAACDS, ActiveAROW
from firmware_bridge.pipeline import Pipeline
from firmware_bridge.wire import Topics, encode_data, encode_label

TOPICS = Topics()

#: The kinds with a one-call path, and their learner classes.
KINDS = {"paacds": PAACDS, "active_arow": ActiveAROW}
assert DEFAULT_KIND in KINDS  # the operator's default takes the one-call path

LABEL_SETS = {
    "strings": ("empty", "occupied"),
    "bools": (False, True),
    "ints": (0, 1),
}


def _traffic(n: int, seed: int, labels: tuple, p_label: float):
    """Data messages on two streams: channels that drop out, come back, arrive as ints,
    NaN or inf, new channels now and then (evicting old ones), labelled or not, and a
    sequence with gaps, duplicates and a restart."""
    rng = np.random.default_rng(seed)
    names = ["t", "h", "co2", "light", "v"]
    seqs = {"a": 0, "b": 0}
    for i in range(n):
        stream = "a" if rng.random() < 0.7 else "b"
        x = {}
        for j, name in enumerate(names):
            if rng.random() < 0.15:
                continue
            value = float(rng.normal(j, 1 + j))
            draw = rng.random()
            if draw < 0.02:
                value = math.nan
            elif draw < 0.03:
                value = math.inf
            elif draw < 0.12:
                value = int(value * 10)
            x[name] = value
        if i % 89 == 40:
            x[f"new{i}"] = 1.0  # a channel never seen before
        signal = x.get("t", 0.0) + x.get("h", 0.0) - 2.5
        y = labels[int(signal > 0)] if rng.random() < p_label else None
        seq = seqs[stream]
        draw = rng.random()
        if draw < 0.02:
            seq += 3  # a gap
        elif draw < 0.03 and seq > 2:
            seq -= 2  # late or a duplicate
        elif i == n // 2:
            seq = 0  # a restart
        seqs[stream] = max(seqs[stream], seq) + 1
        yield TOPICS.data(stream), encode_data(float(i), seq, x, y)


def _pair(policy: str, journal: bool, kind: str = "paacds", **extra):
    params = {"capacity": 8, "evict_after": 40, "target_query_rate": 0.3, "seed": 5, **extra}
    lean = Pipeline(kind, params, label_policy=policy)
    reference = Pipeline(kind, params, label_policy=policy)
    reference._settle = lambda stream: None  # every reading the way it went before
    lessons: dict = {"lean": [], "reference": []}
    if journal:
        for name, pipeline in (("lean", lean), ("reference", reference)):
            def on_learn(stream, n, slots, z, y, _log=lessons[name], _p=pipeline):
                _log.append((stream, n, _p.layout(stream), slots.tolist(), z.tolist(), y,
                             _p.stream_counters(stream)["learned"]))
            pipeline.on_learn = on_learn
    return lean, reference, lessons


def _body(outbound):
    body = msgpack.unpackb(outbound.payload)
    req = body.pop("req", None)  # request ids are random
    return outbound.topic, body, req


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("policy", ["request", "from_data", "all"])
@pytest.mark.parametrize("labels", list(LABEL_SETS))
def test_lean_path_equals_the_per_call_path_bit_for_bit(policy, labels, kind):
    _check_lean_equals_reference(policy, labels, kind)


@pytest.mark.parametrize("policy", ["request", "from_data", "all"])
def test_lean_path_with_refits_equals_the_per_call_path(policy):
    """ActiveAROW with ``refit_until``: the refit before the one-call kernel and the keep
    after it are ``decide_one``'s and ``learn``'s, slots recycled in the refits' span
    (``evict_after`` 40) included."""
    _check_lean_equals_reference(policy, "strings", "active_arow", refit_until=160, refit_labels=32)


def _check_lean_equals_reference(policy, labels, kind, **extra):
    lean, reference, lessons = _pair(policy, journal=True, kind=kind, **extra)
    took = 0
    for topic, payload in _traffic(1500, seed=len(labels) + len(policy),
                                   labels=LABEL_SETS[labels], p_label=0.6):
        streams = [lean.stream_state(name) if name in lean.streams else None for name in ("a", "b")]
        before = sum(s is not None and s.lean is not None for s in streams)
        a = lean.handle(topic, payload, 1.0)
        b = reference.handle(topic, payload, 1.0)
        took += before
        if [o.payload for o in a] != [o.payload for o in b]:
            # only a label request's random id may differ
            assert [_body(o)[:2] for o in a] == [_body(o)[:2] for o in b]
        assert [(o.topic, o.qos, o.retain) for o in a] == [(o.topic, o.qos, o.retain) for o in b]
        for outs, pipeline in ((a, lean), (b, reference)):  # answer some label requests
            for o in outs:
                topic_, body, req = _body(o)
                if req is not None and body["seq"] % 3:
                    stream = TOPICS.parse(topic_)[1]
                    pipeline.handle(TOPICS.label(stream), encode_label(req, body["y_hat"]), 1.0)
    assert took > 1000, took  # most readings went the one-call way
    assert lean.counters() == reference.counters()
    # The same lessons, in the same order; the one-call path tells the journal after
    # the learner took the lesson and the counts say so (a checkpoint the journal
    # writes then holds the lesson with its count), the per-call path before.
    assert [r[:-1] for r in lessons["lean"]] == [r[:-1] for r in lessons["reference"]]
    assert len(lessons["lean"]) > 100
    assert all(r[-1] == r[1] for r in lessons["reference"])
    assert sum(r[-1] == r[1] + 1 for r in lessons["lean"]) > 100
    assert all(r[-1] in (r[1], r[1] + 1) for r in lessons["lean"])
    for stream in ("a", "b"):
        assert lean.stream_counters(stream) == reference.stream_counters(stream)
        assert vars(lean.metrics(stream)) == vars(reference.metrics(stream))
        assert lean.last_prediction(stream) == reference.last_prediction(stream)
        got, expected = lean.to_state(stream), reference.to_state(stream)
        assert got["learner"]["channels"]["names"] == expected["learner"]["channels"]["names"]
        for name, array in got["learner"]["learned"].items():
            np.testing.assert_array_equal(array, expected["learner"]["learned"][name], err_msg=name)


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_label_the_lean_table_does_not_know_takes_the_full_checks(kind):
    """A third label, and a label of another type, on a settled stream: counted as the
    per-call path counts them, and the stream keeps its one-call path."""
    lean, reference, _ = _pair("request", journal=False, kind=kind)
    topic = TOPICS.data("a")
    for seq in range(40):
        x = {"t": float(seq % 7), "h": float(seq % 5)}
        y = ("off", "on")[seq % 2] if seq < 30 else ("maybe", 1.0, True, "on")[seq % 4]
        a = lean.handle(topic, encode_data(0.0, seq, x, y), 0.0)
        b = reference.handle(topic, encode_data(0.0, seq, x, y), 0.0)
        assert [o.payload for o in a] == [o.payload for o in b]
    assert lean.stream_state("a").lean is not None
    assert lean.counters() == reference.counters()
    assert lean.counters()["unusable_label"] > 0
    assert vars(lean.metrics("a")) == vars(reference.metrics("a"))


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_zero_margin_predicts_what_decide_one_predicts(kind):
    """Without an intercept, a reading of channels never seen has a margin of exactly 0
    (every z is 0 at a channel's first observation); the one-call path predicts for it
    what the learner's decide_one does (PAACDS: the positive label, ActiveAROW: the
    negative one), labelled or not."""
    lean, reference, _ = _pair("all", journal=False, kind=kind, learn_intercept=False)
    topic = TOPICS.data("a")
    zero_margins = 0
    for seq in range(60):
        x = {"t": float(seq % 7), "h": float(seq % 5)} if seq % 10 else {f"new{seq}": 3.0}
        y = ("off", "on")[seq % 7 > 3] if seq % 4 else None
        a = lean.handle(topic, encode_data(0.0, seq, x, y), 0.0)
        b = reference.handle(topic, encode_data(0.0, seq, x, y), 0.0)
        assert [o.payload for o in a] == [o.payload for o in b], seq
        prediction = msgpack.unpackb(a[0].payload)
        if prediction["score"] == 0.0 and lean.stream_state("a").lean is not None:
            zero_margins += 1
            side = KINDS[kind].zero_margin_positive
            assert prediction["y"] == lean.learner("a").targets.decode(side)
    assert zero_margins >= 4
    assert lean.counters() == reference.counters()
    assert vars(lean.metrics("a")) == vars(reference.metrics("a"))


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("only_if_asked", [False, True])
@pytest.mark.parametrize("intercept", [True, False])
def test_decide_and_learn_equals_decide_one_then_learn(only_if_asked, kind, intercept):
    params = {"capacity": 8, "evict_after": 40, "target_query_rate": 0.2, "seed": 3,
              "learn_intercept": intercept}
    fused, reference = KINDS[kind](**params), KINDS[kind](**params)
    rng = np.random.default_rng(1)
    zero_margins = 0
    for i in range(1500):
        x = {name: float(rng.normal()) for name in ("a", "b", "c", f"n{i // 100}")
             if rng.random() < 0.8}
        if i % 50 == 7:
            x = {f"only{i}": 1.0}  # without an intercept: a margin of exactly 0
        y = None if rng.random() < 0.3 else ("no", "yes")[int(x.get("a", 0) > 0)]
        got, learned = fused.decide_and_learn(x, y, only_if_asked)
        expected = reference.decide_one(x)
        expected_learned = y is not None and (expected.ask or not only_if_asked)
        if expected_learned:
            reference.learn(expected.slots, expected.z, y)
        assert (got.label, got.score, got.ask, learned) == (
            expected.label, expected.score, expected.ask, expected_learned)
        np.testing.assert_array_equal(got.z, expected.z)
        zero_margins += got.score == 0.0 and y is not None
    assert zero_margins > 5 or intercept
    for name, array in fused.to_state()["learned"].items():
        np.testing.assert_array_equal(array, reference.to_state()["learned"][name], err_msg=name)
    with pytest.raises(ValueError, match="third"):
        fused.decide_and_learn({"a": 1.0}, "maybe")


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_multiclass_learner_decides_and_learns_in_two_calls(kind):
    """No one-call kernel for more than two classes: decide_and_learn is decide_one then
    learn, with the same errors (a fourth class is refused)."""
    params = {"capacity": 6, "n_classes": 3, "seed": 4}
    fused, reference = KINDS[kind](**params), KINDS[kind](**params)
    rng = np.random.default_rng(2)
    for i in range(300):
        x = {"a": float(rng.normal()), "b": float(rng.normal())}
        y = None if i % 5 == 0 else ("lo", "mid", "hi")[int(x["a"] > -0.5) + int(x["a"] > 0.5)]
        got, learned = fused.decide_and_learn(x, y)
        expected = reference.decide_one(x)
        if y is not None:
            reference.learn(expected.slots, expected.z, y)
        assert (got.label, got.score, got.ask, learned) == (
            expected.label, expected.score, expected.ask, y is not None)
    for name, array in fused.to_state()["learned"].items():
        np.testing.assert_array_equal(array, reference.to_state()["learned"][name], err_msg=name)
    with pytest.raises(ValueError, match="one more"):
        fused.decide_and_learn({"a": 1.0}, "other")


@pytest.mark.parametrize("kind", list(KINDS))
def test_copies_of_a_learner_take_their_own_arrays_on_the_one_call_path(kind):
    """A clone, deepcopy, pickle or state copy made after the one-call path ran
    continues exactly as the original and never writes to the original's arrays (the
    kernel's packed model refers to the arrays it was built from)."""
    import copy
    import pickle

    rng = np.random.default_rng(4)
    data = [({"a": float(rng.normal()), "b": float(rng.normal())}, bool(rng.random() < 0.5))
            for _ in range(400)]
    learner_class = KINDS[kind]
    model = learner_class(capacity=4, target_query_rate=0.3, seed=2)
    for x, y in data[:200]:
        model.decide_and_learn(x, y)
    copies = [model.clone(include_attributes=True), copy.deepcopy(model),
              pickle.loads(pickle.dumps(model)), learner_class.from_state(model.to_state())]
    before = model.to_state()["learned"]
    for other in copies:
        for x, y in data[200:]:
            other.decide_and_learn(x, y)
    for name, array in model.to_state()["learned"].items():  # untouched by the copies
        np.testing.assert_array_equal(array, before[name], err_msg=name)
    for x, y in data[200:]:
        model.decide_and_learn(x, y)
    for other in copies:
        for name, array in other.to_state()["learned"].items():
            np.testing.assert_array_equal(array, model.to_state()["learned"][name], err_msg=name)


@pytest.mark.parametrize("kind", list(KINDS))
def test_the_profile_tool_times_every_step_of_the_one_call_path(capsys, kind):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import profile_pipeline

    assert profile_pipeline.main(["--count", "600", "--passes", "1", "--kind", kind]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"({kind})" in lines[0]
    rows = dict(line.rsplit(None, 1) for line in lines[1:])
    steps = {name.strip(): value for name, value in rows.items()}
    assert set(steps) >= {"unpack", "plain_reading", "claim", "decide_learn", "handle"}
    # the whole costs more than any of its steps
    assert float(steps["handle"]) > max(float(steps[s]) for s in ("unpack", "claim", "decide_learn"))
