"""Issue 27 against real processes: the gateway's command, a mosquitto each test
starts, faults made with real tools (libfaketime stepping the wall clock, a broker
ACL refusing publishes). A missing part fails the test; nothing skips."""

from __future__ import annotations

import re
import subprocess
import sys
import time
import urllib.request

import pytest

from firmware_bridge.wire import encode_data, encode_label

from brokers import Broker, broker, free_port, wait_until  # noqa: F401  (broker: a fixture)
from faketime import SteppingClock
from test_gateway_broker import (  # noqa: F401  (fixtures)
    ROOT,
    TOPICS,
    gateways,
    observer_factory,
)

pytestmark = pytest.mark.broker

TEN_YEARS_S = 315_000_000  # a little under 10 * 365 days


def _metrics(port: int) -> dict[str, float]:
    """The gateway's Prometheus page, as {metric name: value} of its unlabelled-by-part
    samples (the first sample of each name)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        page = response.read().decode()
    values: dict[str, float] = {}
    for line in page.splitlines():
        match = re.fullmatch(r"(edgelearn_[a-z_]+)\{[^}]*\} (\S+)", line)
        if match and match.group(1) not in values:
            values[match.group(1)] = float(match.group(2))
    return values


def test_a_stepped_wall_clock_leaves_uptime_ages_and_label_ttls_alone(
    tmp_path, broker, gateways, observer_factory
):
    # A board without a real-time clock boots 10 years behind; NTP later steps it.
    clock = SteppingClock(tmp_path / "clock", "-10y")
    metrics_port = free_port()
    observer = observer_factory(broker.port)
    publisher = observer_factory(broker.port, client_id="publisher", subscribe=("none",))
    gateway = gateways(broker.port, env=clock.env(str(ROOT)), extra=(
        f"[prometheus]\nenabled = true\nport = {metrics_port}\n"), target_query_rate=1.0)
    gateway.config.write_text(gateway.config.read_text().replace(
        "[checkpoints]\ninterval_seconds = 1\n", "[checkpoints]\ninterval_seconds = 3600\n"))
    gateway.start()
    status = gateway.wait_online(observer, timeout=60)
    assert status["time"] < time.time() - TEN_YEARS_S  # the fake clock is in effect
    for seq in range(5):
        publisher.publish(TOPICS.data("c1"), encode_data(float(seq), seq, {"a": float(seq)}))
    wait_until(lambda: len(observer.requests) >= 1, 30, "a label request")
    _, request = observer.requests[0]
    started = time.monotonic()

    clock.step("+0")  # NTP: +10 years
    stepped = wait_until(lambda: (s := observer.status()) and s["counters"]["clock_steps"] >= 1
                         and s["time"] > time.time() - 60 and s, 30,
                         "a status after the step")
    elapsed = time.monotonic() - started
    # Uptime and checkpoint age are seconds of this test, not ten years.
    assert 0 < stepped["uptime_s"] < 120 + elapsed, stepped["uptime_s"]
    assert 0 <= stepped["checkpoint_age_s"] <= stepped["uptime_s"] + 0.1
    assert stepped["counters"]["clock_steps"] == 1
    assert stepped["started_at"] < time.time() - TEN_YEARS_S  # shown as it was seen
    metrics = wait_until(lambda: (m := _metrics(metrics_port)).get("edgelearn_clock_steps_total") == 1
                         and m, 10, "the step on the metrics page")
    assert 0 < metrics["edgelearn_uptime_seconds"] < 120 + elapsed
    assert 0 <= metrics["edgelearn_checkpoint_age_seconds"] < 120 + elapsed

    # The request issued before the step is still live (its TTL is monotonic): learned.
    learned_before = stepped["streams"]["c1"]["learned"]
    publisher.publish(TOPICS.label("c1"), encode_label(request["req"], True))
    wait_until(lambda: observer.status()["streams"]["c1"]["learned"] == learned_before + 1,
               30, "the answer learned")
    counters = observer.status()["counters"]
    assert counters["label_expired"] == 0 and counters["label_unknown_request"] == 0

    clock.step("-10y")  # and back again: a second step, counted and logged once more
    wait_until(lambda: observer.status()["counters"]["clock_steps"] == 2, 30, "the second step")
    status = observer.status()
    assert 0 < status["uptime_s"] < 180 + time.monotonic() - started
    assert gateway.terminate() == 0
    log = gateway.log.read_text()
    assert log.count("clock_step: the wall clock stepped by +3") == 1, log
    assert log.count("clock_step: the wall clock stepped by -3") == 1, log


def test_publishes_the_broker_refuses_are_counted_logged_and_degrade_the_status(
    tmp_path, gateways, observer_factory
):
    # The gateway's user may read data and answers and write its status, nothing else:
    # mosquitto answers its predictions and label requests "not authorized" (0x87).
    acl = tmp_path / "acl"
    acl.write_text("topic readwrite #\n"  # anonymous clients: the test's own
                   "user edgelearn-gwtest\n"
                   "topic read sensors/+/data\ntopic read edgelearn/+/label\n"
                   f"topic write {TOPICS.status('gwtest')}\n")
    broker = Broker(tmp_path / "broker", extra=f"acl_file {acl}\n")
    # mosquitto 2.0.11 with "max_queued_messages 0" (no limit) closes the connection
    # of a client whose QoS 1 publish its ACL denies, right after the 0x87 PUBACK;
    # with a limit (as configs/mosquitto.conf.example sets) it answers and carries on.
    broker.config.write_text(broker.config.read_text().replace(
        "max_queued_messages 0\n", "max_queued_messages 100000\n"))
    broker.start()
    try:
        _refused(broker, gateways, observer_factory)
    finally:
        broker.stop()


def _refused(broker, gateways, observer_factory):
    metrics_port = free_port()
    observer = observer_factory(broker.port)
    publisher = observer_factory(broker.port, client_id="publisher", subscribe=("none",))
    gateway = gateways(broker.port, extra=f"[prometheus]\nenabled = true\nport = {metrics_port}\n")
    gateway.config.write_text(gateway.config.read_text().replace(
        "[mqtt]\n", '[mqtt]\nusername = "edgelearn-gwtest"\n'))
    gateway.start()
    status = gateway.wait_online(observer)
    assert status["health"] == "ok" and status["degraded_by"] == []
    n = 200
    for seq in range(n):
        publisher.publish(TOPICS.data("r1"), encode_data(float(seq), seq, {"a": float(seq % 7)}))
    publisher.wait_acked(30)
    status = wait_until(lambda: (s := observer.status())["counters"]["predictions"] == n
                        and s["counters"]["publish_refused_prediction"] == n and s, 60,
                        "every prediction counted as refused")
    counters = status["counters"]
    assert counters["label_requests"] > 0
    assert counters["publish_refused_label_request"] == counters["label_requests"]
    assert counters["publish_refused_status"] == 0  # the status topic is allowed
    assert status["health"] == "degraded" and status["degraded_by"] == ["publish_refused"]
    assert {"publish_refused_prediction", "publish_refused_label_request"} <= set(
        status["counter_problems"])
    assert not observer.seen("r1") and not observer.requests  # the broker did refuse them
    shown = subprocess.run(
        [sys.executable, "-m", "firmware_bridge", "status", "--broker",
         f"127.0.0.1:{broker.port}", "--gateway-id", "gwtest"], cwd=ROOT, env=gateway.env,
        capture_output=True, text=True, timeout=60)
    assert "gateway gwtest: online, degraded (publish_refused)" in shown.stdout, shown
    metrics = _metrics(metrics_port)
    assert metrics["edgelearn_publish_refused_prediction_total"] == n
    assert metrics["edgelearn_degraded"] == 1
    assert gateway.terminate() == 0
    log = gateway.log.read_text()
    assert 1 <= log.count("the broker refused a prediction publish") < n, log
    assert "Not authorized" in log
    # The rule: the inbound messages were acknowledged (processed; their outputs
    # refused and counted), so the broker has nothing to deliver again.
    again = gateways(broker.port, name="again")
    again.config.write_text(gateway.config.read_text())
    again.start()
    status = again.wait_online(observer)
    time.sleep(2.0)
    assert observer.status()["counters"]["messages"] == 0
    assert again.terminate() == 0


def test_mqtt_3_1_1_is_warned_about_by_check_config_and_at_start(tmp_path, broker, gateways,
                                                                  observer_factory):
    gateway = gateways(broker.port, extra="")
    gateway.config.write_text(gateway.config.read_text().replace(
        "[mqtt]\n", '[mqtt]\nprotocol = "MQTTv311"\n'))
    checked = subprocess.run(
        [sys.executable, "-m", "firmware_bridge", "gateway", "--config", str(gateway.config),
         "--check-config"], cwd=ROOT, env=gateway.env, capture_output=True, text=True,
        timeout=120)
    assert checked.returncode == 0, checked.stderr
    assert 'warning: [mqtt] protocol = "MQTTv311": the broker cannot say' in checked.stderr
    observer = observer_factory(broker.port)
    gateway.start()
    gateway.wait_online(observer)
    assert gateway.terminate() == 0
    assert 'configuration: [mqtt] protocol = "MQTTv311"' in gateway.log.read_text()


def _ask(publisher, observer, stream: str, n: int) -> list[dict]:
    """Publish ``n`` readings on ``stream``; the label requests they caused."""
    for seq in range(n):
        publisher.publish(TOPICS.data(stream), encode_data(float(seq), seq, {
            "a": float(seq % 7), "b": float(seq % 3) - 1.0}))
    wait_until(lambda: len(observer.seen(stream)) == n, 30, "the predictions")
    time.sleep(0.5)
    return [request for s, request in observer.requests if s == stream]


def test_pending_label_requests_survive_a_clean_restart(broker, gateways, observer_factory):
    observer = observer_factory(broker.port)
    publisher = observer_factory(broker.port, client_id="publisher", subscribe=("none",))
    gateway = gateways(broker.port, target_query_rate=1.0)
    gateway.start()
    gateway.wait_online(observer)
    requests = _ask(publisher, observer, "p1", 30)
    assert len(requests) >= 10
    wait_until(lambda: observer.status()["counters"]["label_pending"] == len(requests), 30,
               "a status counting every request pending")
    assert gateway.terminate() == 0
    assert (f"label requests: {len(requests)} pending request(s) kept for the next start"
            in gateway.log.read_text())

    restarted = gateways(broker.port, target_query_rate=1.0)  # the same state directory
    restarted.start()
    status = restarted.wait_online(observer)
    assert status["checkpoints"]["pending_labels"] == {
        "restored": len(requests), "expired": 0, "evicted": 0, "problem": None}
    assert not (restarted.state / "labels.pending").exists()  # taken once, not again
    learned = status["streams"]["p1"]["learned"]
    for request in requests:
        publisher.publish(TOPICS.label("p1"), encode_label(request["req"], request["seq"] % 7 > 3))
    # An id this gateway never issued, and a duplicate of an answered one.
    publisher.publish(TOPICS.label("p1"), encode_label("gwtest-0-0123456789abcdef", True))
    wait_until(lambda: observer.status()["counters"]["label_unknown_request"] == 1, 30,
               "the forged answer counted")
    publisher.publish(TOPICS.label("p1"), encode_label(requests[0]["req"], True))
    wait_until(lambda: observer.status()["counters"]["label_duplicate"] == 1, 30,
               "the duplicate counted")
    status = observer.status()
    assert status["streams"]["p1"]["learned"] == learned + len(requests)
    counters = status["counters"]
    assert counters["label_restored"] == len(requests)
    assert counters["label_answered"] == len(requests)
    assert counters["label_expired"] == 0 and counters["label_pending"] == 0
    assert restarted.terminate() == 0


def test_requests_whose_ttl_ran_out_while_stopped_count_as_expired_not_forged(
    broker, gateways, observer_factory
):
    observer = observer_factory(broker.port)
    publisher = observer_factory(broker.port, client_id="publisher", subscribe=("none",))
    extra = "[labels]\nttl_seconds = 3.0\n"
    gateway = gateways(broker.port, extra=extra, target_query_rate=1.0)
    gateway.start()
    gateway.wait_online(observer)
    requests = _ask(publisher, observer, "p2", 10)
    assert requests
    assert gateway.terminate() == 0
    time.sleep(4.0)  # away for longer than the TTL left
    restarted = gateways(broker.port, extra=extra, target_query_rate=1.0)
    restarted.start()
    status = restarted.wait_online(observer)
    report = status["checkpoints"]["pending_labels"]
    # Each request expired before the stop (then its id was kept as closed) or while
    # the gateway was away (then it was closed at the start): none is pending.
    assert report["restored"] == 0 and report["evicted"] == 0 and report["problem"] is None
    for request in requests:
        publisher.publish(TOPICS.label("p2"), encode_label(request["req"], True))
    wait_until(lambda: observer.status()["counters"]["label_expired"] == len(requests), 30,
               "the late answers counted as expired")
    counters = observer.status()["counters"]
    assert counters["label_unknown_request"] == 0
    assert restarted.terminate() == 0


def test_an_allow_list_keeps_hostile_stream_names_out_across_a_restart(
    broker, gateways, observer_factory
):
    observer = observer_factory(broker.port)
    publisher = observer_factory(broker.port, client_id="publisher", subscribe=("none",))
    # First without the allow-list: hostile names take slots and get checkpoints.
    gateway = gateways(broker.port)
    gateway.start()
    gateway.wait_online(observer)
    for n in range(3):
        publisher.publish(TOPICS.data(f"evil{n}"), encode_data(0.0, 0, {"a": 1.0}))
    wait_until(lambda: len(observer.status()["streams"]) == 3, 30, "the hostile streams")
    assert gateway.terminate() == 0
    # Then with it: their checkpoints are not restored, 200 further names are refused
    # and counted, and the legitimate stream gets a slot.
    allowed = gateways(broker.port)
    allowed.config.write_text(allowed.config.read_text().replace(
        "max_streams = 8\n", 'max_streams = 8\nstream_pattern = "office-[0-9]+"\n'))
    allowed.start()
    status = allowed.wait_online(observer)
    assert status["checkpoints"]["restored"] == []
    assert status["checkpoints"]["not_allowed"] == ["evil0", "evil1", "evil2"]
    for n in range(200):
        publisher.publish(TOPICS.data(f"x{n}"), encode_data(0.0, 0, {"a": 1.0}))
    publisher.publish(TOPICS.data("office-1"), encode_data(0.0, 0, {"a": 1.0}))
    wait_until(lambda: observer.status()["counters"]["stream_not_allowed"] == 200
               and "office-1" in observer.status()["streams"], 30, "the refusals counted")
    status = observer.status()
    assert list(status["streams"]) == ["office-1"]
    assert status["counters"]["too_many_streams"] == 0
    assert "stream_not_allowed" in status["counter_problems"]
    assert allowed.terminate() == 0
    log = allowed.log.read_text()
    assert "stream_not_allowed: stream 'x0' is not allowed" in log
    assert "3 checkpoint(s) of streams [gateway] stream_pattern does not allow" in log
