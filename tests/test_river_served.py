"""River estimators served: ``kind = "river:MODULE.CLASS"`` through the same pipeline as
edgelearn's own learners, in replay and in the gateway through a real mosquitto, with
checkpoints and a memory cap; and a plug-in that only speaks River's protocol."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import msgpack
import numpy as np
import pytest
from brokers import broker, wait_until  # noqa: F401  (broker: a fixture)
from test_gateway_broker import gateways, observer_factory  # noqa: F401  (fixtures)
from test_registry import install_plugin

import edgelearn
from edgelearn.state import load_checkpoint, save_checkpoint
from firmware_bridge.pipeline import Pipeline
from firmware_bridge.wire import Topics, encode_data, encode_label

ROOT = Path(__file__).resolve().parents[1]
EDGELEARN = [sys.executable, "-m", "firmware_bridge"]


def _replay(*args: str, env=None, cwd=None) -> dict:
    out = subprocess.run([*EDGELEARN, "replay", *args, "--quiet", "--json"], capture_output=True,
                         text=True, timeout=900, env=env, cwd=cwd or ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_river_logistic_regression_replays_the_bundled_demo():
    summary = _replay("--learner", "river:linear_model.LogisticRegression", "--policy", "all")
    stream = summary["streams"]["office-1"]
    assert summary["learner"].startswith("RiverModel(model='linear_model.LogisticRegression'")
    assert stream["messages"] == 20560 and stream["labels_used"] == 20560
    # Raw sensor values without scaling: River's LR learns, if slowly (PA-I with every
    # label: 0.99); what is asserted is that it runs the same pipeline and is scored.
    assert 0.6 < stream["accuracy"] <= 1.0
    assert summary["paths"]["office-1"].startswith("per-message")


def test_a_river_classifier_asks_at_its_random_rate_under_a_label_budget():
    summary = _replay("--learner", "river:linear_model.LogisticRegression", "--label-budget", "0.2")
    stream = summary["streams"]["office-1"]
    assert abs(stream["labels_used"] / stream["messages"] - 0.2) < 0.02


def test_half_space_trees_replay_a_csv_with_no_label_column(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.normal(0.5, 0.05, 2000)
    values[1500:1510] = 0.99  # a burst
    lines = ["timestamp,value"] + [f"2014-04-01 {i // 60 % 24:02d}:{i % 60:02d}:00,{v:.4f}"
                                   for i, v in enumerate(values)]
    path = tmp_path / "series.csv"
    path.write_text("\n".join(lines) + "\n")
    curve = tmp_path / "out.csv"
    summary = _replay(str(path), "--learner", "river:anomaly.HalfSpaceTrees", "--label", "none",
                      "--curve", str(curve))
    assert summary["task"] == "anomaly" and summary["streams"]["series"]["messages"] == 2000
    rows = curve.read_text().splitlines()
    assert rows[0] == "stream,reading,received_at,score,alarm,asked,y" and len(rows) == 2001
    scores = np.array([float(r.split(",")[3]) for r in rows[1:]])
    assert ((scores >= 0) & (scores <= 1)).all()
    assert scores[1500:1510].mean() > scores[200:1500].mean()  # the burst stands out


def test_the_memory_cap_stops_learning_and_predictions_go_on(tmp_path):
    model = edgelearn.make_learner("river:tree.HoeffdingTreeClassifier")
    capped = edgelearn.learners.river_model.RiverModel(
        model="tree.HoeffdingTreeClassifier", max_memory_bytes=1000)
    rng = np.random.default_rng(1)
    for learner in (model, capped):
        for _ in range(300):
            x = {"a": float(rng.normal()), "b": float(rng.normal())}
            learner.learn_one(x, x["a"] > 0)
    path = tmp_path / "capped.ckpt"
    save_checkpoint(path, capped.to_state())  # a checkpoint measures the model
    assert capped.report()["learning"] is False and capped.report()["model_bytes"] > 1000
    capped.learn_one({"a": 1.0}, True)
    assert capped.report()["labels_not_learned"] == 1
    assert capped.predict_one({"a": 2.0, "b": 0.0}) in (True, False)
    restored = edgelearn.from_state(load_checkpoint(path)[0] if isinstance(load_checkpoint(path), tuple)
                                    else load_checkpoint(path))
    assert restored.report()["learning"] is False
    x = {"a": 0.3, "b": -1.0}
    assert restored.predict_proba_one(x) == capped.predict_proba_one(x)


def test_a_river_model_state_round_trips_exactly_through_a_pipeline_checkpoint():
    pipeline = Pipeline("river:linear_model.LinearRegression", {}, label_policy="all")
    topic = Topics().data("s1")
    for seq in range(200):
        a = seq / 50.0
        pipeline.handle(topic, encode_data(float(seq), seq, {"a": a, "b": 1.0}, 3.0 * a - 1.0), 0.0)
    state = pipeline.to_state("s1")
    again = Pipeline("river:linear_model.LinearRegression", {}, label_policy="all")
    again.restore("s1", state)
    x = {"a": 1.234, "b": 1.0}
    assert again.learner("s1").predict_one(x) == pipeline.learner("s1").predict_one(x)
    assert pipeline.learner("s1").predict_one(x) != 0.0  # it learned
    assert pipeline.status()["streams"]["s1"]["scored"] == 200


PROTOCOL_ONLY = '''
"""A running mean, River's protocol and nothing else (no River, no edgelearn base class)."""


class RunningMean:
    task = "regression"

    def __init__(self, prior: float = 0.0):
        self.prior, self.n, self.total = prior, 0, 0.0

    def learn_one(self, x, y):
        self.n += 1
        self.total += y

    def predict_one(self, x):
        return self.total / self.n if self.n else self.prior
'''


def test_a_river_protocol_plug_in_replays_a_regression_csv(tmp_path):
    env = install_plugin(tmp_path, "running_mean", PROTOCOL_ONLY, "running_mean = running_mean:RunningMean")
    rows = ["ts,temp,co2"] + [f"{1700000000 + 60 * i},{20 + i % 3},{400 + 10 * (i % 3)}"
                              for i in range(300)]
    (tmp_path / "room.csv").write_text("\n".join(rows) + "\n")
    curve = tmp_path / "curve.csv"
    summary = _replay(str(tmp_path / "room.csv"), "--learner", "running_mean", "--label", "co2",
                      "--policy", "all", "--curve", str(curve), env=env, cwd=tmp_path)
    stream = summary["streams"]["room"]
    assert summary["task"] == "regression" and stream["messages"] == 300
    ys = [400 + 10 * (i % 3) for i in range(300)]  # test-then-train: the mean of those before
    expected = np.mean([abs(y - (np.mean(ys[:i]) if i else 0.0)) for i, y in enumerate(ys)])
    assert stream["mae"] == pytest.approx(expected)
    header, first = curve.read_text().splitlines()[:2]
    assert header == "stream,reading,received_at,y,prediction,lower,upper,asked"
    assert first.startswith("room,1,1700000000.0,400,0.0,,,1")


@pytest.mark.broker
def test_the_gateway_serves_a_river_model_through_mosquitto_with_checkpoints(
        broker, gateways, observer_factory):  # noqa: F811
    learner = ('[learner]\nkind = "river:linear_model.LogisticRegression"\n'
               "[learner.params]\nl2 = 0.001\n")
    gateway = gateways(broker.port, learner=learner)
    observer = observer_factory(broker.port)
    gateway.start()
    gateway.wait_online(observer)
    sender = observer_factory(broker.port, client_id="sender")
    topic = Topics().data("lab")
    for seq in range(100):
        a = (seq % 10) / 10.0
        sender.publish(topic, encode_data(float(seq), seq, {"a": a, "b": 0.5}, a > 0.45))
    sender.wait_acked()
    wait_until(lambda: len(observer.seen("lab")) == 100, 60, "a prediction for each reading")
    status = wait_until(lambda: (s := observer.status()) and s["counters"]["predictions"] == 100
                        and s, 30, "the status")
    lab = status["streams"]["lab"]
    assert lab["learned"] == 100 and lab["learning"] is True and "model_bytes" in lab
    assert gateway.terminate() == 0
    assert list((gateway.state).glob("stream-lab.ckpt"))
    # a restart restores the River model from its checkpoint
    gateway.start()
    status = gateway.wait_online(observer)
    assert status["checkpoints"]["restored"] == ["lab"]
    sender.publish(topic, encode_data(100.0, 100, {"a": 0.9, "b": 0.5}))
    sender.wait_acked()
    wait_until(lambda: ("lab", 100) in observer.predicted, 30, "the prediction after the restart")
    assert observer.predicted[("lab", 100)] is True
    assert gateway.terminate() == 0
