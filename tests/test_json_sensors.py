"""JSON sensor payloads on the data topic: captured-style payloads of the common
firmwares replayed through the pipeline, the msgpack/JSON split, limits and rejects.

The payloads are written the way each firmware publishes them (field names, nesting,
the strings and bools they carry); see docs/integrations.md for the topic templates.
"""

from __future__ import annotations

import json
import math

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from firmware_bridge.service.config import load_config
from firmware_bridge.pipeline import Pipeline
from firmware_bridge.wire import (
    DEFAULT_LIMITS,
    DataMessage,
    JsonFields,
    Limits,
    Reject,
    Topics,
    decode_json,
    decode_payload,
    encode_data,
    encode_label,
    looks_like_json,
    parse_message,
    sensor_object,
)

# Zigbee2MQTT: one object per device on zigbee2mqtt/<friendly name>.
Z2M_MOTION = (b'{"battery":97,"humidity":48.12,"illuminance":35,"illuminance_lux":35,'
              b'"linkquality":120,"occupancy":false,"temperature":21.4,"voltage":3005,'
              b'"update":{"installed_version":587765297,"latest_version":587765297,'
              b'"state":"idle"},"update_available":false}')
# Tasmota: tele/<topic>/SENSOR, one nested object per sensor, a string Time and unit.
TASMOTA = (b'{"Time":"2024-05-01T10:00:00","AM2301":{"Temperature":21.4,"Humidity":48.1,'
           b'"DewPoint":10.1},"BH1750":{"Illuminance":312},"TempUnit":"C"}')
# Shelly Gen2: <id>/status/temperature:0 and <id>/status/switch:0, one component each.
SHELLY_TEMPERATURE = b'{"id":0,"tC":21.4,"tF":70.5}'
SHELLY_SWITCH = (b'{"id":0,"source":"button","output":true,"apower":48.2,"voltage":231.4,'
                 b'"current":0.213,"aenergy":{"total":1234.5,"by_minute":[1.0,2.0,3.0],'
                 b'"minute_ts":1714557600},"temperature":{"tC":41.2,"tF":106.2}}')


def _predictions(outputs):
    return [msgpack.unpackb(o.payload) for o in outputs if o.topic.endswith("/prediction")]


def test_zigbee2mqtt_object_with_a_label_field_is_predicted_and_learned():
    topics = Topics(data_template="zigbee2mqtt/{stream}")
    fields = JsonFields(label_field="occupancy", ignore=("linkquality", "battery", "voltage"))
    pipeline = Pipeline("pa", {"capacity": 16}, topics=topics, label_policy="all",
                        json_fields=fields)
    out = pipeline.handle("zigbee2mqtt/hall_motion", Z2M_MOTION, 1714557600.0)
    (prediction,) = _predictions(out)
    # Numbered and stamped by the gateway: the object has neither seq nor ts.
    assert prediction["seq"] == 0 and prediction["ts"] == 1714557600.0
    learner = pipeline.learner("hall_motion")
    assert sorted(learner.channels.names) == sorted(
        ["humidity", "illuminance", "illuminance_lux", "temperature",
         "update.installed_version", "update.latest_version"])
    # The user's label (occupancy: false) reached the learner as it was sent.
    assert pipeline.counters()["learned"] == 1
    assert pipeline.metrics("hall_motion").n == 1
    out = pipeline.handle("zigbee2mqtt/hall_motion", Z2M_MOTION, 1714557660.0)
    assert _predictions(out)[0]["seq"] == 1


def test_tasmota_nested_objects_flatten_to_dotted_channels():
    message = parse_message("tele/kitchen/SENSOR", TASMOTA,
                            Topics(data_template="tele/{stream}/SENSOR"))
    assert isinstance(message, DataMessage)
    assert message.stream == "kitchen"
    assert message.channels == {"AM2301.Temperature": 21.4, "AM2301.Humidity": 48.1,
                                "AM2301.DewPoint": 10.1, "BH1750.Illuminance": 312.0}
    assert message.seq == -1 and math.isnan(message.ts) and message.y is None


def test_shelly_component_objects_with_a_switch_channel():
    topics = Topics(data_template="{stream}/status/switch:0")
    plain = parse_message("shellyplus1pm-a8032ab1/status/switch:0", SHELLY_SWITCH, topics)
    assert "output" not in plain.channels  # a bool is not a channel by default
    assert plain.channels["aenergy.total"] == 1234.5 and plain.channels["temperature.tC"] == 41.2
    assert "aenergy.by_minute" not in plain.channels  # arrays are not channels
    switched = parse_message("shellyplus1pm-a8032ab1/status/switch:0", SHELLY_SWITCH, topics,
                             json_fields=JsonFields(bool_channels=("output",)))
    assert switched.channels["output"] == 1.0
    temperature = parse_message("shellyht-1/status/temperature:0", SHELLY_TEMPERATURE,
                                Topics(data_template="{stream}/status/temperature:0"))
    assert temperature.channels == {"id": 0.0, "tC": 21.4, "tF": 70.5}


def test_tasmota_on_off_strings_as_bool_channels_and_bad_switch_values():
    fields = JsonFields(bool_channels=("POWER",))
    on = sensor_object({"POWER": "ON", "ENERGY": {"Power": 12}}, "plug", json_fields=fields)
    off = sensor_object({"POWER": "OFF"}, "plug", json_fields=fields)
    assert on.channels == {"POWER": 1.0, "ENERGY.Power": 12.0} and off.channels == {"POWER": 0.0}
    bad = sensor_object({"POWER": "TOGGLE"}, "plug", json_fields=fields)
    assert bad.reason == "bad_value_type" and "'POWER'" in bad.detail and "TOGGLE" in bad.detail


def test_json_with_seq_ts_and_ch_follows_the_msgpack_schema():
    topics = Topics()
    text = b'{"ts": 1.5, "seq": 7, "ch": {"temp": 21.5}, "y": true}'
    assert parse_message("sensors/s1/data", text, topics) == parse_message(
        "sensors/s1/data", encode_data(1.5, 7, {"temp": 21.5}, y=True), topics)
    missing = parse_message("sensors/s1/data", b'{"ts": 1.5, "ch": {}}', topics)
    assert missing.reason == "missing_field"
    # A sensor object's own seq and ts are used when present, and checked.
    message = parse_message("sensors/s1/data", b'{"seq": 4, "ts": 9.5, "t": 1}', topics)
    assert (message.seq, message.ts, message.channels) == (4, 9.5, {"t": 1.0})
    assert parse_message("sensors/s1/data", b'{"seq": -1, "t": 1}', topics).reason == (
        "bad_field_type")
    assert parse_message("sensors/s1/data", b'{"ts": "now", "t": 1}', topics).reason == (
        "bad_field_type")


def test_json_label_answers_are_read_too():
    pipeline = Pipeline("pa", {"capacity": 8})
    out = pipeline.handle("sensors/s1/data", b'{"temp": 20.5}', 0.0)
    req = msgpack.unpackb(out[1].payload)["req"]
    answer = json.dumps({"req": req, "y": True}).encode()
    assert pipeline.handle("edgelearn/s1/label", answer, 0.0) == []
    assert pipeline.counters()["learned"] == 1


@pytest.mark.parametrize("payload, reason", [
    (b'{"t": 1', "not_json"),
    (b'{"t": 1}{"t": 2}', "not_json"),
    (b'{"t": "\xff"}', "not_json"),
    (b'{', "not_json"),
    (b' [1, 2]', "not_a_map"),
    (b'{"a": ' * 10 + b'1' + b'}' * 10, "too_deep"),
    (b'{"a": ' * 2000 + b'1' + b'}' * 2000, "too_large"),
    (b'{"a":' + b"[" * 1900 + b"]" * 1900 + b"}", "too_deep"),  # past Python's recursion limit
    (b'{"s": "' + b"x" * 300 + b'"}', "too_long"),
    (b'{"v": [' + b"1," * 300 + b'1]}', "too_long"),
    (b'{"air quality": 3}', "bad_channel_name"),
    (b'{"a/b": 3}', "bad_channel_name"),
    (json.dumps({f"c{i}": i for i in range(65)}).encode(), "too_many_channels"),
])
def test_bad_json_is_a_counted_named_reject(payload, reason):
    pipeline = Pipeline("pa", {"capacity": 8})
    assert pipeline.handle("sensors/s1/data", payload, 0.0) == []
    counters = pipeline.counters()
    assert counters[reason] == 1 and counters["rejected"] == 1, counters
    result = parse_message("sensors/s1/data", payload, Topics())
    assert isinstance(result, Reject) and result.reason == reason and result.detail


def test_non_finite_and_huge_numbers_are_dropped_and_counted():
    message = parse_message("sensors/s1/data", b'{"t": NaN, "u": 1e999, "v": '
                            + b"9" * 400 + b', "w": 2}', Topics())
    assert message.channels == {"w": 2.0}
    assert sorted(message.non_finite) == ["t", "u", "v"]


def test_a_label_field_that_is_not_a_label_is_rejected():
    fields = JsonFields(label_field="state")
    result = sensor_object({"state": 0.5, "t": 1}, "s", json_fields=fields)
    assert result.reason == "bad_label" and "'state'" in result.detail
    # Absent (or null): an unlabelled reading.
    assert sensor_object({"t": 1}, "s", json_fields=fields).y is None
    nested = sensor_object({"a": {"occupied": "yes"}, "t": 1}, "s",
                           json_fields=JsonFields(label_field="a.occupied"))
    assert nested.y == "yes" and nested.channels == {"t": 1.0}


def test_json_switched_off_rejects_json():
    pipeline = Pipeline("pa", {"capacity": 8}, json_fields=JsonFields(enabled=False))
    pipeline.handle("sensors/s1/data", b'{"t": 1}', 0.0)
    assert pipeline.counters()["not_json"] == 1


def test_config_json_section_reaches_the_pipeline():
    config, errors = load_config(None, {"json.label_field": "occupancy",
                                        "json.ignore": ["battery"],
                                        "topics.data": "zigbee2mqtt/{stream}"})
    assert errors == []
    pipeline = config.make_pipeline()
    assert pipeline.json_fields == JsonFields(label_field="occupancy", ignore=("battery",))
    _, errors = load_config(None, {"json.bool_channels": "POWER"})
    assert errors == ["The 'bool_channels' parameter of [json] must be a list of non-empty "
                      "str. Got 'POWER'."]


# --- the msgpack / JSON split ---------------------------------------------------------

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64 - 1),
                     st.floats(allow_nan=False), st.text(max_size=20))
_maps = st.dictionaries(st.text(max_size=10), st.one_of(
    _scalars, st.dictionaries(st.text(max_size=10), _scalars, max_size=5)), max_size=10)


@settings(max_examples=300, deadline=None)
@given(_maps)
def test_no_msgpack_map_looks_like_json(obj):
    # Every message the gateway accepts in msgpack is a map: its first byte is a map
    # header (0x80-0x8f, 0xde, 0xdf), never '{' or JSON whitespace.
    payload = msgpack.packb(obj, use_bin_type=True)
    assert payload[0] in range(0x80, 0x90) or payload[0] in (0xDE, 0xDF)
    assert not looks_like_json(payload)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=64))
def test_payloads_that_look_like_json_were_never_valid_msgpack_messages(payload):
    # Whatever starts like JSON was, as msgpack, a lone fixint or an int with bytes
    # after it: a reject either way, so routing it to JSON loses nothing.
    if looks_like_json(payload):
        assert not isinstance(decode_payload(payload), dict)
        result = decode_json(payload)
        assert isinstance(result, (dict, Reject))


def test_decode_json_applies_the_same_limits_as_msgpack():
    limits = Limits(max_payload_bytes=64)
    assert decode_json(b'{"t": "' + b"x" * 80 + b'"}', limits).reason == "too_large"
    assert decode_json(b'{"t": 1}', DEFAULT_LIMITS) == {"t": 1}


def test_label_messages_in_msgpack_still_work_beside_json():
    pipeline = Pipeline("pa", {"capacity": 8})
    out = pipeline.handle("sensors/s1/data", encode_data(0.0, 0, {"t": 1.0}), 0.0)
    req = msgpack.unpackb(out[1].payload)["req"]
    pipeline.handle("edgelearn/s1/label", encode_label(req, False), 0.0)
    assert pipeline.counters()["learned"] == 1
