"""The gateway service's worker: MQTT in, pipeline, MQTT out, with checkpoints and status.

Threads and who owns what:

* one worker thread owns everything that moves: the
  :class:`~firmware_bridge.service.mqtt.MqttBridge` (it drives both MQTT connections itself,
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

The other rooms: the configuration is :mod:`firmware_bridge.service.config`, the checkpoint
files :mod:`firmware_bridge.service.checkpoints`, sd_notify :mod:`firmware_bridge.service.systemd`,
the counters :mod:`firmware_bridge.service.counters`, the command line
:mod:`firmware_bridge.cli` (``python -m firmware_bridge gateway`` is ``edgelearn
gateway``).
"""

from __future__ import annotations

import collections
import logging
import math
import os
import threading
import time
from typing import Any

from .admission import StreamAdmission
from .answers import ANSWER_QUEUE_LENGTH, AnswerRateLimit
from .checkpoints import CheckpointStore
from .clocks import CLOCK_STEP_S, WallClockWatch
from .collector import freeze_long_lived
from .refusals import DEGRADED_HOLD_S, PublishRefusals
from .intake import WorkerIntake, taken_by_broker
from .journal import JOURNAL_NAME, LabelJournal, replay
from .pending_store import keep_pending, restore_pending
from .request_log import open_request_log
from .config import GatewayConfig
from .counters import CounterRegistry
from .mqtt import InboundMessage, MqttBridge
from ..pipeline import RateLimitedLog
from ..wire import bounded_unpackb, encode_status
from .sinks import EVENTS, make_sinks
from .sinks.routing import fan_out, sink_routes
from .status_message import status_message
from .systemd import SystemdNotifier

__all__ = ["TICK_SECONDS", "Gateway", "NORMAL_PIPELINE_COUNTERS"]

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
# Per queued message beyond its payload: the tuple, the topic str, the float (bytes).
_QUEUED_MESSAGE_OVERHEAD = 256
# paho keeps each outgoing QoS>0 message as an MQTTMessage with its info object.
_OUTGOING_MESSAGE_BYTES = 1024

NORMAL_PIPELINE_COUNTERS = frozenset({
    "messages", "data", "label_messages", "predictions", "asked", "label_requests",
    "learned", "rejected", "label_issued", "label_answered", "label_pending", "label_restored",
})
"""The pipeline's counters that count work, not problems (every other one, a reject
reason or an expired label, is a problem ``edgelearn status`` shows when not zero)."""
_PROBLEM_BRIDGE_COUNTERS = ("disconnects", "out_disconnects", "answer_disconnects",
                            "connect_failures", "subscribe_failures", "redelivery_expected",
                            "publish_dropped")


class Gateway(WorkerIntake):
    """The running service: a pipeline fed by MQTT, with checkpoints and status.

    ``start()`` returns once the threads run; ``request_stop()`` (any thread, or a
    signal handler) asks for a stop; ``shutdown()`` performs it (main thread);
    ``run()`` does all three and returns the exit status. The worker's turn (what it
    takes, in which order, and when it acks) is
    :class:`~firmware_bridge.service.intake.WorkerIntake`.
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
        # Durations on the monotonic clock, the wall clock for what is shown
        # (firmware_bridge.service.clocks).
        self._started = clock()
        self.started_at = time.time()
        self.status_topic = config.topics.status(config.gateway_id)
        self.pipeline = config.make_pipeline(clock)
        self._log = RateLimitedLog(logger, config.reject_log_interval_s, clock)
        self.registry = CounterRegistry()
        self.registry.register("pipeline", self.pipeline.counters,
                               problems=lambda name: name not in NORMAL_PIPELINE_COUNTERS,
                               gauges=("label_pending",))
        counter = self.registry.counter
        self._worker_errors = counter(
            "worker_errors", "messages whose processing raised (a bug)", problem=True)
        self._recorder_errors = counter(
            "recorder_errors", "messages the recorder could not write", problem=True)
        self._checkpoints_written = counter("checkpoints_written", "stream checkpoints written")
        self._checkpoint_errors = counter(
            "checkpoint_errors", "stream checkpoints that could not be written", problem=True)
        self._status_published = counter("status_published", "status messages published")
        self._clock_steps = counter(
            "clock_steps", f"steps of the wall clock by more than {CLOCK_STEP_S:g} s "
            "(durations are on the monotonic clock; recorded timestamps jump)")
        self.refusals = PublishRefusals(
            self.registry, config.topics, clock=clock, log_interval_s=config.reject_log_interval_s,
            hold_s=max(DEGRADED_HOLD_S, 2 * config.status_interval_s), on_first=self._mark_status_changed)
        self._wall_clock = WallClockWatch(self._started, monotonic=clock,
                                          on_step=lambda step: self._clock_steps.inc())
        # (message, paho info of its last output) of processed, unacknowledged messages.
        self._unacked: collections.deque[tuple[InboundMessage, Any]] = collections.deque()
        self._journal_errors = counter(
            "journal_errors", "labels the journal could not write", problem=True)
        self.checkpoints: CheckpointStore | None = None
        self.journal: LabelJournal | None = None
        self.checkpoint_failures: dict[str, Exception] = {}
        self.admission: StreamAdmission | None = None
        if config.checkpoint_dir:
            self.checkpoints = CheckpointStore(config.checkpoint_dir)
            # Restores the checkpoints (slots left free), reclaims idle streams' slots.
            self.admission = StreamAdmission(config, self.pipeline, self.checkpoints,
                                             self.registry, self._save_stream, clock)
            self.registry.register(
                "checkpoints", lambda: {"checkpoint_bytes": self.checkpoints.bytes_written},
                docs={"checkpoint_bytes": "bytes of checkpoints written"})
            # Before the journal's first checkpoint round, which writes labels.pending.
            self.checkpoints.report["pending_labels"] = restore_pending(
                config.checkpoint_dir, self.pipeline, logger, self.checkpoints.has)
        if config.journal_enabled:
            self._open_journal()
        self.recorder = config.make_recorder()
        if self.recorder is not None:
            self.registry.register("recorder", lambda: {"recorded": self.recorder.records_written})
        # The output sinks the configuration turns on (the MQTT outputs always), each
        # called only for the events it handles (firmware_bridge.service.sinks).
        self.sinks = make_sinks(self, config)
        by_event = {event: [sink for sink in self.sinks if event in sink.handles]
                    for event in EVENTS}
        self._status_sinks = by_event["status"]
        self._tick_sinks = by_event["tick"]
        self._sink_topics = sink_routes({topic: sink for sink in by_event["inbound"]
                                          for topic in sink.subscriptions()})
        outbound = [sink.on_outbound for sink in by_event["outbound"]]
        # The per-message path calls the one outbound sink directly (the MQTT outputs).
        self._on_outbound = outbound[0] if len(outbound) == 1 else fan_out(outbound)
        self._last_checkpoint = self._started  # monotonic
        # Label answers on their own session, rate-limited (firmware_bridge.service.answers).
        self.answer_limit = AnswerRateLimit(
            config["labels.max_answers_per_second"] or math.inf, clock, self._log,
            self.pipeline.labels.__contains__, bounded_unpackb(config.limits))
        self.registry.register("answers", self.answer_limit.counters,
                               problems=("label_rate_limited",))
        answer_filters = (config.topics.filter("label"),) if config["labels.own_session"] else ()
        subscriptions = tuple(f for f in config.topics.inbound_filters()
                              if f not in answer_filters) + tuple(self._sink_topics)
        self.bridge = MqttBridge(
            config.mqtt,
            subscriptions,
            self.status_topic,
            encode_status({"state": "offline", "gateway": config.gateway_id}),
            config.limits.max_payload_bytes,
            config.inbound_queue_length,
            on_connection_change=self._mark_status_changed,
            clock=clock,
            on_publish_refused=self.refusals.refused,
            answer_filters=answer_filters,
            answer_capacity=ANSWER_QUEUE_LENGTH,
            admit_answer=(self.answer_limit.admit if config["labels.max_answers_per_second"]
                          else None),
        )
        # What Gateway.publish does, bound: the MQTT outputs call it once per output
        # (they take it at their start, when the bridge exists).
        self.publish = self.bridge.publish
        self.registry.register("bridge", self.bridge.counters,
                               problems=_PROBLEM_BRIDGE_COUNTERS, gauges=("outgoing_pending",))
        self._stop = threading.Event()
        self._status_changed = True
        self._worker = threading.Thread(target=self._work, name="edgelearn-worker", daemon=True)
        self._failed = False
        self._final_checkpoint_failed = False
        self._shut_down = False
        now = clock()
        self._next_housekeeping = now
        self._next_status = now
        self._last_status = -math.inf
        self._last_signature: tuple = ()
        self._next_checkpoint = now + config.checkpoint_interval_s
        self._next_watchdog = now
        self._next_flush = now + config.status_interval_s
        # Messages _process_queued takes at once: their outputs at worst (a prediction
        # and a label request per reading) on top of a full window fit paho's queue.
        # A backlog is taken in groups of at least half the window: one learner pass
        # for each, not one for whatever the last acks made room for.
        self._least_group = max(1, config.mqtt.max_inflight_messages // 2)
        queued = config.mqtt.max_queued_messages
        self._group_limit = (1_000_000 if not queued else max(1, (
            queued - config.mqtt.max_inflight_messages) // (1 + config.limits.max_batch_readings)))

    # -- checkpoints ---------------------------------------------------------------

    @property
    def checkpoint_report(self) -> dict[str, Any]:
        """What the start restored (the status message's ``"checkpoints"``)."""
        if self.checkpoints is None:
            return {"directory": "", "restored": [], "fell_back": {}, "failed": {}}
        return self.checkpoints.report

    def _open_journal(self) -> None:
        """Replay the label journal on top of the restored checkpoints, checkpoint what
        it taught (which empties it), and journal every lesson from now on."""
        config = self.config
        path = os.path.join(config.checkpoint_dir, JOURNAL_NAME)
        report = replay(self.pipeline, path, frozenset(self.checkpoints.report["restored"]))
        self.checkpoints.report["journal"] = report
        if report["problem"]:
            logger.warning("label journal %s: replay stopped at %s", path, report["problem"])
        if report["replayed"]:
            logger.info("label journal: %d label(s) learned since the last checkpoints "
                        "replayed", report["replayed"])
        self.journal = LabelJournal(path, config["checkpoints.journal_max_bytes"],
                                    config["checkpoints.journal_fsync_seconds"])
        self.registry.register("journal", self.journal.counters, problems=("journal_dropped",))
        self.checkpoint()  # the replayed streams; truncates the journal when all are written
        self.admission.trim()  # the journal's streams beyond the restore limit, now saved
        self.pipeline.on_learn = self._journal_lesson
        self.pipeline.on_learn_batch = self._journal_lessons
        # Pending label requests kept across a crash too (service/request_log.py).
        self.requests = open_request_log(config.checkpoint_dir, self.pipeline.labels,
                                         self.checkpoints, self.journal.fsync_interval_s,
                                         self._journal_layout, logger)
        self.registry.register("requests", self.requests.counters,
                               problems=("request_log_errors",))

    def _journal_lesson(self, stream: str, n: int, slots: Any, z: Any, y: Any) -> None:
        """Pipeline.on_learn: the lesson goes to the journal before its message is
        acknowledged (before the learner takes it, or right after on the pipeline's
        one-call path; a checkpoint written here then holds it with its count)."""
        # _journal_layout(stream), written out: this runs once per labelled message.
        layout = self.pipeline.layout(stream)
        if self.checkpoints.saved_layout(stream) != layout:
            self._save_stream(stream)
        try:
            self.journal.append(stream, n, layout, slots, z, y)
        except (OSError, TypeError, ValueError) as exc:
            self._journal_errors.inc()
            self._log.warning("journal_error", "stream %r: %s", stream, exc)

    def _journal_lessons(self, stream: str, n: int, counts: Any, slots: Any, z: Any,
                         codes: Any, labels: list) -> None:
        """Pipeline.on_learn_batch: a jitted batch's lessons, one journal record."""
        layout = self._journal_layout(stream)
        try:
            self.journal.append_batch(stream, n, layout, counts, slots, z, codes, labels)
        except (OSError, TypeError, ValueError) as exc:
            self._journal_errors.inc()
            self._log.warning("journal_error", "stream %r: %s", stream, exc)

    def _journal_layout(self, stream: str) -> tuple[int, int]:
        """``stream``'s channel layout, checkpointed first if its last checkpoint does
        not have it."""
        layout = self.pipeline.layout(stream)
        if self.checkpoints.saved_layout(stream) != layout:
            # The slots refer to channels the last checkpoint does not map (a new
            # stream or channel): checkpoint the stream first, or a replay could not
            # tell which channel a slot meant.
            self._save_stream(stream)
        return layout

    def _save_stream(self, stream: str) -> bool:
        """Write ``stream``'s checkpoint now (counted); whether it was written."""
        exc = self.checkpoints.save(self.pipeline, stream)
        if exc is not None:
            self._checkpoint_errors.inc()
            self._log.warning("checkpoint_error", "stream %r: %s", stream, exc)
        else:
            self._checkpoints_written.inc()
        return exc is None

    def checkpoint(self, final: bool = False) -> int:
        """Write the checkpoint of every stream that changed since its last one (and,
        ``final`` at a clean stop, if all were written, the pending label requests);
        return how many were written. Worker thread, or main thread after the worker."""
        if self.checkpoints is None:
            return 0
        if self.journal is not None:
            self._write_journal()  # what a turn held (a checkpoint after a failed turn)
        written, failed = self.checkpoints.save_changed(self.pipeline)
        self.checkpoint_failures = failed
        if failed:
            self._checkpoint_errors.inc(len(failed))
            # One line naming every stream that failed (rate-limited as a whole, so a
            # full disk does not flood the log, but no stream goes unnamed).
            self._log.warning("checkpoint_error", "%d stream(s) not checkpointed: %s",
                              len(failed), _name_failures(failed))
        self._checkpoints_written.inc(written)
        if self.journal is not None and not failed:
            self.journal.truncate()
        if final and not failed:
            keep_pending(self.config.checkpoint_dir, self.pipeline, logger)
        if written:
            self._last_checkpoint = self._clock()
        return written

    # -- status ----------------------------------------------------------------------

    def _mark_status_changed(self) -> None:
        self._status_changed = True

    def memory(self) -> dict[str, int]:
        """The fixed memory budget: the pipeline's, the inbound and answer queues' and
        paho's outgoing queue's, in bytes."""
        memory = self.pipeline.memory()
        config = self.config
        memory["inbound_queue"] = config.inbound_queue_length * (
            config.limits.max_payload_bytes + 1 + _QUEUED_MESSAGE_OVERHEAD
        )
        answers = self.bridge.answer_capacity if self.bridge.answer_filters else 0
        memory["answer_queue"] = answers * (config.limits.max_payload_bytes + 1
                                            + _QUEUED_MESSAGE_OVERHEAD)
        memory["outgoing_queue"] = config.mqtt.max_queued_messages * _OUTGOING_MESSAGE_BYTES
        memory["total"] += (memory["inbound_queue"] + memory["answer_queue"]
                            + memory["outgoing_queue"])
        return memory

    def status(self, state: str = "online") -> dict[str, Any]:
        """The status message: state, versions, counters, streams, memory, checkpoints
        (:func:`~firmware_bridge.service.status_message.status_message`)."""
        return status_message(self, state)

    def publish_status(self, state: str = "online") -> Any:
        """The status message, to every sink that takes it (the MQTT outputs' retained
        status first); returns paho's info of the last message published."""
        status = self.status(state)
        info = None
        for sink in self._status_sinks:
            info = sink.on_status(status, state) or info
        self._status_published.inc()
        return info

    # -- what the sinks use (firmware_bridge.service.sinks.base.SinkHost) ---------------

    @property
    def gateway_id(self) -> str:
        return self.config.gateway_id

    def publish(self, topic: str, payload: bytes, qos: int, retain: bool) -> Any:
        """Publish on the outbound connection; paho's message info."""
        return self.bridge.publish(topic, payload, qos, retain)

    @property
    def can_publish(self) -> bool:
        return self.bridge.can_publish

    @property
    def connection_count(self) -> int:
        return self.bridge.out_connects

    def sink(self, name: str) -> Any:
        """The running sink called ``name`` (``firmware_bridge.service.sinks.SINKS``),
        or None when it is off."""
        name = {"mqtt": "outputs"}.get(name, name)  # its name before [outputs]
        return next((sink for sink in self.sinks if sink.name == name), None)

    # -- Prometheus ------------------------------------------------------------------

    def metrics_page(self, streams: dict[str, Any] | None = None) -> str:
        """Every counter, per-stream figure and gauge in Prometheus' text format."""
        from .sinks.prometheus import metrics_page

        return metrics_page(self, streams)

    def gauges(self) -> dict[str, tuple[str, Any, str | None]]:
        """The gauges of the metrics page: name -> (help, value or {label: value},
        label name)."""
        return {
            "memory_bytes": ("the fixed memory budget by part", self.memory(), "part"),
            "connected": ("1 while both MQTT links are up", self.bridge.connected, None),
            "degraded": ("1 while the gateway is up but degraded (a publish refused in the "
                         "last minute)", int(bool(self.refusals.degraded_by())), None),
            "uptime_seconds": ("seconds since the start (monotonic clock)", self.uptime_s(), None),
            "checkpoint_age_seconds": (
                "seconds since a checkpoint was last written (or since the start; "
                "monotonic clock)", self.checkpoint_age_s(), None),
            "queue_length": ("inbound messages waiting for the worker",
                             len(self.bridge.inbound), None),
            "streams": ("streams served", len(self.pipeline.streams), None),
        }

    def uptime_s(self) -> float:
        """Seconds since the start, on the monotonic clock."""
        return self._clock() - self._started

    def checkpoint_age_s(self) -> float:
        """Seconds since a checkpoint was last written (or since the start), on the
        monotonic clock."""
        return self._clock() - self._last_checkpoint

    # -- the worker ------------------------------------------------------------------

    def _housekeeping(self, now: float) -> None:
        self._next_housekeeping = now + TICK_SECONDS
        self._wall_clock.check(now)
        notifier = self.notifier
        if notifier.watchdog_interval_s is not None and now >= self._next_watchdog:
            notifier.notify("WATCHDOG=1")
            self._next_watchdog = now + notifier.watchdog_interval_s / 3
        counters = self.pipeline.counters()
        signature = (len(self.pipeline.streams), counters["rejected"], counters["seq_missing"],
                     counters["seq_restarts"], self.bridge.connected)
        changed = self._status_changed or signature != self._last_signature
        if now >= self._next_status or (changed and now - self._last_status >= _STATUS_MIN_INTERVAL_S):
            self._last_signature = signature
            self._last_status = now
            self._next_status = now + self.config.status_interval_s
            self.pipeline.expire_labels()
            frozen = freeze_long_lived()  # the kernels a stream's first messages loaded
            if frozen:
                logger.debug("froze %d long-lived objects (firmware_bridge.service.collector)",
                             frozen)
            # While the outbound link is down a status would only queue up in paho (and go
            # out stale at the reconnect, ahead of predictions); the reconnect marks the
            # status changed, so a fresh one goes out then.
            if self.bridge.can_publish:
                self._status_changed = False
                self.publish_status("online")
        for sink in self._tick_sinks:
            sink.tick(now)
        if self.admission is not None:
            self.admission.tick(now)
        journal = self.journal
        if now >= self._next_checkpoint or (journal is not None and journal.wants_checkpoint):
            self._next_checkpoint = now + self.config.checkpoint_interval_s
            self.checkpoint()
        if journal is not None:
            try:
                journal.sync(now)
                self.requests.sync(now)
            except OSError as exc:
                self._journal_errors.inc()
                self._log.warning("journal_error", "fsync: %s", exc)
        if self.recorder is not None and now >= self._next_flush:
            self._next_flush = now + self.config.status_interval_s
            try:
                self.recorder.flush()
            except OSError as exc:
                self._recorder_errors.inc()
                self._log.warning("recorder_error", "%s", exc)

    def _idle_timeout(self) -> float:
        inbound = self.bridge.inbound
        if (inbound and self.bridge.outgoing_room() >= min(len(inbound), self._least_group)
                ) or self.bridge.answers:
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
        while (bridge.inbound or bridge.answers or self._unacked) and self._clock() < deadline:
            self._turn(0.01)
        left = len(bridge.inbound) + len(bridge.answers) + len(self._unacked)
        if left:
            logger.warning("%d message(s) left unacknowledged; the broker delivers them "
                           "again at the next start", left)
        self.checkpoint(final=True)
        if self.checkpoints is not None and not self.checkpoint_failures:
            try:
                self.checkpoints.mark_clean_stop()
            except OSError as exc:  # the next start then treats the last seq as unknown
                logger.warning("cannot mark the clean stop: %s", exc)
        if self.checkpoint_failures:
            # What these streams learned since their last checkpoint is only in the
            # label journal (or lost, without one): the exit status says so.
            self._final_checkpoint_failed = True
            logger.error("the final checkpoint failed for %d stream(s): %s",
                         len(self.checkpoint_failures), _name_failures(self.checkpoint_failures))
        info = self.publish_status("stopped")
        deadline = self._clock() + _FINAL_PUBLISH_TIMEOUT_S
        while (info is not None and bridge.connected and not taken_by_broker(info)
               and self._clock() < deadline):
            bridge.poll(0.01)
        bridge.disconnect()

    # -- life cycle ------------------------------------------------------------------

    def start(self) -> None:
        """Start the worker (it connects in the background), telling systemd READY as
        the worker starts."""
        for sink in self.sinks:
            sink.start()
        self.bridge.start()
        # READY before the worker starts: its first turn sends WATCHDOG=1, and a
        # notification that came first raced READY (the service's first message must
        # be READY=1; tests/test_gateway_broker.py saw WATCHDOG first 1 run in 14).
        self.notifier.notify("READY=1")
        self._worker.start()
        logger.info(
            "gateway %s serving up to %d streams with %s; broker %s",
            self.config.gateway_id,
            self.config.max_streams,
            self.config.learner_kind,
            ", ".join(f"{host}:{port}" for host, port in self.bridge.addresses),
        )
        for warning in self.config.warnings():
            logger.warning("configuration: %s", warning)

    def request_stop(self) -> None:
        """Ask the gateway to stop (safe from signal handlers and other threads)."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until a stop is requested (or ``timeout``); return whether it was."""
        return self._stop.wait(timeout)

    def shutdown(self) -> int:
        """Stop intake, finish, checkpoint, publish "stopped", disconnect (all done by
        the worker; this waits for it); return the exit status (0, or 1 if the worker
        had failed or did not finish, or the final checkpoint of any stream failed).
        Idempotent."""
        if self._shut_down:
            return 1 if self._failed or self._final_checkpoint_failed else 0
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
        if self.journal is not None:
            self.journal.close()
            self.requests.close()
        for sink in self.sinks:
            sink.close()
        self.notifier.close()
        logger.info("stopped")
        return 1 if self._failed or self._final_checkpoint_failed else 0

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


def _name_failures(failed: dict[str, Exception]) -> str:
    return "; ".join(f"{stream!r}: {exc}" for stream, exc in failed.items())

