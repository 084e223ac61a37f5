"""Parameter constraints as data, with one error format.

Everything in edgelearn that takes parameters (learners, ``ChannelSpace``, the
gateway ``Pipeline``, the wire-protocol limits, the gateway config file) declares
what each parameter may be as a :class:`Constraint`, in the class body or schema::

    class PAACDS(...):
        _parameter_constraints = {
            "C": Interval(float, 0, None, closed="right"),
            "budget": Interval(int, 1, None),
        }

and checks values with :func:`check` / :func:`check_params`, so a user sees one
message shape everywhere::

    The '<name>' parameter of <owner> must be <description>. Got <value>.

A value of the wrong type raises ``TypeError``; a value of the right type that is
not allowed raises ``ValueError``. ``bool`` is never a number (it is an ``int``
subclass in Python, but ``C=True`` is always a mistake) and NaN is in no interval.
Checked values come back as plain Python values (``np.float32(0.5)`` -> ``0.5``).

Because constraints are data, a test suite can ask each one for values it must
reject (:meth:`Constraint.invalid_values`) and for one it must accept
(:meth:`Constraint.valid_value`); ``edgelearn.check_learner`` does exactly that.

This module imports only the standard library and NumPy.

>>> check("PAACDS", "C", 0.5, Interval(float, 0, None, closed="right"))
0.5
>>> check("PAACDS", "C", -1, Interval(float, 0, None, closed="right"))
Traceback (most recent call last):
...
ValueError: The 'C' parameter of PAACDS must be a float in (0, inf]. Got -1.
>>> check("PAACDS", "C", "1", Interval(float, 0, None, closed="right"))
Traceback (most recent call last):
...
TypeError: The 'C' parameter of PAACDS must be a float in (0, inf]. Got '1'.
>>> window = OneOf(Options(None), Interval(int, 1, None))
>>> window.describe()
'None or an int in [1, inf)'
>>> check_params("Model", {"window": None, "kind": "nb"},
...              {"window": window, "kind": Options("pa", "nb")})
{'window': None, 'kind': 'nb'}
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any, Mapping

import numpy as np

__all__ = [
    "Constraint",
    "Interval",
    "Options",
    "Boolean",
    "Text",
    "InstanceOf",
    "OneOf",
    "check",
    "check_params",
    "format_value",
]


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
    text = repr(value)
    # A huge value (a long string, a big list) must not flood a log line.
    return text if len(text) <= 200 else text[:197] + "..."


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_))


class Constraint:
    """What values one parameter may take.

    Subclasses implement :meth:`describe` (a noun phrase that completes "must be
    ..."), :meth:`convert` (the value as a plain Python value, or ``TypeError`` /
    ``ValueError``), :meth:`invalid_values` and :meth:`valid_value`.
    """

    def describe(self) -> str:
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        raise NotImplementedError

    def invalid_values(self) -> list:
        raise NotImplementedError

    def valid_value(self) -> Any:
        raise NotImplementedError

    def accepts_type(self, value: Any) -> bool:
        """Whether ``value`` has a type this constraint could accept.

        :class:`OneOf` uses it to choose between ``TypeError`` and ``ValueError``.
        """
        raise NotImplementedError

    def is_satisfied_by(self, value: Any) -> bool:
        """Whether :meth:`convert` accepts ``value``."""
        try:
            self.convert(value)
        except (TypeError, ValueError):
            return False
        return True

    def _reject(self, error: type, value: Any):
        raise error(f"must be {self.describe()}. Got {format_value(value)}.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}: {self.describe()}>"


_CLOSED = {
    "both": (True, True),
    "left": (True, False),
    "right": (False, True),
    "neither": (False, False),
}


def _format_bound(bound: float) -> str:
    # Whole-number bounds print as ints ("[0, 1]" rather than "[0.0, 1.0]"), which
    # is how people write intervals.
    if math.isinf(bound):
        return "inf" if bound > 0 else "-inf"
    if isinstance(bound, numbers.Integral) or float(bound).is_integer():
        return str(int(bound))
    return repr(float(bound))


def _exact(bound: float, kind: type) -> int | float:
    return int(bound) if kind is int and isinstance(bound, numbers.Integral) else float(bound)


class Interval(Constraint):
    """An ``int`` or a ``float`` in an interval.

    ``low``/``high`` of ``None`` mean -inf/inf. For floats an infinite bound is
    inside the interval when that side is closed, so ``C=inf`` (hard-margin PA)
    passes ``Interval(float, 0, None, closed="right")``. An int is never infinite,
    so int intervals show infinite ends open. A float interval accepts any real
    number (ints included) and returns a ``float``; an int interval accepts only
    integers (``3.0`` is a ``TypeError``) and returns an ``int``.

    >>> Interval(float, 0, 1).describe(), Interval(int, 1, None).describe()
    ('a float in [0, 1]', 'an int in [1, inf)')
    >>> Interval(float, 0, 1, closed="left").convert(np.float32(0.5))
    0.5
    """

    def __init__(self, kind: type, low: float | None, high: float | None,
                 closed: str = "both"):
        if kind not in (int, float):
            raise TypeError(f"Interval kind must be int or float, not {kind!r}.")
        if closed not in _CLOSED:
            raise ValueError(f"Interval closed must be one of {sorted(_CLOSED)}, "
                             f"not {closed!r}.")
        for bound in (low, high):
            if bound is not None and (_is_bool(bound)
                                      or not isinstance(bound, numbers.Real)
                                      or math.isnan(bound)):
                raise TypeError(f"Interval bounds must be numbers or None, not {bound!r}.")
        self.kind = kind
        self.low = low
        self.high = high
        self.closed = closed
        # Int bounds stay exact ints: float(2**64 - 1) is 2**64, which would print the
        # wrong bound and let a seed of 2**64 through.
        self._lo = -math.inf if low is None else _exact(low, kind)
        self._hi = math.inf if high is None else _exact(high, kind)
        self._lo_closed, self._hi_closed = _CLOSED[closed]
        if kind is int:
            # An int can never equal an infinite bound.
            self._lo_closed = self._lo_closed and not math.isinf(self._lo)
            self._hi_closed = self._hi_closed and not math.isinf(self._hi)
        if self._lo > self._hi:
            raise ValueError(f"Interval low {low!r} is above high {high!r}.")
        self.valid_value()  # an empty interval is a mistake in the declaration

    def _inside(self, x: float) -> bool:
        above_low = x >= self._lo if self._lo_closed else x > self._lo
        below_high = x <= self._hi if self._hi_closed else x < self._hi
        return above_low and below_high

    def describe(self) -> str:
        interval = (("[" if self._lo_closed else "(") + _format_bound(self._lo) + ", "
                    + _format_bound(self._hi) + ("]" if self._hi_closed else ")"))
        return ("an int in " if self.kind is int else "a float in ") + interval

    def accepts_type(self, value: Any) -> bool:
        if _is_bool(value):
            return False
        if self.kind is int:
            return isinstance(value, numbers.Integral)
        return isinstance(value, numbers.Real)

    def convert(self, value: Any) -> int | float:
        if not self.accepts_type(value):
            self._reject(TypeError, value)
        number = int(value) if self.kind is int else float(value)
        if (isinstance(number, float) and math.isnan(number)) or not self._inside(number):
            self._reject(ValueError, value)
        return number

    def invalid_values(self) -> list:
        bad: list = [True, "1", None]
        if self.kind is int:
            bad.append(1.5)
            if not math.isinf(self._lo):
                bad.append(math.ceil(self._lo) - (0 if not self._lo_closed
                                                  and float(self._lo).is_integer() else 1))
            if not math.isinf(self._hi):
                bad.append(math.floor(self._hi) + (0 if not self._hi_closed
                                                   and float(self._hi).is_integer() else 1))
        else:
            bad.append(math.nan)
            if math.isinf(self._lo):
                if not self._lo_closed:
                    bad.append(-math.inf)
            else:
                bad.append(self._lo if not self._lo_closed else self._lo - 1.0)
            if math.isinf(self._hi):
                if not self._hi_closed:
                    bad.append(math.inf)
            else:
                bad.append(self._hi if not self._hi_closed else self._hi + 1.0)
        return bad

    def valid_value(self) -> int | float:
        lo, hi = self._lo, self._hi
        candidates: list[float] = []
        if not math.isinf(lo):
            candidates += [lo, lo + 1, math.ceil(lo), math.floor(lo) + 1]
        if not math.isinf(hi):
            candidates += [hi, hi - 1, math.floor(hi), math.ceil(hi) - 1]
        if not (math.isinf(lo) or math.isinf(hi)):
            candidates.append((lo + hi) / 2)
        candidates += [0.0, 1.0, -1.0]
        for candidate in candidates:
            if self.kind is int and not float(candidate).is_integer():
                continue
            value = int(candidate) if self.kind is int else float(candidate)
            if self._inside(value):
                return value
        raise ValueError(f"Interval {self.describe()} holds no value.")


class Options(Constraint):
    """One of a fixed set of values (compared by equality; ``True`` is not ``1``).

    Any value outside the set is a ``ValueError``, whatever its type, so the
    message can list what is allowed. The matching choice is returned (so
    ``np.int64(1)`` comes back as the ``int`` ``1``).

    >>> Options("pa", "nb").describe(), Options(None).describe()
    ("one of {'pa', 'nb'}", 'None')
    """

    def __init__(self, *choices: Any):
        if not choices:
            raise ValueError("Options needs at least one choice.")
        self.choices = tuple(choices)

    def describe(self) -> str:
        if len(self.choices) == 1 and self.choices[0] is None:
            return "None"
        return "one of {" + ", ".join(format_value(c) for c in self.choices) + "}"

    @staticmethod
    def _kind(value: Any) -> str:
        if _is_bool(value):
            return "bool"
        if isinstance(value, numbers.Number):
            return "number"
        if isinstance(value, str):
            return "str"
        return type(value).__name__

    def accepts_type(self, value: Any) -> bool:
        return any(self._kind(value) == self._kind(c) for c in self.choices)

    def convert(self, value: Any) -> Any:
        for choice in self.choices:
            if _is_bool(value) != _is_bool(choice):
                continue
            try:
                equal = bool(value == choice)
            except Exception:  # e.g. an array compared with a scalar
                equal = False
            if equal:
                return choice
        self._reject(ValueError, value)

    def invalid_values(self) -> list:
        candidates = ["not-an-option", -12345, 0.5, True, None, object()]
        return [c for c in candidates if not self.is_satisfied_by(c)]

    def valid_value(self) -> Any:
        return self.choices[0]


class Boolean(Constraint):
    """A bool (Python or NumPy); returned as a Python ``bool``. ``1`` is not a bool.

    >>> Boolean().convert(np.True_)
    True
    """

    def describe(self) -> str:
        return "a bool"

    def accepts_type(self, value: Any) -> bool:
        return _is_bool(value)

    def convert(self, value: Any) -> bool:
        if not _is_bool(value):
            self._reject(TypeError, value)
        return bool(value)

    def invalid_values(self) -> list:
        return [1, 0, "True", None]

    def valid_value(self) -> bool:
        return True


class Text(Constraint):
    """A ``str`` of bounded length, optionally matching a regular expression.

    ``description`` replaces the generated description (say what the pattern
    means: "an MQTT topic without wildcards"). ``example`` is a value that
    passes, needed only when a pattern rejects the simple strings tried by
    :meth:`valid_value`.

    >>> Text(1, 64).describe()
    'a str of 1 to 64 characters'
    >>> Text(pattern=r"[a-z]+", description="a lower-case word").convert("Abc")
    Traceback (most recent call last):
    ...
    ValueError: must be a lower-case word. Got 'Abc'.
    """

    def __init__(self, min_length: int = 0, max_length: int | None = None,
                 pattern: str | None = None, description: str | None = None,
                 example: str | None = None):
        if (_is_bool(min_length) or not isinstance(min_length, numbers.Integral)
                or min_length < 0):
            raise ValueError(f"Text min_length must be an int >= 0, not {min_length!r}.")
        if max_length is not None and (_is_bool(max_length)
                                       or not isinstance(max_length, numbers.Integral)
                                       or max_length < min_length):
            raise ValueError(f"Text max_length must be None or an int >= min_length, "
                             f"not {max_length!r}.")
        self.min_length = int(min_length)
        self.max_length = None if max_length is None else int(max_length)
        self.pattern = pattern
        self._regex = None if pattern is None else re.compile(pattern)
        self.description = description
        self.example = example
        self.valid_value()  # a constraint no string passes is a mistake

    def describe(self) -> str:
        if self.description is not None:
            return self.description
        lo, hi = self.min_length, self.max_length
        if hi is None:
            text = "a str" if lo == 0 else (
                "a non-empty str" if lo == 1 else f"a str of at least {lo} characters")
        elif lo == hi:
            text = f"a str of {lo} character{'s' if lo != 1 else ''}"
        else:
            text = f"a str of {lo} to {hi} characters"
        if self.pattern is not None:
            text += f" matching {self.pattern!r}"
        return text

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, str)

    def convert(self, value: Any) -> str:
        if not isinstance(value, str):
            self._reject(TypeError, value)
        text = str(value)
        if len(text) < self.min_length or (self.max_length is not None
                                           and len(text) > self.max_length):
            self._reject(ValueError, value)
        if self._regex is not None and self._regex.fullmatch(text) is None:
            self._reject(ValueError, value)
        return text

    def invalid_values(self) -> list:
        bad: list = [1, None, b"bytes"]
        if self.min_length > 0:
            bad.append("x" * (self.min_length - 1))
        if self.max_length is not None:
            bad.append("x" * (self.max_length + 1))
        if self._regex is not None:
            for candidate in ("", " ", "#", "+", "a b", "\x00", "/", "a/#"):
                if candidate not in bad and not self.is_satisfied_by(candidate):
                    bad.append(candidate)
        return bad

    def valid_value(self) -> str:
        n = max(self.min_length, 1)
        if self.max_length is not None:
            n = min(n, self.max_length)
        candidates = [self.example] if self.example is not None else []
        candidates += ["x" * n, "a" * n, "0" * n, "valid", "a-1", "a/b"]
        for candidate in candidates:
            if candidate is not None and self.is_satisfied_by(candidate):
                return candidate
        raise ValueError(f"Text constraint {self.describe()!r} accepts none of the "
                         "strings tried; pass example=.")


class InstanceOf(Constraint):
    """An instance of one of ``types`` (for parameters that are objects).

    ``example`` builds a valid value for generated tests (a zero-argument callable).

    >>> InstanceOf(dict, description="a dict").describe()
    'a dict'
    """

    def __init__(self, *types: type, description: str | None = None,
                 example: Any = None):
        if not types:
            raise ValueError("InstanceOf needs at least one type.")
        self.types = types
        self.description = description
        self.example = example

    def describe(self) -> str:
        if self.description is not None:
            return self.description
        names = [t.__name__ for t in self.types]
        return "an instance of " + " or ".join(names)

    def accepts_type(self, value: Any) -> bool:
        return isinstance(value, self.types)

    def convert(self, value: Any) -> Any:
        if not isinstance(value, self.types):
            self._reject(TypeError, value)
        return value

    def invalid_values(self) -> list:
        return [c for c in (None, "x", 1.5, object()) if not isinstance(c, self.types)]

    def valid_value(self) -> Any:
        if self.example is not None:
            return self.example()
        return self.types[0]()


class OneOf(Constraint):
    """Any of several constraints; the first that accepts the value converts it.

    The error is a ``ValueError`` when some member accepts the value's type (say
    an int out of range) and a ``TypeError`` otherwise.

    >>> OneOf(Options(None), Interval(int, 1, None)).convert("3")
    Traceback (most recent call last):
    ...
    TypeError: must be None or an int in [1, inf). Got '3'.
    """

    def __init__(self, *constraints: Constraint):
        if not constraints:
            raise ValueError("OneOf needs at least one constraint.")
        for constraint in constraints:
            if not isinstance(constraint, Constraint):
                raise TypeError(f"OneOf takes Constraint objects, not {constraint!r}.")
        self.constraints = constraints

    def describe(self) -> str:
        parts = [c.describe() for c in self.constraints]
        if len(parts) == 1:
            return parts[0]
        return ", ".join(parts[:-1]) + " or " + parts[-1]

    def accepts_type(self, value: Any) -> bool:
        return any(c.accepts_type(value) for c in self.constraints)

    def convert(self, value: Any) -> Any:
        for constraint in self.constraints:
            try:
                return constraint.convert(value)
            except (TypeError, ValueError):
                continue
        self._reject(ValueError if self.accepts_type(value) else TypeError, value)

    def invalid_values(self) -> list:
        bad: list = []
        for constraint in self.constraints:
            for value in constraint.invalid_values():
                if not self.is_satisfied_by(value) and not any(
                        _same(value, seen) for seen in bad):
                    bad.append(value)
        return bad

    def valid_value(self) -> Any:
        return self.constraints[0].valid_value()


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a) and math.isnan(b):
        return True
    try:
        return bool(a == b)
    except Exception:
        return False


def check(owner: str, name: str, value: Any, constraint: Constraint) -> Any:
    """Check one parameter; return it converted, or raise in the one format.

    >>> check("PA", "mode", 3, Options(0, 1, 2))
    Traceback (most recent call last):
    ...
    ValueError: The 'mode' parameter of PA must be one of {0, 1, 2}. Got 3.
    """
    try:
        return constraint.convert(value)
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(
            f"The '{name}' parameter of {owner} must be {constraint.describe()}. "
            f"Got {format_value(value)}."
        ) from None


def check_params(owner: str, params: Mapping[str, Any],
                 constraints: Mapping[str, Constraint]) -> dict:
    """Check every entry of ``params``; return them all, converted.

    Every name in ``params`` must have a constraint (a name without one is a
    ``TypeError``, as Python says for an unexpected keyword); names of
    ``constraints`` missing from ``params`` are not checked, so a partial
    update (``set_params``-style) checks only what it changes.

    >>> check_params("PA", {"nu": 1}, {"C": Interval(float, 0, None)})
    Traceback (most recent call last):
    ...
    TypeError: PA got an unexpected parameter 'nu'; its parameters are ['C'].
    """
    checked = {}
    for name, value in params.items():
        if name not in constraints:
            raise TypeError(f"{owner} got an unexpected parameter {name!r}; "
                            f"its parameters are {sorted(constraints)}.")
        checked[name] = check(owner, name, value, constraints[name])
    return checked
