"""Per-stream routing: inbound bytes -> learner -> outbound messages.

One :class:`Pipeline` object serves both the live gateway (driven by the MQTT
worker thread) and offline replay of recorded logs (driven by a loop over
:func:`firmware_bridge.recorder.iter_logs`). It holds no sockets and no files:
:meth:`Pipeline.handle` takes a topic, a payload and a receive time and returns the
messages to publish, as :class:`Outbound` values.

For every inbound message:

* a data message on ``sensors/{stream}/data`` goes to its stream's learner (created
  on the stream's first message, at most ``max_streams`` streams), which observes it,
  predicts and decides once whether its label is worth asking for
  (``learner.decide_one``). Exactly one prediction message goes out per accepted data
  message. What happens to the label depends on ``label_policy``:

  ``"request"`` (live gateway)
      a ``"y"`` inside the data message is learned directly; otherwise, when the
      learner asks, a label request is issued (the features the learner saw are kept
      in :class:`~firmware_bridge.labels.PendingLabels`) and a label request message
      goes out;
  ``"from_data"`` (replay of a log whose data messages carry the true ``"y"``)
      the recorded ``"y"`` plays the oracle: it is learned only when the learner asked
      for it, so replay measures the active learner with its real label budget;
  ``"all"``
      every ``"y"`` is learned (fully supervised baseline).

* a batch ``{"readings": [...]}`` on the data topic is read as its readings one after
  the other, each exactly as a data message; one prediction message
  ``{"predictions": [...]}`` answers the accepted ones, a bad reading is rejected and
  counted alone (``docs/protocol.md``);

* a label answer on ``edgelearn/{stream}/label`` is matched against the pending
  requests; only an answer to a pending, unexpired request of the same stream is
  learned, exactly once, from the features kept at prediction time.

Whenever a data message carries ``"y"``, the prediction made before any learning is
scored against it in the stream's prequential :class:`ClassificationMetrics`, so a
replay reports accuracy, F1 and query rate.

Multi-label streams (a learner whose ``task`` is ``"multilabel"``, e.g. ``kelm_multilabel``):

* a label is a *label set*, a map of label name to bool, in a data message's ``"y"``
  and in a label answer; a name it leaves out is missing (not learned, not scored);
  any other label is ``"unusable_label"``;
* predictions carry the predicted label set as ``"y"`` (every label name the stream's
  learner has seen), and ``"score"`` is the margin of its least certain label;
* a label request asks for the whole label set: besides ``"y_hat"`` (the predicted
  set) it carries ``"labels"``, the label names the learner knows, in its order; an
  answer may name others too (new labels, up to the learner's ``max_labels``);
* the stream status reports ``"hamming_loss"`` and ``"micro_f1"`` over the labels the
  truths named (:class:`~edgelearn.metrics.MultiLabelMetrics`) instead of
  ``"accuracy"`` and ``"f1"``.

The per-message path is lean for the common case: a data message (or batch) on the
topic of a stream that exists, whose readings are plain (finite numbers, known-good
channel names, nothing to drop) is decoded once and checked by
:func:`~firmware_bridge.protocol.plain_reading`; anything else goes through
:func:`~firmware_bridge.protocol.parse_message`, which gives every verdict. Both end in
the same code, and ``tests/test_fast_path.py`` holds them to the same outputs.
A binary PAACDS or ActiveAROW stream whose two labels are settled then predicts,
scores and learns a reading whose label is settled (or absent) in one kernel call
(their ``decide_learn_claimed``, :class:`_LeanBinary`); ``tests/test_lean_path.py`` holds it
to the per-call path byte for byte.

Nothing a client sends stops the pipeline: every reject is counted by reason
(:meth:`Pipeline.counters`) and logged at most once per ``log_interval_s`` per reason.
Memory is bounded by the construction parameters whatever arrives
(:meth:`Pipeline.memory`). Not thread-safe: one thread drives a pipeline.

>>> import msgpack
>>> from firmware_bridge.protocol import encode_data, encode_label
>>> pipeline = Pipeline("pa", {"capacity": 8})
>>> out = pipeline.handle("sensors/s1/data", encode_data(1.0, 0, {"t": 20.5}), 0.0)
>>> [(o.topic, o.qos, o.retain) for o in out]
[('edgelearn/s1/prediction', 1, False), ('edgelearn/s1/label_request', 1, False)]
>>> req = msgpack.unpackb(out[1].payload)["req"]
>>> pipeline.handle("edgelearn/s1/label", encode_label(req, True), 0.0)
[]
>>> c = pipeline.counters()
>>> c["predictions"], c["label_requests"], c["learned"], c["label_answered"]
(1, 1, 1, 1)
>>> pipeline.handle("edgelearn/s1/label", encode_label(req, True), 0.0)
[]
>>> pipeline.counters()["label_duplicate"]
1
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import msgpack
import numpy as np

import edgelearn
from edgelearn._validation import check_number
from edgelearn.constraints import InstanceOf, Interval, OneOf, Options, check_params
from edgelearn.learners.base import BinaryTargets
from edgelearn.metrics import ClassificationMetrics, MultiLabelMetrics

from .fast_decode import REC_BATCH, FastDecoder
from .kernels.pack_predictions import pack_predictions
from .kernels.replay_rows import column_order
from .labels import Outcome, PendingEntry, PendingLabels
from .protocol import (
    bounded_unpackb,
    DEFAULT_JSON_FIELDS,
    JsonFields,
    DEFAULT_LIMITS,
    REJECT_REASONS,
    DataBatch,
    DataMessage,
    KnownNames,
    LabelMessage,
    Limits,
    RejectCounters,
    Topics,
    encode_label_request,
    encode_prediction,
    parse_message,
    plain_reading,
    prediction_fields,
)

__all__ = [
    "LABEL_POLICIES",
    "PIPELINE_REJECTS",
    "REJECT_COUNTERS",
    "SEQUENCE_COUNTERS",
    "SEQ_WINDOW",
    "Outbound",
    "Pipeline",
    "RateLimitedLog",
    "StateMismatch",
]

logger = logging.getLogger("firmware_bridge.pipeline")

LABEL_POLICIES = ("request", "from_data", "all")

PIPELINE_REJECTS: dict[str, str] = {
    "too_many_streams": "data for a new stream when max_streams streams exist",
    "unusable_label": "a valid label the stream's learner cannot take (a third label "
    "for a binary learner, a class beyond n_classes, a multi-label map for a single-label "
    "learner or a single label for a multi-label one, a label set beyond max_labels)",
    "learner_error": "the learner raised on a message (a bug; the message is dropped)",
}
"""Rejects decided by the pipeline rather than the wire protocol, with what they mean."""

SEQUENCE_COUNTERS: tuple[str, ...] = (
    "seq_missing", "seq_duplicates", "seq_out_of_order", "seq_restarts",
)
"""Per stream and in total: readings whose ``seq`` never came (gaps, counted once a
later reading arrives; a late one that fills its gap takes itself off), ``seq``
values that came again, ones that came after a later one, and sensor restarts (a
``seq`` that starts again: 0, or more than :data:`SEQ_WINDOW` below the last)."""

SEQ_WINDOW = 64
"""How far back the pipeline remembers which ``seq`` values arrived (one int per
stream): a reading within it that arrives late is out of order or a duplicate."""
_WINDOW_MASK = (1 << SEQ_WINDOW) - 1

# Label-table outcomes that are rejects (an answer that was not applied).
_LABEL_REJECTS = tuple(f"label_{outcome.value}" for outcome in Outcome)

REJECT_COUNTERS: tuple[str, ...] = (*REJECT_REASONS, *PIPELINE_REJECTS, *_LABEL_REJECTS)
"""Every reject counter :meth:`Pipeline.counters` reports; ``rejected`` is their sum."""

# What one pending request costs beyond its features: the entry, its id string, the
# dict slot and the recent-id entry it later becomes (measured with sys.getsizeof,
# rounded up). The features are at most max_channels int32 slots and float64 values.
_PENDING_ENTRY_BYTES = 512
_RECENT_ID_BYTES = 256
_FEATURE_BYTES_PER_CHANNEL = 4 + 8
_ARRAY_OVERHEAD_BYTES = 2 * 112
# A stream's bookkeeping beyond its learner: topic strings, counters, metrics rows.
_STREAM_OVERHEAD_BYTES = 2048
# One entry of a settled binary stream's slot table (_LeanBinary) beyond its names: the
# tuple and array headers and the dict slot (sys.getsizeof, rounded up).
_SLOT_ORDER_BYTES = 56 + 112 + 104
_METRIC_ROW_BYTES = 256


class Outbound(NamedTuple):
    """A message to publish."""

    topic: str
    payload: bytes
    qos: int
    retain: bool


class StateMismatch(ValueError):
    """A saved stream state does not fit this pipeline's learner configuration."""


class RateLimitedLog:
    """Log at most one line per key every ``interval_s`` seconds, with a count of the
    lines held back in between, so a flood of bad messages cannot flood the log.

    Keys must come from a fixed set (reject reasons), which bounds memory.

    >>> clock = iter([0.0, 1.0, 2.0, 100.0]).__next__
    >>> log = RateLimitedLog(logging.getLogger("demo"), 60.0, clock)
    >>> [log.warning("too_large", "payload is %d bytes", n) for n in (5000, 6000, 7000, 8000)]
    [True, False, False, True]
    """

    __slots__ = ("_logger", "_interval", "_clock", "_last", "_held")

    def __init__(
        self,
        log: logging.Logger,
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._logger = log
        self._interval = check_number("interval_s", interval_s, "RateLimitedLog", 0, None)
        self._clock = clock
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def warning(self, key: str, message: str, *args: Any) -> bool:
        """Log ``message % args`` under ``key`` unless one was logged too recently;
        return whether it was logged."""
        now = self._clock()
        last = self._last.get(key)
        if last is not None and now - last < self._interval:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        held = self._held.pop(key, 0)
        self._last[key] = now
        if held:
            self._logger.warning(
                "%s: " + message + " (%d more like it since the last line)", key, *args, held
            )
        else:
            self._logger.warning("%s: " + message, key, *args)
        return True


class _Stream:
    """One stream's learner, topics, counters and prequential metrics."""

    __slots__ = (
        "name",
        "learner",
        "binary",
        "multilabel",
        "metrics",
        "sides",
        "prediction_topic",
        "label_request_topic",
        "data",
        "asked",
        "label_requests",
        "learned",
        "unusable_labels",
        "last_seq",
        "seq_window",
        "seq_missing",
        "seq_duplicates",
        "seq_out_of_order",
        "seq_restarts",
        "last_received_at",
        "last_label",
        "settled_sides",
        "lean",
        "lean_checked",
    )

    def __init__(self, name: str, learner: Any, topics: Topics):
        self.name = name
        self.learner = learner
        task = learner.task  # the learner contract (edgelearn.learners.base)
        self.multilabel = task == "multilabel"
        self.binary = task == "binary"
        if self.multilabel:
            self.metrics: ClassificationMetrics | MultiLabelMetrics = MultiLabelMetrics()
        elif self.binary:
            # The stream's own two labels, whatever they are ("occupied"/"empty",
            # 1/0, True/False): metrics count the positive one (True/1, else the
            # first seen), the learner's rule.
            self.metrics = ClassificationMetrics(positive=True)
        else:
            self.metrics = ClassificationMetrics(max_labels=learner.targets.capacity + 1)
        self.sides = BinaryTargets(name) if self.binary else None
        if self.sides is not None:
            self.sides.load(learner.targets.to_state())  # a restored learner's labels
        # Built once: Topics checks the id on every call, too slow per message.
        self.prediction_topic = topics.prediction(name)
        self.label_request_topic = topics.label_request(name)
        self.data = 0
        self.asked = 0
        self.label_requests = 0
        self.learned = 0
        self.unusable_labels = 0
        self.last_seq = -1  # -1: none yet, or unknown (restored after a crash)
        self.seq_window = 0  # bit i: seq last_seq - i arrived (the last SEQ_WINDOW)
        self.seq_missing = 0
        self.seq_duplicates = 0
        self.seq_out_of_order = 0
        self.seq_restarts = 0
        self.last_received_at = math.nan
        self.last_label = None  # the latest prediction (Home Assistant's state)
        # Binary streams whose two labels are settled (both the stream's and the
        # learner's): label -> is it the positive one, so the usual message skips
        # the label checks (their verdict cannot change once both are full).
        self.settled_sides: dict = {}
        # A binary stream whose labels are settled: what its one-call path
        # needs (_LeanBinary), built by Pipeline._settle; None until then.
        self.lean: _LeanBinary | None = None
        self.lean_checked = 0  # len(settled_sides) when _settle last looked

    _COUNTERS = ("data", "asked", "label_requests", "learned", "unusable_labels",
                 *SEQUENCE_COUNTERS)

    def counters(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self._COUNTERS}

    def status(self) -> dict[str, Any]:
        channels = self.learner.channels
        metrics = self.metrics
        if self.multilabel:
            scores = {"hamming_loss": metrics.hamming_loss, "micro_f1": metrics.micro_f1}
        else:
            scores = {"accuracy": metrics.accuracy, "f1": metrics.f1}
        return {
            **self.counters(),
            "last_seq": self.last_seq,
            "scored": metrics.n,
            **scores,
            "query_rate": self.asked / self.data if self.data else 0.0,
            "channels": channels.n_assigned,
            "channels_ignored": channels.n_ignored,
            "channels_evicted": channels.n_evicted,
            "memory_bytes": self.learner.memory_bytes(),
        }




class _LeanBinary:
    """What a binary stream whose two labels are settled (the stream's and its
    learner's) needs to predict, score and learn a reading in one kernel call
    (``decide_learn_claimed``: PAACDS, ActiveAROW), all looked up once: the label a margin
    predicts and whether it is the stream's positive one, and per settled label its
    verdict and the learner's sign for it. Nothing here can change once both sides
    are settled."""

    __slots__ = ("decide_learn", "space", "predicted", "zero_positive", "guess", "labels",
                 "slots_of", "layout", "learn_if_asked")

    #: Name orders whose slots are kept (a stream's sensors send one or a few, and
    #: channels that drop out make a few more), of readings of at most SLOT_NAMES
    #: channels; others are claimed name by name.
    SLOT_ORDERS = 16
    SLOT_NAMES = 8

    @classmethod
    def memory_bytes(cls, max_name_bytes: int) -> int:
        """The most the slot table can hold: per order a tuple of names (kept alive
        with it), a slots array and the dict entry."""
        per_name = 8 + 4 + 49 + max_name_bytes  # tuple entry, slot, the str itself
        return cls.SLOT_ORDERS * (_SLOT_ORDER_BYTES + cls.SLOT_NAMES * per_name)

    def __init__(self, stream: _Stream, label_policy: str):
        # "from_data" replays learn a recorded label only when the learner asked.
        self.learn_if_asked = label_policy == "from_data"
        learner = stream.learner
        targets = learner.targets
        settled = stream.settled_sides
        self.decide_learn = learner.decide_learn_claimed
        self.space = learner.channels
        # The slots of the channel names in a reading's order, while no slot changes
        # hands (the space's counts of assigned and evicted slots stay as they were).
        self.slots_of: dict[tuple, np.ndarray] = {}
        self.layout = (-1, -1)
        # Index: the margin's side (what decide_one's label is made of); a margin of
        # exactly 0 is the learner's call (PAACDS: positive, ActiveAROW: negative).
        self.predicted = (targets.decode(False), targets.decode(True))
        self.zero_positive = learner.zero_margin_positive
        self.guess = tuple(settled[p][1] for p in self.predicted)
        # label -> (its type, truth for the metrics, the learner's sign of it)
        self.labels = {
            label: (kind, truth, targets.known_sign(label))
            for label, (kind, truth) in settled.items()
            if targets.known_sign(label)
        }

    def claim(self, channels: dict) -> tuple[np.ndarray, np.ndarray]:
        """``space.claim(channels)``, the slots of a known name order looked up once:
        the same arrays (every channel dict the pipeline passes holds finite floats,
        which claim takes as they are). A cached slots array is shared by the readings
        of its order; nothing writes to one (kernels, the label table and the journal
        only read slots)."""
        space = self.space
        if (space.n_assigned, space.n_evicted) != self.layout:
            self.slots_of.clear()
            self.layout = (space.n_assigned, space.n_evicted)
        names = tuple(channels)
        slots = self.slots_of.get(names)
        if slots is None:
            slots, z = space.claim(channels)
            if (len(slots) == len(names) <= self.SLOT_NAMES
                    and len(self.slots_of) < self.SLOT_ORDERS):
                self.slots_of[names] = slots  # cleared above if this claimed a slot
            return slots, z
        return slots, np.fromiter(channels.values(), np.float64, len(names))

    @staticmethod
    def fits(stream: _Stream) -> bool:
        """Whether ``stream`` can take the one-call path now."""
        learner = stream.learner
        if not (stream.binary and learner.can("decide_learn")
                and len(learner.targets.labels) == 2):
            return False
        settled = stream.settled_sides
        for code in (False, True):
            known = settled.get(learner.targets.decode(code))
            if known is None or known[0] is not learner.targets.decode(code).__class__:
                return False
        return True


class Pipeline:
    """Decode, route to per-stream learners, and build the outbound messages.

    Parameters
    ----------
    learner_kind, learner_params
        What every new stream gets: ``edgelearn.make_learner(kind, params)``.
        Checked at construction (a bad configuration raises ``ValueError`` here,
        not on the first message).
    topics, limits
        Topic layout and inbound bounds (:mod:`firmware_bridge.protocol`).
    max_streams
        Most streams served; data for a further stream is rejected as
        ``"too_many_streams"``.
    pending_capacity, label_ttl_s, recent_capacity
        The pending label table (:class:`~firmware_bridge.labels.PendingLabels`):
        most requests waiting at once, seconds an answer may take, closed ids
        remembered (``None``: ``pending_capacity``).
    label_policy
        ``"request"``, ``"from_data"`` or ``"all"`` (see the module docstring).
    clock
        Monotonic seconds, for label TTLs and log rate limits.
    gateway_id
        Prefix of label request ids (1 to 24 of ``A-Z a-z 0-9 _ . : -``).
    prediction_qos, label_request_qos
        QoS of the outbound messages.
    log_interval_s
        Seconds between log lines per reject reason.
    json_fields
        How JSON sensor objects on the data topic become readings
        (:class:`~firmware_bridge.protocol.JsonFields`; default: accepted, no label).
    """

    #: What the parameters the pipeline checks itself may be (edgelearn.constraints);
    #: the learner's are its own, the label table's are PendingLabels'.
    _parameter_constraints = {
        "topics": OneOf(Options(None), InstanceOf(Topics, description="a Topics")),
        "limits": InstanceOf(Limits, description="a Limits", example=Limits),
        "max_streams": Interval(int, 1, None),
        "label_policy": Options(*LABEL_POLICIES),
        "prediction_qos": Options(0, 1, 2),
        "label_request_qos": Options(0, 1, 2),
        "json_fields": OneOf(Options(None), InstanceOf(JsonFields, description="a JsonFields")),
    }

    def __init__(
        self,
        learner_kind: str,
        learner_params: dict | None = None,
        topics: Topics | None = None,
        limits: Limits = DEFAULT_LIMITS,
        max_streams: int = 32,
        pending_capacity: int = 1024,
        label_ttl_s: float = 3600.0,
        label_policy: str = "request",
        clock: Callable[[], float] = time.monotonic,
        *,
        gateway_id: str = "gw1",
        recent_capacity: int | None = None,
        prediction_qos: int = 1,
        label_request_qos: int = 1,
        log_interval_s: float = 60.0,
        json_fields: JsonFields | None = None,
    ):
        checked = check_params("Pipeline", {
            "topics": topics, "limits": limits,
            "max_streams": max_streams, "label_policy": label_policy,
            "prediction_qos": prediction_qos, "label_request_qos": label_request_qos,
            "json_fields": json_fields,
        }, self._parameter_constraints)
        owner = "Pipeline"
        self.topics = Topics() if topics is None else topics
        self.limits = limits
        self.json_fields = DEFAULT_JSON_FIELDS if json_fields is None else json_fields
        self.max_streams = checked["max_streams"]
        self.label_policy = checked["label_policy"]
        self.prediction_qos = checked["prediction_qos"]
        self.label_request_qos = checked["label_request_qos"]
        self.learner_kind = learner_kind
        self.learner_params = dict(learner_params or {})
        # One learner built now: a bad kind or parameter fails here, and it gives the
        # per-stream memory for the status message.
        prototype = edgelearn.make_learner(learner_kind, self.learner_params)
        self._prototype = prototype
        self._learner_class = type(prototype)
        self._learner_params_norm = prototype.get_params()
        self._learner_bytes = prototype.memory_bytes()
        # Metric rows a stream keeps: multi-label and binary metrics keep none per label.
        self._n_labels = 1 if prototype.task == "multilabel" else prototype.targets.capacity + 1
        name_room = prototype.channels.max_name_length
        if limits.max_channel_name_bytes > name_room:
            # ChannelSpace counts characters, the protocol bytes: bytes <= room is enough.
            raise ValueError(
                f"The 'limits' parameter of {owner} must have max_channel_name_bytes <= "
                f"{name_room} (the longest channel name a {self._learner_class.__name__} "
                f"keeps). Got {limits.max_channel_name_bytes}."
            )
        self.labels = PendingLabels(
            pending_capacity,
            label_ttl_s,
            clock=clock,
            id_prefix=gateway_id,
            recent_capacity=recent_capacity,
        )
        self.gateway_id = gateway_id
        self._clock = clock
        self._log = RateLimitedLog(logger, log_interval_s, clock)
        self._streams: dict[str, _Stream] = {}
        self._rejects = RejectCounters()
        self._own_rejects = dict.fromkeys(PIPELINE_REJECTS, 0)
        self._messages = 0
        self._data = 0
        self._label_messages = 0
        self._predictions = 0
        self._label_requests = 0
        self._asked = 0
        self._learned = 0
        self._batches = 0
        self._sequence_counts = dict.fromkeys(SEQUENCE_COUNTERS, 0)
        self.on_learn: Callable[[str, int, Any, Any, Any], None] | None = None
        """Called as ``on_learn(stream, n, slots, z, y)`` when a stream learns its
        ``n``-th label (``n`` counts from 0, as the ``learned`` counter), before
        :meth:`handle` returns: before the learner takes it, or, on the one-call path
        of settled binary streams (:meth:`_predict_lean`), right after it took
        it and the counts say so; the gateway journals it there
        (:mod:`firmware_bridge.journal`)."""
        self.on_learn_batch: Callable[..., None] | None = None
        """If set, a jitted batch tells its lessons here at once instead, as
        ``on_learn_batch(stream, n, counts, slots, z, codes, labels)``: lessons ``n,
        n + 1, ...``, lesson i with the next ``counts[i]`` of ``slots``/``z`` and the
        label ``labels[codes[i]]`` (:meth:`LabelJournal.append_batch
        <firmware_bridge.journal.LabelJournal.append_batch>`)."""
        # The fast path (see handle): data topics of the streams that exist, names
        # that passed the rules, a decoder and an encoder set up once.
        self._data_topics: dict[str, _Stream] = {}
        self._names = KnownNames(limits.max_channel_name_bytes)
        self._unpack = bounded_unpackb(limits)
        self._pack = msgpack.Packer(use_bin_type=True).pack
        # A batch of plain readings nests 4 deep (message, readings, reading, ch).
        self._fast_batches = limits.max_depth >= 4
        # Batches of binary PAACDS streams: one jitted decode and one jitted learner
        # pass per batch (_jitted_batch); the decoder is made on the first batch.
        self._jitted_batches = self._fast_batches and prototype.can("batch_pass")
        self._batch_decoder: Any = None
        # Binary PAACDS streams take the one-call path once their labels are settled.
        # (PAACDS is not imported here: a gateway loads only its own learner kind.)
        self._lean_streams = prototype.can("decide_learn")

    # -- the per-message path --------------------------------------------------

    def handle(self, topic: str, payload: bytes, received_at: float) -> list[Outbound]:
        """Process one inbound MQTT message; return what to publish (possibly nothing).

        Never raises for anything a client can send.
        """
        self._messages += 1
        # Fast path: a data message (or batch) on a known stream's topic whose readings
        # are all plain (protocol.plain_reading): one cached topic lookup, one decode,
        # no checks it does not need. Anything else, and anything wrong, goes the full
        # way below, which gives every verdict; both end in the same _answer code.
        stream = self._data_topics.get(topic)
        if (
            stream is not None
            and type(payload) is bytes
            and len(payload) <= self.limits.max_payload_bytes
        ):
            if self._jitted_batches and payload[:1] == b"\x81":  # a map of one key: a batch?
                out = self._jitted_batch(stream, payload, received_at)
                if out is not None:
                    return out
            try:
                obj = self._unpack(payload)
            except Exception:  # the full path names what is wrong
                obj = None
            if type(obj) is dict:
                reading = plain_reading(obj, self.limits, self._names)
                if reading is not None:
                    return self._answer(stream, reading, received_at)
                if len(obj) == 1 and self._fast_batches:
                    readings = obj.get("readings")
                    if type(readings) is list and 0 < len(readings) <= self.limits.max_batch_readings:
                        limits, names = self.limits, self._names
                        plain = [plain_reading(r, limits, names) for r in readings]
                        if None not in plain:
                            return self._answer_batch(stream, plain, received_at)
        message = parse_message(topic, payload, self.topics, self.limits, self.json_fields)
        if isinstance(message, DataMessage):
            if message.non_finite:
                self._rejects.count(message)
            stream = self._stream(message.stream)
            if stream is None:
                return []
            seq, ts = message.seq, message.ts
            if seq < 0:  # a JSON sensor object without "seq": the gateway numbers it
                seq = stream.last_seq + 1
            if ts != ts:  # ... and without "ts": stamped with its receive time
                ts = received_at
            return self._answer(stream, (ts, seq, message.channels, message.y), received_at)
        if isinstance(message, DataBatch):
            self._rejects.count(message)
            for index, reject in message.rejects:
                self._log.warning(reject.reason, "%s (reading %d of a batch on topic %.80r)",
                                  reject.detail, index, topic)
            stream = self._stream(message.stream) if message.readings else None
            if stream is None:
                return []
            return self._answer_batch(
                stream, [(r.ts, r.seq, r.channels, r.y) for r in message.readings], received_at
            )
        if isinstance(message, LabelMessage):
            self._handle_label(message)
            return []
        self._rejects.count(message)
        self._log.warning(message.reason, "%s (topic %.80r)", message.detail, topic)
        return []

    def _stream(self, name: str) -> _Stream | None:
        stream = self._streams.get(name)
        if stream is not None:
            return stream
        if len(self._streams) >= self.max_streams:
            self._reject(
                "too_many_streams",
                "stream %r is beyond max_streams=%d",
                name,
                self.max_streams,
            )
            return None
        learner = edgelearn.make_learner(self.learner_kind, self.learner_params)
        stream = _Stream(name, learner, self.topics)
        self._add(stream)
        return stream

    def _add(self, stream: _Stream) -> None:
        self._streams[stream.name] = stream
        try:
            self._data_topics[self.topics.data(stream.name)] = stream
        except ValueError:  # a reserved id (only restore() can bring one): no fast path
            pass

    def _reject(self, reason: str, message: str, *args: Any) -> None:
        self._own_rejects[reason] += 1
        self._log.warning(reason, message, *args)

    def _answer(self, stream: _Stream, reading: tuple, received_at: float) -> list[Outbound]:
        """The prediction message (and any label request) for one accepted reading."""
        result = self._predict(stream, reading, received_at)
        if result is None:
            return []
        fields, request = result
        try:
            payload = self._pack(fields)
        except TypeError:  # a learner that returns NumPy scalars: convert them
            payload = encode_prediction(**fields)
        prediction = Outbound(stream.prediction_topic, payload, self.prediction_qos, False)
        return [prediction] if request is None else [prediction, request]

    def _answer_batch(self, stream: _Stream, readings: list, received_at: float) -> list[Outbound]:
        """One prediction message for the accepted readings of a batch (in batch
        order), then the label requests of its readings, as for single readings."""
        predictions = []
        requests = []
        for reading in readings:
            result = self._predict(stream, reading, received_at)
            if result is not None:
                predictions.append(result[0])
                if result[1] is not None:
                    requests.append(result[1])
        if not predictions:
            return requests
        try:
            payload = self._pack({"predictions": predictions})
        except TypeError:
            payload = self._pack({"predictions": [prediction_fields(**p) for p in predictions]})
        self._batches += 1
        return [Outbound(stream.prediction_topic, payload, self.prediction_qos, False), *requests]

    #: Names and labels the batch decoder may know before it starts over (its
    #: tables are memory the pipeline bounds, whatever names arrive).
    _DECODER_ENTRIES = 4096

    def _jitted_batch(self, stream: _Stream, payload: bytes, received_at: float) -> list[Outbound] | None:
        """A batch of plain readings in one jitted decode, one jitted learner pass
        and one jitted write of the prediction message
        (:mod:`firmware_bridge.jitted_rows`,
        :mod:`firmware_bridge.kernels.pack_predictions`), with what
        :meth:`_answer_batch` gives reading by reading (the label journal included);
        None when the batch needs that path: the decoder is not sure of it, or its
        readings list channels in differing orders."""
        from .jitted_rows import run_pass  # (it imports this module)

        decoder = self._decoder()
        decoded = decoder.decode_payloads([payload])
        if decoded.kind[0] != REC_BATCH:
            return None
        columns = column_order(decoded.pair_name, decoded.pair_count, len(decoder.names))
        if not columns.shape[0] and decoded.pair_name.shape[0]:
            return None
        seq, ts = decoded.seq, decoded.ts
        arrays = (seq, ts, decoded.label, np.full(seq.shape[0], received_at),
                  decoded.pair_count, decoded.pair_name, decoded.pair_value)
        result = run_pass(self, stream.name, arrays, columns, decoder)
        packed = pack_predictions(seq, ts, result.label_index,
                                  [self._pack_label(y) for y in result.labels],
                                  result.margin, result.asked)
        self._batches += 1
        return [Outbound(stream.prediction_topic, packed, self.prediction_qos, False), *result.requests]

    def handle_many(self, items: Sequence[Sequence]) -> list[list[Outbound]]:
        """:meth:`handle` for each ``(topic, payload, received_at)`` of ``items`` (the
        first three fields of each: the gateway hands its inbound messages over as they
        are, with no tuple made per message): what
        each gives, the same outputs, counters and learner states. In a run of batch
        messages of binary PAACDS streams (nothing else between them) each stream's
        share one decode call and one learner pass (and one label journal record):
        their rows are the stream's rows in order, as offline replay runs a log's
        chunk. Each message still gets its own prediction message and label
        requests; only label requests of different streams may be issued in another
        order than one by one (each stream's keep theirs)."""
        results: list[list[Outbound]] = []
        i = 0
        while i < len(items):
            # A run of batch messages of known streams (interleaved, as sensors send):
            # each stream's in one pass, in their order. Streams share no learner, so
            # only the order in which different streams' label requests are issued
            # can differ from handle() one by one.
            streams = []
            end = i
            while end < len(items) and (stream := self._groupable(items[end])) is not None:
                streams.append(stream)
                end += 1
            if end - i < 2:
                item = items[i]
                results.append(self.handle(item[0], item[1], item[2]))
                i += 1
                continue
            answers: list = [None] * (end - i)
            for stream in dict.fromkeys(streams):
                mine = [k for k, s in enumerate(streams) if s is stream]
                group = [items[i + k] for k in mine]
                got = (self._jitted_batches_of(stream, group) if len(group) > 1
                       else [self.handle(group[0][0], group[0][1], group[0][2])])
                for k, out in zip(mine, got):
                    answers[k] = out
            results += answers
            i = end
        return results

    def _groupable(self, item: Sequence) -> _Stream | None:
        # The stream of a message handle() would try as a jitted batch, or None.
        topic, payload = item[0], item[1]
        if not self._jitted_batches or type(payload) is not bytes or payload[:1] != b"\x81":
            return None
        if len(payload) > self.limits.max_payload_bytes:
            return None
        return self._data_topics.get(topic)

    def _jitted_batches_of(self, stream: _Stream, items: list) -> list[list[Outbound]]:
        """Batch messages of ``stream`` (two or more) as :meth:`_jitted_batch` would
        take them one after the other, in one decode and one learner pass: the
        leading ones the decoder is sure of whose readings list channels in one
        order; the rest one by one through :meth:`handle`."""
        from .jitted_rows import run_pass  # (it imports this module)

        decoder = self._decoder()
        decoded = decoder.decode_payloads([item[1] for item in items])
        sure = decoded.kind == REC_BATCH
        taken = int(sure.argmin()) if not sure.all() else len(items)
        columns = np.empty(0, dtype=np.int64)
        if taken >= 2:
            rows = int(decoded.first[taken - 1] + decoded.count[taken - 1])
            pairs = int(decoded.pair_count[:rows].sum())
            columns = column_order(decoded.pair_name[:pairs], decoded.pair_count[:rows],
                                   len(decoder.names))
            if not columns.shape[0] and pairs:
                taken = 0  # the rows disagree on an order: each message alone
        if taken < 2:
            return [self.handle(item[0], item[1], item[2]) for item in items]
        self._messages += taken
        rows = int(decoded.first[taken - 1] + decoded.count[taken - 1])
        pairs = int(decoded.pair_count[:rows].sum())
        seq, ts = decoded.seq[:rows], decoded.ts[:rows]
        received = np.repeat([item[2] for item in items[:taken]],
                             decoded.count[:taken])
        arrays = (seq, ts, decoded.label[:rows], received, decoded.pair_count[:rows],
                  decoded.pair_name[:pairs], decoded.pair_value[:pairs])
        result = run_pass(self, stream.name, arrays, columns, decoder)
        labels = [self._pack_label(y) for y in result.labels]
        # each message's label requests: those of its rows first[m] .. first[m + 1] - 1
        request_at = np.searchsorted(np.asarray(result.request_rows, dtype=np.int64),
                                     np.append(decoded.first[:taken], rows)).tolist()
        out = []
        for m in range(taken):
            begin, end = int(decoded.first[m]), int(decoded.first[m] + decoded.count[m])
            packed = pack_predictions(seq[begin:end], ts[begin:end],
                                      result.label_index[begin:end], labels,
                                      result.margin[begin:end], result.asked[begin:end])
            self._batches += 1
            out.append([Outbound(stream.prediction_topic, packed, self.prediction_qos, False),
                        *result.requests[request_at[m]:request_at[m + 1]]])
        return out + [self.handle(item[0], item[1], item[2]) for item in items[taken:]]

    def _decoder(self) -> FastDecoder:
        # The batch decoder, made anew once its tables hold _DECODER_ENTRIES.
        decoder = self._batch_decoder
        if decoder is None or len(decoder.names) + len(decoder.labels) > self._DECODER_ENTRIES:
            decoder = self._batch_decoder = FastDecoder(self.limits)
        return decoder

    def _pack_label(self, y: Any) -> bytes:
        try:
            return self._pack(y)
        except TypeError:  # a NumPy scalar: as prediction_fields gives it
            return self._pack(prediction_fields(0, 0.0, y, 0.0, False)["y"])

    def _predict(
        self, stream: _Stream, reading: tuple, received_at: float
    ) -> tuple[dict[str, Any], Outbound | None] | None:
        """Predict one reading ``(ts, seq, channels, y)``, learn or request its label as
        the policy says; return its prediction map and label request (or None), or None
        if the learner refused it (counted)."""
        ts, seq, channels, y = reading
        lean = stream.lean
        if lean is not None:
            if y is None:
                known = _UNLABELLED
            else:
                known = lean.labels.get(y) if y.__class__ in _SETTLED_TYPES else None
                if known is not None and known[0] is not y.__class__:
                    known = None
            if known is not None:
                return self._predict_lean(stream, lean, ts, seq, channels, y, known, received_at)
        learner = stream.learner
        try:
            decision = learner.decide_one(channels)
        except (ValueError, TypeError) as exc:
            self._reject("learner_error", "stream %r seq %d: %s", stream.name, seq, exc)
            return None
        self._data += 1
        stream.data += 1
        if seq == stream.last_seq + 1:  # the usual case: the next one
            stream.last_seq = seq
            stream.seq_window = ((stream.seq_window << 1) | 1) & _WINDOW_MASK
        else:
            self._sequence(stream, seq)
        stream.last_received_at = received_at
        label, ask = decision.label, decision.ask
        stream.last_label = label
        if ask:
            self._asked += 1
            stream.asked += 1
        fields = {"seq": seq, "ts": ts, "y": label, "score": decision.score, "query": ask}
        self._predictions += 1
        request = None
        if y is None:
            if ask and self.label_policy == "request":
                request = self._label_request(stream, seq, ts, label, decision.score,
                                              decision.slots, decision.z)
        elif self._score(stream, y, label) and (self.label_policy != "from_data" or ask):
            self._learn(stream, decision.slots, decision.z, y)
        if len(stream.settled_sides) != stream.lean_checked:
            self._settle(stream)
        return fields, request

    def _settle(self, stream: _Stream) -> None:
        """Give a binary stream whose labels are settled its learner's one-call path, if
        it has one (or take it back: labels settled since are looked up again)."""
        stream.lean_checked = len(stream.settled_sides)
        stream.lean = _LeanBinary(stream, self.label_policy) if _LeanBinary.fits(stream) else None

    def _predict_lean(self, stream: _Stream, lean: _LeanBinary, ts: float, seq: int,
                      channels: dict, y: Any, known: tuple, received_at: float
                      ) -> tuple[dict[str, Any], Outbound | None] | None:
        """:meth:`_predict` of a reading of a settled binary stream (PAACDS, ActiveAROW)
        whose label is settled or absent (``known``: its type, verdict and the learner's
        sign): one kernel call observes, predicts, decides to ask and learns the label as
        the policy says; the same state, outputs and counts as ``decide_one``,
        ``_score`` and ``_learn``. ``on_learn`` hears of the lesson after the learner
        took it and the counts say so, so a checkpoint it writes holds the lesson with
        its count (the message is not acknowledged before the journal has it either
        way)."""
        try:
            slots, z = lean.claim(channels)
        except (ValueError, TypeError) as exc:
            self._reject("learner_error", "stream %r seq %d: %s", stream.name, seq, exc)
            return None
        margin, ask, learned = lean.decide_learn(slots, z, known[2], lean.learn_if_asked)
        self._data += 1
        stream.data += 1
        if seq == stream.last_seq + 1:
            stream.last_seq = seq
            stream.seq_window = ((stream.seq_window << 1) | 1) & _WINDOW_MASK
        else:
            self._sequence(stream, seq)
        stream.last_received_at = received_at
        positive = margin > 0.0 or (margin == 0.0 and lean.zero_positive)
        label = stream.last_label = lean.predicted[positive]
        if ask:
            self._asked += 1
            stream.asked += 1
        fields = {"seq": seq, "ts": ts, "y": label, "score": margin, "query": ask}
        self._predictions += 1
        if y is None:
            if ask and self.label_policy == "request":
                return fields, self._label_request(stream, seq, ts, label, margin, slots, z)
            return fields, None
        stream.metrics.update(known[1], lean.guess[positive])
        if learned:
            n = stream.learned
            self._learned += 1
            stream.learned += 1
            if self.on_learn is not None:
                self.on_learn(stream.name, n, slots, z, y)
        return fields, None

    def _label_request(self, stream: _Stream, seq: int, ts: float, label: Any, score: float,
                       slots: Any, z: Any) -> Outbound:
        req = self.labels.issue(stream.name, seq, (slots, z), label)
        self._label_requests += 1
        stream.label_requests += 1
        return Outbound(
            stream.label_request_topic,
            encode_label_request(
                req, seq, ts, label, score, self.labels.ttl_seconds,
                stream.learner.targets.labels if stream.multilabel else None,
            ),
            self.label_request_qos,
            False,
        )

    def _sequence(self, stream: _Stream, seq: int) -> None:
        """Account for a reading whose ``seq`` is not the one after the last."""
        last = stream.last_seq
        if last < 0:  # the stream's first reading (or the first after a crash)
            stream.last_seq, stream.seq_window = seq, 1
        elif seq > last:
            gap = seq - last - 1
            stream.seq_missing += gap
            self._sequence_counts["seq_missing"] += gap
            stream.last_seq = seq
            stream.seq_window = (
                ((stream.seq_window << (gap + 1)) | 1) & _WINDOW_MASK if gap < SEQ_WINDOW else 1
            )
            self._log.warning("seq_gap", "stream %r: %d message(s) missing (seq %d after %d)",
                              stream.name, gap, seq, last)
        elif seq == 0 or last - seq >= SEQ_WINDOW:
            stream.seq_restarts += 1
            self._sequence_counts["seq_restarts"] += 1
            stream.last_seq, stream.seq_window = seq, 1
            self._log.warning("seq_restart", "stream %r: seq %d after %d (the sensor "
                              "restarted?)", stream.name, seq, last)
        else:
            bit = 1 << (last - seq)
            if seq == last or stream.seq_window & bit:
                stream.seq_duplicates += 1
                self._sequence_counts["seq_duplicates"] += 1
            else:  # late, but it came: no longer missing
                stream.seq_window |= bit
                stream.seq_out_of_order += 1
                stream.seq_missing -= 1
                self._sequence_counts["seq_out_of_order"] += 1
                self._sequence_counts["seq_missing"] -= 1

    def forget_last_seq(self, stream: str) -> None:
        """Forget where ``stream``'s sequence stood (a checkpoint written before a
        crash: readings after it were processed, so a gap from it would be false)."""
        entry = self._streams[stream]
        entry.last_seq, entry.seq_window = -1, 0

    def _score(self, stream: _Stream, y: Any, predicted: Any) -> bool:
        """Count the prediction against the true label ``y``; False if the stream's
        learner cannot take ``y`` (counted as ``"unusable_label"``)."""
        if stream.binary:
            # label -> (its type, verdict): 1 and True are one dict key, so the type
            # is checked too; a label of the other type just takes the full checks.
            settled = stream.settled_sides
            known_y = settled.get(y) if y.__class__ in _SETTLED_TYPES else None
            if known_y is not None and known_y[0] is y.__class__:
                known_p = settled.get(predicted)
                if known_p is not None and known_p[0] is predicted.__class__:
                    stream.metrics.update(known_y[1], known_p[1])
                    return True
        problem = _label_problem(stream, y)
        if problem:
            self._unusable(stream, y, problem)
            return False
        if stream.binary:
            truth = stream.sides.sign(y) > 0
            # A prediction that is neither of the stream's labels (a learner that
            # knows none yet predicts False) is wrong either way.
            if predicted in stream.sides.labels:
                guess = stream.sides.sign(predicted) > 0
            else:
                guess = not truth
            stream.metrics.update(truth, guess)
            if (y.__class__ in _SETTLED_TYPES and None not in stream.sides.to_state()
                    and len(stream.learner.targets.labels) == 2 and len(stream.settled_sides) < 8):
                settled = stream.settled_sides
                settled.setdefault(y, (y.__class__, truth))
                for label in stream.sides.labels:  # what predictions are made of
                    if label.__class__ in _SETTLED_TYPES:
                        settled.setdefault(label, (label.__class__, stream.sides.sign(label) > 0))
            return True
        try:
            stream.metrics.update(y, predicted)
        except ValueError as exc:  # more distinct labels than the learner has classes
            self._unusable(stream, y, str(exc))
            return False
        return True

    def _unusable(self, stream: _Stream, y: Any, why: str) -> None:
        stream.unusable_labels += 1
        self._reject("unusable_label", "stream %r: label %.40r: %s", stream.name, y, why)

    def _learn(self, stream: _Stream, slots: Any, z: Any, y: Any) -> bool:
        """Teach ``stream`` label ``y`` of the features ``(slots, z)``; return whether
        it learned. ``on_learn`` (the gateway's label journal) hears of it first, so
        a crash right after the update cannot lose it."""
        if self.on_learn is not None:
            self.on_learn(stream.name, stream.learned, slots, z, y)
        try:
            stream.learner.learn(slots, z, y)
        except ValueError as exc:
            self._unusable(stream, y, str(exc))
            return False
        except TypeError as exc:
            self._reject("learner_error", "stream %r: learn(%.40r): %s", stream.name, y, exc)
            return False
        self._learned += 1
        stream.learned += 1
        return True

    def _handle_label(self, message: LabelMessage) -> None:
        self._label_messages += 1
        labels = self.labels
        # Looked up, not closed: an answer the stream's learner cannot take leaves the
        # request open, so a correct answer sent after it (within the TTL) is learned.
        result = labels.lookup(message.req, message.stream)
        if isinstance(result, PendingEntry):
            stream = self._streams.get(result.stream)
            if stream is None:  # restore() replaced the stream set; nothing to teach
                labels.settle(result)
                return
            problem = _label_problem(stream, message.y)
            if problem:
                self._unusable(stream, message.y, problem)
                return
            slots, z = result.features
            if self._learn(stream, slots, z, message.y):
                labels.settle(result)
            return
        self._log.warning(
            f"label_{result.value}",
            "answer to request %.64r on stream %r not applied",
            message.req,
            message.stream,
        )

    def expire_labels(self) -> int:
        """Drop label requests whose TTL ran out; return how many (the gateway calls
        this now and then so an idle stream's requests do not linger)."""
        return self.labels.expire()

    # -- reporting -------------------------------------------------------------

    @property
    def task(self) -> str:
        """The task of every stream's learner (``edgelearn.learners.base.TASKS``)."""
        return self._prototype.task

    def learner_can(self, capability: str) -> bool:
        """Whether the streams' learners can do ``capability``
        (``edgelearn.learners.base.CAPABILITIES``)."""
        return self._prototype.can(capability)

    @property
    def streams(self) -> list[str]:
        """Stream ids served so far, in order of first message."""
        return list(self._streams)

    def learner(self, stream: str) -> Any:
        """The learner of ``stream`` (``KeyError`` if the stream has none)."""
        return self._streams[stream].learner

    def revision(self, stream: str) -> int:
        """A number that changes whenever ``stream``'s learner does (messages observed
        plus labels learned), so a checkpointer can skip streams that stood still."""
        entry = self._streams[stream]
        return entry.data + entry.learned

    def layout(self, stream: str) -> tuple[int, int]:
        """What ``stream``'s slots mean, as a pair that changes whenever its channel
        map does: (channels assigned, channels evicted)."""
        channels = self._streams[stream].learner.channels
        return channels.n_assigned, channels.n_evicted

    def relearn(self, stream: str, n: int, layout: tuple[int, int], slots: Any, z: Any,
                y: Any) -> str:
        """Teach ``stream`` a journaled lesson (:mod:`firmware_bridge.journal`): its
        ``n``-th label, with the features kept at prediction time. Returns
        ``"replayed"``; ``"skipped"`` if the stream has learned it already (``n`` below
        its ``learned`` count); ``"out_of_order"`` if an earlier one is missing;
        ``"layout_mismatch"`` if the stream's channel map is not the one the slots
        refer to; ``"failed"`` if the learner refuses it (as it did live)."""
        entry = self._streams[stream]
        if n < entry.learned:
            return "skipped"
        if n > entry.learned:
            return "out_of_order"
        if self.layout(stream) != tuple(layout):
            return "layout_mismatch"
        try:
            entry.learner.learn(slots, z, y)
        except (ValueError, TypeError):
            return "failed"
        self._learned += 1
        entry.learned += 1
        return "replayed"
    def stream_counters(self, stream: str) -> dict[str, int]:
        """``stream``'s counters: data, asked, label_requests, learned, unusable_labels."""
        return self._streams[stream].counters()

    def last_prediction(self, stream: str) -> Any:
        """The label last predicted for ``stream`` (``None`` before its first reading)."""
        return self._streams[stream].last_label

    def positive_label(self, stream: str) -> Any:
        """The label a binary ``stream`` predicts on its positive side, in the user's own
        form (``True`` until the learner has seen a label)."""
        return self._streams[stream].learner.targets.decode(True)

    def is_binary(self, stream: str) -> bool:
        """Whether ``stream``'s learner predicts True/False."""
        return self._streams[stream].binary

    def metrics(self, stream: str) -> ClassificationMetrics:
        """The prequential metrics of ``stream`` (``KeyError`` if unknown)."""
        return self._streams[stream].metrics

    def counters(self) -> dict[str, int]:
        """Every counter, zeros included, in a stable set of keys:

        ``messages`` (inbound MQTT messages), ``batches`` (batch messages answered),
        ``data`` (readings accepted, a batch's each), ``label_messages``,
        ``predictions`` (readings predicted), ``asked``, ``label_requests``,
        ``learned``; the sequence counters (:data:`SEQUENCE_COUNTERS`, summed over
        streams); each protocol reject reason and ``non_finite_values``; each of :data:`PIPELINE_REJECTS`; the label table's
        counters prefixed ``label_`` (``label_pending`` is a gauge); and ``rejected``,
        the sum of every reject.
        """
        counts = {
            "messages": self._messages,
            "batches": self._batches,
            "data": self._data,
            "label_messages": self._label_messages,
            "predictions": self._predictions,
            "asked": self._asked,
            "label_requests": self._label_requests,
            "learned": self._learned,
        }
        counts.update(self._sequence_counts)
        counts.update(self._rejects.as_dict())
        counts.update(self._own_rejects)
        for key, value in self.labels.as_dict().items():
            counts[f"label_{key}"] = value
        counts["rejected"] = (
            self._rejects.total_rejects
            + sum(self._own_rejects.values())
            + sum(counts[key] for key in _LABEL_REJECTS)
        )
        return counts

    def memory(self) -> dict[str, int]:
        """The memory budget in bytes, fixed by the construction parameters:
        ``learners`` (the streams that exist), ``learners_max`` (``max_streams`` of
        them), ``pending_labels`` (the label table when full, an estimate), and
        ``total`` (``learners_max`` + ``pending_labels``)."""
        per_stream = self._learner_bytes + _STREAM_OVERHEAD_BYTES + (
            _METRIC_ROW_BYTES * self._n_labels
        )
        if self._lean_streams:
            per_stream += _LeanBinary.memory_bytes(self.limits.max_channel_name_bytes)
        features = _FEATURE_BYTES_PER_CHANNEL * self.limits.max_channels + _ARRAY_OVERHEAD_BYTES
        pending = self.labels.capacity * (_PENDING_ENTRY_BYTES + features) + (
            self.labels.recent_capacity * _RECENT_ID_BYTES
        )
        learners_max = per_stream * self.max_streams
        return {
            "learners": sum(s.learner.memory_bytes() for s in self._streams.values()),
            "learners_max": learners_max,
            "pending_labels": pending,
            "total": learners_max + pending,
        }

    def status(self) -> dict[str, Any]:
        """Counters, per-stream status and memory, as plain values for the status
        message."""
        return {
            "learner": self.learner_kind,
            "label_policy": self.label_policy,
            "counters": self.counters(),
            "streams": {name: stream.status() for name, stream in self._streams.items()},
            "memory": self.memory(),
        }

    # -- checkpoints -----------------------------------------------------------

    def to_state(self, stream: str) -> dict[str, Any]:
        """What a checkpoint of ``stream`` holds: its learner's state and counters.

        Pending label requests and the prequential metrics are not part of it: after
        a restart, answers to older requests count as ``label_unknown_request`` and
        the metrics start again.
        """
        entry = self._streams[stream]
        return {
            "stream": stream,
            "learner": entry.learner.to_state(),
            "counters": entry.counters(),
            "last_seq": entry.last_seq,
        }

    def restore(self, stream: str, state: dict[str, Any]) -> None:
        """Give ``stream`` the learner and counters saved by :meth:`to_state`.

        Raises :class:`StateMismatch` (a ``ValueError``) if the state is not a stream
        state, is for another stream, or its learner is of another kind or has other
        parameters than this pipeline's configuration; and ``ValueError`` when
        ``max_streams`` streams exist already. Nothing changes when it raises.
        """
        reject = None if isinstance(stream, str) else "stream must be a str"
        if reject is None:
            reject = _state_problem(stream, state, self._learner_class, self._learner_params_norm)
        if reject:
            raise StateMismatch(f"cannot restore stream {stream!r}: {reject}")
        if stream not in self._streams and len(self._streams) >= self.max_streams:
            raise ValueError(
                f"cannot restore stream {stream!r}: max_streams={self.max_streams} "
                "streams exist already"
            )
        try:
            learner = edgelearn.from_state(state["learner"])
        except (KeyError, TypeError, ValueError) as exc:
            raise StateMismatch(f"cannot restore stream {stream!r}: {exc}") from None
        entry = _Stream(stream, learner, self.topics)
        for name, value in state.get("counters", {}).items():
            if name in _Stream._COUNTERS and isinstance(value, int):
                setattr(entry, name, value)
        last_seq = state.get("last_seq", -1)
        entry.last_seq = last_seq if isinstance(last_seq, int) else -1
        entry.seq_window = 1 if entry.last_seq >= 0 else 0
        self._add(entry)


# Label types whose value alone settles a binary stream's verdict (keyed with the
# type: 1, 1.0 and True are equal in Python but are not all the same label).
_SETTLED_TYPES = frozenset({str, int, bool})
# An unlabelled reading on the one-call path: no type, no verdict, nothing to learn.
_UNLABELLED = (None, None, 0.0)


def _label_problem(stream: _Stream, y: Any) -> str | None:
    """Why ``stream``'s learner cannot take the (protocol-valid) label ``y``, or None."""
    if stream.multilabel:
        if not isinstance(y, dict):
            return "a multi-label learner takes a map of label name to bool"
    elif isinstance(y, dict):
        return "multi-label maps need a multi-label learner"
    targets = stream.learner.targets
    if not targets.accepts(y):
        return f"the learner knows the labels {targets.labels!r} and can hold {targets.capacity}"
    if stream.binary and not stream.sides.accepts(y):
        return f"a binary stream whose labels were {stream.sides.labels!r}"
    return None


def _state_problem(
    stream: str, state: Any, learner_class: type, params: dict[str, Any]
) -> str | None:
    if not isinstance(state, dict) or not isinstance(state.get("learner"), dict):
        return "the state is not a stream state (no 'learner' map)"
    if state.get("stream") != stream:
        return f"the state is of stream {state.get('stream')!r}"
    learner = state["learner"]
    if learner.get("kind") != learner_class.__name__:
        return (
            f"the saved learner is a {learner.get('kind')!r}, the configuration "
            f"builds a {learner_class.__name__!r}"
        )
    saved = learner.get("params")
    if not isinstance(saved, dict):
        return "the saved learner has no parameters"
    changed = sorted(
        name for name in set(saved) | set(params) if saved.get(name) != params.get(name)
    )
    if changed:
        return "learner parameters differ from the configuration: " + ", ".join(
            f"{name} saved {saved.get(name)!r}, configured {params.get(name)!r}"
            for name in changed
        )
    return None


