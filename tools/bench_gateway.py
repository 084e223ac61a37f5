#!/usr/bin/env python3
"""Benchmark the gateway through a real broker: sustained messages/s and latency.

Starts its own mosquitto on a free loopback port and the gateway as a subprocess
(``python -m firmware_bridge.gateway``), then runs ``tools/simulate_sensors.py`` as
the publisher (a separate process, QoS 1) while ``mosquitto_sub`` (QoS 1) subscribes
to the predictions for this process:

1. **warm-up**: a few thousand messages, so numba's kernels are compiled and cached;
2. **throughput**: ``--count`` occupancy messages published as fast as the
   publisher can; the sustained rate is messages / (last prediction's arrival -
   first message's publish time). Every message must get exactly one prediction
   (the issue's end-to-end check at full size);
3. **latency**: ``--count`` messages at a fixed ``--rate`` (2,000/s by default);
   latency is a prediction's arrival time minus its data message's ``ts`` (the
   publish time, same clock), reported as p50/p90/p99/max.

The results go to ``--out`` (``docs/bench-gateway.md``) with the command, the date
and the machine. Everything runs on this machine, so the publisher, the broker, the
gateway and the subscriber share its cores.

Example::

    python tools/bench_gateway.py --count 20000 --rate 2000
"""

from __future__ import annotations

import argparse
import datetime
import gc
import getpass
import json
import os
import pathlib
import platform
import resource
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

import edgelearn  # noqa: E402
from firmware_bridge.protocol import Topics  # noqa: E402

TOPICS = Topics()


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


class Predictions:
    """Arrival time and publish time of every prediction, by (stream, seq).

    The subscriber is ``mosquitto_sub`` (C, QoS 1), printing each message's arrival
    time, topic and payload; a thread here decodes its lines. A subscriber in Python
    with paho would spend as much CPU per message as the gateway, on the cores the
    gateway and the broker share with it.
    """

    def __init__(self, port: int):
        self.arrivals: dict[str, dict[int, list[tuple[float, float]]]] = {}
        self.status: dict | None = None
        binary = shutil.which("mosquitto_sub")
        if binary is None:
            raise SystemExit("bench_gateway: install the Debian package `mosquitto-clients`")
        self.process = subprocess.Popen(
            [binary, "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-V", "mqttv5",
             "-t", TOPICS.filter("prediction"), "-t", TOPICS.filter("status"),
             "-F", "%U %t %x"],
            stdout=subprocess.PIPE, text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.process.stdout:
            arrived, topic, payload = line.split()
            body = msgpack.unpackb(bytes.fromhex(payload))
            kind, ident = TOPICS.parse(topic)
            if kind == "prediction":
                stream = self.arrivals.setdefault(ident, {})
                stream.setdefault(body["seq"], []).append((float(arrived), body["ts"]))
            else:
                self.status = body

    def count(self, stream: str) -> int:
        return len(self.arrivals.get(stream, ()))

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(10)


def simulate(port: int, stream_prefix: str, count: int, rate: float, labels: bool) -> dict:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "simulate_sensors.py"), "--broker",
         f"127.0.0.1:{port}", "--dataset", "occupancy", "--count", str(count), "--loop",
         "--rate", str(rate), "--drop", "0.01", "--stream-prefix", stream_prefix,
         *(["--with-labels"] if labels else [])],
        capture_output=True, text=True, cwd=ROOT,
    )
    if result.returncode != 0:
        raise SystemExit(f"bench_gateway: the simulator failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def pipeline_alone(count: int, labels: bool) -> float:
    """Messages/s of the pipeline by itself (no MQTT), on the same kind of messages."""
    from firmware_bridge.pipeline import Pipeline
    from firmware_bridge.protocol import encode_data

    sys.path.insert(0, str(ROOT / "tools"))
    from simulate_sensors import messages

    payloads = [
        encode_data(time.time(), seq, channels, y)
        for _, seq, channels, y in messages("occupancy", ["p0"], count=count, drop=0.01,
                                            with_labels=labels, loop=True)
    ]
    pipeline = Pipeline("paacds", {"capacity": 64, "target_query_rate": 0.1})
    topic = TOPICS.data("p0")
    for payload in payloads[:2000]:
        pipeline.handle(topic, payload, 0.0)
    began = time.perf_counter()
    for payload in payloads:
        pipeline.handle(topic, payload, 0.0)
    return len(payloads) / (time.perf_counter() - began)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (from /proc)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _children_cpu() -> float:
    # The simulator runs to completion in subprocess.run, so it is a waited-for child.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def percentile(sorted_values: list[float], q: float) -> float:
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Measure the gateway's sustained messages/s and publish-to-prediction "
        "latency through a real mosquitto, and write the results as Markdown.",
    )
    parser.add_argument("--count", type=int, default=20000,
                        help="messages in each measured run (default: 20000)")
    parser.add_argument("--rate", type=float, default=2000.0,
                        help="fixed rate of the latency run, messages/s (default: 2000)")
    parser.add_argument("--warmup", type=int, default=3000,
                        help="messages before measuring (default: 3000)")
    parser.add_argument("--labels", choices=("data", "none"), default="data",
                        help='"data": every data message carries its true label, learned '
                        "at once (one prediction out per message); \"none\": no labels, "
                        "so the learner asks for every one (a label request out as well)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each measurement; all are reported, and the median "
                        "(default: 3)")
    parser.add_argument("--protocol", choices=("MQTTv5", "MQTTv311"), default="MQTTv5",
                        help="the gateway's MQTT protocol version (default: MQTTv5, the "
                        "gateway's default)")
    parser.add_argument("--series", metavar="FILE",
                        help="also write the latency run's [seq, ts, arrival] triples as JSON")
    parser.add_argument("--out", default=str(ROOT / "docs" / "bench-gateway.md"),
                        help="Markdown file to write (default: docs/bench-gateway.md)")
    args = parser.parse_args(argv)

    alone = pipeline_alone(args.count, args.labels == "data")
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-gateway-"))
    port = _free_port()
    broker = start_mosquitto(work, port)
    config = work / "gateway.toml"
    config.write_text(
        '[gateway]\nid = "bench"\nstatus_interval_seconds = 5\n'
        "[checkpoints]\ninterval_seconds = 600\n"
        f'[mqtt]\nmax_inflight_messages = 100\nprotocol = "{args.protocol}"\n'
        '[learner]\nkind = "paacds"\n'
        "[learner.params]\ncapacity = 64\ntarget_query_rate = 0.1\n"
    )
    log = open(work / "gateway.log", "wb")
    gateway = subprocess.Popen(
        [sys.executable, "-m", "firmware_bridge.gateway", "--config", str(config),
         "--broker", f"127.0.0.1:{port}", "--state-dir", str(work / "state")],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=log,
        stderr=subprocess.STDOUT,
    )
    predictions = Predictions(port)
    # This process only timestamps arrivals; a collector pass here would count as
    # gateway latency.
    gc.disable()
    processes = {"gateway": gateway.pid, "broker": broker.pid,
                 "subscriber": predictions.process.pid, "subscriber_reader": os.getpid()}
    results: dict = {"pipeline_alone": alone}
    try:
        _wait(lambda: predictions.status is not None and predictions.status.get("pid")
              == gateway.pid and predictions.status["connected"], 60, "the gateway")
        print(f"warm-up: {args.warmup} messages", file=sys.stderr)
        simulate(port, "w", args.warmup, 2000, args.labels == "data")
        _wait(lambda: predictions.count("w0") >= args.warmup, 120, "warm-up predictions")

        labels = args.labels == "data"
        results["throughput"] = []
        results["latency"] = []
        for run in range(args.repeat):
            print(f"throughput {run + 1}/{args.repeat}: {args.count} messages as fast as "
                  "possible", file=sys.stderr)
            stream = f"t{run}_"
            cpu_before = {name: cpu_seconds(pid) for name, pid in processes.items()}
            children_before = _children_cpu()
            published = simulate(port, stream, args.count, 0, labels)
            _wait(lambda: predictions.count(stream + "0") >= args.count, 300,
                  "throughput predictions")
            cpu_used = {name: (cpu_seconds(pid) - cpu_before[name]) / args.count * 1e6
                        for name, pid in processes.items()}
            cpu_used["publisher"] = (_children_cpu() - children_before) / args.count * 1e6
            cpu_used["subscriber"] += cpu_used.pop("subscriber_reader")
            time.sleep(1.0)
            arrivals = dict(predictions.arrivals[stream + "0"])
            first_ts = min(v[0][1] for v in arrivals.values())
            last_arrival = max(v[0][0] for v in arrivals.values())
            results["throughput"].append({
                "messages": args.count,
                "predicted_once": sum(1 for v in arrivals.values() if len(v) == 1),
                "predicted_more": sum(1 for v in arrivals.values() if len(v) > 1),
                "missing": args.count - len(arrivals),
                "seconds": last_arrival - first_ts,
                "rate": args.count / (last_arrival - first_ts),
                "publisher_rate": published["rate"],
                "cpu_us": cpu_used,
            })
        for run in range(args.repeat):
            print(f"latency {run + 1}/{args.repeat}: {args.count} messages at "
                  f"{args.rate:g}/s", file=sys.stderr)
            stream = f"l{run}_"
            published = simulate(port, stream, args.count, args.rate, labels)
            _wait(lambda: predictions.count(stream + "0") >= args.count, 300,
                  "latency predictions")
            time.sleep(1.0)
            arrivals = dict(predictions.arrivals[stream + "0"])
            if args.series and run == 0:
                series = sorted((seq, v[0][1], v[0][0]) for seq, v in arrivals.items())
                pathlib.Path(args.series).write_text(json.dumps(series))
            latencies = sorted((v[0][0] - v[0][1]) * 1000.0 for v in arrivals.values())
            results["latency"].append({
                "messages": args.count,
                "rate": args.rate,
                "publisher_rate": published["rate"],
                "missing": args.count - len(latencies),
                "p50": percentile(latencies, 0.50),
                "p90": percentile(latencies, 0.90),
                "p99": percentile(latencies, 0.99),
                "max": latencies[-1],
            })
        time.sleep(5.5)  # one more status message
        results["status"] = predictions.status
    finally:
        predictions.close()
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(60)
        except subprocess.TimeoutExpired:
            gateway.kill()
        log.close()
        broker.terminate()
        broker.wait(10)
    write_report(args, results, machine(), pathlib.Path(args.out))
    shutil.rmtree(work, ignore_errors=True)
    print(json.dumps({k: v for k, v in results.items() if k != "status"}, indent=1))
    return 0


def _median(runs: list[dict], key: str) -> float:
    values = sorted(run[key] for run in runs)
    return values[len(values) // 2]


def write_report(args, results: dict, host: dict, out: pathlib.Path) -> None:
    throughput, latency = results["throughput"], results["latency"]
    rate = _median(throughput, "rate")
    p99 = _median(latency, "p99")
    counters = results["status"]["counters"] if results.get("status") else {}
    # Where the page goes changes no number: leave --out out of the command it shows.
    shown, skip = [], False
    for arg in sys.argv[1:]:
        if skip or arg.startswith("--out="):
            skip = False
            continue
        skip = arg == "--out"
        if not skip:
            shown.append(shlex.quote(arg))
    command = "python tools/bench_gateway.py " + " ".join(shown)
    lines = [
        "# Gateway benchmark: messages/s and latency through mosquitto",
        "",
        f"Command: `{command.strip()}`  ",
        f"Date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}  ",
        "Machine: " + ", ".join(f"{k} {v}" for k, v in host.items()),
        "",
        "Everything runs on this one machine: the publisher (`tools/simulate_sensors.py`, "
        "paho, QoS 1), mosquitto, the gateway (`python -m firmware_bridge.gateway`, "
        f"{args.protocol}, PAACDS with 64 channel slots) and the subscriber timing the predictions "
        "(`mosquitto_sub`, QoS 1, read by this tool). Data: the occupancy data set, channels dropping out with probability "
        "0.01 per message. Predictions are published at QoS 1. "
        + ("Every data message carries its true label, which the gateway learns at "
           "once: one message out (the prediction) per message in."
           if args.labels == "data" else
           "No labels: an untrained PAACDS is unsure of everything and asks for every "
           "label, so two messages go out (prediction and label request) per message in.")
        + f" Each measurement ran {len(throughput)} times, one after the other, on the "
        "same gateway; the headline is the median.",
        "",
        "## Sustained throughput",
        "",
        f"{args.count:,} messages per run, published as fast as the publisher could; the "
        "rate is messages / (arrival of the last prediction - publish time of the first "
        "message).",
        "",
        "CPU time per message (user + system, µs) of each process over the run: the "
        "gateway, mosquitto, the subscriber (`mosquitto_sub` and this tool reading it) and "
        "the publisher (whose figure includes "
        "starting Python and loading the data set).",
        "",
        "| run | offered/s | sustained/s | predicted once | more than once | never "
        "| CPU µs/msg: gateway | broker | subscriber | publisher |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(f"| {n + 1} | {t['publisher_rate']:,.0f} | {t['rate']:,.0f} | "
          f"{t['predicted_once']:,} | {t['predicted_more']:,} | {t['missing']:,} | "
          + " | ".join(f"{t['cpu_us'][k]:.0f}"
                       for k in ("gateway", "broker", "subscriber", "publisher")) + " |"
          for n, t in enumerate(throughput)),
        "",
        f"Median: **{rate:,.0f} messages/s**.",
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
        f"Median p50 {_median(latency, 'p50'):.1f} ms, median **p99 {p99:.1f} ms**.",
        "",
        "## Against the aim",
        "",
        "The issue aims at 10,000 messages/s and p99 under 10 ms at 2,000 messages/s on "
        "the development machine. "
        + ("Throughput meets it. " if rate >= 10_000 else
           f"Throughput is {rate / 10_000:.0%} of it. ")
        + ("The p99 latency meets it." if p99 < 10 else "The p99 latency does not."),
        "",
        "Where the time goes: the pipeline by itself (decode, validate, PAACDS, "
        f"encode; no MQTT) runs {results['pipeline_alone']:,.0f} messages/s on this "
        "machine, one core, i.e. "
        f"{1e6 / results['pipeline_alone']:.0f} µs of the gateway's "
        f"{_median([t['cpu_us'] for t in throughput], 'gateway'):.0f} µs of CPU per "
        "message; the rest is paho-mqtt in Python: reading and parsing the data "
        "message, our ack, the prediction's PUBLISH and its PUBACK (with MQTT 5, a "
        "properties object for each packet). The gateway drives both connections "
        "from its one worker thread, so no message waits for another thread or the "
        "GIL. All the processes share the machine's cores, so the publisher's and the "
        "subscriber's CPU is taken from the gateway's and the broker's.",
        "",
        "Gateway counters after all runs: "
        + ", ".join(f"{k} {v}" for k, v in counters.items()
                    if k in ("data", "predictions", "label_requests", "rejected",
                             "redelivery_expected", "publish_dropped")),
        "",
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines))


if __name__ == "__main__":
    sys.exit(main())
