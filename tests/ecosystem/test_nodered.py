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


def distinct_by_seq(predictions: list[dict]) -> dict[int, list[dict]]:
    """Each seq's distinct predictions, in the order they came. QoS 1 is at least
    once, twice over: a prediction message sent again (after a client's reconnect) is
    an equal copy, kept once; a reading the broker delivers to the gateway again after
    the gateway's own reconnect (seen once under a loaded machine) is predicted again,
    by a model that has learned since, and counted in ``seq_duplicates``: a second,
    different prediction of that seq, which Node-RED must decode too."""
    found: dict[int, list[dict]] = {}
    for prediction in predictions:
        copies = found.setdefault(prediction["seq"], [])
        if prediction not in copies:
            copies.append(prediction)
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
                wait_until(lambda: len(distinct_by_seq(flatten(decoded.get("office", [])))) == 51,
                           120, "Node-RED's decoded predictions of seq 0-50 (48 single, 1 batch)")
            except AssertionError as timeout:
                bodies = decoded.get("office", [])
                raise AssertionError(f"{timeout}: {len(bodies)} messages came, seqs "
                                     f"{sorted(distinct_by_seq(flatten(bodies)))}") from None
        mqtt.wait_predicted("office", 51)
        ours = lambda: distinct_by_seq(mqtt.predictions["office"])  # noqa: E731
        theirs = lambda: distinct_by_seq(flatten(decoded["office"]))  # noqa: E731
        # Every distinct prediction the gateway published, and nothing else, came out
        # of Node-RED decoded (waited for: either side may be a message behind).
        wait_until(lambda: theirs() == ours(), 30, "Node-RED's predictions equal to ours")
        assert set(theirs()) == set(range(51))
        again = sum(len(copies) - 1 for copies in ours().values())
        if again:  # readings predicted twice were redelivered, and counted so
            wait_until(lambda: (mqtt.status() or {}).get("counters", {}).get("seq_duplicates", 0)
                       >= again, 30, f"seq_duplicates >= {again}\n{gateway.log_text()[-3000:]}")
        # JSON (JavaScript) numbers have no int/float split: a score of 0.0 comes out 0.
        assert all(isinstance(p["y"], bool) and isinstance(p["score"], (int, float))
                   for p in flatten(decoded["office"]))
        assert "Bad decode" not in node_red.log.read_text(errors="replace")
    finally:
        mqtt.close()
        node_red.stop()
        if gateway.running():
            assert gateway.stop() == 0
