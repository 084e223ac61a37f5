"""The gateway's output sinks: what it tells the world besides the pipeline itself.

One registry, :data:`SINKS`: a sink's name (its configuration section) -> the module and
class that implement it (:class:`~firmware_bridge.service.sinks.base.Sink`). A sink's
module is imported only when the sink runs (its section has no ``enabled`` key, or it
is true), except that the configuration reads each module's ``SECTION`` (its keys,
defaults and documentation). A new sink is one module here, its tests, and one line in
:data:`SINKS`.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import EVENTS, Sink, SinkHost

__all__ = ["EVENTS", "SINKS", "Sink", "SinkHost", "make_sinks", "sections"]

#: Sink name -> "module:Class" (".module" for a module of this folder, as a relative
#: import), in the order the gateway calls them.
SINKS: dict[str, str] = {
    "outputs": ".mqtt_outputs:MqttOutputs",
    "status_json": ".status_json:StatusJson",
    "homeassistant": ".homeassistant:HomeAssistantSink",
    "prometheus": ".prometheus:PrometheusSink",
    "fleet": ".fleet:FleetSink",
}


def _module(name: str):
    return importlib.import_module(SINKS[name].partition(":")[0], package=__name__)


def sections() -> dict[str, Any]:
    """Each sink's configuration section (``SECTION`` of its module), by name; sinks
    without keys of their own are left out."""
    found = {}
    for name in SINKS:
        section = _module(name).SECTION
        if section is not None:
            found[name] = section
    return found


def make_sinks(host: SinkHost, config: Any) -> list[Sink]:
    """The sinks ``config`` turns on, made for ``host``, in :data:`SINKS` order."""
    made = []
    for name, target in SINKS.items():
        module = _module(name)
        settings = config.values.get(name, {}) if module.SECTION is not None else {}
        if settings.get("enabled", True):
            made.append(getattr(module, target.partition(":")[2])(host, settings, config))
    return made
