"""tools/load_mqtt.py, the benchmark's lean QoS 1 publisher: its compact batches hold
the readings within the gateway's default limits, and through a real mosquitto every
message it publishes arrives exactly once, with ``ts`` written at publish time."""

from __future__ import annotations

import collections
import pathlib
import struct
import sys
import time

import msgpack
import numpy as np
import paho.mqtt.client as paho
import pytest
from brokers import broker, wait_until  # noqa: F401  (broker: a fixture)

from firmware_bridge.wire import DEFAULT_LIMITS, DataBatch, Topics, parse_message

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
import load_mqtt  # noqa: E402
from simulate_sensors import messages  # noqa: E402

TOPICS = Topics()


def _readings(count: int, streams=("p0", "p1")):
    return list(messages("occupancy", list(streams), count=count, drop=0.05,
                         with_labels=True, loop=True))


def test_compact_batches_fit_the_default_limits_and_carry_every_reading():
    readings = _readings(3000)
    batches = load_mqtt.compact_batches(readings)
    names = {}
    seen = collections.defaultdict(list)
    for stream, payload, n in batches:
        assert len(payload) <= DEFAULT_LIMITS.max_payload_bytes
        assert 1 <= n <= DEFAULT_LIMITS.max_batch_readings
        parsed = parse_message(TOPICS.data(stream), payload, TOPICS)
        assert isinstance(parsed, DataBatch), parsed
        assert parsed.rejects == () and len(parsed.readings) == n
        seen[stream].extend(parsed.readings)
    assert sum(n for _, _, n in batches) == len(readings)
    # As many readings as fit: every batch but each stream's last is full by count or
    # would pass the byte limit with one more reading (about 60 bytes).
    by_stream = collections.defaultdict(list)
    for stream, payload, n in batches:
        by_stream[stream].append((len(payload), n))
    for sizes in by_stream.values():
        for size, n in sizes[:-1]:
            assert n == DEFAULT_LIMITS.max_batch_readings or size > 4096 - 80
    assert len(batches) <= len(readings) / 60 + 2
    position = collections.Counter()
    for stream, seq, channels, y in readings:
        got = seen[stream][position[stream]]
        position[stream] += 1
        assert got.seq == seq and got.y == y and got.ts == load_mqtt.TS_PLACEHOLDER
        # One-letter names in first-seen order; float32 values.
        for name in channels:
            names.setdefault(name, "abcdefghij"[len(names)])
        assert got.channels == {names[k]: float(np.float32(v)) for k, v in channels.items()}


def test_a_placeholder_ts_is_written_at_publish_time_in_every_reading():
    stream, payload, n = load_mqtt.compact_batches(_readings(10, ("p0",)))[0]
    packet, id_offset, ts_offsets = load_mqtt.publish_packet(TOPICS.data(stream), payload)
    assert len(ts_offsets) == n == 10
    packet[id_offset:id_offset + 2] = b"\x00\x07"
    for offset in ts_offsets:
        packet[offset:offset + 8] = np.float64(1234.5).byteswap().tobytes()
    body = packet[-len(payload):]
    assert [r["ts"] for r in msgpack.unpackb(bytes(body))["readings"]] == [1234.5] * 10
    assert packet[0] == 0x32 and bytes(packet[id_offset:id_offset + 2]) == b"\x00\x07"


class Recorder:
    """A QoS 1 subscriber to every data topic: (stream, seq) -> [ts, ...]."""

    def __init__(self, port: int):
        self.seen: dict[tuple[str, int], list[float]] = collections.defaultdict(list)
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
        self.client.on_message = self._on_message
        subscribed = []
        self.client.on_subscribe = lambda *a: subscribed.append(True)
        self.client.connect("127.0.0.1", port)
        self.client.subscribe(TOPICS.filter("data"), qos=1)
        self.client.loop_start()
        wait_until(lambda: subscribed, 10, "the subscription")

    def _on_message(self, client, userdata, message):
        _, stream = TOPICS.parse(message.topic)
        body = msgpack.unpackb(message.payload)
        for reading in body.get("readings", (body,)):
            self.seen[(stream, reading["seq"])].append(reading["ts"])

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


@pytest.mark.broker
@pytest.mark.parametrize("batch", ["single", "compact"])
def test_every_message_arrives_once_through_mosquitto(broker, batch):  # noqa: F811
    readings = _readings(3000, ("p0", "p1", "p2"))
    payloads = (load_mqtt.single_payloads(readings) if batch == "single"
                else load_mqtt.compact_batches(readings))
    recorder = Recorder(broker.port)
    try:
        began = time.time()
        # A small window and chunk: many rounds of waiting for PUBACKs and reusing ids.
        summary = load_mqtt.publish("127.0.0.1", broker.port, payloads,
                                    {s: TOPICS.data(s) for s in ("p0", "p1", "p2")},
                                    window=7, chunk=3)
        ended = time.time()
        assert summary["acknowledged"] == summary["messages"] == len(payloads)
        assert summary["unexpected_acks"] == 0
        assert summary["published"] == 3000
        wait_until(lambda: len(recorder.seen) >= 3000, 30, "every reading")
        time.sleep(0.3)  # a duplicate would come now
    finally:
        recorder.close()
    expected = {(stream, seq) for stream, seq, _, _ in readings}
    assert set(recorder.seen) == expected
    assert all(len(ts) == 1 for ts in recorder.seen.values())
    assert all(began <= ts[0] <= ended for ts in recorder.seen.values())


@pytest.mark.broker
def test_the_lean_subscriber_gets_every_delivery_once_and_acknowledges_it(broker):  # noqa: F811
    """Through mosquitto (100 messages in flight to a client at most, so without its
    PUBACKs deliveries would stop): every QoS 1 message once, payloads to the byte,
    long ones (remaining lengths of 2 and 3 bytes) and QoS 0 ones too."""
    import threading

    readings = _readings(6000, ("p0", "p1"))
    payloads = load_mqtt.compact_batches(readings)
    rng = np.random.default_rng(0)
    payloads += [("p0", rng.bytes(n), 0) for n in (127, 128, 16383, 16384, 70000)]
    got: list[tuple[float, str, bytes]] = []
    subscriber = load_mqtt.LeanSubscriber("127.0.0.1", broker.port,
                                          [TOPICS.filter("data"), "extra/#"],
                                          lambda *delivery: got.append(delivery))
    subscriber.connect()
    reader = threading.Thread(target=subscriber.run, args=(0.05,))
    reader.start()
    try:
        began = time.time()
        summary = load_mqtt.publish("127.0.0.1", broker.port, payloads,
                                    {s: TOPICS.data(s) for s in ("p0", "p1")})
        assert summary["acknowledged"] == len(payloads)
        qos0 = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)
        qos0.connect("127.0.0.1", broker.port)
        qos0.loop_start()
        qos0.publish("extra/qos0", b"zero", qos=0).wait_for_publish(5)
        qos0.disconnect()
        qos0.loop_stop()
        wait_until(lambda: len(got) >= len(payloads) + 1, 30, "every delivery")
        time.sleep(0.3)  # a duplicate would come now
    finally:
        subscriber.stop()
        reader.join(5)
        subscriber.close()
    assert not reader.is_alive()
    assert subscriber.messages == len(got) == len(payloads) + 1
    assert all(began <= arrival <= time.time() for arrival, _, _ in got)
    # Byte for byte, but for the ts the publisher wrote into each reading when sent.
    received = []
    for arrival, topic, payload in got:
        payload = bytearray(payload)
        at = 0
        while (at := payload.find(b"\xa2ts\xcb", at)) >= 0:
            ts = struct.unpack(">d", payload[at + 4:at + 12])[0]
            assert began <= ts <= arrival
            payload[at + 3:at + 12] = load_mqtt._TS64
            at += 12
        received.append((topic, bytes(payload)))
    assert sorted(received) == sorted(
        [(TOPICS.data(s), p) for s, p, _ in payloads] + [("extra/qos0", b"zero")])


@pytest.mark.broker
def test_a_fixed_rate_is_kept(broker):  # noqa: F811
    payloads = load_mqtt.single_payloads(_readings(300, ("p0",)))
    summary = load_mqtt.publish("127.0.0.1", broker.port, payloads, {"p0": TOPICS.data("p0")},
                                rate=1000.0)
    assert summary["acknowledged"] == 300
    assert 0.29 <= summary["seconds"] < 3.0
    assert summary["message_rate"] <= 1040


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match=r"The 'window' parameter of LeanPublisher must be "
                       r"an int in \[1, 65535\]. Got 70000."):
        load_mqtt.LeanPublisher("127.0.0.1", 1, window=70000)
    with pytest.raises(ValueError, match=r"The 'rate' parameter of LeanPublisher must be "
                       r"a float in \[0, inf\). Got -1.0."):
        load_mqtt.LeanPublisher("127.0.0.1", 1, rate=-1.0)
    with pytest.raises(SystemExit):
        load_mqtt.main(["--count", "10", "--batch", "zero"])


@pytest.mark.broker
def test_the_command_deals_streams_to_shares_and_starts_on_go(broker):  # noqa: F811
    import json
    import subprocess

    got = collections.Counter()
    client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv311)

    def on_message(client, userdata, message):
        got[message.topic] += len(msgpack.unpackb(message.payload)["readings"])

    client.on_message = on_message
    client.connect("127.0.0.1", broker.port)
    client.subscribe("sensors/#", qos=1)
    client.loop_start()
    tool = pathlib.Path(load_mqtt.__file__)
    process = subprocess.Popen(
        [sys.executable, str(tool), "--broker", f"127.0.0.1:{broker.port}", "--count", "512",
         "--streams", "2", "--stream-prefix", "q", "--batch", "compact", "--with-labels",
         "--data-template", "sensors/a/{stream}/data",
         "--data-template", "sensors/b/{stream}/data", "--wait-for-go"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert json.loads(process.stdout.readline()) == {"ready": True}
        time.sleep(0.5)
        assert not got  # nothing before "go"
        process.stdin.write("go\n")
        process.stdin.flush()
        summary = json.loads(process.stdout.readline())
        assert process.wait(30) == 0
        wait_until(lambda: sum(got.values()) >= 512, 10, "every reading")
    finally:
        client.disconnect()
        client.loop_stop()
        if process.poll() is None:
            process.kill()
    assert summary["published"] == 512 and summary["acknowledged"] == summary["messages"]
    assert summary["readings_per_message"] == 64 and summary["payload_bytes"]["max"] <= 4096
    assert got == {"sensors/a/q0/data": 256, "sensors/b/q1/data": 256}
