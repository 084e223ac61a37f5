"""Tests for firmware_bridge.wire: topics, limits, decoding, validation, encoding."""

from __future__ import annotations

import math

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from firmware_bridge.wire import (
    COUNTER_KEYS,
    DEFAULT_LIMITS,
    OFFLINE_STATUS,
    REJECT_REASONS,
    DataMessage,
    LabelMessage,
    Limits,
    Reject,
    RejectCounters,
    Topics,
    check_stream_id,
    decode_payload,
    encode_data,
    encode_label,
    encode_label_request,
    encode_prediction,
    encode_status,
    parse_message,
    to_wire,
    validate_data,
    validate_label,
)

TOPICS = Topics()
DATA = "sensors/s1/data"
LABEL = "edgelearn/s1/label"


def pack(obj) -> bytes:
    return msgpack.packb(obj, use_bin_type=True)


def data(**fields) -> bytes:
    message = {"ts": 1.0, "seq": 1, "ch": {"a": 1.0}}
    message.update(fields)
    return pack({k: v for k, v in message.items() if v is not _ABSENT})


_ABSENT = object()


def nested(depth: int) -> bytes:
    obj: object = 1
    for _ in range(depth):
        obj = [obj]
    return pack(obj)


# --- every reject reason is reachable and counted -----------------------------------

# reason -> (topic, payload, limits)
REACH_EVERY_REASON = {
    "unknown_topic": ("sensors/s1/other", data(), DEFAULT_LIMITS),
    "bad_stream_id": ("sensors/s 1/data", data(), DEFAULT_LIMITS),
    "too_large": (DATA, data(ch={f"c{i}": 1.0 for i in range(60)}), Limits(max_payload_bytes=100)),
    "not_msgpack": (DATA, b"\xc1", DEFAULT_LIMITS),
    "too_long": (DATA, data(note="x" * 300), DEFAULT_LIMITS),
    "too_deep": (DATA, data(meta=[[[[1]]]]), DEFAULT_LIMITS),
    "not_a_map": (DATA, pack([1.0, 1, {}]), DEFAULT_LIMITS),
    "missing_field": (DATA, data(seq=_ABSENT), DEFAULT_LIMITS),
    "bad_field_type": (DATA, data(seq="1"), DEFAULT_LIMITS),
    "too_many_channels": (DATA, data(ch={f"c{i}": 1.0 for i in range(65)}), DEFAULT_LIMITS),
    "bad_channel_name": (DATA, data(ch={"a/b": 1.0}), DEFAULT_LIMITS),
    "bad_value_type": (DATA, data(ch={"a": True}), DEFAULT_LIMITS),
    "bad_label": (LABEL, pack({"req": "gw-1-a", "y": 0.5}), DEFAULT_LIMITS),
    "bad_batch": (DATA, pack({"readings": {"ts": 1.0}}), DEFAULT_LIMITS),
    "too_many_readings": (
        DATA, pack({"readings": [msgpack.unpackb(data())] * 3}), Limits(max_batch_readings=2)
    ),
    "not_json": (DATA, b'{"temperature": 21.4,}', DEFAULT_LIMITS),
}


def test_the_table_covers_every_reason():
    assert set(REACH_EVERY_REASON) == set(REJECT_REASONS)


@pytest.mark.parametrize("reason", list(REJECT_REASONS))
def test_every_reject_reason_is_reachable_and_counted(reason):
    topic, payload, limits = REACH_EVERY_REASON[reason]
    result = parse_message(topic, payload, TOPICS, limits)
    assert isinstance(result, Reject)
    assert result.reason == reason, result.detail
    counters = RejectCounters()
    counters.count(result)
    counters.count(result)
    assert counters[reason] == 2
    assert counters.total_rejects == 2
    assert sum(counters.as_dict().values()) == 2


def test_counters_have_a_fixed_key_set():
    counters = RejectCounters()
    assert list(counters.as_dict()) == list(COUNTER_KEYS)
    assert set(COUNTER_KEYS) == set(REJECT_REASONS) | {"non_finite_values"}
    for _ in range(1000):
        counters.count(parse_message("sensors/s1/data", b"\xc1", TOPICS))
        counters.count(LabelMessage("s", "r", True))  # valid messages add no keys
    assert list(counters.as_dict()) == list(COUNTER_KEYS)
    assert counters["not_msgpack"] == 1000
    with pytest.raises(ValueError, match="unknown reject reason"):
        Reject("made_up", "")


# --- malformed inputs ---------------------------------------------------------------

MALFORMED = [
    # (description, topic, payload, expected reason, fragment of the detail)
    ("reserved byte", DATA, b"\xc1", "not_msgpack", "0xc1"),
    ("truncated map", DATA, data()[:-3], "not_msgpack", "truncated"),
    ("empty payload", DATA, b"", "not_msgpack", "truncated"),
    ("trailing bytes", DATA, data() + b"\x00", "not_msgpack", "after its first"),
    ("invalid utf-8", DATA, b"\x81\xa2\xff\xfe\x01", "not_msgpack", "UTF-8"),
    ("array as map key", DATA, b"\x81\x91\x01\x02", "not_msgpack", "map key"),
    ("map32 claiming 2**32-1 entries", DATA, b"\xdf\xff\xff\xff\xff", "too_long", "max_container_len"),
    ("str32 claiming 4 GiB", DATA, b"\xdb\xff\xff\xff\xff", "not_msgpack", "truncated"),
    ("bin over the limit", DATA, data(blob=b"x" * 257), "too_long", "a bin of 257 bytes"),
    ("oversize payload", DATA, b"\x00" * 4097, "too_large", "4097 bytes"),
    ("deep nesting", DATA, nested(50), "too_deep", "deeper than 4"),
    ("nesting beyond msgpack's stack", DATA, b"\x91" * 4000 + b"\x01", "too_deep", "deeper"),
    ("top level is an array", DATA, pack([1, 2]), "not_a_map", "got array"),
    ("top level is a str", DATA, pack("hi"), "not_a_map", "got str"),
    ("missing ts", DATA, data(ts=_ABSENT), "missing_field", "'ts'"),
    ("missing ch", DATA, data(ch=_ABSENT), "missing_field", "'ch'"),
    ("ts is a str", DATA, data(ts="now"), "bad_field_type", "'ts' must be a number, got str"),
    ("ts is a bool", DATA, data(ts=True), "bad_field_type", "got bool"),
    ("ts is NaN", DATA, data(ts=math.nan), "bad_field_type", "'ts' must be a finite number"),
    ("seq is a str", DATA, data(seq="7"), "bad_field_type", "'seq' must be an int >= 0, got str"),
    ("seq is negative", DATA, data(seq=-3), "bad_field_type", "got -3"),
    ("seq is a float", DATA, data(seq=1.0), "bad_field_type", "got float"),
    ("seq is a bool", DATA, data(seq=False), "bad_field_type", "got bool"),
    ("ch is an array", DATA, data(ch=[1.0]), "bad_field_type", "'ch' must be a map"),
    ("1,000 channel names", DATA, data(ch={f"c{i}": 1 for i in range(1000)}), "too_large", "bytes"),
    ("bool value", DATA, data(ch={"a": 1.0, "door": True}), "bad_value_type", "'door'"),
    ("str value", DATA, data(ch={"a": "1.5"}), "bad_value_type", "got str"),
    ("nil value", DATA, data(ch={"a": None}), "bad_value_type", "got nil"),
    ("array value", DATA, data(ch={"a": [1.0]}), "bad_value_type", "got array"),
    ("bin value", DATA, data(ch={"a": b"\x01"}), "bad_value_type", "got bin"),
    ("timestamp value", DATA, data(ch={"a": msgpack.Timestamp(1)}), "bad_value_type", "timestamp"),
    ("int channel key", DATA, data(ch={1: 1.0}), "bad_channel_name", "must be a str, got int"),
    ("bin channel key", DATA, data(ch={b"a": 1.0}), "bad_channel_name", "got bin"),
    ("nil channel key", DATA, data(ch={None: 1.0}), "bad_channel_name", "got nil"),
    ("float channel key", DATA, data(ch={1.5: 1.0}), "bad_channel_name", "got float"),
    ("empty channel name", DATA, data(ch={"": 1.0}), "bad_channel_name", "empty"),
    ("channel name with space", DATA, data(ch={"a b": 1.0}), "bad_channel_name", "whitespace"),
    ("channel name with tab", DATA, data(ch={"a\tb": 1.0}), "bad_channel_name", "control"),
    ("channel name with NUL", DATA, data(ch={"a\0": 1.0}), "bad_channel_name", "control"),
    ("channel name with +", DATA, data(ch={"a+": 1.0}), "bad_channel_name", "'+'"),
    ("channel name with #", DATA, data(ch={"#": 1.0}), "bad_channel_name", "'#'"),
    ("channel name with /", DATA, data(ch={"a/b": 1.0}), "bad_channel_name", "'/'"),
    ("channel name of 65 bytes", DATA, data(ch={"x" * 65: 1.0}), "bad_channel_name", "65"),
    ("33 two-byte characters", DATA, data(ch={"é" * 33: 1.0}), "bad_channel_name", "got 66"),
    ("y is a float", DATA, data(y=0.5), "bad_label", "got float"),
    ("y is an empty str", DATA, data(y=""), "bad_label", "empty"),
    ("y is a long str", DATA, data(y="x" * 65), "bad_label", "65"),
    ("y is an empty map", DATA, data(y={}), "bad_label", "at least one"),
    ("y map to non-bool", DATA, data(y={"walk": 1}), "bad_label", "must map to a bool"),
    ("y map with int key", DATA, data(y={1: True}), "bad_label", "must be str"),
    ("label is not a map", LABEL, pack(["r", True]), "not_a_map", "label message"),
    ("label without req", LABEL, pack({"y": True}), "missing_field", "'req'"),
    ("label without y", LABEL, pack({"req": "r-1"}), "missing_field", "'y'"),
    ("req is an int", LABEL, pack({"req": 5, "y": True}), "bad_field_type", "'req' must be a str"),
    ("req is an array", LABEL, pack({"req": [1], "y": True}), "bad_field_type", "'req' must be a str"),
    ("req is a map", LABEL, pack({"req": {"a": 1}, "y": True}), "bad_field_type", "'req' must be a str"),
    ("req with a slash", LABEL, pack({"req": "a/b", "y": True}), "bad_field_type", "'/'"),
    ("y is nil", LABEL, pack({"req": "r-1", "y": None}), "bad_label", "nil"),
    ("outbound topic", "edgelearn/s1/prediction", data(), "unknown_topic", "outbound prediction"),
    ("status topic", "edgelearn/status/gw", data(), "unknown_topic", "outbound status"),
    ("empty stream level", "sensors//data", data(), "bad_stream_id", "empty"),
    ("reserved stream id", "edgelearn/status/label", data(), "bad_stream_id", "reserved"),
    ("stream id of 65 bytes", f"sensors/{'s' * 65}/data", data(), "bad_stream_id", "65"),
    ("topic not a str", b"sensors/s1/data", data(), "unknown_topic", "matches no"),
    ("payload not bytes", DATA, "ts", "not_msgpack", "must be bytes"),
]


@pytest.mark.parametrize(
    "topic, payload, reason, fragment", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_malformed_input_is_rejected_with_a_reason_and_a_detail(topic, payload, reason, fragment):
    result = parse_message(topic, payload, TOPICS)
    assert isinstance(result, Reject), result
    assert result.reason == reason, result.detail
    assert fragment in result.detail


def test_thousand_channels_are_too_many_when_the_payload_fits():
    limits = Limits(max_payload_bytes=65536, max_container_len=2000)
    result = parse_message(DATA, data(ch={f"c{i}": 1 for i in range(1000)}), TOPICS, limits)
    assert result == Reject("too_many_channels", "'ch' has 1000 channels, the limit is 64")
    narrow = Limits(max_payload_bytes=65536)  # the decoder stops the map first
    assert parse_message(DATA, data(ch={f"c{i}": 1 for i in range(1000)}), TOPICS, narrow).reason == "too_long"


def test_payload_size_bound_is_inclusive():
    payload = data(pad="x" * 40)
    exact = Limits(max_payload_bytes=len(payload))
    assert isinstance(parse_message(DATA, payload, TOPICS, exact), DataMessage)
    assert parse_message(DATA, payload, TOPICS, Limits(max_payload_bytes=len(payload) - 1)).reason == "too_large"


def test_depth_bound_is_inclusive():
    limits = Limits(max_depth=4)
    assert not isinstance(decode_payload(nested(4), limits), Reject)
    assert decode_payload(nested(5), limits).reason == "too_deep"
    assert validate_data(decode_payload(data(), Limits(max_depth=2)), "s").seq == 1


def test_channel_limit_is_inclusive():
    exactly = data(ch={f"c{i}": float(i) for i in range(64)})
    assert len(parse_message(DATA, exactly, TOPICS).channels) == 64


# --- non-finite values --------------------------------------------------------------


def test_non_finite_values_drop_the_channel_not_the_message():
    payload = data(ch={"a": 1.5, "b": math.nan, "c": math.inf, "d": -math.inf, "e": 2})
    result = parse_message(DATA, payload, TOPICS)
    assert isinstance(result, DataMessage)
    assert result.channels == {"a": 1.5, "e": 2.0}
    assert type(result.channels["e"]) is float
    assert result.non_finite == ("b", "c", "d")
    counters = RejectCounters()
    counters.count(result)
    assert counters["non_finite_values"] == 3 and counters.total_rejects == 0


def test_all_non_finite_still_passes_with_no_channels():
    result = parse_message(DATA, data(ch={"a": math.nan, "b": math.inf}), TOPICS)
    assert isinstance(result, DataMessage)
    assert result.channels == {} and result.non_finite == ("a", "b")


def test_float32_nan_from_firmware_is_non_finite():
    # Microcontrollers often send float32; msgpack marks it 0xca.
    payload = b"\x83\xa2ts\x01\xa3seq\x02\xa2ch\x81\xa1t\xca\x7f\xc0\x00\x00"
    result = parse_message(DATA, payload, TOPICS)
    assert result.channels == {} and result.non_finite == ("t",)


# --- valid messages -----------------------------------------------------------------


def test_valid_data_message():
    payload = pack({"ts": 17, "seq": 2**64 - 1, "ch": {"température": -3, "ünï": 0.25}, "fw": "1.2"})
    result = parse_message("sensors/pump-3/data", payload, TOPICS)
    assert result == DataMessage(
        "pump-3", 17.0, 2**64 - 1, {"température": -3.0, "ünï": 0.25}, None, ()
    )


@pytest.mark.parametrize(
    "y", [True, False, 0, 3, -1, 2**63, "walking", "sitting down", {"a": True, "b": False}]
)
def test_valid_labels(y):
    assert parse_message(DATA, data(y=y), TOPICS).y == y
    assert parse_message(LABEL, encode_label("gw-1-ab", y), TOPICS) == LabelMessage("s1", "gw-1-ab", y)


def test_nil_y_in_data_means_no_label():
    assert parse_message(DATA, data(y=None), TOPICS).y is None


def test_empty_channel_map_is_valid():
    assert parse_message(DATA, data(ch={}), TOPICS).channels == {}


def test_bytes_like_payloads_are_accepted():
    for payload in (bytearray(data()), memoryview(data())):
        assert isinstance(parse_message(DATA, payload, TOPICS), DataMessage)


# --- encoders -----------------------------------------------------------------------


def test_prediction_round_trip_with_numpy_values():
    payload = encode_prediction(np.uint32(5), np.float32(1.5), np.int64(2), np.float64(0.75), np.bool_(True))
    decoded = msgpack.unpackb(payload)
    assert decoded == {"seq": 5, "ts": 1.5, "y": 2, "score": 0.75, "query": True}
    assert [type(decoded[k]) for k in ("seq", "ts", "y", "score", "query")] == [int, float, int, float, bool]


@pytest.mark.parametrize(
    "y", [True, 3, "walking", {"a": True, "b": False}, {np.str_("a"): np.bool_(False)}, None]
)
def test_label_request_round_trip(y):
    payload = encode_label_request("gw-1-ab", 9, 2.5, y, np.array([0.1, 0.9]), 300)
    decoded = msgpack.unpackb(payload)
    assert decoded == {
        "req": "gw-1-ab",
        "seq": 9,
        "ts": 2.5,
        "y_hat": to_wire(y),
        "score": [0.1, 0.9],
        "ttl": 300.0,
    }


def test_status_round_trip_and_offline_will():
    status = {
        "state": "online",
        "counters": RejectCounters().as_dict(),
        "streams": {"s1": {"memory": np.int64(4096), "seen": 10}},
        "versions": ("0.1.0",),
    }
    decoded = msgpack.unpackb(encode_status(status))
    assert decoded["streams"] == {"s1": {"memory": 4096, "seen": 10}}
    assert decoded["versions"] == ["0.1.0"]
    assert decoded["counters"]["too_large"] == 0
    assert msgpack.unpackb(OFFLINE_STATUS) == {"state": "offline"}


def test_inbound_encoders_round_trip_through_the_validator():
    payload = encode_data(np.float64(3.0), np.int64(4), {"a": np.float32(0.5)}, y={"x": True})
    assert parse_message(DATA, payload, TOPICS) == DataMessage("s1", 3.0, 4, {"a": 0.5}, {"x": True}, ())


def test_encoders_refuse_values_msgpack_would_garble():
    with pytest.raises(TypeError, match="'seq' must be an int"):
        encode_prediction(1.5, 0.0, 1, 0.5, False)
    with pytest.raises(TypeError, match="'seq' must be an int"):
        encode_prediction(True, 0.0, 1, 0.5, False)
    with pytest.raises(TypeError, match="'ts' must be a number"):
        encode_label_request("r", 1, "now", 1, 0.5, 10)
    with pytest.raises(TypeError, match="cannot put a object"):
        encode_prediction(1, 0.0, object(), 0.5, False)
    with pytest.raises(TypeError, match="mapping"):
        encode_status([("state", "online")])


def test_to_wire_makes_plain_python():
    import enum

    class Kind(str, enum.Enum):
        A = "a"

    converted = to_wire({"k": Kind.A, "f": np.float64(1.0), "t": (1, np.int8(2))})
    assert converted == {"k": "a", "f": 1.0, "t": [1, 2]}
    assert type(converted["k"]) is str and type(converted["f"]) is float


# --- topics -------------------------------------------------------------------------

CUSTOM = Topics(
    data_template="plant/{stream}/raw",
    prediction_template="ml/out/{stream}/pred",
    label_request_template="ml/out/{stream}/ask",
    label_template="ml/in/{stream}",
    status_template="ml/gw/{gateway}/status",
)


@pytest.mark.parametrize("topics", [TOPICS, CUSTOM], ids=["default", "custom"])
@pytest.mark.parametrize("kind", ["data", "prediction", "label_request", "label", "status"])
@pytest.mark.parametrize("ident", ["s1", "pump-3", "ünï", "a.b_c", "x" * 64])
def test_topic_build_parse_round_trip(topics, kind, ident):
    topic = getattr(topics, kind)(ident)
    assert topics.parse(topic) == (kind, ident)
    # The subscription filter for the kind matches the topic level by level.
    pattern = topics.filter(kind).split("/")
    assert len(pattern) == len(topic.split("/"))
    assert all(p in ("+", level) for p, level in zip(pattern, topic.split("/")))


def test_custom_topics_drive_parse_message():
    result = parse_message("plant/boiler/raw", data(), CUSTOM)
    assert isinstance(result, DataMessage) and result.stream == "boiler"
    assert parse_message("sensors/boiler/data", data(), CUSTOM).reason == "unknown_topic"
    assert CUSTOM.inbound_filters() == ("plant/+/raw", "ml/in/+")
    assert CUSTOM.reserved_streams == frozenset() and CUSTOM.reserved_gateways == frozenset()


def test_parse_rejects_near_misses():
    for topic in ["sensors/s1", "sensors/s1/data/x", "/sensors/s1/data", "Sensors/s1/data", ""]:
        assert TOPICS.parse(topic) is None


def test_building_refuses_ids_that_break_topics():
    for bad in ["", "a/b", "+", "#", "a b", "a\0"]:
        with pytest.raises(ValueError, match="stream id"):
            TOPICS.prediction(bad)
    with pytest.raises(ValueError, match="gateway id is reserved"):
        TOPICS.status("label")


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"data_template": "sensors/data"}, "must contain {stream} exactly once"),
        ({"data_template": "sensors/{stream}/{stream}"}, "exactly once"),
        ({"data_template": "sensors/{gateway}/data"}, "{stream}"),
        ({"status_template": "status/{stream}"}, "{gateway}"),
        ({"data_template": "sensors/{stream}/{x}"}, "no other braces"),
        ({"data_template": "sensors/+/{stream}"}, "wildcard"),
        ({"data_template": "sensors/#"}, "wildcard"),
        ({"data_template": "sensors/{stream}\0"}, "NUL"),
        ({"data_template": "$SYS/{stream}"}, "'$'"),
        ({"data_template": "sensors/s{stream}/data"}, "whole topic level"),
        ({"data_template": ""}, "non-empty str"),
        ({"data_template": None}, "non-empty str"),
        ({"label_template": "sensors/{stream}/data"}, "must not match the same topics"),
        ({"prediction_template": "sensors/{stream}/data"}, "'data_template' and 'prediction_template'"),
    ],
)
def test_template_errors_are_clear(kwargs, fragment):
    with pytest.raises(ValueError, match="parameters? of Topics") as caught:
        Topics(**kwargs)
    assert fragment in str(caught.value)


def test_overlapping_templates_reserve_ids_instead_of_colliding():
    topics = Topics(data_template="a/{stream}/x", label_template="a/b/{stream}")
    assert topics.reserved_streams == {"b", "x", "status"}  # "status" from the defaults
    assert topics.parse("a/b/x") is not None  # reported as a reserved id, not unknown
    assert parse_message("a/b/x", data(), topics).reason == "bad_stream_id"
    assert parse_message("a/s1/x", data(), topics).stream == "s1"
    assert parse_message("a/b/s1", encode_label("r-1", True), topics).stream == "s1"


def test_topics_are_values():
    assert Topics() == Topics() and hash(Topics()) == hash(Topics())
    assert Topics() != CUSTOM
    with pytest.raises(AttributeError):
        TOPICS.data_template = "x/{stream}"


# --- limits and names ---------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"max_payload_bytes": 0}, ValueError),
        ({"max_channels": -1}, ValueError),
        ({"max_depth": 1}, ValueError),
        ({"max_string_bytes": 1.5}, TypeError),
        ({"max_container_len": True}, TypeError),
        ({"max_channel_name_bytes": 300}, ValueError),
        ({"max_channels": 300}, ValueError),
    ],
)
def test_limits_are_checked(kwargs, error):
    with pytest.raises(error, match="parameter of Limits"):
        Limits(**kwargs)


def test_stream_id_rules():
    assert check_stream_id("pump-3") is None
    assert check_stream_id("status") is None  # reserved only with a topic layout
    assert check_stream_id("status", topics=TOPICS).reason == "bad_stream_id"
    assert check_stream_id("x" * 65).reason == "bad_stream_id"
    assert check_stream_id("x" * 65, Limits(max_stream_id_bytes=65)) is None
    assert check_stream_id(None).detail == "stream id must be a str, got nil"


def test_details_do_not_carry_attacker_sized_strings():
    long_name = "\u202e" + "x" * 200
    result = validate_data({"ts": 1, "seq": 1, "ch": {long_name: 1}}, "s", Limits(max_channel_name_bytes=250))
    assert result.reason == "bad_channel_name"
    assert len(result.detail) < 120


# --- properties ---------------------------------------------------------------------


def within_limits(obj, limits: Limits, depth: int = 1) -> bool:
    if isinstance(obj, (list, dict)):
        if depth > limits.max_depth or len(obj) > limits.max_container_len:
            return False
        items = list(obj.keys()) + list(obj.values()) if isinstance(obj, dict) else obj
        return all(within_limits(item, limits, depth + 1) for item in items)
    if isinstance(obj, str):
        return len(obj.encode("utf-8")) <= limits.max_string_bytes
    if isinstance(obj, bytes):
        return len(obj) <= limits.max_string_bytes
    return True


def check_parse_result(result, limits: Limits) -> None:
    assert isinstance(result, (DataMessage, LabelMessage, Reject))
    if isinstance(result, Reject):
        assert result.reason in REJECT_REASONS and isinstance(result.detail, str)
    elif isinstance(result, DataMessage):
        assert len(result.channels) + len(result.non_finite) <= limits.max_channels
        assert all(type(v) is float and math.isfinite(v) for v in result.channels.values())
        assert all(check_stream_id(name, Limits(max_stream_id_bytes=limits.max_channel_name_bytes)) is None
                   for name in result.channels)


SMALL_LIMITS = Limits(max_payload_bytes=512, max_channels=8, max_container_len=16, max_string_bytes=64,
                      max_channel_name_bytes=16, max_label_bytes=16, max_request_id_bytes=16, max_depth=3)

msgpack_ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
scalars = (
    st.none()
    | st.booleans()
    | msgpack_ints
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=80)
    | st.binary(max_size=80)
)
msgpackable = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=20)
    | st.dictionaries(st.text(max_size=20) | msgpack_ints | st.binary(max_size=4), children, max_size=20),
    max_leaves=60,
)


def mostly(valid, invalid):
    """``valid`` four times in five; ``|`` would flatten the branches and weigh them alike."""
    return st.integers(0, 4).flatmap(lambda k: invalid if k == 0 else valid)


# Valid-looking values most of the time, so the properties also see accepted messages.
names = st.text(
    alphabet=st.characters(blacklist_categories=("Cc", "Cf", "Cs", "Co", "Cn", "Zs", "Zl", "Zp"),
                           blacklist_characters="/+#"),
    min_size=1,
    max_size=20,
)
labels = st.booleans() | msgpack_ints | names | st.dictionaries(names, st.booleans(), min_size=1, max_size=5)
data_like = st.fixed_dictionaries(
    {
        "ts": mostly(st.floats(allow_nan=False, allow_infinity=False) | st.integers(0, 2**40), scalars),
        "seq": mostly(st.integers(0, 2**64 - 1), scalars),
        "ch": mostly(
            st.dictionaries(
                mostly(names, scalars.filter(lambda k: k == k)),  # NaN keys never compare equal
                mostly(st.floats() | msgpack_ints, scalars),
                max_size=20,
            ),
            scalars,
        ),
    },
    optional={"y": mostly(labels, msgpackable), "extra": msgpackable},
)
label_like = st.fixed_dictionaries({"req": mostly(names, scalars), "y": mostly(labels, msgpackable)})
topic_like = st.sampled_from([DATA, LABEL, "sensors/s 1/data", "edgelearn/s1/prediction", "x"]) | st.text(max_size=30)

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(payload=st.binary(max_size=600), topic=topic_like)
def test_arbitrary_bytes_never_escape_the_decoder(payload, topic):
    for limits in (DEFAULT_LIMITS, SMALL_LIMITS):
        decoded = decode_payload(payload, limits)
        assert isinstance(decoded, Reject) or within_limits(decoded, limits)
        check_parse_result(parse_message(topic, payload, TOPICS, limits), limits)


@FAST
@given(obj=msgpackable | data_like | label_like, topic=st.sampled_from([DATA, LABEL]))
def test_arbitrary_msgpack_objects_give_a_message_or_a_reject(obj, topic):
    payload = msgpack.packb(obj, use_bin_type=True)
    for limits in (DEFAULT_LIMITS, SMALL_LIMITS):
        decoded = decode_payload(payload, limits)
        assert isinstance(decoded, Reject) or within_limits(decoded, limits)
        check_parse_result(parse_message(topic, payload, TOPICS, limits), limits)
        # Cutting the payload anywhere never raises either.
        check_parse_result(parse_message(topic, payload[: len(payload) // 2], TOPICS, limits), limits)


@FAST
@given(obj=data_like)
def test_data_validation_agrees_with_the_rules(obj):
    result = validate_data(obj, "s")
    ch = obj["ch"]
    ts, seq = obj["ts"], obj["seq"]
    rules_hold = (
        isinstance(ts, (int, float)) and not isinstance(ts, bool) and math.isfinite(ts)
        and isinstance(seq, int) and not isinstance(seq, bool) and seq >= 0
        and isinstance(ch, dict) and len(ch) <= 64
        and all(check_stream_id(k) is None for k in ch)
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in ch.values())
    )
    if not rules_hold:
        assert isinstance(result, Reject)
    elif isinstance(result, Reject):
        assert result.reason == "bad_label"
    else:
        assert set(result.channels) | set(result.non_finite) == set(ch)
        assert all(math.isfinite(float(ch[k])) != (k in result.non_finite) for k in ch)


# --- the example configuration ------------------------------------------------------


def test_example_config_matches_the_code(tmp_path):
    import inspect
    import pathlib
    import tomllib

    from firmware_bridge.pipeline.pending import PendingLabels
    from firmware_bridge.service.recorder import LogWriter

    path = pathlib.Path(__file__).resolve().parent.parent / "configs" / "gateway.toml"
    config = tomllib.loads(path.read_text())
    topics = Topics(**{f"{kind}_template": t for kind, t in config["topics"].items()})
    assert topics == Topics()
    assert Limits(**config["limits"]) == DEFAULT_LIMITS
    # [labels] also says how answers arrive (own_session, max_answers_per_second): the
    # gateway's, not the table's.
    table_keys = inspect.signature(PendingLabels).parameters
    labels = PendingLabels(**{k: v for k, v in config["labels"].items() if k in table_keys},
                           id_prefix=config["gateway"]["id"])
    assert labels.recent_capacity == labels.capacity
    recorder = dict(config["recorder"])
    recorder.pop("enabled")
    recorder["directory"] = tmp_path
    recorder["max_files"] = recorder["max_files"] or None
    assert inspect.signature(LogWriter).parameters["max_bytes"].default == recorder["max_bytes"]
    LogWriter(**recorder).close()
    topics.status(config["gateway"]["id"])  # not a reserved gateway id


def test_name_verdicts_are_cached_only_for_short_strings():
    from firmware_bridge.wire import names

    names._str_name_problem.cache_clear()
    for i in range(50):
        names.name_problem("x" * 300 + str(i), 65535)  # long stream ids from topics
        names.name_problem(["not", "hashable"], 64)
    assert names._str_name_problem.cache_info().currsize == 0
    assert names.name_problem("co2", 64) is None
    assert names._str_name_problem.cache_info().currsize == 1
