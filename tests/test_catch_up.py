"""Catch-up after a stall: the worker takes label answers in proportion to the data
of a backlog, so the backlog is predicted by a model that has learned them
(firmware_bridge/service/intake.py; issue 29's outlier). The reverse guarantee, an
answer flood cannot starve data, is tests/test_answer_flood.py.

A real mosquitto and the gateway's own command: the gateway asks for labels of its
first readings, is stopped (SIGSTOP) before any answer comes, the labeller answers
every request and the sensor publishes a backlog while it is stopped; then it goes on
(SIGCONT). Both sessions' queues are full at once, so what the gateway learns before
each backlog reading shows in that reading's score: 0 from the model that has learned
nothing, not 0 once it has learned an answer.
"""

from __future__ import annotations

import json
import os
import signal
import time

import msgpack
import pytest

from firmware_bridge.wire import encode_data, encode_label

from brokers import Listener, broker, wait_until  # noqa: F401  (broker: a fixture)
from test_gateway_broker import (  # noqa: F401  (fixtures)
    TOPICS,
    gateways,
    observer_factory,
)

pytestmark = pytest.mark.broker

STREAM = "s1"
FIRST = 40  # readings before the stall: their label requests are answered during it
BACKLOG = 3000  # readings published during the stall


def _x(seq: int) -> dict:
    return {"a": 1.0 if seq % 2 else -1.0, "b": 0.5}


def _y(seq: int) -> bool:
    return bool(seq % 2)


class _Scores(Listener):
    """Every prediction of ``STREAM``: seq -> score, and the order they came in."""

    def __init__(self, port: int):
        self.score: dict[int, float] = {}
        self.order: list[int] = []
        super().__init__(port, [TOPICS.prediction(STREAM)], self._on_message, "scores")

    def _on_message(self, topic: str, payload: bytes) -> None:
        body = msgpack.unpackb(payload)
        if body["seq"] not in self.score:  # in the order they first came
            self.order.append(body["seq"])
        self.score[body["seq"]] = float(body["score"])


def test_a_backlog_after_a_stall_is_predicted_with_the_answers_learned_early(
    broker, gateways, observer_factory  # noqa: F811
):
    observer = observer_factory(broker.port)
    gateway = gateways(broker.port, target_query_rate=0.5)
    gateway.start()
    gateway.wait_online(observer)
    scores = _Scores(broker.port)
    sensor = observer_factory(broker.port, client_id="sensor", subscribe=("none",))
    for seq in range(FIRST):
        sensor.publish(TOPICS.data(STREAM), encode_data(time.time(), seq, _x(seq)))
    wait_until(lambda: len(scores.score) >= FIRST, 60, "the first predictions")
    wait_until(lambda: len(observer.requests) > 0, 10, "label requests")
    time.sleep(0.5)  # every request of the first readings is in
    # by request id (a request can match two of the observer's filters)
    requests = list({body["req"]: body for stream, body in observer.requests
                     if stream == STREAM}.values())
    assert 5 <= len(requests) <= FIRST
    # Nothing learned yet: the model's scores are all 0.
    assert all(scores.score[seq] == 0.0 for seq in range(FIRST)), scores.score

    os.kill(gateway.process.pid, signal.SIGSTOP)
    try:
        for body in requests:
            sensor.publish(TOPICS.label(STREAM), encode_label(body["req"], _y(body["seq"])))
        for seq in range(FIRST, FIRST + BACKLOG):
            sensor.publish(TOPICS.data(STREAM), encode_data(time.time(), seq, _x(seq)))
        sensor.wait_acked()
        time.sleep(1.0)  # mosquitto has sent each session what its window takes
    finally:
        os.kill(gateway.process.pid, signal.SIGCONT)
    wait_until(lambda: len(scores.score) >= FIRST + BACKLOG, 120, "every backlog prediction")
    status = wait_until(lambda: (s := observer.status()) and s["pid"] == gateway.process.pid
                        and s["counters"]["label_answered"] >= len(requests) and s,
                        60, "every answer learned")
    scores.close()
    assert gateway.terminate() == 0
    backlog = [seq for seq in scores.order if seq >= FIRST]
    learned = [i for i, seq in enumerate(backlog) if scores.score[seq] != 0.0]
    result = {"requests": len(requests), "backlog": len(backlog),
              "first_learned_at": learned[0] if learned else None,
              "unlearned": len(backlog) - len(learned),
              "label_answered": status["counters"]["label_answered"]}
    print(json.dumps(result))
    assert sorted(backlog) == list(range(FIRST, FIRST + BACKLOG))
    # The answers waited for the stall only: the backlog was predicted by the model
    # that learned them from (about) its first turn on. Before the worker took
    # answers in proportion, it took the inbound queue's data first: the first
    # ~1,000 readings of the backlog had the unlearned model.
    assert learned and learned[0] < 300, result
