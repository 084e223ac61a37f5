"""Outbound (and test) messages as bytes: data, batches, label answers, predictions,
label requests and the status; and an outbound message in JSON for topics configured so
(:func:`as_json`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import msgpack
import numpy as np

_PLAIN_CONVERSIONS = (
    (int, int.__index__),
    (float, float.__float__),
    (str, str.__str__),
    (bytes, bytes),
)


def to_wire(value: Any) -> Any:
    """``value`` as plain Python that msgpack packs: NumPy scalars become
    ``bool``/``int``/``float``/``str``, arrays and tuples lists, dict keys and values
    converted alike. Anything else raises ``TypeError`` (a bug in the caller).

    >>> to_wire({"p": np.float32(0.5), np.str_("a"): np.bool_(True), "v": np.arange(2)})
    {'p': 0.5, 'a': True, 'v': [0, 1]}
    """
    if value is None or type(value) in (bool, int, float, str, bytes):
        return value
    if isinstance(value, np.generic):
        return to_wire(value.item())
    # Subclasses become the plain type by their base's own conversion: str() of a
    # (str, Enum) member would give "Cls.NAME", not its value.
    for plain, convert in _PLAIN_CONVERSIONS:
        if isinstance(value, plain):
            return convert(value)
    if isinstance(value, np.ndarray):
        return to_wire(value.tolist())
    if isinstance(value, Mapping):
        return {to_wire(k): to_wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_wire(v) for v in value]
    raise TypeError(f"cannot put a {type(value).__name__} on the wire")


def _pack(message: dict[str, Any]) -> bytes:
    return msgpack.packb(to_wire(message), use_bin_type=True)


def _int(name: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"'{name}' must be an int, got {type(value).__name__}")
    return int(value)


def _float(name: str, value: Any) -> float:
    numeric = (int, float, np.integer, np.floating)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numeric):
        raise TypeError(f"'{name}' must be a number, got {type(value).__name__}")
    return float(value)


def encode_data(ts: float, seq: int, channels: Mapping[str, float], y: Any = None) -> bytes:
    """An inbound data message, as a sensor would publish it (simulator, tests).

    >>> msgpack.unpackb(encode_data(1.0, 2, {"t": 3.5}, y=True))
    {'ts': 1.0, 'seq': 2, 'ch': {'t': 3.5}, 'y': True}
    """
    message = {"ts": _float("ts", ts), "seq": _int("seq", seq), "ch": dict(channels)}
    if y is not None:
        message["y"] = y
    return _pack(message)


def encode_batch(readings: Any) -> bytes:
    """An inbound batch of readings ``(ts, seq, channels, y)`` of one stream, as a
    sensor hub would publish it (simulator, tests); ``y`` may be ``None``.

    >>> msgpack.unpackb(encode_batch([(1.0, 2, {"t": 3.5}, None), (1.5, 3, {"t": 3.6}, True)]))
    {'readings': [{'ts': 1.0, 'seq': 2, 'ch': {'t': 3.5}}, {'ts': 1.5, 'seq': 3, 'ch': {'t': 3.6}, 'y': True}]}
    """
    batch = []
    for ts, seq, channels, y in readings:
        reading = {"ts": _float("ts", ts), "seq": _int("seq", seq), "ch": dict(channels)}
        if y is not None:
            reading["y"] = y
        batch.append(reading)
    return _pack({"readings": batch})


def encode_label(req: str, y: Any) -> bytes:
    """An inbound label answer, as a labeller would publish it (oracle, tests)."""
    return _pack({"req": req, "y": y})


def encode_prediction(seq: int, ts: float, y: Any, score: Any, query: bool, **extra: Any) -> bytes:
    """The prediction message for one data message; ``extra`` are the task's own
    fields (a regression's ``lower``/``upper``, an anomaly stream's ``top``).

    >>> payload = encode_prediction(np.int64(4), 1.5, np.int64(2), np.float64(0.25), False)
    >>> msgpack.unpackb(payload)
    {'seq': 4, 'ts': 1.5, 'y': 2, 'score': 0.25, 'query': False}
    """
    return msgpack.packb(prediction_fields(seq, ts, y, score, query, **extra), use_bin_type=True)


def prediction_fields(seq: int, ts: float, y: Any, score: Any, query: bool,
                      **extra: Any) -> dict[str, Any]:
    """The prediction map of one reading, as plain values (see :func:`encode_prediction`)."""
    fields = {
        "seq": _int("seq", seq),
        "ts": _float("ts", ts),
        "y": to_wire(y),
        "score": to_wire(score),
        "query": bool(query),
    }
    for name, value in extra.items():
        fields[name] = to_wire(value)
    return fields


def encode_batch_prediction(predictions: list[dict[str, Any]]) -> bytes:
    """The one prediction message answering a batch: the prediction maps of its
    accepted readings, in batch order.

    >>> msgpack.unpackb(encode_batch_prediction([prediction_fields(4, 1.5, True, 0.25, False)]))
    {'predictions': [{'seq': 4, 'ts': 1.5, 'y': True, 'score': 0.25, 'query': False}]}
    """
    return msgpack.packb({"predictions": predictions}, use_bin_type=True)


def encode_label_request(
    req: str, seq: int, ts: float, y_hat: Any, score: Any, ttl: float, labels: Any = None,
    extra: dict | None = None,
) -> bytes:
    """A request for the label of data message ``seq``; answers must come within ``ttl`` s.

    A multi-label stream asks for the whole label set: ``labels`` lists the label
    names its learner knows (the answer is a map of label name to bool, and may name
    others); it is left out of single-label requests. ``extra`` adds the task's own
    outputs of the prediction (a regression's ``"lower"``/``"upper"``, an anomaly
    stream's ``"top"`` channels).

    >>> msgpack.unpackb(encode_label_request("gw-1-ab", 4, 1.5, 2, 0.5, 600))
    {'req': 'gw-1-ab', 'seq': 4, 'ts': 1.5, 'y_hat': 2, 'score': 0.5, 'ttl': 600.0}
    >>> msgpack.unpackb(encode_label_request("gw-1-ab", 4, 1.5, {"a": True}, 0.5, 600, ["a", "b"]))["labels"]
    ['a', 'b']
    """
    message = {
        "req": req,
        "seq": _int("seq", seq),
        "ts": _float("ts", ts),
        "y_hat": y_hat,
        "score": score,
        "ttl": _float("ttl", ttl),
    }
    if labels is not None:
        message["labels"] = list(labels)
    if extra:
        message.update(extra)
    return _pack(message)


def encode_status(status: Mapping[str, Any]) -> bytes:
    """The retained status message (counters, streams, memory, versions).

    >>> msgpack.unpackb(encode_status({"state": "online", "memory": np.int64(1024)}))
    {'state': 'online', 'memory': 1024}
    """
    if not isinstance(status, Mapping):
        raise TypeError(f"status must be a mapping, got {type(status).__name__}")
    return _pack(dict(status))


OFFLINE_STATUS = encode_status({"state": "offline"})
"""The last-will payload the broker publishes on the status topic if the gateway dies."""


#: The encodings an output topic may have: msgpack (the default, as everything the
#: gateway reads) or JSON, for Node-RED flows and Home Assistant templates.
OUTPUT_ENCODINGS = ("msgpack", "json")


def as_json(payload: bytes) -> bytes:
    """A msgpack output message as compact UTF-8 JSON, the same fields and values; a
    float that is not finite (a score of NaN) becomes ``null``, which JSON can say.

    >>> as_json(encode_prediction(4, 1.5, True, float("nan"), False))
    b'{"seq":4,"ts":1.5,"y":true,"score":null,"query":false}'
    """
    return json.dumps(_json_safe(msgpack.unpackb(payload, raw=False)), separators=(",", ":"),
                      allow_nan=False, ensure_ascii=False).encode("utf-8")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    if isinstance(value, bytes):
        raise TypeError("an output message with bytes has no JSON form")
    return value
