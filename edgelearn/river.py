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

Every learner passes ``river.checks.check_estimator`` at its defaults
(``tests/test_river.py``).
"""

from __future__ import annotations

import river.base as base  # works while River itself is still importing

from .learners.base import Learner

__all__ = ["register"]


def register(cls: type) -> type:
    """Register one learner class with the River base classes its tasks name: a
    classifier is a ``Classifier`` (a multi-label one also a
    ``MultiLabelClassifier``), a regressor a ``Regressor``, a detector an
    ``AnomalyDetector``."""
    if cls.tasks & {"binary", "multiclass", "multilabel"}:
        base.Classifier.register(cls)
    if "multilabel" in cls.tasks:
        base.MultiLabelClassifier.register(cls)
    if "regression" in cls.tasks:
        base.Regressor.register(cls)
    if "anomaly" in cls.tasks:
        base.AnomalyDetector.register(cls)
    return cls


def _register_all(cls: type) -> None:
    register(cls)
    for sub in cls.__subclasses__():
        _register_all(sub)


_register_all(Learner)
