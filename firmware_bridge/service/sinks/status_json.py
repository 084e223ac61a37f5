"""The retained status message also as JSON, for dashboards, Node-RED and
``mosquitto_sub`` (the msgpack one stays as it is). Off by default.

>>> status_json({"state": "online", "streams": {"s1": {"accuracy": float("nan")}}})
b'{"state":"online","streams":{"s1":{"accuracy":null}}}'
"""

from __future__ import annotations

import json
import math
from typing import Any

from edgelearn.constraints import Boolean

from ...wire import to_wire
from ..settings import TOPIC_TEXT, Section, Setting
from .base import Sink

__all__ = ["SECTION", "StatusJson", "status_json"]

SECTION = Section("""
    The retained status message also as JSON, for dashboards, Node-RED and
    mosquitto_sub (the msgpack one stays as it is). Off by default.""", {
    "enabled": Setting(Boolean(), "true: publish it beside every msgpack status", False),
    "topic": Setting(TOPIC_TEXT, """
        Its topic; {gateway} is replaced by [gateway] id. Keep it off the stream
        topics' patterns.""", "edgelearn/status/{gateway}/json"),
})


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON has no NaN; dashboards read null as "no value yet"
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


def status_json(status: dict[str, Any]) -> bytes:
    """The status message as compact JSON (NaN and infinities as null)."""
    return json.dumps(_json_safe(to_wire(status)), separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


class StatusJson(Sink):
    """Each status message again, as JSON, on its own retained topic."""

    name = "status_json"
    handles = frozenset({"status"})

    def __init__(self, host, settings, config):
        super().__init__(host, settings, config)
        self.topic = settings["topic"].replace("{gateway}", config.gateway_id)

    def on_status(self, status: dict[str, Any], state: str) -> Any:
        return self.host.publish(self.topic, status_json(status), 1, True)
