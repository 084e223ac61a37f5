"""Issue 27, item 3 after a crash: pending label requests are in ``labels.requests``
(firmware_bridge/service/request_log.py), so a SIGKILLed gateway's next process learns
every answer within the TTL. The gateway's own command against a mosquitto the test
starts; the log's reading and compaction on the module's own objects."""

from __future__ import annotations

import numpy as np
import pytest

from firmware_bridge.pipeline.pending import PendingLabels
from firmware_bridge.service.request_log import RequestLog, read_requests
from firmware_bridge.wire import encode_label

from brokers import broker, wait_until  # noqa: F401  (broker: a fixture)
from test_gateway_broker import (  # noqa: F401  (fixtures)
    TOPICS,
    gateways,
    observer_factory,
)
from test_world_misbehaves import _ask


@pytest.mark.broker
def test_requests_pending_at_a_sigkill_are_learned_when_answered_after_the_restart(
    broker, gateways, observer_factory
):
    observer = observer_factory(broker.port)
    publisher = observer_factory(broker.port, client_id="publisher", subscribe=("none",))
    gateway = gateways(broker.port, target_query_rate=1.0)
    gateway.start()
    gateway.wait_online(observer)
    requests = _ask(publisher, observer, "k1", 30)
    assert len(requests) >= 10
    wait_until(lambda: observer.status()["counters"]["label_pending"] == len(requests), 30,
               "a status counting every request pending")
    # Five answered before the crash: learned (and journaled), and logged as answered.
    answered, open_ = requests[:5], requests[5:]
    for request in answered:
        publisher.publish(TOPICS.label("k1"), encode_label(request["req"], request["seq"] % 7 > 3))
    wait_until(lambda: observer.status()["counters"]["label_answered"] == 5, 30, "five learned")
    learned = observer.status()["streams"]["k1"]["learned"]
    gateway.kill()  # SIGKILL: no labels.pending written
    assert not (gateway.state / "labels.pending").exists()

    restarted = gateways(broker.port, target_query_rate=1.0)  # the same state directory
    restarted.start()
    status = restarted.wait_online(observer)
    assert status["checkpoints"]["request_log"] == {
        "restored": len(open_), "expired": 0, "evicted": 0, "problem": None}
    assert status["streams"]["k1"]["learned"] == learned  # the journal's part
    for request in open_:
        publisher.publish(TOPICS.label("k1"), encode_label(request["req"], request["seq"] % 7 > 3))
    publisher.publish(TOPICS.label("k1"), encode_label(answered[0]["req"], True))
    publisher.publish(TOPICS.label("k1"), encode_label("gwtest-0-0123456789abcdef", True))
    wait_until(lambda: observer.status()["counters"]["label_answered"] == len(open_)
               and observer.status()["counters"]["label_unknown_request"] == 1
               and observer.status()["counters"]["label_duplicate"] == 1, 30,
               "every answer counted")
    status = observer.status()
    assert status["streams"]["k1"]["learned"] == learned + len(open_)
    assert status["counters"]["label_restored"] == len(open_)
    assert status["counters"]["label_pending"] == 0
    assert restarted.terminate() == 0


def _issue(labels, n, stream="s"):
    return [labels.issue(stream, seq, (np.arange(3, dtype=np.int32), np.full(3, 0.5)), True)
            for seq in range(n)]


def test_the_log_keeps_issued_minus_answered_and_compaction_keeps_only_the_pending(tmp_path):
    path = str(tmp_path / "labels.requests")
    labels = PendingLabels(100, 3600.0)
    log = RequestLog(path)
    log.attach(labels)
    ids = _issue(labels, 10)
    labels.settle(labels.lookup(ids[0], "s"))
    pending, answered, problem = read_requests(path, 3600.0)
    assert [row[0] for row in pending] == ids[1:] and problem is None
    assert answered == [(ids[0], "s", "duplicate")]
    assert pending[0][3][0].tolist() == [0, 1, 2] and pending[0][3][1].tolist() == [0.5] * 3
    assert 3590 < pending[0][5] <= 3600
    before = log.size
    assert log.compact() == 9
    assert log.size < before
    pending, answered, _ = read_requests(path, 3600.0)
    assert [row[0] for row in pending] == ids[1:] and answered == []
    # A torn last record (a write cut short) stops the reading there, reported.
    with open(path, "ab") as file:
        file.write(b"ELR1\x40\x00")
    pending, _, problem = read_requests(path, 3600.0)
    assert len(pending) == 9 and problem.startswith(f"byte {log.size}: a torn record")
    log.close()


def test_a_clock_stepped_back_does_not_lengthen_a_requests_ttl(tmp_path):
    path = str(tmp_path / "labels.requests")
    labels = PendingLabels(100, 60.0)
    log = RequestLog(path)
    log.attach(labels)
    _issue(labels, 1)
    log.close()
    pending, _, _ = read_requests(path, 60.0, now_wall=0.0)  # the wall clock years back
    assert pending[0][5] == 60.0
