"""The gateway's MQTT client: paho-mqtt 2.x with a persistent session and manual acks.

:class:`MqttBridge` holds two ``paho.mqtt.client.Client`` connections (callback API
version 2) and does only network work; the gateway's worker thread does the rest.

The **inbound** connection receives data and label answers:

* **persistent session**: a fixed client id and no clean start (MQTT 5: clean start
  off and a session expiry interval; MQTT 3.1.1: ``clean_session=False``), so the
  broker keeps the subscriptions and queues QoS 1 data while the gateway is away;
* **subscriptions in on_connect**, so every (re)connection has them even if the
  broker lost the session;
* **manual acks**: an inbound QoS 1 message is acknowledged only when the worker calls
  :meth:`MqttBridge.ack` after processing it; a message that was never acknowledged is
  redelivered by the broker when the session resumes (after a reconnect or a
  restart), so nothing the broker accepted is lost to a crash. Delivery is at least
  once: a message processed but not yet acknowledged when the connection drops comes
  again, and is predicted again;
* **on_message only enqueues** ``(topic, payload, received_at, mid, qos)`` into the
  bounded inbound queue. When the queue is full it waits up to ``full_wait_s`` for
  room: that stops paho reading, so TCP pushes back on the broker, which keeps the
  backlog (the client announces a Receive Maximum no larger than the queue with MQTT
  5, but brokers do not all keep to it: mosquitto 2.0.11 does not, with 3.1.1 or 5).
  The worker never waits for paho's threads, so the wait ends when the worker takes
  the next message. If the queue stays full that long (a stuck worker), the message
  is counted and not acknowledged: a QoS 1 message stays in flight at the broker
  until the session resumes, so once the queue has drained the worker calls
  :meth:`MqttBridge.resume_session`, which reconnects and gets it redelivered; a
  QoS 0 message is lost, as QoS 0 allows.

The **outbound** connection (client id ``<client_id>-out``, clean session) publishes
predictions, label requests and the status, and carries the retained last will.
It is separate because paho runs one thread per connection: while the inbound thread
waits for queue room it cannot write, and predictions must still flow then. Its
outgoing queue is capped (``max_queued_messages_set``); the worker waits for room
(:meth:`MqttBridge.outgoing_full`) rather than drop, and a publish that still finds
it full is counted and dropped. QoS>0 messages published while the broker is away
wait in that queue and go out after the reconnect. Its in-flight window is
``max_inflight_messages`` (paho does not read the broker's Receive Maximum: keep the
setting within what the broker accepts).

Both reconnect with exponential backoff (``reconnect_delay_set``) and use the same
TLS (CA, client certificate), username and password.

Counters (:meth:`MqttBridge.counters`) are written by paho's threads and read by the
worker; each has one writer, so no lock is needed for them.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import paho.mqtt.client as paho
from paho.mqtt.enums import MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

__all__ = ["PROTOCOLS", "MqttSettings", "InboundMessage", "MqttBridge"]

logger = logging.getLogger("firmware_bridge.mqtt")
_paho_logger = logging.getLogger("firmware_bridge.mqtt.paho")

PROTOCOLS = {"MQTTv5": paho.MQTTv5, "MQTTv311": paho.MQTTv311}

# on_message re-checks pause_intake() this often while it waits for queue room.
_FULL_WAIT_STEP_S = 0.05
# The largest Receive Maximum MQTT 5 allows.
_MAX_RECEIVE_MAXIMUM = 65535
_OUTBOUND_SUFFIX = "-out"


@dataclass(frozen=True)
class MqttSettings:
    """Everything the clients need to connect; validated by the gateway's config loader.

    ``password`` is the secret itself (read from the configured file), never logged.
    ``max_queued_messages`` caps paho's outgoing queue (0: no cap);
    ``max_inflight_messages`` is how many outgoing QoS>0 messages may await their ack.
    """

    host: str = "localhost"
    port: int = 1883
    protocol: str = "MQTTv5"
    client_id: str = "edgelearn-gw1"
    keepalive_seconds: int = 60
    clean_start: bool = False
    session_expiry_seconds: int = 86400
    reconnect_min_delay_seconds: int = 1
    reconnect_max_delay_seconds: int = 120
    username: str = ""
    password: str | None = None
    subscribe_qos: int = 1
    max_queued_messages: int = 4096
    max_inflight_messages: int = 20
    tls_enabled: bool = False
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""

    def __repr__(self) -> str:
        # Keeps the password out of logs and tracebacks.
        fields = ", ".join(
            f"{name}={'***' if name == 'password' and value else value!r}"
            for name, value in vars(self).items()
        )
        return f"MqttSettings({fields})"


class InboundMessage(NamedTuple):
    """One message as on_message enqueued it; ``mid``/``qos`` are for :meth:`MqttBridge.ack`."""

    topic: str
    payload: bytes
    received_at: float
    mid: int
    qos: int


class MqttBridge:
    """Two paho connections: one fills ``inbound``, one publishes what the worker gives it.

    Parameters
    ----------
    settings
        Connection settings.
    subscriptions
        Topic filters subscribed (at ``settings.subscribe_qos``) on every connection.
    inbound
        The bounded queue on_message puts :class:`InboundMessage` values into.
    will_topic, will_payload
        The retained last will (the gateway's status topic and "offline").
    max_payload_bytes
        Payloads longer than this are cut to ``max_payload_bytes + 1`` bytes before
        they are queued, so the queue's memory is bounded whatever the broker lets
        through; the pipeline still rejects them as too large.
    on_connection_change
        Called (from a paho thread, with no argument) after every connect and
        disconnect, so the gateway can refresh its status message.
    full_wait_s
        How long on_message waits for room in a full queue before it gives up on a
        message (see the module docstring).
    """

    def __init__(
        self,
        settings: MqttSettings,
        subscriptions: tuple[str, ...],
        inbound: queue.Queue,
        will_topic: str,
        will_payload: bytes,
        max_payload_bytes: int,
        on_connection_change: Callable[[], None] | None = None,
        full_wait_s: float = 5.0,
    ):
        self.settings = settings
        self.subscriptions = tuple(subscriptions)
        self._inbound = inbound
        self._max_payload_bytes = max_payload_bytes
        self._on_connection_change = on_connection_change
        self._full_wait_s = full_wait_s
        self._accepting = True
        self._leaving = False  # a disconnect we asked for: not a warning
        self._v5 = settings.protocol == "MQTTv5"
        self._in_connected = threading.Event()
        self._out_connected = threading.Event()
        self.connects = 0
        self.disconnects = 0
        self.out_connects = 0
        self.out_disconnects = 0
        self.connect_failures = 0
        self.subscribe_failures = 0
        self.queue_full = 0
        self.queue_full_waits = 0
        self.queue_full_unacked = 0  # QoS>0 among them: the broker will redeliver these
        self.session_resumptions = 0
        self._unacked_resumed = 0  # queue_full_unacked when the session was last resumed
        self.not_accepted = 0
        self.publish_dropped = 0
        self.session_present = False
        self._in = self._client(settings.client_id, persistent=True)
        self._in.on_connect = self._on_connect
        self._in.on_disconnect = self._on_disconnect
        self._in.on_subscribe = self._on_subscribe
        self._in.on_message = self._on_message
        self._out = self._client(settings.client_id + _OUTBOUND_SUFFIX, persistent=False)
        self._out.will_set(will_topic, will_payload, qos=1, retain=True)
        self._out.max_queued_messages_set(settings.max_queued_messages)
        self._out.max_inflight_messages_set(settings.max_inflight_messages)
        self._out.on_connect = self._on_out_connect
        self._out.on_disconnect = self._on_out_disconnect

    # -- set-up ------------------------------------------------------------------

    def _client(self, client_id: str, persistent: bool) -> paho.Client:
        s = self.settings
        clean = s.clean_start or not persistent
        client = paho.Client(
            callback_api_version=paho.CallbackAPIVersion.VERSION2,
            client_id=client_id,
            clean_session=None if self._v5 else clean,
            protocol=PROTOCOLS[s.protocol],
            reconnect_on_failure=True,
            manual_ack=persistent,
        )
        client.enable_logger(_paho_logger)
        if s.username:
            client.username_pw_set(s.username, s.password)
        if s.tls_enabled:
            client.tls_set(
                ca_certs=s.ca_file or None,
                certfile=s.cert_file or None,
                keyfile=s.key_file or None,
            )
        client.reconnect_delay_set(s.reconnect_min_delay_seconds, s.reconnect_max_delay_seconds)
        client.on_connect_fail = self._on_connect_fail
        return client

    def _connect(self, client: paho.Client, persistent: bool) -> None:
        s = self.settings
        properties = None
        if self._v5:
            properties = Properties(PacketTypes.CONNECT)
            if persistent and not s.clean_start:
                properties.SessionExpiryInterval = s.session_expiry_seconds
            if persistent:
                capacity = self._inbound.maxsize or _MAX_RECEIVE_MAXIMUM
                properties.ReceiveMaximum = max(1, min(capacity, _MAX_RECEIVE_MAXIMUM))
        client.connect_async(
            s.host,
            s.port,
            keepalive=s.keepalive_seconds,
            clean_start=bool(s.clean_start or not persistent),
            properties=properties,
        )
        client.loop_start()

    def start(self) -> None:
        """Connect both in the background and keep reconnecting; returns at once.

        A broker that is down at start is retried with the configured backoff, so the
        gateway may start before the broker (boot order on a gateway is not ours).
        """
        self._connect(self._out, persistent=False)
        self._connect(self._in, persistent=True)

    # -- paho callbacks (network threads) ----------------------------------------------

    def _refused(self, reason_code: Any) -> None:
        self.connect_failures += 1
        logger.error(
            "broker %s:%d refused the connection: %s",
            self.settings.host,
            self.settings.port,
            reason_code,
        )

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._refused(reason_code)
            return
        self.connects += 1
        self.session_present = bool(flags.session_present)
        qos = self.settings.subscribe_qos
        if self._v5:
            topics = [(f, SubscribeOptions(qos=qos)) for f in self.subscriptions]
        else:
            topics = [(f, qos) for f in self.subscriptions]
        result, _ = client.subscribe(topics)
        if result != MQTTErrorCode.MQTT_ERR_SUCCESS:
            self.subscribe_failures += 1
            logger.error("subscribing to %s failed: %s", self.subscriptions, result)
        logger.info(
            "connected to %s:%d (%s, session %s)",
            self.settings.host,
            self.settings.port,
            self.settings.protocol,
            "resumed" if self.session_present else "new",
        )
        self._in_connected.set()
        self._changed()

    def _on_out_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._refused(reason_code)
            return
        self.out_connects += 1
        self._out_connected.set()
        self._changed()

    def _on_connect_fail(self, client, userdata) -> None:
        self.connect_failures += 1

    def _lost(self, event: threading.Event, which: str, reason_code: Any) -> bool:
        was_connected = event.is_set()
        event.clear()
        if was_connected and self._leaving:
            logger.info("%s connection to %s:%d closed", which, self.settings.host,
                        self.settings.port)
        elif was_connected:
            logger.warning(
                "%s connection to %s:%d lost (%s); reconnecting with backoff",
                which,
                self.settings.host,
                self.settings.port,
                reason_code,
            )
        self._changed()
        return was_connected and not self._leaving

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if self._lost(self._in_connected, "inbound", reason_code):
            self.disconnects += 1

    def _on_out_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if self._lost(self._out_connected, "outbound", reason_code):
            self.out_disconnects += 1

    def _on_subscribe(self, client, userdata, mid, reason_code_list, properties) -> None:
        refused = [str(code) for code in reason_code_list if code.is_failure]
        if refused:
            self.subscribe_failures += 1
            logger.error(
                "the broker refused subscriptions %s: %s (check the ACL)",
                self.subscriptions,
                ", ".join(refused),
            )

    def _on_message(self, client, userdata, message) -> None:
        # Network thread: no decoding of payloads, no logging.
        if not self._accepting:
            self.not_accepted += 1  # not acked: redelivered in the next session
            return
        try:
            topic = message.topic
        except UnicodeDecodeError:
            topic = ""  # the pipeline counts it as an unknown topic
        payload = message.payload
        if len(payload) > self._max_payload_bytes:
            payload = payload[: self._max_payload_bytes + 1]
        item = InboundMessage(topic, payload, time.time(), message.mid, message.qos)
        inbound = self._inbound
        try:
            inbound.put_nowait(item)
            return
        except queue.Full:
            pass
        # Waiting here stops paho reading, so TCP pushes back on the broker. The
        # worker never waits for this thread, so the wait ends as soon as it takes
        # a message; in short steps, so that pause_intake() ends it too.
        self.queue_full_waits += 1
        deadline = time.monotonic() + self._full_wait_s
        while self._accepting:
            try:
                inbound.put(item, timeout=_FULL_WAIT_STEP_S)
                return
            except queue.Full:
                if time.monotonic() >= deadline:
                    break
        if not self._accepting:
            self.not_accepted += 1
            return
        self.queue_full += 1
        if message.qos:
            self.queue_full_unacked += 1

    def _changed(self) -> None:
        if self._on_connection_change is not None:
            self._on_connection_change()

    # -- worker side -------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether both connections are up."""
        return self._in_connected.is_set() and self._out_connected.is_set()

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Block until both connections are up (or ``timeout`` s); return whether they are."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for event in (self._in_connected, self._out_connected):
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not event.wait(left):
                return False
        return True

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool = False) -> Any:
        """Hand a message to the outbound connection; QoS>0 messages wait in paho's
        queue while the broker is away. Returns paho's ``MQTTMessageInfo``, or
        ``None`` if the outgoing queue was full (counted as ``publish_dropped``)."""
        info = self._out.publish(topic, payload, qos, retain)
        if info.rc == MQTTErrorCode.MQTT_ERR_QUEUE_SIZE:
            self.publish_dropped += 1
            return None
        return info

    def outgoing_full(self, extra: int = 0) -> bool:
        """Whether ``extra`` more outgoing messages would pass the outgoing cap."""
        cap = self.settings.max_queued_messages
        return cap > 0 and self.outgoing_pending() + extra > cap

    def ack(self, mid: int, qos: int) -> None:
        """Acknowledge an inbound message once it is processed (no-op for QoS 0)."""
        if qos:
            self._in.ack(mid, qos)

    def outgoing_pending(self) -> int:
        """Outgoing QoS>0 messages paho still holds (sent and unacked, or queued)."""
        # paho has no public accessor; the length of a dict is safe to read.
        return len(self._out._out_messages)

    def needs_session_resumption(self) -> bool:
        """Whether QoS>0 messages were left unacknowledged for a full queue since the
        last resumption (they come back only when the session resumes)."""
        return self.queue_full_unacked > self._unacked_resumed

    def resume_session(self) -> None:
        """Reconnect the inbound connection, so the broker redelivers the messages
        left unacknowledged. Worker thread only, with the queue drained."""
        self._unacked_resumed = self.queue_full_unacked
        self.session_resumptions += 1
        logger.warning(
            "%d message(s) found the inbound queue full; reconnecting so the broker "
            "delivers them again",
            self.queue_full_unacked,
        )
        self._leaving = True
        self._accepting = False  # frees paho's thread if it waits for queue room
        self._close(self._in)
        self._in_connected.clear()
        self._leaving = False
        self._accepting = True
        self._connect(self._in, persistent=True)

    def pause_intake(self) -> None:
        """Stop queueing inbound messages; later ones stay unacknowledged, so the broker
        delivers them again in the next session (the first step of a clean stop)."""
        self._accepting = False

    def _close(self, client: paho.Client) -> None:
        # paho's loop logs an error for its last turn after a requested disconnect.
        client.disable_logger()
        if self._v5 and client is self._in and not self.settings.clean_start:
            # Keep the session: a DISCONNECT may set the expiry; say the same again.
            properties = Properties(PacketTypes.DISCONNECT)
            properties.SessionExpiryInterval = self.settings.session_expiry_seconds
            client.disconnect(properties=properties)
        else:
            client.disconnect()
        client.loop_stop()
        client.enable_logger(_paho_logger)

    def stop(self, timeout: float = 5.0) -> None:
        """Disconnect both cleanly (no last will; the session stays on the broker) after
        giving queued outgoing messages ``timeout`` seconds to go out."""
        deadline = time.monotonic() + timeout
        while (
            self._out_connected.is_set()
            and self.outgoing_pending()
            and time.monotonic() < deadline
        ):
            time.sleep(0.01)
        self._leaving = True
        self._close(self._in)
        self._close(self._out)
        self._in_connected.clear()
        self._out_connected.clear()

    def counters(self) -> dict[str, int]:
        """Connection and queue counters for the status message."""
        return {
            "connects": self.connects,
            "disconnects": self.disconnects,
            "out_connects": self.out_connects,
            "out_disconnects": self.out_disconnects,
            "connect_failures": self.connect_failures,
            "subscribe_failures": self.subscribe_failures,
            "queue_full": self.queue_full,
            "queue_full_waits": self.queue_full_waits,
            "queue_full_unacked": self.queue_full_unacked,
            "session_resumptions": self.session_resumptions,
            "not_accepted": self.not_accepted,
            "publish_dropped": self.publish_dropped,
            "outgoing_pending": self.outgoing_pending(),
        }
