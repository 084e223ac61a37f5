"""Node-RED (npm, with node-red-node-msgpack) decodes the gateway's predictions: a
flow subscribes to every prediction topic as a buffer, unpacks it with the msgpack
node and republishes the object as JSON; every prediction comes out equal to what
the test itself decodes from the same messages. With ``[outputs] prediction = "json"``
a flow without the msgpack node reads them as parsed JSON."""

from __future__ import annotations

import json
import subprocess
import time

import msgpack
import pytest
from brokers import wait_until
from harness import EdgeGateway, Mqtt, Timer, occupancy_readings
from programs import NodeRed


def decoding_flow(broker_port: int, json_outputs: bool = False) -> list[dict]:
    """mqtt in (a buffer) -> msgpack -> topic -> mqtt out; for JSON outputs, mqtt in
    (a parsed JSON object) -> topic -> mqtt out."""
    flow = [
        {"id": "tab", "type": "tab", "label": "edgelearn predictions"},
        {"id": "broker", "type": "mqtt-broker", "name": "test broker", "broker": "127.0.0.1",
         "port": str(broker_port), "clientid": "", "autoConnect": True, "usetls": False,
         "protocolVersion": "4", "keepalive": "60", "cleansession": True},
        {"id": "in", "type": "mqtt in", "z": "tab", "name": "predictions",
         "topic": "edgelearn/+/prediction", "qos": "1", "datatype": "buffer",
         "broker": "broker", "nl": False, "rap": True, "rh": 0, "inputs": 0, "wires": [["unpack"]]},
        {"id": "unpack", "type": "msgpack", "z": "tab", "name": "", "property": "payload",
         "wires": [["topic"]]},
        {"id": "topic", "type": "function", "z": "tab", "name": "decoded/ topic",
         "func": "msg.topic = msg.topic.replace(/^edgelearn\\//, 'decoded/');\nreturn msg;",
         "outputs": 1, "wires": [["out"]]},
        {"id": "out", "type": "mqtt out", "z": "tab", "name": "as JSON", "topic": "", "qos": "1",
         "retain": "false", "broker": "broker", "wires": []},
    ]
    if json_outputs:
        flow = [node for node in flow if node["id"] != "unpack"]
        node_in = next(node for node in flow if node["id"] == "in")
        node_in.update(datatype="json", wires=[["topic"]])
    return flow


def by_seq(predictions: list[dict]) -> dict[int, dict]:
    """Predictions by seq. QoS 1 is at least once: a message the broker or a client
    sends again after a reconnect (seen under a loaded machine's timeouts) arrives
    twice, and must then be the same copy."""
    found: dict[int, dict] = {}
    for prediction in predictions:
        assert found.setdefault(prediction["seq"], prediction) == prediction, prediction
    return found


def flatten(bodies: list[dict]) -> list[dict]:
    """The predictions of prediction messages, a batch's each on its own."""
    return [p for body in list(bodies) for p in body.get("predictions", [body])]


@pytest.mark.parametrize("json_outputs", [False, True], ids=["msgpack node", "json outputs"])
def test_a_node_red_flow_decodes_every_prediction(broker, tmp_path, json_outputs):
    sections = {"outputs": {"prediction": "json"}} if json_outputs else {}
    gateway = EdgeGateway(tmp_path / "gw", broker.port, sections=sections)
    node_red = NodeRed(tmp_path / "node-red", decoding_flow(broker.port, json_outputs))
    mqtt = Mqtt(broker.port)
    decoded: dict[str, list] = {}
    mqtt.client.message_callback_add("decoded/+/prediction", lambda c, u, m: decoded.setdefault(
        m.topic.split("/")[1], []).append(json.loads(m.payload)))
    mqtt.client.subscribe("decoded/+/prediction", 1)
    try:
        Timer.note(f"Node-RED {node_red.versions['node-red']}, node-red-node-msgpack "
                   f"{node_red.versions['node-red-node-msgpack']} (npm), Node.js "
                   + subprocess.run(["node", "--version"], capture_output=True,
                                    text=True).stdout.strip())
        with Timer("Node-RED: start with the decoding flow"):
            gateway.start()
            node_red.start()
            wait_until(node_red.connected, 30, "Node-RED's MQTT connection")
            mqtt.wait_online(gateway)
        with Timer("Node-RED: 48 readings and a batch of 3, decoded"
                   + (" (JSON outputs, no msgpack node)" if json_outputs else "")):
            for channels, occupied in occupancy_readings(48):
                mqtt.reading("office", channels, y=occupied)
            batch = [{"ts": time.time(), "seq": 48 + i, "ch": c}
                     for i, (c, _) in enumerate(occupancy_readings(3, seed=1))]
            mqtt.client.publish("sensors/office/data", msgpack.packb({"readings": batch}), qos=1)
            # Counted by seq, not by message: a QoS 1 copy sent again is a 50th message.
            try:
                wait_until(lambda: len(by_seq(flatten(decoded.get("office", [])))) == 51, 120,
                           "Node-RED's decoded predictions of seq 0-50 (48 single, 1 batch)")
            except AssertionError as timeout:
                bodies = decoded.get("office", [])
                raise AssertionError(f"{timeout}: {len(bodies)} messages came, seqs "
                                     f"{sorted(by_seq(flatten(bodies)))}") from None
        ours = mqtt.wait_predicted("office", 51)
        theirs = flatten(decoded["office"])
        assert by_seq(theirs) == by_seq(ours)
        assert set(by_seq(theirs)) == set(range(51))
        # JSON (JavaScript) numbers have no int/float split: a score of 0.0 comes out 0.
        assert all(isinstance(p["y"], bool) and isinstance(p["score"], (int, float))
                   for p in theirs)
        assert "Bad decode" not in node_red.log.read_text(errors="replace")
    finally:
        mqtt.close()
        node_red.stop()
        if gateway.running():
            assert gateway.stop() == 0
