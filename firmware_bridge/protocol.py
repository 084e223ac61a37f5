"""The wire protocol: topic layout, message schemas, decoding with hard limits.

Everything here is a pure function or an immutable value; nothing touches the
network. Inbound bytes go through three steps, none of which raises to the caller:

1. :func:`decode_payload` checks the payload size, then unpacks it with msgpack's own
   length limits (``max_str_len``, ``max_bin_len``, ``max_ext_len``,
   ``max_array_len``, ``max_map_len``, all from :class:`Limits`), then checks the
   nesting depth;
2. :func:`validate_data` / :func:`validate_label` check the schema and build a
   :class:`DataMessage` / :class:`LabelMessage`;
3. anything wrong gives a :class:`Reject` whose ``reason`` is one of
   :data:`REJECT_REASONS` (the counter names the status message reports) and whose
   ``detail`` names the field, what it must be and what arrived.

:func:`parse_message` does all of it from an MQTT topic and payload.

Inbound schemas (docs/protocol.md has them all, with examples)::

    data   {"ts": number, "seq": int >= 0, "ch": {name: number, ...}, "y"?: label}
    batch  {"readings": [data, ...]}  (on the data topic; 1 to max_batch_readings)
    label  {"req": request id (str), "y": label}

Outbound (:func:`encode_prediction`, :func:`encode_label_request`)::

    prediction     {"seq", "ts", "y": predicted label, "score", "query": bool}
    (to a batch)   {"predictions": [prediction, ...]}  (its accepted readings, in order)
    label_request  {"req", "seq", "ts", "y_hat", "score", "ttl", "labels"?: [name, ...]}

(``"labels"``: multi-label streams only, the label names the learner knows.)

A batch carries several readings of one stream (a sensor hub, a high-rate sensor) in
one message: :func:`validate_batch` checks the batch itself (a bad ``"readings"``
rejects the whole message) and then each reading as a data message on its own (a bad
reading is rejected and counted by its reason; the others are kept). See
``docs/protocol.md``.

A label is a ``bool``, an ``int``, a ``str`` (printable, 1 to
``Limits.max_label_bytes`` bytes of UTF-8) or, for multi-label streams, a non-empty
map of such label names to ``bool``. Keys a message carries beyond these are ignored,
so firmware can add fields without breaking older gateways. A ``"y": nil`` in a data
message means "no label". When a map repeats a key, msgpack keeps the last value.

Channel names, stream ids and request ids follow one rule: a non-empty ``str`` of at
most N bytes of UTF-8 (N from :class:`Limits`), printable, with no whitespace and
none of ``/``, ``+``, ``#`` (they would break MQTT topics and filters if a name ever
became a topic level). Channel values are ``int`` or ``float``; ``bool`` is rejected
(firmware sending ``true`` for a reading is a bug, not the number 1). A NaN or
infinite value is not a reject: that channel is dropped from the message (a sensor
that failed reports NaN) and counted under ``"non_finite_values"``.

>>> topics = Topics()
>>> payload = encode_data(ts=1.5, seq=7, channels={"temp": 21.5, "hum": float("nan")})
>>> message = parse_message("sensors/s1/data", payload, topics)
>>> message.stream, message.seq, message.channels, message.non_finite
('s1', 7, {'temp': 21.5}, ('hum',))
>>> parse_message("sensors/s1/data", b"\\xc1", topics)
Reject(reason='not_msgpack', detail='payload is not valid msgpack (byte 0xc1 or another reserved code)')
"""

from __future__ import annotations

import functools
import json
import math
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Union

import msgpack
import numpy as np

from edgelearn.constraints import Interval, check_params

__all__ = [
    "REJECT_REASONS",
    "COUNTER_KEYS",
    "KINDS",
    "INBOUND_KINDS",
    "Topics",
    "Limits",
    "DEFAULT_LIMITS",
    "DataMessage",
    "DataBatch",
    "JsonFields",
    "looks_like_json",
    "decode_json",
    "sensor_object",
    "KnownNames",
    "LabelMessage",
    "Reject",
    "RejectCounters",
    "bounded_unpackb",
    "decode_payload",
    "validate_data",
    "validate_batch",
    "is_batch",
    "plain_reading",
    "validate_label",
    "check_stream_id",
    "parse_message",
    "encode_data",
    "encode_batch",
    "encode_label",
    "prediction_fields",
    "encode_batch_prediction",
    "encode_prediction",
    "encode_label_request",
    "encode_status",
    "OFFLINE_STATUS",
    "to_wire",
]

# --- reject reasons -----------------------------------------------------------------

REJECT_REASONS: Mapping[str, str] = types.MappingProxyType(
    {
        "unknown_topic": "the topic matches no inbound template",
        "bad_stream_id": "the stream id in the topic breaks the name rules or is reserved",
        "too_large": "the payload is longer than Limits.max_payload_bytes",
        "not_msgpack": "the payload is not exactly one well-formed msgpack object "
        "(truncated, reserved byte, trailing bytes, invalid UTF-8, array or map as a map key)",
        "too_long": "a str, bin, ext, array or map is longer than its Limits bound",
        "too_deep": "containers nest deeper than Limits.max_depth",
        "not_a_map": "the message is not a msgpack map",
        "missing_field": "a required field is absent",
        "bad_field_type": "'ts', 'seq', 'ch' or 'req' has the wrong type or value",
        "too_many_channels": "'ch' has more than Limits.max_channels entries",
        "bad_channel_name": "a channel name breaks the name rules",
        "bad_value_type": "a channel value is not an int or float (bool included)",
        "bad_label": "'y' is not a valid label",
        "bad_batch": "'readings' is not a non-empty array, or the batch also has "
        "'ts', 'seq' or 'ch'",
        "too_many_readings": "'readings' has more than Limits.max_batch_readings entries",
        "not_json": "the payload starts like a JSON object ('{') but is not one well-formed "
        "JSON object in UTF-8 (or JSON payloads are switched off)",
    }
)
"""Every reason a :class:`Reject` can carry, with what it means; these are counter names."""

COUNTER_KEYS: tuple[str, ...] = (*REJECT_REASONS, "non_finite_values")
"""The keys of :meth:`RejectCounters.as_dict`: the reject reasons, then
``"non_finite_values"`` (channel values dropped for being NaN or infinite, in messages
that were kept)."""


# --- topics -------------------------------------------------------------------------

KINDS = ("data", "prediction", "label_request", "label", "status")
INBOUND_KINDS = ("data", "label")
_STREAM_KINDS = ("data", "prediction", "label_request", "label")
_FORBIDDEN_IN_NAMES = frozenset("/+#")


def _placeholder(kind: str) -> str:
    return "{gateway}" if kind == "status" else "{stream}"


@dataclass(frozen=True)
class _Template:
    kind: str
    levels: tuple[str, ...]
    slot: int  # index of the placeholder level


def _parse_template(kind: str, template: Any) -> _Template:
    placeholder = _placeholder(kind)
    where = f"The '{kind}_template' parameter of Topics"
    if not isinstance(template, str) or not template:
        raise ValueError(f"{where} must be a non-empty str. Got {template!r}.")
    for bad, why in (("+", "a wildcard"), ("#", "a wildcard"), ("\0", "NUL")):
        if bad in template:
            raise ValueError(f"{where} must not contain {why} ({bad!r}). Got {template!r}.")
    if template.count(placeholder) != 1 or template.count("{") != 1 or template.count("}") != 1:
        raise ValueError(
            f"{where} must contain {placeholder} exactly once and no other braces. "
            f"Got {template!r}."
        )
    if template.startswith("$"):
        raise ValueError(
            f"{where} must not start with '$' (reserved for the broker). Got {template!r}."
        )
    levels = tuple(template.split("/"))
    if placeholder not in levels:
        raise ValueError(
            f"{where} must have {placeholder} as a whole topic level (between '/'), "
            f"since a '+' filter matches whole levels. Got {template!r}."
        )
    return _Template(kind, levels, levels.index(placeholder))


@dataclass(frozen=True)
class Topics:
    """The MQTT topic layout, built from templates in one place.

    Stream templates hold ``{stream}`` and the status template ``{gateway}``, exactly
    once and as a whole topic level; no wildcards. Templates may share topics only
    where a placeholder meets a literal level: the default ``edgelearn/{stream}/label``
    and ``edgelearn/status/{gateway}`` both fit ``edgelearn/status/label``. Such
    literals become reserved ids (here the stream ``status`` and the gateways
    ``prediction``, ``label_request``, ``label``) so that every topic has one meaning;
    templates that would collide for every id are an error.

    >>> topics = Topics()
    >>> topics.prediction("s1"), topics.status("gw1")
    ('edgelearn/s1/prediction', 'edgelearn/status/gw1')
    >>> topics.inbound_filters()
    ('sensors/+/data', 'edgelearn/+/label')
    >>> topics.parse("edgelearn/s1/label"), topics.parse("sensors/s1/other")
    (('label', 's1'), None)
    >>> sorted(topics.reserved_streams), sorted(topics.reserved_gateways)
    (['status'], ['label', 'label_request', 'prediction'])
    >>> topics.label("status")
    Traceback (most recent call last):
    ...
    ValueError: stream id is reserved: its topics would collide with another template, got 'status'
    >>> Topics(data_template="sensors/+/data")
    Traceback (most recent call last):
    ...
    ValueError: The 'data_template' parameter of Topics must not contain a wildcard ('+'). Got 'sensors/+/data'.
    """

    data_template: str = "sensors/{stream}/data"
    prediction_template: str = "edgelearn/{stream}/prediction"
    label_request_template: str = "edgelearn/{stream}/label_request"
    label_template: str = "edgelearn/{stream}/label"
    status_template: str = "edgelearn/status/{gateway}"
    _templates: tuple[_Template, ...] = field(init=False, repr=False, compare=False)
    reserved_streams: frozenset[str] = field(init=False, repr=False, compare=False)
    reserved_gateways: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        templates = tuple(_parse_template(k, getattr(self, f"{k}_template")) for k in KINDS)
        reserved: dict[str, set[str]] = {"stream": set(), "gateway": set()}
        for i, a in enumerate(templates):
            for b in templates[i + 1 :]:
                if len(a.levels) != len(b.levels) or any(
                    x != y and n not in (a.slot, b.slot)
                    for n, (x, y) in enumerate(zip(a.levels, b.levels))
                ):
                    continue  # no topic fits both
                if a.slot == b.slot:
                    raise ValueError(
                        f"The '{a.kind}_template' and '{b.kind}_template' parameters of "
                        f"Topics must not match the same topics. Got "
                        f"{'/'.join(a.levels)!r} and {'/'.join(b.levels)!r}."
                    )
                reserved[_placeholder(a.kind)[1:-1]].add(b.levels[a.slot])
                reserved[_placeholder(b.kind)[1:-1]].add(a.levels[b.slot])
        object.__setattr__(self, "_templates", templates)
        object.__setattr__(self, "reserved_streams", frozenset(reserved["stream"]))
        object.__setattr__(self, "reserved_gateways", frozenset(reserved["gateway"]))

    def _build(self, kind: str, ident: Any) -> str:
        template = self._templates[KINDS.index(kind)]
        problem = _name_problem(ident, 65535)
        if problem is None and ident in self._reserved(kind):
            problem = (
                "is reserved: its topics would collide with another template, "
                f"got {_show(ident)}"
            )
        if problem:
            noun = "gateway id" if kind == "status" else "stream id"
            raise ValueError(f"{noun} {problem}")
        levels = list(template.levels)
        levels[template.slot] = ident
        return "/".join(levels)

    def _reserved(self, kind: str) -> frozenset[str]:
        return self.reserved_gateways if kind == "status" else self.reserved_streams

    def data(self, stream: str) -> str:
        """The topic a sensor publishes ``stream``'s readings on."""
        return self._build("data", stream)

    def prediction(self, stream: str) -> str:
        """The topic the gateway publishes ``stream``'s predictions on."""
        return self._build("prediction", stream)

    def label_request(self, stream: str) -> str:
        """The topic the gateway asks for ``stream``'s labels on."""
        return self._build("label_request", stream)

    def label(self, stream: str) -> str:
        """The topic label answers for ``stream`` arrive on."""
        return self._build("label", stream)

    def status(self, gateway: str) -> str:
        """The retained status topic of ``gateway``."""
        return self._build("status", gateway)

    def filter(self, kind: str) -> str:
        """The subscription filter for all topics of ``kind`` (``+`` for the id).

        >>> Topics().filter("status")
        'edgelearn/status/+'
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        template = self._templates[KINDS.index(kind)]
        levels = list(template.levels)
        levels[template.slot] = "+"
        return "/".join(levels)

    def inbound_filters(self) -> tuple[str, ...]:
        """The filters the gateway subscribes to: data, then label answers."""
        return tuple(self.filter(kind) for kind in INBOUND_KINDS)

    def parse(self, topic: str) -> tuple[str, str] | None:
        """``(kind, id)`` for a topic of any kind (``id`` is the stream, or the gateway
        for ``"status"``), or ``None`` if no template fits.

        The id is not checked against the name rules (see :func:`check_stream_id`).
        A topic fits several templates only with a reserved id; then the fit whose id
        is not reserved wins, and if there is none the first fit is returned, so the
        caller reports a reserved id rather than an unknown topic.

        >>> Topics().parse("edgelearn/status/prediction")
        ('prediction', 'status')
        """
        if not isinstance(topic, str):
            return None
        levels = topic.split("/")
        first_fit = None
        for template in self._templates:
            if len(levels) != len(template.levels):
                continue
            if all(
                n == template.slot or level == expected
                for n, (level, expected) in enumerate(zip(levels, template.levels))
            ):
                fit = (template.kind, levels[template.slot])
                if fit[1] not in self._reserved(template.kind):
                    return fit
                first_fit = first_fit or fit
        return first_fit


# --- limits -------------------------------------------------------------------------


@dataclass(frozen=True)
class Limits:
    """Hard bounds on inbound messages; every count is fixed before the first message.

    ``max_string_bytes`` bounds every msgpack str, bin and ext and
    ``max_container_len`` every array and map, while decoding (msgpack refuses before
    allocating); ``max_depth`` counts container levels (a data message has 2:
    the message map and ``ch``; a batch 4: the message, ``readings``, a reading and its
    ``ch``). The other bounds apply during validation; ``max_batch_readings`` (readings
    in one batch) can bind only below ``max_container_len``, which the decoder applies
    to ``readings`` first.

    >>> Limits().max_payload_bytes
    4096
    >>> Limits(max_depth=1)
    Traceback (most recent call last):
    ...
    ValueError: The 'max_depth' parameter of Limits must be an int in [2, inf). Got 1.
    """

    max_payload_bytes: int = 4096
    max_channels: int = 64
    max_channel_name_bytes: int = 64
    max_string_bytes: int = 256
    max_container_len: int = 256
    max_depth: int = 4
    max_stream_id_bytes: int = 64
    max_label_bytes: int = 64
    max_request_id_bytes: int = 64
    max_batch_readings: int = 64

    def __post_init__(self) -> None:
        check_params("Limits", {f.name: getattr(self, f.name) for f in fields(self)},
                     self._parameter_constraints)
        for name in ("max_channel_name_bytes", "max_label_bytes", "max_request_id_bytes"):
            if getattr(self, name) > self.max_string_bytes:
                raise ValueError(
                    f"The '{name}' parameter of Limits must be <= max_string_bytes "
                    f"({self.max_string_bytes}), or valid names would fail to decode. "
                    f"Got {getattr(self, name)}."
                )
        if self.max_channels > self.max_container_len:
            raise ValueError(
                "The 'max_channels' parameter of Limits must be <= max_container_len "
                f"({self.max_container_len}). Got {self.max_channels}."
            )


# What each limit may be (edgelearn.constraints); __post_init__ adds the cross-limit
# rules. Set on the class after it is made, so it is no dataclass field.
Limits._parameter_constraints = {
    "max_payload_bytes": Interval(int, 1, None),
    "max_channels": Interval(int, 1, None),
    "max_channel_name_bytes": Interval(int, 1, None),
    "max_string_bytes": Interval(int, 1, None),
    "max_container_len": Interval(int, 1, None),
    "max_depth": Interval(int, 2, None),
    "max_stream_id_bytes": Interval(int, 1, None),
    "max_label_bytes": Interval(int, 1, None),
    "max_request_id_bytes": Interval(int, 1, None),
    "max_batch_readings": Interval(int, 1, None),
}

DEFAULT_LIMITS = Limits()


# --- messages -----------------------------------------------------------------------

Label = Union[bool, int, str, dict[str, bool]]


@dataclass(frozen=True)
class DataMessage:
    """A valid sensor reading. ``channels`` holds only finite values (as ``float``);
    ``non_finite`` names the channels dropped for being NaN or infinite."""

    stream: str
    ts: float
    seq: int
    channels: dict[str, float]
    y: Label | None = None
    non_finite: tuple[str, ...] = ()


@dataclass(frozen=True)
class DataBatch:
    """A batch of readings of one stream: ``readings`` the valid ones and
    ``rejects`` the others (as ``(index in the batch, Reject)``), both in batch order.
    The batch as a whole was well-formed; at least one of the two is non-empty."""

    stream: str
    readings: tuple[DataMessage, ...]
    rejects: tuple[tuple[int, "Reject"], ...] = ()


@dataclass(frozen=True)
class LabelMessage:
    """A label answer for the pending request ``req`` of ``stream``."""

    stream: str
    req: str
    y: Label


@dataclass(frozen=True)
class Reject:
    """A message that was dropped: ``reason`` is a key of :data:`REJECT_REASONS`,
    ``detail`` a human-readable explanation for a (rate-limited) log line."""

    reason: str
    detail: str

    def __post_init__(self) -> None:
        if self.reason not in REJECT_REASONS:
            raise ValueError(f"unknown reject reason {self.reason!r}")


class RejectCounters:
    """Counts of rejects by reason, and of dropped non-finite channel values.

    The key set is fixed (:data:`COUNTER_KEYS`), so memory is bounded whatever
    arrives. Not thread-safe: the pipeline thread counts.

    >>> counters = RejectCounters()
    >>> counters.count(Reject("too_large", "payload is 5000 bytes"))
    >>> counters.count(DataMessage("s", 0.0, 0, {}, non_finite=("a", "b")))
    >>> counters["too_large"], counters["non_finite_values"], counters.total_rejects
    (1, 2, 1)
    """

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts = dict.fromkeys(COUNTER_KEYS, 0)

    def count(self, result: DataMessage | DataBatch | LabelMessage | Reject) -> None:
        """Count one parse result: a reject by its reason, a data message by its
        dropped non-finite values, a batch as each of its readings and rejects,
        anything else not at all."""
        if isinstance(result, Reject):
            self._counts[result.reason] += 1
        elif isinstance(result, DataMessage) and result.non_finite:
            self._counts["non_finite_values"] += len(result.non_finite)
        elif isinstance(result, DataBatch):
            for reading in result.readings:
                self.count(reading)
            for _, reject in result.rejects:
                self.count(reject)

    def __getitem__(self, key: str) -> int:
        return self._counts[key]

    @property
    def total_rejects(self) -> int:
        return sum(self._counts[reason] for reason in REJECT_REASONS)

    def as_dict(self) -> dict[str, int]:
        """A copy of every counter, zeros included (a stable status schema)."""
        return dict(self._counts)


# --- decoding -----------------------------------------------------------------------


def _wire_type(value: Any) -> str:
    # Firmware authors think in msgpack types, so name those.
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bytes):
        return "bin"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, msgpack.Timestamp):
        return "timestamp"
    if isinstance(value, msgpack.ExtType):
        return "ext"
    return type(value).__name__


def _show(value: Any, width: int = 40) -> str:
    # repr escapes control characters; truncation keeps attacker-sized strings out of logs.
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _depth_exceeds(obj: Any, max_depth: int) -> bool:
    # Iterative, so no recursion limit; visits at most one node per payload byte.
    if not isinstance(obj, (list, dict)):
        return False
    stack = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return True
        children = node.values() if isinstance(node, dict) else node
        stack.extend((child, depth + 1) for child in children if isinstance(child, (list, dict)))
    return False


@functools.lru_cache(maxsize=8)
def bounded_unpackb(limits: Limits) -> Callable[[bytes], Any]:
    """``msgpack.unpackb`` bound to ``limits``' decoding bounds (msgpack refuses an
    over-long str, bin, ext, array or map before allocating it); one per Limits."""
    return functools.partial(
        msgpack.unpackb,
        raw=False,
        use_list=True,
        strict_map_key=False,
        max_str_len=limits.max_string_bytes,
        max_bin_len=limits.max_string_bytes,
        max_ext_len=limits.max_string_bytes,
        max_array_len=limits.max_container_len,
        max_map_len=limits.max_container_len,
    )


def decode_payload(payload: Any, limits: Limits = DEFAULT_LIMITS) -> Any:
    """Unpack one msgpack object within ``limits``, or return a :class:`Reject`.

    Never raises. Arrays decode as lists, str as str, bin as bytes; map keys may be of
    any scalar type (validation judges them).

    >>> decode_payload(b"\\x81\\xa1a\\x01")
    {'a': 1}
    >>> decode_payload(b"\\x91" * 10 + b"\\x01").reason
    'too_deep'
    >>> decode_payload(b"\\x81\\xa1a").detail
    'payload is not valid msgpack (truncated)'
    """
    if not isinstance(payload, (bytes, bytearray, memoryview)):
        return Reject("not_msgpack", f"payload must be bytes, got {type(payload).__name__}")
    size = payload.nbytes if isinstance(payload, memoryview) else len(payload)
    if size > limits.max_payload_bytes:
        return Reject(
            "too_large", f"payload is {size} bytes, the limit is {limits.max_payload_bytes}"
        )
    try:
        obj = bounded_unpackb(limits)(payload)
    except (msgpack.StackError, RecursionError):
        return Reject("too_deep", f"containers nest deeper than {limits.max_depth} levels")
    except msgpack.ExtraData:
        return Reject("not_msgpack", "payload has bytes after its first msgpack object")
    except UnicodeDecodeError:
        return Reject("not_msgpack", "payload has a str that is not valid UTF-8")
    except msgpack.FormatError:
        return Reject(
            "not_msgpack", "payload is not valid msgpack (byte 0xc1 or another reserved code)"
        )
    except ValueError as exc:
        text = str(exc)
        if "exceeds max_" in text:
            # msgpack says e.g. "300 exceeds max_array_len(256)"; our names are clearer.
            count, _, limit_name = text.partition(" exceeds ")
            kind = limit_name.split("(")[0].removeprefix("max_").removesuffix("_len")
            bound = (
                "max_string_bytes" if kind in ("str", "bin", "ext") else "max_container_len"
            )
            unit = "bytes" if kind in ("str", "bin", "ext") else "entries"
            article = "an" if kind in ("array", "ext") else "a"
            return Reject(
                "too_long",
                f"{article} {kind} of {count} {unit} exceeds {bound} {getattr(limits, bound)}",
            )
        if "incomplete" in text:
            return Reject("not_msgpack", "payload is not valid msgpack (truncated)")
        return Reject("not_msgpack", f"payload is not valid msgpack ({_show(text, 60)})")
    except TypeError:
        return Reject("not_msgpack", "payload has an array or map as a map key")
    except Exception as exc:  # the decoder must never raise; say what happened
        return Reject("not_msgpack", f"payload could not be decoded ({type(exc).__name__})")
    if _depth_exceeds(obj, limits.max_depth):
        return Reject("too_deep", f"containers nest deeper than {limits.max_depth} levels")
    return obj


# --- validation ---------------------------------------------------------------------


def _name_problem(value: Any, max_bytes: int) -> str | None:
    """What is wrong with ``value`` as a channel name / stream id / request id, or None."""
    if type(value) is not str:  # also keeps lists and maps (unhashable) out of the cache
        return f"must be a str, got {_wire_type(value)}"
    if len(value) > max_bytes:  # a str has at least as many UTF-8 bytes as characters
        return f"must be at most {max_bytes} bytes of UTF-8, got {len(value)}: {_show(value)}"
    if len(value) > _CACHED_NAME_CHARS:
        return _str_name_problem.__wrapped__(value, max_bytes)
    return _str_name_problem(value, max_bytes)


#: Longest name whose verdict is remembered: the cache then holds at most
#: 4096 x (256 characters + a short verdict), about 4 MB.
_CACHED_NAME_CHARS = 256


# Sensors send the same few channel names in every message: remembering the verdicts
# takes the checks off the per-message path. Bounded, so a flood of new names only
# churns it.
@functools.lru_cache(maxsize=4096)
def _str_name_problem(value: str, max_bytes: int) -> str | None:
    if not value:
        return "must not be empty"
    size = len(value.encode("utf-8"))
    if size > max_bytes:
        return f"must be at most {max_bytes} bytes of UTF-8, got {size}: {_show(value)}"
    if not value.isprintable():
        return f"must not contain control or unprintable characters, got {_show(value)}"
    for char in value:
        if char.isspace():
            return f"must not contain whitespace, got {_show(value)}"
        if char in _FORBIDDEN_IN_NAMES:
            return f"must not contain {char!r}, got {_show(value)}"
    return None


def _label_text_problem(value: str, limits: Limits) -> str | None:
    if not value:
        return "must not be empty"
    size = len(value) if len(value) > limits.max_label_bytes else len(value.encode("utf-8"))
    if size > limits.max_label_bytes:
        return f"must be at most {limits.max_label_bytes} bytes of UTF-8, got {size}"
    if not value.isprintable():
        return f"must not contain control or unprintable characters, got {_show(value)}"
    return None


def _label_problem(y: Any, limits: Limits) -> str | None:
    if isinstance(y, (bool, int)):
        return None
    if isinstance(y, str):
        problem = _label_text_problem(y, limits)
        return None if problem is None else f"'y' label {problem}"
    if isinstance(y, dict):
        if not y:
            return "'y' as a multi-label map must name at least one label"
        for name, value in y.items():
            if not isinstance(name, str):
                return f"'y' label names must be str, got {_wire_type(name)}"
            problem = _label_text_problem(name, limits)
            if problem:
                return f"'y' label name {problem}"
            if not isinstance(value, bool):
                return f"'y' label {_show(name)} must map to a bool, got {_wire_type(value)}"
        return None
    return f"'y' must be a bool, int, str or map of label name to bool, got {_wire_type(y)}"


def check_stream_id(
    stream: Any, limits: Limits = DEFAULT_LIMITS, topics: Topics | None = None
) -> Reject | None:
    """A ``bad_stream_id`` :class:`Reject` if ``stream`` breaks the name rules (or is
    reserved by ``topics``), else ``None``.

    >>> check_stream_id("pump 3")
    Reject(reason='bad_stream_id', detail="stream id must not contain whitespace, got 'pump 3'")
    """
    problem = _name_problem(stream, limits.max_stream_id_bytes)
    if problem is None and topics is not None and stream in topics.reserved_streams:
        problem = f"is reserved by the topic layout, got {_show(stream)}"
    return None if problem is None else Reject("bad_stream_id", f"stream id {problem}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate_data(obj: Any, stream: str, limits: Limits = DEFAULT_LIMITS) -> DataMessage | Reject:
    """Check a decoded data message; ``stream`` comes from the (already checked) topic.

    >>> validate_data({"ts": 1, "seq": "7", "ch": {}}, "s1").detail
    "'seq' must be an int >= 0, got str"
    >>> validate_data({"ts": 1, "seq": 7, "ch": {"on": True}}, "s1").reason
    'bad_value_type'
    """
    if not isinstance(obj, dict):
        return Reject("not_a_map", f"a data message must be a map, got {_wire_type(obj)}")
    for name in ("ts", "seq", "ch"):
        if name not in obj:
            return Reject("missing_field", f"'{name}' is missing: data needs 'ts', 'seq' and 'ch'")
    ts, seq, channels = obj["ts"], obj["seq"], obj["ch"]
    if not _is_number(ts):
        return Reject("bad_field_type", f"'ts' must be a number, got {_wire_type(ts)}")
    ts = float(ts)
    if not math.isfinite(ts):
        return Reject("bad_field_type", f"'ts' must be a finite number, got {ts}")
    if not isinstance(seq, int) or isinstance(seq, bool):
        return Reject("bad_field_type", f"'seq' must be an int >= 0, got {_wire_type(seq)}")
    if seq < 0:
        return Reject("bad_field_type", f"'seq' must be an int >= 0, got {seq}")
    if not isinstance(channels, dict):
        return Reject(
            "bad_field_type",
            f"'ch' must be a map of channel name to number, got {_wire_type(channels)}",
        )
    if len(channels) > limits.max_channels:
        return Reject(
            "too_many_channels",
            f"'ch' has {len(channels)} channels, the limit is {limits.max_channels}",
        )
    finite: dict[str, float] = {}
    non_finite: list[str] = []
    for name, value in channels.items():
        problem = _name_problem(name, limits.max_channel_name_bytes)
        if problem:
            return Reject("bad_channel_name", f"channel name {problem}")
        if not _is_number(value):
            return Reject(
                "bad_value_type",
                f"channel {_show(name)} must be an int or float, got {_wire_type(value)}",
            )
        value = float(value)
        if math.isfinite(value):
            finite[name] = value
        else:
            non_finite.append(name)
    y = obj.get("y")
    if y is not None:
        problem = _label_problem(y, limits)
        if problem:
            return Reject("bad_label", problem)
    return DataMessage(stream, ts, seq, finite, y, tuple(non_finite))


def validate_batch(obj: Any, stream: str, limits: Limits = DEFAULT_LIMITS) -> DataBatch | Reject:
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
        return Reject("not_a_map", f"a data message must be a map, got {_wire_type(obj)}")
    mixed = [name for name in ("ts", "seq", "ch") if name in obj]
    if mixed:
        return Reject(
            "bad_batch",
            "a batch carries its readings in 'readings' only, got "
            + ", ".join(repr(name) for name in mixed) + " beside it",
        )
    readings = obj.get("readings")
    if not isinstance(readings, list) or not readings:
        got = "an empty array" if readings == [] else _wire_type(readings)
        return Reject("bad_batch", f"'readings' must be a non-empty array of readings, got {got}")
    if len(readings) > limits.max_batch_readings:
        return Reject(
            "too_many_readings",
            f"'readings' has {len(readings)} readings, the limit is {limits.max_batch_readings}",
        )
    kept: list[DataMessage] = []
    rejects: list[tuple[int, Reject]] = []
    for index, reading in enumerate(readings):
        result = validate_data(reading, stream, limits)
        if isinstance(result, Reject):
            rejects.append((index, result))
        else:
            kept.append(result)
    return DataBatch(stream, tuple(kept), tuple(rejects))


def is_batch(obj: Any) -> bool:
    """Whether a decoded data-topic message is a batch (a map with ``"readings"``)."""
    return isinstance(obj, dict) and "readings" in obj


# --- the fast path ----------------------------------------------------------------------

# Value types a plain reading's channels may have as they come (bool is not one:
# type(True) is bool).
_PLAIN_NUMBERS = frozenset((float, int))
_NO_LABEL = object()


class KnownNames:
    """Channel names that passed the name rules, so a message whose names are all known
    costs one C-level subset test instead of a check per name. Bounded: it starts over
    when ``capacity`` names are known (a flood of new names only churns it).

    >>> names = KnownNames(64)
    >>> names.all_good({"temp": 1.0}), names.all_good({"a b": 1.0}), len(names)
    (True, False, 1)
    """

    __slots__ = ("_names", "_max_bytes", "capacity")

    def __init__(self, max_bytes: int, capacity: int = 4096):
        self._names: set[str] = set()
        self._max_bytes = max_bytes
        self.capacity = capacity

    def __len__(self) -> int:
        return len(self._names)

    def all_good(self, names: Any) -> bool:
        """Whether every key of ``names`` is a valid channel name."""
        known = self._names
        if known.issuperset(names):
            return True
        for name in names:
            if name not in known and _name_problem(name, self._max_bytes) is not None:
                return False
        if len(known) + len(names) > self.capacity:
            known.clear()
        known.update(names)
        return True


def plain_reading(
    obj: Any, limits: Limits, names: KnownNames
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
    if y is not None and y.__class__ is not bool and _label_problem(y, limits) is not None:
        return None
    if int in kinds:
        channels = {name: float(value) for name, value in channels.items()}
    return ts, seq, channels, y


def validate_label(obj: Any, stream: str, limits: Limits = DEFAULT_LIMITS) -> LabelMessage | Reject:
    """Check a decoded label answer; whether ``req`` is pending is the label table's job.

    >>> validate_label({"req": "gw-1-ab", "y": "walking"}, "s1")
    LabelMessage(stream='s1', req='gw-1-ab', y='walking')
    >>> validate_label({"req": "gw-1-ab", "y": 0.5}, "s1").reason
    'bad_label'
    """
    if not isinstance(obj, dict):
        return Reject("not_a_map", f"a label message must be a map, got {_wire_type(obj)}")
    for name in ("req", "y"):
        if name not in obj:
            return Reject("missing_field", f"'{name}' is missing: a label needs 'req' and 'y'")
    req, y = obj["req"], obj["y"]
    problem = _name_problem(req, limits.max_request_id_bytes)
    if problem:
        return Reject("bad_field_type", f"'req' {problem}")
    if y is None:
        return Reject("bad_label", "'y' must be a label, got nil")
    problem = _label_problem(y, limits)
    if problem:
        return Reject("bad_label", problem)
    return LabelMessage(stream, req, y)


# --- JSON sensor objects ----------------------------------------------------------------

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

    >>> looks_like_json(b'{"temperature": 21.4}'), looks_like_json(encode_data(0, 0, {}))
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
        return Reject("not_a_map", f"a JSON payload must be an object, got {_wire_type(obj)}")
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
    obj: dict, stream: str, limits: Limits = DEFAULT_LIMITS, json_fields: JsonFields | None = None
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
        return Reject("bad_field_type", f"'seq' must be an int >= 0, got {_show(seq)}")
    ts = obj.get("ts", math.nan)
    if not _is_number(ts) or ("ts" in obj and not math.isfinite(float(ts))):
        return Reject("bad_field_type", f"'ts' must be a finite number, got {_show(ts)}")
    y = None
    if fields.label_field:
        y = _json_field(obj, fields.label_field)
        if y is not None:
            problem = _label_problem(y, limits)
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
            if _is_number(value):
                number = float(value)
            elif name in switches:
                number = _switch_value(value)
                if number is None:
                    return Reject("bad_value_type", f"channel {_show(name)} is a bool channel: "
                                                    "it must be true/false or \"ON\"/\"OFF\", "
                                                    f"got {_show(value)}")
            else:
                continue  # a string, bool, array or null: not a channel
            problem = _name_problem(name, limits.max_channel_name_bytes)
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


def parse_message(
    topic: Any,
    payload: Any,
    topics: Topics,
    limits: Limits = DEFAULT_LIMITS,
    json_fields: JsonFields | None = None,
) -> DataMessage | DataBatch | LabelMessage | Reject:
    """Topic and payload to a message or a :class:`Reject`; never raises.

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
        return Reject("unknown_topic", f"topic {_show(topic, 80)} matches no inbound template")
    kind, stream = parsed
    if kind not in INBOUND_KINDS:
        return Reject("unknown_topic", f"topic {_show(topic, 80)} is an outbound {kind} topic")
    reject = check_stream_id(stream, limits, topics)
    if reject:
        return reject
    if looks_like_json(payload):
        obj = decode_json(payload, limits, json_fields)
        if isinstance(obj, Reject):
            return obj
        if kind == "data" and "ch" not in obj and "readings" not in obj:
            return sensor_object(obj, stream, limits, json_fields)
    else:
        obj = decode_payload(payload, limits)
        if isinstance(obj, Reject):
            return obj
    if kind == "data":
        if is_batch(obj):
            return validate_batch(obj, stream, limits)
        return validate_data(obj, stream, limits)
    return validate_label(obj, stream, limits)


# --- encoding -----------------------------------------------------------------------


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


def encode_prediction(seq: int, ts: float, y: Any, score: Any, query: bool) -> bytes:
    """The prediction message for one data message.

    >>> payload = encode_prediction(np.int64(4), 1.5, np.int64(2), np.float64(0.25), False)
    >>> msgpack.unpackb(payload)
    {'seq': 4, 'ts': 1.5, 'y': 2, 'score': 0.25, 'query': False}
    """
    return msgpack.packb(prediction_fields(seq, ts, y, score, query), use_bin_type=True)


def prediction_fields(seq: int, ts: float, y: Any, score: Any, query: bool) -> dict[str, Any]:
    """The prediction map of one reading, as plain values (see :func:`encode_prediction`)."""
    return {
        "seq": _int("seq", seq),
        "ts": _float("ts", ts),
        "y": to_wire(y),
        "score": to_wire(score),
        "query": bool(query),
    }


def encode_batch_prediction(predictions: list[dict[str, Any]]) -> bytes:
    """The one prediction message answering a batch: the prediction maps of its
    accepted readings, in batch order.

    >>> msgpack.unpackb(encode_batch_prediction([prediction_fields(4, 1.5, True, 0.25, False)]))
    {'predictions': [{'seq': 4, 'ts': 1.5, 'y': True, 'score': 0.25, 'query': False}]}
    """
    return msgpack.packb({"predictions": predictions}, use_bin_type=True)


def encode_label_request(
    req: str, seq: int, ts: float, y_hat: Any, score: Any, ttl: float, labels: Any = None
) -> bytes:
    """A request for the label of data message ``seq``; answers must come within ``ttl`` s.

    A multi-label stream asks for the whole label set: ``labels`` lists the label
    names its learner knows (the answer is a map of label name to bool, and may name
    others); it is left out of single-label requests.

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
