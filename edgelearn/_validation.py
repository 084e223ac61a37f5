"""Parameter checks with scikit-learn-style error messages.

Every public constructor and function of edgelearn validates its parameters with
these helpers so that a user sees one message shape everywhere::

    The '<name>' parameter of <owner> must be <constraint>. Got <value>.

A value of the wrong type raises ``TypeError``; a value of the right type outside
the allowed set raises ``ValueError``. ``bool`` is never accepted as a number (it is
an ``int`` subclass in Python, but ``C=True`` is always a mistake).

Each helper returns the value converted to a plain Python scalar, so callers can
write ``self.C = check_number("C", C, "PAACDS", 0, None, low_open=True)``.

>>> check_number("C", 0.5, "PAACDS", 0, None, low_open=True)
0.5
>>> check_number("C", -1, "PAACDS", 0, None, low_open=True)
Traceback (most recent call last):
...
ValueError: The 'C' parameter of PAACDS must be a float in (0, inf]. Got -1.
>>> check_choice("mode", 3, "PA", (0, 1, 2))
Traceback (most recent call last):
...
ValueError: The 'mode' parameter of PA must be one of {0, 1, 2}. Got 3.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Iterable

import numpy as np

__all__ = ["check_number", "check_choice", "check_bool", "format_value"]


def format_value(value: Any) -> str:
    """Render a value for an error message (NumPy scalars as their Python value).

    >>> format_value(np.float64(1.5)), format_value("a"), format_value(float("inf"))
    ('1.5', "'a'", 'inf')
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
    return repr(value)


def _format_bound(bound: float) -> str:
    # Whole-number float bounds print as ints ("[0, 1]" rather than "[0.0, 1.0]"),
    # which is how people write intervals.
    if math.isinf(bound):
        return "inf" if bound > 0 else "-inf"
    if float(bound).is_integer():
        return str(int(bound))
    return repr(float(bound))


def _message(name: str, owner: str, constraint: str, value: Any) -> str:
    return (
        f"The '{name}' parameter of {owner} must be {constraint}. "
        f"Got {format_value(value)}."
    )


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


def check_number(
    name: str,
    value: Any,
    owner: str,
    low: float | None,
    high: float | None,
    low_open: bool = False,
    high_open: bool = False,
    integer: bool = False,
) -> int | float:
    """Check that ``value`` is a number in an interval; return it as ``float``/``int``.

    ``low``/``high`` of ``None`` mean -inf/inf; an infinite bound is closed unless
    ``low_open``/``high_open`` says otherwise, so ``C=inf`` passes
    ``check_number("C", C, "PAACDS", 0, None, low_open=True)`` (hard-margin PA).
    With ``integer=True`` only integers are accepted (``3.0`` is a ``TypeError``),
    infinite bounds are shown open, and an ``int`` is returned. NaN is never in an
    interval.

    >>> check_number("alpha", 1.5, "drop_features", 0, 1)
    Traceback (most recent call last):
    ...
    ValueError: The 'alpha' parameter of drop_features must be a float in [0, 1]. Got 1.5.
    >>> check_number("window", 256, "MultiLabelKELM", 1, None, integer=True)
    256
    >>> check_number("window", True, "MultiLabelKELM", 1, None, integer=True)
    Traceback (most recent call last):
    ...
    TypeError: The 'window' parameter of MultiLabelKELM must be an int in [1, inf). Got True.
    """
    lo = -math.inf if low is None else float(low)
    hi = math.inf if high is None else float(high)
    lo_open, hi_open = low_open, high_open
    if integer:
        # An int can never equal an infinite bound, so say so in the message.
        lo_open = lo_open or math.isinf(lo)
        hi_open = hi_open or math.isinf(hi)
    interval = (
        ("(" if lo_open else "[")
        + _format_bound(lo)
        + ", "
        + _format_bound(hi)
        + (")" if hi_open else "]")
    )
    constraint = ("an int in " if integer else "a float in ") + interval

    if _is_bool(value):
        raise TypeError(_message(name, owner, constraint, value))
    if integer:
        if not isinstance(value, numbers.Integral):
            raise TypeError(_message(name, owner, constraint, value))
        result: int | float = int(value)
    else:
        if not isinstance(value, numbers.Real):
            raise TypeError(_message(name, owner, constraint, value))
        result = float(value)
        if math.isnan(result):
            raise ValueError(_message(name, owner, constraint, value))

    below = result <= lo if lo_open else result < lo
    above = result >= hi if hi_open else result > hi
    if below or above:
        raise ValueError(_message(name, owner, constraint, value))
    return int(value) if integer else result


def _format_choices(choices: Iterable[Any]) -> tuple[list[Any], str]:
    items = list(choices)
    if isinstance(choices, (set, frozenset)):
        # Sets have no stable order across runs; sort when the items allow it so
        # the message is deterministic.
        try:
            items = sorted(items)
        except TypeError:
            items = sorted(items, key=repr)
    return items, "one of {" + ", ".join(format_value(c) for c in items) + "}"


def check_choice(name: str, value: Any, owner: str, choices: Iterable[Any]) -> Any:
    """Check that ``value`` is one of ``choices``; return the matching choice.

    ``True`` does not match ``1`` (nor ``False`` ``0``) unless the choice itself is
    a bool. Unhashable values are compared by equality and simply do not match.

    >>> check_choice("kind", "nb", "OnlineEnsemble", ("kelm", "pa", "nb"))
    'nb'
    >>> check_choice("kind", "svm", "OnlineEnsemble", ("kelm", "pa", "nb"))
    Traceback (most recent call last):
    ...
    ValueError: The 'kind' parameter of OnlineEnsemble must be one of {'kelm', 'pa', 'nb'}. Got 'svm'.
    """
    items, constraint = _format_choices(choices)
    for choice in items:
        if _is_bool(value) != _is_bool(choice):
            continue
        try:
            equal = bool(value == choice)
        except Exception:  # e.g. an array compared to a scalar
            equal = False
        if equal:
            return choice
    raise ValueError(_message(name, owner, constraint, value))


def check_bool(name: str, value: Any, owner: str) -> bool:
    """Check that ``value`` is a bool (Python or NumPy); return a Python ``bool``.

    >>> check_bool("shuffle", np.True_, "f")
    True
    >>> check_bool("shuffle", 1, "f")
    Traceback (most recent call last):
    ...
    TypeError: The 'shuffle' parameter of f must be a bool. Got 1.
    """
    if not _is_bool(value):
        raise TypeError(_message(name, owner, "a bool", value))
    return bool(value)
