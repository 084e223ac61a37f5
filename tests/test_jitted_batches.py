"""The gateway's jitted batch path (one decode, one learner pass per batch) against
its reading-by-reading path: the same outbound messages, counters and learner state."""

import copy
import math

import msgpack
import numpy as np
import pytest

from firmware_bridge.service.journal import LabelJournal, read_journal
from firmware_bridge.pipeline import Pipeline
from firmware_bridge.wire import Limits, encode_batch, encode_data, encode_label


def _traffic(seed: int, n: int = 400, fourth: str | None = None):
    """Batches of two streams with channels that come and go, labels now and then
    (a third label too), NaN values, gaps, single readings, and label answers."""
    rng = np.random.default_rng(seed)
    seqs = {"s": 0, "t": 0}
    for i in range(n):
        stream = "s" if rng.random() < 0.7 else "t"
        readings = []
        for _ in range(int(rng.integers(1, 9))):
            base = rng.normal(size=6)
            channels = {f"c{j}": float(base[j]) for j in range(6)
                        if not (j in (2, 3) and rng.random() < 0.3) and not (j == 5 and (i // 80) % 2)}
            if i % 60 == 30:
                channels[f"new{i}"] = 1.0  # more names than the learner's capacity
            if rng.random() < 0.02:
                channels["c1"] = math.nan
            r = rng.random()
            y = None if r < 0.8 else ("occupied" if base[0] > 0 else "empty") if r < 0.98 else "maybe"
            if fourth is not None and y == "maybe" and i > n // 2 and rng.random() < 0.5:
                y = fourth  # a multiclass learner of 3 classes: one label too many
            readings.append((float(i), seqs[stream], channels, y))
            seqs[stream] += 1 if rng.random() > 0.02 else 3
        payload = encode_batch(readings) if len(readings) > 1 or rng.random() < 0.5 else encode_data(*readings[0])
        yield "data", f"sensors/{stream}/data", payload
        if rng.random() < 0.3:
            yield "answer", int(rng.integers(0, 1000)), "occupied" if rng.random() < 0.5 else "empty"


def _normalized(outputs, issued):
    out = []
    for o in outputs:
        body = msgpack.unpackb(o.payload)
        if "req" in body:
            issued.append(body["req"])
            body["req"] = len(issued) - 1
        out.append((o.topic, o.qos, o.retain, body))
    return out


def _pipelines(policy: str, kind: str = "paacds", n_classes: int = 2, **extra):
    params = {"capacity": 6, "evict_after": 40, "target_query_rate": 0.3, "seed": 5,
              "n_classes": n_classes, **extra}
    jitted = Pipeline(kind, params, label_policy=policy, limits=Limits(max_channels=16))
    plain = Pipeline(kind, params, label_policy=policy, limits=Limits(max_channels=16))
    plain.batch_path = None
    return jitted, plain


def _run(policy: str, seed: int, journal: bool = False, kind: str = "paacds", n_classes: int = 2, **extra):
    jitted, plain = _pipelines(policy, kind, n_classes, **extra)
    lessons = {id(jitted): [], id(plain): []}
    if journal:
        for p in (jitted, plain):
            p.on_learn = lambda stream, n, slots, z, y, into=lessons[id(p)]: into.append(
                (stream, n, slots.tolist(), z.tobytes(), y))
    issued = {id(jitted): [], id(plain): []}
    for kind, a, b in _traffic(seed, fourth=None if n_classes == 2 else "mild"):
        got = []
        for p in (jitted, plain):
            if kind == "data":
                got.append(_normalized(p.handle(a, b, 1.0), issued[id(p)]))
            else:
                ids = issued[id(p)]
                if not ids:
                    continue
                req = ids[a % len(ids)]
                got.append(p.handle(f"edgelearn/{'s' if '-' in req else 's'}/label", encode_label(req, b), 1.0))
        if got:
            assert got[0] == got[1]
    assert lessons[id(jitted)] == lessons[id(plain)]
    return jitted, plain


def _assert_same_state(a: Pipeline, b: Pipeline) -> None:
    assert a.counters() == b.counters()
    assert a.status()["streams"] == b.status()["streams"]
    for name in a.streams:
        sa, sb = a.to_state(name), b.to_state(name)
        assert msgpack.packb(sa, default=lambda v: v.tobytes()) == msgpack.packb(sb, default=lambda v: v.tobytes())
        ma, mb = a.metrics(name), b.metrics(name)
        assert (ma.n, ma.accuracy, ma.f1) == (mb.n, mb.accuracy, mb.f1)


@pytest.mark.parametrize("kind", ["paacds", "active_arow"])
@pytest.mark.parametrize(("policy", "seed"), [("request", 0), ("request", 1), ("from_data", 2), ("all", 3)])
def test_jitted_batches_answer_as_reading_by_reading(policy, seed, kind):
    jitted, plain = _run(policy, seed, kind=kind)
    _assert_same_state(jitted, plain)
    c = jitted.counters()
    assert c["batches"] > 0 and c["unusable_label"] > 0 and c["non_finite_values"] > 0
    assert c["seq_missing"] > 0 and any(s["channels_evicted"] for s in jitted.status()["streams"].values())
    if policy == "request":
        assert c["label_requests"] > 0 and c["label_answered"] > 0
    assert len(jitted.batch_path.decoder().names) > 0  # the jitted path ran


@pytest.mark.parametrize("kind", ["paacds", "active_arow"])
@pytest.mark.parametrize(("policy", "seed"), [("request", 0), ("from_data", 2), ("all", 3)])
def test_jitted_multiclass_batches_answer_as_reading_by_reading(policy, seed, kind):
    # Three classes; a fourth label late in the traffic is unusable once they are full.
    jitted, plain = _run(policy, seed, journal=True, kind=kind, n_classes=3)
    _assert_same_state(jitted, plain)
    c = jitted.counters()
    assert c["batches"] > 0 and c["learned"] > 0 and c["unusable_label"] > 0
    if policy == "request":
        assert c["label_requests"] > 0 and c["label_answered"] > 0
    for name in jitted.streams:
        assert jitted.learner(name).classes == plain.learner(name).classes
        assert jitted.metrics(name).labels == plain.metrics(name).labels
    assert len(jitted.batch_path.decoder().names) > 0  # the jitted path ran


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.parametrize(("policy", "seed"), [("request", 0), ("request", 1), ("from_data", 2)])
def test_jitted_batches_with_refits_answer_as_reading_by_reading(policy, seed, n_classes):
    """ActiveAROW's refit (``refit_until``) in the batch pass: labels in the data, and
    labels asked for and answered later (``learn`` keeps them), slots recycled in the
    refits' span; the same messages, lessons and state as reading by reading."""
    jitted, plain = _run(policy, seed, journal=True, kind="active_arow", n_classes=n_classes,
                         refit_until=160, refit_labels=32)
    _assert_same_state(jitted, plain)
    c = jitted.counters()
    assert c["batches"] > 0 and c["learned"] > 0
    if policy == "request":
        assert c["label_requests"] > 0 and c["label_answered"] > 0
    for name in jitted.streams:
        assert jitted.learner(name).refit_count.size == 1
    assert any(jitted.learner(name).refit_count[0] == -1 for name in jitted.streams)  # refits over
    assert len(jitted.batch_path.decoder().names) > 0  # the jitted path ran


@pytest.mark.parametrize("kind", ["paacds", "active_arow"])
@pytest.mark.parametrize(("policy", "seed"), [("request", 4), ("from_data", 5), ("all", 6)])
def test_a_label_journal_hears_the_same_lessons_from_jitted_batches(policy, seed, kind):
    jitted, plain = _run(policy, seed, journal=True, kind=kind)
    _assert_same_state(jitted, plain)
    assert jitted.counters()["learned"] > 0


@pytest.mark.parametrize(("policy", "seed"), [("request", 8), ("from_data", 9), ("all", 10)])
def test_a_batch_journal_record_holds_the_same_lessons(tmp_path, policy, seed):
    """on_learn_batch (one LabelJournal record a batch) against on_learn reading by
    reading: the journal file reads back as the same lessons, in order."""
    jitted, plain = _pipelines(policy)
    journal = LabelJournal(str(tmp_path / "labels.journal"), max_bytes=1 << 30)
    jitted.on_learn = lambda stream, n, slots, z, y: journal.append(stream, n, (0, 0), slots, z, y)
    jitted.on_learn_batch = lambda stream, n, *lessons: journal.append_batch(stream, n, (0, 0), *lessons)
    told = []
    plain.on_learn = lambda stream, n, slots, z, y: told.append(
        (stream, n, slots.tolist(), z.tobytes(), y))
    issued = [], []
    for kind, topic, payload in _traffic(seed):
        if kind == "data":
            assert (_normalized(jitted.handle(topic, payload, 1.0), issued[0])
                    == _normalized(plain.handle(topic, payload, 1.0), issued[1]))
    journal.close()
    lessons, problem = read_journal(journal.path)
    assert problem is None and journal.lessons_written == len(told) > 0
    assert journal.records_written < len(told)  # batches went as one record each
    assert [(l.stream, l.n, l.slots.tolist(), l.z.tobytes(), l.y) for l in lessons] == told


@pytest.mark.parametrize("jitted", [True, False, "batch"])
def test_a_crash_after_jitted_batches_loses_no_lesson(jitted, tmp_path):
    """The gateway's journal protocol (Gateway._journal_lesson) on both paths: a
    stream is checkpointed before a lesson whose channel map the last checkpoint does
    not hold; after a crash, the last checkpoints plus the journal's lessons give
    back every lesson once: none lost, none learned twice, although a jitted batch
    tells its lessons after its learner pass. (The weights come back exactly only
    where no unlabelled reading moved the learner's statistics between a checkpoint
    and a lesson: the journal's stated limit, on either path.)"""
    live, _ = _pipelines("all")
    if not jitted:
        live.batch_path = None
    checkpoints, saved_layout = {}, {}
    file = LabelJournal(str(tmp_path / "labels.journal"), max_bytes=1 << 30)

    def layout_of(stream):
        layout = live.layout(stream)
        if saved_layout.get(stream) != layout:
            checkpoints[stream] = copy.deepcopy(live.to_state(stream))
            saved_layout[stream] = layout
        return layout

    live.on_learn = lambda stream, n, *lesson: file.append(stream, n, layout_of(stream), *lesson)
    if jitted == "batch":
        live.on_learn_batch = lambda stream, n, *lessons: file.append_batch(
            stream, n, layout_of(stream), *lessons)
    for kind, topic, payload in _traffic(7):
        if kind == "data":
            live.handle(topic, payload, 1.0)
    file.close()
    journal, problem = read_journal(file.path)
    assert problem is None
    assert live.counters()["batches"] > 0 and len(journal) > 100

    restored, _ = _pipelines("all")
    for stream, state in checkpoints.items():
        restored.restore(stream, state)
    outcomes = [restored.relearn(*lesson) for lesson in journal]
    assert "replayed" in outcomes and "skipped" in outcomes
    assert not {"out_of_order", "layout_mismatch", "failed"} & set(outcomes)
    for stream in live.streams:
        assert (restored.stream_counters(stream)["learned"]
                == live.stream_counters(stream)["learned"] > 0)


@pytest.mark.parametrize(("policy", "seed", "group"), [("request", 11, 5), ("from_data", 12, 3),
                                                       ("all", 13, 64), ("request", 14, 2)])
def test_handle_many_answers_as_handle_one_by_one(policy, seed, group, monkeypatch):
    """Pipeline.handle_many (each stream's batches of a run in one decode and one
    learner pass, as the gateway hands over what is queued) against handle() message
    by message, reading by reading: the same outputs for each message (label
    requests named by stream and seq: different streams' may be issued in another
    order), lessons, counters and state; the traffic interleaves two streams, single
    readings, label answers, new and dropped channels."""
    import firmware_bridge.pipeline.batches as batches

    passes = []
    run_pass = batches.run_pass
    monkeypatch.setattr(batches, "run_pass",
                        lambda p, *args: passes.append(p) or run_pass(p, *args))
    grouped, plain = _pipelines(policy)
    lessons = {id(grouped): [], id(plain): []}
    for p in (grouped, plain):
        p.on_learn = lambda stream, n, slots, z, y, into=lessons[id(p)]: into.append(
            (stream, n, slots.tolist(), z.tobytes(), y))
    issued = {id(grouped): {}, id(plain): {}}  # (topic, seq) -> request id
    order = []  # the reference's requests, in the order it issued them

    def normalized(outputs, p):
        out = []
        for o in outputs:
            body = msgpack.unpackb(o.payload)
            if "req" in body:
                key = (o.topic, body["seq"])
                issued[id(p)][key] = body["req"]
                order.extend([key] if p is plain else [])
                body["req"] = key
            out.append((o.topic, o.qos, o.retain, body))
        return out

    traffic = list(_traffic(seed, 600))
    for start in range(0, len(traffic), group):
        # Answers to requests issued before the group (each pipeline names its own).
        known = len(order)
        assert set(issued[id(grouped)]) == set(order)
        items = {id(grouped): [], id(plain): []}
        for kind, a, b in traffic[start:start + group]:
            for p in (grouped, plain):
                if kind == "data":
                    items[id(p)].append((a, b, 1.0))
                elif known:
                    req = issued[id(p)][order[a % known]]
                    items[id(p)].append(("edgelearn/s/label", encode_label(req, b), 1.0))
        want = [normalized(plain.handle(*item), plain) for item in items[id(plain)]]
        got = [normalized(out, grouped) for out in grouped.handle_many(items[id(grouped)])]
        assert got == want
    assert sorted(lessons[id(grouped)]) == sorted(lessons[id(plain)])
    for stream in ("s", "t"):  # each stream's lessons in its order
        assert ([l for l in lessons[id(grouped)] if l[0] == stream]
                == [l for l in lessons[id(plain)] if l[0] == stream])
    _assert_same_state(grouped, plain)
    assert grouped.counters()["batches"] > 0 and grouped.counters()["learned"] > 0
    # Batches did share passes: fewer passes than batches answered (the reference
    # goes reading by reading).
    assert 0 < passes.count(grouped) < grouped.counters()["batches"] and plain not in passes


def _single_traffic(seed: int, n: int):
    """Single readings of two streams (mostly one), as sensors send them: channels
    that drop out and come back, a new one now and then, a NaN, gaps in seq, labels
    on most readings (a third label too) and none on some."""
    rng = np.random.default_rng(seed)
    seqs = {"s": 0, "t": 0}
    for i in range(n):
        stream = "s" if rng.random() < 0.85 else "t"
        base = rng.normal(size=6)
        channels = {f"c{j}": float(base[j]) for j in range(6) if not (j in (2, 3) and rng.random() < 0.05)}
        if i % 97 == 50:
            channels[f"new{i}"] = 1.0
        if rng.random() < 0.01:
            channels["c1"] = math.nan
        r = rng.random()
        y = None if r < 0.2 else ("occupied" if base[0] > 0 else "empty") if r < 0.99 else "maybe"
        yield f"sensors/{stream}/data", encode_data(float(i), seqs[stream], channels, y)
        seqs[stream] += 1 if rng.random() > 0.02 else 3


@pytest.mark.parametrize("kind", ["paacds", "active_arow"])
@pytest.mark.parametrize(("policy", "seed", "group"), [("request", 21, 64), ("request", 22, 20),
                                                       ("from_data", 23, 40), ("all", 24, 100)])
def test_queued_single_readings_share_a_pass_and_answer_as_one_by_one(kind, policy, seed, group,
                                                                     monkeypatch):
    """Single readings queued together (the gateway's worker hands over what is queued:
    ``Pipeline.handle_many``) go through one decode and one learner pass per stream
    when there are ``SINGLES_PASS_MIN`` or more, each still answered with its own
    prediction message: byte for byte the messages of ``handle`` one by one (label
    requests named by stream and seq), the same lessons, counters, metrics and state."""
    import firmware_bridge.pipeline.batches as batches

    passes = []
    run_pass = batches.run_pass
    monkeypatch.setattr(batches, "run_pass",
                        lambda p, *args: passes.append(p) or run_pass(p, *args))
    grouped, plain = _pipelines(policy, kind)
    lessons = {id(grouped): [], id(plain): []}
    for p in (grouped, plain):
        p.on_learn = lambda stream, n, slots, z, y, into=lessons[id(p)]: into.append(
            (stream, n, slots.tolist(), z.tobytes(), y))

    def normalized(outputs):
        out = []
        for o in outputs:
            body = msgpack.unpackb(o.payload)
            if "req" in body:  # each pipeline names its own requests
                body["req"] = None
                out.append((o.topic, o.qos, o.retain, body))
            else:
                out.append((o.topic, o.qos, o.retain, o.payload))
        return out

    traffic = list(_single_traffic(seed, 1500))
    for start in range(0, len(traffic), group):
        items = [(topic, payload, 2.0 + start) for topic, payload in traffic[start:start + group]]
        want = [normalized(plain.handle(*item)) for item in items]
        got = [normalized(out) for out in grouped.handle_many(items)]
        assert got == want
    for stream in ("s", "t"):
        assert ([l for l in lessons[id(grouped)] if l[0] == stream]
                == [l for l in lessons[id(plain)] if l[0] == stream])
    _assert_same_state(grouped, plain)
    for name in grouped.streams:
        assert grouped.last_output(name) == plain.last_output(name)
    assert grouped.counters()["batches"] == 0 and grouped.counters()["learned"] > 0
    assert len(passes) >= len(traffic) // group // 2 and plain not in passes
