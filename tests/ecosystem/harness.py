"""The parts of ``make test-ecosystem``: the gateway as its command, sensors and an
observer on MQTT, and the real programs an operator runs beside it.

The gateway is driven only as an operator drives it: ``edgelearn gateway --config
FILE`` as a subprocess, its configuration file, MQTT and its HTTP endpoints; nothing
here imports ``firmware_bridge``, so the tests hold whatever module the code lives in.
The programs come from the project's installers (``tools/ecosystem/*.sh``, which
``make test-ecosystem`` runs first), cached under ``~/.cache/edgelearn-ecosystem``
(``EDGELEARN_ECOSYSTEM_CACHE``); a missing one fails the test naming its installer.
"""

from __future__ import annotations

import collections
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import msgpack
import paho.mqtt.client as paho
import pytest
from brokers import wait_until

REPO = pathlib.Path(__file__).resolve().parents[2]
CACHE = pathlib.Path(os.environ.get("EDGELEARN_ECOSYSTEM_CACHE")
                     or pathlib.Path.home() / ".cache" / "edgelearn-ecosystem")


def need(path: pathlib.Path, what: str, installer: str) -> pathlib.Path:
    """``path``, or the test fails saying which installer puts it there."""
    if not path.exists():
        pytest.fail(f"{what} is not installed ({path} is missing): run "
                    f"`bash tools/ecosystem/{installer}` (make test-ecosystem does)",
                    pytrace=False)
    return path


def edgelearn_command() -> str:
    """The ``edgelearn`` command of the venv running the tests."""
    command = pathlib.Path(sys.executable).parent / "edgelearn"
    if not command.exists():
        pytest.fail(f"no edgelearn command beside {sys.executable}: run `make setup`",
                    pytrace=False)
    return str(command)


def toml(sections: dict[str, dict]) -> str:
    """A TOML document of ``{section: {key: value}}`` (str, bool, int, float, lists)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return repr(v)
        if isinstance(v, str):
            return json.dumps(v)
        return "[" + ", ".join(value(x) for x in v) + "]"
    lines = []
    for name, keys in sections.items():
        lines.append(f"[{name}]")
        lines.extend(f"{k} = {value(v)}" for k, v in keys.items())
        lines.append("")
    return "\n".join(lines)


def http_get(url: str, timeout: float = 5, headers: dict | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def http_post(url: str, body: dict | bytes | None, timeout: float = 15,
              headers: dict | None = None, form: bool = False) -> tuple[int, bytes]:
    headers = dict(headers or {})
    if form:
        data = urllib.parse.urlencode(body).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    else:
        data = json.dumps(body).encode() if body is not None else b""
        headers["Content-Type"] = "application/json"
    request = urllib.request.Request(url, data=data, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


class Timer:
    """Seconds per named step of a test, and notes (versions, measured levels),
    printed at the end of the run (conftest)."""

    steps: list[tuple[str, float]] = []
    notes: list[str] = []

    @staticmethod
    def note(text: str) -> None:
        if text not in Timer.notes:
            Timer.notes.append(text)

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        self.start = time.monotonic()
        return self

    def __exit__(self, *exc):
        Timer.steps.append((self.name, time.monotonic() - self.start))


# -- the gateway, as its command ------------------------------------------------------

class EdgeGateway:
    """``edgelearn gateway --config FILE`` as a subprocess, its log in a file.

    ``sections`` are added to (or replace keys of) the base configuration: the
    broker on loopback, state in ``directory``, a short status interval."""

    def __init__(self, directory: pathlib.Path, broker_port: int, gateway_id: str = "gw1",
                 status_interval: float = 2.0, sections: dict[str, dict] | None = None):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.gateway_id = gateway_id
        config: dict[str, dict] = {
            "gateway": {"id": gateway_id, "status_interval_seconds": status_interval},
            "mqtt": {"host": "127.0.0.1", "port": broker_port,
                     "reconnect_min_delay_seconds": 1, "reconnect_max_delay_seconds": 2,
                     "keepalive_seconds": 10},
            "checkpoints": {"directory": str(directory / "state"), "interval_seconds": 5.0},
        }
        for name, keys in (sections or {}).items():
            config.setdefault(name, {}).update(keys)
        self.config = directory / "gateway.toml"
        self.config.write_text(toml(config))
        self.log = directory / "gateway.log"
        self.process: subprocess.Popen | None = None
        self.command = edgelearn_command()

    def start(self) -> None:
        self._log_file = open(self.log, "ab")
        self.process = subprocess.Popen(
            [self.command, "gateway", "--config", str(self.config)],
            cwd=self.directory, stdout=self._log_file, stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> int:
        """SIGTERM, as systemd and Ctrl-C stop it; its exit code."""
        code = terminate(self.process, 90)
        self._log_file.close()
        return code

    def kill(self) -> None:
        if self.running():
            self.process.kill()
            self.process.wait(10)
            self._log_file.close()

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


class Mqtt:
    """The test's own MQTT client: publishes sensor readings and records what the
    gateway publishes (predictions decoded from msgpack, the status, anything else
    under ``extra`` filters as raw payloads)."""

    def __init__(self, port: int, gateway_id: str = "gw1", extra: tuple[str, ...] = ()):
        self.gateway_id = gateway_id
        self.predictions: dict[str, list[dict]] = collections.defaultdict(list)
        self.statuses: list[dict] = []
        self.raw: dict[str, bytes] = {}
        self.lock = threading.Lock()
        self.seq: collections.Counter = collections.Counter()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        filters = ("edgelearn/+/prediction", f"edgelearn/status/{gateway_id}") + extra
        self.client.on_connect = lambda c, *a: c.subscribe([(f, 1) for f in filters])
        self.client.on_message = self._on_message
        self.client.max_inflight_messages_set(100)
        self.client.reconnect_delay_set(1, 1)
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        time.sleep(0.3)

    def _on_message(self, client, userdata, message):
        with self.lock:
            self.raw[message.topic] = message.payload
            parts = message.topic.split("/")
            if parts[0] == "edgelearn" and parts[-1] == "prediction":
                # msgpack, or JSON with [outputs] prediction = "json"
                body = (json.loads(message.payload) if message.payload[:1] == b"{"
                        else msgpack.unpackb(message.payload))
                self.predictions[parts[1]].extend(body.get("predictions", [body]))
            elif message.topic == f"edgelearn/status/{self.gateway_id}" and message.payload:
                self.statuses.append(msgpack.unpackb(message.payload))

    def reading(self, stream: str, channels: dict, y=None) -> None:
        """One data message (docs/protocol.md) with the stream's next seq."""
        body = {"ts": time.time(), "seq": self.seq[stream], "ch": channels}
        if y is not None:
            body["y"] = y
        self.seq[stream] += 1
        self.client.publish(f"sensors/{stream}/data", msgpack.packb(body), qos=1)

    def feed(self, streams: tuple[str, ...], n: int, seed: int = 0) -> None:
        """``n`` labelled readings of a room (``occupancy_readings``) on each stream,
        interleaved; returns once each reading has its prediction."""
        for channels, occupied in occupancy_readings(n, seed):
            for stream in streams:
                self.reading(stream, channels, y=occupied)
        for stream in streams:
            self.wait_predicted(stream, n)

    def status(self) -> dict | None:
        with self.lock:
            return self.statuses[-1] if self.statuses else None

    def wait_online(self, gateway: EdgeGateway, timeout: float = 60) -> dict:
        pid = gateway.process.pid

        def online():
            if not gateway.running():
                raise AssertionError(f"the gateway exited:\n{gateway.log_text()}")
            status = self.status()
            return status if (status and status.get("pid") == pid and status["state"] == "online"
                              and status["connected"]) else None
        return wait_until(online, timeout, "the gateway's online status", interval=0.1)

    def wait_predicted(self, stream: str, n: int, timeout: float = 60) -> list[dict]:
        return wait_until(lambda: len(self.predictions[stream]) >= n and self.predictions[stream],
                          timeout, f"{n} predictions of {stream}", interval=0.05)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def occupancy_readings(n: int, seed: int = 0):
    """``n`` (channels, label) pairs of a simple room: light and CO2 rise when occupied."""
    import random
    rng = random.Random(seed)
    for i in range(n):
        occupied = (i // 25) % 2 == 1
        yield ({"temperature": round(21 + rng.gauss(0, 0.3) + (0.8 if occupied else 0), 2),
                "light": round(max(0.0, rng.gauss(420 if occupied else 30, 40)), 1),
                "co2": round(rng.gauss(780 if occupied else 450, 30), 1)}, occupied)


def terminate(process: subprocess.Popen, timeout: float) -> int:
    """SIGTERM, then SIGKILL after ``timeout`` s; the exit code."""
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait(10)
