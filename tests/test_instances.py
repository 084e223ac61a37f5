"""Several gateway instances on one host: the systemd template unit and two instances
against one real mosquitto, each serving its own share of the streams.

The instances run exactly the template's ``ExecStart`` (``edgelearn gateway --config
/etc/edgelearn/%i.toml --gateway-id %i --state-dir /var/lib/edgelearn/%i/state ...``)
with the paths moved into the test's directory, as ``python -m firmware_bridge.cli``.
"""

from __future__ import annotations

import collections
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import threading

import msgpack
import paho.mqtt.client as paho
import pytest
from brokers import Broker, wait_until

from firmware_bridge.service.checkpoints import stream_of_checkpoint
from firmware_bridge.wire import encode_data

ROOT = pathlib.Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "configs" / "edgelearn-gateway@.service"
SINGLE = ROOT / "configs" / "edgelearn-gateway.service"


def _settings(path: pathlib.Path) -> dict[str, str]:
    """A unit's settings (continuation lines joined; the first of repeated keys)."""
    text = path.read_text().replace("\\\n", " ")
    settings: dict[str, str] = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            settings.setdefault(key, " ".join(value.split()))
    return settings


def test_template_unit_gives_each_instance_its_config_id_and_state():
    template, single = _settings(TEMPLATE), _settings(SINGLE)
    argv = shlex.split(template["ExecStart"])
    assert argv[argv.index("--config") + 1] == "/etc/edgelearn/%i.toml"
    # The warm-up fills the instance's own cache from the instance's own config.
    assert template["ExecStartPre"].endswith("edgelearn warmup --config /etc/edgelearn/%i.toml")
    # The gateway id makes the client id, the session and the retained status topic.
    assert argv[argv.index("--gateway-id") + 1] == "%i"
    assert argv[argv.index("--state-dir") + 1] == "/var/lib/edgelearn/%i/state"
    assert template["StateDirectory"] == "edgelearn/%i"
    assert "%i" in template["Environment"] or "%i" in template["CacheDirectory"]
    # Everything else (notify, watchdog, restart policy, hardening) as the single unit.
    per_instance = {"Description", "ExecStartPre", "ExecStart", "StateDirectory", "CacheDirectory",
                    "Environment"}
    assert {k: v for k, v in template.items() if k not in per_instance} == {
        k: v for k, v in single.items() if k not in per_instance
    }
    if shutil.which("systemd-analyze"):
        unit_dir = pathlib.Path(os.environ.get("TMPDIR", "/tmp")) / f"units-{os.getpid()}"
        unit_dir.mkdir(exist_ok=True)
        instance = unit_dir / "edgelearn-gateway@a.service"
        shutil.copy(TEMPLATE, instance)
        try:
            result = subprocess.run(["systemd-analyze", "verify", str(instance)],
                                    capture_output=True, text=True, timeout=60)
        finally:
            shutil.rmtree(unit_dir, ignore_errors=True)
        # Only the ExecStart binary (not installed here) may be reported.
        problems = [line for line in result.stderr.splitlines()
                    if line.strip() and "is not executable" not in line]
        assert problems == [], result.stderr


def _instance_command(name: str, etc: pathlib.Path, var: pathlib.Path) -> list[str]:
    """The template's ExecStart for instance ``name``, paths moved under the test's."""
    argv = shlex.split(_settings(TEMPLATE)["ExecStart"])
    assert argv[0].endswith("/edgelearn")
    argv = [a.replace("%i", name).replace("/etc/edgelearn", str(etc))
            .replace("/var/lib/edgelearn", str(var)) for a in argv[1:]]
    return [sys.executable, "-m", "firmware_bridge.cli", *argv]


@pytest.mark.broker
def test_two_instances_each_serve_their_share_of_the_streams(tmp_path):
    broker = Broker(tmp_path / "broker")
    broker.start()
    etc, var = tmp_path / "etc", tmp_path / "var"
    etc.mkdir()
    shares = {"a": ["k1", "k2", "k3"], "b": ["h1", "h2", "h3"]}
    for name in shares:
        # An instance's share: its own subtree of data and label answers.
        (etc / f"{name}.toml").write_text(
            f'[topics]\ndata = "sensors/{name}/{{stream}}/data"\n'
            f'label = "edgelearn/{name}/{{stream}}/label"\n'
            "[gateway]\nstatus_interval_seconds = 1\n"
            "[checkpoints]\ninterval_seconds = 1\n"
            f"[mqtt]\nhost = \"127.0.0.1\"\nport = {broker.port}\n"
            "reconnect_min_delay_seconds = 1\nmax_inflight_messages = 100\n"
            '[learner]\nkind = "pa"\n[learner.params]\ncapacity = 8\n'
        )
    predictions: collections.Counter = collections.Counter()
    statuses: dict[str, dict] = {}
    lock = threading.Lock()

    def on_message(client, userdata, message):
        body = msgpack.unpackb(message.payload)
        levels = message.topic.split("/")
        with lock:
            if levels[1] == "status":
                statuses[levels[2]] = body
            else:
                predictions[(levels[1], body["seq"])] += 1

    observer = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="observer")
    observer.on_message = on_message
    observer.connect("127.0.0.1", broker.port)
    observer.subscribe([("edgelearn/+/prediction", 1), ("edgelearn/status/+", 1)])
    observer.loop_start()
    processes = {}
    try:
        for name in shares:
            log = open(tmp_path / f"{name}.log", "ab")
            processes[name] = subprocess.Popen(
                _instance_command(name, etc, var), cwd=ROOT, stdout=log,
                stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)},
            )
            log.close()
        for name, process in processes.items():
            def online(name=name, process=process):
                if process.poll() is not None:
                    raise AssertionError((tmp_path / f"{name}.log").read_text())
                status = statuses.get(name)
                return status and status["pid"] == process.pid and status["connected"]
            wait_until(online, 40, f"instance {name} online")

        sensor = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="sensors")
        sensor.max_inflight_messages_set(100)
        sensor.connect("127.0.0.1", broker.port)
        sensor.loop_start()
        n = 200
        infos = []
        for seq in range(n):
            for name, streams in shares.items():
                for i, stream in enumerate(streams):
                    payload = encode_data(float(seq), seq, {"x": float((seq * (i + 1)) % 5)},
                                          y=seq % 5 > 2)
                    infos.append(sensor.publish(f"sensors/{name}/{stream}/data", payload, 1))
        for info in infos:
            info.wait_for_publish(30)
        everything = {(s, q) for streams in shares.values() for s in streams for q in range(n)}
        wait_until(lambda: set(predictions) >= everything, 60, "every prediction")
        for name, process in processes.items():
            process.send_signal(signal.SIGTERM)
        for name, process in processes.items():
            assert process.wait(60) == 0, (tmp_path / f"{name}.log").read_text()
        wait_until(lambda: all(statuses[n]["state"] == "stopped" for n in shares), 10,
                   "the stopped statuses")
        sensor.loop_stop()
        # Exactly one prediction per message, from the instance whose share it is.
        assert set(predictions) == everything
        assert set(predictions.values()) == {1}
        for name, streams in shares.items():
            status = statuses[name]
            assert set(status["streams"]) == set(streams), name
            assert status["counters"]["predictions"] == n * len(streams)
            assert status["counters"]["connects"] == 1  # no client id clash
            state = var / name / "state"
            on_disk = {stream_of_checkpoint(f) for f in os.listdir(state)} - {None}
            assert on_disk == set(streams), (name, on_disk)
            assert not (var / name / "log").exists()  # the recorder is off
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)
        observer.loop_stop()
        broker.stop()
