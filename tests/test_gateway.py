"""Gateway pieces that need no broker: checkpoint restore, sd_notify, status."""

from __future__ import annotations

import os
import socket

import pytest

from edgelearn.state import save_checkpoint
from firmware_bridge.service.checkpoints import checkpoint_path
from firmware_bridge.service.checkpoints import stream_of_checkpoint as _stream_of_checkpoint
from firmware_bridge.service.config import load_config
from firmware_bridge.service.gateway import Gateway
from firmware_bridge.service.systemd import SystemdNotifier
from firmware_bridge.wire import encode_data


def make_config(tmp_path, capacity=16, **overrides):
    config, errors = load_config(None, {
        "checkpoints.directory": str(tmp_path / "state"),
        "learner.kind": "paacds",
        "learner.params": {"capacity": capacity, "seed": 1},
        **overrides,
    })
    assert errors == []
    return config


def trained_state(config, stream, n):
    pipeline = config.make_pipeline()
    for seq in range(n):
        pipeline.handle(f"sensors/{stream}/data",
                        encode_data(0.0, seq, {"a": float(seq % 5)}, y=seq % 5 > 2), 0.0)
    return pipeline.to_state(stream)


def test_checkpoints_are_restored_with_fallback_and_mismatch_reported(tmp_path):
    config = make_config(tmp_path)
    os.makedirs(config.checkpoint_dir)
    # s1: two good generations; s2: newest truncated; s3: saved with other parameters.
    for stream, sizes in (("s1", (10, 20)), ("s2", (30, 40))):
        for n in sizes:
            save_checkpoint(checkpoint_path(config.checkpoint_dir, stream),
                            trained_state(config, stream, n))
    s2 = checkpoint_path(config.checkpoint_dir, "s2")
    data = open(s2, "rb").read()
    open(s2, "wb").write(data[:100])
    other = make_config(tmp_path / "other", capacity=8)
    save_checkpoint(checkpoint_path(config.checkpoint_dir, "s3"), trained_state(other, "s3", 5))
    gateway = Gateway(config, notifier=SystemdNotifier({}))
    report = gateway.checkpoint_report
    assert report["restored"] == ["s1", "s2"]
    assert list(report["fell_back"]) == ["s2"] and "truncated" in report["fell_back"]["s2"]
    assert "capacity saved 8, configured 16" in report["failed"]["s3"]
    status = gateway.status()
    assert status["streams"]["s1"]["data"] == 20 and status["streams"]["s2"]["data"] == 30
    assert "s3" not in status["streams"]
    # Nothing changed since the restore, so nothing is rewritten (the SD card rests).
    assert gateway.checkpoint() == 0
    gateway.pipeline.handle("sensors/s1/data", encode_data(0.0, 99, {"a": 1.0}), 0.0)
    assert gateway.checkpoint() == 1


def test_status_reports_memory_versions_and_queue(tmp_path):
    gateway = Gateway(make_config(tmp_path), notifier=SystemdNotifier({}))
    status = gateway.status()
    assert status["state"] == "online" and status["pid"] == os.getpid()
    memory = status["memory"]
    assert memory["total"] == (memory["learners_max"] + memory["pending_labels"]
                               + memory["inbound_queue"] + memory["answer_queue"]
                               + memory["outgoing_queue"])
    assert memory["answer_queue"] > 0  # label answers have their own queue
    assert status["queue"] == {"length": 0, "capacity": 1024}
    assert set(status["version"]) == {"edgelearn", "paho_mqtt", "python"}
    assert status["counters"]["publish_dropped"] == 0


def test_sd_notify_sends_datagrams_and_reads_the_watchdog(tmp_path):
    path = str(tmp_path / "notify")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)
    notifier = SystemdNotifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "3000000",
                                "WATCHDOG_PID": str(os.getpid())})
    assert notifier.watchdog_interval_s == 3.0
    assert notifier.notify("READY=1")
    assert receiver.recv(64) == b"READY=1"
    notifier.close()
    receiver.close()
    assert SystemdNotifier({}).notify("READY=1") is False
    other_pid = SystemdNotifier({"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "3000000",
                                 "WATCHDOG_PID": "1"})
    assert other_pid.watchdog_interval_s is None
    assert SystemdNotifier({"NOTIFY_SOCKET": "@abstract"}).address == "\0abstract"
    gone = SystemdNotifier({"NOTIFY_SOCKET": str(tmp_path / "missing")})
    assert gone.notify("WATCHDOG=1") is False  # logged once, never raises


def test_sd_notify_never_blocks_the_worker_on_a_reader_that_does_not_read(tmp_path):
    path = str(tmp_path / "notify")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)
    notifier = SystemdNotifier({"NOTIFY_SOCKET": path})
    # The kernel queues a few datagrams (net.unix.max_dgram_qlen, 10 by default); a
    # blocking send would hang here for ever once the queue is full.
    sent = [notifier.notify("WATCHDOG=1") for _ in range(1000)]
    assert sent[0] and not sent[-1]
    assert receiver.recv(64) == b"WATCHDOG=1"
    notifier.close()
    receiver.close()


@pytest.mark.parametrize("stream", ["kitchen", "..", "a%2Fb", "naïve", "x.ckpt"])
def test_checkpoint_file_names_round_trip_and_stay_in_the_directory(tmp_path, stream):
    path = checkpoint_path(str(tmp_path), stream)
    assert os.path.dirname(path) == str(tmp_path)
    name = os.path.basename(path)
    assert _stream_of_checkpoint(name) == stream
    assert _stream_of_checkpoint(name + ".1") == stream
    assert _stream_of_checkpoint("unrelated.txt") is None


@pytest.mark.parametrize("tool", ["simulate_sensors.py", "label_oracle.py", "bench_gateway.py"])
def test_tools_have_help(tool):
    import pathlib
    import subprocess
    import sys

    root = pathlib.Path(__file__).resolve().parent.parent
    result = subprocess.run([sys.executable, str(root / "tools" / tool), "--help"],
                            capture_output=True, text=True, timeout=60, cwd=root)
    assert result.returncode == 0, result.stderr
    assert "--broker" in result.stdout or "--count" in result.stdout


def test_a_failing_worker_still_checkpoints_what_it_learned(tmp_path):
    config = make_config(tmp_path, **{"mqtt.port": 1})  # nothing listens: it never connects
    gateway = Gateway(config, notifier=SystemdNotifier({}))
    gateway.pipeline.handle("sensors/s1/data", encode_data(0.0, 0, {"a": 1.0}, y=True), 0.0)

    def broken_turn(timeout):
        raise RuntimeError("a bug in the loop")

    gateway._turn = broken_turn
    gateway.start()
    assert gateway.wait(10)
    assert gateway.shutdown() == 1
    assert os.path.exists(checkpoint_path(config.checkpoint_dir, "s1"))


def test_one_counter_registry_feeds_the_status_the_cli_and_an_exporter(tmp_path, capsys):
    from firmware_bridge.cli.service import print_status

    gateway = Gateway(make_config(tmp_path), notifier=SystemdNotifier({}))
    gateway.pipeline.handle("sensors/s1/data", encode_data(0.0, 0, {"a": 1.0}), 0.0)
    gateway.pipeline.handle("sensors/s1/data", b"\xc1 not msgpack", 0.0)
    gateway.checkpoint()
    status = gateway.status()
    counters = status["counters"]
    # Pipeline, bridge and the gateway's own counters, all through the registry.
    assert counters == gateway.registry.collect()
    assert counters["data"] == 1 and counters["rejected"] == 1
    assert counters["checkpoints_written"] == 1 and counters["connects"] == 0
    problems = set(status["counter_problems"])
    rejected_by = [name for name, value in counters.items()
                   if value and name in problems]
    assert len(rejected_by) == 1  # the one reject reason, named
    assert {"worker_errors", "checkpoint_errors", "disconnects"} <= problems
    assert not problems & {"messages", "data", "predictions", "rejected", "connects",
                           "checkpoints_written", "label_pending"}
    # edgelearn status lists the problems that are not zero.
    print_status(status)
    out = capsys.readouterr().out
    assert f"also: {rejected_by[0]} 1" in out
    # An exporter reads the same registry.
    text = gateway.registry.exposition(labels={"gateway": "gw1"})
    assert 'edgelearn_data_total{gateway="gw1"} 1' in text
    assert "# TYPE edgelearn_label_pending gauge" in text
    assert "# TYPE edgelearn_checkpoints_written_total counter" in text


def test_sequence_counts_reach_the_status_and_edgelearn_status(tmp_path, capsys):
    from firmware_bridge.cli.service import print_status

    gateway = Gateway(make_config(tmp_path), notifier=SystemdNotifier({}))
    for seq in (0, 1, 5, 5, 0):
        gateway.pipeline.handle("sensors/s1/data", encode_data(0.0, seq, {"a": 1.0}), 0.0)
    status = gateway.status()
    stream = status["streams"]["s1"]
    assert (stream["seq_missing"], stream["seq_duplicates"], stream["seq_restarts"]) == (3, 1, 1)
    assert status["counters"]["seq_missing"] == 3
    assert {"seq_missing", "seq_duplicates", "seq_restarts"} <= set(status["counter_problems"])
    print_status(status)
    out = capsys.readouterr().out
    assert "seq_missing 3" in out.splitlines()[2]  # the "also:" line
    assert "s1: 5 messages" in out and "seq: missing 3, duplicates 1, restarts 1" in out


def test_a_bug_in_a_shared_batch_pass_counts_every_message_of_the_group(tmp_path):
    # Messages taken together share one Pipeline.handle_many call: if it raises, none
    # of them is answered, and worker_errors (messages whose processing raised)
    # counts each, as it would count each one alone; all are acknowledged in order.
    from firmware_bridge.service.mqtt import InboundMessage

    gateway = Gateway(make_config(tmp_path, **{"mqtt.port": 1}), notifier=SystemdNotifier({}))

    def broken(items):
        raise RuntimeError("a bug in the shared pass")

    gateway.pipeline.handle_many = broken
    items = [InboundMessage("sensors/s1/data", encode_data(0.0, i, {"a": 1.0}, y=True), 0.0, i + 1, 1, 0)
             for i in range(3)]
    gateway._process_group(items)
    assert gateway.registry.collect()["worker_errors"] == 3
    assert [item for item, _ in gateway._unacked] == items
