"""Decoded messages checked against the schemas: data, batches, label answers, and
:func:`parse_message` from an MQTT topic and payload."""

from __future__ import annotations

import math
from typing import Any

from .json_sensors import JsonFields, decode_json, looks_like_json, sensor_object
from .labels import label_problem
from .limits import DEFAULT_LIMITS, Limits, decode_payload
from .messages import DataBatch, DataMessage, LabelMessage, Reject
from .names import KnownNames, name_problem
from .topics import INBOUND_KINDS, Topics, check_stream_id
from .values import is_number, show, wire_type


def validate_data(obj: Any, stream: str, limits: Limits = DEFAULT_LIMITS,
                  task: str = "binary") -> DataMessage | Reject:
    """Check a decoded data message; ``stream`` comes from the (already checked) topic.

    >>> validate_data({"ts": 1, "seq": "7", "ch": {}}, "s1").detail
    "'seq' must be an int >= 0, got str"
    >>> validate_data({"ts": 1, "seq": 7, "ch": {"on": True}}, "s1").reason
    'bad_value_type'
    """
    if not isinstance(obj, dict):
        return Reject("not_a_map", f"a data message must be a map, got {wire_type(obj)}")
    for name in ("ts", "seq", "ch"):
        if name not in obj:
            return Reject("missing_field", f"'{name}' is missing: data needs 'ts', 'seq' and 'ch'")
    ts, seq, channels = obj["ts"], obj["seq"], obj["ch"]
    if not is_number(ts):
        return Reject("bad_field_type", f"'ts' must be a number, got {wire_type(ts)}")
    ts = float(ts)
    if not math.isfinite(ts):
        return Reject("bad_field_type", f"'ts' must be a finite number, got {ts}")
    if not isinstance(seq, int) or isinstance(seq, bool):
        return Reject("bad_field_type", f"'seq' must be an int >= 0, got {wire_type(seq)}")
    if seq < 0:
        return Reject("bad_field_type", f"'seq' must be an int >= 0, got {seq}")
    if not isinstance(channels, dict):
        return Reject(
            "bad_field_type",
            f"'ch' must be a map of channel name to number, got {wire_type(channels)}",
        )
    if len(channels) > limits.max_channels:
        return Reject(
            "too_many_channels",
            f"'ch' has {len(channels)} channels, the limit is {limits.max_channels}",
        )
    finite: dict[str, float] = {}
    non_finite: list[str] = []
    for name, value in channels.items():
        problem = name_problem(name, limits.max_channel_name_bytes)
        if problem:
            return Reject("bad_channel_name", f"channel name {problem}")
        if not is_number(value):
            return Reject(
                "bad_value_type",
                f"channel {show(name)} must be an int or float, got {wire_type(value)}",
            )
        value = float(value)
        if math.isfinite(value):
            finite[name] = value
        else:
            non_finite.append(name)
    y = obj.get("y")
    if y is not None:
        problem = label_problem(y, limits, task)
        if problem:
            return Reject("bad_label", problem)
    return DataMessage(stream, ts, seq, finite, y, tuple(non_finite))


def validate_batch(obj: Any, stream: str, limits: Limits = DEFAULT_LIMITS,
                   task: str = "binary") -> DataBatch | Reject:
    """Check a decoded batch ``{"readings": [data, ...]}``: the batch itself (a
    :class:`Reject` for the whole message), then each reading as a data message of its
    own (:func:`validate_data`): a bad reading rejects only itself.

    >>> batch = validate_batch({"readings": [{"ts": 1, "seq": 0, "ch": {"t": 2.0}},
    ...                                      {"ts": 1, "seq": "1", "ch": {}}]}, "s1")
    >>> [r.seq for r in batch.readings], [(i, r.reason) for i, r in batch.rejects]
    ([0], [(1, 'bad_field_type')])
    >>> validate_batch({"readings": []}, "s1").detail
    "'readings' must be a non-empty array of readings, got an empty array"
    """
    if not isinstance(obj, dict):
        return Reject("not_a_map", f"a data message must be a map, got {wire_type(obj)}")
    mixed = [name for name in ("ts", "seq", "ch") if name in obj]
    if mixed:
        return Reject(
            "bad_batch",
            "a batch carries its readings in 'readings' only, got "
            + ", ".join(repr(name) for name in mixed) + " beside it",
        )
    readings = obj.get("readings")
    if not isinstance(readings, list) or not readings:
        got = "an empty array" if readings == [] else wire_type(readings)
        return Reject("bad_batch", f"'readings' must be a non-empty array of readings, got {got}")
    if len(readings) > limits.max_batch_readings:
        return Reject(
            "too_many_readings",
            f"'readings' has {len(readings)} readings, the limit is {limits.max_batch_readings}",
        )
    kept: list[DataMessage] = []
    rejects: list[tuple[int, Reject]] = []
    for index, reading in enumerate(readings):
        result = validate_data(reading, stream, limits, task)
        if isinstance(result, Reject):
            rejects.append((index, result))
        else:
            kept.append(result)
    return DataBatch(stream, tuple(kept), tuple(rejects))


def is_batch(obj: Any) -> bool:
    """Whether a decoded data-topic message is a batch (a map with ``"readings"``)."""
    return isinstance(obj, dict) and "readings" in obj


# Value types a plain reading's channels may have as they come (bool is not one:
# type(True) is bool).
_PLAIN_NUMBERS = frozenset((float, int))


_NO_LABEL = object()


def plain_reading(
    obj: Any, limits: Limits, names: KnownNames, task: str = "binary"
) -> tuple[float, int, dict[str, float], Any] | None:
    """``(ts, seq, channels, y)`` of a data message that is valid with nothing to drop
    (every channel value a finite int or float, no keys but ``ts``, ``seq``, ``ch`` and
    ``y``), or ``None``: then :func:`validate_data` gives the verdict. The gateway's
    per-message path; for those messages it gives what :func:`validate_data` would,
    and since their containers hold only scalars it also stands for the depth check.

    >>> plain_reading({"ts": 1, "seq": 2, "ch": {"t": 3}}, DEFAULT_LIMITS, KnownNames(64))
    (1.0, 2, {'t': 3.0}, None)
    >>> plain_reading({"ts": 1, "seq": 2, "ch": {"t": float("nan")}}, DEFAULT_LIMITS,
    ...               KnownNames(64)) is None
    True
    """
    if type(obj) is not dict:
        return None
    size = len(obj)
    if size == 3:
        y = None
    elif size == 4:
        y = obj.get("y", _NO_LABEL)
        if y is _NO_LABEL:
            return None
    else:
        return None
    ts = obj.get("ts")
    seq = obj.get("seq")
    channels = obj.get("ch")
    if type(seq) is not int or seq < 0 or type(channels) is not dict:
        return None
    kind = type(ts)
    if kind is int:
        try:
            ts = float(ts)
        except OverflowError:
            return None
    elif kind is not float:
        return None
    if len(channels) > limits.max_channels:
        return None
    values = channels.values()
    kinds = set(map(type, values))
    if not _PLAIN_NUMBERS.issuperset(kinds):
        return None
    try:
        # A sum is finite only if every term is (NaN and inf stay); a sum that
        # overflows sends finite values down the slow path, which is still right.
        if not (math.isfinite(ts) and math.isfinite(sum(values))):
            return None
    except OverflowError:
        return None
    if not names.all_good(channels):
        return None
    if y is not None and y.__class__ is not bool and label_problem(y, limits, task) is not None:
        return None
    if int in kinds:
        channels = {name: float(value) for name, value in channels.items()}
    return ts, seq, channels, y


def validate_label(obj: Any, stream: str, limits: Limits = DEFAULT_LIMITS,
                   task: str = "binary") -> LabelMessage | Reject:
    """Check a decoded label answer; whether ``req`` is pending is the label table's job.

    >>> validate_label({"req": "gw-1-ab", "y": "walking"}, "s1")
    LabelMessage(stream='s1', req='gw-1-ab', y='walking')
    >>> validate_label({"req": "gw-1-ab", "y": 0.5}, "s1").reason
    'bad_label'
    """
    if not isinstance(obj, dict):
        return Reject("not_a_map", f"a label message must be a map, got {wire_type(obj)}")
    for name in ("req", "y"):
        if name not in obj:
            return Reject("missing_field", f"'{name}' is missing: a label needs 'req' and 'y'")
    req, y = obj["req"], obj["y"]
    problem = name_problem(req, limits.max_request_id_bytes)
    if problem:
        return Reject("bad_field_type", f"'req' {problem}")
    if y is None:
        return Reject("bad_label", "'y' must be a label, got nil")
    problem = label_problem(y, limits, task)
    if problem:
        return Reject("bad_label", problem)
    return LabelMessage(stream, req, y)


def parse_message(
    topic: Any,
    payload: Any,
    topics: Topics,
    limits: Limits = DEFAULT_LIMITS,
    json_fields: JsonFields | None = None,
    task: str = "binary",
) -> DataMessage | DataBatch | LabelMessage | Reject:
    """Topic and payload to a message or a :class:`Reject`; never raises. ``task`` is
    the task of the stream's learner: it decides what an answer (``"y"``) may be
    (:mod:`firmware_bridge.wire.labels`).

    The topic is checked before the payload is decoded, so junk on a wrong topic
    costs nothing. A payload that :func:`looks_like_json` is decoded as JSON
    (:func:`decode_json`): on the data topic an object with ``"ch"`` or
    ``"readings"`` follows the msgpack schemas, any other object is a sensor's own
    (:func:`sensor_object`); on the label topic it is a label answer as in msgpack.

    >>> parse_message("edgelearn/s1/prediction", b"\\x80", Topics()).detail
    "topic 'edgelearn/s1/prediction' is an outbound prediction topic"
    """
    parsed = topics.parse(topic)
    if parsed is None:
        return Reject("unknown_topic", f"topic {show(topic, 80)} matches no inbound template")
    kind, stream = parsed
    if kind not in INBOUND_KINDS:
        return Reject("unknown_topic", f"topic {show(topic, 80)} is an outbound {kind} topic")
    reject = check_stream_id(stream, limits, topics)
    if reject:
        return reject
    if looks_like_json(payload):
        obj = decode_json(payload, limits, json_fields)
        if isinstance(obj, Reject):
            return obj
        if kind == "data" and "ch" not in obj and "readings" not in obj:
            return sensor_object(obj, stream, limits, json_fields, task)
    else:
        obj = decode_payload(payload, limits)
        if isinstance(obj, Reject):
            return obj
    if kind == "data":
        if is_batch(obj):
            return validate_batch(obj, stream, limits, task)
        return validate_data(obj, stream, limits, task)
    return validate_label(obj, stream, limits, task)
