#!/usr/bin/env python3
"""A lean MQTT load generator for the gateway benchmark: QoS 1 on a raw socket.

``tools/simulate_sensors.py`` publishes through paho, which spends about 200 µs of
CPU per message: on a two-core machine the publisher then takes the core the gateway
needs, and a benchmark measures the publisher. This one is built to cost little:

* every payload is **encoded before the clock starts** (the same readings as the
  simulator: ``simulate_sensors.messages``, channels dropping out and coming back);
* each payload's ``ts`` fields hold a placeholder that is **overwritten in place with
  the wall-clock time** when its packet is handed to the socket, so ``ts`` is still the
  publish time a subscriber measures latency from;
* it is a minimal **MQTT 3.1.1 client** (CONNECT, PUBLISH QoS 1, PUBACK, DISCONNECT):
  QoS 1 PUBLISH packets are **pipelined** within an in-flight window (``--window``,
  at most 65,535: packet ids are 16-bit) and written ``--chunk`` at a time in one
  ``send``; the PUBACKs are read in bulk, and each one must acknowledge a packet in
  flight (a second or unknown PUBACK is counted as ``unexpected_acks``).

QoS 1 is kept: the broker takes responsibility for every message, as it does for a
real sensor, and the gateway's guarantees are measured under it.

``--batch compact`` sends **compact batches**: one-letter channel names (``a``, ``b``,
... in the data set's column order), channel values as float32 (``ts`` stays float64,
so it keeps microseconds), and as many readings of one stream per message as fit the
gateway's default limits (``Limits.max_payload_bytes`` 4096,
``Limits.max_batch_readings`` 64). ``--batch N`` sends batches of exactly N readings
as the simulator does (full names, float64 values).

It prints one JSON line: messages, readings, the rate offered, PUBACKs received, the
payload sizes, and this process's CPU time per message and per reading while
publishing (``cpu_us_per_message``; encoding before the clock is reported apart as
``prepare_us_per_message``).

:class:`LeanSubscriber` is the benchmark's other end, built the same way: a
subscribe-only MQTT 3.1.1 client on a raw socket, QoS 1, that reads whatever the
socket holds at once, stamps it with one arrival time, hands each PUBLISH to a
callback and acknowledges all of them in one ``send`` (``mosquitto_sub`` printing
lines that Python then parses costs several times more per message).

Example::

    python tools/load_mqtt.py --broker localhost:1883 --count 200000 --batch compact \\
        --with-labels --loop --rate 0
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import string
import struct
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import msgpack

# The repository without "..": edgelearn/kernels/_jit.py digests the kernels' folder by
# its path as imported, so a "tools/.." path dropped every other process's numba cache.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from edgelearn.constraints import Interval, check_params  # noqa: E402
from firmware_bridge.wire import DEFAULT_LIMITS, Limits, Topics, encode_data  # noqa: E402
from simulate_sensors import broker_argument, messages  # noqa: E402

__all__ = ["TS_PLACEHOLDER", "LeanPublisher", "LeanSubscriber", "single_payloads",
           "compact_batches", "fixed_batches", "main"]

# A float exactly representable in float32 and float64, negative and tiny, so no
# sensor reading or time is ever equal to it: it marks where a ``ts`` goes.
TS_PLACEHOLDER = -1.75 * 2.0**-100
_TS64 = b"\xcb" + struct.pack(">d", TS_PLACEHOLDER)
_TS32 = b"\xca" + struct.pack(">f", TS_PLACEHOLDER)
_MAX_PACKET_ID = 65535


def _remaining_length(n: int) -> bytes:
    """MQTT's variable-length integer (1 to 4 bytes)."""
    out = bytearray()
    while True:
        byte, n = n % 128, n // 128
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _mqtt_string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack(">H", len(raw)) + raw


def connect_packet(client_id: str, keepalive: int = 0) -> bytes:
    """CONNECT, MQTT 3.1.1, clean session (the publisher keeps no state at the broker)."""
    body = _mqtt_string("MQTT") + bytes([4, 0x02]) + struct.pack(">H", keepalive)
    body += _mqtt_string(client_id)
    return b"\x10" + _remaining_length(len(body)) + body


def publish_packet(topic: str, payload: bytes) -> tuple[bytearray, int, tuple[int, ...]]:
    """A QoS 1 PUBLISH with packet id 0, the offset of its packet id, and the offsets
    of the 8 bytes of every ``ts`` placeholder in it (both filled in when it is sent)."""
    head = _mqtt_string(topic)
    remaining = len(head) + 2 + len(payload)
    fixed = b"\x32" + _remaining_length(remaining)
    packet = bytearray(fixed + head + b"\x00\x00" + payload)
    id_offset = len(fixed) + len(head)
    start = id_offset + 2
    offsets, at = [], payload.find(_TS64)
    while at >= 0:
        offsets.append(start + at + 1)
        at = payload.find(_TS64, at + len(_TS64))
    return packet, id_offset, tuple(offsets)


# --- payloads -------------------------------------------------------------------------


def single_payloads(readings: Iterable[tuple[str, int, dict, object]]) -> list[tuple[str, bytes, int]]:
    """One data message per reading, as ``encode_data`` makes it (the simulator's
    format): ``(stream, payload, 1)``."""
    return [(stream, encode_data(TS_PLACEHOLDER, seq, channels, y), 1)
            for stream, seq, channels, y in readings]


def fixed_batches(readings: Iterable[tuple[str, int, dict, object]],
                  size: int) -> list[tuple[str, bytes, int]]:
    """Batch messages of ``size`` readings of one stream (the last of a stream may be
    shorter), full channel names and float64 values, as ``simulate_sensors --batch``."""
    from firmware_bridge.wire import encode_batch

    pending: dict[str, list] = {}
    out = []
    for stream, seq, channels, y in readings:
        batch = pending.setdefault(stream, [])
        batch.append((TS_PLACEHOLDER, seq, channels, y))
        if len(batch) == size:
            out.append((stream, encode_batch(batch), size))
            batch.clear()
    out.extend((stream, encode_batch(batch), len(batch)) for stream, batch in pending.items()
               if batch)
    return out


def _array_header(n: int) -> bytes:
    return bytes([0x90 | n]) if n < 16 else b"\xdc" + struct.pack(">H", n)


_SINGLE = msgpack.Packer(use_single_float=True, use_bin_type=True)
_READINGS_KEY = msgpack.packb("readings")


def compact_reading(seq: int, channels: dict[str, float], y: object,
                    names: dict[str, str]) -> bytes:
    """One reading of a compact batch: short names from ``names``, float32 values, a
    float64 ``ts`` placeholder."""
    reading = {"ts": TS_PLACEHOLDER, "seq": seq,
               "ch": {names[name]: float(v) for name, v in channels.items()}}
    if y is not None:
        reading["y"] = y
    packed = _SINGLE.pack(reading)
    if packed.count(_TS32) != 1:
        raise ValueError(f"reading {seq}: a channel value equals the ts placeholder")
    return packed.replace(_TS32, _TS64)


def compact_batches(readings: Iterable[tuple[str, int, dict, object]],
                    limits: Limits = DEFAULT_LIMITS) -> list[tuple[str, bytes, int]]:
    """Batch messages ``{"readings": [...]}`` holding as many readings of one stream as
    fit ``limits.max_payload_bytes`` and ``limits.max_batch_readings``, in order:
    ``(stream, payload, readings in it)``. A msgpack array is its header and its items
    one after the other, so a batch is assembled from readings packed once."""
    names: dict[str, str] = {}
    pending: dict[str, list[bytes]] = {}
    sizes: dict[str, int] = {}
    overhead = 1 + len(_READINGS_KEY) + 3  # map header, key, the largest array header
    out = []

    def flush(stream: str) -> None:
        items = pending.pop(stream)
        sizes.pop(stream)
        payload = b"\x81" + _READINGS_KEY + _array_header(len(items)) + b"".join(items)
        out.append((stream, payload, len(items)))

    for stream, seq, channels, y in readings:
        for name in channels:
            if name not in names:
                if len(names) >= len(string.ascii_letters):
                    raise ValueError("compact batches name at most 52 channels")
                names[name] = string.ascii_letters[len(names)]
        packed = compact_reading(seq, channels, y, names)
        if overhead + len(packed) > limits.max_payload_bytes:
            raise ValueError(f"one reading is {len(packed)} bytes, more than the payload "
                             f"limit of {limits.max_payload_bytes}")
        if stream in pending and (
            len(pending[stream]) == limits.max_batch_readings
            or overhead + sizes[stream] + len(packed) > limits.max_payload_bytes
        ):
            flush(stream)
        pending.setdefault(stream, []).append(packed)
        sizes[stream] = sizes.get(stream, 0) + len(packed)
    for stream in list(pending):
        flush(stream)
    return out


# --- the client -----------------------------------------------------------------------


class ProtocolError(RuntimeError):
    """The broker sent something a QoS 1 publisher does not expect."""


class LeanPublisher:
    """A publish-only MQTT 3.1.1 client: QoS 1 packets pipelined in a window.

    >>> LeanPublisher("127.0.0.1", 1883, window=0)
    Traceback (most recent call last):
    ...
    ValueError: The 'window' parameter of LeanPublisher must be an int in [1, 65535]. Got 0.
    """

    _parameter_constraints = {
        "window": Interval(int, 1, _MAX_PACKET_ID),
        "chunk": Interval(int, 1, None),
        "rate": Interval(float, 0, None, closed="left"),
    }

    def __init__(self, host: str, port: int, client_id: str = "", window: int = 1000,
                 chunk: int = 64, rate: float = 0.0):
        params = check_params("LeanPublisher", {"window": window, "chunk": chunk,
                                                "rate": rate}, self._parameter_constraints)
        self.window, self.chunk, self.rate = params["window"], params["chunk"], params["rate"]
        self.address = (host, port)
        self.client_id = client_id or f"lean-{os.getpid()}-{time.monotonic_ns() % 10**9}"
        self.sock: socket.socket | None = None
        self._buffer = b""

    def connect(self, timeout: float = 10.0) -> None:
        self.sock = socket.create_connection(self.address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(connect_packet(self.client_id))
        connack = b""
        while len(connack) < 4:
            part = self.sock.recv(4 - len(connack))
            if not part:
                raise ProtocolError("the broker closed the connection before CONNACK")
            connack += part
        if connack[0] != 0x20 or connack[3] != 0:
            raise ProtocolError(f"connection refused: CONNACK {connack.hex()}")
        self.sock.settimeout(None)

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.sendall(b"\xe0\x00")
            finally:
                self.sock.close()
                self.sock = None

    def publish_all(self, packets: Sequence[tuple[bytearray, int, tuple[int, ...]]],
                    timeout: float = 120.0) -> dict:
        """Send every packet (from :func:`publish_packet`) at QoS 1 and wait for all
        their PUBACKs; at ``rate`` packets/s, or as fast as the window allows if 0."""
        sock = self.sock
        total = len(packets)
        outstanding: dict[int, int] = {}
        counts = {"acked": 0, "unexpected": 0}
        pack_into = struct.pack_into
        window, chunk, interval = self.window, self.chunk, (1.0 / self.rate if self.rate else 0.0)
        next_id, sent = 1, 0
        cpu_began, began = time.process_time(), time.monotonic()
        deadline = began + timeout
        while counts["acked"] < total:
            now_mono = time.monotonic()
            if now_mono > deadline:
                raise TimeoutError(f"{total - counts['acked']} of {total} PUBACKs missing "
                                   f"after {timeout} s")
            room = min(window - len(outstanding), chunk, total - sent)
            if interval:
                room = min(room, int((now_mono - began) / interval) + 1 - sent)
            if room > 0:
                now = time.time()
                parts = []
                for index in range(sent, sent + room):
                    packet, id_offset, ts_offsets = packets[index]
                    while next_id in outstanding:
                        next_id = next_id % _MAX_PACKET_ID + 1
                    pack_into(">H", packet, id_offset, next_id)
                    for offset in ts_offsets:
                        pack_into(">d", packet, offset, now)
                    outstanding[next_id] = index
                    next_id = next_id % _MAX_PACKET_ID + 1
                    parts.append(packet)
                sock.sendall(b"".join(parts))
                sent += room
                wait = 0.0
            elif sent < total and len(outstanding) < window and interval:
                wait = max(0.0, began + sent * interval - time.monotonic())
            else:
                wait = 1.0
            if select.select([sock], [], [], wait)[0]:
                self._read_acks(outstanding, counts)
        seconds = time.monotonic() - began
        return {"sent": sent, "acknowledged": counts["acked"],
                "unexpected_acks": counts["unexpected"], "seconds": seconds,
                "cpu_seconds": time.process_time() - cpu_began}

    def _read_acks(self, outstanding: dict[int, int], counts: dict[str, int]) -> None:
        data = self.sock.recv(1 << 16)
        if not data:
            raise ProtocolError("the broker closed the connection")
        buffer = self._buffer + data
        at, end = 0, len(buffer)
        while end - at >= 2:
            kind, length = buffer[at], buffer[at + 1]
            if length & 0x80:
                raise ProtocolError(f"unexpected packet 0x{kind:02x} with a long body")
            if end - at < 2 + length:
                break
            if kind == 0x40 and length == 2:
                if outstanding.pop((buffer[at + 2] << 8) | buffer[at + 3], None) is None:
                    counts["unexpected"] += 1
                else:
                    counts["acked"] += 1
            elif kind != 0xD0:  # PINGRESP is harmless; anything else is not
                raise ProtocolError(f"unexpected packet 0x{kind:02x} from the broker")
            at += 2 + length
        self._buffer = buffer[at:]


def subscribe_packet(packet_id: int, filters: Sequence[str], qos: int = 1) -> bytes:
    """SUBSCRIBE to ``filters``, each at ``qos``."""
    body = struct.pack(">H", packet_id) + b"".join(_mqtt_string(f) + bytes([qos])
                                                   for f in filters)
    return b"\x82" + _remaining_length(len(body)) + body


def _packet_at(buffer: bytes, at: int) -> tuple[int, int, int] | None:
    """The packet starting at ``at``: ``(first byte, body start, body end)``, or None
    if ``buffer`` does not hold all of it yet."""
    end = len(buffer)
    length, shift, pos = 0, 0, at + 1
    while True:
        if pos >= end:
            return None
        byte = buffer[pos]
        length |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            break
        shift += 7
        if shift > 21:
            raise ProtocolError("a remaining length of more than 4 bytes")
    if pos + length > end:
        return None
    return buffer[at], pos, pos + length


class LeanSubscriber:
    """A subscribe-only MQTT 3.1.1 client: deliveries at QoS 1 (or 0), each handed to
    ``on_message(arrival, topic, payload)`` (``arrival``: ``time.time()`` when the
    bytes holding it were read) and acknowledged, all PUBACKs of one read in one
    ``send``. :meth:`run` until :meth:`stop`; ``messages`` counts the deliveries.

    >>> LeanSubscriber("127.0.0.1", 1883, [], lambda *a: None)
    Traceback (most recent call last):
    ...
    ValueError: The 'filters' parameter of LeanSubscriber must be a non-empty list of topic filters. Got [].
    """

    def __init__(self, host: str, port: int, filters: Sequence[str],
                 on_message: Callable[[float, str, bytes], None], client_id: str = ""):
        if not filters or not all(isinstance(f, str) and f for f in filters):
            raise ValueError("The 'filters' parameter of LeanSubscriber must be a non-empty "
                             f"list of topic filters. Got {filters!r}.")
        self.address = (host, port)
        self.filters = list(filters)
        self.on_message = on_message
        self.client_id = client_id or f"lean-sub-{os.getpid()}-{time.monotonic_ns() % 10**9}"
        self.messages = 0
        self.sock: socket.socket | None = None
        self._buffer = b""
        self._stopping = False

    def connect(self, timeout: float = 10.0) -> None:
        """Connect (clean session) and subscribe; return once the broker granted every
        filter (``ProtocolError`` if it refused one)."""
        self.sock = socket.create_connection(self.address, timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.sendall(connect_packet(self.client_id))
        connack = self._read_packet()
        if connack[0] != 0x20 or connack[1][1] != 0:
            raise ProtocolError(f"connection refused: CONNACK {bytes(connack[1]).hex()}")
        self.sock.sendall(subscribe_packet(1, self.filters))
        kind, body = self._read_packet()
        granted = body[2:]
        if kind != 0x90 or body[:2] != b"\x00\x01" or len(granted) != len(self.filters):
            raise ProtocolError(f"unexpected answer to SUBSCRIBE: 0x{kind:02x} {body.hex()}")
        if 0x80 in granted:
            raise ProtocolError(f"the broker refused a subscription: {granted.hex()}")
        self.sock.settimeout(None)

    def _read_packet(self) -> tuple[int, bytes]:
        # One whole packet while connecting (nothing else is in flight yet).
        while True:
            found = _packet_at(self._buffer, 0)
            if found is not None:
                kind, start, end = found
                body = self._buffer[start:end]
                self._buffer = self._buffer[end:]
                return kind, body
            part = self.sock.recv(1 << 16)
            if not part:
                raise ProtocolError("the broker closed the connection while connecting")
            self._buffer += part

    def run(self, poll_s: float = 0.1) -> None:
        """Read, hand over and acknowledge deliveries until :meth:`stop`."""
        sock = self.sock
        while not self._stopping:
            if not select.select([sock], [], [], poll_s)[0]:
                continue
            data = sock.recv(1 << 18)
            if not data:
                if self._stopping:
                    return
                raise ProtocolError("the broker closed the connection")
            self._deliver(data, time.time())

    def _deliver(self, data: bytes, arrival: float) -> None:
        buffer = self._buffer + data if self._buffer else data
        at, acks, on_message = 0, [], self.on_message
        while True:
            found = _packet_at(buffer, at)
            if found is None:
                break
            kind, start, end = found
            at = end
            if kind & 0xF0 != 0x30:
                if kind == 0xD0:  # PINGRESP
                    continue
                raise ProtocolError(f"unexpected packet 0x{kind:02x} from the broker")
            qos = (kind >> 1) & 3
            topic_end = start + 2 + ((buffer[start] << 8) | buffer[start + 1])
            topic = buffer[start + 2:topic_end].decode("utf-8")
            payload_start = topic_end
            if qos:
                if qos != 1:
                    raise ProtocolError(f"a QoS {qos} delivery on a QoS 1 subscription")
                acks.append(b"\x40\x02" + buffer[topic_end:topic_end + 2])
                payload_start += 2
            self.messages += 1
            on_message(arrival, topic, buffer[payload_start:end])
        self._buffer = buffer[at:]
        if acks:
            self.sock.sendall(b"".join(acks))

    def stop(self) -> None:
        """Make :meth:`run` return (within its ``poll_s``)."""
        self._stopping = True

    def close(self) -> None:
        if self.sock is not None:
            try:
                self.sock.sendall(b"\xe0\x00")
            except OSError:
                pass
            finally:
                self.sock.close()
                self.sock = None


def publish(host: str, port: int, payloads: Sequence[tuple[str, bytes, int]],
            data_topics: Mapping[str, str], window: int = 1000, chunk: int = 64,
            rate: float = 0.0, client_id: str = "", ready: Callable[[], None] | None = None
            ) -> dict:
    """Publish ``(stream, payload, readings)`` items at QoS 1, each on its stream's topic
    in ``data_topics``; a summary with the CPU time of the publishing alone. ``ready``
    is called once everything is encoded and connected, just before the clock starts
    (``--wait-for-go`` waits there)."""
    cpu_began = time.process_time()
    packets = [publish_packet(data_topics[stream], payload) for stream, payload, _ in payloads]
    prepare_cpu = time.process_time() - cpu_began
    client = LeanPublisher(host, port, client_id, window, chunk, rate)
    client.connect()
    if ready is not None:
        ready()
    try:
        result = client.publish_all(packets)
    finally:
        client.close()
    n_messages = len(payloads)
    n_readings = sum(r for _, _, r in payloads)
    sizes = sorted(len(p) for _, p, _ in payloads)
    return {
        "published": n_readings,
        "messages": n_messages,
        "acknowledged": result["acknowledged"],
        "unexpected_acks": result["unexpected_acks"],
        "seconds": round(result["seconds"], 4),
        "rate": round(n_readings / result["seconds"], 1),
        "message_rate": round(n_messages / result["seconds"], 1),
        "readings_per_message": round(n_readings / n_messages, 2),
        "payload_bytes": {"min": sizes[0], "median": sizes[len(sizes) // 2],
                          "max": sizes[-1]},
        "cpu_us_per_message": round(result["cpu_seconds"] / n_messages * 1e6, 2),
        "cpu_us_per_reading": round(result["cpu_seconds"] / n_readings * 1e6, 3),
        "prepare_us_per_message": round(prepare_cpu / n_messages * 1e6, 2),
        "streams": sorted({stream for stream, _, _ in payloads}),
    }


def _wait_for_go() -> None:
    print(json.dumps({"ready": True}), flush=True)
    sys.stdin.readline()


def _batch_argument(text: str) -> int | str:
    if text == "compact":
        return text
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"--batch must be 'compact' or an int >= 1, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Publish a bundled data set's readings at QoS 1 as fast as possible "
        "(or at --rate) through a minimal pipelining MQTT 3.1.1 client; payloads are "
        "encoded before the clock starts. Prints a JSON summary with its CPU per message.",
    )
    parser.add_argument("--broker", type=broker_argument, default=("localhost", 1883),
                        metavar="HOST:PORT", help="MQTT broker (default: localhost:1883)")
    parser.add_argument("--dataset", default="occupancy",
                        help="data set name, see edgelearn.datasets (default: occupancy)")
    parser.add_argument("--streams", type=int, default=1,
                        help="streams the readings are dealt to in turn (default: 1)")
    parser.add_argument("--stream-prefix", default="s",
                        help="stream ids are PREFIX0, PREFIX1, ... (default: s)")
    parser.add_argument("--count", type=int, required=True, help="readings in all")
    parser.add_argument("--loop", action="store_true",
                        help="start over at the end of the data set until --count")
    parser.add_argument("--drop", type=float, default=0.01,
                        help="per reading, probability that a channel vanishes (default: 0.01)")
    parser.add_argument("--with-labels", action="store_true",
                        help='include the true label as "y" in every reading')
    parser.add_argument("--batch", type=_batch_argument, default=1, metavar="N|compact",
                        help="readings per message: 1 (default), N, or 'compact' (as many "
                        "compact readings as the default limits allow)")
    parser.add_argument("--rate", type=float, default=0.0,
                        help="messages per second; 0 (default) for as fast as the window "
                        "allows")
    parser.add_argument("--window", type=int, default=1000,
                        help="QoS 1 messages in flight at most (default: 1000)")
    parser.add_argument("--chunk", type=int, default=64,
                        help="packets written per send (default: 64)")
    parser.add_argument("--data-template", action="append", metavar="TEMPLATE",
                        help="data topic template, with {stream} as a whole level; given "
                        "K times, stream i publishes on template i mod K (one share per "
                        f"gateway instance) (default: {Topics().data_template})")
    parser.add_argument("--wait-for-go", action="store_true",
                        help='once encoded and connected, print {"ready": true} and wait '
                        "for a line on stdin before publishing (starts several at once)")
    parser.add_argument("--client-id", default="", help="MQTT client id (default: random)")
    args = parser.parse_args(argv)
    if args.streams < 1:
        parser.error(f"--streams must be an int >= 1, got {args.streams}")
    if args.count < 1:
        parser.error(f"--count must be an int >= 1, got {args.count}")
    if not 0.0 <= args.drop <= 1.0:
        parser.error(f"--drop must be in [0, 1], got {args.drop}")
    try:
        shares = [Topics(data_template=template)
                  for template in args.data_template or [Topics().data_template]]
    except ValueError as exc:
        parser.error(f"--data-template: {exc}")
    streams = [f"{args.stream_prefix}{i}" for i in range(args.streams)]
    data_topics = {stream: shares[i % len(shares)].data(stream)
                   for i, stream in enumerate(streams)}
    readings = messages(args.dataset, streams, count=args.count, drop=args.drop,
                        with_labels=args.with_labels, loop=args.loop)
    if args.batch == "compact":
        payloads = compact_batches(readings)
    elif args.batch == 1:
        payloads = single_payloads(readings)
    else:
        payloads = fixed_batches(readings, args.batch)
    try:
        summary = publish(args.broker[0], args.broker[1], payloads, data_topics, args.window,
                          args.chunk, args.rate, args.client_id,
                          _wait_for_go if args.wait_for_go else None)
    except ValueError as exc:
        parser.error(str(exc))
    print(json.dumps(summary))
    return 0 if summary["acknowledged"] == summary["messages"] and not summary[
        "unexpected_acks"] else 1


if __name__ == "__main__":
    sys.exit(main())
