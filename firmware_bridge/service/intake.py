"""The worker's turn: what it takes from the inbound queues, in which order, and when
it acknowledges (the rest of the worker is :mod:`firmware_bridge.service.gateway`).

:class:`WorkerIntake` is the part of :class:`~firmware_bridge.service.gateway.Gateway`
that moves messages: a turn polls the network, runs the queued data through the
pipeline while the outbound window has room, then takes label answers in
proportion (:func:`~firmware_bridge.service.answers.answers_to_take`), writes the turn's label journal records
(:mod:`firmware_bridge.service.journal`: one ``write`` a turn, before any ack), and
acknowledges each message once the broker has taken its outputs.
"""

from __future__ import annotations

from typing import Any

from .answers import answers_to_take
from .mqtt import InboundMessage

__all__ = ["WorkerIntake", "taken_by_broker"]


class WorkerIntake:
    """The worker's intake, a part of the Gateway (it uses the gateway's bridge,
    pipeline, sinks, counters and ``_unacked`` deque)."""

    def _process(self, item: InboundMessage) -> None:
        sink = self._sink_topics.get(item.topic)
        if sink is not None:  # a sink's own topic (Home Assistant's birth), not the pipeline's
            sink.on_inbound(item.topic, item.payload)
            if item.qos:
                self._unacked.append((item, None))
            return
        self._record(item)
        try:
            outputs = self.pipeline.handle(item.topic, item.payload, item.received_at)
        except Exception as exc:  # a bug; acked below so it is not redelivered forever
            self._worker_errors.inc()
            self._log.warning("worker_error", "%s on topic %.80r: %r", type(exc).__name__,
                              item.topic, exc)
            outputs = ()
        self._publish(item, outputs)

    def _record(self, item: InboundMessage) -> None:
        if self.recorder is not None:
            try:
                self.recorder.write(item.topic, item.payload, item.received_at)
            except (OSError, TypeError) as exc:
                self._recorder_errors.inc()
                self._log.warning("recorder_error", "%s", exc)

    def _publish(self, item: InboundMessage, outputs: Any) -> None:
        on_outbound = self._on_outbound
        last = None
        for out in outputs:
            last = on_outbound(out)
        if item.qos:
            # Acknowledged once its outputs are with the broker (see _release_acks).
            self._unacked.append((item, last))

    def _process_group(self, items: list[InboundMessage]) -> None:
        """Messages taken together (none Home Assistant's): one
        ``Pipeline.handle_many``, so a stream's queued batches (or single readings,
        enough of them) share a learner pass;
        each message's outputs and ack as :meth:`_process` gives them. (A bug
        raising in the shared pass drops the outputs of the whole group, acked.)"""
        if len(items) < 2:
            for item in items:
                self._process(item)
            return
        if self.recorder is not None:
            for item in items:
                self._record(item)
        try:
            # InboundMessage's first fields are (topic, payload, received_at).
            outputs = self.pipeline.handle_many(items)
        except Exception as exc:  # a bug; acked below so they are not redelivered forever
            # Each message of the group went unanswered: each is counted (the
            # counter counts messages), as one message alone would be.
            self._worker_errors.inc(len(items))
            self._log.warning("worker_error", "%s on %d messages from topic %.80r: %r",
                              type(exc).__name__, len(items), items[0].topic, exc)
            outputs = [()] * len(items)
        # _publish of each message, written out: this loop runs once per message.
        on_outbound = self._on_outbound
        unacked = self._unacked
        for item, outs in zip(items, outputs):
            last = None
            for out in outs:
                last = on_outbound(out)
            if item.qos:
                unacked.append((item, last))

    def _process_queued(self) -> None:
        """Process received messages while the outbound window has room: a busy broker
        slows the worker down (and, through the acks, the senders) instead of
        predictions being dropped. What is queued is taken together, as many as the
        window has room for (:meth:`_process_group`), and no more than
        ``_group_limit``: even a group whose every reading asks for its label then
        fits paho's outgoing queue. A backlog waits until the window has room for
        ``_least_group`` (half of it) or for all that is queued: each group then
        shares one learner pass per stream, instead of a pass for whatever room the
        last few acks made."""
        inbound = self.bridge.inbound
        room = self.bridge.outgoing_room
        sink_topics = self._sink_topics
        popleft = inbound.popleft
        while inbound and room() >= min(len(inbound), self._least_group):
            take = range(max(1, min(len(inbound), room(), self._group_limit)))
            if not sink_topics:  # no sink subscribes: every message is the pipeline's
                self._process_group([popleft() for _ in take])
                continue
            group = []
            for _ in take:
                item = popleft()
                if item.topic in sink_topics:  # not the pipeline's: on its own, in order
                    self._process_group(group)
                    self._process(item)
                    group = []
                else:
                    group.append(item)
            self._process_group(group)

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
            if info is not None:
                # taken_by_broker(info), written out: this loop runs once per message.
                try:
                    if not info.is_published():
                        return
                except (ValueError, RuntimeError):
                    pass  # never queued (counted as dropped): nothing to wait for
            unacked.popleft()
            ack(item)

    def _turn(self, timeout: float) -> None:
        """One round of the worker: network, messages, the turn's label journal
        records in one write, acks."""
        bridge = self.bridge
        bridge.poll(timeout)
        journal = self.journal
        if journal is not None:
            journal.hold()
        tally = self.pipeline.tally
        requested = tally.label_requests
        self._process_queued()
        # Answers after the data queued: a few, or as many as that data asked for.
        answers = bridge.answers
        for _ in range(answers_to_take(len(answers), tally.label_requests - requested)):
            self._process(answers.popleft())
        if journal is not None:
            self._write_journal()  # before any message of the turn is acknowledged
        self._release_acks()
        bridge.flush()

    def _write_journal(self) -> None:
        """The label journal's held records, written (one ``write``); a failure is
        counted per lesson and logged, as a failed record was."""
        journal = self.journal
        lessons = journal.held_lessons
        try:
            journal.release()
        except OSError as exc:
            self._journal_errors.inc(max(1, lessons))
            self._log.warning("journal_error", "%d lesson(s) not journaled: %s", lessons, exc)


def taken_by_broker(info: Any) -> bool:
    """Whether paho's message info says the broker has the message (QoS 0: written)."""
    try:
        return info.is_published()
    except (ValueError, RuntimeError):
        return True  # never queued (counted as dropped): nothing to wait for
