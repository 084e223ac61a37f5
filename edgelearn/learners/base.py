"""The learner protocol every edgelearn learner follows.

Two levels, one state:

* dicts, River's names: ``predict_one(x)``, ``learn_one(x, y)``, and
  ``decide_one(x)`` for active learning (observe, predict, and draw the query
  decision once);
* slots, for the gateway: ``learn(slots, z, y)`` learns from the features a
  :class:`Decision` kept at prediction time, however late the label comes.

A learner owns its :class:`~edgelearn.channels.ChannelSpace`, allocates all
its arrays at construction and never grows them.
"""

from __future__ import annotations

import inspect
from typing import Any, NamedTuple

import numpy as np

from ..channels import ChannelSpace

STATE_VERSION = 1


class Decision(NamedTuple):
    """What a learner decided about one instance.

    ``label`` the prediction, ``score`` its margin (larger is surer),
    ``ask`` whether the label is worth asking for, and the standardized
    features ``(slots, z)`` to learn from when the label comes back.
    """

    label: Any
    score: float
    ask: bool
    slots: np.ndarray
    z: np.ndarray


class Learner:
    """Base class: parameters under their own names, learned state apart.

    Subclasses set their parameters, call :meth:`_init_channels`, allocate
    their arrays, and implement ``_score``, ``learn`` and
    ``_learned_state``/``_load_learned``; ``_observe`` and ``_ask`` are
    optional (unsupervised statistics; active learning).
    """

    #: Whether the channel space hands learners z (True) or raw values.
    _scale = True

    def _init_channels(self, capacity: int, evict_after: int) -> None:
        self.channels = ChannelSpace(capacity=capacity, evict_after=evict_after)
        self.channels.add_listener(self._forget_slot)

    # -- dicts ----------------------------------------------------------------

    def predict_one(self, x: dict):
        """Predict the label of ``x`` without learning anything."""
        slots, z = self.channels.transform(x, self._scale)
        return self._score(slots, z)[0]

    def decide_one(self, x: dict) -> Decision:
        """Observe ``x`` (channel statistics), predict, and decide once
        whether to ask for its label."""
        slots, z = self.channels.observe(x, self._scale)
        label, score = self._score(slots, z)
        self._observe(slots, z)
        return Decision(label, score, self._ask(score), slots, z)

    def learn_one(self, x: dict, y) -> None:
        """Observe ``x`` and learn its label ``y`` (one call per instance,
        as in River; after :meth:`decide_one`, use :meth:`learn` instead so
        the instance is not observed twice)."""
        slots, z = self.channels.observe(x, self._scale)
        self._observe(slots, z)
        self.learn(slots, z, y)

    # -- hooks ----------------------------------------------------------------

    def _observe(self, slots, z) -> None:
        """Unsupervised statistics from every observed instance."""

    def _ask(self, score: float) -> bool:
        """Supervised learners want every label."""
        return True

    def _forget_slot(self, slot: int) -> None:
        raise NotImplementedError

    #: Names of the learned arrays: the state beyond parameters and channel space.
    _LEARNED: tuple = ()

    def _learned_state(self) -> dict:
        """Copies of the ``_LEARNED`` arrays, and the multiclass labels of a
        learner that keeps them in a :class:`LabelIndex` named ``_labels``."""
        state = {name: getattr(self, name).copy() for name in self._LEARNED}
        if isinstance(getattr(self, "_labels", None), LabelIndex):
            state["classes"] = list(self._labels.labels)
        return state

    def _load_learned(self, learned: dict) -> None:
        load_arrays(self, learned, self._LEARNED)
        if isinstance(getattr(self, "_labels", None), LabelIndex):
            self._labels.load(learned["classes"])

    # -- state ----------------------------------------------------------------

    @classmethod
    def _param_names(cls) -> list[str]:
        return [p for p in inspect.signature(cls.__init__).parameters if p != "self"]

    def get_params(self) -> dict:
        """The constructor's arguments, as given."""
        return {name: getattr(self, name) for name in self._param_names()}

    def clone(self):
        """A fresh, untrained learner with the same parameters."""
        return type(self)(**self.get_params())

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
        if state.get("version") != STATE_VERSION:
            raise ValueError(
                f"{cls.__name__} state version {state.get('version')!r} is not supported "
                f"(this build reads {STATE_VERSION})."
            )
        model = cls(**state["params"])
        model.channels = ChannelSpace.from_state(state["channels"])
        model.channels.add_listener(model._forget_slot)
        model._load_learned(state["learned"])
        return model

    def _arrays(self) -> list[np.ndarray]:
        return [v for v in vars(self).values() if isinstance(v, np.ndarray)]

    def memory_bytes(self) -> int:
        """The learner's fixed budget in bytes: its arrays and its channel
        space.  It is set at construction and does not change."""
        return int(sum(a.nbytes for a in self._arrays()) + self.channels.memory_bytes())

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


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


def binary_sign(y, owner: str) -> float:
    """+1.0 for True/1/+1, -1.0 for False/0/-1; anything else is an error."""
    if y is True or y is False or isinstance(y, np.bool_):
        return 1.0 if y else -1.0
    try:
        if y == 1:
            return 1.0
        if y == 0 or y == -1:
            return -1.0
    except (TypeError, ValueError):
        pass
    raise ValueError(f"{owner} is a binary learner: labels must be True/1/+1 or False/0/-1. Got {y!r}.")


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
