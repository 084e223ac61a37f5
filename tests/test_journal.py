"""The label journal: records, damage, and replay on top of checkpoints (no broker;
the SIGKILL of a real gateway process is in tests/test_nothing_lost.py)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import edgelearn
from edgelearn.state import load_checkpoint
from firmware_bridge.service.checkpoints import checkpoint_path
from firmware_bridge.service.config import load_config
from firmware_bridge.service.gateway import Gateway
from firmware_bridge.service.journal import JOURNAL_NAME, LabelJournal, read_journal
from firmware_bridge.wire import encode_data, encode_label
from firmware_bridge.service.systemd import SystemdNotifier


def make_config(tmp_path, **overrides):
    config, errors = load_config(None, {
        "checkpoints.directory": str(tmp_path / "state"),
        "checkpoints.interval_seconds": 3600,
        "mqtt.port": 1,
        "learner.kind": "paacds",
        "learner.params": {"capacity": 16, "seed": 1, "target_query_rate": 0.3},
        **overrides,
    })
    assert errors == []
    return config


def arrays(state):
    """Every array and scalar of a learner state, flattened to comparable items."""
    out = {}

    def walk(prefix, value):
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}", v)
        elif isinstance(value, np.ndarray):
            out[prefix] = (value.dtype.str, value.tobytes())
        else:
            out[prefix] = repr(value)

    walk("", state)
    return out


def learned_arrays(state):
    return {k: v for k, v in arrays(state).items() if k.startswith(".learned.")}


def feed(gateway, stream, seqs, answer=lambda seq: seq % 5 > 1):
    """Data messages; every label request answered at once (from the pipeline's
    outputs, as a labeller would). Returns the (seq, label) pairs learned."""
    taught = []
    for seq in seqs:
        x = {"a": float(seq % 5), "b": float(seq % 3) - 1.0}
        if seq % 17 == 16:
            x[f"new{seq}"] = 1.0  # a channel the last checkpoint does not map
        out = gateway.pipeline.handle(f"sensors/{stream}/data", encode_data(0.0, seq, x), 0.0)
        for o in out:
            if o.topic.endswith("/label_request"):
                import msgpack
                req = msgpack.unpackb(o.payload)["req"]
                gateway.pipeline.handle(f"edgelearn/{stream}/label",
                                        encode_label(req, answer(seq)), 0.0)
                taught.append((seq, answer(seq)))
    return taught


def test_a_killed_gateway_restarts_with_every_label_it_learned(tmp_path):
    config = make_config(tmp_path)
    gateway = Gateway(config, notifier=SystemdNotifier({}))
    feed(gateway, "s1", range(0, 200))
    gateway.checkpoint()  # the last checkpoint...
    checkpointed = gateway.pipeline.to_state("s1")
    taught = feed(gateway, "s1", range(200, 600))  # ...then labels only the journal has
    assert len(taught) > 20
    killed = gateway.pipeline.to_state("s1")
    # No close, no checkpoint: what a SIGKILL leaves (the journal's bytes are written).
    # New channels made the gateway checkpoint the stream before journaling their
    # lessons; the newest checkpoint on disk is what the restart starts from.
    on_disk, _ = load_checkpoint(checkpoint_path(config.checkpoint_dir, "s1"))
    first = checkpointed["counters"]["learned"]
    since = on_disk["counters"]["learned"] - first
    assert since > 0  # the forced checkpoints happened
    restarted = Gateway(config, notifier=SystemdNotifier({}))
    report = restarted.checkpoint_report["journal"]
    assert report["replayed"] == len(taught) - since and report["problem"] is None
    restored = restarted.pipeline.to_state("s1")
    assert restored["counters"]["learned"] == killed["counters"]["learned"]
    # The reference: that checkpoint taught the same labels, with the features the
    # gateway kept recomputed here by a shadow of the live learner.
    shadow = edgelearn.from_state(checkpointed["learner"])
    reference = edgelearn.from_state(on_disk["learner"])
    kept = {}
    for seq in range(200, 600):
        x = {"a": float(seq % 5), "b": float(seq % 3) - 1.0}
        if seq % 17 == 16:
            x[f"new{seq}"] = 1.0
        kept[seq] = shadow.decide_one(x)
    for seq, y in taught[since:]:
        reference.learn(kept[seq].slots, kept[seq].z, y)
    got, want = learned_arrays(restored["learner"]), learned_arrays(reference.to_state())
    for name in (".learned.W", ".learned.b", ".learned.active"):
        assert got[name] == want[name], name
    # And the journal did carry something: without it the weights would differ.
    assert learned_arrays(on_disk["learner"])[".learned.W"] != got[".learned.W"]
    # The journal was emptied by the checkpoint after the replay.
    assert os.path.getsize(os.path.join(config.checkpoint_dir, JOURNAL_NAME)) == 0


def test_damaged_and_torn_records_stop_the_replay_with_their_offset(tmp_path):
    path = str(tmp_path / JOURNAL_NAME)
    journal = LabelJournal(path)
    for n in range(5):
        journal.append("s1", n, (2, 0), np.array([0, 1], np.int32), np.array([n, -1.0]), True)
    journal.close()
    data = open(path, "rb").read()
    size = len(data) // 5
    lessons, problem = read_journal(path)
    assert [l.n for l in lessons] == list(range(5)) and problem is None
    for position in range(0, len(data), 7):
        damaged = bytearray(data)
        damaged[position] ^= 0x40
        open(path, "wb").write(bytes(damaged))
        lessons, problem = read_journal(path)
        assert [l.n for l in lessons] == list(range(position // size))
        assert problem is not None and problem.startswith(f"byte {position // size * size}:")
    open(path, "wb").write(data[:-3])
    lessons, problem = read_journal(path)
    assert len(lessons) == 4 and "torn record" in problem


def test_a_batch_record_reads_back_as_its_lessons_or_not_at_all(tmp_path):
    """append_batch: one record for a batch's lessons; damage anywhere in it stops the
    replay before all of them (a torn batch is replayed as none of its lessons)."""
    path = str(tmp_path / JOURNAL_NAME)
    journal = LabelJournal(path)
    journal.append("s1", 0, (2, 0), np.array([0, 1], np.int32), np.array([0.5, -1.0]), True)
    counts = np.array([2, 0, 3])
    slots = np.array([0, 1, 1, 0, 2], np.int32)
    z = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert journal.append_batch("s1", 1, (3, 0), counts, slots, z, np.array([1, 0, 1], np.int32),
                                ["occupied", "empty"])
    journal.append("s1", 4, (3, 0), np.array([2], np.int32), np.array([9.0]), "empty")
    journal.close()
    assert (journal.records_written, journal.lessons_written) == (3, 5)
    lessons, problem = read_journal(path)
    assert problem is None
    assert [(l.n, l.layout, l.slots.tolist(), l.z.tolist(), l.y) for l in lessons] == [
        (0, (2, 0), [0, 1], [0.5, -1.0], True),
        (1, (3, 0), [0, 1], [1.0, 2.0], "empty"),
        (2, (3, 0), [], [], "occupied"),
        (3, (3, 0), [1, 0, 2], [3.0, 4.0, 5.0], "empty"),
        (4, (3, 0), [2], [9.0], "empty"),
    ]
    data = open(path, "rb").read()
    record_start = data.index(b"ELJ2")
    record_end = data.index(b"ELJ1", record_start)
    for position in range(record_start, record_end, 5):
        damaged = bytearray(data)
        damaged[position] ^= 0x40
        open(path, "wb").write(bytes(damaged))
        lessons, problem = read_journal(path)
        assert [l.n for l in lessons] == [0] and problem.startswith(f"byte {record_start}:")
    open(path, "wb").write(data[:record_end - 1])
    lessons, problem = read_journal(path)
    assert [l.n for l in lessons] == [0] and "torn record" in problem
    # A batch that would pass the bound is learned, not journaled: each lesson counted.
    small = LabelJournal(str(tmp_path / "small.journal"), max_bytes=64)
    assert not small.append_batch("s1", 0, (3, 0), counts, slots, z, np.array([0, 0, 0]), [True])
    assert small.counters()["journal_dropped"] == 3 and small.size == 0
    small.close()


def test_a_turn_s_held_records_go_out_in_one_write_or_not_at_all(tmp_path, monkeypatch):
    """hold/release (the gateway's worker, one write a turn): nothing held is in the
    file before the release, all of it is after, in one write; a release whose write
    fails leaves none of it; the bound counts what is held; a truncate drops it."""
    path = str(tmp_path / JOURNAL_NAME)
    journal = LabelJournal(path, max_bytes=4096)
    journal.append("s1", 0, (2, 0), np.array([0], np.int32), np.array([1.0]), True)
    first = os.path.getsize(path)
    assert first > 0  # not holding: written at once
    journal.hold()
    for n in range(1, 6):
        journal.append("s1", n, (2, 0), np.array([0, 1], np.int32), np.array([n, 1.0]), False)
    assert os.path.getsize(path) == first and journal.held_lessons == 5
    writes = []
    real_write = os.write
    monkeypatch.setattr(os, "write",
                        lambda fd, data: writes.append(len(data)) or real_write(fd, data))
    journal.release()
    assert len(writes) == 1 and os.path.getsize(path) == first + writes[0]
    assert (journal.records_written, journal.lessons_written, journal.held_lessons) == (6, 6, 0)
    lessons, problem = read_journal(path)
    assert [l.n for l in lessons] == list(range(6)) and problem is None
    # A write that fails (a full disk part-way) leaves none of the turn's records.
    journal.hold()
    for n in range(6, 9):
        journal.append("s1", n, (2, 0), np.array([0], np.int32), np.array([1.0]), True)
    size = os.path.getsize(path)
    monkeypatch.setattr(os, "write", lambda fd, data: real_write(fd, data[:len(data) // 2]))
    with pytest.raises(OSError, match="short write"):
        journal.release()
    monkeypatch.setattr(os, "write", real_write)
    assert os.path.getsize(path) == size and journal.lessons_written == 6
    assert [l.n for l in read_journal(path)[0]] == list(range(6))
    # The bound counts the held bytes: what would pass it is dropped, counted.
    journal.hold()
    kept = 0
    while journal.append("s1", 9 + kept, (2, 0), np.array([0], np.int32), np.array([1.0]), True):
        kept += 1
    assert journal.counters()["journal_dropped"] == 1
    assert kept > 0 and journal.held_lessons == kept
    journal.truncate()  # after a checkpoint round: every held lesson is in a checkpoint
    journal.release()
    assert os.path.getsize(path) == 0 and journal.held_lessons == 0
    journal.close()


def test_a_killed_gateway_restarts_with_every_label_of_its_jitted_batches(tmp_path):
    """Batches of labelled readings (the jitted batch path, one journal record per
    batch) after the last checkpoint: a restart replays every lesson, and as every
    reading is learned, the weights come back exactly."""
    from firmware_bridge.wire import encode_batch

    config = make_config(tmp_path)
    gateway = Gateway(config, notifier=SystemdNotifier({}))

    def feed_batches(seqs):
        for start in range(seqs.start, seqs.stop, 40):
            readings = []
            for seq in range(start, min(start + 40, seqs.stop)):
                x = {"a": float(seq % 5), "b": float(seq % 3) - 1.0}
                if seq in (500, 700):
                    x[f"new{seq}"] = 1.0  # a channel the last checkpoint does not map
                readings.append((0.0, seq, x, "on" if seq % 5 > 1 else "off"))
            gateway.pipeline.handle("sensors/s1/data", encode_batch(readings), 0.0)

    feed_batches(range(0, 400))
    gateway.checkpoint()
    records, lessons = gateway.journal.records_written, gateway.journal.lessons_written
    feed_batches(range(400, 1200))
    assert gateway.pipeline.counters()["batches"] == 30
    assert gateway.journal.records_written - records == 20
    assert gateway.journal.lessons_written - lessons == 800
    killed = gateway.pipeline.to_state("s1")
    restarted = Gateway(config, notifier=SystemdNotifier({}))
    report = restarted.checkpoint_report["journal"]
    # The batch with seq 700 made a checkpoint that holds it (and every lesson before)
    assert report["problem"] is None and report["replayed"] == 1200 - 720
    assert report["skipped"] == 720 - 400
    restored = restarted.pipeline.to_state("s1")
    assert restored["counters"]["learned"] == killed["counters"]["learned"] == 1200
    got, want = learned_arrays(restored["learner"]), learned_arrays(killed["learner"])
    for name in (".learned.W", ".learned.b", ".learned.active"):
        assert got[name] == want[name], name
