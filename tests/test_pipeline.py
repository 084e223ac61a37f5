"""Tests for firmware_bridge.pipeline, without a broker."""

from __future__ import annotations

import logging
import random

import msgpack
import numpy as np
import pytest

from firmware_bridge.pipeline import (
    PIPELINE_REJECTS,
    REJECT_COUNTERS,
    Outbound,
    Pipeline,
    StateMismatch,
)
from firmware_bridge.wire import (
    REJECT_REASONS,
    Limits,
    Topics,
    encode_data,
    encode_label,
)


class FakeClock:
    def __init__(self, now: float = 100.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def data(stream, seq, channels, y=None, ts=None):
    return f"sensors/{stream}/data", encode_data(float(seq) if ts is None else ts, seq, channels, y)


def label(stream, req, y):
    return f"edgelearn/{stream}/label", encode_label(req, y)


def unpack(outbound: Outbound):
    return msgpack.unpackb(outbound.payload)


def requests_in(out):
    return [unpack(o) for o in out if o.topic.endswith("/label_request")]


def make(kind="paacds", params=None, **kwargs):
    clock = kwargs.pop("clock", FakeClock())
    params = {"capacity": 16} if params is None else params
    return Pipeline(kind, params, clock=clock, **kwargs), clock


def spy_learn(pipeline, stream):
    """Record every learn() call of ``stream``'s learner, then call the real one."""
    learner = pipeline.learner(stream)
    calls = []
    real = learner.learn

    def learn(slots, z, y):
        calls.append((slots, z, y))
        real(slots, z, y)

    learner.learn = learn
    return calls


def test_one_prediction_per_accepted_data_message_across_streams():
    pipeline, _ = make(params={"capacity": 8, "target_query_rate": 0.3})
    rng = random.Random(0)
    seen = {}
    for seq in range(600):
        stream = f"s{seq % 3}"
        channels = {f"c{i}": rng.gauss(0, 1) for i in range(5) if rng.random() > 0.3}
        out = pipeline.handle(*data(stream, seq, channels), received_at=0.0)
        predictions = [o for o in out if o.topic == f"edgelearn/{stream}/prediction"]
        assert len(predictions) == 1
        body = unpack(predictions[0])
        assert body["seq"] == seq and body["ts"] == float(seq)
        assert set(body) == {"seq", "ts", "y", "score", "query"}
        assert all(o.topic.startswith(f"edgelearn/{stream}/") for o in out)
        seen[seq] = body
    assert len(seen) == 600
    counts = pipeline.counters()
    assert counts["data"] == counts["predictions"] == counts["messages"] == 600
    assert counts["rejected"] == 0
    assert pipeline.streams == ["s0", "s1", "s2"]


def test_label_request_answer_learned_exactly_once_from_the_kept_features():
    pipeline, _ = make("pa")  # PA asks for every label
    out = pipeline.handle(*data("s1", 0, {"a": 1.0, "b": 2.0}), received_at=0.0)
    (request,) = requests_in(out)
    assert set(request) == {"req", "seq", "ts", "y_hat", "score", "ttl"}
    assert request["seq"] == 0 and request["ttl"] == 3600.0
    prediction = unpack(out[0])
    assert prediction["query"] is True
    assert request["y_hat"] == prediction["y"] and request["score"] == prediction["score"]
    calls = spy_learn(pipeline, "s1")
    # Later messages move the channel statistics and claim new slots...
    kept = []
    learner = pipeline.learner("s1")
    real_decide = learner.decide_one

    def decide(x):
        decision = real_decide(x)
        kept.append(decision)
        return decision

    learner.decide_one = decide
    out2 = pipeline.handle(*data("s1", 1, {"a": 5.0, "c": 3.0}), received_at=0.0)
    (request2,) = requests_in(out2)
    for seq in range(2, 50):
        pipeline.handle(*data("s1", seq, {"a": float(seq), "c": -1.0}), received_at=0.0)
    # ...but an answer is learned from what the learner saw at prediction time.
    assert pipeline.handle(*label("s1", request2["req"], False), received_at=0.0) == []
    assert len(calls) == 1
    slots, z, y = calls[0]
    assert slots is kept[0].slots and z is kept[0].z and y is False
    assert slots.tolist() == kept[0].slots.tolist()
    # Exactly once: the same answer again is a duplicate, not a second lesson.
    pipeline.handle(*label("s1", request2["req"], False), received_at=0.0)
    pipeline.handle(*label("s1", request2["req"], True), received_at=0.0)
    assert len(calls) == 1
    counts = pipeline.counters()
    assert counts["learned"] == 1 and counts["label_answered"] == 1
    assert counts["label_duplicate"] == 2 and counts["rejected"] == 2
    assert counts["label_messages"] == 3
    # The first request is still pending and still works.
    pipeline.handle(*label("s1", request["req"], True), received_at=0.0)
    assert len(calls) == 2 and calls[1][2] is True


def test_forged_expired_wrong_stream_and_evicted_answers_are_counted_not_learned():
    pipeline, clock = make("pa", pending_capacity=3, label_ttl_s=10.0)
    reqs = []
    for seq in range(3):
        (request,) = requests_in(pipeline.handle(*data("s1", seq, {"a": 1.0}), 0.0))
        reqs.append(request["req"])
    pipeline.handle(*data("s2", 0, {"a": 1.0}), 0.0)
    calls = spy_learn(pipeline, "s1")
    # reqs[0] was evicted by s2's request (capacity 3).
    pipeline.handle(*label("s1", reqs[0], True), 0.0)
    # Forged ids: well-formed, but never issued.
    for i in range(100):
        pipeline.handle(*label("s1", f"gw1-{i:x}-{'0' * 16}", True), 0.0)
    # Right id, wrong stream: counted, and the request stays pending.
    pipeline.handle(*label("s2", reqs[1], True), 0.0)
    pipeline.handle(*label("s1", reqs[1], True), 0.0)
    assert len(calls) == 1
    clock.now += 10.0
    pipeline.handle(*label("s1", reqs[2], True), 0.0)
    assert len(calls) == 1
    counts = pipeline.counters()
    assert counts["label_evicted_request"] == 1
    assert counts["label_unknown_request"] == 100
    assert counts["label_wrong_stream"] == 1
    assert counts["label_expired"] == 1
    assert counts["label_answered"] == 1 and counts["learned"] == 1
    assert counts["rejected"] == 103
    assert counts["label_pending"] == 1  # s2's request


def test_expire_labels_drops_requests_nobody_answers():
    pipeline, clock = make("pa", label_ttl_s=5.0)
    for seq in range(3):
        pipeline.handle(*data("s1", seq, {"a": 1.0}), 0.0)
    assert pipeline.counters()["label_pending"] == 3
    clock.now += 5.0
    assert pipeline.expire_labels() == 3
    counts = pipeline.counters()
    assert counts["label_pending"] == 0 and counts["label_timed_out"] == 3


def test_stream_cap_rejects_new_streams_and_keeps_serving_old_ones():
    pipeline, _ = make(max_streams=3)
    for i in range(10):
        out = pipeline.handle(*data(f"s{i}", 0, {"a": 1.0}), 0.0)
        assert bool(out) == (i < 3)
    out = pipeline.handle(*data("s1", 1, {"a": 1.0}), 0.0)
    assert out[0].topic == "edgelearn/s1/prediction"
    counts = pipeline.counters()
    assert counts["too_many_streams"] == 7 and counts["rejected"] == 7
    assert counts["predictions"] == 4
    assert pipeline.streams == ["s0", "s1", "s2"]
    # A label answer for a stream beyond the cap does not create it.
    pipeline.handle(*label("s9", "gw1-0-0000000000000000", True), 0.0)
    assert len(pipeline.streams) == 3


def _bad_inputs():
    """One (topic, payload) per protocol reject reason."""
    topics = Topics()
    good = {"ts": 1.0, "seq": 1, "ch": {"a": 1.0}}
    pack = msgpack.packb
    return {
        "unknown_topic": ("sensors/s1/other", pack(good)),
        "bad_stream_id": ("sensors/status/data", pack(good)),
        "too_large": (topics.data("s1"), b"\x80" * 5000),
        "not_msgpack": (topics.data("s1"), b"\xc1"),
        "too_long": (topics.data("s1"), pack({"ts": 1.0, "seq": 1, "ch": {}, "x": "a" * 300})),
        "too_deep": (topics.data("s1"), b"\x91" * 10 + b"\x01"),
        "not_a_map": (topics.data("s1"), pack([1, 2])),
        "missing_field": (topics.data("s1"), pack({"ts": 1.0, "seq": 1})),
        "bad_field_type": (topics.data("s1"), pack({"ts": 1.0, "seq": -1, "ch": {}})),
        "too_many_channels": (
            topics.data("s1"),
            pack({"ts": 1.0, "seq": 1, "ch": {f"c{i}": 1.0 for i in range(65)}}),
        ),
        "bad_channel_name": (topics.data("s1"), pack({"ts": 1.0, "seq": 1, "ch": {"a b": 1.0}})),
        "bad_value_type": (topics.data("s1"), pack({"ts": 1.0, "seq": 1, "ch": {"a": True}})),
        "bad_label": (topics.label("s1"), pack({"req": "gw1-0-00", "y": 0.5})),
        "bad_batch": (topics.data("s1"), pack({"readings": [], "ts": 1.0})),
        "too_many_readings": (topics.data("s1"), pack({"readings": [good] * 65})),
        "not_json": (topics.data("s1"), b'{"temperature": 21.4'),
    }


def test_every_reject_is_counted_by_reason_and_the_pipeline_keeps_working():
    pipeline, _ = make()
    bad = _bad_inputs()
    assert set(bad) == set(REJECT_REASONS)
    for _ in range(3):
        for topic, payload in bad.values():
            assert pipeline.handle(topic, payload, 0.0) == []
    # NaN/inf channels are dropped, not rejects; the message is still predicted.
    out = pipeline.handle(*data("s1", 5, {"a": float("nan"), "b": float("inf"), "c": 1.0}), 0.0)
    assert unpack(out[0])["seq"] == 5
    counts = pipeline.counters()
    for reason in REJECT_REASONS:
        assert counts[reason] == 3, reason
    assert counts["non_finite_values"] == 2
    assert counts["rejected"] == 3 * len(REJECT_REASONS)
    assert counts["messages"] == 3 * len(REJECT_REASONS) + 1
    assert set(REJECT_COUNTERS) <= set(counts)
    assert set(PIPELINE_REJECTS) <= set(counts)


def test_labels_inside_data_are_learned_directly_with_policy_request():
    pipeline, _ = make("pa")
    out = pipeline.handle(*data("s1", 0, {"a": 1.0}, y=True), 0.0)
    assert len(out) == 1 and out[0].topic.endswith("/prediction")
    counts = pipeline.counters()
    assert counts["learned"] == 1 and counts["label_requests"] == 0
    assert pipeline.metrics("s1").n == 1


@pytest.mark.parametrize("policy", ["from_data", "all"])
def test_replay_policies_learn_recorded_labels_without_requests(policy):
    pipeline, _ = make(params={"capacity": 8, "target_query_rate": 0.2, "seed": 3},
                       label_policy=policy)
    rng = random.Random(1)
    # Every lesson, whichever way it is learned (learner.learn, or the one kernel call
    # of a settled binary PAACDS stream), is told to on_learn (the label journal).
    stream_calls = []
    pipeline.on_learn = lambda *lesson: stream_calls.append(lesson)
    asked = 0
    for seq in range(2000):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        out = pipeline.handle(*data("s1", seq, {"a": a, "b": b}, y=a + b > 0), 0.0)
        assert len(out) == 1  # no label requests when replaying
        asked += unpack(out[0])["query"]
    counts = pipeline.counters()
    assert counts["asked"] == asked and counts["label_requests"] == 0
    if policy == "from_data":
        assert counts["learned"] == asked == len(stream_calls)
        assert 0.1 < asked / 2000 < 0.3
    else:
        assert counts["learned"] == 2000
    status = pipeline.status()["streams"]["s1"]
    assert status["scored"] == 2000
    assert status["query_rate"] == asked / 2000
    assert status["accuracy"] > 0.85 and status["f1"] > 0.85


def test_from_data_does_not_learn_unasked_labels_and_request_learns_all_of_them():
    results = {}
    for policy in ("request", "from_data"):
        pipeline, _ = make(params={"capacity": 8, "delta": 1.0, "seed": 5}, label_policy=policy)
        for seq in range(300):
            pipeline.handle(*data("s1", seq, {"a": float(seq % 7) - 3}, y=seq % 7 > 3), 0.0)
        results[policy] = pipeline.counters()
    assert results["request"]["learned"] == 300
    assert results["from_data"]["learned"] == results["from_data"]["asked"] < 300


def test_unusable_labels_are_counted_rejects_never_crashes():
    # A binary learner takes any two labels; a third one, or a map, is unusable.
    binary, _ = make("pa")
    binary.handle(*data("s1", 0, {"a": 1.0}, y="walking"), 0.0)
    binary.handle(*data("s1", 1, {"a": 1.0}, y={"walking": True}), 0.0)
    binary.handle(*data("s1", 2, {"a": 1.0}, y=7), 0.0)
    (request,) = requests_in(binary.handle(*data("s1", 3, {"a": 1.0}), 0.0))
    binary.handle(*label("s1", request["req"], "running"), 0.0)
    binary.handle(*data("s1", 4, {"a": 1.0}, y=8), 0.0)
    counts = binary.counters()
    assert counts["unusable_label"] == 3 and counts["learned"] == 2
    assert counts["predictions"] == 5 and binary.metrics("s1").n == 2
    assert binary.learner("s1").classes == [7, "walking"]

    multi, _ = make(params={"capacity": 8, "n_classes": 3})
    for seq, y in enumerate(["a", "b", "c", "d", "e", "a", {"x": True}]):
        multi.handle(*data("s1", seq, {"v": float(seq)}, y=y), 0.0)
    counts = multi.counters()
    assert counts["predictions"] == 7
    assert counts["learned"] == 4  # a, b, c and a again
    assert counts["unusable_label"] == 3  # d, e (beyond n_classes) and the map
    assert counts["learner_error"] == 0


def test_prequential_metrics_score_the_prediction_made_before_learning():
    pipeline, _ = make("pa")
    # The first prediction of an untrained PA is False (margin 0), then it learns True.
    out = pipeline.handle(*data("s1", 0, {"a": 1.0}, y=True), 0.0)
    assert unpack(out[0])["y"] is False
    metrics = pipeline.metrics("s1")
    assert (metrics.n, metrics.n_correct) == (1, 0)
    rng = random.Random(4)
    correct = 0
    for seq in range(1, 300):
        a = rng.gauss(0, 1)
        # 1/-1 and 1/0 are the same binary labels as True/False for the metrics.
        y = rng.choice((1, True)) if a > 0 else rng.choice((0, -1, False))
        no_label = seq % 3 == 0
        out = pipeline.handle(*data("s1", seq, {"a": a}, y=None if no_label else y), 0.0)
        if not no_label:
            correct += unpack(out[0])["y"] == (a > 0)
    assert metrics.n == 1 + 299 - 99 and metrics.n_correct == correct
    assert correct / metrics.n > 0.9


def test_a_checkpoint_keeps_a_default_that_changed_since_it_was_saved(caplog):
    # an upgrade that changes a default (ActiveAROW's refit_until was 0) must not discard
    # the learned models of a gateway whose configuration leaves that parameter open
    from edgelearn.state import dumps, loads

    old, _ = make("active_arow", params={"capacity": 8, "seed": 1, "refit_until": 0})
    rng = random.Random(3)
    for seq in range(300):
        a = rng.gauss(0, 1)
        old.handle(*data("s1", seq, {"a": a, "b": rng.gauss(0, 1)}, y=a > 0), 0.0)
    state = loads(dumps(old.to_state("s1")))

    upgraded, _ = make("active_arow", params={"capacity": 8, "seed": 1})  # refit_until left open
    with caplog.at_level(logging.INFO, logger="firmware_bridge.pipeline"):
        upgraded.restore("s1", state)
    restored = upgraded.learner("s1")
    assert restored.get_params()["refit_until"] == 0 and np.array_equal(restored.W, old.learner("s1").W)
    assert "keeps its saved learner parameters" in caplog.text and "refit_until saved 0, default 160" in caplog.text
    x = {"a": 0.7, "b": -0.2}
    assert [o.payload for o in upgraded.handle(*data("s1", 300, x), 0.0)] == \
        [o.payload for o in old.handle(*data("s1", 300, x), 0.0)]

    pinned, _ = make("active_arow", params={"capacity": 8, "seed": 1, "refit_until": 160})  # set: must agree
    with pytest.raises(StateMismatch, match="refit_until saved 0, configured 160"):
        pinned.restore("s1", state)
    assert pinned.streams == []


def test_many_new_channel_names_are_ignored_with_memory_fixed():
    pipeline, _ = make(params={"capacity": 32, "evict_after": 1_000_000})
    before = pipeline.memory()
    for seq in range(2_000):
        channels = {f"n{seq}_{i}": 1.0 for i in range(50)}
        out = pipeline.handle(*data("s1", seq, channels), 0.0)
        assert len(out) >= 1
    space = pipeline.learner("s1").channels
    assert space.n_assigned == 32 and space.n_ignored == 2_000 * 50 - 32
    after = pipeline.memory()
    assert after["total"] == before["total"]
    assert after["learners"] == pipeline.learner("s1").memory_bytes()
    assert pipeline.status()["streams"]["s1"]["channels_ignored"] == space.n_ignored


def test_state_round_trip_and_mismatch():
    pipeline, _ = make(params={"capacity": 8, "seed": 1})
    rng = random.Random(2)
    for seq in range(200):
        a = rng.gauss(0, 1)
        pipeline.handle(*data("s1", seq, {"a": a}, y=a > 0), 0.0)
    state = pipeline.to_state("s1")
    assert state["last_seq"] == 199 and state["counters"]["data"] == 200

    from edgelearn.state import dumps, loads

    restored, _ = make(params={"capacity": 8, "seed": 1})
    restored.restore("s1", loads(dumps(state)))
    a = restored.learner("s1")
    b = pipeline.learner("s1")
    assert np.array_equal(a.W, b.W) and a.channels.names == b.channels.names
    assert restored.status()["streams"]["s1"]["data"] == 200
    # Same inputs from here on give the same outputs.
    for seq in range(200, 220):
        x = {"a": rng.gauss(0, 1)}
        assert [o.payload for o in restored.handle(*data("s1", seq, x), 0.0)][:1] == [
            o.payload for o in pipeline.handle(*data("s1", seq, x), 0.0)
        ][:1]

    other, _ = make(params={"capacity": 16, "seed": 1})
    with pytest.raises(StateMismatch, match="capacity saved 8, configured 16"):
        other.restore("s1", state)
    with pytest.raises(StateMismatch, match="of stream 's1'"):
        other.restore("s2", state)
    pa, _ = make("pa")
    with pytest.raises(StateMismatch, match="'PAACDS'"):
        pa.restore("s1", state)
    assert other.streams == [] and pa.streams == []

    capped, _ = make(params={"capacity": 8, "seed": 1}, max_streams=1)
    capped.handle(*data("s0", 0, {"a": 1.0}), 0.0)
    with pytest.raises(ValueError, match="max_streams=1"):
        capped.restore("s1", state)


def test_construction_errors_name_the_parameter():
    with pytest.raises(ValueError, match="'label_policy' parameter of Pipeline"):
        Pipeline("pa", {}, label_policy="sometimes")
    with pytest.raises(ValueError, match="'max_streams' parameter of Pipeline"):
        Pipeline("pa", {}, max_streams=0)
    with pytest.raises(ValueError, match="'kind' parameter"):
        Pipeline("svm", {})
    with pytest.raises(ValueError, match="no parameter 'gamma'"):
        Pipeline("pa", {"gamma": 1})
    with pytest.raises(ValueError, match="max_channel_name_bytes <= 64"):
        Pipeline("pa", {}, limits=Limits(max_channel_name_bytes=100))
    with pytest.raises(ValueError, match="id_prefix"):
        Pipeline("pa", {}, gateway_id="has space")


def test_custom_topics_and_qos():
    topics = Topics(
        data_template="plant/{stream}/in",
        prediction_template="plant/{stream}/out",
        label_request_template="plant/{stream}/ask",
        label_template="plant/{stream}/answer",
        status_template="plant/gw/{gateway}",
    )
    pipeline, _ = make("pa", topics=topics, prediction_qos=0)
    out = pipeline.handle("plant/p1/in", encode_data(1.0, 0, {"a": 1.0}), 0.0)
    assert [(o.topic, o.qos) for o in out] == [("plant/p1/out", 0), ("plant/p1/ask", 1)]
    req = unpack(out[1])["req"]
    pipeline.handle("plant/p1/answer", encode_label(req, True), 0.0)
    assert pipeline.counters()["learned"] == 1
    assert pipeline.handle("sensors/p1/data", encode_data(1.0, 0, {"a": 1.0}), 0.0) == []
    assert pipeline.counters()["unknown_topic"] == 1


def test_reject_logs_are_rate_limited(caplog):
    pipeline, clock = make(log_interval_s=60.0)
    with caplog.at_level("WARNING", logger="firmware_bridge.pipeline"):
        for _ in range(1000):
            pipeline.handle("sensors/s1/data", b"\xc1", 0.0)
        clock.now += 61
        pipeline.handle("sensors/s1/data", b"\xc1", 0.0)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "999 more like it" in lines[1]
    assert pipeline.counters()["not_msgpack"] == 1001


# -- multi-label streams ------------------------------------------------------------

KELM = {"window": 32, "block_size": 4, "gamma": 0.5, "J0": 1.0, "max_labels": 4, "capacity": 8}


def test_multilabel_stream_label_sets_in_data_requests_and_answers():
    pipeline, _ = make("kelm_multilabel", KELM)
    rng = random.Random(1)
    # Label sets inside data messages are learned at once and scored.
    for seq in range(12):
        a, b = rng.gauss(0, 1), rng.gauss(0, 1)
        out = pipeline.handle(*data("s1", seq, {"a": a, "b": b}, y={"hot": a > 0, "wet": b > 0}), 0.0)
        assert len(out) == 1 and isinstance(unpack(out[0])["y"], dict)
    assert pipeline.learner("s1").labels == ["hot", "wet"]
    # Without a label the learner asks for the whole set, naming the labels it knows.
    out = pipeline.handle(*data("s1", 12, {"a": 1.0, "b": -1.0}), 0.0)
    (request,) = requests_in(out)
    assert request["labels"] == ["hot", "wet"] and set(request["y_hat"]) == {"hot", "wet"}
    assert unpack(out[0])["y"] == request["y_hat"]
    calls = spy_learn(pipeline, "s1")
    assert pipeline.handle(*label("s1", request["req"], {"hot": True, "wet": False, "new": True}), 0.0) == []
    assert len(calls) == 1 and calls[0][2] == {"hot": True, "wet": False, "new": True}
    assert pipeline.learner("s1").labels == ["hot", "wet", "new"]
    status = pipeline.status()["streams"]["s1"]
    assert status["scored"] == 12 and {"hamming_loss", "micro_f1"} <= set(status)
    assert "accuracy" not in status and 0.0 <= status["hamming_loss"] <= 1.0
    counts = pipeline.counters()
    assert counts["learned"] == 13 and counts["rejected"] == 0


def test_multilabel_stream_rejects_single_labels_and_too_many_names():
    pipeline, _ = make("kelm_multilabel", {**KELM, "max_labels": 2})
    pipeline.handle(*data("s1", 0, {"a": 1.0}, y=True), 0.0)
    out = pipeline.handle(*data("s1", 1, {"a": 2.0}), 0.0)
    (request,) = requests_in(out)
    pipeline.handle(*label("s1", request["req"], "walking"), 0.0)
    pipeline.handle(*data("s1", 2, {"a": 3.0}, y={"x": True, "y": False, "z": True}), 0.0)
    counts = pipeline.counters()
    assert counts["unusable_label"] == 3 and counts["learned"] == 0
    assert counts["predictions"] == 3
    # Single-label streams still refuse label sets.
    binary, _ = make()
    binary.handle(*data("s1", 0, {"a": 1.0}, y={"x": True}), 0.0)
    assert binary.counters()["unusable_label"] == 1


def test_multilabel_replay_equals_the_learner_driven_directly():
    """An emotions slice replayed as data messages whose "y" is the label set
    (policy "from_data"): the pipeline's predictions and metrics are those of
    the learner run on the same dicts."""
    import edgelearn
    from edgelearn.datasets import load
    from edgelearn.metrics import MultiLabelMetrics

    ds = load("emotions")
    params = {"window": 64, "block_size": 10, "J0": 10.0, "max_labels": 6, "capacity": 80,
              "target_query_rate": 0.3}
    limits = Limits(max_payload_bytes=16384, max_channels=128, max_container_len=128)
    pipeline, _ = make("kelm_multilabel", params, label_policy="from_data", limits=limits)
    direct = edgelearn.make_learner("kelm_multilabel", params)
    expected = MultiLabelMetrics()
    names = [n.replace(" ", "_") for n in ds.feature_names]
    for seq in range(250):
        x = dict(zip(names, ds.X[seq].tolist()))
        y = dict(zip(ds.label_names, map(bool, ds.y[seq])))
        (prediction,) = pipeline.handle(*data("e", seq, x, y=y), 0.0)
        d = direct.decide_one(x)
        body = unpack(prediction)
        assert body["y"] == d.label and body["score"] == d.score and body["query"] == d.ask
        expected.update(y, d.label)
        if d.ask:
            direct.learn(d.slots, d.z, y)
    status = pipeline.status()["streams"]["e"]
    assert status["hamming_loss"] == expected.hamming_loss and status["micro_f1"] == expected.micro_f1
    assert status["learned"] == status["asked"] > 0
    assert pipeline.learner("e").Q.tobytes() == direct.Q.tobytes()


def test_an_ensemble_stream_asks_for_every_label_and_learns_the_answers():
    pipeline, _ = make("ensemble", {"capacity": 8, "chunk_size": 20, "n_members": 3, "reservoir_size": 20,
                                    "n_classes": 3})
    rng = random.Random(0)
    hits = []
    for seq in range(600):
        temperature = rng.uniform(0.0, 3.0)
        truth = ("cold", "ok", "hot")[int(temperature)]
        out = pipeline.handle(*data("room", seq, {"t": temperature, "noise": rng.gauss(0, 1)}), received_at=0.0)
        (request,) = requests_in(out)
        hits.append(unpack(out[0])["y"] == truth)
        pipeline.handle(*label("room", request["req"], truth), received_at=0.0)
    counts = pipeline.counters()
    assert counts["learned"] == 600 and counts["label_answered"] == 600 and counts["rejected"] == 0
    assert pipeline.learner("room").members == 3
    assert sum(hits[-200:]) / 200 > 0.8


@pytest.mark.parametrize("bad", [{"x": True}, "yes", 5, "a", -7])
def test_an_unusable_answer_leaves_the_request_open_for_a_correct_one(bad):
    pipeline, clock = make("pa", label_ttl_s=60.0)
    # A binary stream that knows its two labels: anything else is a third one.
    pipeline.handle(*data("s1", 0, {"a": 1.0}, y=True), received_at=0.0)
    pipeline.handle(*data("s1", 1, {"a": -1.0}, y=False), received_at=0.0)
    out = pipeline.handle(*data("s1", 2, {"a": 1.0, "b": 2.0}), received_at=0.0)
    (request,) = requests_in(out)
    calls = spy_learn(pipeline, "s1")
    pipeline.handle(*label("s1", request["req"], bad), received_at=0.0)
    counts = pipeline.counters()
    assert counts["unusable_label"] == 1 and counts["learned"] == 2
    assert counts["label_pending"] == 1 and counts["label_answered"] == 0
    # The correct answer right after it is learned, once.
    clock.now += 59.0
    pipeline.handle(*label("s1", request["req"], True), received_at=0.0)
    pipeline.handle(*label("s1", request["req"], True), received_at=0.0)
    counts = pipeline.counters()
    assert [c[2] for c in calls if c[2] is True or c[2] is False] == [True]
    assert counts["learned"] == 3 and counts["label_answered"] == 1
    assert counts["label_duplicate"] == 1 and counts["label_pending"] == 0


def test_an_unusable_answer_does_not_extend_the_ttl():
    pipeline, clock = make("pa", label_ttl_s=60.0)
    (request,) = requests_in(pipeline.handle(*data("s1", 0, {"a": 1.0}), received_at=0.0))
    pipeline.handle(*label("s1", request["req"], {"x": True}), received_at=0.0)  # a map
    clock.now += 60.0
    pipeline.handle(*label("s1", request["req"], True), received_at=0.0)
    counts = pipeline.counters()
    assert counts["learned"] == 0 and counts["label_expired"] == 1


def test_a_multiclass_answer_beyond_n_classes_leaves_the_request_open():
    pipeline, _ = make("synthesis_nb", {"capacity": 8, "n_classes": 3})  # asks for all
    for seq, y in enumerate("abc"):
        pipeline.handle(*data("s1", seq, {"a": float(seq)}, y=y), received_at=0.0)
    (request,) = requests_in(pipeline.handle(*data("s1", 3, {"a": 1.0}), received_at=0.0))
    pipeline.handle(*label("s1", request["req"], "d"), received_at=0.0)  # a 4th class
    assert pipeline.counters()["label_pending"] == 1
    pipeline.handle(*label("s1", request["req"], "b"), received_at=0.0)
    counts = pipeline.counters()
    assert counts["learned"] == 4 and counts["label_answered"] == 1


def _seq_counts(pipeline, stream="s1"):
    status = pipeline.status()
    per_stream = {k: status["streams"][stream][k] for k in
                  ("seq_missing", "seq_duplicates", "seq_out_of_order", "seq_restarts")}
    totals = {k: status["counters"][k] for k in per_stream}
    assert per_stream == totals  # one stream: the totals are its counts
    return per_stream


def test_sequence_accounting_gaps_duplicates_out_of_order_and_restarts(caplog):
    pipeline, _ = make("pa")
    seqs = [0, 1, 2, 5, 6, 4, 4, 6, 7, 200, 201, 0, 1, 2, 100]
    for seq in seqs:
        pipeline.handle(*data("s1", seq, {"a": 1.0}), received_at=0.0)
    counts = _seq_counts(pipeline)
    # 3, 4 missing after 5; 4 comes late; 4 and 6 again; 8..199 missing; 0 restarts;
    # 3..99 missing after the restart.
    assert counts == {"seq_missing": 1 + 192 + 97, "seq_duplicates": 2,
                      "seq_out_of_order": 1, "seq_restarts": 1}
    assert pipeline.counters()["predictions"] == len(seqs)  # accounted, still predicted
    assert "stream 's1': 2 message(s) missing (seq 5 after 2)" in caplog.text


def test_sequence_accounting_of_batched_readings():
    from firmware_bridge.wire import encode_batch
    pipeline, _ = make("pa")
    readings = [(0.0, seq, {"a": 1.0}, None) for seq in (0, 1, 3, 4, 4, 2)]
    pipeline.handle("sensors/s1/data", encode_batch(readings), received_at=0.0)
    assert _seq_counts(pipeline) == {"seq_missing": 0, "seq_duplicates": 1,
                                     "seq_out_of_order": 1, "seq_restarts": 0}


def test_sequence_far_behind_is_a_restart_and_a_huge_gap_is_counted():
    pipeline, _ = make("pa")
    for seq in (10**9, 10**9 + 5, 3):
        pipeline.handle(*data("s1", seq, {"a": 1.0}), received_at=0.0)
    assert _seq_counts(pipeline) == {"seq_missing": 4, "seq_duplicates": 0,
                                     "seq_out_of_order": 0, "seq_restarts": 1}


@pytest.mark.parametrize("kind", ["pa", "paacds", "synthesis_nb", "ensemble"])
def test_word_labels_end_to_end(kind):
    """Labels "occupied"/"empty" in data and in label answers; predictions and
    label requests on the wire in those labels."""
    pipeline, _ = make(kind, {"capacity": 8})
    rng = random.Random(3)
    on_wire = []
    for seq in range(400):
        a = rng.gauss(0, 1)
        word = "occupied" if a > 0 else "empty"
        out = pipeline.handle(*data("room", seq, {"a": a, "b": rng.gauss(0, 1)}), 0.0)
        on_wire.append(unpack(out[0])["y"])
        for request in requests_in(out):
            assert request["y_hat"] == on_wire[-1]
            pipeline.handle(*label("room", request["req"], word), 0.0)
    counts = pipeline.counters()
    assert counts["unusable_label"] == 0 and counts["learned"] > 0
    assert set(on_wire[-200:]) == {"occupied", "empty"}
    assert pipeline.learner("room").classes == ["empty", "occupied"]


def test_declared_constraints_of_the_channel_space_limits_and_pipeline():
    """Every invalid value a declared constraint names is refused by name, in the
    one message format (the learners' are checked by edgelearn.check_learner)."""
    from edgelearn import ChannelSpace
    from edgelearn.constraints import format_value
    from firmware_bridge.wire import Limits

    owners = [("ChannelSpace", ChannelSpace, {}), ("Limits", Limits, {}),
              ("Pipeline", Pipeline, {"learner_kind": "pa"})]
    for owner, build, required in owners:
        for name, constraint in build._parameter_constraints.items():
            for bad in constraint.invalid_values():
                with pytest.raises((TypeError, ValueError)) as info:
                    build(**required, **{name: bad})
                message = str(info.value)
                assert message.startswith(f"The '{name}' parameter of {owner} must be "), message
                assert message.endswith(f"Got {format_value(bad)}."), message


def test_settled_binary_labels_skip_the_checks_with_the_same_verdicts(monkeypatch):
    """Once a binary stream's two labels are settled, the usual label skips the
    label checks (the binary rules' settled_sides); every verdict, count and metric
    is the one the full checks give (the cache switched off)."""
    import firmware_bridge.pipeline.core as core
    import firmware_bridge.pipeline.tasks as tasks

    labels = [1, 0, True, False, 1.0, "x", 0, 1, None, False, 1, 2, 0] * 20

    def run():
        p = Pipeline("paacds", {"seed": 3})
        for seq, y in enumerate(labels):
            p.handle("sensors/s/data", encode_data(float(seq), seq, {"a": float(seq % 7), "b": 1.0}, y), 0.0)
        m = p.metrics("s")
        return p.counters(), (m.n, m.accuracy, m.f1), p.stream_state("s").settled_sides

    cached_counters, cached_metrics, settled = run()
    monkeypatch.setattr(core, "SETTLED_TYPES", frozenset())
    monkeypatch.setattr(tasks, "SETTLED_TYPES", frozenset())
    plain_counters, plain_metrics, nothing = run()
    assert settled and not nothing
    assert cached_counters == plain_counters and cached_metrics == plain_metrics
    assert cached_counters["unusable_label"] == 40  # "x" and 2, every time
