"""One module per learner; :func:`make_learner` builds any kind, :func:`from_state`
rebuilds any learner from its state.

The kinds are declared once, in :mod:`edgelearn.learners.registry` (this package's
learners, plug-ins registered through the ``edgelearn.learners`` entry-point group,
and River estimators as ``river:MODULE.CLASS``). A learner's module (and the Numba
kernels it defines) is imported the first time its class is asked for, here or
through :data:`KINDS` / :data:`LEARNERS`: a gateway configured for one kind never
loads the others.
"""

from __future__ import annotations

from .base import CAPABILITIES, TASKS, Decision, Learner
from .registry import DEFAULT_KIND, RIVER_PREFIX, KindClasses, default_kind, resolve

#: Learner classes by the ``kind`` their state carries (the class name).
LEARNERS = KindClasses(by_class_name=True)

#: Learner classes by the name a configuration file uses for them.
KINDS = KindClasses()


def __getattr__(name: str) -> type:
    if name in LEARNERS:  # a learner class by name, imported now
        return LEARNERS[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(LEARNERS))


def make_learner(kind: str | None = None, params: dict | None = None,
                 task: str | None = None) -> Learner:
    """Build a learner from a configuration's ``kind`` (default: ``task``'s default
    kind, else :data:`DEFAULT_KIND`) and parameters.

    >>> make_learner("paacds", {"target_query_rate": 0.1})
    PAACDS(C=1.0, B=0.64, lam=None, delta=1.0, variant='PAACDS', target_query_rate=0.1, capacity=256, max_weights=None, n_classes=2, seed=0, h_halflife=500.0, evict_after=1000, budget_gain=0.5, learn_intercept=True)
    >>> make_learner("svm")
    Traceback (most recent call last):
    ...
    ValueError: The 'kind' parameter of a learner configuration must be one of {'active_arow', 'paacds', 'pa', 'pafe', 'synthesis_nb', 'kelm_multilabel', 'ensemble', 'arow_regressor', 'surprise'} or 'river:MODULE.CLASS'. Got 'svm'.
    """
    if kind is None:
        kind = default_kind(task)
    spec = resolve(kind)
    cls = spec.load()
    params = dict(params or {})
    if spec.origin == "river" or not (isinstance(cls, type) and issubclass(cls, Learner)):
        from .river_model import RiverModel  # River's estimators and River-protocol plug-ins

        model = RiverModel.for_kind(kind, cls, params)
    else:
        unknown = sorted(set(params) - set(cls._param_names()))
        if unknown:
            raise ValueError(
                f"{cls.__name__} has no parameter {', '.join(map(repr, unknown))}; "
                f"its parameters are {', '.join(cls._param_names())}."
            )
        model = cls(**params)
    if task is not None and model.task != task and not (
            task in ("binary", "multiclass") and task in type(model).tasks):
        raise ValueError(f"The learner kind {kind!r} serves {sorted(type(model).tasks)}, "
                         f"not the task {task!r}.")
    return model


def from_state(state: dict) -> Learner:
    """Rebuild whichever learner ``state`` (from ``to_state()``) describes."""
    kind = state.get("kind") if isinstance(state, dict) else None
    if kind == "RiverModel":
        from .river_model import RiverModel

        return RiverModel.from_state(state)
    if not isinstance(kind, str) or kind not in LEARNERS:
        raise ValueError(f"Unknown learner kind {kind!r}; known: {sorted(LEARNERS)}.")
    return LEARNERS[kind].from_state(state)


__all__ = [
    "ActiveAROW", "AROWRegressor", "CAPABILITIES", "DEFAULT_KIND", "Decision", "KINDS", "Learner", "LEARNERS",
    "MultiLabelKELM", "OnlineEnsemble", "PA", "PAACDS", "PAFE", "RIVER_PREFIX", "SurpriseDetector", "SynthesisNB",
    "TASKS", "from_state", "make_learner",
]
