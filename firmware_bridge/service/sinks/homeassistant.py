"""Home Assistant MQTT discovery: each stream a device, the gateway a device too.

Opt-in (``[homeassistant] enabled = true``); the gateway imports this module only
then. Home Assistant's MQTT integration reads retained *discovery* messages under its
prefix, ``<prefix>/<component>/<node_id>/<object_id>/config``, each a JSON object
describing one entity, and then follows the entity's ``state_topic``. This module
builds those messages; the gateway's worker publishes them (nothing here touches the
network):

* per stream, a device (``identifiers`` ``edgelearn_<gateway>_<stream>``, shown by the
  stream's name) with four entities reading one JSON state topic,
  ``<state_prefix>/<gateway>/<stream>``: the prediction (a ``binary_sensor``, ON for
  the positive class, when the learner is binary, else a ``sensor`` holding the
  predicted label), the running accuracy (%), the labels asked and the query rate;
* the gateway a device of its own with its health: state (online / stopped), a
  ``problem`` binary sensor (ON when a problem counter is not zero), messages, rejects
  and streams, from ``<state_prefix>/<gateway>``;
* every entity has the availability topic ``<state_prefix>/<gateway>/availability``
  (``online`` while the gateway runs, ``offline`` after a clean stop) and
  ``expire_after``, so a gateway that died without a word goes unavailable too;
* object ids and unique ids are sanitised to HA's character set ``[a-zA-Z0-9_-]``;
  a name that had to change gets a short hash of the original, so two streams never
  share an entity;
* when a stream goes, its entities are removed (an empty retained config); when HA
  publishes ``online`` on its birth topic (``homeassistant/status``) after a restart,
  every config is published again.

>>> ha = HomeAssistant("gw1")
>>> [topic for topic, _ in ha.configs("hall.motion", "binary")][:2]
['homeassistant/binary_sensor/gw1/hall_motion_59182c11_prediction/config', 'homeassistant/sensor/gw1/hall_motion_59182c11_accuracy/config']
>>> sanitize("living room/temp")
'living_room_temp_5d02cb61'
"""

from __future__ import annotations

import functools
import logging
import json
import math
import re
import zlib
from collections.abc import Iterable
from typing import Any

import edgelearn
from edgelearn.constraints import Boolean

from ..settings import TOPIC_TEXT, Section, Setting
from .base import Sink

__all__ = ["HomeAssistant", "HomeAssistantSink", "SECTION", "sanitize"]

SECTION = Section("""
    Home Assistant MQTT discovery (see docs/integrations.md). Off by default; when
    on, each stream appears in HA as a device with its prediction (a binary_sensor
    for a binary learner, else a sensor; a regression stream's number with its
    interval as attributes; an anomaly stream's alarm, a problem binary_sensor, and
    its score), its running accuracy (regression: MAE and interval coverage), labels
    asked and query rate, and the gateway as a device with its health.""", {
    "enabled": Setting(Boolean(), "true: publish discovery configs and states", False),
    "discovery_prefix": Setting(TOPIC_TEXT, "HA's discovery prefix", "homeassistant"),
    "birth_topic": Setting(TOPIC_TEXT, """
        Where HA says "online" when it starts; the gateway then announces
        everything again.""", "homeassistant/status"),
    "state_prefix": Setting(TOPIC_TEXT, """
        The JSON state topics: {state_prefix}/{gateway} (health),
        {state_prefix}/{gateway}/{stream} and {state_prefix}/{gateway}/availability.""",
                            "edgelearn/ha"),
})

#: Seconds between rounds of announcements and states, at most.
INTERVAL_S = 1.0

logger = logging.getLogger("firmware_bridge.gateway")

_NOT_ALLOWED = re.compile(r"[^a-zA-Z0-9_-]")
_ORIGIN = {"name": "edgelearn", "sw_version": edgelearn.__version__}


def sanitize(name: str) -> str:
    """``name`` in HA's object id character set ``[a-zA-Z0-9_-]``: other characters
    become ``_``, and a name that changed gets 8 hex digits of its CRC-32 so that
    ``a.b`` and ``a_b`` stay apart."""
    clean = _NOT_ALLOWED.sub("_", name)
    if clean == name:
        return name
    return f"{clean}_{zlib.crc32(name.encode('utf-8')):08x}"


class HomeAssistant:
    """Discovery configs and JSON states of one gateway.

    Parameters
    ----------
    gateway_id
        The gateway's id (its device, the node id of every discovery topic).
    discovery_prefix
        HA's discovery prefix (HA's default ``homeassistant``).
    state_prefix
        Where the JSON state topics go.
    birth_topic
        Where HA announces itself (``online`` after each start).
    expire_after_s
        Seconds after which HA marks an entity unavailable without a new state.
    """

    def __init__(self, gateway_id: str, discovery_prefix: str = "homeassistant",
                 state_prefix: str = "edgelearn/ha", birth_topic: str = "homeassistant/status",
                 expire_after_s: int = 120):
        self.gateway_id = gateway_id
        self.node_id = sanitize(gateway_id)
        self.discovery_prefix = discovery_prefix
        self.state_prefix = state_prefix
        self.birth_topic = birth_topic
        self.expire_after_s = int(expire_after_s)
        self.gateway_state_topic = f"{state_prefix}/{gateway_id}"
        self.availability_topic = f"{state_prefix}/{gateway_id}/availability"
        self.announced: dict[str, str] = {}  # stream -> its task, as announced
        self._gateway_announced = False

    # -- discovery configs ------------------------------------------------------------

    def _topic(self, component: str, object_id: str) -> str:
        return f"{self.discovery_prefix}/{component}/{self.node_id}/{object_id}/config"

    def _common(self, unique_id: str, name: str, state_topic: str, device: dict) -> dict:
        return {
            "name": name,
            "unique_id": unique_id,
            "state_topic": state_topic,
            "availability_topic": self.availability_topic,
            "payload_available": "online",
            "payload_not_available": "offline",
            "expire_after": self.expire_after_s,
            "device": device,
            "origin": _ORIGIN,
        }

    def stream_state_topic(self, stream: str) -> str:
        return f"{self.state_prefix}/{self.gateway_id}/{stream}"

    def _entity(self, base: str, what: str, name: str, state: str, device: dict,
                **fields: Any) -> dict:
        entity = self._common(f"edgelearn_{self.node_id}_{base}_{what}", name, state, device)
        entity.update(fields)
        return entity

    def _stream_entities(self, stream: str, task: str | bool) -> list[tuple[str, str, dict]]:
        task = _task_of(task)
        base = f"{sanitize(stream)}"
        device = {
            "identifiers": [f"edgelearn_{self.node_id}_{base}"],
            "name": stream,
            "manufacturer": "edgelearn",
            "model": "online learner",
            "sw_version": edgelearn.__version__,
            "via_device": f"edgelearn_{self.node_id}",
        }
        state = self.stream_state_topic(stream)
        entity = functools.partial(self._entity, base, state=state, device=device)
        diagnostic = {"entity_category": "diagnostic"}
        entities = []
        if task == "regression":
            entities.append(("sensor", "prediction", entity(
                "prediction", "Prediction", value_template="{{ value_json.prediction }}",
                state_class="measurement", json_attributes_topic=state,
                json_attributes_template="{{ {'lower': value_json.lower, "
                                         "'upper': value_json.upper} | tojson }}")))
            entities.append(("sensor", "mae", entity(
                "mae", "Mean absolute error", value_template="{{ value_json.mae }}",
                state_class="measurement", **diagnostic)))
            entities.append(("sensor", "coverage", entity(
                "coverage", "Interval coverage", value_template="{{ value_json.coverage }}",
                unit_of_measurement="%", state_class="measurement", **diagnostic)))
        elif task == "anomaly":
            entities.append(("binary_sensor", "alarm", entity(
                "alarm", "Anomaly", value_template="{{ value_json.alarm }}", payload_on="ON",
                payload_off="OFF", device_class="problem")))
            entities.append(("sensor", "score", entity(
                "score", "Anomaly score", value_template="{{ value_json.score }}",
                state_class="measurement")))
            entities.append(("sensor", "alarms", entity(
                "alarms", "Alarms", value_template="{{ value_json.alarms }}",
                state_class="total_increasing", **diagnostic)))
        else:
            binary = task == "binary"
            prediction = entity("prediction", "Prediction",
                                value_template="{{ value_json.prediction }}")
            if binary:
                prediction.update(payload_on="ON", payload_off="OFF")
            entities.append(("binary_sensor" if binary else "sensor", "prediction", prediction))
            entities.append(("sensor", "accuracy", entity(
                "accuracy", "Accuracy", value_template="{{ value_json.accuracy }}",
                unit_of_measurement="%", state_class="measurement", **diagnostic)))
        entities.append(("sensor", "labels_asked", entity(
            "labels_asked", "Labels asked", value_template="{{ value_json.labels_asked }}",
            state_class="total_increasing", **diagnostic)))
        entities.append(("sensor", "query_rate", entity(
            "query_rate", "Query rate", value_template="{{ value_json.query_rate }}",
            unit_of_measurement="%", state_class="measurement", **diagnostic)))
        return [(self._topic(component, f"{base}_{what}"), component, config)
                for component, what, config in entities]

    def configs(self, stream: str, task: str | bool) -> list[tuple[str, bytes]]:
        """``(topic, payload)`` of every discovery config of ``stream``, whose learner's
        task is ``task`` (True / False: binary / another classification, as before tasks)."""
        return [(topic, _dump(config)) for topic, _, config in self._stream_entities(stream, task)]

    def gateway_configs(self) -> list[tuple[str, bytes]]:
        """``(topic, payload)`` of the gateway device's discovery configs."""
        device = {
            "identifiers": [f"edgelearn_{self.node_id}"],
            "name": f"edgelearn {self.gateway_id}",
            "manufacturer": "edgelearn",
            "model": "gateway",
            "sw_version": edgelearn.__version__,
        }
        state = self.gateway_state_topic
        out = []
        uid = f"edgelearn_{self.node_id}"
        status = self._common(f"{uid}_state", "State", state, device)
        status["value_template"] = "{{ value_json.state }}"
        out.append(("sensor", "state", status))
        problem = self._common(f"{uid}_problem", "Problem", state, device)
        problem.update(value_template="{{ value_json.problem }}", payload_on="ON",
                       payload_off="OFF", device_class="problem", entity_category="diagnostic")
        out.append(("binary_sensor", "problem", problem))
        for what, name in (("messages", "Messages"), ("rejected", "Rejected messages"),
                           ("streams", "Streams")):
            sensor = self._common(f"{uid}_{what}", name, state, device)
            sensor.update(value_template=f"{{{{ value_json.{what} }}}}",
                          state_class="measurement" if what == "streams" else "total_increasing",
                          entity_category="diagnostic")
            out.append(("sensor", what, sensor))
        return [(self._topic(component, f"gateway_{what}"), _dump(config))
                for component, what, config in out]

    # -- what to publish ------------------------------------------------------------

    def announcements(self, streams: Iterable[tuple[str, str | bool]]) -> list[tuple[str, bytes]]:
        """Configs to publish (retained) for the gateway and streams not announced yet
        (``(stream, task)`` pairs), and empty payloads removing streams that went;
        remembers what it returned."""
        out: list[tuple[str, bytes]] = []
        if not self._gateway_announced:
            out.extend(self.gateway_configs())
            self._gateway_announced = True
        current = {stream: _task_of(task) for stream, task in streams}
        for stream, task in current.items():
            if self.announced.get(stream) != task:
                out.extend(self.configs(stream, task))
                self.announced[stream] = task
        for stream in [s for s in self.announced if s not in current]:
            out.extend((topic, b"") for topic, _ in self.configs(stream, self.announced.pop(stream)))
        return out

    def forget_announcements(self) -> None:
        """Announce everything again at the next :meth:`announcements` (HA restarted)."""
        self.announced.clear()
        self._gateway_announced = False

    def removals(self) -> list[tuple[str, bytes]]:
        """Empty retained configs removing every announced entity."""
        out = [(topic, b"") for topic, _ in self.gateway_configs()]
        for stream, task in self.announced.items():
            out.extend((topic, b"") for topic, _ in self.configs(stream, task))
        return out

    @staticmethod
    def stream_state(stream_status: dict[str, Any], prediction: Any, task: str | bool,
                     output: dict[str, Any] | None = None) -> bytes:
        """The JSON state of one stream from its status, its last prediction and (for
        regression and anomaly streams) its last prediction message's fields."""
        task = _task_of(task)
        output = output or {}
        state = {
            "labels_asked": stream_status.get("asked", 0),
            "query_rate": round(100 * stream_status.get("query_rate", 0.0), 2),
            "learned": stream_status.get("learned", 0),
            "messages": stream_status.get("data", 0),
        }
        if task == "regression":
            coverage = stream_status.get("coverage")
            state.update(prediction=_finite(prediction), lower=_finite(output.get("lower")),
                         upper=_finite(output.get("upper")), mae=_finite(stream_status.get("mae")),
                         coverage=None if coverage is None else round(100 * coverage, 2))
        elif task == "anomaly":
            state.update(alarm="ON" if prediction is True else "OFF" if prediction is False else None,
                         score=_finite(output.get("score")), alarms=stream_status.get("alarms", 0))
        else:
            if task == "binary":
                shown = "ON" if prediction is True else "OFF" if prediction is False else None
            else:
                shown = prediction if isinstance(prediction, (int, str)) else None
            accuracy = stream_status.get("accuracy")
            state.update(prediction=shown, accuracy=None if accuracy is None or accuracy != accuracy
                         else round(100 * accuracy, 2))
        return _dump(state)

    @staticmethod
    def gateway_state(status: dict[str, Any]) -> bytes:
        """The JSON health of the gateway from its status message."""
        counters = status.get("counters", {})
        return _dump({
            "state": status.get("state"),
            "problem": "ON" if status.get("counter_problems") and any(
                counters.get(name) for name in status["counter_problems"]) else "OFF",
            "messages": counters.get("messages", 0),
            "rejected": counters.get("rejected", 0),
            "streams": len(status.get("streams", {})),
            "connected": bool(status.get("connected")),
        })


def _task_of(task: str | bool) -> str:
    # Before tasks, callers said binary or not.
    if task is True:
        return "binary"
    if task is False:
        return "multiclass"
    return task


def _finite(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return value
    return None


def _dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")


class HomeAssistantSink(Sink):
    """Discovery configs, states and availability, published by the gateway's worker:
    at most once a second (:data:`INTERVAL_S`) the configs of streams not announced
    yet and the state of each stream whose shown values changed; with each status, the
    gateway's health and availability; and a stream's state again when it has not
    been published for a status interval, changed or not (so a quiet stream of a
    running gateway stays available: ``expire_after`` is 3 status intervals); everything announced again when HA says it
    started (its birth topic) or the outbound connection came up again (a broker
    without persistence lost the retained configs)."""

    name = "homeassistant"
    handles = frozenset({"status", "tick", "inbound"})

    def __init__(self, host, settings, config):
        super().__init__(host, settings, config)
        self.ha = HomeAssistant(
            config.gateway_id, settings["discovery_prefix"], settings["state_prefix"],
            settings["birth_topic"], expire_after_s=int(max(60, 3 * config.status_interval_s)))
        self._next = -math.inf
        # stream -> (what its last state showed, when it was published)
        self._states: dict[str, tuple[tuple, float]] = {}
        self._heartbeat_s = config.status_interval_s
        self._connection = 0  # the outbound connection the entities were announced on

    def subscriptions(self) -> tuple[str, ...]:
        return (self.ha.birth_topic,)

    def on_inbound(self, topic: str, payload: bytes) -> None:
        """Home Assistant (re)started: announce every entity again."""
        if payload.strip() == b"online":
            logger.info("Home Assistant is online: announcing the entities again")
            self.ha.forget_announcements()
            self._states.clear()
            self._next = -math.inf

    def on_status(self, status: dict[str, Any], state: str) -> Any:
        ha, publish = self.ha, self.host.publish
        if state == "online":
            publish(ha.availability_topic, b"online", 1, True)
        info = publish(ha.gateway_state_topic, ha.gateway_state(status), 1, True)
        if state != "online":
            info = publish(ha.availability_topic, b"offline", 1, True)
        return info

    def tick(self, now: float) -> None:
        host = self.host
        if now < self._next or not host.can_publish:
            return
        self._next = now + INTERVAL_S
        ha, pipeline, publish = self.ha, host.pipeline, host.publish
        if self._connection != host.connection_count:
            self._connection = host.connection_count
            ha.forget_announcements()
            self._states.clear()
        streams = pipeline.status()["streams"]
        tasks = {name: pipeline.stream_task(name) for name in streams}
        for topic, payload in ha.announcements(tasks.items()):
            publish(topic, payload, 1, True)
        for name, stream_status in streams.items():
            task = tasks[name]
            prediction = pipeline.last_prediction(name)
            if task == "binary" and prediction is not None:
                # HA's binary_sensor reads ON/OFF: the positive side, whatever the
                # user's two labels are ("occupied"/"empty" as well as True/False).
                prediction = prediction == pipeline.positive_label(name)
            output = pipeline.last_output(name) if task in ("regression", "anomaly") else None
            shown = (prediction, stream_status["data"], stream_status["learned"],
                     None if output is None else tuple(output.items()))
            last = self._states.get(name)
            # Published again when it changed, or when a status interval went by
            # without a message: HA marks an entity unavailable after expire_after (3
            # status intervals), and a quiet sensor on a healthy gateway is not.
            if last is None or last[0] != shown or now - last[1] >= self._heartbeat_s:
                self._states[name] = (shown, now)
                publish(ha.stream_state_topic(name),
                        ha.stream_state(stream_status, prediction, task, output), 0, True)
