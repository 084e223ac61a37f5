"""One stream's state: its learner, topics, counters, prequential metrics and
sequence accounting (the one rule for a reading's ``seq``)."""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Collection
from typing import Any

import edgelearn

from ..wire import Topics
from .tally import SEQUENCE_COUNTERS, Tally
from .tasks import rules_for

__all__ = ["SEQ_WINDOW", "StateMismatch", "StreamState", "compile_stream_pattern",
           "saved_stream", "state_problem"]

logger = logging.getLogger("firmware_bridge.pipeline")


class StateMismatch(ValueError):
    """A saved stream state does not fit this pipeline's learner configuration."""


def compile_stream_pattern(pattern: str) -> re.Pattern | None:
    """The allow-list pattern of stream names (``""``: none, any name is served).

    >>> compile_stream_pattern("room-[0-9]+").fullmatch("room-12") is not None
    True
    >>> compile_stream_pattern("room-(")
    Traceback (most recent call last):
    ...
    ValueError: The 'stream_pattern' parameter of Pipeline must be a regular expression (Python's re), or '' for any stream. Got 'room-(' (missing ), unterminated subpattern at position 5).
    """
    try:
        return re.compile(pattern) if pattern else None
    except (re.error, TypeError) as exc:
        raise ValueError(f"The 'stream_pattern' parameter of Pipeline must be a regular "
                         f"expression (Python's re), or '' for any stream. Got {pattern!r} "
                         f"({exc}).") from None


SEQ_WINDOW = 64
"""How far back the pipeline remembers which ``seq`` values arrived (one int per
stream): a reading within it that arrives late is out of order or a duplicate."""
_WINDOW_MASK = (1 << SEQ_WINDOW) - 1


class StreamState:
    """One stream's learner, topics, counters and prequential metrics, and what its
    task's rules (:mod:`firmware_bridge.pipeline.tasks`) keep for it."""

    __slots__ = (
        "name",
        "learner",
        "rules",
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
        "last_output",
        "settled_sides",
        "lean",
        "lean_checked",
    )

    #: The counters a checkpoint keeps and :meth:`counters` reports.
    COUNTERS = ("data", "asked", "label_requests", "learned", "unusable_labels",
                *SEQUENCE_COUNTERS)

    def __init__(self, name: str, learner: Any, topics: Topics):
        self.name = name
        self.learner = learner
        task = learner.task  # the learner contract (edgelearn.learners.base)
        self.multilabel = task == "multilabel"
        self.binary = task == "binary"
        self.rules = rules_for(task)
        self.metrics = self.rules.new_metrics(learner)
        self.sides = self.rules.new_sides(name, learner)
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
        self.last_output: dict | None = None  # the latest prediction message's fields
        # Binary streams whose two labels are settled (both the stream's and the
        # learner's): label -> (its type, is it the positive one), so the usual message
        # skips the label checks (their verdict cannot change once both are full).
        self.settled_sides: dict = {}
        # A binary stream whose labels are settled: what its one-call path needs
        # (pipeline.lean.LeanBinary), built when they settle; None until then.
        self.lean = None
        self.lean_checked = 0  # len(settled_sides) when the pipeline last looked

    def counters(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.COUNTERS}

    def load_counters(self, counters: dict, last_seq: Any) -> None:
        """Counters and the last ``seq`` from a checkpoint (anything else is ignored)."""
        for name, value in counters.items():
            if name in self.COUNTERS and isinstance(value, int):
                setattr(self, name, value)
        self.last_seq = last_seq if isinstance(last_seq, int) else -1
        self.seq_window = 1 if self.last_seq >= 0 else 0

    def forget_last_seq(self) -> None:
        self.last_seq, self.seq_window = -1, 0

    def status(self) -> dict[str, Any]:
        channels = self.learner.channels
        return {
            **self.counters(),
            "last_seq": self.last_seq,
            **self.rules.status(self.metrics),
            "query_rate": self.asked / self.data if self.data else 0.0,
            "channels": channels.n_assigned,
            "channels_ignored": channels.n_ignored,
            "channels_evicted": channels.n_evicted,
            "memory_bytes": self.learner.memory_bytes(),
            **self.learner.report(),
        }

    def note_seq(self, seq: int, tally: Tally) -> None:
        """Account for a reading's ``seq``: the next one (the usual case), or a gap, a
        restart, a duplicate or a late one (counted here and in ``tally``, a gap and a
        restart logged)."""
        last = self.last_seq
        if seq == last + 1:
            self.last_seq = seq
            self.seq_window = ((self.seq_window << 1) | 1) & _WINDOW_MASK
        elif last < 0:  # the stream's first reading (or the first after a crash)
            self.last_seq, self.seq_window = seq, 1
        elif seq > last:
            gap = seq - last - 1
            self.seq_missing += gap
            tally.sequence["seq_missing"] += gap
            self.last_seq = seq
            self.seq_window = (
                ((self.seq_window << (gap + 1)) | 1) & _WINDOW_MASK if gap < SEQ_WINDOW else 1
            )
            tally.log.warning("seq_gap", "stream %r: %d message(s) missing (seq %d after %d)",
                              self.name, gap, seq, last)
        elif seq == 0 or last - seq >= SEQ_WINDOW:
            self.seq_restarts += 1
            tally.sequence["seq_restarts"] += 1
            self.last_seq, self.seq_window = seq, 1
            tally.log.warning("seq_restart", "stream %r: seq %d after %d (the sensor "
                              "restarted?)", self.name, seq, last)
        else:
            bit = 1 << (last - seq)
            if seq == last or self.seq_window & bit:
                self.seq_duplicates += 1
                tally.sequence["seq_duplicates"] += 1
            else:  # late, but it came: no longer missing
                self.seq_window |= bit
                self.seq_out_of_order += 1
                self.seq_missing -= 1
                tally.sequence["seq_out_of_order"] += 1
                tally.sequence["seq_missing"] -= 1

    def add_sequence_counts(self, moved: list[int], tally: Tally) -> None:
        """Add the sequence counts a jitted pass found (in :data:`SEQUENCE_COUNTERS`
        order; ``pipeline/kernels/rows.sequence``), logging gaps and restarts once."""
        for key, count in zip(SEQUENCE_COUNTERS, moved):
            if count:
                setattr(self, key, getattr(self, key) + count)
                tally.sequence[key] += count
        if moved[0] or moved[3]:
            tally.log.warning("seq_gap", "stream %r: seq gaps or restarts in a batch or a "
                              "replayed log (%d missing, %d restarts)", self.name, moved[0],
                              moved[3])


def _as_saved(value: Any) -> Any:
    """A parameter as a checkpoint gives it back: msgpack has no tuples, so a tuple
    (SurpriseDetector's ``evidence``) is saved as a list."""
    return [_as_saved(v) for v in value] if isinstance(value, (tuple, list)) else value


def saved_stream(stream: Any, state: Any, learner_class: type, params: dict[str, Any],
                 topics: Topics, configured: Collection[str] | None = None) -> StreamState:
    """``stream``'s state rebuilt from ``state`` (``Pipeline.to_state``'s) with a learner of
    ``learner_class`` and ``params``; :class:`StateMismatch` if it does not fit
    (:func:`state_problem`; ``configured``: the parameters the configuration sets)."""
    reject = None if isinstance(stream, str) else "stream must be a str"
    if reject is None:
        reject = state_problem(stream, state, learner_class, params, configured)
    if reject:
        raise StateMismatch(f"cannot restore stream {stream!r}: {reject}")
    try:
        learner = edgelearn.from_state(state["learner"])
    except (KeyError, TypeError, ValueError) as exc:
        raise StateMismatch(f"cannot restore stream {stream!r}: {exc}") from None
    restored = learner.get_params()
    kept = _differences(restored, params, restored)
    if kept:  # defaults the configuration leaves open, changed since the state was saved
        logger.info("stream %r keeps its saved learner parameters, not today's defaults: %s",
                    stream, ", ".join(f"{name} saved {old!r}, default {new!r}" for name, old, new in kept))
    entry = StreamState(stream, learner, topics)
    entry.load_counters(state.get("counters", {}), state.get("last_seq", -1))
    return entry


def state_problem(
    stream: str, state: Any, learner_class: type, params: dict[str, Any],
    configured: Collection[str] | None = None,
) -> str | None:
    """Why ``state`` (``Pipeline.to_state``'s) cannot be ``stream``'s with a learner of
    ``learner_class`` and ``params``, or None.

    With ``configured`` (the names of the parameters the configuration sets), only those
    must agree: a parameter left at its default keeps the value it was saved with, so a
    default that an upgrade changes does not discard a learned model (the learner goes on
    as it was saved; :func:`saved_stream` logs the difference). Without it, every parameter
    must agree."""
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
    changed = _differences(saved, params, set(saved) | set(params) if configured is None else configured)
    if changed:
        return "learner parameters differ from the configuration: " + ", ".join(
            f"{name} saved {old!r}, configured {new!r}" for name, old, new in changed
        )
    return None


def _differences(saved: dict[str, Any], params: dict[str, Any], names: Collection[str]) -> list:
    """``(name, saved value, value in params)`` for each of ``names`` where the two differ."""
    return [(name, saved.get(name), params.get(name)) for name in sorted(names)
            if _as_saved(saved.get(name)) != _as_saved(params.get(name))]


