"""The learner kinds: each declared once, here, and read by everything else.

A *kind* is the name a configuration (``[learner] kind``), the command line
(``--learner``) and :func:`edgelearn.make_learner` use for a learner class. The kinds
list, the lazy imports, the command's choices, the configuration's documentation and
the tests' kind lists all follow from this module. Kinds come from three places:

1. this package's learners, one line each in :data:`BUILTIN` (``name: "module:Class"``);
2. plug-ins: the entry-point group ``edgelearn.learners`` of any installed
   distribution, ``name = "package.module:Class"`` in its ``pyproject.toml``::

       [project.entry-points."edgelearn.learners"]
       my_perceptron = "my_package.perceptron:Perceptron"

   read the first time a kind is not found among the built-in ones, or the whole
   list is asked for (a gateway configured with a built-in kind never scans for them);
3. ``river:MODULE.CLASS`` (e.g. ``river:linear_model.LogisticRegression``): a River
   estimator, served through :mod:`edgelearn.learners.river_model`; so is a plug-in
   class that speaks River's protocol (``learn_one``, ``predict_one`` /
   ``predict_proba_one`` / ``score_one``) without being an edgelearn
   :class:`~edgelearn.learners.base.Learner`.

A learner module is imported only when its class is asked for: a gateway configured
for one kind never loads the others' kernels.

>>> resolve("paacds").target, resolve("river:anomaly.HalfSpaceTrees").origin
('edgelearn.learners.paacds:PAACDS', 'river')
>>> default_kind("multilabel"), default_kind()
('kelm_multilabel', 'active_arow')
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from ..constraints import Constraint

__all__ = [
    "BUILTIN", "DEFAULT_KIND", "ENTRY_POINT_GROUP", "RIVER_PREFIX", "TASK_DEFAULTS", "Kind",
    "KindClasses", "LearnerKind", "learner_class", "rescan",
    "default_kind", "kinds", "kinds_that_can", "load", "resolve",
]

#: The built-in kinds: name -> "module:Class". One line per learner.
BUILTIN: dict[str, str] = {
    "active_arow": "edgelearn.learners.arow:ActiveAROW",
    "paacds": "edgelearn.learners.paacds:PAACDS",
    "pa": "edgelearn.learners.pa:PA",
    "pafe": "edgelearn.learners.pafe:PAFE",
    "synthesis_nb": "edgelearn.learners.synthesis_nb:SynthesisNB",
    "kelm_multilabel": "edgelearn.learners.kelm:MultiLabelKELM",
    "ensemble": "edgelearn.learners.ensemble:OnlineEnsemble",
    "arow_regressor": "edgelearn.learners.arow_regressor:AROWRegressor",
    "surprise": "edgelearn.learners.surprise:SurpriseDetector",
}

#: The learner kind a gateway stream, ``edgelearn replay`` and
#: :func:`~edgelearn.make_learner` get when none is named: ActiveAROW if it meets the
#: label-budget aim on ``docs/results-label-budget.md`` (which checks this value
#: against its own verdict), PAACDS otherwise.
DEFAULT_KIND = "active_arow"

#: The kind ``--task TASK`` and ``[learner] task = "TASK"`` pick when no kind is named.
TASK_DEFAULTS: dict[str, str] = {
    "binary": DEFAULT_KIND,
    "multiclass": DEFAULT_KIND,
    "multilabel": "kelm_multilabel",
    "regression": "arow_regressor",
    "anomaly": "surprise",
}

ENTRY_POINT_GROUP = "edgelearn.learners"
RIVER_PREFIX = "river:"
_RIVER_NAME = re.compile(r"river:([A-Za-z_][A-Za-z0-9_]*\.)+[A-Za-z_][A-Za-z0-9_]*")


class Kind(NamedTuple):
    """One learner kind: its ``name``, the ``target`` it loads (``"module:Class"``, or
    River's ``"MODULE.CLASS"``) and its ``origin`` (``"edgelearn"``, a plug-in's
    distribution name, or ``"river"``)."""

    name: str
    target: str
    origin: str

    def load(self) -> type:
        """The class this kind names (importing its module now)."""
        if self.origin == "river":
            module, _, cls = f"river.{self.target}".rpartition(".")
        else:
            module, _, cls = self.target.partition(":")
        try:
            return getattr(importlib.import_module(module), cls)
        except ModuleNotFoundError as exc:
            if self.origin == "river" and exc.name and exc.name.split(".")[0] == "river":
                raise ValueError(
                    f"Learner kind {self.name!r} needs River, which is not installed: "
                    "pip install river (or the package's extra: pip install 'edgelearn[river]')."
                ) from None
            raise ValueError(f"Learner kind {self.name!r} ({self.origin}): cannot import "
                             f"{module!r}: {exc}.") from None
        except AttributeError:
            raise ValueError(f"Learner kind {self.name!r} ({self.origin}): module {module!r} "
                             f"has no {cls!r}.") from None


_plugins: dict[str, Kind] | None = None


def _plugin_kinds() -> dict[str, Kind]:
    """The entry points of the ``edgelearn.learners`` group, read once."""
    global _plugins
    if _plugins is None:
        from importlib.metadata import entry_points

        found: dict[str, Kind] = {}
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in BUILTIN or ep.name.startswith(RIVER_PREFIX):
                continue  # a plug-in cannot take a built-in's name
            dist = getattr(ep, "dist", None)
            found[ep.name] = Kind(ep.name, ep.value, dist.name if dist is not None else "plug-in")
        _plugins = found
    return _plugins


def rescan() -> None:
    """Read the entry points again (after installing a plug-in in a running process)."""
    global _plugins
    _plugins = None


def kinds(plugins: bool = True) -> dict[str, Kind]:
    """Every kind that can be named: the built-in ones, then the plug-ins'. (River's
    are not listed: any ``river:MODULE.CLASS`` is one.)"""
    out = {name: Kind(name, target, "edgelearn") for name, target in BUILTIN.items()}
    if plugins:
        out.update(_plugin_kinds())
    return out


def _choices() -> str:
    names = ", ".join(repr(k) for k in kinds())
    return "{" + names + "} or 'river:MODULE.CLASS'"


def resolve(name: str) -> Kind:
    """The kind called ``name``, or ValueError in the project's one format."""
    if isinstance(name, str):
        target = BUILTIN.get(name)
        if target is not None:
            return Kind(name, target, "edgelearn")
        if _RIVER_NAME.fullmatch(name):
            return Kind(name, name[len(RIVER_PREFIX):], "river")
        kind = _plugin_kinds().get(name)
        if kind is not None:
            return kind
    raise ValueError(f"The 'kind' parameter of a learner configuration must be one of "
                     f"{_choices()}. Got {name!r}.")


def load(name: str) -> type:
    """The class of kind ``name`` (River's and protocol-only plug-ins' classes are
    returned as they are: :func:`edgelearn.make_learner` wraps them)."""
    return resolve(name).load()


def learner_class(name: str) -> type:
    """The :class:`~edgelearn.learners.base.Learner` class that serves kind ``name``: its
    own class, or :class:`~edgelearn.learners.river_model.RiverModel` for a River
    estimator or a plug-in that only speaks River's protocol (what to ask for the
    class's tasks and capabilities)."""
    from .base import Learner

    cls = resolve(name).load()
    if isinstance(cls, type) and issubclass(cls, Learner):
        return cls
    from .river_model import RiverModel

    return RiverModel


def kinds_that_can(capability: str, plugins: bool = False) -> list[str]:
    """The kinds whose learner class declares ``capability``
    (``edgelearn.learners.base.CAPABILITIES``), in :data:`BUILTIN`'s order. It imports
    every such class: for an error message or a document, not a hot path."""
    return [name for name in kinds(plugins)
            if capability in getattr(learner_class(name), "capabilities", ())]


def default_kind(task: str | None = None) -> str:
    """The kind of ``task`` when none is named (:data:`TASK_DEFAULTS`;
    :data:`DEFAULT_KIND` without a task)."""
    if task is None:
        return DEFAULT_KIND
    kind = TASK_DEFAULTS.get(task)
    if kind is None:
        from .base import TASKS

        if task in TASKS:
            raise ValueError(f"No learner of this package serves the task {task!r} by default "
                             f"yet; name a kind (a plug-in's, or 'river:MODULE.CLASS').")
        raise ValueError(f"The 'task' parameter of a learner configuration must be one of "
                         f"{{{', '.join(map(repr, TASKS))}}}. Got {task!r}.")
    return kind


class KindClasses(Mapping):
    """A read-only ``{kind: learner class}`` whose classes are imported on lookup;
    its keys (and ``in``) need no import of a learner module."""

    def __init__(self, by_class_name: bool = False):
        self._by_class_name = by_class_name

    def _names(self) -> dict[str, Kind]:
        found = kinds()
        if not self._by_class_name:
            return found
        return {kind.target.rpartition(":")[2]: kind for kind in found.values()}

    def __getitem__(self, key: str) -> type:
        kind = self._names().get(key) if self._by_class_name else None
        if kind is None:
            if self._by_class_name or not isinstance(key, str) or key.startswith(RIVER_PREFIX):
                raise KeyError(key)
            try:
                kind = resolve(key)
            except ValueError:
                raise KeyError(key) from None
        return kind.load()

    def __contains__(self, key: object) -> bool:
        if not self._by_class_name and key in BUILTIN:
            return True
        return key in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __repr__(self) -> str:
        return "{" + ", ".join(f"{k!r}: {v.target}" for k, v in self._names().items()) + "}"


class LearnerKind(Constraint):
    """The constraint of a ``kind``: a kind :func:`resolve` knows, checked without
    importing the learner."""

    def describe(self) -> str:
        return "one of " + _choices()

    def accepts_type(self, value) -> bool:
        return isinstance(value, str)

    def convert(self, value):
        if not isinstance(value, str):
            self._reject(TypeError, value)
        try:
            resolve(value)
        except ValueError:
            self._reject(ValueError, value)
        return value

    def invalid_values(self) -> list:
        return ["svm", 3, "river:"]

    def valid_value(self):
        return DEFAULT_KIND
