"""Real brokers for the tests: free loopback ports, mosquitto, a 3-node NATS cluster.

Every broker test starts its own broker on free loopback ports (never the standard
ones), waits until it really accepts clients, and stops it at the end. A missing
binary fails the test with the Debian package to install; it never skips.

``broker`` and ``cluster`` are pytest fixtures: a test module imports them
(``from brokers import broker``) to use them.
"""

from __future__ import annotations

import getpass
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import threading
import time

import paho.mqtt.client as paho
import pytest

__all__ = ["free_port", "free_ports", "wait_until", "installed", "Broker", "NatsCluster",
           "Listener", "broker", "cluster"]


def free_ports(n: int) -> list[int]:
    """``n`` distinct loopback ports free right now (all bound at once, then released)."""
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def free_port() -> int:
    return free_ports(1)[0]


def wait_until(predicate, timeout: float, what: str, interval: float = 0.02):
    """``predicate()``'s first true value, polled every ``interval`` s; an
    AssertionError naming ``what`` after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def installed(name: str, package: str, needed_by: str) -> str:
    """The path of the program ``name`` (on PATH or in /usr/sbin, /usr/bin); the test
    fails naming the Debian ``package`` if it is missing."""
    found = shutil.which(name) or next(
        (p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}") if os.access(p, os.X_OK)), None)
    if found is None:
        pytest.fail(f"{needed_by} need {name}, which is not installed: install the Debian "
                    f"package `{package}` (sudo apt-get install {package})", pytrace=False)
    return found


def _accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Listener:
    """A paho MQTTv5 client on ``port`` subscribed at QoS 1 to ``filters``; it hands
    each message's topic and payload to ``on_message`` on paho's thread. The
    constructor returns once the broker has acknowledged the subscription, so nothing
    published after it is missed (a fixed sleep was a guess)."""

    def __init__(self, port: int, filters, on_message, client_id: str = ""):
        subscribed = threading.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id,
                                  protocol=paho.MQTTv5)
        self.client.on_message = lambda client, userdata, message: on_message(
            message.topic, message.payload)
        self.client.on_connect = lambda client, *a: client.subscribe([(f, 1) for f in filters])
        self.client.on_subscribe = lambda *a: subscribed.set()
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        if not subscribed.wait(30):
            self.close()
            raise AssertionError(f"no SUBACK for {list(filters)} from the broker on {port}")

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


class Broker:
    """A mosquitto process on a free port, with persistence in ``directory``."""

    def __init__(self, directory: pathlib.Path, extra: str = ""):
        self.binary = installed("mosquitto", "mosquitto", "the broker tests")
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.config = directory / "mosquitto.conf"
        self.config.write_text(
            f"listener {self.port} 127.0.0.1\n"
            "allow_anonymous true\n"
            "persistence true\n"
            f"persistence_location {directory}/\n"
            "max_queued_messages 0\n"
            "max_inflight_messages 100\n"
            f"log_dest file {directory}/mosquitto.log\n"
            # Started as root, mosquitto would switch to its own user, which cannot
            # write this test's directories; as anyone else this is ignored.
            f"user {getpass.getuser()}\n" + extra
        )
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "-c", str(self.config)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )

        def accepting():
            if self.process.poll() is not None:
                raise AssertionError(
                    f"mosquitto exited: {self.process.stderr.read().decode()}"
                )
            return _accepting(self.port)

        wait_until(accepting, 10, "mosquitto to accept connections")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(10)
        self.process = None

    def kill(self) -> None:
        """Stop it at once, whatever state it is in (the fixtures' clean-up)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path / "broker")
    b.start()
    yield b
    b.kill()


class NatsCluster:
    """Three clustered nats-server processes with JetStream and MQTT listeners."""

    # MQTT's "/" is NATS's "."; the mapping applies to every message published into
    # the account, MQTT publishes included. QoS 1 publishes are the same subjects
    # under "$MQTT.msgs." (the JetStream stream NATS keeps them in), so both are mapped.
    MAPPINGS = {
        "sensors.*.data": "part.{{partition(2,1)}}.sensors.{{wildcard(1)}}.data",
        "edgelearn.*.label": "part.{{partition(2,1)}}.edgelearn.{{wildcard(1)}}.label",
    }

    def __init__(self, directory: pathlib.Path, size: int = 3):
        self.binary = installed("nats-server", "nats-server",
                                "the NATS cluster tests (or sh tools/ensure_nats.sh)")
        self.directory = directory
        ports = free_ports(3 * size)
        self.client_ports = ports[0:size]
        self.route_ports = ports[size : 2 * size]
        self.mqtt_ports = ports[2 * size :]
        self.processes: list[subprocess.Popen | None] = [None] * size
        routes = ", ".join(f"nats-route://127.0.0.1:{p}" for p in self.route_ports)
        mappings = "\n".join(f'  "{src}": "{dst}"' for src, dst in self.MAPPINGS.items())
        self.configs = []
        for i in range(size):
            node = directory / f"n{i + 1}"
            node.mkdir(parents=True, exist_ok=True)
            config = node / "nats.conf"
            config.write_text(
                f"server_name: n{i + 1}\n"
                f"listen: 127.0.0.1:{self.client_ports[i]}\n"
                f'jetstream {{ store_dir: "{node}/js" }}\n'
                f"cluster {{ name: edgelearn-test, listen: 127.0.0.1:{self.route_ports[i]},"
                f" routes: [{routes}] }}\n"
                # ack_wait: how long an unacknowledged QoS 1 message waits before it is
                # delivered again (default 30 s; shorter keeps the test short).
                f'mqtt {{ listen: 127.0.0.1:{self.mqtt_ports[i]}, ack_wait: "8s",'
                " stream_replicas: 3 }\n"
                f"mappings = {{\n{mappings}\n}}\n"
            )
            self.configs.append(config)

    def start(self) -> None:
        for i, config in enumerate(self.configs):
            log = open(config.parent / "nats.log", "ab")
            self.processes[i] = subprocess.Popen(
                [self.binary, "-c", str(config)], stdout=log, stderr=subprocess.STDOUT
            )
            log.close()
        for i in range(len(self.configs)):
            wait_until(lambda i=i: self._mqtt_ready(i), 30,
                       f"NATS node {i + 1}'s MQTT listener", interval=0.05)

    def _mqtt_ready(self, i: int) -> bool:
        """A CONNACK with success: the node's MQTT needs JetStream (a meta leader)."""
        process = self.processes[i]
        if process is not None and process.poll() is not None:
            raise AssertionError(f"nats-server n{i + 1} exited:\n"
                                 + (self.configs[i].parent / "nats.log").read_text()[-3000:])
        result = []
        client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"probe-{i}",
                             protocol=paho.MQTTv311)
        client.on_connect = lambda c, u, f, rc, p: result.append(rc.is_failure)
        try:
            client.connect("127.0.0.1", self.mqtt_ports[i], keepalive=5)
            deadline = time.monotonic() + 2
            while not result and time.monotonic() < deadline:
                client.loop(0.1)
            client.disconnect()
        except OSError:
            return False
        return result == [False]

    def kill(self, i: int) -> None:
        process = self.processes[i]
        process.send_signal(signal.SIGKILL)
        process.wait(10)

    def stop(self) -> None:
        for process in self.processes:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait(10)


@pytest.fixture
def cluster(tmp_path):
    c = NatsCluster(tmp_path / "nats")
    try:
        c.start()
        yield c
    finally:
        c.stop()
