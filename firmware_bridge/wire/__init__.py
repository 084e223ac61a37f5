"""The wire: bytes <-> values, and nothing else (a room of its own).

Topics, message types, decoding with hard limits, encoding, the rules of names and
labels, the message log's file format, and their jitted kernels. Everything here is a
pure function or an immutable value; nothing touches the network, a thread or a
learner. Imports point one way: the pipeline, the service and offline replay use the
wire; the wire uses nothing of theirs.

Inbound bytes go through three steps, none of which raises to the caller:

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

from .encode import (
    OFFLINE_STATUS,
    OUTPUT_ENCODINGS,
    as_json,
    encode_batch,
    encode_batch_prediction,
    encode_data,
    encode_label,
    encode_label_request,
    encode_prediction,
    encode_status,
    prediction_fields,
    to_wire,
)
from .json_sensors import DEFAULT_JSON_FIELDS, JsonFields, decode_json, looks_like_json, sensor_object
from .limits import DEFAULT_LIMITS, Limits, bounded_unpackb, decode_payload
from .messages import (
    COUNTER_KEYS,
    REJECT_REASONS,
    DataBatch,
    DataMessage,
    LabelMessage,
    Reject,
    RejectCounters,
)
from .names import KnownNames
from .topics import INBOUND_KINDS, KINDS, Topics, check_stream_id
from .validate import (
    is_batch,
    parse_message,
    plain_reading,
    validate_batch,
    validate_data,
    validate_label,
)

__all__ = [
    "OUTPUT_ENCODINGS",
    "as_json",
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
    "DEFAULT_JSON_FIELDS",
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
