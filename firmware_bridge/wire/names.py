"""The name rule of channel names, stream ids and request ids, and the cache of names
that passed it."""

from __future__ import annotations

import functools
from typing import Any

from .values import show, wire_type

FORBIDDEN_IN_NAMES = frozenset("/+#")


def name_problem(value: Any, max_bytes: int) -> str | None:
    """What is wrong with ``value`` as a channel name / stream id / request id, or None."""
    if type(value) is not str:  # also keeps lists and maps (unhashable) out of the cache
        return f"must be a str, got {wire_type(value)}"
    if len(value) > max_bytes:  # a str has at least as many UTF-8 bytes as characters
        return f"must be at most {max_bytes} bytes of UTF-8, got {len(value)}: {show(value)}"
    if len(value) > _CACHED_NAME_CHARS:
        return _str_name_problem.__wrapped__(value, max_bytes)
    return _str_name_problem(value, max_bytes)


#: Longest name whose verdict is remembered: the cache then holds at most
#: 4096 x (256 characters + a short verdict), about 4 MB.
_CACHED_NAME_CHARS = 256


# Sensors send the same few channel names in every message: remembering the verdicts
# takes the checks off the per-message path. Bounded, so a flood of new names only
# churns it.
@functools.lru_cache(maxsize=4096)
def _str_name_problem(value: str, max_bytes: int) -> str | None:
    if not value:
        return "must not be empty"
    size = len(value.encode("utf-8"))
    if size > max_bytes:
        return f"must be at most {max_bytes} bytes of UTF-8, got {size}: {show(value)}"
    if not value.isprintable():
        return f"must not contain control or unprintable characters, got {show(value)}"
    for char in value:
        if char.isspace():
            return f"must not contain whitespace, got {show(value)}"
        if char in FORBIDDEN_IN_NAMES:
            return f"must not contain {char!r}, got {show(value)}"
    return None


class KnownNames:
    """Channel names that passed the name rules, so a message whose names are all known
    costs one C-level subset test instead of a check per name. Bounded: it starts over
    when ``capacity`` names are known (a flood of new names only churns it).

    >>> names = KnownNames(64)
    >>> names.all_good({"temp": 1.0}), names.all_good({"a b": 1.0}), len(names)
    (True, False, 1)
    """

    __slots__ = ("_names", "_max_bytes", "capacity")

    def __init__(self, max_bytes: int, capacity: int = 4096):
        self._names: set[str] = set()
        self._max_bytes = max_bytes
        self.capacity = capacity

    def __len__(self) -> int:
        return len(self._names)

    def all_good(self, names: Any) -> bool:
        """Whether every key of ``names`` is a valid channel name."""
        known = self._names
        if known.issuperset(names):
            return True
        for name in names:
            if name not in known and name_problem(name, self._max_bytes) is not None:
                return False
        if len(known) + len(names) > self.capacity:
            known.clear()
        known.update(names)
        return True
