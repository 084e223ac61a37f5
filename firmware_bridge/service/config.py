"""The gateway's configuration: one declarative schema, and everything made from it.

:data:`SCHEMA` holds every key of ``configs/gateway.toml``: its constraint (an
:mod:`edgelearn.constraints` object), its default and its documentation. From it come

* :func:`load_config`, which checks a file and reports every problem at once (each in
  the one format, ``The 'port' parameter of [mqtt] must be an int in [1, 65535].
  Got 70000.``), then the cross-checks between keys;
* the settings objects the service runs with: :class:`~firmware_bridge.service.mqtt.MqttSettings`
  and the :class:`~firmware_bridge.pipeline.Pipeline`'s parameters
  (:meth:`GatewayConfig.make_pipeline`);
* :func:`~firmware_bridge.service.config_docs.render_default_config`, the documented
  ``configs/gateway.toml`` (``edgelearn config --print-default``; a test holds the
  shipped file to it).

A key that sets a parameter of one of those objects (``feeds``) takes its default from
that object, so the two cannot disagree.
"""

from __future__ import annotations

import os
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from edgelearn.learners import DEFAULT_KIND, TASKS
from edgelearn.learners.registry import LearnerKind, default_kind
from edgelearn.learners.registry import load as load_kind
from edgelearn.constraints import (
    Boolean,
    Interval,
    OneOf,
    Options,
    Text,
    check,
    format_value,
)

from ..pipeline.pending import PendingLabels
from .mqtt import PROTOCOLS, MqttSettings
from ..pipeline import Pipeline
from ..wire import JsonFields, Limits, Topics
from ..wire.logfile import LOG_PREFIX_PATTERN as _RECORDER_PREFIX
from . import sinks
from .recorder import LogWriter
from .settings import (
    ID_TEXT,
    PATH_TEXT,
    BrokerList,
    FieldList,
    Section,
    Setting,
    feed,
)

__all__ = [
    "SCHEMA",
    "Setting",
    "Section",
    "GatewayConfig",
    "load_config",
    "OUTPUT_MARGIN",
]

# The worker fills the in-flight window and may then publish one message's outputs
# (prediction and label request) and a status: paho's queue needs that much more.
OUTPUT_MARGIN = 3

def _limits() -> dict[str, Setting]:
    docs = {
        "max_payload_bytes": "whole MQTT payload",
        "max_channels": "entries in a data message's \"ch\" map",
        "max_channel_name_bytes": "UTF-8 bytes of one channel name",
        "max_string_bytes": "any msgpack str, bin or ext while decoding",
        "max_container_len": "any msgpack array or map while decoding (>= max_channels)",
        "max_depth": "container nesting (a data message uses 2, a batch 4)",
        "max_stream_id_bytes": "UTF-8 bytes of the {stream} topic level",
        "max_label_bytes": "UTF-8 bytes of a str label or a multi-label name",
        "max_request_id_bytes": "UTF-8 bytes of a label answer's \"req\"",
        "max_batch_readings": "readings in one batch message (docs/protocol.md, Batched readings)",
    }
    low = {"max_depth": 2}
    return {
        name: feed(Limits, name, Interval(int, low.get(name, 1), 1 << 24), docs[name])
        for name in Limits.__dataclass_fields__
    }


def _topics() -> dict[str, Setting]:
    docs = {
        "data": "in:  readings from sensors",
        "prediction": "out: one per reading",
        "label_request": "out: when a label is worth asking for",
        "label": "in:  answers to label requests",
        "status": "out: retained status, last will \"offline\"",
    }
    return {kind: feed(Topics, f"{kind}_template", Text(1), doc) for kind, doc in docs.items()}


_SERVICE: dict[str, Section] = {
    "gateway": Section("", {
        "id": feed(Pipeline, "gateway_id", ID_TEXT, """
            Name of this gateway: the {gateway} in the status topic and the prefix of
            label request ids. 1 to 24 of A-Z a-z 0-9 _ . : -; not one of the ids the
            topic layout reserves (with the default layout: prediction, label_request,
            label). Several instances on one host each have their own (see
            edgelearn-gateway@.service)."""),
        "max_streams": feed(Pipeline, "max_streams", Interval(int, 1, 100_000), """
            Most streams served (1 to 100000); data for a further stream is counted
            ("too_many_streams") and dropped. Each stream holds one learner (see
            [learner])."""),
        "stream_pattern": feed(Pipeline, "stream_pattern", Text(0, 1000), """
            Allow-list of stream names: a regular expression (Python's re) a new
            stream's name must match as a whole, e.g. "office-[0-9]+"; "" serves any
            name. Data for another stream is counted ("stream_not_allowed") and dropped
            before it can take a slot, and its checkpoint is not restored."""),
        "idle_stream_seconds": Setting(Interval(float, 0, 30 * 86_400), """
            Seconds a stream may go without a reading or a label before it gives up its
            slot (0 to 2592000; 0: never). Needs a checkpoint directory: the stream is
            checkpointed and taken out; its data (or an answer to its label request)
            brings it back from the checkpoint, nothing learned lost. Counted
            "streams_evicted" and "streams_returned".""", 3600.0),
        "reserved_stream_slots": Setting(Interval(int, 0, 100_000), """
            Slots a start leaves free for new streams (0 to 100000): it restores at most
            max_streams minus this many checkpoints (the label journal's streams
            first, then the most recently written); the others come back when their
            data comes.""", 4),
        "inbound_queue_length": Setting(Interval(int, 1, 1_000_000), """
            Inbound messages received and waiting for the worker (1 to 1000000). When the
            queue is full the gateway stops reading from the broker, so TCP pushes back
            and the broker keeps the backlog. (It also announces this length as its
            MQTT 5 Receive Maximum.)""", 1024),
        "status_interval_seconds": Setting(Interval(float, 1, 86_400), """
            Seconds between status messages (retained, on the status topic; 1 to 86400).
            A status also goes out, at most once a second, when streams, rejects or the
            connection change.""", 30.0),
        "reject_log_interval_seconds": feed(
            Pipeline, "log_interval_s", Interval(float, 0, 86_400), """
            Seconds between log lines per reject reason (0 to 86400; counters always
            count every reject)."""),
    }),
    "topics": Section("""
        Topic templates. Stream topics hold {stream} and the status topic {gateway},
        each exactly once and as a whole topic level; no '+' or '#'; not starting with
        '$'. Subscriptions use the same templates with '+' in place of {stream}. An
        instance serving a share of the streams subscribes to its own subtree, e.g.
        data = "sensors/a/{stream}/data" (see docs/fleet.md).""", _topics()),
    "json": Section("""
        JSON sensor objects on the data topic (Zigbee2MQTT, Tasmota, Shelly, your own
        firmware; see docs/integrations.md). A payload starting with '{' is JSON, any
        other msgpack; both under the same [limits]. Numeric fields are channels,
        nested objects flatten to dotted names (AM2301.Temperature), bools and strings
        are not channels unless listed below. "seq" and "ts" are optional: without
        them the gateway numbers each reading after the stream's last one and stamps
        it with the time it received it. An object with "ch" (or "readings") follows
        the msgpack schema instead.""", {
        "enabled": feed(JsonFields, "enabled", Boolean(),
                         'false: a JSON payload is rejected ("not_json")'),
        "label_field": feed(JsonFields, "label_field", Text(), """
            The field that is the label, kept as the sensor sends it (a bool, int or
            str), e.g. "occupancy" to learn a Zigbee2MQTT motion sensor's occupancy
            from its other readings. Empty: objects carry no label."""),
        "bool_channels": feed(JsonFields, "bool_channels", FieldList(), """
            Fields whose switch values (true/false, "ON"/"OFF") become channels 1/0,
            e.g. ["contact", "POWER"]."""),
        "ignore": feed(JsonFields, "ignore", FieldList(), """
            Numeric fields that are not channels, e.g. ["linkquality", "battery",
            "voltage"]."""),
    }),
    "limits": Section("""
        Hard bounds on every inbound message, applied before and while decoding; a
        message beyond them is rejected, counted by reason, and never stops the
        service.""", _limits()),
    "labels": Section("""
        Pending label requests (features kept from prediction time, waiting for an
        answer), and how answers arrive.""", {
        "capacity": feed(Pipeline, "pending_capacity", Interval(int, 1, 10_000_000),
                          "most pending at once; when full the oldest is evicted"),
        "ttl_seconds": feed(Pipeline, "label_ttl_s", Interval(float, 0.001, 365 * 86_400),
                             'an answer later than this is counted "expired" and dropped'),
        "recent_capacity": feed(
            Pipeline, "recent_capacity", OneOf(Options(None), Interval(int, 0, 10_000_000)), """
            Closed request ids remembered to tell duplicate or late answers from forged
            ones (omit for the default: the same as capacity).""",
            optional=True, example=1024),
        "own_session": Setting(Boolean(), """
            true: label answers come on their own MQTT session (client id
            <client_id>-answers), so a flood of answers fills that session's queue on
            the broker, never the data's, and the worker takes answers after the data
            waiting. false: one session for data and answers, as before (no rate limit
            then).""", True),
        "max_answers_per_second": Setting(Interval(float, 0, 1_000_000), """
            Most label answers a second per stream (bursts of one second's worth; 0: no
            limit); beyond it an answer that matches no pending request is dropped
            before the pipeline sees it, counted "label_rate_limited" (an answer to a
            pending request always goes on; only on the answers' own session).""",
                                          100.0),
    }),
    "recorder": Section("""
        Raw message log (see firmware_bridge/wire/logfile.py for the format), for
        replay.""", {
        "enabled": Setting(Boolean(), "true: record every inbound message, as it arrived",
                           False),
        "directory": Setting(PATH_TEXT, "created if missing; needed when enabled",
                             "/var/lib/edgelearn/log"),
        "prefix": feed(LogWriter, "prefix", Text(1), """
            file names: {prefix}-{counter}-{UTC time}.msgpack; letters, digits, '_', '.'
            and single '-' between them"""),
        "max_bytes": feed(LogWriter, "max_bytes", Interval(int, 1024, None),
                           "rotate before a file passes this size (64 MiB)"),
        "max_files": Setting(Interval(int, 0, None),
                             "delete the oldest beyond this many; 0 keeps all", 32),
    }),
    "mqtt": Section("", {
        "host": feed(MqttSettings, "host", Text(1), "broker host name or address"),
        "port": feed(MqttSettings, "port", Interval(int, 1, 65_535),
                      "1 to 65535; 8883 is usual with TLS"),
        "brokers": feed(MqttSettings, "brokers", BrokerList(), """
            Further brokers of the same cluster, as "HOST:PORT": after a failed connection
            attempt the gateway tries the next address in turn (host:port first). Empty:
            host:port only. The persistent session must live in the cluster, not in one
            node (NATS keeps it in JetStream; see docs/fleet.md)."""),
        "protocol": feed(MqttSettings, "protocol", Options(*PROTOCOLS),
                          '"MQTTv5" or "MQTTv311"'),
        "client_id": Setting(Text(0, 65_535), """
            Client id; empty: "edgelearn-" + [gateway] id. It must be stable across
            restarts, since the broker keeps the persistent session under it.""", ""),
        "keepalive_seconds": feed(MqttSettings, "keepalive_seconds", Interval(int, 5, 65_535),
                                   "5 to 65535"),
        "clean_start": feed(MqttSettings, "clean_start", Boolean(), """
            Persistent session: with clean_start = false the broker keeps the
            subscriptions and queues QoS 1 data while the gateway restarts, and data the
            gateway took but did not acknowledge (it acknowledges after processing) is
            delivered again. Setting it true loses that; it exists for throwaway test
            gateways."""),
        "session_expiry_seconds": feed(
            MqttSettings, "session_expiry_seconds", Interval(int, 0, 2**32 - 1), """
            How long the broker keeps the session of a gateway that is away (MQTTv5
            only; 0 to 4294967295 seconds). With MQTTv311 the broker decides (mosquitto:
            persistent_client_expiration)."""),
        "reconnect_min_delay_seconds": feed(
            MqttSettings, "reconnect_min_delay_seconds", Interval(int, 1, 3600), """
            Reconnect backoff: the wait doubles from min to max after every failed
            attempt (seconds; 1 to 3600 and up to 86400, min <= max). Every failed
            attempt is counted ("connect_failures", beside "connect_attempts")."""),
        "reconnect_max_delay_seconds": feed(
            MqttSettings, "reconnect_max_delay_seconds", Interval(int, 1, 86_400), """
            The longest wait between attempts: a broker (or link) that comes back is
            noticed within this many seconds, so data waits no longer than that. The
            trade-off: while the broker is away each gateway tries this often (a TCP
            connection attempt per link, nothing more); a fleet of thousands against
            one broker may want 30 to 60 to spread the reconnections out."""),
        "username": feed(MqttSettings, "username", Text(),
                          "empty: connect without credentials"),
        "password_file": Setting(PATH_TEXT, """
            A file holding the password (one line; a trailing newline is ignored); never
            the password here. Needs username.""", ""),
        "subscribe_qos": feed(MqttSettings, "subscribe_qos", Options(0, 1), """
            inbound data and label answers: 0 or 1; 1 for no loss (with 2, paho hands
            over messages past the bounded queue)"""),
        "prediction_qos": feed(Pipeline, "prediction_qos", Options(0, 1, 2), "0, 1 or 2"),
        "label_request_qos": feed(Pipeline, "label_request_qos", Options(1, 2),
                                   "1 or 2: a lost label request is a lost label"),
        "max_queued_messages": feed(
            MqttSettings, "max_queued_messages", Interval(int, 0, 10_000_000), f"""
            Outgoing messages held (queued while disconnected, or sent and not yet
            acknowledged); 0 for no cap, else at least max_inflight_messages +
            {OUTPUT_MARGIN}. A publish that finds it full is counted
            ("publish_dropped"). About 1 KiB each in memory."""),
        "max_inflight_messages": feed(
            MqttSettings, "max_inflight_messages", Interval(int, 1, 65_535), """
            Outgoing QoS>0 messages awaiting their ack (1 to 65535). The worker takes
            the next inbound message only while fewer than this many are waiting, so a
            slow broker slows the gateway (and, through the acks, the senders) instead
            of losing predictions. Keep it within what the broker accepts from one
            client (mosquitto: max_inflight_messages, default 20)."""),
    }),
    "mqtt.tls": Section("", {
        "enabled": feed(MqttSettings, "tls_enabled", Boolean(),
                         "true for TLS; then set port (usually 8883)"),
        "ca_file": feed(MqttSettings, "ca_file", PATH_TEXT,
                         "CA bundle to verify the broker; empty: the system CA store"),
        "cert_file": feed(MqttSettings, "cert_file", PATH_TEXT,
                           "client certificate, for brokers that require one"),
        "key_file": feed(MqttSettings, "key_file", PATH_TEXT,
                          "its private key (empty: the key is in cert_file)"),
    }),
}

_SERVICE_AFTER_SINKS: dict[str, Section] = {
    "checkpoints": Section("""
        One file per stream (stream-<id>.ckpt, plus the previous generation .ckpt.1),
        restored at start; an unreadable newest generation falls back to the older one.
        Empty: no checkpoints (every start is a fresh model). systemd's StateDirectory
        gives /var/lib/edgelearn (see edgelearn-gateway.service; the template unit
        edgelearn-gateway@.service gives each instance /var/lib/edgelearn/INSTANCE).""", {
        "directory": Setting(PATH_TEXT, "", "/var/lib/edgelearn/state"),
        "interval_seconds": Setting(Interval(float, 1, 7 * 86_400), """
            Minutes, not seconds: SD cards wear out (1 to 604800). Only streams that
            changed are written; all are written at a clean stop (SIGTERM). Labels
            learned in between are kept in the label journal.""", 600.0),
        "journal": Setting(Boolean(), """
            true: every label learned is appended to labels.journal in the directory
            before it is learned, and replayed on top of the checkpoints at start, so
            a crash (SIGKILL, power cut after the fsync) loses no label; truncated after
            each checkpoint round. What it does not keep: the channel statistics of
            unlabelled messages since the last checkpoint (see
            firmware_bridge/service/journal.py).""", True),
        "journal_max_bytes": Setting(Interval(int, 65_536, 1 << 30), """
            Bound of the journal file (64 KiB to 1 GiB): past half of it the gateway
            checkpoints (and truncates); a label that would pass it is learned but not
            journaled (counted "journal_dropped").""", 4 << 20),
        "journal_fsync_seconds": Setting(Interval(float, 0, 3600), """
            Most seconds between fsyncs of the journal (0 to 3600). Each label is
            written to the file at once (a killed process loses none); the fsync, which
            costs an SD card a whole block write, is what a power cut waits for:
            labels of the last few seconds may be lost to one.""", 5.0),
        "max_bytes": Setting(Interval(int, 0, 1 << 40), """
            Most bytes of checkpoint files in the directory (0: no limit). Beyond it the
            checkpoints of streams not served now (idle, or not restored) are deleted,
            the least recently written first, counted "checkpoints_deleted"; those of
            the streams served are never deleted.""", 64 << 20),
    }),
    "learner": Section("""
        The learner every new stream gets: a kind of this package, a plug-in's (the
        edgelearn.learners entry-point group) or a River estimator
        ("river:MODULE.CLASS"; pip install river). The kinds and their parameters are
        listed under [learner.params] below (made from the learners' code by
        edgelearn config --print-default).""", {
        "kind": Setting(LearnerKind(), """
            The learner kind; omitted: the task's default kind (without a task,
            edgelearn.DEFAULT_KIND, the default kind of binary and multiclass
            streams).""", None, optional=True, example=DEFAULT_KIND),
        "task": Setting(Options(*TASKS), """
            The task of the streams: binary, multiclass, multilabel, regression or anomaly.
            With a kind, the kind must serve it; without one, it picks the task's
            default kind. Omitted: whatever the kind serves.""", None, optional=True,
                        example="binary"),
    }),
}

SCHEMA: dict[str, Section] = {**_SERVICE, **sinks.sections(), **_SERVICE_AFTER_SINKS}
"""Every section of the configuration: the service's, and each output sink's."""

_FEEDS_PIPELINE = {
    f"{section_name}.{key}"
    for section_name, section in SCHEMA.items()
    for key, setting in section.keys.items()
    if setting.feeds is not None and setting.feeds[0] is Pipeline
}

# Tables whose keys are free-form (checked by whoever takes them).
FREE_TABLES = {"learner.params": "learner_params"}

#: A gateway's defaults for its kind's parameters, beside the learner's own (which suit a
#: notebook): a gateway's streams have a few dozen channels, and a tenth of the labels is
#: the budget the README promises. ``[learner.params]`` keys override them; the shipped
#: configs/gateway.toml shows them as set.
GATEWAY_LEARNER_DEFAULTS: dict[str, dict[str, Any]] = {
    DEFAULT_KIND: {"capacity": 64, "target_query_rate": 0.1},
}

# --- the loaded configuration ------------------------------------------------------------


@dataclass(frozen=True)
class GatewayConfig:
    """A checked gateway configuration: ``values[section][key]`` for every key of
    :data:`SCHEMA` (``config["mqtt.port"]`` reads one), and the objects made from them.
    Build it with :func:`load_config`."""

    values: Mapping[str, Mapping[str, Any]]
    mqtt: MqttSettings
    topics: Topics
    limits: Limits
    learner_params: dict
    source: str = ""

    def __getitem__(self, dotted: str) -> Any:
        section, _, key = dotted.rpartition(".")
        return self.values[section][key]

    def _fed(self, owner: type) -> dict[str, Any]:
        return _fed_values(self.values, owner)

    # The few values the service and the tools read by name.
    gateway_id = property(lambda self: self["gateway.id"])
    max_streams = property(lambda self: self["gateway.max_streams"])
    inbound_queue_length = property(lambda self: self["gateway.inbound_queue_length"])
    status_interval_s = property(lambda self: self["gateway.status_interval_seconds"])
    reject_log_interval_s = property(lambda self: self["gateway.reject_log_interval_seconds"])
    label_request_qos = property(lambda self: self["mqtt.label_request_qos"])
    checkpoint_dir = property(lambda self: self["checkpoints.directory"])
    checkpoint_interval_s = property(lambda self: self["checkpoints.interval_seconds"])
    journal_enabled = property(lambda self: bool(self["checkpoints.journal"]
                                                 and self["checkpoints.directory"]))

    @property
    def learner_kind(self) -> str:
        """``[learner] kind``, or the task's default kind when it is omitted."""
        return self["learner.kind"] or default_kind(self["learner.task"])

    def pipeline_params(self) -> dict[str, Any]:
        """The :class:`Pipeline` parameters this configuration sets."""
        params = self._fed(Pipeline)
        params.update(topics=self.topics, limits=self.limits,
                      json_fields=JsonFields(**self._fed(JsonFields)))
        return params

    def make_pipeline(self, clock=time.monotonic) -> Pipeline:
        """The pipeline this configuration describes (live policy: ``"request"``)."""
        return Pipeline(self.learner_kind, self.learner_params, label_policy="request",
                        clock=clock, **self.pipeline_params())

    def warnings(self) -> list[str]:
        """What this configuration cannot guarantee, one sentence each (``edgelearn
        gateway --check-config`` prints them, the gateway logs them at its start)."""
        found = []
        if self["mqtt.protocol"] != "MQTTv5":
            found.append(
                f'[mqtt] protocol = "{self["mqtt.protocol"]}": the broker cannot say that it '
                "refused a publish (an MQTT 3.1.1 PUBACK has no reason code; mosquitto "
                "acknowledges a publish its ACL denies and drops it), so refused "
                'predictions, label requests and status go uncounted; "MQTTv5" counts them '
                "(docs/reliability.md, Refused publishes)")
        if self["mqtt.prediction_qos"] == 0:
            found.append(
                "[mqtt] prediction_qos = 0: predictions get no acknowledgement, so a "
                "prediction the broker refuses or loses goes uncounted (docs/reliability.md)")
        return found

    def make_recorder(self) -> LogWriter | None:
        """The raw message log, if ``[recorder] enabled``."""
        if not self["recorder.enabled"]:
            return None
        return LogWriter(self["recorder.directory"], max_files=self["recorder.max_files"] or None,
                         **self._fed(LogWriter))


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
    (True, ['[gateway] unknown key idd (known: id, max_streams, stream_pattern, idle_stream_seconds, reserved_stream_slots, inbound_queue_length, status_interval_seconds, reject_log_interval_seconds)', "The 'port' parameter of [mqtt] must be an int in [1, 65535]. Got 70000."])
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
    invalid: set[str] = set()
    values: dict[str, dict[str, Any]] = {}

    known_sections = set(SCHEMA) | set(FREE_TABLES)
    for name, value in raw.items():
        if name not in known_sections:
            errors.append(f"unknown section [{name}] (known: {', '.join(SCHEMA)})")
        elif not isinstance(value, dict):
            errors.append(f"[{name}] must be a table, got {type(value).__name__}")
    for section_name, section in SCHEMA.items():
        table = _table(raw, section_name)
        if table is None:
            table = {}
        if not isinstance(table, dict):
            if "." in section_name:
                errors.append(f"[{section_name}] must be a table, got {type(table).__name__}")
            table = {}
        nested = {s.split(".", 1)[1] for s in known_sections if s.startswith(section_name + ".")}
        for key in table:
            if key not in section.keys and key.split(".")[0] not in nested:
                errors.append(f"[{section_name}] unknown key {key} "
                              f"(known: {', '.join(section.keys)})")
        checked = values[section_name] = {}
        for key, setting in section.keys.items():
            if key not in table:
                checked[key] = setting.value
                continue
            try:
                checked[key] = check(f"[{section_name}]", key, table[key], setting.constraint)
            except (TypeError, ValueError) as exc:
                errors.append(str(exc))
                checked[key] = None
                invalid.add(f"{section_name}.{key}")
    learner_params = _table(raw, "learner.params")
    if learner_params is None:
        learner_params = {}
    elif not isinstance(learner_params, dict):
        errors.append(f"[learner.params] must be a table, got {type(learner_params).__name__}")
        learner_params = {}

    config = _build(values, dict(learner_params), where, errors, invalid)
    if errors:
        prefix = f"{where}: " if where else ""
        return None, [prefix + e for e in errors]
    return config, []


def _ok(*values: Any) -> bool:
    return all(v is not None for v in values)


def _build(
    v: dict[str, dict[str, Any]],
    learner_params: dict,
    where: str,
    errors: list[str],
    invalid: set[str],
) -> GatewayConfig | None:
    """Cross-checks between keys, and the objects the service uses (``invalid``: the
    dotted keys that failed their own check; their values are ``None``)."""
    gw, top, lim, rec, mq, tls, lr = (
        v[s] for s in ("gateway", "topics", "limits", "recorder", "mqtt", "mqtt.tls", "learner")
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
            errors.append(f"The 'id' parameter of [gateway] must be {ID_TEXT.describe()}. "
                          f"Got {format_value(gateway_id)}.")
            gateway_id = gw["id"] = None
    if gateway_id is not None and topics is not None:
        if gateway_id in topics.reserved_gateways:
            errors.append(
                f"[gateway] id must not be one of the ids the topic layout reserves "
                f"({', '.join(sorted(topics.reserved_gateways))}), got {gateway_id!r}"
            )
    # Integrations: their topics must not fall on the gateway's own.
    if topics is not None and gateway_id is not None:
        json_topic = v["status_json"]["topic"]
        if json_topic is not None and topics.parse(json_topic.replace("{gateway}", gateway_id)):
            errors.append(
                f"[status_json] topic must not fit a [topics] template (it would overwrite "
                f"or feed the gateway's own topics), got {json_topic!r}"
            )
    # Recorder.
    if rec["enabled"] and rec["directory"] == "":
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
    if _ok(queued, inflight) and queued and queued < inflight + OUTPUT_MARGIN:
        errors.append(
            f"[mqtt] max_queued_messages must be 0 or at least max_inflight_messages + "
            f"{OUTPUT_MARGIN} ({inflight + OUTPUT_MARGIN}), got {queued}"
        )
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
    # The learner: the kind (or the task's default), built once through the pipeline
    # (which checks it against the limits).
    kind = lr["kind"]
    if not {"learner.kind", "learner.task"} & invalid:
        try:
            kind = kind or default_kind(lr["task"])
            if lr["task"] is not None and lr["kind"] is not None:
                served = load_kind(kind)
                if isinstance(served, type) and hasattr(served, "tasks") and lr["task"] not in served.tasks:
                    raise ValueError(
                        f"the kind {kind!r} serves {sorted(served.tasks)}, not the task "
                        f"{lr['task']!r}; name a kind that does, or leave kind out for the "
                        "task's default")
        except ValueError as exc:
            errors.append(f"[learner] {exc}")
            kind = None
    learner_params = {**GATEWAY_LEARNER_DEFAULTS.get(kind, {}), **learner_params}
    pipeline_params = _fed_values(v, Pipeline)
    if _ok(kind, topics, limits) and not invalid & _FEEDS_PIPELINE:
        try:
            Pipeline(kind, learner_params, topics=topics, limits=limits, **pipeline_params)
        except (ValueError, TypeError) as exc:
            section = ("limits" if "limits" in str(exc) else "gateway"
                       if "stream_pattern" in str(exc) else "learner.params")
            errors.append(f"[{section}] {exc}")
    if errors:
        return None
    return GatewayConfig(
        values=v,
        mqtt=MqttSettings(client_id=client_id, password=password, **_fed_values(v, MqttSettings)),
        topics=topics,
        limits=limits,
        learner_params=learner_params,
        source=where,
    )


def _fed_values(v: Mapping[str, Mapping[str, Any]], owner: type) -> dict[str, Any]:
    """The values of the keys that feed ``owner``'s parameters, by parameter name."""
    return {
        setting.feeds[1]: v[section_name][key]
        for section_name, section in SCHEMA.items()
        for key, setting in section.keys.items()
        if setting.feeds is not None and setting.feeds[0] is owner
    }
