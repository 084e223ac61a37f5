"""Routing between the gateway and its sinks: which sink an inbound topic goes to
(:func:`sink_routes`, wildcard filters included), and one outbound call made of
several sinks' (:func:`fan_out`)."""

from __future__ import annotations

from typing import Any

from paho.mqtt.client import topic_matches_sub

__all__ = ["SinkTopics", "fan_out", "sink_routes"]


class SinkTopics(dict):
    """Sinks by topic filter, answering ``in`` and ``get`` for a topic that a
    wildcard filter (``+``, ``#``) matches too (the fleet's ``edgelearn/fleet/G/+``).
    Every inbound message asks: a topic outside every filter's fixed prefix (a
    sensor's) is answered by one ``startswith`` per filter."""

    def __init__(self, by_filter: dict):
        super().__init__(by_filter)
        self._wildcards = [(f[:min(i for i in (f.find("+"), f.find("#")) if i >= 0)], f, sink)
                           for f, sink in by_filter.items() if "+" in f or "#" in f]

    def get(self, topic, default=None):
        sink = dict.get(self, topic)
        if sink is not None:
            return sink
        for prefix, pattern, candidate in self._wildcards:
            if topic.startswith(prefix) and topic_matches_sub(pattern, topic):
                return candidate
        return default

    def __contains__(self, topic) -> bool:
        return self.get(topic) is not None


def sink_routes(by_filter: dict) -> dict:
    """The sink of each inbound topic a sink subscribes to (``get``, ``in``).
    A plain dict unless a sink subscribes with a wildcard, so the per-message
    lookup stays a dict's when no such sink runs."""
    if any("+" in f or "#" in f for f in by_filter):
        return SinkTopics(by_filter)
    return by_filter


def fan_out(calls: list) -> Any:
    """One outbound call for several sinks: each in turn; the first one's info (the
    MQTT outputs') is what an ack waits for."""
    def on_outbound(outbound: Any) -> Any:
        info = calls[0](outbound)
        for call in calls[1:]:
            call(outbound)
        return info

    return on_outbound
