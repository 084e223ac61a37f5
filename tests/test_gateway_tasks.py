"""The regression and anomaly tasks served end to end: the gateway as a subprocess
against a real mosquitto (started by each test on a free loopback port), with its
task's default kind (``[learner] task = "regression"`` / ``"anomaly"``, no kind).

Each test drives a stream through the broker in phases and runs the same readings and
answers, at the same points, through an in-process learner of the same kind and
parameters: the gateway's predictions, intervals, scores and alarms must be exactly
that reference's, before and after the gateway is stopped and restarted from its
checkpoint (so a restored learner that lost anything fails). Without the
``mosquitto`` binary these tests fail; they do not skip.
"""

from __future__ import annotations

import collections
import math
import random
import threading

import msgpack
import pytest
from brokers import Listener, broker, wait_until  # noqa: F401  (broker: a fixture)
from test_gateway_broker import GATEWAY_ID, gateways, observer_factory  # noqa: F401  (fixtures)

import edgelearn
from firmware_bridge.wire import Topics, encode_data, encode_label

pytestmark = pytest.mark.broker

TOPICS = Topics()
#: Startup compiles (or loads) the task's kernels: generous on a shared machine.
ONLINE_TIMEOUT = 180


class Outputs(Listener):
    """Every prediction and label request the gateway publishes, body and all."""

    def __init__(self, port: int):
        self.predictions: dict[tuple[str, int], dict] = {}
        self.requests: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        super().__init__(port, [TOPICS.filter("prediction"), TOPICS.filter("label_request")],
                         self._on_message)

    def _on_message(self, topic: str, payload: bytes) -> None:
        kind, stream = TOPICS.parse(topic)
        body = msgpack.unpackb(payload)
        with self._lock:
            if kind == "prediction":
                for prediction in body.get("predictions", [body]):
                    self.predictions[(stream, prediction["seq"])] = prediction
            else:
                self.requests.append((stream, body))

    def wait_predictions(self, stream: str, seqs, timeout: float = 60) -> list[dict]:
        wait_until(lambda: all((stream, s) in self.predictions for s in seqs), timeout,
                   f"the predictions of {stream} {min(seqs)}..{max(seqs)}")
        return [self.predictions[(stream, s)] for s in seqs]

    def requests_of(self, stream: str) -> list[dict]:
        with self._lock:
            return [body for name, body in self.requests if name == stream]


@pytest.fixture
def outputs(broker):  # noqa: F811
    made = Outputs(broker.port)
    yield made
    made.close()


def publish_all(sender, stream: str, readings, with_y: bool = False) -> list[int]:
    """Publish ``(seq, channels, y)`` readings of ``stream`` (QoS 1, in order), their
    ``y`` in the data message ``with_y``."""
    for seq, channels, y in readings:
        sender.publish(TOPICS.data(stream), encode_data(float(seq), seq, channels, y if with_y else None))
    sender.wait_acked()
    return [seq for seq, _, _ in readings]


def stream_status(observer, stream: str, predicate, what: str, timeout: float = 30) -> dict:
    """The first status whose ``stream`` entry satisfies ``predicate``."""
    def ready():
        status = observer.status()
        entry = status and status.get("streams", {}).get(stream)
        return status if entry and predicate(entry, status) else None

    return wait_until(ready, timeout, what)


# -- regression -----------------------------------------------------------------------

REGRESSION_PARAMS = {"target_query_rate": 0.2, "seed": 5}


def meter_readings(start: int, n: int, rng: random.Random):
    """(seq, channels, reference) of a virtual sensor: the reference is linear in the
    two channels, with noise; now and then the humidity channel is missing."""
    out = []
    for seq in range(start, start + n):
        t, h = rng.gauss(20, 3), rng.gauss(50, 10)
        channels = {"temp": round(t, 3), "hum": round(h, 3)}
        if seq % 5 == 4:
            del channels["hum"]
        out.append((seq, channels, round(400 + 30 * t + 2 * h + rng.gauss(0, 5), 2)))
    return out


def test_a_regression_stream_predicts_intervals_asks_for_references_and_restores(
        broker, gateways, observer_factory, outputs):  # noqa: F811
    learner = ('[learner]\ntask = "regression"\n[learner.params]\n'
               + "".join(f"{k} = {v}\n" for k, v in REGRESSION_PARAMS.items()))
    gateway = gateways(broker.port, learner=learner)
    observer = observer_factory(broker.port)
    gateway.start()
    gateway.wait_online(observer, timeout=ONLINE_TIMEOUT)
    sender = observer_factory(broker.port, client_id="sender", subscribe=("nothing/here",))
    reference = edgelearn.make_learner(task="regression", params=REGRESSION_PARAMS)
    assert type(reference) is edgelearn.AROWRegressor
    expected: dict[int, tuple] = {}
    kept: dict[int, tuple] = {}

    def reference_decides(readings, with_y: bool):
        for seq, channels, y in readings:
            d = reference.decide_one(channels)
            expected[seq] = (d.label, d.score, d.ask, d.extra["lower"], d.extra["upper"])
            kept[seq] = (d.slots, d.z)
            if with_y:
                reference.learn(d.slots, d.z, y)

    def check(predictions):
        for p in predictions:
            label, score, ask, lower, upper = expected[p["seq"]]
            assert (p["y"], p["score"], p["query"]) == (label, score, ask), (p, expected[p["seq"]])
            if math.isfinite(lower) and math.isfinite(upper):
                assert (p["lower"], p["upper"]) == (lower, upper)
            else:  # no interval yet: nil on the wire
                assert p["lower"] is None and p["upper"] is None

    rng = random.Random(7)
    # 1. Thirty readings with their reference in the data message: each is learned.
    first = meter_readings(0, 30, rng)
    reference_decides(first, with_y=True)
    check(outputs.wait_predictions("meter", publish_all(sender, "meter", first, with_y=True)))
    # 2. 200 readings without one: predictions with intervals; references asked for.
    second = meter_readings(30, 200, rng)
    truth = {seq: y for seq, _, y in second}
    reference_decides(second, with_y=False)
    predictions = outputs.wait_predictions("meter", publish_all(sender, "meter", second))
    check(predictions)
    assert all(p["lower"] < p["y"] < p["upper"] for p in predictions)
    asked = [p["seq"] for p in predictions if p["query"]]
    wait_until(lambda: len(outputs.requests_of("meter")) == len(asked), 30, "the label requests")
    requests = outputs.requests_of("meter")
    assert [r["seq"] for r in requests] == asked and 20 <= len(asked) <= 60  # ~20% of 200
    for r in requests:  # a request carries the prediction's interval
        assert (r["y_hat"], r["lower"], r["upper"]) == (expected[r["seq"]][0], *expected[r["seq"]][3:])
    # 3. A non-number answer is rejected and counted; the request stays open.
    labeller = sender
    labeller.publish(TOPICS.label("meter"), msgpack.packb({"req": requests[0]["req"], "y": "hot"}))
    labeller.publish(TOPICS.label("meter"), msgpack.packb({"req": requests[0]["req"], "y": True}))
    labeller.wait_acked()
    stream_status(observer, "meter", lambda e, s: s["counters"]["bad_label"] == 2,
                  "the two non-number answers counted as bad_label")
    # 4. Every request answered with its number, in order: each is learned.
    for r in requests:
        labeller.publish(TOPICS.label("meter"), encode_label(r["req"], truth[r["seq"]]))
        reference.learn(*kept[r["seq"]], truth[r["seq"]])
    labeller.wait_acked()
    status = stream_status(observer, "meter", lambda e, s: e["learned"] == 30 + len(requests),
                           "every answer learned")
    assert status["counters"]["label_answered"] == len(requests)
    meter = status["streams"]["meter"]
    assert meter["scored"] == 30 and meter["mae"] > 0 and meter["coverage"] is not None
    # 5. It predicts better for what it learned: the next readings against their truth.
    third = meter_readings(230, 50, rng)
    reference_decides(third, with_y=False)
    predictions = outputs.wait_predictions("meter", publish_all(sender, "meter", third))
    check(predictions)
    truth3 = {seq: y for seq, _, y in third}
    before = [abs(p["y"] - truth[p["seq"]]) for p in outputs.wait_predictions("meter", range(30, 80))]
    after = [abs(p["y"] - truth3[p["seq"]]) for p in predictions]
    assert sum(after) / len(after) < 0.5 * sum(before) / len(before), (before, after)
    # 6. Stopped and started again: the learner comes back from its checkpoint.
    assert gateway.terminate() == 0
    gateway.start()
    status = gateway.wait_online(observer, timeout=ONLINE_TIMEOUT)
    assert status["checkpoints"]["restored"] == ["meter"]
    fourth = meter_readings(280, 20, rng)
    reference_decides(fourth, with_y=False)
    check(outputs.wait_predictions("meter", publish_all(sender, "meter", fourth)))
    assert gateway.terminate() == 0


# -- anomaly --------------------------------------------------------------------------

#: A short episode, so a repeat of the same spike would alarm again without an answer.
ANOMALY_PARAMS = {"episode_half_life": 1.0, "season": 0, "warmup": 20, "target_query_rate": 0.05}


def pump_readings(start: int, n: int, rng: random.Random, spikes=()):
    """(seq, channels, None) of a pump: flow and temperature around their levels, the
    temperature at 95 at each seq in ``spikes``."""
    out = []
    for seq in range(start, start + n):
        channels = {"flow": round(12 + rng.gauss(0, 0.5), 3), "temp": round(40 + rng.gauss(0, 1), 3)}
        if seq in spikes:
            channels["temp"] = 95.0
        out.append((seq, channels, None))
    return out


def test_an_anomaly_stream_alarms_asks_learns_the_answers_and_restores(
        broker, gateways, observer_factory, outputs):  # noqa: F811
    learner = ('[learner]\ntask = "anomaly"\n[learner.params]\n'
               + "".join(f"{k} = {v}\n" for k, v in ANOMALY_PARAMS.items()))
    gateway = gateways(broker.port, learner=learner)
    observer = observer_factory(broker.port)
    gateway.start()
    gateway.wait_online(observer, timeout=ONLINE_TIMEOUT)
    sender = observer_factory(broker.port, client_id="sender", subscribe=("nothing/here",))
    reference = edgelearn.make_learner(task="anomaly", params=ANOMALY_PARAMS)
    unanswered = edgelearn.make_learner(task="anomaly", params=ANOMALY_PARAMS)  # the control
    assert type(reference) is edgelearn.SurpriseDetector
    expected: dict[int, tuple] = {}
    kept: dict[int, tuple] = {}

    def reference_decides(readings):
        control = []
        for seq, channels, _ in readings:
            d = reference.decide_one(channels)
            expected[seq] = (d.label, d.score, d.ask, list(d.extra["top"]))
            kept[seq] = (d.slots, d.z)
            control.append(unanswered.decide_one(channels).label)
        return control

    def check(predictions):
        for p in predictions:
            assert (p["y"], p["score"], p["query"], p["top"]) == expected[p["seq"]], (p, expected[p["seq"]])

    rng = random.Random(3)
    # 1. 300 ordinary readings, then the temperature spikes at 300.
    first = pump_readings(0, 320, rng, spikes=(300,))
    reference_decides(first)
    predictions = outputs.wait_predictions("pump", publish_all(sender, "pump", first))
    check(predictions)
    spike = predictions[300]
    assert spike["y"] is True and spike["score"] > 0.9 and spike["top"][0] == "temp" and spike["query"]
    assert sum(p["y"] for p in predictions) <= 3  # ordinary readings hardly alarm
    wait_until(lambda: any(r["seq"] == 300 for r in outputs.requests_of("pump")), 30,
               "the label request about the spike")
    requests = outputs.requests_of("pump")
    assert {r["seq"] for r in requests} == {p["seq"] for p in predictions if p["query"]}
    assert all(r["y_hat"] is True and r["top"] == expected[r["seq"]][3] for r in requests)
    # 2. The operator answers: the spike was real, any earlier alarm was not. A verdict
    # that is not one is rejected and counted.
    sender.publish(TOPICS.label("pump"), msgpack.packb({"req": requests[0]["req"], "y": "maybe"}))
    for r in requests:
        real = r["seq"] == 300
        sender.publish(TOPICS.label("pump"), encode_label(r["req"], real))
        reference.learn(*kept[r["seq"]], real)
    sender.wait_acked()
    status = stream_status(observer, "pump", lambda e, s: e["learned"] == len(requests),
                           "the answers learned")
    assert status["counters"]["bad_label"] == 1
    pump = status["streams"]["pump"]
    assert pump["true_alarms"] == 1 and pump["false_alarms"] == len(requests) - 1
    # 3. The same spike again: the detector that got no answer has absorbed it (no
    # alarm); the gateway's, told it was real, alarms.
    second = pump_readings(320, 60, rng, spikes=(360,))
    control = reference_decides(second)
    assert control[40] is False
    predictions = outputs.wait_predictions("pump", publish_all(sender, "pump", second))
    check(predictions)
    assert predictions[40]["y"] is True and predictions[40]["top"][0] == "temp"
    # 4. Stopped and started again: the detector comes back from its checkpoint, its
    # statistics and the confirmed anomaly with it.
    assert gateway.terminate() == 0
    gateway.start()
    status = gateway.wait_online(observer, timeout=ONLINE_TIMEOUT)
    assert status["checkpoints"]["restored"] == ["pump"]
    third = pump_readings(380, 40, rng, spikes=(400,))
    control = reference_decides(third)
    assert control[20] is False
    predictions = outputs.wait_predictions("pump", publish_all(sender, "pump", third))
    check(predictions)
    assert predictions[20]["y"] is True
    assert gateway.terminate() == 0
