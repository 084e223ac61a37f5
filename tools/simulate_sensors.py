#!/usr/bin/env python3
"""Publish a data set as live sensor streams over MQTT, with channels that come and go.

Rows of a data set bundled with edgelearn (``edgelearn.datasets.load``; by default
the occupancy data the demo log is made of) become
data messages (``{"ts", "seq", "ch", "y"?}``, msgpack, QoS 1) on the data topic of one
or more streams, at a fixed rate. Channels vanish and reappear as sensors do: each
message, a present channel goes away with probability ``--drop`` and an absent one
comes back with probability ``--reappear`` (so an outage lasts ``1 / reappear``
messages on average); a NaN in the data set is a missing reading as well.

Rows are dealt to streams in turn: with ``--streams N`` and ``--start S``, message
``seq`` of stream ``i`` is row ``S + seq * N + i``. ``tools/label_oracle.py`` uses the
same rule to answer label requests from the ground truth, so give both the same
``--dataset``, ``--streams`` and ``--start``.

``ts`` is the wall-clock time of publishing, so a subscriber to the predictions can
measure publish-to-prediction latency. A summary is printed as one JSON line at the end.

``--json`` publishes each reading as a sensor's own JSON object, the way Zigbee2MQTT
does: the channels as top-level numeric fields beside ``seq`` and ``ts``, and with
``--with-labels`` the label under ``--json-label`` (default ``occupancy``); the
gateway reads it with ``[json] label_field`` set to that name (docs/integrations.md).
Combine with ``--data-template "zigbee2mqtt/{stream}"`` for the Zigbee2MQTT layout.

``--batch N`` sends each stream's readings N at a time, as a sensor hub does: one
batch message ``{"readings": [...]}`` per N readings of a stream (each reading with
its own ``seq``, ``ts`` and channels; the last batch of a stream may be shorter), so
``--count`` and ``--rate`` still count readings. ``--data-template`` publishes under
another topic layout (e.g. a second gateway's subtree).

Example::

    python tools/simulate_sensors.py --broker localhost:1883 --dataset occupancy \\
        --count 20000 --rate 500 --drop 0.02
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import paho.mqtt.client as paho

# The repository without "..": edgelearn/kernels/_jit.py digests the kernels' folder by
# its path as imported, so a "tools/.." path dropped every other process's numba cache.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from edgelearn import datasets  # noqa: E402
from firmware_bridge.service.mqtt import parse_broker  # noqa: E402
from firmware_bridge.wire import (  # noqa: E402
    Topics,
    check_stream_id,
    encode_batch,
    encode_data,
)

__all__ = ["broker_argument", "channel_outages", "messages", "main"]


def broker_argument(text: str) -> tuple[str, int]:
    """``--broker HOST:PORT`` for argparse (``firmware_bridge.service.mqtt.parse_broker``)."""
    try:
        return parse_broker(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def channel_outages(
    n_rows: int, n_channels: int, drop: float, reappear: float, seed: int
) -> np.ndarray:
    """A boolean ``(n_rows, n_channels)`` mask of present channels: a two-state Markov
    chain per channel (present -> absent with ``drop``, absent -> present with
    ``reappear``), every channel present at the start."""
    rng = np.random.default_rng(seed)
    present = np.ones((n_rows, n_channels), dtype=bool)
    state = np.ones(n_channels, dtype=bool)
    draws = rng.random((n_rows, n_channels))
    for row in range(n_rows):
        state = np.where(state, draws[row] >= drop, draws[row] < reappear)
        present[row] = state
    return present


def messages(
    dataset: str,
    streams: list[str],
    start: int = 0,
    count: int | None = None,
    drop: float = 0.0,
    reappear: float = 0.05,
    with_labels: bool = False,
    seed: int = 0,
    loop: bool = False,
) -> Iterator[tuple[str, int, dict[str, float], object]]:
    """``(stream, seq, channels, y)`` for the rows of ``dataset`` from ``start``;
    ``y`` is ``None`` unless ``with_labels``. ``loop`` starts over at the end (seq keeps
    counting; the row of a seq is then ``(start + seq * N + i) % rows``)."""
    data = datasets.load(dataset)
    if data.multilabel:
        raise ValueError(f"--dataset {dataset!r} is multi-label; pick a single-label one")
    names = [str(n) for n in data.feature_names]
    X, y = data.X, data.y.tolist()
    n_rows = X.shape[0]
    total = n_rows - start if count is None else count
    if not loop:
        total = min(total, (n_rows - start) // len(streams) * len(streams))
    # Python lists: indexing a NumPy row per reading would cost more than the rest.
    mask = channel_outages(min(total, n_rows * 4), len(names), drop, reappear, seed).tolist()
    rows_of_mask = len(mask)
    values = X.tolist()
    for k in range(total):
        stream_index = k % len(streams)
        seq = k // len(streams)
        row = (start + k) % n_rows
        present = mask[k % rows_of_mask]
        channels = {
            name: v for name, v, keep in zip(names, values[row], present) if keep and v == v
        }
        yield streams[stream_index], seq, channels, (y[row] if with_labels else None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Publish a bundled data set (edgelearn.datasets) as live MQTT sensor "
        "streams whose channels vanish and reappear.",
    )
    parser.add_argument("--broker", type=broker_argument, default=("localhost", 1883),
                        metavar="HOST:PORT", help="MQTT broker (default: localhost:1883)")
    parser.add_argument("--dataset", default="occupancy",
                        help="data set name, see edgelearn.datasets (default: occupancy)")
    parser.add_argument("--streams", type=int, default=1,
                        help="number of streams the rows are dealt to (default: 1)")
    parser.add_argument("--stream-prefix", default="s",
                        help="stream ids are PREFIX0, PREFIX1, ... (default: s)")
    parser.add_argument("--start", type=int, default=0, help="first row (default: 0)")
    parser.add_argument("--count", type=int, default=None,
                        help="messages to publish in all (default: every row once)")
    parser.add_argument("--loop", action="store_true",
                        help="start over at the end of the data set until --count")
    parser.add_argument("--rate", type=float, default=100.0,
                        help="messages per second, all streams together; 0 for as fast "
                        "as possible (default: 100)")
    parser.add_argument("--drop", type=float, default=0.0,
                        help="per message, probability that a present channel vanishes "
                        "(default: 0)")
    parser.add_argument("--reappear", type=float, default=0.05,
                        help="per message, probability that a vanished channel comes back "
                        "(default: 0.05)")
    parser.add_argument("--with-labels", action="store_true",
                        help='include the true label as "y" in every data message')
    parser.add_argument("--batch", type=int, default=1, metavar="N",
                        help="readings per message: N > 1 sends batch messages of N "
                        "readings of one stream (default: 1, one reading per message)")
    parser.add_argument("--json", action="store_true",
                        help="publish JSON sensor objects (channels as fields, Zigbee2MQTT "
                        "style) instead of msgpack data messages")
    parser.add_argument("--json-label", default="occupancy", metavar="FIELD",
                        help="--json --with-labels: the field carrying the label "
                        "(default: %(default)s)")
    parser.add_argument("--data-template", default=Topics().data_template,
                        help="data topic template, with {stream} as a whole level "
                        "(default: %(default)s)")
    parser.add_argument("--qos", type=int, choices=(0, 1, 2), default=1,
                        help="QoS of the data messages (default: 1)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the outages")
    parser.add_argument("--client-id", default="",
                        help="MQTT client id (default: a random one)")
    parser.add_argument("--username", default="", help="MQTT username (default: none)")
    parser.add_argument("--password", default=None, help="MQTT password")
    args = parser.parse_args(argv)
    for name in ("drop", "reappear"):
        value = getattr(args, name)
        if not 0.0 <= value <= 1.0:
            parser.error(f"--{name} must be in [0, 1], got {value}")
    if args.streams < 1:
        parser.error(f"--streams must be >= 1, got {args.streams}")
    if args.rate < 0:
        parser.error(f"--rate must be >= 0, got {args.rate}")
    if args.batch < 1:
        parser.error(f"--batch must be >= 1, got {args.batch}")
    if args.json and args.batch > 1:
        parser.error("--json sends one reading per message: leave --batch at 1")
    streams = [f"{args.stream_prefix}{i}" for i in range(args.streams)]
    try:
        topics = Topics(data_template=args.data_template)
    except ValueError as exc:
        parser.error(f"--data-template: {exc}")
    for stream in streams:
        reject = check_stream_id(stream, topics=topics)
        if reject:
            parser.error(f"--stream-prefix gives a bad stream id: {reject.detail}")
    data_topics = {s: topics.data(s) for s in streams}

    acked = threading.Semaphore(0)
    n_acked = [0]

    def on_publish(client, userdata, mid, reason_code, properties):
        n_acked[0] += 1
        acked.release()

    client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=args.client_id,
                         protocol=paho.MQTTv5)
    if args.username:
        client.username_pw_set(args.username, args.password)
    client.on_publish = on_publish
    client.max_inflight_messages_set(1000)
    client.connect(*args.broker)
    client.loop_start()

    # Pauses of the collector would delay messages after their "ts" was taken.
    gc.collect()
    gc.freeze()
    interval = 1.0 / args.rate if args.rate > 0 else 0.0
    stream_of_messages = messages(
        args.dataset, streams, args.start, args.count, args.drop, args.reappear,
        args.with_labels, args.seed, args.loop,
    )
    # The first item loads the data set; the clock starts after it, so the pacing
    # does not begin with a catch-up burst.
    upcoming = next(stream_of_messages, None)
    published = 0  # readings
    sent = 0  # MQTT messages
    pending: dict[str, list] = {stream: [] for stream in streams}
    began = time.monotonic()
    next_at = began
    while upcoming is not None:
        stream, seq, channels, y = upcoming
        if interval:
            delay = next_at - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            next_at += interval
        if args.json:
            fields = {**channels, "seq": seq, "ts": time.time()}
            if y is not None:
                fields[args.json_label] = y
            client.publish(data_topics[stream], json.dumps(fields).encode(), args.qos)
            sent += 1
        elif args.batch == 1:
            client.publish(data_topics[stream], encode_data(time.time(), seq, channels, y),
                           args.qos)
            sent += 1
        else:
            batch = pending[stream]
            batch.append((time.time(), seq, channels, y))
            if len(batch) == args.batch:
                client.publish(data_topics[stream], encode_batch(batch), args.qos)
                sent += 1
                batch.clear()
        published += 1
        upcoming = next(stream_of_messages, None)
    for stream, batch in pending.items():  # each stream's last, shorter batch
        if batch:
            client.publish(data_topics[stream], encode_batch(batch), args.qos)
            sent += 1
    sent_at = time.monotonic()
    # Wait for the broker to acknowledge everything (QoS 1/2) before disconnecting.
    deadline = time.monotonic() + 60
    while n_acked[0] < sent and time.monotonic() < deadline:
        acked.acquire(timeout=0.5)
    client.disconnect()
    client.loop_stop()
    seconds = sent_at - began
    print(json.dumps({
        "published": published,
        "messages": sent,
        "acknowledged": n_acked[0],
        "seconds": round(seconds, 3),
        "rate": round(published / seconds, 1) if seconds > 0 else None,
        "streams": streams,
    }))
    return 0 if n_acked[0] >= sent else 1


if __name__ == "__main__":
    sys.exit(main())
