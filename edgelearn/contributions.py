"""A contribution as bytes: packed with its sender, group and weight, versioned and
checksummed, and checked before anything of it is merged.

:func:`pack` writes an envelope (msgpack)::

    {"v": 1, "group": str, "sender": str, "seq": int, "weight": float, "crc32": int,
     "body": bytes}

``seq`` numbers a sender's contributions (a receiver drops one it has had: QoS 1 may
deliver a message twice, and a delta added twice would count twice); ``body`` is the msgpack of the contribution (:mod:`edgelearn.merging`) and
``crc32`` its CRC-32. :func:`unpack` takes the bytes back and checks everything a
sender could get wrong or make up; what fails raises :class:`Rejected` with one
of :data:`REASONS` (a caller counts by it) and a message saying what arrived.
Pure functions: no broker, no clock, no state.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

import msgpack

from .merging import CONTRIBUTION_VERSION, MAX_WEIGHT

#: The envelope format this build writes and reads.
ENVELOPE_VERSION = 1

#: Why a contribution is refused: the counters' names.
REASONS: dict[str, str] = {
    "too_large": "more bytes than max_bytes",
    "malformed": "not a msgpack envelope with the fields of this format",
    "version": "an envelope or contribution version this build does not read",
    "checksum": "the body's CRC-32 is not the envelope's",
    "weight": "a stated weight outside [0, max_weight]",
    "kind": "another learner kind or structure than the group's",
    "channel_flood": "more channels than max_channels",
    "sizes": "columns whose lengths or widths do not match the channel names",
    "not_finite": "a NaN or infinite number",
    "out_of_bounds": "a count or precision beyond its bound, or a negative one",
    "content": "contents no learner of the group could have learned (precision beyond its readings, "
               "more labels than n_classes, bin counts beyond the readings)",
}


class Rejected(ValueError):
    """A contribution that failed a check: ``reason`` (one of :data:`REASONS`)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    """What a receiver accepts from one contribution."""

    #: Bytes of the whole message.
    max_bytes: int = 4_000_000
    #: Channels in one contribution (a flood of made-up names is refused whole).
    max_channels: int = 4096
    #: Longest channel name (characters).
    max_name_length: int = 64
    #: Largest stated weight.
    max_weight: float = MAX_WEIGHT
    #: Readings of one channel in one contribution.
    max_count: float = 1e7
    #: Largest absolute value of any other number (a precision, a sum).
    max_value: float = 1e12
    #: Numbers in one model-wide list (one per class for a multiclass model).
    max_classes: int = 256


@dataclass(frozen=True)
class Received:
    """A contribution that passed every check."""

    group: str
    sender: str
    seq: int
    weight: float
    contribution: dict


def pack(contribution: dict, group: str, sender: str, seq: int = 0, weight: float = 1.0) -> bytes:
    """The envelope's bytes for ``contribution``, the ``seq``-th of ``sender`` in ``group``."""
    body = msgpack.packb(contribution, use_bin_type=True)
    return msgpack.packb({"v": ENVELOPE_VERSION, "group": group, "sender": sender, "seq": int(seq),
                          "weight": float(weight),
                          "crc32": zlib.crc32(body), "body": body}, use_bin_type=True)


def unpack(data: bytes, limits: Limits = Limits(), kind: str | None = None,
           structure: dict | None = None) -> Received:
    """The checked contribution in ``data``, or :class:`Rejected`. ``kind`` and
    ``structure``, when given, are the group's: another is refused."""
    if len(data) > limits.max_bytes:
        raise Rejected("too_large", f"A contribution must be at most {limits.max_bytes} bytes. Got {len(data)}.")
    envelope = _unpacked(data, "envelope")
    if not isinstance(envelope, dict) or "v" not in envelope:
        raise Rejected("malformed", "A contribution must be a msgpack map with a 'v' field.")
    if envelope["v"] != ENVELOPE_VERSION:
        raise Rejected("version", f"Contribution envelope version must be {ENVELOPE_VERSION}. Got {envelope['v']!r}.")
    for field, types in (("group", str), ("sender", str), ("seq", int), ("weight", (int, float)), ("crc32", int),
                         ("body", bytes)):
        value = envelope.get(field)
        if not isinstance(value, types) or isinstance(value, bool):
            raise Rejected("malformed", f"A contribution's '{field}' must be a {_type_name(types)}. "
                                        f"Got {type(value).__name__}.")
    if zlib.crc32(envelope["body"]) != envelope["crc32"]:
        raise Rejected("checksum", f"The contribution's body has CRC-32 {zlib.crc32(envelope['body'])}; "
                                   f"its envelope says {envelope['crc32']}.")
    weight = float(envelope["weight"])
    if not math.isfinite(weight) or not 0.0 <= weight <= limits.max_weight:
        raise Rejected("weight", f"A contribution's weight must be in [0, {limits.max_weight:g}]. Got {weight!r}.")
    contribution = _unpacked(envelope["body"], "body")
    check(contribution, limits, kind, structure)
    return Received(envelope["group"], envelope["sender"], envelope["seq"], weight, contribution)


def check(contribution, limits: Limits = Limits(), kind: str | None = None,
          structure: dict | None = None) -> None:
    """Raise :class:`Rejected` unless ``contribution`` is a well-formed one within
    ``limits`` (and of ``kind`` and ``structure`` if given)."""
    if not isinstance(contribution, dict) or not isinstance(contribution.get("channels"), dict):
        raise Rejected("malformed", "A contribution must be a map with a 'channels' map.")
    if contribution.get("version") != CONTRIBUTION_VERSION:
        raise Rejected("version", f"Contribution version must be {CONTRIBUTION_VERSION}. "
                                  f"Got {contribution.get('version')!r}.")
    if kind is not None and contribution.get("kind") != kind:
        raise Rejected("kind", f"The group's learners are {kind}. Got {contribution.get('kind')!r}.")
    if structure is not None and contribution.get("structure") != structure:
        raise Rejected("kind", f"The group's structure is {structure!r}. Got {contribution.get('structure')!r}.")
    part = contribution["channels"]
    names = part.get("names")
    if not isinstance(names, list):
        raise Rejected("malformed", "A contribution's channels must have a 'names' list.")
    if len(names) > limits.max_channels:
        raise Rejected("channel_flood", f"A contribution may name at most {limits.max_channels} channels. "
                                        f"Got {len(names)}.")
    for name in names:
        if isinstance(name, bool) or not isinstance(name, (str, int)) \
                or (isinstance(name, str) and len(name) > limits.max_name_length):
            raise Rejected("malformed", f"A channel name must be an int or a str of at most "
                                        f"{limits.max_name_length} characters. Got {str(name)[:20]!r}.")
    if len(set(names)) != len(names):
        raise Rejected("sizes", "A contribution names a channel twice.")
    for column, rows in part.items():
        if column != "names":
            _check_column(column, rows, len(names), limits)
    for key, value in contribution.items():
        if key not in ("kind", "version", "structure", "labels", "channels"):
            if not isinstance(value, list) or len(value) > limits.max_classes:
                raise Rejected("sizes", f"A contribution's '{key}' must be a short list of numbers.")
            _check_numbers(key, value, limits.max_value)


def _check_column(column: str, rows, n_names: int, limits: Limits) -> None:
    if not isinstance(rows, list) or len(rows) != n_names:
        raise Rejected("sizes", f"The contribution's column '{column}' must have one row per channel "
                                f"({n_names}). Got {len(rows) if isinstance(rows, list) else type(rows).__name__}.")
    widths = {len(row) if isinstance(row, list) else None for row in rows}
    if len(widths) > 1:
        raise Rejected("sizes", f"The rows of the contribution's column '{column}' must be of one width. "
                                f"Got widths {sorted(widths, key=str)}.")
    flat = [v for row in rows for v in (row if isinstance(row, list) else [row])]
    if column == "n":
        _check_numbers(column, flat, limits.max_count, non_negative=True)
    else:
        _check_numbers(column, flat, limits.max_value, non_negative=column in ("var", "precision"))


def _check_numbers(where: str, values, bound: float, non_negative: bool = False) -> None:
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise Rejected("malformed", f"The contribution's '{where}' must hold numbers. Got {type(v).__name__}.")
        if not math.isfinite(v):
            raise Rejected("not_finite", f"The contribution's '{where}' must hold finite numbers. Got {v!r}.")
        if abs(v) > bound or (non_negative and v < 0):
            low = 0 if non_negative else -bound
            raise Rejected("out_of_bounds", f"The contribution's '{where}' must hold numbers in "
                                            f"[{low:g}, {bound:g}]. Got {v!r}.")


def _unpacked(data: bytes, what: str):
    try:
        return msgpack.unpackb(data, raw=False, strict_map_key=False)
    except Exception as error:  # msgpack raises several types for bad bytes; all mean the same here
        raise Rejected("malformed", f"The contribution's {what} is not msgpack: {type(error).__name__}.") from None


def _type_name(types) -> str:
    return "number" if isinstance(types, tuple) else types.__name__
