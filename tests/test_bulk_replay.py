"""The jitted log replay against the per-message pipeline, bit for bit."""

import math

import numpy as np
import pytest

from firmware_bridge.offline.replay import replay_records
from firmware_bridge.pipeline import Pipeline
from firmware_bridge.wire import Limits, encode_batch, encode_data, encode_label
from firmware_bridge.wire.logfile import LogRecord, iter_logs, write_log


def _log_records(seed: int, n: int = 3000, label_kind: str = "str") -> list[LogRecord]:
    """Three sensor streams with channels that vanish and come back, a channel
    set larger than the learner's capacity (slots recycled), labels in the
    user's terms on some messages, a third label now and then (unusable),
    non-finite values, malformed payloads, unknown topics, stray label
    answers, and a fourth stream beyond max_streams."""
    rng = np.random.default_rng(seed)
    pos, neg, third = {"str": ("occupied", "empty", "maybe"), "bool": (True, False, "maybe"),
                       "int": (1, 0, 7), "many": ("hot", "cold", "warm"),
                       "more": ("hot", "cold", "warm")}[label_kind]
    records = []
    t = 0.0
    seqs = {}
    for i in range(n):
        t += 0.5
        stream = ["kitchen", "hall", "attic", "garage"][min(int(rng.integers(0, 31)) // 10, 3)]
        seq = seqs[stream] = seqs.get(stream, -1) + 1
        base = rng.normal(size=6)
        channels = {}
        for j in range(6):
            # channel 5 comes and goes in long outages; 2 and 3 drop out at random
            if (j in (2, 3) and rng.random() < 0.3) or (j == 5 and (i // 400) % 2):
                continue
            channels[f"c{j}"] = float(base[j])
        if i % 150 == 75:  # a burst of new channel names: more than capacity, slots recycled
            for j in range(6, 12):
                channels[f"x{i}_{j}"] = float(rng.normal())
        if rng.random() < 0.02:
            channels["c1"] = math.nan
        y = None
        r = rng.random()
        if r < 0.7:
            y = pos if base[0] + 0.5 * base[1] > 0 else neg
            if label_kind in ("many", "more") and abs(base[0]) < 0.3:
                y = third
        elif r < 0.71:
            y = third if label_kind not in ("many", "more") else {"hot": True}
        elif r < 0.73 and label_kind == "more" and i > n // 2:
            y = "mild"  # a fourth label, once the three classes are known
        payload = encode_data(t, seq, channels, y)
        if i % 97 == 5:  # a batch of readings (one of them bad now and then)
            more = [(t + 0.1 * k, seq + k, channels, y) for k in range(1, 4)]
            seqs[stream] = seq + 3
            payload = encode_batch([(t, seq, channels, y), *more])
            if i % 3 == 0:
                payload = payload.replace(b"seq", b"sex", 1)
        elif rng.random() < 0.01:
            payload = payload[:-3]  # malformed
        if rng.random() < 0.005:
            seqs[stream] += 2  # a gap in the sequence
        records.append(LogRecord(f"sensors/{stream}/data", t, payload))
        if rng.random() < 0.01:
            records.append(LogRecord("sensors/kitchen/oops", t, b"\x80"))
        if rng.random() < 0.01:
            records.append(LogRecord(f"edgelearn/{stream}/label", t, encode_label("gw1-9", pos)))
    return records


def _pipeline(policy: str = "from_data", kind: str = "paacds", **params) -> Pipeline:
    params = {"capacity": 8, "evict_after": 50, "target_query_rate": 0.2, "seed": 3, **params}
    return Pipeline(kind, params, max_streams=3, label_policy=policy,
                    limits=Limits(max_channels=16))


def _assert_same(live: Pipeline, bulk: Pipeline) -> None:
    assert live.counters() == bulk.counters()
    assert live.status()["streams"] == bulk.status()["streams"]
    assert live.streams == bulk.streams
    for name in live.streams:
        a, b = live.to_state(name), bulk.to_state(name)
        assert a["counters"] == b["counters"] and a["last_seq"] == b["last_seq"]
        la, lb = a["learner"], b["learner"]
        assert la.keys() == lb.keys()
        _assert_equal_tree(la, lb)
        ma, mb = live.metrics(name), bulk.metrics(name)
        assert (ma.n, ma.accuracy, ma.f1) == (mb.n, mb.accuracy, mb.f1)


def _assert_equal_tree(a, b, path="state"):
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _assert_equal_tree(a[key], b[key], f"{path}.{key}")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        assert a.tobytes() == b.tobytes(), path  # bit for bit, NaN included
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_equal_tree(x, y, f"{path}[{i}]")
    elif isinstance(a, float) and isinstance(b, float):
        assert a == b or (a != a and b != b), path
    else:
        assert a == b and type(a) is type(b), path


@pytest.mark.parametrize("kind", ["paacds", "active_arow"])
@pytest.mark.parametrize(("seed", "labels", "policy"), [
    (0, "str", "from_data"), (1, "bool", "from_data"), (2, "int", "all"), (3, "str", "all"),
])
def test_jitted_log_replay_equals_the_live_pipeline(seed, labels, policy, kind):
    records = _log_records(seed, label_kind=labels)
    live, bulk = _pipeline(policy, kind), _pipeline(policy, kind)
    ran = replay_records(live, records, jit=False, keep_predictions=True)
    jitted = replay_records(bulk, records, keep_predictions=True)
    assert set(jitted["paths"].values()) == {"jitted"}
    assert set(ran["paths"]) == set(jitted["paths"]) and len(jitted["paths"]) == 3
    c = bulk.counters()
    # the log has what the test is about
    assert c["too_many_streams"] > 0 and c["unusable_label"] > 0 and c["non_finite_values"] > 0
    assert c["not_msgpack"] > 0 and c["unknown_topic"] > 0 and c["label_unknown_request"] > 0
    assert c["batches"] > 0 and c["seq_missing"] > 0 and c["missing_field"] > 0
    assert any(s["channels_evicted"] > 0 for s in bulk.status()["streams"].values())
    for name in live.streams:
        a, b = ran["outputs"][name], jitted["outputs"][name]
        assert a["ask"] == b["ask"]
        assert [(type(v), v) for v in a["y"]] == [(type(v), v) for v in b["y"]]
        assert np.array_equal(np.array(a["score"]), np.array(b["score"]))
    _assert_same(live, bulk)


@pytest.mark.parametrize("kind", ["paacds", "active_arow"])
def test_chunks_carry_the_state_over(kind):
    records = _log_records(7, n=2500)
    live, bulk = _pipeline(kind=kind), _pipeline(kind=kind)
    ran = replay_records(live, records, jit=False, keep_predictions=True)
    chunked = replay_records(bulk, records, keep_predictions=True, chunk=97)
    assert ran["outputs"] == chunked["outputs"]
    _assert_same(live, bulk)
    for name in live.streams:  # the scoring's own record of the labels, too
        assert live.stream_state(name).sides.to_state() == bulk.stream_state(name).sides.to_state()


def test_a_stream_with_channels_in_differing_orders_takes_the_per_message_path():
    records = [LogRecord("sensors/s/data", float(i), encode_data(
        float(i), i, {"a": 1.0 * i, "b": 2.0} if i % 2 else {"b": 2.0, "a": -1.0 * i}, i % 3 == 0))
        for i in range(200)]
    live, bulk = _pipeline(), _pipeline()
    replay_records(live, records, jit=False)
    result = replay_records(bulk, records)
    assert result["paths"]["s"].startswith("per-message")
    _assert_same(live, bulk)


def test_replay_of_a_written_log(tmp_path):
    path = tmp_path / "a.msgpack"
    records = _log_records(5, n=800)
    write_log(path, records)
    live, bulk = _pipeline(), _pipeline()
    replay_records(live, iter_logs([path]), jit=False)
    replay_records(bulk, iter_logs([path]))
    _assert_same(live, bulk)


def test_other_learners_say_they_run_per_message():
    records = _log_records(0, n=300)
    pipeline = Pipeline("pa", {"capacity": 8}, max_streams=3, label_policy="from_data",
                        limits=Limits(max_channels=16))
    result = replay_records(pipeline, records)
    assert all(p.startswith("per-message: pa has no jitted") for p in result["paths"].values())


@pytest.mark.parametrize("kind", ["paacds", "active_arow"])
@pytest.mark.parametrize(("seed", "policy", "chunk", "labels"), [
    (0, "from_data", 65_536, "many"), (1, "all", 65_536, "many"), (2, "from_data", 97, "more"),
    (3, "all", 97, "more"),
])
def test_jitted_multiclass_log_replay_equals_the_live_pipeline(seed, policy, chunk, labels, kind):
    # Three classes, a multi-label map now and then (unusable); with "more" a fourth
    # label in the second half, when the classes are full (unusable): chunks with it
    # that the learner could still take (or its metrics refuse) run per message.
    records = _log_records(seed, label_kind=labels)
    live = _pipeline(policy, kind, n_classes=3)
    bulk = _pipeline(policy, kind, n_classes=3)
    ran = replay_records(live, records, jit=False, keep_predictions=True)
    jitted = replay_records(bulk, records, keep_predictions=True, chunk=chunk)
    assert len(jitted["paths"]) == 3
    if labels == "many":
        assert set(jitted["paths"].values()) == {"jitted"}
    else:
        assert "jitted" in jitted["paths"].values()
    c = bulk.counters()
    assert c["unusable_label"] > 0 and c["learned"] > 0
    for name in live.streams:
        a, b = ran["outputs"][name], jitted["outputs"][name]
        assert a["ask"] == b["ask"]
        assert [(type(v), v) for v in a["y"]] == [(type(v), v) for v in b["y"]]
        assert np.array_equal(np.array(a["score"]), np.array(b["score"]))
    _assert_same(live, bulk)
    for name in live.streams:
        assert live.metrics(name).labels == bulk.metrics(name).labels
