"""The MQTT outputs: each message the pipeline gives (predictions, label requests)
and the retained status message, published on the gateway's outbound connection.

It is the one sink every gateway runs (no ``enabled`` key): the worker acknowledges an
inbound message once the broker has taken the last of its outputs, which is what
:meth:`MqttOutputs.on_outbound` returns. Its section, ``[outputs]``, sets each output
topic's encoding: msgpack (the default) or JSON (``docs/protocol.md``, "Output
encodings").
"""

from __future__ import annotations

from typing import Any

from edgelearn.constraints import Options

from ...wire import OUTPUT_ENCODINGS, as_json, encode_status
from ..settings import Section, Setting
from .base import Sink

__all__ = ["MqttOutputs", "SECTION"]

SECTION = Section("""
    How each output topic's messages are encoded: "msgpack" (the default, as the
    gateway reads its inputs) or "json" (the same fields, for Node-RED flows and
    Home Assistant templates; a score that is not a number is null). The status is
    msgpack; [status_json] adds a JSON copy of it. Topics and QoS are [topics] and
    [mqtt]; see docs/protocol.md.""", {
    "prediction": Setting(Options(*OUTPUT_ENCODINGS), 'predictions: "msgpack" or "json"',
                          "msgpack"),
    "label_request": Setting(Options(*OUTPUT_ENCODINGS),
                             'label requests: "msgpack" or "json"', "msgpack"),
})

# How many output topics' kinds are remembered (two per stream, bounded by
# [gateway] max_streams; more only if a stream's topics change).
_TOPICS_REMEMBERED = 200_000


class MqttOutputs(Sink):
    """Predictions, label requests and the status, on the outbound connection."""

    name = "outputs"
    handles = frozenset({"outbound", "status"})

    def __init__(self, host, settings, config):
        super().__init__(host, settings, config)
        self.publish = host.publish  # bound once: the per-message path calls it
        self.status_topic = config.topics.status(config.gateway_id)
        self.json_kinds = frozenset(kind for kind in ("prediction", "label_request")
                                    if settings.get(kind, "msgpack") == "json")
        if self.json_kinds:
            self.topics = config.topics
            self.json_topic: dict[str, bool] = {}  # topic -> whether it goes out as JSON
            self.on_outbound = self._on_outbound_json

    def start(self) -> None:
        # The host's publish again, now that its connection exists: the gateway's is
        # then the bridge's own, with no call in between.
        self.publish = self.host.publish

    def on_outbound(self, outbound: Any) -> Any:
        return self.publish(outbound.topic, outbound.payload, outbound.qos, outbound.retain)

    def _on_outbound_json(self, outbound: Any) -> Any:
        topic = outbound.topic
        as_json_here = self.json_topic.get(topic)
        if as_json_here is None:
            parsed = self.topics.parse(topic)
            as_json_here = parsed is not None and parsed[0] in self.json_kinds
            if len(self.json_topic) >= _TOPICS_REMEMBERED:
                self.json_topic.clear()
            self.json_topic[topic] = as_json_here
        payload = as_json(outbound.payload) if as_json_here else outbound.payload
        return self.publish(topic, payload, outbound.qos, outbound.retain)

    def on_status(self, status: dict[str, Any], state: str) -> Any:
        return self.publish(self.status_topic, encode_status(status), 1, True)
