"""How a learner's answers (labels, numbers, alarm verdicts) become its codes and back:
one *targets* object per learner, chosen by its task.

* binary (:class:`BinaryTargets`): any two labels: bool, 0/1, -1/+1, strings
  ("yes"/"no", "occupied"/"empty"). ``targets.sign(y)`` gives +1.0 or -1.0. True
  and 1 are positive, False, 0 and -1 negative (one family: once True is known,
  1 means it too); any other label takes the side still free, positive first. The
  code of a binary prediction is a bool (positive or not); predictions come back in
  the user's own labels.
* multiclass (:class:`MulticlassTargets`): any hashable labels, at most
  ``n_classes``, indexed in order of first appearance; ``targets.index(y)``. The
  code of a prediction is an index (-1: none).
* multi-label (:class:`MultiLabelTargets`): a dict of label name to bool per
  instance; ``targets.read(y, out)`` writes +1/-1/0 (missing) per label index.
  The code of a prediction is already the dict of name to bool.
* regression (:class:`RegressionTargets`): a finite number (int or float, not a
  bool); the code of a prediction is the number itself.
* anomaly (:class:`AnomalyTargets`): an operator's verdict on a reading: True (or 1)
  a real anomaly, False (or 0) normal (a false alarm when it alarmed); the code of a
  prediction is the alarm, a bool.

``accepts(y)`` says, without raising or registering anything, whether a learner can
take ``y`` now: the gateway counts every other answer as ``unusable_label``.
"""

from __future__ import annotations

import abc
import math
from typing import Mapping

import numpy as np

__all__ = [
    "AnomalyTargets", "BinaryTargets", "LabelIndex", "MultiLabelTargets", "MulticlassTargets",
    "RegressionTargets", "Targets", "targets_for",
]


def _plain(y):
    # NumPy scalars (np.bool_, np.int64, np.str_) as the Python value they stand for.
    return y.item() if isinstance(y, np.generic) else y


# -- targets --------------------------------------------------------------------


class Targets(abc.ABC):
    """The answers of one learner: how user labels (or numbers, or verdicts) become
    the learner's codes and back. ``task`` is one of :data:`edgelearn.learners.base.TASKS`."""

    task: str = ""
    #: The most labels (label names, for multi-label) this learner can hold.
    capacity: int = 0

    def __init__(self, owner: str):
        self.owner = owner

    @property
    @abc.abstractmethod
    def labels(self) -> list:
        """The user labels known so far, in the learner's order."""

    @abc.abstractmethod
    def decode(self, code):
        """The user label a prediction's code stands for."""

    @abc.abstractmethod
    def proba(self, p) -> dict:
        """Probabilities by user label from the learner's ``_proba`` output."""

    @abc.abstractmethod
    def accepts(self, y) -> bool:
        """Whether ``y`` is a label this learner can take now (no error raised,
        nothing registered): the gateway counts the others as unusable."""

    @abc.abstractmethod
    def to_state(self) -> list:
        """The known labels, as plain values."""

    @abc.abstractmethod
    def load(self, labels: list) -> None:
        """Start again from :meth:`to_state`'s output."""

    @property
    def learned_any(self) -> bool:
        return bool(self.labels)

    def neutral(self):
        """The prediction of a learner that knows no label (see the module docstring)."""
        return None

    def neutral_proba(self) -> dict:
        return {}


_POSITIVE, _NEGATIVE = 1, 0


def _side(y) -> int | None:
    """The side a label takes by its value: True/1 positive, False/0/-1 negative,
    None for any other label (it takes the side still free)."""
    if isinstance(y, bool):
        return _POSITIVE if y else _NEGATIVE
    if isinstance(y, (int, float)):
        if y == 1:
            return _POSITIVE
        if y == 0 or y == -1:
            return _NEGATIVE
    return None


def _check_label(owner: str, y) -> None:
    try:
        hash(y)
    except TypeError:
        raise TypeError(f"{owner} labels must be hashable (a str, int, bool...). "
                        f"Got {type(y).__name__}.") from None
    if y is None:
        raise ValueError(f"{owner} labels must not be None (None means 'no label').")
    if y != y:  # NaN: never equal to itself, it would be a new class every time
        raise ValueError(f"{owner} labels must not be NaN.")


class BinaryTargets(Targets):
    """Any two labels; ``sign(y)`` is +1.0 for the positive one, -1.0 for the other.

    >>> t = BinaryTargets("PA")
    >>> t.labels, t.decode(True)
    ([], True)
    >>> t.sign("occupied"), t.sign("empty"), t.labels
    (1.0, -1.0, ['empty', 'occupied'])
    >>> t.decode(True), t.proba(0.75)
    ('occupied', {'empty': 0.25, 'occupied': 0.75})
    >>> t.sign("maybe")
    Traceback (most recent call last):
    ...
    ValueError: PA is a binary learner and knows the labels ['empty', 'occupied']; label 'maybe' would be a third.
    >>> t = BinaryTargets("PA"); t.sign(-1), t.sign(1), t.decode(False)
    (-1.0, 1.0, -1)
    """

    task = "binary"
    capacity = 2

    def __init__(self, owner: str):
        super().__init__(owner)
        self._pair: list = [None, None]  # [negative, positive]; None: not seen yet

    @property
    def labels(self) -> list:
        return [label for label in self._pair if label is not None]

    def _find(self, y) -> int | None:
        for side in (_NEGATIVE, _POSITIVE):
            known = self._pair[side]
            if known is not None and _same_label(known, y):
                return side
        # True/1/+1 and False/0/-1 are one family: any of them names the side a
        # label of the family already holds (predictions keep the first form seen).
        side = _side(y)
        if side is not None and self._pair[side] is not None and _side(self._pair[side]) == side:
            return side
        return None

    def sign(self, y) -> float:
        """+1.0 or -1.0 for ``y``, registering it if it is new."""
        y = _plain(y)
        side = self._find(y)
        if side is None:
            side = self._register(y)
        return 1.0 if side == _POSITIVE else -1.0

    def known_sign(self, y) -> float:
        """+1.0 or -1.0 for a label ``y`` already known, 0.0 for any other (nothing
        is registered)."""
        side = self._find(_plain(y))
        return 0.0 if side is None else (1.0 if side == _POSITIVE else -1.0)

    def _register(self, y) -> int:
        _check_label(self.owner, y)
        free = [s for s in (_POSITIVE, _NEGATIVE) if self._pair[s] is None]
        if not free:
            raise ValueError(f"{self.owner} is a binary learner and knows the labels "
                             f"{self.labels!r}; label {y!r} would be a third.")
        side = _side(y)
        if side is None or side not in free:
            side = free[0]
        self._pair[side] = y
        if isinstance(y, bool) and self._pair[1 - side] is None:
            self._pair[1 - side] = not y  # a bool names its partner
        return side

    def accepts(self, y) -> bool:
        try:
            hash(y)
        except TypeError:
            return False
        y = _plain(y)
        if y is None or y != y or isinstance(y, (Mapping, list)):
            return False
        return self._find(y) is not None or None in self._pair

    def decode(self, code):
        side = _POSITIVE if code else _NEGATIVE
        label = self._pair[side]
        if label is None:
            other = self._pair[1 - side]
            # No label yet: River's default labels; one label: the only one known.
            return bool(code) if other is None else other
        return label

    def proba(self, p) -> dict:
        neg, pos = self._pair
        if neg is None and pos is None:
            return {False: 1.0 - p, True: p}
        if neg is None or pos is None:
            return {pos if neg is None else neg: 1.0}
        return {neg: 1.0 - p, pos: p}

    def neutral(self):
        return False

    def neutral_proba(self) -> dict:
        return {False: 0.5, True: 0.5}

    def to_state(self) -> list:
        return list(self._pair)

    def load(self, labels: list) -> None:
        self._pair = [_plain(v) for v in labels]


def _same_label(a, b) -> bool:
    # 1 == True in Python; as labels they are the same side anyway, so equality
    # is what matches. A str never equals a number.
    try:
        return bool(a == b)
    except Exception:
        return False


class LabelIndex:
    """The labels of a multiclass learner, indexed 0..n_classes-1 in order of
    first appearance; a label beyond ``n_classes`` distinct ones is an error.

    >>> index = LabelIndex("SynthesisNB", 2)
    >>> index.index("low"), index.index("high"), index.index("low"), index.labels
    (0, 1, 0, ['low', 'high'])
    >>> index.index("mid")
    Traceback (most recent call last):
    ...
    ValueError: SynthesisNB was built with n_classes=2 and has seen ['low', 'high']; label 'mid' would be one more.
    """

    def __init__(self, owner: str, n_classes: int):
        self.owner = owner
        self.n_classes = n_classes
        self.labels: list = []
        self._index: dict = {}

    def index(self, y) -> int:
        """The index of ``y``, given a new one if ``y`` is new."""
        try:
            i = self._index.get(y)
        except TypeError:
            raise TypeError(f"{self.owner} labels must be hashable (a str, int, bool...). "
                            f"Got {type(y).__name__}.") from None
        if i is None:
            if y != y:  # NaN: never equal to itself, it would be a new class every time
                raise ValueError(f"{self.owner} labels must not be NaN.")
            if len(self.labels) >= self.n_classes:
                raise ValueError(
                    f"{self.owner} was built with n_classes={self.n_classes} and has seen "
                    f"{self.labels!r}; label {y!r} would be one more."
                )
            i = len(self.labels)
            self.labels.append(y)
            self._index[y] = i
        return i

    def find(self, y) -> int:
        """The index of ``y``, or -1 if it has not been seen."""
        return self._index.get(y, -1)

    def load(self, labels) -> None:
        """Start again from a saved ``labels`` list."""
        self.labels = []
        self._index = {}
        for label in labels:
            self.index(label)


class _IndexedTargets(Targets):
    """Targets whose labels (or label names) are indexed by first appearance, at most
    ``capacity`` of them: what multiclass and multi-label targets share."""

    def __init__(self, owner: str, capacity: int):
        super().__init__(owner)
        self.capacity = capacity
        self._index = LabelIndex(owner, capacity)

    @property
    def labels(self) -> list:
        return self._index.labels

    def to_state(self) -> list:
        return list(self._index.labels)

    def load(self, labels: list) -> None:
        self._index.load(labels)


class MulticlassTargets(_IndexedTargets):
    """Any hashable labels, at most ``n_classes``, indexed by first appearance.

    >>> t = MulticlassTargets("SynthesisNB", 3)
    >>> t.index("low"), t.index("high"), t.decode(1), t.proba([0.25, 0.75])
    (0, 1, 'high', {'low': 0.25, 'high': 0.75})
    """

    task = "multiclass"

    def __init__(self, owner: str, n_classes: int):
        super().__init__(owner, n_classes)
        self.n_classes = n_classes

    def index(self, y) -> int:
        """The index of ``y``, registering it if it is new."""
        y = _plain(y)
        if y is None:
            raise ValueError(f"{self.owner} labels must not be None (None means 'no label').")
        return self._index.index(y)

    def find(self, y) -> int:
        """The index of ``y``, or -1 if it has not been seen."""
        try:
            return self._index.find(_plain(y))
        except TypeError:
            return -1

    def accepts(self, y) -> bool:
        try:
            hash(y)
        except TypeError:
            return False
        y = _plain(y)
        if y is None or y != y:
            return False
        return self.find(y) >= 0 or len(self.labels) < self.n_classes

    def decode(self, code):
        return self._index.labels[code] if code >= 0 else None

    def proba(self, p) -> dict:
        return {label: float(p[i]) for i, label in enumerate(self._index.labels)}


class MultiLabelTargets(_IndexedTargets):
    """Label sets: a dict of label name (str or int) to bool; a name left out,
    or given as None, is missing. At most ``max_labels`` names.

    >>> t = MultiLabelTargets("MultiLabelKELM", 3)
    >>> out = np.zeros(3)
    >>> t.read({"hot": True, "wet": False, "windy": None}, out), out.tolist(), t.labels
    (True, [1.0, -1.0, 0.0], ['hot', 'wet'])
    """

    task = "multilabel"

    def __init__(self, owner: str, max_labels: int):
        super().__init__(owner, max_labels)
        self.max_labels = max_labels

    def _parse(self, y) -> tuple[dict, list]:
        if not isinstance(y, Mapping):
            raise TypeError(f"{self.owner} learns label sets: a dict of label name to bool. "
                            f"Got {type(y).__name__} {y!r}.")
        known, new = {}, []
        for name, value in y.items():
            value = _plain(value)
            if value is None:
                continue
            if not isinstance(name, (str, int)) or isinstance(name, bool):
                raise TypeError(f"{self.owner} label names must be str or int. "
                                f"Got {type(name).__name__} {name!r}.")
            side = _side(value)
            if side is None:
                raise ValueError(f"{self.owner} label values must be True/1/+1 or False/0/-1. "
                                 f"Got {value!r} for {name!r}.")
            known[name] = 1.0 if side == _POSITIVE else -1.0
            if self._index.find(name) < 0 and name not in new:
                new.append(name)
        return known, new

    def read(self, y, out: np.ndarray) -> bool:
        """Write y's targets (+1, -1, 0 for missing) into ``out`` by label index,
        registering new names (all or none); False if y names no label."""
        known, new = self._parse(y)
        if len(self._index.labels) + len(new) > self.max_labels:
            raise ValueError(
                f"{self.owner} was built with max_labels={self.max_labels} and knows "
                f"{self._index.labels!r}; label(s) {new!r} would be more."
            )
        out[:] = 0.0
        for name, sign in known.items():
            out[self._index.index(name)] = sign
        return bool(known)

    def accepts(self, y) -> bool:
        try:
            known, new = self._parse(y)
        except (TypeError, ValueError):
            return False
        return len(self._index.labels) + len(new) <= self.max_labels

    def decode(self, code):
        return code

    def neutral(self):
        return {}

    def proba(self, p) -> dict:
        return {name: {False: 1.0 - float(p[i]), True: float(p[i])}
                for i, name in enumerate(self._index.labels)}


class RegressionTargets(Targets):
    """Numbers: a finite int or float (a bool is not a number here). Nothing is
    registered; a prediction's code is the predicted number.

    >>> t = RegressionTargets("AROWRegressor")
    >>> t.accepts(21.5), t.accepts(3), t.accepts(True), t.accepts(float("nan")), t.accepts("3")
    (True, True, False, False, False)
    >>> t.value(3), t.decode(2.5)
    (3.0, 2.5)
    >>> t.value("warm")
    Traceback (most recent call last):
    ...
    ValueError: AROWRegressor learns numbers: a finite int or float. Got str 'warm'.
    """

    task = "regression"
    capacity = 0

    @property
    def labels(self) -> list:
        return []

    @property
    def learned_any(self) -> bool:
        # A regressor's prediction is a number from the start (its prior), never a label.
        return True

    def accepts(self, y) -> bool:
        y = _plain(y)
        return (isinstance(y, (int, float)) and not isinstance(y, bool)
                and math.isfinite(y))

    def value(self, y) -> float:
        """``y`` as a float, or ValueError naming what arrived."""
        if not self.accepts(y):
            raise ValueError(f"{self.owner} learns numbers: a finite int or float. "
                             f"Got {type(y).__name__} {y!r}.")
        return float(_plain(y))

    def values(self, ys) -> np.ndarray:
        """:meth:`value` of each of ``ys`` as an array, NaN for one it refuses (a
        list of Python floats, a replay's references, in one step)."""
        if all(type(y) is float for y in ys):
            out = np.array(ys, dtype=np.float64)
            out[~np.isfinite(out)] = np.nan
            return out
        return np.array([self.value(y) if self.accepts(y) else math.nan for y in ys], dtype=np.float64)

    def decode(self, code):
        return float(code)

    def proba(self, p) -> dict:
        raise TypeError(f"{self.owner} is a regressor: it predicts numbers, not probabilities.")

    def neutral(self):
        return 0.0

    def to_state(self) -> list:
        return []

    def load(self, labels: list) -> None:
        pass


class AnomalyTargets(Targets):
    """An operator's verdict on a reading: True/1 a real anomaly, False/0 normal.
    ``sign(y)`` is +1.0 for an anomaly, -1.0 for normal; a prediction's code is the
    alarm (a bool).

    >>> t = AnomalyTargets("Detector")
    >>> t.sign(True), t.sign(0), t.accepts("yes"), t.accepts(2), t.decode(1)
    (1.0, -1.0, False, False, True)
    """

    task = "anomaly"
    capacity = 2

    @property
    def labels(self) -> list:
        return [False, True]

    def accepts(self, y) -> bool:
        y = _plain(y)
        return isinstance(y, (bool, int, float)) and _side(y) is not None and y != -1

    def sign(self, y) -> float:
        """+1.0 for an anomaly, -1.0 for normal; ValueError for anything else."""
        if not self.accepts(y):
            raise ValueError(f"{self.owner} learns verdicts on its alarms: True/1 (a real "
                             f"anomaly) or False/0 (normal). Got {type(y).__name__} {y!r}.")
        return 1.0 if _side(_plain(y)) == _POSITIVE else -1.0

    def known_sign(self, y) -> float:
        return self.sign(y) if self.accepts(y) else 0.0

    def decode(self, code):
        return bool(code)

    def proba(self, p) -> dict:
        return {False: 1.0 - p, True: p}

    def neutral(self):
        return False

    def neutral_proba(self) -> dict:
        return {False: 1.0, True: 0.0}

    def to_state(self) -> list:
        return []

    def load(self, labels: list) -> None:
        pass


def targets_for(task: str, owner: str, size: int = 2) -> Targets:
    """The targets of a learner of ``task``: ``size`` is ``n_classes`` for a
    multiclass learner, ``max_labels`` for a multi-label one."""
    if task == "binary":
        return BinaryTargets(owner)
    if task == "multiclass":
        return MulticlassTargets(owner, size)
    if task == "multilabel":
        return MultiLabelTargets(owner, size)
    if task == "regression":
        return RegressionTargets(owner)
    if task == "anomaly":
        return AnomalyTargets(owner)
    raise ValueError(f"No targets for task {task!r}.")
