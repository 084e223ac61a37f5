#!/usr/bin/env python3
"""A fleet that learns together, measured with real gateway processes over a real
broker: what a new stream gains from the group, what the fleet saves in labels,
what crosses the broker and what the fleet costs a gateway per message.

One run of the protocol (``--k`` gateways, fleet on or off):

* one mosquitto on a free loopback port (or, for the NATS row, a cluster of three
  ``nats-server`` processes with MQTT listeners, the set-up of ``docs/fleet.md``, each
  gateway on node ``i mod 3``) and ``k`` ``edgelearn gateway`` processes (ActiveAROW,
  ``capacity = 64``, ``target_query_rate`` ``--rate``), each serving its own topic
  subtree (``sensors/g<i>/{stream}/data``, ``edgelearn/g<i>/{stream}/...``), with
  ``[fleet] enabled``, ``group = "results"``, ``streams = "room-*"``,
  ``interval_seconds`` ``--interval`` (or ``[fleet]`` off: isolated gateways);
* ``--streams`` streams ``room-0``, ``room-1``, ... of one concept (six channels in
  their own units, each missing 15% of the time, and in stream ``j`` channel ``j mod 6``
  dark for readings 1,000-1,599), stream ``j`` on gateway ``j mod k``, joining one after
  another (stream ``j`` starts ``j x --join`` readings after the first) and running
  for ``--trained`` readings each, ``--per-second`` readings a second per stream. The
  data messages carry no label: a labeller client (this process) answers every label
  request at once from the truth, so each stream learns at its learner's budget;
* then a new stream of ``--new`` readings on gateway 0, three ways at once, the same
  readings: ``room-new`` (in the group: it starts from the group model), ``solo-new``
  (not in the group, ``streams = "room-*"``: it starts alone) and ``room-0``, the stream
  trained for ``--trained`` readings, continuing.

Accuracy is the predictions' (the prediction topic, before the label) against the
truth. The fleet's bytes are every message on ``edgelearn/fleet/results/#`` (topic and
payload) heard by a subscriber; the gateways' CPU is from /proc. With ``--offset S``
each stream's concept has its own threshold, drawn from N(0, S).

    .venv/bin/python tools/results_fleet_gateways.py          # docs/results-fleet-gateways.md
    .venv/bin/python tools/results_fleet_gateways.py --quick --out -   # smoke run (about 30 s)
"""

from __future__ import annotations

import argparse
import getpass
import os
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
from pathlib import Path

import msgpack
import numpy as np
import paho.mqtt.client as paho

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from results_fleet import REACH_WINDOW, WINDOWS, labels_to_reach  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from firmware_bridge.wire import encode_data, encode_label  # noqa: E402

WEIGHTS = np.array([1.0, -0.8, 0.6, -0.5, 0.4, 0.3])
NAMES = ("t", "h", "c", "p", "l", "m")
SCALE = np.array([5.0, 10.0, 100.0, 3.0, 50.0, 1.0])
SHIFT = np.array([20.0, 50.0, 600.0, 1000.0, 200.0, 0.0])
GROUP = "results"
#: Readings of a stream during which one of its channels is dark.
DARK = (1000, 1600)


def readings(n: int, rng: np.random.Generator, threshold: float, dark: int | None) -> list[tuple[dict, bool]]:
    """One stream's readings: six channels in their own units, each missing 15% of the
    time, channel ``dark`` missing for the readings in DARK."""
    z = rng.normal(size=(n, len(NAMES)))
    present = rng.random((n, len(NAMES))) > 0.15
    if dark is not None:
        present[DARK[0]:DARK[1], dark] = False
    y = z @ WEIGHTS > threshold
    raw = z * SCALE + SHIFT
    return [({NAMES[j]: float(raw[i, j]) for j in range(len(NAMES)) if present[i, j]}, bool(y[i]))
            for i in range(n)]


# -- brokers -------------------------------------------------------------------------------


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise SystemExit(f"results_fleet_gateways: timed out after {timeout} s waiting for {what}")


def program(name: str, package: str) -> str:
    found = shutil.which(name) or next((p for p in (f"/usr/sbin/{name}", f"/usr/bin/{name}")
                                        if os.access(p, os.X_OK)), None)
    if found is None:
        raise SystemExit(f"results_fleet_gateways: needs {name}: install the Debian package {package}")
    return found


def _accepting(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class Mosquitto:
    protocol = "MQTTv5"

    def __init__(self, directory: Path):
        self.port = free_ports(1)[0]
        config = directory / "mosquitto.conf"
        config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\n"
                          "max_queued_messages 0\nmax_inflight_messages 100\n"
                          f"user {getpass.getuser()}\nlog_dest file {directory}/mosquitto.log\n")
        self.processes = [subprocess.Popen([program("mosquitto", "mosquitto"), "-c", str(config)],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
        wait_until(lambda: _accepting(self.port), 10, "mosquitto")

    def port_for(self, i: int) -> int:
        return self.port

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
            process.wait(10)


class NatsCluster(Mosquitto):
    """Three clustered nats-server processes with JetStream and MQTT listeners (the
    set-up of docs/fleet.md section 3, on loopback ports)."""

    protocol = "MQTTv311"

    def __init__(self, directory: Path, size: int = 3):
        binary = program("nats-server", "nats-server")
        ports = free_ports(3 * size)
        clients, route_ports, self.mqtt_ports = ports[:size], ports[size:2 * size], ports[2 * size:]
        routes = ", ".join(f"nats-route://127.0.0.1:{p}" for p in route_ports)
        self.processes = []
        for i in range(size):
            node = directory / f"n{i + 1}"
            node.mkdir(parents=True)
            (node / "nats.conf").write_text(
                f"server_name: n{i + 1}\nlisten: 127.0.0.1:{clients[i]}\n"
                f'jetstream {{ store_dir: "{node}/js" }}\n'
                f"cluster {{ name: results, listen: 127.0.0.1:{route_ports[i]}, routes: [{routes}] }}\n"
                f"mqtt {{ listen: 127.0.0.1:{self.mqtt_ports[i]}, stream_replicas: 3 }}\n")
            with open(node / "nats.log", "ab") as log:
                self.processes.append(subprocess.Popen([binary, "-c", str(node / "nats.conf")],
                                                       stdout=log, stderr=subprocess.STDOUT))
        for i in range(size):
            wait_until(lambda i=i: self._ready(i), 60, f"NATS node {i + 1}'s MQTT listener", 0.2)

    def _ready(self, i: int) -> bool:
        result = []
        client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"probe-{i}", protocol=paho.MQTTv311)
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

    @property
    def port(self) -> int:
        return self.mqtt_ports[0]

    def port_for(self, i: int) -> int:
        return self.mqtt_ports[i % len(self.mqtt_ports)]


# -- one run -------------------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Observer:
    """One MQTT client that hears the predictions, label requests, statuses and fleet
    messages, answers every label request from the truth, and publishes readings."""

    def __init__(self, broker, truth: dict):
        self.truth = truth  # (stream, seq) -> label
        self.lock = threading.Lock()
        self.predictions: dict[tuple[str, int], bool] = {}
        self.sent: dict[tuple[str, int], float] = {}  # (stream, seq) -> when its reading was published
        self.lags: dict[str, list[float]] = {}  # gateway -> seconds from a reading to its prediction
        self.requests: dict[str, list[int]] = {}
        self.statuses: dict[str, dict] = {}
        self.fleet_bytes = 0  # contributions (edgelearn/fleet/results/<gateway>)
        self.fleet_messages = 0
        self.total_bytes = 0  # the retained totals (edgelearn/fleet/results/<gateway>/total)
        self.total_messages = 0
        protocol = paho.MQTTv311 if broker.protocol == "MQTTv311" else paho.MQTTv5
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="results-observer", protocol=protocol)
        self.client.max_inflight_messages_set(100)
        self.client.max_queued_messages_set(0)
        self.client.on_message = self._on_message
        self.client.connect("127.0.0.1", broker.port)
        self.client.subscribe([("edgelearn/+/+/prediction", 1), ("edgelearn/+/+/label_request", 1),
                               ("edgelearn/status/+", 1), (f"edgelearn/fleet/{GROUP}/#", 1)])
        self.client.loop_start()

    def _on_message(self, client, userdata, message):
        levels = message.topic.split("/")
        if levels[1] == "fleet":
            with self.lock:
                if levels[-1] == "total":
                    self.total_bytes += len(message.topic) + len(message.payload)
                    self.total_messages += 1
                else:
                    self.fleet_bytes += len(message.topic) + len(message.payload)
                    self.fleet_messages += 1
            return
        body = msgpack.unpackb(message.payload, raw=False)
        if levels[1] == "status":
            with self.lock:
                self.statuses[levels[2]] = body
            return
        gateway, stream, kind = levels[1], levels[2], levels[3]
        if kind == "prediction":
            heard = time.monotonic()
            with self.lock:
                self.predictions[(stream, body["seq"])] = body["y"]
                sent = self.sent.get((stream, body["seq"]))
                if sent is not None:
                    self.lags.setdefault(gateway, []).append(heard - sent)
        elif kind == "label_request":
            with self.lock:
                self.requests.setdefault(stream, []).append(body["seq"])
            y = self.truth[(stream, body["seq"])]
            client.publish(f"edgelearn/{gateway}/{stream}/label", encode_label(body["req"], y), 1)

    def counter(self, gateway: str, name: str) -> int:
        with self.lock:
            return self.statuses.get(gateway, {}).get("counters", {}).get(name, 0)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def gateway_config(directory: Path, name: str, port: int, protocol: str, fleet: bool, args) -> Path:
    path = directory / f"{name}.toml"
    path.write_text(
        "[topics]\n"
        f'data = "sensors/{name}/{{stream}}/data"\nprediction = "edgelearn/{name}/{{stream}}/prediction"\n'
        f'label_request = "edgelearn/{name}/{{stream}}/label_request"\nlabel = "edgelearn/{name}/{{stream}}/label"\n'
        "[gateway]\nstatus_interval_seconds = 1\nmax_streams = 64\n"
        "[checkpoints]\ninterval_seconds = 3600\n"
        f'[mqtt]\nhost = "127.0.0.1"\nport = {port}\nprotocol = "{protocol}"\n'
        "reconnect_min_delay_seconds = 1\nmax_inflight_messages = 100\n"
        '[learner]\nkind = "active_arow"\n'
        f"[learner.params]\ncapacity = 64\ntarget_query_rate = {args.rate}\n"
        f'[fleet]\nenabled = {"true" if fleet else "false"}\ngroup = "{GROUP}"\nstreams = "room-*"\n'
        f"interval_seconds = {args.interval}\n")
    return path


def one_run(k: int, fleet: bool, args, seed: int, nats: bool = False) -> dict:
    """The protocol of the module docstring, once; what it measured."""
    rng = np.random.default_rng(seed)
    thresholds = rng.normal(0.0, args.offset, size=args.streams + 1) if args.offset else np.zeros(args.streams + 1)
    data = {f"room-{j}": readings(args.trained, rng, thresholds[j], j % len(NAMES)) for j in range(args.streams)}
    new = readings(args.new, rng, thresholds[args.streams], None)
    truth = {(stream, seq): y for stream, rows in data.items() for seq, (_, y) in enumerate(rows)}
    for stream in ("room-new", "solo-new"):
        truth.update({(stream, seq): y for seq, (_, y) in enumerate(new)})
    truth.update({("room-0", args.trained + seq): y for seq, (_, y) in enumerate(new)})

    work = Path(tempfile.mkdtemp(prefix="results-fleet-"))
    broker = NatsCluster(work) if nats else Mosquitto(work)
    observer = Observer(broker, truth)
    processes: dict[str, subprocess.Popen] = {}
    try:
        for i in range(k):
            name = f"g{i}"
            config = gateway_config(work, name, broker.port_for(i), broker.protocol, fleet, args)
            with open(work / f"{name}.log", "ab") as log:
                processes[name] = subprocess.Popen(
                    [sys.executable, "-m", "firmware_bridge.cli", "gateway", "--config", str(config),
                     "--gateway-id", name, "--state-dir", str(work / name / "state")],
                    cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        for name, process in processes.items():
            def online(name=name, process=process):
                if process.poll() is not None:
                    raise SystemExit((work / f"{name}.log").read_text()[-3000:])
                status = observer.statuses.get(name)
                return status and status["pid"] == process.pid and status["connected"]
            wait_until(online, 120, f"gateway {name} online")
        time.sleep(0.5)  # the gateways' subscriptions are in place
        cpu_before = {name: cpu_seconds(p.pid) for name, p in processes.items()}
        bytes_before = observer.fleet_bytes, observer.total_bytes
        began = time.monotonic()

        # The fleet's streams, joining one after another.
        schedule = []  # (step, stream, gateway, seq, x)
        for j, (stream, rows) in enumerate(data.items()):
            schedule += [(j * args.join + seq, stream, f"g{j % k}", seq, x) for seq, (x, _) in enumerate(rows)]
        feed(observer, schedule, args.per_second)
        wait_until(lambda: all((stream, seq) in observer.predictions for stream, rows in data.items()
                               for seq in range(len(rows))), 120, "the fleet's predictions")
        time.sleep(3 * args.interval + 1)  # the last contributions are merged everywhere
        # The new stream, three ways at once, on gateway 0.
        schedule = []
        for seq, (x, _) in enumerate(new):
            schedule += [(seq, "room-new", "g0", seq, x), (seq, "solo-new", "g0", seq, x),
                         (seq, "room-0", "g0", args.trained + seq, x)]
        feed(observer, schedule, args.per_second)
        wait_until(lambda: all((stream, seq) in observer.predictions for stream in ("room-new", "solo-new")
                               for seq in range(len(new))), 120, "the new stream's predictions")
        elapsed = time.monotonic() - began
        cpu = sum(cpu_seconds(p.pid) - cpu_before[name] for name, p in processes.items())
        fleet_bytes = observer.fleet_bytes - bytes_before[0]
        total_bytes = observer.total_bytes - bytes_before[1]
        time.sleep(1.5)  # a last status with the counters
        counters = {name: {key: observer.counter(name, key) for key in
                           ("fleet_contributions_sent", "fleet_contributions_merged", "fleet_streams_started",
                            "fleet_totals_merged")}
                    for name in processes}
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in processes.values():
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        observer.close()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)

    def right(stream, seqs):
        return np.array([observer.predictions[(stream, s)] == truth[(stream, s)] for s in seqs])

    def asked_by(stream, seqs):
        asked = np.zeros(max(seqs) + 1, dtype=np.int64)
        for s in observer.requests.get(stream, []):
            if s <= max(seqs):
                asked[s] += 1
        return list(np.cumsum(asked)[list(seqs)])

    messages = args.streams * args.trained + 3 * args.new
    out = {"k": k, "fleet": fleet, "nats": nats, "elapsed_s": elapsed, "cpu_per_message_us": 1e6 * cpu / messages,
           "fleet_bytes": fleet_bytes, "fleet_messages": observer.fleet_messages, "total_bytes": total_bytes,
           "total_messages": observer.total_messages, "counters": counters,
           "lag": {name: prediction_lag(observer.lags.get(name, [])) for name in processes}}
    new_seqs = range(len(new))
    out["right"] = {"fleet": right("room-new", new_seqs), "alone": right("solo-new", new_seqs),
                    "trained": right("room-0", range(args.trained, args.trained + len(new)))}
    out["asked"] = {"fleet": asked_by("room-new", new_seqs), "alone": asked_by("solo-new", new_seqs)}
    out["labels_new"] = {how: out["asked"][how][-1] for how in ("fleet", "alone")}
    level = 0.95 * out["right"]["trained"].mean()
    out["reach"] = {how: labels_to_reach(out["right"][how], out["asked"][how], level) for how in ("fleet", "alone")}
    # The fleet's own streams: overall accuracy, labels, labels each needed to reach 95%.
    streams = list(data)
    trained_seqs = range(args.trained)
    rights = [right(s, trained_seqs) for s in streams]
    asked = [asked_by(s, trained_seqs) for s in streams]
    out["fleet_accuracy"] = float(np.mean([r.mean() for r in rights]))
    out["fleet_labels"] = int(sum(a[-1] for a in asked))
    out["fleet_reach"] = [labels_to_reach(r, a, level) for r, a in zip(rights, asked)]
    # A stream that never reached it would have needed more than all it asked.
    out["fleet_reach_bound"] = [a[-1] if np.isnan(n) else n for n, a in zip(out["fleet_reach"], asked)]
    return out


#: A gateway whose predictions came later than this after their readings was stalled:
#: the page warns, as its accuracy and CPU numbers describe a stalled run.
LAG_WARNING_S = 1.0


def prediction_lag(lags: list) -> dict:
    """A gateway's prediction lag (seconds from a reading's publication to its
    prediction heard): median, 99th percentile and largest."""
    if not lags:
        return {"median": float("nan"), "p99": float("nan"), "max": float("nan")}
    a = np.asarray(lags)
    return {"median": float(np.median(a)), "p99": float(np.percentile(a, 99)), "max": float(a.max())}


def feed(observer: Observer, schedule: list, per_second: float) -> None:
    """Publish the scheduled readings, step by step, ``per_second`` steps a second."""
    schedule.sort(key=lambda item: item[0])
    client = observer.client
    start = time.monotonic()
    infos = []
    for step, stream, gateway, seq, x in schedule:
        due = start + step / per_second
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        observer.sent[(stream, seq)] = time.monotonic()
        infos.append(client.publish(f"sensors/{gateway}/{stream}/data", encode_data(time.time(), seq, x), 1))
    for info in infos:
        info.wait_for_publish(60)


# -- the page ------------------------------------------------------------------------------


def _mean(values) -> float:
    values = [v for v in values if not np.isnan(v)]
    return float(np.mean(values)) if values else float("nan")


def _never(values) -> int:
    return int(sum(np.isnan(v) for v in values))


def windows_of(args) -> list[int]:
    """The readings windows of the new stream the page shows."""
    return [w for w in WINDOWS if w < args.new] + [args.new] if args.new not in WINDOWS \
        else [w for w in WINDOWS if w <= args.new]


def newcomer_rows(label: str, runs: list, args) -> tuple[list[str], dict]:
    windows = windows_of(args)
    rows, acc = [], {}
    shared = runs[0]["fleet"]
    for how, name in (("fleet", "from the group model" if shared else "room-new (fleet off: alone)"),
                      ("alone", "alone"),
                      ("trained", f"trained for {args.trained}")):
        acc[how] = {w: 100 * np.mean([r["right"][how][:w].mean() for r in runs]) for w in windows}
        cells = " | ".join(f"{acc[how][w]:.1f}" for w in windows)
        if how == "trained":
            rows.append(f"| {label} | {name} | {cells} | (same budget) | |")
        else:
            reach = [r["reach"][how] for r in runs]
            rows.append(f"| {label} | {name} | {cells} | {np.mean([r['labels_new'][how] for r in runs]):.0f} "
                        f"| {_mean(reach):.0f} ({_never(reach)} never) |")
    return rows, acc


def header(args) -> list[str]:
    windows = windows_of(args)
    return ["| run | new stream | " + " | ".join(f"first {w}" for w in windows)
            + " | labels it asked | labels to reach 95% of the trained stream |",
            "|---|---|" + "---|" * len(windows) + "---|---|"]


def aims(label: str, acc: dict, args) -> str:
    first = max(w for w in windows_of(args) if w <= max(500, min(windows_of(args))))
    to_trained = acc["fleet"][first] - acc["trained"][first]
    to_alone = acc["fleet"][first] - acc["alone"][first]
    verdict = []
    verdict.append("within 2 points of the trained stream: met" if to_trained >= -2 else
                   f"within 2 points of the trained stream: missed by {-2 - to_trained:.1f} points")
    verdict.append("at least 5 above alone: met" if to_alone >= 5 else
                   f"at least 5 above alone: missed by {5 - to_alone:.1f} points")
    return (f"{label}, first {first} readings: from the group model {to_trained:+.1f} points against the "
            f"trained stream, {to_alone:+.1f} against alone ({'; '.join(verdict)})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2, 4, 8], help="gateways per run")
    parser.add_argument("--streams", type=int, default=8, help="the fleet's streams, spread over the gateways")
    parser.add_argument("--trained", type=int, default=3000, help="readings of each of the fleet's streams")
    parser.add_argument("--new", type=int, default=2000, help="readings of the new stream")
    parser.add_argument("--join", type=int, default=300, help="readings between two streams' starts")
    parser.add_argument("--per-second", type=float, default=150.0, help="readings a second per stream")
    parser.add_argument("--interval", type=float, default=1.0, help="[fleet] interval_seconds")
    parser.add_argument("--rate", type=float, default=0.1, help="the learners' target_query_rate")
    parser.add_argument("--offset", type=float, default=0.0, help="per-stream concept offsets N(0, S)")
    parser.add_argument("--offset-case", type=float, default=0.5, help="S of the per-stream-offset rows (0: none)")
    parser.add_argument("--cpu-pairs", type=int, default=1,
                        help="more runs at the isolated runs' k, fleet off then on, for the CPU ratio")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--no-nats", action="store_true", help="leave out the NATS cluster row")
    parser.add_argument("--quick", action="store_true", help="k = 2, 2 streams of 400 readings, no NATS or offsets")
    parser.add_argument("--out", default="docs/results-fleet-gateways.md", help="'-': stdout")
    args = parser.parse_args(argv)
    if args.quick:
        args.k, args.streams, args.trained, args.new, args.join = [2], 2, 400, 400, 100
        args.per_second, args.no_nats, args.offset_case, args.cpu_pairs = 300.0, True, 0.0, 0
    started = time.time()
    runs = []  # (label, result)
    isolated_k = 4 if 4 in args.k else args.k[-1]
    plan = [(f"k = {k}", k, True, False, args.offset) for k in args.k if k != isolated_k]
    if not args.no_nats:
        plan.append(("k = 2, NATS cluster", 2, True, True, args.offset))
    # Every run at isolated_k back to back, fleet on and off alternated (on, off, on,
    # off, ...): the CPU ratio is read from neighbouring runs of one stretch.
    plan.append((f"k = {isolated_k}", isolated_k, True, False, args.offset))
    plan.append((f"k = {isolated_k}, isolated", isolated_k, False, False, args.offset))
    if args.offset_case:
        plan.append((f"k = {isolated_k}, offsets N(0, {args.offset_case:g})", isolated_k, True, False,
                     args.offset_case))
        plan.append((f"k = {isolated_k}, offsets N(0, {args.offset_case:g}), isolated", isolated_k, False, False,
                     args.offset_case))
    for n in range(args.cpu_pairs):
        plan.append((f"k = {isolated_k} (CPU pair {n + 2})", isolated_k, True, False, args.offset))
        plan.append((f"k = {isolated_k}, isolated (CPU pair {n + 2})", isolated_k, False, False, args.offset))
    for label, k, fleet, nats, offset in plan:
        run_args = argparse.Namespace(**{**vars(args), "offset": offset})
        print(f"{label} ...", file=sys.stderr, flush=True)
        result = one_run(k, fleet, run_args, args.seed, nats)
        runs.append((label, result))
        for name, lag in sorted(result["lag"].items()):
            if lag["max"] > LAG_WARNING_S:
                print(f"warning: {label}: gateway {name}'s predictions came up to {lag['max']:.1f} s after their "
                      f"readings (median {lag['median']:.2f} s): a stalled run", file=sys.stderr, flush=True)
    text = page(args, runs, isolated_k, time.time() - started)
    if args.out == "-":
        print(text)
    else:
        Path(args.out).write_text(text)
        print(text)
    return 0


def lag_cell(run: dict) -> str:
    lags = list(run["lag"].values())
    if not lags:
        return ""
    median = float(np.nanmedian([lag["median"] for lag in lags]))
    p99 = float(np.nanmax([lag["p99"] for lag in lags]))
    largest = float(np.nanmax([lag["max"] for lag in lags]))
    return f"{1000 * median:.0f} / {1000 * p99:.0f} / {1000 * largest:.0f}"


def page(args, runs: list, isolated_k: int, seconds: float) -> str:
    by_label = dict(runs)
    body = ["# A fleet that learns together: results with gateway processes", "",
            __doc__.split("\n\n")[1], "", __doc__.split("\n\n")[2], "",
            f"## A new stream joining the fleet", "",
            f"Accuracy (%) of the new stream over its first readings (seed {args.seed}), labels asked at "
            f"{args.rate:.0%}; the fleet's {args.streams} streams had {args.trained} readings each:", ""]
    body += header(args)
    notes = []
    for label, run in runs:
        rows, acc = newcomer_rows(label, [run], args)
        body += rows
        if run["fleet"]:
            notes.append(aims(label, acc, args))
    body += [""] + [f"* {n}" for n in notes]
    body += ["", "## The fleet's streams: accuracy and labels, shared or isolated", "",
             "| run | accuracy over all their readings (%) | labels asked | labels each stream needed to reach "
             "95% of the trained stream (sum; one that never did counts all it asked) | streams that never did |",
             "|---|---|---|---|---|"]
    for label, run in runs:
        reach = run["fleet_reach"]
        body.append(f"| {label} | {100 * run['fleet_accuracy']:.1f} | {run['fleet_labels']} | "
                    f"{sum(run['fleet_reach_bound']):.0f} | {_never(reach)} |")
    for shared, alone in ((f"k = {isolated_k}", f"k = {isolated_k}, isolated"),
                          (f"k = {isolated_k}, offsets N(0, {args.offset_case:g})",
                           f"k = {isolated_k}, offsets N(0, {args.offset_case:g}), isolated")):
        if shared in by_label and alone in by_label:
            a, b = by_label[shared], by_label[alone]
            ratio = sum(a["fleet_reach_bound"]) / max(sum(b["fleet_reach_bound"]), 1)
            body.append("")
            body.append(f"* {shared} against isolated gateways: the labels the streams needed to reach 95% of "
                        f"the trained stream's accuracy, {ratio:.2f} of the isolated gateways' (the aim: at most "
                        f"0.50{': met' if ratio <= 0.5 else f': missed by {ratio - 0.5:.2f}'}; streams that "
                        f"never reached it: {_never(a['fleet_reach'])} and {_never(b['fleet_reach'])}); "
                        f"accuracy {100 * (a['fleet_accuracy'] - b['fleet_accuracy']):+.1f} points at "
                        f"{a['fleet_labels']} against {b['fleet_labels']} labels")
    body += ["", "## What crosses the broker, and what the fleet costs a gateway", "",
             "| run | contributions | their bytes | bytes per contribution | totals (retained) | their bytes | "
             "run (s) | fleet bytes per hour in this run | bytes per hour per gateway at interval_seconds = 60 | "
             "gateway CPU per data message (µs) | prediction lag, median / p99 / largest over its gateways (ms) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for label, run in runs:
        per_message = run["fleet_bytes"] / max(run["fleet_messages"], 1)
        per_total = run["total_bytes"] / max(run["total_messages"], 1)
        # At most one contribution a minute, and a total with every 10th (SNAPSHOT_EVERY).
        per_gateway_hour = (60 * per_message + 6 * per_total) if run["fleet_messages"] else 0.0
        body.append(f"| {label} | {run['fleet_messages']} | {run['fleet_bytes']} | {per_message:.0f} | "
                    f"{run['total_messages']} | {run['total_bytes']} | {run['elapsed_s']:.0f} | "
                    f"{(run['fleet_bytes'] + run['total_bytes']) * 3600 / run['elapsed_s']:.0f} | "
                    f"{per_gateway_hour:.0f} | {run['cpu_per_message_us']:.0f} | {lag_cell(run)} |")
    pairs = [(f"k = {isolated_k}", f"k = {isolated_k}, isolated")]
    pairs += [(f"k = {isolated_k} (CPU pair {n + 2})", f"k = {isolated_k}, isolated (CPU pair {n + 2})")
              for n in range(args.cpu_pairs)]
    if args.offset_case:
        pairs.insert(1, (f"k = {isolated_k}, offsets N(0, {args.offset_case:g})",
                         f"k = {isolated_k}, offsets N(0, {args.offset_case:g}), isolated"))
    pairs = [(on, off) for on, off in pairs if on in by_label and off in by_label]
    ratios = [by_label[on]["cpu_per_message_us"] / by_label[off]["cpu_per_message_us"] for on, off in pairs]
    if ratios:
        pooled = (sum(by_label[on]["cpu_per_message_us"] for on, _ in pairs)
                  / sum(by_label[off]["cpu_per_message_us"] for _, off in pairs))
        body += ["", f"* Gateway CPU per data message, fleet on / off at k = {isolated_k}: {pooled:.2f} over "
                     f"{len(ratios)} pair(s) of neighbouring runs, alternated on, off, on, off (pair by pair: "
                     f"{', '.join(f'{r:.2f}' for r in ratios)}; median {float(np.median(ratios)):.2f}); on a shared "
                     f"machine: ratios, not speeds; the data messages are the same, the label answers differ with "
                     f"what the learners asked"]
    stalled = [f"{label} (gateway {name}: {1000 * lag['max']:.0f} ms)" for label, run in runs
               for name, lag in sorted(run["lag"].items()) if lag["max"] > LAG_WARNING_S]
    body += ["", f"* Prediction lag over {LAG_WARNING_S:g} s (a stalled gateway; that run's accuracy, labels and "
                 f"CPU describe a stall): " + ("; ".join(stalled) if stalled else "none")]
    body += ["", f"Made by `{' '.join(shlex.quote(a) for a in [sys.executable.rsplit('/', 1)[-1], *sys.argv])}` "
                 f"in {seconds:.0f} s on {platform.machine()}, Python {platform.python_version()}, load average "
                 f"{os.getloadavg()[0]:.1f} at the end.", "",
             f"Labels to reach 95%: the labels a stream had asked by the first reading at which its accuracy over "
             f"the last {REACH_WINDOW} readings reached 95% of the trained stream's (room-0's) accuracy over the "
             f"new stream's readings; 'never': not within the run. It cannot be read before the "
             f"{REACH_WINDOW}th reading, so it is never below the labels asked by then (about {REACH_WINDOW} x "
             f"the rate for a stream started alone; fewer for one started from the group model, whose budget "
             f"forgoes the labels its rule does not want over its first 250 readings). Bytes per hour at interval_seconds = 60: a gateway publishes at most one contribution a "
             f"minute and its total with every 10th, so at most 60 of this run's mean contribution and 6 of its mean "
             f"total an hour (fewer when its streams did not change). Fleet bytes per hour in this run: at "
             f"interval_seconds = {args.interval:g}, so far more often than the default 60."]
    return "\n".join(body) + "\n"


if __name__ == "__main__":
    sys.exit(main())
