"""edgelearn's learners as River estimators (imported only when River is used).

edgelearn's learners follow River's estimator protocol by duck typing (see
:mod:`edgelearn.learners.base`): ``learn_one``, ``predict_one``,
``predict_proba_one``, ``clone(new_params, include_attributes)``, ``_get_params``,
``_tags``, ``_supervised``... But River also asks ``isinstance(model,
river.base.Classifier)`` (its checks, its metrics' ``works_with``, its pipelines),
and no duck typing answers that. This module answers it the least invasive way
River's abstract base classes allow: it *registers* the learners as virtual
subclasses (``Classifier.register``), so nothing of River is inherited, the
learners' code paths do not change, and River is never imported by edgelearn
unless River is being used.

It runs by itself as soon as both are imported, in either order: edgelearn
registers nothing with River until River's ``river.base`` is imported, by the user
or by anyone (:mod:`edgelearn._post_import`), so importing edgelearn never imports
River:

>>> import edgelearn
>>> import river.base as base  # works while River itself is still importing
>>> isinstance(edgelearn.PA(), base.Classifier)
True
>>> isinstance(edgelearn.MultiLabelKELM(), base.MultiLabelClassifier)
True
>>> from edgelearn.learners.arow_regressor import AROWRegressor
>>> isinstance(AROWRegressor(), base.Regressor), isinstance(AROWRegressor(), base.Classifier)
(True, False)

Every learner passes ``river.checks.check_estimator`` at its defaults
(``tests/test_river.py``).
"""

from __future__ import annotations

import river.base as base  # works while River itself is still importing

from .learners.base import Learner

__all__ = ["register"]


def register(cls: type) -> type:
    """Register one learner class with the River base classes its capabilities
    name: a regressor (``"regression"`` among its class's ``tasks``) is a
    ``Regressor``; every other learner a ``Classifier``, a multi-label one also a
    ``MultiLabelClassifier``."""
    if "regression" in getattr(cls, "tasks", ()):
        base.Regressor.register(cls)
        return cls
    base.Classifier.register(cls)
    if cls.supports_multilabel:
        base.MultiLabelClassifier.register(cls)
    return cls


def _register_all(cls: type) -> None:
    for sub in cls.__subclasses__():
        register(sub)
        _register_all(sub)


# The learner classes, not their base: a virtual base class would make every learner
# a Classifier, the regressors too.
_register_all(Learner)
