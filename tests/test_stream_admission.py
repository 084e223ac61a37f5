"""Issue 27, item 2: stream slots a hostile client cannot keep
(firmware_bridge/service/admission.py). The hostile scenario runs the gateway's own
command against a mosquitto the test starts; the disk budget and the return of a stream
through a label answer run the gateway's objects (a real pipeline, real checkpoint files)."""

from __future__ import annotations

import os

import msgpack
import numpy as np
import pytest

from firmware_bridge.pipeline import Pipeline
from firmware_bridge.service.admission import StreamAdmission
from firmware_bridge.service.checkpoints import CheckpointStore
from firmware_bridge.service.config import load_config
from firmware_bridge.service.counters import CounterRegistry
from firmware_bridge.service.journal import JOURNAL_NAME, LabelJournal
from firmware_bridge.wire import Topics, encode_data, encode_label

from brokers import broker, wait_until  # noqa: F401  (broker: a fixture)
from test_gateway_broker import (  # noqa: F401  (fixtures)
    TOPICS,
    gateways,
    observer_factory,
)

HOSTILE = 200


@pytest.mark.broker
def test_hostile_streams_that_fill_every_slot_give_them_up_when_idle_and_after_a_restart(
    broker, gateways, observer_factory
):
    observer = observer_factory(broker.port)
    publisher = observer_factory(broker.port, client_id="publisher", subscribe=("none",))
    gateway = gateways(broker.port)
    gateway.config.write_text(gateway.config.read_text().replace(
        "max_streams = 8\n",
        "max_streams = 8\nidle_stream_seconds = 3\nreserved_stream_slots = 2\n"))
    gateway.start()
    gateway.wait_online(observer)
    # A client publishes a labelled reading for each of 200 stream names: the first 8
    # take every slot, the others are refused and counted.
    for n in range(HOSTILE):
        publisher.publish(TOPICS.data(f"evil{n}"), encode_data(0.0, 0, {"a": 1.0}, y=n % 2 == 0))
    publisher.publish(TOPICS.data("office-1"), encode_data(0.0, 0, {"a": 1.0}))
    publisher.publish(TOPICS.data("evil8"), encode_data(1.0, 1, {"a": 1.0}))  # refused again
    wait_until(lambda: observer.status()["counters"]["too_many_streams"] == HOSTILE - 8 + 2,
               30, "the refusals counted")
    status = observer.status()
    assert sorted(status["streams"]) == sorted(f"evil{n}" for n in range(8))
    assert status["streams"]["evil0"]["learned"] == 1
    # They go idle: their slots are reclaimed, their checkpoints kept.
    status = wait_until(lambda: (s := observer.status())["counters"]["streams_evicted"] == 8
                        and not s["streams"] and s, 30, "the idle streams evicted")
    assert status["counters"]["streams_returned"] == 0
    # The legitimate stream gets in now.
    publisher.publish(TOPICS.data("office-1"), encode_data(1.0, 1, {"a": 2.0}))
    wait_until(lambda: "office-1" in observer.status()["streams"], 30, "office-1 served")
    # A hostile stream that returns comes back from its checkpoint: nothing it learned lost.
    publisher.publish(TOPICS.data("evil0"), encode_data(1.0, 1, {"a": 1.0}))
    status = wait_until(lambda: (s := observer.status())["counters"]["streams_returned"] == 1
                        and "evil0" in s["streams"] and s, 30, "evil0 brought back")
    assert status["streams"]["evil0"]["learned"] == 1
    assert status["streams"]["evil0"]["data"] == 2
    assert status["streams"]["evil0"]["seq_missing"] == 0  # its last seq came back too
    # The hostile client fills every slot again (6 more return, 1 is refused), then the
    # gateway restarts.
    for n in range(1, 8):
        publisher.publish(TOPICS.data(f"evil{n}"), encode_data(1.0, 1, {"a": 1.0}))
    wait_until(lambda: observer.status()["counters"]["streams_returned"] == 7
               and observer.status()["counters"]["too_many_streams"] == HOSTILE - 8 + 3,
               30, "every slot taken again")
    assert len(observer.status()["streams"]) == 8
    assert gateway.terminate() == 0
    log = gateway.log.read_text()
    assert log.count("stream 'evil0' idle for") == 1
    assert log.count("stream 'evil0' returned: restored from its checkpoint") == 1
    assert log.count("stream 'evil8' refused: all 8 slots taken (too_many_streams)") == 1

    gateway.start()
    status = gateway.wait_online(observer)
    restored, kept = status["checkpoints"]["restored"], status["checkpoints"]["not_restored"]
    assert len(restored) == 6  # max_streams 8 less the 2 reserved
    assert sorted(restored + kept) == sorted(["office-1"] + [f"evil{n}" for n in range(8)])
    # A new legitimate stream is not locked out, without waiting for anyone to go idle.
    publisher.publish(TOPICS.data("office-2"), encode_data(0.0, 0, {"a": 1.0}))
    wait_until(lambda: "office-2" in observer.status()["streams"], 30, "office-2 served")
    # A stream left on disk at the start comes back when its data comes.
    back = kept[0]
    publisher.publish(TOPICS.data(back), encode_data(2.0, 2, {"a": 1.0}))
    status = wait_until(lambda: (s := observer.status())["counters"]["streams_returned"] == 1
                        and back in s["streams"] and s, 30, f"{back} brought back")
    assert status["streams"][back]["data"] >= 2
    assert status["counters"]["too_many_streams"] == 0
    assert gateway.terminate() == 0


def _admission(tmp_path, clock, **gateway_keys):
    text = "".join(f"{key} = {value}\n" for key, value in gateway_keys.items())
    path = tmp_path / "gateway.toml"
    path.write_text('[gateway]\nmax_streams = 4\nidle_stream_seconds = 10\n' + text +
                    f'[checkpoints]\ndirectory = "{tmp_path / "state"}"\n')
    config, errors = load_config(path)
    assert not errors, errors
    pipeline = Pipeline("paacds", {"capacity": 8}, max_streams=4, clock=clock)
    store = CheckpointStore(config.checkpoint_dir)
    registry = CounterRegistry()
    saved = []

    def save(stream):
        saved.append(stream)
        return store.save(pipeline, stream) is None

    return StreamAdmission(config, pipeline, store, registry, save, clock), registry, saved


def test_an_answer_to_an_evicted_streams_request_brings_it_back_and_is_learned(tmp_path):
    now = [0.0]
    admission, registry, saved = _admission(tmp_path, lambda: now[0])
    pipeline, topics = admission.pipeline, Topics()
    _, request = _until_asked(pipeline, topics, "s1")
    req = msgpack.unpackb(request.payload)["req"]
    admission.tick(now[0])
    now[0] += 10.5
    admission.tick(now[0])
    assert pipeline.streams == [] and saved == ["s1"]
    assert registry.collect()["streams_evicted"] == 1
    pipeline.handle(topics.label("s1"), encode_label(req, True), 0.0)
    assert pipeline.streams == ["s1"]
    assert pipeline.stream_counters("s1")["learned"] == 1
    assert registry.collect()["streams_returned"] == 1


def _until_asked(pipeline, topics, stream):
    for seq in range(200):
        outputs = pipeline.handle(topics.data(stream),
                                  encode_data(0.0, seq, {"a": 1.0 + seq % 3}), 0.0)
        if len(outputs) == 2:
            return outputs
    raise AssertionError("no label request in 200 readings")


def test_checkpoints_of_absent_streams_beyond_the_disk_budget_are_deleted_oldest_first(tmp_path):
    now = [0.0]
    admission, registry, _ = _admission(tmp_path, lambda: now[0])
    pipeline, store, topics = admission.pipeline, admission.store, Topics()
    for n in range(4):
        pipeline.handle(topics.data(f"s{n}"), encode_data(0.0, 0, {"a": 1.0}), 0.0)
        store.save(pipeline, f"s{n}")
        os.utime(store.path(f"s{n}"), (1000 + n, 1000 + n))  # s0 written first
    one = os.path.getsize(store.path("s0"))
    admission.max_bytes = 3 * one
    assert admission.keep_budget() == 0  # all four are served: never deleted
    assert len(store.files()) == 4
    admission.tick(now[0])
    now[0] += 11
    admission.tick(now[0])  # all four idle: evicted, their checkpoints current
    assert pipeline.streams == []
    assert admission.keep_budget() == 1
    assert sorted(stream for stream, _, _ in store.files()) == ["s1", "s2", "s3"]
    assert registry.collect()["checkpoints_deleted"] == 1
    assert "checkpoints_deleted" in registry.problems()
    # A deleted stream that returns starts again with a fresh model; a kept one returns.
    pipeline.handle(topics.data("s0"), encode_data(1.0, 1, {"a": 1.0}), 0.0)
    pipeline.handle(topics.data("s1"), encode_data(1.0, 1, {"a": 1.0}), 0.0)
    assert pipeline.stream_counters("s0")["data"] == 1
    assert pipeline.stream_counters("s1")["data"] == 2
    assert registry.collect()["streams_returned"] == 1


def _four_checkpointed_streams(tmp_path, clock):
    """Streams s0..s3, each with one reading, checkpointed, s3 the newest."""
    admission, _, _ = _admission(tmp_path, clock)
    pipeline, store, topics = admission.pipeline, admission.store, Topics()
    for n in range(4):
        pipeline.handle(topics.data(f"s{n}"), encode_data(0.0, 0, {"a": 1.0}), 0.0)
        store.save(pipeline, f"s{n}")
        os.utime(store.path(f"s{n}"), (1000 + n, 1000 + n))
    return pipeline, store


def test_a_start_restores_the_journal_streams_first_then_the_newest_within_the_reserve(tmp_path):
    now = [0.0]
    pipeline, store = _four_checkpointed_streams(tmp_path, lambda: now[0])
    again, _, _ = _admission(tmp_path, lambda: now[0], reserved_stream_slots=2)
    assert again.store.report["restored"] == ["s2", "s3"]  # the newest two
    assert again.store.report["not_restored"] == ["s0", "s1"]
    fresh = CheckpointStore(store.directory)
    fresh.restore(Pipeline("paacds", {"capacity": 8}, max_streams=4), 2, frozenset({"s0"}))
    assert fresh.report["restored"] == ["s0", "s3"]  # the journal's, then the newest


def test_a_crash_start_restores_the_journals_streams_to_replay_then_trims_to_the_limit(tmp_path):
    now = [0.0]
    pipeline, store = _four_checkpointed_streams(tmp_path, lambda: now[0])
    # Each learned a label after its checkpoint: only the journal has it (a crash).
    journal = LabelJournal(os.path.join(store.directory, JOURNAL_NAME))
    for n in range(4):
        journal.append(f"s{n}", 0, pipeline.layout(f"s{n}"), np.array([0], np.int32),
                       np.array([1.0]), True)
    journal.close()
    again, registry, _ = _admission(tmp_path, lambda: now[0], reserved_stream_slots=2)
    assert again.store.report["restored"] == ["s0", "s1", "s2", "s3"]  # all four replay
    assert again.trim() == 2
    assert sorted(again.pipeline.streams) == ["s2", "s3"]  # the newest two stay
    assert registry.collect()["streams_evicted"] == 2
