"""Pending label requests kept across a restart: ``labels.pending`` in the checkpoint directory.

A label request announces a TTL (an hour by default); a person may answer it after
the gateway was restarted for an upgrade. So at a clean stop whose final checkpoint
round wrote every changed stream, the gateway writes its pending requests
(their id, stream, seq, the features the learner saw, the prediction, and the TTL
left on the monotonic clock) and the ids of recently closed ones; at the next start
they are restored (:meth:`~firmware_bridge.pipeline.pending.PendingLabels.restore`)
on top of the checkpoints, less the time the gateway was away (measured by the wall
clock, counted as 0 if it stepped back), so an answer within the announced TTL is
learned whenever it arrives; the file is then removed, so a later crash cannot bring
back requests of two runs ago. (Only at the stop: written every checkpoint round, the
closed ids alone would add some 50 KB a round to the card's writes. After a crash the
pending requests are lost, as the acknowledged readings that caused them are.) A request of a stream that was not restored, or whose TTL
ran out while the gateway was away, is closed as expired: its answer counts as
``label_expired``, apart from ``label_unknown_request`` (ids this gateway never
issued, or issued after the last write before a crash). Bounded by the table's
capacity (``[labels]``).

The features are written after the final round checkpointed their streams, so their
slots mean what the restored channel maps say.

Format: a msgpack map ``{"format": "edgelearn-pending", "version": 1, "body": bin,
"crc32": int}``, ``body`` the msgpack array ``[saved_at (wall clock), pending,
closed]``; written to a temporary file, fsynced and renamed over the old one.
"""

from __future__ import annotations

import os
import time
import zlib
from typing import Any

import msgpack
import numpy as np

__all__ = ["PENDING_NAME", "save_pending", "load_pending"]

PENDING_NAME = "labels.pending"
_FORMAT = "edgelearn-pending"
_VERSION = 1


def _plain(value: Any) -> Any:
    """``value`` in msgpack's types: arrays as ``{"dtype", "shape", "bytes"}``."""
    if isinstance(value, np.ndarray):
        return {"dtype": value.dtype.str, "shape": list(value.shape),
                "bytes": np.ascontiguousarray(value).tobytes()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _array(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"dtype", "shape", "bytes"}:
        return np.frombuffer(value["bytes"], dtype=np.dtype(value["dtype"])).reshape(
            value["shape"]).copy()
    return value


def save_pending(path: str, labels: Any) -> int:
    """Write ``labels``' (a PendingLabels) pending requests and closed ids to ``path``
    atomically; returns how many requests were written."""
    pending, closed = labels.export()
    rows = [[req_id, stream, seq, _plain(list(features)), _plain(y_hat), remaining]
            for req_id, stream, seq, features, y_hat, remaining in pending]
    body = msgpack.packb([time.time(), rows, [list(c) for c in closed]], use_bin_type=True)
    data = msgpack.packb({"format": _FORMAT, "version": _VERSION, "body": body,
                          "crc32": zlib.crc32(body)}, use_bin_type=True)
    temporary = f"{path}.tmp"
    with open(temporary, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, path)
    return len(rows)


def load_pending(path: str) -> tuple[float, list[tuple], list[tuple]]:
    """``(saved_at, pending, closed)`` as :func:`save_pending` wrote them (pending rows
    with their features as arrays again); ``ValueError`` saying what is wrong with a
    damaged file, ``OSError`` for one that cannot be read."""
    with open(path, "rb") as file:
        data = file.read()
    try:
        outer = msgpack.unpackb(data, raw=False)
    except Exception as exc:  # noqa: BLE001 -- any decoding failure: damaged
        raise ValueError(f"{path}: not a pending-labels file ({exc})") from None
    if not (isinstance(outer, dict) and outer.get("format") == _FORMAT
            and outer.get("version") == _VERSION and isinstance(outer.get("body"), bytes)):
        raise ValueError(f"{path}: not a version {_VERSION} {_FORMAT} file")
    if zlib.crc32(outer["body"]) != outer.get("crc32"):
        raise ValueError(f"{path}: checksum mismatch (the file's bytes were changed)")
    saved_at, rows, closed = msgpack.unpackb(outer["body"], raw=False)
    pending = [(req_id, stream, seq, tuple(_array(f) for f in features), y_hat, remaining)
               for req_id, stream, seq, features, y_hat, remaining in rows]
    return float(saved_at), pending, [tuple(c) for c in closed]


def restore_pending(directory: str, pipeline: Any, log: Any,
                    on_disk: Any = lambda stream: False) -> dict[str, Any]:
    """Restore ``labels.pending`` of ``directory`` into ``pipeline``'s label table (its
    streams are restored already; ``on_disk(stream)``: whether a stream not restored
    has a checkpoint, which brings it back when an answer comes); the report for the
    status' ``checkpoints``."""
    path = os.path.join(directory, PENDING_NAME)
    report: dict[str, Any] = {"restored": 0, "expired": 0, "evicted": 0, "problem": None}
    if not os.path.exists(path):
        return report
    try:
        saved_at, pending, closed = load_pending(path)
    except (OSError, ValueError) as exc:
        report["problem"] = str(exc)
        log.warning("pending label requests not restored: %s", exc)
        return report
    finally:
        try:
            os.remove(path)  # taken (or unusable): a later start must not take it again
        except OSError:
            pass
    gone = {stream for stream in {row[1] for row in pending} - set(pipeline.streams)
            if not on_disk(stream)}
    report.update(pipeline.labels.restore(pending, closed, gone, time.time() - saved_at))
    log.info("label requests: %d pending request(s) of the last run restored, %d expired "
             "while the gateway was away or with their stream, %d evicted",
             report["restored"], report["expired"], report["evicted"])
    return report


def keep_pending(directory: str, pipeline: Any, log: Any) -> None:
    """Write ``pipeline``'s pending label requests to ``labels.pending`` (at a clean
    stop, after a final checkpoint round that wrote every changed stream), and log it."""
    try:
        written = save_pending(os.path.join(directory, PENDING_NAME), pipeline.labels)
    except (OSError, TypeError, ValueError) as exc:
        log.warning("pending label requests not written: %s", exc)
        return
    log.info("label requests: %d pending request(s) kept for the next start (%s)",
             written, PENDING_NAME)
