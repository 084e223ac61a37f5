"""The gateway service: configuration, threads, checkpoints, status, signals, sd_notify.

Threads and who owns what:

* one worker thread owns everything that moves: the
  :class:`~firmware_bridge.mqtt.MqttBridge` (it drives both MQTT connections itself,
  through paho's external-loop interface), the
  :class:`~firmware_bridge.pipeline.Pipeline`, the recorder and the checkpoints. Each
  turn it polls the network (paho's on_message only puts messages into the bounded
  inbound queue), takes queued messages while the outbound in-flight window has room,
  records each (optional), runs it through the pipeline, queues the outputs for
  publishing, and acknowledges a message once the broker has taken its outputs;
  between turns (at least every :data:`TICK_SECONDS`) it pets the systemd watchdog,
  publishes the retained status message when due, expires label requests and writes
  per-stream checkpoints when due. The watchdog is fed from this loop on purpose: a
  stuck worker stops feeding it and systemd restarts the service;
* the main thread waits for SIGTERM/SIGINT and asks the worker to stop: it stops
  reading (later messages stay unacknowledged and the broker keeps them for the next
  session), finishes what it received, writes checkpoints, publishes the retained
  ``"stopped"`` status and disconnects; the main thread waits for that.

Checkpoints are one file per stream, ``stream-<quoted id>.ckpt`` in the checkpoint
directory, written with :func:`edgelearn.state.save_checkpoint` (atomic, two
generations) every ``interval_seconds`` for the streams that changed, and at stop. At
start every checkpoint found is restored; a corrupt newest generation falls back to
the older one and a checkpoint that does not fit the configured learner is replaced
by a fresh model; the status message's ``"checkpoints"`` entry says which.

Configuration: :func:`load_config` reads ``configs/gateway.toml``'s format, checks
every key and reports every problem at once; :func:`run_gateway` prints them and
exits with status 2.
"""

from __future__ import annotations

import argparse
import collections
import gc
import json
import logging
import math
import os
import platform
import signal
import socket
import sys
import threading
import time
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack
import paho.mqtt

import edgelearn
from edgelearn.state import CheckpointError, load_checkpoint, save_checkpoint

from .labels import PendingLabels
from .mqtt import PROTOCOLS, InboundMessage, MqttBridge, MqttSettings, parse_broker, read_retained
from .pipeline import Pipeline, RateLimitedLog, StateMismatch
from .protocol import DEFAULT_LIMITS, Limits, Topics, encode_status
from .recorder import _PREFIX_PATTERN as _RECORDER_PREFIX
from .recorder import LogWriter

__all__ = [
    "TICK_SECONDS",
    "GatewayConfig",
    "Gateway",
    "SystemdNotifier",
    "load_config",
    "add_gateway_arguments",
    "run_gateway",
    "add_status_arguments",
    "run_status",
    "checkpoint_path",
]

logger = logging.getLogger("firmware_bridge.gateway")

TICK_SECONDS = 0.25
"""Longest the worker waits for a message before doing its periodic work."""

_STATUS_MIN_INTERVAL_S = 1.0  # status on change, but not more often than this
# At a stop: how long the worker may go on with what it had received (outputs the
# broker has not taken by then leave their messages unacknowledged: they come again),
# how long the "stopped" status may take, and how long the main thread waits for all.
_STOP_DRAIN_S = 5.0
_FINAL_PUBLISH_TIMEOUT_S = 5.0
_STOP_JOIN_S = 60.0
_CHECKPOINT_PREFIX = "stream-"
_CHECKPOINT_SUFFIX = ".ckpt"
# The worker fills the in-flight window and may then publish one message's outputs
# (prediction and label request) and a status: paho's queue needs that much more.
_OUTPUT_MARGIN = 3
# Per queued message beyond its payload: the tuple, the topic str, the float (bytes).
_QUEUED_MESSAGE_OVERHEAD = 256
# paho keeps each outgoing QoS>0 message as an MQTTMessage with its info object.
_OUTGOING_MESSAGE_BYTES = 1024


# --- configuration ------------------------------------------------------------------


@dataclass(frozen=True)
class _Key:
    kind: str  # "int", "float", "bool", "str", "choice"
    default: Any
    low: float | None = None
    high: float | None = None
    choices: tuple = ()
    optional: bool = False  # may be omitted (then None)

    def describe(self) -> str:
        if self.kind == "choice":
            return "one of " + ", ".join(repr(c) for c in self.choices)
        if self.kind in ("int", "float"):
            low = "-inf" if self.low is None else f"{self.low:g}"
            high = "inf" if self.high is None else f"{self.high:g}"
            return f"{'an int' if self.kind == 'int' else 'a number'} in [{low}, {high}]"
        return {"bool": "true or false", "str": "a string"}[self.kind]

    def check(self, value: Any) -> bool:
        if self.kind == "choice":
            return any(value == c and type(value) is type(c) for c in self.choices)
        if self.kind == "bool":
            return isinstance(value, bool)
        if self.kind == "str":
            return isinstance(value, str)
        if isinstance(value, bool) or not isinstance(
            value, int if self.kind == "int" else (int, float)
        ):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


def _limits_schema() -> dict[str, _Key]:
    low = {"max_depth": 2}
    return {
        name: _Key("int", getattr(DEFAULT_LIMITS, name), low.get(name, 1), 1 << 24)
        for name in Limits.__dataclass_fields__
    }


_SCHEMA: dict[str, dict[str, _Key]] = {
    "gateway": {
        "id": _Key("str", "gw1"),
        "max_streams": _Key("int", 32, 1, 100_000),
        "inbound_queue_length": _Key("int", 1024, 1, 1_000_000),
        "status_interval_seconds": _Key("float", 30.0, 1, 86_400),
        "reject_log_interval_seconds": _Key("float", 60.0, 0, 86_400),
    },
    "topics": {
        kind: _Key("str", getattr(Topics(), f"{kind}_template"))
        for kind in ("data", "prediction", "label_request", "label", "status")
    },
    "limits": _limits_schema(),
    "labels": {
        "capacity": _Key("int", 1024, 1, 10_000_000),
        "ttl_seconds": _Key("float", 3600.0, 0.001, 365 * 86_400),
        "recent_capacity": _Key("int", None, 0, 10_000_000, optional=True),
    },
    "recorder": {
        "enabled": _Key("bool", False),
        "directory": _Key("str", "/var/lib/edgelearn/log"),
        "prefix": _Key("str", "messages"),
        "max_bytes": _Key("int", 64 * 1024 * 1024, 1024, None),
        "max_files": _Key("int", 32, 0, None),
    },
    "mqtt": {
        "host": _Key("str", "localhost"),
        "port": _Key("int", 1883, 1, 65_535),
        "protocol": _Key("choice", "MQTTv5", choices=tuple(PROTOCOLS)),
        "client_id": _Key("str", ""),
        "keepalive_seconds": _Key("int", 60, 5, 65_535),
        "clean_start": _Key("bool", False),
        "session_expiry_seconds": _Key("int", 86_400, 0, 2**32 - 1),
        "reconnect_min_delay_seconds": _Key("int", 1, 1, 3600),
        "reconnect_max_delay_seconds": _Key("int", 120, 1, 86_400),
        "username": _Key("str", ""),
        "password_file": _Key("str", ""),
        "subscribe_qos": _Key("choice", 1, choices=(0, 1)),
        "prediction_qos": _Key("choice", 1, choices=(0, 1, 2)),
        "label_request_qos": _Key("choice", 1, choices=(1, 2)),
        "max_queued_messages": _Key("int", 4096, 0, 10_000_000),
        "max_inflight_messages": _Key("int", 20, 1, 65_535),
    },
    "mqtt.tls": {
        "enabled": _Key("bool", False),
        "ca_file": _Key("str", ""),
        "cert_file": _Key("str", ""),
        "key_file": _Key("str", ""),
    },
    "checkpoints": {
        "directory": _Key("str", "/var/lib/edgelearn/state"),
        "interval_seconds": _Key("float", 600.0, 1, 7 * 86_400),
    },
    "learner": {
        "kind": _Key("choice", edgelearn.DEFAULT_KIND, choices=tuple(edgelearn.KINDS)),
    },
}
# Tables whose keys are free-form (checked by whoever takes them).
_FREE_TABLES = {"learner.params"}


@dataclass(frozen=True)
class GatewayConfig:
    """A validated gateway configuration (see ``configs/gateway.toml`` for every key)."""

    gateway_id: str = "gw1"
    max_streams: int = 32
    inbound_queue_length: int = 1024
    status_interval_s: float = 30.0
    reject_log_interval_s: float = 60.0
    topics: Topics = field(default_factory=Topics)
    limits: Limits = DEFAULT_LIMITS
    label_capacity: int = 1024
    label_ttl_s: float = 3600.0
    label_recent_capacity: int | None = None
    recorder_enabled: bool = False
    recorder_directory: str = "/var/lib/edgelearn/log"
    recorder_prefix: str = "messages"
    recorder_max_bytes: int = 64 * 1024 * 1024
    recorder_max_files: int | None = 32
    mqtt: MqttSettings = field(default_factory=MqttSettings)
    prediction_qos: int = 1
    label_request_qos: int = 1
    checkpoint_dir: str = "/var/lib/edgelearn/state"
    checkpoint_interval_s: float = 600.0
    learner_kind: str = edgelearn.DEFAULT_KIND
    learner_params: dict = field(default_factory=dict)
    source: str = ""

    def make_pipeline(self, clock=time.monotonic) -> Pipeline:
        """The pipeline this configuration describes (live policy: ``"request"``)."""
        return Pipeline(
            self.learner_kind,
            self.learner_params,
            topics=self.topics,
            limits=self.limits,
            max_streams=self.max_streams,
            pending_capacity=self.label_capacity,
            label_ttl_s=self.label_ttl_s,
            label_policy="request",
            clock=clock,
            gateway_id=self.gateway_id,
            recent_capacity=self.label_recent_capacity,
            prediction_qos=self.prediction_qos,
            label_request_qos=self.label_request_qos,
            log_interval_s=self.reject_log_interval_s,
        )


def _table(raw: dict, dotted: str) -> Any:
    node: Any = raw
    for part in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def _apply_overrides(raw: dict, overrides: Mapping[str, Any]) -> None:
    for dotted, value in overrides.items():
        *sections, key = dotted.split(".")
        node = raw
        for part in sections:
            node = node.setdefault(part, {})
        node[key] = value


def _read_secret(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read().rstrip("\r\n")


def load_config(
    path: str | os.PathLike | None, overrides: Mapping[str, Any] | None = None
) -> tuple[GatewayConfig | None, list[str]]:
    """Read and check a gateway configuration; return ``(config, [])`` or
    ``(None, errors)`` with every problem found, each naming the key, what it must be
    and what it was.

    ``path`` ``None`` uses the defaults. ``overrides`` maps dotted keys
    (``"mqtt.host"``, ``"gateway.id"``, ``"checkpoints.directory"``) to values that
    replace the file's before checking.

    >>> config, errors = load_config(None, {"mqtt.port": 70000, "gateway.idd": "x"})
    >>> config is None, errors
    (True, ['[gateway] unknown key idd (known: id, max_streams, inbound_queue_length, status_interval_seconds, reject_log_interval_seconds)', '[mqtt] port must be an int in [1, 65535], got 70000'])
    """
    where = "" if path is None else os.fspath(path)
    raw: dict[str, Any] = {}
    if path is not None:
        try:
            with open(path, "rb") as f:
                raw = tomllib.load(f)
        except OSError as exc:
            return None, [f"{where}: cannot read the configuration: {exc.strerror or exc}"]
        except tomllib.TOMLDecodeError as exc:
            return None, [f"{where}: not valid TOML: {exc}"]
    _apply_overrides(raw, overrides or {})
    errors: list[str] = []
    values: dict[str, dict[str, Any]] = {}

    known_sections = set(_SCHEMA) | _FREE_TABLES
    for name, value in raw.items():
        if name not in known_sections:
            errors.append(f"unknown section [{name}] (known: {', '.join(_SCHEMA)})")
        elif not isinstance(value, dict):
            errors.append(f"[{name}] must be a table, got {type(value).__name__}")
    for section, keys in _SCHEMA.items():
        table = _table(raw, section)
        if table is None:
            table = {}
        if not isinstance(table, dict):
            if "." in section:
                errors.append(f"[{section}] must be a table, got {type(table).__name__}")
            table = {}
        nested = {s.split(".", 1)[1] for s in known_sections if s.startswith(section + ".")}
        for key in table:
            if key not in keys and key.split(".")[0] not in nested:
                errors.append(f"[{section}] unknown key {key} (known: {', '.join(keys)})")
        checked = values[section] = {}
        for key, spec in keys.items():
            if key not in table:
                checked[key] = spec.default
                continue
            value = table[key]
            if spec.check(value):
                checked[key] = value
            else:
                errors.append(f"[{section}] {key} must be {spec.describe()}, got {value!r}")
                checked[key] = None
    learner_params = _table(raw, "learner.params")
    if learner_params is None:
        learner_params = {}
    elif not isinstance(learner_params, dict):
        errors.append(f"[learner.params] must be a table, got {type(learner_params).__name__}")
        learner_params = {}

    config = _build(values, learner_params, where, errors)
    if errors:
        prefix = f"{where}: " if where else ""
        return None, [prefix + e for e in errors]
    return config, []


def _ok(*values: Any) -> bool:
    return all(v is not None for v in values)


def _build(
    v: dict[str, dict[str, Any]], learner_params: dict, where: str, errors: list[str]
) -> GatewayConfig | None:
    """Cross-checks between keys, and the objects the service uses."""
    gw, top, lim, lab, rec, mq, tls, ck, lr = (
        v[s]
        for s in (
            "gateway", "topics", "limits", "labels", "recorder", "mqtt", "mqtt.tls",
            "checkpoints", "learner",
        )
    )
    topics = limits = None
    if _ok(*top.values()):
        try:
            topics = Topics(**{f"{kind}_template": t for kind, t in top.items()})
        except ValueError as exc:
            errors.append(f"[topics] {exc}")
    if _ok(*lim.values()):
        try:
            limits = Limits(**lim)
        except (ValueError, TypeError) as exc:
            errors.append(f"[limits] {exc}")
    gateway_id = gw["id"]
    if gateway_id is not None:
        try:
            PendingLabels(1, 1.0, id_prefix=gateway_id)
        except ValueError:
            errors.append(
                f"[gateway] id must be 1 to 24 of A-Z a-z 0-9 _ . : -, got {gateway_id!r}"
            )
            gateway_id = None
    if gateway_id is not None and topics is not None:
        if gateway_id in topics.reserved_gateways:
            errors.append(
                f"[gateway] id must not be one of the ids the topic layout reserves "
                f"({', '.join(sorted(topics.reserved_gateways))}), got {gateway_id!r}"
            )
    # Recorder.
    if rec["enabled"]:
        if rec["directory"] == "":
            errors.append("[recorder] directory must be set when enabled = true, got ''")
    if rec["prefix"] is not None and not _RECORDER_PREFIX.fullmatch(rec["prefix"]):
        errors.append(
            "[recorder] prefix must be letters, digits, '_', '.' and single '-' between "
            f"them, got {rec['prefix']!r}"
        )
    # MQTT.
    low, high = mq["reconnect_min_delay_seconds"], mq["reconnect_max_delay_seconds"]
    if _ok(low, high) and low > high:
        errors.append(
            f"[mqtt] reconnect_max_delay_seconds must be >= reconnect_min_delay_seconds "
            f"({low}), got {high}"
        )
    queued, inflight = mq["max_queued_messages"], mq["max_inflight_messages"]
    if _ok(queued, inflight) and queued and queued < inflight + _OUTPUT_MARGIN:
        errors.append(
            f"[mqtt] max_queued_messages must be 0 or at least max_inflight_messages + "
            f"{_OUTPUT_MARGIN} ({inflight + _OUTPUT_MARGIN}), got {queued}"
        )
    if mq["host"] == "":
        errors.append("[mqtt] host must not be empty, got ''")
    password = None
    if mq["password_file"]:
        if not mq["username"]:
            errors.append(
                f"[mqtt] password_file needs a username, got password_file = "
                f"{mq['password_file']!r} and username = ''"
            )
        try:
            password = _read_secret(mq["password_file"])
        except (OSError, UnicodeDecodeError) as exc:
            errors.append(
                f"[mqtt] password_file must be a readable UTF-8 file, got "
                f"{mq['password_file']!r} ({getattr(exc, 'strerror', None) or exc})"
            )
    if tls["enabled"]:
        for key in ("ca_file", "cert_file", "key_file"):
            name = tls[key]
            if name and not os.access(name, os.R_OK):
                errors.append(f"[mqtt.tls] {key} must be a readable file, got {name!r}")
        if tls["key_file"] and not tls["cert_file"]:
            errors.append(
                f"[mqtt.tls] key_file needs cert_file, got key_file = {tls['key_file']!r} "
                "and cert_file = ''"
            )
    elif any(tls[k] for k in ("ca_file", "cert_file", "key_file")):
        errors.append(
            "[mqtt.tls] enabled must be true when ca_file, cert_file or key_file is set, "
            "got false"
        )
    client_id = mq["client_id"]
    if client_id == "" and gateway_id is not None:
        client_id = f"edgelearn-{gateway_id}"
    if client_id is not None and len(client_id.encode("utf-8")) > 65_535:
        errors.append("[mqtt] client_id must be at most 65535 bytes of UTF-8")
    # Learner (built once through the pipeline, which checks it against the limits).
    pipeline_ok = _ok(lr["kind"], gw["max_streams"], lab["capacity"], lab["ttl_seconds"])
    if pipeline_ok and topics is not None and limits is not None and gateway_id is not None:
        try:
            Pipeline(
                lr["kind"],
                learner_params,
                topics=topics,
                limits=limits,
                max_streams=gw["max_streams"],
                pending_capacity=lab["capacity"],
                label_ttl_s=lab["ttl_seconds"],
                gateway_id=gateway_id,
                recent_capacity=lab["recent_capacity"],
            )
        except (ValueError, TypeError) as exc:
            section = "limits" if "limits" in str(exc) else "learner.params"
            errors.append(f"[{section}] {exc}")
    if errors:
        return None
    settings = MqttSettings(
        host=mq["host"],
        port=mq["port"],
        protocol=mq["protocol"],
        client_id=client_id,
        keepalive_seconds=mq["keepalive_seconds"],
        clean_start=mq["clean_start"],
        session_expiry_seconds=mq["session_expiry_seconds"],
        reconnect_min_delay_seconds=mq["reconnect_min_delay_seconds"],
        reconnect_max_delay_seconds=mq["reconnect_max_delay_seconds"],
        username=mq["username"],
        password=password,
        subscribe_qos=mq["subscribe_qos"],
        max_queued_messages=mq["max_queued_messages"],
        max_inflight_messages=mq["max_inflight_messages"],
        tls_enabled=tls["enabled"],
        ca_file=tls["ca_file"],
        cert_file=tls["cert_file"],
        key_file=tls["key_file"],
    )
    return GatewayConfig(
        gateway_id=gateway_id,
        max_streams=gw["max_streams"],
        inbound_queue_length=gw["inbound_queue_length"],
        status_interval_s=float(gw["status_interval_seconds"]),
        reject_log_interval_s=float(gw["reject_log_interval_seconds"]),
        topics=topics,
        limits=limits,
        label_capacity=lab["capacity"],
        label_ttl_s=float(lab["ttl_seconds"]),
        label_recent_capacity=lab["recent_capacity"],
        recorder_enabled=rec["enabled"],
        recorder_directory=rec["directory"],
        recorder_prefix=rec["prefix"],
        recorder_max_bytes=rec["max_bytes"],
        recorder_max_files=rec["max_files"] or None,
        mqtt=settings,
        prediction_qos=mq["prediction_qos"],
        label_request_qos=mq["label_request_qos"],
        checkpoint_dir=ck["directory"],
        checkpoint_interval_s=float(ck["interval_seconds"]),
        learner_kind=lr["kind"],
        learner_params=dict(learner_params),
        source=where,
    )


# --- sd_notify ----------------------------------------------------------------------


class SystemdNotifier:
    """``sd_notify`` over the standard library: datagrams to ``$NOTIFY_SOCKET``.

    Does nothing when the variable is unset (not started by systemd with
    ``Type=notify``). ``watchdog_interval_s`` is ``$WATCHDOG_USEC`` in seconds when the
    watchdog is on for this process, else ``None``; pet it at least twice as often.
    """

    def __init__(self, environ: Mapping[str, str] | None = None):
        env = os.environ if environ is None else environ
        address = env.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):
            address = "\0" + address[1:]  # abstract namespace socket
        self.address = address or None
        self.watchdog_interval_s: float | None = None
        usec, pid = env.get("WATCHDOG_USEC", ""), env.get("WATCHDOG_PID", "")
        if usec.isdigit() and int(usec) > 0 and (not pid or pid == str(os.getpid())):
            self.watchdog_interval_s = int(usec) / 1e6
        self._socket: socket.socket | None = None
        self._failed = False

    def notify(self, state: str) -> bool:
        """Send ``state`` (e.g. ``"READY=1"``); return whether it was sent."""
        if self.address is None:
            return False
        try:
            if self._socket is None:
                self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                # The worker sends these: a reader that is not reading must not stop
                # it (a full socket drops the datagram instead).
                self._socket.setblocking(False)
            self._socket.sendto(state.encode("utf-8"), self.address)
        except OSError as exc:
            if not self._failed:  # once: a broken socket would log every tick
                logger.warning("sd_notify to %r failed: %s", self.address, exc)
                self._failed = True
            return False
        return True

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


# --- the service ----------------------------------------------------------------------


def checkpoint_path(directory: str, stream: str) -> str:
    """The checkpoint file of ``stream``: its id percent-quoted, so that no stream id
    can name a path outside ``directory``.

    >>> checkpoint_path("/state", "kitchen.1")
    '/state/stream-kitchen.1.ckpt'
    >>> checkpoint_path("/state", "..")
    '/state/stream-...ckpt'
    """
    name = urllib.parse.quote(stream, safe="")
    return os.path.join(directory, f"{_CHECKPOINT_PREFIX}{name}{_CHECKPOINT_SUFFIX}")


def _stream_of_checkpoint(filename: str) -> str | None:
    if filename.endswith(_CHECKPOINT_SUFFIX + ".1"):
        filename = filename[:-2]
    if not (filename.startswith(_CHECKPOINT_PREFIX) and filename.endswith(_CHECKPOINT_SUFFIX)):
        return None
    quoted = filename[len(_CHECKPOINT_PREFIX) : -len(_CHECKPOINT_SUFFIX)]
    return urllib.parse.unquote(quoted) or None


class Gateway:
    """The running service: a pipeline fed by MQTT, with checkpoints and status.

    ``start()`` returns once the threads run; ``request_stop()`` (any thread, or a
    signal handler) asks for a stop; ``shutdown()`` performs it (main thread);
    ``run()`` does all three and returns the exit status.
    """

    def __init__(
        self,
        config: GatewayConfig,
        *,
        notifier: SystemdNotifier | None = None,
        clock=time.monotonic,
    ):
        self.config = config
        self.notifier = SystemdNotifier() if notifier is None else notifier
        self._clock = clock
        self.started_at = time.time()
        self.status_topic = config.topics.status(config.gateway_id)
        self.pipeline = config.make_pipeline(clock)
        self._log = RateLimitedLog(logger, config.reject_log_interval_s, clock)
        self.counters = {
            "worker_errors": 0,
            "recorder_errors": 0,
            "checkpoints_written": 0,
            "checkpoint_errors": 0,
            "status_published": 0,
        }
        self._saved_revision: dict[str, int] = {}
        # (message, paho info of its last output) of processed, unacknowledged messages.
        self._unacked: collections.deque[tuple[InboundMessage, Any]] = collections.deque()
        self.checkpoint_report: dict[str, Any] = {
            "directory": config.checkpoint_dir,
            "restored": [],
            "fell_back": {},
            "failed": {},
        }
        if config.checkpoint_dir:
            os.makedirs(config.checkpoint_dir, exist_ok=True)
            self._restore_checkpoints()
        self.recorder = (
            LogWriter(
                config.recorder_directory,
                config.recorder_prefix,
                config.recorder_max_bytes,
                config.recorder_max_files,
            )
            if config.recorder_enabled
            else None
        )
        self.bridge = MqttBridge(
            config.mqtt,
            config.topics.inbound_filters(),
            self.status_topic,
            encode_status({"state": "offline", "gateway": config.gateway_id}),
            config.limits.max_payload_bytes,
            config.inbound_queue_length,
            on_connection_change=self._mark_status_changed,
            clock=clock,
        )
        self._stop = threading.Event()
        self._status_changed = True
        self._worker = threading.Thread(target=self._work, name="edgelearn-worker", daemon=True)
        self._failed = False
        self._shut_down = False
        now = clock()
        self._next_housekeeping = now
        self._next_status = now
        self._last_status = -math.inf
        self._last_signature: tuple = ()
        self._next_checkpoint = now + config.checkpoint_interval_s
        self._next_watchdog = now
        self._next_flush = now + config.status_interval_s

    # -- checkpoints ---------------------------------------------------------------

    def _restore_checkpoints(self) -> None:
        directory = self.config.checkpoint_dir
        streams = sorted(
            {s for s in map(_stream_of_checkpoint, os.listdir(directory)) if s is not None}
        )
        report = self.checkpoint_report
        for stream in streams[: self.config.max_streams]:
            path = checkpoint_path(directory, stream)
            problems: list[str] = []
            restored_from = None
            for candidate in (path, path + ".1"):
                try:
                    state, load_report = load_checkpoint(candidate)
                except CheckpointError as exc:
                    problems.extend(p for p in exc.problems if not p.endswith(": missing"))
                    break  # load_checkpoint already tried the older generation
                problems.extend(load_report.problems)
                try:
                    self.pipeline.restore(stream, state)
                except (StateMismatch, ValueError) as exc:
                    problems.append(f"{load_report.path_used}: {exc}")
                    if load_report.path_used != path:
                        break  # the older generation did not fit either
                    continue
                restored_from = load_report.path_used
                break
            if restored_from is None:
                report["failed"][stream] = "; ".join(problems) or "no usable checkpoint"
                logger.error("stream %r starts with a fresh model: %s", stream,
                             report["failed"][stream])
                continue
            report["restored"].append(stream)
            self._saved_revision[stream] = self.pipeline.revision(stream)
            if restored_from != path:
                report["fell_back"][stream] = "; ".join(problems)
                logger.warning("stream %r restored from the older checkpoint %s: %s",
                               stream, restored_from, report["fell_back"][stream])
        if report["restored"]:
            logger.info("restored %d stream(s) from %s", len(report["restored"]), directory)

    def checkpoint(self) -> int:
        """Write the checkpoint of every stream that changed since its last one; return
        how many were written. Worker thread, or main thread after the worker stopped.
        """
        if not self.config.checkpoint_dir:
            return 0
        written = 0
        for stream in self.pipeline.streams:
            revision = self.pipeline.revision(stream)
            if self._saved_revision.get(stream) == revision:
                continue
            try:
                save_checkpoint(
                    checkpoint_path(self.config.checkpoint_dir, stream),
                    self.pipeline.to_state(stream),
                )
            except (OSError, TypeError, ValueError) as exc:
                self.counters["checkpoint_errors"] += 1
                self._log.warning("checkpoint_error", "stream %r: %s", stream, exc)
                continue
            self._saved_revision[stream] = revision
            written += 1
        self.counters["checkpoints_written"] += written
        return written

    # -- status ----------------------------------------------------------------------

    def _mark_status_changed(self) -> None:
        self._status_changed = True

    def memory(self) -> dict[str, int]:
        """The fixed memory budget: the pipeline's, the inbound queue's and paho's
        outgoing queue's, in bytes."""
        memory = self.pipeline.memory()
        config = self.config
        memory["inbound_queue"] = config.inbound_queue_length * (
            config.limits.max_payload_bytes + 1 + _QUEUED_MESSAGE_OVERHEAD
        )
        memory["outgoing_queue"] = config.mqtt.max_queued_messages * _OUTGOING_MESSAGE_BYTES
        memory["total"] += memory["inbound_queue"] + memory["outgoing_queue"]
        return memory

    def status(self, state: str = "online") -> dict[str, Any]:
        """The status message: state, versions, counters, streams, memory, checkpoints."""
        pipeline_status = self.pipeline.status()
        counters = pipeline_status["counters"]
        counters.update(self.bridge.counters())
        counters.update(self.counters)
        if self.recorder is not None:
            counters["recorded"] = self.recorder.records_written
        return {
            "state": state,
            "gateway": self.config.gateway_id,
            "pid": os.getpid(),
            "time": time.time(),
            "uptime_s": time.time() - self.started_at,
            "connected": self.bridge.connected,
            "version": {
                "edgelearn": edgelearn.__version__,
                "paho_mqtt": paho.mqtt.__version__,
                "python": platform.python_version(),
            },
            "learner": pipeline_status["learner"],
            "queue": {"length": len(self.bridge.inbound), "capacity": self.bridge.queue_capacity},
            "counters": counters,
            "streams": pipeline_status["streams"],
            "memory": self.memory(),
            "checkpoints": self.checkpoint_report,
        }

    def publish_status(self, state: str = "online") -> Any:
        info = self.bridge.publish(self.status_topic, encode_status(self.status(state)), 1, True)
        self.counters["status_published"] += 1
        return info

    # -- the worker ------------------------------------------------------------------

    def _process(self, item: InboundMessage) -> None:
        if self.recorder is not None:
            try:
                self.recorder.write(item.topic, item.payload, item.received_at)
            except (OSError, TypeError) as exc:
                self.counters["recorder_errors"] += 1
                self._log.warning("recorder_error", "%s", exc)
        try:
            outputs = self.pipeline.handle(item.topic, item.payload, item.received_at)
        except Exception as exc:  # a bug; acked below so it is not redelivered forever
            self.counters["worker_errors"] += 1
            self._log.warning("worker_error", "%s on topic %.80r: %r", type(exc).__name__,
                              item.topic, exc)
            outputs = ()
        publish = self.bridge.publish
        last = None
        for out in outputs:
            last = publish(out.topic, out.payload, out.qos, out.retain)
        if item.qos:
            # Acknowledged once its outputs are with the broker (see _release_acks).
            self._unacked.append((item, last))

    def _process_queued(self) -> None:
        """Process received messages while the outbound window has room: a busy broker
        slows the worker down (and, through the acks, the senders) instead of
        predictions being dropped."""
        inbound = self.bridge.inbound
        room = self.bridge.outgoing_room
        process = self._process
        while inbound and room() > 0:
            process(inbound.popleft())

    def _release_acks(self) -> None:
        """Acknowledge processed messages whose outputs the broker has taken.

        Acknowledging as soon as the outputs are queued would lose them if the process
        died before they were sent: the broker would not redeliver an acknowledged
        message. Outputs of one message go out in order, so its last one stands for
        all; acks go in the order messages came, as MQTT requires.
        """
        unacked = self._unacked
        ack = self.bridge.ack
        while unacked:
            item, info = unacked[0]
            if info is not None and not _taken_by_broker(info):
                return
            unacked.popleft()
            ack(item)

    def _turn(self, timeout: float) -> None:
        """One round of the worker: network, messages, acks."""
        bridge = self.bridge
        bridge.poll(timeout)
        self._process_queued()
        self._release_acks()
        bridge.flush()

    def _housekeeping(self, now: float) -> None:
        self._next_housekeeping = now + TICK_SECONDS
        notifier = self.notifier
        if notifier.watchdog_interval_s is not None and now >= self._next_watchdog:
            notifier.notify("WATCHDOG=1")
            self._next_watchdog = now + notifier.watchdog_interval_s / 3
        counters = self.pipeline.counters()
        signature = (len(self.pipeline.streams), counters["rejected"], self.bridge.connected)
        changed = self._status_changed or signature != self._last_signature
        if now >= self._next_status or (changed and now - self._last_status >= _STATUS_MIN_INTERVAL_S):
            self._last_signature = signature
            self._last_status = now
            self._next_status = now + self.config.status_interval_s
            self.pipeline.expire_labels()
            # While the outbound link is down a status would only queue up in paho (and go
            # out stale at the reconnect, ahead of predictions); the reconnect marks the
            # status changed, so a fresh one goes out then.
            if self.bridge.can_publish:
                self._status_changed = False
                self.publish_status("online")
        if now >= self._next_checkpoint:
            self._next_checkpoint = now + self.config.checkpoint_interval_s
            self.checkpoint()
        if self.recorder is not None and now >= self._next_flush:
            self._next_flush = now + self.config.status_interval_s
            try:
                self.recorder.flush()
            except OSError as exc:
                self.counters["recorder_errors"] += 1
                self._log.warning("recorder_error", "%s", exc)

    def _idle_timeout(self) -> float:
        if self.bridge.inbound and self.bridge.outgoing_room() > 0:
            return 0.0
        return min(TICK_SECONDS, max(0.0, self._next_housekeeping - self._clock()))

    def _work(self) -> None:
        try:
            clock = self._clock
            while not self._stop.is_set():
                self._turn(self._idle_timeout())
                now = clock()
                if now >= self._next_housekeeping:
                    self._housekeeping(now)
            # Told here, after the last watchdog pet: no more of those, nor "online".
            self.notifier.notify("STOPPING=1")
            self._finish()
        except BaseException:
            self._failed = True
            logger.critical("the worker thread failed; stopping the gateway", exc_info=True)
            self._stop.set()
            try:  # keep what was learned since the last checkpoint, if the state allows
                self.checkpoint()
            except BaseException:  # noqa: BLE001 -- already failing; say so and stop
                logger.critical("the checkpoint after the failure failed too", exc_info=True)

    def _finish(self) -> None:
        """The worker's part of a stop: stop reading, finish what was received (for at
        most :data:`_STOP_DRAIN_S`), checkpoint, publish "stopped", disconnect."""
        bridge = self.bridge
        logger.info("stopping: finishing %d queued message(s)", len(bridge.inbound))
        bridge.pause_intake()
        deadline = self._clock() + _STOP_DRAIN_S
        while (bridge.inbound or self._unacked) and self._clock() < deadline:
            self._turn(0.01)
        left = len(bridge.inbound) + len(self._unacked)
        if left:
            logger.warning("%d message(s) left unacknowledged; the broker delivers them "
                           "again at the next start", left)
        self.checkpoint()
        info = self.publish_status("stopped")
        deadline = self._clock() + _FINAL_PUBLISH_TIMEOUT_S
        while (info is not None and bridge.connected and not _taken_by_broker(info)
               and self._clock() < deadline):
            bridge.poll(0.01)
        bridge.disconnect()

    # -- life cycle ------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker (it connects in the background); then tell systemd READY."""
        self.bridge.start()
        self._worker.start()
        self.notifier.notify("READY=1")
        logger.info(
            "gateway %s serving up to %d streams with %s; broker %s:%d",
            self.config.gateway_id,
            self.config.max_streams,
            self.config.learner_kind,
            self.config.mqtt.host,
            self.config.mqtt.port,
        )

    def request_stop(self) -> None:
        """Ask the gateway to stop (safe from signal handlers and other threads)."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until a stop is requested (or ``timeout``); return whether it was."""
        return self._stop.wait(timeout)

    def shutdown(self) -> int:
        """Stop intake, finish, checkpoint, publish "stopped", disconnect (all done by
        the worker; this waits for it); return the exit status (0, or 1 if the worker
        had failed or did not finish). Idempotent."""
        if self._shut_down:
            return 1 if self._failed else 0
        self._shut_down = True
        self._stop.set()
        if self._worker.is_alive():
            self._worker.join(_STOP_JOIN_S)
            if self._worker.is_alive():
                logger.error("the worker did not finish within %.0f s", _STOP_JOIN_S)
                self._failed = True
        if self.recorder is not None:
            try:
                self.recorder.close()
            except OSError as exc:
                logger.error("closing the recorder failed: %s", exc)
        self.notifier.close()
        logger.info("stopped")
        return 1 if self._failed else 0

    def run(self) -> int:
        """Start, wait for a stop request, shut down; return the exit status."""
        self.start()
        try:
            # A timeout keeps the main thread responsive to signals.
            while not self._stop.wait(1.0):
                pass
        finally:
            status = self.shutdown()
        return status


def _taken_by_broker(info: Any) -> bool:
    """Whether paho's message info says the broker has the message (QoS 0: written)."""
    try:
        return info.is_published()
    except (ValueError, RuntimeError):
        return True  # never queued (counted as dropped): nothing to wait for


# --- command line ---------------------------------------------------------------------


def add_gateway_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``edgelearn gateway`` options to ``parser``; returns it."""
    parser.add_argument("--config", required=True, metavar="FILE",
                        help="gateway configuration (TOML; see configs/gateway.toml)")
    parser.add_argument("--broker", metavar="HOST:PORT",
                        help="MQTT broker, overriding [mqtt] host and port")
    parser.add_argument("--state-dir", metavar="DIR",
                        help="checkpoint directory, overriding [checkpoints] directory")
    parser.add_argument("--gateway-id", metavar="ID",
                        help="gateway id, overriding [gateway] id")
    parser.add_argument("--check-config", action="store_true",
                        help="check the configuration, print any errors and exit "
                             "(status 0 if valid, 2 if not)")
    parser.add_argument("--log-level", default="INFO",
                        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
                        help="log level (default: INFO)")
    return parser


def _overrides_from_args(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    overrides: dict[str, Any] = {}
    errors: list[str] = []
    broker = getattr(args, "broker", None)
    if broker is not None:
        try:
            overrides["mqtt.host"], overrides["mqtt.port"] = parse_broker(broker)
        except ValueError as exc:
            errors.append(f"--broker {exc}")
    if getattr(args, "state_dir", None) is not None:
        overrides["checkpoints.directory"] = args.state_dir
    if getattr(args, "gateway_id", None) is not None:
        overrides["gateway.id"] = args.gateway_id
    return overrides, errors


def run_gateway(args: argparse.Namespace) -> int:
    """Run ``edgelearn gateway`` with parsed arguments; return the exit status
    (0 after a clean stop, 1 after a failure, 2 for a bad configuration)."""
    overrides, errors = _overrides_from_args(args)
    config, config_errors = load_config(args.config, overrides)
    errors += config_errors
    if errors:
        for error in errors:
            print(f"edgelearn gateway: error: {error}", file=sys.stderr)
        return 2
    if getattr(args, "check_config", False):
        print(f"{args.config}: ok")
        return 0
    if not logging.getLogger().handlers:
        logging.basicConfig(
            level=getattr(args, "log_level", "INFO"),
            format="%(levelname)s %(name)s: %(message)s",
        )
    try:
        gateway = Gateway(config)
    except OSError as exc:
        print(f"edgelearn gateway: error: {exc}", file=sys.stderr)
        return 2
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: gateway.request_stop())
    # Everything allocated so far (numba, NumPy, the learners) lives as long as the
    # process: keep it out of the collector's full passes, which would otherwise walk
    # it every time and show up as latency spikes of tens of milliseconds.
    gc.collect()
    gc.freeze()
    return gateway.run()


def _seconds_argument(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"must be a number of seconds in (0, 3600]. Got {text!r}.")
    return value


def add_status_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``edgelearn status`` options to ``parser``; returns it."""
    parser.add_argument("--config", metavar="FILE",
                        help="the gateway's configuration: its broker, TLS, credentials, "
                             "topics and id (default: the defaults of configs/gateway.toml)")
    parser.add_argument("--broker", metavar="HOST:PORT",
                        help="MQTT broker, overriding [mqtt] host and port")
    parser.add_argument("--gateway-id", metavar="ID",
                        help="gateway id, overriding [gateway] id")
    parser.add_argument("--username", metavar="USER",
                        help="MQTT user allowed to read the status topic, overriding "
                             "[mqtt] username (with the example ACL: dashboard)")
    parser.add_argument("--password-file", metavar="FILE",
                        help="file holding that user's password, overriding "
                             "[mqtt] password_file")
    parser.add_argument("--timeout", type=_seconds_argument, default=5.0, metavar="SECONDS",
                        help="how long to wait for the status (default: 5)")
    parser.add_argument("--json", action="store_true", help="print the whole status as JSON")
    return parser


def _print_status(status: dict[str, Any]) -> None:
    counters = status.get("counters", {})
    memory = status.get("memory", {})
    print(f"gateway {status.get('gateway')}: {status.get('state')}, "
          f"{'connected' if status.get('connected') else 'not connected'}, "
          f"up {status.get('uptime_s', 0):,.0f} s, pid {status.get('pid')}")
    print(f"messages {counters.get('messages', 0):,}  predictions "
          f"{counters.get('predictions', 0):,}  label requests "
          f"{counters.get('label_requests', 0):,}  learned {counters.get('learned', 0):,}  "
          f"rejected {counters.get('rejected', 0):,}  memory budget "
          f"{memory.get('total', 0):,} B")
    rejects = {k: v for k, v in counters.items() if v and k not in (
        "messages", "data", "label_messages", "predictions", "asked", "label_requests",
        "learned", "rejected", "connects", "out_connects", "status_published",
        "checkpoints_written", "label_issued", "label_answered", "label_pending",
        "outgoing_pending")}
    if rejects:
        print("also: " + ", ".join(f"{k} {v:,}" for k, v in sorted(rejects.items())))
    for name, stream in status.get("streams", {}).items():
        print(f"  {name}: {stream.get('data', 0):,} messages, asked {stream.get('query_rate', 0):.1%}, "
              f"learned {stream.get('learned', 0):,}, channels {stream.get('channels', 0)}")


def run_status(args: argparse.Namespace) -> int:
    """``edgelearn status``: print the gateway's retained status message; 0 if one was
    read, 1 if none came (no gateway has run on this broker with this id), 2 for a bad
    configuration or an unreachable broker."""
    overrides, errors = _overrides_from_args(args)
    if getattr(args, "username", None) is not None:
        overrides["mqtt.username"] = args.username
    if getattr(args, "password_file", None) is not None:
        overrides["mqtt.password_file"] = args.password_file
    # Checkpoints are the gateway's business, not this reader's.
    overrides.setdefault("checkpoints.directory", "")
    config, config_errors = load_config(getattr(args, "config", None), overrides)
    errors += config_errors
    if errors:
        for error in errors:
            print(f"edgelearn status: error: {error}", file=sys.stderr)
        return 2
    topic = config.topics.status(config.gateway_id)
    try:
        payload = read_retained(config.mqtt, topic, args.timeout)
    except ConnectionError as exc:
        print(f"edgelearn status: error: {exc}", file=sys.stderr)
        return 2
    if payload is None:
        print(f"edgelearn status: no status on {topic} within {args.timeout:g} s "
              f"(is gateway {config.gateway_id!r} running against "
              f"{config.mqtt.host}:{config.mqtt.port}?)", file=sys.stderr)
        return 1
    try:  # our own status, whatever its size: the wire limits are for sensors
        status = msgpack.unpackb(payload, raw=False)
    except Exception:  # noqa: BLE001 -- anything not msgpack is "no status map"
        status = None
    if not isinstance(status, dict):
        print(f"edgelearn status: error: {topic} holds no status map", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(status, indent=1, sort_keys=True))
    else:
        _print_status(status)
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m firmware_bridge.gateway``: the service without the ``edgelearn`` CLI."""
    parser = argparse.ArgumentParser(
        prog="python -m firmware_bridge.gateway",
        description="edgelearn gateway: learn from MQTT sensor streams, predict, ask for labels.",
    )
    return run_gateway(add_gateway_arguments(parser).parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
