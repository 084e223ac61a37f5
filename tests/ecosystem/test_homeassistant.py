"""Home Assistant (pip, in its own venv) with its MQTT integration set up through the
REST config flow, as a user sets it up in the UI, reading the gateway's discovery:
what an operator checks on HA's side, through HA's REST API. Entities, their states
and availability, each stream's device info; then a restart of HA, and a restart of
the gateway. A screenshot of a stream's device page is taken with Debian's headless
chromium (into docs/ when EDGELEARN_SCREENSHOTS=docs).

The tests of this module share one HA, one gateway and one broker, in order."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess

import pytest
from brokers import Broker, installed, wait_until
from harness import CACHE, REPO, EdgeGateway, Mqtt, Timer, need, occupancy_readings
from programs import home_assistant_with_mqtt

HERE = pathlib.Path(__file__).resolve().parent
STREAMS = ("office", "hall.motion")
N = 150
GATEWAY_ENTITIES = {"State", "Problem", "Messages", "Rejected messages", "Streams"}
STREAM_ENTITIES = {"Prediction", "Accuracy", "Labels asked", "Query rate"}


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("homeassistant")
    broker = Broker(tmp / "broker")
    broker.start()
    gateway = EdgeGateway(tmp / "gw", broker.port, sections={"homeassistant": {"enabled": True}})
    mqtt = Mqtt(broker.port)
    ha = None
    try:
        with Timer("Home Assistant: start, onboard, MQTT config flow"):
            ha = home_assistant_with_mqtt(tmp / "ha", broker.port)
        Timer.note(f"Home Assistant {ha.version} (pip, {ha.python_version()})")
        with Timer(f"Home Assistant {ha.version}: gateway, 2 streams of {N} labelled readings"):
            gateway.start()
            mqtt.wait_online(gateway)
            mqtt.feed(STREAMS, N)
        yield ha, gateway, mqtt
    finally:
        mqtt.close()
        if ha is not None:
            ha.stop()
        gateway.kill()
        broker.kill()


def settled_status(mqtt: Mqtt, gateway: EdgeGateway) -> dict:
    """The status once every reading is counted."""
    return wait_until(lambda: (s := mqtt.status()) and s.get("pid") == gateway.process.pid
                      and all(s["streams"].get(x, {}).get("data") == N for x in STREAMS) and s,
                      30, "a status counting every reading")


def entities_as_the_gateway_says(ha, mqtt: Mqtt, gateway: EdgeGateway) -> dict:
    """HA's MQTT entities once they show the gateway's own numbers (its status and
    last predictions); an AssertionError naming the differences otherwise."""
    status = settled_status(mqtt, gateway)
    expected = {("edgelearn gw1", "State"): "online", ("edgelearn gw1", "Problem"): "off",
                ("edgelearn gw1", "Streams"): str(len(STREAMS)),
                ("edgelearn gw1", "Messages"): str(status["counters"]["messages"]),
                ("edgelearn gw1", "Rejected messages"): "0"}
    for stream in STREAMS:
        s = status["streams"][stream]
        expected[(stream, "Prediction")] = "on" if mqtt.predictions[stream][-1]["y"] else "off"
        expected[(stream, "Accuracy")] = str(round(100 * s["accuracy"], 2))
        expected[(stream, "Labels asked")] = str(s["asked"])
        expected[(stream, "Query rate")] = str(round(100 * s["query_rate"], 2))
    last = {}

    def agree():
        nonlocal last
        last = ha.mqtt_entities()
        shown = {key: row["state"] for key, row in last.items()}
        return last if all(shown.get(k) == v or _same_number(shown.get(k), v)
                           for k, v in expected.items()) else None
    try:
        return wait_until(agree, 60, "HA's states to match the gateway's", interval=1)
    except AssertionError:
        shown = {key: row["state"] for key, row in last.items()}
        raise AssertionError({k: (shown.get(k), v) for k, v in expected.items()
                              if shown.get(k) != v and not _same_number(shown.get(k), v)})


def _same_number(a, b) -> bool:
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False


def playwright_version(path: pathlib.Path) -> str:
    import json
    return json.loads((path / "package.json").read_text())["version"]


def test_entities_states_availability_and_device_info(home):
    ha, gateway, mqtt = home
    with Timer("Home Assistant: entities, states and device info checked"):
        entities = entities_as_the_gateway_says(ha, mqtt, gateway)
    assert set(entities) == ({("edgelearn gw1", e) for e in GATEWAY_ENTITIES}
                             | {(s, e) for s in STREAMS for e in STREAM_ENTITIES})
    assert not [k for k, row in entities.items() if row["state"] in ("unavailable", "unknown")]
    version = mqtt.status()["version"]["edgelearn"]
    for (device, name), row in entities.items():
        assert row["manufacturer"] == "edgelearn" and row["sw_version"] == version, row
        if device == "edgelearn gw1":
            assert row["model"] == "gateway" and row["via"] is None, row
        else:
            assert row["model"] == "online learner", row
            assert row["via"] == "edgelearn gw1", row  # the stream hangs off its gateway
    # Components and units as HA shows them.
    office = {name: row for (device, name), row in entities.items() if device == "office"}
    assert office["Prediction"]["entity"].startswith("binary_sensor.")
    assert office["Accuracy"]["attributes"]["unit_of_measurement"] == "%"
    assert office["Accuracy"]["attributes"]["state_class"] == "measurement"
    assert office["Labels asked"]["attributes"]["state_class"] == "total_increasing"
    # hall.motion is sanitised for HA's ids but keeps its name.
    assert entities[("hall.motion", "Prediction")]["entity"] == "binary_sensor.hall_motion_prediction"
    one_device_each = {row["device_id"] for (device, _), row in entities.items()}
    assert len(one_device_each) == 1 + len(STREAMS)


def test_screenshot_of_a_stream_device_page(home, tmp_path):
    """Debian's headless chromium (driven by playwright-core) against the real HA,
    logged in on its login page: the office stream's device page, once it shows the
    device's entities."""
    ha, gateway, mqtt = home
    chromium = installed("chromium", "chromium", "the Home Assistant screenshot")
    playwright = need(CACHE / "browser" / "node_modules" / "playwright-core",
                      "playwright-core", "browser.sh")
    device_id = ha.mqtt_entities()[("office", "Prediction")]["device_id"]
    shot = tmp_path / "ha-device-page.png"
    with Timer("Home Assistant: headless chromium screenshot of a device page"):
        result = subprocess.run(
            [shutil.which("node") or "/usr/bin/node", str(HERE / "screenshot.js"),
             f"{ha.url}/config/devices/device/{device_id}", str(shot),
             "office", "Prediction", "Accuracy", "Labels asked", "Query rate"],
            capture_output=True, text=True, timeout=180,
            env={**os.environ, "CHROMIUM": chromium, "PLAYWRIGHT_CORE": str(playwright),
                 "HA_USERNAME": ha.USERNAME, "HA_PASSWORD": ha.PASSWORD})
    assert result.returncode == 0, result.stdout + result.stderr
    Timer.note("chromium: " + subprocess.run([chromium, "--version"], capture_output=True,
                                             text=True).stdout.strip()
               + f", driven by playwright-core {playwright_version(playwright)}")
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000, len(png)
    if os.environ.get("EDGELEARN_SCREENSHOTS"):
        target = REPO / os.environ["EDGELEARN_SCREENSHOTS"] / "ha-device-page.png"
        shutil.copy(shot, target)


def test_entities_come_back_after_home_assistant_restarts(home):
    ha, gateway, mqtt = home
    with Timer("Home Assistant: restart HA, entities back with the gateway's states"):
        ha.stop()
        ha.start()
        entities = entities_as_the_gateway_says(ha, mqtt, gateway)
    assert len(entities) == len(GATEWAY_ENTITIES) + len(STREAMS) * len(STREAM_ENTITIES)


def test_entities_go_unavailable_at_a_clean_stop_and_come_back_with_the_gateway(home):
    ha, gateway, mqtt = home
    with Timer("Home Assistant: gateway stopped, entities unavailable"):
        assert gateway.stop() == 0
        wait_until(lambda: all(row["state"] == "unavailable"
                               for row in ha.mqtt_entities().values()), 30,
                   "every entity unavailable after the gateway's clean stop", interval=1)
    with Timer("Home Assistant: gateway started again, entities available"):
        gateway.start()
        mqtt.wait_online(gateway)
        # A reading per stream: the learners (restored from their checkpoints) predict.
        for channels, occupied in occupancy_readings(1, seed=5):
            for stream in STREAMS:
                mqtt.reading(stream, channels)
        mqtt.wait_predicted("office", N + 1)

        def back():
            e = ha.mqtt_entities()
            return e if e and all(row["state"] != "unavailable" for row in e.values()) and all(
                e[(s, "Prediction")]["state"] in ("on", "off") for s in STREAMS) else None
        entities = wait_until(back, 60, "every entity available, predictions shown", interval=1)
    assert entities[("edgelearn gw1", "State")]["state"] == "online"
    wait_until(lambda: ha.mqtt_entities()[("office", "Labels asked")]["state"] == str(
        mqtt.status()["streams"]["office"]["asked"]), 30, "labels asked as counted", interval=1)
