"""Prometheus' text exposition format (version 0.0.4), written in one place: every
family the gateway exposes (its counters, per-stream figures, gauges) goes through
:func:`family`, with one escaper for label values and HELP texts.

>>> print(family("edgelearn_messages_total", "counter", "inbound messages",
...              [({"gateway": 'g"1'}, 3)]), end="")
# HELP edgelearn_messages_total inbound messages
# TYPE edgelearn_messages_total counter
edgelearn_messages_total{gateway="g\\"1"} 3
>>> number(float("nan")), number(True), number(None)
('NaN', '1', 'NaN')
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["CONTENT_TYPE", "escape_help", "escape_label", "family", "labels", "number"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def escape_label(value: Any) -> str:
    """A label value: backslash, double quote and line feed escaped."""
    return str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def escape_help(text: str) -> str:
    """A HELP text: backslash and line feed escaped (quotes stay)."""
    return str(text).replace("\\", "\\\\").replace("\n", "\\n")


def labels(values: Mapping[str, Any]) -> str:
    """``{k="v",...}`` (empty for no labels)."""
    if not values:
        return ""
    return "{" + ",".join(f'{k}="{escape_label(v)}"' for k, v in values.items()) + "}"


def number(value: Any) -> str:
    """A sample value: bools as 1/0, NaN and None (unknown) as NaN, floats exactly."""
    if value is None:
        return "NaN"
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "+Inf" if value > 0 else "-Inf"
        return repr(value)
    return str(int(value))


def family(name: str, kind: str, help_text: str,
           samples: Iterable[tuple[Mapping[str, Any], Any]]) -> str:
    """One metric family: its HELP and TYPE lines, then a line per ``(labels, value)``;
    nothing for a family without samples (a query for it would find no series). A
    counter's name ends in ``_total``, as Prometheus' conventions (and ``promtool check
    metrics``) ask: ``_total`` is added where the name lacks it."""
    samples = list(samples)
    if not samples:
        return ""
    if kind == "counter" and not name.endswith("_total"):
        name += "_total"
    lines = [f"# HELP {name} {escape_help(help_text)}", f"# TYPE {name} {kind}"]
    lines.extend(f"{name}{labels(sample_labels)} {number(value)}"
                 for sample_labels, value in samples)
    return "\n".join(lines) + "\n"
