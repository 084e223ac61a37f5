"""What the gateway needs to reach a broker, apart from its running connections: the
connection settings, a broker address parsed, and the retained message of one topic
read by a short-lived client (``edgelearn status``). Moved out of
:mod:`firmware_bridge.service.mqtt`, which still exports them."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import paho.mqtt.client as paho
from paho.mqtt.enums import MQTTErrorCode

__all__ = ["PROTOCOLS", "MqttSettings", "parse_broker", "read_retained"]

PROTOCOLS = {"MQTTv5": paho.MQTTv5, "MQTTv311": paho.MQTTv311}


def parse_broker(text: str) -> tuple[str, int]:
    """``"HOST:PORT"`` (an IPv6 address in brackets) as ``(host, port)``; a
    ``ValueError`` that says what is wrong otherwise.

    >>> parse_broker("[::1]:1883"), parse_broker("gw.local:8883")
    (('::1', 1883), ('gw.local', 8883))
    >>> parse_broker("localhost")
    Traceback (most recent call last):
    ...
    ValueError: must be HOST:PORT with PORT in [1, 65535], got 'localhost'
    """
    host, sep, port = text.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"must be HOST:PORT with PORT in [1, 65535], got {text!r}")
    return host, int(port)


@dataclass(frozen=True)
class MqttSettings:
    """Everything the clients need to connect; validated by the gateway's config loader.

    ``brokers`` are further ``(host, port)`` addresses of the same broker cluster: after
    a failed connection attempt a link tries the next address (``host:port`` first).

    ``password`` is the secret itself (read from the configured file), never logged.
    ``max_queued_messages`` caps paho's outgoing queue (0: no cap);
    ``max_inflight_messages`` is how many outgoing QoS>0 messages may await their ack.
    """

    host: str = "localhost"
    port: int = 1883
    brokers: tuple[tuple[str, int], ...] = ()
    protocol: str = "MQTTv5"
    client_id: str = "edgelearn-gw1"
    keepalive_seconds: int = 60
    clean_start: bool = False
    session_expiry_seconds: int = 86400
    reconnect_min_delay_seconds: int = 1
    reconnect_max_delay_seconds: int = 5
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


def read_retained(settings: MqttSettings, topic: str, timeout: float) -> bytes | None:
    """The retained message on ``topic`` (``None`` if none arrives within ``timeout``
    seconds), read by a short-lived client with ``settings``' broker, TLS and
    credentials. Raises ``ConnectionError`` if the broker refuses or cannot be reached.
    """
    client = paho.Client(
        callback_api_version=paho.CallbackAPIVersion.VERSION2,
        client_id=f"{settings.client_id}-status-{os.getpid()}",
        protocol=PROTOCOLS[settings.protocol],
    )
    if settings.username:
        client.username_pw_set(settings.username, settings.password)
    if settings.tls_enabled:
        client.tls_set(ca_certs=settings.ca_file or None, certfile=settings.cert_file or None,
                       keyfile=settings.key_file or None)
    received: list[bytes] = []
    refused: list[str] = []

    def on_connect(client, userdata, flags, reason_code, properties):
        if reason_code.is_failure:
            refused.append(str(reason_code))
        else:
            client.subscribe(topic, qos=1)

    client.on_connect = on_connect
    client.on_message = lambda client, userdata, message: received.append(message.payload)
    try:
        client.connect(settings.host, settings.port, keepalive=max(5, int(timeout) + 5))
    except (OSError, ValueError) as exc:
        raise ConnectionError(f"cannot reach {settings.host}:{settings.port}: {exc}") from None
    deadline = time.monotonic() + timeout
    try:
        while not received and not refused and time.monotonic() < deadline:
            if client.loop(0.1) != MQTTErrorCode.MQTT_ERR_SUCCESS and not received:
                refused.append("the connection was closed")
    finally:
        client.disconnect()
    if refused:
        raise ConnectionError(
            f"{settings.host}:{settings.port} refused the connection: {refused[0]}")
    return received[0] if received else None
