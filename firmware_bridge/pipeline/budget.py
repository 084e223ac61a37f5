"""The pipeline's memory budget: what its tables can hold at most, fixed at construction."""

from __future__ import annotations

from typing import Any

from .lean import LeanBinary

__all__ = ["memory_budget"]

# What one pending request costs beyond its features: the entry, its id string, the
# dict slot and the recent-id entry it later becomes (measured with sys.getsizeof,
# rounded up). The features are at most max_channels int32 slots and float64 values.
_PENDING_ENTRY_BYTES = 512
_RECENT_ID_BYTES = 256
_FEATURE_BYTES_PER_CHANNEL = 4 + 8
_ARRAY_OVERHEAD_BYTES = 2 * 112
# A stream's bookkeeping beyond its learner: topic strings, counters, metrics rows.
_STREAM_OVERHEAD_BYTES = 2048
_METRIC_ROW_BYTES = 256


def memory_budget(*, learner_bytes: int, label_rows: int, lean: bool, limits: Any, labels: Any,
                  max_streams: int, learners: int) -> dict[str, int]:
    """``learners`` (the streams that exist, as given), ``learners_max`` (``max_streams``
    streams, each with its learner, bookkeeping and metric rows, and a one-call slot
    table when ``lean``), ``pending_labels`` (the label table ``labels`` when full, an
    estimate) and ``total``."""
    per_stream = learner_bytes + _STREAM_OVERHEAD_BYTES + _METRIC_ROW_BYTES * label_rows
    if lean:
        per_stream += LeanBinary.memory_bytes(limits.max_channel_name_bytes)
    features = _FEATURE_BYTES_PER_CHANNEL * limits.max_channels + _ARRAY_OVERHEAD_BYTES
    pending = labels.capacity * (_PENDING_ENTRY_BYTES + features) + (
        labels.recent_capacity * _RECENT_ID_BYTES
    )
    learners_max = per_stream * max_streams
    return {
        "learners": learners,
        "learners_max": learners_max,
        "pending_labels": pending,
        "total": learners_max + pending,
    }
