"""The gateway's MQTT client: paho-mqtt 2.x with a persistent session and manual acks.

:class:`MqttBridge` wraps one ``paho.mqtt.client.Client`` (callback API version 2)
and does only network work; the gateway's worker thread does the rest:

* **persistent session**: a fixed client id and no clean start (MQTT 5: clean start
  off and a session expiry interval; MQTT 3.1.1: ``clean_session=False``), so the
  broker keeps the subscriptions and queues QoS 1 data while the gateway is away;
* **subscriptions in on_connect**, so every (re)connection has them even if the
  broker lost the session;
* **manual acks**: an inbound QoS 1 message is acknowledged only when the worker calls
  :meth:`MqttBridge.ack` after processing it; a message that was never acknowledged is
  redelivered by the broker when the session resumes (after a reconnect or a
  restart), so nothing the broker accepted is lost to a crash;
* **on_message only enqueues** ``(topic, payload, received_at, mid, qos)`` into the
  bounded inbound queue; when the queue is full the message is counted and not
  acknowledged (QoS 1: the broker redelivers it on the next session; QoS 0: it is
  lost, as QoS 0 allows). With MQTT 5 the client announces a Receive Maximum no larger
  than the queue, so the broker never has more unacknowledged QoS 1 messages out to us
  than the queue holds; with MQTT 3.1.1 keep the broker's ``max_inflight_messages``
  below the queue length for the same guarantee;
* reconnect with exponential backoff (``reconnect_delay_set``), an outgoing queue cap
  (``max_queued_messages_set``: a publish beyond it is counted and dropped), TLS (CA,
  client certificate), username and password, and a retained last will on the status
  topic.

Counters (:meth:`MqttBridge.counters`) are written by paho's network thread and read
by the worker; each has one writer, so no lock is needed for them.
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

PROTOCOLS = {"MQTTv5": paho.MQTTv5, "MQTTv311": paho.MQTTv311}

# The largest Receive Maximum MQTT 5 allows.
_MAX_RECEIVE_MAXIMUM = 65535


@dataclass(frozen=True)
class MqttSettings:
    """Everything the client needs to connect; validated by the gateway's config loader.

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
    """A paho client that fills ``inbound`` and publishes what the worker gives it.

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
        Called (from paho's thread, with no argument) after every connect and
        disconnect, so the gateway can refresh its status message.
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
    ):
        self.settings = settings
        self.subscriptions = tuple(subscriptions)
        self._inbound = inbound
        self._max_payload_bytes = max_payload_bytes
        self._on_connection_change = on_connection_change
        self._accepting = True
        self._stopping = False
        self._connected = threading.Event()
        self._v5 = settings.protocol == "MQTTv5"
        self.connects = 0
        self.disconnects = 0
        self.connect_failures = 0
        self.subscribe_failures = 0
        self.queue_full = 0
        self.queue_full_unacked = 0  # QoS>0 among them: the broker will redeliver these
        self.not_accepted = 0
        self.publish_dropped = 0
        self.session_present = False
        self._client = self._build_client(will_topic, will_payload)

    # -- set-up ------------------------------------------------------------------

    def _build_client(self, will_topic: str, will_payload: bytes) -> paho.Client:
        s = self.settings
        protocol = PROTOCOLS[s.protocol]
        client = paho.Client(
            callback_api_version=paho.CallbackAPIVersion.VERSION2,
            client_id=s.client_id,
            clean_session=None if self._v5 else s.clean_start,
            protocol=protocol,
            reconnect_on_failure=True,
            manual_ack=True,
        )
        client.enable_logger(logging.getLogger("firmware_bridge.mqtt.paho"))
        if s.username:
            client.username_pw_set(s.username, s.password)
        if s.tls_enabled:
            client.tls_set(
                ca_certs=s.ca_file or None,
                certfile=s.cert_file or None,
                keyfile=s.key_file or None,
            )
        client.will_set(will_topic, will_payload, qos=1, retain=True)
        client.reconnect_delay_set(s.reconnect_min_delay_seconds, s.reconnect_max_delay_seconds)
        client.max_queued_messages_set(s.max_queued_messages)
        client.max_inflight_messages_set(s.max_inflight_messages)
        client.on_connect = self._on_connect
        client.on_disconnect = self._on_disconnect
        client.on_subscribe = self._on_subscribe
        client.on_message = self._on_message
        client.on_connect_fail = self._on_connect_fail
        return client

    def _connect_properties(self) -> Properties | None:
        if not self._v5:
            return None
        properties = Properties(PacketTypes.CONNECT)
        if not self.settings.clean_start:
            properties.SessionExpiryInterval = self.settings.session_expiry_seconds
        # Never more unacknowledged QoS 1 messages in flight to us than the queue holds,
        # so a full queue (which must not ack) cannot happen for QoS 1 data.
        capacity = self._inbound.maxsize or _MAX_RECEIVE_MAXIMUM
        properties.ReceiveMaximum = max(1, min(capacity, _MAX_RECEIVE_MAXIMUM))
        return properties

    def start(self) -> None:
        """Connect in the background and keep reconnecting; returns at once.

        A broker that is down at start is retried with the configured backoff, so the
        gateway may start before the broker (boot order on a gateway is not ours).
        """
        s = self.settings
        self._client.connect_async(
            s.host,
            s.port,
            keepalive=s.keepalive_seconds,
            clean_start=bool(s.clean_start),
            properties=self._connect_properties(),
        )
        self._client.loop_start()

    # -- paho callbacks (network thread) -----------------------------------------------

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self.connect_failures += 1
            logger.error(
                "broker %s:%d refused the connection: %s",
                self.settings.host,
                self.settings.port,
                reason_code,
            )
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
        self._connected.set()
        self._changed()

    def _on_connect_fail(self, client, userdata) -> None:
        self.connect_failures += 1

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        was_connected = self._connected.is_set()
        self._connected.clear()
        if was_connected and self._stopping:
            logger.info("disconnected from %s:%d", self.settings.host, self.settings.port)
        elif was_connected:
            self.disconnects += 1
            logger.warning(
                "disconnected from %s:%d (%s); reconnecting with backoff",
                self.settings.host,
                self.settings.port,
                reason_code,
            )
        self._changed()

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
        # Network thread: no decoding of payloads, no logging, no blocking.
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
        try:
            self._inbound.put_nowait(
                InboundMessage(topic, payload, time.time(), message.mid, message.qos)
            )
        except queue.Full:
            self.queue_full += 1
            if message.qos:
                self.queue_full_unacked += 1

    def _changed(self) -> None:
        if self._on_connection_change is not None:
            self._on_connection_change()

    # -- worker side -------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def wait_connected(self, timeout: float | None = None) -> bool:
        """Block until connected (or ``timeout`` seconds); return whether connected."""
        return self._connected.wait(timeout)

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool = False) -> Any:
        """Hand a message to paho; QoS>0 messages wait in paho's queue while the broker is
        away. Returns paho's ``MQTTMessageInfo``, or ``None`` if the outgoing queue was
        full (counted as ``publish_dropped``)."""
        info = self._client.publish(topic, payload, qos, retain)
        if info.rc == MQTTErrorCode.MQTT_ERR_QUEUE_SIZE:
            self.publish_dropped += 1
            return None
        return info

    def ack(self, mid: int, qos: int) -> None:
        """Acknowledge an inbound message once it is processed (no-op for QoS 0)."""
        if qos:
            self._client.ack(mid, qos)

    def pause_intake(self) -> None:
        """Stop queueing inbound messages; later ones stay unacknowledged, so the broker
        delivers them again in the next session (the first step of a clean stop)."""
        self._accepting = False

    def outgoing_pending(self) -> int:
        """Outgoing QoS>0 messages paho still holds (sent and unacked, or queued)."""
        # paho has no public accessor; the length of a dict is safe to read.
        return len(self._client._out_messages)

    def stop(self, timeout: float = 5.0) -> None:
        """Disconnect cleanly (no last will; the session stays on the broker) and stop
        the network thread, after giving queued outgoing messages ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while self.connected and self.outgoing_pending() and time.monotonic() < deadline:
            time.sleep(0.01)
        self._stopping = True
        # paho's loop logs an error for its last turn after a requested disconnect.
        self._client.disable_logger()
        if self._v5:
            # Keep the session: a DISCONNECT may override the expiry; say the same again.
            properties = Properties(PacketTypes.DISCONNECT)
            if not self.settings.clean_start:
                properties.SessionExpiryInterval = self.settings.session_expiry_seconds
            self._client.disconnect(properties=properties)
        else:
            self._client.disconnect()
        self._client.loop_stop()
        self._connected.clear()

    def counters(self) -> dict[str, int]:
        """Connection and queue counters for the status message."""
        return {
            "connects": self.connects,
            "disconnects": self.disconnects,
            "connect_failures": self.connect_failures,
            "subscribe_failures": self.subscribe_failures,
            "queue_full": self.queue_full,
            "queue_full_unacked": self.queue_full_unacked,
            "not_accepted": self.not_accepted,
            "publish_dropped": self.publish_dropped,
            "outgoing_pending": self.outgoing_pending(),
        }
