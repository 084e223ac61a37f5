"""What an inbound message becomes: a data message, a batch of readings, a label answer,
or a :class:`Reject` whose reason is one of :data:`REJECT_REASONS` (counter names), and
the counters of those reasons."""

from __future__ import annotations

import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Union

REJECT_REASONS: Mapping[str, str] = types.MappingProxyType(
    {
        "unknown_topic": "the topic matches no inbound template",
        "bad_stream_id": "the stream id in the topic breaks the name rules or is reserved",
        "too_large": "the payload is longer than Limits.max_payload_bytes",
        "not_msgpack": "the payload is not exactly one well-formed msgpack object "
        "(truncated, reserved byte, trailing bytes, invalid UTF-8, array or map as a map key)",
        "too_long": "a str, bin, ext, array or map is longer than its Limits bound",
        "too_deep": "containers nest deeper than Limits.max_depth",
        "not_a_map": "the message is not a msgpack map",
        "missing_field": "a required field is absent",
        "bad_field_type": "'ts', 'seq', 'ch' or 'req' has the wrong type or value",
        "too_many_channels": "'ch' has more than Limits.max_channels entries",
        "bad_channel_name": "a channel name breaks the name rules",
        "bad_value_type": "a channel value is not an int or float (bool included)",
        "bad_label": "'y' is not a valid label",
        "bad_batch": "'readings' is not a non-empty array, or the batch also has "
        "'ts', 'seq' or 'ch'",
        "too_many_readings": "'readings' has more than Limits.max_batch_readings entries",
        "not_json": "the payload starts like a JSON object ('{') but is not one well-formed "
        "JSON object in UTF-8 (or JSON payloads are switched off)",
    }
)
"""Every reason a :class:`Reject` can carry, with what it means; these are counter names."""


COUNTER_KEYS: tuple[str, ...] = (*REJECT_REASONS, "non_finite_values")
"""The keys of :meth:`RejectCounters.as_dict`: the reject reasons, then
``"non_finite_values"`` (channel values dropped for being NaN or infinite, in messages
that were kept)."""


Label = Union[bool, int, str, dict[str, bool]]


@dataclass(frozen=True)
class DataMessage:
    """A valid sensor reading. ``channels`` holds only finite values (as ``float``);
    ``non_finite`` names the channels dropped for being NaN or infinite."""

    stream: str
    ts: float
    seq: int
    channels: dict[str, float]
    y: Label | None = None
    non_finite: tuple[str, ...] = ()


@dataclass(frozen=True)
class DataBatch:
    """A batch of readings of one stream: ``readings`` the valid ones and
    ``rejects`` the others (as ``(index in the batch, Reject)``), both in batch order.
    The batch as a whole was well-formed; at least one of the two is non-empty."""

    stream: str
    readings: tuple[DataMessage, ...]
    rejects: tuple[tuple[int, "Reject"], ...] = ()


@dataclass(frozen=True)
class LabelMessage:
    """A label answer for the pending request ``req`` of ``stream``."""

    stream: str
    req: str
    y: Label


@dataclass(frozen=True)
class Reject:
    """A message that was dropped: ``reason`` is a key of :data:`REJECT_REASONS`,
    ``detail`` a human-readable explanation for a (rate-limited) log line."""

    reason: str
    detail: str

    def __post_init__(self) -> None:
        if self.reason not in REJECT_REASONS:
            raise ValueError(f"unknown reject reason {self.reason!r}")


class RejectCounters:
    """Counts of rejects by reason, and of dropped non-finite channel values.

    The key set is fixed (:data:`COUNTER_KEYS`), so memory is bounded whatever
    arrives. Not thread-safe: the pipeline thread counts.

    >>> counters = RejectCounters()
    >>> counters.count(Reject("too_large", "payload is 5000 bytes"))
    >>> counters.count(DataMessage("s", 0.0, 0, {}, non_finite=("a", "b")))
    >>> counters["too_large"], counters["non_finite_values"], counters.total_rejects
    (1, 2, 1)
    """

    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts = dict.fromkeys(COUNTER_KEYS, 0)

    def count(self, result: DataMessage | DataBatch | LabelMessage | Reject) -> None:
        """Count one parse result: a reject by its reason, a data message by its
        dropped non-finite values, a batch as each of its readings and rejects,
        anything else not at all."""
        if isinstance(result, Reject):
            self._counts[result.reason] += 1
        elif isinstance(result, DataMessage) and result.non_finite:
            self._counts["non_finite_values"] += len(result.non_finite)
        elif isinstance(result, DataBatch):
            for reading in result.readings:
                self.count(reading)
            for _, reject in result.rejects:
                self.count(reject)

    def __getitem__(self, key: str) -> int:
        return self._counts[key]

    @property
    def total_rejects(self) -> int:
        return sum(self._counts[reason] for reason in REJECT_REASONS)

    def as_dict(self) -> dict[str, int]:
        """A copy of every counter, zeros included (a stable status schema)."""
        return dict(self._counts)
