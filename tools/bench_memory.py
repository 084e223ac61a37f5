#!/usr/bin/env python3
"""Measure the gateway's resident memory (RSS) with 1 and 100 streams, cold and warm.

What the systemd unit's ``MemoryHigh``/``MemoryMax`` and ``configs/gateway.toml``
say about memory come from this page. For each case the gateway runs as it does in
the service (``python -m firmware_bridge gateway`` with ``configs/gateway.toml``,
only the broker, the state folder and, for 100 streams, ``max_streams`` changed)
against a real mosquitto started here on a free loopback port. A small publisher
in this process sends occupancy-like readings (temperature, humidity, light, CO2,
humidity ratio; a channel now and then missing) with their labels, QoS 1, to every
stream in turn, and waits for each message's prediction.

The numbers come from ``/proc/PID/status`` of the gateway process:

* ``VmRSS`` when the gateway is up and idle (connected, no stream yet),
* ``VmRSS`` after a first batch of messages, and again after a second batch as
  large (memory must not grow with the stream),
* ``VmHWM``, the peak RSS over the whole run (the figure the limits must clear).

"cold" starts with an empty Numba cache (``NUMBA_CACHE_DIR`` a new folder): the
first messages compile the kernels, in the gateway process. "warm" first runs
``edgelearn warmup`` into that folder, as the install steps do.

Example::

    python tools/bench_memory.py
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import pathlib
import platform
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time

import paho.mqtt.client as paho

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import edgelearn  # noqa: E402
from bench_gateway import _free_port, _wait, machine, start_mosquitto  # noqa: E402
from firmware_bridge.wire import Topics, encode_data  # noqa: E402

TOPICS = Topics()
SHIPPED_CONFIG = ROOT / "configs" / "gateway.toml"


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM and RSS's anonymous and file-backed parts of ``pid``, in KiB."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                values[key] = int(rest.split()[0])
    return values


class Observer:
    """Counts predictions per stream and keeps the gateway's latest status."""

    def __init__(self, port: int, gateway_id: str):
        self.predictions: dict[str, int] = {}
        self.status: dict | None = None
        self._lock = threading.Lock()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"bench-memory-obs-{os.getpid()}",
                                  protocol=paho.MQTTv5)
        self.client.on_message = self._on_message
        self.client.on_connect = lambda c, *_: (c.subscribe(TOPICS.filter("prediction"), 1),
                                                c.subscribe(TOPICS.status(gateway_id), 1))
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()

    def _on_message(self, client, userdata, message) -> None:
        import msgpack

        kind, ident = TOPICS.parse(message.topic)
        if kind == "prediction":
            with self._lock:
                self.predictions[ident] = self.predictions.get(ident, 0) + 1
        elif message.payload:
            self.status = msgpack.unpackb(message.payload)

    def total(self) -> int:
        with self._lock:
            return sum(self.predictions.values())

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def readings(seq: int, stream: int) -> tuple[dict[str, float], bool]:
    """One occupancy-like reading, deterministic in (seq, stream)."""
    t = seq / 60.0 + stream
    occupied = math.sin(t / 7.0) > 0.2
    values = {
        "Temperature": 20.5 + 1.5 * math.sin(t / 5.0) + (0.8 if occupied else 0.0),
        "Humidity": 27.0 + 3.0 * math.cos(t / 11.0),
        "Light": 450.0 if occupied else 10.0 + 5.0 * math.sin(t),
        "CO2": 600.0 + (400.0 if occupied else 0.0) + 30.0 * math.sin(t / 3.0),
        "HumidityRatio": 0.0045 + 0.0003 * math.sin(t / 13.0),
    }
    # A sensor now and then silent, as on a real floor.
    if (seq + stream) % 17 == 0:
        del values["CO2"]
    return values, occupied


def publish(port: int, streams: int, per_stream: int, first_seq: int, observer: Observer, rate: float) -> None:
    """``per_stream`` messages to each of ``streams`` streams, then wait for their predictions."""
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"bench-memory-pub-{os.getpid()}",
                         protocol=paho.MQTTv5)
    client.max_inflight_messages_set(100)
    client.connect("127.0.0.1", port)
    client.loop_start()
    expected = observer.total() + streams * per_stream
    start = time.monotonic()
    sent = 0
    for seq in range(first_seq, first_seq + per_stream):
        for stream in range(streams):
            values, occupied = readings(seq, stream)
            client.publish(TOPICS.data(f"m{stream}"), encode_data(time.time(), seq, values, occupied), qos=1)
            sent += 1
            ahead = sent / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
    _wait(lambda: observer.total() >= expected, 600, f"{expected} predictions")
    client.loop_stop()
    client.disconnect()


def run_case(work: pathlib.Path, port: int, streams: int, cache: str, per_stream: int, rate: float) -> dict:
    case = work / f"{cache}-{streams}"
    case.mkdir()
    numba_cache = case / "numba"
    config_text = SHIPPED_CONFIG.read_text()
    if streams > 32:
        assert "\nmax_streams = 32\n" in config_text, "configs/gateway.toml no longer says max_streams = 32"
        config_text = config_text.replace("\nmax_streams = 32\n", f"\nmax_streams = {streams}\n")
    config = case / "gateway.toml"
    config.write_text(config_text)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(numba_cache), "PYTHONPATH": str(ROOT)}
    warmup = None
    if cache == "warm":
        t0 = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "firmware_bridge.cli", "warmup", "--config", str(config)],
                              env=env, capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"bench_memory: edgelearn warmup failed:\n{done.stderr}")
        # The line without its cache folder (a temporary path of this machine).
        warmup = {"line": done.stdout.strip().split("; cache ")[0], "seconds": time.monotonic() - t0}
    gateway_id = f"{cache}{streams}"
    observer = Observer(port, gateway_id)
    log = open(case / "gateway.log", "wb")
    gateway = subprocess.Popen(
        [sys.executable, "-m", "firmware_bridge", "gateway", "--config", str(config),
         "--broker", f"127.0.0.1:{port}", "--state-dir", str(case / "state"), "--gateway-id", gateway_id],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    try:
        _wait(lambda: observer.status is not None and observer.status.get("pid") == gateway.pid
              and observer.status.get("connected"), 120, "the gateway to connect")
        time.sleep(1.0)
        idle = proc_status(gateway.pid)
        t0 = time.monotonic()
        publish(port, streams, per_stream, 0, observer, rate)
        first_batch_s = time.monotonic() - t0
        after_1 = proc_status(gateway.pid)
        publish(port, streams, per_stream, per_stream, observer, rate)
        after_2 = proc_status(gateway.pid)
        time.sleep(6.0)  # a status message with every stream in it
        status = observer.status or {}
    finally:
        gateway.send_signal(signal.SIGTERM)
        try:
            gateway.wait(120)
        except subprocess.TimeoutExpired:
            gateway.kill()
        observer.close()
        log.close()
    return {
        "streams": streams, "cache": cache, "messages": 2 * streams * per_stream,
        "idle_kib": idle["VmRSS"], "after_1_kib": after_1["VmRSS"], "after_2_kib": after_2["VmRSS"],
        "anon_kib": after_2["RssAnon"], "file_kib": after_2["RssFile"],
        "peak_kib": max(after_2["VmHWM"], after_1["VmHWM"]), "first_batch_s": first_batch_s,
        "budget_bytes": (status.get("memory") or {}).get("total"),
        "status_streams": len(status.get("streams") or ()), "warmup": warmup,
    }


def write_page(out: pathlib.Path, command: str, results: list[dict], host: dict) -> None:
    mib = lambda kib: f"{kib / 1024:.1f}"  # noqa: E731
    peak = max(r["peak_kib"] for r in results)
    lines = [
        "# Gateway memory (RSS), measured",
        "",
        f"Command: `{command}`",
        "",
        f"Run {datetime.date.today().isoformat()} on {host['cpu']} ({host['cores']} cores, "
        f"{host['memory']}), {host['os']}, Python {host['python']}, numba "
        f"{host['numba']}, llvmlite {host['llvmlite']}, numpy {host['numpy']}, {host['broker']}.",
        "",
        "The gateway (`python -m firmware_bridge gateway`, `configs/gateway.toml`: PAACDS with "
        "64 channel slots per stream; `max_streams` raised to 100 for the 100-stream rows) "
        "against a mosquitto on a loopback port; a publisher sends occupancy-like readings "
        "with labels (QoS 1) to every stream in turn and waits for every prediction. RSS is "
        "`VmRSS` of the gateway process from `/proc/PID/status`; the peak is its `VmHWM` over "
        "the run. *cold*: empty Numba cache, the kernels compile inside the gateway on the "
        "first messages; *warm*: `edgelearn warmup --config ...` filled the cache first, as "
        "the install steps do.",
        "",
        "| streams | numba cache | messages | RSS idle (MiB) | RSS after half (MiB) | RSS at end (MiB) "
        "| anonymous / file-backed at end (MiB) | peak VmHWM (MiB) | budget in status (MiB) |",
        "|---:|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for r in results:
        budget = f"{r['budget_bytes'] / 2**20:.1f}" if r["budget_bytes"] else "?"
        lines.append(
            f"| {r['streams']} | {r['cache']} | {r['messages']:,} | {mib(r['idle_kib'])} | "
            f"{mib(r['after_1_kib'])} | {mib(r['after_2_kib'])} | {mib(r['anon_kib'])} / {mib(r['file_kib'])} | "
            f"{mib(r['peak_kib'])} | {budget} |"
        )
    growth = max(r["after_2_kib"] - r["after_1_kib"] for r in results)
    lines += [
        "",
        f"Highest peak: **{mib(peak)} MiB** (`peak_mib: {peak / 1024:.1f}`).",
        "",
        f"Growth from the first half of a run to the end: at most {growth / 1024:.1f} MiB "
        "(the stream does not make the gateway grow).",
        "",
        "Where it goes: importing numba maps llvmlite's LLVM library (`libllvmlite.so`, "
        "about 96 MiB resident on x86-64 as soon as numba is imported) and NumPy. Those "
        "pages are file-backed (`RssFile`): shared with any other process using the same "
        "files and droppable under memory pressure, but counted in RSS and charged to the "
        "service's cgroup. The anonymous part (`RssAnon`) is Python's heap, NumPy's and "
        "LLVM's allocations (compiling leaves more behind than loading from the cache) and "
        "the learners' tables, the \"budget in status\" column. The service imports only "
        "the configured learner kind and none of the evaluation stack "
        "(`tests/test_service_imports.py`).",
        "",
        "The systemd unit's limits (`configs/edgelearn-gateway.service`) are set from the "
        "highest peak: `MemoryHigh` at least 1.25 times it, `MemoryMax` at least 1.5 times "
        "(`tests/test_memory_limits.py` holds them there). The margin is for what this "
        "page does not cover: a Raspberry Pi's aarch64 builds of the same libraries, other "
        "learner kinds (an `ensemble` stream budgets about 1.8 MB), and the page cache the "
        "cgroup also counts.",
    ]
    warm = [r["warmup"] for r in results if r["warmup"]]
    if warm:
        lines += ["", "Warm-up before the warm rows (one example): `" + warm[0]["line"] + "`"]
    out.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Measure the gateway's RSS with 1 and 100 streams, with a cold and a warm "
        "Numba cache, against a real mosquitto; write docs/bench-memory.md.")
    parser.add_argument("--per-stream", type=int, default=None,
                        help="messages per stream in each of the two batches (default: 2000 "
                        "with 1 stream, 50 with 100)")
    parser.add_argument("--rate", type=float, default=1000.0, help="messages/s published (default 1000)")
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 100], help="stream counts (default: 1 100)")
    parser.add_argument("--out", default=str(ROOT / "docs" / "bench-memory.md"),
                        help="page to write (default: docs/bench-memory.md)")
    args = parser.parse_args(argv)
    command = "python tools/bench_memory.py" + "".join(f" {shlex.quote(a)}" for a in (argv or sys.argv[1:]))

    # A SIGTERM still stops the gateway and the broker (the finally clauses).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = pathlib.Path(tempfile.mkdtemp(prefix="bench-memory-"))
    port = _free_port()
    broker = start_mosquitto(work, port)
    results = []
    try:
        for streams in args.streams:
            for cache in ("cold", "warm"):
                per_stream = args.per_stream or (2000 if streams == 1 else 50)
                print(f"{streams} stream(s), {cache} cache: 2 x {per_stream} messages per stream",
                      file=sys.stderr, flush=True)
                result = run_case(work, port, streams, cache, per_stream, args.rate)
                print(json.dumps(result), file=sys.stderr, flush=True)
                results.append(result)
    finally:
        broker.terminate()
        broker.wait(10)
    import llvmlite
    import numba
    import numpy

    host = {**machine(), "numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "numpy": numpy.__version__}
    out = pathlib.Path(args.out)
    write_page(out, command, results, host)
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
