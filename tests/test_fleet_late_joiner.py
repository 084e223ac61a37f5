"""A gateway that joins a fleet late gets the group model from the broker: each
gateway keeps its total (the sum of its contributions) retained on
edgelearn/fleet/{group}/{gateway}/total. Real gateway processes, a real mosquitto."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import msgpack
import numpy as np
import paho.mqtt.client as paho

from brokers import Broker, wait_until
from edgelearn.contributions import unpack
from edgelearn.state import load_checkpoint
from firmware_bridge.wire import encode_data
from test_fleet_broker import concept, gateway_config

ROOT = Path(__file__).resolve().parents[1]


def test_a_gateway_that_joins_late_starts_its_streams_from_the_group(tmp_path):
    broker = Broker(tmp_path / "broker")
    broker.start()
    statuses: dict[str, dict] = {}
    predictions: dict[tuple[str, int], object] = {}
    totals: dict[str, bytes] = {}
    lock = threading.Lock()

    def on_message(client, userdata, message):
        levels = message.topic.split("/")
        with lock:
            if levels[1] == "fleet":
                if levels[-1] == "total":
                    totals[levels[3]] = message.payload
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
                        ("edgelearn/fleet/greenhouses/#", 1)])
    observer.loop_start()
    sensor = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="sensors")
    sensor.max_inflight_messages_set(100)
    sensor.connect("127.0.0.1", broker.port)
    sensor.loop_start()
    processes: dict[str, subprocess.Popen] = {}

    def counter(name, key):
        with lock:
            return statuses.get(name, {}).get("counters", {}).get(key, 0)

    def start(name, state="state"):
        config = gateway_config(tmp_path, name, broker.port)
        with open(tmp_path / f"{name}.log", "ab") as log:
            process = processes[name] = subprocess.Popen(
                [sys.executable, "-m", "firmware_bridge.cli", "gateway", "--config", str(config),
                 "--gateway-id", name, "--state-dir", str(tmp_path / name / state)],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})

        def online():
            if process.poll() is not None:
                raise AssertionError((tmp_path / f"{name}.log").read_text())
            with lock:
                status = statuses.get(name)
            return status and status["pid"] == process.pid and status["connected"]
        wait_until(online, 60, f"gateway {name} online")

    def stop(name):
        processes[name].send_signal(signal.SIGTERM)
        assert processes[name].wait(60) == 0, (tmp_path / f"{name}.log").read_text()

    def send(gateway, stream, readings, labelled=True):
        infos = [sensor.publish(f"sensors/{gateway}/{stream}/data",
                                encode_data(float(seq), seq, x, y=y if labelled else None), 1)
                 for seq, (x, y) in enumerate(readings)]
        for info in infos:
            info.wait_for_publish(30)
        wait_until(lambda: all((stream, seq) in predictions for seq in range(len(readings))), 90,
                   f"the predictions of {stream}")

    try:
        # Gateway A learns alone; nobody else is there to hear its contributions.
        start("a")
        send("a", "room-a", concept(1500, 1))
        wait_until(lambda: "a" in totals, 30, "A's first total, retained")
        quiet = {"sent": -1}

        def a_is_quiet():
            sent, quiet["sent"] = quiet["sent"], counter("a", "fleet_contributions_sent")
            return sent == quiet["sent"] > 0
        wait_until(a_is_quiet, 60, "A's last contribution", interval=3.0)
        # A stops: its total on the broker is brought up to date (the last status's turn).
        first_total = totals["a"]
        stop("a")
        saved_a, _ = load_checkpoint(tmp_path / "a" / "state" / "fleet-greenhouses.ckpt")
        wait_until(lambda: unpack(totals["a"]).seq == saved_a["seq"], 10, "A's total at its stop")
        assert counter("a", "fleet_contributions_sent") < 10 or totals["a"] != first_total

        # B joins after all of that was published: it hears A's retained total.
        start("b")
        wait_until(lambda: counter("b", "fleet_totals_merged") == 1, 20, "B taking A's total")
        assert counter("b", "fleet_contributions_merged") == 0
        fresh = concept(150, 2)
        send("b", "room-b", fresh, labelled=False)  # no labels: what it knows is the group's
        send("b", "solo", fresh, labelled=False)
        right = {stream: np.array([predictions[(stream, seq)] == y for seq, (_, y) in enumerate(fresh)])
                 for stream in ("room-b", "solo")}
        print(f"late joiner, first 150 readings: from the group {right['room-b'].mean():.3f}, "
              f"alone {right['solo'].mean():.3f}")
        wait_until(lambda: counter("b", "fleet_streams_started") == 1, 10, "B's status counting room-b's start")
        assert right["room-b"].mean() >= 0.8
        assert right["room-b"].mean() >= right["solo"].mean() + 0.2
        stop("b")

        # B's group model is A's total, exactly (A's own learning, as A added it up).
        saved_b, _ = load_checkpoint(tmp_path / "b" / "state" / "fleet-greenhouses.ckpt")
        held, own = saved_b["totals"]["a"], saved_a["own_total"]
        assert held["seq"] == saved_a["seq"] and held["exact"]
        assert held["total"]["channels"]["names"] == own["channels"]["names"]
        for column in ("n", "mean", "var", "precision", "precision_mean", "bin_counts"):
            np.testing.assert_allclose(np.asarray(held["total"]["channels"][column], dtype=float),
                                       np.asarray(own["channels"][column], dtype=float), rtol=1e-12, atol=1e-12)
        # B's streams learned nothing (no labels came): its group's weights are A's
        group = saved_b["fleet_group"]["channels"]
        assert sorted(group["names"]) == sorted(own["channels"]["names"])
        for i, name in enumerate(own["channels"]["names"]):
            np.testing.assert_allclose(group["precision"][group["names"].index(name)], own["channels"]["precision"][i],
                                       rtol=1e-12)

        # A again, its saved state lost: it takes its own total back from the broker, so
        # a new stream of its starts from it, and its next total keeps what A had learned.
        start("a", state="state-lost")
        send("a", "room-c", fresh, labelled=False)
        restarted = np.array([predictions[("room-c", seq)] == y for seq, (_, y) in enumerate(fresh)])
        assert restarted.mean() >= right["solo"].mean() + 0.2
        wait_until(lambda: counter("a", "fleet_streams_started") == 1, 10, "A's status counting room-c's start")
        stop("a")
        again = unpack(totals["a"]).contribution["channels"]
        for i, name in enumerate(own["channels"]["names"]):
            np.testing.assert_allclose(again["precision"][again["names"].index(name)], own["channels"]["precision"][i],
                                       rtol=1e-12)
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)
        sensor.loop_stop()
        observer.loop_stop()
        broker.stop()
