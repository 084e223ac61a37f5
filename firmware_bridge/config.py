"""The gateway's configuration: one declarative schema, and everything made from it.

:data:`SCHEMA` holds every key of ``configs/gateway.toml``: its constraint (an
:mod:`edgelearn.constraints` object), its default and its documentation. From it come

* :func:`load_config`, which checks a file and reports every problem at once (each in
  the one format, ``The 'port' parameter of [mqtt] must be an int in [1, 65535].
  Got 70000.``), then the cross-checks between keys;
* the settings objects the service runs with: :class:`~firmware_bridge.mqtt.MqttSettings`
  and the :class:`~firmware_bridge.pipeline.Pipeline`'s parameters
  (:meth:`GatewayConfig.make_pipeline`);
* :func:`render_default_config`, the documented ``configs/gateway.toml``
  (``edgelearn config --print-default``; a test holds the shipped file to it).

A key that sets a parameter of one of those objects (``feeds``) takes its default from
that object, so the two cannot disagree.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import textwrap
import time
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import edgelearn
from edgelearn.constraints import (
    Boolean,
    Constraint,
    Interval,
    OneOf,
    Options,
    Text,
    check,
    format_value,
)

from .labels import PendingLabels
from .mqtt import PROTOCOLS, MqttSettings, parse_broker
from .pipeline import Pipeline
from .protocol import JsonFields, Limits, Topics
from .recorder import _PREFIX_PATTERN as _RECORDER_PREFIX
from .recorder import LogWriter

__all__ = [
    "SCHEMA",
    "Setting",
    "Section",
    "GatewayConfig",
    "load_config",
    "render_default_config",
    "OUTPUT_MARGIN",
]

# The worker fills the in-flight window and may then publish one message's outputs
# (prediction and label request) and a status: paho's queue needs that much more.
OUTPUT_MARGIN = 3

_FROM_OWNER = object()  # default: read from the object the key feeds


class BrokerList(Constraint):
    """A list of ``"HOST:PORT"`` strings, converted to ``((host, port), ...)``."""

    def describe(self) -> str:
        return 'a list of "HOST:PORT" strings'

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)

    def convert(self, value: Any) -> Any:
        if not self.accepts_type(value):
            self._reject(TypeError, value)
        try:
            return tuple(parse_broker(v) for v in value)
        except ValueError:
            self._reject(ValueError, value)

    def invalid_values(self) -> list:
        return ["localhost:1883", [1883], ["localhost"]]

    def valid_value(self) -> Any:
        return ["localhost:1883"]


class FieldList(Constraint):
    """A list of field names (str, dotted for nested JSON objects), as a tuple."""

    def describe(self) -> str:
        return "a list of non-empty str"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value)

    def convert(self, value: Any) -> Any:
        if not self.accepts_type(value):
            self._reject(TypeError, value)
        return tuple(value)

    def invalid_values(self) -> list:
        return ["battery", [1], [""]]

    def valid_value(self) -> Any:
        return ["battery"]


def _owner_default(owner: type, name: str) -> Any:
    if dataclasses.is_dataclass(owner):
        field = owner.__dataclass_fields__[name]
        if field.default is not dataclasses.MISSING:
            return field.default
        return field.default_factory()  # type: ignore[misc]
    return inspect.signature(owner).parameters[name].default


@dataclass(frozen=True)
class Setting:
    """One key: what it may be, its default, its documentation.

    ``feeds`` is ``(owner, parameter)`` when the value goes to a parameter of
    ``MqttSettings``, ``Pipeline``, ``Limits``, ``Topics`` or ``LogWriter``; the default
    is then that parameter's default. ``optional`` keys may be left out (shown
    commented out in the file, with ``example``)."""

    constraint: Constraint
    doc: str
    default: Any = _FROM_OWNER
    feeds: tuple[type, str] | None = None
    optional: bool = False
    example: Any = None

    @property
    def value(self) -> Any:
        """The default value."""
        if self.default is _FROM_OWNER:
            assert self.feeds is not None
            return _owner_default(*self.feeds)
        return self.default


@dataclass(frozen=True)
class Section:
    doc: str
    keys: dict[str, Setting]


def _feed(owner: type, name: str, constraint: Constraint, doc: str, **kw: Any) -> Setting:
    return Setting(constraint, doc, feeds=(owner, name), **kw)


_ID = Text(1, 24, pattern=r"[A-Za-z0-9_.:-]+", description="1 to 24 of A-Z a-z 0-9 _ . : -")
_PATH = Text()
_TOPIC = Text(1, pattern=r"[^+#\x00$][^+#\x00]*",
              description="an MQTT topic without wildcards ('+', '#') or a leading '$'",
              example="edgelearn/x")


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
        name: _feed(Limits, name, Interval(int, low.get(name, 1), 1 << 24), docs[name])
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
    return {kind: _feed(Topics, f"{kind}_template", Text(1), doc) for kind, doc in docs.items()}


SCHEMA: dict[str, Section] = {
    "gateway": Section("", {
        "id": _feed(Pipeline, "gateway_id", _ID, """
            Name of this gateway: the {gateway} in the status topic and the prefix of
            label request ids. 1 to 24 of A-Z a-z 0-9 _ . : -; not one of the ids the
            topic layout reserves (with the default layout: prediction, label_request,
            label). Several instances on one host each have their own (see
            edgelearn-gateway@.service)."""),
        "max_streams": _feed(Pipeline, "max_streams", Interval(int, 1, 100_000), """
            Most streams served (1 to 100000); data for a further stream is counted
            ("too_many_streams") and dropped. Each stream holds one learner (see
            [learner])."""),
        "inbound_queue_length": Setting(Interval(int, 1, 1_000_000), """
            Inbound messages received and waiting for the worker (1 to 1000000). When the
            queue is full the gateway stops reading from the broker, so TCP pushes back
            and the broker keeps the backlog. (It also announces this length as its
            MQTT 5 Receive Maximum.)""", 1024),
        "status_interval_seconds": Setting(Interval(float, 1, 86_400), """
            Seconds between status messages (retained, on the status topic; 1 to 86400).
            A status also goes out, at most once a second, when streams, rejects or the
            connection change.""", 30.0),
        "reject_log_interval_seconds": _feed(
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
        "enabled": _feed(JsonFields, "enabled", Boolean(),
                         'false: a JSON payload is rejected ("not_json")'),
        "label_field": _feed(JsonFields, "label_field", Text(), """
            The field that is the label, kept as the sensor sends it (a bool, int or
            str), e.g. "occupancy" to learn a Zigbee2MQTT motion sensor's occupancy
            from its other readings. Empty: objects carry no label."""),
        "bool_channels": _feed(JsonFields, "bool_channels", FieldList(), """
            Fields whose switch values (true/false, "ON"/"OFF") become channels 1/0,
            e.g. ["contact", "POWER"]."""),
        "ignore": _feed(JsonFields, "ignore", FieldList(), """
            Numeric fields that are not channels, e.g. ["linkquality", "battery",
            "voltage"]."""),
    }),
    "limits": Section("""
        Hard bounds on every inbound message, applied before and while decoding; a
        message beyond them is rejected, counted by reason, and never stops the
        service.""", _limits()),
    "labels": Section("""
        Pending label requests (features kept from prediction time, waiting for an
        answer).""", {
        "capacity": _feed(Pipeline, "pending_capacity", Interval(int, 1, 10_000_000),
                          "most pending at once; when full the oldest is evicted"),
        "ttl_seconds": _feed(Pipeline, "label_ttl_s", Interval(float, 0.001, 365 * 86_400),
                             'an answer later than this is counted "expired" and dropped'),
        "recent_capacity": _feed(
            Pipeline, "recent_capacity", OneOf(Options(None), Interval(int, 0, 10_000_000)), """
            Closed request ids remembered to tell duplicate or late answers from forged
            ones (omit for the default: the same as capacity).""",
            optional=True, example=1024),
    }),
    "recorder": Section("""
        Raw message log (see firmware_bridge/recorder.py for the format), for
        replay.""", {
        "enabled": Setting(Boolean(), "true: record every inbound message, as it arrived",
                           False),
        "directory": Setting(_PATH, "created if missing; needed when enabled",
                             "/var/lib/edgelearn/log"),
        "prefix": _feed(LogWriter, "prefix", Text(1), """
            file names: {prefix}-{counter}-{UTC time}.msgpack; letters, digits, '_', '.'
            and single '-' between them"""),
        "max_bytes": _feed(LogWriter, "max_bytes", Interval(int, 1024, None),
                           "rotate before a file passes this size (64 MiB)"),
        "max_files": Setting(Interval(int, 0, None),
                             "delete the oldest beyond this many; 0 keeps all", 32),
    }),
    "mqtt": Section("", {
        "host": _feed(MqttSettings, "host", Text(1), "broker host name or address"),
        "port": _feed(MqttSettings, "port", Interval(int, 1, 65_535),
                      "1 to 65535; 8883 is usual with TLS"),
        "brokers": _feed(MqttSettings, "brokers", BrokerList(), """
            Further brokers of the same cluster, as "HOST:PORT": after a failed connection
            attempt the gateway tries the next address in turn (host:port first). Empty:
            host:port only. The persistent session must live in the cluster, not in one
            node (NATS keeps it in JetStream; see docs/fleet.md)."""),
        "protocol": _feed(MqttSettings, "protocol", Options(*PROTOCOLS),
                          '"MQTTv5" or "MQTTv311"'),
        "client_id": Setting(Text(0, 65_535), """
            Client id; empty: "edgelearn-" + [gateway] id. It must be stable across
            restarts, since the broker keeps the persistent session under it.""", ""),
        "keepalive_seconds": _feed(MqttSettings, "keepalive_seconds", Interval(int, 5, 65_535),
                                   "5 to 65535"),
        "clean_start": _feed(MqttSettings, "clean_start", Boolean(), """
            Persistent session: with clean_start = false the broker keeps the
            subscriptions and queues QoS 1 data while the gateway restarts, and data the
            gateway took but did not acknowledge (it acknowledges after processing) is
            delivered again. Setting it true loses that; it exists for throwaway test
            gateways."""),
        "session_expiry_seconds": _feed(
            MqttSettings, "session_expiry_seconds", Interval(int, 0, 2**32 - 1), """
            How long the broker keeps the session of a gateway that is away (MQTTv5
            only; 0 to 4294967295 seconds). With MQTTv311 the broker decides (mosquitto:
            persistent_client_expiration)."""),
        "reconnect_min_delay_seconds": _feed(
            MqttSettings, "reconnect_min_delay_seconds", Interval(int, 1, 3600), """
            Reconnect backoff: the wait doubles from min to max after every failed
            attempt (seconds; 1 to 3600 and up to 86400, min <= max). Every failed
            attempt is counted ("connect_failures", beside "connect_attempts")."""),
        "reconnect_max_delay_seconds": _feed(
            MqttSettings, "reconnect_max_delay_seconds", Interval(int, 1, 86_400), """
            The longest wait between attempts: a broker (or link) that comes back is
            noticed within this many seconds, so data waits no longer than that. The
            trade-off: while the broker is away each gateway tries this often (a TCP
            connection attempt per link, nothing more); a fleet of thousands against
            one broker may want 30 to 60 to spread the reconnections out."""),
        "username": _feed(MqttSettings, "username", Text(),
                          "empty: connect without credentials"),
        "password_file": Setting(_PATH, """
            A file holding the password (one line; a trailing newline is ignored); never
            the password here. Needs username.""", ""),
        "subscribe_qos": _feed(MqttSettings, "subscribe_qos", Options(0, 1), """
            inbound data and label answers: 0 or 1; 1 for no loss (with 2, paho hands
            over messages past the bounded queue)"""),
        "prediction_qos": _feed(Pipeline, "prediction_qos", Options(0, 1, 2), "0, 1 or 2"),
        "label_request_qos": _feed(Pipeline, "label_request_qos", Options(1, 2),
                                   "1 or 2: a lost label request is a lost label"),
        "max_queued_messages": _feed(
            MqttSettings, "max_queued_messages", Interval(int, 0, 10_000_000), f"""
            Outgoing messages held (queued while disconnected, or sent and not yet
            acknowledged); 0 for no cap, else at least max_inflight_messages +
            {OUTPUT_MARGIN}. A publish that finds it full is counted
            ("publish_dropped"). About 1 KiB each in memory."""),
        "max_inflight_messages": _feed(
            MqttSettings, "max_inflight_messages", Interval(int, 1, 65_535), """
            Outgoing QoS>0 messages awaiting their ack (1 to 65535). The worker takes
            the next inbound message only while fewer than this many are waiting, so a
            slow broker slows the gateway (and, through the acks, the senders) instead
            of losing predictions. Keep it within what the broker accepts from one
            client (mosquitto: max_inflight_messages, default 20)."""),
    }),
    "mqtt.tls": Section("", {
        "enabled": _feed(MqttSettings, "tls_enabled", Boolean(),
                         "true for TLS; then set port (usually 8883)"),
        "ca_file": _feed(MqttSettings, "ca_file", _PATH,
                         "CA bundle to verify the broker; empty: the system CA store"),
        "cert_file": _feed(MqttSettings, "cert_file", _PATH,
                           "client certificate, for brokers that require one"),
        "key_file": _feed(MqttSettings, "key_file", _PATH,
                          "its private key (empty: the key is in cert_file)"),
    }),
    "status_json": Section("""
        The retained status message also as JSON, for dashboards, Node-RED and
        mosquitto_sub (the msgpack one stays as it is). Off by default.""", {
        "enabled": Setting(Boolean(), "true: publish it beside every msgpack status", False),
        "topic": Setting(_TOPIC, """
            Its topic; {gateway} is replaced by [gateway] id. Keep it off the stream
            topics' patterns.""", "edgelearn/status/{gateway}/json"),
    }),
    "homeassistant": Section("""
        Home Assistant MQTT discovery (see docs/integrations.md). Off by default; when
        on, each stream appears in HA as a device with its prediction (a binary_sensor
        for a binary learner, else a sensor), running accuracy, labels asked and query
        rate, and the gateway as a device with its health.""", {
        "enabled": Setting(Boolean(), "true: publish discovery configs and states", False),
        "discovery_prefix": Setting(_TOPIC, "HA's discovery prefix", "homeassistant"),
        "birth_topic": Setting(_TOPIC, """
            Where HA says "online" when it starts; the gateway then announces
            everything again.""", "homeassistant/status"),
        "state_prefix": Setting(_TOPIC, """
            The JSON state topics: {state_prefix}/{gateway} (health),
            {state_prefix}/{gateway}/{stream} and {state_prefix}/{gateway}/availability.""",
                                "edgelearn/ha"),
    }),
    "prometheus": Section("""
        A Prometheus scrape endpoint, http://host:port/metrics (see
        docs/integrations.md). Off by default; loopback only unless host says
        otherwise.""", {
        "enabled": Setting(Boolean(), "true: serve /metrics", False),
        "host": Setting(Text(1), 'address to listen on; "0.0.0.0" for every interface',
                        "127.0.0.1"),
        "port": Setting(Interval(int, 1, 65_535), "TCP port (1 to 65535)", 9464),
    }),
    "checkpoints": Section("""
        One file per stream (stream-<id>.ckpt, plus the previous generation .ckpt.1),
        restored at start; an unreadable newest generation falls back to the older one.
        Empty: no checkpoints (every start is a fresh model). systemd's StateDirectory
        gives /var/lib/edgelearn (see edgelearn-gateway.service; the template unit
        edgelearn-gateway@.service gives each instance /var/lib/edgelearn/INSTANCE).""", {
        "directory": Setting(_PATH, "", "/var/lib/edgelearn/state"),
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
            firmware_bridge/journal.py).""", True),
        "journal_max_bytes": Setting(Interval(int, 65_536, 1 << 30), """
            Bound of the journal file (64 KiB to 1 GiB): past half of it the gateway
            checkpoints (and truncates); a label that would pass it is learned but not
            journaled (counted "journal_dropped").""", 4 << 20),
        "journal_fsync_seconds": Setting(Interval(float, 0, 3600), """
            Most seconds between fsyncs of the journal (0 to 3600). Each label is
            written to the file at once (a killed process loses none); the fsync, which
            costs an SD card a whole block write, is what a power cut waits for:
            labels of the last few seconds may be lost to one.""", 5.0),
    }),
    "learner": Section("", {
        "kind": Setting(Options(*edgelearn.KINDS), """
            The learner every new stream gets: "paacds" (active learning: asks for the
            labels it is unsure of), "pa" (passive-aggressive: asks for every label),
            "pafe" (a passive-aggressive learner that carries its model over when a
            stream's sensor set is replaced by another, found from the channels alone),
            "synthesis_nb" (naive Bayes that learns synthetic instances after each
            mistake; robust to label noise) or "ensemble" (AC_OE: chunk-trained members
            whose weights decay with their mistakes, for streams whose concept drifts).
            Those four ask for every label. "active_arow" (active learning beyond the
            papers: confidence-weighted updates with a per-weight variance on each
            channel's value and its bin, so a new sensor learns fast, and label requests where the model is least sure, at a
            held rate; docs/results-label-budget.md measures it beside River). For streams
            whose labels are label sets (maps of label name to bool): "kelm_multilabel"
            (semi-supervised multi-label KELM; its parameters: edgelearn.MultiLabelKELM).
            The default is edgelearn.DEFAULT_KIND: "active_arow" if it meets its aim on
            docs/results-label-budget.md, else "paacds".""", edgelearn.DEFAULT_KIND),
    }),
}

_FEEDS_PIPELINE = {
    f"{section_name}.{key}"
    for section_name, section in SCHEMA.items()
    for key, setting in section.keys.items()
    if setting.feeds is not None and setting.feeds[0] is Pipeline
}

# Tables whose keys are free-form (checked by whoever takes them).
FREE_TABLES = {"learner.params": "learner_params"}

_HEADER = """\
# edgelearn gateway configuration: every key with its default.
#
# Made by `edgelearn config --print-default` from the schema in
# firmware_bridge/config.py (tests/test_config.py holds this file to it).
#
# Every key is checked at start-up (`edgelearn gateway --config FILE --check-config`
# checks without starting): an unknown key, a value of the wrong type or out of range,
# or keys that contradict each other are all reported at once, and the gateway exits
# with status 2. Omitted keys take the default shown here. The command line may
# override the broker (--broker HOST:PORT), the checkpoint directory (--state-dir DIR)
# and the gateway id (--gateway-id ID).
#
# Budgets are fixed at start: the gateway never grows a table past what is set here,
# and reports the memory they add up to in its status message ("memory"): about
# 10 MiB with these defaults. The process is much larger than its tables: Python,
# NumPy, numba and its LLVM library come to about 160 MiB before the first message.
# docs/bench-memory.md (python tools/bench_memory.py) measured a peak RSS of 228 MiB
# (these defaults, PAACDS, 1 or 100 streams, kernels compiled in the process; 199
# MiB when `edgelearn warmup` filled the Numba cache first, as the unit does), flat
# however long the stream. The systemd unit's MemoryHigh (288M) and MemoryMax (352M)
# leave 1.25x and 1.5x that figure at least. The defaults suit a Raspberry Pi 3/4/5
# (64-bit) serving a few dozen sensor streams.
"""

_LEARNER_PARAMS = """\
[learner.params]
# Parameters of that learner (edgelearn.make_learner(kind, params)); anything the
# learner does not take is an error. For active_arow (the default kind) and paacds alike:
capacity = 64                  # channel slots per stream (the fixed size of its arrays)
target_query_rate = 0.1        # ask for about this fraction of labels
evict_after = 1000             # messages a channel must be absent before its slot is reused
seed = 0                       # query decisions are reproducible per stream
# Further active_arow parameters, with their defaults:
# r = 80.0                     # regularization: the larger, the more cautious each step
# n_bins = 8                   # bins per channel of its additive part; 0: a linear model
# query_power = 5.0            # sharpness of the query rule
# variance_floor = 0.3         # no learned variance below this: keeps following drift
# threshold = 1.0              # initial query threshold (adapted when target_query_rate is set)
# budget_gain = 0.5
# learn_intercept = true
# n_classes = 2                # 2: binary (any two labels); more: multiclass
#
# Further paacds parameters, with their defaults:
# C = 1.0                      # aggressiveness (largest update step)
# B = 0.64                     # fraction of active channels kept after each update
# lam = ...                    # weight budget; omitted: no budget scaling
# delta = 1.0                  # query parameter (adapted when target_query_rate is set)
# variant = "PAACDS"           # or "PAACDS-I"
# max_weights = ...            # omitted: capacity
# n_classes = 2                # 2: binary (any two labels); more: multiclass
# h_halflife = 500.0
# budget_gain = 0.5
# learn_intercept = true       # false: the paper's model, without an intercept
#
# For pafe (binary labels), with their defaults; capacity, evict_after and seed as above:
# C = 0.01                     # PA-I aggressiveness of its models
# variant = "PAFE-h"           # the mapped model and one started fresh on the new channels,
#                              # weighted by their mistakes; the paper's "PAFE-c" (combine)
#                              # or "PAFE-s" (follow one model); or a paper baseline:
#                              # "RPA-u", "RPA-f", "NPA-d", "NPA-r"
# ridge = 1.0                  # ridge penalty of the maps between old and new channels
# overlap_min = 5              # messages with both sets before a vanishing set is a replacement
# vanish_after = 100           # messages without the old set before it is given up
# absorb_after = 1000          # messages with both sets before the new ones count as added
# max_old = 32                 # most old / new channels the maps cover; with max_old =
# max_new = 32                 #   max_new = m the maps take about 48 m^2 bytes (48 KiB at 32)
# horizon = ...                # omitted: doubling trick (the length of a period is unknown)
# learn_intercept = true       # false: the paper's models, without an intercept
# standardize = true
#
# For active_arow (binary or multiclass), with their defaults; capacity, evict_after,
# seed and target_query_rate as above (its own default target_query_rate is 0.2):
# r = 50.0                     # AROW regularization: larger, smaller and more cautious steps
# query_power = 5.0            # sharpness of the query rule (1: Cesa-Bianchi et al.'s)
# threshold = 1.0              # initial query threshold in standard deviations of the margin
# budget_gain = 0.5            # speed of the target_query_rate control
# learn_intercept = true
# variance_floor = 0.3         # no weight's variance falls below this: follows drift
# n_classes = 2                # 2: binary labels true/false; more: multiclass
#
# For synthesis_nb, with their defaults; capacity, evict_after and seed as above:
# num = 5                      # synthetic instances learned after a mistake; 0: plain naive Bayes
# half_life = ...              # omitted: no forgetting; a number of observations to follow drift
# var_floor = 0.01             # smallest class-conditional variance (in z units)
# n_classes = 2                # 2: binary (any two labels); more: multiclass
# standardize = true
#
# For ensemble, with their defaults; capacity, evict_after and seed as above:
# base = "kelm"                # members and global learner: "kelm" (RBF kernel ridge),
#                              #   "pa" (PA-I) or "nb" (Gaussian naive Bayes)
# chunk_size = 100             # labelled messages per chunk; a new member per chunk
# n_members = 10               # ensemble size
# beta = 0.9                   # weight factor of a member at each of its mistakes
# alpha = 1.0                  # vote of the global learner (members' weights sum to 1)
# reservoir_size = 200         # past correct messages the global learner retrains on
# C = 1.0                      # kelm: ridge 1/C; pa: largest step
# gamma = ...                  # kelm RBF width; omitted: 1 / channels present
# var_floor = 0.01             # nb: smallest class-conditional variance
# n_classes = 2                # 2: binary (any two labels); more: multiclass
# Its memory: with kelm and 64 channel slots, about 1.8 MB per stream
# (edgelearn.OnlineEnsemble().memory_bytes()).
"""


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(
            _toml_value(f"{v[0]}:{v[1]}" if isinstance(v, tuple) else v) for v in value
        ) + "]"
    return repr(value)


def _comment(text: str) -> list[str]:
    text = " ".join(textwrap.dedent(text).split())
    return ["# " + line for line in textwrap.wrap(text, 84)] if text else []


def render_default_config() -> str:
    """``configs/gateway.toml``: every key of :data:`SCHEMA` with its default and its
    documentation (``edgelearn config --print-default``)."""
    lines = [_HEADER]
    for name, section in SCHEMA.items():
        lines.append(f"[{name}]")
        lines.extend(_comment(section.doc))
        for key, setting in section.keys.items():
            lines.extend(_comment(setting.doc))
            if setting.optional:
                lines.append(f"# {key} = {_toml_value(setting.example)}")
            else:
                lines.append(f"{key} = {_toml_value(setting.value)}")
        lines.append("")
    lines.append(_LEARNER_PARAMS)
    return "\n".join(lines)


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
    learner_kind = property(lambda self: self["learner.kind"])

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
    (True, ['[gateway] unknown key idd (known: id, max_streams, inbound_queue_length, status_interval_seconds, reject_log_interval_seconds)', "The 'port' parameter of [mqtt] must be an int in [1, 65535]. Got 70000."])
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
            errors.append(f"The 'id' parameter of [gateway] must be {_ID.describe()}. "
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
    # The learner, built once through the pipeline (which checks it against the limits).
    pipeline_params = _fed_values(v, Pipeline)
    if _ok(lr["kind"], topics, limits) and not invalid & _FEEDS_PIPELINE:
        try:
            Pipeline(lr["kind"], learner_params, topics=topics, limits=limits, **pipeline_params)
        except (ValueError, TypeError) as exc:
            section = "limits" if "limits" in str(exc) else "learner.params"
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
