"""The :class:`Pipeline`: inbound messages -> per-stream learners -> outbound messages
(the room's docstring, :mod:`firmware_bridge.pipeline`, says what it does)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import msgpack

import edgelearn
from edgelearn.constraints import InstanceOf, Interval, OneOf, Options, check_params

from ..wire import (
    DEFAULT_JSON_FIELDS,
    DEFAULT_LIMITS,
    DataBatch,
    DataMessage,
    JsonFields,
    KnownNames,
    LabelMessage,
    Limits,
    Topics,
    bounded_unpackb,
    encode_label_request,
    encode_prediction,
    parse_message,
    plain_reading,
    prediction_fields,
)
from .batches import BatchPath
from .budget import memory_budget
from .lean import UNLABELLED, LeanBinary
from .pending import PendingEntry, PendingLabels
from .ratelog import RateLimitedLog
from .streams import StateMismatch, StreamState, compile_stream_pattern, saved_stream
from .tally import Outbound, Tally
from .tasks import SETTLED_TYPES

__all__ = ["LABEL_POLICIES", "Pipeline", "StateMismatch"]

logger = logging.getLogger("firmware_bridge.pipeline")

LABEL_POLICIES = ("request", "from_data", "all")

class Pipeline:
    """Decode, route to per-stream learners, and build the outbound messages.

    Parameters
    ----------
    learner_kind, learner_params
        What every new stream gets: ``edgelearn.make_learner(kind, params)``.
        Checked at construction (a bad configuration raises ``ValueError`` here,
        not on the first message).
    topics, limits
        Topic layout and inbound bounds (:mod:`firmware_bridge.wire`).
    max_streams
        Most streams served; data for a further stream is rejected as
        ``"too_many_streams"``.
    stream_pattern
        Regular expression a new stream's name must fullmatch (``""``: any), else ``"stream_not_allowed"``.
    pending_capacity, label_ttl_s, recent_capacity
        The pending label table (:class:`~firmware_bridge.pipeline.pending.PendingLabels`):
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
        (:class:`~firmware_bridge.wire.JsonFields`; default: accepted, no label).
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
        stream_pattern: str = "",
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
        self.stream_pattern = compile_stream_pattern(stream_pattern)
        self.label_policy = checked["label_policy"]
        self.prediction_qos = checked["prediction_qos"]
        self.label_request_qos = checked["label_request_qos"]
        self.learner_kind = learner_kind
        self.learner_params = dict(learner_params or {})
        # One learner built now: a bad kind or parameter fails here, and it gives the
        # per-stream memory for the status message.
        prototype = edgelearn.make_learner(learner_kind, self.learner_params)
        self._prototype = prototype
        self._task = prototype.task
        self._learner_class = type(prototype)
        self._learner_start = None  # set_learner_start
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
        self.tally = Tally(RateLimitedLog(logger, log_interval_s, clock))
        """Totals and rejects over every stream (:class:`~.tally.Tally`)."""
        self._streams: dict[str, StreamState] = {}
        self.on_learn: Callable[[str, int, Any, Any, Any], None] | None = None
        """Called as ``on_learn(stream, n, slots, z, y)`` when a stream learns its
        ``n``-th label (``n`` counts from 0, as the ``learned`` counter), before
        :meth:`handle` returns: before the learner takes it, or, on the one-call path
        of settled binary streams (:meth:`_predict_lean`), right after it took
        it and the counts say so; the gateway journals it there
        (:mod:`firmware_bridge.service.journal`)."""
        self.on_unknown_stream: Callable[[str], bool] | None = None
        """Called with a stream not served when its data or an answer comes; True if it brought
        it back (the gateway's evicted streams: :mod:`firmware_bridge.service.admission`)."""
        self.on_learn_batch: Callable[..., None] | None = None
        """If set, a jitted batch tells its lessons here at once instead, as
        ``on_learn_batch(stream, n, counts, slots, z, codes, labels)``: lessons ``n,
        n + 1, ...``, lesson i with the next ``counts[i]`` of ``slots``/``z`` and the
        label ``labels[codes[i]]`` (:meth:`LabelJournal.append_batch
        <firmware_bridge.service.journal.LabelJournal.append_batch>`)."""
        # The fast path (see handle): data topics of the streams that exist, names
        # that passed the rules, a decoder and an encoder set up once.
        self._data_topics: dict[str, StreamState] = {}
        self._names = KnownNames(limits.max_channel_name_bytes)
        self._unpack = bounded_unpackb(limits)
        self._pack = self.pack = msgpack.Packer(use_bin_type=True).pack
        # A batch of plain readings nests 4 deep (message, readings, reading, ch).
        self._fast_batches = limits.max_depth >= 4
        # Batches of streams whose learner has a jitted batch pass (the "batch_pass"
        # capability): one jitted decode and one learner pass per batch.
        self.batch_path: BatchPath | None = (BatchPath(self) if self._fast_batches and prototype.can("batch_pass")
                         else None)
        """The jitted path of batch messages, or None when they go reading by reading
        (set it to None to compare the two)."""
        # Binary streams of a learner with a one-call kernel take it once their labels
        # are settled (the "decide_learn" capability).
        self._lean_streams = prototype.can("decide_learn")

    # -- the per-message path --------------------------------------------------

    def handle(self, topic: str, payload: bytes, received_at: float) -> list[Outbound]:
        """Process one inbound MQTT message; return what to publish (possibly nothing).

        Never raises for anything a client can send.
        """
        self.tally.messages += 1
        # Fast path: a data message (or batch) on a known stream's topic whose readings
        # are all plain (protocol.plain_reading): one cached topic lookup, one decode,
        # no checks it does not need. Anything else, and anything wrong, goes the full
        # way below, which gives every verdict; both end in the same answer() code.
        stream = self._data_topics.get(topic)
        if (
            stream is not None
            and type(payload) is bytes
            and len(payload) <= self.limits.max_payload_bytes
        ):
            if self.batch_path is not None and payload[:1] == b"\x81":  # a map of one key: a batch?
                out = self.batch_path.one(stream, payload, received_at)
                if out is not None:
                    return out
            try:
                obj = self._unpack(payload)
            except Exception:  # the full path names what is wrong
                obj = None
            if type(obj) is dict:
                reading = plain_reading(obj, self.limits, self._names, self._task)
                if reading is not None:
                    return self.answer(stream, reading, received_at)
                if len(obj) == 1 and self._fast_batches:
                    readings = obj.get("readings")
                    if type(readings) is list and 0 < len(readings) <= self.limits.max_batch_readings:
                        limits, names, task = self.limits, self._names, self._task
                        plain = [plain_reading(r, limits, names, task) for r in readings]
                        if None not in plain:
                            return self.answer_batch(stream, plain, received_at)
        message = parse_message(topic, payload, self.topics, self.limits, self.json_fields,
                                self._task)
        if isinstance(message, DataMessage):
            if message.non_finite:
                self.tally.rejects.count(message)
            stream = self.stream_for(message.stream)
            if stream is None:
                return []
            seq, ts = message.seq, message.ts
            if seq < 0:  # a JSON sensor object without "seq": the gateway numbers it
                seq = stream.last_seq + 1
            if ts != ts:  # ... and without "ts": stamped with its receive time
                ts = received_at
            return self.answer(stream, (ts, seq, message.channels, message.y), received_at)
        if isinstance(message, DataBatch):
            self.tally.count_batch_rejects(message, topic)
            stream = self.stream_for(message.stream) if message.readings else None
            if stream is None:
                return []
            return self.answer_batch(
                stream, [(r.ts, r.seq, r.channels, r.y) for r in message.readings], received_at
            )
        if isinstance(message, LabelMessage):
            self._handle_label(message)
            return []
        self.tally.count_reject(message, topic)
        return []

    def stream_for(self, name: str) -> StreamState | None:
        """The state of stream ``name``, made (with a new learner) on its first data;
        None when ``max_streams`` streams exist (counted as ``too_many_streams``) or its
        name is not allowed (``stream_not_allowed``)."""
        stream = self._streams.get(name)
        if stream is not None:
            return stream
        if not self.allows(name):
            self.tally.reject("stream_not_allowed", "stream %r is not allowed by [gateway] stream_pattern", name)
            return None
        if self.on_unknown_stream is not None and self.on_unknown_stream(name):
            return self._streams[name]
        if len(self._streams) >= self.max_streams:
            self.tally.reject("too_many_streams", "stream %r is beyond max_streams=%d", name,
                              self.max_streams)
            return None
        learner = edgelearn.make_learner(self.learner_kind, self.learner_params)
        if self._learner_start is not None:
            self._learner_start(name, learner)
        stream = StreamState(name, learner, self.topics)
        self._add(stream)
        return stream

    def allows(self, name: str) -> bool:
        """Whether a stream called ``name`` may be served (``stream_pattern``)."""
        return self.stream_pattern is None or self.stream_pattern.fullmatch(name) is not None

    def _add(self, stream: StreamState) -> None:
        self._streams[stream.name] = stream
        try:
            self._data_topics[self.topics.data(stream.name)] = stream
        except ValueError:  # a reserved id (only restore() can bring one): no fast path
            pass

    def answer(self, stream: StreamState, reading: tuple, received_at: float) -> list[Outbound]:
        """The prediction message (and any label request) for one accepted reading
        ``(ts, seq, channels, y)`` of ``stream``."""
        result = self.predict(stream, reading, received_at)
        if result is None:
            return []
        fields, request = result
        try:
            payload = self._pack(fields)
        except TypeError:  # a learner that returns NumPy scalars: convert them
            payload = encode_prediction(**fields)
        prediction = Outbound(stream.prediction_topic, payload, self.prediction_qos, False)
        return [prediction] if request is None else [prediction, request]

    def answer_batch(self, stream: StreamState, readings: list, received_at: float) -> list[Outbound]:
        """One prediction message for the accepted readings of a batch (in batch
        order), then the label requests of its readings, as for single readings."""
        predictions = []
        requests = []
        for reading in readings:
            result = self.predict(stream, reading, received_at)
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
        self.tally.batches += 1
        return [Outbound(stream.prediction_topic, payload, self.prediction_qos, False), *requests]

    def handle_many(self, items: Sequence[Sequence]) -> list[list[Outbound]]:
        """:meth:`handle` for each ``(topic, payload, received_at)`` of ``items`` (the
        first three fields of each: the gateway hands its inbound messages over as they
        are, with no tuple made per message): what
        each gives, the same outputs, counters and learner states. A stream's batch
        messages (or ``batches.SINGLES_PASS_MIN`` single readings or more) in a run with
        nothing else between share one decode, one learner pass and one label journal
        record, as offline replay runs a log's chunk. Each message still gets its own
        prediction message and label requests; only different streams' label requests
        may be issued in another order than one by one."""
        if self.batch_path is None:
            return [self.handle(item[0], item[1], item[2]) for item in items]
        return self.batch_path.handle_many(items)

    def predict(
        self, stream: StreamState, reading: tuple, received_at: float
    ) -> tuple[dict[str, Any], Outbound | None] | None:
        """Predict one reading ``(ts, seq, channels, y)`` of ``stream``, learn or request
        its label as the policy says; return its prediction map and label request (or
        None), or None if the learner refused it (counted)."""
        ts, seq, channels, y = reading
        lean = stream.lean
        if lean is not None:
            if y is None:
                known = UNLABELLED
            else:
                known = lean.labels.get(y) if y.__class__ in SETTLED_TYPES else None
                if known is not None and known[0] is not y.__class__:
                    known = None
            if known is not None:
                return self._predict_lean(stream, lean, ts, seq, channels, y, known, received_at)
        learner = stream.learner
        try:
            decision = learner.decide_one(channels)
        except (ValueError, TypeError) as exc:
            self.tally.reject("learner_error", "stream %r seq %d: %s", stream.name, seq, exc)
            return None
        tally = self.tally
        tally.data += 1
        stream.data += 1
        stream.note_seq(seq, tally)
        stream.last_received_at = received_at
        label, ask = decision.label, decision.ask
        stream.last_label = label
        if ask:
            tally.asked += 1
            stream.asked += 1
        fields = {"seq": seq, "ts": ts, "y": label, "score": decision.score, "query": ask}
        extra = decision.extra
        rules = stream.rules
        if extra is not None:  # the task's own outputs (an interval, the channels behind an alarm)
            fields.update(extra := rules.outputs(extra))
        stream.last_output = fields
        if rules.note is not None:
            rules.note(stream, label)
        tally.predictions += 1
        request = None
        if y is None:
            if ask and self.label_policy == "request":
                request = self._label_request(stream, seq, ts, label, decision.score,
                                              decision.slots, decision.z, extra)
        elif rules.score(stream, y, label, extra, tally) and (
                self.label_policy != "from_data" or ask):
            self._learn(stream, decision.slots, decision.z, y)
        if len(stream.settled_sides) != stream.lean_checked:
            self._settle(stream)
        return fields, request

    def _settle(self, stream: StreamState) -> None:
        """Give a binary stream whose labels are settled its learner's one-call path, if
        it has one (or take it back: labels settled since are looked up again)."""
        stream.lean_checked = len(stream.settled_sides)
        stream.lean = LeanBinary(stream, self.label_policy) if LeanBinary.fits(stream) else None

    def _predict_lean(self, stream: StreamState, lean: LeanBinary, ts: float, seq: int,
                      channels: dict, y: Any, known: tuple, received_at: float
                      ) -> tuple[dict[str, Any], Outbound | None] | None:
        """:meth:`predict` of a reading of a settled binary stream whose learner has a
        one-call kernel, whose label is settled or absent (``known``: its type, verdict
        and the learner's sign): one kernel call observes, predicts, decides to ask and
        learns the label as the policy says; the same state, outputs and counts as
        ``decide_one``, scoring and :meth:`_learn`. ``on_learn`` hears of the lesson
        after the learner took it and the counts say so, so a checkpoint it writes
        holds the lesson with its count (the message is not acknowledged before the
        journal has it either way)."""
        try:
            slots, z = lean.claim(channels)
        except (ValueError, TypeError) as exc:
            self.tally.reject("learner_error", "stream %r seq %d: %s", stream.name, seq, exc)
            return None
        margin, ask, learned = lean.decide_learn(slots, z, known[2], lean.learn_if_asked)
        tally = self.tally
        tally.data += 1
        stream.data += 1
        stream.note_seq(seq, tally)
        stream.last_received_at = received_at
        positive = margin > 0.0 or (margin == 0.0 and lean.zero_positive)
        label = stream.last_label = lean.predicted[positive]
        if ask:
            tally.asked += 1
            stream.asked += 1
        fields = stream.last_output = {"seq": seq, "ts": ts, "y": label, "score": margin,
                                       "query": ask}
        tally.predictions += 1
        if y is None:
            if ask and self.label_policy == "request":
                return fields, self._label_request(stream, seq, ts, label, margin, slots, z, None)
            return fields, None
        stream.metrics.update(known[1], lean.guess[positive])
        if learned:
            n = stream.learned
            tally.learned += 1
            stream.learned += 1
            if self.on_learn is not None:
                self.on_learn(stream.name, n, slots, z, y)
        return fields, None

    def _label_request(self, stream: StreamState, seq: int, ts: float, label: Any, score: float,
                       slots: Any, z: Any, extra: dict | None) -> Outbound:
        req = self.labels.issue(stream.name, seq, (slots, z), label)
        self.tally.label_requests += 1
        stream.label_requests += 1
        return Outbound(
            stream.label_request_topic,
            encode_label_request(
                req, seq, ts, label, score, self.labels.ttl_seconds,
                stream.learner.targets.labels if stream.multilabel else None, extra,
            ),
            self.label_request_qos,
            False,
        )

    def forget_last_seq(self, stream: str) -> None:
        """Forget where ``stream``'s sequence stood (a checkpoint written before a
        crash: readings after it were processed, so a gap from it would be false)."""
        self._streams[stream].forget_last_seq()

    def _learn(self, stream: StreamState, slots: Any, z: Any, y: Any) -> bool:
        """Teach ``stream`` label ``y`` of the features ``(slots, z)``; return whether
        it learned. ``on_learn`` (the gateway's label journal) hears of it first, so
        a crash right after the update cannot lose it."""
        if self.on_learn is not None:
            self.on_learn(stream.name, stream.learned, slots, z, y)
        try:
            stream.learner.learn(slots, z, y)
        except ValueError as exc:
            self.tally.unusable(stream, y, str(exc))
            return False
        except TypeError as exc:
            self.tally.reject("learner_error", "stream %r: learn(%.40r): %s", stream.name, y, exc)
            return False
        self.tally.learned += 1
        stream.learned += 1
        return True

    def _handle_label(self, message: LabelMessage) -> None:
        self.tally.label_messages += 1
        labels = self.labels
        # Looked up, not closed: an answer the stream's learner cannot take leaves the
        # request open, so a correct answer sent after it (within the TTL) is learned.
        result = labels.lookup(message.req, message.stream)
        if isinstance(result, PendingEntry):
            stream = self._streams.get(result.stream)
            if stream is None and self.on_unknown_stream is not None and self.on_unknown_stream(
                    result.stream):  # evicted while idle: back from its checkpoint
                stream = self._streams[result.stream]
            if stream is None:  # restore() replaced the stream set; nothing to teach
                labels.settle(result)
                return
            problem = stream.rules.label_problem(stream, message.y)
            if problem:
                self.tally.unusable(stream, message.y, problem)
                return
            slots, z = result.features
            if self._learn(stream, slots, z, message.y):
                labels.settle(result)
                stream.rules.on_answer(stream, result.y_hat, message.y)
            return
        self.tally.log.warning(
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

    def set_learner_start(self, start) -> None:
        """Have ``start(stream, learner)`` called with each new stream's fresh learner
        before its first reading (the fleet starts it from a group model); None: no
        such call (the default)."""
        self._learner_start = start

    def learner_can(self, capability: str) -> bool:
        """Whether the streams' learners can do ``capability`` (``Learner.can``)."""
        return self._prototype.can(capability)

    def learner_why_not(self, capability: str) -> str | None:
        return self._prototype.why_not(capability)  # Learner.why_not: a reason, or None

    def stream_state(self, stream: str) -> StreamState:
        """The state of ``stream`` (``KeyError`` if the stream has none): what the
        pipeline's passes and offline replay work on."""
        return self._streams[stream]

    def data_stream(self, topic: str) -> StreamState | None:
        """The stream whose data topic ``topic`` is, if it exists (the fast path's lookup)."""
        return self._data_topics.get(topic)

    @property
    def n_streams(self) -> int:
        return len(self._streams)

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
        """Teach ``stream`` a journaled lesson (:mod:`firmware_bridge.service.journal`): its
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
        self.tally.learned += 1
        entry.learned += 1
        return "replayed"

    def stream_counters(self, stream: str) -> dict[str, int]:
        """``stream``'s counters: data, asked, label_requests, learned, unusable_labels."""
        return self._streams[stream].counters()

    def last_prediction(self, stream: str) -> Any:
        """The label last predicted for ``stream`` (``None`` before its first reading)."""
        return self._streams[stream].last_label

    def last_output(self, stream: str) -> dict[str, Any] | None:
        """The fields of ``stream``'s last prediction message (``None`` before its
        first reading): ``y``, ``score`` and the task's own (``lower``/``upper``,
        ``top``)."""
        return self._streams[stream].last_output

    def stream_task(self, stream: str) -> str:
        """The task of ``stream``'s learner (binary or multiclass by its labels, ...)."""
        return self._streams[stream].learner.task

    def positive_label(self, stream: str) -> Any:
        """The label a binary ``stream`` predicts on its positive side, in the user's own
        form (``True`` until the learner has seen a label)."""
        return self._streams[stream].learner.targets.decode(True)

    def is_binary(self, stream: str) -> bool:
        """Whether ``stream``'s learner predicts True/False."""
        return self._streams[stream].binary

    def metrics(self, stream: str) -> Any:
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
        return self.tally.counters(self.labels.as_dict())

    def memory(self) -> dict[str, int]:
        """The memory budget in bytes, fixed by the construction parameters:
        ``learners`` (the streams that exist), ``learners_max`` (``max_streams`` of
        them), ``pending_labels`` (the label table when full, an estimate), and
        ``total`` (``learners_max`` + ``pending_labels``)."""
        return memory_budget(
            learner_bytes=self._learner_bytes, label_rows=self._n_labels,
            lean=self._lean_streams, limits=self.limits, labels=self.labels,
            max_streams=self.max_streams,
            learners=sum(s.learner.memory_bytes() for s in self._streams.values()))

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
        state, is for another stream, or its learner is of another kind or differs in a
        parameter the configuration sets (others keep their saved values); ``ValueError`` when
        ``max_streams`` streams exist already. Nothing changes when it raises.
        """
        entry = saved_stream(stream, state, self._learner_class, self._learner_params_norm,
                             self.topics, configured=self.learner_params)
        if stream not in self._streams and len(self._streams) >= self.max_streams:
            raise ValueError(
                f"cannot restore stream {stream!r}: max_streams={self.max_streams} "
                "streams exist already"
            )
        self._add(entry)

    def drop(self, stream: str) -> None:
        """Take ``stream`` out, its slot free (its pending label requests stay open)."""
        entry = self._streams.pop(stream)
        self._data_topics = {t: s for t, s in self._data_topics.items() if s is not entry}
