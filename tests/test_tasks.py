"""Tasks beyond classification through the whole shape: the wire's answer rules by task,
the pipeline's scoring and outputs for a regression and an anomaly stream (learners
written here in a few lines, as a plug-in author would), label requests and answers,
the outputs (curves, Home Assistant, Prometheus) and a CSV as users have them."""

from __future__ import annotations

import json
import math

import msgpack
import numpy as np
import pytest

from edgelearn.constraints import Interval
from edgelearn.learners.base import Decision, Learner
from firmware_bridge.offline.csv_source import csv_source
from firmware_bridge.pipeline import Pipeline
from firmware_bridge.service.sinks.homeassistant import HomeAssistant
from firmware_bridge.service.sinks.prometheus import render_streams
from firmware_bridge.wire import (
    DEFAULT_LIMITS,
    Topics,
    encode_data,
    encode_label,
    parse_message,
)
from firmware_bridge.wire.labels import label_problem

TOPIC = Topics().data("s")


@pytest.mark.parametrize(("task", "good", "bad"), [
    ("binary", [True, 0, "occupied"], [0.5, float("nan"), [1]]),
    ("regression", [21.5, -3, 0, 1e300], [True, "21.5", float("nan"), float("inf"), None, {"a": 1}]),
    ("anomaly", [True, False, 1, 0], [2, -1, 0.5, "yes", None]),
])
def test_the_wire_takes_the_answers_of_the_streams_task(task, good, bad):
    for y in good:
        assert label_problem(y, DEFAULT_LIMITS, task) is None, y
        message = parse_message(TOPIC, encode_data(1.0, 0, {"t": 1.0}, y), Topics(), task=task)
        assert message.y == y
    for y in bad:
        if y is None:
            continue
        assert label_problem(y, DEFAULT_LIMITS, task) is not None, y
        payload = msgpack.packb({"ts": 1.0, "seq": 0, "ch": {"t": 1.0}, "y": y})
        assert parse_message(TOPIC, payload, Topics(), task=task).reason == "bad_label"


class MeanRegressor(Learner):
    """The running mean of the references, with an interval of two standard deviations.

    Parameters
    ----------
    capacity
        Channel slots.
    """

    tasks = frozenset({"regression"})
    capabilities = frozenset({"label_rate"})
    asks_selectively = True
    _parameter_constraints = {"capacity": Interval(int, 1, None)}

    def __init__(self, capacity: int = 16):
        self._set_params(locals())
        self._init_channels(capacity, evict_after=1000)
        self._init_targets(task="regression")
        self.stats = np.zeros(3)  # n, mean, M2
        self.target_query_rate = 0.5

    def _score(self, slots, z):
        return self.stats[1], math.sqrt(self.stats[2] / self.stats[0]) if self.stats[0] > 1 else 1.0

    def _proba(self, margin):
        raise TypeError("a regressor")

    def decide_one(self, x):
        slots, z = self.channels.observe(x, True)
        mean, sd = self._score(slots, z)
        return Decision(float(mean), sd, sd > 0.5, slots, z,
                        {"lower": mean - 2 * sd, "upper": mean + 2 * sd})

    def learn(self, slots, z, y):
        y = self.targets.value(y)
        n, mean, m2 = self.stats
        n += 1
        delta = y - mean
        mean += delta / n
        self.stats[:] = n, mean, m2 + delta * (y - mean)

    def _forget_slot(self, slot):
        pass

    _LEARNED = ("stats",)


class ThresholdDetector(Learner):
    """Alarms when a channel's value is beyond 3 (a score of value / 6 in [0, 1]).

    Parameters
    ----------
    capacity
        Channel slots.
    """

    tasks = frozenset({"anomaly"})
    _parameter_constraints = {"capacity": Interval(int, 1, None)}

    def __init__(self, capacity: int = 16):
        self._set_params(locals())
        self._init_channels(capacity, evict_after=1000)
        self._init_targets(task="anomaly")
        self.muted = np.zeros(1)  # a false alarm mutes the next ones

    def _score(self, slots, z):
        raise TypeError("a detector")

    def _proba(self, margin):
        raise TypeError("a detector")

    def decide_one(self, x):
        slots, z = self.channels.observe(x, False)
        top = max(x, key=x.get) if x else None
        score = min(1.0, max(x.values(), default=0.0) / 6.0)
        alarm = score > 0.5 and not self.muted[0]
        return Decision(alarm, score, alarm, slots, z, {"top": [top] if alarm else []})

    def learn(self, slots, z, y):
        if self.targets.sign(y) < 0:
            self.muted[0] = 1.0

    def _forget_slot(self, slot):
        pass

    _LEARNED = ("muted",)


@pytest.fixture
def kinds(monkeypatch):
    """The two learners above as kinds, as a plug-in registers them."""
    import edgelearn.learners.registry as registry

    monkeypatch.setitem(registry.BUILTIN, "mean_regressor", f"{__name__}:MeanRegressor")
    monkeypatch.setitem(registry.BUILTIN, "threshold_detector", f"{__name__}:ThresholdDetector")


def _unpack(outbound):
    return msgpack.unpackb(outbound.payload)


def test_a_regression_stream_predicts_intervals_asks_and_learns_numbers(kinds):
    pipeline = Pipeline("mean_regressor", {}, label_policy="request")
    assert pipeline.task == "regression"
    references = [20.0, 22.0, 21.0, 23.0]
    for seq, y in enumerate(references):
        out = pipeline.handle(TOPIC, encode_data(float(seq), seq, {"t": 1.0}, y), 0.0)
        prediction = _unpack(out[0])
        assert set(prediction) == {"seq", "ts", "y", "score", "query", "lower", "upper"}
    metrics = pipeline.metrics("s")
    expected = [abs(y - (np.mean(references[:i]) if i else 0.0)) for i, y in enumerate(references)]
    assert metrics.mae == pytest.approx(np.mean(expected))
    # a reading without a reference: the wide interval asks; the request carries it
    out = pipeline.handle(TOPIC, encode_data(9.0, 9, {"t": 1.0}), 0.0)
    request = _unpack(out[1])
    assert {"lower", "upper"} <= set(request) and request["lower"] < request["y_hat"] < request["upper"]
    learned = pipeline.counters()["learned"]
    pipeline.handle("edgelearn/s/label", encode_label(request["req"], 30.5), 0.0)
    assert pipeline.counters()["learned"] == learned + 1
    bad = pipeline.handle("edgelearn/s/label", msgpack.packb({"req": request["req"], "y": "hot"}), 0.0)
    assert bad == [] and pipeline.counters()["bad_label"] == 1
    status = pipeline.status()["streams"]["s"]
    assert status["scored"] == 4 and status["coverage"] is not None and "accuracy" not in status


def test_an_anomaly_stream_alarms_names_its_channels_and_learns_a_false_alarm(kinds):
    pipeline = Pipeline("threshold_detector", {}, label_policy="request")
    out = pipeline.handle(TOPIC, encode_data(0.0, 0, {"t": 1.0, "p": 5.0}), 0.0)
    prediction, request = _unpack(out[0]), _unpack(out[1])
    assert prediction["y"] is True and prediction["top"] == ["p"] and 0 <= prediction["score"] <= 1
    assert request["top"] == ["p"]
    pipeline.handle("edgelearn/s/label", encode_label(request["req"], False), 0.0)  # a false alarm
    out = pipeline.handle(TOPIC, encode_data(1.0, 1, {"t": 1.0, "p": 5.0}), 0.0)
    assert _unpack(out[0])["y"] is False  # muted by the answer
    status = pipeline.status()["streams"]["s"]
    assert status["alarms"] == 1 and status["false_alarms"] == 1 and status["precision"] == 0.0
    # the outputs read the task: HA's alarm and score, Prometheus' alarm counters
    ha = json.loads(HomeAssistant.stream_state(status, True, "anomaly", pipeline.last_output("s")))
    assert ha["alarm"] == "ON" and ha["score"] == pytest.approx(5 / 6)
    page = render_streams({"s": status}, {"gateway": "g"})
    assert 'edgelearn_stream_false_alarms_total{gateway="g",stream="s"} 1' in page


def test_a_csv_as_users_have_it(tmp_path):
    path = tmp_path / "office A.csv"
    path.write_text("ts,temp,hum id,note,occupied\n"
                    "1700000000,20.5,40,a,1\n"
                    "1700000060,,41,b,\n"
                    "1700000120,21,?,c,0\n")
    source = csv_source(path)
    messages = [parse_message(r.topic, r.payload, Topics()) for r in source.records]
    assert source.stream == "office_A" and source.channels == ["temp", "hum_id"]
    assert source.label == "occupied" and source.time == "ts" and source.ignored == ["note"]
    assert [(m.ts, m.channels, m.y) for m in messages] == [
        (1700000000.0, {"temp": 20.5, "hum_id": 40.0}, 1),
        (1700000060.0, {"hum_id": 41.0}, None),
        (1700000120.0, {"temp": 21.0}, 0)]


def test_a_csv_whose_columns_collide_as_channel_names_is_refused(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a b,a_b,y\n1,2,0\n")
    with pytest.raises(ValueError, match="give the same channel name twice"):
        csv_source(path)


@pytest.mark.parametrize("kind", ["active_arow", "kelm_multilabel"])
def test_nothing_scored_is_unknown_not_zero(kind):
    """A stream whose answers never came has no accuracy (issue 28, defect 2): None in
    its status, null in Home Assistant's state (HA shows "unknown"), NaN on /metrics;
    the first scored answer gives a number."""
    pipeline = Pipeline(kind, {}, topics=Topics())
    pipeline.handle(TOPIC, encode_data(0.0, 0, {"a": 1.0, "b": 0.5}), 0.0)
    status = pipeline.status()["streams"]["s"]
    keys = ("accuracy", "f1") if kind == "active_arow" else ("hamming_loss", "micro_f1")
    assert status["scored"] == 0 and all(status[key] is None for key in keys), status
    if kind == "active_arow":
        state = json.loads(HomeAssistant.stream_state(status, True, "binary"))
        assert state["accuracy"] is None
    page = render_streams({"s": status}, {"gateway": "g"})
    assert all(f'edgelearn_stream_{key}{{gateway="g",stream="s"}} NaN' in page for key in keys)
    y = True if kind == "active_arow" else {"x": True}
    pipeline.handle(TOPIC, encode_data(1.0, 1, {"a": 1.0, "b": 0.5}, y), 0.0)
    status = pipeline.status()["streams"]["s"]
    assert status["scored"] == 1 and all(0.0 <= status[key] <= 1.0 for key in keys), status
