"""Issue 27 against real processes: the gateway's command, a mosquitto each test
starts, faults made with real tools (libfaketime stepping the wall clock, a broker
ACL refusing publishes). A missing part fails the test; nothing skips."""

from __future__ import annotations

import re
import time
import urllib.request

import pytest

from firmware_bridge.wire import encode_data, encode_label

from brokers import broker, free_port, wait_until  # noqa: F401  (broker: a fixture)
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
    metrics = wait_until(lambda: (m := _metrics(metrics_port)).get("edgelearn_clock_steps") == 1
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
