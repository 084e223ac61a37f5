"""The operator's ecosystem against real parts: a mosquitto the test starts on a free
loopback port, ``mosquitto_pub``/``mosquitto_sub``, the gateway as a subprocess, an
HTTP scrape of its metrics parsed by prometheus_client's own parser, and Home
Assistant's documented discovery schema.

Without mosquitto (and its clients) these tests fail, they do not skip.
"""

from __future__ import annotations

import json
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

import msgpack
import paho.mqtt.client as paho
import pytest
from prometheus_client.parser import text_string_to_metric_families
from brokers import broker, free_port, installed, wait_until  # noqa: F401  (broker: a fixture)
from test_gateway_broker import Gateway

from firmware_bridge.service.sinks.homeassistant import HomeAssistant, sanitize

pytestmark = pytest.mark.broker

ROOT = pathlib.Path(__file__).resolve().parent.parent

Z2M_OBJECT = ('{"battery":97,"humidity":%s,"illuminance_lux":%d,"linkquality":120,'
              '"occupancy":%s,"temperature":%s,"update":{"state":"idle"}}')

# Home Assistant's documented configuration variables of the MQTT sensor and binary
# sensor platforms (home-assistant.io/integrations/sensor.mqtt and
# /integrations/binary_sensor.mqtt), of their device block and of the origin block of
# MQTT discovery (/integrations/mqtt, "Discovery messages").
HA_COMMON_KEYS = {
    "availability", "availability_mode", "availability_template", "availability_topic",
    "default_entity_id", "device", "device_class", "enabled_by_default", "encoding",
    "entity_category", "entity_picture", "expire_after", "force_update", "icon",
    "json_attributes_template", "json_attributes_topic", "name", "object_id",
    "payload_available", "payload_not_available", "platform", "qos", "state_topic",
    "unique_id", "value_template", "origin",
}
HA_KEYS = {
    "sensor": HA_COMMON_KEYS | {"last_reset_value_template", "options",
                                "suggested_display_precision", "state_class",
                                "unit_of_measurement"},
    "binary_sensor": HA_COMMON_KEYS | {"off_delay", "payload_off", "payload_on"},
}
HA_REQUIRED = {"sensor": {"state_topic"}, "binary_sensor": {"state_topic"}}
HA_DEVICE_KEYS = {"configuration_url", "connections", "hw_version", "identifiers",
                  "manufacturer", "model", "model_id", "name", "serial_number",
                  "suggested_area", "sw_version", "via_device"}
HA_ORIGIN_KEYS = {"name", "sw_version", "support_url"}
HA_STATE_CLASSES = {"measurement", "total", "total_increasing"}
HA_ENTITY_CATEGORIES = {"config", "diagnostic"}
HA_OBJECT_ID = r"[a-zA-Z0-9_-]+"


def _client_binary(name: str) -> str:
    return installed(name, "mosquitto-clients", "these tests")


class Recorder:
    """A paho client recording every message under some filters (retained or not)."""

    def __init__(self, port: int, *filters: str):
        self.messages: list[tuple[str, bytes, bool]] = []
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
        self.client.on_message = lambda c, u, m: self.messages.append(
            (m.topic, m.payload, bool(m.retain)))
        self.client.on_connect = lambda c, *a: c.subscribe([(f, 1) for f in filters])
        self.client.connect("127.0.0.1", port)
        self.client.loop_start()
        time.sleep(0.3)

    def topics(self, prefix: str = "") -> dict[str, bytes]:
        """The last payload of every topic starting with ``prefix``."""
        return {t: p for t, p, _ in list(self.messages) if t.startswith(prefix)}

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def _check_ha_config(topic: str, config: dict) -> str:
    """Hold one discovery config to HA's documented schema; return its component."""
    prefix, component, node_id, object_id, tail = topic.split("/")
    assert prefix == "homeassistant" and tail == "config"
    assert component in HA_KEYS, component
    import re
    assert re.fullmatch(HA_OBJECT_ID, node_id) and re.fullmatch(HA_OBJECT_ID, object_id)
    assert set(config) <= HA_KEYS[component], set(config) - HA_KEYS[component]
    assert HA_REQUIRED[component] <= set(config)
    assert set(config["device"]) <= HA_DEVICE_KEYS
    assert config["device"]["identifiers"] and config["unique_id"]
    assert set(config["origin"]) <= HA_ORIGIN_KEYS and config["origin"]["name"]
    if "state_class" in config:
        assert config["state_class"] in HA_STATE_CLASSES
    if "entity_category" in config:
        assert config["entity_category"] in HA_ENTITY_CATEGORIES
    assert isinstance(config["expire_after"], int) and config["expire_after"] > 0
    assert "{{ value_json." in config["value_template"]
    return component


def test_mosquitto_pub_of_a_zigbee2mqtt_object_is_predicted_and_the_integrations_answer(
    broker, tmp_path
):
    metrics_port = free_port()
    (tmp_path / "gw").mkdir()
    gateway = Gateway(tmp_path / "gw", broker.port, extra=(
        '[topics]\ndata = "zigbee2mqtt/{stream}"\n'
        '[json]\nlabel_field = "occupancy"\nignore = ["linkquality", "battery"]\n'
        "[status_json]\nenabled = true\n"
        "[homeassistant]\nenabled = true\n"
        f'[prometheus]\nenabled = true\nport = {metrics_port}\n'))
    predictions = Recorder(broker.port, "edgelearn/+/prediction", "edgelearn/+/label_request",
                           "homeassistant/#", "edgelearn/ha/#", "edgelearn/status/#")
    gateway.start()
    try:
        status_topic = "edgelearn/status/gwtest/json"
        wait_until(lambda: status_topic in predictions.topics(), 30, "the JSON status")
        # The firmware's own shape, from the command line, twice for two streams.
        pub = _client_binary("mosquitto_pub")
        n = 12
        for i in range(n):
            for device in ("hall.motion", "kitchen"):
                payload = Z2M_OBJECT % (40 + i, 30 * i, "true" if i % 2 else "false",
                                        20.0 + i / 10)
                subprocess.run([pub, "-p", str(broker.port), "-q", "1", "-t",
                                f"zigbee2mqtt/{device}", "-m", payload], check=True, timeout=10)

        def predicted(stream):
            return [msgpack.unpackb(p) for t, p, _ in list(predictions.messages)
                    if t == f"edgelearn/{stream}/prediction"]

        wait_until(lambda: len(predicted("hall.motion")) == n and len(predicted("kitchen")) == n,
                   30, "a prediction for every object")
        assert [p["seq"] for p in predicted("kitchen")] == list(range(n))  # numbered by the gateway
        assert all(isinstance(p["y"], bool) for p in predicted("kitchen"))

        # The JSON status mirror, as mosquitto_sub reads it (retained).
        def json_status():
            sub = subprocess.run([_client_binary("mosquitto_sub"), "-p", str(broker.port),
                                  "-t", status_topic, "-C", "1", "-W", "5"],
                                 capture_output=True, text=True, timeout=10)
            status = json.loads(sub.stdout)
            return status if status["counters"]["predictions"] == 2 * n else None

        status = wait_until(json_status, 30, "a JSON status counting every prediction")
        assert status["state"] == "online" and set(status["streams"]) == {"hall.motion", "kitchen"}
        # Labels from the objects were learned (policy "request": a "y" in the data is used).
        assert status["streams"]["kitchen"]["learned"] == n

        # Home Assistant discovery: retained configs, read back by a new client.
        wait_until(lambda: len([t for t in predictions.topics("homeassistant/")]) >= 13, 30,
                   "the discovery configs")
        time.sleep(1.5)
        late = Recorder(broker.port, "homeassistant/#", "edgelearn/ha/#")
        try:
            wait_until(lambda: len(late.topics("homeassistant/")) >= 13, 10, "retained configs")
            retained = {t: p for t, p, r in late.messages if r}
            configs = {t: json.loads(p) for t, p in retained.items()
                       if t.startswith("homeassistant/")}
            components = {t: _check_ha_config(t, c) for t, c in configs.items()}
            # 5 gateway entities and 4 per stream.
            assert len(configs) == 5 + 2 * 4
            motion = sanitize("hall.motion")
            assert motion != "hall.motion" and f"homeassistant/binary_sensor/gwtest/{motion}_prediction/config" in components
            prediction = configs[f"homeassistant/binary_sensor/gwtest/{motion}_prediction/config"]
            state = json.loads(retained[prediction["state_topic"]])
            assert state["prediction"] in ("ON", "OFF")
            assert state["labels_asked"] == status["streams"]["hall.motion"]["asked"]
            assert retained[prediction["availability_topic"]] == b"online"
            health = json.loads(retained["edgelearn/ha/gwtest"])
            assert health["state"] == "online" and health["streams"] == 2
        finally:
            late.close()

        # HA restarts: its birth message makes the gateway announce everything again.
        before = len([m for m in predictions.messages if m[0].startswith("homeassistant/")
                      and m[0].endswith("/config")])
        subprocess.run([pub, "-p", str(broker.port), "-t", "homeassistant/status", "-m", "online"],
                       check=True, timeout=10)
        wait_until(lambda: len([m for m in predictions.messages
                                if m[0].startswith("homeassistant/") and m[0].endswith("/config")])
                   >= before + 13, 15, "the configs announced again")

        # Prometheus: a real HTTP scrape, parsed by prometheus_client's parser.
        def scrape():
            with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics",
                                        timeout=5) as response:
                assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
                families = {f.name: f for f in text_string_to_metric_families(
                    response.read().decode())}
            predictions_family = families.get("edgelearn_predictions")
            if predictions_family and predictions_family.samples[0].value == 2 * n:
                return families
            return None

        families = wait_until(scrape, 15, "a scrape counting every prediction", interval=0.5)
        status = json_status() or status
        for name, value in status["counters"].items():
            family = families[f"edgelearn_{name}"]
            assert family.samples[0].labels == {"gateway": "gwtest"}
            if name not in ("outgoing_pending", "status_published", "label_pending"):
                assert family.samples[0].value == value, name
        messages = {s.labels["stream"]: s.value for s in families["edgelearn_stream_messages"].samples}
        assert messages == {"hall.motion": n, "kitchen": n}
        assert families["edgelearn_connected"].samples[0].value == 1
        parts = {s.labels["part"] for s in families["edgelearn_memory_bytes"].samples}
        assert {"total", "learners_max", "inbound_queue"} <= parts
        assert families["edgelearn_checkpoint_age_seconds"].samples[0].value >= 0
        # Loopback only by default.
        assert json.loads(subprocess.run(
            [sys.executable, "-c", "from firmware_bridge.service.config import load_config; "
             "print(repr(load_config(None)[0]['prometheus.host']))"],
            capture_output=True, text=True, cwd=ROOT).stdout.replace("'", '"')) == "127.0.0.1"
    finally:
        code = gateway.terminate()
        predictions.close()
    assert code == 0
    # A clean stop says so to HA.
    final = Recorder(broker.port, "edgelearn/ha/#", "edgelearn/status/#")
    try:
        wait_until(lambda: "edgelearn/ha/gwtest/availability" in final.topics(), 10, "availability")
        assert final.topics()["edgelearn/ha/gwtest/availability"] == b"offline"
        assert json.loads(final.topics()["edgelearn/status/gwtest/json"])["state"] == "stopped"
    finally:
        final.close()


def test_entities_of_a_stream_that_goes_are_removed_from_the_broker(broker):
    ha = HomeAssistant("gw 1")  # a gateway id outside HA's set is sanitised too
    publisher = paho.Client(paho.CallbackAPIVersion.VERSION2, protocol=paho.MQTTv5)
    publisher.connect("127.0.0.1", broker.port)
    publisher.loop_start()
    try:
        first = ha.announcements([("a", True), ("b.c", False)])
        for topic, payload in first:
            publisher.publish(topic, payload, 1, retain=True).wait_for_publish(5)
        gone = ha.announcements([("a", True)])
        assert gone and all(payload == b"" for _, payload in gone)
        assert {t for t, _ in gone} == {t for t, _ in ha.configs("b.c", False)}
        for topic, payload in gone:
            publisher.publish(topic, payload, 1, retain=True).wait_for_publish(5)
        time.sleep(0.3)
        reader = Recorder(broker.port, "homeassistant/#")
        try:
            time.sleep(0.5)
            retained = reader.topics()
        finally:
            reader.close()
        assert set(retained) == {t for t, _ in ha.gateway_configs()} | {
            t for t, _ in ha.configs("a", True)}
        assert all(f"/{sanitize('gw 1')}/" in t for t in retained)
        for topic, payload in retained.items():
            _check_ha_config(topic, json.loads(payload))
    finally:
        publisher.disconnect()
        publisher.loop_stop()


def test_sanitized_ids_keep_different_streams_apart():
    assert sanitize("hall_motion") == "hall_motion"
    assert sanitize("hall.motion") != sanitize("hall:motion") != "hall_motion"
    import re
    for name in ("a.b", "a b", "ä", "x/y", "#"):
        assert re.fullmatch(HA_OBJECT_ID, sanitize(name))


def test_integrations_cost_nothing_when_off():
    # A gateway built from the default configuration imports none of the integration
    # modules (nor their optional packages) and starts no thread of theirs.
    code = (
        "import sys, threading\n"
        "from firmware_bridge.service.config import load_config\n"
        "from firmware_bridge.service.gateway import Gateway\n"
        "config, errors = load_config(None, {'checkpoints.directory': ''})\n"
        "assert not errors, errors\n"
        "gateway = Gateway(config)\n"
        "assert [sink.name for sink in gateway.sinks] == ['outputs']\n"
        "assert gateway.sink('mqtt') is gateway.sink('outputs')\n"
        "assert gateway.sink('homeassistant') is None and gateway.sink('prometheus') is None\n"
        "loaded = [m for m in ('firmware_bridge.offline.plots', 'prometheus_client', 'matplotlib',"
        " 'http.server')"
        " if m in sys.modules]\n"
        "print(loaded, threading.active_count())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "1"]


def test_integration_settings_are_checked():
    from firmware_bridge.service.config import load_config
    from firmware_bridge.service.gateway import Gateway

    _, errors = load_config(None, {"status_json.topic": "edgelearn/status/{gateway}"})
    assert errors == ["[status_json] topic must not fit a [topics] template (it would "
                      "overwrite or feed the gateway's own topics), got "
                      "'edgelearn/status/{gateway}'"]
    _, errors = load_config(None, {"homeassistant.discovery_prefix": "home/#",
                                   "prometheus.port": 0})
    assert errors == [
        "The 'discovery_prefix' parameter of [homeassistant] must be an MQTT topic without "
        "wildcards ('+', '#') or a leading '$'. Got 'home/#'.",
        "The 'port' parameter of [prometheus] must be an int in [1, 65535]. Got 0.",
    ]
    # A port in use is named, not a bare errno.
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        config, errors = load_config(None, {"prometheus.enabled": True, "prometheus.port": port,
                                            "checkpoints.directory": ""})
        assert errors == []
        with pytest.raises(OSError, match=rf"\[prometheus\] cannot listen on 127.0.0.1:{port}: "):
            Gateway(config)


def test_configs_are_announced_again_after_the_broker_lost_them(broker, tmp_path):
    (tmp_path / "gw").mkdir()
    gateway = Gateway(tmp_path / "gw", broker.port, extra="[homeassistant]\nenabled = true\n")
    gateway.start()
    try:
        def retained_configs():
            reader = Recorder(broker.port, "homeassistant/#")
            try:
                time.sleep(0.3)
                return {t for t, p, r in reader.messages if r and p}
            finally:
                reader.close()

        wait_until(lambda: len(retained_configs()) == 5, 30, "the gateway's configs")
        # The broker restarts with nothing retained (no persistence file).
        broker.stop()
        for leftover in broker.directory.glob("*.db"):
            leftover.unlink()
        broker.start()
        assert len(retained_configs()) in (0, 5)  # the gateway may already be back
        wait_until(lambda: len(retained_configs()) == 5, 30, "the configs announced again")
    finally:
        assert gateway.terminate() == 0


def test_simulated_json_sensors_are_learned_from_their_own_label_field(broker, tmp_path):
    (tmp_path / "gw").mkdir()
    gateway = Gateway(tmp_path / "gw", broker.port, extra=(
        '[topics]\ndata = "zigbee2mqtt/{stream}"\n[json]\nlabel_field = "occupancy"\n'
        "[status_json]\nenabled = true\n"))
    statuses = Recorder(broker.port, "edgelearn/status/gwtest/json")
    gateway.start()
    try:
        wait_until(lambda: statuses.messages, 30, "the JSON status")
        n = 1000
        run = subprocess.run(
            [sys.executable, str(ROOT / "tools" / "simulate_sensors.py"), "--broker",
             f"127.0.0.1:{broker.port}", "--json", "--with-labels", "--count", str(n),
             "--rate", "0", "--data-template", "zigbee2mqtt/{stream}", "--drop", "0.05"],
            capture_output=True, text=True, timeout=120, cwd=ROOT)
        assert run.returncode == 0, run.stderr

        def done():
            status = json.loads(statuses.messages[-1][1])
            return status if status["counters"]["predictions"] == n else None

        status = wait_until(done, 60, "every reading predicted")
        stream = status["streams"]["s0"]
        # Every object carried its label in the occupancy field: all learned and scored.
        assert stream["learned"] == n and stream["scored"] == n
        assert stream["accuracy"] > 0.9
        assert stream["last_seq"] == n - 1  # the objects' own seq was used
        assert status["counters"]["rejected"] == 0
    finally:
        statuses.close()
        assert gateway.terminate() == 0


def test_a_binary_stream_with_word_labels_shows_on_and_off_in_home_assistant():
    # A stream labelled "occupied"/"empty" predicts those words; Home Assistant's
    # binary_sensor needs ON/OFF, so the gateway shows the positive side of the pair.
    from firmware_bridge.pipeline import Pipeline
    from firmware_bridge.wire import encode_data

    pipeline = Pipeline("pa", {"capacity": 8}, label_policy="from_data")
    states = set()
    for seq in range(40):
        occupied = seq % 2 == 0
        y = "occupied" if occupied else "empty"
        payload = encode_data(float(seq), seq, {"light": 400.0 if occupied else 5.0}, y)
        pipeline.handle("sensors/room/data", payload, float(seq))
        prediction = pipeline.last_prediction("room")
        if seq == 0:  # before any label: the documented rule, False (shown OFF)
            assert prediction is False
            continue
        assert prediction in ("occupied", "empty")
        shown = prediction == pipeline.positive_label("room")
        state = json.loads(HomeAssistant.stream_state({"data": seq + 1}, shown, True))
        states.add((prediction, state["prediction"]))
    # Both words seen, each always shown as one of ON/OFF and never as "unknown".
    assert {p for p, _ in states} == {"occupied", "empty"}
    assert {s for _, s in states} == {"ON", "OFF"}
    assert len(states) == 2
