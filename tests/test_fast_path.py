"""The gateway's per-message fast path and batched readings.

The fast path (``Pipeline.handle`` for plain data on a known stream, PAACDS's fused
``decide_one``, ``ChannelSpace``'s C-level lookup) must change nothing but the cost:
these tests compare it, output for output and bit for bit, with the full path it
skips (``parse_message``; the base class's separate observe, score and ask calls).
"""

from __future__ import annotations

import math
import tracemalloc

import msgpack
import numpy as np
import pytest

from edgelearn import PAACDS, Learner
from firmware_bridge.pipeline import Pipeline
from firmware_bridge.wire import (
    KnownNames,
    Limits,
    Topics,
    encode_batch,
    encode_data,
    encode_label,
    parse_message,
    plain_reading,
    validate_data,
)
from firmware_bridge.wire.logfile import iter_logs, write_log
from results_pages import load_tool

TOPICS = Topics()


def _instances(n: int, seed: int):
    """Dicts with channels that drop out, come back, arrive as ints, NaN or inf."""
    rng = np.random.default_rng(seed)
    names = ["t", "h", "co2", "light", "v"]
    for i in range(n):
        x = {}
        for j, name in enumerate(names):
            if rng.random() < 0.15:
                continue
            value = float(rng.normal(j, 1 + j))
            draw = rng.random()
            if draw < 0.03:
                value = math.nan
            elif draw < 0.04:
                value = math.inf
            elif draw < 0.15:
                value = int(value * 10)
            x[name] = value
        if i % 97 == 50:
            x[f"new{i}"] = 1.0  # a channel never seen before
        y = int(rng.integers(3)) if rng.random() < 0.5 else None
        yield x, y


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("target", [None, 0.2])
def test_fused_decide_one_is_the_base_class_path_bit_for_bit(n_classes, target):
    params = {"capacity": 8, "evict_after": 50, "n_classes": n_classes,
              "target_query_rate": target, "seed": 3}
    fused, reference = PAACDS(**params), PAACDS(**params)
    for x, y in _instances(1500, seed=n_classes):
        a = fused.decide_one(x)
        b = Learner.decide_one(reference, x)  # observe, score, ask: three calls
        assert (a.label, a.ask) == (b.label, b.ask)
        assert a.score == b.score or (math.isnan(a.score) and math.isnan(b.score))
        np.testing.assert_array_equal(a.slots, b.slots)
        np.testing.assert_array_equal(a.z, b.z)
        if y is not None:
            label = bool(y % 2) if n_classes == 2 else y
            fused.learn(a.slots, a.z, label)
            reference.learn(b.slots, b.z, label)
    assert fused.current_delta == reference.current_delta
    for name, array in fused.to_state()["learned"].items():
        np.testing.assert_array_equal(array, reference.to_state()["learned"][name], err_msg=name)


def test_channel_space_fast_lookup_gives_what_the_loop_gives():
    model = PAACDS(capacity=8)
    space = model.channels
    space.observe({"a": 1.0, "b": 2.0})
    for x in ({"a": 1.5, "b": 2}, {"b": 3.0, "a": -1.0}, {"a": 2**70, "b": 1.0},
              {"a": 1e308, "b": 1e308}, {"a": True, "b": 1.0}, {}):
        slots, values, k = space._lookup(x, claim=False)
        expected = [(space.slot_of(n), float(v)) for n, v in x.items()]
        assert [(int(s), float(v)) for s, v in zip(slots[:k], values[:k])] == expected
    with pytest.raises(TypeError, match="must be a number"):
        space.observe({"a": "1.5", "b": 1.0})  # numpy would have read the str as a number


# --- the pipeline: fast path against the full path -------------------------------------


class _NoFastPath(dict):
    """A data-topic table that never finds a stream: every message goes the full way."""

    def get(self, key, default=None):
        return default


def _pipelines(**kwargs):
    fast = Pipeline("paacds", {"capacity": 8, "n_classes": 3, "target_query_rate": 0.3},
                    **kwargs)
    full = Pipeline("paacds", {"capacity": 8, "n_classes": 3, "target_query_rate": 0.3},
                    **kwargs)
    full._data_topics = _NoFastPath()
    return fast, full


def _traffic(seed: int):
    """Single readings and batches, some with bad readings, NaNs, ints, labels."""
    rng = np.random.default_rng(seed)
    instances = list(_instances(600, seed))
    seq = 0
    i = 0
    while i < len(instances):
        stream = f"s{int(rng.integers(2))}"
        topic = TOPICS.data(stream)
        if rng.random() < 0.5:
            x, y = instances[i]
            i += 1
            yield topic, encode_data(float(seq), seq, x, y)
            seq += 1
            continue
        size = int(rng.integers(1, 6))
        readings = []
        for x, y in instances[i:i + size]:
            readings.append({"ts": float(seq), "seq": seq, "ch": x, **({"y": y} if y is not None else {})})
            seq += 1
        i += size
        if rng.random() < 0.2:
            readings[0]["seq"] = -1  # one bad reading rejects only itself
        if rng.random() < 0.05:
            readings[-1]["ch"] = {"a": True}
        yield topic, msgpack.packb({"readings": readings})


def _plain(outbound):
    body = msgpack.unpackb(outbound.payload)
    body.pop("req", None)  # request ids are random
    return outbound.topic, body


def test_fast_path_outputs_counters_and_learners_equal_the_full_path(monkeypatch):
    import firmware_bridge.pipeline.core as module

    fast, full = _pipelines()
    full_path = []
    monkeypatch.setattr(module, "parse_message",
                        lambda *args: full_path.append(1) or parse_message(*args))
    n_data = n_full = 0
    for topic, payload in _traffic(seed=5):
        n_data += 1
        before = len(full_path)
        a = fast.handle(topic, payload, 0.0)
        n_full += len(full_path) - before
        b = full.handle(topic, payload, 0.0)
        assert [_plain(o) for o in a] == [_plain(o) for o in b]
        # Answer every label request, in both, with its own id.
        for outs, pipeline in ((a, fast), (b, full)):
            for o in outs:
                if o.topic.endswith("/label_request"):
                    body = msgpack.unpackb(o.payload)
                    stream = TOPICS.parse(o.topic)[1]
                    pipeline.handle(TOPICS.label(stream), encode_label(body["req"], body["seq"] % 3), 0.0)
    assert fast.counters() == full.counters()
    # Most data messages took the fast path (NaN, ints made floats, bad readings and
    # new streams take the full one).
    assert n_full < n_data / 2, (n_full, n_data)
    counts = fast.counters()
    assert counts["batches"] > 0 and counts["bad_field_type"] > 0 and counts["non_finite_values"] > 0
    for stream in fast.streams:
        a, b = fast.learner(stream).to_state(), full.learner(stream).to_state()
        for name, array in a["learned"].items():
            np.testing.assert_array_equal(array, b["learned"][name], err_msg=name)


@pytest.mark.parametrize("obj", [
    {"ts": 1.0, "seq": 1, "ch": {"a": 1.0}},
    {"ts": 1, "seq": 0, "ch": {"a": 1, "b": 2.5}, "y": "on"},
    {"ts": 1.0, "seq": 1, "ch": {"a": float("nan")}},
    {"ts": 1.0, "seq": 1, "ch": {"a": True}},
    {"ts": float("inf"), "seq": 1, "ch": {}},
    {"ts": 1.0, "seq": 1, "ch": {"a b": 1.0}},
    {"ts": 1.0, "seq": 1, "ch": {"a": 1.0}, "extra": [[1]]},
    {"ts": 1.0, "seq": True, "ch": {}},
    {"ts": 1.0, "seq": 1, "ch": {"a": 1.0}, "y": 0.5},
    {"ts": 1.0, "seq": 1, "ch": {f"c{i}": 1.0 for i in range(65)}},
])
def test_plain_reading_accepts_only_what_validate_data_accepts_unchanged(obj):
    plain = plain_reading(obj, Limits(), KnownNames(64))
    full = validate_data(obj, "s1")
    if plain is not None:
        assert not full.non_finite
        assert plain == (full.ts, full.seq, full.channels, full.y)
        assert all(type(v) is float for v in plain[2].values())


# --- batches -------------------------------------------------------------------------------


def test_a_batch_gets_one_prediction_message_with_a_prediction_per_reading():
    pipeline = Pipeline("paacds", {"capacity": 8})
    readings = [(10.0 + i, i, {"t": 20.0 + i, "h": 40.0}, None) for i in range(5)]
    out = pipeline.handle(TOPICS.data("hub"), encode_batch(readings), 0.0)
    assert out[0].topic == TOPICS.prediction("hub")
    predictions = msgpack.unpackb(out[0].payload)["predictions"]
    assert [(p["seq"], p["ts"]) for p in predictions] == [(i, 10.0 + i) for i in range(5)]
    assert set(predictions[0]) == {"seq", "ts", "y", "score", "query"}
    # Label requests work as for single readings: one per reading asked about.
    requests = [msgpack.unpackb(o.payload) for o in out[1:]]
    assert all(o.topic == TOPICS.label_request("hub") for o in out[1:])
    assert [r["seq"] for r in requests] == [p["seq"] for p in predictions if p["query"]]
    assert requests, "an untrained PAACDS asks"
    pipeline.handle(TOPICS.label("hub"), encode_label(requests[0]["req"], True), 0.0)
    counts = pipeline.counters()
    assert (counts["messages"], counts["batches"], counts["data"], counts["predictions"]) == (2, 1, 5, 5)
    assert counts["learned"] == 1


def test_a_bad_reading_rejects_itself_counted_per_reading():
    pipeline = Pipeline("paacds", {"capacity": 8})
    batch = {"readings": [
        {"ts": 1.0, "seq": 0, "ch": {"t": 1.0}},
        {"ts": 1.0, "seq": -1, "ch": {"t": 1.0}},
        {"ts": 1.0, "seq": 2, "ch": {"t": True}},
        {"ts": 1.0, "seq": 3, "ch": {"t": float("nan"), "h": 2.0}, "y": True},
        {"ts": 1.0, "seq": 4, "ch": {"t": 1.0}, "y": 0.5},
    ]}
    out = pipeline.handle(TOPICS.data("hub"), msgpack.packb(batch), 0.0)
    predictions = msgpack.unpackb(out[0].payload)["predictions"]
    assert [p["seq"] for p in predictions] == [0, 3]
    counts = pipeline.counters()
    assert (counts["bad_field_type"], counts["bad_value_type"], counts["bad_label"]) == (1, 1, 1)
    assert counts["non_finite_values"] == 1 and counts["rejected"] == 3
    assert (counts["data"], counts["learned"], counts["batches"]) == (2, 1, 1)


@pytest.mark.parametrize("batch, reason", [
    ({"readings": []}, "bad_batch"),
    ({"readings": "x"}, "bad_batch"),
    ({"readings": [{"ts": 1.0, "seq": 0, "ch": {}}], "seq": 1}, "bad_batch"),
    ({"readings": [{"ts": 1.0, "seq": i, "ch": {}} for i in range(65)]}, "too_many_readings"),
])
def test_a_bad_batch_is_one_counted_reject(batch, reason):
    pipeline = Pipeline("paacds", {"capacity": 8})
    assert pipeline.handle(TOPICS.data("hub"), msgpack.packb(batch), 0.0) == []
    assert pipeline.counters()[reason] == 1 and pipeline.counters()["rejected"] == 1
    assert parse_message(TOPICS.data("hub"), msgpack.packb(batch), TOPICS).reason == reason


def test_a_batch_deeper_than_max_depth_is_too_deep():
    pipeline = Pipeline("paacds", {"capacity": 8}, limits=Limits(max_depth=3))
    payload = encode_batch([(1.0, 0, {"t": 1.0}, None)])
    pipeline.handle(TOPICS.data("hub"), encode_data(1.0, 0, {"t": 1.0}), 0.0)  # stream known
    assert pipeline.handle(TOPICS.data("hub"), payload, 0.0) == []
    assert pipeline.counters()["too_deep"] == 1


def test_a_recorded_batch_replays_identically(tmp_path):
    readings = [[(float(i * 4 + j), i * 4 + j, {"t": float(j), "h": float(i)}, bool(j % 2))
                 for j in range(4)] for i in range(30)]
    records = [(TOPICS.data("hub"), float(i), encode_batch(batch)) for i, batch in enumerate(readings)]
    live = Pipeline("paacds", {"capacity": 8}, label_policy="from_data")
    live_out = [live.handle(t, p, r) for t, r, p in records]
    write_log(tmp_path / "log.msgpack", records)
    replay = Pipeline("paacds", {"capacity": 8}, label_policy="from_data")
    replay_out = [replay.handle(r.topic, r.payload, r.received_at) for r in iter_logs(tmp_path)]
    assert [[_plain(o) for o in out] for out in replay_out] == [[_plain(o) for o in out] for out in live_out]
    assert replay.counters() == live.counters()
    assert replay.counters()["data"] == 120


# --- cost: structural, not absolute ------------------------------------------------------


def _payloads(n: int):
    return [encode_data(float(i), i, x, None if y is None else bool(y % 2))
            for i, (x, y) in enumerate(_instances(n, seed=9))]


def test_memory_does_not_grow_with_the_stream():
    pipeline = Pipeline("paacds", {"capacity": 16, "target_query_rate": 0.1},
                        label_policy="from_data")
    topic = TOPICS.data("s1")
    payloads = _payloads(2000)
    for payload in payloads:  # warm-up: compile, claim slots, fill caches
        pipeline.handle(topic, payload, 0.0)
    tracemalloc.start()
    try:
        for payload in payloads[:200]:
            pipeline.handle(topic, payload, 0.0)
        before = tracemalloc.take_snapshot()
        for _ in range(3):
            for payload in payloads:
                pipeline.handle(topic, payload, 0.0)
        after = tracemalloc.take_snapshot()
    finally:
        tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename") if s.size_diff > 0)
    # 6,000 messages: a byte per message would be 6 kB.
    assert grown < 4096, [str(s) for s in after.compare_to(before, "lineno")[:5]]


def test_pipeline_costs_a_bounded_multiple_of_a_bare_decode_and_encode():
    pipeline = Pipeline("paacds", {"capacity": 16, "target_query_rate": 0.1},
                        label_policy="from_data")
    topic = TOPICS.data("s1")
    payloads = _payloads(3000)
    for payload in payloads:
        pipeline.handle(topic, payload, 0.0)
    # The benchmark's own timing and reference loop (tools/bench_gateway.py).
    bench = load_tool("bench_gateway")
    ratio = (bench.cpu_per_item(lambda p: pipeline.handle(topic, p, 0.0), payloads, 5)
             / bench.cpu_per_item(bench.bare_codec(), payloads, 5))
    # About 8x on the development machine (it was 20x before the fast path); the
    # bound is generous for a loaded CI machine, tight enough to catch the full path.
    assert ratio < 16, ratio


# --- the jitted row loops (log replay, batch pass) against decide_one and learn ----------


def _rows(n: int, seed: int, n_labels: int):
    """A stream's rows: 6 channels a quarter missing, two more that appear mid-stream
    (beyond the learner's capacity, so slots are recycled), labels on about 60% of
    the rows drawn from ``n_labels`` labels (more than a learner of 3 classes holds)."""
    rng = np.random.default_rng(seed)
    names = [f"c{j}" for j in range(6)] + ["late", "later"]
    X = rng.normal(size=(n, len(names))) + np.arange(len(names))
    X[rng.random(X.shape) < 0.25] = np.nan
    X[: n // 3, 6] = np.nan  # "late" appears a third of the way in
    X[: 2 * n // 3, 7] = np.nan
    X[n // 2: n // 2 + 120, 0] = np.nan  # c0 away long enough to lose its slot
    labels = ["a", "b", "c", "d", "e"][:n_labels]
    score = X[:, 1] - X[:, 2]
    code = np.digitize(np.nan_to_num(score), np.linspace(-2, 2, n_labels - 1)).astype(float)
    code[rng.random(n) < 0.4] = -1.0
    return X, names, code, labels


def _per_message(model, X, names, codes, labels, learn_if_asked):
    """What the pipeline does reading by reading: decide_one, then learn a label the
    learner can take when it is to be learned."""
    out = {"pred": [], "margin": [], "asked": [], "usable": [], "feat": []}
    for i in range(X.shape[0]):
        x = {name: float(v) for name, v in zip(names, X[i]) if math.isfinite(v)}
        d = model.decide_one(x)
        out["pred"].append(d.label)
        out["margin"].append(d.score)
        out["asked"].append(d.ask)
        out["feat"].append((d.slots.copy(), d.z.copy()))
        c = int(codes[i])
        usable = c >= 0 and model.targets.accepts(labels[c])
        out["usable"].append(usable)
        if usable and (d.ask or not learn_if_asked):
            model.learn(d.slots, d.z, labels[c])
    return out


@pytest.mark.parametrize("kind", ["paacds", "active_arow"])
@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize("target, learn_if_asked", [(0.2, True), (None, False), (0.3, False)])
def test_jitted_row_loop_is_decide_one_and_learn_bit_for_bit(kind, n_classes, target, learn_if_asked):
    from edgelearn import make_learner
    from edgelearn.learners.arrays import RowsPass

    params = {"capacity": 6, "evict_after": 60, "n_classes": n_classes,
              "target_query_rate": target, "seed": 5}
    n_labels = 2 if n_classes == 2 else 5
    X, names, codes, labels = _rows(900, seed=n_classes, n_labels=n_labels)
    reference, jitted = make_learner(kind, params), make_learner(kind, params)
    expected = _per_message(reference, X, names, codes, labels, learn_if_asked)
    # Two passes, as a replay's chunks: the state carries over.
    half = X.shape[0] // 2
    got = [jitted.run_rows(RowsPass(X[a:b], names, codes[a:b], labels, learn_if_asked, True))
           for a, b in ((0, half), (half, X.shape[0]))]
    pred = np.concatenate([g.pred for g in got])
    margins = np.concatenate([g.margins for g in got])
    asked = np.concatenate([g.asked for g in got])
    assert asked.tolist() == expected["asked"]
    assert margins.tobytes() == np.array(expected["margin"]).tobytes()
    assert 0 < asked.sum() < len(asked) or target is None
    # predictions in the user's labels, with the labels the learner knew at that row
    decoded = []
    for g, offset in zip(got, (0, half)):
        for i, p in enumerate(g.pred.tolist()):
            state = [s for r, s in g.label_states if r < i][-1]
            if n_classes == 2:
                from edgelearn.learners.targets import BinaryTargets
                t = BinaryTargets("x")
                t.load(state)
                decoded.append(t.decode(p > 0) if t.labels else t.neutral())
            else:
                decoded.append(state[p] if p >= 0 and state else None)
    assert decoded == expected["pred"]
    if n_classes > 2:
        usable = np.concatenate([g.usable for g in got])
        assert usable.tolist() == expected["usable"]
        assert not all(expected["usable"][i] for i in np.flatnonzero(codes >= 0))  # some refused
    feats = [(g.feat_slots[i, :g.feat_k[i]], g.feat_z[i, :g.feat_k[i]]) for g in got
             for i in range(len(g.pred))]
    for (sa, za), (sb, zb) in zip(feats, expected["feat"]):
        assert sa.tolist() == sb.tolist() and za.tobytes() == zb.tobytes()
    a, b = reference.to_state(), jitted.to_state()
    assert a["learned"]["targets"] == b["learned"]["targets"]
    for name, array in a["learned"].items():
        if isinstance(array, np.ndarray):
            assert array.tobytes() == b["learned"][name].tobytes(), name
        else:
            assert array == b["learned"][name], name
    for name, array in a["channels"].items():
        if isinstance(array, np.ndarray):
            assert array.tobytes() == b["channels"][name].tobytes(), name
    assert reference.channels.n_evicted > 0
