"""The pipeline's totals and rejects, counted in one place that every path of the
pipeline (one message, the one-call path, jitted batches, offline replay of logs)
adds to, and that :meth:`Pipeline.counters <firmware_bridge.pipeline.Pipeline.counters>`
reads."""

from __future__ import annotations

from typing import Any, NamedTuple

from ..wire import REJECT_REASONS, RejectCounters
from .pending import Outcome
from .ratelog import RateLimitedLog

__all__ = ["LABEL_REJECTS", "PIPELINE_REJECTS", "REJECT_COUNTERS", "SEQUENCE_COUNTERS",
           "Outbound", "Tally"]

PIPELINE_REJECTS: dict[str, str] = {
    "too_many_streams": "data for a new stream when max_streams streams exist",
    "stream_not_allowed": "data for a new stream whose name does not match the allow-list "
    "pattern ([gateway] stream_pattern)",
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
``seq`` that starts again: 0, or more than ``SEQ_WINDOW`` below the last)."""

#: Label-table outcomes that are rejects (an answer that was not applied).
LABEL_REJECTS: tuple[str, ...] = tuple(f"label_{outcome.value}" for outcome in Outcome)

REJECT_COUNTERS: tuple[str, ...] = (*REJECT_REASONS, *PIPELINE_REJECTS, *LABEL_REJECTS)
"""Every reject counter the pipeline reports; ``rejected`` is their sum."""


class Outbound(NamedTuple):
    """A message to publish."""

    topic: str
    payload: bytes
    qos: int
    retain: bool


class Tally:
    """Totals over every stream, the wire's and the pipeline's rejects, and the log
    their warnings go to (at most one line per reason per interval)."""

    __slots__ = ("messages", "batches", "data", "label_messages", "predictions", "asked",
                 "label_requests", "learned", "sequence", "own_rejects", "rejects", "log")

    def __init__(self, log: RateLimitedLog):
        self.messages = 0
        self.batches = 0
        self.data = 0
        self.label_messages = 0
        self.predictions = 0
        self.asked = 0
        self.label_requests = 0
        self.learned = 0
        self.sequence = dict.fromkeys(SEQUENCE_COUNTERS, 0)
        self.own_rejects = dict.fromkeys(PIPELINE_REJECTS, 0)
        self.rejects = RejectCounters()
        self.log = log

    def reject(self, reason: str, message: str, *args: Any, count: int = 1) -> None:
        """Count ``count`` rejects of a pipeline reason and log (rate-limited) one line."""
        self.own_rejects[reason] += count
        self.log.warning(reason, message, *args)

    def unusable(self, stream: Any, y: Any, why: str, count: int = 1) -> None:
        """``count`` labels of ``stream`` its learner cannot take."""
        stream.unusable_labels += count
        self.reject("unusable_label", "stream %r: label %.40r: %s", stream.name, y, why,
                    count=count)

    def count_reject(self, message: Any, topic: str) -> None:
        """Count and log (rate-limited) a message the wire rejected."""
        self.rejects.count(message)
        self.log.warning(message.reason, "%s (topic %.80r)", message.detail, topic)

    def count_batch_rejects(self, message: Any, topic: str) -> None:
        """Count a batch's rejected readings (and its dropped values), logging each reason."""
        self.rejects.count(message)
        for index, reject in message.rejects:
            self.log.warning(reject.reason, "%s (reading %d of a batch on topic %.80r)",
                             reject.detail, index, topic)

    def totals(self) -> dict[str, int]:
        return {
            "messages": self.messages,
            "batches": self.batches,
            "data": self.data,
            "label_messages": self.label_messages,
            "predictions": self.predictions,
            "asked": self.asked,
            "label_requests": self.label_requests,
            "learned": self.learned,
        }


    def counters(self, label_table: dict[str, int]) -> dict[str, int]:
        """Every counter (:meth:`Pipeline.counters`), with the label table's counts
        ``label_table`` prefixed ``label_``, and ``rejected``, the sum of every reject."""
        counts = self.totals()
        counts.update(self.sequence)
        counts.update(self.rejects.as_dict())
        counts.update(self.own_rejects)
        for key, value in label_table.items():
            counts[f"label_{key}"] = value
        counts["rejected"] = (self.rejects.total_rejects + sum(self.own_rejects.values())
                              + sum(counts[key] for key in LABEL_REJECTS))
        return counts
