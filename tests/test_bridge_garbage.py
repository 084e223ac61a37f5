"""The MQTT bridge receives messages without leaving reference cycles behind: paho
matches each message received against its ``message_callback_add`` filters with a
recursive closure (a reference cycle per message, which the collector has to find);
the bridge adds no such filters and gives its clients an empty table. On a real
mosquitto."""

from __future__ import annotations

import gc
import time

import pytest
from brokers import broker  # noqa: F401  (fixture)

from firmware_bridge.service.mqtt import MqttBridge, MqttSettings

MESSAGES = 200


def _poll_until(bridge: MqttBridge, predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        bridge.poll(0.05)


@pytest.mark.broker
def test_receiving_messages_leaves_no_reference_cycles(broker):  # noqa: F811
    settings = MqttSettings(host="127.0.0.1", port=broker.port, client_id="cycles",
                            max_inflight_messages=MESSAGES)
    bridge = MqttBridge(settings, ("cycles/#",), "cycles-status", b"offline", 1000, MESSAGES)
    bridge.start()
    try:
        _poll_until(bridge, lambda: bridge.connected)
        bridge.poll(0.2)  # the SUBACK
        gc.collect()
        gc.set_debug(gc.DEBUG_SAVEALL)  # what the collector finds is kept to look at
        try:
            for i in range(MESSAGES):
                assert bridge.publish(f"cycles/{i % 7}", b"x" * 20, 1) is not None
            _poll_until(bridge, lambda: len(bridge.inbound) >= MESSAGES)
            while bridge.inbound:
                bridge.ack(bridge.inbound.popleft())
            bridge.flush()
            gc.collect()
            garbage = list(gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        # Without the empty table: a closure and its cells per message received.
        assert len(garbage) < MESSAGES // 10, {type(o).__name__ for o in garbage}
    finally:
        bridge.disconnect()
