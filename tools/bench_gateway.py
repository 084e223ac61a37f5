#!/usr/bin/env python3
"""Benchmark the gateway through a real broker: cost per message, messages/s, latency.

Starts its own mosquitto on a free loopback port and the gateway as a subprocess
(``python -m firmware_bridge gateway``); the load comes from ``tools/load_mqtt.py``
(a lean QoS 1 publisher on a raw socket, payloads encoded before the clock, a few µs
of CPU per message, so the publisher is not what a run measures) while the same
tool's lean subscriber (QoS 1, on a thread of this process) takes the outputs. In
one run:

1. **pipeline alone**: CPU time per message of ``Pipeline.handle`` (decode,
   validate, learn, encode; no MQTT) in this process, per single message and per
   reading of a batch, beside a bare msgpack decode/encode loop on the same payloads;
2. **warm-up**: single readings and batches, so numba's kernels are compiled and cached;
3. **throughput**: ``--count`` occupancy messages published as fast as possible; the
   sustained rate is messages / (last prediction's arrival - first message's ``ts``).
   Every message must get exactly one prediction. The CPU time per message of every
   process (gateway, broker, subscriber from /proc; the publisher's own) is reported;
4. **relay**: the same runs through a bare relay (``--relay``, a subprocess): the
   gateway's own MQTT client (:class:`firmware_bridge.service.mqtt.MqttBridge`) with the
   same settings (protocol, QoS, persistent session, manual acks after the output
   is with the broker, in-flight window, bounded queue) publishing one fixed output
   per input, and nothing else. Gateway CPU per message / relay CPU per message is
   what the gateway adds to MQTT;
5. **batches**: ``--batch-readings`` readings in compact batch messages (one-letter
   names, float32 values, as many readings as the default limits allow; or
   ``--batch N``), as fast as possible: readings/s and CPU per reading of each process;
6. **latency**: ``--count`` messages at a fixed ``--rate`` (2,000/s by default);
   latency is a prediction's arrival time minus its data message's ``ts`` (the
   publish time, same clock), reported as p50/p90/p99/max;
7. **one vs two instances**: one publisher, two streams, into one gateway, then into
   two gateway instances each serving its own topic subtree
   (``sensors/a/{stream}/data``, ``sensors/b/...``: the instance share of
   ``docs/fleet.md``), alternating; with single readings (messages/s) and with
   batches (readings/s), and the CPU of every process per reading.

The results go to ``--out`` (``docs/bench-gateway.md``) with the command, the date,
the machine and its load average. Everything runs on this machine, so the
publisher, the broker, the gateway(s) and the subscriber share its cores.

Example::

    python tools/bench_gateway.py --count 20000 --rate 2000
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import getpass
import json
import os
import pathlib
import platform
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import msgpack
import paho.mqtt as paho_mqtt

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import edgelearn  # noqa: E402
from firmware_bridge.wire import Topics  # noqa: E402

TOPICS = Topics()
RELAY_OUTPUT = "bench/relay/output"
RELAY_DATA = "relay/{stream}/data"
INSTANCE_DATA = "sensors/{name}/{{stream}}/data"
# A gateway from a cold numba cache (bench_gateway_ab.py's base tree is exported fresh)
# compiles its kernels in its warm-up: minutes on a loaded machine.
WARMUP_TIMEOUT_S = 900.0
GATEWAY_CONFIG = (
    '[gateway]\nid = "bench"\nstatus_interval_seconds = 5\nmax_streams = 64\n'
    "[checkpoints]\ninterval_seconds = 600\n"
    '[mqtt]\nmax_inflight_messages = 100\nprotocol = "{protocol}"\n'
    '[learner]\nkind = "{kind}"\n'
    "[learner.params]\ncapacity = 64\ntarget_query_rate = 0.1\n"
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.01)
    raise SystemExit(f"bench_gateway: timed out after {timeout} s waiting for {what}")


def start_mosquitto(directory: pathlib.Path, port: int) -> subprocess.Popen:
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not os.access(binary, os.X_OK):
        raise SystemExit("bench_gateway: install the Debian package `mosquitto`")
    config = directory / "mosquitto.conf"
    config.write_text(
        f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence true\n"
        f"persistence_location {directory}/\nmax_queued_messages 0\n"
        f"max_inflight_messages 100\nuser {getpass.getuser()}\n"
        f"log_dest file {directory}/mosquitto.log\n"
    )
    process = subprocess.Popen([binary, "-c", str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)

    def accepting():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False

    _wait(accepting, 10, "mosquitto")
    return process


class Outputs:
    """Arrival time and publish time of every prediction, by (stream, seq); arrival
    times of the relay's outputs; the latest status of each gateway.

    The subscriber is ``tools/load_mqtt.py``'s :class:`LeanSubscriber` (a raw-socket
    MQTT 3.1.1 client, QoS 1, PUBACKs of a read sent at once), on a thread of this
    process: its CPU is this process's. It decodes each prediction message as it
    arrives and files every prediction under its stream and seq, so a run can tell
    that each reading got exactly one. (``mosquitto_sub`` printing each message for
    a thread here to parse cost 7.45 µs per reading of compact batches, more than
    the gateway's decode; a subscriber in Python with paho costs as much per message
    as the gateway.)
    """

    def __init__(self, port: int):
        from load_mqtt import LeanSubscriber

        self.arrivals: dict[str, dict[int, list[tuple[float, float]]]] = {}
        self.relayed: list[float] = []
        self.status: dict[str, dict] = {}
        self.subscriber = LeanSubscriber(
            "127.0.0.1", port, [TOPICS.filter("prediction"), TOPICS.filter("status"),
                                RELAY_OUTPUT], self._on_message)
        self.subscriber.connect()
        self._reader = threading.Thread(target=self.subscriber.run, daemon=True)
        self._reader.start()

    def _on_message(self, arrived: float, topic: str, payload: bytes) -> None:
        if topic == RELAY_OUTPUT:
            self.relayed.append(arrived)
            return
        body = msgpack.unpackb(payload)
        kind, ident = TOPICS.parse(topic)
        if kind == "prediction":
            stream = self.arrivals.get(ident)
            if stream is None:
                stream = self.arrivals[ident] = {}
            for prediction in body.get("predictions", (body,)):  # a batch's, or one
                seq = prediction["seq"]
                seen = stream.get(seq)
                if seen is None:
                    stream[seq] = [(arrived, prediction["ts"])]
                else:
                    seen.append((arrived, prediction["ts"]))
        else:
            self.status[ident] = body

    def count(self, stream: str) -> int:
        return len(self.arrivals.get(stream, ()))

    def online(self, gateway: str, pid: int) -> bool:
        status = self.status.get(gateway)
        return status is not None and status.get("pid") == pid and bool(status.get("connected"))

    def close(self) -> None:
        self.subscriber.stop()
        self._reader.join(5)
        self.subscriber.close()


def load_command(port: int, stream_prefix: str, count: int, rate: float, labels: bool,
                 batch: str = "1", templates: tuple[str, ...] = (), streams: int = 1,
                 wait_for_go: bool = False) -> list[str]:
    """The lean publisher (``tools/load_mqtt.py``) for ``count`` readings."""
    return [sys.executable, str(ROOT / "tools" / "load_mqtt.py"), "--broker",
            f"127.0.0.1:{port}", "--dataset", "occupancy", "--count", str(count), "--loop",
            "--rate", str(rate), "--drop", "0.01", "--stream-prefix", stream_prefix,
            "--batch", str(batch), "--streams", str(streams),
            *(a for template in templates for a in ("--data-template", template)),
            *(["--with-labels"] if labels else []),
            *(["--wait-for-go"] if wait_for_go else [])]


def publish_load(port: int, stream_prefix: str, count: int, rate: float, labels: bool,
                 **kwargs) -> dict:
    """Run the lean publisher to the end; its JSON summary."""
    result = subprocess.run(load_command(port, stream_prefix, count, rate, labels, **kwargs),
                            capture_output=True, text=True, cwd=ROOT)
    if result.returncode != 0:
        raise SystemExit(f"bench_gateway: the publisher failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


class Publisher:
    """The lean publisher started ahead: it encodes its payloads and connects, and
    publishes on :meth:`go`, so the clock of a run starts with its first message."""

    def __init__(self, port: int, stream_prefix: str, count: int, labels: bool, **kwargs):
        self.process = subprocess.Popen(
            load_command(port, stream_prefix, count, 0, labels, wait_for_go=True, **kwargs),
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            cwd=ROOT)
        line = self.process.stdout.readline()
        if not line.startswith('{"ready"'):
            raise SystemExit("bench_gateway: the publisher failed:\n"
                             + line + self.process.stderr.read())

    def go(self) -> None:
        self.process.stdin.write("go\n")
        self.process.stdin.flush()

    def summary(self) -> dict:
        out, err = self.process.communicate(timeout=600)
        if self.process.returncode != 0:
            raise SystemExit(f"bench_gateway: the publisher failed:\n{err}")
        return json.loads(out.strip().splitlines()[-1])


def cpu_per_item(function, items, repeats: int = 3) -> float:
    """The least CPU time (this process, user + system) per item over ``repeats``
    passes of ``function`` over ``items``, in µs."""
    best = float("inf")
    for _ in range(repeats):
        began = time.process_time()
        for item in items:
            function(item)
        best = min(best, time.process_time() - began)
    return best / len(items) * 1e6


def alone_readings(count: int, labels: bool) -> list[tuple]:
    """The pipeline-alone stream, ``(ts, seq, channels, y)`` readings of one stream:
    the occupancy data set, channels dropping out with probability 0.01."""
    sys.path.insert(0, str(ROOT / "tools"))
    from simulate_sensors import messages

    return [(time.time(), seq, channels, y)
            for _, seq, channels, y in messages("occupancy", ["p0"], count=count, drop=0.01,
                                                with_labels=labels, loop=True)]


def bare_codec():
    """The in-process reference: a bare msgpack decode of a data message and encode of
    a fixed prediction, as a function of the payload."""
    packer = msgpack.Packer()

    def bare(payload):
        message = msgpack.unpackb(payload)
        return packer.pack({"seq": message["seq"], "ts": message["ts"], "y": True,
                            "score": 0.5, "query": False})

    return bare


def pipeline_alone(count: int, labels: bool, batch: int, kind: str) -> dict:
    """CPU µs per message of the pipeline by itself (no MQTT) with learners of
    ``kind`` on the benchmark's messages; per reading of batches of ``batch``; single
    readings with the other of PAACDS and the default learner; and of a bare msgpack
    decode and encode of the same payloads, in this process."""
    from firmware_bridge.pipeline import Pipeline
    from firmware_bridge.wire import Limits, encode_batch, encode_data

    readings = alone_readings(count, labels)
    payloads = [encode_data(*reading) for reading in readings]
    batches = [encode_batch(readings[i:i + batch]) for i in range(0, len(readings), batch)]
    topic = TOPICS.data("p0")
    results = {}
    # Room for the largest batch (the default 4096 bytes holds about 48 readings of
    # five channels), so every batch is measured, not rejected as too large.
    limits = Limits(max_payload_bytes=max(4096, *map(len, batches)))
    for name, items, per in (("single", payloads, 1), ("batch", batches, batch),
                             ("batch_per_reading", batches, batch)):
        pipeline = Pipeline(kind, {"capacity": 64, "target_query_rate": 0.1}, limits=limits)
        # the batch path reading by reading, as before the jitted batches (the ratio)
        if name == "batch_per_reading":
            pipeline.batch_path = None
        handle = pipeline.handle
        for payload in items[: max(1, len(items) // 10)]:
            handle(topic, payload, 0.0)
        results[name] = cpu_per_item(lambda p: handle(topic, p, 0.0), items) / per
    # The other of PAACDS and the operator's default learner (what a gateway runs with
    # no kind configured) on the same single readings: what the one costs beside the other.
    from edgelearn import DEFAULT_KIND

    other = "paacds" if kind != "paacds" else DEFAULT_KIND
    pipeline = Pipeline(other, {"capacity": 64, "target_query_rate": 0.1}, limits=limits)
    handle = pipeline.handle
    for payload in payloads[: max(1, len(payloads) // 10)]:
        handle(topic, payload, 0.0)
    results["single_other"] = cpu_per_item(lambda p: handle(topic, p, 0.0), payloads)
    results["kind"], results["other_kind"], results["default_kind"] = kind, other, DEFAULT_KIND
    results["bare"] = cpu_per_item(bare_codec(), payloads)
    results["batch_size"] = batch
    results.update(_compact_alone(readings, topic, kind))
    return results


#: Queued messages the pipeline-alone section hands over at once (handle_many).
ALONE_GROUP = 32


def _compact_alone(readings: list, topic: str, kind: str) -> dict:
    """CPU µs per reading of ``Pipeline.handle`` on the batch runs' compact batches
    (default limits), without and with a label journal on disk (the gateway's
    default, ``journal = true``: one record a batch)."""
    from firmware_bridge.service.journal import LabelJournal
    from firmware_bridge.pipeline import Pipeline
    from load_mqtt import TS_PLACEHOLDER, compact_batches

    batches = compact_batches(("p0", seq, channels, y) for _, seq, channels, y in readings)
    now = msgpack.packb(time.time())  # the publisher writes the time into each ts
    items = [payload.replace(msgpack.packb(TS_PLACEHOLDER), now) for _, payload, _ in batches]
    per = len(readings) / len(items)
    results = {"compact_readings": per}
    groups = [[(topic, payload, 0.0) for payload in items[i:i + ALONE_GROUP]]
              for i in range(0, len(items), ALONE_GROUP)]
    with tempfile.TemporaryDirectory() as directory:
        for name in ("compact", "compact_journal", "compact_grouped"):
            pipeline = Pipeline(kind, {"capacity": 64, "target_query_rate": 0.1})
            if name != "compact":
                journal = LabelJournal(os.path.join(directory, f"{name}.journal"), 1 << 40)
                pipeline.on_learn_batch = lambda stream, n, *lessons, j=journal, p=pipeline: (
                    j.append_batch(stream, n, p.layout(stream), *lessons))
            handle = pipeline.handle
            for payload in items[: max(1, len(items) // 10)]:
                handle(topic, payload, 0.0)
            if name == "compact_grouped":
                cpu = cpu_per_item(pipeline.handle_many, groups) * len(groups) / len(items)
            else:
                cpu = cpu_per_item(lambda p: handle(topic, p, 0.0), items)
            results[name] = cpu / per
            if name != "compact":
                journal.close()
    return results


@contextlib.contextmanager
def bench_on_broker(prefix: str, kind: str, warmup: int, bench_class: type = None):
    """A :class:`Bench` (or ``bench_class``) on a mosquitto of its own in a new
    temporary folder, with the garbage collector off while it measures; every
    process it started, the subscriber and the broker are stopped when it ends.
    For the tools that time gateways against each other or a relay run by run."""
    work = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    port = _free_port()
    broker = start_mosquitto(work, port)
    outputs = Outputs(port)
    options = argparse.Namespace(protocol="MQTTv5", labels="data", warmup=warmup, kind=kind)
    bench = (bench_class or Bench)(options, work, port, outputs, broker)
    gc.disable()
    try:
        yield bench
    finally:
        gc.enable()
        for process in bench.processes:
            bench.stop(process)
        outputs.close()
        broker.terminate()
        broker.wait(10)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (from /proc)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def load_average() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def machine() -> dict:
    cpu = platform.processor() or platform.machine()
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(pathlib.Path("/proc/meminfo").read_text().split()[1])
        memory = f"{kib / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    mosquitto = subprocess.run([shutil.which("mosquitto") or "/usr/sbin/mosquitto", "-h"],
                               capture_output=True, text=True).stdout.splitlines()[0]
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "paho-mqtt": paho_mqtt.__version__,
        "edgelearn": edgelearn.__version__,
        "broker": mosquitto,
    }


# --- the bare relay ---------------------------------------------------------------------


def run_relay(config_path: str, broker: str) -> int:
    """The bare relay (``--relay``): the gateway's MQTT client with the gateway's
    settings from ``config_path``, one fixed output per input, each input acknowledged
    once its output is with the broker (as the gateway does); until SIGTERM."""
    from firmware_bridge.service.config import load_config
    from firmware_bridge.service.mqtt import MqttBridge
    from firmware_bridge.wire import encode_status

    host, _, port = broker.rpartition(":")
    config, errors = load_config(config_path, {"mqtt.host": host, "mqtt.port": int(port)})
    if errors:
        raise SystemExit("bench_gateway --relay: " + "; ".join(errors))
    settings = dataclasses.replace(config.mqtt, client_id=config.mqtt.client_id + "-relay")
    bridge = MqttBridge(
        settings, Topics(data_template=RELAY_DATA).inbound_filters()[:1],
        "bench/relay/status", encode_status({"state": "offline"}),
        config.limits.max_payload_bytes, config.inbound_queue_length,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # As the gateway's start does (firmware_bridge.cli.service): what the imports made
    # (this tool's: NumPy, the edgelearn package) out of the collector's full passes,
    # which would otherwise walk it again and again and count in the relay's CPU.
    gc.collect()
    gc.freeze()
    output = msgpack.packb({"seq": 0, "ts": 0.0, "y": True, "score": 0.5, "query": False})
    inbound, unacked = bridge.inbound, []
    publish, ack, room = bridge.publish, bridge.ack, bridge.outgoing_room
    bridge.start()
    while not stop.is_set():
        bridge.poll(0.0 if inbound and room() > 0 else 0.05)
        while inbound and room() > 0:
            item = inbound.popleft()
            unacked.append((item, publish(RELAY_OUTPUT, output, 1, False)))
        released = 0
        for item, info in unacked:
            if info is not None and not info.is_published():
                break
            ack(item)
            released += 1
        del unacked[:released]
        bridge.flush()
    bridge.disconnect()
    return 0


# --- the measurements ---------------------------------------------------------------------


class Bench:
    def __init__(self, args, work: pathlib.Path, port: int, outputs: Outputs,
                 broker: subprocess.Popen):
        self.args = args
        self.work = work
        self.port = port
        self.outputs = outputs
        self.broker = broker
        self.labels = args.labels == "data"
        self.config = work / "gateway.toml"
        self.config.write_text(GATEWAY_CONFIG.format(protocol=args.protocol, kind=args.kind))
        self.processes: list[subprocess.Popen] = []

    def start_gateway(self, name: str, *settings: str) -> subprocess.Popen:
        log = open(self.work / f"gateway-{name}.log", "wb")
        process = subprocess.Popen(
            [sys.executable, "-m", "firmware_bridge", "gateway", "--config", str(self.config),
             "--broker", f"127.0.0.1:{self.port}", "--state-dir", str(self.work / name),
             "--gateway-id", name, *(a for s in settings for a in ("--set", s))],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.processes.append(process)
        _wait(lambda: self.outputs.online(name, process.pid), 60, f"gateway {name}")
        return process

    def warm_up(self, prefix: str, templates: tuple[str, ...] = ()) -> None:
        """Single readings and compact batches through a gateway (or the relay), so
        numba's kernels of both paths are compiled and cached before any clock runs."""
        count = self.args.warmup
        for kind, batch in (("s", "1"), ("b", "compact")):
            publish_load(self.port, prefix + kind, count, 2000 if batch == "1" else 0,
                         self.labels, batch=batch, templates=templates)
        if templates == (RELAY_DATA,):
            _wait(lambda: len(self.outputs.relayed) >= count + count // 64, WARMUP_TIMEOUT_S,
                  "the relay's warm-up outputs")
        else:
            _wait(lambda: self.outputs.count(prefix + "s0") >= count
                  and self.outputs.count(prefix + "b0") >= count, WARMUP_TIMEOUT_S,
                  f"the warm-up predictions of {prefix}")

    def start_relay(self) -> subprocess.Popen:
        process = subprocess.Popen(
            [sys.executable, str(pathlib.Path(__file__).resolve()), "--relay",
             "--relay-config", str(self.config), "--relay-broker", f"127.0.0.1:{self.port}"],
            cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self.processes.append(process)
        time.sleep(1.0)
        return process

    def stop(self, process: subprocess.Popen) -> None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()

    def watched(self, gateways: dict[str, int]) -> dict[str, int]:
        """The processes whose CPU a run reads from /proc: the gateway(s), mosquitto,
        and this process (the subscriber, and the waiting for its counts)."""
        return {**gateways, "broker": self.broker.pid, "subscriber": os.getpid()}

    def _measured(self, publisher: Publisher, watched: dict[str, int], streams: list[str],
                  per_stream: int) -> dict:
        """Start ``publisher``, wait for ``per_stream`` predictions on each of
        ``streams``: counts, rates, CPU per reading of every watched process."""
        cpu_before = {name: cpu_seconds(pid) for name, pid in watched.items()}
        publisher.go()
        published = publisher.summary()
        _wait(lambda: all(self.outputs.count(s) >= per_stream for s in streams), 300,
              f"the predictions of {', '.join(streams)}")
        readings = per_stream * len(streams)
        cpu = {name: (cpu_seconds(pid) - cpu_before[name]) / readings * 1e6
               for name, pid in watched.items()}
        cpu["publisher"] = published["cpu_us_per_reading"]
        # CPU seconds of every process in the run per second of it: the cores used.
        cores_seconds = sum(cpu.values()) * readings / 1e6
        time.sleep(1.0)  # a duplicate would arrive now
        arrivals = [v for s in streams for v in dict(self.outputs.arrivals[s]).values()]
        first_ts = min(v[0][1] for v in arrivals)
        last_arrival = max(v[0][0] for v in arrivals)
        seconds = last_arrival - first_ts
        return {
            "readings": readings,
            "messages": published["messages"],
            "readings_per_message": published["readings_per_message"],
            "payload_bytes": published["payload_bytes"],
            "predicted_once": sum(1 for v in arrivals if len(v) == 1),
            "predicted_more": sum(1 for v in arrivals if len(v) > 1),
            "missing": readings - len(arrivals),
            "seconds": seconds,
            "rate": readings / seconds,
            "message_rate": published["messages"] / seconds,
            "publisher_rate": published["rate"],
            "cpu_us": cpu,
            "cores": cores_seconds / seconds,
            "load": load_average(),
        }

    def throughput(self, stream: str, count: int, gateway: int, batch: str = "1") -> dict:
        """Publish ``count`` readings as fast as possible; wait for their predictions."""
        publisher = Publisher(self.port, stream, count, self.labels, batch=batch)
        return self._measured(publisher, self.watched({"gateway": gateway}), [stream + "0"],
                              count)

    def relay_throughput(self, run: int, count: int, relay: subprocess.Popen) -> dict:
        before = len(self.outputs.relayed)
        publisher = Publisher(self.port, f"r{run}_", count, self.labels, templates=(RELAY_DATA,))
        cpu_before = {"relay": cpu_seconds(relay.pid), "broker": cpu_seconds(self.broker.pid)}
        began = time.time()
        publisher.go()
        published = publisher.summary()
        _wait(lambda: len(self.outputs.relayed) - before >= count, 300, "relay outputs")
        cpu = {"relay": (cpu_seconds(relay.pid) - cpu_before["relay"]) / count * 1e6,
               "broker": (cpu_seconds(self.broker.pid) - cpu_before["broker"]) / count * 1e6,
               "publisher": published["cpu_us_per_message"]}
        time.sleep(1.0)
        relayed = self.outputs.relayed[before:]
        return {
            "messages": count,
            "outputs": len(relayed),
            "rate_upper_bound": count / (max(relayed) - began),
            "publisher_rate": published["rate"],
            "cpu_us": cpu,
            "load": load_average(),
        }

    def latency(self, run: int) -> dict:
        args = self.args
        stream = f"l{run}_"
        published = publish_load(self.port, stream, args.count, args.rate, self.labels)
        _wait(lambda: self.outputs.count(stream + "0") >= args.count, 300,
              "latency predictions")
        time.sleep(1.0)
        arrivals = dict(self.outputs.arrivals[stream + "0"])
        if args.series and run == 0:
            series = sorted((seq, v[0][1], v[0][0]) for seq, v in arrivals.items())
            pathlib.Path(args.series).write_text(json.dumps(series))
        latencies = sorted((v[0][0] - v[0][1]) * 1000.0 for v in arrivals.values())
        return {
            "messages": args.count,
            "rate": args.rate,
            "publisher_rate": published["rate"],
            "missing": args.count - len(latencies),
            "p50": percentile(latencies, 0.50),
            "p90": percentile(latencies, 0.90),
            "p99": percentile(latencies, 0.99),
            "max": latencies[-1],
        }

    def instances(self, prefix: str, readings: int, batch: str, gateways: dict[str, int],
                  templates: tuple[str, ...] = ()) -> dict:
        """Two streams, ``readings`` in all, from one lean publisher as fast as it can:
        into one gateway (no ``templates``), or stream 0 into the first instance's
        share and stream 1 into the second's."""
        publisher = Publisher(self.port, prefix, readings, self.labels, batch=batch,
                              templates=templates, streams=2)
        result = self._measured(publisher, self.watched(gateways),
                                [prefix + "0", prefix + "1"], readings // 2)
        result["cpu_us"]["gateways"] = sum(result["cpu_us"].pop(name) for name in gateways)
        return result


def _batch_argument(text: str) -> str:
    if text != "compact" and not (text.isdigit() and int(text) >= 1):
        raise argparse.ArgumentTypeError(
            f"--batch must be 'compact' or an int >= 1, got {text!r}")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Measure the gateway's CPU per message beside a bare MQTT relay and "
        "the pipeline alone, its messages/s with single readings and its readings/s with "
        "batches, its publish-to-prediction latency, and one instance against two, all "
        "through a real mosquitto started for the run, fed by the lean publisher "
        "tools/load_mqtt.py; write the results as Markdown.",
    )
    parser.add_argument("--count", type=int, default=20000,
                        help="messages in each measured run of single readings (default: "
                        "20000; the instance runs send twice as many, over two streams)")
    parser.add_argument("--rate", type=float, default=2000.0,
                        help="fixed rate of the latency run, messages/s (default: 2000)")
    parser.add_argument("--warmup", type=int, default=3000,
                        help="readings before measuring, single and in batches (default: 3000)")
    parser.add_argument("--batch", type=_batch_argument, default="compact",
                        help="readings per batch message in the batch runs: 'compact' "
                        "(default: one-letter names, float32 values, as many readings as "
                        "the default limits allow) or a number (full names, float64)")
    parser.add_argument("--batch-readings", type=int, default=200_000,
                        help="readings in each batch run (default: 200000)")
    parser.add_argument("--labels", choices=("data", "none"), default="data",
                        help='"data": every data message carries its true label, learned '
                        "at once (one prediction out per message); \"none\": no labels, "
                        "so the learner asks for every one (a label request out as well)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each measurement; all are reported, and the median "
                        "(default: 3)")
    parser.add_argument("--cost-repeat", type=int, default=5,
                        help="runs of the gateway and of the bare relay, alternated, for "
                        "the cost per message; the headline ratio is of each side's "
                        "least CPU per message (default: 5)")
    parser.add_argument("--protocol", choices=("MQTTv5", "MQTTv311"), default="MQTTv5",
                        help="the gateway's (and the relay's) MQTT protocol version "
                        "(default: MQTTv5, the gateway's default)")
    parser.add_argument("--series", metavar="FILE",
                        help="also write the latency run's [seq, ts, arrival] triples as JSON")
    parser.add_argument("--out", default=str(ROOT / "docs" / "bench-gateway.md"),
                        help="Markdown file to write (default: docs/bench-gateway.md)")
    parser.add_argument("--kind", default=edgelearn.DEFAULT_KIND,
                        help="the gateway's learner kind ([learner] kind) and the pipeline "
                        f"alone's (default: {edgelearn.DEFAULT_KIND}, the default learner)")
    parser.add_argument("--relay", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--relay-config", help=argparse.SUPPRESS)
    parser.add_argument("--relay-broker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.relay:
        return run_relay(args.relay_config, args.relay_broker)
    for name in ("count", "warmup", "batch_readings", "repeat", "cost_repeat"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")

    started = time.monotonic()
    load_at_start = load_average()
    # pipeline_alone encodes full names and float64 values: 32 such readings fit the
    # default payload limit (64 would be rejected as too large).
    alone_batch = 32 if args.batch == "compact" else int(args.batch)
    print(f"pipeline alone ({args.count} messages; load {load_at_start})", file=sys.stderr)
    alone = pipeline_alone(args.count, args.labels == "data", alone_batch, args.kind)
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    port = _free_port()
    broker = start_mosquitto(work, port)
    outputs = Outputs(port)
    bench = Bench(args, work, port, outputs, broker)
    # This process only timestamps arrivals; a collector pass here would count as
    # gateway latency.
    gc.disable()
    results: dict = {"pipeline_alone": alone, "load_at_start": load_at_start}
    repeat = range(args.repeat)
    try:
        gateway = bench.start_gateway("bench")
        print(f"warm-up: {args.warmup} readings, single and batched", file=sys.stderr)
        bench.warm_up("w")
        relay = bench.start_relay()
        bench.warm_up("rw", (RELAY_DATA,))
        results["throughput"], results["relay"] = [], []
        # The gateway and the relay alternated run by run, so a change of the machine's
        # load hits both sides of the ratio.
        for run in range(args.cost_repeat):
            print(f"throughput {run + 1}/{args.cost_repeat}: {args.count} messages as fast "
                  "as possible, into the gateway, then the relay", file=sys.stderr)
            results["throughput"].append(bench.throughput(f"t{run}_", args.count, gateway.pid))
            results["relay"].append(bench.relay_throughput(run, args.count, relay))
        bench.stop(relay)
        results["batches"] = []
        for run in repeat:
            print(f"batches {run + 1}/{args.repeat}: {args.batch_readings} readings, "
                  f"batch {args.batch}", file=sys.stderr)
            results["batches"].append(bench.throughput(f"b{run}_", args.batch_readings,
                                                       gateway.pid, batch=args.batch))
        results["latency"] = []
        for run in repeat:
            print(f"latency {run + 1}/{args.repeat}: {args.count} messages at "
                  f"{args.rate:g}/s", file=sys.stderr)
            results["latency"].append(bench.latency(run))
        time.sleep(5.5)  # one more status message
        results["status"] = outputs.status.get("bench")

        shares = {}
        for name in ("a", "b"):
            template = INSTANCE_DATA.format(name=name)
            shares[name] = (bench.start_gateway(name, f"topics.data={template}"), template)
            bench.warm_up(f"w{name}", (template,))
        two = {name: process.pid for name, (process, _) in shares.items()}
        templates = tuple(template for _, template in shares.values())
        for kind, batch, readings in (("single", "1", 2 * args.count),
                                      ("batches", args.batch, args.batch_readings)):
            results[f"one_{kind}"], results[f"two_{kind}"] = [], []
            # Alternating one and two, so a change of the machine's load hits both.
            for run in repeat:
                print(f"one instance vs two, {kind} {run + 1}/{args.repeat}", file=sys.stderr)
                results[f"one_{kind}"].append(bench.instances(
                    f"o{kind[0]}{run}_", readings, batch, {"bench": gateway.pid}))
                results[f"two_{kind}"].append(bench.instances(
                    f"i{kind[0]}{run}_", readings, batch, two, templates))
    finally:
        outputs.close()
        for process in reversed(bench.processes):
            if process.poll() is None:
                bench.stop(process)
        broker.terminate()
        broker.wait(10)
    results["load_at_end"] = load_average()
    results["minutes"] = (time.monotonic() - started) / 60
    write_report(args, results, machine(), pathlib.Path(args.out))
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({k: v for k, v in results.items() if k != "status"}, indent=1))
    return 0


def _median(values: list[float]) -> float:
    values = sorted(values)
    return values[len(values) // 2]


def _spread(values: list[float]) -> str:
    return f"{min(values):,.0f}-{max(values):,.0f}"


def _shown_command() -> str:
    # Where the page goes changes no number: leave --out out of the command it shows.
    shown, skip = [], False
    for arg in sys.argv[1:]:
        if skip or arg.startswith("--out="):
            skip = False
            continue
        skip = arg == "--out"
        if not skip:
            shown.append(shlex.quote(arg))
    return ("python tools/bench_gateway.py " + " ".join(shown)).strip()


def _instance_rows(results: dict, kind: str) -> list[str]:
    rows = []
    for k, runs in ((1, results[f"one_{kind}"]), (2, results[f"two_{kind}"])):
        for n, r in enumerate(runs):
            c = r["cpu_us"]
            rows.append(
                f"| {n + 1} | {k} | {r['readings']:,} | {r['messages']:,} | {r['missing']:,} | "
                f"{r['predicted_more']:,} | {r['message_rate']:,.0f} | {r['rate']:,.0f} | "
                f"{c['gateways']:.1f} | {c['broker']:.1f} | {c['subscriber']:.1f} | "
                f"{c['publisher']:.2f} | {r['cores']:.2f} | {r['load']} |")
    return rows


def _per_core(us_per_item: float) -> str:
    """Items per second one core could do at ``us_per_item`` µs of CPU each; a
    process whose CPU time stayed under the clock's tick (/proc counts in ticks of
    1/SC_CLK_TCK s: a tiny run) has no such figure."""
    return f"{1e6 / us_per_item:,.0f}" if us_per_item > 0 else "— (under the CPU clock's tick)"


def write_report(args, results: dict, host: dict, out: pathlib.Path) -> None:
    throughput, latency, relay = results["throughput"], results["latency"], results["relay"]
    batches = results["batches"]
    alone = results["pipeline_alone"]
    rate = _median([t["rate"] for t in throughput])
    p99 = _median([r["p99"] for r in latency])
    # The cost per message: each side's least CPU per message over the alternated runs
    # (a busy machine only adds to a run's), as tools/bench_relay_ratio.py gives it.
    gateway_cpu = min(t["cpu_us"]["gateway"] for t in throughput)
    relay_cpu = min(r["cpu_us"]["relay"] for r in relay)
    publisher_cpu = _median([t["cpu_us"]["publisher"] for t in throughput])
    # NaN only where a tiny run's CPU time stayed under the clock's tick (see _per_core)
    ratio = gateway_cpu / relay_cpu if relay_cpu else float("nan")
    paired = _median([t["cpu_us"]["gateway"] / r["cpu_us"]["relay"] if r["cpu_us"]["relay"]
                      else float("nan") for t, r in zip(throughput, relay)])
    batch_rate = _median([b["rate"] for b in batches])
    batch_cpu = {k: _median([b["cpu_us"][k] for b in batches])
                 for k in ("gateway", "broker", "subscriber", "publisher")}
    per_message = batches[0]["readings_per_message"]
    sizes = batches[0]["payload_bytes"]
    medians = {key: _median([r["rate"] for r in results[key]])
               for key in ("one_single", "two_single", "one_batches", "two_batches")}
    message_medians = {key: _median([r["message_rate"] for r in results[key]])
                       for key in ("one_single", "two_single")}
    most_cores = max(r["cores"] for key in ("one_single", "two_single", "one_batches",
                                            "two_batches") for r in results[key])
    counters = results["status"]["counters"] if results.get("status") else {}
    command = _shown_command()
    batch_words = ("compact batches" if args.batch == "compact" else
                   f"batches of {args.batch}")
    learner = f"`{alone['kind']}`" + (" (the default learner)" if alone["kind"] == alone["default_kind"] else "")
    other = f"`{alone['other_kind']}`" + (" (the default learner)" if alone["other_kind"] == alone["default_kind"] else "")
    lines = [
        "# Gateway benchmark: cost per message, messages/s and latency through mosquitto",
        "",
        f"Command: `{command}` (every figure on this page comes from this one run; it "
        f"took {results['minutes']:.1f} minutes)  ",
        f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}  ",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in host.items()) + "  ",
        f"Load average (1, 5, 15 min) at the start: {results['load_at_start']}; at the end: "
        f"{results['load_at_end']}; each run's 1-minute load is in its row. The machine is "
        "shared, so the CPU figures per message and their ratios (measured in the same run) "
        "are the figures to compare, not the rates.",
        "",
        "Everything runs on this one machine: the publisher, mosquitto (one thread), the "
        f"gateway (`python -m firmware_bridge gateway`, {args.protocol}, {learner} with 64 "
        "channel slots) and the subscriber timing the outputs (`tools/load_mqtt.py`'s "
        "`LeanSubscriber` on a thread of this tool: a raw-socket MQTT 3.1.1 client, QoS 1, "
        "the PUBACKs of a read sent at once; it decodes every prediction message as it "
        "arrives and files each prediction under its stream and seq, to check that each "
        "reading got exactly one; its CPU is this tool's process's). The publisher is "
        "`tools/load_mqtt.py`: a minimal MQTT 3.1.1 client on a raw socket, QoS 1, PUBLISH "
        "packets pipelined in a window of 1,000 and PUBACKs read in bulk, payloads encoded "
        "before the clock starts and `ts` written into each when it is sent; it is started "
        "ahead, encodes and connects, and publishes when the run begins. Its CPU per "
        "message is its own, over the publishing. Data: the occupancy data set, channels "
        "dropping out with probability 0.01 per reading. Outputs are published at QoS 1. "
        + ("Every reading carries its true label, which the gateway learns at "
           "once: one message out (the prediction) per message in."
           if args.labels == "data" else
           "No labels: an untrained learner is unsure of everything and asks for every "
           "label, so a label request goes out per reading as well.")
        + f" The cost per message ran {len(throughput)} times, the gateway and the relay "
        "alternated; its headline is each side's least CPU per message. Every other "
        f"measurement ran {len(batches)} times; its headline is the median.",
        "",
        "## Summary",
        "",
        "| figure | this run | aim |",
        "|---|---|---|",
        f"| gateway CPU per message / bare relay CPU per message | **{ratio:.2f}x** "
        f"({gateway_cpu:.0f} / {relay_cpu:.0f} µs) | at most 1.2x |",
        f"| pipeline alone, CPU per message, {learner} | **{alone['single']:.1f} µs** | at most 15 µs |",
        f"| the same, {other} | "
        f"**{alone['single_other']:.1f} µs** | at most 15 µs |",
        f"| pipeline alone, compact batches with the label journal, CPU per reading: "
        f"one by one / {ALONE_GROUP} at a time | {alone['compact_journal']:.2f} / "
        f"{alone['compact_grouped']:.2f} µs | |",
        f"| readings/s in {batch_words} ({per_message:.0f} readings, {sizes['median']:,} "
        f"bytes a message), one instance | **{batch_rate:,.0f}** ({batch_cpu['gateway']:.1f} "
        "µs gateway CPU per reading: at most "
        f"{_per_core(batch_cpu['gateway'])} per core) | at least 200,000 |",
        f"| readings/s in {batch_words}, one instance / two instances | "
        f"{medians['one_batches']:,.0f} / **{medians['two_batches']:,.0f}** "
        f"({medians['two_batches'] / medians['one_batches']:.2f}x) | two above one |",
        f"| messages/s of single readings, one instance / two instances | "
        f"{message_medians['one_single']:,.0f} / **{message_medians['two_single']:,.0f}** "
        f"({message_medians['two_single'] / message_medians['one_single']:.2f}x) "
        "| two above one |",
        f"| messages/s, single readings, one stream | {rate:,.0f} | |",
        f"| p99 latency at {args.rate:,.0f} messages/s | {p99:.1f} ms | |",
        f"| publisher CPU per message (single readings) / gateway's | {publisher_cpu:.1f} / "
        f"{gateway_cpu:.0f} µs ({publisher_cpu / gateway_cpu if gateway_cpu else float('nan'):.1%}) | not the bottleneck |",
        "",
        "Every row comes from the command above. The publisher alone: `python "
        "tools/load_mqtt.py --broker HOST:PORT --count 200000 --loop --with-labels --batch "
        "compact` (any mosquitto; it prints its CPU per message).",
        "",
        "## The pipeline alone",
        "",
        "CPU time per message of `Pipeline.handle` in the benchmark's own process (no MQTT; "
        "the least of three passes over "
        f"{args.count:,} messages after a warm-up): decode, validate, the learner ({learner}: "
        "observe, predict, decide to ask, learn the label), encode the prediction.",
        "",
        "| path | CPU µs per reading |",
        "|---|---|",
        f"| single readings | {alone['single']:.2f} |",
        f"| single readings, {other} | {alone['single_other']:.2f} |",
        f"| batches of {alone['batch_size']} readings (one jitted decode and learner pass a batch) | {alone['batch']:.2f} |",
        f"| the same batches reading by reading (jitted batches off) | {alone['batch_per_reading']:.2f} |",
        f"| compact batches as in the batch runs below ({alone['compact_readings']:.1f} readings a "
        f"message, default limits), jitted, no label journal | {alone['compact']:.2f} |",
        f"| the same, with the label journal on disk (the gateway's default; one record a "
        f"batch) | {alone['compact_journal']:.2f} |",
        f"| the same, handed over {ALONE_GROUP} at a time (`Pipeline.handle_many`, as the "
        f"gateway takes what is queued: one learner pass and journal record for them) | "
        f"{alone['compact_grouped']:.2f} |",
        f"| reference: bare msgpack decode + encode of a fixed prediction, same payloads | "
        f"{alone['bare']:.2f} |",
        "",
        f"The pipeline costs {alone['single'] / alone['bare']:.1f}x the bare decode/encode "
        f"loop in the same process ({alone['single_other'] / alone['bare']:.1f}x with "
        f"{other}).",
        "",
        "## Cost per message: the gateway beside a bare relay",
        "",
        f"{args.count:,} messages per run, published as fast as the publisher could. The "
        "relay (`tools/bench_gateway.py --relay`) is the gateway's own MQTT client "
        "(`firmware_bridge.service.mqtt.MqttBridge`, paho-mqtt) with the gateway's settings from "
        "the same configuration file: protocol, QoS 1 in and out, persistent session, "
        "manual acks sent once the output is with the broker, the same in-flight window "
        "and bounded queue; it publishes one fixed output per input and does nothing "
        "else. CPU time per message (user + system, µs, from /proc) of each process over "
        "the run; cores = all their CPU seconds per second of the run.",
        "",
        "Gateway:",
        "",
        "| run | offered/s | sustained/s | predicted once | more than once | never "
        "| CPU µs/msg: gateway | broker | subscriber | publisher | cores | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(f"| {n + 1} | {t['publisher_rate']:,.0f} | {t['rate']:,.0f} | "
          f"{t['predicted_once']:,} | {t['predicted_more']:,} | {t['missing']:,} | "
          + " | ".join(f"{t['cpu_us'][k]:.0f}" for k in ("gateway", "broker", "subscriber"))
          + f" | {t['cpu_us']['publisher']:.1f} | {t['cores']:.2f} | {t['load']} |"
          for n, t in enumerate(throughput)),
        "",
        "Bare relay:",
        "",
        "| run | offered/s | outputs | CPU µs/msg: relay | broker | publisher | load |",
        "|---|---|---|---|---|---|---|",
        *(f"| {n + 1} | {r['publisher_rate']:,.0f} | {r['outputs']:,} | "
          f"{r['cpu_us']['relay']:.0f} | {r['cpu_us']['broker']:.0f} | "
          f"{r['cpu_us']['publisher']:.1f} | {r['load']} |"
          for n, r in enumerate(relay)),
        "",
        "The two were run alternately (gateway run 1, relay run 1, gateway run 2, ...), "
        "so a change of the machine's load hits both. Least of each: gateway "
        f"{gateway_cpu:.1f} µs, relay {relay_cpu:.1f} µs of CPU per "
        f"message: **the gateway costs {ratio:.2f}x the bare relay** (the median of the "
        f"runs' own ratios, gateway run n / relay run n: {paired:.2f}x), i.e. "
        f"{gateway_cpu - relay_cpu:.0f} µs per message for the pipeline, the ack "
        "bookkeeping, counters and status.",
        "",
        f"## Batched readings: {batch_words}",
        "",
        f"{args.batch_readings:,} readings per run into one gateway, "
        + ("in compact batch messages (`tools/load_mqtt.py --batch compact`): one-letter "
           "channel names, channel values as float32 (`ts` float64), as many readings of "
           "the stream per message as the gateway's default limits allow "
           "(`max_payload_bytes` 4096, `max_batch_readings` 64)"
           if args.batch == "compact" else f"in batch messages of {args.batch} readings")
        + f": {per_message:.2f} readings per message, payloads of {sizes['min']:,} to "
        f"{sizes['max']:,} bytes (median {sizes['median']:,}). Published as fast as the "
        "publisher could; one prediction message answers each batch. The gateway's worker "
        "takes what is queued together (`Pipeline.handle_many`: a stream's queued batches in "
        "one decode, one learner pass and one label journal record). The rate "
        "is readings / (arrival of the last prediction - `ts` of the first reading).",
        "",
        "| run | readings | messages | offered readings/s | sustained readings/s | predicted "
        "once | more than once | never | CPU µs/reading: gateway | broker | subscriber "
        "| publisher | cores | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(f"| {n + 1} | {b['readings']:,} | {b['messages']:,} | {b['publisher_rate']:,.0f} | "
          f"{b['rate']:,.0f} | {b['predicted_once']:,} | {b['predicted_more']:,} | "
          f"{b['missing']:,} | {b['cpu_us']['gateway']:.2f} | {b['cpu_us']['broker']:.2f} | "
          f"{b['cpu_us']['subscriber']:.2f} | {b['cpu_us']['publisher']:.3f} | "
          f"{b['cores']:.2f} | {b['load']} |"
          for n, b in enumerate(batches)),
        "",
        f"Median: **{batch_rate:,.0f} readings/s** with one instance"
        + (" (the aim, 200,000, is met)." if batch_rate >= 200_000 else
           f" ({batch_rate / 200_000:.0%} of the aim of 200,000).")
        + " Where the CPU goes, per reading (medians): gateway "
        f"{batch_cpu['gateway']:.2f} µs, broker {batch_cpu['broker']:.2f}, subscriber "
        f"{batch_cpu['subscriber']:.2f}, publisher {batch_cpu['publisher']:.3f}. At "
        f"{batch_cpu['gateway']:.2f} µs per reading one gateway process can do at most "
        f"{_per_core(batch_cpu['gateway'])} readings/s on a core of its own; everything "
        "else in the run together would need "
        f"{sum(batch_cpu[k] for k in ('broker', 'subscriber', 'publisher')) * 200_000 / 1e6:.2f}"
        " of a core at 200,000 readings/s."
        + (f" With two instances: {medians['two_batches']:,.0f} readings/s"
           + (" (the aim is met)." if medians['two_batches'] >= 200_000 else ".")),
        "",
        f"## Latency at a fixed {args.rate:,.0f} messages/s",
        "",
        f"{args.count:,} messages per run. Latency = arrival of the prediction at the "
        "subscriber minus the `ts` the publisher put in the data message (same clock).",
        "",
        "| run | achieved/s | p50 | p90 | p99 | max | never |",
        "|---|---|---|---|---|---|---|",
        *(f"| {n + 1} | {r['publisher_rate']:,.0f} | {r['p50']:.1f} ms | {r['p90']:.1f} ms "
          f"| {r['p99']:.1f} ms | {r['max']:.1f} ms | {r['missing']:,} |"
          for n, r in enumerate(latency)),
        "",
        f"Median p50 {_median([r['p50'] for r in latency]):.1f} ms, median "
        f"**p99 {p99:.1f} ms**.",
        "",
        "## One instance against two",
        "",
        "One lean publisher, two streams, as fast as it can. One instance: both streams "
        "into the one gateway's subtree. Two instances: gateways `a` and `b`, each with "
        "its own share (`--gateway-id a --set topics.data=sensors/a/{stream}/data`, and "
        "`b`; the instance share of `docs/fleet.md` and "
        "`configs/edgelearn-gateway@.service`), stream 0 into `a`'s share and stream 1 "
        "into `b`'s (`load_mqtt.py --data-template` twice). Same readings, same "
        "publisher, runs of one and two alternating. The rate is all readings (or "
        "messages) / (last prediction's arrival - first reading's `ts`). CPU per reading "
        "of each process from /proc (gateways together); cores = the CPU seconds of all "
        "of them per second of the run: on this machine's "
        f"{host['cores']} cores, what the gateways can gain is what the broker, the "
        "subscriber and the publisher leave. With batches the per-message costs of the "
        "broker, the subscriber and the publisher are shared by a batch's readings, so "
        "the gateways' learning is most of the work: the run where a second instance "
        "can show.",
        "",
        f"Single readings, {2 * args.count:,} in all:",
        "",
        "| run | instances | readings | messages | never | more than once | messages/s "
        "| readings/s | CPU µs/reading: gateways | broker | subscriber | publisher | cores "
        "| load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *_instance_rows(results, "single"),
        "",
        f"{batch_words.capitalize()}, {args.batch_readings:,} readings in all:",
        "",
        "| run | instances | readings | messages | never | more than once | messages/s "
        "| readings/s | CPU µs/reading: gateways | broker | subscriber | publisher | cores "
        "| load |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *_instance_rows(results, "batches"),
        "",
        "Medians (and the range of the runs): single readings, one instance "
        f"{message_medians['one_single']:,.0f} messages/s "
        f"({_spread([r['message_rate'] for r in results['one_single']])}), two instances "
        f"{message_medians['two_single']:,.0f} "
        f"({_spread([r['message_rate'] for r in results['two_single']])}), "
        f"{message_medians['two_single'] / message_medians['one_single']:.2f}x; "
        f"{batch_words}, one instance {medians['one_batches']:,.0f} readings/s "
        f"({_spread([r['rate'] for r in results['one_batches']])}), two instances "
        f"{medians['two_batches']:,.0f} "
        f"({_spread([r['rate'] for r in results['two_batches']])}), "
        f"{medians['two_batches'] / medians['one_batches']:.2f}x. "
        + (f"The processes of these runs got at most {most_cores:.2f} of the machine's "
           f"{host['cores']} cores (the `cores` column; the load average is in each row): "
           "a second instance had no idle core to use, so these runs cannot show what it "
           "gains; rerun on a quiet machine."
           if most_cores < host["cores"] - 0.5 else
           f"The processes of these runs used up to {most_cores:.2f} of the machine's "
           f"{host['cores']} cores."),
        "",
        "Gateway counters after all its runs: "
        + ", ".join(f"{k} {v}" for k, v in counters.items()
                    if k in ("messages", "batches", "data", "predictions", "label_requests",
                             "rejected", "redelivery_expected", "publish_dropped")),
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
