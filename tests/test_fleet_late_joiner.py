"""A gateway that joins a fleet late gets the group model from the broker: each
gateway keeps its total (the sum of its contributions) retained on
edgelearn/fleet/{group}/{gateway}/total. And multiclass streams share over the
broker. Real gateway processes, a real mosquitto."""

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
from test_fleet_broker import UNITS, WEIGHTS, concept, gateway_config

ROOT = Path(__file__).resolve().parents[1]


class Fleet:
    """A mosquitto, an observer of predictions, statuses and totals, a sensor client,
    and gateway processes of group "greenhouses" (tests/test_fleet_broker.py's config)."""

    def __init__(self, tmp_path, *settings):
        self.tmp_path, self.settings = tmp_path, settings
        self.broker = Broker(tmp_path / "broker")
        self.broker.start()
        self.statuses: dict[str, dict] = {}
        self.predictions: dict[tuple[str, int], object] = {}
        self.totals: dict[str, bytes] = {}
        self.lock = threading.Lock()
        self.processes: dict[str, subprocess.Popen] = {}
        self.observer = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="observer")
        self.observer.on_message = self._on_message
        self.observer.connect("127.0.0.1", self.broker.port)
        self.observer.subscribe([("edgelearn/+/prediction", 1), ("edgelearn/status/+", 1),
                                 ("edgelearn/fleet/greenhouses/#", 1)])
        self.observer.loop_start()
        self.sensor = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="sensors")
        self.sensor.max_inflight_messages_set(100)
        self.sensor.connect("127.0.0.1", self.broker.port)
        self.sensor.loop_start()

    def _on_message(self, client, userdata, message):
        levels = message.topic.split("/")
        with self.lock:
            if levels[1] == "fleet":
                if levels[-1] == "total":
                    self.totals[levels[3]] = message.payload
                return
            body = msgpack.unpackb(message.payload)
            if levels[1] == "status":
                self.statuses[levels[2]] = body
            else:
                self.predictions[(levels[1], body["seq"])] = body["y"]

    def counter(self, name, key):
        with self.lock:
            return self.statuses.get(name, {}).get("counters", {}).get(key, 0)

    def start(self, name, state="state"):
        config = gateway_config(self.tmp_path, name, self.broker.port)
        settings = [a for setting in self.settings for a in ("--set", setting)]
        with open(self.tmp_path / f"{name}.log", "ab") as log:
            process = self.processes[name] = subprocess.Popen(
                [sys.executable, "-m", "firmware_bridge.cli", "gateway", "--config", str(config),
                 "--gateway-id", name, "--state-dir", str(self.tmp_path / name / state), *settings],
                cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONPATH": str(ROOT)})

        def online():
            if process.poll() is not None:
                raise AssertionError((self.tmp_path / f"{name}.log").read_text())
            with self.lock:
                status = self.statuses.get(name)
            return status and status["pid"] == process.pid and status["connected"]
        wait_until(online, 60, f"gateway {name} online")

    def stop(self, name):
        self.processes[name].send_signal(signal.SIGTERM)
        assert self.processes[name].wait(60) == 0, (self.tmp_path / f"{name}.log").read_text()

    def send(self, gateway, stream, readings, labelled=True):
        infos = [self.sensor.publish(f"sensors/{gateway}/{stream}/data",
                                     encode_data(float(seq), seq, x, y=y if labelled else None), 1)
                 for seq, (x, y) in enumerate(readings)]
        for info in infos:
            info.wait_for_publish(30)
        wait_until(lambda: all((stream, seq) in self.predictions for seq in range(len(readings))), 90,
                   f"the predictions of {stream}")

    def right(self, stream, readings):
        return np.array([self.predictions[(stream, seq)] == y for seq, (_, y) in enumerate(readings)])

    def wait_quiet(self, name):
        """Until gateway ``name`` stops contributing (its streams learned all)."""
        quiet = {"sent": -1}

        def is_quiet():
            sent, quiet["sent"] = quiet["sent"], self.counter(name, "fleet_contributions_sent")
            return sent == quiet["sent"] > 0
        wait_until(is_quiet, 60, f"{name}'s last contribution", interval=3.0)

    def close(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait(10)
        self.sensor.loop_stop()
        self.observer.loop_stop()
        self.broker.stop()


def test_a_gateway_that_joins_late_starts_its_streams_from_the_group(tmp_path):
    fleet = Fleet(tmp_path)
    totals, counter = fleet.totals, fleet.counter
    try:
        # Gateway A learns alone; nobody else is there to hear its contributions.
        fleet.start("a")
        fleet.send("a", "room-a", concept(1500, 1))
        wait_until(lambda: "a" in totals, 30, "A's first total, retained")
        fleet.wait_quiet("a")
        # A stops: its total on the broker is brought up to date (the last status's turn).
        first_total = totals["a"]
        fleet.stop("a")
        saved_a, _ = load_checkpoint(tmp_path / "a" / "state" / "fleet-greenhouses.ckpt")
        wait_until(lambda: unpack(totals["a"]).seq == saved_a["seq"], 10, "A's total at its stop")
        assert counter("a", "fleet_contributions_sent") < 10 or totals["a"] != first_total

        # B joins after all of that was published: it hears A's retained total.
        fleet.start("b")
        wait_until(lambda: counter("b", "fleet_totals_merged") == 1, 20, "B taking A's total")
        assert counter("b", "fleet_contributions_merged") == 0
        fresh = concept(150, 2)
        fleet.send("b", "room-b", fresh, labelled=False)  # no labels: what it knows is the group's
        fleet.send("b", "solo", fresh, labelled=False)
        right = {stream: fleet.right(stream, fresh) for stream in ("room-b", "solo")}
        print(f"late joiner, first 150 readings: from the group {right['room-b'].mean():.3f}, "
              f"alone {right['solo'].mean():.3f}")
        wait_until(lambda: counter("b", "fleet_streams_started") == 1, 10, "B's status counting room-b's start")
        assert right["room-b"].mean() >= 0.8
        assert right["room-b"].mean() >= right["solo"].mean() + 0.2
        fleet.stop("b")

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
        fleet.start("a", state="state-lost")
        fleet.send("a", "room-c", fresh, labelled=False)
        restarted = fleet.right("room-c", fresh)
        assert restarted.mean() >= right["solo"].mean() + 0.2
        wait_until(lambda: counter("a", "fleet_streams_started") == 1, 10, "A's status counting room-c's start")
        fleet.stop("a")
        again = unpack(totals["a"]).contribution["channels"]
        for i, name in enumerate(own["channels"]["names"]):
            np.testing.assert_allclose(again["precision"][again["names"].index(name)], own["channels"]["precision"][i],
                                       rtol=1e-12)
    finally:
        fleet.close()


def three_classes(n: int, seed: int) -> list[tuple[dict, str]]:
    """The concept of test_fleet_broker.concept, its score cut into three classes."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        z = {k: rng.normal() for k in WEIGHTS}
        x = {k: float(UNITS[k][0] * v + UNITS[k][1]) for k, v in z.items() if rng.random() > 0.15}
        score = sum(WEIGHTS[k] * v for k, v in z.items())
        out.append((x, "cold" if score < -0.7 else ("mild" if score < 0.7 else "hot")))
    return out


def test_multiclass_streams_share_over_the_broker(tmp_path):
    fleet = Fleet(tmp_path, "learner.params.n_classes=3")
    try:
        for name in ("a", "b"):
            fleet.start(name)
        fleet.send("a", "room-a", three_classes(1500, 1))
        fleet.wait_quiet("a")
        wait_until(lambda: fleet.counter("b", "fleet_contributions_merged")
                   == fleet.counter("a", "fleet_contributions_sent"), 30, "B merging all of A's contributions")
        fresh = three_classes(150, 2)
        fleet.send("b", "room-b", fresh, labelled=False)
        fleet.send("b", "solo", fresh, labelled=False)
        right = {stream: fleet.right(stream, fresh) for stream in ("room-b", "solo")}
        print(f"three classes, first 150 readings of a new stream: from the group {right['room-b'].mean():.3f}, "
              f"alone {right['solo'].mean():.3f}")
        assert right["room-b"].mean() >= 0.6  # one class in three by chance; one run gave 0.707
        assert right["room-b"].mean() >= right["solo"].mean() + 0.3
        for name in ("a", "b"):
            assert fleet.counter(name, "fleet_rejected_kind") == 0
            fleet.stop(name)
    finally:
        fleet.close()


def test_a_group_model_saved_before_the_totals_still_starts_new_streams(tmp_path):
    from edgelearn import ActiveAROW
    from edgelearn.state import save_checkpoint

    learner = ActiveAROW(capacity=64)
    for x, y in concept(1500, 1):
        learner.learn_one(x, y)
    state = tmp_path / "b" / "state"
    state.mkdir(parents=True)
    save_checkpoint(state / "fleet-greenhouses.ckpt",  # the format before the totals
                    {"fleet_group": ActiveAROW.merge([learner.contribution()]), "seq": 5, "last_seq": {}})
    fleet = Fleet(tmp_path)
    try:
        fleet.start("b")
        fresh = concept(150, 2)
        fleet.send("b", "room-b", fresh, labelled=False)
        wait_until(lambda: fleet.counter("b", "fleet_streams_started") == 1, 10, "room-b's start from the group")
        assert fleet.right("room-b", fresh).mean() >= 0.8
        fleet.stop("b")
        saved, _ = load_checkpoint(state / "fleet-greenhouses.ckpt")
        assert list(saved["totals"]) == ["/saved"]  # kept, under a name no topic can give
    finally:
        fleet.close()


def sensor_values(n: int, seed: int) -> list[tuple[dict, float]]:
    """A virtual sensor over test_fleet_broker.concept's channels: a level far from 0
    (each learner's offset is its first reference) plus the concept's score."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        z = {k: rng.normal() for k in WEIGHTS}
        x = {k: float(UNITS[k][0] * v + UNITS[k][1]) for k, v in z.items() if rng.random() > 0.15}
        out.append((x, float(500.0 + 20.0 * sum(WEIGHTS[k] * v for k, v in z.items()) + rng.normal(0, 1))))
    return out


def test_virtual_sensors_share_over_the_broker(tmp_path):
    # AROWRegressor, the regression default: its belief and its intercept (in the
    # target's units, around the members' offsets) reach the other gateway, and its
    # honest contributions pass the content bounds.
    fleet = Fleet(tmp_path, "learner.kind=arow_regressor", "learner.params.r=1.0",
                  "learner.params.variance_floor=0.3")
    try:
        for name in ("a", "b"):
            fleet.start(name)
        fleet.send("a", "room-a", sensor_values(1500, 1))
        fleet.wait_quiet("a")
        wait_until(lambda: fleet.counter("b", "fleet_contributions_merged")
                   == fleet.counter("a", "fleet_contributions_sent"), 30, "B merging all of A's contributions")
        fresh = sensor_values(150, 2)
        fleet.send("b", "room-b", fresh, labelled=False)  # no references: what it knows is the group's
        fleet.send("b", "solo", fresh, labelled=False)
        error = {stream: np.mean([abs(fleet.predictions[(stream, seq)] - y) for seq, (_, y) in enumerate(fresh)])
                 for stream in ("room-b", "solo")}
        print(f"virtual sensor, first 150 readings of a new stream, mean absolute error: from the group "
              f"{error['room-b']:.1f}, alone {error['solo']:.1f}")
        spread = np.std([y for _, y in fresh])
        assert error["room-b"] < 0.5 * spread and error["room-b"] < 0.2 * error["solo"]
        wait_until(lambda: fleet.counter("b", "fleet_streams_started") == 1, 10, "B's status counting room-b's start")
        for name in ("a", "b"):
            assert fleet.counter(name, "fleet_rejected_kind") == fleet.counter(name, "fleet_rejected_content") == 0
            fleet.stop(name)
    finally:
        fleet.close()
