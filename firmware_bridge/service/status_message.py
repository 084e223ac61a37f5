"""The gateway's status message, as the retained status topic, ``edgelearn status`` and
the JSON sink show it (moved out of :mod:`firmware_bridge.service.gateway`)."""

from __future__ import annotations

import os
import platform
import time
from typing import Any

import paho.mqtt

import edgelearn

__all__ = ["status_message"]


def status_message(gateway: Any, state: str = "online") -> dict[str, Any]:
    """``gateway``'s status message (:meth:`Gateway.status
    <firmware_bridge.service.gateway.Gateway.status>`)."""
    pipeline_status = gateway.pipeline.status()
    counters = gateway.registry.collect()
    return {
        "state": state,
        "gateway": gateway.config.gateway_id,
        "pid": os.getpid(),
        "time": time.time(),
        "started_at": gateway.started_at,
        "uptime_s": gateway.uptime_s(),
        "checkpoint_age_s": gateway.checkpoint_age_s(),
        "connected": gateway.bridge.connected,
        "health": "degraded" if gateway.refusals.degraded_by() else "ok",
        "degraded_by": gateway.refusals.degraded_by(),
        "version": {
            "edgelearn": edgelearn.__version__,
            "paho_mqtt": paho.mqtt.__version__,
            "python": platform.python_version(),
        },
        "learner": pipeline_status["learner"],
        "queue": {"length": len(gateway.bridge.inbound), "capacity": gateway.bridge.queue_capacity},
        "answer_queue": {"length": len(gateway.bridge.answers),
                         "capacity": gateway.bridge.answer_capacity},
        "counters": counters,
        "counter_problems": sorted(gateway.registry.problems(counters)),
        "streams": pipeline_status["streams"],
        "memory": gateway.memory(),
        "checkpoints": gateway.checkpoint_report,
    }
