"""The contract every edgelearn learner follows.

A learner is an online classifier with a fixed memory budget. It speaks two
dialects over one state:

* dicts, River's names: ``predict_one(x)``, ``predict_proba_one(x)``,
  ``learn_one(x, y)``, and ``decide_one(x)`` for active learning (observe,
  predict, and draw the query decision once);
* slots, for the gateway: ``learn(slots, z, y)`` learns from the features a
  :class:`Decision` kept at prediction time, however late the label comes.

What a subclass writes
----------------------
* class data: ``_parameter_constraints`` (a :class:`~edgelearn.constraints.Constraint`
  per constructor parameter) and its capabilities: ``supports_binary``,
  ``supports_multiclass``, ``supports_multilabel`` and ``asks_selectively``
  (whether ``decide_one`` may decline to ask for a label);
* ``__init__``: ``self._set_params(locals())`` (checks every parameter against the
  constraints and stores it under its own name), then ``self._init_channels(...)``,
  ``self._init_targets(n_classes)`` and every array it will ever use;
* the abstract methods ``_score(slots, z)`` (the *code* of the prediction and a
  margin, larger is surer), ``_proba(margin)`` (probabilities, see below),
  ``learn(slots, z, y)`` and ``_forget_slot(slot)``;
* ``_LEARNED`` (names of its learned arrays), or ``_learned_state`` /
  ``_load_learned`` for state beyond arrays; optionally ``_observe`` (unsupervised
  statistics) and ``_ask`` (active learning).

Labels: one targets object
--------------------------
``self.targets`` owns label handling; a learner never sees the user's labels:

* binary (:class:`BinaryTargets`): any two labels: bool, 0/1, -1/+1, strings
  ("yes"/"no", "occupied"/"empty"). ``targets.sign(y)`` gives +1.0 or -1.0. True
  and 1 are positive, False, 0 and -1 negative (one family: once True is known,
  1 means it too); any other label takes the side still free, positive first. The code of a binary prediction is a bool
  (positive or not); predictions come back in the user's own labels.
* multiclass (:class:`MulticlassTargets`): any hashable labels, at most
  ``n_classes``, indexed in order of first appearance; ``targets.index(y)``. The
  code of a prediction is an index (-1: none).
* multi-label (:class:`MultiLabelTargets`): a dict of label name to bool per
  instance; ``targets.read(y, out)`` writes +1/-1/0 (missing) per label index.
  The code of a prediction is already the dict of name to bool.

Probabilities
-------------
``predict_proba_one(x)`` is a dict of label to probability summing to 1 (for a
multi-label learner, per label name: ``{False: 1 - p, True: p}``, River's
convention). Each learner states in ``_proba``'s docstring how it is
calibrated. ``predict_one(x)`` is the label of the prediction's code, which is
the most probable label (an exact tie goes to the learner's own rule).

What a learner predicts before it has learned anything
-------------------------------------------------------
One rule for all: until its first label, a learner knows no label and predicts
River's neutral answer, whatever its scores say: a binary learner predicts
False with ``{False: 0.5, True: 0.5}`` (River's default labels; they give way to
the user's own at the first label), a multiclass learner predicts None with
``{}``, a multi-label learner predicts ``{}`` with ``{}``. ``decide_one`` still
draws its query decision from the learner's margin.

River
-----
The learners follow River's estimator protocol without importing River:
``clone(new_params=None, include_attributes=False)``, ``_get_params``,
``mutate``, ``_tags``, ``_supervised``, ``_multiclass``, ``_unit_test_params``,
``_raw_memory_usage``, ``|`` into a River pipeline. River checks
``isinstance(model, river.base.Classifier)``; :mod:`edgelearn.river` registers the
learners with River's abstract base classes (a virtual subclass, nothing of
River's is inherited). It runs when ``edgelearn`` is imported after River, or
explicitly with ``import edgelearn.river``; nothing in ``edgelearn`` or the
gateway imports River otherwise.

A new learner's author runs ``edgelearn.check_learner(MyLearner())``.

Example: a learner in 30 lines (a perceptron)
---------------------------------------------
>>> import numpy as np
>>> from edgelearn.constraints import Interval
>>> from edgelearn.learners.base import Learner, logistic_proba
>>> class Perceptron(Learner):
...     # A perceptron on the channels' z values (binary).
...     supports_binary = True
...     _parameter_constraints = {"lr": Interval(float, 0, None, closed="neither"),
...                               "capacity": Interval(int, 1, None)}
...     def __init__(self, lr: float = 0.1, capacity: int = 64):
...         self._set_params(locals())
...         self._init_channels(self.capacity, evict_after=1000)
...         self._init_targets(2)
...         self.w = np.zeros(self.capacity)
...     def _score(self, slots, z):
...         margin = float(self.w[slots] @ z)
...         return margin > 0.0, margin
...     def _proba(self, margin):
...         # Calibration: the logistic of the margin, monotone, not calibrated.
...         return logistic_proba(margin)
...     def learn(self, slots, z, y):
...         sign = self.targets.sign(y)
...         if sign * float(self.w[slots] @ z) <= 0.0:
...             self.w[slots] += self.lr * sign * z
...     def _forget_slot(self, slot):
...         self.w[slot] = 0.0
...     _LEARNED = ("w",)
>>> model = Perceptron()
>>> model.predict_one({"a": 1.0}), model.predict_proba_one({"a": 1.0})
(False, {False: 0.5, True: 0.5})
>>> rng = np.random.default_rng(0)
>>> for _ in range(300):
...     a = float(rng.normal())
...     model.learn_one({"a": a, "b": float(rng.normal())}, "yes" if a > 0 else "no")
>>> model.predict_one({"a": 2.0, "b": 0.0}), model.predict_one({"a": -2.0, "b": 0.0})
('yes', 'no')
>>> sorted(model.predict_proba_one({"a": 2.0, "b": 0.0}))
['no', 'yes']
"""

from __future__ import annotations

import abc
import copy
import gc
import inspect
import math
import sys
import types
from typing import Any, Mapping, NamedTuple

import numpy as np

from ..channels import ChannelSpace
from ..constraints import check_params

#: Version 2 adds the binary learners' labels (``learned["targets"]``); version 1
#: states still load (their binary labels were True/False).
STATE_VERSION = 2
_READABLE_VERSIONS = (1, 2)

#: Bytes counted per label a learner may hold (its name in the label table).
LABEL_BYTES = 64


class Decision(NamedTuple):
    """What a learner decided about one instance.

    ``label`` the prediction (in the user's labels), ``score`` its margin
    (larger is surer), ``ask`` whether the label is worth asking for, and the
    standardized features ``(slots, z)`` to learn from when the label comes back.
    """

    label: Any
    score: float
    ask: bool
    slots: np.ndarray
    z: np.ndarray


def logistic_proba(margin: float) -> float:
    """P(positive) as the logistic of a margin (overflow-safe).

    >>> logistic_proba(0.0), round(logistic_proba(2.0), 4), logistic_proba(-1000.0)
    (0.5, 0.8808, 0.0)
    """
    if margin >= 0.0:
        return 1.0 / (1.0 + math.exp(-margin))
    e = math.exp(margin)
    return e / (1.0 + e)


def softmax_proba(scores: np.ndarray, n: int) -> np.ndarray:
    """The softmax of ``scores[:n]`` (a new array; uniform if all are -inf).

    >>> softmax_proba(np.array([0.0, np.log(3.0), 7.0]), 2).round(3).tolist()
    [0.25, 0.75]
    """
    s = np.asarray(scores[:n], dtype=np.float64)
    top = s.max() if n else 0.0
    if not np.isfinite(top):
        return np.full(n, 1.0 / n) if n else s.copy()
    e = np.exp(s - top)
    return e / e.sum()


def _plain(y):
    # NumPy scalars (np.bool_, np.int64, np.str_) as the Python value they stand for.
    return y.item() if isinstance(y, np.generic) else y


# -- targets --------------------------------------------------------------------


class Targets(abc.ABC):
    """The labels of one learner: how user labels become the learner's codes
    and back. ``task`` is ``"binary"``, ``"multiclass"`` or ``"multilabel"``."""

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


# -- the learner ------------------------------------------------------------------


class Learner(abc.ABC):
    """Base class of every learner: see the module docstring for the contract."""

    #: Capabilities (class data). A learner with ``n_classes`` is binary at 2.
    supports_binary: bool = False
    supports_multiclass: bool = False
    supports_multilabel: bool = False
    #: Whether ``decide_one`` may decline to ask for a label (active learning).
    asks_selectively: bool = False

    #: What each constructor parameter may be (see :mod:`edgelearn.constraints`).
    _parameter_constraints: dict = {}

    #: Whether the channel space hands learners z (True) or raw values.
    _scale = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        # A learner defined after edgelearn.river ran is registered with River too.
        river_glue = sys.modules.get("edgelearn.river")
        if river_glue is not None:
            river_glue.register(cls)

    # -- construction -----------------------------------------------------------

    def _set_params(self, given: dict) -> None:
        """Check the constructor's arguments against ``_parameter_constraints``
        and store each, converted to a plain value, under its own name. Call it
        first, with ``locals()``."""
        names = self._param_names()
        params = {name: given[name] for name in names}
        checked = check_params(type(self).__name__, params, self._parameter_constraints)
        for name in names:
            setattr(self, name, checked[name])

    def _init_channels(self, capacity: int, evict_after: int) -> None:
        self.channels = ChannelSpace(capacity=capacity, evict_after=evict_after)
        self.channels.add_listener(self._forget_slot)

    def _init_targets(self, n_classes: int) -> None:
        """Binary targets for 2 classes, multiclass ones beyond; a multi-label
        learner sets ``self.targets = MultiLabelTargets(...)`` itself."""
        owner = type(self).__name__
        self.targets = BinaryTargets(owner) if n_classes == 2 else MulticlassTargets(owner, n_classes)

    # -- the abstract part --------------------------------------------------------

    @abc.abstractmethod
    def _score(self, slots, z) -> tuple[Any, float]:
        """The code of the prediction for ``(slots, z)`` and its margin."""

    @abc.abstractmethod
    def _proba(self, margin: float):
        """Probabilities of the instance just scored by :meth:`_score` (which may
        leave what it needs in scratch arrays): P(positive) for a binary learner,
        an array over ``targets.labels`` for a multiclass one, P(True) per label
        for a multi-label one. State the calibration in the docstring."""

    @abc.abstractmethod
    def learn(self, slots, z, y) -> None:
        """Learn label ``y`` of the instance ``(slots, z)`` (from :meth:`decide_one`)."""

    @abc.abstractmethod
    def _forget_slot(self, slot: int) -> None:
        """A channel gave its slot away: forget what was learned about it."""

    # -- capabilities of this instance --------------------------------------------

    @property
    def task(self) -> str:
        """``"binary"``, ``"multiclass"`` or ``"multilabel"``."""
        return self.targets.task

    @property
    def binary(self) -> bool:
        return self.targets.task == "binary"

    @property
    def classes(self) -> list:
        """The labels learned so far, in the learner's order."""
        return list(self.targets.labels)

    # -- dicts --------------------------------------------------------------------

    def _label_of(self, code):
        """The user label of a prediction's code, under the rule for a learner
        that knows no label yet (see the module docstring)."""
        if not self.targets.learned_any:
            return self.targets.neutral()
        return self.targets.decode(code)

    def _predict(self, slots, z):
        code, margin = self._score(slots, z)
        return self._label_of(code), margin

    def predict_one(self, x: dict):
        """Predict the label of ``x`` (in the user's labels) without learning anything."""
        slots, z = self.channels.transform(x, self._scale)
        return self._predict(slots, z)[0]

    def predict_proba_one(self, x: dict) -> dict:
        """Probabilities of ``x``'s labels (summing to 1; per label name for a
        multi-label learner), without learning anything."""
        slots, z = self.channels.transform(x, self._scale)
        _, margin = self._score(slots, z)
        if not self.targets.learned_any:
            return self.targets.neutral_proba()
        return self.targets.proba(self._proba(margin))

    def decide_one(self, x: dict) -> Decision:
        """Observe ``x`` (channel statistics), predict, and decide once
        whether to ask for its label."""
        slots, z = self.channels.observe(x, self._scale)
        label, score = self._predict(slots, z)
        self._observe(slots, z)
        return Decision(label, score, self._ask(score), slots, z)

    def learn_one(self, x: dict, y) -> None:
        """Observe ``x`` and learn its label ``y`` (one call per instance,
        as in River; after :meth:`decide_one`, use :meth:`learn` instead so
        the instance is not observed twice)."""
        slots, z = self.channels.observe(x, self._scale)
        self._observe(slots, z)
        self.learn(slots, z, y)

    # -- hooks --------------------------------------------------------------------

    def _observe(self, slots, z) -> None:
        """Unsupervised statistics from every observed instance."""

    def _ask(self, score: float) -> bool:
        """Supervised learners want every label."""
        return True

    #: Names of the learned arrays: the state beyond parameters and channel space.
    _LEARNED: tuple = ()

    def _learned_state(self) -> dict:
        """Copies of the ``_LEARNED`` arrays and the targets' labels."""
        state = {name: getattr(self, name).copy() for name in self._LEARNED}
        state["targets"] = self.targets.to_state()
        return state

    def _load_learned(self, learned: dict) -> None:
        load_arrays(self, learned, self._LEARNED)
        self._load_targets(learned)

    def _load_targets(self, learned: dict) -> None:
        if "targets" in learned:
            self.targets.load(list(learned["targets"]))
        elif self.task == "binary":  # version 1: binary learners spoke True/False
            self.targets.load([False, True])
        else:  # version 1: "classes" (multiclass) or "labels" (multi-label)
            self.targets.load(list(learned.get("classes", learned.get("labels", []))))

    # -- parameters and state -------------------------------------------------------

    @classmethod
    def _param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self) -> dict:
        """The constructor's arguments, as given."""
        return {name: getattr(self, name) for name in self._param_names()}

    def clone(self, new_params: dict | None = None, include_attributes: bool = False):
        """A fresh, untrained learner with the same parameters (River's signature).

        ``new_params`` overrides some of them; ``include_attributes=True`` also
        copies the learned state (which then must fit the new parameters).
        """
        params = self.get_params()
        params.update(new_params or {})
        clone = type(self)(**copy.deepcopy(params))
        if include_attributes:
            # The memo maps this learner to its clone, so the channel space's
            # listener (a bound method) is rebound to the clone, not copied.
            memo = {id(self): clone}
            for name, value in vars(self).items():
                if name not in params:
                    setattr(clone, name, copy.deepcopy(value, memo))
        return clone

    def to_state(self) -> dict:
        """Everything needed to continue exactly where this learner is:
        plain values and NumPy arrays (copies)."""
        return {
            "kind": type(self).__name__,
            "version": STATE_VERSION,
            "params": self.get_params(),
            "channels": self.channels.to_state(),
            "learned": self._learned_state(),
        }

    @classmethod
    def from_state(cls, state: dict):
        """Rebuild a learner from :meth:`to_state`'s output."""
        if state.get("kind") != cls.__name__:
            raise ValueError(f"This state is of a {state.get('kind')!r}, not a {cls.__name__}.")
        if state.get("version") not in _READABLE_VERSIONS:
            raise ValueError(
                f"{cls.__name__} state version {state.get('version')!r} is not supported "
                f"(this build reads {', '.join(map(str, _READABLE_VERSIONS))})."
            )
        model = cls(**state["params"])
        model.channels = ChannelSpace.from_state(state["channels"])
        model.channels.add_listener(model._forget_slot)
        model._load_learned(state["learned"])
        return model

    def _arrays(self) -> list[np.ndarray]:
        return [v for v in vars(self).values() if isinstance(v, np.ndarray)]

    def _label_bytes(self) -> int:
        """The label table's share of the budget: ``LABEL_BYTES`` per label it may
        hold (a binary learner's two labels are counted too)."""
        return LABEL_BYTES * self.targets.capacity

    def memory_bytes(self) -> int:
        """The learner's fixed budget in bytes: its arrays, its label table and
        its channel space.  It is set at construction and does not change."""
        return int(sum(a.nbytes for a in self._arrays()) + self._label_bytes()
                   + self.channels.memory_bytes())

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def __str__(self) -> str:
        return type(self).__name__

    # -- River's estimator protocol (duck-typed; River is never imported here) --------

    def _get_params(self) -> dict:
        return self.get_params()

    @property
    def _supervised(self) -> bool:
        return True

    @property
    def _multiclass(self) -> bool:
        return self.task == "multiclass"

    def _more_tags(self) -> set:
        return set()

    @property
    def _tags(self) -> set:
        return set(self._more_tags())

    @property
    def _mutable_attributes(self) -> set:
        return set()

    def mutate(self, new_attrs: dict) -> None:
        """River's ``mutate``: no parameter of a fixed-budget learner changes in place."""
        for name in new_attrs:
            raise ValueError(f"'{name}' is not a mutable attribute of {type(self).__name__}")

    @classmethod
    def _unit_test_params(cls):
        yield {}

    def _unit_test_skips(self) -> set:
        return set()

    @property
    def _is_stochastic(self) -> bool:
        return self.get_params().get("seed", 0) is None

    @property
    def _raw_memory_usage(self) -> int:
        """Bytes of the object graph (River's measure; the budget is :meth:`memory_bytes`)."""
        skip = (type, types.ModuleType, types.FunctionType)
        seen: set = set()
        size = 0
        pending: list = [self]
        while pending:
            fresh = []
            for obj in pending:
                if isinstance(obj, skip) or id(obj) in seen:
                    continue
                seen.add(id(obj))
                size += sys.getsizeof(obj)
                if isinstance(obj, np.ndarray) and obj.base is None:
                    size += obj.nbytes
                fresh.append(obj)
            pending = gc.get_referents(*fresh)
        return size

    def __or__(self, other):
        from river import compose  # only reached from River code

        return compose.Pipeline(self, other)

    def __ror__(self, other):
        from river import compose  # only reached from River code

        if isinstance(other, compose.Pipeline):
            return other.__or__(self)
        return compose.Pipeline(other, self)


def load_arrays(model, learned: dict, names) -> None:
    """Copy saved arrays into a model's own (same shape, same dtype)."""
    for name in names:
        target = getattr(model, name)
        source = np.asarray(learned[name])
        if source.shape != target.shape:
            raise ValueError(
                f"{type(model).__name__} state has '{name}' of shape {source.shape}; "
                f"its parameters need {target.shape}."
            )
        target[...] = source


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
