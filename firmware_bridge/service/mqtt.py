"""The gateway's MQTT client: paho-mqtt 2.x with a persistent session and manual acks.

:class:`MqttBridge` holds two ``paho.mqtt.client.Client`` connections (callback API
version 2) and drives both from the thread that calls :meth:`MqttBridge.poll`: the
gateway's worker. paho's external-loop interface (``loop_read``, ``loop_write``,
``loop_misc`` around our own ``select``) replaces its network threads, so a message
is received, processed, published and acknowledged by one thread, with no hand-over
between threads under the GIL and no wake-up per packet; it is what makes the gateway
fast on a two-core board.

The **inbound** connection receives data (and label answers, without an answers
connection):

* **persistent session**: a fixed client id and no clean start (MQTT 5: clean start
  off and a session expiry interval; MQTT 3.1.1: ``clean_session=False``), so the
  broker keeps the subscriptions and queues QoS 1 data while the gateway is away;
* **subscriptions in on_connect**, so every (re)connection has them even if the
  broker lost the session;
* **manual acks**: an inbound QoS 1 message is acknowledged only when the worker calls
  :meth:`MqttBridge.ack` after processing it; a message never acknowledged is
  redelivered by the broker when the session resumes (after a reconnect or a
  restart), so nothing the broker accepted is lost to a crash. Delivery is at least
  once: a message processed but not yet acknowledged when the connection drops comes
  again, and is predicted again;
* **on_message only enqueues** :class:`InboundMessage` values into the bounded
  ``inbound`` deque;
* **back-pressure**: the socket is read only while the deque has room, so a busy
  worker leaves data in the kernel's buffers, TCP pushes back and the broker keeps
  the backlog (whatever Receive Maximum it honours);
* **stale messages**: an inbound message belongs to one connection (its packet id
  means nothing on the next). When the connection is lost with messages still
  queued, they are dropped at the reconnect if the broker resumed the session (it
  redelivers them; counted as ``redelivery_expected``), and otherwise processed
  but not acknowledged.

The **answers** connection (client id ``<client_id>-answers``, when the bridge is given
``answer_filters``: ``[labels] own_session``) receives label answers alone, as the
inbound one does data (persistent session, subscriptions in on_connect, manual acks),
into its own bounded ``answers`` deque (``answer_capacity``, also its Receive
Maximum). So a flood of answers fills the broker's queue of that session, never the
data session's, and the worker takes answers only after the data queued
(``firmware_bridge.service.answers``). ``admit_answer(topic, payload)``, called as each answer
arrives, may refuse it (a per-stream rate limit): a refused answer is acknowledged at
once and not queued. The inbound session unsubscribes from those filters at each
connection (a resumed session may hold the subscription of an older gateway).

The **outbound** connection (client id ``<client_id>-out``, clean session) publishes
predictions, label requests and the status, and carries the retained last will.
It is separate so that the will fires only when the gateway is really gone, and so
that the inbound session's redelivery never waits behind our own publishes. Its
outgoing queue is capped (``max_queued_messages_set``); :meth:`MqttBridge.outgoing_room`
tells the worker how many more messages it may hand over now (no more than
``max_inflight_messages`` waiting for their ack, which keeps paho's per-ack
bookkeeping short), and the worker waits rather than drops. QoS>0 messages published
while the broker is away wait in paho's queue and go out after the reconnect.

A publish the broker **refuses** (an MQTT 5 PUBACK or PUBCOMP whose reason code is
0x80 or more: "not authorized" from an ACL, "quota exceeded", ...) is still one paho
marks published, so the gateway's acks do not wait for it; the bridge hands its topic
and reason to ``on_publish_refused`` (the gateway counts it per topic kind, logs it and
turns its status to degraded). paho 2.x ignores a PUBREC's reason code, so a refused
QoS 2 publish shows at its PUBCOMP. MQTT 3.1.1 has no reason codes: a broker that
refuses a publish acknowledges it all the same, and nothing can tell.

Both reconnect by themselves with exponential backoff between
``reconnect_min_delay_seconds`` and ``reconnect_max_delay_seconds``, and use the same
TLS (CA, client certificate), username and password. A connection attempt blocks the
worker for at most paho's connect timeout (5 s), while no message can flow anyway.

Counters (:meth:`MqttBridge.counters`) are plain integers: one thread writes and
reads them all.
"""

from __future__ import annotations

import collections
import logging
import select
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import paho.mqtt.client as paho
from paho.mqtt.enums import MQTTErrorCode
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

# Defined there since they moved; exported here as before.
from .broker_tools import PROTOCOLS, MqttSettings, parse_broker, read_retained

__all__ = ["PROTOCOLS", "MqttSettings", "InboundMessage", "MqttBridge", "parse_broker",
           "read_retained"]

logger = logging.getLogger("firmware_bridge.mqtt")
_paho_logger = logging.getLogger("firmware_bridge.mqtt.paho")

# The largest Receive Maximum MQTT 5 allows.
_MAX_RECEIVE_MAXIMUM = 65535
_OUTBOUND_SUFFIX = "-out"
_ANSWERS_SUFFIX = "-answers"
# loop_misc (keepalive pings and their timeout) runs at least this often.
_MISC_INTERVAL_S = 0.5


class InboundMessage(NamedTuple):
    """One message as on_message enqueued it; ``mid``, ``qos`` and ``session`` (the
    inbound connection it came on) are for :meth:`MqttBridge.ack`. The first three
    fields are ``Pipeline.handle_many``'s ``(topic, payload, received_at)``: the
    worker hands queued messages over as they are."""

    topic: str
    payload: bytes
    received_at: float
    mid: int
    qos: int
    session: int


class _Link:
    """One paho client and its reconnection schedule."""

    __slots__ = ("name", "client", "connected", "next_attempt", "delay", "address")

    def __init__(self, name: str, client: paho.Client, min_delay: float):
        self.name = name
        self.address = 0  # index into MqttBridge.addresses
        self.client = client
        self.connected = False
        self.next_attempt = 0.0  # monotonic time of the next connection attempt
        self.delay = min_delay


class MqttBridge:
    """Two paho connections, driven by whoever calls :meth:`poll` (one thread only).

    Parameters
    ----------
    settings
        Connection settings.
    subscriptions
        Topic filters subscribed (at ``settings.subscribe_qos``) on every connection.
    will_topic, will_payload
        The retained last will (the gateway's status topic and "offline").
    max_payload_bytes
        Payloads longer than this are cut to ``max_payload_bytes + 1`` bytes before
        they are queued, so the queue's memory is bounded whatever the broker lets
        through; the pipeline still rejects them as too large.
    queue_capacity
        Most messages held in ``inbound`` (received, not yet taken by the worker).
    on_connection_change
        Called with no argument after every connect and disconnect, so the gateway
        can refresh its status message.
    on_publish_refused
        Called with the topic and paho's reason code of every publish the broker
        refused (MQTT 5 only).
    clock
        Monotonic seconds, for the reconnection backoff.
    """

    def __init__(
        self,
        settings: MqttSettings,
        subscriptions: tuple[str, ...],
        will_topic: str,
        will_payload: bytes,
        max_payload_bytes: int,
        queue_capacity: int,
        on_connection_change: Callable[[], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        on_publish_refused: Callable[[str, Any], None] | None = None,
        answer_filters: tuple[str, ...] = (),
        answer_capacity: int = 256,
        admit_answer: Callable[[str, bytes], bool] | None = None,
    ):
        self.settings = settings
        self.subscriptions = tuple(subscriptions)
        self.inbound: collections.deque[InboundMessage] = collections.deque()
        self.answers: collections.deque[InboundMessage] = collections.deque()
        self.answer_filters = tuple(answer_filters)
        self.answer_capacity = answer_capacity
        self._admit_answer = admit_answer
        self.queue_capacity = queue_capacity
        self._max_payload_bytes = max_payload_bytes
        self._on_connection_change = on_connection_change
        self._on_publish_refused = on_publish_refused
        self._clock = clock
        self._accepting = True
        self._leaving = False  # a disconnect we asked for: not a warning
        self._v5 = settings.protocol == "MQTTv5"
        self.addresses = ((settings.host, settings.port), *settings.brokers)
        self._window = settings.max_inflight_messages
        self._next_misc = 0.0
        self.session = 0  # inbound connections made so far; stamps each message
        self.answer_session = 0  # answers connections so far; stamps answers (negated)
        self.answer_connects = 0
        self.answer_disconnects = 0
        self.answers_received = 0  # answers that arrived, admitted or not
        self.connects = 0
        self.disconnects = 0
        self.out_connects = 0
        self.out_disconnects = 0
        self.connect_failures = 0
        self.connect_attempts = 0
        self.subscribe_failures = 0
        self.redelivery_expected = 0
        self.publish_dropped = 0
        self.session_present = False
        min_delay = settings.reconnect_min_delay_seconds
        self._in = _Link("inbound", self._client(settings.client_id, persistent=True), min_delay)
        self._in.client.on_connect = self._on_connect
        self._in.client.on_disconnect = self._on_disconnect
        self._in.client.on_subscribe = self._on_subscribe
        self._in.client.on_message = self._on_message
        out = self._client(settings.client_id + _OUTBOUND_SUFFIX, persistent=False)
        out.will_set(will_topic, will_payload, qos=1, retain=True)
        out.max_queued_messages_set(settings.max_queued_messages)
        out.max_inflight_messages_set(settings.max_inflight_messages)
        # paho's outgoing tables (messages by mid, packets not yet written), which it
        # creates once and only ever clears in place; it has no public accessor for
        # them: outgoing_pending() counts them, a refused publish's topic is found there.
        self._out_messages, self._out_packet = _paho_tables(out)
        out.on_connect = self._on_out_connect
        out.on_disconnect = self._on_out_disconnect
        if self._v5:  # MQTT 3.1.1 has no reason codes to look at
            out.on_publish = self._on_out_publish
        self._out = _Link("outbound", out, min_delay)
        self._links = (self._in, self._out)
        self._answer: _Link | None = None
        if self.answer_filters:
            answer = self._client(settings.client_id + _ANSWERS_SUFFIX, persistent=True)
            answer.on_connect = self._on_answer_connect
            answer.on_disconnect = self._on_answer_disconnect
            answer.on_subscribe = self._on_subscribe
            answer.on_message = self._on_answer
            self._answer = _Link("answers", answer, min_delay)
            self._links += (self._answer,)
        for link in self._links:
            self._set_address(link, persistent=link is not self._out)

    # -- set-up ------------------------------------------------------------------

    def _client(self, client_id: str, persistent: bool) -> paho.Client:
        s = self.settings
        clean = s.clean_start or not persistent
        client = paho.Client(
            callback_api_version=paho.CallbackAPIVersion.VERSION2,
            client_id=client_id,
            clean_session=None if self._v5 else clean,
            protocol=PROTOCOLS[s.protocol],
            reconnect_on_failure=False,  # poll() reconnects, with our backoff
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
        # With these set, publish() and ack() only queue their packets and poll() or
        # flush() writes them, many per system call turn, instead of one write each.
        client.on_socket_register_write = _ignore
        client.on_socket_unregister_write = _ignore
        # paho matches each message received against message_callback_add's filters
        # (the bridge adds none; no public way to skip it) with a recursive closure, a
        # reference cycle per message for the collector; an empty table matches nothing.
        client._on_message_filtered = _NO_FILTERS
        return client

    def _set_address(self, link: _Link, persistent: bool) -> None:
        # Only records where and how to connect (and freezes the client's settings);
        # poll() makes the attempts.
        s = self.settings
        properties = None
        if self._v5:
            properties = Properties(PacketTypes.CONNECT)
            if persistent and not s.clean_start:
                properties.SessionExpiryInterval = s.session_expiry_seconds
            if persistent:
                window = self.queue_capacity if link is self._in else self.answer_capacity
                properties.ReceiveMaximum = max(1, min(window, _MAX_RECEIVE_MAXIMUM))
        host, port = self.addresses[link.address]
        link.client.connect_async(
            host,
            port,
            keepalive=s.keepalive_seconds,
            clean_start=bool(s.clean_start or not persistent),
            properties=properties,
        )

    def start(self) -> None:
        """Make the first connection attempts due now (the next :meth:`poll` makes them).

        A broker that is down is retried with the configured backoff, so the gateway
        may start before the broker (boot order on a gateway is not ours).
        """
        now = self._clock()
        for link in self._links:
            link.next_attempt = now

    # -- the network turn ------------------------------------------------------------

    def poll(self, timeout: float) -> None:
        """One turn of network work: connect what is due, wait up to ``timeout`` s for
        a socket to be ready, read (inbound only while the queue has room), write
        what is queued, and keep the connections alive."""
        now = self._clock()
        for link in self._links:
            if link.client.socket() is None and now >= link.next_attempt and not self._leaving:
                # One (blocking) attempt per turn, so the worker's housekeeping (the
                # systemd watchdog) runs between the two links' attempts.
                self._attempt(link, now)
                return
        in_sock = self._in.client.socket()
        out_sock = self._out.client.socket()
        readable = []
        reading_in = in_sock is not None and self._accepting and self._room() > 0
        if reading_in:
            readable.append(in_sock)
        if out_sock is not None:
            readable.append(out_sock)
        answer_sock = self._answer.client.socket() if self._answer is not None else None
        reading_answers = (answer_sock is not None and self._accepting
                           and len(self.answers) < self.answer_capacity)
        if reading_answers:
            readable.append(answer_sock)
        writable = [
            link.client.socket() for link in self._links
            if link.client.socket() is not None and link.client.want_write()
        ]
        # Decrypted bytes waiting in a TLS socket do not wake select; but bytes of the
        # inbound link we are not reading (queue full) must not make this a busy loop.
        if (reading_in and _tls_pending(in_sock)) or _tls_pending(out_sock):
            timeout = 0.0
        if not readable and not writable:
            if timeout > 0:
                time.sleep(min(timeout, self._until_next_attempt(now)))
            ready_r: list = []
            ready_w: list = []
        else:
            try:
                ready_r, ready_w, _ = select.select(readable, writable, [], timeout)
            except (OSError, ValueError):  # a socket closed under us: the next turn sees it
                return
        if reading_in and (in_sock in ready_r or _tls_pending(in_sock)):
            self._read_inbound()
        if out_sock is not None and (out_sock in ready_r or _tls_pending(out_sock)):
            self._out.client.loop_read()
        if reading_answers and (answer_sock in ready_r or _tls_pending(answer_sock)):
            self._read_answers()
        if ready_w:
            self.flush()
        now = self._clock()
        if now >= self._next_misc:
            self._next_misc = now + _MISC_INTERVAL_S
            for link in self._links:
                if link.client.socket() is not None:
                    link.client.loop_misc()

    def _until_next_attempt(self, now: float) -> float:
        waits = [link.next_attempt - now for link in self._links if link.client.socket() is None]
        return max(0.0, min(waits, default=_MISC_INTERVAL_S))

    def _attempt(self, link: _Link, now: float) -> None:
        self.connect_attempts += 1
        try:
            link.client.reconnect()
        except (OSError, ValueError) as exc:
            self.connect_failures += 1
            self._schedule(link, now)
            failed = self._where(link)
            if len(self.addresses) > 1:  # the next node of the cluster
                link.address = (link.address + 1) % len(self.addresses)
                self._set_address(link, persistent=link is not self._out)
            logger.warning(
                "%s connection to %s failed (%s); next attempt (%s) in %d s",
                link.name, failed, exc, self._where(link), link.next_attempt - now,
            )

    def _where(self, link: _Link) -> str:
        host, port = self.addresses[link.address]
        return f"{host}:{port}"

    def _schedule(self, link: _Link, now: float) -> None:
        link.next_attempt = now + link.delay
        link.delay = min(link.delay * 2, self.settings.reconnect_max_delay_seconds)

    def _read_inbound(self) -> None:
        # paho reads one packet per loop_read on this connection (it publishes
        # nothing): read while packets keep coming as messages and there is room.
        # A packet that is not a message (SUBACK, PINGRESP) ends the turn early;
        # the next select finds the rest.
        inbound = self.inbound
        client = self._in.client
        for _ in range(self._room()):
            before = len(inbound)
            if client.loop_read() != MQTTErrorCode.MQTT_ERR_SUCCESS or len(inbound) == before:
                return

    def _read_answers(self) -> None:
        # As _read_inbound; an answer admit_answer refused counts as read too.
        client = self._answer.client
        for _ in range(self.answer_capacity - len(self.answers)):
            before = self.answers_received
            if client.loop_read() != MQTTErrorCode.MQTT_ERR_SUCCESS or (
                    self.answers_received == before):
                return

    def _room(self) -> int:
        return self.queue_capacity - len(self.inbound)

    def flush(self) -> None:
        """Write every queued outgoing packet (publishes, acks) the sockets take now."""
        for link in self._links:
            client = link.client
            if client.socket() is not None and client.want_write():
                client.loop_write()

    # -- paho callbacks (called from poll, in the worker thread) ---------------------------

    def _refused(self, link: _Link, reason_code: Any) -> None:
        self.connect_failures += 1
        logger.error("broker %s refused the %s connection: %s", self._where(link), link.name,
                     reason_code)

    def _connected(self, link: _Link) -> None:
        link.connected = True
        link.delay = self.settings.reconnect_min_delay_seconds
        self._changed()

    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._refused(self._in, reason_code)
            return
        self.connects += 1
        self.session += 1
        self.session_present = bool(flags.session_present)
        if self.session_present and self.inbound:
            # The broker kept the session: it sends these again, with new packet ids.
            self.redelivery_expected += len(self.inbound)
            self.inbound.clear()
        if self.answer_filters:  # the answers have their own session now
            client.unsubscribe(list(self.answer_filters))
        self._subscribe(client, self.subscriptions)
        logger.info(
            "connected to %s (%s, session %s)",
            self._where(self._in),
            self.settings.protocol,
            "resumed" if self.session_present else "new",
        )
        self._connected(self._in)

    def _on_answer_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._refused(self._answer, reason_code)
            return
        self.answer_connects += 1
        self.answer_session += 1
        if flags.session_present and self.answers:
            self.redelivery_expected += len(self.answers)  # as _on_connect's
            self.answers.clear()
        self._subscribe(client, self.answer_filters)
        self._connected(self._answer)

    def _on_out_connect(self, client, userdata, flags, reason_code, properties) -> None:
        if reason_code.is_failure:
            self._refused(self._out, reason_code)
            return
        self.out_connects += 1
        self._connected(self._out)

    def _lost(self, link: _Link, reason_code: Any) -> bool:
        was_connected = link.connected
        link.connected = False
        if not was_connected and not self._leaving:
            # Closed before the broker's CONNACK (a node still starting, a TLS
            # handshake refused, a proxy with no broker behind it): a failed attempt.
            self.connect_failures += 1
            logger.warning("%s connection to %s closed before the broker accepted it "
                           "(%s)", link.name, self._where(link), reason_code)
        if not self._leaving:
            self._schedule(link, self._clock())
        if was_connected and self._leaving:
            logger.info("%s connection to %s closed", link.name, self._where(link))
        elif was_connected:
            logger.warning(
                "%s connection to %s lost (%s); reconnecting with backoff",
                link.name,
                self._where(link),
                reason_code,
            )
        self._changed()
        return was_connected and not self._leaving

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if self._lost(self._in, reason_code):
            self.disconnects += 1

    def _subscribe(self, client: paho.Client, filters: tuple[str, ...]) -> None:
        qos = self.settings.subscribe_qos
        if self._v5:
            topics = [(f, SubscribeOptions(qos=qos)) for f in filters]
        else:
            topics = [(f, qos) for f in filters]
        result, _ = client.subscribe(topics)
        if result != MQTTErrorCode.MQTT_ERR_SUCCESS:
            self.subscribe_failures += 1
            logger.error("subscribing to %s failed: %s", filters, result)

    def _on_answer_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if self._lost(self._answer, reason_code):
            self.answer_disconnects += 1

    def _on_out_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        if self._lost(self._out, reason_code):
            self.out_disconnects += 1

    def _on_out_publish(self, client, userdata, mid, reason_code, properties) -> None:
        # Called for every publish (the per-message path): one attribute test when
        # the broker took it.
        if reason_code.is_failure:
            # paho still holds the message while it calls this (the topic is read only
            # for a refused publish, not kept for every one).
            message = self._out_messages.get(mid)
            topic = message.topic if message is not None else ""
            if self._on_publish_refused is not None:
                self._on_publish_refused(topic, reason_code)

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
        # No decoding of payloads, no logging: the worker does that.
        try:
            topic = message.topic
        except UnicodeDecodeError:
            topic = ""  # the pipeline counts it as an unknown topic
        payload = message.payload
        if len(payload) > self._max_payload_bytes:
            payload = payload[: self._max_payload_bytes + 1]
        self.inbound.append(
            InboundMessage(topic, payload, time.time(), message.mid, message.qos, self.session)
        )

    def _on_answer(self, client, userdata, message) -> None:
        self.answers_received += 1
        try:
            topic = message.topic
        except UnicodeDecodeError:
            topic = ""
        payload = message.payload
        if len(payload) > self._max_payload_bytes:
            payload = payload[: self._max_payload_bytes + 1]
        if self._admit_answer is not None and not self._admit_answer(topic, payload):
            if message.qos:  # refused (counted by admit_answer): done with it
                client.ack(message.mid, message.qos)
            return
        self.answers.append(InboundMessage(topic, payload, time.time(), message.mid,
                                           message.qos, -self.answer_session))

    def _changed(self) -> None:
        if self._on_connection_change is not None:
            self._on_connection_change()

    # -- the worker's calls ----------------------------------------------------------------

    @property
    def connected(self) -> bool:
        """Whether both connections are up."""
        return self._in.connected and self._out.connected and (
            self._answer is None or self._answer.connected)

    @property
    def can_publish(self) -> bool:
        """Whether the outbound connection (the one that publishes) is up."""
        return self._out.connected

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool = False) -> Any:
        """Queue a message on the outbound connection (written by the next
        :meth:`flush` or :meth:`poll`); QoS>0 messages wait in paho's queue while the
        broker is away. Returns paho's ``MQTTMessageInfo``, or ``None`` if it could not
        be queued (counted as ``publish_dropped``)."""
        info = self._out.client.publish(topic, payload, qos, retain)
        if info.rc not in (MQTTErrorCode.MQTT_ERR_SUCCESS, MQTTErrorCode.MQTT_ERR_NO_CONN) or (
            info.rc == MQTTErrorCode.MQTT_ERR_NO_CONN and qos == 0
        ):
            self.publish_dropped += 1
            return None
        return info

    def outgoing_pending(self) -> int:
        """Outgoing messages paho still holds: QoS>0 ones sent and unacked or queued,
        or, if more, packets not yet written (QoS 0 messages are only those)."""
        # A QoS>0 message not yet written is in both, so the sum would count it twice
        # and halve the window.
        return max(len(self._out_messages), len(self._out_packet))

    def outgoing_room(self) -> int:
        """How many more messages the worker may publish now: none while the outbound
        connection is down, else what is left of the in-flight window."""
        if not self._out.connected:
            return 0
        return self._window - self.outgoing_pending()

    def ack(self, message: InboundMessage) -> bool:
        """Acknowledge a processed message (written by the next :meth:`flush`); returns
        False, doing nothing, for QoS 0 and for a message of an earlier connection,
        whose packet id means nothing on this one."""
        link, session = (self._in, self.session) if message.session >= 0 else (
            self._answer, -self.answer_session)  # an answer's session is negated
        if not message.qos or message.session != session or not link.connected:
            return False
        link.client.ack(message.mid, message.qos)
        return True

    def pause_intake(self) -> None:
        """Stop reading inbound messages; later ones stay with the broker for the next
        session (the first step of a clean stop)."""
        self._accepting = False

    def disconnect(self, timeout: float = 2.0) -> None:
        """Disconnect both cleanly (no last will; the inbound session stays on the
        broker), giving the DISCONNECT packets ``timeout`` seconds to go out."""
        self._leaving = True
        for link in self._links:
            client = link.client
            if client.socket() is None:
                continue
            if self._v5 and link is not self._out and not self.settings.clean_start:
                # Keep the session: a DISCONNECT may set the expiry; say the same again.
                properties = Properties(PacketTypes.DISCONNECT)
                properties.SessionExpiryInterval = self.settings.session_expiry_seconds
                client.disconnect(properties=properties)
            else:
                client.disconnect()
        deadline = self._clock() + timeout
        while self._clock() < deadline and any(
            link.client.socket() is not None for link in self._links
        ):
            self.poll(0.01)
        for link in self._links:
            # paho logs an error for a socket it closes itself after our DISCONNECT.
            link.client.disable_logger()
            if link.client.socket() is not None:
                link.client._sock_close()
            link.connected = False

    def counters(self) -> dict[str, int]:
        """Connection and queue counters for the status message."""
        return {
            "connects": self.connects,
            "disconnects": self.disconnects,
            "out_connects": self.out_connects,
            "out_disconnects": self.out_disconnects,
            "answer_connects": self.answer_connects,
            "answer_disconnects": self.answer_disconnects,
            "connect_attempts": self.connect_attempts,
            "connect_failures": self.connect_failures,
            "subscribe_failures": self.subscribe_failures,
            "redelivery_expected": self.redelivery_expected,
            "publish_dropped": self.publish_dropped,
            "outgoing_pending": self.outgoing_pending(),
        }


def _paho_tables(client: paho.Client) -> tuple[Any, Any]:
    """paho's outgoing messages by mid and packets not yet written (no public accessor)."""
    return client._out_messages, client._out_packet


def _ignore(*_: Any) -> None:
    pass


class _NoFilters:
    """paho's table of ``message_callback_add`` filters, empty (see MqttBridge._client)."""

    def iter_match(self, topic: str) -> tuple:
        return ()


_NO_FILTERS = _NoFilters()


def _tls_pending(sock: Any) -> bool:
    # A TLS socket may hold decrypted bytes that select() cannot see.
    pending = getattr(sock, "pending", None)
    return pending is not None and pending() > 0
