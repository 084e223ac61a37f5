"""How a configuration key is declared: :class:`Setting` (its constraint, default and
documentation) in a :class:`Section`, and the constraints the sections share. The
service's sections are in :mod:`firmware_bridge.service.config`; each output sink
declares its own beside its code (:mod:`firmware_bridge.service.sinks`)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import textwrap
from dataclasses import dataclass
from typing import Any

from edgelearn.constraints import Constraint, Text

from .mqtt import parse_broker

__all__ = ["BrokerList", "FROM_OWNER", "FieldList", "ID_TEXT", "PATH_TEXT", "Section", "Setting",
           "TOPIC_TEXT", "comment", "feed", "toml_value"]

FROM_OWNER = object()  # default: read from the object the key feeds


class BrokerList(Constraint):
    """A list of ``"HOST:PORT"`` strings, converted to ``((host, port), ...)``."""

    def describe(self) -> str:
        return 'a list of "HOST:PORT" strings'

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)

    def convert(self, value: Any) -> Any:
        if not self.accepts_type(value):
            self._reject(TypeError, value)
        try:
            return tuple(parse_broker(v) for v in value)
        except ValueError:
            self._reject(ValueError, value)

    def invalid_values(self) -> list:
        return ["localhost:1883", [1883], ["localhost"]]

    def valid_value(self) -> Any:
        return ["localhost:1883"]


class FieldList(Constraint):
    """A list of field names (str, dotted for nested JSON objects), as a tuple."""

    def describe(self) -> str:
        return "a list of non-empty str"

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, (list, tuple)) and all(isinstance(v, str) and v for v in value)

    def convert(self, value: Any) -> Any:
        if not self.accepts_type(value):
            self._reject(TypeError, value)
        return tuple(value)

    def invalid_values(self) -> list:
        return ["battery", [1], [""]]

    def valid_value(self) -> Any:
        return ["battery"]


def owner_default(owner: type, name: str) -> Any:
    if dataclasses.is_dataclass(owner):
        field = owner.__dataclass_fields__[name]
        if field.default is not dataclasses.MISSING:
            return field.default
        return field.default_factory()  # type: ignore[misc]
    return inspect.signature(owner).parameters[name].default


@dataclass(frozen=True)
class Setting:
    """One key: what it may be, its default, its documentation.

    ``feeds`` is ``(owner, parameter)`` when the value goes to a parameter of
    ``MqttSettings``, ``Pipeline``, ``Limits``, ``Topics`` or ``LogWriter``; the default
    is then that parameter's default. ``optional`` keys may be left out (shown
    commented out in the file, with ``example``)."""

    constraint: Constraint
    doc: str
    default: Any = FROM_OWNER
    feeds: tuple[type, str] | None = None
    optional: bool = False
    example: Any = None

    @property
    def value(self) -> Any:
        """The default value."""
        if self.default is FROM_OWNER:
            assert self.feeds is not None
            return owner_default(*self.feeds)
        return self.default


@dataclass(frozen=True)
class Section:
    doc: str
    keys: dict[str, Setting]


def feed(owner: type, name: str, constraint: Constraint, doc: str, **kw: Any) -> Setting:
    return Setting(constraint, doc, feeds=(owner, name), **kw)


ID_TEXT = Text(1, 24, pattern=r"[A-Za-z0-9_.:-]+", description="1 to 24 of A-Z a-z 0-9 _ . : -")
PATH_TEXT = Text()
TOPIC_TEXT = Text(1, pattern=r"[^+#\x00$][^+#\x00]*",
              description="an MQTT topic without wildcards ('+', '#') or a leading '$'",
              example="edgelearn/x")


def toml_value(value: Any) -> str:
    """``value`` as TOML (tuples of (host, port) as "HOST:PORT")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(
            toml_value(f"{v[0]}:{v[1]}" if isinstance(v, tuple) else v) for v in value
        ) + "]"
    return repr(value)


def comment(text: str, width: int = 84) -> list[str]:
    """``text`` (dedented, rewrapped) as TOML comment lines."""
    text = " ".join(textwrap.dedent(text).split())
    return ["# " + line for line in textwrap.wrap(text, width)] if text else []
