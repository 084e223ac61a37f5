"""Small helpers every check of the wire shares: a value's wire type and a short,
safe rendering of it for a reject's detail."""

from __future__ import annotations

from typing import Any

import msgpack


def wire_type(value: Any) -> str:
    # Firmware authors think in msgpack types, so name those.
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, bytes):
        return "bin"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, msgpack.Timestamp):
        return "timestamp"
    if isinstance(value, msgpack.ExtType):
        return "ext"
    return type(value).__name__


def show(value: Any, width: int = 40) -> str:
    # repr escapes control characters; truncation keeps attacker-sized strings out of logs.
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
