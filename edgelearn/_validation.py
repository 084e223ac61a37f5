"""Parameter checks with scikit-learn-style error messages.

Thin function-style uses of :mod:`edgelearn.constraints` for checks made inline
(a function argument rather than a declared parameter), with the one message
shape used everywhere::

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

from typing import Any, Iterable

import numbers

import numpy as np

from edgelearn.constraints import Boolean, Interval, Options, check, format_value

__all__ = ["check_number", "check_choice", "check_bool", "check_seed", "format_value"]


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
    interval. Same as ``check(owner, name, value, Interval(...))``.

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
    closed = {(False, False): "both", (False, True): "left",
              (True, False): "right", (True, True): "neither"}[(bool(low_open), bool(high_open))]
    constraint = Interval(int if integer else float, low, high, closed=closed)
    return check(owner, name, value, constraint)


def check_choice(name: str, value: Any, owner: str, choices: Iterable[Any]) -> Any:
    """Check that ``value`` is one of ``choices``; return the matching choice.

    ``True`` does not match ``1`` (nor ``False`` ``0``) unless the choice itself is
    a bool. Unhashable values are compared by equality and simply do not match.
    A set of choices is listed sorted, so the message is the same on every run.

    >>> check_choice("kind", "nb", "OnlineEnsemble", ("kelm", "pa", "nb"))
    'nb'
    >>> check_choice("kind", "svm", "OnlineEnsemble", ("kelm", "pa", "nb"))
    Traceback (most recent call last):
    ...
    ValueError: The 'kind' parameter of OnlineEnsemble must be one of {'kelm', 'pa', 'nb'}. Got 'svm'.
    """
    items = list(choices)
    if isinstance(choices, (set, frozenset)):
        try:
            items = sorted(items)
        except TypeError:
            items = sorted(items, key=repr)
    return check(owner, name, value, Options(*items))


def check_bool(name: str, value: Any, owner: str) -> bool:
    """Check that ``value`` is a bool (Python or NumPy); return a Python ``bool``.

    >>> check_bool("shuffle", np.True_, "f")
    True
    >>> check_bool("shuffle", 1, "f")
    Traceback (most recent call last):
    ...
    TypeError: The 'shuffle' parameter of f must be a bool. Got 1.
    """
    return check(owner, name, value, Boolean())


def check_seed(seed: Any, owner: str) -> np.random.Generator:
    """A ``seed`` parameter (an int >= 0, a numpy Generator or SeedSequence, or None)
    as the generator ``numpy.random.default_rng(seed)`` makes."""
    ok = seed is None or isinstance(seed, (np.random.Generator, np.random.SeedSequence))
    if isinstance(seed, numbers.Integral) and not isinstance(seed, (bool, np.bool_)):
        ok = seed >= 0
        if not ok:
            raise ValueError(f"The 'seed' parameter of {owner} must be an int in "
                             f"[0, inf), a numpy Generator or None. Got "
                             f"{format_value(seed)}.")
    if not ok:
        raise TypeError(f"The 'seed' parameter of {owner} must be an int in [0, inf), "
                        f"a numpy Generator or None. Got {format_value(seed)}.")
    return np.random.default_rng(seed)
