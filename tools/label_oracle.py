#!/usr/bin/env python3
"""Answer the gateway's label requests from a data set's ground truth, after a delay.

Stands in for the person (or system) who labels: it subscribes to the label request
topic of every stream, looks up the true label of the requested data message and
publishes ``{"req", "y"}`` on the stream's label topic ``--delay`` seconds later (QoS 1).

The row of a request follows ``tools/simulate_sensors.py``'s rule: message ``seq`` of
stream ``PREFIX<i>`` is row ``start + seq * streams + i`` (modulo the number of rows),
so give both tools the same ``--dataset``, ``--streams``, ``--stream-prefix`` and
``--start``. Requests for a stream or row it cannot place are counted and ignored.

``--answer-fraction`` answers only some requests (a labeller who cannot keep up). It
runs until ``--duration`` seconds have passed, ``--count`` answers were sent, or
SIGINT/SIGTERM, then prints a summary as one JSON line.

Example::

    python tools/label_oracle.py --broker localhost:1883 --dataset occupancy --delay 2
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import random
import signal
import sys
import threading
import time

import paho.mqtt.client as paho

# The repository without "..": edgelearn/kernels/_jit.py digests the kernels' folder by
# its path as imported, so a "tools/.." path dropped every other process's numba cache.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from edgelearn import datasets  # noqa: E402
from firmware_bridge.wire import Topics, decode_payload, encode_label  # noqa: E402
from simulate_sensors import broker_argument  # noqa: E402

__all__ = ["Oracle", "main"]


_MAX_EXACT_SUBSCRIPTIONS = 100


class Oracle:
    """Ground truth lookup and a schedule of answers; thread-safe."""

    def __init__(self, labels: list, streams: int, prefix: str, start: int,
                 delay: float, answer_fraction: float, seed: int = 0):
        self.labels = labels
        self.streams = streams
        self.prefix = prefix
        self.start = start
        self.delay = delay
        self.answer_fraction = answer_fraction
        self._rng = random.Random(seed)
        self._due: list[tuple[float, int, str, str, object]] = []
        self._order = 0
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self.counts = {"requests": 0, "answered": 0, "skipped": 0, "unplaceable": 0,
                       "malformed": 0}

    def truth(self, stream: str, seq: int):
        """The true label of message ``seq`` of ``stream``, or ``None``."""
        if not stream.startswith(self.prefix):
            return None
        index = stream[len(self.prefix):]
        if not index.isdigit() or int(index) >= self.streams or seq < 0:
            return None
        row = (self.start + seq * self.streams + int(index)) % len(self.labels)
        return self.labels[row]

    def request(self, stream: str, payload: bytes) -> None:
        """Schedule the answer to one label request message."""
        message = decode_payload(payload)
        with self._lock:
            self.counts["requests"] += 1
            if not isinstance(message, dict) or not isinstance(message.get("req"), str) \
                    or not isinstance(message.get("seq"), int):
                self.counts["malformed"] += 1
                return
            y = self.truth(stream, message["seq"])
            if y is None:
                self.counts["unplaceable"] += 1
                return
            if self._rng.random() >= self.answer_fraction:
                self.counts["skipped"] += 1
                return
            self._order += 1
            heapq.heappush(self._due, (time.monotonic() + self.delay, self._order, stream,
                                       message["req"], y))
        self._wake.set()

    def due(self) -> list[tuple[str, str, object]]:
        """Answers whose delay has passed, oldest first."""
        now = time.monotonic()
        out = []
        with self._lock:
            while self._due and self._due[0][0] <= now:
                _, _, stream, req, y = heapq.heappop(self._due)
                out.append((stream, req, y))
        return out

    def wait(self, timeout: float) -> None:
        with self._lock:
            if self._due:
                timeout = min(timeout, max(0.0, self._due[0][0] - time.monotonic()))
        self._wake.wait(timeout)
        self._wake.clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Answer edgelearn label requests from a data set's ground truth "
        "after a delay (the counterpart of tools/simulate_sensors.py).",
    )
    parser.add_argument("--broker", type=broker_argument, default=("localhost", 1883),
                        metavar="HOST:PORT", help="MQTT broker (default: localhost:1883)")
    parser.add_argument("--dataset", default="occupancy",
                        help="data set the simulator publishes (default: occupancy)")
    parser.add_argument("--streams", type=int, default=1,
                        help="--streams given to the simulator (default: 1)")
    parser.add_argument("--stream-prefix", default="s",
                        help="--stream-prefix given to the simulator (default: s)")
    parser.add_argument("--start", type=int, default=0,
                        help="--start given to the simulator (default: 0)")
    parser.add_argument("--delay", type=float, default=1.0,
                        help="seconds between a request and its answer (default: 1)")
    parser.add_argument("--answer-fraction", type=float, default=1.0,
                        help="fraction of the requests answered (default: 1)")
    parser.add_argument("--duration", type=float, default=None,
                        help="stop after this many seconds (default: run until a signal)")
    parser.add_argument("--count", type=int, default=None,
                        help="stop after this many answers")
    parser.add_argument("--label-type", choices=("raw", "bool"), default="raw",
                        help="answer with the data set's label (raw) or label != 0 (bool)")
    parser.add_argument("--seed", type=int, default=0, help="seed of --answer-fraction")
    parser.add_argument("--username", default="",
                        help="MQTT username (the broker ACL's labeller user)")
    parser.add_argument("--password", default=None, help="MQTT password")
    args = parser.parse_args(argv)
    if args.delay < 0:
        parser.error(f"--delay must be >= 0, got {args.delay}")
    if not 0.0 <= args.answer_fraction <= 1.0:
        parser.error(f"--answer-fraction must be in [0, 1], got {args.answer_fraction}")

    data = datasets.load(args.dataset)
    labels = data.y.tolist()
    if args.label_type == "bool":
        labels = [bool(v) for v in labels]
    oracle = Oracle(labels, args.streams, args.stream_prefix, args.start, args.delay,
                    args.answer_fraction, args.seed)
    topics = Topics()
    # Only the streams it can answer, when they are few: another stream's requests
    # would cost it time and be dropped anyway.
    if args.streams <= _MAX_EXACT_SUBSCRIPTIONS:
        subscriptions = [(topics.label_request(f"{args.stream_prefix}{i}"), 1)
                         for i in range(args.streams)]
    else:
        subscriptions = [(topics.filter("label_request"), 1)]
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())

    def on_connect(client, userdata, flags, reason_code, properties):
        if not reason_code.is_failure:
            client.subscribe(subscriptions)

    def on_message(client, userdata, message):
        parsed = topics.parse(message.topic)
        if parsed is not None and parsed[0] == "label_request":
            oracle.request(parsed[1], message.payload)

    client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    if args.username:
        client.username_pw_set(args.username, args.password)
    client.on_connect = on_connect
    client.on_message = on_message
    client.connect(*args.broker)
    client.loop_start()
    began = time.monotonic()
    while not stop.is_set():
        for stream, req, y in oracle.due():
            client.publish(topics.label(stream), encode_label(req, y), qos=1)
            oracle.counts["answered"] += 1
        if args.count is not None and oracle.counts["answered"] >= args.count:
            break
        if args.duration is not None and time.monotonic() - began >= args.duration:
            break
        oracle.wait(0.2)
    client.disconnect()
    client.loop_stop()
    print(json.dumps(oracle.counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
