"""What every output sink of the gateway is: the one interface.

A *sink* tells the world something the gateway knows, beyond the pipeline itself: the
MQTT outputs (predictions, label requests, the retained status), the status as JSON,
Home Assistant discovery and states, a Prometheus scrape page. Each sink is one module
of this folder with

* a :class:`Sink` subclass, whose ``handles`` says which of the four events it takes:
  ``"outbound"`` (each message the pipeline gives, :meth:`Sink.on_outbound`),
  ``"status"`` (each status message, :meth:`Sink.on_status`), ``"tick"`` (its timer,
  :meth:`Sink.tick`, from the worker between messages) and ``"inbound"`` (messages on
  the topics it subscribes to, :meth:`Sink.subscriptions` and :meth:`Sink.on_inbound`);
* ``SECTION``, its configuration section (:class:`~firmware_bridge.service.settings.Section`;
  a sink with an ``enabled`` key runs only when it is true);

and one line in the registry (:data:`firmware_bridge.service.sinks.SINKS`). The
gateway calls a sink only for the events it handles, from its worker thread; a sink
publishes through its host (:class:`SinkHost`), never through a client of its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

__all__ = ["EVENTS", "Sink", "SinkHost"]

#: The events a sink may handle.
EVENTS = frozenset({"outbound", "status", "tick", "inbound"})


class SinkHost(Protocol):
    """What a sink may use of the gateway that runs it."""

    gateway_id: str
    pipeline: Any  #: the pipeline (streams, their status, tasks and last predictions)
    registry: Any  #: the counters registry every output reads

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool) -> Any:
        """Publish on the outbound connection; returns paho's message info."""

    @property
    def can_publish(self) -> bool:
        """Whether the outbound connection is up (a publish now is sent, not queued)."""

    @property
    def connection_count(self) -> int:
        """How many times the outbound connection came up (a new one: announce again)."""

    def gauges(self) -> dict[str, tuple[str, Any, str | None]]:
        """The gateway's gauges: name -> (help, value or {label value: value}, label name)."""

    def status(self, state: str = "online") -> dict[str, Any]:
        """The status message as plain values."""


class Sink:
    """Base class of the gateway's output sinks (see the module docstring)."""

    #: Its configuration section's name (the registry key).
    name: ClassVar[str] = ""
    #: Which events it takes (a subset of :data:`EVENTS`).
    handles: ClassVar[frozenset] = frozenset()

    def __init__(self, host: SinkHost, settings: Mapping[str, Any], config: Any):
        self.host = host
        self.settings = settings

    def subscriptions(self) -> tuple[str, ...]:
        """Inbound topics it wants (``"inbound"``)."""
        return ()

    def on_inbound(self, topic: str, payload: bytes) -> None:
        """A message on one of its topics arrived."""

    def on_outbound(self, outbound: Any) -> Any:
        """A message the pipeline gave (``"outbound"``); returns what the gateway waits
        for before it acknowledges the inbound message (paho's info), or None."""

    def on_status(self, status: dict[str, Any], state: str) -> Any:
        """A status message (``state``: online, stopped); returns the last paho info."""

    def tick(self, now: float) -> None:
        """Its timer (``"tick"``): the worker calls it between messages, at most every
        gateway tick; ``now`` is the monotonic clock."""

    def start(self) -> None:
        """Before the worker starts (a server thread, say)."""

    def close(self) -> None:
        """At the stop, after the final status."""
