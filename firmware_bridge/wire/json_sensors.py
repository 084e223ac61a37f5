"""JSON sensor objects (Zigbee2MQTT, Tasmota, Shelly) on the data topic, read as readings."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .labels import label_problem
from .limits import DEFAULT_LIMITS, Limits
from .messages import DataMessage, Reject
from .names import name_problem
from .values import is_number, show, wire_type

# Why a JSON payload cannot be mistaken for a msgpack message: every inbound msgpack
# message (data, batch, label answer) is a map, whose first byte is 0x80-0x8f
# (fixmap), 0xde or 0xdf (map 16/32). A JSON object starts with '{' (0x7b), possibly
# after JSON whitespace (0x20, 0x09, 0x0a, 0x0d). In msgpack all of those bytes are
# positive fixints (0x00-0x7f): a payload starting with one is that lone int (not a
# map: rejected) or an int with bytes after it (not one object: rejected). Routing
# those first bytes to the JSON decoder therefore loses no valid msgpack message; only
# the name of the reject changes.
_JSON_FIRST_BYTES = frozenset(b"{ \t\r\n")


_SWITCH_TEXT = {"ON": 1.0, "OFF": 0.0, "on": 1.0, "off": 0.0, "true": 1.0, "false": 0.0}


# Integers longer than this many digits are read as floats (so one too large for a
# float is infinite, dropped as non-finite, rather than an OverflowError later).
_JSON_MAX_INT_DIGITS = 19


@dataclass(frozen=True)
class JsonFields:
    """How the data topic reads JSON objects of the sensors' own shape.

    ``enabled``
        ``False``: a JSON payload is rejected as ``"not_json"``.
    ``label_field``
        The field (dotted for nested objects) that carries the label, e.g.
        ``"occupancy"`` (Zigbee2MQTT) to learn occupancy from the other sensors; its
        value (a bool, int or str, kept as it is) is the reading's ``"y"``. Empty:
        no label in the object.
    ``bool_channels``
        Fields whose switch values (``true``/``false``, ``"ON"``/``"OFF"``) become
        channels 1.0/0.0. Other bools and strings are not channels.
    ``ignore``
        Numeric fields that are not channels (``"linkquality"``, ``"battery"``).

    >>> JsonFields(label_field="occupancy", ignore=("battery",)).ignore
    ('battery',)
    >>> JsonFields(bool_channels="contact")
    Traceback (most recent call last):
    ...
    TypeError: The 'bool_channels' parameter of JsonFields must be a tuple of str. Got 'contact'.
    """

    enabled: bool = True
    label_field: str = ""
    bool_channels: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise TypeError(f"The 'enabled' parameter of JsonFields must be a bool. "
                            f"Got {self.enabled!r}.")
        if not isinstance(self.label_field, str):
            raise TypeError(f"The 'label_field' parameter of JsonFields must be a str. "
                            f"Got {self.label_field!r}.")
        for name in ("bool_channels", "ignore"):
            value = getattr(self, name)
            if isinstance(value, list):
                value = tuple(value)
                object.__setattr__(self, name, value)
            if not isinstance(value, tuple) or not all(isinstance(v, str) for v in value):
                raise TypeError(f"The '{name}' parameter of JsonFields must be a tuple of "
                                f"str. Got {value!r}.")


DEFAULT_JSON_FIELDS = JsonFields()


def looks_like_json(payload: Any) -> bool:
    """Whether ``payload`` starts as a JSON object would (``{``, or JSON whitespace):
    no msgpack message the gateway accepts starts so (see the comment above).

    >>> looks_like_json(b'{"temperature": 21.4}'), looks_like_json(b"\\x83\\xa2ts")
    (True, False)
    """
    return (isinstance(payload, (bytes, bytearray)) and len(payload) > 0
            and payload[0] in _JSON_FIRST_BYTES)


def _json_int(text: str) -> int | float:
    return int(text) if len(text) <= _JSON_MAX_INT_DIGITS else float(text)


def _json_limits_problem(obj: Any, limits: Limits) -> Reject | None:
    # Iterative; visits each value once (at most one per payload byte).
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limits.max_depth:
            return Reject("too_deep", f"containers nest deeper than {limits.max_depth} levels")
        if len(node) > limits.max_container_len:
            kind = "a map" if isinstance(node, dict) else "an array"
            return Reject("too_long", f"{kind} of {len(node)} entries exceeds "
                                      f"max_container_len {limits.max_container_len}")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            for text in (key, value):
                if isinstance(text, str) and len(text) * 4 > limits.max_string_bytes:
                    size = len(text.encode("utf-8"))
                    if size > limits.max_string_bytes:
                        return Reject("too_long", f"a str of {size} bytes exceeds "
                                                  f"max_string_bytes {limits.max_string_bytes}")
            if isinstance(value, (dict, list)):
                stack.append((value, depth + 1))
    return None


def decode_json(
    payload: Any, limits: Limits = DEFAULT_LIMITS, json_fields: JsonFields | None = None
) -> dict | Reject:
    """Decode one JSON object within ``limits`` (the same ones as msgpack: payload
    size, str bytes, container entries, nesting), or return a :class:`Reject`.

    Never raises. Integers of more than 19 digits become floats; ``NaN`` and
    ``Infinity`` are read (and later dropped as non-finite values).

    >>> decode_json(b'{"AM2301": {"Temperature": 21.4}}')
    {'AM2301': {'Temperature': 21.4}}
    >>> decode_json(b'{"t": 1,}').reason
    'not_json'
    >>> decode_json(b'[1, 2]').reason
    'not_a_map'
    """
    if json_fields is not None and not json_fields.enabled:
        return Reject("not_json", "payload is JSON and [json] enabled = false")
    if not isinstance(payload, (bytes, bytearray)):
        return Reject("not_json", f"payload must be bytes, got {type(payload).__name__}")
    if len(payload) > limits.max_payload_bytes:
        return Reject(
            "too_large", f"payload is {len(payload)} bytes, the limit is {limits.max_payload_bytes}"
        )
    try:
        text = bytes(payload).decode("utf-8")
    except UnicodeDecodeError as exc:
        return Reject("not_json", f"payload is not valid UTF-8 (byte {exc.start})")
    try:
        obj = json.loads(text, parse_int=_json_int)
    except RecursionError:
        return Reject("too_deep", f"containers nest deeper than {limits.max_depth} levels")
    except json.JSONDecodeError as exc:
        return Reject("not_json", f"payload is not valid JSON ({exc.msg} at byte {exc.pos})")
    except (ValueError, TypeError) as exc:  # never raise to the caller
        return Reject("not_json", f"payload could not be decoded ({type(exc).__name__})")
    if not isinstance(obj, dict):
        return Reject("not_a_map", f"a JSON payload must be an object, got {wire_type(obj)}")
    return _json_limits_problem(obj, limits) or obj


def _switch_value(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    return _SWITCH_TEXT.get(value) if isinstance(value, str) else None


def _json_field(obj: dict, dotted: str) -> Any:
    node: Any = obj
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def sensor_object(
    obj: dict, stream: str, limits: Limits = DEFAULT_LIMITS, json_fields: JsonFields | None = None,
    task: str = "binary",
) -> DataMessage | Reject:
    """A sensor's own JSON object (Zigbee2MQTT, Tasmota, ...) as a data message.

    Numeric fields become channels, nested objects flatten to dotted names
    (``AM2301.Temperature``); bools, strings, arrays and nulls are not channels unless
    ``json_fields.bool_channels`` names them; ``json_fields.label_field`` is the
    label. ``"seq"`` and ``"ts"`` are optional: when absent, ``seq`` is ``-1`` and
    ``ts`` NaN, and the pipeline numbers the reading after the stream's last one and
    stamps it with its receive time. Channel names follow the name rules and the
    channel count ``Limits.max_channels``, as in msgpack.

    >>> fields = JsonFields(label_field="occupancy", ignore=("linkquality",))
    >>> m = sensor_object({"temperature": 21.4, "humidity": 48, "occupancy": False,
    ...                    "linkquality": 120, "update": {"state": "idle"}}, "hall", json_fields=fields)
    >>> m.channels, m.y, m.seq
    ({'temperature': 21.4, 'humidity': 48.0}, False, -1)
    >>> sensor_object({"Time": "2024-05-01T10:00:00", "AM2301": {"Temperature": 21.4}}, "t1").channels
    {'AM2301.Temperature': 21.4}
    >>> sensor_object({"air quality": 3}, "t1").detail
    "channel name must not contain whitespace, got 'air quality'"
    """
    fields = DEFAULT_JSON_FIELDS if json_fields is None else json_fields
    seq = obj.get("seq", -1)
    if not isinstance(seq, int) or isinstance(seq, bool) or ("seq" in obj and seq < 0):
        return Reject("bad_field_type", f"'seq' must be an int >= 0, got {show(seq)}")
    ts = obj.get("ts", math.nan)
    if not is_number(ts) or ("ts" in obj and not math.isfinite(float(ts))):
        return Reject("bad_field_type", f"'ts' must be a finite number, got {show(ts)}")
    y = None
    if fields.label_field:
        y = _json_field(obj, fields.label_field)
        if y is not None:
            problem = label_problem(y, limits, task)
            if problem:
                return Reject("bad_label", f"label field {fields.label_field!r}: {problem}")
    skip = {fields.label_field, *fields.ignore}
    switches = fields.bool_channels
    finite: dict[str, float] = {}
    non_finite: list[str] = []
    stack: list[tuple[str, dict]] = [("", obj)]
    while stack:
        prefix, node = stack.pop()
        for key, value in node.items():
            name = prefix + key
            if name in skip or (not prefix and key in ("seq", "ts")):
                continue
            if isinstance(value, dict):
                stack.append((name + ".", value))
                continue
            if is_number(value):
                number = float(value)
            elif name in switches:
                number = _switch_value(value)
                if number is None:
                    return Reject("bad_value_type", f"channel {show(name)} is a bool channel: "
                                                    "it must be true/false or \"ON\"/\"OFF\", "
                                                    f"got {show(value)}")
            else:
                continue  # a string, bool, array or null: not a channel
            problem = name_problem(name, limits.max_channel_name_bytes)
            if problem:
                return Reject("bad_channel_name", f"channel name {problem}")
            if math.isfinite(number):
                finite[name] = number
            else:
                non_finite.append(name)
            if len(finite) + len(non_finite) > limits.max_channels:
                return Reject("too_many_channels",
                              f"the object has more than {limits.max_channels} numeric fields, "
                              f"the limit is {limits.max_channels} (list the others in "
                              "[json] ignore)")
    return DataMessage(stream, float(ts), seq, finite, y, tuple(non_finite))
