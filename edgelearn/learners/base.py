"""The contract every edgelearn learner follows.

A learner is an online model with a fixed memory budget: a classifier (binary,
multiclass, multi-label), a regressor or an anomaly detector. It speaks two
dialects over one state:

* dicts, River's names: ``predict_one(x)``, ``predict_proba_one(x)`` (classifiers),
  ``score_one(x)`` (detectors), ``learn_one(x, y)``, and ``decide_one(x)`` for
  active learning (observe, predict, and draw the query decision once);
* slots, for the gateway: ``learn(slots, z, y)`` learns from the features a
  :class:`Decision` kept at prediction time, however late the answer comes.

What a subclass declares (class data)
-------------------------------------
* ``tasks``: the tasks the class serves, a subset of :data:`TASKS`; an instance's
  ``task`` (binary or multiclass by ``n_classes``, say) is one of them;
* ``capabilities``: what it can do beyond the contract, a subset of
  :data:`CAPABILITIES` (the one-call path, jitted loops, label requests at a rate,
  merging); :meth:`Learner.can` answers for an instance, and may refine by task.
  The gateway, replay, tuning and every output dispatch on these two, never on a
  learner's kind or class;
* ``asks_selectively``: whether ``decide_one`` may decline to ask for a label;
* ``_parameter_constraints``: a :class:`~edgelearn.constraints.Constraint` per
  constructor parameter (the configuration's documentation is made from them and
  the class docstring's Parameters section).

What a subclass writes
----------------------
* ``__init__``: ``self._set_params(locals())`` (checks every parameter against the
  constraints and stores it under its own name), then ``self._init_channels(...)``,
  ``self._init_targets(n_classes)`` and every array it will ever use;
* the abstract methods ``_score(slots, z)`` (the *code* of the prediction and a
  margin, larger is surer), ``_proba(margin)`` (probabilities, see below),
  ``learn(slots, z, y)`` and ``_forget_slot(slot)``;
* ``_LEARNED`` (names of its learned arrays), or ``_learned_state`` /
  ``_load_learned`` for state beyond arrays; optionally ``_observe`` (unsupervised
  statistics) and ``_ask`` (active learning);
* for each capability it declares, the public method that capability names
  (:data:`CAPABILITIES`).

Answers: one targets object
---------------------------
``self.targets`` (:mod:`edgelearn.learners.targets`) owns label handling; a learner
never sees the user's labels. Binary: any two labels (bool, 0/1, -1/+1, strings),
``targets.sign(y)`` is +1.0 or -1.0; multiclass: any hashable labels indexed by first
appearance; multi-label: dicts of label name to bool; regression: finite numbers;
anomaly: an operator's verdict (True: a real anomaly).

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
The learners follow River's estimator protocol without importing River
(:class:`~edgelearn.learners.river_protocol.RiverProtocol`):
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
...     tasks = frozenset({"binary"})
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
import inspect
import math
import sys
from typing import Any, NamedTuple

import numpy as np

from ..channels import ChannelSpace
from ..constraints import check_params
from .river_protocol import RiverProtocol
from .targets import (  # noqa: F401  (their home before targets.py; still imported from here)
    AnomalyTargets,
    BinaryTargets,
    LabelIndex,
    MultiLabelTargets,
    MulticlassTargets,
    RegressionTargets,
    Targets,
    targets_for,
)

#: Version 2 adds the binary learners' labels (``learned["targets"]``); version 1
#: states still load (their binary labels were True/False).
STATE_VERSION = 2
_READABLE_VERSIONS = (1, 2)

#: Bytes counted per label a learner may hold (its name in the label table).
LABEL_BYTES = 64

#: The tasks a learner may serve, and what its predictions are.
TASKS: dict[str, str] = {
    "binary": "one of two labels",
    "multiclass": "one of up to n_classes labels",
    "multilabel": "a label set: a map of label name to bool",
    "regression": "a number, with a lower and upper bound",
    "anomaly": "a score in [0, 1] and an alarm (0/1), with the channels behind it",
}

#: What a learner may declare it can do, and the public method each names.
CAPABILITIES: dict[str, str] = {
    "decide_learn": "decide_and_learn(x, y) and decide_learn_claimed(slots, values, sign, "
                    "only_if_asked): predict, ask and learn a labelled reading in one kernel call",
    "array_loop": "replay_arrays(X, y, active, names): the prequential loop over an array of "
                  "readings, jitted (edgelearn.replay)",
    "log_loop": "run_rows(rows): a stream's decoded readings through one jitted loop "
                "(edgelearn replay of logs)",
    "batch_pass": "run_rows(rows) on the readings of one batch message (the gateway)",
    "label_rate": "asks for a configured fraction of the labels (target_query_rate)",
    "merge": "contribution(), merge(contributions, weights) and from_group(group): share what was "
             "learned with a group of learners of its kind (edgelearn.learners.mergeable)",
}


class Decision(NamedTuple):
    """What a learner decided about one instance.

    ``label`` the prediction (in the user's labels; a regressor's number; a
    detector's alarm), ``score`` its margin (larger is surer; a regressor's
    predictive standard deviation; a detector's score in [0, 1]), ``ask`` whether
    the answer is worth asking for, the standardized features ``(slots, z)`` to learn
    from when it comes back, and ``extra``, the task's own outputs.
    """

    label: Any
    score: float
    ask: bool
    slots: np.ndarray
    z: np.ndarray
    #: The task's own outputs beyond label and score, or None: a regressor's
    #: ``{"lower": float, "upper": float}``, a detector's ``{"top": (channel, ...)}``.
    extra: dict | None = None


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


# -- the learner ------------------------------------------------------------------


class Learner(RiverProtocol, abc.ABC):
    """Base class of every learner: see the module docstring for the contract."""

    #: The tasks this class serves (class data; see :data:`TASKS`). A classifier
    #: with ``n_classes`` is binary at 2, multiclass beyond.
    tasks: frozenset = frozenset()
    #: What this class can do beyond the contract (class data; see :data:`CAPABILITIES`).
    capabilities: frozenset = frozenset()
    #: Whether ``decide_one`` may decline to ask for a label (active learning).
    asks_selectively: bool = False
    #: Read-only views of ``tasks``, kept for code written before it (set per class).
    supports_binary: bool = False
    supports_multiclass: bool = False
    supports_multilabel: bool = False

    #: What each constructor parameter may be (see :mod:`edgelearn.constraints`).
    _parameter_constraints: dict = {}

    #: Whether the channel space hands learners z (True) or raw values.
    _scale = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if "tasks" not in own and any(f"supports_{t}" in own for t in ("binary", "multiclass", "multilabel")):
            # A class written to the older contract (supports_* flags) still declares its tasks.
            cls.tasks = frozenset(t for t in ("binary", "multiclass", "multilabel")
                                  if getattr(cls, f"supports_{t}"))
        cls.tasks = frozenset(cls.tasks)
        cls.capabilities = frozenset(cls.capabilities)
        for what, names, known in (("tasks", cls.tasks, TASKS), ("capabilities", cls.capabilities, CAPABILITIES)):
            unknown = sorted(names - set(known))
            if unknown:
                raise TypeError(f"{cls.__name__} declares unknown {what} {unknown}; "
                                f"known: {', '.join(known)}.")
        cls.supports_binary = "binary" in cls.tasks
        cls.supports_multiclass = "multiclass" in cls.tasks
        cls.supports_multilabel = "multilabel" in cls.tasks
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

    def _init_targets(self, n_classes: int = 2, task: str | None = None) -> None:
        """The targets of ``task`` (:func:`~edgelearn.learners.targets.targets_for`);
        without one, binary targets for 2 classes, multiclass ones beyond."""
        owner = type(self).__name__
        if task is None:
            task = "binary" if n_classes == 2 else "multiclass"
        self.targets = targets_for(task, owner, n_classes)

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
        """The task this instance serves: one of its class's ``tasks``."""
        return self.targets.task

    def can(self, capability: str) -> bool:
        """Whether this instance can do ``capability`` (:data:`CAPABILITIES`): its
        class declares it (and, for ``"label_rate"``, it was given a
        ``target_query_rate``), and :meth:`why_not` gives no reason against it; a
        subclass may refine by task or parameters."""
        if capability not in self.capabilities:
            return False
        if capability == "label_rate":
            return getattr(self, "target_query_rate", None) is not None
        return self.why_not(capability) is None

    def why_not(self, capability: str) -> str | None:
        """Why this instance cannot do ``capability`` although its class declares it (a
        parameter that rules it out, as ActiveAROW's pending refits rule out ``"merge"``),
        or None. Callers that pick a path say it once (``edgelearn replay``'s summary)."""
        return None

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

    def report(self) -> dict:
        """What a stream's status adds for this learner (nothing, unless it has
        something to say: a River model's measured memory, say)."""
        return {}

    def memory_bytes(self) -> int:
        """The learner's fixed budget in bytes: its arrays, its label table and
        its channel space.  It is set at construction (but for what a learner
        frees or adds at a known point: ActiveAROW frees its refit buffer once its
        refits are over, a mergeable learner keeps its last contribution)."""
        return int(sum(a.nbytes for a in self._arrays()) + self._label_bytes()
                   + self.channels.memory_bytes())

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"

    def __str__(self) -> str:
        return type(self).__name__


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


