"""The MQTT outputs: each message the pipeline gives (predictions, label requests)
and the retained status message, published on the gateway's outbound connection.

It is the one sink every gateway runs (no ``enabled`` key): the worker acknowledges an
inbound message once the broker has taken the last of its outputs, which is what
:meth:`MqttOutputs.on_outbound` returns.
"""

from __future__ import annotations

from typing import Any

from ...wire import encode_status
from .base import Sink

__all__ = ["MqttOutputs", "SECTION"]

#: No keys of its own: topics, QoS and the connection are [topics] and [mqtt].
SECTION = None


class MqttOutputs(Sink):
    """Predictions, label requests and the status, on the outbound connection."""

    name = "mqtt"
    handles = frozenset({"outbound", "status"})

    def __init__(self, host, settings, config):
        super().__init__(host, settings, config)
        self.publish = host.publish  # bound once: the per-message path calls it
        self.status_topic = config.topics.status(config.gateway_id)

    def on_outbound(self, outbound: Any) -> Any:
        return self.publish(outbound.topic, outbound.payload, outbound.qos, outbound.retain)

    def on_status(self, status: dict[str, Any], state: str) -> Any:
        return self.publish(self.status_topic, encode_status(status), 1, True)

