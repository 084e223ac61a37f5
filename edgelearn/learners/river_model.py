"""River estimators (and plug-ins that speak River's protocol) served as edgelearn
learners: ``kind = "river:MODULE.CLASS"``.

River learns online but does not deploy; the gateway deploys but knew only its own
kinds. :class:`RiverModel` closes the gap: it wraps any object with River's protocol
(``learn_one``, and ``predict_one`` / ``predict_proba_one`` / ``score_one``), River
base class or not, behind the learner contract, so a River model runs through the same
pipeline as edgelearn's own learners, in replay and in the gateway, with the same label
policies, checkpoints and outputs:

* its task is read from River's base classes (``river.base.Classifier``: binary, or
  multiclass when the model says ``_multiclass``; ``MultiLabelClassifier``;
  ``Regressor``; ``AnomalyDetector``), or for a plug-in without them from its own
  ``task`` attribute, else from its methods (``score_one``: anomaly;
  ``predict_proba_one``: a classifier; otherwise a regressor);
* channels come and go as they do for every learner: a :class:`~edgelearn.channels.ChannelSpace`
  maps names to slots (raw values, no standardization: River models scale themselves),
  so a label request keeps the reading as it was and an answer that comes an hour
  later teaches the model what it saw then;
* label requests: every label (``target_query_rate=None``), or a random
  ``target_query_rate`` of them (seeded), held by the label budget every active
  learner holds (:mod:`edgelearn.kernels.rate_control`); an anomaly detector asks only about its alarms;
* an anomaly detector learns every reading (unsupervised); its raw score becomes a
  score in [0, 1] by its rank among the last ``window`` raw scores (an empirical
  distribution, fixed memory), and it alarms when that rank is at least
  ``1 - alarm_rate``; verdicts are not learned (River's detectors take none);
* memory: River models grow with what they learn. Each checkpoint (:meth:`to_state`)
  measures the model (River's ``_raw_memory_usage``); past ``max_memory_bytes`` it
  stops learning, predicts on, and says so (:meth:`report`, logged once);
* checkpoints: the model is pickled into the learner's state, inside the gateway's
  versioned, checksummed checkpoint file (a checkpoint is trusted as the program is:
  only the gateway writes its state directory).

River is imported only when such a kind is made (:mod:`edgelearn.learners.registry`).

>>> import random
>>> model = RiverModel.for_kind("river:linear_model.LogisticRegression", None, {})
>>> model.task, model.can("label_rate")
('binary', False)
>>> rng = random.Random(0)
>>> for _ in range(500):
...     x = {"a": rng.gauss(0, 1), "b": rng.gauss(0, 1)}
...     model.learn_one(x, x["a"] > 0)
>>> model.predict_one({"a": 2.0, "b": 0.0}), model.predict_one({"a": -2.0, "b": 0.0})
(True, False)
"""

from __future__ import annotations

import importlib
import logging
import math
import pickle
from typing import Any

import numpy as np

from ..channels import ChannelSpace
from ..constraints import InstanceOf, Interval, OneOf, Options, Text
from ..kernels.rate_control import hold_budget
from .base import Decision, Learner
from .budget import HeldBudget

__all__ = ["RiverModel"]

logger = logging.getLogger("edgelearn.river_model")


def _task_of(model: Any) -> str:
    """The task of a River(-protocol) model."""
    try:
        from river import base
    except ImportError:  # a protocol-only plug-in, River not installed
        base = None
    if base is not None:
        if isinstance(model, base.MultiLabelClassifier):
            return "multilabel"
        if isinstance(model, base.Classifier):
            return "multiclass" if getattr(model, "_multiclass", False) else "binary"
        if isinstance(model, base.Regressor):
            return "regression"
        if isinstance(model, base.AnomalyDetector):
            return "anomaly"
    declared = getattr(model, "task", None)
    if isinstance(declared, str):
        return declared
    if hasattr(model, "score_one"):
        return "anomaly"
    if hasattr(model, "predict_proba_one"):
        return "binary"
    if hasattr(model, "predict_one"):
        return "regression"
    raise TypeError(f"{type(model).__name__} speaks no protocol edgelearn can serve: it needs "
                    "learn_one and one of predict_one, predict_proba_one or score_one.")


def _resolve(model: str) -> type:
    """``"MODULE.CLASS"`` of River, or ``"package.module:Class"``."""
    if ":" in model:
        module, _, name = model.partition(":")
    else:
        module, _, name = f"river.{model}".rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.split(".")[0] == "river":
            raise ValueError(f"The model {model!r} needs River, which is not installed: "
                             "pip install river.") from None
        raise ValueError(f"The 'model' parameter of RiverModel names {model!r}, whose module "
                         f"cannot be imported: {exc}.") from None
    except AttributeError:
        raise ValueError(f"The 'model' parameter of RiverModel names {model!r}, which "
                         f"{module!r} does not have.") from None


class RiverModel(HeldBudget, Learner):
    """A River estimator (or a River-protocol plug-in) behind the learner contract.

    Parameters
    ----------
    model
        The estimator's class: River's ``"MODULE.CLASS"`` (``"linear_model.LogisticRegression"``)
        or a plug-in's ``"package.module:Class"``.
    params
        Its constructor's parameters (``[learner.params]`` in a configuration).
    target_query_rate
        Ask for this random fraction of labels (an anomaly detector: of its alarms);
        None: every label.
    seed
        Seed of the random label requests.
    capacity
        Channel slots (the most channels a reading is kept with for a late answer).
    evict_after
        A channel absent for this many readings may give its slot away.
    max_memory_bytes
        The model's memory cap, measured at each checkpoint: past it, the model stops
        learning and predicts on.
    window
        Raw scores an anomaly detector's calibration keeps (the rank of a new score
        among them is its score in [0, 1]).
    alarm_rate
        An anomaly detector alarms on scores ranked in the top ``alarm_rate`` of its
        window.
    """

    tasks = frozenset({"binary", "multiclass", "multilabel", "regression", "anomaly"})
    #: The most distinct labels (label names, for multi-label) a stream may bring.
    MAX_LABELS = 64
    capabilities = frozenset({"label_rate"})
    asks_selectively = True
    _scale = False  # River models scale themselves: the raw values go to them
    _parameter_constraints = {
        "model": Text(1),
        "params": OneOf(Options(None), InstanceOf(dict, description="a dict of the estimator's parameters")),
        "target_query_rate": OneOf(Options(None), Interval(float, 0, 1, closed="right")),
        "seed": Interval(int, 0, None),
        "capacity": Interval(int, 1, None),
        "evict_after": Interval(int, 1, None),
        "max_memory_bytes": Interval(int, 1, None),
        "window": Interval(int, 10, None),
        "alarm_rate": Interval(float, 0, 1, closed="neither"),
    }

    def __init__(self, model: str = "linear_model.LogisticRegression", params: dict | None = None,
                 target_query_rate: float | None = None, seed: int = 0, capacity: int = 256,
                 evict_after: int = 1000, max_memory_bytes: int = 16 << 20, window: int = 1000,
                 alarm_rate: float = 0.01):
        self._set_params(locals())
        self.params = dict(params or {})
        cls = _resolve(self.model)
        try:
            self.estimator = cls(**self.params)
        except TypeError as exc:
            raise ValueError(f"The 'params' parameter of RiverModel must be parameters of "
                             f"{cls.__name__}: {exc}. Got {self.params!r}.") from None
        self._init_channels(capacity, evict_after)
        task = _task_of(self.estimator)
        self._init_targets(2 if task == "binary" else self.MAX_LABELS, task)
        self._rng = np.random.default_rng(seed)
        # The label budget's counts (rate_control; word 0, a generator's, stays 0: the
        # draws are _rng's).
        self._budget = np.zeros(3, dtype=np.uint64)
        self.scores = np.full(window, np.nan)  # the anomaly calibration's ring of raw scores
        self.n_scores = 0
        self.measured_bytes = 0
        self.learning = True
        self.skipped = 0  # labels not learned since the memory cap was reached

    #: Parameters of a configuration's ``[learner.params]`` the adapter takes itself;
    #: every other one is the estimator's (``seed`` is both, when the estimator has one).
    OWN_PARAMS = ("target_query_rate", "capacity", "evict_after", "max_memory_bytes", "window",
                  "alarm_rate")

    @classmethod
    def for_kind(cls, kind: str, found: Any, params: dict) -> "RiverModel":
        """The learner of a ``river:MODULE.CLASS`` kind, or of a plug-in class with River's
        protocol (``found``): ``params`` are the estimator's, except :data:`OWN_PARAMS`
        (and ``seed``, which seeds the label requests too)."""
        params = dict(params or {})
        own = {name: params.pop(name) for name in cls.OWN_PARAMS if name in params}
        if "seed" in params:
            own["seed"] = params["seed"]
        model = kind[len("river:"):] if kind.startswith("river:") else (
            f"{found.__module__}:{found.__qualname__}")
        return cls(model=model, params=params, **own)

    # -- what the pipeline calls -------------------------------------------------

    def _x(self, slots, z) -> dict:
        names = self.channels
        return {names.name_of(int(s)): float(v) for s, v in zip(slots.tolist(), z.tolist())}

    _QUERY_STATE = "_budget"  # HeldBudget: query_rate, labels_asked, readings_decided

    def _ask(self, score: float) -> bool:
        rate = self.target_query_rate
        wanted = rate is None or self._rng.random() < rate
        if self.task == "anomaly":
            return wanted  # asked only about alarms: a budget could not force a question
        # A random draw holds the rate only on average (at 10%, about one window of
        # 1,000 readings in three strays from its share by more than 9.5%, a binomial's
        # standard deviation): the shared bucket bounds it as it does every active
        # learner's (issue 26).
        return bool(hold_budget(wanted, self._budget, 0.0 if rate is None else float(rate)))

    def decide_one(self, x: dict) -> Decision:
        slots, z = self.channels.observe(x, False)
        x = self._x(slots, z)
        task = self.task
        extra = None
        if task == "anomaly":
            raw = float(self.estimator.score_one(x))
            score = self._calibrate(raw)
            label = score >= 1.0 - self.alarm_rate
            if self.learning:
                self.estimator.learn_one(x)
            # Only an alarm is worth an operator's verdict.
            return Decision(label, score, label and self._ask(score), slots, z, extra)
        if task == "regression":
            label = self.estimator.predict_one(x)
            label = float(label) if label is not None else 0.0
            return Decision(label, 0.0, self._ask(0.0), slots, z, extra)
        label = self.estimator.predict_one(x)
        proba = getattr(self.estimator, "predict_proba_one", None)
        score = float(max(proba(x).values(), default=0.5)) if proba is not None else 0.0
        if task == "binary" and label is None:
            label = self.targets.neutral()
        return Decision(label, score, self._ask(score), slots, z, extra)

    def learn(self, slots, z, y) -> None:
        task = self.task
        if task == "anomaly":
            self.targets.sign(y)  # a verdict is checked, not learned (River's detectors take none)
            return
        if task == "regression":
            y = self.targets.value(y)
        elif task == "binary":
            self.targets.sign(y)
        elif task == "multiclass":
            self.targets.index(y)
        if not self.learning:
            self.skipped += 1
            return
        self.estimator.learn_one(self._x(slots, z), y)

    def _calibrate(self, raw: float) -> float:
        """The mid-rank of ``raw`` among the window's raw scores, in [0, 1] (0.5 before
        any; ties count half, so a constant score stays at 0.5)."""
        rank = self._calibrate_peek(raw)
        if math.isfinite(raw):
            self.scores[self.n_scores % self.scores.shape[0]] = raw
            self.n_scores += 1
        return rank

    # -- River's names ------------------------------------------------------------------

    def predict_one(self, x: dict):
        return self.estimator.predict_one(self._x(*self.channels.transform(x, False)))

    def predict_proba_one(self, x: dict) -> dict:
        return self.estimator.predict_proba_one(self._x(*self.channels.transform(x, False)))

    def score_one(self, x: dict) -> float:
        """An anomaly detector's calibrated score of ``x`` in [0, 1] (nothing learned)."""
        return self._calibrate_peek(float(self.estimator.score_one(
            self._x(*self.channels.transform(x, False)))))

    def _calibrate_peek(self, raw: float) -> float:
        kept = self.scores[: min(self.n_scores, self.scores.shape[0])]
        if not kept.shape[0]:
            return 0.5
        below = np.count_nonzero(kept < raw)
        return float(below + 0.5 * (np.count_nonzero(kept <= raw) - below)) / kept.shape[0]

    def learn_one(self, x: dict, y=None) -> None:
        slots, z = self.channels.observe(x, False)
        if self.task == "anomaly":
            self._calibrate(float(self.estimator.score_one(self._x(slots, z))))
            if self.learning:
                self.estimator.learn_one(self._x(slots, z))
            return
        self.learn(slots, z, y)

    # -- the contract's other parts -------------------------------------------------------

    def _score(self, slots, z):
        raise NotImplementedError("RiverModel predicts through its estimator")

    def _proba(self, margin):
        raise NotImplementedError("RiverModel predicts through its estimator")

    def _forget_slot(self, slot: int) -> None:
        pass  # River models key by channel name; a reused slot is a new name to them

    def memory_bytes(self) -> int:
        """The budget: the model's cap, the channel space, the calibration window and the
        label budget's counts."""
        return int(self.max_memory_bytes + self.channels.memory_bytes() + self.scores.nbytes
                   + self._budget.nbytes)

    def measure(self) -> int:
        """Measure the model now (River's ``_raw_memory_usage``); past the cap, stop
        learning (said once in the log, and by :meth:`report`)."""
        measured = getattr(self.estimator, "_raw_memory_usage", None)
        self.measured_bytes = int(measured) if measured is not None else len(
            pickle.dumps(self.estimator))
        if self.learning and self.measured_bytes > self.max_memory_bytes:
            self.learning = False
            logger.warning("%s: the model takes %d bytes, beyond max_memory_bytes=%d: it stops "
                           "learning and predicts on", self.model, self.measured_bytes,
                           self.max_memory_bytes)
        return self.measured_bytes

    def report(self) -> dict[str, Any]:
        """What a stream's status adds for this learner."""
        return {"model_bytes": self.measured_bytes, "learning": self.learning,
                "labels_not_learned": self.skipped, **super().report()}

    def get_params(self) -> dict:
        params = super().get_params()
        params["params"] = dict(self.params)
        return params

    def to_state(self) -> dict:
        self.measure()
        state = super().to_state()
        state["learned"] = {
            "estimator": pickle.dumps(self.estimator), "targets": self.targets.to_state(),
            "scores": self.scores.copy(), "n_scores": self.n_scores,
            "rng": pickle.dumps(self._rng.bit_generator.state),
            "learning": self.learning, "skipped": self.skipped, "budget": self._budget.copy(),
        }
        return state

    def _load_learned(self, learned: dict) -> None:
        self.estimator = pickle.loads(learned["estimator"])
        self._load_targets(learned)
        self.scores[...] = learned["scores"]
        self.n_scores = int(learned["n_scores"])
        self._rng.bit_generator.state = pickle.loads(learned["rng"])
        self.learning = bool(learned["learning"])
        self.skipped = int(learned["skipped"])
        if "budget" in learned:  # a checkpoint saved before the budget counted: a fresh bucket
            self._budget[...] = np.asarray(learned["budget"], dtype=np.uint64)

    @classmethod
    def from_state(cls, state: dict):
        model = cls(**state["params"])
        model.channels = ChannelSpace.from_state(state["channels"])
        model.channels.add_listener(model._forget_slot)
        model._load_learned(state["learned"])
        return model
