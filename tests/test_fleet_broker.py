"""A fleet that learns together, over a real mosquitto, with two gateway processes:
gateway B's new stream starts from what gateway A's stream learned, and a corrupt
contribution is counted and ignored by both."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import msgpack
import numpy as np
import paho.mqtt.client as paho

from brokers import Broker, wait_until
from edgelearn.contributions import pack
from firmware_bridge.wire import encode_data

ROOT = Path(__file__).resolve().parents[1]


#: The concept's weights on six channels (in their own units: scale, offset).
WEIGHTS = {"t": 1.0, "h": -0.8, "c": 0.6, "p": -0.5, "l": 0.4, "m": 0.3}
UNITS = {"t": (5.0, 20.0), "h": (10.0, 50.0), "c": (100.0, 600.0), "p": (3.0, 1000.0), "l": (50.0, 200.0),
         "m": (1.0, 0.0)}


def concept(n: int, seed: int) -> list[tuple[dict, bool]]:
    """One concept for every room: six channels, each missing now and then."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        z = {k: rng.normal() for k in WEIGHTS}
        x = {k: float(UNITS[k][0] * v + UNITS[k][1]) for k, v in z.items() if rng.random() > 0.15}
        out.append((x, bool(sum(WEIGHTS[k] * v for k, v in z.items()) > 0.2)))
    return out


def gateway_config(directory: Path, name: str, port: int) -> Path:
    path = directory / f"{name}.toml"
    path.write_text(
        f'[topics]\ndata = "sensors/{name}/{{stream}}/data"\n'
        "[gateway]\nstatus_interval_seconds = 1\n"
        "[checkpoints]\ninterval_seconds = 1\n"
        f'[mqtt]\nhost = "127.0.0.1"\nport = {port}\n'
        "reconnect_min_delay_seconds = 1\nmax_inflight_messages = 100\n"
        '[learner]\nkind = "active_arow"\n'
        '[fleet]\nenabled = true\ngroup = "greenhouses"\nstreams = "room-*"\ninterval_seconds = 1.0\n'
    )
    return path


def test_a_new_stream_starts_from_the_fleet_and_a_corrupt_contribution_is_refused(tmp_path):
    broker = Broker(tmp_path / "broker")
    broker.start()
    statuses: dict[str, dict] = {}
    predictions: dict[tuple[str, int], object] = {}
    contributions: list[tuple[str, bytes]] = []
    lock = threading.Lock()

    def on_message(client, userdata, message):
        levels = message.topic.split("/")
        with lock:
            if levels[1] == "fleet":
                contributions.append((levels[3], message.payload))
                return
            body = msgpack.unpackb(message.payload)
            if levels[1] == "status":
                statuses[levels[2]] = body
            else:
                predictions[(levels[1], body["seq"])] = body["y"]

    observer = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="observer")
    observer.on_message = on_message
    observer.connect("127.0.0.1", broker.port)
    observer.subscribe([("edgelearn/+/prediction", 1), ("edgelearn/status/+", 1),
                        ("edgelearn/fleet/greenhouses/+", 1)])
    observer.loop_start()
    processes: dict[str, subprocess.Popen] = {}

    def counter(name, key):
        return statuses.get(name, {}).get("counters", {}).get(key, 0)

    try:
        def start(name):
            config = gateway_config(tmp_path, name, broker.port)
            log = open(tmp_path / f"{name}.log", "ab")
            process = processes[name] = subprocess.Popen(
                [sys.executable, "-m", "firmware_bridge.cli", "gateway", "--config", str(config),
                 "--gateway-id", name, "--state-dir", str(tmp_path / name / "state")],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})
            log.close()

            def online():
                if process.poll() is not None:
                    raise AssertionError((tmp_path / f"{name}.log").read_text())
                status = statuses.get(name)
                return status and status["pid"] == process.pid and status["connected"]
            wait_until(online, 60, f"gateway {name} online")

        for name in ("a", "b"):
            start(name)

        sensor = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="sensors")
        sensor.max_inflight_messages_set(100)
        sensor.connect("127.0.0.1", broker.port)
        sensor.loop_start()

        def send(gateway, stream, readings):
            infos = [sensor.publish(f"sensors/{gateway}/{stream}/data",
                                    encode_data(float(seq), seq, x, y=y), 1)
                     for seq, (x, y) in enumerate(readings)]
            for info in infos:
                info.wait_for_publish(30)
            wait_until(lambda: all((stream, seq) in predictions for seq in range(len(readings))), 90,
                       f"the predictions of {stream}")

        # Gateway A's room learns; its contributions reach B.
        send("a", "room-a", concept(1500, 1))
        quiet = {"count": -1}

        def a_is_quiet():
            # A contributes only when its stream changed: once it has learned all, it stops
            count, quiet["count"] = quiet["count"], len(contributions)
            return count == quiet["count"] > 0
        wait_until(a_is_quiet, 60, "A's last contribution", interval=3.0)
        wait_until(lambda: counter("b", "fleet_contributions_merged") == counter("a", "fleet_contributions_sent")
                   == len(contributions), 30, "B merging all of A's contributions")

        # A corrupt contribution (one bit of the body flipped in transit) is counted and ignored.
        merged_before = counter("b", "fleet_contributions_merged")
        last_of_a = contributions[-1][1]
        envelope = msgpack.unpackb(last_of_a, raw=False)
        body = bytearray(envelope["body"])
        body[len(body) // 2] ^= 0x04
        envelope.update(sender="mallory", body=bytes(body))
        observer.publish("edgelearn/fleet/greenhouses/mallory", msgpack.packb(envelope, use_bin_type=True), 1
                         ).wait_for_publish(10)
        wait_until(lambda: counter("b", "fleet_rejected_checksum") == 1
                   and counter("a", "fleet_rejected_checksum") == 1, 20, "both gateways refusing it")
        # B merged all and only A's
        assert counter("b", "fleet_contributions_merged") == merged_before == counter("a", "fleet_contributions_sent")
        assert "fleet_rejected_checksum" in statuses["b"]["counter_problems"]
        # A's last contribution again (QoS 1 may deliver twice), and as if from another gateway
        observer.publish("edgelearn/fleet/greenhouses/a", last_of_a, 1).wait_for_publish(10)
        observer.publish("edgelearn/fleet/greenhouses/eve", last_of_a, 1).wait_for_publish(10)
        wait_until(lambda: counter("b", "fleet_rejected_repeated") == 1 and counter("b", "fleet_rejected_sender") == 1,
                   20, f"B refusing a repeated contribution and one under another gateway's topic {dict((k, v) for k, v in statuses['b']['counters'].items() if k.startswith('fleet'))} {[c[0] for c in contributions]}")
        assert counter("b", "fleet_contributions_merged") == merged_before

        # Contents no learner of the group could have learned, well-formed and checksummed,
        # each from a gateway on its own topic: precisions a million times what A's readings
        # allow (they would outweigh every honest gateway), a third label for a binary
        # learner, a 5-row intercept. Counted, logged once, ignored by both gateways.
        claim = msgpack.unpackb(msgpack.unpackb(last_of_a, raw=False)["body"], raw=False)
        inflated = {**claim, "channels": {**claim["channels"], "precision": [
            [1e6 * (v + 1.0) for v in row] for row in claim["channels"]["precision"]]}}
        hostile = {"mallory": inflated, "trudy": {**claim, "labels": [False, True, "maybe"]},
                   "oscar": {**claim, "intercept_precision": [1.0] * 5}}
        for sender, body in hostile.items():
            observer.publish(f"edgelearn/fleet/greenhouses/{sender}", pack(body, "greenhouses", sender, 1), 1
                             ).wait_for_publish(10)
        wait_until(lambda: counter("b", "fleet_rejected_content") == 3 and counter("a", "fleet_rejected_content") == 3,
                   20, "both gateways refusing the three claims")
        assert counter("b", "fleet_contributions_merged") == merged_before
        assert "fleet_rejected_content" in statuses["b"]["counter_problems"]
        assert (tmp_path / "b.log").read_text().count("fleet contribution refused (content)") == 1

        # B's new room starts from the group model; "solo" does not take part (streams = "room-*").
        fresh = concept(150, 2)
        send("b", "room-b", fresh)
        send("b", "solo", fresh)
        right = {stream: np.array([predictions[(stream, seq)] == y for seq, (_, y) in enumerate(fresh)])
                 for stream in ("room-b", "solo")}
        for first in (50, 150):
            print(f"first {first} readings of a new stream: with the fleet "
                  f"{right['room-b'][:first].mean():.3f}, alone {right['solo'][:first].mean():.3f}")
        wait_until(lambda: counter("b", "fleet_streams_started") == 1, 10, "B's status counting room-b's start")
        assert right["room-b"][:50].mean() >= 0.8
        assert right["room-b"][:50].mean() >= right["solo"][:50].mean() + 0.1

        for process in processes.values():
            process.send_signal(signal.SIGTERM)
        for name, process in processes.items():
            assert process.wait(60) == 0, (tmp_path / f"{name}.log").read_text()
        # The group model is kept beside the checkpoints, and B started again has it.
        for name in ("a", "b"):
            assert (tmp_path / name / "state" / "fleet-greenhouses.ckpt").exists()
        with lock:
            statuses.pop("b")
        start("b")
        send("b", "room-c", fresh)
        wait_until(lambda: counter("b", "fleet_streams_started") == 1, 10, "B's restart starting room-c from the group")
        restarted = np.array([predictions[("room-c", seq)] == y for seq, (_, y) in enumerate(fresh)])
        print(f"after B's restart, first 50 readings of room-c: {restarted[:50].mean():.3f}")
        assert restarted[:50].mean() >= right["solo"][:50].mean() + 0.1
        processes["b"].send_signal(signal.SIGTERM)
        assert processes["b"].wait(60) == 0
        sensor.loop_stop()
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)
        observer.loop_stop()
        broker.stop()


def test_the_fleet_with_a_learner_that_cannot_merge_is_refused_at_the_start(tmp_path):
    config = tmp_path / "gateway.toml"
    config.write_text('[learner]\nkind = "synthesis_nb"\n[fleet]\nenabled = true\n'
                      f'[checkpoints]\ndirectory = "{tmp_path}"\n')
    result = subprocess.run([sys.executable, "-m", "firmware_bridge.cli", "gateway", "--config", str(config)],
                            cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == ("edgelearn gateway: error: [fleet] enabled needs a learner that can merge "
                                     "(active_arow, paacds, pa, arow_regressor). Got SynthesisNB.")


def test_the_example_acl_lets_each_gateway_write_only_its_own_fleet_topic(tmp_path):
    # configs/mosquitto-acl.example's gateway block, for two gateways gw1 and gw2
    acl = (ROOT / "configs" / "mosquitto-acl.example").read_text()
    block = acl[acl.index("user edgelearn-gw1"):].split("\n\n")[0]
    assert "topic write edgelearn/fleet/default/gw1" in block
    (tmp_path / "acl").write_text(acl + "\n" + block.replace("gw1", "gw2") + "\n")
    passwd = tmp_path / "passwd"
    for n, user in enumerate(("edgelearn-gw1", "edgelearn-gw2")):
        subprocess.run(["mosquitto_passwd", "-b", *(["-c"] if n == 0 else []), str(passwd), user, "secret"],
                       check=True, timeout=30)
    broker = Broker(tmp_path / "broker", extra=f"password_file {passwd}\nacl_file {tmp_path / 'acl'}\n")
    broker.config.write_text(broker.config.read_text().replace("allow_anonymous true", "allow_anonymous false"))
    broker.start()
    heard: list[str] = []
    clients = []
    try:
        for user in ("edgelearn-gw1", "edgelearn-gw2"):
            client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=user)
            client.username_pw_set(user, "secret")
            client.connect("127.0.0.1", broker.port)
            client.loop_start()
            clients.append(client)
        gw1, gw2 = clients
        gw2.on_message = lambda client, userdata, message: heard.append(message.topic)
        gw2.subscribe([("edgelearn/fleet/default/+", 1), ("edgelearn/fleet/default/+/total", 1)])
        wait_until(lambda: gw1.is_connected() and gw2.is_connected(), 10, "both gateways connected")
        time.sleep(0.5)  # the subscription is in place
        own = ["edgelearn/fleet/default/gw1", "edgelearn/fleet/default/gw1/total"]
        for topic in own:
            gw1.publish(topic, b"its own", 1, retain=topic.endswith("total")).wait_for_publish(10)
        wait_until(lambda: heard == own, 10, "gw1's own contribution and total")
        # Speaking for gw2: refused. Each on a connection of its own, at QoS 0: on one
        # connection, QoS 1 publishes refused one after another were seen to lose it.
        for topic in ("edgelearn/fleet/default/gw2", "edgelearn/fleet/default/gw2/total"):
            liar = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="edgelearn-gw1")
            liar.username_pw_set("edgelearn-gw1", "secret")
            liar.connect("127.0.0.1", broker.port)
            liar.loop_start()
            wait_until(liar.is_connected, 10, "gw1 connected")
            liar.publish(topic, b"speaking for gw2", 0)
            time.sleep(0.5)
            liar.loop_stop()
            liar.disconnect()
        assert heard == own
    finally:
        for client in clients:
            client.loop_stop()
            client.disconnect()
        broker.stop()
