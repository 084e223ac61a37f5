"""What an answer (a data message's ``"y"``, a label answer's ``"y"``) may be on the
wire, by the task of the stream it is for:

* classification (``binary``, ``multiclass``, ``multilabel``): a ``bool``, an
  ``int``, a ``str`` (printable, 1 to ``Limits.max_label_bytes`` bytes of UTF-8) or,
  for multi-label streams, a non-empty map of such label names to ``bool``;
* ``regression``: a finite number (``int`` or ``float``; a ``bool`` is not one);
* ``anomaly``: a verdict: ``true``/``false``, or 1/0 (1: a real anomaly).

Anything else is the reject ``bad_label``.

>>> label_problem(21.5, Limits(), "regression") is None, label_problem(21.5, Limits())
(True, "'y' must be a bool, int, str or map of label name to bool, got float")
>>> label_problem("yes", Limits(), "anomaly")
"'y' of an anomaly stream must be a verdict: true/false or 1/0 (1: a real anomaly), got str"
"""

from __future__ import annotations

from typing import Any

import math

from .limits import Limits
from .values import show, wire_type


def label_text_problem(value: str, limits: Limits) -> str | None:
    if not value:
        return "must not be empty"
    size = len(value) if len(value) > limits.max_label_bytes else len(value.encode("utf-8"))
    if size > limits.max_label_bytes:
        return f"must be at most {limits.max_label_bytes} bytes of UTF-8, got {size}"
    if not value.isprintable():
        return f"must not contain control or unprintable characters, got {show(value)}"
    return None


#: The tasks whose answers are numbers or verdicts; every other task's are labels.
NUMBER_TASKS = ("regression",)
VERDICT_TASKS = ("anomaly",)


def label_problem(y: Any, limits: Limits, task: str = "binary") -> str | None:
    """What is wrong with ``y`` as an answer of a ``task`` stream, or None."""
    if task in NUMBER_TASKS:
        if isinstance(y, (int, float)) and not isinstance(y, bool):
            if isinstance(y, int) or math.isfinite(y):
                return None
            return f"'y' of a regression stream must be a finite number, got {y!r}"
        return f"'y' of a regression stream must be a number, got {wire_type(y)}"
    if task in VERDICT_TASKS:
        if isinstance(y, bool) or (isinstance(y, int) and y in (0, 1)):
            return None
        return ("'y' of an anomaly stream must be a verdict: true/false or 1/0 (1: a real "
                f"anomaly), got {wire_type(y) if not isinstance(y, int) else repr(y)}")
    if isinstance(y, (bool, int)):
        return None
    if isinstance(y, str):
        problem = label_text_problem(y, limits)
        return None if problem is None else f"'y' label {problem}"
    if isinstance(y, dict):
        if not y:
            return "'y' as a multi-label map must name at least one label"
        for name, value in y.items():
            if not isinstance(name, str):
                return f"'y' label names must be str, got {wire_type(name)}"
            problem = label_text_problem(name, limits)
            if problem:
                return f"'y' label name {problem}"
            if not isinstance(value, bool):
                return f"'y' label {show(name)} must map to a bool, got {wire_type(value)}"
        return None
    return f"'y' must be a bool, int, str or map of label name to bool, got {wire_type(y)}"
