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
>>> [topic for topic, _ in ha.configs("hall.motion", binary=True)][:2]
['homeassistant/binary_sensor/gw1/hall_motion_59182c11_prediction/config', 'homeassistant/sensor/gw1/hall_motion_59182c11_accuracy/config']
>>> sanitize("living room/temp")
'living_room_temp_5d02cb61'
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterable
from typing import Any

import edgelearn

__all__ = ["HomeAssistant", "sanitize"]

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
        self.announced: dict[str, bool] = {}  # stream -> binary, as announced
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

    def _stream_entities(self, stream: str, binary: bool) -> list[tuple[str, str, dict]]:
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
        entities = []
        prediction = self._common(f"edgelearn_{self.node_id}_{base}_prediction", "Prediction",
                                  state, device)
        prediction["value_template"] = "{{ value_json.prediction }}"
        if binary:
            prediction.update(payload_on="ON", payload_off="OFF")
        entities.append(("binary_sensor" if binary else "sensor", "prediction", prediction))
        accuracy = self._common(f"edgelearn_{self.node_id}_{base}_accuracy", "Accuracy",
                                state, device)
        accuracy.update(value_template="{{ value_json.accuracy }}", unit_of_measurement="%",
                        state_class="measurement", entity_category="diagnostic")
        entities.append(("sensor", "accuracy", accuracy))
        asked = self._common(f"edgelearn_{self.node_id}_{base}_labels_asked", "Labels asked",
                             state, device)
        asked.update(value_template="{{ value_json.labels_asked }}",
                     state_class="total_increasing", entity_category="diagnostic")
        entities.append(("sensor", "labels_asked", asked))
        rate = self._common(f"edgelearn_{self.node_id}_{base}_query_rate", "Query rate",
                            state, device)
        rate.update(value_template="{{ value_json.query_rate }}", unit_of_measurement="%",
                    state_class="measurement", entity_category="diagnostic")
        entities.append(("sensor", "query_rate", rate))
        return [(self._topic(component, f"{base}_{what}"), component, config)
                for component, what, config in entities]

    def configs(self, stream: str, binary: bool) -> list[tuple[str, bytes]]:
        """``(topic, payload)`` of every discovery config of ``stream``."""
        return [(topic, _dump(config)) for topic, _, config in self._stream_entities(stream, binary)]

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

    def announcements(self, streams: Iterable[tuple[str, bool]]) -> list[tuple[str, bytes]]:
        """Configs to publish (retained) for the gateway and streams not announced yet,
        and empty payloads removing streams that went; remembers what it returned."""
        out: list[tuple[str, bytes]] = []
        if not self._gateway_announced:
            out.extend(self.gateway_configs())
            self._gateway_announced = True
        current = dict(streams)
        for stream, binary in current.items():
            if self.announced.get(stream) != binary:
                out.extend(self.configs(stream, binary))
                self.announced[stream] = binary
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
        for stream, binary in self.announced.items():
            out.extend((topic, b"") for topic, _ in self.configs(stream, binary))
        return out

    @staticmethod
    def stream_state(stream_status: dict[str, Any], prediction: Any, binary: bool) -> bytes:
        """The JSON state of one stream from its status and last prediction."""
        if binary:
            shown = "ON" if prediction is True else "OFF" if prediction is False else None
        else:
            shown = prediction if isinstance(prediction, (int, str)) else None
        accuracy = stream_status.get("accuracy")
        return _dump({
            "prediction": shown,
            "accuracy": None if accuracy is None or accuracy != accuracy else round(100 * accuracy, 2),
            "labels_asked": stream_status.get("asked", 0),
            "query_rate": round(100 * stream_status.get("query_rate", 0.0), 2),
            "learned": stream_status.get("learned", 0),
            "messages": stream_status.get("data", 0),
        })

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


def _dump(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), allow_nan=False).encode("utf-8")
